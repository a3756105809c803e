"""The engines a pau user would otherwise reach for, computing the same numbers.

Every engine returns the same five figures per rank, as a :class:`Numbers`
(parallel numpy ``int64`` arrays ordered by rank):

``span``
    first event start to last event end of the rank (pau's default span).
``busy``
    ``|union of all events|``: time with at least one event running.
``compute``
    ``|union of compute events|``.
``communication``
    ``|union of communication events|``.
``overlap``
    ``|communication ∩ compute|``: time during which both run.

Intervals are half-open ``[start_ns, end_ns)`` (DESIGN §1): touching intervals do
not overlap, a zero-length event covers no time. All sums are exact integers.

Engines:

* :func:`pau_numbers`: ``pau.core.overlap`` once, then the matrix of exclusive
  kind combinations is reduced to the five figures (every one of them is a sum of
  matrix rows).
* :func:`classify_view`: what ``pau.core.classify`` alone can tell: span,
  busy (span − idle), compute (compute has the top priority, so exclusive compute is
  the compute union) and *exposed* communication (communication − overlap);
  :func:`classify_view_of` gives the same from the five figures.
* :func:`numba_sweep`: a plain single-threaded Numba sweep over events sorted by
  ``(rank, start_ns)``.
* :func:`duckdb_numbers`: the same figures in DuckDB SQL (window functions: running
  maximum of earlier ends, the gaps-and-islands idea in one pass) over the Arrow table.
* :func:`nested_union_sweep`: what ``pau.core.classify`` gives (exclusive time per
  activity by priority, and idle) by a single-threaded Numba sweep of nested priority
  unions; :func:`sort_then_nested_union_sweep` sorts first, timed with it.
* :func:`do_nothing_pass`: a Numba pass that reads the four event columns and reduces
  them, doing no classification: the floor of any pass over the same memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

import pau.core

FIELDS = ("span", "busy", "compute", "communication", "overlap")
COMPUTE = pau.core.KINDS.index("compute")
COMMUNICATION = pau.core.KINDS.index("communication")


@dataclass(frozen=True)
class Numbers:
    """Per-rank figures; every array is ``int64`` and ordered by ``rank``."""

    rank: np.ndarray
    span: np.ndarray
    busy: np.ndarray
    compute: np.ndarray
    communication: np.ndarray
    overlap: np.ndarray

    def __eq__(self, other: object) -> bool:  # exact, array-wise
        if not isinstance(other, Numbers):
            return NotImplemented
        return all(np.array_equal(getattr(self, f), getattr(other, f)) for f in ("rank",) + FIELDS)

    __hash__ = None  # type: ignore[assignment]

    def totals(self) -> dict:
        """Sums over all ranks as Python ints (exact)."""
        return {f: int(getattr(self, f).sum()) for f in FIELDS}

    def diff(self, other: "Numbers") -> str:
        """A readable account of where two results differ (for assertion messages)."""
        if not np.array_equal(self.rank, other.rank):
            return f"ranks differ: {self.rank[:10]}... vs {other.rank[:10]}..."
        out = []
        for f in FIELDS:
            a, b = getattr(self, f), getattr(other, f)
            bad = np.flatnonzero(a != b)
            if bad.size:
                i = bad[0]
                out.append(f"{f}: {bad.size} ranks differ, first rank {self.rank[i]}: "
                           f"{a[i]} vs {b[i]}")
        return "; ".join(out) or "equal"


def _numbers(rank, span, busy, compute, communication, overlap) -> Numbers:
    cols = [np.asarray(x, dtype=np.int64) for x in (span, busy, compute, communication, overlap)]
    rank = np.asarray(rank, dtype=np.int32)
    order = np.argsort(rank, kind="stable")
    return Numbers(rank[order], *(c[order] for c in cols))


# ---------------------------------------------------------------------------
# pau


def _per_rank_sum(inverse: np.ndarray, n: int, values: np.ndarray, where: np.ndarray) -> np.ndarray:
    out = np.zeros(n, np.int64)
    np.add.at(out, inverse[where], values[where])  # int64: exact, unlike bincount weights
    return out


def pau_numbers(events) -> Numbers:
    """The five figures from ONE ``pau.core.overlap`` call.

    ``overlap(events).matrix`` holds, per rank, the time during which exactly a given
    combination of kinds was running (``"compute+communication"``, ``"idle"``...);
    it sums to the span. So busy = everything but ``idle``, compute = rows whose
    combination contains compute, communication likewise, overlap = rows with both.
    The matrix lists non-zero rows only, so the ranks come from ``overlap.ratio``
    (one row per rank, zero-span ranks included); its ``communication_ns`` and
    ``overlap_ns`` must equal the matrix sums, which is checked here.
    """
    ov = pau.core.overlap(events)
    m = ov.matrix
    ranks = ov.ratio["rank"].to_numpy()
    rank = m["rank"].to_numpy()
    dur = m["duration_ns"].to_numpy()
    kinds = m["kinds"].combine_chunks()
    if isinstance(kinds, pa.ChunkedArray):  # pyarrow < 16 returns a ChunkedArray
        kinds = kinds.chunk(0) if kinds.num_chunks else pa.array([], kinds.type)
    names = [set(s.split("+")) for s in kinds.dictionary.to_pylist()]
    idx = kinds.indices.to_numpy(zero_copy_only=False)

    def flag(pred):
        return np.array([pred(s) for s in names] + [False], bool)[idx]

    has_p = flag(lambda s: "compute" in s)
    has_c = flag(lambda s: "communication" in s)
    idle = flag(lambda s: s == {"idle"})
    order = np.argsort(ranks, kind="stable")
    inverse = order[np.searchsorted(ranks, rank, sorter=order)]
    n = ranks.size
    every = np.ones(rank.size, bool)
    comm = _per_rank_sum(inverse, n, dur, has_c)
    both = _per_rank_sum(inverse, n, dur, has_p & has_c)
    if not (np.array_equal(comm, ov.ratio["communication_ns"].to_numpy())
            and np.array_equal(both, ov.ratio["overlap_ns"].to_numpy())):
        raise AssertionError("pau.core.overlap: ratio table disagrees with the matrix")
    return _numbers(
        ranks,
        _per_rank_sum(inverse, n, dur, every),
        _per_rank_sum(inverse, n, dur, ~idle),
        _per_rank_sum(inverse, n, dur, has_p),
        comm,
        both,
    )


def classify_view(table: pa.Table) -> dict:
    """``pau.core.classify`` output reduced per rank: span, busy, compute, exposed comm.

    Returns a dict of ``int64`` arrays ordered by rank (``rank`` included).
    """
    rank = table["rank"].to_numpy()
    dur = table["duration_ns"].to_numpy()
    act = pc.cast(table["activity"], pa.string()).to_numpy(zero_copy_only=False)
    ranks, inverse = np.unique(rank, return_inverse=True)
    n = ranks.size
    every = np.ones(rank.size, bool)
    span = _per_rank_sum(inverse, n, dur, every)
    idle = _per_rank_sum(inverse, n, dur, act == "idle")
    return {
        "rank": ranks.astype(np.int32),
        "span": span,
        "busy": span - idle,
        "compute": _per_rank_sum(inverse, n, dur, act == "compute"),
        "exposed_communication": _per_rank_sum(inverse, n, dur, act == "communication"),
    }


def classify_view_of(numbers: Numbers) -> dict:
    """What :func:`classify_view` must equal, derived from the five figures."""
    return {
        "rank": numbers.rank,
        "span": numbers.span,
        "busy": numbers.busy,
        "compute": numbers.compute,
        "exposed_communication": numbers.communication - numbers.overlap,
    }


def views_equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


# ---------------------------------------------------------------------------
# Numba


def kind_codes(kind) -> np.ndarray:
    """``int8`` codes (index in ``pau.core.KINDS``, -1 if unknown) of a kind column.

    Done once, outside any timed region: a Numba user has to turn the Arrow
    dictionary into plain integers before the kernel can read it.
    """
    if isinstance(kind, pa.ChunkedArray):
        kind = kind.combine_chunks()
    if not pa.types.is_dictionary(kind.type):
        kind = pc.dictionary_encode(kind)
    lut = np.array([pau.core.KINDS.index(v) if v in pau.core.KINDS else -1
                    for v in kind.dictionary.to_pylist()], dtype=np.int8)
    return lut[kind.indices.to_numpy(zero_copy_only=False)]


def numpy_columns(table: pa.Table):
    """``(rank int32, start int64, end int64, kind int8)`` numpy arrays of a table."""
    return (
        np.ascontiguousarray(table["rank"].to_numpy(), dtype=np.int32),
        np.ascontiguousarray(table["start_ns"].to_numpy(), dtype=np.int64),
        np.ascontiguousarray(table["end_ns"].to_numpy(), dtype=np.int64),
        np.ascontiguousarray(kind_codes(table["kind"])),
    )


@njit(inline="always", cache=True)
def _merge(s, e, lo, hi, tot):
    """One event [s, e) into a set's open merged interval [lo, hi) and its closed total.
    Half-open: s == hi touches and merges, s > hi starts a new interval."""
    if s > hi:
        return s, e, tot + (hi - lo)
    return lo, max(hi, e), tot


@njit(nogil=True, cache=True)
def _sweep_sorted(rank, start, end, kind, compute_code, comm_code):
    # Number of ranks = number of runs in the (rank, start)-sorted input.
    n = rank.size
    runs = 0
    for i in range(n):
        if i == 0 or rank[i] != rank[i - 1]:
            runs += 1
    out_rank = np.empty(runs, np.int32)
    out = np.zeros((runs, 5), np.int64)  # span, busy, compute, comm, compute ∪ comm

    r = -1
    # One open merged interval [lo, hi) and a running total per set: all events,
    # compute, communication, compute or communication.
    a_lo = a_hi = a_tot = 0
    p_lo = p_hi = p_tot = 0
    c_lo = c_hi = c_tot = 0
    u_lo = u_hi = u_tot = 0
    first = 0
    last = 0
    for i in range(n + 1):
        if i == n or (i > 0 and rank[i] != rank[i - 1]) or i == 0:
            if i > 0:  # close the previous rank
                out_rank[r] = rank[i - 1]
                out[r, 0] = last - first
                out[r, 1] = a_tot + (a_hi - a_lo)
                out[r, 2] = p_tot + (p_hi - p_lo)
                out[r, 3] = c_tot + (c_hi - c_lo)
                out[r, 4] = u_tot + (u_hi - u_lo)
            if i == n:
                break
            r += 1
            s0 = start[i]
            first = s0
            last = s0
            # Empty intervals at the first start: the first event of each set either
            # extends them (same start) or closes them with length 0.
            a_lo = a_hi = p_lo = p_hi = c_lo = c_hi = u_lo = u_hi = s0
            a_tot = p_tot = c_tot = u_tot = 0
        s = start[i]
        e = end[i]
        k = kind[i]
        if e > last:
            last = e
        a_lo, a_hi, a_tot = _merge(s, e, a_lo, a_hi, a_tot)
        if k == compute_code:
            p_lo, p_hi, p_tot = _merge(s, e, p_lo, p_hi, p_tot)
        elif k == comm_code:
            c_lo, c_hi, c_tot = _merge(s, e, c_lo, c_hi, c_tot)
        if k == compute_code or k == comm_code:
            u_lo, u_hi, u_tot = _merge(s, e, u_lo, u_hi, u_tot)
    return out_rank, out


def numba_sweep(rank, start, end, kind) -> Numbers:
    """The five figures by a plain single-threaded Numba sweep.

    Input: numpy arrays sorted by ``(rank, start_ns)`` (``kind`` as ``int8`` codes
    from :func:`kind_codes`). One pass; per rank it keeps one open merged interval
    for each of four sets (all events, compute, communication, compute ∪
    communication) and adds each interval's length when the next one starts after
    it ends. ``|communication ∩ compute|`` follows by inclusion–exclusion:
    ``|P| + |C| − |P ∪ C|``. Compiled with ``@njit(nogil=True, cache=True)``; call it
    once untimed to compile.
    """
    out_rank, out = _sweep_sorted(rank, start, end, kind, COMPUTE, COMMUNICATION)
    overlap = out[:, 2] + out[:, 3] - out[:, 4]
    return _numbers(out_rank, out[:, 0], out[:, 1], out[:, 2], out[:, 3], overlap)


# The same numbers as pau.core.classify: exclusive time per activity by priority.

#: For each set of running kinds (bit i = KINDS[i]), the activity that wins it under
#: the default priority (KINDS order), len(KINDS) = idle.
_WINNER = np.array([next((i for i in range(len(pau.core.KINDS)) if m >> i & 1), len(pau.core.KINDS))
                    for m in range(1 << len(pau.core.KINDS))], np.int64)


@njit(nogil=True, cache=True)
def _exclusive_sorted(rank, start, end, kind, winner):
    n = rank.size
    n_kinds = 6
    runs = 0
    for i in range(n):
        if i == 0 or rank[i] != rank[i - 1]:
            runs += 1
    out_rank = np.empty(runs, np.int32)
    out = np.zeros((runs, n_kinds + 1), np.int64)  # the kinds, then idle
    open_end = np.zeros(n_kinds, np.int64)         # end of each kind's merged interval
    r = -1
    i = 0
    while i < n:
        # One rank: its events, then its last open intervals.
        r += 1
        out_rank[r] = rank[i]
        mask = 0
        t = start[i]
        j = i
        while j < n and rank[j] == rank[i]:
            s = start[j]
            # Close, earliest first, the kinds whose intervals end before s.
            while mask:
                m = np.int64(0x7FFFFFFFFFFFFFFF)
                for k in range(n_kinds):
                    if mask >> k & 1 and open_end[k] < m:
                        m = open_end[k]
                if m >= s:
                    break
                out[r, winner[mask]] += m - t
                t = m
                for k in range(n_kinds):
                    if mask >> k & 1 and open_end[k] == m:
                        mask &= ~(1 << k)
            if s > t:
                out[r, winner[mask]] += s - t
                t = s
            k = kind[j]
            if mask >> k & 1:
                if end[j] > open_end[k]:
                    open_end[k] = end[j]
            else:
                mask |= 1 << k
                open_end[k] = end[j]
            j += 1
        while mask:
            m = np.int64(0x7FFFFFFFFFFFFFFF)
            for k in range(n_kinds):
                if mask >> k & 1 and open_end[k] < m:
                    m = open_end[k]
            out[r, winner[mask]] += m - t
            t = m
            for k in range(n_kinds):
                if mask >> k & 1 and open_end[k] == m:
                    mask &= ~(1 << k)
        i = j
    return out_rank, out


def numba_exclusive(rank, start, end, kind) -> dict:
    """The numbers of ``pau.core.classify`` (exclusive time per activity by the
    default priority, and idle, per rank) by a plain single-threaded Numba sweep.

    Input as :func:`numba_sweep`. Per rank it keeps the end of each kind's open
    merged interval and the set of kinds running; before each event start it closes
    the intervals that ended, earliest first, giving each elementary segment to the
    winning kind (a 64-entry table). Returns a dict ``{"rank": ..., activity: ...}``
    of arrays ordered by rank, activities in ``pau.core.ACTIVITIES`` order.
    """
    out_rank, out = _exclusive_sorted(rank, start, end, kind, _WINNER)
    order = np.argsort(out_rank, kind="stable")
    res = {"rank": out_rank[order]}
    for i, a in enumerate(pau.core.ACTIVITIES):
        res[a] = out[order, i]
    return res


# The nested-priority-union sweep (issue 17): the same numbers as classify.


@njit(nogil=True, cache=True)
def _nested_unions(rank, start, end, level, n_levels):
    """Per rank: first start, last end and ``|union of levels 0..L|`` for each L.

    Returns ``(out_rank, out, bad)``: ``out[r] = (span, U_0, ..., U_{n-1})``, and
    ``bad`` the first row that breaks the ``(rank, start_ns)`` order, ends before it
    starts or has a level outside ``[0, n_levels)`` (-1 when there is none; else
    ``out`` is unusable)."""
    n = rank.size
    runs = 0
    for i in range(n):
        if i == 0 or rank[i] != rank[i - 1]:
            runs += 1
    out_rank = np.empty(runs, np.int32)
    out = np.zeros((runs, n_levels + 1), np.int64)
    top = np.empty(n_levels, np.int64)   # running maximum end of each level's events
    r = -1
    first = 0
    for i in range(n):
        s = start[i]
        if i == 0 or rank[i] != rank[i - 1]:
            if i > 0 and rank[i] < rank[i - 1]:
                return out_rank, out, i
            if r >= 0:
                out[r, 0] = top[n_levels - 1] - first
            r += 1
            out_rank[r] = rank[i]
            first = s
            for lv in range(n_levels):
                top[lv] = s   # no time covered yet; every later start is >= s
        elif s < start[i - 1]:
            return out_rank, out, i
        e = end[i]
        k = level[i]
        if k < 0 or k >= n_levels or e < s:
            return out_rank, out, i
        # Sorted by start: the earlier events of level L cover exactly
        # [s, top[L]) after s, so this one adds max(0, e - max(s, top[L])).
        for lv in range(k, n_levels):
            t = top[lv]
            if e > t:
                out[r, 1 + lv] += e - (s if s > t else t)
                top[lv] = e
    if r >= 0:
        out[r, 0] = top[n_levels - 1] - first
    return out_rank, out, -1


def nested_union_sweep(rank, start, end, kind_code, n_kinds: int) -> dict:
    """Exclusive time per kind by priority, and idle, per rank: nested priority unions.

    The baseline of issue 17, single-threaded Numba (``@njit(nogil=True,
    cache=True)``; call once untimed to compile). For every event of priority level
    ``k`` (0 is the highest) and every level ``L >= k``, it adds the part of the event
    past level ``L``'s running maximum end, ``max(0, end − max(start, top_L))``, to
    ``U_L = |union of the events of levels 0..L|``, then raises ``top_L``. That is exact
    only for events sorted by ``(rank, start_ns)`` (every earlier event then started
    at or before this one, so the earlier events of a level cover ``[start, top_L)``
    past its start); the kernel checks the order as it goes and raises
    ``ValueError`` naming the first row out of order (:func:`sort_then_nested_union_sweep`
    sorts first). Then, per rank (DESIGN §2: the highest-priority kind running wins
    each instant)::

        exclusive_0 = U_0,  exclusive_L = U_L − U_{L−1},  idle = span − U_{n−1},

    with ``span`` = last end − first start of the rank (pau's default span).

    Parameters
    ----------
    rank, start, end : numpy arrays
        ``int32`` ranks and ``int64`` ns, sorted by ``(rank, start_ns)``.
    kind_code : numpy ``int8`` array
        The priority level of each event's kind, in ``[0, n_kinds)``. Under pau's
        default priority (``pau.core.KINDS`` order, highest first) these are the codes
        :func:`kind_codes` gives.
    n_kinds : int
        The number of priority levels.

    Returns
    -------
    dict
        ``{"rank": int32 array, name: int64 array, ...}`` ordered by rank, one array
        per level then ``"idle"``; with ``n_kinds == len(pau.core.KINDS)`` the names
        are ``pau.core.ACTIVITIES`` (so it equals :func:`exclusive_view` of
        ``pau.core.classify``'s table), otherwise ``"level0"``, ``"level1"``...
    """
    if n_kinds < 1:
        raise ValueError(f"n_kinds: expected at least 1 level, got {n_kinds}")
    out_rank, out, bad = _nested_unions(rank, start, end, kind_code, n_kinds)
    if bad >= 0:
        raise ValueError(
            f"nested_union_sweep: row {bad}: rank {int(rank[bad])}, start_ns {int(start[bad])}, "
            f"end_ns {int(end[bad])}, kind code {int(kind_code[bad])}: expected rows sorted by "
            f"(rank, start_ns), start_ns <= end_ns and kind codes in [0, {n_kinds}). Fix: sort "
            "first (sort_then_nested_union_sweep), or drop the bad row")
    names = (pau.core.ACTIVITIES[:-1] if n_kinds == len(pau.core.KINDS)
             else tuple(f"level{i}" for i in range(n_kinds)))
    res = {"rank": out_rank}
    unions = out[:, 1:]
    prev = np.zeros(out_rank.size, np.int64)
    for i, name in enumerate(names):
        res[name] = unions[:, i] - prev
        prev = unions[:, i]
    res["idle"] = out[:, 0] - prev
    return res


def sort_then_nested_union_sweep(rank, start, end, kind_code, n_kinds: int) -> dict:
    """:func:`nested_union_sweep` of input in any order: ``np.lexsort`` by
    ``(rank, start_ns)``, the four columns gathered in that order, then the sweep.
    What a Numba user has to do with unsorted events (the order among events with
    equal rank and start does not change the unions)."""
    order = np.lexsort((start, rank))
    return nested_union_sweep(rank[order], start[order], end[order], kind_code[order], n_kinds)


@njit(nogil=True, cache=True)
def _reduce_columns(rank, start, end, kind):
    n = rank.size
    r = np.int64(0)
    d = np.int64(0)
    k = np.int64(0)
    for i in range(n):
        r += rank[i]
        d += end[i] - start[i]
        k += kind[i]
    return n, r, d, k


def do_nothing_pass(rank, start, end, kind) -> tuple:
    """One pass over the four event columns that classifies nothing.

    Returns ``(rows, Σ rank, Σ (end − start), Σ kind)`` as Python ints, every sum in
    ``int64`` arithmetic (wrapping as numpy's ``sum`` does), so the pass reads every
    element and the compiler cannot drop it. Single-threaded Numba
    (``@njit(nogil=True, cache=True)``), free to vectorise: it stands for the memory
    traffic of any pass over the same columns, the ceiling of a classifier's speed.
    :func:`do_nothing_reference` gives the same tuple with numpy.
    """
    return tuple(int(x) for x in _reduce_columns(rank, start, end, kind))


def do_nothing_reference(rank, start, end, kind) -> tuple:
    """:func:`do_nothing_pass`'s answer computed by numpy (for the assertion)."""
    with np.errstate(over="ignore"):
        return (int(rank.size), int(rank.sum(dtype=np.int64)),
                int((end - start).sum(dtype=np.int64)), int(kind.sum(dtype=np.int64)))


def exclusive_view(table: pa.Table) -> dict:
    """``pau.core.classify`` output as :func:`numba_exclusive` gives it."""
    rank = table["rank"].to_numpy()
    dur = table["duration_ns"].to_numpy()
    act = pc.cast(table["activity"], pa.string()).to_numpy(zero_copy_only=False)
    ranks, inverse = np.unique(rank, return_inverse=True)
    res = {"rank": ranks.astype(np.int32)}
    for a in pau.core.ACTIVITIES:
        res[a] = _per_rank_sum(inverse, ranks.size, dur, act == a)
    return res


# ---------------------------------------------------------------------------
# DuckDB

DUCKDB_SQL = """
WITH ev AS (
    SELECT rank, start_ns AS s, end_ns AS e,
           CAST(kind AS VARCHAR) = 'compute' AS is_p,
           CAST(kind AS VARCHAR) = 'communication' AS is_c
    FROM {table}
),
-- Per rank in start order, the latest end among the EARLIER events of each set
-- (all events, compute, communication, compute or communication): one sort, four
-- running maxima sharing the window.
run AS (
    SELECT rank, s, e, is_p, is_c,
           max(e) OVER w AS m_all,
           max(e) FILTER (WHERE is_p) OVER w AS m_p,
           max(e) FILTER (WHERE is_c) OVER w AS m_c,
           max(e) FILTER (WHERE is_p OR is_c) OVER w AS m_u
    FROM ev
    WINDOW w AS (PARTITION BY rank ORDER BY s, e
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
),
-- Every earlier event started at or before s, so the union of the earlier ones
-- covers exactly [s, m) after s: the event adds max(0, e - max(s, m)) to the union
-- (half-open; no earlier event: m is NULL and the event adds e - s).
unions AS (
    SELECT rank,
           max(e) - min(s) AS span,
           CAST(sum(greatest(0, e - greatest(s, coalesce(m_all, s)))) AS BIGINT) AS busy,
           CAST(coalesce(sum(greatest(0, e - greatest(s, coalesce(m_p, s))))
                FILTER (WHERE is_p), 0) AS BIGINT) AS compute,
           CAST(coalesce(sum(greatest(0, e - greatest(s, coalesce(m_c, s))))
                FILTER (WHERE is_c), 0) AS BIGINT) AS communication,
           CAST(coalesce(sum(greatest(0, e - greatest(s, coalesce(m_u, s))))
                FILTER (WHERE is_p OR is_c), 0) AS BIGINT) AS either
    FROM run GROUP BY rank
)
SELECT rank, span, busy, compute, communication,
       compute + communication - either AS overlap
FROM unions
ORDER BY rank
"""

#: The textbook gaps-and-islands form (two window passes over every event copied
#: into each of its sets, then a GROUP BY per island). Same answer, about 4x slower
#: than :data:`DUCKDB_SQL` here; kept for reference and tested on small inputs.
DUCKDB_ISLANDS_SQL = """
WITH ev AS (
    SELECT rank, start_ns AS s, end_ns AS e, CAST(kind AS VARCHAR) AS kind FROM {table}
),
sets AS (
    SELECT rank, 0 AS g, s, e FROM ev
    UNION ALL SELECT rank, 1, s, e FROM ev WHERE kind = 'compute'
    UNION ALL SELECT rank, 2, s, e FROM ev WHERE kind = 'communication'
    UNION ALL SELECT rank, 3, s, e FROM ev WHERE kind IN ('compute', 'communication')
),
-- An event starts a new island when it starts after every earlier event of its
-- set has ended (half-open: touching events merge).
flagged AS (
    SELECT rank, g, s, e,
           CASE WHEN s <= max(e) OVER w THEN 0 ELSE 1 END AS new_island
    FROM sets
    WINDOW w AS (PARTITION BY rank, g ORDER BY s, e
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
),
numbered AS (
    SELECT rank, g, s, e,
           sum(new_island) OVER (PARTITION BY rank, g ORDER BY s, e
                                 ROWS UNBOUNDED PRECEDING) AS island
    FROM flagged
),
islands AS (
    SELECT rank, g, max(e) - min(s) AS len FROM numbered GROUP BY rank, g, island
),
unions AS (
    SELECT rank,
           CAST(coalesce(sum(len) FILTER (WHERE g = 0), 0) AS BIGINT) AS busy,
           CAST(coalesce(sum(len) FILTER (WHERE g = 1), 0) AS BIGINT) AS compute,
           CAST(coalesce(sum(len) FILTER (WHERE g = 2), 0) AS BIGINT) AS communication,
           CAST(coalesce(sum(len) FILTER (WHERE g = 3), 0) AS BIGINT) AS either
    FROM islands GROUP BY rank
),
spans AS (
    SELECT rank, max(e) - min(s) AS span FROM ev GROUP BY rank
)
SELECT rank, span, busy, compute, communication,
       compute + communication - either AS overlap
FROM spans JOIN unions USING (rank)
ORDER BY rank
"""


def duckdb_connect(table: pa.Table, name: str = "events"):
    """A DuckDB connection with ``table`` registered (zero-copy) as view ``name``."""
    import duckdb

    con = duckdb.connect()
    con.register(name, table)
    return con


def duckdb_numbers(con, name: str = "events", sql: str = DUCKDB_SQL) -> Numbers:
    """The five figures in DuckDB SQL over a registered Arrow table.

    :data:`DUCKDB_SQL`: window functions over the events of each rank in start
    order. One window keeps four running maxima of the end of the *earlier* events
    (all, compute, communication, compute or communication: ``max(e) FILTER (...)
    OVER w``); an event adds ``max(0, end − max(start, running max))`` to the union
    of each set it belongs to. ``|communication ∩ compute|`` by inclusion–exclusion,
    ``|P| + |C| − |P ∪ C|``. This is the fastest form found; the textbook gaps and
    islands (:data:`DUCKDB_ISLANDS_SQL`, pass ``sql=``) gives the same answer ~4x
    slower. DuckDB runs with its default threads (all cores) and needs no ordering
    of the input.
    """
    res = con.execute(sql.format(table=name)).fetchnumpy()
    return _numbers(res["rank"], res["span"], res["busy"], res["compute"],
                    res["communication"], res["overlap"])
