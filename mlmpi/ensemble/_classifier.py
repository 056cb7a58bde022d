"""Classification part of the forests: classes, class weights, probabilities."""

import warnings
from typing import ClassVar

import numpy as np
from sklearn.utils.class_weight import compute_class_weight

from .._array import get_namespace, to_namespace
from .._contract import collective_method
from .._sklearn_compat import StrOptions, _fit_context
from ..base import DistributedClassifierMixin
from ..utils.stats import global_classes
from ._criteria import Criterion
from ._forest import FIT_DOC, BaseHistogramForest


class ForestClassifier(DistributedClassifierMixin, BaseHistogramForest):
    """Classification part of the forests (not public)."""

    _parameter_constraints: ClassVar[dict] = {
        **BaseHistogramForest._parameter_constraints,
        "criterion": [StrOptions({"gini", "entropy", "log_loss"})],
        "class_weight": [StrOptions({"balanced_subsample", "balanced"}), dict, list, None],
    }

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        comms = self._get_comms()
        X, y, sample_weight, layout = self._validate_fit(X, y, sample_weight, comms)
        found = [
            global_classes(y[:, k], comms, sample_weight=sample_weight)
            for k in range(self.n_outputs_)
        ]
        self._classes = [classes for classes, _, _ in found]
        self._class_counts = [counts for _, counts, _ in found]
        targets = np.stack([t for _, _, t in found], axis=1)
        self._check_class_weight()
        if self.oob_score and self.n_outputs_ > 1 and max(len(c) for c in self._classes) > 2:
            raise ValueError(
                "The type of target cannot be used to compute OOB estimates. Got "
                "multiclass-multioutput while only the following are supported: continuous, "
                "continuous-multioutput, binary, multiclass, multilabel-indicator."
            )
        single = self.n_outputs_ == 1
        self.classes_ = self._classes[0] if single else self._classes
        self.n_classes_ = len(self._classes[0]) if single else [len(c) for c in self._classes]
        self._fit_forest(X, targets, sample_weight, layout, comms)
        return self

    fit.__doc__ = FIT_DOC.format(y="Their class labels; a rank may lack some classes.")

    def _check_class_weight(self):
        weights = self.class_weight
        if weights in ("balanced", "balanced_subsample") and self.warm_start:
            warnings.warn(
                'class_weight presets "balanced" or "balanced_subsample" are not recommended '
                "for warm_start if the fitted data differs from the full dataset. In order to "
                'use "balanced" weights, use compute_class_weight ("balanced", classes, y). In '
                "place of y you can use a large enough sample of the full training set target "
                "to properly estimate the class frequency distributions. Pass the resulting "
                "weights as the class_weight parameter.",
                UserWarning,
                stacklevel=4,
            )
        if self.n_outputs_ > 1 and isinstance(weights, dict):
            raise ValueError(
                "For multi-output, class_weight should be a list of dicts, or the string "
                '"balanced".'
            )
        if self.n_outputs_ > 1 and isinstance(weights, list) and len(weights) != self.n_outputs_:
            raise ValueError(
                "For multi-output, number of elements in class_weight should match number of "
                "outputs."
            )

    def _criterion(self, targets, weight, n_samples, comms):
        name = "entropy" if self.criterion == "log_loss" else self.criterion
        return Criterion(name, [len(c) for c in self._classes]), targets

    def _class_weights(self, k, drawn=None):
        """Weight of each class of output ``k``: from ``class_weight``, from the
        global (sample-weighted) counts for "balanced", from the global counts of
        the tree's bootstrap draws ``drawn`` for "balanced_subsample"."""
        classes = self._classes[k]
        if isinstance(self.class_weight, str):
            counts = self._class_counts[k] if drawn is None else drawn
            weights = np.ones(len(classes))
            present = counts > 0
            weights[present] = counts.sum() / (len(classes) * counts[present])
            return weights
        chosen = self.class_weight if self.n_outputs_ == 1 else self.class_weight[k]
        return compute_class_weight(chosen, classes=classes, y=classes)

    def _per_tree_class_weight(self):
        """Whether the class weights come from each tree's bootstrap draws."""
        return self.class_weight == "balanced_subsample" and self.bootstrap

    def _sampling_weight(self, weight, targets):
        """scikit-learn's ``_sample_weight``: the sample weights times the rows'
        class weights (all but "balanced_subsample" with bootstrap), which with
        bootstrap are the rows' chances to be drawn."""
        if self.class_weight is None or self._per_tree_class_weight():
            return weight
        factor = np.ones(targets.shape[0])
        for k in range(self.n_outputs_):
            factor *= self._class_weights(k)[targets[:, k]]
        return factor if weight is None else weight * factor

    def _class_weighting(self, targets, counts, comms):
        """The class weights of one tree, where they weigh the tree's rows: without
        bootstrap (with bootstrap they are in the draws), and "balanced_subsample"
        from the tree's draws. One output: per class after the reduction (exact
        sums for integer weights); several: multiplied into the rows' weights."""
        if self.class_weight is None or (self.bootstrap and not self._per_tree_class_weight()):
            return 1.0, None
        per_output = []
        for k in range(self.n_outputs_):
            drawn = None
            if self._per_tree_class_weight():
                local = np.bincount(targets[:, k], weights=counts, minlength=len(self._classes[k]))
                drawn = comms.allreduce(local.astype(np.float64))
            per_output.append(self._class_weights(k, drawn))
        if self.n_outputs_ == 1:
            return np.append(per_output[0], 1.0), None
        factor = np.ones(targets.shape[0])
        for k, weights in enumerate(per_output):
            factor *= weights[targets[:, k]]
        return 1.0, factor

    def _monotonic(self, n_features):
        constraints = super()._monotonic(n_features)
        if constraints is None:
            return None
        if len(self._classes[0]) > 2:
            raise ValueError(
                "Monotonicity constraints are not supported with multiclass classification"
            )
        # on the share of the first class, as scikit-learn's trees: signs flipped
        return -constraints

    def _clipped(self, values, bounds):
        values = super()._clipped(values, bounds)
        if values.shape[2] == 2:  # binary: the shares sum to one
            values[:, 0, 1] = 1.0 - values[:, 0, 0]
        return values

    def _n_classes_per_output(self):
        return [len(c) for c in self._classes]

    def _set_tree_classes(self, estimator):
        estimator.classes_ = self.classes_
        estimator.n_classes_ = self.n_classes_

    # -- out of bag -----------------------------------------------------------------

    def _set_oob_score_and_attributes(self, X, targets, comms):
        sums, n_trees = self._oob_sums(X)
        self._warn_missing_oob(n_trees, comms)
        decision = sums / np.maximum(n_trees, 1)[:, None]
        if self.n_outputs_ == 1:
            self.oob_decision_function_ = decision
            predicted = decision.argmax(axis=1)
        else:  # scikit-learn's (n_samples, n_classes, n_outputs)
            width = decision.shape[1] // self.n_outputs_
            self.oob_decision_function_ = decision.reshape(-1, self.n_outputs_, width).transpose(
                0, 2, 1
            )
            predicted = self.oob_decision_function_.argmax(axis=1)
        if callable(self.oob_score):
            self.oob_score_ = self._callable_oob_score(targets, predicted, comms)
            return
        correct = np.all(predicted.reshape(targets.shape) == targets, axis=1).sum()
        total = comms.allreduce(np.array([correct, targets.shape[0]], dtype=np.float64))
        self.oob_score_ = float(total[0] / total[1])

    # -- prediction -----------------------------------------------------------------

    def _probabilities(self, X):
        sums, xp = self._leaf_sums(X)
        proba = sums / self.forest_.n_trees
        if self.n_outputs_ == 1:
            return [proba], xp
        width = proba.shape[1] // self.n_outputs_
        return [proba[:, k * width : k * width + len(c)] for k, c in enumerate(self._classes)], xp

    def predict_proba(self, X):
        """Mean class probabilities of the trees for this rank's rows (no communication).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)

        Returns
        -------
        proba : ndarray of shape (n_local, n_classes), or a list of them per output
            Local, in the namespace of ``X``; columns follow ``classes_``.
        """
        proba, xp = self._probabilities(X)
        proba = [to_namespace(p, xp) for p in proba]
        return proba[0] if self.n_outputs_ == 1 else proba

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba` (no communication).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)
            This rank's rows.

        Returns
        -------
        log_proba : ndarray of shape (n_local, n_classes), or a list of them per output
            Local, in the namespace of ``X``; columns follow ``classes_``.
        """
        proba = self.predict_proba(X)
        with np.errstate(divide="ignore"):
            if self.n_outputs_ == 1:
                return get_namespace(proba).log(proba)
            return [get_namespace(p).log(p) for p in proba]

    def predict(self, X):
        """Class of highest mean probability for this rank's rows (no communication).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_local, n_features)

        Returns
        -------
        y : ndarray of shape (n_local,) or (n_local, n_outputs)
            Local; in the namespace of ``X`` for numeric labels.
        """
        proba, xp = self._probabilities(X)
        labels = [c[p.argmax(axis=1)] for c, p in zip(self._classes, proba)]
        labels = labels[0] if self.n_outputs_ == 1 else np.stack(labels, axis=1)
        return to_namespace(labels, xp) if labels.dtype.kind in "biuf" else labels
