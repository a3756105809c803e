"""Lifecycle attribution: which state every accountable nanosecond of a rank was in.

The lifecycle table (DESIGN §2.2) says what the job was doing: attempts, phases,
steps, checkpoint saves, restores, failures. This module validates it, applies the
lineage rule to decide which step executions survived, and paints the states with
their precedence into disjoint intervals per rank. The checks of the rows, the scan
of the step columns and the set-up (attempts, membership, checkpoints, the painted
layers, and the relational errors of the input, which :func:`_setup` names) run in
the native core (``csrc/core/life_checks.hpp``, ``life_setup.hpp``); the rollback
attribution in the Numba kernels of :mod:`pau.engine._kernels`: ``lineage`` for the lineage
rule, ``attribute_pass`` for the steps. Their slow twins are in ``tests/``.

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

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute  # pa.compute

from pau import _core
from pau.engine import _kernels
from pau.engine._search import lower_bound
from pau.engine._input import _column, as_table, rank_column, time_column
from pau.engine._threads import run_parts, thread_count
from pau.engine.vocab import STATES, names
from pau.errors import InvalidRowError, PauError, SchemaError, SpanOverflowError

RECORDS = ("accountable", "attempt", "phase", "step", "checkpoint_save", "restore", "failure")
PHASE_KINDS = ("init", "compile", "data_warmup", "data_wait", "eval", "custom")
ATTEMPT_KINDS = ("completed", "failed", "preempted", "running")
INIT_KINDS = ("init", "compile", "data_warmup")

S = {name: i for i, name in enumerate(STATES)}
NULL = np.iinfo(np.int64).min
NULL_MAX = np.iinfo(np.int64).max
_ACC, _ATT, _PHASE, _STEP, _CKPT, _REST, _FAIL = range(7)


class InvalidLifecycleError(InvalidRowError):
    """A lifecycle row that cannot be accounted for."""


def _err(column: str, row: int, reason: str, fix: str, count: int = 1):
    return InvalidLifecycleError("lifecycle", column, int(row), reason, fix, count)


# ---------------------------------------------------------------------------
# reading the table


@dataclass
class _Rows:
    """The lifecycle table as numpy columns; NULL marks a missing int64."""

    row: np.ndarray       # position in the caller's table
    rec: np.ndarray       # record code (index in RECORDS)
    attempt: np.ndarray   # int64, NULL if missing
    rank: np.ndarray      # int64, -1 = every rank
    start: np.ndarray
    end: np.ndarray
    step: np.ndarray
    block_end: np.ndarray
    durable: np.ndarray
    ok: np.ndarray        # bool (missing = True)
    kind: np.ndarray      # object array of str or None
    tokens: np.ndarray    # int64, 0 if missing

    def take(self, idx) -> "_Rows":
        return _Rows(self.row[idx], self.rec[idx], self.attempt[idx], self.rank[idx], self.start[idx],
                     self.end[idx], self.step[idx], self.block_end[idx], self.durable[idx], self.ok[idx],
                     self.kind[idx], self.tokens[idx])

    def __len__(self) -> int:
        return self.row.size


def _record_name(table: pa.Table, row: int):
    """The record name of one row of the caller's table (for messages)."""
    return table.column("record")[row].as_py()


_ROW_FIX = {
    "unknown record": "use one of " + ", ".join(RECORDS),
    "null start_ns": "every record needs start_ns",
    "end_ns before start_ns": "correct the times; zero-length records are allowed",
    "block_end_ns before start_ns": "a save blocks from start_ns to block_end_ns >= start_ns",
    "durable_ns before start_ns": "a checkpoint cannot be durable before its save started",
    "rank below -1": "ranks are >= 0, or -1 for every rank of the attempt",
    "missing attempt": "give the attempt this record belongs to",
    "missing step": "give the step (the k-th optimizer update) this record is about",
    "accountable rank must be >= 0": "give one accountable row per rank",
    "unknown phase kind": "use one of " + ", ".join(PHASE_KINDS),
    "unknown attempt kind": "use one of " + ", ".join(ATTEMPT_KINDS),
    "negative tokens": "tokens count the tokens a step trained on: 0 or more (leave it null if unknown)",
}
_REASON_COLUMN = {
    "unknown record": "record", "null start_ns": "start_ns",
    "end_ns before start_ns": "end_ns", "block_end_ns before start_ns": "block_end_ns",
    "durable_ns before start_ns": "durable_ns", "rank below -1": "rank",
    "missing attempt": "attempt", "missing step": "step", "accountable rank must be >= 0": "rank",
    "unknown phase kind": "kind", "unknown attempt kind": "kind", "negative tokens": "tokens",
}
# The problems a step row can show alone (_core.step_codes), in the order they are looked for.
_STEP_CHECKS = ("null start_ns", "end_ns before start_ns", "rank below -1", "missing attempt",
                "missing step", "negative tokens")


# The problems one row can show alone, in the order they are looked for.
_ROW_CHECKS = ("unknown record", "null start_ns", "end_ns before start_ns",
               "block_end_ns before start_ns", "durable_ns before start_ns", "rank below -1",
               "missing attempt", "missing step", "accountable rank must be >= 0",
               "unknown phase kind", "unknown attempt kind")
_NEEDS_STEP = np.array([r in ("step", "checkpoint_save", "restore") for r in RECORDS], np.bool_)
_PHASE_SET, _ATTEMPT_SET = frozenset(PHASE_KINDS), frozenset(ATTEMPT_KINDS) | {None}


_UNKNOWN_PHASE_KIND = 1 + _ROW_CHECKS.index("unknown phase kind")
_UNKNOWN_ATTEMPT_KIND = 1 + _ROW_CHECKS.index("unknown attempt kind")


def _row_codes(x: _Rows) -> np.ndarray:
    """Per row, 0 when usable, else 1 + the index in _ROW_CHECKS of the first problem
    visible in that row alone."""
    code = _core.row_checks(x.rec, x.start, x.end, x.block_end, x.durable, x.rank, x.attempt, x.step, _ACC,
                            _NEEDS_STEP)
    # kinds are strings: looked up in sets, on the rows concerned only
    rows = np.flatnonzero(((x.rec == _PHASE) | (x.rec == _ATT)) & (code == 0))
    for i, r, k in zip(rows.tolist(), x.rec[rows].tolist(), x.kind[rows].tolist()):
        if k not in (_PHASE_SET if r == _PHASE else _ATTEMPT_SET):
            code[i] = _UNKNOWN_PHASE_KIND if r == _PHASE else _UNKNOWN_ATTEMPT_KIND
    return code


def _row_reasons(code: np.ndarray) -> np.ndarray:
    """The reason string of each row's code (None = usable)."""
    out = np.full(code.size, None, dtype=object)
    out[code > 0] = np.array(_ROW_CHECKS, dtype=object)[code[code > 0] - 1]
    return out


# ---------------------------------------------------------------------------
# attempts and lineage


@dataclass
class _Attempts:
    ids: np.ndarray          # attempt id per dense index, ordered by start
    start: np.ndarray
    end: np.ndarray          # effective end (<= as_of)
    running: np.ndarray      # bool
    cause: np.ndarray        # object: failure kind / end reason
    failures: list           # (attempt id, time, kind) distinct, <= as_of
    completed: np.ndarray    # bool: ended with kind "completed"

    def dense(self, ids: np.ndarray) -> np.ndarray:
        order = np.argsort(self.ids)
        pos = np.searchsorted(self.ids, ids, sorter=order)
        pos = np.minimum(pos, self.ids.size - 1)
        d = order[pos] if self.ids.size else pos
        return np.where(self.ids[d] == ids, d, -1) if self.ids.size else np.full(ids.shape, -1)


@dataclass
class _Checkpoints:
    attempt: np.ndarray   # dense attempt index
    step: np.ndarray
    durable: np.ndarray   # NULL if never (as of as_of) or not ok
    ok: np.ndarray


@dataclass
class Lineage:
    """The chain of surviving work: per attempt (dense index) the steps (base, head]."""

    base: np.ndarray      # int64; NULL = from the beginning
    head: np.ndarray      # int64; NULL = nothing survives
    on: np.ndarray        # bool: attempt is on the chain
    last: int             # dense index of the last attempt


# ---------------------------------------------------------------------------
# step records: the bulk of a lifecycle, kept as plain numeric columns


@dataclass
class _Steps:
    row: np.ndarray | range  # a range: one run of rows (an array only when needed)
    attempt: np.ndarray
    rank: np.ndarray
    start: np.ndarray
    end: np.ndarray
    step: np.ndarray
    tokens: np.ndarray
    # Until the first scan: end_ns as read (values, validity bitmap, bit offset);
    # the scan fills `end` from it (see _scan).
    end_src: tuple | None = None

    def take(self, idx) -> "_Steps":
        assert self.end_src is None, "scan the steps first"
        row = np.arange(self.row.start, self.row.stop, dtype=np.int64) if isinstance(self.row, range) else self.row
        return _Steps(row[idx], self.attempt[idx], self.rank[idx], self.start[idx], self.end[idx],
                      self.step[idx], self.tokens[idx])

    def __len__(self) -> int:
        return len(self.row)


_INT64, _INT32, _INT16, _INT8 = pa.int64(), pa.int32(), pa.int16(), pa.int8()
_INTERVAL_COLUMNS = ["rank", "start_ns", "end_ns", "state", "attempt", "step", "cause"]


def _num_array(col, name: str, fill=NULL) -> np.ndarray:
    """An int64 column with `fill` for nulls, from one Arrow array."""
    if col.type == _INT32:  # ids and ranks as int32: nothing to check
        pass
    elif not (pa.types.is_integer(col.type) or pa.types.is_timestamp(col.type)):
        raise SchemaError("lifecycle", name, f"has type {col.type}, not an integer",
                          "give times as int64 nanoseconds and ids as integers")
    elif pa.types.is_integer(col.type) and col.type.bit_width == 64 and (
            name in ("attempt", "rank") or pa.types.is_unsigned_integer(col.type)):
        lo, hi = (np.iinfo(np.int32).min, np.iinfo(np.int32).max) if name in ("attempt", "rank") else (0, NULL_MAX)
        mm = pa.compute.min_max(col).as_py()
        if mm["max"] is not None and (mm["max"] > hi or mm["min"] < lo):
            filled = col.fill_null(0)  # the checks below raise naming the first bad row
            rank_column(filled, "lifecycle", name) if name in ("attempt", "rank") else \
                time_column(filled, name, "lifecycle")
    typ = col.type
    if typ == _INT64 or typ == _INT32:  # the usual types: read the buffers directly
        dt = np.int64 if typ == _INT64 else np.int32
        validity, data = col.buffers()[:2]
        vals = np.frombuffer(data, dt, len(col), col.offset * np.dtype(dt).itemsize)
        if not col.null_count:
            return vals if dt is np.int64 else vals.astype(np.int64)
        out = _pool_empty(len(col), np.int64)
        _core.fill_nulls(vals, np.frombuffer(validity, np.uint8), col.offset, fill, out)
        return out
    if pa.types.is_timestamp(col.type):
        vals = time_column(col.fill_null(0) if col.null_count else col, name, "lifecycle")
    else:
        vals = (col.fill_null(0) if col.null_count else col).to_numpy(zero_copy_only=False)
    vals = np.asarray(vals, np.int64)
    if col.null_count:
        vals = vals.copy()
        vals[np.asarray(col.is_null())] = fill
    return vals


def _read_step_range(t: pa.Table, lo: int, count: int) -> _Steps:
    """Step rows ``lo .. lo + count``: views of the Arrow buffers when that range lies
    in one chunk and has no nulls (int32 ``attempt``/``rank`` stay int32: the kernels
    read either); a converted copy otherwise."""

    later = []

    def col(name, fill=NULL):
        if name not in t.column_names:
            return np.full(count, fill, np.int64)
        part = t.column(name).slice(lo, count)
        arr = part.chunk(0) if part.num_chunks == 1 else part.combine_chunks()
        direct = (pa.int64(), pa.int32()) if name in ("attempt", "rank") else (pa.int64(),)
        if arr.null_count == 0 and arr.type in direct:
            return arr.to_numpy(zero_copy_only=True)
        if name == "end_ns" and arr.type == pa.int64():  # nulls: filled by the first scan
            validity, data = arr.buffers()[:2]
            later.append((np.frombuffer(data, np.int64, count, arr.offset * 8), np.frombuffer(validity, np.uint8),
                          arr.offset))
            return _pool_empty(count, np.int64)
        return _num_array(arr, name, fill)

    st = _Steps(range(lo, lo + count), col("attempt"), col("rank", -1), col("start_ns"),
                col("end_ns"), col("step"), col("tokens", 0))
    st.end_src = later[0] if later else None
    return st


def _wide(st: _Steps) -> _Steps:
    """The same rows with every column int64 (the numpy paths compare with NULL)."""
    assert st.end_src is None, "scan the steps first"
    def wide(f: str) -> np.ndarray:
        return np.asarray(getattr(st, f), np.int64)  # the row range too

    return _Steps(wide("row"), wide("attempt"), wide("rank"), wide("start"), wide("end"), wide("step"),
                  wide("tokens"))


def _dense_lut(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Position of each value in the sorted unique `keys`, -1 if absent."""
    if keys.size == 0:
        return np.full(values.shape, -1, np.int64)
    lo, hi = int(keys[0]), int(keys[-1])
    if hi - lo < 1 << 24:
        lut = np.full(hi - lo + 1, -1, np.int64)
        lut[keys - lo] = np.arange(keys.size)
        return _core.lut_map(np.asarray(values), lo, lut)
    pos = np.minimum(np.searchsorted(keys, values), keys.size - 1)
    return np.where(keys[pos] == values, pos, -1)


def _present(values: np.ndarray) -> np.ndarray:
    """Sorted unique non-negative values (bincount when the range is small)."""
    v = values[values >= 0] if (values < 0).any() else values
    if v.size == 0:
        return np.empty(0, np.int64)
    if int(v.max()) < 1 << 24:
        return np.flatnonzero(np.bincount(v)).astype(np.int64)
    return np.unique(v)


@dataclass
class _Members:
    """The member ranks of each attempt, as flat arrays: attempt ``ids[j]`` has the
    sorted ranks ``ranks[offsets[j]:offsets[j + 1]]``, at least one (an attempt
    without members is not among ``ids``)."""

    ids: np.ndarray      # sorted attempt ids
    offsets: np.ndarray
    ranks: np.ndarray

    @classmethod
    def of(cls, att_ids: np.ndarray, ranks: np.ndarray) -> "_Members":
        order = np.lexsort((ranks, att_ids))
        a, r = att_ids[order], ranks[order]
        ids, counts = np.unique(a, return_counts=True)
        return cls(ids.astype(np.int64), np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
                   r.astype(np.int64))


# ---------------------------------------------------------------------------
# many jobs in one table


_PAIR_SHIFT = 32
_PAIR_BIAS = 1 << 31  # ids are within int32: id + bias is below 2**32


@dataclass
class _Jobs:
    """A table of many jobs (its ``job`` column): each job is its own lineage. The rest of
    attribution sees (job, attempt) and (job, rank) pairs as dense internal ids, job-major
    (so one job's attempts and ranks are contiguous, and the ids of one job keep the order
    of the table's), and the output maps them back."""

    names: list              # job name per code, sorted; None (last) = the unnamed job (null)
    row_job: np.ndarray      # job code per row of the caller's table
    rank_keys: np.ndarray    # the (job, rank) pairs, sorted: internal rank id = position
    att_keys: np.ndarray     # the (job, attempt) pairs, sorted: internal attempt id = position

    @property
    def rank_job(self) -> np.ndarray:
        return self.rank_keys >> _PAIR_SHIFT

    @property
    def rank_orig(self) -> np.ndarray:
        return (self.rank_keys & 0xFFFFFFFF) - _PAIR_BIAS

    @property
    def att_job(self) -> np.ndarray:
        return self.att_keys >> _PAIR_SHIFT

    @property
    def att_orig(self) -> np.ndarray:
        return (self.att_keys & 0xFFFFFFFF) - _PAIR_BIAS

    def ids(self, keys: np.ndarray, job: np.ndarray, values: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """The internal ids of the pairs (job, value) where ``keep``; the value elsewhere."""
        out = np.asarray(values, np.int64).copy()
        pair = (job[keep].astype(np.int64) << _PAIR_SHIFT) | (out[keep] + _PAIR_BIAS)
        out[keep] = np.searchsorted(keys, pair)
        return out

    def column(self, codes: np.ndarray) -> pa.Array:
        """The ``job`` column of the output: the names of job codes (null: the unnamed job)."""
        codes = np.asarray(codes, np.int32)
        named = [n for n in self.names if n is not None]
        mask = codes >= len(named) if len(named) < len(self.names) else None
        return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32(), mask=mask), pa.array(named, pa.string()))

    def name(self, code: int) -> str:
        n = self.names[int(code)]
        return "the unnamed job (job null)" if n is None else f"job {n!r}"

    def with_job(self, table: pa.Table) -> pa.Table:
        """A table whose ``rank`` holds internal rank ids, with the table's ``job`` and
        ``rank`` instead (``job`` before ``rank``)."""
        i = table.schema.get_field_index("rank")
        r = np.asarray(table.column("rank").combine_chunks() if table.num_rows else np.empty(0, np.int64), np.int64)
        table = table.set_column(i, "rank", pa.array(self.rank_orig[r].astype(np.int32), pa.int32()))
        return table.add_column(i, "job", self.column(self.rank_job[r]))


    def events(self, events) -> pa.Table:
        """In-memory events with ``rank`` as the internal id of their (job, rank) (a pair
        no lifecycle row names gets an id of its own past them, so it is accountable
        nowhere) and no ``job`` column. Without a ``job`` column the events are the one
        job's when the lifecycle has one job; else a SchemaError."""
        table = as_table(events, "events")
        if table.schema.get_field_index("job") < 0:
            if len(self.names) != 1:
                raise SchemaError("events", "job", "is missing, but the lifecycle holds many jobs",
                                  "give each event the job of its rank (a job column as in the lifecycle)")
            codes = np.zeros(table.num_rows, np.int64)
        else:
            typ = table.schema.field("job").type
            values = typ.value_type if pa.types.is_dictionary(typ) else typ
            if not (pa.types.is_string(values) or pa.types.is_large_string(values)):
                raise SchemaError("events", "job", f"has type {typ}, not string", "name jobs as the lifecycle does")
            code_of = {n: k for k, n in enumerate(self.names)}
            enc = pa.compute.dictionary_encode(table.column("job").cast(pa.string()).combine_chunks())
            lut = np.array([code_of.get(n, len(self.names)) for n in enc.dictionary.to_pylist()] + [
                code_of.get(None, len(self.names))], np.int64)
            codes = lut[enc.indices.fill_null(len(lut) - 1).to_numpy(zero_copy_only=False).astype(np.int64)]
            table = table.drop_columns(["job"])
        i = table.schema.get_field_index("rank")
        if i < 0:
            return table  # the sweep names the missing column
        col = table.column(i)
        if not pa.types.is_integer(col.type):
            return table  # the sweep names the type
        raw = col.combine_chunks()
        rank = raw.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        if rank.size and rank.max() > np.iinfo(np.int32).max:
            return table  # the sweep names the rank
        keep = (rank >= 0) & (rank <= np.iinfo(np.int32).max)
        pair = _pairs(codes[keep], rank[keep])
        pos = np.minimum(np.searchsorted(self.rank_keys, pair), max(self.rank_keys.size - 1, 0))
        hit = self.rank_keys[pos] == pair if self.rank_keys.size else np.zeros(pair.size, bool)
        ids = np.where(hit, pos, 0)
        if not hit.all():  # pairs of no lifecycle row: ids of their own
            other, inv = np.unique(pair[~hit], return_inverse=True)
            ids[~hit] = self.rank_keys.size + inv
        out = rank.copy()
        out[keep] = ids
        mask = np.asarray(raw.is_null()) if raw.null_count else None
        return table.set_column(i, "rank", pa.array(out.astype(np.int32), pa.int32(), mask=mask))


def _job_column(table: pa.Table) -> tuple:
    """The ``job`` column as codes into sorted names (null, the unnamed job, last):
    ``(code per row, names)``; a column of another type is a SchemaError."""
    col = table.column("job")
    typ = col.type
    values = typ.value_type if pa.types.is_dictionary(typ) else typ
    if not (pa.types.is_string(values) or pa.types.is_large_string(values)):
        raise SchemaError("lifecycle", "job", f"has type {typ}, not string",
                          "name each job with a string (null: one unnamed job), or leave the column out")
    arr = col.cast(pa.string()).combine_chunks() if col.num_chunks != 1 or typ != pa.string() else col.chunk(0)
    enc = pa.compute.dictionary_encode(arr)
    found = enc.dictionary.to_pylist()
    order = sorted(range(len(found)), key=found.__getitem__)
    remap = np.empty(len(found) + 1, np.int64)
    remap[order] = np.arange(len(found))
    remap[len(found)] = len(found)
    idx = enc.indices.fill_null(len(found)).to_numpy(zero_copy_only=False).astype(np.int64)
    names = [found[k] for k in order] + ([None] if enc.indices.null_count else [])
    return remap[idx], names


def _pairs(job: np.ndarray, values: np.ndarray) -> np.ndarray:
    return (job.astype(np.int64) << _PAIR_SHIFT) | (np.asarray(values, np.int64) + _PAIR_BIAS)


def _by_job(x: _Rows, st: _Steps, row_job: np.ndarray, names: list) -> tuple:
    """The rows with their attempts and ranks as internal ids of (job, id) pairs (rank
    -1 and missing attempts stay), and the :class:`_Jobs` that maps them back."""
    xj = row_job[x.row]
    sj = row_job[np.asarray(st.row, np.int64)] if len(st) else np.empty(0, np.int64)
    s_rank, s_att = np.asarray(st.rank, np.int64), np.asarray(st.attempt, np.int64)
    xr, sr = x.rank >= 0, s_rank >= 0
    xa, sa = x.attempt != NULL, s_att != NULL
    rank_keys = np.unique(np.concatenate([_pairs(xj[xr], x.rank[xr]), _pairs(sj[sr], s_rank[sr])]))
    att_keys = np.unique(np.concatenate([_pairs(xj[xa], x.attempt[xa]), _pairs(sj[sa], s_att[sa])]))
    jobs = _Jobs(names, row_job, rank_keys, att_keys)
    x = _Rows(x.row, x.rec, jobs.ids(att_keys, xj, x.attempt, xa), jobs.ids(rank_keys, xj, x.rank, xr), x.start,
              x.end, x.step, x.block_end, x.durable, x.ok, x.kind, x.tokens)
    st = _Steps(st.row, jobs.ids(att_keys, sj, s_att, sa), jobs.ids(rank_keys, sj, s_rank, sr), st.start, st.end,
                st.step, st.tokens)
    return x, st, jobs


# ---------------------------------------------------------------------------
# attribution


class _StepLabels:
    """The labelled step executions in (rank, start) order, computed on first use:
    only :meth:`Ledger.cycles` needs them, and attribution itself labels steps while
    it layers them without writing these arrays."""

    def __init__(self, compute):
        self._compute = compute
        self._arrays = None

    def get(self):
        if self._arrays is None:
            self._arrays = self._compute()
            self._compute = None
        return self._arrays


@dataclass
class Attribution:
    """Everything :func:`attribute_rows` knows: the state intervals and what led to them."""

    intervals_of: Any          # () -> the intervals table (built on first use of .intervals)
    as_of: int
    attempts: _Attempts
    lineage: Lineage
    checkpoints: _Checkpoints
    steps: _StepLabels         # step executions in (rank, start) order (see the properties)
    lineage_ckpt_steps: np.ndarray
    failures_all: list         # failure records, plus attempts that failed without one
    wall_ns: int               # as_of minus the earliest accountable start (many jobs: _jobs_wall's sum)
    preserved_steps: int
    preserved_tokens: int
    accountable: pa.Table      # rank, accountable_ns
    quarantine: pa.Table | None = None
    pieces: list | None = None  # the intervals' (rank, start, end, state) as numpy arrays, per batch
    # many jobs (a job column): the ids' map (pieces keep its internal rank ids; every table
    # has the table's ranks and a job column), the job of each lineage checkpoint and attempt
    jobs: "_Jobs | None" = None
    acc_ranks: np.ndarray | None = None  # the ranks of ``accountable`` as the pieces have them
    # as_of minus the earliest accountable instant of any rank (one job: wall_ns; many
    # jobs: wall_ns sums the jobs', this is the longest any rank's accountable time can be)
    span_ns: int = 0
    lineage_ckpt_jobs: np.ndarray | None = None
    attempt_jobs: np.ndarray | None = None

    @property
    def intervals(self) -> pa.Table:
        """The state intervals (``rank, start_ns, end_ns, state, attempt, step, cause``):
        built from the pass's output on first use (the full ledger sums them without
        the table)."""
        if not isinstance(self.intervals_of, pa.Table):
            self.intervals_of = self.intervals_of()
        return self.intervals_of

    @property
    def step_num(self) -> np.ndarray:
        """Step number of each step execution, in (rank, start) order."""
        return self.steps.get()[0]

    @property
    def step_start(self) -> np.ndarray:
        return self.steps.get()[1]

    @property
    def step_end(self) -> np.ndarray:
        """End, cut at the attempt end / as_of."""
        return self.steps.get()[2]

    @property
    def step_state(self) -> np.ndarray:
        """Index in STATES."""
        return self.steps.get()[3]

    @property
    def step_job(self) -> np.ndarray | None:
        """Many jobs: the job code of each step execution (index in ``jobs.names``)."""
        return None if self.jobs is None else self.steps.get()[4]


@dataclass
class _Scan:
    """What the scan of the step rows found (``_core.scan_steps``, csrc/core/life_checks.hpp)."""

    bad: int
    after: int
    max_start: int
    max_end: int
    ordered: bool
    neg_rank: int
    step_min: int
    rank_seen: np.ndarray
    rank_over: int
    att_lo: int
    att_count: np.ndarray
    att_max_step: np.ndarray
    att_max_end: np.ndarray
    att_out: int


_NO_BITS = np.zeros(0, np.uint8)


def _scan(st: _Steps, x: _Rows, cut: int) -> _Scan:
    """Scan the step rows; attempt figures are kept per attempt id of the attempt
    rows of `x` when those ids span a small range (else the caller uses numpy)."""
    ids = x.attempt[(x.rec == _ATT) & (x.attempt != NULL)]
    att_lo, att_n = (int(ids.min()), int(ids.max()) - int(ids.min()) + 1) if ids.size else (0, 0)
    if att_n > 1 << 24:
        att_lo, att_n = 0, 0
    if st.end_src is not None:  # the first scan fills end_ns's nulls on the way
        raw, bits, off = st.end_src
        out = _core.scan_steps(st.start, raw, st.rank, st.attempt, st.step, st.tokens, cut, att_lo, att_n, bits, off,
                               st.end)
        st.end_src = None
    else:
        out = _core.scan_steps(st.start, st.end, st.rank, st.attempt, st.step, st.tokens, cut, att_lo, att_n,
                               _NO_BITS, 0, _NO_BITS.view(np.int64))
    (bad, after, max_start, max_end, ordered, neg_rank, step_min, rank_seen, rank_over,
     att_count, att_max_step, att_max_end, att_out) = out
    return _Scan(int(bad), int(after), int(max_start), int(max_end), bool(ordered), int(neg_rank),
                 int(step_min), rank_seen, int(rank_over), att_lo, att_count, att_max_step, att_max_end,
                 int(att_out))


def _as_of(x: _Rows, sc: _Scan, as_of) -> int:
    if as_of is not None:
        return int(as_of)
    # NULL is the least int64: a column's max is its latest time, or NULL when it has none
    latest = max([int(c.max()) for c in (x.start, x.end, x.block_end, x.durable) if c.size]
                 + [sc.max_start, sc.max_end])
    if latest == NULL:
        raise PauError("lifecycle: the table has no times; give records with start_ns")
    return latest


_RECORD_NAMES = list(RECORDS)
_KINDED = [r in ("phase", "attempt", "failure") for r in RECORDS]  # the records whose kind is read


def _native_layout(table: pa.Table) -> pa.Table:
    """The table with every lifecycle column in a layout the native reader reads
    (utf8 ``record``/``kind``; int64 or ``timestamp[ns]`` times; int32 or int64 ids
    within int32; int64 ``step``/``tokens``; bool ``ok``): other string and integer
    types are converted exactly, and a column that cannot be raises a
    :class:`pau.errors.SchemaError` or :class:`InvalidRowError` naming it (and the row).
    Columns already so are passed through untouched (zero-copy)."""
    schema = table.schema
    if schema.get_field_index("record") < 0:
        _column(table, "record", "lifecycle")  # raises: the column is missing
    out = table
    # the schema alone says which columns pass through: only the others are fetched
    for i, field in enumerate(schema):
        name, typ = field.name, field.type
        if name in ("record", "kind"):
            if pa.types.is_string(typ):
                continue
            values = typ.value_type if pa.types.is_dictionary(typ) else typ
            if not (pa.types.is_string(values) or pa.types.is_large_string(values)):
                fix = ("name each record: " + ", ".join(RECORDS)) if name == "record" else \
                    "give kinds as strings"
                raise SchemaError("lifecycle", name, f"has type {typ}, not string", fix)
            out = out.set_column(i, name, table.column(i).cast(pa.string()))
        elif name == "ok":
            if not pa.types.is_boolean(typ):
                raise SchemaError("lifecycle", "ok", f"has type {typ}, not bool", "give ok as true/false")
        elif name in _INT_COLUMNS:
            ids = name in ("attempt", "rank")
            native = typ == _INT64 or (ids and typ == _INT32) or (
                not ids and pa.types.is_timestamp(typ) and typ.unit == "ns")
            if native:
                if ids and typ == _INT64:
                    for chunk in table.column(i).chunks:
                        _num_array(chunk, name, 0)  # raises, naming the row, outside int32
                continue
            chunks = []
            for chunk in table.column(i).chunks:
                vals = _num_array(chunk, name, 0)  # converts exactly, or names the problem
                mask = np.asarray(chunk.is_null()) if chunk.null_count else None
                chunks.append(pa.array(vals, _INT64, mask=mask))
            out = out.set_column(i, name, pa.chunked_array(chunks, _INT64))
    return out


_INT_COLUMNS = ("attempt", "rank", "start_ns", "end_ns", "step", "block_end_ns", "durable_ns", "tokens")


def _native_rows(table: pa.Table):
    """The rows other than steps (as :func:`_read` gives them) and where the steps
    are, read by the native core in one scan and a gather per column (``csrc/core/life_rows.hpp``):
    ``(x, step count, first step row, steps)``, ``steps`` the step rows' columns
    (as :class:`_Steps` takes them) unless they are one run of rows (then read in
    place by :func:`_read_step_range`); None for a layout the native core leaves
    to the caller (never, after :func:`_native_layout`)."""
    out = _core.lifecycle_rows([b.__arrow_c_array__() for b in table.to_batches()], _RECORD_NAMES, _STEP, _KINDED)
    if out is None:
        return None
    (row, rec, attempt, rank, start, end, step, block_end, durable, ok, kinded, kinds, tokens), n_step, first, steps = out
    kind = np.full(row.size, None, dtype=object)  # read for phases, attempts and failures only
    kind[kinded] = kinds
    return _Rows(row, rec, attempt, rank, start, end, step, block_end, durable, ok, kind, tokens), n_step, first, steps


def attribute_rows(lifecycle, *, as_of=None, on_invalid: str = "raise", ranks=None,
                   threads: int | None = None) -> Attribution:
    """Validate a lifecycle table and attribute every accountable ns (see module doc).
    ``threads``: for the pass over the steps (None: all cores from
    PARALLEL_MIN_VISITS step visits on, but see BY_RANK_MAX_CORES)."""
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

    quarantine = []  # (original rows, reasons)
    x_code = _row_codes(x)
    x_bad = x_code > 0
    if as_of is not None and not NULL <= int(as_of) <= NULL_MAX:
        raise PauError(f"as_of: {int(as_of)} does not fit in int64 nanoseconds. Fix: give an instant of the run, "
                       "in int64 ns")
    cut = NULL_MAX if as_of is None else int(as_of)
    sc = _scan(st, x, cut)
    if x_bad.any() or sc.bad:
        st = _wide(st)
        s_code = (_core.step_codes(st.start, st.end, st.rank, st.attempt, st.step, st.tokens) if sc.bad
                  else np.zeros(len(st), np.int8))
        s_bad = s_code > 0
        s_idx = np.flatnonzero(s_bad)
        s_reasons = np.array(_STEP_CHECKS, dtype=object)[s_code[s_idx] - 1]
        rows_bad = np.concatenate([x.row[x_bad], st.row[s_idx]])
        why_bad = np.concatenate([_row_reasons(x_code[x_bad]), s_reasons])
        if on_invalid != "quarantine":
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
        quarantine.append((rows_bad, why_bad))
        x = x.take(np.flatnonzero(~x_bad))
        if sc.bad:
            st = st.take(np.flatnonzero(~s_bad))
        sc = _scan(st, x, cut)
    jobs = None
    if job_col is not None:  # each job its own lineage: attempts and ranks as (job, id) pairs
        x, st, jobs = _by_job(x, st, *job_col)
        sc = _scan(st, x, cut)
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
    while True:
        strict: list = []
        res = _attribute(x, st, sc, as_of, ranks, strict, threads, jobs)
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
    if res.span_ns > NULL_MAX:  # accountable time lies in [its earliest start, as_of]: below, no rank overflows
        _check_spans(res)
    res.quarantine = _quarantine_table(table, quarantine) if on_invalid == "quarantine" else None
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


_STEP_ERRORS = {
    1: ("rank", "step on rank {r}, which is not a member of attempt {a}",
        "give the attempt a row for that rank, or fix the step's rank"),
    2: ("start_ns", "step starts at {s}, outside attempt {a} on rank {r} [{ms}, {me}]",
        "records must start inside their attempt on that rank"),
    3: ("start_ns", "step {k} overlaps step {k2} (row {row2}) on rank {r}",
        "steps of one rank must not overlap"),
    4: ("step", "step {k} does not come after step {k2} (row {row2}) in attempt {a} on rank {r}",
        "record each optimizer step once per rank and attempt, numbered upwards"),
}


def _lut(keys: np.ndarray, lo: int, size: int) -> np.ndarray:
    """A lookup table: ``lut[keys[j] - lo] = j``, -1 elsewhere."""
    lut = np.full(size, -1, np.int64)
    lut[keys - lo] = np.arange(keys.size)
    return lut


#: Step visits from which the pass runs on several threads (one range of ranks each).
PARALLEL_MIN_VISITS = 50_000
#: Rows of rank -1 in start order (one row for every member rank) are visited by the
#: pass itself, rank by rank, on one thread; over several threads the pass needs the
#: list of visits in rank order first (expand_ordered). With the default threads and
#: at most this many cores, one thread by rank is used at any size: on 2 cores it was
#: 20-29 % faster than two threads with the list, from 100k to 3M step visits.
BY_RANK_MAX_CORES = 2


def _rank_ranges(parts: int, ns: int, b_rank, o_rank, visit_rank) -> list:
    """Up to `parts` ranges of ranks with about as many step visits each, as
    ``((b_lo, b_hi), (o_lo, o_hi), (v_lo, v_hi))`` slices of the background pieces,
    the overlay pieces and the visits (each sorted by rank)."""
    if parts <= 1 or ns < parts:
        return [((0, b_rank.size), (0, o_rank.size), (0, ns))]

    def first_visit(r: int) -> int:  # the first visit of a rank >= r
        return lower_bound(ns, visit_rank, r)

    cut_ranks = sorted({visit_rank((k * ns) // parts) for k in range(1, parts)})
    cuts = [(0, 0, 0)]
    for r in cut_ranks:
        c = (int(np.searchsorted(b_rank, r)), int(np.searchsorted(o_rank, r)), first_visit(r))
        if c[2] > cuts[-1][2]:
            cuts.append(c)
    cuts.append((b_rank.size, o_rank.size, ns))
    return [tuple(zip(lo, hi)) for lo, hi in zip(cuts[:-1], cuts[1:])]


def _pool_empty(n: int, dtype) -> np.ndarray:
    """An uninitialized array in Arrow's memory pool. The pool keeps the pages of
    freed buffers, so the next attribution writes into memory that is already
    mapped instead of faulting in hundreds of MB of fresh pages. Small arrays come
    from numpy (cheaper to allocate)."""
    if n < 1 << 16:
        return np.empty(n, dtype)
    return np.frombuffer(pa.allocate_buffer(n * np.dtype(dtype).itemsize), dtype)


def _bits(values: np.ndarray, valid: np.ndarray, typ) -> pa.Array:
    """An Arrow array over `values` (zero-copy) with the kernel-written validity bitmap;
    its null count is left unknown, so Arrow counts the bitmap's bits when asked (the
    pass does not count them: a counter per column costs it about 6 %)."""
    return pa.Array.from_buffers(typ, values.size, [pa.py_buffer(valid), pa.py_buffer(values)], null_count=-1)


@dataclass
class _Setup:
    """What the pass needs besides the step rows (from :func:`_setup`)."""

    A: _Attempts
    C: _Checkpoints
    L: Lineage
    members: _Members
    rank_values: np.ndarray    # sorted distinct ranks
    dense: bool                # ranks pass through the kernels as positions in rank_values
    r_lo: int                  # the pass's ranks: rank_lut[rank - r_lo]
    rank_lut: np.ndarray
    rank_src: np.ndarray       # the steps' ranks as the pass reads them
    att_lo: int                # the steps' dense attempts: att_lut[att_src - att_lo]
    att_lut: np.ndarray
    att_src: np.ndarray
    m_start: np.ndarray        # membership interval of (dense attempt a, dense rank r) at m_row[a] + r
    m_end: np.ndarray
    m_row: np.ndarray
    b_cols: tuple              # painted background: rank, start, end, state, attempt, step
    o_cols: tuple              # painted overlay, the same columns
    acc_min: int | None        # the earliest accountable start
    lineage_ckpts: np.ndarray  # steps of durable checkpoints on the lineage, sorted
    job_att: np.ndarray        # job j's dense attempts: job_att[j] .. job_att[j + 1]
    wall: int                  # as_of minus the earliest accountable start, summed over jobs
    lineage_ckpt_jobs: np.ndarray | None = None  # many jobs: the job of each of lineage_ckpts
    job_acc_min: np.ndarray | None = None  # many jobs: each job's earliest accountable start (NULL_MAX: none)


_PHASE_STATE = np.array([S.get(k, -1) for k in PHASE_KINDS], np.int8)
_ST_CODES = np.array([S[k] for k in ("recovery.outage", "unattributed", "recovery.restore", "initialization",
                                     "recovery.reinit", "checkpoint.lost", "checkpoint", "checkpoint.unused")],
                     np.int8)
# Causes past the failure kinds, in the set-up's order (life_setup.hpp: kCauseFailed ...).
_CAUSE_TAIL = ("failed", "preempted", "ended", "superseded")
# The set-up's relational errors (life_setup.hpp: its status), with the rows they name.
E_NO_ATTEMPT, E_STEP_NO_ATTEMPT, E_NO_RANK, E_OUTSIDE, E_RESTORE, E_FAILURE_OUTSIDE, E_ATTEMPT_OVERLAP = range(1, 8)
# The set-up reads records, attempt kinds and phase kinds by these positions.
assert RECORDS.index("attempt") == _ATT == 1 and RECORDS.index("failure") == _FAIL == 6
assert ATTEMPT_KINDS.index("running") == 3 and PHASE_KINDS[:3] == INIT_KINDS


def _step_attempts(st: _Steps, sc: _Scan):
    """The steps' attempt ids, sorted and distinct, and per id the rows, the highest
    step and the latest end among rows that ended: the scan's figures, or (ids
    spread too wide for its table) the same from the step columns."""
    if sc.att_count.size and not sc.att_out:
        j = np.flatnonzero(sc.att_count)
        return sc.att_lo + j, sc.att_count[j], sc.att_max_step[j], sc.att_max_end[j]
    att = np.asarray(st.attempt, np.int64)
    ids, inv = np.unique(att, return_inverse=True)
    count = np.bincount(inv, minlength=ids.size).astype(np.int64)
    ended = st.end != NULL
    max_step = np.full(ids.size, NULL, np.int64)
    max_end = np.full(ids.size, NULL, np.int64)
    np.maximum.at(max_step, inv[ended], st.step[ended])
    np.maximum.at(max_end, inv[ended], st.end[ended])
    return ids, count, max_step, max_end


def _setup(x: _Rows, st: _Steps, sc: _Scan, as_of: int, ranks, strict: list, jobs: _Jobs | None = None
           ) -> _Setup | None:
    """What the pass needs besides the step rows: the native set-up
    (``_core.lifecycle_setup``: attempts, membership, checkpoints, the painted layers)
    and the lineage rule (`_core.lineage`); None after appending to `strict`
    the relational problems they found (rows that contradict others)."""
    # kinds as codes: attempt rows index ATTEMPT_KINDS, phases PHASE_KINDS, failures
    # their sorted names (a failure without a kind is "unknown")
    need = np.flatnonzero((x.rec == _PHASE) | (x.rec == _ATT) | (x.rec == _FAIL))
    kinds = x.kind[need].tolist()
    recs = x.rec[need].tolist()
    fail_names = sorted({k if k is not None else "unknown" for k, r in zip(kinds, recs) if r == _FAIL})
    fail_code = {k: i for i, k in enumerate(fail_names)}
    kcode = np.full(len(x), -1, np.int64)
    kcode[need] = [(_ATT_CODE.get(k, -1) if r == _ATT else _PHASE_CODE[k] if r == _PHASE
                    else fail_code[k if k is not None else "unknown"]) for k, r in zip(kinds, recs)]
    step_ranks = _present(np.asarray(st.rank, np.int64)) if sc.rank_over else np.flatnonzero(sc.rank_seen)
    known = step_ranks.tolist() + (sorted({int(r) for r in ranks}) if ranks is not None else [])
    sa_ids, sa_count, sa_max_step, sa_max_end = _step_attempts(st, sc)
    by_job = (_NO_JOBS,) * 3 if jobs is None or not len(x) else (jobs.row_job[x.row], jobs.rank_job, jobs.att_job)
    P = _core.lifecycle_setup(x.rec, x.attempt, x.rank, x.start, x.end, x.step, x.block_end, x.durable, x.ok, kcode,
                              len(fail_names), as_of, known, sa_ids.tolist(), sa_count, sa_max_step, sa_max_end,
                              st.attempt, st.end, st.step, _PHASE_STATE, _ST_CODES, *by_job)
    status = int(P["status"])
    if status:
        codes = P["error_codes"] if by_job[0].size else np.full(max(P["errors"][0].size, 1), status)
        for code in sorted(set(codes.tolist())):
            if code == E_STEP_NO_ATTEMPT:  # a step's attempt is unknown; the first such step
                j = int(np.flatnonzero(~np.isin(np.asarray(st.attempt, np.int64), x.attempt[x.rec == _ATT]))[0])
                err = (np.array([j], np.int64),) + (np.empty(0, np.int64),) * 3
            else:
                err = tuple(e[codes == code] for e in P["errors"]) if by_job[0].size else P["errors"]
            strict.extend(_relational_errors(code, err, x, st, jobs))
        return None
    ids, a_start, a_end, running, cause_code, completed = P["attempts"]
    c_att, c_step, c_dur, c_ok = P["checkpoints"]
    nA = ids.size
    # the lineage rule, from the ok restores in start order and the checkpoints
    r_row, r_att, r_step, r_start = P["restores"]
    job_att, job_acc_min = P["jobs"]
    base, head, on, on_lineage, bad = _core.lineage(r_row, r_att, r_step, r_start, c_att, c_step, c_dur,
                                                    P["has_durable"], P["has_steps"], P["done_step"], completed, NULL,
                                                    job_att if by_job[0].size else _NO_JOBS)
    if bad.size:
        strict.extend(_relational_errors(E_RESTORE, (bad,) + (np.empty(0, np.int64),) * 3, x, st, jobs))
        return None
    names_ = fail_names + list(_CAUSE_TAIL)
    cause = np.array([names_[c] if c >= 0 else None for c in cause_code.tolist()], dtype=object)
    f_att, f_time, f_kind = P["failures"]
    failures = [(a, t, fail_names[k]) for a, t, k in zip(f_att.tolist(), f_time.tolist(), f_kind.tolist())]
    A = _Attempts(ids, a_start, a_end, running, cause, failures, completed)
    C = _Checkpoints(c_att, c_step, c_dur, c_ok)
    L = Lineage(base, head, on, nA - 1)
    # a save on the lineage is the checkpoint state (the set-up gave lost or unused)
    ov_rank, ov_start, ov_end, ov_state, ov_att, ov_step = P["overlay"]
    g = P["overlay_ckpt"]
    if g.size and on_lineage.any():
        ov_state[(g >= 0) & on_lineage[np.maximum(g, 0)]] = S["checkpoint"]
    ckpt_jobs = None
    if jobs is None:
        lineage_ckpts = np.sort(c_step[on_lineage])
    else:  # by job, then step
        c_job = jobs.att_job[ids[c_att[on_lineage]]] if nA else np.empty(0, np.int64)
        order = np.lexsort((c_step[on_lineage], c_job))
        lineage_ckpts, ckpt_jobs = c_step[on_lineage][order], c_job[order]
    rank_values, r_lo, rank_lut, m_start, m_end, dense = P["ranks"]
    # The steps' dense attempts (in A's start order) and ranks, by lookup tables the
    # pass indexes directly, or (ids or ranks spread wide) positions found here.
    if sc.att_count.size and not sc.att_out:
        att_lo, att_lut, att_src = sc.att_lo, _lut(ids, sc.att_lo, sc.att_count.size), st.attempt
    else:
        att_lo, att_lut, att_src = 0, np.arange(nA, dtype=np.int64), A.dense(np.asarray(st.attempt, np.int64))
    rank_src = _dense_lut(st.rank, rank_values) if dense else st.rank
    acc_min = int(P["acc_min"])
    # the wall time of the failures' MTBF: from each job's first accountable instant to as_of
    wall = sum(as_of - int(t) for t in job_acc_min.tolist() if t != NULL_MAX)
    return _Setup(A, C, L, _Members(*P["members"]), rank_values, bool(dense), int(r_lo), rank_lut, rank_src, att_lo,
                  att_lut, att_src, m_start, m_end, P["m_row"], P["background"],
                  (ov_rank, ov_start, ov_end, ov_state, ov_att, ov_step), None if acc_min == NULL_MAX else acc_min,
                  lineage_ckpts, job_att, wall, ckpt_jobs, job_acc_min if jobs is not None else None)


def _relational_errors(code: int, err: tuple, x: _Rows, st: _Steps, jobs: _Jobs | None = None) -> list:
    """The relational problems the set-up reported (``code``: its status; ``err``: its
    rows, ranks, member starts and ends), as ``(row, column, reason, fix)``; with many
    jobs the ids are the table's and the reason names the job."""
    if jobs is not None:  # internal ids back to the table's, the job named first
        out = _relational_errors(code, _tabled(code, err, jobs), _tabled_rows(x, jobs), _tabled_steps(st, jobs))
        return [(row, col, f"{jobs.name(jobs.row_job[row])}: {why}", fix) for row, col, why, fix in out]
    e_row, e_rank, e_ms, e_me = (a.tolist() for a in err)
    if code == E_STEP_NO_ATTEMPT:
        j = e_row[0]
        return [(int(st.row[j]), "attempt", f"attempt {st.attempt[j]} has no attempt record",
                 "add an 'attempt' row (start_ns, end_ns, kind) for it")]
    out = []
    for k, i in enumerate(e_row):
        row, att, stp = int(x.row[i]), int(x.attempt[i]), int(x.step[i])
        if code == E_NO_ATTEMPT:
            out.append((row, "attempt", f"attempt {att} has no attempt record",
                        "add an 'attempt' row (start_ns, end_ns, kind) for it"))
        elif code == E_NO_RANK:
            out.append((row, "rank", "attempt with rank -1 but no rank is known",
                        "give accountable records, per-rank attempt rows, or events"))
        elif code == E_OUTSIDE:
            why = (f"rank {e_rank[k]} is not a member of attempt {att}" if e_ms[k] == NULL else
                   f"starts at {int(x.start[i])}, outside attempt {att} on rank {e_rank[k]} [{e_ms[k]}, {e_me[k]}]")
            out.append((row, "rank" if e_ms[k] == NULL else "start_ns", f"{RECORDS[int(x.rec[i])]} {why}",
                        "records must start inside their attempt on that rank"))
        elif code == E_FAILURE_OUTSIDE:
            t, a0, a1 = int(x.start[i]), e_ms[k], e_me[k]
            why = (f"at {t}, before attempt {att} started (at {a0})" if t < a0 else
                   f"at {t}, after attempt {att} ended (at {a1})")
            out.append((row, "start_ns", f"failure {why}",
                        "a failure ends its attempt: give it a time inside the attempt, or correct the "
                        "attempt's start_ns/end_ns"))
        elif code == E_ATTEMPT_OVERLAP:
            out.append((row, "start_ns", f"attempt {att} starts on rank {e_rank[k]} at {int(x.start[i])}, before "
                        f"attempt {e_ms[k]} ended there (at {e_me[k]})",
                        "attempts of one rank follow each other: correct the earlier attempt's end_ns "
                        "(a failure record ends it too) or this one's start_ns"))
        elif code == E_RESTORE:
            out.append((row, "step", f"restore of step {stp} in attempt {att}, but no ok checkpoint of step "
                        f"{stp} was durable before the restore started",
                        "add the checkpoint_save record, or mark the restore ok=false"))
        else:  # pragma: no cover - the set-up reports only the codes above
            raise AssertionError(f"lifecycle set-up: unknown status {code}")
    return out


def _tabled(code: int, err: tuple, jobs: _Jobs) -> tuple:
    """A set-up error's ranks (and, for overlapping attempts, the earlier attempt) as the table's."""
    e_row, e_rank, e_ms, e_me = (np.asarray(a, np.int64) for a in err)
    known = e_rank != NULL if code != E_STEP_NO_ATTEMPT else np.zeros(e_rank.size, bool)
    e_rank = np.where(known, jobs.rank_orig[np.where(known, e_rank, 0)], e_rank) if e_rank.size else e_rank
    if code == E_ATTEMPT_OVERLAP and e_ms.size:
        e_ms = jobs.att_orig[e_ms]
    return e_row, e_rank, e_ms, e_me


def _tabled_rows(x: _Rows, jobs: _Jobs) -> _Rows:
    att = x.attempt.copy()
    att[att != NULL] = jobs.att_orig[att[att != NULL]]
    rank = x.rank.copy()
    rank[rank >= 0] = jobs.rank_orig[rank[rank >= 0]]
    return _Rows(x.row, x.rec, att, rank, x.start, x.end, x.step, x.block_end, x.durable, x.ok, x.kind, x.tokens)


def _tabled_steps(st: _Steps, jobs: _Jobs) -> _Steps:
    att = np.asarray(st.attempt, np.int64).copy()
    att[att != NULL] = jobs.att_orig[att[att != NULL]]
    return _Steps(st.row, att, st.rank, st.start, st.end, st.step, st.tokens)


_NO_JOBS = np.empty(0, np.int64)
_ATT_CODE = {k: i for i, k in enumerate(ATTEMPT_KINDS)}
_PHASE_CODE = {k: i for i, k in enumerate(PHASE_KINDS)}
_NO_RANKS = np.empty(0, np.int64)
_NO_COPY = np.empty(0, bool)


def _attribute(x: _Rows, st: _Steps, sc: _Scan, as_of: int, ranks, strict: list, threads=1,
               jobs: _Jobs | None = None):
    """One pass of attribution; returns None after appending to `strict` when a
    relational problem (a row that contradicts others) is found. With ``jobs``, attempts
    and ranks are internal ids (see :class:`_Jobs`), mapped back in the output."""
    P = _setup(x, st, sc, as_of, ranks, strict) if jobs is None else _setup(x, st, sc, as_of, ranks, strict, jobs)
    if P is None:
        return None
    A, C, L, members, rank_values, dense = P.A, P.C, P.L, P.members, P.rank_values, P.dense
    r_lo, rank_lut, rank_src, m_start, m_end, m_row = P.r_lo, P.rank_lut, P.rank_src, P.m_start, P.m_end, P.m_row
    att_lo, att_lut, att_src = P.att_lo, P.att_lut, P.att_src
    nA, nR = A.ids.size, max(rank_values.size, 1)

    def step_att():
        return att_lut[np.asarray(att_src, np.int64) - att_lo] if len(st) else np.empty(0, np.int64)

    pend = np.zeros(nA, bool)
    lasts = P.job_att[1:][np.diff(P.job_att) > 0] - 1  # each job's last attempt
    pend[lasts] = A.running[lasts]
    # Visits of the step rows in (rank, start) order; a row of rank -1 is visited
    # once per member rank of its attempt (x_rank: the rank of each visit). When
    # every row has rank -1 and they come in start order, the pass makes the visits
    # itself, rank by rank (all_ranks), on one thread.
    def visit_order():
        if not sc.neg_rank:
            if sc.ordered:
                return np.empty(0, np.int64), _NO_RANKS, _NO_COPY  # already in (rank, start) order
            s_rd = _core.lut_map(np.asarray(rank_src, np.int64), r_lo, rank_lut)
            order, ok = _kernels.rank_order(s_rd, st.start, nR)
            return (order if ok else np.lexsort((st.start, s_rd))), _NO_RANKS, _NO_COPY
        m_ranks = _dense_lut(members.ranks, rank_values) if dense else members.ranks
        order, x_rank, x_copy, ok = _kernels.expand_ordered(
            rank_src, np.asarray(st.attempt, np.int64), st.start, members.ids, members.offsets, m_ranks,
            r_lo, rank_lut, nR, dense)
        if not ok:
            pos = np.lexsort((st.start[order], _core.lut_map(x_rank, r_lo, rank_lut)))
            order, x_rank, x_copy = order[pos], x_rank[pos], x_copy[pos]
        return order, x_rank, x_copy

    # One thread by rank, or the visit list split over threads: on BY_RANK_MAX_CORES
    # cores or fewer the first is faster at any size, unless threads are asked for.
    parts = thread_count(threads, nR * len(st), PARALLEL_MIN_VISITS)
    # (not with many jobs: by rank, the pass looks every row up on every rank, and the
    # membership of an attempt on another job's rank is in no job's block)
    by_rank = (len(st) > 0 and sc.neg_rank == len(st) and sc.ordered and not dense and jobs is None
               and (parts == 1 or (threads is None and parts <= BY_RANK_MAX_CORES)))
    all_ranks, first_member = _NO_RANKS, _NO_RANKS
    if by_rank:
        order, x_rank, x_copy = np.empty(0, np.int64), _NO_RANKS, _NO_COPY
        all_ranks = rank_values
        first_member = _lowest_member(members, A.ids, rank_lut, r_lo)  # counts the tokens of its rows
    else:
        order, x_rank, x_copy = visit_order()
    # Causes as codes into a small dictionary.
    cause_names = sorted({c for c in A.cause if c is not None} | {"superseded"})
    cause_code = {c: i for i, c in enumerate(cause_names)}
    att_cause = np.array([cause_code[c if c is not None else "superseded"] for c in A.cause], np.int16)
    s_states = np.array([S["productive"], S["pending"], S["rolled_back"]], np.int8)

    # Distinct productive step numbers, counted by the kernel in a byte map over the
    # range lineage steps can take (base, head] (a numpy pass when that is huge).
    # Jobs apart: job j's steps from its lowest lineage step lo_j at offset off_j, so
    # step k of attempt a is at k - pres_off[a], pres_off[a] = lo_j - off_j.
    heads = np.flatnonzero(L.on & (L.head != NULL))
    pres_off, pres = np.zeros(nA, np.int64), np.zeros(0, np.uint8)
    if heads.size and len(st):
        lows = np.where(L.base[heads] == NULL, sc.step_min, L.base[heads] + 1)
        a_job = np.repeat(np.arange(P.job_att.size - 1), np.diff(P.job_att))
        h_job = a_job[heads]
        lo_j = np.full(P.job_att.size - 1, NULL_MAX, np.int64)
        hi_j = np.full(P.job_att.size - 1, NULL, np.int64)
        np.minimum.at(lo_j, h_job, lows)
        np.maximum.at(hi_j, h_job, L.head[heads])
        has = lo_j <= hi_j
        if (hi_j[has] - lo_j[has] < 1 << 26).all():
            size = np.where(has, hi_j - lo_j + 1, 0)
            if int(size.sum()) < 1 << 26:
                off_j = np.cumsum(size) - size
                pres_off = np.where(has, lo_j - off_j, 0)[a_job]
                pres = np.zeros(int(size.sum()), np.uint8)
        count_pres = pres.size > 0
    else:
        count_pres = True  # nothing can be productive

    # The pass, over ranges of ranks on several threads when there are many step
    # visits: background, overlay and visits are all sorted by rank, so a range is
    # one slice of each (see _rank_ranges); each writes its own output columns.
    b_cols, o_cols = P.b_cols, P.o_cols
    step_cols = (rank_src, att_src, st.start, st.end, st.step, st.tokens)
    ns = nR * len(st) if by_rank else order.size if order.size else len(st)

    def visit_rank(j: int) -> int:
        if order.size:
            return int(x_rank[j]) if x_rank.size else int(rank_src[order[j]])
        return int(rank_src[j])

    ranges = _rank_ranges(1 if by_rank else thread_count(threads, ns, PARALLEL_MIN_VISITS), ns, b_cols[0], o_cols[0],
                          visit_rank)
    att_ids32 = (A.ids if jobs is None else jobs.att_orig[A.ids]).astype(np.int32)

    def run(part):
        (b_lo, b_hi), (o_lo, o_hi), (v_lo, v_hi) = part
        cap = 2 * ((b_hi - b_lo) + (v_hi - v_lo) + (o_hi - o_lo)) + 1
        out = tuple(_pool_empty(cap, t) for t in (np.int32, np.int64, np.int64, np.int8, np.int32, np.int64,
                                                  np.int16))
        valid = tuple(_pool_empty((cap + 7) // 8, np.uint8) for _ in range(3))  # the kernel writes whole bytes
        marks = pres if len(ranges) == 1 else np.zeros_like(pres)
        if order.size:  # visits index the rows: the rows stay whole
            visits, rows, shift = (order[v_lo:v_hi], x_rank[v_lo:v_hi], x_copy[v_lo:v_hi]), step_cols, 0
        else:  # the rows are the visits
            visits, rows, shift = (order, x_rank, x_copy), tuple(c[v_lo:v_hi] for c in step_cols), v_lo
        res = _kernels.attribute_pass(
            *(c[b_lo:b_hi] for c in b_cols), visits[0], *rows, visits[1], visits[2],
            r_lo, rank_lut, att_lo, att_lut, m_start, m_end, m_row,
            L.base, L.head, L.on, pend, att_cause, s_states, pres_off, marks,
            *(c[o_lo:o_hi] for c in o_cols), att_ids32, NULL, all_ranks, first_member, *out, *valid,
            np.empty(b_hi - b_lo, np.int32), np.zeros(b_hi - b_lo, np.int64))
        return res, out, valid, marks, shift

    results = run_parts(run, [(part,) for part in ranges])
    for (m, _, ur, acc_ns, tokens, n_pres, code, i, i2, bad_rank), _, _, _, shift in results:
        if not code:
            continue
        # the first error in (rank, start) order: ranges come in rank order
        i, i2 = int(i) + shift, int(i2) + shift if i2 >= 0 else -1
        a_i = int(att_lut[int(att_src[i]) - att_lo])
        if dense:
            bad_rank = rank_values[bad_rank]
        r_i = int(_dense_lut(np.array([bad_rank], np.int64), rank_values)[0])
        col, why, fix = _STEP_ERRORS[int(code)]
        why = why.format(
            r=int(bad_rank if jobs is None else jobs.rank_orig[bad_rank]),
            a=int(A.ids[a_i] if jobs is None else jobs.att_orig[A.ids[a_i]]), s=st.start[i],
            ms=m_start[m_row[a_i] + r_i], me=m_end[m_row[a_i] + r_i], k=st.step[i],
            k2=st.step[i2] if i2 >= 0 else None, row2=st.row[i2] if i2 >= 0 else None)
        if jobs is not None:
            why = f"{jobs.name(jobs.att_job[A.ids[a_i]])}: {why}"
        strict.append((st.row[i], col, why, fix))
        return None
    pieces = []
    for (m, *_), out, _, _, _ in results:
        pr, ps, pe, state = (c[:m] for c in out[:4])
        pieces.append((rank_values[pr].astype(np.int32) if dense else pr, ps, pe, state))

    def intervals():
        causes = names(tuple(cause_names))
        batches = []
        for (pr, ps, pe, state), ((m, *_), out, valid, _, _) in zip(pieces, results):
            att_id, step, cause = (c[:m] for c in out[4:])
            batches.append(pa.RecordBatch.from_arrays([
                pa.Array.from_buffers(_INT32, m, [None, pa.py_buffer(pr)]),
                pa.Array.from_buffers(_INT64, m, [None, pa.py_buffer(ps)]),
                pa.Array.from_buffers(_INT64, m, [None, pa.py_buffer(pe)]),
                pa.DictionaryArray.from_arrays(pa.Array.from_buffers(_INT8, m, [None, pa.py_buffer(state)]),
                                               names(STATES), safe=False),
                _bits(att_id, valid[0], _INT32),
                _bits(step, valid[1], _INT64),
                pa.DictionaryArray.from_arrays(_bits(cause, valid[2], _INT16), causes, safe=False),
            ], names=_INTERVAL_COLUMNS))
        out = pa.Table.from_batches(batches)
        return out if jobs is None else jobs.with_job(out)

    ur = np.concatenate([r[0][2] for r in results])
    acc_ns = np.concatenate([r[0][3] for r in results])
    if dense:
        ur = rank_values[ur]
    tokens = sum(int(r[0][4]) for r in results)
    if len(results) == 1:
        n_pres = int(results[0][0][5])
    else:  # a step is preserved once, whichever ranges it was productive in
        n_pres = int(np.count_nonzero(np.logical_or.reduce([r[3] for r in results]))) if pres.size else 0

    def labels():
        """The step executions as :func:`_kernels.steps_pass` labels them."""
        sa = step_att()
        walk, w_rank, w_copy = visit_order() if by_rank else (order, x_rank, x_copy)
        if w_rank.size:  # the visits as rows of their own, in order
            visits = np.empty(0, np.int64)
            s_rd = _core.lut_map(w_rank, r_lo, rank_lut)
            cols = (sa[walk], st.start[walk], st.end[walk], st.step[walk], np.where(w_copy, 0, st.tokens[walk]))
        else:
            visits = walk
            s_rd = _core.lut_map(np.asarray(rank_src, np.int64), r_lo, rank_lut) if len(st) else sa
            cols = (sa, st.start, st.end, st.step, st.tokens)
        res = _kernels.steps_pass(visits, s_rd, *cols, m_start, m_end, m_row, L.base, L.head, L.on, pend, NULL,
                                  rank_values.astype(np.int32), att_cause, s_states)
        if jobs is not None:  # and the job of each
            return res[5], res[1], res[2], res[3], jobs.rank_job[res[0]]
        return res[5], res[1], res[2], res[3]

    steps = _StepLabels(labels)
    if count_pres:
        preserved_steps = int(n_pres)
    else:
        s_step, _, _, s_state, *s_job = steps.get()
        prod = s_state == S["productive"]
        if s_job:  # distinct per job
            preserved_steps = int(np.unique(np.stack([s_job[0][prod], s_step[prod]]), axis=1).shape[1])
        else:
            preserved_steps = int(_present(s_step[prod] - s_step[prod].min()).size) if prod.any() else 0

    fail_ids = {f[0] for f in A.failures}
    failures_all = list(A.failures) + [
        (int(A.ids[a]), int(A.end[a]), A.cause[a]) for a in range(nA)
        if not A.running[a] and A.cause[a] in ("failed", "preempted") and int(A.ids[a]) not in fail_ids]
    accountable = pa.Table.from_arrays([pa.array(np.asarray(ur, np.int32)), pa.array(np.asarray(acc_ns, np.int64))],
                                       names=["rank", "accountable_ns"])
    if jobs is not None:  # the table's ids, the job beside each rank
        orig = jobs.att_orig
        failures_all = [(int(orig[a]), t, k) for a, t, k in failures_all]
        A = _Attempts(orig[A.ids], A.start, A.end, A.running, A.cause,
                      [(int(orig[a]), t, k) for a, t, k in A.failures], A.completed)
        accountable = jobs.with_job(accountable)
    wall = P.wall if jobs is None or P.job_acc_min is None else _jobs_wall(P.job_acc_min, as_of, pieces, jobs,
                                                                            A.running, P.A.ids)
    return Attribution(intervals, as_of, A, L, C, steps, P.lineage_ckpts,
                       failures_all, wall, preserved_steps, int(tokens), accountable, pieces=pieces, jobs=jobs,
                       lineage_ckpt_jobs=P.lineage_ckpt_jobs,
                       attempt_jobs=None if jobs is None else jobs.att_job[P.A.ids], acc_ranks=np.asarray(ur),
                       span_ns=int(as_of) - int(P.acc_min) if P.acc_min is not None else 0)


def _jobs_wall(acc_min: np.ndarray, as_of: int, pieces: list, jobs: _Jobs, running: np.ndarray,
               att_ids: np.ndarray) -> int:
    """The MTBF's wall time of many jobs: per job, from its first accountable instant to
    ``as_of``, or to its last accountable instant when it has ended (no running attempt):
    a job that ended long before ``as_of`` adds its own span, not the time up to it."""
    n = acc_min.size
    last = np.full(n, -NULL_MAX - 1, np.int64)
    for pr, _, pe, _ in pieces:
        if pe.size:
            np.maximum.at(last, jobs.rank_job[np.asarray(pr, np.int64)], pe)
    live = np.zeros(n, bool)
    if att_ids.size:
        live[jobs.att_job[att_ids[np.asarray(running, bool)]]] = True
    wall = 0
    for j in range(n):
        first = int(acc_min[j])
        if first == NULL_MAX:
            continue
        end = as_of if live[j] else min(as_of, max(int(last[j]), first))
        wall += end - first
    return wall


def _lowest_member(members: _Members, ids: np.ndarray, rank_lut: np.ndarray, r_lo: int) -> np.ndarray:
    """Per attempt id, the dense rank (``rank_lut[rank - r_lo]``) of its lowest member
    rank; -1 for an attempt without members."""
    out = np.full(ids.size, -1, np.int64)
    p = np.searchsorted(members.ids, ids)
    hit = p < members.ids.size
    hit[hit] = members.ids[p[hit]] == ids[hit]
    out[hit] = rank_lut[members.ranks[members.offsets[p[hit]]] - r_lo]
    return out


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

