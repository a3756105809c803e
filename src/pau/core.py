"""pau.core: the public API, a facade over the modules below it.

Conventions (DESIGN §1), stated once here and in ``csrc/core/sweep.hpp``:

* Time is ``int64`` nanoseconds and every interval is half-open ``[start_ns, end_ns)``:
  two intervals that touch (``a.end_ns == b.start_ns``) do not overlap, and a
  zero-length event covers no time.
* Accelerator time is counted per rank (one rank = one accelerator), exactly, in
  integers. Every classification **conserves** time: for each rank the labelled
  durations sum to the rank's accounted span.
* Tables in and out are ``pyarrow.Table``. Inputs may also be anything with the Arrow
  PyCapsule stream interface, a pandas ``DataFrame`` or a ``dict`` of numpy arrays.
* Bad rows raise a :mod:`pau.errors` exception naming column, row and fix; with
  ``on_invalid="quarantine"`` they are returned beside the result instead, with a
  reason per row, and counted.

Output tables use ``dictionary<int8, string>`` for label columns (``activity``,
``state``, ``kinds``): cheap at scale, and compared like strings by pyarrow.compute.
"""

from __future__ import annotations

from pau import _core
from pau.engine.api import attribute, classify, classify_dataset, ledger, overlap
from pau.engine.ledger import Ledger
from pau.engine._sweep import Overlap
from pau.engine._threads import PARALLEL_MIN_ROWS
from pau.engine.types import (
    LedgerSummary, OnInvalid, OutsideAccountable, Quarantined, RequestSummary, RunSummary, StepFigures, TableLike,
)
from pau.engine.vocab import ACTIVITIES, DEFAULT_PRIORITY, KINDS, STATES
from pau.figures.compare import Comparison, KernelDiff, compare, kernel_diff
from pau.figures.cost import LedgerCost, RequestCost, cost
from pau.figures.economics import (
    OUTCOMES, CheckpointAdvice, CheckpointInterval, RequestLedger, checkpoint_advice, checkpoint_interval, requests,
)
from pau.figures.interference import colocated, interference
from pau.figures.stragglers import stragglers
from pau.fleet import Fleet, ingest, read_fleet
from pau.run import Run, RunWarning, read, read_runs

__all__ = [
    "KINDS",
    "ACTIVITIES",
    "STATES",
    "DEFAULT_PRIORITY",
    "PARALLEL_MIN_ROWS",
    "Ledger",
    "LedgerSummary",
    "OutsideAccountable",
    "RunSummary",
    "OnInvalid",
    "Overlap",
    "Quarantined",
    "TableLike",
    "attribute",
    "classify",
    "classify_dataset",
    "ledger",
    "overlap",
    "requests",
    "RequestLedger",
    "RequestSummary",
    "StepFigures",
    "OUTCOMES",
    "cost",
    "LedgerCost",
    "RequestCost",
    "checkpoint_advice",
    "checkpoint_interval",
    "CheckpointAdvice",
    "CheckpointInterval",
    "stragglers",
    "compare",
    "interference",
    "colocated",
    "Comparison",
    "KernelDiff",
    "kernel_diff",
    "Run",
    "RunWarning",
    "read",
    "read_runs",
    "release_kept_memory",
    "Fleet",
    "ingest",
    "read_fleet",
]


def release_kept_memory() -> None:
    """Give back the memory :func:`requests` keeps for its next outputs.

    Large request outputs reuse the pages of freed ones (up to 1 GiB and an eighth of
    the machine's memory, the oldest given back first), so a process that calls
    :func:`requests` again writes into memory it already holds. Call this when the
    process is done with requests and wants that memory back; the next call maps fresh
    memory (its first touch costs what the first call's did). Outside Linux nothing is
    kept and this does nothing. See ``docs/economics.md``.
    """
    _core.release_kept_memory()
