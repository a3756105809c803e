"""The text and CSV views of a run's figures and of a comparison: what ``pau report``
and ``pau compare`` print with ``--format text`` and ``--format csv`` (the JSON is the
figures themselves, :func:`to_json`).

Every function takes figures already computed (``pau.run.run_figures`` and the report's
additions, :meth:`pau.core.Comparison.summary`) and computes none: the command line
(``pau.cli``) parses, calls the API and writes what these return. Durations follow
``pau.engine._format``: one unit per table column (:func:`pau.engine._format.column_unit`).
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from pau.engine._format import duration, pct, unit
from pau.figures.compare import Comparison
from pau.readers import mlperf_rules as _mlperf
from pau.run import Run
from pau.engine.types import RunSummary
from pau.views import console as _console

__all__ = ["Dur", "metric_row", "column_unit", "count", "in_column", "unit_columns", "flatten", "render", "render_activity", "render_compare", "render_compare_csv", "render_cost", "render_csv",
           "render_goodput", "render_idle", "render_layers", "render_nvtx", "render_recovery", "render_requests",
           "render_runs", "render_steps", "render_telemetry", "render_top_kernels", "to_json"]


# Columns of the report: (heading, activity). Every activity that occurs gets its
# column (memset and sync as themselves); compute and idle always.
_COLUMNS = (
    ("compute", "compute"),
    ("exposed comm", "communication"),
    ("memcpy", "memcpy"),
    ("memset", "memset"),
    ("sync", "sync"),
    ("other", "other"),
    ("idle", "idle"),
)


_ALWAYS = ("compute", "idle")



#: The cost figures per useful output, as the text and HTML reports name them.
COST_PER = (("cost_per_productive_accelerator_hour", "per productive accelerator-hour"),
            ("cost_per_preserved_step", "per preserved step"),
            ("cost_per_preserved_model_cycle", "per preserved model cycle"),
            ("cost_per_million_preserved_tokens", "per million preserved tokens"),
            ("cost_per_accepted_request", "per accepted request"),
            ("cost_per_million_accepted_tokens", "per million accepted tokens"),
            ("cost_per_million_accepted_output_tokens", "per million accepted output tokens"))

def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and its noun, singular for one: ``1 failure``, ``2 failures``, ``1,024 ranks``."""
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


class Dur(NamedTuple):
    """A duration cell of a table, formatted by :func:`unit_columns` in its column's
    unit; ``after`` follows it (a share)."""
    ns: int | float | None
    after: str = ""


def in_column(ns: int | float, u: tuple[str, int]) -> str:
    """``ns`` in the column's unit ``u`` (never another): three decimals, more for a
    non-zero value that three would show as 0.000 (enough for three significant digits,
    at most twelve): 0.000327 s, not 0.000 s nor 327.000 µs above 0.005 s."""
    name, size = u
    if size == 1:
        return f"{ns:,} ns" if isinstance(ns, int) else f"{ns:,.0f} ns"
    x = ns / size
    d = 3
    while x and d < 12 and abs(x) < 10.0 ** (2 - d):
        d += 1
    return f"{x:,.{d}f} {name}"


def column_unit(values: Sequence[int | float | None]) -> tuple[str, int]:
    """The unit of a column of durations: the one its largest magnitude fits
    (``pau.engine._format.unit``), so that every row of the column is in it."""
    return unit(max((abs(v) for v in values if v is not None), default=0))


def unit_columns(*blocks: Sequence[Sequence[Any]]) -> list[list[list[Any]]]:
    """Rows of cells (several blocks: the rows, the totals) with every :class:`Dur`
    cell written in one unit per column, the unit of :func:`column_unit` over that
    column in every block; other cells are kept as they are."""
    units: dict[int, tuple[str, int]] = {}
    width = max((len(r) for b in blocks for r in b), default=0)
    for i in range(width):
        vals = [r[i].ns for b in blocks for r in b if i < len(r) and isinstance(r[i], Dur)]
        if vals:
            units[i] = column_unit(vals)
    return [[[("-" if c.ns is None else in_column(c.ns, units[i])) + c.after if isinstance(c, Dur) else c
              for i, c in enumerate(r)] for r in b] for b in blocks]


def _hours(ns: int) -> str:
    """Accelerator time, in the unit that fits it."""
    return duration(ns)


def render_activity(per_rank: list[Any], title: str) -> str:
    """The per-rank activity table of a ledger (:meth:`Ledger.rank_activity`), as text."""
    per: dict[int, dict[str, int]] = {r["rank"]: r["activity_ns"] for r in per_rank}
    uniq = np.asarray(sorted(per), np.int64)
    columns = [(h, a) for h, a in _COLUMNS if a in _ALWAYS or any(per[r].get(a, 0) for r in per)]
    head = ["rank"] + [h for h, _ in columns] + ["span"]
    rows: list[list[Any]] = []
    totals = [0] * len(columns)
    for r in uniq.tolist():
        span = sum(per[r].values())
        vals = [per[r].get(a, 0) for _, a in columns]
        totals = [t + v for t, v in zip(totals, vals)]
        rows.append([str(r)] + [Dur(v, " " + pct(v, span)) for v in vals] + [Dur(span)])
    whole = sum(totals)
    rows, [total] = unit_columns(rows, [["total"] + [Dur(v, " " + pct(v, whole)) for v in totals] + [Dur(whole)]])
    return _console.render(
        title, "", _console.table(head, rows, justify="r" * len(head), total=[total]), "",
        f"accountable: {len(uniq)} rank{'' if len(uniq) == 1 else 's'}, {duration(whole)} of accelerator time; "
        "exposed communication is communication not hidden under compute")


def render_goodput(s: dict[str, Any]) -> str:
    """The goodput section of a ledger summary: time per state, waste by cause, headline figures."""
    acc = s["accountable_ns"]
    items: list[Any] = ["", f"goodput {100 * s['goodput']:.1f} % of {_hours(acc)} accountable accelerator time"
                        + (f" (strict, productive x compute: {100 * s['goodput_strict']:.1f} %)"
                           if s["goodput_strict"] is not None else ""), ""]
    [cells] = unit_columns([[state, Dur(ns), pct(ns, acc)] for state, ns in s["state_ns"].items() if ns])
    items.append(_console.table(["state", "time", "share"], cells))
    if s["badput_by_cause_ns"]:
        items += ["", "rolled-back work by cause:", ""]
        [cells] = unit_columns([[cause, Dur(ns), pct(ns, acc)]
                                for cause, ns in sorted(s["badput_by_cause_ns"].items(), key=lambda kv: -kv[1])])
        items.append(_console.table(["cause", "time", "share"], cells))
    items.append("")
    mtbf = f", MTBF {s['mtbf_s']:,.0f} s" if s["mtbf_s"] else ""
    per_step = s["accountable_ns_per_preserved_step"]
    items.append(f"failures {s['failures']}{mtbf}; preserved steps {s['preserved_steps']:,}, "
                 f"model cycles {s['preserved_model_cycles']}; "
                 + (f"{per_step / 1e9:,.2f} accelerator-s per preserved step" if per_step else
                    "no preserved step"))
    return _console.render(*items)


def render_cost(c: dict[str, Any], price: float) -> str:
    """Cost (and energy) per useful output at a price per accelerator-hour: per preserved
    step of a lifecycle, or per accepted request of a serving benchmark."""
    waste = c.get("waste_cost")
    lines = ["", f"cost at {money(price)} per accelerator-hour: total {money(c['total_cost'])}"
             + ("" if waste is None else f", of which waste {money(waste)}")
             + ("" if c.get("billed_ns") is None else f" ({duration(c['billed_ns'])} of accelerator time billed)")]
    for key, label in COST_PER:
        if c.get(key) is not None:
            lines.append(f"  {money(c[key])} {label}")
    if c.get("waste_cost_by_cause"):
        lines.append("  waste by cause: " + ", ".join(
            f"{k} {money(v)}" for k, v in sorted(c["waste_cost_by_cause"].items(), key=lambda kv: -kv[1])))
    energy = [(k, c[k]) for k in sorted(c) if k.startswith("energy") and isinstance(c[k], (int, float))]
    for key, v in energy:
        lines.append(f"  {key.removesuffix('_j').replace('_', ' ')}: {v:,.4g} J ({v / 3.6e6:,.4g} kWh)")
    return "\n".join(lines)


def render_requests(s: dict[str, Any], slo: dict[str, int]) -> str:
    """The request section: outcomes, SLO attainment (against the SLOs given), request goodput."""
    att = s["slo_attainment"]
    slos = (", ".join(f"{k} <= {duration(v)}" for k, v in slo.items()) if slo
            else "no SLO given (--slo): every completed request is accepted")
    rate = s["request_goodput_per_s"]
    lines = ["", f"requests: {s['offered']:,} offered; accepted {s['accepted']:,}, late {s['late']:,}, "
             f"failed {s['failed']:,}, rejected {s['rejected']:,}, cancelled {s['cancelled']:,}"
             + (f", quarantined {s['quarantined']:,}" if s["quarantined"] else ""),
             "SLO attainment " + ("-" if att is None else f"{100 * att:.1f} %")
             + "; request goodput " + ("-" if rate is None else f"{rate:,.3f} accepted/s")
             + f" over {duration(s['window_ns'])}; accepted tokens {s['accepted_tokens']:,}",
             f"SLOs: {slos}"]
    lat = render_latency(s.get("latency"))
    return "\n".join(lines) + ("\n" + lat if lat else "")


#: The latency table's statistics, in the order AIPerf and LLMPerf print them.
LATENCY_STATS = ("mean", "min", "p1", "p5", "p25", "p50", "p75", "p90", "p95", "p99", "max", "std")
_LATENCY_NAMES = {"ttft": "time to first token", "tpot": "time per output token", "e2e": "request latency"}


def latency_unit(row: dict[str, Any]) -> tuple[str, int]:
    """The unit of one latency row: the one its largest statistic fits (AIPerf prints
    each metric in one unit, e.g. ``Time to First Token (ms)``)."""
    return column_unit([row[k] for k in LATENCY_STATS if row.get(k) is not None])


def render_latency(lat: dict[str, Any] | None) -> str:
    """TTFT, TPOT and E2E of the completed requests (``RequestLedger.latency``): one row
    each, its unit in the metric's name and bare numbers, as AIPerf prints them."""
    if not lat or not any(r["count"] for r in lat.values()):
        return ""
    cells = []
    for key, row in lat.items():
        if not row["count"]:
            cells.append([f"{_LATENCY_NAMES.get(key, key)} ({key})", "0"] + ["-"] * len(LATENCY_STATS))
            continue
        name, size = latency_unit(row)
        cells.append([f"{_LATENCY_NAMES.get(key, key)} ({key}, {name})", f"{row['count']:,}"]
                     + ["-" if row[k] is None else f"{row[k] / size:,.3f}" for k in LATENCY_STATS])
    return _console.render("", "latency of the completed requests (linear percentiles, population std: as AIPerf "
                           "and LLMPerf compute them)", "",
                           _console.table(["metric", "count", *LATENCY_STATS], cells))


def _name(name: str) -> str:
    return name if len(name) <= 70 else name[:67] + "..."


def render_top_kernels(rows: list[Any]) -> str:
    """The device work that took the most time (``nsys stats``' kernel summary)."""
    if not rows:
        return ""
    head = ["time (%)", "total", "count", "mean", "kind", "name"]
    [cells] = unit_columns([[f"{100 * r['share']:.1f}", Dur(r["total_ns"]), f"{r['count']:,}", Dur(r["mean_ns"]),
                             r["kind"], _name(r["name"])] for r in rows])
    return _console.render("", f"top device work ({len(rows)} by total time; time (%) of all device event time)", "",
                           _console.table(head, cells, justify="rrrrll"))


def render_nvtx(rows: list[Any] | None) -> str:
    """NVTX ranges by name (``nsys stats``' NVTX range summary)."""
    if not rows:
        return ""
    head = ["time (%)", "total", "instances", "mean", "min", "max", "range"]
    [cells] = unit_columns([[f"{100 * r['share']:.1f}" if r["share"] is not None else "-", Dur(r["total_ns"]),
                             f"{r['count']:,}", Dur(r["mean_ns"]), Dur(r["min_ns"]), Dur(r["max_ns"]), _name(r["name"])]
                            for r in rows])
    opened = rows[0]["open"]
    return _console.render("", f"NVTX ranges ({len(rows)} by total time; time (%) of all closed ranges' time"
                           + (f"; {opened:,} still open, left out" if opened else "") + ")", "",
                           _console.table(head, cells, justify="rrrrrrl"))


def render_steps(steps: dict[str, Any] | None) -> str:
    """Step time per rank (median, p90, max) and the stragglers, named."""
    if not steps:
        return ""
    [cells] = unit_columns([[str(r["rank"]), f"{r['steps']:,}", Dur(r["median_ns"]), Dur(r["p90_ns"]), Dur(r["max_ns"])]
                            for r in steps["per_rank"]])
    s = steps["stragglers"]
    named = ", ".join(f"rank {p['rank']} (the others waited {duration(p['charged_ns'])} of accelerator time "
                      "for it)" for p in s["persistent"])
    return _console.render("", "steps per rank (finished step executions; nearest-rank percentiles)", "",
                           _console.table(["rank", "steps", "median", "p90", "max"], cells, justify="rrrrr"), "",
                           f"stragglers: {named or 'none persistent'}; all waits for the slowest rank of each step: "
                           f"{duration(s['wait_ns'])} of accelerator time")


def render_idle(idle: dict[str, Any] | None) -> str:
    """Idle split by cause per rank (docs/idle.md); nothing when no idle has a cause
    (then every idle ns is idle.other, which the activity table shows as idle)."""
    if not idle or not any(v for k, v in idle["ns"].items() if k != "idle.other"):
        return ""
    causes = list(idle["ns"])
    rows = [[str(r["rank"])] + [r["ns"].get(c, 0) for c in causes] for r in idle["per_rank"]]
    head = ["rank"] + causes + ["idle"]
    total = [idle["ns"][c] for c in causes]
    cells, [foot] = unit_columns(
        [[x[0]] + [Dur(v, " " + pct(v, sum(x[1:])).strip()) for v in x[1:]] + [Dur(sum(x[1:]))] for x in rows],
        [["total"] + [Dur(v, " " + pct(v, sum(total)).strip()) for v in total] + [Dur(sum(total))]])
    return _console.render("", "idle by cause (host_wait: the stream drained before the next launch; data_wait: a "
                           "data loader ran; sync_wait: the host was in a synchronize call)", "",
                           _console.table(head, cells, justify="r" * len(head), total=[foot]))


def render_layers(lay: dict[str, Any] | None, mfu: float | None = None) -> str:
    """The stack from accountable time down (pau.figures.layers): each layer, its factor and
    what the step to it lost (the four largest causes). With ``mfu`` (the report's
    ``program_goodput.mfu``) the product is named: program goodput, MFU x goodput."""
    if not lay or not lay["layers"]:
        return ""
    rows = lay["layers"]
    u = unit(max(r["ns"] for r in rows))
    priced = any("cost" in r for r in rows)
    cells = []
    for r in rows:
        lost = sorted(r["lost_ns"].items(), key=lambda kv: -kv[1])
        shown = ", ".join(f"{k} {in_column(v, u)}" for k, v in lost[:4]) + (f", {len(lost) - 4} more" if len(lost) > 4
                                                                           else "")
        cells.append([r["name"], in_column(r["ns"], u)] + ([f"${r['cost']:,.2f}" if "cost" in r else ""] if priced else [])
                     + ["" if r["factor"] is None else f"x {r['factor']:.3f}", shown])
    head = ["layer", "time"] + (["cost"] if priced else []) + ["factor", "lost"]
    left = "; ".join(f"{k}: {v}" for k, v in lay["left_out"].items())
    return _console.render("", "layers, top down (factor: the share of the layer above that is left; lost: the "
                           "largest causes)", "",
                           _console.table(head, cells, justify="lr" + ("r" if priced else "") + "rl"), "",
                           ("product n/a (nothing accountable)" if lay["product"] is None else
                            f"product {lay['product']:.4f}"
                            + (f" = MFU over accountable time: MFU {100 * mfu:.1f} % (useful FLOPs time / productive "
                               "time) x goodput" if mfu is not None and "useful_flops" in [r["name"] for r in rows]
                               else ""))
                           + (f" (left out: {left})" if left else ""))


def render_overlap(ov: dict[str, Any] | None) -> str:
    """All communication per rank (exposed or under compute), the part under compute and
    the overlap ratio |communication ∩ compute| / |communication| (``pau.core.overlap``)."""
    if not ov or not ov["communication_ns"]:
        return ""
    rows = [[str(r["rank"]), Dur(r["communication_ns"]), Dur(r["overlap_ns"]), Dur(r["communication_ns"] - r["overlap_ns"]),
             "-" if r["ratio"] is None else f"{100 * r['ratio']:.1f} %"] for r in ov["per_rank"]]
    cells, [foot] = unit_columns(rows, [["total", Dur(ov["communication_ns"]), Dur(ov["overlap_ns"]),
                                         Dur(ov["exposed_ns"]), "-" if ov["ratio"] is None else
                                         f"{100 * ov['ratio']:.1f} %"]])
    return _console.render("", "communication per rank: all of it, the part under compute and the exposed rest "
                           "(overlap ratio: under compute / all; pau.core.overlap)", "",
                           _console.table(["rank", "communication", "under compute", "exposed", "overlap ratio"],
                                          cells, justify="rrrrr", total=[foot]))


def _share(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f} %"


def _seconds(v: float | None) -> str:
    return "-" if v is None else duration(round(v * 1e9))


def render_outcome(figures: Mapping[str, Any]) -> str:
    """Checkpoint advice, straggler scores, MFU/HFU, MPG, ETTR and progress protection
    (``pau.core.checkpoint_advice`` and the outcome figures of docs/outcome.md), a line each when computed;
    those that need more input are named on one line with what they need."""
    if figures.get("outcome_left_out"):  # a lifecycle of many jobs: none of them is defined
        return ("\nnot computed: checkpoint advice, straggler scores, MFU and HFU, MPG, ETTR, progress protection ("
                + str(figures["outcome_left_out"]) + ")")
    lines: list[str] = []
    missing: list[str] = []
    ck = figures.get("checkpoint_advice")
    if ck is not None:
        m = ck.get("measured") or {}
        if ck.get("young_s") is None:
            missing.append(f"checkpoint advice (needs a failure and a checkpoint measured: "
                           f"{count(m.get('failures') or 0, 'failure')}, {count(m.get('saves') or 0, 'save')})")
        else:
            lines.append(f"checkpoint advice: every {_seconds(ck['young_s'])} (Young) or {_seconds(ck['daly_s'])} "
                         f"(Daly) against {_seconds(ck.get('current_interval_s'))} now; expected goodput "
                         f"{_share(ck.get('expected_goodput_daly'))} at Daly's, {_share(ck.get('expected_goodput_current'))} "
                         f"now (MTBF {_seconds(m.get('mtbf_s'))}, a checkpoint {_seconds(m.get('checkpoint_cost_s'))}, "
                         f"a restart {_seconds(m.get('restart_s'))})")
    if "straggler_scores" in figures:
        sc = figures["straggler_scores"]
        if sc is None:
            missing.append("straggler scores (need step records of each rank)")
        else:
            slow = ", ".join(map(str, sc["stragglers"])) or "none"
            lines.append(f"straggler scores (NVRx, {count(sc['windows'], 'window')}, threshold {sc['threshold']}): "
                         f"ranks below it: {slow}")
    if "program_goodput" in figures:
        pg = figures["program_goodput"]
        if pg is None:
            missing.append("MFU and HFU (give --flops-per-step and a peak: --peak-flops, or --accelerator and --dtype)")
        else:
            lines.append(f"MFU {_share(pg['mfu'])}, HFU {_share(pg['hfu'])}"
                         + ("" if pg["hfu"] is not None else " (give --hardware-flops-per-step)")
                         + f" over productive time; {_share(pg['program_goodput'])} over accountable time (MFU x "
                         f"goodput; peak {pg['peak']['flops']:,.4g} FLOP/s)")
    mp = figures.get("mpg")
    if mp is not None:
        need = [opt for opt, key in (("--schedule", "scheduling_goodput"), ("--flops-per-step", "program_goodput"))
                if mp[key] is None]
        if len(need) == 2:
            missing.append("MPG (give --schedule and --flops-per-step)")
        else:
            lines.append(f"MPG {_share(mp['mpg'])} = scheduling {_share(mp['scheduling_goodput'])} x runtime "
                         f"{_share(mp['runtime_goodput'])} x program (MFU) {_share(mp['program_goodput'])}"
                         + (f" (give {need[0]} for the rest)" if need else ""))
    if "ettr" in figures:
        et = figures["ettr"]
        if et is None:
            missing.append("ETTR (needs the queue time: give --schedule)")
        else:
            lines.append(f"ETTR {_share(et['ettr'])}: productive {duration(et['productive_ns'])} over "
                         f"{duration(et['available_ns'])} available (queued {duration(et['queued_ns'])})")
    pr = figures.get("protection")
    if pr is not None:
        lines.append(f"progress protection (at most {_share(pr['bound_share'])} of the progress lost per "
                     f"{pr['per']}): {count(pr['breaches'], 'breach', 'breaches')} in "
                     f"{count(pr['rows'], pr['per'])}, {duration(round(pr['excess_ns']))} lost beyond the bound"
                     + ("" if pr["excess_cost"] is None else f" ({money(pr['excess_cost'])})"))
    if missing:
        lines.append("not computed: " + "; ".join(missing))
    return "\n".join([""] + lines) if lines else ""


def render_recovery(rec: dict[str, Any] | None) -> str:
    """Failures and recovery (pau.figures.recovery.recovery), in one paragraph."""
    if not rec or not rec["failures"]:
        return ""
    causes = ", ".join(f"{k} {v['failures']}" for k, v in sorted(rec["by_cause"].items(), key=lambda kv: -kv[1]["failures"]))
    ttr = rec["mean_to_first_step_s"]
    ttp = rec["mean_to_progress_s"]
    return ("\nrecovery: " + f"{count(rec['failures'], 'failure')}, {rec['failures_per_1000_accelerator_hours']:,.1f} per 1,000 "
            f"accelerator-hours ({causes}); mean time to the next attempt's first step "
            + ("-" if ttr is None else duration(int(ttr * 1e9))) + ", to progress back where it was "
            + ("-" if ttp is None else duration(int(ttp * 1e9)))
            + (f" ({rec['not_recovered']} not recovered)" if rec["not_recovered"] else "")
            + f"; {count(rec['restart_loop_attempts'], 'attempt')} in restart loops (ended without a new durable checkpoint); "
            + f"waste equals {rec['waste_equivalent_accelerators']:,.2f} accelerators idle the whole time")


def render_telemetry(rows: list[Any] | None) -> str:
    """Hardware telemetry per state and activity: each metric's time-weighted mean over
    the time its samples cover, and energy for power."""
    if not rows:
        return ""
    [cells] = unit_columns([[r["state"], r["activity"], r["metric"], Dur(r["duration_ns"]),
              pct(r["covered_ns"], r["duration_ns"]).strip(), "-" if r["mean"] is None else f"{r['mean']:,.4g}",
              "" if r["energy_j"] is None else f"{r['energy_j']:,.4g} J"] for r in rows])
    return _console.render("", "hardware telemetry by state and activity (time-weighted means over the covered time)",
                           "", _console.table(["state", "activity", "metric", "time", "covered", "mean", "energy"],
                                              cells, justify="lllrrrr"))


def _render_meta(run: Run) -> str:
    m = run.metadata
    if m.get("format") != "mllog":
        return ""
    ttt = m.get("time_to_train_ns")
    line = (f"\n{m.get('benchmark')} on {m.get('system')} ({m.get('submitter')}): {_mlperf.status_text(m.get('status'))}, "
            f"{m.get('accelerators')} accelerator{'' if m.get('accelerators') == 1 else 's'} ({m.get('accelerators_source')}), time to train "
            + ("-" if ttt is None else duration(ttt)))
    ev = m.get("eval")
    if not ev:   # a saved run whose metadata holds no eval
        return line
    src = f" (target: {ev['target_source']}, round {ev['round']})" if ev.get("target_source") else ""
    return (line + f"\n{_mlperf.progress_text(m.get('epochs') or 0, m.get('blocks') or 0)}; "
            + _mlperf.verdict_text(ev) + src)


def render(run: Run, figures: dict[str, Any], table: pa.Table | None, *, title: str, price: float | None = None) -> str:
    """The whole text report of one run: its sections in order, those with something to say."""
    head = render_activity(figures["per_rank"], title) if figures.get("per_rank") and run.events is not None else title
    optional = [_render_meta(run), render_idle(figures.get("idle_by_cause")),
                render_top_kernels(figures.get("top_kernels") or []), render_nvtx(figures.get("nvtx")),
                render_overlap(figures.get("overlap")), render_steps(figures.get("steps"))]
    parts = [head, *(p for p in optional if p), *_goodput_parts(run, figures)]
    parts += [p for p in (_outside(figures["events_outside_accountable"]), _telemetry_part(run, figures)) if p]
    if figures["requests"] is not None:
        parts.append(render_requests(figures["requests"], figures.get("slo_ns", {})))
    if "cost" in figures and price is not None:
        parts.append(render_cost(figures["cost"], price))
    return "\n".join(parts)


def _goodput_parts(run: Run, figures: Mapping[str, Any]) -> list[str]:
    """Goodput, recovery, the layers and the outcome figures; or why there is no goodput."""
    led = figures["ledger"]
    if led is None:
        return []
    if led["goodput"] is not None:
        mfu = (figures.get("program_goodput") or {}).get("mfu")
        extra = (render_recovery(figures.get("recovery")), render_layers(figures.get("layers"), mfu),
                 render_outcome(figures))
        return [render_goodput(led), *(x for x in extra if x)]
    if run.lifecycle is not None:  # a lifecycle ledger as of an instant before every record
        return [f"\nnothing is accountable as of {led['as_of']} ns: it is before the lifecycle's first "
                "record, so goodput and the layers' shares are not defined"]
    if run.events is not None:
        return ["\nno lifecycle (no step records): goodput needs one; the table is device activity only"]
    return []


def _outside(outside: Mapping[str, Any] | None) -> str:
    """The events outside accountable time, when there are any."""
    if not outside or not outside["events"]:
        return ""
    return (f"\n{count(outside['events'], 'event')} ({duration(outside['ns'])}) lie outside the accountable "
            f"time of ranks {', '.join(map(str, outside['ranks']))}: not counted in the ledger")


def _telemetry_part(run: Run, figures: Mapping[str, Any]) -> str:
    """Telemetry per state and activity; or why samples gave none."""
    tel = render_telemetry(figures.get("telemetry"))
    if tel:
        return tel
    if run.samples is not None and run.samples.num_rows and figures["ledger"] is not None:
        return (f"\nhardware telemetry: {count(run.samples.num_rows, 'sample')}, none covering an instant of the "
                "ledger's time (samples outside the run's time, or one instant per device, as a single scrape holds, "
                "which covers no time; the warnings say which)")
    return ""


def _reached(m: dict[str, Any]) -> str:
    """Whether a run's eval metric reached its MLCommons target (pau.readers.mlperf_rules.judge):
    ``yes``, ``no``, ``-`` when no target is known or the log has no eval."""
    ev = m.get("eval") or {}
    got = ev.get("reached")
    return "-" if got is None else "yes" if got else "no"


def render_runs(rows: list[tuple[Run, RunSummary]], title: str, root: str | None = None) -> str:
    """Several runs (a folder of MLPerf logs): one line each, figures from each run's
    summary; ``source`` is each log's path under ``root`` (the folder given)."""
    head = ["source", "benchmark", "status", "accelerators", "reached", "time to train", "accountable", "goodput"]
    cells: list[list[Any]] = []
    for run, fig in rows:
        m = run.metadata
        led: dict[str, Any] = dict(fig["ledger"] or {})
        ttt = m.get("time_to_train_ns")
        good = led.get("goodput")
        src = str(m.get("sources", ["?"])[0])
        if root is not None and os.path.isdir(root):
            src = os.path.relpath(src, root)
        cells.append([src, str(m.get("benchmark") or "-"), str(m.get("status") or "-"), str(m.get("accelerators") or "-"),
                      _reached(m), Dur(ttt), Dur(led["accountable_ns"] if led else None),
                      "-" if good is None else pct(good, 1).strip()])
    [shown] = unit_columns(cells)
    return _console.render(title, "", _console.table(head, shown, justify="lllrlrrr"), "",
                           "reached: the eval metric at the last eval point against the round's MLCommons quality "
                           "target; accountable: accelerator time")


#: How a metric of the comparison is shown: its quantity, and the factor to ns for times.
_HOURS, _SECONDS = 3_600 * 10**9, 10**9


def money(v: float | None) -> str:
    """An amount: two decimals from a dime up, else as many as show two significant
    digits ($0.00070, never a $0.00 that hides a cost); ``-`` for None."""
    if v is None:
        return "-"
    d = 2
    while v and d < 12 and abs(v) < 10.0 ** (1 - d):
        d += 1
    return f"${v:,.{d}f}" if v >= 0 else f"-${-v:,.{d}f}"


#: The comparison's metrics as the report names them.
_METRIC_NAMES = {
    "accountable_accelerator_hours": "accountable accelerator time",
    "productive_accelerator_hours": "productive accelerator time",
    "badput_accelerator_hours": "badput accelerator time",
    "accelerator_seconds_per_preserved_step": "accelerator time per preserved step",
    "productive_accelerator_seconds_per_preserved_step": "productive accelerator time per preserved step",
}


def _metric_cells(metric: str, values: Sequence[Any]) -> list[Any]:
    """The cells of one metric row (a, b, difference) in the metric's quantity: times as
    :class:`Dur` (in the column's unit), shares as percentages (the difference in points),
    counts as integers, money with two decimals (four below a dollar)."""
    if metric.endswith("_hours") or metric.endswith("_seconds_per_preserved_step"):
        per = _HOURS if metric.endswith("_hours") else _SECONDS
        return [Dur(None if v is None else v * per) for v in values]
    if metric in ("goodput", "goodput_strict") or metric.endswith("_share"):
        return ["-" if v is None else f"{100 * v:.1f} %" if i < 2 else f"{100 * v:+.1f} pt"
                for i, v in enumerate(values)]
    if "cost" in metric:
        return [money(v) for v in values]
    return ["-" if v is None else f"{int(v):,}" if float(v).is_integer() else f"{v:,.4g}" for v in values]


def metric_row(r: Mapping[str, Any]) -> list[str]:
    """A row of the comparison's metric table (``metric, a, b, difference``) as people
    read it: the metric's name, and its three values in its quantity (a row of times in
    one unit, so that they compare)."""
    cells = _metric_cells(r["metric"], (r["a"], r["b"], r["difference"]))
    if isinstance(cells[0], Dur):
        u = column_unit([c.ns for c in cells])
        cells = ["-" if c.ns is None else in_column(c.ns, u) for c in cells]
    return [_METRIC_NAMES.get(r["metric"], r["metric"].replace("_", " ")), *cells]


def _value(v: Any) -> str:
    """A figure without a unit of time: ints with thousands separators, floats to four
    significant digits, None as ``-``."""
    if v is None:
        return "-"
    return f"{v:,.4g}" if isinstance(v, float) else f"{v:,}"


def _span(ns: Any) -> str:
    return "-" if ns is None else duration(ns)


#: The heading of the per-trained-model comparison of two MLPerf runs.
MLPERF_COMPARE_NOTE = ("per trained model (a run to its quality target: the useful output MLPerf compares; blocks and "
                       "epochs hold different numbers of samples from one submission to another)")


def mlperf_rows(mlperf: Mapping[str, Any]) -> list[list[str]]:
    """Two MLPerf runs per trained model (``pau.readers.mlperf_rules.time_per_trained_model``),
    as rows ``[figure, a, b, difference]``: trained models, time to train, accelerator
    time per trained model and by lifecycle state (one unit per row)."""
    a, b = mlperf["a"], mlperf["b"]

    def models(x: Mapping[str, Any]) -> str:
        n = x["trained_models"]
        return "- (no target known)" if n is None else f"{n} ({'reached' if n else 'target not reached'})"

    def diff(u: Any, v: Any) -> Any:
        return None if u is None or v is None else u - v

    rows: list[list[Any]] = [["trained models", models(a), models(b), ""]]
    ttt = [a["time_to_train_ns"], b["time_to_train_ns"], diff(a["time_to_train_ns"], b["time_to_train_ns"])]
    per = [a["accountable_ns_per_trained_model"], b["accountable_ns_per_trained_model"],
           diff(a["accountable_ns_per_trained_model"], b["accountable_ns_per_trained_model"])]
    for name, vals in (("time to train", ttt), ("accelerator time per trained model", per)):
        u = column_unit(vals)
        rows.append([name] + ["-" if v is None else in_column(v, u) for v in vals])
    sa, sb = a["state_ns_per_trained_model"] or {}, b["state_ns_per_trained_model"] or {}
    states = [k for k in dict.fromkeys([*sa, *sb])]
    if states:
        vals = [[sa.get(k), sb.get(k), diff(sa.get(k, 0) if sa else None, sb.get(k, 0) if sb else None)]
                for k in states]
        u = column_unit([v for r in vals for v in r])
        rows += [[f"  {k}"] + ["-" if v is None else in_column(v, u) for v in r] for k, r in zip(states, vals)]
    return rows


def render_mlperf_compare(mlperf: Mapping[str, Any], la: str, lb: str) -> str:
    """Two MLPerf runs per trained model (:func:`mlperf_rows`), as text."""
    return _console.render(f"MLPerf: {MLPERF_COMPARE_NOTE}", "",
                           _console.table(["", la, lb, "difference"], mlperf_rows(mlperf)))


def render_compare(cmp: Comparison, *, kernels: int, mlperf: Mapping[str, Any] | None = None) -> str:
    """The text of ``pau compare``, formatted as ``pau report`` is: the metrics (times in
    one unit per column, shares as percentages), the difference by cause and, with
    events, the ``kernels`` rows of the kernel diff that differ most. The columns are
    named by the comparison's labels (``--labels A,B``)."""
    la, lb = (str(x) for x in cmp.labels)
    metric_rows = [metric_row(r) for r in cmp.table.to_pylist()]
    items: list[Any] = [render_mlperf_compare(mlperf, la, lb), ""] if mlperf else []
    items += [_console.table(["metric", la, lb, "difference"], metric_rows), "",
              f"accelerator time per preserved step, by cause ({la} - {lb})"
              + ("; an MLPerf step is a block, whose samples differ between submissions: compare per trained "
                 "model, above" if mlperf else "") + ":", ""]
    has_cost = "cost_difference" in cmp.by_cause.schema.names
    [cause_rows] = unit_columns([[r["cause"], r["kind"]] + [Dur(None if v is None else v * _SECONDS)
                                                            for v in (r["a"], r["b"], r["difference"])]
                                 + ([_metric_cells("cost", [r["cost_difference"]])[0]] if has_cost else [])
                                 for r in cmp.by_cause.to_pylist()])
    items.append(_console.table(["cause", "kind", la, lb, "difference"] + (["cost diff"] if has_cost else []),
                                cause_rows, justify="llrrr" + ("r" if has_cost else "")))
    kd = cmp.kernels
    if kd is not None:
        s = kd.summary(kernels)
        per = kd.steps_a is not None and kd.steps_b is not None
        counts = ", ".join(f"{v} {k}" for k, v in s["status"].items())
        items += ["", f"device work by name and kind ({la} - {lb}): {count(s['count'], 'name')} ({counts}); "
                  f"all device events {_span(s['total_ns_a'])} against {_span(s['total_ns_b'])}, "
                  f"difference {_span(s['difference_ns'])}"]
        if s["kernels"]:
            head = ["status", "kind", "count a", "count b", "total a", "total b", "difference"]
            head += ["per step a", "per step b", "per step diff"] if per else []
            rows = []
            for r in s["kernels"]:
                c = [r["status"], r["kind"], f"{r['count_a']:,}", f"{r['count_b']:,}", Dur(r["total_ns_a"]),
                     Dur(r["total_ns_b"]), Dur(r["difference_ns"])]
                if per:
                    c += [Dur(r["per_step_ns_a"]), Dur(r["per_step_ns_b"]), Dur(r["per_step_difference_ns"])]
                rows.append(c + [_name(r["name"])])
            [cells] = unit_columns(rows)
            items += ["", f"a = {la}, b = {lb}", "",
                      _console.table(head + ["name"], cells, justify="ll" + "r" * (len(head) - 2) + "l")]
            if s["left_out"]:
                items.append(f"... {s['left_out']:,} more (--format json or csv lists every row)")
            items.append("sorted by |total a - total b|, then the larger total; per step: per preserved step of "
                         "each run" if per else "sorted by |total a - total b|, then the larger total; no per-step "
                         "figures (a run without preserved steps)")
    return _console.render(*items)


def _flat(prefix: str, value: Any, out: list[tuple[str, Any]]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, list):
        out.append((prefix, json.dumps(value)))
    else:
        out.append((prefix, value))


def flatten(figures: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``(dotted.metric, value)`` for every leaf of a summary."""
    out: list[tuple[str, Any]] = []
    _flat("", figures, out)
    return out


def render_csv(figures: dict[str, Any]) -> str:
    rows = flatten(figures)
    t = pa.table({"metric": pa.array([r[0] for r in rows], pa.string()),
                  "value": pa.array(["" if r[1] is None else (repr(r[1]) if isinstance(r[1], float) else str(r[1]))
                                     for r in rows], pa.string())})
    sink = pa.BufferOutputStream()
    pcsv.write_csv(t, sink)
    return str(sink.getvalue().to_pybytes().decode())


def to_json(value: Any) -> str:
    return json.dumps(value, indent=1, allow_nan=False)


def _cell(v: Any) -> str:
    """A CSV cell: ints exact, floats as repr (shortest round trip), None empty."""
    return "" if v is None else repr(v) if isinstance(v, float) else str(v)


def render_compare_csv(cmp: Comparison, mlperf: Mapping[str, Any] | None = None) -> str:
    """``pau compare --format csv``: one long table, ``section, name, kind, status,
    quantity, a, b, difference``; sections ``mlperf`` (two MLPerf runs: per trained
    model), ``metrics``, ``by_cause`` and ``kernels`` (every row of the kernel diff, one
    line per quantity: count, total_ns, per_step_ns). See docs/compare.md."""
    rows: list[tuple[Any, ...]] = []
    if mlperf:
        a, b = mlperf["a"], mlperf["b"]
        sa, sb = a["state_ns_per_trained_model"] or {}, b["state_ns_per_trained_model"] or {}
        items = [(k, "", a[k], b[k]) for k in ("trained_models", "time_to_train_ns", "accountable_ns_per_trained_model")]
        items += [("state_ns_per_trained_model", k, sa.get(k) if sa else None, sb.get(k) if sb else None)
                  for k in dict.fromkeys([*sa, *sb])]
        for name, state, x, y in items:
            diff = None if x is None or y is None else x - y
            rows.append(("mlperf", name, state, "", "value", x, y, diff))
    for r in cmp.table.to_pylist():
        rows.append(("metrics", r["metric"], "", "", "value", r["a"], r["b"], r["difference"]))
    for r in cmp.by_cause.to_pylist():
        rows.append(("by_cause", r["cause"], r["kind"], "", "accelerator_seconds_per_preserved_step",
                     r["a"], r["b"], r["difference"]))
        if "cost_difference" in r:
            rows.append(("by_cause", r["cause"], r["kind"], "", "cost_per_preserved_step",
                         r["cost_a"], r["cost_b"], r["cost_difference"]))
    if cmp.kernels is not None:
        for k in cmp.kernels.rows:
            head = ("kernels", k["name"], k["kind"], k["status"])
            rows.append(head + ("count", k["count_a"], k["count_b"], k["count_difference"]))
            rows.append(head + ("total_ns", k["total_ns_a"], k["total_ns_b"], k["difference_ns"]))
            rows.append(head + ("per_step_ns", k["per_step_ns_a"], k["per_step_ns_b"], k["per_step_difference_ns"]))
    names = ("section", "name", "kind", "status", "quantity", "a", "b", "difference")
    t = pa.table({n: pa.array([_cell(r[i]) if i >= 5 else str(r[i]) for r in rows], pa.string())
                  for i, n in enumerate(names)})
    sink = pa.BufferOutputStream()
    pcsv.write_csv(t, sink)
    return str(sink.getvalue().to_pybytes().decode())

