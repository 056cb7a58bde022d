"""Scoring fitted linear models whose decision values are already computed.

A cross-validation of a linear model scores many fitted models on the same
held-out rows: one GEMM gives all their decision values. A scorer, though,
calls an estimator's ``predict``, ``predict_proba``, ``decision_function``
or ``score``. :func:`scoring_estimator` makes a copy of the configured
estimator whose response methods read the given decision values instead of
computing ``X @ coef_.T + intercept_``, so every scorer (and ``score``) runs
the estimator's own code on them, unchanged.
"""

import numpy as np


class _GivenDecision:
    """A fitted linear model whose decision values on the rows being scored are
    known: its response methods (predict, predict_proba, ...) and ``score`` read
    them instead of computing ``X @ coef_.T + intercept_``."""

    def _decision_function(self, X):
        return self.decision_


_classes = {}


def scoring_estimator(estimator, fit, decision, classes, n_features):
    """A copy of the configured (unfitted) ``estimator`` answering with ``decision``
    (the values its ``_decision_function`` would return on the scored rows),
    fitted with ``fit`` (a :class:`~mlmpi.linear_model._batched_fits.LinearFit`)
    and ``classes`` (classifiers; None for regressors)."""
    cls = type(estimator)
    if cls not in _classes:
        _classes[cls] = type(cls.__name__, (_GivenDecision, cls), {})
    scored = _classes[cls].__new__(_classes[cls])
    scored.__dict__.update(estimator.__dict__)
    scored.coef_, scored.intercept_ = fit.coef, fit.intercept
    scored.n_features_in_ = n_features
    scored.decision_ = decision
    if classes is not None:
        scored.classes_ = classes
    return scored


def score(scorer, estimator, n_rows, y, **params):
    """``scorer``'s value for ``estimator`` on ``n_rows`` rows whose decision values
    it knows (numbers as Python scalars, as scikit-learn's ``_score`` returns)."""
    scores = scorer(estimator, np.empty((n_rows, 0)), y, **params)
    if isinstance(scores, dict):
        return {name: _scalar(value) for name, value in scores.items()}
    return _scalar(scores)


def _scalar(value):
    return value.item() if hasattr(value, "item") else value


def decisions(X, rows, fits):
    """Decision values ``X[rows] @ coef.T + intercept`` of every fit, side by side
    (one GEMM): an array of shape (len(rows), Σ n_outputs)."""
    coef = np.concatenate([fit.coef for fit in fits])
    intercept = np.concatenate([fit.intercept for fit in fits])
    return X[rows] @ coef.T + intercept
