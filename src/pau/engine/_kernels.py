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

The boundary with Python is narrow (``tests/test_boundary_numba.py``): a kernel takes at
most 8 positional parameters and returns no anonymous tuple of more than 3. Arrays
cross grouped in named tuples (:class:`StepRows`, :class:`Visits`, :class:`Attempts`,
:class:`Pieces`, :class:`PassOut`, ...), which Numba types as heterogeneous named tuples
and reads by field: passing one costs what passing its arrays does. Results come back
as named tuples too (:class:`Tally`, :class:`StepError`, :class:`StepLabels`). Inside,
the ``@helper`` functions (inlined) take scalars and small named tuples of scalars only:
an array passed to a helper, even an inlined one, costs a reference count per array
and call, which made the pass about 15x slower; the kernels read their arrays in their
own bodies.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pau import _core
from pau.engine._jit import helper, kernel
from pau.engine.vocab import STATES

#: Ranks spread wider than this pass through attribution as dense positions (a
#: lookup table by value would not fit): the set-up's ``kRankLutMax``.
RANK_LUT_MAX = 1 << 24
#: The greatest int64 (a cursor past every rank), as a constant the kernels fold in.
_DONE = 9223372036854775807
#: An index masked with this is known to be >= 0, so Numba's wraparound of negative
#: indices (a shift, an AND and a load of the shape per access) folds away.
_POS = 0x7FFFFFFFFFFFFFFF
#: The lifecycle's null time (the least int64: a missing end, no base, no membership).
_NULL = -9223372036854775808
#: The states a step takes (codes of vocab.STATES).
_PRODUCTIVE, _PENDING, _ROLLED_BACK = (STATES.index(k) for k in ("productive", "pending", "rolled_back"))


# ---------------------------------------------------------------------------
# What crosses into the kernels: named tuples of arrays (Numba types each as a
# heterogeneous named tuple and reads its fields by name; passing one costs what
# passing its arrays one by one does).


class Lut(NamedTuple):
    """Values to dense positions: ``table[value - lo]`` (-1: not a known value)."""

    lo: int
    table: np.ndarray


class Membership(NamedTuple):
    """The member ranks of attempt ``ids[p]`` (sorted ids): ``ranks[offsets[p]:offsets[p + 1]]``."""

    ids: np.ndarray
    offsets: np.ndarray
    ranks: np.ndarray


class StepRows(NamedTuple):
    """Step rows' columns as a pass reads them. For :func:`attribute_pass`, ``rank``
    and ``att`` are the table's values (through :class:`Lut`); for :func:`steps_pass`
    dense ranks and dense attempts."""

    rank: np.ndarray
    att: np.ndarray
    start: np.ndarray
    end: np.ndarray
    step: np.ndarray
    tokens: np.ndarray


class Visits(NamedTuple):
    """How a pass visits the step rows, in (rank, start) order."""

    order: np.ndarray      # the row of each visit; empty: the rows in order, one visit each
    rank: np.ndarray       # the rank of each visit (a row of rank -1 runs on each member rank); empty: the row's
    copy: np.ndarray       # visits whose tokens do not count (all but one per row); empty: none
    all_ranks: np.ndarray  # the rank of each dense rank when the pass makes the visits itself; empty: not so


class Attempts(NamedTuple):
    """What a pass needs per dense attempt ``a``; the membership interval of (a, dense
    rank r) is at ``m_row[a] + r`` of ``m_start``/``m_end`` (``_NULL``: not a member)."""

    lut: Lut                 # attempt ids to dense attempts
    ids: np.ndarray          # the id written for each dense attempt (int32)
    m_start: np.ndarray
    m_end: np.ndarray
    m_row: np.ndarray
    base: np.ndarray         # the lineage: steps (base, head] survive when ``on``
    head: np.ndarray
    on: np.ndarray
    pend: np.ndarray         # the last attempt of its job, still running: its steps are pending
    cause: np.ndarray        # the cause code of a rolled-back step (int16)
    pres_off: np.ndarray     # step k of attempt a is preserved-step mark k - pres_off[a]
    first_member: np.ndarray  # by rank (Visits.all_ranks): the dense rank that counts a row's tokens


class Pieces(NamedTuple):
    """Disjoint labelled pieces sorted by (rank, start) (from :func:`paint`): a layer."""

    rank: np.ndarray
    start: np.ndarray
    end: np.ndarray
    state: np.ndarray
    att: np.ndarray
    step: np.ndarray


class PassOut(NamedTuple):
    """The arrays :func:`attribute_pass` writes. The interval columns have capacity
    ``2 * (pieces + visits) + 1``; ``v_*`` are their Arrow validity bitmaps (bit set:
    valid; whole bytes written); ``acc_rank``/``acc_ns`` (capacity: background pieces,
    ``acc_ns`` zeroed) the ranks with accountable time and their ns; ``pres`` (zeroed,
    or empty: not counted) the marks of preserved step numbers."""

    rank: np.ndarray
    start: np.ndarray
    end: np.ndarray
    state: np.ndarray
    att: np.ndarray
    step: np.ndarray
    cause: np.ndarray
    v_att: np.ndarray
    v_step: np.ndarray
    v_cause: np.ndarray
    acc_rank: np.ndarray
    acc_ns: np.ndarray
    pres: np.ndarray


class Tally(NamedTuple):
    """What :func:`attribute_pass` counted: output rows, ranks with accountable time,
    the token sum and the distinct step numbers of productive steps."""

    pieces: int
    ranks: int
    tokens: int
    preserved: int


class StepError(NamedTuple):
    """The first step error in (rank, start) order: ``code`` 0 none, 1 not a member,
    2 starts outside the attempt, 3 overlaps the previous step (``other``), 4 step
    number does not increase (after ``other``); the row and the rank of the visit."""

    code: int
    row: int
    other: int
    rank: int


class StepLabels(NamedTuple):
    """Step executions checked, cut and labelled, in (rank, start) order."""

    rank: np.ndarray
    start: np.ndarray
    end: np.ndarray
    state: np.ndarray
    att: np.ndarray
    step: np.ndarray
    cause: np.ndarray


# Inside the kernels: what a step's (rank, attempt) decides, the steps a check
# remembers, the step under the cursor.
class _Run(NamedTuple):
    rank: int
    att_id: int
    rd: int     # dense rank
    a: int      # dense attempt
    ms: int     # membership interval [ms, me]
    me: int
    po: int     # pres_off[a]
    base: int
    head: int
    on: bool    # on the lineage, with a head
    pend: bool
    cause: int


class _Seen(NamedTuple):  # of the steps of this rank (a new rank starts from _NO_SEEN)
    p_row: int   # the previous step
    p_att: int
    p_step: int
    f_row: int   # the last non-empty step
    f_end: int


class _Cursor(NamedTuple):
    rank: int
    start: int
    end: int
    state: int
    att: int
    step: int
    cause: int


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


def dense_lut(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
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


def present(values: np.ndarray) -> np.ndarray:
    """Sorted unique non-negative values (bincount when the range is small)."""
    v = values[values >= 0] if (values < 0).any() else values
    if v.size == 0:
        return np.empty(0, np.int64)
    if int(v.max()) < 1 << 24:
        return np.flatnonzero(np.bincount(v)).astype(np.int64)
    return np.unique(v)


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
def _cut_step(s, e, me):
    """A step's end cut at its attempt's end on its rank (``me``): a step still in
    flight (no end) or one past the attempt is cut there and flagged in flight;
    never before its start. Returns ``(end, in_flight)``."""
    flight = e == _NULL or e > me
    if flight:
        e = me
    if e < s:
        e = s
    return e, flight


@helper
def _check(seen, q, i, s, e, sn):
    """The step check of row ``i`` (start ``s``, cut end ``e``, step number ``sn``)
    against its membership and the steps before it on its rank: ``(code, other row)``
    as :class:`StepError` names them."""
    if q.ms == _NULL:
        return 1, -1
    if s < q.ms or s > q.me:
        return 2, -1
    # Half-open: an empty step overlaps nothing, and it does not hide the
    # previous non-empty step from the next one.
    if e > s and seen.f_row >= 0 and s < seen.f_end:
        return 3, seen.f_row
    if seen.p_row >= 0 and seen.p_att == q.a and sn <= seen.p_step:
        return 4, seen.p_row
    return 0, -1


@helper
def _seen(seen, q, i, s, e, sn):
    """What the checks remember after row ``i`` passed them (on the same rank: the
    passes start each rank from :data:`_NO_SEEN`, so no rank is kept per step)."""
    if e > s:
        return _Seen(np.int64(i), q.a, np.int64(sn), np.int64(i), np.int64(e))
    return _Seen(np.int64(i), q.a, np.int64(sn), seen.f_row, seen.f_end)


@helper
def _label(q, s, e, sn, flight):
    """The step under the cursor: productive (a lineage step, done), pending (the
    last attempt still running) or rolled back (charged to its attempt's cause)."""
    if q.on and (q.base == _NULL or sn > q.base) and sn <= q.head and not flight:
        return _Cursor(q.rank, np.int64(s), np.int64(e), np.int64(_PRODUCTIVE), q.a, np.int64(sn), np.int64(-1))
    if q.pend:
        return _Cursor(q.rank, np.int64(s), np.int64(e), np.int64(_PENDING), q.a, np.int64(sn), np.int64(-1))
    return _Cursor(q.rank, np.int64(s), np.int64(e), np.int64(_ROLLED_BACK), q.a, np.int64(sn), q.cause)


@helper
def _run(rank, att_id, rd, a, ms, me, po, base, head, on, pend, cause):
    """What the steps of one (rank, attempt) share (:class:`_Run`), from its loads."""
    h = np.int64(head)
    return _Run(np.int64(rank), np.int64(att_id), np.int64(rd), np.int64(a), np.int64(ms), np.int64(me),
                np.int64(po), np.int64(base), h, on and h != _NULL, pend != 0, np.int64(cause))


_NO_SEEN = _Seen(-1, -1, 0, -1, 0)
_NO_RUN = _Run(-2, _NULL, 0, 0, _NULL, _NULL, 0, _NULL, _NULL, False, False, -1)  # no (rank, attempt) yet
_NO_CURSOR = _Cursor(-1, 0, 0, 0, 0, 0, -1)  # nothing loaded yet: the first turn loads visit 0


@kernel
def steps_pass(order, rows, atts, rank_values):
    """Check, cut and label step executions, in (rank, start) order (``order``;
    empty: the rows are in order), by the rules of :func:`attribute_pass`.
    ``rows.rank`` and ``rows.att`` are dense; the output's ranks are
    ``rank_values[dense rank]``. Returns ``(StepLabels, tokens of productive rows,
    StepError)``; after an error the labels stop before it.
    """
    n = order.size if order.size else rows.rank.size
    lab = StepLabels(np.empty(n, np.int32), np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int8),
                     np.empty(n, np.int32), np.empty(n, np.int64), np.empty(n, np.int16))
    tok = 0
    seen, q = _NO_SEEN, _NO_RUN
    code = 0
    bad = -1
    other = -1
    for j in range(n):
        i = order[j] if order.size else j
        r = np.int64(rows.rank[i])
        a = np.int64(rows.att[i])
        k = atts.m_row[a] + r
        seen = seen if r == q.rank else _NO_SEEN  # the rows come rank by rank
        q = _run(r, a, r, a, atts.m_start[k], atts.m_end[k], 0, atts.base[a], atts.head[a], atts.on[a], atts.pend[a],
                 atts.cause[a])
        s = rows.start[i]
        e, flight = _cut_step(s, rows.end[i], q.me)
        sn = rows.step[i]
        code, other = _check(seen, q, i, s, e, sn)
        if code:
            bad = i
            break
        seen = _seen(seen, q, i, s, e, sn)
        c = _label(q, s, e, sn, flight)
        if c.state == _PRODUCTIVE:
            tok += rows.tokens[i]
        lab.rank[j] = rank_values[q.rd]
        lab.start[j] = s
        lab.end[j] = e
        lab.state[j] = c.state
        lab.att[j] = q.a
        lab.step[j] = sn
        lab.cause[j] = c.cause
    return lab, tok, StepError(code, bad, other, rank_values[rows.rank[bad]] if code else -1)


@kernel
def expand_ordered(rank, attempt, start, members, ranks, n_ranks, dense):
    """The visits of step rows in rank order: a row with a rank once, a row of rank
    -1 once per member rank of its attempt (``members``; all but the first such visit
    a copy), sorted by dense rank, stably.

    Ranks map to dense ranks (below ``n_ranks``) through ``ranks`` (``dense``: ranks
    are dense already). Returns ``(Visits, ok)``: the row, the rank (dense if
    ``dense``) and whether it is a copy whose tokens do not count, of each visit; and
    whether the visits of each rank then come in non-decreasing start order (if not,
    the caller sorts them).
    """
    m_ids, m_off, m_ranks, rank_lo, rank_lut = members.ids, members.offsets, members.ranks, ranks.lo, ranks.table
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
    return Visits(row, out_rank, copy, np.empty(0, np.int64)), ok


@helper
def _layer(cur, o_here, o_start, o_end, r, t, be):
    """The top layer at (rank ``r``, ``t``) and until when: ``(end, layer)``, layer 2 the
    overlay piece (``o_here``: one of rank ``r`` not before ``t``), 1 the step under the
    cursor, 0 the background piece (which ends at ``be``)."""
    nxt = be
    in_s = False
    in_o = False
    if cur.rank == r:
        if cur.start <= t:
            in_s = True
            if cur.end < nxt:
                nxt = cur.end
        elif cur.start < nxt:
            nxt = cur.start
    if o_here:
        if o_start <= t:
            in_o = True
            if o_end < nxt:
                nxt = o_end
        elif o_start < nxt:
            nxt = o_start
    return nxt, 2 if in_o else 1 if in_s else 0


@helper
def _background(r, t, piece_rank, piece_start):
    """Where the layering stands on a new background piece: ``(rank, t, new rank)``."""
    if piece_rank != r:
        return piece_rank, piece_start, True
    return r, max(t, piece_start), False


@helper
def _valid(bits, bit, att, step, cause):
    """The validity bytes (attempt, step, cause) with ``bit`` set where each is valid."""
    ba, bs, bc = bits
    return ba | (bit if att else np.uint8(0)), bs | (bit if step else np.uint8(0)), bc | (bit if cause else np.uint8(0))


@kernel
def attribute_pass(back, over, rows, visits, ranks, atts, out):
    """Steps checked, cut and labelled (:func:`steps_pass`' rules) and layered in one
    pass, writing ``out`` (:class:`PassOut`); returns ``(Tally, StepError)`` (after an
    error the outputs are incomplete and the tally zero). The step rows are read where
    they are, in the order of ``visits`` (with ``all_ranks``: every row on every rank
    it is a member on, tokens counted on its attempt's ``first_member``), each checked
    when the layering reaches it, so no step array is written and read back. The output
    covers ``back``, labelled by the top layer (``over`` > step > ``back``); touching
    pieces of one row merge. Arrow counts the nulls from the bitmaps when asked.

    One flat loop, one output piece per turn; its helpers take scalars only (a helper
    taking arrays, even inlined, pays a reference count per array and call).
    """
    b_rank, b_start, b_end, b_state, b_att, b_step = back
    o_rank, o_start, o_end, o_state, o_att, o_step = over
    rank, att, start, end, step, tokens = rows
    order, x_rank, x_copy, all_ranks = visits
    _, att_ids, m_start, m_end, m_row, base, head, on, pend, cause, pres_off, first_member = atts
    r_rank, r_start, r_end, r_state, r_att, r_step, r_cause, v_att, v_step, v_cause, acc_rank, acc_ns, pres = out
    nb, no, n_rows = b_rank.size, o_rank.size, rank.size
    by_rank = all_ranks.size > 0
    ns = all_ranks.size * n_rows if by_rank else order.size if order.size else n_rows
    cur, q, seen = _NO_CURSOR, _NO_RUN, _NO_SEEN  # the step under the cursor, its (rank, attempt), the checks'
    j, vi, vd = -1, -1, 0  # the cursor's visit; by rank, its row vi on dense rank vd
    code, e_row, e_other, e_rank = 0, -1, -1, np.int64(-1)  # the first step error
    tok, npres, m, nr, jo = 0, 0, 0, 0, 0  # tokens, preserved steps, output pieces, ranks, overlay piece
    last_layer, last_row, last_rank, last_end = -1, -1, np.int64(-1), np.int64(0)  # the last output piece
    bits = (np.uint8(0), np.uint8(0), np.uint8(0))
    ib, r, t, be = -1, np.int64(-1), np.int64(0), np.int64(0)  # background piece ib ends at be; on rank r at t
    b_sv, b_av, b_pv = np.int64(0), np.int64(-1), np.int64(_NULL)  # its state, attempt and step
    while True:
        # Move the cursor past steps before (r, t); with r = _DONE, past all.
        while cur.rank < r or (cur.rank == r and cur.rank != _DONE and cur.end <= t):
            j += 1
            if j >= ns:
                cur = _Cursor(np.int64(_DONE), cur.start, cur.end, cur.state, cur.att, cur.step, cur.cause)
                break
            if by_rank:
                vi, vd = (0, vd + 1) if vi + 1 == n_rows else (vi + 1, vd)
                i, rv = vi & _POS, np.int64(all_ranks[vd & _POS])
            else:
                i = (order[j & _POS] if order.size else j) & _POS
                rv = np.int64(x_rank[j & _POS]) if x_rank.size else np.int64(rank[i])
            ra = np.int64(att[i])
            if rv != q.rank or ra != q.att_id:  # what the step's (rank, attempt) decides, once per run
                rd, a = ranks.table[rv - ranks.lo], atts.lut.table[ra - atts.lut.lo]
                seen = seen if rv == q.rank else _NO_SEEN  # the visits come rank by rank
                k = m_row[a] + rd
                q = _run(rv, ra, rd, a, m_start[k], m_end[k], pres_off[a] if pres.size else 0, base[a], head[a], on[a],
                         pend[a], cause[a])
            if q.ms == _NULL and by_rank:
                continue  # not a member rank of this row's attempt: no visit
            s, sn = start[i], step[i]
            e, flight = _cut_step(s, end[i], q.me)
            code, e_other = _check(seen, q, i, s, e, sn)
            if code:
                e_row, e_rank = i, rv
                break
            seen = _seen(seen, q, i, s, e, sn)
            cur = _label(q, s, e, sn, flight)
            if cur.state == _PRODUCTIVE:
                if not ((x_copy.size and x_copy[j & _POS]) or (by_rank and q.rd != first_member[q.a])):
                    tok += tokens[i]
                if pres.size and pres[sn - q.po] == 0:
                    pres[sn - q.po] = 1
                    npres += 1
        if code or ib >= nb:
            break
        while jo < no and (o_rank[jo & _POS] < r or (o_rank[jo & _POS] == r and o_end[jo & _POS] <= t)):
            jo += 1
        if t < be:
            jp = jo & _POS
            o_here = jo < no and o_rank[jp] == r
            nxt, lay = _layer(cur, o_here, o_start[jp] if o_here else 0, o_end[jp] if o_here else 0, r, t, be)
            row = jo if lay == 2 else j if lay == 1 else ib
            if last_layer == lay and last_row == row and last_end == t and last_rank == r:
                r_end[(m - 1) & _POS] = nxt  # touching pieces of one row merge
            else:
                mu, ro = m & _POS, row & _POS
                if lay == 2:
                    sv, av, pv, cv = np.int64(o_state[ro]), np.int64(o_att[ro]), np.int64(o_step[ro]), np.int64(-1)
                elif lay == 1:
                    sv, av, pv, cv = cur.state, cur.att, cur.step, cur.cause
                else:
                    sv, av, pv, cv = b_sv, b_av, b_pv, np.int64(-1)
                r_rank[mu], r_start[mu], r_end[mu], r_state[mu] = r, t, nxt, sv
                r_att[mu] = att_ids[av] if av >= 0 else 0
                r_step[mu] = pv
                r_cause[mu] = cv if cv >= 0 else 0
                bits = _valid(bits, np.uint8(1 << (m & 7)), av >= 0, pv != _NULL, cv >= 0)
                if m & 7 == 7:  # validity bits gather in a byte, stored when it is full
                    v_att[mu >> 3], v_step[mu >> 3], v_cause[mu >> 3] = bits
                    bits = (np.uint8(0), np.uint8(0), np.uint8(0))
                last_layer, last_row, last_rank = lay, row, r
                m += 1
            last_end, t = nxt, nxt
        if t >= be:  # the next background piece, maybe of the next rank
            ib += 1
            if ib < nb:
                ip = ib & _POS
                r, t, new = _background(r, t, np.int64(b_rank[ip]), np.int64(b_start[ip]))
                if new:
                    acc_rank[nr & _POS] = r
                    nr += 1
                be = np.int64(b_end[ip])
                b_sv, b_av, b_pv = np.int64(b_state[ip]), np.int64(b_att[ip]), np.int64(b_step[ip])
                if be > t:
                    acc_ns[(nr - 1) & _POS] += be - t
            else:
                r, t = np.int64(_DONE), np.int64(_DONE)  # check the steps the layering never reached
    if m & 7:
        v_att[m >> 3], v_step[m >> 3], v_cause[m >> 3] = bits
    if code:  # the outputs are incomplete: none
        m, nr, tok, npres = 0, 0, 0, 0
    return Tally(m, nr, tok, npres), StepError(code, e_row, e_other, e_rank)
