"""polars DataFrames through the estimators, under mpiexec: feature names,
``set_output(transform="polars")`` and a categorical column, with rank 0
holding no rows."""

import numpy as np
import polars as pl
import sklearn.preprocessing as skp

from mlmpi import LinearRegression, get_comms
from mlmpi.preprocessing import OneHotEncoder, StandardScaler

RANKS = (2,)
REQUIRES = ("polars",)

COMMS = get_comms()


def case_polars_frames():
    rng = np.random.RandomState(0)
    n = 30
    values = rng.rand(n, 2)
    colours = rng.choice(["red", "blue"], n)
    counts = [0, n]  # rank 0 holds no rows
    start = sum(counts[: COMMS.rank])
    mine = slice(start, start + counts[COMMS.rank])
    X = pl.DataFrame({"a": values[mine, 0], "b": values[mine, 1]})
    scaler = StandardScaler().set_output(transform="polars").fit(X)
    out = scaler.transform(X)
    assert isinstance(out, pl.DataFrame) and out.columns == ["a", "b"]
    assert out.height == X.height
    np.testing.assert_allclose(scaler.mean_, values.mean(axis=0))
    model = LinearRegression().fit(X, values[mine] @ [1.0, 2.0])
    assert list(model.feature_names_in_) == ["a", "b"]
    C = pl.DataFrame({"colour": pl.Series(colours[mine]).cast(pl.Categorical)})
    encoder = OneHotEncoder(sparse_output=False).set_output(transform="polars").fit(C)
    reference = skp.OneHotEncoder().fit(colours[:, None])
    np.testing.assert_array_equal(encoder.categories_[0], reference.categories_[0])
    assert list(encoder.feature_names_in_) == ["colour"]
    assert encoder.transform(C).height == C.height
