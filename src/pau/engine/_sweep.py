"""Planning and running the native sweep of device events (DESIGN §2.1).

A :class:`Plan` holds the windows and spans; the native ``Sweep`` turns events into
a histogram of ``(rank, window, mask) -> ns``; the functions below shape that
histogram into pau's tables (exclusive time, the overlap matrix). Half-open
intervals and int64 ns throughout (see :mod:`pau.core`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np
import pyarrow as pa

from pau import _core
from pau.engine import _native
from pau.engine._input import (
    INT64_MAX, KINDS, REASONS, _column, as_table, event_columns, raise_first, rank_column, row_reasons,
    time_column,
)
from pau.engine._threads import thread_count
from pau.engine.types import Quarantined
from pau.engine.vocab import ACTIVITIES, DEFAULT_PRIORITY, counts_metadata, from_numpy, label
from pau.errors import InvalidWindowsError, PauError, SpanOverflowError, UnsortedInputError

IDLE = len(KINDS)
_COMPUTE_BIT = 1 << KINDS.index("compute")
_COMM_BIT = 1 << KINDS.index("communication")
_MASK_NAMES = tuple(
    "+".join(k for i, k in enumerate(KINDS) if m >> i & 1) or "idle" for m in range(1 << len(KINDS))
)


@functools.lru_cache(maxsize=64)
def _activity_of_mask_cached(priority: tuple) -> np.ndarray:
    out = _activity_of_mask_uncached(priority)
    out.setflags(write=False)
    return out


def activity_of_mask(priority: Sequence[str] | None) -> np.ndarray:
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
    out = np.full(1 << len(KINDS), IDLE, dtype=np.int8)
    for m in range(1, 1 << len(KINDS)):
        out[m] = next(KINDS.index(k) for k in prio if m >> KINDS.index(k) & 1)
    return out



# ---------------------------------------------------------------------------
# windows and spans

#: At most this many bucket windows (``windows=`` a width) in one sweep; the
#: environment variable PAU_MAX_WINDOWS sets another bound. A width too small for
#: the span (1 ns over 1,000 s is 10**12 windows) is refused, with the span given
#: before the sweep, else when the sweep reaches the bound, before its histogram
#: (a few dozen bytes per window) outgrows memory.
MAX_WINDOWS = 100_000_000


def max_windows() -> int:
    """The bound on bucket windows: PAU_MAX_WINDOWS, else MAX_WINDOWS."""
    text = os.environ.get("PAU_MAX_WINDOWS")
    if text is None:
        return MAX_WINDOWS
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise InvalidWindowsError(f"PAU_MAX_WINDOWS={text!r}: expected a positive whole number of windows")
    return value


@dataclass
class Plan:
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
    max_windows: int = 0  # bucket mode: the bound on windows per sweep (0: none)
    #: Set (see :func:`stream_plan`; no windows): :meth:`sweep` is the exclusive-time
    #: sweep with these priority levels (:func:`levels_of`) and this kernel.
    levels: np.ndarray | None = None
    kernel: int = 0

    def sweep(self) -> _core.Sweep | _core.ExclusiveSweep:
        """A native sweep to feed batches to: the full one, or with :attr:`levels` the
        exclusive-time one (same ``feed`` and ``finish``; its histogram's masks are
        the winning kind's bit, 0 for idle)."""
        if self.levels is not None:
            return _native.call(_core.ExclusiveSweep, self.span_rank, self.span_start, self.span_end, self.levels,
                                self.kernel)
        return _native.call(_core.Sweep, self.win_rank, self.win_start, self.win_end, self.win_row,
                            self.span_rank, self.span_start, self.span_end, bucket=self.bucket,
                            max_buckets=self.max_windows)


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
    bad = np.flatnonzero(e < s)
    if bad.size:
        raise InvalidWindowsError(
            f"{what}: row {int(bad[0])}: start_ns={int(s[bad[0]])}, end_ns={int(e[bad[0]])}. "
            f"Fix: {what} need start_ns <= end_ns"
        )
    return t, np.ascontiguousarray(r), np.ascontiguousarray(s), np.ascontiguousarray(e)


def plan_of(windows: Any, span: Any) -> Plan:
    plan = Plan()
    if windows is not None:
        if isinstance(windows, (int, np.integer)) and not isinstance(windows, bool):
            if windows <= 0:
                raise InvalidWindowsError(f"windows: a bucket width must be > 0 ns, got {windows}")
            plan.mode, plan.bucket, plan.max_windows = "bucket", int(windows), max_windows()
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
        wide = _too_long(s, e)
        if wide.size:
            i = int(wide[0])
            raise InvalidWindowsError(
                f"span: row {i}, rank {int(r[i])}: [{int(s[i])}, {int(e[i])}) lasts {int(e[i]) - int(s[i])} ns, "
                "more than int64 nanoseconds hold (2**63 - 1 ns, 292 years). Fix: correct the span's times")
        plan.span_rank, plan.span_start, plan.span_end = r, s, e
        if plan.mode == "bucket":  # the windows the spans make, known before any sweep
            w = plan.bucket
            # in Python ints: (end + w - 1) // w would wrap near the int64 ends
            count = sum(-(-b // w) - a // w for a, b in zip(s.tolist(), e.tolist()))
            if count > plan.max_windows:
                raise InvalidWindowsError(
                    f"windows: a bucket width of {w} ns makes {count} windows over the spans given, more than "
                    f"{plan.max_windows}. Fix: give a wider bucket width, or raise the bound with the "
                    "environment variable PAU_MAX_WINDOWS")
    return plan



# ---------------------------------------------------------------------------
# spans that int64 cannot hold


def _too_long(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Indices of the intervals (``end >= start``) longer than int64 holds: ``end -
    start`` taken modulo 2**64 is exact for ``end >= start``, and above 2**63 - 1."""
    with np.errstate(over="ignore"):
        return np.flatnonzero(end.astype(np.uint64) - start.astype(np.uint64) > np.uint64(INT64_MAX))


#: The quarantine's reason for the events of a rank whose span int64 cannot hold.
SPAN_REASON = "the rank's span (first event start to last event end) does not fit in int64 ns"


def wide_ranks(hist: dict) -> np.ndarray:
    """The ranks of a sweep's histogram whose accounted span int64 cannot hold. Every
    piece the sweep counts lies in its rank's span, so below that bound no count
    wraps; at or above it the rank's counts are wrong and must not be used. Checked
    here after the sweep (the native sweep pays nothing for it), on every path's
    histogram: in memory (:func:`hist_of_table`) and streamed (:func:`finish`, which
    the partitions call too); first once over all ranks (the latest end minus the
    earliest start), rank by rank only when that does not fit. Given spans are
    checked before (:func:`plan_of`)."""
    start, end = np.asarray(hist["span_start"]), np.asarray(hist["span_end"])
    if not start.size or int(end.max()) - int(start.min()) <= INT64_MAX:  # the usual case: no span can be
        return _NO_RANKS
    return np.asarray(hist["span_rank"])[_too_long(start, end)]


_NO_RANKS = np.empty(0, np.int32)
_NO_RANKS.setflags(write=False)


def check_spans(hist: dict, table: str = "events") -> dict:
    """``hist``, or :class:`SpanOverflowError` naming its first rank whose span int64
    cannot hold."""
    wide = wide_ranks(hist)
    if wide.size:
        r = int(np.min(wide))
        i = int(np.flatnonzero(np.asarray(hist["span_rank"]) == r)[0])
        raise SpanOverflowError(table, r, int(hist["span_start"][i]), int(hist["span_end"][i]))
    return hist


def without_ranks(hist: dict, ranks: np.ndarray) -> dict:
    """``hist`` without the rows and spans of ``ranks``."""
    rows = ~np.isin(hist["rank"], ranks)
    spans = ~np.isin(hist["span_rank"], ranks)
    return {k: (np.asarray(v)[spans] if k.startswith("span_") else np.asarray(v)[rows]) if isinstance(v, np.ndarray)
            else v for k, v in hist.items()}


def rows_of_ranks(batches: Iterable, ranks: np.ndarray, skip: np.ndarray, table: str = "events") -> pa.Table | None:
    """The quarantine of the events of ``ranks`` (their spans overflow) in the input
    ``batches``: those rows, then ``row`` (numbered over the batches) and ``reason``;
    rows numbered in ``skip`` (already set aside for a reason of their own) are left
    out. None when there are none."""
    out, row0 = [], 0
    for batch in batches:
        r = _column(batch, "rank", table)
        idx = np.flatnonzero(np.isin(np.asarray(r.fill_null(-1) if r.null_count else r, np.int64), ranks))
        idx = idx[~np.isin(idx + row0, skip)]
        if idx.size:
            q = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
            q = q.take(pa.array(idx))
            q = q.append_column("row", pa.array(idx + row0, pa.int64()))
            out.append(q.append_column("reason", pa.array([SPAN_REASON] * idx.size, pa.string())))
        row0 += batch.num_rows
    return pa.concat_tables(out, promote_options="permissive") if out else None


def join_quarantine(*parts: pa.Table | None) -> pa.Table | None:
    """Quarantine tables one after the other, in row order (None when there are none)."""
    got = [p for p in parts if p is not None and p.num_rows]
    if not got:
        return None
    t = pa.concat_tables(got, promote_options="permissive")
    return t.take(pa.array(np.argsort(np.asarray(t["row"]), kind="stable"))) if len(got) > 1 else t


# ---------------------------------------------------------------------------
# running the sweep


class Reorder(Exception):
    """The input is not start-ordered within a rank; the caller re-feeds in order."""


def _feed(sweep, *args):
    """Sweep.feed; windows are checked when a rank is first met, so their errors
    surface here."""
    return _native.call(sweep.feed, *args)


def finish(sweep, table: str = "events", *, keep_wide: bool = False) -> dict:
    """Sweep.finish, whose closing of the last buckets may reach the window bound; a
    rank whose span int64 cannot hold raises (:func:`check_spans`), unless
    ``keep_wide`` (the caller sets such ranks aside: :func:`wide_ranks`)."""
    hist = _native.call(sweep.finish)
    return hist if keep_wide else check_spans(hist, table)


def split_invalid(batch, row0: int, table: str = "events"):
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


def feed_batches(sweep, batches: Iterable, on_invalid: str, quarantine: list, *,
                  reorder_ok: bool, source: str = "events") -> int:
    """Feed batches into the sweep; returns the number of input rows seen."""
    row0 = 0
    for batch in batches:
        n = batch.num_rows
        kept = None  # input positions of the rows left after quarantine
        if on_invalid == "quarantine":
            batch, q = split_invalid(batch, row0)
            if q is not None:
                quarantine.append(q)
                kept = np.setdiff1d(np.arange(n), np.asarray(q["row"]) - row0)
        cols = event_columns(batch, row0=row0)
        if cols is None:
            raise_first(batch, row_reasons(batch), row0)
        code, row = _feed(sweep, cols.rank, cols.start, cols.end, cols.kind.indices, cols.kind.core_codes)
        if code == _native.UNSORTED:
            if reorder_ok:
                raise Reorder()
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



def merge_hists(hists: list) -> dict:
    if len(hists) == 1:
        return hists[0]
    return {k: np.concatenate([h[k] for h in hists]) for k in hists[0]}


def batch_arrays(cols: list) -> list:
    """Event columns as the native sweep takes them: (rank, start, end, kind
    indices, kind map) per batch."""
    return [(c.rank, c.start, c.end, c.kind.indices, c.kind.core_codes) for c in cols]


def levels_of(priority: Sequence[str] | None) -> np.ndarray:
    """``levels[c]``: the priority level (0 highest) of kind ``KINDS[c]``."""
    activity_of_mask(priority)  # checks the priority
    prio = tuple(DEFAULT_PRIORITY if priority is None else priority)
    return np.array([prio.index(k) for k in KINDS], np.int8)


#: The kernel of the exclusive-time sweep: 0 the best this CPU runs, 1 the scalar
#: one, 2 AVX-512, 3 AVX2 (``csrc/core/exclusive.hpp``). Read at each sweep (the
#: zoo benchmark sets it to time each kernel); the full ledger's early sweep takes
#: it once, at import (``pau.engine._crossing.LEAN_KERNEL``).
BEST_KERNEL = 0


def lean_path(plan: Plan) -> bool:
    """Whether exclusive time alone is swept by nested priority unions
    (``csrc/core/exclusive.hpp``) rather than the full 64-mask sweep: without
    windows, on a CPU with AVX-512 or AVX2 (where its scalar kernel is slower than
    the full sweep's fast paths on the common shapes)."""
    return plan.mode == "none" and _VECTOR


#: Whether this CPU runs a vector kernel of the exclusive-time sweep.
_VECTOR = bool(_core.avx512_available() or _core.avx2_available())


def lean_kernel() -> int | None:
    """The exclusive-time sweep's kernel where it is the faster sweep (this CPU
    runs its AVX-512 or AVX2 kernel: :data:`BEST_KERNEL`), else None (the full
    sweep)."""
    return BEST_KERNEL if _VECTOR else None


def stream_plan(plan: Plan, priority: Sequence[str] | None) -> Plan:
    """The plan that exclusive time of streamed events is swept with: where
    :func:`lean_path` holds, ``plan`` with the priority's levels, so that
    :meth:`Plan.sweep` is the exclusive-time sweep (fed batch by batch: within a
    rank, starts must not decrease across batches, as for the full sweep); else
    ``plan`` itself. :func:`exclusive` reads either histogram."""
    if not lean_path(plan):
        return plan
    return dataclasses.replace(plan, levels=levels_of(priority), kernel=BEST_KERNEL)


def sweep_parts(plan: Plan, cols: list, parts: int, order=None, levels=None, kernel: int | None = None,
                batches: Sequence[pa.RecordBatch | pa.Table] | None = None) -> dict:
    """Sweep in-memory column batches on up to ``parts`` threads of the native pool
    (``sweep_split`` in ``csrc/core/split.hpp``): input sorted by rank is split into
    row ranges at rank boundaries, other input runs on one thread. Returns the
    merged histogram; the first problem met raises (:func:`pau.engine._native.call`:
    ``batches``, the tables ``cols`` are of, name its row), rows out of start order
    within a rank as :class:`pau.errors.UnsortedInputError`.

    With ``levels`` (see :func:`levels_of`; no windows), the exclusive-time sweep
    runs instead (``exclusive_split`` in ``csrc/core/exclusive.hpp``): its histogram
    has one row per rank and winning kind (mask: that kind's bit, 0 for idle), which
    :func:`exclusive` reads as it reads the full one; ``kernel``: its kernel
    (default :data:`BEST_KERNEL`, read at the call)."""
    if levels is not None:
        return _native.call(_core.exclusive_batches, plan.span_rank, plan.span_start, plan.span_end, levels,
                            fed=batches, batches=batch_arrays(cols), parts=parts, order=order,
                            kernel=BEST_KERNEL if kernel is None else kernel)
    return _native.call(_core.sweep_batches, plan.win_rank, plan.win_start, plan.win_end, plan.win_row,
                        plan.span_rank, plan.span_start, plan.span_end, fed=batches, bucket=plan.bucket,
                        batches=batch_arrays(cols), parts=parts, order=order, max_buckets=plan.max_windows)


def hist_of_table(table: pa.Table, plan: Plan, on_invalid: str, threads: int | None = None, levels=None,
                  kernel: int | None = None):
    """Sweep an in-memory table; returns (histogram, quarantine table or None, rows).

    ``levels`` (no windows): sweep exclusive time only (see :func:`sweep_parts`)."""
    quarantine, rows, given = None, table.num_rows, table
    if on_invalid == "quarantine":
        table, quarantine = split_invalid(table, 0)
    batches = table.to_batches()
    cols, row0 = [], 0
    for batch in batches:
        c = event_columns(batch, row0=row0)
        if c is None:
            raise_first(batch, row_reasons(batch), row0)
        cols.append(c)
        row0 += batch.num_rows
    parts = thread_count(threads, table.num_rows)
    try:
        out = sweep_parts(plan, cols, parts, None, levels, kernel, batches)
    except UnsortedInputError:
        # Unsorted within a rank: sweep once more through a (rank, start) permutation.
        cols = [event_columns(table.combine_chunks())]
        order = _core.order_by_rank_start(cols[0].rank, cols[0].start)
        out = sweep_parts(plan, cols, parts, order, levels, kernel, [table])
    wide = wide_ranks(out)
    if wide.size:
        if on_invalid != "quarantine":
            check_spans(out)
        skip = np.empty(0, np.int64) if quarantine is None else np.asarray(quarantine["row"])
        quarantine = join_quarantine(quarantine, rows_of_ranks(given.to_batches(), wide, skip))
        out = without_ranks(out, wide)
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


def slot_frame(hist: dict, plan: Plan):
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


def window_column(plan: Plan, s_win: np.ndarray) -> pa.Array:
    if plan.mode == "bucket":
        return pa.array(s_win, pa.int64())
    ids = np.where(s_win >= 0, plan.win_id[np.maximum(s_win, 0)] if plan.win_id.size else 0, 0)
    return pa.array(ids, pa.int64(), mask=s_win < 0)


def exclusive(hist: dict, plan: Plan, priority) -> pa.Table:
    act = activity_of_mask(priority)
    if plan.mode == "none":  # one slot per rank (every rank has a span)
        s_rank = np.sort(hist["span_rank"])
        slot = np.searchsorted(s_rank, hist["rank"])
    else:
        s_rank, s_win, slot = slot_frame(hist, plan)
    n_act = len(ACTIVITIES)
    mat = np.zeros((s_rank.size, n_act), np.int64)
    np.add.at(mat, (slot, act[hist["mask"]]), hist["duration"])
    cols = {"rank": from_numpy(np.repeat(s_rank, n_act), pa.int32())}
    if plan.mode != "none":
        w = window_column(plan, s_win)
        cols["window"] = w.take(pa.array(np.repeat(np.arange(s_rank.size), n_act)))
    cols["activity"] = label(ACTIVITIES, np.tile(np.arange(n_act), s_rank.size))
    cols["duration_ns"] = from_numpy(mat.ravel(), pa.int64())
    return pa.table(cols)


def spans_table(hist: dict) -> pa.Table:
    order = np.argsort(hist["span_rank"], kind="stable")
    return pa.table({
        "rank": pa.array(hist["span_rank"][order], pa.int32()),
        "start_ns": pa.array(hist["span_start"][order], pa.int64()),
        "end_ns": pa.array(hist["span_end"][order], pa.int64()),
    })


def with_counts(table: pa.Table, rows: int, quarantined: int) -> pa.Table:
    return table.replace_schema_metadata({**(table.schema.metadata or {}), **counts_metadata(rows, quarantined)})


def result(table: pa.Table, quarantine, on_invalid: str, source_schema=None):
    if on_invalid != "quarantine":
        return table
    if quarantine is None:
        empty = {"row": pa.array([], pa.int64()), "reason": pa.array([], pa.string())}
        quarantine = pa.table(empty)
    return Quarantined(table, quarantine)



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


def overlap_tables(hist: dict, plan: Plan) -> Overlap:
    s_rank, s_win, slot = slot_frame(hist, plan)
    order = np.lexsort((hist["mask"], slot))
    m = hist["mask"][order]
    cols = {"rank": pa.array(hist["rank"][order], pa.int32())}
    win = window_column(plan, s_win) if plan.mode != "none" else None
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



def is_path_source(obj: Any) -> bool:
    return isinstance(obj, (str, os.PathLike)) or (
        isinstance(obj, (list, tuple)) and bool(obj) and all(isinstance(x, (str, os.PathLike)) for x in obj))


def in_memory(source: Any) -> bool:
    """An in-memory table-like input (not a path nor a stream of batches)."""
    return not is_path_source(source) and not isinstance(source, pa.RecordBatchReader) and not (
        hasattr(source, "__arrow_c_stream__") and not isinstance(source, (pa.Table, pa.RecordBatch)))

