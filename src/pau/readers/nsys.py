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
:class:`~pau.readers.kineto.NoDeviceEventsError`. Names come from ``StringIds``:
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

from .._types import check_on_invalid
from .._vocab import KINDS
from .._vocab import LIFECYCLE_SCHEMA as _LIFECYCLE_SCHEMA
from .._types import RunWarning
from ._files import expand, files_in
from .kineto import (DEFAULT_RULES, InvalidEventError, NoDeviceEventsError, Rules,
                     TraceFormatError)

__all__ = ["DEFAULT_STEP_PATTERN", "NsysTrace", "read_nsys"]

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

_QUARANTINE_SCHEMA = pa.schema([
    ("source_file", pa.string()), ("table", pa.string()), ("rowid", pa.int64()), ("reason", pa.string()),
])


@dataclass
class NsysTrace:
    """What :func:`read_nsys` returns.

    Attributes
    ----------
    events : pyarrow.Table
        DESIGN §2.1, ordered by ``(rank, start_ns)``: ``rank:int32, stream:int32,
        start_ns:int64, end_ns:int64, kind:dictionary<int8,string>,
        name:dictionary<int32,string>, bytes:int64`` (copies and fills, else null).
        ``stream`` is -1 for device-wide syncs (Nsight writes 4294967295).
    lifecycle : pyarrow.Table
        DESIGN §2.2 ``step``/``phase`` records from NVTX ranges (empty when none match).
    ranks : pyarrow.Table
        One row per rank: ``rank, device, device_name, pid, process, source_file,
        schema_version, session_start_ns, events``.
    nvtx : pyarrow.Table
        Every NVTX range: ``source_file, pid, tid, start_ns, end_ns, text``.
    warnings : list of str
    quarantine : pyarrow.Table
        Rows set aside with ``on_invalid="quarantine"``: ``source_file, table, rowid, reason``.
    """

    events: pa.Table
    lifecycle: pa.Table
    ranks: pa.Table
    nvtx: pa.Table
    warnings: list = field(default_factory=list)
    quarantine: pa.Table = field(default_factory=lambda: _QUARANTINE_SCHEMA.empty_table())

    def __repr__(self) -> str:
        return (f"NsysTrace(ranks={self.ranks.num_rows}, events={self.events.num_rows}, "
                f"lifecycle={self.lifecycle.num_rows}, nvtx={self.nvtx.num_rows}, "
                f"warnings={len(self.warnings)})")


def nsys_files(path: str | os.PathLike) -> list[str]:
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
        self.tables = {r[0] for r in self.query("SELECT name FROM sqlite_master WHERE type IN ('table','view')")}
        if "StringIds" not in self.tables:
            raise TraceFormatError(path, "a SQLite database but not an Nsight Systems export (no StringIds "
                                   "table)", _FIX_EXPORT)

    def query(self, sql: str, args: Sequence = ()) -> list:
        try:
            return self.con.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise TraceFormatError(self.path, f"SQLite error ({exc}) in: {sql.split(' FROM ')[-1][:80]}",
                                   "the file is truncated or corrupt: " + _FIX_EXPORT) from None

    def columns(self, table: str) -> set[str]:
        return {r[1] for r in self.query(f"PRAGMA table_info({table})")}

    def close(self) -> None:
        self.con.close()


def _col(rows: list, i: int, dtype=np.int64, fill: int = -1) -> np.ndarray:
    if not rows:
        return np.empty(0, dtype)
    return np.array([fill if r[i] is None else r[i] for r in rows], dtype=dtype)


def _enum(db: _Db, table: str) -> dict[int, str]:
    if table not in db.tables:
        return {}
    cols = db.columns(table)
    label = "label" if "label" in cols else "name"
    return {int(i): str(v) for i, v in db.query(f"SELECT id, {label} FROM {table}")}


# (table, kind, columns needed besides start/end)
_TABLES = (
    ("CUPTI_ACTIVITY_KIND_KERNEL", "compute"),
    ("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy"),
    ("CUPTI_ACTIVITY_KIND_MEMSET", "memset"),
    ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "sync"),
)


def _read_table(db: _Db, table: str, kind: str, kernel_names: str, rules: Rules, strings: dict,
                on_invalid: str, warnings: list, quarantine: list) -> dict | None:
    """Columns of one activity table: device, pid, stream, start, end, kind code, name, bytes."""
    if table not in db.tables:
        return None
    cols = db.columns(table)
    need = {"start", "end", "deviceId", "streamId"}
    missing = sorted(need - cols)
    if missing:
        raise TraceFormatError(db.path, f"table {table} lacks column(s) {', '.join(missing)}",
                               "this schema version is not supported; " + _FIX_EXPORT)
    pid_expr = "((globalPid >> 24) & 16777215)" if "globalPid" in cols else "NULL"
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
    rows = db.query(f"SELECT rowid, start, end, deviceId, {pid_expr}, streamId, {extra}, {bytes_expr} "
                    f"FROM {table} ORDER BY rowid")
    if not rows:
        return None
    rowid = _col(rows, 0)
    start = _col(rows, 1, fill=np.iinfo(np.int64).min)
    end = _col(rows, 2, fill=np.iinfo(np.int64).min)
    bad = (end < start) | (start == np.iinfo(np.int64).min) | (end == np.iinfo(np.int64).min)
    if bad.any():
        idx = np.flatnonzero(bad)
        reason = "end before start, or a null time"
        if on_invalid == "raise":
            raise InvalidEventError(
                db.path, f"table {table}, rowid {int(rowid[idx[0]])}: {reason} ({idx.size} such rows in "
                "this table)", "repair the export, or pass on_invalid='quarantine' to set such rows aside")
        quarantine.append(pa.table({
            "source_file": pa.array([db.path] * idx.size, pa.string()), "table": [table] * idx.size,
            "rowid": pa.array(rowid[idx], pa.int64()), "reason": [reason] * idx.size},
            schema=_QUARANTINE_SCHEMA))
        warnings.append(RunWarning("nsys.rows_set_aside", f"{db.path}: {idx.size} rows of {table} set aside ({reason}); see .quarantine"))
    keep = ~bad
    stream = _col(rows, 5)[keep]
    stream = np.where((stream < 0) | (stream > np.iinfo(np.int32).max), -1, stream)
    extra_v = _col(rows, 6)[keep]
    nbytes = _col(rows, 7)[keep]
    # Names: one lookup per distinct id, then a vectorized take.
    uniq, inv = np.unique(extra_v, return_inverse=True)
    inv = inv.reshape(-1)
    if kind == "compute":
        text = {int(i): v for i, v in db.query(
            f"SELECT id, value FROM StringIds WHERE id IN ({','.join(map(str, uniq.tolist()))})")}
        labels = [text.get(int(u), f"<unknown StringIds {int(u)}>") for u in uniq.tolist()]
        codes = np.array([KINDS.index(rules.classify("kernel", s) or "compute") for s in labels], np.int8)
        kinds = codes[inv] if uniq.size else np.empty(0, np.int8)
    else:
        enum = _enum(db, {"memcpy": "ENUM_CUDA_MEMCPY_OPER", "memset": "ENUM_CUDA_MEM_KIND",
                          "sync": "ENUM_CUPTI_SYNC_TYPE"}[kind])
        labels = [kind if u < 0 else f"{kind} {enum.get(int(u), int(u))}" for u in uniq.tolist()]
        kinds = np.full(extra_v.size, KINDS.index(kind), np.int8)
    gid = np.array([strings.setdefault(s, len(strings)) for s in labels], np.int32)
    return {"device": _col(rows, 3)[keep], "pid": _col(rows, 4)[keep], "stream": stream,
            "start_ns": start[keep], "end_ns": end[keep], "kind": kinds,
            "name": gid[inv] if uniq.size else np.empty(0, np.int32), "bytes": nbytes}


def _nvtx(db: _Db) -> list[tuple[int, int, int, int, str]]:
    """(pid, tid, start, end, text) of the file's NVTX ranges."""
    if "NVTX_EVENTS" not in db.tables:
        return []
    cols = db.columns("NVTX_EVENTS")
    if not {"start", "end", "eventType"} <= cols:
        return []
    text = "COALESCE(n.text, s.value)" if "textId" in cols else "n.text"
    join = "LEFT JOIN StringIds s ON s.id = n.textId" if "textId" in cols else ""
    tid = "n.globalTid" if "globalTid" in cols else "NULL"
    rows = db.query(
        f"SELECT ({tid} >> 24) & 16777215, {tid} & 16777215, n.start, n.end, {text} FROM NVTX_EVENTS n "
        f"{join} WHERE n.eventType IN ({','.join(map(str, _NVTX_RANGE_TYPES))}) AND n.end IS NOT NULL "
        "ORDER BY n.start, n.rowid")
    return [(-1 if p is None else int(p), -1 if t is None else int(t), int(s), int(e), t_ or "")
            for p, t, s, e, t_ in rows]


def read_nsys(path: str | os.PathLike | Sequence[str | os.PathLike], *, rules: Rules | None = None,
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
    if kernel_names not in ("short", "demangled"):
        raise ValueError(f"kernel_names: expected 'short' or 'demangled', got {kernel_names!r}")
    rules = DEFAULT_RULES if rules is None else rules
    if not isinstance(rules, Rules):
        raise TypeError(f"rules: expected a pau.readers.kineto.Rules, got {type(rules).__name__}")
    phases = dict(phase_patterns or {})
    for k in phases:
        if k not in _PHASE_KINDS:
            raise ValueError(f"phase_patterns: key {k!r} is not a phase kind ({', '.join(_PHASE_KINDS)})")
    try:
        step_re = re.compile(step_pattern) if step_pattern else None
        phase_re = [(k, re.compile(p)) for k, p in phases.items()]
    except re.error as exc:
        raise ValueError(f"bad regular expression {exc.pattern!r}: {exc}") from None
    paths = expand(path, nsys_files, "read_nsys")

    warnings: list[str] = []
    quarantine: list[pa.Table] = []
    strings: dict[str, int] = {}
    life: list[dict[str, Any]]
    blocks, rank_rows, nvtx_rows, life = [], [], [], []
    next_rank = 0
    for fpath in paths:
        db = _Db(fpath)
        try:
            version = dict(db.query("SELECT name, value FROM META_DATA_EXPORT")).get(
                "EXPORT_SCHEMA_VERSION") if "META_DATA_EXPORT" in db.tables else None
            base = 0
            if absolute:
                row = (db.query("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1")
                       if "TARGET_INFO_SESSION_START_TIME" in db.tables else [])
                if row and row[0][0] is not None:
                    base = int(row[0][0])
                else:
                    warnings.append(RunWarning("nsys.no_session_start", f"{fpath}: no TARGET_INFO_SESSION_START_TIME; times stay relative to "
                                    "the session start"))
            parts = [p for t, k in _TABLES
                     if (p := _read_table(db, t, k, kernel_names, rules, strings, on_invalid, warnings,
                                          quarantine)) is not None]
            gpu_names: dict[int, str] = {}
            if "TARGET_INFO_GPU" in db.tables and {"id", "name"} <= db.columns("TARGET_INFO_GPU"):
                gpu_names = {int(i): n for i, n in db.query("SELECT id, name FROM TARGET_INFO_GPU")}
            procs: dict[int, str] = {}
            if "PROCESSES" in db.tables and {"pid", "name"} <= db.columns("PROCESSES"):
                procs = {int(p): n for p, n in db.query("SELECT pid, name FROM PROCESSES") if p is not None}
            ranges = _nvtx(db)
        finally:
            db.close()
        n_events = sum(p["start_ns"].size for p in parts)
        if n_events == 0:
            captured = sorted(t for t in ("CUPTI_ACTIVITY_KIND_RUNTIME", "OSRT_API", "NVTX_EVENTS")
                              if t in db.tables)
            problem = ("no device activity: none of the tables " + ", ".join(t for t, _ in _TABLES) +
                       " has rows" + (f" (captured: {', '.join(captured)})" if captured else ""))
            fix = ("profile with CUDA tracing on (nsys profile --trace=cuda,nvtx), or pass "
                   "on_invalid='quarantine' to skip such files")
            if on_invalid == "raise":
                raise NoDeviceEventsError(fpath, problem, fix)
            warnings.append(RunWarning("nsys.no_device_events", f"{fpath}: {problem}; skipped"))
            continue
        cat = {c: np.concatenate([p[c] for p in parts]) for c in parts[0]}
        if (cat["pid"] < 0).any():
            warnings.append(RunWarning("nsys.no_global_pid", f"{fpath}: {int((cat['pid'] < 0).sum())} device events without globalPid; "
                            "their process is taken as pid -1"))
        pairs = np.unique(np.stack([cat["device"], cat["pid"]], axis=1), axis=0)
        ranks_of_pid: dict[int, list[int]] = {}
        for dev, pid in pairs.tolist():
            r = next_rank
            next_rank += 1
            sel = (cat["device"] == dev) & (cat["pid"] == pid)
            idx = np.flatnonzero(sel)
            idx = idx[np.lexsort((cat["end_ns"][idx], cat["start_ns"][idx]))]
            blocks.append((r, {c: cat[c][idx] for c in ("stream", "start_ns", "end_ns", "kind", "name",
                                                          "bytes")}))
            ranks_of_pid.setdefault(pid, []).append(r)
            rank_rows.append({"rank": r, "device": dev, "device_name": gpu_names.get(dev),
                              "pid": None if pid < 0 else pid, "process": procs.get(pid),
                              "source_file": fpath, "schema_version": version,
                              "session_start_ns": base if base else None, "events": int(idx.size)})
        ordinal: Counter = Counter()
        unmatched = 0
        for pid, tid, s, e, text in ranges:
            nvtx_rows.append({"source_file": fpath, "pid": pid, "tid": tid, "start_ns": s + base,
                              "end_ns": e + base, "text": text})
            rec: tuple[str, int | None, str | None] | None = None
            m = step_re.search(text) if step_re else None
            if m:
                ordinal[pid] += 1
                g = m.group(1) if m.groups() else None
                step = int(g) if g is not None and g.isdigit() else ordinal[pid]
                rec = ("step", step, None)
            else:
                for k, rx in phase_re:
                    if rx.search(text):
                        rec = ("phase", None, k)
                        break
            if rec is None:
                continue
            targets = ranks_of_pid.get(pid)
            if not targets:
                unmatched += 1
                continue
            for r in targets:
                life.append({"record": rec[0], "attempt": 0, "rank": r, "start_ns": s + base,
                             "end_ns": e + base, "step": rec[1], "kind": rec[2]})
        if unmatched:
            warnings.append(RunWarning("nsys.nvtx_unmatched", f"{fpath}: {unmatched} NVTX step/phase ranges come from processes without "
                            "device events; left out of the lifecycle (see .nvtx)"))

    if not blocks:
        events = pa.table({
            "rank": pa.array([], pa.int32()), "stream": pa.array([], pa.int32()),
            "start_ns": pa.array([], pa.int64()), "end_ns": pa.array([], pa.int64()),
            "kind": pa.DictionaryArray.from_arrays(pa.array([], pa.int8()), pa.array(KINDS, pa.string())),
            "name": pa.DictionaryArray.from_arrays(pa.array([], pa.int32()), pa.array([], pa.string())),
            "bytes": pa.array([], pa.int64())})
    else:
        col = {c: np.concatenate([b[c] for _, b in blocks]) for c in blocks[0][1]}
        rank = np.concatenate([np.full(b["start_ns"].size, r, np.int32) for r, b in blocks])
        events = pa.table({
            "rank": pa.array(rank, pa.int32()),
            "stream": pa.array(col["stream"].astype(np.int32), pa.int32()),
            "start_ns": pa.array(col["start_ns"] + 0, pa.int64()),
            "end_ns": pa.array(col["end_ns"], pa.int64()),
            "kind": pa.DictionaryArray.from_arrays(pa.array(col["kind"], pa.int8()),
                                                   pa.array(KINDS, pa.string())),
            "name": pa.DictionaryArray.from_arrays(pa.array(col["name"], pa.int32()),
                                                   pa.array(list(strings), pa.string())),
            "bytes": pa.array(col["bytes"], pa.int64(), mask=col["bytes"] < 0),
        })
        # Shift to epoch time per rank (files may have different session starts).
        base_of = {r["rank"]: r["session_start_ns"] or 0 for r in rank_rows}
        if any(base_of.values()):
            b = np.array([base_of[r] for r in range(len(rank_rows))], np.int64)[rank]
            events = events.set_column(2, "start_ns", pa.array(col["start_ns"] + b, pa.int64()))
            events = events.set_column(3, "end_ns", pa.array(col["end_ns"] + b, pa.int64()))
    if life:
        # Make the lifecycle usable on its own (pau.core.ledger needs accountable time and an
        # attempt): each rank with NVTX records is accountable, and one completed attempt 0,
        # over the capture window = first to last instant of its events and records.
        ev = events.select(["rank", "start_ns", "end_ns"]).to_pydict()
        lo: dict[int, int] = {}
        hi: dict[int, int] = {}
        for r, s, e in zip(ev["rank"], ev["start_ns"], ev["end_ns"]):
            lo[r] = min(lo.get(r, s), s)
            hi[r] = max(hi.get(r, e), e)
        for x in life:
            lo[x["rank"]] = min(lo[x["rank"]], x["start_ns"])
            hi[x["rank"]] = max(hi[x["rank"]], x["end_ns"])
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
    q = pa.concat_tables(quarantine) if quarantine else _QUARANTINE_SCHEMA.empty_table()
    return NsysTrace(events, lifecycle, pa.Table.from_pylist(rank_rows, schema=_RANKS_SCHEMA),
                     pa.Table.from_pylist(nvtx_rows, schema=_NVTX_SCHEMA), warnings, q)
