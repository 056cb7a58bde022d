"""Linear models on row-sharded data: the model is replicated on every rank
and equals scikit-learn's fit on the union of the shards."""

from ._coordinate_descent import ElasticNet, Lasso
from ._coordinate_descent_cv import ElasticNetCV, LassoCV
from ._least_squares import LinearRegression, Ridge
from ._logistic import LogisticRegression
from ._logistic_cv import LogisticRegressionCV
from ._ridge_cv import RidgeCV

__all__ = [
    "ElasticNet",
    "ElasticNetCV",
    "Lasso",
    "LassoCV",
    "LinearRegression",
    "LogisticRegression",
    "LogisticRegressionCV",
    "Ridge",
    "RidgeCV",
]
