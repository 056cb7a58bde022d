"""Imputers fitted on every rank's rows (scikit-learn's ``sklearn.impute``)."""

from ._base import SimpleImputer

__all__ = ["SimpleImputer"]
