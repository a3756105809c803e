"""NVIDIA Resiliency Extension (NVRx) fault-tolerance records -> a lifecycle table.

NVRx's launcher (``ft_launcher``) restarts training inside one allocation; each run of the
workers between two restarts is a *cycle*. With ``--ft-cycle-info-dir`` the rendezvous
host writes one JSON file per cycle, ``cycle_info.<job_id>.<attempt>.<cycle>``
(``fault_tolerance/cycle_info_writer.py``: the ``NVRxCycleInfo`` message, protobuf JSON
with its field names): ``job_id``, ``attempt_index`` (``SLURM_RESTART_COUNT``),
``cycle_number``, ``cycle_start_time`` (written when the rendezvous round closes),
``cycle_end_time`` (written when the next round opens, or at shutdown; empty while the
cycle runs), ``active_nodes``, ``standby_nodes``, ``active_ranks`` (the group ranks of the
active nodes, ``0-3,6``) and ``generation``. The launcher's log holds its profiling
events (``shared_utils/profiling.py``)::

    ... [INFO] [node1] ... profiling.py:95   - Cycle: 1 Event: failure_detected Node: node1 Rank: None Time: 2026-03-02 10:05:01.250 UTC

How they become records (``docs/fleet.md``, "NVRx"):

* Each cycle is an attempt (``attempt`` numbers them 0, 1, ... in (attempt_index,
  cycle) order), from its start to its end, on the ranks of its active nodes
  (``ranks_per_node`` ranks each: group rank g holds ranks ``g·n .. g·n+n-1``; not
  given: one rank per node, with a warning). A cycle followed by another ``failed``;
  the last one's end reason is not in the files (``kind`` null). A cycle without an end
  is said in a warning, not guessed: the last one is left open (running as of the
  ledger's ``as_of``); an earlier one ends where the next begins (the lifecycle's rule).
* With the log: the earliest ``failure_detected`` of cycle k is a ``failure`` of cycle
  k-1 (kind ``failure_detected``); ``worker_start_started .. worker_start_completed``
  of cycle k (earliest to latest over the nodes, from the cycle's start at the
  earliest) is an ``init`` phase: ``recovery.reinit`` for k > 0. Detection, worker
  termination and the rendezvous fall between cycles: ``recovery.outage``.
"""

from __future__ import annotations

import glob
import json
import os
import re
from typing import Any, Iterable, Optional

import pyarrow as pa

from pau.engine.types import RunWarning, check_on_invalid, quarantine_table
from pau.errors import InvalidRowError, NoInputError, OptionError
from pau.readers.scheduler import (
    JOB_LIFECYCLE_SCHEMA, JOBS_QUARANTINE_SCHEMA, MAX_ACCELERATORS, _BadRecord, Records, check_rows, iso_time,
    local_time,
)

__all__ = ["read_nvrx", "CYCLE_INFO_FIELDS"]

#: The fields of an ``NVRxCycleInfo`` file the reader needs.
CYCLE_INFO_FIELDS = ("job_id", "attempt_index", "cycle_number", "cycle_start_time", "cycle_end_time", "active_ranks")
_NAME = re.compile(r"^cycle_info\.(.+)\.(\d+)\.(\d+)$")
_EVENT = re.compile(r"Cycle: (\d+) Event: (\w+) Node: (\S+) Rank: (\S+) Time: "
                    r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,9})?) UTC")


def _ranks(text: str, column: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        m = re.match(r"^(\d+)(?:-(\d+))?$", part)
        if m is None:
            raise _BadRecord(column, f"{text!r} is not a rank range", "give ranks as NVRx writes them (e.g. 0-3,6)")
        a, b = int(m.group(1)), int(m.group(2) or m.group(1))
        if b < a or b >= MAX_ACCELERATORS:
            raise _BadRecord(column, f"{part[:40]!r} is not a rank range (of at most {MAX_ACCELERATORS} nodes)",
                      "give ranks as NVRx writes them (e.g. 0-3,6)")
        if len(out) + b - a + 1 > MAX_ACCELERATORS:
            raise _BadRecord(column, f"{text[:80]!r} names more than {MAX_ACCELERATORS} nodes", "give the cycle's real ranks")
        out.extend(range(a, b + 1))
    return out


def read_nvrx(path: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *, log: Optional[str | os.PathLike[str]] = None,
              ranks_per_node: Optional[int] = None, job: Optional[str] = None,
              on_invalid: str = "raise") -> Records:
    """Read NVRx ``cycle_info`` files (a folder of them, or the files) and, optionally,
    the launcher's log with its fault-tolerance profiling events.

    Parameters
    ----------
    path : folder, file, or iterable of files
    log : str or os.PathLike, optional
        The launcher's log (its ``Cycle: N Event: ...`` lines).
    ranks_per_node : int, optional
        Accelerators (ranks) of each node. Not given: one rank per node, with a warning.
    job : str, optional
        The ``job`` column's value (default: the files' ``job_id``); files of several
        jobs need it left out.
    on_invalid : {"raise", "quarantine"}
        Quarantine sets aside cycle files and log lines that cannot be read.

    Returns
    -------
    Records (``lifecycle`` set; ``quarantine`` the files and lines set aside).
    """
    check_on_invalid(on_invalid)
    if ranks_per_node is not None and (isinstance(ranks_per_node, bool) or not isinstance(ranks_per_node, int)
                                       or ranks_per_node <= 0):
        raise OptionError(f"read_nvrx: ranks_per_node = {ranks_per_node!r}. Fix: give a positive int, or leave it out")
    files = _files(path)
    warnings: list[RunWarning] = []
    bad: list[tuple[str, str, _BadRecord, int]] = []  # (file, location, _BadRecord, row: the file's index or the line's)
    cycles = []
    for i, f in enumerate(files):
        try:
            cycles.append(_cycle(f))
        except _BadRecord as b:
            bad.append((f, "file", b, i))
    events = {} if log is None else _log_events(log, bad)
    if bad and on_invalid == "raise":
        f0, where0, b0, row0 = bad[0]
        raise InvalidRowError(f"nvrx {f0}", b0.column, row0, f"{b0.reason} ({where0})", b0.fix, count=len(bad))
    cycles.sort(key=lambda c: (c["job"], c["attempt_index"], c["cycle"]))
    jobs = sorted({c["job"] for c in cycles})
    if len(jobs) > 1 and job is not None:
        raise OptionError(f"read_nvrx: the files hold jobs {jobs}; job= names one. Fix: leave job out")
    if ranks_per_node is None:
        warnings.append(RunWarning("nvrx.ranks_are_nodes", "nvrx: ranks_per_node was not given: each active node "
                                   "is counted as one rank. Pass ranks_per_node= (the accelerators of a node)"))
    use_log = bool(events) and len(jobs) == 1 and len({c["attempt_index"] for c in cycles}) == 1
    if events and not use_log:
        warnings.append(RunWarning("nvrx.log_unused", "nvrx: the cycle files span several jobs or attempt indexes "
                                   "and the log's cycle numbers cannot tell them apart: its events are not used. "
                                   "Give one launcher attempt's files with its log"))
    if (ranks_per_node or 1) * MAX_ACCELERATORS > 2**31:
        raise OptionError(f"read_nvrx: ranks_per_node = {ranks_per_node} is more than {2**31 // MAX_ACCELERATORS} "
                          "accelerators a node. Fix: give the node's accelerators")
    nbytes = sum(os.path.getsize(f) for f in files)
    check_rows(sum(len(c["ranks"]) for c in cycles) * (ranks_per_node or 1), nbytes, f"nvrx {files[0]}",
               "active_ranks", "one attempt row per cycle and rank")
    rows: list[tuple[Any, ...]] = []
    for jb in jobs:
        _job_rows(jb, [c for c in cycles if c["job"] == jb], events if use_log else {}, ranks_per_node or 1,
                  rows, warnings)
    rows.sort(key=lambda r: (r[-1], r[1], r[0] != "attempt", r[3]))
    schema = JOB_LIFECYCLE_SCHEMA
    cols: list[Any] = list(zip(*rows)) if rows else [[] for _ in schema]
    arrays = [pa.array(list(c), f.type) for c, f in zip(cols, schema)]
    if job is not None:
        arrays[-1] = pa.array([job] * len(rows), pa.string())
    lt = pa.table(arrays, schema=schema)
    q = quarantine_table(JOBS_QUARANTINE_SCHEMA, [f for f, _, _, _ in bad], [w for _, w, _, _ in bad],
                         [f"{b.column}: {b.reason}. Fix: {b.fix}" for _, _, b, _ in bad],
                         job=[None] * len(bad), row=[r for _, _, _, r in bad])
    return Records(None, lt, warnings, q)


def _files(path: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    """The cycle files: a folder's ``cycle_info.*``, one file, or the files given."""
    if isinstance(path, (str, os.PathLike)):
        p = os.fspath(path)
        if os.path.isdir(p):
            files = sorted(f for f in glob.glob(os.path.join(p, "cycle_info.*")) if _NAME.match(os.path.basename(f)))
        elif os.path.isfile(p):
            files = [p]
        else:
            raise NoInputError(f"read_nvrx: nothing at {p!r}. Fix: give the --ft-cycle-info-dir folder or its files")
    else:
        files = [os.fspath(f) for f in path]
    if not files:
        raise NoInputError(f"read_nvrx: no cycle_info.<job>.<attempt>.<cycle> file in {path!r}. "
                           "Fix: give the folder ft_launcher's --ft-cycle-info-dir names")
    return files


def _log_events(log: str | os.PathLike[str], bad: list[tuple[str, str, _BadRecord, int]]
                ) -> dict[tuple[str, int], dict[str, list[int]]]:
    """The launcher log's profiling events: (``""``, cycle) -> event -> times (ns); a line
    whose time cannot be read goes to ``bad``."""
    events: dict[tuple[str, int], dict[str, list[int]]] = {}
    lp = os.fspath(log)
    if not os.path.isfile(lp):
        raise NoInputError(f"read_nvrx: no log at {lp!r}. Fix: give the launcher's log file, or leave log out")
    with open(lp, encoding="utf-8", errors="replace") as fh:
        for n, ln in enumerate(fh, start=1):
            m = _EVENT.search(ln)
            if m is None:
                continue
            try:
                t = local_time(m.group(5), "Time", None)
            except _BadRecord as b:
                bad.append((lp, f"line {n}", b, n - 1))
                continue
            events.setdefault(("", int(m.group(1))), {}).setdefault(m.group(2), []).append(t)
    return events


def _job_rows(jb: str, mine: list[dict[str, Any]], events: dict[tuple[str, int], dict[str, list[int]]], n: int,
              rows: list[tuple[Any, ...]], warnings: list[RunWarning]) -> None:
    """One job's lifecycle rows: an attempt row per cycle and rank (``n`` ranks a node),
    the failure the log detected before a cycle, and the workers' start as ``init``."""
    for k, c in enumerate(mine):
        last = k == len(mine) - 1
        if c["end"] is None:
            warnings.append(RunWarning("nvrx.open_cycle", f"nvrx: cycle {c['cycle']} (attempt index "
                                       f"{c['attempt_index']}) of job {jb} has no end time (the launcher was "
                                       + ("killed, or it still runs): it is left open" if last else
                                          "killed before writing it): it ends where the next cycle starts")))
        kind = None if last else "failed"
        for g in c["ranks"]:
            for i in range(n):
                rows.append(("attempt", k, g * n + i, c["start"], c["end"], None, None, None, None, kind, None, jb))
        ev = events.get(("", c["cycle"]), {})
        if k > 0 and ev.get("failure_detected"):
            tf = min(ev["failure_detected"])
            prev = mine[k - 1]
            if tf < prev["start"] or (prev["end"] is not None and tf > prev["end"]):
                warnings.append(RunWarning("nvrx.failure_outside_cycle",
                                           f"nvrx: the failure detected for cycle {c['cycle']} at {tf} ns is outside "
                                           f"cycle {prev['cycle']}: not used"))
            else:
                rows.append(("failure", k - 1, -1, tf, None, None, None, None, None, "failure_detected", None, jb))
        if ev.get("worker_start_started") and ev.get("worker_start_completed"):
            s0 = max(min(ev["worker_start_started"]), c["start"])
            s1 = max(ev["worker_start_completed"])
            if c["end"] is not None:
                s1 = min(s1, c["end"])
            if s1 > s0:
                rows.append(("phase", k, -1, s0, s1, None, None, None, None, "init", None, jb))


def _cycle(f: str) -> dict[str, Any]:
    m = _NAME.match(os.path.basename(f))
    if m is None:
        raise _BadRecord("(file name)", f"{os.path.basename(f)!r} is not cycle_info.<job_id>.<attempt>.<cycle>",
                  "give the files ft_launcher wrote (not the .current link or .tmp files)")
    try:
        with open(f, encoding="utf-8") as fh:
            d = json.load(fh)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise _BadRecord("(file)", f"is not JSON ({exc})", "give the cycle file as NVRx wrote it (it is rewritten atomically)") from None
    if not isinstance(d, dict):
        raise _BadRecord("(file)", "is not a JSON object", "give the cycle file as NVRx wrote it")
    for k in CYCLE_INFO_FIELDS:
        if k not in d:
            raise _BadRecord(k, "is missing", "give the cycle file as NVRx wrote it (every field is written)")
    job, att, cyc = d["job_id"], d["attempt_index"], d["cycle_number"]
    if (str(job), str(att), str(cyc)) != m.groups():
        raise _BadRecord("job_id", f"the file says job {job!r} attempt {att!r} cycle {cyc!r}, its name {m.groups()}",
                  "give the files with the names NVRx gave them")
    start = d["cycle_start_time"]
    if not isinstance(start, str) or not start:
        raise _BadRecord("cycle_start_time", "is empty", "give the cycle file as NVRx wrote it (the start is written first)")
    s = iso_time(start, "cycle_start_time")
    e_txt = d["cycle_end_time"]
    e = iso_time(e_txt, "cycle_end_time") if isinstance(e_txt, str) and e_txt else None
    if e is not None and e < s:
        raise _BadRecord("cycle_end_time", "is before cycle_start_time", "correct the cycle's times")
    if not isinstance(d["active_ranks"], str) or not d["active_ranks"]:
        raise _BadRecord("active_ranks", "is empty: the cycle's ranks are unknown",
                  "use an NVRx that writes active_ranks (0.6 and later), or set the file aside")
    return {"job": str(job), "attempt_index": int(att), "cycle": int(cyc), "start": s, "end": e,
            "ranks": _ranks(d["active_ranks"], "active_ranks")}
