"""pau.core: the public API.

Conventions (DESIGN §1), stated once here and in ``csrc/core/sweep.hpp``:

* Time is ``int64`` nanoseconds and every interval is half-open ``[start_ns, end_ns)``:
  two intervals that touch (``a.end_ns == b.start_ns``) do not overlap, and a
  zero-length event covers no time.
* Accelerator time is counted per rank (one rank = one accelerator), exactly, in
  integers. Every classification **conserves** time: for each rank the labelled
  durations sum to the rank's accounted span.
* Tables in and out are ``pyarrow.Table``. Inputs may also be anything with the Arrow
  PyCapsule stream interface, a pandas ``DataFrame`` or a ``dict`` of numpy arrays.
* Bad rows raise a :mod:`pau.errors` exception naming column, row and fix; with
  ``on_invalid="quarantine"`` they are returned beside the result instead, with a
  reason per row, and counted.

Output tables use ``dictionary<int8, string>`` for label columns (``activity``,
``state``, ``kinds``): cheap at scale, and compared like strings by pyarrow.compute.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np
import pyarrow as pa

from . import _core
from ._search import lower_bound
from ._input import (
    KINDS,
    REASONS,
    _column,
    as_table,
    event_columns,
    raise_first,
    rank_column,
    row_reasons,
    time_column,
)
from .errors import InvalidWindowsError, PauError, UnsortedInputError

__all__ = [
    "KINDS",
    "ACTIVITIES",
    "STATES",
    "DEFAULT_PRIORITY",
    "Ledger",
    "Overlap",
    "Quarantined",
    "attribute",
    "classify",
    "classify_dataset",
    "ledger",
    "overlap",
    "requests",
    "RequestLedger",
    "OUTCOMES",
    "cost",
    "checkpoint_advice",
    "checkpoint_interval",
    "stragglers",
    "compare",
    "interference",
    "colocated",
]

from ._vocab import ACTIVITIES, DEFAULT_PRIORITY, STATES, label  # noqa: E402

_IDLE = len(KINDS)
_COMPUTE_BIT = 1 << KINDS.index("compute")
_COMM_BIT = 1 << KINDS.index("communication")
_UNSORTED = 5
_MASK_NAMES = tuple(
    "+".join(k for i, k in enumerate(KINDS) if m >> i & 1) or "idle" for m in range(1 << len(KINDS))
)


@functools.lru_cache(maxsize=64)
def _activity_of_mask_cached(priority: tuple) -> np.ndarray:
    out = _activity_of_mask_uncached(priority)
    out.setflags(write=False)
    return out


def _activity_of_mask(priority: Sequence[str] | None) -> np.ndarray:
    """For each of the 64 masks, the ACTIVITIES index of the kind that wins it."""
    return _activity_of_mask_cached(tuple(DEFAULT_PRIORITY if priority is None else priority))


def _activity_of_mask_uncached(priority: Sequence[str] | None) -> np.ndarray:
    """For each of the 64 masks, the ACTIVITIES index of the kind that wins it."""
    prio = tuple(DEFAULT_PRIORITY if priority is None else priority)
    if sorted(prio) != sorted(KINDS):
        raise PauError(
            f"priority: expected an ordering of all of {', '.join(KINDS)} (highest first), "
            f"got {list(prio)}"
        )
    out = np.full(1 << len(KINDS), _IDLE, dtype=np.int8)
    for m in range(1, 1 << len(KINDS)):
        out[m] = next(KINDS.index(k) for k in prio if m >> KINDS.index(k) & 1)
    return out


# ---------------------------------------------------------------------------
# windows and spans


@dataclass
class _Plan:
    """Everything the sweep needs besides the events: windows and spans."""

    mode: str = "none"  # none | list | bucket
    bucket: int = 0
    win_rank: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    win_start: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    win_end: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    win_row: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    win_id: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    span_rank: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    span_start: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    span_end: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))

    def sweep(self) -> _core.Sweep:
        try:
            return _core.Sweep(self.win_rank, self.win_start, self.win_end, self.win_row,
                               self.span_rank, self.span_start, self.span_end, self.bucket)
        except ValueError as exc:
            raise InvalidWindowsError(str(exc)) from None


def _interval_columns(obj: Any, what: str):
    t = as_table(obj, what)
    for name in ("rank", "start_ns", "end_ns"):
        col = _column(t, name, what)
        if col.null_count:
            row = int(np.flatnonzero(np.asarray(col.is_null()))[0])
            raise InvalidWindowsError(f"{what}: column '{name}', row {row}: null. Fix: every "
                                      f"{what} row needs rank, start_ns and end_ns")
    r = rank_column(_column(t, "rank", what), what)
    s = time_column(_column(t, "start_ns", what), "start_ns", what)
    e = time_column(_column(t, "end_ns", what), "end_ns", what)
    bad = np.flatnonzero((e < s) | (s < 0))
    if bad.size:
        raise InvalidWindowsError(
            f"{what}: row {int(bad[0])}: start_ns={int(s[bad[0]])}, end_ns={int(e[bad[0]])}. "
            f"Fix: {what} need 0 <= start_ns <= end_ns"
        )
    return t, np.ascontiguousarray(r), np.ascontiguousarray(s), np.ascontiguousarray(e)


def _plan(windows: Any, span: Any) -> _Plan:
    plan = _Plan()
    if windows is not None:
        if isinstance(windows, (int, np.integer)) and not isinstance(windows, bool):
            if windows <= 0:
                raise InvalidWindowsError(f"windows: a bucket width must be > 0 ns, got {windows}")
            plan.mode, plan.bucket = "bucket", int(windows)
        else:
            t, r, s, e = _interval_columns(windows, "windows")
            if (r < -1).any():
                row = int(np.flatnonzero(r < -1)[0])
                raise InvalidWindowsError(f"windows: column 'rank', row {row}: {r[row]}. Fix: "
                                          "ranks are >= 0, or -1 for a window of every rank")
            ids = (np.arange(len(r), dtype=np.int64) if "window" not in t.column_names
                   else time_column(_column(t, "window", "windows"), "window", "windows"))
            if not isinstance(ids, np.ndarray):
                raise InvalidWindowsError("windows: column 'window' has nulls. Fix: give every "
                                          "window an id, or drop the column to number them by row")
            # Window indices follow start order, so output comes out in time order.
            order = np.lexsort((e, s))
            plan.mode = "list"
            plan.win_rank, plan.win_start, plan.win_end = r[order], s[order], e[order]
            plan.win_row, plan.win_id = order.astype(np.int64), np.asarray(ids, np.int64)[order]
    if span is not None:
        _, r, s, e = _interval_columns(span, "span")
        plan.span_rank, plan.span_start, plan.span_end = r, s, e
    return plan


# ---------------------------------------------------------------------------
# running the sweep


class Quarantined(NamedTuple):
    """What ``on_invalid="quarantine"`` returns: the result and the rows set aside.

    ``quarantine`` has the columns that were read (all of a table's; the event
    columns of a streamed file) plus ``row`` (0-based row in the input) and ``reason``.
    """

    result: Any
    quarantine: pa.Table


class _Reorder(Exception):
    """The input is not start-ordered within a rank; the caller re-feeds in order."""


def _check_on_invalid(on_invalid: str) -> None:
    if on_invalid not in ("raise", "quarantine"):
        raise PauError(f"on_invalid: expected 'raise' or 'quarantine', got {on_invalid!r}")


def _feed(sweep, *args):
    """Sweep.feed; windows are checked when a rank is first met, so their errors
    surface here."""
    try:
        return sweep.feed(*args)
    except ValueError as exc:
        if str(exc).startswith("windows:"):
            raise InvalidWindowsError(str(exc)) from None
        raise


def _split_invalid(batch, row0: int, table: str = "events"):
    """(usable rows, quarantined rows or None) of one batch."""
    reasons = row_reasons(batch, table)
    bad = reasons != 0
    if not bad.any():
        return batch, None
    idx = np.flatnonzero(bad)
    q = batch.take(pa.array(idx))
    q = q.append_column("row", pa.array(idx + row0, pa.int64()))
    q = q.append_column("reason", pa.array(np.asarray(REASONS, dtype=object)[reasons[idx]], pa.string()))
    if isinstance(q, pa.RecordBatch):
        q = pa.Table.from_batches([q])
    return batch.filter(pa.array(~bad)), q


def _feed_batches(sweep, batches: Iterable, on_invalid: str, quarantine: list, *,
                  reorder_ok: bool, source: str = "events") -> int:
    """Feed batches into the sweep; returns the number of input rows seen."""
    row0 = 0
    for batch in batches:
        n = batch.num_rows
        kept = None  # input positions of the rows left after quarantine
        if on_invalid == "quarantine":
            batch, q = _split_invalid(batch, row0)
            if q is not None:
                quarantine.append(q)
                kept = np.setdiff1d(np.arange(n), np.asarray(q["row"]) - row0)
        cols = event_columns(batch, row0=row0)
        if cols is None:
            raise_first(batch, row_reasons(batch), row0)
        code, row = _feed(sweep, cols.rank, cols.start, cols.end, cols.kind.indices, cols.kind.codes)
        if code == _UNSORTED:
            if reorder_ok:
                raise _Reorder()
            raise UnsortedInputError(
                f"{source}: column 'start_ns', row {row0 + (row if kept is None else int(kept[row]))}: "
                f"start_ns decreases within rank "
                f"{int(cols.rank[row])}. Fix: streamed sources must be ordered by start_ns within "
                "each rank (pau.synth and pau's writers do so); sort the file by (rank, start_ns), "
                "or load it and call pau.core.classify, which sorts."
            )
        if code != 0:
            raise_first(batch, row_reasons(batch), row0)
        row0 += n
    return row0


#: In-memory inputs at least this long are swept on several threads (by rank).
PARALLEL_MIN_ROWS = 500_000


def _parts(threads: int | None, rows: int, minimum: int = PARALLEL_MIN_ROWS) -> int:
    """Threads to use: `threads`, or with None every core (up to 8) from `minimum`
    rows of work on, else one."""
    if threads is None:
        return 1 if rows < minimum else max(1, min(os.cpu_count() or 1, 8))
    if threads < 1:
        raise PauError(f"threads: expected a positive number, got {threads}")
    return int(threads)


def _merge_hists(hists: list) -> dict:
    if len(hists) == 1:
        return hists[0]
    return {k: np.concatenate([h[k] for h in hists]) for k in hists[0]}


def _rank_split(cols: list, parts: int):
    """Split input into `parts` row ranges at rank boundaries, assuming it is sorted
    by rank, without reading every row: each cut at the rank boundary nearest an
    equal share of the rows (fewer parts where two cuts meet).

    Returns, per part, its pieces ``[(batch index, row slice)]`` and its rank range,
    or None when a sample of the rank column shows it is not sorted (then the input
    is swept on one thread). The assumption is checked for free afterwards: the
    parts' sweeps are valid together exactly when no rank shows up in two of them
    (:func:`_sweep_parts` checks, and sweeps again on one thread otherwise)."""
    if not cols:
        return None
    offsets = np.cumsum([0] + [c.rows for c in cols])
    n = int(offsets[-1])
    if n < parts:
        return None
    if len(cols) == 1:  # one batch: the same steps, as array operations
        r = cols[0].rank
        sample = r[np.minimum(n - 1, (np.arange(65) * n) // 64)]
        if (sample[1:] < sample[:-1]).any():
            return None
        at = (np.arange(1, parts) * n) // parts
        lows = np.searchsorted(r, r[at], "left")  # r assumed sorted
        highs = np.searchsorted(r, r[at], "right")
        cuts = sorted({0, n} | set(np.where(at - lows <= highs - at, lows, highs).tolist()))
        return [([(0, slice(lo, hi))], int(r[lo]), int(r[hi - 1])) for lo, hi in zip(cuts[:-1], cuts[1:])
                if hi > lo]

    def rank_at(i: int) -> int:
        b = int(np.searchsorted(offsets, i, "right")) - 1
        return int(cols[b].rank[i - offsets[b]])

    sample = [rank_at(min(n - 1, (j * n) // 64)) for j in range(65)]
    if any(x > y for x, y in zip(sample, sample[1:])):
        return None

    def nearest_boundary(i: int) -> int:  # the rank boundary nearest row i, ranks (assumed) sorted
        v = rank_at(i)
        lo, hi = lower_bound(n, rank_at, v), lower_bound(n, rank_at, v + 1)
        return lo if i - lo <= hi - i else hi

    cuts = sorted({0, n} | {nearest_boundary((j * n) // parts) for j in range(1, parts)})
    out = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        if hi <= lo:
            continue
        pieces = []
        for b in range(len(cols)):
            x, z = max(lo, offsets[b]), min(hi, offsets[b + 1])
            if x < z:
                pieces.append((b, slice(int(x - offsets[b]), int(z - offsets[b]))))
        out.append((pieces, rank_at(lo), rank_at(hi - 1)))
    return out


_POOL = (None, 0)


def _pool():
    """One pool of sweep threads per process (the core releases the GIL); kept, as
    starting threads on every call costs as much as sweeping 100k events. A forked
    child gets a pool of its own: its parent's threads do not exist there."""
    global _POOL
    pool, pid = _POOL
    if pool is None or pid != os.getpid():
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=max(2, min(os.cpu_count() or 1, 8)),
                                  thread_name_prefix="pau-sweep")
        _POOL = (pool, os.getpid())
    return pool


def _run_parts(fn, jobs: list) -> list:
    """``[fn(*job) for job in jobs]``: the first job on this thread, the others on the
    pool (the native code releases the GIL), so one thread fewer is woken; all on
    this thread when it is one of the pool's (never wait on the pool from inside)."""
    if len(jobs) <= 1 or threading.current_thread().name.startswith("pau-sweep"):
        return [fn(*job) for job in jobs]
    later = [_pool().submit(fn, *job) for job in jobs[1:]]
    return [fn(*jobs[0])] + [f.result() for f in later]


def _sweep_parts(plan: _Plan, cols: list, parts: int, order=None):
    """Sweep column batches, on several threads when that pays (the core releases
    the GIL). Input sorted by rank is split into row ranges at rank boundaries;
    other input runs on one thread. Returns the merged histogram, or (code, row,
    batch index) of the first problem met."""

    def run(pieces, span_sel=None):
        p = plan if span_sel is None else dataclasses.replace(
            plan, span_rank=plan.span_rank[span_sel], span_start=plan.span_start[span_sel],
            span_end=plan.span_end[span_sel])
        sweep = p.sweep()
        for b, sl in pieces:
            c = cols[b]
            code, row = _feed(sweep, c.rank[sl], c.start[sl], c.end[sl], c.kind.indices[sl], c.kind.codes,
                                   None if order is None else order[sl])
            if code != 0:
                return (code, row + (sl.start or 0), b)
        return sweep.finish()

    whole = [(b, slice(0, c.rows)) for b, c in enumerate(cols)]
    split = _rank_split(cols, parts) if (parts > 1 and order is None) else None
    if split is None or len(split) == 1:
        results = [run(whole)]
    else:
        sr = plan.span_rank
        taken = np.zeros(sr.size, bool)
        jobs = []
        for pieces, lo, hi in split:
            sel = (sr >= lo) & (sr <= hi)
            taken |= sel
            jobs.append((pieces, sel))
        jobs[0] = (jobs[0][0], jobs[0][1] | ~taken)  # spans of ranks without events
        results = _run_parts(run, jobs)
        if not any(isinstance(r, tuple) for r in results):
            seen = np.concatenate([r["span_rank"] for r in results])
            if np.unique(seen).size != seen.size:
                # A rank in two parts: the rank column was not sorted after all.
                results = [run(whole)]
    problems = [r for r in results if isinstance(r, tuple)]
    if problems:
        return min(problems, key=lambda p: (p[2], p[1]))
    return _merge_hists(results)


def _hist_of_table(table: pa.Table, plan: _Plan, on_invalid: str, threads: int | None = None):
    """Sweep an in-memory table; returns (histogram, quarantine table or None, rows)."""
    quarantine, rows = None, table.num_rows
    if on_invalid == "quarantine":
        table, quarantine = _split_invalid(table, 0)
    batches = table.to_batches()
    cols, row0 = [], 0
    for batch in batches:
        c = event_columns(batch, row0=row0)
        if c is None:
            raise_first(batch, row_reasons(batch), row0)
        cols.append(c)
        row0 += batch.num_rows
    parts = _parts(threads, table.num_rows)
    out = _sweep_parts(plan, cols, parts)
    if isinstance(out, tuple) and out[0] == _UNSORTED:
        # Unsorted within a rank: sweep once more through a (rank, start) permutation.
        cols = [event_columns(table.combine_chunks())]
        order = _core.order_by_rank_start(cols[0].rank, cols[0].start)
        out = _sweep_parts(plan, cols, parts, order)
        batches = [table]
    if isinstance(out, tuple):
        b = out[2]
        raise_first(batches[b], row_reasons(batches[b]), sum(x.num_rows for x in batches[:b]))
    return out, quarantine, rows


# ---------------------------------------------------------------------------
# shaping the histogram into tables


def _slots(rank: np.ndarray, window: np.ndarray):
    """Unique (rank, window) pairs in order and each input pair's slot."""
    if rank.size == 0:
        return rank.astype(np.int32), window.astype(np.int64), np.empty(0, np.int64)
    order = np.lexsort((window, rank))
    r, w = rank[order], window[order]
    new = np.empty(r.size, bool)
    new[0] = True
    new[1:] = (r[1:] != r[:-1]) | (w[1:] != w[:-1])
    slot_sorted = np.cumsum(new) - 1
    inverse = np.empty(r.size, np.int64)
    inverse[order] = slot_sorted
    return r[new], w[new], inverse


def _slot_frame(hist: dict, plan: _Plan):
    """Slots of the output and the slot of every histogram row.

    Every accounted rank gets a slot for each of its windows (even one the span
    never reaches: zeros), plus a slot for time outside all windows when it has
    some. Without windows the one slot per rank is the whole span.
    """
    h_rank = hist["rank"]
    h_win = hist["window"]
    ranks = np.unique(hist["span_rank"])
    if plan.mode == "list":
        own = plan.win_rank >= 0
        own_idx = np.flatnonzero(own & np.isin(plan.win_rank, ranks))
        glob_idx = np.flatnonzero(~own)
        exp_rank = np.concatenate([plan.win_rank[own_idx], np.repeat(ranks, glob_idx.size)])
        exp_win = np.concatenate([own_idx, np.tile(glob_idx, ranks.size)]).astype(np.int64)
    elif plan.mode == "none":
        exp_rank, exp_win = ranks, np.full(ranks.size, -1, np.int64)
    else:
        exp_rank, exp_win = np.empty(0, np.int32), np.empty(0, np.int64)
    all_rank = np.concatenate([exp_rank.astype(np.int32), h_rank])
    all_win = np.concatenate([exp_win, h_win])
    s_rank, s_win, inverse = _slots(all_rank, all_win)
    return s_rank, s_win, inverse[exp_rank.size:]


def _window_column(plan: _Plan, s_win: np.ndarray) -> pa.Array:
    if plan.mode == "bucket":
        return pa.array(s_win, pa.int64())
    ids = np.where(s_win >= 0, plan.win_id[np.maximum(s_win, 0)] if plan.win_id.size else 0, 0)
    return pa.array(ids, pa.int64(), mask=s_win < 0)


def _exclusive(hist: dict, plan: _Plan, priority) -> pa.Table:
    act = _activity_of_mask(priority)
    if plan.mode == "none":  # one slot per rank (every rank has a span)
        s_rank = np.sort(hist["span_rank"])
        slot = np.searchsorted(s_rank, hist["rank"])
    else:
        s_rank, s_win, slot = _slot_frame(hist, plan)
    n_act = len(ACTIVITIES)
    mat = np.zeros((s_rank.size, n_act), np.int64)
    np.add.at(mat, (slot, act[hist["mask"]]), hist["duration"])
    cols = {"rank": pa.array(np.repeat(s_rank, n_act), pa.int32())}
    if plan.mode != "none":
        w = _window_column(plan, s_win)
        cols["window"] = w.take(pa.array(np.repeat(np.arange(s_rank.size), n_act)))
    cols["activity"] = label(ACTIVITIES, np.tile(np.arange(n_act), s_rank.size))
    cols["duration_ns"] = pa.array(mat.ravel(), pa.int64())
    return pa.table(cols)


def _spans_table(hist: dict) -> pa.Table:
    order = np.argsort(hist["span_rank"], kind="stable")
    return pa.table({
        "rank": pa.array(hist["span_rank"][order], pa.int32()),
        "start_ns": pa.array(hist["span_start"][order], pa.int64()),
        "end_ns": pa.array(hist["span_end"][order], pa.int64()),
    })


def _with_counts(table: pa.Table, rows: int, quarantined: int) -> pa.Table:
    meta = dict(table.schema.metadata or {})
    meta[b"pau.rows"] = str(rows).encode()
    meta[b"pau.quarantined_rows"] = str(quarantined).encode()
    return table.replace_schema_metadata(meta)


def _result(table: pa.Table, quarantine, on_invalid: str, source_schema=None):
    if on_invalid != "quarantine":
        return table
    if quarantine is None:
        empty = {"row": pa.array([], pa.int64()), "reason": pa.array([], pa.string())}
        quarantine = pa.table(empty)
    return Quarantined(table, quarantine)


# ---------------------------------------------------------------------------
# public API


def classify(
    events: Any,
    *,
    windows: Any = None,
    span: Any = None,
    priority: Sequence[str] | None = None,
    on_invalid: str = "raise",
    threads: int | None = None,
):
    """Exclusive accelerator time per rank and activity.

    At every instant of a rank's span the highest-priority kind running wins; time
    with no event is ``idle``. So communication hidden under compute counts as
    compute, and ``communication`` here is *exposed* communication.

    Parameters
    ----------
    events : table-like
        Columns ``rank`` (int), ``start_ns``, ``end_ns`` (int64 ns or ``timestamp``),
        ``kind`` (string or dictionary of strings, one of :data:`KINDS`). Any order;
        overlapping, touching and zero-length events are allowed. Other columns
        (``stream``, ``name``...) are ignored.
    windows : table-like or int, optional
        Either intervals ``rank, start_ns, end_ns`` (optional ``window`` id, default
        the row number; ``rank = -1`` means every rank), disjoint within a rank, or
        an int: fixed buckets of that many ns, ``[k*w, (k+1)*w)``, named by their
        start. Every window of a rank gets a row per activity (zeros included); time
        of the span outside every window comes in rows whose ``window`` is null, so
        the windows of a rank always sum to its whole span.
    span : table-like, optional
        ``rank, start_ns, end_ns``: the accounted span per rank. Events are clipped to
        it and uncovered time is idle; a rank listed here with no events is all idle.
        Ranks without a row get ``[first event start, last event end)``.
    priority : sequence of str, optional
        All of :data:`KINDS`, highest first. Default :data:`DEFAULT_PRIORITY`.
    on_invalid : {"raise", "quarantine"}
        ``"raise"`` (default) raises :class:`pau.errors.InvalidRowError` on the
        first bad row. ``"quarantine"`` classifies the usable rows and returns
        :class:`Quarantined` ``(table, quarantine)``.
    threads : int, optional
        Threads to sweep on. Input sorted by rank is split into row ranges at rank
        boundaries, one per thread; other input is swept on one thread. Default: one
        below :data:`PARALLEL_MIN_ROWS` rows, else one per core (up to 8). The result
        does not depend on it.

    Returns
    -------
    pyarrow.Table
        ``rank, [window,] activity, duration_ns``, one row per rank (and window) and
        activity in :data:`ACTIVITIES` order. Schema metadata ``pau.rows`` and
        ``pau.quarantined_rows`` count the input.
    """
    _check_on_invalid(on_invalid)
    plan = _plan(windows, span)
    table = as_table(events, "events")
    hist, quarantine, rows = _hist_of_table(table, plan, on_invalid, threads)
    out = _exclusive(hist, plan, priority)
    nq = 0 if quarantine is None else quarantine.num_rows
    return _result(_with_counts(out, rows, nq), quarantine, on_invalid)


@dataclass(frozen=True)
class Overlap:
    """The overlap matrix and the communication/compute overlap ratio.

    ``matrix``: ``rank, [window,] kinds, duration_ns`` — time during which exactly
    the kinds named (joined with ``+`` in :data:`KINDS` order; ``idle`` for none)
    were running; only non-zero rows. Sums to each rank's span.

    ``ratio``: ``rank, [window,] communication_ns, overlap_ns, ratio`` with
    ``overlap_ns = |communication ∩ compute|`` and ``ratio = overlap_ns /
    communication_ns``, null when a rank has no communication (never NaN).
    """

    matrix: pa.Table
    ratio: pa.Table


def _overlap_tables(hist: dict, plan: _Plan) -> Overlap:
    s_rank, s_win, slot = _slot_frame(hist, plan)
    order = np.lexsort((hist["mask"], slot))
    m = hist["mask"][order]
    cols = {"rank": pa.array(hist["rank"][order], pa.int32())}
    win = _window_column(plan, s_win) if plan.mode != "none" else None
    if win is not None:
        cols["window"] = win.take(pa.array(slot[order]))
    cols["kinds"] = pa.DictionaryArray.from_arrays(pa.array(m.astype(np.int8)),
                                                   pa.array(_MASK_NAMES, pa.string()))
    cols["duration_ns"] = pa.array(hist["duration"][order], pa.int64())
    matrix = pa.table(cols)

    d = hist["duration"]
    comm = np.zeros(s_rank.size, np.int64)
    both = np.zeros(s_rank.size, np.int64)
    has_comm = (hist["mask"] & _COMM_BIT) != 0
    np.add.at(comm, slot[has_comm], d[has_comm])
    has_both = has_comm & ((hist["mask"] & _COMPUTE_BIT) != 0)
    np.add.at(both, slot[has_both], d[has_both])
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = both / comm
    rcols = {"rank": pa.array(s_rank, pa.int32())}
    if win is not None:
        rcols["window"] = win
    rcols["communication_ns"] = pa.array(comm)
    rcols["overlap_ns"] = pa.array(both)
    rcols["ratio"] = pa.array(ratio, pa.float64(), mask=comm == 0)
    return Overlap(matrix, pa.table(rcols))


def overlap(events: Any, *, windows: Any = None, span: Any = None, on_invalid: str = "raise",
            threads: int | None = None):
    """The full overlap matrix per rank, and the communication/compute overlap ratio.

    Parameters are those of :func:`classify`. Returns :class:`Overlap` (or
    :class:`Quarantined` wrapping it with ``on_invalid="quarantine"``).
    """
    _check_on_invalid(on_invalid)
    plan = _plan(windows, span)
    hist, quarantine, _ = _hist_of_table(as_table(events, "events"), plan, on_invalid, threads)
    return _result(_overlap_tables(hist, plan), quarantine, on_invalid)


def _is_path_source(obj: Any) -> bool:
    return isinstance(obj, (str, os.PathLike)) or (
        isinstance(obj, (list, tuple)) and bool(obj) and all(isinstance(x, (str, os.PathLike)) for x in obj))


def _in_memory(source: Any) -> bool:
    """An in-memory table-like input (not a path nor a stream of batches)."""
    return not _is_path_source(source) and not isinstance(source, pa.RecordBatchReader) and not (
        hasattr(source, "__arrow_c_stream__") and not isinstance(source, (pa.Table, pa.RecordBatch)))


def _hist_of_source(source: Any, plan: _Plan, on_invalid: str, *, batch_rows=None, progress=None,
                    workers=None, memory_budget=None):
    """Sweep a Parquet path (streamed, or one partition per thread for pau's
    rank-partitioned layout) or an in-memory table-like input."""
    if _is_path_source(source):
        from .distributed import check_job_ranks, partitions

        check_job_ranks(partitions(source))
    if _rank_partitioned(source, batch_rows, workers):
        from .distributed import merged_hist

        return merged_hist(source, plan, workers=workers, on_invalid=on_invalid, progress=progress,
                           memory_budget=memory_budget)
    if _in_memory(source):
        return _hist_of_table(as_table(source, "events"), plan, on_invalid)
    from . import io as _io

    read_ahead = _io.READ_AHEAD
    if memory_budget is not None and _is_path_source(source):
        from .distributed import ROW_GROUP_COPIES, _footprints, parse_memory_budget, partitions

        # One stream: the row group being swept and those read ahead, as many as fit
        # (at least one: the check raises when two row groups do not fit).
        budget = parse_memory_budget(memory_budget)
        big = max(_footprints(partitions(source), budget), default=0) // ROW_GROUP_COPIES
        if big:
            read_ahead = max(1, min(read_ahead, budget // big - 1))
    batches = _io.stream_events(source, batch_rows=batch_rows, progress=progress, read_ahead=read_ahead)
    quarantine: list = []
    sweep = plan.sweep()
    name = str(source) if isinstance(source, (str, os.PathLike)) else "events"
    try:
        rows = _feed_batches(sweep, batches, on_invalid, quarantine, reorder_ok=False, source=name)
    finally:
        batches.close()
    q = pa.concat_tables(quarantine) if quarantine else None
    return sweep.finish(), q, rows


def _rank_partitioned(source, batch_rows, workers) -> bool:
    """Whether a dataset can be swept one partition per thread: a directory whose
    files each hold one rank (hive ``rank=R`` folders, no rank twice)."""
    if workers is not None and workers < 1:
        raise PauError(f"workers: expected a positive number, got {workers}")
    if (workers == 1 or (workers is None and (os.cpu_count() or 1) < 2)
            or batch_rows is not None or not isinstance(source, (str, os.PathLike))
            or not os.path.isdir(source)):
        return False
    from .io import parquet_files

    files = parquet_files(source)
    ranks = [keys.get("rank") for _, keys in files]
    return len(files) > 1 and None not in ranks and len(set(ranks)) == len(ranks)


def classify_dataset(
    source: Any,
    *,
    windows: Any = None,
    span: Any = None,
    priority: Sequence[str] | None = None,
    on_invalid: str = "raise",
    batch_rows: int | None = None,
    progress: Any = None,
    workers: int | None = None,
    memory_budget: int | str | None = None,
    by_job: bool = False,
):
    """:func:`classify` on a Parquet file or directory, streamed.

    Row groups are read one at a time (the next one is read ahead on a second
    thread while the native core, GIL released, sweeps the current one), so memory
    is bounded by a row group, not by the input. The result is identical to
    :func:`classify` on the whole table.

    Parameters
    ----------
    source : str, os.PathLike, list of paths, pyarrow.RecordBatchReader or stream
        A Parquet file, a directory of them (hive partitions such as ``rank=3/`` fill
        a missing column), or any Arrow stream of record batches.
    batch_rows : int, optional
        Split row groups into batches of at most this many rows.
    progress : None, bool or callable
        None/False (default): nothing. True: a one-line bar on stderr (partitions,
        rows, rows per second) when stderr is a terminal. A callable receives
        :class:`pau.distributed.Progress` snapshots on the calling thread; if it raises
        ``KeyboardInterrupt`` the run stops as on Ctrl-C.
    workers : int, optional
        A directory in pau's layout (one file per rank: ``rank=R/`` folders, see
        :func:`pau.io.write_dataset`) is swept one partition per thread
        (:func:`pau.distributed.classify_partitions`); default one thread per core.
        ``workers=1`` streams everything on one thread. The result is the same.
    memory_budget : int or str, optional
        Bytes (or ``"2GiB"``) for the row groups in memory at once: bounds the
        partitions swept at once and the threads (see
        :func:`pau.distributed.classify_partitions` and ``docs/archive.md``).
        :class:`pau.errors.MemoryBudgetError` when one row group does not fit.
    by_job : bool, default False
        For archives partitioned by job and rank: classify each job apart and add a
        ``job`` column (:func:`pau.distributed.classify_partitions`). Without it, a
        rank number found under two ``job=`` folders raises :class:`pau.errors.PauError`
        (ranks are numbered per job; merging them would mix two accelerators).

    The source must be ordered by ``start_ns`` within each rank (ranks may
    interleave); otherwise :class:`pau.errors.UnsortedInputError` names the row.
    Other parameters are those of :func:`classify`.
    """
    _check_on_invalid(on_invalid)
    if by_job:
        if not _is_path_source(source):
            raise PauError("by_job=True: the source must be a directory partitioned by job (job=J/), "
                           f"got {type(source).__name__}")
        from .distributed import classify_partitions

        return classify_partitions(source, workers=workers, windows=windows, span=span, priority=priority,
                                   on_invalid=on_invalid, progress=progress, memory_budget=memory_budget,
                                   by_job=True)
    plan = _plan(windows, span)
    hist, q, rows = _hist_of_source(source, plan, on_invalid, batch_rows=batch_rows, progress=progress,
                                    workers=workers, memory_budget=memory_budget)
    out = _exclusive(hist, plan, priority)
    return _result(_with_counts(out, rows, 0 if q is None else q.num_rows), q, on_invalid)


from ._ledger import UNKNOWN_ACTIVITY, Ledger, tidy  # noqa: E402


def attribute(lifecycle: Any, *, as_of: int | None = None, on_invalid: str = "raise",
              threads: int | None = None):
    """Every accountable nanosecond of every rank, in exactly one lifecycle state.

    Applies DESIGN §2.2 (states, precedence, lineage rule) to a lifecycle table; the
    rules pau adds where the design is silent are in :mod:`pau.lifecycle`.

    Parameters
    ----------
    lifecycle : table-like
        Columns ``record, start_ns`` and any of ``attempt, rank, end_ns, step,
        block_end_ns, durable_ns, ok, kind, tokens`` (missing columns are null).
    as_of : int, optional
        The instant (ns) the ledger is computed as of: later records and time are
        ignored, open attempts are running. Default: the latest instant in the table.
    on_invalid : {"raise", "quarantine"}
    threads : int, optional
        Threads for the pass over the steps, each taking a range of ranks. Default:
        every core (up to 8) from 50,000 step executions on, else one; but one on a
        machine of 2 cores when every step row is for all ranks (rank -1) and the rows
        come in time order (the pass then visits them rank by rank itself, which is
        faster there than splitting it).

    Returns
    -------
    pyarrow.Table
        ``rank, start_ns, end_ns, state, attempt, step, cause``: disjoint intervals,
        sorted by rank and time, covering each rank's accountable time exactly.
        ``cause`` is the failure a ``rolled_back`` interval is charged to.
    """
    from .lifecycle import attribute_rows

    _check_on_invalid(on_invalid)
    att = attribute_rows(lifecycle, as_of=as_of, on_invalid=on_invalid, threads=threads)
    if on_invalid == "quarantine":
        return Quarantined(att.intervals, att.quarantine)
    return att.intervals


def ledger(
    events: Any = None,
    lifecycle: Any = None,
    *,
    as_of: int | None = None,
    windows: Any = None,
    rules: Sequence[str] | None = None,
    span: Any = None,
    on_invalid: str = "raise",
    progress: Any = None,
) -> Ledger:
    """The ledger of DESIGN §2.3: lifecycle state × device activity, per rank.

    Parameters
    ----------
    events : table-like or Parquet path, optional
        Device events (see :func:`classify`); a path is streamed.
    lifecycle : table-like, optional
        The lifecycle table (see :func:`attribute`). The state intervals become the
        windows of the native sweep, so each state gets the exact activity time
        inside it; events outside every accountable interval are not counted.
    as_of : int, optional
        See :func:`attribute`.
    windows : table-like or int, optional
        Only without a lifecycle: adds a ``window`` column (see :func:`classify`).
    rules : sequence of str, optional
        The priority of kinds when they overlap (see :func:`classify`).
    span : table-like, optional
        Only without a lifecycle: the accounted span per rank.
    progress : None, bool or callable
        For a path of events: as in :func:`classify_dataset`.

    Returns
    -------
    Ledger
        With only events, ``state`` is ``unattributed`` and a rank's accountable time
        is its span; with only a lifecycle, ``activity`` is ``unknown``.
    """
    _check_on_invalid(on_invalid)
    if events is None and lifecycle is None:
        raise ValueError("ledger: give events, a lifecycle, or both")
    act_of_mask = _activity_of_mask(rules)
    unattributed = STATES.index("unattributed")
    if lifecycle is None:
        if as_of is not None:
            raise ValueError("ledger: as_of applies to a lifecycle; give one, or drop as_of")
        plan = _plan(windows, span)
        hist, quarantine, rows = _hist_of_source(events, plan, on_invalid, progress=progress)
        slot = None
        if plan.mode != "none":
            s_rank, s_win, slot = _slot_frame(hist, plan)
        # Aggregate by slot (unique per rank and window, "outside" included), then name
        # the windows: a user's window id may be any integer, -1 included.
        table = tidy(hist["rank"], np.full(hist["rank"].size, unattributed), act_of_mask[hist["mask"]],
                     hist["duration"], slot)
        if slot is not None:
            table = table.set_column(1, "window", _window_column(plan, s_win).take(table["window"]))
        spans = _spans_table(hist)
        accountable = pa.table({"rank": spans["rank"], "accountable_ns": pa.array(
            np.asarray(spans["end_ns"]) - np.asarray(spans["start_ns"]), pa.int64())})
        return Ledger(_with_counts(table, rows, 0 if quarantine is None else quarantine.num_rows),
                      accountable, quarantine=quarantine)

    from ._ledger import cells_table
    from .lifecycle import attribute_rows

    if windows is not None or span is not None:
        raise ValueError("ledger: windows and span apply to events-only ledgers; with a lifecycle "
                         "the accountable records set the span")
    # In-memory events are swept on worker threads while this thread attributes,
    # with windows guessed from the lifecycle (pau._crossing); when the guess does
    # not resolve the states, the exact way below runs instead.
    started = None
    if events is not None and on_invalid == "raise" and _in_memory(events):
        from . import _crossing

        started = _crossing.start(events, lifecycle, as_of)
    # While the helpers sweep, the attribution's pass keeps to this thread: more
    # threads would take cores from the sweep and cost the visit order on top.
    att = attribute_rows(lifecycle, as_of=as_of, on_invalid=on_invalid, threads=None if started is None else 1)
    if events is None:
        iv = att.intervals
        i_start, i_end = np.asarray(iv["start_ns"]), np.asarray(iv["end_ns"])
        i_state = np.asarray(iv["state"].combine_chunks().indices if iv.num_rows else np.empty(0, np.int8))
        table = tidy(np.asarray(iv["rank"]), i_state, np.full(i_start.size, UNKNOWN_ACTIVITY), i_end - i_start)
        return Ledger(table, att.accountable, attribution=att, lifecycle_quarantine=att.quarantine,
                      has_events=False)
    # The state intervals in batches of whole ranks (the pass's own arrays, joined
    # when there are several); their ranks are the accountable ones.
    n_act = len(ACTIVITIES) + 1
    ranks = np.asarray(att.accountable["rank"])
    pieces = att.pieces
    cols = pieces[0] if len(pieces) == 1 else tuple(np.concatenate([p[k] for p in pieces]) for k in range(4))
    if started is not None:
        cells = _crossing.finish(started, cols, ranks, act_of_mask, _IDLE, len(STATES), n_act)
        if cells is not None:
            return Ledger(_with_counts(cells_table(cells, ranks, n_act), started.rows, 0), att.accountable,
                          attribution=att)
    # The windows of the sweep are the runs of one state: consecutive intervals of a
    # rank in the same state that touch become one window (the ledger sums by state,
    # so this changes nothing but the number of window boundaries the sweep crosses).
    # A rank's accounted span runs from its first to its last interval; time in gaps
    # (not accountable) falls outside every window and is not counted.
    from ._kernels import state_cells, state_windows

    plan = _Plan(mode="list")
    (plan.win_rank, plan.win_start, plan.win_end, w_state, w_pos, plan.win_row, plan.span_start,
     plan.span_end) = state_windows(*cols, ranks)
    plan.win_id = plan.win_row
    plan.span_rank = ranks.astype(np.int32)
    hist, quarantine, rows = _hist_of_source(events, plan, on_invalid, progress=progress)
    nq = 0 if quarantine is None else quarantine.num_rows
    # One pass over the histogram into (accountable rank, state, activity) cells; rows
    # in a window have an accountable rank (their windows are its intervals).
    cells = state_cells(hist["window"], hist["mask"], hist["duration"], w_pos, w_state, act_of_mask, ranks.size,
                        len(STATES), n_act)
    return Ledger(_with_counts(cells_table(cells, ranks, n_act), rows, nq), att.accountable, attribution=att,
                  quarantine=quarantine, lifecycle_quarantine=att.quarantine)


# Economics of useful work (DESIGN §3-4) live in pau.economics; the public names are here.
from .economics import (  # noqa: E402
    OUTCOMES,
    RequestLedger,
    checkpoint_advice,
    checkpoint_interval,
    cost,
    requests,
)

# Stragglers, comparisons and interference (DESIGN §4) live in pau.analysis.
from .analysis import colocated, compare, interference, stragglers  # noqa: E402
