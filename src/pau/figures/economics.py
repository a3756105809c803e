"""The economics of useful work: inference accounting, cost and energy, checkpoint advice.

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
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau import _core
from pau.engine import _econ_kernels as K
from pau.engine._input import _column, as_table, time_column
from pau.engine.ledger import NS_PER_HOUR, Ledger
from pau.engine.types import LedgerSummary, Quarantined, check_on_invalid
from pau.engine.vocab import names as vocab_names
from pau.errors import InvalidRowError, PauError, SchemaError
from pau.figures._common import _NS_PER_S, _one_job, _ratio
from pau.figures.hardware import integrate

__all__ = [
    "OUTCOMES",
    "RequestLedger",
    "requests",
    "cost",
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
    window: tuple
    weights: dict
    slo: dict
    replicas: pa.Table | None = None
    busy: pa.Table | None = None
    quarantined: int = 0
    _counts: dict = field(default_factory=dict, repr=False)

    def latency(self) -> dict:
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
        out: dict[str, dict[str, Any]] = {}
        for key, col in (("ttft", "ttft_ns"), ("tpot", "tpot_ns"), ("e2e", "e2e_ns")):
            vals = t[col].filter(pc.and_(done, pc.is_valid(t[col])))
            x = vals.to_numpy()
            row: dict[str, Any] = {"count": int(x.size)}
            if x.size == 0:
                row.update({k: None for k in ("mean", "min", "max", "std", *_LATENCY_PERCENTILES)})
            else:
                exact = x.dtype.kind == "i"
                row.update(mean=float(x.mean()), min=int(x.min()) if exact else float(x.min()),
                           max=int(x.max()) if exact else float(x.max()), std=float(x.std()))
                for name, q in _LATENCY_PERCENTILES.items():
                    row[name] = float(np.percentile(x, q))
            out[key] = row
        return out

    def summary(self) -> dict:
        """Headline figures (counts and ns exact ints; ratios floats or ``None``).

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
        out = {"offered": offered, **{o: c[o] for o in OUTCOMES}, "quarantined": self.quarantined,
               "slo_attainment": _ratio(c["accepted"], offered - c["cancelled"]),
               "window_ns": w1 - w0,
               "request_goodput_per_s": (c["accepted"] * _NS_PER_S / (w1 - w0)) if w1 > w0 else None,
               "accepted_input_tokens": c["accepted_input_tokens"],
               "accepted_output_tokens": c["accepted_output_tokens"],
               "accepted_tokens": c["accepted_input_tokens"] + c["accepted_output_tokens"]}
        out["latency"] = self.latency()
        if self.replicas is not None:
            r = self.replicas
            tot = {k: int(pc.sum(r[k]).as_py() or 0) for k in
                   ("busy_ns", "accepted_ns", "late_ns", "failed_ns", "cancelled_ns", "idle_ns")}
            out.update(busy_ns=tot["busy_ns"], productive_ns=tot["accepted_ns"], late_ns=tot["late_ns"],
                       failed_ns=tot["failed_ns"], cancelled_ns=tot["cancelled_ns"], idle_ns=tot["idle_ns"],
                       productive_accelerator_hours=tot["accepted_ns"] / NS_PER_HOUR,
                       inference_goodput=_ratio(tot["accepted_ns"], tot["busy_ns"]))
        return out


def _int_column(t: pa.Table, name: str, table: str, *, required: bool):
    """(values int64 with nulls as 0, null mask) of an integer column, or None."""
    if t.schema.get_field_index(name) < 0:
        if required:
            _column(t, name, table)  # raises SchemaError
        return None
    col = _column(t, name, table)
    if not pa.types.is_integer(col.type):
        raise SchemaError(table, name, f"has type {col.type}, not an integer",
                          "give token counts as integers")
    null = np.asarray(col.is_null()) if col.null_count else np.zeros(len(col), bool)
    vals = col.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    return vals, null


def _time(t: pa.Table, name: str, table: str, *, required: bool):
    """(int64 ns values with nulls as 0, null mask) of a time column, or None."""
    if t.schema.get_field_index(name) < 0:
        if required:
            _column(t, name, table)
        return None
    col = _column(t, name, table)
    null = np.asarray(col.is_null()) if col.null_count else np.zeros(len(col), bool)
    if col.null_count:
        col = col.fill_null(pa.scalar(0, col.type))
    return np.asarray(time_column(col, name, table), np.int64), null


def _weights(weights) -> tuple[int, int, dict]:
    """Phase weights as exact integers (a common denominator cleared)."""
    w = {"prefill": 1, "decode": 1} if weights is None else dict(weights)
    extra = set(w) - {"prefill", "decode"}
    if extra:
        raise PauError(f"weights: unknown phase {sorted(extra)[0]!r}. Fix: give "
                       f"{{'prefill': a, 'decode': b}}")
    w.setdefault("prefill", 1)
    w.setdefault("decode", 1)
    fr = {}
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


def _mask(col: pa.Array):
    """The null mask of a column as a numpy bool array, or None when it has no nulls.

    Read straight from the validity bitmap (a quarter of the time of ``is_null``)
    where the column has one; dictionary columns go through ``is_null``."""
    if not col.null_count:
        return None
    valid = None if pa.types.is_dictionary(col.type) else col.buffers()[0]
    if valid is None:
        return np.asarray(col.is_null())
    bits = np.unpackbits(np.frombuffer(valid, np.uint8), count=col.offset + len(col), bitorder="little")
    return bits[col.offset:] == 0


def _values(arr: pa.Array, dtype) -> np.ndarray:
    """Zero-copy values of a fixed-width Arrow array of numpy ``dtype`` (arbitrary
    under nulls)."""
    if arr.null_count == 0:
        return arr.to_numpy(zero_copy_only=False)
    return np.frombuffer(arr.buffers()[1], dtype, count=len(arr) + arr.offset)[arr.offset:]


def _int64_values(arr) -> np.ndarray:
    """Zero-copy int64 values of an int64 Arrow array (or a numpy array as is).

    Values under nulls are whatever the buffer holds: callers read them only through
    the null mask."""
    if isinstance(arr, np.ndarray):
        return arr
    if arr.null_count == 0:
        return arr.to_numpy(zero_copy_only=False)
    return np.frombuffer(arr.buffers()[1], np.int64, count=len(arr) + arr.offset)[arr.offset:]


def _request_columns(t: pa.Table, *, need_replica: bool):
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


def _nullable(values: np.ndarray, typ: pa.DataType, mask, cols) -> pa.Array:
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


def _request_rows(c: dict, need_replica: bool, slo: dict) -> _core.RequestRows:
    """The native pass over the rows (pau._core.request_rows)."""
    def bound(k):  # an SLO met when the figure is <= the bound: ints compare exactly
        if k not in slo:
            return None
        v = slo[k]
        if k == "tpot":
            return float(v)
        if isinstance(v, float) and not math.isfinite(v):
            return -1 if math.isnan(v) else 2**63 - 1  # NaN: never met; inf: always
        return min(int(math.floor(v)), 2**63 - 1)

    return _core.request_rows(c["arr"], arrival_null=c["arr_null"], end=c["end"], end_null=c["end_null"],
                              first_token=c["ft"], first_token_null=c["ft_null"], input_tokens=c["tin"],
                              input_tokens_null=c["tin_null"], output_tokens=c["tout"],
                              output_tokens_null=c["tout_null"], status=c["code"], status_null=c["st_null"],
                              replica_null=c["rep_null"], need_replica=need_replica, slo_ttft=bound("ttft"),
                              slo_tpot=bound("tpot"), slo_e2e=bound("e2e"))


def _replica_codes(req_rep: pa.Array, busy_rep: pa.Array):
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


def _busy_columns(busy):
    t = as_table(busy, "busy")
    rep = _column(t, "replica", "busy")
    s, s_null = _time(t, "start_ns", "busy", required=True)
    e, e_null = _time(t, "end_ns", "busy", required=True)
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


def _one(col) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return col


def requests(requests: Any, *, slo: dict | None = None, busy: Any = None, weights: dict | None = None,
             window: Any = None, on_invalid: str = "raise"):
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
    slo = {} if slo is None else dict(slo)
    for k, v in slo.items():
        if k not in _SLO_KEYS:
            raise PauError(f"slo: unknown key {k!r}. Fix: use any of {', '.join(_SLO_KEYS)} (in ns)")
        if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise PauError(f"slo: {k} = {v!r}. Fix: give a bound in ns >= 0")
    wp, wd, wused = _weights(weights)
    need_replica = busy is not None
    c = _request_columns(t, need_replica=need_replica)
    rr = _request_rows(c, need_replica, slo)
    quarantine = None
    if rr.bad:
        reasons = rr.reason
        bad = reasons != 0
        if on_invalid == "raise":
            i = int(np.flatnonzero(bad)[0])
            r = int(reasons[i])
            raise InvalidRowError("requests", _REASON_COL[r], i, _REASON_REASON(r, t, i), _REASON_FIX[r],
                                  int(rr.bad))
        rows = np.flatnonzero(bad)
        quarantine = t.take(pa.array(rows)).append_column("row", pa.array(rows, pa.int64())).append_column(
            "reason", pa.array([_REASONS[int(x)] for x in reasons[rows]], pa.string()))
        # the valid rows, read again (a slow path: only with quarantined rows)
        t = t.take(pa.array(np.flatnonzero(~bad)))
        c = _request_columns(t, need_replica=need_replica)
        rr = _request_rows(c, need_replica, slo)
    n = t.num_rows
    ft_null, end_null = c["ft_null"], c["end_null"]
    # null TPOT where either time is; computed only when no input bitmap serves
    no_tpot = ft_null if end_null is None else (end_null if ft_null is None else (lambda: ft_null | end_null))
    # token counts as output (and as weights): null counts of requests that are not ok read 0
    tin = c["tin"] if c["tin_null"] is None else np.where(c["tin_null"], 0, c["tin"])
    tout = c["tout"] if c["tout_null"] is None else np.where(c["tout_null"], 0, c["tout"])
    outcome = rr.outcome
    # TPOT is null where either time is: the validity of the columns that have nulls
    # (None, i.e. no zero-copy, when a missing column supplies the nulls)
    tpot_cols = [col for col, m in ((c["ft_col"], ft_null), (c["end_col"], end_null)) if m is not None]
    out = {
        "request_id": _one(t["request_id"]),
        "replica": _one(t["replica"]),
        "outcome": pa.DictionaryArray.from_arrays(pa.array(outcome), vocab_names(OUTCOMES), safe=False),  # codes < 5
        "ttft_ns": _nullable(rr.ttft, pa.int64(), ft_null, [c["ft_col"]]),
        "tpot_ns": _nullable(rr.tpot, pa.float64(), no_tpot, tpot_cols),
        "e2e_ns": _nullable(rr.e2e, pa.int64(), end_null, [c["end_col"]]),
        "input_tokens": pa.array(tin, pa.int64()),
        "output_tokens": pa.array(tout, pa.int64()),
    }
    counts = dict(zip(OUTCOMES, rr.counts))
    counts["accepted_input_tokens"] = rr.accepted_input_tokens
    counts["accepted_output_tokens"] = rr.accepted_output_tokens

    # window
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

    replicas = busy_out = None
    if busy is not None:
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
            first_token_null=ft_null, rows_checked=True)  # rows checked by request_rows
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

    res = RequestLedger(pa.table(out), (w0, w1), wused, slo, replicas, busy_out,
                        0 if quarantine is None else quarantine.num_rows, counts)
    if on_invalid == "quarantine":
        if quarantine is None:
            quarantine = pa.table({"row": pa.array([], pa.int64()), "reason": pa.array([], pa.string())})
        return Quarantined(res, quarantine)
    return res


def _REASON_REASON(code: int, t: pa.Table, i: int) -> str:
    col = _REASON_COL[code]
    if t.schema.get_field_index(col) >= 0 and code in (2, 4, 6, 8, 9):
        return f"{_REASONS[code]} ({col} = {t[col][i].as_py()!r})"
    return _REASONS[code]


# ---------------------------------------------------------------------------
# energy


def _power_columns(power, key: str):
    t = as_table(power, "power")
    k = _column(t, key, "power")
    tm, tnull = _time(t, "time_ns", "power", required=True)
    w = _column(t, "watts", "power")
    if not (pa.types.is_floating(w.type) or pa.types.is_integer(w.type)):
        raise SchemaError("power", "watts", f"has type {w.type}, not a number", "give watts as numbers")
    wnull = np.asarray(w.is_null()) if w.null_count else np.zeros(len(w), bool)
    knull = np.asarray(k.is_null()) if k.null_count else np.zeros(len(k), bool)
    watts = w.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
    for name, bad, why in ((key, knull, f"null {key}"), ("time_ns", tnull, "null time_ns"),
                           ("watts", wnull, "null watts"),
                           ("watts", ~np.isfinite(watts) | (watts < 0), "watts not finite and >= 0")):
        if bad.any():
            raise InvalidRowError("power", name, int(np.flatnonzero(bad)[0]), why,
                                  "drop or repair the sample", int(bad.sum()))
    return k, tm, watts


def _energy_j(p_key, p_t, p_w, q_key, q_start, q_end) -> np.ndarray:
    """Joules over each ``[q_start, q_end)`` of key ``q_key`` from samples (key, t, W).

    Power is piecewise linear between samples (trapezoids) and held at the first /
    last sample outside them (:func:`pau.figures.hardware.integrate`). Time differences are
    exact int64 ns; watts x ns products are float64 W.ns, divided by 1e9 at the end.
    """
    p_key, p_t, p_w = np.asarray(p_key, np.int64), np.asarray(p_t, np.int64), np.asarray(p_w, np.float64)
    q_key = np.asarray(q_key, np.int64)
    if q_key.size == 0:
        return np.zeros(0, np.float64)
    missing = np.setdiff1d(np.unique(q_key), p_key)
    if missing.size:
        raise PauError(f"power: no samples for rank/replica {missing[0].item()!r}. Fix: give power samples "
                       f"(rank, time_ns, watts) for every rank of the ledger")
    # The signal: linear between consecutive samples of a key, held at the first and
    # last sample's watts before and after them; integrated by pau.figures.hardware's one rule.
    order = np.lexsort((p_t, p_key))
    k, t, w = p_key[order], p_t[order], p_w[order]
    same = k[1:] == k[:-1]
    first = np.concatenate([[True], ~same])
    last = np.concatenate([~same, [True]])
    i64 = np.iinfo(np.int64)
    seg_k = np.concatenate([k[:-1][same], k[first], k[last]])
    seg_s = np.concatenate([t[:-1][same], np.full(int(first.sum()), i64.min), t[last]])
    seg_e = np.concatenate([t[1:][same], t[first], np.full(int(last.sum()), i64.max)])
    seg_a = np.concatenate([w[:-1][same], w[first], w[last]])
    seg_b = np.concatenate([w[1:][same], w[first], w[last]])
    integral, _ = integrate(seg_k, seg_s, seg_e, seg_a, seg_b, q_key, np.asarray(q_start, np.int64),
                            np.asarray(q_end, np.int64))
    return integral / 1e9


# ---------------------------------------------------------------------------
# cost


def _price_per_ns(prices: dict, keys: np.ndarray, what: str):
    """$ per ns for each key (rank or replica) from a per-hour price."""
    if "per_accelerator_hour" in prices:
        p = prices["per_accelerator_hour"]
        return np.full(keys.size, float(p) / NS_PER_HOUR)
    by_type = "per_type_hour" in prices
    table = prices["per_type_hour"] if by_type else prices["per_rank_hour"]
    types = prices.get("types", {})
    out = np.empty(keys.size, np.float64)
    for i, k in enumerate(keys.tolist()):  # one per rank or replica, not per request
        if by_type:
            if k not in types:
                raise PauError(f"prices: types has no accelerator type for {what} {k!r}. Fix: map every "
                               f"{what} to its type, e.g. types={{{k!r}: 'H100'}}")
            k = types[k]
        if k not in table:
            name = "per_type_hour" if by_type else "per_rank_hour"
            raise PauError(f"prices: {name} has no price for {'type' if by_type else what} {k!r}. "
                           f"Fix: give a price for every {'accelerator type used' if by_type else what}, "
                           f"or use per_accelerator_hour")
        out[i] = float(table[k]) / NS_PER_HOUR
    return out


def _check_prices(prices: dict) -> None:
    given = [k for k in ("per_accelerator_hour", "per_rank_hour", "per_type_hour", "total") if k in prices]
    if len(given) != 1:
        raise PauError("prices: give exactly one of per_accelerator_hour, per_rank_hour, per_type_hour "
                       f"or total (got {sorted(prices)})")
    extra = set(prices) - {"per_accelerator_hour", "per_rank_hour", "per_type_hour", "types", "total",
                           "accelerators"}
    if extra:
        raise PauError(f"prices: unknown key {sorted(extra)[0]!r}")
    if ("types" in prices) != ("per_type_hour" in prices):
        raise PauError("prices: per_type_hour and types go together. Fix: give per_type_hour={type: "
                       "price} and types={rank or replica: type}")
    if "types" in prices and not isinstance(prices["types"], dict):
        raise PauError("prices: types must be a dict {rank or replica: accelerator type}")
    if given[0] in ("per_rank_hour", "per_type_hour") and not isinstance(prices[given[0]], dict):
        raise PauError(f"prices: {given[0]} must be a dict of prices per hour")
    v = prices[given[0]]
    vals = list(v.values()) if isinstance(v, dict) else [v]
    for x in vals:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
            raise PauError(f"prices: {given[0]} has {x!r}. Fix: prices are finite numbers >= 0")


def _per(total, denom):
    return total / denom if denom else None


def cost(ledger_or_requests: Any, prices: dict, *, power: Any = None) -> dict:
    """Cost and energy per unit of useful output (DESIGN §4).

    Parameters
    ----------
    ledger_or_requests : Ledger or RequestLedger
        A training ledger (:func:`pau.core.ledger`) or an inference result
        (:func:`requests`).
    prices : dict
        Exactly one of ``{"per_accelerator_hour": x}``, ``{"per_rank_hour": {rank:
        x}}`` (for a RequestLedger: keyed by replica), ``{"per_type_hour": {type: x},
        "types": {rank: type}}`` (prices by accelerator type, with each rank's or
        replica's type) or ``{"total": dollars}`` (a fully allocated cost for the
        period). For a Ledger the billed time is its
        accountable time; for a RequestLedger it is ``accelerators * window`` when
        ``prices["accelerators"]`` is given, else the busy time.
    power : table-like, optional
        ``rank, time_ns, watts`` (``replica, time_ns, watts`` for a RequestLedger),
        integrated over each ledger state interval (or busy interval):
        piecewise-linear between samples, held flat outside them.

    Returns
    -------
    dict
        ``total_cost``, ``cost_by_state`` (or ``cost_by_outcome``), ``waste_cost``,
        ``waste_cost_by_state`` / ``waste_cost_by_cause``, the cost per useful
        output (``cost_per_productive_accelerator_hour``,
        ``cost_per_preserved_step``, ``cost_per_preserved_model_cycle``,
        ``cost_per_million_preserved_tokens``; or ``cost_per_accepted_request``,
        ``cost_per_million_accepted_tokens``,
        ``cost_per_million_accepted_output_tokens``), and with ``power`` the same
        with ``energy_`` names in joules. Per-unit figures are the *fully
        allocated* cost (all billed time, waste included) over the useful units;
        ``None`` when there are none.
    """
    _one_job(ledger_or_requests if isinstance(ledger_or_requests, Ledger) else None, "cost")
    if not isinstance(prices, dict):
        raise PauError("prices: expected a dict such as {'per_accelerator_hour': 2.0}")
    _check_prices(prices)
    if isinstance(ledger_or_requests, RequestLedger):
        return _cost_requests(ledger_or_requests, prices, power)
    if isinstance(ledger_or_requests, Ledger):
        return _cost_ledger(ledger_or_requests, prices, power)
    raise TypeError(f"cost: expected a pau Ledger or RequestLedger, got {type(ledger_or_requests).__name__}")


def _cost_ledger(led: Ledger, prices: dict, power) -> dict:
    if "accelerators" in prices:
        raise PauError("prices: 'accelerators' applies to a RequestLedger; a Ledger bills its "
                       "accountable time")
    s = led.summary()
    by = led.by("rank", "state").to_pylist()
    ranks = np.array([r["rank"] for r in by], np.int64)
    ns = np.array([r["duration_ns"] for r in by], np.int64)
    states = [r["state"] for r in by]
    acc = s["accountable_ns"]
    if "total" in prices:
        per_ns = np.full(ranks.size, _per(float(prices["total"]), acc) or 0.0)
    else:
        per_ns = _price_per_ns(prices, ranks, "rank")
    row_cost = ns * per_ns
    cost_by_state: dict = {}
    for st, c in zip(states, row_cost.tolist()):
        cost_by_state[st] = cost_by_state.get(st, 0.0) + c
    total = float(prices["total"]) if "total" in prices else float(row_cost.sum())
    useful = ("productive", "pending")
    waste_by_state = {k: v for k, v in cost_by_state.items() if k not in useful and v}
    out = {"total_cost": total, "billed_ns": acc, "cost_by_state": cost_by_state,
           "waste_cost": float(sum(waste_by_state.values())), "waste_cost_by_state": waste_by_state,
           "waste_cost_by_cause": _by_cause(led, prices, per_rank=None if "total" in prices else True,
                                            uniform=_per(float(prices.get("total", 0.0)), acc))}
    denoms = _ledger_denoms(s)
    out.update({f"cost_{k}": _per(total * m, d) for k, (d, m) in denoms.items()})
    if power is not None:
        if led.intervals is None:
            raise PauError("power: energy by state needs the ledger's state intervals. Fix: build the "
                           "ledger with a lifecycle (pau.core.ledger(events, lifecycle))")
        iv = led.intervals
        k, tm, w = _power_columns(power, "rank")
        p_rank = k.cast(pa.int64()).to_numpy(zero_copy_only=False)
        j = _energy_j(p_rank, tm, w, np.asarray(iv["rank"], np.int64), np.asarray(iv["start_ns"]),
                      np.asarray(iv["end_ns"]))
        st = iv["state"].combine_chunks()
        names = st.dictionary.to_pylist()
        idx = st.indices.to_numpy(zero_copy_only=False)
        e_state: dict = {}
        for i, v in zip(idx.tolist(), j.tolist()):
            e_state[names[i]] = e_state.get(names[i], 0.0) + v
        etot = float(j.sum())
        out.update(energy_j=etot, energy_by_state_j=e_state,
                   waste_energy_j=float(sum(v for kk, v in e_state.items() if kk not in useful)))
        out.update({f"energy_{k}_j": _per(etot * m, d) for k, (d, m) in denoms.items()})
    return out


def _ledger_denoms(s: LedgerSummary) -> dict:
    toks = s.get("preserved_tokens")
    return {
        "per_productive_accelerator_hour": (s["productive_ns"], NS_PER_HOUR),
        "per_preserved_step": (s.get("preserved_steps"), 1),
        "per_preserved_model_cycle": (s.get("preserved_model_cycles"), 1),
        "per_million_preserved_tokens": (toks, 10**6),
    }


def _by_cause(led: Ledger, prices, *, per_rank, uniform) -> dict:
    if led.intervals is None:
        return {}
    iv = led.intervals
    rb = iv.filter(pc.equal(iv["state"], "rolled_back"))
    if rb.num_rows == 0:
        return {}
    ranks = np.asarray(rb["rank"], np.int64)
    dur = np.asarray(rb["end_ns"], np.int64) - np.asarray(rb["start_ns"], np.int64)
    per_ns = _price_per_ns(prices, ranks, "rank") if per_rank else np.full(ranks.size, uniform or 0.0)
    out: dict = {}
    for c, v in zip(rb["cause"].to_pylist(), (dur * per_ns).tolist()):
        out[c] = out.get(c, 0.0) + v
    return out


def _cost_requests(rl: RequestLedger, prices: dict, power) -> dict:
    s = rl.summary()
    busy = s.get("busy_ns")
    if "accelerators" in prices:
        n_acc = prices["accelerators"]
        if isinstance(n_acc, bool) or not isinstance(n_acc, int) or n_acc < 0:
            raise PauError(f"prices: accelerators = {n_acc!r}. Fix: give a whole number >= 0")
        billed = n_acc * s["window_ns"]
    else:
        billed = busy
    if "total" in prices:
        total = float(prices["total"])
        per_ns = _per(total, billed) if billed is not None else None
    else:
        if billed is None:
            raise PauError("prices: a per-hour price needs billed time. Fix: give requests(..., busy=...) "
                           "or prices['accelerators'] (billed = accelerators x window), or a 'total'")
        if "per_rank_hour" in prices or "per_type_hour" in prices:
            if rl.replicas is None or "accelerators" in prices:
                raise PauError("prices: per_rank_hour / per_type_hour for requests price each replica's "
                               "busy time. Fix: give requests(..., busy=...) and no 'accelerators'")
            keys = np.array(rl.replicas["replica"].to_pylist(), dtype=object)
            total = float((np.asarray(rl.replicas["busy_ns"]) * _price_per_ns(prices, keys, "replica")).sum())
        else:
            total = billed * float(prices["per_accelerator_hour"]) / NS_PER_HOUR
        per_ns = _per(total, billed)
    out = {"total_cost": total, "billed_ns": billed,
           "cost_per_accepted_request": _per(total, s["accepted"]),
           "cost_per_million_accepted_tokens": _per(total * 10**6, s["accepted_tokens"]),
           "cost_per_million_accepted_output_tokens": _per(total * 10**6, s["accepted_output_tokens"])}
    if busy is not None and per_ns is not None:
        idle = s["idle_ns"] + (billed - busy)
        parts = {"accepted": s["productive_ns"], "late": s["late_ns"], "failed": s["failed_ns"],
                 "cancelled": s["cancelled_ns"], "idle": idle}
        if "per_rank_hour" in prices or "per_type_hour" in prices:
            r = rl.replicas
            assert r is not None  # checked above
            keys = np.array(r["replica"].to_pylist(), dtype=object)
            pr = _price_per_ns(prices, keys, "replica")
            parts_cost = {o: float((np.asarray(r[f"{o}_ns"]) * pr).sum()) for o in parts}
        else:
            parts_cost = {o: v * per_ns for o, v in parts.items()}
        out["cost_by_outcome"] = parts_cost
        out["waste_cost"] = float(sum(v for o, v in parts_cost.items() if o != "accepted"))
        out["waste_cost_by_cause"] = {o: v for o, v in parts_cost.items() if o != "accepted"}
        out["cost_per_productive_accelerator_hour"] = _per(total * NS_PER_HOUR, s["productive_ns"])
    if power is not None:
        if rl.busy is None:
            raise PauError("power: inference energy is integrated over busy intervals. Fix: give "
                           "requests(..., busy=...)")
        k, tm, w = _power_columns(power, "replica")
        b = rl.busy
        both = pa.concat_arrays([_one(b["replica"]), _one(k).cast(_one(b["replica"]).type)])
        codes = pc.dictionary_encode(both).indices.to_numpy(zero_copy_only=False).astype(np.int64)
        j = _energy_j(codes[b.num_rows:], tm, w, codes[: b.num_rows], np.asarray(b["start_ns"]),
                      np.asarray(b["end_ns"]))
        etot = float(j.sum())
        out.update(energy_j=etot, energy_per_accepted_request_j=_per(etot, s["accepted"]),
                   energy_per_million_accepted_tokens_j=_per(etot * 10**6, s["accepted_tokens"]),
                   energy_per_productive_accelerator_hour_j=_per(etot * NS_PER_HOUR, s["productive_ns"]))
    return out


# ---------------------------------------------------------------------------
# checkpoint advice


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
                        segments: int = 200, seed: int = 0) -> dict:
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
    dict
        ``young_s = sqrt(2 C M)``; ``daly_s = sqrt(2 C M) (1 + sqrt(C/(2M))/3 +
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
    out = {"mtbf_s": M, "checkpoint_cost_s": C, "restart_s": R, "young_s": young, "daly_s": daly,
           "expected_goodput_young": _expected_goodput(young, C, R, M),
           "expected_goodput_daly": _expected_goodput(daly, C, R, M),
           "current_interval_s": current_interval_s,
           "expected_goodput_current": (None if current_interval_s is None
                                        else _expected_goodput(float(current_interval_s), C, R, M))}
    if simulate:
        def sim(tau):
            if tau <= 0:
                return 0.0
            wall = K.checkpoint_runs(float(tau), C, R, M, int(segments), int(simulate), int(seed))
            return tau * segments * simulate / float(wall.sum())
        out["simulated_goodput_daly"] = sim(daly)
        out["simulated_goodput_current"] = None if current_interval_s is None else sim(float(current_interval_s))
    return out


def checkpoint_advice(ledger: Ledger, *, mtbf_s: float | None = None, checkpoint_cost_s: float | None = None,
                      restart_s: float | None = None, simulate: int = 0, seed: int = 0) -> dict:
    """Checkpoint interval advice from what a ledger measured.

    Measured (per rank, then averaged over ranks), each overridable:

    * ``mtbf_s``: the ledger's ``summary()["mtbf_s"]`` (wall time / failures);
    * ``checkpoint_cost_s``: blocking checkpoint time (``checkpoint*`` states) over
      the number of saves, a save being one ``(rank, attempt, step)``;
    * ``restart_s``: recovery time (``recovery.*`` states) over failures;
    * the current interval: step-execution time (``productive``, ``pending``,
      ``rolled_back``) over saves.

    Returns :func:`checkpoint_interval`'s dict plus ``measured`` (what was read);
    the intervals are ``None`` when no failure (or no checkpoint) was measured and
    none was given.
    """
    _one_job(ledger, "checkpoint advice")
    if not isinstance(ledger, Ledger):
        raise TypeError(f"checkpoint_advice: expected a pau Ledger, got {type(ledger).__name__}")
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
    measured = {
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
        keys = ("young_s", "daly_s", "expected_goodput_young", "expected_goodput_daly",
                "expected_goodput_current")
        return {"measured": measured, "mtbf_s": M, "checkpoint_cost_s": C, "restart_s": R,
                "current_interval_s": measured["current_interval_s"], **dict.fromkeys(keys)}
    out = checkpoint_interval(M, C, R, current_interval_s=measured["current_interval_s"],
                              simulate=simulate, seed=seed)
    out["measured"] = measured
    return out
