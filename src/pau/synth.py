"""Seeded synthetic multi-rank training timelines: the **events** table of DESIGN §2.1 and the
**lifecycle** table of DESIGN §2.2 (with the ledger it must produce).

The generator is meant for tests, benchmarks and demos: it is realistic enough that every
part of the ledger has something to measure (overlapped and exposed communication, data
waits, host stalls, stragglers), exactly reproducible from a seed, and fast (fully
vectorized numpy; roughly 10 million events in a couple of seconds).

Model of one training step on one rank
--------------------------------------
Times are int64 nanoseconds, intervals half-open ``[start_ns, end_ns)``. A step of rank ``r``
starts at the instant its previous step's last event ended (step 0 starts at ``start_ns`` on
every rank) and is made of, in order:

1. **Data wait** -- a gap with no device event (the input pipeline). Log-normal, median
   200 µs; with probability 2 % it is long (×20 to ×150, i.e. about 4 to 30 ms).
2. **H2D copy** -- one ``memcpy`` on the copy stream (stream 3), median 250 µs.
3. **zero_grad** -- with probability 25 % a short ``memset`` on the compute stream
   (stream 7), launched right after the copy and overlapping it.
4. **Forward** -- ``compute`` kernels back to back on stream 7, starting once the copy (and
   memset) finished. Each kernel position has a fixed per-run typical duration (log-normal,
   median 40 µs, clipped to 4 µs..3 ms: the same operator repeats every step) with a small
   per-occurrence jitter. Kernels are separated by launch gaps (median 3 µs); 0.3 % of the
   gaps are host stalls of 60-600 µs (idle time on the device).
5. **Backward** -- about twice as many ``compute`` kernels, typically twice as long.
6. **Gradient all-reduce** -- ``buckets`` ``communication`` kernels on the communication stream
   (stream 13). Bucket ``j`` is launched (a few µs of latency) when the backward kernel that
   completes its gradients ends; bucket boundaries split the backward kernels evenly and the
   last bucket is launched at the end of the backward pass. Collectives are
   **synchronizing**: a bucket cannot finish before every rank launched it and before the
   previous bucket finished, so it ends at the *same instant on every rank*::

       end_j = max(max over ranks of launch_j, end_{j-1}) + duration_j

   and starts on each rank at ``max(launch_j, end_{j-1})``. The transfer time ``duration_j``
   is common to all ranks (by default the all-reduce of a step takes about 60 % of the
   typical backward time). Early buckets hide under the remaining backward kernels; the
   last one is an exposed tail; a rank that launches early (because another rank is slow)
   waits inside the collective, which is exposed communication.
7. **Optimizer** -- a few ``compute`` kernels on stream 7 (median 150 µs), starting 15 µs
   after the last bucket ended (the update needs the reduced gradients).
8. **Other** -- with probability 10 % a short ``other`` device task (a host callback /
   loss-scale check, median 20 µs) on stream 7.
9. **Sync** -- a short ``sync`` (event wait, median 10 µs) on stream 7 that ends the step.

Events of one stream never overlap. A **straggler** ``(rank, factor)`` multiplies every
compute kernel of that rank by ``factor``; the random draws are the same with or without a
straggler, so the two runs differ only by its effect: the straggler has more compute time,
and every other rank waits for it inside the collectives.

Randomness
----------
All draws come from ``numpy.random.Generator`` (PCG64) seeded from ``seed``: the per-run
"model" (typical kernel and bucket durations) from ``[seed, 0]``; the steps are generated in
fixed blocks of consecutive steps (for all ranks), block ``b`` from ``[seed, 1, b]``. Block
sizes depend only on ``ranks``, ``kernels_per_step`` and ``buckets``, so the same seed gives
the same events whether a run is built in one table (:func:`training_run`) or streamed in
chunks (:func:`iter_training_run`, :func:`write_training_run`), and a run of ``n`` steps is
exactly the first ``n`` steps of any longer run with the same arguments.

Row order
---------
:func:`training_run` returns rows sorted by ``(rank, start_ns)``. Within a rank ``start_ns``
is strictly increasing except for exact ties between streams, which keep the model order of
the step above. Streamed runs are a sequence of chunks (blocks of consecutive steps for all
ranks), each sorted by ``(rank, start_ns)``; concatenated, they are sorted by ``start_ns``
within each rank (ranks interleave between chunks).

Lifecycles
----------
:func:`training_job` simulates one synchronous data-parallel job with checkpoints and
failures and returns its lifecycle table, its device events, and the attempts it ran (as
planted: start, end, members, restored step, failure). It computes no ledger: that is
:func:`pau.core.ledger`'s alone (the tests hold it against the slow twin of the lineage
rule, ``tests/reference_lifecycle.py``). Model (medians are log-normal with sigma 0.1,
steps 0.05; all times int64 ns, steps numbered from 1):

* One ``accountable`` row per rank: from the start of the job to its end (null while it
  runs); a rank dropped by an elastic shrink is accountable until the failure that lost it.
* Attempt after attempt: an ``init`` phase (``init_s`` for the first attempt, then
  ``reinit_s``); a ``restore`` of the newest ok checkpoint durable at the last failure
  (none if there is none, or in the first attempt: the attempt then starts at step 1);
  then the steps back to back (``step_time_s``, ``tokens_per_step`` tokens each). After
  every step ``k`` that is a multiple of ``checkpoint_every`` a ``checkpoint_save`` of
  ``k`` blocks training for ``checkpoint_cost_s``; a synchronous save is durable when it
  stops blocking, an asynchronous one ``durable_delay_s`` later while training goes on.
  With ``corrupt_checkpoint_p`` a save is written ``ok=false`` and never restored. The
  last attempt completes after step ``steps`` once every save of it is durable (the wait
  for the last asynchronous save is ``unattributed`` time).
* Failures are a Poisson process of mean ``mtbf_s`` over the wall time of the attempts
  (outages are not at risk). With probability ``correlated`` a failure hits every rank
  (``failure`` row with ``rank=-1``), else one member rank (recorded). Either ends the
  attempt for every rank at the failure instant ``f``: records that started before ``f``
  are kept, the step in flight has a null ``end_ns``, a save not yet durable never becomes
  durable (``ok=false``, null ``durable_ns``, null ``block_end_ns`` if it was still
  blocking), a restore or init cut by it has a null end (an interrupted restore is
  ``ok=false``). An outage (exponential, mean ``outage_s``) follows, then the next attempt.
  With ``shrink_at_failure=k`` the attempts after the k-th failure run on one rank fewer.
* Records are written once with ``rank=-1`` (every member of the attempt), or once per
  member rank with ``per_rank_rows=True`` (tokens split exactly across the ranks). Rows are
  in job order: accountable rows, then each attempt's records in time order.
* ``as_of`` describes the job as known at that instant: records that start after it are
  absent, ends, block ends and durability not reached by then are null (``ok`` too while a
  save or restore is unresolved), the attempt open then is ``running`` and the
  accountable ends are null. Pass ``as_of=job.as_of`` to :func:`pau.core.ledger`.
* Events (``events=True``): every executed step is one step of the model above
  (:func:`training_run` with the same ``seed``, ``straggler``, ``kernels_per_step`` and
  ``buckets``; executed step ``i`` of the job is generated step ``i``), its time window over
  all ranks mapped linearly onto the step's interval, so every kernel lies inside its
  step and collectives still end together on all ranks; events after a failure or
  ``as_of`` are dropped and the ones running then are cut. Each restore and each save's
  blocking part is one ``memcpy`` per member rank on the copy stream. ``step`` is the
  lifecycle step number. Rows are sorted by ``(rank, start_ns)``.

Randomness: attempt ``a`` draws from ``[seed, 2, a]`` in a fixed order, so a job cut by
``as_of`` is exactly the prefix of the whole job, and ``events=False`` changes nothing else.

:func:`lifecycle_records` makes large tables for throughput benchmarks, fully vectorized
(10 million step rows in about 1 s): ``ranks`` ranks, ``attempts`` attempts (all but
the last fail), per-rank ``step`` rows with a per-rank start skew (up to 20 ms of data wait)
and a common end, checkpoint shards per rank (durable 20 s after blocking; a checkpoint is
durable when its last shard is), a restore of the newest durable checkpoint in each
later attempt, and exactly ``n_step_records`` step rows (the remainder modulo ``ranks`` is
the step in flight on some ranks when the first attempt fails). Draws from ``[seed, 3]``.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Iterable, Iterator, Union

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pau.engine.vocab import LIFECYCLE_SCHEMA
from pau.readers.scheduler import JOB_LIFECYCLE_SCHEMA, JOBS_SCHEMA

__all__ = [
    "KINDS",
    "COMPUTE_STREAM",
    "COMMUNICATION_STREAM",
    "COPY_STREAM",
    "events_schema",
    "training_run",
    "iter_training_run",
    "training_run_for_events",
    "expected_events",
    "steps_for_events",
    "write_parquet",
    "write_training_run",
    "TrainingJob",
    "lifecycle_schema",
    "training_job",
    "lifecycle_records",
    "SyntheticFleet",
    "fleet",
]

KINDS = ("compute", "communication", "memcpy", "memset", "sync", "other")
_K = {k: np.int8(i) for i, k in enumerate(KINDS)}

COMPUTE_STREAM = 7
COMMUNICATION_STREAM = 13
COPY_STREAM = 3

DEFAULT_START_NS = 1_700_000_000 * 10**9  # 2023-11-14T22:13:20Z
DEFAULT_KERNELS_PER_STEP = 96
DEFAULT_BUCKETS = 4

# Model constants (nanoseconds). Documented in the module docstring.
_DATA_WAIT_MEDIAN, _DATA_WAIT_SIGMA = 200e3, 0.6
_DATA_WAIT_LONG_P, _DATA_WAIT_LONG_RANGE = 0.01, (10.0, 50.0)
_H2D_MEDIAN, _H2D_SIGMA = 250e3, 0.15
_MEMSET_P, _MEMSET_MEDIAN, _MEMSET_SIGMA, _MEMSET_LAUNCH = 0.25, 6e3, 0.3, 2e3
_GAP_MEDIAN, _GAP_SIGMA = 3e3, 0.4
_STALL_P, _STALL_RANGE = 0.003, (20.0, 200.0)
_FWD_MEDIAN, _FWD_SIGMA, _FWD_CLIP = 40e3, 1.0, (4e3, 3e6)
_BWD_MEDIAN, _BWD_SIGMA, _BWD_CLIP = 80e3, 1.0, (4e3, 5e6)
_OPT_MEDIAN, _OPT_SIGMA = 150e3, 0.4
_JITTER_SIGMA = 0.08
_COMM_RATIO, _COMM_SIZE_SIGMA, _COMM_JITTER = 0.5, 0.2, 0.1
_COMM_LAUNCH_MEDIAN = 8e3
_OPT_LAUNCH = 15e3
_OTHER_P, _OTHER_MEDIAN = 0.10, 20e3
_SYNC_MEDIAN, _SYNC_SIGMA = 10e3, 0.5

_BLOCK_EVENTS = 1 << 17  # target size of one generation block (events, upper bound)
_INT64_MAX = np.iinfo(np.int64).max

PathLike = Union[str, "os.PathLike[str]"]


def events_schema(names: bool = False) -> pa.Schema:
    """The schema of the tables this module produces.

    Parameters
    ----------
    names : bool, default False
        Include the ``name:string`` column.

    Returns
    -------
    pyarrow.Schema
        ``rank:int32, stream:int32, start_ns:int64, end_ns:int64,
        kind:dictionary<int8, string>`` [``, name:string``] ``, step:int64``.
    """
    fields = [
        pa.field("rank", pa.int32(), nullable=False),
        pa.field("stream", pa.int32(), nullable=False),
        pa.field("start_ns", pa.int64(), nullable=False),
        pa.field("end_ns", pa.int64(), nullable=False),
        pa.field("kind", pa.dictionary(pa.int8(), pa.string()), nullable=False),
    ]
    if names:
        fields.append(pa.field("name", pa.string(), nullable=False))
    fields.append(pa.field("step", pa.int64(), nullable=False))
    return pa.schema(fields)


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class _Plan:
    ranks: int
    n_fwd: int
    n_bwd: int
    n_opt: int
    buckets: int
    seed: int
    straggler_rank: int  # -1: none
    straggler_factor: float
    start_ns: int
    names: bool

    @property
    def n_fb(self) -> int:
        return self.n_fwd + self.n_bwd

    @property
    def slots(self) -> int:
        # memcpy, memset, fwd+bwd, comm, opt, other, sync
        return 2 + self.n_fb + self.buckets + self.n_opt + 2

    @property
    def block_steps(self) -> int:
        return max(1, _BLOCK_EVENTS // (self.ranks * self.slots))


def _split_kernels(kernels_per_step: int, buckets: int) -> tuple[int, int, int]:
    if isinstance(kernels_per_step, bool) or not isinstance(kernels_per_step, (int, np.integer)):
        raise TypeError(f"kernels_per_step must be an int, got {kernels_per_step!r}")
    if isinstance(buckets, bool) or not isinstance(buckets, (int, np.integer)):
        raise TypeError(f"buckets must be an int, got {buckets!r}")
    if kernels_per_step < 3:
        raise ValueError(f"kernels_per_step must be >= 3 (forward, backward, optimizer), "
                         f"got {kernels_per_step}")
    n_opt = max(1, kernels_per_step // 32)
    rest = kernels_per_step - n_opt
    n_fwd = max(1, rest // 3)
    n_bwd = rest - n_fwd
    if not 1 <= buckets <= n_bwd:
        raise ValueError(f"buckets must be between 1 and the number of backward kernels "
                         f"({n_bwd} for kernels_per_step={kernels_per_step}), got {buckets}")
    return int(n_fwd), int(n_bwd), int(n_opt)


def _plan(ranks, kernels_per_step, buckets, seed, straggler, start_ns, names) -> _Plan:
    if isinstance(ranks, bool) or not isinstance(ranks, (int, np.integer)) or ranks < 1:
        raise ValueError(f"ranks must be a positive int, got {ranks!r}")
    if ranks > np.iinfo(np.int32).max:
        raise ValueError("ranks must fit in int32")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    if not isinstance(start_ns, (int, np.integer)) or isinstance(start_ns, bool) or start_ns < 0:
        raise ValueError(f"start_ns must be a non-negative int (nanoseconds), got {start_ns!r}")
    n_fwd, n_bwd, n_opt = _split_kernels(kernels_per_step, buckets)
    s_rank, s_factor = -1, 1.0
    if straggler is not None:
        try:
            s_rank_in, s_factor_in = straggler
        except (TypeError, ValueError):
            raise TypeError(f"straggler must be None or a (rank, slowdown factor) pair, "
                            f"got {straggler!r}") from None
        if s_rank_in is not None:
            if isinstance(s_rank_in, bool) or not isinstance(s_rank_in, (int, np.integer)) \
                    or not 0 <= s_rank_in < ranks:
                raise ValueError(f"straggler rank must be in [0, {ranks}), got {s_rank_in!r}")
            s_factor = float(s_factor_in)
            if not (math.isfinite(s_factor) and s_factor > 0):
                raise ValueError(f"straggler factor must be a positive number, got {s_factor_in!r}")
            s_rank = int(s_rank_in)
    return _Plan(int(ranks), n_fwd, n_bwd, n_opt, int(buckets), int(seed), s_rank, s_factor,
                 int(start_ns), bool(names))


@dataclass(frozen=True)
class _Model:
    """Per-run typical durations (the same operators repeat every step)."""

    fb: np.ndarray      # (n_fb,) float32, typical forward+backward kernel durations
    opt: np.ndarray     # (n_opt,) float32
    comm: np.ndarray    # (buckets,) float32, typical all-reduce duration per bucket
    launch: np.ndarray  # (buckets,) int: index into fwd+bwd kernels that launches bucket j
    slot_kind: np.ndarray    # (slots,) int8
    slot_stream: np.ndarray  # (slots,) int32
    slot_name: list[str]


_FWD_NAMES = ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", "vectorized_elementwise_kernel",
              "layer_norm_fwd_kernel", "flash_fwd_kernel", "softmax_warp_forward",
              "elementwise_kernel_gelu", "cutlass_80_tensorop_bf16_gemm_256x128_nn")
_BWD_NAMES = ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_nt", "vectorized_elementwise_kernel",
              "layer_norm_bwd_kernel", "flash_bwd_kernel", "softmax_warp_backward",
              "elementwise_kernel_gelu_backward", "reduce_kernel")


def _model(p: _Plan) -> _Model:
    rng = np.random.default_rng([p.seed, 0])
    fwd = np.clip(_FWD_MEDIAN * np.exp(_FWD_SIGMA * rng.standard_normal(p.n_fwd)), *_FWD_CLIP)
    bwd = np.clip(_BWD_MEDIAN * np.exp(_BWD_SIGMA * rng.standard_normal(p.n_bwd)), *_BWD_CLIP)
    opt = _OPT_MEDIAN * np.exp(_OPT_SIGMA * rng.standard_normal(p.n_opt))
    sizes = np.exp(_COMM_SIZE_SIGMA * rng.standard_normal(p.buckets))
    comm = _COMM_RATIO * bwd.sum() * sizes / sizes.sum()
    fwd_name = rng.integers(0, len(_FWD_NAMES), p.n_fwd)
    bwd_name = rng.integers(0, len(_BWD_NAMES), p.n_bwd)
    launch = p.n_fwd + (np.arange(1, p.buckets + 1) * p.n_bwd) // p.buckets - 1

    kinds = ([_K["memcpy"], _K["memset"]] + [_K["compute"]] * p.n_fb
             + [_K["communication"]] * p.buckets + [_K["compute"]] * p.n_opt
             + [_K["other"], _K["sync"]])
    streams = ([COPY_STREAM] + [COMPUTE_STREAM] * (1 + p.n_fb) + [COMMUNICATION_STREAM] * p.buckets
               + [COMPUTE_STREAM] * (p.n_opt + 2))
    names = (["Memcpy HtoD (Pinned -> Device)", "Memset (Device)"]
             + [f"{_FWD_NAMES[i]}" for i in fwd_name] + [f"{_BWD_NAMES[i]}" for i in bwd_name]
             + ["ncclDevKernel_AllReduce_Sum_bf16_RING_LL"] * p.buckets
             + ["multi_tensor_apply_kernel_adam"] * p.n_opt
             + ["host_callback_loss_scale_check", "Event wait (cudaStreamWaitEvent)"])
    return _Model(np.concatenate([fwd, bwd]).astype(np.float32), opt.astype(np.float32),
                  comm.astype(np.float32), launch, np.array(kinds, np.int8),
                  np.array(streams, np.int32), names)


# --------------------------------------------------------------------------- generation


def _ns(x: np.ndarray) -> np.ndarray:
    """Float nanoseconds -> int64, at least 1 ns."""
    return np.maximum(np.rint(x), 1).astype(np.int64)


def _lognormal(rng: np.random.Generator, median: float, sigma: float, shape) -> np.ndarray:
    z = rng.standard_normal(shape, dtype=np.float32)
    z *= np.float32(sigma)
    return np.exp(z, out=z) * np.float32(median)


def _generate_block(p: _Plan, m: _Model, x0: int, tail0: np.ndarray, s0: int, n_steps: int,
                    block: int) -> tuple[dict, int, np.ndarray]:
    """Steps ``s0 .. s0+n_steps`` for all ranks.

    ``x0`` is the end of the previous step's last collective (common to all ranks) and
    ``tail0[r]`` the end of rank r's previous step relative to ``x0``. Returns numpy
    columns (rank-major, sorted by start within each rank) and the new state.
    """
    rng = np.random.default_rng([p.seed, 1, block])
    R, S, nb = p.ranks, n_steps, p.buckets
    # Draws always cover a whole block (then are cut to n_steps): a run is a prefix of
    # any longer run with the same seed.
    B = p.block_steps
    shape = (R, B)

    # ---- draws (always the same sequence for a given block, whatever the straggler) ----
    dwait = _lognormal(rng, _DATA_WAIT_MEDIAN, _DATA_WAIT_SIGMA, shape)
    long_ = rng.random(shape, dtype=np.float32) < _DATA_WAIT_LONG_P
    dwait[long_] *= rng.uniform(*_DATA_WAIT_LONG_RANGE, size=int(long_.sum())).astype(np.float32)
    h2d = _lognormal(rng, _H2D_MEDIAN, _H2D_SIGMA, shape)
    memset_on = rng.random(shape, dtype=np.float32) < _MEMSET_P
    memset = _lognormal(rng, _MEMSET_MEDIAN, _MEMSET_SIGMA, shape)
    fb = _lognormal(rng, 1.0, _JITTER_SIGMA, (R, B, p.n_fb))
    fb *= m.fb
    gaps = _lognormal(rng, _GAP_MEDIAN, _GAP_SIGMA, (R, B, p.n_fb + p.n_opt))
    stall = rng.random(gaps.shape, dtype=np.float32) < _STALL_P
    gaps[stall] *= rng.uniform(*_STALL_RANGE, size=int(stall.sum())).astype(np.float32)
    comm = _lognormal(rng, 1.0, _COMM_JITTER, (B, nb))
    comm *= m.comm
    comm_launch = _lognormal(rng, _COMM_LAUNCH_MEDIAN, 0.3, (R, B, nb))
    opt = _lognormal(rng, 1.0, _JITTER_SIGMA, (R, B, p.n_opt))
    opt *= m.opt
    other_on = rng.random(shape, dtype=np.float32) < _OTHER_P
    other = _lognormal(rng, _OTHER_MEDIAN, 0.3, shape)
    sync = _lognormal(rng, _SYNC_MEDIAN, _SYNC_SIGMA, shape)
    if S < B:
        dwait, h2d, memset_on, memset, fb, gaps, comm_launch, opt, other_on, other, sync = (
            a[:, :S] for a in (dwait, h2d, memset_on, memset, fb, gaps, comm_launch, opt,
                               other_on, other, sync))
        comm = comm[:S]
    shape = (R, S)
    if p.straggler_rank >= 0:
        f = np.float32(p.straggler_factor)
        fb[p.straggler_rank] *= f
        opt[p.straggler_rank] *= f

    E = p.slots
    i_fb, i_comm = 2, 2 + p.n_fb
    i_opt = i_comm + nb
    i_other, i_sync = i_opt + p.n_opt, i_opt + p.n_opt + 1
    start = np.empty((R, S, E), np.int64)
    end = np.empty((R, S, E), np.int64)

    # ---- rank-local part of the step, relative to the step start ----
    d = _ns(dwait)
    cp_end = d + _ns(h2d)
    start[..., 0], end[..., 0] = d, cp_end
    ms_start = d + np.int64(_MEMSET_LAUNCH)
    ms_end = ms_start + _ns(memset)
    start[..., 1], end[..., 1] = ms_start, ms_end
    fwd0 = np.maximum(cp_end, np.where(memset_on, ms_end, 0))
    dur = _ns(fb)
    g = _ns(gaps)
    ends = np.cumsum(g[..., : p.n_fb] + dur, axis=2)
    ends += fwd0[..., None]
    end[..., i_fb:i_comm] = ends
    start[..., i_fb:i_comm] = ends - dur
    launch = ends[..., m.launch] + _ns(comm_launch)  # (R, S, nb)

    # ---- end of the step, relative to the end of the step's last collective ----
    odur = _ns(opt)
    og = g[..., p.n_fb:]
    og[..., 0] += np.int64(_OPT_LAUNCH)
    oends = np.cumsum(og + odur, axis=2)
    end[..., i_opt:i_other] = oends
    start[..., i_opt:i_other] = oends - odur
    o_start = oends[..., -1] + np.int64(_GAP_MEDIAN)
    o_end = o_start + _ns(other)
    start[..., i_other], end[..., i_other] = o_start, o_end
    s_start = np.where(other_on, o_end, oends[..., -1]) + np.int64(_GAP_MEDIAN)
    tail = s_start + _ns(sync)  # step end - last collective end
    start[..., i_sync], end[..., i_sync] = s_start, tail

    # ---- synchronizing collectives: the only coupling between ranks ----
    # A[r, s]: start of step s of rank r relative to the end of step s-1's last collective.
    A = np.empty(shape, np.int64)
    A[:, 0] = tail0
    A[:, 1:] = tail[:, :-1]
    u = launch + A[..., None]                  # launches relative to that same instant
    arrive = u.max(axis=0)                     # (S, nb): last rank to launch each bucket
    cdur = _ns(comm)
    cend = np.empty((S, nb), np.int64)
    cstart = np.empty((R, S, nb), np.int64)
    cend[:, 0] = arrive[:, 0] + cdur[:, 0]
    cstart[..., 0] = u[..., 0]
    for j in range(1, nb):
        cend[:, j] = np.maximum(arrive[:, j], cend[:, j - 1]) + cdur[:, j]
        cstart[..., j] = np.maximum(u[..., j], cend[None, :, j - 1])
    delta = cend[:, -1]                        # step length on the common clock
    xs = np.empty(S + 1, np.int64)             # xs[s]: end of step s-1's last collective
    xs[0] = x0
    np.cumsum(delta, out=xs[1:])
    xs[1:] += x0

    # ---- absolute times ----
    step0 = xs[None, :-1] + A                  # step starts
    start[..., :i_comm] += step0[..., None]
    end[..., :i_comm] += step0[..., None]
    start[..., i_comm:i_opt] = cstart + xs[None, :-1, None]
    end[..., i_comm:i_opt] = np.broadcast_to(cend + xs[:-1, None], (R, S, nb))
    start[..., i_opt:] += xs[None, 1:, None]
    end[..., i_opt:] += xs[None, 1:, None]

    # ---- drop absent events, order each rank-step by start ----
    start[..., 1][~memset_on] = _INT64_MAX
    start[..., i_other][~other_on] = _INT64_MAX
    order = np.argsort(start, axis=2, kind="stable")
    start = np.take_along_axis(start, order, axis=2)
    end = np.take_along_axis(end, order, axis=2)
    keep = start != _INT64_MAX
    n_per_rank = keep.reshape(R, -1).sum(axis=1)
    slot = order[keep]
    cols = {
        "rank": np.repeat(np.arange(R, dtype=np.int32), n_per_rank),
        "stream": m.slot_stream[slot],
        "start_ns": start[keep],
        "end_ns": end[keep],
        "kind": m.slot_kind[slot],
        "step": np.broadcast_to(np.arange(s0, s0 + S, dtype=np.int64)[None, :, None],
                                (R, S, E))[keep],
    }
    if p.names:
        cols["slot"] = slot.astype(np.int32)
    return cols, int(xs[-1]), tail[:, -1].copy()


def _table(p: _Plan, m: _Model | None, cols: dict) -> pa.Table:  # m: None without names
    kind = pa.DictionaryArray.from_arrays(pa.array(cols["kind"], pa.int8()),
                                          pa.array(KINDS, pa.string()))
    arrays = [pa.array(cols["rank"], pa.int32()), pa.array(cols["stream"], pa.int32()),
              pa.array(cols["start_ns"], pa.int64()), pa.array(cols["end_ns"], pa.int64()), kind]
    if p.names:
        assert m is not None
        arrays.append(pa.array(m.slot_name, pa.string()).take(pa.array(cols["slot"])))
    arrays.append(pa.array(cols["step"], pa.int64()))
    return pa.Table.from_arrays(arrays, schema=events_schema(p.names))


def _chunks(p: _Plan, steps: int, chunk_events: int | None) -> Iterator[pa.Table]:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"steps must be a non-negative int, got {steps!r}")
    m = _model(p)
    bs = p.block_steps
    if chunk_events is None:
        chunk_blocks = max(1, -(-int(steps) // bs))
    else:
        if isinstance(chunk_events, bool) or not isinstance(chunk_events, (int, np.integer)) \
                or chunk_events < 1:
            raise ValueError(f"chunk_events must be a positive int, got {chunk_events!r}")
        chunk_blocks = max(1, int(chunk_events) // (bs * p.ranks * p.slots))
    x, tail = p.start_ns, np.zeros(p.ranks, np.int64)
    block, s = 0, 0
    if steps == 0:
        yield events_schema(p.names).empty_table()
        return
    while s < steps:
        parts = []
        for _ in range(chunk_blocks):
            if s >= steps:
                break
            n = min(bs, steps - s)
            cols, x, tail = _generate_block(p, m, x, tail, s, n, block)
            parts.append(cols)
            block += 1
            s += n
        cols = parts[0] if len(parts) == 1 else _rank_major(parts, p.ranks)
        del parts
        yield _table(p, m, cols)


def _rank_major(parts: list[dict], R: int) -> dict:
    """Merge blocks (each rank-major, consecutive in time) into (rank, start_ns) order.

    One copy per (rank, block) slice into preallocated columns: no sort is needed because
    the blocks follow each other in time on every rank.
    """
    counts = np.stack([np.bincount(c["rank"], minlength=R) for c in parts])  # (B, R)
    src0 = np.zeros_like(counts)
    np.cumsum(counts[:, :-1], axis=1, out=src0[:, 1:])   # block-local start of each rank
    dst0 = np.cumsum(counts.T.ravel()) - counts.T.ravel()  # output start, rank-major
    dst0 = dst0.reshape(R, len(parts))
    total = int(counts.sum())
    out = {k: np.empty(total, v.dtype) for k, v in parts[0].items()}
    for k, col in out.items():
        for b, part in enumerate(parts):
            v = part[k]
            for r in range(R):
                n = counts[b, r]
                if n:
                    col[dst0[r, b]:dst0[r, b] + n] = v[src0[b, r]:src0[b, r] + n]
    return out


# --------------------------------------------------------------------------- public API


def training_run(
    ranks: int = 8,
    steps: int = 100,
    *,
    kernels_per_step: int = DEFAULT_KERNELS_PER_STEP,
    buckets: int = DEFAULT_BUCKETS,
    seed: int = 0,
    straggler: tuple[int | None, float] | None = None,
    start_ns: int = DEFAULT_START_NS,
    names: bool = False,
) -> pa.Table:
    """A synthetic data-parallel training run: the events of every rank, in one table.

    See the module docstring for the model of a step.

    Parameters
    ----------
    ranks : int, default 8
        Number of ranks (accelerators), numbered from 0.
    steps : int, default 100
        Number of training steps.
    kernels_per_step : int, default 96
        Compute kernels per step and rank (forward, backward and optimizer; at least 3):
        ``max(1, k // 32)`` optimizer kernels, a third of the rest forward, the others backward.
    buckets : int, default 4
        Gradient all-reduce collectives per step (between 1 and the number of backward kernels).
    seed : int, default 0
        Non-negative seed; the same arguments give an identical table.
    straggler : (rank, factor) or None, default None
        Slow down every compute kernel of ``rank`` by ``factor`` (e.g. ``(3, 1.5)``).
        ``None`` or ``(None, ...)`` means no straggler. The random draws do not depend on it.
    start_ns : int, default 1_700_000_000 * 10**9
        Start of step 0 on every rank (epoch nanoseconds).
    names : bool, default False
        Add a ``name:string`` column (kernel names); off by default because strings are slow
        at 100M rows.

    Returns
    -------
    pyarrow.Table
        Schema :func:`events_schema`; ``kind`` values among :data:`KINDS`; ``step`` is the
        0-based step index. Rows are sorted by ``(rank, start_ns)``.

    Examples
    --------
    >>> t = training_run(ranks=2, steps=3, seed=1)
    >>> t.schema.field("kind").type
    DictionaryType(dictionary<values=string, indices=int8, ordered=0>)
    """
    p = _plan(ranks, kernels_per_step, buckets, seed, straggler, start_ns, names)
    (table,) = list(_chunks(p, steps, None))
    return table


def iter_training_run(
    ranks: int = 8,
    steps: int = 100,
    *,
    chunk_events: int = 5_000_000,
    kernels_per_step: int = DEFAULT_KERNELS_PER_STEP,
    buckets: int = DEFAULT_BUCKETS,
    seed: int = 0,
    straggler: tuple[int | None, float] | None = None,
    start_ns: int = DEFAULT_START_NS,
    names: bool = False,
) -> Iterator[pa.Table]:
    """The run of :func:`training_run`, generated lazily in chunks of consecutive steps.

    Only one chunk is held at a time. Each chunk holds all ranks for a range of steps and is
    sorted by ``(rank, start_ns)``; concatenated, the chunks are sorted by ``start_ns`` within
    each rank, and sorting them by ``(rank, start_ns)`` gives exactly
    ``training_run(...)`` with the same arguments.

    Parameters
    ----------
    chunk_events : int, default 5_000_000
        Upper bound of the rows of a chunk. Chunks are made of whole generation blocks
        (at most 131,072 events, or one step of all ranks if that is larger), so a chunk
        exceeds ``chunk_events`` only when one block does.
    ranks, steps, kernels_per_step, buckets, seed, straggler, start_ns, names
        As in :func:`training_run`.

    Yields
    ------
    pyarrow.Table
        Chunks with schema :func:`events_schema`.
    """
    p = _plan(ranks, kernels_per_step, buckets, seed, straggler, start_ns, names)
    return _chunks(p, steps, chunk_events)


def expected_events(
    ranks: int,
    steps: int,
    *,
    kernels_per_step: int = DEFAULT_KERNELS_PER_STEP,
    buckets: int = DEFAULT_BUCKETS,
) -> float:
    """Expected number of rows of a run (the memset and ``other`` events are random).

    Per step and rank: ``kernels_per_step`` compute kernels, ``buckets`` collectives, one
    memcpy, one sync, plus a memset with probability 0.25 and an ``other`` with probability 0.1.

    Returns
    -------
    float
    """
    _split_kernels(kernels_per_step, buckets)
    per = kernels_per_step + buckets + 2 + _MEMSET_P + _OTHER_P
    return float(ranks) * float(steps) * per


def steps_for_events(
    n_events: int,
    *,
    ranks: int = 8,
    kernels_per_step: int = DEFAULT_KERNELS_PER_STEP,
    buckets: int = DEFAULT_BUCKETS,
) -> int:
    """Number of steps whose run has about ``n_events`` rows (at least 1)."""
    if isinstance(n_events, bool) or not isinstance(n_events, (int, np.integer)) or n_events < 0:
        raise ValueError(f"n_events must be a non-negative int, got {n_events!r}")
    per_step = expected_events(ranks, 1, kernels_per_step=kernels_per_step, buckets=buckets)
    return max(1, int(round(n_events / per_step)))


def training_run_for_events(
    n_events: int,
    *,
    ranks: int = 8,
    seed: int = 0,
    **kwargs,
) -> pa.Table:
    """A :func:`training_run` with about ``n_events`` rows (within a step of all ranks).

    Parameters
    ----------
    n_events : int
        Target number of rows.
    ranks, seed
        As in :func:`training_run`.
    **kwargs
        Any other keyword of :func:`training_run` (``kernels_per_step``, ``buckets``,
        ``straggler``, ``start_ns``, ``names``).
    """
    steps = steps_for_events(n_events, ranks=ranks,
                             kernels_per_step=kwargs.get("kernels_per_step",
                                                         DEFAULT_KERNELS_PER_STEP),
                             buckets=kwargs.get("buckets", DEFAULT_BUCKETS))
    return training_run(ranks, steps, seed=seed, **kwargs)


TableLike = Union[pa.Table, pa.RecordBatch, pa.RecordBatchReader,
                  Iterable[Union[pa.Table, pa.RecordBatch]]]


def write_parquet(
    data: TableLike,
    path: PathLike,
    *,
    row_group_size: int = 1_000_000,
    compression: str = "zstd",
) -> int:
    """Write events (one table or a stream of tables) to one Parquet file.

    The Arrow schema is stored in the file, so reading it back with pyarrow gives the
    same schema (``kind`` stays ``dictionary<int8, string>``). Each table of a stream starts
    a new row group; row groups hold at most ``row_group_size`` rows.

    Parameters
    ----------
    data : pyarrow.Table, RecordBatch, RecordBatchReader or iterable of tables/batches
        All items must share the schema of the first. An empty iterable writes an empty
        file with :func:`events_schema`.
    path : str or os.PathLike
        Destination file (overwritten).
    row_group_size : int, default 1_000_000
        Maximum rows per row group.
    compression : str, default "zstd"

    Returns
    -------
    int
        Number of rows written.
    """
    if isinstance(row_group_size, bool) or not isinstance(row_group_size, (int, np.integer)) \
            or row_group_size < 1:
        raise ValueError(f"row_group_size must be a positive int, got {row_group_size!r}")
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        items: Iterable = [data]
    else:
        items = data
    writer = None
    schema = None
    rows = 0
    try:
        for item in items:
            table = pa.Table.from_batches([item]) if isinstance(item, pa.RecordBatch) else item
            if not isinstance(table, pa.Table):
                raise TypeError(f"write_parquet: expected pyarrow tables or record batches, "
                                f"got {type(table).__name__}")
            if writer is None:
                schema = table.schema
                writer = pq.ParquetWriter(os.fspath(path), schema,
                                          compression=compression, store_schema=True)
            elif not table.schema.equals(schema):
                table = table.cast(schema)
            if table.num_rows:
                writer.write_table(table, row_group_size=int(row_group_size))
            rows += table.num_rows
        if writer is None:
            writer = pq.ParquetWriter(os.fspath(path), events_schema(),
                                      compression=compression, store_schema=True)
    finally:
        if writer is not None:
            writer.close()
    return rows


def write_training_run(
    path: PathLike,
    n_events: int,
    *,
    ranks: int = 8,
    seed: int = 0,
    chunk_events: int = 5_000_000,
    row_group_size: int = 1_000_000,
    **kwargs,
) -> int:
    """Stream a run of about ``n_events`` rows to one Parquet file, chunk by chunk.

    Memory is bounded by one chunk (about 2 x 33 bytes per event of ``chunk_events`` at the
    peak, while a chunk's blocks are merged, plus the Parquet writer's buffers): the run is
    generated by :func:`iter_training_run` and each chunk written before the next is made.
    The file is sorted by ``start_ns`` within each rank; ranks interleave between chunks
    (each chunk is sorted by ``(rank, start_ns)``). Sorting the file by
    ``(rank, start_ns)`` gives ``training_run_for_events(n_events, ranks=ranks, seed=seed,
    **kwargs)`` exactly.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file (overwritten).
    n_events : int
        Target number of rows (see :func:`steps_for_events`).
    ranks, seed
        As in :func:`training_run`.
    chunk_events : int, default 5_000_000
        Rows generated at a time (see :func:`iter_training_run`).
    row_group_size : int, default 1_000_000
        Maximum rows per row group; a row group never spans two chunks.
    **kwargs
        Other keywords of :func:`training_run`.

    Returns
    -------
    int
        Number of rows written.
    """
    steps = steps_for_events(n_events, ranks=ranks,
                             kernels_per_step=kwargs.get("kernels_per_step",
                                                         DEFAULT_KERNELS_PER_STEP),
                             buckets=kwargs.get("buckets", DEFAULT_BUCKETS))
    chunks = iter_training_run(ranks, steps, chunk_events=chunk_events, seed=seed, **kwargs)
    return write_parquet(chunks, path, row_group_size=row_group_size)


# =========================================================================== lifecycles
#
# The lifecycle layer of DESIGN §2.2: training_job (one job, with its events and the
# ledger it must produce) and lifecycle_records (big tables for benchmarks). The model
# is described in the module docstring ("Lifecycles").

_NULL = np.iinfo(np.int64).min
_SINGLE_FAILURES = ("xid79", "ecc_error", "nccl_timeout", "host_oom")
_CORRELATED_FAILURES = ("switch_down", "power_loss")
_LC_STEP_SIGMA = 0.05   # log-normal jitter of step durations
_LC_SIGMA = 0.10        # log-normal jitter of init, restore, checkpoint block and delay
_S = 10**9

def lifecycle_schema() -> pa.Schema:
    """The schema of the lifecycle tables this module produces (DESIGN §2.2).

    ``record:string, attempt:int32, rank:int32, start_ns:int64, end_ns:int64, step:int64,
    block_end_ns:int64, durable_ns:int64, ok:bool, kind:string, tokens:int64``; every field
    but ``record`` and ``start_ns`` is nullable.
    """
    return LIFECYCLE_SCHEMA


def _check_int(name, v, lo=None, allow_none=False):
    if v is None and allow_none:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {v!r}")
    if lo is not None and v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v!r}")
    return int(v)


def _check_seconds(name, v, *, positive=False, allow_none=False):
    if v is None and allow_none:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number of seconds, got {v!r}")
    v = float(v)
    if math.isnan(v) or v < 0 or (positive and v == 0):
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'} seconds, got {v!r}")
    return v


def _dur(rng, median_s: float, sigma: float, size=None) -> np.ndarray:
    """Log-normal durations around ``median_s`` seconds, as int64 ns (>= 0)."""
    z = rng.standard_normal(size)
    return np.rint(median_s * _S * np.exp(sigma * z)).astype(np.int64)


# --------------------------------------------------------------------------- training_job


@dataclass
class _Attempt:
    index: int                 # 0-based; the table's attempt id is index + 1
    start: int
    members: np.ndarray        # int64 ranks
    init_end: int
    restore: tuple | None      # (step, writer index, start, end)
    k: np.ndarray              # steps run (base+1 ..), full (uncut) intervals below
    s_start: np.ndarray
    s_end: np.ndarray
    c_j: np.ndarray            # position in k of the step each save saves
    c_start: np.ndarray
    c_block: np.ndarray
    c_durable: np.ndarray      # when the save would be durable
    c_corrupt: np.ndarray
    natural_end: int
    fail: tuple | None         # (time, rank or -1, kind)
    end: int                   # failure time, or natural_end
    outage: int                # outage after a failure
    lost: int | None = None    # rank that left the job at this attempt's failure (shrink)

    @property
    def failed(self) -> bool:
        return self.fail is not None


@dataclass
class _View:
    """One attempt as known at ``as_of``: what the lifecycle table says about it."""

    running: bool
    cut: int                   # min(end, as_of): where its accounted time stops
    init_end: int              # NULL if unknown
    restore: tuple | None      # (step, writer, start, end or NULL, ok -1/0/1)
    restore_cut: int
    steps: np.ndarray          # mask of kept steps
    s_end: np.ndarray          # end_ns as written (NULL = in flight)
    saves: np.ndarray          # mask of kept saves
    c_block: np.ndarray        # block_end_ns as written (NULL unknown)
    c_block_cut: np.ndarray
    c_durable: np.ndarray      # durable_ns as written (NULL never / not yet)
    c_ok: np.ndarray           # int8: 1 ok, 0 not ok, -1 unknown yet
    fail_known: bool


def _view(a: _Attempt, as_of: int) -> _View:
    end, cut = a.end, min(a.end, as_of)
    running = a.end > as_of
    limit = min(end, as_of)

    def started(t):
        t = np.asarray(t)
        return ((t < end) if a.failed else np.ones(t.shape, bool)) & (t <= as_of)

    init_end = a.init_end if a.init_end <= limit else _NULL
    restore, restore_cut = None, cut
    if a.restore is not None and bool(started(a.restore[2])):
        step, writer, r0, r1 = a.restore
        interrupted = a.failed and r1 > end
        resolved = end if interrupted else r1
        ok = -1 if resolved > as_of else (0 if interrupted else 1)
        restore = (step, writer, r0, r1 if (not interrupted and r1 <= as_of) else _NULL, ok)
        restore_cut = min(r1, cut)
    steps = started(a.s_start)
    s_end = np.where(a.s_end <= limit, a.s_end, _NULL)
    saves = started(a.c_start)
    c_block = np.where(a.c_block <= limit, a.c_block, _NULL)
    durable_full = np.where(a.c_durable <= end, a.c_durable, _NULL)
    resolved = np.where(durable_full != _NULL, durable_full, end)
    c_ok = np.where(resolved > as_of, -1, (durable_full != _NULL) & ~a.c_corrupt).astype(np.int8)
    c_durable = np.where((durable_full != _NULL) & (durable_full <= as_of), durable_full, _NULL)
    return _View(running, cut, init_end, restore, restore_cut,
                 steps, s_end, saves, c_block,
                 np.minimum(a.c_block, cut), c_durable, c_ok,
                 a.fail is not None and a.fail[0] <= as_of)


def _simulate(cfg: dict) -> list[_Attempt]:
    """Run the job attempt after attempt (see the module docstring)."""
    ranks, steps, every = cfg["ranks"], cfg["steps"], cfg["checkpoint_every"]
    as_of = cfg["as_of"]
    members = np.arange(ranks, dtype=np.int64)
    good: list[tuple[int, int]] = []  # (step, writer index) of ok checkpoints durable at a failure
    attempts: list[_Attempt] = []
    t = cfg["start_ns"]
    failures = 0
    for index in range(cfg["max_attempts"]):
        rng = np.random.default_rng([cfg["seed"], 2, index])
        # draws in a fixed order, whatever they are used for
        ttf = rng.exponential(cfg["mtbf_s"]) if cfg["mtbf_s"] is not None else math.inf
        correlated = bool(rng.random() < cfg["correlated"])
        fail_pos = int(rng.integers(members.size))
        fail_kind = int(rng.integers(len(_SINGLE_FAILURES) * len(_CORRELATED_FAILURES)))
        outage = int(np.rint(rng.exponential(cfg["outage_s"]) * _S)) if cfg["outage_s"] else 0
        init_d = int(_dur(rng, cfg["init_s"] if index == 0 else cfg["reinit_s"], _LC_SIGMA))
        restore_d = int(_dur(rng, cfg["restore_s"], _LC_SIGMA))
        base, writer = max(good) if good else (0, None)
        k = np.arange(base + 1, steps + 1, dtype=np.int64)
        n = k.size
        step_d = np.maximum(_dur(rng, cfg["step_time_s"], _LC_STEP_SIGMA, n), 1)
        blk = _dur(rng, cfg["checkpoint_cost_s"], _LC_SIGMA, n)
        delay = _dur(rng, cfg["durable_delay_s"], _LC_SIGMA, n) if cfg["async_checkpoint"] \
            else np.zeros(n, np.int64)
        corrupt = rng.random(n) < cfg["corrupt_checkpoint_p"]

        c = t + init_d
        restore = None
        if writer is not None:
            restore = (base, writer, c, c + restore_d)
            c += restore_d
        is_save = (k % every == 0) if every else np.zeros(n, bool)
        blk = np.where(is_save, blk, 0)
        per = step_d + blk
        cum = np.cumsum(per)
        s_start = c + cum - per
        s_end = s_start + step_d
        c_j = np.flatnonzero(is_save)
        c_start = s_end[c_j]
        c_block = c_start + blk[c_j]
        c_durable = c_block + delay[c_j]
        natural_end = int(max(c + (int(cum[-1]) if n else 0),
                              int(c_durable.max()) if c_j.size else 0))
        fail = None
        end = natural_end
        f = t + int(np.rint(ttf * _S)) if math.isfinite(ttf) else None
        if f is not None and f < natural_end:
            if correlated:
                fail = (f, -1, _CORRELATED_FAILURES[fail_kind % len(_CORRELATED_FAILURES)])
            else:
                fail = (f, int(members[fail_pos]), _SINGLE_FAILURES[fail_kind % len(_SINGLE_FAILURES)])
            end = f
        attempts.append(_Attempt(index, t, members.copy(), t + init_d, restore, k, s_start, s_end,
                                 c_j, c_start, c_block, c_durable, corrupt[c_j], natural_end,
                                 fail, end, outage))
        if fail is None:
            return attempts
        failures += 1
        ok_durable = (c_durable <= end) & (c_start < end) & ~corrupt[c_j]
        good.extend((int(s), index) for s in k[c_j][ok_durable])
        if cfg["shrink_at_failure"] == failures:
            lost = fail[1] if fail[1] >= 0 else int(members.max())
            attempts[-1].lost = lost
            members = members[members != lost]
        t = end + outage
        if as_of is not None and t > as_of:
            return attempts
    raise ValueError(f"training_job: no completion within {cfg['max_attempts']} attempts; the "
                     f"failures (mtbf_s={cfg['mtbf_s']}) are too frequent for the job to progress")


class _Cols:
    """Columns of a lifecycle table being built (NULL marks missing ints, -1 a missing ok)."""

    def __init__(self):
        self.parts: list[dict] = []

    def add(self, record, n=1, **cols):
        part = {"record": np.broadcast_to(np.asarray(record, dtype=object), (n,))}
        for name in ("attempt", "rank", "start_ns", "end_ns", "step", "block_end_ns",
                     "durable_ns", "tokens"):
            v = cols.get(name, _NULL)
            part[name] = np.broadcast_to(np.asarray(v, np.int64), (n,))
        part["ok"] = np.broadcast_to(np.asarray(cols.get("ok", -1), np.int8), (n,))
        part["kind"] = np.broadcast_to(np.asarray(cols.get("kind"), dtype=object), (n,))
        self.parts.append(part)

    def table(self) -> pa.Table:
        if not self.parts:
            return lifecycle_schema().empty_table()
        cat = {k: np.concatenate([p[k] for p in self.parts]) for k in self.parts[0]}
        arrays = []
        for name, typ in zip(LIFECYCLE_SCHEMA.names, LIFECYCLE_SCHEMA.types):
            v = cat[name]
            if name in ("record", "kind"):
                arrays.append(pa.array(v, typ))
            elif name == "ok":
                arrays.append(pa.array(v == 1, typ, mask=v < 0))
            else:
                arrays.append(pa.array(v, pa.int64(), mask=v == _NULL).cast(typ))
        return pa.Table.from_arrays(arrays, schema=lifecycle_schema())


def _job_table(atts, views, cfg, as_of, acc_start, acc_end, acc_known) -> pa.Table:
    out = _Cols()
    R = cfg["ranks"]
    out.add("accountable", R, rank=np.arange(R), start_ns=acc_start,
            end_ns=np.where(acc_known, acc_end, _NULL))
    per_rank = cfg["per_rank_rows"]
    T = cfg["tokens_per_step"]
    for a, v in zip(atts, views):
        att = a.index + 1
        m = a.members
        nm = m.size if per_rank else 1
        rank = m if per_rank else -1
        share = (T // m.size + (np.arange(m.size) < T % m.size)) if per_rank else T
        kind = "running" if v.running else ("failed" if a.failed else "completed")
        out.add("attempt", nm, attempt=att, rank=rank, start_ns=a.start,
                end_ns=_NULL if v.running else a.end, kind=kind)
        if a.start < a.end or not a.failed:
            out.add("phase", nm, attempt=att, rank=rank, start_ns=a.start, end_ns=v.init_end,
                    kind="init")
        if v.restore is not None:
            step, _, r0, r1, ok = v.restore
            out.add("restore", nm, attempt=att, rank=rank, step=step, start_ns=r0, end_ns=r1, ok=ok)
        # steps and saves in their logical (= time) order: step j, then the save after it
        js = np.flatnonzero(v.steps)
        cs = np.flatnonzero(v.saves)
        order = np.argsort(np.concatenate([2 * js, 2 * a.c_j[cs] + 1]), kind="stable")
        n = order.size
        if n:
            def cat(x, y):
                return np.concatenate([np.broadcast_to(np.asarray(x, np.int64), (js.size,)),
                                       np.broadcast_to(np.asarray(y, np.int64), (cs.size,))])[order]
            is_step = order < js.size
            cols = dict(step=cat(a.k[js], a.k[a.c_j[cs]]), start_ns=cat(a.s_start[js], a.c_start[cs]),
                        end_ns=cat(v.s_end[js], _NULL), block_end_ns=cat(_NULL, v.c_block[cs]),
                        durable_ns=cat(_NULL, v.c_durable[cs]), ok=cat(-1, v.c_ok[cs]))
            record = np.where(is_step, "step", "checkpoint_save").astype(object)
            if per_rank:
                rep = np.repeat(np.arange(n), nm)
                cols = {c: x[rep] for c, x in cols.items()}
                tokens = np.where(is_step[rep], np.tile(share, n), _NULL)
                out.add(record[rep], n * nm, attempt=att, rank=np.tile(m, n), tokens=tokens, **cols)
            else:
                out.add(record, n, attempt=att, rank=-1, tokens=np.where(is_step, T, _NULL), **cols)
        if v.fail_known:
            f, frank, fkind = a.fail
            out.add("failure", 1, attempt=att, rank=frank, start_ns=f, kind=fkind)
    return out.table()


def _job_events(atts, views, cfg) -> pa.Table:
    """Device events: the per-step model of :func:`training_run`, one generated step per
    executed step, mapped linearly into that step's interval, plus a memcpy during each
    restore and each checkpoint's blocking part."""
    R = cfg["ranks"]
    # executed steps, in time order: attempt position, interval, step number, cut
    sel = [np.flatnonzero(v.steps) for v in views]
    ia = np.concatenate([np.full(j.size, i, np.int64) for i, j in enumerate(sel)])
    ls = np.concatenate([a.s_start[j] for a, j in zip(atts, sel)])
    le = np.concatenate([a.s_end[j] for a, j in zip(atts, sel)])
    kk = np.concatenate([a.k[j] for a, j in zip(atts, sel)])
    cut = np.array([v.cut for v in views], np.int64)[ia]
    N = ia.size
    p = _plan(R, cfg["kernels_per_step"], cfg["buckets"], cfg["seed"], cfg["straggler"], 0, False)
    parts = []
    if N:
        member = np.zeros((len(atts), R), bool)
        for i, a in enumerate(atts):
            member[i, a.members] = True
        (gen,) = list(_chunks(p, N, None))
        rank = gen["rank"].to_numpy()
        s = gen["step"].to_numpy()
        start = gen["start_ns"].to_numpy()
        end = gen["end_ns"].to_numpy()
        # the window of generated step s over all ranks: from the earliest end of step s-1
        # (a rank's step starts where its previous one ended) to the latest end of step s
        key = rank.astype(np.int64) * N + s
        first = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
        E = np.maximum.reduceat(end, first).reshape(R, N)
        g1 = E.max(axis=0)
        g0 = np.concatenate([[p.start_ns], E.min(axis=0)[:-1]])
        L = le - ls
        f = L / (g1 - g0)
        new_start = ls[s] + np.minimum(np.floor((start - g0[s]) * f[s]).astype(np.int64), L[s])
        new_end = ls[s] + np.minimum(np.floor((end - g0[s]) * f[s]).astype(np.int64), L[s])
        c = cut[s]
        keep = member[ia[s], rank] & (new_start < c)
        parts.append({"rank": rank[keep], "stream": gen["stream"].to_numpy()[keep],
                      "start_ns": new_start[keep], "end_ns": np.minimum(new_end, c)[keep],
                      "kind": gen["kind"].combine_chunks().indices.to_numpy()[keep],
                      "step": kk[s][keep]})
    # copies: restore (host to device) and checkpoint blocking (device to host)
    cr, cs_, ce, ck = [], [], [], []
    for a, v in zip(atts, views):
        spans = []
        if v.restore is not None:
            spans.append((v.restore[2], v.restore_cut, v.restore[0]))
        for c in np.flatnonzero(v.saves):
            spans.append((a.c_start[c], v.c_block_cut[c], a.k[a.c_j[c]]))
        for s0, s1, step in spans:
            if s1 > s0:
                cr.append(a.members)
                cs_.append(np.full(a.members.size, s0))
                ce.append(np.full(a.members.size, s1))
                ck.append(np.full(a.members.size, step))
    if cr:
        n = sum(x.size for x in cr)
        parts.append({"rank": np.concatenate(cr).astype(np.int32),
                      "stream": np.full(n, COPY_STREAM, np.int32),
                      "start_ns": np.concatenate(cs_).astype(np.int64),
                      "end_ns": np.concatenate(ce).astype(np.int64),
                      "kind": np.full(n, _K["memcpy"], np.int8),
                      "step": np.concatenate(ck).astype(np.int64)})
    if not parts:
        return events_schema().empty_table()
    cols = {k: np.concatenate([pt[k] for pt in parts]) for k in parts[0]}
    order = np.lexsort((cols["start_ns"], cols["rank"]))
    cols = {k: v[order] for k, v in cols.items()}
    cols["rank"] = cols["rank"].astype(np.int32)
    cols["stream"] = cols["stream"].astype(np.int32)
    cols["kind"] = cols["kind"].astype(np.int8)
    return _table(p, None, cols)


@dataclass
class TrainingJob:
    """A synthetic training job with failures: see :func:`training_job`.

    Attributes
    ----------
    lifecycle : pyarrow.Table
        The lifecycle table (schema :func:`lifecycle_schema`), as known at ``as_of``.
    events : pyarrow.Table or None
        Device events (schema :func:`events_schema`, sorted by ``(rank, start_ns)``), or
        None when built with ``events=False``.
    as_of : int
        The instant (ns) the tables describe: the given ``as_of``, else the end of the job.
        Pass it to :func:`pau.core.ledger` (the table's latest instant can be earlier when
        the job is still running).
    start_ns : int
        Start of the job (of its first attempt).
    attempts : pyarrow.Table
        One row per attempt known at ``as_of``: ``attempt, start_ns, end_ns`` (null when
        running), ``kind``, ``ranks`` (members), ``restored_step`` (null: none),
        ``failure_ns``, ``failure_rank``, ``failure_kind``.
    """

    lifecycle: pa.Table
    events: pa.Table | None
    as_of: int
    start_ns: int
    attempts: pa.Table


def training_job(
    ranks: int = 8,
    steps: int = 1000,
    *,
    seed: int = 0,
    mtbf_s: float | None = 600.0,
    correlated: float = 0.0,
    checkpoint_every: int | None = 100,
    checkpoint_cost_s: float | None = None,
    async_checkpoint: bool = False,
    durable_delay_s: float = 30.0,
    outage_s: float = 60.0,
    init_s: float | None = None,
    reinit_s: float = 30.0,
    restore_s: float = 15.0,
    shrink_at_failure: int | None = None,
    straggler: tuple[int | None, float] | None = None,
    step_time_s: float = 1.0,
    tokens_per_step: int = 4 * 1024 * 1024,
    corrupt_checkpoint_p: float = 0.0,
    per_rank_rows: bool = False,
    events: bool = True,
    as_of: int | None = None,
    kernels_per_step: int = DEFAULT_KERNELS_PER_STEP,
    buckets: int = DEFAULT_BUCKETS,
    start_ns: int = DEFAULT_START_NS,
    max_attempts: int = 10_000,
) -> TrainingJob:
    """A synthetic synchronous data-parallel training job with checkpoints and failures.

    See "Lifecycles" in the module docstring for the model. Times are seconds in the
    arguments (floats) and int64 nanoseconds in the tables.

    Parameters
    ----------
    ranks : int, default 8
        Ranks of the first attempt, numbered from 0.
    steps : int, default 1000
        The job completes when step ``steps`` (1-based) is done.
    seed : int, default 0
    mtbf_s : float or None, default 600
        Mean time between failures of the job (a Poisson process over the wall time of
        the attempts). None: no failures.
    correlated : float, default 0
        Probability that a failure hits every rank at once (failure row with ``rank=-1``)
        rather than one rank (the failing rank is recorded). Either ends the attempt.
    checkpoint_every : int or None, default 100
        A checkpoint of step ``k`` is saved after every step ``k`` that is a multiple.
    checkpoint_cost_s : float, optional
        Blocking time of a save (median). Default 10 s, or 1 s with ``async_checkpoint``.
    async_checkpoint : bool, default False
        Synchronous saves are durable when they stop blocking; asynchronous saves are
        durable ``durable_delay_s`` (median) after that, while training goes on.
    durable_delay_s : float, default 30
    outage_s : float, default 60
        Mean of the exponential outage between a failure and the next attempt.
    init_s, reinit_s : float
        Median init phase of the first attempt (default: ``reinit_s``) and of later ones.
    restore_s : float, default 15
        Median restore of the last durable checkpoint in later attempts.
    shrink_at_failure : int, optional
        After the k-th failure the job goes on with one rank fewer (the failing rank, or
        the highest one for a correlated failure); that rank's accountable time ends at
        the failure.
    straggler : (rank, factor), optional
        Passed to the device-event model (:func:`training_run`): it changes the events
        only, not the step durations.
    step_time_s : float, default 1
        Median step duration.
    tokens_per_step : int, default 4 Mi
        Tokens of every step (of the whole job).
    corrupt_checkpoint_p : float, default 0
        Probability that a completed save is corrupt (``ok=false``): never restored.
    per_rank_rows : bool, default False
        Write attempt, phase, step, checkpoint and restore records once per member rank
        (tokens split across them) instead of once with ``rank=-1``. Same ledger.
    events : bool, default True
        Also generate the device events (costly: about 100 per step and rank).
    as_of : int, optional
        An instant (ns, absolute like the tables): describe the job as known then.
        Records after it are absent, ends/durability not reached yet are null, and an
        attempt open at ``as_of`` is ``running``. The tables are a prefix of the full job's.
    kernels_per_step, buckets, start_ns
        As in :func:`training_run` (``start_ns``: start of the first attempt).
    max_attempts : int, default 10000
        Give up (ValueError) if the job has not completed after this many attempts.

    Returns
    -------
    TrainingJob
        The lifecycle, the events and the attempts as known at ``as_of``.

    Examples
    --------
    >>> job = training_job(ranks=2, steps=50, checkpoint_every=10, mtbf_s=20, seed=1, events=False)
    >>> kinds = job.attempts["kind"].to_pylist()
    >>> kinds[-1], kinds.count("failed") > 0
    ('completed', True)
    """
    ranks = _check_int("ranks", ranks, 1)
    steps = _check_int("steps", steps, 1)
    seed = _check_int("seed", seed, 0)
    every = _check_int("checkpoint_every", checkpoint_every, 1, allow_none=True)
    shrink = _check_int("shrink_at_failure", shrink_at_failure, 1, allow_none=True)
    if shrink is not None and ranks < 2:
        raise ValueError("shrink_at_failure needs ranks >= 2")
    if not 0.0 <= float(correlated) <= 1.0:
        raise ValueError(f"correlated must be a probability, got {correlated!r}")
    if not 0.0 <= float(corrupt_checkpoint_p) <= 1.0:
        raise ValueError(f"corrupt_checkpoint_p must be a probability, got {corrupt_checkpoint_p!r}")
    mtbf = _check_seconds("mtbf_s", mtbf_s, positive=True, allow_none=True)
    if mtbf is not None and math.isinf(mtbf):
        mtbf = None
    if checkpoint_cost_s is None:
        checkpoint_cost_s = 1.0 if async_checkpoint else 10.0
    start_ns = _check_int("start_ns", start_ns, 0)
    as_of = _check_int("as_of", as_of, start_ns, allow_none=True)
    cfg = dict(
        ranks=ranks, steps=steps, seed=seed, mtbf_s=mtbf, correlated=float(correlated),
        checkpoint_every=every,
        checkpoint_cost_s=_check_seconds("checkpoint_cost_s", checkpoint_cost_s),
        async_checkpoint=bool(async_checkpoint),
        durable_delay_s=_check_seconds("durable_delay_s", durable_delay_s),
        outage_s=_check_seconds("outage_s", outage_s),
        init_s=_check_seconds("init_s", reinit_s if init_s is None else init_s),
        reinit_s=_check_seconds("reinit_s", reinit_s),
        restore_s=_check_seconds("restore_s", restore_s),
        shrink_at_failure=shrink, straggler=straggler,
        step_time_s=_check_seconds("step_time_s", step_time_s, positive=True),
        tokens_per_step=_check_int("tokens_per_step", tokens_per_step, 0),
        corrupt_checkpoint_p=float(corrupt_checkpoint_p), per_rank_rows=bool(per_rank_rows),
        as_of=as_of, kernels_per_step=kernels_per_step, buckets=buckets, start_ns=start_ns,
        max_attempts=_check_int("max_attempts", max_attempts, 1),
    )
    _plan(ranks, kernels_per_step, buckets, seed, straggler, start_ns, False)  # validate
    atts = _simulate(cfg)
    last = atts[-1]
    if as_of is None:
        as_of = last.end
    atts = [a for a in atts if a.start <= as_of]
    views = [_view(a, as_of) for a in atts]
    done = not last.failed and last.end <= as_of
    job_end = min(last.end, as_of) if done else as_of
    acc_end = np.full(ranks, job_end, np.int64)
    acc_known = np.full(ranks, done)
    for a in atts:  # a rank that left the job (shrink) is accountable until the failure
        if a.lost is not None and a.fail is not None and a.fail[0] <= as_of:  # lost: it failed
            acc_end[a.lost], acc_known[a.lost] = a.fail[0], True
    table = _job_table(atts, views, cfg, as_of, start_ns, acc_end, acc_known)
    ev = _job_events(atts, views, cfg) if events else None
    summary = pa.table({
        "attempt": pa.array([a.index + 1 for a in atts], pa.int32()),
        "start_ns": pa.array([a.start for a in atts], pa.int64()),
        "end_ns": pa.array([None if v.running else a.end for a, v in zip(atts, views)], pa.int64()),
        "kind": pa.array(["running" if v.running else ("failed" if a.failed else "completed")
                          for a, v in zip(atts, views)], pa.string()),
        "ranks": pa.array([a.members.size for a in atts], pa.int32()),
        "restored_step": pa.array([v.restore[0] if v.restore else None for v in views], pa.int64()),
        "failure_ns": pa.array([a.fail[0] if v.fail_known and a.fail else None for a, v in zip(atts, views)],
                               pa.int64()),
        "failure_rank": pa.array([a.fail[1] if v.fail_known and a.fail else None for a, v in zip(atts, views)],
                                 pa.int32()),
        "failure_kind": pa.array([a.fail[2] if v.fail_known and a.fail else None for a, v in zip(atts, views)],
                                 pa.string()),
    })
    return TrainingJob(table, ev, int(as_of), start_ns, summary)


# --------------------------------------------------------------------------- lifecycle_records


def _string_column(value: str, n: int) -> pa.Array:
    """``n`` copies of one string, built from buffers (no Python objects)."""
    b = value.encode()
    if (n + 1) * len(b) > np.iinfo(np.int32).max:
        raise ValueError("lifecycle_records: too many rows for a string column")
    offsets = np.arange(0, (n + 1) * len(b), len(b), dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets),
                                                  pa.py_buffer(b * n)])


def lifecycle_records(
    n_step_records: int,
    *,
    ranks: int = 1024,
    attempts: int = 50,
    seed: int = 0,
    checkpoint_every: int | None = 50,
    step_time_s: float = 1.0,
    tokens_per_step: int = 4096,
    start_ns: int = DEFAULT_START_NS,
) -> pa.Table:
    """A large lifecycle table (DESIGN §2.2) with exactly ``n_step_records`` step rows.

    For throughput benchmarks of lifecycle attribution: per-rank step rows, generated fully
    vectorized (10 million step rows in about a second). See "Lifecycles" in the module
    docstring for the model.

    Parameters
    ----------
    n_step_records : int
        Number of ``step`` rows (exact).
    ranks : int, default 1024
        Ranks, every one a member of every attempt.
    attempts : int, default 50
        Attempts: all but the last fail (the last completes). With one attempt, it
        fails when ``n_step_records`` is not a multiple of ``ranks``.
    seed : int, default 0
    checkpoint_every : int or None, default 50
        A checkpoint (one shard row per rank) after every step that is a multiple.
    step_time_s : float, default 1
        Median step duration.
    tokens_per_step : int, default 4096
        Tokens of each per-rank step row.
    start_ns : int, default 1_700_000_000 * 10**9

    Returns
    -------
    pyarrow.Table
        Schema :func:`lifecycle_schema`. Rows: first the records other than steps
        (``accountable`` per rank; then per attempt its ``attempt`` row (rank -1), ``phase``
        init (rank -1), ``restore`` (rank -1), ``checkpoint_save`` shards (by save, then
        rank) and ``failure``), then every ``step`` row sorted by ``(rank, start_ns)``.
        The ``n_step_records % ranks`` leftover rows are the steps in flight on some of the
        ranks when the first attempt failed.
    """
    n = _check_int("n_step_records", n_step_records, 0)
    R = _check_int("ranks", ranks, 1)
    A = _check_int("attempts", attempts, 1)
    seed = _check_int("seed", seed, 0)
    every = _check_int("checkpoint_every", checkpoint_every, 1, allow_none=True)
    step_s = _check_seconds("step_time_s", step_time_s, positive=True)
    tokens = _check_int("tokens_per_step", tokens_per_step, 0)
    start_ns = _check_int("start_ns", start_ns, 0)
    if R > np.iinfo(np.int32).max or A > np.iinfo(np.int32).max:
        raise ValueError("ranks and attempts must fit in int32")
    rng = np.random.default_rng([seed, 3])
    Q, m = divmod(n, R)
    n_failed = A - 1 if A > 1 else int(m > 0)
    # started ranks of the step in flight at each failure: attempt 0 takes the leftover m,
    # later failed attempts all R (as long as there are rows for it), else none
    started = np.zeros(A, np.int64)
    if n_failed:
        started[0] = m
        full = min(n_failed - 1, Q)
        started[1:1 + full] = R
    complete = Q - int((started == R).sum())
    counts = rng.multinomial(complete, rng.dirichlet(np.ones(A)))
    skew = max(R, 20_000_000)            # per-rank start skew of a step (data wait), < 20 ms
    spacing = skew // R

    out = _Cols()
    out.add("accountable", R, rank=np.arange(R), start_ns=start_ns, end_ns=0)  # end set below
    inst_att, inst_k, inst_T, inst_D = [], [], [], []
    in_flight = []                       # (instance, start order of the ranks, started ranks)
    n_inst = 0
    good: list[tuple[int, int]] = []
    t = start_ns
    for a in range(A):
        fails = a < n_failed
        init_d = int(_dur(rng, 30.0, _LC_SIGMA))
        restore_d = int(_dur(rng, 10.0, _LC_SIGMA))
        outage = int(np.rint(rng.exponential(120.0) * _S))
        base, writer = max(good) if good else (0, None)
        c = int(counts[a])
        k = np.arange(base + 1, base + c + int(fails) + 1, dtype=np.int64)
        D = np.maximum(_dur(rng, step_s, _LC_STEP_SIGMA, k.size), 2 * skew)
        is_save = ((k % every == 0) if every else np.zeros(k.size, bool))
        is_save[c:] = False                       # no save after the step in flight
        blk = np.where(is_save, _dur(rng, 2.0, _LC_SIGMA, k.size), 0)
        t1 = t + init_d
        out.add("attempt", 1, attempt=a + 1, rank=-1, start_ns=t, end_ns=0,
                kind="failed" if fails else "completed")
        att_row = len(out.parts) - 1
        out.add("phase", 1, attempt=a + 1, rank=-1, start_ns=t, end_ns=t1, kind="init")
        if writer is not None:
            out.add("restore", 1, attempt=a + 1, rank=-1, step=base, start_ns=t1,
                    end_ns=t1 + restore_d, ok=1)
            t1 += restore_d
        per = D + blk
        T = t1 + np.cumsum(per) - per
        end = int(T[-1] + per[-1]) if k.size else t1
        if fails:
            # the failure hits step k[c] after `s_` ranks (in a random order) started it
            order = rng.permutation(R)
            s_ = int(started[a])
            f = int(T[c]) + (s_ - 1) * spacing + 1 if s_ else int(T[c])
            if s_ == R:
                f += int(rng.integers(0, D[c] - skew))
            in_flight.append((n_inst + c, order, s_))
            end = f
        j = np.flatnonzero(is_save)
        if j.size:
            cstart = T[j] + D[j]
            cblock = cstart + blk[j]
            delay = _dur(rng, 20.0, _LC_SIGMA, (j.size, R))
            dur = cblock[:, None] + delay
            if fails:
                ok = dur <= f
                durable = np.where(ok, dur, _NULL)
                whole = ok.all(axis=1)
                good.extend((int(x), a) for x in k[j][whole])
            else:
                ok = np.ones(dur.shape, bool)
                durable = dur
                end = max(end, int(dur.max()))
            out.add("checkpoint_save", j.size * R, attempt=a + 1, rank=np.tile(np.arange(R), j.size),
                    step=np.repeat(k[j], R), start_ns=np.repeat(cstart, R),
                    block_end_ns=np.repeat(cblock, R), durable_ns=durable.ravel(),
                    ok=ok.ravel().astype(np.int8))
        out.parts[att_row]["end_ns"] = np.array([end], np.int64)
        if fails:
            out.add("failure", 1, attempt=a + 1, rank=int(rng.integers(R)), start_ns=f,
                    kind=_SINGLE_FAILURES[a % len(_SINGLE_FAILURES)])
        inst_att.append(np.full(k.size, a + 1, np.int32))
        inst_k.append(k)
        inst_T.append(T)
        inst_D.append(D)
        n_inst += k.size
        t = end + outage
    out.parts[0]["end_ns"] = np.full(R, end, np.int64)
    head = out.table()

    # ---- step rows, rank-major: row (r, i) = rank r, instance i ----
    i_att = np.concatenate(inst_att) if inst_att else np.empty(0, np.int32)
    i_k = np.concatenate(inst_k) if inst_k else np.empty(0, np.int64)
    i_T = np.concatenate(inst_T) if inst_T else np.empty(0, np.int64)
    i_D = np.concatenate(inst_D) if inst_D else np.empty(0, np.int64)
    N = i_T.size
    # rows are rank-major (rank r, then its steps in time order); ranks that had not
    # started a step in flight when the failure hit have no row for it
    inst = np.tile(np.arange(N, dtype=np.int64), R)
    excl = [np.flatnonzero(order >= s_) * N + i for i, order, s_ in in_flight if s_ < R]
    if excl:
        excluded = np.sort(np.concatenate(excl))
        inst = np.delete(inst, excluded)
        per_rank = N - np.bincount(excluded // N, minlength=R)
    else:
        per_rank = np.full(R, N, np.int64)
    rows = inst.size
    if rows != n:  # pragma: no cover - internal invariant
        raise AssertionError(f"lifecycle_records: {rows} step rows, not {n}")
    rank = np.repeat(np.arange(R, dtype=np.int32), per_rank)
    # per-rank start skew (data wait); in a step in flight the ranks start in `order`
    start = rng.integers(0, skew, size=rows, dtype=np.int64)
    fly_slot = np.full(N, -1, np.int64)
    fly_order = np.zeros((max(len(in_flight), 1), R), np.int64)
    for slot, (i, order, _) in enumerate(in_flight):
        fly_slot[i] = slot
        fly_order[slot] = order
    fly = fly_slot[inst] >= 0
    fi = np.flatnonzero(fly)
    start[fi] = fly_order[fly_slot[inst[fi]], rank[fi]] * spacing
    start += i_T[inst]
    step_end = (i_T + i_D)[inst]
    att = i_att[inst]
    step = i_k[inst]
    steps_table = pa.Table.from_arrays([
        _string_column("step", rows),
        pa.array(att, pa.int32()),
        pa.array(rank, pa.int32()),
        pa.array(start, pa.int64()),
        pa.array(step_end, pa.int64(), mask=fly) if fi.size else pa.array(step_end, pa.int64()),
        pa.array(step, pa.int64()),
        pa.nulls(rows, pa.int64()),
        pa.nulls(rows, pa.int64()),
        pa.nulls(rows, pa.bool_()),
        pa.nulls(rows, pa.string()),
        pa.array(np.full(rows, tokens, np.int64), pa.int64()),
    ], schema=lifecycle_schema())
    return pa.concat_tables([head, steps_table])



# =========================================================================== fleets
#
# A fleet of jobs over weeks (DESIGN §7): the scheduler's jobs table and each job's
# lifecycle. The model is documented in docs/fleet.md ("A synthetic fleet").

DEFAULT_FLEET_START_NS = 1_704_067_200 * 10**9  # 2024-01-01T00:00:00Z
#: The sacct fields :meth:`SyntheticFleet.sacct_text` writes.
FLEET_SACCT_FIELDS = ("JobID|Cluster|Partition|Account|User|State|ExitCode|Restarts|Submit|Eligible|Start|End|"
                      "NNodes|AllocTRES")


@dataclass
class SyntheticFleet:
    """A synthetic fleet: see :func:`fleet`.

    Attributes
    ----------
    jobs : pyarrow.Table
        The scheduler's jobs (``pau.readers.JOBS_SCHEMA``), one row per job, in submit order.
    lifecycle : pyarrow.Table
        The lifecycles of the profiled jobs (``pau.readers.JOB_LIFECYCLE_SCHEMA``: each
        job its own lineage), sorted by job.
    profiled : numpy.ndarray
        Per row of ``jobs``, whether the job has a run (its lifecycle).
    params : dict
        The arguments of :func:`fleet`.
    """

    jobs: pa.Table
    lifecycle: pa.Table
    profiled: np.ndarray
    params: dict

    def sacct_text(self) -> str:
        """The jobs as ``sacct --parsable2`` prints them (UTC times, whole seconds;
        fields :data:`FLEET_SACCT_FIELDS`): ``pau.readers.read_sacct_jobs(..., tz="UTC")``
        reads back :attr:`jobs`."""
        j = self.jobs

        def times(col: str) -> list[str]:
            return list(np.datetime_as_string(np.asarray(j[col], np.int64).astype("datetime64[ns]"), unit="s"))

        n = np.asarray(j["accelerators"], np.float64).astype(np.int64)
        tres = [f"cpu={8 * g},gres/gpu={g},gres/gpu:{t}={g}" for g, t in zip(n.tolist(), j["accelerator_type"].to_pylist())]
        cols = [j["job"].to_pylist(), j["cluster"].to_pylist(), j["partition"].to_pylist(), j["team"].to_pylist(),
                j["user"].to_pylist(), j["state"].to_pylist(), [f"{c}:0" for c in j["exit_code"].to_pylist()],
                [str(r) for r in j["restarts"].to_pylist()], times("submit_ns"), times("eligible_ns"),
                times("start_ns"), times("end_ns"), [str(x) for x in j["nodes"].to_pylist()], tres]
        return "\n".join([FLEET_SACCT_FIELDS, *("|".join(r) for r in zip(*cols))]) + "\n"

    def write(self, folder: PathLike, *, sacct: bool = True, runs: bool = True) -> dict[str, int]:
        """Write the fleet's records as a user's files would be: ``sacct/jobs.txt`` (the
        jobs, :meth:`sacct_text`) and, per profiled job, ``runs/<cluster>/<job>/`` in pau's
        run layout (its lifecycle, and ``job``, ``cluster``, ``accelerators`` and the
        accelerator's model in the metadata): ``pau ingest FOLDER`` reads both. Returns the
        counts written (``jobs``, ``runs``)."""
        out = os.fspath(folder)
        done = {"jobs": 0, "runs": 0}
        if sacct:
            os.makedirs(os.path.join(out, "sacct"), exist_ok=True)
            with open(os.path.join(out, "sacct", "jobs.txt"), "w") as f:
                f.write(self.sacct_text())
            done["jobs"] = self.jobs.num_rows
        if not runs or self.lifecycle.num_rows == 0:
            return done
        lc = self.lifecycle
        names = np.asarray(lc["job"].to_numpy(zero_copy_only=False))
        cut = np.flatnonzero(names[1:] != names[:-1]) + 1
        bounds = np.concatenate([[0], cut, [names.size]])
        info = {job: (c, int(a), t) for job, c, a, t in zip(self.jobs["job"].to_pylist(), self.jobs["cluster"].to_pylist(),
                                                             self.jobs["accelerators"].to_pylist(),
                                                             self.jobs["accelerator_type"].to_pylist())}
        body = lc.drop(["job"])
        columns = body.column_names
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):  # one folder per run: a loop per file
            job = str(names[a])
            cluster, acc, atype = info[job]
            path = os.path.join(out, "runs", cluster, job)
            os.makedirs(path, exist_ok=True)
            pq.write_table(body.slice(a, b - a), os.path.join(path, "lifecycle.parquet"))
            doc = {"pau_run_layout": 1, "tables": {"lifecycle": columns}, "warnings": [],
                   "metadata": {"format": "synthetic", "job": job, "cluster": cluster, "accelerators": acc,
                                "accelerator_model": atype}}
            with open(os.path.join(path, "pau-run.json"), "w") as f:
                json.dump(doc, f, indent=1, sort_keys=True)
                f.write("\n")
            done["runs"] += 1
        return done


def _lognormal_s(rng: np.random.Generator, median_s: float, sigma: float, n: int) -> np.ndarray:
    return np.exp(rng.normal(math.log(median_s), sigma, n))


def fleet(
    jobs: int = 100_000,
    *,
    seed: int = 0,
    clusters: tuple[str, ...] = ("east", "west", "lab"),
    accelerator_types: tuple[str, ...] = ("H100", "A100", "MI300X"),
    cluster_weights: tuple[float, ...] | None = None,
    teams: int = 12,
    users_per_team: int = 5,
    days: float = 28.0,
    start_ns: int = DEFAULT_FLEET_START_NS,
    mean_log2_accelerators: float = 1.5,
    max_accelerators: int = 4096,
    accelerators_per_node: int = 8,
    length_median_h: float = 2.0,
    length_sigma: float = 1.2,
    max_length_h: float = 336.0,
    failures_per_accelerator_hour: float = 3e-5,
    checkpoint_every_h: float | None = 1.0,
    checkpoint_cost_s: int = 30,
    init_s: int = 300,
    reinit_s: int = 120,
    restore_s: int = 60,
    outage_s: int = 300,
    max_attempts: int = 20,
    queue_median_s: float = 300.0,
    queue_sigma: float = 1.5,
    profiled: float = 0.1,
) -> SyntheticFleet:
    """A synthetic fleet of ``jobs`` training jobs: the scheduler's jobs table and the
    lifecycle of the profiled ones (``docs/fleet.md``, "A synthetic fleet").

    Every time is a whole second. Jobs arrive uniformly over ``days`` from ``start_ns``
    (a Poisson process), each on a cluster (``cluster_weights``, default equal) whose
    accelerators are ``accelerator_types[k]`` (cycled), for a team (Zipf weights: team
    ``t`` ∝ 1/(t+1)) and one of its users. Size: ``2**k`` accelerators, ``k`` geometric
    with mean ``mean_log2_accelerators`` capped at ``log2(max_accelerators)`` (a power law
    in the count: heavy-tailed). Work: log-normal seconds (median ``length_median_h``,
    ``length_sigma``), from 60 s to ``max_length_h``, cut in equal segments of at most
    ``checkpoint_every_h`` each followed by a blocking checkpoint of ``checkpoint_cost_s``
    (durable when it ends; None: no checkpoint, a failure loses all the work). Queue:
    log-normal (``queue_median_s``, ``queue_sigma``) from submit to start (no capacity
    model). Each attempt begins with ``init_s`` (later ones ``reinit_s``, then a restore of
    ``restore_s`` from the last durable checkpoint) and fails after an exponential time of
    rate ``failures_per_accelerator_hour × accelerators`` (Poisson failures per
    accelerator-hour); the next attempt starts ``outage_s`` later. After ``max_attempts``
    failed attempts the job ends ``FAILED``. The Slurm job spans every attempt: its
    allocation is accelerators × (end of the last attempt − start of the first).
    ``profiled``: the share of jobs with a run (their lifecycle); the others are jobs with
    no run. Deterministic by ``seed``; vectorised over jobs (a loop over attempt numbers).
    """
    params = dict(locals())
    if jobs < 0:
        raise ValueError(f"fleet: jobs = {jobs}: expected a count")
    if max_accelerators < 1 or max_accelerators & (max_accelerators - 1):
        raise ValueError(f"fleet: max_accelerators = {max_accelerators}: expected a power of two")
    if not clusters or not accelerator_types or teams < 1 or users_per_team < 1:
        raise ValueError("fleet: give at least one cluster, accelerator type, team and user")
    rng = np.random.default_rng(seed)
    n = int(jobs)
    w = np.full(len(clusters), 1 / len(clusters)) if cluster_weights is None else np.asarray(cluster_weights, float)
    if w.shape != (len(clusters),) or (w < 0).any() or w.sum() <= 0:
        raise ValueError("fleet: cluster_weights: one non-negative weight per cluster")
    cl = rng.choice(len(clusters), size=n, p=w / w.sum())
    tw = 1.0 / np.arange(1, teams + 1)
    team = rng.choice(teams, size=n, p=tw / tw.sum())
    user = team * users_per_team + rng.integers(0, users_per_team, n)
    maxk = int(max_accelerators).bit_length() - 1
    lg = np.minimum(rng.geometric(1.0 / (1.0 + mean_log2_accelerators), n) - 1, maxk)
    acc = np.left_shift(np.int64(1), lg.astype(np.int64))
    work = np.clip(np.round(_lognormal_s(rng, length_median_h * 3_600, length_sigma, n)), 60,
                   max(60, int(max_length_h * 3_600))).astype(np.int64)
    if checkpoint_every_h:
        every = max(1, int(round(checkpoint_every_h * 3_600)))
        nseg = np.maximum(1, -(-work // every))
        cost = int(checkpoint_cost_s)
    else:
        nseg, cost = np.ones(n, np.int64), 0
    seg = np.maximum(1, work // nseg)
    period = seg + cost
    submit = np.sort(rng.integers(0, max(1, int(days * 86_400)), n)).astype(np.int64)
    queue = np.round(_lognormal_s(rng, queue_median_s, queue_sigma, n)).astype(np.int64)
    start = submit + queue
    rate = failures_per_accelerator_hour * acc / 3_600.0  # failures per second
    prof = rng.random(n) < profiled

    t = start.copy()
    done = np.zeros(n, np.int64)
    end = np.zeros(n, np.int64)
    attempts = np.zeros(n, np.int64)
    active = np.ones(n, bool)
    ok = np.zeros(n, bool)
    rows: dict[str, list[np.ndarray]] = {k: [] for k in ("record", "job", "attempt", "start", "end", "step",
                                                         "durable", "kind")}

    def emit(record: str, job, attempt, s, e, step=None, durable=None, kind=None) -> None:
        m = np.asarray(job).size
        rows["record"].append(np.full(m, record, object))
        rows["job"].append(np.asarray(job, np.int64))
        rows["attempt"].append(np.broadcast_to(np.asarray(attempt, np.int64), (m,)))
        rows["start"].append(np.asarray(s, np.int64))
        rows["end"].append(np.asarray(e, np.int64))
        rows["step"].append(np.full(m, _NULL, np.int64) if step is None else np.asarray(step, np.int64))
        rows["durable"].append(np.full(m, _NULL, np.int64) if durable is None else np.asarray(durable, np.int64))
        rows["kind"].append(np.full(m, None, object) if kind is None else np.asarray(kind, object))

    for a in range(max_attempts):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        setup = init_s if a == 0 else reinit_s
        restores = (done[idx] > 0) & (a > 0)
        w0 = t[idx] + setup + np.where(restores, restore_s, 0)
        left = nseg[idx] - done[idx]
        finish = w0 + left * period[idx]
        with np.errstate(divide="ignore"):
            ttf = np.where(rate[idx] > 0, rng.exponential(1.0, idx.size) / np.maximum(rate[idx], 1e-300), np.inf)
        fail = t[idx] + np.maximum(1, np.ceil(np.minimum(ttf, 1e15))).astype(np.int64)
        fails = fail < finish
        att_end = np.where(fails, fail, finish)
        ran = np.maximum(att_end - w0, 0)
        durable = np.where(fails, np.minimum(ran // period[idx], left), left)
        emitted = np.where(fails, np.minimum(-(-ran // period[idx]), left), left)
        p = prof[idx]
        if p.any():
            j, ts, te, base = idx[p], t[idx][p], att_end[p], done[idx][p]
            emit("attempt", j, a, ts, te, kind=np.where(fails[p], "failed", "completed"))
            emit("phase", j, a, ts, ts + setup, kind=np.full(j.size, "init", object))
            r = restores[p] & (ts + setup < te)
            emit("restore", j[r], a, (ts + setup)[r], (ts + setup + restore_s)[r], step=base[r])
            k = emitted[p]
            row = np.repeat(np.arange(j.size), k)
            i = np.arange(row.size) - np.repeat(np.cumsum(k) - k, k)
            s0 = w0[p][row] + i * period[j][row]
            emit("step", j[row], a, s0, s0 + seg[j][row], step=base[row] + i + 1)
            if cost:
                c0 = s0 + seg[j][row]
                c = c0 < te[row]
                c1 = c0 + cost
                emit("checkpoint_save", j[row][c], a, c0[c], c1[c], step=(base[row] + i + 1)[c],
                     durable=np.where(c1 <= te[row], c1, _NULL)[c])
        done[idx] += durable
        attempts[idx] = a + 1
        end[idx] = att_end
        fin = idx[~fails]
        ok[fin] = True
        active[fin] = False
        t[idx[fails]] = fail[fails] + outage_s
    dur_ns = (end - start) * _S
    if n and float(acc.max()) * float(dur_ns.max()) >= 2**63:
        raise ValueError("fleet: a job's allocation passes int64 ns: lower max_accelerators or max_length_h")
    ns = lambda x: start_ns + x * _S  # noqa: E731
    jobs_t = pa.table({
        "job": pa.array((np.arange(n) + 1_000_000).astype(str), pa.string()),
        "cluster": pa.array(np.asarray(clusters, object)[cl], pa.string()),
        "scheduler": pa.array(np.full(n, "slurm", object), pa.string()),
        "user": pa.array(np.char.add("user", user.astype(str)).astype(object), pa.string()),
        "team": pa.array(np.char.add("team", np.char.zfill(team.astype(str), 2)).astype(object), pa.string()),
        "partition": pa.array(np.full(n, "gpu", object), pa.string()),
        "state": pa.array(np.where(ok, "COMPLETED", "FAILED").astype(object), pa.string()),
        "exit_code": pa.array(np.where(ok, 0, 1).astype(np.int32)),
        "restarts": pa.array((attempts - 1).astype(np.int32)),
        "submit_ns": pa.array(ns(submit)), "eligible_ns": pa.array(ns(submit)),
        "start_ns": pa.array(ns(start)), "end_ns": pa.array(ns(end)),
        "accelerators": pa.array(acc.astype(np.float64)),
        "accelerator_type": pa.array(np.asarray(accelerator_types, object)[cl % len(accelerator_types)], pa.string()),
        "nodes": pa.array((-(-acc // accelerators_per_node)).astype(np.int32)),
        "queue_ns": pa.array(queue * _S), "allocated_accelerator_ns": pa.array(acc * dur_ns),
    }, schema=JOBS_SCHEMA)
    lifecycle = _fleet_lifecycle(rows, prof, acc, start, end, ns, jobs_t["job"])
    return SyntheticFleet(jobs_t, lifecycle, prof, params)


def _fleet_lifecycle(rows: dict, prof: np.ndarray, acc: np.ndarray, start: np.ndarray, end: np.ndarray, ns,
                     names: pa.ChunkedArray) -> pa.Table:
    """The rows emitted, with an ``accountable`` row per rank of each profiled job (its
    first attempt's start to its last one's end), sorted by job then start."""
    pj = np.flatnonzero(prof)
    reps = acc[pj]
    aj = np.repeat(pj, reps)
    rank = np.arange(aj.size) - np.repeat(np.cumsum(reps) - reps, reps)
    if not rows["job"]:
        cols = {k: np.zeros(0, np.int64) for k in ("job", "attempt", "start", "end", "step", "durable")}
        cols.update(record=np.zeros(0, object), kind=np.zeros(0, object))
    else:
        cols = {k: np.concatenate(v) for k, v in rows.items()}
    m = cols["job"].size
    job = np.concatenate([aj, cols["job"]])
    record = np.concatenate([np.full(aj.size, "accountable", object), cols["record"]])
    attempt = np.concatenate([np.full(aj.size, _NULL, np.int64), cols["attempt"]])
    rk = np.concatenate([rank, np.full(m, -1, np.int64)])
    s = np.concatenate([start[aj], cols["start"]])
    e = np.concatenate([end[aj], cols["end"]])
    step = np.concatenate([np.full(aj.size, _NULL, np.int64), cols["step"]])
    durable = np.concatenate([np.full(aj.size, _NULL, np.int64), cols["durable"]])
    kind = np.concatenate([np.full(aj.size, None, object), cols["kind"]])
    order = np.lexsort((rk, s, job))
    job, record, attempt, rk, s, e, step, durable, kind = (x[order] for x in (job, record, attempt, rk, s, e, step,
                                                                             durable, kind))
    ckpt = record == "checkpoint_save"
    nul = lambda x: pa.array(x, pa.int64(), mask=x == _NULL)  # noqa: E731
    return pa.table({
        "record": pa.array(record, pa.string()),
        "attempt": pa.array(np.where(attempt == _NULL, 0, attempt).astype(np.int32), mask=attempt == _NULL),
        "rank": pa.array(rk.astype(np.int32)),
        "start_ns": pa.array(ns(s)), "end_ns": pa.array(ns(e)),
        "step": nul(step),
        "block_end_ns": pa.array(ns(e), mask=~ckpt),
        "durable_ns": pa.array(np.where(durable == _NULL, 0, ns(np.where(durable == _NULL, 0, durable))),
                               mask=durable == _NULL),
        "ok": pa.nulls(job.size, pa.bool_()),
        "kind": pa.array(kind, pa.string()),
        "tokens": pa.nulls(job.size, pa.int64()),
        "job": names.combine_chunks().take(pa.array(job, pa.int64())) if job.size else pa.array([], pa.string()),
    }, schema=JOB_LIFECYCLE_SCHEMA)
