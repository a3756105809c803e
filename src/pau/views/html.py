"""The HTML report: one self-contained file of tables and plots.

``pau report --format html`` writes it; :func:`render` builds it from the figures
:func:`pau.run.run_figures` computed (the same dict the text, JSON and CSV reports
print, embedded in the page as JSON under ``<script type="application/json"
id="pau-figures">``), the ledger's state intervals for the timeline, and the run's
lifecycle for the step plot. The page loads nothing: the style is inline and the plots
are inline SVG drawn by matplotlib (the ``pau[report]`` extra); it runs no script.
Every name a trace supplies is escaped.
"""

from __future__ import annotations

import html
import json
from typing import Any, Callable, Mapping, Sequence

from pau.readers import mlperf_rules as _mlperf
from pau.views import plots
from pau.figures.economics import RequestLedger
from pau.views.text import (COST_PER, LATENCY_STATS, Dur, column_unit, count, in_column, latency_unit, metric_row, money,
                            MLPERF_COMPARE_NOTE, mlperf_rows, render_outcome, unit_columns)
from pau.engine._format import duration, html_table, pct
from pau.engine.ledger import Ledger
from pau.figures.compare import Comparison
from pau.run import Run

__all__ = ["render", "render_compare"]

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1100px;
       color: #222; padding: 0 16px; }
h1 { font-size: 20px; margin-bottom: 4px; } h2 { font-size: 16px; margin-top: 28px;
       border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.sub { color: #666; font-size: 13px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 16px 0; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; min-width: 130px; }
.card .v { font-size: 18px; font-weight: 600; } .card .k { font-size: 12px; color: #666; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { padding: 3px 10px; border-bottom: 1px solid #eee; text-align: left; }
th { background: #f6f6f6; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums;
       white-space: nowrap; }
td.name { min-width: 300px; max-width: 560px; overflow-wrap: anywhere; font-size: 12px; }
.scroll { overflow-x: auto; }
figure { margin: 12px 0; } figure svg { max-width: 100%; height: auto; }
.warn { color: #8a4b00; } .note { color: #555; font-size: 13px; }
"""


def _card(key: str, value: str) -> str:
    return f'<div class="card"><div class="v">{html.escape(value)}</div><div class="k">{html.escape(key)}</div></div>'


def _plot(make: Callable[[], Any], what: str) -> str:
    """A figure inlined as SVG, in a <figure> named for the tests and the reader."""
    fig = make()
    return f'<figure class="plot" data-plot="{html.escape(what)}">{plots.svg(fig)}</figure>'


#: What the JSON of the figures must not hold raw inside ``<script>`` (Django's
#: ``json_script`` escapes the same three): a ``<!--``, ``<script`` or ``</script``
#: in a kernel name would change how the HTML parser reads the rest of the page.
_JSON_SCRIPT_ESCAPES = {ord("<"): "\\u003C", ord(">"): "\\u003E", ord("&"): "\\u0026"}


def _json_script(figures: Mapping[str, Any]) -> str:
    """The figures as JSON inside ``<script type="application/json">``, every ``<``,
    ``>`` and ``&`` written as a JSON escape (``JSON.parse`` gives the same text back)."""
    text = json.dumps(figures, allow_nan=False, sort_keys=False).translate(_JSON_SCRIPT_ESCAPES)
    return f'<script type="application/json" id="pau-figures">{text}</script>'


def _page(title: str, subtitle: str, body: list[str], figures: Mapping[str, Any]) -> str:
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>", f"<style>{_STYLE}</style>", "</head>", "<body>",
        f"<h1>{html.escape(title)}</h1>", f'<div class="sub">{html.escape(subtitle)}</div>',
        *body, _json_script(figures), "</body>", "</html>", ""])


# ---------------------------------------------------------------------------
# one run


def _activity_table(per_rank: Sequence[Mapping[str, Any]]) -> str:
    acts = [a for a in plots.ACTIVITY_COLORS if any(r["activity_ns"].get(a) for r in per_rank)]
    rows: list[list[Any]] = []
    totals = dict.fromkeys(acts, 0)
    for r in per_rank:
        rows.append([r["rank"]] + [Dur(r["activity_ns"].get(a, 0), " " + pct(r["activity_ns"].get(a, 0),
                                                                             r["span_ns"]).strip())
                                   for a in acts] + [Dur(r["span_ns"])])
        for a in acts:
            totals[a] += r["activity_ns"].get(a, 0)
    whole = sum(totals.values())
    rows, foot = unit_columns(rows, [["total"] + [Dur(totals[a], " " + pct(totals[a], whole).strip()) for a in acts]
                                     + [Dur(whole)]])
    return html_table(["rank"] + acts + ["span"], rows + foot, right=range(1, len(acts) + 2))


def _goodput_tables(s: Mapping[str, Any]) -> str:
    acc = s["accountable_ns"]
    [rows] = unit_columns([[state, Dur(ns), pct(ns, acc).strip()] for state, ns in s["state_ns"].items() if ns])
    out = [html_table(["state", "accelerator time", "share"], rows, right=(1, 2))]
    if s["badput_by_cause_ns"]:
        causes = sorted(s["badput_by_cause_ns"].items(), key=lambda kv: -kv[1])
        out.append("<p>rolled-back work by the failure that caused it</p>")
        out.append(html_table(["cause", "accelerator time", "share"],
                              unit_columns([[c, Dur(ns), pct(ns, acc).strip()] for c, ns in causes])[0],
                              right=(1, 2)))
    return "\n".join(out)


def _top_table(rows: Sequence[Mapping[str, Any]]) -> str:
    return html_table(["time (%)", "total", "count", "mean", "kind", "name"],
                      unit_columns([[f"{100 * r['share']:.1f}", Dur(r["total_ns"]), f"{r['count']:,}", Dur(r["mean_ns"]),
                                     r["kind"], _name(r["name"])] for r in rows])[0], right=(0, 1, 2, 3), names=(5,))


def _name(name: str, keep: int = 110) -> Any:
    """A name for a table cell: cut to ``keep`` characters, the whole name as its tooltip."""
    return name if len(name) <= keep else (name[: keep - 3] + "...", name)


def _steps_table(steps: Mapping[str, Any]) -> str:
    [rows] = unit_columns([[r["rank"], f"{r['steps']:,}", Dur(r["median_ns"]), Dur(r["p90_ns"]), Dur(r["max_ns"])]
                           for r in steps["per_rank"]])
    return html_table(["rank", "steps", "median", "p90", "max"], rows, right=(0, 1, 2, 3, 4))


def _stragglers(steps: Mapping[str, Any]) -> str:
    s = steps["stragglers"]
    named = ", ".join(f"rank {p['rank']} (the others waited {duration(p['charged_ns'])} of accelerator time for it)"
                      for p in s["persistent"])
    return (f"<p>stragglers: {html.escape(named or 'none persistent')}; all waits for the slowest rank of each "
            f"step: {html.escape(duration(s['wait_ns']))} of accelerator time</p>")


def _cards(figures: Mapping[str, Any], run: Run) -> str:
    s = figures.get("ledger")
    cards = []
    if s is not None:
        cards.append(_card("accountable accelerator time", duration(s["accountable_ns"])))
        if s["goodput"] is not None:
            cards.append(_card("goodput", f"{100 * s['goodput']:.1f} %"))
            cards.append(_card("productive accelerator time", duration(s["productive_ns"])))
        if s["goodput_strict"] is not None:
            cards.append(_card("strict goodput (productive × compute)", f"{100 * s['goodput_strict']:.1f} %"))
        if s["failures"] is not None:
            cards.append(_card("failures", f"{s['failures']}" + (f", MTBF {s['mtbf_s']:,.0f} s" if s["mtbf_s"] else "")))
        if s["preserved_steps"]:
            cards.append(_card("preserved steps", f"{s['preserved_steps']:,}"))
            cards.append(_card("accelerator time per preserved step",
                               duration(s["accountable_ns_per_preserved_step"])))
    mp = figures.get("mlperf") or {}
    ttt = mp.get("time_to_train_ns", run.metadata.get("time_to_train_ns"))
    if ttt is not None:
        cards.append(_card("time to train", duration(ttt)))
    if mp:   # an MLPerf log: a status that is not success, epochs and blocks, the quality target
        if mp.get("status") != "success":
            st = mp.get("status")
            cards.append(_card("MLPerf status: " + ("the log ends before the run stopped, " if st == "no_run_stop"
                                                    else "") + "not a valid result",
                               "no run_stop" if st == "no_run_stop" else str(st)))
        cards.append(_card("epochs and blocks run", _mlperf.progress_text(mp.get("epochs") or 0, mp.get("blocks") or 0)))
        ev = mp.get("eval")
        if ev:
            text = _mlperf.verdict_text(ev)
            if ev["reached"] is None:
                cards.append(_card("MLPerf quality target", f"none known: {text}"))
            else:
                shown, verdict = text.rsplit(": ", 1)
                cards.append(_card(f"{shown} (MLPerf quality target, round {ev['round']})", verdict))
    req = figures.get("requests")
    if req is not None:
        att = req["slo_attainment"]
        cards.append(_card("requests offered", f"{req['offered']:,}"))
        cards.append(_card("SLO attainment", "-" if att is None else f"{100 * att:.1f} %"))
    return '<div class="cards">' + "".join(cards) + "</div>" if cards else ""


def _requests(req: Mapping[str, Any], slo: Mapping[str, int]) -> str:
    rows = [[k, f"{req[k]:,}"] for k in ("offered", "accepted", "late", "failed", "rejected", "cancelled",
                                         "quarantined") if req.get(k) is not None]
    rate = req["request_goodput_per_s"]
    rows.append(["request goodput", "-" if rate is None else f"{rate:,.3f} accepted/s"])
    rows.append(["window", duration(req["window_ns"])])
    rows.append(["accepted tokens", f"{req['accepted_tokens']:,}"])
    slos = ", ".join(f"{k} <= {v / 1e9:g} s" for k, v in slo.items()) or "none given: every completed request is accepted"
    return html_table(["figure", "value"], rows, right=(1,)) + f"<p class=\"note\">SLOs: {html.escape(slos)}</p>"


def _cost(c: Mapping[str, Any], price: float, currency: str) -> str:
    def amount(v: float) -> str:
        return money(v).replace("$", "") + f" {currency}"

    rows = [["total", amount(c["total_cost"])]]
    if c.get("waste_cost") is not None:
        rows.append(["of which waste", amount(c["waste_cost"])])
    for key, label in COST_PER:
        if c.get(key) is not None:
            rows.append([label, amount(c[key])])
    for cause, v in sorted((c.get("waste_cost_by_cause") or {}).items(), key=lambda kv: -kv[1]):
        rows.append([f"waste: {cause}", amount(v)])
    for key in sorted(k for k in c if k.startswith("energy") and isinstance(c[k], (int, float))):
        rows.append([key.removesuffix("_j").replace("_", " "), f"{c[key]:,.4g} J"])
    return (f"<p>at {html.escape(amount(price))} per accelerator-hour</p>"
            + html_table(["figure", "value"], rows, right=(1,)))


def _latency_table(lat: Mapping[str, Any]) -> str:
    """TTFT, TPOT and E2E: one row each, in the unit of its largest figure (named in the row)."""
    rows = []
    for key, r in lat.items():
        if not r["count"]:
            rows.append([key, "0"] + ["-"] * len(LATENCY_STATS))
            continue
        name, size = latency_unit(r)
        rows.append([f"{key} ({name})", f"{r['count']:,}"]
                    + ["-" if r[k] is None else f"{r[k] / size:,.3f}" for k in LATENCY_STATS])
    return html_table(["metric", "count", *LATENCY_STATS], rows, right=range(1, len(LATENCY_STATS) + 2))


def render(run: Run, figures: Mapping[str, Any], ledger: Ledger | None, *, title: str,
           price: float | None = None, currency: str = "USD", requests: RequestLedger | None = None) -> str:
    """The HTML report of one run.

    Parameters
    ----------
    run : Run
    figures : dict
        :func:`pau.run.run_figures` of the run (with ``cost`` when priced): every
        number on the page comes from it.
    ledger : Ledger or None
        The ledger the figures were computed from; its state intervals draw the
        timeline.
    title : str
    price, currency :
        The price per accelerator-hour the ``cost`` figures were computed at.
    requests : RequestLedger, optional
        The serving requests the ``requests`` figures were computed from
        (:func:`pau.core.requests`); their latencies draw the latency plot.
    """
    fmt = figures.get("format") or "run"
    sources = _sources(run.metadata.get("sources", []))
    body = [_cards(figures, run)]
    s = figures.get("ledger")
    body += _activity_section(figures, run)
    body += _idle_section(figures)
    if s is not None and s["goodput"] is not None:
        body += _goodput_section(figures, s, run, ledger)
    body += _steps_section(figures, run)
    body += _telemetry_section(figures)
    req = figures.get("requests")
    if req is not None:
        body += _requests_section(req, figures, requests)
    if "cost" in figures and price is not None:
        body += ["<h2>Cost</h2>", _cost(figures["cost"], price, currency)]
    body += _outcome_section(figures)
    body += _warnings_section(figures, run)
    if s is None and req is None:
        body.append("<p>this run holds no table that gives figures</p>")
    return _page(title, f"{fmt} · {sources}", body, figures)


def _activity_section(figures: Mapping[str, Any], run: Run) -> list[str]:
    """Device activity per rank, and communication with its overlap with compute."""
    body: list[str] = []
    per_rank = figures.get("per_rank")
    if per_rank and run.events is not None:  # without events every rank's time is "unknown"
        body += ["<h2>Device activity per rank</h2>",
                 '<p class="note">exclusive time: each ns counted once, under the highest-priority kind '
                 "active (exposed communication is communication not hidden under compute)</p>"]
        body.append(_plot(lambda: plots.activity_bars(figures), "activity"))
        body.append(_activity_table(per_rank))
        ov = figures.get("overlap")
        if ov and ov["communication_ns"]:
            rows, foot = unit_columns(
                [[r["rank"], Dur(r["communication_ns"]), Dur(r["overlap_ns"]), Dur(r["communication_ns"] - r["overlap_ns"]),
                  "-" if r["ratio"] is None else f"{100 * r['ratio']:.1f} %"] for r in ov["per_rank"]],
                [["total", Dur(ov["communication_ns"]), Dur(ov["overlap_ns"]), Dur(ov["exposed_ns"]),
                  "-" if ov["ratio"] is None else f"{100 * ov['ratio']:.1f} %"]])
            body += ["<h2>Communication and its overlap with compute</h2>",
                     '<p class="note">all communication (exposed or hidden under compute), the part under compute, '
                     "and the overlap ratio |communication ∩ compute| / |communication| (pau.core.overlap)</p>",
                     html_table(["rank", "communication", "under compute", "exposed", "overlap ratio"], rows + foot,
                                right=range(0, 5))]
    return body


def _idle_section(figures: Mapping[str, Any]) -> list[str]:
    """Idle by cause, when some idle has a cause."""
    body: list[str] = []
    idle = figures.get("idle_by_cause")
    if idle and any(v for k, v in idle["ns"].items() if k != "idle.other"):
        causes = list(idle["ns"])
        [rows] = unit_columns([[r["rank"]] + [Dur(r["ns"].get(c, 0), " " + pct(r["ns"].get(c, 0),
                                                                            sum(r["ns"].values())).strip())
                                              for c in causes] + [Dur(sum(r["ns"].values()))]
                               for r in idle["per_rank"]])
        body += ["<h2>Idle by cause</h2>",
                 '<p class="note">host_wait: the stream drained before the next kernel\'s launch call began; '
                 "data_wait: a data loader ran; sync_wait: the host was in a synchronize call; "
                 "the causes take precedence in that order from data_wait (docs/idle.md)</p>",
                 _plot(lambda: plots.idle_bars(idle), "idle"),
                 html_table(["rank"] + causes + ["idle"], rows, right=range(1, len(causes) + 2))]
    return body


def _goodput_section(figures: Mapping[str, Any], s: Mapping[str, Any], run: Run, ledger: Ledger | None) -> list[str]:
    """Goodput (the waterfall and its tables), the layers, recovery and the lifecycle timeline."""
    body = ["<h2>Goodput</h2>", _plot(lambda: plots.goodput_waterfall(s), "waterfall"), _goodput_tables(s)]
    lay = figures.get("layers")
    if lay and lay["layers"]:
        u = column_unit([r["ns"] for r in lay["layers"]])
        body += ["<h2>Layers</h2>",
                 '<p class="note">from accountable accelerator time down; each factor is the share of the '
                 "layer above that is left, and the factors multiply to the product</p>",
                 html_table(["layer", "accelerator time", "factor", "lost (largest first)"],
                            [[r["name"], in_column(r["ns"], u), "" if r["factor"] is None else f"{r['factor']:.4f}",
                              ", ".join(f"{k} {in_column(v, u)}" for k, v in
                                        sorted(r["lost_ns"].items(), key=lambda kv: -kv[1]))]
                             for r in lay["layers"]], right=(1, 2), names=(3,)),
                 f'<p class="note">product {lay["product"]:.4f}'
                 + ("; left out: " + html.escape("; ".join(f"{k} ({v})" for k, v in lay["left_out"].items()))
                    if lay["left_out"] else "") + "</p>"]
    rec = figures.get("recovery")
    if rec and rec["failures"]:
        ttr, ttp = rec["mean_to_first_step_s"], rec["mean_to_progress_s"]
        body += ["<h2>Recovery</h2>", html_table(["figure", "value"], [
            ["failures", f"{rec['failures']:,}"],
            ["per 1,000 accelerator-hours", f"{rec['failures_per_1000_accelerator_hours']:,.1f}"],
            ["by cause", ", ".join(f"{k} {v['failures']}" for k, v in rec["by_cause"].items())],
            ["mean time to the next first step", "-" if ttr is None else duration(int(ttr * 1e9))],
            ["mean time to progress back", "-" if ttp is None else duration(int(ttp * 1e9))],
            ["not recovered", f"{rec['not_recovered']}"],
            ["attempts in restart loops", f"{rec['restart_loop_attempts']}"],
            ["waste as accelerators idle the whole time", f"{rec['waste_equivalent_accelerators']:,.2f}"]],
            right=(1,))]
    if ledger is not None and ledger.intervals is not None:
        body += ["<h2>Lifecycle timeline</h2>", _plot(lambda: plots.state_timeline(ledger, run.lifecycle),
                                                     "timeline")]
    return body


def _steps_section(figures: Mapping[str, Any], run: Run) -> list[str]:
    """Steps and stragglers, and the top device work."""
    body: list[str] = []
    steps = figures.get("steps")
    if steps:
        slow = [p["rank"] for p in steps["stragglers"]["persistent"]]
        body += ["<h2>Steps</h2>", _plot(lambda: plots.step_distribution(run.lifecycle, slow), "steps"),
                 _steps_table(steps), _stragglers(steps)]
    top = figures.get("top_kernels")
    if top:
        body += ["<h2>Top device work</h2>", '<p class="note">by total time; share of all device event time</p>',
                 _plot(lambda: plots.top_kernel_bars(top), "top_kernels"), _top_table(top)]
    return body


def _telemetry_section(figures: Mapping[str, Any]) -> list[str]:
    """Hardware telemetry per state and activity, and NVTX ranges."""
    body: list[str] = []
    tel = figures.get("telemetry")
    if tel:
        body += ["<h2>Hardware telemetry</h2>",
                 '<p class="note">each metric\'s time-weighted mean over the time its samples cover, per state '
                 "and activity; energy for power</p>",
                 html_table(["state", "activity", "metric", "time", "covered", "mean", "energy"],
                            unit_columns([[r["state"], r["activity"], r["metric"], Dur(r["duration_ns"]),
                              pct(r["covered_ns"], r["duration_ns"]).strip(),
                              "-" if r["mean"] is None else f"{r['mean']:,.4g}",
                              "" if r["energy_j"] is None else f"{r['energy_j']:,.4g} J"] for r in tel])[0],
                            right=(3, 4, 5, 6))]
    nvtx = figures.get("nvtx")
    if nvtx:
        body += ["<h2>NVTX ranges</h2>", '<p class="note">by total time, as nsys stats\' NVTX range summary; share '
                 "of all closed ranges' time</p>",
                 html_table(["time (%)", "total", "instances", "mean", "min", "max", "range"],
                            unit_columns([["-" if r["share"] is None else f"{100 * r['share']:.1f}", Dur(r["total_ns"]),
                                           f"{r['count']:,}", Dur(r["mean_ns"]), Dur(r["min_ns"]), Dur(r["max_ns"]),
                                           _name(r["name"])] for r in nvtx])[0], right=(0, 1, 2, 3, 4, 5), names=(6,))]
    return body


def _requests_section(req: Mapping[str, Any], figures: Mapping[str, Any], requests: RequestLedger | None) -> list[str]:
    """The serving requests, and their latency plot."""
    body = ["<h2>Requests</h2>", _requests(req, figures.get("slo_ns") or {})]
    lat = req.get("latency")
    if requests is not None and lat and any(r["count"] for r in lat.values()):
        body += ["<h2>Latency</h2>",
                 '<p class="note">the completed requests (accepted, and late against the SLOs): each one a point '
                 "of the distribution; p50, p90 and p99 marked (linear percentiles, as AIPerf and LLMPerf)</p>",
                 _plot(lambda: plots.request_latencies(requests.table, lat), "latency"), _latency_table(lat)]
    return body


def _outcome_section(figures: Mapping[str, Any]) -> list[str]:
    """The outcome figures, a line each."""
    outcome = render_outcome(figures).strip()
    if not outcome:
        return []
    return ["<h2>Outcome</h2>",
            '<p class="note">checkpoint advice (pau.core.checkpoint_advice), straggler scores, MFU and HFU, MPG, '
            "ETTR and progress protection (docs/outcome.md)</p>",
            "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in outcome.splitlines()) + "</ul>"]


def _warnings_section(figures: Mapping[str, Any], run: Run) -> list[str]:
    """The run's warnings and the events outside accountable time."""
    outside = figures.get("events_outside_accountable")
    notes = [f"{w.code}: {w.message}" for w in run.warnings]
    if outside and outside["events"]:
        notes.append(f"{count(outside['events'], 'event')} ({duration(outside['ns'])}) lie outside the accountable time "
                     f"of ranks {', '.join(map(str, outside['ranks'][:20]))}: not counted in the ledger")
    if not notes:
        return []
    return ["<h2>Warnings</h2>", "<ul>" + "".join(f'<li class="warn">{html.escape(n)}</li>' for n in notes) + "</ul>"]


def _sources(paths: Sequence[Any], shown: int = 3) -> str:
    """The page's source line: the first ``shown`` files and how many more there are."""
    names = [str(x) for x in paths]
    if not names:
        return "built in"
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more:,} more file{'' if more == 1 else 's'} ({len(names):,} in all)"
                                       if more > 0 else "")


# ---------------------------------------------------------------------------
# two runs


def render_compare(comparison: Comparison, *, title: str, kernels: int = 30,
                   mlperf: Mapping[str, Any] | None = None) -> str:
    """The HTML page of ``pau compare``: the metric table, the difference by cause
    (plot and table) and, when both runs have device events, the kernels and copies
    that changed most (plot, and the first ``kernels`` rows of the diff). The page
    embeds ``comparison.summary()`` (with ``mlperf``, the per-trained-model figures of two
    MLPerf runs), what ``pau compare --format json`` prints."""
    la, lb = comparison.labels
    figures = {**comparison.summary(), **({"mlperf": dict(mlperf)} if mlperf else {})}
    # tables name the runs a and b (the labels can be long paths); the page says which is which
    metric_rows = [metric_row(r) for r in comparison.table.to_pylist()]
    cause_rows = comparison.by_cause.to_pylist()
    body = [] if not mlperf else [
        "<h2>MLPerf: per trained model</h2>", f'<p class="note">{html.escape(MLPERF_COMPARE_NOTE)}</p>',
        html_table(["figure", "a", "b", "a - b"], mlperf_rows(mlperf), right=(1, 2, 3))]
    body += ["<h2>Figures</h2>", html_table(["metric", "a", "b", "a - b"], metric_rows, right=(1, 2, 3)),
            "<h2>Difference by cause</h2>",
            '<p class="note">accelerator time per preserved step</p>']
    if any(r["difference"] is not None and r["cause"] != "total" and (r["a"] or r["b"]) for r in cause_rows):
        body.append(_plot(lambda: plots.cause_differences(cause_rows, (la, lb)), "causes"))
    body.append(html_table(["cause", "kind", "a", "b", "a - b"],
                           unit_columns([[r["cause"], r["kind"]] + [Dur(None if v is None else v * 10**9)
                                                                    for v in (r["a"], r["b"], r["difference"])]
                                         for r in cause_rows])[0], right=(2, 3, 4)))
    kd = comparison.kernels
    if kd is not None and kd.rows:
        counts = ", ".join(f"{v} {k}" for k, v in kd.status_counts().items())
        body += ["<h2>Kernels and copies that changed</h2>",
                 f'<p class="note">device work by name and kind: {html.escape(counts)}; differences are '
                 f"{html.escape(la)} minus {html.escape(lb)}</p>"]
        if any(r["difference_ns"] for r in kd.rows):
            body.append(_plot(lambda: plots.kernel_changes(kd.rows, (la, lb)), "kernels"))
        shown = kd.rows[:kernels]
        body.append(html_table(
            ["name", "kind", "status", "count a", "count b", "total a", "total b", "a - b"],
            unit_columns([[_name(r["name"]), r["kind"], r["status"], f"{r['count_a']:,}", f"{r['count_b']:,}",
                           Dur(r["total_ns_a"]), Dur(r["total_ns_b"]), Dur(r["difference_ns"])] for r in shown])[0],
            right=(3, 4, 5, 6, 7), names=(0,)))
        if len(kd.rows) > len(shown):
            body.append(f'<p class="note">{len(kd.rows) - len(shown):,} more rows in --format json or csv</p>')
    return _page(title, f"a = {la}; b = {lb}", body, figures)
