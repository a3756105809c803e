"""Scheduler records and lifecycle logs in the fleet archive (DESIGN §7, ``docs/fleet.md``).

``pau ingest`` takes, besides runs, the files :mod:`pau.readers` reads as fleet records:

* the scheduler's jobs (``sacct`` text or JSON, a Kubernetes pod list, the Alibaba pod
  list): their rows go to the archive's jobs table, one Parquet file per source
  (``jobs/<key>.parquet``, the source's run key), written whole and renamed into place,
  so a re-ingest of the same bytes adds nothing;
* Megatron-LM logs and NVRx cycle files: lifecycles, each log (each job's cycle files) one
  run;
* Microsoft Philly's job log: both, a jobs row and a run per job (its attempts as the
  lifecycle, split by job here).

:func:`records_format` names the format of such a file; :func:`read_records` reads one
source into its jobs rows and runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine.types import RunWarning
from pau.engine.vocab import LIFECYCLE_SCHEMA
from pau.errors import PauError
import pau.fleet.archive as _archive
from pau.readers import detect as _detect
from pau.readers.kubernetes import read_alibaba_pods, read_pods
from pau.readers.megatron import read_megatron
from pau.readers.nvrx import read_nvrx
from pau.readers.scheduler import JOB_LIFECYCLE_SCHEMA, JOBS_SCHEMA, read_philly
from pau.readers.slurm import read_sacct_jobs
from pau.run import Run

__all__ = ["JOB_FORMATS", "RECORD_FORMATS", "RUN_FORMATS", "Records", "nvrx_job", "read_records", "records_format"]

#: Record formats by the reader detection names: format -> reader.
RECORD_FORMATS = {"sacct": "read_sacct_jobs", "pods": "read_pods", "alibaba_pods": "read_alibaba_pods",
                  "philly": "read_philly", "megatron": "read_megatron", "nvrx": "read_nvrx"}
_BY_READER = {v: k for k, v in RECORD_FORMATS.items()}
#: Formats that give jobs rows; formats that give runs (Philly gives both).
JOB_FORMATS = ("sacct", "pods", "alibaba_pods", "philly")
RUN_FORMATS = ("philly", "megatron", "nvrx")

_NVRX_NAME = re.compile(r"^cycle_info\.(.+)\.(\d+)\.(\d+)$")


def records_format(path: str) -> Optional[str]:
    """The record format of the file at ``path`` (a key of :data:`RECORD_FORMATS`), or
    None when its head is no fleet record that :mod:`pau.readers` reads."""
    try:
        text = _detect._head(path).decode("utf-8", errors="replace")
    except (OSError, _detect.UnknownFormatError):
        return None
    hint = _detect._fleet_hint(text)
    return None if hint is None else _BY_READER.get(hint[1])


def nvrx_job(path: str) -> Optional[str]:
    """The job id of an NVRx ``cycle_info.<job>.<attempt>.<cycle>`` file name."""
    m = _NVRX_NAME.match(os.path.basename(path))
    return None if m is None else m.group(1)


@dataclass
class Records:
    """What one source gave: ``jobs`` (rows of :data:`JOBS_SCHEMA`, or None) and
    ``runs``: ``(suffix, run)`` pairs, ``suffix`` None for the source's one run, else
    what tells its runs apart (Philly's job id); ``warnings`` of the jobs rows."""

    jobs: Optional[pa.Table]
    runs: list[tuple[Optional[str], Run]] = field(default_factory=list)
    warnings: list[RunWarning] = field(default_factory=list)


def run_key_of(key: str, suffix: Optional[str]) -> str:
    """The run key of one of several runs of a source of key ``key`` (a Philly job):
    BLAKE2b (16 bytes) of the source's key and the suffix."""
    if suffix is None:
        return key
    return hashlib.blake2b(f"pau-fleet-run-of/1\0{key}\0{suffix}".encode("utf-8", "surrogateescape"),
                           digest_size=16).hexdigest()


def _lifecycle_run(lifecycle: Optional[pa.Table], meta: dict[str, Any], warnings: Sequence[RunWarning]) -> Run:
    if lifecycle is None:  # pragma: no cover - the lifecycle readers always give one
        raise PauError(f"{meta['sources'][0]}: its reader gave no lifecycle")
    if "job" in lifecycle.column_names:
        if len(lifecycle["job"].unique()) > 1:  # many jobs: each its own lineage (docs/fleet.md)
            return Run(lifecycle=lifecycle.cast(JOB_LIFECYCLE_SCHEMA), metadata=meta, warnings=list(warnings))
        lifecycle = lifecycle.drop(["job"])
    return Run(lifecycle=lifecycle.cast(LIFECYCLE_SCHEMA), metadata=meta, warnings=list(warnings))


def philly_runs(jobs: pa.Table, lifecycle: pa.Table, source: str, warnings: Sequence[RunWarning]
                ) -> list[tuple[Optional[str], Run]]:
    """One run per Philly job: its attempt rows (one per GPU), and one step per attempt
    (``step`` 1, ``rank`` −1, the attempt's span). Philly's log has no steps and no
    checkpoints, so each attempt runs the job from its beginning: the lifecycle rules
    (``docs/lifecycle.md``) make a failed, killed or retried attempt's GPU time
    ``rolled_back`` (cause: how it ended), the last attempt's ``productive`` when it
    ended without failing, ``pending`` while it runs; the gaps between attempts are
    ``recovery.outage``."""
    out: list[tuple[Optional[str], Run]] = []
    if lifecycle.num_rows == 0:
        return out
    order = pc.sort_indices(lifecycle, [("job", "ascending"), ("attempt", "ascending"), ("rank", "ascending")])
    lc = lifecycle.take(order)
    names = lc["job"].to_numpy(zero_copy_only=False)
    cut = np.flatnonzero(names[1:] != names[:-1]) + 1
    bounds = np.concatenate([[0], cut, [len(names)]])
    info = {j: (c, g, u, tm) for j, c, g, u, tm in zip(jobs["job"].to_pylist(), jobs["cluster"].to_pylist(),
                                                       jobs["accelerators"].to_pylist(), jobs["user"].to_pylist(),
                                                       jobs["team"].to_pylist())}
    for a, b in zip(bounds[:-1], bounds[1:]):
        t = lc.slice(int(a), int(b - a)).drop(["job"])
        jid = str(names[a])
        att = t.filter(pc.equal(t["rank"], 0))
        steps = pa.table({"record": ["step"] * att.num_rows, "attempt": att["attempt"],
                          "rank": pa.array([-1] * att.num_rows, pa.int32()), "start_ns": att["start_ns"],
                          "end_ns": att["end_ns"], "step": pa.array([1] * att.num_rows, pa.int64())})
        full = pa.concat_tables([t.cast(LIFECYCLE_SCHEMA), _widen(steps)])
        cluster, gpus, user, team = info.get(jid, (None, None, None, None))
        meta: dict[str, Any] = {"format": "philly", "sources": [source], "job": jid}
        for k, v in (("cluster", cluster), ("user", user), ("team", team)):  # what the job's record says
            if v is not None:
                meta[k] = v
        if gpus is not None and float(gpus).is_integer():
            meta["accelerators"] = int(gpus)
        out.append((jid, Run(lifecycle=full, metadata=meta, warnings=list(warnings))))
    return out


def _widen(t: pa.Table) -> pa.Table:
    """``t``'s columns in :data:`LIFECYCLE_SCHEMA`, the others null."""
    n = t.num_rows
    return pa.table([t[f.name].cast(f.type) if f.name in t.column_names else pa.nulls(n, f.type)
                     for f in LIFECYCLE_SCHEMA], schema=LIFECYCLE_SCHEMA)


def read_records(fmt: str, root: str, files: Sequence[str], *, cluster: Optional[str] = None,
                 tz: Optional[str] = None, origin_ns: Optional[int] = None) -> Records:
    """Read one source of record format ``fmt``: ``cluster`` names the cluster where the
    records do not, ``tz`` the zone of local times (sacct, Philly, Megatron-LM),
    ``origin_ns`` the start of the Alibaba pod list's relative times."""
    if fmt == "sacct":
        r = read_sacct_jobs(root, tz=tz, cluster=cluster)
        return Records(r.jobs, [], list(r.warnings))
    if fmt == "pods":
        r = read_pods(root, cluster=cluster)
        return Records(r.jobs, [], list(r.warnings))
    if fmt == "alibaba_pods":
        kw: dict[str, Any] = {} if cluster is None else {"cluster": cluster}
        r = read_alibaba_pods(root, origin_ns=origin_ns, **kw)
        return Records(r.jobs, [], list(r.warnings))
    if fmt == "philly":
        r = read_philly(root, tz=tz, **({} if cluster is None else {"cluster": cluster}))
        return Records(r.jobs, philly_runs(r.jobs, r.lifecycle, root, r.warnings), list(r.warnings))
    if fmt == "megatron":
        r = read_megatron(root, tz=tz)
        meta = {"format": "megatron", "sources": [root]}
        return Records(None, [(None, _lifecycle_run(r.lifecycle, meta, r.warnings))])
    if fmt == "nvrx":
        r = read_nvrx(list(files))
        lc = r.lifecycle
        jobs = lc["job"].unique().to_pylist() if lc is not None and "job" in lc.column_names else []
        meta = {"format": "nvrx", "sources": list(files)}
        if len(jobs) == 1 and jobs[0] is not None:
            meta["job"] = jobs[0]
        return Records(None, [(None, _lifecycle_run(lc, meta, r.warnings))])
    raise PauError(f"{root}: record format {fmt!r} is not one pau ingests")  # pragma: no cover - the walk names them


def jobs_file_table(jobs: pa.Table, warnings: Sequence[RunWarning]) -> pa.Table:
    """The jobs rows as written to ``jobs/<key>.parquet``: :data:`JOBS_SCHEMA`, the
    reader's warnings in the metadata (``pau.jobs.warnings``: JSON of ``[code, message]``)."""
    meta = {b"pau.jobs.warnings": json.dumps([[w.code, str(w)] for w in warnings]).encode()}
    return jobs.select(JOBS_SCHEMA.names).cast(JOBS_SCHEMA).replace_schema_metadata(meta)


def jobs_present(out: str, key: str) -> bool:
    return os.path.exists(_archive.table_file(out, _archive.JOBS, key))
