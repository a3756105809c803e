"""Types shared by every layer: the quarantine result, ``on_invalid``, table-like inputs.

Imports nothing of pau but :mod:`pau.errors`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, NamedTuple, Optional, TypedDict, Union

import pyarrow as pa

from .errors import PauError

__all__ = ["LedgerSummary", "OnInvalid", "RunWarning", "OutsideAccountable", "Quarantined", "RunSummary", "TableLike",
           "check_on_invalid"]

#: What to do with input rows pau cannot use: raise (the default) or set them aside.
OnInvalid = Literal["raise", "quarantine"]

#: A table-like input: a ``pyarrow.Table``/``RecordBatch``/``RecordBatchReader``,
#: anything with ``__arrow_c_stream__``, a pandas ``DataFrame`` or a dict of arrays.
TableLike = Union[pa.Table, pa.RecordBatch, pa.RecordBatchReader, "dict[str, Any]", Any]


class RunWarning(str):
    """Something a reader assumed, set aside or could not use: a ``str`` (the message,
    for people) with a stable ``code`` (for tools to match on, e.g.
    ``"kineto.sub_ns_rounded"``). Equal warnings have equal codes and messages."""

    code: str

    def __new__(cls, code: str, message: str) -> "RunWarning":
        obj = super().__new__(cls, message)
        obj.code = code
        return obj

    @property
    def message(self) -> str:
        return str.__str__(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RunWarning):
            return self.code == other.code and self.message == other.message
        return str.__eq__(self, other)

    def __hash__(self) -> int:
        return str.__hash__(self)

    def __repr__(self) -> str:
        return f"RunWarning({self.code!r}, {self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (RunWarning, (self.code, self.message))


class Quarantined(NamedTuple):
    """What ``on_invalid="quarantine"`` returns: the result and the rows set aside.

    ``quarantine`` has the columns that were read (all of a table's; the event
    columns of a streamed file) plus ``row`` (0-based row in the input) and ``reason``.
    """

    result: Any
    quarantine: pa.Table


def check_on_invalid(on_invalid: str) -> None:
    """Raise :class:`pau.errors.PauError` unless ``on_invalid`` is ``"raise"`` or
    ``"quarantine"``."""
    if on_invalid not in ("raise", "quarantine"):
        raise PauError(f"on_invalid: expected 'raise' or 'quarantine', got {on_invalid!r}")


class LedgerSummary(TypedDict):
    """The headline figures of a ledger (:meth:`pau.core.Ledger.summary`). ns and
    counts are exact ints; hours, seconds and ratios floats; None where a figure does
    not apply (no lifecycle, no preserved step, a zero denominator)."""

    ranks: int
    as_of: Optional[int]
    accountable_ns: int
    accountable_accelerator_hours: float
    productive_ns: int
    productive_accelerator_hours: float
    productive_strict_ns: Optional[int]
    goodput: Optional[float]
    goodput_strict: Optional[float]
    pending_ns: int
    state_ns: Dict[str, int]
    badput_ns: Optional[int]
    badput_by_cause_ns: Dict[str, int]
    activity_ns: Dict[str, int]
    failures: Optional[int]
    mtbf_s: Optional[float]
    preserved_steps: Optional[int]
    preserved_tokens: Optional[int]
    preserved_model_cycles: Optional[int]
    accountable_ns_per_preserved_step: Optional[Union[int, float]]
    accountable_ns_per_model_cycle: Optional[float]
    badput_accelerator_hours: Optional[float]
    accelerator_seconds_per_preserved_step: Optional[float]
    productive_accelerator_seconds_per_preserved_step: Optional[float]


class OutsideAccountable(TypedDict):
    """Events of a lifecycle ledger that lie (partly) outside their rank's accountable
    time: how many, the ns outside, and the ranks."""

    events: int
    ns: int
    ranks: List[int]


class RankActivity(TypedDict):
    """One rank of :meth:`pau.core.Ledger.rank_activity`: its accountable span and the
    ns of each activity that occurs on it (exact)."""

    rank: int
    span_ns: int
    activity_ns: Dict[str, int]


class TopKernel(TypedDict):
    """One row of :func:`pau.analysis.top_kernels`."""

    name: str
    kind: str
    count: int
    total_ns: int
    mean_ns: int
    share: float


class RunSummary(TypedDict):
    """Every figure of a run (:meth:`pau.Run.summary`, ``pau report --format json``)."""

    format: Optional[str]
    tables: Dict[str, int]
    ledger: Optional[LedgerSummary]
    per_rank: Optional[List[RankActivity]]
    top_kernels: Optional[List[TopKernel]]
    nvtx: Optional[List[Dict[str, Any]]]
    steps: Optional[Dict[str, Any]]
    idle_by_cause: Optional[Dict[str, Any]]
    layers: Optional[Dict[str, Any]]
    recovery: Optional[Dict[str, Any]]
    telemetry: Optional[List[Dict[str, Any]]]
    requests: Optional[Dict[str, Any]]
    slo_ns: Dict[str, int]
    events_outside_accountable: Optional[OutsideAccountable]
    warnings: int
    quarantined: int
    mlperf: Optional[Dict[str, Any]]
