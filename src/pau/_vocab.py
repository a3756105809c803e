"""The vocabulary of DESIGN §2: kinds, activities, states."""

import functools

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


#: The lifecycle table of DESIGN §2.2, as the readers and generators write it.
LIFECYCLE_SCHEMA = pa.schema([
    ("record", pa.string()), ("attempt", pa.int32()), ("rank", pa.int32()),
    ("start_ns", pa.int64()), ("end_ns", pa.int64()), ("step", pa.int64()),
    ("block_end_ns", pa.int64()), ("durable_ns", pa.int64()), ("ok", pa.bool_()),
    ("kind", pa.string()), ("tokens", pa.int64()),
])


@functools.lru_cache(maxsize=64)
def names(values: tuple) -> pa.Array:
    """The names of a dictionary-coded column as a string array (cached: the
    vocabularies and cause lists are a few small tuples)."""
    return pa.array(list(values), pa.string())


def label(values, idx) -> pa.DictionaryArray:
    """int8 codes `idx` into `values`, as a dictionary array."""
    return pa.DictionaryArray.from_arrays(pa.array(np.asarray(idx, np.int8)), names(tuple(values)))
