"""Analyses over ledgers and timelines: stragglers, comparisons, interference.

DESIGN §4. Every choice made where the design is silent is written in
``docs/analysis.md``. In short:

* Time is ``int64`` ns, intervals half-open ``[start_ns, end_ns)``. Waits, charges
  and overlaps are exact integers; accelerator-seconds, rates and ratios are floats
  derived at the edge. A ratio with a zero denominator is ``None``, never NaN.
* Inputs are never modified: results are new tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional, TypedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from pau.engine._format import duration
from pau.engine._input import _column, as_table, int_values, null_mask, time_values
from pau.engine.ledger import Ledger
from pau.engine._names import TOP_KERNELS
from pau.engine.types import LedgerSummary, Quarantined, TopKernel, check_on_invalid
from pau.engine.vocab import STATES
from pau.figures.economics import cost
from pau.errors import InvalidRowError, PauError, SchemaError

__all__ = [
    "Stragglers",
    "stragglers",
    "read_alibaba_minibatch",
    "Comparison",
    "compare",
    "Interference",
    "interference",
    "colocated",
    "top_kernels",
    "step_figures",
    "range_summary",
    "step_rows",
    "step_times",
    "nearest_rank",
]

_NS_PER_S = 10**9
#: TOP_KERNELS (pau.engine._names): rows of :func:`top_kernels` in a run's summary and report, and of a
#: kernel diff in text.


def _ratio(a, b):
    return a / b if b else None


def _group_starts(*sorted_keys: np.ndarray) -> np.ndarray:
    """Row index where each run of equal keys starts (keys already sorted)."""
    n = sorted_keys[0].size
    new = np.ones(n, bool)
    if n:
        new[1:] = np.any([k[1:] != k[:-1] for k in sorted_keys], axis=0)
    return np.flatnonzero(new)


def _sort_order(attempt, step, rank) -> np.ndarray:
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


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.6g}"
    return f"{v:,}"


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
    persistent: list
    min_share: float
    in_flight: int = 0
    quarantine: pa.Table | None = None

    def summary(self) -> dict:
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


_STRAGGLER_REASONS = ("ok", "null rank", "rank -1 (all ranks)", "null step", "end_ns before start_ns",
                      "duplicate (step, rank)")
_STRAGGLER_FIX = ("", "give every step record its rank",
                  "give one step record per rank: waits need each rank's own end",
                  "give every step record its step number", "correct the times",
                  "give one row per (step, rank)")


def step_rows(table_like: Any, table: str = "steps") -> pa.Table:
    """The step rows of a lifecycle (``record == "step"``), or the table itself when it
    has no ``record`` column (a table of steps)."""
    t = as_table(table_like, table)
    if "record" in t.schema.names:
        rec = _column(t, "record", table)
        if pa.types.is_dictionary(rec.type):
            rec = rec.cast(rec.type.value_type)
        t = t.filter(pc.fill_null(pc.equal(rec, "step"), False))
    return t


def stragglers(events_or_steps: Any, *, by: str = "step", min_share: float = 0.2,
               on_invalid: str = "raise"):
    """Per step, the time each rank waited for the slowest rank, charged to it.

    Parameters
    ----------
    events_or_steps : table-like
        Either a lifecycle table (DESIGN §2.2; its ``step`` records are used, keyed
        by ``attempt, step``) or a table ``rank, step, end_ns`` (optional
        ``start_ns``, ``attempt``), e.g. from :func:`read_alibaba_minibatch`.
    by : str, default "step"
        The integer column that says which rows belong together (a step number, or
        e.g. a collective sequence number in a table that has one).
    min_share : float, default 0.2
        A rank is a *persistent straggler* when it is the slowest rank in at least
        ``min_share`` of the steps it took part in, or is charged at least
        ``min_share`` of all the wait; and that share is more than ``1/n`` (``n``
        ranks: the share chance alone would give).
    on_invalid : {"raise", "quarantine"}
        Null rank or step, ``rank = -1``, ``end_ns < start_ns`` and duplicate
        ``(step, rank)`` rows (all but the first) raise, or are set aside and the
        result returned as :class:`pau.core.Quarantined`.

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
    t = step_rows(events_or_steps)
    n = t.num_rows
    rank, rank_null = int_values(t, "rank", "steps")
    step, step_null = int_values(t, by, "steps")
    has_attempt = "attempt" in t.schema.names
    attempt = int_values(t, "attempt", "steps")[0] if has_attempt else np.zeros(n, np.int64)
    end, end_null = time_values(t, "end_ns", "steps")
    if "start_ns" in t.schema.names:
        start, start_null = time_values(t, "start_ns", "steps")
    else:
        start, start_null = end, np.ones(n, bool)

    reasons = np.zeros(n, np.int8)

    def mark(mask, c):
        reasons[(reasons == 0) & mask] = c

    mark(rank_null, 1)
    mark(~rank_null & (rank == -1), 2)
    mark(step_null, 3)
    mark(~end_null & ~start_null & (end < start), 4)
    order = _sort_order(attempt if has_attempt else None, step, rank)
    ok_sorted = reasons[order] == 0
    cand = order[ok_sorted]
    dup = np.zeros(n, bool)
    if cand.size > 1:
        same = ((attempt[cand][1:] == attempt[cand][:-1]) & (step[cand][1:] == step[cand][:-1])
                & (rank[cand][1:] == rank[cand][:-1]))
        dup[cand[1:][same]] = True
    mark(dup, 5)
    bad = reasons != 0
    quarantine = None
    if bad.any():
        rows = np.flatnonzero(bad)
        if on_invalid == "raise":
            i, r = int(rows[0]), int(reasons[rows[0]])
            col = ("", "rank", "rank", by, "end_ns", "rank")[r]
            raise InvalidRowError("steps", col, i, _STRAGGLER_REASONS[r], _STRAGGLER_FIX[r], int(rows.size))
        quarantine = t.take(pa.array(rows)).append_column("row", pa.array(rows, pa.int64())).append_column(
            "reason", pa.array([_STRAGGLER_REASONS[int(x)] for x in reasons[rows]], pa.string()))
    in_flight = int((~bad & end_null).sum())
    order = order[(~bad & ~end_null)[order]]
    a, k, r, e = attempt[order], step[order], rank[order], end[order]
    has_start = "start_ns" in t.schema.names

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
    if has_attempt:
        cols["attempt"] = pa.array(a, pa.int32())
    cols.update(step=pa.array(k, pa.int64()), rank=pa.array(r, pa.int32()))
    if has_start:
        cols["start_ns"] = pa.array(start[order], pa.int64(), mask=start_null[order])
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
                     in_flight, quarantine)
    if on_invalid == "quarantine":
        return Quarantined(out, quarantine if quarantine is not None else t.slice(0, 0).append_column(
            "row", pa.array([], pa.int64())).append_column("reason", pa.array([], pa.string())))
    return out


def read_alibaba_minibatch(path, *, unit_ns: int = 1_000_000) -> pa.Table:
    """Read an Alibaba PAI ``mini-batch-time/job_*_norm.csv`` into a step table.

    The file holds, per worker and sampled iteration, a mini-batch time normalised
    to 0-1000 (columns ``worker, gpu, time, batch_time_norm``; ``time`` is the
    iteration). The scale of the normalisation is not published, so one unit is
    read as ``unit_ns`` (default 1 ms): waits are then in those units.

    Returns ``rank, step, start_ns, end_ns, batch_time_norm``, sorted by ``step,
    rank``, every row of the file kept (duplicates included: :func:`stragglers`
    rejects or quarantines them). The workers are data-parallel and synchronise at
    every iteration, so all ranks of a step start together, at the sum of the
    slowest durations of the earlier sampled steps (time between samples is not
    in the file and is not invented).
    """
    t = pcsv.read_csv(path)
    for name in ("worker", "time", "batch_time_norm"):
        _column(t, name, "alibaba mini-batch")
    rank = int_values(t, "worker", "alibaba mini-batch")[0]
    step = int_values(t, "time", "alibaba mini-batch")[0]
    dur_col = _column(t, "batch_time_norm", "alibaba mini-batch")
    if dur_col.null_count:
        raise InvalidRowError("alibaba mini-batch", "batch_time_norm", int(np.flatnonzero(null_mask(dur_col))[0]),
                              "null batch time", "remove the row", dur_col.null_count)
    dur = np.rint(dur_col.cast(pa.float64()).to_numpy(zero_copy_only=False) * unit_ns).astype(np.int64)
    order = np.lexsort((rank, step))
    rank, step, dur = rank[order], step[order], dur[order]
    starts = _group_starts(step)
    longest = np.maximum.reduceat(dur, starts) if step.size else np.zeros(0, np.int64)
    step_start = np.concatenate([[0], np.cumsum(longest)[:-1]]).astype(np.int64)
    gid = np.zeros(step.size, np.int64)
    if step.size:
        gid[starts] = 1
        gid = np.cumsum(gid) - 1
    s = step_start[gid]
    return pa.table({"rank": pa.array(rank, pa.int32()), "step": pa.array(step, pa.int64()),
                     "start_ns": pa.array(s, pa.int64()), "end_ns": pa.array(s + dur, pa.int64()),
                     "batch_time_norm": dur_col.take(pa.array(order))})


# ---------------------------------------------------------------------------
# compare


@dataclass
class Comparison:
    """What :func:`compare` returns.

    Attributes
    ----------
    table : pyarrow.Table
        ``metric, a, b, difference`` (float64; ``difference = a - b``, null when
        either side is null). Hours, seconds and money are derived from exact ns.
    by_cause : pyarrow.Table
        ``cause, kind, a, b, difference`` in accelerator-seconds per preserved step
        (and with prices ``cost_a, cost_b, cost_difference`` per preserved step).
        ``kind = "state"`` rows sum to the total (row ``cause = "total"``);
        ``kind = "failure"`` rows split ``rolled_back`` by failure cause.
    exact : dict
        ``{cause: Fraction}``: the state rows' differences in ns per preserved
        step, exact; they sum to ``exact["total"]``.
    labels : tuple of str
    kernels : KernelDiff or None
        The device work of the two runs name by name (:func:`kernel_diff`), when both
        sides' events were given; else None.
    """

    table: pa.Table
    by_cause: pa.Table
    exact: dict
    labels: tuple
    kernels: KernelDiff | None = None

    def summary(self, kernels: int | None = None) -> dict:
        """JSON-able, what ``pau compare --format json`` prints: ``labels``,
        ``metrics`` and ``by_cause`` (their tables' rows) and ``kernels``
        (:meth:`KernelDiff.summary` with its first ``kernels`` rows, all by default;
        None without events)."""
        return {"labels": list(self.labels), "metrics": self.table.to_pylist(),
                "by_cause": self.by_cause.to_pylist(),
                "kernels": None if self.kernels is None else self.kernels.summary(kernels)}

    def render(self, kernels: int = TOP_KERNELS) -> str:
        """The text of ``pau compare``: the metrics, the difference by cause and, with
        events, the ``kernels`` rows of the kernel diff that differ most."""
        la, lb = self.labels
        w = max(len(m) for m in self.table["metric"].to_pylist()) if self.table.num_rows else 10
        lines = [f"{'metric':<{w}} {la:>16} {lb:>16} {'difference':>16}"]
        for r in self.table.to_pylist():
            lines.append(f"{r['metric']:<{w}} {_fmt(r['a']):>16} {_fmt(r['b']):>16} {_fmt(r['difference']):>16}")
        lines.append("")
        lines.append(f"accelerator-seconds per preserved step, by cause ({la} - {lb}):")
        has_cost = "cost_difference" in self.by_cause.schema.names
        lines.append(f"{'cause':<22} {'kind':<8} {la:>14} {lb:>14} {'difference':>14}"
                     + (f" {'cost diff':>12}" if has_cost else ""))
        for r in self.by_cause.to_pylist():
            lines.append(f"{r['cause']:<22} {r['kind']:<8} {_fmt(r['a']):>14} {_fmt(r['b']):>14} "
                         f"{_fmt(r['difference']):>14}" + (f" {_fmt(r['cost_difference']):>12}" if has_cost else ""))
        if self.kernels is not None:
            lines += ["", self.kernels.render(kernels)]
        return "\n".join(lines)


_COMPARE_METRICS = (
    ("ranks", "ranks"),
    ("accountable_accelerator_hours", "accountable_accelerator_hours"),
    ("productive_accelerator_hours", "productive_accelerator_hours"),
    ("goodput", "goodput"),
    ("badput_accelerator_hours", None),
    ("failures", "failures"),
    ("preserved_steps", "preserved_steps"),
    ("preserved_tokens", "preserved_tokens"),
    ("preserved_model_cycles", "preserved_model_cycles"),
    ("accelerator_seconds_per_preserved_step", None),
    ("productive_accelerator_seconds_per_preserved_step", None),
)
_COST_METRICS = ("total_cost", "waste_cost", "cost_per_productive_accelerator_hour",
                 "cost_per_preserved_step", "cost_per_preserved_model_cycle",
                 "cost_per_million_preserved_tokens")


def _side(led: Ledger, prices) -> tuple[LedgerSummary, dict | None]:
    if not isinstance(led, Ledger):
        raise TypeError(f"compare: expected pau Ledgers, got {type(led).__name__}")
    return led.summary(), (None if prices is None else cost(led, prices))


def compare(a: Ledger, b: Ledger, *, prices_a: dict | None = None, prices_b: dict | None = None,
            labels: tuple = ("a", "b"), events_a: Any = None, events_b: Any = None) -> Comparison:
    """Two ledgers side by side on the same useful-output denominators.

    Parameters
    ----------
    a, b : Ledger
        Two runs, or the same work on two cluster configurations.
    prices_a, prices_b : dict, optional
        Prices as for :func:`pau.figures.economics.cost`; cost rows appear when both are given.
    labels : (str, str)
        Names of the two sides in :meth:`Comparison.render`.
    events_a, events_b : table-like, optional
        The two runs' device events: with both, ``.kernels`` is their
        :func:`kernel_diff`, per preserved step of each ledger.

    Returns
    -------
    Comparison
        ``.table`` (metric, a, b, difference), ``.by_cause``, ``.exact``, ``.kernels``,
        ``.summary()``, ``.render()``.

    Notes
    -----
    The difference in accountable accelerator time per preserved step,
    ``acc_a/steps_a - acc_b/steps_b``, is split by lifecycle state:
    ``state_a/steps_a - state_b/steps_b`` for every state. States partition
    accountable time (conservation), so the parts sum exactly to the total; this
    is checked in exact rationals (``.exact``). Without preserved steps on a side
    the per-step figures are null.
    """
    if len(labels) != 2:
        raise PauError(f"labels: expected two names, got {labels!r}")
    if (prices_a is None) != (prices_b is None):
        raise PauError("compare: prices for one side only. Fix: give both prices_a and prices_b, or neither")
    sa_t, ca = _side(a, prices_a)
    sb_t, cb = _side(b, prices_b)
    sa: dict[str, Any] = dict(sa_t)  # looked up by the metric names of _COMPARE_METRICS
    sb: dict[str, Any] = dict(sb_t)
    names, va, vb = [], [], []
    for metric, key in _COMPARE_METRICS:
        names.append(metric)
        va.append(sa[key or metric])
        vb.append(sb[key or metric])
    if ca is not None and cb is not None:  # both or neither (checked above)
        for k in _COST_METRICS:
            names.append(k)
            va.append(ca.get(k))
            vb.append(cb.get(k))

    def fl(v):
        return None if v is None else float(v)

    diff = [None if x is None or y is None else float(x) - float(y) for x, y in zip(va, vb)]
    table = pa.table({"metric": pa.array(names, pa.string()), "a": pa.array([fl(v) for v in va], pa.float64()),
                      "b": pa.array([fl(v) for v in vb], pa.float64()), "difference": pa.array(diff, pa.float64())})

    na, nb = sa["preserved_steps"], sb["preserved_steps"]
    per = na and nb
    rows, exact = [], {}

    def per_step(ns, steps):
        return Fraction(ns, steps) if steps else None

    def add(cause, kind, xa_ns, xb_ns, cost_a=None, cost_b=None):
        fa, fb = per_step(xa_ns, na), per_step(xb_ns, nb)
        d = fa - fb if per else None
        if kind in ("state", "total"):
            exact[cause] = d
        rows.append((cause, kind, None if fa is None else float(fa) / _NS_PER_S,
                     None if fb is None else float(fb) / _NS_PER_S, None if d is None else float(d) / _NS_PER_S,
                     None if cost_a is None or not na else cost_a / na,
                     None if cost_b is None or not nb else cost_b / nb))

    sta, stb = sa["state_ns"], sb["state_ns"]
    cost_st_a = {} if ca is None else ca["cost_by_state"]
    cost_st_b = {} if cb is None else cb["cost_by_state"]
    for st in STATES:
        if sta[st] or stb[st]:
            add(st, "state", sta[st], stb[st], cost_st_a.get(st, 0.0) if ca else None,
                cost_st_b.get(st, 0.0) if cb else None)
    add("total", "total", sa["accountable_ns"], sb["accountable_ns"], ca and ca["total_cost"],
        cb and cb["total_cost"])
    causes_a, causes_b = sa["badput_by_cause_ns"] or {}, sb["badput_by_cause_ns"] or {}
    wc_a = {} if ca is None else ca["waste_cost_by_cause"]
    wc_b = {} if cb is None else cb["waste_cost_by_cause"]
    for c in sorted(set(causes_a) | set(causes_b), key=str):
        add(str(c), "failure", causes_a.get(c, 0), causes_b.get(c, 0), wc_a.get(c, 0.0) if ca else None,
            wc_b.get(c, 0.0) if cb else None)
    cols = {"cause": pa.array([r[0] for r in rows], pa.string()),
            "kind": pa.array([r[1] for r in rows], pa.string()),
            "a": pa.array([r[2] for r in rows], pa.float64()),
            "b": pa.array([r[3] for r in rows], pa.float64()),
            "difference": pa.array([r[4] for r in rows], pa.float64())}
    if ca is not None:
        cols["cost_a"] = pa.array([r[5] for r in rows], pa.float64())
        cols["cost_b"] = pa.array([r[6] for r in rows], pa.float64())
        cols["cost_difference"] = pa.array([None if r[5] is None or r[6] is None else r[5] - r[6] for r in rows],
                                           pa.float64())
    kernels = None
    if events_a is not None and events_b is not None:
        kernels = kernel_diff(events_a, events_b, steps_a=na, steps_b=nb, labels=tuple(labels))
    return Comparison(table, pa.table(cols), exact, tuple(labels), kernels)


# ---------------------------------------------------------------------------
# co-location and interference


def _jobs(t: pa.Table, table: str, fix: str) -> tuple[np.ndarray, pa.Array]:
    """The ``job`` column as codes, refusing nulls."""
    job = _column(t, "job", table)
    if job.null_count:
        raise InvalidRowError(table, "job", int(np.flatnonzero(null_mask(job))[0]), "null job", fix,
                              job.null_count)
    return _job_codes(job)


def _job_codes(col) -> tuple[np.ndarray, pa.Array]:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    enc = pc.dictionary_encode(col)
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    # renumber so that code order is value order (jobs come out sorted)
    order = np.asarray(pc.sort_indices(enc.dictionary), np.int64)
    remap = np.empty(order.size, np.int64)
    remap[order] = np.arange(order.size)
    return remap[codes], enc.dictionary.take(pa.array(order))


def colocated(allocations: Any) -> pa.Table:
    """Intervals where two or more jobs share a rank (device).

    Parameters
    ----------
    allocations : table-like
        ``job, rank, start_ns, end_ns``: which job held which device when
        (half-open; a job may have several rows on a rank).

    Returns
    -------
    pyarrow.Table
        ``rank, start_ns, end_ns, jobs, n_jobs`` sorted by ``rank, start_ns``;
        ``jobs`` is the sorted list of distinct jobs sharing the rank throughout
        the interval. Adjacent pieces with the same jobs are merged, so each row is
        a maximal interval.
    """
    t = as_table(allocations, "allocations")
    jc, jobs = _jobs(t, "allocations", "give every allocation its job")
    rank, rnull = int_values(t, "rank", "allocations")
    s, snull = time_values(t, "start_ns", "allocations")
    e, enull = time_values(t, "end_ns", "allocations")
    for name, bad, why in (("rank", rnull, "null rank"), ("start_ns", snull, "null start_ns"),
                           ("end_ns", enull, "null end_ns"), ("end_ns", e < s, "end_ns before start_ns")):
        if bad.any():
            raise InvalidRowError("allocations", name, int(np.flatnonzero(bad)[0]), why,
                                  "give complete allocations with start_ns <= end_ns", int(bad.sum()))
    # Elementary pieces per rank: between consecutive distinct boundaries.
    br = np.concatenate([rank, rank])
    bt = np.concatenate([s, e])
    o = np.lexsort((bt, br))
    br, bt = br[o], bt[o]
    keep = np.ones(br.size, bool)
    keep[1:] = (br[1:] != br[:-1]) | (bt[1:] != bt[:-1])
    br, bt = br[keep], bt[keep]
    # boundary index of each allocation's start and end (within its rank: ranks
    # sort first, so a global searchsorted on (rank, time) is enough)
    key_b = np.rec.fromarrays([br, bt])
    i0 = np.searchsorted(key_b, np.rec.fromarrays([rank, s]))
    i1 = np.searchsorted(key_b, np.rec.fromarrays([rank, e]))
    cnt = i1 - i0  # pieces covered: piece p spans boundary p .. p+1
    seg = np.repeat(i0, cnt) + (np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    sj = np.repeat(jc, cnt)
    empty = pa.table({"rank": pa.array([], pa.int32()), "start_ns": pa.array([], pa.int64()),
                      "end_ns": pa.array([], pa.int64()),
                      "jobs": pa.array([], pa.list_(jobs.type)), "n_jobs": pa.array([], pa.int64())})
    if seg.size == 0:
        return empty
    o = np.lexsort((sj, seg))
    seg, sj = seg[o], sj[o]
    u = np.ones(seg.size, bool)
    u[1:] = (seg[1:] != seg[:-1]) | (sj[1:] != sj[:-1])
    seg, sj = seg[u], sj[u]
    pieces, first, njobs = np.unique(seg, return_index=True, return_counts=True)
    shared = njobs >= 2
    if not shared.any():
        return empty
    pieces, first, njobs = pieces[shared], first[shared], njobs[shared]
    width = int(njobs.max())
    mat = np.full((pieces.size, width), -1, np.int64)
    col_idx = np.arange(width)
    take = first[:, None] + col_idx[None, :]
    valid = col_idx[None, :] < njobs[:, None]
    mat[valid] = sj[take[valid]]
    p_rank, p_start, p_end = br[pieces], bt[pieces], bt[pieces + 1]
    # merge adjacent pieces on the same rank with the same jobs
    new = np.ones(pieces.size, bool)
    new[1:] = ((p_rank[1:] != p_rank[:-1]) | (p_start[1:] != p_end[:-1]) | np.any(mat[1:] != mat[:-1], axis=1))
    gs = np.flatnonzero(new)
    ge = np.concatenate([gs[1:], [pieces.size]]) - 1
    m = mat[gs]
    nj = njobs[gs]
    flat = m[m >= 0]
    offsets = np.concatenate([[0], np.cumsum(nj)]).astype(np.int32)
    job_values = jobs.take(pa.array(flat))
    return pa.table({"rank": pa.array(p_rank[gs], pa.int32()), "start_ns": pa.array(p_start[gs], pa.int64()),
                     "end_ns": pa.array(p_end[ge], pa.int64()),
                     "jobs": pa.ListArray.from_arrays(pa.array(offsets), job_values),
                     "n_jobs": pa.array(nj, pa.int64())})


@dataclass
class Interference:
    """What :func:`interference` returns.

    Attributes
    ----------
    table : pyarrow.Table
        Per job: ``job, colocated_ns, progress, rate_per_s, isolated_rate_per_s,
        isolated_rate_source, normalized_progress, slowdown, lost_output`` and, with
        an ``slo_attainment`` column, ``slo_attainment_colocated,
        slo_attainment_isolated, slo_attainment_loss``.
    """

    table: pa.Table
    _summary: dict = field(default_factory=dict, repr=False)

    def summary(self) -> dict:
        """``jobs``, ``system_throughput`` (sum of normalized progress),
        ``fairness`` (min / max normalized progress), ``lost_output`` (sum)."""
        return dict(self._summary)

    def render(self) -> str:
        s = self.summary()
        lines = [f"interference: {s['jobs']} jobs, system throughput {_fmt(s['system_throughput'])}, "
                 f"fairness {_fmt(s['fairness'])}, lost output {_fmt(s['lost_output'])}",
                 f"{'job':>12} {'norm. progress':>15} {'slowdown':>9} {'lost output':>12}"]
        for r in self.table.to_pylist():
            lines.append(f"{str(r['job']):>12} {_fmt(r['normalized_progress']):>15} {_fmt(r['slowdown']):>9} "
                         f"{_fmt(r['lost_output']):>12}")
        return "\n".join(lines)


def _overlap_with(s: np.ndarray, e: np.ndarray, ws: np.ndarray, we: np.ndarray) -> np.ndarray:
    """ns of each [s, e) covered by the union of the intervals [ws, we)."""
    if ws.size == 0:
        return np.zeros(s.size, np.int64)
    o = np.argsort(ws, kind="stable")
    ws, we = ws[o], we[o]
    run_end = np.maximum.accumulate(we)
    new = np.ones(ws.size, bool)
    new[1:] = ws[1:] > run_end[:-1]
    gs = np.flatnonzero(new)
    ms = ws[gs]
    me = np.maximum.reduceat(we, gs)
    cum = np.concatenate([[0], np.cumsum(me - ms)])

    def covered_before(x):  # union length in (-inf, x)
        i = np.searchsorted(ms, x, side="right")  # merged intervals starting at or before x
        full = cum[np.maximum(i - 1, 0)]
        part = np.where(i > 0, np.minimum(x, me[np.maximum(i - 1, 0)]) - ms[np.maximum(i - 1, 0)], 0)
        return np.where(i > 0, full + part, 0)

    return covered_before(e) - covered_before(s)


def interference(progress: Any, isolated_rate: dict | None = None, *, windows: Any = None) -> Interference:
    """How much co-location slowed each job, and the useful output it cost.

    Parameters
    ----------
    progress : table-like
        ``job, start_ns, end_ns, progress``: useful output (steps, accepted
        requests) of each job in each window; optional ``colocated`` (bool: the
        window was shared) and ``slo_attainment`` (0-1, of an interactive job).
    isolated_rate : dict, optional
        ``{job: progress per second when running alone}``. Jobs missing from it are
        measured from their windows that were not co-located.
    windows : table-like, optional
        Co-location intervals, e.g. :func:`colocated`'s output (``start_ns, end_ns,
        jobs``). A progress window of job ``j`` is co-located when it lies inside the
        intervals listing ``j``, isolated when it does not touch them; a window that
        is partly co-located raises (cut the windows at the interval boundaries).
        Without ``windows`` or a ``colocated`` column every window is co-located.

    Returns
    -------
    Interference
        Per job (over its co-located windows, ``T`` their total seconds, ``P`` the
        progress in them, ``r`` the isolated rate): ``normalized_progress = (P/T)/r``,
        ``slowdown = 1 / normalized_progress``, ``lost_output = r*T - P``; with
        ``slo_attainment``, attainment co-located and isolated (window-time
        weighted means) and their difference. Summary: system throughput = sum of
        normalized progress, fairness = min / max normalized progress.
    """
    t = as_table(progress, "progress")
    jc, jobs = _jobs(t, "progress", "give every window its job")
    s, snull = time_values(t, "start_ns", "progress")
    e, enull = time_values(t, "end_ns", "progress")
    pcol = _column(t, "progress", "progress")
    if not (pa.types.is_integer(pcol.type) or pa.types.is_floating(pcol.type)):
        raise SchemaError("progress", "progress", f"has type {pcol.type}, not a number",
                          "give progress as steps or accepted requests")
    pnull = null_mask(pcol)
    prog = pcol.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False)
    for name, bad, why in (("start_ns", snull, "null start_ns"), ("end_ns", enull, "null end_ns"),
                           ("progress", pnull, "null progress"), ("end_ns", e < s, "end_ns before start_ns"),
                           ("progress", prog < 0, "negative progress")):
        if bad.any():
            raise InvalidRowError("progress", name, int(np.flatnonzero(bad)[0]), why,
                                  "give complete windows with start_ns <= end_ns and progress >= 0",
                                  int(bad.sum()))
    dur = e - s
    n = t.num_rows
    if "colocated" in t.schema.names:
        cc = _column(t, "colocated", "progress")
        if not pa.types.is_boolean(cc.type) or cc.null_count:
            raise SchemaError("progress", "colocated", "is not a bool column without nulls",
                              "give True for shared windows, False for isolated ones")
        co = cc.to_numpy(zero_copy_only=False).astype(bool)
    elif windows is not None:
        w = as_table(windows, "windows")
        wl = _column(w, "jobs", "windows")
        ws, _ = time_values(w, "start_ns", "windows")
        we, _ = time_values(w, "end_ns", "windows")
        lens = pc.list_value_length(wl).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        flat = pc.list_flatten(wl)
        if flat.type != jobs.type:
            flat = flat.cast(jobs.type)
        fj = pc.index_in(flat, value_set=jobs).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        fs, fe = np.repeat(ws, lens), np.repeat(we, lens)
        covered = np.zeros(n, np.int64)
        for j in np.unique(jc):  # one pass per job, not per row
            rows = np.flatnonzero(jc == j)
            sel = fj == j
            covered[rows] = _overlap_with(s[rows], e[rows], fs[sel], fe[sel])
        partial = (covered > 0) & (covered < dur)
        if partial.any():
            raise InvalidRowError("progress", "start_ns", int(np.flatnonzero(partial)[0]),
                                  "window is partly co-located",
                                  "cut progress windows at the co-location boundaries", int(partial.sum()))
        co = (covered > 0) & (covered == dur)
    else:
        co = np.ones(n, bool)

    nj = len(jobs)
    T = np.zeros(nj, np.int64)
    np.add.at(T, jc[co], dur[co])
    P = np.zeros(nj)
    np.add.at(P, jc[co], prog[co])
    Ti = np.zeros(nj, np.int64)
    np.add.at(Ti, jc[~co], dur[~co])
    Pi = np.zeros(nj)
    np.add.at(Pi, jc[~co], prog[~co])
    given = {} if isolated_rate is None else dict(isolated_rate)
    names = jobs.to_pylist()
    iso, src = [], []
    for j, name in enumerate(names):
        if name in given:
            v = given[name]
            if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
                raise PauError(f"isolated_rate: {name!r} = {v!r}. Fix: give progress per second >= 0")
            iso.append(float(v))
            src.append("given")
        elif Ti[j] > 0:
            iso.append(Pi[j] * _NS_PER_S / Ti[j])
            src.append("measured")
        else:
            raise PauError(f"isolated_rate: job {name!r} has no isolated rate and never ran alone. Fix: give "
                           f"isolated_rate={{{name!r}: progress per second}} or windows where it ran alone")
    rate = [None if T[j] == 0 else P[j] * _NS_PER_S / T[j] for j in range(nj)]
    norm = [None if rate[j] is None else _ratio(rate[j], iso[j]) for j in range(nj)]
    slow = [None if x is None else _ratio(1.0, x) for x in norm]
    lost = [iso[j] * T[j] / _NS_PER_S - P[j] for j in range(nj)]
    cols = {"job": jobs, "colocated_ns": pa.array(T, pa.int64()), "progress": pa.array(P, pa.float64()),
            "rate_per_s": pa.array(rate, pa.float64()), "isolated_rate_per_s": pa.array(iso, pa.float64()),
            "isolated_rate_source": pa.array(src, pa.string()),
            "normalized_progress": pa.array(norm, pa.float64()), "slowdown": pa.array(slow, pa.float64()),
            "lost_output": pa.array(lost, pa.float64())}
    if "slo_attainment" in t.schema.names:
        sc = _column(t, "slo_attainment", "progress")
        sv = sc.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)
        has = ~null_mask(sc)

        def wmean(mask):
            num = np.zeros(nj)
            den = np.zeros(nj, np.int64)
            np.add.at(num, jc[mask], sv[mask] * dur[mask])
            np.add.at(den, jc[mask], dur[mask])
            return [None if den[j] == 0 else num[j] / den[j] for j in range(nj)]

        a_co, a_iso = wmean(co & has), wmean(~co & has)
        cols["slo_attainment_colocated"] = pa.array(a_co, pa.float64())
        cols["slo_attainment_isolated"] = pa.array(a_iso, pa.float64())
        cols["slo_attainment_loss"] = pa.array([None if x is None or y is None else y - x
                                                for x, y in zip(a_co, a_iso)], pa.float64())
    vals = [x for x in norm if x is not None]
    summary = {"jobs": nj, "system_throughput": float(sum(vals)) if vals else None,
               "fairness": (_ratio(min(vals), max(vals)) if vals else None),
               "lost_output": float(sum(lost))}
    return Interference(pa.table(cols), summary)


# ---------------------------------------------------------------------------
# top device work


def _device_work(events: Any) -> list[dict]:
    """The one rule that groups device events by name: per (name, kind), the events'
    ``count`` and ``total_ns`` (durations ``end_ns - start_ns`` summed as written, exact
    Python ints). Events without a name (or a table without ``name``) are grouped as
    ``"(unnamed)"``; ``kind`` is compared as a string. Unordered; empty without events."""
    t = as_table(events, "events")
    if t.num_rows == 0:
        return []
    name = (t["name"].cast(pa.string()).fill_null("(unnamed)") if "name" in t.column_names
            else pa.array(["(unnamed)"] * t.num_rows))
    try:
        dur = pc.subtract_checked(t["end_ns"], t["start_ns"])
    except pa.ArrowInvalid:
        raise PauError("events: an event's end_ns - start_ns does not fit in int64. Fix: correct its times "
                       "(pau.core.classify names the row)") from None
    kind = t["kind"].cast(pa.string())
    g = pa.table({"name": name, "kind": kind, "ns": dur}).group_by(
        ["name", "kind"]).aggregate([("ns", "sum"), ("ns", "count"), ("ns", "max"), ("ns", "min")])
    rows = g.to_pylist()
    # Totals in Python ints where int64 could wrap (count x the longest, or the most negative, event)
    wide = [r for r in rows if r["ns_count"] * max(abs(r["ns_max"]), abs(r["ns_min"])) > 2**63 - 1]
    if wide:
        exact: dict = {}
        for nm, kd, d in zip(name.to_pylist(), kind.to_pylist(), dur.to_pylist()):
            exact[(nm, kd)] = exact.get((nm, kd), 0) + d
        for r in wide:
            r["ns_sum"] = exact[(r["name"], r["kind"])]
    return [{"name": r["name"], "kind": r["kind"], "count": r["ns_count"], "total_ns": r["ns_sum"]} for r in rows]


def top_kernels(events: Any, n: int = TOP_KERNELS) -> list[TopKernel]:
    """The device work that took the most time, as ``nsys stats``' kernel summary
    gives it: per (name, kind) the events' count, their total and mean duration (ns,
    exact; the mean rounded down) and ``share``, the total's part of all device
    events' time (durations summed as written, overlaps counted in each event, as
    ``nsys stats`` does). The ``n`` largest totals, ties by name; events without a
    name are grouped as ``"(unnamed)"``. Empty without events."""
    rows = _device_work(events)
    whole = sum(r["total_ns"] for r in rows)
    rows.sort(key=lambda r: (-r["total_ns"], r["name"], r["kind"]))
    return [TopKernel(name=r["name"], kind=r["kind"], count=r["count"], total_ns=r["total_ns"],
                      mean_ns=r["total_ns"] // r["count"], share=r["total_ns"] / whole if whole else 0.0)
            for r in rows[:n]]


# ---------------------------------------------------------------------------
# kernel-level diff of two runs


class KernelDiffRow(TypedDict):
    """One row of :class:`KernelDiff`: one (name, kind) of device work in either run.

    ``status`` is ``appeared`` (only in b), ``disappeared`` (only in a), ``changed``
    (in both, with another count or total) or ``same``. ns and counts are exact ints;
    the per-step figures are floats (ns per preserved step), None unless both runs
    have steps. Every ``difference`` is ``a - b``, as in :class:`Comparison`."""

    name: str
    kind: str
    status: str
    count_a: int
    count_b: int
    count_difference: int
    total_ns_a: int
    total_ns_b: int
    difference_ns: int
    per_step_ns_a: Optional[float]
    per_step_ns_b: Optional[float]
    per_step_difference_ns: Optional[float]


#: The statuses of a :class:`KernelDiffRow`, in the order they are counted.
KERNEL_STATUSES = ("appeared", "disappeared", "changed", "same")


def _duration(ns) -> str:
    return "-" if ns is None else duration(ns)


@dataclass
class KernelDiff:
    """What :func:`kernel_diff` returns: the device work of two runs, name by name.

    Attributes
    ----------
    rows : list of KernelDiffRow
        One per (name, kind) found in either run, sorted by the absolute difference of
        ``total_ns`` (largest first); ties by the larger of the two totals (largest
        first), then name, then kind.
    steps_a, steps_b : int or None
        The steps of each run (None: none, or 0); per-step figures need both.
    labels : (str, str)
    """

    rows: list
    steps_a: Optional[int]
    steps_b: Optional[int]
    labels: tuple = ("a", "b")

    def status_counts(self) -> dict:
        """Rows per status: ``{"appeared": n, "disappeared": n, "changed": n, "same": n}``."""
        out = dict.fromkeys(KERNEL_STATUSES, 0)
        for r in self.rows:
            out[r["status"]] += 1
        return out

    def summary(self, n: int | None = None) -> dict:
        """JSON-able: ``labels``, ``steps_a``, ``steps_b``, ``status`` (rows per
        status), ``total_ns_a``, ``total_ns_b``, ``difference_ns`` (all device events'
        time, exact), ``count`` (rows), ``left_out`` (rows not listed) and ``kernels``:
        the first ``n`` rows (all when ``n`` is None)."""
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
            raise PauError(f"kernel diff: n = {n!r}. Fix: give a number of rows >= 0, or None for all")
        shown = self.rows if n is None else self.rows[:n]
        ta = sum(r["total_ns_a"] for r in self.rows)
        tb = sum(r["total_ns_b"] for r in self.rows)
        return {"labels": list(self.labels), "steps_a": self.steps_a, "steps_b": self.steps_b,
                "status": self.status_counts(), "total_ns_a": ta, "total_ns_b": tb, "difference_ns": ta - tb,
                "count": len(self.rows), "left_out": len(self.rows) - len(shown),
                "kernels": [dict(r) for r in shown]}

    def table(self) -> pa.Table:
        """The rows as a table (ns and counts int64; per-step figures float64)."""
        names = list(KernelDiffRow.__annotations__)
        types = {"name": pa.string(), "kind": pa.string(), "status": pa.string()}
        cols = {}
        for c in names:
            typ = types.get(c, pa.float64() if c.startswith("per_step") else pa.int64())
            cols[c] = pa.array([r[c] for r in self.rows], typ)
        return pa.table(cols)

    def render(self, n: int = TOP_KERNELS) -> str:
        """The ``n`` rows with the largest differences, as text (``pau compare``)."""
        la, lb = self.labels
        s = self.summary(n)
        per = self.steps_a is not None and self.steps_b is not None
        counts = ", ".join(f"{v} {k}" for k, v in s["status"].items())
        lines = [f"device work by name and kind ({la} - {lb}): {s['count']} names ({counts}); "
                 f"all device events {_duration(s['total_ns_a'])} against {_duration(s['total_ns_b'])}, "
                 f"difference {_duration(s['difference_ns'])}"]
        if not s["kernels"]:
            return "\n".join(lines)
        head = ["status", "kind", "count a", "count b", "total a", "total b", "difference"]
        if per:
            head += ["per step a", "per step b", "per step diff"]
        cells = []
        for r in s["kernels"]:
            c = [r["status"], r["kind"], f"{r['count_a']:,}", f"{r['count_b']:,}", _duration(r["total_ns_a"]),
                 _duration(r["total_ns_b"]), _duration(r["difference_ns"])]
            if per:
                c += [_duration(r["per_step_ns_a"]), _duration(r["per_step_ns_b"]),
                      _duration(r["per_step_difference_ns"])]
            name = r["name"]
            cells.append(c + [name if len(name) <= 70 else name[:67] + "..."])
        head.append("name")
        widths = [max(len(x[i]) for x in cells + [head]) for i in range(len(head) - 1)]

        def fmt(c: list) -> str:
            return "  ".join([c[0].ljust(widths[0]), c[1].ljust(widths[1])]
                             + [v.rjust(w) for v, w in zip(c[2:-1], widths[2:])]) + "  " + c[-1]

        lines += ["", fmt(head)] + [fmt(c) for c in cells]
        if s["left_out"]:
            lines.append(f"... {s['left_out']} more (--format json or csv lists every row)")
        lines.append("sorted by |total a - total b|, then the larger total; per step: ns per preserved step of each run" if per else
                     "sorted by |total a - total b|, then the larger total; no per-step figures (a run without preserved steps)")
        return "\n".join(lines)


def _steps(value, side: str) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise PauError(f"kernel_diff: {side} = {value!r}. Fix: give the run's number of steps (an int >= 0) "
                       "or None")
    return int(value) or None  # no step: no per-step figure


def kernel_diff(a_events: Any, b_events: Any, *, steps_a: int | None = None, steps_b: int | None = None,
                labels: tuple = ("a", "b")) -> KernelDiff:
    """The device work of two runs side by side, per name and kind (HTA's trace diff).

    Parameters
    ----------
    a_events, b_events : table-like
        Device events of the two runs (DESIGN §2.1; ``name`` optional). Every rank's
        events count; grouping is :func:`top_kernels`' rule (one rule in pau).
    steps_a, steps_b : int, optional
        The number of steps of each run (``pau.core.compare`` gives the preserved
        steps of each ledger). With both, every row gets ``total / steps`` per run
        and their difference; 0 or None on either side: no per-step figures.
    labels : (str, str)
        Names of the two sides in :meth:`KernelDiff.render`.

    Returns
    -------
    KernelDiff
        One :class:`KernelDiffRow` per (name, kind) in either run, sorted by the
        absolute difference of total time, largest first; ties by the larger of the
        two totals, then name, then kind.

    Notes
    -----
    Names are matched exactly (the whole string, templates and arguments included),
    with the kind: a kernel renamed between the runs is one row ``disappeared`` and one
    ``appeared``. Holistic Trace Analysis' ``TraceDiff.compare_traces`` also matches by
    the exact name (or a shortened one on request) and sums count and duration per
    name. Differences are ``a - b`` (the ledger comparison's sign; HTA's ``diff_*``
    columns are test - control, the opposite). Count and total are exact ints;
    per-step figures are computed in exact rationals and given as floats.
    """
    if len(labels) != 2:
        raise PauError(f"labels: expected two names, got {labels!r}")
    sa, sb = _steps(steps_a, "steps_a"), _steps(steps_b, "steps_b")
    side_a = {(r["name"], r["kind"]): r for r in _device_work(a_events)}
    side_b = {(r["name"], r["kind"]): r for r in _device_work(b_events)}
    rows: list[KernelDiffRow] = []
    for key in set(side_a) | set(side_b):
        ra, rb = side_a.get(key), side_b.get(key)
        ca, cb = (ra["count"] if ra else 0), (rb["count"] if rb else 0)
        ta, tb = (ra["total_ns"] if ra else 0), (rb["total_ns"] if rb else 0)
        status = ("appeared" if ra is None else "disappeared" if rb is None
                  else "changed" if (ca, ta) != (cb, tb) else "same")
        fa = Fraction(ta, sa) if sa is not None and sb is not None else None
        fb = Fraction(tb, sb) if sa is not None and sb is not None else None
        rows.append(KernelDiffRow(
            name=key[0], kind=key[1], status=status, count_a=ca, count_b=cb, count_difference=ca - cb,
            total_ns_a=ta, total_ns_b=tb, difference_ns=ta - tb,
            per_step_ns_a=None if fa is None else float(fa), per_step_ns_b=None if fb is None else float(fb),
            per_step_difference_ns=None if fa is None or fb is None else float(fa - fb)))
    rows.sort(key=lambda r: (-abs(r["difference_ns"]), -max(r["total_ns_a"], r["total_ns_b"]), r["name"],
                             r["kind"]))
    return KernelDiff(rows, sa, sb, tuple(labels))


# ---------------------------------------------------------------------------
# step times and stragglers, for a run's summary


def range_summary(ranges: Any, name: str = "text", n: int = TOP_KERNELS) -> list[dict[str, Any]]:
    """Annotation ranges by name (Nsight's NVTX ranges, as ``nsys stats``' NVTX range
    summary gives them): the ``n`` names with the most time, each with ``name, count,
    total_ns, mean_ns`` (rounded down), ``min_ns, max_ns`` and ``share`` of all closed
    ranges' time; ranges still open (null ``end_ns``) are left out and counted in the
    first row's ``open`` (the same for every row). Exact ns."""
    t = as_table(ranges, "ranges")
    if t.num_rows == 0:
        return []
    start, _ = time_values(t, "start_ns", "ranges")
    end, end_null = time_values(t, "end_ns", "ranges")
    names = np.asarray(_column(t, name, "ranges").cast(pa.string()).fill_null("(unnamed)")
                       .to_numpy(zero_copy_only=False), dtype=object)
    keep = ~end_null
    dur, names = (end - start)[keep], names[keep]
    if dur.size == 0:
        return []
    uniq, inv = np.unique(names.astype(str), return_inverse=True)
    total = np.zeros(uniq.size, np.int64)
    np.add.at(total, inv, dur)
    count = np.bincount(inv, minlength=uniq.size)
    lo = np.full(uniq.size, np.iinfo(np.int64).max, np.int64)
    hi = np.full(uniq.size, np.iinfo(np.int64).min, np.int64)
    np.minimum.at(lo, inv, dur)
    np.maximum.at(hi, inv, dur)
    whole = int(sum(int(x) for x in total))
    order = sorted(range(uniq.size), key=lambda i: (-int(total[i]), str(uniq[i])))[:n]
    opened = int(end_null.sum())
    return [{"name": str(uniq[i]), "count": int(count[i]), "total_ns": int(total[i]),
             "mean_ns": int(total[i]) // int(count[i]), "min_ns": int(lo[i]), "max_ns": int(hi[i]),
             "share": int(total[i]) / whole if whole else None, "open": opened} for i in order]


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
    steps = t.filter(pc.and_(pc.equal(t["record"], "step"), pc.is_valid(t["end_ns"])))
    if steps.num_rows == 0 or not pc.all(pc.greater_equal(steps["rank"], 0)).as_py():
        return None
    rank = np.asarray(steps["rank"].to_numpy(zero_copy_only=False), np.int64)
    dur = np.asarray(pc.subtract(steps["end_ns"], steps["start_ns"]).to_numpy(zero_copy_only=False), np.int64)
    order = np.lexsort((dur, rank))  # one sort: each rank's durations, ascending, as a slice
    rank, dur = rank[order], dur[order]
    cut = np.flatnonzero(np.r_[True, rank[1:] != rank[:-1], True])
    return {int(rank[lo]): dur[lo:hi] for lo, hi in zip(cut[:-1].tolist(), cut[1:].tolist())}


def step_figures(lifecycle: Any) -> dict | None:
    """Per rank, its finished step executions' count and time (median, p90 and max by
    the nearest-rank rule, exact ns), and the stragglers (:func:`stragglers`
    summary, with each persistent straggler's charged accelerator time). None when
    the lifecycle has no step rows of a rank of their own (rank -1 rows say nothing
    about one rank's pace)."""
    t = as_table(lifecycle, "lifecycle")
    times = step_times(t)
    if times is None:
        return None
    per_rank = []
    for r, d in times.items():
        per_rank.append({"rank": r, "steps": int(d.size), "median_ns": nearest_rank(d, 1, 2),
                         "p90_ns": nearest_rank(d, 9, 10), "max_ns": int(d[-1])})
    st = stragglers(t, on_invalid="quarantine")
    s = st.result if isinstance(st, Quarantined) else st
    summ = s.summary()
    charged = {r["rank"]: int(r["charged_ns"]) for r in s.ranks.to_pylist()}
    summ["persistent"] = [{"rank": int(r), "charged_ns": charged.get(r, 0)} for r in s.persistent]
    return {"per_rank": per_rank, "stragglers": summ}
