"""Seeded synthetic multi-rank training timelines: the **events** table of DESIGN §2.1.

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import pyarrow as pa

from pau.errors import OptionError
from pau.synth._common import (
    _K,
    COMMUNICATION_STREAM,
    COMPUTE_STREAM,
    COPY_STREAM,
    DEFAULT_BUCKETS,
    DEFAULT_KERNELS_PER_STEP,
    DEFAULT_START_NS,
    KINDS,
    Straggler,
    int_at_least,
)

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


def events_schema(names: bool = False) -> pa.Schema:
    """The schema of the events tables :mod:`pau.synth` produces.

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


def _split_kernels(kernels_per_step: object, buckets: object) -> tuple[int, int, int, int]:
    """Forward, backward and optimizer kernels, and buckets, of a step (checked)."""
    k, b = int_at_least(kernels_per_step), int_at_least(buckets)
    if k is None:
        raise OptionError(f"kernels_per_step must be an int, got {kernels_per_step!r}")
    if b is None:
        raise OptionError(f"buckets must be an int, got {buckets!r}")
    if k < 3:
        raise OptionError(f"kernels_per_step must be >= 3 (forward, backward, optimizer), got {k}")
    n_opt = max(1, k // 32)
    rest = k - n_opt
    n_fwd = max(1, rest // 3)
    n_bwd = rest - n_fwd
    if not 1 <= b <= n_bwd:
        raise OptionError(f"buckets must be between 1 and the number of backward kernels "
                          f"({n_bwd} for kernels_per_step={k}), got {b}")
    return n_fwd, n_bwd, n_opt, b


def _straggler(straggler: Any, ranks: int) -> tuple[int, float]:
    """(rank, factor) of a straggler, (-1, 1.0) for none."""
    if straggler is None:
        return -1, 1.0
    try:
        s_rank_in, s_factor_in = straggler
    except (TypeError, ValueError):
        raise OptionError(f"straggler must be None or a (rank, slowdown factor) pair, "
                          f"got {straggler!r}") from None
    if s_rank_in is None:
        return -1, 1.0
    s_rank = int_at_least(s_rank_in, 0)
    if s_rank is None or s_rank >= ranks:
        raise OptionError(f"straggler rank must be in [0, {ranks}), got {s_rank_in!r}")
    try:
        s_factor = float(s_factor_in)
    except (TypeError, ValueError):
        s_factor = math.nan
    if not (math.isfinite(s_factor) and s_factor > 0):
        raise OptionError(f"straggler factor must be a positive number, got {s_factor_in!r}")
    return s_rank, s_factor


def _plan(ranks: object, kernels_per_step: object, buckets: object, seed: object, straggler: Straggler,
          start_ns: object, names: bool) -> _Plan:
    r, sd, t0 = int_at_least(ranks, 1), int_at_least(seed, 0), int_at_least(start_ns, 0)
    if r is None:
        raise OptionError(f"ranks must be a positive int, got {ranks!r}")
    if r > np.iinfo(np.int32).max:
        raise OptionError("ranks must fit in int32")
    if sd is None:
        raise OptionError(f"seed must be a non-negative int, got {seed!r}")
    if t0 is None:
        raise OptionError(f"start_ns must be a non-negative int (nanoseconds), got {start_ns!r}")
    n_fwd, n_bwd, n_opt, b = _split_kernels(kernels_per_step, buckets)
    s_rank, s_factor = _straggler(straggler, r)
    return _Plan(r, n_fwd, n_bwd, n_opt, b, sd, s_rank, s_factor, t0, bool(names))


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
    out: np.ndarray = np.maximum(np.rint(x), 1).astype(np.int64)
    return out


def _lognormal(rng: np.random.Generator, median: float, sigma: float, shape: tuple[int, ...]) -> np.ndarray:
    z = rng.standard_normal(shape, dtype=np.float32)
    z *= np.float32(sigma)
    out: np.ndarray = np.exp(z, out=z) * np.float32(median)
    return out


@dataclass
class _Draws:
    """The random draws of one block, cut to its steps: per (rank, step) unless said."""

    dwait: np.ndarray
    h2d: np.ndarray
    memset_on: np.ndarray
    memset: np.ndarray
    fb: np.ndarray           # (R, S, n_fb): forward and backward kernels
    gaps: np.ndarray         # (R, S, n_fb + n_opt): launch gaps and host stalls
    comm: np.ndarray         # (S, buckets): the collectives, common to every rank
    comm_launch: np.ndarray  # (R, S, buckets)
    opt: np.ndarray          # (R, S, n_opt)
    other_on: np.ndarray
    other: np.ndarray
    sync: np.ndarray


def _draws(p: _Plan, m: _Model, block: int, n_steps: int) -> _Draws:
    """Block ``block``'s draws, always the same sequence whatever the straggler. They
    always cover a whole block (then are cut to ``n_steps``): a run is a prefix of any
    longer run with the same seed."""
    rng = np.random.default_rng([p.seed, 1, block])
    R, B, nb = p.ranks, p.block_steps, p.buckets
    shape = (R, B)
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
    S = n_steps
    if S < B:
        dwait, h2d, memset_on, memset, fb, gaps, comm_launch, opt, other_on, other, sync = (
            a[:, :S] for a in (dwait, h2d, memset_on, memset, fb, gaps, comm_launch, opt,
                               other_on, other, sync))
        comm = comm[:S]
    if p.straggler_rank >= 0:
        f = np.float32(p.straggler_factor)
        fb[p.straggler_rank] *= f
        opt[p.straggler_rank] *= f
    return _Draws(dwait, h2d, memset_on, memset, fb, gaps, comm, comm_launch, opt, other_on, other, sync)


def _rank_local(p: _Plan, m: _Model, d: _Draws, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fill the slots of each rank's own part of a step: up to the collectives relative to
    the step start, from the optimizer on relative to the end of the step's last collective.
    Returns the bucket launches (R, S, buckets), relative to the step start, and the tails
    (step end - last collective end, (R, S))."""
    i_fb, i_comm = 2, 2 + p.n_fb
    i_opt = i_comm + p.buckets
    i_other, i_sync = i_opt + p.n_opt, i_opt + p.n_opt + 1
    dw = _ns(d.dwait)
    cp_end = dw + _ns(d.h2d)
    start[..., 0], end[..., 0] = dw, cp_end
    ms_start = dw + np.int64(_MEMSET_LAUNCH)
    ms_end = ms_start + _ns(d.memset)
    start[..., 1], end[..., 1] = ms_start, ms_end
    fwd0 = np.maximum(cp_end, np.where(d.memset_on, ms_end, 0))
    dur = _ns(d.fb)
    g = _ns(d.gaps)
    ends = np.cumsum(g[..., : p.n_fb] + dur, axis=2)
    ends += fwd0[..., None]
    end[..., i_fb:i_comm] = ends
    start[..., i_fb:i_comm] = ends - dur
    launch = ends[..., m.launch] + _ns(d.comm_launch)  # (R, S, nb)

    odur = _ns(d.opt)
    og = g[..., p.n_fb:]
    og[..., 0] += np.int64(_OPT_LAUNCH)
    oends = np.cumsum(og + odur, axis=2)
    end[..., i_opt:i_other] = oends
    start[..., i_opt:i_other] = oends - odur
    o_start = oends[..., -1] + np.int64(_GAP_MEDIAN)
    o_end = o_start + _ns(d.other)
    start[..., i_other], end[..., i_other] = o_start, o_end
    s_start = np.where(d.other_on, o_end, oends[..., -1]) + np.int64(_GAP_MEDIAN)
    tail = s_start + _ns(d.sync)  # step end - last collective end
    start[..., i_sync], end[..., i_sync] = s_start, tail
    return launch, tail


def _collectives(u: np.ndarray, comm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Synchronizing collectives, the only coupling between ranks: from the launches
    ``u`` (R, S, buckets; relative to the end of the previous step's last collective),
    each bucket's end (S, buckets; common to every rank) and start on each rank."""
    R, S, nb = u.shape
    arrive = u.max(axis=0)                     # (S, nb): last rank to launch each bucket
    cdur = _ns(comm)
    cend = np.empty((S, nb), np.int64)
    cstart = np.empty((R, S, nb), np.int64)
    cend[:, 0] = arrive[:, 0] + cdur[:, 0]
    cstart[..., 0] = u[..., 0]
    for j in range(1, nb):
        cend[:, j] = np.maximum(arrive[:, j], cend[:, j - 1]) + cdur[:, j]
        cstart[..., j] = np.maximum(u[..., j], cend[None, :, j - 1])
    return cend, cstart


def _generate_block(p: _Plan, m: _Model, x0: int, tail0: np.ndarray, s0: int, n_steps: int,
                    block: int) -> tuple[dict[str, np.ndarray], int, np.ndarray]:
    """Steps ``s0 .. s0+n_steps`` for all ranks.

    ``x0`` is the end of the previous step's last collective (common to all ranks) and
    ``tail0[r]`` the end of rank r's previous step relative to ``x0``. Returns numpy
    columns (rank-major, sorted by start within each rank) and the new state.
    """
    d = _draws(p, m, block, n_steps)
    R, S, nb, E = p.ranks, n_steps, p.buckets, p.slots
    i_comm = 2 + p.n_fb
    i_opt, i_other = i_comm + nb, i_comm + nb + p.n_opt
    start = np.empty((R, S, E), np.int64)
    end = np.empty((R, S, E), np.int64)
    launch, tail = _rank_local(p, m, d, start, end)

    # A[r, s]: start of step s of rank r relative to the end of step s-1's last collective.
    A = np.empty((R, S), np.int64)
    A[:, 0] = tail0
    A[:, 1:] = tail[:, :-1]
    cend, cstart = _collectives(launch + A[..., None], d.comm)  # launches relative to that instant
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
    start[..., 1][~d.memset_on] = _INT64_MAX
    start[..., i_other][~d.other_on] = _INT64_MAX
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


def _table(p: _Plan, m: _Model | None, cols: dict[str, np.ndarray]) -> pa.Table:  # m: None without names
    kind = pa.DictionaryArray.from_arrays(pa.array(cols["kind"], pa.int8()),
                                          pa.array(KINDS, pa.string()))
    arrays = [pa.array(cols["rank"], pa.int32()), pa.array(cols["stream"], pa.int32()),
              pa.array(cols["start_ns"], pa.int64()), pa.array(cols["end_ns"], pa.int64()), kind]
    if p.names:
        assert m is not None
        arrays.append(pa.array(m.slot_name, pa.string()).take(pa.array(cols["slot"])))
    arrays.append(pa.array(cols["step"], pa.int64()))
    return pa.Table.from_arrays(arrays, schema=events_schema(p.names))


def _chunks(p: _Plan, steps_in: object, chunk_events: object) -> Iterator[pa.Table]:
    steps = int_at_least(steps_in, 0)
    if steps is None:
        raise OptionError(f"steps must be a non-negative int, got {steps_in!r}")
    m = _model(p)
    bs = p.block_steps
    if chunk_events is None:
        chunk_blocks = max(1, -(-steps // bs))
    else:
        ce = int_at_least(chunk_events, 1)
        if ce is None:
            raise OptionError(f"chunk_events must be a positive int, got {chunk_events!r}")
        chunk_blocks = max(1, ce // (bs * p.ranks * p.slots))
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


def _rank_major(parts: list[dict[str, np.ndarray]], R: int) -> dict[str, np.ndarray]:
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
    if int_at_least(n_events, 0) is None:
        raise OptionError(f"n_events must be a non-negative int, got {n_events!r}")
    per_step = expected_events(ranks, 1, kernels_per_step=kernels_per_step, buckets=buckets)
    return max(1, int(round(n_events / per_step)))


def training_run_for_events(
    n_events: int,
    *,
    ranks: int = 8,
    seed: int = 0,
    **kwargs: Any,
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
