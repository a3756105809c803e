"""PyTorch profiler (Kineto) traces -> pau's events and lifecycle tables.

A Kineto trace is the Chrome-trace JSON that ``torch.profiler`` writes, one file per
rank, plain or gzip. :func:`read_kineto` reads a file or a directory of them with a
streaming native parser (``pau._core.KinetoParser``): the file is decompressed in
chunks and only the fields pau needs are kept, so memory follows the output (the
device events), not the file.

What becomes what
-----------------
* **Device events** are the complete events (``"ph": "X"``) whose category is one of
  :attr:`Rules.categories`: by default ``kernel``/``Kernel`` (GPU kernels),
  ``gpu_memcpy``/``Memcpy``, ``gpu_memset``/``Memset``, ``cuda_sync`` (stream and
  event waits that Kineto places on the device timeline) and ``mtia_ccp_events``
  (MTIA command processor events). Host-side categories (``cpu_op``/``Operator``,
  ``cuda_runtime``/``Runtime``, ``cuda_driver``, ``mtia_runtime``,
  ``python_function``, ``user_annotation``, ``gpu_user_annotation``, ``Trace``...) are
  not device activity: they are counted, and the kernel launches among them date
  each kernel to its profiler step.
* Each device event gets a **kind** (DESIGN §2.1) from its category, then from its
  name: a ``kernel`` whose name matches :attr:`Rules.communication` (NCCL, RCCL, MSCCL,
  oneCCL, HCCL) is ``communication``, other kernels are ``compute``; MTIA events are
  classed by :attr:`Rules.names` only. The defaults are one table per device type
  (:data:`pau.readers.devices.DEVICE_TABLES`, data that ``rules={device: table}`` overrides);
  device time no rule classes is ``other`` with a warning naming its top names
  (``docs/devices.md``).
* **Steps**: every ``ProfilerStep#N`` annotation (host side) becomes a lifecycle
  ``step`` record (attempt 0) for each rank of its file, and each device event's
  ``step`` is the step during which it was launched (its launch is found through the
  ``correlation`` id; events without a launch are dated by their own start).
* **Spans**: step annotations are clipped to the profiler's capture window (the
  ``Trace`` event), device events never are; a rank whose device events cover less
  than :data:`COVERAGE_WARN` of its span gets a warning (``docs/kineto.md``, Spans).
* **Launches and host waits** (for the idle split, ``docs/idle.md``): each device
  event's ``launch_ns`` is the start of the earliest host event with its
  ``correlation`` id (the runtime's launch call), null without one. The
  :attr:`KinetoTrace.host` table holds the host intervals in which the device's idle
  time has a cause: the synchronize calls of :data:`pau.readers.devices.SYNC_CALLS`
  (``sync_wait``) and the DataLoader spans of :data:`pau.readers.devices.DATA_WAIT_SPANS`
  (``data_wait``). Host events belong to the rank of their file; in a file holding
  several devices they belong to every rank of the file (one host process drives
  them all, and a blocked host launches on none).
* **Ranks** come from ``distributedInfo.rank``. A file without one gets the number in
  its name (``rank-3``, ``rank_3``, ``rank3``), else the smallest rank no other file
  claims, in file-name order; either way with a warning. Two files claiming one rank
  raise :class:`DuplicateRankError`. A file holding several devices gives one rank per
  device: then every (file, device) pair is a rank, numbered from 0 in order of (file
  rank, device id), and :attr:`KinetoTrace.ranks` maps them back (with a warning).

Time
----
``ts`` and ``dur`` are microseconds written as decimal text. They are converted from
the text to int64 nanoseconds exactly (digits, not doubles), so a trace with
nanosecond resolution (``"ts": 4458676522690.655``) keeps it. Kineto writes ``ts``
relative to ``baseTimeNanoseconds`` when that key is present (newer traces; their
``displayTimeUnit`` of ``"ms"`` or ``"ns"`` only affects viewers): pau adds it, so
``start_ns`` is always nanoseconds since the Unix epoch. Older traces write absolute
microseconds; some of those carry a fraction too, but at today's epoch their writer
rounded it to the nearest 0.25 us (a double), which pau keeps as written.
:attr:`KinetoTrace.ranks` says which resolution each file has (``time_resolution``).

Bad input
---------
Every problem is a :class:`TraceError` (a :class:`pau.errors.PauError`, hence a
``ValueError``) naming the file and, where it applies, the byte offset in the
decompressed JSON and its line: empty files, truncated or corrupt gzip, malformed
JSON, files that are not Kineto traces, device events without ``ts``/``dur``, files
without device events. With ``on_invalid="quarantine"`` bad events and unusable files
are set aside in :attr:`KinetoTrace.quarantine` with a reason and counted in
:attr:`KinetoTrace.warnings` instead; files that cannot be parsed at all still raise.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

import numpy as np
import pyarrow as pa

from pau import _core
from pau.engine._threads import cores
from pau.engine._input import spans_of
from pau.engine.types import check_on_invalid, quarantine_schema, quarantine_table
from pau.readers.devices import DATA_WAIT_SPANS, DEVICE_TABLES, DEVICES, check_table, sync_call
from pau.engine.vocab import KINDS
from pau.engine.vocab import LIFECYCLE_SCHEMA as _LIFECYCLE_SCHEMA
from pau.engine.types import RunWarning
from pau.errors import OptionError, PauError
from pau.readers._files import expand, files_in

_fast_gzip_error: type[Exception]
try:  # optional: ISA-L inflates gzip about 3x faster than zlib (pip install isal)
    from isal import igzip as _fast_gzip
    # isal's stub declares `error: Exception` (an instance); it is the exception class
    from isal.isal_zlib import error as _fast_gzip_error  # type: ignore[assignment]
except ImportError:  # pragma: no cover - depends on the environment
    _fast_gzip = None  # type: ignore[assignment]  # None: the zlib path (checked where used)
    _fast_gzip_error = zlib.error

__all__ = [
    "DEFAULT_RULES",
    "HOST_CAUSES",
    "HOST_SCHEMA",
    "DuplicateRankError",
    "InvalidEventError",
    "KinetoTrace",
    "NameRule",
    "NoDeviceEventsError",
    "QUARANTINE_SCHEMA",
    "Rules",
    "TraceError",
    "TraceFormatError",
    "read_kineto",
]

#: Bytes of decompressed JSON handed to the native parser at a time (small enough to
#: stay in cache while it is parsed: measured faster than 8 MB chunks).
CHUNK_BYTES = 1 << 20


# ---------------------------------------------------------------------------
# errors


class TraceError(PauError):
    """A trace file pau cannot use as it is.

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
    """Not readable as a Kineto trace: empty, truncated, corrupt, malformed JSON, or
    another format."""


class InvalidEventError(TraceError):
    """A device event (or a step annotation) without a usable ``ts`` or ``dur``."""


class NoDeviceEventsError(TraceError):
    """A trace with no device activity (a CPU-only profile, or unknown categories)."""


class DuplicateRankError(TraceError):
    """Two files claim the same rank."""


# ---------------------------------------------------------------------------
# classification rules


class NameRule(NamedTuple):
    """``kind`` for device events of ``category`` (``"*"``: any) whose name matches
    ``pattern`` (:func:`re.search`)."""

    category: str
    pattern: str
    kind: str


def _tables_union(tables: Mapping[str, Mapping[str, Any]]) -> tuple[dict, tuple, tuple]:
    """(categories, communication, names) of device tables merged in DEVICES order (then
    any other device the caller adds). A name rule for ``"*"`` applies to its own
    table's categories only, so one vendor's names never reach another's events."""
    order = [d for d in DEVICES if d in tables] + sorted(d for d in tables if d not in DEVICES)
    cats: dict[str, str | None] = {}
    comm: list[str] = []
    names: list[NameRule] = []
    for device in order:
        t = check_table(device, tables[device])
        cats.update(t["categories"])
        comm.extend(p for p in t["communication"] if p not in comm)
        for cat, pattern, kind in t["names"]:
            for c in (t["categories"] if cat == "*" else [cat]):
                names.append(NameRule(c, pattern, kind))
    return cats, tuple(comm), tuple(names)


_DEFAULT_CATS, _DEFAULT_COMM, _DEFAULT_NAMES = _tables_union(DEVICE_TABLES)

#: Trace category -> kind (None: by name only). Categories not listed are host activity.
DEFAULT_CATEGORIES: Mapping[str, str | None] = _DEFAULT_CATS
#: Kernel names that are communication (matched with re.search).
DEFAULT_COMMUNICATION: tuple[str, ...] = _DEFAULT_COMM
#: Name rules tried before the category's default kind.
DEFAULT_NAME_RULES: tuple[NameRule, ...] = _DEFAULT_NAMES

#: Categories known to be host activity (not reported as unknown).
HOST_CATEGORIES = frozenset({
    "cpu_op", "Operator", "user_annotation", "gpu_user_annotation", "cuda_runtime", "Runtime",
    "cuda_driver", "Driver", "python_function", "Python", "Trace", "mtia_runtime",
    "cpu_instant_event", "overhead", "Overhead", "cuda_profiler_range", "fwdbwd", "ac2g",
    "async", "async_gpu", "python", "xpu_runtime", "xpu_driver", "privateuse1_runtime",
    "privateuse1_driver",
})


@dataclass(frozen=True)
class Rules:
    """How Kineto events become pau kinds.

    A complete event is device activity when its category is a key of ``categories``.
    Its kind is then, in order: the kind of the first :class:`NameRule` in ``names``
    that applies; ``communication`` when the category's kind is ``compute`` and the
    name matches a pattern of ``communication``; else ``categories[category]``. A
    category whose kind is ``None`` is classified by name only: an event no name rule
    matches is ``other`` and *unclassified*, which :func:`read_kineto` reports with its
    top names (warning ``kineto.unclassified_device_time``).

    The defaults are the device tables of :data:`pau.readers.devices.DEVICE_TABLES` (one per
    device type: CUDA, ROCm, XPU, HPU, MTIA, XLA), merged. Replace or add a device's
    table with :meth:`from_tables` (data, e.g. from a JSON file; ``read_kineto(path,
    rules={"mtia": {...}})`` does the same), or extend the rules::

        rules = Rules().extend(communication=[r"^my_allreduce"],
                               categories={"xpu_kernel": "compute"})
    """

    categories: Mapping[str, str | None] = field(default_factory=lambda: dict(DEFAULT_CATEGORIES))
    communication: Sequence[str] = DEFAULT_COMMUNICATION
    names: Sequence[NameRule] = DEFAULT_NAME_RULES

    def __post_init__(self):
        object.__setattr__(self, "categories", dict(self.categories))
        object.__setattr__(self, "communication", tuple(self.communication))
        object.__setattr__(self, "names", tuple(NameRule(*r) for r in self.names))
        for cat, kind in self.categories.items():
            if kind is not None and kind not in KINDS:
                raise ValueError(f"rules.categories[{cat!r}] = {kind!r}: expected one of {', '.join(KINDS)}, "
                                 "or None (by name only)")
        for rule in self.names:
            if rule.kind not in KINDS:
                raise ValueError(f"rules.names: {rule}: kind must be one of {', '.join(KINDS)}")
        try:
            comm = [re.compile(p) for p in self.communication]
            names = [(r.category, re.compile(r.pattern), r.kind) for r in self.names]
        except re.error as exc:
            raise ValueError(f"rules: bad regular expression {exc.pattern!r}: {exc}") from None
        object.__setattr__(self, "_comm", comm)
        object.__setattr__(self, "_names", names)

    @classmethod
    def from_tables(cls, tables: Mapping[str, Mapping[str, Any]], *, defaults: bool = True) -> "Rules":
        """Rules from device tables (see :mod:`pau.readers.devices` for their fields): each
        field of a given device's table replaces that field of the default table, the
        fields not given are kept (``defaults=False``: only the given tables)."""
        if not isinstance(tables, Mapping):
            raise TypeError(f"rules: expected a pau.readers.kineto.Rules or a mapping of device tables, "
                            f"got {type(tables).__name__}")
        merged: dict[str, Mapping[str, Any]] = dict(DEVICE_TABLES) if defaults else {}
        for device, table in tables.items():
            # A field given replaces that field of the default table; the others stay.
            base = merged.get(device, {})
            merged[device] = {**base, **table} if isinstance(table, Mapping) else table
        return cls(*_tables_union(merged))

    def extend(self, *, categories: Mapping[str, str | None] | None = None,
               communication: Iterable[str] = (), names: Iterable[Sequence[str]] = ()) -> "Rules":
        """A copy with more rules; the new ones take precedence."""
        cats = dict(self.categories)
        cats.update(categories or {})
        return Rules(cats, tuple(communication) + tuple(self.communication),
                     tuple(NameRule(*r) for r in names) + tuple(self.names))

    def match(self, category: str, name: str) -> tuple[str | None, bool]:
        """``(kind, classified)`` of one event: kind None when the category is not device
        activity; ``classified`` False when a by-name category's event matched no rule
        (its kind is then ``other``)."""
        if category not in self.categories:
            return None, True
        base = self.categories[category]
        for cat, pattern, kind in self._names:  # type: ignore[attr-defined]
            if (cat == "*" or cat == category) and pattern.search(name):
                return kind, True
        if base is None:
            return "other", False
        if base == "compute" and any(p.search(name) for p in self._comm):  # type: ignore[attr-defined]
            return "communication", True
        return base, True

    def classify(self, category: str, name: str) -> str | None:
        """The kind of one event, or None when its category is not device activity."""
        return self.match(category, name)[0]


DEFAULT_RULES = Rules()


# ---------------------------------------------------------------------------
# parsing files


@dataclass
class _File:
    """One parsed file: raw columns from the native parser, before rank assignment."""

    path: str
    rows: dict
    order: np.ndarray          # device rows sorted by (device, ts)
    aside: dict
    meta: dict
    strings: list
    rank: int = -1
    rank_source: str = ""
    keep: np.ndarray = field(default_factory=lambda: np.empty(0, bool))      # rows pau can use (_screen)
    is_step: np.ndarray = field(default_factory=lambda: np.empty(0, bool))   # usable ProfilerStep rows
    time_ok: np.ndarray = field(default_factory=lambda: np.empty(0, bool))   # absolute time within int64

    def cat_counts(self) -> Counter:
        counts = self.meta["cat_counts"]
        return Counter({self.strings[i]: int(counts[i]) for i in np.flatnonzero(counts)})


def trace_files(path: str | os.PathLike) -> list[str]:
    """The trace files of ``path``: itself, or the ``.json``/``.gz`` files of a directory
    (not recursive), in name order."""
    return files_in(path, (".json", ".gz"), missing="no Kineto trace file or directory at {p}",
                    empty="no trace files (*.json, *.json.gz) in {p}")


def _chunks(f, size: int, gzipped: bool, prefetch: bool):
    """Successive chunks of ``f`` as buffers.

    A plain file is read into one reused buffer. A gzip stream is read with
    ``read1`` (what one decompression step yields), so that a truncated stream is
    reported at the byte where it ends rather than at the start of a buffer; with
    ``prefetch`` the next chunk is decompressed on a second thread while the caller
    parses this one (zlib and the native parser both release the GIL).
    """
    if not gzipped:
        buf = bytearray(size)
        view = memoryview(buf)
        while n := f.readinto(buf):
            yield view[:n]
        return
    if not prefetch:
        while data := f.read1(size):
            yield data
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(f.read1, size)
        while data := pending.result():
            pending = pool.submit(f.read1, size)
            yield data


def _gzip_break(path: str, piece: int = 256) -> tuple[int, int]:
    """(byte of the file, bytes of JSON decompressed before it) where a gzip stream
    stops being readable. Only called once a read has failed: it inflates the file
    again ``piece`` compressed bytes at a time, so both numbers are exact to a piece
    (a decompressor keeps no output of the call that fails)."""
    out = 0
    d = zlib.decompressobj(wbits=31)
    with open(path, "rb") as f:
        packed = 0
        while data := f.read(piece):
            while data:
                try:
                    out += len(d.decompress(data))
                except zlib.error:
                    return packed, out
                data = d.unused_data  # a next gzip member (concatenated files) starts here
                if d.eof:
                    d = zlib.decompressobj(wbits=31)
                    if not data:
                        break
                else:
                    data = b""
            packed = f.tell()
    return packed, out


def _parse_file(path: str, device_categories: list[str], prefetch: bool = False,
                chunk_bytes: int = CHUNK_BYTES, fast_gzip: bool = True) -> _File:
    parser = _core.KinetoParser(device_categories)
    fix_gzip = "re-copy or re-export the trace; a truncated file usually means the profiler was interrupted"
    with open(path, "rb") as raw:
        is_gzip = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        fast = is_gzip and fast_gzip and _fast_gzip is not None
        f = (_fast_gzip if fast else gzip).GzipFile(fileobj=raw, mode="rb") if is_gzip else raw
        try:
            # Prefetching pays only when decompression costs as much as parsing.
            for chunk in _chunks(f, chunk_bytes, is_gzip, prefetch):
                if not parser.feed(chunk):
                    break
        except (EOFError, zlib.error, _fast_gzip_error, gzip.BadGzipFile) as exc:
            if fast:
                # ISA-L fails a whole block at a time; the standard module says at
                # which byte the stream breaks.
                return _parse_file(path, device_categories, prefetch, chunk_bytes, fast_gzip=False)
            # The parser has seen only whole chunks; the decompressor had produced more
            # when it failed. Find where the stream breaks, in both coordinates.
            packed, json_bytes = _gzip_break(path)
            raise TraceFormatError(
                path, f"the gzip stream is truncated or corrupt at byte {packed} of the file, after "
                f"{json_bytes} bytes of JSON ({exc})", fix_gzip, offset=json_bytes) from None
        parser.finish()
    if parser.error is not None:
        message, offset, line = parser.error
        if message.startswith("unexpected end of input"):
            fix = fix_gzip
        elif message.startswith("the file is empty"):
            fix = "the profiler wrote nothing: check that the trace handler ran (prof.export_chrome_trace)"
        else:
            fix = "give a PyTorch profiler trace (Chrome trace JSON, plain or .gz)"
        raise TraceFormatError(path, message, fix, offset=offset, line=line)
    res = parser.result()
    meta = res.meta
    if meta["format"] == 1 and not meta["has_events_key"]:
        raise TraceFormatError(path, "not a Kineto trace: a JSON object without a \"traceEvents\" array",
                               "give a PyTorch profiler trace (Chrome trace JSON, plain or .gz)")
    return _File(path, res.rows, res.device_order, res.set_aside, meta, res.strings)


def _parse_all(paths: list[str], device_categories: list[str], threads: int | None = None) -> list[_File]:
    if len(paths) == 1:
        return [_parse_file(paths[0], device_categories, prefetch=True)]
    workers = threads or min(len(paths), cores())
    if workers <= 1:
        return [_parse_file(p, device_categories) for p in paths]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda p: _parse_file(p, device_categories), paths))


_RANK_IN_NAME = re.compile(r"(?i)(?:^|[^a-z])rank[-_]?(\d+)")
#: Ranks are int32 in every pau table (DESIGN §2.1).
_RANK_MAX = np.iinfo(np.int32).max


def _assign_ranks(files: list[_File], warnings: list[str]) -> None:
    """Set ``rank`` and ``rank_source`` of every file (see the module docstring)."""
    claimed: dict[int, _File] = {}
    pending = []
    for f in files:
        r = f.meta["rank"]
        if r is not None and r < 0:
            warnings.append(RunWarning("kineto.rank_invalid", f"{f.path}: distributedInfo.rank is {r}, not a rank; ignored"))
            r = None
        if r is not None:
            if r > _RANK_MAX:
                raise TraceFormatError(
                    f.path, f"distributedInfo.rank is {r}, beyond the largest rank pau holds ({_RANK_MAX}, "
                    "int32)", "correct distributedInfo.rank in the trace (it is the process's rank in the job)")
            f.rank, f.rank_source = int(r), "distributedInfo"
        else:
            m = _RANK_IN_NAME.search(os.path.basename(f.path))
            if m and int(m.group(1)) > _RANK_MAX:
                raise TraceFormatError(
                    f.path, f"the file name gives rank {m.group(1)}, beyond the largest rank pau holds "
                    f"({_RANK_MAX}, int32), and the trace has no distributedInfo.rank",
                    "rename the file with its real rank, or add distributedInfo.rank to the trace")
            if m:
                f.rank, f.rank_source = int(m.group(1)), "file name"
            else:
                pending.append(f)
                continue
        other = claimed.get(f.rank)
        if other is not None:
            raise DuplicateRankError(
                f.path, f"rank {f.rank} (from its {f.rank_source}) is also claimed by {other.path} "
                f"(from its {other.rank_source})",
                "give each rank's trace its own directory entry once; remove the duplicate or the stale file")
        claimed[f.rank] = f
    free = 0
    for f in pending:
        while free in claimed:
            free += 1
        f.rank, f.rank_source = free, "assigned"
        claimed[free] = f
    for f in files:
        if f.rank_source == "file name":
            warnings.append(RunWarning("kineto.rank_from_file_name", f"{f.path}: no distributedInfo.rank in the trace; rank {f.rank} taken from "
                            "the file name"))
        elif f.rank_source == "assigned":
            warnings.append(RunWarning("kineto.rank_assigned", f"{f.path}: no distributedInfo.rank in the trace nor a rank in its file name; "
                            f"assigned rank {f.rank} (the smallest rank no other file claims, in file-name "
                            "order)"))


# ---------------------------------------------------------------------------
# assembling tables


_I64_MIN, _I64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)
_STEP_NAME = re.compile(r"^ProfilerStep\s*#\s*(\d+)$")

# Why rows were refused after parsing (the native parser's reasons are in _REASONS).
_BEYOND_INT64 = "\"ts\" + baseTimeNanoseconds (+ \"dur\") is beyond the int64 nanosecond range"
_STEP_BEYOND_INT64 = "the ProfilerStep# number is beyond int64"


def _screen(f: _File, on_invalid: str, quarantine: list, warnings: list) -> None:
    """Absolute times of every kept row, and the rows pau cannot use.

    Sets ``f.rows["start_abs"]``/``["end_abs"]`` (``ts`` + ``baseTimeNanoseconds`` and
    + ``dur``, exact int64) and ``f.keep``. Any int64 is a time (a negative one lies
    before the Unix epoch). A device event or a step annotation whose absolute time
    overflows int64, or a step whose number does not fit int64, is refused (InvalidEventError naming the byte and line) or, with
    ``on_invalid="quarantine"``, set aside. A host launch whose time overflows only
    loses its launch time (the kernel is then dated by its own start).
    """
    rows = f.rows
    base = int(f.meta["base_time_ns"] or 0)
    if base < 0:
        warnings.append(RunWarning("kineto.negative_base_time", f"{f.path}: baseTimeNanoseconds is {base}, "
                                   "before the Unix epoch (Kineto writes the epoch time of the trace's start); "
                                   "added as written"))
    ts, dur = rows["ts_ns"], rows["dur_ns"]
    # Compare before adding, never add then look: a wrapped sum looks like a time.
    over = ts > _I64_MAX - base if base >= 0 else ts < _I64_MIN - base
    start = np.where(over, 0, ts + np.where(over, 0, base))
    over |= start > _I64_MAX - dur
    end = np.where(over, 0, start + np.where(over, 0, dur))
    rows["start_abs"], rows["end_abs"] = start, end
    step_of_id = _step_names(f)
    is_step = (rows["is_device"] == 0) & np.isin(rows["name"], np.fromiter(step_of_id, np.int32, len(step_of_id)))
    gpu_anno = [i for i, s in enumerate(f.strings) if s == "gpu_user_annotation"]
    if gpu_anno:
        is_step &= ~np.isin(rows["cat"], np.array(gpu_anno, np.int32))
    checked = (rows["is_device"] == 1) | is_step
    huge = {i for i, n in step_of_id.items() if n is None}
    step_huge = is_step & np.isin(rows["name"], np.fromiter(huge, np.int32, len(huge)))
    reason = np.full(ts.size, -1, np.int8)
    reason[checked & over] = 0
    reason[step_huge] = 1
    f.keep = (reason < 0) | ~checked
    f.time_ok = ~over
    f.is_step = is_step & f.keep
    bad = np.flatnonzero(reason >= 0)
    if bad.size == 0:
        return
    texts = (_BEYOND_INT64, _STEP_BEYOND_INT64)
    counts = Counter(texts[int(r)] for r in reason[bad])
    summary = ", ".join(f"{n} {r}" for r, n in counts.most_common())
    first = int(bad[0])
    if on_invalid == "raise":
        cat, name = f.strings[int(rows["cat"][first])], f.strings[int(rows["name"][first])]
        value = (f"\"ts\" {int(ts[first])} ns + baseTimeNanoseconds {base}"
                 if reason[first] < 1 else f"name {name!r}")
        off = int(rows["offset"][first])
        raise InvalidEventError(
            f.path, f"{cat or 'uncategorized'} event {name!r}: {texts[int(reason[first])]} ({value}; {bad.size} "
            f"such events in this file: {summary})",
            "repair the trace (or its baseTimeNanoseconds), or pass on_invalid='quarantine' to set such "
            "events aside", offset=off, line=int(_lines_at(f.path, np.array([off]))[0]))
    offsets = rows["offset"][bad]
    quarantine.append(_events_aside(f, offsets, _lines_at(f.path, offsets), rows["cat"][bad], rows["name"][bad],
                                    [texts[int(r)] for r in reason[bad]]))
    warnings.append(RunWarning("kineto.events_set_aside", f"{f.path}: {bad.size} events set aside ({summary}); "
                               "see .quarantine"))


def _lines_at(path: str, offsets: np.ndarray) -> np.ndarray:
    """1-based line of each byte offset of the decompressed JSON (offsets ascending).
    Only on the error path: the file is read again."""
    out = np.empty(offsets.size, np.int64)
    order = np.argsort(offsets, kind="stable")
    with open(path, "rb") as raw:
        gz = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        f = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
        pos = lines = 0
        k = 0
        while k < order.size:
            chunk = f.read(CHUNK_BYTES)
            if not chunk:
                break
            while k < order.size and offsets[order[k]] < pos + len(chunk):
                out[order[k]] = lines + chunk.count(b"\n", 0, int(offsets[order[k]]) - pos) + 1
                k += 1
            lines += chunk.count(b"\n")
            pos += len(chunk)
        out[order[k:]] = lines + 1
    return out


def _step_names(f: _File) -> dict[int, int | None]:
    """String id -> step number of the file's ``ProfilerStep#N`` names (None: N beyond int64)."""
    host = f.rows["is_device"] == 0
    ids = np.unique(f.rows["name"][host]) if host.any() else np.empty(0, np.int32)
    out: dict[int, int | None] = {}
    for i in ids.tolist():
        m = _STEP_NAME.match(f.strings[i])
        if m:
            n = int(m.group(1))
            out[i] = n if n <= _I64_MAX else None
    return out


def _steps(f: _File) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start_ns, end_ns, step) of the file's host-side ProfilerStep annotations,
    sorted by start (absolute times; after :func:`_screen`)."""
    rows = f.rows
    idx = np.flatnonzero(f.is_step)
    if idx.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64)
    step_of_id = _step_names(f)
    start, end = rows["start_abs"][idx], rows["end_abs"][idx]
    step = np.array([step_of_id[int(i)] for i in rows["name"][idx]], np.int64)
    order = np.argsort(start, kind="stable")
    return start[order], end[order], step[order]


def _window(f: _File) -> tuple[int, int] | None:
    """The profiler's capture window of the file: the extent of its ``Trace`` events
    ("PyTorch Profiler (0)"), absolute; None when the trace has none."""
    trace = [i for i, s in enumerate(f.strings) if s == "Trace"]
    if not trace:
        return None
    sel = (f.rows["is_device"] == 0) & np.isin(f.rows["cat"], np.array(trace, np.int32)) & f.keep
    sel &= f.rows["start_abs"] >= 0  # an unusable window is no window
    if not sel.any():
        return None
    return int(f.rows["start_abs"][sel].min()), int(f.rows["end_abs"][sel].max())


def _clip_steps(st_s: np.ndarray, st_e: np.ndarray, window: tuple[int, int] | None
                ) -> tuple[np.ndarray, np.ndarray, int]:
    """Steps clipped to the capture window, and how many were clipped. A step annotation
    can outlast what the profiler captured (hta-triton_example: ProfilerStep#1 ends 13 s
    after the capture window); the part outside was never observed. A step wholly
    outside the window is kept as written (clipping would leave nothing of it)."""
    if window is None or st_s.size == 0:
        return st_s, st_e, 0
    lo, hi = window
    cs, ce = np.maximum(st_s, lo), np.minimum(st_e, hi)
    ok = cs < ce
    cs, ce = np.where(ok, cs, st_s), np.where(ok, ce, st_e)
    return cs, ce, int(((cs != st_s) | (ce != st_e)).sum())


def _busy_ns(start: np.ndarray, end: np.ndarray) -> int:
    """Length of the union of half-open intervals."""
    if start.size == 0:
        return 0
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    reach = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > reach[:-1]]
    first = np.flatnonzero(new)
    last_reach = np.r_[reach[first[1:] - 1], reach[-1]]
    return int((last_reach - s[first]).sum())


#: A rank whose device events cover less than this share of its span gets a warning.
COVERAGE_WARN = 0.05


def _launch_times(f: _File, dev_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each device row, the absolute start of the earliest host event with the
    same correlation id (the launch: the runtime call, which encloses the driver call
    that carries the same id), and whether there is one."""
    rows = f.rows
    corr = rows["correlation"]
    host = np.flatnonzero((rows["is_device"] == 0) & (corr >= 0) & f.time_ok)
    out = np.zeros(dev_idx.size, np.int64)
    found = np.zeros(dev_idx.size, bool)
    if host.size == 0 or dev_idx.size == 0:
        return out, found
    hc = corr[host]
    order = np.lexsort((rows["start_abs"][host], hc))  # by id, then start: the first is the earliest
    hc_sorted, ts_sorted = hc[order], rows["start_abs"][host][order]
    dc = corr[dev_idx]
    pos = np.searchsorted(hc_sorted, dc)
    ok = (dc >= 0) & (pos < hc_sorted.size)
    ok[ok] = hc_sorted[pos[ok]] == dc[ok]
    out[ok] = ts_sorted[pos[ok]]
    return out, ok


#: The causes a host interval can give device idle time (docs/idle.md), in the order of
#: the ``cause`` dictionary of :data:`HOST_SCHEMA`.
HOST_CAUSES = ("data_wait", "sync_wait")
#: The host table of a trace: intervals in which the host waited (rank -1: every rank).
HOST_SCHEMA = pa.schema([("rank", pa.int32()), ("start_ns", pa.int64()), ("end_ns", pa.int64()),
                         ("cause", pa.dictionary(pa.int8(), pa.string()))])
_DATA_WAIT = [re.compile(p) for p in DATA_WAIT_SPANS]


def host_table(rank: np.ndarray, start: np.ndarray, end: np.ndarray, cause: np.ndarray) -> pa.Table:
    """A :data:`HOST_SCHEMA` table from columns (``cause``: indices into
    :data:`HOST_CAUSES`), sorted by (rank, start, end)."""
    rank, start, end = (np.asarray(rank, np.int32), np.asarray(start, np.int64), np.asarray(end, np.int64))
    cause = np.asarray(cause, np.int8)
    order = np.lexsort((end, start, rank))
    return pa.table({
        "rank": pa.array(rank[order], pa.int32()), "start_ns": pa.array(start[order], pa.int64()),
        "end_ns": pa.array(end[order], pa.int64()),
        "cause": pa.DictionaryArray.from_arrays(pa.array(cause[order], pa.int8()),
                                                pa.array(HOST_CAUSES, pa.string())),
    }, schema=HOST_SCHEMA)


def host_cause(name: str) -> int:
    """The :data:`HOST_CAUSES` index of a host event named ``name`` (a synchronize call
    or a DataLoader span), or -1."""
    if any(p.search(name) for p in _DATA_WAIT):
        return HOST_CAUSES.index("data_wait")
    if sync_call(name):
        return HOST_CAUSES.index("sync_wait")
    return -1


def _host_waits(f: _File, device_cats: Mapping[str, Any], warnings: list) -> tuple[np.ndarray, ...]:
    """(start, end, cause) of the file's host events that explain device idle time:
    synchronize calls and DataLoader spans (absolute times; after :func:`_screen`).
    A host event whose absolute time is beyond int64 is left out, with a warning
    counting them (it holds no time pau can place)."""
    rows = f.rows
    host = rows["is_device"] == 0
    ids = np.unique(rows["name"][host]) if host.any() else np.empty(0, np.int32)
    code = np.full(len(f.strings), -1, np.int8)
    for i in ids.tolist():
        code[i] = host_cause(f.strings[i])
    device_cat = np.zeros(len(f.strings), bool)
    device_cat[[i for i, s in enumerate(f.strings) if s in device_cats]] = True
    sel = host & (code[rows["name"]] >= 0) & ~device_cat[rows["cat"]]
    lost = int((sel & ~f.time_ok).sum())
    if lost:
        warnings.append(RunWarning(
            "kineto.host_waits_beyond_int64", f"{f.path}: {lost} synchronize calls or DataLoader spans have a "
            "time beyond the int64 nanosecond range (\"ts\" + baseTimeNanoseconds); left out of the idle "
            "split's host intervals"))
    idx = np.flatnonzero(sel & f.time_ok)
    return rows["start_abs"][idx], rows["end_abs"][idx], code[rows["name"][idx]]


def _step_of(times: np.ndarray, st: np.ndarray, en: np.ndarray, step: np.ndarray) -> np.ndarray:
    """Step number containing each time ([start, end) of the latest step starting at or
    before it), -1 for none."""
    if st.size == 0:
        return np.full(times.size, -1, np.int64)
    pos = np.searchsorted(st, times, side="right") - 1
    inside = pos >= 0
    inside[inside] = times[inside] < en[pos[inside]]
    return np.where(inside, step[np.maximum(pos, 0)], -1)


def _kinds(f: _File, dev_idx: np.ndarray, rules: Rules) -> tuple[np.ndarray, np.ndarray]:
    """int8 kind codes of device rows, and which rows no rule classified, classifying
    each distinct (category, name) once."""
    n_str = len(f.strings)
    key = f.rows["cat"][dev_idx].astype(np.int64) * n_str + f.rows["name"][dev_idx]
    uniq, inverse = np.unique(key, return_inverse=True)
    codes = np.empty(uniq.size, np.int8)
    known = np.empty(uniq.size, bool)
    for j, k in enumerate(uniq.tolist()):
        kind, known[j] = rules.match(f.strings[k // n_str], f.strings[k % n_str])
        codes[j] = KINDS.index(kind) if kind is not None else -1
    inverse = inverse.reshape(-1)
    return codes[inverse], ~known[inverse]


def _unclassified_warning(f: _File, idx: np.ndarray, unclassified: np.ndarray) -> RunWarning | None:
    """The warning for device time no rule classed: its share of the file's device
    time and its top names by time, so that the rule to add is plain."""
    if not unclassified.any():
        return None
    dur = f.rows["dur_ns"][idx]
    names = f.rows["name"][idx][unclassified]
    cats = f.rows["cat"][idx][unclassified]
    d = dur[unclassified]
    total = int(dur.sum())
    by: dict[tuple[int, int], list[int]] = {}
    for c, n, t in zip(cats.tolist(), names.tolist(), d.tolist()):
        acc = by.setdefault((c, n), [0, 0])
        acc[0] += t
        acc[1] += 1
    top = sorted(by.items(), key=lambda kv: -kv[1][0])
    shown = ", ".join(f"{f.strings[n]!r} ({f.strings[c]}, {k} events, {t / 1e3:,.3f} us)"
                      for (c, n), (t, k) in top[:5])
    share = f"{100 * int(d.sum()) / total:.2f} % of the file's device event time" if total else "no time"
    return RunWarning(
        "kineto.unclassified_device_time",
        f"{f.path}: {int(unclassified.sum())} device events of {len(by)} names match no rule and are counted "
        f"as 'other' ({share}); top names: {shown}{' ...' if len(top) > 5 else ''}. Add a name rule for "
        "them (read_kineto(path, rules={device: table}) or Rules().extend(names=[...]))")


#: What :attr:`KinetoTrace.quarantine` holds: ``source_file, location, reason``
#: (:data:`pau.engine.types.QUARANTINE_SCHEMA`; ``location`` is ``line L, offset B`` for an
#: event, ``file`` for a file without device events), then the event's byte ``offset``
#: and 1-based ``line`` in the (inflated) file, its ``category`` and ``name`` (all null
#: for a whole file).
QUARANTINE_SCHEMA = quarantine_schema(pa.field("offset", pa.int64()), pa.field("line", pa.int64()),
                                      pa.field("category", pa.string()), pa.field("name", pa.string()))


def _events_aside(f: _File, offsets: np.ndarray, lines: np.ndarray, cats: np.ndarray, names: np.ndarray,
                  reasons: list[str]) -> pa.Table:
    """Events of ``f`` set aside: their byte offsets, lines, category and name string
    ids, and why."""
    return quarantine_table(
        QUARANTINE_SCHEMA, f.path, [f"line {int(ln)}, offset {int(o)}" for o, ln in zip(offsets, lines)], reasons,
        offset=pa.array(offsets, pa.int64()), line=pa.array(lines, pa.int64()),
        category=[f.strings[int(i)] for i in cats], name=[f.strings[int(i)] for i in names])

#: Why the native parser set an event aside, by code.
_REASONS = {int(k): v for k, v in _core.kineto_invalid_reasons().items()}


_RANKS_SCHEMA = pa.schema([
    ("rank", pa.int32()), ("file_rank", pa.int32()), ("rank_source", pa.string()),
    ("device", pa.int64()), ("device_name", pa.string()), ("world_size", pa.int64()),
    ("backend", pa.string()), ("pid", pa.int64()), ("source_file", pa.string()),
    ("format", pa.string()), ("time_resolution", pa.string()), ("base_time_ns", pa.int64()),
    ("events", pa.int64()), ("steps", pa.int64()),
    ("window_start_ns", pa.int64()), ("window_end_ns", pa.int64()),
])


@dataclass
class KinetoTrace:
    """What :func:`read_kineto` returns.

    Attributes
    ----------
    events : pyarrow.Table
        Device events (DESIGN §2.1), ordered by ``(rank, start_ns)``: ``rank:int32,
        stream:int32, start_ns:int64, end_ns:int64, kind:dictionary<int8,string>,
        name:dictionary<int32,string>, step:int64`` (the ``ProfilerStep`` the event was
        launched in, null outside every step), ``bytes:int64`` (copies and fills; null
        otherwise), ``launch_ns:int64`` (the start of the host call that launched the
        event, found through its ``correlation`` id; null without one). ``stream`` is
        -1 for device-wide events (``Event Sync``, ``Context Sync``: Kineto writes -1
        or 4294967295).
    lifecycle : pyarrow.Table
        DESIGN §2.2 columns; one ``step`` record per ``ProfilerStep#N`` annotation and
        rank (attempt 0), from the host-side annotation's start and end.
    ranks : pyarrow.Table
        One row per rank: ``rank, file_rank, rank_source`` (``distributedInfo``, ``file
        name`` or ``assigned``), ``device, device_name, world_size, backend, pid`` (the
        host process), ``source_file, format`` (``traceEvents`` or ``array``),
        ``time_resolution`` (``ns`` when some time has a sub-microsecond part),
        ``base_time_ns, events, steps``.
    warnings : list of str
        Everything pau assumed or set aside, with counts.
    quarantine : pyarrow.Table
        With ``on_invalid="quarantine"``: :data:`QUARANTINE_SCHEMA` (``source_file,
        location, reason, offset, line, category, name``) of each event or file set
        aside (empty otherwise).
    host : pyarrow.Table
        :data:`HOST_SCHEMA`: ``rank, start_ns, end_ns, cause`` (``data_wait`` for a
        DataLoader span, ``sync_wait`` for a synchronize call), sorted by rank and
        start; the host side of the idle split (:func:`pau.figures.idle.idle_by_cause`).
    """

    events: pa.Table
    lifecycle: pa.Table
    ranks: pa.Table
    warnings: list = field(default_factory=list)
    quarantine: pa.Table = field(default_factory=lambda: QUARANTINE_SCHEMA.empty_table())
    host: pa.Table = field(default_factory=lambda: HOST_SCHEMA.empty_table())

    def spans(self) -> pa.Table:
        """``rank, start_ns, end_ns``: the profiled window of each rank, from the first
        to the last instant covered by its device events or its steps. Pass it as
        ``span=`` to :func:`pau.core.classify` to count the idle time at the edges
        (the default span is first to last device event)."""
        return spans_of(self.events, self.lifecycle)

    def __repr__(self) -> str:
        return (f"KinetoTrace(ranks={self.ranks.num_rows}, events={self.events.num_rows}, "
                f"steps={self.lifecycle.num_rows}, warnings={len(self.warnings)})")


def _device_names(f: _File) -> dict[int, str]:
    names = {int(i): n for i, n in zip(f.meta["device_ids"], f.meta["device_names"]) if n}
    for pid, label in zip(f.meta["label_pids"], f.meta["labels"]):
        if label and label != "CPU":
            names.setdefault(int(pid), label)
    return names


def _host_pid(f: _File) -> int | None:
    for pid, label in zip(f.meta["label_pids"], f.meta["labels"]):
        if label == "CPU":
            return int(pid)
    host = f.rows["pid"][(f.rows["is_device"] == 0) & (f.rows["pid"] >= 0)]
    if host.size:
        vals, counts = np.unique(host, return_counts=True)
        return int(vals[np.argmax(counts)])
    return None


def _check_on_invalid(on_invalid: str) -> None:
    check_on_invalid(on_invalid)


def _set_aside(f: _File, on_invalid: str, quarantine: list, warnings: list) -> None:
    a = f.aside
    if a["offset"].size == 0:
        return
    reasons = Counter(_REASONS[int(r)] for r in a["reason"])
    if on_invalid == "raise":
        cat, name = f.strings[int(a["cat"][0])], f.strings[int(a["name"][0])]
        more = f" ({a['offset'].size} such events in this file: "
        more += ", ".join(f"{n} {r}" for r, n in reasons.most_common()) + ")"
        raise InvalidEventError(
            f.path, f"{cat or 'uncategorized'} event {name!r}: {_REASONS[int(a['reason'][0])]}{more}",
            "repair the trace, or pass on_invalid='quarantine' to set such events aside",
            offset=int(a["offset"][0]), line=int(a["line"][0]))
    n = a["offset"].size
    quarantine.append(_events_aside(f, a["offset"], a["line"], a["cat"], a["name"],
                                    [_REASONS[int(r)] for r in a["reason"]]))
    warnings.append(RunWarning("kineto.events_set_aside", f"{f.path}: {n} events set aside (" +
                    ", ".join(f"{k} {r}" for r, k in reasons.most_common()) + "); see .quarantine"))


def _assemble(files: list[_File], rules: Rules, on_invalid: str, warnings: list[str]) -> KinetoTrace:
    quarantine: list[pa.Table] = []
    usable: list[_File] = []
    for f in files:
        _set_aside(f, on_invalid, quarantine, warnings)
        _screen(f, on_invalid, quarantine, warnings)
        f.order = f.order[f.keep[f.order]]
        unknown = {c: n for c, n in f.cat_counts().items()
                   if c not in rules.categories and c not in HOST_CATEGORIES}
        if unknown:
            warnings.append(RunWarning("kineto.categories_not_counted", f"{f.path}: complete events of categories not in Rules.categories were not "
                            "counted as device activity: " +
                            ", ".join(f"{c or '(none)'} {n}" for c, n in sorted(unknown.items())) +
                            "; add the category to Rules.categories if it is device work"))
        if f.meta["sub_ns"]:
            warnings.append(RunWarning("kineto.sub_ns_rounded", f"{f.path}: some times have digits below the nanosecond; rounded to the "
                            "nearest nanosecond (half away from zero)"))
        if f.order.size == 0:
            counts = f.cat_counts()
            detail = ", ".join(f"{c or '(none)'} {n}" for c, n in counts.most_common(6)) or "none"
            problem = (f"no device events: {f.meta['complete_events']} complete events, none of a device "
                       f"category ({detail})")
            fix = ("profile with the device activity on (torch.profiler ProfilerActivity.CUDA, or the "
                   "device's activity), add the device's category to Rules.categories, or pass "
                   "on_invalid='quarantine' to skip such files")
            if on_invalid == "raise":
                raise NoDeviceEventsError(f.path, problem, fix)
            warnings.append(RunWarning("kineto.no_device_events", f"{f.path}: {problem}; skipped"))
            quarantine.append(quarantine_table(QUARANTINE_SCHEMA, f.path, ["file"], ["no device events"],
                                               offset=[None], line=[None], category=[None], name=[None]))
        usable.append(f)

    # Ranks: one per file, or one per (file, device) when a file holds several devices.
    devices = {id(f): np.unique(f.rows["device"][f.order]) for f in usable}
    multi = any(d.size > 1 for d in devices.values())
    if multi:
        pairs = sorted((f.rank, int(d), k) for k, f in enumerate(usable) for d in devices[id(f)])
        rank_of = {(k, d): r for r, (_, d, k) in enumerate(pairs)}
        shown = ", ".join(f"{os.path.basename(usable[k].path)} device {d} -> rank {r}"
                          for (k, d), r in list(rank_of.items())[:8])
        warnings.append(RunWarning("kineto.several_devices_per_file", "a file holds several devices: every (file, device) pair is a rank, numbered in "
                        f"order of (file rank, device id): {shown}" + (" ..." if len(rank_of) > 8 else "")))
    else:
        rank_of = {(k, int(d)): f.rank for k, f in enumerate(usable) for d in devices[id(f)]}

    names: dict[str, int] = {}
    blocks, life, rank_rows = [], [], []
    host_parts: list[tuple[np.ndarray, ...]] = []
    for k, f in enumerate(usable):
        rows, idx = f.rows, f.order
        st_s, st_e, st_n = _steps(f)
        window = _window(f)
        dev = rows["device"][idx]
        start, end = rows["start_abs"][idx], rows["end_abs"][idx]
        launch, launched = _launch_times(f, idx)
        when = np.where(launched, launch, start)
        # Device events are dated by the steps as annotated; the steps' records are
        # then clipped to what the profiler captured.
        step = _step_of(when, st_s, st_e, st_n)
        st_s, st_e, clipped = _clip_steps(st_s, st_e, window)
        if clipped and window is not None:
            warnings.append(RunWarning(
                "kineto.steps_clipped_to_window",
                f"{f.path}: {clipped} ProfilerStep annotations reach beyond the profiler's capture window "
                f"[{window[0]}, {window[1]}) ns (its 'PyTorch Profiler' event); their records are clipped to it, "
                "since nothing outside it was captured"))
        if window is not None and idx.size:
            outside = int(((start < window[0]) | (end > window[1])).sum())
            if outside:
                warnings.append(RunWarning(
                    "kineto.events_outside_window",
                    f"{f.path}: {outside} device events reach outside the profiler's capture window "
                    f"[{window[0]}, {window[1]}) ns; they are kept, and the rank's span covers them"))
        kinds, unclassified = _kinds(f, idx, rules)
        w = _unclassified_warning(f, idx, unclassified)
        if w is not None:
            warnings.append(w)
        local = rows["name"][idx]
        uniq_local, inv = np.unique(local, return_inverse=True)
        glob = np.array([names.setdefault(f.strings[i], len(names)) for i in uniq_local.tolist()], np.int32)
        name_ids = glob[inv.reshape(-1)] if uniq_local.size else np.empty(0, np.int32)
        stream = rows["stream"][idx]
        nbytes = rows["bytes"][idx]
        dev_names = _device_names(f)
        pid = _host_pid(f)
        res = "ns" if f.meta["sub_us"] else "us"
        fmt = {1: "traceEvents", 2: "array"}.get(f.meta["format"], "unknown")
        split = np.flatnonzero(np.diff(dev)) + 1 if dev.size else np.empty(0, np.int64)
        bounds = [0, *split.tolist(), dev.size]
        for a, b in zip(bounds[:-1], bounds[1:]):
            if a == b:
                continue
            d = int(dev[a])
            r = rank_of[(k, d)]
            blocks.append((r, {
                "stream": stream[a:b], "start_ns": start[a:b], "end_ns": end[a:b], "kind": kinds[a:b],
                "name": name_ids[a:b], "step": step[a:b], "bytes": nbytes[a:b],
                "launch_ns": launch[a:b], "launched": launched[a:b]}))
            if st_s.size:
                life.append((r, st_s, st_e, st_n))
            rank_rows.append({
                "rank": r, "file_rank": f.rank, "rank_source": f.rank_source, "device": d,
                "device_name": dev_names.get(d), "world_size": f.meta["world_size"],
                "backend": f.meta["backend"] or None, "pid": pid, "source_file": f.path, "format": fmt,
                "time_resolution": res, "base_time_ns": f.meta["base_time_ns"], "events": b - a,
                "steps": int(st_s.size), "window_start_ns": window and window[0],
                "window_end_ns": window and window[1]})
        # Host waits belong to every rank of the file (one host process drives them).
        h_start, h_end, h_cause = _host_waits(f, rules.categories, warnings)
        file_ranks = sorted({rank_of[(k, int(d))] for d in np.unique(dev)}) if dev.size else [f.rank]
        for r in file_ranks:
            host_parts.append((np.full(h_start.size, r, np.int32), h_start, h_end, h_cause))
        if dev.size == 0:
            rank_rows.append({
                "rank": f.rank, "file_rank": f.rank, "rank_source": f.rank_source, "device": None,
                "device_name": None, "world_size": f.meta["world_size"], "backend": f.meta["backend"] or None,
                "pid": pid, "source_file": f.path, "format": fmt, "time_resolution": res,
                "base_time_ns": f.meta["base_time_ns"], "events": 0, "steps": int(st_s.size),
                "window_start_ns": window and window[0], "window_end_ns": window and window[1]})

    blocks.sort(key=lambda x: x[0])
    if blocks:
        cat = {c: np.concatenate([b[c] for _, b in blocks]) for c in blocks[0][1]}
        rank = np.concatenate([np.full(b["start_ns"].size, r, np.int32) for r, b in blocks])
    else:
        cat = {"stream": np.empty(0, np.int64), "start_ns": np.empty(0, np.int64),
               "end_ns": np.empty(0, np.int64), "kind": np.empty(0, np.int8),
               "name": np.empty(0, np.int32), "step": np.empty(0, np.int64), "bytes": np.empty(0, np.int64),
               "launch_ns": np.empty(0, np.int64), "launched": np.empty(0, bool)}
        rank = np.empty(0, np.int32)
    if (cat["kind"] < 0).any():  # pragma: no cover - every device category maps to a kind
        raise AssertionError("unclassified device event")
    stream = cat["stream"]
    if stream.size and (stream.max() > np.iinfo(np.int32).max or stream.min() < np.iinfo(np.int32).min):
        stream = np.where((stream > np.iinfo(np.int32).max) | (stream < np.iinfo(np.int32).min), -1, stream)
    name_dict = pa.array(list(names), pa.string())
    events = pa.table({
        "rank": pa.array(rank, pa.int32()),
        "stream": pa.array(stream.astype(np.int32), pa.int32()),
        "start_ns": pa.array(cat["start_ns"], pa.int64()),
        "end_ns": pa.array(cat["end_ns"], pa.int64()),
        "kind": pa.DictionaryArray.from_arrays(pa.array(cat["kind"], pa.int8()), pa.array(KINDS, pa.string())),
        "name": pa.DictionaryArray.from_arrays(pa.array(cat["name"], pa.int32()), name_dict),
        "step": pa.array(cat["step"], pa.int64(), mask=cat["step"] < 0),
        "bytes": pa.array(cat["bytes"], pa.int64(), mask=cat["bytes"] < 0),
        "launch_ns": pa.array(cat["launch_ns"], pa.int64(), mask=~cat["launched"]),
    })
    host = host_table(*(np.concatenate([p[j] for p in host_parts]) if host_parts else np.empty(0)
                        for j in range(4)))

    life.sort(key=lambda x: x[0])
    if life:
        lr = np.concatenate([np.full(s.size, r, np.int32) for r, s, _, _ in life])
        ls = np.concatenate([s for _, s, _, _ in life])
        le = np.concatenate([e for _, _, e, _ in life])
        ln = np.concatenate([n for _, _, _, n in life])
    else:
        lr, ls, le, ln = (np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0, np.int64),
                          np.empty(0, np.int64))
    n = lr.size
    null64 = pa.nulls(n, pa.int64())
    lifecycle = pa.table({
        "record": pa.array(["step"] * n, pa.string()), "attempt": pa.array(np.zeros(n, np.int32)),
        "rank": pa.array(lr, pa.int32()), "start_ns": pa.array(ls, pa.int64()),
        "end_ns": pa.array(le, pa.int64()), "step": pa.array(ln, pa.int64()),
        "block_end_ns": null64, "durable_ns": null64, "ok": pa.nulls(n, pa.bool_()),
        "kind": pa.nulls(n, pa.string()), "tokens": null64}, schema=_LIFECYCLE_SCHEMA)

    rank_rows.sort(key=lambda r: (r["rank"], r["device"] is None))
    ranks = pa.Table.from_pylist(rank_rows, schema=_RANKS_SCHEMA)
    q = pa.concat_tables(quarantine) if quarantine else QUARANTINE_SCHEMA.empty_table()
    trace = KinetoTrace(events, lifecycle, ranks, warnings, q, host)
    _coverage_warnings(trace, warnings)
    return trace


def _coverage_warnings(trace: KinetoTrace, warnings: list) -> None:
    """Warn for each rank whose device events cover less than COVERAGE_WARN of its
    span: its figures are then mostly idle time, which is worth a second look (a step
    annotation or a capture window far longer than the device work, a device whose
    activity was not recorded)."""
    ev = trace.events
    rank = ev["rank"].to_numpy()
    start, end = ev["start_ns"].to_numpy(), ev["end_ns"].to_numpy()
    for row in trace.spans().to_pylist():
        span = row["end_ns"] - row["start_ns"]
        sel = rank == row["rank"]
        busy = _busy_ns(start[sel], end[sel])
        if span > 0 and busy < COVERAGE_WARN * span:
            warnings.append(RunWarning(
                "kineto.low_device_coverage",
                f"rank {row['rank']}: device events cover {busy:,} ns of its {span:,} ns span "
                f"({100 * busy / span:.2f} %, below {100 * COVERAGE_WARN:.0f} %): its figures are mostly idle "
                "time; check that the device's activity was recorded and that the steps or the capture "
                "window are not far longer than the work"))


def read_kineto(path: str | os.PathLike | Sequence[str | os.PathLike], *, rules: Rules | None = None,
                on_invalid: str = "raise", threads: int | None = None) -> KinetoTrace:
    """Read PyTorch profiler (Kineto) traces into pau's tables.

    Parameters
    ----------
    path : str, os.PathLike or sequence of them
        A trace file (``.json`` or gzip, whatever its name), a directory of them (one
        file per rank; ``*.json`` and ``*.gz``, not recursive), or a list of files.
        Both the current format (``{"traceEvents": [...]}``) and the old one (a
        top-level array) are read.
    rules : Rules or mapping, optional
        How categories and kernel names become kinds. Default :data:`DEFAULT_RULES`
        (the device tables of :data:`pau.readers.devices.DEVICE_TABLES`). A mapping of device
        tables (``{"mtia": {"categories": ..., "names": ..., "communication": ...}}``,
        plain data, e.g. from a JSON file) replaces those devices' default tables.
    on_invalid : {"raise", "quarantine"}
        ``"raise"`` (default): a device event without a usable ``ts``/``dur``, or a file
        without device events, raises a :class:`TraceError`. ``"quarantine"``: they are
        set aside in :attr:`KinetoTrace.quarantine` and counted in the warnings.
        Unreadable files (empty, truncated, malformed, not a trace) raise either way.
    threads : int, optional
        Files parsed at once (default: one per core, up to the number of files).

    Returns
    -------
    KinetoTrace
        ``.events``, ``.lifecycle``, ``.ranks``, ``.warnings``, ``.quarantine``.

    Raises
    ------
    TraceFormatError, InvalidEventError, NoDeviceEventsError, DuplicateRankError
        All :class:`pau.errors.PauError`: they name the file, and the byte offset and
        line where they apply.

    Examples
    --------
    >>> trace = read_kineto("traces/")                        # doctest: +SKIP
    >>> pau.core.classify(trace.events, span=trace.spans())  # doctest: +SKIP
    """
    _check_on_invalid(on_invalid)
    rules = _rules(rules)
    paths = expand(path, trace_files, "read_kineto")
    warnings: list[str] = []
    files = _parse_all(paths, sorted(rules.categories), threads)
    _assign_ranks(files, warnings)
    return _assemble(files, rules, on_invalid, warnings)


def _rules(rules: Any) -> Rules:
    """The ``rules=`` option: None (the defaults), a Rules, or device tables (data)."""
    if rules is None:
        return DEFAULT_RULES
    if isinstance(rules, Rules):
        return rules
    if isinstance(rules, Mapping):
        try:
            return Rules.from_tables(rules)
        except ValueError as exc:
            raise OptionError(f"{exc}. Fix: give tables as in pau.readers.devices.DEVICE_TABLES (device -> "
                              "{categories, names, communication})") from None
    raise TypeError(f"rules: expected a pau.readers.kineto.Rules or a mapping of device tables "
                    f"(device -> {{categories, names, communication}}), got {type(rules).__name__}")


def _load_files(path: Any, rules: Rules | None = None) -> list[_File]:
    """Parsed files with ranks assigned, for adapters that need the host-side rows too
    (pau.compat.hta)."""
    rules = DEFAULT_RULES if rules is None else rules
    paths = expand(path, trace_files, "read_kineto")
    files = _parse_all(paths, sorted(rules.categories))
    _assign_ranks(files, [])
    return files
