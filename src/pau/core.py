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

from ._engine import attribute, classify, classify_dataset, ledger, overlap
from ._ledger import Ledger
from ._sweep import Overlap
from ._threads import PARALLEL_MIN_ROWS
from ._types import OnInvalid, Quarantined, TableLike
from ._vocab import ACTIVITIES, DEFAULT_PRIORITY, KINDS, STATES
from .analysis import colocated, compare, interference, stragglers
from .economics import OUTCOMES, RequestLedger, checkpoint_advice, checkpoint_interval, cost, requests

__all__ = [
    "KINDS",
    "ACTIVITIES",
    "STATES",
    "DEFAULT_PRIORITY",
    "PARALLEL_MIN_ROWS",
    "Ledger",
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
    "OUTCOMES",
    "cost",
    "checkpoint_advice",
    "checkpoint_interval",
    "stragglers",
    "compare",
    "interference",
    "colocated",
]
