"""The sufficient statistics of every cross-validation fold, from one pass over the data.

A least-squares problem on a fold's training rows needs only their weighted
means and centred Gram matrices (:class:`~mlmpi.linear_model._stats.LeastSquaresStats`);
its score on the held-out rows needs the same sums over them. Each rank
sums over the held-out rows of each fold (a pass over its rows when the
folds' test sets do not overlap, as in K-fold) and over all its rows; a
fold whose training rows are all the others (K-fold) has the total minus
its held-out sums as training sums (others are summed too); one allreduce
packs everything.

Sums are taken about the global mean ``μ`` (a first, small allreduce), so
that subtracting them loses no precision to large means; a fold's sums
about its own training mean ``m`` follow exactly:
``Σ (x - m)(x - m)ᵀ = Σ (x - μ)(x - μ)ᵀ - n (m - μ)(m - μ)ᵀ``.
"""

from dataclasses import dataclass

import numpy as np

from .._array import is_sparse, to_host
from ..kernels import kernels_for
from ._stats import LeastSquaresStats


@dataclass(frozen=True)
class Folds:
    """This rank's rows of each cross-validation split.

    Attributes
    ----------
    train, test : list of ndarray of int
        Local row indices of each split's training and held-out rows.
    n_local : int
        Rows of this rank.
    """

    train: list
    test: list
    n_local: int

    @property
    def n_splits(self):
        return len(self.test)

    def train_mask(self):
        """``(n_local, n_splits)`` boolean: whether each row trains each split."""
        mask = np.zeros((self.n_local, self.n_splits), dtype=bool)
        for k, rows in enumerate(self.train):
            mask[rows, k] = True
        return mask

    def complementary(self):
        """Whether every split trains on all the rows it does not hold out (this rank)."""
        for train, test in zip(self.train, self.test):
            if len(train) + len(test) != self.n_local:
                return False
            seen = np.zeros(self.n_local, dtype=bool)
            seen[train] = True
            seen[test] = True
            if not seen.all():
                return False
        return True


def _sums(X, Y, w, x_shift, y_shift, products):
    """``[rows, Σw, Σw(x-μ), Σw(y-ν), products]`` of the rows (float64, flat).

    ``products``: the packed ``[XᵀWX, XᵀWY, YᵀWY]`` (full Gram matrices),
    else only the diagonal ``Σw(x-μ)²``.
    """
    d, t = X.shape[1], Y.shape[1]
    Yc = Y - y_shift
    wy = Yc if w is None else Yc * w[:, None]
    head = [
        np.array([X.shape[0], X.shape[0] if w is None else w.sum()], dtype=np.float64),
        None,
        wy.sum(axis=0),
    ]
    if is_sparse(X):  # uncentred sums, shifted after the fact
        kernels = kernels_for("linear", X)
        ones = np.ones(X.shape[0]) if w is None else w
        s1 = np.zeros(d)
        kernels.add_transpose_product(X, ones, s1)
        head[1] = s1 - head[0][1] * x_shift
        if not products:
            raise ValueError("fold variances of sparse X are not needed")
        gram = np.zeros((d, d))
        kernels.add_weighted_gram(X, None if w is None else w.astype(np.float64), gram)
        gram += head[0][1] * np.outer(x_shift, x_shift) - np.outer(s1, x_shift)
        gram -= np.outer(x_shift, s1)
        xty = np.zeros((d, t))
        kernels.add_transpose_product(X, wy, xty)
        xty -= np.outer(x_shift, wy.sum(axis=0))
        return np.concatenate(head + [gram.ravel(), xty.ravel(), (wy.T @ Yc).ravel()])
    Xc = X - x_shift
    wx = Xc if w is None else Xc * w[:, None]
    head[1] = wx.sum(axis=0)
    if not products:
        return np.concatenate(head + [(wx * Xc).sum(axis=0)])
    return np.concatenate(head + [(wx.T @ Xc).ravel(), (wx.T @ Yc).ravel(), (wy.T @ Yc).ravel()])


class FoldStats:
    """Training and held-out sums of every fold (replicated, host float64).

    Built by :func:`fold_stats`. ``products=False`` keeps only the column
    variances (what a per-fold standard scaler needs), not the Gram matrices.
    """

    def __init__(self, total, held_out, train, x_shift, y_shift, d, t, products):
        self.x_shift, self.y_shift = x_shift, y_shift
        self.d, self.t, self.products = d, t, products
        self._total = self._unpack(total)
        self._held_out = [self._unpack(part) for part in held_out]
        self._train = [self._unpack(part) for part in train]

    def _unpack(self, flat):
        d, t = self.d, self.t
        parts = {
            "rows": flat[0],
            "n": flat[1],
            "sx": flat[2 : 2 + d],
            "sy": flat[2 + d : 2 + d + t],
        }
        rest = flat[2 + d + t :]
        if self.products:
            parts["xx"] = rest[: d * d].reshape(d, d)
            parts["xy"] = rest[d * d : d * d + d * t].reshape(d, t)
            parts["yy"] = rest[d * d + d * t :].reshape(t, t)
        else:
            parts["xx"] = rest
        return parts

    @property
    def n_splits(self):
        return len(self._held_out)

    def rows(self, k):
        """Global numbers of training and held-out rows of fold ``k``."""
        return int(round(self._train[k]["rows"])), int(round(self._held_out[k]["rows"]))

    def held_out_weight(self, k):
        """Weight sum of fold ``k``'s held-out rows."""
        return float(self._held_out[k]["n"])

    def _about_own_mean(self, sums):
        """``(weight, x mean, y mean, Sxx, Sxy, Syy)`` centred at the rows' own means."""
        n = sums["n"]
        a = sums["sx"] / n if n > 0 else np.zeros(self.d)
        b = sums["sy"] / n if n > 0 else np.zeros(self.t)
        if self.products:
            xx = sums["xx"] - n * np.outer(a, a)
            xy = sums["xy"] - n * np.outer(a, b)
            yy = sums["yy"] - n * np.outer(b, b)
        else:
            xx, xy, yy = sums["xx"] - n * a * a, None, None
        return n, a + self.x_shift, b + self.y_shift, xx, xy, yy

    def _train_sums(self, k):
        return self._total if k is None else self._train[k]

    def train(self, k):
        """Fold ``k``'s training rows (every row for None): ``(weight sum, x̄, ȳ,
        centred XᵀWX (or its diagonal), centred XᵀWY, centred YᵀWY)``."""
        return self._about_own_mean(self._train_sums(k))

    def moments(self, k, *, fit_intercept, scale=None, centre=None):
        """:class:`~mlmpi.linear_model._stats.LeastSquaresStats` of fold ``k``'s training rows
        (every row for None) after ``x -> (x - centre) / scale`` (a fitted standard
        scaler; None: identity), centred at their means with ``fit_intercept``, as
        ``centred_moments`` gives."""
        n, x_mean, y_mean, xx, xy, yy = self.train(k)
        scale = np.ones(self.d) if scale is None else scale
        centre = np.zeros(self.d) if centre is None else centre
        z_mean = (x_mean - centre) / scale
        gram, xty = xx / np.outer(scale, scale), xy / scale[:, None]
        if not fit_intercept:  # uncentred products of the scaled rows
            gram = gram + n * np.outer(z_mean, z_mean)
            xty = xty + n * np.outer(z_mean, y_mean)
            yy = yy + n * np.outer(y_mean, y_mean)
            z_mean, y_mean = np.zeros(self.d), np.zeros(self.t)
        return LeastSquaresStats(
            weight_sum=float(n),
            x_mean=z_mean,
            y_mean=y_mean,
            gram=(gram + gram.T) / 2,
            xty=xty,
            yty=np.diag(yy).copy(),
        )

    def held_out_residuals(self, k, coef, intercept):
        """``(Σw r², Σw)`` over fold ``k``'s held-out rows of ``r = y - x·coef - intercept``
        for each column of ``coef`` (d, m) and ``intercept`` (m,): one target."""
        part = self._held_out[k]
        n = part["n"]
        # residual about the shifts: r = (y - ν) - (x - μ)·coef - (intercept - ν + μ·coef)
        offset = intercept - self.y_shift[0] + self.x_shift @ coef
        sxx, sxy, syy = part["xx"], part["xy"][:, 0], part["yy"][0, 0]
        quadratic = np.einsum("im,ij,jm->m", coef, sxx, coef)
        linear = coef.T @ sxy
        sq = syy - 2 * linear + quadratic
        sq += -2 * offset * (part["sy"][0] - coef.T @ part["sx"]) + n * offset**2
        return np.maximum(sq, 0.0), n


def _shifts(X, Y, w, comms):
    """Global weighted means of X and Y (one allreduce)."""
    d = X.shape[1]
    packed = np.zeros(1 + d + Y.shape[1])
    if X.shape[0]:
        ones = np.ones(X.shape[0]) if w is None else w
        packed[0] = ones.sum()
        packed[1 : 1 + d] = np.asarray(X.T @ ones).ravel() if is_sparse(X) else ones @ X
        packed[1 + d :] = ones @ Y
    total = to_host(comms.allreduce(packed))
    n = total[0] if total[0] > 0 else 1.0
    return total[1 : 1 + d] / n, total[1 + d :] / n


def fold_stats(X, Y, folds, comms, *, sample_weight=None, products=True):
    """:class:`FoldStats` of every fold of ``folds``.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_local, n_features), host
    Y : ndarray of shape (n_local, n_targets), host float64
    folds : Folds
    comms : Comms
    sample_weight : ndarray of shape (n_local,), default=None
    products : bool, default=True
        False: column variances only (dense X).

    Notes
    -----
    This function is collective: two allreduces (the global means, then
    ``n_splits + 1`` packed sets of sums).
    """
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    x_shift, y_shift = _shifts(X, Y, w, comms)
    d, t = X.shape[1], Y.shape[1]

    def sums(index):
        return _sums(
            X[index], Y[index], None if w is None else w[index], x_shift, y_shift, products
        )

    held_out = [sums(test) for test in folds.test]
    covered = np.zeros(folds.n_local, dtype=np.int64)
    for test in folds.test:
        covered[test] += 1
    if covered.max(initial=0) <= 1:  # disjoint held-out rows: the total from their sums
        total = sum(held_out, sums(np.flatnonzero(covered == 0)))
    else:
        total = sums(np.arange(folds.n_local))
    # a split whose training rows are the others (K-fold) costs no pass: the total's
    # sums minus the held-out ones; otherwise (ShuffleSplit...) its own sums
    complementary = [len(tr) + len(te) == folds.n_local for tr, te in zip(folds.train, folds.test)]
    train = [
        total - part if whole else sums(rows)
        for part, rows, whole in zip(held_out, folds.train, complementary)
    ]
    packed = np.concatenate([total] + held_out + train)
    reduced = to_host(comms.allreduce(packed)).reshape(2 * folds.n_splits + 1, -1)
    k = folds.n_splits
    return FoldStats(
        reduced[0], reduced[1 : 1 + k], reduced[1 + k :], x_shift, y_shift, d, t, products
    )
