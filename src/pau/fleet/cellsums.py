"""The hourly cells of a fleet rollup read and summed (``docs/fleet.md``, "Rollups"): a
folder of Parquet files streamed row group by row group with read-ahead, and each batch
checked and summed per (period, fine group, state) into :class:`pau.fleet.sums.Acc`, by
the kernel of :mod:`pau.fleet._cells` into its dense sums, or by NumPy."""

from __future__ import annotations

import functools
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pau.engine.vocab import STATES
from pau.errors import PauError, SchemaError
import pau.engine._jit as _jit
import pau.fleet._cells as _cells
import pau.fleet.groups as _groups
import pau.fleet.sums as _sums
from pau.fleet.periods import NS_PER_HOUR, Period, period_starts

__all__ = ["BATCH_ROWS", "KERNEL_AFTER", "KERNEL_HOURS", "READ_AHEAD", "add_cells", "cell_batches", "inside"]

#: Cells per batch read from the archive.
BATCH_ROWS = 1 << 20


def cell_batches(cells: Any) -> Iterator[pa.RecordBatch]:
    if isinstance(cells, pa.Table):
        yield from cells.to_batches(max_chunksize=BATCH_ROWS)
    elif isinstance(cells, pa.RecordBatch):
        yield cells
    elif isinstance(cells, str):
        yield from _folder_batches(cells)
    else:
        yield from cells


#: Row groups of a folder of cells read ahead, on as many helper threads.
READ_AHEAD = 2


def _folder_batches(folder: str) -> Iterator[pa.RecordBatch]:
    """The cells of a folder of Parquet files, row group by row group in order, the next
    :data:`READ_AHEAD` read on helper threads while this one is summed (Parquet decoding
    releases the GIL); a file's row groups are counted by the thread that reads its first
    (no pass over the files first). Run and state as dictionaries: a batch's few
    distinct keys are looked up once."""
    paths = [os.path.join(folder, n) for n in sorted(n for n in os.listdir(folder) if n.endswith(".parquet"))]
    with ThreadPoolExecutor(max_workers=READ_AHEAD) as ex:
        ahead: deque[tuple[str, int, Future[tuple[pa.Table, int]]]] = deque()
        files = iter(paths)
        while True:
            while len(ahead) < READ_AHEAD and (path := next(files, None)) is not None:
                ahead.append((path, 0, ex.submit(_read_group, path, 0)))
            if not ahead:
                return
            path, i, done = ahead.popleft()
            table, groups = done.result()
            if i + 1 < groups:  # the file's next row group before the next file's
                ahead.appendleft((path, i + 1, ex.submit(_read_group, path, i + 1)))
            yield from table.to_batches(max_chunksize=BATCH_ROWS)


def _read_group(path: str, i: int) -> tuple[pa.Table, int]:
    """Row group ``i`` of a cells file (none past its last) and its number of row groups."""
    with pq.ParquetFile(path, read_dictionary=["run", "state"]) as f:
        n = f.num_row_groups
        columns = ["run", "hour_ns", "state", "duration_ns"]
        return (f.read_row_group(i, columns=columns) if i < n else pa.table({c: [] for c in columns})), n


def add_cells(acc: _sums.Acc, cells: Any, runs: pa.Table, g: _groups.Groups, run_keep: np.ndarray,
               runs_with_job: np.ndarray, measured: np.ndarray | None, p: Period, lo: int | None,
               hi: int | None) -> None:
    """The cells, a batch at a time, into ``acc`` (columns: the states, allocated, and
    with ``measured`` (whether each run's energy was) allocated of runs not measured):
    by the kernel of :mod:`pau.fleet._cells` into the dense sums, or by NumPy
    (:func:`_add_batch`: sparse sums, a batch the kernel does not take, a batch with a
    bad row, which it refuses naming it, and the first :data:`KERNEL_AFTER` cells of a
    process that has not loaded Numba yet)."""
    index = _groups.KeyIndex(runs["run"])
    alone = ~runs_with_job
    flags = (run_keep * _cells.KEPT | alone * _cells.ALONE).astype(np.int8)
    if measured is not None:
        flags |= (alone & ~measured).astype(np.int8) * np.int8(_cells.UNMEASURED)
    seen = 0
    for b in cell_batches(cells):
        if b.num_rows == 0:
            continue
        for c in ("run", "hour_ns", "state", "duration_ns"):
            if c not in b.schema.names:
                raise SchemaError("cells", c, "is missing", "give the fleet's hourly cells (pau.fleet.CELLS_SCHEMA)")
        kernel = acc.rows is not None and (seen >= KERNEL_AFTER or _jit.loaded())
        if not kernel or not _summed_by_kernel(acc, b, index, g, flags, p, lo, hi):
            _add_batch(acc, b, index, g, flags, p, lo, hi)
        seen += b.num_rows


#: Cells a process sums by NumPy before it loads Numba for the kernel: loading it (once a
#: process) takes about 0.7 s and 120 MiB, what the kernel saves on about 20 M cells; a
#: process that has loaded it uses the kernel from the first cell.
KERNEL_AFTER = 1 << 22


#: The widest batch (in hours from its first to its last) the kernel takes: its table of
#: hours is 8 bytes an hour.
KERNEL_HOURS = 1 << 20


@functools.cache
def _state_names() -> pa.Array:
    """STATES as an Arrow array (made on first use: ``pa.array`` at import loads pandas)."""
    return pa.array(list(STATES), pa.string())


def _summed_by_kernel(acc: _sums.Acc, b: pa.RecordBatch, index: _groups.KeyIndex, g: _groups.Groups,
                      flags: np.ndarray, p: Period, lo: int | None, hi: int | None) -> bool:
    """The batch summed into ``acc``'s dense table by :func:`pau.fleet._cells.add_cells`
    (True), or False (nothing summed) when the kernel does not take it: nulls, ``run`` or
    ``state`` not dictionaries, hours too far apart. A bad row is refused as NumPy refuses
    it (:func:`_checked`)."""
    rcol, scol, hcol, dcol = (b.column(c) for c in ("run", "state", "hour_ns", "duration_ns"))
    if not (pa.types.is_dictionary(rcol.type) and pa.types.is_dictionary(scol.type)) or any(
            c.null_count for c in (rcol, scol, hcol, dcol)):
        return False
    hour = np.asarray(hcol.to_numpy(zero_copy_only=False), np.int64)
    h_lo, h_hi = int(hour.min()), int(hour.max())
    if h_lo < np.iinfo(np.int64).min + NS_PER_HOUR or h_hi // NS_PER_HOUR - h_lo // NS_PER_HOUR >= KERNEL_HOURS:
        return False
    first = h_lo // NS_PER_HOUR
    hours = (first + np.arange(h_hi // NS_PER_HOUR - first + 1, dtype=np.int64)) * NS_PER_HOUR
    kept = inside(hours, lo, hi)  # a run of hours: since and until are on the hour
    starts = period_starts(hours[kept], p)
    new = np.r_[True, starts[1:] != starts[:-1]]  # an hour's period starts no earlier than the last hour's
    row = np.full(len(hours), -1, np.int64)
    row[kept] = acc.dense_rows(starts[new])[np.cumsum(new) - 1] if len(starts) else 0
    run_rows = index.entries(rcol.dictionary)
    found = run_rows >= 0
    lookup = _cells.Lookup(np.where(found, g.run[np.maximum(run_rows, 0)], -1) if len(g.run) else run_rows,
                           np.where(found, flags[np.maximum(run_rows, 0)], 0).astype(np.int8) if len(flags)
                           else np.zeros(len(run_rows), np.int8),
                           np.asarray(pc.index_in(scol.dictionary, value_set=_state_names()).fill_null(-1), np.int64))
    cells = _cells.Cells(rcol.indices.to_numpy(zero_copy_only=False), scol.indices.to_numpy(zero_copy_only=False),
                         hour, np.asarray(dcol.to_numpy(zero_copy_only=False), np.int64))
    code, i, at = _cells.add_cells(cells, lookup, _cells.Hours(first, row), acc.table, acc.C)
    if code == _cells.OVERFLOW:
        total = int(acc.table.reshape(-1)[at]) + int(cells.duration[i])
        raise PauError(f"a rollup sum of {total:,} ns {_sums.TOO_BIG}")
    if code == _cells.BAD_ROW:  # refused by the NumPy checks, which name the column, a value and the count
        _checked(b, index)
        raise PauError(f"cells: row {i} of a batch failed the rollup kernel's checks but none of NumPy's (a bug "
                       "in pau). Fix: report it with the archive")
    return True


def _add_batch(acc: _sums.Acc, b: pa.RecordBatch, index: _groups.KeyIndex, g: _groups.Groups, flags: np.ndarray,
               p: Period, lo: int | None, hi: int | None) -> None:
    """A batch of cells checked (:func:`_checked`) and summed into ``acc`` by NumPy."""
    r, s, hour, d = _checked(b, index)
    f = flags[r]
    keep = (f & _cells.KEPT) != 0
    keep &= inside(hour, lo, hi)
    if not keep.all():
        r, s, d, hour, f = r[keep], s[keep], d[keep], hour[keep], f[keep]
    fine = g.run[r]
    start = period_starts(hour, p)
    alone = (f & _cells.ALONE) != 0
    every = bool(alone.all())  # a run with no job stands on its own: its accountable time is allocated
    alloc_col = len(STATES)
    acc.add(fine, start, s, d, total=alloc_col if every else None)
    if not every:
        acc.add(fine[alone], start[alone], np.full(int(alone.sum()), alloc_col), d[alone])
    unmeasured = (f & _cells.UNMEASURED) != 0
    if unmeasured.any():
        acc.add(fine[unmeasured], start[unmeasured], np.full(int(unmeasured.sum()), alloc_col + 1), d[unmeasured])


def _checked(b: pa.RecordBatch, index: _groups.KeyIndex) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A batch of cells' run rows, state indices, hours and durations, each refusal naming
    the column, a value and the count."""
    rcol, scol = b.column("run"), b.column("state")
    r = index.rows(rcol)
    s = np.asarray(pc.index_in(scol.cast(pa.string()) if pa.types.is_dictionary(scol.type) else scol,
                               value_set=_state_names()).fill_null(-1), np.int64)
    for what, arr, src in (("run", r, rcol), ("state", s, scol)):
        if (arr < 0).any():
            bad = src[int(np.flatnonzero(arr < 0)[0])].as_py()
            fix = ("no run of the runs table. Fix: read the archive with pau.read_fleet" if what == "run"
                   else f"not a lifecycle state. Fix: one of {', '.join(STATES)}")
            raise PauError(f"cells: column '{what}': {bad!r} ({int((arr < 0).sum())} rows): {fix}")
    hour, d = _hours_durations(b)
    return r, s, hour, d


def _hours_durations(b: pa.RecordBatch) -> tuple[np.ndarray, np.ndarray]:
    """A batch of cells' ``hour_ns`` and ``duration_ns``, refused when null, negative or
    (the hour) not on an hour."""
    hcol, dcol = b.column("hour_ns"), b.column("duration_ns")
    if hcol.null_count or dcol.null_count:
        raise PauError("cells: a null hour_ns or duration_ns. Fix: every cell has an hour and a duration")
    hour = np.asarray(hcol.to_numpy(zero_copy_only=False), dtype=np.int64)
    d = np.asarray(dcol.to_numpy(zero_copy_only=False), dtype=np.int64)
    if (d < 0).any():
        raise PauError(f"cells: column 'duration_ns': negative ({int(d[d < 0][0])}). Fix: durations are >= 0")
    if (hour % NS_PER_HOUR).any():
        raise PauError("cells: column 'hour_ns': not on an hour. Fix: cells start on the hour (pau.fleet.ingest)")
    return hour, d


def inside(t: np.ndarray, lo: int | None, hi: int | None) -> np.ndarray:
    """``lo <= t < hi`` (either end open when None)."""
    keep = np.ones(len(t), bool)
    if lo is not None:
        keep &= t >= lo
    if hi is not None:
        keep &= t < hi
    return keep
