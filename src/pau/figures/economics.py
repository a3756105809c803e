"""The economics of useful work: inference accounting and checkpoint advice (cost and
energy are :mod:`pau.figures.cost`).

DESIGN §3 and §4. Every choice this module makes where the design is silent is
written in ``docs/economics.md``. In short:

* Time is ``int64`` ns, intervals half-open ``[start_ns, end_ns)``. Attributed
  accelerator time is integer ns: each request phase's exact rational share rounded
  once, by largest remainder per replica, so that per replica ``attributed + idle ==
  busy`` to the nanosecond and every phase is within 1 ns of its exact share.
* Money, energy and ratios are floats derived at the edge from exact integer time.
  A ratio with a zero denominator is ``None``, never NaN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Literal, Mapping, Optional, TypedDict, Union, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau import _core
from pau.engine import _econ_kernels as K
from pau.engine._input import _column, as_table, time_column
from pau.engine.ledger import NS_PER_HOUR, Ledger
from pau.engine.types import Latency, Quarantined, RequestLatency, RequestSummary, check_on_invalid
from pau.engine.vocab import names as vocab_names
from pau.errors import ArgumentTypeError, InvalidRowError, PauError, SchemaError
from pau.figures._common import _NS_PER_S, _one_job, _ratio

__all__ = [
    "OUTCOMES",
    "RequestLedger",
    "requests",
    "CheckpointInterval",
    "CheckpointAdvice",
    "MeasuredCheckpoints",
    "checkpoint_interval",
    "checkpoint_advice",
]

OUTCOMES = ("accepted", "late", "failed", "rejected", "cancelled")
STATUSES = ("ok", "error", "timeout", "rejected", "cancelled")
_STATUS_OUTCOME = {"ok": 0, "error": 2, "timeout": 2, "rejected": 3, "cancelled": 4}
_SLO_KEYS = ("ttft", "tpot", "e2e")
#: The percentiles of :meth:`RequestLedger.latency`: AIPerf's (p1 ... p99), which hold LLMPerf's.
_LATENCY_PERCENTILES = {"p1": 1, "p5": 5, "p25": 25, "p50": 50, "p75": 75, "p90": 90, "p95": 95, "p99": 99}


# ---------------------------------------------------------------------------
# requests


@dataclass
class RequestLedger:
    """What :func:`requests` returns.

    Attributes
    ----------
    table : pyarrow.Table
        One row per valid request, in input order: ``request_id, replica, outcome,
        ttft_ns, tpot_ns, e2e_ns, input_tokens, output_tokens`` and, with ``busy``,
        ``attributed_prefill_ns, attributed_decode_ns, attributed_ns``.
        ``tpot_ns`` is float64 (a quotient); every other time is exact int64.
    replicas : pyarrow.Table or None
        With ``busy``: per replica ``replica, busy_ns, accepted_ns, late_ns,
        failed_ns, cancelled_ns, idle_ns`` (exact; they sum to ``busy_ns``).
    busy : pyarrow.Table or None
        The busy intervals as read: ``replica, start_ns, end_ns, idle_ns``.
    window : tuple of int
        ``(start_ns, end_ns)`` of the measurement window.
    weights : dict
        The phase weights used: ``{"prefill": a, "decode": b}`` (see :func:`requests`).
    slo : dict
        The SLOs checked (ns).
    quarantined : int
        Rows set aside with ``on_invalid="quarantine"`` (counted as offered, never
        accepted).
    """

    table: pa.Table
    window: tuple[Any, ...]
    weights: dict[str, Any]
    slo: dict[str, Any]
    replicas: pa.Table | None = None
    busy: pa.Table | None = None
    quarantined: int = 0
    _counts: dict[str, Any] = field(default_factory=dict, repr=False)

    def latency(self) -> RequestLatency:
        """TTFT, TPOT and E2E latency of the completed requests (outcome ``accepted`` or
        ``late``: the ones AIPerf and LLMPerf summarise), as those tools print them:
        ``{"ttft": {...}, "tpot": {...}, "e2e": {...}}``, each with ``count``, ``mean``,
        ``min``, ``max``, ``std`` (population, as AIPerf's; LLMPerf's pandas std divides
        by count - 1) and ``p1, p5, p25, p50, p75, p90, p95, p99`` (linear
        interpolation between closest ranks, numpy's and pandas' default, which both
        tools use), all in ns; a metric without a value (no completed request, or no
        request with two output tokens for TPOT) has ``count`` 0 and the rest None.
        ``min``, ``max`` and ``count`` are exact ints; the rest are floats of exact ns.
        """
        t = self.table
        done = pc.is_in(t["outcome"].cast(pa.string()), pa.array(["accepted", "late"]))

        def one(col: str) -> Latency:
            x = t[col].filter(pc.and_(done, pc.is_valid(t[col]))).to_numpy()
            if x.size == 0:
                return {"count": 0, "mean": None, "min": None, "max": None, "std": None, "p1": None, "p5": None,
                        "p25": None, "p50": None, "p75": None, "p90": None, "p95": None, "p99": None}
            exact = x.dtype.kind == "i"
            p = [float(np.percentile(x, q)) for q in _LATENCY_PERCENTILES.values()]
            return {"count": int(x.size), "mean": float(x.mean()), "min": int(x.min()) if exact else float(x.min()),
                    "max": int(x.max()) if exact else float(x.max()), "std": float(x.std()), "p1": p[0],
                    "p5": p[1], "p25": p[2], "p50": p[3], "p75": p[4], "p90": p[5], "p95": p[6], "p99": p[7]}

        return {"ttft": one("ttft_ns"), "tpot": one("tpot_ns"), "e2e": one("e2e_ns")}

    def summary(self) -> RequestSummary:
        """Headline figures (counts and ns exact ints; ratios floats or ``None``): a
        :class:`pau.engine.types.RequestSummary`.

        Keys: offered, accepted, late, failed, rejected, cancelled, quarantined,
        slo_attainment (accepted / (offered - cancelled)), window_ns,
        request_goodput_per_s (accepted per second of window), accepted_input_tokens,
        accepted_output_tokens, accepted_tokens; with busy: busy_ns, productive_ns
        (attributed to accepted requests), late_ns, failed_ns, cancelled_ns, idle_ns,
        productive_accelerator_hours, inference_goodput (productive_ns / busy_ns);
        latency (:meth:`latency`: TTFT, TPOT and E2E of the completed requests).
        """
        c = dict(self._counts)
        offered = sum(c[o] for o in OUTCOMES) + self.quarantined
        w0, w1 = self.window
        out: RequestSummary = {
            "offered": offered, "accepted": c["accepted"], "late": c["late"], "failed": c["failed"],
            "rejected": c["rejected"], "cancelled": c["cancelled"], "quarantined": self.quarantined,
            "slo_attainment": _ratio(c["accepted"], offered - c["cancelled"]),
            "window_ns": w1 - w0,
            "request_goodput_per_s": (c["accepted"] * _NS_PER_S / (w1 - w0)) if w1 > w0 else None,
            "accepted_input_tokens": c["accepted_input_tokens"],
            "accepted_output_tokens": c["accepted_output_tokens"],
            "accepted_tokens": c["accepted_input_tokens"] + c["accepted_output_tokens"],
            "latency": self.latency()}
        if self.replicas is not None:
            r = self.replicas
            tot = {k: int(pc.sum(r[k]).as_py() or 0) for k in
                   ("busy_ns", "accepted_ns", "late_ns", "failed_ns", "cancelled_ns", "idle_ns")}
            out["busy_ns"], out["productive_ns"], out["late_ns"] = tot["busy_ns"], tot["accepted_ns"], tot["late_ns"]
            out["failed_ns"], out["cancelled_ns"], out["idle_ns"] = tot["failed_ns"], tot["cancelled_ns"], tot["idle_ns"]
            out["productive_accelerator_hours"] = tot["accepted_ns"] / NS_PER_HOUR
            out["inference_goodput"] = _ratio(tot["accepted_ns"], tot["busy_ns"])
        return out


def _time(t: pa.Table, name: str, table: str) -> tuple[np.ndarray, np.ndarray]:
    """(int64 ns values with nulls as 0, null mask) of a time column (SchemaError when
    it is missing)."""
    col = _column(t, name, table)
    null = np.asarray(col.is_null()) if col.null_count else np.zeros(len(col), bool)
    if col.null_count:
        col = col.fill_null(pa.scalar(0, col.type))
    return np.asarray(time_column(col, name, table), np.int64), null


def _weights(weights: Mapping[str, Any] | None) -> tuple[int, int, dict[str, Any]]:
    """Phase weights as exact integers (a common denominator cleared)."""
    w = {"prefill": 1, "decode": 1} if weights is None else dict(weights)
    extra = set(w) - {"prefill", "decode"}
    if extra:
        raise PauError(f"weights: unknown phase {sorted(extra)[0]!r}. Fix: give "
                       f"{{'prefill': a, 'decode': b}}")
    w.setdefault("prefill", 1)
    w.setdefault("decode", 1)
    fr: dict[str, Fraction] = {}
    for k, v in w.items():
        if isinstance(v, bool) or not isinstance(v, (int, float, Fraction)):
            raise PauError(f"weights: {k} = {v!r} is not a number. Fix: give a non-negative number")
        # str() keeps the decimal the caller wrote (0.1 -> 1/10, not 2**-55 multiples)
        f = Fraction(v) if isinstance(v, (int, Fraction)) else Fraction(str(v))
        if f < 0 or not math.isfinite(float(f)):
            raise PauError(f"weights: {k} = {v!r}. Fix: phase weights are finite and >= 0")
        fr[k] = f
    den = math.lcm(fr["prefill"].denominator, fr["decode"].denominator)
    return int(fr["prefill"] * den), int(fr["decode"] * den), w


_REASONS = ("ok", "null arrival_ns", "negative arrival_ns", "null status", "unknown status",
            "null end_ns", "end_ns before arrival_ns", "null first_token_ns",
            "first_token_ns outside [arrival_ns, end_ns]", "negative or null tokens",
            "null replica")
_REASON_COL = ("", "arrival_ns", "arrival_ns", "status", "status", "end_ns", "end_ns",
               "first_token_ns", "first_token_ns", "output_tokens", "replica")
_REASON_FIX = ("", "give every request its arrival time", "times are ns since an epoch, >= 0",
               "give every request a status", "use one of " + ", ".join(STATUSES),
               "give every request that was not rejected its end time",
               "correct the times", "a completed (ok) request needs its first-token time",
               "correct the times: arrival <= first token <= end",
               "token counts are >= 0, and known for ok requests",
               "give every request that ran on a replica its replica (needed with busy)")


def _mask(col: pa.Array) -> np.ndarray | None:
    """The null mask of a column as a numpy bool array, or None when it has no nulls.

    Read straight from the validity bitmap (a quarter of the time of ``is_null``)
    where the column has one; dictionary columns go through ``is_null``."""
    if not col.null_count:
        return None
    valid = None if pa.types.is_dictionary(col.type) else col.buffers()[0]
    if valid is None:
        return np.asarray(col.is_null())
    bits = np.unpackbits(np.frombuffer(valid, np.uint8), count=col.offset + len(col), bitorder="little")
    null: np.ndarray = bits[col.offset:] == 0
    return null


def _values(arr: pa.Array, dtype: Any) -> np.ndarray:
    """Zero-copy values of a fixed-width Arrow array of numpy ``dtype`` (arbitrary
    under nulls)."""
    if arr.null_count == 0:
        return np.asarray(arr.to_numpy(zero_copy_only=False))
    return np.frombuffer(arr.buffers()[1], dtype, count=len(arr) + arr.offset)[arr.offset:]


def _int64_values(arr: pa.Array | np.ndarray) -> np.ndarray:
    """Zero-copy int64 values of an int64 Arrow array (or a numpy array as is).

    Values under nulls are whatever the buffer holds: callers read them only through
    the null mask."""
    if isinstance(arr, np.ndarray):
        return arr
    if arr.null_count == 0:
        return np.asarray(arr.to_numpy(zero_copy_only=False))
    return np.frombuffer(arr.buffers()[1], np.int64, count=len(arr) + arr.offset)[arr.offset:]


def _request_columns(t: pa.Table, *, need_replica: bool) -> dict[str, Any]:
    """Zero-copy int64 columns and null masks (None: no nulls) of the requests table."""
    n = t.num_rows
    for name in ("request_id", "replica", "arrival_ns", "end_ns", "status"):
        _column(t, name, "requests")
    cols: dict[str, Any] = {}
    for key, name in (("arr", "arrival_ns"), ("end", "end_ns"), ("ft", "first_token_ns")):
        if t.schema.get_field_index(name) < 0:  # only first_token_ns is optional
            cols[key], cols[key + "_null"], cols[key + "_col"] = np.zeros(n, np.int64), np.ones(n, bool), None
            continue
        col = _column(t, name, "requests")
        cols[key] = _int64_values(time_column(col, name, "requests"))
        cols[key + "_null"] = _mask(col)
        cols[key + "_col"] = col
    for key, name in (("tin", "input_tokens"), ("tout", "output_tokens")):
        if t.schema.get_field_index(name) < 0:
            cols[key], cols[key + "_null"] = np.zeros(n, np.int64), np.ones(n, bool)
            continue
        col = _column(t, name, "requests")
        if not pa.types.is_integer(col.type):
            raise SchemaError("requests", name, f"has type {col.type}, not an integer",
                              "give token counts as integers")
        cols[key] = _int64_values(col if col.type == pa.int64() else col.cast(pa.int64()))
        cols[key + "_null"] = _mask(col)
    st = _column(t, "status", "requests")
    vt = st.type.value_type if pa.types.is_dictionary(st.type) else st.type
    if not (pa.types.is_string(vt) or pa.types.is_large_string(vt)):
        raise SchemaError("requests", "status", f"has type {st.type}, not string",
                          "give status as strings: " + ", ".join(STATUSES))
    lut = np.array([_STATUS_OUTCOME[s] for s in STATUSES] + [-1], np.int8)  # -1: unknown or null
    if pa.types.is_dictionary(st.type):
        # one lookup per dictionary value, then a gather of the indices
        pos = pc.index_in(st.dictionary, value_set=pa.array(STATUSES, vt)).fill_null(len(STATUSES))
        # Arrow's take: nulls stay null (then -1), and it gathers faster than numpy's
        # fancy indexing of int8
        code = pc.take(pa.array(lut[np.asarray(pos)]), st.indices)
        code = (code.fill_null(-1) if code.null_count else code).to_numpy(zero_copy_only=False)
    else:
        code = lut[np.asarray(pc.index_in(st, value_set=pa.array(STATUSES, vt)).fill_null(len(STATUSES)))]
    cols["code"] = code
    cols["st_null"] = _mask(st)
    cols["rep_null"] = _mask(_column(t, "replica", "requests")) if need_replica else None
    return cols


def _nullable(values: np.ndarray, typ: pa.DataType, mask: Union[np.ndarray, Callable[[], np.ndarray], None],
              cols: list[Any]) -> pa.Array:
    """``values`` as an Arrow array, null where ``mask`` (a bool array, a function
    returning one, or None: no nulls): zero-copy, with the validity bitmap of the
    input columns ``cols`` (null exactly where any of them is) when they have one at
    offset 0, else a copy with ``mask``."""
    if mask is None:
        return pa.array(values, typ)
    if all(c is not None and c.offset == 0 and c.null_count for c in cols):
        if len(cols) == 1:
            valid, nulls = cols[0].buffers()[0], cols[0].null_count
        else:
            both = pc.and_(cols[0].is_valid(), cols[1].is_valid())
            valid = both.buffers()[1] if both.offset == 0 else None
            nulls = -1  # counted by Arrow when asked
        if valid is not None:
            return pa.Array.from_buffers(typ, len(values), [valid, pa.py_buffer(values)], nulls)
    return pa.array(values, typ, mask=mask() if callable(mask) else mask)


def _request_rows(c: dict[str, Any], need_replica: bool, slo: Mapping[str, Any]) -> _core.RequestRows:
    """The native pass over the rows (pau._core.request_rows)."""
    def bound(k: str) -> int | None:  # an SLO met when the figure is <= the bound: ints compare exactly
        if k not in slo:
            return None
        v = slo[k]
        if isinstance(v, float) and not math.isfinite(v):
            return -1 if math.isnan(v) else 2**63 - 1  # NaN: never met; inf: always
        return min(int(math.floor(v)), 2**63 - 1)

    tpot = None if "tpot" not in slo else float(slo["tpot"])
    return _core.request_rows(c["arr"], arrival_null=c["arr_null"], end=c["end"], end_null=c["end_null"],
                              first_token=c["ft"], first_token_null=c["ft_null"], input_tokens=c["tin"],
                              input_tokens_null=c["tin_null"], output_tokens=c["tout"],
                              output_tokens_null=c["tout_null"], status=c["code"], status_null=c["st_null"],
                              replica_null=c["rep_null"], need_replica=need_replica, slo_ttft=bound("ttft"),
                              slo_tpot=tpot, slo_e2e=bound("e2e"))


def _replica_codes(req_rep: pa.Array, busy_rep: pa.Array) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """Common integer codes for the replica columns of requests and busy."""
    if req_rep.type != busy_rep.type:
        try:
            busy_rep = busy_rep.cast(req_rep.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise SchemaError("busy", "replica", f"has type {busy_rep.type}, requests.replica has "
                              f"{req_rep.type}", "give both replica columns the same type") from None
    if pa.types.is_integer(req_rep.type):
        # integer replicas: a direct table over [min, max] when that range is small,
        # in the same first-appearance order as dictionary_encode
        dt = np.int32 if req_rep.type == pa.int32() else np.int64
        a, b = (x if x.type == pa.from_numpy_dtype(dt) else x.cast(pa.from_numpy_dtype(dt))
                for x in (req_rep, busy_rep))
        r = _core.first_seen_codes(_values(a, dt), _mask(a), _values(b, dt), _mask(b),
                                   2 * (len(a) + len(b)) + 65536)
        if r is not None:
            return r[0], r[1], pa.array(r[2]).cast(req_rep.type)
    both = pa.concat_arrays([req_rep, busy_rep])
    if pa.types.is_dictionary(both.type):
        both = both.cast(both.type.value_type)
    enc = pc.dictionary_encode(both)
    idx = (enc.indices.fill_null(-1) if enc.null_count else enc.indices).to_numpy(zero_copy_only=False)
    idx = idx.astype(np.int32, copy=False)  # -1: null replica
    return idx[: len(req_rep)], idx[len(req_rep):], enc.dictionary


def _busy_columns(busy: Any) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    t = as_table(busy, "busy")
    rep = _column(t, "replica", "busy")
    s, s_null = _time(t, "start_ns", "busy")
    e, e_null = _time(t, "end_ns", "busy")
    for name, bad, why, fix in (
        ("replica", np.asarray(rep.is_null()) if rep.null_count else np.zeros(len(rep), bool),
         "null replica", "give every busy interval its replica"),
        ("start_ns", s_null, "null start_ns", "give every busy interval its start"),
        ("end_ns", e_null, "null end_ns", "give every busy interval its end"),
        ("end_ns", e < s, "end_ns before start_ns", "busy intervals need start_ns <= end_ns"),
    ):
        if bad.any():
            raise InvalidRowError("busy", name, int(np.flatnonzero(bad)[0]), why, fix, int(bad.sum()))
    return rep, s, e


def _one(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return col


@overload
def requests(requests: Any, *, slo: Mapping[str, Any] | None = ..., busy: Any = ...,
             weights: Mapping[str, Any] | None = ..., window: Any = ...,
             on_invalid: Literal["raise"] = ...) -> RequestLedger: ...
@overload
def requests(requests: Any, *, slo: Mapping[str, Any] | None = ..., busy: Any = ...,
             weights: Mapping[str, Any] | None = ..., window: Any = ...,
             on_invalid: Literal["quarantine"]) -> Quarantined: ...
@overload
def requests(requests: Any, *, slo: Mapping[str, Any] | None = ..., busy: Any = ...,
             weights: Mapping[str, Any] | None = ..., window: Any = ...,
             on_invalid: str = ...) -> RequestLedger | Quarantined: ...
def requests(requests: Any, *, slo: Mapping[str, Any] | None = None, busy: Any = None,
             weights: Mapping[str, Any] | None = None, window: Any = None,
             on_invalid: str = "raise") -> RequestLedger | Quarantined:
    """Per-request latency, outcome and (with ``busy``) accelerator time (DESIGN §3).

    Parameters
    ----------
    requests : table-like
        Columns ``request_id, replica, arrival_ns, end_ns, status`` and optional
        ``first_token_ns, input_tokens, output_tokens`` (int64 ns or timestamps;
        status one of ``ok, error, timeout, rejected, cancelled``). ``end_ns`` may be
        null only for rejected requests, ``first_token_ns`` only for requests that are
        not ``ok``; token counts are >= 0 and known for ``ok`` requests (null counts
        of other requests are 0).
    slo : dict, optional
        Any of ``ttft``, ``tpot``, ``e2e`` in ns. A request meets an SLO when its
        figure is ``<=`` the bound; unset SLOs are not checked.
    busy : table-like, optional
        ``replica, start_ns, end_ns``: the accelerator busy intervals of each replica
        (one accelerator each; give one row per accelerator, or per device event, to
        count more). Their time is attributed to the requests in flight.
    weights : dict, optional
        ``{"prefill": a, "decode": b}`` (default 1 each). A request is in prefill on
        ``[arrival_ns, first_token_ns)`` with weight ``a * input_tokens`` and in
        decode on ``[first_token_ns, end_ns)`` with weight ``b * output_tokens``
        (a request without a first token is in prefill until ``end_ns``). Numbers
        are read as exact decimals (``0.25`` is 1/4) and scaled to integers.
    window : (int, int) or int, optional
        The measurement window ``(start_ns, end_ns)``, or its length in ns starting
        at the first arrival. Default: first arrival to last end. It is the
        denominator of request goodput; outcomes come from ``status``.
    on_invalid : {"raise", "quarantine"}
        ``"quarantine"`` returns :class:`pau.core.Quarantined` ``(result,
        quarantine)``; set-aside rows count as offered and never as accepted.

    Returns
    -------
    RequestLedger
        ``.table`` per request, ``.summary()``, and with busy ``.replicas``.

    Notes
    -----
    TTFT = first_token - arrival, E2E = end - arrival (exact int64 ns, null when a
    time is missing); TPOT = (E2E - TTFT) / (output_tokens - 1) as float64, 0 when
    output_tokens <= 1. Outcomes: ``ok`` meeting every SLO is ``accepted``, ``ok``
    missing one is ``late``, ``error`` and ``timeout`` are ``failed``.

    Busy time is split by exact rational shares: each busy interval is cut at the
    phase boundaries of its replica, and each piece goes to the phases in flight in
    proportion to their integer weights (equally if every phase in flight has weight
    0); a piece with nothing in flight is idle (exact, per busy interval). Each
    phase's share, summed over its pieces, is rounded once: the floor, then the ns
    left on the replica one each to the largest fractional parts (compared at
    2**-31 ns, ties to the lower request row, prefill first). So per replica
    ``accepted + late + failed + cancelled + idle == busy`` to the ns, and every
    phase's attributed ns is within 1 ns of its exact share (docs/economics.md).
    """
    check_on_invalid(on_invalid)
    t = as_table(requests, "requests")
    slo = _checked_slo(slo)
    wp, wd, wused = _weights(weights)
    need_replica = busy is not None
    c = _request_columns(t, need_replica=need_replica)
    rr = _request_rows(c, need_replica, slo)
    quarantine = None
    if rr.bad:
        quarantine = _bad_requests(t, rr.reason, int(rr.bad), on_invalid)
        # the valid rows, read again (a slow path: only with quarantined rows)
        t = t.take(pa.array(np.flatnonzero(rr.reason == 0)))
        c = _request_columns(t, need_replica=need_replica)
        rr = _request_rows(c, need_replica, slo)
    out, tin, tout = _request_table(t, c, rr)
    counts = dict(zip(OUTCOMES, rr.counts))
    counts["accepted_input_tokens"] = rr.accepted_input_tokens
    counts["accepted_output_tokens"] = rr.accepted_output_tokens
    w0, w1 = _window(window, rr, t.num_rows)
    replicas = busy_out = None
    if busy is not None:
        replicas, busy_out = _attribute_busy(busy, t, c, rr.outcome, tin, tout, wp, wd, out)
    res = RequestLedger(pa.table(out), (w0, w1), wused, slo, replicas, busy_out,
                        0 if quarantine is None else quarantine.num_rows, counts)
    if on_invalid == "quarantine":
        if quarantine is None:
            quarantine = pa.table({"row": pa.array([], pa.int64()), "reason": pa.array([], pa.string())})
        return Quarantined(res, quarantine)
    return res


def _checked_slo(slo: Mapping[str, Any] | None) -> dict[str, Any]:
    """The SLO bounds, each key known and each bound a number of ns >= 0."""
    out = {} if slo is None else dict(slo)
    for k, v in out.items():
        if k not in _SLO_KEYS:
            raise PauError(f"slo: unknown key {k!r}. Fix: use any of {', '.join(_SLO_KEYS)} (in ns)")
        if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise PauError(f"slo: {k} = {v!r}. Fix: give a bound in ns >= 0")
    return out


def _bad_requests(t: pa.Table, reasons: np.ndarray, count: int, on_invalid: str) -> pa.Table:
    """The invalid request rows (``reasons`` not 0): raise for the first, or the
    quarantine table (the rows, their ``row`` number and ``reason``)."""
    bad = reasons != 0
    if on_invalid == "raise":
        i = int(np.flatnonzero(bad)[0])
        r = int(reasons[i])
        raise InvalidRowError("requests", _REASON_COL[r], i, _REASON_REASON(r, t, i), _REASON_FIX[r], count)
    rows = np.flatnonzero(bad)
    q: pa.Table = t.take(pa.array(rows)).append_column("row", pa.array(rows, pa.int64())).append_column(
        "reason", pa.array([_REASONS[int(x)] for x in reasons[rows]], pa.string()))
    return q


def _request_table(t: pa.Table, c: dict[str, Any], rr: _core.RequestRows
                   ) -> tuple[dict[str, pa.Array], np.ndarray, np.ndarray]:
    """The per-request columns (latencies, outcome, tokens), and the token counts as
    weights (null counts of requests that are not ok read 0)."""
    ft_null, end_null = c["ft_null"], c["end_null"]
    # null TPOT where either time is; computed only when no input bitmap serves
    no_tpot = ft_null if end_null is None else (end_null if ft_null is None else (lambda: ft_null | end_null))
    tin = c["tin"] if c["tin_null"] is None else np.where(c["tin_null"], 0, c["tin"])
    tout = c["tout"] if c["tout_null"] is None else np.where(c["tout_null"], 0, c["tout"])
    # TPOT is null where either time is: the validity of the columns that have nulls
    # (None, i.e. no zero-copy, when a missing column supplies the nulls)
    tpot_cols = [col for col, m in ((c["ft_col"], ft_null), (c["end_col"], end_null)) if m is not None]
    out = {
        "request_id": _one(t["request_id"]),
        "replica": _one(t["replica"]),
        "outcome": pa.DictionaryArray.from_arrays(pa.array(rr.outcome), vocab_names(OUTCOMES),
                                                  safe=False),  # codes < 5
        "ttft_ns": _nullable(rr.ttft, pa.int64(), ft_null, [c["ft_col"]]),
        "tpot_ns": _nullable(rr.tpot, pa.float64(), no_tpot, tpot_cols),
        "e2e_ns": _nullable(rr.e2e, pa.int64(), end_null, [c["end_col"]]),
        "input_tokens": pa.array(tin, pa.int64()),
        "output_tokens": pa.array(tout, pa.int64()),
    }
    return out, tin, tout


def _window(window: Any, rr: _core.RequestRows, n: int) -> tuple[int, int]:
    """The measurement window: given, a length from the first arrival, or first
    arrival to last end."""
    if window is None:
        w0 = rr.arrival_min if n else 0
        w1 = rr.end_max if rr.end_max is not None else w0
        w1 = max(w1, rr.arrival_max if n else w0)
    elif isinstance(window, (int, np.integer)) and not isinstance(window, bool):
        w0 = rr.arrival_min if n else 0
        w1 = w0 + int(window)
    else:
        w0, w1 = (int(x) for x in window)
    if w1 < w0:
        raise PauError(f"window: ({w0}, {w1}) ends before it starts. Fix: give (start_ns, end_ns) "
                       f"with start_ns <= end_ns")
    return int(w0), int(w1)


def _attribute_busy(busy: Any, t: pa.Table, c: dict[str, Any], outcome: np.ndarray, tin: np.ndarray,
                    tout: np.ndarray, wp: int, wd: int, out: dict[str, pa.Array]) -> tuple[pa.Table, pa.Table]:
    """Busy time attributed to the requests in flight (native, exact): the
    ``attributed_*`` columns added to ``out``, and the replicas and busy tables."""
    n = t.num_rows
    b_rep_arr, b_s, b_e = _busy_columns(busy)
    r_codes, b_codes, names = _replica_codes(_one(t["replica"]), _one(b_rep_arr))
    if n > _core.ATTRIB_MAX_ROWS:
        raise PauError(f"requests: {n} rows; attribution handles up to {_core.ATTRIB_MAX_ROWS} at "
                       f"once. Fix: split the requests by replica")
    # phases: prefill [arrival, first token or end), decode [first token, end);
    # rejected requests (the only ones that may lack an end) hold none
    nrep = len(names)
    at = _core.attribute_busy(
        r_codes, c["arr"], c["ft"], c["end"], tin, tout, prefill_weight=wp, decode_weight=wd, busy_replica=b_codes,
        busy_start=b_s, busy_end=b_e, n_replicas=nrep, outcome=outcome, n_outcomes=len(OUTCOMES), skip_outcome=3,
        first_token_null=c["ft_null"], rows_checked=True)  # rows checked by request_rows
    a_pre, a_dec, a_tot, idle = at.prefill_ns, at.decode_ns, at.attributed_ns, at.idle_ns
    rep_busy, rep_idle, by_outcome, overflow = at.replica_busy_ns, at.replica_idle_ns, at.by_outcome, at.overflow
    if overflow is not None:
        who = names[overflow[0]].as_py()
        if overflow[2] == "weight":
            raise PauError(f"weights: the total weight of the requests in flight on replica {who!r} "
                           f"(at {overflow[1]} ns) exceeds {_core.ATTRIB_MAX_WEIGHT}, where exact "
                           f"integer attribution would overflow. Fix: use smaller phase weights "
                           f"(e.g. 1 and 1)")
        raise PauError(f"weights: on replica {who!r} the fixed-point shares could be off by 1 ns or more "
                       f"in total (weights x pieces too large for 64 fractional bits). Fix: use "
                       f"smaller phase weights (e.g. 1 and 1)")
    out["attributed_prefill_ns"] = pa.array(a_pre, pa.int64())
    out["attributed_decode_ns"] = pa.array(a_dec, pa.int64())
    out["attributed_ns"] = pa.array(a_tot, pa.int64())
    # per replica, exact int64 sums from the native pass; every code of the
    # replica dictionary occurs in requests or busy, so every replica is listed
    cols = {"busy_ns": rep_busy, "idle_ns": rep_idle}
    assert by_outcome is not None  # outcome was given
    for i, o in ((0, "accepted"), (1, "late"), (2, "failed"), (4, "cancelled")):
        cols[f"{o}_ns"] = by_outcome[:, i]
    replicas = pa.table({"replica": names, **{
        k: pa.array(cols[k], pa.int64()) for k in
        ("busy_ns", "accepted_ns", "late_ns", "failed_ns", "cancelled_ns", "idle_ns")}})
    busy_out = pa.table({"replica": _one(b_rep_arr), "start_ns": pa.array(b_s, pa.int64()),
                         "end_ns": pa.array(b_e, pa.int64()), "idle_ns": pa.array(idle, pa.int64())})
    return replicas, busy_out


def _REASON_REASON(code: int, t: pa.Table, i: int) -> str:
    col = _REASON_COL[code]
    if t.schema.get_field_index(col) >= 0 and code in (2, 4, 6, 8, 9):
        return f"{_REASONS[code]} ({col} = {t[col][i].as_py()!r})"
    return _REASONS[code]


# ---------------------------------------------------------------------------
# checkpoint advice


class _Interval(TypedDict):
    mtbf_s: float
    checkpoint_cost_s: float
    restart_s: float
    young_s: float
    daly_s: float
    expected_goodput_young: float
    expected_goodput_daly: float
    current_interval_s: Optional[float]
    expected_goodput_current: Optional[float]


class CheckpointInterval(_Interval, total=False):
    """:func:`checkpoint_interval`: the inputs (``mtbf_s`` M, ``checkpoint_cost_s`` C,
    ``restart_s`` R, ``current_interval_s``), Young's and Daly's intervals (s) and the
    expected goodput at each and at the current one (None without one); with
    ``simulate`` also ``simulated_goodput_daly`` and ``simulated_goodput_current``."""

    simulated_goodput_daly: float
    simulated_goodput_current: Optional[float]


class MeasuredCheckpoints(TypedDict):
    """What :func:`checkpoint_advice` read from a ledger: ``mtbf_s``, the mean blocking
    ``checkpoint_cost_s`` of a save, the mean ``restart_s`` of a failure and the
    ``current_interval_s`` of work between saves (None when not measured), and the
    ``saves`` and ``failures`` counted."""

    mtbf_s: Optional[float]
    checkpoint_cost_s: Optional[float]
    restart_s: Optional[float]
    current_interval_s: Optional[float]
    saves: int
    failures: int


class _Advice(TypedDict):
    mtbf_s: Optional[float]
    checkpoint_cost_s: Optional[float]
    restart_s: float
    young_s: Optional[float]
    daly_s: Optional[float]
    expected_goodput_young: Optional[float]
    expected_goodput_daly: Optional[float]
    current_interval_s: Optional[float]
    expected_goodput_current: Optional[float]
    measured: MeasuredCheckpoints


class CheckpointAdvice(_Advice, total=False):
    """:func:`checkpoint_advice`: :class:`CheckpointInterval`'s keys at what the ledger
    measured (or was given), None where neither was known, plus ``measured``."""

    simulated_goodput_daly: float
    simulated_goodput_current: Optional[float]


def _expected_goodput(tau: float, delta: float, restart: float, mtbf: float) -> float:
    """Useful fraction of wall time with checkpoints every ``tau`` s of work.

    Each segment of ``tau + delta`` must run without a failure (exponential, mean
    M); every failure costs the time lost plus a restart ``R`` that failures also
    interrupt. The expected wall time of a segment is then
    ``M * exp(R/M) * (exp((tau + delta)/M) - 1)`` (Daly 2006, eq. 13 without the
    final partial segment), so the goodput is ``tau`` over that.
    """
    if tau <= 0:
        return 0.0
    return tau / (mtbf * math.exp(restart / mtbf) * math.expm1((tau + delta) / mtbf))


def checkpoint_interval(mtbf_s: float, checkpoint_cost_s: float, restart_s: float = 0.0, *,
                        current_interval_s: float | None = None, simulate: int = 0,
                        segments: int = 200, seed: int = 0) -> CheckpointInterval:
    """Young's and Daly's optimal checkpoint intervals and the goodput they give.

    Parameters
    ----------
    mtbf_s : float
        Mean time between failures of the job (s), failures Poisson.
    checkpoint_cost_s : float
        Blocking time of one checkpoint (s), ``C``.
    restart_s : float, default 0
        Time from a failure to resumed work (outage, re-init, restore), ``R``.
    current_interval_s : float, optional
        The work between checkpoints now (s), to compare against.
    simulate : int, default 0
        Runs of the Monte Carlo (:func:`pau.engine._econ_kernels.checkpoint_runs`) of
        ``segments`` intervals each at the Daly interval (and the current one);
        0 skips it.

    Returns
    -------
    CheckpointInterval
        A typed dict: ``young_s = sqrt(2 C M)``; ``daly_s = sqrt(2 C M) (1 + sqrt(C/(2M))/3 +
        (C/(2M))/9) - C`` when ``C < 2M``, else ``M``; ``expected_goodput_young``,
        ``expected_goodput_daly``, ``expected_goodput_current`` (see
        :func:`_expected_goodput`), and with ``simulate`` the simulated goodputs
        ``simulated_goodput_daly`` / ``simulated_goodput_current`` (total work over
        total wall time of all runs).
    """
    for name, v in (("mtbf_s", mtbf_s), ("checkpoint_cost_s", checkpoint_cost_s), ("restart_s", restart_s)):
        if v is None or not math.isfinite(v) or v < 0 or (name == "mtbf_s" and v == 0):
            raise PauError(f"{name} = {v!r}. Fix: give a finite number of seconds "
                           f"({'> 0' if name == 'mtbf_s' else '>= 0'})")
    M, C, R = float(mtbf_s), float(checkpoint_cost_s), float(restart_s)
    young = math.sqrt(2 * C * M)
    x = C / (2 * M)
    daly = young * (1 + math.sqrt(x) / 3 + x / 9) - C if C < 2 * M else M
    out: CheckpointInterval = {"mtbf_s": M, "checkpoint_cost_s": C, "restart_s": R, "young_s": young, "daly_s": daly,
           "expected_goodput_young": _expected_goodput(young, C, R, M),
           "expected_goodput_daly": _expected_goodput(daly, C, R, M),
           "current_interval_s": current_interval_s,
           "expected_goodput_current": (None if current_interval_s is None
                                        else _expected_goodput(float(current_interval_s), C, R, M))}
    if simulate:
        def sim(tau: float) -> float:
            if tau <= 0:
                return 0.0
            wall = K.checkpoint_runs(float(tau), C, R, M, int(segments), int(simulate), int(seed))
            return tau * segments * simulate / float(wall.sum())
        out["simulated_goodput_daly"] = sim(daly)
        out["simulated_goodput_current"] = None if current_interval_s is None else sim(float(current_interval_s))
    return out


def checkpoint_advice(ledger: Ledger, *, mtbf_s: float | None = None, checkpoint_cost_s: float | None = None,
                      restart_s: float | None = None, simulate: int = 0, seed: int = 0) -> CheckpointAdvice:
    """Checkpoint interval advice from what a ledger measured.

    Measured (per rank, then averaged over ranks), each overridable:

    * ``mtbf_s``: the ledger's ``summary()["mtbf_s"]`` (wall time / failures);
    * ``checkpoint_cost_s``: blocking checkpoint time (``checkpoint*`` states) over
      the number of saves, a save being one ``(rank, attempt, step)``;
    * ``restart_s``: recovery time (``recovery.*`` states) over failures;
    * the current interval: step-execution time (``productive``, ``pending``,
      ``rolled_back``) over saves.

    Returns a :class:`CheckpointAdvice`: :func:`checkpoint_interval`'s keys plus ``measured`` (what was read);
    the intervals are ``None`` when no failure (or no checkpoint) was measured and
    none was given.
    """
    _one_job(ledger, "checkpoint advice")
    if not isinstance(ledger, Ledger):
        raise ArgumentTypeError("checkpoint_advice", "a pau Ledger", ledger)
    s = ledger.summary()
    ranks = max(s["ranks"], 1)
    st = s["state_ns"]
    saves = 0
    if ledger.intervals is not None:
        iv = ledger.intervals
        ck = iv.filter(pc.starts_with(iv["state"].cast(pa.string()), "checkpoint"))
        saves = len({(r, a, k) for r, a, k in zip(ck["rank"].to_pylist(), ck["attempt"].to_pylist(),
                                                   ck["step"].to_pylist())})
    ck_ns = st["checkpoint"] + st["checkpoint.lost"] + st["checkpoint.unused"]
    work_ns = st["productive"] + st["pending"] + st["rolled_back"]
    rec_ns = st["recovery.outage"] + st["recovery.reinit"] + st["recovery.restore"]
    fails = s["failures"] or 0
    measured: MeasuredCheckpoints = {
        "mtbf_s": s["mtbf_s"],
        "checkpoint_cost_s": (ck_ns / saves / 1e9) if saves else None,
        "restart_s": (rec_ns / ranks / fails / 1e9) if fails else None,
        "current_interval_s": (work_ns / saves / 1e9) if saves else None,
        "saves": saves,
        "failures": fails,
    }
    M = mtbf_s if mtbf_s is not None else measured["mtbf_s"]
    C = checkpoint_cost_s if checkpoint_cost_s is not None else measured["checkpoint_cost_s"]
    R = restart_s if restart_s is not None else (measured["restart_s"] or 0.0)
    if M is None or C is None:
        return {"measured": measured, "mtbf_s": M, "checkpoint_cost_s": C, "restart_s": R,
                "current_interval_s": measured["current_interval_s"], "young_s": None, "daly_s": None,
                "expected_goodput_young": None, "expected_goodput_daly": None, "expected_goodput_current": None}
    ck = checkpoint_interval(M, C, R, current_interval_s=measured["current_interval_s"],
                             simulate=simulate, seed=seed)
    out: CheckpointAdvice = {**ck, "measured": measured}
    return out
