"""What the generators of :mod:`pau.synth` share: the event kinds and streams, the
defaults, argument checks, log-normal durations and the lifecycle table being built."""

from __future__ import annotations

import math
import os
from typing import Any, Optional, Union

import numpy as np
import pyarrow as pa

from pau.engine.vocab import LIFECYCLE_SCHEMA
from pau.errors import OptionError

KINDS = ("compute", "communication", "memcpy", "memset", "sync", "other")
_K = {k: np.int8(i) for i, k in enumerate(KINDS)}

COMPUTE_STREAM = 7
COMMUNICATION_STREAM = 13
COPY_STREAM = 3

DEFAULT_START_NS = 1_700_000_000 * 10**9  # 2023-11-14T22:13:20Z
DEFAULT_KERNELS_PER_STEP = 96
DEFAULT_BUCKETS = 4

PathLike = Union[str, "os.PathLike[str]"]
#: A straggler: (rank or None, slowdown factor), or None.
Straggler = Optional[tuple[Optional[int], float]]

_NULL = int(np.iinfo(np.int64).min)
_SINGLE_FAILURES = ("xid79", "ecc_error", "nccl_timeout", "host_oom")
_CORRELATED_FAILURES = ("switch_down", "power_loss")
_LC_STEP_SIGMA = 0.05   # log-normal jitter of step durations
_LC_SIGMA = 0.10        # log-normal jitter of init, restore, checkpoint block and delay
_S = 10**9


def int_at_least(v: object, lo: int | None = None) -> int | None:
    """``v`` as an int when it is one (Python's or numpy's, not a bool) and at least
    ``lo``, else None."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        return None
    n = int(v)
    return n if lo is None or n >= lo else None


def lifecycle_schema() -> pa.Schema:
    """The schema of the lifecycle tables :mod:`pau.synth` produces (DESIGN §2.2).

    ``record:string, attempt:int32, rank:int32, start_ns:int64, end_ns:int64, step:int64,
    block_end_ns:int64, durable_ns:int64, ok:bool, kind:string, tokens:int64``; every field
    but ``record`` and ``start_ns`` is nullable.
    """
    return LIFECYCLE_SCHEMA


def check_int(name: str, v: object, lo: int | None = None) -> int:
    """``v`` as an int, refused (:class:`pau.errors.OptionError`) when it is none or below ``lo``."""
    n = int_at_least(v, None)
    if n is None:
        raise OptionError(f"{name} must be an int, got {v!r}")
    if lo is not None and n < lo:
        raise OptionError(f"{name} must be >= {lo}, got {v!r}")
    return n


def check_int_or_none(name: str, v: object, lo: int | None = None) -> int | None:
    return None if v is None else check_int(name, v, lo)


def check_seconds(name: str, v: object, *, positive: bool = False) -> float:
    """``v`` as seconds (a float >= 0, > 0 when ``positive``), else :class:`pau.errors.OptionError`."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise OptionError(f"{name} must be a number of seconds, got {v!r}")
    x = float(v)
    if math.isnan(x) or x < 0 or (positive and x == 0):
        raise OptionError(f"{name} must be {'> 0' if positive else '>= 0'} seconds, got {v!r}")
    return x


def check_probability(name: str, v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
            or not 0.0 <= float(v) <= 1.0:
        raise OptionError(f"{name} must be a probability, got {v!r}")
    return float(v)


def dur(rng: np.random.Generator, median_s: float, sigma: float, size: int | tuple[int, ...] | None = None
        ) -> Any:
    """Log-normal durations around ``median_s`` seconds, as int64 ns (>= 0): an array, or
    one numpy int64 when ``size`` is None."""
    z = rng.standard_normal(size)
    return np.rint(median_s * _S * np.exp(sigma * z)).astype(np.int64)


class Cols:
    """Columns of a lifecycle table being built (NULL marks missing ints, -1 a missing ok)."""

    def __init__(self) -> None:
        self.parts: list[dict[str, np.ndarray]] = []

    def add(self, record: object, n: int = 1, **cols: Any) -> None:
        part = {"record": np.broadcast_to(np.asarray(record, dtype=object), (n,))}
        for name in ("attempt", "rank", "start_ns", "end_ns", "step", "block_end_ns",
                     "durable_ns", "tokens"):
            v = cols.get(name, _NULL)
            part[name] = np.broadcast_to(np.asarray(v, np.int64), (n,))
        part["ok"] = np.broadcast_to(np.asarray(cols.get("ok", -1), np.int8), (n,))
        part["kind"] = np.broadcast_to(np.asarray(cols.get("kind"), dtype=object), (n,))
        self.parts.append(part)

    def table(self) -> pa.Table:
        if not self.parts:
            return lifecycle_schema().empty_table()
        cat = {k: np.concatenate([p[k] for p in self.parts]) for k in self.parts[0]}
        arrays = []
        for name, typ in zip(LIFECYCLE_SCHEMA.names, LIFECYCLE_SCHEMA.types):
            v = cat[name]
            if name in ("record", "kind"):
                arrays.append(pa.array(v, typ))
            elif name == "ok":
                arrays.append(pa.array(v == 1, typ, mask=v < 0))
            else:
                arrays.append(pa.array(v, pa.int64(), mask=v == _NULL).cast(typ))
        return pa.Table.from_arrays(arrays, schema=lifecycle_schema())
