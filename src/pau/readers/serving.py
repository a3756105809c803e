"""Serving benchmark results -> pau's requests table (DESIGN §3).

Columns: ``request_id:string, replica:string, arrival_ns:int64, first_token_ns:int64,
end_ns:int64, input_tokens:int64, output_tokens:int64, status:string`` (status one of
ok, error, timeout, rejected, cancelled). Nullable where the source does not say.

Time
----
Every time is an exact ``int64`` ns. Integer ns fields are taken as they are. A time a
tool writes as a decimal number of seconds or milliseconds is converted from the
**decimal text in the file** (``json`` is read with the numbers kept as text, then
:class:`decimal.Decimal`), scaled exactly and **rounded half away from zero to the ns**:
no float multiplication error. So ``0.1`` s is 100,000,000 ns and ``18.7125645679989`` s
is 18,712,564,568 ns. What each format assumed is listed in
:attr:`ServingResults.meta` ``["assumptions"]``; what is lossy or guessed also in
:attr:`ServingResults.warnings`.

Formats (recognised from the content, not the name)
---------------------------------------------------
``aiperf``: AIPerf's ``profile_export.jsonl``, one JSON record per line with
``metadata``, ``metrics`` (each ``{"value", "unit"}``) and ``error``:

* ``arrival_ns`` = ``metadata.timestamp_ns`` (integer ns; older exports:
  ``metadata.request_start_ns``, else ``metrics.min_request_timestamp``);
* ``end_ns`` = ``metrics.max_response_timestamp`` (integer ns; older exports:
  ``metadata.request_end_ns``);
* ``first_token_ns`` = arrival + ``metrics.ttft`` (older: ``time_to_first_token``) in
  its ``unit`` (ms: AIPerf writes integer ns / 10^6, so this is exact);
* ``input_tokens`` = ``input_sequence_length`` (or ``error_isl``); ``output_tokens`` =
  ``output_sequence_length`` (answer plus reasoning tokens, as AIPerf counts them; else
  ``output_token_count + reasoning_token_count``); the reasoning total is in
  ``meta["reasoning_tokens"]``;
* ``request_id`` = ``metadata.x_request_id``; ``replica`` null;
* ``status``: ``error`` null -> ok; ``RequestCancellationError`` / code 499 /
  ``was_cancelled`` -> cancelled; HTTP 408/504 or a type containing ``Timeout`` ->
  timeout; 429/503 -> rejected; any other error -> error.
* A cancelled record carries only its start: AIPerf writes no end time. Its
  ``end_ns`` is the start plus the delay stated in the error message (``"Request was
  cancelled after 0.000 seconds"``, written to the ms, so ±0.5 ms); without such a
  message it is null. ``request_latency``, where written, is checked against
  ``end - arrival`` (a mismatch is a warning).

``llmperf``: LLMPerf's ``*_individual_responses.json``, a JSON list with one object
per request: ``ttft_s``, ``end_to_end_latency_s`` (float seconds),
``number_input_tokens``, ``number_output_tokens``, ``error_code``, ``error_msg``.
LLMPerf writes **no start times**: every request is taken to arrive at 0 (times are
relative to each request's own send; a warning says so), ``first_token_ns`` =
``ttft_s``, ``end_ns`` = ``end_to_end_latency_s`` (seconds -> ns as above).
``request_id`` is the list index; ``replica`` is null. Status: ``error_code`` null
and ``error_msg`` empty -> ok, else by the code as for AIPerf (other codes -> error).
LLMPerf does not measure the times of a failed request consistently (they stay 0),
so a failed request has ``first_token_ns`` null and ``end_ns`` as written.

``vllm``: the JSON that vLLM's ``benchmark_serving.py --save-result`` (``vllm bench
serve``) writes: per-request arrays ``ttfts`` (s), ``itls`` (list of s per request),
``input_lens``, ``output_lens``, ``errors`` (``""`` = success), plus ``duration`` and
``date``. It holds **no arrival times**; pau assumes every request arrives at 0
(``arrival_ns = 0``: times are relative to each request's own send), unless the file
has ``start_times`` (s since the benchmark started), then used as arrivals. Then
``first_token_ns = arrival + ttft`` and ``end_ns = first_token + sum(itls)`` (or
``arrival + e2els[i]`` when per-request ``e2els`` are saved); seconds -> ns as above
(the ``itls`` are summed exactly, then rounded once). ``request_id`` is the index;
``replica`` is null.

``genai-perf``: GenAI-Perf's ``profile_export.json``: ``experiments[*].requests[*]``
with ``timestamp`` (arrival, ns) and ``response_timestamps`` (first and last response).
Token counts are not in this file (GenAI-Perf tokenizes the outputs): null. A request
without responses is an error.

A **directory** is read through the one per-request results file in it (found by
content, as :func:`pau.readers.detect.detect_format` does): the summaries the tools
write beside it (AIPerf's ``profile_export_aiperf.json``/``.csv``, LLMPerf's
``*_summary.json``) are not per-request data and are left out; ``meta["source"]`` names
the file read. A summary given alone raises :class:`ServingFormatError` naming the
per-request file to give instead.

Bad input raises :class:`ServingFormatError` (a :class:`pau.errors.PauError`) naming
the file, the record (``line N`` of a JSONL file, ``record N`` -- the 0-based index --
of a JSON list, ``request N`` of vLLM's arrays, ``experiments[E].requests[J]``), the
field and the fix. A record is unusable when a time is null, not a number, NaN,
infinite or beyond int64 ns (also once a latency is added to its start), when a latency
(TTFT, an inter-token gap, an end-to-end latency) is negative, or when a token count is
negative or fractional. With ``on_invalid="quarantine"`` unusable records (of every
format) are set aside in :attr:`ServingResults.quarantine` (``source_file, location,
reason, record``) and counted in :attr:`ServingResults.warnings`; nothing is dropped
silently.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

from pau.engine.vocab import REQUESTS_SCHEMA
from pau.engine.types import RunWarning, check_on_invalid, quarantine_schema, quarantine_table
from pau.errors import ServingFormatError, UnknownFormatError
from pau.readers.detect import _detect_file

__all__ = ["QUARANTINE_SCHEMA", "REQUESTS_SCHEMA", "ServingFormatError", "ServingResults", "read_serving"]


#: The records set aside with ``on_invalid="quarantine"``: ``source_file, location,
#: reason`` (:data:`pau.engine.types.QUARANTINE_SCHEMA`), then ``record``, the record as the
#: format numbers it (``line N`` of a JSON-lines file, 1-based; ``record N`` or
#: ``request N``, the 0-based index in a JSON list; ``experiments[E].requests[R]`` in
#: GenAI-Perf), which is also the ``location``.
QUARANTINE_SCHEMA = quarantine_schema(pa.field("record", pa.string()))

_VLLM_KEYS = ("ttfts", "itls", "input_lens", "output_lens")
_LLMPERF_KEYS = ("ttft_s", "end_to_end_latency_s", "number_input_tokens", "number_output_tokens")
_FIX = ("give vLLM benchmark results (--save-result), an AIPerf profile_export.jsonl, an LLMPerf "
        "*_individual_responses.json or a GenAI-Perf profile_export.json")
_ROUNDING = "round half away from zero to the ns, from the decimal text in the file"



@dataclass
class ServingResults:
    """What :func:`read_serving` returns: ``requests`` (DESIGN §3), ``format``
    (``vllm``, ``aiperf``, ``llmperf``, ``genai-perf``), ``meta`` (the run's scalar
    fields, e.g. vLLM's ``duration``, ``date``, ``model_id``; ``source``, the file read;
    ``assumptions``, how times were derived), ``warnings`` and ``quarantine`` (records
    set aside with ``on_invalid="quarantine"``: :data:`QUARANTINE_SCHEMA`, ``source_file,
    location, reason, record``)."""

    requests: pa.Table
    format: str
    meta: dict[str, Any] = field(default_factory=dict)
    warnings: list[RunWarning] = field(default_factory=list)
    quarantine: pa.Table = field(default_factory=lambda: QUARANTINE_SCHEMA.empty_table())

    def __repr__(self) -> str:
        return (f"ServingResults(format={self.format!r}, requests={self.requests.num_rows}, "
                f"warnings={len(self.warnings)}, quarantined={self.quarantine.num_rows})")


# --- exact numbers ---------------------------------------------------------------------

class _Num(str):
    """A JSON number with a fraction or an exponent, kept as the text the file holds."""

    __slots__ = ()


_CTX = Context(prec=80)
_INT64 = (-(1 << 63), (1 << 63) - 1)


class _Bad(Exception):
    """A record pau cannot use (the message is the reason)."""


def _loads(text: str) -> Any:
    """JSON with the decimal numbers kept as text. Nesting past Python's stack is bad
    JSON here (a ValueError), as it is for any JSON reader with a depth limit."""
    try:
        return json.loads(text, parse_float=_Num)
    except RecursionError:
        raise json.JSONDecodeError("nested too deep", text, 0) from None


def _to_ns(value: Any, scale: int, what: str) -> int:
    """``value`` (a JSON integer, or a decimal number's text) times ``scale``, rounded half
    away from zero to an integer that fits int64."""
    if isinstance(value, bool) or not isinstance(value, (int, _Num)):
        raise _Bad(f"{what} is {value!r}, not a number")
    if isinstance(value, int):
        ns = value * scale
    else:
        try:
            d = _CTX.multiply(Decimal(value), Decimal(scale))
        except InvalidOperation:
            raise _Bad(f"{what} is {value!r}, not a number") from None
        if not d.is_finite():
            raise _Bad(f"{what} is {value!r}, not a finite number")
        ns = int(d.to_integral_value(rounding=ROUND_HALF_UP, context=_CTX))
    if not _INT64[0] <= ns <= _INT64[1]:
        raise _Bad(f"{what} is {value!r}: outside the int64 ns range")
    return ns


def _count(value: Any, what: str) -> int:
    """A token count: a JSON integer (or an integral decimal such as ``550.0``)."""
    if isinstance(value, _Num):
        try:
            d = Decimal(value)
        except InvalidOperation:
            raise _Bad(f"{what} is {value!r}, not a number") from None
        if not d.is_finite() or d != d.to_integral_value():
            raise _Bad(f"{what} is {value!r}, not a whole number of tokens")
        value = int(d)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad(f"{what} is {value!r}, not a whole number of tokens")
    if value < 0:
        raise _Bad(f"{what} is {value}: a token count is >= 0")
    if value > _INT64[1]:
        raise _Bad(f"{what} is {value!r}: outside int64")
    return value


def _latency(value: Any, scale: int, what: str) -> int:
    """A duration (TTFT, an inter-token gap, an end-to-end latency) in ns: >= 0, as a
    time cannot run backwards within one request."""
    ns = _to_ns(value, scale, what)
    if ns < 0:
        raise _Bad(f"{what} is {value}: a latency is >= 0")
    return ns


def _add(t: int, d: int, what: str) -> int:
    """``t + d`` (a time plus a latency), refused when it leaves int64 (an int64 column
    would wrap it, or refuse the whole table without naming the record)."""
    if not _INT64[0] <= t + d <= _INT64[1]:
        raise _Bad(f"{what} = {t} + {d} ns is outside the int64 ns range")
    return t + d


def _plain(v: Any) -> Any:
    """A JSON value with the kept number texts turned back into floats (for ``meta``)."""
    if isinstance(v, _Num):
        return float(v)
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def _http_status(code: Any, typ: str = "") -> str:
    """error / timeout / rejected, from an HTTP-like status code and an error type."""
    try:
        code = int(code) if code is not None and not isinstance(code, bool) else None
    except (TypeError, ValueError, OverflowError):   # OverflowError: an infinite float
        code = None
    if code in (408, 504) or "timeout" in typ.lower():
        return "timeout"
    if code in (429, 503):
        return "rejected"
    return "error"


class _Aside:
    """Records set aside (``on_invalid="quarantine"``) or the first one raised."""

    def __init__(self, path: str, on_invalid: str, fix: str):
        self.path, self.on_invalid, self.fix = path, on_invalid, fix
        self.records: list[str] = []
        self.reasons: list[str] = []

    def add(self, record: str, reason: str) -> None:
        if self.on_invalid == "raise":
            raise ServingFormatError(self.path, reason, self.fix + ", or pass on_invalid='quarantine' to set "
                                     "such records aside", record=record)
        self.records.append(record)
        self.reasons.append(reason)

    def table(self) -> pa.Table:
        return quarantine_table(QUARANTINE_SCHEMA, self.path, self.records, self.reasons, record=self.records)

    def warnings(self) -> list[str]:
        if not self.records:
            return []
        return [RunWarning("serving.records_set_aside", f"{self.path}: {len(self.records)} unusable records "
                           f"set aside (first at {self.records[0]}: {self.reasons[0]}); see .quarantine")]


# --- vLLM ------------------------------------------------------------------------------

def _vllm(path: str, doc: dict[str, Any], on_invalid: str) -> tuple[pa.Table, dict[str, Any], list[Any], pa.Table]:
    missing = [k for k in _VLLM_KEYS if k not in doc]
    if missing:
        raise ServingFormatError(path, f"vLLM results without the per-request arrays {', '.join(missing)}",
                                 "re-run the benchmark with --save-result (and --save-detailed in newer "
                                 "vLLM) so per-request latencies are saved")
    arrays = [k for k in (*_VLLM_KEYS, "errors", "start_times", "e2els") if k in doc]
    for k in arrays:
        if not isinstance(doc[k], list):
            raise ServingFormatError(path, f"'{k}' is a {type(doc[k]).__name__}, not a list (one entry per "
                                     "request)", "the file is corrupt: save the results again")
    n = len(doc["ttfts"])
    for k in (*_VLLM_KEYS, "errors"):
        if k in doc and len(doc[k]) != n:
            raise ServingFormatError(path, f"'{k}' has {len(doc[k])} entries but 'ttfts' has {n}",
                                     "the file is inconsistent: save the results again")
    warnings = []
    assumptions = [f"seconds -> ns: {_ROUNDING}"]
    starts = "start_times" in doc and len(doc["start_times"]) == n
    if starts:
        assumptions.append("arrival_ns = start_times (s since the benchmark started)")
    else:
        warnings.append(RunWarning("serving.no_arrival_times", f"{path}: vLLM results hold no arrival times; every request is taken to arrive at 0 "
                        f"({n} requests)"))
        assumptions.append("arrival_ns = 0 for every request (the file holds no arrival times)")
    e2e = "e2els" in doc and len(doc["e2els"]) == n
    assumptions.append("end_ns = arrival + e2els" if e2e else
                       "end_ns = first_token + sum(itls) (summed exactly, rounded once)")
    errors = doc.get("errors") or [""] * n
    aside = _Aside(path, on_invalid, "repair or remove the request (the per-request arrays hold one entry "
                                     "each)")
    rows = []
    for i in range(n):
        try:
            arrival = _to_ns(doc["start_times"][i], 10**9, f"start_times[{i}]") if starts else 0
            first = _add(arrival, _latency(doc["ttfts"][i], 10**9, f"ttfts[{i}]"), "first token")
            if e2e:
                end = _add(arrival, _latency(doc["e2els"][i], 10**9, f"e2els[{i}]"), "end")
            else:
                x = doc["itls"][i]
                if not isinstance(x, list) or any(isinstance(v, bool) or not isinstance(v, (int, _Num)) for v in x):
                    raise _Bad(f"itls[{i}] is not a list of numbers")
                try:
                    total = sum((Decimal(v) for v in x), Decimal(0))
                except InvalidOperation:
                    raise _Bad(f"itls[{i}] is not a list of numbers") from None
                end = _add(first, _latency(_Num(str(total)), 10**9, f"sum(itls[{i}])"), "end")
            rows.append({"request_id": str(i), "replica": None, "arrival_ns": arrival, "first_token_ns": first,
                         "end_ns": end, "input_tokens": _count(doc["input_lens"][i], f"input_lens[{i}]"),
                         "output_tokens": _count(doc["output_lens"][i], f"output_lens[{i}]"),
                         "status": "ok" if not errors[i] else "error"})
        except _Bad as exc:
            aside.add(f"request {i}", str(exc))
    meta = {k: _plain(v) for k, v in doc.items() if not isinstance(v, (list, dict))}
    meta["assumptions"] = assumptions
    return (pa.Table.from_pylist(rows, schema=REQUESTS_SCHEMA), meta, warnings + aside.warnings(),
            aside.table())


# --- AIPerf ----------------------------------------------------------------------------

#: ns per unit of the AIPerf metrics read.
_UNIT_NS = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9, "sec": 10**9}
_CANCELLED_AFTER = re.compile(r"cancell?ed after\s+([0-9]+(?:\.[0-9]+)?)\s*s", re.IGNORECASE)


def _metric(metrics: dict[str, Any], name: str) -> tuple[Any, str | None]:
    """(value, unit) of an AIPerf metric (``{"value", "unit"}`` or a bare value)."""
    m = metrics.get(name)
    if isinstance(m, dict):
        return m.get("value"), m.get("unit")
    return m, None


def _aiperf_time(metrics: dict[str, Any], name: str, default_unit: str) -> int | None:
    v, unit = _metric(metrics, name)
    if v is None:
        return None
    unit = unit or default_unit
    if unit not in _UNIT_NS:
        raise _Bad(f"metrics.{name} has the unit {unit!r}; pau knows {', '.join(_UNIT_NS)}")
    return _to_ns(v, _UNIT_NS[unit], f"metrics.{name}")


def _aiperf_tokens(metrics: dict[str, Any], *names: str) -> int | None:
    for name in names:
        v, _ = _metric(metrics, name)
        if v is not None:
            return _count(v, f"metrics.{name}")
    return None


def _aiperf_status(md: dict[str, Any], err: Any) -> str:
    if md.get("was_cancelled"):
        return "cancelled"
    if not err:
        return "ok"
    if not isinstance(err, dict):
        return "error"
    typ = str(err.get("type") or "")
    if err.get("code") == 499 or "cancel" in typ.lower():
        return "cancelled"
    return _http_status(err.get("code"), typ)


class _AIPerfTally:
    def __init__(self) -> None:
        self.cancel_end = self.cancel_no_end = self.latency_mismatch = self.reasoning = 0
        self.ok_missing: Counter[str] = Counter()
        self.phases: Counter[str] = Counter()
        self.first_mismatch: str | None = None


def _aiperf_span(md: dict[str, Any], metrics: dict[str, Any]) -> tuple[int, int | None]:
    """A record's request start (required) and response end (None when not written)."""
    start: int | None
    if md.get("timestamp_ns") is not None:
        start = _to_ns(md["timestamp_ns"], 1, "metadata.timestamp_ns")
    elif md.get("request_start_ns") is not None:
        start = _to_ns(md["request_start_ns"], 1, "metadata.request_start_ns")
    else:
        start = _aiperf_time(metrics, "min_request_timestamp", "ns")
    if start is None:
        raise _Bad("no request start (metadata.timestamp_ns)")
    end = _aiperf_time(metrics, "max_response_timestamp", "ns")
    if end is None and md.get("request_end_ns") is not None:
        end = _to_ns(md["request_end_ns"], 1, "metadata.request_end_ns")
    return start, end


def _aiperf_output_tokens(metrics: dict[str, Any]) -> tuple[int | None, int | None]:
    """Output tokens (``output_sequence_length``, else the answer's and the reasoning's
    counts added) and the reasoning tokens."""
    osl = _aiperf_tokens(metrics, "output_sequence_length")
    reasoning = _aiperf_tokens(metrics, "reasoning_token_count")
    if osl is None:
        answer = _aiperf_tokens(metrics, "output_token_count")
        if answer is not None or reasoning is not None:
            osl = (answer or 0) + (reasoning or 0)
    return osl, reasoning


def _aiperf_row(rec: Any, no: int, tally: _AIPerfTally) -> dict[str, Any]:
    if not isinstance(rec, dict):
        raise _Bad("not a JSON object")
    md = rec.get("metadata")
    if not isinstance(md, dict):
        raise _Bad("no 'metadata' object (not an AIPerf record)")
    metrics = rec.get("metrics") or {}
    if not isinstance(metrics, dict):
        raise _Bad("'metrics' is not an object")
    err = rec.get("error")
    status = _aiperf_status(md, err)
    start, end = _aiperf_span(md, metrics)
    ttft = _aiperf_time(metrics, "ttft", "ms")
    if ttft is None:
        ttft = _aiperf_time(metrics, "time_to_first_token", "ms")
    if ttft is not None and ttft < 0:
        raise _Bad(f"metrics.ttft is {ttft} ns: a latency is >= 0")
    first = None if ttft is None else _add(start, ttft, "first token")
    isl = _aiperf_tokens(metrics, "input_sequence_length", "error_isl")
    osl, reasoning = _aiperf_output_tokens(metrics)
    if status == "ok" and end is None:
        raise _Bad("a successful request without an end time (metrics.max_response_timestamp)")
    cancel_end = None
    if status == "cancelled" and end is None:
        m = _CANCELLED_AFTER.search(str(err.get("message") or "")) if isinstance(err, dict) else None
        if m:
            end = _add(start, _to_ns(_Num(m.group(1)), 10**9, "the cancellation delay"), "end")
        cancel_end = bool(m)
    latency = _aiperf_time(metrics, "request_latency", "ms")
    # the record is usable: count what it needed (after every check that can fail)
    if cancel_end is not None:
        tally.cancel_end += cancel_end
        tally.cancel_no_end += not cancel_end
    if status == "ok":
        for col, v in (("first_token_ns", ttft), ("input_tokens", isl), ("output_tokens", osl)):
            if v is None:
                tally.ok_missing[col] += 1
    if latency is not None and end is not None and latency != end - start:
        tally.latency_mismatch += 1
        tally.first_mismatch = tally.first_mismatch or f"line {no}"
    tally.reasoning += reasoning or 0
    tally.phases[str(md.get("credit_phase", "profiling"))] += 1
    rid = md.get("x_request_id")
    return {"request_id": str(rid) if rid is not None else str(md.get("session_num", no - 1)),
            "replica": None, "arrival_ns": start, "first_token_ns": first,
            "end_ns": end, "input_tokens": isl, "output_tokens": osl, "status": status}


def _aiperf(path: str, lines: list[str], on_invalid: str) -> tuple[pa.Table, dict[str, Any], list[Any], pa.Table]:
    aside = _Aside(path, on_invalid, "repair or remove the line (each line of profile_export.jsonl is one "
                                     "AIPerf record with metadata.timestamp_ns)")
    rows, tally = [], _AIPerfTally()
    for no, line in enumerate(lines, 1):
        if not line.strip(" \t\r"):   # JSON's whitespace only: any other character is a record
            continue
        try:
            try:
                rec = _loads(line)
            except ValueError as exc:
                raise _Bad(f"not JSON ({exc})") from None
            rows.append(_aiperf_row(rec, no, tally))
        except _Bad as exc:
            aside.add(f"line {no}", f"not a usable AIPerf record: {exc}")
    warnings = aside.warnings()
    assumptions = [
        "arrival_ns = metadata.timestamp_ns and end_ns = metrics.max_response_timestamp (integer ns, exact)",
        f"first_token_ns = arrival_ns + metrics.ttft in its unit ({_ROUNDING}; AIPerf writes integer ns / 1e6 "
        "as ms, so this is exact)",
        "output_tokens = output_sequence_length (answer + reasoning tokens)",
    ]
    if tally.cancel_end:
        msg = (f"{tally.cancel_end} cancelled requests: AIPerf writes no end time; end_ns = metadata.timestamp_ns "
               "+ the delay in the error message ('cancelled after N seconds', written to the ms, ±0.5 ms)")
        warnings.append(RunWarning("serving.cancelled_end_assumed", f"{path}: {msg}"))
        assumptions.append(msg)
    if tally.cancel_no_end:
        warnings.append(RunWarning("serving.cancelled_without_end", f"{path}: {tally.cancel_no_end} cancelled requests without an end time: end_ns null "
                        "(pau.core.requests needs end_ns for them; pass on_invalid='quarantine' there)"))
    for col, k in sorted(tally.ok_missing.items()):
        warnings.append(RunWarning("serving.missing_column", f"{path}: {k} successful requests without {col} (null; pau.core.requests needs it for "
                        "ok requests)"))
    if tally.latency_mismatch:
        warnings.append(RunWarning("serving.latency_mismatch", f"{path}: {tally.latency_mismatch} records whose request_latency differs from "
                        f"max_response_timestamp - timestamp_ns (first at {tally.first_mismatch}); the "
                        "timestamps were used"))
    other = {k: v for k, v in tally.phases.items() if k != "profiling"}
    if other:
        warnings.append(RunWarning("serving.outside_profiling", f"{path}: records outside the profiling phase are included (" +
                        ", ".join(f"{v} {k}" for k, v in sorted(other.items())) +
                        "); AIPerf's own summary counts the profiling phase only"))
    meta = {"requests": len(rows), "reasoning_tokens": tally.reasoning, "credit_phases": dict(tally.phases),
            "assumptions": assumptions}
    return pa.Table.from_pylist(rows, schema=REQUESTS_SCHEMA), meta, warnings, aside.table()


# --- LLMPerf ---------------------------------------------------------------------------

def _llmperf_row(rec: Any) -> dict[str, Any]:
    if not isinstance(rec, dict):
        raise _Bad("not a JSON object")
    missing = [k for k in _LLMPERF_KEYS if k not in rec]
    if missing:
        raise _Bad(f"no {', '.join(missing)}")
    code, msg = rec.get("error_code"), rec.get("error_msg")
    if code is None and not msg:
        return {"replica": None, "arrival_ns": 0,
                "first_token_ns": _latency(rec["ttft_s"], 10**9, "ttft_s"),
                "end_ns": _latency(rec["end_to_end_latency_s"], 10**9, "end_to_end_latency_s"),
                "input_tokens": _count(rec["number_input_tokens"], "number_input_tokens"),
                "output_tokens": _count(rec["number_output_tokens"], "number_output_tokens"), "status": "ok"}
    e2e, tin, tout = rec["end_to_end_latency_s"], rec["number_input_tokens"], rec["number_output_tokens"]
    return {"replica": None, "arrival_ns": 0, "first_token_ns": None,
            "end_ns": None if e2e is None else _latency(e2e, 10**9, "end_to_end_latency_s"),
            "input_tokens": None if tin is None else _count(tin, "number_input_tokens"),
            "output_tokens": None if tout is None else _count(tout, "number_output_tokens"),
            "status": _http_status(code, str(msg or ""))}


def _llmperf(path: str, doc: list[Any], on_invalid: str) -> tuple[pa.Table, dict[str, Any], list[Any], pa.Table]:
    aside = _Aside(path, on_invalid, "repair or remove the record (each one needs " + ", ".join(_LLMPERF_KEYS) + ")")
    rows = []
    for i, rec in enumerate(doc):
        try:
            row = _llmperf_row(rec)
        except _Bad as exc:
            aside.add(f"record {i}", f"not a usable LLMPerf record: {exc}")
            continue
        row["request_id"] = str(i)
        rows.append(row)
    failed = sum(r["status"] != "ok" for r in rows)
    warnings = [f"{path}: LLMPerf results hold no arrival times; every request is taken to arrive at 0 "
                f"({len(rows)} requests): TTFT and E2E are exact, but arrival order, concurrency and "
                "goodput windows are not in the file", *aside.warnings()]
    if failed:
        warnings.append(RunWarning("serving.failed_unmeasured", f"{path}: {failed} failed requests: LLMPerf leaves their times unmeasured; "
                        "first_token_ns null, end_ns as written (end_to_end_latency_s)"))
    meta = {"requests": len(rows), "assumptions": [
        "arrival_ns = 0 for every request (LLMPerf writes no start times)",
        f"first_token_ns = ttft_s, end_ns = end_to_end_latency_s: seconds -> ns, {_ROUNDING}",
        "request_id = index in the list"]}
    return pa.Table.from_pylist(rows, schema=REQUESTS_SCHEMA), meta, warnings, aside.table()


# --- GenAI-Perf ------------------------------------------------------------------------

def _genai_perf(path: str, doc: dict[str, Any], on_invalid: str) -> tuple[pa.Table, dict[str, Any], list[Any], pa.Table]:
    aside = _Aside(path, on_invalid, "export the profile again")
    rows = []
    for e, exp in enumerate(doc["experiments"]):
        reqs = exp.get("requests", []) if isinstance(exp, dict) else None
        if not isinstance(reqs, list):
            raise ServingFormatError(path, "not a GenAI-Perf experiment (an object with a 'requests' list)",
                                     "export the profile again", record=f"experiments[{e}]")
        for j, req in enumerate(reqs):
            where = f"experiments[{e}].requests[{j}]"
            try:
                if not isinstance(req, dict):
                    raise _Bad("not a JSON object")
                if req.get("timestamp") is None:
                    raise _Bad("a request without 'timestamp'")
                resp = req.get("response_timestamps") or []
                if not isinstance(resp, list):
                    raise _Bad("'response_timestamps' is not a list")
                arrival = _to_ns(req["timestamp"], 1, "timestamp")
                first = _to_ns(resp[0], 1, "response_timestamps[0]") if resp else None
                end = _to_ns(resp[-1], 1, "response_timestamps[-1]") if resp else None
            except _Bad as exc:
                aside.add(where, str(exc))
                continue
            rows.append({"request_id": f"{e}-{j}", "replica": None, "arrival_ns": arrival,
                         "first_token_ns": first, "end_ns": end, "input_tokens": None, "output_tokens": None,
                         "status": "ok" if resp else "error"})
    return pa.Table.from_pylist(rows, schema=REQUESTS_SCHEMA), {
        "assumptions": ["arrival_ns = timestamp, first_token_ns / end_ns = first / last response_timestamps "
                        "(integer ns)"]}, [
        f"{path}: GenAI-Perf raw export: token counts are not in the file ({len(rows)} requests)",
        *aside.warnings()], aside.table()


# --- entry point -----------------------------------------------------------------------

def _per_request_file(d: str) -> str:
    """The one per-request results file in directory ``d`` (by content)."""
    files = sorted(str(f) for f in pathlib.Path(d).rglob("*") if f.is_file() and not f.name.startswith("."))
    found: list[str] = []
    other: list[str] = []
    for f in files:
        if f.endswith((".md", ".csv")) or os.path.getsize(f) == 0:
            continue
        try:
            kind = _detect_file(f)
        except (UnknownFormatError, OSError):
            other.append(f)
            continue
        (found if kind == "serving" else other).append(f)
    if not found:
        raise ServingFormatError(d, f"a directory with no per-request serving results among {len(files)} files",
                                 _FIX + " (or a folder holding one)")
    if len(found) > 1:
        raise ServingFormatError(d, f"a directory with {len(found)} per-request result files (" +
                                 ", ".join(os.path.relpath(f, d) for f in found) + ")",
                                 "give one of the files")
    return found[0]


def read_serving(path: str | os.PathLike[str], *, on_invalid: str = "raise") -> ServingResults:
    """Read a serving benchmark's per-request results into the requests table.

    Parameters
    ----------
    path : str or os.PathLike
        A vLLM results JSON, an AIPerf ``profile_export.jsonl``, an LLMPerf
        ``*_individual_responses.json`` or a GenAI-Perf ``profile_export.json`` (the
        format is recognised from the content), or a directory holding one of them
        (beside the tool's summaries).
    on_invalid : {"raise", "quarantine"}
        AIPerf / LLMPerf records pau cannot use: raise (default) or set aside in
        :attr:`ServingResults.quarantine` with a reason, counted in the warnings.

    Returns
    -------
    ServingResults

    Raises
    ------
    ServingFormatError
        Empty file, malformed JSON, an unknown layout, a summary instead of per-request
        results, missing or non-numeric per-request fields.
    """
    check_on_invalid(on_invalid)
    p = os.fspath(path)
    if os.path.isdir(p):
        p = _per_request_file(p)
    res = _read_file(p, on_invalid)
    res.meta["source"] = p
    return res


def _lines(text: str) -> list[str]:
    r"""The lines of a JSONL file: split at ``\n`` only (``str.splitlines`` also splits at
    form feeds, ``\x1c``-``\x1e``, ``\x85``, U+2028..., which JSON strings may hold,
    so one record would count as two)."""
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def _read_file(p: str, on_invalid: str) -> ServingResults:
    with open(p, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ServingFormatError(p, f"not UTF-8 text: byte {exc.start} (line {line}) is {raw[exc.start]:#04x}",
                                 "the file is corrupt: write it again; " + _FIX) from None
    if not text.strip():
        raise ServingFormatError(p, "the file is empty", _FIX)
    doc: Any = None
    try:
        doc = _loads(text)
    except ValueError as exc:
        first = text.lstrip().split("\n", 1)[0]
        if first.startswith("{") and '"metadata"' in first:
            t, meta, w, q = _aiperf(p, _lines(text), on_invalid)
            return ServingResults(t, "aiperf", meta, w, q)
        raise ServingFormatError(p, f"malformed JSON ({exc})", "the file is truncated or corrupt; " + _FIX) from None
    if isinstance(doc, list) and doc and isinstance(doc[0], dict) and any(k in doc[0] for k in _LLMPERF_KEYS):
        t, meta, w, q = _llmperf(p, doc, on_invalid)
        return ServingResults(t, "llmperf", meta, w, q)
    if not isinstance(doc, dict):
        raise ServingFormatError(p, "not a known serving result layout", _FIX)
    if "ttfts" in doc or "input_lens" in doc:
        t, meta, w, q = _vllm(p, doc, on_invalid)
        return ServingResults(t, "vllm", meta, w, q)
    if isinstance(doc.get("experiments"), list):
        t, meta, w, q = _genai_perf(p, doc, on_invalid)
        return ServingResults(t, "genai-perf", meta, w, q)
    if "metadata" in doc:   # a one-record AIPerf jsonl
        t, meta, w, q = _aiperf(p, _lines(text), on_invalid)
        return ServingResults(t, "aiperf", meta, w, q)
    if isinstance(doc.get("records"), dict) and ("input_config" in doc or "error_summary" in doc):
        raise ServingFormatError(p, "an AIPerf summary (aggregates per metric, no per-request records)",
                                 "give the per-request profile_export.jsonl that AIPerf writes beside it")
    if "results_ttft_s_mean" in doc or "results_num_completed_requests" in doc:
        raise ServingFormatError(p, "an LLMPerf summary (quantiles only, no per-request records)",
                                 "give the *_individual_responses.json that LLMPerf writes beside it")
    if "duration" in doc and "completed" in doc:
        raise ServingFormatError(p, "vLLM results without per-request arrays (ttfts, itls, input_lens, "
                                 "output_lens)", "re-run with --save-result --save-detailed")
    raise ServingFormatError(p, "not a known serving result layout", _FIX)
