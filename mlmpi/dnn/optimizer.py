"""DistributedOptimizer: gradients averaged over ranks through mlmpi's comms."""

import zlib
from contextlib import contextmanager

import numpy as np
import torch

from .. import _config, _threads
from ..comms import resolve_comms
from ..comms._agreement import agree_on_call
from ..comms._calls import Call
from ..comms._method import in_collective_method
from ..comms.profile import label as _timeline_label
from ._broadcast import broadcast_optimizer_state, broadcast_parameters
from ._buckets import COMPRESSIONS, make_buckets

_STEP = "DistributedOptimizer.step"  # the collective call of a step's reductions
_STEP_HINT = (
    " A rank ran out of batches: give every rank the same number of batches "
    "(mlmpi.dnn.DistributedSampler with drop_last=True) or train inside "
    "`with optimizer.join():`."
)


class DistributedOptimizer(torch.optim.Optimizer):
    """Wraps a PyTorch optimizer so that ``step()`` applies gradients averaged over ranks.

    It is a ``torch.optim.Optimizer`` whose ``param_groups``, ``state`` and
    ``defaults`` are the wrapped optimizer's own objects: learning-rate
    schedulers (``StepLR``, ``OneCycleLR``, ``ReduceLROnPlateau``, ...) take
    it directly, and ``param_groups[0]["lr"] = ...`` changes the wrapped
    optimizer's rate.

    Gradient hooks copy each parameter's gradient, as soon as backward has
    accumulated it, into a fusion bucket. Buckets hold parameters in reverse
    registration order (PyTorch DDP's rule), so their order is the same on
    every rank; a full bucket is reduced by a non-blocking allreduce into its
    own buffer while backward goes on, buckets always started in bucket
    order. ``step()`` waits for them all, writes the averages into ``.grad``
    and steps the wrapped optimizer.

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
        The optimizer to wrap; every rank must build the same one.
    named_parameters : iterable of (str, torch.nn.Parameter), default=None
        ``model.named_parameters()``. The names appear in error messages and
        fix the registration order. None means the optimizer's parameters
        in its own order, named ``group<g>.param<i>``.
    comms : Comms, default=None
        None means :func:`mlmpi.get_comms` (``MLMPI_COMMS``, the launcher,
        or a single process). CUDA parameters need ``NCCLComms`` or a
        CUDA-aware ``MPIComms``.
    bucket_cap_mb : float, default=25
        Largest bucket, in MiB of gradients (a parameter larger than that
        gets a bucket of its own).
    compression : {None, 'fp16', 'bf16'}, default=None
        The dtype gradients travel in. ``'fp16'`` sums in float16 (through
        MPI/NCCL); ``'bf16'`` rounds to bfloat16, gathers the 16-bit words
        and sums them in float32 on every rank (MPI and NumPy have no
        bfloat16 sum), after backward, without overlap. The averages are
        within about ``2**-10`` (fp16) or ``2**-8`` (bf16) of the exact ones,
        relative to the largest gradient entry of any rank (the tested
        tolerance). fp16 sums may overflow beyond 65504: scale the loss.
    backward_passes_per_step : int, default=1
        Backward passes accumulated locally before one reduction (Horovod's
        rule); ``op='average'`` then also divides by this number, so ``k``
        passes on mean losses equal one step on the ``k`` times larger batch.
    op : {'average', 'sum'}, default='average'
        ``'average'`` divides the sum over ranks by the number of ranks that
        contributed (see :meth:`join`) times ``backward_passes_per_step``.

    Attributes
    ----------
    optimizer : torch.optim.Optimizer
        The wrapped optimizer.
    param_groups, state, defaults
        The wrapped optimizer's, shared (not copies).
    comms : Comms
        The comms the gradients travel through.
    buckets : list of Bucket
        The fusion buckets, in launch order.
    step_count : int
        Reductions so far (the ``step`` of the timeline entries).

    Notes
    -----
    Every rank must run the same number of reducing steps: ``step()``,
    ``synchronize()`` and :meth:`join` are collective. A parameter whose
    gradient was not computed in a step (an unused branch) contributes
    zeros, so every rank always issues the same collectives; after
    ``step()`` every parameter has a gradient. The bucket layout (names,
    shapes, dtypes) is compared across ranks before the first reduction: a
    mismatch raises the same ValueError on every rank.

    When more than one rank runs on a node, PyTorch's intra-op threads are
    limited to the node's cores divided by its ranks (``MLMPI_NUM_THREADS``
    overrides), as for the estimators.

    Examples
    --------
    >>> import torch
    >>> from mlmpi.dnn import DistributedOptimizer
    >>> model = torch.nn.Linear(2, 1)
    >>> sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    >>> opt = DistributedOptimizer(sgd, model.named_parameters())
    >>> model(torch.ones(4, 2)).pow(2).mean().backward()
    >>> opt.step()  # gradients averaged over the ranks, then an SGD step
    >>> opt.step_count, opt.param_groups[0]["lr"]
    (1, 0.1)
    """

    def __init__(
        self,
        optimizer,
        named_parameters=None,
        *,
        comms=None,
        bucket_cap_mb=25,
        compression=None,
        backward_passes_per_step=1,
        op="average",
    ):
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(
                f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}."
            )
        if compression not in COMPRESSIONS:
            raise ValueError(f"compression must be None, 'fp16' or 'bf16', got {compression!r}.")
        if op not in ("average", "sum"):
            raise ValueError(f"op must be 'average' or 'sum', got {op!r}.")
        passes = backward_passes_per_step
        if int(passes) != passes or passes < 1:
            raise ValueError(f"backward_passes_per_step must be a positive int, got {passes!r}.")
        if not bucket_cap_mb > 0:
            raise ValueError(f"bucket_cap_mb must be positive, got {bucket_cap_mb!r}.")
        self.optimizer = optimizer
        self.comms = resolve_comms(comms)
        self.compression = compression
        self.backward_passes_per_step = int(backward_passes_per_step)
        self.op = op
        # Not Optimizer.__init__, which would build parameter groups of its own: the
        # groups, state and defaults are the wrapped optimizer's (properties below).
        # __setstate__ (torch's unpickling path) sets up the base class's hook tables.
        torch.optim.Optimizer.__setstate__(self, {})
        self._bucket_cap_bytes = bucket_cap_mb * 2**20
        self._named_params = self._named(optimizer, named_parameters)
        self._hooks = []
        self._build_buckets()
        self._synchronized = False
        self._skip = False
        self._no_sync = False
        self._joining = False
        self._steps_in_join = 0
        self.step_count = 0
        _configure_threads(self.comms)

    @staticmethod
    def _named(optimizer, named_parameters):
        in_optimizer = [p for group in optimizer.param_groups for p in group["params"]]
        if named_parameters is None:
            named = [
                (f"group{g}.param{i}", p)
                for g, group in enumerate(optimizer.param_groups)
                for i, p in enumerate(group["params"])
            ]
        else:
            named = list(named_parameters)
            names = [name for name, _ in named]
            if len(set(names)) != len(names):
                raise ValueError("named_parameters has duplicate names.")
            known = {id(p) for p in in_optimizer}
            missing = [name for name, p in named if id(p) not in known]
            if missing:
                raise ValueError(f"Parameters not in the optimizer: {missing[:5]}.")
            if len(named) != len({id(p) for p in in_optimizer}):
                raise ValueError(
                    "named_parameters must name every parameter of the optimizer exactly once."
                )
        return [(name, p) for name, p in named if p.requires_grad]

    def _build_buckets(self):
        """Buckets and gradient hooks for every parameter in ``_named_params``."""
        for handle in self._hooks:
            handle.remove()
        self.buckets = make_buckets(
            self._named_params, self._bucket_cap_bytes, COMPRESSIONS[self.compression]
        )
        self._where = {}
        for bucket in self.buckets:
            for i, p in enumerate(bucket.params):
                self._where[p] = (bucket, i)
        self._passes = dict.fromkeys(self._where, 0)
        self._hooks = [p.register_post_accumulate_grad_hook(self._hook) for p in self._where]
        self._next = 0  # the next bucket to start
        self._checked = False

    def _refuse_in_flight(self, what):
        if self._next > 0 or any(bucket.n_packed for bucket in self.buckets):
            raise RuntimeError(
                f"{what} while gradient reductions are in flight: call step() or "
                "synchronize() first."
            )

    # -- the wrapped optimizer's interface ------------------------------------
    @property
    def param_groups(self):
        """The wrapped optimizer's parameter groups (the same list)."""
        return self.optimizer.param_groups

    @param_groups.setter
    def param_groups(self, groups):
        self.optimizer.param_groups = groups

    @property
    def state(self):
        """The wrapped optimizer's per-parameter state (the same dict)."""
        return self.optimizer.state

    @state.setter
    def state(self, state):
        self.optimizer.state = state

    @property
    def defaults(self):
        """The wrapped optimizer's defaults (the same dict)."""
        return self.optimizer.defaults

    @defaults.setter
    def defaults(self, defaults):
        self.optimizer.defaults = defaults

    def state_dict(self):
        """The wrapped optimizer's ``state_dict()``.

        Returns
        -------
        state_dict : dict
        """
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict):
        """Load into the wrapped optimizer (whose groups and state stay shared).

        Parameters
        ----------
        state_dict : dict
            A ``state_dict()`` of the same kind of optimizer.
        """
        self.optimizer.load_state_dict(state_dict)

    def zero_grad(self, set_to_none=True):
        """Zero the gradients; refused while reductions are in flight.

        Parameters
        ----------
        set_to_none : bool, default=True
            Set the gradients to None instead of zero tensors (PyTorch's).
        """
        self._refuse_in_flight("zero_grad()")
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def add_param_group(self, param_group):
        """Add a parameter group to the wrapped optimizer; its gradients are reduced too.

        Its parameters are named by the group's ``param_names`` if it has
        them, else ``group<g>.param<i>``. Every rank must add the same group
        (the layout check before the next reduction compares them). Refused
        while reductions are in flight.

        Parameters
        ----------
        param_group : dict
            PyTorch's parameter group: ``{"params": [...], "lr": ...}``.
        """
        self._refuse_in_flight("add_param_group()")
        self.optimizer.add_param_group(param_group)
        g = len(self.param_groups) - 1
        group = self.param_groups[g]
        names = group.get("param_names") or [
            f"group{g}.param{i}" for i in range(len(group["params"]))
        ]
        self._named_params += [(n, p) for n, p in zip(names, group["params"]) if p.requires_grad]
        self._build_buckets()

    def step(self, closure=None):
        """Wait for the reductions (unless inside :meth:`skip_synchronize`), then step.

        This method is collective.

        Parameters
        ----------
        closure : None
            Must be None (a closure would run backward again, unreduced).

        Returns
        -------
        result : object
            The wrapped optimizer's ``step()`` result (None for most).
        """
        if closure is not None:
            raise ValueError("DistributedOptimizer.step does not take a closure.")
        if not self._skip:
            self.synchronize()
        result = self.optimizer.step()
        self._synchronized = False
        if self._joining:
            self._steps_in_join += 1
        return result

    # -- gradient reduction ---------------------------------------------------
    def _hook(self, p):
        if self._no_sync:
            return
        self._passes[p] += 1
        if self._passes[p] < self.backward_passes_per_step:
            return
        bucket, i = self._where[p]
        bucket.pack(i, p.grad)
        if bucket.full:
            self._start_ready()

    def _start_ready(self):
        """Start every full bucket whose predecessors have started (bucket order).

        The reductions of a step are one collective call: every rank agrees
        on the step before its first reduction (the gradient hooks call this
        outside any collective method)."""
        with in_collective_method(_STEP):
            while self._next < len(self.buckets) and self.buckets[self._next].full:
                if self._next == 0:  # every rank at the same step before its first reduction
                    step = Call(_STEP, self.step_count + 1, hint=_STEP_HINT)
                    agree_on_call(self.comms, step)
                if not self._checked:
                    self._check_layout()
                bucket = self.buckets[self._next]
                with _timeline_label(bucket=bucket.index, step=self.step_count):
                    bucket.start(self.comms)
                self._next += 1
            for bucket in self.buckets[: self._next]:
                bucket.poke()

    def _finish_all(self, contributed):
        """Start what is left, wait, and write the averages into ``.grad``."""
        self._start_ready()
        with in_collective_method(_STEP):
            contributors = self.comms.size
            if self._joining:
                contributed = np.asarray(int(contributed), np.int64)
                contributors = int(self.comms.allreduce(contributed))
            divisor = 1
            if self.op == "average":
                divisor = max(contributors, 1) * self.backward_passes_per_step
            for bucket in self.buckets:
                with _timeline_label(bucket=bucket.index, step=self.step_count):
                    bucket.finish(divisor)
        self._next = 0
        self.step_count += 1
        return contributors

    def synchronize(self):
        """Finish the gradient reductions now; ``.grad`` then holds the averages.

        For gradient clipping: ``synchronize()``, clip, then ``step()``
        inside :meth:`skip_synchronize`. Parameters whose hooks did not fire
        contribute their ``.grad`` so far (zeros when None).

        This method is collective.
        """
        if self._synchronized:
            return
        for bucket in self.buckets[self._next :]:
            bucket.pack_missing()
        self._finish_all(contributed=True)
        self._passes = dict.fromkeys(self._passes, 0)
        self._synchronized = True

    @contextmanager
    def skip_synchronize(self):
        """``step()`` inside this block does not synchronize.

        Call :meth:`synchronize` before it (gradient clipping).

        Yields
        ------
        None
        """
        self._skip = True
        try:
            yield
        finally:
            self._skip = False

    @contextmanager
    def no_sync(self):
        """Backward passes in this block only accumulate into ``.grad`` locally.

        As DDP's ``no_sync``: they do not count towards
        ``backward_passes_per_step``. The next counted pass reduces the sum.

        Yields
        ------
        None
        """
        self._no_sync = True
        try:
            yield
        finally:
            self._no_sync = False

    @contextmanager
    def join(self):
        """Train on uneven numbers of batches per rank without hanging.

        Inside the block each reducing step also counts the ranks still
        training, and averages divide by that count. A rank that leaves the
        block shadows the others' reductions with zeros until every rank has
        left it; then every rank gets the parameters and optimizer state of
        a rank that made the most steps (PyTorch's ``Join``, Horovod's
        ``hvd.join``).

        This method is collective.

        Yields
        ------
        optimizer : DistributedOptimizer
            This optimizer.
        """
        self._joining = True
        self._steps_in_join = 0
        try:
            yield self
            while True:
                for bucket in self.buckets:
                    bucket.zero()
                if self._finish_all(contributed=False) == 0:
                    break
        finally:
            self._joining = False
        steps = self.comms.allgather(np.asarray(self._steps_in_join, np.int64))
        root = int(np.argmax(steps))
        named = [(name, p) for b in self.buckets for name, p in zip(b.names, b.params)]
        broadcast_parameters(named, root=root, comms=self.comms)
        broadcast_optimizer_state(self.optimizer, root=root, comms=self.comms)

    def _check_layout(self):
        """The same bucket layout on every rank, or the same ValueError on every rank."""
        layout = [bucket.layout() for bucket in self.buckets]
        key = zlib.crc32(repr(layout).encode())
        keys = self.comms.allgather(np.asarray(key, np.int64))
        if len(set(keys.tolist())) > 1:
            layouts = self.comms.allgather_object(layout)
            rank = next(r for r, other in enumerate(layouts) if other != layouts[0])
            flat0 = [p for b in layouts[0] for p in b]
            flat = [p for b in layouts[rank] for p in b]
            where = next(
                (i for i, (a, b) in enumerate(zip(flat0, flat)) if a != b),
                min(len(flat0), len(flat)),
            )
            mine = flat[where] if where < len(flat) else "nothing"
            theirs = flat0[where] if where < len(flat0) else "nothing"
            raise ValueError(
                f"The gradients differ across ranks: rank {rank} has {mine} where rank 0 has "
                f"{theirs} (name, shape, dtype; {len(flat)} vs {len(flat0)} entries in the "
                "bucket layout). Every rank must build the same model and optimizer."
            )
        self._checked = True

    def __repr__(self):
        return (
            f"DistributedOptimizer({type(self.optimizer).__name__}, buckets={len(self.buckets)}, "
            f"compression={self.compression!r}, backward_passes_per_step="
            f"{self.backward_passes_per_step}, op={self.op!r}, comms={self.comms!r})"
        )


def _configure_threads(comms):
    """PyTorch intra-op threads per rank, as the comms set BLAS/numba's."""
    threads = _threads.threads_per_rank()
    if getattr(comms, "local_size", 1) > 1 or _config.num_threads() is not None:
        torch.set_num_threads(threads)
