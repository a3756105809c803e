"""The lifecycle set-up in numpy and plain Python: the twin of what pau runs in
``pau.engine._lifecycle._setup`` (the native set-up ``csrc/core/life_setup.hpp``, then the
lineage rule ``pau._core.lineage``, in the same header).

:func:`setup` computes, from the records other than steps and the scan of the
steps, what attribution's pass needs: attempts (:func:`attempts`), membership,
checkpoints (:func:`checkpoints`), the lineage (:func:`lineage`) and the painted
background and overlay, or the relational errors of the input. It uses pau's own
data classes and the paint kernel (tested on its own against its reference), so a
test can compare the two set-ups field by field (tests/test_lifecycle_kernels.py).
"""

from __future__ import annotations

import numpy as np
import reference_lifecycle as ref

from pau.engine import _kernels
from pau.engine._lifecycle import (
    _ACC, _ATT, _CKPT, _FAIL, _PHASE, _REST, INIT_KINDS, NULL, RECORDS, S, Lineage, _Attempts, _Checkpoints,
    _dense_lut, _lut, _Members, _present, _Rows, _Scan, _Setup, _Steps,
)


def attempts(x: _Rows, as_of: int, strict: list) -> _Attempts:
    # Attempt and failure rows are few (tens): plain Python over lists.
    ai = np.flatnonzero(x.rec == _ATT)
    per: dict[int, list] = {}  # id -> [earliest start, latest end (NULL if one is open), first kind given]
    for a, s, e, k in zip(x.attempt[ai].tolist(), x.start[ai].tolist(), x.end[ai].tolist(), x.kind[ai].tolist()):
        p = per.get(a)
        if p is None:
            per[a] = [s, e, k]
        else:
            p[0] = min(p[0], s)
            p[1] = NULL if NULL in (p[1], e) else max(p[1], e)
            if p[2] is None:
                p[2] = k
    ids = np.array(sorted(per), np.int64)
    ref = np.unique(x.attempt[(x.rec != _ACC) & (x.attempt != NULL)])
    pos = np.minimum(np.searchsorted(ids, ref), max(ids.size - 1, 0))
    missing = ref[(ids[pos] != ref) if ids.size else np.ones(ref.size, bool)]
    if missing.size:
        i = int(np.flatnonzero(x.attempt == missing[0])[0])
        strict.append((x.row[i], "attempt", f"attempt {missing[0]} has no attempt record",
                       "add an 'attempt' row (start_ns, end_ns, kind) for it"))
    order = sorted(per, key=lambda a: (per[a][0], a))
    fi = np.flatnonzero((x.rec == _FAIL) & (x.start <= as_of))
    failures = sorted({(a, t, k if k is not None else "unknown")
                       for a, t, k in zip(x.attempt[fi].tolist(), x.start[fi].tolist(), x.kind[fi].tolist())},
                      key=lambda f: (f[1], f[0], f[2]))
    first_fail: dict[int, tuple[int, str]] = {}
    for a, t, k in failures:
        first_fail.setdefault(a, (t, k))

    n = len(order)
    start = [per[a][0] for a in order]
    end, running, cause = [], [], []
    for i, a in enumerate(order):
        ea, c, run = per[a][1], None, False
        e = ea if ea != NULL and ea <= as_of else None
        if a in first_fail:
            ft, c = first_fail[a]
            e = ft if e is None else min(e, ft)
        elif e is not None:
            k = per[a][2] or "completed"
            k = "ended" if k == "running" else k
            c = k if k != "completed" else None
        if e is None and i + 1 < n:
            e = min(start[i + 1], as_of)  # superseded by the next attempt
            c = c or "superseded"
        if e is None:
            e, run = as_of, True
        end.append(max(min(e, as_of), start[i]))
        running.append(run)
        cause.append(c)
    completed = np.array([not r and c is None for r, c in zip(running, cause)], bool)
    return _Attempts(np.array(order, np.int64), np.array(start, np.int64), np.array(end, np.int64),
                     np.array(running, bool), np.array(cause, dtype=object).reshape(n), failures, completed)




def checkpoints(x: _Rows, A: _Attempts, as_of: int) -> _Checkpoints:
    ci = np.flatnonzero(x.rec == _CKPT)
    if ci.size == 0:
        e = np.empty(0, np.int64)
        return _Checkpoints(e, e, e, np.empty(0, bool))
    da, step = A.dense(x.attempt[ci]), x.step[ci]
    dur = np.where(x.durable[ci] == NULL, np.iinfo(np.int64).max, x.durable[ci])
    ok_rows = x.ok[ci]
    # a shard never durable (null) makes its save count for nothing, even as of the int64
    # maximum (which is also the stand-in for null above)
    ever = x.durable[ci] != NULL
    if ((step >= 0) & (step < 1 << 40)).all():  # (attempt, step) in one int64
        key = da * (1 << 40) + step
        if (key[1:] >= key[:-1]).all():  # shards come save by save: runs, no sort
            first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
            ukey = key[first]
            durable = np.maximum.reduceat(dur, first)
            ok = np.logical_and.reduceat(ok_rows, first)
            good = ok & np.logical_and.reduceat(ever, first) & (durable <= as_of)
            return _Checkpoints(ukey >> 40, ukey & ((1 << 40) - 1), np.where(good, durable, NULL), ok)
        ukey, inv = np.unique(key, return_inverse=True)
        uniq = np.stack([ukey >> 40, ukey & ((1 << 40) - 1)])
    else:
        uniq, inv = np.unique(np.stack([da, step]), axis=1, return_inverse=True)
    inv = inv.ravel()
    m = uniq.shape[1]
    durable = np.full(m, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(durable, inv, dur)
    ok = np.ones(m, bool)
    np.logical_and.at(ok, inv, ok_rows)
    all_ever = np.ones(m, bool)
    np.logical_and.at(all_ever, inv, ever)
    good = ok & all_ever & (durable <= as_of)
    durable = np.where(good, durable, NULL)
    return _Checkpoints(uniq[0], uniq[1], durable, ok)




def lineage(x: _Rows, A: _Attempts, C: _Checkpoints, as_of: int, strict: list,
             last_done_step, has_steps=None) -> Lineage:
    """The lineage rule of DESIGN §2.2. ``last_done_step(a)`` gives the highest step
    attempt ``a`` (dense) completed (NULL if none)."""
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
        # per restore, the latest checkpoint of its step durable before it began,
        # written by another attempt (-1: none); all at once when that is small
        if len(rest) * C.step.size <= 1 << 22:
            fit = ((C.step[None, :] == rest.step[:, None]) & (C.durable[None, :] != NULL)
                   & (C.durable[None, :] <= rest.start[:, None]) & (C.attempt[None, :] != ra[:, None]))
            latest = np.where(fit, C.durable[None, :], NULL)
            best = np.where(fit.any(axis=1), np.argmax(latest, axis=1), -1) if C.step.size else \
                np.full(len(rest), -1)
        else:
            best = None
        for j in np.argsort(rest.start, kind="stable").tolist():
            if not rest.ok[j]:
                continue
            a, stp, t0 = int(ra[j]), int(rest.step[j]), int(rest.start[j])
            if best is not None:
                w = int(best[j])
            else:
                cand = np.flatnonzero((C.step == stp) & (C.durable != NULL) & (C.durable <= t0) & (C.attempt != a))
                w = int(cand[np.argmax(C.durable[cand])]) if cand.size else -1
            if w < 0:
                strict.append((rest.row[j], "step",
                               f"restore of step {stp} in attempt {A.ids[a]}, but no ok checkpoint of "
                               f"step {stp} was durable before the restore started",
                               "add the checkpoint_save record, or mark the restore ok=false"))
                continue
            used[a] = (stp, int(C.attempt[w]))
    # The chain starts at the last attempt that did something: an attempt with no
    # step, no restore and no durable checkpoint (one still initializing, or one
    # that died before it restored) neither keeps nor discards earlier work, so
    # restarting does not flip the ledger back and forth.
    cur = n - 1
    restored = set(used)  # a failed restore establishes nothing
    while (cur > 0 and has_steps is not None and not has_steps[cur] and cur not in restored
           and not ((C.attempt == cur) & (C.durable != NULL)).any()):
        cur -= 1
    h = None
    seen = set()
    while cur >= 0 and cur not in seen:
        seen.add(cur)
        b = used[cur][0] if cur in used else NULL
        if h is None:  # the last attempt
            if A.completed[cur]:
                h = last_done_step(cur)
                h = b if h == NULL else h
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




def expand(rows, members: _Members):
    """Rows with rank -1 repeated for every member rank of their attempt (the rows
    with a rank first, then the copies: ``reference_lifecycle.expand_ranks``); the
    copies carry no tokens (a row's tokens count once)."""
    if not (rows.rank < 0).any():
        return rows
    src, rank, copy = (np.array(v, dt) for v, dt in zip(
        ref.expand_ranks(rows.rank.tolist(), rows.attempt.tolist(), members.ids.tolist(), members.offsets.tolist(),
                         members.ranks.tolist()), (np.int64, np.int64, bool)))
    out = rows.take(src)
    out.rank = rank
    if copy.any():
        out.tokens = np.where(copy, 0, out.tokens)
    return out




def ckpt_index(C: _Checkpoints, att, step):
    if att.size == 0:
        return np.zeros(0, np.int64)
    key_c = C.attempt * (1 << 40) + C.step
    key = att * (1 << 40) + step
    order = np.argsort(key_c)
    return order[np.searchsorted(key_c, key, sorter=order)]




def on_lineage(L: Lineage, att, step):
    if att.size == 0:
        return np.zeros(0, bool)
    return (L.on[att] & (L.head[att] != NULL) & (step <= L.head[att])
            & ((L.base[att] == NULL) | (step > L.base[att])))




def setup(x: _Rows, st: _Steps, sc: _Scan, as_of: int, ranks, strict: list):
    """What the pass needs, by numpy and plain Python: the twin of
    ``pau.engine._lifecycle._setup`` (native set-up and lineage kernel), on any input. Returns
    None after appending to `strict` the relational problems (rows that contradict
    others) it finds."""
    A = attempts(x, as_of, strict)
    if strict:
        return None
    nA = A.ids.size
    # Step attempts: every id must have an attempt row (the scan counted rows per id).
    if sc.att_count.size:
        seen_ids = sc.att_lo + np.flatnonzero(sc.att_count)
        unknown = sc.att_out > 0 or not set(seen_ids.tolist()) <= set(A.ids.tolist())
    else:
        unknown = len(st) > 0
    if unknown and len(st):
        miss = np.flatnonzero(~np.isin(st.attempt, A.ids))
        if miss.size:
            j = int(miss[0])
            strict.append((st.row[j], "attempt", f"attempt {st.attempt[j]} has no attempt record",
                           "add an 'attempt' row (start_ns, end_ns, kind) for it"))
            return None
    # Failures (as of as_of) outside their attempt: before the earliest start of its
    # attempt rows, or after their latest end (none while one of them is open).
    span: dict = {}
    ai = np.flatnonzero(x.rec == _ATT)
    for a, s_, e_ in zip(x.attempt[ai].tolist(), x.start[ai].tolist(), x.end[ai].tolist()):
        lo, hi = span.get(a, (s_, e_))
        span[a] = (min(lo, s_), NULL if NULL in (hi, e_) else max(hi, e_))
    for i in np.flatnonzero((x.rec == _FAIL) & (x.start <= as_of)).tolist():
        t, (lo, hi) = int(x.start[i]), span[int(x.attempt[i])]
        if t < lo or (hi != NULL and t > hi):
            why = f"at {t}, before attempt {x.attempt[i]} started (at {lo})" if t < lo else \
                f"at {t}, after attempt {x.attempt[i]} ended (at {hi})"
            strict.append((x.row[i], "start_ns", f"failure {why}",
                           "a failure ends its attempt: give it a time inside the attempt, or correct the "
                           "attempt's start_ns/end_ns"))
    if strict:
        return None

    # Ranks, membership and accountable time.
    acc = x.take(np.flatnonzero(x.rec == _ACC))
    if sc.rank_over:
        step_ranks = _present(np.asarray(st.rank, np.int64))
    else:
        step_ranks = np.flatnonzero(sc.rank_seen)
    known = set(np.unique(x.rank[x.rank >= 0]).tolist()) | set(step_ranks.tolist())
    if ranks is not None:
        known |= {int(r) for r in ranks}
    att_rows = x.take(np.flatnonzero(x.rec == _ATT))
    acc_end_raw = np.where(acc.end == NULL, as_of, acc.end)
    # Membership: (dense attempt, rank) -> [start, end). Per-rank rows first (they
    # carry their own interval, still ended by the attempt's failure), then rank -1
    # rows for the ranks accountable at the attempt start.
    att_d = A.dense(att_rows.attempt)
    own = np.flatnonzero(att_rows.rank >= 0)
    own_end = np.where((att_rows.end[own] == NULL) | (att_rows.end[own] > as_of), A.end[att_d[own]],
                       np.minimum(att_rows.end[own], A.end[att_d[own]]))
    parts = [(att_d[own], att_rows.rank[own], att_rows.start[own],
              np.maximum(own_end, att_rows.start[own]), own)]
    neg = np.flatnonzero(att_rows.rank < 0)
    # an open accountable row (no end) covers every later instant, as_of included
    open_end = np.where(acc.end == NULL, np.iinfo(np.int64).max, acc.end)
    if len(acc) and neg.size and neg.size * len(acc) <= 1 << 22:
        # every rank -1 attempt row against every accountable row at once
        t0 = att_rows.start[neg]
        hit_i, hit_r = np.nonzero((acc.start[None, :] <= t0[:, None]) & (open_end[None, :] > t0[:, None]))
        hit_a = att_d[neg][hit_i]
        parts.append((hit_a, acc.rank[hit_r], A.start[hit_a], A.end[hit_a], neg[hit_i]))
        neg = neg[:0]
    for i in neg:
        a, t0 = int(att_d[i]), att_rows.start[i]
        if len(acc):
            rs = np.unique(acc.rank[(acc.start <= t0) & (open_end > t0)])
        else:
            rs = np.array(sorted(known), np.int64)
            if not rs.size:
                strict.append((att_rows.row[i], "rank", "attempt with rank -1 but no rank is known",
                               "give accountable records, per-rank attempt rows, or events"))
                return None
        parts.append((np.full(rs.size, a), rs, np.full(rs.size, A.start[a]), np.full(rs.size, A.end[a]),
                      np.full(rs.size, i)))
    mem_att, mem_rank, mem_start, mem_end, mem_src = (np.concatenate([p[k] for p in parts]).astype(np.int64)
                                                      for k in range(5))
    _, first = np.unique(mem_att * (1 << 32) + mem_rank, return_index=True)
    mem_att, mem_rank, mem_start, mem_end, mem_src = (mem_att[first], mem_rank[first], mem_start[first],
                                                      mem_end[first], mem_src[first])
    # An attempt that starts on a rank before the attempt before it there ended.
    by = sorted(range(mem_att.size), key=lambda j: (int(mem_rank[j]), int(mem_start[j])))
    for p, q in zip(by, by[1:]):
        if mem_rank[q] == mem_rank[p] and mem_start[q] < mem_end[p]:
            i = int(mem_src[q])
            strict.append((att_rows.row[i], "start_ns",
                           f"attempt {att_rows.attempt[i]} starts on rank {mem_rank[q]} at {att_rows.start[i]}, "
                           f"before attempt {A.ids[mem_att[p]]} ended there (at {mem_end[p]})",
                           "attempts of one rank follow each other: correct the earlier attempt's end_ns "
                           "(a failure record ends it too) or this one's start_ns"))
    if strict:
        return None
    members = _Members.of(A.ids[mem_att], mem_rank)

    if len(acc):
        acc_rank, acc_start = acc.rank, acc.start
        acc_end = np.minimum(acc_end_raw, as_of)
    else:
        acc_rank = np.unique(mem_rank)
        acc_start = np.array([mem_start[mem_rank == r].min() for r in acc_rank], np.int64)
        acc_end = np.array([mem_end[mem_rank == r].max() for r in acc_rank], np.int64)
    acc_end = np.maximum(acc_end, acc_start)

    rank_values = np.unique(np.concatenate([np.array(sorted(known), np.int64), acc_rank, mem_rank]))
    nR = max(rank_values.size, 1)
    m_start = np.full(nA * nR, NULL, np.int64)
    m_end = np.full(nA * nR, NULL, np.int64)
    mk = mem_att * nR + _dense_lut(mem_rank, rank_values)
    m_start[mk] = mem_start
    m_end[mk] = mem_end

    # Small records (phases, saves, restores) expanded to ranks, checked, cut.
    rec = expand(x.take(np.flatnonzero((x.rec == _PHASE) | (x.rec == _CKPT) | (x.rec == _REST))), members)
    d = A.dense(rec.attempt)
    rd = _dense_lut(rec.rank, rank_values)
    k = d * nR + np.maximum(rd, 0)
    ms = np.where(rd >= 0, m_start[k] if k.size else 0, NULL)
    me = np.where(rd >= 0, m_end[k] if k.size else 0, NULL)
    for j in np.flatnonzero((ms == NULL) | (rec.start < ms) | (rec.start > me)).tolist():
        why = (f"rank {rec.rank[j]} is not a member of attempt {rec.attempt[j]}" if ms[j] == NULL else
               f"starts at {rec.start[j]}, outside attempt {rec.attempt[j]} on rank {rec.rank[j]} "
               f"[{ms[j]}, {me[j]}]")
        strict.append((rec.row[j], "rank" if ms[j] == NULL else "start_ns", f"{RECORDS[rec.rec[j]]} {why}",
                       "records must start inside their attempt on that rank"))
    if strict:
        return None

    def cut(end):
        e = np.where((end == NULL) | (end > me), me, end)
        return np.maximum(e, rec.start)

    end = cut(rec.end)
    block = cut(rec.block_end)

    # Dense attempt (in A's start order) and rank of a step, by lookup tables the
    # kernels index directly; numpy computes them when the ids span a huge range.
    if sc.att_count.size:
        att_lo, att_lut, att_src = sc.att_lo, _lut(A.ids, sc.att_lo, sc.att_count.size), st.attempt
    else:
        att_lo, att_lut, att_src = 0, np.arange(nA, dtype=np.int64), A.dense(np.asarray(st.attempt, np.int64))
    r_lo = int(rank_values[0]) if rank_values.size else 0
    # Ranks that span a huge range run through the pass as dense ranks (then its
    # rank outputs are mapped back): a lookup table by value would not fit.
    span = int(rank_values[-1]) - r_lo + 1 if rank_values.size else 0
    dense = span >= _kernels.RANK_LUT_MAX
    if not dense:
        rank_lut, rank_src = _lut(rank_values, r_lo, span), st.rank
    else:
        r_lo, rank_lut, rank_src = 0, np.arange(nR, dtype=np.int64), _dense_lut(st.rank, rank_values)
    C = checkpoints(x, A, as_of)

    def step_att():
        return att_lut[np.asarray(att_src, np.int64) - att_lo] if len(st) else np.empty(0, np.int64)

    def last_done_step(a):
        if sc.att_count.size:
            j = int(A.ids[a]) - sc.att_lo
            if sc.att_count[j] == 0 or sc.att_max_end[j] == NULL:
                return NULL
            if sc.att_max_end[j] <= min(as_of, int(A.end[a])):
                return int(sc.att_max_step[j])  # every step of it that ended counts
        sa = step_att()
        sel = (sa == a) & (st.end != NULL) & (st.end <= as_of)
        if not sel.any():
            return NULL
        # a step done after its attempt ended does not count
        sel &= st.end <= A.end[a]
        return int(st.step[sel].max()) if sel.any() else NULL

    if sc.att_count.size:
        has_steps = sc.att_count[A.ids - sc.att_lo] > 0 if nA else np.zeros(0, bool)
    else:
        sa = step_att()
        has_steps = np.bincount(sa, minlength=nA)[:nA] > 0 if sa.size else np.zeros(nA, bool)
    L = lineage(x, A, C, as_of, strict, last_done_step, has_steps)
    if strict:
        return None
    # --- background: accountable (outage) < attempts (unattributed) < init/restore
    ph = rec.rec == _PHASE
    is_init = ph.copy()
    is_init[ph] = [k in INIT_KINDS for k in rec.kind[ph].tolist()]
    is_rest = rec.rec == _REST
    bi = np.flatnonzero(is_init | is_rest)
    b_rank = np.concatenate([acc_rank, mem_rank, rec.rank[bi]]).astype(np.int32)
    b_start = np.concatenate([acc_start, mem_start, rec.start[bi]])
    b_end = np.concatenate([acc_end, mem_end, end[bi]])
    b_level = np.concatenate([np.zeros(acc_rank.size, np.int8), np.ones(mem_rank.size, np.int8),
                              np.full(bi.size, 2, np.int8)])
    b_state = np.concatenate([np.full(acc_rank.size, S["recovery.outage"]),
                              np.full(mem_rank.size, S["unattributed"]),
                              np.where(is_rest[bi], S["recovery.restore"],
                                       np.where(d[bi] == 0, S["initialization"], S["recovery.reinit"]))])
    b_att = np.concatenate([np.full(acc_rank.size, -1), mem_att, d[bi]]).astype(np.int32)
    b_step = np.concatenate([np.full(acc_rank.size + mem_rank.size, NULL), np.where(is_rest[bi], rec.step[bi], NULL)])
    B = _kernels.paint(b_rank, b_start, b_end, b_level, np.lexsort((b_start, b_rank)))

    # --- overlay: eval/custom/data_wait < checkpoint
    oph = np.flatnonzero(ph & ~is_init)
    oci = np.flatnonzero(rec.rec == _CKPT)
    ck_att, ck_step = d[oci], rec.step[oci]
    durable = C.durable[ckpt_index(C, ck_att, ck_step)] != NULL
    on_line = on_lineage(L, ck_att, ck_step)
    ck_state = np.where(~durable, S["checkpoint.lost"], np.where(on_line, S["checkpoint"], S["checkpoint.unused"]))
    o_rank = np.concatenate([rec.rank[oph], rec.rank[oci]]).astype(np.int32)
    o_start = np.concatenate([rec.start[oph], rec.start[oci]])
    o_end = np.concatenate([end[oph], block[oci]])
    o_level = np.concatenate([np.zeros(oph.size, np.int8), np.ones(oci.size, np.int8)])
    o_state = np.concatenate([np.array([S[kd] for kd in rec.kind[oph]], np.int64).reshape(-1), ck_state])
    o_att = np.concatenate([d[oph], ck_att])
    o_step = np.concatenate([np.full(oph.size, NULL), ck_step])
    O = _kernels.paint(o_rank, o_start, o_end, o_level, np.lexsort((o_start, o_rank)))

    b_rank_in, o_rank_in = (_dense_lut(B[0], rank_values).astype(np.int32),
                            _dense_lut(O[0], rank_values).astype(np.int32)) if dense else (B[0], O[0])
    lineage_ckpts = np.sort(C.step[(C.durable != NULL) & on_lineage(L, C.attempt, C.step)])
    acc_min = int(acc_start.min()) if acc_start.size else None
    return _Setup(A, C, L, members, rank_values, dense, r_lo, rank_lut, rank_src, att_lo, att_lut, att_src,
                  m_start, m_end, np.arange(nA, dtype=np.int64) * nR,
                  (b_rank_in, B[1], B[2], b_state[B[3]].astype(np.int8), b_att[B[3]], b_step[B[3]]),
                  (o_rank_in, O[1], O[2], o_state[O[3]].astype(np.int8), o_att[O[3]].astype(np.int32),
                   o_step[O[3]]),
                  acc_min, lineage_ckpts, np.array([0, nA], np.int64), 0 if acc_min is None else as_of - acc_min)


