"""The vocabulary of DESIGN §2: kinds, activities, states."""

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

