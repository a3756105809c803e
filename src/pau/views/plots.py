"""Plots of a run's figures, as matplotlib figures (the optional extra ``pau[report]``).

Each function takes what :meth:`pau.Run.summary` (or :meth:`pau.core.Ledger.summary`)
already computed, or the ledger's state intervals, and draws it; none computes a
figure of its own, so a plot shows exactly the numbers of the text and JSON reports.
They return a :class:`matplotlib.figure.Figure` (no pyplot state, no display needed):
in a notebook it shows itself; :func:`svg` writes it as an SVG string, which is what
the HTML report inlines.

Trace-supplied names (kernels, causes) are drawn as plain text: mathtext is off, so a
``$`` in a kernel name is a dollar sign, and the SVG writer escapes ``<``, ``>`` and
``&``.
"""

from __future__ import annotations

import io
import re
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine._format import unit
from pau.engine.ledger import Ledger
from pau.engine.vocab import ACTIVITIES, STATES
from pau.figures.stragglers import nearest_rank, step_times
from pau.errors import PauError

if TYPE_CHECKING:  # pragma: no cover - types only
    from matplotlib.figure import Figure

__all__ = ["ACTIVITY_COLORS", "STATE_COLORS", "IDLE_COLORS", "MAX_RANKS", "activity_bars", "idle_bars", "state_timeline",
           "goodput_waterfall", "step_distribution", "top_kernel_bars", "cause_differences",
           "kernel_changes", "request_latencies", "svg"]

#: One colour per activity (colour-blind-safe Tableau 10 order; idle light grey).
ACTIVITY_COLORS = {
    "compute": "#4C78A8", "communication": "#F58518", "memcpy": "#54A24B", "memset": "#B279A2",
    "sync": "#E45756", "other": "#9D755D", "idle": "#D9D9D9", "unknown": "#BAB0AC",
}
#: One colour per lifecycle state: productive green, waste warm, recovery greys and purples.
STATE_COLORS = {
    "productive": "#2CA02C", "pending": "#98DF8A", "rolled_back": "#D62728", "checkpoint": "#1F77B4",
    "checkpoint.lost": "#AEC7E8", "checkpoint.unused": "#C5B0D5", "initialization": "#FF7F0E",
    "recovery.outage": "#7F7F7F", "recovery.reinit": "#FFBB78", "recovery.restore": "#9467BD",
    "eval": "#17BECF", "data_wait": "#BCBD22", "custom": "#8C564B", "unattributed": "#E0E0E0",
}
#: Ranks drawn at most in one per-rank plot (the rest are named in its title).
MAX_RANKS = 64
# Above this many rectangles a timeline is drawn as an embedded image inside the SVG.
_RASTER_ABOVE = 20_000
_NAME_CHARS = 48


def _matplotlib() -> Any:
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise PauError("plots need matplotlib. Fix: pip install 'pau[report]'") from exc
    return matplotlib, Figure


@contextmanager
def _style() -> Iterator[Any]:
    """Names as plain text (no mathtext), text kept as SVG text, small fonts."""
    mpl, figure = _matplotlib()
    with mpl.rc_context({"text.parse_math": False, "svg.fonttype": "none", "svg.hashsalt": "pau",
                         "font.size": 9, "axes.spines.top": False, "axes.spines.right": False}):
        yield figure


def _short(name: str) -> str:
    return name if len(name) <= _NAME_CHARS else name[: _NAME_CHARS - 3] + "..."


def _ranks_shown(ranks: Sequence[int], keep: Sequence[int] = ()) -> list[int]:
    """At most MAX_RANKS ranks: those in ``keep`` first (stragglers), then in rank order."""
    chosen = [r for r in keep if r in set(ranks)][:MAX_RANKS]
    rest = [r for r in ranks if r not in set(chosen)]
    return sorted(chosen + rest[: MAX_RANKS - len(chosen)])


def _of(total: int, shown: int) -> str:
    return "" if shown == total else f" ({shown} of {total} ranks shown)"


def svg(fig: Figure) -> str:
    """The figure as an SVG document without its XML prolog, ready to inline in HTML."""
    buf = io.StringIO()
    with _style():
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buf.getvalue()
    return re.sub(r"^<\?xml[^>]*>\s*(<!DOCTYPE[^>]*>\s*)?", "", text)


# ---------------------------------------------------------------------------
# one run


def activity_bars(summary: Mapping[str, Any]) -> Figure:
    """Per-rank stacked bars: each activity's share of the rank's accountable span.

    ``summary``: :meth:`pau.Run.summary` (its ``per_rank``)."""
    per_rank = summary.get("per_rank")
    if not per_rank:
        raise PauError("activity_bars: the summary has no per-rank ledger (the run has no events or lifecycle)")
    ranks = [r["rank"] for r in per_rank]
    shown = _ranks_shown(ranks)
    rows = [r for r in per_rank if r["rank"] in set(shown)]
    acts = [a for a in ACTIVITIES + ("unknown",) if any(r["activity_ns"].get(a) for r in rows)]
    with _style() as figure:
        fig: Figure = figure(figsize=(8.0, 0.9 + 0.22 * len(rows)))
        ax = fig.add_subplot()
        y = np.arange(len(rows))
        left = np.zeros(len(rows))
        for a in acts:
            share = np.array([100.0 * r["activity_ns"].get(a, 0) / r["span_ns"] if r["span_ns"] else 0.0
                              for r in rows])
            ax.barh(y, share, left=left, color=ACTIVITY_COLORS.get(a, "#BAB0AC"), label=a, height=0.8)
            left += share
        ax.set_yticks(y, [str(r["rank"]) for r in rows])
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
        ax.set_xlabel("share of the rank's accountable time (%)")
        ax.set_ylabel("rank")
        ax.set_title("device activity per rank" + _of(len(ranks), len(rows)), loc="left")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)
        fig.tight_layout()
    return fig


#: One colour per cause of idle time.
IDLE_COLORS = {"data_wait": "#BCBD22", "sync_wait": "#E45756", "host_wait": "#FF9DA6", "idle.other": "#D9D9D9"}


def idle_bars(idle: Mapping[str, Any]) -> Figure:
    """Per-rank stacked bars of idle time by cause, in accelerator time.
    ``idle``: ``summary["idle_by_cause"]``."""
    rows = idle["per_rank"]
    if not rows:
        raise PauError("idle_bars: no idle time")
    shown = set(_ranks_shown([r["rank"] for r in rows]))
    rows = [r for r in rows if r["rank"] in shown]
    causes = list(idle["ns"])
    u_name, u_size = unit(max(sum(r["ns"].values()) for r in rows))
    with _style() as figure:
        fig: Figure = figure(figsize=(8.0, 0.9 + 0.22 * len(rows)))
        ax = fig.add_subplot()
        y = np.arange(len(rows))
        left = np.zeros(len(rows))
        for c in causes:
            v = np.array([r["ns"].get(c, 0) / u_size for r in rows])
            ax.barh(y, v, left=left, color=IDLE_COLORS.get(c, "#BAB0AC"), label=c, height=0.8)
            left += v
        ax.set_yticks(y, [str(r["rank"]) for r in rows])
        ax.invert_yaxis()
        ax.set_xlabel(f"idle accelerator time ({u_name})")
        ax.set_ylabel("rank")
        ax.set_title("idle by cause per rank" + _of(len(idle["per_rank"]), len(rows)), loc="left")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)
        fig.tight_layout()
    return fig


def _merged(iv: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """State intervals with touching runs of one state on one rank merged: (rank, start, end, state code)."""
    rank = np.asarray(iv["rank"], np.int64)
    start = np.asarray(iv["start_ns"], np.int64)
    end = np.asarray(iv["end_ns"], np.int64)
    state_names = iv["state"].cast(pa.string()).to_numpy(zero_copy_only=False)
    code = _codes(state_names)
    order = np.lexsort((start, rank))
    rank, start, end, code = rank[order], start[order], end[order], code[order]
    if rank.size == 0:
        return rank, start, end, code
    new = np.ones(rank.size, bool)
    new[1:] = (rank[1:] != rank[:-1]) | (code[1:] != code[:-1]) | (start[1:] != end[:-1])
    first = np.flatnonzero(new)
    last = np.r_[first[1:], rank.size] - 1
    return rank[first], start[first], end[last], code[first]


def _codes(names: np.ndarray) -> np.ndarray:
    lookup = {s: i for i, s in enumerate(STATES)}
    uniq, inv = np.unique(names.astype(str), return_inverse=True)
    return np.array([lookup[u] for u in uniq.tolist()], np.int64)[inv]


def state_timeline(ledger: Ledger, lifecycle: Any = None) -> Figure:
    """Lifecycle states per rank over time, with failures (red ×), durable checkpoints
    (blue ▼) and restores (purple ◆) marked on a ``job`` row above the ranks (and a
    failure of one rank also on that rank's row).

    ``ledger``: a lifecycle ledger (its state intervals); ``lifecycle``: the table it was
    built from, for the marks."""
    iv = ledger.intervals
    if iv is None:
        raise PauError("state_timeline: the ledger has no lifecycle (no state intervals)")
    rank, start, end, code = _merged(iv)
    all_ranks = np.unique(rank).tolist()
    shown = _ranks_shown(all_ranks)
    keep = np.isin(rank, shown)
    rank, start, end, code = rank[keep], start[keep], end[keep], code[keep]
    t0 = int(start.min()) if start.size else 0
    t1 = int(end.max()) if end.size else 1
    u_name, u_size = unit(t1 - t0)
    row = {r: i + 1 for i, r in enumerate(shown)}
    with _style() as figure:
        fig: Figure = figure(figsize=(10.0, 1.4 + 0.22 * (len(shown) + 1)))
        ax = fig.add_subplot()
        raster = rank.size > _RASTER_ABOVE
        for c in np.unique(code).tolist():
            m = code == c
            ys = np.array([row[r] for r in rank[m].tolist()], float)
            xs = (start[m] - t0) / u_size
            ws = (end[m] - start[m]) / u_size
            ax.barh(ys, ws, left=xs, height=0.8, color=STATE_COLORS[STATES[c]], label=STATES[c],
                    linewidth=0, rasterized=raster)
        if lifecycle is not None:
            _marks(ax, lifecycle, row, t0, u_size)
        ax.set_yticks([0] + list(row.values()), ["job"] + [str(r) for r in shown])
        ax.set_ylim(len(shown) + 0.7, -0.7)
        ax.set_xlim(0, (t1 - t0) / u_size)
        ax.set_xlabel(f"time since the first accountable instant ({u_name}; t0 = {t0} ns)")
        ax.set_ylabel("rank")
        ax.set_title("lifecycle state per rank" + _of(len(all_ranks), len(shown)), loc="left")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)
        fig.tight_layout()
    return fig


def _marks(ax: Any, lifecycle: Any, row: Mapping[int, int], t0: int, u_size: int) -> None:
    t = lifecycle if isinstance(lifecycle, pa.Table) else pa.table(lifecycle)
    rec = t["record"]

    def times(kind: str, column: str) -> tuple[np.ndarray, np.ndarray]:
        sel = t.filter(pc.equal(rec, kind))
        if sel.num_rows == 0 or column not in sel.column_names:
            return np.empty(0), np.empty(0, np.int64)
        sel = sel.filter(pc.is_valid(sel[column]))
        x = (np.asarray(sel[column], np.int64) - t0) / u_size
        r = np.asarray(sel["rank"].fill_null(-1), np.int64) if "rank" in sel.column_names else \
            np.full(sel.num_rows, -1, np.int64)
        return x, r

    fx, fr = times("failure", "start_ns")
    if fx.size:
        ax.scatter(fx, np.zeros(fx.size), marker="x", color="#D62728", s=36, zorder=3, label="failure")
        on = np.isin(fr, list(row))
        if on.any():
            ax.scatter(fx[on], [row[r] for r in fr[on].tolist()], marker="x", color="#D62728", s=24, zorder=3)
    cx, _ = times("checkpoint_save", "durable_ns")
    if cx.size:
        ax.scatter(cx, np.zeros(cx.size), marker="v", color="#1F77B4", s=22, zorder=3, label="checkpoint durable")
    rx, _ = times("restore", "start_ns")
    if rx.size:
        ax.scatter(rx, np.zeros(rx.size), marker="D", color="#9467BD", s=18, zorder=3, label="restore")


def goodput_waterfall(ledger_summary: Mapping[str, Any]) -> Figure:
    """From accountable accelerator time down to productive time: one falling bar per
    state that is not productive (rolled-back work split by the failure that caused
    it), the productive bar last. ``ledger_summary``: :meth:`Ledger.summary`."""
    s = ledger_summary
    acc = int(s["accountable_ns"])
    if s.get("goodput") is None:
        raise PauError("goodput_waterfall: the ledger has no lifecycle, so no goodput")
    steps: list[tuple[str, int, str]] = []
    causes = dict(s.get("badput_by_cause_ns") or {})
    for state, ns in s["state_ns"].items():
        if state == "productive" or not ns:
            continue
        if state == "rolled_back" and causes:
            named = 0
            for cause, c_ns in sorted(causes.items(), key=lambda kv: -kv[1]):
                steps.append((f"rolled back: {cause}", int(c_ns), STATE_COLORS["rolled_back"]))
                named += int(c_ns)
            if ns - named:
                steps.append(("rolled back: no cause", int(ns - named), STATE_COLORS["rolled_back"]))
        else:
            steps.append((state, int(ns), STATE_COLORS.get(state, "#BAB0AC")))
    u_name, u_size = unit(acc)
    with _style() as figure:
        fig: Figure = figure(figsize=(max(5.0, 1.0 + 0.7 * (len(steps) + 2)), 3.8))
        ax = fig.add_subplot()
        labels = ["accountable"] + [_short(n) for n, _, _ in steps] + ["productive"]
        level = acc
        ax.bar(0, acc / u_size, color="#4C78A8")
        for i, (_, ns, color) in enumerate(steps, start=1):
            ax.bar(i, ns / u_size, bottom=(level - ns) / u_size, color=color)
            level -= ns
        prod = int(s["state_ns"]["productive"])
        ax.bar(len(steps) + 1, prod / u_size, color=STATE_COLORS["productive"])
        for i, ns in enumerate([acc] + [n for _, n, _ in steps] + [prod]):
            ax.annotate(f"{100.0 * ns / acc:.1f}%" if acc else "-", (i, 0), xytext=(0, 2),
                        textcoords="offset points", ha="center", fontsize=7)
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
        ax.set_ylabel(f"accelerator time ({u_name})")
        ax.set_title(f"goodput {100.0 * s['goodput']:.1f} %: accountable time down to productive time",
                     loc="left")
        fig.tight_layout()
    return fig


def step_distribution(lifecycle: Any, stragglers: Sequence[int] = ()) -> Figure:
    """Step time per rank as box plots: the median line, the box from the first to the
    third quartile, whiskers to the fastest and slowest step, a tick at p90 (every
    quantile by the nearest-rank rule, as the report's step table); persistent stragglers (``summary["steps"]["stragglers"]["persistent"]``
    ranks) in red."""
    times = step_times(lifecycle)
    if times is None:
        raise PauError("step_distribution: the lifecycle has no step rows of single ranks")
    shown = _ranks_shown(list(times), keep=list(stragglers))
    data = [times[r] for r in shown]
    u_name, u_size = unit(int(np.median(np.concatenate(data)))) if data else ("ns", 1)
    with _style() as figure:
        fig: Figure = figure(figsize=(max(5.0, 1.2 + 0.28 * len(shown)), 3.4))
        ax = fig.add_subplot()
        # the report's own quantiles (nearest rank, exact ns), not matplotlib's interpolated ones
        stats = [{"med": nearest_rank(d, 1, 2) / u_size, "q1": nearest_rank(d, 1, 4) / u_size,
                  "q3": nearest_rank(d, 3, 4) / u_size, "whislo": int(d[0]) / u_size,
                  "whishi": int(d[-1]) / u_size, "fliers": []} for d in data]
        box = ax.bxp(stats, patch_artist=True, widths=0.6, medianprops={"color": "black"})
        p90 = [nearest_rank(d, 9, 10) / u_size for d in data]
        ax.scatter(range(1, len(data) + 1), p90, marker="_", s=120, color="black", zorder=3, label="p90")
        bad = set(stragglers)
        for r, patch in zip(shown, box["boxes"]):
            patch.set_facecolor("#D62728" if r in bad else "#9ECAE9")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)
        ax.set_xticks(range(1, len(shown) + 1), [str(r) for r in shown], rotation=90 if len(shown) > 24 else 0)
        ax.set_xlabel("rank (stragglers in red)")
        ax.set_ylabel(f"step time ({u_name})")
        ax.set_title("step time per rank" + _of(len(times), len(shown)), loc="left")
        fig.tight_layout()
    return fig


def top_kernel_bars(rows: Sequence[Mapping[str, Any]]) -> Figure:
    """The device work that took the most time (:func:`pau.figures.compare.top_kernels`
    rows), one bar per name, coloured by kind."""
    if not rows:
        raise PauError("top_kernel_bars: no device work to plot")
    u_name, u_size = unit(int(max(r["total_ns"] for r in rows)))
    with _style() as figure:
        fig: Figure = figure(figsize=(8.0, 0.9 + 0.26 * len(rows)))
        ax = fig.add_subplot()
        y = np.arange(len(rows))
        ax.barh(y, [r["total_ns"] / u_size for r in rows],
                color=[ACTIVITY_COLORS.get(r["kind"], "#BAB0AC") for r in rows])
        ax.set_yticks(y, [f"{_short(r['name'])} ({r['kind']})" for r in rows], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel(f"total time ({u_name})")
        ax.set_title("top device work by total time", loc="left")
        fig.tight_layout()
    return fig


#: Colours of request outcomes in the latency plot.
OUTCOME_COLORS = {"accepted": "#2CA02C", "late": "#F58518"}


def request_latencies(table: pa.Table, latency: Mapping[str, Any] | None = None) -> Figure:
    """The distribution of the completed requests' TTFT and E2E latency (and TPOT), one
    panel each: every request a point of the empirical CDF, coloured by its outcome
    (accepted, late against the SLOs), with the p50, p90 and p99 of ``latency``
    (:meth:`pau.figures.economics.RequestLedger.latency`) marked.

    ``table``: :attr:`RequestLedger.table` (``outcome``, ``ttft_ns``, ``tpot_ns``, ``e2e_ns``)."""
    outcome = np.asarray(table["outcome"].cast(pa.string()).to_pylist(), dtype=object)
    done = (outcome == "accepted") | (outcome == "late")
    panels = []
    for key, col, what in (("ttft", "ttft_ns", "time to first token"), ("tpot", "tpot_ns", "time per output token"),
                           ("e2e", "e2e_ns", "request latency")):
        v = table[col].to_numpy(zero_copy_only=False).astype(np.float64)
        ok = done & ~np.isnan(v)
        if ok.any():
            panels.append((key, what, v[ok], outcome[ok]))
    if not panels:
        raise PauError("request_latencies: no completed request to plot")
    with _style() as figure:
        fig: Figure = figure(figsize=(3.2 * len(panels) + 0.6, 3.0))
        for i, (key, what, v, out) in enumerate(panels):
            ax = fig.add_subplot(1, len(panels), i + 1)
            u_name, u_size = unit(float(v.max()))
            order = np.argsort(v, kind="stable")
            x, o = v[order] / u_size, out[order]
            y = np.arange(1, x.size + 1) / x.size
            ax.step(x, y, where="post", color="#7F7F7F", linewidth=0.8)
            for name, colour in OUTCOME_COLORS.items():
                sel = o == name
                if sel.any():
                    ax.scatter(x[sel], y[sel], s=7, color=colour, label=name, zorder=3)
            stats = (latency or {}).get(key) or {}
            for q, style in (("p50", "-"), ("p90", "--"), ("p99", ":")):
                if stats.get(q) is not None:
                    ax.axvline(stats[q] / u_size, color="black", linestyle=style, linewidth=0.8, label=q)
            ax.set_xlabel(f"{what} ({u_name})")
            ax.set_ylim(0, 1.02)
            if i == 0:
                ax.set_ylabel("share of completed requests")
            ax.set_title(f"{key} ({x.size:,} requests)", loc="left")
        fig.axes[-1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=7)
        fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------
# two runs


def _diff_bars(ax: Any, labels: Sequence[str], diff_ns: Sequence[float], sides: tuple[str, str],
               what: str) -> None:
    """Horizontal bars of a − b, one colour per sign, named for the side that has more."""
    u_name, u_size = unit(max(abs(d) for d in diff_ns) or 1)
    y = np.arange(len(labels))
    more_a = [d > 0 for d in diff_ns]
    for flag, colour, side in ((True, "#4C78A8", sides[0]), (False, "#F58518", sides[1])):
        sel = [i for i, m in enumerate(more_a) if m == flag]
        if sel:
            ax.barh(y[sel], [diff_ns[i] / u_size for i in sel], color=colour, label=f"more in {_short(side)}")
    ax.set_yticks(y, labels, fontsize=7)
    ax.invert_yaxis()
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel(f"{what}, {_short(sides[0])} minus {_short(sides[1])} ({u_name})")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)


def cause_differences(rows: Sequence[Mapping[str, Any]], labels: tuple[str, str] = ("a", "b")) -> Figure:
    """The ledger difference by cause per preserved step (``Comparison.by_cause`` rows:
    ``cause, kind, a, b, difference`` in accelerator-seconds per preserved step,
    ``difference = a - b``), one bar per state and per failure cause (the ``total``
    row left out)."""
    rows = [r for r in rows if r.get("difference") is not None and r["cause"] != "total" and (r["a"] or r["b"])]
    if not rows:
        raise PauError("cause_differences: no cause to compare (neither run has preserved steps)")
    with _style() as figure:
        fig: Figure = figure(figsize=(8.0, 0.9 + 0.26 * len(rows)))
        ax = fig.add_subplot()
        _diff_bars(ax, [_short(("failure: " if r["kind"] == "failure" else "") + str(r["cause"])) for r in rows],
                   [float(r["difference"]) * 1e9 for r in rows], labels, "accelerator time per preserved step")
        ax.set_title("ledger difference by cause", loc="left")
        fig.tight_layout()
    return fig


def kernel_changes(rows: Sequence[Mapping[str, Any]], labels: tuple[str, str] = ("a", "b"),
                   n: int = 15) -> Figure:
    """The kernels and copies whose total time changed most (``KernelDiff.rows``:
    ``name, kind, difference_ns = total a - total b``), the ``n`` largest changes."""
    rows = sorted((r for r in rows if r["difference_ns"]), key=lambda r: -abs(int(r["difference_ns"])))[:n]
    if not rows:
        raise PauError("kernel_changes: no kernel or copy changed its total time")
    with _style() as figure:
        fig: Figure = figure(figsize=(8.0, 0.9 + 0.26 * len(rows)))
        ax = fig.add_subplot()
        _diff_bars(ax, [f"{_short(str(r['name']))} ({r['kind']})" for r in rows],
                   [float(r["difference_ns"]) for r in rows], labels, "total time")
        ax.set_title("kernels and copies that changed most", loc="left")
        fig.tight_layout()
    return fig
