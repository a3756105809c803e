"""A run's ledger as tracks of the Chrome Trace Event Format (Perfetto UI, ``chrome://tracing``).

:func:`chrome_trace` lays a run out as one process per rank, with the ledger's tracks
beside the original device events (``docs/chrome-trace.md``):

* ``lifecycle state``: every accountable ns of the rank in its lifecycle state (the
  ledger's state intervals; ``unattributed`` over the span without a lifecycle);
* ``idle``: accountable time with no device event (the ledger's ``idle``); when
  :mod:`pau.figures.idle` finds a cause for some of it (the run's host table, events'
  ``launch_ns``, data-wait phases), one track per cause instead: ``idle: data_wait``,
  ``idle: sync_wait``, ``idle: host_wait``, ``idle: other`` (:data:`IDLE_TRACKS`);
* ``waiting for the slowest rank``: per step, from the rank's end of the step to the
  slowest rank's (:func:`pau.figures.stragglers.stragglers`), when steps name their ranks;
* ``lifecycle events``: instants for failures, checkpoint saves (and when each became
  durable) and restores;
* one track per device stream (or per kind, without a ``stream`` column) holding the
  run's device events, with extra lanes where events of one stream overlap (the format
  shows only events that nest).

Times: ``ts`` and ``dur`` are microseconds (the format's unit) as floats, counted from
``otherData.pau.origin_ns`` (the earliest time written) so that they keep ns resolution;
every complete event also carries its exact ``args.start_ns`` and ``args.end_ns`` (int
ns, the run's own clock), from which every sum is exact.
"""

from __future__ import annotations

import gzip
import json
import os
from typing import Any, Dict, List, Protocol, TypedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine.ledger import Ledger
from pau.figures.stragglers import stragglers
from pau.figures._common import _one_job
from pau.errors import PauError
from pau.figures.idle import CAUSES, idle_cause_intervals
from pau.engine.types import Quarantined

__all__ = ["CHROME_TRACE_VERSION", "EXACT_OFFSET_NS", "IDLE_TRACKS", "ChromeTrace", "chrome_trace", "write_chrome_trace"]

#: Version of the layout below (``otherData.pau.version``).
CHROME_TRACE_VERSION = 1
#: Offsets from the origin below this many ns (2**51 ns, about 26 days) are written as
#: float µs that give back the exact ns (``round(ts * 1000)``); beyond it ``ts`` and
#: ``dur`` round, and ``otherData.pau.exact_ts`` is false (the ``args`` stay exact).
EXACT_OFFSET_NS = 2**51

# Thread ids inside each rank's process, in display order; device tracks follow.
_TID_STATE, _TID_IDLE, _TID_WAIT, _TID_MARKS, _TID_DEVICE = 1, 2, 3, 4, 10
#: The idle tracks when idle is split by cause (:data:`pau.figures.idle.CAUSES`): the track and
#: event name of each cause, and its thread id.
IDLE_TRACKS = {"data_wait": "idle: data_wait", "sync_wait": "idle: sync_wait", "host_wait": "idle: host_wait",
               "idle.other": "idle: other"}
_TID_IDLE_CAUSE = {c: 5 + i for i, c in enumerate(CAUSES)}


class _RunLike(Protocol):
    """What :func:`chrome_trace` reads of a :class:`pau.Run`."""

    events: pa.Table | None
    lifecycle: pa.Table | None
    spans: pa.Table | None
    host: pa.Table | None
    metadata: dict[str, Any]

    def ledger(self) -> Ledger: ...


def _col(t: pa.Table, name: str) -> np.ndarray:
    return np.asarray(t[name].to_numpy(zero_copy_only=False))


def _strings(t: pa.Table, name: str) -> list[Any]:
    col = t[name]
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    out: list[Any] = col.to_pylist()
    return out


def _union_pieces(rank: np.ndarray, start: np.ndarray, end: np.ndarray, acc_rank: np.ndarray,
                  acc_start: np.ndarray, acc_end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The maximal intervals, per rank, inside the accountable intervals and outside
    every ``[start, end)``: ``(rank, start, end)``, sorted. One sweep over the boundaries:
    +1/-1 for accountable and for busy time, idle where accountable > 0 and busy == 0."""
    keep = end > start
    rank, start, end = rank[keep], start[keep], end[keep]
    r = np.concatenate([acc_rank, acc_rank, rank, rank]).astype(np.int64)
    t = np.concatenate([acc_start, acc_end, start, end]).astype(np.int64)
    n_a, n_e = acc_rank.size, rank.size
    d_acc = np.concatenate([np.ones(n_a, np.int64), -np.ones(n_a, np.int64), np.zeros(2 * n_e, np.int64)])
    d_busy = np.concatenate([np.zeros(2 * n_a, np.int64), np.ones(n_e, np.int64), -np.ones(n_e, np.int64)])
    if r.size == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    o = np.lexsort((t, r))
    r, t, d_acc, d_busy = r[o], t[o], d_acc[o], d_busy[o]
    acc, busy = np.cumsum(d_acc), np.cumsum(d_busy)  # each rank's deltas sum to 0
    same = r[1:] == r[:-1]
    idle = same & (t[1:] > t[:-1]) & (acc[:-1] > 0) & (busy[:-1] == 0)
    pr, ps, pe = r[:-1][idle], t[:-1][idle], t[1:][idle]
    if pr.size == 0:
        return pr, ps, pe
    new = np.ones(pr.size, bool)  # merge pieces that touch (split only by a zero-length boundary)
    new[1:] = (pr[1:] != pr[:-1]) | (ps[1:] != pe[:-1])
    g = np.flatnonzero(new)
    last = np.r_[g[1:], pr.size] - 1
    return pr[g], ps[g], pe[last]


def _lanes(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Lane of each event (sorted by start) so that no two events of a lane overlap:
    the lowest lane free at its start (greedy interval partitioning, optimal)."""
    n = start.size
    if n < 2 or bool(np.all(start[1:] >= np.maximum.accumulate(end)[:-1])):
        return np.zeros(n, np.int64)
    lanes = np.zeros(n, np.int64)
    free_at: list[int] = []  # end of the last event of each lane
    for i, (s, e) in enumerate(zip(start.tolist(), end.tolist())):
        for k, f in enumerate(free_at):
            if f <= s:
                free_at[k] = e
                lanes[i] = k
                break
        else:
            lanes[i] = len(free_at)
            free_at.append(e)
    return lanes


class _Writer:
    """The trace's events; times relative to ``origin`` in float µs."""

    def __init__(self, origin: int) -> None:
        self.origin = origin
        self.events: list[dict[str, Any]] = []
        self.threads: dict[tuple[int, int], tuple[str, int]] = {}
        self.max_offset = 0

    def us(self, ns: int) -> float:
        off = ns - self.origin
        self.max_offset = max(self.max_offset, abs(off))
        return off / 1000

    def thread(self, pid: int, tid: int, name: str, sort: int) -> None:
        self.threads.setdefault((pid, tid), (name, sort))

    def complete(self, pid: int, tid: int, name: str, cat: str, start: int, end: int, args: dict[str, Any]) -> None:
        self.max_offset = max(self.max_offset, abs(end - start))
        self.events.append({"ph": "X", "pid": pid, "tid": tid, "name": name, "cat": cat, "ts": self.us(start),
                            "dur": (end - start) / 1000, "args": {"start_ns": start, "end_ns": end, **args}})

    def instant(self, pid: int, tid: int, name: str, cat: str, at: int, args: dict[str, Any]) -> None:
        self.events.append({"ph": "i", "s": "t", "pid": pid, "tid": tid, "name": name, "cat": cat,
                            "ts": self.us(at), "args": {"time_ns": at, **args}})


def _state_rows(run: _RunLike, led: Ledger) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Any], pa.Table | None]:
    """``rank, start, end, state`` of every accountable interval (and the intervals table)."""
    iv = led.intervals
    if iv is not None:
        return _col(iv, "rank"), _col(iv, "start_ns"), _col(iv, "end_ns"), _strings(iv, "state"), iv
    # events-only: the span of each rank, unattributed (the ledger's accountable time)
    ev = run.events
    spans = run.spans
    parts = []
    listed: set[int] = set()
    if spans is not None and spans.num_rows:
        parts.append(spans.select(["rank", "start_ns", "end_ns"]))
        listed = set(_col(spans, "rank").tolist())
    if ev is not None and ev.num_rows:
        g = ev.group_by("rank").aggregate([("start_ns", "min"), ("end_ns", "max")])
        g = g.filter(pc.invert(pc.is_in(g["rank"], pa.array(sorted(listed), g["rank"].type))))
        parts.append(pa.table({"rank": g["rank"], "start_ns": g["start_ns_min"], "end_ns": g["end_ns_max"]}))
    if not parts:
        z = np.zeros(0, np.int64)
        return z, z, z, [], None
    t = pa.concat_tables([p.cast(pa.schema([("rank", pa.int64()), ("start_ns", pa.int64()),
                                             ("end_ns", pa.int64())])) for p in parts]).sort_by("rank")
    return _col(t, "rank"), _col(t, "start_ns"), _col(t, "end_ns"), ["unattributed"] * t.num_rows, None


def _check_accountable(led: Ledger, rank: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
    want = dict(zip(_col(led.accountable, "rank").tolist(), _col(led.accountable, "accountable_ns").tolist()))
    got: dict[int, int] = {}
    for r, s, e in zip(rank.tolist(), start.tolist(), end.tolist()):
        got[r] = got.get(r, 0) + e - s
    bad = sorted(r for r in set(want) | set(got) if want.get(r, 0) != got.get(r, 0))
    if bad:
        r = bad[0]
        raise PauError(f"chrome_trace: rank {r}: the ledger's accountable time is {want.get(r, 0)} ns but the "
                       f"run's intervals hold {got.get(r, 0)} ns. Fix: give the ledger of this run "
                       "(run.ledger()), or none")


def _idle_causes(run: _RunLike, led: Ledger) -> pa.Table | None:
    """The ledger's idle as cause intervals (:func:`pau.figures.idle.idle_cause_intervals`), or
    None when no idle has a cause (then all of it is ``idle.other``: one idle track)."""
    assert run.events is not None
    if led.intervals is not None:
        got = idle_cause_intervals(run.events, run.host, lifecycle=run.lifecycle, ledger=led)
    else:
        got = idle_cause_intervals(run.events, run.host, span=run.spans)
    if not got.num_rows or pc.all(pc.equal(got["cause"], "idle.other")).as_py():
        return None
    return got


def _mark_rows(lc: pa.Table) -> list[dict[str, Any]]:
    """Lifecycle records shown as instants: failures, checkpoint saves, restores."""
    rec = lc["record"]
    if pa.types.is_dictionary(rec.type):
        rec = rec.cast(rec.type.value_type)
    sel = lc.filter(pc.is_in(rec, pa.array(["failure", "checkpoint_save", "restore"])))
    rows: list[dict[str, Any]] = sel.to_pylist()
    return rows


class ChromeTrace(TypedDict):
    """:func:`chrome_trace`: a Chrome Trace Event Format object (JSON-able). ``otherData``
    holds ``{"pau": {...}}``: the version, ``origin_ns``, ``exact_ts``, the ranks of the
    processes, the input's format and sources."""

    traceEvents: List[Dict[str, Any]]
    displayTimeUnit: str
    otherData: Dict[str, Any]


def chrome_trace(run: _RunLike, ledger: Ledger | None = None) -> ChromeTrace:
    """The run as a Chrome Trace Event Format object (a JSON-able dict).

    Parameters
    ----------
    run : pau.Run
        A run with device events, a lifecycle, or both.
    ledger : Ledger, optional
        ``run.ledger()`` when not given (e.g. pass ``run.ledger(as_of=...)``). It must
        be this run's: the state track is checked against its accountable time.

    Returns
    -------
    ChromeTrace
        A typed dict: ``{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {"pau": {...}}}``:
        one process per rank (``pid`` = 1 + the rank's position in rank order, named
        ``rank R``), the tracks of the module docstring (threads named by ``ph: "M"``
        ``thread_name`` events), complete events (``ph: "X"``) with ``ts``/``dur`` in float
        µs from ``otherData.pau.origin_ns`` and exact ``args.start_ns``/``args.end_ns``,
        and thread-scoped instants (``ph: "i"``) with ``args.time_ns``.

    Notes
    -----
    Per rank, the ``lifecycle state`` events sum exactly (from ``args``) to the ledger's
    time per state, the ``idle`` events (``cat = "idle"``) to its ``idle``, and the
    ``waiting for the slowest rank`` events to the rank's ``wait_ns`` of
    :func:`pau.figures.stragglers.stragglers`. When some idle has a cause
    (:func:`pau.figures.idle.idle_cause_intervals`), the ``idle`` track is replaced by one track
    per cause that occurs (:data:`IDLE_TRACKS`, ``cat = "idle"``, ``args.cause`` the
    cause of :data:`pau.figures.idle.CAUSES`): the sum over ``cat = "idle"`` stays the ledger's
    idle, and per rank and cause it is :func:`pau.figures.idle.idle_by_cause`'s. Lifecycle records of every rank (``rank = -1``) are shown on each
    rank of the trace, with ``args.rank = -1``.
    """
    _one_job(run.lifecycle, "the Chrome trace")  # one process per rank: two jobs' rank 0 would be one
    _one_job(ledger, "the Chrome trace")
    led = run.ledger() if ledger is None else ledger
    if not isinstance(led, Ledger):
        raise PauError(f"chrome_trace: ledger is a {type(led).__name__}, not a pau Ledger. Fix: pass "
                       "run.ledger(), or nothing")
    s_rank, s_start, s_end, s_state, iv = _state_rows(run, led)
    _check_accountable(led, s_rank, s_start, s_end)
    ev = run.events
    lc = run.lifecycle
    ranks_set = set(s_rank.tolist())
    starts = [s_start]
    if ev is not None and ev.num_rows:
        ranks_set |= set(np.unique(_col(ev, "rank")).tolist())
        starts.append(_col(ev, "start_ns"))
    if lc is not None and lc.num_rows:
        lc_rank = lc["rank"].fill_null(-1).to_numpy(zero_copy_only=False) if "rank" in lc.column_names else []
        ranks_set |= {int(r) for r in np.unique(lc_rank) if r >= 0}
        starts.append(_col(lc, "start_ns"))
    ranks = sorted(ranks_set)
    pid_of = {r: i + 1 for i, r in enumerate(ranks)}
    # the earliest instant written (ends, and a checkpoint's durable time, come after starts)
    origin = min((int(t.min()) for t in starts if t.size), default=0)
    w = _Writer(origin)
    _state_track(w, pid_of, (s_rank, s_start, s_end, s_state), iv)
    if ev is not None and led.has_events:
        _idle_tracks(w, pid_of, run, led, ev, (s_rank, s_start, s_end))
    if lc is not None and lc.num_rows:
        _wait_track(w, pid_of, lc)
        _mark_track(w, pid_of, ranks, lc)
    if ev is not None and ev.num_rows:
        _device_tracks(w, pid_of, ev)
    meta: list[dict[str, Any]] = []
    for r in ranks:
        pid = pid_of[r]
        meta.append({"ph": "M", "pid": pid, "tid": 0, "name": "process_name", "args": {"name": f"rank {r}"}})
        meta.append({"ph": "M", "pid": pid, "tid": 0, "name": "process_sort_index", "args": {"sort_index": pid}})
    for (pid, tid), (name, sort) in sorted(w.threads.items()):
        meta.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": name}})
        meta.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": sort}})
    exact = w.max_offset < EXACT_OFFSET_NS
    other = {"pau": {"version": CHROME_TRACE_VERSION, "origin_ns": origin, "exact_ts": exact,
                     "ranks": {str(pid_of[r]): r for r in ranks}, "format": run.metadata.get("format"),
                     "sources": [str(s) for s in run.metadata.get("sources", [])]}}
    return {"traceEvents": meta + w.events, "displayTimeUnit": "ns", "otherData": other}


def _state_track(w: _Writer, pid_of: dict[int, int], states: tuple[np.ndarray, np.ndarray, np.ndarray, list[Any]],
                 iv: pa.Table | None) -> None:
    """The ``lifecycle state`` track: every accountable interval with its state (and
    attempt, step, cause when the ledger has intervals)."""
    s_rank, s_start, s_end, s_state = states
    attempt = step = cause = None
    if iv is not None:
        attempt, step = iv["attempt"].to_pylist(), iv["step"].to_pylist()
        cause = _strings(iv, "cause")
    for i, (r, s, e, st) in enumerate(zip(s_rank.tolist(), s_start.tolist(), s_end.tolist(), s_state)):
        pid = pid_of[r]
        w.thread(pid, _TID_STATE, "lifecycle state", 0)
        args: dict[str, Any] = {"state": st}
        if attempt is not None and step is not None and cause is not None:
            if attempt[i] is not None:
                args["attempt"] = attempt[i]
            if step[i] is not None:
                args["step"] = step[i]
            if cause[i] is not None:
                args["cause"] = cause[i]
        w.complete(pid, _TID_STATE, st, "state", s, e, args)


def _idle_tracks(w: _Writer, pid_of: dict[int, int], run: _RunLike, led: Ledger, ev: pa.Table,
                 acc: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    """Idle: accountable time with no device event, one track per cause when
    :mod:`pau.figures.idle` finds one (else one track)."""
    by_cause = _idle_causes(run, led)
    if by_cause is None:
        i_rank, i_start, i_end = _union_pieces(_col(ev, "rank").astype(np.int64), _col(ev, "start_ns"),
                                               _col(ev, "end_ns"), *acc)
        for r, s, e in zip(i_rank.tolist(), i_start.tolist(), i_end.tolist()):
            w.thread(pid_of[r], _TID_IDLE, "idle", 1)
            w.complete(pid_of[r], _TID_IDLE, "idle", "idle", s, e, {})
        return
    for r, s, e, c in zip(*(by_cause[n].to_pylist() for n in ("rank", "start_ns", "end_ns", "cause"))):
        tid, label = _TID_IDLE_CAUSE[c], IDLE_TRACKS[c]
        w.thread(pid_of[r], tid, label, 1)
        w.complete(pid_of[r], tid, label, "idle", s, e, {"cause": c})


def _wait_track(w: _Writer, pid_of: dict[int, int], lc: pa.Table) -> None:
    """The stragglers' waits, when every step record names its rank."""
    rec = lc["record"].cast(pa.string()) if pa.types.is_dictionary(lc["record"].type) else lc["record"]
    steps = lc.filter(pc.fill_null(pc.equal(rec, "step"), False))
    if not steps.num_rows or not pc.all(pc.greater_equal(steps["rank"], 0)).as_py():
        return
    got = stragglers(lc, on_invalid="quarantine")
    stt = (got.result if isinstance(got, Quarantined) else got).table
    has_attempt = "attempt" in stt.column_names
    a = stt["attempt"].to_pylist() if has_attempt else [None] * stt.num_rows
    k, rr, end = stt["step"].to_pylist(), stt["rank"].to_pylist(), stt["end_ns"].to_pylist()
    wait, slow = stt["wait_ns"].to_pylist(), stt["slowest"].to_pylist()
    slowest = {(a[j], k[j]): rr[j] for j in range(stt.num_rows) if slow[j]}
    for j in range(stt.num_rows):
        if wait[j] > 0 and rr[j] in pid_of:
            who = slowest[(a[j], k[j])]
            pid = pid_of[rr[j]]
            w.thread(pid, _TID_WAIT, "waiting for the slowest rank", 2)
            wargs: dict[str, Any] = {"step": k[j], "slowest_rank": who, "wait_ns": wait[j]}
            if has_attempt:
                wargs["attempt"] = a[j]
            w.complete(pid, _TID_WAIT, f"wait for rank {who}", "wait", end[j], end[j] + wait[j], wargs)


def _mark_track(w: _Writer, pid_of: dict[int, int], ranks: list[int], lc: pa.Table) -> None:
    """Failures, checkpoints (and their durable instants) and restores as instants; a
    record of every rank (``rank = -1``) on each rank."""
    for m in _mark_rows(lc):
        targets = ranks if m.get("rank") is None or m["rank"] == -1 else [m["rank"]]
        rec_name = m["record"]
        if rec_name == "failure":
            marks = [(f"failure: {m.get('kind') or 'unknown cause'}", "failure", m["start_ns"])]
        elif rec_name == "restore":
            marks = [(f"restore step {m.get('step')}" + ("" if m.get("ok") is not False else " (failed)"),
                      "restore", m["start_ns"])]
        else:
            marks = [(f"checkpoint step {m.get('step')}" + ("" if m.get("ok") is not False else " (not ok)"),
                      "checkpoint", m["start_ns"])]
            if m.get("durable_ns") is not None:
                marks.append((f"checkpoint step {m.get('step')} durable", "checkpoint", m["durable_ns"]))
        margs = {k_: v for k_, v in m.items() if v is not None and k_ not in ("record", "start_ns")}
        margs["record"] = rec_name
        for r in targets:
            if r not in pid_of:
                continue
            w.thread(pid_of[r], _TID_MARKS, "lifecycle events", 3)
            for name, cat, at in marks:
                w.instant(pid_of[r], _TID_MARKS, name, cat, at, margs)


def _device_tracks(w: _Writer, pid_of: dict[int, int], ev: pa.Table) -> None:
    """The device events, one track per stream (or kind), lanes where they overlap."""
    e_rank = _col(ev, "rank").astype(np.int64)
    e_start, e_end = _col(ev, "start_ns"), _col(ev, "end_ns")
    kinds = _strings(ev, "kind")
    by_stream = "stream" in ev.column_names and ev["stream"].null_count < ev.num_rows
    if by_stream:
        key = ev["stream"].fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    else:
        kind_codes = {k_: i for i, k_ in enumerate(sorted(set(kinds)))}
        key = np.asarray([kind_codes[k_] for k_ in kinds], np.int64)
    names = _strings(ev, "name") if "name" in ev.column_names else [None] * ev.num_rows
    extra = [c for c in ("step", "bytes", "attempt") if c in ev.column_names]
    extra_vals = {c: ev[c].to_pylist() for c in extra}
    stream_vals = ev["stream"].to_pylist() if "stream" in ev.column_names else None
    order = np.lexsort((e_end, e_start, key, e_rank))
    cut = np.flatnonzero(np.r_[True, (e_rank[order][1:] != e_rank[order][:-1])
                               | (key[order][1:] != key[order][:-1]), True])
    next_tid: dict[int, int] = {}
    for lo, hi in zip(cut[:-1].tolist(), cut[1:].tolist()):
        rows = order[lo:hi]
        pid = pid_of[int(e_rank[rows[0]])]
        label = (f"stream {int(key[rows[0]])}" if by_stream else f"kind {kinds[int(rows[0])]}")
        lanes = _lanes(e_start[rows], e_end[rows])
        base = next_tid.get(pid, _TID_DEVICE)
        next_tid[pid] = base + int(lanes.max()) + 1
        for lane in range(int(lanes.max()) + 1):
            w.thread(pid, base + lane, label if lane == 0 else f"{label} (overlap {lane})", 10 + base + lane)
        for j, lane in zip(rows.tolist(), lanes.tolist()):
            eargs: dict[str, Any] = {"kind": kinds[j]}
            if stream_vals is not None and stream_vals[j] is not None:
                eargs["stream"] = stream_vals[j]
            for c in extra:
                if extra_vals[c][j] is not None:
                    eargs[c] = extra_vals[c][j]
            nm = names[j]
            w.complete(pid, base + lane, kinds[j] if nm is None else nm, kinds[j], int(e_start[j]),
                       int(e_end[j]), eargs)


def write_chrome_trace(run: _RunLike, path: str | os.PathLike[str], ledger: Ledger | None = None, *,
                       overwrite: bool = False) -> str:
    """Write :func:`chrome_trace` of ``run`` to ``path`` (gzip-compressed when it ends in
    ``.gz``; Perfetto UI and ``chrome://tracing`` open both). An existing file is
    replaced only with ``overwrite=True``. Returns the path."""
    out = os.fspath(path)
    if os.path.isdir(out):
        raise PauError(f"chrome trace: {out!r} is a folder. Fix: give a file name, e.g. trace.json")
    if os.path.exists(out) and not overwrite:
        raise PauError(f"chrome trace: {out!r} exists. Fix: pass overwrite=True (pau convert --overwrite) "
                       "or another file name")
    doc = chrome_trace(run, ledger)
    opener: Any = gzip.open if out.endswith(".gz") else open
    text = json.dumps(doc, allow_nan=False, separators=(",", ":"))  # one C call: json.dump writes in pieces
    with opener(out, "wt", encoding="utf-8") as f:
        f.write(text)
        f.write("\n")
    return out
