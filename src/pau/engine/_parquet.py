"""Row groups of Parquet files read by the native page decoder: pau's archive layout
and pyarrow's default files.

:func:`read_row_group` gives what ``pyarrow.parquet.ParquetFile.read_row_group``
gives (the same schema, metadata and values) for a row group whose requested
columns the native decoder reads (``csrc/core/parquet.hpp``), and None for any
other; :mod:`pau.engine.io` then reads that row group with pyarrow. The decoder reads the
columns of pau's layout as :func:`pau.engine.io.write_dataset` writes them, and those of
pyarrow's default files: uncompressed or SNAPPY pages (its own decompressor,
``csrc/core/snappy.hpp``), without nulls (required columns, or optional ones whose
every value is defined), ``INT32``/``INT64`` (``int32``, ``int64``,
``timestamp[ns]``) in PLAIN, DELTA_BINARY_PACKED or dictionary pages, and
``dictionary<string>`` columns in dictionary pages. It checks every page's CRC-32,
as pau's pyarrow reader does; a page that fails it, or anything else the decoder
does not expect, sends the row group to pyarrow, which raises what it finds. So a
file reads to the same table by either path (``tests/test_parquet_native.py`` holds
them against each other), and only the time differs: the native path decodes the
three columns ``classify`` reads about 3x faster (``docs/archive.md``).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pau import _core
from pau.errors import InvalidRowError

#: Read row groups natively where the decoder can (tests switch it off to compare).
ENABLED = True

_INT_BITS = {"INT32": 32, "INT64": 64}
#: The codecs of column chunks the decoder reads, as its codec argument (the format's
#: CompressionCodec values): pau's layout is uncompressed, pyarrow's default snappy.
_CODECS = {"UNCOMPRESSED": 0, "SNAPPY": 1}


@dataclass(frozen=True)
class Column:
    """How one column of a file is decoded: its leaf in the Parquet schema, its Arrow
    field, and the call (``ints`` with the physical width, or ``dictionary``)."""

    leaf: int
    field: pa.Field
    bits: int  # INT32/INT64 width, or the dictionary's index width
    dictionary: bool
    optional: bool  # max definition level 1: read when no value is null


def _native_type(col: pq.ParquetColumnSchema, t: pa.DataType) -> int | None:
    """The decoder's width for a leaf read as Arrow type ``t`` where pyarrow reads its
    values as stored, else None."""
    logical = str(col.logical_type)
    if col.physical_type in _INT_BITS:
        bits = _INT_BITS[col.physical_type]
        if pa.types.is_integer(t) and pa.types.is_signed_integer(t) and t.bit_width == bits \
                and (logical == "None" or logical == f"Int(bitWidth={bits}, isSigned=true)"):
            return bits
        if pa.types.is_timestamp(t) and t.unit == "ns" and bits == 64 and "timeUnit=nanoseconds" in logical:
            return bits
        return None
    if col.physical_type == "BYTE_ARRAY" and pa.types.is_dictionary(t) and t.value_type == pa.string() \
            and pa.types.is_signed_integer(t.index_type) and t.index_type.bit_width in (8, 16, 32) \
            and logical in ("None", "String"):
        return t.index_type.bit_width
    return None


def columns_of(pf: pq.ParquetFile) -> dict[str, Column]:
    """The columns of a file the decoder reads, by name (a flat schema's only)."""
    schema, arrow = pf.schema, pf.schema_arrow
    if len(schema) != len(arrow):
        return {}
    out = {}
    for leaf in range(len(schema)):
        col, field = schema.column(leaf), arrow.field(leaf)
        if col.path != field.name or col.max_definition_level > 1 or col.max_repetition_level:
            continue
        bits = _native_type(col, field.type)
        if bits is not None:
            out[field.name] = Column(leaf, field, bits, pa.types.is_dictionary(field.type),
                                     col.max_definition_level == 1)
    return out


@dataclass(frozen=True)
class File:
    """A Parquet file as the decoder reads it, from its footer parsed once: shared by
    the threads that read its row groups (each opens the file for its read)."""

    path: str
    stat: tuple[int, int, int]  # size, mtime, inode when the footer was read
    metadata: pq.FileMetaData
    schema_metadata: dict[bytes, bytes] | None
    columns: dict[str, Column]

    @classmethod
    def of(cls, path: str, pf: pq.ParquetFile) -> File:
        st = os.stat(path)
        return cls(os.fspath(path), (st.st_size, st.st_mtime_ns, st.st_ino), pf.metadata,
                   pf.schema_arrow.metadata, columns_of(pf))


def _read_into(fd: int, buf: bytearray, offset: int, n: int) -> memoryview | None:
    view = memoryview(buf)[:n]
    if hasattr(os, "preadv"):
        got = os.preadv(fd, [view], offset)
    else:  # pragma: no cover - platforms without preadv
        os.lseek(fd, offset, os.SEEK_SET)
        got = 0
        while got < n:
            part = os.read(fd, n - got)
            if not part:
                break
            view[got:got + len(part)] = part
            got += len(part)
    return view if got == n else None


class Arena:
    """Output buffers that one reader reuses from row group to row group.

    Fresh memory costs its pages faulted in on first write, here as much as the
    decoding itself (about 7 ms per 10M int64 values); a reader that is done with
    each table before it reads the next (a partition's sweep, row group by row
    group, on its own thread) decodes into the same buffers instead. A table read
    into an arena is valid until the next read into it."""

    def __init__(self) -> None:
        self._bufs: dict[str, pa.Buffer] = {}
        self._constant: tuple[int, int] | None = None  # (value, count) held in "constant"

    def take(self, key: str, nbytes: int) -> tuple[memoryview, pa.Buffer]:
        """A writable view of ``nbytes`` and the buffer an array holds them in."""
        b = self._bufs.get(key)
        if b is None or b.size < nbytes:
            b = self._bufs[key] = pa.allocate_buffer(nbytes)
            if key == "constant":
                self._constant = None
        return memoryview(b)[:nbytes], b.slice(0, nbytes)

    def int32_constant(self, value: int, n: int) -> pa.Array:
        """``n`` copies of an int32 (filled once while the value stays the same)."""
        view, buf = self.take("constant", 4 * n)
        held = self._constant
        if held is None or held[0] != value or held[1] < n:
            np.frombuffer(view, np.int32)[:] = value
            self._constant = (value, n)
        return pa.Array.from_buffers(pa.int32(), n, [None, buf])


class Arenas:
    """Arenas lent to the tasks of one call (one at a time each), so that a thread
    pool's partitions reuse them and they go with the call."""

    def __init__(self) -> None:
        self._free: list[Arena] = []
        self._lock = threading.Lock()

    def take(self) -> Arena:
        with self._lock:
            return self._free.pop() if self._free else Arena()

    def give(self, arena: Arena) -> None:
        with self._lock:
            self._free.append(arena)


def _output(key: str, nbytes: int, arena: Arena | None) -> tuple[memoryview | pa.Buffer, pa.Buffer]:
    if arena is not None:
        return arena.take(key, nbytes)
    b = pa.allocate_buffer(nbytes)
    return b, b


class Buffer:
    """A thread's buffer for column chunks, grown to the largest one read."""

    def __init__(self) -> None:
        self.data = bytearray()

    def fit(self, n: int) -> bytearray:
        if len(self.data) < n:
            self.data = bytearray(max(n, 2 * len(self.data)))
        return self.data


def read_row_group(file: File, i: int, names: list[str], buf: Buffer, arena: Arena | None = None) -> pa.Table | None:
    """Row group ``i`` of ``names``, as ``ParquetFile.read_row_group(i, columns=names)``
    gives it, or None when a column or page is not one the decoder reads, or the file
    changed since its footer was read. With an ``arena``, the table's columns are in
    its buffers (valid until the next read into it)."""
    columns = file.columns
    if not ENABLED or not names or any(n not in columns for n in names):
        return None
    rg = file.metadata.row_group(i)
    rows = rg.num_rows
    if rows == 0:
        return None
    try:
        fd = os.open(file.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except OSError:
        return None  # pyarrow opens it, and names what fails
    try:
        st = os.fstat(fd)
        if (st.st_size, st.st_mtime_ns, st.st_ino) != file.stat:
            return None
        arrays = [_column(fd, st.st_size, rg.column(columns[n].leaf), columns[n], rows, buf, arena)
                  for n in names]
    finally:
        os.close(fd)
    if any(a is None for a in arrays):
        return None
    return pa.Table.from_arrays(arrays, schema=pa.schema([columns[n].field for n in names],
                                                         metadata=file.schema_metadata))


def _column(fd: int, file_size: int, chunk: pq.ColumnChunkMetaData, c: Column, rows: int, buf: Buffer,
            arena: Arena | None) -> pa.Array | None:
    codec = _CODECS.get(chunk.compression)
    if codec is None or chunk.num_values != rows or (c.optional and chunk.statistics is not None
                                                      and chunk.statistics.has_null_count
                                                      and chunk.statistics.null_count):
        return None  # (nulls: pyarrow's way, told by the statistics before the chunk is read)
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    size = chunk.total_compressed_size
    # The footer's sizes against the bytes that exist before a buffer is fitted to them
    # (a few bytes of footer could ask for terabytes): a chunk past the file's end is
    # pyarrow's to refuse.
    if start is None or size is None or start < 0 or size <= 0 or start + size > file_size:
        return None
    try:
        view = _read_into(fd, buf.fit(size), start, size)
    except OSError:
        return None
    if view is None:
        return None
    out, held = _output(c.field.name, rows * (c.bits // 8), arena)
    if c.dictionary:
        got = _core.parquet_dictionary(view, c.bits, rows, True, out, codec, c.optional)
        if got is None:
            return None
        offsets, data = got
        strings = pa.StringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(data))
        # the decoder checked every index against the dictionary's size
        indices = pa.Array.from_buffers(c.field.type.index_type, rows, [None, held])
        return pa.DictionaryArray.from_arrays(indices, strings, safe=False)
    if not _core.parquet_ints(view, c.bits, rows, True, out, codec, c.optional):
        return None
    return pa.Array.from_buffers(c.field.type, rows, [None, held])


def check_indices(table: pa.Table, where: str) -> None:
    """Raise :class:`~pau.errors.InvalidRowError` (``where``: the file and row group) at
    the first value of a dictionary column whose index is outside its dictionary:
    pyarrow reads a Parquet file's indices without checking them (the native decoder
    checks every one), and such an index would fail far from the file that held it."""
    for name, col in zip(table.column_names, table.columns):
        if not pa.types.is_dictionary(col.type):
            continue
        row0 = 0
        for chunk in col.chunks:
            idx, n = chunk.indices, len(chunk.dictionary)
            if len(idx) > idx.null_count:
                lo, hi = pc.min_max(idx).values()
                if lo.as_py() < 0 or hi.as_py() >= n:
                    at = np.asarray(idx.fill_null(0).to_numpy(zero_copy_only=False))
                    row = int(np.flatnonzero((at < 0) | (at >= n))[0])
                    raise InvalidRowError(
                        where, name, row0 + row, f"dictionary index {at[row]} is outside the column's dictionary "
                        f"of {n} strings", "the file is corrupt: write it again from its source")
            row0 += len(chunk)
