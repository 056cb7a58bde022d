"""The optional packages of the file readers, with an error that names the extra."""

import importlib

_PIP_NAMES = {"pyarrow": "pyarrow", "h5py": "h5py", "zarr": "zarr", "pandas": "pandas"}


def require(module, what):
    """Import ``module`` (e.g. ``"pyarrow.parquet"``) for ``what`` (a function name).

    Raises
    ------
    ImportError
        Naming the missing package and the ``io`` extra that installs it.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        package = _PIP_NAMES.get(module.split(".")[0], module.split(".")[0])
        raise ImportError(
            f"{what} needs the optional package {package!r}, which is not installed. "
            "Install mlmpi's io extra: python -m pip install 'mlmpi[io]' "
            f"(or python -m pip install {package})."
        ) from exc
