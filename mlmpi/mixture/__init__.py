"""Gaussian mixture models on row-sharded data (scikit-learn's ``sklearn.mixture``)."""

from ._bayesian_mixture import BayesianGaussianMixture
from ._gaussian_mixture import GaussianMixture

__all__ = ["BayesianGaussianMixture", "GaussianMixture"]
