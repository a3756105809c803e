"""The Ledger object and its derived figures (DESIGN §2.3).

Sums of time are exact Python ints; hours and ratios are floats derived from them
at the edge. Ratios with a zero denominator are ``None`` (null), never NaN.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from pau import _core
from pau.engine._format import duration, html_table, pct
from pau.engine.types import LedgerSummary, RankActivity
from pau.errors import PauError
from pau.engine.vocab import ACTIVITIES, STATES, counts_metadata, label, names

NS_PER_HOUR = 3_600 * 10**9
_UNKNOWN = "unknown"


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


class Ledger:
    """The ledger of accelerator time: lifecycle state × device activity per rank.

    Attributes
    ----------
    table : pyarrow.Table
        Tidy: ``rank, [window,] state, activity, duration_ns``, non-zero rows only.
        For every rank the rows sum exactly to its accountable time.
    accountable : pyarrow.Table
        ``rank, accountable_ns`` — the time each rank is billed to the job.
    intervals : pyarrow.Table or None
        The state intervals (:func:`pau.core.attribute`) when a lifecycle was given.
    quarantine : pyarrow.Table or None
        Event rows set aside with ``on_invalid="quarantine"``.
    lifecycle_quarantine : pyarrow.Table or None
        Lifecycle rows set aside with ``on_invalid="quarantine"``.

    Without a lifecycle ``state`` is ``unattributed``; without events ``activity`` is
    ``unknown``. A lifecycle of many jobs (a ``job`` column) puts ``job`` before ``rank``
    in every table: a rank is an accelerator of its job.
    """

    def __init__(self, table: pa.Table, accountable: pa.Table, *, attribution: Any = None,
                 quarantine: pa.Table | None = None, lifecycle_quarantine: pa.Table | None = None,
                 has_events: bool = True) -> None:
        self.table = table
        self.accountable = accountable
        self._att = attribution
        self.quarantine = quarantine
        self.lifecycle_quarantine = lifecycle_quarantine
        self.has_events = has_events

    @property
    def intervals(self) -> pa.Table | None:
        return None if self._att is None else self._att.intervals

    # -- plain sums ---------------------------------------------------------

    def accountable_ns(self) -> int:
        """Accountable accelerator time over all ranks, in ns (exact)."""
        return int(sum(self.accountable["accountable_ns"].to_pylist()))

    def by(self, *keys: str) -> pa.Table:
        """Total ``duration_ns`` grouped by the given columns (e.g. ``"state"``).
        A total beyond int64 (more than 292 accelerator-years in one group) raises
        :class:`pau.errors.PauError`; the figures of :meth:`summary` are exact ints."""
        names = list(keys)
        sums = exact_sums(self.table, names, "duration_ns")
        if any(not _I64_MIN <= v <= _I64_MAX for v in sums.values()):
            raise PauError(f"ledger.by({', '.join(map(repr, names))}): a total is beyond int64 ns. Fix: use "
                           "state_ns(), activity_ns() or summary(), whose figures are exact Python ints")
        cols = {n: [k[j] for k in sums] for j, n in enumerate(names)}
        out = pa.table({**{n: pa.array(v, self.table.schema.field(n).type if not
                                       pa.types.is_dictionary(self.table.schema.field(n).type) else pa.string())
                           for n, v in cols.items()},
                        "duration_ns": pa.array(list(sums.values()), pa.int64())})
        return out

    def state_ns(self) -> dict[str, int]:
        """ns per state (every state, zeros included), exact."""
        out = dict.fromkeys(STATES, 0)
        for (state,), v in exact_sums(self.table, ["state"], "duration_ns").items():
            out[state] += v
        return out

    def activity_ns(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for (activity,), v in exact_sums(self.table, ["activity"], "duration_ns").items():
            out[activity] = out.get(activity, 0) + v
        return out

    def rank_activity(self) -> list[RankActivity]:
        """Per rank, in rank order: its accountable span and ns per activity (every
        activity that occurs on it), exact. The per-rank table of ``pau report``. With
        many jobs, per (job, rank) in that order, each entry with its ``job``."""
        if "job" in self.table.column_names:
            per_job: dict[tuple[Any, int], dict[str, int]] = {}
            for (job, rank, activity), v in exact_sums(self.table, ["job", "rank", "activity"],
                                                       "duration_ns").items():
                if v:
                    acts = per_job.setdefault((job, int(rank)), {})
                    acts[activity] = acts.get(activity, 0) + v
            keys = sorted(per_job, key=lambda k: (k[0] is None, k[0] or "", k[1]))
            return [{"job": j, "rank": r, "span_ns": sum(per_job[(j, r)].values()), "activity_ns": per_job[(j, r)]}
                    for j, r in keys]
        per: dict[int, dict[str, int]] = {}
        for (rank, activity), v in exact_sums(self.table, ["rank", "activity"], "duration_ns").items():
            if v:
                acts = per.setdefault(int(rank), {})
                acts[activity] = acts.get(activity, 0) + v
        return [{"rank": r, "span_ns": sum(per[r].values()), "activity_ns": per[r]} for r in sorted(per)]

    def _cell(self, state: str, activity: str) -> int:
        return exact_sums(self.table, ["state", "activity"], "duration_ns").get((state, activity), 0)

    def cause_ns(self) -> dict[str, int]:
        """Rolled-back ns per cause (the failure that threw the work away)."""
        if self.intervals is None:
            return {}
        iv = self.intervals
        rb = iv.filter(pa.compute.equal(iv["state"], "rolled_back"))
        if rb.num_rows == 0:
            return {}
        t = pa.table({"cause": rb["cause"].cast(pa.string()),
                      "ns": pa.compute.subtract(rb["end_ns"], rb["start_ns"])})
        return {cause: v for (cause,), v in exact_sums(t, ["cause"], "ns").items()}

    def cycles(self) -> pa.Table:
        """Preserved model cycles: spans between consecutive durable checkpoints on
        the lineage, with the steps they hold and the productive time of those steps.

        Cycle ``k`` holds the lineage steps in ``(checkpoint[k-1], checkpoint[k]]``
        (the first from the start of the lineage). With many jobs, each job's cycles
        under a first column ``job``, jobs in the order of the ledger's.
        """
        if self._att is not None and self._att.jobs is not None:
            return self._job_cycles()
        empty = pa.table({"cycle": pa.array([], pa.int64()), "from_step": pa.array([], pa.int64()),
                          "to_step": pa.array([], pa.int64()), "steps": pa.array([], pa.int64()),
                          "productive_ns": pa.array([], pa.int64())})
        if self._att is None or self._att.lineage_ckpt_steps.size == 0:
            return empty
        att = self._att
        prod = att.step_state == STATES.index("productive")
        rows = _cycle_rows(att.lineage_ckpt_steps, att.step_num[prod], att.step_end[prod] - att.step_start[prod])
        return pa.table({
            "cycle": pa.array([r[0] for r in rows], pa.int64()),
            "from_step": pa.array([r[1] for r in rows], pa.int64()),
            "to_step": pa.array([r[2] for r in rows], pa.int64()),
            "steps": pa.array([r[3] for r in rows], pa.int64()),
            "productive_ns": pa.array([r[4] for r in rows], pa.int64()),
        })

    def _job_cycles(self) -> pa.Table:
        """:meth:`cycles` per job: each job's lineage alone, side by side."""
        att = self._att
        jobs = att.jobs
        prod = att.step_state == STATES.index("productive")
        s_job, steps = att.step_job[prod], att.step_num[prod]
        dur = att.step_end[prod] - att.step_start[prod]
        codes, rows = [], []
        for j in np.unique(att.lineage_ckpt_jobs).tolist():
            mine = s_job == j
            got = _cycle_rows(att.lineage_ckpt_steps[att.lineage_ckpt_jobs == j], steps[mine], dur[mine])
            codes += [j] * len(got)
            rows += got
        return pa.table({
            "job": jobs.column(np.array(codes, np.int64)),
            "cycle": pa.array([r[0] for r in rows], pa.int64()),
            "from_step": pa.array([r[1] for r in rows], pa.int64()),
            "to_step": pa.array([r[2] for r in rows], pa.int64()),
            "steps": pa.array([r[3] for r in rows], pa.int64()),
            "productive_ns": pa.array([r[4] for r in rows], pa.int64()),
        })

    # -- headline figures ----------------------------------------------------

    def summary(self) -> LedgerSummary:
        """Headline figures as a dict (:class:`pau.core.LedgerSummary`) (ns and counts are exact ints).

        Keys: ranks, as_of, accountable_ns, accountable_accelerator_hours,
        productive_ns (step level: all time of lineage steps),
        productive_accelerator_hours, productive_strict_ns (productive × compute;
        None without events), goodput, goodput_strict, pending_ns, state_ns,
        badput_ns (accountable time that is neither productive nor pending),
        badput_by_cause_ns (rolled-back time per failure cause), failures,
        mtbf_s, preserved_steps, preserved_tokens, preserved_model_cycles,
        accountable_ns_per_preserved_step, accountable_ns_per_model_cycle,
        badput_accelerator_hours, accelerator_seconds_per_preserved_step,
        productive_accelerator_seconds_per_preserved_step, activity_ns.

        A lifecycle of many jobs (a ``job`` column) gives the jobs' figures side by side:
        every ns and count is the sum of the jobs' own (``ranks``, ``failures``,
        ``preserved_steps`` and ``preserved_model_cycles`` count per job), and every
        ratio a ratio of those sums. ``mtbf_s`` is not additive: it is the sum of the
        jobs' wall times (each from its first accountable instant to ``as_of``, or to
        its last accountable instant once it has ended) over the sum of their failures.

        This is the one place these figures are computed: ``pau report`` (every
        format), ``pau compare``, :func:`pau.core.compare` and ``Run.summary()``
        take them from here.
        """
        acc = self.accountable_ns()
        states = self.state_ns()
        prod = states["productive"]
        strict = self._cell("productive", "compute") if self.has_events else None
        att = self._att
        lifecycle = att is not None
        badput = acc - prod - states["pending"] if lifecycle else None
        nfail = len(att.failures_all) if att is not None else None
        steps = att.preserved_steps if att is not None else None
        cycles = _cycle_count(att) if att is not None else None
        return {
            "ranks": self.accountable.num_rows,
            "as_of": None if att is None else att.as_of,
            "accountable_ns": acc,
            "accountable_accelerator_hours": acc / NS_PER_HOUR,
            "productive_ns": prod,
            "productive_accelerator_hours": prod / NS_PER_HOUR,
            "productive_strict_ns": strict,
            "goodput": _ratio(prod, acc) if lifecycle else None,
            "goodput_strict": _ratio(strict, acc) if (lifecycle and strict is not None) else None,
            "pending_ns": states["pending"],
            "state_ns": states,
            "badput_ns": badput,
            "badput_by_cause_ns": self.cause_ns(),
            "activity_ns": self.activity_ns(),
            "failures": nfail,
            "mtbf_s": (att.wall_ns / nfail / 1e9) if att is not None and nfail else None,
            "preserved_steps": steps,
            "preserved_tokens": att.preserved_tokens if att is not None else None,
            "preserved_model_cycles": cycles,
            "accountable_ns_per_preserved_step": (acc // steps if acc % steps == 0 else acc / steps) if steps else None,
            "accountable_ns_per_model_cycle": (acc / cycles) if cycles else None,
            "badput_accelerator_hours": badput / NS_PER_HOUR if badput is not None else None,
            "accelerator_seconds_per_preserved_step": (acc / steps / 1e9) if steps else None,
            "productive_accelerator_seconds_per_preserved_step": (prod / steps / 1e9) if steps else None,
        }

    def summary_table(self) -> pa.Table:
        """:meth:`summary` as a table: ``metric, value`` (float64) and ``exact``
        (int64: the exact figure for ns and counts, null for ratios)."""
        rows = []
        for k, v in self.summary().items():
            if isinstance(v, dict):
                for kk, vv in v.items():
                    rows.append((f"{k}.{kk}", vv))
            else:
                rows.append((k, v))
        return pa.table({
            "metric": pa.array([r[0] for r in rows], pa.string()),
            "value": pa.array([None if r[1] is None else float(r[1]) for r in rows], pa.float64()),
            "exact": pa.array([r[1] if isinstance(r[1], int) and not isinstance(r[1], bool) else None
                               for r in rows], pa.int64()),
        })

    def __repr__(self) -> str:
        return f"Ledger(ranks={self.accountable.num_rows}, rows={self.table.num_rows})"

    def _repr_html_(self) -> str:
        """A notebook's view: the headline figures, time per state and per activity."""
        s = self.summary()
        acc = s["accountable_ns"]
        head = [["ranks", f"{s['ranks']:,}"], ["accountable accelerator time", duration(acc)]]
        if s["goodput"] is not None:
            head += [["goodput", f"{100 * s['goodput']:.1f} %"], ["failures", f"{s['failures']}"],
                     ["preserved steps", f"{s['preserved_steps']:,}"]]
        parts = ["<p><b>pau Ledger</b></p>", html_table(["figure", "value"], head, right=(1,))]
        states = [[k, duration(v), pct(v, acc).strip()] for k, v in s["state_ns"].items() if v]
        if s["goodput"] is not None and states:
            parts.append(html_table(["state", "accelerator time", "share"], states, right=(1, 2)))
        acts = [[k, duration(v), pct(v, acc).strip()] for k, v in s["activity_ns"].items() if v]
        if acts:
            parts.append(html_table(["activity", "accelerator time", "share"], acts, right=(1, 2)))
        return "\n".join(parts)


def _cycle_rows(ckpt_steps: np.ndarray, steps: np.ndarray, dur: np.ndarray) -> list[tuple[int, int | None, int, int, int]]:
    """Rows ``(cycle, from_step, to_step, steps, productive_ns)`` of one lineage's cycles."""
    marks = np.unique(ckpt_steps)
    lo = np.concatenate([[np.iinfo(np.int64).min], marks[:-1]])
    rows = []
    for k, (a, b) in enumerate(zip(lo, marks)):
        sel = (steps > a) & (steps <= b)
        rows.append((k, None if k == 0 else int(a), int(b), int(np.unique(steps[sel]).size), int(dur[sel].sum())))
    return rows


def _cycle_count(att: Any) -> int:
    """Preserved model cycles: the distinct durable checkpoints on the lineage, per job."""
    if att.lineage_ckpt_jobs is None:
        return int(np.unique(att.lineage_ckpt_steps).size)
    if att.lineage_ckpt_steps.size == 0:
        return 0
    return int(np.unique(np.stack([att.lineage_ckpt_jobs, att.lineage_ckpt_steps]), axis=1).shape[1])


_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def exact_sums(table: pa.Table, keys: list[str], column: str) -> dict[tuple[Any, ...], int]:
    """``{(key values): sum of column}`` as exact Python ints. Arrow sums int64 groups
    in int64 (wrapping past it: 8 accelerators x 2e18 ns); a group whose count times
    its largest magnitude could pass int64 is summed again in Python ints."""
    if table.num_rows == 0:
        return {}
    t = table.select(keys + [column])
    for k in keys:
        if pa.types.is_dictionary(t.schema.field(k).type):
            t = t.set_column(t.schema.get_field_index(k), k, t[k].cast(t.schema.field(k).type.value_type))
    g = t.group_by(keys).aggregate([(column, "sum"), (column, "min"), (column, "max"), (column, "count")])
    out: dict[tuple[Any, ...], int] = {}
    for r in g.to_pylist():
        key = tuple(r[k] for k in keys)
        bound = max(abs(r[f"{column}_min"] or 0), abs(r[f"{column}_max"] or 0)) * r[f"{column}_count"]
        if bound <= _I64_MAX:
            out[key] = int(r[f"{column}_sum"] or 0)
            continue
        mask = None
        for k, v in zip(keys, key):
            m = pa.compute.is_null(t[k]) if v is None else pa.compute.equal(t[k], v)
            mask = m if mask is None else pa.compute.and_(mask, m)
        out[key] = sum(v for v in t.filter(mask)[column].to_pylist() if v is not None)
    return out


def tidy(rank: Any, state: Any, activity: Any, duration: Any, window: Any = None) -> pa.Table:
    """Aggregate (rank, [window,] state, activity) -> duration, non-zero rows only,
    sorted; exact int64 sums."""
    rank = np.asarray(rank, np.int64)
    state = np.asarray(state, np.int64)
    activity = np.asarray(activity, np.int64)
    duration = np.asarray(duration, np.int64)
    n_act = len(ACTIVITIES) + 1
    if window is None:
        # Dense cells: (rank, state, activity) has few values per rank.
        if rank.size and 0 <= rank.min() and rank.max() < 1 << 20:  # small ids: no sort
            present = np.bincount(rank) > 0
            ranks = np.flatnonzero(present)
            rdense = (np.cumsum(present) - 1)[rank]
        else:
            ranks, rdense = np.unique(rank, return_inverse=True)
        cells = np.zeros(ranks.size * len(STATES) * n_act, np.int64)
        np.add.at(cells, (rdense * len(STATES) + state) * n_act + activity, duration)
        idx = np.flatnonzero(cells)
        uniq = [ranks[idx // (len(STATES) * n_act)], (idx // n_act) % len(STATES), idx % n_act]
        sums = cells[idx]
    else:
        cols = [rank, np.asarray(window, np.int64), state, activity]
        if rank.size == 0:
            uniq, sums = [c[:0] for c in cols], duration[:0]
        else:
            order = np.lexsort(cols[::-1])
            sc = [c[order] for c in cols]
            new = np.ones(rank.size, bool)
            new[1:] = np.any([c[1:] != c[:-1] for c in sc], axis=0)
            idx = np.cumsum(new) - 1
            sums = np.zeros(int(idx[-1]) + 1, np.int64)
            np.add.at(sums, idx, duration[order])
            uniq = [c[new] for c in sc]
    return _table(uniq[0], None if window is None else uniq[1], uniq[-2], uniq[-1], sums)


def cells_table(cells: _core.Cells, rows: int, quarantined: int) -> pa.Table:
    """The tidy table of the ledger's non-zero cells (``pau._core.Cells``: rank, state,
    activity, duration) as the native core gives them (``CellCrossing::tidy``, in (rank,
    state, activity) order), as :func:`tidy` gives it, with the row counts of
    ``counts_metadata`` in its metadata."""
    rank, state, activity, duration = cells.rank, cells.state, cells.activity, cells.duration
    return pa.Table.from_arrays(
        [pa.array(rank), pa.DictionaryArray.from_arrays(pa.array(state), names(STATES), safe=False),
         pa.DictionaryArray.from_arrays(pa.array(activity), names(ACTIVITIES + (_UNKNOWN,)), safe=False),
         pa.array(duration)],
        schema=_CELL_SCHEMA.with_metadata(counts_metadata(rows, quarantined)))


_CELL_SCHEMA = pa.schema([("rank", pa.int32()), ("state", pa.dictionary(pa.int8(), pa.string())),
                          ("activity", pa.dictionary(pa.int8(), pa.string())), ("duration_ns", pa.int64())])


def _table(rank: Any, window: Any, state: Any, activity: Any, sums: np.ndarray) -> pa.Table:
    keep = sums != 0
    uniq = [rank] + ([] if window is None else [window]) + [state, activity]
    # numpy arrays of the final types convert without a cast or a check
    out = {"rank": pa.array(uniq[0][keep].astype(np.int32))}
    if window is not None:
        out["window"] = pa.array(uniq[1][keep].astype(np.int64))
    out["state"] = label(STATES, uniq[-2][keep])
    out["activity"] = label(ACTIVITIES + (_UNKNOWN,), uniq[-1][keep])
    out["duration_ns"] = pa.array(sums[keep])
    return pa.table(out)


UNKNOWN_ACTIVITY = len(ACTIVITIES)
