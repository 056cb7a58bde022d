"""Many logistic regressions on the folds of one data set, one data pass per round.

A cross-validated search of :class:`~mlmpi.linear_model.LogisticRegression`
fits one model per (fold, candidate); each fit reads all of its fold's rows
on every solver iteration. Here every model's solver runs side by side
(:func:`~mlmpi.linear_model._lockstep.run_in_lockstep`): in each round, the
parameters of all the models that asked are stacked into one
``d × (models · outputs)`` block, one GEMM per block of rows gives all their
logits, the held-out rows of each model's fold get weight zero, and one
GEMM gives all their gradients; one allreduce carries every model's loss and
gradient (or Hessian). Each solver then takes the step it would have taken
alone: the values are those of its own objective, up to rounding.

A model may see its rows through a per-fold standard scaler, ``z = (x - c) / s``:
its parameters act on ``z``, and their composition with the scaler acts on
``x``, so the scaled rows are never formed. Products are taken about the
global mean ``μ`` of the rows, so the composition loses no precision to
large means.
"""

from dataclasses import dataclass

import numpy as np

from .._array import to_host
from ._lockstep import run_in_lockstep
from ._logistic import LogisticTerms

_BLOCK_BYTES = 1 << 21


@dataclass(frozen=True)
class FoldView:
    """How one solver sees the rows: its weight column (zero on rows it does
    not train on) and the standard scaler of its fold (None: the raw rows)."""

    column: int
    scale: object = None
    centre: object = None


class AskingObjective(LogisticTerms):
    """The objective a solver thread calls: each call asks the main thread
    (:class:`BatchedLogistic` serves the rounds). Same interface as
    :class:`~mlmpi.linear_model._logistic.LogisticObjective`."""

    def __init__(self, asker, n_features, **terms):
        super().__init__(n_features, **terms)
        self.asker = asker

    def __call__(self, params):
        return self.asker.ask("loss_grad", (self, params))

    def gradient_hessian(self, params):
        return self.asker.ask("grad_hessian", (self, params))

    def gradient_hessian_product(self, params):
        grad = self.asker.ask("grad_curvature", (self, params))
        return grad, lambda v: self.asker.ask("hessp", (self, v))


class BatchedLogistic:
    """Serves the rounds of many logistic solvers on this rank's rows.

    Parameters
    ----------
    X : ndarray of shape (n_local, n_features), float64
    classes_idx : ndarray of shape (n_local,)
        Index of each row's class among the global classes.
    n_outputs : int
        1 for two classes, else the number of classes.
    weights : ndarray of shape (n_local, n_columns)
        Row weights: each solver reads one column (zero where it does not train).
    views : list of FoldView
        Per solver (in the order of ``run``'s tasks).
    x_shift : ndarray of shape (n_features,)
        The global mean of the rows.
    comms : Comms
    """

    def __init__(self, X, classes_idx, n_outputs, weights, views, x_shift, comms):
        self.X, self.comms = X, comms
        self.d = X.shape[1]
        self.k = n_outputs
        self.classes_idx = np.asarray(classes_idx)
        self.target = (self.classes_idx == 1).astype(np.float64)
        self.weights = weights
        self.views = views
        self.x_shift = x_shift
        self.block = max(64, _BLOCK_BYTES // (8 * max(self.d, 1)))
        self.curvature = {}  # solver -> (proba, weight) of its last grad_curvature

    def run(self, tasks):
        """Run the solver ``tasks`` (see :func:`run_in_lockstep`); their results.

        This method is collective.
        """
        return run_in_lockstep(tasks, self.serve)

    # -- composition with the fold's scaler --------------------------------------

    def _scaler(self, model):
        view = self.views[model]
        scale = np.ones(self.d) if view.scale is None else view.scale
        centre = np.zeros(self.d) if view.centre is None else view.centre
        return scale, centre - self.x_shift

    def _compose(self, model, terms, params):
        """``(A, b)`` with ``(x - μ) Aᵀ + b`` the model's logits; ``A`` (k, d)."""
        W = params.reshape(terms.shape)
        scale, shift = self._scaler(model)
        A = W[:, : self.d] / scale
        b = W[:, self.d] if terms.fit_intercept else np.zeros(self.k)
        return A, b - A @ shift

    def _to_params(self, model, terms, G, rsum):
        """The gradient on the model's parameters from ``Σ r (x - μ)`` and ``Σ r``."""
        scale, shift = self._scaler(model)
        grad = np.empty(terms.shape)
        grad[:, : self.d] = (G - rsum[:, None] * shift) / scale
        if terms.fit_intercept:
            grad[:, self.d] = rsum
        return grad

    # -- one pass over the rows --------------------------------------------------

    def _blocks(self):
        for start in range(0, self.X.shape[0], self.block):
            rows = slice(start, start + self.block)
            yield rows, self.X[rows] - self.x_shift

    def _stack(self, requests):
        models = [r.model for r in requests]
        composed = [self._compose(r.model, *r.payload) for r in requests]
        A = np.concatenate([a for a, _ in composed]).T  # (d, models * k)
        b = np.concatenate([b for _, b in composed])
        columns = [self.views[m].column for m in models]
        return models, A, b, columns

    def _residuals(self, logits, weight, rows):
        """``(loss per model, proba, weighted residual)`` of a block's logits (B, M*k)."""
        B, k = logits.shape[0], self.k
        M = logits.shape[1] // k
        if k == 1:
            target = self.target[rows][:, None]
            softplus = np.logaddexp(0, logits)
            loss = np.einsum("bm,bm->m", weight, softplus - target * logits)
            proba = np.exp(logits - softplus)
            return loss, proba, (proba - target) * weight
        raw = logits.reshape(B, M, k)
        top = raw.max(axis=2, keepdims=True)
        exp = np.exp(raw - top)
        total = exp.sum(axis=2, keepdims=True)
        cls = self.classes_idx[rows]
        picked = raw[np.arange(B), :, cls]
        loss = np.einsum("bm,bm->m", weight, (top + np.log(total))[:, :, 0] - picked)
        proba = exp / total
        residual = proba.copy()
        residual[np.arange(B), :, cls] -= 1
        residual *= weight[:, :, None]
        return loss, proba.reshape(B, M * k), residual.reshape(B, M * k)

    def _loss_pass(self, requests, *, keep=False, hessian=False):
        """Per request ``(loss, G (k, d), Σr (k,), hessian sums)`` summed over all ranks."""
        models, A, b, columns = self._stack(requests)
        M, k, d = len(models), self.k, self.d
        loss = np.zeros(M)
        G = np.zeros((d, M * k))
        rsum = np.zeros(M * k)
        pairs = [(a, c) for a in range(k) for c in range(a, k)]
        H = np.zeros((M, len(pairs), d + 1, d + 1)) if hessian else None
        kept = [np.empty((self.X.shape[0], k)) for _ in models] if keep else None
        for rows, Xb in self._blocks():
            weight = self.weights[rows][:, columns]
            block_loss, proba, residual = self._residuals(Xb @ A + b, weight, rows)
            loss += block_loss
            G += Xb.T @ residual
            rsum += residual.sum(axis=0)
            if keep:
                for i in range(M):
                    kept[i][rows] = proba[:, i * k : (i + 1) * k]
            if hessian:
                augmented = np.concatenate([Xb, np.ones((Xb.shape[0], 1))], axis=1)
                for i in range(M):
                    p = proba[:, i * k : (i + 1) * k]
                    for j, (a, c) in enumerate(pairs):
                        h = weight[:, i] * p[:, a] * ((a == c) - p[:, c])
                        H[i, j] += (augmented * h[:, None]).T @ augmented
        parts = [loss, G.T.ravel(), rsum] + ([H.ravel()] if hessian else [])
        total = to_host(self.comms.allreduce(np.concatenate(parts)))
        loss = total[:M]
        G = total[M : M + M * k * d].reshape(M, k, d)
        rsum = total[M + M * k * d : M + M * k * d + M * k].reshape(M, k)
        if hessian:
            H = total[M + M * k * d + M * k :].reshape(M, len(pairs), d + 1, d + 1)
        if keep:
            for i, model in enumerate(models):
                self.curvature[model] = (kept[i], columns[i])
        return loss, G, rsum, H

    def _hessian(self, model, terms, sums):
        """The model's Hessian (flat, penalised) from the class pairs' sums of
        ``h [x - μ, 1][x - μ, 1]ᵀ``."""
        scale, shift = self._scaler(model)
        d, k, p = self.d, self.k, terms.shape[1]
        # [x - μ, 1] -> [(x - μ - shift) / s, 1]: a linear map of the augmented row
        T = np.zeros((d + 1, d + 1))
        T[:d, :d] = np.diag(1.0 / scale)
        T[:d, d] = -shift / scale
        T[d, d] = 1.0
        keep = slice(0, p)  # without fit_intercept, the last column goes
        hessian = np.zeros((k * p, k * p))
        pairs = [(a, c) for a in range(k) for c in range(a, k)]
        for j, (a, c) in enumerate(pairs):
            block = (T @ sums[j] @ T.T)[keep, keep]
            hessian[a * p : (a + 1) * p, c * p : (c + 1) * p] = block
            hessian[c * p : (c + 1) * p, a * p : (a + 1) * p] = block.T
        return terms._penalised_hessian(hessian.ravel())

    def _product_pass(self, requests):
        """Hessian products ``v`` of the models' last curvature (hessp)."""
        models, A, b, columns = self._stack(requests)
        M, k, d = len(models), self.k, self.d
        G = np.zeros((d, M * k))
        rsum = np.zeros(M * k)
        for rows, Xb in self._blocks():
            direction = Xb @ A + b
            q = np.empty_like(direction)
            for i, model in enumerate(models):
                proba, column = self.curvature[model]
                p = proba[rows]
                w = self.weights[rows, column][:, None]
                v = direction[:, i * k : (i + 1) * k]
                if k == 1:
                    q[:, i * k : (i + 1) * k] = w * p * (1 - p) * v
                else:
                    q[:, i * k : (i + 1) * k] = w * p * (v - (p * v).sum(axis=1, keepdims=True))
            G += Xb.T @ q
            rsum += q.sum(axis=0)
        total = to_host(self.comms.allreduce(np.concatenate([G.T.ravel(), rsum])))
        return total[: M * k * d].reshape(M, k, d), total[M * k * d :].reshape(M, k)

    # -- answering a round -------------------------------------------------------

    def serve(self, requests):
        """Answer one round of requests (one pass per kind asked). This method is collective."""
        answers = [None] * len(requests)
        kinds = sorted({r.kind for r in requests})
        for kind in kinds:
            chosen = [i for i, r in enumerate(requests) if r.kind == kind]
            group = [requests[i] for i in chosen]
            for i, answer in zip(chosen, self._answer(kind, group)):
                answers[i] = answer
        return answers

    def _answer(self, kind, group):
        if kind == "hessp":
            G, rsum = self._product_pass(group)
            answers = []
            for i, request in enumerate(group):
                terms, v = request.payload
                product = self._to_params(request.model, terms, G[i], rsum[i])
                answers.append(terms._penalised_product(product, v))
            return answers
        loss, G, rsum, H = self._loss_pass(
            group, keep=kind == "grad_curvature", hessian=kind == "grad_hessian"
        )
        answers = []
        for i, request in enumerate(group):
            terms, params = request.payload
            grad = self._to_params(request.model, terms, G[i], rsum[i])
            value, grad = terms._penalised(params, loss[i], grad)
            if kind == "loss_grad":
                answers.append((value, grad))
            elif kind == "grad_curvature":
                answers.append(grad)
            else:
                answers.append((grad, self._hessian(request.model, terms, H[i])))
        return answers
