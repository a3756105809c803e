"""Turning what callers hand us into columns the native core can read.

Adapters only: no accounting happens here. Whole columns cross into the core as
numpy views of Arrow buffers (zero-copy where the layout allows it).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine.vocab import KINDS, NUMPY_OF, SPANS_SCHEMA
from pau.errors import ArgumentTypeError, InvalidRowError, SchemaError

KIND_CODE = {k: i for i, k in enumerate(KINDS)}
INT64_MAX = np.iinfo(np.int64).max

EVENT_COLUMNS = ("rank", "start_ns", "end_ns", "kind")


def as_table(obj: Any, what: str) -> pa.Table:
    """Convert a table-like input to a ``pyarrow.Table`` once.

    Accepted: ``pyarrow.Table``/``RecordBatch``/``RecordBatchReader``, anything with
    the Arrow PyCapsule stream interface (``__arrow_c_stream__``), a pandas
    ``DataFrame`` or a ``dict`` of arrays.
    """
    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj])
    if isinstance(obj, pa.RecordBatchReader):
        return obj.read_all()
    if isinstance(obj, dict):
        return pa.table({k: np.asarray(v) if not isinstance(v, (pa.Array, pa.ChunkedArray)) else v
                         for k, v in obj.items()})
    if hasattr(obj, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(obj).read_all()
    mod = type(obj).__module__
    if mod.startswith("pandas"):
        return pa.Table.from_pandas(obj, preserve_index=False)
    raise ArgumentTypeError(what, "a pyarrow.Table, an object with __arrow_c_stream__, a pandas DataFrame or a "
                                  "dict of numpy arrays", obj)


def iter_batches(obj: Any, what: str) -> Iterator[pa.RecordBatch]:
    """Batches of a table-like input, without materializing a stream."""
    if isinstance(obj, pa.RecordBatchReader):
        yield from obj
        return
    if hasattr(obj, "__arrow_c_stream__") and not isinstance(obj, (pa.Table, pa.RecordBatch)):
        yield from pa.RecordBatchReader.from_stream(obj)
        return
    yield from as_table(obj, what).to_batches()


def _column(batch: pa.RecordBatch | pa.Table, name: str, table: str) -> pa.Array:
    idx = batch.schema.get_field_index(name)
    if idx < 0:
        raise SchemaError(
            table, name, f"is missing (columns present: {', '.join(batch.schema.names) or 'none'})",
            f"add a '{name}' column; see DESIGN §2.1 for the events schema",
        )
    col = batch.column(idx)
    if isinstance(col, pa.ChunkedArray):
        col = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return col


def as_numpy(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """``arr.to_numpy(zero_copy_only=False)``; for an integer or float array without
    nulls, a read-only view of its data buffer made by numpy alone (a chunked one's
    chunks joined). pyarrow's own conversion imports pandas on its first use (see
    ``pau.engine.vocab.NUMPY_OF``)."""
    dtype = _NUMPY_BY_ID.get(arr.type.id)
    if dtype is None or arr.null_count:
        return arr.to_numpy(zero_copy_only=False)
    if isinstance(arr, pa.ChunkedArray):
        chunks = [as_numpy(c) for c in arr.chunks]
        if len(chunks) == 1:
            return chunks[0]
        return np.concatenate(chunks) if chunks else np.empty(0, dtype)
    n = len(arr)
    if n == 0:
        return np.empty(0, dtype)
    return np.frombuffer(arr.buffers()[1], dtype, n, arr.offset * dtype.itemsize)


#: :data:`NUMPY_OF` by Arrow type id (its types have no parameters: one type an id), as
#: numpy dtypes: a type id is read without hashing the Arrow type (a few tenths of a
#: microsecond a column, on every batch of every sweep).
_NUMPY_BY_ID = {t.id: np.dtype(d) for t, d in NUMPY_OF.items()}


def _first_true(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def time_column(arr: pa.Array, name: str, table: str, row0: int = 0) -> np.ndarray:
    """An int64 nanosecond view of a time column (int or timestamp)."""
    t = arr.type
    if pa.types.is_timestamp(t):
        if t.unit == "ns":
            arr = arr.view(pa.int64())
        else:
            factor = {"s": 10**9, "ms": 10**6, "us": 10**3}[t.unit]
            raw = arr.view(pa.int64())
            vals = (raw.fill_null(0) if arr.null_count else raw).to_numpy(zero_copy_only=False)
            # Not np.abs: it leaves INT64_MIN negative, which would wrap to 0 ns.
            too_big = (vals > INT64_MAX // factor) | (vals < -(INT64_MAX // factor))
            if too_big.any():
                raise InvalidRowError(
                    table, name, row0 + _first_true(too_big),
                    f"{vals[too_big][0]} {t.unit} overflows int64 nanoseconds",
                    "store times closer to the epoch", int(too_big.sum()))
            if arr.null_count == 0:
                return vals * factor
            return pc.multiply_checked(raw, factor)  # nulls: validated later
    elif pa.types.is_integer(t):
        if t != pa.int64():
            if pa.types.is_unsigned_integer(t) and t.bit_width == 64:
                vals = arr.to_numpy(zero_copy_only=False)
                if arr.null_count == 0 and (vals > INT64_MAX).any():
                    bad = vals > INT64_MAX
                    raise InvalidRowError(table, name, row0 + _first_true(bad),
                                          f"{vals[bad][0]} does not fit in int64 nanoseconds",
                                          "store times as int64 nanoseconds", int(bad.sum()))
            arr = arr.cast(pa.int64(), safe=False)
    else:
        raise SchemaError(
            table, name, f"has type {t}, not int64 nanoseconds",
            "convert to int64 nanoseconds (or timestamp[ns]); floats are not accepted because "
            "they cannot hold nanosecond times exactly",
        )
    if arr.null_count:
        return arr  # the caller validates nulls before reading values
    return as_numpy(arr)


def null_mask(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The nulls of a column as a bool array."""
    return np.asarray(col.is_null()) if col.null_count else np.zeros(len(col), bool)


def int_values(t: pa.Table, name: str, table: str) -> tuple[np.ndarray, np.ndarray]:
    """(int64 values with nulls as 0, null mask) of integer column ``name`` of ``table``."""
    col = _column(t, name, table)
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if not pa.types.is_integer(col.type):
        raise SchemaError(table, name, f"has type {col.type}, not an integer", f"give {name} as integers")
    null = null_mask(col)
    if col.null_count:
        col = col.fill_null(0)
    return np.asarray(col.cast(pa.int64()).to_numpy(zero_copy_only=False), np.int64), null


def time_values(t: pa.Table, name: str, table: str) -> tuple[np.ndarray, np.ndarray]:
    """(int64 ns with nulls as 0, null mask) of time column ``name`` (int or timestamp)."""
    col = _column(t, name, table)
    null = null_mask(col)
    if col.null_count:
        col = pc.if_else(col.is_null(), pa.scalar(0, col.type), col)
    return np.asarray(time_column(col, name, table), np.int64), null


def rank_column(arr: pa.Array, table: str, name: str = "rank", row0: int = 0):
    t = arr.type
    if not pa.types.is_integer(t):
        raise SchemaError(table, name, f"has type {t}, not int32",
                          "give ranks as integers (one rank = one accelerator)")
    if t != pa.int32():
        if arr.null_count == 0:
            vals = arr.to_numpy(zero_copy_only=False)
            bad = (vals > np.iinfo(np.int32).max) | (vals < np.iinfo(np.int32).min)
            if bad.any():
                raise InvalidRowError(table, name, row0 + _first_true(bad),
                                      f"{vals[bad][0]} does not fit in int32",
                                      "number ranks from 0", int(bad.sum()))
        arr = arr.cast(pa.int32(), safe=False)
    if arr.null_count:
        return arr
    return as_numpy(arr)


@dataclass
class KindColumn:
    indices: np.ndarray      # integer indices into `dictionary`
    dictionary: pa.Array     # strings
    #: int8: index -> kind code, -1 if unknown. For indices of 8 or 16 bits, one entry
    #: per value the index type holds (a negative index read as unsigned, as numpy's
    #: indexing from the end reads it), -1 past the dictionary: ``codes[indices]``
    #: needs no pass over the indices (see :func:`kind_column`).
    codes: np.ndarray
    #: The first entries of :attr:`codes` that the native sweep reads (it reads any
    #: other index as an unknown kind): the dictionary positions an index reaches. A
    #: dictionary of up to 16 kinds keeps the exclusive sweep's byte-shuffle path
    #: (``csrc/core/exclusive.hpp``).
    core_codes: np.ndarray


def kind_column(arr: pa.Array, table: str) -> KindColumn:
    t = arr.type
    encoded = False  # indices from pyarrow's own dictionary_encode: within the dictionary
    if pa.types.is_dictionary(t):
        if not (pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)
                or pa.types.is_string_view(t.value_type)):
            raise SchemaError(table, "kind", f"is a dictionary of {t.value_type}, not of strings",
                              "encode kinds as strings such as 'compute'")
        if pa.types.is_string_view(t.value_type):  # Polars' categoricals: the dictionary as plain strings
            arr = pa.DictionaryArray.from_arrays(arr.indices, arr.dictionary.cast(pa.string()))
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        arr = pc.dictionary_encode(arr.cast(pa.string()) if pa.types.is_string_view(t) else arr)
        encoded = True
    else:
        raise SchemaError(table, "kind", f"has type {t}, not dictionary<string> or string",
                          "give kinds as strings: " + ", ".join(KINDS))
    dictionary = arr.dictionary
    codes = np.array([KIND_CODE.get(v, -1) for v in dictionary.to_pylist()], dtype=np.int8)
    indices = arr.indices
    if indices.null_count:
        indices = indices.fill_null(0)  # nulls are caught by validation before use
    if indices.type == pa.uint64():  # the core reads up to 32-bit unsigned indices
        indices = indices.cast(pa.int64())
    idx = as_numpy(indices)
    if idx.dtype.itemsize <= 2:
        # An index outside the dictionary (pyarrow reads a Parquet file's without a
        # check) finds -1 in the table of every value, an unknown kind, so that the
        # row is refused or set aside by its number (raise_first names it); the core
        # reads the table's first entries and any other index as unknown. No pass over
        # the indices (a full one cost about 3 % of classify(threads=1)).
        full, reach = _code_table(codes, idx.dtype)
        return KindColumn(idx, dictionary, full, full[:reach])
    if not encoded and idx.size and _outside(idx, len(dictionary)):
        # Wider indices: an index outside the dictionary through a code of its own past
        # the dictionary's.
        n = len(dictionary)
        bad = (idx < 0) | (idx >= n)
        idx = idx.astype(np.int64)
        idx[bad] = n
        idx = idx.astype(np.int32)
        codes = np.append(codes, np.int8(-1))
    return KindColumn(idx, dictionary, codes, codes)


def _code_table(codes: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, int]:
    """``codes`` (dictionary position -> kind code) as a table of every value of the
    8- or 16-bit index type ``dtype``, read as unsigned: the dictionary's positions an
    index reaches keep their code, every other value (past the dictionary, or a
    negative index of a signed type: at least 2**(bits-1) read as unsigned) is -1.
    With the table (read-only: shared by the columns of one dictionary), how many of
    its first entries are the dictionary's."""
    return _code_table_of(codes.tobytes(), dtype.str)


@functools.lru_cache(maxsize=64)
def _code_table_of(codes: bytes, dtype: str) -> tuple[np.ndarray, int]:
    t = np.dtype(dtype)
    bits = 8 * t.itemsize
    m = min(len(codes), 1 << (bits - 1 if t.kind == "i" else bits))
    table = np.full(1 << bits, -1, np.int8)
    table[:m] = np.frombuffer(codes, np.int8, m)
    table.setflags(write=False)
    return table, m


def _outside(idx: np.ndarray, n: int) -> bool:
    """Whether an index is outside a dictionary of ``n`` strings: one pass over the
    indices read as unsigned (a negative one reads as at least 2**(bits-1)), two where
    the dictionary is longer than that."""
    if idx.dtype.kind == "i" and n > 1 << (8 * idx.dtype.itemsize - 1):
        return bool(idx.min() < 0 or idx.max() >= n)
    return bool(idx.view(np.dtype(f"u{idx.dtype.itemsize}")).max() >= n)


def _outside_dictionary(arr: pa.Array | pa.ChunkedArray, row: int) -> str | None:
    """Why a dictionary column's value at ``row`` has no string (its index is outside
    the dictionary), or None."""
    if not pa.types.is_dictionary(arr.type):
        return None
    v = arr[row]
    if v.is_valid and not 0 <= v.index.as_py() < len(v.dictionary):
        return f"dictionary index {v.index.as_py()} is outside the column's dictionary of {len(v.dictionary)} strings"
    return None


# Reasons, in the order they are checked; the first that applies names the row.
REASONS = (
    "ok",
    "null rank",
    "null start_ns",
    "null end_ns",
    "null kind",
    "negative rank",
    "end_ns - start_ns does not fit in int64",
    "end_ns before start_ns",
    "unknown kind",
    "rank does not fit in int32",
    "start_ns does not fit in int64 nanoseconds",
    "end_ns does not fit in int64 nanoseconds",
)
_REASON_COLUMN = {1: "rank", 2: "start_ns", 3: "end_ns", 4: "kind", 5: "rank", 6: "end_ns",
                  7: "end_ns", 8: "kind", 9: "rank", 10: "start_ns", 11: "end_ns"}
_REASON_FIX = {
    1: "give every event the rank (accelerator) it ran on",
    2: "give every event its start time",
    3: "give every event its end time (an event still running has no place in a finished trace)",
    4: "give every event a kind",
    5: "ranks are accelerator indices >= 0",
    6: "an event lasts at most 2**63 - 1 ns (292 years): correct the times",
    7: "correct the times; zero-length events (end_ns == start_ns) are allowed",
    8: "map it to one of " + ", ".join(KINDS) + " (the pau.readers readers do this for profiler traces)",
    9: "number ranks from 0 (one rank = one accelerator)",
    10: "store times as int64 nanoseconds, closer to the epoch",
    11: "store times as int64 nanoseconds, closer to the epoch",
}


#: The fix for an index outside its dictionary: only a corrupt file or buffer holds one.
_INDEX_FIX = ("the column's dictionary indices are corrupt (pyarrow reads a Parquet file's without checking "
              "them): write the data again from its source")


def _unconvertible(arr: pa.Array, bits: int) -> np.ndarray | None:
    """Rows whose integer (or timestamp) value does not fit a signed `bits`-bit
    integer of the target unit (int32 ranks, int64 ns); None if every row fits."""
    t = arr.type
    if pa.types.is_timestamp(t):
        if t.unit == "ns":
            return None
        factor = {"s": 10**9, "ms": 10**6, "us": 10**3}[t.unit]
        vals = arr.view(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        bad = (vals > INT64_MAX // factor) | (vals < -(INT64_MAX // factor))
    elif pa.types.is_integer(t) and t.bit_width >= bits:
        vals = arr.fill_null(0).to_numpy(zero_copy_only=False)
        hi = (1 << (bits - 1)) - 1
        bad = vals > hi if pa.types.is_unsigned_integer(t) else (vals > hi) | (vals < -hi - 1)
    else:
        return None
    return bad if bad.any() else None


def row_reasons(batch: pa.RecordBatch | pa.Table, table: str = "events") -> np.ndarray:
    """A reason code per row (0 = usable), vectorized. The slow path: only run
    when the native core reports a problem or quarantine is asked for."""
    n = batch.num_rows
    reasons = np.zeros(n, dtype=np.int8)
    rank = _column(batch, "rank", table)
    start = _column(batch, "start_ns", table)
    end = _column(batch, "end_ns", table)
    kind = _column(batch, "kind", table)

    def mark(mask, code):
        sel = (reasons == 0) & mask
        reasons[sel] = code

    for code, arr in ((1, rank), (2, start), (3, end), (4, kind)):
        if arr.null_count:
            mark(np.asarray(arr.is_null()), code)
    # Values that do not convert are reasons too (so quarantine can take them);
    # they are zeroed before conversion.
    converted = []
    for code, arr, bits in ((9, rank, 32), (10, start, 64), (11, end, 64)):
        bad = _unconvertible(arr, bits)
        if bad is not None:
            mark(bad, code)
            arr = pc.if_else(pa.array(bad), pa.scalar(0, arr.type), arr)
        converted.append(arr)
    rank, start, end = converted
    r = rank_column(rank.fill_null(0) if rank.null_count else rank, table)
    s = time_column(start.fill_null(0) if start.null_count else start, "start_ns", table)
    e = time_column(end.fill_null(0) if end.null_count else end, "end_ns", table)
    k = kind_column(kind, table)
    mark(r < 0, 5)
    mark(e < s, 7)
    # Any int64 time is valid; the length must fit too. end - start, for end >= start,
    # computed modulo 2**64 is exact: above 2**63 - 1 it reads negative as int64.
    with np.errstate(over="ignore"):
        mark((e >= s) & ((e.astype(np.uint64) - s.astype(np.uint64)).astype(np.int64) < 0), 6)
    mark(k.codes[k.indices] < 0 if len(k.codes) else np.ones(n, bool), 8)
    return reasons


def raise_first(batch: pa.RecordBatch | pa.Table, reasons: np.ndarray, row0: int, table: str = "events"):
    bad = np.flatnonzero(reasons)
    i = int(bad[0])
    code = int(reasons[i])
    col = _REASON_COLUMN[code]
    detail = REASONS[code]
    if code in (5, 6, 7):
        v = _column(batch, col, table)[i].as_py()
        detail += f" ({col} = {v}" + (f", start_ns = {_column(batch, 'start_ns', table)[i].as_py()})"
                                      if code in (6, 7) else ")")
    elif code == 8:
        kind = _column(batch, "kind", table)
        outside = _outside_dictionary(kind, i)
        if outside is not None:
            raise InvalidRowError(table, col, row0 + i, outside, _INDEX_FIX, int(bad.size))
        detail = f"unknown kind {kind[i].as_py()!r}"
    elif code in (9, 10, 11):
        detail += f" ({_column(batch, col, table)[i].as_py()})"
    raise InvalidRowError(table, col, row0 + i, detail, _REASON_FIX[code], int(bad.size))


@dataclass
class EventColumns:
    rank: np.ndarray
    start: np.ndarray
    end: np.ndarray
    kind: KindColumn
    rows: int


def event_columns(batch: pa.RecordBatch | pa.Table, table: str = "events", row0: int = 0):
    """Columns for the core, or None when some value needs row-level validation."""
    rank = _column(batch, "rank", table)
    start = _column(batch, "start_ns", table)
    end = _column(batch, "end_ns", table)
    kind = _column(batch, "kind", table)
    r = rank_column(rank, table, row0=row0)
    s = time_column(start, "start_ns", table, row0)
    e = time_column(end, "end_ns", table, row0)
    k = kind_column(kind, table)
    if not all(isinstance(x, np.ndarray) for x in (r, s, e)) or kind.null_count:
        return None
    return EventColumns(r, s, e, k, batch.num_rows)


def spans_of(*tables: pa.Table | None) -> pa.Table:
    """``rank, start_ns, end_ns``: per rank, first start to last end over the given
    tables' rows that name a rank (``rank >= 0``) and have both times."""
    parts = []
    for t in tables:
        if t is None or t.num_rows == 0:
            continue
        sel = t.select(["rank", "start_ns", "end_ns"])
        sel = sel.filter(pc.and_(pc.greater_equal(sel["rank"], 0), pc.is_valid(sel["end_ns"])))
        parts.append(sel.cast(SPANS_SCHEMA))
    if not parts:
        return SPANS_SCHEMA.empty_table()
    t = pa.concat_tables(parts)
    g = t.group_by("rank").aggregate([("start_ns", "min"), ("end_ns", "max")])
    return g.rename_columns(["rank", "start_ns", "end_ns"]).sort_by("rank").cast(SPANS_SCHEMA)
