"""mlmpi.io under mpiexec: every reader's rows, concatenated over the ranks in
rank order, equal what pandas, h5py or zarr read from the whole file in one
process (values, dtypes, column names, index, NaNs, strings, categoricals);
the writers' files read back to every rank's rows in global row order;
iter_batches gives every rank the same number of batches; and node-local
copies that differ give the same error on every rank."""

import contextlib
import os
import re
import shutil
import tempfile

import h5py
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import zarr
from shards import layouts, same_error_everywhere, shared_dir, tested_layouts

from mlmpi import get_comms
from mlmpi.datasets import even_counts
from mlmpi.io import (
    iter_batches,
    load_npy,
    read_csv,
    read_hdf5,
    read_parquet,
    read_zarr,
    write_csv,
    write_parquet,
)

REQUIRES = ("pyarrow", "h5py", "zarr", "pandas")

COMMS = get_comms()


def _on_rank0(write):
    """Run ``write()`` on rank 0 only, then let every rank go on."""
    if COMMS.rank == 0:
        write()
    COMMS.barrier()


def _gathered(local):
    """Every rank's rows concatenated in rank order."""
    parts = COMMS.allgather_object(local)
    if isinstance(local, np.ndarray):
        return np.concatenate(parts)
    return pd.concat(parts)


def _frame(n, seed=0):
    """Floats with NaN, integers, strings with a missing one, a categorical."""
    rng = np.random.RandomState(seed)
    frame = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "k": np.arange(n, dtype=np.int64) * 3,
            "s": [f"w{i}" for i in range(n)],
            "c": pd.Categorical(rng.choice(["b", "a", "zz"], n)),
        }
    )
    if n > 3:
        frame.loc[2, "x"] = np.nan
        frame.loc[3, "s"] = None
    return frame


def _check_parquet(path, **kwargs):
    local = read_parquet(path, **kwargs)
    pd.testing.assert_frame_equal(_gathered(local), pd.read_parquet(path, **kwargs))
    return local


def case_parquet_files():
    with shared_dir() as tmp:
        frame = _frame(53)
        one = os.path.join(tmp, "one.parquet")
        groups = os.path.join(tmp, "groups.parquet")
        single = os.path.join(tmp, "single.parquet")
        empty = os.path.join(tmp, "empty.parquet")
        parts = [os.path.join(tmp, f"part{i}.parquet") for i in range(3)]

        def write():
            frame.to_parquet(one)  # one row group: fewer row groups than ranks
            frame.to_parquet(groups, row_group_size=5)
            frame.iloc[:1].to_parquet(single)
            frame.iloc[:0].to_parquet(empty)
            for path, rows in zip(parts, [slice(0, 40), slice(40, 41), slice(41, 53)]):
                frame.iloc[rows].reset_index(drop=True).to_parquet(path, row_group_size=7)

        _on_rank0(write)
        for path in (one, groups, single, empty):
            _check_parquet(path)
        _check_parquet(groups, columns=["s", "c"])
        # Unequal files, in the order given, and the same by a glob pattern.
        local = read_parquet(parts)
        expected = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
        pd.testing.assert_frame_equal(_gathered(local), expected)
        pd.testing.assert_frame_equal(
            _gathered(read_parquet(os.path.join(tmp, "part*.parquet"))), expected
        )
        # Row groups of 5: the ranks' rows are balanced all the same.
        counts = COMMS.allgather_object(len(read_parquet(groups)))
        assert counts == even_counts(53, COMMS.size), counts
        # as_numpy and explicit counts
        numbers = read_parquet(
            groups, columns=["x", "k"], as_numpy=True, counts=layouts(53, COMMS.size)["empty"]
        )
        np.testing.assert_array_equal(_gathered(numbers), frame[["x", "k"]].to_numpy())


def case_parquet_dataset():
    with shared_dir() as tmp:
        frame = _frame(41, seed=1)
        frame["g"] = np.where(np.arange(41) % 3 == 0, "north", "south")
        directory = os.path.join(tmp, "dataset")
        _on_rank0(lambda: frame.to_parquet(directory, partition_cols=["g"], row_group_size=4))
        _check_parquet(directory)
        _check_parquet(directory, columns=["g", "x"])


def case_parquet_categories_and_index():
    """Files with other dictionaries (categories unified in file order, as
    pyarrow) and a stored, non-range index."""
    with shared_dir() as tmp:
        first = os.path.join(tmp, "a.parquet")
        second = os.path.join(tmp, "b.parquet")
        indexed = os.path.join(tmp, "indexed.parquet")

        def write():
            pq.write_table(pa.table({"c": pa.array(["z", "b", "z"]).dictionary_encode()}), first)
            pq.write_table(pa.table({"c": pa.array(["a", "b"]).dictionary_encode()}), second)
            frame = _frame(9).set_index("s")
            frame.to_parquet(indexed, row_group_size=2)

        _on_rank0(write)
        local = read_parquet([first, second])
        expected = pa.concat_tables([pq.read_table(first), pq.read_table(second)]).to_pandas()
        pd.testing.assert_frame_equal(_gathered(local), expected)
        assert list(local["c"].cat.categories) == ["z", "b", "a"]
        _check_parquet(indexed)
        _check_parquet(indexed, columns=["x"])


def case_parquet_schema_errors():
    with shared_dir() as tmp:
        good = os.path.join(tmp, "good.parquet")
        other_type = os.path.join(tmp, "other_type.parquet")
        other_columns = os.path.join(tmp, "other_columns.parquet")

        def write():
            pd.DataFrame({"x": [1.0, 2.0], "k": [1, 2]}).to_parquet(good)
            pd.DataFrame({"x": [1.0], "k": ["one"]}).to_parquet(other_type)
            pd.DataFrame({"x": [1.0], "y": [2]}).to_parquet(other_columns)

        _on_rank0(write)
        message = same_error_everywhere(
            ValueError, "different schema", lambda: read_parquet([good, other_type])
        )
        assert "other_type.parquet" in message
        assert re.search(r"'k' of type \w*string instead of int64", message), message
        message = same_error_everywhere(
            ValueError, "different schema", lambda: read_parquet([good, good, other_columns])
        )
        assert "no column 'k'" in message and "an extra column 'y'" in message
        same_error_everywhere(
            FileNotFoundError,
            "no such file",
            lambda: read_parquet(os.path.join(tmp, "none.parquet")),
        )
        # A rank whose file differs (node-local copies that are not the same).
        mine = os.path.join(tmp, f"rank{COMMS.rank}.parquet")
        pd.DataFrame({"x": np.arange(COMMS.rank + 1.0)}).to_parquet(mine)
        COMMS.barrier()
        if COMMS.size > 1:
            same_error_everywhere(ValueError, "different", lambda: read_parquet(mine))


def _csv_text(frame):
    return frame.to_csv(index=False)


def case_csv():
    with shared_dir() as tmp:
        frame = _frame(47, seed=2)
        frame["note"] = [f'say "hi"\nline {i}, ok' if i % 4 == 0 else f"n{i}" for i in range(47)]
        frame.loc[30, "k"] = None  # integers with a missing value: floats
        frame["t"] = ["1"] * 40 + ["one"] + ["2"] * 6  # numbers then text: text
        path = os.path.join(tmp, "rows.csv")
        header_only = os.path.join(tmp, "header.csv")
        single = os.path.join(tmp, "single.csv")
        crlf = os.path.join(tmp, "crlf.csv")

        def write():
            frame.to_csv(path, index=False)
            frame.iloc[:0].to_csv(header_only, index=False)
            frame.iloc[:1].to_csv(single, index=False)
            frame.to_csv(crlf, index=False, lineterminator="\r\n")

        _on_rank0(write)
        for source in (path, header_only, single, crlf):
            local = read_csv(source)
            pd.testing.assert_frame_equal(_gathered(local), pd.read_csv(source))
        kwargs = {"columns": ["c", "x", "note"], "dtype": {"c": "category"}}
        pd.testing.assert_frame_equal(
            _gathered(read_csv(path, **kwargs)),
            pd.read_csv(path, usecols=kwargs["columns"], dtype=kwargs["dtype"]),
        )
        numbers = read_csv(path, columns=["x", "k"], as_numpy=True)
        np.testing.assert_array_equal(
            _gathered(numbers), pd.read_csv(path, usecols=["x", "k"]).to_numpy()
        )
        # Unequal files (an empty one among them) read as one file.
        files = [path, header_only, single]
        text = _csv_text(frame) + "".join(
            _csv_text(frame.iloc[:n]).split("\n", 1)[1] for n in (0, 1)
        )
        expected = pd.read_csv(pd.io.common.StringIO(text))
        pd.testing.assert_frame_equal(_gathered(read_csv(files)), expected)
        other = os.path.join(tmp, "other.csv")
        _on_rank0(lambda: pd.DataFrame({"x": [1.0], "y": [2]}).to_csv(other, index=False))
        message = same_error_everywhere(ValueError, "same columns", lambda: read_csv([path, other]))
        assert "other.csv" in message


def case_readers_align_by_default():
    """The same 61 rows in every format, with different row groups, chunks and
    line lengths (quoted newlines, blank lines, CRLF): with default arguments
    every reader gives each rank the same global rows, and so does
    iter_batches."""
    with shared_dir() as tmp:
        n = 61
        key = np.arange(n, dtype=np.int64) * 7
        text = [("x\n" * (i % 5)) + f"r{i}" for i in range(n)]
        paths = {
            fmt: os.path.join(tmp, f"rows.{fmt}") for fmt in ("parquet", "csv", "h5", "zarr", "npy")
        }
        crlf = os.path.join(tmp, "crlf.csv")

        def write():
            frame = pd.DataFrame({"key": key, "text": text})
            frame.to_parquet(paths["parquet"], row_group_size=9)
            with open(paths["csv"], "w") as f:  # blank lines after some rows
                f.write("key,text\n")
                for i in range(n):
                    f.write(f'{key[i]},"{text[i]}"\n' + ("\n" if i % 6 == 3 else ""))
            frame.to_csv(crlf, index=False, lineterminator="\r\n")
            with h5py.File(paths["h5"], "w") as f:
                f.create_dataset("key", data=key, chunks=(13,))
            zarr.open_array(paths["zarr"], mode="w", shape=(n,), chunks=(4,), dtype="i8")[:] = key
            np.save(paths["npy"], key)

        _on_rank0(write)
        start = sum(even_counts(n, COMMS.size)[: COMMS.rank])
        mine = key[start : start + even_counts(n, COMMS.size)[COMMS.rank]]
        read = {
            "parquet": read_parquet(paths["parquet"])["key"].to_numpy(),
            "csv": read_csv(paths["csv"])["key"].to_numpy(),
            "crlf": read_csv(crlf)["key"].to_numpy(),
            "hdf5": read_hdf5(paths["h5"], "key", as_numpy=True),
            "zarr": read_zarr(paths["zarr"], as_numpy=True),
            "npy": load_npy(paths["npy"]),
        }
        for fmt, values in read.items():
            np.testing.assert_array_equal(values, mine, err_msg=fmt)
        texts = read_csv(paths["csv"])["text"]
        assert list(texts) == text[start : start + len(mine)]
        assert list(texts.index) == list(range(start, start + len(mine)))
        batches = {
            fmt: [b["key"].to_numpy() for b in iter_batches(path, batch_rows=4)]
            for fmt, path in (("parquet", paths["parquet"]), ("csv", paths["csv"]))
        }
        batches["hdf5"] = [
            b.to_numpy().ravel() for b in iter_batches(paths["h5"], batch_rows=4, dataset="key")
        ]
        for fmt, parts in batches.items():
            assert len(parts) == -(-max(even_counts(n, COMMS.size)) // 4), fmt
            np.testing.assert_array_equal(np.concatenate(parts), mine, err_msg=fmt)
        # counts= still splits otherwise, alike for every reader.
        counts = layouts(n, COMMS.size)["uneven"]
        start = sum(counts[: COMMS.rank])
        mine = key[start : start + counts[COMMS.rank]]
        np.testing.assert_array_equal(read_csv(paths["csv"], counts=counts)["key"], mine)
        np.testing.assert_array_equal(read_parquet(paths["parquet"], counts=counts)["key"], mine)
        np.testing.assert_array_equal(load_npy(paths["npy"], counts=counts), mine)


def _arrays():
    rng = np.random.RandomState(3)
    X = rng.normal(size=(29, 3))
    X[5, 1] = np.nan
    records = np.zeros(29, dtype=[("a", "f8"), ("name", "S6")])
    records["a"] = rng.normal(size=29)
    records["name"] = [b"r%d" % i for i in range(29)]
    return X, records


def _check_array(local, expected, name):
    if isinstance(local, np.ndarray):
        whole = _gathered(local)
        assert whole.dtype == expected.dtype
        np.testing.assert_array_equal(whole, expected)
        return
    if expected.dtype.names is not None or expected.ndim == 2:
        reference = pd.DataFrame(expected)
    else:
        reference = pd.DataFrame({name: expected})
    pd.testing.assert_frame_equal(_gathered(local), reference)


def case_hdf5():
    with shared_dir() as tmp:
        path = os.path.join(tmp, "data.h5")
        X, records = _arrays()

        def write():
            with h5py.File(path, "w") as f:
                f.create_dataset("X", data=X, chunks=(4, 3))
                f.create_dataset("group/records", data=records)
                f.create_dataset(
                    "labels",
                    data=np.array([f"l{i}" for i in range(29)], dtype=object),
                    dtype=h5py.string_dtype(),
                )
                f.create_dataset("empty", shape=(0, 2), dtype="f4")
                f.create_dataset("one", data=X[:1])

        _on_rank0(write)
        with h5py.File(path, "r") as f:
            expected = {
                name: f[name][:] for name in ("X", "group/records", "labels", "empty", "one")
            }
        for name, values in expected.items():
            _check_array(read_hdf5(path, name, as_numpy=True), values, name)
            if name != "labels":
                _check_array(read_hdf5(path, name), values, name)
        same_error_everywhere(ValueError, "is a group", lambda: read_hdf5(path, "group"))
        mine = os.path.join(tmp, f"rank{COMMS.rank}.h5")
        with h5py.File(mine, "w") as f:
            f.create_dataset("X", data=np.zeros((5 + COMMS.rank, 2)))
        if COMMS.size > 1:
            same_error_everywhere(ValueError, "different", lambda: read_hdf5(mine, "X"))


def case_zarr():
    with shared_dir() as tmp:
        X, _ = _arrays()
        dense = os.path.join(tmp, "dense.zarr")
        grouped = os.path.join(tmp, "grouped.zarr")
        names = np.array([f"u{i}" for i in range(29)])

        def write():
            array = zarr.open_array(dense, mode="w", shape=X.shape, chunks=(6, 3), dtype="f8")
            array[:] = X
            group = zarr.open_group(grouped, mode="w")
            group.create_array("names", shape=names.shape, chunks=(5,), dtype=names.dtype)[:] = (
                names
            )
            group.create_array("empty", shape=(0, 2), chunks=(4, 2), dtype="i4")

        _on_rank0(write)
        _check_array(read_zarr(dense, as_numpy=True), X, "values")
        _check_array(read_zarr(dense), X, "values")
        _check_array(read_zarr(grouped, "names", as_numpy=True), names, "names")
        pd.testing.assert_frame_equal(
            _gathered(read_zarr(grouped, "names")),
            pd.DataFrame({"names": pd.Series(names, dtype="str")}),
        )
        _check_array(read_zarr(grouped, "empty", as_numpy=True), np.zeros((0, 2), "i4"), "empty")
        same_error_everywhere(ValueError, "Zarr group", lambda: read_zarr(grouped))


def _my_rows(frame, counts):
    start = sum(counts[: COMMS.rank])
    return frame.iloc[start : start + counts[COMMS.rank]]


def case_writers():
    with shared_dir() as tmp:
        frame = _frame(31, seed=4)
        for layout, counts in tested_layouts(31, COMMS.size).items():
            local = _my_rows(frame, counts)
            directory = os.path.join(tmp, f"{layout}-parts")
            write_parquet(local, directory)
            pd.testing.assert_frame_equal(pd.read_parquet(directory), frame)
            pd.testing.assert_frame_equal(_gathered(read_parquet(directory)), frame)
            single = os.path.join(tmp, f"{layout}.parquet")
            write_parquet(local, single, single_file=True, row_group_size=4)
            pd.testing.assert_frame_equal(pd.read_parquet(single), frame)
            csv_parts = os.path.join(tmp, f"{layout}-csv")
            write_csv(local, csv_parts)
            expected = pd.read_csv(pd.io.common.StringIO(frame.to_csv(index=False)))
            pd.testing.assert_frame_equal(_gathered(read_csv(csv_parts)), expected)
            csv_file = os.path.join(tmp, f"{layout}.csv")
            write_csv(local, csv_file, single_file=True)
            with open(csv_file) as f:
                assert f.read() == frame.to_csv(index=False)
        same_error_everywhere(
            FileExistsError, "overwrite=True", lambda: write_parquet(local, directory)
        )
        write_parquet(local, directory, overwrite=True)
        renamed = local.rename(columns={"x": "y"}) if COMMS.rank == COMMS.size - 1 else local
        if COMMS.size > 1:
            same_error_everywhere(
                ValueError,
                "different columns",
                lambda: write_csv(renamed, csv_parts, overwrite=True),
            )


def case_iter_batches():
    with shared_dir() as tmp:
        frame = _frame(37, seed=5)
        path = os.path.join(tmp, "rows.parquet")
        csv = os.path.join(tmp, "rows.csv")
        h5 = os.path.join(tmp, "rows.h5")

        def write():
            frame.to_parquet(path, row_group_size=6)
            frame.to_csv(csv, index=False)
            with h5py.File(h5, "w") as f:
                f.create_dataset("X", data=frame[["x", "k"]].to_numpy(), chunks=(5, 2))

        _on_rank0(write)
        X = frame[["x", "k"]].to_numpy()
        for counts in tested_layouts(37, COMMS.size).values():
            Xl = X[sum(counts[: COMMS.rank]) : sum(counts[: COMMS.rank + 1])]
            batches = list(iter_batches((Xl, Xl[:, 0]), batch_rows=4))
            n_batches = COMMS.allgather_object(len(batches))
            assert len(set(n_batches)) == 1 and n_batches[0] == -(-max(counts) // 4), n_batches
            np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), Xl)
            assert all(b[0].shape[0] == b[1].shape[0] for b in batches)
        for source, kwargs, whole in [
            (path, {}, lambda: read_parquet(path)),
            (csv, {}, lambda: read_csv(csv)),
            (h5, {"dataset": "X", "as_numpy": True}, lambda: read_hdf5(h5, "X", as_numpy=True)),
        ]:
            batches = list(iter_batches(source, 5, **kwargs))
            n_batches = COMMS.allgather_object(len(batches))
            assert len(set(n_batches)) == 1, n_batches
            local = whole()
            if isinstance(local, np.ndarray):
                np.testing.assert_array_equal(np.concatenate(batches), local)
            else:
                pd.testing.assert_frame_equal(pd.concat(batches), local, check_categorical=False)
        same_error_everywhere(ValueError, "batch_rows", lambda: iter_batches(X, 0))


@contextlib.contextmanager
def _node_local_dir():
    """A temporary directory of this rank's own as the working directory: the
    same relative path names another file on every rank, as node-local copies."""
    previous = os.getcwd()
    path = tempfile.mkdtemp(prefix=f"mlmpi-io-rank{COMMS.rank}-")
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)
        shutil.rmtree(path, ignore_errors=True)


def _write_copies(differs):
    """This rank's copy of every file of :func:`case_node_local_copies`;
    ``differs``: another version of each."""
    pd.DataFrame({"x": np.arange(64.0)}).to_parquet("same.parquet")
    pd.DataFrame({"x": np.arange(64.0) + differs}).to_parquet("values.parquet")
    pd.DataFrame({"x": np.arange(64.0)}).to_parquet(
        "layout.parquet", row_group_size=64 if differs else 16
    )
    pd.DataFrame({"x": np.arange(600 - 4 * differs), "y": 1}).to_csv("size.csv", index=False)
    pd.DataFrame({"z" if differs else "x": np.arange(600), "y": 1}).to_csv(
        "header.csv", index=False
    )
    for i in range(2 + differs):
        pd.DataFrame({"x": [1.0]}).to_csv(f"part{i}.csv", index=False)
    with h5py.File("shape.h5", "w") as f:
        f.create_dataset("X", data=np.zeros((10 + differs, 2)))
    np.save("shape.npy", np.zeros((10 + differs, 2)))
    os.mkdir("out")
    for i in range(1 + differs):
        pd.DataFrame({"x": [1.0]}).to_parquet(f"out/part-{i:05d}.parquet")


def case_node_local_copies():
    """Every rank reads (or writes) the same relative path, its own copy: where
    the last rank's copy differs, every rank raises the same ValueError, naming
    the file and the last rank. At 2 ranks only (the messages at more ranks:
    tests/test_io.py)."""
    if COMMS.size != 2:
        return
    last = COMMS.size - 1
    with _node_local_dir():
        _write_copies(COMMS.rank == last)
        pd.testing.assert_frame_equal(  # equal copies, made at other times: read as before
            _gathered(read_parquet("same.parquet")), pd.read_parquet("same.parquet")
        )
        calls = [
            ("values.parquet", lambda: read_parquet("values.parquet")),
            (
                r"layout.parquet.* 1 row group\(s\).* 4 row group\(s\)",
                lambda: read_parquet("layout.parquet"),
            ),
            ("layout.parquet", lambda: list(iter_batches("layout.parquet", 8))),
            ("size.csv", lambda: read_csv("size.csv")),
            ("header.csv.* first line 'z,y'.* first line 'x,y'", lambda: read_csv("header.csv")),
            (r"'X' in shape.h5.* shape \(11, 2\)", lambda: read_hdf5("shape.h5", "X")),
            (r"shape.npy.* shape \(11, 2\)", lambda: load_npy("shape.npy")),
            (r"different files.* 3 file\(s\) \(part2.csv", lambda: read_csv("part*.csv")),
            (
                "out differs between ranks: .* a directory of 2 part file",
                lambda: write_parquet(pd.DataFrame({"x": [1.0]}), "out", overwrite=True),
            ),
        ]
        for match, call in calls:
            message = same_error_everywhere(ValueError, match, call)
            assert f"rank {last} sees" in message and "node-local copies" in message, message
