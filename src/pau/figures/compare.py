"""Two runs side by side: :func:`compare` (two ledgers on the same useful-output
denominators, DESIGN §4), :func:`kernel_diff` (their device work name by name), and the
summaries of one run's device work and annotation ranges (:func:`top_kernels`,
:func:`range_summary`).

Choices where the design is silent: ``docs/analysis.md`` and ``docs/compare.md``. Time is
``int64`` ns; differences are exact in ns (per-step parts in exact rationals) and floats
at the edge; a ratio with a zero denominator is None, never NaN. Inputs are never modified.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping, Optional, Protocol, TypedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine._format import duration
from pau.engine._input import _column, as_table, time_values
from pau.engine._names import TOP_KERNELS
from pau.engine.ledger import Ledger
from pau.engine.types import ComparisonSummary, KernelDiffSummary, LedgerSummary, RangeRow, TopKernel
from pau.engine.vocab import STATES
from pau.errors import ArgumentTypeError, OptionError, PauError
from pau.figures._common import _NS_PER_S, _fmt
from pau.figures.cost import LedgerCost, cost

__all__ = [
    "Comparison", "compare", "KERNEL_STATUSES", "KernelDiff", "KernelDiffRow", "kernel_diff", "top_kernels",
    "range_summary",
]

#: TOP_KERNELS (pau.engine._names): rows of :func:`top_kernels` in a run's summary and report, and of a
#: kernel diff in text.


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
    exact: dict[str, Any]
    labels: tuple[Any, ...]
    kernels: KernelDiff | None = None

    def summary(self, kernels: int | None = None) -> ComparisonSummary:
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


class _RunLike(Protocol):
    """What :func:`compare` reads of a :class:`pau.Run`."""

    events: pa.Table | None

    def ledger(self, *, as_of: int | None = None) -> Ledger: ...


def _side(side: Ledger | _RunLike, as_of: int | None, events: Any) -> tuple[Ledger, Any]:
    """A side's ledger (a run's through ``Run.ledger``) and device events (a run's own
    unless given)."""
    if isinstance(side, Ledger):
        if as_of is not None:
            raise OptionError("as_of: the figures as of an instant are a run's (Run.ledger(as_of=...)); a Ledger "
                              "is already as of its instant. Fix: pass the runs, or drop as_of")
        return side, events
    if not callable(getattr(side, "ledger", None)):
        raise ArgumentTypeError("compare", "pau Runs or Ledgers", side)
    return side.ledger(as_of=as_of), (side.events if events is None else events)


def _figures(led: Ledger, prices: Mapping[str, Any] | None) -> tuple[LedgerSummary, LedgerCost | None]:
    return led.summary(), (None if prices is None else cost(led, prices))


def compare(a: Ledger | _RunLike, b: Ledger | _RunLike, *, prices_a: Mapping[str, Any] | None = None,
            prices_b: Mapping[str, Any] | None = None, labels: tuple[str, str] = ("a", "b"),
            as_of: int | None = None, events_a: Any = None, events_b: Any = None) -> Comparison:
    """Two runs (or their ledgers) side by side on the same useful-output denominators
    (``pau.core.compare`` is this function).

    Parameters
    ----------
    a, b : Run or Ledger
        Two runs, or the same work on two cluster configurations. A :class:`pau.Run` is
        taken through :meth:`pau.Run.ledger`; the figures are those of
        :meth:`Ledger.summary`.
    prices_a, prices_b : dict, optional
        Prices as for :func:`pau.figures.cost.cost`; cost rows appear when both are given.
    labels : (str, str)
        Names of the two sides in :meth:`Comparison.render`.
    as_of : int, optional
        The instant of both runs' ledgers (:meth:`pau.Run.ledger`); refused with a Ledger
        on either side (:class:`pau.errors.OptionError`).
    events_a, events_b : table-like, optional
        The two sides' device events (a run's own by default; a ledger holds none):
        with both, ``.kernels`` is their :func:`kernel_diff`, per preserved step of
        each ledger; else ``.kernels`` is None.

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
    led_a, events_a = _side(a, as_of, events_a)
    led_b, events_b = _side(b, as_of, events_b)
    sa_t, ca = _figures(led_a, prices_a)
    sb_t, cb = _figures(led_b, prices_b)
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

    def fl(v: Any) -> float | None:
        return None if v is None else float(v)

    diff = [None if x is None or y is None else float(x) - float(y) for x, y in zip(va, vb)]
    table = pa.table({"metric": pa.array(names, pa.string()), "a": pa.array([fl(v) for v in va], pa.float64()),
                      "b": pa.array([fl(v) for v in vb], pa.float64()), "difference": pa.array(diff, pa.float64())})

    na, nb = sa["preserved_steps"], sb["preserved_steps"]
    rows, exact = [], {}

    def per_step(ns: int, steps: int | None) -> Fraction | None:
        return Fraction(ns, steps) if steps else None

    def add(cause: str, kind: str, xa_ns: int, xb_ns: int, cost_a: float | None = None,
            cost_b: float | None = None) -> None:
        fa, fb = per_step(xa_ns, na), per_step(xb_ns, nb)
        d = fa - fb if fa is not None and fb is not None else None
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
    add("total", "total", sa["accountable_ns"], sb["accountable_ns"], None if ca is None else ca["total_cost"],
        None if cb is None else cb["total_cost"])
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
# top device work


def _device_work(events: Any) -> list[dict[str, Any]]:
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
        exact: dict[tuple[str, str], int] = {}
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


def _duration(ns: int | None) -> str:
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

    rows: list[Any]
    steps_a: Optional[int]
    steps_b: Optional[int]
    labels: tuple[Any, ...] = ("a", "b")

    def status_counts(self) -> dict[str, int]:
        """Rows per status: ``{"appeared": n, "disappeared": n, "changed": n, "same": n}``."""
        out = dict.fromkeys(KERNEL_STATUSES, 0)
        for r in self.rows:
            out[r["status"]] += 1
        return out

    def summary(self, n: int | None = None) -> KernelDiffSummary:
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

        def fmt(c: list[str]) -> str:
            return "  ".join([c[0].ljust(widths[0]), c[1].ljust(widths[1])]
                             + [v.rjust(w) for v, w in zip(c[2:-1], widths[2:])]) + "  " + c[-1]

        lines += ["", fmt(head)] + [fmt(c) for c in cells]
        if s["left_out"]:
            lines.append(f"... {s['left_out']} more (--format json or csv lists every row)")
        lines.append("sorted by |total a - total b|, then the larger total; per step: ns per preserved step of each run" if per else
                     "sorted by |total a - total b|, then the larger total; no per-step figures (a run without preserved steps)")
        return "\n".join(lines)


def _steps(value: Any, side: str) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise PauError(f"kernel_diff: {side} = {value!r}. Fix: give the run's number of steps (an int >= 0) "
                       "or None")
    return int(value) or None  # no step: no per-step figure


def kernel_diff(a_events: Any, b_events: Any, *, steps_a: int | None = None, steps_b: int | None = None,
                labels: tuple[Any, ...] = ("a", "b")) -> KernelDiff:
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
# annotation ranges by name


def range_summary(ranges: Any, name: str = "text", n: int = TOP_KERNELS) -> list[RangeRow]:
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
