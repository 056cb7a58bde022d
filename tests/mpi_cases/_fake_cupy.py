"""A stand-in for CuPy on the CPU, as strict as CuPy where the host meets the device.

No GPU in CI, yet the CuPy path of every estimator and of the comms should
run in CI. :func:`install` puts modules ``cupy`` and ``cupyx`` into
``sys.modules`` whose arrays (:class:`FakeDeviceArray`) hold a NumPy array
and behave like CuPy's where it matters:

- implicit conversion to NumPy raises TypeError (``np.asarray(x)``, scipy on
  device arrays, ``np_array[...] = x`` ...): only ``x.get()`` and
  ``cupy.asnumpy(x)`` copy to the host, as in CuPy;
- mixing a device array with a NumPy array (``x + np_array``,
  ``cupy.concatenate([x, np_array])``, ``np.dot(x, np_array)``) raises
  TypeError; ``cupy.asarray``/``cupy.array`` take NumPy arrays;
- reductions return 0-d device arrays, not Python scalars;
- functions that take only CuPy arrays where NumPy takes scalars too
  (``searchsorted``'s values) refuse anything else;
- NumPy functions and ufuncs called on device arrays dispatch to "CuPy"
  (``__array_function__``/``__array_ufunc__``), as they do with CuPy.

It checks where data lives and which types go where. It does not model
CuPy's numerics, streams or missing functions: only a GPU run shows those.
"""

import operator
import sys
import types

import numpy as np

_IMPLICIT = (
    "Implicit conversion to a NumPy array is not allowed. "
    "Please use `.get()` to construct a NumPy array explicitly."
)


#: Free memory the stand-in's device reports (``Device().mem_info``), in bytes.
FREE = 1 << 28


def _is_host_array(x):
    return isinstance(x, np.ndarray)


def _check_no_host(values, what):
    for value in values:
        if _is_host_array(value):
            raise TypeError(
                f"Unsupported type {type(value)} in {what} (a NumPy array mixed with CuPy ones)"
            )
        if isinstance(value, (list, tuple)):
            _check_no_host(value, what)


def _unwrap(x):
    if isinstance(x, FakeDeviceArray):
        return x._a
    if isinstance(x, list):
        return [_unwrap(v) for v in x]
    if isinstance(x, tuple):
        return tuple(_unwrap(v) for v in x)
    if isinstance(x, dict):
        return {k: _unwrap(v) for k, v in x.items()}
    return x


def _wrap(x):
    if isinstance(x, np.ndarray):
        return FakeDeviceArray(x)
    if isinstance(x, np.generic):
        return FakeDeviceArray(np.asarray(x))
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    if isinstance(x, list):
        return [_wrap(v) for v in x]
    return x


class FakeDeviceArray:
    """A "device" array: a NumPy array that refuses to be used as one."""

    __module__ = "cupy._fake"
    __array_priority__ = 1000

    def __init__(self, a):
        self._a = a

    # -- the host boundary ------------------------------------------------
    def __array__(self, *args, **kwargs):
        raise TypeError(_IMPLICIT)

    def get(self, stream=None, order="C", out=None, blocking=True):
        if out is None:
            return self._a.copy(order=order)
        if not isinstance(out, np.ndarray) or out.shape != self._a.shape:
            raise ValueError("out must be a NumPy array of the same shape")
        out[...] = self._a
        return out

    def set(self, arr, stream=None):
        if not isinstance(arr, np.ndarray) or arr.shape != self._a.shape:
            raise ValueError("set needs a NumPy array of the same shape")
        self._a[...] = arr

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _check_no_host(inputs, ufunc.__name__)
        _check_no_host(kwargs.get("out", ()), ufunc.__name__)
        result = getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs))
        return _wrap(result)

    def __array_function__(self, func, types_, args, kwargs):
        _check_no_host(args, func.__name__)
        _check_no_host(list(kwargs.values()), func.__name__)
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    # -- Python protocol ----------------------------------------------------
    def __getattr__(self, name):
        if name.startswith("__") or name == "_a":  # never NumPy's __array_interface__ & co.
            raise AttributeError(name)
        attr = getattr(self._a, name)
        if not callable(attr):
            return _wrap(attr) if name in ("T", "real", "imag", "mT") else attr
        if name in ("item", "tolist"):
            return attr

        def method(*args, **kwargs):
            _check_device_only(name, (self,) + args)
            _check_no_host(args, name)
            return _wrap(attr(*_unwrap(args), **_unwrap(kwargs)))

        return method

    def __getitem__(self, key):
        return _wrap(self._a[_unwrap(key)])

    def __setitem__(self, key, value):
        self._a[_unwrap(key)] = _unwrap(value)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (FakeDeviceArray(np.asarray(v)) for v in self._a)

    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __bool__(self):
        return bool(self._a)

    def __complex__(self):
        return complex(self._a)

    def __repr__(self):
        return f"fake_cupy.array({self._a!r})"

    def __copy__(self):
        return FakeDeviceArray(self._a.copy())

    def __deepcopy__(self, memo):
        return FakeDeviceArray(self._a.copy())

    def __reduce__(self):
        raise TypeError("CuPy arrays are pickled as host copies only through .get() here")


def _binary(op, reflected=False, inplace=False):
    def method(self, other):
        _check_no_host([other], op.__name__)
        if inplace:
            op(self._a, _unwrap(other))
            return self
        a, b = (other, self._a) if reflected else (self._a, other)
        return _wrap(op(_unwrap(a), _unwrap(b)))

    return method


for _name, _op in {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "pow": operator.pow,
    "matmul": operator.matmul,
    "and": operator.and_,
    "or": operator.or_,
    "xor": operator.xor,
    "lshift": operator.lshift,
    "rshift": operator.rshift,
}.items():
    setattr(FakeDeviceArray, f"__{_name}__", _binary(_op))
    setattr(FakeDeviceArray, f"__r{_name}__", _binary(_op, reflected=True))
    _iop = getattr(operator, f"i{_name}")
    setattr(FakeDeviceArray, f"__i{_name}__", _binary(_iop, inplace=True))
for _name in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(FakeDeviceArray, f"__{_name}__", _binary(getattr(operator, _name)))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(
        FakeDeviceArray,
        f"__{_name}__",
        (lambda op: lambda self: _wrap(op(self._a)))(getattr(operator, _name)),
    )
FakeDeviceArray.__hash__ = None


def _function(func, name, from_host=False):
    def wrapper(*args, **kwargs):
        _check_device_only(name, args)
        if not from_host:
            _check_no_host(args, name)
            _check_no_host(list(kwargs.values()), name)
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    wrapper.__name__ = name
    return wrapper


#: CuPy functions (and methods) whose first N arguments must be CuPy arrays.
_DEVICE_ONLY = {"searchsorted": 2}


def _check_device_only(name, args):
    for position, value in enumerate(args[: _DEVICE_ONLY.get(name, 0)]):
        if not isinstance(value, FakeDeviceArray):
            raise NotImplementedError(
                f"cupy.{name}: argument {position} must be a cupy.ndarray, got {type(value)}"
            )


class _Namespace(types.ModuleType):
    """A module whose callables are NumPy's (from ``source``), on fake device arrays."""

    def __init__(self, name, source):
        super().__init__(name)
        self._source = source

    def __getattr__(self, name):
        attr = getattr(self._source, name)
        if isinstance(attr, type) or not callable(attr):
            return attr
        return _function(attr, name)


def _asnumpy(x, stream=None, order="C", out=None, blocking=True):
    if isinstance(x, FakeDeviceArray):
        return x.get(order=order, out=out)
    return np.asarray(x, order=order)


class _Stream:
    ptr = 0

    def synchronize(self):
        pass

    def record(self):
        return types.SimpleNamespace(synchronize=lambda: None, done=True)


_MODULES = {}


def modules():
    """The stand-in modules, ``{"cupy": ..., "cupyx": ...}`` (the same ones every call)."""
    if _MODULES:
        return dict(_MODULES)
    cupy = _Namespace("cupy", np)
    from_host = {
        name: _function(getattr(np, name), name, from_host=True)
        for name in ("asarray", "array", "ascontiguousarray", "asfortranarray")
    }
    cupy.__dict__.update(from_host)
    cupy.ndarray = FakeDeviceArray
    cupy.asnumpy = _asnumpy
    cupy.linalg = _Namespace("cupy.linalg", np.linalg)
    cupy.__version__ = "0.0-fake"
    stream = _Stream()
    cupy.cuda = types.SimpleNamespace(
        get_current_stream=lambda: stream,
        Stream=lambda non_blocking=False: _Stream(),
        Device=lambda device=0: types.SimpleNamespace(
            use=lambda: None, synchronize=lambda: None, id=device, mem_info=(FREE, 4 * FREE)
        ),
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 1, CUDARuntimeError=RuntimeError),
    )
    cupy.get_default_memory_pool = lambda: types.SimpleNamespace(
        total_bytes=lambda: 0, free_bytes=lambda: 0
    )
    cupyx = types.ModuleType("cupyx")
    cupyx.empty_pinned = lambda shape, dtype=np.float64: np.empty(shape, dtype=dtype)
    _MODULES.update(cupy=cupy, cupyx=cupyx)
    return dict(_MODULES)


def install():
    """Put the stand-in ``cupy`` and ``cupyx`` into ``sys.modules``."""
    sys.modules.update(modules())


def install_if_requested():
    """:func:`install` when ``MLMPI_TEST_FAKE_CUPY=1`` (set by the tests that run
    ``tests/mpi_cases`` modules on the stand-in under mpiexec)."""
    import os

    if os.environ.get("MLMPI_TEST_FAKE_CUPY") == "1":
        install()
