"""Histogram gradient boosting on rows spread over the ranks.

The estimators are scikit-learn's ``HistGradientBoostingClassifier`` and
``HistGradientBoostingRegressor`` with a collective ``fit``: the fitted model
(``_predictors``, ``_bin_mapper``, ``_baseline_prediction``, ...) is
identical on every rank and at any number of ranks, and scikit-learn's under
scikit-learn's random draws (the validation split and the subsamples: see
:mod:`._hgb_rows`); the prediction methods are scikit-learn's, local (with
mlmpi's kernels, on the device of ``X``). See :mod:`._hgb_boosting` for the
loop and :mod:`._hgb_grower` for the trees.
"""

import functools
import inspect
import numbers
import re
from functools import partial

import numpy as np
import sklearn.ensemble as sk
from sklearn.base import is_classifier
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import FunctionTransformer, LabelEncoder
from sklearn.preprocessing import OrdinalEncoder as SklearnOrdinalEncoder
from sklearn.utils import check_array, check_random_state
from sklearn.utils.validation import check_consistent_length

from .._array import get_namespace, is_device_array, to_host, to_namespace
from .._contract import collective_method
from .._sklearn_compat import (
    _SCORERS,
    X_DTYPE,
    BaseLoss,
    _check_categorical_features,
    _check_monotonic_cst,
    _check_y,
    _fit_context,
    _num_samples,
)
from ..base import DistributedClassifierMixin, DistributedEstimatorMixin, DistributedRegressorMixin
from ..comms import Comms, SelfComms
from ..kernels import kernels_for
from ..linear_model._logistic import _class_weights
from ..metrics import check_scoring
from ..random import draws_for
from ..utils.stats import exact_sums, global_classes
from ..utils.validation import RowLayout, _check_weights, agree, check_local, validate_fit_data
from ._hgb_boosting import BoostingRun, FitData
from ._hgb_losses import mean_losses
from ._hgb_rows import all_rows, small_trainset, split_rows
from ._hgb_trees import flatten

_EARLY_STOPPING_ROWS = 10_000  # early_stopping="auto" is on above this many rows


def _keeps_device(method):
    """The method's (host) result moved to ``X``'s device when ``X`` is a CuPy
    array (numeric results; a generator's items one by one)."""

    def back(result, xp):
        if isinstance(result, np.ndarray) and result.dtype.kind in "biuf":
            return to_namespace(result, xp)
        return result

    @functools.wraps(method)
    def wrapper(self, X, *args, **kwargs):
        result = method(self, X, *args, **kwargs)
        if not is_device_array(X):
            return result
        xp = get_namespace(X)
        if inspect.isgenerator(result):
            return (back(item, xp) for item in result)
        return back(result, xp)

    # scikit-learn's docstring, with its glossary links as plain literals
    wrapper.__doc__ = re.sub(r":term:`([^`<]*?)(?: <[^>]*>)?`", r"``\1``", method.__doc__)
    wrapper.__module__ = __name__
    return wrapper


class _DistributedHistGradientBoosting(DistributedEstimatorMixin):
    """The collective fit and the device-aware prediction shared by both
    estimators (put before scikit-learn's class)."""

    @collective_method(data=("X_val", "y_val", "sample_weight_val"))
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, *, X_val=None, y_val=None, sample_weight_val=None):
        """Fit the gradient boosting model on the rows of every rank.

        This method is collective.

        Parameters
        ----------
        X : array-like of shape (n_local, n_features)
            This rank's training rows (may have zero rows); NaN marks a
            missing value.
        y : array-like of shape (n_local,)
            Their targets; a rank may lack some classes.
        sample_weight : array-like of shape (n_local,), default=None
            Weights of this rank's rows.
        X_val : array-like of shape (n_local_val, n_features), default=None
            This rank's rows of an explicit validation set for early stopping
            (given on every rank or on none; a rank may pass zero rows).
        y_val : array-like of shape (n_local_val,), default=None
            Their targets.
        sample_weight_val : array-like of shape (n_local_val,), default=None
            Their weights.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        comms = self._get_comms()
        X, known_categories, layout, y, sample_weight = self._validate_training_data(
            X, y, sample_weight, comms
        )
        validation = self._validate_validation_data(X_val, y_val, sample_weight_val, comms)
        rng = check_random_state(self.random_state)
        first_fit = not self.warm_start or not self._is_fitted()
        if first_fit:
            seeds = [rng.randint(np.iinfo(np.uint32).max, dtype="u8") for _ in range(2)]
            if not isinstance(self.random_state, numbers.Integral):
                seeds = comms.bcast_object(seeds, root=0)  # None or a RandomState: rank 0's
            self._random_seed = seeds[0]
            self._feature_subsample_rng = np.random.default_rng(seeds[1])
        self._validate_parameters()
        monotonic_cst = _check_monotonic_cst(self, self.monotonic_cst)
        if self.is_categorical_ is not None:
            monotonic_cst = np.concatenate(
                (monotonic_cst[self.is_categorical_], monotonic_cst[~self.is_categorical_])
            )
        self._n_features = X.shape[1]
        interaction_cst = self._check_interaction_cst(self._n_features)
        self._in_fit = True
        if isinstance(self.loss, str):
            self._loss = self._get_loss(sample_weight=sample_weight)
        elif isinstance(self.loss, BaseLoss):
            self._loss = self.loss
        if self.early_stopping == "auto":
            self.do_early_stopping_ = layout.n_samples > _EARLY_STOPPING_ROWS
        else:
            self.do_early_stopping_ = self.early_stopping
        self._use_validation_data = self.validation_fraction is not None or validation is not None
        codes = y.astype(np.int64) if is_classifier(self) else None
        self.random_draws_ = draws_for(layout.n_samples)
        if self.do_early_stopping_ and self._use_validation_data and validation is None:
            stratify = codes if hasattr(self._loss, "predict_proba") else None
            n_classes = 0 if codes is None else len(self.classes_)
            rows = split_rows(
                layout,
                self.validation_fraction,
                self._random_seed,
                stratify,
                n_classes,
                self.random_draws_,
                comms,
            )
            validation = (
                X[rows.validation],
                y[rows.validation],
                None if sample_weight is None else sample_weight[rows.validation],
            )
        else:
            rows = all_rows(layout, self.random_draws_)

        def training(values):  # no copy when every row trains
            return values if values is None or rows.validation is None else values[rows.train]

        self._fit_rows = (rows, training(codes), comms)
        data = FitData(
            X_train=training(X),
            y_train=training(y),
            sample_weight_train=training(sample_weight),
            X_val=None if validation is None else validation[0],
            y_val=None if validation is None else validation[1],
            sample_weight_val=None if validation is None else validation[2],
            rows=rows,
            known_categories=known_categories,
        )
        try:
            BoostingRun(self, data, comms).fit(monotonic_cst, interaction_cst, first_fit)
        finally:
            del self._fit_rows
            del self._in_fit
        self.train_score_ = np.asarray(self.train_score_)
        self.validation_score_ = np.asarray(self.validation_score_)
        return self

    # -- validation -----------------------------------------------------------------------

    def _validate_training_data(self, X, y, sample_weight, comms):
        """``(X, known_categories, layout, y, sample_weight)``: this rank's
        preprocessed rows (float64, categorical features first), the global
        category codes, the global row counts and the encoded targets
        (collective; every error raised on every rank)."""
        X_checked, known_categories = self._preprocess_fit_X(X, comms)
        X_checked, y, sample_weight, layout = validate_fit_data(
            self,
            X_checked,
            y,
            comms=comms,
            sample_weight=sample_weight,
            dtype=X_DTYPE,
            ensure_all_finite=False,
        )
        if self._preprocessor is not None:  # the names of the data frame, not of its encoding
            self.n_features_in_ = self._preprocessor.n_features_in_
            names = getattr(self._preprocessor, "feature_names_in_", None)
            if names is not None:
                self.feature_names_in_ = names
        y = self._encode_y_global(y, comms)
        if sample_weight is not None:
            sample_weight = to_host(sample_weight).astype(np.float64)
            self._fitted_with_sw = True
        sample_weight = self._finalize_sample_weight(sample_weight, y)
        return X_checked, known_categories, layout, y, sample_weight

    def _preprocess_fit_X(self, X, comms):
        """scikit-learn's ``_preprocess_X(X, reset=True)`` with the categories
        of every rank: ``(X, known_categories)``; X is left for
        :func:`validate_fit_data` when no feature is categorical."""

        def local():
            mask = _check_categorical_features(X, self.categorical_features)
            rows = _num_samples(X) if mask is not None else None
            return mask, (None if mask is None else mask.tolist(), rows)

        self.is_categorical_, facts = agree(comms, local)
        if len({str(f[0]) for f in facts}) > 1:
            raise ValueError(
                "The categorical features differ between ranks ("
                + "; ".join(f"rank {r}: {f[0]}" for r, f in enumerate(facts))
                + "); give every rank the same columns and dtypes."
            )
        if self.is_categorical_ is None:
            self._preprocessor = None
            self._is_categorical_remapped = None
            return X, None
        from ..preprocessing import OrdinalEncoder

        is_categorical = self.is_categorical_
        columns = (
            X.iloc[:, is_categorical] if hasattr(X, "iloc") else np.asarray(X)[:, is_categorical]
        )
        found = OrdinalEncoder(comms=comms).fit(columns).categories_
        check_X = partial(check_array, dtype=[X_DTYPE], ensure_all_finite=False)
        self._preprocessor = ColumnTransformer(
            [
                (
                    "encoder",
                    SklearnOrdinalEncoder(
                        categories=found,
                        handle_unknown="use_encoded_value",
                        unknown_value=np.nan,
                        encoded_missing_value=np.nan,
                        dtype=X_DTYPE,
                    ),
                    is_categorical,
                ),
                ("numerical", FunctionTransformer(check_X), ~is_categorical),
            ]
        )
        self._preprocessor.set_output(transform="default")
        rows = [f[1] for f in facts]
        encoded, _ = agree(
            comms, lambda: (self._preprocessor.fit_transform(X) if rows[comms.rank] else None, None)
        )
        if min(rows) == 0:  # ranks without rows take the (data-independent) fitted encoder
            first = next(r for r, n in enumerate(rows) if n)
            self._preprocessor = comms.bcast_object(self._preprocessor, root=first)
        n_features = len(is_categorical)
        if encoded is None:
            encoded = np.empty((0, n_features), dtype=X_DTYPE)
        known_categories = self._check_categories()
        remapped = np.zeros(n_features, dtype=bool)
        remapped[self._preprocessor.output_indices_["encoder"]] = True
        self._is_categorical_remapped = remapped
        return encoded, known_categories

    def _validate_validation_data(self, X_val, y_val, sample_weight_val, comms):
        """``(X_val, y_val, sample_weight_val)`` of this rank, preprocessed and
        encoded, or None without validation data (collective)."""
        given = (X_val is not None, y_val is not None)
        _, facts = agree(comms, lambda: (None, given))
        if len(set(facts)) > 1:
            raise ValueError(
                "X_val and y_val are given on some ranks only; give them on every rank "
                "(a rank without validation rows passes empty arrays)."
            )
        if given == (False, False):
            return None
        if not given[1]:
            raise ValueError("X_val is provided, but y_val was not provided.")
        if not given[0]:
            raise ValueError("y_val is provided, but X_val was not provided.")

        def local():
            X = self._preprocess_X(X_val, reset=False)
            y = _check_y(y_val, estimator=self)
            check_consistent_length(X, y)
            return (X, y, _check_weights(sample_weight_val, np.asarray(to_host(X)))), None

        (X, y, weights), _ = agree(comms, local)
        y = self._encode_y_val_global(y, comms)
        if self.early_stopping is False:
            raise ValueError(
                "X_val and y_val are passed to fit while at the same time "
                "early_stopping is False. When passing X_val and y_val to fit,"
                "early_stopping should be set to either 'auto' or True."
            )
        weights = None if weights is None else to_host(weights).astype(np.float64)
        return X, y, weights

    def _preprocess_X(self, X, *, reset):
        """scikit-learn's, with rows on the device kept there and zero rows allowed."""
        if reset:
            return super()._preprocess_X(X, reset=reset)
        if self._preprocessor is None or is_device_array(X):
            return check_local(self, X, dtype=[X_DTYPE], ensure_all_finite=False)
        if _num_samples(X) == 0:
            return np.empty((0, self.n_features_in_), dtype=X_DTYPE)
        return self._preprocessor.transform(X)

    # -- the loss and early stopping ------------------------------------------------------

    def _check_early_stopping_loss(
        self,
        raw_predictions,
        y_train,
        sample_weight_train,
        raw_predictions_val,
        y_val,
        sample_weight_val,
        n_threads=1,
    ):
        """scikit-learn's, with the mean losses over every rank's rows (exact sums)."""
        sets = [(y_train, raw_predictions, sample_weight_train)]
        if self._use_validation_data:
            sets.append((y_val, raw_predictions_val, sample_weight_val))
        losses = mean_losses(self._loss, sets, n_threads, self._get_comms())
        self.train_score_.append(-losses[0])
        if self._use_validation_data:
            self.validation_score_.append(-losses[1])
            return self._should_stop(self.validation_score_)
        return self._should_stop(self.train_score_)

    def _get_small_trainset(self, X_binned_train, y_train, sample_weight_train, seed):
        """scikit-learn's stratified resample of 10,000 training rows, under the
        fit's random draws (:mod:`._hgb_rows`; collective inside ``fit``;
        outside, on this process's rows alone)."""
        fit_rows = getattr(self, "_fit_rows", None)
        if fit_rows is None:
            n_rows = X_binned_train.shape[0]
            rows, comms = all_rows(RowLayout((n_rows,), 0), draws_for(n_rows)), SelfComms()
            codes = np.unique(y_train, return_inverse=True)[1] if is_classifier(self) else None
            n_classes = 0 if codes is None else int(codes.max(initial=-1)) + 1
        else:
            rows, codes, comms = fit_rows
            n_classes = len(self.classes_) if codes is not None else 0
        if rows.n_train <= _EARLY_STOPPING_ROWS:
            return X_binned_train, y_train, sample_weight_train, slice(None)
        indices = small_trainset(rows, seed, codes, n_classes, comms)
        X_small = get_namespace(X_binned_train).ascontiguousarray(X_binned_train[indices])
        weights = None if sample_weight_train is None else sample_weight_train[indices]
        return X_small, y_train[indices], weights, indices

    def _early_stopping_scorer(self):
        """The scorer of ``scoring``: mlmpi's global scorer of a name, the
        estimator's (collective) ``score`` for None, a callable as given (it
        must be collective)."""
        return check_scoring(self, self.scoring)

    def _scoring_is_predefined_string(self):
        return isinstance(self.scoring, str) and self.scoring in _SCORERS

    # -- prediction (local) ---------------------------------------------------------------

    def _add_trees(self, X, iterations, raw, binned):
        """``raw += `` the trees of ``iterations`` for rows ``X`` (binned or raw),
        on ``X``'s device; ``raw`` may be on the host."""
        trees = flatten(iterations)
        if trees.roots.shape[0] == 0 or X.shape[0] == 0:
            return raw
        xp = get_namespace(X)
        kernels = kernels_for("hgb", X)
        out = raw if get_namespace(raw) is xp else xp.asarray(raw)
        if binned:
            kernels.predict_binned(
                X,
                trees.nodes,
                trees.roots,
                trees.columns,
                trees.binned_bitsets,
                self._bin_mapper.missing_values_bin_idx_,
                out,
            )
        else:
            known, feature_map = self._bin_mapper.make_known_categories_bitsets()
            known = np.concatenate([known, np.zeros((1, 8), dtype=known.dtype)])
            kernels.predict_raw(
                X,
                trees.nodes,
                trees.roots,
                trees.columns,
                trees.raw_bitsets,
                known,
                feature_map,
                out,
            )
        if out is not raw:
            raw[...] = to_host(out)
        return raw

    def _predict_iterations(self, X, predictors, raw_predictions, is_binned, n_threads):
        """Add the predictions of the predictors to raw_predictions (mlmpi's kernels)."""
        self._add_trees(X, predictors, raw_predictions, binned=is_binned)

    def _encode_y_val_global(self, y, comms):
        return agree(comms, lambda: (self._encode_y_val(y), None))[0]


_COMMON_PARAMETERS = """
    learning_rate : float, default=0.1
        The learning rate (shrinkage): a multiplicative factor of the leaf values.
    max_iter : int, default=100
        The maximum number of boosting iterations{per_class}.
    max_leaf_nodes : int or None, default=31
        The maximum number of leaves of each tree (more than 1); None for no limit.
    max_depth : int or None, default=None
        The maximum depth of each tree; None for no limit.
    min_samples_leaf : int, default=20
        The minimum number of rows of every rank together per leaf.
    l2_regularization : float, default=0
        The L2 penalty on the leaf values (0 for none).
    max_features : float, default=1.0
        Fraction of the features drawn at random at each split search.
    max_bins : int, default=255
        The maximum number of bins of the non-missing values (at most 255); a
        bin for missing values is always added.
    categorical_features : array-like of {{bool, int, str}} or "from_dtype", default="from_dtype"
        The categorical features: a boolean mask, integer indices, names, None
        for none, or "from_dtype" for the columns of pandas "category" dtype.
        At most ``max_bins`` categories each (over every rank together).
    monotonic_cst : array-like of int of shape (n_features,) or dict, default=None
        Monotonic constraint per feature: 1 increasing, 0 none, -1 decreasing
        (a dict maps feature names to constraints).
    interaction_cst : {{"pairwise", "no_interactions"}} or sequence of sets of int, default=None
        Sets of features that may interact in a branch.
    warm_start : bool, default=False
        Whether to add iterations to the previous fit (on the same data).
    early_stopping : "auto" or bool, default="auto"
        Whether to stop when the validation score stops improving; "auto" is
        on above 10,000 rows (every rank together) or with ``X_val``.
    scoring : str, callable or None, default="loss"
        The early-stopping score: "loss", a scorer name (global scores of
        :mod:`mlmpi.metrics`), a collective callable ``scorer(estimator, X,
        y)``, or None for :meth:`score`.
    validation_fraction : int, float or None, default=0.1
        Fraction (or number) of the global rows set aside for early stopping;
        None scores the training rows.
    n_iter_no_change : int, default=10
        Stop when none of the last ``n_iter_no_change`` scores improves on the
        one before them by more than ``tol``.
    tol : float, default=1e-7
        The absolute improvement of the score that counts.
    verbose : int, default=0
        Print a summary of the fit on rank 0 when not 0.
    random_state : int, RandomState instance or None, default=None
        Seeds the binning subsample, the validation split, the scorer's
        subsample and the feature subsampling (an int gives the same model
        as scikit-learn's under scikit-learn's random draws).{extra}
    comms : Comms, default=None
        Communicator; None uses :func:`mlmpi.get_comms`."""

_ATTRIBUTES = """

    Attributes
    ----------{classes}
    do_early_stopping_ : bool
        Whether early stopping ran. Replicated.
    n_iter_ : int
        The number of iterations fitted. Replicated.
    n_trees_per_iteration_ : int
        Trees per iteration ({trees}). Replicated.
    train_score_ : ndarray of shape (``n_iter_ + 1``,)
        The early-stopping scores of the training rows (or of 10,000 of them
        with a scorer), before the first iteration and after each. Replicated.
    validation_score_ : ndarray of shape (``n_iter_ + 1``,)
        The scores of the validation rows. Replicated.
    random_draws_ : {{"scikit-learn", "per-row"}}
        The random draws of the fit (the validation split, the binning
        subsample and the scorer's subsample), by
        :func:`mlmpi.random.draws_for` of the global row count: scikit-learn's
        (replayed on every rank) or per-row draws (see Notes). Replicated.
    is_categorical_ : ndarray of shape (n_features,) or None
        The categorical features. Replicated.
    n_features_in_ : int
        Number of features seen during fit. Replicated.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features when ``X`` has string column names. Replicated.

    Notes
    -----
    :meth:`fit` and :meth:`score` are collective; the prediction methods are
    local and take rows on the host or on the GPU (CuPy arrays, answered on
    the GPU). The model is the same at any number of ranks (histogram sums are
    exact fixed-point sums, so a model never depends on how the rows are
    split). Under scikit-learn's random draws (``random_draws_``; by default
    up to ``mlmpi.random.REPLAY_LIMIT``, one million, global rows) it is
    scikit-learn's fitted on the concatenation of the ranks' rows: the same
    bins, the same validation rows and the same trees for an int
    ``random_state``; every rank then replays scikit-learn's draws over all
    the global rows (8 bytes per global row during the split). Under per-row
    draws (above that, or :func:`mlmpi.random.set_draws`) the validation
    split and the subsamples are drawn by global row, in time and memory
    that grow with the rank's rows only: scikit-learn's part sizes and
    per-class counts, and draws from the same distributions, but not its
    rows. The user guide's boosting page and the differences page say more.
"""


class HistGradientBoostingRegressor(
    _DistributedHistGradientBoosting,
    DistributedRegressorMixin,
    sk.HistGradientBoostingRegressor,
):
    _parameter_constraints: dict = {
        **sk.HistGradientBoostingRegressor._parameter_constraints,
        "comms": [None, Comms],
    }

    def __init__(
        self,
        loss="squared_error",
        *,
        quantile=None,
        learning_rate=0.1,
        max_iter=100,
        max_leaf_nodes=31,
        max_depth=None,
        min_samples_leaf=20,
        l2_regularization=0.0,
        max_features=1.0,
        max_bins=255,
        categorical_features="from_dtype",
        monotonic_cst=None,
        interaction_cst=None,
        warm_start=False,
        early_stopping="auto",
        scoring="loss",
        validation_fraction=0.1,
        n_iter_no_change=10,
        tol=1e-7,
        verbose=0,
        random_state=None,
        comms=None,
    ):
        super().__init__(
            loss=loss,
            quantile=quantile,
            learning_rate=learning_rate,
            max_iter=max_iter,
            max_leaf_nodes=max_leaf_nodes,
            max_depth=max_depth,
            min_samples_leaf=min_samples_leaf,
            l2_regularization=l2_regularization,
            max_features=max_features,
            max_bins=max_bins,
            categorical_features=categorical_features,
            monotonic_cst=monotonic_cst,
            interaction_cst=interaction_cst,
            warm_start=warm_start,
            early_stopping=early_stopping,
            scoring=scoring,
            validation_fraction=validation_fraction,
            n_iter_no_change=n_iter_no_change,
            tol=tol,
            verbose=verbose,
            random_state=random_state,
        )
        self.comms = comms

    def _encode_y_global(self, y, comms):
        """scikit-learn's ``_encode_y`` with the checks of every rank's targets."""

        def local():
            values = self._encode_y_local(y)
            return values, (bool(np.any(values < 0)), bool(np.any(values <= 0)))

        y, facts = agree(comms, local)
        if self.loss == "gamma" and any(f[1] for f in facts):
            raise ValueError("loss='gamma' requires strictly positive y.")
        if self.loss == "poisson" and (
            any(f[0] for f in facts) or not exact_sums([y], comms)[0] > 0
        ):
            raise ValueError("loss='poisson' requires non-negative y and sum(y) > 0.")
        return y

    def _encode_y_local(self, y):
        self.n_trees_per_iteration_ = 1
        return to_host(y).astype(np.float64, copy=False)

    def _encode_y_val(self, y=None):
        return self._encode_y_local(y)

    def _encode_y_val_global(self, y, comms):
        return self._encode_y_global(y, comms)

    predict = _keeps_device(sk.HistGradientBoostingRegressor.predict)
    staged_predict = _keeps_device(sk.HistGradientBoostingRegressor.staged_predict)


class HistGradientBoostingClassifier(
    _DistributedHistGradientBoosting,
    DistributedClassifierMixin,
    sk.HistGradientBoostingClassifier,
):
    _parameter_constraints: dict = {
        **sk.HistGradientBoostingClassifier._parameter_constraints,
        "comms": [None, Comms],
    }

    def __init__(
        self,
        loss="log_loss",
        *,
        learning_rate=0.1,
        max_iter=100,
        max_leaf_nodes=31,
        max_depth=None,
        min_samples_leaf=20,
        l2_regularization=0.0,
        max_features=1.0,
        max_bins=255,
        categorical_features="from_dtype",
        monotonic_cst=None,
        interaction_cst=None,
        warm_start=False,
        early_stopping="auto",
        scoring="loss",
        validation_fraction=0.1,
        n_iter_no_change=10,
        tol=1e-7,
        verbose=0,
        random_state=None,
        class_weight=None,
        comms=None,
    ):
        super().__init__(
            loss=loss,
            learning_rate=learning_rate,
            max_iter=max_iter,
            max_leaf_nodes=max_leaf_nodes,
            max_depth=max_depth,
            min_samples_leaf=min_samples_leaf,
            l2_regularization=l2_regularization,
            max_features=max_features,
            max_bins=max_bins,
            categorical_features=categorical_features,
            monotonic_cst=monotonic_cst,
            interaction_cst=interaction_cst,
            warm_start=warm_start,
            early_stopping=early_stopping,
            scoring=scoring,
            validation_fraction=validation_fraction,
            n_iter_no_change=n_iter_no_change,
            tol=tol,
            verbose=verbose,
            random_state=random_state,
            class_weight=class_weight,
        )
        self.comms = comms

    def _encode_y_global(self, y, comms):
        """scikit-learn's ``_encode_y`` with the classes of every rank."""
        self.classes_, self._class_counts, codes = global_classes(y, comms)
        self._label_encoder = LabelEncoder()
        self._label_encoder.classes_ = self.classes_
        n_classes = self.classes_.shape[0]
        self.n_trees_per_iteration_ = 1 if n_classes <= 2 else n_classes
        return codes.astype(np.float64)

    def _finalize_sample_weight(self, sample_weight, y):
        """Class weights from the global class counts (scikit-learn's
        ``compute_sample_weight`` on the encoded labels)."""
        if self.class_weight is None:
            return sample_weight
        codes = np.arange(self.classes_.shape[0], dtype=np.float64)
        weights = _class_weights(self.class_weight, codes, self._class_counts)
        expanded = weights[y.astype(np.int64)]
        return expanded if sample_weight is None else sample_weight * expanded

    predict = _keeps_device(sk.HistGradientBoostingClassifier.predict)
    staged_predict = _keeps_device(sk.HistGradientBoostingClassifier.staged_predict)
    predict_proba = _keeps_device(sk.HistGradientBoostingClassifier.predict_proba)
    staged_predict_proba = _keeps_device(sk.HistGradientBoostingClassifier.staged_predict_proba)
    decision_function = _keeps_device(sk.HistGradientBoostingClassifier.decision_function)
    staged_decision_function = _keeps_device(
        sk.HistGradientBoostingClassifier.staged_decision_function
    )


_EXAMPLE = """    >>> import numpy as np
    >>> from mlmpi.ensemble import {name}
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(size=(200, 2))
    >>> y = {target}
    >>> model = {name}(max_iter=20, random_state=0).fit(X, y)
    >>> model.n_iter_
    20
    >>> {check}
    {result}
"""


def _document(cls, summary, *, loss, extra, classes, trees, example):
    cls.__doc__ = (
        f"{summary}\n\n"
        "    scikit-learn's estimator of the same name, fitted on the rows of\n"
        "    every rank: the same model at any number of ranks and, under\n"
        "    scikit-learn's random draws (up to one million rows by default),\n"
        "    the bins, the validation rows and the trees scikit-learn fits on\n"
        "    the concatenated rows.\n"
        "\n    Parameters\n    ----------\n"
        f"{loss}"
        + _COMMON_PARAMETERS.format(
            per_class=" (trees per class for multiclass)" if classes else "", extra=extra
        )
        + _ATTRIBUTES.format(classes=classes, trees=trees)
        + f"\n    Examples\n    --------\n{example}"
    )


_document(
    HistGradientBoostingRegressor,
    "Histogram-based gradient boosting regression trees over rows spread across ranks.",
    loss=(
        '    loss : {"squared_error", "absolute_error", "gamma", "poisson", "quantile"}, '
        'default="squared_error"\n'
        "        The loss to minimise (half squared error, half Poisson and gamma\n"
        "        deviances with a log link, pinball loss).\n"
        "    quantile : float, default=None\n"
        '        The quantile to estimate with ``loss="quantile"``, in [0, 1].'
    ),
    extra="",
    classes="",
    trees="always 1",
    example=_EXAMPLE.format(
        name="HistGradientBoostingRegressor",
        target="X[:, 0] + 2 * X[:, 1]",
        check="model.score(X, y) > 0.9",
        result="True",
    ),
)
_document(
    HistGradientBoostingClassifier,
    "Histogram-based gradient boosting classification trees over rows spread across ranks.",
    loss=(
        '    loss : {"log_loss"}, default="log_loss"\n'
        "        The binomial (two classes) or multinomial log loss."
    ),
    extra=(
        '\n    class_weight : dict or "balanced", default=None\n'
        '        Weights of the classes; "balanced" from the global class counts.'
    ),
    classes=(
        "\n    classes_ : ndarray of shape (n_classes,)\n"
        "        Class labels over all ranks. Replicated."
    ),
    trees="1 for two classes, n_classes otherwise",
    example=_EXAMPLE.format(
        name="HistGradientBoostingClassifier",
        target="(X[:, 0] > X[:, 1]).astype(int)",
        check="model.score(X, y) > 0.95",
        result="True",
    ),
)
