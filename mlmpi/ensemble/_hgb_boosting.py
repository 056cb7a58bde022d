"""The boosting loop of one fit: scikit-learn's ``BaseHistGradientBoosting.fit``
after validation, on rows spread over the ranks.

The estimator validates and encodes the data (:mod:`._hgb`); this solver
bins it (:mod:`._hgb_binning`), computes the baseline, grows the trees
(:mod:`._hgb_grower`) and checks early stopping, with every collective in the
same order on every rank. Gradients, hessians and raw predictions are per
row: each rank computes its own with scikit-learn's loss objects (the same
values a single process computes for those rows). Before each tree they are
rounded onto a fixed-point grid (:func:`fixed_point_exponent`) so that
histogram sums are exact integers.
"""

import math
from dataclasses import dataclass
from time import time

import numpy as np

from .._array import get_namespace, to_host, to_namespace
from .._sklearn_compat import G_H_DTYPE, _BinMapper, _openmp_effective_n_threads
from .._threads import threads_per_rank
from ..kernels import kernels_for
from ..kernels.cpu.hgb import PARALLEL_WORK
from ..utils._exact import fixed_point_exponent
from ._hgb_binning import fit_bin_mapper, flat_thresholds
from ._hgb_grower import GrowingContext, GrowingParams, TreeGrower
from ._hgb_losses import baseline, leaf_values


@dataclass
class FitData:
    """This rank's validated, encoded data of one fit."""

    X_train: object  # (n_local_train, n_features), float64, NumPy or CuPy
    y_train: np.ndarray  # float64, host
    sample_weight_train: object  # host or None
    X_val: object  # None without validation data
    y_val: object
    sample_weight_val: object
    rows: object  # TrainingRows
    known_categories: object


class BoostingRun:
    """One collective fit of ``estimator`` on ``data`` (scikit-learn's loop)."""

    def __init__(self, estimator, data, comms):
        self.est = estimator
        self.data = data
        self.comms = comms
        # OpenMP threads of scikit-learn's loss functions: this rank's share of the
        # cores, within what OpenMP may use (OMP_NUM_THREADS, cgroups); one for few rows
        self.n_threads = 1
        if data.X_train.shape[0] >= PARALLEL_WORK:
            self.n_threads = min(threads_per_rank(), _openmp_effective_n_threads())

    # -- binning --------------------------------------------------------------------------

    def bin_data(self):
        est, data = self.est, self.data
        n_bins = est.max_bins + 1
        mapper = _BinMapper(
            n_bins=n_bins,
            is_categorical=est._is_categorical_remapped,
            known_categories=data.known_categories,
            random_state=est._random_seed,
            n_threads=self.n_threads,
        )
        est._bin_mapper = fit_bin_mapper(
            mapper, data.X_train, data.sample_weight_train, data.rows, self.comms
        )
        self.thresholds = flat_thresholds(est._bin_mapper)
        self.binned_train = self.bin(data.X_train, order="F")
        self.binned_val = None if data.X_val is None else self.bin(data.X_val, order="C")
        missing = (self.binned_train == est._bin_mapper.missing_values_bin_idx_).any(axis=0)
        local = to_host(missing).astype(np.uint8)
        self.has_missing_values = self.comms.allreduce(local, op="max")

    def bin(self, X, order):
        """Bins of ``X`` (scikit-learn's ``_BinMapper.transform``) on ``X``'s device."""
        xp = get_namespace(X)
        mapper = self.est._bin_mapper
        out = xp.empty(X.shape, dtype=xp.uint8, order=order)
        kernels_for("hgb", X).bin_columns(
            X,
            self.thresholds[0],
            self.thresholds[1],
            mapper.is_categorical_,
            mapper.missing_values_bin_idx_,
            out,
        )
        return out

    # -- the loop -------------------------------------------------------------------------

    def fit(self, monotonic_cst, interaction_cst, first_fit):
        """scikit-learn's fit from the binning on (collective)."""
        est, data, comms = self.est, self.data, self.comms
        self.bin_data()
        xp = get_namespace(self.binned_train)
        K = est.n_trees_per_iteration_
        n_local = self.binned_train.shape[0]
        need_raw_val = self.binned_val is not None and (
            est._scoring_is_predefined_string() or est.scoring == "loss"
        )
        self.raw_val = None
        if first_fit:
            est._clear_state()
            est._baseline_prediction = baseline(
                est._loss, data.y_train, data.sample_weight_train, comms
            ).reshape((1, -1))
            raw = xp.zeros((n_local, K), dtype=xp.float64, order="F")
            raw += xp.asarray(est._baseline_prediction)
            est._predictors = []
            est._scorer = None
            est.train_score_ = []
            est.validation_score_ = []
            if est.do_early_stopping_:
                if need_raw_val:
                    self.raw_val = xp.zeros((self.binned_val.shape[0], K), order="F")
                    self.raw_val += xp.asarray(est._baseline_prediction)
                if est.scoring == "loss":
                    self.check_loss(raw)
                else:
                    est._scorer = est._early_stopping_scorer()
                    self.small_trainset()
                    self.check_scorer(raw)
            begin_at_stage = 0
        else:
            if est.max_iter < est.n_iter_:
                raise ValueError(
                    f"max_iter={est.max_iter} must be larger than or equal to "
                    f"n_iter_={est.n_iter_} when warm_start==True"
                )
            est.train_score_ = est.train_score_.tolist()
            est.validation_score_ = est.validation_score_.tolist()
            raw = xp.zeros((n_local, K), dtype=xp.float64, order="F")
            raw += xp.asarray(est._baseline_prediction)
            est._add_trees(self.binned_train, est._predictors, raw, binned=True)
            if est.do_early_stopping_ and need_raw_val:
                self.raw_val = xp.zeros((self.binned_val.shape[0], K), order="F")
                self.raw_val += xp.asarray(est._baseline_prediction)
                est._add_trees(self.binned_val, est._predictors, self.raw_val, binned=True)
            if est.do_early_stopping_ and est.scoring != "loss":
                self.small_trainset()
            begin_at_stage = est.n_iter_

        context = GrowingContext(
            self.binned_train,
            n_bins=est.max_bins + 1,
            n_bins_non_missing=est._bin_mapper.n_bins_non_missing_,
            has_missing_values=self.has_missing_values,
            is_categorical=est._bin_mapper.is_categorical_,
            monotonic_cst=monotonic_cst,
            interaction_cst=interaction_cst,
            params=GrowingParams(
                max_leaf_nodes=est.max_leaf_nodes,
                max_depth=est.max_depth,
                min_samples_leaf=est.min_samples_leaf,
                l2_regularization=est.l2_regularization,
                feature_fraction_per_split=est.max_features,
                shrinkage=est.learning_rate,
            ),
            comms=comms,
        )
        gradient, hessian = est._loss.init_gradient_and_hessian(
            n_samples=n_local, dtype=G_H_DTYPE, order="F"
        )
        quantized = xp.zeros((2, n_local), dtype=xp.int64)
        fit_start = time()
        for _ in range(begin_at_stage, est.max_iter):
            raw_host = to_host(raw)
            if est._loss.constant_hessian:
                est._loss.gradient(
                    y_true=data.y_train,
                    raw_prediction=raw_host,
                    sample_weight=data.sample_weight_train,
                    gradient_out=gradient,
                    n_threads=self.n_threads,
                )
            else:
                est._loss.gradient_hessian(
                    y_true=data.y_train,
                    raw_prediction=raw_host,
                    sample_weight=data.sample_weight_train,
                    gradient_out=gradient,
                    hessian_out=hessian,
                    n_threads=self.n_threads,
                )
            g_view = gradient.reshape((-1, 1)) if gradient.ndim == 1 else gradient
            h_view = hessian.reshape((-1, 1)) if hessian.ndim == 1 else hessian
            constant = est._loss.constant_hessian
            exponents = self._exponents(g_view, None if constant else h_view)
            est._predictors.append([])
            for k in range(K):
                units = [math.ldexp(1.0, -int(e)) for e in exponents[:, k]]
                kernels = context.kernels
                kernels.quantize(to_namespace(g_view[:, k], xp), int(exponents[0, k]), quantized[0])
                if not constant:
                    kernels.quantize(
                        to_namespace(h_view[:, k], xp), int(exponents[1, k]), quantized[1]
                    )
                totals = comms.allreduce(
                    np.array([int(quantized[0].sum()), int(quantized[1].sum())], dtype=np.int64)
                )
                grower = TreeGrower(
                    context,
                    quantized[0],
                    quantized[1],
                    constant,
                    units,
                    totals,
                    data.rows.n_train,
                    est._feature_subsample_rng,
                )
                grower.grow()
                starts, stops = grower.leaf_ranges()
                if not est._loss.differentiable:
                    self.update_leaves_values(grower, raw_host[:, k], starts, stops)
                predictor = grower.make_predictor(est._bin_mapper.bin_thresholds_)
                est._predictors[-1].append(predictor)
                values = np.array([leaf.value for leaf in grower.finalized_leaves])
                kernels.update_raw_predictions(raw[:, k], context.partition, starts, stops, values)
            should_stop = False
            if est.do_early_stopping_:
                if need_raw_val:
                    est._add_trees(self.binned_val, [est._predictors[-1]], self.raw_val, True)
                if est.scoring == "loss":
                    should_stop = self.check_loss(raw)
                else:
                    should_stop = self.check_scorer(raw)
            if should_stop:
                break
        if est.verbose and comms.rank == 0:
            n_leaves = sum(p.get_n_leaf_nodes() for it in est._predictors for p in it)
            n_trees = sum(len(it) for it in est._predictors)
            print(f"Fit {n_trees} trees in {time() - fit_start:.3f} s, ({n_leaves} total leaves)")

    def _exponents(self, g_view, h_view):
        """Fixed-point exponents of the gradients (row 0) and hessians (row 1)
        of each tree of the iteration, from the global largest magnitudes."""
        K = g_view.shape[1]
        largest = np.zeros(2 * K)
        if g_view.shape[0]:
            largest[:K] = np.abs(g_view).max(axis=0)
            if h_view is not None:
                largest[K:] = np.abs(h_view).max(axis=0)
        largest = self.comms.allreduce(largest, op="max")
        n = self.data.rows.n_train
        return np.array([fixed_point_exponent(v, n) for v in largest]).reshape(2, K)

    def update_leaves_values(self, grower, raw_k, starts, stops):
        """scikit-learn's ``_update_leaves_values``: each leaf of a non-smooth
        loss gets the median (percentile) of its rows' residuals (collective)."""
        data = self.data
        partition = to_host(grower.context.partition)
        residual = data.y_train - raw_k
        leaf_rows = [partition[s:e] for s, e in zip(starts, stops)]
        weights = None
        if data.sample_weight_train is not None:
            weights = [data.sample_weight_train[rows] for rows in leaf_rows]
        values = leaf_values(
            self.est._loss, [residual[rows] for rows in leaf_rows], weights, self.comms
        )
        for leaf, value in zip(grower.finalized_leaves, values):
            leaf.value = grower.context.params.shrinkage * value

    # -- early stopping -------------------------------------------------------------------

    def check_loss(self, raw):
        data = self.data
        return self.est._check_early_stopping_loss(
            raw_predictions=to_host(raw),
            y_train=data.y_train,
            sample_weight_train=data.sample_weight_train,
            raw_predictions_val=None if self.raw_val is None else to_host(self.raw_val),
            y_val=data.y_val,
            sample_weight_val=data.sample_weight_val,
            n_threads=self.n_threads,
        )

    def small_trainset(self):
        self.small = self.est._get_small_trainset(
            self.binned_train,
            self.data.y_train,
            self.data.sample_weight_train,
            self.est._random_seed,
        )

    def check_scorer(self, raw):
        est, data = self.est, self.data
        X_small, y_small, sw_small, indices = self.small
        raw_small = to_host(raw)[indices] if est._scoring_is_predefined_string() else None
        raw_val = None
        if self.raw_val is not None and est._scoring_is_predefined_string():
            raw_val = to_host(self.raw_val)
        return est._check_early_stopping_scorer(
            X_small,
            y_small,
            sw_small,
            self.binned_val,
            data.y_val,
            data.sample_weight_val,
            raw_predictions_small_train=raw_small,
            raw_predictions_val=raw_val,
        )
