"""scikit-learn's Pipeline, warning about steps that learn from one rank's rows.

scikit-learn's :class:`~sklearn.pipeline.Pipeline` already works with mlmpi
steps: it calls each step's ``fit``/``transform`` in order on every rank,
and mlmpi steps' ``fit`` and ``score`` are collective. What it cannot know
is that a scikit-learn scaler (say) fitted on each rank's shard learns
something different on every rank; this Pipeline says so when it is fitted
under several ranks.
"""

import sklearn.pipeline as sk
from sklearn.utils.metaestimators import available_if

from ._contract import collective_method
from ._export import SklearnExport
from .base import DistributedEstimatorMixin
from .comms import get_comms
from .utils.shard_local import warn_shard_local_learners

__all__ = ["Pipeline", "make_pipeline"]


def _collective(method):
    """scikit-learn's ``method`` through the collective contract, its docstring
    saying so after the summary line."""
    wrapper = collective_method(method)
    summary, rest = method.__doc__.split("\n\n", 1)
    wrapper.__doc__ = f"{summary}\n\n        This method is collective.\n\n{rest}"
    return wrapper


def _collective_when_available(name):
    """scikit-learn's ``available_if`` method ``name``, marked collective (and
    still present only when the final step has it)."""
    reference = sk.Pipeline.__dict__[name]
    return available_if(reference.check)(_collective(reference.fn))


def _pipeline_comms(pipeline):
    """The comms of the first mlmpi step, else the default comms."""
    for _, step in pipeline.steps:
        if isinstance(step, DistributedEstimatorMixin):
            return step._get_comms()
    return get_comms()


class Pipeline(SklearnExport, sk.Pipeline):
    """A sequence of data transformers with an optional final predictor.

    scikit-learn's ``Pipeline`` (same parameters and behaviour). Its
    ``fit``, ``fit_transform``, ``fit_predict`` and ``score`` are collective
    when its steps' are (mlmpi steps). Fitted under more than one rank, it
    warns once per class (on rank 0) about each step that is not mlmpi's and
    learns from data (a scikit-learn ``StandardScaler``, say: it would learn
    from this rank's rows only), naming the mlmpi replacement; stateless steps
    (``FunctionTransformer``, ``Normalizer``) do not warn.

    Parameters
    ----------
    steps : list of tuples
        ``(name, estimator)`` pairs, as scikit-learn's; every step but the
        last is a transformer.
    transform_input : list of str, default=None
        Metadata that the steps transform before the final estimator gets it
        (scikit-learn's metadata routing).
    memory : str or object with the joblib.Memory interface, default=None
        Caches the fitted transformers (per rank: each rank fits on its rows).
    verbose : bool, default=False
        Print the time each step takes to fit.

    Attributes
    ----------
    named_steps : Bunch
        The steps by name.
    classes_ : ndarray of shape (n_classes,)
        The final estimator's classes (classifiers only).
    n_features_in_ : int
        Number of features seen by the first step's ``fit``.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features seen by the first step's ``fit``, when it has them.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.preprocessing import FunctionTransformer
    >>> from mlmpi import Ridge
    >>> from mlmpi.pipeline import Pipeline
    >>> X, y = load_diabetes(return_X_y=True)
    >>> pipe = Pipeline([("scale", FunctionTransformer(lambda X: 10 * X)), ("ridge", Ridge())])
    >>> round(pipe.fit(X, y).score(X, y), 3)
    0.517
    """

    fit = _collective(sk.Pipeline.fit)
    fit_transform = _collective_when_available("fit_transform")
    fit_predict = _collective_when_available("fit_predict")
    score = _collective_when_available("score")

    def _fit(self, *args, **kwargs):
        # scikit-learn's fit, fit_transform and fit_predict all fit the steps here
        warn_shard_local_learners(self, _pipeline_comms(self))
        return super()._fit(*args, **kwargs)


def make_pipeline(*steps, memory=None, transform_input=None, verbose=False):
    """Construct a :class:`Pipeline` from the given estimators (names from their classes).

    Parameters
    ----------
    *steps : list of estimators
        The steps, in order.
    memory : str or object with the joblib.Memory interface, default=None
        As :class:`Pipeline`'s.
    transform_input : list of str, default=None
        As :class:`Pipeline`'s.
    verbose : bool, default=False
        As :class:`Pipeline`'s.

    Returns
    -------
    p : Pipeline
        mlmpi's :class:`Pipeline` of the steps.

    Examples
    --------
    >>> from sklearn.preprocessing import Normalizer
    >>> from mlmpi import KMeans
    >>> from mlmpi.pipeline import make_pipeline
    >>> make_pipeline(Normalizer(), KMeans(n_clusters=2)).steps[1][0]
    'kmeans'
    """
    reference = sk.make_pipeline(
        *steps, memory=memory, transform_input=transform_input, verbose=verbose
    )
    return Pipeline(
        reference.steps, memory=memory, transform_input=transform_input, verbose=verbose
    )
