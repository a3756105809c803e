"""Slurm job accounting (``sacct --parsable2``) -> a schedule table.

``sacct --parsable2`` prints one ``|``-separated line per job allocation and per job
step (``123``, ``123.batch``, ``123.extern``, ``123.0``), under a header naming the
fields (``--format``). ``sacct --parsable`` is the same with a trailing ``|``; it is
read too. The fields pau needs for scheduling figures are ``Submit`` (or
``Eligible``), ``Start``, ``End`` and the accelerators of the allocation
(``AllocTRES``, e.g. ``billing=16,cpu=16,gres/gpu=8,node=1``), for example::

    sacct -j JOB --parsable2 --format=JobID,JobName,State,ExitCode,Submit,Eligible,Start,End,NNodes,AllocTRES

Columns of the result (a field the file lacks gives no column; other fields are kept
as strings under their header name):

``job_id`` (string: the allocation, ``123``, ``123_4`` for an array task, ``123+0``
for a heterogeneous component), ``step`` (string, null on allocation rows; only with
``steps=True``), ``name``, ``partition``, ``account`` (strings), ``state`` (the first
word: ``CANCELLED by 123`` is ``CANCELLED``), ``exit_code`` and ``exit_signal``
(int32, from ``N:M``), ``alloc_cpus``, ``nodes`` (int64), ``submit_ns``,
``eligible_ns``, ``start_ns``, ``end_ns`` (int64 ns since the epoch, null for
``Unknown``/``None``: a job not started, or still running), ``accelerators`` (int64:
the ``gres/gpu`` count of ``AllocTRES``, the sum of the typed ``gres/gpu:TYPE``
counts when only those are given; or ``nodes * accelerators_per_node``), and
``steps`` (int32: the allocation's step rows; only without ``steps=True``).

Time
----
sacct prints times in the cluster's local time without a zone
(``2024-05-01T10:22:33``); ``tz`` names that zone (an IANA name, default ``"UTC"``)
and is kept in the table's metadata (``pau.sacct.tz``). A time of the repeated hour
at the end of daylight saving time is taken as its first occurrence (``fold=0``).
An all-digit value is seconds since the epoch (``SLURM_TIME_FORMAT=%s``).

Bad input
---------
A line with another number of fields than the header, a time that is not one, a
count that is not an integer, ``Start`` before ``Submit`` (or ``Eligible``),
``Eligible`` before ``Submit`` or ``End`` before ``Start`` raises
:class:`pau.errors.InvalidRowError` naming the file, the field, the row (0-based, among
the data lines; the reason gives the line number) and the fix; with
``on_invalid="quarantine"`` such lines are set aside (:class:`pau.core.Quarantined`:
the fields as text, ``row``, ``line`` and ``reason``).
"""

from __future__ import annotations

import calendar
import datetime as _dt
import json
import os
import re
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pyarrow as pa

from pau.engine.types import Quarantined, RunWarning, check_on_invalid
from pau.engine.vocab import counts_metadata
from pau.errors import InvalidRowError, NoInputError, OptionError, SchemaError
from pau.readers.scheduler import _BadRecord, Records, fraction, jobs_table, zone

__all__ = ["read_sacct", "parse_sacct", "read_sacct_jobs", "parse_sacct_jobs", "SACCT_FORMAT", "SACCT_JOBS_FORMAT"]

#: The ``--format`` fields that give every column the scheduling figures use.
SACCT_FORMAT = "JobID,JobName,Partition,State,ExitCode,Submit,Eligible,Start,End,NNodes,AllocTRES"

#: The ``--format`` fields that fill every column of the jobs table.
SACCT_JOBS_FORMAT = ("JobID,Cluster,Partition,Account,User,State,ExitCode,Restarts,Submit,Eligible,Start,End,"
                     "NNodes,NodeList,AllocTRES,ReqTRES")

_TIME_FIELDS = {"submit": "submit_ns", "eligible": "eligible_ns", "start": "start_ns", "end": "end_ns"}
_STR_FIELDS = {"jobname": "name", "partition": "partition", "account": "account"}
_INT_FIELDS = {"alloccpus": "alloc_cpus", "nnodes": "nodes"}
_NO_TIME = ("", "unknown", "none")
_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})$")
_GPU = re.compile(r"^gres/gpu(?::([^=]+))?=(\d+)$")
_EXIT = re.compile(r"^(\d+):(\d+)$")
_NS = 10**9


class _Bad(Exception):
    def __init__(self, field: str, reason: str, fix: str):
        super().__init__(reason)
        self.field, self.reason, self.fix = field, reason, fix


def _zone(tz: str) -> ZoneInfo | None:
    if tz.upper() == "UTC":
        return None
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise OptionError(f"read_sacct: tz = {tz!r} is not a time zone ({exc}). Fix: give an IANA zone name "
                          "such as 'UTC' or 'America/New_York': the zone sacct printed its times in") from None


def _time(value: str, field: str, zone: ZoneInfo | None) -> int | None:
    v = value.strip()
    if v.lower() in _NO_TIME:
        return None
    if v.isdigit():
        return int(v) * _NS
    m = _ISO.match(v)
    if m is None:
        raise _Bad(field, f"{value!r} is not a time",
                   "give times as YYYY-MM-DDTHH:MM:SS (sacct's default), seconds since the epoch, Unknown or None")
    try:
        y, mo, d, h, mi, se = (int(g) for g in m.groups())
        naive = _dt.datetime(y, mo, d, h, mi, se)
    except ValueError as exc:
        raise _Bad(field, f"{value!r} is not a time ({exc})",
                   "give a real calendar date and time of day, as sacct prints them") from None
    secs = calendar.timegm(naive.timetuple())
    if zone is not None:
        off = zone.utcoffset(naive)
        secs -= int(off.total_seconds()) if off is not None else 0
    return secs * _NS


def _int(value: str, field: str) -> int | None:
    v = value.strip()
    if v == "":
        return None
    if not v.isdigit():
        raise _Bad(field, f"{value!r} is not a non-negative integer", f"give {field} as an integer count")
    return int(v)


def _gpus(value: str) -> int | None:
    """The gres/gpu count of an AllocTRES value; typed entries summed when there is
    no untyped one; None when the allocation names no gpu."""
    plain, typed, seen = None, 0, False
    for item in value.split(","):
        m = _GPU.match(item.strip())
        if m is None:
            continue
        seen = True
        if m.group(1) is None:
            plain = int(m.group(2))
        else:
            typed += int(m.group(2))
    if not seen:
        return None
    return plain if plain is not None else typed


def read_sacct(path: str | os.PathLike[str], *, steps: bool = False, tz: str = "UTC",
               accelerators_per_node: int | None = None, on_invalid: str = "raise") -> pa.Table | Quarantined:
    """Read a file of ``sacct --parsable2`` (or ``--parsable``) output.

    Parameters
    ----------
    path : str or os.PathLike
    steps : bool, default False
        False: one row per allocation, with ``steps`` counting its step rows. True:
        every line, with ``step`` naming the step (null on allocation rows).
    tz : str, default "UTC"
        The zone sacct printed its times in (the cluster's local time).
    accelerators_per_node : int, optional
        Accelerators of each node, for output without ``AllocTRES``:
        ``accelerators = nodes * accelerators_per_node``. An ``AllocTRES`` gpu count
        wins where both are known.
    on_invalid : {"raise", "quarantine"}

    Returns
    -------
    pyarrow.Table or pau.core.Quarantined
        See the module docstring for the columns.
    """
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise NoInputError(f"read_sacct: no file at {p!r}. Fix: give the file sacct's output was saved to")
    with open(p, encoding="utf-8", errors="strict") as f:
        text = f.read()
    return parse_sacct(text, source=p, steps=steps, tz=tz, accelerators_per_node=accelerators_per_node,
                       on_invalid=on_invalid)


def parse_sacct(text: str, *, source: str = "sacct", steps: bool = False, tz: str = "UTC",
                accelerators_per_node: int | None = None, on_invalid: str = "raise") -> pa.Table | Quarantined:
    """:func:`read_sacct` of text already in memory (``source`` names it in errors)."""
    check_on_invalid(on_invalid)
    if accelerators_per_node is not None and (isinstance(accelerators_per_node, bool)
                                              or not isinstance(accelerators_per_node, int)
                                              or accelerators_per_node <= 0):
        raise OptionError(f"read_sacct: accelerators_per_node = {accelerators_per_node!r}. Fix: give a positive "
                          "integer (the accelerators of one node), or leave it out")
    zone = _zone(tz)
    table = f"sacct {source}"
    lines, header, keys, trailing = _header(text, table)
    if accelerators_per_node is not None and "nnodes" not in keys:
        raise OptionError("read_sacct: accelerators_per_node needs the NNodes field. Fix: add NNodes to "
                          "sacct's --format, or leave accelerators_per_node out")
    rows: list[dict[str, Any]] = []
    bad: list[tuple[int, int, list[str], str]] = []  # (row, line, fields, reason)
    first: tuple[str, int, str, str] | None = None  # (field, row, reason, fix) of the first bad line
    for row, (lineno, ln) in enumerate(lines[1:]):
        fields = ln.split("|")
        if trailing:
            fields = fields[:-1]
        try:
            r = _row(fields, keys, header, zone, accelerators_per_node)
            r["_at"] = (row, lineno, fields)
            rows.append(r)
        except _Bad as b:
            why = f"{b.reason} (line {lineno})"
            if first is None:
                first = (b.field, row, why, b.fix)
            bad.append((row, lineno, fields, why))
    if not steps:  # a step row is counted under its allocation: that line must be there
        jobs = {r["job_id"] for r in rows if r["step"] is None}
        for r in [r for r in rows if r["step"] is not None and r["job_id"] not in jobs]:
            row, lineno, fields = r["_at"]
            why = f"is a step of job {r['job_id']}, whose allocation line is not in the output (line {lineno})"
            fix = "give sacct's whole output for the job (its allocation line too), or pass steps=True"
            if first is None or row < first[1]:
                first = (header[keys.index("jobid")].strip(), row, why, fix)
            bad.append((row, lineno, fields, why))
            rows.remove(r)
        bad.sort(key=lambda b: b[0])
    if first is not None and on_invalid == "raise":
        raise InvalidRowError(table, first[0], first[1], first[2], first[3], count=len(bad))
    out = _table(rows, keys, header, steps)
    out = out.replace_schema_metadata({b"pau.sacct.tz": tz.encode(), b"pau.sacct.source": source.encode(),
                                       **counts_metadata(len(lines) - 1, len(bad))})
    if on_invalid == "quarantine":
        cols: dict[str, pa.Array] = {h.strip(): pa.array([f[j] if j < len(f) else None for _, _, f, _ in bad],
                                                         pa.string()) for j, h in enumerate(header)}
        cols["row"] = pa.array([r for r, _, _, _ in bad], pa.int64())
        cols["line"] = pa.array([n for _, n, _, _ in bad], pa.int64())
        cols["reason"] = pa.array([w for _, _, _, w in bad], pa.string())
        return Quarantined(out, pa.table(cols))
    return out


def _row(fields: list[str], keys: list[str], header: list[str], zone: ZoneInfo | None,
         per_node: int | None) -> dict[str, Any]:
    if len(fields) != len(keys):
        raise _Bad(header[0].strip(), f"has {len(fields)} fields where the header has {len(keys)}",
                   "give one value per header field, separated by '|' (a '|' inside a job name cannot be read)")
    r: dict[str, Any] = {} if per_node is None else {"accelerators": None}
    extra: dict[str, str] = {}
    for k, h, v in zip(keys, header, fields):
        name = h.strip()
        if k == "jobid":
            job, _, step = v.strip().partition(".")
            if not job:
                raise _Bad(name, "is empty", "give every line its JobID")
            r["job_id"], r["step"] = job, (step or None)
        elif k in _TIME_FIELDS:
            r[_TIME_FIELDS[k]] = _time(v, name, zone)
        elif k in _STR_FIELDS:
            r[_STR_FIELDS[k]] = v
        elif k in _INT_FIELDS:
            r[_INT_FIELDS[k]] = _int(v, name)
        elif k == "state":
            r["state"] = v.strip().split(" ")[0] if v.strip() else None
        elif k == "exitcode":
            r["exit_code"], r["exit_signal"] = _exit(v, name)
        elif k == "alloctres":
            r["alloc_tres"] = v
            r["accelerators"] = _gpus(v)
        else:
            extra[name] = v
    r["_extra"] = extra
    if per_node is not None and r.get("accelerators") is None and r.get("nodes") is not None:
        r["accelerators"] = r["nodes"] * per_node
    _check_order(r, header, keys)
    return r


def _exit(v: str, name: str) -> tuple[int | None, int | None]:
    """``ExitCode`` ``N:M`` as (code, signal); (None, None) when empty."""
    if v.strip() == "":
        return None, None
    m = _EXIT.match(v.strip())
    if m is None:
        raise _Bad(name, f"{v!r} is not an exit code", "give ExitCode as N:M (code:signal), as sacct prints it")
    return int(m.group(1)), int(m.group(2))


def _check_order(r: dict[str, Any], header: list[str], keys: list[str]) -> None:
    """Submit <= Eligible <= Start <= End, where given."""
    sub, eli, sta, end = (r.get(c) for c in ("submit_ns", "eligible_ns", "start_ns", "end_ns"))
    ready = eli if eli is not None else sub
    if sub is not None and eli is not None and eli < sub:
        raise _Bad(_name(header, keys, "eligible"), "is before Submit", "correct the times (Eligible >= Submit)")
    if sta is not None and ready is not None and sta < ready:
        which = "Eligible" if eli is not None else "Submit"
        raise _Bad(_name(header, keys, "start"), f"is before {which}", f"correct the times (Start >= {which})")
    if sta is not None and end is not None and end < sta:
        raise _Bad(_name(header, keys, "end"), "is before Start", "correct the times (End >= Start)")


def _name(header: list[str], keys: list[str], key: str) -> str:
    return header[keys.index(key)].strip()


def _table(rows: list[dict[str, Any]], keys: list[str], header: list[str], steps: bool) -> pa.Table:
    alloc = [r for r in rows if r["step"] is None]
    counts: dict[str, int] = {}
    for r in rows:
        if r["step"] is not None:
            counts[r["job_id"]] = counts.get(r["job_id"], 0) + 1
    use = rows if steps else alloc
    cols: dict[str, pa.Array] = {"job_id": pa.array([r["job_id"] for r in use], pa.string())}
    if steps:
        cols["step"] = pa.array([r["step"] for r in use], pa.string())
    present = set(keys)
    for k, c in _STR_FIELDS.items():
        if k in present:
            cols[c] = pa.array([r[c] for r in use], pa.string())
    if "state" in present:
        cols["state"] = pa.array([r["state"] for r in use], pa.string())
    if "exitcode" in present:
        cols["exit_code"] = pa.array([r["exit_code"] for r in use], pa.int32())
        cols["exit_signal"] = pa.array([r["exit_signal"] for r in use], pa.int32())
    for k, c in [*_INT_FIELDS.items(), *_TIME_FIELDS.items()]:   # counts, then times: int64
        if k in present:
            cols[c] = pa.array([r[c] for r in use], pa.int64())
    if "alloctres" in present:
        cols["alloc_tres"] = pa.array([r["alloc_tres"] for r in use], pa.string())
    if "alloctres" in present or any("accelerators" in r for r in use):
        cols["accelerators"] = pa.array([r.get("accelerators") for r in use], pa.int64())
    known = {"jobid", "state", "exitcode", "alloctres", *_TIME_FIELDS, *_STR_FIELDS, *_INT_FIELDS}
    for k, h in zip(keys, header):
        if k not in known:
            cols[h.strip()] = pa.array([r["_extra"][h.strip()] for r in use], pa.string())
    if not steps:
        cols["steps"] = pa.array([counts.get(r["job_id"], 0) for r in use], pa.int32())
    return pa.table(cols)


# --- the jobs table (DESIGN §7) -----------------------------------------------------

_TRES_GPU = re.compile(r"^gres/gpu(?::([^=]+))?=(\d+)$")


def read_sacct_jobs(path: str | os.PathLike[str], *, tz: str | None = None, cluster: str | None = None,
                    on_invalid: str = "raise") -> Records:
    """Read ``sacct`` output into the jobs table (:data:`pau.readers.scheduler.JOBS_SCHEMA`).

    Two forms are read, told apart by the content: ``sacct --parsable2`` (or
    ``--parsable``) text with any fields (the header names them; ``SACCT_JOBS_FORMAT``
    fills every column), and ``sacct --json`` (Slurm's REST/JSON job records: the
    ``jobs`` list, data_parser v0.0.37 and later, where numbers may be written
    ``{"set": ..., "infinite": ..., "number": ...}``).

    Job steps (``123.batch``, ``123.extern``, ``123.0``) are folded into their job: the
    allocation line gives the job's row; a step without its allocation line is a bad
    row. ``accelerators`` is the ``gres/gpu`` count of ``AllocTRES`` (or the sum of the
    typed ``gres/gpu:TYPE`` counts; the types, comma-joined, give
    ``accelerator_type``), 0 for an allocation that names no GPU; for a job that never
    started (empty ``AllocTRES``) the ``ReqTRES`` count (what it waits for); null
    without either field. ``team`` is ``Account``; ``exit_code`` the code of
    ``ExitCode`` (``N`` of ``N:M``); ``state`` the first word of ``State``.

    Parameters
    ----------
    path : str or os.PathLike
    tz : str, optional
        The zone the text's times are in (sacct prints local time without a zone). Not
        given: UTC, with a warning. JSON times are seconds since the epoch and need none.
    cluster : str, optional
        The cluster's name where the output has no ``Cluster`` field.
    on_invalid : {"raise", "quarantine"}

    Returns
    -------
    Records (``jobs`` set, ``lifecycle`` None; ``quarantine`` the records set aside).
    """
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise NoInputError(f"read_sacct_jobs: no file at {p!r}. Fix: give the file sacct's output was saved to")
    try:
        with open(p, encoding="utf-8", errors="strict") as f:
            text = f.read()
    except UnicodeDecodeError as exc:
        raise SchemaError(f"sacct {p}", "(file)", f"is not UTF-8 text ({exc})",
                          "give sacct's output as it printed it (text or --json)") from None
    return parse_sacct_jobs(text, source=p, tz=tz, cluster=cluster, on_invalid=on_invalid)


def parse_sacct_jobs(text: str, *, source: str = "sacct", tz: str | None = None, cluster: str | None = None,
                     on_invalid: str = "raise") -> Records:
    """:func:`read_sacct_jobs` of text already in memory (``source`` names it in errors)."""
    check_on_invalid(on_invalid)
    warnings: list[RunWarning] = []
    table = f"sacct {source}"
    if text.lstrip().startswith("{"):
        rows, no_tres = _json_jobs(text, table, cluster)
        meta: dict[bytes, bytes] = {}
    else:
        head = text.lstrip().split("\n", 1)[0].lower().replace(" ", "").split("|")
        timed = tz is not None or any(k in head for k in _TIME_FIELDS)
        zi, zname = zone(tz if timed else "UTC", "sacct", "sacct prints the cluster's local time.", warnings)
        rows, no_tres = _text_jobs(text, table, zi, cluster)
        meta = {b"pau.jobs.tz": zname.encode()}
    if no_tres:
        warnings.append(RunWarning("sacct.no_tres", "sacct: the output has no AllocTRES or ReqTRES field: "
                                   f"accelerators are unknown (null). Fix: add them to --format ({SACCT_JOBS_FORMAT})"))
    out = jobs_table(rows, table=table, source_file=None if source == "sacct" else source,
                     on_invalid=on_invalid, metadata=meta)
    out.warnings = warnings
    return out


def _tres(value: str) -> tuple[int | None, str | None]:
    """The GPU count and types of a TRES string; count None when the string is empty."""
    v = value.strip()
    if not v:
        return None, None
    plain, typed, types = None, 0, set()
    for item in v.split(","):
        m = _TRES_GPU.match(item.strip())
        if m is None:
            continue
        if m.group(1) is None:
            plain = int(m.group(2))
        else:
            typed += int(m.group(2))
            types.add(m.group(1))
    count = plain if plain is not None else typed
    return count, (",".join(sorted(types)) or None)


def _header(text: str, table: str) -> tuple[list[tuple[int, str]], list[str], list[str], bool]:
    """sacct text's non-empty lines (line number, text), its header fields, their lower-case
    keys, and whether every line ends with a separator (``--parsable``); refused without a
    header, a JobID field, or with a field twice."""
    lines = [(i + 1, ln) for i, ln in enumerate(text.splitlines()) if ln.strip()]
    if not lines:
        raise SchemaError(table, "JobID", "is missing: the output is empty",
                          "save sacct's output with its header line (leave out --noheader)")
    header = lines[0][1].split("|")
    trailing = header[-1] == "" and all(ln.endswith("|") for _, ln in lines)
    if trailing:  # --parsable: every line ends with a separator
        header = header[:-1]
    keys = [h.strip().lower() for h in header]
    if "jobid" not in keys:
        raise SchemaError(table, "JobID", f"is missing from the header {lines[0][1]!r}",
                          "run sacct with --parsable2 and a --format that includes JobID (and keep the header)")
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise SchemaError(table, header[keys.index(dup)], "appears twice in the header",
                          "give each field once in --format")
    return lines, header, keys, trailing


def _text_jobs(text: str, table: str, zi: ZoneInfo | None, cluster: str | None) -> tuple[list[dict[str, Any]], bool]:
    """The job rows of sacct's text, and whether it lacks both AllocTRES and ReqTRES."""
    lines, header, keys, trailing = _header(text, table)
    col = {k: i for i, k in enumerate(keys)}
    no_tres = "alloctres" not in col and "reqtres" not in col
    jobs: dict[str, dict[str, Any]] = {}
    order: list[dict[str, Any]] = []
    for row, (lineno, ln) in enumerate(lines[1:]):
        fields = ln.split("|")
        if trailing:
            fields = fields[:-1]
        where = f"line {lineno}"
        try:
            if len(fields) != len(keys):
                raise _BadRecord(header[0].strip(), f"has {len(fields)} fields where the header has {len(keys)}",
                          "give one value per header field, separated by '|' (a '|' inside a job name cannot be read)")
            get = {k: fields[i] for k, i in col.items()}
            job, _, step = get["jobid"].strip().partition(".")
            if not job:
                raise _BadRecord("JobID", "is empty", "give every line its JobID")
            if step:
                order.append({"_step_of": job, "_where": where, "job": job})
                continue
            try:
                r = _text_job(get, job, zi, cluster)
            except _Bad as b0:
                raise _BadRecord(b0.field, b0.reason, b0.fix) from None
        except _BadRecord as b:
            order.append({"_bad": b, "_where": where, "job": fields[col["jobid"]].strip() if len(fields) > col["jobid"] else None})
            continue
        r["_where"] = where
        jobs.setdefault(job, r)
        order.append(r)
    rows = []
    for r in order:
        if "_step_of" in r:
            if r["_step_of"] not in jobs:
                rows.append({"_bad": _BadRecord("JobID", f"is a step of job {r['_step_of']}, whose allocation line is not in the output",
                                         "give sacct's whole output for the job (its allocation line too)"),
                             "_where": r["_where"], "job": r["job"]})
            continue
        rows.append(r)
    return rows, no_tres


def _text_job(get: dict[str, Any], job: str, zi: ZoneInfo | None, cluster: str | None) -> dict[str, Any]:
    def s(k: str) -> str | None:
        v = get.get(k)
        return None if v is None or v.strip() == "" else v.strip()

    r: dict[str, Any] = {"job": job, "cluster": s("cluster") or cluster, "scheduler": "slurm", "user": s("user"),
               "team": s("account"), "partition": s("partition")}
    st = s("state")
    r["state"] = st.split(" ")[0] if st else None
    ec = s("exitcode")
    if ec is not None:
        m = _EXIT.match(ec)
        if m is None:
            raise _BadRecord("ExitCode", f"{ec!r} is not an exit code", "give ExitCode as N:M (code:signal), as sacct prints it")
        r["exit_code"] = int(m.group(1))
    for k, c in (("restarts", "restarts"), ("nnodes", "nodes")):
        if k in get:
            r[c] = _int(get[k], "Restarts" if k == "restarts" else "NNodes")
    for k, c in (("submit", "submit_ns"), ("eligible", "eligible_ns"), ("start", "start_ns"), ("end", "end_ns")):
        if k in get:
            r[c] = _time(get[k], k.capitalize(), zi)
    alloc, atype = _tres(get.get("alloctres", ""))
    req, rtype = _tres(get.get("reqtres", ""))
    if alloc is not None:
        r["accelerators"], r["accelerator_type"] = alloc, atype
    elif r.get("start_ns") is None and req is not None:
        r["accelerators"], r["accelerator_type"] = req, rtype
    return r


def _num(v: Any) -> Any:
    """A JSON number as data_parser writes it: plain, or ``{"set", "infinite", "number"}``
    (None when not set or infinite)."""
    if isinstance(v, dict):
        if not v.get("set", True) or v.get("infinite", False):
            return None
        v = v.get("number")
    if isinstance(v, bool):
        return None
    return v


def _json_jobs(text: str, table: str, cluster: str | None) -> tuple[list[dict[str, Any]], bool]:
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise SchemaError(table, "(file)", f"is not JSON ({exc})", "save the output of sacct --json whole") from None
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(jobs, list):
        raise SchemaError(table, "jobs", "is missing: not the output of sacct --json",
                          "give sacct --json's output (an object with a 'jobs' list)")
    rows = []
    for i, j in enumerate(jobs):
        where = f"jobs[{i}]"
        try:
            r = _json_job(j, cluster)
            r["_where"] = where
        except _BadRecord as b:
            jid = j.get("job_id") if isinstance(j, dict) else None
            r = {"_bad": b, "_where": where, "job": None if jid is None else str(jid)}
        rows.append(r)
    return rows, False


def _json_time(t: dict[str, Any], key: str) -> int | None:
    v = _num(t.get(key))
    if v is None or v == 0:  # Slurm writes 0 for "not set"
        return None
    if not isinstance(v, int) or v < 0:
        raise _BadRecord(f"time.{key}", f"{v!r} is not seconds since the epoch", "give the job's times as sacct --json writes them")
    return v * _NS


def _json_gpus(tres: Any, key: str) -> tuple[int | None, str | None]:
    """The GPUs of a job's ``tres.allocated`` (or ``requested``) list: the plain
    ``gres/gpu`` count, else the typed counts added, and the types comma-joined."""
    items = tres.get(key)
    if not isinstance(items, list) or not items:
        return None, None
    plain, typed, types = None, 0, set()
    for it in items:
        if not isinstance(it, dict) or it.get("type") != "gres":
            continue
        nm, cnt = str(it.get("name") or ""), _num(it.get("count"))
        if not (nm == "gpu" or nm.startswith("gpu:")) or cnt is None:
            continue
        if nm == "gpu":
            plain = cnt
        else:
            typed += cnt
            types.add(nm[4:])
    return (plain if plain is not None else typed), (",".join(sorted(types)) or None)


def _json_job(j: Any, cluster: str | None) -> dict[str, Any]:
    if not isinstance(j, dict):
        raise _BadRecord("jobs", "is not an object", "give each job as sacct --json writes it")
    jid = _num(j.get("job_id"))
    if not isinstance(jid, int):
        raise _BadRecord("job_id", f"{j.get('job_id')!r} is not a job id", "give each job its job_id")
    name = str(jid)
    arr, het = j.get("array") or {}, j.get("het") or {}
    a_job, a_task = _num(arr.get("job_id")), _num(arr.get("task_id"))
    h_job, h_off = _num(het.get("job_id")), _num(het.get("job_offset"))
    if a_job and a_task is not None:
        name = f"{a_job}_{a_task}"
    elif h_job and h_off is not None:
        name = f"{h_job}+{h_off}"
    state = j.get("state")
    if isinstance(state, dict):
        state = state.get("current")
    if isinstance(state, list):
        state = state[0] if state else None
    ec = j.get("exit_code")
    code = _num(ec.get("return_code")) if isinstance(ec, dict) else _num(ec)
    t = j.get("time") or {}
    if not isinstance(t, dict):
        raise _BadRecord("time", "is not an object", "give the job's time object as sacct --json writes it")
    tres = j.get("tres") or {}

    r: dict[str, Any] = {"job": name, "cluster": j.get("cluster") or cluster, "scheduler": "slurm", "user": j.get("user"),
               "team": j.get("account"), "partition": j.get("partition"),
               "state": state if isinstance(state, str) else None,
               "exit_code": code if isinstance(code, int) else None,
               "restarts": _num(j.get("restart_cnt")), "nodes": _num(j.get("allocation_nodes")),
               "submit_ns": _json_time(t, "submission"), "eligible_ns": _json_time(t, "eligible"),
               "start_ns": _json_time(t, "start"), "end_ns": _json_time(t, "end")}
    alloc, atype = _json_gpus(tres, "allocated")
    req, rtype = _json_gpus(tres, "requested")
    if alloc is not None:
        r["accelerators"], r["accelerator_type"] = fraction(alloc, "tres.allocated"), atype
    elif r["start_ns"] is None and req is not None:
        r["accelerators"], r["accelerator_type"] = fraction(req, "tres.requested"), rtype
    elif "allocated" in tres:
        r["accelerators"] = 0
    return r
