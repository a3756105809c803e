"""pau.engine.distributed: classify a partitioned archive through any executor or a Dask cluster.

One partition is one Parquet file (in pau's archive layout, one rank: see
:func:`pau.engine.io.write_dataset`). Each partition is swept on its own, in a thread, a
process or a Dask worker; what comes back is the sweep's histogram as plain numpy
arrays (no native object crosses a process boundary). Partitions hold disjoint
ranks, so the histograms reduce associatively by concatenation, and the result is
the table :func:`pau.core.classify_dataset` returns for the same source.

With ``results_dir`` each partition's histogram is saved (Parquet) as soon as it
arrives, under a key made of the file's absolute path, size and mtime and the
windows/span plan. A run that was killed, re-run, reuses every saved result and
computes only the missing ones; a partition added to (or rewritten in) the archive
is the only one recomputed. Saved results are written atomically (temporary file,
then rename), so a kill never leaves a half result that would be reused.

Long runs report progress (``progress=``), stop cleanly on Ctrl-C keeping what was
saved (:class:`pau.errors.Interrupted`), and bound the work in flight by a memory
budget (``memory_budget=``; the model is in ``docs/archive.md``).
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import hashlib
import functools
import json
import multiprocessing as mp
import os
import re
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pau.engine import _parquet
from pau.engine import io as _io
from pau.engine._input import EVENT_COLUMNS
from pau.engine._progress import MIN_INTERVAL, Progress, Tracker, tracker
from pau.engine._sweep import (
    Plan, exclusive, feed_batches, finish, join_quarantine, merge_hists, plan_of, rows_of_ranks, stream_plan,
    wide_ranks, with_counts, without_ranks,
)
from pau.engine._threads import cores
from pau.engine.types import Quarantined, check_on_invalid
from pau.errors import Interrupted, MemoryBudgetError, PauError

__all__ = ["classify_partitions", "partitions", "parse_memory_budget", "Progress", "ROW_GROUP_COPIES"]

#: Bumped when the saved per-partition result changes meaning or format.
RESULT_VERSION = 2
_HIST_COLUMNS = ("rank", "window", "mask", "duration")
_SPAN_COLUMNS = ("span_rank", "span_start", "span_end")


def partitions(source: Any) -> list[tuple[str, dict[str, Any]]]:
    """The partitions of a source: ``(file path, hive keys)`` in path order.

    ``source`` is a Parquet file, a directory (hive partitions), or a list of them."""
    if isinstance(source, (str, os.PathLike)):
        return _io.parquet_files(source)
    if isinstance(source, (list, tuple)) and source and all(isinstance(s, (str, os.PathLike)) for s in source):
        return [f for s in source for f in _io.parquet_files(s)]
    raise PauError(f"classify_partitions: expected a Parquet path or a list of paths, got {type(source).__name__}")


def check_job_ranks(parts: list[Any]) -> None:
    """Raise when one rank number appears under two jobs (``job=A/rank=0`` and
    ``job=B/rank=0``): ranks are numbered per job, so those are two accelerators."""
    seen: dict[int, tuple[str, str]] = {}
    for path, keys in parts:
        if "rank" not in keys or "job" not in keys:
            continue
        r, j = int(keys["rank"]), str(keys["job"])
        first = seen.setdefault(r, (j, path))
        if first[0] != j:
            raise PauError(
                f"rank {r} is in job {first[0]!r} ({first[1]}) and in job {j!r} ({path}): ranks are "
                "numbered per job, so these are different accelerators. Fix: pass by_job=True to "
                "classify each job apart (the result gets a 'job' column), or classify one job's "
                f"folder (.../job={j})")


# ---------------------------------------------------------------------------
# memory budget

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}

#: A partition in flight holds up to this many row groups read at once (the one
#: being swept and the next one being decoded), so its footprint is this times
#: its largest row group (:func:`pau.engine.io.row_group_bytes`).
ROW_GROUP_COPIES = 2


def parse_memory_budget(value: Any) -> int | None:
    """Bytes of a ``memory_budget``: an int, or a string such as ``"2GiB"``,
    ``"512 MB"``, ``"1.5GiB"`` (KB/MB/GB/TB are powers of 1000, KiB/MiB/GiB/TiB of
    1024). None means no budget."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        n = int(value)
    elif isinstance(value, str) and (m := re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", value)) \
            and m.group(2).lower() in _UNITS:
        n = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    else:
        raise PauError(f"memory_budget: expected bytes (an int) or a size such as '2GiB' or '500MB', "
                       f"got {value!r}")
    if n <= 0:
        raise PauError(f"memory_budget: must be positive, got {value!r}")
    return n


def _footprints(parts: list[Any], budget: int) -> list[int]:
    """Estimated bytes each partition holds while it is swept; raises when one row
    group alone does not fit the budget."""
    out = []
    for path, keys in parts:
        sizes = _io.row_group_bytes(path, EVENT_COLUMNS, keys)
        big = max(sizes, default=0) * ROW_GROUP_COPIES
        if big > budget:
            rg = int(np.argmax(sizes))
            raise MemoryBudgetError(
                f"memory_budget: {budget:,} bytes cannot hold row group {rg} of {path} "
                f"({sizes[rg]:,} rows-in-memory bytes, {ROW_GROUP_COPIES} in flight: {big:,}). Fix: "
                f"raise memory_budget to at least {big:,}, or rewrite the archive with smaller row "
                "groups (pau.engine.io.write_dataset(..., row_group_size=...))")
        out.append(big)
    return out


# ---------------------------------------------------------------------------
# the per-partition work (runs on a worker; module-level so that it pickles)


def _partition_ranks(path: str, keys: dict[str, Any]) -> np.ndarray:
    if "rank" in keys:
        return np.array([int(keys["rank"])], np.int32)
    return np.unique(_io.read_table(path, columns=["rank"]).column("rank").to_numpy()).astype(np.int32)


def _partition_hist(path: str, keys: dict[str, Any], plan: Plan, on_invalid: str = "raise",
                    tick: Callable[[int], None] | None = None, arenas: _parquet.Arenas | None = None) -> dict[str, Any]:
    """Sweep one partition; returns the histogram (numpy arrays) plus ``rows`` and
    ``quarantine`` (rows set aside, numbered from the partition's first row, or None).
    ``tick(rows)`` is called after each row group, and ``arenas`` lends the buffers
    the row groups are decoded into (thread executors only)."""
    if plan.span_rank.size:
        sel = np.isin(plan.span_rank, _partition_ranks(path, keys))
        plan = dataclasses.replace(plan, span_rank=plan.span_rank[sel], span_start=plan.span_start[sel],
                                   span_end=plan.span_end[sel])
    _io.layout_version(path)
    sweep = plan.sweep()

    # One row group at a time, on this worker's thread: partitions run in parallel. The
    # sweep is done with a row group before the next is read, so one arena holds them
    # all; not with a quarantine, which keeps rows.
    arena = arenas.take() if arenas is not None and on_invalid == "raise" else None

    def batches() -> Iterator[pa.RecordBatch]:
        for read, _ in _io._row_group_reads([(path, keys)], list(EVENT_COLUMNS), None, arena):
            table = read()
            yield from table.to_batches()
            if tick is not None:
                tick(table.num_rows)

    quarantine: list[Any] = []
    try:
        rows = feed_batches(sweep, batches(), on_invalid, quarantine, reorder_ok=False, source=path)
    finally:
        if arena is not None:
            assert arenas is not None
            arenas.give(arena)
    hist: dict[str, Any] = {k: np.asarray(v) for k, v in finish(sweep, path, keep_wide=on_invalid == "quarantine").items()}
    q = pa.concat_tables(quarantine, promote_options="permissive") if quarantine else None
    wide = wide_ranks(hist)
    if wide.size:  # quarantine: the events of those ranks (their spans overflow int64), read once more
        skip = np.empty(0, np.int64) if q is None else np.asarray(q["row"])
        again = (b for read, _ in _io._row_group_reads([(path, keys)], list(EVENT_COLUMNS), None)
                 for b in read().to_batches())
        q = join_quarantine(q, rows_of_ranks(again, wide, skip))
        hist = without_ranks(hist, wide)
    hist["rows"] = rows
    hist["quarantine"] = q
    return hist


def _run_partition(path: str, keys: dict[str, Any], plan: Plan, on_invalid: str = "raise",
                   tick: Callable[[int], None] | None = None, arenas: _parquet.Arenas | None = None) -> dict[str, Any]:
    # Looked up at call time so tests can count calls (thread executors).
    return _partition_hist(path, keys, plan, on_invalid, tick, arenas)


# ---------------------------------------------------------------------------
# saved results


def _plan_digest(plan: Plan) -> str:
    h = hashlib.sha256()
    h.update(f"{plan.mode}:{plan.bucket}".encode())
    for f in dataclasses.fields(plan):
        v = getattr(plan, f.name)
        if isinstance(v, np.ndarray):
            h.update(f.name.encode())
            h.update(str(v.dtype).encode())
            h.update(np.ascontiguousarray(v).tobytes())
    return h.hexdigest()


def _result_key(path: str, plan_digest: str) -> str:
    st = os.stat(path)
    ident = json.dumps([RESULT_VERSION, os.path.abspath(path), st.st_size, st.st_mtime_ns, plan_digest])
    return hashlib.sha256(ident.encode()).hexdigest()


def _write_atomic(table: pa.Table, final: str) -> None:
    tmp = f"{final}.{os.getpid()}.tmp"
    _io.write_table(table, tmp, compression="zstd")  # page checksums: a flipped bit is caught on load
    os.replace(tmp, final)


def _save(results_dir: str, key: str, path: str, hist: dict[str, Any]) -> None:
    q = hist.get("quarantine")
    nq = 0 if q is None else q.num_rows
    if nq:
        # Written first: the result file, written last, marks the partition done.
        _write_atomic(q, os.path.join(results_dir, f"{key}.quarantine.parquet"))
    table = pa.table({k: hist[k] for k in _HIST_COLUMNS})
    meta = {
        "pau.result_version": str(RESULT_VERSION),
        "pau.partition": os.path.abspath(path),
        "pau.rows": str(int(hist["rows"])),
        "pau.quarantined_rows": str(nq),
        "pau.spans": json.dumps({k: hist[k].tolist() for k in _SPAN_COLUMNS}),
    }
    _write_atomic(table.replace_schema_metadata(meta), os.path.join(results_dir, f"{key}.parquet"))


def _load(results_dir: str, key: str, on_invalid: str) -> dict[str, Any] | None:
    """A saved result, or None when it must be computed: missing, unreadable, of
    another version, or holding quarantined rows while ``on_invalid="raise"`` (the
    run must then raise on them)."""
    final = os.path.join(results_dir, f"{key}.parquet")
    if not os.path.exists(final):
        return None
    try:
        table = _io.read_table(final)
        meta = table.schema.metadata or {}
        if meta.get(b"pau.result_version") != str(RESULT_VERSION).encode():
            return None
        nq = int(meta[b"pau.quarantined_rows"])
        if nq and on_invalid != "quarantine":
            return None
        q = _io.read_table(os.path.join(results_dir, f"{key}.quarantine.parquet")) if nq else None
        if q is not None and q.num_rows != nq:
            return None
        # a damaged footer can rename a column or garble the metadata: also a result to recompute
        hist = {k: table.column(k).to_numpy() for k in _HIST_COLUMNS}
        spans = json.loads(meta[b"pau.spans"])
        hist["span_rank"] = np.asarray(spans["span_rank"], np.int32)
        hist["span_start"] = np.asarray(spans["span_start"], np.int64)
        hist["span_end"] = np.asarray(spans["span_end"], np.int64)
        hist["rows"] = int(meta[b"pau.rows"])
        if wide_ranks(hist).size:  # saved before such ranks were refused: its counts wrapped
            return None
    except (OSError, pa.ArrowInvalid, KeyError, ValueError, TypeError):  # pau's corrupt-file error is a ValueError
        return None  # unreadable, damaged or incomplete: recompute it
    hist["quarantine"] = q
    return hist


# ---------------------------------------------------------------------------
# executors


def _make_executor(executor: Any, workers: int | None) -> tuple[cf.Executor, bool]:
    """(executor, owned): an Executor to submit to, and whether we must shut it down."""
    if executor is None or executor == "thread":
        return cf.ThreadPoolExecutor(max_workers=workers or cores()), True
    if executor == "process":
        # spawn: the caller may hold threads (pyarrow's pools); fork would copy them.
        return cf.ProcessPoolExecutor(max_workers=workers or cores(),
                                      mp_context=mp.get_context("spawn")), True
    if isinstance(executor, cf.Executor):
        return executor, False
    raise PauError(f"executor: expected None, 'thread', 'process' or a concurrent.futures.Executor, "
                   f"got {executor!r}")


class _Runner:
    """Runs partitions and hands each result to ``on_result(i, hist, report)`` on the
    caller's thread, keeping in flight at most ``slots`` partitions and, with a
    budget, partitions whose footprints sum to at most the budget.

    On KeyboardInterrupt (Ctrl-C, or raised by a progress callback): partitions not
    started are cancelled, the ones running are waited for (at most one per worker)
    and handed over with ``report=False`` so they can be saved, then the interrupt
    propagates. A second Ctrl-C stops the wait."""

    def __init__(self, plan: Plan, on_invalid: str, on_result: Callable[[int, dict[str, Any], bool], None],
                 track: Tracker, *, executor: Any, client: Any, workers: int | None, costs: list[int],
                 budget: int | None) -> None:
        self.plan, self.on_invalid, self.on_result, self.track = plan, on_invalid, on_result, track
        self.executor, self.client, self.workers = executor, client, workers
        self.costs, self.budget = costs, budget
        self.max_in_flight = 0

    def _fits(self, used: int, n: int, i: int, slots: int | None) -> bool:
        if slots is not None and n >= slots:
            return False
        return self.budget is None or n == 0 or used + self.costs[i] <= self.budget

    def run(self, todo: list[Any]) -> None:
        if not todo:
            return
        if self.client is not None:
            return self._run_dask(todo)
        slots: int | None = self.workers or cores()
        if self.budget is not None:
            # No more threads than partitions that can be in flight at once.
            slots = max(1, min(self.workers or cores(), self.budget // max(1, min(self.costs[i] for i, _, _ in todo))))
        slots = min(slots or 1, len(todo))
        pool, owned = _make_executor(self.executor, slots)
        if not owned and self.workers is None and self.budget is None:
            slots = None  # a pool passed in: it queues what it cannot run yet
        threads = isinstance(pool, cf.ThreadPoolExecutor)
        ticks = self.track.active and threads
        arenas = _parquet.Arenas() if threads else None
        queue = list(reversed(todo))
        inflight: dict[cf.Future[dict[str, Any]], int] = {}
        used = 0
        wait_after_shutdown = True
        try:
            while queue or inflight:
                while queue and self._fits(used, len(inflight), queue[-1][0], slots):
                    i, path, keys = queue.pop()
                    tick = functools.partial(self.track.add_rows, i) if ticks else None
                    inflight[pool.submit(_run_partition, path, keys, self.plan, self.on_invalid, tick, arenas)] = i
                    used += self.costs[i] if self.budget is not None else 0
                    self.max_in_flight = max(self.max_in_flight, len(inflight))
                done, _ = cf.wait(list(inflight), timeout=MIN_INTERVAL if self.track.active else None,
                                  return_when=cf.FIRST_COMPLETED)
                for fut in sorted(done, key=inflight.__getitem__):
                    i = inflight.pop(fut)
                    used -= self.costs[i] if self.budget is not None else 0
                    self.on_result(i, fut.result(), True)
                self.track.poll()
        except KeyboardInterrupt:
            for fut in inflight:
                fut.cancel()
            running = [f for f in inflight if not f.cancelled()]
            try:
                for fut in cf.as_completed(running):
                    if fut.exception() is None:
                        self.on_result(inflight[fut], fut.result(), False)
            except KeyboardInterrupt:
                wait_after_shutdown = False  # a second Ctrl-C: do not wait any longer
            raise
        finally:
            for fut in inflight:
                fut.cancel()
            if owned:
                pool.shutdown(wait=wait_after_shutdown, cancel_futures=True)

    def _run_dask(self, todo: list[Any]) -> None:
        from distributed import as_completed  # optional dependency: pau[dask]

        client = self.client
        [plan_f] = client.scatter([self.plan], broadcast=True)
        queue = list(reversed(todo))
        inflight: dict[Any, int] = {}
        used = 0

        def fill() -> list[Any]:
            nonlocal used
            new: list[Any] = []
            while queue and self._fits(used, len(inflight), queue[-1][0], self.workers):
                i, path, keys = queue.pop()
                fut = client.submit(_run_partition, path, keys, plan_f, self.on_invalid, None, pure=False)
                inflight[fut] = i
                used += self.costs[i] if self.budget is not None else 0
                self.max_in_flight = max(self.max_in_flight, len(inflight))
                new.append(fut)
            return new

        stream = as_completed(fill())  # type: ignore[no-untyped-call, unused-ignore]
        try:
            for fut in stream:
                i = inflight.pop(fut)
                used -= self.costs[i] if self.budget is not None else 0
                self.on_result(i, fut.result(), True)
                for new in fill():
                    stream.add(new)  # type: ignore[no-untyped-call, unused-ignore]
        finally:
            client.cancel(list(inflight))


def _histograms(parts: list[Any], plan: Plan, *, on_invalid: str, executor: Any, client: Any, workers: int | None,
                results_dir: str | os.PathLike[str] | None, progress: Any, memory_budget: int | str | None,
                what: str) -> tuple[list[Any], int, int]:
    """Every partition's histogram (saved ones reused), computing the missing ones.

    Returns (histograms, partitions computed, the most partitions in flight at once)."""
    budget = parse_memory_budget(memory_budget)
    costs = _footprints(parts, budget) if budget is not None else [0] * len(parts)
    track = tracker(progress, len(parts), None)
    if track.active:
        track.rows_total = sum(pq.read_metadata(p).num_rows for p, _ in parts)
    digest = _plan_digest(plan)
    rdir = None
    if results_dir is not None:
        rdir = os.fspath(results_dir)
        os.makedirs(rdir, exist_ok=True)
    hists: list[Any] = [None] * len(parts)
    keys: list[Any] = [None] * len(parts)
    todo: list[tuple[int, str, dict[str, Any]]] = []
    for i, (path, hive) in enumerate(parts):
        if rdir is not None:
            keys[i] = _result_key(path, digest)
            hists[i] = _load(rdir, keys[i], on_invalid)
        if hists[i] is None:
            todo.append((i, path, hive))
    saved = [len(parts) - len(todo)]

    def on_result(i: int, hist: dict[str, Any], report: bool) -> None:
        if rdir is not None:
            _save(rdir, keys[i], parts[i][0], hist)
            saved[0] += 1
        hists[i] = hist
        if report:
            track.partition_done(i, int(hist["rows"]))

    runner = _Runner(plan, on_invalid, on_result, track, executor=executor, client=client, workers=workers,
                     costs=costs, budget=budget)
    try:
        for i, h in enumerate(hists):
            if h is not None:
                track.partition_done(i, int(h["rows"]))
        runner.run(todo)
        track._emit()
    except KeyboardInterrupt as exc:
        if isinstance(exc, Interrupted):
            raise
        if rdir is None:
            msg = (f"{what} interrupted: {len(parts)} partitions, none kept (no results_dir). Fix: "
                   "run pau.engine.distributed.classify_partitions(..., results_dir=DIR) to make long runs "
                   "resumable")
            raise Interrupted(msg, saved=0, total=len(parts), results_dir=None) from None
        msg = (f"{what} interrupted: {saved[0]} of {len(parts)} partitions are saved in {rdir!r}; "
               f"re-run with the same results_dir to resume (the {len(parts) - saved[0]} missing "
               "are computed, the rest reused)")
        raise Interrupted(msg, saved=saved[0], total=len(parts), results_dir=rdir) from None
    finally:
        track.close()
    return hists, len(todo), runner.max_in_flight


# ---------------------------------------------------------------------------
# public API


def classify_partitions(
    root_or_files: Any,
    *,
    executor: Any = None,
    client: Any = None,
    workers: int | None = None,
    windows: Any = None,
    span: Any = None,
    priority: Sequence[str] | None = None,
    results_dir: str | os.PathLike[str] | None = None,
    on_invalid: str = "raise",
    progress: Any = None,
    memory_budget: int | str | None = None,
    by_job: bool = False,
) -> pa.Table | Quarantined:
    """:func:`pau.core.classify_dataset`, one partition (Parquet file) per task.

    Parameters
    ----------
    root_or_files : str, os.PathLike or list of them
        A Parquet file, a directory (hive partitions such as ``rank=3/`` fill a
        missing ``rank`` column) or a list. **Each rank must live in one file**
        (pau's layout, :func:`pau.engine.io.write_dataset`); a rank found in two files raises
        :class:`pau.errors.PauError` (use :func:`pau.core.classify_dataset` then).
        Each file must be ordered by ``start_ns`` within each rank.
    executor : None, "thread", "process" or concurrent.futures.Executor
        Where partitions run. Default (``None`` or ``"thread"``): a local thread
        pool (the native sweep releases the GIL). ``"process"``: a local process pool
        (spawned). An Executor you pass is used and not shut down.
    client : distributed.Client, optional
        Run on a Dask cluster instead (optional extra ``pau[dask]``). Workers must
        be able to read the partition paths.
    workers : int, optional
        Size of the pool pau creates (default: the number of cores); with an
        executor or client you pass, the most partitions submitted at once.
    windows, span, priority
        As in :func:`pau.core.classify`.
    results_dir : str or os.PathLike, optional
        Save each partition's result here as it finishes and reuse saved results on
        a re-run (keyed by the partition's path, size and mtime, and the windows and
        span): a killed or interrupted run resumes, and only new or changed
        partitions are computed.
    on_invalid : {"raise", "quarantine"}
        As in :func:`pau.core.classify`. With ``"quarantine"`` the result is
        :class:`pau.core.Quarantined` ``(table, quarantine)``: the bad rows (the
        columns read, ``rank, start_ns, end_ns, kind``) with ``row`` (0-based in the
        archive's files concatenated in path order, as :func:`pau.engine.io.read_dataset`
        reads them) and ``reason``; equal to ``classify`` on that concatenated table.
    progress : None, bool or callable
        None/False: nothing. True: a one-line bar on stderr when stderr is a
        terminal. A callable receives a :class:`Progress` (partitions done/total,
        rows done/total, elapsed, rows per second) as partitions finish and, with
        thread pools, at most ten times a second in between, on the calling thread.
    memory_budget : int or str, optional
        Bytes (or ``"2GiB"``, ``"500MB"``) for the partitions in flight: each one is
        charged :data:`ROW_GROUP_COPIES` times its largest row group in memory
        (:func:`pau.engine.io.row_group_bytes`, from the Parquet footers), and no more are
        started than fit, nor more threads created. Raises
        :class:`pau.errors.MemoryBudgetError` when one row group does not fit.
    by_job : bool, default False
        Archives partitioned by job and rank (``job=A/rank=0``, ``job=B/rank=0``)
        number ranks per job. Without ``by_job`` a rank number found under two jobs
        raises :class:`pau.errors.PauError` naming both; with it each job is
        classified apart and the result starts with a ``job`` column (string), jobs
        in sorted order, each equal to ``classify`` on that job's rows.

    Returns
    -------
    pyarrow.Table or Quarantined
        Equal to ``pau.core.classify_dataset(root_or_files, windows=..., span=...,
        priority=...)``. Schema metadata: ``pau.rows``, ``pau.quarantined_rows``,
        ``pau.partitions``, ``pau.partitions_computed``, ``pau.partitions_reused``,
        ``pau.max_in_flight``.

    Raises
    ------
    pau.errors.Interrupted
        On Ctrl-C (a ``KeyboardInterrupt``): pending partitions are cancelled, running
        ones finish and are saved, and the message says how many are saved in
        ``results_dir``; the same call resumes.
    """
    if client is not None and executor is not None:
        raise PauError("classify_partitions: give an executor or a Dask client, not both")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise PauError(f"workers: expected a positive int, got {workers!r}")
    if not isinstance(by_job, bool):
        raise PauError(f"by_job: expected True or False, got {by_job!r}")
    check_on_invalid(on_invalid)
    # Exclusive time alone: the nested-union sweep where it applies (its levels are part
    # of the plan's digest, so a saved result is only reused for the same priority).
    plan = stream_plan(plan_of(windows, span), priority)
    parts = partitions(root_or_files)
    if by_job:
        missing = [p for p, k in parts if "job" not in k]
        if missing:
            raise PauError(f"by_job=True: {missing[0]} is not under a job=J folder. Fix: write the "
                           "archive with pau.engine.io.write_dataset(events, root, job=...), or drop by_job")
    else:
        check_job_ranks(parts)
    hists, computed, in_flight = _histograms(
        parts, plan, on_invalid=on_invalid, executor=executor, client=client, workers=workers,
        results_dir=results_dir, progress=progress, memory_budget=memory_budget, what="classify_partitions")
    quarantine = _quarantine(hists, parts, by_job) if on_invalid == "quarantine" else None
    if by_job:
        out, rows = _exclusive_by_job(hists, parts, plan, priority)
    else:
        hist, rows = _combine(hists, parts, plan)
        out = exclusive(hist, plan, priority)
    out = with_counts(out, rows, 0 if quarantine is None else quarantine.num_rows)
    meta = dict(out.schema.metadata)
    meta[b"pau.partitions"] = str(len(parts)).encode()
    meta[b"pau.partitions_computed"] = str(computed).encode()
    meta[b"pau.partitions_reused"] = str(len(parts) - computed).encode()
    meta[b"pau.max_in_flight"] = str(in_flight).encode()
    out = out.replace_schema_metadata(meta)
    return Quarantined(out, quarantine) if on_invalid == "quarantine" else out


def _exclusive_by_job(hists: list[Any], parts: list[Any], plan: Plan, priority: Sequence[str] | None
                      ) -> tuple[pa.Table, int]:
    """Exclusive time per job (each job's partitions combined apart), a ``job`` column
    first, jobs in sorted order; and the rows read."""
    tables, rows = [], 0
    for job in sorted({str(k["job"]) for _, k in parts}):
        idx = [i for i, (_, k) in enumerate(parts) if str(k["job"]) == job]
        hist, n = _combine([hists[i] for i in idx], [parts[i] for i in idx], plan)
        t = exclusive(hist, plan, priority)
        tables.append(t.add_column(0, "job", pa.array([job] * t.num_rows, pa.string())))
        rows += n
    return pa.concat_tables(tables), rows


def merged_hist(parts: list[Any], plan: Plan, *, workers: int | None = None, on_invalid: str = "raise",
                progress: Any = None, memory_budget: Any = None) -> tuple[dict[str, Any], pa.Table | None, int]:
    """The histogram of a rank-partitioned source (its :func:`partitions`), one
    partition per thread, the quarantine (or None) and the number of rows read (for
    :mod:`pau.core`: classify_dataset and ledger)."""
    hists, _, _ = _histograms(parts, plan, on_invalid=on_invalid, executor=None, client=None, workers=workers,
                              results_dir=None, progress=progress, memory_budget=memory_budget,
                              what="classify_dataset")
    quarantine = _quarantine(hists, parts, False) if on_invalid == "quarantine" else None
    hist, rows = _combine(hists, parts, plan)
    return hist, quarantine, rows


def _quarantine(hists: list[Any], parts: list[Any], by_job: bool) -> pa.Table | None:
    """The partitions' quarantined rows, numbered in the files concatenated in path order."""
    out = []
    offset = 0
    for (_, keys), h in zip(parts, hists):
        q = h.get("quarantine")
        if q is not None and q.num_rows:
            q = q.set_column(q.schema.get_field_index("row"), "row",
                             pa.array(np.asarray(q["row"]) + offset, pa.int64()))
            if by_job:
                q = q.append_column("job", pa.array([str(keys["job"])] * q.num_rows, pa.string()))
            out.append(q)
        offset += int(h["rows"])
    return pa.concat_tables(out, promote_options="permissive") if out else None


def _combine(hists: list[Any], parts: list[Any], plan: Plan) -> tuple[dict[str, Any], int]:
    """Merge per-partition histograms (disjoint ranks); sweep spans of ranks without
    events once. Returns (histogram, rows)."""
    rows = sum(int(h["rows"]) for h in hists)
    hists = [{k: v for k, v in h.items() if k not in ("rows", "quarantine")} for h in hists]
    seen: dict[str, Any] = {}
    for (path, _), h in zip(parts, hists):
        for r in h["span_rank"].tolist():
            if r in seen:
                raise PauError(f"rank {r} is in two partitions ({seen[r]!r} and {path!r}): partitions "
                               "must hold disjoint ranks. Fix: write the archive with "
                               "pau.engine.io.write_dataset, or use pau.core.classify_dataset")
            seen[r] = path
    # Spans of ranks with no events in any partition: all idle, swept once here.
    rest = ~np.isin(plan.span_rank, np.fromiter(seen, np.int32, len(seen)))
    if rest.any() or not hists:
        p = dataclasses.replace(plan, span_rank=plan.span_rank[rest], span_start=plan.span_start[rest],
                                span_end=plan.span_end[rest])
        hists.append({k: np.asarray(v) for k, v in finish(p.sweep()).items()})
    return merge_hists(hists), rows
