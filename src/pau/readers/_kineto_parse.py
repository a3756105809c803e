"""Kineto trace files parsed by the native streaming parser (``pau._core.KinetoParser``):
raw columns per file, gzip inflated by ISA-L when installed, files parsed on the calling
thread and a pool kept between reads. :mod:`pau.readers.kineto` assembles them into tables.
"""

from __future__ import annotations

import gzip
import os
import threading
import zlib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from pau import _core
from pau.engine._threads import cores
from pau.errors import TraceFormatError
from pau.readers._files import files_in

_fast_gzip_error: type[Exception]
try:  # optional: ISA-L inflates gzip about 3x faster than zlib (pip install isal)
    from isal import igzip as _fast_gzip
    # isal's stub declares `error: Exception` (an instance); it is the exception class
    from isal.isal_zlib import error as _fast_gzip_error  # type: ignore[assignment]
except ImportError:  # pragma: no cover - depends on the environment
    _fast_gzip = None  # type: ignore[assignment]  # None: the zlib path (checked where used)
    _fast_gzip_error = zlib.error

#: Bytes of decompressed JSON handed to the native parser at a time (small enough to
#: stay in cache while it is parsed: measured faster than 8 MB chunks).
CHUNK_BYTES = 1 << 20




@dataclass
class _File:
    """One parsed file: raw columns from the native parser, before rank assignment."""

    path: str
    rows: dict[str, np.ndarray]
    order: np.ndarray          # device rows sorted by (device, ts)
    aside: dict[str, np.ndarray]
    meta: dict[str, Any]
    strings: list[str]
    rank: int = -1
    rank_source: str = ""
    keep: np.ndarray = field(default_factory=lambda: np.empty(0, bool))      # rows pau can use (_screen)
    is_step: np.ndarray = field(default_factory=lambda: np.empty(0, bool))   # usable ProfilerStep rows
    time_ok: np.ndarray = field(default_factory=lambda: np.empty(0, bool))   # absolute time within int64
    step_ids: dict[int, int | None] | None = None   # string id -> ProfilerStep number (kineto._step_names)

    def cat_counts(self) -> Counter[str]:
        counts = self.meta["cat_counts"]
        return Counter({self.strings[i]: int(counts[i]) for i in np.flatnonzero(counts)})


def trace_files(path: str | os.PathLike[str]) -> list[str]:
    """The trace files of ``path``: itself, or the ``.json``/``.gz`` files of a directory
    (not recursive), in name order."""
    return files_in(path, (".json", ".gz"), missing="no Kineto trace file or directory at {p}",
                    empty="no trace files (*.json, *.json.gz) in {p}")


def _chunks(f: Any, size: int, gzipped: bool, prefetch: bool) -> Iterator[Any]:
    """Successive chunks of ``f`` as buffers.

    A plain file is read into one reused buffer. A gzip stream is read with
    ``read1`` (what one decompression step yields), so that a truncated stream is
    reported at the byte where it ends rather than at the start of a buffer; with
    ``prefetch`` the next chunk is decompressed on a second thread while the caller
    parses this one (zlib and the native parser both release the GIL).
    """
    if not gzipped:
        buf = bytearray(size)
        view = memoryview(buf)
        while n := f.readinto(buf):
            yield view[:n]
        return
    if not prefetch:
        while data := f.read1(size):
            yield data
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(f.read1, size)
        while data := pending.result():
            pending = pool.submit(f.read1, size)
            yield data


def _gzip_break(path: str, piece: int = 256) -> tuple[int, int]:
    """(byte of the file, bytes of JSON decompressed before it) where a gzip stream
    stops being readable. Only called once a read has failed: it inflates the file
    again ``piece`` compressed bytes at a time, so both numbers are exact to a piece
    (a decompressor keeps no output of the call that fails)."""
    out = 0
    d = zlib.decompressobj(wbits=31)
    with open(path, "rb") as f:
        packed = 0
        while data := f.read(piece):
            while data:
                try:
                    out += len(d.decompress(data))
                except zlib.error:
                    return packed, out
                data = d.unused_data  # a next gzip member (concatenated files) starts here
                if d.eof:
                    d = zlib.decompressobj(wbits=31)
                    if not data:
                        break
                else:
                    data = b""
            packed = f.tell()
    return packed, out


def _parse_file(path: str, device_categories: list[str], prefetch: bool = False,
                chunk_bytes: int = CHUNK_BYTES, fast_gzip: bool = True) -> _File:
    parser = _core.KinetoParser(device_categories)
    fix_gzip = "re-copy or re-export the trace; a truncated file usually means the profiler was interrupted"
    with open(path, "rb") as raw:
        is_gzip = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        fast = is_gzip and fast_gzip and _fast_gzip is not None
        f = (_fast_gzip if fast else gzip).GzipFile(fileobj=raw, mode="rb") if is_gzip else raw
        try:
            # Prefetching pays only when decompression costs as much as parsing.
            for chunk in _chunks(f, chunk_bytes, is_gzip, prefetch):
                if not parser.feed(chunk):
                    break
        except (EOFError, zlib.error, _fast_gzip_error, gzip.BadGzipFile) as exc:
            if fast:
                # ISA-L fails a whole block at a time; the standard module says at
                # which byte the stream breaks.
                return _parse_file(path, device_categories, prefetch, chunk_bytes, fast_gzip=False)
            # The parser has seen only whole chunks; the decompressor had produced more
            # when it failed. Find where the stream breaks, in both coordinates.
            packed, json_bytes = _gzip_break(path)
            raise TraceFormatError(
                path, f"the gzip stream is truncated or corrupt at byte {packed} of the file, after "
                f"{json_bytes} bytes of JSON ({exc})", fix_gzip, offset=json_bytes) from None
        parser.finish()
    if parser.error is not None:
        message, offset, line = parser.error
        if message.startswith("unexpected end of input"):
            fix = fix_gzip
        elif message.startswith("the file is empty"):
            fix = "the profiler wrote nothing: check that the trace handler ran (prof.export_chrome_trace)"
        else:
            fix = "give a PyTorch profiler trace (Chrome trace JSON, plain or .gz)"
        raise TraceFormatError(path, message, fix, offset=offset, line=line)
    res = parser.result()
    meta = res.meta
    if meta["format"] == 1 and not meta["has_events_key"]:
        raise TraceFormatError(path, "not a Kineto trace: a JSON object without a \"traceEvents\" array",
                               "give a PyTorch profiler trace (Chrome trace JSON, plain or .gz)")
    return _File(path, res.rows, res.device_order, res.set_aside, meta, res.strings)


def _parse_all(paths: list[str], device_categories: list[str], threads: int | None = None) -> list[_File]:
    if len(paths) == 1:
        return [_parse_file(paths[0], device_categories, prefetch=True)]
    workers = threads or min(len(paths), cores())
    if workers <= 1:
        return [_parse_file(p, device_categories) for p in paths]
    if threads is not None:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(lambda p: _parse_file(p, device_categories), paths))
    return _parse_shared(paths, device_categories, workers)


_POOL: tuple[int, ThreadPoolExecutor] | None = None


def _parse_pool() -> ThreadPoolExecutor:
    """Threads kept between reads (a fleet ingest reads thousands of runs: starting
    threads for each cost about 5 % of its time); a new pool in a forked child."""
    global _POOL
    if _POOL is None or _POOL[0] != os.getpid():
        _POOL = (os.getpid(), ThreadPoolExecutor(max_workers=max(1, cores() - 1), thread_name_prefix="pau-kineto"))
    return _POOL[1]


def _parse_shared(paths: list[str], device_categories: list[str], workers: int) -> list[_File]:
    """The files parsed by the calling thread and ``workers - 1`` threads of the kept
    pool, each taking the next file as it comes free; the first error in the files'
    order is raised once every file is done."""
    got: list[_File | BaseException | None] = [None] * len(paths)
    lock = threading.Lock()
    order = iter(range(len(paths)))

    def take() -> None:
        while True:
            with lock:
                i = next(order, None)
            if i is None:
                return
            try:
                got[i] = _parse_file(paths[i], device_categories)
            except BaseException as exc:  # raised below, in the files' order
                got[i] = exc

    helpers = [_parse_pool().submit(take) for _ in range(workers - 1)]
    take()
    for h in helpers:
        h.result()
    for g in got:
        if isinstance(g, BaseException):
            raise g
    return [g for g in got if isinstance(g, _File)]
