"""Seeded synthetic training jobs with checkpoints and failures: the **lifecycle** table of
DESIGN §2.2 and the device events of each executed step.

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pyarrow as pa

from pau.errors import OptionError
from pau.synth._common import (
    _CORRELATED_FAILURES,
    _K,
    _LC_SIGMA,
    _LC_STEP_SIGMA,
    _NULL,
    _S,
    _SINGLE_FAILURES,
    COPY_STREAM,
    DEFAULT_BUCKETS,
    DEFAULT_KERNELS_PER_STEP,
    DEFAULT_START_NS,
    Cols,
    Straggler,
    check_int,
    check_int_or_none,
    check_probability,
    check_seconds,
    dur,
)
from pau.synth.trace import _chunks, _plan, _table, events_schema


@dataclass
class _Attempt:
    index: int                 # 0-based; the table's attempt id is index + 1
    start: int
    members: np.ndarray        # int64 ranks
    init_end: int
    restore: Optional[tuple[int, int, int, int]]  # (step, writer index, start, end)
    k: np.ndarray              # steps run (base+1 ..), full (uncut) intervals below
    s_start: np.ndarray
    s_end: np.ndarray
    c_j: np.ndarray            # position in k of the step each save saves
    c_start: np.ndarray
    c_block: np.ndarray
    c_durable: np.ndarray      # when the save would be durable
    c_corrupt: np.ndarray
    natural_end: int
    fail: Optional[tuple[int, int, str]]  # (time, rank or -1, kind)
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
    restore: Optional[tuple[int, int, int, int, int]]  # (step, writer, start, end or NULL, ok -1/0/1)
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

    def started(x: object) -> np.ndarray:
        t = np.asarray(x)
        return ((t < end) if a.failed else np.ones(t.shape, bool)) & (t <= as_of)

    init_end = a.init_end if a.init_end <= limit else _NULL
    restore: Optional[tuple[int, int, int, int, int]] = None
    restore_cut = cut
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
    c_resolved = np.where(durable_full != _NULL, durable_full, end)
    c_ok = np.where(c_resolved > as_of, -1, (durable_full != _NULL) & ~a.c_corrupt).astype(np.int8)
    c_durable = np.where((durable_full != _NULL) & (durable_full <= as_of), durable_full, _NULL)
    return _View(running, cut, init_end, restore, restore_cut,
                 steps, s_end, saves, c_block,
                 np.minimum(a.c_block, cut), c_durable, c_ok,
                 a.fail is not None and a.fail[0] <= as_of)


@dataclass(frozen=True)
class _Config:
    """The arguments of :func:`training_job`, checked; times in seconds."""

    ranks: int
    steps: int
    seed: int
    mtbf_s: Optional[float]
    correlated: float
    checkpoint_every: Optional[int]
    checkpoint_cost_s: float
    async_checkpoint: bool
    durable_delay_s: float
    outage_s: float
    init_s: float
    reinit_s: float
    restore_s: float
    shrink_at_failure: Optional[int]
    straggler: Straggler
    step_time_s: float
    tokens_per_step: int
    corrupt_checkpoint_p: float
    per_rank_rows: bool
    as_of: Optional[int]
    kernels_per_step: int
    buckets: int
    start_ns: int
    max_attempts: int


def _simulate(cfg: _Config) -> list[_Attempt]:
    """Run the job attempt after attempt (see the module docstring)."""
    ranks, steps, every = cfg.ranks, cfg.steps, cfg.checkpoint_every
    as_of = cfg.as_of
    members = np.arange(ranks, dtype=np.int64)
    good: list[tuple[int, int]] = []  # (step, writer index) of ok checkpoints durable at a failure
    attempts: list[_Attempt] = []
    t = cfg.start_ns
    failures = 0
    for index in range(cfg.max_attempts):
        rng = np.random.default_rng([cfg.seed, 2, index])
        # draws in a fixed order, whatever they are used for
        ttf = rng.exponential(cfg.mtbf_s) if cfg.mtbf_s is not None else math.inf
        correlated = bool(rng.random() < cfg.correlated)
        fail_pos = int(rng.integers(members.size))
        fail_kind = int(rng.integers(len(_SINGLE_FAILURES) * len(_CORRELATED_FAILURES)))
        outage = int(np.rint(rng.exponential(cfg.outage_s) * _S)) if cfg.outage_s else 0
        init_d = int(dur(rng, cfg.init_s if index == 0 else cfg.reinit_s, _LC_SIGMA))
        restore_d = int(dur(rng, cfg.restore_s, _LC_SIGMA))
        base, writer = max(good) if good else (0, None)
        k = np.arange(base + 1, steps + 1, dtype=np.int64)
        n = k.size
        step_d = np.maximum(dur(rng, cfg.step_time_s, _LC_STEP_SIGMA, n), 1)
        blk = dur(rng, cfg.checkpoint_cost_s, _LC_SIGMA, n)
        delay = dur(rng, cfg.durable_delay_s, _LC_SIGMA, n) if cfg.async_checkpoint \
            else np.zeros(n, np.int64)
        corrupt = rng.random(n) < cfg.corrupt_checkpoint_p

        c = t + init_d
        restore: Optional[tuple[int, int, int, int]] = None
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
        fail: Optional[tuple[int, int, str]] = None
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
        if cfg.shrink_at_failure == failures:
            lost = fail[1] if fail[1] >= 0 else int(members.max())
            attempts[-1].lost = lost
            members = members[members != lost]
        t = end + outage
        if as_of is not None and t > as_of:
            return attempts
    raise OptionError(f"training_job: no completion within {cfg.max_attempts} attempts; the "
                      f"failures (mtbf_s={cfg.mtbf_s}) are too frequent for the job to progress")


def _job_table(atts: list[_Attempt], views: list[_View], cfg: _Config, acc_start: int, acc_end: np.ndarray,
               acc_known: np.ndarray) -> pa.Table:
    out = Cols()
    R = cfg.ranks
    out.add("accountable", R, rank=np.arange(R), start_ns=acc_start,
            end_ns=np.where(acc_known, acc_end, _NULL))
    per_rank = cfg.per_rank_rows
    T = cfg.tokens_per_step
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
            def cat(x: object, y: object) -> np.ndarray:
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
            assert a.fail is not None
            f, frank, fkind = a.fail
            out.add("failure", 1, attempt=att, rank=frank, start_ns=f, kind=fkind)
    return out.table()


def _job_events(atts: list[_Attempt], views: list[_View], cfg: _Config) -> pa.Table:
    """Device events: the per-step model of :func:`training_run`, one generated step per
    executed step, mapped linearly into that step's interval, plus a memcpy during each
    restore and each checkpoint's blocking part."""
    R = cfg.ranks
    # executed steps, in time order: attempt position, interval, step number, cut
    sel = [np.flatnonzero(v.steps) for v in views]
    ia = np.concatenate([np.full(j.size, i, np.int64) for i, j in enumerate(sel)])
    ls = np.concatenate([a.s_start[j] for a, j in zip(atts, sel)])
    le = np.concatenate([a.s_end[j] for a, j in zip(atts, sel)])
    kk = np.concatenate([a.k[j] for a, j in zip(atts, sel)])
    cut = np.array([v.cut for v in views], np.int64)[ia]
    N = ia.size
    p = _plan(R, cfg.kernels_per_step, cfg.buckets, cfg.seed, cfg.straggler, 0, False)
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
        spans: list[tuple[int, int, int]] = []
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

    See the module docstring for the model. Times are seconds in the
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
    cfg = _config(dict(locals()))
    atts = _simulate(cfg)
    last = atts[-1]
    as_of = last.end if cfg.as_of is None else cfg.as_of
    atts = [a for a in atts if a.start <= as_of]
    views = [_view(a, as_of) for a in atts]
    done = not last.failed and last.end <= as_of
    job_end = min(last.end, as_of) if done else as_of
    acc_end = np.full(cfg.ranks, job_end, np.int64)
    acc_known = np.full(cfg.ranks, done)
    for a in atts:  # a rank that left the job (shrink) is accountable until the failure
        if a.lost is not None and a.fail is not None and a.fail[0] <= as_of:  # lost: it failed
            acc_end[a.lost], acc_known[a.lost] = a.fail[0], True
    table = _job_table(atts, views, cfg, cfg.start_ns, acc_end, acc_known)
    ev = _job_events(atts, views, cfg) if events else None
    return TrainingJob(table, ev, int(as_of), cfg.start_ns, _attempts_table(atts, views))


def _config(args: dict[str, Any]) -> _Config:
    """The arguments of :func:`training_job`, checked (:class:`pau.errors.OptionError`)."""
    ranks = check_int("ranks", args["ranks"], 1)
    shrink = check_int_or_none("shrink_at_failure", args["shrink_at_failure"], 1)
    if shrink is not None and ranks < 2:
        raise OptionError("shrink_at_failure needs ranks >= 2")
    mtbf = None if args["mtbf_s"] is None else check_seconds("mtbf_s", args["mtbf_s"], positive=True)
    if mtbf is not None and math.isinf(mtbf):
        mtbf = None
    cost = args["checkpoint_cost_s"]
    if cost is None:
        cost = 1.0 if args["async_checkpoint"] else 10.0
    start_ns = check_int("start_ns", args["start_ns"], 0)
    reinit = check_seconds("reinit_s", args["reinit_s"])
    cfg = _Config(
        ranks=ranks, steps=check_int("steps", args["steps"], 1), seed=check_int("seed", args["seed"], 0),
        mtbf_s=mtbf, correlated=check_probability("correlated", args["correlated"]),
        checkpoint_every=check_int_or_none("checkpoint_every", args["checkpoint_every"], 1),
        checkpoint_cost_s=check_seconds("checkpoint_cost_s", cost),
        async_checkpoint=bool(args["async_checkpoint"]),
        durable_delay_s=check_seconds("durable_delay_s", args["durable_delay_s"]),
        outage_s=check_seconds("outage_s", args["outage_s"]),
        init_s=reinit if args["init_s"] is None else check_seconds("init_s", args["init_s"]), reinit_s=reinit,
        restore_s=check_seconds("restore_s", args["restore_s"]),
        shrink_at_failure=shrink, straggler=args["straggler"],
        step_time_s=check_seconds("step_time_s", args["step_time_s"], positive=True),
        tokens_per_step=check_int("tokens_per_step", args["tokens_per_step"], 0),
        corrupt_checkpoint_p=check_probability("corrupt_checkpoint_p", args["corrupt_checkpoint_p"]),
        per_rank_rows=bool(args["per_rank_rows"]),
        as_of=check_int_or_none("as_of", args["as_of"], start_ns),
        kernels_per_step=args["kernels_per_step"], buckets=args["buckets"], start_ns=start_ns,
        max_attempts=check_int("max_attempts", args["max_attempts"], 1),
    )
    _plan(ranks, cfg.kernels_per_step, cfg.buckets, cfg.seed, cfg.straggler, start_ns, False)  # checks them
    return cfg


def _attempts_table(atts: list[_Attempt], views: list[_View]) -> pa.Table:
    """:attr:`TrainingJob.attempts`: one row per attempt known at ``as_of``."""
    fail = [a.fail if v.fail_known else None for a, v in zip(atts, views)]
    return pa.table({
        "attempt": pa.array([a.index + 1 for a in atts], pa.int32()),
        "start_ns": pa.array([a.start for a in atts], pa.int64()),
        "end_ns": pa.array([None if v.running else a.end for a, v in zip(atts, views)], pa.int64()),
        "kind": pa.array(["running" if v.running else ("failed" if a.failed else "completed")
                          for a, v in zip(atts, views)], pa.string()),
        "ranks": pa.array([a.members.size for a in atts], pa.int32()),
        "restored_step": pa.array([v.restore[0] if v.restore else None for v in views], pa.int64()),
        "failure_ns": pa.array([f[0] if f else None for f in fail], pa.int64()),
        "failure_rank": pa.array([f[1] if f else None for f in fail], pa.int32()),
        "failure_kind": pa.array([f[2] if f else None for f in fail], pa.string()),
    })
