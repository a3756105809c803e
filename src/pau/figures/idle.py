"""Idle by cause: each rank's idle time split exactly into ``host_wait``,
``data_wait``, ``sync_wait`` and ``idle.other`` (DESIGN §2.1; ``docs/idle.md``).

Idle is device time with no event at all (the ledger's ``idle``). Its causes come from
the host side of the trace:

* ``data_wait``: a data-loading span is active (a DataLoader span of the trace's host
  events, an NVTX DataLoader range, or a lifecycle ``phase`` of kind ``data_wait``).
* ``sync_wait``: the host is inside a synchronize call (``cudaStreamSynchronize``...,
  :data:`pau.readers.devices.SYNC_CALLS`).
* ``host_wait``: the device has drained and the launch call of the event that ends the
  idle gap has not begun yet: for each gap ``[g, s)`` of a rank's busy union, closed by
  the events starting at ``s``, the interval ``[g, min(L, s))`` where ``L`` is the
  earliest ``launch_ns`` among those events (a gap before the first event starts at
  the rank's span start).
* ``idle.other``: the rest (launch latency, the device waiting on another rank, time
  after the last event, ranks or traces without host events).

Where several hold at once the first in ``data_wait > sync_wait > host_wait >
idle.other`` wins: a host waiting for data cannot launch, so the data explains the late
launch (and the synchronize the host may be blocked in meanwhile); a host blocked in a
synchronize call cannot launch either, so the call explains the late launch.

The split is one exclusive sweep (:func:`pau.engine.api.classify`) over a derived timeline:
every device event as the top kind (busy), then the ``data_wait``, ``sync_wait`` and
``host_wait`` intervals as the next kinds in that order, over the ledger's own span or
windows. The sweep's idle is ``idle.other``; the parts sum to the ledger's idle exactly
because the sweep conserves time: what no pseudo kind covers stays idle, and device
events win everywhere they run.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine import _kernels
from pau.engine.api import classify
from pau.engine._input import (
    _column, as_table, event_columns, raise_first, rank_column, row_reasons, time_column,
)
from pau.engine.ledger import Ledger, exact_sums
from pau.engine.vocab import KINDS, SPANS_SCHEMA
from pau.errors import InvalidRowError, OptionError, PauError, SchemaError
from pau.figures._common import _one_job
from pau.readers.kineto import HOST_CAUSES, HOST_SCHEMA

__all__ = ["CAUSES", "HOST_CAUSES", "HOST_SCHEMA", "IdleByCause", "host_of_lifecycle", "host_wait_intervals",
           "idle_by_cause", "idle_cause_intervals"]

#: The parts of idle time, in their precedence (the first that holds wins), the order
#: the results list them in.
CAUSES = ("data_wait", "sync_wait", "host_wait", "idle.other")

# The derived timeline's pseudo kinds: their order in KINDS is the precedence
# busy > data_wait > sync_wait > host_wait (> idle, which is idle.other).
_BUSY, _DATA, _SYNC, _HOST = (KINDS.index(k) for k in ("compute", "communication", "memcpy", "memset"))
_CAUSE_OF_ACTIVITY = {"communication": "data_wait", "memcpy": "sync_wait", "memset": "host_wait",
                      "idle": "idle.other"}
_I64_MIN, _I64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


class IdleByCause(NamedTuple):
    """What :func:`idle_by_cause` returns.

    Attributes
    ----------
    table : pyarrow.Table
        ``rank, [window,] cause, duration_ns``: one row per rank (and window) and cause
        of :data:`CAUSES`, zeros included, in that order (ranks, then windows in time
        order, as :func:`pau.core.classify` lists them). Without a ``ledger`` the rows
        of a rank sum to its idle time over its whole span (``window`` null: time of the
        span outside every window, as :func:`pau.core.classify` gives it); with one,
        over its accountable time (no ``window`` column).
    summary : dict
        ``{cause: ns}`` over every rank, exact ints; their sum is the ledger's idle.
    """

    table: pa.Table
    summary: dict[str, int]


# ---------------------------------------------------------------------------
# intervals


def host_wait_intervals(rank: np.ndarray, start: np.ndarray, end: np.ndarray, launch: np.ndarray,
                        launched: np.ndarray, span_rank: np.ndarray, span_start: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rank, start, end)`` of the host-wait intervals of device events.

    A rank's busy union is the union of its events of non-zero length (touching ones
    join). Each gap of it, ``[g, s)``, is closed by the events that start at ``s``; when
    one of them has a known launch (``launched``), the gap's host wait is ``[g, min(L,
    s))`` for ``L`` the earliest such launch (empty when ``L <= g``: the launch was
    issued before the device drained). The gap before a rank's first event starts at
    the rank's span start (``span_rank``/``span_start``; every rank of ``rank`` must
    have one). Zero-length events neither end a gap nor close one.

    Parameters
    ----------
    rank, start, end, launch : numpy.ndarray of int
        The device events (any order), and each one's launch time.
    launched : numpy.ndarray of bool
        Whether ``launch`` is known.
    span_rank, span_start : numpy.ndarray of int
        Each rank's span start.

    Returns
    -------
    tuple of numpy.ndarray
        ``rank`` (int32), ``start``, ``end`` (int64), non-empty intervals sorted by rank
        and start.
    """
    rank = np.asarray(rank, np.int64)
    start, end = np.asarray(start, np.int64), np.asarray(end, np.int64)
    launch, launched = np.asarray(launch, np.int64), np.asarray(launched, bool)
    keep = end > start
    rank, start, end, launch, launched = rank[keep], start[keep], end[keep], launch[keep], launched[keep]
    same = rank[1:] == rank[:-1]
    if not ((rank[1:] >= rank[:-1]).all() and (start[1:][same] >= start[:-1][same]).all()):  # readers sort
        order = np.lexsort((start, rank))
        rank, start, end, launch, launched = rank[order], start[order], end[order], launch[order], launched[order]
    s_order = np.argsort(np.asarray(span_rank, np.int64), kind="stable")
    s_rank = np.asarray(span_rank, np.int64)[s_order]
    s_lo = np.asarray(span_start, np.int64)[s_order]
    out_r, out_s, out_e = [], [], []
    bounds = np.flatnonzero(np.diff(rank)) + 1 if rank.size else np.empty(0, np.int64)
    for a, b in zip([0, *bounds.tolist()], [*bounds.tolist(), rank.size]):
        if a == b:
            continue
        r = int(rank[a])
        k = int(np.searchsorted(s_rank, r))
        if k >= s_rank.size or s_rank[k] != r:
            raise PauError(f"host_wait_intervals: rank {r} has host events but no span. Fix: give rank {r} a span "
                           "(span=, or device events)")
        lo = s_lo[k]
        s, e, L, known = start[a:b], end[a:b], launch[a:b], launched[a:b]
        reach = np.maximum.accumulate(e)
        before = np.maximum(np.r_[lo, reach[:-1]], lo)   # where the busy union reached before each event
        closes = s > before
        if not closes.any():
            continue
        closer = np.flatnonzero(closes)
        gap = np.cumsum(closes) - 1                        # the gap each event follows (-1: none)
        member = (gap >= 0) & known
        member[member] = s[member] == s[closer[gap[member]]]
        first = np.full(closer.size, _I64_MAX, np.int64)
        has = np.zeros(closer.size, bool)
        np.minimum.at(first, gap[member], L[member])
        has[gap[member]] = True
        g0, g1 = before[closer], np.minimum(first, s[closer])
        ok = has & (g1 > g0)
        out_r.append(np.full(int(ok.sum()), r, np.int64))
        out_s.append(g0[ok])
        out_e.append(g1[ok])
    if not out_r:
        return np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0, np.int64)
    return (np.concatenate(out_r).astype(np.int32), np.concatenate(out_s), np.concatenate(out_e))


def host_of_lifecycle(lifecycle: Any) -> pa.Table:
    """The ``data_wait`` host intervals of a lifecycle table: its ``phase`` records of
    kind ``data_wait`` (DESIGN §2.2), ``rank`` as written (-1: every rank).

    A phase without ``end_ns`` (still open) runs to the end of each rank's span: it is
    given ``end_ns`` = the largest int64 and clipped by the sweep.

    Returns
    -------
    pyarrow.Table
        :data:`HOST_SCHEMA`.
    """
    lc = as_table(lifecycle, "lifecycle")
    _one_job(lc, "host of lifecycle")
    if lc.num_rows == 0 or "record" not in lc.column_names or "kind" not in lc.column_names:
        return HOST_SCHEMA.empty_table()
    rec = _column(lc, "record", "lifecycle").cast(pa.string())
    kind = _column(lc, "kind", "lifecycle").cast(pa.string())
    sel = np.asarray(pc.fill_null(pc.and_(pc.equal(rec, "phase"), pc.equal(kind, "data_wait")), False))
    idx = np.flatnonzero(sel)
    if idx.size == 0:
        return HOST_SCHEMA.empty_table()
    rows = lc.take(pa.array(idx))
    if "rank" not in rows.column_names:
        rank = np.full(idx.size, -1, np.int64)
    else:
        rank = np.asarray(pc.fill_null(_column(rows, "rank", "lifecycle").cast(pa.int64()), -1))
    start = _column(rows, "start_ns", "lifecycle")
    if start.null_count:
        raise InvalidRowError("lifecycle", "start_ns", int(idx[np.flatnonzero(np.asarray(start.is_null()))[0]]),
                              "a data_wait phase without start_ns", "give every phase its start_ns")
    end = (_column(rows, "end_ns", "lifecycle") if "end_ns" in rows.column_names
           else pa.nulls(idx.size, pa.int64()))
    s = time_column(start, "start_ns", "lifecycle")
    e = np.asarray(pc.fill_null(end.cast(pa.int64()), _I64_MAX))
    bad = np.flatnonzero(e < np.asarray(s))
    if bad.size:
        raise InvalidRowError("lifecycle", "end_ns", int(idx[bad[0]]), "a data_wait phase ends before it starts",
                              "give end_ns >= start_ns", int(bad.size))
    return pa.table({"rank": pa.array(rank.astype(np.int32)), "start_ns": pa.array(np.asarray(s, np.int64)),
                     "end_ns": pa.array(e.astype(np.int64)),
                     "cause": pa.DictionaryArray.from_arrays(pa.array(np.zeros(idx.size, np.int8)),
                                                             pa.array(HOST_CAUSES, pa.string()))},
                    schema=HOST_SCHEMA)


def _host_columns(host: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(rank, start, end, cause index) of a host table, validated: a
    :class:`pau.errors.PauError` names the column and the row."""
    t = as_table(host, "host")
    cols = {}
    for name in ("rank", "start_ns", "end_ns", "cause"):
        col = _column(t, name, "host")
        if col.null_count:
            raise InvalidRowError("host", name, int(np.flatnonzero(np.asarray(col.is_null()))[0]), "null",
                                  "every host interval needs rank, start_ns, end_ns and cause",
                                  col.null_count)
        cols[name] = col
    r = np.asarray(rank_column(cols["rank"], "host"), np.int64)
    s = np.asarray(time_column(cols["start_ns"], "start_ns", "host"), np.int64)
    e = np.asarray(time_column(cols["end_ns"], "end_ns", "host"), np.int64)
    for mask, column, reason, fix in (
            (r < -1, "rank", "a rank below -1", "ranks are >= 0, or -1 for every rank"),
            (e < s, "end_ns", "end_ns before start_ns", "give end_ns >= start_ns")):
        bad = np.flatnonzero(mask)
        if bad.size:
            raise InvalidRowError("host", column, int(bad[0]), reason, fix, int(bad.size))
    # end - start must fit int64 too (the sweep refuses it otherwise, naming another table)
    with np.errstate(over="ignore"):
        wide = np.flatnonzero((e.astype(np.uint64) - s.astype(np.uint64)).astype(np.int64) < 0)
    if wide.size:
        raise InvalidRowError("host", "end_ns", int(wide[0]), "end_ns - start_ns is beyond int64",
                              "split the interval", int(wide.size))
    cause = cols["cause"]
    if not (pa.types.is_string(cause.type) or pa.types.is_large_string(cause.type)
            or pa.types.is_dictionary(cause.type) or pa.types.is_string_view(cause.type)):
        raise SchemaError("host", "cause", f"has type {cause.type}, not string",
                          f"give causes as strings: {', '.join(HOST_CAUSES)}")
    text = cause.cast(pa.string()) if not pa.types.is_dictionary(cause.type) else cause.dictionary_decode().cast(
        pa.string())
    code = np.asarray(pc.fill_null(pc.index_in(text, pa.array(HOST_CAUSES, pa.string())), -1), np.int64)
    bad = np.flatnonzero(code < 0)
    if bad.size:
        raise InvalidRowError("host", "cause", int(bad[0]), f"unknown cause {text[int(bad[0])].as_py()!r}",
                              f"give one of {', '.join(HOST_CAUSES)}", int(bad.size))
    return r, s, e, code


def _any_bad(cols: Any) -> bool:
    """Whether some event row is refused by the sweep (a negative rank, an end before
    the start or too far after it, an unknown kind): then the slow path names it."""
    s, e = np.asarray(cols.start, np.int64), np.asarray(cols.end, np.int64)
    with np.errstate(over="ignore"):
        wide = (e >= s) & ((e.astype(np.uint64) - s.astype(np.uint64)).astype(np.int64) < 0)
    k = cols.kind
    unknown = (k.codes[k.indices] < 0).any() if len(k.codes) else len(k.indices) > 0
    return bool((np.asarray(cols.rank) < 0).any() or (e < s).any() or wide.any() or unknown)


def _event_columns(events: Any) -> tuple[pa.Table, np.ndarray, np.ndarray, np.ndarray]:
    """(table, rank, start, end) of the events, validated as the sweep validates them
    (the same errors, naming the row)."""
    t = as_table(events, "events")
    cols = event_columns(t)
    if cols is None or _any_bad(cols):
        reasons = row_reasons(t)
        if reasons.any():
            raise_first(t, reasons, 0)
        cols = event_columns(t.combine_chunks())
    assert cols is not None  # rows without a reason have values
    return t, np.asarray(cols.rank, np.int64), np.asarray(cols.start, np.int64), np.asarray(cols.end, np.int64)


def _launch(t: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """``launch_ns`` of the events (0 where unknown) and whether it is known."""
    if "launch_ns" not in t.column_names:
        return np.zeros(t.num_rows, np.int64), np.zeros(t.num_rows, bool)
    col = _column(t, "launch_ns", "events")
    if not (pa.types.is_integer(col.type) or pa.types.is_timestamp(col.type)):
        raise SchemaError("events", "launch_ns", f"has type {col.type}, not int64 nanoseconds",
                          "give launch_ns as int64 ns (null where the launch is unknown)")
    known = np.asarray(col.is_valid()) if col.null_count else np.ones(t.num_rows, bool)
    vals = time_column(col.fill_null(0) if col.null_count else col, "launch_ns", "events")
    return np.asarray(vals, np.int64), known


def _spans(span: Any, rank: np.ndarray, start: np.ndarray, end: np.ndarray) -> pa.Table:
    """The span of every rank as the ledger takes it: the rows of ``span``, and first
    event start to last event end for ranks it does not list."""
    given = SPANS_SCHEMA.empty_table() if span is None else as_table(span, "span")
    if given.num_rows:
        given = pa.table({n: _column(given, n, "span") for n in ("rank", "start_ns", "end_ns")})
        given = pa.table({"rank": rank_column(given["rank"].combine_chunks(), "span"),
                          "start_ns": time_column(given["start_ns"].combine_chunks(), "start_ns", "span"),
                          "end_ns": time_column(given["end_ns"].combine_chunks(), "end_ns", "span")},
                         schema=SPANS_SCHEMA)
    listed = set(np.asarray(given["rank"]).tolist()) if given.num_rows else set()
    ranks = np.unique(rank)
    extra = [int(r) for r in ranks.tolist() if r not in listed]
    if extra:
        order = np.argsort(rank, kind="stable")
        sr, ss, se = rank[order], start[order], end[order]
        lo = np.searchsorted(sr, extra, "left")
        hi = np.searchsorted(sr, extra, "right")
        rows = pa.table({"rank": pa.array(np.asarray(extra, np.int32)),
                         "start_ns": pa.array(np.array([ss[a:b].min() for a, b in zip(lo, hi)], np.int64)),
                         "end_ns": pa.array(np.array([se[a:b].max() for a, b in zip(lo, hi)], np.int64))},
                        schema=SPANS_SCHEMA)
        given = pa.concat_tables([given, rows]) if given.num_rows else rows
    return given


def _merged_intervals(iv: pa.Table) -> pa.Table:
    """A ledger's state intervals as disjoint runs per rank (touching ones joined)."""
    r = np.asarray(iv["rank"], np.int64)
    s, e = np.asarray(iv["start_ns"], np.int64), np.asarray(iv["end_ns"], np.int64)
    order = np.lexsort((s, r))
    r, s, e = r[order], s[order], e[order]
    new = np.ones(r.size, bool)
    new[1:] = (r[1:] != r[:-1]) | (s[1:] > e[:-1])
    first = np.flatnonzero(new)
    # none without intervals (a ledger as of an instant before every record): no run
    last = np.r_[first[1:], r.size][:first.size] - 1
    return pa.table({"rank": pa.array(r[first].astype(np.int32)), "start_ns": pa.array(s[first]),
                     "end_ns": pa.array(e[last])}, schema=SPANS_SCHEMA)


class _Timeline(NamedTuple):
    derived: pa.Table  # busy events and the cause intervals as pseudo kinds
    spans: pa.Table  # each rank's span (SPANS_SCHEMA)
    windows: Any  # the sweep's windows (the accountable runs with a ledger)
    accountable: pa.Table | None  # the ledger's accountable time, touching runs joined


def _timeline(events: Any, host: Any, lifecycle: Any, span: Any, windows: Any, ledger: Ledger | None
              ) -> _Timeline:
    """The derived timeline of the module docstring, and the spans and windows it is
    swept over (the one construction behind :func:`idle_by_cause` and
    :func:`idle_cause_intervals`)."""
    t, rank, start, end = _event_columns(events)
    launch, launched = _launch(t)
    accountable = None
    if ledger is not None:
        if span is not None or windows is not None:
            raise OptionError("idle_by_cause: a ledger sets the accountable time; give span and windows only "
                              "without one")
        if ledger.intervals is None:
            raise OptionError("idle_by_cause: this ledger has no lifecycle (its accountable time is its span); "
                              "pass the span it was built with as span= instead of ledger=")
        if not ledger.has_events:
            raise OptionError("idle_by_cause: this ledger was built without events; build it with the events "
                              "given here")
        accountable = _merged_intervals(ledger.intervals)
        spans = _spans(None, np.asarray(accountable["rank"], np.int64), np.asarray(accountable["start_ns"]),
                       np.asarray(accountable["end_ns"]))
        windows = accountable
        # events of ranks that are not accountable are outside the ledger (and its windows)
        mine = np.isin(rank, np.asarray(spans["rank"], np.int64))
        rank, start, end, launch, launched = rank[mine], start[mine], end[mine], launch[mine], launched[mine]
    else:
        spans = _spans(span, rank, start, end)
    span_rank = np.asarray(spans["rank"], np.int64)
    span_start = np.asarray(spans["start_ns"], np.int64)

    parts_r, parts_s, parts_e, parts_k = [rank], [start], [end], [np.full(rank.size, _BUSY, np.int8)]
    hosts = [] if host is None else [_host_columns(host)]
    if lifecycle is not None:
        hosts.append(_host_columns(host_of_lifecycle(lifecycle)))
    for hr, hs, he, hc in hosts:
        # rank -1 is every rank; a rank outside every span waits for nothing accounted
        every = hr == -1
        n_all = int(every.sum())
        hr = np.concatenate([hr[~every], np.repeat(span_rank, n_all)])
        hs = np.concatenate([hs[~every], np.tile(hs[every], span_rank.size)])
        he = np.concatenate([he[~every], np.tile(he[every], span_rank.size)])
        hc = np.concatenate([hc[~every], np.tile(hc[every], span_rank.size)])
        inside = np.isin(hr, span_rank)
        kind = np.where(hc[inside] == HOST_CAUSES.index("data_wait"), _DATA, _SYNC).astype(np.int8)
        for part, col in zip((parts_r, parts_s, parts_e, parts_k), (hr[inside], hs[inside], he[inside], kind)):
            part.append(col)
    wr, ws, we = host_wait_intervals(rank, start, end, launch, launched, span_rank, span_start)
    for part, col in zip((parts_r, parts_s, parts_e, parts_k), (wr, ws, we, np.full(wr.size, _HOST, np.int8))):
        part.append(col)
    derived = pa.table({
        "rank": pa.array(np.concatenate(parts_r).astype(np.int32)),
        "start_ns": pa.array(np.concatenate(parts_s).astype(np.int64)),
        "end_ns": pa.array(np.concatenate(parts_e).astype(np.int64)),
        "kind": pa.DictionaryArray.from_arrays(pa.array(np.concatenate(parts_k), pa.int8()),
                                               pa.array(KINDS, pa.string())),
    })
    return _Timeline(derived, spans, windows, accountable)


# ---------------------------------------------------------------------------
# the split


def idle_by_cause(events: Any, host: Any = None, *, lifecycle: Any = None, span: Any = None,
                  windows: Any = None, ledger: Ledger | None = None, threads: int | None = None) -> IdleByCause:
    """Each rank's idle time split exactly into ``host_wait``, ``data_wait``,
    ``sync_wait`` and ``idle.other`` (definitions and precedence: the module docstring,
    ``docs/idle.md``).

    Parameters
    ----------
    events : table-like
        Device events (see :func:`pau.core.classify`); an optional ``launch_ns`` column
        (int64 ns, null where unknown: what :func:`pau.readers.kineto.read_kineto` and
        :func:`pau.readers.nsys.read_nsys` write) gives ``host_wait``.
    host : table-like, optional
        ``rank, start_ns, end_ns, cause`` with cause ``data_wait`` or ``sync_wait``
        (:data:`HOST_SCHEMA`: a reader's ``.host``); rank -1 is every rank.
    lifecycle : table-like, optional
        A lifecycle table (DESIGN §2.2): its ``data_wait`` phases are ``data_wait`` host
        intervals too (:func:`host_of_lifecycle`).
    span, windows : optional
        As for :func:`pau.core.classify` and an events-only :func:`pau.core.ledger`:
        give the ledger's own, and the split sums to its idle.
    ledger : Ledger, optional
        A ledger with a lifecycle: the idle split is that inside its accountable time
        (its state intervals, touching ones joined, are the sweep's windows; each rank's
        span runs from its first to its last accountable instant), so it sums to the
        ledger's idle. Excludes ``span`` and ``windows``.
    threads : int, optional
        As for :func:`pau.core.classify`.

    Returns
    -------
    IdleByCause
        ``(table, summary)``: ``rank, [window,] cause, duration_ns`` and ``{cause: ns}``.

    Raises
    ------
    pau.errors.PauError
        A bad row of events, host or lifecycle (naming the table, the column and the
        row); :class:`pau.errors.OptionError` for a ledger without a lifecycle or
        without events, or a ledger given with span or windows.
    """
    lifecycle = None if lifecycle is None else as_table(lifecycle, "lifecycle")  # read once (a stream)
    _one_job(lifecycle, "idle by cause")
    _one_job(ledger, "idle by cause")
    derived, spans, windows, accountable = _timeline(events, host, lifecycle, span, windows, ledger)
    out = classify(derived, span=spans, windows=windows, priority=KINDS, threads=threads)
    return _shape(out, accountable is not None)


def _shape(out: pa.Table, accountable: bool) -> IdleByCause:
    """classify's rows of the derived timeline as causes (busy time dropped). classify
    gives every rank (and window) a row per activity in ACTIVITIES order, zeros
    included, so the filtered rows come in CAUSES order."""
    names = list(_CAUSE_OF_ACTIVITY)
    act = out["activity"].cast(pa.string())
    keep = pc.is_in(act, pa.array(names, pa.string()))
    if accountable:
        keep = pc.and_(keep, pc.is_valid(out["window"]))
    sel = out.filter(keep)
    cause = pc.take(pa.array(list(_CAUSE_OF_ACTIVITY.values()), pa.string()),
                    pc.index_in(sel["activity"].cast(pa.string()), pa.array(names, pa.string())))
    if not accountable:
        cols = {"rank": sel["rank"]}
        if "window" in sel.column_names:
            cols["window"] = sel["window"]
        table = pa.table({**cols, "cause": cause, "duration_ns": sel["duration_ns"]})
        sums = exact_sums(table, ["cause"], "duration_ns")
        return IdleByCause(table, {c: sums.get((c,), 0) for c in CAUSES})
    # Inside accountable time: the windows of a rank summed, per cause.
    t = pa.table({"rank": sel["rank"], "cause": cause, "duration_ns": sel["duration_ns"]})
    sums = exact_sums(t, ["rank", "cause"], "duration_ns")
    ranks = sorted({r for r, _ in sums})
    rows = [(r, c, sums.get((r, c), 0)) for r in ranks for c in CAUSES]
    table = pa.table({"rank": pa.array([x[0] for x in rows], pa.int32()),
                      "cause": pa.array([x[1] for x in rows], pa.string()),
                      "duration_ns": pa.array([x[2] for x in rows], pa.int64())})
    summary = dict.fromkeys(CAUSES, 0)
    for (_, c), v in sums.items():
        summary[c] += v
    return IdleByCause(table, summary)


# ---------------------------------------------------------------------------
# the split as intervals


#: Paint levels of the derived timeline's pseudo kinds (the higher wins, as the
#: sweep's priority): busy > data_wait > sync_wait > host_wait > the region (idle.other).
_LEVEL_OF_KIND = {_BUSY: 4, _DATA: 3, _SYNC: 2, _HOST: 1}
_CAUSE_OF_LEVEL = {3: "data_wait", 2: "sync_wait", 1: "host_wait", 0: "idle.other"}


def _clip(pr: np.ndarray, ps: np.ndarray, pe: np.ndarray, lab: np.ndarray, region: pa.Table
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The labelled disjoint pieces ``(pr, ps, pe, lab)`` cut to the region's intervals
    (disjoint per rank), adjacent pieces of one label joined."""
    rr = np.asarray(region["rank"], np.int64)
    rs, re_ = np.asarray(region["start_ns"], np.int64), np.asarray(region["end_ns"], np.int64)
    out_r, out_s, out_e, out_l = [], [], [], []
    for r in np.unique(rr).tolist():
        pm, wm = pr == r, rr == r
        a_s, a_e, a_l = ps[pm], pe[pm], lab[pm]
        o = np.argsort(a_s, kind="stable")
        a_s, a_e, a_l = a_s[o], a_e[o], a_l[o]
        w_s, w_e = rs[wm], re_[wm]
        o = np.argsort(w_s, kind="stable")
        w_s, w_e = w_s[o], w_e[o]
        cuts = np.unique(np.concatenate([a_s, a_e, w_s, w_e]))
        if cuts.size < 2:
            continue
        lo, hi = cuts[:-1], cuts[1:]
        ia = np.searchsorted(a_s, lo, "right") - 1
        iw = np.searchsorted(w_s, lo, "right") - 1
        keep = (ia >= 0) & (iw >= 0)
        keep[keep] &= (lo[keep] < a_e[ia[keep]]) & (lo[keep] < w_e[iw[keep]])
        lo, hi, lb = lo[keep], hi[keep], a_l[ia[keep]]
        if not lo.size:
            continue
        new = np.ones(lo.size, bool)
        new[1:] = (lo[1:] != hi[:-1]) | (lb[1:] != lb[:-1])
        first = np.flatnonzero(new)
        last = np.r_[first[1:], lo.size] - 1
        out_r.append(np.full(first.size, r, np.int64))
        out_s.append(lo[first])
        out_e.append(hi[last])
        out_l.append(lb[first])
    z = np.zeros(0, np.int64)
    if not out_r:
        return z, z, z, z
    return np.concatenate(out_r), np.concatenate(out_s), np.concatenate(out_e), np.concatenate(out_l)


def idle_cause_intervals(events: Any, host: Any = None, *, lifecycle: Any = None, span: Any = None,
                         windows: Any = None, ledger: Ledger | None = None) -> pa.Table:
    """The idle time of :func:`idle_by_cause` as intervals: where each rank was idle,
    and for which cause.

    The same derived timeline as :func:`idle_by_cause` (the module docstring), painted
    instead of swept: at each instant the highest of busy > ``data_wait`` >
    ``sync_wait`` > ``host_wait`` that covers it wins (the sweep's priority), and an
    instant of the rank's time that none covers is ``idle.other``. The time is the
    ledger's accountable time (with ``ledger``) or each rank's span (without; windows
    then only split the table of :func:`idle_by_cause`, not the time).

    Parameters
    ----------
    events, host, lifecycle, span, windows, ledger
        As for :func:`idle_by_cause`.

    Returns
    -------
    pyarrow.Table
        ``rank`` (int32), ``start_ns``, ``end_ns`` (int64), ``cause`` (one of
        :data:`CAUSES`): disjoint intervals, maximal per cause, sorted by rank and
        start. Their durations summed per rank and cause are the rows of
        :func:`idle_by_cause`'s table (summed over windows), so their sum is the
        ledger's idle.

    Raises
    ------
    pau.errors.PauError
        As :func:`idle_by_cause`.
    """
    lifecycle = None if lifecycle is None else as_table(lifecycle, "lifecycle")  # read once (a stream)
    _one_job(lifecycle, "idle cause intervals")
    _one_job(ledger, "idle cause intervals")
    tl = _timeline(events, host, lifecycle, span, windows, ledger)
    region = tl.accountable if tl.accountable is not None else tl.spans
    d = tl.derived
    kind = np.asarray(d["kind"].combine_chunks().indices, np.int64) if d.num_rows else np.zeros(0, np.int64)
    level_of = np.zeros(len(KINDS), np.int8)
    for k, lv in _LEVEL_OF_KIND.items():
        level_of[k] = lv
    rank = np.concatenate([np.asarray(d["rank"], np.int64), np.asarray(region["rank"], np.int64)])
    start = np.concatenate([np.asarray(d["start_ns"], np.int64), np.asarray(region["start_ns"], np.int64)])
    end = np.concatenate([np.asarray(d["end_ns"], np.int64), np.asarray(region["end_ns"], np.int64)])
    level = np.concatenate([level_of[kind], np.zeros(region.num_rows, np.int8)])
    keep = end > start
    rank, start, end, level = rank[keep].astype(np.int32), start[keep], end[keep], level[keep]
    order = np.lexsort((start, rank))
    pr, ps, pe, row = _kernels.paint(rank, start, end, level, order)  # type: ignore[no-untyped-call]
    lab = level[np.asarray(row, np.int64)]
    r, s, e, lb = _clip(np.asarray(pr, np.int64), np.asarray(ps, np.int64), np.asarray(pe, np.int64), lab, region)
    idle = lb < 4
    names = np.array([_CAUSE_OF_LEVEL[lv] for lv in range(4)], object)
    return pa.table({"rank": pa.array(r[idle].astype(np.int32)), "start_ns": pa.array(s[idle], pa.int64()),
                     "end_ns": pa.array(e[idle], pa.int64()),
                     "cause": pa.array(names[lb[idle].astype(np.int64)].tolist(), pa.string())})
