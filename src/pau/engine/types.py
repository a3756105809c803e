"""Types shared by every layer: the quarantine result and layout, ``on_invalid``, table-like inputs.

Imports nothing of pau but :mod:`pau.errors`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, NamedTuple, Optional, Sequence, TypedDict, Union

import pyarrow as pa

from pau.errors import PauError

__all__ = ["IdleFigures", "LedgerSummary", "Latency", "MLPerfEval", "MLPerfFigures", "MLPerfTargetPart", "OnInvalid",
           "QUARANTINE_SCHEMA", "RankIdle", "RunWarning", "OutsideAccountable", "LayersSummary", "Quarantined", "RangeRow", "RecoverySummary", "RequestLatency", "RequestSummary", "RunSummary", "StepFigures", "TableLike", "TelemetryRow",
           "check_on_invalid", "quarantine_schema", "quarantine_table"]

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


#: The columns every reader's quarantine begins with (docs/bad-input.md): the file a
#: row or file came from (null for an in-memory input), where in it as a person reads it
#: (``line 12``, ``line 12, offset 3456``, ``table T rowid 7``, ``record 5``, ``row 3``,
#: ``file`` for a whole file) and why it was set aside. A reader's own typed columns follow.
QUARANTINE_SCHEMA = pa.schema([("source_file", pa.string()), ("location", pa.string()), ("reason", pa.string())])


def quarantine_schema(*extra: pa.Field) -> pa.Schema:
    """A reader's quarantine schema: :data:`QUARANTINE_SCHEMA`, then ``extra``.

    Parameters
    ----------
    *extra : pyarrow.Field
        The reader's own columns (e.g. Kineto's ``offset, line, category, name``).

    Returns
    -------
    pyarrow.Schema
    """
    return pa.schema(list(QUARANTINE_SCHEMA) + list(extra))


def quarantine_table(schema: pa.Schema, source_file: Optional[str] | Sequence[Optional[str]],
                     location: Sequence[str], reason: Sequence[str], **extra: Any) -> pa.Table:
    """The rows a reader sets aside, in ``schema`` (from :func:`quarantine_schema`).

    Parameters
    ----------
    schema : pyarrow.Schema
        Begins with :data:`QUARANTINE_SCHEMA`; its other fields are the keys of ``extra``.
    source_file : str, None or sequence of them
        The file of every row (one value), or of each row.
    location, reason : sequence of str
        One per row.
    **extra
        One array-like per further field of ``schema``, one value per row.

    Returns
    -------
    pyarrow.Table

    Raises
    ------
    pau.errors.PauError
        ``schema`` does not begin with the common columns, ``extra`` does not name its
        other fields, or the columns differ in length.
    """
    if len(schema) < 3 or any(not schema.field(i).equals(f) for i, f in enumerate(QUARANTINE_SCHEMA)):
        raise PauError(f"quarantine schema {schema.names}: must begin with source_file, location, reason "
                       "(strings). Fix: build it with quarantine_schema()")
    own = schema.names[3:]
    if sorted(extra) != sorted(own):
        raise PauError(f"quarantine columns: got {sorted(extra)}, the schema has {own}. Fix: pass each of them")
    n = len(reason)
    files = [source_file] * n if source_file is None or isinstance(source_file, str) else list(source_file)
    cols = [files, location, reason] + [extra[c] for c in own]
    if any(len(c) != n for c in cols):
        raise PauError(f"quarantine columns of different lengths ({', '.join(str(len(c)) for c in cols)}). "
                       "Fix: one value per row in each")
    return pa.Table.from_arrays([c if isinstance(c, (pa.Array, pa.ChunkedArray)) else pa.array(c, f.type)
                                 for c, f in zip(cols, schema)], schema=schema)


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


class _JobOfRank(TypedDict, total=False):
    job: Optional[str]  # only with a lifecycle of many jobs (None: the unnamed job)


class RankActivity(_JobOfRank):
    """One rank of :meth:`pau.core.Ledger.rank_activity`: its accountable span and the
    ns of each activity that occurs on it (exact); ``job`` only with a lifecycle of many
    jobs (its job: None for the unnamed one)."""

    rank: int
    span_ns: int
    activity_ns: Dict[str, int]


class TopKernel(TypedDict):
    """One row of :func:`pau.figures.compare.top_kernels`."""

    name: str
    kind: str
    count: int
    total_ns: int
    mean_ns: int
    share: float


class Latency(TypedDict):
    """One latency of :meth:`pau.core.RequestLedger.latency` (ns): ``count`` of the
    completed requests with a value; the rest None when it is 0. ``min``/``max`` exact
    ints of int columns; ``mean``, ``std`` (population) and the linear percentiles floats."""

    count: int
    mean: Optional[float]
    min: Optional[Union[int, float]]
    max: Optional[Union[int, float]]
    std: Optional[float]
    p1: Optional[float]
    p5: Optional[float]
    p25: Optional[float]
    p50: Optional[float]
    p75: Optional[float]
    p90: Optional[float]
    p95: Optional[float]
    p99: Optional[float]


class RequestLatency(TypedDict):
    """:meth:`pau.core.RequestLedger.latency`: TTFT, TPOT and E2E of the completed requests."""

    ttft: Latency
    tpot: Latency
    e2e: Latency


class _Requests(TypedDict):
    offered: int
    accepted: int
    late: int
    failed: int
    rejected: int
    cancelled: int
    quarantined: int
    slo_attainment: Optional[float]
    window_ns: int
    request_goodput_per_s: Optional[float]
    accepted_input_tokens: int
    accepted_output_tokens: int
    accepted_tokens: int
    latency: RequestLatency


class RequestSummary(_Requests, total=False):
    """:meth:`pau.core.RequestLedger.summary`: counts and ns exact ints, ratios floats or
    None; the busy-time keys (``busy_ns`` ... ``inference_goodput``) only with busy
    intervals."""

    busy_ns: int
    productive_ns: int
    late_ns: int
    failed_ns: int
    cancelled_ns: int
    idle_ns: int
    productive_accelerator_hours: float
    inference_goodput: Optional[float]


class StepRank(TypedDict):
    """One rank of :func:`pau.figures.stragglers.step_figures`: its finished step
    executions and their time (nearest-rank median and p90, and max; exact ns)."""

    rank: int
    steps: int
    median_ns: int
    p90_ns: int
    max_ns: int


class PersistentStraggler(TypedDict):
    rank: int
    charged_ns: int


class _StragglerCounts(TypedDict):
    """What both straggler summaries hold (:class:`StragglersSummary`,
    :class:`StragglerFigures`): steps, ranks, rows, steps in flight, rows set aside, the
    ns waited for the slowest rank (exact) and those ns in accelerator-seconds."""

    steps: int
    ranks: int
    rows: int
    in_flight: int
    quarantined: int
    wait_ns: int
    wait_accelerator_seconds: float


class StragglerFigures(_StragglerCounts):
    """The stragglers of :func:`pau.figures.stragglers.step_figures`: the summary of
    :func:`pau.figures.stragglers.stragglers`, each persistent straggler with the
    accelerator time charged to it."""

    persistent: List[PersistentStraggler]


class StepFigures(TypedDict):
    """:func:`pau.figures.stragglers.step_figures`: per rank its steps, and the stragglers."""

    per_rank: List[StepRank]
    stragglers: StragglerFigures


class CauseFailures(TypedDict):
    failures: int
    per_1000_accelerator_hours: Optional[float]


class RestartLoop(TypedDict):
    """Consecutive attempts in a restart loop: the first and last, how many, their ns."""

    first_attempt: int
    last_attempt: int
    attempts: int
    ns: int


class RecoverySummary(TypedDict):
    """:meth:`pau.figures.recovery.Recovery.summary` (docs/outcome.md): ``per_failure_ns``
    is ``[time_ns, to_progress_ns]`` per failure in time order (None: not recovered)."""

    failures: int
    accountable_ns: int
    failures_per_1000_accelerator_hours: Optional[float]
    by_cause: Dict[str, CauseFailures]
    mean_to_first_step_s: Optional[float]
    mean_to_progress_s: Optional[float]
    not_recovered: int
    per_failure_ns: List[List[Optional[int]]]
    restart_loop_attempts: int
    restart_loops: List[RestartLoop]
    badput_ns: int
    wall_ns: int
    waste_equivalent_accelerators: Optional[float]


class StragglersSummary(_StragglerCounts):
    """:meth:`pau.figures.stragglers.Stragglers.summary`: steps, ranks, rows, the ns
    waited for the slowest rank (exact) and the persistent stragglers' ranks."""

    persistent: List[int]


class RankScore(TypedDict):
    """One rank of :meth:`pau.figures.stragglers.StragglerScores.summary`: its lowest scores."""

    rank: int
    min_relative: Optional[float]
    min_individual: Optional[float]


class StragglerScoresSummary(TypedDict):
    """:meth:`pau.figures.stragglers.StragglerScores.summary`: the windows, the ranks
    below ``threshold`` on either score, and per rank its lowest scores."""

    windows: int
    ranks: int
    in_flight: int
    threshold: float
    stragglers: List[int]
    per_rank: List[RankScore]
    quarantined: int


class ProtectionSummary(TypedDict):
    """:meth:`pau.figures.recovery.Protection.summary` (Fractions as floats)."""

    per: str
    bound_ns: Optional[int]
    bound_share: Optional[float]
    rows: int
    breaches: int
    excess_ns: float
    excess_accelerator_hours: float
    excess_cost: Optional[float]
    superseded_ns: int


class PeakFlopsSummary(TypedDict):
    """:meth:`pau.figures.goodput.PeakFlops.summary`."""

    accelerator: str
    dtype: str
    flops: float
    source: str


class ModelFlopsSummary(TypedDict):
    """:meth:`pau.figures.goodput.ModelFlops.summary` (None: not known)."""

    per_token: Optional[int]
    hardware_per_token: Optional[int]
    tokens_per_step: Optional[int]
    per_step: Optional[int]
    hardware_per_step: Optional[int]
    recompute: Optional[str]


class ProgramGoodputSummary(TypedDict):
    """:meth:`pau.figures.goodput.ProgramGoodput.summary` (Fractions as floats; warnings as text)."""

    peak: PeakFlopsSummary
    basis: str
    units: int
    model_flops: int
    hardware_flops: Optional[int]
    productive_ns: int
    accountable_ns: int
    mfu: Optional[float]
    hfu: Optional[float]
    program_goodput: Optional[float]
    warnings: List[str]


class MPGSummary(TypedDict):
    """:meth:`pau.figures.goodput.MPG.summary` (Fractions as floats; warnings as text)."""

    scheduling_goodput: Optional[float]
    runtime_goodput: Optional[float]
    program_goodput: Optional[float]
    mpg: Optional[float]
    queued_ns: Optional[int]
    accountable_ns: int
    productive_ns: int
    schedule_allocated_ns: Optional[int]
    program: Optional[ProgramGoodputSummary]
    warnings: List[str]


class ETTRSummary(TypedDict):
    """:meth:`pau.figures.goodput.ETTR.summary` (``ettr`` as a float; warnings as text)."""

    ettr: Optional[float]
    productive_ns: int
    pending_ns: int
    accountable_ns: int
    queued_ns: int
    available_ns: int
    warnings: List[str]


class InterferenceSummary(TypedDict):
    """:meth:`pau.figures.interference.Interference.summary`."""

    jobs: int
    system_throughput: Optional[float]
    fairness: Optional[float]
    lost_output: float


class KernelDiffSummary(TypedDict):
    """:meth:`pau.figures.compare.KernelDiff.summary`: ``kernels`` holds its first rows
    (each a :class:`pau.figures.compare.KernelDiffRow`)."""

    labels: List[Any]
    steps_a: Optional[int]
    steps_b: Optional[int]
    status: Dict[str, int]
    total_ns_a: int
    total_ns_b: int
    difference_ns: int
    count: int
    left_out: int
    kernels: List[Dict[str, Any]]


class ComparisonSummary(TypedDict):
    """:meth:`pau.figures.compare.Comparison.summary` (``pau compare --format json``)."""

    labels: List[Any]
    metrics: List[Dict[str, Any]]
    by_cause: List[Dict[str, Any]]
    kernels: Optional[KernelDiffSummary]


class _Layer(TypedDict):
    name: str
    ns: Union[int, float]
    factor: Optional[float]
    lost_ns: Dict[str, Union[int, float]]
    note: str


class LayerSummary(_Layer, total=False):
    """One layer of :meth:`pau.figures.layers.Layers.summary`: its accelerator time (an
    int when exact), the share of the layer above left (``factor``), what was lost by
    cause; ``cost`` and ``lost_cost`` only with a price."""

    cost: float
    lost_cost: Dict[str, float]


class LayersSummary(TypedDict):
    """:meth:`pau.figures.layers.Layers.summary`: the layers top down, their product and
    the layers left out (with why)."""

    layers: List[LayerSummary]
    product: Optional[float]
    left_out: Dict[str, str]


class RangeRow(TypedDict):
    """One name of :func:`pau.figures.compare.range_summary` (exact ns; ``share`` of all
    closed ranges' time; ``open``: the ranges left open, the same on every row)."""

    name: str
    count: int
    total_ns: int
    mean_ns: int
    min_ns: int
    max_ns: int
    share: Optional[float]
    open: int


class TelemetryRow(TypedDict):
    """One group and metric of :func:`pau.figures.hardware.summary`."""

    state: str
    activity: str
    metric: str
    duration_ns: int
    covered_ns: int
    unknown_ns: int
    mean: Optional[float]
    energy_j: Optional[float]


class RankIdle(TypedDict):
    """One rank of :class:`IdleFigures`: its idle ns by cause (exact)."""

    rank: int
    ns: Dict[str, int]


class IdleFigures(TypedDict):
    """A run's idle by cause (``RunSummary["idle_by_cause"]``): the ns of each cause of
    :data:`pau.figures.idle.CAUSES` over the ranks (the summary of
    :func:`pau.figures.idle.idle_by_cause`), and per rank in rank order."""

    ns: Dict[str, int]
    per_rank: List[RankIdle]


class MLPerfTargetPart(TypedDict):
    """One metric of :class:`MLPerfEval` (``parts``): its last value at the last eval
    point and its best, the quality target, its direction (``>=``, ``<=``), the
    checker's bound (``[op, value]``) and whether the last value reaches the target
    (None: no target known)."""

    name: Optional[str]
    measure: Optional[str]
    last: Optional[float]
    best: Optional[float]
    target: Optional[float]
    direction: Optional[str]
    bound: Optional[List[Any]]
    reached: Optional[bool]


class MLPerfEval(TypedDict):
    """:func:`pau.readers.mlperf_rules.judge`: a run's eval metric against its
    benchmark's quality target (``MLLogRun.eval``, ``MLPerfFigures["eval"]``). ``values``
    are the eval records as given (``value``, ``time_ns``, ``run_time_ns`` and the
    line's progress metadata); ``last``, ``best``, ``target``, ``direction`` are the one
    metric's (None with several: see ``parts``)."""

    metric: str
    values: List[Dict[str, Any]]
    last: Optional[float]
    best: Optional[float]
    target: Optional[float]
    direction: Optional[str]
    reached: Optional[bool]
    target_source: Optional[str]
    round: str
    division: Optional[str]
    parts: List[MLPerfTargetPart]
    assumed: List[str]
    note: Optional[str]


class MLPerfFigures(TypedDict):
    """An MLPerf log's result (``RunSummary["mlperf"]``), from the run's metadata
    (:class:`pau.readers.mllog.MLLogRun`): its keys in alphabetical order, as
    ``pau report --format json`` writes them (the ``eval``'s keys too); a key the
    metadata lacks (a run folder written by hand) is None."""

    accelerators: Optional[int]
    benchmark: Optional[str]
    blocks: Optional[int]
    division: Optional[str]
    epoch_count: Any
    epochs: Optional[int]
    eval: Optional[MLPerfEval]
    evals: Optional[int]
    first_epoch_num: Any
    status: Optional[str]
    step_unit: Optional[str]
    submitter: Optional[str]
    system: Optional[str]
    time_to_train_ns: Optional[int]
    time_to_train_s: Optional[float]


class RunSummary(TypedDict):
    """Every figure of a run (:meth:`pau.Run.summary`, ``pau report --format json``)."""

    format: Optional[str]
    tables: Dict[str, int]
    ledger: Optional[LedgerSummary]
    per_rank: Optional[List[RankActivity]]
    top_kernels: Optional[List[TopKernel]]
    nvtx: Optional[List[RangeRow]]
    steps: Optional[StepFigures]
    idle_by_cause: Optional[IdleFigures]
    layers: Optional[LayersSummary]
    recovery: Optional[RecoverySummary]
    telemetry: Optional[List[TelemetryRow]]
    requests: Optional[RequestSummary]
    slo_ns: Dict[str, int]
    events_outside_accountable: Optional[OutsideAccountable]
    warnings: int
    quarantined: int
    mlperf: Optional[MLPerfFigures]
