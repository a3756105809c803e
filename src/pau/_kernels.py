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
def layer(b_rank, b_start, b_end, s_rank, s_start, s_end, o_rank, o_start, o_end):
    """Stack three layers of disjoint intervals, each sorted by (rank, start).

    ``b`` (background) covers the accounted time; ``s`` (steps) lies above it and
    ``o`` (overlay) above both. Returns ``(rank, start, end, layer, row)`` of the
    maximal pieces of b's coverage labelled by the top layer there (0 = b, 1 = s,
    2 = o); parts of s and o outside b are not returned.
    """
    nb, ns, no = b_rank.size, s_rank.size, o_rank.size
    cap = 2 * (nb + ns + no) + 1
    r_rank = np.empty(cap, np.int32)
    r_start = np.empty(cap, np.int64)
    r_end = np.empty(cap, np.int64)
    r_layer = np.empty(cap, np.int8)
    r_row = np.empty(cap, np.int64)
    m = 0
    js = 0
    jo = 0
    ib = 0
    while ib < nb:
        r = b_rank[ib]
        # bring the other layers to rank r
        while js < ns and s_rank[js] < r:
            js += 1
        while jo < no and o_rank[jo] < r:
            jo += 1
        t = b_start[ib]
        while ib < nb and b_rank[ib] == r:
            if t < b_start[ib]:
                t = b_start[ib]
            be = b_end[ib]
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
                if (m > 0 and r_layer[m - 1] == lay and r_row[m - 1] == row
                        and r_end[m - 1] == t and r_rank[m - 1] == r):
                    r_end[m - 1] = nxt
                else:
                    r_rank[m] = r
                    r_start[m] = t
                    r_end[m] = nxt
                    r_layer[m] = lay
                    r_row[m] = row
                    m += 1
                t = nxt
            ib += 1
    return r_rank[:m], r_start[:m], r_end[:m], r_layer[:m], r_row[:m]
