"""Exceptions raised by pau.

Every exception about input is a ``ValueError`` subclass and says three things: which
column (or argument), which row, and how to fix it. They are raised instead of silently dropping
input; callers who prefer to keep going pass ``on_invalid="quarantine"`` and receive
the offending rows in a separate table with a reason per row.
"""

from __future__ import annotations

from typing import Optional, Sequence

__all__ = [
    "PauError",
    "SchemaError",
    "InvalidRowError",
    "InvalidLifecycleError",
    "InvalidWindowsError",
    "UnsortedInputError",
    "SpanOverflowError",
    "MemoryBudgetError",
    "Interrupted",
    "OptionError",
    "ArgumentTypeError",
    "ManyJobsError",
    "OptionTypeError",
    "NoInputError",
    "UnknownFormatError",
    "TelemetryFormatError",
    "ServingFormatError",
    "MLLogError",
    "RulesError",
    "UsageError",
    "TraceError",
    "TraceFormatError",
    "InvalidEventError",
    "NoDeviceEventsError",
    "DuplicateRankError",
    "MultipleRunsError",
    "IngestError",
]


class PauError(ValueError):
    """Base class of every error pau raises about its input."""


class SchemaError(PauError):
    """A column is missing or has a type pau cannot use."""

    def __init__(self, table: str, column: str, problem: str, fix: str):
        self.table = table
        self.column = column
        self.problem = problem
        self.fix = fix
        super().__init__(f"{table}: column '{column}' {problem}. Fix: {fix}")


class InvalidRowError(PauError):
    """A row holds a value pau cannot account for (null, negative, reversed, unknown)."""

    def __init__(self, table: str, column: str, row: int, reason: str, fix: str, count: int = 1):
        self.table = table
        self.column = column
        self.row = row
        self.reason = reason
        self.fix = fix
        self.count = count
        more = f" ({count} rows in all)" if count > 1 else ""
        super().__init__(
            f"{table}: column '{column}', row {row}: {reason}{more}. Fix: {fix}, "
            f"or pass on_invalid='quarantine' to set such rows aside."
        )


class InvalidLifecycleError(InvalidRowError):
    """A lifecycle row that cannot be accounted for (:func:`pau.core.attribute`,
    :func:`pau.core.ledger`): the row's own checks, or how it relates to the others
    (a failure after its attempt ended, steps that overlap on a rank)."""


class InvalidWindowsError(PauError):
    """Windows or spans that cannot partition time (overlapping, reversed)."""


class UnsortedInputError(PauError):
    """A streamed source is not ordered by start_ns within each rank."""


class SpanOverflowError(PauError):
    """A rank's time (its first event start to its last event end) lasts more than
    int64 nanoseconds hold (2**63 - 1 ns, 292 years): its figures cannot be counted."""

    def __init__(self, table: str, rank: int, start_ns: int, end_ns: int, *,
                 measure: str = "from its first event start to its last event end", fix: str | None = None):
        self.table, self.rank, self.start_ns, self.end_ns = table, rank, start_ns, end_ns
        if fix is None:
            fix = (f"correct the times of rank {rank}'s events (a time far from the others is often a unit or "
                   "sign error), or give span= for the rank to account a part of it, or pass "
                   "on_invalid='quarantine' to set the rank's events aside")
        super().__init__(
            f"{table}: rank {rank} spans [{start_ns}, {end_ns}) {measure}: {end_ns - start_ns} ns, more than "
            f"int64 nanoseconds hold (2**63 - 1 ns, 292 years). Fix: {fix}.")


class MemoryBudgetError(PauError):
    """``memory_budget`` is smaller than what one row group needs in memory."""


class Interrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C (or a ``progress`` callback raising KeyboardInterrupt).

    Still a ``KeyboardInterrupt`` (not a ``ValueError``: nothing is wrong with the
    input). ``saved`` partitions of ``total`` have their results in ``results_dir``
    (None when there is none); re-running with the same ``results_dir`` resumes.
    """

    def __init__(self, message: str, *, saved: int, total: int, results_dir: str | None):
        self.saved, self.total, self.results_dir = saved, total, results_dir
        super().__init__(message)


class OptionError(PauError):
    """An option that does not apply to the input it was given with (refused, never
    ignored)."""


class OptionTypeError(OptionError, TypeError):
    """An option of a type pau does not take (also a ``TypeError``)."""


class ManyJobsError(OptionError):
    """A figure of one job asked of a lifecycle or ledger of many jobs (a ``job`` column
    naming more than one). Raised instead of a number that would mix the jobs (two jobs'
    rank 0 seen as one rank, their attempt 1 as one attempt); ``figure`` names it, ``jobs``
    counts the jobs. Its own class so callers that show many figures (``Run.summary``)
    can leave this one out with a warning and let every other error through."""

    def __init__(self, figure: str, jobs: int):
        self.figure, self.jobs = figure, jobs
        super().__init__(
            f"{figure} is a figure of one job, and this lifecycle holds {jobs} jobs (its 'job' column): computed "
            "over all of them it would mix them (their rank 0 seen as one rank, their attempt 1 as one attempt). "
            "Fix: compute it per job: filter the lifecycle by job, or use pau.read_fleet / pau ingest, which "
            "keeps one run per job")


class NoInputError(PauError, FileNotFoundError):
    """Nothing to read: no file or folder at a path, or a folder without a file of the
    format asked for. Also a ``FileNotFoundError``, so callers that caught that before
    still catch it."""


class UnknownFormatError(PauError):
    """Raised by :func:`pau.read` and :func:`pau.readers.detect_format` when no reader
    recognises a file (or a file pau knows but does not read as a run, such as fleet
    records, whose reader the message names). Attributes: ``path``, ``problem``."""

    def __init__(self, path: str, problem: str, formats: Sequence[str] = ()):
        self.path, self.problem = path, problem
        fix = ("" if ". Fix: " in problem else
               f". Fix: give one of {', '.join(formats)} (PyTorch profiler JSON, Nsight Systems .sqlite export, "
               "MLPerf :::MLLOG log, vLLM/AIPerf/LLMPerf/GenAI-Perf per-request results, pau Parquet, a CSV of "
               "device events), or pass the format explicitly")
        super().__init__(f"{path}: {problem}{fix}")


class TelemetryFormatError(PauError):
    """Raised by the telemetry readers (:mod:`pau.readers.telemetry`) when a file cannot
    be read as a whole: not the format, no timestamps, a column in a unit pau does not
    know. A bad sample row is an :class:`InvalidRowError` instead (or a quarantine row).
    Attributes: ``path``, ``problem``, ``fix``."""

    def __init__(self, path: str, problem: str, fix: str):
        self.path, self.problem, self.fix = path, problem, fix
        super().__init__(f"{path}: {problem}. Fix: {fix}")


class ServingFormatError(PauError):
    """Raised by :func:`pau.readers.read_serving` for a serving result file it cannot use
    (or, with ``on_invalid="raise"``, its first unusable record). Attributes: ``path``,
    ``record`` (index or line, or None), ``problem``, ``fix``."""

    def __init__(self, path: str, problem: str, fix: str, record: Optional[str] = None):
        self.path, self.record, self.problem, self.fix = path, record, problem, fix
        where = f", {record}" if record else ""
        super().__init__(f"{path}{where}: {problem}. Fix: {fix}")


class MLLogError(PauError):
    """Raised by :func:`pau.readers.read_mllog` for an MLPerf log it cannot use (empty,
    no well-formed ``:::MLLOG`` lines, no ``run_start``, a bad system description), or for
    a malformed ``:::MLLOG`` line with ``on_invalid="raise"``.
    Attributes: ``path``, ``line`` (1-based or None), ``problem``, ``fix``."""

    def __init__(self, path: str, problem: str, fix: str, line: Optional[int] = None):
        self.path, self.line, self.problem, self.fix = path, line, problem, fix
        where = f", line {line}" if line is not None else ""
        super().__init__(f"{path}{where}: {problem}. Fix: {fix}")


class RulesError(OptionError):
    """Raised when a device rule table given as ``rules=`` (:mod:`pau.readers.devices`,
    ``docs/devices.md``) is not one: the message names the device, the field and the fix."""


class ArgumentTypeError(PauError, TypeError):
    """An argument of a type the function cannot use (a table where a ``Ledger`` is
    expected). Also a ``TypeError``, so callers that caught that before still catch it."""

    def __init__(self, function: str, expected: str, got: object):
        self.function, self.expected, self.got = function, expected, type(got).__name__
        super().__init__(f"{function}: expected {expected}, got {self.got}. Fix: pass {expected}")


class UsageError(PauError):
    """A command line that cannot be carried out as given (``pau`` exits 2): a malformed
    option value, options that do not go together."""
class TraceError(PauError):
    """A trace file (Kineto JSON, Nsight Systems export) pau cannot use as it is.

    Attributes: ``path``, ``offset`` (byte offset in the decompressed JSON, or None),
    ``line`` (1-based, or None), ``problem`` and ``fix``.
    """

    def __init__(self, path: str, problem: str, fix: str, offset: int | None = None,
                 line: int | None = None):
        self.path = path
        self.offset = offset
        self.line = line
        self.problem = problem
        self.fix = fix
        where = ""
        if offset is not None:
            where = f", byte {offset}" + (f" (line {line})" if line is not None else "")
        super().__init__(f"{path}{where}: {problem}. Fix: {fix}")


class TraceFormatError(TraceError):
    """Not readable as a trace: empty, truncated, corrupt, malformed JSON, or another
    format."""


class InvalidEventError(TraceError):
    """A device event (or a step annotation) without a usable ``ts`` or ``dur``."""


class NoDeviceEventsError(TraceError):
    """A trace with no device activity (a CPU-only profile, or unknown categories)."""


class DuplicateRankError(TraceError):
    """Two files claim the same rank."""


class MultipleRunsError(PauError):
    """A path holds several runs; :func:`pau.read` reads one."""


class IngestError(PauError):
    """A source that its reader refuses, met without ``skip_bad``: ingest stops there."""

    def __init__(self, source: str, format: str | None, reason: str):
        self.source, self.format, self.reason = source, format, reason
        end = "" if reason.endswith(".") else "."
        super().__init__(f"ingest stopped at {source} ({format or 'no format pau reads'}): {reason}{end} Runs "
                         "read before it are in the archive; to refuse such sources into the refusals table and "
                         "go on, pass skip_bad=True (pau ingest --skip-bad)")
