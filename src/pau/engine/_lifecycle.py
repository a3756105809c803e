"""Lifecycle attribution: which state every accountable nanosecond of a rank was in.

The lifecycle table (DESIGN §2.2) says what the job was doing: attempts, phases,
steps, checkpoint saves, restores, failures. This module validates it, applies the
lineage rule to decide which step executions survived, and paints the states with
their precedence into disjoint intervals per rank. The checks of the rows, the scan
of the step columns and the set-up (attempts, membership, checkpoints, the painted
layers, and the relational errors of the input, which :func:`_setup` names) run in
the native core (``csrc/core/life_checks.hpp``, ``life_setup.hpp``, the lineage rule
too); the rollback attribution's pass over the steps in :mod:`pau.engine._life_attrib`
(the Numba kernel ``attribute_pass``). Their slow twins are in ``tests/``.

Rules pau applies where DESIGN is silent (also in docs/lifecycle.md):

* ``as_of`` defaults to the latest instant in the table. Records that start after
  ``as_of`` are ignored, intervals are cut at it, a checkpoint counts only if ``ok``
  and ``durable_ns <= as_of``, and an attempt whose end is unknown at ``as_of`` is
  running.
* A failure ends its attempt (for every member rank) at the failure time, even when
  the attempt's own ``end_ns`` is later or missing. An attempt with no end that is not
  the last ends where the next attempt starts.
* Records that end after their attempt ended are cut at the attempt end (a step in
  flight when the failure hit); records that *start* outside their attempt are errors.
* ``rank = -1`` on an attempt row means every rank accountable at its start (every
  known rank when there are no accountable records); on any other record, every
  member rank of its attempt.
* Without accountable records, a rank is accountable from the start of its first
  attempt to the end of its last.
* Init-kind phases (``init``, ``compile``, ``data_warmup``) of the first attempt are
  ``initialization``; of later attempts ``recovery.reinit``. Restores, failed ones
  included, are ``recovery.restore``. Precedence on one rank: checkpoint >
  eval/custom/data_wait > step > restore/init > unattributed; outage is accountable
  time outside every attempt.
* A checkpoint written as one row per rank (shards) is durable when its last shard
  is, and ok only if every shard is ok. Its blocking part is ``checkpoint.lost`` if it
  is not ok or not durable as of ``as_of``; ``checkpoint.unused`` if durable but its
  step is not a lineage step of the attempt that wrote it; else ``checkpoint``.
* A completed attempt's head is its last completed step, with or without a final
  checkpoint: pau trusts ``completed`` to mean the result was delivered.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute  # pa.compute

from pau import _core
from pau.engine._life_attrib import Attribution, _attribute
from pau.engine._life_setup import (
    NULL, NULL_MAX, _as_of, _by_job, _job_column, _native_layout, _native_rows, _read_step_range, _row_codes,
    _row_reasons, _scan, _setup, _Steps, _wide,
)
from pau.engine._life_setup import (  # noqa: F401  (read as pau.engine._lifecycle's by the tests)
    _ACC, _ATT, _CKPT, _FAIL, _INT8, _INT16, _INT32, _INT64, _INTERVAL_COLUMNS, _KINDED, _NEEDS_STEP, _PHASE,
    _REASON_COLUMN, _REST, _ROW_CHECKS, _ROW_FIX, _STEP, _STEP_CHECKS, ATTEMPT_KINDS, INIT_KINDS, PHASE_KINDS,
    RECORDS, InvalidLifecycleError, Lineage, _Attempts, _Checkpoints, _dense_lut, _err, _Jobs, _lut, _Members,
    _num_array, _pool_empty, _present, _record_name, _Rows, S, _Scan, _Setup,
)
from pau.engine._input import _column, as_table
from pau.errors import PauError, SpanOverflowError


def attribute_rows(lifecycle, *, as_of=None, on_invalid: str = "raise", ranks=None,
                   threads: int | None = None) -> Attribution:
    """Validate a lifecycle table and attribute every accountable ns (see module doc).
    ``threads``: for the pass over the steps (None: all cores from
    PARALLEL_MIN_VISITS step visits on, but see BY_RANK_MAX_CORES)."""
    table, job_col, x, st = _read_lifecycle(lifecycle, ranks)
    quarantine: list = []  # (original rows, reasons)
    if as_of is not None and not NULL <= int(as_of) <= NULL_MAX:
        raise PauError(f"as_of: {int(as_of)} does not fit in int64 nanoseconds. Fix: give an instant of the run, "
                       "in int64 ns")
    cut = NULL_MAX if as_of is None else int(as_of)
    x, st, sc = _screen_rows(table, x, st, cut, on_invalid, quarantine)
    jobs = None
    if job_col is not None:  # each job its own lineage: attempts and ranks as (job, id) pairs
        x, st, jobs = _by_job(x, st, *job_col)
        sc = _scan(st, x, cut)
    as_of, x, st, sc = _cut_at_as_of(x, st, sc, as_of, cut)
    res = _attribute_strict(x, st, sc, as_of, cut, ranks, threads, jobs, on_invalid, quarantine)
    if res.span_ns > NULL_MAX:  # accountable time lies in [its earliest start, as_of]: below, no rank overflows
        _check_spans(res)
    res.quarantine = _quarantine_table(table, quarantine) if on_invalid == "quarantine" else None
    return res


def _read_lifecycle(lifecycle, ranks):
    """The lifecycle as a table in the native layout, its job column (None without one),
    and its rows and steps as the native reader gives them. A table of many jobs takes
    no ``ranks``."""
    table = as_table(lifecycle, "lifecycle")
    if table.schema.get_field_index("start_ns") < 0:
        _column(table, "start_ns", "lifecycle")  # raises: the column is missing
    table = _native_layout(table)
    job_col = None
    if table.schema.get_field_index("job") >= 0:
        if ranks is not None:
            raise PauError("lifecycle: ranks name the ranks of one job; a table of many jobs (a job column) "
                           "takes none")
        job_col = _job_column(table)
    native = _native_rows(table)
    if native is None:  # pragma: no cover - _native_layout leaves nothing the reader declines
        raise RuntimeError("pau: the native lifecycle reader declined a table in its own layout; "
                           "please report this with the table's schema")
    x, n_step, first, steps = native
    st = _read_step_range(table, max(first, 0), n_step) if steps is None else _Steps(*steps)
    return table, job_col, x, st


def _screen_rows(table, x, st, cut: int, on_invalid: str, quarantine: list):
    """The row checks and the step checks: the first bad row raised as an
    :class:`InvalidLifecycleError`, or with ``on_invalid="quarantine"`` the bad rows and
    their reasons appended to ``quarantine`` and left out. Returns the rows, the steps
    and their scan."""
    sc = _scan(st, x, cut)
    x_code = _row_codes(x)
    x_bad = x_code > 0
    if not (x_bad.any() or sc.bad):
        return x, st, sc
    st = _wide(st)
    s_code = (_core.step_codes(st.start, st.end, st.rank, st.attempt, st.step, st.tokens) if sc.bad
              else np.zeros(len(st), np.int8))
    s_bad = s_code > 0
    s_idx = np.flatnonzero(s_bad)
    s_reasons = np.array(_STEP_CHECKS, dtype=object)[s_code[s_idx] - 1]
    rows_bad = np.concatenate([x.row[x_bad], st.row[s_idx]])
    why_bad = np.concatenate([_row_reasons(x_code[x_bad]), s_reasons])
    if on_invalid != "quarantine":
        _raise_first_bad(table, x, x_bad, rows_bad, why_bad)
    quarantine.append((rows_bad, why_bad))
    x = x.take(np.flatnonzero(~x_bad))
    if sc.bad:
        st = st.take(np.flatnonzero(~s_bad))
    return x, st, _scan(st, x, cut)


def _raise_first_bad(table, x, x_bad, rows_bad, why_bad) -> None:
    """The :class:`InvalidLifecycleError` of the first bad row (of the rows, then the
    steps, ``x_bad`` the rows' mask): the record or kind it names, and the least int64
    read as no time said so."""
    k = int(np.argmin(rows_bad))
    r, row = why_bad[k], int(rows_bad[k])
    detail = r
    if k < int(x_bad.sum()):
        xi = np.flatnonzero(x_bad)[k]
        if r == "unknown record":
            detail = f"unknown record {_record_name(table, row)!r}"
        elif r in ("unknown phase kind", "unknown attempt kind"):
            detail = f"{r} {x.kind[xi]!r}"
    fix = _ROW_FIX[r]
    if r == "null start_ns" and table.column("start_ns")[row].is_valid:
        # the least int64 is the lifecycle's null time: say so, not "null"
        detail = f"start_ns = {NULL}, the least int64, which the lifecycle reads as no time"
        fix = "store times above -2**63 ns"
    raise _err(_REASON_COLUMN[r], row, detail, fix, int(rows_bad.size))


def _cut_at_as_of(x, st, sc, as_of, cut: int):
    """``as_of`` (the latest instant of the table by default), and the rows and steps
    without those that start after it; at the int64 maximum, a save never durable does
    not count. Returns ``as_of``, the rows, the steps and their scan."""
    as_of = _as_of(x, sc, as_of)
    if (x.start > as_of).any():
        x = x.take(np.flatnonzero(x.start <= as_of))
    if sc.after:
        st = st.take(np.flatnonzero(st.start <= as_of))
        sc = _scan(st, x, cut)
    if as_of == NULL_MAX:
        # as_of is the int64 maximum, which the set-up also takes for "never durable" (a
        # null durable_ns): such a save must not count, as one that is not ok does not
        never = (x.rec == _CKPT) & (x.durable == NULL)
        if never.any():
            x = replace(x, ok=x.ok & ~never)
    return as_of, x, st, sc


def _attribute_strict(x, st, sc, as_of, cut: int, ranks, threads, jobs, on_invalid: str,
                      quarantine: list) -> Attribution:
    """The set-up and the pass, until the set-up names no relational error: the first
    raised, or with ``on_invalid="quarantine"`` the rows it names appended to
    ``quarantine``, left out, and the set-up run again."""
    while True:
        strict: list = []
        P = _setup(x, st, sc, as_of, ranks, strict) if jobs is None else _setup(x, st, sc, as_of, ranks, strict, jobs)
        res = None if P is None else _attribute(P, st, sc, as_of, strict, threads, jobs)
        if not strict:
            break
        if on_invalid != "quarantine":
            row, col, reason, fix = min(strict, key=lambda p: p[0])
            raise _err(col, row, reason, fix, len(strict))
        drop = np.array(sorted({int(p[0]) for p in strict}), np.int64)
        why = {int(p[0]): p[2] for p in reversed(strict)}
        quarantine.append((drop, np.array([why[r] for r in drop], dtype=object)))
        x = x.take(np.flatnonzero(~np.isin(x.row, drop)))
        st = st.take(np.flatnonzero(~np.isin(st.row, drop)))
        sc = _scan(st, x, cut)
    assert res is not None  # no contradiction left: the pass gave its attribution
    return res


def _check_spans(res: Attribution) -> None:
    """:class:`SpanOverflowError` naming the first rank whose accountable time (its first
    accountable instant to its last) int64 cannot hold: its counts would wrap. Always
    raised: a lifecycle's records may name every rank (rank -1), so no rows are a
    rank's own to set aside."""
    assert res.pieces is not None  # the pass always gives them
    rank = np.concatenate([p[0] for p in res.pieces]).astype(np.int64)
    start = np.concatenate([p[1] for p in res.pieces])
    end = np.concatenate([p[2] for p in res.pieces])
    ranks, inv = np.unique(rank, return_inverse=True)
    lo = np.full(ranks.size, NULL_MAX, np.int64)
    hi = np.full(ranks.size, -NULL_MAX - 1, np.int64)
    np.minimum.at(lo, inv, start)
    np.maximum.at(hi, inv, end)
    # hi - lo in Python ints (it may not fit int64): only the ranks that could overflow are looked at
    for i in np.flatnonzero((hi > 0) & (lo < 0)).tolist():
        if int(hi[i]) - int(lo[i]) > NULL_MAX:
            r = int(ranks[i])
            jobs = res.jobs
            where = "" if jobs is None else f" of {jobs.name(jobs.rank_job[r])}"
            r = r if jobs is None else int(jobs.rank_orig[r])
            raise SpanOverflowError(
                "lifecycle", r, int(lo[i]), int(hi[i]), measure="from its first accountable instant to its last",
                fix=f"correct the times of the records of rank {r}{where} (a time far from the others is often a "
                "unit or sign error), or pass as_of to end the ledger earlier")


def _quarantine_table(table: pa.Table, quarantine: list) -> pa.Table:
    """The caller's rows set aside, with their row number and reason."""
    if quarantine:
        rows = np.concatenate([q[0] for q in quarantine]).astype(np.int64)
        why = np.concatenate([q[1] for q in quarantine]).astype(str)
    else:
        rows, why = np.empty(0, np.int64), np.empty(0, str)
    order = np.argsort(rows, kind="stable")
    rows, why = rows[order], why[order]
    q = table.take(pa.array(rows))
    return q.append_column("row", pa.array(rows, pa.int64())).append_column(
        "reason", pa.array(why.tolist(), pa.string()))
