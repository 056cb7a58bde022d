"""t-SNE's gradient descent over every rank's rows: scikit-learn's schedule
(``_gradient_descent``: momentum, per-coordinate gains, progress checks every
50 iterations), with each rank moving its own rows.

Every iteration gathers the embedding (one allgatherv, ``n · n_components``
values on every rank), computes this rank's rows' gradient against it
(:class:`BarnesHut` or :class:`Exact`) and moves them. Every sum over the
ranks (the normalisation ``Z`` of ``Q``, the KL divergence and the gradient
norm that decide when to stop) is exact (:func:`mlmpi.utils._exact.exact_sums`),
and each row's arithmetic reads only the gathered embedding, so the
embedding has the same bits at any number of ranks.
"""

from time import perf_counter

import numpy as np

from ..kernels import kernels_for
from ..utils._exact import exact_sums
from ._local_rows import MACHINE_EPSILON


class BarnesHut:
    """The Barnes-Hut gradient (van der Maaten 2014) of this rank's rows.

    Every rank builds the same space-partitioning tree over the gathered
    embedding (``O(n log n)`` per rank and iteration, replicated), then
    computes its rows' repulsive forces against it and their attractive
    forces over their rows of ``P`` (CSR, global columns).

    Parameters
    ----------
    P : LocalRows
        This rank's rows of the joint probabilities.
    angle : float
    dof : float
        Degrees of freedom of the Student-t kernel.
    layout : RowLayout
    comms : Comms
    """

    def __init__(self, P, angle, dof, layout, comms):
        self.P = P
        self.angle, self.dof = float(angle), float(dof)
        self.layout, self.comms = layout, comms
        self.kernels = kernels_for("tsne", P.values)
        self.exaggerate(1.0)

    def exaggerate(self, factor):
        """Use ``factor · P`` from now on (scikit-learn's early exaggeration). Local."""
        self.values = self.P.values * factor

    def __call__(self, Y_all, compute_error):
        """``(gradient of this rank's rows, their KL terms or None)``. Collective."""
        k, layout = self.kernels, self.layout
        start, n_local = layout.offset, layout.n_local
        n_components = Y_all.shape[1]
        tree = k.build_tree(Y_all)
        negative = np.empty((n_local, n_components))
        z = np.empty(n_local)
        k.repulsive_forces(tree, Y_all, start, start + n_local, self.angle, self.dof, negative, z)
        sum_q = max(float(exact_sums([z], self.comms)[0]), MACHINE_EPSILON)
        values = self.values
        positive = np.empty((n_local, n_components))
        k.attractive_forces(Y_all, self.P.indptr, self.P.indices, values, start, self.dof, positive)
        grad = positive - negative / sum_q
        grad *= 2.0 * (self.dof + 1.0) / self.dof
        terms = None
        if compute_error:
            terms = np.empty(n_local)
            k.kl_terms(Y_all, self.P.indptr, self.P.indices, values, start, self.dof, sum_q, terms)
        return grad, terms


class Exact:
    """The exact gradient (scikit-learn's ``_kl_divergence``) of this rank's rows,
    against every row: ``O(n · n_local)`` per rank and iteration.

    Parameters
    ----------
    P_rows : ndarray of shape (n_local, n_samples)
        This rank's rows of the dense joint probabilities.
    dof : float
    layout : RowLayout
    comms : Comms
    """

    def __init__(self, P_rows, dof, layout, comms):
        self.P_rows = P_rows
        self.dof = float(dof)
        self.layout, self.comms = layout, comms
        self.kernels = kernels_for("tsne", P_rows)
        self.exaggerate(1.0)

    def exaggerate(self, factor):
        """Use ``factor · P`` from now on (scikit-learn's early exaggeration). Local."""
        self.scaled_rows = self.P_rows * factor

    def __call__(self, Y_all, compute_error):
        """``(gradient of this rank's rows, their KL terms or None)``. Collective."""
        k, layout = self.kernels, self.layout
        start, n_local = layout.offset, layout.n_local
        z = np.empty(n_local)
        k.exact_z(Y_all, start, start + n_local, self.dof, z)
        sum_z = float(exact_sums([z], self.comms)[0])
        P_rows = self.scaled_rows
        grad = np.empty((n_local, Y_all.shape[1]))
        k.exact_gradient(Y_all, P_rows, start, self.dof, sum_z, grad)
        grad *= 2.0 * (self.dof + 1.0) / self.dof
        terms = None
        if compute_error:
            terms = np.empty(n_local)
            k.exact_kl(Y_all, P_rows, start, self.dof, sum_z, terms)
        return grad, terms


def gradient_descent(
    objective,
    Y,
    it,
    max_iter,
    *,
    momentum,
    learning_rate,
    n_iter_check,
    n_iter_without_progress,
    min_grad_norm,
    comms,
    say,
    min_gain=0.01,
):
    """scikit-learn's ``_gradient_descent`` over this rank's rows ``Y`` (float64,
    moved in place): iterations ``it`` to ``max_iter - 1``, stopping early
    when the KL divergence has not improved for ``n_iter_without_progress``
    iterations or the gradient norm falls to ``min_grad_norm`` (both checked
    every ``n_iter_check`` iterations, on exact global sums).

    ``say`` prints scikit-learn's progress messages (rank 0, ``verbose >= 2``).
    Returns ``(error, last iteration)``, the same on every rank.
    This function is collective.
    """
    update = np.zeros_like(Y)
    gains = np.ones_like(Y)
    step = kernels_for("tsne", Y).descent_step
    error = best_error = np.finfo(float).max
    best_iter = i = it
    tic = perf_counter()
    for i in range(it, max_iter):
        check = (i + 1) % n_iter_check == 0
        compute_error = check or i == max_iter - 1
        Y_all = np.asarray(comms.allgatherv(Y))
        grad, terms = objective(Y_all, compute_error)
        step(Y, update, gains, grad, momentum, learning_rate, min_gain)
        if not compute_error:
            continue
        error, squares = exact_sums([terms, (grad * grad).ravel()], comms)
        error = float(error)
        if not check:
            continue
        grad_norm = float(np.sqrt(squares))
        toc = perf_counter()
        if say.verbose >= 2:
            say(
                f"[t-SNE] Iteration {i + 1}: error = {error:.7f}, gradient norm = "
                f"{grad_norm:.7f} ({n_iter_check} iterations in {toc - tic:0.3f}s)"
            )
        tic = toc
        if error < best_error:
            best_error, best_iter = error, i
        elif i - best_iter > n_iter_without_progress:
            if say.verbose >= 2:
                say(
                    f"[t-SNE] Iteration {i + 1}: did not make any progress during the "
                    f"last {n_iter_without_progress} episodes. Finished."
                )
            break
        if grad_norm <= min_grad_norm:
            if say.verbose >= 2:
                say(f"[t-SNE] Iteration {i + 1}: gradient norm {grad_norm:f}. Finished.")
            break
    return error, i
