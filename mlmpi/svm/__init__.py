"""Support vector machines on row-sharded data: the model is replicated on
every rank and minimises scikit-learn's (liblinear's) objective on the union
of the shards."""

from ._libsvm import SVC, SVR, NuSVC, NuSVR, OneClassSVM
from ._linear import LinearSVC, LinearSVR

__all__ = [
    "LinearSVC",
    "LinearSVR",
    "NuSVC",
    "NuSVR",
    "OneClassSVM",
    "SVC",
    "SVR",
]
