"""ml-goodput-measurement's goodput and badput figures, and pau's ledger of the same log.

`ml-goodput-measurement <https://github.com/AI-Hypercomputer/ml-goodput-measurement>`_
(Apache-2.0) has a training job log structured entries to Cloud Logging (job start and
end, each step's start, accelerator initialization, training preparation, data loading,
custom badput events, Orbax checkpoint save and restore statistics) and computes from
them a goodput percentage, a badput breakdown keyed by its ``BadputType`` names and the
last step. This module reads those entries and computes:

* :func:`get_job_goodput`, :func:`get_job_goodput_interval`, :func:`get_step_deviation`:
  what the library's ``GoodputCalculator`` methods of the same names return, under the
  library's own rules, quirks included (float seconds, as the library computes them);
  :func:`job_goodput_details` gives every intermediate figure;
* :func:`to_lifecycle`: pau's lifecycle table (DESIGN §2.2) of the same entries, and
  :func:`ledger_from_entries`: pau's ledger of it;
* :func:`side_by_side`: both, with the gap between the two goodputs split into named
  differences (ns and share of the job's time) that add up to it.

The version reproduced is the library's calculator with custom badput events and
without the ``INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION`` bucket (its 0.0.10 release line,
``BadputType`` of 10 names), whose ``tests/goodput_test.py`` scenarios are the test
vectors; with ``elastic=True`` the three buckets of its ``ElasticGoodputCalculator``
(``ELASTIC_SLICE_DOWN``, ``ELASTIC_SCALE_UP``, ``ELASTIC_REINITIALIZATION``) are added.
``docs/ml-goodput.md`` states every rule, the mapping of buckets to pau's states, and
where the two differ and why.

Entries
-------
A list of dicts (the ``jsonPayload`` of each log entry, in the order the library reads
them: ascending log timestamp), a list of Cloud Logging entries (dicts with a
``jsonPayload``, ordered by their ``timestamp``), or a path to a JSON-lines file (one
entry a line, blank lines skipped) or a JSON array of entries. ``job_name`` keeps the
entries of one job (entries without a ``job_name`` are kept, as the library's own tests
log checkpoint statistics without one). Times are POSIX seconds (read as floats, as the
library's recorder writes them); pau converts each to int64 ns exactly
(``round(Fraction(t) * 10**9)``).

This module is the front and holds the side by side; the parts are one module each:
:mod:`pau.compat.mlg_entries` (reading the entries), :mod:`pau.compat.mlg_library` (the
library's figures) and :mod:`pau.compat.mlg_lifecycle` (pau's lifecycle and ledger).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pyarrow as pa

from pau.compat.mlg_entries import BADPUT_TYPES, ELASTIC_BADPUT_TYPES, QUARANTINE_SCHEMA, TimeLike, _parse, read_entries
from pau.compat.mlg_library import (
    GoodputFigures, _details, get_job_goodput, get_job_goodput_interval, get_step_deviation, job_goodput_details,
)
from pau.compat.mlg_lifecycle import _lifecycle, _ns, ledger_from_entries, to_lifecycle
from pau.engine.api import ledger as _pau_ledger
from pau.engine.ledger import Ledger
from pau.engine.types import LedgerSummary


__all__ = [
    "BADPUT_TYPES",
    "ELASTIC_BADPUT_TYPES",
    "Difference",
    "GoodputFigures",
    "QUARANTINE_SCHEMA",
    "SideBySide",
    "get_job_goodput",
    "get_job_goodput_interval",
    "get_step_deviation",
    "job_goodput_details",
    "ledger_from_entries",
    "read_entries",
    "side_by_side",
    "to_lifecycle",
]

# ---------------------------------------------------------------------------
# Side by side
# ---------------------------------------------------------------------------

_EXPLAIN = {
    "kept_without_restore": (
        "productive", "rolled_back",
        "the library keeps the steps below the step number a restart resumed at (it infers what survived "
        "from repeated step numbers); pau keeps only work a logged checkpoint restore carries over"),
    "pending": (
        "productive", "pending",
        "steps of the still-running attempt after its last durable checkpoint: the library counts them now, "
        "pau holds them pending until a durable checkpoint or the job's completion keeps them"),
    "checkpoint_save": (
        "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME", "checkpoint",
        "the library subtracts each save's mean blocking time (over the workers that logged it) from "
        "productive time wherever the save was, even during work it counts as wasted; pau takes out the "
        "blocking intervals that lie in kept steps"),
    "custom_badput": (
        "CUSTOM_BADPUT_EVENTS", "custom",
        "the library subtracts only custom events wholly inside one counted step window; pau takes out every "
        "custom phase's overlap with a step"),
    "data_loading_in_step": (
        "DATA_LOADING_ASYNC", "data_wait",
        "data loading inside a step: the library counts it productive (asynchronous, overlapped); pau's "
        "data_wait phase takes precedence over the step"),
    "program_startup": (
        "PROGRAM_STARTUP", "productive",
        "the library takes the first step's excess over the average of the later steps of its run out of "
        "productive time (compilation); pau has no record of which part of the step compiled, so the whole "
        "step is productive"),
    "not_counted_by_library": (
        "OTHER", "productive",
        "steps pau keeps that the library does not count (a run restarted at step 0, a jump in step numbers)"),
}


@dataclass(frozen=True)
class Difference:
    """One named part of the gap between the library's productive time and pau's.

    ``ns`` is signed: positive when the library counts the time as productive and pau
    does not, negative the other way; ``share`` is ``ns`` over the job's time. ``library``
    is the library's bucket (or ``productive``) and ``pau`` pau's state where the time
    lies.
    """

    name: str
    ns: int
    share: float
    library: str
    pau: str
    explanation: str


@dataclass
class SideBySide:
    """The library's figures and pau's ledger of the same entries, the gap named.

    Attributes
    ----------
    library : GoodputFigures
    ledger : Ledger
        pau's ledger of :attr:`lifecycle` (lifecycle only).
    lifecycle : pyarrow.Table
    pau : dict
        ``ledger.summary()``.
    differences : tuple of Difference
        Non-zero parts of ``library productive - pau productive``, in ns.
    residual_ns : int
        ``library productive - pau productive - sum(differences)``: the float rounding of
        the library's seconds (0 when the times are whole binary fractions).
    """

    library: GoodputFigures
    ledger: Ledger
    lifecycle: pa.Table
    pau: LedgerSummary
    differences: tuple[Difference, ...]
    residual_ns: int

    def table(self) -> pa.Table:
        """The differences as a table: ``name, ns, share, library, pau, explanation``."""
        d = self.differences
        return pa.table({"name": pa.array([x.name for x in d], pa.string()),
                         "ns": pa.array([x.ns for x in d], pa.int64()),
                         "share": pa.array([x.share for x in d], pa.float64()),
                         "library": pa.array([x.library for x in d], pa.string()),
                         "pau": pa.array([x.pau for x in d], pa.string()),
                         "explanation": pa.array([x.explanation for x in d], pa.string())})

    def goodput(self) -> dict[str, Optional[float]]:
        """Both goodputs as fractions: ``{"library": ..., "pau": ...}``."""
        return {"library": self.library.goodput / 100, "pau": self.pau["goodput"]}


def side_by_side(entries: Any, *, query_time: Optional[TimeLike] = None, elastic: Optional[bool] = None,
                 job_name: Optional[str] = None) -> SideBySide:
    """The library's figures next to pau's ledger of the same entries.

    The gap between the two productive times is split into named parts: the library's
    counted step windows (:attr:`GoodputFigures.counted`) are crossed with pau's state
    intervals, each state the windows' time lies in names a part, the library's
    deductions (program startup, custom events, checkpoint saves) are set against
    them, and pau's productive time outside the windows is the last part. The parts
    and :attr:`SideBySide.residual_ns` add up exactly to the gap.

    Parameters
    ----------
    entries, query_time, elastic, job_name
        See :func:`job_goodput_details` and :func:`to_lifecycle` (one rank: the
        library's figures are per job).
    """
    p = _parse(entries, job_name, "raise")
    lib = _details(p, query_time, elastic)
    table, as_of = _lifecycle(p, 1, query_time, "raise")
    led = _pau_ledger(None, table, as_of=as_of)
    summary = led.summary()
    iv = led.intervals
    assert iv is not None
    iv = iv.filter(pa.compute.equal(iv["rank"], 0))
    i_start = np.asarray(iv["start_ns"], np.int64)
    i_end = np.asarray(iv["end_ns"], np.int64)
    i_state = iv["state"].cast(pa.string()).to_pylist()
    in_windows: dict[str, int] = {}
    for a, b in lib.counted:
        wa, wb = _ns(a), _ns(b)
        lo, hi = np.maximum(i_start, wa), np.minimum(i_end, wb)
        for j in np.flatnonzero(hi > lo):
            in_windows[i_state[j]] = in_windows.get(i_state[j], 0) + int(hi[j] - lo[j])
    ded = {k: _ns(v) for k, v in lib.deductions.items()}
    parts: dict[str, int] = {}
    for state, v in in_windows.items():
        if state == "productive":
            continue
        name = {"rolled_back": "kept_without_restore", "pending": "pending", "checkpoint": "checkpoint_save",
                "checkpoint.lost": "checkpoint_save", "checkpoint.unused": "checkpoint_save",
                "custom": "custom_badput", "eval": "custom_badput", "data_wait": "data_loading_in_step"}.get(
                    state, "in_step:" + state)
        parts[name] = parts.get(name, 0) + v
    parts["checkpoint_save"] = parts.get("checkpoint_save", 0) - ded["UNPRODUCTIVE_CHECKPOINT_SAVE_TIME"]
    parts["custom_badput"] = parts.get("custom_badput", 0) - ded["CUSTOM_BADPUT_EVENTS"]
    parts["program_startup"] = -ded["PROGRAM_STARTUP"]
    prod = summary["productive_ns"]
    parts["not_counted_by_library"] = -(prod - in_windows.get("productive", 0))
    acc = summary["accountable_ns"]
    diffs = []
    for name, v in parts.items():
        if v == 0:
            continue
        libname, pauname, text = _EXPLAIN.get(name, ("productive", name.split(":", 1)[-1],
                                                     "step time the library counts that pau's precedence gives "
                                                     "to another state"))
        diffs.append(Difference(name, v, v / acc if acc else 0.0, libname, pauname, text))
    order = list(_EXPLAIN)
    diffs.sort(key=lambda d: (order.index(d.name) if d.name in order else len(order), d.name))
    residual = _ns(lib.productive_time) - prod - sum(d.ns for d in diffs)
    return SideBySide(lib, led, table, summary, tuple(diffs), residual)
