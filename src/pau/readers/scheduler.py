"""Scheduler records: the jobs table of DESIGN §7, and the Philly job log.

A *job* is what a scheduler allocated: accelerators × wall time from its start to its
end, plus its queue time. Every scheduler reader (``sacct`` text and JSON in
:mod:`pau.readers.slurm`, Kubernetes pods and the Alibaba pod list in
:mod:`pau.readers.kubernetes`, the Philly job log here) returns the one table
:data:`JOBS_SCHEMA`, built and checked by :func:`jobs_table`, so every job row means
the same thing whatever wrote it (``docs/fleet.md``, "Jobs").

Columns
-------
``job`` (the scheduler's id, array and heterogeneous jobs as the scheduler names them:
``123_4``, ``123+0``), ``cluster``, ``scheduler`` (``slurm``, ``kubernetes``,
``philly``), ``user``, ``team`` (Slurm's account, a Kubernetes namespace, Philly's
virtual cluster), ``partition``, ``state`` (as the scheduler says it), ``exit_code``,
``restarts``, ``submit_ns``, ``eligible_ns``, ``start_ns``, ``end_ns`` (int64 ns since
the epoch, UTC; null when the scheduler did not say: a job never started has no
start), ``accelerators`` (float64, allocated; fractional for shared GPUs),
``accelerator_type``, ``nodes``, and two derived columns:

* ``queue_ns = start_ns - (eligible_ns if known else submit_ns)``; null without a start.
* ``allocated_accelerator_ns``: accelerators × (end − start). Exact: accelerators are
  carried as the fraction the source wrote (a count, or thousandths of a GPU), and the
  product is an integer whenever the fraction times the duration is; otherwise it is
  rounded to the nearest ns (half to even), at most half a ns per job, and the table's
  metadata counts such rows (``pau.jobs.rounded_rows``). 0 for a job that never
  started (it held nothing), null for one still running (no end yet) or whose
  accelerators are unknown. A product past int64 (about 292 accelerator-years) is a bad
  row, never wrapped. Philly releases the GPUs between attempts, so there it is the sum
  over attempts.
"""

from __future__ import annotations

import calendar
import datetime as _dt
import json
import os
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable, List, Optional
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pyarrow as pa

from pau.engine.types import RunWarning, check_on_invalid, quarantine_schema, quarantine_table
from pau.engine.vocab import LIFECYCLE_SCHEMA, counts_metadata
from pau.errors import InvalidRowError, NoInputError, OptionError, SchemaError

__all__ = ["JOBS_SCHEMA", "JOB_LIFECYCLE_SCHEMA", "JOBS_QUARANTINE_SCHEMA", "MAX_ACCELERATORS", "SCHEDULERS", "Records",
           "check_rows", "jobs_table", "read_philly"]

#: Schedulers whose records pau reads, as the ``scheduler`` column names them.
SCHEDULERS = ("slurm", "kubernetes", "philly")

#: The jobs table (DESIGN §7): one row per job; every column but ``job`` and
#: ``scheduler`` nullable.
JOBS_SCHEMA = pa.schema([
    pa.field(name, typ, nullable=name not in ("job", "scheduler")) for name, typ in (
        ("job", pa.string()), ("cluster", pa.string()), ("scheduler", pa.string()),
        ("user", pa.string()), ("team", pa.string()), ("partition", pa.string()),
        ("state", pa.string()), ("exit_code", pa.int32()), ("restarts", pa.int32()),
        ("submit_ns", pa.int64()), ("eligible_ns", pa.int64()), ("start_ns", pa.int64()),
        ("end_ns", pa.int64()), ("accelerators", pa.float64()), ("accelerator_type", pa.string()),
        ("nodes", pa.int32()), ("queue_ns", pa.int64()), ("allocated_accelerator_ns", pa.int64()))
])

#: The lifecycle of many jobs (DESIGN §7): the lifecycle schema, then ``job``: each job
#: is its own lineage (its attempts, steps and checkpoints are its own).
JOB_LIFECYCLE_SCHEMA = LIFECYCLE_SCHEMA.append(pa.field("job", pa.string()))

#: What the scheduler readers set aside: the common columns, then the job's id as the
#: source wrote it (null when it could not be read) and its 0-based record number.
JOBS_QUARANTINE_SCHEMA = quarantine_schema(pa.field("job", pa.string()), pa.field("row", pa.int64()))

#: The most accelerators one job or attempt may name: more than any cluster holds. Readers
#: that write a lifecycle row per accelerator refuse a larger count (a count is not backed
#: by the bytes of the file, so it is bounded before rows are made from it).
MAX_ACCELERATORS = 2**20
#: Lifecycle rows a reader may make per byte of its input (beyond the first 2**20 rows).
ROWS_PER_BYTE = 64

_I64 = 2**63 - 1
_I32 = 2**31 - 1
_NS = 10**9
_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")
_INPUT = ("submit_ns", "eligible_ns", "start_ns", "end_ns")


@dataclass
class Records:
    """What a fleet reader returns, whatever ``on_invalid`` says: the jobs table
    (:data:`JOBS_SCHEMA`, or None when the source holds no scheduler records), the
    lifecycle (or None), what the reader assumed or could not use, as
    :class:`pau.core.RunWarning` (``code`` and message), and ``quarantine``: the records
    set aside with ``on_invalid="quarantine"`` (:data:`JOBS_QUARANTINE_SCHEMA`; empty when
    none was, and always with ``on_invalid="raise"``, which raises instead)."""

    jobs: Optional[pa.Table]
    lifecycle: Optional[pa.Table]
    warnings: List[RunWarning]
    quarantine: pa.Table = field(default_factory=lambda: JOBS_QUARANTINE_SCHEMA.empty_table())


class _BadRecord(Exception):
    """One record that cannot be used: the column, why, and the fix."""

    def __init__(self, column: str, reason: str, fix: str):
        super().__init__(reason)
        self.column, self.reason, self.fix = column, reason, fix


def zone(tz: Optional[str], reader: str, default_note: str, warnings: list[RunWarning]) -> tuple[Any, str]:
    """The zone local times are read in: ``tz`` (an IANA name), or UTC with a warning
    that says so when ``tz`` is None. Returns (ZoneInfo or None for UTC, name)."""
    if tz is None:
        warnings.append(RunWarning(f"{reader}.timezone_assumed",
                                   f"{reader}: the times carry no zone and tz= was not given: read as UTC. "
                                   f"{default_note} Pass tz='Area/City' (the zone the times were written in)"))
        return None, "UTC"
    if not isinstance(tz, str):
        raise OptionError(f"{reader}: tz = {tz!r}. Fix: give an IANA zone name such as 'UTC' or 'America/New_York'")
    if tz.upper() == "UTC":
        return None, "UTC"
    try:
        return ZoneInfo(tz), tz
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise OptionError(f"{reader}: tz = {tz!r} is not a time zone ({exc}). Fix: give an IANA zone name "
                          "such as 'UTC' or 'America/New_York': the zone the times were written in") from None


def local_time(value: str, column: str, tz: Any) -> int:
    """``YYYY-MM-DD[T ]HH:MM:SS[.fraction]`` in zone ``tz`` (None: UTC) -> int ns since
    the epoch, exactly (the fraction to the ns). A time in the repeated hour at the end of
    daylight saving time is its first occurrence (``fold=0``); one in the skipped hour is
    read with the offset before the change."""
    m = _TIME.match(value.strip())
    if m is None:
        raise _BadRecord(column, f"{value!r} is not a time", "give times as YYYY-MM-DD HH:MM:SS (a fraction of a second may follow)")
    y, mo, d, h, mi, se = (int(g) for g in m.groups()[:6])
    try:
        naive = _dt.datetime(y, mo, d, h, mi, se)
    except ValueError as exc:
        raise _BadRecord(column, f"{value!r} is not a time ({exc})", "give a real calendar date and time of day") from None
    secs = calendar.timegm(naive.timetuple())
    if tz is not None:
        off = tz.utcoffset(naive)
        secs -= int(off.total_seconds()) if off is not None else 0
    frac = m.group(7) or ""
    return _in_int64(secs * _NS + (int(frac.ljust(9, "0")) if frac else 0), value, column)


def _in_int64(ns: int, value: str, column: str) -> int:
    if not -2**63 <= ns <= _I64:
        raise _BadRecord(column, f"{value!r} is outside the int64 ns range", "give times within the years 1678-2262")
    return ns


def iso_time(value: str, column: str) -> int:
    """An RFC 3339 / ISO 8601 time with its zone (``2025-02-05T14:30:00.123456Z``,
    ``...+02:00``) -> int ns since the epoch, exactly."""
    v = value.strip()
    m = re.match(r"^(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})$", v)
    if m is None:
        raise _BadRecord(column, f"{value!r} is not a time with a zone",
                  "give an RFC 3339 time such as 2025-02-05T14:30:00Z (the zone is needed)")
    base = local_time(m.group(1), column, None)
    z = m.group(3)
    if z != "Z":
        sign = 1 if z[0] == "+" else -1
        hh, mm = int(z[1:3]), int(z[-2:])
        base -= sign * (hh * 3600 + mm * 60) * _NS
    frac = m.group(2)
    return _in_int64(base + (int(frac[1:].ljust(9, "0")) if frac else 0), value, column)


def fraction(value: Any, column: str) -> Fraction:
    """A count of accelerators as an exact fraction: an int, a decimal string (``0.5``,
    ``460m`` thousandths as Kubernetes writes them), never a binary float's noise."""
    if isinstance(value, bool):
        raise _BadRecord(column, f"{value!r} is not a count", "give a number of accelerators")
    if isinstance(value, int):
        f = Fraction(value)
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise _BadRecord(column, f"{value!r} is not a count", "give a finite number of accelerators")
        f = Fraction(repr(value))  # the decimal the file wrote, not the binary float
    elif isinstance(value, str):
        v = value.strip()
        try:
            f = Fraction(v[:-1]) / 1000 if v.endswith("m") else Fraction(v)
        except (ValueError, ZeroDivisionError):
            raise _BadRecord(column, f"{value!r} is not a count", "give a number of accelerators (e.g. 8, 0.5 or 500m)") from None
    else:
        raise _BadRecord(column, f"{value!r} is not a count", "give a number of accelerators")
    if f < 0:
        raise _BadRecord(column, f"{value!r} is negative", "give a number of accelerators >= 0")
    if f > MAX_ACCELERATORS:
        raise _BadRecord(column, f"{str(value)[:40]} is more accelerators than any cluster holds",
                  f"give at most {MAX_ACCELERATORS} accelerators for one job")
    return f


def check_rows(total: int, nbytes: int, table: str, column: str, what: str) -> None:
    """Refuse to make more lifecycle rows than the input's size supports."""
    if total > max(MAX_ACCELERATORS, ROWS_PER_BYTE * nbytes):
        raise SchemaError(table, column, f"would make {total} lifecycle rows ({what}) from {nbytes} bytes",
                          f"check the counts (at most {ROWS_PER_BYTE} rows per byte of input); a count this large "
                          "is not a real allocation")


def jobs_table(rows: Iterable[dict[str, Any]], *, table: str, source_file: Optional[str],
               on_invalid: str = "raise", metadata: Optional[dict[bytes, bytes]] = None) -> Records:
    """Check and complete job rows into :data:`JOBS_SCHEMA`.

    Parameters
    ----------
    rows : iterable of dict
        One per job: the input columns of the schema (missing keys are null), with
        ``accelerators`` as a :class:`fractions.Fraction` (or int), ``_where`` (the
        location a person reads, e.g. ``line 12``), and optionally
        ``allocated_accelerator_ns`` when the scheduler's allocation is not
        accelerators × (end − start) (Philly's attempts). A row may instead carry
        ``_bad``: a :class:`_BadRecord` found while reading it.
    table : str
        Names the input in errors (e.g. ``"sacct jobs.txt"``).
    source_file : str or None
    on_invalid : {"raise", "quarantine"}
    metadata : dict, optional
        More schema metadata (bytes to bytes).

    Returns
    -------
    Records
        ``jobs`` the table, ``lifecycle`` None, no warnings, ``quarantine`` the rows set
        aside (:data:`JOBS_QUARANTINE_SCHEMA`; empty with ``on_invalid="raise"``).

    Raises
    ------
    pau.errors.InvalidRowError
        The first bad row (with ``on_invalid="raise"``): times out of order (eligible
        before submit, start before eligible or submit, end before start), negative or
        non-finite accelerators, a product past int64, a duplicate job id.
    """
    check_on_invalid(on_invalid)
    good: list[dict[str, Any]] = []
    bad: list[tuple[int, dict[str, Any], _BadRecord]] = []
    rounded = 0
    seen: dict[tuple[Any, ...], int] = {}
    n = 0
    for i, r in enumerate(rows):
        n += 1
        try:
            if r.get("_bad") is not None:
                raise r["_bad"]
            out, was_rounded = _derive(r)
            key = (out.get("cluster"), out["job"])
            if key in seen:
                raise _BadRecord("job", f"{out['job']!r} appears twice (first at record {seen[key]})",
                          "give each job once (one sacct/pod record per job), or keep the two clusters' cluster names")
            seen[key] = i
        except _BadRecord as b:
            bad.append((i, r, b))
            continue
        rounded += was_rounded
        good.append(out)
    if bad and on_invalid == "raise":
        i0, r0, b0 = bad[0]
        raise InvalidRowError(table, b0.column, i0, f"{b0.reason} ({r0.get('_where', f'record {i0}')})", b0.fix,
                              count=len(bad))
    cols = {f.name: pa.array([g.get(f.name) for g in good], f.type) for f in JOBS_SCHEMA}
    meta: dict[bytes, bytes] = {b"pau.jobs.rounded_rows": str(rounded).encode(), **counts_metadata(n, len(bad)),
                                **(metadata or {})}
    if source_file is not None:
        meta[b"pau.jobs.source"] = source_file.encode()
    out_t = pa.table(cols, schema=JOBS_SCHEMA).replace_schema_metadata(meta)
    q = quarantine_table(JOBS_QUARANTINE_SCHEMA, source_file,
                         [r.get("_where", f"record {i}") for i, r, _ in bad],
                         [f"{b.column}: {b.reason}. Fix: {b.fix}" for _, _, b in bad],
                         job=[r.get("job") if isinstance(r.get("job"), str) else None for _, r, _ in bad],
                         row=[i for i, _, _ in bad])
    return Records(out_t, None, [], q)


def _derive(r: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """A job row checked and completed (queue time, allocation), and whether its
    allocation was rounded to the ns."""
    job = r.get("job")
    if not isinstance(job, str) or not job:
        raise _BadRecord("job", "is empty", "give every job its id")
    sub, eli, sta, end = _check_times(r)
    _check_types(r)
    acc = r.get("accelerators")
    if acc is not None and not isinstance(acc, Fraction):
        acc = fraction(acc, "accelerators")
    out = {k: r.get(k) for k in JOBS_SCHEMA.names}
    out["accelerators"] = None if acc is None else float(acc)
    for c in ("exit_code", "restarts", "nodes"):
        v = out[c]
        if v is not None and not (-2**31 <= v <= _I32):
            raise _BadRecord(c, f"{v} is outside int32", f"give {c} as a 32-bit integer")
    ready = eli if eli is not None else sub
    out["queue_ns"] = None if sta is None or ready is None else sta - ready
    out["allocated_accelerator_ns"], was_rounded = _allocation(r, acc, sub, sta, end)
    return out, was_rounded


def _check_times(r: dict[str, Any]) -> tuple[Any, Any, Any, Any]:
    """The submit, eligible, start and end times, each within int64 and in order."""
    sub, eli, sta, end = (r.get(c) for c in _INPUT)
    for c in _INPUT:
        v = r.get(c)
        if v is not None and not (-2**63 <= v <= _I64):
            raise _BadRecord(c, f"{v} ns is outside int64", "give times within the years 1678-2262")
    if sub is not None and eli is not None and eli < sub:
        raise _BadRecord("eligible_ns", "is before the submit time", "correct the times (eligible >= submit)")
    ready = eli if eli is not None else sub
    if sta is not None and ready is not None and sta < ready:
        which = "eligible" if eli is not None else "submit"
        raise _BadRecord("start_ns", f"is before the {which} time", f"correct the times (start >= {which})")
    if sta is not None and end is not None and end < sta:
        raise _BadRecord("end_ns", "is before the start time", "correct the times (end >= start)")
    return sub, eli, sta, end


def _check_types(r: dict[str, Any]) -> None:
    """The text columns are strings, the counts and times integers."""
    for c in ("cluster", "user", "team", "partition", "state", "accelerator_type"):
        if r.get(c) is not None and not isinstance(r[c], str):
            raise _BadRecord(c, f"{r[c]!r} is not a string", f"give {c} as text")
    for c in ("exit_code", "restarts", "nodes", *_INPUT):
        v = r.get(c)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise _BadRecord(c, f"{v!r} is not an integer", f"give {c} as an integer")


def _allocation(r: dict[str, Any], acc: Optional[Fraction], sub: Any, sta: Any, end: Any) -> tuple[Optional[int], int]:
    """Accelerator-ns allocated (the row's own, else accelerators × (end − start), exact,
    rounded half to even), and whether it was rounded; None when it cannot be known."""
    was_rounded = 0
    alloc: Optional[int]
    if "allocated_accelerator_ns" in r:
        alloc = r["allocated_accelerator_ns"]
    elif sta is None:
        alloc = 0 if acc is not None or end is not None or sub is not None else None
    elif end is None or acc is None:
        alloc = None
    else:
        exact = acc * (end - sta)
        alloc = round(exact)  # Fraction rounds half to even
        was_rounded = int(exact.denominator != 1)
    if alloc is not None and alloc > _I64:
        raise _BadRecord("allocated_accelerator_ns", f"{alloc} ns is past int64 (about 292 accelerator-years)",
                  "split the job's record (pau cannot hold one job's allocation past int64 ns)")
    return alloc, was_rounded


# --- Philly -----------------------------------------------------------------------

def read_philly(path: str | os.PathLike[str], *, tz: Optional[str] = None, cluster: Optional[str] = "philly",
                on_invalid: str = "raise") -> Records:
    """Read Microsoft Philly's ``cluster_job_log`` (JSON: a list of jobs, each with
    ``attempts``), the whole upstream file or a subset of it.

    Each job's scheduling attempts are its lifecycle: the jobs table gets one row per job
    (submit, first attempt's start, last attempt's end, GPUs, GPU time summed over the
    attempts), and the lifecycle one ``attempt`` row per attempt and GPU (ranks
    ``0..gpus-1``), with a ``job`` column (:data:`JOB_LIFECYCLE_SCHEMA`): every attempt
    but the last ended ``failed`` (Philly retried it); the last one ``completed``
    (status ``Pass``), ``failed`` (``Failed``), ``preempted`` (``Killed``), ``running``
    (no end time: the trace was taken while it ran), or null when the record has no
    status (the subset dropped it).

    Parameters
    ----------
    path : str or os.PathLike
    tz : str, optional
        The zone of the trace's times (they carry none). Philly's utilization files print
        ``PST``; pass ``"America/Los_Angeles"`` if the job log is in the same local time.
        Not given: UTC, with a warning.
    cluster : str or None, default "philly"
    on_invalid : {"raise", "quarantine"}

    Returns
    -------
    Records
        ``jobs`` and ``lifecycle`` set; a job with a bad record is set aside whole (its
        record in ``quarantine``, none of its attempts in the lifecycle).
    """
    check_on_invalid(on_invalid)
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise NoInputError(f"read_philly: no file at {p!r}. Fix: give Philly's cluster_job_log JSON")
    table = f"philly {p}"
    try:
        with open(p, encoding="utf-8") as f:
            data = json.load(f)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise SchemaError(table, "(file)", f"is not JSON ({str(exc)[:200]})",
                          "give the job log as Philly wrote it (a JSON list of jobs)") from None
    if not isinstance(data, list):
        raise SchemaError(table, "(file)", f"is a JSON {type(data).__name__}, not a list of jobs",
                          "give the job log as Philly wrote it (a JSON list of jobs)")
    warnings: list[RunWarning] = []
    zi, zname = zone(tz, "philly", "Philly's utilization files print PST/PDT (America/Los_Angeles).", warnings)
    rows: list[dict[str, Any]] = []
    life: list[tuple[Any, ...]] = []
    no_status = 0
    nbytes = os.path.getsize(p)
    for i, rec in enumerate(data):
        try:
            r, attempts = _philly_job(rec, i, zi, cluster)
            check_rows(len(life) + sum(g for *_, g in attempts), nbytes, table, "num_gpus",
                       f"one per attempt and GPU, up to job {i}")
            lr = [("attempt", k, rank, s, e, None, None, None, None, kind, None, r["job"])
                  for k, s, e, kind, g in attempts for rank in range(g)]
            no_status += r.pop("_no_status")
            r["_where"] = f"job {i} ({r['job']})"
            rows.append(r)
            life.extend(lr)
        except _BadRecord as b:
            jid = rec.get("jobid", rec.get("id")) if isinstance(rec, dict) else None
            rows.append({"_bad": b, "job": jid if isinstance(jid, str) else None, "_where": f"job {i}"})
    if no_status:
        warnings.append(RunWarning("philly.no_status",
                                   f"philly: {no_status} jobs carry no status: their state is null and their last "
                                   "attempt's end reason unknown (the lifecycle's kind is null)"))
    jobs = jobs_table(rows, table=table, source_file=p, on_invalid=on_invalid,
                      metadata={b"pau.jobs.tz": zname.encode()})
    assert jobs.jobs is not None
    keep = set(jobs.jobs.column("job").to_pylist())
    life = [t for t in life if t[-1] in keep]
    cols: list[Any] = list(zip(*life)) if life else [[] for _ in JOB_LIFECYCLE_SCHEMA]
    lt = pa.table([pa.array(list(c), f.type) for c, f in zip(cols, JOB_LIFECYCLE_SCHEMA)], schema=JOB_LIFECYCLE_SCHEMA)
    return Records(jobs.jobs, lt, warnings, jobs.quarantine)


_PHILLY_END = {"Pass": "completed", "Failed": "failed", "Killed": "preempted"}


def _philly_attempt(a: Any, k: int, last: bool, before: Optional[int], gpus_field: Optional[int],
                    zi: Any) -> tuple[int, Optional[int], int]:
    """Attempt ``k`` of a Philly job: (start ns, end ns or None while it runs, GPUs).
    ``before`` is the end of the attempt before it (only the last attempt may lack one)."""
    if not isinstance(a, dict):
        raise _BadRecord("attempts", f"attempt {k} is not an object", "give each attempt start_time and end_time")
    s, e = a.get("start_time"), a.get("end_time")
    if s in (None, "None", ""):
        raise _BadRecord("attempts.start_time", f"attempt {k} has no start time (a logging error upstream)",
                  "set the job aside (on_invalid='quarantine'): its allocation cannot be known")
    s_ns = local_time(str(s), "attempts.start_time", zi)
    e_ns: Optional[int]
    if e in (None, "None", ""):
        if not last:
            raise _BadRecord("attempts.end_time", f"attempt {k} has no end time but is not the last",
                      "set the job aside (on_invalid='quarantine'): only the last attempt may still run")
        e_ns = None
    else:
        e_ns = local_time(str(e), "attempts.end_time", zi)
        if e_ns < s_ns:
            raise _BadRecord("attempts.end_time", f"attempt {k} ends before it starts", "correct the attempt's times")
    if before is not None and s_ns < before:
        raise _BadRecord("attempts.start_time", f"attempt {k} starts before attempt {k - 1} ended",
                  "give the attempts in order, each after the one before")
    detail = a.get("detail")
    g = gpus_field
    if isinstance(detail, list) and detail:
        g = sum(len(d["gpus"]) for d in detail if isinstance(d, dict) and isinstance(d.get("gpus"), list))
    if g is None:
        raise _BadRecord("num_gpus", f"attempt {k} names no GPUs", "give num_gpus, or the attempts' detail with their gpus")
    return s_ns, e_ns, g


def _philly_job(rec: Any, i: int, zi: Any, cluster: Optional[str]) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    if not isinstance(rec, dict):
        raise _BadRecord("job", f"is a JSON {type(rec).__name__}, not an object", "give each job as a JSON object")
    jid = rec.get("jobid", rec.get("id"))
    if not isinstance(jid, str) or not jid:
        raise _BadRecord("jobid", "is missing", "give each job its jobid (or id, as the marwage subset names it)")
    sub = rec.get("submitted_time")
    sub_ns = None if sub in (None, "None", "") else local_time(str(sub), "submitted_time", zi)
    attempts = rec.get("attempts")
    if not isinstance(attempts, list):
        raise _BadRecord("attempts", "is missing or not a list", "give each job its list of attempts (it may be empty)")
    gpus_field = rec.get("num_gpus")
    if gpus_field is not None and (isinstance(gpus_field, bool) or not isinstance(gpus_field, int) or gpus_field < 0):
        raise _BadRecord("num_gpus", f"{gpus_field!r} is not a count", "give num_gpus as a non-negative integer")
    if gpus_field is not None and gpus_field > MAX_ACCELERATORS:
        raise _BadRecord("num_gpus", f"{gpus_field} is more GPUs than any cluster holds", f"give at most {MAX_ACCELERATORS}")
    status = rec.get("status")
    spans: list[tuple[int, Optional[int], int]] = []
    for k, a in enumerate(attempts):
        spans.append(_philly_attempt(a, k, k == len(attempts) - 1, spans[-1][1] if spans else None, gpus_field, zi))
    gpus = gpus_field if gpus_field is not None else (max(g for _, _, g in spans) if spans else None)
    running = bool(spans) and spans[-1][1] is None
    alloc: Optional[int] = None
    if not running:
        alloc = 0
        for s, e, g in spans:
            alloc += g * ((e if e is not None else s) - s)
    r = {"job": jid, "cluster": cluster, "scheduler": "philly", "user": rec.get("user"), "team": rec.get("vc"),
         "state": status if isinstance(status, str) else None, "restarts": max(len(spans) - 1, 0),
         "submit_ns": sub_ns, "start_ns": spans[0][0] if spans else None,
         "end_ns": None if running or not spans else spans[-1][1],
         "accelerators": None if gpus is None else Fraction(gpus), "allocated_accelerator_ns": alloc,
         "_no_status": int(not isinstance(status, str))}
    if not spans:
        r["allocated_accelerator_ns"] = 0
    life = []  # (attempt, start, end, kind, gpus): a row per GPU is made once the count is checked
    for k, (s, e, g) in enumerate(spans):
        last = k == len(spans) - 1
        kind = "failed" if not last else ("running" if e is None else _PHILLY_END.get(status) if isinstance(status, str) else None)
        life.append((k, s, e, kind, g))
    return r, life
