"""``pau fleet --format html``: one self-contained page of a fleet rollup (``docs/fleet.md``,
"pau fleet"): goodput and productive accelerator-hours per group over the periods with
the change points PELT finds marked, badput by cause over time, and the cost split when a
cost model was given. Plots are inline SVG (matplotlib, ``pau[report]``); the page loads
nothing and runs no script; its figures are in a JSON block as in ``pau report``'s page.
"""

from __future__ import annotations

import datetime as _dt
import html
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from pau.engine._format import html_table
from pau.engine.vocab import STATES
from pau.fleet.rollup import NS_PER_HOUR, Rollup, changes
from pau.views import html as _html
from pau.views import plots

__all__ = ["MAX_GROUPS", "render"]

#: Groups drawn at most in one plot (the largest by allocated accelerator-hours).
MAX_GROUPS = 12
_COST_PARTS = ("cost_productive", "cost_rolled_back", "cost_recovery", "cost_idle", "cost_overhead",
               "cost_unaccounted")
_STATE_COLORS = {
    "rolled_back": "#d62728", "recovery.outage": "#8c564b", "recovery.reinit": "#c49c94",
    "recovery.restore": "#e377c2", "checkpoint": "#1f77b4", "checkpoint.lost": "#aec7e8",
    "checkpoint.unused": "#9edae5", "initialization": "#ff7f0e", "pending": "#ffbb78", "eval": "#2ca02c",
    "data_wait": "#bcbd22", "custom": "#9467bd", "unattributed": "#7f7f7f",
}


def _when(ns: int) -> _dt.datetime:
    return _dt.datetime(1970, 1, 1) + _dt.timedelta(microseconds=ns // 1000)


def _group_name(by: Sequence[str], key: tuple[Any, ...]) -> str:
    return ", ".join("-" if v is None else str(v) for v in key) if by else "fleet"


def _series(r: Rollup) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """The rows of each group in period order, the largest groups (allocated) first."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in r.table.to_pylist():
        groups.setdefault(tuple(row[k] for k in r.by), []).append(row)
    for rows in groups.values():
        rows.sort(key=lambda x: x["period_start_ns"])
    return dict(sorted(groups.items(), key=lambda kv: -sum(x["allocated_ns"] for x in kv[1])))


def trend(r: Rollup, metric: str, label: str, change_points: pa.Table | None = None) -> Any:
    """``metric`` per group over the periods (a line each; at most :data:`MAX_GROUPS`),
    each change point a marker on its group's line at the first period of the new level."""
    groups = _series(r)
    shown = list(groups)[:MAX_GROUPS]
    marks: dict[tuple[Any, ...], list[int]] = {}
    if change_points is not None:
        for row in change_points.to_pylist():
            marks.setdefault(tuple(row[k] for k in r.by), []).append(row["period"])
    with plots._style() as figure:
        fig = figure(figsize=(9, 3.2))
        ax = fig.add_subplot()
        for key in shown:
            rows = [x for x in groups[key] if x[metric] is not None]
            if not rows:  # a group without the figure: no line, no legend entry
                continue
            xs = [_when(x["period_start_ns"]) for x in rows]
            ys = [x[metric] for x in rows]
            (line,) = ax.plot(xs, ys, marker=".", label=_group_name(r.by, key))
            at = set(marks.get(key, []))
            cx = [_when(x["period_start_ns"]) for x in rows if x["period_start_ns"] in at]
            cy = [x[metric] for x in rows if x["period_start_ns"] in at]
            if cx:
                ax.plot(cx, cy, linestyle="none", marker="v", markersize=9, color=line.get_color(),
                        markeredgecolor="black", gid="change-point")
        more = "" if len(groups) <= len(shown) else f" ({len(shown)} largest of {len(groups)} groups)"
        marked = "" if change_points is None else "; ▼ change point (PELT)"
        ax.set_title(f"{label} per {r.every.text}{more}{marked}")
        ax.set_ylabel(label)
        if shown:
            ax.legend(fontsize=7, loc="best")
        fig.autofmt_xdate()
    return fig


def stacked(r: Rollup, parts: Mapping[str, str], colors: Mapping[str, str], title: str, unit: str,
            scale: float) -> Any:
    """Every group together per period: a bar per period stacked by ``parts`` (column ->
    legend name), each divided by ``scale``."""
    per: dict[int, dict[str, float]] = {}
    for row in r.table.to_pylist():
        acc = per.setdefault(row["period_start_ns"], {})
        for col in parts:
            acc[col] = acc.get(col, 0.0) + (row[col] or 0) / scale
    starts = sorted(per)
    with plots._style() as figure:
        fig = figure(figsize=(9, 3.2))
        ax = fig.add_subplot()
        xs = list(range(len(starts)))
        bottom = [0.0] * len(starts)
        for col, name in parts.items():
            ys = [per[s][col] for s in starts]
            if not any(ys):
                continue
            ax.bar(xs, ys, bottom=bottom, color=colors.get(col), label=name, gid=f"part-{col}")
            bottom = [b + y for b, y in zip(bottom, ys)]
        names = [_when(s).strftime("%Y-%m-%d %H:%M" if r.every.unit == "h" else "%Y-%m-%d") for s in starts]
        step = max(1, len(xs) // 12)
        ax.set_xticks(xs[::step], names[::step], rotation=30, ha="right")
        ax.set_title(title)
        ax.set_ylabel(unit)
        ax.legend(fontsize=7, loc="best")
    return fig


def _energy_cards(r: Rollup, o: Mapping[str, Any]) -> list[str]:
    """The energy the runs measured, per preserved step, and its cost (with a cost
    model); none when no run measured energy (never 0 kWh for unknown)."""
    if o["energy_j"] is None:
        return []
    cards = [_html._card("measured energy (kWh)", f"{o['energy_j'] / 3.6e6:,.2f}")]
    if o["energy_per_preserved_step_j"] is not None:
        cards.append(_html._card("energy per preserved step (J)", f"{o['energy_per_preserved_step_j']:,.0f}"))
    if o.get("energy_cost") is not None:
        cards.append(_html._card(f"energy cost ({r.currency})", f"{o['energy_cost']:,.2f}"))
    return cards


def _energy_section(r: Rollup) -> list[str]:
    """Measured energy per period (every group, counted at each run's end) and the
    energy per preserved step of each group, when some run measured energy."""
    if r.table["energy_j"].null_count == r.table.num_rows:
        return []
    out = ["<h2>Energy</h2>",
           _html._plot(lambda: stacked(r, {"energy_j": "measured energy"}, {"energy_j": "#ff7f0e"},
                                       f"measured energy per {r.every.text} (every group; each run's in the period "
                                       "it ended)", "kWh", 3.6e6), "energy")]
    if r.table["energy_per_preserved_step_j"].null_count < r.table.num_rows:
        out.append(_html._plot(lambda: trend(r, "energy_per_preserved_step_j", "energy per preserved step (J)"),
                               "energy-per-step"))
    return out


def render(r: Rollup, *, title: str) -> str:
    """The page (a str of HTML)."""
    o = r.overall()
    goodput_changes = changes(r, "goodput") if r.table.num_rows else None
    productive_changes = changes(r, "productive_h") if r.table.num_rows else None
    cards = [
        _html._card("allocated accelerator-hours", f"{o['allocated_h']:,.1f}"),
        _html._card("productive accelerator-hours", f"{o['productive_h']:,.1f}"),
        _html._card("goodput (productive / accountable)", "-" if o["goodput"] is None else f"{100 * o['goodput']:.1f}%"),
        _html._card("failures", f"{o['failures']:,}"),
    ]
    if "cost" in o:
        cards.append(_html._card(f"cost ({r.currency})", f"{o['cost']:,.2f}"))
    if o["mfu"] is not None:  # over productive time, of the runs that know their FLOPs (docs/fleet.md)
        cards.append(_html._card("MFU (model FLOPs / peak, productive time)", f"{100 * o['mfu']:.1f}%"))
    cards += _energy_cards(r, o)
    body = [f'<div class="cards">{"".join(cards)}</div>']
    for w in r.warnings:
        body.append(f'<p class="warn">{html.escape(w)}</p>')
    body.append("<h2>Trends</h2>")
    if r.table.num_rows:
        body.append(_html._plot(lambda: trend(r, "goodput", "goodput", goodput_changes), "goodput-trend"))
        body.append(_html._plot(lambda: trend(r, "productive_h", "productive accelerator-hours", productive_changes),
                                "productive-trend"))
        badput = {s.replace(".", "_") + "_ns": s for s in STATES if s != "productive"}
        colors = {s.replace(".", "_") + "_ns": c for s, c in _STATE_COLORS.items()}
        body.append("<h2>Badput by cause</h2>")
        body.append(_html._plot(lambda: stacked(r, badput, colors, f"badput by cause per {r.every.text} "
                                                "(every group)", "accelerator-hours", NS_PER_HOUR),
                                "badput-by-cause"))
        if "cost" in r.table.column_names:
            names = {c: c[len("cost_"):].replace("_", " ") for c in _COST_PARTS}
            cc = dict(zip(_COST_PARTS, ("#2ca02c", "#d62728", "#8c564b", "#7f7f7f", "#1f77b4", "#c7c7c7")))
            body.append("<h2>Cost split</h2>")
            body.append(_html._plot(lambda: stacked(r, names, cc, f"what the cost paid for per {r.every.text}",
                                                    r.currency or "", 1.0), "cost-split"))
            body.append(html_table(["rate", "basis"], [[k, v] for k, v in r.cost_basis.items()]))
        body += _energy_section(r)
    rows = []
    for ch in (goodput_changes.to_pylist() if goodput_changes is not None else []):
        rows.append([_group_name(r.by, tuple(ch[k] for k in r.by)), _when(ch["period"]).strftime("%Y-%m-%d %H:%M"),
                     f"{100 * ch['level_before']:.1f}%", f"{100 * ch['level_after']:.1f}%",
                     "-" if ch["accelerator_hours"] is None else f"{ch['accelerator_hours']:+,.1f}"])
    body.append("<h2>Goodput change points</h2>")
    body.append(html_table(["group", "from", "before", "after", "accelerator-hours won (+) or lost (-)"], rows,
                           right=(2, 3, 4)) if rows else '<p class="note">none found</p>')
    head = [*r.by, "period", "allocated h", "productive h", "goodput", "failures"]
    table_rows = [[*("-" if x[k] is None else str(x[k]) for k in r.by), x["period"], f"{x['allocated_h']:,.1f}",
                   f"{x['productive_h']:,.1f}", "-" if x["goodput"] is None else f"{100 * x['goodput']:.1f}%",
                   str(x["failures"])] for x in r.table.to_pylist()]
    if o["energy_j"] is not None:  # energy beside cost, where some run measured it
        extra = [("energy kWh", "energy_j", 3.6e6, ",.2f"), ("J per preserved step", "energy_per_preserved_step_j",
                                                              1.0, ",.0f")]
        if "energy_cost" in r.table.column_names:
            extra.append((f"energy cost ({r.currency})", "energy_cost", 1.0, ",.2f"))
        head += [name for name, *_ in extra]
        for row, x in zip(table_rows, r.table.to_pylist()):
            row += ["-" if x[c] is None else format(x[c] / scale, f) for _, c, scale, f in extra]
    body.append("<h2>Per group and period</h2>")
    body.append(html_table(head, table_rows, right=range(len(r.by) + 1, len(head))))
    subtitle = (f"by {', '.join(r.by) or 'the whole fleet'}, every {r.every.text} (UTC); allocated from "
                f"{'the jobs table' if r.allocated_from == 'jobs' else 'the runs (no jobs table)'}")
    figures = {"by": r.by, "every": r.every.text, "total": o, "rows": r.table.to_pylist()}
    return _html._page(title, subtitle, body, figures)
