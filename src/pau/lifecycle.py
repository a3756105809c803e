"""Lifecycle attribution: which state every accountable nanosecond of a rank was in.

The lifecycle table (DESIGN §2.2) says what the job was doing: attempts, phases,
steps, checkpoint saves, restores, failures. This module validates it, applies the
lineage rule to decide which step executions survived, and paints the states with
their precedence into disjoint intervals per rank. The interval work runs in the
Numba kernels of :mod:`pau._kernels`; the per-attempt logic (tens of attempts) is
plain Python.

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

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _kernels
from ._input import _column, as_table, rank_column, time_column
from .errors import InvalidRowError, PauError, SchemaError

RECORDS = ("accountable", "attempt", "phase", "step", "checkpoint_save", "restore", "failure")
PHASE_KINDS = ("init", "compile", "data_warmup", "data_wait", "eval", "custom")
ATTEMPT_KINDS = ("completed", "failed", "preempted", "running")
INIT_KINDS = ("init", "compile", "data_warmup")

from ._vocab import STATES  # noqa: E402

S = {name: i for i, name in enumerate(STATES)}
NULL = np.iinfo(np.int64).min
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
        return _Rows(*(getattr(self, f)[idx] for f in self.__dataclass_fields__))

    def __len__(self) -> int:
        return self.row.size


def _int_col(t: pa.Table, name: str, n: int, reasons: dict) -> np.ndarray:
    if name not in t.column_names:
        return np.full(n, NULL, np.int64)
    col = _column(t, name, "lifecycle")
    if pa.types.is_timestamp(col.type) or pa.types.is_integer(col.type):
        valid = ~np.asarray(col.is_null()) if col.null_count else np.ones(n, bool)
        filled = col.fill_null(0) if col.null_count else col
        conv = (time_column(filled, name, "lifecycle") if name.endswith("_ns")
                else rank_column(filled, "lifecycle", name) if name in ("attempt", "rank")
                else time_column(filled, name, "lifecycle"))
        out = np.asarray(conv, np.int64).copy()
        out[~valid] = NULL
        return out
    raise SchemaError("lifecycle", name, f"has type {col.type}, not an integer",
                      "give times as int64 nanoseconds and ids as integers")


def _read(lifecycle) -> _Rows:
    t = as_table(lifecycle, "lifecycle")
    n = t.num_rows
    for required in ("record", "start_ns"):
        _column(t, required, "lifecycle")
    rec_col = _column(t, "record", "lifecycle")
    if not (pa.types.is_string(rec_col.type) or pa.types.is_large_string(rec_col.type)
            or pa.types.is_dictionary(rec_col.type)):
        raise SchemaError("lifecycle", "record", f"has type {rec_col.type}, not string",
                          "name each record: " + ", ".join(RECORDS))
    rec_names = np.asarray(rec_col.cast(pa.string()).to_numpy(zero_copy_only=False), dtype=object)
    lookup = {r: i for i, r in enumerate(RECORDS)}
    rec = np.array([lookup.get(x, -1) if x is not None else -1 for x in rec_names], np.int8)
    cols = {name: _int_col(t, name, n, {}) for name in
            ("attempt", "rank", "start_ns", "end_ns", "step", "block_end_ns", "durable_ns", "tokens")}
    if "ok" in t.column_names:
        ok_col = _column(t, "ok", "lifecycle")
        if not pa.types.is_boolean(ok_col.type):
            raise SchemaError("lifecycle", "ok", f"has type {ok_col.type}, not bool", "give ok as true/false")
        ok = np.asarray(ok_col.fill_null(True).to_numpy(zero_copy_only=False), bool)
    else:
        ok = np.ones(n, bool)
    if "kind" in t.column_names:
        kcol = _column(t, "kind", "lifecycle")
        kind = np.asarray(kcol.cast(pa.string()).to_numpy(zero_copy_only=False), dtype=object)
    else:
        kind = np.full(n, None, dtype=object)
    rank = cols["rank"].copy()
    rank[rank == NULL] = -1
    tokens = cols["tokens"].copy()
    tokens[tokens == NULL] = 0
    rows = _Rows(np.arange(n, dtype=np.int64), rec, cols["attempt"], rank, cols["start_ns"],
                 cols["end_ns"], cols["step"], cols["block_end_ns"], cols["durable_ns"], ok, kind, tokens)
    rows._names = rec_names  # for messages
    return rows


_ROW_FIX = {
    "unknown record": "use one of " + ", ".join(RECORDS),
    "null start_ns": "every record needs start_ns",
    "negative time": "times are nanoseconds since an epoch and must be >= 0",
    "end_ns before start_ns": "correct the times; zero-length records are allowed",
    "block_end_ns before start_ns": "a save blocks from start_ns to block_end_ns >= start_ns",
    "durable_ns before start_ns": "a checkpoint cannot be durable before its save started",
    "rank below -1": "ranks are >= 0, or -1 for every rank of the attempt",
    "missing attempt": "give the attempt this record belongs to",
    "missing step": "give the step (the k-th optimizer update) this record is about",
    "accountable rank must be >= 0": "give one accountable row per rank",
    "unknown phase kind": "use one of " + ", ".join(PHASE_KINDS),
    "unknown attempt kind": "use one of " + ", ".join(ATTEMPT_KINDS),
}
_REASON_COLUMN = {
    "unknown record": "record", "null start_ns": "start_ns", "negative time": "start_ns",
    "end_ns before start_ns": "end_ns", "block_end_ns before start_ns": "block_end_ns",
    "durable_ns before start_ns": "durable_ns", "rank below -1": "rank",
    "missing attempt": "attempt", "missing step": "step", "accountable rank must be >= 0": "rank",
    "unknown phase kind": "kind", "unknown attempt kind": "kind",
}


def _row_reasons(x: _Rows) -> np.ndarray:
    """A reason string per row (None = usable) for problems visible in one row."""
    n = len(x)
    out = np.full(n, None, dtype=object)

    def mark(mask, reason):
        sel = mask & np.equal(out, None)
        out[sel] = reason

    mark(x.rec < 0, "unknown record")
    mark(x.start == NULL, "null start_ns")
    neg = np.zeros(n, bool)
    for c in (x.start, x.end, x.block_end, x.durable):
        neg |= (c != NULL) & (c < 0)
    mark(neg, "negative time")
    mark((x.end != NULL) & (x.end < x.start), "end_ns before start_ns")
    mark((x.block_end != NULL) & (x.block_end < x.start), "block_end_ns before start_ns")
    mark((x.durable != NULL) & (x.durable < x.start), "durable_ns before start_ns")
    mark(x.rank < -1, "rank below -1")
    mark((x.rec != _ACC) & (x.rec >= 0) & (x.attempt == NULL), "missing attempt")
    mark(np.isin(x.rec, (_STEP, _CKPT, _REST)) & (x.step == NULL), "missing step")
    mark((x.rec == _ACC) & (x.rank < 0), "accountable rank must be >= 0")
    is_phase = x.rec == _PHASE
    if is_phase.any():
        mark(is_phase & ~np.isin(x.kind, PHASE_KINDS), "unknown phase kind")
    is_att = x.rec == _ATT
    if is_att.any():
        bad_kind = ~np.isin(x.kind, ATTEMPT_KINDS) & ~np.equal(x.kind, None)
        mark(is_att & bad_kind, "unknown attempt kind")
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


def _attempts(x: _Rows, as_of: int, strict: list) -> _Attempts:
    att = x.take(np.flatnonzero(x.rec == _ATT))
    ids = np.unique(att.attempt)
    ref = np.unique(x.attempt[(x.rec != _ACC) & (x.attempt != NULL)])
    missing = np.setdiff1d(ref, ids)
    if missing.size:
        i = int(np.flatnonzero(x.attempt == missing[0])[0])
        strict.append((x.row[i], "attempt", f"attempt {missing[0]} has no attempt record",
                       "add an 'attempt' row (start_ns, end_ns, kind) for it"))
    start = np.array([att.start[att.attempt == a].min() for a in ids], np.int64)
    ends = []
    kinds = []
    for a in ids:
        sel = att.attempt == a
        e = att.end[sel]
        ends.append(NULL if (e == NULL).any() else int(e.max()))
        k = [v for v in att.kind[sel] if v is not None]
        kinds.append(k[0] if k else None)
    order = np.lexsort((ids, start))
    ids, start = ids[order], start[order]
    ends = np.array(ends, np.int64)[order]
    kinds = np.array(kinds, dtype=object)[order]

    fail = x.take(np.flatnonzero((x.rec == _FAIL) & (x.start <= as_of)))
    failures = sorted({(int(a), int(t), k if k is not None else "unknown")
                       for a, t, k in zip(fail.attempt, fail.start, fail.kind)}, key=lambda f: (f[1], f[0]))
    first_fail = {}
    for a, t, k in failures:
        first_fail.setdefault(a, (t, k))

    n = ids.size
    end = np.empty(n, np.int64)
    running = np.zeros(n, bool)
    cause = np.full(n, None, dtype=object)
    for i in range(n):
        a = int(ids[i])
        e = int(ends[i]) if ends[i] != NULL and ends[i] <= as_of else None
        if a in first_fail:
            ft, fk = first_fail[a]
            e = ft if e is None else min(e, ft)
            cause[i] = fk
        elif e is not None:
            k = kinds[i] or "completed"
            if k == "running":
                k = "ended"
            cause[i] = k if k != "completed" else None
        if e is None and i + 1 < n:
            e = min(int(start[i + 1]), as_of)  # superseded by the next attempt
            cause[i] = cause[i] or "superseded"
        if e is None:
            e = as_of
            running[i] = True
        end[i] = max(min(e, as_of), start[i])
    completed = np.array([(not running[i]) and cause[i] is None for i in range(n)], bool)
    return _Attempts(ids, start, end, running, cause, failures, completed)


@dataclass
class _Checkpoints:
    attempt: np.ndarray   # dense attempt index
    step: np.ndarray
    durable: np.ndarray   # NULL if never (as of as_of) or not ok
    ok: np.ndarray


def _checkpoints(x: _Rows, A: _Attempts, as_of: int) -> _Checkpoints:
    ck = x.take(np.flatnonzero(x.rec == _CKPT))
    if len(ck) == 0:
        e = np.empty(0, np.int64)
        return _Checkpoints(e, e, e, np.empty(0, bool))
    da = A.dense(ck.attempt)
    key = np.stack([da, ck.step])
    uniq, inv = np.unique(key, axis=1, return_inverse=True)
    inv = inv.ravel()
    m = uniq.shape[1]
    dur = np.where(ck.durable == NULL, np.iinfo(np.int64).max, ck.durable)
    durable = np.full(m, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(durable, inv, dur)
    ok = np.ones(m, bool)
    np.logical_and.at(ok, inv, ck.ok)
    good = ok & (durable <= as_of)
    durable = np.where(good, durable, NULL)
    return _Checkpoints(uniq[0], uniq[1], durable, ok)


@dataclass
class Lineage:
    """The chain of surviving work: per attempt (dense index) the steps (base, head]."""

    base: np.ndarray      # int64; NULL = from the beginning
    head: np.ndarray      # int64; NULL = nothing survives
    on: np.ndarray        # bool: attempt is on the chain
    last: int             # dense index of the last attempt


def _lineage(x: _Rows, A: _Attempts, C: _Checkpoints, as_of: int, strict: list) -> Lineage:
    n = A.ids.size
    base = np.full(n, NULL, np.int64)
    head = np.full(n, NULL, np.int64)
    on = np.zeros(n, bool)
    if n == 0:
        return Lineage(base, head, on, -1)
    # The restore each attempt actually used: its last ok restore, and the checkpoint
    # it read (the latest durable save of that step before the restore began).
    rest = x.take(np.flatnonzero((x.rec == _REST) & (x.start <= as_of)))
    used = {}  # dense attempt -> (step, writer dense attempt)
    if len(rest):
        ra = A.dense(rest.attempt)
        for j in np.argsort(rest.start, kind="stable"):
            if not rest.ok[j]:
                continue
            a, stp, t0 = int(ra[j]), int(rest.step[j]), int(rest.start[j])
            cand = np.flatnonzero((C.step == stp) & (C.durable != NULL) & (C.durable <= t0) & (C.attempt != a))
            if cand.size == 0:
                strict.append((rest.row[j], "step",
                               f"restore of step {stp} in attempt {A.ids[a]}, but no ok checkpoint of "
                               f"step {stp} was durable before the restore started",
                               "add the checkpoint_save record, or mark the restore ok=false"))
                continue
            w = cand[np.argmax(C.durable[cand])]
            used[a] = (stp, int(C.attempt[w]))
    steps = x.take(np.flatnonzero(x.rec == _STEP))
    sa = A.dense(steps.attempt)
    done = (steps.end != NULL) & (steps.end <= as_of)

    cur = n - 1
    h = None
    seen = set()
    while cur >= 0 and cur not in seen:
        seen.add(cur)
        b = used[cur][0] if cur in used else NULL
        if h is None:  # the last attempt
            if A.completed[cur]:
                mine = done & (sa == cur)
                h = int(steps.step[mine].max()) if mine.any() else b
            else:
                mine = (C.attempt == cur) & (C.durable != NULL)
                h = int(C.step[mine].max()) if mine.any() else b
                if b != NULL and h != NULL and h < b:
                    h = b
        on[cur] = True
        base[cur] = b
        head[cur] = h
        if cur not in used:
            break
        h = used[cur][0]
        cur = used[cur][1]
    return Lineage(base, head, on, n - 1)


# ---------------------------------------------------------------------------
# membership and expansion of rank -1


def _expand(rows: _Rows, members_of: dict) -> _Rows:
    """Rows with rank -1 repeated for every member rank of their attempt."""
    allr = rows.rank < 0
    if not allr.any():
        return rows
    idx_all = np.flatnonzero(allr)
    counts = np.array([members_of.get(int(a), np.empty(0, np.int64)).size for a in rows.attempt[idx_all]])
    rep = np.repeat(idx_all, counts)
    ranks = np.concatenate([members_of.get(int(a), np.empty(0, np.int64)) for a in rows.attempt[idx_all]]
                           or [np.empty(0, np.int64)])
    keep = np.flatnonzero(~allr)
    out = rows.take(np.concatenate([keep, rep]))
    out.rank = np.concatenate([rows.rank[keep], ranks]).astype(np.int64)
    return out


# ---------------------------------------------------------------------------
# attribution


@dataclass
class Attribution:
    """Everything :func:`attribute` knows: the state intervals and what led to them."""

    intervals: pa.Table
    as_of: int
    attempts: _Attempts
    lineage: Lineage
    checkpoints: _Checkpoints
    step_rows: _Rows          # expanded step executions (sorted by rank, start)
    step_rows_end: np.ndarray  # their ends, cut at the attempt end / as_of
    step_state: np.ndarray
    lineage_ckpt_steps: np.ndarray
    failures_all: list        # failure records, plus attempts that failed without one
    wall_ns: int              # as_of minus the earliest accountable start
    preserved_steps: int
    preserved_tokens: int
    accountable: pa.Table     # rank, accountable_ns
    quarantine: pa.Table | None = None


def _as_of(x: _Rows, as_of) -> int:
    if as_of is not None:
        return int(as_of)
    vals = [c[c != NULL] for c in (x.start, x.end, x.block_end, x.durable)]
    vals = [v for v in vals if v.size]
    if not vals:
        raise PauError("lifecycle: the table has no times; give records with start_ns")
    return int(max(v.max() for v in vals))


def attribute_rows(lifecycle, *, as_of=None, on_invalid: str = "raise", ranks=None) -> Attribution:
    """Validate a lifecycle table and attribute every accountable ns (see module doc)."""
    table = as_table(lifecycle, "lifecycle")
    x = _read(table)
    reasons = _row_reasons(x)
    bad = ~np.equal(reasons, None)
    quarantine = []  # (original rows, reasons)
    if bad.any():
        if on_invalid != "quarantine":
            i = int(np.flatnonzero(bad)[0])
            r = reasons[i]
            detail = r
            if r == "unknown record":
                detail = f"unknown record {x._names[i]!r}"
            elif r in ("unknown phase kind", "unknown attempt kind"):
                detail = f"{r} {x.kind[i]!r}"
            raise _err(_REASON_COLUMN[r], x.row[i], detail, _ROW_FIX[r], int(bad.sum()))
        quarantine.append((x.row[bad], reasons[bad]))
        x = x.take(np.flatnonzero(~bad))
    as_of = _as_of(x, as_of)
    x = x.take(np.flatnonzero(x.start <= as_of))
    while True:
        strict: list = []
        res = _attribute(x, as_of, ranks, strict, on_invalid)
        if not strict:
            break
        if on_invalid != "quarantine":
            row, col, reason, fix = min(strict, key=lambda p: p[0])
            raise _err(col, row, reason, fix, len(strict))
        rows = np.array(sorted({int(p[0]) for p in strict}), np.int64)
        why = {int(p[0]): p[2] for p in reversed(strict)}
        quarantine.append((rows, np.array([why[r] for r in rows], dtype=object)))
        x = x.take(np.flatnonzero(~np.isin(x.row, rows)))
    res.quarantine = _quarantine_table(table, quarantine) if on_invalid == "quarantine" else None
    return res


def _attribute(x: _Rows, as_of: int, ranks, strict: list, on_invalid: str):
    """One attempt at attribution; returns None after appending to `strict` when a
    relational problem (a row that contradicts others) is found."""
    A = _attempts(x, as_of, strict)
    if strict:
        return None

    # Ranks and accountable time.
    acc = x.take(np.flatnonzero(x.rec == _ACC))
    known = set(np.unique(x.rank[x.rank >= 0]).tolist())
    if ranks is not None:
        known |= set(int(r) for r in ranks)
    att_rows = x.take(np.flatnonzero(x.rec == _ATT))
    members_of: dict = {}
    mem_rank, mem_att = [], []
    for i in range(len(att_rows)):
        a, r = int(att_rows.attempt[i]), int(att_rows.rank[i])
        if r >= 0:
            rs = [r]
        elif len(acc):
            t0 = att_rows.start[i]
            acc_end = np.where(acc.end == NULL, as_of, acc.end)
            rs = np.unique(acc.rank[(acc.start <= t0) & (acc_end > t0)]).tolist()
        else:
            rs = sorted(known)
        if not rs and r < 0 and not known and not len(acc):
            raise _err("rank", att_rows.row[i], "attempt with rank -1 but no rank is known",
                       "give accountable records, per-rank attempt rows, or events")
        for rr in rs:
            mem_rank.append(rr)
            mem_att.append(a)
    mem_rank = np.array(mem_rank, np.int64)
    mem_att = np.array(mem_att, np.int64)
    if mem_rank.size:
        pairs = np.unique(np.stack([mem_att, mem_rank]), axis=1)
        mem_att, mem_rank = pairs[0], pairs[1]
    for a in np.unique(mem_att):
        members_of[int(a)] = mem_rank[mem_att == a]
    mem_d = A.dense(mem_att)
    mem_start = A.start[mem_d] if mem_d.size else np.empty(0, np.int64)
    mem_end = A.end[mem_d] if mem_d.size else np.empty(0, np.int64)
    # Per-rank attempt rows carry their own interval (elastic membership), still
    # ended by the attempt's failure.
    mem_start = mem_start.copy()
    mem_end = mem_end.copy()
    for i in np.flatnonzero(att_rows.rank >= 0):
        sel = (mem_att == att_rows.attempt[i]) & (mem_rank == att_rows.rank[i])
        mem_start[sel] = att_rows.start[i]
        e = att_rows.end[i]
        if e != NULL and e <= as_of:
            mem_end[sel] = np.minimum(mem_end[sel], e)
    mem_end = np.maximum(mem_end, mem_start)

    if len(acc):
        acc_rank = acc.rank
        acc_start = acc.start
        acc_end = np.minimum(np.where(acc.end == NULL, as_of, acc.end), as_of)
    else:
        ur = np.unique(mem_rank)
        acc_rank = ur
        acc_start = np.array([mem_start[mem_rank == r].min() for r in ur], np.int64)
        acc_end = np.array([mem_end[mem_rank == r].max() for r in ur], np.int64)
    acc_end = np.maximum(acc_end, acc_start)

    # Every other record, expanded to ranks and checked against its attempt.
    rec_all = x.take(np.flatnonzero(np.isin(x.rec, (_PHASE, _STEP, _CKPT, _REST))))
    rec_all = _expand(rec_all, members_of)
    d = A.dense(rec_all.attempt)
    # the member interval of (attempt, rank)
    key_m = mem_att * (1 << 32) + mem_rank
    key_r = rec_all.attempt * (1 << 32) + rec_all.rank
    order_m = np.argsort(key_m)
    pos = np.searchsorted(key_m, key_r, sorter=order_m) if key_m.size else np.zeros(key_r.size, np.int64)
    pos = np.minimum(pos, max(key_m.size - 1, 0))
    found = (key_m.size > 0) & (key_m[order_m[pos]] == key_r) if key_m.size else np.zeros(key_r.size, bool)
    mpos = order_m[pos] if key_m.size else pos
    ms = np.where(found, mem_start[mpos] if key_m.size else 0, 0)
    me = np.where(found, mem_end[mpos] if key_m.size else 0, 0)
    not_member = ~found
    outside = found & ((rec_all.start < ms) | (rec_all.start > me))
    for mask, why in ((not_member, "rank {r} is not a member of attempt {a}"),
                      (outside, "starts at {s}, outside attempt {a} on rank {r} [{ms}, {me})")):
        for j in np.flatnonzero(mask)[:1]:
            strict.append((rec_all.row[j], "start_ns" if mask is outside else "rank",
                           f"{RECORDS[rec_all.rec[j]]} " + why.format(
                               r=rec_all.rank[j], a=rec_all.attempt[j], s=rec_all.start[j],
                               ms=ms[j], me=me[j]),
                           "records must start inside their attempt on that rank"))
        if mask.any() and on_invalid == "quarantine":
            for j in np.flatnonzero(mask)[1:]:
                strict.append((rec_all.row[j], "start_ns", "record outside its attempt",
                               "records must start inside their attempt on that rank"))
    if strict:
        return None
    keep = found & ~outside
    rec_all = rec_all.take(np.flatnonzero(keep))
    ms, me, d = ms[keep], me[keep], d[keep]

    # Ends: missing or late ends are cut at the attempt end.
    def cut(end):
        e = np.where(end == NULL, me, end)
        return np.maximum(np.minimum(e, me), rec_all.start)

    end = cut(rec_all.end)
    block = cut(rec_all.block_end)

    C = _checkpoints(x, A, as_of)
    L = _lineage(x, A, C, as_of, strict)
    if strict:
        return None

    # --- steps layer
    is_step = rec_all.rec == _STEP
    si = np.flatnonzero(is_step)
    st = rec_all.take(si)
    s_end = end[si]
    s_att = d[si]
    in_flight = (st.end == NULL) | (st.end > s_end)
    s_order = np.lexsort((st.start, st.rank))
    st, s_end, s_att, in_flight = st.take(s_order), s_end[s_order], s_att[s_order], in_flight[s_order]
    if st.rank.size > 1:
        same = st.rank[1:] == st.rank[:-1]
        overlap = same & (st.start[1:] < s_end[:-1])
        if overlap.any():
            j = int(np.flatnonzero(overlap)[0]) + 1
            strict.append((st.row[j], "start_ns",
                           f"step {st.step[j]} overlaps step {st.step[j - 1]} on rank {st.rank[j]} "
                           f"(row {st.row[j - 1]})", "steps of one rank must not overlap"))
            for k in np.flatnonzero(overlap)[1:] + 1:
                strict.append((st.row[k], "start_ns", "overlapping step", "steps of one rank must not overlap"))
        dup = same & (st.step[1:] == st.step[:-1]) & (s_att[1:] == s_att[:-1])
        if dup.any() and not overlap.any():
            j = int(np.flatnonzero(dup)[0]) + 1
            strict.append((st.row[j], "step", f"step {st.step[j]} appears twice in attempt "
                           f"{st.attempt[j]} on rank {st.rank[j]}", "record each step once per rank and attempt"))
    if strict:
        return None

    base = L.base[s_att]
    head = L.head[s_att]
    in_range = (L.on[s_att] & (head != NULL) & ((base == NULL) | (st.step > base)) & (st.step <= head)
                & ~in_flight)
    pending = (~in_range) & (s_att == L.last) & A.running[s_att] if s_att.size else np.zeros(0, bool)
    s_state = np.where(in_range, S["productive"], np.where(pending, S["pending"], S["rolled_back"]))
    s_cause = np.where(s_state == S["rolled_back"], A.cause[s_att] if s_att.size else None, None)
    s_cause = np.array([c if (c is not None or s != S["rolled_back"]) else "superseded"
                        for c, s in zip(s_cause, s_state)], dtype=object)

    # --- background layer: accountable (outage) < attempts (unattributed) < init/restore
    first = 0
    ph = rec_all.rec == _PHASE
    is_init = ph & np.isin(rec_all.kind, INIT_KINDS)
    is_rest = rec_all.rec == _REST
    bi = np.flatnonzero(is_init | is_rest)
    b_rank = np.concatenate([acc_rank, mem_rank, rec_all.rank[bi]]).astype(np.int32)
    b_start = np.concatenate([acc_start, mem_start, rec_all.start[bi]])
    b_end = np.concatenate([acc_end, mem_end, end[bi]])
    b_level = np.concatenate([np.zeros(acc_rank.size, np.int8), np.ones(mem_rank.size, np.int8),
                              np.full(bi.size, 2, np.int8)])
    init_state = np.where(d[bi] == first, S["initialization"], S["recovery.reinit"])
    b_state = np.concatenate([np.full(acc_rank.size, S["recovery.outage"]),
                              np.full(mem_rank.size, S["unattributed"]),
                              np.where(is_rest[bi], S["recovery.restore"], init_state)])
    b_attempt = np.concatenate([np.full(acc_rank.size, NULL), mem_att, rec_all.attempt[bi]])
    b_step = np.concatenate([np.full(acc_rank.size + mem_rank.size, NULL),
                             np.where(is_rest[bi], rec_all.step[bi], NULL)])
    B = _kernels.paint(b_rank, b_start, b_end, b_level, np.lexsort((b_start, b_rank)))

    # --- overlay: eval/custom/data_wait < checkpoint
    oph = np.flatnonzero(ph & ~is_init)
    oci = np.flatnonzero(rec_all.rec == _CKPT)
    ck_att, ck_step = d[oci], rec_all.step[oci]
    cidx = _ckpt_index(C, ck_att, ck_step)
    durable = C.durable[cidx] != NULL
    on_line = (L.on[ck_att] & (L.head[ck_att] != NULL) & (ck_step <= L.head[ck_att])
               & ((L.base[ck_att] == NULL) | (ck_step > L.base[ck_att])))
    ck_state = np.where(~durable, S["checkpoint.lost"], np.where(on_line, S["checkpoint"], S["checkpoint.unused"]))
    o_rank = np.concatenate([rec_all.rank[oph], rec_all.rank[oci]]).astype(np.int32)
    o_start = np.concatenate([rec_all.start[oph], rec_all.start[oci]])
    o_end = np.concatenate([end[oph], block[oci]])
    o_level = np.concatenate([np.zeros(oph.size, np.int8), np.ones(oci.size, np.int8)])
    o_state = np.concatenate([np.array([S[k] for k in rec_all.kind[oph]], np.int64).reshape(-1), ck_state])
    o_attempt = np.concatenate([rec_all.attempt[oph], rec_all.attempt[oci]])
    o_step = np.concatenate([np.full(oph.size, NULL), ck_step])
    O = _kernels.paint(o_rank, o_start, o_end, o_level, np.lexsort((o_start, o_rank)))

    pr, ps, pe, pl, pw = _kernels.layer(B[0], B[1], B[2], st.rank.astype(np.int32), st.start, s_end,
                                        O[0], O[1], O[2])
    # labels of each piece
    state = np.empty(pr.size, np.int64)
    attempt = np.empty(pr.size, np.int64)
    step = np.empty(pr.size, np.int64)
    cause = np.full(pr.size, None, dtype=object)
    for lay, (rows_of, st_arr, at_arr, sp_arr, ca_arr) in enumerate((
            (B[3], b_state, b_attempt, b_step, None),
            (None, s_state, st.attempt, st.step, s_cause),
            (O[3], o_state, o_attempt, o_step, None))):
        sel = pl == lay
        src = pw[sel] if rows_of is None else rows_of[pw[sel]]
        state[sel] = st_arr[src]
        attempt[sel] = at_arr[src]
        step[sel] = sp_arr[src]
        if ca_arr is not None:
            cause[sel] = ca_arr[src]
    intervals = pa.table({
        "rank": pa.array(pr, pa.int32()),
        "start_ns": pa.array(ps, pa.int64()),
        "end_ns": pa.array(pe, pa.int64()),
        "state": pa.DictionaryArray.from_arrays(pa.array(state.astype(np.int8)), pa.array(list(STATES))),
        "attempt": pa.array(attempt, pa.int32(), mask=attempt == NULL) if attempt.size else pa.array([], pa.int32()),
        "step": pa.array(step, pa.int64(), mask=step == NULL),
        "cause": pa.array(cause, pa.string()).dictionary_encode(),
    })
    lineage_ckpts = np.sort(C.step[(C.durable != NULL) & _on_lineage(L, C.attempt, C.step)])
    fail_ids = {f[0] for f in A.failures}
    failures_all = list(A.failures) + [
        (int(A.ids[i]), int(A.end[i]), A.cause[i]) for i in range(A.ids.size)
        if not A.running[i] and A.cause[i] in ("failed", "preempted") and int(A.ids[i]) not in fail_ids]
    prod = s_state == S["productive"]
    preserved_steps = int(np.unique(st.step[prod]).size)
    step_x = x.take(np.flatnonzero(x.rec == _STEP))
    if prod.any() and len(step_x):
        pk = np.unique(s_att[prod] * (1 << 40) + st.step[prod])
        xk = A.dense(step_x.attempt) * (1 << 40) + step_x.step
        preserved_tokens = int(step_x.tokens[np.isin(xk, pk)].sum())
    else:
        preserved_tokens = 0
    acc_ns = np.zeros(0, np.int64)
    ur = np.unique(pr)
    if ur.size:
        acc_ns = np.zeros(ur.size, np.int64)
        np.add.at(acc_ns, np.searchsorted(ur, pr), pe - ps)
    accountable = pa.table({"rank": pa.array(ur, pa.int32()), "accountable_ns": pa.array(acc_ns, pa.int64())})
    wall = int(as_of - acc_start.min()) if acc_start.size else 0
    return Attribution(intervals, as_of, A, L, C, st, s_end, s_state, lineage_ckpts, failures_all, wall,
                       preserved_steps, preserved_tokens, accountable)


def _on_lineage(L: Lineage, att, step):
    if att.size == 0:
        return np.zeros(0, bool)
    return (L.on[att] & (L.head[att] != NULL) & (step <= L.head[att])
            & ((L.base[att] == NULL) | (step > L.base[att])))


def _ckpt_index(C: _Checkpoints, att, step):
    if att.size == 0:
        return np.zeros(0, np.int64)
    key_c = C.attempt * (1 << 40) + C.step
    key = att * (1 << 40) + step
    order = np.argsort(key_c)
    return order[np.searchsorted(key_c, key, sorter=order)]


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
