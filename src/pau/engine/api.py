"""The engine's entry points: exclusive time, overlap, the lifecycle attribution and
the ledger (DESIGN §2), on in-memory tables, streams and Parquet archives.

:mod:`pau.core` exports these; their docstrings are the public documentation.
"""

from __future__ import annotations

import os
from typing import Any, Literal, Sequence, overload

import numpy as np
import pyarrow as pa

from pau import _core
from pau.engine import _crossing
from pau.engine import io as _io
from pau.engine._input import as_table
from pau.engine.ledger import UNKNOWN_ACTIVITY, Ledger, cells_table, tidy
from pau.engine._sweep import (
    IDLE, Overlap, Plan, activity_of_mask, exclusive, feed_batches, finish, hist_of_table, in_memory,
    is_path_source, join_quarantine, lean_path, levels_of, overlap_tables, plan_of, result, rows_of_ranks,
    slot_frame, spans_table, stream_plan, wide_ranks, window_column, with_counts, without_ranks,
)
from pau.engine._threads import cores
from pau.engine.types import Quarantined, check_on_invalid
from pau.engine.vocab import ACTIVITIES, STATES
from pau.engine.distributed import (
    ROW_GROUP_COPIES, _footprints, check_job_ranks, classify_partitions, merged_hist, parse_memory_budget,
    partitions,
)
from pau.errors import PauError
from pau.engine._lifecycle import attribute_rows

__all__ = ["attribute", "classify", "classify_dataset", "ledger", "overlap"]

@overload
def classify(events: Any, *, windows: Any = ..., span: Any = ..., priority: Sequence[str] | None = ...,
             on_invalid: Literal["raise"] = ..., threads: int | None = ...) -> pa.Table: ...
@overload
def classify(events: Any, *, windows: Any = ..., span: Any = ..., priority: Sequence[str] | None = ...,
             on_invalid: Literal["quarantine"], threads: int | None = ...) -> Quarantined: ...
@overload
def classify(events: Any, *, windows: Any = ..., span: Any = ..., priority: Sequence[str] | None = ...,
             on_invalid: str = ..., threads: int | None = ...) -> pa.Table | Quarantined: ...
def classify(
    events: Any,
    *,
    windows: Any = None,
    span: Any = None,
    priority: Sequence[str] | None = None,
    on_invalid: str = "raise",
    threads: int | None = None,
) -> pa.Table | Quarantined:
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
        first bad row, and :class:`pau.errors.SpanOverflowError` for a rank whose
        span lasts more than 2**63 - 1 ns (int64 cannot count it). ``"quarantine"``
        classifies the usable rows (those ranks' events set aside too) and returns
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
    check_on_invalid(on_invalid)
    plan = plan_of(windows, span)
    table = as_table(events, "events")
    # Exclusive time alone: the nested-union sweep where it applies, the full one else.
    levels = levels_of(priority) if lean_path(plan) else None
    hist, quarantine, rows = hist_of_table(table, plan, on_invalid, threads, levels)
    out = exclusive(hist, plan, priority)
    nq = 0 if quarantine is None else quarantine.num_rows
    return result(with_counts(out, rows, nq), quarantine, on_invalid)


@overload
def overlap(events: Any, *, windows: Any = ..., span: Any = ..., on_invalid: Literal["raise"] = ...,
            threads: int | None = ...) -> Overlap: ...
@overload
def overlap(events: Any, *, windows: Any = ..., span: Any = ..., on_invalid: Literal["quarantine"],
            threads: int | None = ...) -> Quarantined: ...
@overload
def overlap(events: Any, *, windows: Any = ..., span: Any = ..., on_invalid: str = ...,
            threads: int | None = ...) -> Overlap | Quarantined: ...
def overlap(events: Any, *, windows: Any = None, span: Any = None, on_invalid: str = "raise",
            threads: int | None = None) -> Overlap | Quarantined:
    """The full overlap matrix per rank, and the communication/compute overlap ratio.

    Parameters are those of :func:`classify`. Returns :class:`Overlap` (or
    :class:`Quarantined` wrapping it with ``on_invalid="quarantine"``).
    """
    check_on_invalid(on_invalid)
    plan = plan_of(windows, span)
    hist, quarantine, _ = hist_of_table(as_table(events, "events"), plan, on_invalid, threads)
    out: Overlap | Quarantined = result(overlap_tables(hist, plan), quarantine, on_invalid)
    return out


def _hist_of_source(source: Any, plan: Plan, on_invalid: str, *, batch_rows: int | None = None,
                    progress: Any = None, workers: int | None = None,
                    memory_budget: int | str | None = None) -> tuple[Any, Any, int]:
    """Sweep a Parquet path (streamed, or one partition per thread for pau's
    rank-partitioned layout) or an in-memory table-like input."""
    parts = None  # a path's files, listed once
    if is_path_source(source):
        parts = partitions(source)
        check_job_ranks(parts)
    if _rank_partitioned(source, parts, batch_rows, workers):
        assert parts is not None  # only a listed path is rank-partitioned
        hist, q, rows = merged_hist(parts, plan, workers=workers, on_invalid=on_invalid, progress=progress,
                                    memory_budget=memory_budget)
        return hist, q, rows
    if in_memory(source):
        hist, q, rows = hist_of_table(as_table(source, "events"), plan, on_invalid, levels=plan.levels,
                                      kernel=plan.kernel)
        return hist, q, rows
    read_ahead = _io.READ_AHEAD
    if memory_budget is not None and parts is not None:
        # One stream: the row group being swept and those read ahead, as many as fit
        # (at least one: the check raises when two row groups do not fit).
        budget = parse_memory_budget(memory_budget)
        assert budget is not None  # memory_budget is not None
        big = max(_footprints(parts, budget), default=0) // ROW_GROUP_COPIES
        if big:
            read_ahead = max(1, min(read_ahead, budget // big - 1))
    batches = _io.stream_events(source, batch_rows=batch_rows, progress=progress, read_ahead=read_ahead)
    quarantine: list[Any] = []
    sweep = plan.sweep()
    name = str(source) if isinstance(source, (str, os.PathLike)) else "events"
    try:
        rows = feed_batches(sweep, batches, on_invalid, quarantine, reorder_ok=False, source=name)
    finally:
        batches.close()
    q = pa.concat_tables(quarantine) if quarantine else None
    hist = finish(sweep, name, keep_wide=on_invalid == "quarantine")
    wide = wide_ranks(hist)
    if wide.size:  # quarantine: the events of those ranks, read once more (a path only: a stream is read once)
        if not is_path_source(source):
            raise PauError(f"{name}: rank {int(wide.min())}'s span (first event start to last event end) does not "
                           "fit in int64 ns, and its events cannot be set aside from a stream, which is read "
                           "once. Fix: correct the times of its events, or give a path or a table")
        again = _io.stream_events(source, batch_rows=batch_rows)
        try:
            skip = np.empty(0, np.int64) if q is None else np.asarray(q["row"])
            q = join_quarantine(q, rows_of_ranks(again, wide, skip))
        finally:
            again.close()
        hist = without_ranks(hist, wide)
    return hist, q, rows


def _rank_partitioned(source: Any, parts: Any, batch_rows: int | None, workers: int | None) -> bool:
    """Whether a dataset can be swept one partition per thread: a directory whose
    files (``parts``, as :func:`pau.engine.distributed.partitions` lists them; None for a
    source that is not a path) each hold one rank (hive ``rank=R`` folders, no rank
    twice)."""
    if workers is not None and workers < 1:
        raise PauError(f"workers: expected a positive number, got {workers}")
    if (parts is None or workers == 1 or (workers is None and cores() < 2)
            or batch_rows is not None or not isinstance(source, (str, os.PathLike))
            or not os.path.isdir(source)):
        return False
    ranks = [keys.get("rank") for _, keys in parts]
    return len(parts) > 1 and None not in ranks and len(set(ranks)) == len(ranks)


@overload
def classify_dataset(source: Any, *, windows: Any = ..., span: Any = ..., priority: Sequence[str] | None = ...,
                     on_invalid: Literal["raise"] = ..., batch_rows: int | None = ..., progress: Any = ...,
                     workers: int | None = ..., memory_budget: int | str | None = ...,
                     by_job: bool = ...) -> pa.Table: ...
@overload
def classify_dataset(source: Any, *, windows: Any = ..., span: Any = ..., priority: Sequence[str] | None = ...,
                     on_invalid: Literal["quarantine"], batch_rows: int | None = ..., progress: Any = ...,
                     workers: int | None = ..., memory_budget: int | str | None = ...,
                     by_job: bool = ...) -> Quarantined: ...
@overload
def classify_dataset(source: Any, *, windows: Any = ..., span: Any = ..., priority: Sequence[str] | None = ...,
                     on_invalid: str = ..., batch_rows: int | None = ..., progress: Any = ...,
                     workers: int | None = ..., memory_budget: int | str | None = ...,
                     by_job: bool = ...) -> pa.Table | Quarantined: ...
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
) -> pa.Table | Quarantined:
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
        :class:`pau.engine.distributed.Progress` snapshots on the calling thread; if it raises
        ``KeyboardInterrupt`` the run stops as on Ctrl-C.
    workers : int, optional
        A directory in pau's layout (one file per rank: ``rank=R/`` folders, see
        :func:`pau.engine.io.write_dataset`) is swept one partition per thread
        (:func:`pau.engine.distributed.classify_partitions`); default one thread per core.
        ``workers=1`` streams everything on one thread. The result is the same.
    memory_budget : int or str, optional
        Bytes (or ``"2GiB"``) for the row groups in memory at once: bounds the
        partitions swept at once and the threads (see
        :func:`pau.engine.distributed.classify_partitions` and ``docs/archive.md``).
        :class:`pau.errors.MemoryBudgetError` when one row group does not fit.
    by_job : bool, default False
        For archives partitioned by job and rank: classify each job apart and add a
        ``job`` column (:func:`pau.engine.distributed.classify_partitions`). Without it, a
        rank number found under two ``job=`` folders raises :class:`pau.errors.PauError`
        (ranks are numbered per job; merging them would mix two accelerators).

    The source must be ordered by ``start_ns`` within each rank (ranks may
    interleave); otherwise :class:`pau.errors.UnsortedInputError` names the row.
    Other parameters are those of :func:`classify`.
    """
    check_on_invalid(on_invalid)
    if by_job:
        if not is_path_source(source):
            raise PauError("by_job=True: the source must be a directory partitioned by job (job=J/), "
                           f"got {type(source).__name__}")
        return classify_partitions(source, workers=workers, windows=windows, span=span, priority=priority,
                                   on_invalid=on_invalid, progress=progress, memory_budget=memory_budget,
                                   by_job=True)
    # Exclusive time alone: the nested-union sweep where it applies, the full one else.
    plan = stream_plan(plan_of(windows, span), priority)
    hist, q, rows = _hist_of_source(source, plan, on_invalid, batch_rows=batch_rows, progress=progress,
                                    workers=workers, memory_budget=memory_budget)
    out = exclusive(hist, plan, priority)
    return result(with_counts(out, rows, 0 if q is None else q.num_rows), q, on_invalid)


@overload
def attribute(lifecycle: Any, *, as_of: int | None = ..., on_invalid: Literal["raise"] = ...,
              threads: int | None = ...) -> pa.Table: ...
@overload
def attribute(lifecycle: Any, *, as_of: int | None = ..., on_invalid: Literal["quarantine"],
              threads: int | None = ...) -> Quarantined: ...
@overload
def attribute(lifecycle: Any, *, as_of: int | None = ..., on_invalid: str = ...,
              threads: int | None = ...) -> pa.Table | Quarantined: ...
def attribute(lifecycle: Any, *, as_of: int | None = None, on_invalid: str = "raise",
              threads: int | None = None) -> pa.Table | Quarantined:
    """Every accountable nanosecond of every rank, in exactly one lifecycle state.

    Applies DESIGN §2.2 (states, precedence, lineage rule) to a lifecycle table; the
    rules pau adds where the design is silent are in :mod:`pau.engine._lifecycle`.

    Parameters
    ----------
    lifecycle : table-like
        Columns ``record, start_ns`` and any of ``attempt, rank, end_ns, step,
        block_end_ns, durable_ns, ok, kind, tokens`` (missing columns are null), and
        ``job`` (string; null = one unnamed job) for a table of many jobs: each job is
        its own lineage, its ranks its own accelerators (docs/lifecycle.md).
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
        ``cause`` is the failure a ``rolled_back`` interval is charged to. With a
        ``job`` column, ``job`` comes first (sorted by job, rank and time), and each
        job's rows are what that job's rows alone give.
    """
    check_on_invalid(on_invalid)
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
    priority: Sequence[str] | None = None,
) -> Ledger:
    """The ledger of DESIGN §2.3: lifecycle state × device activity, per rank.

    Parameters
    ----------
    events : table-like or Parquet path, optional
        Device events (see :func:`classify`); a path is streamed.
    lifecycle : table-like, optional
        The lifecycle table (see :func:`attribute`). The state intervals become the
        windows of the native sweep, so each state gets the exact activity time
        inside it; events outside every accountable interval are not counted. With a
        ``job`` column (many jobs), in-memory events with a ``job`` column join by
        (job, rank), and every table of the ledger has ``job`` before ``rank``.
    as_of : int, optional
        See :func:`attribute`.
    windows : table-like or int, optional
        Only without a lifecycle: adds a ``window`` column (see :func:`classify`).
    rules, priority : sequence of str, optional
        The priority of kinds when they overlap (see :func:`classify`). ``rules`` is
        DESIGN's name for it, ``priority`` the name :func:`classify` and
        :meth:`pau.Run.ledger` use; give one.
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
    check_on_invalid(on_invalid)
    if events is None and lifecycle is None:
        raise PauError("ledger: give events, a lifecycle, or both")
    if rules is not None and priority is not None:
        raise PauError("ledger: rules and priority name the same thing; give one")
    act_of_mask = activity_of_mask(priority if priority is not None else rules)
    unattributed = STATES.index("unattributed")
    if lifecycle is None:
        if as_of is not None:
            raise PauError("ledger: as_of applies to a lifecycle; give one, or drop as_of")
        plan = plan_of(windows, span)
        hist, quarantine, rows = _hist_of_source(events, plan, on_invalid, progress=progress)
        slot = None
        if plan.mode != "none":
            s_rank, s_win, slot = slot_frame(hist, plan)
        # Aggregate by slot (unique per rank and window, "outside" included), then name
        # the windows: a user's window id may be any integer, -1 included.
        table = tidy(hist["rank"], np.full(hist["rank"].size, unattributed), act_of_mask[hist["mask"]],
                     hist["duration"], slot)
        if slot is not None:
            table = table.set_column(1, "window", window_column(plan, s_win).take(table["window"]))
        spans = spans_table(hist)
        accountable = pa.table({"rank": spans["rank"], "accountable_ns": pa.array(
            np.asarray(spans["end_ns"]) - np.asarray(spans["start_ns"]), pa.int64())})
        return Ledger(with_counts(table, rows, 0 if quarantine is None else quarantine.num_rows),
                      accountable, quarantine=quarantine)

    if windows is not None or span is not None:
        raise PauError("ledger: windows and span apply to events-only ledgers; with a lifecycle "
                       "the accountable records set the span")
    # In-memory events are swept on worker threads while this thread attributes,
    # with windows guessed from the lifecycle (pau.engine._crossing); when the guess does
    # not resolve the states, the exact way below runs instead.
    started = None
    lifecycle = as_table(lifecycle, "lifecycle")
    jobs = lifecycle.schema.get_field_index("job") >= 0  # many jobs: the events join by (job, rank)
    if jobs and events is not None and not in_memory(events):
        raise PauError("ledger: a lifecycle of many jobs (a job column) takes in-memory events (a table "
                       "with a job column); read the events first, or give one job's lifecycle")
    if events is not None and on_invalid == "raise" and in_memory(events) and not jobs:
        started = _crossing.start(events, lifecycle, as_of, priority if priority is not None else rules)
    # While the helpers sweep, the attribution's pass keeps to this thread: more
    # threads would take cores from the sweep and cost the visit order on top.
    att = attribute_rows(lifecycle, as_of=as_of, on_invalid=on_invalid, threads=None if started is None else 1)
    if jobs:  # the ranks of the ledger are the attribution's (job, rank) ids until the end
        return _ledger_of_jobs(events, att, act_of_mask, on_invalid, progress)
    if events is None:
        iv = att.intervals
        i_start, i_end = np.asarray(iv["start_ns"]), np.asarray(iv["end_ns"])
        i_state = np.asarray(iv["state"].combine_chunks().indices if iv.num_rows else np.empty(0, np.int8))
        table = tidy(np.asarray(iv["rank"]), i_state, np.full(i_start.size, UNKNOWN_ACTIVITY), i_end - i_start)
        return Ledger(table, att.accountable, attribution=att, lifecycle_quarantine=att.quarantine,
                      has_events=False)
    return _ledger_of(events, att, started, act_of_mask, on_invalid, progress)


def _ledger_of_jobs(events: Any, att: Any, act_of_mask: Any, on_invalid: str, progress: Any) -> Ledger:
    """The ledger of a lifecycle of many jobs: the events' ranks as the attribution's
    (job, rank) ids, the ledger as of one job, then a ``job`` column beside ``rank``."""
    jobs = att.jobs
    if events is None:
        cols = _state_pieces(att)
        table = tidy(cols[0], cols[3], np.full(cols[0].size, UNKNOWN_ACTIVITY), cols[2] - cols[1])
        return Ledger(jobs.with_job(table), att.accountable, attribution=att, lifecycle_quarantine=att.quarantine,
                      has_events=False)
    events = as_table(events, "events")
    led = _ledger_of(jobs.events(events), att, None, act_of_mask, on_invalid, progress)
    led.table = jobs.with_job(led.table).replace_schema_metadata(led.table.schema.metadata)
    if led.quarantine is not None and led.quarantine.num_rows:  # the events' own ranks and jobs
        q, rows = led.quarantine, led.quarantine["row"]
        q = q.set_column(q.schema.get_field_index("rank"), "rank", events["rank"].take(rows))
        if events.schema.get_field_index("job") >= 0:
            q = q.add_column(q.schema.get_field_index("rank"), "job", events["job"].take(rows))
        led.quarantine = q
    return led


def _state_pieces(att: Any) -> tuple[Any, Any, Any, Any]:
    """The state intervals' (rank, start, end, state) as the pass wrote them (ranks as
    the attribution has them), in one piece."""
    pieces = att.pieces
    assert pieces is not None  # attribute_rows always sets them
    if len(pieces) == 1:
        r, s, e, st = pieces[0]
    else:
        r, s, e, st = (np.concatenate([p[k] for p in pieces]) for k in range(4))
    return r, s, e, st


def _ledger_of(events: Any, att: Any, started: Any, act_of_mask: Any, on_invalid: str, progress: Any) -> Ledger:
    """The ledger of events and an attribution: the early sweep's cells (``started``)
    when they resolve the states, else the exact way."""
    # The state intervals in batches of whole ranks (the pass's own arrays, joined
    # when there are several); their ranks are the accountable ones.
    n_act = len(ACTIVITIES) + 1
    ranks = np.asarray(att.accountable["rank"]) if att.acc_ranks is None else att.acc_ranks
    cols = _state_pieces(att)
    if started is not None:
        cells = _crossing.finish(started, cols, ranks, act_of_mask, IDLE, len(STATES), n_act)
        if cells is not None:
            return Ledger(cells_table(cells, started.rows, 0), att.accountable,
                          attribution=att)
    # The windows of the sweep are the runs of one state: consecutive intervals of a
    # rank in the same state that touch become one window (the ledger sums by state,
    # so this changes nothing but the number of window boundaries the sweep crosses).
    # A rank's accounted span runs from its first to its last run; time in gaps (not
    # accountable) falls outside every window and is not counted.
    runs = _core.state_runs(*cols)
    w_rank, w_start, w_end, w_state = runs.rank, runs.start, runs.end, runs.state
    plan = Plan(mode="list", win_rank=w_rank, win_start=w_start, win_end=w_end,
                win_row=np.arange(w_rank.size, dtype=np.int64))
    plan.win_id = plan.win_row
    # Every run's rank is accountable (attribute_rows gives intervals of those only);
    # a rank without runs has an empty span.
    first = np.searchsorted(w_rank, ranks, "left")
    last = np.searchsorted(w_rank, ranks, "right") - 1
    has = last >= first
    plan.span_rank = ranks.astype(np.int32)
    plan.span_start = np.where(has, w_start[np.minimum(first, w_rank.size - 1)] if w_rank.size else 0, 0)
    plan.span_end = np.where(has, w_end[np.maximum(last, 0)] if w_rank.size else 0, 0)
    hist, quarantine, rows = _hist_of_source(events, plan, on_invalid, progress=progress)
    nq = 0 if quarantine is None else quarantine.num_rows
    # One pass over the histogram into (accountable rank, state, activity) cells, by
    # the same rule as the early sweep's (CellCrossing); here each window is one run.
    ok, cells = _core.crossed_cells(hist["rank"], hist["window"], hist["mask"], hist["duration"], w_start=w_start,
                                    w_end=w_end, ranks=ranks.astype(np.int32), i_rank=w_rank, i_start=w_start,
                                    i_end=w_end, i_state=w_state, act_of_mask=act_of_mask, idle=IDLE,
                                    n_states=len(STATES), n_act=n_act)
    assert ok, "the state runs as windows always resolve the states"
    return Ledger(cells_table(cells, rows, nq), att.accountable, attribution=att,
                  quarantine=quarantine, lifecycle_quarantine=att.quarantine)

