"""The rollback attribution's pass over the steps, given the set-up (:mod:`pau.engine._lifecycle`
validates the table and makes the set-up; this module runs the Numba pass
:func:`pau.engine._kernels.attribute_pass` over it and gathers an :class:`Attribution`).

The pass reads the step rows where they are, in (rank, start) order (a visit list, or by
rank when every row has rank -1 and they come in start order), over ranges of ranks on
several threads when there are many step visits; it writes the state intervals into
arrays allocated here, and names the first step that contradicts the others. Its slow
twin is ``tests/reference_lifecycle.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, NamedTuple, Optional

import numpy as np
import pyarrow as pa

from pau import _core
from pau.engine import _kernels
from pau.engine._kernels import Attempts, Lut, Membership, PassOut, Pieces, StepError, StepRows, Tally, Visits
from pau.engine._kernels import dense_lut, present
from pau.engine._life_setup import _INTERVAL_COLUMNS, NULL, NULL_MAX, S, _pool_empty
from pau.engine._search import lower_bound
from pau.engine._threads import run_parts, thread_count
from pau.engine.vocab import STATES, names

_INT64, _INT32, _INT16, _INT8 = pa.int64(), pa.int32(), pa.int16(), pa.int8()


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
    """Everything :func:`pau.engine._lifecycle.attribute_rows` knows: the state intervals
    and what led to them."""

    intervals_of: Any          # () -> the intervals table (built on first use of .intervals)
    as_of: int
    attempts: Any              # _lifecycle._Attempts
    lineage: Any               # _lifecycle.Lineage
    checkpoints: Any           # _lifecycle._Checkpoints
    steps: _StepLabels         # step executions in (rank, start) order (see the properties)
    lineage_ckpt_steps: np.ndarray
    failures_all: list         # failure records, plus attempts that failed without one
    wall_ns: int               # as_of minus the earliest accountable start (many jobs: _jobs_wall's sum)
    preserved_steps: int
    preserved_tokens: int
    accountable: pa.Table      # rank, accountable_ns
    quarantine: pa.Table | None = None
    pieces: list | None = None  # the intervals' (rank, start, end, state) as numpy arrays, per batch
    # many jobs (a job column): the ids' map (_lifecycle._Jobs: pieces keep its internal rank
    # ids; every table has the table's ranks and a job column), the job of each lineage
    # checkpoint and attempt
    jobs: Any = None
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
_IN_ORDER = Visits(np.empty(0, np.int64), _NO_RANKS, _NO_COPY, _NO_RANKS)  # the rows are the visits


class _Part(NamedTuple):
    """One range of ranks through the pass: what it counted, its first step error, the
    arrays it wrote, and the first row of its step columns (rows sliced per range)."""

    tally: Tally
    error: StepError
    out: PassOut
    shift: int


def _visit_list(P: Any, st: Any, sc: Any) -> Visits:
    """Visits of the step rows in (rank, start) order; a row of rank -1 is visited
    once per member rank of its attempt (``rank``: the rank of each visit)."""
    n_ranks = max(P.rank_values.size, 1)
    if not sc.neg_rank:
        if sc.ordered:
            return _IN_ORDER
        s_rd = _core.lut_map(np.asarray(P.rank_src, np.int64), P.r_lo, P.rank_lut)
        order, ok = _kernels.rank_order(s_rd, st.start, n_ranks)
        return _IN_ORDER._replace(order=order if ok else np.lexsort((st.start, s_rd)))
    m = P.members
    m_ranks = dense_lut(m.ranks, P.rank_values) if P.dense else m.ranks
    v, ok = _kernels.expand_ordered(P.rank_src, np.asarray(st.attempt, np.int64), st.start,
                                    Membership(m.ids, m.offsets, m_ranks), Lut(P.r_lo, P.rank_lut), n_ranks, P.dense)
    if not ok:
        pos = np.lexsort((st.start[v.order], _core.lut_map(v.rank, P.r_lo, P.rank_lut)))
        v = Visits(v.order[pos], v.rank[pos], v.copy[pos], _NO_RANKS)
    return v


def _plan(P: Any, st: Any, sc: Any, threads, jobs: Any) -> tuple[bool, Visits, np.ndarray]:
    """How the pass visits the steps: ``(by_rank, visits, first_member)``. When every
    row has rank -1 and they come in start order, the pass makes the visits itself,
    rank by rank (``all_ranks``), on one thread, counting a row's tokens on its
    attempt's lowest member rank; else it reads a visit list."""
    # One thread by rank, or the visit list split over threads: on BY_RANK_MAX_CORES
    # cores or fewer the first is faster at any size, unless threads are asked for.
    parts = thread_count(threads, max(P.rank_values.size, 1) * len(st), PARALLEL_MIN_VISITS)
    # (not with many jobs: by rank, the pass looks every row up on every rank, and the
    # membership of an attempt on another job's rank is in no job's block)
    by_rank = (len(st) > 0 and sc.neg_rank == len(st) and sc.ordered and not P.dense and jobs is None
               and (parts == 1 or (threads is None and parts <= BY_RANK_MAX_CORES)))
    if by_rank:
        visits = Visits(_IN_ORDER.order, _NO_RANKS, _NO_COPY, P.rank_values)
        return True, visits, _lowest_member(P.members, P.A.ids, P.rank_lut, P.r_lo)
    return False, _visit_list(P, st, sc), _NO_RANKS


def _causes(A: Any) -> tuple[list, np.ndarray]:
    """The causes of rolled-back steps as codes into a small dictionary: its names, and
    each attempt's code."""
    cause_names = sorted({c for c in A.cause if c is not None} | {"superseded"})
    code = {c: i for i, c in enumerate(cause_names)}
    return cause_names, np.array([code[c if c is not None else "superseded"] for c in A.cause], np.int16)


def _preserved_marks(P: Any, st: Any, sc: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    """Distinct productive step numbers, counted by the kernel in a byte map over the
    range lineage steps can take (base, head]; ``(pres_off, marks, counted)``, not
    counted when that range is huge (then a numpy pass over the step labels counts).
    Jobs apart: job j's steps from its lowest lineage step lo_j at offset off_j, so
    step k of attempt a is at k - pres_off[a], pres_off[a] = lo_j - off_j."""
    L = P.L
    heads = np.flatnonzero(L.on & (L.head != NULL))
    pres_off, pres = np.zeros(P.A.ids.size, np.int64), np.zeros(0, np.uint8)
    if not (heads.size and len(st)):
        return pres_off, pres, True  # nothing can be productive
    lows = np.where(L.base[heads] == NULL, sc.step_min, L.base[heads] + 1)
    if P.job_att.size == 2:  # one job: its range alone, from offset 0 (the general way below, without its arrays)
        lo, hi = int(lows.min()), int(L.head[heads].max())
        if lo <= hi and hi - lo + 1 < 1 << 26:
            return np.full(P.A.ids.size, lo, np.int64), np.zeros(hi - lo + 1, np.uint8), True
        return pres_off, pres, False
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
    return pres_off, pres, pres.size > 0


_OUT_TYPES = (np.int32, np.int64, np.int64, np.int8, np.int32, np.int64, np.int16)


def _pass(P: Any, st: Any, visits: Visits, atts: Attempts, pres: np.ndarray, threads, by_rank: bool) -> list:
    """The pass, over ranges of ranks on several threads when there are many step
    visits: background, overlay and visits are all sorted by rank, so a range is one
    slice of each (see _rank_ranges); each writes its own output arrays. One
    :class:`_Part` per range, in rank order."""
    b_cols, o_cols, order = P.b_cols, P.o_cols, visits.order
    rows = StepRows(P.rank_src, P.att_src, st.start, st.end, st.step, st.tokens)
    ns = max(P.rank_values.size, 1) * len(st) if by_rank else order.size if order.size else len(st)

    def visit_rank(j: int) -> int:
        if order.size:
            return int(visits.rank[j]) if visits.rank.size else int(P.rank_src[order[j]])
        return int(P.rank_src[j])

    ranges = _rank_ranges(1 if by_rank else thread_count(threads, ns, PARALLEL_MIN_VISITS), ns, b_cols[0], o_cols[0],
                          visit_rank)
    ranks = Lut(P.r_lo, P.rank_lut)

    def run(part) -> _Part:
        (b_lo, b_hi), (o_lo, o_hi), (v_lo, v_hi) = part
        cap = 2 * ((b_hi - b_lo) + (v_hi - v_lo) + (o_hi - o_lo)) + 1
        t, nv = _OUT_TYPES, (cap + 7) // 8  # the validity bitmaps are written in whole bytes
        out = PassOut(_pool_empty(cap, t[0]), _pool_empty(cap, t[1]), _pool_empty(cap, t[2]), _pool_empty(cap, t[3]),
                      _pool_empty(cap, t[4]), _pool_empty(cap, t[5]), _pool_empty(cap, t[6]),
                      _pool_empty(nv, np.uint8), _pool_empty(nv, np.uint8), _pool_empty(nv, np.uint8),
                      np.empty(b_hi - b_lo, np.int32), np.zeros(b_hi - b_lo, np.int64),
                      pres if len(ranges) == 1 else np.zeros_like(pres))
        if order.size:  # visits index the rows: the rows stay whole
            v, r, shift = visits._replace(order=order[v_lo:v_hi], rank=visits.rank[v_lo:v_hi],
                                          copy=visits.copy[v_lo:v_hi]), rows, 0
        else:  # the rows are the visits
            v, r, shift = visits, StepRows(*(c[v_lo:v_hi] for c in rows)), v_lo
        tally, error = _kernels.attribute_pass(Pieces(*(c[b_lo:b_hi] for c in b_cols)),
                                               Pieces(*(c[o_lo:o_hi] for c in o_cols)), r, v, ranks, atts, out)
        return _Part(tally, error, out, shift)

    return run_parts(run, [(part,) for part in ranges])


def _step_error(parts: list, P: Any, st: Any, jobs: Any) -> Optional[tuple]:
    """The first step error of the pass in (rank, start) order (ranges come in rank
    order), as ``(row, column, reason, fix)``; None without one."""
    for p in parts:
        err = p.error
        if not err.code:
            continue
        i, i2 = int(err.row) + p.shift, int(err.other) + p.shift if err.other >= 0 else -1
        a_i = int(P.att_lut[int(P.att_src[i]) - P.att_lo])
        bad_rank = P.rank_values[err.rank] if P.dense else err.rank
        r_i = int(dense_lut(np.array([bad_rank], np.int64), P.rank_values)[0])
        A = P.A
        col, why, fix = _STEP_ERRORS[int(err.code)]
        why = why.format(
            r=int(bad_rank if jobs is None else jobs.rank_orig[bad_rank]),
            a=int(A.ids[a_i] if jobs is None else jobs.att_orig[A.ids[a_i]]), s=st.start[i],
            ms=P.m_start[P.m_row[a_i] + r_i], me=P.m_end[P.m_row[a_i] + r_i], k=st.step[i],
            k2=st.step[i2] if i2 >= 0 else None, row2=st.row[i2] if i2 >= 0 else None)
        if jobs is not None:
            why = f"{jobs.name(jobs.att_job[A.ids[a_i]])}: {why}"
        return st.row[i], col, why, fix
    return None


def _intervals_of(pieces: list, parts: list, cause_names: list, jobs: Any) -> Callable[[], pa.Table]:
    """The intervals table from the pass's arrays, built when first asked for."""

    def intervals() -> pa.Table:
        causes = names(tuple(cause_names))
        batches = []
        for (pr, ps, pe, state), p in zip(pieces, parts):
            m = p.tally.pieces
            att_id, step, cause = p.out.att[:m], p.out.step[:m], p.out.cause[:m]
            batches.append(pa.RecordBatch.from_arrays([
                pa.Array.from_buffers(_INT32, m, [None, pa.py_buffer(pr)]),
                pa.Array.from_buffers(_INT64, m, [None, pa.py_buffer(ps)]),
                pa.Array.from_buffers(_INT64, m, [None, pa.py_buffer(pe)]),
                pa.DictionaryArray.from_arrays(pa.Array.from_buffers(_INT8, m, [None, pa.py_buffer(state)]),
                                               names(STATES), safe=False),
                _bits(att_id, p.out.v_att, _INT32),
                _bits(step, p.out.v_step, _INT64),
                pa.DictionaryArray.from_arrays(_bits(cause, p.out.v_cause, _INT16), causes, safe=False),
            ], names=_INTERVAL_COLUMNS))
        out = pa.Table.from_batches(batches)
        return out if jobs is None else jobs.with_job(out)

    return intervals


def _labels_of(P: Any, st: Any, sc: Any, visits: Visits, by_rank: bool, atts: Attempts, jobs: Any) -> Callable:
    """The step executions as :func:`_kernels.steps_pass` labels them, when first asked for:
    ``(step, start, end, state)``, and the job of each with many jobs."""

    def labels():
        sa = P.att_lut[np.asarray(P.att_src, np.int64) - P.att_lo] if len(st) else np.empty(0, np.int64)
        walk = _visit_list(P, st, sc) if by_rank else visits
        if walk.rank.size:  # the visits as rows of their own, in order
            w = walk.order
            order = np.empty(0, np.int64)
            rows = StepRows(_core.lut_map(walk.rank, P.r_lo, P.rank_lut), sa[w], st.start[w], st.end[w], st.step[w],
                            np.where(walk.copy, 0, st.tokens[w]))
        else:
            order = walk.order
            s_rd = _core.lut_map(np.asarray(P.rank_src, np.int64), P.r_lo, P.rank_lut) if len(st) else sa
            rows = StepRows(s_rd, sa, st.start, st.end, st.step, st.tokens)
        lab, _, _ = _kernels.steps_pass(order, rows, atts, P.rank_values.astype(np.int32))
        if jobs is not None:  # and the job of each
            return lab.step, lab.start, lab.end, lab.state, jobs.rank_job[lab.rank]
        return lab.step, lab.start, lab.end, lab.state

    return labels


def _preserved_steps(parts: list, counted: bool, pres: np.ndarray, steps: _StepLabels) -> int:
    """Distinct step numbers of productive steps (per job with many jobs)."""
    if counted:
        if len(parts) == 1:
            return int(parts[0].tally.preserved)
        # a step is preserved once, whichever ranges it was productive in
        return int(np.count_nonzero(np.logical_or.reduce([p.out.pres for p in parts]))) if pres.size else 0
    s_step, _, _, s_state, *s_job = steps.get()
    prod = s_state == S["productive"]
    if s_job:  # distinct per job
        return int(np.unique(np.stack([s_job[0][prod], s_step[prod]]), axis=1).shape[1])
    return int(present(s_step[prod] - s_step[prod].min()).size) if prod.any() else 0


def _attribute(P: Any, st: Any, sc: Any, as_of: int, strict: list, threads=1, jobs: Any = None
               ) -> Optional[Attribution]:
    """One pass of attribution over the set-up ``P`` (``_lifecycle._setup``); returns
    None after appending to `strict` when a step contradicts the others. With ``jobs``,
    attempts and ranks are internal ids (see ``_lifecycle._Jobs``), mapped back in the output."""
    A, L = P.A, P.L
    by_rank, visits, first_member = _plan(P, st, sc, threads, jobs)
    cause_names, att_cause = _causes(A)
    pres_off, pres, counted = _preserved_marks(P, st, sc)
    pend = np.zeros(A.ids.size, bool)  # the last attempt of each job, still running: its steps are pending
    ja = P.job_att  # one job: its last attempt, when it has attempts (no diff of one pair)
    lasts = ja[1:][ja[1:] > ja[:-1]] - 1
    pend[lasts] = A.running[lasts]
    atts = Attempts(Lut(P.att_lo, P.att_lut), (A.ids if jobs is None else jobs.att_orig[A.ids]).astype(np.int32),
                    P.m_start, P.m_end, P.m_row, L.base, L.head, L.on, pend, att_cause, pres_off, first_member)
    parts = _pass(P, st, visits, atts, pres, threads, by_rank)
    error = _step_error(parts, P, st, jobs)
    if error is not None:
        strict.append(error)
        return None
    pieces = []
    for p in parts:
        pr, ps, pe, state = (c[:p.tally.pieces] for c in p.out[:4])
        pieces.append((P.rank_values[pr].astype(np.int32) if P.dense else pr, ps, pe, state))
    ur = np.concatenate([p.out.acc_rank[:p.tally.ranks] for p in parts])
    acc_ns = np.concatenate([p.out.acc_ns[:p.tally.ranks] for p in parts])
    if P.dense:
        ur = P.rank_values[ur]
    steps = _StepLabels(_labels_of(P, st, sc, visits, by_rank, atts, jobs))
    return _attribution(P, as_of, _intervals_of(pieces, parts, cause_names, jobs), steps,
                        _preserved_steps(parts, counted, pres, steps), sum(int(p.tally.tokens) for p in parts),
                        (ur, acc_ns), pieces, jobs)


def _attribution(P: Any, as_of: int, intervals: Callable, steps: _StepLabels, preserved_steps: int, tokens: int,
                 acc: tuple, pieces: list, jobs: Any) -> Attribution:
    """The :class:`Attribution` of a pass: its figures, the failures (records, and
    attempts that failed without one), the accountable time per rank, and with many
    jobs the table's ids."""
    A = P.A
    ur, acc_ns = acc
    fail_ids = {f[0] for f in A.failures}
    failures_all = list(A.failures) + [
        (int(A.ids[a]), int(A.end[a]), A.cause[a]) for a in range(A.ids.size)
        if not A.running[a] and A.cause[a] in ("failed", "preempted") and int(A.ids[a]) not in fail_ids]
    accountable = pa.Table.from_arrays([pa.array(np.asarray(ur, np.int32)), pa.array(np.asarray(acc_ns, np.int64))],
                                       names=["rank", "accountable_ns"])
    if jobs is not None:  # the table's ids, the job beside each rank
        orig = jobs.att_orig
        failures_all = [(int(orig[a]), t, k) for a, t, k in failures_all]
        A = replace(A, ids=orig[A.ids], failures=[(int(orig[a]), t, k) for a, t, k in A.failures])
        accountable = jobs.with_job(accountable)
    wall = P.wall if jobs is None or P.job_acc_min is None else _jobs_wall(P.job_acc_min, as_of, pieces, jobs,
                                                                            A.running, P.A.ids)
    return Attribution(intervals, as_of, A, P.L, P.C, steps, P.lineage_ckpts,
                       failures_all, wall, preserved_steps, int(tokens), accountable, pieces=pieces, jobs=jobs,
                       lineage_ckpt_jobs=P.lineage_ckpt_jobs,
                       attempt_jobs=None if jobs is None else jobs.att_job[P.A.ids], acc_ranks=np.asarray(ur),
                       span_ns=int(as_of) - int(P.acc_min) if P.acc_min is not None else 0)


def _jobs_wall(acc_min: np.ndarray, as_of: int, pieces: list, jobs: Any, running: np.ndarray,
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


def _lowest_member(members: Any, ids: np.ndarray, rank_lut: np.ndarray, r_lo: int) -> np.ndarray:
    """Per attempt id, the dense rank (``rank_lut[rank - r_lo]``) of its lowest member
    rank; -1 for an attempt without members."""
    out = np.full(ids.size, -1, np.int64)
    p = np.searchsorted(members.ids, ids)
    hit = p < members.ids.size
    hit[hit] = members.ids[p[hit]] == ids[hit]
    out[hit] = rank_lut[members.ranks[members.offsets[p[hit]]] - r_lo]
    return out
