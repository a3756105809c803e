"""Numba kernels of :mod:`pau.economics`. Pure functions: arrays in, arrays out.

Time is int64 ns, intervals half-open ``[start, end)``. Inputs are validated by
:mod:`pau.economics` before they get here; each kernel has a slow twin in
``tests/reference_econ.py``.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel

# Largest total weight in flight the attribution accepts: with S <= MAX_WEIGHT every
# product r * w (r < S, w <= S) fits in int64, and so does the tie-break key
# rem * 2**31 + row (rem < S < 2**32, row < 2**31).
MAX_WEIGHT = 3_037_000_499
MAX_REQUESTS = 2**31 - 1


@kernel
def attribute_busy(p_rep, p_start, p_end, p_w, p_req, b_rep, b_start, b_end):
    """Apportion busy time to the request phases in flight, exactly.

    ``p_*``: phases (one request phase each: replica code, start, end, integer
    weight, request row), sorted by (replica, start). ``b_*``: busy intervals,
    sorted by (replica, start). Each busy interval is cut at the phase boundaries
    of its replica that fall inside it, and each piece of length ``L`` is split among the phases in flight in proportion to their
    weights by largest remainder: phase ``i`` gets ``floor(L*w_i/S)``, and the
    ``L - sum floor`` ns left go one each to the largest remainders ``L*w_i mod S``
    (ties: lower request row). When every phase in flight has weight 0 they share
    equally. A segment with no phase in flight is idle.

    Returns ``(p_attr, b_idle, ok)``: ns per phase, idle ns per busy interval, and
    ``ok = False`` if a segment's total weight exceeded :data:`MAX_WEIGHT` (the
    outputs are then incomplete).
    """
    n_p = p_rep.size
    n_b = b_rep.size
    p_attr = np.zeros(n_p, np.int64)
    b_idle = np.zeros(n_b, np.int64)
    pa = 0
    ba = 0
    while ba < n_b:
        rep = b_rep[ba]
        bb = ba
        while bb < n_b and b_rep[bb] == rep:
            bb += 1
        # phases of this replica (both sorted by replica code)
        while pa < n_p and p_rep[pa] < rep:
            pa += 1
        pb = pa
        while pb < n_p and p_rep[pb] == rep:
            pb += 1
        k_p = pb - pa
        k_b = bb - ba
        times = np.empty(2 * (k_p + k_b), np.int64)
        for j in range(k_p):
            times[2 * j] = p_start[pa + j]
            times[2 * j + 1] = p_end[pa + j]
        for j in range(k_b):
            times[2 * k_p + 2 * j] = b_start[ba + j]
            times[2 * k_p + 2 * j + 1] = b_end[ba + j]
        pbounds = np.unique(times[: 2 * k_p])
        times = np.unique(times)
        act_p = np.empty(max(k_p, 1), np.int64)
        act_b = np.empty(max(k_b, 1), np.int64)
        acc = np.zeros(max(k_b, 1), np.int64)  # length of each busy row since its last cut
        na = 0
        nb = 0
        pi = pa
        bi = ba
        pk = 0
        share = np.empty(max(k_p, 1), np.int64)
        key = np.empty(max(k_p, 1), np.int64)
        for k in range(times.size):
            t0 = times[k]
            while pk < pbounds.size and pbounds[pk] < t0:
                pk += 1
            cut = pk < pbounds.size and pbounds[pk] == t0
            # Flush the runs that end here with the phases that were in flight
            # during them: every busy row at a phase boundary, a busy row at its end.
            for j in range(nb):
                bj = act_b[j]
                if acc[bj - ba] == 0 or not (cut or b_end[bj] <= t0):
                    continue
                length = acc[bj - ba]
                acc[bj - ba] = 0
                if na == 0:
                    b_idle[bj] += length
                    continue
                s = 0
                for i in range(na):
                    s += p_w[act_p[i]]
                    if s > MAX_WEIGHT:
                        return p_attr, b_idle, False
                equal = s == 0
                if equal:
                    s = na
                q = length // s
                r = length % s
                given = 0
                for i in range(na):
                    w = 1 if equal else p_w[act_p[i]]
                    prod = r * w
                    share[i] = q * w + prod // s
                    given += share[i]
                    # larger remainder first, then lower request row
                    key[i] = -((prod % s) * 2147483648 + (2147483647 - p_req[act_p[i]]))
                left = length - given
                if left > 0:
                    order = np.argsort(key[:na])
                    for i in range(left):
                        share[order[i]] += 1
                for i in range(na):
                    p_attr[act_p[i]] += share[i]
            j = 0
            while j < na:
                if p_end[act_p[j]] <= t0:
                    na -= 1
                    act_p[j] = act_p[na]
                else:
                    j += 1
            j = 0
            while j < nb:
                if b_end[act_b[j]] <= t0:
                    nb -= 1
                    act_b[j] = act_b[nb]
                else:
                    j += 1
            while pi < pb and p_start[pi] <= t0:
                if p_end[pi] > t0:
                    act_p[na] = pi
                    na += 1
                pi += 1
            while bi < bb and b_start[bi] <= t0:
                if b_end[bi] > t0:
                    act_b[nb] = bi
                    nb += 1
                bi += 1
            if k + 1 < times.size:
                for j in range(nb):
                    acc[act_b[j] - ba] += times[k + 1] - t0
        ba = bb
    return p_attr, b_idle, True


@kernel
def checkpoint_runs(tau, delta, restart, mtbf, segments, runs, seed):
    """Monte Carlo of a run of ``segments`` checkpoint intervals under Poisson failures.

    Each segment is ``tau`` s of work then a ``delta`` s checkpoint and must run
    ``tau + delta`` without a failure; a failure loses the segment so far and is
    followed by a restart of ``restart`` s, which a failure also interrupts (and
    restarts). Failures are exponential with mean ``mtbf``. Returns the wall time
    (s) of each of ``runs`` runs.
    """
    np.random.seed(seed)
    out = np.empty(runs, np.float64)
    seg = tau + delta
    for r in range(runs):
        total = 0.0
        for _ in range(segments):
            while True:
                x = np.random.exponential(mtbf)
                if x >= seg:
                    total += seg
                    break
                total += x
                while True:
                    y = np.random.exponential(mtbf)
                    if y >= restart:
                        total += restart
                        break
                    total += y
        out[r] = total
    return out
