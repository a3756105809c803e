"""The vocabulary of DESIGN §2: kinds, activities, states."""

import pyarrow as pa

from ._input import KINDS

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
