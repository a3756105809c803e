"""Reading and writing pau's tables.

Parquet sources are streamed one row group at a time: pyarrow's batch iterator was
seen holding far more memory than a row group on large files, while a row-group
read holds one row group. The next row group is read on a second thread while the
caller works on the current one (pyarrow releases the GIL while decoding).
"""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from ._input import EVENT_COLUMNS, iter_batches

__all__ = ["stream_events", "parquet_files", "read_kineto", "read_nsys", "read_mllog", "read_serving",
           "detect_format"]


def read_kineto(path, **kwargs):
    """PyTorch profiler (Kineto) traces: see :func:`pau.readers.kineto.read_kineto`."""
    from .readers.kineto import read_kineto as _read

    return _read(path, **kwargs)


def read_nsys(path, **kwargs):
    """Nsight Systems SQLite exports: see :func:`pau.readers.nsys.read_nsys`."""
    from .readers.nsys import read_nsys as _read

    return _read(path, **kwargs)


def read_mllog(path, **kwargs):
    """MLPerf ``:::MLLOG`` result logs: see :func:`pau.readers.mllog.read_mllog`."""
    from .readers.mllog import read_mllog as _read

    return _read(path, **kwargs)


def read_serving(path, **kwargs):
    """Serving benchmark results: see :func:`pau.readers.serving.read_serving`."""
    from .readers.serving import read_serving as _read

    return _read(path, **kwargs)


def detect_format(path) -> str:
    """``parquet``, ``kineto``, ``nsys``, ``mllog`` or ``serving``: see
    :func:`pau.readers.detect.detect_format`."""
    from .readers.detect import detect_format as _detect

    return _detect(path)


def parquet_files(source: str | os.PathLike) -> list[tuple[str, dict]]:
    """Parquet files under ``source`` in path order, with their hive partition values."""
    path = os.fspath(source)
    if os.path.isfile(path):
        return [(path, {})]
    if not os.path.isdir(path):
        raise FileNotFoundError(f"no Parquet file or directory at {path!r}")
    dataset = ds.dataset(path, format="parquet", partitioning="hive")
    out = []
    for frag in sorted(dataset.get_fragments(), key=lambda f: f.path):
        out.append((frag.path, ds.get_partition_keys(frag.partition_expression) or {}))
    if not out:
        raise FileNotFoundError(f"no Parquet files under {path!r}")
    return out


class _Progress:
    """A one-line progress bar on stderr: rows, rows per second, elapsed time."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled, self.done = total, enabled, 0
        self.t0 = time.perf_counter()

    def update(self, rows: int) -> None:
        self.done += rows
        if not self.enabled:
            return
        dt = max(time.perf_counter() - self.t0, 1e-9)
        frac = self.done / self.total if self.total else 1.0
        bar = "#" * int(30 * frac)
        sys.stderr.write(f"\r[{bar:<30}] {self.done:,}/{self.total:,} rows "
                         f"{self.done / dt / 1e6:6.1f} M rows/s {dt:6.1f} s")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _row_group_reads(files, columns, batch_rows):
    """Callables, each reading one row group (optionally sliced into batches)."""
    for path, keys in files:
        pf = pq.ParquetFile(path)
        names = pf.schema_arrow.names
        present = [c for c in columns if c in names]
        missing = [c for c in columns if c not in names and c in keys]
        for i in range(pf.num_row_groups):
            def read(pf=pf, i=i, present=present, missing=missing, keys=keys):
                t = pf.read_row_group(i, columns=present)
                for c in missing:
                    t = t.append_column(c, pa.array([keys[c]] * t.num_rows,
                                                    pa.int32() if c == "rank" else None))
                return t
            yield read, pf.metadata.row_group(i).num_rows


def stream_events(source: Any, *, columns=EVENT_COLUMNS, batch_rows: int | None = None,
                  progress: bool | None = None) -> Iterator[pa.RecordBatch]:
    """Record batches of the events columns from a Parquet file/directory or a stream."""
    if not isinstance(source, (str, os.PathLike, list, tuple)):
        yield from _sliced(iter_batches(source, "events"), batch_rows)
        return
    paths = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    files = [f for p in paths for f in parquet_files(p)]
    reads = list(_row_group_reads(files, list(columns), batch_rows))
    total = sum(n for _, n in reads)
    bar = _Progress(total, sys.stderr.isatty() if progress is None else progress)
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            pending = pool.submit(reads[0][0]) if reads else None
            for k in range(len(reads)):
                table = pending.result()
                pending = pool.submit(reads[k + 1][0]) if k + 1 < len(reads) else None
                for batch in _sliced(table.to_batches(), batch_rows):
                    yield batch
                bar.update(table.num_rows)
                del table
    finally:
        bar.close()


def _sliced(batches, batch_rows):
    for b in batches:
        if not batch_rows or b.num_rows <= batch_rows:
            yield b
        else:
            for off in range(0, b.num_rows, batch_rows):
                yield b.slice(off, batch_rows)
