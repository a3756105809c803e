"""The ``pau`` command line: argument parsing and printing only.

Every command reads its input through :func:`pau.read` (format detected from the
content, ``--input-format`` to override) and takes its figures from
:meth:`pau.Run.summary`, so ``report`` in every ``--format``, ``compare`` and the API
agree. Exit codes (one table, also in ``pau --help``):

====  ==========================================================================
0     done
1     bad input (a :mod:`pau.errors` exception, a missing file)
2     usage (an unknown flag, or an option that does not apply to the input)
3     a ``--gate`` failed
130   interrupted (Ctrl-C)
====  ==========================================================================
"""

from __future__ import annotations

import argparse
import decimal
import importlib.util
import json
import math
import operator
import os
import re
import sys
from typing import Any, Callable, Sequence, TextIO

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from pau.engine import _jit
from pau import core, errors, synth
from pau.views import html as html_report
from pau.figures import layers
from pau.readers.mllog import mllog_files
from pau.readers.slurm import read_sacct
from pau.readers import mlperf_rules as _mlperf
from pau.engine._format import duration, in_unit, pct, unit
from pau.engine.ledger import Ledger
from pau.fleet.ingester import IngestError
from pau.views import console as _console
from pau.engine.types import Quarantined, RunSummary
from pau.views.chrome_trace import write_chrome_trace
from pau.views import fleet_html, fleet_text, openmetrics
from pau._args import BUILTIN as _BUILTIN
from pau._args import EXIT_BAD_INPUT, EXIT_GATE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, parser
from pau.run import Run, detect, read_runs, run_figures

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

class UsageError(Exception):
    """A command line that cannot be carried out as given (exit 2)."""


# ---------------------------------------------------------------------------
# rendering


def _hours(ns: int) -> str:
    """Accelerator time, in the unit that fits it."""
    return duration(ns)


def render_activity(per_rank: list, title: str) -> str:
    """The per-rank activity table of a ledger (:meth:`Ledger.rank_activity`), as text."""
    per: dict[int, dict[str, int]] = {r["rank"]: r["activity_ns"] for r in per_rank}
    uniq = np.asarray(sorted(per), np.int64)
    columns = [(h, a) for h, a in _COLUMNS if a in _ALWAYS or any(per[r].get(a, 0) for r in per)]
    # one unit for the whole table (the one the longest span fits), so that columns compare
    u = unit(max((sum(v.values()) for v in per.values()), default=0))
    head = ["rank"] + [h for h, _ in columns] + ["span"]
    rows = []
    totals = [0] * len(columns)
    for r in uniq.tolist():
        span = sum(per[r].values())
        vals = [per[r].get(a, 0) for _, a in columns]
        totals = [t + v for t, v in zip(totals, vals)]
        rows.append([str(r)] + [f"{in_unit(v, u)} {pct(v, span)}" for v in vals] + [in_unit(span, u)])
    whole = sum(totals)
    total = ["total"] + [f"{in_unit(v, u)} {pct(v, whole)}" for v in totals] + [in_unit(whole, u)]
    return _console.render(
        title, "", _console.table(head, rows, justify="r" * len(head), total=[total]), "",
        f"accountable: {len(uniq)} rank{'' if len(uniq) == 1 else 's'}, {duration(whole)} of accelerator time; "
        "exposed communication is communication not hidden under compute")


def render_goodput(s: dict) -> str:
    """The goodput section of a ledger summary: time per state, waste by cause, headline figures."""
    acc = s["accountable_ns"]
    items: list[Any] = ["", f"goodput {100 * s['goodput']:.1f} % of {_hours(acc)} accountable accelerator time"
                        + (f" (strict, productive x compute: {100 * s['goodput_strict']:.1f} %)"
                           if s["goodput_strict"] is not None else ""), ""]
    items.append(_console.table(["state", "time", "share"], [[state, _hours(ns), pct(ns, acc)]
                                                             for state, ns in s["state_ns"].items() if ns]))
    if s["badput_by_cause_ns"]:
        items += ["", "rolled-back work by cause:", ""]
        items.append(_console.table(["cause", "time", "share"], [
            [cause, _hours(ns), pct(ns, acc)]
            for cause, ns in sorted(s["badput_by_cause_ns"].items(), key=lambda kv: -kv[1])]))
    items.append("")
    mtbf = f", MTBF {s['mtbf_s']:,.0f} s" if s["mtbf_s"] else ""
    per_step = s["accountable_ns_per_preserved_step"]
    items.append(f"failures {s['failures']}{mtbf}; preserved steps {s['preserved_steps']:,}, "
                 f"model cycles {s['preserved_model_cycles']}; "
                 + (f"{per_step / 1e9:,.2f} accelerator-s per preserved step" if per_step else
                    "no preserved step"))
    return _console.render(*items)


def render_cost(c: dict, price: float) -> str:
    """Cost (and energy) per useful output at a price per accelerator-hour."""
    lines = ["", f"cost at ${price:,.2f} per accelerator-hour: total ${c['total_cost']:,.2f}, "
             f"of which waste ${c['waste_cost']:,.2f}"]
    for key, label in (("cost_per_productive_accelerator_hour", "per productive accelerator-hour"),
                       ("cost_per_preserved_step", "per preserved step"),
                       ("cost_per_preserved_model_cycle", "per preserved model cycle"),
                       ("cost_per_million_preserved_tokens", "per million preserved tokens")):
        if c.get(key) is not None:
            lines.append(f"  ${c[key]:,.4f} {label}")
    if c.get("waste_cost_by_cause"):
        lines.append("  waste by cause: " + ", ".join(
            f"{k} ${v:,.2f}" for k, v in sorted(c["waste_cost_by_cause"].items(), key=lambda kv: -kv[1])))
    for key in sorted(k for k in c if k.startswith("energy") and isinstance(c[k], (int, float))):
        lines.append(f"  {key.replace('_', ' ')}: {c[key]:,.4g}")
    return "\n".join(lines)


def render_requests(s: dict[str, Any], slo: dict[str, int]) -> str:
    """The request section: outcomes, SLO attainment (against the SLOs given), request goodput."""
    att = s["slo_attainment"]
    slos = (", ".join(f"{k} <= {v / 1e9:g} s" for k, v in slo.items()) if slo
            else "no SLO given (--slo): every completed request is accepted")
    rate = s["request_goodput_per_s"]
    lines = ["", f"requests: {s['offered']:,} offered; accepted {s['accepted']:,}, late {s['late']:,}, "
             f"failed {s['failed']:,}, rejected {s['rejected']:,}, cancelled {s['cancelled']:,}"
             + (f", quarantined {s['quarantined']:,}" if s["quarantined"] else ""),
             "SLO attainment " + ("-" if att is None else f"{100 * att:.1f} %")
             + "; request goodput " + ("-" if rate is None else f"{rate:,.3f} accepted/s")
             + f" over {duration(s['window_ns'])}; accepted tokens {s['accepted_tokens']:,}",
             f"SLOs: {slos}"]
    return "\n".join(lines)


def _name(name: str) -> str:
    return name if len(name) <= 70 else name[:67] + "..."


def render_top_kernels(rows: list) -> str:
    """The device work that took the most time (``nsys stats``' kernel summary)."""
    if not rows:
        return ""
    head = ["time (%)", "total", "count", "mean", "kind", "name"]
    cells = [[f"{100 * r['share']:.1f}", duration(r["total_ns"]), f"{r['count']:,}", duration(r["mean_ns"]),
              r["kind"], _name(r["name"])] for r in rows]
    return _console.render("", f"top device work ({len(rows)} by total time; time (%) of all device event time)", "",
                           _console.table(head, cells, justify="rrrrll"))


def render_nvtx(rows: list | None) -> str:
    """NVTX ranges by name (``nsys stats``' NVTX range summary)."""
    if not rows:
        return ""
    head = ["time (%)", "total", "instances", "mean", "min", "max", "range"]
    cells = [[f"{100 * r['share']:.1f}" if r["share"] is not None else "-", duration(r["total_ns"]), f"{r['count']:,}",
              duration(r["mean_ns"]), duration(r["min_ns"]), duration(r["max_ns"]), _name(r["name"])] for r in rows]
    opened = rows[0]["open"]
    return _console.render("", f"NVTX ranges ({len(rows)} by total time; time (%) of all closed ranges' time"
                           + (f"; {opened:,} still open, left out" if opened else "") + ")", "",
                           _console.table(head, cells, justify="rrrrrrl"))


def render_steps(steps: dict | None) -> str:
    """Step time per rank (median, p90, max) and the stragglers, named."""
    if not steps:
        return ""
    cells = [[str(r["rank"]), f"{r['steps']:,}", duration(r["median_ns"]), duration(r["p90_ns"]), duration(r["max_ns"])]
             for r in steps["per_rank"]]
    s = steps["stragglers"]
    named = ", ".join(f"rank {p['rank']} (the others waited {duration(p['charged_ns'])} of accelerator time "
                      "for it)" for p in s["persistent"])
    return _console.render("", "steps per rank (finished step executions; nearest-rank percentiles)", "",
                           _console.table(["rank", "steps", "median", "p90", "max"], cells, justify="rrrrr"), "",
                           f"stragglers: {named or 'none persistent'}; all waits for the slowest rank of each step: "
                           f"{duration(s['wait_ns'])} of accelerator time")


def render_idle(idle: dict | None) -> str:
    """Idle split by cause per rank (docs/idle.md); nothing when no idle has a cause
    (then every idle ns is idle.other, which the activity table shows as idle)."""
    if not idle or not any(v for k, v in idle["ns"].items() if k != "idle.other"):
        return ""
    causes = list(idle["ns"])
    rows = [[str(r["rank"])] + [r["ns"].get(c, 0) for c in causes] for r in idle["per_rank"]]
    u = unit(max((sum(x[1:]) for x in rows), default=0))
    head = ["rank"] + causes + ["idle"]
    cells = [[x[0]] + [f"{in_unit(v, u)} {pct(v, sum(x[1:])).strip()}" for v in x[1:]] + [in_unit(sum(x[1:]), u)]
             for x in rows]
    total = [idle["ns"][c] for c in causes]
    foot = ["total"] + [f"{in_unit(v, u)} {pct(v, sum(total)).strip()}" for v in total] + [in_unit(sum(total), u)]
    return _console.render("", "idle by cause (host_wait: the stream drained before the next launch; data_wait: a "
                           "data loader ran; sync_wait: the host was in a synchronize call)", "",
                           _console.table(head, cells, justify="r" * len(head), total=[foot]))


def render_layers(lay: dict | None) -> str:
    """The stack from accountable time down (pau.figures.layers): each layer, its factor and
    what the step to it lost (the four largest causes)."""
    if not lay or not lay["layers"]:
        return ""
    rows = lay["layers"]
    u = unit(max(r["ns"] for r in rows))
    priced = any("cost" in r for r in rows)
    cells = []
    for r in rows:
        lost = sorted(r["lost_ns"].items(), key=lambda kv: -kv[1])
        shown = ", ".join(f"{k} {in_unit(v, u)}" for k, v in lost[:4]) + (f", {len(lost) - 4} more" if len(lost) > 4
                                                                           else "")
        cells.append([r["name"], in_unit(r["ns"], u)] + ([f"${r['cost']:,.2f}" if "cost" in r else ""] if priced else [])
                     + ["" if r["factor"] is None else f"x {r['factor']:.3f}", shown])
    head = ["layer", "time"] + (["cost"] if priced else []) + ["factor", "lost"]
    left = "; ".join(f"{k}: {v}" for k, v in lay["left_out"].items())
    return _console.render("", "layers, top down (factor: the share of the layer above that is left; lost: the "
                           "largest causes)", "",
                           _console.table(head, cells, justify="lr" + ("r" if priced else "") + "rl"), "",
                           ("product n/a (nothing accountable)" if lay["product"] is None else
                            f"product {lay['product']:.4f}") + (f" (left out: {left})" if left else ""))


def render_recovery(rec: dict | None) -> str:
    """Failures and recovery (pau.figures.recovery.recovery), in one paragraph."""
    if not rec or not rec["failures"]:
        return ""
    causes = ", ".join(f"{k} {v['failures']}" for k, v in sorted(rec["by_cause"].items(), key=lambda kv: -kv[1]["failures"]))
    ttr = rec["mean_to_first_step_s"]
    ttp = rec["mean_to_progress_s"]
    return ("\nrecovery: " + f"{rec['failures']} failures, {rec['failures_per_1000_accelerator_hours']:,.1f} per 1,000 "
            f"accelerator-hours ({causes}); mean time to the next attempt's first step "
            + ("-" if ttr is None else duration(int(ttr * 1e9))) + ", to progress back where it was "
            + ("-" if ttp is None else duration(int(ttp * 1e9)))
            + (f" ({rec['not_recovered']} not recovered)" if rec["not_recovered"] else "")
            + f"; {rec['restart_loop_attempts']} attempts in restart loops (ended without a new durable checkpoint); "
            + f"waste equals {rec['waste_equivalent_accelerators']:,.2f} accelerators idle the whole time")


def render_telemetry(rows: list | None) -> str:
    """Hardware telemetry per state and activity: each metric's time-weighted mean over
    the time its samples cover, and energy for power."""
    if not rows:
        return ""
    cells = [[r["state"], r["activity"], r["metric"], duration(r["duration_ns"]),
              pct(r["covered_ns"], r["duration_ns"]).strip(), "-" if r["mean"] is None else f"{r['mean']:,.4g}",
              "" if r["energy_j"] is None else f"{r['energy_j']:,.4g} J"] for r in rows]
    return _console.render("", "hardware telemetry by state and activity (time-weighted means over the covered time)",
                           "", _console.table(["state", "activity", "metric", "time", "covered", "mean", "energy"],
                                              cells, justify="lllrrrr"))


def _render_meta(run: Run) -> str:
    m = run.metadata
    if m.get("format") != "mllog":
        return ""
    ttt = m.get("time_to_train_ns")
    line = (f"\n{m.get('benchmark')} on {m.get('system')} ({m.get('submitter')}): {_mlperf.status_text(m.get('status'))}, "
            f"{m.get('accelerators')} accelerators ({m.get('accelerators_source')}), time to train "
            + ("-" if ttt is None else duration(ttt)))
    ev = m.get("eval")
    if not ev:   # a saved run whose metadata holds no eval
        return line
    src = f" (target: {ev['target_source']}, round {ev['round']})" if ev.get("target_source") else ""
    return (line + f"\n{_mlperf.progress_text(m.get('epochs') or 0, m.get('blocks') or 0)}; "
            + _mlperf.verdict_text(ev) + src)


def render_text(run: Run, title: str, figures: dict, table: pa.Table | None, price: float | None) -> str:
    """The whole text report of one run."""
    parts = []
    led = figures["ledger"]
    if figures.get("per_rank") and run.events is not None:
        parts.append(render_activity(figures["per_rank"], title))
    else:
        parts.append(title)
    meta = _render_meta(run)
    if meta:
        parts.append(meta)
    idle = render_idle(figures.get("idle_by_cause"))
    if idle:
        parts.append(idle)
    top = render_top_kernels(figures.get("top_kernels") or [])
    if top:
        parts.append(top)
    nvtx = render_nvtx(figures.get("nvtx"))
    if nvtx:
        parts.append(nvtx)
    steps = render_steps(figures.get("steps"))
    if steps:
        parts.append(steps)
    if led is not None and led["goodput"] is not None:
        parts.append(render_goodput(led))
        for extra in (render_recovery(figures.get("recovery")), render_layers(figures.get("layers"))):
            if extra:
                parts.append(extra)
    elif led is not None and run.lifecycle is not None:  # a lifecycle ledger as of an instant before every record
        parts.append(f"\nnothing is accountable as of {led['as_of']} ns: it is before the lifecycle's first "
                     "record, so goodput and the layers' shares are not defined")
    elif led is not None and run.events is not None:
        parts.append("\nno lifecycle (no step records): goodput needs one; the table is device activity only")
    outside = figures["events_outside_accountable"]
    if outside and outside["events"]:
        parts.append(f"\n{outside['events']:,} events ({duration(outside['ns'])}) lie outside the accountable "
                     f"time of ranks {', '.join(map(str, outside['ranks']))}: not counted in the ledger")
    tel = render_telemetry(figures.get("telemetry"))
    if tel:
        parts.append(tel)
    if figures["requests"] is not None:
        parts.append(render_requests(figures["requests"], figures.get("slo_ns", {})))
    if "cost" in figures and price is not None:
        parts.append(render_cost(figures["cost"], price))
    return "\n".join(parts)


def _reached(m: dict) -> str:
    """Whether a run's eval metric reached its MLCommons target (pau.readers.mlperf_rules.judge):
    ``yes``, ``no``, ``-`` when no target is known or the log has no eval."""
    ev = m.get("eval") or {}
    got = ev.get("reached")
    return "-" if got is None else "yes" if got else "no"


def render_runs(rows: list[tuple[Run, RunSummary]], title: str, root: str | None = None) -> str:
    """Several runs (a folder of MLPerf logs): one line each, figures from each run's
    summary; ``source`` is each log's path under ``root`` (the folder given)."""
    head = ["source", "benchmark", "status", "accelerators", "reached", "time to train", "accountable", "goodput"]
    cells = []
    for run, fig in rows:
        m = run.metadata
        led: dict[str, Any] = dict(fig["ledger"] or {})
        ttt = m.get("time_to_train_ns")
        good = led.get("goodput")
        src = str(m.get("sources", ["?"])[0])
        if root is not None and os.path.isdir(root):
            src = os.path.relpath(src, root)
        cells.append([src, str(m.get("benchmark") or "-"), str(m.get("status") or "-"), str(m.get("accelerators") or "-"),
                      _reached(m), "-" if ttt is None else duration(ttt),
                      "-" if not led else duration(led["accountable_ns"]),
                      "-" if good is None else pct(good, 1).strip()])
    return _console.render(title, "", _console.table(head, cells, justify="lllrlrrr"), "",
                           "reached: the eval metric at the last eval point against the round's MLCommons quality "
                           "target; accountable: accelerator time")


def _value(v: Any) -> str:
    """A figure of the comparison: ints with thousands separators, floats to six
    significant digits, None as ``-`` (as :meth:`pau.core.Comparison.render`)."""
    if v is None:
        return "-"
    return f"{v:,.6g}" if isinstance(v, float) else f"{v:,}"


def _span(ns: Any) -> str:
    return "-" if ns is None else duration(ns)


def render_compare(cmp: core.Comparison, kernels: int) -> str:
    """The text of ``pau compare``: the metrics, the difference by cause and, with
    events, the ``kernels`` rows of the kernel diff that differ most (the figures of
    :meth:`pau.core.Comparison.render`, laid out as tables)."""
    la, lb = (str(x) for x in cmp.labels)
    items: list[Any] = [_console.table(["metric", la, lb, "difference"], [
        [r["metric"], _value(r["a"]), _value(r["b"]), _value(r["difference"])] for r in cmp.table.to_pylist()]), "",
        f"accelerator-seconds per preserved step, by cause ({la} - {lb}):", ""]
    has_cost = "cost_difference" in cmp.by_cause.schema.names
    items.append(_console.table(
        ["cause", "kind", la, lb, "difference"] + (["cost diff"] if has_cost else []),
        [[r["cause"], r["kind"], _value(r["a"]), _value(r["b"]), _value(r["difference"])]
         + ([_value(r["cost_difference"])] if has_cost else []) for r in cmp.by_cause.to_pylist()],
        justify="llrrr" + ("r" if has_cost else "")))
    kd = cmp.kernels
    if kd is not None:
        s = kd.summary(kernels)
        per = kd.steps_a is not None and kd.steps_b is not None
        counts = ", ".join(f"{v} {k}" for k, v in s["status"].items())
        items += ["", f"device work by name and kind ({la} - {lb}): {s['count']} names ({counts}); "
                  f"all device events {_span(s['total_ns_a'])} against {_span(s['total_ns_b'])}, "
                  f"difference {_span(s['difference_ns'])}"]
        if s["kernels"]:
            head = ["status", "kind", "count a", "count b", "total a", "total b", "difference"]
            head += ["per step a", "per step b", "per step diff"] if per else []
            cells = []
            for r in s["kernels"]:
                c = [r["status"], r["kind"], f"{r['count_a']:,}", f"{r['count_b']:,}", _span(r["total_ns_a"]),
                     _span(r["total_ns_b"]), _span(r["difference_ns"])]
                if per:
                    c += [_span(r["per_step_ns_a"]), _span(r["per_step_ns_b"]), _span(r["per_step_difference_ns"])]
                cells.append(c + [_name(r["name"])])
            items += ["", _console.table(head + ["name"], cells, justify="ll" + "r" * (len(head) - 2) + "l")]
            if s["left_out"]:
                items.append(f"... {s['left_out']} more (--format json or csv lists every row)")
            items.append("sorted by |total a - total b|, then the larger total; per step: ns per preserved step of "
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


def flatten(figures: dict) -> list[tuple[str, Any]]:
    """``(dotted.metric, value)`` for every leaf of a summary."""
    out: list[tuple[str, Any]] = []
    _flat("", figures, out)
    return out


def render_csv(figures: dict) -> str:
    rows = flatten(figures)
    t = pa.table({"metric": pa.array([r[0] for r in rows], pa.string()),
                  "value": pa.array(["" if r[1] is None else (repr(r[1]) if isinstance(r[1], float) else str(r[1]))
                                     for r in rows], pa.string())})
    sink = pa.BufferOutputStream()
    pcsv.write_csv(t, sink)
    return sink.getvalue().to_pybytes().decode()


def _json(value: Any) -> str:
    return json.dumps(value, indent=1, allow_nan=False)


# ---------------------------------------------------------------------------
# gates: `--gate ledger.goodput>=0.45`

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq}
_GATE = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(>=|<=|==|>|<)\s*(-?[0-9][0-9_.eE+\-]*)\s*$")


def check_gates(gates: Sequence[str], figures: dict) -> list[str]:
    """The gates that fail, each with its figure; a null or missing figure fails."""
    values = dict(flatten(figures))
    failed = []
    for g in gates:
        m = _GATE.match(g)
        if m is None:
            raise UsageError(f"--gate {g!r}: expected METRIC OP NUMBER, e.g. ledger.goodput>=0.45 "
                             f"(OP one of {', '.join(_OPS)})")
        name, op, number = m.group(1), m.group(2), float(m.group(3))
        key = name if name in values else next((k for k in values if k.endswith("." + name)), None)
        if key is None:
            raise UsageError(f"--gate {g!r}: no figure {name!r} in this report (see --format json)")
        v = values[key]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or (isinstance(v, float) and math.isnan(v)):
            failed.append(f"{g}: {key} is {v!r}, not a number")
        elif not _OPS[op](v, number):
            failed.append(f"{g}: {key} = {v!r}")
    return failed


# ---------------------------------------------------------------------------
# commands


def _status(flag: bool | None) -> _console.Status | None:
    """What stderr shows while the input is read (:class:`pau.views.console.Status`):
    ``--progress`` always (a terminal or not), ``--no-progress`` never; by default when
    stderr is a terminal and not with ``-q``."""
    if flag is False or (flag is None and _VERBOSITY["level"] < 0):
        return None
    status = _console.Status(sys.stderr, force=bool(flag))
    return status if status.active else None


def _read(path: str, fmt: str | None, args: argparse.Namespace) -> list[Run]:
    options: dict[str, Any] = {}
    status = _status(getattr(args, "progress", None))
    kind = (fmt or detect(path)) if os.path.exists(path) else None
    # the row-group bar while events are read applies to Parquet and pau runs only
    if kind in ("parquet", "pau"):
        options["progress"] = False if status is None else status
    if getattr(args, "align", None):
        options["align"] = args.align
    if getattr(args, "skip_bad", False):
        options["skip_bad"] = True
    if getattr(args, "samples", None):
        options["samples"] = args.samples if len(args.samples) > 1 else args.samples[0]
        if args.devices:
            options["devices"] = parse_devices(args.devices)
    elif getattr(args, "devices", None):
        raise UsageError("--devices maps the devices of --samples to ranks; give --samples too")
    on_invalid = getattr(args, "on_invalid", "raise")
    if status is None:
        return read_runs(path, format=fmt, on_invalid=on_invalid, **options)
    try:
        status.reading(path)
        if kind == "mllog" and os.path.isdir(path) and "samples" not in options:
            # a folder of result logs, one run each: read file by file, counting files
            files = mllog_files(path)
            runs: list[Run] = []
            for i, f in enumerate(files):
                runs += read_runs(f, format="mllog", on_invalid=on_invalid, **options)
                status.file_done(i + 1, len(files), f)
            return runs
        return read_runs(path, format=fmt, on_invalid=on_invalid, **options)
    finally:
        status.close()


def parse_devices(text: str) -> str | dict[str, int]:
    """``--devices index`` or ``--devices DEVICE=RANK,...`` (a device named by its
    index, UUID or bus id, as the telemetry names it; docs/telemetry.md)."""
    if text.strip() == "index":
        return "index"
    out: dict[str, int] = {}
    for item in text.split(","):
        dev, eq, rank = item.strip().rpartition("=")
        if not eq or not dev or not rank.strip().lstrip("-").isdigit():
            raise UsageError(f"--devices {text!r}: expected 'index' or DEVICE=RANK,... (e.g. 0=0,1=1 or "
                             "GPU-5c7f...=3)")
        if dev in out:
            raise UsageError(f"--devices: device {dev!r} given twice")
        out[dev] = int(rank)
    return out


def _builtin(args: argparse.Namespace) -> tuple[Run, str]:
    o = {k: (_BUILTIN[k] if getattr(args, k) is None else getattr(args, k)) for k in _BUILTIN}
    job = synth.training_job(ranks=o["ranks"], steps=o["steps"], seed=o["seed"], mtbf_s=150.0,
                             checkpoint_every=50, kernels_per_step=24,
                             straggler=(o["straggler"], 1.25) if o["straggler"] >= 0 else None)
    assert job.events is not None  # built with events
    title = (f"pau report: built-in synthetic run ({o['ranks']} ranks, {o['steps']} steps, "
             f"seed {o['seed']}, {job.events.num_rows:,} events, failures at a 150 s MTBF"
             + (f", straggler rank {o['straggler']} x1.25)" if o["straggler"] >= 0 else ")"))
    run = Run(events=job.events, lifecycle=job.lifecycle,
              metadata={"format": "synthetic", "sources": [], "assumed": [], "options": o})
    return run, title


def _with_lifecycle(run: Run, path: str) -> Run:
    """``--lifecycle FILE``: a lifecycle for a run that has none, whose ranks must be
    the events' ranks."""
    if run.lifecycle is not None:
        raise UsageError(f"--lifecycle {path}: the input has a lifecycle of its own "
                         f"({run.lifecycle.num_rows} records); drop --lifecycle")
    if run.events is None:
        raise UsageError(f"--lifecycle {path}: the input has no device events to cross it with. Fix: "
                         "report the lifecycle alone: a folder holding it as lifecycle.parquet is a run "
                         "(pau report FOLDER)")
    lc = pq.read_table(path)
    ev_ranks = set(np.unique(np.asarray(run.events["rank"])).tolist())
    lc_rank = np.asarray(lc["rank"].fill_null(-1)) if "rank" in lc.column_names else np.empty(0, np.int64)
    lc_ranks = set(np.unique(lc_rank[lc_rank >= 0]).tolist())
    if not lc_ranks:
        raise errors.PauError(f"--lifecycle {path}: no record names a rank (accountable records name "
                              "the ranks); fix the lifecycle")
    if ev_ranks - lc_ranks:
        missing = sorted(ev_ranks - lc_ranks)
        raise errors.PauError(
            f"--lifecycle {path}: ranks {_ranks(missing)} have events but no record in the lifecycle "
            f"(which names ranks {_ranks(sorted(lc_ranks))}). Fix: give the lifecycle of this run")
    return Run(events=run.events, lifecycle=lc, spans=run.spans, requests=run.requests, samples=run.samples,
               metadata={**run.metadata, "lifecycle_source": path}, warnings=list(run.warnings),
               quarantine=run.quarantine)


def _ranks(ranks: list[int]) -> str:
    shown = ", ".join(map(str, ranks[:10]))
    return shown + (f" ... ({len(ranks)} in all)" if len(ranks) > 10 else "")


#: -q: no warnings on stderr (errors still); -v: also what was read.
_VERBOSITY = {"level": 0}


def _note(text: str, level: int = 0) -> None:
    """A line on stderr at this verbosity: 0 warnings and notes (not with -q), 1 with -v."""
    if _VERBOSITY["level"] >= level:
        print(f"pau: {text}", file=sys.stderr)


def _warn(run: Run, err: TextIO) -> None:
    if _VERBOSITY["level"] >= 1:
        src = ", ".join(str(x) for x in run.metadata.get("sources", [])[:3])
        rows = ", ".join(f"{n} {getattr(run, n).num_rows:,}" for n in run.tables())
        print(f"pau: read {run.metadata.get('format')} ({src}): {rows or 'no table'}", file=err)
    if _VERBOSITY["level"] < 0:
        return
    for w in run.warnings:
        print(f"pau: warning: {w.code}: {_cli_words(w.message)}", file=err)


def _cli_words(message: str) -> str:
    """The API's advice in the command line's words."""
    return message.replace("pass on_invalid='quarantine'", "give --on-invalid quarantine").replace(
        "on_invalid='quarantine'", "--on-invalid quarantine")


def _emit(text: str, out: str) -> None:
    if out == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        with open(out, "w") as f:
            f.write(text if text.endswith("\n") else text + "\n")


def _write_table(table: pa.Table, path: str) -> None:
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    if ext == "parquet":
        pq.write_table(table, path)
    elif ext == "csv":
        plain = pa.table({n: (c.cast(pa.string()) if pa.types.is_dictionary(c.type) else c)
                          for n, c in zip(table.column_names, table.columns)})
        pcsv.write_csv(plain, path)
    elif ext == "json":
        with open(path, "w") as f:
            json.dump(table.to_pylist(), f, indent=1)
            f.write("\n")
    else:
        raise UsageError(f"--ledger {path!r}: unknown file type {ext!r}; use .parquet, .csv or .json")


_SLO_NAMES = ("ttft", "tpot", "e2e")


def parse_slo(items: Sequence[str]) -> dict[str, int]:
    """``["ttft=0.5", "e2e=30"]`` -> ``{"ttft": 500000000, "e2e": 30000000000}`` (ns,
    exact: the seconds are read as decimals, rounded half away from zero)."""
    out: dict[str, int] = {}
    for item in items:
        name, eq, value = item.partition("=")
        name = name.strip().lower()
        try:
            sec: decimal.Decimal | None = decimal.Decimal(value.strip().rstrip("s"))
        except decimal.InvalidOperation:
            sec = None
        if not eq or name not in _SLO_NAMES or sec is None or not sec.is_finite() or sec < 0:
            raise UsageError(f"--slo {item!r}: expected NAME=SECONDS with NAME one of {', '.join(_SLO_NAMES)} "
                             "and SECONDS >= 0, e.g. ttft=0.5")
        if name in out:
            raise UsageError(f"--slo {name} given twice")
        out[name] = int((sec * 10**9).to_integral_value(rounding=decimal.ROUND_HALF_UP))
    return out


def _report_figures(run: Run, args: argparse.Namespace) -> tuple[dict, Ledger | None]:
    """The run's summary (plus cost with --price), and its ledger."""
    has_ledger = run.events is not None or run.lifecycle is not None
    if args.as_of is not None and run.lifecycle is None:
        raise UsageError("--as-of applies to a lifecycle, and this input has none")
    if args.price is not None and run.lifecycle is None:
        raise UsageError("--price needs a lifecycle: cost per useful output is cost per preserved work, "
                         "and this input has none (give --lifecycle with its events)")
    if args.power is not None and args.price is None:
        raise UsageError("--power adds energy to the cost section: give --price too")
    if args.ledger is not None and not has_ledger:
        raise UsageError("--ledger: this input has no events or lifecycle, so no ledger table")
    slo = parse_slo(args.slo or [])
    if slo and run.requests is None:
        raise UsageError("--slo applies to serving requests, and this input has none")
    led = run.ledger(as_of=args.as_of) if has_ledger else None
    # the run's summary as a plain dict (the report adds its cost section to it)
    figures: dict[str, Any] = dict(run_figures(run, as_of=args.as_of, slo=slo or None, ledger=led))
    if led is not None and args.price is not None:
        power = pq.read_table(args.power) if args.power else None
        figures["cost"] = core.cost(led, {"per_accelerator_hour": args.price}, power=power)
    stack = (args.schedule, args.flops_per_step, args.peak_flops, args.accelerator)
    if any(x is not None for x in stack):
        if led is None or led.intervals is None:
            raise UsageError("--schedule, --flops-per-step, --peak-flops and --accelerator add layers to the stack "
                             "of a lifecycle ledger, and this input has no lifecycle")
        if args.flops_per_step is not None and args.peak_flops is None and args.accelerator is None:
            raise UsageError("--flops-per-step needs the peak it is measured against: --peak-flops F, or "
                             "--accelerator NAME --dtype TYPE (docs/outcome.md)")
    if led is not None and led.intervals is not None and (any(x is not None for x in stack) or args.price is not None):
        schedule = None
        if args.schedule is not None:
            got = read_sacct(args.schedule)
            schedule = got.result if isinstance(got, Quarantined) else got
        figures["layers"] = layers.layers(
            led, samples=run.samples, events=run.events, schedule=schedule, flops=args.flops_per_step,
            accelerator=args.accelerator, dtype=args.dtype, peak=args.peak_flops,
            price_per_accelerator_hour=args.price).summary()
    return figures, led


def _report(args: argparse.Namespace) -> int:
    if args.path is None:
        if args.input_format or args.lifecycle:
            raise UsageError("--input-format and --lifecycle apply to a PATH; the built-in run has its own")
        run, title = _builtin(args)
        runs = [run]
    else:
        given = [f"--{k}" for k in _BUILTIN if getattr(args, k) is not None]
        if given:
            raise UsageError(f"{', '.join(given)} set the built-in run and do not apply to {args.path}")
        runs = _read(args.path, args.input_format, args)
        title = f"pau report: {args.path} ({runs[0].metadata.get('format')})" if runs else ""
        if args.lifecycle:
            if len(runs) != 1:
                raise UsageError("--lifecycle applies to one run; the path holds several")
            runs = [_with_lifecycle(runs[0], args.lifecycle)]
    for run in runs:
        _warn(run, sys.stderr)
    if len(runs) != 1:
        if args.price is not None or args.power or args.ledger or args.as_of is not None:
            raise UsageError(f"--price, --power, --ledger and --as-of apply to one run; {args.path} holds "
                             f"{len(runs)} (report one file)")
        rows = [(r, r.summary()) for r in runs]
        figures: Any = {"runs": [f for _, f in rows]}
        text = render_runs(rows, title, args.path)
    else:
        run = runs[0]
        figures, led = _report_figures(run, args)
        table = None if led is None else led.table
        text = render_text(run, title, figures, table, args.price)
        outside = figures["events_outside_accountable"]
        if outside and outside["events"]:
            _note(f"warning: events_outside_accountable: {outside['events']:,} events "
                  f"({outside['ns']:,} ns) lie outside the accountable time of ranks "
                  f"{_ranks(outside['ranks'])}; the ledger does not count them")
        if args.ledger:
            assert table is not None  # --ledger without a ledger is refused by _report_figures
            _write_table(table, args.ledger)
            _note(f"ledger written to {args.ledger} ({table.num_rows} rows)")
    if args.format == "json":
        _emit(_json(figures), args.output)
    elif args.format in ("csv", "html") and "runs" in figures:
        raise UsageError(f"--format {args.format} shows one run; use --format json for several")
    elif args.format == "csv":
        _emit(render_csv(figures), args.output)
    elif args.format == "html":
        _emit(html_report.render(run, figures, led, title=title, price=args.price), args.output)
    else:
        _emit(text, args.output)
    failed = check_gates(args.gate or [], figures if "runs" not in figures else {})
    for f in failed:
        print(f"pau: gate failed: {f}", file=sys.stderr)
    return EXIT_GATE if failed else EXIT_OK


def _convert(args: argparse.Namespace) -> int:
    """Write a run in pau's layout (pau.read of the folder gives back an equal run), or
    with ``--to chrome-trace`` its ledger as tracks beside its device events."""
    if args.to == "chrome-trace":
        return _convert_chrome_trace(args)
    runs = _read(args.path, args.input_format, args)
    for run in runs:
        _warn(run, sys.stderr)
    if len(runs) == 1:
        out = runs[0].write(args.out, overwrite=args.overwrite)
        written = [f"{n} ({getattr(runs[0], n).num_rows:,} rows)" for n in runs[0].tables()]
        print(f"pau convert: {args.path} ({runs[0].metadata.get('format')}) -> {out}: {', '.join(written)}")
        return EXIT_OK
    # several runs (a folder of MLPerf logs): one run folder each, named after its source
    if os.path.isdir(args.out) and os.listdir(args.out) and not args.overwrite:
        raise errors.PauError(f"{args.out!r} exists and is not empty. Fix: pass --overwrite or another folder")
    os.makedirs(args.out, exist_ok=True)
    for i, run in enumerate(runs):
        src = os.path.splitext(os.path.basename(str(run.metadata.get("sources", [f"run{i}"])[0])))[0]
        run.write(os.path.join(args.out, f"{i:04d}-{src}"), overwrite=args.overwrite)
    print(f"pau convert: {args.path} -> {args.out}: {len(runs)} runs (one folder each)")
    return EXIT_OK


def _convert_chrome_trace(args: argparse.Namespace) -> int:
    """``pau convert IN OUT --to chrome-trace``: one JSON file (``.gz``: compressed)."""
    out = args.out
    if os.path.isdir(out):
        raise UsageError(f"--to chrome-trace writes a file and {out!r} is a folder: give a file name, e.g. trace.json")
    if os.path.exists(out) and not args.overwrite:
        raise errors.PauError(f"{out!r} exists. Fix: pass --overwrite or another file name")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise errors.PauError(f"{out!r}: no folder {parent!r}. Fix: create it, or write elsewhere")
    runs = _read(args.path, args.input_format, args)
    if len(runs) != 1:
        raise UsageError(f"--to chrome-trace writes one run; {args.path} holds {len(runs)} (convert one file)")
    run = runs[0]
    _warn(run, sys.stderr)
    doc_path = write_chrome_trace(run, out, overwrite=args.overwrite)
    events = 0 if run.events is None else run.events.num_rows
    print(f"pau convert: {args.path} ({run.metadata.get('format')}) -> {doc_path}: Chrome trace, "
          f"{events:,} device events beside the ledger's tracks (open in https://ui.perfetto.dev or chrome://tracing)")
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    if args.kernels < 0:
        raise UsageError(f"--kernels {args.kernels}: give a number of rows >= 0")
    sides = []
    for path, fmt in ((args.a, args.input_format_a), (args.b, args.input_format_b)):
        runs = _read(path, fmt, args)
        if len(runs) != 1:
            raise UsageError(f"pau compare: {path} holds {len(runs)} runs; compare two single runs")
        _warn(runs[0], sys.stderr)
        sides.append(runs[0])
    if (args.price_a is None) != (args.price_b is None):
        raise UsageError("--price-a and --price-b go together")
    pa_ = {"per_accelerator_hour": args.price_a} if args.price_a is not None else None
    pb_ = {"per_accelerator_hour": args.price_b} if args.price_b is not None else None
    cmp = core.compare(sides[0], sides[1], prices_a=pa_, prices_b=pb_, labels=(args.a, args.b))
    if args.format == "json":  # every row of the kernel diff (a file for tools)
        _emit(_json(cmp.summary()), args.output)
    elif args.format == "csv":
        _emit(render_compare_csv(cmp), args.output)
    elif args.format == "html":
        _emit(html_report.render_compare(cmp, title=f"pau compare: {args.a} against {args.b}",
                                         kernels=max(args.kernels, 30)), args.output)
    else:
        _emit(render_compare(cmp, args.kernels), args.output)
    return EXIT_OK


def _cell(v: Any) -> str:
    """A CSV cell: ints exact, floats as repr (shortest round trip), None empty."""
    return "" if v is None else repr(v) if isinstance(v, float) else str(v)


def render_compare_csv(cmp: core.Comparison) -> str:
    """``pau compare --format csv``: one long table, ``section, name, kind, status,
    quantity, a, b, difference``; sections ``metrics``, ``by_cause`` and ``kernels``
    (every row of the kernel diff, one line per quantity: count, total_ns,
    per_step_ns). See docs/compare.md."""
    rows: list[tuple[Any, ...]] = []
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
    return sink.getvalue().to_pybytes().decode()


def _check_output(args: argparse.Namespace) -> None:
    """Before any work: the report's output can be written, and an HTML report has
    its plotting library."""
    out = getattr(args, "output", "-")
    if out != "-":
        folder = os.path.dirname(os.path.abspath(out))
        if os.path.isdir(out):
            raise UsageError(f"-o {out}: is a folder; give a file name")
        if not os.path.isdir(folder):
            raise UsageError(f"-o {out}: the folder {folder} does not exist")
        if not os.access(folder, os.W_OK) or (os.path.exists(out) and not os.access(out, os.W_OK)):
            raise UsageError(f"-o {out}: not writable")
    if getattr(args, "format", None) == "html" and importlib.util.find_spec("matplotlib") is None:
        raise UsageError("--format html draws its plots with matplotlib, which is not installed. "
                         "Fix: pip install 'pau[report]'")


def _ingest(args: argparse.Namespace) -> int:
    """``pau ingest SOURCE... -o FLEET``: :func:`pau.core.ingest`, a summary line on stderr."""
    labels: list[Any] = [] if args.labels is None else [args.labels]
    static = {}
    for item in args.label or []:
        k, eq, v = item.partition("=")
        if not eq or not k.strip():
            raise UsageError(f"--label {item}: expected KEY=VALUE")
        static[k.strip()] = v
    labels.append(static)
    client = None
    if args.dask:
        if importlib.util.find_spec("distributed") is None:
            raise UsageError("--dask runs on a Dask cluster, and dask.distributed is not installed. Fix: pip install "
                             "'pau[dask]'")
        from distributed import Client  # the optional extra

        client = Client(args.dask)
    status = _status(args.progress)

    def progress(p: Any) -> None:  # sources done of those found so far
        assert status is not None
        status.file_done(p.partitions_done, p.partitions_total, f"{p.rows_done:,} runs added")

    try:
        res = core.ingest(args.sources, args.fleet, labels=labels, workers=args.workers, client=client,
                          skip_bad=args.skip_bad, progress=False if status is None else progress)
    except IngestError as exc:  # in the command line's words
        raise errors.PauError(str(exc).replace("pass skip_bad=True (pau ingest --skip-bad)",
                                               "give --skip-bad")) from None
    finally:
        if status is not None:
            status.close()
        if client is not None:
            client.close()
    _note(f"{args.fleet}: {res.added:,} runs added ({res.warned:,} with warnings: the runs table's warnings column), "
          f"{res.present:,} already there, {res.refused:,} refused, {res.passed_over:,} files of no format pau reads "
          "(the refusals table lists both; -v prints it)")
    if _VERBOSITY["level"] >= 1:
        refusals = core.read_fleet(args.fleet).refusals.sort_by("source")
        for src, fmt, why in zip(*(refusals[c].to_pylist() for c in ("source", "format", "reason"))):
            _note(f"{'refused' if fmt else 'passed over'}: {src} ({fmt or 'no format'}): {_cli_words(why)}", 1)
    return EXIT_OK


def _fleet(args: argparse.Namespace) -> int:
    """``pau fleet FLEET``: :meth:`pau.fleet.Fleet.rollup` in text, json, csv, html or openmetrics."""
    fleet = core.read_fleet(args.fleet)
    by = [k.strip() for k in args.by.split(",") if k.strip()]
    r = fleet.rollup(by=by, every=args.every, since=args.since, until=args.until, where=args.where,
                     cost_model=args.cost_model, tz=args.tz)
    for w in r.warnings:
        _note(f"warning: {w}")
    figures = fleet_text.figures(r)
    if args.format == "json":
        text = json.dumps(figures, indent=1, allow_nan=False)
    elif args.format == "csv":
        sink = pa.BufferOutputStream()
        pcsv.write_csv(r.table, sink)
        text = sink.getvalue().to_pybytes().decode()
    elif args.format == "openmetrics":
        text = openmetrics.render(r, id_labels=args.id_labels)
    elif args.format == "html":
        text = fleet_html.render(r, title=f"pau fleet: {os.path.basename(os.path.abspath(args.fleet))}")
    else:
        text = fleet_text.render(r)
    _emit(text, args.output)
    failed = check_gates(args.gate or [], {k: figures[k] for k in ("total", "last_period") if figures[k]})
    for f in failed:
        print(f"pau: gate failed: {f}", file=sys.stderr)
    return EXIT_GATE if failed else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """``pau`` with these arguments (``sys.argv[1:]`` by default): the exit code."""
    return run(parser().parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Carry out a parsed command line (:func:`pau._args.parser`): the exit code."""
    _VERBOSITY["level"] = -1 if args.quiet else min(args.verbose, 1)
    if args.quiet:
        _jit.silence()  # nor the one line of a first compile
    try:
        _check_output(args)
        if args.command == "compare":
            return _compare(args)
        if args.command == "ingest":
            return _ingest(args)
        if args.command == "fleet":
            return _fleet(args)
        return _convert(args) if args.command == "convert" else _report(args)
    except (UsageError, errors.OptionError) as exc:
        print(f"pau: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (errors.PauError, FileNotFoundError) as exc:
        print(f"pau: {_cli_words(str(exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except errors.Interrupted as exc:  # Ctrl-C: say what was kept
        print(f"\npau: {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("\npau: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `pau report | head`: the reader left; not an error
        sys.stderr.close()
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
