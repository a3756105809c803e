"""Exceptions raised by pau.

Every exception about input is a ``ValueError`` subclass and says three things: which
column (or argument), which row, and how to fix it. They are raised instead of silently dropping
input; callers who prefer to keep going pass ``on_invalid="quarantine"`` and receive
the offending rows in a separate table with a reason per row.
"""

from __future__ import annotations

__all__ = [
    "PauError",
    "SchemaError",
    "InvalidRowError",
    "InvalidWindowsError",
    "UnsortedInputError",
    "SpanOverflowError",
    "MemoryBudgetError",
    "Interrupted",
    "OptionError",
    "ManyJobsError",
    "OptionTypeError",
    "NoInputError",
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
