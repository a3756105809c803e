"""Large lifecycle tables (DESIGN §2.2) for throughput benchmarks.

:func:`lifecycle_records` makes large tables for throughput benchmarks, fully vectorized
(10 million step rows in about 1 s): ``ranks`` ranks, ``attempts`` attempts (all but
the last fail), per-rank ``step`` rows with a per-rank start skew (up to 20 ms of data wait)
and a common end, checkpoint shards per rank (durable 20 s after blocking; a checkpoint is
durable when its last shard is), a restore of the newest durable checkpoint in each
later attempt, and exactly ``n_step_records`` step rows (the remainder modulo ``ranks`` is
the step in flight on some ranks when the first attempt fails). Draws from ``[seed, 3]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from pau.errors import OptionError
from pau.synth._common import (
    _LC_SIGMA,
    _LC_STEP_SIGMA,
    _NULL,
    _S,
    _SINGLE_FAILURES,
    DEFAULT_START_NS,
    Cols,
    check_int,
    check_int_or_none,
    check_seconds,
    dur,
    lifecycle_schema,
)


def _string_column(value: str, n: int) -> pa.Array:
    """``n`` copies of one string, built from buffers (no Python objects); the caller
    checked that the offsets fit in int32."""
    b = value.encode()
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
    vectorized (10 million step rows in about a second). See the module docstring for
    the model.

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
    n = check_int("n_step_records", n_step_records, 0)
    R = check_int("ranks", ranks, 1)
    A = check_int("attempts", attempts, 1)
    seed = check_int("seed", seed, 0)
    every = check_int_or_none("checkpoint_every", checkpoint_every, 1)
    step_s = check_seconds("step_time_s", step_time_s, positive=True)
    tokens = check_int("tokens_per_step", tokens_per_step, 0)
    start_ns = check_int("start_ns", start_ns, 0)
    if R > np.iinfo(np.int32).max or A > np.iinfo(np.int32).max:
        raise OptionError("ranks and attempts must fit in int32")
    if (n + 1) * len(b"step") > np.iinfo(np.int32).max:
        raise OptionError(f"lifecycle_records: n_step_records = {n}: too many rows for a string column "
                          f"(at most {np.iinfo(np.int32).max // 4 - 1})")
    rng = np.random.default_rng([seed, 3])
    started, counts, n_failed = _layout(rng, n, R, A)
    skew = max(R, 20_000_000)            # per-rank start skew of a step (data wait), < 20 ms
    out = Cols()
    out.add("accountable", R, rank=np.arange(R), start_ns=start_ns, end_ns=0)  # end set below
    inst = _Instances()
    t = end = start_ns
    good: list[tuple[int, int]] = []     # (step, attempt) of the checkpoints durable at a failure
    for a in range(A):
        end = _attempt(out, inst, rng, a, a < n_failed, int(counts[a]), int(started[a]), good, t,
                       every, step_s, R, skew)
        t = end + inst.outage
    out.parts[0]["end_ns"] = np.full(R, end, np.int64)
    return pa.concat_tables([out.table(), _step_rows(rng, inst, R, n, tokens, skew)])


def _layout(rng: np.random.Generator, n: int, R: int, A: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The ranks that started the step in flight at each attempt's failure (attempt 0
    takes the leftover ``n % R``, later failed attempts all R as long as there are rows
    for it, else none), the steps each attempt completes, and how many attempts fail."""
    Q, m = divmod(n, R)
    n_failed = A - 1 if A > 1 else int(m > 0)
    started = np.zeros(A, np.int64)
    if n_failed:
        started[0] = m
        full = min(n_failed - 1, Q)
        started[1:1 + full] = R
    complete = Q - int((started == R).sum())
    counts = rng.multinomial(complete, rng.dirichlet(np.ones(A)))
    return started, counts, n_failed


@dataclass
class _Instances:
    """The step instances of every attempt (in time order), the steps in flight at the
    failures, and the outage after the last attempt made."""

    att: list[np.ndarray] = field(default_factory=list)
    k: list[np.ndarray] = field(default_factory=list)
    T: list[np.ndarray] = field(default_factory=list)
    D: list[np.ndarray] = field(default_factory=list)
    in_flight: list[tuple[int, np.ndarray, int]] = field(default_factory=list)  # (instance, rank order, started)
    n: int = 0
    outage: int = 0


def _attempt(out: Cols, inst: _Instances, rng: np.random.Generator, a: int, fails: bool, c: int, s_: int,
             good: list[tuple[int, int]], t: int, every: int | None, step_s: float, R: int, skew: int) -> int:
    """Attempt ``a`` from ``t``: its records other than steps into ``out``, its step
    instances into ``inst``. Returns its end."""
    init_d = int(dur(rng, 30.0, _LC_SIGMA))
    restore_d = int(dur(rng, 10.0, _LC_SIGMA))
    inst.outage = int(np.rint(rng.exponential(120.0) * _S))
    base, writer = max(good) if good else (0, None)
    k = np.arange(base + 1, base + c + int(fails) + 1, dtype=np.int64)
    D = np.maximum(dur(rng, step_s, _LC_STEP_SIGMA, k.size), 2 * skew)
    is_save = ((k % every == 0) if every else np.zeros(k.size, bool))
    is_save[c:] = False                       # no save after the step in flight
    blk = np.where(is_save, dur(rng, 2.0, _LC_SIGMA, k.size), 0)
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
    f = None
    if fails:
        # the failure hits step k[c] after `s_` ranks (in a random order) started it
        order = rng.permutation(R)
        f = int(T[c]) + (s_ - 1) * (skew // R) + 1 if s_ else int(T[c])
        if s_ == R:
            f += int(rng.integers(0, D[c] - skew))
        inst.in_flight.append((inst.n + c, order, s_))
        end = f
    j = np.flatnonzero(is_save)
    if j.size:
        end = _saves(out, rng, a, k[j], T[j] + D[j], blk[j], f, good, end, R)
    out.parts[att_row]["end_ns"] = np.array([end], np.int64)
    if f is not None:
        out.add("failure", 1, attempt=a + 1, rank=int(rng.integers(R)), start_ns=f,
                kind=_SINGLE_FAILURES[a % len(_SINGLE_FAILURES)])
    inst.att.append(np.full(k.size, a + 1, np.int32))
    inst.k.append(k)
    inst.T.append(T)
    inst.D.append(D)
    inst.n += k.size
    return end


def _saves(out: Cols, rng: np.random.Generator, a: int, steps: np.ndarray, cstart: np.ndarray, blk: np.ndarray,
           f: int | None, good: list[tuple[int, int]], end: int, R: int) -> int:
    """Attempt ``a``'s checkpoints, one shard row per rank, each durable 20 s (median)
    after blocking; the ones durable at the failure ``f`` into ``good``. Returns the
    attempt's end (a completed attempt ends when its last shard is durable)."""
    cblock = cstart + blk
    delay = dur(rng, 20.0, _LC_SIGMA, (steps.size, R))
    at = cblock[:, None] + delay
    if f is not None:
        ok = at <= f
        durable = np.where(ok, at, _NULL)
        good.extend((int(x), a) for x in steps[ok.all(axis=1)])
    else:
        ok = np.ones(at.shape, bool)
        durable = at
        end = max(end, int(at.max()))
    out.add("checkpoint_save", steps.size * R, attempt=a + 1, rank=np.tile(np.arange(R), steps.size),
            step=np.repeat(steps, R), start_ns=np.repeat(cstart, R),
            block_end_ns=np.repeat(cblock, R), durable_ns=durable.ravel(),
            ok=ok.ravel().astype(np.int8))
    return end


def _step_rows(rng: np.random.Generator, inst: _Instances, R: int, n: int, tokens: int, skew: int) -> pa.Table:
    """The step rows, rank-major: row (r, i) = rank r, instance i; ranks that had not
    started a step in flight when the failure hit have no row for it."""
    i_att = np.concatenate(inst.att) if inst.att else np.empty(0, np.int32)
    i_k = np.concatenate(inst.k) if inst.k else np.empty(0, np.int64)
    i_T = np.concatenate(inst.T) if inst.T else np.empty(0, np.int64)
    i_D = np.concatenate(inst.D) if inst.D else np.empty(0, np.int64)
    N = i_T.size
    rows_of = np.tile(np.arange(N, dtype=np.int64), R)
    excl = [np.flatnonzero(order >= s_) * N + i for i, order, s_ in inst.in_flight if s_ < R]
    if excl:
        excluded = np.sort(np.concatenate(excl))
        rows_of = np.delete(rows_of, excluded)
        per_rank = N - np.bincount(excluded // N, minlength=R)
    else:
        per_rank = np.full(R, N, np.int64)
    rows = rows_of.size
    if rows != n:  # pragma: no cover - internal invariant
        raise AssertionError(f"lifecycle_records: {rows} step rows, not {n}")
    rank = np.repeat(np.arange(R, dtype=np.int32), per_rank)
    # per-rank start skew (data wait); in a step in flight the ranks start in `order`
    start = rng.integers(0, skew, size=rows, dtype=np.int64)
    fly_slot = np.full(N, -1, np.int64)
    fly_order = np.zeros((max(len(inst.in_flight), 1), R), np.int64)
    for slot, (i, order, _) in enumerate(inst.in_flight):
        fly_slot[i] = slot
        fly_order[slot] = order
    fly = fly_slot[rows_of] >= 0
    fi = np.flatnonzero(fly)
    start[fi] = fly_order[fly_slot[rows_of[fi]], rank[fi]] * (skew // R)
    start += i_T[rows_of]
    step_end = (i_T + i_D)[rows_of]
    return pa.Table.from_arrays([
        _string_column("step", rows),
        pa.array(i_att[rows_of], pa.int32()),
        pa.array(rank, pa.int32()),
        pa.array(start, pa.int64()),
        pa.array(step_end, pa.int64(), mask=fly) if fi.size else pa.array(step_end, pa.int64()),
        pa.array(i_k[rows_of], pa.int64()),
        pa.nulls(rows, pa.int64()),
        pa.nulls(rows, pa.int64()),
        pa.nulls(rows, pa.bool_()),
        pa.nulls(rows, pa.string()),
        pa.array(np.full(rows, tokens, np.int64), pa.int64()),
    ], schema=lifecycle_schema())
