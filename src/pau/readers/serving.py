"""Serving benchmark results -> pau's requests table (DESIGN §3).

Columns: ``request_id:string, replica:string, arrival_ns:int64, first_token_ns:int64,
end_ns:int64, input_tokens:int64, output_tokens:int64, status:string`` (status one of
ok, error, timeout, rejected, cancelled). Nullable where the source does not say.

Formats
-------
``vllm``: the JSON that vLLM's ``benchmark_serving.py --save-result`` (``vllm bench
serve``) writes: per-request arrays ``ttfts`` (s), ``itls`` (list of s per request),
``input_lens``, ``output_lens``, ``errors`` (``""`` = success), plus ``duration`` and
``date``. It holds **no arrival times**; pau assumes every request arrives at 0
(``arrival_ns = 0``: times are relative to each request's own send), unless the file
has ``start_times`` (s since the benchmark started), then used as arrivals. Then
``first_token_ns = arrival + ttft`` and ``end_ns = first_token + sum(itls)`` (or
``arrival + e2els[i]`` when per-request ``e2els`` are saved). Seconds are rounded to
the nearest ns. ``request_id`` is the index; ``replica`` is null.

``aiperf``: AIPerf's ``profile_export.jsonl``, one record per line:
``metadata.request_start_ns`` (arrival), ``request_end_ns``, ``x_request_id``,
``was_cancelled``; ``metrics.time_to_first_token`` (ms; first token =
arrival + ttft), ``input_sequence_length`` (or ``error_isl``),
``output_sequence_length``; ``error`` (null = ok; HTTP 408/504 or a type containing
``Timeout`` -> timeout, 429/503 -> rejected, else error; a cancelled request ->
cancelled).

``genai-perf``: GenAI-Perf's ``profile_export.json``: ``experiments[*].requests[*]``
with ``timestamp`` (arrival, ns) and ``response_timestamps`` (first and last response).
Token counts are not in this file (GenAI-Perf tokenizes the outputs): null. A request
without responses is an error.

Bad input raises :class:`ServingFormatError` (a :class:`pau.errors.PauError`) naming
the file, the record and the fix; unusable records are skipped with ``on_invalid=
"quarantine"`` and counted in :attr:`ServingResults.warnings`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import PauError

__all__ = ["REQUESTS_SCHEMA", "ServingFormatError", "ServingResults", "read_serving"]

REQUESTS_SCHEMA = pa.schema([
    ("request_id", pa.string()), ("replica", pa.string()), ("arrival_ns", pa.int64()),
    ("first_token_ns", pa.int64()), ("end_ns", pa.int64()), ("input_tokens", pa.int64()),
    ("output_tokens", pa.int64()), ("status", pa.string()),
])

_VLLM_KEYS = ("ttfts", "itls", "input_lens", "output_lens")


class ServingFormatError(PauError):
    """A serving result file pau cannot use. Attributes: ``path``, ``record`` (index or
    line, or None), ``problem``, ``fix``."""

    def __init__(self, path: str, problem: str, fix: str, record: str | None = None):
        self.path, self.record, self.problem, self.fix = path, record, problem, fix
        where = f", {record}" if record else ""
        super().__init__(f"{path}{where}: {problem}. Fix: {fix}")


@dataclass
class ServingResults:
    """What :func:`read_serving` returns: ``requests`` (DESIGN §3), ``format``
    (``vllm``, ``aiperf``, ``genai-perf``), ``meta`` (the run's scalar fields, e.g.
    vLLM's ``duration``, ``date``, ``model_id``) and ``warnings``."""

    requests: pa.Table
    format: str
    meta: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)

    def __repr__(self) -> str:
        return f"ServingResults(format={self.format!r}, requests={self.requests.num_rows}, warnings={len(self.warnings)})"


def _s_to_ns(x) -> np.ndarray:
    return np.rint(np.asarray(x, dtype=np.float64) * 1e9).astype(np.int64)


def _vllm(path: str, doc: dict) -> tuple[pa.Table, dict, list]:
    missing = [k for k in _VLLM_KEYS if k not in doc]
    if missing:
        raise ServingFormatError(path, f"vLLM results without the per-request arrays {', '.join(missing)}",
                                 "re-run the benchmark with --save-result (and --save-detailed in newer "
                                 "vLLM) so per-request latencies are saved")
    n = len(doc["ttfts"])
    for k in (*_VLLM_KEYS, "errors"):
        if k in doc and len(doc[k]) != n:
            raise ServingFormatError(path, f"'{k}' has {len(doc[k])} entries but 'ttfts' has {n}",
                                     "the file is inconsistent: save the results again")
    warnings = []
    arrival = np.zeros(n, np.int64)
    if "start_times" in doc and len(doc["start_times"]) == n:
        arrival = _s_to_ns(doc["start_times"])
    else:
        warnings.append(f"{path}: vLLM results hold no arrival times; every request is taken to arrive at 0 "
                        f"({n} requests)")
    first = arrival + _s_to_ns(doc["ttfts"])
    if "e2els" in doc and len(doc["e2els"]) == n:
        end = arrival + _s_to_ns(doc["e2els"])
    else:
        end = first + _s_to_ns([float(np.sum(x)) if x else 0.0 for x in doc["itls"]])
    errors = doc.get("errors") or [""] * n
    status = ["ok" if not e else "error" for e in errors]
    meta = {k: v for k, v in doc.items() if not isinstance(v, (list, dict))}
    t = pa.table({
        "request_id": pa.array([str(i) for i in range(n)], pa.string()),
        "replica": pa.nulls(n, pa.string()), "arrival_ns": arrival, "first_token_ns": first, "end_ns": end,
        "input_tokens": pa.array(doc["input_lens"], pa.int64()),
        "output_tokens": pa.array(doc["output_lens"], pa.int64()), "status": status}, schema=REQUESTS_SCHEMA)
    return t, meta, warnings


def _metric(metrics: dict, name: str):
    m = metrics.get(name)
    return m.get("value") if isinstance(m, dict) else m


def _aiperf_status(rec: dict) -> str:
    md = rec.get("metadata") or {}
    if md.get("was_cancelled"):
        return "cancelled"
    err = rec.get("error")
    if not err:
        return "ok"
    code, typ = err.get("code"), str(err.get("type") or "")
    if code in (408, 504) or "timeout" in typ.lower():
        return "timeout"
    if code in (429, 503):
        return "rejected"
    return "error"


def _aiperf(path: str, lines: list[str], on_invalid: str) -> tuple[pa.Table, dict, list]:
    rows, bad, first_bad = [], 0, None
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            md = rec["metadata"]
            start, end = int(md["request_start_ns"]), md.get("request_end_ns")
            metrics = rec.get("metrics") or {}
            ttft = _metric(metrics, "time_to_first_token")
            isl = _metric(metrics, "input_sequence_length") or _metric(metrics, "error_isl")
            osl = _metric(metrics, "output_sequence_length")
            rows.append({
                "request_id": str(md.get("x_request_id") or md.get("session_num", no - 1)),
                "replica": None, "arrival_ns": start,
                "first_token_ns": None if ttft is None else start + int(round(float(ttft) * 1e6)),
                "end_ns": None if end is None else int(end),
                "input_tokens": None if isl is None else int(isl), "output_tokens": None if osl is None else int(osl),
                "status": _aiperf_status(rec)})
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            if on_invalid == "raise":
                raise ServingFormatError(path, f"not an AIPerf record ({type(exc).__name__}: {exc})",
                                         "repair or remove the line, or pass on_invalid='quarantine' to skip "
                                         "such records", record=f"line {no}") from None
            bad += 1
            first_bad = first_bad or no
    warnings = [f"{path}: {bad} unusable records skipped (first at line {first_bad})"] if bad else []
    return pa.Table.from_pylist(rows, schema=REQUESTS_SCHEMA), {}, warnings


def _genai_perf(path: str, doc: dict) -> tuple[pa.Table, dict, list]:
    rows = []
    for e, exp in enumerate(doc["experiments"]):
        for j, req in enumerate(exp.get("requests", [])):
            ts = req.get("timestamp")
            if ts is None:
                raise ServingFormatError(path, "a request without 'timestamp'", "export the profile again",
                                         record=f"experiments[{e}].requests[{j}]")
            resp = req.get("response_timestamps") or []
            rows.append({"request_id": f"{e}-{j}", "replica": None, "arrival_ns": int(ts),
                         "first_token_ns": int(resp[0]) if resp else None,
                         "end_ns": int(resp[-1]) if resp else None, "input_tokens": None, "output_tokens": None,
                         "status": "ok" if resp else "error"})
    return pa.Table.from_pylist(rows, schema=REQUESTS_SCHEMA), {}, [
        f"{path}: GenAI-Perf raw export: token counts are not in the file ({len(rows)} requests)"]


def read_serving(path: str | os.PathLike, *, on_invalid: str = "raise") -> ServingResults:
    """Read a serving benchmark's per-request results into the requests table.

    Parameters
    ----------
    path : str or os.PathLike
        A vLLM results JSON, an AIPerf ``profile_export.jsonl`` or a GenAI-Perf
        ``profile_export.json`` (the format is recognised from the content).
    on_invalid : {"raise", "quarantine"}
        AIPerf lines that are not records: raise (default) or skip with a count.

    Returns
    -------
    ServingResults

    Raises
    ------
    ServingFormatError
        Empty file, malformed JSON, an unknown layout, missing per-request fields.
    """
    if on_invalid not in ("raise", "quarantine"):
        raise ValueError(f"on_invalid: expected 'raise' or 'quarantine', got {on_invalid!r}")
    p = os.fspath(path)
    with open(p, "r", encoding="utf-8") as f:
        text = f.read()
    fix = "give vLLM benchmark results (--save-result), an AIPerf profile_export.jsonl or a GenAI-Perf profile_export.json"
    if not text.strip():
        raise ServingFormatError(p, "the file is empty", fix)
    doc: Any = None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        first = text.lstrip().splitlines()[0]
        if first.startswith("{") and '"metadata"' in first:
            t, meta, w = _aiperf(p, text.splitlines(), on_invalid)
            return ServingResults(t, "aiperf", meta, w)
        raise ServingFormatError(p, f"malformed JSON ({exc})", "the file is truncated or corrupt; " + fix) from None
    if isinstance(doc, dict) and "ttfts" in doc or isinstance(doc, dict) and "input_lens" in doc:
        t, meta, w = _vllm(p, doc)
        return ServingResults(t, "vllm", meta, w)
    if isinstance(doc, dict) and isinstance(doc.get("experiments"), list):
        t, meta, w = _genai_perf(p, doc)
        return ServingResults(t, "genai-perf", meta, w)
    if isinstance(doc, dict) and "metadata" in doc:   # a one-record AIPerf jsonl
        t, meta, w = _aiperf(p, text.splitlines(), on_invalid)
        return ServingResults(t, "aiperf", meta, w)
    if isinstance(doc, dict) and "duration" in doc and "completed" in doc:
        raise ServingFormatError(p, "vLLM results without per-request arrays (ttfts, itls, input_lens, "
                                 "output_lens)", "re-run with --save-result --save-detailed")
    raise ServingFormatError(p, "not a known serving result layout", fix)
