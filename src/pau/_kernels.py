"""Numba kernels of lifecycle attribution. Pure functions: arrays in, arrays out.

Time is int64 ns, intervals half-open ``[start, end)``. Inputs are validated by
:mod:`pau.lifecycle` before they get here; each kernel has a slow twin in
``tests/reference.py``.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel


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
def _rank_runs(rank):
    """Start offsets of runs of equal rank (rank sorted), plus the end."""
    n = rank.size
    cnt = 1 if n > 0 else 0
    for i in range(1, n):
        if rank[i] != rank[i - 1]:
            cnt += 1
    off = np.empty(cnt + 1, np.int64)
    c = 0
    for i in range(n):
        if i == 0 or rank[i] != rank[i - 1]:
            off[c] = i
            c += 1
    off[cnt] = n
    return off


@kernel
def layer(b_rank, b_start, b_end, b_state, b_att, b_step, b_cause,
          s_rank, s_start, s_end, s_state, s_att, s_step, s_cause,
          o_rank, o_start, o_end, o_state, o_att, o_step, o_cause, att_ids, null):
    """Stack three layers of disjoint labelled intervals, each sorted by (rank, start).

    ``b`` (background) covers the accounted time; ``s`` (steps) lies above it and
    ``o`` (overlay) above both. Labels per interval: state (int8), attempt (dense
    index, -1 = none), step (``null`` = none), cause (-1 = none). Returns the
    maximal pieces of b's coverage labelled by the top layer there, as output
    columns: rank, start, end, state, attempt id, step, cause, and the null masks
    of the last three; then the accountable time per rank (ranks, ns). Parts of s
    and o outside b are not returned.
    """
    nb, ns, no = b_rank.size, s_rank.size, o_rank.size
    cap = 2 * (nb + ns + no) + 1
    r_rank = np.empty(cap, np.int32)
    r_start = np.empty(cap, np.int64)
    r_end = np.empty(cap, np.int64)
    r_state = np.empty(cap, np.int8)
    r_att = np.empty(cap, np.int32)
    r_step = np.empty(cap, np.int64)
    r_cause = np.empty(cap, np.int16)
    n_att = np.empty(cap, np.bool_)
    n_step = np.empty(cap, np.bool_)
    n_cause = np.empty(cap, np.bool_)
    acc_rank = np.empty(nb, np.int32)  # accountable time per rank, ranks in order
    acc_ns = np.zeros(nb, np.int64)
    nr = 0
    m = 0
    js = 0
    jo = 0
    ib = 0
    last_layer = -1
    last_row = -1
    while ib < nb:
        r = b_rank[ib]
        while js < ns and s_rank[js] < r:
            js += 1
        while jo < no and o_rank[jo] < r:
            jo += 1
        t = b_start[ib]
        acc_rank[nr] = r
        nr += 1
        while ib < nb and b_rank[ib] == r:
            if t < b_start[ib]:
                t = b_start[ib]
            be = b_end[ib]
            if be > t:
                acc_ns[nr - 1] += be - t
            while t < be:
                while js < ns and s_rank[js] == r and s_end[js] <= t:
                    js += 1
                while jo < no and o_rank[jo] == r and o_end[jo] <= t:
                    jo += 1
                nxt = be
                in_s = False
                in_o = False
                if js < ns and s_rank[js] == r:
                    if s_start[js] <= t:
                        in_s = True
                        if s_end[js] < nxt:
                            nxt = s_end[js]
                    elif s_start[js] < nxt:
                        nxt = s_start[js]
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
                    lay, row = 1, js
                else:
                    lay, row = 0, ib
                if m > 0 and last_layer == lay and last_row == row and r_end[m - 1] == t and r_rank[m - 1] == r:
                    r_end[m - 1] = nxt
                else:
                    if lay == 2:
                        st, a, sp, c = o_state[row], o_att[row], o_step[row], o_cause[row]
                    elif lay == 1:
                        st, a, sp, c = s_state[row], s_att[row], s_step[row], s_cause[row]
                    else:
                        st, a, sp, c = b_state[row], b_att[row], b_step[row], b_cause[row]
                    r_rank[m] = r
                    r_start[m] = t
                    r_end[m] = nxt
                    r_state[m] = st
                    n_att[m] = a < 0
                    r_att[m] = att_ids[a] if a >= 0 else 0
                    n_step[m] = sp == null
                    r_step[m] = sp
                    n_cause[m] = c < 0
                    r_cause[m] = c if c >= 0 else 0
                    last_layer = lay
                    last_row = row
                    m += 1
                t = nxt
            ib += 1
    return (r_rank[:m], r_start[:m], r_end[:m], r_state[:m], r_att[:m], r_step[:m], r_cause[:m],
            n_att[:m], n_step[:m], n_cause[:m], acc_rank[:nr], acc_ns[:nr])


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
        e = end[i]
        flight = e == null or e > me
        if flight:
            e = me
        if e < s:
            e = s
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
def count_bad_steps(start, end, rank, attempt, step, null):
    """Step rows that cannot be used: null or negative start, end before start, rank
    below -1, missing attempt or step. One pass; the caller explains them."""
    bad = 0
    for i in range(start.size):
        s = start[i]
        e = end[i]
        if (s == null or s < 0 or (e != null and e < s) or rank[i] < -1
                or attempt[i] == null or step[i] == null):
            bad += 1
    return bad


@kernel
def lut_map(values, lo, lut):
    """``lut[v - lo]`` per value, -1 outside the table."""
    out = np.empty(values.size, np.int64)
    n = lut.size
    for i in range(values.size):
        v = values[i] - lo
        out[i] = lut[v] if 0 <= v < n else -1
    return out


@kernel
def ordered(rdense, start):
    """Whether rows already come by (dense rank, start)."""
    for i in range(1, rdense.size):
        if rdense[i] < rdense[i - 1] or (rdense[i] == rdense[i - 1] and start[i] < start[i - 1]):
            return False
    return True
