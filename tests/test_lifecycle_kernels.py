"""The kernels of the one-pass lifecycle attribution against their slow twins in
tests/reference_lifecycle.py, on generated inputs (the end-to-end replay in
test_lifecycle_properties.py covers their composition)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
import reference_lifecycle as ref
import reference_setup as ref_setup
from depth import examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from lifecycle_cases import S, steps_for_all_ranks, table
from test_lifecycle_properties import with_as_of

from pau import _core, core, synth
from pau.engine import _jit, _kernels, _lifecycle as lifecycle
from pau.errors import InvalidRowError

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
NULL = lifecycle.NULL

# --------------------------------------------------------------------------- record codes

near = st.sampled_from(["step", "stepp", "ste", "stap", "Step", "restore", "restorf", "failure", "attempt",
                        "attemps", "phase", "checkpoint_save", "checkpoint_savE", "accountable", "", "s",
                        "ѕtep", "a" * 40])
words = st.one_of(st.sampled_from(lifecycle.RECORDS), near, st.text(max_size=8), st.none())


def _record_codes(col) -> tuple[list, int, int]:
    """Record codes of a column as the native reader gives them (after the layout
    conversion), with the count and first row of the steps."""
    n = len(col)
    t = lifecycle._native_layout(pa.table({"record": col, "start_ns": pa.array(np.zeros(n, np.int64))}))
    x, n_step, first, steps = lifecycle._native_rows(t)
    codes = np.full(n, lifecycle.RECORDS.index("step"), np.int64)
    codes[x.row] = x.rec
    return codes.tolist(), n_step, first


@settings(max_examples=examples(300), **SETTINGS)
@given(values=st.lists(words, max_size=40), cuts=st.lists(st.integers(0, 40), max_size=3),
       large=st.booleans(), dictionary=st.booleans(), start=st.integers(0, 3))
def test_record_codes_match_the_reference(values, cuts, large, dictionary, start):
    """Chunked, sliced, string, large_string or dictionary: codes and where the steps are."""
    typ = pa.large_string() if large else pa.string()
    arr = pa.array(["x"] * start + values, typ).slice(start)  # a non-zero offset
    bounds = sorted({min(c, len(values)) for c in cuts} | {0, len(values)})
    col = pa.chunked_array([arr.slice(a, b - a) for a, b in zip(bounds, bounds[1:])] or [arr], typ)
    if dictionary:
        col = col.dictionary_encode()
    codes, count, first = _record_codes(col)
    want = ref.record_codes(values, lifecycle.RECORDS)
    assert codes == want
    steps = [i for i, c in enumerate(want) if c == lifecycle.RECORDS.index("step")]
    assert (count, first) == (len(steps), steps[0] if steps else -1)


# --------------------------------------------------------------------------- scan of the steps

small = st.integers(-3, 6)
maybe_null = st.one_of(st.just(NULL), st.integers(-2, 30))


def _scan_tuple(sc) -> tuple:
    """A StepScan's figures in the order the checks below read them."""
    return (sc.bad, sc.after, sc.max_start, sc.max_end, sc.ordered, sc.neg_rank, sc.step_min, sc.rank_seen,
            sc.rank_over, sc.att_count, sc.att_max_step, sc.att_max_end, sc.att_out)


@settings(max_examples=examples(300), **SETTINGS)
@given(rows=st.lists(st.tuples(maybe_null, maybe_null, small, st.one_of(st.just(NULL), small),
                               st.one_of(st.just(NULL), st.integers(-5, 9)), st.integers(-2, 5)), max_size=30),
       cut=st.integers(0, 30), att_lo=st.integers(-2, 3), att_n=st.integers(0, 5),
       big_rank=st.booleans(), int32=st.booleans())
def test_scan_steps_matches_the_reference(rows, cut, att_lo, att_n, big_rank, int32):
    start, end, rank, attempt, step, tokens = (np.array([r[k] for r in rows], np.int64) for k in range(6))
    if big_rank and rows:
        rank[0] = 5000  # the presence table grows
    if int32:
        rank, attempt = rank.astype(np.int32), np.where(attempt == NULL, 0, attempt).astype(np.int32)
    no_bits = np.zeros(0, np.uint8)
    got = _scan_tuple(_core.scan_steps(start, end, rank, attempt, step, tokens, cut=cut, att_lo=att_lo, att_n=att_n,
                                       end_bits=no_bits, end_off=0, end_out=np.zeros(0, np.int64)))
    codes = _core.step_codes(start, end, rank, attempt, step, tokens)
    assert [None if c == 0 else lifecycle._STEP_CHECKS[c - 1] for c in codes.tolist()] == [
        ref.step_reason(*(int(v) for v in r), NULL) for r in zip(start, end, rank, attempt, step, tokens)]
    # The same with end's nulls read from an Arrow validity bitmap (at an offset), filled on the way.
    arr = pa.array([0] + [None if e == NULL else int(e) for e in end.tolist()], pa.int64()).slice(1)
    validity, data = arr.buffers()[:2]
    bits = np.frombuffer(validity, np.uint8) if validity is not None else np.full(len(arr) // 8 + 2, 255, np.uint8)
    filled = np.full(end.size, 7, np.int64)
    got_bits = _scan_tuple(_core.scan_steps(start, np.frombuffer(data, np.int64, end.size, 8), rank, attempt, step,
                                            tokens, cut=cut, att_lo=att_lo, att_n=att_n, end_bits=bits,
                                            end_off=arr.offset, end_out=filled))
    assert filled.tolist() == end.tolist()
    assert all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b for a, b in zip(got, got_bits))
    want = ref.scan_steps(start.tolist(), end.tolist(), rank.tolist(), attempt.tolist(), step.tolist(),
                          tokens.tolist(), NULL,
                          cut, att_lo, att_n)
    (bad, after, max_start, max_end, ordered, neg_rank, step_min, rank_seen, rank_over,
     att_count, att_max_step, att_max_end, att_out) = got
    assert bad == want["bad"]
    assert (after, max_start, max_end, ordered, neg_rank, step_min) == (
        want["after"], want["max_start"], want["max_end"], want["ordered"], want["neg_rank"], want["step_min"])
    assert np.flatnonzero(rank_seen).tolist() == want["ranks"] and rank_over == 0
    assert att_out == want["att_out"]
    assert {att_lo + j: (int(att_count[j]), int(att_max_step[j]), int(att_max_end[j])) for j in range(att_n)} \
        == want["att"]


# --------------------------------------------------------------------------- nulls filled

INT = {pa.int64(): np.int64, pa.int32(): np.int32}
fills = st.sampled_from([NULL, -1, 0, 7])


@st.composite
def int_arrays(draw):
    """An int64 or int32 Arrow array, sliced out of a longer one (so often at a
    non-zero offset, and with a validity bitmap even where it has no null itself):
    some nulls, none, or all null; possibly empty."""
    typ = draw(st.sampled_from(list(INT)))
    info = np.iinfo(INT[typ])
    ints = st.one_of(st.integers(-3, 9), st.sampled_from([int(info.min), int(info.max)]),
                     st.integers(int(info.min), int(info.max)))
    value = draw(st.sampled_from([st.one_of(st.none(), ints), ints, st.none()]))
    head, body, tail = (draw(st.lists(value, max_size=k)) for k in (20, 40, 5))
    return pa.array(head + body + tail, typ).slice(len(head), len(body))


@settings(max_examples=examples(300), **SETTINGS)
@given(arr=int_arrays(), fill=fills)
def test_fill_nulls_matches_the_reference(arr, fill):
    dt = INT[arr.type]
    validity, data = arr.buffers()[:2]
    values = np.frombuffer(data, dt, len(arr), arr.offset * np.dtype(dt).itemsize)
    if validity is None:  # no null in the whole array: Arrow leaves the bitmap out
        assert arr.null_count == 0
        bits = np.full((arr.offset + len(arr) + 7) // 8, 0xFF, np.uint8)
    else:
        bits = np.frombuffer(validity, np.uint8)
    out = np.full(len(arr), 12345, np.int64)
    _core.fill_nulls(values, bits, arr.offset, fill, out)
    assert out.tolist() == ref.fill_nulls(arr.to_pylist(), fill)


@settings(max_examples=examples(200), **SETTINGS)
@given(arr=int_arrays(), fill=fills)
def test_num_array_fills_nulls_like_the_reference(arr, fill):
    got = lifecycle._num_array(arr, "start_ns", fill)
    assert got.dtype == np.int64
    assert got.tolist() == ref.fill_nulls(arr.to_pylist(), fill)


# --------------------------------------------------------------------------- rank -1 expanded

att_id = st.one_of(st.integers(-2, 6), st.just(2**40))


@settings(max_examples=examples(300), **SETTINGS)
@given(pairs=st.lists(st.tuples(att_id, st.integers(0, 7)), unique=True, max_size=20),
       rows=st.lists(st.tuples(st.integers(-1, 5), st.one_of(att_id, st.integers(7, 9), st.just(NULL))),
                     max_size=30),
       int32=st.booleans())
def test_members_are_laid_out_as_documented(pairs, rows, int32):
    """Members from (attempt, rank) pairs; the reference expansion of rows of rank -1
    or their own, of attempts with members or not (absent, null), reads them."""
    m = lifecycle._Members.of(np.array([a for a, _ in pairs], np.int64), np.array([r for _, r in pairs], np.int64))
    # laid out as documented: each attempt once, sorted, with its ranks sorted
    assert m.ids.tolist() == sorted({a for a, _ in pairs})
    assert m.offsets.tolist()[:1] == [0] and m.offsets.size == m.ids.size + 1
    assert [m.ranks[m.offsets[j]:m.offsets[j + 1]].tolist() for j in range(m.ids.size)] == \
        [sorted(r for b, r in pairs if b == a) for a in m.ids.tolist()]
    rank = np.array([r for r, _ in rows], np.int32 if int32 else np.int64)  # step ranks may be int32
    attempt = np.array([a for _, a in rows], np.int64)
    src, out_rank, copy = ref.expand_ranks(rank.tolist(), attempt.tolist(), m.ids.tolist(), m.offsets.tolist(),
                                           m.ranks.tolist())
    assert [out_rank[k] for k in range(len(src)) if rows[src[k]][0] >= 0] == [r for r, _ in rows if r >= 0]
    # a row of rank -1 becomes one row per member rank of its attempt
    assert all(out_rank[k] in {r for a, r in pairs if a == rows[src[k]][1]}
               for k in range(len(src)) if rows[src[k]][0] < 0)



# --------------------------------------------------------------------------- rank -1 expanded in rank order


@st.composite
def ordered_case(draw):
    """Step rows of rank -1 or their own, of attempts with members or not (absent,
    null); ranks from a small set, maybe one far off, some known but never visited;
    starts in row order or not."""
    pool = draw(st.lists(st.integers(0, 6), unique=True, max_size=4)) + draw(st.sampled_from([[], [1000]]))
    pairs = draw(st.lists(st.tuples(att_id, st.sampled_from(pool)), unique=True, max_size=15)) if pool else []
    n = draw(st.integers(0, 25))
    rank = draw(st.lists(st.sampled_from([-1] + pool), min_size=n, max_size=n))
    attempt = draw(st.lists(st.one_of(att_id, st.integers(7, 9), st.just(NULL)), min_size=n, max_size=n))
    start = draw(st.lists(st.integers(0, draw(st.sampled_from([2, 30]))), min_size=n, max_size=n))
    if draw(st.booleans()):
        start.sort()
    idle = draw(st.lists(st.integers(0, 8), max_size=2))  # known ranks without a visit
    return pairs, rank, attempt, start, sorted({r for r in rank if r >= 0} | {r for _, r in pairs} | set(idle))


@settings(max_examples=examples(300), **SETTINGS)
@given(case=ordered_case(), int32=st.booleans())
def test_expand_ordered_matches_the_reference(case, int32):
    """As lifecycle calls it: ranks through the lookup table, or dense already."""
    pairs, rank, attempt, start, rank_values = case
    m = lifecycle._Members.of(np.array([a for a, _ in pairs], np.int64), np.array([r for _, r in pairs], np.int64))
    n_ranks = max(len(rank_values), 1)
    rank_lo = rank_values[0] if rank_values else 0
    lut = [-1] * (rank_values[-1] - rank_lo + 1 if rank_values else 1)
    for d, v in enumerate(rank_values):
        lut[v - rank_lo] = d
    rank_lut = np.array(lut, np.int64)
    dt = np.int32 if int32 else np.int64
    attempt, start = np.array(attempt, np.int64), np.array(start, np.int64)

    got = _kernels.expand_ordered(np.array(rank, dt), attempt, start, _kernels.Membership(m.ids, m.offsets, m.ranks),
                                  _kernels.Lut(rank_lo, rank_lut), n_ranks, False)
    want = ref.expand_ordered(rank, attempt.tolist(), start.tolist(), m.ids.tolist(), m.offsets.tolist(),
                              m.ranks.tolist(), rank_lo, lut, False)
    (row, out_rank, copy, _), ok = got
    assert (row.tolist(), out_rank.tolist(), copy.tolist(), bool(ok)) == want
    # the visits are those of expand_ranks, reordered
    assert sorted(zip(row.tolist(), out_rank.tolist(), copy.tolist())) == \
        sorted(zip(*ref.expand_ranks(rank, attempt.tolist(), m.ids.tolist(), m.offsets.tolist(), m.ranks.tolist())))

    # dense: the caller maps rank (>= 0) and member ranks to dense ranks itself
    d_rank = [lut[r - rank_lo] if r >= 0 else r for r in rank]
    d_members = [lut[r - rank_lo] for r in m.ranks.tolist()]
    (row, out_rank, copy, _), ok = _kernels.expand_ordered(
        np.array(d_rank, dt), attempt, start, _kernels.Membership(m.ids, m.offsets, np.array(d_members, np.int64)),
        _kernels.Lut(0, np.arange(n_ranks, dtype=np.int64)), n_ranks, True)
    d_want = ref.expand_ordered(d_rank, attempt.tolist(), start.tolist(), m.ids.tolist(), m.offsets.tolist(),
                                d_members, 0, list(range(n_ranks)), True)
    assert (row.tolist(), out_rank.tolist(), copy.tolist(), bool(ok)) == d_want
    assert d_want == (want[0], [lut[r - rank_lo] for r in want[1]], want[2], want[3])


def test_expand_ordered_examples():
    """By hand: rank 5 (dense 1) and rank 2 (dense 0); attempt 1 has ranks 2 and 5,
    attempt 3 none."""
    m = lifecycle._Members.of(np.array([1, 1], np.int64), np.array([5, 2], np.int64))
    lut = np.array([0, -1, -1, 1], np.int64)  # ranks 2..5

    def run(rank, attempt, start):
        (row, out_rank, copy, _), ok = _kernels.expand_ordered(
            np.array(rank, np.int64), np.array(attempt, np.int64), np.array(start, np.int64),
            _kernels.Membership(m.ids, m.offsets, m.ranks), _kernels.Lut(2, lut), 2, False)
        return row.tolist(), out_rank.tolist(), copy.tolist(), bool(ok)

    assert run([], [], []) == ([], [], [], True)
    assert run([-1], [3], [0]) == ([], [], [], True)
    #            row 0 rank 5, row 1 rank -1 of attempt 1, row 2 rank 2, row 3 rank -1 of attempt 3
    assert run([5, -1, 2, -1], [1, 1, 1, 3], [0, 1, 2, 3]) == \
        ([1, 2, 0, 1], [2, 2, 5, 5], [False, False, False, True], True)
    assert run([5, -1, 2, -1], [1, 1, 1, 3], [0, 3, 2, 3]) == \
        ([1, 2, 0, 1], [2, 2, 5, 5], [False, False, False, True], False)  # rank 2: starts 3 then 2


# --------------------------------------------------------------------------- ledger cells

BIG = 2**57  # 30 rows of up to this sum below 2**62: the int64 cells are exact


@st.composite
def cells_case(draw):
    """State runs (the exact way's windows) and a histogram over them: each run's
    time split into rows of random masks, as the sweep gives it, plus rows outside
    every window."""
    n_ranks, n_states, n_act = draw(st.integers(1, 4)), draw(st.integers(1, 14)), draw(st.integers(1, 8))
    idle = draw(st.integers(0, n_act - 1))
    act_of_mask = draw(st.lists(st.integers(0, n_act - 1), min_size=64, max_size=64))
    act_of_mask[0] = idle
    runs, rows, t = [], [], 0
    for p in range(n_ranks):
        for _ in range(draw(st.integers(0, 3))):
            t += draw(st.integers(0, 5))  # a gap (not accountable) or none
            parts = draw(st.lists(st.tuples(st.integers(0, 63), st.one_of(st.integers(0, 20), st.integers(0, BIG))),
                                  min_size=1, max_size=4))
            w = len(runs)
            state = draw(st.integers(0, n_states - 1))  # a run may touch one of its state: they merge
            length = sum(d for _, d in parts)
            runs.append((p, t, t + length, state))
            rows += [(p, w, m, d) for m, d in parts]
            t += length
        t = 0
    rows += [(draw(st.integers(0, n_ranks - 1)), -1, m, d)
             for m, d in draw(st.lists(st.tuples(st.integers(0, 63), st.integers(0, 20)), max_size=3))]
    return runs, rows, act_of_mask, idle, n_ranks, n_states, n_act


@settings(max_examples=examples(300), **SETTINGS)
@given(case=cells_case())
@example(case=([(0, 0, 2**62, 2), (0, 2**62, 2**63 - 1, 1)], [(0, 0, 5, 2**62), (0, 1, 5, 2**62 - 1), (0, -1, 5, 3)],
               [1] + [0] * 63, 1, 1, 3, 2))  # cells of 2**62 and 2**62 - 1 exactly, a row outside every window
@example(case=([], [], [0] * 64, 0, 1, 1, 1))
def test_crossed_cells_over_the_state_runs_match_the_reference(case):
    """The exact way of the full ledger: the sweep's windows are the state runs, and
    crossed_cells sums the histogram by (rank, state of the run, activity), as
    ref.state_cells does with every row (idle rows included)."""
    runs, rows, act_of_mask, idle, n_ranks, n_states, n_act = case
    ranks = np.arange(n_ranks, dtype=np.int32)
    w = [np.array([r[k] for r in runs], dt) for k, dt in enumerate((np.int32, np.int64, np.int64, np.int8))]
    h = [np.array([r[k] for r in rows], dt) for k, dt in enumerate((np.int32, np.int64, np.uint8, np.int64))]
    ok, cells = _core.crossed_cells(*h, w_start=w[1], w_end=w[2], ranks=ranks, i_rank=w[0], i_start=w[1], i_end=w[2],
                                    i_state=w[3], act_of_mask=np.array(act_of_mask, np.int8), idle=idle,
                                    n_states=n_states, n_act=n_act)
    got = (cells.rank, cells.state, cells.activity, cells.duration)
    want = ref.state_cells([r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows],
                           [r[0] for r in runs], [r[3] for r in runs], act_of_mask, n_ranks, n_states, n_act)
    assert ok
    assert [c.dtype for c in got] == [np.int32, np.int8, np.int8, np.int64]
    assert list(zip(*(c.tolist() for c in got))) == ref.tidy_cells(want, ranks, n_states, n_act)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_ledger_cells_match_classify_by_state_interval(seed):
    """The ledger of events and a lifecycle (with rank -1 rows) equals, per (rank,
    state, activity), the activity time of classify with each state interval as a
    window and each rank's span from its first to its last interval."""
    job = synth.training_job(ranks=3, steps=40, seed=seed, mtbf_s=15, checkpoint_every=5, kernels_per_step=4,
                             buckets=1)
    assert -1 in job.lifecycle["rank"].to_pylist()  # steps of rank -1: expand_ordered runs
    iv = core.attribute(job.lifecycle).to_pylist()
    windows = pa.table({"rank": pa.array([x["rank"] for x in iv], pa.int32()),
                        "start_ns": pa.array([x["start_ns"] for x in iv], pa.int64()),
                        "end_ns": pa.array([x["end_ns"] for x in iv], pa.int64()),
                        "window": pa.array(range(len(iv)), pa.int64())})
    first, last = {}, {}
    for x in iv:
        first.setdefault(x["rank"], x["start_ns"])
        last[x["rank"]] = x["end_ns"]
    span = pa.table({"rank": pa.array(list(first), pa.int32()), "start_ns": pa.array(list(first.values()), pa.int64()),
                     "end_ns": pa.array([last[r] for r in first], pa.int64())})
    want = {}
    for r in core.classify(job.events, windows=windows, span=span).to_pylist():
        if r["window"] is None or r["duration_ns"] == 0:
            continue
        x = iv[r["window"]]
        assert x["rank"] == r["rank"]
        key = (r["rank"], x["state"], r["activity"])
        want[key] = want.get(key, 0) + r["duration_ns"]
    got = {}
    for r in core.ledger(job.events, job.lifecycle).table.to_pylist():
        key = (r["rank"], r["state"], r["activity"])
        assert key not in got
        got[key] = r["duration_ns"]
    assert 0 not in got.values()
    assert got == want
    assert len({s for _, s, _ in got}) > 3


# --------------------------------------------------------------------------- checks of one row

when = st.one_of(st.just(NULL), st.integers(-3, 12), st.integers(0, 12), st.sampled_from([NULL + 1, 2**63 - 1]))
maybe = st.one_of(st.just(NULL), st.integers(-3, 9), st.integers(0, 9))


def check_rows(rows):
    """Kernel and twin on ``(rec, start, end, block_end, durable, rank, attempt, step)``
    rows, called as ``lifecycle._row_codes`` calls the kernel; the codes."""
    rec = np.array([r[0] for r in rows], np.int8)
    cols = [np.array([r[k] for r in rows], np.int64) for k in range(1, 8)]
    got = _core.row_checks(rec, *cols, acc=lifecycle._ACC, needs_step=lifecycle._NEEDS_STEP)
    want = ref.row_checks(rec.tolist(), *(c.tolist() for c in cols), NULL, lifecycle._ACC,
                          lifecycle._NEEDS_STEP.tolist())
    want = [0 if w is None else 1 + lifecycle._ROW_CHECKS.index(w) for w in want]
    assert got.dtype == np.int8
    assert got.tolist() == want
    return want


@st.composite
def check_row(draw):
    """A row that is often usable, or has one problem or several: the other times
    are often null or near the start."""
    start = draw(st.one_of(st.integers(0, 12), when))
    near = when if start == NULL else st.integers(-1, 4).map(lambda d: min(start + d, 2**63 - 1))
    end, block, durable = (draw(st.one_of(st.just(NULL), near, when)) for _ in range(3))
    rank = draw(st.one_of(st.integers(-1, 5), st.just(-1), st.integers(-3, -2), st.just(NULL)))
    return (draw(st.integers(-1, 6)), start, end, block, durable, rank, draw(maybe), draw(maybe))


@settings(max_examples=examples(300), **SETTINGS)
@given(rows=st.lists(check_row(), max_size=40))
def test_row_checks_match_the_reference(rows):
    check_rows(rows)


def test_row_checks_give_every_code():
    """One row per outcome, in the order of _ROW_CHECKS (0: a usable row)."""
    acc, att, step, ckpt = lifecycle._ACC, lifecycle._ATT, lifecycle._STEP, lifecycle._CKPT
    N = NULL
    rows = [
        (step, 0, 5, N, N, 0, 1, 3),        # 0 usable
        (-1, N, -1, -1, -1, -5, N, N),      # 1 unknown record (before everything else)
        (step, N, -1, N, N, 0, 1, 3),       # 2 null start
        (att, -9, -3, N, N, 0, 1, N),       # 0: negative times are times
        (step, 4, 3, N, N, 0, 1, 3),        # 3 end before start
        (att, 0, -1, N, N, 0, 1, N),        # 3 end before start (a negative end)
        (ckpt, 4, 4, 3, 9, 0, 1, 3),        # 4 block end before start
        (ckpt, 4, N, 5, 3, 0, 1, 3),        # 5 durable before start
        (step, 4, 5, N, N, -2, N, N),       # 6 rank below -1
        (att, 4, 5, N, N, -1, N, N),        # 7 missing attempt
        (ckpt, 4, 5, 5, 5, 0, 1, N),        # 8 missing step
        (acc, 4, 5, N, N, -1, N, N),        # 9 accountable without a rank
        (acc, 4, N, N, N, 0, N, N),         # 0: accountable rows need no attempt
        (lifecycle._FAIL, 0, N, N, N, -1, 2, N),  # 0: failures need no step
    ]
    assert check_rows(rows) == [0, 1, 2, 0, 3, 3, 4, 5, 6, 7, 8, 9, 0, 0]
    assert check_rows([]) == []


# --------------------------------------------------------------------------- painting


@st.composite
def paint_case(draw):
    """Labelled intervals on a few ranks: disjoint ones (the fast path), touching,
    nested, equal and empty ones, and levels that tie."""
    n = draw(st.integers(0, 14))
    rank = np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), np.int32)
    if draw(st.booleans()):  # back to back per rank, maybe with gaps: no overlap
        start, end, t = [], [], {}
        for r in rank.tolist():
            s = t.get(r, 0) + draw(st.integers(0, 3))
            e = s + draw(st.integers(0, 4))
            start.append(s)
            end.append(e)
            t[r] = e
    else:
        start = draw(st.lists(st.integers(0, 12), min_size=n, max_size=n))
        end = [s + draw(st.integers(0, 6)) for s in start]
    level = np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), np.int8)
    return rank, np.array(start, np.int64), np.array(end, np.int64), level


@settings(max_examples=examples(400), **SETTINGS)
@given(case=paint_case())
def test_paint_matches_the_reference(case):
    rank, start, end, level = case
    order = np.lexsort((start, rank))
    got = _kernels.paint(rank, start, end, level, order)
    want = ref.paint(rank, start, end, level, order)
    assert list(zip(*(c.tolist() for c in got))) == want


def test_paint_fast_path_needs_every_earlier_interval_to_end():
    """An empty interval between two that overlap does not hide the overlap."""
    rank = np.zeros(3, np.int32)
    start, end = np.array([0, 5, 7], np.int64), np.array([10, 5, 12], np.int64)
    level = np.zeros(3, np.int8)
    got = _kernels.paint(rank, start, end, level, np.arange(3))
    assert list(zip(*(c.tolist() for c in got))) == [(0, 0, 7, 0), (0, 7, 12, 2)]


@settings(max_examples=examples(300), **SETTINGS)
@given(pieces=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(0, 3), st.integers(0, 2)),
                       max_size=30))
def test_state_runs_match_the_reference(pieces):
    """Intervals sorted by (rank, start), disjoint within a rank, touching or not."""
    rank, start, end, state, t = [], [], [], [], {}
    for r, gap, length, k in sorted(pieces, key=lambda p: p[0]):
        s = t.get(r, 0) + gap
        rank.append(r)
        start.append(s)
        end.append(s + length)
        state.append(k)
        t[r] = s + length
    cols = (np.array(rank, np.int32), np.array(start, np.int64), np.array(end, np.int64), np.array(state, np.int8))
    runs = _core.state_runs(*cols)
    got = (runs.rank, runs.start, runs.end, runs.state)
    assert list(zip(*(c.tolist() for c in got))) == ref.state_runs(*cols)


# --------------------------------------------------------------------------- the one pass


def _bits(valid, m):
    return np.unpackbits(valid[:(m + 7) // 8], bitorder="little")[:m].astype(bool) if m else np.zeros(0, bool)


def check_pass(t, as_of):
    """Run attribution with a spy on attribute_pass; compare each call with the twin."""
    calls = []
    real = _kernels.attribute_pass

    def spy(*a):
        a = list(a)
        a[6] = a[6]._replace(pres=a[6].pres.copy())  # out.pres: the kernel marks it
        res = real(*a)
        calls.append((a, res))
        return res

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_kernels, "attribute_pass", spy)
        try:
            lifecycle.attribute_rows(t, as_of=as_of)
        except lifecycle.InvalidLifecycleError:
            pass
    states = np.array([lifecycle.S[k] for k in ("productive", "pending", "rolled_back")], np.int8)
    for a, res in calls:
        back, over, rows, visits, ranks, atts, out = a
        want = ref.attribute_pass(tuple(back), visits.order, *rows, visits.rank, visits.copy, ranks.lo, ranks.table,
                                  atts.lut.lo, atts.lut.table, atts.m_start, atts.m_end, atts.m_row, atts.base,
                                  atts.head, atts.on, atts.pend, atts.cause, states, out.pres.size > 0, tuple(over),
                                  atts.ids, lifecycle.NULL, visits.all_ranks, atts.first_member)
        tally, error = res
        m, nr, tok, npres = tally
        if "error" in want:
            assert tuple(error) == want["error"]
            continue
        assert error.code == 0
        r_rank, r_start, r_end, r_state, r_att, r_step, r_cause, v_att, v_step, v_cause = out[:10]
        acc_rank, acc_ns = out.acc_rank[:nr], out.acc_ns[:nr]
        ka, ks, kc = _bits(v_att, m), _bits(v_step, m), _bits(v_cause, m)
        got = [(int(r_rank[i]), int(r_start[i]), int(r_end[i]), int(r_state[i]),
                int(r_att[i]) if ka[i] else None, int(r_step[i]) if ks[i] else None,
                int(r_cause[i]) if kc[i] else None) for i in range(m)]
        assert got == want["pieces"]
        assert list(zip(acc_rank.tolist(), acc_ns.tolist())) == want["acc"]
        assert (tok, npres) == (want["tokens"], want["preserved"])
    return calls


@settings(max_examples=examples(200), **SETTINGS)
@given(case=with_as_of(), shuffle=st.randoms(use_true_random=False))
def test_attribute_pass_matches_the_reference(case, shuffle):
    rows, as_of = case
    rows = list(rows)
    shuffle.shuffle(rows)  # steps out of (rank, start) order: the pass visits them through `order`
    assert check_pass(table(rows), None if as_of is None else as_of * S)


def test_attribute_pass_reports_step_errors_like_the_reference():
    from lifecycle_cases import example_a
    t = example_a()
    recs = t["record"].to_pylist()
    si = [i for i, r in enumerate(recs) if r == "step"]

    def setv(col, i, v):
        vals = t[col].to_pylist()
        vals[i] = v
        return t.set_column(t.schema.get_field_index(col), col, pa.array(vals, t.schema.field(col).type))

    for bad in (setv("start_ns", si[2], t["start_ns"][si[1]].as_py() + 1),  # overlap
                setv("step", si[2], 1),                                    # step numbers go down
                setv("rank", si[3], 5)):                                   # not a member
        calls = check_pass(bad, None)
        assert calls and calls[-1][1][1].code != 0


# --------------------------------------------------------------------------- the set-up and the lineage

def _same(a, b, what):
    if isinstance(a, tuple):
        assert len(a) == len(b), what
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{what}[{i}]")
    elif isinstance(a, np.ndarray):
        assert a.dtype == np.asarray(b).dtype or a.dtype.kind == "O", (what, a.dtype, np.asarray(b).dtype)
        assert a.tolist() == np.asarray(b).tolist(), what
    else:
        assert a == b, (what, a, b)


def setups_compared(t, as_of=None, ranks=None, monkeypatch=None):
    """Attribute `t`, with each set-up of the pass (``lifecycle._setup``: the native
    set-up and the lineage kernel) checked field by field against its numpy twin
    (``reference_setup.setup``) on the same inputs, the relational errors found
    included; returns how many set-ups were made without an error."""
    made = []
    real = lifecycle._setup

    def both(x, st_, sc, as_of_, ranks_, strict):
        got = real(x, st_, sc, as_of_, ranks_, strict)
        want_strict: list = []
        want = ref_setup.setup(x, st_, sc, as_of_, ranks_, want_strict)
        assert [tuple(int(v) if isinstance(v, np.integer) else v for v in p) for p in want_strict] == strict
        if got is None:
            assert want is None
            return None
        made.append(1)
        for f in ("rank_values", "dense", "r_lo", "rank_lut", "att_lo", "att_lut", "rank_src", "m_start", "m_end",
                  "m_row", "b_cols", "o_cols", "acc_min", "lineage_ckpts", "job_att", "wall"):
            _same(getattr(got, f), getattr(want, f), f)
        for part, fields in (("A", ("ids", "start", "end", "running", "cause", "failures", "completed")),
                             ("C", ("attempt", "step", "durable", "ok")),
                             ("L", ("base", "head", "on", "last")), ("members", ("ids", "offsets", "ranks"))):
            for f in fields:
                _same(getattr(getattr(got, part), f), getattr(getattr(want, part), f), f"{part}.{f}")
        return got

    monkeypatch.setattr(lifecycle, "_setup", both)
    try:
        lifecycle.attribute_rows(t, as_of=as_of, ranks=ranks)
    finally:
        monkeypatch.undo()
    return len(made)


@settings(max_examples=examples(300), **SETTINGS)
@given(case=with_as_of(), shuffle=st.randoms(use_true_random=False), extra=st.booleans())
def test_setup_matches_its_numpy_twin(case, shuffle, extra):
    """Every generated (valid) lifecycle, in any row order, with or without extra
    ranks, gets exactly the numpy twin's set-up."""
    rows, as_of = case
    rows = list(rows)
    shuffle.shuffle(rows)
    mp = pytest.MonkeyPatch()
    assert setups_compared(table(rows), None if as_of is None else as_of * S,
                           ranks=[0, 7] if extra else None, monkeypatch=mp) == 1


def _edit(t: pa.Table, change) -> pa.Table:
    return pa.Table.from_pylist([change(dict(r)) for r in t.to_pylist()], schema=t.schema)


@pytest.mark.parametrize("case, message", [
    (lambda r: dict(r, step=99) if r["record"] == "restore" else r, "no ok checkpoint of step 99"),
    (lambda r: dict(r, attempt=7) if r["record"] == "phase" and r["attempt"] == 2 else r,
     "attempt 7 has no attempt record"),
    (lambda r: dict(r, attempt=8) if r["record"] == "step" and r["step"] == 10 else r,
     "attempt 8 has no attempt record"),
    (lambda r: dict(r, start_ns=r["start_ns"] - 20 * S) if r["record"] == "restore" else r,
     "outside attempt 2 on rank 0"),
    (lambda r: dict(r, rank=3) if r["record"] == "checkpoint_save" and r["step"] == 5 else r,
     "rank 3 is not a member of attempt 1"),
    # issue 19's lifecycle contradictions: a failure after its attempt ended (it was
    # counted, changing MTBF), one before its attempt began (the restore row was named),
    # attempts that overlap on a rank
    (lambda r: dict(r, start_ns=106 * S) if r["record"] == "failure" else r,
     "failure at 106000000000, after attempt 1 ended"),
    (lambda r: dict(r, attempt=2) if r["record"] == "failure" else r,
     "failure at 105000000000, before attempt 2 started"),
    (lambda r: dict(r, start_ns=100 * S) if r["record"] == "attempt" and r["attempt"] == 2 else r,
     "attempt 2 starts on rank 0 at 100000000000, before attempt 1 ended there"),
])
def test_setup_names_relational_errors_as_its_twin(case, message):
    """Rows that contradict others: the kernel reports them, the same rows and
    reasons as the numpy twin, raised or set aside."""
    from lifecycle_cases import example_a

    bad = _edit(example_a(), case)
    mp = pytest.MonkeyPatch()
    with pytest.raises(lifecycle.InvalidLifecycleError, match=message):
        setups_compared(bad, monkeypatch=mp)
    q = lifecycle.attribute_rows(bad, on_invalid="quarantine").quarantine
    assert q.num_rows >= 1 and any(message in r for r in q["reason"].to_pylist())


def test_negative_tokens_are_refused():
    from lifecycle_cases import example_a

    bad = _edit(example_a(), lambda r: dict(r, tokens=-50) if r["record"] == "step" and r["step"] == 3 else r)
    with pytest.raises(InvalidRowError, match="column 'tokens', row 5: negative tokens"):
        lifecycle.attribute_rows(bad)
    q = lifecycle.attribute_rows(bad, on_invalid="quarantine").quarantine
    assert q["reason"].to_pylist() == ["negative tokens"]


def test_setup_without_attempts_lays_out_accountable_time():
    t = table([dict(record="accountable", rank=0, start=0, end=10), dict(record="accountable", rank=2, start=5,
                                                                           end=20)])
    assert setups_compared(t, monkeypatch=pytest.MonkeyPatch()) == 1
    iv = lifecycle.attribute_rows(t).intervals
    assert iv.select(["rank", "start_ns", "end_ns"]).to_pylist() == [
        {"rank": 0, "start_ns": 0, "end_ns": 10 * S}, {"rank": 2, "start_ns": 5 * S, "end_ns": 20 * S}]
    assert set(iv["state"].to_pylist()) == {"recovery.outage"}


def test_setup_lays_out_far_ranks_spread_ids_and_large_steps():
    """Ranks 2**30 apart pass as dense positions; attempt ids too spread for a
    lookup table and checkpoint steps beyond 2**40 are kept by value."""
    from lifecycle_cases import example_a

    t = example_a()
    rows = t.to_pylist()
    mp = pytest.MonkeyPatch()
    assert setups_compared(t, monkeypatch=mp) == 1
    far = pa.Table.from_pylist(rows + [dict(rows[0], rank=1 << 30)], schema=t.schema)
    assert setups_compared(far, monkeypatch=mp) == 1
    iv = lifecycle.attribute_rows(far).intervals
    assert sorted(set(iv["rank"].to_pylist())) == [0, 1 << 30]
    spread = _edit(t, lambda r: dict(r, attempt=(1 << 30) if r["attempt"] == 2 else r["attempt"]))
    assert setups_compared(spread, monkeypatch=mp) == 1
    base = core.ledger(lifecycle=t).summary()
    assert core.ledger(lifecycle=spread).summary()["goodput"] == base["goodput"]
    big = _edit(t, lambda r: dict(r, step=r["step"] + (1 << 41)) if r["step"] is not None else r)
    assert setups_compared(big, monkeypatch=mp) == 1
    assert core.ledger(lifecycle=big).summary()["goodput"] == base["goodput"]


@settings(max_examples=examples(300), **SETTINGS)
@given(rows=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 6)), max_size=60), lo=st.integers(-3, 3),
       backwards=st.booleans())
def test_by_rank_start_is_a_stable_lexsort(rows, lo, backwards):
    """Counting sort, then a merge sort of the ranks whose rows are out of time
    order: numpy's lexsort((start, rank)), ties in row order."""
    if backwards:
        rows = sorted(rows, key=lambda r: -r[1])
    rank = np.array([r[0] + lo for r in rows], np.int64)
    start = np.array([r[1] for r in rows], np.int64)
    rank_lut = np.array([0, -1, 1, 2, 3, 4], np.int64)  # ranks lo + {0, 2, 3, 4, 5}: one skipped
    rank = np.where(rank == lo + 1, lo, rank)
    rank = np.where(rank > lo, rank + 1, rank)
    got = _core.by_rank_start(rank, start, lo, rank_lut, 5)
    assert got.tolist() == np.lexsort((start, rank)).tolist()


@settings(max_examples=examples(200), **SETTINGS)
@given(case=with_as_of())
def test_attribute_pass_by_rank_matches_the_reference(case):
    """Step rows of rank -1 in start order: the pass's own visits (``all_ranks``)
    against the twin, errors included."""
    rows, as_of = case
    conv = steps_for_all_ranks(rows)
    calls = check_pass(table(conv), None if as_of is None else as_of * S)
    if calls and any(r["record"] == "step" and (as_of is None or r["start"] <= as_of) for r in conv):
        assert calls[0][0][3].all_ranks.size > 0  # visits.all_ranks: the pass made the visits


# --------------------------------------------------------------------------- the native reader

KIND_WORDS = st.one_of(st.sampled_from(lifecycle.PHASE_KINDS + lifecycle.ATTEMPT_KINDS), st.sampled_from(["oom", ""]),
                       st.none())


@st.composite
def lifecycle_tables(draw):
    """A lifecycle table of any record mix, column types, nulls, absent columns,
    batches and offsets; and whether an int64 id lies outside int32."""
    n = draw(st.integers(0, 24))
    recs = draw(st.lists(st.one_of(st.sampled_from(lifecycle.RECORDS), st.sampled_from(["stap", "steps", ""]),
                                   st.none()), min_size=n, max_size=n))
    if draw(st.booleans()):  # the steps in one run, in the middle
        steps = [r for r in recs if r == "step"]
        other = [r for r in recs if r != "step"]
        at = draw(st.integers(0, len(other)))
        recs = other[:at] + steps + other[at:]

    def values(lo, hi):
        return draw(st.lists(st.one_of(st.integers(lo, hi), st.none()), min_size=n, max_size=n))

    cols, far = {"record": pa.array(recs, pa.string())}, False
    for name in ("attempt", "rank", "step", "tokens"):
        if name != "attempt" and draw(st.integers(0, 4)) == 0:
            continue  # absent
        typ = draw(st.sampled_from([pa.int32(), pa.int64()]))
        v = values(-2, 6)
        if typ == pa.int64() and name in ("attempt", "rank") and n and draw(st.integers(0, 9)) == 0:
            v[draw(st.integers(0, n - 1))] = 1 << 33
            far = True
        cols[name] = pa.array(v, typ)
    for name in ("start_ns", "end_ns", "block_end_ns", "durable_ns"):
        if name != "start_ns" and draw(st.integers(0, 4)) == 0:
            continue
        typ = draw(st.sampled_from([pa.int64(), pa.timestamp("ns"), pa.timestamp("ns", tz="UTC")]))
        cols[name] = pa.array(values(-1, 100), pa.int64()).cast(typ)
    if draw(st.booleans()):
        cols["ok"] = pa.array(draw(st.lists(st.one_of(st.booleans(), st.none()), min_size=n, max_size=n)), pa.bool_())
    if draw(st.booleans()):
        cols["kind"] = pa.array(draw(st.lists(KIND_WORDS, min_size=n, max_size=n)), pa.string())
    t = pa.table(cols)
    skip = draw(st.integers(0, min(3, n)))  # a non-zero offset
    t = t.slice(skip)
    cuts = sorted({draw(st.integers(0, t.num_rows)) for _ in range(draw(st.integers(0, 3)))})
    bounds = [0] + cuts + [t.num_rows]
    batches = [b for a, z in zip(bounds, bounds[1:]) for b in t.slice(a, z - a).to_batches()]
    return pa.Table.from_batches(batches, t.schema), far


def _steps_lists(st_) -> list:
    """A _Steps' columns as int64 lists (end's nulls filled as the first scan does)."""
    end = np.asarray(st_.end, np.int64)
    if st_.end_src is not None:
        raw, bits, off = st_.end_src
        valid = np.unpackbits(bits, bitorder="little")[off:off + raw.size].astype(bool)
        end = np.where(valid, raw, NULL)
    return [list(st_.row), *(np.asarray(c, np.int64).tolist() for c in (st_.attempt, st_.rank, st_.start)),
            end.tolist(), *(np.asarray(c, np.int64).tolist() for c in (st_.step, st_.tokens))]


@settings(max_examples=examples(400), **SETTINGS)
@given(case=lifecycle_tables())
def test_native_rows_match_the_reference(case):
    """The native reader (csrc/core/life_rows.hpp), after the layout conversion, gives
    the rows other than steps and the step rows as its twin in
    tests/reference_lifecycle.py reads them row by row; an int64 id outside int32 is
    refused by the conversion, naming the column and row."""
    t, _ = case
    far = any(v is not None and not -2**31 <= v < 2**31 for name in ("attempt", "rank")
              if name in t.column_names for v in t.column(name).to_pylist())
    if far:  # an id that survived the slicing lies outside int32
        with pytest.raises(InvalidRowError, match="attempt|rank"):
            lifecycle._native_layout(t)
        return
    t = lifecycle._native_layout(t)
    native = lifecycle._native_rows(t)
    assert native is not None
    x, n_step, first, steps = native
    other, ref_steps = ref.lifecycle_rows(t, lifecycle.RECORDS, lifecycle._KINDED, NULL)
    for f, col in other.items():  # the reference, row by row
        assert getattr(x, f).tolist() == col, f
    assert n_step == len(ref_steps["row"]) and first == (ref_steps["row"][0] if n_step else -1)
    if steps is None:  # one run of step rows: read in place, as the attribution does
        assert n_step == 0 or ref_steps["row"][-1] - first + 1 == n_step
        steps = lifecycle._read_step_range(t, max(first, 0), n_step)
    else:
        steps = lifecycle._Steps(*steps)
    assert _steps_lists(steps) == [ref_steps[k] for k in ("row", "attempt", "rank", "start", "end", "step",
                                                          "tokens")]


@pytest.mark.parametrize("change", [
    lambda t: t.set_column(0, "record", t["record"].dictionary_encode()),
    lambda t: t.set_column(t.schema.get_field_index("end_ns"), "end_ns", t["end_ns"].cast(pa.uint64())),
    lambda t: t.set_column(t.schema.get_field_index("rank"), "rank", t["rank"].cast(pa.int16())),
    lambda t: t.set_column(t.schema.get_field_index("kind"), "kind", t["kind"].cast(pa.large_string())),
])
def test_other_layouts_are_converted_for_the_native_reader(change):
    """A layout the native reader does not read is converted to one it does, and gives
    the same attribution."""
    job = synth.training_job(ranks=2, steps=40, seed=3, mtbf_s=20, checkpoint_every=10)
    t = change(job.lifecycle)
    assert lifecycle._native_rows(t) is None
    assert lifecycle._native_rows(lifecycle._native_layout(t)) is not None
    got = lifecycle.attribute_rows(t).intervals
    assert got.equals(lifecycle.attribute_rows(job.lifecycle).intervals)


# --------------------------------------------------------------------------- the first compile

_ATTRIBUTE_TWICE = """
import pau.core as pc
from lifecycle_cases import example_a
iv = pc.attribute(example_a())
assert iv.equals(pc.attribute(example_a()))
print(iv.num_rows)
"""


def _fresh_process(env: dict) -> subprocess.CompletedProcess:
    """`_ATTRIBUTE_TWICE` in a new Python process with `env` over this one's (None
    values: unset), the tests folder on its path."""
    full = {k: v for k, v in os.environ.items() if k not in env}
    full.update({k: v for k, v in env.items() if v is not None})
    full["PYTHONPATH"] = os.pathsep.join([str(pathlib.Path(__file__).parent), full.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", _ATTRIBUTE_TWICE], env=full, capture_output=True, text=True,
                          timeout=300)


def test_first_compile_announces_itself_once_and_goes_where_it_can_be_written(tmp_path):
    """With an empty NUMBA_CACHE_DIR the first compile of a process says so in one
    line on stderr naming the directory it caches into, and a later process loads
    the kernels from there without a word. With the package directory not writable
    (only Numba's user-wide locator left) the kernels are cached in the user's cache
    directory; with nothing writable they compile in every process, and say so."""
    cache = tmp_path / "cache"
    cache.mkdir()
    cold = _fresh_process({"NUMBA_CACHE_DIR": str(cache)})
    assert cold.returncode == 0, cold.stderr
    assert cold.stdout.strip() == "20"  # example_a's 20 intervals
    lines = cold.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pau: compiling its Numba kernels for first use")
    assert str(cache) in lines[0]
    assert any(p.suffix == ".nbi" for p in cache.rglob("*"))  # Numba's cache index files
    warm = _fresh_process({"NUMBA_CACHE_DIR": str(cache)})
    assert (warm.returncode, warm.stdout.strip(), warm.stderr) == (0, "20", "")

    user = tmp_path / "user"
    read_only = _fresh_process({"NUMBA_CACHE_DIR": None, "NUMBA_CACHE_LOCATOR_CLASSES": "UserWideCacheLocator",
                                "XDG_CACHE_HOME": str(user)})
    assert read_only.returncode == 0, read_only.stderr
    assert read_only.stderr.count("\n") == 1 and str(user / "numba") in read_only.stderr
    nowhere = _fresh_process({"NUMBA_CACHE_DIR": None, "NUMBA_CACHE_LOCATOR_CLASSES": "ZipCacheLocator"})
    assert nowhere.returncode == 0, nowhere.stderr
    assert nowhere.stdout.strip() == "20"
    assert nowhere.stderr.count("\n") == 1 and "no writable cache directory" in nowhere.stderr


def test_the_announcement_names_the_cache():
    assert "/x/cache" in _jit.announcement("/x/cache") and "NUMBA_CACHE_DIR" in _jit.announcement("/x/cache")
    assert "every process compiles them" in _jit.announcement(None)
