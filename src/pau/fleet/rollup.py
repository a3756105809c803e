"""Fleet rollups: accelerator time per group and period (DESIGN §7, ``docs/fleet.md``
"Rollups").

:func:`rollup` sums a fleet's hourly cells (and its scheduler's jobs, when the archive
holds them) per group of the runs table's columns or labels and per period (hours, days,
ISO weeks, months, UTC). Time is summed in int64 ns and turned into hours only in the
``*_h`` columns; ratios are ratios of the sums (never means of the runs' ratios). Every
hour is counted in the period it happened in: cells are hours, and a period is a whole
number of hours, so each cell lies in exactly one period; a job's allocation is cut at
the period boundaries in ns (its pieces sum exactly to ``allocated_accelerator_ns``). So
the periods of a group sum exactly to its total.

Each failure, and its recovery, is counted in the period holding its instant (the runs
table's ``failure_ns``); time to recover is pooled over the recovered failures of a group
and period (``recovery_ns``). Counts a run carries as a whole (preserved steps and tokens,
accepted requests) are counted in the period holding the run's last ns (``end_ns - 1``):
the runs table holds them per run, not per hour.

:func:`changes` and :func:`capacity` take a rollup's table to
:func:`pau.fleet.changes.group_changes` and :func:`pau.fleet.changes.accelerators_gained`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Optional, TypedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pau.engine.vocab import STATES
from pau.errors import PauError, SchemaError
import pau.fleet.changes as _changes
import pau.fleet.costs as _costs
import pau.fleet.cellsums as _cellsums
import pau.fleet.groups as _groups
import pau.fleet.pricing as _pricing
import pau.fleet.sums as _sums
from pau.fleet.periods import (MAX_LOCAL_PERIODS, MONDAY0, NS_PER_DAY, NS_PER_HOUR, NS_PER_S, Period, local_edges,
                               parse_every, parse_time, period_ends, period_names, period_starts)
from pau.fleet.sums import INT64_MAX

__all__ = [
    "INT64_MAX",
    "MAX_LOCAL_PERIODS",
    "MONDAY0",
    "NS_PER_DAY",
    "NS_PER_HOUR",
    "NS_PER_S",
    "ROLLUP_SCHEMA_BASE",
    "Period",
    "Rollup",
    "RollupCosts",
    "RollupFigures",
    "capacity",
    "changes",
    "local_edges",
    "parse_every",
    "parse_time",
    "parse_where",
    "period_ends",
    "period_names",
    "period_starts",
    "rollup",
]
# the group filter, also reachable from here as the periods are (``pau.fleet.rollup.parse_every``)
parse_where = _groups.parse_where

_STATE_COLS = tuple(f"{s.replace('.', '_')}_ns" for s in STATES)
_FACTS = ("job", "cluster", "accelerator_type", "accelerators", "team", "project", "user")

#: The columns every rollup table has after its group columns (``docs/fleet.md``, "Rollups").
ROLLUP_SCHEMA_BASE = pa.schema([
    ("period", pa.string()), ("period_start_ns", pa.int64()), ("period_end_ns", pa.int64()),
    ("allocated_ns", pa.int64()), ("accountable_ns", pa.int64()), ("productive_ns", pa.int64()),
    ("rolled_back_ns", pa.int64()), ("badput_ns", pa.int64()),
    *((c, pa.int64()) for c in _STATE_COLS if c not in ("productive_ns", "rolled_back_ns")),
    ("allocated_h", pa.float64()), ("accountable_h", pa.float64()), ("productive_h", pa.float64()),
    ("rolled_back_h", pa.float64()), ("badput_h", pa.float64()),
    ("goodput", pa.float64()), ("goodput_allocated", pa.float64()),
    ("runs_ended", pa.int64()), ("failures", pa.int64()), ("failures_per_1000_accelerator_hours", pa.float64()),
    ("mtbf_accelerator_h", pa.float64()), ("recoveries", pa.int64()), ("not_recovered", pa.int64()),
    ("time_to_recover_mean_s", pa.float64()), ("time_to_recover_p50_s", pa.float64()),
    ("time_to_recover_p90_s", pa.float64()), ("time_to_recover_max_s", pa.float64()),
    ("jobs_started", pa.int64()), ("queue_ns", pa.int64()), ("queue_mean_s", pa.float64()),
    ("preserved_steps", pa.int64()), ("preserved_tokens", pa.int64()), ("requests_accepted", pa.int64()),
    ("accepted_tokens", pa.int64()),
    ("energy_j", pa.float64()), ("energy_productive_j", pa.float64()), ("energy_per_preserved_step_j", pa.float64()),
    ("useful_flops", pa.float64()), ("peak_flop_productive", pa.float64()), ("mfu", pa.float64()),
])
#: The runs table's energy, summed per group and period like the counts (at the run's
#: last ns); null in a row where no run has it.
_ENERGY = ("energy_j", "energy_productive_j")
#: The runs table's columns MFU is of (``docs/fleet.md``, "MFU").
_FLOPS = ("useful_flops", "peak_flops", "productive_ns")
#: Added when a cost model is given.
COST_FIELDS = pa.schema([
    ("cost", pa.float64()), ("cost_productive", pa.float64()), ("cost_rolled_back", pa.float64()),
    ("cost_recovery", pa.float64()), ("cost_idle", pa.float64()), ("cost_overhead", pa.float64()),
    ("cost_unaccounted", pa.float64()), ("cost_per_productive_h", pa.float64()),
    ("cost_per_preserved_step", pa.float64()), ("cost_per_million_tokens", pa.float64()),
    ("cost_per_accepted_request", pa.float64()),
    ("energy_cost", pa.float64()), ("energy_cost_basis", pa.string()),
])

_COUNTS = ("failures", "not_recovered", "preserved_steps", "preserved_tokens", "requests_accepted",
           "accepted_tokens")
#: Counted per failure, in the period of its instant (the others per run, at its last ns).
_PER_FAILURE = ("failures", "not_recovered")
#: The runs table's per-failure lists (``pau.fleet.archive.failure_lists``).
_FAILURE_LISTS = ("failure_ns", "recovery_ns")


# ---------------------------------------------------------------------------
# the result


class RollupCosts(TypedDict, total=False):
    """The keys of :class:`RollupFigures` a rollup with a cost model has (none without
    one: ``pau fleet --format json`` prints no cost key then, never a 0)."""

    cost: float
    cost_productive: float
    cost_rolled_back: float
    cost_recovery: float
    cost_idle: float
    cost_overhead: float
    cost_unaccounted: float
    cost_per_productive_h: Optional[float]  # None: no productive time
    energy_cost: Optional[float]  # None: no energy priced, or some of it without a price


class RollupFigures(RollupCosts):
    """What :meth:`Rollup.overall` returns: the figures of every group together, by the
    rollup table's column names (``docs/fleet.md``, "Rollups"). ns and counts are exact
    ints (sums of the rows); hours, ratios, seconds and joules floats; None where a figure
    has nothing to be of (a zero denominator, no jobs table, no energy or FLOPs known).
    The cost keys (:class:`RollupCosts`) only with a cost model."""

    allocated_ns: int
    accountable_ns: int
    productive_ns: int
    rolled_back_ns: int
    badput_ns: int
    pending_ns: int
    checkpoint_ns: int
    checkpoint_lost_ns: int
    checkpoint_unused_ns: int
    initialization_ns: int
    recovery_outage_ns: int
    recovery_reinit_ns: int
    recovery_restore_ns: int
    eval_ns: int
    data_wait_ns: int
    custom_ns: int
    unattributed_ns: int
    failures: int
    recoveries: int
    jobs_started: int
    runs_ended: int
    preserved_steps: int
    queue_ns: Optional[int]  # None: no jobs table (allocated from the runs)
    allocated_h: float
    accountable_h: float
    productive_h: float
    rolled_back_h: float
    badput_h: float
    goodput: Optional[float]
    goodput_allocated: Optional[float]
    failures_per_1000_accelerator_hours: Optional[float]
    mtbf_accelerator_h: Optional[float]
    queue_mean_s: Optional[float]
    energy_j: Optional[float]
    energy_productive_j: Optional[float]
    energy_per_preserved_step_j: Optional[float]
    useful_flops: Optional[float]
    peak_flop_productive: Optional[float]
    mfu: Optional[float]


def _known_sum(column: pa.ChunkedArray) -> float | None:
    """The exact float sum (``math.fsum``) of a column's values, None when it has none
    (never 0 for unknown)."""
    known = [v for v in column.to_pylist() if v is not None]
    return math.fsum(known) if known else None


def _cost_figures(t: pa.Table, productive_h: float) -> RollupCosts:
    """The cost keys of :meth:`Rollup.overall` over the rows of ``t`` (a cost model's
    rollup)."""
    cost = {c: float(sum(t[c].to_pylist())) for c in ("cost", "cost_productive", "cost_rolled_back", "cost_recovery",
                                                       "cost_idle", "cost_overhead", "cost_unaccounted")}
    # the energy's cost: null when none, or when some of it had no price (never 0 for unknown)
    priced = [v for v, b in zip(t["energy_cost"].to_pylist(), t["energy_cost_basis"].to_pylist()) if b]
    return {"cost": cost["cost"], "cost_productive": cost["cost_productive"],
            "cost_rolled_back": cost["cost_rolled_back"], "cost_recovery": cost["cost_recovery"],
            "cost_idle": cost["cost_idle"], "cost_overhead": cost["cost_overhead"],
            "cost_unaccounted": cost["cost_unaccounted"],
            "cost_per_productive_h": cost["cost"] / productive_h if productive_h else None,
            "energy_cost": None if not priced or None in priced else math.fsum(priced)}


@dataclass
class Rollup:
    """What :func:`rollup` returns.

    Attributes
    ----------
    table : pyarrow.Table
        One row per group and period with time in it, ordered by group then period: the
        ``by`` columns (strings), then :data:`ROLLUP_SCHEMA_BASE` (and
        :data:`COST_FIELDS` with a cost model). ``docs/fleet.md`` ("Rollups") says what
        each column is.
    by : list of str
    every : Period
    since, until : int or None
        The cut (ns), when given.
    allocated_from : str
        ``"jobs"`` (the archive's jobs table) or ``"runs"`` (no jobs table: allocated
        is the runs' accountable time).
    currency : str or None
    cost_basis : dict
        ``"accelerator_type / cluster"`` -> the :class:`pau.fleet.costs.CostRate` basis used.
    warnings : list of str
        What was left out and why (a job whose allocation is unknown, a run with no
        extent).
    """

    table: pa.Table
    by: list[str]
    every: Period
    since: int | None
    until: int | None
    allocated_from: str
    currency: str | None = None
    cost_basis: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def totals(self) -> pa.Table:
        """Per group, the int64 ns and count columns summed over its periods (exactly:
        Python integers), the ratios recomputed from those sums."""
        t = self.table
        ns_cols = [c for c in t.column_names if c.endswith("_ns") and c not in ("period_start_ns", "period_end_ns")]
        keys: dict[tuple[Any, ...], dict[str, int]] = {}
        groups = list(zip(*(t[k].to_pylist() for k in self.by))) if self.by else [()] * t.num_rows
        cols = {c: t[c].to_pylist() for c in ns_cols + [c for c in _COUNTS + ("runs_ended", "jobs_started",
                                                                            "recoveries") if c in t.column_names]}
        for i, g in enumerate(groups):
            acc = keys.setdefault(g, {c: 0 for c in cols})
            for c, v in cols.items():
                acc[c] += v[i] or 0
        out: dict[str, Any] = {k: [g[j] for g in keys] for j, k in enumerate(self.by)}
        for c in cols:
            out[c] = [keys[g][c] for g in keys]
        energy: dict[tuple[Any, ...], dict[str, list[float]]] = {g: {c: [] for c in _ENERGY} for g in keys}
        for c in _ENERGY:  # null for a group with no energy, never 0 J for unknown
            for g, v in zip(groups, t[c].to_pylist()):
                if v is not None:
                    energy[g][c].append(v)
            out[c] = pa.array([math.fsum(energy[g][c]) if energy[g][c] else None for g in keys], pa.float64())
        out["goodput"] = [a["productive_ns"] / a["accountable_ns"] if a["accountable_ns"] else None
                          for a in keys.values()]
        return pa.table(out)


    def overall(self, period_start_ns: int | None = None) -> RollupFigures:
        """The figures of every group together (of one period, by its start, when given):
        the int64 ns columns and counts summed (Python integers), hours, and the ratios of
        those sums (:class:`RollupFigures`). What ``pau fleet``'s JSON calls ``total`` and
        ``last_period``, and what its ``--gate`` checks."""
        t = self.table
        if period_start_ns is not None:
            t = t.filter(pc.equal(t["period_start_ns"], period_start_ns))
        ns = {c: sum(v or 0 for v in t[c].to_pylist()) for c in (*_STATE_COLS, "allocated_ns", "accountable_ns",
                                                                 "badput_ns")}
        n = {c: sum(t[c].to_pylist()) for c in ("failures", "recoveries", "jobs_started", "runs_ended",
                                                "preserved_steps")}
        queue = sum(v or 0 for v in t["queue_ns"].to_pylist()) if self.allocated_from == "jobs" else None
        acc, alloc, prod = ns["accountable_ns"], ns["allocated_ns"], ns["productive_ns"]
        energy = _known_sum(t["energy_j"])  # null when no row has energy, never 0 J for unknown
        # MFU of the selection: a ratio of sums, the rows' MFU numerators (MFU x capacity)
        # over their capacities (peak FLOPs of the productive time)
        pairs = [(m * c, c) for m, c in zip(t["mfu"].to_pylist(), t["peak_flop_productive"].to_pylist())
                 if m is not None and c]
        out: RollupFigures = {
            "allocated_ns": alloc, "accountable_ns": acc, "productive_ns": prod,
            "rolled_back_ns": ns["rolled_back_ns"], "badput_ns": ns["badput_ns"],
            "pending_ns": ns["pending_ns"], "checkpoint_ns": ns["checkpoint_ns"],
            "checkpoint_lost_ns": ns["checkpoint_lost_ns"], "checkpoint_unused_ns": ns["checkpoint_unused_ns"],
            "initialization_ns": ns["initialization_ns"], "recovery_outage_ns": ns["recovery_outage_ns"],
            "recovery_reinit_ns": ns["recovery_reinit_ns"], "recovery_restore_ns": ns["recovery_restore_ns"],
            "eval_ns": ns["eval_ns"], "data_wait_ns": ns["data_wait_ns"], "custom_ns": ns["custom_ns"],
            "unattributed_ns": ns["unattributed_ns"],
            "failures": n["failures"], "recoveries": n["recoveries"], "jobs_started": n["jobs_started"],
            "runs_ended": n["runs_ended"], "preserved_steps": n["preserved_steps"],
            "queue_ns": queue,
            "allocated_h": alloc / NS_PER_HOUR, "accountable_h": acc / NS_PER_HOUR, "productive_h": prod / NS_PER_HOUR,
            "rolled_back_h": ns["rolled_back_ns"] / NS_PER_HOUR, "badput_h": ns["badput_ns"] / NS_PER_HOUR,
            "goodput": prod / acc if acc else None,
            "goodput_allocated": prod / alloc if alloc else None,
            "failures_per_1000_accelerator_hours": n["failures"] / (acc / NS_PER_HOUR) * 1000 if acc else None,
            "mtbf_accelerator_h": acc / NS_PER_HOUR / n["failures"] if n["failures"] else None,
            "queue_mean_s": queue / n["jobs_started"] / NS_PER_S if n["jobs_started"] and queue is not None else None,
            "energy_j": energy,
            "energy_productive_j": _known_sum(t["energy_productive_j"]),
            "energy_per_preserved_step_j": (energy / n["preserved_steps"]
                                            if energy is not None and n["preserved_steps"] else None),
            "useful_flops": _known_sum(t["useful_flops"]),
            "peak_flop_productive": _known_sum(t["peak_flop_productive"]),
            "mfu": math.fsum(u for u, _ in pairs) / math.fsum(c for _, c in pairs) if pairs else None,
        }
        if "cost" not in t.column_names:
            return out
        return {**out, **_cost_figures(t, out["productive_h"])}


# ---------------------------------------------------------------------------
# the rollup


def _failure_rows(runs: pa.Table, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The failures of the runs kept, one entry each: (run index, instant, time to
    recover in ns or -1 when not recovered), from ``failure_ns`` and ``recovery_ns``
    (``recovery_ns[i]`` is that of ``failure_ns[i]``; the failures past its length were
    not recovered). Lists that do not agree with ``failures`` and ``not_recovered`` are
    refused naming the run."""
    fl = runs["failure_ns"].combine_chunks() if runs.num_rows else pa.array([], pa.list_(pa.int64()))
    rl = runs["recovery_ns"].combine_chunks() if runs.num_rows else pa.array([], pa.list_(pa.int64()))
    n_f = _ints(pc.list_value_length(fl))
    n_r = _ints(pc.list_value_length(rl))
    failures, not_rec = _ints(runs["failures"]), _ints(runs["not_recovered"])
    bad = keep & ((n_f != failures) | (n_r != failures - not_rec) | (np.asarray(fl.is_null()) & (failures > 0)))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise PauError(f"runs: row {i} (run {runs['run'][i].as_py()!r}): failures = {int(failures[i])} and "
                       f"not_recovered = {int(not_rec[i])}, but failure_ns holds {fl[i].as_py()!r} and recovery_ns "
                       f"{rl[i].as_py()!r} ({int(bad.sum())} runs). Fix: give the lists of the runs table as pau "
                       "ingest writes them (an archive written before they were kept: ingest it again)")
    flat_f = np.asarray(pc.list_flatten(fl).to_numpy(zero_copy_only=False), np.int64)
    flat_r = np.asarray(pc.list_flatten(rl).to_numpy(zero_copy_only=False), np.int64)
    if (flat_r < 0).any():
        raise PauError("runs: recovery_ns holds a negative time to recover. Fix: give the lists pau ingest writes")
    parent = np.asarray(pc.list_parent_indices(fl).to_numpy(zero_copy_only=False), np.int64)
    r_parent = np.asarray(pc.list_parent_indices(rl).to_numpy(zero_copy_only=False), np.int64)
    rec = np.full(len(flat_f), -1, np.int64)
    # the recovered failures are the first n_r of each run's list, in the order of recovery_ns
    r_pos = np.arange(len(flat_r), dtype=np.int64) - (np.cumsum(n_r) - n_r)[r_parent]
    at = (np.cumsum(n_f) - n_f)[r_parent] + r_pos
    rec[at] = flat_r
    k = keep[parent]
    return parent[k], flat_f[k], rec[k]


def read_runs(path: str, by: Sequence[str], cost: bool) -> pa.Table:
    """The columns of the runs table (a folder of Parquet files) a rollup needs: the
    run, its extent, its counts, the group keys (``labels`` for ``labels.K``), and with
    ``cost`` its accelerator type and cluster."""
    files = sorted(os.path.join(path, n) for n in os.listdir(path) if n.endswith(".parquet"))
    if not files:
        raise PauError(f"{path}: no Parquet file of the runs table. Fix: ingest runs first (pau ingest)")
    names = pq.read_schema(files[0]).names
    want = ["run", "job", "cluster", "start_ns", "end_ns", *_COUNTS, *_FAILURE_LISTS, *_ENERGY, *_FLOPS]
    for k in [*by, *(("accelerator_type", "cluster") if cost else ())]:
        if not k.startswith("labels."):
            want.append(k)
        else:
            want.append(k[len("labels."):] if k[len("labels."):] in names else "labels")
    columns = [c for c in dict.fromkeys(want) if c in names]
    with ThreadPoolExecutor(max_workers=_cellsums.READ_AHEAD) as ex:  # in order, on helper threads (decoding releases the GIL)
        return pa.concat_tables(list(ex.map(lambda f: pq.ParquetFile(f).read(columns=columns), files)))


def _ints(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(col, 0).cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)


def _extent(runs: pa.Table, jobs: pa.Table | None, lo: int | None, hi: int | None) -> tuple[int, int] | None:
    """The first start and the last end of the runs and jobs, within [lo, hi)."""
    starts = [pc.min(t["start_ns"]).as_py() for t in (runs, jobs) if t is not None and t.num_rows]
    ends = [pc.max(t["end_ns"]).as_py() for t in (runs, jobs) if t is not None and t.num_rows]
    starts, ends = [x for x in starts if x is not None], [x for x in ends if x is not None]
    if not starts or not ends:
        return None
    a, b = min(starts), max(ends)
    return (a if lo is None else max(a, lo)), (b if hi is None else min(b, hi))


def _periods_spanned(runs: pa.Table, jobs: pa.Table | None, p: Period, lo: int | None, hi: int | None) -> int:
    """About how many periods the runs and jobs span (to choose dense or sparse sums)."""
    if p.edges is not None:
        return len(p.edges)
    starts = [pc.min(t["start_ns"]).as_py() for t in (runs, jobs) if t is not None and t.num_rows]
    ends = [pc.max(t["end_ns"]).as_py() for t in (runs, jobs) if t is not None and t.num_rows]
    starts, ends = [x for x in starts if x is not None], [x for x in ends if x is not None]
    if not starts or not ends:
        return 1
    a, b = max(min(starts), lo if lo is not None else min(starts)), min(max(ends), hi if hi is not None else max(ends))
    width = p.width_ns or 28 * p.n * NS_PER_DAY
    return int(max(0, b - a) // width + 2)


def _check_columns(table: pa.Table, name: str, needed: Sequence[str], fix: str) -> None:
    for c in needed:
        if c not in table.column_names:
            raise SchemaError(name, c, "is missing", fix)


def _add_jobs(acc: _sums.Acc, queue: _sums.Acc, jobs: pa.Table, g: _groups.Groups, job_run: np.ndarray,
              job_keep: np.ndarray, job_measured: np.ndarray | None, p: Period, lo: int | None, hi: int | None,
              warnings: list[str]) -> None:
    """Each job's allocation cut at the period boundaries (and ``since``/``until``), and
    with ``job_measured`` (whether the job's run measured its energy) again in the column
    after allocated when not measured; its queue time and count in the period it started."""
    alloc_col, unattributed = len(STATES), STATES.index("unattributed")
    a_ns, st, en = jobs["allocated_accelerator_ns"], jobs["start_ns"], jobs["end_ns"]
    started = np.asarray(st.is_valid())
    unknown = started & ~np.asarray(en.is_valid()) | started & ~np.asarray(a_ns.is_valid())
    unknown &= job_keep
    if unknown.any():
        ids = jobs["job"].filter(pa.array(unknown)).to_pylist()
        warnings.append(f"{int(unknown.sum())} jobs whose allocation is not known (still running, or accelerators "
                        f"unknown) are not in allocated: {', '.join(map(str, ids[:5]))}{' ...' if len(ids) > 5 else ''}")
    alloc, s0, e0 = _ints(a_ns), _ints(st), _ints(en)
    lo_c = np.iinfo(np.int64).min if lo is None else lo
    hi_c = np.iinfo(np.int64).max if hi is None else hi
    js, je = np.maximum(s0, lo_c), np.minimum(e0, hi_c)
    ok = job_keep & ~unknown & started & (alloc > 0) & (e0 > s0) & (je > js)
    idx = np.flatnonzero(ok)
    ps = period_starts(js[idx], p)
    whole = (je[idx] <= period_ends(ps, p)) & (js[idx] == s0[idx]) & (je[idx] == e0[idx])
    w_idx = idx[whole]
    acc.add(g.job[w_idx], ps[whole], np.full(len(w_idx), alloc_col), alloc[w_idx])
    wa = job_run[w_idx] < 0  # a job with no run: accountable and unattributed for its whole allocation
    acc.add(g.job[w_idx][wa], ps[whole][wa], np.full(int(wa.sum()), unattributed), alloc[w_idx][wa])
    if job_measured is not None:
        wn = ~job_measured[w_idx]
        acc.add(g.job[w_idx][wn], ps[whole][wn], np.full(int(wn.sum()), alloc_col + 1), alloc[w_idx][wn])
    # a job across periods: its allocation up to t is alloc * (t - start) // (end - start) in
    # Python integers, so the pieces sum exactly to alloc (accelerators x ns for whole counts)
    rows: list[tuple[int, int, int, int]] = []
    for i in idx[~whole].tolist():
        a, a0, a1 = int(alloc[i]), int(s0[i]), int(e0[i])
        t, end = int(js[i]), int(je[i])
        while t < end:
            b0 = int(period_starts(np.array([t]), p)[0])
            b1 = min(int(period_ends(np.array([b0]), p)[0]), end)
            piece = a * (b1 - a0) // (a1 - a0) - a * (t - a0) // (a1 - a0)
            rows.append((int(g.job[i]), b0, alloc_col, piece))
            if job_run[i] < 0:
                rows.append((int(g.job[i]), b0, unattributed, piece))
            if job_measured is not None and not job_measured[i]:
                rows.append((int(g.job[i]), b0, alloc_col + 1, piece))
            t = b1
    if rows:
        cut = np.array(rows, dtype=np.int64)
        acc.add(cut[:, 0], cut[:, 1], cut[:, 2], cut[:, 3])
    q_ok = np.asarray(jobs["queue_ns"].is_valid()) & job_keep & started & (s0 >= lo_c) & (s0 < hi_c)
    q_idx = np.flatnonzero(q_ok)
    q_ps = period_starts(s0[q_idx], p)
    queue.add(g.job[q_idx], q_ps, np.zeros(len(q_idx), np.int64), _ints(jobs["queue_ns"])[q_idx])
    queue.add(g.job[q_idx], q_ps, np.ones(len(q_idx), np.int64), np.ones(len(q_idx), np.int64))


def rollup(runs: pa.Table, cells: Any, jobs: pa.Table | None = None, *, by: str | Sequence[str] = (),
           every: str | Period = "1w", since: Any = None, until: Any = None, where: Any = None,
           cost_model: Any = None, tz: str | None = None) -> Rollup:
    """Accelerator time and the figures over it per group and period.

    Parameters
    ----------
    runs : pyarrow.Table
        The runs table (``pau.fleet.RUNS_SCHEMA``).
    cells : pyarrow.Table, iterable of record batches, or a folder of Parquet files
        The hourly cells (``pau.fleet.CELLS_SCHEMA``); streamed a batch at a time.
    jobs : pyarrow.Table or None
        The scheduler's jobs (``pau.readers.JOBS_SCHEMA`` plus ``run``: the run key of
        the job, null when it has none). None: allocated = the runs' accountable time.
    by : str or list of str
        Group keys: runs-table columns or labels (``labels.team``); none: one group.
    every : str
        ``1h``, ``1d``, ``1w`` (ISO weeks, Monday 00:00 UTC), ``1mo``; any multiple.
    since, until : time, optional
        Only time in ``[since, until)`` (whole hours; ns, datetime or ISO string).
    where : str or dict, optional
        Runs (and jobs without a run) kept: :func:`parse_where`.
    cost_model : CostModel, path or dict, optional
        Adds the cost columns (:mod:`pau.fleet.costs`; a rate per accelerator type and
        cluster of each run or job).
    tz : str, optional
        An IANA time zone: local days, weeks and months (:func:`local_edges`).
    """
    keys = [by] if isinstance(by, str) else list(by)
    if len(set(keys)) != len(keys):
        raise PauError(f"by = {keys}: a key twice. Fix: name each group key once")
    p = parse_every(every)
    lo, hi = parse_time(since, "since"), parse_time(until, "until")
    if lo is not None and hi is not None and hi <= lo:
        raise PauError(f"since = {since!r}, until = {until!r}: an empty range. Fix: until after since")
    terms = parse_where(where)
    model = None if cost_model is None else (cost_model if isinstance(cost_model, _costs.CostModel)
                                             else _costs.cost_model(cost_model))
    warnings: list[str] = []
    _check_columns(runs, "runs", ("run", "start_ns", "end_ns", *_COUNTS, *_FAILURE_LISTS),
                   "give the fleet's runs table (pau.fleet.RUNS_SCHEMA; an archive written before it held "
                   "failure_ns and recovery_ns: ingest the runs again into a new archive)")
    run_keep = _groups.mask(runs, terms, "runs", strict=True)
    job_run, job_keep, runs_with_job = _join_jobs(runs, jobs, run_keep, terms)
    cost_keys = ["accelerator_type", "cluster"] if model is not None else []
    g = _groups.groups(runs, jobs, job_run, keys + cost_keys)
    if tz is not None:
        span = _extent(runs, jobs, lo, hi)
        if span is not None:
            p = local_edges(p, tz, span[0] - NS_PER_HOUR, span[1] + NS_PER_HOUR)
    n_periods = _periods_spanned(runs, jobs, p, lo, hi)
    # the states, allocated, and allocated whose energy no run measured (priced at nominal power)
    acc = _sums.Acc(g.count, len(STATES) + 2, p, n_periods)
    measured = _measured(runs) if model is not None else None
    _cellsums.add_cells(acc, cells, runs, g, run_keep, runs_with_job, measured, p, lo, hi)
    queue = _sums.Acc(g.count, 2, p, n_periods)  # queue ns, jobs started
    if jobs is not None:
        job_measured = None
        if measured is not None:
            job_measured = (job_run >= 0) & (measured[np.maximum(job_run, 0)] if runs.num_rows else False)
        _add_jobs(acc, queue, jobs, g, job_run, job_keep, job_measured, p, lo, hi, warnings)
    cnt, ends, fails = _add_counts(runs, g, run_keep, p, lo, hi, n_periods, warnings)
    pricing = _pricing.Pricing(model)
    table = _assemble(keys, g, p, lo, hi, runs, jobs is not None, pricing,
                      {"time": acc.result(), "counts": cnt.result(), "queue": queue.result()}, ends, fails)
    if jobs is None:
        warnings.insert(0, "the archive holds no jobs table: allocated is the runs' accountable time (jobs with no "
                           "run are not counted)")
    return Rollup(table, keys, p, lo, hi, "runs" if jobs is None else "jobs", pricing.currency,
                  dict(sorted(pricing.basis.items())),  # by type and cluster: the same for the same data
                  warnings)


def _join_jobs(runs: pa.Table, jobs: pa.Table | None, run_keep: np.ndarray,
               terms: list[tuple[str, bool, frozenset[str]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each job's run (index in ``runs``, -1: none), whether the job is kept, and whether
    each run is one of a job's: its cluster and job name a row of the jobs table (null
    cluster equal to null), whichever run the row's ``run`` names. Such a run's time is
    allocated by the job; a run with no such job stands on its own (its accountable time
    is allocated)."""
    if jobs is None:
        return np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(runs.num_rows, bool)
    _check_columns(jobs, "jobs", ("job", "cluster", "start_ns", "end_ns", "allocated_accelerator_ns", "queue_ns",
                                  "run"),
                   "give the fleet's jobs table (pau.readers.JOBS_SCHEMA and run, the joined run key)")
    _check_columns(runs, "runs", ("job", "cluster"), "give the fleet's runs table (pau.fleet.RUNS_SCHEMA)")
    job_run = np.zeros(0, np.int64)
    if jobs.num_rows:
        job_run = np.asarray(pc.index_in(jobs["run"], value_set=runs["run"]).fill_null(-1)
                             .to_numpy(zero_copy_only=False), dtype=np.int64)
    missing = (job_run < 0) & np.asarray(jobs["run"].is_valid())
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise PauError(f"jobs: column 'run', row {i}: {jobs['run'][i].as_py()!r} is no run of the runs table "
                       f"({int(missing.sum())} rows). Fix: the run key of a run in the archive, or null")
    # a job with a run is kept with its run; one without by its own columns
    job_keep = np.where(job_run < 0, _groups.mask(jobs, terms, "jobs", strict=False),
                        run_keep[np.maximum(job_run, 0)] if runs.num_rows else False)
    named = set(zip(jobs["cluster"].to_pylist(), jobs["job"].to_pylist()))
    runs_with_job = np.array([j is not None and (c, j) in named for c, j in
                              zip(runs["cluster"].to_pylist(), runs["job"].to_pylist())], bool).reshape(-1)
    runs_with_job[job_run[job_run >= 0]] = True
    return job_run, job_keep, runs_with_job


def _measured(runs: pa.Table) -> np.ndarray:
    """Whether each run's energy was measured (``energy_j`` not null)."""
    if "energy_j" not in runs.column_names:
        return np.zeros(runs.num_rows, bool)
    return np.asarray(runs["energy_j"].is_valid(), bool).reshape(-1)


@dataclass
class _Ends:
    """The runs kept that ended in the cut (``idx``, into the runs table) and the start of
    the period of each one's last ns (``start``)."""

    idx: np.ndarray
    start: np.ndarray


@dataclass
class _Fails:
    """The failures kept, one entry each: run index, period start of its instant, time to
    recover (ns; -1 not recovered)."""

    run: np.ndarray
    start: np.ndarray
    recover: np.ndarray


def _add_counts(runs: pa.Table, g: _groups.Groups, run_keep: np.ndarray, p: Period, lo: int | None,
                hi: int | None, n_periods: int, warnings: list[str]) -> tuple[_sums.Acc, _Ends, _Fails]:
    """The counts per fine group and period: those a run carries as a whole in the period
    of its last ns (and ``runs_ended``), each failure (and not recovered) in the period of
    its instant."""
    cnt = _sums.Acc(g.count, len(_COUNTS) + 1, p, n_periods)
    has_end = np.asarray(runs["end_ns"].is_valid())
    if (run_keep & ~has_end).any():
        warnings.append(f"{int((run_keep & ~has_end).sum())} runs with no extent (no end_ns) are in no period")
    last = np.maximum(_ints(runs["end_ns"]) - 1, _ints(runs["start_ns"]))
    rk = run_keep & has_end & _cellsums.inside(last, lo, hi)
    r_idx = np.flatnonzero(rk)
    r_ps = period_starts(last[r_idx], p)
    for j, c in enumerate(_COUNTS):
        if c not in _PER_FAILURE:
            cnt.add(g.run[r_idx], r_ps, np.full(len(r_idx), j), _ints(runs[c])[r_idx])
    cnt.add(g.run[r_idx], r_ps, np.full(len(r_idx), len(_COUNTS)), np.ones(len(r_idx), np.int64))
    f_run, f_ns, f_rec = _failure_rows(runs, run_keep)
    f_in = _cellsums.inside(f_ns, lo, hi)
    f_run, f_ns, f_rec = f_run[f_in], f_ns[f_in], f_rec[f_in]
    f_ps = period_starts(f_ns, p) if len(f_ns) else f_ns
    cnt.add(g.run[f_run], f_ps, np.full(len(f_run), _COUNTS.index("failures")), np.ones(len(f_run), np.int64))
    lost = f_rec < 0
    cnt.add(g.run[f_run[lost]], f_ps[lost], np.full(int(lost.sum()), _COUNTS.index("not_recovered")),
            np.ones(int(lost.sum()), np.int64))
    return cnt, _Ends(r_idx, r_ps), _Fails(f_run, f_ps, f_rec)


def _assemble(keys: list[str], g: _groups.Groups, p: Period, lo: int | None, hi: int | None, runs: pa.Table,
              has_jobs: bool, pricing: _pricing.Pricing, parts: dict[str, _sums.Sparse], ends: _Ends,
              fails: _Fails) -> pa.Table:
    """The rollup's table from the sums per fine group and period (``parts``: time,
    counts, queue): one row per user group and period with time, a run ended or a job
    started (a failure's period is a row even when its run had no time there: its
    instant is the run's end)."""
    n_time = len(STATES) + 2
    user = len(keys)
    gkey = [tuple(v[f] for v in g.values[:user]) for f in range(g.count)]
    order = sorted(set(gkey), key=lambda k: tuple((x is None, "" if x is None else x) for x in k))
    rank = {k: i for i, k in enumerate(order)}
    ug = np.array([rank[k] for k in gkey] if user else [0] * g.count, np.int64)
    time, counts, queue = parts["time"], parts["counts"], parts["queue"]
    started = queue.column == 1
    live = [_sums.pair(ug[time.group], time.start), _sums.pair(ug[counts.group], counts.start),
            _sums.pair(ug[queue.group[started]], queue.start[started])]
    row_keys = np.unique(np.concatenate(live))
    n_rows = len(row_keys)
    row_group, row_start = _sums.unpair(row_keys)
    dense = {}
    for name, sp in parts.items():
        inside = np.isin(_sums.pair(ug[sp.group], sp.start), row_keys)  # counts and queue of a row with none: not a row
        dense[name] = _sums.rows(row_keys, sp.start[inside], ug[sp.group][inside], sp.column[inside], sp.value[inside],
                                 n_rows, {"time": n_time, "counts": len(_COUNTS) + 1, "queue": 2}[name])
    cost = energy_cost = None
    if pricing.model is not None:
        cost = _pricing.cost_rows(pricing, g, user, ug, row_keys, time)
        energy_cost = _pricing.energy_cost_rows(pricing, g, user, ug, row_keys, runs, ends.idx, ends.start, time)
    energy = _energy_rows(runs, ends.idx, row_keys, _sums.pair(ug[g.run[ends.idx]], ends.start))
    energy.update(_flops_rows(runs, ends.idx, np.searchsorted(row_keys, _sums.pair(ug[g.run[ends.idx]], ends.start)),
                              n_rows))
    ok = fails.recover >= 0
    rec_rows = (np.searchsorted(row_keys, _sums.pair(ug[g.run[fails.run[ok]]], fails.start[ok])) if ok.any()
                else np.zeros(0, np.int64))
    recoveries = _recovery_columns(rec_rows, fails.recover[ok], n_rows)
    return _table(keys, [order[u] for u in row_group.tolist()], row_start, dense["time"][:, :len(STATES) + 1],
                  dense["counts"], dense["queue"], cost, recoveries, p, lo, hi,
                  has_jobs, energy, energy_cost)


def _energy_rows(runs: pa.Table, r_idx: np.ndarray, row_keys: np.ndarray,
                 r_keys: np.ndarray) -> dict[str, pa.Array]:
    """:data:`_ENERGY` per row: the runs' (``r_idx``, each in the row ``r_keys`` pairs)
    summed exactly (``math.fsum``), null in a row where no run has a value (a runs table
    without the column: null everywhere)."""
    rows = np.searchsorted(row_keys, r_keys)
    out = {}
    for col in _ENERGY:
        got: dict[int, list[float]] = {}
        if col in runs.column_names:  # the runs with a value only (none: no loop)
            has = np.asarray(runs[col].is_valid(), bool).reshape(-1)[r_idx]
            values = runs[col].to_numpy(zero_copy_only=False)
            for r, row in zip(r_idx[has].tolist(), rows[has].tolist()):
                got.setdefault(row, []).append(float(values[r]))
        out[col] = pa.array([math.fsum(got[i]) if i in got else None for i in range(len(row_keys))], pa.float64())
    return out


def _flops_rows(runs: pa.Table, r_idx: np.ndarray, rows: np.ndarray, n_rows: int) -> dict[str, pa.Array]:
    """``useful_flops`` and ``mfu`` per row, over the runs that ended in it (``r_idx``,
    each in row ``rows``) and know their useful FLOPs: their sum (``math.fsum``), and
    over the sum of their productive accelerator-seconds x peak FLOP/s (runs that also
    know their peak); null where no run knows them (never 0)."""
    if not all(c in runs.column_names for c in _FLOPS) or not len(r_idx):
        return {c: pa.nulls(n_rows, pa.float64()) for c in ("useful_flops", "peak_flop_productive", "mfu")}
    useful = runs["useful_flops"].to_numpy(zero_copy_only=False)[r_idx]
    peak = runs["peak_flops"].to_numpy(zero_copy_only=False)[r_idx]
    prod = runs["productive_ns"].to_numpy(zero_copy_only=False).astype(np.float64)[r_idx]
    known = ~np.isnan(useful)
    both = known & ~np.isnan(peak) & ~np.isnan(prod)
    num: dict[int, list[float]] = {}
    got: dict[int, list[float]] = {}
    den: dict[int, list[float]] = {}
    for row, u in zip(rows[known].tolist(), useful[known].tolist()):
        got.setdefault(row, []).append(u)
    for row, u, p, t in zip(rows[both].tolist(), useful[both].tolist(), peak[both].tolist(), prod[both].tolist()):
        num.setdefault(row, []).append(u)
        den.setdefault(row, []).append(t / NS_PER_S * p)
    cap = [math.fsum(den[i]) if i in den else None for i in range(n_rows)]
    mfu = [None if not c else math.fsum(num[i]) / c for i, c in enumerate(cap)]
    return {"useful_flops": pa.array([math.fsum(got[i]) if i in got else None for i in range(n_rows)], pa.float64()),
            "peak_flop_productive": pa.array(cap, pa.float64()), "mfu": pa.array(mfu, pa.float64())}


def _ratio(num: np.ndarray, den: np.ndarray) -> pa.Array:
    """num / den, null where den is 0."""
    zero = den == 0
    return pa.array(np.divide(num, np.where(zero, 1, den)).astype(np.float64), mask=zero)


def _recovery_columns(rows: np.ndarray, d: np.ndarray, n_rows: int) -> dict[str, pa.Array]:
    """``recoveries`` and ``time_to_recover_{mean,p50,p90,max}_s`` per row from the times
    to recover ``d`` (ns) of the recovered failures, each in row ``rows``: the mean of
    their exact sum, the quantiles by numpy's ``"linear"`` method (its virtual index
    ``(n - 1) q`` and its ``_lerp``, so the figures are ``np.quantile``'s to the bit), all
    rows at once; null where a row has none."""
    order = np.lexsort((d, rows))
    rows, d = rows[order], d[order].astype(np.int64)
    count = np.bincount(rows, minlength=n_rows).astype(np.int64)
    has = np.flatnonzero(count)
    n = count[has]
    first = (np.cumsum(count) - count)[has]
    out: dict[str, pa.Array] = {"recoveries": pa.array(count, pa.int64())}
    mean = np.zeros(len(has))
    if len(has):
        if float(d.max()) * float(n.max()) < 2.0**53:  # int64 sums, exact in float64
            mean = np.add.reduceat(d, first) / n / NS_PER_S
        else:  # Python integers, correctly rounded division
            mean = np.array([sum(d[f:f + k].tolist()) / k / NS_PER_S for f, k in zip(first.tolist(), n.tolist())])
    figures = {"mean": mean, "max": d[first + n - 1] / NS_PER_S if len(has) else mean}
    for name, q in (("p50", 0.5), ("p90", 0.9)):
        virtual = (n - 1) * q
        prev = np.floor(virtual)
        gamma = virtual - prev
        i = np.minimum(prev.astype(np.int64), n - 1)
        j = np.minimum(i + 1, n - 1)
        a, b = d[first + i], d[first + j]
        diff = b - a
        lerp = np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)
        figures[name] = lerp / NS_PER_S
    for name in ("mean", "p50", "p90", "max"):
        col = np.zeros(n_rows)
        col[has] = figures[name]
        out[f"time_to_recover_{name}_s"] = pa.array(col, pa.float64(), mask=count == 0)
    return out


def _table(keys: list[str], groups: list[tuple[Any, ...]], starts: np.ndarray, t: np.ndarray, c: np.ndarray,
           q: np.ndarray, cost: np.ndarray | None, recoveries: dict[str, pa.Array], p: Period,
           lo: int | None, hi: int | None, has_jobs: bool, energy: Mapping[str, pa.Array],
           energy_cost: tuple[pa.Array, pa.Array] | None = None) -> pa.Table:
    """The rollup's table from the summed arrays, one row per (group, period): ``t`` the
    states then allocated, ``c`` the counts then runs ended, ``q`` queue ns and jobs
    started, ``cost`` the seven cost parts, ``energy`` :data:`_ENERGY` per row."""
    n_states = len(STATES)
    if len(t):
        _sums.refuse_overflow(t[:, :n_states])
    accountable = t[:, :n_states].sum(axis=1) if len(t) else np.zeros(0, np.int64)
    allocated = t[:, n_states]
    cols: dict[str, Any] = {k: pa.array([g[i] for g in groups], pa.string()) for i, k in enumerate(keys)}
    ends = period_ends(starts, p) if len(starts) else starts
    cols["period"] = pa.array(period_names(starts, p), pa.string())
    cols["period_start_ns"] = starts if lo is None else np.maximum(starts, lo)
    cols["period_end_ns"] = ends if hi is None else np.minimum(ends, hi)
    cols["allocated_ns"] = allocated
    cols["accountable_ns"] = accountable
    for i, col in enumerate(_STATE_COLS):
        cols[col] = t[:, i]
    productive = cols["productive_ns"]
    cols["badput_ns"] = accountable - productive
    for h in ("allocated", "accountable", "productive", "rolled_back", "badput"):
        cols[f"{h}_h"] = cols[f"{h}_ns"] / NS_PER_HOUR
    cols["goodput"] = _ratio(productive, accountable)
    cols["goodput_allocated"] = _ratio(productive, allocated)
    count = dict(zip((*_COUNTS, "runs_ended"), c.T)) if len(c) else {k: np.zeros(0, np.int64)
                                                                     for k in (*_COUNTS, "runs_ended")}
    for col in ("runs_ended", "failures", "not_recovered", "preserved_steps", "preserved_tokens",
                "requests_accepted", "accepted_tokens"):
        cols[col] = count[col]
    cols["failures_per_1000_accelerator_hours"] = _ratio(count["failures"] * 1000.0, accountable / NS_PER_HOUR)
    cols["mtbf_accelerator_h"] = _ratio(accountable / NS_PER_HOUR, count["failures"])
    cols.update(recoveries)
    started = q[:, 1] if len(q) else np.zeros(0, np.int64)
    queue_ns = q[:, 0] if len(q) else np.zeros(0, np.int64)
    cols["jobs_started"] = started
    cols["queue_ns"] = queue_ns if has_jobs else pa.nulls(len(starts), pa.int64())
    cols["queue_mean_s"] = _ratio(queue_ns / NS_PER_S, started)
    cols.update(energy)
    joules = energy["energy_j"].to_numpy(zero_copy_only=False)  # NaN where null
    cols["energy_per_preserved_step_j"] = pa.array(
        [None if math.isnan(j) or not n else j / int(n) for j, n in zip(joules.tolist(), count["preserved_steps"].tolist())],
        pa.float64())
    if cost is not None:
        for i, col in enumerate(("cost", "cost_productive", "cost_rolled_back", "cost_recovery", "cost_idle",
                                 "cost_overhead", "cost_unaccounted")):
            cols[col] = cost[:, i]
        total = cost[:, 0]
        tokens = count["preserved_tokens"] + count["accepted_tokens"]
        cols["cost_per_productive_h"] = _ratio(total, productive / NS_PER_HOUR)
        cols["cost_per_preserved_step"] = _ratio(total, count["preserved_steps"])
        cols["cost_per_million_tokens"] = _ratio(total * 1e6, tokens)
        cols["cost_per_accepted_request"] = _ratio(total, count["requests_accepted"])
        assert energy_cost is not None
        cols["energy_cost"], cols["energy_cost_basis"] = energy_cost
    schema = pa.schema([*(pa.field(k, pa.string()) for k in keys), *ROLLUP_SCHEMA_BASE,
                        *(COST_FIELDS if cost is not None else [])])
    return pa.table({k: cols[k] for k in schema.names}, schema=schema)


# ---------------------------------------------------------------------------
# trends


def changes(r: Rollup, metric: str, *, method: str = "pelt", **options: Any) -> pa.Table:
    """Change points of ``metric`` (a column of the rollup) per group over its periods:
    :func:`pau.fleet.changes.group_changes` on the rollup's table, weighted by allocated
    accelerator-hours when ``metric`` is a ratio (``goodput*``), so ``accelerator_hours``
    is what the change won or lost. Periods where the metric is null are left out."""
    t = r.table
    if metric not in t.column_names:
        raise PauError(f"metric {metric!r}: not a column of the rollup. Fix: one of "
                       f"{', '.join(c for c in t.column_names if c not in r.by)}")
    t = t.filter(pc.is_valid(t[metric]))
    weight = "allocated_h" if metric.startswith("goodput") or metric.endswith("_ratio") else None
    return _changes.group_changes(t, metric, by=r.by, period="period_start_ns", weight=weight, method=method,
                                  **options)


def capacity(r: Rollup, period_a: Any, period_b: Any) -> pa.Table:
    """Efficiency as capacity per group: productive accelerator-hours gained from period
    ``a`` to period ``b`` (each named as in the ``period`` column, or by a time in it)
    over the hours of ``b``, in accelerators' worth (:func:`pau.fleet.changes.accelerators_gained`).
    A group without time in a period has 0 productive hours there."""
    t = r.table

    def pick(which: Any, what: str) -> int:
        if isinstance(which, str) and which in set(t["period"].to_pylist()):
            return int(t.filter(pc.equal(t["period"], which))["period_start_ns"][0].as_py())
        ns = parse_time(which, what) if not isinstance(which, str) or not re.search(r"W\d", which) else None
        if ns is None:
            raise PauError(f"{what} = {which!r}: no such period in the rollup. Fix: a value of its period column")
        return int(period_starts(np.array([ns]), r.every)[0])

    a, b = pick(period_a, "period_a"), pick(period_b, "period_b")
    hours = float(period_ends(np.array([b]), r.every)[0] - b) / NS_PER_HOUR
    groups = list(zip(*(t[k].to_pylist() for k in r.by))) if r.by else [()] * t.num_rows
    prod = dict.fromkeys(groups, None)
    pa_, pb = {g: 0 for g in prod}, {g: 0 for g in prod}
    for g, s, v in zip(groups, t["period_start_ns"].to_pylist(), t["productive_ns"].to_pylist()):
        ps_ = int(period_starts(np.array([s]), r.every)[0])
        if ps_ == a:
            pa_[g] += v
        if ps_ == b:
            pb[g] += v
    out: dict[str, list[Any]] = {k: [g[i] for g in prod] for i, k in enumerate(r.by)}
    out["productive_h_a"] = [pa_[g] / NS_PER_HOUR for g in prod]
    out["productive_h_b"] = [pb[g] / NS_PER_HOUR for g in prod]
    out["accelerators"] = [_changes.accelerators_gained(x, y, hours) for x, y in zip(out["productive_h_a"], out["productive_h_b"])]
    return pa.table(out)

