"""One view of the stack: from accelerator time asked for down to useful FLOPs.

:func:`layers` walks one ledger from the top down; each layer is a quantity of
accelerator time (accelerator-ns) and each step down names its factor (the share of the
layer above that survives) and the causes of what it lost:

=====================  ==========================================================
layer                  the time that is left, and what the step to it lost
=====================  ==========================================================
``requested``          accountable + queued accelerator time (with a schedule)
``accountable``        the ledger's accountable time; lost: ``queued``
``productive``         the lifecycle's productive time; lost: every other state,
                       rolled-back work split by the failure that caused it
``productive_compute`` productive time with compute running (the strict goodput's
                       numerator); lost: the other activities of productive time
``hardware_active``    productive compute weighted by the hardware's activity
                       (``sm_active``, else ``gpu_util``) over it; lost: ``inactive``
``useful_flops``       the preserved work's model FLOPs as time at peak:
                       ``FLOPs / peak``; lost: ``below_peak``
=====================  ==========================================================

A layer whose data the run lacks (no schedule, no samples, no FLOPs) is left out, and
the next step goes from the layer above it. Integer layers are exact ints and their
losses sum exactly to the step; every factor is a :class:`fractions.Fraction` (the
hardware mean, a float, enters as its exact binary value), so the factors multiply back
exactly to ``last / first``. Each figure comes from the function that owns it:
:meth:`Ledger.summary` and :meth:`Ledger.cause_ns` (states and causes), the ledger's
cells (activities), :func:`pau.figures.hardware.cell_metrics` (hardware), and
:func:`pau.figures.goodput.program_goodput` (FLOPs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional

from pau.engine.ledger import NS_PER_HOUR, Ledger, exact_sums
from pau.engine.types import LayerSummary, LayersSummary
from pau.errors import PauError
from pau.figures._common import _one_job
from pau.figures.goodput import ModelFlops, program_goodput, schedule_times
from pau.figures.hardware import cell_metrics

__all__ = ["HARDWARE_METRICS", "Layer", "Layers", "layers"]

#: The metric that weighs productive compute in the hardware layer, first one present.
HARDWARE_METRICS = ("sm_active", "gpu_util")


@dataclass
class Layer:
    """One layer: its accelerator time and the step down to it from the layer above."""

    name: str
    ns: Fraction
    factor: Optional[Fraction]
    lost: dict[str, Fraction]
    note: str = ""
    #: Money per accelerator-ns (from a price per accelerator-hour), or None.
    price_per_ns: Optional[Fraction] = None

    def summary(self) -> LayerSummary:
        out: LayerSummary = {"name": self.name, "ns": _num(self.ns),
                             "factor": None if self.factor is None else float(self.factor),
                             "lost_ns": {k: _num(v) for k, v in self.lost.items()}, "note": self.note}
        if self.price_per_ns is not None:
            out["cost"] = float(self.ns * self.price_per_ns)
            out["lost_cost"] = {k: float(v * self.price_per_ns) for k, v in self.lost.items()}
        return out


@dataclass
class Layers:
    """What :func:`layers` returns: the layers top down, and their product."""

    rows: list[Layer]
    left_out: dict[str, str] = field(default_factory=dict)

    @property
    def product(self) -> Fraction | None:
        """The factors multiplied: ``last.ns / first.ns`` exactly; None when the top
        layer is empty (a ledger as of an instant before its first record: nothing is
        accountable yet, so no share of it is defined). A layer that is empty makes the
        factors below it None (0 of 0), and the product 0."""
        if not self.rows or not self.rows[0].ns:
            return None
        return self.rows[-1].ns / self.rows[0].ns

    def summary(self) -> LayersSummary:
        product = self.product
        return {"layers": [r.summary() for r in self.rows], "product": None if product is None else float(product),
                "left_out": dict(self.left_out)}


def _num(v: Fraction) -> int | float:
    return int(v) if v.denominator == 1 else float(v)


def _step(rows: list[Layer], name: str, ns: Fraction, lost: dict[str, Fraction], note: str = "") -> None:
    top = rows[-1].ns
    rows.append(Layer(name, ns, (ns / top) if top else None, lost, note))


def layers(ledger: Ledger, *, samples: Any = None, events: Any = None, span: Any = None, schedule: Any = None,
           flops: ModelFlops | int | None = None, accelerator: str | None = None, dtype: str | None = None,
           peak: Any = None, price_per_accelerator_hour: float | None = None) -> Layers:
    """The stack of one lifecycle ledger, top down (see the module docstring).

    Parameters
    ----------
    ledger : Ledger
        With a lifecycle (the productive layer needs one).
    samples, events, span :
        Hardware telemetry and what :func:`pau.figures.hardware.cell_metrics` needs to place
        it (``events=run.events``); without samples the hardware layer is left out.
    schedule : table-like, optional
        Queue and allocation records (:func:`pau.figures.goodput.schedule_times`); adds the
        ``requested`` layer on top.
    flops, accelerator, dtype, peak :
        As for :func:`pau.figures.goodput.program_goodput`; add the ``useful_flops`` layer.
    price_per_accelerator_hour : float, optional
        Every layer and loss also in money: ``ns x price / 3.6e12`` (the price read as
        its exact decimal).
    """
    _one_job(ledger, "layers")
    s = ledger.summary()
    if ledger.intervals is None:  # not goodput: it is None too when nothing is accountable (yet)
        raise PauError("layers: the ledger has no lifecycle, so no productive layer. Fix: give the run's "
                       "lifecycle (a trace with steps has one)")
    acc = Fraction(s["accountable_ns"])
    rows: list[Layer] = []
    left_out: dict[str, str] = {}
    if schedule is not None:
        assert s["as_of"] is not None  # a lifecycle ledger has one
        sched = schedule_times(schedule, as_of=s["as_of"])
        rows.append(Layer("requested", acc + sched.queued_ns, None, {}))
        _step(rows, "accountable", acc, {"queued": Fraction(sched.queued_ns)})
    else:
        rows.append(Layer("accountable", acc, None, {}))
        left_out["requested"] = "no schedule (queue and allocation records) given"
    # lifecycle state: every other state is lost, rolled-back work by its cause
    lost: dict[str, Fraction] = {}
    causes = ledger.cause_ns()
    for state, ns in s["state_ns"].items():
        if state == "productive" or not ns:
            continue
        if state == "rolled_back" and causes:
            for cause, c in sorted(causes.items(), key=lambda kv: -kv[1]):
                lost[f"rolled_back.{cause}"] = Fraction(c)
            rest = ns - sum(causes.values())
            if rest:
                lost["rolled_back"] = Fraction(rest)
        else:
            lost[state] = Fraction(ns)
    prod = Fraction(s["state_ns"]["productive"])
    _step(rows, "productive", prod, lost)
    # device activity within productive time
    if ledger.has_events:
        cells = exact_sums(ledger.table, ["state", "activity"], "duration_ns")
        by_act = {a: Fraction(v) for (st, a), v in cells.items() if st == "productive" and v}
        compute = by_act.pop("compute", Fraction(0))
        _step(rows, "productive_compute", compute, dict(sorted(by_act.items(), key=lambda kv: -kv[1])))
        if samples is not None:
            t = cell_metrics(ledger, samples, events=events, span=span, by=("state", "activity"))
            assert not isinstance(t, tuple)
            got = {r["metric"]: r for r in t.to_pylist() if r["state"] == "productive" and r["activity"] == "compute"}
            name = next((m for m in HARDWARE_METRICS if m in got and got[m]["mean"] is not None), None)
            if name is not None:
                mean = Fraction(got[name]["mean"])
                active = compute * mean
                _step(rows, "hardware_active", active, {"inactive": compute - active},
                      note=f"time-weighted mean of {name} over productive compute "
                      f"({got[name]['covered_ns']} of {got[name]['duration_ns']} ns covered)")
            else:
                left_out["hardware_active"] = f"no {' or '.join(HARDWARE_METRICS)} samples over productive compute"
        else:
            left_out["hardware_active"] = "no hardware telemetry (samples)"
    else:
        left_out["productive_compute"] = "no device events"
    if flops is not None:
        pg = program_goodput(ledger, flops, accelerator=accelerator, dtype=dtype, peak=peak)
        at_peak = Fraction(pg.model_flops) * 10**9 / Fraction(pg.peak.flops)
        _step(rows, "useful_flops", at_peak, {"below_peak": rows[-1].ns - at_peak},
              note=f"model FLOPs of the preserved work at {float(pg.peak.flops):,.4g} FLOP/s per accelerator")
    else:
        left_out["useful_flops"] = "no model FLOPs given"
    if price_per_accelerator_hour is not None:
        if not price_per_accelerator_hour >= 0:
            raise PauError(f"layers: price_per_accelerator_hour = {price_per_accelerator_hour!r}. Fix: give a "
                           "price >= 0")
        per_ns = Fraction(str(price_per_accelerator_hour)) / NS_PER_HOUR
        for r in rows:
            r.price_per_ns = per_ns
    return Layers(rows, left_out)
