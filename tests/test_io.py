"""mlmpi.io in one process: how rows are planned over ranks, the error that
names the ``io`` extra, and argument checks (the readers at 1-4 ranks are in
tests/mpi_cases/io_cases.py)."""

import os
import re
import sys

import numpy as np
import pytest

from mlmpi.comms import SelfComms
from mlmpi.datasets import even_counts
from mlmpi.io import iter_batches, read_csv, read_hdf5, read_parquet, read_zarr
from mlmpi.io._files import Identity, _difference
from mlmpi.io._plan import pieces_of, rank_ranges


@pytest.mark.parametrize(
    "n_rows, size, expected",
    [
        (10, 2, [(0, 5), (5, 10)]),
        (10, 4, [(0, 3), (3, 6), (6, 8), (8, 10)]),
        (2, 3, [(0, 1), (1, 2), (2, 2)]),
        (0, 3, [(0, 0), (0, 0), (0, 0)]),
    ],
)
def test_rank_ranges_are_the_balanced_counts_of_every_reader(n_rows, size, expected):
    assert rank_ranges(n_rows, size) == expected
    edges = np.cumsum([0, *even_counts(n_rows, size)])
    assert expected == list(zip(edges[:-1].tolist(), edges[1:].tolist()))


def test_rank_ranges_take_user_counts_and_check_them():
    assert rank_ranges(10, 3, counts=[0, 10, 0]) == [(0, 0), (0, 10), (10, 10)]
    with pytest.raises(ValueError, match="adding up to 10"):
        rank_ranges(10, 2, counts=[3, 3])


def test_pieces_of_a_row_range():
    slices = pieces_of([3, 3, 3, 1], 2, 8)
    assert [(s.piece, s.start, s.stop) for s in slices] == [(0, 2, 3), (1, 0, 3), (2, 0, 2)]


@pytest.fixture
def without(monkeypatch):
    """Make ``import <name>`` fail, as without the package installed."""

    def hide(name):
        for module in list(sys.modules):
            if module.startswith(name + "."):
                monkeypatch.delitem(sys.modules, module)
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError

    return hide


@pytest.mark.parametrize(
    "package, call",
    [
        ("pyarrow", lambda path: read_parquet(path)),
        ("h5py", lambda path: read_hdf5(path, "X")),
        ("zarr", lambda path: read_zarr(path)),
    ],
)
def test_a_missing_package_names_the_io_extra(without, tmp_path, package, call):
    path = tmp_path / "file"
    path.write_bytes(b"")
    without(package)
    with pytest.raises(ImportError, match=rf"needs the optional package '{package}'.*mlmpi\[io\]"):
        call(str(path))


def test_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="batch_rows must be a positive int"):
        iter_batches(np.zeros((3, 2)), 0)
    with pytest.raises(ValueError, match="cannot tell the format"):
        iter_batches(str(tmp_path / "rows.bin"), 2)
    with pytest.raises(TypeError, match=r"does not take: \['dataset'\]"):
        iter_batches(str(tmp_path / "rows.parquet"), 2, dataset="X")
    with pytest.raises(TypeError, match="needs dataset="):
        iter_batches(str(tmp_path / "rows.h5"), 2)
    with pytest.raises(ValueError, match="header must be"):
        read_csv(str(tmp_path / "rows.csv"), header=1)
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_csv(str(tmp_path / "none.csv"), comms=SelfComms())
    with pytest.raises(FileNotFoundError, match="no file matches"):
        read_parquet(os.path.join(str(tmp_path), "*.parquet"))


def test_the_message_names_the_ranks_that_see_a_file_differently():
    big, small = Identity("4 row group(s) / 16,384 bytes", (1,)), Identity("1 row group(s)", (2,))
    views = [[("a.parquet", big)], [("a.parquet", small)], [("a.parquet", big)]]
    assert _difference(views, "read_parquet") == (
        "read_parquet: a.parquet differs between ranks: rank 1 sees 1 row group(s), ranks 0, 2 "
        "see 4 row group(s) / 16,384 bytes; every rank must see the same file (node-local "
        "copies differ?)."
    )
    # Alike in words, other keys (the footers differ): the keys' fingerprints tell them apart.
    other = Identity(big.summary, (3,))
    message = _difference([[("a.parquet", big)], [("a.parquet", other)]], "read_parquet")
    assert re.search(r"rank 1 sees .* bytes \(#\w{16}\), rank 0 sees .* \(#\w{16}\);", message)
    names = [["p0.csv", "p1.csv"], ["p0.csv", "p1.csv"], ["p0.csv", "p1.csv", "p2.csv"]]
    views = [[(name, big) for name in listed] for listed in names]
    assert _difference(views, "read_csv") == (
        "read_csv: the ranks see different files: rank 2 sees 3 file(s) (p2.csv at position 3), "
        "ranks 0, 1 see 2 file(s) (none at position 3); every rank must see the same files "
        "(node-local copies differ?)."
    )
