"""Numba kernels of lifecycle attribution. Pure functions: arrays in, arrays out.

Time is int64 ns, intervals half-open ``[start, end)``. Inputs are validated by
:mod:`pau.lifecycle` before they get here; each kernel has a slow twin in
``tests/reference_lifecycle.py`` (the end-to-end replay, and per kernel for
:func:`scan_steps`, :func:`attribute_pass` and the small ones),
and :func:`prepare`, whose twin is the set-up in numpy and plain Python in
``tests/reference_setup.py`` (compared field by field, errors included).
"""

from __future__ import annotations

import numpy as np

from ._jit import helper, kernel


@kernel
def paint(rank, start, end, level, order):
    """Disjoint top-level pieces of a set of labelled intervals, per rank.

    ``order`` sorts the rows by (rank, start). At each instant the interval of the
    highest ``level`` covering it wins; within a level the later start wins (ties:
    the later row). Returns ``(rank, start, end, row)`` of maximal pieces; instants
    covered by no interval give no piece.
    """
    n = order.size
    cap = 2 * n + 1
    o_rank = np.empty(cap, np.int32)
    o_start = np.empty(cap, np.int64)
    o_end = np.empty(cap, np.int64)
    o_row = np.empty(cap, np.int64)
    m = 0
    a = 0
    while a < n:
        r = rank[order[a]]
        b = a
        while b < n and rank[order[b]] == r:
            b += 1
        k = b - a
        # Intervals of the rank that do not overlap (the usual overlay: saves and
        # phases one after another) are their own pieces.
        disjoint = True
        reach = np.iinfo(np.int64).min  # the latest end of a non-empty interval so far
        for j in range(a, b):
            i = order[j]
            if end[i] > start[i]:
                if start[i] < reach:
                    disjoint = False
                    break
                reach = max(reach, end[i])
        if disjoint:
            for j in range(a, b):
                i = order[j]
                if end[i] > start[i]:
                    o_rank[m] = r
                    o_start[m] = start[i]
                    o_end[m] = end[i]
                    o_row[m] = i
                    m += 1
            a = b
            continue
        bounds = np.empty(2 * k, np.int64)
        for j in range(k):
            i = order[a + j]
            bounds[2 * j] = start[i]
            bounds[2 * j + 1] = end[i]
        bounds.sort()  # then distinct values in place (np.unique builds lists in Numba)
        nb = 1
        for j in range(1, bounds.size):
            if bounds[j] != bounds[nb - 1]:
                bounds[nb] = bounds[j]
                nb += 1
        bounds = bounds[:nb]
        nseg = bounds.size - 1
        if nseg > 0:
            win = np.full(nseg, -1, np.int64)
            for j in range(k):
                i = order[a + j]
                if end[i] <= start[i]:
                    continue
                lo = np.searchsorted(bounds, start[i])
                hi = np.searchsorted(bounds, end[i])
                for s in range(lo, hi):
                    w = win[s]
                    if (w < 0 or level[i] > level[w]
                            or (level[i] == level[w]
                                and (start[i] > start[w] or (start[i] == start[w] and i > w)))):
                        win[s] = i
            for s in range(nseg):
                w = win[s]
                if w < 0:
                    continue
                if m > 0 and o_row[m - 1] == w and o_end[m - 1] == bounds[s] and o_rank[m - 1] == r:
                    o_end[m - 1] = bounds[s + 1]
                else:
                    o_rank[m] = r
                    o_start[m] = bounds[s]
                    o_end[m] = bounds[s + 1]
                    o_row[m] = w
                    m += 1
        a = b
    return o_rank[:m], o_start[:m], o_end[:m], o_row[:m]


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
def steps_pass(order, rdense, att, start, end, step, tokens, mstart, mend, n_ranks,
               base, head, on, pend, null, rank_values, att_cause, states):
    """Check, cut and label step executions, in (rank, start) order.

    Per row i (visited through ``order``): its member interval ``[ms, me]`` of
    (attempt, rank) must contain its start; a missing or late end is cut at ``me``
    (the step was in flight); steps of one rank must not overlap and step numbers
    must increase within an attempt. The state is productive (lineage step, done),
    pending (last attempt still running) or rolled back (charged to the cause of
    its attempt); ``states`` gives their codes.

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
        k = a * n_ranks + r
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
def fill_nulls(values, bits, offset, fill, out):
    """``out[i] = values[i]``, or ``fill`` where bit ``offset + i`` of the Arrow
    validity bitmap ``bits`` is clear (the array is null there)."""
    for i in range(out.size):
        j = i + offset
        if (bits[j >> 3] >> (j & 7)) & 1:
            out[i] = values[i]
        else:
            out[i] = fill


@kernel
def row_checks(rec, start, end, block_end, durable, rank, attempt, step, null, acc, needs_step):
    """Per row, the first problem visible in the row alone: 0 none, else 1 + its
    index in ``pau.lifecycle._ROW_CHECKS``. ``acc`` is the code of accountable
    records; ``needs_step[code]`` says a record must name a step."""
    n = rec.size
    out = np.zeros(n, np.int8)
    for i in range(n):
        r = rec[i]
        s = start[i]
        e = end[i]
        b = block_end[i]
        d = durable[i]
        if r < 0:
            out[i] = 1
        elif s == null:
            out[i] = 2
        elif e != null and e < s:
            out[i] = 3
        elif b != null and b < s:
            out[i] = 4
        elif d != null and d < s:
            out[i] = 5
        elif rank[i] < -1:
            out[i] = 6
        elif r != acc and attempt[i] == null:
            out[i] = 7
        elif needs_step[r] and step[i] == null:
            out[i] = 8
        elif r == acc and rank[i] < 0:
            out[i] = 9
    return out


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
            p = np.searchsorted(m_ids, attempt[i])
            if p < m_ids.size and m_ids[p] == attempt[i]:
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
def lut_map(values, lo, lut):
    """``lut[v - lo]`` per value, -1 outside the table."""
    out = np.empty(values.size, np.int64)
    n = lut.size
    for i in range(values.size):
        v = values[i] - lo
        out[i] = lut[v] if 0 <= v < n else -1
    return out


# ---------------------------------------------------------------------------
# the one-pass path of attribution: a scan of the step columns,
# and steps labelled while they are layered (no step arrays written and read back)


_RANK_LIMIT = 1 << 24  # ranks counted in a presence table up to this value


@helper
def _step_code(s, e, r, a, k, tok, null):
    """The first problem of a step row alone: 0 none, else 1 + its index in
    ``pau.lifecycle._STEP_CHECKS``."""
    if s == null:
        return 1
    if e != null and e < s:
        return 2
    if r < -1:
        return 3
    if a == null:
        return 4
    if k == null:
        return 5
    if tok < 0:
        return 6
    return 0


@kernel
def step_codes(start, end, rank, attempt, step, tokens, null):
    """:func:`_step_code` of every step row (the slow path, for rows the scan found bad)."""
    out = np.zeros(start.size, np.int8)
    for i in range(start.size):
        out[i] = _step_code(np.int64(start[i]), np.int64(end[i]), np.int64(rank[i]), np.int64(attempt[i]),
                            np.int64(step[i]), np.int64(tokens[i]), null)
    return out


@kernel
def scan_steps(start, end, rank, attempt, step, tokens, null, cut, att_lo, att_n, end_bits, end_off, end_out):
    """One pass over the step columns: what attribution needs before it can label.

    Returns ``(bad, after, max_start, max_end, ordered, neg_rank, step_min, rank_seen,
    rank_over, att_count, att_max_step, att_max_end, att_out)``:

    * ``bad``: rows that cannot be used (:func:`_step_code`: null start, end before
      start, rank below -1, missing attempt or step, negative tokens); the
      other figures are only meaningful when it is 0.
    * ``after``: rows starting after ``cut``; ``max_start``/``max_end``: the latest
      start and non-null end (``null`` if none).
    * ``ordered``: rows come by (rank, start); ``neg_rank``: rows with rank -1;
      ``step_min``: the smallest step number.
    * ``rank_seen[r]``: rank ``r`` has a row (ranks up to ``_RANK_LIMIT``; ``rank_over``
      counts rows above it).
    * per attempt id ``att_lo + j`` (``j < att_n``): rows, the highest step and the
      latest end among rows that ended; ``att_out`` counts rows outside that range.

    With ``end_bits`` (an Arrow validity bitmap of ``end``, from bit ``end_off``; empty:
    ``end`` has ``null`` for its nulls already) the nulls of ``end`` are read from it,
    and ``end`` with ``null`` filled in is written to ``end_out`` on the way.
    """
    n = start.size
    fill = end_bits.size > 0
    bad = 0
    after = 0
    neg_rank = 0
    rank_over = 0
    att_out = 0
    ordered = True
    max_start = null
    max_end = null
    step_min = np.iinfo(np.int64).max
    rank_seen = np.zeros(1024, np.bool_)
    att_count = np.zeros(att_n, np.int64)
    att_max_step = np.full(att_n, null, np.int64)
    att_max_end = np.full(att_n, null, np.int64)
    pr = np.int64(-2)
    ps = np.int64(0)
    for i in range(n):
        s = np.int64(start[i])
        if fill:  # end's nulls are filled on the way (validity bit clear: null)
            j = i + end_off
            e = np.int64(end[i]) if (end_bits[j >> 3] >> (j & 7)) & 1 else null
            end_out[i] = e
        else:
            e = np.int64(end[i])
        r = np.int64(rank[i])
        a = np.int64(attempt[i])
        k = np.int64(step[i])
        if _step_code(s, e, r, a, k, np.int64(tokens[i]), null) != 0:
            bad += 1
            continue
        if s > cut:
            after += 1
        if s > max_start:
            max_start = s
        if e != null and e > max_end:
            max_end = e
        if r < pr or (r == pr and s < ps):
            ordered = False
        pr = r
        ps = s
        if k < step_min:
            step_min = k
        if r < 0:
            neg_rank += 1
        elif r < rank_seen.size:
            rank_seen[r] = True
        elif r < _RANK_LIMIT:
            grown = np.zeros(min(max(2 * rank_seen.size, r + 1), _RANK_LIMIT), np.bool_)
            grown[:rank_seen.size] = rank_seen
            rank_seen = grown
            rank_seen[r] = True
        else:
            rank_over += 1
        j = a - att_lo
        if 0 <= j < att_n:
            att_count[j] += 1
            if e != null:
                if k > att_max_step[j]:
                    att_max_step[j] = k
                if e > att_max_end[j]:
                    att_max_end[j] = e
        else:
            att_out += 1
    return (bad, after, max_start, max_end, ordered, neg_rank, step_min, rank_seen, rank_over,
            att_count, att_max_step, att_max_end, att_out)


@kernel
def attribute_pass(b_rank, b_start, b_end, b_state, b_att, b_step,
                   order, rank, att, start, end, step, tokens, x_rank, x_copy,
                   rank_lo, rank_lut, att_lo, att_lut, mstart, mend, n_ranks,
                   base, head, on, pend, att_cause, states, pres_lo, pres,
                   o_rank, o_start, o_end, o_state, o_att, o_step, att_ids, null, all_ranks, first_member,
                   r_rank, r_start, r_end, r_state, r_att, r_step, r_cause, v_att, v_step, v_cause):
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
    tables ``rank_lut[rank - rank_lo]`` and ``att_lut[att - att_lo]``, and each is
    checked, cut and labelled (the rules of :func:`steps_pass`) when the layering
    reaches it, so no step array is written and read back. Background ``b`` and
    overlay ``o`` are disjoint labelled pieces sorted by (rank, start) (from :func:`paint`):
    the output covers ``b``, labelled by the top layer there (overlay > step >
    background); touching pieces of one row merge. Outputs go to the ``r_*``
    arrays (capacity ``2 * (nb + ns + no) + 1``) and the Arrow validity bitmaps
    ``v_*`` (zeroed; bit set = valid). ``pres`` (zeroed, or empty to skip) marks the
    productive step numbers, from ``pres_lo``.

    Returns ``(m, nr, acc_rank, acc_ns, valid_att, valid_step, valid_cause, tokens,
    preserved, code, row, other, rank)``: output rows, the ranks with accountable time and
    their ns, valid counts of the three nullable columns, the token sum and the
    distinct step numbers of productive rows, and the first step error in (rank,
    start) order as in :func:`steps_pass` (then the outputs are incomplete) and the
    rank of the visit that failed.

    One flat loop, one output piece per turn, so that the step code exists once:
    a helper called per step would pay a reference count per array argument.
    """
    nb, no = b_rank.size, o_rank.size
    by_rank = all_ranks.size > 0
    ns = order.size if order.size else rank.size
    if by_rank:
        ns = all_ranks.size * rank.size
    n_rows = rank.size
    vd = 0  # by_rank: the dense rank and row of visit j
    vi = -1
    done = np.iinfo(np.int64).max  # the cursor's rank when no step is left
    acc_rank = np.empty(nb, np.int32)
    acc_ns = np.zeros(nb, np.int64)
    # the current step (the cursor) and what its checks remember
    c_rank, c_start, c_end, c_state, c_att, c_step, c_cause = done, 0, 0, 0, 0, 0, -1
    p_row, p_rank, p_att, p_step = -1, -1, -1, 0      # the previous step
    f_row, f_rank, f_end = -1, -1, 0                  # the last non-empty step
    tok = 0
    npres = 0
    va = 0
    vs = 0
    vc = 0
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
                i = vi
                rv = np.int64(all_ranks[vd])
            else:
                i = order[j] if order.size else j
                rv = np.int64(x_rank[j]) if x_rank.size else np.int64(rank[i])
            ra = np.int64(att[i])
            if rv != q_rv or ra != q_ra:  # what the step's (rank, attempt) decides, once per run
                q_rv = rv
                q_ra = ra
                rd = rank_lut[rv - rank_lo]
                a = att_lut[ra - att_lo]
                k = a * n_ranks + rd
                ms = mstart[k]
                me = mend[k]
                q_b = base[a]
                q_h = head[a]
                q_on = on[a] and q_h != null
                q_pend = pend[a]
                q_cause = att_cause[a]
            s = start[i]
            if ms == null:
                if by_rank:
                    continue  # not a member rank of this row's attempt: no visit
                return (0, 0, acc_rank[:0], acc_ns[:0], 0, 0, 0, 0, 0, 1, i, -1, rv)
            if s < ms or s > me:
                return (0, 0, acc_rank[:0], acc_ns[:0], 0, 0, 0, 0, 0, 2, i, -1, rv)
            e, flight = _cut_step(s, end[i], me, null)
            sn = step[i]
            # Half-open: an empty step overlaps nothing, and it does not hide the
            # previous non-empty step from the next one.
            if e > s:
                if f_row >= 0 and f_rank == rd and s < f_end:
                    return (0, 0, acc_rank[:0], acc_ns[:0], 0, 0, 0, 0, 0, 3, i, f_row, rv)
                f_row, f_rank, f_end = i, rd, e
            if p_row >= 0 and p_rank == rd and p_att == a and sn <= p_step:
                return (0, 0, acc_rank[:0], acc_ns[:0], 0, 0, 0, 0, 0, 4, i, p_row, rv)
            p_row, p_rank, p_att, p_step = i, rd, a, sn
            b = q_b
            h = q_h
            c_cause = -1
            if q_on and (b == null or sn > b) and sn <= h and not flight:
                c_state = states[0]
                if not ((x_copy.size and x_copy[j]) or (by_rank and rd != first_member[a])):
                    tok += tokens[i]
                if pres.size:
                    q = sn - pres_lo
                    if pres[q] == 0:
                        pres[q] = 1
                        npres += 1
            elif q_pend:
                c_state = states[1]
            else:
                c_state = states[2]
                c_cause = q_cause
            c_rank, c_start, c_end, c_att, c_step = rv, s, e, a, sn
        if ib >= nb:
            break
        while jo < no and (o_rank[jo] < r or (o_rank[jo] == r and o_end[jo] <= t)):
            jo += 1
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
            if jo < no and o_rank[jo] == r:
                if o_start[jo] <= t:
                    in_o = True
                    if o_end[jo] < nxt:
                        nxt = o_end[jo]
                elif o_start[jo] < nxt:
                    nxt = o_start[jo]
            if in_o:
                lay, row = 2, jo
            elif in_s:
                lay, row = 1, j
            else:
                lay, row = 0, ib
            if last_layer == lay and last_row == row and last_end == t and last_rank == r:
                r_end[m - 1] = nxt
            else:
                if lay == 2:
                    sv, av, pv, cv = np.int64(o_state[row]), np.int64(o_att[row]), o_step[row], -1
                elif lay == 1:
                    sv, av, pv, cv = np.int64(c_state), c_att, c_step, np.int64(c_cause)
                else:
                    sv, av, pv, cv = np.int64(b_state[row]), np.int64(b_att[row]), b_step[row], -1
                r_rank[m] = r
                r_start[m] = t
                r_end[m] = nxt
                r_state[m] = sv
                # validity bits gather in a byte, stored when it is full
                bit = np.uint8(1 << (m & 7))
                if av >= 0:
                    r_att[m] = att_ids[av]
                    ba |= bit
                    va += 1
                else:
                    r_att[m] = 0
                r_step[m] = pv
                if pv != null:
                    bs |= bit
                    vs += 1
                if cv >= 0:
                    r_cause[m] = cv
                    bc |= bit
                    vc += 1
                else:
                    r_cause[m] = 0
                if m & 7 == 7:
                    v_att[m >> 3] = ba
                    v_step[m >> 3] = bs
                    v_cause[m >> 3] = bc
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
                if np.int64(b_rank[ib]) != r:
                    r = np.int64(b_rank[ib])
                    t = b_start[ib]
                    acc_rank[nr] = r
                    nr += 1
                elif t < b_start[ib]:
                    t = b_start[ib]
                be = b_end[ib]
                if be > t:
                    acc_ns[nr - 1] += be - t
            else:
                r = done  # check the steps the layering never reached
                t = done
    if m & 7:
        v_att[m >> 3] = ba
        v_step[m >> 3] = bs
        v_cause[m >> 3] = bc
    return (m, nr, acc_rank[:nr], acc_ns[:nr], va, vs, vc, tok, npres, 0, -1, -1, np.int64(-1))


# ---------------------------------------------------------------------------
# the small records (attempts, membership, phases, saves, restores, failures) in
# one call: everything attribution needs before its pass over the steps, or the
# relational errors of the input (rows that contradict others), which the caller
# names (pau.lifecycle._setup)

# record codes, as pau.lifecycle.RECORDS orders them
R_ACC, R_ATT, R_PHASE, R_STEP, R_CKPT, R_REST, R_FAIL = 0, 1, 2, 3, 4, 5, 6
# attempt kinds, as pau.lifecycle.ATTEMPT_KINDS orders them
K_COMPLETED, K_FAILED, K_PREEMPTED, K_RUNNING = 0, 1, 2, 3
N_INIT_KINDS = 3  # the first phase kinds are the init kinds
# causes past the failure kinds: base + these
C_FAILED, C_PREEMPTED, C_ENDED, C_SUPERSEDED = 0, 1, 2, 3
# positions in `st_codes`
P_OUTAGE, P_UNATTRIBUTED, P_RESTORE, P_INIT, P_REINIT, P_LOST, P_CKPT, P_UNUSED = range(8)
# relational errors prepare reports (its status), with the rows they concern
E_NO_ATTEMPT = 1        # a record names an attempt without an attempt row: the first row of the least such id
E_STEP_NO_ATTEMPT = 2   # a step does: the first such step (its index among the steps)
E_NO_RANK = 3           # an attempt row of rank -1 while no rank is known
E_OUTSIDE = 4           # phases, saves, restores starting outside their attempt on a rank: every one
E_RESTORE = 5           # ok restores of a step no ok checkpoint was durable for before them: every one
E_FAILURE_OUTSIDE = 6   # failures before their attempt's start or after its end: every one
E_ATTEMPT_OVERLAP = 7   # an attempt's time on a rank overlaps an earlier attempt's there: every one
#: Ranks spread wider than this pass through attribution as dense positions (a
#: lookup table by value would not fit).
RANK_LUT_MAX = 1 << 24


@helper
def _find(keys, v):
    """Position of ``v`` in sorted ``keys``, -1 if absent."""
    p = np.searchsorted(keys, v)
    if p < keys.size and keys[p] == v:
        return p
    return -1


@helper
def _find_pair(a_keys, b_keys, a, b):
    """Position of ``(a, b)`` in the lexicographically sorted pairs ``(a_keys,
    b_keys)``, -1 if absent."""
    lo, hi = 0, a_keys.size
    while lo < hi:
        mid = (lo + hi) // 2
        if a_keys[mid] < a or (a_keys[mid] == a and b_keys[mid] < b):
            lo = mid + 1
        else:
            hi = mid
    if lo < a_keys.size and a_keys[lo] == a and b_keys[lo] == b:
        return lo
    return -1


@kernel
def _pair_order(a, b):
    """A stable sort order of the pairs ``(a, b)``: the identity when they are
    sorted already."""
    for j in range(1, a.size):
        if a[j] < a[j - 1] or (a[j] == a[j - 1] and b[j] < b[j - 1]):
            o = np.argsort(b, kind="mergesort")
            return o[np.argsort(a[o], kind="mergesort")]
    return np.arange(a.size)


@helper
def _rank_pos(v, rank_values, r_lo, rank_lut, dense):
    """Position of rank ``v`` among the sorted ``rank_values``, -1 if absent: by the
    lookup table, or by a search when ranks are dense positions."""
    if dense:
        return _find(rank_values, v)
    j = v - r_lo
    if 0 <= j < rank_lut.size:
        return rank_lut[j]
    return -1


@kernel
def _by_rank_start(rank, start, r_lo, rank_lut, n_ranks):
    """Row order by (rank, start), stable (numpy's ``lexsort((start, rank))``): a
    counting sort by dense rank (``rank_lut[rank - r_lo]``), then a stable sort by
    start of each rank's rows that are not in time order already."""
    n = rank.size
    count = np.zeros(n_ranks + 1, np.int64)
    for i in range(n):
        count[rank_lut[rank[i] - r_lo] + 1] += 1
    for d in range(n_ranks):
        count[d + 1] += count[d]
    first = count[:n_ranks].copy()
    out = np.empty(n, np.int64)
    for i in range(n):
        d = rank_lut[rank[i] - r_lo]
        out[count[d]] = i
        count[d] += 1
    for d in range(n_ranks):
        lo, hi = first[d], count[d]
        for j in range(lo + 1, hi):
            if start[out[j]] < start[out[j - 1]]:
                seg = out[lo:hi].copy()
                keys = np.empty(hi - lo, np.int64)
                for q in range(hi - lo):
                    keys[q] = start[seg[q]]
                pos = np.argsort(keys, kind="mergesort")
                for q in range(hi - lo):
                    out[lo + q] = seg[pos[q]]
                break
    return out


@kernel
def _distinct(a):
    """Sorted distinct values of `a`: a presence map when they span a small range
    (ranks, ids), else a sort (np.unique builds Python lists in Numba)."""
    if a.size == 0:
        return np.empty(0, np.int64)
    lo = a.min()
    span = a.max() - lo + 1
    if span <= 4 * a.size + 1024:
        seen = np.zeros(span, np.bool_)
        m = 0
        for v in a:
            if not seen[v - lo]:
                seen[v - lo] = True
                m += 1
        out = np.empty(m, np.int64)
        k = 0
        for j in range(span):
            if seen[j]:
                out[k] = lo + j
                k += 1
        return out
    out = np.sort(a)
    m = 0
    for j in range(out.size):
        if m == 0 or out[j] != out[m - 1]:
            out[m] = out[j]
            m += 1
    return out[:m].copy()


@kernel
def _stable_order(key):
    """A stable sort order of `key`: the identity when it is sorted already."""
    for j in range(1, key.size):
        if key[j] < key[j - 1]:
            return np.argsort(key, kind="mergesort")
    return np.arange(key.size)


@kernel
def _rows_of(rec, code, start, until):
    """The rows of record `code` that start by `until`, in row order."""
    n = 0
    for i in range(rec.size):
        if rec[i] == code and start[i] <= until:
            n += 1
    out = np.empty(n, np.int64)
    k = 0
    for i in range(rec.size):
        if rec[i] == code and start[i] <= until:
            out[k] = i
            k += 1
    return out


@kernel
def _prepare_error(code, e_row, e_rank, e_ms, e_me):
    """What :func:`prepare` returns on a relational error: its code and rows, the
    rest empty."""
    e = np.empty(0, np.int64)
    b = np.empty(0, np.bool_)
    P = paint(np.empty(0, np.int32), e, e, np.empty(0, np.int8), e)
    layer = (P[0], P[1], P[2], np.empty(0, np.int8)[P[3]], np.empty(0, np.int32)[P[3]], e[P[3]])
    return (code, (e_row, e_rank, e_ms, e_me), (e, e, e, b, e, b), (e, e, e), (e, e, e, b), (e, e, b), (e, e, e),
            (e, np.int64(0), e, e, e, False), layer, layer, np.int64(0), e)


@helper
def _one(v):
    out = np.empty(1, np.int64)
    out[0] = v
    return out


@kernel
def prepare(rec, attempt, rank, start, end, step, block_end, durable, ok, kcode, n_fail_kinds,
            as_of, null, step_ranks, extra_ranks, sa_ids, sa_count, sa_max_step, sa_max_end,
            s_att, s_end, s_step, phase_state, st_codes):
    """Attempts, checkpoints, lineage, membership and the painted background and
    overlay of attribution, from the small records (``kcode``: a kind code per row:
    attempt rows index ATTEMPT_KINDS (-1: none), phase rows PHASE_KINDS, failure
    rows the caller's sorted failure kinds), by the rules of :mod:`pau.lifecycle`.
    The steps enter through their attempts' figures (``sa_ids``: the distinct
    attempt ids of the step rows, sorted; per id the rows, the highest step and the
    latest end among rows that ended) and their columns ``s_att, s_end, s_step``.
    ``tests/reference_lifecycle.py`` (``setup``) is this kernel's twin.

    Returns ``(status, errors, attempts, failures, checkpoints, lineage, members,
    ranks, background, overlay, acc_min, lineage_ckpts)`` as tuples of arrays.
    Status 0: no error. Else an ``E_*`` code, ``errors`` its rows ``(row, rank,
    member start, member end)`` (row: of these records, or of the steps for
    E_STEP_NO_ATTEMPT; rank and member times for E_OUTSIDE; the attempt's start and
    end, or null while open, for E_FAILURE_OUTSIDE; rank, the earlier attempt's id and
    its end on that rank for E_ATTEMPT_OVERLAP) and the rest empty.
    ``ranks`` is ``(rank_values, r_lo, rank_lut, m_start, m_end, dense)``: with
    ``dense``, ranks spread wider than RANK_LUT_MAX, the painted layers name
    ranks by position in ``rank_values`` (``r_lo`` 0, ``rank_lut`` the identity).
    """
    n = rec.size
    big = np.iinfo(np.int64).max
    # -- attempts: per id the earliest start, the latest end (null if one is open)
    # and the first kind given
    u = _distinct(attempt[_rows_of(rec, R_ATT, start, big)])
    nA = u.size
    p_start = np.full(nA, big, np.int64)
    p_end = np.full(nA, null, np.int64)
    p_kind = np.full(nA, -1, np.int64)
    p_seen = np.zeros(nA, np.bool_)
    for i in range(n):
        if rec[i] != R_ATT:
            continue
        p = np.searchsorted(u, attempt[i])
        s, e = start[i], end[i]
        if not p_seen[p]:
            p_seen[p] = True
            p_start[p], p_end[p], p_kind[p] = s, e, kcode[i]
        else:
            p_start[p] = min(p_start[p], s)
            p_end[p] = null if (p_end[p] == null or e == null) else max(p_end[p], e)
            if p_kind[p] < 0:
                p_kind[p] = kcode[i]
    order = np.argsort(p_start, kind="mergesort")  # by (start, id): u is sorted
    dense_of = np.empty(nA, np.int64)  # position in u -> dense index
    for i in range(nA):
        dense_of[order[i]] = i
    a_ids = u[order]
    a_start = p_start[order]
    # every record but accountable names a known attempt (row_d: its dense index);
    # the steps' ids are known from the scan (ids without a row: an error)
    row_d = np.full(n, -1, np.int64)
    miss = -1
    for i in range(n):
        if rec[i] != R_ACC:
            p = _find(u, attempt[i])
            if p < 0:
                if miss < 0 or attempt[i] < attempt[miss]:
                    miss = i
            else:
                row_d[i] = dense_of[p]
    e0 = np.empty(0, np.int64)
    if miss >= 0:
        for i in range(n):  # the first row of the least unknown id
            if attempt[i] == attempt[miss]:
                return _prepare_error(E_NO_ATTEMPT, _one(i), e0, e0, e0)
    for j in range(sa_ids.size):
        if _find(u, sa_ids[j]) < 0:
            for q in range(s_att.size):
                if _find(u, s_att[q]) < 0:
                    return _prepare_error(E_STEP_NO_ATTEMPT, _one(q), e0, e0, e0)
    # failures as of as_of, distinct, by (time, attempt, kind); the first of each
    # attempt ends it. A failure before its attempt began, or after the end its
    # attempt rows give, contradicts them.
    fr = _rows_of(rec, R_FAIL, start, as_of)
    nf = fr.size
    n_bad = 0
    bad_f = np.empty(nf, np.int64)
    bad_s = np.empty(nf, np.int64)
    bad_e = np.empty(nf, np.int64)
    for j in range(nf):
        i = fr[j]
        p = _find(u, attempt[i])
        if start[i] < p_start[p] or (p_end[p] != null and start[i] > p_end[p]):
            bad_f[n_bad], bad_s[n_bad], bad_e[n_bad] = i, p_start[p], p_end[p]
            n_bad += 1
    if n_bad:
        return _prepare_error(E_FAILURE_OUTSIDE, bad_f[:n_bad].copy(), e0, bad_s[:n_bad].copy(),
                              bad_e[:n_bad].copy())
    f_a, f_t, f_k, f_d = attempt[fr], start[fr], kcode[fr], row_d[fr]
    fo = np.argsort(f_k, kind="mergesort")
    fo = fo[np.argsort(f_a[fo], kind="mergesort")]
    fo = fo[np.argsort(f_t[fo], kind="mergesort")]
    keep = np.zeros(nf, np.bool_)
    for j in range(nf):
        i = fo[j]
        if j == 0:
            keep[j] = True
        else:
            q = fo[j - 1]
            keep[j] = f_a[i] != f_a[q] or f_t[i] != f_t[q] or f_k[i] != f_k[q]
    fo = fo[keep]
    f_a, f_t, f_k, f_d = f_a[fo], f_t[fo], f_k[fo], f_d[fo]
    ff_has = np.zeros(nA, np.bool_)
    ff_t = np.zeros(nA, np.int64)
    ff_k = np.zeros(nA, np.int64)
    for j in range(fo.size):
        d = f_d[j]
        if not ff_has[d]:
            ff_has[d], ff_t[d], ff_k[d] = True, f_t[j], f_k[j]
    a_end = np.empty(nA, np.int64)
    a_running = np.zeros(nA, np.bool_)
    a_cause = np.full(nA, -1, np.int64)
    for i in range(nA):
        p = order[i]
        ea = p_end[p]
        has_e = ea != null and ea <= as_of
        e = ea
        c = -1
        if ff_has[i]:
            e = ff_t[i] if not has_e else min(e, ff_t[i])
            has_e = True
            c = ff_k[i]
        elif has_e:
            kd = p_kind[p]
            if kd == K_RUNNING:
                c = n_fail_kinds + C_ENDED
            elif kd == K_FAILED:
                c = n_fail_kinds + C_FAILED
            elif kd == K_PREEMPTED:
                c = n_fail_kinds + C_PREEMPTED
        if not has_e and i + 1 < nA:
            e = min(a_start[i + 1], as_of)  # superseded by the next attempt
            has_e = True
            if c < 0:
                c = n_fail_kinds + C_SUPERSEDED
        if not has_e:
            e = as_of
            a_running[i] = True
        a_end[i] = max(min(e, as_of), a_start[i])
        a_cause[i] = c
    a_completed = np.zeros(nA, np.bool_)
    for i in range(nA):
        a_completed[i] = not a_running[i] and a_cause[i] < 0

    # -- ranks, membership, accountable time
    acc_rows = _rows_of(rec, R_ACC, start, big)
    n_acc = acc_rows.size
    n_known = step_ranks.size + extra_ranks.size
    for i in range(n):
        if rank[i] >= 0:
            n_known += 1
    known = np.empty(n_known, np.int64)
    k = 0
    for i in range(n):
        if rank[i] >= 0:
            known[k] = rank[i]
            k += 1
    for j in range(step_ranks.size):
        known[k] = step_ranks[j]
        k += 1
    for j in range(extra_ranks.size):
        known[k] = extra_ranks[j]
        k += 1
    known = _distinct(known)
    # membership rows: per-rank attempt rows first, then rank -1 rows per rank
    # accountable at the attempt's start (every known rank without accountable rows)
    cap = 0
    for i in range(n):
        if rec[i] == R_ATT:
            cap += 1 if rank[i] >= 0 else max(n_acc, known.size)
    mm_d = np.empty(cap, np.int64)
    mm_r = np.empty(cap, np.int64)
    mm_s = np.empty(cap, np.int64)
    mm_e = np.empty(cap, np.int64)
    mm_i = np.empty(cap, np.int64)  # the attempt row of each
    nm = 0
    for i in range(n):
        if rec[i] == R_ATT and rank[i] >= 0:
            d = row_d[i]
            ae = a_end[d]
            oe = ae if (end[i] == null or end[i] > as_of) else min(end[i], ae)
            mm_d[nm], mm_r[nm], mm_s[nm], mm_e[nm], mm_i[nm] = d, rank[i], start[i], max(oe, start[i]), i
            nm += 1
    for i in range(n):
        if rec[i] == R_ATT and rank[i] < 0:
            d = row_d[i]
            t0 = start[i]
            if n_acc:
                for j in range(n_acc):
                    q = acc_rows[j]
                    if start[q] <= t0 and (end[q] == null or end[q] > t0):
                        mm_d[nm], mm_r[nm], mm_s[nm], mm_e[nm], mm_i[nm] = d, rank[q], a_start[d], a_end[d], i
                        nm += 1
            else:
                if known.size == 0:
                    return _prepare_error(E_NO_RANK, _one(i), e0, e0, e0)
                for j in range(known.size):
                    mm_d[nm], mm_r[nm], mm_s[nm], mm_e[nm], mm_i[nm] = d, known[j], a_start[d], a_end[d], i
                    nm += 1
    # distinct (attempt, rank), the first row of each, sorted
    mkey = np.empty(nm, np.int64)
    for j in range(nm):
        mkey[j] = mm_d[j] * (np.int64(1) << 32) + mm_r[j]
    mo = _stable_order(mkey)
    nmu = 0
    for j in range(nm):
        if j == 0 or mkey[mo[j]] != mkey[mo[j - 1]]:
            mo[nmu] = mo[j]
            nmu += 1
    mo = mo[:nmu]
    mem_att, mem_rank, mem_start, mem_end = mm_d[mo], mm_r[mo], mm_s[mo], mm_e[mo]
    # the members of each attempt by id (ranks sorted)
    by_id = _stable_order(a_ids[mem_att])  # ids usually grow with start
    m_ranks = mem_rank[by_id]
    n_ids = 0
    for j in range(nmu):
        if j == 0 or mem_att[by_id[j]] != mem_att[by_id[j - 1]]:
            n_ids += 1
    m_ids = np.empty(n_ids, np.int64)
    m_off = np.zeros(n_ids + 1, np.int64)
    g = -1
    for j in range(nmu):
        if j == 0 or mem_att[by_id[j]] != mem_att[by_id[j - 1]]:
            g += 1
            m_ids[g] = a_ids[mem_att[by_id[j]]]
        m_off[g + 1] = j + 1
    if n_acc:
        acc_rank = np.empty(n_acc, np.int64)
        acc_start = np.empty(n_acc, np.int64)
        acc_end = np.empty(n_acc, np.int64)
        for j in range(n_acc):
            q = acc_rows[j]
            acc_rank[j], acc_start[j] = rank[q], start[q]
            acc_end[j] = as_of if end[q] == null else min(end[q], as_of)
    else:
        acc_rank = _distinct(mem_rank)
        acc_start = np.full(acc_rank.size, big, np.int64)
        acc_end = np.full(acc_rank.size, -big, np.int64)
        for j in range(nmu):
            p = np.searchsorted(acc_rank, mem_rank[j])
            acc_start[p] = min(acc_start[p], mem_start[j])
            acc_end[p] = max(acc_end[p], mem_end[j])
    acc_min = big
    for j in range(acc_rank.size):
        acc_end[j] = max(acc_end[j], acc_start[j])
        acc_min = min(acc_min, acc_start[j])
    allr = np.empty(known.size + acc_rank.size + nmu, np.int64)
    allr[:known.size] = known
    allr[known.size:known.size + acc_rank.size] = acc_rank
    allr[known.size + acc_rank.size:] = mem_rank
    rank_values = _distinct(allr)
    nR = max(rank_values.size, 1)
    r_lo = rank_values[0] if rank_values.size else 0
    span = rank_values[-1] - r_lo + 1 if rank_values.size else 0
    dense = span >= RANK_LUT_MAX  # ranks far apart: positions, not values, in the layers
    if dense:
        r_lo = 0
        rank_lut = np.arange(rank_values.size)
    else:
        rank_lut = np.full(span, -1, np.int64)
        for j in range(rank_values.size):
            rank_lut[rank_values[j] - r_lo] = j
    m_start = np.full(nA * nR, null, np.int64)
    m_end = np.full(nA * nR, null, np.int64)
    m_src = np.empty(nA * nR, np.int64)  # the attempt row of each membership
    for j in range(nmu):
        c = mem_att[j] * nR + _rank_pos(mem_rank[j], rank_values, r_lo, rank_lut, dense)
        m_start[c] = mem_start[j]
        m_end[c] = mem_end[j]
        m_src[c] = mm_i[mo[j]]
    # Attempts follow each other on a rank: one starting there before the one before
    # it ended contradicts it. Attempts are in start order (their dense index), and so,
    # almost always, are their memberships on each rank; a rank where they are not is
    # checked in the order of its membership starts.
    n_bad = 0
    bad_i = np.empty(nmu, np.int64)
    bad_r = np.empty(nmu, np.int64)
    bad_a = np.empty(nmu, np.int64)
    bad_e = np.empty(nmu, np.int64)
    for rp in range(rank_values.size):
        prev = -1
        in_order = True
        for d in range(nA):
            c = d * nR + rp
            if m_start[c] == null:
                continue
            if prev >= 0 and m_start[c] < m_start[prev * nR + rp]:
                in_order = False
                break
            prev = d
        seq = np.arange(nA) if in_order else np.argsort(m_start[rp::nR], kind="mergesort")
        prev = -1
        for d in seq:
            c = d * nR + rp
            if m_start[c] == null:
                continue
            if prev >= 0 and m_start[c] < m_end[prev * nR + rp]:
                bad_i[n_bad], bad_r[n_bad] = m_src[c], rank_values[rp]
                bad_a[n_bad], bad_e[n_bad] = a_ids[prev], m_end[prev * nR + rp]
                n_bad += 1
            prev = d
    if n_bad:
        return _prepare_error(E_ATTEMPT_OVERLAP, bad_i[:n_bad].copy(), bad_r[:n_bad].copy(), bad_a[:n_bad].copy(),
                              bad_e[:n_bad].copy())

    # -- phases, saves and restores on each member rank (rank -1: every member),
    # checked against their attempt on that rank and cut at its end
    ne = 0
    for i in range(n):
        ri = rec[i]
        if ri == R_PHASE or ri == R_CKPT or ri == R_REST:
            if rank[i] >= 0:
                ne += 1
            else:
                p = _find(m_ids, attempt[i])
                if p >= 0:
                    ne += m_off[p + 1] - m_off[p]
    x_src = np.empty(ne, np.int64)
    x_rank = np.empty(ne, np.int64)
    k = 0
    for i in range(n):
        ri = rec[i]
        if (ri == R_PHASE or ri == R_CKPT or ri == R_REST) and rank[i] >= 0:
            x_src[k], x_rank[k] = i, rank[i]
            k += 1
    for i in range(n):
        ri = rec[i]
        if (ri == R_PHASE or ri == R_CKPT or ri == R_REST) and rank[i] < 0:
            p = _find(m_ids, attempt[i])
            if p >= 0:
                for q in range(m_off[p], m_off[p + 1]):
                    x_src[k], x_rank[k] = i, m_ranks[q]
                    k += 1
    x_d = np.empty(ne, np.int64)
    x_end = np.empty(ne, np.int64)
    x_block = np.empty(ne, np.int64)
    n_out = 0
    out_k = np.empty(ne, np.int64)
    out_ms = np.empty(ne, np.int64)
    out_me = np.empty(ne, np.int64)
    for k in range(ne):
        i = x_src[k]
        d = row_d[i]
        rd = _rank_pos(x_rank[k], rank_values, r_lo, rank_lut, dense)
        ms = m_start[d * nR + rd] if rd >= 0 else null
        me = m_end[d * nR + rd] if rd >= 0 else null
        if ms == null or start[i] < ms or start[i] > me:
            out_k[n_out], out_ms[n_out], out_me[n_out] = k, ms, me
            n_out += 1
            continue
        x_d[k] = d
        e = end[i]
        x_end[k] = max(me if (e == null or e > me) else e, start[i])
        e = block_end[i]
        x_block[k] = max(me if (e == null or e > me) else e, start[i])

    if n_out:
        e_row = np.empty(n_out, np.int64)
        e_rank = np.empty(n_out, np.int64)
        for j in range(n_out):
            e_row[j], e_rank[j] = x_src[out_k[j]], x_rank[out_k[j]]
        return _prepare_error(E_OUTSIDE, e_row, e_rank, out_ms[:n_out].copy(), out_me[:n_out].copy())

    # -- checkpoints: per (attempt, step) durable when the last shard is, ok if all are
    cr = _rows_of(rec, R_CKPT, start, big)
    nc_rows = cr.size
    k_att = row_d[cr]
    k_step = step[cr]
    cdur = np.empty(nc_rows, np.int64)
    for k in range(nc_rows):
        i = cr[k]
        cdur[k] = big if durable[i] == null else durable[i]
    cok = ok[cr]
    co = _pair_order(k_att, k_step)  # shards come save by save: usually sorted
    nC = 0
    for j in range(nc_rows):
        if j == 0 or k_att[co[j]] != k_att[co[j - 1]] or k_step[co[j]] != k_step[co[j - 1]]:
            nC += 1
    c_att = np.empty(nC, np.int64)
    c_step = np.empty(nC, np.int64)
    c_dur = np.empty(nC, np.int64)
    c_ok = np.empty(nC, np.bool_)
    g = -1
    for j in range(nc_rows):
        i = co[j]
        if j == 0 or k_att[i] != k_att[co[j - 1]] or k_step[i] != k_step[co[j - 1]]:
            g += 1
            c_att[g], c_step[g], c_dur[g], c_ok[g] = k_att[i], k_step[i], cdur[i], cok[i]
        else:
            c_dur[g] = max(c_dur[g], cdur[i])
            c_ok[g] = c_ok[g] and cok[i]
    has_durable = np.zeros(nA, np.bool_)
    for g in range(nC):
        if not (c_ok[g] and c_dur[g] <= as_of):
            c_dur[g] = null
        else:
            has_durable[c_att[g]] = True

    # -- lineage: the restore each attempt used (its last ok one, by start) and the
    # checkpoint it read (the latest durable one of its step, before it, written
    # by another attempt)
    r_rows = _rows_of(rec, R_REST, start, as_of)
    r_st = start[r_rows]
    used = np.zeros(nA, np.bool_)
    used_step = np.zeros(nA, np.int64)
    used_w = np.zeros(nA, np.int64)
    n_bad = 0
    bad_rest = np.empty(r_rows.size, np.int64)
    for j in np.argsort(r_st, kind="mergesort"):
        i = r_rows[j]
        if not ok[i]:
            continue
        a = row_d[i]
        w = -1
        for g in range(nC):
            if (c_step[g] == step[i] and c_dur[g] != null and c_dur[g] <= start[i] and c_att[g] != a
                    and (w < 0 or c_dur[g] > c_dur[w])):
                w = g
        if w < 0:
            bad_rest[n_bad] = i
            n_bad += 1
            continue
        used[a], used_step[a], used_w[a] = True, step[i], c_att[w]
    if n_bad:
        return _prepare_error(E_RESTORE, bad_rest[:n_bad].copy(), e0, e0, e0)
    base = np.full(nA, null, np.int64)
    head = np.full(nA, null, np.int64)
    on = np.zeros(nA, np.bool_)
    cur = nA - 1
    while cur > 0 and _find(sa_ids, a_ids[cur]) < 0 and not used[cur] and not has_durable[cur]:
        cur -= 1
    seen = np.zeros(nA, np.bool_)
    first = True
    h = null
    while cur >= 0 and not seen[cur]:
        seen[cur] = True
        b = used_step[cur] if used[cur] else null
        if first:
            first = False
            if a_completed[cur]:
                h = _last_done_step(_find(sa_ids, a_ids[cur]), a_ids[cur], min(as_of, a_end[cur]), as_of, a_end[cur],
                                    sa_count, sa_max_step, sa_max_end, s_att, s_end, s_step, null)
                if h == null:
                    h = b
            else:
                h = null
                for g in range(nC):
                    if c_att[g] == cur and c_dur[g] != null and (h == null or c_step[g] > h):
                        h = c_step[g]
                if h == null:
                    h = b
                if b != null and h != null and h < b:
                    h = b
        on[cur] = True
        base[cur] = b
        head[cur] = h
        if not used[cur]:
            break
        h = used_step[cur]
        cur = used_w[cur]
    on_lineage = np.zeros(nC, np.bool_)
    for g in range(nC):
        on_lineage[g] = c_dur[g] != null and _on_line(on, base, head, c_att[g], c_step[g], null)
    lineage_ckpts = np.sort(c_step[on_lineage])

    # -- background: accountable (outage) < attempts (unattributed) < init/restore
    nb = 0
    for k in range(ne):
        ri = rec[x_src[k]]
        if ri == R_REST or (ri == R_PHASE and kcode[x_src[k]] < N_INIT_KINDS):
            nb += 1
    nb0 = acc_rank.size + nmu
    b_rank = np.empty(nb0 + nb, np.int32)
    b_start = np.empty(nb0 + nb, np.int64)
    b_end = np.empty(nb0 + nb, np.int64)
    b_level = np.empty(nb0 + nb, np.int8)
    b_state = np.empty(nb0 + nb, np.int8)
    b_att = np.empty(nb0 + nb, np.int32)
    b_step = np.full(nb0 + nb, null, np.int64)
    for j in range(acc_rank.size):
        b_rank[j], b_start[j], b_end[j] = acc_rank[j], acc_start[j], acc_end[j]
        b_level[j], b_state[j], b_att[j] = 0, st_codes[P_OUTAGE], -1
    for j in range(nmu):
        q = acc_rank.size + j
        b_rank[q], b_start[q], b_end[q] = mem_rank[j], mem_start[j], mem_end[j]
        b_level[q], b_state[q], b_att[q] = 1, st_codes[P_UNATTRIBUTED], mem_att[j]
    q = nb0
    for k in range(ne):
        i = x_src[k]
        ri = rec[i]
        if ri == R_REST or (ri == R_PHASE and kcode[i] < N_INIT_KINDS):
            b_rank[q], b_start[q], b_end[q], b_level[q], b_att[q] = x_rank[k], start[i], x_end[k], 2, x_d[k]
            if ri == R_REST:
                b_state[q] = st_codes[P_RESTORE]
                b_step[q] = step[i]
            else:
                b_state[q] = st_codes[P_INIT] if x_d[k] == 0 else st_codes[P_REINIT]
            q += 1
    if dense:
        for q in range(b_rank.size):
            b_rank[q] = _find(rank_values, b_rank[q])
    bo = _by_rank_start(b_rank, b_start, r_lo, rank_lut, nR)
    B = paint(b_rank, b_start, b_end, b_level, bo)
    br = B[3]
    background = (B[0], B[1], B[2], b_state[br], b_att[br], b_step[br])

    # -- overlay: eval/custom/data_wait < checkpoint (blocking part)
    no = ne - nb
    o_rank = np.empty(no, np.int32)
    o_start = np.empty(no, np.int64)
    o_end = np.empty(no, np.int64)
    o_level = np.empty(no, np.int8)
    o_state = np.empty(no, np.int8)
    o_att = np.empty(no, np.int32)
    o_step = np.full(no, null, np.int64)
    q = 0
    for k in range(ne):  # phases first, then saves
        i = x_src[k]
        if rec[i] == R_PHASE and kcode[i] >= N_INIT_KINDS:
            o_rank[q], o_start[q], o_end[q], o_level[q], o_att[q] = x_rank[k], start[i], x_end[k], 0, x_d[k]
            o_state[q] = phase_state[kcode[i]]
            q += 1
    g = -1
    for k in range(ne):
        i = x_src[k]
        if rec[i] == R_CKPT:
            d = x_d[k]
            o_rank[q], o_start[q], o_end[q], o_level[q], o_att[q] = x_rank[k], start[i], x_block[k], 1, d
            o_step[q] = step[i]
            if g < 0 or c_att[g] != d or c_step[g] != step[i]:  # the shards of one save come together
                g = _find_pair(c_att, c_step, d, step[i])
            if c_dur[g] == null:
                o_state[q] = st_codes[P_LOST]
            elif _on_line(on, base, head, d, step[i], null):
                o_state[q] = st_codes[P_CKPT]
            else:
                o_state[q] = st_codes[P_UNUSED]
            q += 1
    if dense:
        for q in range(o_rank.size):
            o_rank[q] = _find(rank_values, o_rank[q])
    oo = _by_rank_start(o_rank, o_start, r_lo, rank_lut, nR)
    O = paint(o_rank, o_start, o_end, o_level, oo)
    orow = O[3]
    overlay = (O[0], O[1], O[2], o_state[orow], o_att[orow], o_step[orow])
    return (0, (e0, e0, e0, e0), (a_ids, a_start, a_end, a_running, a_cause, a_completed), (f_a, f_t, f_k),
            (c_att, c_step, c_dur, c_ok), (base, head, on), (m_ids, m_off, m_ranks),
            (rank_values, r_lo, rank_lut, m_start, m_end, dense), background, overlay, acc_min, lineage_ckpts)


@helper
def _on_line(on, base, head, a, s, null):
    """Step ``s`` of attempt ``a`` (dense) is a lineage step."""
    return on[a] and head[a] != null and s <= head[a] and (base[a] == null or s > base[a])


@helper
def _last_done_step(j, a_id, until, as_of, a_end, sa_count, sa_max_step, sa_max_end, s_att, s_end, s_step,
                    null):
    """The highest step attempt ``a_id`` completed by ``until`` (its end, as of
    as_of); null if none. From the scan's figures when every step that ended did
    so by then, else from the steps. ``j``: the id's position among the steps'
    attempt ids (-1: none of its rows is a step)."""
    if j < 0 or sa_count[j] == 0 or sa_max_end[j] == null:
        return null
    if sa_max_end[j] <= until:
        return sa_max_step[j]
    h = null
    for i in range(s_att.size):
        e = s_end[i]
        if s_att[i] == a_id and e != null and e <= as_of and e <= a_end and (h == null or s_step[i] > h):
            h = s_step[i]
    return h
