"""Numba kernels of lifecycle attribution: the rollback attribution. Pure functions:
arrays in, arrays out (or into arrays the caller allocated).

Time is int64 ns, intervals half-open ``[start, end)``. Inputs are validated by
:mod:`pau.engine._lifecycle` before they get here. The pass that labels every step with the
lineage and layers the states (:func:`attribute_pass`, :func:`steps_pass`) is here;
the checks, the scan of the step columns, the set-up (attempts, membership,
checkpoints, painted layers) and the lineage rule (which restore each attempt used and
which steps survive; a few rows per attempt) are native (``csrc/core/life_checks.hpp``,
``life_setup.hpp``, ``paint.hpp``), as Numba is kept for the rollback attribution's
pass over the steps and a kernel costs its compile on a cold start. Each kernel has a slow twin in
``tests/reference_lifecycle.py`` (the end-to-end replay, and per kernel), and the
set-up with the lineage one in numpy and plain Python in ``tests/reference_setup.py``
(compared field by field, errors included).

A kernel compiles on its first call with an empty cache (:mod:`pau.engine._jit`), so they
are kept few and small: no string work (errors are codes the caller names), no
slice assignment (Numba formats a shape-mismatch message for it), one return
statement, and in the one that every attribution runs (:func:`attribute_pass`) no
allocation: the caller passes the arrays it writes.
"""

from __future__ import annotations

import numpy as np

from pau import _core
from pau.engine._jit import helper, kernel

#: Ranks spread wider than this pass through attribution as dense positions (a
#: lookup table by value would not fit): the set-up's ``kRankLutMax``.
RANK_LUT_MAX = 1 << 24
#: The greatest int64 (a cursor past every rank), as a constant the kernels fold in.
_DONE = 9223372036854775807
#: An index masked with this is known to be >= 0, so Numba's wraparound of negative
#: indices (a shift, an AND and a load of the shape per access) folds away.
_POS = 0x7FFFFFFFFFFFFFFF


def paint(rank, start, end, level, order):
    """Disjoint top-level pieces of a set of labelled intervals, per rank (native:
    ``csrc/core/paint.hpp``).

    ``order`` sorts the rows by (rank, start). At each instant the interval of the
    highest ``level`` covering it wins; within a level the later start wins (ties:
    the later row). Returns ``(rank, start, end, row)`` of maximal pieces; instants
    covered by no interval give no piece.
    """
    p = _core.paint(rank, start, end, level, order)
    return p.rank, p.start, p.end, p.row


@helper
def _find(keys, v):
    """Position of ``v`` in sorted ``keys``, -1 if absent (a binary search: no
    np.searchsorted to compile)."""
    lo, hi = 0, keys.size
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    if lo < keys.size and keys[lo] == v:
        return lo
    return -1


@kernel
def rank_order(rdense, start, n_ranks):
    """A stable counting sort of rows by dense rank, and whether each rank's rows
    then come in non-decreasing start order (if not, the caller sorts fully)."""
    n = rdense.size
    count = np.zeros(n_ranks + 1, np.int64)
    for i in range(n):
        count[rdense[i] + 1] += 1
    for r in range(n_ranks):
        count[r + 1] += count[r]
    order = np.empty(n, np.int64)
    for i in range(n):
        r = rdense[i]
        order[count[r]] = i
        count[r] += 1
    ok = True
    for j in range(1, n):
        a = order[j - 1]
        b = order[j]
        if rdense[a] == rdense[b] and start[b] < start[a]:
            ok = False
            break
    return order, ok


@helper
def _cut_step(s, e, me, null):
    """A step's end cut at its attempt's end on its rank (``me``): a step still in
    flight (no end) or one past the attempt is cut there and flagged in flight;
    never before its start. Returns ``(end, in_flight)``."""
    flight = e == null or e > me
    if flight:
        e = me
    if e < s:
        e = s
    return e, flight


@kernel
def steps_pass(order, rdense, att, start, end, step, tokens, mstart, mend, m_row,
               base, head, on, pend, null, rank_values, att_cause, states):
    """Check, cut and label step executions, in (rank, start) order.

    Per row i (visited through ``order``): its member interval ``[ms, me]`` of
    (attempt, rank), at ``m_row[attempt] + rank`` of ``mstart``/``mend``, must contain
    its start; a missing or late end is cut at ``me`` (the step was in flight); steps
    of one rank must not overlap and step numbers must increase within an attempt.
    The state is productive (lineage step, done), pending (last attempt still
    running) or rolled back (charged to the cause of its attempt); ``states`` gives
    their codes.

    Returns sorted columns (rank, start, end, state, attempt, step, cause), the token
    sum of productive rows, and an error ``(code, row, other row)``: 0 none, 1 not a
    member, 2 starts outside the attempt, 3 overlaps the previous step, 4 step
    number does not increase.
    """
    n = order.size if order.size else rdense.size  # an empty order: rows already in order
    o_rank = np.empty(n, np.int32)
    o_start = np.empty(n, np.int64)
    o_end = np.empty(n, np.int64)
    o_state = np.empty(n, np.int8)
    o_att = np.empty(n, np.int32)
    o_step = np.empty(n, np.int64)
    o_cause = np.empty(n, np.int16)
    tok = 0
    prev = -1
    last_full = -1
    last_full_end = 0
    code = 0
    bad = -1
    other = -1
    for j in range(n):
        i = order[j] if order.size else j
        r = rdense[i]
        a = att[i]
        k = m_row[a] + r
        ms = mstart[k]
        me = mend[k]
        s = start[i]
        if ms == null:
            code, bad = 1, i
            break
        if s < ms or s > me:
            code, bad = 2, i
            break
        e, flight = _cut_step(s, end[i], me, null)
        st = step[i]
        # Half-open: an empty step overlaps nothing, and it does not hide the
        # previous non-empty step from the next one.
        if e > s:
            if last_full >= 0 and rdense[last_full] == r and s < last_full_end:
                code, bad, other = 3, i, last_full
                break
            last_full = i
            last_full_end = e
        if prev >= 0 and rdense[prev] == r and att[prev] == a and st <= step[prev]:
            code, bad, other = 4, i, prev
            break
        b = base[a]
        h = head[a]
        c = -1
        if on[a] and h != null and (b == null or st > b) and st <= h and not flight:
            state = states[0]
            tok += tokens[i]
        elif pend[a]:
            state = states[1]
        else:
            state = states[2]
            c = att_cause[a]
        o_rank[j] = rank_values[r]
        o_start[j] = s
        o_end[j] = e
        o_state[j] = state
        o_att[j] = a
        o_step[j] = st
        o_cause[j] = c
        prev = i
    return o_rank, o_start, o_end, o_state, o_att, o_step, o_cause, tok, code, bad, other


@kernel
def expand_ordered(rank, attempt, start, m_ids, m_off, m_ranks, rank_lo, rank_lut, n_ranks, dense):
    """The visits of step rows in rank order: a row with a rank once, a row of rank
    -1 once per member rank of its attempt (all but the first such visit a copy), sorted
    by dense rank, stably).

    Ranks map to dense ranks (below ``n_ranks``) by ``rank_lut[rank - rank_lo]``
    (``dense``: ranks are dense already). Returns ``(row, rank, copy, ok)``: the row of each visit, its
    rank (dense if ``dense``), whether it is a copy whose tokens do not count (all
    but the first visit of a row), and whether the visits of each rank then come
    in non-decreasing start order (if not, the caller sorts them).
    """
    n = rank.size
    pos = np.full(n, -1, np.int64)
    count = np.zeros(n_ranks + 1, np.int64)
    for i in range(n):
        r = np.int64(rank[i])
        if r >= 0:
            count[(r if dense else rank_lut[r - rank_lo]) + 1] += 1
        else:
            p = _find(m_ids, attempt[i])
            if p >= 0:
                pos[i] = p
                for q in range(m_off[p], m_off[p + 1]):
                    mr = m_ranks[q]
                    count[(mr if dense else rank_lut[mr - rank_lo]) + 1] += 1
    for d in range(n_ranks):
        count[d + 1] += count[d]
    total = count[n_ranks]
    row = np.empty(total, np.int64)
    out_rank = np.empty(total, np.int64)
    copy = np.zeros(total, np.bool_)
    for i in range(n):
        r = np.int64(rank[i])
        if r >= 0:
            d = r if dense else rank_lut[r - rank_lo]
            k = count[d]
            count[d] += 1
            row[k] = i
            out_rank[k] = r
        elif pos[i] >= 0:
            p = pos[i]
            for q in range(m_off[p], m_off[p + 1]):
                mr = m_ranks[q]
                d = mr if dense else rank_lut[mr - rank_lo]
                k = count[d]
                count[d] += 1
                row[k] = i
                out_rank[k] = mr
                copy[k] = q > m_off[p]
    ok = True
    for k in range(1, total):
        if out_rank[k] == out_rank[k - 1] and start[row[k]] < start[row[k - 1]]:
            ok = False
            break
    return row, out_rank, copy, ok


@kernel
def attribute_pass(b_rank, b_start, b_end, b_state, b_att, b_step,
                   order, rank, att, start, end, step, tokens, x_rank, x_copy,
                   rank_lo, rank_lut, att_lo, att_lut, mstart, mend, m_row,
                   base, head, on, pend, att_cause, states, pres_off, pres,
                   o_rank, o_start, o_end, o_state, o_att, o_step, att_ids, null, all_ranks, first_member,
                   r_rank, r_start, r_end, r_state, r_att, r_step, r_cause, v_att, v_step, v_cause, acc_rank, acc_ns):
    """Steps checked and labelled (:func:`steps_pass`) and layered in one pass, writing the output columns.

    The step rows are read where they are (``order`` visits them by rank and start;
    empty = already in order). A row of rank -1 runs on every member rank of its
    attempt: then ``order`` visits it once per rank, ``x_rank`` gives the rank of
    each visit (empty: the row's own rank) and ``x_copy`` marks the visits whose
    tokens do not count (all but one per row). With ``all_ranks`` (the rank of each
    dense rank; empty: not this way) every row has rank -1 and the rows come in start
    order: rank by rank, every row is visited on that rank when it is a member of
    the row's attempt (others are skipped), without an ``order``, and the tokens
    count on the attempt's ``first_member`` (dense rank). Their dense rank and attempt come from the lookup
    tables ``rank_lut[rank - rank_lo]`` and ``att_lut[att - att_lo]``, its membership
    interval is at ``m_row[attempt] + rank`` of ``mstart``/``mend``, and each is
    checked, cut and labelled (the rules of :func:`steps_pass`) when the layering
    reaches it, so no step array is written and read back. Background ``b`` and
    overlay ``o`` are disjoint labelled pieces sorted by (rank, start) (from :func:`paint`):
    the output covers ``b``, labelled by the top layer there (overlay > step >
    background); touching pieces of one row merge. Outputs go to the ``r_*``
    arrays (capacity ``2 * (nb + ns + no) + 1``) and the Arrow validity bitmaps
    ``v_*`` (zeroed; bit set = valid), the ranks with accountable time and their ns
    to ``acc_rank`` and ``acc_ns`` (capacity ``nb``, ``acc_ns`` zeroed). ``pres``
    (zeroed, or empty to skip) marks the productive step numbers: step ``k`` of dense
    attempt ``a`` at ``k - pres_off[a]`` (one offset per job keeps jobs apart).

    Returns ``(m, nr, acc_rank, acc_ns, tokens, preserved, code, row, other, rank)``:
    output rows, the ranks with accountable time and their ns, the token sum and the
    distinct step numbers of productive rows, and the first step error in (rank, start)
    order as in :func:`steps_pass` (then the outputs are incomplete) and the rank of the
    visit that failed. The null counts of the three nullable columns are left to Arrow,
    which counts a bitmap's bits when asked.

    One flat loop, one output piece per turn, so that the step code exists once:
    a helper called per step would pay a reference count per array argument.
    """
    nb = b_rank.size
    no = o_rank.size
    by_rank = all_ranks.size > 0
    ns = order.size if order.size else rank.size
    if by_rank:
        ns = all_ranks.size * rank.size
    n_rows = rank.size
    vd = 0  # by_rank: the dense rank and row of visit j
    vi = -1
    done = _DONE  # the cursor's rank when no step is left
    err = 0  # the first step error
    e_row = -1
    e_other = -1
    e_rank = np.int64(-1)
    # the current step (the cursor) and what its checks remember
    c_rank = done
    c_start = 0
    c_end = 0
    c_state = 0
    c_att = 0
    c_step = 0
    c_cause = -1
    p_row = -1      # the previous step
    p_rank = -1
    p_att = -1
    p_step = 0
    f_row = -1                  # the last non-empty step
    f_rank = -1
    f_end = 0
    tok = 0
    npres = 0
    nr = 0
    m = 0
    j = -1  # position of the cursor in order
    jo = 0
    ib = 0
    last_layer = -1
    last_row = -1
    last_rank = np.int64(-1)
    last_end = np.int64(0)
    ba = np.uint8(0)
    bs = np.uint8(0)
    bc = np.uint8(0)
    if nb:
        r = np.int64(b_rank[0])
        t = b_start[0]
        be = b_end[0]
        acc_rank[0] = r
        nr = 1
        if be > t:
            acc_ns[0] += be - t
    else:
        r = done
        t = done
        be = done
    c_rank = -1  # nothing loaded yet: the first turn loads step 0
    q_rv = np.int64(-2)
    q_ra = np.int64(null)
    rd = np.int64(0)
    a = np.int64(0)
    ms = null
    me = null
    q_b = null
    q_h = null
    q_on = False
    q_pend = False
    q_cause = np.int16(-1)
    q_po = np.int64(0)
    while True:
        # Move the cursor past steps before (r, t); with r = done, past all.
        while c_rank < r or (c_rank == r and c_rank != done and c_end <= t):
            j += 1
            if j >= ns:
                c_rank = done
                break
            if by_rank:
                vi += 1
                if vi == n_rows:
                    vi = 0
                    vd += 1
                i = vi & _POS
                rv = np.int64(all_ranks[vd & _POS])
            else:
                jj = j & _POS
                i = (order[jj] if order.size else j) & _POS
                rv = np.int64(x_rank[jj]) if x_rank.size else np.int64(rank[i])
            ra = np.int64(att[i])
            if rv != q_rv or ra != q_ra:  # what the step's (rank, attempt) decides, once per run
                q_rv = rv
                q_ra = ra
                rd = rank_lut[rv - rank_lo]
                a = att_lut[ra - att_lo]
                k = m_row[a] + rd
                ms = mstart[k]
                me = mend[k]
                q_po = pres_off[a] if pres.size else np.int64(0)
                q_b = base[a]
                q_h = head[a]
                q_on = on[a] and q_h != null
                q_pend = pend[a]
                q_cause = att_cause[a]
            s = start[i]
            if ms == null:
                if by_rank:
                    continue  # not a member rank of this row's attempt: no visit
                err = 1
                e_row = i
                e_rank = rv
                break
            if s < ms or s > me:
                err = 2
                e_row = i
                e_rank = rv
                break
            e, flight = _cut_step(s, end[i], me, null)
            sn = step[i]
            # Half-open: an empty step overlaps nothing, and it does not hide the
            # previous non-empty step from the next one.
            if e > s:
                if f_row >= 0 and f_rank == rd and s < f_end:
                    err = 3
                    e_row = i
                    e_other = f_row
                    e_rank = rv
                    break
                f_row = i
                f_rank = rd
                f_end = e
            if p_row >= 0 and p_rank == rd and p_att == a and sn <= p_step:
                err = 4
                e_row = i
                e_other = p_row
                e_rank = rv
                break
            p_row = i
            p_rank = rd
            p_att = a
            p_step = sn
            b = q_b
            h = q_h
            c_cause = -1
            if q_on and (b == null or sn > b) and sn <= h and not flight:
                c_state = states[0]
                if not ((x_copy.size and x_copy[j & _POS]) or (by_rank and rd != first_member[a])):
                    tok += tokens[i]
                if pres.size:
                    q = sn - q_po
                    if pres[q] == 0:
                        pres[q] = 1
                        npres += 1
            elif q_pend:
                c_state = states[1]
            else:
                c_state = states[2]
                c_cause = q_cause
            c_rank = rv
            c_start = s
            c_end = e
            c_att = a
            c_step = sn
        if err or ib >= nb:
            break
        while jo < no and (o_rank[jo & _POS] < r or (o_rank[jo & _POS] == r and o_end[jo & _POS] <= t)):
            jo += 1
        jp = jo & _POS
        if t < be:
            nxt = be
            in_s = False
            in_o = False
            if c_rank == r:
                if c_start <= t:
                    in_s = True
                    if c_end < nxt:
                        nxt = c_end
                elif c_start < nxt:
                    nxt = c_start
            if jo < no and o_rank[jp] == r:
                if o_start[jp] <= t:
                    in_o = True
                    if o_end[jp] < nxt:
                        nxt = o_end[jp]
                elif o_start[jp] < nxt:
                    nxt = o_start[jp]
            if in_o:
                lay = 2
                row = jo
            elif in_s:
                lay = 1
                row = j
            else:
                lay = 0
                row = ib
            if last_layer == lay and last_row == row and last_end == t and last_rank == r:
                r_end[(m - 1) & _POS] = nxt
            else:
                mu = m & _POS
                row = row & _POS
                if lay == 2:
                    sv = np.int64(o_state[row])
                    av = np.int64(o_att[row])
                    pv = o_step[row]
                    cv = -1
                elif lay == 1:
                    sv = np.int64(c_state)
                    av = c_att
                    pv = c_step
                    cv = np.int64(c_cause)
                else:
                    sv = np.int64(b_state[row])
                    av = np.int64(b_att[row])
                    pv = b_step[row]
                    cv = -1
                r_rank[mu] = r
                r_start[mu] = t
                r_end[mu] = nxt
                r_state[mu] = sv
                # validity bits gather in a byte, stored when it is full
                bit = np.uint8(1 << (m & 7))
                if av >= 0:
                    r_att[mu] = att_ids[av]
                    ba |= bit
                else:
                    r_att[mu] = 0
                r_step[mu] = pv
                if pv != null:
                    bs |= bit
                if cv >= 0:
                    r_cause[mu] = cv
                    bc |= bit
                else:
                    r_cause[mu] = 0
                if m & 7 == 7:
                    v_att[mu >> 3] = ba
                    v_step[mu >> 3] = bs
                    v_cause[mu >> 3] = bc
                    ba = np.uint8(0)
                    bs = np.uint8(0)
                    bc = np.uint8(0)
                last_layer = lay
                last_row = row
                last_rank = r
                m += 1
            last_end = nxt
            t = nxt
        if t >= be:  # the next background piece, maybe of the next rank
            ib += 1
            if ib < nb:
                ip = ib & _POS
                if np.int64(b_rank[ip]) != r:
                    r = np.int64(b_rank[ip])
                    t = b_start[ip]
                    acc_rank[nr & _POS] = r
                    nr += 1
                elif t < b_start[ip]:
                    t = b_start[ip]
                be = b_end[ip]
                if be > t:
                    acc_ns[(nr - 1) & _POS] += be - t
            else:
                r = done  # check the steps the layering never reached
                t = done
    if m & 7:
        v_att[m >> 3] = ba
        v_step[m >> 3] = bs
        v_cause[m >> 3] = bc
    if err:  # the outputs are incomplete: none
        m = 0
        nr = 0
        tok = 0
        npres = 0
    return (m, nr, acc_rank[:nr], acc_ns[:nr], tok, npres, err, e_row, e_other, e_rank)

