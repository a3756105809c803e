"""The vocabulary of DESIGN §2: kinds, activities, states."""

import functools
from typing import Any, Iterable

import numpy as np
import pyarrow as pa


#: Kinds of device activity (DESIGN §2.1), in default priority order.
KINDS = ("compute", "communication", "memcpy", "memset", "sync", "other")
#: Activities of the exclusive ledger: the kinds, then ``idle`` (no device event).
ACTIVITIES = KINDS + ("idle",)
#: Default priority when kinds overlap on a rank, highest first (DESIGN §2.1).
DEFAULT_PRIORITY = KINDS
#: Lifecycle states of the ledger (DESIGN §2.3).
STATES = (
    "productive",
    "pending",
    "rolled_back",
    "checkpoint",
    "checkpoint.lost",
    "checkpoint.unused",
    "initialization",
    "recovery.outage",
    "recovery.reinit",
    "recovery.restore",
    "eval",
    "data_wait",
    "custom",
    "unattributed",
)


# The tables of DESIGN §2-3 as pau's readers, generators and runs write them: each
# schema is defined here once. Inputs may differ (see pau.engine._input: other integer and
# string types are converted); these are what pau itself produces.

#: The lifecycle table of DESIGN §2.2: every field but ``record`` and ``start_ns`` nullable.
LIFECYCLE_SCHEMA = pa.schema([
    pa.field(name, typ, nullable=name not in ("record", "start_ns")) for name, typ in (
        ("record", pa.string()), ("attempt", pa.int32()), ("rank", pa.int32()),
        ("start_ns", pa.int64()), ("end_ns", pa.int64()), ("step", pa.int64()),
        ("block_end_ns", pa.int64()), ("durable_ns", pa.int64()), ("ok", pa.bool_()),
        ("kind", pa.string()), ("tokens", pa.int64()))
])

#: The optional ``job`` column of a lifecycle of many jobs (DESIGN §7): nullable (null: one
#: unnamed job); each job is its own lineage, and its ranks are accelerators of its own.
#: Inputs may give it as any string or dictionary<string> type.
LIFECYCLE_JOB_FIELD = pa.field("job", pa.string(), nullable=True)

#: A lifecycle of many jobs: :data:`LIFECYCLE_SCHEMA` with ``job`` last. (The one-job
#: schema stays without it: a table without a ``job`` column is one job, and its results
#: have no ``job`` column.)
LIFECYCLE_JOBS_SCHEMA = LIFECYCLE_SCHEMA.append(LIFECYCLE_JOB_FIELD)

#: The accountable span per rank (DESIGN §6): ``rank, start_ns, end_ns``.
SPANS_SCHEMA = pa.schema([("rank", pa.int32()), ("start_ns", pa.int64()), ("end_ns", pa.int64())])

#: Serving requests (DESIGN §3), as the serving readers write them.
REQUESTS_SCHEMA = pa.schema([
    ("request_id", pa.string()), ("replica", pa.string()), ("arrival_ns", pa.int64()),
    ("first_token_ns", pa.int64()), ("end_ns", pa.int64()), ("input_tokens", pa.int64()),
    ("output_tokens", pa.int64()), ("status", pa.string()),
])


#: numpy dtypes of the fixed-width Arrow types built and read without pyarrow's
#: conversions (:func:`from_numpy`, ``pau.engine._input.as_numpy``): pyarrow's
#: ``pa.array``, ``pa.scalar`` and ``to_numpy`` import pandas on their first use, about
#: 0.2 s of a fresh process that the engine's path never needs
#: (``benchmarks/test_bench_coldstart.py``).
NUMPY_OF = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
            pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
            pa.float32(): np.float32, pa.float64(): np.float64}


def from_numpy(values: np.ndarray, arrow_type: pa.DataType) -> pa.Array:
    """``pa.array(values, type)`` for a numpy array without nulls whose dtype is
    ``arrow_type``'s in :data:`NUMPY_OF` (else ``TypeError``: nothing is converted here),
    made on the array's own buffer without pyarrow's conversions."""
    dtype = NUMPY_OF[arrow_type]
    if not isinstance(values, np.ndarray) or values.dtype != dtype or values.ndim != 1:
        raise TypeError(f"from_numpy: expected a one-dimensional numpy array of {np.dtype(dtype)}, got "
                        f"{getattr(values, 'dtype', type(values).__name__)}")
    data = np.ascontiguousarray(values)
    return pa.Array.from_buffers(arrow_type, data.size, [None, pa.py_buffer(data)])


def strings(values: Iterable[Any]) -> pa.Array:
    """``pa.array(list(values), pa.string())``, for Python strings built from their
    UTF-8 bytes and offsets (see :data:`NUMPY_OF`); anything else (a None) through
    pyarrow, as are more than 2 GiB of text (int32 offsets)."""
    values = list(values)
    if not all(isinstance(v, str) for v in values):
        return pa.array(values, pa.string())
    raw = [v.encode() for v in values]
    if sum(len(b) for b in raw) > np.iinfo(np.int32).max:
        return pa.array(values, pa.string())
    offsets = np.zeros(len(raw) + 1, np.int32)
    np.cumsum([len(b) for b in raw], out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(raw), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(raw))])


@functools.lru_cache(maxsize=64)
def names(values: tuple[str, ...]) -> pa.Array:
    """The names of a dictionary-coded column as a string array (cached: the
    vocabularies and cause lists are a few small tuples)."""
    return strings(values)


def counts_metadata(rows: int, quarantined: int) -> dict[bytes, bytes]:
    """The schema metadata that counts a result's input: ``pau.rows`` read and
    ``pau.quarantined_rows`` set aside."""
    return {b"pau.rows": str(rows).encode(), b"pau.quarantined_rows": str(quarantined).encode()}


def label(values: Iterable[str], idx: Any) -> pa.DictionaryArray:
    """int8 codes `idx` into `values`, as a dictionary array."""
    return pa.DictionaryArray.from_arrays(from_numpy(np.asarray(idx, np.int8), pa.int8()), names(tuple(values)))
