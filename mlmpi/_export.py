"""scikit-learn's own estimators from mlmpi's: ``as_sklearn()``.

A fitted mlmpi estimator becomes the scikit-learn estimator of the same
class name, with the parameters scikit-learn's class takes (mlmpi's own,
``comms`` and ``batch_size``, are left out) and this estimator's fitted
state: every attribute set by ``fit``, public and private, so that
scikit-learn's ``predict``/``transform`` find what they read. Nested mlmpi
estimators (a pipeline's steps, a search's ``estimator`` and
``best_estimator_``) are converted the same way, CuPy arrays are copied to
the host, and mlmpi's own objects (a communicator, the sums behind a fit)
are left out. The result is a plain
scikit-learn object: it pickles, runs in any process and converts to ONNX
with skl2onnx where scikit-learn's class does.
"""

import functools
import inspect

from ._array import is_device_array, on_host


@functools.cache
def _sklearn_classes():
    from sklearn.utils import all_estimators

    return dict(all_estimators())


def sklearn_class(estimator):
    """The scikit-learn class of ``estimator``'s class name: the base class of
    that name (the splitters, the searches), else scikit-learn's estimator."""
    name = type(estimator).__name__
    for base in type(estimator).__mro__:
        if base.__name__ == name and base.__module__.split(".")[0] == "sklearn":
            return base
    try:
        return _sklearn_classes()[name]
    except KeyError:
        raise TypeError(f"{name} has no scikit-learn counterpart.") from None


def _parameters_of(cls):
    return [
        p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "args", "kwargs")
    ]


def _parameters(obj):
    """``obj.get_params(deep=False)``, or the constructor's arguments kept as
    attributes (the splitters, which scikit-learn gives no ``get_params``)."""
    if hasattr(obj, "get_params"):
        return obj.get_params(deep=False)
    return {name: getattr(obj, name) for name in _parameters_of(type(obj)) if hasattr(obj, name)}


def _is_internal(value):
    """An object of mlmpi's own that scikit-learn's estimator has no use for
    (a communicator, the sums behind a fit, the forest's histogram trees)."""
    return type(value).__module__.split(".")[0] == "mlmpi" and not isinstance(value, SklearnExport)


def to_sklearn(value):
    """``value`` with every mlmpi estimator in it converted (:class:`SklearnExport`),
    CuPy arrays on the host; anything else as it is."""
    if isinstance(value, SklearnExport):
        return value._to_sklearn()
    if isinstance(value, list):
        return [to_sklearn(v) for v in value]
    if isinstance(value, tuple):
        return tuple(to_sklearn(v) for v in value)
    if isinstance(value, dict):
        return {k: to_sklearn(v) for k, v in value.items()}
    if is_device_array(value):
        return on_host(value)
    return value


class SklearnExport:
    """Gives an mlmpi estimator :meth:`as_sklearn`."""

    #: Attributes of mlmpi's alone, not copied (the layout of the rows over the ranks).
    _not_exported = frozenset()

    def as_sklearn(self):
        """The scikit-learn estimator of this class, fitted as this one is.

        The same parameters (but mlmpi's own: ``comms``, ``batch_size``) and
        every fitted attribute, nested mlmpi estimators converted too, CuPy
        arrays copied to the host: in any process, without MPI, its
        ``predict``, ``predict_proba``, ``transform`` ... give what this
        estimator gives on the same rows. The neighbours estimators gather
        their index (every rank's rows and targets) into it.

        Local for every estimator but the neighbours', where it is collective
        (every rank calls it and gets the whole index).

        Returns
        -------
        estimator : scikit-learn estimator

        Examples
        --------
        >>> import numpy as np
        >>> from mlmpi import LinearRegression
        >>> X = np.arange(8.0).reshape(4, 2)
        >>> model = LinearRegression().fit(X, X.sum(axis=1)).as_sklearn()
        >>> type(model).__module__.split(".")[0], model.predict(X[:1]).round(6)
        ('sklearn', array([1.]))
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        return self._to_sklearn()

    def _to_sklearn(self):
        cls = sklearn_class(self)
        params = _parameters(self)
        accepted = _parameters_of(cls)
        out = cls(**{k: to_sklearn(v) for k, v in params.items() if k in accepted})
        for name, value in self._sklearn_state().items():
            if name not in params and name not in self._not_exported and not _is_internal(value):
                setattr(out, name, to_sklearn(value))
        self._sklearn_finish(out)
        return out

    def _sklearn_state(self):
        """The attributes copied into the scikit-learn estimator (fitted state)."""
        return dict(vars(self))

    def _sklearn_finish(self, out):
        """Set what scikit-learn's ``out`` holds that is not copied (nothing here)."""
