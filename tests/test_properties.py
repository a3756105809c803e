"""Property tests: pau.core against the slow reference (tests/reference.py), exactly.

Timelines are drawn on a coarse grid (``base + offset * scale``) so that equal
timestamps, touching events (end == next start), zero-length events and duplicates are
common, and the base/scale pairs reach int64 times near 2**62 and up to the int64
maximum itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from depth import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pau.core as core
import reference as ref

INT64_MAX = 2**63 - 1
GRID = 80  # grid offsets: events start in [0, 40] and last up to 20 steps; windows to 80
# Events may end exactly at 2**63 - 1, the sweep's "no open interval" sentinel (it once
# hung there: test_core.py::test_event_ending_at_int64_max).
EVENT_END_MAX = INT64_MAX
SCALES = (1, 3, 1000, 2**40)
RANKS = (0, 1, 2, 3, 5, 17, (1 << 22) + 3, 2**31 - 1)  # incl. ranks past the direct table
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass
class Timeline:
    scale: int
    base: int
    ranks: list
    rows: list  # (rank, start, end, kind, stream)

    def t(self, off: int) -> int:
        """A grid time for windows and spans (they may reach the int64 maximum)."""
        return min(self.base + off * self.scale, INT64_MAX)


@st.composite
def timelines(draw, max_ranks: int = 4, max_events: int = 12, min_events: int = 0):
    scale = draw(st.sampled_from(SCALES))
    # Events end at most at EVENT_END_MAX (see its comment); windows and spans may
    # reach the int64 maximum itself.
    # Any int64 is a time: bases below 0 (relative timelines, aligned clocks) down to
    # the int64 minimum itself.
    base = draw(st.sampled_from([0, 1, 2**62 - 7 * scale, 2**62, EVENT_END_MAX - 60 * scale, -1, -2**62,
                                 -(2**63)]))
    ranks = draw(st.lists(st.sampled_from(RANKS), min_size=1, max_size=max_ranks, unique=True))
    spread = draw(st.sampled_from([3, 10, 40]))  # small spreads: many ties and touches
    rows = []
    for r in ranks:
        n = draw(st.integers(min_events, max_events))
        for _ in range(n):
            start = draw(st.integers(0, spread))
            length = draw(st.one_of(st.just(0), st.integers(0, spread // 2)))
            kind = draw(st.sampled_from(ref.KINDS))
            stream = draw(st.integers(0, 3))
            rows.append((r, base + start * scale, base + (start + length) * scale, kind, stream))
    if rows:
        dups = draw(st.lists(st.integers(0, len(rows) - 1), max_size=3))
        rows += [rows[i] for i in dups]
        rows = draw(st.permutations(rows))  # unsorted input
    return Timeline(scale, base, ranks, list(rows))


def events_table(rows, *, chunks: int = 1) -> pa.Table:
    t = pa.table({
        "rank": pa.array([r[0] for r in rows], pa.int32()),
        "stream": pa.array([r[4] for r in rows], pa.int32()),
        "start_ns": pa.array([r[1] for r in rows], pa.int64()),
        "end_ns": pa.array([r[2] for r in rows], pa.int64()),
        "kind": pa.array([r[3] for r in rows], pa.string()).dictionary_encode(),
    })
    if chunks > 1 and t.num_rows:
        step = max(1, math.ceil(t.num_rows / chunks))
        t = pa.Table.from_batches([b for off in range(0, t.num_rows, step)
                                   for b in t.slice(off, step).to_batches()], schema=t.schema)
    return t


@st.composite
def window_rows(draw, tl: Timeline):
    """Windows disjoint within every rank: cells of a partition of the grid are given to
    every rank (-1), to some ranks each, or to nobody; zero-length windows anywhere."""
    hi = draw(st.sampled_from([6, 20, GRID]))
    cuts = sorted(set(draw(st.lists(st.integers(0, hi), max_size=8))))
    owners = list(tl.ranks) + [99]  # 99: a rank that has no events
    rows = []
    for a, b in zip(cuts, cuts[1:]):
        choice = draw(st.sampled_from(["none", "global", "own"]))
        if choice == "global":
            rows.append((-1, tl.t(a), tl.t(b)))
        elif choice == "own":
            for r in draw(st.lists(st.sampled_from(owners), unique=True, max_size=3)):
                rows.append((r, tl.t(a), tl.t(b)))
    for p in draw(st.lists(st.integers(0, GRID), max_size=2)):
        rows.append((draw(st.sampled_from([-1] + owners)), tl.t(p), tl.t(p)))
    rows = draw(st.permutations(rows))
    if draw(st.booleans()):
        ids = draw(st.lists(st.one_of(st.integers(-3, 3), st.integers(-10**12, 10**12)),
                            min_size=len(rows), max_size=len(rows), unique=True))
        rows = [w + (i,) for w, i in zip(rows, ids)]
    return list(rows)


def windows_table(rows) -> pa.Table:
    cols = {
        "rank": pa.array([w[0] for w in rows], pa.int32()),
        "start_ns": pa.array([w[1] for w in rows], pa.int64()),
        "end_ns": pa.array([w[2] for w in rows], pa.int64()),
    }
    if rows and len(rows[0]) > 3:
        cols["window"] = pa.array([w[3] for w in rows], pa.int64())
    return pa.table(cols)


@st.composite
def span_rows(draw, tl: Timeline):
    """Spans for some ranks (clipping their events) and for ranks without events."""
    chosen = draw(st.lists(st.sampled_from(list(tl.ranks) + [42, 2**30]), unique=True,
                           max_size=len(tl.ranks) + 2))
    rows = []
    for r in chosen:
        a = draw(st.integers(0, GRID))
        b = draw(st.integers(a, GRID))
        rows.append((r, tl.t(a), tl.t(b)))
    return rows


def span_table(rows) -> pa.Table:
    return pa.table({
        "rank": pa.array([s[0] for s in rows], pa.int32()),
        "start_ns": pa.array([s[1] for s in rows], pa.int64()),
        "end_ns": pa.array([s[2] for s in rows], pa.int64()),
    })


@st.composite
def cases(draw, windows=("none", "list", "bucket"), spans=True):
    """(timeline, windows for the reference, windows for pau, span rows or None)."""
    tl = draw(timelines())
    mode = draw(st.sampled_from(windows))
    if mode == "list":
        wr = draw(window_rows(tl))
        ref_w, pau_w = wr, windows_table(wr)
    elif mode == "bucket":
        width = draw(st.one_of(st.integers(1, 30).map(lambda k: k * tl.scale),
                               st.sampled_from([2**62, INT64_MAX])))
        ref_w = pau_w = width
    else:
        ref_w = pau_w = None
    sp = draw(st.one_of(st.none(), span_rows(tl))) if spans else None
    return tl, ref_w, pau_w, sp


def _span_arg(sp):
    return None if sp is None else span_table(sp)


def _has_windows(pau_w) -> bool:
    return pau_w is not None


# ---------------------------------------------------------------------------
# classify and overlap == reference


@settings(max_examples=examples(600), **SETTINGS)
@given(cases(), st.integers(1, 3))
def test_classify_matches_reference(case, chunks):
    tl, ref_w, pau_w, sp = case
    out = core.classify(events_table(tl.rows, chunks=chunks), windows=pau_w, span=_span_arg(sp))
    expected = ref.classify(tl.rows, span=sp, windows=ref_w)
    assert ref.pau_classify(out, _has_windows(pau_w)) == expected


@settings(max_examples=examples(350), **SETTINGS)
@given(cases())
def test_overlap_matches_reference(case):
    tl, ref_w, pau_w, sp = case
    res = core.overlap(events_table(tl.rows), windows=pau_w, span=_span_arg(sp))
    w = _has_windows(pau_w)
    expected = {slot: m for slot, m in
                ref.overlap_matrix(tl.rows, span=sp, windows=ref_w).items() if m}
    assert ref.pau_matrix(res.matrix, w) == expected
    got = ref.pau_ratio(res.ratio, w)
    want = ref.overlap_ratio(tl.rows, span=sp, windows=ref_w)
    assert got.keys() == want.keys()
    for slot, (comm, both, ratio) in want.items():
        g_comm, g_both, g_ratio = got[slot]
        assert (g_comm, g_both) == (comm, both), slot
        if ratio is None:
            assert g_ratio is None, slot
        elif comm < 2**53:  # both fit a double exactly: the quotient is correctly rounded
            assert g_ratio == float(ratio), slot
        else:
            assert math.isclose(g_ratio, float(ratio), rel_tol=1e-15), slot


@settings(max_examples=examples(150), **SETTINGS)
@given(cases(), st.permutations(ref.KINDS))
def test_custom_priority_matches_reference(case, priority):
    tl, ref_w, pau_w, sp = case
    out = core.classify(events_table(tl.rows), windows=pau_w, span=_span_arg(sp),
                        priority=list(priority))
    expected = ref.classify(tl.rows, span=sp, windows=ref_w, priority=priority)
    assert ref.pau_classify(out, _has_windows(pau_w)) == expected


@settings(max_examples=examples(150), **SETTINGS)
@given(cases())
def test_ledger_matches_reference(case):
    tl, ref_w, pau_w, sp = case
    led = core.ledger(events_table(tl.rows), windows=pau_w, span=_span_arg(sp))
    assert ref.pau_ledger(led.table) == ref.ledger(tl.rows, span=sp, windows=ref_w)
    accountable = {r["rank"]: r["accountable_ns"] for r in led.accountable.to_pylist()}
    assert led.accountable.num_rows == len(accountable)
    assert accountable == {r: e - s for r, (s, e) in ref.spans(tl.rows, sp).items()}
    assert led.accountable_ns() == sum(accountable.values())


# ---------------------------------------------------------------------------
# invariants that need no reference


def _per_rank_total(table) -> dict:
    out: dict = {}
    for r in table.to_pylist():
        out[r["rank"]] = out.get(r["rank"], 0) + r["duration_ns"]
    return out


@settings(max_examples=examples(200), **SETTINGS)
@given(cases())
def test_conservation(case):
    """Per rank, every row of classify (all windows and the null window) and of the
    overlap matrix sums to the rank's span; no duration is negative."""
    tl, _, pau_w, sp = case
    ev = events_table(tl.rows)
    spans = ref.spans(tl.rows, sp)
    want = {r: e - s for r, (s, e) in spans.items()}
    out = core.classify(ev, windows=pau_w, span=_span_arg(sp))
    assert min(out["duration_ns"].to_pylist(), default=0) >= 0
    got = _per_rank_total(out)
    if pau_w is None:  # one slot per accounted rank, even an empty span
        assert got == want
    else:  # windowed: a rank with an empty span may have no slot at all
        assert {r: n for r, n in got.items() if n} == {r: n for r, n in want.items() if n}
        assert set(got) <= set(want)
    matrix = core.overlap(ev, windows=pau_w, span=_span_arg(sp)).matrix
    assert min(matrix["duration_ns"].to_pylist(), default=1) > 0  # non-zero rows only
    assert _per_rank_total(matrix) == {r: n for r, n in want.items() if n}
    led = core.ledger(ev, windows=pau_w, span=_span_arg(sp))
    assert _per_rank_total(led.table) == {r: n for r, n in want.items() if n}


@settings(max_examples=examples(150), **SETTINGS)
@given(cases(), st.randoms(use_true_random=False), st.integers(1, 4))
def test_permutation_and_chunking_invariance(case, rnd, chunks):
    tl, _, pau_w, sp = case
    rows = list(tl.rows)
    a = core.classify(events_table(rows), windows=pau_w, span=_span_arg(sp))
    rnd.shuffle(rows)
    b = core.classify(events_table(rows, chunks=chunks), windows=pau_w, span=_span_arg(sp))
    assert a.equals(b)
    assert a.schema.metadata == b.schema.metadata
    oa = core.overlap(events_table(tl.rows), windows=pau_w, span=_span_arg(sp))
    ob = core.overlap(events_table(rows, chunks=chunks), windows=pau_w, span=_span_arg(sp))
    assert oa.matrix.equals(ob.matrix)
    assert oa.ratio.equals(ob.ratio)


@settings(max_examples=examples(150), **SETTINGS)
@given(cases(windows=("list", "bucket")))
def test_windows_sum_to_the_unwindowed_result(case):
    tl, _, pau_w, sp = case
    ev = events_table(tl.rows)
    whole = core.classify(ev, span=_span_arg(sp)).to_pylist()
    split = core.classify(ev, windows=pau_w, span=_span_arg(sp)).to_pylist()
    total: dict = {}
    for r in split:
        key = (r["rank"], r["activity"])
        total[key] = total.get(key, 0) + r["duration_ns"]
    for r in whole:
        assert total.get((r["rank"], r["activity"]), 0) == r["duration_ns"], r


@settings(max_examples=examples(100), **SETTINGS)
@given(timelines(max_events=8))
def test_sorted_and_unsorted_paths_agree(tl):
    """A table already ordered by (rank, start) takes the one-pass path; any other
    order is re-fed through a permutation. Both give the same table."""
    rows = sorted(tl.rows, key=lambda r: (r[0], r[1]))
    assert core.classify(events_table(rows)).equals(core.classify(events_table(tl.rows)))


@settings(max_examples=examples(150), **SETTINGS)
@given(cases(), st.integers(2, 5), st.sampled_from(["shuffled", "rank", "rank_start"]),
       st.integers(1, 3))
def test_threads_do_not_change_the_result(case, threads, order, chunks):
    """Rank-sorted input is split into row ranges at rank boundaries, one per thread
    (spans of ranks without events go to the first); other input runs on one."""
    tl, _, pau_w, sp = case
    rows = list(tl.rows)
    if order == "rank":
        rows.sort(key=lambda r: r[0])
    elif order == "rank_start":
        rows.sort(key=lambda r: (r[0], r[1]))
    ev = events_table(rows, chunks=chunks)
    one = core.classify(ev, windows=pau_w, span=_span_arg(sp), threads=1)
    assert core.classify(ev, windows=pau_w, span=_span_arg(sp), threads=threads).equals(one)
    o1 = core.overlap(ev, windows=pau_w, span=_span_arg(sp), threads=1)
    on = core.overlap(ev, windows=pau_w, span=_span_arg(sp), threads=threads)
    assert on.matrix.equals(o1.matrix) and on.ratio.equals(o1.ratio)


# ---------------------------------------------------------------------------
# classify_dataset == classify


@settings(max_examples=examples(60), **SETTINGS)
@given(cases(), st.sampled_from([None, 1, 2, 3, 7, 1000]), st.integers(1, 20),
       st.sampled_from(["start", "rank_start"]))
def test_classify_dataset_equals_classify(tmp_path_factory, case, batch_rows, group, order):
    tl, _, pau_w, sp = case
    table = events_table(tl.rows)
    keys = [("start_ns", "ascending")] if order == "start" else [("rank", "ascending"),
                                                                  ("start_ns", "ascending")]
    table = table.sort_by(keys)  # classify_dataset needs start order within each rank
    path = tmp_path_factory.mktemp("ds") / "events.parquet"
    pq.write_table(table, path, row_group_size=group)
    want = core.classify(table, windows=pau_w, span=_span_arg(sp))
    got = core.classify_dataset(path, windows=pau_w, span=_span_arg(sp), batch_rows=batch_rows,
                                progress=False)
    assert got.equals(want)
    assert got.schema.metadata == want.schema.metadata


# ---------------------------------------------------------------------------
# quarantine: the usable rows are classified as if alone


BAD_ROWS = st.sampled_from([
    (-1, 0, 10, "compute", "negative rank"),
    (0, -2**62 - 1, 2**62, "compute", "end_ns - start_ns does not fit in int64"),
    (0, 20, 10, "compute", "end_ns before start_ns"),
    (0, 0, 10, "tensor", "unknown kind"),
    (0, 0, 10, "idle", "unknown kind"),
    (None, 0, 10, "compute", "null rank"),
    (0, None, 10, "compute", "null start_ns"),
    (0, 0, None, "compute", "null end_ns"),
    (0, 0, 10, None, "null kind"),
])


@settings(max_examples=examples(120), **SETTINGS)
@given(timelines(), st.lists(st.tuples(BAD_ROWS, st.integers(0, 10**6)), min_size=1, max_size=5))
def test_quarantine_equals_classifying_the_good_rows(tl, bad):
    rows = list(tl.rows)
    where = {}
    for (r, s, e, k, reason), pos in bad:
        i = pos % (len(rows) + 1)
        rows.insert(i, (r, s, e, k, 0, reason))
    for i, row in enumerate(rows):
        if len(row) > 5:
            where[i] = row[5]
    good = [r for r in rows if len(r) == 5]
    res = core.classify(events_table(rows), on_invalid="quarantine")
    assert isinstance(res, core.Quarantined)
    assert res.result.equals(core.classify(events_table(good)))
    q = res.quarantine
    assert dict(zip(q["row"].to_pylist(), q["reason"].to_pylist())) == where
    assert res.result.schema.metadata[b"pau.quarantined_rows"] == str(len(where)).encode()
    o = core.overlap(events_table(rows), on_invalid="quarantine")
    assert o.result.matrix.equals(core.overlap(events_table(good)).matrix)
    assert o.quarantine["row"].to_pylist() == sorted(where)


# ---------------------------------------------------------------------------
# longer timelines than Hypothesis draws: many events per rank, many windows


@pytest.mark.parametrize("seed", range(4))
def test_longer_random_timelines(seed):
    rng = np.random.default_rng(seed)
    rows = []
    for r in (0, 3, 8):
        n = 250
        start = rng.integers(0, 4000, n)
        end = start + rng.choice([0, 1, 2, 5, 30, 300], n)
        kinds = rng.choice(ref.KINDS, n, p=[0.4, 0.3, 0.1, 0.05, 0.1, 0.05])
        rows += [(r, int(s), int(e), str(k), 0) for s, e, k in zip(start, end, kinds)]
    rng.shuffle(rows)
    cuts = np.unique(rng.integers(0, 4400, 60))
    wins = [(-1 if i % 3 else 3, int(a), int(b)) for i, (a, b) in enumerate(zip(cuts[::2], cuts[1::2]))]
    span = [(8, 100, 3900), (11, 0, 77)]
    for pau_w, ref_w in ((None, None), (windows_table(wins), wins), (97, 97)):
        for sp in (None, span):
            out = core.classify(events_table(rows, chunks=3), windows=pau_w, span=_span_arg(sp))
            assert ref.pau_classify(out, pau_w is not None) == ref.classify(
                rows, span=sp, windows=ref_w)
    res = core.overlap(events_table(rows), windows=97)
    assert ref.pau_matrix(res.matrix, True) == {
        k: v for k, v in ref.overlap_matrix(rows, windows=97).items() if v}


# ---------------------------------------------------------------------------
# the exclusive-time sweep (csrc/core/exclusive.hpp) == reference, both kernels

from pau import _core  # noqa: E402
from pau.engine import _sweep  # noqa: E402

#: The kernels of the exclusive-time sweep this machine runs: scalar, and AVX-512
#: (2) and AVX2 (3) where the CPU has them.
KERNELS = (1,) + ((2,) if _core.avx512_available() else ()) + ((3,) if _core.avx2_available() else ())
#: The sweeps' code for a row whose kind is not one of pau's (Code::unknown_kind, csrc/core/sweep.hpp).
UNKNOWN_KIND = 4


def lean_classify(table, *, span=None, priority=None, threads=1, kernel=1):
    """classify without windows through the exclusive-time sweep and the given kernel."""
    plan = _sweep.plan_of(None, span)
    hist, _, rows = _sweep.hist_of_table(table, plan, "raise", threads, _sweep.levels_of(priority), kernel)
    return _sweep.exclusive(hist, plan, priority)


@settings(max_examples=examples(300), **SETTINGS)
@given(cases(windows=("none",)), st.permutations(ref.KINDS), st.integers(1, 3), st.integers(1, 3),
       st.sampled_from(["shuffled", "start", "rank_start"]))
def test_exclusive_sweep_matches_reference(case, priority, chunks, threads, order):
    """Shuffled rows are swept through a permutation; rows in start order (ranks
    interleaved) and in (rank, start) order in one pass, by blocks of 8 rows."""
    tl, _, _, sp = case
    rows = list(tl.rows)
    if order != "shuffled":
        rows.sort(key=lambda r: (r[1],) if order == "start" else (r[0], r[1]))
    table = events_table(rows, chunks=chunks)
    want = ref.classify(tl.rows, span=sp, priority=priority)
    for kernel in KERNELS:
        got = lean_classify(table, span=_span_arg(sp), priority=list(priority), threads=threads, kernel=kernel)
        assert ref.pau_classify(got, False) == want, kernel


@st.composite
def hard_shapes(draw):
    """Small versions of the zoo's hard shapes, sorted by (rank, start_ns): many
    streams of mixed kinds, tiny kernels with random gaps beside copies and
    collectives, and collectives spanning many kernels; times from a base that
    may sit near either end of int64."""
    shape = draw(st.sampled_from(["streams", "tiny", "long"]))
    base = draw(st.sampled_from([0, -(2**63), 2**62, INT64_MAX - 10**6]))
    rows = []
    for r in range(draw(st.integers(1, 3))):
        if shape == "streams":
            for stream in range(draw(st.integers(2, 16))):
                t = draw(st.integers(0, 50))
                for _ in range(draw(st.integers(1, 8))):
                    t += draw(st.integers(0, 40))
                    length = draw(st.integers(0, 30))
                    rows.append((r, base + t, base + t + length, draw(st.sampled_from(ref.KINDS)), stream))
                    t += length
        elif shape == "tiny":
            t = 0
            for _ in range(draw(st.integers(1, 60))):
                t += draw(st.sampled_from([0, 0, 0, 1, 3, 10]))  # 70 % back to back
                length = draw(st.integers(1, 20))
                rows.append((r, base + t, base + t + length, "compute", 0))
                t += length
            for kind, stream in (("memcpy", 1), ("memset", 1), ("communication", 2)):
                for _ in range(draw(st.integers(0, 6))):
                    a = draw(st.integers(0, t + 5))
                    rows.append((r, base + a, base + a + draw(st.integers(1, 20)), kind, stream))
        else:
            t, ks = 0, []
            for _ in range(draw(st.integers(5, 60))):
                t += draw(st.sampled_from([0, 0, 0, 0, 7]))
                length = draw(st.integers(1, 15))
                ks.append((base + t, base + t + length))
                t += length
            rows += [(r, a, b, "compute", 0) for a, b in ks]
            i = 0
            while i < len(ks) - 1:
                m = draw(st.integers(2, len(ks)))
                j = min(len(ks) - 1, i + m - 1)
                a = max(base, ks[i][0] - draw(st.integers(0, 5)))
                rows.append((r, a, max(a, ks[j][1] + draw(st.integers(-5, 5))), "communication", 1))
                i = j + draw(st.integers(1, 4))
    rows = [row for row in rows if row[2] <= EVENT_END_MAX]
    return sorted(rows, key=lambda row: (row[0], row[1]))


@settings(max_examples=examples(200), **SETTINGS)
@given(hard_shapes(), st.permutations(ref.KINDS), st.booleans())
def test_exclusive_sweep_on_hard_shapes(rows, priority, shuffle):
    table = events_table(rows)
    if shuffle:  # unsorted input: reordered once, through a permutation
        table = table.take(pa.array(np.random.default_rng(len(rows)).permutation(len(rows))))
    want = ref.classify(rows, priority=priority)
    for kernel in KERNELS:
        got = lean_classify(table, priority=list(priority), kernel=kernel)
        assert ref.pau_classify(got, False) == want, kernel
    full = core.overlap(table).matrix  # the full sweep, read by priority: the same figures
    prio = list(priority)
    by_full: dict = {}
    for r in full.to_pylist():
        mask = sum(ref.BIT[k] for k in r["kinds"].split("+")) if r["kinds"] != "idle" else 0
        key = (r["rank"], None)
        by_full.setdefault(key, {a: 0 for a in ref.ACTIVITIES})[ref.winner(mask, prio)] += r["duration_ns"]
    assert {k: v for k, v in want.items() if any(v.values())} == by_full


@settings(max_examples=examples(200), **SETTINGS)
@given(hard_shapes(), st.permutations(ref.KINDS), st.data())
def test_exclusive_sweep_on_hard_shapes_with_spans(rows, priority, data):
    """Spans that cut through the rows (blocks of 8 rows wholly inside, partly
    inside and outside the span): clipped exactly, by both kernels."""
    ranks = sorted({r[0] for r in rows})
    lo = min(r[1] for r in rows)
    hi = max(r[2] for r in rows)
    sp = []
    for r in ranks:
        a = data.draw(st.integers(lo - 5, hi + 5).map(lambda x: min(max(x, -(2**63)), INT64_MAX)))
        b = data.draw(st.integers(a, max(a, hi + 5)).map(lambda x: min(x, INT64_MAX)))
        sp.append((r, a, b))
    table = events_table(rows)
    want = ref.classify(rows, span=sp, priority=priority)
    for kernel in KERNELS:
        got = lean_classify(table, span=span_table(sp), priority=list(priority), kernel=kernel)
        assert ref.pau_classify(got, False) == want, kernel


def test_exclusive_sweep_hand_worked():
    """Rank 0: compute [0, 10) and [10, 20) touching, communication [5, 25), a
    zero-length communication at 30, memcpy [40, 50) after a gap: compute 20,
    communication 5, memcpy 10, idle 15 (span 50). Rank 3 at negative times: other
    [-20, -10), sync [-15, -5): sync 10, other 5. Rank 2 with the span [-100, 150):
    communication [100, 200) clipped to 50, idle 200. With communication first,
    rank 0 is compute 5, communication 20."""
    rows = [(0, 0, 10, "compute", 0), (0, 5, 25, "communication", 1), (0, 10, 20, "compute", 0),
            (0, 30, 30, "communication", 1), (0, 40, 50, "memcpy", 2), (2, 100, 200, "communication", 0),
            (3, -20, -10, "other", 0), (3, -15, -5, "sync", 0)]
    span = span_table([(2, -100, 150)])
    for kernel in KERNELS:
        got = ref.pau_classify(lean_classify(events_table(rows), span=span, kernel=kernel), False)
        zero = {a: 0 for a in ref.ACTIVITIES}
        assert got == {(0, None): {**zero, "compute": 20, "communication": 5, "memcpy": 10, "idle": 15},
                       (2, None): {**zero, "communication": 50, "idle": 200},
                       (3, None): {**zero, "sync": 10, "other": 5}}
        prio = ["communication", "compute", "memcpy", "memset", "sync", "other"]
        got = ref.pau_classify(lean_classify(events_table(rows), priority=prio, kernel=kernel), False)
        assert got[(0, None)] == {**zero, "compute": 5, "communication": 20, "memcpy": 10, "idle": 15}


def _first_problem(plan, cols, levels=None, kernel=0):
    """The native sweep of ``cols`` (the exclusive-time one with ``levels``): the
    histogram, or the ``(code, row, batch)`` of the first problem met (its FeedError)."""
    arrays = _sweep.batch_arrays(cols)
    try:
        if levels is not None:
            return _core.exclusive_batches(plan.span_rank, plan.span_start, plan.span_end, levels, batches=arrays,
                                           parts=1, kernel=kernel)
        return _core.sweep_batches(plan.win_rank, plan.win_start, plan.win_end, plan.win_row, plan.span_rank,
                                   plan.span_start, plan.span_end, bucket=plan.bucket, batches=arrays, parts=1)
    except _core.FeedError as exc:
        return exc.code, exc.row, exc.batch


@settings(max_examples=examples(200), **SETTINGS)
@given(timelines(max_events=30), st.lists(st.tuples(BAD_ROWS, st.integers(0, 10**6)), max_size=3),
       st.booleans())
def test_exclusive_sweep_stops_where_the_full_sweep_does(tl, bad, in_order):
    """Bad rows and unsorted starts: both sweeps report the same first problem (code,
    row, batch), whichever of the 8-row blocks it falls in."""
    rows = sorted(tl.rows, key=lambda r: (r[0], r[1])) if in_order else list(tl.rows)
    for (r, s, e, k, _), pos in bad:
        if None in (r, s, e, k):
            continue  # nulls never reach the native sweep
        rows.insert(pos % (len(rows) + 1), (r, s, e, k, 0))
    table = events_table(rows, chunks=2)
    cols = [_sweep.event_columns(b) for b in table.to_batches()]
    if any(c is None for c in cols):
        return
    plan = _sweep.Plan()
    want = _first_problem(plan, cols)
    for kernel in KERNELS:
        got = _first_problem(plan, cols, _sweep.levels_of(None), kernel)
        if isinstance(want, tuple):
            assert got == want, kernel
        else:
            assert not isinstance(got, tuple), kernel


@settings(max_examples=examples(150), **SETTINGS)
@given(timelines(max_ranks=2, max_events=40), st.integers(0, 40), st.permutations(range(48)),
       st.one_of(st.none(), st.integers(0, 10**6)), st.sampled_from([pa.int8(), pa.int16()]))
def test_exclusive_sweep_kind_dictionaries(tl, extra, perm, unknown_at, index_type):
    """A kind dictionary of any size (up to 16 entries the AVX-512 kernel looks up a
    block's 8 kinds at once), holding names that are not kinds, in any order, with
    byte or wider indices: both kernels give the reference's answer, and a row of a
    name that is not a kind, wherever it falls in the 8-row blocks, stops both
    sweeps at that row."""
    rows = sorted(tl.rows, key=lambda r: (r[0], r[1]))
    junk = [f"not-a-kind-{i}" for i in range(extra)]
    names = [(list(ref.KINDS) + junk)[i] for i in perm if i < len(ref.KINDS) + extra]
    code = {k: i for i, k in enumerate(names)}
    bad_row = None
    if unknown_at is not None and junk and rows:
        bad_row = unknown_at % len(rows)
        r = rows[bad_row]
        rows[bad_row] = (r[0], r[1], r[2], junk[unknown_at % len(junk)], r[4])
    kind = pa.DictionaryArray.from_arrays(pa.array([code[r[3]] for r in rows], index_type), pa.array(names))
    table = pa.table({"rank": pa.array([r[0] for r in rows], pa.int32()),
                      "start_ns": pa.array([r[1] for r in rows], pa.int64()),
                      "end_ns": pa.array([r[2] for r in rows], pa.int64()), "kind": kind})
    if bad_row is None:
        want = ref.classify(tl.rows)
        for kernel in KERNELS:
            assert ref.pau_classify(lean_classify(table, kernel=kernel), False) == want, kernel
        return
    cols = [_sweep.event_columns(b) for b in table.to_batches()]
    got = [_first_problem(_sweep.Plan(), cols, _sweep.levels_of(None), kernel) for kernel in KERNELS]
    assert all(g == got[0] for g in got), got
    assert got[0][:2] == (UNKNOWN_KIND, bad_row), got[0]  # (code, row, batch)


# ---------------------------------------------------------------------------
# the (rank, start) order of unsorted input (csrc/core/sweep.hpp) == numpy's lexsort


@settings(max_examples=examples(150), **SETTINGS)
@given(st.integers(0, 5000), st.sampled_from([[0], [0, 1, 7], [-3, 0, 5], [0, 2**20 - 1, 2**20, 2**31 - 1]]),
       st.sampled_from(["any", "near", "ties", "sorted"]), st.integers(0, 2**32 - 1))
def test_order_by_rank_start_is_lexsort(n, ranks, starts, seed):
    """Rows of any rank (negative, past the direct table, the largest int32) and any
    start (the whole int64 range, a narrow range whose high bytes every key shares,
    many ties, already sorted within a rank): the order is numpy's stable
    lexsort((start, rank)), run lengths below and above the radix sort's threshold."""
    rng = np.random.default_rng(seed)
    rank = rng.choice(np.array(ranks, np.int32), n)
    if starts == "any":
        start = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64, endpoint=True)
    elif starts == "near":
        start = 10**15 + rng.integers(-(2**20), 2**20, n)
    elif starts == "ties":
        start = rng.integers(-2, 3, n).astype(np.int64)
    else:
        start = np.sort(rng.integers(-(10**9), 10**9, n))
    got = _core.order_by_rank_start(rank, start)
    assert np.array_equal(got, np.lexsort((start, rank)))
