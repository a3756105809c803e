"""Nsight Systems SQLite exports -> pau's events (and optional lifecycle) tables.

``nsys export --type sqlite report.nsys-rep`` writes one SQLite file per report.
:func:`read_nsys` reads it with Python's :mod:`sqlite3` (read-only), one query per
activity table, and builds the columns with numpy: no Python object per event.

What becomes what
-----------------
=================================== ===========================================
table                               kind
=================================== ===========================================
``CUPTI_ACTIVITY_KIND_KERNEL``      ``compute``; ``communication`` when the
                                    kernel name matches
                                    :attr:`pau.readers.kineto.Rules.communication`
                                    (NCCL, RCCL, MSCCL, HCCL)
``CUPTI_ACTIVITY_KIND_MEMCPY``      ``memcpy`` (``bytes`` kept)
``CUPTI_ACTIVITY_KIND_MEMSET``      ``memset`` (``bytes`` kept)
``CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`` ``sync``
=================================== ===========================================

Nsight creates a table only when that activity was captured, so every table is
optional; a file with none of them (a CPU-only or CUDA-API-only capture) raises
:class:`~pau.errors.NoDeviceEventsError`. Names come from ``StringIds``:
kernels use ``shortName`` (``kernel_names="demangled"`` for ``demangledName``),
memcpy/memset/sync events are named by their copy kind or sync type
(``"memcpy HtoD"``, ``"sync Stream wait sync"``...).

Ranks
-----
One rank per (GPU, process): the pairs ``(deviceId, pid)`` found in the device tables
are numbered from 0 in order of (file, deviceId, pid), where ``pid`` is the process id
in ``globalPid`` (``(globalPid >> 24) & 0xFFFFFF``). :attr:`NsysTrace.ranks` maps them
back (device, GPU name, pid, process name, file). A directory is read as one file per
node or process, in file-name order.

Time
----
Nsight writes int64 ns relative to the session start; pau adds
``TARGET_INFO_SESSION_START_TIME.utcEpochNs`` so ``start_ns`` is ns since the Unix
epoch and several files line up (``absolute=False`` keeps the session-relative times;
a file without that table keeps them too, with a warning). Times are copied exactly.

Launches and host waits
-----------------------
For the idle split (``docs/idle.md``): each device event's ``launch_ns`` is the start of
the ``CUPTI_ACTIVITY_KIND_RUNTIME`` call of its process with the same ``correlationId``
(``cudaLaunchKernel``, ``cudaMemcpyAsync``...; null without one, or for id 0, which CUPTI
gives records no API call made). :attr:`NsysTrace.host` holds the host intervals that
explain device idle time: the runtime calls named in :data:`pau.readers.devices.SYNC_CALLS`
(``cudaStreamSynchronize_v3020``: the version suffix is stripped) are ``sync_wait``, and
the NVTX ranges matching :data:`pau.readers.devices.DATA_WAIT_SPANS` are ``data_wait``; each
belongs to every rank of its process.

Lifecycle from NVTX
-------------------
NVTX ranges (``NVTX_EVENTS`` of type 59 push/pop or 60 start/end, with an end) are kept
in :attr:`NsysTrace.nvtx`, their text being ``COALESCE(text, StringIds[textId])``.
A range whose text matches ``step_pattern`` (:func:`re.search`) becomes a lifecycle
``step`` record (attempt 0) for every rank of its process; its step number is the
pattern's first group when it has one and it is an integer, else the range's ordinal
(1, 2, ...) among the step ranges of that process. By default ``step_pattern``
matches ``ProfilerStep#N``, ``step N``, ``step_N``, ``train_step N`` (a number is
required). A range whose text matches ``phase_patterns[kind]`` (kind one of init,
compile, data_warmup, data_wait, eval, custom; tried in order, after the step
pattern) becomes a ``phase`` record of that kind. Other ranges stay in ``.nvtx`` only.

Bad input
---------
Errors are :class:`~pau.readers.kineto.TraceError` subclasses (``PauError``) naming the
file, the table and the row id: an empty file, a file that is not SQLite or is
truncated/corrupt, a SQLite file that is not an Nsight export (no ``StringIds``), an
activity table without the columns pau needs, rows with ``end < start`` (with
``on_invalid="quarantine"`` these are set aside and counted in :attr:`NsysTrace.warnings`).
"""

from __future__ import annotations

import os
import pathlib
import re
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa

from pau.engine.types import check_on_invalid, quarantine_schema, quarantine_table
from pau.engine.vocab import KINDS
from pau.engine.vocab import LIFECYCLE_SCHEMA as _LIFECYCLE_SCHEMA
from pau.engine.vocab import SPANS_SCHEMA as _SPANS_SCHEMA
from pau.engine.types import RunWarning
from pau.readers._files import expand, files_in
from pau.errors import InvalidEventError, NoDeviceEventsError, OptionError, OptionTypeError, TraceFormatError
from pau.readers.kineto import DEFAULT_RULES, HOST_CAUSES, HOST_SCHEMA, Rules, host_cause, host_table

__all__ = ["DEFAULT_STEP_PATTERN", "NsysTrace", "QUARANTINE_SCHEMA", "read_nsys"]

#: NVTX ranges that are steps: ``ProfilerStep#12``, ``step 3``, ``step_3``, ``train_step:7``.
DEFAULT_STEP_PATTERN = r"(?i)^(?:ProfilerStep\s*#|(?:train[_ ]?)?step[\s_#:=-]*)(\d+)\b"

_PHASE_KINDS = ("init", "compile", "data_warmup", "data_wait", "eval", "custom")

#: NVTX event types that are ranges (ENUM_NSYS_EVENT_TYPE).
_NVTX_RANGE_TYPES = (59, 60)

_FIX_EXPORT = "export the report again with `nsys export --type sqlite <report>.nsys-rep`"


_RANKS_SCHEMA = pa.schema([
    ("rank", pa.int32()), ("device", pa.int64()), ("device_name", pa.string()),
    ("pid", pa.int64()), ("process", pa.string()), ("source_file", pa.string()),
    ("schema_version", pa.string()), ("session_start_ns", pa.int64()), ("events", pa.int64()),
])

_NVTX_SCHEMA = pa.schema([
    ("source_file", pa.string()), ("pid", pa.int64()), ("tid", pa.int64()),
    ("start_ns", pa.int64()), ("end_ns", pa.int64()), ("text", pa.string()),
])

#: What :attr:`NsysTrace.quarantine` holds: ``source_file, location, reason``
#: (:data:`pau.engine.types.QUARANTINE_SCHEMA`; ``location`` is ``table T rowid N`` for a row,
#: ``file`` for an export without device activity), then the row's ``table`` and
#: SQLite ``rowid`` (null for a whole file).
QUARANTINE_SCHEMA = quarantine_schema(pa.field("table", pa.string()), pa.field("rowid", pa.int64()))


@dataclass
class NsysTrace:
    """What :func:`read_nsys` returns.

    Attributes
    ----------
    events : pyarrow.Table
        DESIGN §2.1, ordered by ``(rank, start_ns)``: ``rank:int32, stream:int32,
        start_ns:int64, end_ns:int64, kind:dictionary<int8,string>,
        name:dictionary<int32,string>, bytes:int64`` (copies and fills, else null),
        ``launch_ns:int64`` (the start of the runtime call that launched it, null
        without one). ``stream`` is -1 for device-wide syncs (Nsight writes 4294967295).
    lifecycle : pyarrow.Table
        DESIGN §2.2 ``step``/``phase`` records from NVTX ranges (empty when none match).
    ranks : pyarrow.Table
        One row per rank: ``rank, device, device_name, pid, process, source_file,
        schema_version, session_start_ns, events``.
    nvtx : pyarrow.Table
        Every NVTX range: ``source_file, pid, tid, start_ns, end_ns, text``.
    warnings : list of str
    quarantine : pyarrow.Table
        Rows and files set aside with ``on_invalid="quarantine"``:
        :data:`QUARANTINE_SCHEMA` (``source_file, location, reason, table, rowid``).
    span : pyarrow.Table
        Each rank's span (see :meth:`spans`).
    host : pyarrow.Table
        ``rank, start_ns, end_ns, cause`` (:data:`pau.readers.kineto.HOST_SCHEMA`): the
        synchronize calls (``sync_wait``) and DataLoader NVTX ranges (``data_wait``) of
        each rank's process; the host side of :func:`pau.figures.idle.idle_by_cause`.
    """

    events: pa.Table
    lifecycle: pa.Table
    ranks: pa.Table
    nvtx: pa.Table
    warnings: list[RunWarning] = field(default_factory=list)
    quarantine: pa.Table = field(default_factory=lambda: QUARANTINE_SCHEMA.empty_table())
    span: pa.Table = field(default_factory=lambda: _SPANS_SCHEMA.empty_table())
    host: pa.Table = field(default_factory=lambda: HOST_SCHEMA.empty_table())

    def spans(self) -> pa.Table:
        """``rank, start_ns, end_ns``: each rank's span, its capture window (the Nsight
        session, ``ANALYSIS_DETAILS.duration`` from the session start) grown to any of its
        events or lifecycle records outside it (with a warning); first to last event
        when the export records no capture. Pass it as ``span=`` to
        :func:`pau.core.classify`."""
        return self.span

    def __repr__(self) -> str:
        return (f"NsysTrace(ranks={self.ranks.num_rows}, events={self.events.num_rows}, "
                f"lifecycle={self.lifecycle.num_rows}, nvtx={self.nvtx.num_rows}, "
                f"warnings={len(self.warnings)})")


def nsys_files(path: str | os.PathLike[str]) -> list[str]:
    """``path`` itself, or the ``*.sqlite`` files of a directory (not recursive), in name order."""
    return files_in(path, (".sqlite", ".sqlite3", ".db"),
                    missing="no Nsight Systems SQLite file or directory at {p}",
                    empty="no Nsight Systems exports (*.sqlite) in {p}; " + _FIX_EXPORT)


class _Db:
    """A read-only connection that turns SQLite failures into TraceFormatError."""

    def __init__(self, path: str):
        self.path = path
        if os.path.getsize(path) == 0:
            raise TraceFormatError(path, "the file is empty", _FIX_EXPORT)
        with open(path, "rb") as f:
            magic = f.read(16)
        if magic != b"SQLite format 3\x00":
            raise TraceFormatError(path, "not a SQLite database (an Nsight Systems .nsys-rep, or another "
                                   "format?)", _FIX_EXPORT)
        uri = pathlib.Path(path).resolve().as_uri() + "?mode=ro&immutable=1"
        self.con = sqlite3.connect(uri, uri=True)
        # TEXT that is not UTF-8 (a corrupt name): shown with U+FFFD for the bad bytes,
        # as names only label events, rather than failing the whole file in sqlite3
        self.con.text_factory = lambda b: b.decode("utf-8", "replace")
        self.tables = {r[0] for r in self.query("SELECT name FROM sqlite_master WHERE type IN ('table','view')")}
        if "StringIds" not in self.tables:
            raise TraceFormatError(path, "a SQLite database but not an Nsight Systems export (no StringIds "
                                   "table)", _FIX_EXPORT)

    def query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        try:
            return self.con.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise TraceFormatError(self.path, f"SQLite error ({exc}) in: {sql.split(' FROM ')[-1][:80]}",
                                   "the file is truncated or corrupt: " + _FIX_EXPORT) from None

    def columns(self, table: str) -> set[str]:
        return {r[1] for r in self.query(f"PRAGMA table_info({table})")}

    def close(self) -> None:
        self.con.close()


_I64 = np.iinfo(np.int64)


class _Rows:
    """The rows of one table with their problems: a row holding a value pau cannot use
    (a REAL, TEXT or BLOB where Nsight writes an INTEGER, a null time, a time that the
    session start pushes beyond int64) is marked bad with the column and the reason, so
    it is raised or set aside by its rowid, never converted into a wrong number."""

    def __init__(self, table: str, rows: list[Any], rowid: np.ndarray):
        self.table, self.rows = table, rows
        self.rowid = rowid
        self.bad = np.zeros(len(rows), bool)
        self.reason: dict[int, str] = {}   # first reason per bad row index

    def mark(self, idx: np.ndarray, reason: str) -> None:
        for i in np.flatnonzero(idx & ~self.bad).tolist():
            self.reason[i] = reason
        self.bad |= idx

    def ints(self, i: int, column: str, *, fill: int | None = -1) -> np.ndarray:
        """Column ``i`` as int64. Nulls become ``fill`` (``fill=None``: a null is bad);
        values that are not SQLite INTEGERs mark their row bad (and read as 0)."""
        vals = [r[i] for r in self.rows]
        if not vals:
            return np.empty(0, np.int64)
        types = set(map(type, vals))
        if types <= {int} or (fill is not None and types <= {int, type(None)}):
            # sqlite3 returns INTEGER as a Python int that always fits int64
            return np.array([fill if v is None else v for v in vals], np.int64)
        out = np.zeros(len(vals), np.int64)
        bad = np.zeros(len(vals), bool)
        for k, v in enumerate(vals):
            if type(v) is int:
                out[k] = v
            elif v is None and fill is not None:
                out[k] = fill
            else:
                bad[k] = True
        for k in np.flatnonzero(bad & ~self.bad).tolist():
            v = vals[k]
            self.reason[k] = (f"column {column} is null" if v is None else
                              f"column {column} is not an integer ({v!r:.40})")
        self.bad |= bad
        return out


def _shift(rows: _Rows, t: np.ndarray, base: int, column: str) -> np.ndarray:
    """``t + base`` (the session start), marking rows where the sum leaves int64: numpy
    would wrap them to the other end of the range without a word."""
    if base == 0 or t.size == 0:
        return t
    over = t > _I64.max - base if base > 0 else t < _I64.min - base
    if over.any():
        rows.mark(over, f"{column} + the session start ({base}) is beyond int64")
    return np.where(over, 0, t) + base


def _interval(rows: _Rows, base: int) -> tuple[np.ndarray, np.ndarray]:
    """Columns 1 and 2 of ``rows`` (``start``, ``end``) as absolute ns: a reversed row
    and a time that overflows once shifted are marked bad."""
    start = rows.ints(1, "start", fill=None)
    end = rows.ints(2, "end", fill=None)
    rows.mark((end < start) & ~rows.bad, "end before start")
    return _shift(rows, start, base, "start"), _shift(rows, end, base, "end")


def _enum(db: _Db, table: str) -> dict[int, str]:
    if table not in db.tables:
        return {}
    cols = db.columns(table)
    label = "label" if "label" in cols else "name"
    # labels only name events (never a figure): a malformed row is left out
    return {i: str(v) for i, v in db.query(f"SELECT id, {label} FROM {table}") if type(i) is int}


# (table, kind, columns needed besides start/end)
_TABLES = (
    ("CUPTI_ACTIVITY_KIND_KERNEL", "compute"),
    ("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy"),
    ("CUPTI_ACTIVITY_KIND_MEMSET", "memset"),
    ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "sync"),
)


def _set_aside(db: _Db, rows: _Rows, on_invalid: str, warnings: list[RunWarning], quarantine: list[pa.Table]) -> None:
    """Raise on the first bad row (``on_invalid="raise"``) or put them in the quarantine."""
    idx = np.flatnonzero(rows.bad)
    if not idx.size:
        return
    first = int(idx[0])
    if on_invalid == "raise":
        raise InvalidEventError(
            db.path, f"table {rows.table}, rowid {int(rows.rowid[first])}: {rows.reason[first]} ({idx.size} "
            "unusable rows in this table)", "repair the export, or pass on_invalid='quarantine' to set such "
            "rows aside")
    rowids = rows.rowid[idx]
    quarantine.append(quarantine_table(
        QUARANTINE_SCHEMA, db.path, [f"table {rows.table} rowid {int(r)}" for r in rowids],
        [rows.reason[int(i)] for i in idx.tolist()], table=[rows.table] * idx.size,
        rowid=pa.array(rowids, pa.int64())))
    warnings.append(RunWarning("nsys.rows_set_aside", f"{db.path}: {idx.size} rows of {rows.table} set aside "
                               f"(first: rowid {int(rows.rowid[first])}, {rows.reason[first]}); see .quarantine"))


def _read_table(db: _Db, table: str, kind: str, kernel_names: str, rules: Rules, strings: dict[str, int],
                on_invalid: str, warnings: list[RunWarning], quarantine: list[pa.Table], base: int
                ) -> dict[str, np.ndarray] | None:
    """Columns of one activity table: device, pid, stream, start, end (``base`` added),
    kind code, name, bytes."""
    if table not in db.tables:
        return None
    cols = db.columns(table)
    need = {"start", "end", "deviceId", "streamId"}
    missing = sorted(need - cols)
    if missing:
        raise TraceFormatError(db.path, f"table {table} lacks column(s) {', '.join(missing)}",
                               "this schema version is not supported; " + _FIX_EXPORT)
    # globalPid is read as stored and split in numpy: SQLite's >> would turn a TEXT value
    # into 0 silently
    pid_col = "globalPid" if "globalPid" in cols else "NULL"
    if kind == "compute":
        order = ("shortName", "demangledName", "mangledName") if kernel_names == "short" else (
            "demangledName", "shortName", "mangledName")
        name_col = next((c for c in order if c in cols), None)
        if name_col is None:
            raise TraceFormatError(db.path, f"table {table} has no kernel name column (shortName, "
                                   "demangledName)", _FIX_EXPORT)
        extra, bytes_expr = name_col, "NULL"
    elif kind in ("memcpy", "memset"):
        extra = ("copyKind" if "copyKind" in cols else "NULL") if kind == "memcpy" else (
            "memKind" if "memKind" in cols else "NULL")
        bytes_expr = "bytes" if "bytes" in cols else "NULL"
    else:
        extra = "syncType" if "syncType" in cols else "NULL"
        bytes_expr = "NULL"
    corr_col = "correlationId" if "correlationId" in cols else "NULL"
    raw = db.query(f"SELECT rowid, start, end, deviceId, {pid_col}, streamId, {extra}, {bytes_expr}, {corr_col} "
                   f"FROM {table} ORDER BY rowid")
    if not raw:
        return None
    rows = _Rows(table, raw, np.array([r[0] for r in raw], np.int64))
    start, end = _interval(rows, base)
    device = rows.ints(3, "deviceId")
    gpid = rows.ints(4, "globalPid")
    stream = rows.ints(5, "streamId")
    extra_v = rows.ints(6, extra)
    nbytes = rows.ints(7, "bytes")
    corr = rows.ints(8, "correlationId")
    _set_aside(db, rows, on_invalid, warnings, quarantine)
    keep = ~rows.bad
    pid = np.where(gpid < 0, -1, (gpid >> 24) & 0xFFFFFF)[keep]
    stream = stream[keep]
    stream = np.where((stream < 0) | (stream > np.iinfo(np.int32).max), -1, stream)
    extra_v, nbytes = extra_v[keep], nbytes[keep]
    # Names: one lookup per distinct id, then a vectorized take.
    uniq, inv = np.unique(extra_v, return_inverse=True)
    inv = inv.reshape(-1)
    if kind == "compute":
        text = {i: v for i, v in db.query(
            f"SELECT id, value FROM StringIds WHERE id IN ({','.join(map(str, uniq.tolist()))})")}
        bad_text = [(u, text[u]) for u in uniq.tolist() if u in text and not isinstance(text[u], str)]
        if bad_text:
            raise TraceFormatError(db.path, f"StringIds id {bad_text[0][0]} (a kernel name in {table}) is "
                                   f"{type(bad_text[0][1]).__name__}, not text", _FIX_EXPORT)
        labels = [text.get(int(u), f"<unknown StringIds {int(u)}>") for u in uniq.tolist()]
        codes = np.array([KINDS.index(rules.classify("kernel", s) or "compute") for s in labels], np.int8)
        kinds = codes[inv] if uniq.size else np.empty(0, np.int8)
    else:
        enum = _enum(db, {"memcpy": "ENUM_CUDA_MEMCPY_OPER", "memset": "ENUM_CUDA_MEM_KIND",
                          "sync": "ENUM_CUPTI_SYNC_TYPE"}[kind])
        labels = [kind if u < 0 else f"{kind} {enum.get(int(u), int(u))}" for u in uniq.tolist()]
        # memsets and syncs keep their own kind: they are device time of their own
        # (DESIGN §2.1), not "other"
        kinds = np.full(extra_v.size, KINDS.index(kind), np.int8)
    gid = np.array([strings.setdefault(s, len(strings)) for s in labels], np.int32)
    return {"device": device[keep], "pid": pid, "stream": stream,
            "start_ns": start[keep], "end_ns": end[keep], "kind": kinds,
            "name": gid[inv] if uniq.size else np.empty(0, np.int32), "bytes": nbytes,
            "corr": corr[keep]}


_RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"


def _runtime(db: _Db, base: int, on_invalid: str, warnings: list[RunWarning], quarantine: list[pa.Table]
             ) -> dict[str, np.ndarray]:
    """The runtime API calls: ``pid, corr, start, end`` (``base`` added) and ``cause``
    (a :data:`HOST_CAUSES` index for a synchronize call, else -1). Empty when the
    export has no runtime table (or one without ``correlationId``/``nameId``)."""
    empty = {k: np.empty(0, np.int64) for k in ("pid", "corr", "start", "end")}
    empty["cause"] = np.empty(0, np.int8)
    if _RUNTIME not in db.tables:
        return empty
    cols = db.columns(_RUNTIME)
    if not {"start", "end", "correlationId", "nameId"} <= cols:
        return empty
    tid = "globalTid" if "globalTid" in cols else "NULL"
    raw = db.query(f"SELECT rowid, start, end, {tid}, correlationId, nameId FROM {_RUNTIME} ORDER BY rowid")
    if not raw:
        return empty
    rows = _Rows(_RUNTIME, raw, np.array([r[0] for r in raw], np.int64))
    start, end = _interval(rows, base)
    gtid = rows.ints(3, "globalTid")
    corr = rows.ints(4, "correlationId")
    name_id = rows.ints(5, "nameId")
    _set_aside(db, rows, on_invalid, warnings, quarantine)
    keep = ~rows.bad
    uniq, inv = np.unique(name_id[keep], return_inverse=True)
    text = {i: v for i, v in db.query(
        f"SELECT id, value FROM StringIds WHERE id IN ({','.join(map(str, uniq.tolist()))})")} if uniq.size else {}
    sync = HOST_CAUSES.index("sync_wait")
    codes = np.array([sync if isinstance(text.get(u), str) and host_cause(text[u]) == sync else -1
                      for u in uniq.tolist()], np.int8)
    gtid = gtid[keep]
    return {"pid": np.where(gtid < 0, -1, (gtid >> 24) & 0xFFFFFF), "corr": corr[keep], "start": start[keep],
            "end": end[keep], "cause": codes[inv.reshape(-1)] if uniq.size else np.empty(0, np.int8)}


def _launches(rt: dict[str, np.ndarray], pid: np.ndarray, corr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each device event (its process and correlation id), the start of the
    earliest runtime call of that process with the same id, and whether there is one.
    Id 0 (and a negative one) is no id: CUPTI gives it to records no API call made."""
    out = np.zeros(corr.size, np.int64)
    found = np.zeros(corr.size, bool)
    r_ok = (rt["corr"] > 0) & (rt["corr"] < 1 << 32) & (rt["pid"] >= 0)
    d_ok = (corr > 0) & (corr < 1 << 32) & (pid >= 0)
    if not r_ok.any() or not d_ok.any():
        return out, found
    key = (rt["pid"][r_ok] << 32) | rt["corr"][r_ok]
    start = rt["start"][r_ok]
    order = np.lexsort((start, key))
    key, start = key[order], start[order]
    dkey = (pid[d_ok] << 32) | corr[d_ok]
    pos = np.minimum(np.searchsorted(key, dkey), key.size - 1)
    hit = key[pos] == dkey
    idx = np.flatnonzero(d_ok)
    out[idx[hit]] = start[pos[hit]]
    found[idx[hit]] = True
    return out, found


def _nvtx(db: _Db, base: int, on_invalid: str, warnings: list[RunWarning],
          quarantine: list[pa.Table]) -> list[tuple[int, int, int, int, str]]:
    """(pid, tid, start, end, text) of the file's NVTX ranges, ``base`` added."""
    if "NVTX_EVENTS" not in db.tables:
        return []
    cols = db.columns("NVTX_EVENTS")
    if not {"start", "end", "eventType"} <= cols:
        return []
    text = "COALESCE(n.text, s.value)" if "textId" in cols else "n.text"
    join = "LEFT JOIN StringIds s ON s.id = n.textId" if "textId" in cols else ""
    tid = "n.globalTid" if "globalTid" in cols else "NULL"
    raw = db.query(
        f"SELECT n.rowid, {tid}, n.start, n.end, {text} FROM NVTX_EVENTS n "
        f"{join} WHERE n.eventType IN ({','.join(map(str, _NVTX_RANGE_TYPES))}) AND n.end IS NOT NULL "
        "ORDER BY n.start, n.rowid")
    if not raw:
        return []
    rows = _Rows("NVTX_EVENTS", raw, np.array([r[0] if type(r[0]) is int else -1 for r in raw], np.int64))
    gtid = rows.ints(1, "globalTid")
    start = rows.ints(2, "start", fill=None)
    end = rows.ints(3, "end", fill=None)
    rows.mark((end < start) & ~rows.bad, "end before start")
    start = _shift(rows, start, base, "start")
    end = _shift(rows, end, base, "end")
    _set_aside(db, rows, on_invalid, warnings, quarantine)
    pid = np.where(gtid < 0, -1, (gtid >> 24) & 0xFFFFFF)
    tids = np.where(gtid < 0, -1, gtid & 0xFFFFFF)
    return [(int(pid[k]), int(tids[k]), int(start[k]), int(end[k]),
             r[4] if isinstance(r[4], str) else "" if r[4] is None else str(r[4]))
            for k, r in enumerate(raw) if not rows.bad[k]]


def _session(db: _Db, fpath: str, absolute: bool, warnings: list[RunWarning]) -> tuple[int, tuple[int, int] | None]:
    """(the session start to add, the capture window in the times read).

    Nsight writes times relative to the session start (``TARGET_INFO_SESSION_START_TIME``),
    and ``ANALYSIS_DETAILS.duration`` is how long it captured: DIAGNOSTIC_EVENT's
    "Profiling has started" is at 0 and "Profiling has stopped" at ``duration`` in the
    exports we have, so the capture is ``[0, duration)`` session-relative.
    (``startTime``/``stopTime`` there are on another clock: the events do not line up
    with them.)"""
    base = 0
    if absolute:
        row = (db.query("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1")
               if "TARGET_INFO_SESSION_START_TIME" in db.tables else [])
        if row and row[0][0] is not None:
            if type(row[0][0]) is not int:
                raise TraceFormatError(fpath, f"TARGET_INFO_SESSION_START_TIME.utcEpochNs is {row[0][0]!r}, not "
                                       "an integer of ns", _FIX_EXPORT + ", or pass absolute=False")
            base = row[0][0]
        else:
            warnings.append(RunWarning("nsys.no_session_start", f"{fpath}: no TARGET_INFO_SESSION_START_TIME; "
                                       "times stay relative to the session start"))
    dur = (db.query("SELECT duration FROM ANALYSIS_DETAILS LIMIT 1")
           if "ANALYSIS_DETAILS" in db.tables and "duration" in db.columns("ANALYSIS_DETAILS") else [])
    if not dur:
        warnings.append(RunWarning("nsys.no_capture_window", f"{fpath}: no ANALYSIS_DETAILS.duration (the "
                                   "capture's length): each rank's span runs from its first to its last "
                                   "device event"))
        return base, None
    d = dur[0][0]
    if type(d) is not int or d < 0 or d > _I64.max - max(base, 0):
        raise TraceFormatError(fpath, f"ANALYSIS_DETAILS.duration (the capture's length) is {d!r}, not a "
                               "number of ns that fits int64", _FIX_EXPORT)
    return base, (base, base + d)


#: A rank whose device activity (first start to last end) covers less than this share of
#: its span gets a warning: the span is then mostly capture without device work (a
#: profiler started long before the GPU was used, or one stray event).
MIN_COVERAGE = 0.10


def read_nsys(path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *, rules: Rules | None = None,
              kernel_names: str = "short", step_pattern: str | None = DEFAULT_STEP_PATTERN,
              phase_patterns: Mapping[str, str] | None = None, absolute: bool = True,
              on_invalid: str = "raise") -> NsysTrace:
    """Read Nsight Systems SQLite exports into pau's tables.

    Parameters
    ----------
    path : str, os.PathLike or sequence of them
        A ``.sqlite`` export, a directory of them (not recursive), or a list of files.
    rules : pau.readers.kineto.Rules, optional
        Kernel names that are communication (``rules.communication``). Default
        :data:`pau.readers.kineto.DEFAULT_RULES`.
    kernel_names : {"short", "demangled"}
        Which ``StringIds`` name a kernel gets (and is classified by).
    step_pattern : str or None
        Regular expression for NVTX ranges that are steps (see the module docstring);
        None: no steps.
    phase_patterns : mapping kind -> regex, optional
        NVTX ranges that are phases, e.g. ``{"eval": r"^eval", "data_wait": r"dataloader"}``.
    absolute : bool
        Add the session start (``utcEpochNs``) to every time (default True).
    on_invalid : {"raise", "quarantine"}
        Rows with ``end < start``: raise (default) or set aside in ``.quarantine``.
        Files without device activity: raise, or skip with a warning.

    Returns
    -------
    NsysTrace
        ``.events``, ``.lifecycle``, ``.ranks``, ``.nvtx``, ``.warnings``, ``.quarantine``.

    Raises
    ------
    TraceFormatError, InvalidEventError, NoDeviceEventsError
        :class:`pau.errors.PauError` subclasses naming the file, table and row.
    """
    check_on_invalid(on_invalid)
    parts = _Parts(*_options(rules, kernel_names, step_pattern, phase_patterns), kernel_names, on_invalid, absolute)
    for fpath in expand(path, nsys_files, "read_nsys"):
        _read_file(fpath, parts)
    events = _events_table(parts)
    lo, hi = _spans(parts)
    span_rows = [{"rank": r, "start_ns": lo[r], "end_ns": hi[r]} for r in sorted(lo)]
    life = parts.life
    if life:
        # Make the lifecycle usable on its own (pau.core.ledger needs accountable time and an
        # attempt): each rank with NVTX records is accountable, and one completed attempt 0,
        # over its span (the capture window, grown to its events and records).
        for r in sorted({x["rank"] for x in life}):
            life.append({"record": "accountable", "attempt": None, "rank": r, "start_ns": lo[r],
                         "end_ns": hi[r], "step": None, "kind": None})
            life.append({"record": "attempt", "attempt": 0, "rank": r, "start_ns": lo[r],
                         "end_ns": hi[r], "step": None, "kind": "completed"})
    order = {"accountable": 0, "attempt": 1}
    life.sort(key=lambda x: (x["rank"], order.get(x["record"], 2), x["start_ns"]))
    lifecycle = pa.Table.from_pylist(
        [{**x, "block_end_ns": None, "durable_ns": None, "ok": None, "tokens": None} for x in life],
        schema=_LIFECYCLE_SCHEMA)
    q = pa.concat_tables(parts.quarantine) if parts.quarantine else QUARANTINE_SCHEMA.empty_table()
    hr = np.array(parts.host_rows, np.int64).reshape(-1, 4)
    host = host_table(hr[:, 0], hr[:, 1], hr[:, 2], hr[:, 3])
    return NsysTrace(events, lifecycle, pa.Table.from_pylist(parts.rank_rows, schema=_RANKS_SCHEMA),
                     pa.Table.from_pylist(parts.nvtx_rows, schema=_NVTX_SCHEMA), parts.warnings, q,
                     pa.Table.from_pylist(span_rows, schema=_SPANS_SCHEMA), host)


def _options(rules: Rules | None, kernel_names: str, step_pattern: str | None,
             phase_patterns: Mapping[str, str] | None
             ) -> tuple[Rules, re.Pattern[str] | None, list[tuple[str, re.Pattern[str]]]]:
    """:func:`read_nsys`' options checked: the rules, the step and phase patterns compiled."""
    if kernel_names not in ("short", "demangled"):
        raise OptionError(f"kernel_names: expected 'short' or 'demangled', got {kernel_names!r}")
    rules = DEFAULT_RULES if rules is None else rules
    if not isinstance(rules, Rules):
        raise OptionTypeError(f"rules: expected a pau.readers.kineto.Rules, got {type(rules).__name__}")
    phases = dict(phase_patterns or {})
    for k in phases:
        if k not in _PHASE_KINDS:
            raise OptionError(f"phase_patterns: key {k!r} is not a phase kind ({', '.join(_PHASE_KINDS)})")
    try:
        step_re = re.compile(step_pattern) if step_pattern else None
        phase_re = [(k, re.compile(p)) for k, p in phases.items()]
    except re.error as exc:
        raise OptionError(f"step_pattern or phase_patterns: bad regular expression {exc.pattern!r}: {exc}. Fix: give "
                          "a Python regular expression (re module)") from None
    return rules, step_re, phase_re


@dataclass
class _Parts:
    """The options of a read and what its files give, file by file."""

    rules: Rules
    step_re: re.Pattern[str] | None
    phase_re: list[tuple[str, re.Pattern[str]]]
    kernel_names: str
    on_invalid: str
    absolute: bool
    warnings: list[RunWarning] = field(default_factory=list)
    quarantine: list[pa.Table] = field(default_factory=list)
    strings: dict[str, int] = field(default_factory=dict)   # kernel name -> id of the events' dictionary
    blocks: list[tuple[int, dict[str, np.ndarray]]] = field(default_factory=list)   # (rank, device columns)
    rank_rows: list[dict[str, Any]] = field(default_factory=list)
    nvtx_rows: list[dict[str, Any]] = field(default_factory=list)
    life: list[dict[str, Any]] = field(default_factory=list)
    host_rows: list[tuple[int, int, int, int]] = field(default_factory=list)
    captures: dict[int, tuple[int, int]] = field(default_factory=dict)   # rank -> capture window


@dataclass
class _Export:
    """What one export holds, read before its connection closes."""

    version: Any
    base: int
    capture: tuple[int, int] | None
    tables: list[dict[str, np.ndarray]]
    gpu_names: dict[int, str]
    procs: dict[int, str]
    ranges: list[tuple[int, int, int, int, str]]
    runtime: dict[str, np.ndarray]
    db_tables: set[str]


def _read_db(fpath: str, parts: _Parts) -> _Export:
    db = _Db(fpath)
    try:
        version = dict((r[0], r[1]) for r in db.query("SELECT name, value FROM META_DATA_EXPORT")).get(
            "EXPORT_SCHEMA_VERSION") if "META_DATA_EXPORT" in db.tables else None
        base, capture = _session(db, fpath, parts.absolute, parts.warnings)
        tables = [p for t, k in _TABLES
                  if (p := _read_table(db, t, k, parts.kernel_names, parts.rules, parts.strings, parts.on_invalid,
                                       parts.warnings, parts.quarantine, base)) is not None]
        gpu_names: dict[int, str] = {}
        if "TARGET_INFO_GPU" in db.tables and {"id", "name"} <= db.columns("TARGET_INFO_GPU"):
            gpu_names = {i: n for i, n in db.query("SELECT id, name FROM TARGET_INFO_GPU")
                         if type(i) is int and isinstance(n, str)}
        procs: dict[int, str] = {}
        if "PROCESSES" in db.tables and {"pid", "name"} <= db.columns("PROCESSES"):
            procs = {p: n for p, n in db.query("SELECT pid, name FROM PROCESSES")
                     if type(p) is int and isinstance(n, str)}
        ranges = _nvtx(db, base, parts.on_invalid, parts.warnings, parts.quarantine)
        runtime = _runtime(db, base, parts.on_invalid, parts.warnings, parts.quarantine)
    finally:
        db.close()
    return _Export(version, base, capture, tables, gpu_names, procs, ranges, runtime, set(db.tables))


def _read_file(fpath: str, parts: _Parts) -> None:
    """One export's device events as ranks (one per device and process), its host waits
    and NVTX records; an export without device activity raises, or is set aside."""
    got = _read_db(fpath, parts)
    if sum(p["start_ns"].size for p in got.tables) == 0:
        captured = sorted(t for t in ("CUPTI_ACTIVITY_KIND_RUNTIME", "OSRT_API", "NVTX_EVENTS") if t in got.db_tables)
        problem = ("no device activity: none of the tables " + ", ".join(t for t, _ in _TABLES) +
                   " has rows" + (f" (captured: {', '.join(captured)})" if captured else ""))
        fix = ("profile with CUDA tracing on (nsys profile --trace=cuda,nvtx), or pass "
               "on_invalid='quarantine' to skip such files")
        if parts.on_invalid == "raise":
            raise NoDeviceEventsError(fpath, problem, fix)
        parts.warnings.append(RunWarning("nsys.no_device_events", f"{fpath}: {problem}; skipped"))
        parts.quarantine.append(quarantine_table(QUARANTINE_SCHEMA, fpath, ["file"], ["no device events"],
                                                 table=[None], rowid=[None]))
        return
    cat = {c: np.concatenate([p[c] for p in got.tables]) for c in got.tables[0]}
    cat["launch_ns"], cat["launched"] = _launches(got.runtime, cat["pid"], cat["corr"])
    if (cat["pid"] < 0).any():
        parts.warnings.append(RunWarning("nsys.no_global_pid", f"{fpath}: {int((cat['pid'] < 0).sum())} device events without globalPid; "
                              "their process is taken as pid -1"))
    ranks_of_pid: dict[int, list[int]] = {}
    for dev, pid in np.unique(np.stack([cat["device"], cat["pid"]], axis=1), axis=0).tolist():
        r = len(parts.rank_rows)
        idx = np.flatnonzero((cat["device"] == dev) & (cat["pid"] == pid))
        idx = idx[np.lexsort((cat["end_ns"][idx], cat["start_ns"][idx]))]
        parts.blocks.append((r, {c: cat[c][idx] for c in ("stream", "start_ns", "end_ns", "kind", "name",
                                                            "bytes", "launch_ns", "launched")}))
        ranks_of_pid.setdefault(pid, []).append(r)
        if got.capture is not None:
            parts.captures[r] = got.capture
        parts.rank_rows.append({"rank": r, "device": dev, "device_name": got.gpu_names.get(dev),
                                "pid": None if pid < 0 else pid, "process": got.procs.get(pid),
                                "source_file": fpath,
                                "schema_version": None if got.version is None else str(got.version),
                                "session_start_ns": got.base if got.base else None, "events": int(idx.size)})
    _host_waits(fpath, got, ranks_of_pid, parts)
    _nvtx_records(fpath, got.ranges, ranks_of_pid, parts)


def _host_waits(fpath: str, got: _Export, ranks_of_pid: dict[int, list[int]], parts: _Parts) -> None:
    """The process's synchronize calls and DataLoader ranges, on each of its ranks."""
    runtime, sync = got.runtime, got.runtime["cause"] >= 0
    waits = [(int(p), int(s), int(e), int(c)) for p, s, e, c in zip(
        runtime["pid"][sync].tolist(), runtime["start"][sync].tolist(), runtime["end"][sync].tolist(),
        runtime["cause"][sync].tolist())]
    data = HOST_CAUSES.index("data_wait")
    waits += [(pid, s, e, data) for pid, _, s, e, text in got.ranges if host_cause(text) == data]
    no_rank = 0
    for pid, s, e, c in waits:
        targets = ranks_of_pid.get(pid)
        if not targets:
            no_rank += 1
        for r in targets or ():
            parts.host_rows.append((r, s, e, c))
    if no_rank:
        parts.warnings.append(RunWarning("nsys.host_waits_unmatched", f"{fpath}: {no_rank} synchronize calls or "
                                         "DataLoader ranges come from processes without device events; they wait "
                                         "for no rank and are left out of the idle split"))


def _nvtx_records(fpath: str, ranges: list[tuple[int, int, int, int, str]], ranks_of_pid: dict[int, list[int]],
                  parts: _Parts) -> None:
    """The NVTX ranges (``.nvtx``) and the step and phase records they make on their
    process's ranks."""
    ordinal: Counter[int] = Counter()
    unmatched = 0
    for pid, tid, s, e, text in ranges:
        parts.nvtx_rows.append({"source_file": fpath, "pid": pid, "tid": tid, "start_ns": s,
                                "end_ns": e, "text": text})
        rec: tuple[str, int | None, str | None] | None = None
        m = parts.step_re.search(text) if parts.step_re else None
        if m:
            ordinal[pid] += 1
            g = m.group(1) if m.groups() else None
            # a number too large for int64 is no step number: the ordinal stands in
            step = int(g) if g is not None and g.isdigit() and len(g) < 19 else ordinal[pid]
            rec = ("step", step, None)
        else:
            rec = next((("phase", None, k) for k, rx in parts.phase_re if rx.search(text)), None)
        if rec is None:
            continue
        targets = ranks_of_pid.get(pid)
        if not targets:
            unmatched += 1
            continue
        for r in targets:
            parts.life.append({"record": rec[0], "attempt": 0, "rank": r, "start_ns": s,
                               "end_ns": e, "step": rec[1], "kind": rec[2]})
    if unmatched:
        parts.warnings.append(RunWarning("nsys.nvtx_unmatched", f"{fpath}: {unmatched} NVTX step/phase ranges come from processes without "
                              "device events; left out of the lifecycle (see .nvtx)"))


def _events_table(parts: _Parts) -> pa.Table:
    if not parts.blocks:
        return pa.table({
            "rank": pa.array([], pa.int32()), "stream": pa.array([], pa.int32()),
            "start_ns": pa.array([], pa.int64()), "end_ns": pa.array([], pa.int64()),
            "kind": pa.DictionaryArray.from_arrays(pa.array([], pa.int8()), pa.array(KINDS, pa.string())),
            "name": pa.DictionaryArray.from_arrays(pa.array([], pa.int32()), pa.array([], pa.string())),
            "bytes": pa.array([], pa.int64()), "launch_ns": pa.array([], pa.int64())})
    blocks = parts.blocks
    col = {c: np.concatenate([b[c] for _, b in blocks]) for c in blocks[0][1]}
    rank = np.concatenate([np.full(b["start_ns"].size, r, np.int32) for r, b in blocks])
    return pa.table({
        "rank": pa.array(rank, pa.int32()),
        "stream": pa.array(col["stream"].astype(np.int32), pa.int32()),
        "start_ns": pa.array(col["start_ns"], pa.int64()),
        "end_ns": pa.array(col["end_ns"], pa.int64()),
        "kind": pa.DictionaryArray.from_arrays(pa.array(col["kind"], pa.int8()),
                                               pa.array(KINDS, pa.string())),
        "name": pa.DictionaryArray.from_arrays(pa.array(col["name"], pa.int32()),
                                               pa.array(list(parts.strings), pa.string())),
        "bytes": pa.array(col["bytes"], pa.int64(), mask=col["bytes"] < 0),
        "launch_ns": pa.array(col["launch_ns"], pa.int64(), mask=~col["launched"]),
    })


def _spans(parts: _Parts) -> tuple[dict[int, int], dict[int, int]]:
    """Each rank's span: its capture window (the Nsight session), grown to any event or
    NVTX record outside it. Without the capture, a file with one memset would span
    that memset alone and hide the rest of the session."""
    ev_lo = {r: int(b["start_ns"].min()) for r, b in parts.blocks}
    ev_hi = {r: int(b["end_ns"].max()) for r, b in parts.blocks}
    lo, hi = dict(ev_lo), dict(ev_hi)
    for x in parts.life:
        lo[x["rank"]] = min(lo[x["rank"]], x["start_ns"])
        hi[x["rank"]] = max(hi[x["rank"]], x["end_ns"])
    rows = parts.rank_rows
    for r, (c0, c1) in parts.captures.items():
        if lo[r] < c0 or hi[r] > c1:
            parts.warnings.append(RunWarning("nsys.outside_capture", f"{rows[r]['source_file']}: rank {r}: "
                                             f"events or NVTX ranges lie outside the capture window "
                                             f"[{c0}, {c1}) (by {max(c0 - lo[r], 0) + max(hi[r] - c1, 0)} ns in "
                                             "all): the span is grown to hold them"))
        lo[r], hi[r] = min(lo[r], c0), max(hi[r], c1)
    for r in sorted(lo):
        span, covered = hi[r] - lo[r], ev_hi[r] - ev_lo[r]
        if span > 0 and covered < MIN_COVERAGE * span:
            parts.warnings.append(RunWarning(
                "nsys.sparse_span", f"{rows[r]['source_file']}: rank {r}: device activity (first to last "
                f"event, {covered} ns) covers {covered / span:.2%} of its span ({span} ns, the capture): the "
                "rest of the span is idle; classify a narrower span (span=) to leave it out"))
    return lo, hi
