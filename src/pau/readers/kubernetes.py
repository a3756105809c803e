"""Kubernetes pods -> the jobs table (:data:`pau.readers.scheduler.JOBS_SCHEMA`).

Two sources: the pod objects of ``kubectl get pods -o json`` (a ``List`` of pods, or one
pod), and the Alibaba GPU-sharing pod list of ``cluster-trace-gpu-v2023``
(``openb_pod_list_*.csv``). A pod is a job here: what the scheduler bound to a node.

Pod JSON
--------
``job`` is ``namespace/name`` (a pod's name is unique within its namespace only),
``team`` the namespace, ``state`` the ``status.phase``; ``submit_ns`` the
``metadata.creationTimestamp``; ``start_ns`` the time of the ``PodScheduled``
condition (status True: the node's resources were the pod's from then), else
``status.startTime``; ``end_ns`` the latest ``finishedAt`` of the containers once all
have terminated, else the ``deletionTimestamp``, else null (running). ``exit_code`` is
the first non-zero ``exitCode`` of the terminated containers (spec order), 0 when all
ended with 0; ``restarts`` the sum of the containers' ``restartCount``.
``accelerators`` are the pod's effective GPU request (any ``<vendor>/gpu`` resource,
limits first, then requests): the larger of the sum over its containers and the
largest init container, as the scheduler reserves it. ``accelerator_type`` is the
``nvidia.com/gpu.product`` node selector when the pod names one; ``nodes`` is 1 for a
pod bound to a node.

Alibaba pod list
----------------
Times are seconds from the trace's start (the trace gives no date): ``origin_ns`` is
added (default 0, with a warning). ``creation_time`` -> ``submit_ns``,
``scheduled_time`` -> ``start_ns`` (empty: never scheduled), ``deletion_time`` ->
``end_ns``; ``accelerators = num_gpu × gpu_milli / 1000`` exactly (``gpu_milli`` is the
share of one GPU a GPU-sharing pod asked for); ``gpu_spec`` -> ``accelerator_type``
(as written, e.g. ``V100M16|V100M32``: the types it may run on); ``qos`` -> ``partition``.
"""

from __future__ import annotations

import csv
import json
import os
import re
from fractions import Fraction
from typing import Any, Optional

from pau.engine.types import RunWarning, check_on_invalid
from pau.errors import NoInputError, OptionError, SchemaError
from pau.readers.scheduler import _BadRecord, Records, fraction, iso_time, jobs_table

__all__ = ["read_pods", "read_alibaba_pods", "ALIBABA_POD_COLUMNS"]

_NS = 10**9
_GPU_KEY = re.compile(r"^[A-Za-z0-9.-]+/gpu$")
#: The columns of the Alibaba v2023 pod list that the reader needs.
ALIBABA_POD_COLUMNS = ("name", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
                       "creation_time", "deletion_time", "scheduled_time")


def read_pods(path: str | os.PathLike[str], *, cluster: Optional[str] = None, on_invalid: str = "raise") -> Records:
    """Read ``kubectl get pods -o json`` output (a ``List`` of pods or one pod).

    Parameters
    ----------
    path : str or os.PathLike
    cluster : str, optional
        The cluster's name (pod objects do not carry it).
    on_invalid : {"raise", "quarantine"}

    Returns
    -------
    Records (``jobs`` set; ``quarantine`` the records set aside, see :class:`pau.readers.Records`).
    """
    check_on_invalid(on_invalid)
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise NoInputError(f"read_pods: no file at {p!r}. Fix: give the output of kubectl get pods -o json")
    table = f"pods {p}"
    try:
        with open(p, encoding="utf-8") as f:
            doc = json.load(f)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise SchemaError(table, "(file)", f"is not JSON ({exc})", "save kubectl get pods -o json's output whole") from None
    if isinstance(doc, dict) and doc.get("kind") == "Pod":
        items = [doc]
    elif isinstance(doc, dict) and isinstance(doc.get("items"), list):
        items = doc["items"]
    else:
        raise SchemaError(table, "items", "is missing: not a pod list",
                          "give the output of kubectl get pods -o json (a List with items, or one Pod)")
    rows = []
    for i, pod in enumerate(items):
        where = f"items[{i}]"
        try:
            r = _pod(pod, cluster)
            r["_where"] = where
        except _BadRecord as b:
            md = pod.get("metadata") if isinstance(pod, dict) else None
            nm = md.get("name") if isinstance(md, dict) else None
            r = {"_bad": b, "_where": where, "job": nm if isinstance(nm, str) else None}
        rows.append(r)
    out = jobs_table(rows, table=table, source_file=p, on_invalid=on_invalid)
    return out


def _when(v: Any, column: str) -> Optional[int]:
    if v is None or v == "":
        return None
    if not isinstance(v, str):
        raise _BadRecord(column, f"{v!r} is not a time", "give RFC 3339 times, as Kubernetes writes them")
    return iso_time(v, column)


def _gpus(resources: Any, column: str) -> Fraction:
    if not isinstance(resources, dict):
        return Fraction(0)
    for part in ("limits", "requests"):
        res = resources.get(part)
        if isinstance(res, dict):
            found = [fraction(v, f"{column}.{part}.{k}") for k, v in res.items() if _GPU_KEY.match(k)]
            if found:
                return sum(found, Fraction(0))
    return Fraction(0)


def _pod(pod: Any, cluster: Optional[str]) -> dict[str, Any]:
    if not isinstance(pod, dict):
        raise _BadRecord("items", "is not an object", "give each pod as Kubernetes writes it")
    md, spec, st = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    name, ns = md.get("name"), md.get("namespace")
    if not isinstance(name, str) or not name:
        raise _BadRecord("metadata.name", "is missing", "give each pod its metadata.name")
    submit = _when(md.get("creationTimestamp"), "metadata.creationTimestamp")
    deleted = _when(md.get("deletionTimestamp"), "metadata.deletionTimestamp")
    scheduled = None
    for c in st.get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("status") == "True":
            scheduled = _when(c.get("lastTransitionTime"), "status.conditions.PodScheduled")
    start = scheduled if scheduled is not None else _when(st.get("startTime"), "status.startTime")
    statuses = [s for s in st.get("containerStatuses") or [] if isinstance(s, dict)]
    ends, codes, restarts = [], [], 0
    for s in statuses:
        rc = s.get("restartCount")
        if rc is not None:
            if isinstance(rc, bool) or not isinstance(rc, int) or rc < 0:
                raise _BadRecord("status.containerStatuses.restartCount", f"{rc!r} is not a count", "give restartCount as Kubernetes writes it")
            restarts += rc
        term = (s.get("state") or {}).get("terminated")
        if isinstance(term, dict):
            ends.append(_when(term.get("finishedAt"), "status.containerStatuses.state.terminated.finishedAt"))
            codes.append(term.get("exitCode"))
    done = [e for e in ends if e is not None]
    all_done = bool(statuses) and len(done) == len(statuses)
    end = max(done) if all_done else deleted
    code = None
    if all_done:
        code = next((c for c in codes if isinstance(c, int) and c != 0), 0)
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    inits = [c for c in spec.get("initContainers") or [] if isinstance(c, dict)]
    acc = max([sum((_gpus(c.get("resources"), "spec.containers.resources") for c in containers), Fraction(0))]
              + [_gpus(c.get("resources"), "spec.initContainers.resources") for c in inits])
    sel = spec.get("nodeSelector") or {}
    return {"job": f"{ns}/{name}" if ns else name, "cluster": cluster, "scheduler": "kubernetes", "team": ns,
            "state": st.get("phase"), "exit_code": code, "restarts": restarts if statuses else None,
            "submit_ns": submit, "start_ns": start, "end_ns": end,
            "accelerators": acc, "accelerator_type": sel.get("nvidia.com/gpu.product") if isinstance(sel, dict) else None,
            "nodes": 1 if spec.get("nodeName") else None}


def read_alibaba_pods(path: str | os.PathLike[str], *, origin_ns: Optional[int] = None, cluster: Optional[str] = "alibaba-openb",
                      on_invalid: str = "raise") -> Records:
    """Read the Alibaba ``cluster-trace-gpu-v2023`` pod list (``openb_pod_list_*.csv``).

    Parameters
    ----------
    path : str or os.PathLike
    origin_ns : int, optional
        The instant (ns since the epoch) the trace's second 0 stands for. Not given: 0,
        with a warning (the trace's times are relative).
    cluster : str or None, default "alibaba-openb"
    on_invalid : {"raise", "quarantine"}

    Returns
    -------
    Records (``jobs`` set; ``quarantine`` the records set aside, see :class:`pau.readers.Records`).
    """
    check_on_invalid(on_invalid)
    warnings: list[RunWarning] = []
    if origin_ns is None:
        warnings.append(RunWarning("alibaba.relative_times",
                                   "alibaba: the pod list's times are seconds from the trace's start, which has no "
                                   "date: read with that start at 0 ns. Pass origin_ns= to place them"))
        origin_ns = 0
    elif isinstance(origin_ns, bool) or not isinstance(origin_ns, int):
        raise OptionError(f"read_alibaba_pods: origin_ns = {origin_ns!r}. Fix: give an int (ns since the epoch)")
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise NoInputError(f"read_alibaba_pods: no file at {p!r}. Fix: give an openb_pod_list CSV")
    table = f"alibaba pods {p}"
    try:
        with open(p, encoding="utf-8", newline="") as f:
            text = f.read()
    except UnicodeDecodeError as exc:
        raise SchemaError(table, "(file)", f"is not UTF-8 text ({exc})", "give the pod list as the trace writes it") from None
    lines = text.splitlines()
    try:
        header = next(csv.reader(lines[:1]), None)
    except csv.Error as exc:
        raise SchemaError(table, "name", f"the header line cannot be read ({exc})", "give the pod list with its header line") from None
    if header is None:
        raise SchemaError(table, "name", "is missing: the file is empty", "give the pod list with its header line")
    missing = [c for c in ALIBABA_POD_COLUMNS if c not in header]
    if missing:
        raise SchemaError(table, missing[0], f"is missing from the header {','.join(header)!r}",
                          f"give the pod list as the trace writes it (columns {', '.join(ALIBABA_POD_COLUMNS)})")
    col = {c: header.index(c) for c in ALIBABA_POD_COLUMNS}
    rows = []
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        where = f"line {lineno}"
        rec: list[str] = []
        try:
            try:
                rec = next(csv.reader([line]))
            except csv.Error as exc:
                raise _BadRecord("name", f"is not a CSV line ({exc})", "give the pod list as the trace writes it") from None
            if len(rec) != len(header):
                raise _BadRecord("name", f"has {len(rec)} fields where the header has {len(header)}",
                          "give one value per header field")
            r = _alibaba(rec, col, origin_ns, cluster)
            r["_where"] = where
        except _BadRecord as b:
            r = {"_bad": b, "_where": where, "job": rec[col["name"]] if len(rec) > col["name"] else None}
        rows.append(r)
    out = jobs_table(rows, table=table, source_file=p, on_invalid=on_invalid,
                     metadata={b"pau.jobs.origin_ns": str(origin_ns).encode()})
    out.warnings = warnings
    return out


def _seconds(v: str, column: str, origin: int) -> Optional[int]:
    v = v.strip()
    if v == "" or v.lower() == "nan":
        return None
    try:
        f = Fraction(v)
    except ValueError:
        raise _BadRecord(column, f"{v!r} is not a number of seconds", f"give {column} in seconds from the trace's start") from None
    ns = f * _NS
    if ns.denominator != 1:
        raise _BadRecord(column, f"{v!r} has more digits than a ns", f"give {column} to the ns at most")
    return origin + int(ns)


def _count(v: str, column: str) -> int:
    v = v.strip()
    if not v.isdigit():
        raise _BadRecord(column, f"{v!r} is not a non-negative integer", f"give {column} as an integer")
    return int(v)


def _alibaba(rec: list[Any], col: dict[str, Any], origin: int, cluster: Optional[str]) -> dict[str, Any]:
    name = rec[col["name"]].strip()
    num, milli = _count(rec[col["num_gpu"]], "num_gpu"), _count(rec[col["gpu_milli"]], "gpu_milli")
    if milli > 1000:
        raise _BadRecord("gpu_milli", f"{milli} is more than one GPU (1000)", "give gpu_milli as thousandths of one GPU, 0-1000")
    spec = rec[col["gpu_spec"]].strip()
    return {"job": name, "cluster": cluster, "scheduler": "kubernetes", "state": rec[col["pod_phase"]].strip() or None,
            "partition": rec[col["qos"]].strip() or None,
            "submit_ns": _seconds(rec[col["creation_time"]], "creation_time", origin),
            "start_ns": _seconds(rec[col["scheduled_time"]], "scheduled_time", origin),
            "end_ns": _seconds(rec[col["deletion_time"]], "deletion_time", origin),
            "accelerators": Fraction(num * milli, 1000),
            "accelerator_type": None if spec in ("", "nan") else spec}
