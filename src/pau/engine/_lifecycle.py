"""Lifecycle attribution: which state every accountable nanosecond of a rank was in.

The lifecycle table (DESIGN §2.2) says what the job was doing: attempts, phases,
steps, checkpoint saves, restores, failures. This module validates it, applies the
lineage rule to decide which step executions survived, and paints the states with
their precedence into disjoint intervals per rank. The checks of the rows, the scan
of the step columns and the set-up (attempts, membership, checkpoints, the painted
layers, and the relational errors of the input, which :func:`_setup` names) run in
the native core (``csrc/core/life_checks.hpp``, ``life_setup.hpp``); the rollback
attribution in the Numba kernels of :mod:`pau.engine._kernels`: ``lineage`` for the lineage
rule, ``attribute_pass`` for the steps. Their slow twins are in ``tests/``.

Rules pau applies where DESIGN is silent (also in docs/lifecycle.md):

* ``as_of`` defaults to the latest instant in the table. Records that start after
  ``as_of`` are ignored, intervals are cut at it, a checkpoint counts only if ``ok``
  and ``durable_ns <= as_of``, and an attempt whose end is unknown at ``as_of`` is
  running.
* A failure ends its attempt (for every member rank) at the failure time, even when
  the attempt's own ``end_ns`` is later or missing. An attempt with no end that is not
  the last ends where the next attempt starts.
* Records that end after their attempt ended are cut at the attempt end (a step in
  flight when the failure hit); records that *start* outside their attempt are errors.
* ``rank = -1`` on an attempt row means every rank accountable at its start (every
  known rank when there are no accountable records); on any other record, every
  member rank of its attempt.
* Without accountable records, a rank is accountable from the start of its first
  attempt to the end of its last.
* Init-kind phases (``init``, ``compile``, ``data_warmup``) of the first attempt are
  ``initialization``; of later attempts ``recovery.reinit``. Restores, failed ones
  included, are ``recovery.restore``. Precedence on one rank: checkpoint >
  eval/custom/data_wait > step > restore/init > unattributed; outage is accountable
  time outside every attempt.
* A checkpoint written as one row per rank (shards) is durable when its last shard
  is, and ok only if every shard is ok. Its blocking part is ``checkpoint.lost`` if it
  is not ok or not durable as of ``as_of``; ``checkpoint.unused`` if durable but its
  step is not a lineage step of the attempt that wrote it; else ``checkpoint``.
* A completed attempt's head is its last completed step, with or without a final
  checkpoint: pau trusts ``completed`` to mean the result was delivered.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute  # pa.compute

from pau import _core
from pau.engine import _kernels
from pau.engine._life_setup import (
    _CKPT, _INT8, _INT16, _INT32, _INT64, _INTERVAL_COLUMNS, _REASON_COLUMN, _ROW_FIX, _STEP_CHECKS, NULL, NULL_MAX,
    Lineage, S, _as_of, _Attempts, _by_job, _Checkpoints, _dense_lut, _err, _job_column, _Jobs, _Members,
    _native_layout, _native_rows, _pool_empty, _present, _read_step_range, _record_name, _row_codes, _row_reasons,
    _Rows, _scan, _Scan, _setup, _Steps, _wide,
)
from pau.engine._life_setup import (  # noqa: F401  (read as pau.engine._lifecycle's by the tests)
    _ACC, _ATT, _FAIL, _KINDED, _NEEDS_STEP, _PHASE, _REST, _ROW_CHECKS, _STEP, ATTEMPT_KINDS, INIT_KINDS,
    PHASE_KINDS, RECORDS, InvalidLifecycleError, _lut, _num_array, _Setup,
)
from pau.engine._search import lower_bound
from pau.engine._input import _column, as_table
from pau.engine._threads import run_parts, thread_count
from pau.engine.vocab import STATES, names
from pau.errors import PauError, SpanOverflowError


# ---------------------------------------------------------------------------
# attribution


class _StepLabels:
    """The labelled step executions in (rank, start) order, computed on first use:
    only :meth:`Ledger.cycles` needs them, and attribution itself labels steps while
    it layers them without writing these arrays."""

    def __init__(self, compute):
        self._compute = compute
        self._arrays = None

    def get(self):
        if self._arrays is None:
            self._arrays = self._compute()
            self._compute = None
        return self._arrays


@dataclass
class Attribution:
    """Everything :func:`attribute_rows` knows: the state intervals and what led to them."""

    intervals_of: Any          # () -> the intervals table (built on first use of .intervals)
    as_of: int
    attempts: _Attempts
    lineage: Lineage
    checkpoints: _Checkpoints
    steps: _StepLabels         # step executions in (rank, start) order (see the properties)
    lineage_ckpt_steps: np.ndarray
    failures_all: list         # failure records, plus attempts that failed without one
    wall_ns: int               # as_of minus the earliest accountable start (many jobs: _jobs_wall's sum)
    preserved_steps: int
    preserved_tokens: int
    accountable: pa.Table      # rank, accountable_ns
    quarantine: pa.Table | None = None
    pieces: list | None = None  # the intervals' (rank, start, end, state) as numpy arrays, per batch
    # many jobs (a job column): the ids' map (pieces keep its internal rank ids; every table
    # has the table's ranks and a job column), the job of each lineage checkpoint and attempt
    jobs: "_Jobs | None" = None
    acc_ranks: np.ndarray | None = None  # the ranks of ``accountable`` as the pieces have them
    # as_of minus the earliest accountable instant of any rank (one job: wall_ns; many
    # jobs: wall_ns sums the jobs', this is the longest any rank's accountable time can be)
    span_ns: int = 0
    lineage_ckpt_jobs: np.ndarray | None = None
    attempt_jobs: np.ndarray | None = None

    @property
    def intervals(self) -> pa.Table:
        """The state intervals (``rank, start_ns, end_ns, state, attempt, step, cause``):
        built from the pass's output on first use (the full ledger sums them without
        the table)."""
        if not isinstance(self.intervals_of, pa.Table):
            self.intervals_of = self.intervals_of()
        return self.intervals_of

    @property
    def step_num(self) -> np.ndarray:
        """Step number of each step execution, in (rank, start) order."""
        return self.steps.get()[0]

    @property
    def step_start(self) -> np.ndarray:
        return self.steps.get()[1]

    @property
    def step_end(self) -> np.ndarray:
        """End, cut at the attempt end / as_of."""
        return self.steps.get()[2]

    @property
    def step_state(self) -> np.ndarray:
        """Index in STATES."""
        return self.steps.get()[3]

    @property
    def step_job(self) -> np.ndarray | None:
        """Many jobs: the job code of each step execution (index in ``jobs.names``)."""
        return None if self.jobs is None else self.steps.get()[4]


def attribute_rows(lifecycle, *, as_of=None, on_invalid: str = "raise", ranks=None,
                   threads: int | None = None) -> Attribution:
    """Validate a lifecycle table and attribute every accountable ns (see module doc).
    ``threads``: for the pass over the steps (None: all cores from
    PARALLEL_MIN_VISITS step visits on, but see BY_RANK_MAX_CORES)."""
    table = as_table(lifecycle, "lifecycle")
    if table.schema.get_field_index("start_ns") < 0:
        _column(table, "start_ns", "lifecycle")  # raises: the column is missing
    table = _native_layout(table)
    job_col = None
    if table.schema.get_field_index("job") >= 0:
        if ranks is not None:
            raise PauError("lifecycle: ranks name the ranks of one job; a table of many jobs (a job column) "
                           "takes none")
        job_col = _job_column(table)
    native = _native_rows(table)
    if native is None:  # pragma: no cover - _native_layout leaves nothing the reader declines
        raise RuntimeError("pau: the native lifecycle reader declined a table in its own layout; "
                           "please report this with the table's schema")
    x, n_step, first, steps = native
    st = _read_step_range(table, max(first, 0), n_step) if steps is None else _Steps(*steps)

    quarantine = []  # (original rows, reasons)
    x_code = _row_codes(x)
    x_bad = x_code > 0
    if as_of is not None and not NULL <= int(as_of) <= NULL_MAX:
        raise PauError(f"as_of: {int(as_of)} does not fit in int64 nanoseconds. Fix: give an instant of the run, "
                       "in int64 ns")
    cut = NULL_MAX if as_of is None else int(as_of)
    sc = _scan(st, x, cut)
    if x_bad.any() or sc.bad:
        st = _wide(st)
        s_code = (_core.step_codes(st.start, st.end, st.rank, st.attempt, st.step, st.tokens) if sc.bad
                  else np.zeros(len(st), np.int8))
        s_bad = s_code > 0
        s_idx = np.flatnonzero(s_bad)
        s_reasons = np.array(_STEP_CHECKS, dtype=object)[s_code[s_idx] - 1]
        rows_bad = np.concatenate([x.row[x_bad], st.row[s_idx]])
        why_bad = np.concatenate([_row_reasons(x_code[x_bad]), s_reasons])
        if on_invalid != "quarantine":
            k = int(np.argmin(rows_bad))
            r, row = why_bad[k], int(rows_bad[k])
            detail = r
            if k < int(x_bad.sum()):
                xi = np.flatnonzero(x_bad)[k]
                if r == "unknown record":
                    detail = f"unknown record {_record_name(table, row)!r}"
                elif r in ("unknown phase kind", "unknown attempt kind"):
                    detail = f"{r} {x.kind[xi]!r}"
            fix = _ROW_FIX[r]
            if r == "null start_ns" and table.column("start_ns")[row].is_valid:
                # the least int64 is the lifecycle's null time: say so, not "null"
                detail = f"start_ns = {NULL}, the least int64, which the lifecycle reads as no time"
                fix = "store times above -2**63 ns"
            raise _err(_REASON_COLUMN[r], row, detail, fix, int(rows_bad.size))
        quarantine.append((rows_bad, why_bad))
        x = x.take(np.flatnonzero(~x_bad))
        if sc.bad:
            st = st.take(np.flatnonzero(~s_bad))
        sc = _scan(st, x, cut)
    jobs = None
    if job_col is not None:  # each job its own lineage: attempts and ranks as (job, id) pairs
        x, st, jobs = _by_job(x, st, *job_col)
        sc = _scan(st, x, cut)
    as_of = _as_of(x, sc, as_of)
    if (x.start > as_of).any():
        x = x.take(np.flatnonzero(x.start <= as_of))
    if sc.after:
        st = st.take(np.flatnonzero(st.start <= as_of))
        sc = _scan(st, x, cut)
    if as_of == NULL_MAX:
        # as_of is the int64 maximum, which the set-up also takes for "never durable" (a
        # null durable_ns): such a save must not count, as one that is not ok does not
        never = (x.rec == _CKPT) & (x.durable == NULL)
        if never.any():
            x = replace(x, ok=x.ok & ~never)
    while True:
        strict: list = []
        res = _attribute(x, st, sc, as_of, ranks, strict, threads, jobs)
        if not strict:
            break
        if on_invalid != "quarantine":
            row, col, reason, fix = min(strict, key=lambda p: p[0])
            raise _err(col, row, reason, fix, len(strict))
        drop = np.array(sorted({int(p[0]) for p in strict}), np.int64)
        why = {int(p[0]): p[2] for p in reversed(strict)}
        quarantine.append((drop, np.array([why[r] for r in drop], dtype=object)))
        x = x.take(np.flatnonzero(~np.isin(x.row, drop)))
        st = st.take(np.flatnonzero(~np.isin(st.row, drop)))
        sc = _scan(st, x, cut)
    if res.span_ns > NULL_MAX:  # accountable time lies in [its earliest start, as_of]: below, no rank overflows
        _check_spans(res)
    res.quarantine = _quarantine_table(table, quarantine) if on_invalid == "quarantine" else None
    return res


def _check_spans(res: Attribution) -> None:
    """:class:`SpanOverflowError` naming the first rank whose accountable time (its first
    accountable instant to its last) int64 cannot hold: its counts would wrap. Always
    raised: a lifecycle's records may name every rank (rank -1), so no rows are a
    rank's own to set aside."""
    assert res.pieces is not None  # the pass always gives them
    rank = np.concatenate([p[0] for p in res.pieces]).astype(np.int64)
    start = np.concatenate([p[1] for p in res.pieces])
    end = np.concatenate([p[2] for p in res.pieces])
    ranks, inv = np.unique(rank, return_inverse=True)
    lo = np.full(ranks.size, NULL_MAX, np.int64)
    hi = np.full(ranks.size, -NULL_MAX - 1, np.int64)
    np.minimum.at(lo, inv, start)
    np.maximum.at(hi, inv, end)
    # hi - lo in Python ints (it may not fit int64): only the ranks that could overflow are looked at
    for i in np.flatnonzero((hi > 0) & (lo < 0)).tolist():
        if int(hi[i]) - int(lo[i]) > NULL_MAX:
            r = int(ranks[i])
            jobs = res.jobs
            where = "" if jobs is None else f" of {jobs.name(jobs.rank_job[r])}"
            r = r if jobs is None else int(jobs.rank_orig[r])
            raise SpanOverflowError(
                "lifecycle", r, int(lo[i]), int(hi[i]), measure="from its first accountable instant to its last",
                fix=f"correct the times of the records of rank {r}{where} (a time far from the others is often a "
                "unit or sign error), or pass as_of to end the ledger earlier")


_STEP_ERRORS = {
    1: ("rank", "step on rank {r}, which is not a member of attempt {a}",
        "give the attempt a row for that rank, or fix the step's rank"),
    2: ("start_ns", "step starts at {s}, outside attempt {a} on rank {r} [{ms}, {me}]",
        "records must start inside their attempt on that rank"),
    3: ("start_ns", "step {k} overlaps step {k2} (row {row2}) on rank {r}",
        "steps of one rank must not overlap"),
    4: ("step", "step {k} does not come after step {k2} (row {row2}) in attempt {a} on rank {r}",
        "record each optimizer step once per rank and attempt, numbered upwards"),
}


#: Step visits from which the pass runs on several threads (one range of ranks each).
PARALLEL_MIN_VISITS = 50_000
#: Rows of rank -1 in start order (one row for every member rank) are visited by the
#: pass itself, rank by rank, on one thread; over several threads the pass needs the
#: list of visits in rank order first (expand_ordered). With the default threads and
#: at most this many cores, one thread by rank is used at any size: on 2 cores it was
#: 20-29 % faster than two threads with the list, from 100k to 3M step visits.
BY_RANK_MAX_CORES = 2


def _rank_ranges(parts: int, ns: int, b_rank, o_rank, visit_rank) -> list:
    """Up to `parts` ranges of ranks with about as many step visits each, as
    ``((b_lo, b_hi), (o_lo, o_hi), (v_lo, v_hi))`` slices of the background pieces,
    the overlay pieces and the visits (each sorted by rank)."""
    if parts <= 1 or ns < parts:
        return [((0, b_rank.size), (0, o_rank.size), (0, ns))]

    def first_visit(r: int) -> int:  # the first visit of a rank >= r
        return lower_bound(ns, visit_rank, r)

    cut_ranks = sorted({visit_rank((k * ns) // parts) for k in range(1, parts)})
    cuts = [(0, 0, 0)]
    for r in cut_ranks:
        c = (int(np.searchsorted(b_rank, r)), int(np.searchsorted(o_rank, r)), first_visit(r))
        if c[2] > cuts[-1][2]:
            cuts.append(c)
    cuts.append((b_rank.size, o_rank.size, ns))
    return [tuple(zip(lo, hi)) for lo, hi in zip(cuts[:-1], cuts[1:])]


def _bits(values: np.ndarray, valid: np.ndarray, typ) -> pa.Array:
    """An Arrow array over `values` (zero-copy) with the kernel-written validity bitmap;
    its null count is left unknown, so Arrow counts the bitmap's bits when asked (the
    pass does not count them: a counter per column costs it about 6 %)."""
    return pa.Array.from_buffers(typ, values.size, [pa.py_buffer(valid), pa.py_buffer(values)], null_count=-1)


_NO_RANKS = np.empty(0, np.int64)
_NO_COPY = np.empty(0, bool)


def _attribute(x: _Rows, st: _Steps, sc: _Scan, as_of: int, ranks, strict: list, threads=1,
               jobs: _Jobs | None = None):
    """One pass of attribution; returns None after appending to `strict` when a
    relational problem (a row that contradicts others) is found. With ``jobs``, attempts
    and ranks are internal ids (see :class:`_Jobs`), mapped back in the output."""
    P = _setup(x, st, sc, as_of, ranks, strict) if jobs is None else _setup(x, st, sc, as_of, ranks, strict, jobs)
    if P is None:
        return None
    A, C, L, members, rank_values, dense = P.A, P.C, P.L, P.members, P.rank_values, P.dense
    r_lo, rank_lut, rank_src, m_start, m_end, m_row = P.r_lo, P.rank_lut, P.rank_src, P.m_start, P.m_end, P.m_row
    att_lo, att_lut, att_src = P.att_lo, P.att_lut, P.att_src
    nA, nR = A.ids.size, max(rank_values.size, 1)

    def step_att():
        return att_lut[np.asarray(att_src, np.int64) - att_lo] if len(st) else np.empty(0, np.int64)

    pend = np.zeros(nA, bool)
    lasts = P.job_att[1:][np.diff(P.job_att) > 0] - 1  # each job's last attempt
    pend[lasts] = A.running[lasts]
    # Visits of the step rows in (rank, start) order; a row of rank -1 is visited
    # once per member rank of its attempt (x_rank: the rank of each visit). When
    # every row has rank -1 and they come in start order, the pass makes the visits
    # itself, rank by rank (all_ranks), on one thread.
    def visit_order():
        if not sc.neg_rank:
            if sc.ordered:
                return np.empty(0, np.int64), _NO_RANKS, _NO_COPY  # already in (rank, start) order
            s_rd = _core.lut_map(np.asarray(rank_src, np.int64), r_lo, rank_lut)
            order, ok = _kernels.rank_order(s_rd, st.start, nR)
            return (order if ok else np.lexsort((st.start, s_rd))), _NO_RANKS, _NO_COPY
        m_ranks = _dense_lut(members.ranks, rank_values) if dense else members.ranks
        order, x_rank, x_copy, ok = _kernels.expand_ordered(
            rank_src, np.asarray(st.attempt, np.int64), st.start, members.ids, members.offsets, m_ranks,
            r_lo, rank_lut, nR, dense)
        if not ok:
            pos = np.lexsort((st.start[order], _core.lut_map(x_rank, r_lo, rank_lut)))
            order, x_rank, x_copy = order[pos], x_rank[pos], x_copy[pos]
        return order, x_rank, x_copy

    # One thread by rank, or the visit list split over threads: on BY_RANK_MAX_CORES
    # cores or fewer the first is faster at any size, unless threads are asked for.
    parts = thread_count(threads, nR * len(st), PARALLEL_MIN_VISITS)
    # (not with many jobs: by rank, the pass looks every row up on every rank, and the
    # membership of an attempt on another job's rank is in no job's block)
    by_rank = (len(st) > 0 and sc.neg_rank == len(st) and sc.ordered and not dense and jobs is None
               and (parts == 1 or (threads is None and parts <= BY_RANK_MAX_CORES)))
    all_ranks, first_member = _NO_RANKS, _NO_RANKS
    if by_rank:
        order, x_rank, x_copy = np.empty(0, np.int64), _NO_RANKS, _NO_COPY
        all_ranks = rank_values
        first_member = _lowest_member(members, A.ids, rank_lut, r_lo)  # counts the tokens of its rows
    else:
        order, x_rank, x_copy = visit_order()
    # Causes as codes into a small dictionary.
    cause_names = sorted({c for c in A.cause if c is not None} | {"superseded"})
    cause_code = {c: i for i, c in enumerate(cause_names)}
    att_cause = np.array([cause_code[c if c is not None else "superseded"] for c in A.cause], np.int16)
    s_states = np.array([S["productive"], S["pending"], S["rolled_back"]], np.int8)

    # Distinct productive step numbers, counted by the kernel in a byte map over the
    # range lineage steps can take (base, head] (a numpy pass when that is huge).
    # Jobs apart: job j's steps from its lowest lineage step lo_j at offset off_j, so
    # step k of attempt a is at k - pres_off[a], pres_off[a] = lo_j - off_j.
    heads = np.flatnonzero(L.on & (L.head != NULL))
    pres_off, pres = np.zeros(nA, np.int64), np.zeros(0, np.uint8)
    if heads.size and len(st):
        lows = np.where(L.base[heads] == NULL, sc.step_min, L.base[heads] + 1)
        a_job = np.repeat(np.arange(P.job_att.size - 1), np.diff(P.job_att))
        h_job = a_job[heads]
        lo_j = np.full(P.job_att.size - 1, NULL_MAX, np.int64)
        hi_j = np.full(P.job_att.size - 1, NULL, np.int64)
        np.minimum.at(lo_j, h_job, lows)
        np.maximum.at(hi_j, h_job, L.head[heads])
        has = lo_j <= hi_j
        if (hi_j[has] - lo_j[has] < 1 << 26).all():
            size = np.where(has, hi_j - lo_j + 1, 0)
            if int(size.sum()) < 1 << 26:
                off_j = np.cumsum(size) - size
                pres_off = np.where(has, lo_j - off_j, 0)[a_job]
                pres = np.zeros(int(size.sum()), np.uint8)
        count_pres = pres.size > 0
    else:
        count_pres = True  # nothing can be productive

    # The pass, over ranges of ranks on several threads when there are many step
    # visits: background, overlay and visits are all sorted by rank, so a range is
    # one slice of each (see _rank_ranges); each writes its own output columns.
    b_cols, o_cols = P.b_cols, P.o_cols
    step_cols = (rank_src, att_src, st.start, st.end, st.step, st.tokens)
    ns = nR * len(st) if by_rank else order.size if order.size else len(st)

    def visit_rank(j: int) -> int:
        if order.size:
            return int(x_rank[j]) if x_rank.size else int(rank_src[order[j]])
        return int(rank_src[j])

    ranges = _rank_ranges(1 if by_rank else thread_count(threads, ns, PARALLEL_MIN_VISITS), ns, b_cols[0], o_cols[0],
                          visit_rank)
    att_ids32 = (A.ids if jobs is None else jobs.att_orig[A.ids]).astype(np.int32)

    def run(part):
        (b_lo, b_hi), (o_lo, o_hi), (v_lo, v_hi) = part
        cap = 2 * ((b_hi - b_lo) + (v_hi - v_lo) + (o_hi - o_lo)) + 1
        out = tuple(_pool_empty(cap, t) for t in (np.int32, np.int64, np.int64, np.int8, np.int32, np.int64,
                                                  np.int16))
        valid = tuple(_pool_empty((cap + 7) // 8, np.uint8) for _ in range(3))  # the kernel writes whole bytes
        marks = pres if len(ranges) == 1 else np.zeros_like(pres)
        if order.size:  # visits index the rows: the rows stay whole
            visits, rows, shift = (order[v_lo:v_hi], x_rank[v_lo:v_hi], x_copy[v_lo:v_hi]), step_cols, 0
        else:  # the rows are the visits
            visits, rows, shift = (order, x_rank, x_copy), tuple(c[v_lo:v_hi] for c in step_cols), v_lo
        res = _kernels.attribute_pass(
            *(c[b_lo:b_hi] for c in b_cols), visits[0], *rows, visits[1], visits[2],
            r_lo, rank_lut, att_lo, att_lut, m_start, m_end, m_row,
            L.base, L.head, L.on, pend, att_cause, s_states, pres_off, marks,
            *(c[o_lo:o_hi] for c in o_cols), att_ids32, NULL, all_ranks, first_member, *out, *valid,
            np.empty(b_hi - b_lo, np.int32), np.zeros(b_hi - b_lo, np.int64))
        return res, out, valid, marks, shift

    results = run_parts(run, [(part,) for part in ranges])
    for (m, _, ur, acc_ns, tokens, n_pres, code, i, i2, bad_rank), _, _, _, shift in results:
        if not code:
            continue
        # the first error in (rank, start) order: ranges come in rank order
        i, i2 = int(i) + shift, int(i2) + shift if i2 >= 0 else -1
        a_i = int(att_lut[int(att_src[i]) - att_lo])
        if dense:
            bad_rank = rank_values[bad_rank]
        r_i = int(_dense_lut(np.array([bad_rank], np.int64), rank_values)[0])
        col, why, fix = _STEP_ERRORS[int(code)]
        why = why.format(
            r=int(bad_rank if jobs is None else jobs.rank_orig[bad_rank]),
            a=int(A.ids[a_i] if jobs is None else jobs.att_orig[A.ids[a_i]]), s=st.start[i],
            ms=m_start[m_row[a_i] + r_i], me=m_end[m_row[a_i] + r_i], k=st.step[i],
            k2=st.step[i2] if i2 >= 0 else None, row2=st.row[i2] if i2 >= 0 else None)
        if jobs is not None:
            why = f"{jobs.name(jobs.att_job[A.ids[a_i]])}: {why}"
        strict.append((st.row[i], col, why, fix))
        return None
    pieces = []
    for (m, *_), out, _, _, _ in results:
        pr, ps, pe, state = (c[:m] for c in out[:4])
        pieces.append((rank_values[pr].astype(np.int32) if dense else pr, ps, pe, state))

    def intervals():
        causes = names(tuple(cause_names))
        batches = []
        for (pr, ps, pe, state), ((m, *_), out, valid, _, _) in zip(pieces, results):
            att_id, step, cause = (c[:m] for c in out[4:])
            batches.append(pa.RecordBatch.from_arrays([
                pa.Array.from_buffers(_INT32, m, [None, pa.py_buffer(pr)]),
                pa.Array.from_buffers(_INT64, m, [None, pa.py_buffer(ps)]),
                pa.Array.from_buffers(_INT64, m, [None, pa.py_buffer(pe)]),
                pa.DictionaryArray.from_arrays(pa.Array.from_buffers(_INT8, m, [None, pa.py_buffer(state)]),
                                               names(STATES), safe=False),
                _bits(att_id, valid[0], _INT32),
                _bits(step, valid[1], _INT64),
                pa.DictionaryArray.from_arrays(_bits(cause, valid[2], _INT16), causes, safe=False),
            ], names=_INTERVAL_COLUMNS))
        out = pa.Table.from_batches(batches)
        return out if jobs is None else jobs.with_job(out)

    ur = np.concatenate([r[0][2] for r in results])
    acc_ns = np.concatenate([r[0][3] for r in results])
    if dense:
        ur = rank_values[ur]
    tokens = sum(int(r[0][4]) for r in results)
    if len(results) == 1:
        n_pres = int(results[0][0][5])
    else:  # a step is preserved once, whichever ranges it was productive in
        n_pres = int(np.count_nonzero(np.logical_or.reduce([r[3] for r in results]))) if pres.size else 0

    def labels():
        """The step executions as :func:`_kernels.steps_pass` labels them."""
        sa = step_att()
        walk, w_rank, w_copy = visit_order() if by_rank else (order, x_rank, x_copy)
        if w_rank.size:  # the visits as rows of their own, in order
            visits = np.empty(0, np.int64)
            s_rd = _core.lut_map(w_rank, r_lo, rank_lut)
            cols = (sa[walk], st.start[walk], st.end[walk], st.step[walk], np.where(w_copy, 0, st.tokens[walk]))
        else:
            visits = walk
            s_rd = _core.lut_map(np.asarray(rank_src, np.int64), r_lo, rank_lut) if len(st) else sa
            cols = (sa, st.start, st.end, st.step, st.tokens)
        res = _kernels.steps_pass(visits, s_rd, *cols, m_start, m_end, m_row, L.base, L.head, L.on, pend, NULL,
                                  rank_values.astype(np.int32), att_cause, s_states)
        if jobs is not None:  # and the job of each
            return res[5], res[1], res[2], res[3], jobs.rank_job[res[0]]
        return res[5], res[1], res[2], res[3]

    steps = _StepLabels(labels)
    if count_pres:
        preserved_steps = int(n_pres)
    else:
        s_step, _, _, s_state, *s_job = steps.get()
        prod = s_state == S["productive"]
        if s_job:  # distinct per job
            preserved_steps = int(np.unique(np.stack([s_job[0][prod], s_step[prod]]), axis=1).shape[1])
        else:
            preserved_steps = int(_present(s_step[prod] - s_step[prod].min()).size) if prod.any() else 0

    fail_ids = {f[0] for f in A.failures}
    failures_all = list(A.failures) + [
        (int(A.ids[a]), int(A.end[a]), A.cause[a]) for a in range(nA)
        if not A.running[a] and A.cause[a] in ("failed", "preempted") and int(A.ids[a]) not in fail_ids]
    accountable = pa.Table.from_arrays([pa.array(np.asarray(ur, np.int32)), pa.array(np.asarray(acc_ns, np.int64))],
                                       names=["rank", "accountable_ns"])
    if jobs is not None:  # the table's ids, the job beside each rank
        orig = jobs.att_orig
        failures_all = [(int(orig[a]), t, k) for a, t, k in failures_all]
        A = _Attempts(orig[A.ids], A.start, A.end, A.running, A.cause,
                      [(int(orig[a]), t, k) for a, t, k in A.failures], A.completed)
        accountable = jobs.with_job(accountable)
    wall = P.wall if jobs is None or P.job_acc_min is None else _jobs_wall(P.job_acc_min, as_of, pieces, jobs,
                                                                            A.running, P.A.ids)
    return Attribution(intervals, as_of, A, L, C, steps, P.lineage_ckpts,
                       failures_all, wall, preserved_steps, int(tokens), accountable, pieces=pieces, jobs=jobs,
                       lineage_ckpt_jobs=P.lineage_ckpt_jobs,
                       attempt_jobs=None if jobs is None else jobs.att_job[P.A.ids], acc_ranks=np.asarray(ur),
                       span_ns=int(as_of) - int(P.acc_min) if P.acc_min is not None else 0)


def _jobs_wall(acc_min: np.ndarray, as_of: int, pieces: list, jobs: _Jobs, running: np.ndarray,
               att_ids: np.ndarray) -> int:
    """The MTBF's wall time of many jobs: per job, from its first accountable instant to
    ``as_of``, or to its last accountable instant when it has ended (no running attempt):
    a job that ended long before ``as_of`` adds its own span, not the time up to it."""
    n = acc_min.size
    last = np.full(n, -NULL_MAX - 1, np.int64)
    for pr, _, pe, _ in pieces:
        if pe.size:
            np.maximum.at(last, jobs.rank_job[np.asarray(pr, np.int64)], pe)
    live = np.zeros(n, bool)
    if att_ids.size:
        live[jobs.att_job[att_ids[np.asarray(running, bool)]]] = True
    wall = 0
    for j in range(n):
        first = int(acc_min[j])
        if first == NULL_MAX:
            continue
        end = as_of if live[j] else min(as_of, max(int(last[j]), first))
        wall += end - first
    return wall


def _lowest_member(members: _Members, ids: np.ndarray, rank_lut: np.ndarray, r_lo: int) -> np.ndarray:
    """Per attempt id, the dense rank (``rank_lut[rank - r_lo]``) of its lowest member
    rank; -1 for an attempt without members."""
    out = np.full(ids.size, -1, np.int64)
    p = np.searchsorted(members.ids, ids)
    hit = p < members.ids.size
    hit[hit] = members.ids[p[hit]] == ids[hit]
    out[hit] = rank_lut[members.ranks[members.offsets[p[hit]]] - r_lo]
    return out


def _quarantine_table(table: pa.Table, quarantine: list) -> pa.Table:
    """The caller's rows set aside, with their row number and reason."""
    if quarantine:
        rows = np.concatenate([q[0] for q in quarantine]).astype(np.int64)
        why = np.concatenate([q[1] for q in quarantine]).astype(str)
    else:
        rows, why = np.empty(0, np.int64), np.empty(0, str)
    order = np.argsort(rows, kind="stable")
    rows, why = rows[order], why[order]
    q = table.take(pa.array(rows))
    return q.append_column("row", pa.array(rows, pa.int64())).append_column(
        "reason", pa.array(why.tolist(), pa.string()))

