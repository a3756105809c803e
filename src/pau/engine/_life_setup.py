"""Lifecycle attribution's set-up: reading the table, the checks and the scan of its
rows, and the set-up of the pass (attempts, membership, checkpoints, the painted
layers, the lineage rule) with the relational errors of the input it names.

The checks, the scan of the step columns and the set-up run in the native core
(``csrc/core/life_checks.hpp``, ``life_setup.hpp``); :mod:`pau.engine._lifecycle`
runs the pass over the steps on what :func:`_setup` gives, and states the rules
pau applies where DESIGN is silent.
"""

from __future__ import annotations

from dataclasses import dataclass
import numpy as np
import pyarrow as pa
import pyarrow.compute  # pa.compute

from pau import _core
from pau.engine._kernels import dense_lut as _dense_lut, present as _present
from pau.engine._input import _column, as_table, rank_column, time_column
from pau.engine.vocab import STATES
from pau.errors import InvalidLifecycleError, PauError, SchemaError

RECORDS = ("accountable", "attempt", "phase", "step", "checkpoint_save", "restore", "failure")
PHASE_KINDS = ("init", "compile", "data_warmup", "data_wait", "eval", "custom")
ATTEMPT_KINDS = ("completed", "failed", "preempted", "running")
INIT_KINDS = ("init", "compile", "data_warmup")

S = {name: i for i, name in enumerate(STATES)}
NULL = np.iinfo(np.int64).min
NULL_MAX = np.iinfo(np.int64).max
_ACC, _ATT, _PHASE, _STEP, _CKPT, _REST, _FAIL = range(7)


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
    code = _core.row_checks(x.rec, x.start, x.end, x.block_end, x.durable, x.rank, x.attempt, x.step, acc=_ACC,
                            needs_step=_NEEDS_STEP)
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


def _pool_empty(n: int, dtype) -> np.ndarray:
    """An uninitialized array in Arrow's memory pool. The pool keeps the pages of
    freed buffers, so the next attribution writes into memory that is already
    mapped instead of faulting in hundreds of MB of fresh pages. Small arrays come
    from numpy (cheaper to allocate)."""
    if n < 1 << 16:
        return np.empty(n, dtype)
    return np.frombuffer(pa.allocate_buffer(n * np.dtype(dtype).itemsize), dtype)


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
        out = _core.scan_steps(st.start, raw, st.rank, st.attempt, st.step, st.tokens, cut=cut, att_lo=att_lo,
                               att_n=att_n, end_bits=bits, end_off=off, end_out=st.end)
        st.end_src = None
    else:
        out = _core.scan_steps(st.start, st.end, st.rank, st.attempt, st.step, st.tokens, cut=cut, att_lo=att_lo,
                               att_n=att_n, end_bits=_NO_BITS, end_off=0, end_out=_NO_BITS.view(np.int64))
    return _Scan(out.bad, out.after, out.max_start, out.max_end, out.ordered, out.neg_rank, out.step_min,
                 out.rank_seen, out.rank_over, att_lo, out.att_count, out.att_max_step, out.att_max_end, out.att_out)


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
    r, s = out.rows, out.steps
    kind = np.full(r.row.size, None, dtype=object)  # read for phases, attempts and failures only
    kind[r.kinded] = out.kinds
    steps = None if s is None else (s.row, s.attempt, s.rank, s.start, s.end, s.step, s.tokens)
    return (_Rows(r.row, r.rec, r.attempt, r.rank, r.start, r.end, r.step, r.block_end, r.durable, r.ok, kind,
                  r.tokens), out.n_step, out.first, steps)


def _lut(keys: np.ndarray, lo: int, size: int) -> np.ndarray:
    """A lookup table: ``lut[keys[j] - lo] = j``, -1 elsewhere."""
    lut = np.full(size, -1, np.int64)
    lut[keys - lo] = np.arange(keys.size)
    return lut


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
    P = _core.lifecycle_setup(x.rec, x.attempt, x.rank, x.start, x.end, x.step, x.block_end, x.durable, ok=x.ok,
                              kcode=kcode, n_fail_kinds=len(fail_names), as_of=as_of, known_ranks=known,
                              step_ids=sa_ids.tolist(), sa_count=sa_count, sa_max_step=sa_max_step,
                              sa_max_end=sa_max_end, s_att=st.attempt, s_end=st.end, s_step=st.step,
                              phase_state=_PHASE_STATE, st_codes=_ST_CODES, row_job=by_job[0], rank_job=by_job[1],
                              att_job=by_job[2])
    status = P.status
    if status:
        errors = (P.e_row, P.e_rank, P.e_ms, P.e_me)
        codes = P.error_codes if by_job[0].size else np.full(max(P.e_row.size, 1), status)
        for code in sorted(set(codes.tolist())):
            if code == E_STEP_NO_ATTEMPT:  # a step's attempt is unknown; the first such step
                j = int(np.flatnonzero(~np.isin(np.asarray(st.attempt, np.int64), x.attempt[x.rec == _ATT]))[0])
                err = (np.array([j], np.int64),) + (np.empty(0, np.int64),) * 3
            else:
                err = tuple(e[codes == code] for e in errors) if by_job[0].size else errors
            strict.extend(_relational_errors(code, err, x, st, jobs))
        return None
    ids, a_start, a_end, running, cause_code, completed = P.a_ids, P.a_start, P.a_end, P.a_running, P.a_cause, \
        P.a_completed
    c_att, c_step, c_dur, c_ok = P.c_att, P.c_step, P.c_dur, P.c_ok
    nA = ids.size
    # the lineage rule, from the ok restores in start order and the checkpoints
    job_att, job_acc_min = P.job_att, P.job_acc_min
    lin = _core.lineage(P.r_row, P.r_att, P.r_step, P.r_start, c_att=c_att, c_step=c_step, c_dur=c_dur,
                        has_durable=P.has_durable, has_steps=P.has_steps, done_step=P.done_step, completed=completed,
                        null=NULL, job_att=job_att if by_job[0].size else _NO_JOBS)
    base, head, on, on_lineage, bad = lin.base, lin.head, lin.on, lin.on_lineage, lin.bad
    if bad.size:
        strict.extend(_relational_errors(E_RESTORE, (bad,) + (np.empty(0, np.int64),) * 3, x, st, jobs))
        return None
    names_ = fail_names + list(_CAUSE_TAIL)
    cause = np.array([names_[c] if c >= 0 else None for c in cause_code.tolist()], dtype=object)
    f_att, f_time, f_kind = P.f_att, P.f_time, P.f_kind
    failures = [(a, t, fail_names[k]) for a, t, k in zip(f_att.tolist(), f_time.tolist(), f_kind.tolist())]
    A = _Attempts(ids, a_start, a_end, running, cause, failures, completed)
    C = _Checkpoints(c_att, c_step, c_dur, c_ok)
    L = Lineage(base, head, on, nA - 1)
    # a save on the lineage is the checkpoint state (the set-up gave lost or unused)
    ov = P.overlay
    ov_rank, ov_start, ov_end, ov_state, ov_att, ov_step = ov.rank, ov.start, ov.end, ov.state, ov.att, ov.step
    g = P.o_ckpt
    if g.size and on_lineage.any():
        ov_state[(g >= 0) & on_lineage[np.maximum(g, 0)]] = S["checkpoint"]
    ckpt_jobs = None
    if jobs is None:
        lineage_ckpts = np.sort(c_step[on_lineage])
    else:  # by job, then step
        c_job = jobs.att_job[ids[c_att[on_lineage]]] if nA else np.empty(0, np.int64)
        order = np.lexsort((c_step[on_lineage], c_job))
        lineage_ckpts, ckpt_jobs = c_step[on_lineage][order], c_job[order]
    rank_values, r_lo, rank_lut, m_start, m_end, dense = P.rank_values, P.r_lo, P.rank_lut, P.m_start, P.m_end, \
        P.dense
    # The steps' dense attempts (in A's start order) and ranks, by lookup tables the
    # pass indexes directly, or (ids or ranks spread wide) positions found here.
    if sc.att_count.size and not sc.att_out:
        att_lo, att_lut, att_src = sc.att_lo, _lut(ids, sc.att_lo, sc.att_count.size), st.attempt
    else:
        att_lo, att_lut, att_src = 0, np.arange(nA, dtype=np.int64), A.dense(np.asarray(st.attempt, np.int64))
    rank_src = _dense_lut(st.rank, rank_values) if dense else st.rank
    acc_min = P.acc_min
    # the wall time of the failures' MTBF: from each job's first accountable instant to as_of
    wall = sum(as_of - int(t) for t in job_acc_min.tolist() if t != NULL_MAX)
    bg = P.background
    return _Setup(A, C, L, _Members(P.m_ids, P.m_off, P.m_ranks), rank_values, dense, r_lo, rank_lut, rank_src, att_lo,
                  att_lut, att_src, m_start, m_end, P.m_row, (bg.rank, bg.start, bg.end, bg.state, bg.att, bg.step),
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
