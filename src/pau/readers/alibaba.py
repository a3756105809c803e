"""Alibaba PAI cluster traces (``cluster-trace-gpu-v2020``): the mini-batch step times.

:func:`read_alibaba_minibatch` reads ``mini-batch-time/job_*_norm.csv`` into a steps
table (``rank, step, start_ns, end_ns``) that :func:`pau.figures.stragglers.stragglers`
reads. Choices where the trace is silent: ``docs/analysis.md``.
"""

from __future__ import annotations

import os
from typing import Union

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from pau.engine._input import _column, int_values, null_mask
from pau.engine.types import Quarantined, check_on_invalid, quarantine_schema, quarantine_table
from pau.errors import InvalidRowError, NoInputError, OptionError, SchemaError

__all__ = ["QUARANTINE_SCHEMA", "read_alibaba_minibatch"]

_TABLE = "alibaba mini-batch"

#: Rows set aside with ``on_invalid="quarantine"``: the common columns, then ``row``
#: (0-based among the file's data rows).
QUARANTINE_SCHEMA = quarantine_schema(pa.field("row", pa.int64()))


def read_alibaba_minibatch(path: str | os.PathLike[str], *, unit_ns: int = 1_000_000,
                           on_invalid: str = "raise") -> Union[pa.Table, Quarantined]:
    """Read an Alibaba PAI ``mini-batch-time/job_*_norm.csv`` into a step table.

    The file holds, per worker and sampled iteration, a mini-batch time normalised
    to 0-1000 (columns ``worker, gpu, time, batch_time_norm``; ``time`` is the
    iteration). The scale of the normalisation is not published, so one unit is
    read as ``unit_ns`` (default 1 ms): waits are then in those units.

    Returns ``rank, step, start_ns, end_ns, batch_time_norm``, sorted by ``step,
    rank``, every usable row of the file kept (duplicates included:
    :func:`pau.figures.stragglers.stragglers` rejects or quarantines them). The workers
    are data-parallel and synchronise at every iteration, so all ranks of a step start
    together, at the sum of the slowest durations of the earlier sampled steps (time
    between samples is not in the file and is not invented).

    A row with a null ``worker``, ``time`` or ``batch_time_norm``, or a batch time that
    is negative, not finite or whose product with ``unit_ns`` int64 ns cannot hold,
    raises :class:`pau.errors.InvalidRowError` naming the first; with
    ``on_invalid="quarantine"`` such rows are set aside and the result is
    :class:`pau.core.Quarantined` ``(table, quarantine)`` (:data:`QUARANTINE_SCHEMA`:
    ``source_file``, ``location`` ``line N``, ``reason``, then ``row``, 0-based among the
    data rows). A missing file raises :class:`pau.errors.NoInputError`, a file that is
    not CSV :class:`pau.errors.SchemaError`.
    """
    check_on_invalid(on_invalid)
    if isinstance(unit_ns, bool) or not isinstance(unit_ns, int) or unit_ns <= 0:
        raise OptionError(f"read_alibaba_minibatch: unit_ns = {unit_ns!r}. Fix: give the ns of one normalised unit, "
                          "a positive int (default 1,000,000: 1 ms)")
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise NoInputError(f"read_alibaba_minibatch: no file at {p!r}. Fix: give a mini-batch-time/job_*_norm.csv")
    table = f"{_TABLE} {p}"
    try:
        t = pcsv.read_csv(p)
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        raise SchemaError(table, "(file)", f"is not a CSV pau can read ({str(exc)[:200]})",
                          "give the trace's job_*_norm.csv as published") from None
    for name in ("worker", "time", "batch_time_norm"):
        _column(t, name, table)
    rank, rank_null = int_values(t, "worker", table)
    step, step_null = int_values(t, "time", table)
    dur_col = _column(t, "batch_time_norm", table)
    dur_null = null_mask(dur_col)
    raw = dur_col.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.rint(raw * unit_ns)
        wrong = ~dur_null & (~np.isfinite(scaled) | (scaled < 0) | (scaled >= 2.0**63))
    checks = (("worker", rank_null, "null worker"), ("time", step_null, "null iteration"),
              ("batch_time_norm", dur_null, "null batch time"),
              ("batch_time_norm", wrong, f"not a batch time (negative, not finite, or past int64 ns at "
                                         f"unit_ns={unit_ns})"))
    bad = np.zeros(t.num_rows, bool)
    for _, mask, _ in checks:
        bad |= mask
    if bad.any() and on_invalid == "raise":
        i = int(np.flatnonzero(bad)[0])
        name, _, why = next(c for c in checks if c[1][i])
        shown = f"{dur_col[i].as_py()!r} is " + why if why.startswith("not a batch") else why
        raise InvalidRowError(table, name, i, f"{shown} (line {i + 2})", "correct or remove the row", int(bad.sum()))
    rows = np.flatnonzero(bad)
    quarantine = quarantine_table(QUARANTINE_SCHEMA, p, [f"line {i + 2}" for i in rows],
                                  [next(f"column {c[0]}: {c[2]}" for c in checks if c[1][i]) for i in rows],
                                  row=rows.astype(np.int64))
    keep = ~bad
    out = _steps(rank[keep], step[keep], scaled[keep].astype(np.int64), dur_col.filter(pa.array(keep)), unit_ns)
    return Quarantined(out, quarantine) if on_invalid == "quarantine" else out


def _steps(rank: np.ndarray, step: np.ndarray, dur: np.ndarray, norm: pa.ChunkedArray, unit_ns: int) -> pa.Table:
    """The step table: rows sorted by (step, rank), each sampled step starting where the
    slowest worker of the one before ended."""
    order = np.lexsort((rank, step))
    rank, step, dur = rank[order], step[order], dur[order]
    # one group per sampled iteration (rows are sorted by it)
    starts = np.flatnonzero(np.r_[True, step[1:] != step[:-1]]) if step.size else np.zeros(0, np.int64)
    longest = np.maximum.reduceat(dur, starts) if step.size else np.zeros(0, np.int64)
    if sum(int(x) for x in longest) > 2**63 - 1:  # the steps' starts add the slowest durations up
        raise OptionError(f"read_alibaba_minibatch: the sampled steps last more than int64 ns hold at "
                          f"unit_ns={unit_ns}. Fix: give a smaller unit_ns")
    step_start = np.concatenate([[0], np.cumsum(longest)[:-1]]).astype(np.int64)
    gid = np.zeros(step.size, np.int64)
    if step.size:
        gid[starts] = 1
        gid = np.cumsum(gid) - 1
    s = step_start[gid]
    return pa.table({"rank": pa.array(rank, pa.int32()), "step": pa.array(step, pa.int64()),
                     "start_ns": pa.array(s, pa.int64()), "end_ns": pa.array(s + dur, pa.int64()),
                     "batch_time_norm": norm.take(pa.array(order))})
