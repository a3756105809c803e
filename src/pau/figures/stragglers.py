"""Stragglers: the time each rank waited for the slowest rank of a step, charged to it
(:func:`stragglers`, DESIGN §4), and NVRx-style performance scores per rank and report
window (:func:`straggler_scores`); a run's per-rank step times (:func:`step_figures`).

Both figures read step rows through one check (:func:`checked_steps`): they refuse, or
quarantine, the same rows. Choices where the design is silent: ``docs/analysis.md``
(stragglers) and ``docs/outcome.md`` (scores). Time is ``int64`` ns, intervals half-open;
waits and charges are exact integers, accelerator-seconds and shares floats derived at the
edge; a ratio with a zero denominator is None, never NaN. Inputs are never modified.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine._input import _column, as_table, int_values, time_values
from pau.engine.types import (Quarantined, RankScore, StepFigures, StepRank, StragglerFigures,
                              StragglerScoresSummary, StragglersSummary, check_on_invalid)
from pau.errors import InvalidRowError, OptionError, PauError
from pau.figures._common import _NS_PER_S, _count, _fmt, _one_job, _ratio

__all__ = [
    "Stragglers", "stragglers", "StragglerScores", "straggler_scores", "StepRows", "checked_steps", "step_rows",
    "step_figures", "step_times", "nearest_rank",
]

_R = TypeVar("_R")


def _group_starts(*sorted_keys: np.ndarray) -> np.ndarray:
    """Row index where each run of equal keys starts (keys already sorted)."""
    n = sorted_keys[0].size
    new = np.ones(n, bool)
    if n:
        new[1:] = np.any([k[1:] != k[:-1] for k in sorted_keys], axis=0)
    return np.flatnonzero(new)


def _sort_order(attempt: np.ndarray | None, step: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Stable order by ``(attempt, step, rank)``; no sort when already ordered (the
    usual layout of step tables)."""
    keys = [k for k in (attempt, step, rank) if k is not None]
    n = rank.size
    if n > 1:
        ordered = True
        tie = np.ones(n - 1, bool)  # adjacent pairs equal on every key so far
        for k in keys:
            if not np.all((k[1:] >= k[:-1]) | ~tie):
                ordered = False
                break
            tie &= k[1:] == k[:-1]
        if ordered:
            return np.arange(n)
    return np.lexsort(keys[::-1])  # lexsort is stable: equal keys keep input order


# ---------------------------------------------------------------------------
# the step rows both figures read, and the one check of them


def _step_records(table_like: Any, table: str) -> tuple[pa.Table, np.ndarray | None]:
    """The step rows and their row numbers in a lifecycle; ``(table, None)`` for a table
    without a ``record`` column (a table of steps)."""
    t = as_table(table_like, table)
    if "record" not in t.schema.names:
        return t, None
    rec = _column(t, "record", table)
    if pa.types.is_dictionary(rec.type):
        rec = rec.cast(rec.type.value_type)
    keep = pc.fill_null(pc.equal(rec, "step"), False)
    return t.filter(keep), np.flatnonzero(keep.to_numpy(zero_copy_only=False))


def step_rows(table_like: Any, table: str = "steps") -> pa.Table:
    """The step rows of a lifecycle (``record == "step"``), or the table itself when it
    has no ``record`` column (a table of steps)."""
    return _step_records(table_like, table)[0]


#: Why a step row cannot be used, by code (0: it can), with the column named and the fix.
#: One list for both straggler figures (``docs/analysis.md``, "Rows that cannot be used").
_STEP_REASONS = ("ok", "null rank", "rank -1 (all ranks)", "null step", "null attempt", "null start_ns",
                 "end_ns before start_ns", "duplicate (attempt, step, rank)")
_STEP_FIX = ("", "give every step record its rank",
             "give one step record per rank: stragglers and scores need each rank's own times",
             "give every step record its step number", "give every step record its attempt, or drop the column",
             "give every step record its start (DESIGN §2.2: start_ns is never null), or drop the column",
             "correct the times", "give one row per (attempt, step, rank)")


@dataclass
class StepRows:
    """What :func:`checked_steps` returns: the step rows as int64 arrays (nulls as 0,
    with their masks), the rows that cannot be used and why, in input order (the
    quarantine's ``row`` numbers the input's rows: a lifecycle's, other records counted).

    ``order`` is every row's index in stable ``(attempt, step, rank)`` order;
    ``usable`` the rows that passed the check and have an end (``in_flight``: those that
    passed without one). Without an ``attempt`` column ``attempt`` is all 0; without a
    ``start_ns`` column ``start`` is None."""

    table: pa.Table
    attempt: np.ndarray
    step: np.ndarray
    rank: np.ndarray
    start: np.ndarray | None
    end: np.ndarray
    end_null: np.ndarray
    has_attempt: bool
    order: np.ndarray
    bad: np.ndarray
    quarantine: pa.Table | None

    @property
    def usable(self) -> np.ndarray:
        out: np.ndarray = ~self.bad & ~self.end_null
        return out

    @property
    def in_flight(self) -> int:
        return int((~self.bad & self.end_null).sum())

    def result(self, out: _R, on_invalid: str) -> _R | Quarantined:
        """``out``, or ``Quarantined(out, rows set aside)`` with ``on_invalid="quarantine"``."""
        if on_invalid != "quarantine":
            return out
        q = self.quarantine if self.quarantine is not None else self.table.slice(0, 0).append_column(
            "row", pa.array([], pa.int64())).append_column("reason", pa.array([], pa.string()))
        return Quarantined(out, q)


def checked_steps(table_like: Any, *, by: str = "step", need_start: bool = False,
                  on_invalid: str = "raise") -> StepRows:
    """The step rows of a lifecycle or a steps table, checked once for every figure over them.

    A row cannot be used when its rank, ``by`` (the step) or, with those columns,
    ``attempt`` or ``start_ns`` is null; when its rank is -1 (every rank: the figures
    need each rank's own times); when ``end_ns < start_ns``; or when it repeats an
    ``(attempt, by, rank)`` already seen (all but the first, in input order). Such rows
    raise :class:`pau.errors.InvalidRowError` (the first one, with the count; a
    lifecycle's row number and the table named ``lifecycle``), or with
    ``on_invalid="quarantine"`` are set aside with their row number and reason. A null
    ``end_ns`` is a step in flight, not an error. ``need_start``: a table without a
    ``start_ns`` column raises (durations need it); else the column is optional.
    """
    check_on_invalid(on_invalid)
    t, source_rows = _step_records(table_like, "steps")
    name = "steps" if source_rows is None else "lifecycle"
    _one_job(t, "the step rows' figures (stragglers, straggler scores)", name)
    n = t.num_rows
    names = t.schema.names
    rank, rank_null = int_values(t, "rank", name)
    step, step_null = int_values(t, by, name)
    has_attempt = "attempt" in names
    attempt, attempt_null = int_values(t, "attempt", name) if has_attempt else (np.zeros(n, np.int64),
                                                                                     np.zeros(n, bool))
    end, end_null = time_values(t, "end_ns", name)
    if need_start or "start_ns" in names:
        start, start_null = time_values(t, "start_ns", name)
    else:
        start, start_null = None, np.zeros(n, bool)

    reasons = np.zeros(n, np.int8)

    def mark(mask: np.ndarray, c: int) -> None:
        reasons[(reasons == 0) & mask] = c

    mark(rank_null, 1)
    mark(~rank_null & (rank == -1), 2)
    mark(step_null, 3)
    mark(attempt_null, 4)
    mark(start_null, 5)
    if start is not None:
        mark(~end_null & ~start_null & (end < start), 6)
    order = _sort_order(attempt if has_attempt else None, step, rank)
    cand = order[reasons[order] == 0]
    if cand.size > 1:
        same = ((attempt[cand][1:] == attempt[cand][:-1]) & (step[cand][1:] == step[cand][:-1])
                & (rank[cand][1:] == rank[cand][:-1]))
        dup = np.zeros(n, bool)
        dup[cand[1:][same]] = True
        mark(dup, 7)
    bad = reasons != 0
    quarantine = None
    if bad.any():
        rows = np.flatnonzero(bad)
        numbers = rows if source_rows is None else source_rows[rows]  # the input's row numbers
        why = list(_STEP_REASONS)
        why[3] = f"null {by}"
        why[7] = f"duplicate (attempt, {by}, rank)"
        if on_invalid == "raise":
            r = int(reasons[rows[0]])
            col = ("", "rank", "rank", by, "attempt", "start_ns", "end_ns", "rank")[r]
            raise InvalidRowError(name, col, int(numbers[0]), why[r], _STEP_FIX[r], int(rows.size))
        quarantine = t.take(pa.array(rows)).append_column("row", pa.array(numbers, pa.int64())).append_column(
            "reason", pa.array([why[int(x)] for x in reasons[rows]], pa.string()))
    return StepRows(t, attempt, step, rank, start, end, end_null, has_attempt, order, bad, quarantine)


# ---------------------------------------------------------------------------
# stragglers


@dataclass
class Stragglers:
    """What :func:`stragglers` returns.

    Attributes
    ----------
    table : pyarrow.Table
        One row per (step, rank), sorted by ``[attempt,] step, rank``:
        ``[attempt,] step, rank, [start_ns,] end_ns, wait_ns, slowest, charged_ns``. ``wait_ns`` is
        the time the rank waited for the slowest rank of its step; ``charged_ns`` is
        the step's total wait on the slowest rank's row, 0 elsewhere.
    ranks : pyarrow.Table
        Per rank: ``rank, steps, slowest_steps, slowest_share, wait_ns, charged_ns,
        charged_accelerator_seconds, charged_share, persistent``.
    persistent : list
        The ranks named persistent stragglers (see :func:`stragglers`).
    in_flight : int
        Step rows without an end (in flight), left out of the comparison.
    quarantine : pyarrow.Table or None
        Rows set aside with ``on_invalid="quarantine"``.
    """

    table: pa.Table
    ranks: pa.Table
    persistent: list[Any]
    min_share: float
    in_flight: int = 0
    quarantine: pa.Table | None = None

    def summary(self) -> StragglersSummary:
        """Headline figures: steps, ranks, rows, in_flight, quarantined, wait_ns
        (exact total accelerator-ns spent waiting), wait_accelerator_seconds,
        persistent (ranks)."""
        steps = int(pc.sum(self.table["slowest"].cast(pa.int64())).as_py() or 0)
        wait = int(pc.sum(self.table["wait_ns"]).as_py() or 0)
        return {"steps": steps, "ranks": self.ranks.num_rows, "rows": self.table.num_rows,
                "in_flight": self.in_flight,
                "quarantined": 0 if self.quarantine is None else self.quarantine.num_rows,
                "wait_ns": wait, "wait_accelerator_seconds": wait / _NS_PER_S,
                "persistent": list(self.persistent)}

    def render(self) -> str:
        s = self.summary()
        lines = [f"stragglers: {s['steps']:,} steps, {s['ranks']} ranks, "
                 f"{s['wait_accelerator_seconds']:,.3f} accelerator-s waiting for the slowest rank",
                 f"{'rank':>6} {'slowest':>8} {'share':>7} {'charged acc-s':>14} {'of wait':>8}  persistent"]
        for r in self.ranks.to_pylist():
            lines.append(f"{r['rank']:>6} {r['slowest_steps']:>8} {_fmt(r['slowest_share']):>7} "
                         f"{r['charged_accelerator_seconds']:>14,.3f} {_fmt(r['charged_share']):>8}  "
                         f"{'yes' if r['persistent'] else ''}")
        lines.append(f"persistent stragglers (slowest in, or charged, >= {self.min_share:.0%} of steps or "
                     f"wait, and more than 1/ranks): {', '.join(map(str, self.persistent)) or 'none'}")
        return "\n".join(lines)


def stragglers(events_or_steps: Any, *, by: str = "step", min_share: float = 0.2,
               on_invalid: str = "raise") -> Stragglers | Quarantined:
    """Per step, the time each rank waited for the slowest rank, charged to it.

    Parameters
    ----------
    events_or_steps : table-like
        Either a lifecycle table (DESIGN §2.2; its ``step`` records are used, keyed
        by ``attempt, step``) or a table ``rank, step, end_ns`` (optional
        ``start_ns``, ``attempt``), e.g. from :func:`pau.readers.alibaba.read_alibaba_minibatch`.
    by : str, default "step"
        The integer column that says which rows belong together (a step number, or
        e.g. a collective sequence number in a table that has one).
    min_share : float, default 0.2
        A rank is a *persistent straggler* when it is the slowest rank in at least
        ``min_share`` of the steps it took part in, or is charged at least
        ``min_share`` of all the wait; and that share is more than ``1/n`` (``n``
        ranks: the share chance alone would give).
    on_invalid : {"raise", "quarantine"}
        The rows :func:`checked_steps` refuses (null rank, step, attempt or
        ``start_ns``, ``rank = -1``, ``end_ns < start_ns``, duplicate ``(attempt,
        step, rank)`` rows but the first) raise, or are set aside and the result
        returned as :class:`pau.core.Quarantined`.

    Returns
    -------
    Stragglers

    Notes
    -----
    ``wait(r, k) = max_end(k) - end(r, k)`` over the ranks that reported step
    ``k`` (exact int64 ns: accelerator time rank ``r`` spent waiting). The step's
    total wait ``sum_r wait(r, k)`` is charged to the rank with the latest end
    (ties: the lowest rank). Rows with a null ``end_ns`` (steps in flight) are left
    out and counted in ``in_flight``.
    """
    check_on_invalid(on_invalid)
    if not 0 <= min_share <= 1:
        raise PauError(f"min_share = {min_share!r}. Fix: give a share in [0, 1]")
    rows = checked_steps(events_or_steps, by=by, on_invalid=on_invalid)
    order = rows.order[rows.usable[rows.order]]
    a, k, r, e = rows.attempt[order], rows.step[order], rows.rank[order], rows.end[order]

    starts = _group_starts(a, k)
    gid = np.zeros(order.size, np.int64)
    if order.size:
        gid[starts] = 1
        gid = np.cumsum(gid) - 1
        max_end = np.maximum.reduceat(e, starts)
    else:
        max_end = np.zeros(0, np.int64)
    wait = max_end[gid] - e
    total = np.add.reduceat(wait, starts) if order.size else np.zeros(0, np.int64)
    # The first row at the max end of each step: rows are sorted by rank inside a
    # step, so ties go to the lowest rank.
    at_max = np.flatnonzero(e == max_end[gid])
    g = gid[at_max]  # ascending
    first = np.ones(g.size, bool)
    first[1:] = g[1:] != g[:-1]
    slow_rows = at_max[first]
    slowest = np.zeros(order.size, bool)
    slowest[slow_rows] = True
    charged = np.zeros(order.size, np.int64)
    charged[slow_rows] = total

    cols = {}
    if rows.has_attempt:
        cols["attempt"] = pa.array(a, pa.int32())
    cols.update(step=pa.array(k, pa.int64()), rank=pa.array(r, pa.int32()))
    if rows.start is not None:
        cols["start_ns"] = pa.array(rows.start[order], pa.int64())
    cols.update(end_ns=pa.array(e, pa.int64()),
                wait_ns=pa.array(wait, pa.int64()), slowest=pa.array(slowest),
                charged_ns=pa.array(charged, pa.int64()))
    table = pa.table(cols)

    if r.size and r.min() >= 0 and r.max() < 1 << 20:
        # small non-negative rank numbers (the usual case): dense codes without a sort
        seen = np.bincount(r, minlength=1) > 0
        ranks = np.flatnonzero(seen)
        code = np.cumsum(seen) - 1
        rdense = code[r]
    else:
        ranks, rdense = np.unique(r, return_inverse=True)
    nr = ranks.size
    steps_per = np.bincount(rdense, minlength=nr)
    slow_per = np.bincount(rdense[slow_rows], minlength=nr)
    wait_per = np.zeros(nr, np.int64)
    np.add.at(wait_per, rdense, wait)
    charged_per = np.zeros(nr, np.int64)
    np.add.at(charged_per, rdense, charged)
    total_wait = int(wait.sum())
    share = [None if s == 0 else int(x) / int(s) for x, s in zip(slow_per, steps_per)]
    c_share = [_ratio(int(c), total_wait) for c in charged_per]
    # the larger of the two shares, against both the floor and chance (1/n)
    top = [max(x or 0.0, y or 0.0) for x, y in zip(share, c_share)]
    persistent = [x >= min_share and x * nr > 1 for x in top]
    rank_table = pa.table({
        "rank": pa.array(ranks, pa.int32()),
        "steps": pa.array(steps_per, pa.int64()),
        "slowest_steps": pa.array(slow_per, pa.int64()),
        "slowest_share": pa.array(share, pa.float64()),
        "wait_ns": pa.array(wait_per, pa.int64()),
        "charged_ns": pa.array(charged_per, pa.int64()),
        "charged_accelerator_seconds": pa.array(charged_per / _NS_PER_S, pa.float64()),
        "charged_share": pa.array(c_share, pa.float64()),
        "persistent": pa.array(persistent, pa.bool_()),
    })
    out = Stragglers(table, rank_table, [int(x) for x, p in zip(ranks, persistent) if p], float(min_share),
                     rows.in_flight, rows.quarantine)
    res: Stragglers | Quarantined = rows.result(out, on_invalid)
    return res


def nearest_rank(sorted_ns: np.ndarray, num: int, den: int) -> int:
    """The num/den quantile by the nearest-rank rule: the smallest value with at
    least num/den of the values at or below it (one of them, so exact ns)."""
    k = max(1, -(-num * sorted_ns.size // den))  # ceil(n * num / den), in ints
    return int(sorted_ns[k - 1])


def step_times(lifecycle: Any) -> dict[int, np.ndarray] | None:
    """Each rank's finished step executions' durations in ns, ascending (int64), in rank
    order. None when the lifecycle has no step rows of a rank of their own (rank -1
    rows say nothing about one rank's pace)."""
    t = as_table(lifecycle, "lifecycle")
    _one_job(t, "step times")
    steps = t.filter(pc.and_(pc.equal(t["record"], "step"), pc.is_valid(t["end_ns"])))
    if steps.num_rows == 0 or not pc.all(pc.greater_equal(steps["rank"], 0)).as_py():
        return None
    rank = np.asarray(steps["rank"].to_numpy(zero_copy_only=False), np.int64)
    dur = np.asarray(pc.subtract(steps["end_ns"], steps["start_ns"]).to_numpy(zero_copy_only=False), np.int64)
    order = np.lexsort((dur, rank))  # one sort: each rank's durations, ascending, as a slice
    rank, dur = rank[order], dur[order]
    cut = np.flatnonzero(np.r_[True, rank[1:] != rank[:-1], True])
    return {int(rank[lo]): dur[lo:hi] for lo, hi in zip(cut[:-1].tolist(), cut[1:].tolist())}


def step_figures(lifecycle: Any) -> StepFigures | None:
    """Per rank, its finished step executions' count and time (median, p90 and max by
    the nearest-rank rule, exact ns), and the stragglers (:func:`stragglers`
    summary, with each persistent straggler's charged accelerator time). None when
    the lifecycle has no step rows of a rank of their own (rank -1 rows say nothing
    about one rank's pace)."""
    t = as_table(lifecycle, "lifecycle")
    _one_job(t, "step figures")
    times = step_times(t)
    if times is None:
        return None
    per_rank: list[StepRank] = []
    for r, d in times.items():
        per_rank.append({"rank": r, "steps": int(d.size), "median_ns": nearest_rank(d, 1, 2),
                         "p90_ns": nearest_rank(d, 9, 10), "max_ns": int(d[-1])})
    st = stragglers(t, on_invalid="quarantine")
    s = st.result if isinstance(st, Quarantined) else st
    summ = s.summary()
    charged = {r["rank"]: int(r["charged_ns"]) for r in s.ranks.to_pylist()}
    figures: StragglerFigures = {
        "steps": summ["steps"], "ranks": summ["ranks"], "rows": summ["rows"], "in_flight": summ["in_flight"],
        "quarantined": summ["quarantined"], "wait_ns": summ["wait_ns"],
        "wait_accelerator_seconds": summ["wait_accelerator_seconds"],
        "persistent": [{"rank": int(r), "charged_ns": charged.get(r, 0)} for r in s.persistent]}
    return {"per_rank": per_rank, "stragglers": figures}


# ---------------------------------------------------------------------------
# NVRx-style straggler scores


@dataclass
class StragglerScores:
    """What :func:`straggler_scores` returns.

    Attributes
    ----------
    table : pyarrow.Table
        One row per (window, rank): ``[attempt,] window, rank, steps, median_ns,
        relative, individual`` (scores float64, null where the median is 0).
    in_flight : int
        Step rows without an end, left out.
    quarantine : pyarrow.Table or None
    """

    table: pa.Table
    in_flight: int = 0
    quarantine: pa.Table | None = None

    def summary(self, threshold: float = 0.75) -> StragglerScoresSummary:
        """Per rank the lowest scores, and the ranks below ``threshold`` (NVRx's
        default 0.75) on either score in any window."""
        rows = self.table.to_pylist()
        ranks: dict[int, RankScore] = {}
        for r in rows:
            d = ranks.setdefault(r["rank"], {"rank": r["rank"], "min_relative": None, "min_individual": None})
            d["min_relative"] = _lower_of(d["min_relative"], r["relative"])
            d["min_individual"] = _lower_of(d["min_individual"], r["individual"])
        below = sorted(k for k, d in ranks.items() if any(v is not None and v < threshold
                                                            for v in (d["min_relative"], d["min_individual"])))
        return {"windows": len({(r.get("attempt"), r["window"]) for r in rows}), "ranks": len(ranks),
                "in_flight": self.in_flight, "threshold": threshold, "stragglers": below,
                "per_rank": [ranks[k] for k in sorted(ranks)],
                "quarantined": 0 if self.quarantine is None else self.quarantine.num_rows}


def _lower_of(low: float | None, x: float | None) -> float | None:
    """The lower of a running minimum and a score (None: no value yet / no score)."""
    return x if x is not None and (low is None or x < low) else low


def _lower_median(sorted_vals: np.ndarray) -> int:
    """The lower of the two middle values (torch.median's rule, which NVRx uses): an
    element, so exact ns."""
    return int(sorted_vals[(sorted_vals.size - 1) // 2])


def straggler_scores(steps: Any, *, every_steps: int | None = None, every_ns: int | None = None,
                     on_invalid: str = "raise") -> StragglerScores | Quarantined:
    """NVRx-style performance scores per rank and report window, in [0, 1].

    Parameters
    ----------
    steps : table-like
        A lifecycle table (its ``step`` records) or ``rank, step, start_ns, end_ns``
        (optional ``attempt``).
    every_steps : int, optional
        A report window holds the steps ``k`` with the same ``k // every_steps`` (per
        attempt): windows aligned to multiples of the width.
    every_ns : int, optional
        A report window holds the steps that start in the same ``[j·w, (j+1)·w)``.
        Neither: one window per attempt.
    on_invalid : {"raise", "quarantine"}
        The rows :func:`checked_steps` refuses, as for :func:`stragglers` (null rank,
        step, attempt or start, ``rank = -1``, ``end_ns < start_ns``, duplicate
        ``(attempt, step, rank)`` rows but the first).

    Returns
    -------
    StragglerScores or pau.core.Quarantined

    Notes
    -----
    As NVIDIA's nvidia-resiliency-ext straggler detection scores a section
    (``ReportGenerator._compute_sections_perf_scores``): per window, the median step
    time ``m(r, w)`` of each rank (the lower middle value, as ``torch.median``);
    **relative** score ``min over ranks m(·, w) / m(r, w)`` (against the fastest rank
    of the window), **individual** score ``min over windows w' <= w m(r, w') /
    m(r, w)`` (against the rank's own best so far, the current window included).
    Both are in [0, 1]; 1 is the reference itself. Windows are taken in order of
    ``(attempt, window)``.
    """
    check_on_invalid(on_invalid)
    if every_steps is not None and every_ns is not None:
        raise OptionError("straggler_scores: every_steps= and every_ns= both set the windows. Fix: give one")
    width_s = None if every_steps is None else _count(every_steps, "every_steps", positive=True)
    width_t = None if every_ns is None else _count(every_ns, "every_ns", positive=True)
    rows = checked_steps(steps, need_start=True, on_invalid=on_invalid)
    keep = rows.usable
    start = rows.start
    assert start is not None  # need_start
    a, k, r, s0 = rows.attempt[keep], rows.step[keep], rows.rank[keep], start[keep]
    dur = rows.end[keep] - s0
    if width_s is not None:
        win = (k // width_s) * width_s
    elif width_t is not None:
        win = (s0 // width_t) * width_t
    else:
        win = np.zeros(a.size, np.int64)
    o = np.lexsort((dur, r, win, a))
    a, win, r, dur = a[o], win[o], r[o], dur[o]
    cut = np.flatnonzero(np.r_[True, (a[1:] != a[:-1]) | (win[1:] != win[:-1]) | (r[1:] != r[:-1]), True]) \
        if a.size else np.zeros(1, np.int64)
    cells = []  # (attempt, window, rank, steps, median)
    for lo, hi in zip(cut[:-1].tolist(), cut[1:].tolist()):
        cells.append((int(a[lo]), int(win[lo]), int(r[lo]), hi - lo, _lower_median(dur[lo:hi])))
    best_in_window: dict[tuple[int, int], int] = {}
    for c in cells:
        key = (c[0], c[1])
        best_in_window[key] = min(best_in_window.get(key, c[4]), c[4])
    best_of_rank: dict[int, int] = {}
    out = []
    for c in cells:  # in (attempt, window, rank) order: each rank's windows in order
        best_of_rank[c[2]] = min(best_of_rank.get(c[2], c[4]), c[4])
        med = c[4]
        rel = best_in_window[(c[0], c[1])] / med if med else None
        ind = best_of_rank[c[2]] / med if med else None
        out.append((*c, rel, ind))
    cols: dict[str, pa.Array] = {}
    if rows.has_attempt:
        cols["attempt"] = pa.array([x[0] for x in out], pa.int32())
    cols.update(window=pa.array([x[1] for x in out], pa.int64()), rank=pa.array([x[2] for x in out], pa.int32()),
                steps=pa.array([x[3] for x in out], pa.int64()), median_ns=pa.array([x[4] for x in out], pa.int64()),
                relative=pa.array([x[5] for x in out], pa.float64()),
                individual=pa.array([x[6] for x in out], pa.float64()))
    res = StragglerScores(pa.table(cols), rows.in_flight, rows.quarantine)
    scores: StragglerScores | Quarantined = rows.result(res, on_invalid)
    return scores
