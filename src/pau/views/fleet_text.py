"""``pau fleet``'s text and JSON (``docs/fleet.md``, "pau fleet"): a fleet rollup as
tables of plain text (:mod:`pau.views.console`), and the figures its ``--format json``
prints and its ``--gate`` checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Dict, List, Optional, TypedDict, Union

from pau.engine._format import duration, pct
from pau.engine.vocab import STATES
from pau.fleet.rollup import Rollup, RollupFigures
from pau.views import console as _console

__all__ = ["FleetFigures", "PeriodFigures", "RowValue", "figures", "render"]

#: A value in a row of a rollup's table: its columns are strings, int64 and float64 (None where null).
RowValue = Optional[Union[str, int, float]]


class PeriodFigures(RollupFigures):
    """``last_period`` of :class:`FleetFigures`: the period's start (ns), then the
    figures of every group together in it (:meth:`pau.fleet.rollup.Rollup.overall`)."""

    period_start_ns: int


class FleetFigures(TypedDict):
    """What :func:`figures` returns (``pau fleet --format json``, ``docs/fleet.md``):
    the rollup's settings, its figures over the selection (``total``) and over its last
    period, and its table's rows (one per group and period, by column name)."""

    by: List[str]
    every: str
    since_ns: Optional[int]
    until_ns: Optional[int]
    allocated_from: str
    warnings: List[str]
    total: RollupFigures
    last_period: Optional[PeriodFigures]  # None: no row
    currency: Optional[str]
    cost_basis: Dict[str, str]
    rows: List[Dict[str, RowValue]]


def figures(r: Rollup) -> FleetFigures:
    """What ``pau fleet --format json`` prints and ``--gate`` checks: the selection's
    ``total`` and ``last_period`` (every group together), then one row per group and period."""
    starts = r.table["period_start_ns"].to_pylist()
    last = max(starts) if starts else None
    return {"by": r.by, "every": r.every.text, "since_ns": r.since, "until_ns": r.until,
            "allocated_from": r.allocated_from, "warnings": r.warnings,
            "total": r.overall(),
            "last_period": None if last is None else {"period_start_ns": last, **r.overall(last)},
            "currency": r.currency, "cost_basis": r.cost_basis, "rows": r.table.to_pylist()}


def _h(ns: int | None) -> str:
    return "-" if ns is None else f"{ns / 3.6e12:,.1f}"


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _secs(v: float | None) -> str:
    return "-" if v is None else duration(v * 1e9)


def _kwh(j: float | None) -> str:
    return "-" if j is None else f"{j / 3.6e6:,.1f}"


def render(r: Rollup) -> str:
    """``pau fleet``'s text: a table per group and period, then the selection's badput by
    cause and its cost basis."""
    t = r.table.to_pylist()
    costs = "cost" in r.table.column_names
    energy = any(x["energy_j"] is not None for x in t)  # a column only when some run has power samples
    head = [*r.by, "period", "allocated h", "accountable h", "productive h", "rolled back h", "goodput",
            "failures", "recover (mean)", "queue (mean)", *(["energy kWh"] if energy else []),
            *(["cost"] if costs else [])]
    rows = []
    for x in t:
        rows.append([*("-" if x[k] is None else str(x[k]) for k in r.by), x["period"], _h(x["allocated_ns"]),
                     _h(x["accountable_ns"]), _h(x["productive_ns"]), _h(x["rolled_back_ns"]), _ratio(x["goodput"]),
                     str(x["failures"]), _secs(x["time_to_recover_mean_s"]), _secs(x["queue_mean_s"]),
                     *([_kwh(x["energy_j"])] if energy else []), *([f"{x['cost']:,.2f}"] if costs else [])])
    o = r.overall()
    total = [["total", *[""] * len(r.by), _h(o["allocated_ns"]), _h(o["accountable_ns"]), _h(o["productive_ns"]),
              _h(o["rolled_back_ns"]), _ratio(o["goodput"]), str(o["failures"]), "", _secs(o["queue_mean_s"]),
              *([_kwh(o["energy_j"])] if energy else []), *([f"{o['cost']:,.2f}"] if costs else [])]]
    just = "l" * (len(r.by) + 1) + "r" * (len(head) - len(r.by) - 1)
    by = ", ".join(r.by) or "the whole fleet"
    items: list[Any] = [f"pau fleet: accelerator-hours by {by}, every {r.every.text} (UTC; allocated from "
                        f"{'the jobs table' if r.allocated_from == 'jobs' else 'the runs (no jobs table)'})", "",
                        _console.table(head, rows, justify=just, total=total), ""]
    acc = o["accountable_ns"]
    by_name: Mapping[str, Any] = o  # the state columns, named from STATES (not literal keys)
    causes = [(s, by_name[s.replace(".", "_") + "_ns"]) for s in STATES if s != "productive"]
    items += ["badput by cause (accountable accelerator-hours)",
              _console.table(["state", "hours", "of accountable"],
                             [[s, _h(v), pct(v, acc)] for s, v in sorted(causes, key=lambda c: -c[1]) if v])]
    if costs:
        items += ["", f"cost in {r.currency}: productive {o['cost_productive']:,.2f}, rolled back "
                      f"{o['cost_rolled_back']:,.2f}, recovery {o['cost_recovery']:,.2f}, idle {o['cost_idle']:,.2f}, "
                      f"overhead {o['cost_overhead']:,.2f}, allocated but not accounted {o['cost_unaccounted']:,.2f}"]
        items += [f"  {k}: {v}" for k, v in r.cost_basis.items()]
        bases = sorted({b for b in r.table["energy_cost_basis"].to_pylist() if b})
        if bases:  # the energy's own cost, beside the rate's (measured where runs measured it)
            value = "not priced" if o["energy_cost"] is None else f"{o['energy_cost']:,.2f}"
            items += [f"energy cost in {r.currency}: {value} ({'; '.join(bases)})"]
    if o["mfu"] is not None:
        items += ["", f"MFU (model FLOPs over peak, productive time; runs that know their FLOPs): {_ratio(o['mfu'])}"]
    return _console.render(*items)
