"""Linear models on row-sharded data: the model is replicated on every rank
and equals scikit-learn's fit on the union of the shards."""

from ._coordinate_descent import ElasticNet, Lasso
from ._least_squares import LinearRegression, Ridge
from ._logistic import LogisticRegression

__all__ = ["ElasticNet", "Lasso", "LinearRegression", "LogisticRegression", "Ridge"]
