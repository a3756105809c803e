"""pau.distributed: classify a partitioned archive through any executor or a Dask cluster.

One partition is one Parquet file (in pau's archive layout, one rank: see
:func:`pau.io.write_dataset`). Each partition is swept on its own, in a thread, a
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
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import hashlib
import json
import os
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from . import io as _io
from ._input import EVENT_COLUMNS
from .core import _exclusive, _feed_batches, _merge_hists, _Plan, _plan, _with_counts
from .errors import PauError

__all__ = ["classify_partitions", "partitions"]

#: Bumped when the saved per-partition result changes meaning or format.
RESULT_VERSION = 1
_HIST_COLUMNS = ("rank", "window", "mask", "duration")
_SPAN_COLUMNS = ("span_rank", "span_start", "span_end")


def partitions(source: Any) -> list[tuple[str, dict]]:
    """The partitions of a source: ``(file path, hive keys)`` in path order.

    ``source`` is a Parquet file, a directory (hive partitions), or a list of them."""
    if isinstance(source, (str, os.PathLike)):
        return _io.parquet_files(source)
    if isinstance(source, (list, tuple)) and source and all(isinstance(s, (str, os.PathLike)) for s in source):
        return [f for s in source for f in _io.parquet_files(s)]
    raise PauError(f"classify_partitions: expected a Parquet path or a list of paths, got {type(source).__name__}")


# ---------------------------------------------------------------------------
# the per-partition work (runs on a worker; module-level so that it pickles)


def _partition_ranks(path: str, keys: dict) -> np.ndarray:
    if "rank" in keys:
        return np.array([int(keys["rank"])], np.int32)
    return np.unique(pq.read_table(path, columns=["rank"]).column("rank").to_numpy()).astype(np.int32)


def _partition_hist(path: str, keys: dict, plan: _Plan) -> dict:
    """Sweep one partition; returns the histogram (numpy arrays) plus ``rows``."""
    if plan.span_rank.size:
        sel = np.isin(plan.span_rank, _partition_ranks(path, keys))
        plan = dataclasses.replace(plan, span_rank=plan.span_rank[sel], span_start=plan.span_start[sel],
                                   span_end=plan.span_end[sel])
    _io.layout_version(path)
    sweep = plan.sweep()
    # Read one row group at a time, on this worker's thread: partitions run in parallel.
    batches = (b for read, _ in _io._row_group_reads([(path, keys)], list(EVENT_COLUMNS), None)
               for b in read().to_batches())
    rows = _feed_batches(sweep, batches, "raise", [], reorder_ok=False, source=path)
    hist = {k: np.asarray(v) for k, v in sweep.finish().items()}
    hist["rows"] = rows
    return hist


def _run_partition(path: str, keys: dict, plan: _Plan) -> dict:
    # Looked up at call time so tests can count calls (thread executors).
    return _partition_hist(path, keys, plan)


# ---------------------------------------------------------------------------
# saved results


def _plan_digest(plan: _Plan) -> str:
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


def _save(results_dir: str, key: str, path: str, hist: dict) -> None:
    table = pa.table({k: hist[k] for k in _HIST_COLUMNS})
    meta = {
        "pau.result_version": str(RESULT_VERSION),
        "pau.partition": os.path.abspath(path),
        "pau.rows": str(int(hist["rows"])),
        "pau.spans": json.dumps({k: hist[k].tolist() for k in _SPAN_COLUMNS}),
    }
    table = table.replace_schema_metadata(meta)
    final = os.path.join(results_dir, f"{key}.parquet")
    tmp = f"{final}.{os.getpid()}.tmp"
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, final)


def _load(results_dir: str, key: str) -> dict | None:
    final = os.path.join(results_dir, f"{key}.parquet")
    if not os.path.exists(final):
        return None
    try:
        table = pq.read_table(final)
    except (OSError, pa.ArrowInvalid):
        return None  # unreadable: recompute it
    meta = table.schema.metadata or {}
    if meta.get(b"pau.result_version") != str(RESULT_VERSION).encode():
        return None
    hist = {k: table.column(k).to_numpy() for k in _HIST_COLUMNS}
    spans = json.loads(meta[b"pau.spans"])
    hist["span_rank"] = np.asarray(spans["span_rank"], np.int32)
    hist["span_start"] = np.asarray(spans["span_start"], np.int64)
    hist["span_end"] = np.asarray(spans["span_end"], np.int64)
    hist["rows"] = int(meta[b"pau.rows"])
    return hist


# ---------------------------------------------------------------------------
# executors


def _make_executor(executor: Any, workers: int | None):
    """(executor, owned): an Executor to submit to, and whether we must shut it down."""
    if executor is None or executor == "thread":
        return cf.ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1), True
    if executor == "process":
        import multiprocessing as mp

        # spawn: the caller may hold threads (pyarrow's pools); fork would copy them.
        return cf.ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1,
                                      mp_context=mp.get_context("spawn")), True
    if isinstance(executor, cf.Executor):
        return executor, False
    raise PauError(f"executor: expected None, 'thread', 'process' or a concurrent.futures.Executor, "
                   f"got {executor!r}")


def _submit_all(todo, plan, executor, client, workers):
    """Yield ``(partition index, histogram)`` as partitions finish."""
    if client is not None:
        from distributed import as_completed  # optional dependency: pau[dask]

        [plan_f] = client.scatter([plan], broadcast=True)
        futs = {client.submit(_run_partition, path, keys, plan_f, pure=False): i for i, path, keys in todo}
        try:
            for fut in as_completed(list(futs)):
                yield futs[fut], fut.result()
        finally:
            client.cancel(list(futs))
        return
    pool, owned = _make_executor(executor, workers)
    futs = {}
    try:
        futs = {pool.submit(_run_partition, path, keys, plan): i for i, path, keys in todo}
        for fut in cf.as_completed(futs):
            yield futs[fut], fut.result()
    finally:
        for f in futs:
            f.cancel()
        if owned:
            pool.shutdown(wait=True, cancel_futures=True)


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
    results_dir: str | os.PathLike | None = None,
) -> pa.Table:
    """:func:`pau.core.classify_dataset`, one partition (Parquet file) per task.

    Parameters
    ----------
    root_or_files : str, os.PathLike or list of them
        A Parquet file, a directory (hive partitions such as ``rank=3/`` fill a
        missing ``rank`` column) or a list. **Each rank must live in one file**
        (pau's layout, :func:`pau.io.write_dataset`); a rank found in two files raises
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
        Size of the pool pau creates (default: the number of cores).
    windows, span, priority
        As in :func:`pau.core.classify`.
    results_dir : str or os.PathLike, optional
        Save each partition's result here as it finishes and reuse saved results on
        a re-run (keyed by the partition's path, size and mtime, and the windows and
        span): a killed run resumes, and only new or changed partitions are computed.

    Returns
    -------
    pyarrow.Table
        Equal to ``pau.core.classify_dataset(root_or_files, windows=..., span=...,
        priority=...)``. Schema metadata: ``pau.rows``, ``pau.quarantined_rows`` (0),
        ``pau.partitions``, ``pau.partitions_computed``, ``pau.partitions_reused``.
    """
    if client is not None and executor is not None:
        raise PauError("classify_partitions: give an executor or a Dask client, not both")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise PauError(f"workers: expected a positive int, got {workers!r}")
    plan = _plan(windows, span)
    parts = partitions(root_or_files)
    digest = _plan_digest(plan)
    rdir = None
    if results_dir is not None:
        rdir = os.fspath(results_dir)
        os.makedirs(rdir, exist_ok=True)
    hists: list = [None] * len(parts)
    keys = [None] * len(parts)
    todo = []
    for i, (path, hive) in enumerate(parts):
        if rdir is not None:
            keys[i] = _result_key(path, digest)
            hists[i] = _load(rdir, keys[i])
        if hists[i] is None:
            todo.append((i, path, hive))
    for i, hist in _submit_all(todo, plan, executor, client, workers):
        if rdir is not None:
            _save(rdir, keys[i], parts[i][0], hist)
        hists[i] = hist
    return _reduce(hists, parts, plan, priority, computed=len(todo))


def merged_hist(source: Any, plan: _Plan, *, workers: int | None = None) -> tuple[dict, int]:
    """The histogram of a rank-partitioned source, one partition per thread, and the
    number of rows read (for :mod:`pau.core`: classify_dataset and ledger)."""
    parts = partitions(source)
    hists: list = [None] * len(parts)
    for i, hist in _submit_all([(i, p, k) for i, (p, k) in enumerate(parts)], plan, None, None, workers):
        hists[i] = hist
    return _combine(hists, parts, plan)


def _combine(hists: list, parts: list, plan: _Plan) -> tuple[dict, int]:
    """Merge per-partition histograms (disjoint ranks); sweep spans of ranks without
    events once. Returns (histogram, rows)."""
    rows = sum(int(h.pop("rows")) for h in hists)
    seen: dict = {}
    for (path, _), h in zip(parts, hists):
        for r in h["span_rank"].tolist():
            if r in seen:
                raise PauError(f"rank {r} is in two partitions ({seen[r]!r} and {path!r}): partitions "
                               "must hold disjoint ranks. Fix: write the archive with "
                               "pau.io.write_dataset, or use pau.core.classify_dataset")
            seen[r] = path
    # Spans of ranks with no events in any partition: all idle, swept once here.
    rest = ~np.isin(plan.span_rank, np.fromiter(seen, np.int32, len(seen)))
    if rest.any() or not hists:
        p = dataclasses.replace(plan, span_rank=plan.span_rank[rest], span_start=plan.span_start[rest],
                                span_end=plan.span_end[rest])
        hists.append({k: np.asarray(v) for k, v in p.sweep().finish().items()})
    return _merge_hists(hists), rows


def _reduce(hists: list, parts: list, plan: _Plan, priority, *, computed: int) -> pa.Table:
    hist, rows = _combine(hists, parts, plan)
    out = _with_counts(_exclusive(hist, plan, priority), rows, 0)
    meta = dict(out.schema.metadata)
    meta[b"pau.partitions"] = str(len(parts)).encode()
    meta[b"pau.partitions_computed"] = str(computed).encode()
    meta[b"pau.partitions_reused"] = str(len(parts) - computed).encode()
    return out.replace_schema_metadata(meta)
