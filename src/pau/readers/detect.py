"""Which reader a path needs, from its content (not its name).

:func:`detect_format` returns one of ``"parquet"``, ``"kineto"``, ``"nsys"``,
``"mllog"``, ``"serving"``, ``"csv"``. Rules, on the first bytes of a file (decompressed when
gzip):

* ``PAR1`` magic -> parquet; ``SQLite format 3`` with a ``StringIds`` table -> nsys;
* a ``:::MLLOG`` line among the first 256 KiB -> mllog;
* JSON with ``"traceEvents"``, or a top-level array of objects with ``"ph"`` -> kineto;
* a CSV whose header names ``rank, start_ns, end_ns, kind`` -> csv (device events);
  a ``.nsys-rep`` report is refused with the ``nsys export`` command that makes the
  SQLite export pau reads;
* serving (per-request results of a serving benchmark):
  JSON with ``"ttfts"``/``"input_lens"`` (vLLM) or ``"experiments"`` (GenAI-Perf); a
  first line that is an object with ``"metadata"`` holding ``"timestamp_ns"`` (or the
  older ``"request_start_ns"``) (AIPerf ``profile_export.jsonl``); a top-level array
  whose first object has ``"ttft_s"`` and ``"end_to_end_latency_s"`` (LLMPerf
  ``*_individual_responses.json``). The tools' summaries (AIPerf's
  ``profile_export_aiperf.json``: ``"records"`` with ``"input_config"``; LLMPerf's
  ``*_summary.json``: ``"results_ttft_s_mean"``...) hold no per-request data: alone they
  raise :class:`UnknownFormatError` naming the file to give instead, and in a folder
  they are passed over, so a folder with the per-request file and its summaries is
  serving.

Fleet records (``docs/fleet.md``) are recognised but not runs, so :func:`pau.read` does not
take them: a ``sacct`` text or JSON output, a Kubernetes pod list, the Alibaba pod list, a
Philly job log, a Megatron-LM training log or an NVRx ``cycle_info`` file raises
:class:`UnknownFormatError` naming the ``pau.readers`` function that reads it.

A directory takes the format of its files: ``*.parquet`` -> parquet, else the first
readable file that is recognised (all recognised files must agree).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import sqlite3
import pathlib
import zlib

from pau.errors import NoInputError, UnknownFormatError

_fast_gzip_error: type[Exception]
try:  # optional: ISA-L inflates gzip about 3x faster than zlib
    from isal import igzip as _fast_gzip
    from isal.isal_zlib import error as _fast_gzip_error  # type: ignore[assignment]
except ImportError:  # pragma: no cover - depends on the environment
    _fast_gzip = None  # type: ignore[assignment]
    _fast_gzip_error = zlib.error

__all__ = ["FORMATS", "UnknownFormatError", "detect_format"]

FORMATS = ("parquet", "kineto", "nsys", "mllog", "serving", "csv")

#: The columns a CSV file of device events must name in its header (DESIGN §2.1).
CSV_EVENT_COLUMNS = ("rank", "start_ns", "end_ns", "kind")
_NSYS_REP = (".nsys-rep", ".qdrep")
_NSYS_REP_FIX = ("an Nsight Systems report, which pau reads as its SQLite export. Fix: nsys export --type "
                 "sqlite --output REPORT.sqlite REPORT.nsys-rep, then give the .sqlite")

_HEAD = 256 * 1024


def _unknown(path: str, problem: str) -> UnknownFormatError:
    """:class:`pau.errors.UnknownFormatError` naming the formats pau reads."""
    return UnknownFormatError(path, problem, FORMATS)


def _head(path: str) -> bytes:
    """The first ``_HEAD`` bytes of the file, decompressed when it is gzip (ISA-L when
    installed, about 3x faster than zlib; a stream it refuses is read again by zlib,
    whose error is the one reported)."""
    with open(path, "rb") as f:
        raw = f.read(_HEAD)
    if raw[:2] == b"\x1f\x8b":
        if _fast_gzip is not None:
            try:
                with _fast_gzip.open(path, "rb") as g:  # type: ignore[no-untyped-call]  # isal: open() unannotated
                    return bytes(g.read(_HEAD))
            except (OSError, EOFError, _fast_gzip_error):
                pass
        try:
            with gzip.open(path, "rb") as g:
                return g.read(_HEAD)
        except (OSError, EOFError, zlib.error) as exc:
            raise _unknown(path, f"a gzip file that cannot be decompressed ({exc})") from None
    return raw


def _is_nsys(path: str) -> bool:
    uri = pathlib.Path(path).resolve().as_uri() + "?mode=ro&immutable=1"
    try:
        con = sqlite3.connect(uri, uri=True)
        try:
            return bool(con.execute("SELECT 1 FROM sqlite_master WHERE name='StringIds'").fetchall())
        finally:
            con.close()
    except sqlite3.DatabaseError:
        return False


def _is_aiperf_line(first: str) -> bool:
    """An AIPerf ``profile_export.jsonl`` record: ``metadata`` with the request's start."""
    if '"metadata"' not in first:
        return False
    try:
        rec = json.loads(first)
    except RecursionError:   # nested past Python's stack: no AIPerf record
        return False
    except ValueError:   # a first line longer than the head read: look at its text
        return bool(re.search(r'"metadata"\s*:\s*\{[^{}]*"(?:timestamp_ns|request_start_ns)"\s*:', first))
    md = rec.get("metadata") if isinstance(rec, dict) else None
    return isinstance(md, dict) and ("timestamp_ns" in md or "request_start_ns" in md)


def _is_event_csv(text: str) -> bool:
    """A CSV whose header names the events' columns (any order, other columns allowed)."""
    first = text.split("\n", 1)[0].strip().lstrip("\ufeff")
    names = {c.strip().strip('"').strip() for c in first.split(",")}
    return "," in first and set(CSV_EVENT_COLUMNS) <= names


#: Lines a Megatron-LM log has at their start (``megatron/training/training.py``): its
#: iteration log (`` [2026-03-02 10:00:37.249000] iteration       10/     100 |``) and
#: ``print_datetime`` (``[after dataloaders are built] datetime: 2026-03-02 10:00:33.000000``).
_MEGATRON_ITERATION = re.compile(r"^ *\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[^\]\n]*\] iteration +\d+/ *\d+ \|", re.M)
_MEGATRON_DATETIME = re.compile(r"^\[[^\]\n]*\] datetime: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d", re.M)


def _is_megatron_log(text: str) -> bool:
    """A Megatron-LM training log: at least two lines that start as its iteration lines
    do, or (a log that ended before its first logged iteration) two that start as its
    ``print_datetime`` lines. Its phrases quoted in prose (a README describing such a
    log) are not at line starts with real numbers and times, so they do not count."""
    return any(sum(1 for _ in zip(range(2), p.finditer(text))) == 2
               for p in (_MEGATRON_ITERATION, _MEGATRON_DATETIME))


#: Fleet records: (start of the text, keys that must all appear (a pattern, or a test of
#: the text), what, the reader), tried in this order (plain searches: no pattern that could
#: backtrack over the head).
_FLEET = (
    (re.compile(r'\s*\{\s*"job_id"\s*:'), (r'"cycle_start_time"\s*:', r'"active_ranks"\s*:'), "an NVRx cycle_info file",
     "read_nvrx"),
    (re.compile(r"\s*\{"), (r'"jobs"\s*:\s*\[', r'"tres"\s*:', r'"time"\s*:'), "sacct --json output", "read_sacct_jobs"),
    (re.compile(r"\s*\{"), (r'"kind"\s*:\s*"(?:List|Pod)"', r'"containers"\s*:'), "a Kubernetes pod list", "read_pods"),
    (re.compile(r"\s*\[\s*\{"), (r'"attempts"\s*:', r'"submitted_time"\s*:'), "a Philly job log", "read_philly"),
    (re.compile(r"\ufeff?JobID\|", re.I), (), "sacct --parsable2 output", "read_sacct_jobs"),
    (re.compile(r"\ufeff?name,cpu_milli,memory_mib,num_gpu,gpu_milli,"), (), "an Alibaba GPU pod list", "read_alibaba_pods"),
    (None, (_is_megatron_log,), "a Megatron-LM training log", "read_megatron"),
)


def _fleet_hint(text: str) -> tuple[str, str] | None:
    """(what, reader) when ``text`` (a file's head) is fleet records, else None."""
    for start, keys, what, fn in _FLEET:
        if (start is None or start.match(text)) and all(k(text) if callable(k) else re.search(k, text)
                                                          for k in keys):
            return what, fn
    return None


def _detect_file(path: str) -> str:
    if path.endswith(_NSYS_REP):
        raise _unknown(path, _NSYS_REP_FIX)
    if os.path.getsize(path) == 0:
        raise _unknown(path, "the file is empty")
    head = _head(path)
    if head[:4] == b"PAR1":
        return "parquet"
    if head[:16] == b"SQLite format 3\x00":
        if _is_nsys(path):
            return "nsys"
        raise _unknown(path, "a SQLite database that is not an Nsight Systems export (no StringIds)")
    text = head.decode("utf-8", errors="replace")
    if ":::MLLOG" in text:
        return "mllog"
    found = _json_format(path, text)
    if found is not None:
        return found
    if _is_event_csv(text):
        return "csv"
    hint = _fleet_hint(text)
    if hint is not None:
        what, fn = hint
        raise _unknown(path, f"{what}: fleet records, not a run, so pau.read does not take it. "
                                 f"Fix: read it with pau.readers.{fn}(path) (docs/fleet.md)")
    if path.endswith(".csv"):
        raise _unknown(path, "a CSV file whose header does not name the events' columns "
                                 f"({', '.join(CSV_EVENT_COLUMNS)}; stream, name optional)")
    raise _unknown(path, "the content matches no known format")


def _json_format(path: str, text: str) -> str | None:
    """``kineto`` or ``serving`` for the JSON of a trace or per-request results (the
    head of the file, ``text``); an error for a summary without per-request records;
    None when the text is neither."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        if re.search(r'"traceEvents"\s*:', text) or re.search(r'"(?:schemaVersion|distributedInfo|deviceProperties)"\s*:', text):
            return "kineto"
        if re.search(r'"(?:ttfts|input_lens|itls)"\s*:', text) or re.search(r'"experiments"\s*:', text):
            return "serving"
        if _is_aiperf_line(stripped.split("\n", 1)[0]):
            return "serving"
        if re.search(r'"records"\s*:\s*\{', text) and re.search(r'"(?:input_config|error_summary)"\s*:', text):
            raise _unknown(path, "an AIPerf summary (aggregates only, no per-request records): give the "
                                 "profile_export.jsonl beside it")
        if re.search(r'"results_(?:ttft_s_mean|num_completed_requests)"\s*:', text):
            raise _unknown(path, "an LLMPerf summary (quantiles only, no per-request records): give the "
                                 "*_individual_responses.json beside it")
    if (re.match(r'\[\s*\{', stripped) and re.search(r'"ttft_s"\s*:', text)
            and re.search(r'"end_to_end_latency_s"\s*:', text)):
        return "serving"
    if stripped.startswith("[") and re.search(r'"ph"\s*:', text):
        return "kineto"
    return None


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format of a file or directory (see the module docstring).

    Raises
    ------
    pau.errors.NoInputError
        Nothing at ``path`` (also a ``FileNotFoundError``).
    UnknownFormatError
        Empty, unrecognised, or a directory mixing formats.
    """
    p = os.fspath(path)
    if os.path.isfile(p):
        return _detect_file(p)
    if not os.path.isdir(p):
        raise NoInputError(f"nothing at {p!r}. Fix: give a file or a folder")
    files = sorted(str(f) for f in pathlib.Path(p).rglob("*") if f.is_file() and not f.name.startswith("."))
    if any(f.endswith(".parquet") for f in files):
        return "parquet"
    found: dict[str, str] = {}
    for f in files:
        if f.endswith((".md", ".csv", ".nsys-rep")) or os.path.getsize(f) == 0:
            continue
        try:
            found.setdefault(_detect_file(f), f)
        except UnknownFormatError:
            continue
    if not found:
        reps = [f for f in files if f.endswith(_NSYS_REP)]
        if reps:
            raise UnknownFormatError(p, f"a directory whose {len(reps)} Nsight Systems report(s) "
                                     f"({os.path.basename(reps[0])}...) are not exported: {_NSYS_REP_FIX}")
        raise UnknownFormatError(p, f"a directory with no recognised file among {len(files)} files")
    # MLPerf folders hold system JSONs beside the logs: the logs decide.
    if "mllog" in found:
        return "mllog"
    if len(found) > 1:
        raise UnknownFormatError(p, "a directory mixing formats: " +
                                 ", ".join(f"{k} ({os.path.basename(v)})" for k, v in sorted(found.items())))
    return next(iter(found))
