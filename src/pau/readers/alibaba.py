"""Alibaba PAI cluster traces (``cluster-trace-gpu-v2020``): the mini-batch step times.

:func:`read_alibaba_minibatch` reads ``mini-batch-time/job_*_norm.csv`` into a steps
table (``rank, step, start_ns, end_ns``) that :func:`pau.figures.stragglers.stragglers`
reads. Choices where the trace is silent: ``docs/analysis.md``.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from pau.engine._input import _column, int_values, null_mask
from pau.errors import InvalidRowError, NoInputError, OptionError, SchemaError

__all__ = ["read_alibaba_minibatch"]

_TABLE = "alibaba mini-batch"


def read_alibaba_minibatch(path: str | os.PathLike[str], *, unit_ns: int = 1_000_000) -> pa.Table:
    """Read an Alibaba PAI ``mini-batch-time/job_*_norm.csv`` into a step table.

    The file holds, per worker and sampled iteration, a mini-batch time normalised
    to 0-1000 (columns ``worker, gpu, time, batch_time_norm``; ``time`` is the
    iteration). The scale of the normalisation is not published, so one unit is
    read as ``unit_ns`` (default 1 ms): waits are then in those units.

    Returns ``rank, step, start_ns, end_ns, batch_time_norm``, sorted by ``step,
    rank``, every row of the file kept (duplicates included:
    :func:`pau.figures.stragglers.stragglers` rejects or quarantines them). The workers
    are data-parallel and synchronise at every iteration, so all ranks of a step start
    together, at the sum of the slowest durations of the earlier sampled steps (time
    between samples is not in the file and is not invented). A null ``worker``,
    ``time`` or ``batch_time_norm``, or a batch time that is negative, not finite or
    whose product with ``unit_ns`` int64 ns cannot hold, raises
    :class:`pau.errors.InvalidRowError` naming the row; a missing file
    :class:`pau.errors.NoInputError`, a file that is not CSV :class:`pau.errors.SchemaError`.
    """
    if isinstance(unit_ns, bool) or not isinstance(unit_ns, int) or unit_ns <= 0:
        raise OptionError(f"read_alibaba_minibatch: unit_ns = {unit_ns!r}. Fix: give the ns of one normalised unit, "
                          "a positive int (default 1,000,000: 1 ms)")
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise NoInputError(f"read_alibaba_minibatch: no file at {p!r}. Fix: give a mini-batch-time/job_*_norm.csv")
    try:
        t = pcsv.read_csv(p)
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        raise SchemaError(f"{_TABLE} {p}", "(file)", f"is not a CSV pau can read ({str(exc)[:200]})",
                          "give the trace's job_*_norm.csv as published") from None
    for name in ("worker", "time", "batch_time_norm"):
        _column(t, name, _TABLE)
    rank, rank_null = int_values(t, "worker", _TABLE)
    step, step_null = int_values(t, "time", _TABLE)
    dur_col = _column(t, "batch_time_norm", _TABLE)
    for name, null, why in (("worker", rank_null, "null worker"), ("time", step_null, "null iteration"),
                            ("batch_time_norm", null_mask(dur_col), "null batch time")):
        if null.any():
            raise InvalidRowError(_TABLE, name, int(np.flatnonzero(null)[0]), why, "remove the row",
                                  int(null.sum()))
    raw = dur_col.cast(pa.float64()).to_numpy(zero_copy_only=False)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.rint(raw * unit_ns)
        wrong = ~np.isfinite(scaled) | (scaled < 0) | (scaled >= 2.0**63)
    if wrong.any():
        i = int(np.flatnonzero(wrong)[0])
        raise InvalidRowError(_TABLE, "batch_time_norm", i, f"{raw[i]!r} is not a batch time (negative, not finite, "
                              f"or past int64 ns at unit_ns={unit_ns})", "correct or remove the row", int(wrong.sum()))
    dur = scaled.astype(np.int64)
    order = np.lexsort((rank, step))
    rank, step, dur = rank[order], step[order], dur[order]
    # one group per sampled iteration (rows are sorted by it)
    starts = np.flatnonzero(np.r_[True, step[1:] != step[:-1]]) if step.size else np.zeros(0, np.int64)
    longest = np.maximum.reduceat(dur, starts) if step.size else np.zeros(0, np.int64)
    if sum(int(x) for x in longest) > 2**63 - 1:  # the steps' starts add the slowest durations up
        raise InvalidRowError(_TABLE, "batch_time_norm", 0, f"the sampled steps last more than int64 ns hold at "
                              f"unit_ns={unit_ns}", "give a smaller unit_ns")
    step_start = np.concatenate([[0], np.cumsum(longest)[:-1]]).astype(np.int64)
    gid = np.zeros(step.size, np.int64)
    if step.size:
        gid[starts] = 1
        gid = np.cumsum(gid) - 1
    s = step_start[gid]
    return pa.table({"rank": pa.array(rank, pa.int32()), "step": pa.array(step, pa.int64()),
                     "start_ns": pa.array(s, pa.int64()), "end_ns": pa.array(s + dur, pa.int64()),
                     "batch_time_norm": dur_col.take(pa.array(order))})
