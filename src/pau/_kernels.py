"""Numba kernels of lifecycle attribution. Pure functions: arrays in, arrays out.

Time is int64 ns, intervals half-open ``[start, end)``. Inputs are validated by
:mod:`pau.lifecycle` before they get here; each kernel has a slow twin in
``tests/reference_lifecycle.py`` (the end-to-end replay, and per kernel for
:func:`record_codes`, :func:`scan_steps` and :func:`attribute_pass`).
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
        bounds = np.unique(bounds)
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
def expand_ranks(rank, attempt, m_ids, m_off, m_ranks):
    """Rows with rank -1 repeated for every member rank of their attempt.

    Attempt ``m_ids[j]`` (sorted) has the member ranks ``m_ranks[m_off[j]:m_off[j + 1]]``.
    Returns ``(src, rank, copy)``: the rows with a rank of their own first, in
    order, then the copies of each rank -1 row in row order and member order (a row
    of an attempt without members has none); ``src`` is the row each output row
    comes from and ``copy`` marks all copies but the first of a row.
    """
    n = rank.size
    total = 0
    for i in range(n):
        if rank[i] >= 0:
            total += 1
        else:
            p = np.searchsorted(m_ids, attempt[i])
            if p < m_ids.size and m_ids[p] == attempt[i]:
                total += m_off[p + 1] - m_off[p]
    src = np.empty(total, np.int64)
    out_rank = np.empty(total, np.int64)
    copy = np.zeros(total, np.bool_)
    k = 0
    for i in range(n):
        if rank[i] >= 0:
            src[k] = i
            out_rank[k] = rank[i]
            k += 1
    for i in range(n):
        if rank[i] < 0:
            p = np.searchsorted(m_ids, attempt[i])
            if p < m_ids.size and m_ids[p] == attempt[i]:
                for q in range(m_off[p], m_off[p + 1]):
                    src[k] = i
                    out_rank[k] = m_ranks[q]
                    copy[k] = q > m_off[p]
                    k += 1
    return src, out_rank, copy


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
        elif s < 0 or (e != null and e < 0) or (b != null and b < 0) or (d != null and d < 0):
            out[i] = 3
        elif e != null and e < s:
            out[i] = 4
        elif b != null and b < s:
            out[i] = 5
        elif d != null and d < s:
            out[i] = 6
        elif rank[i] < -1:
            out[i] = 7
        elif r != acc and attempt[i] == null:
            out[i] = 8
        elif needs_step[r] and step[i] == null:
            out[i] = 9
        elif r == acc and rank[i] < 0:
            out[i] = 10
    return out


@kernel
def expand_ordered(rank, attempt, start, m_ids, m_off, m_ranks, rank_lo, rank_lut, n_ranks, dense):
    """The visits of step rows in rank order: a row with a rank once, a row of rank
    -1 once per member rank of its attempt (as :func:`expand_ranks`, then sorted
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
# the one-pass path of attribution: record codes, a scan of the step columns,
# and steps labelled while they are layered (no step arrays written and read back)


@kernel
def record_codes(offsets, data, lut, names_offsets, names_data, step_code, key4, code4, out):
    """Code of each string of an Arrow string array (``offsets`` into ``data``): its
    index among the names (``names_offsets`` into ``names_data``), -1 if none.

    ``lut[length * 256 + first byte]`` is the one name a string can be (-1: none;
    lengths below 32), so each string is compared with at most one name; ``key4``
    (the 4 bytes of name ``code4`` as a little-endian uint32, or 0 if none) is tried
    first. Writes
    ``out`` and returns ``(count, first, last)`` of the rows whose code is
    ``step_code`` (first/last -1 when none). Null rows are the caller's to mark.
    """
    n = out.size
    cnt = 0
    first = -1
    last = -1
    for i in range(n):
        s = offsets[i]
        length = offsets[i + 1] - s
        code = -1
        if length == 4 and (np.uint32(data[s]) | (np.uint32(data[s + 1]) << 8) | (np.uint32(data[s + 2]) << 16)
                            | (np.uint32(data[s + 3]) << 24)) == key4:
            code = code4  # the bulk of a lifecycle: one comparison
        elif 0 < length < 32:
            c = lut[length * 256 + data[s]]
            if c >= 0:
                ns = names_offsets[c]
                code = c
                for b in range(1, length):
                    if data[s + b] != names_data[ns + b]:
                        code = -1
                        break
        out[i] = code
        if code == step_code:
            cnt += 1
            if first < 0:
                first = i
            last = i
    return cnt, first, last


@kernel
def runs_of_four(offsets):
    """Whether every string of an Arrow string array is 4 bytes long (its offsets
    step by 4): then its bytes are one run of 32-bit words."""
    for i in range(offsets.size - 1):
        if offsets[i + 1] - offsets[i] != 4:
            return False
    return True


_RANK_LIMIT = 1 << 24  # ranks counted in a presence table up to this value


@kernel
def scan_steps(start, end, rank, attempt, step, null, cut, att_lo, att_n, end_bits, end_off, end_out):
    """One pass over the step columns: what attribution needs before it can label.

    Returns ``(bad, after, max_start, max_end, ordered, neg_rank, step_min, rank_seen,
    rank_over, att_count, att_max_step, att_max_end, att_out)``:

    * ``bad``: rows that cannot be used (null or negative start, end before start,
      rank below -1, missing attempt or step); the other figures are only meaningful
      when it is 0.
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
        if s == null or s < 0 or (e != null and e < s) or r < -1 or a == null or k == null:
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
                   o_rank, o_start, o_end, o_state, o_att, o_step, att_ids, null,
                   r_rank, r_start, r_end, r_state, r_att, r_step, r_cause, v_att, v_step, v_cause):
    """Steps checked and labelled (:func:`steps_pass`) and layered in one pass, writing the output columns.

    The step rows are read where they are (``order`` visits them by rank and start;
    empty = already in order). A row of rank -1 runs on every member rank of its
    attempt: then ``order`` visits it once per rank, ``x_rank`` gives the rank of
    each visit (empty: the row's own rank) and ``x_copy`` marks the visits whose
    tokens do not count (all but one per row). Their dense rank and attempt come from the lookup
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
    ns = order.size if order.size else rank.size
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
                if not (x_copy.size and x_copy[j]):
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


@kernel
def state_cells(h_rank, h_window, h_mask, h_duration, w_state, act_of_mask, rank_lo, n_ranks, n_states, n_act):
    """The full ledger's cells: the sweep's histogram rows (rank, window, mask,
    duration) summed by (rank, state of the window, activity of the mask), in a
    dense int64 array indexed ``((rank - rank_lo) * n_states + state) * n_act +
    activity``. Rows outside every window (window -1) are not counted."""
    cells = np.zeros(n_ranks * n_states * n_act, np.int64)
    for i in range(h_rank.size):
        w = h_window[i]
        if w >= 0:
            c = ((np.int64(h_rank[i]) - rank_lo) * n_states + w_state[w]) * n_act + act_of_mask[h_mask[i]]
            cells[c] += h_duration[i]
    return cells


@kernel
def state_runs(rank, start, end, state):
    """The windows of the full ledger's sweep: runs of state intervals (sorted by
    rank and start) of one rank and one state that touch, as ``(rank, start, end,
    state)`` of each run."""
    n = rank.size
    w_rank = np.empty(n, np.int32)
    w_start = np.empty(n, np.int64)
    w_end = np.empty(n, np.int64)
    w_state = np.empty(n, np.int8)
    m = 0
    for i in range(n):
        if m > 0 and w_rank[m - 1] == rank[i] and w_state[m - 1] == state[i] and w_end[m - 1] == start[i]:
            w_end[m - 1] = end[i]
        else:
            w_rank[m] = rank[i]
            w_start[m] = start[i]
            w_end[m] = end[i]
            w_state[m] = state[i]
            m += 1
    return w_rank[:m], w_start[:m], w_end[:m], w_state[:m]
