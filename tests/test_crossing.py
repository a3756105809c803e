"""The full ledger's early sweep (pau.engine._crossing): the events swept on helper threads
over cuts read from the lifecycle, while the lifecycle is attributed.

Its answer must be the exact way's (the sweep over the state runs, after the
attribution) in every case: when the cuts resolve the states it is computed from
them, and when they do not (or the input is one the native reader leaves alone)
the exact way runs. The cuts and the crossing kernel have slow twins in
``tests/reference_lifecycle.py``.
"""

from __future__ import annotations

import multiprocessing

import numpy as np
import pyarrow as pa
import pytest
import reference_lifecycle as ref
from depth import examples
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from lifecycle_cases import S, table
from test_lifecycle_properties import with_as_of

import pau.core as pc
from pau import _core, synth
from pau.engine import _crossing
from pau.errors import InvalidRowError

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


# --------------------------------------------------------------------------- helpers


#: The sweeps the early sweep may run each part with: the full 64-mask sweep (None),
#: and the exclusive-time sweep over the cuts with its scalar kernel (1) and, where
#: the CPU has them, its AVX-512 (2) and AVX2 (3) kernels.
SWEEPS = [None, 1] + ([2] if _core.avx512_available() else []) + ([3] if _core.avx2_available() else [])


@pytest.fixture(params=SWEEPS, ids=lambda k: {None: "full", 1: "scalar", 2: "avx512", 3: "avx2"}[k])
def small_chunks(monkeypatch, request):
    """Every events table takes the early sweep, in chunks of a few rows, with each
    of the sweeps in turn."""
    monkeypatch.setattr(_crossing, "LEAN_KERNEL", request.param)
    monkeypatch.setattr(_crossing, "OVERLAP_MIN_ROWS", 0)
    monkeypatch.setattr(_crossing, "CHUNK_MIN_ROWS", 2)
    monkeypatch.setattr(_crossing, "CHUNKS_PER_CORE", 10**6)
    monkeypatch.setattr(_crossing, "HEAD_ROWS", 2)
    monkeypatch.setattr(_crossing, "MAX_CROSSINGS_PER_EVENT", float("inf"))


@pytest.fixture
def taken(monkeypatch):
    """Which way each ledger took: True (the early sweep's cells), False (it ran but
    the exact way had to), appended per call that started one."""
    seen: list = []
    finish = _crossing.finish

    def spy(*a, **k):
        out = finish(*a, **k)
        seen.append(out is not None)
        return out

    monkeypatch.setattr(_crossing, "finish", spy)
    return seen


def exact(events, lifecycle, **kw):
    """The ledger the exact way (no early sweep)."""
    start = _crossing.start
    _crossing.start = lambda *a: None
    try:
        return pc.ledger(events, lifecycle, **kw)
    finally:
        _crossing.start = start


def events_table(per_rank: dict, *, kind_type=None) -> pa.Table:
    """Events ``{rank: [(start, end, kind), ...]}`` in ns, sorted by rank and start."""
    rows = sorted((r, s, e, k) for r, evs in per_rank.items() for s, e, k in evs)
    kinds = pa.array([x[3] for x in rows], pa.string())
    return pa.table({
        "rank": pa.array([x[0] for x in rows], pa.int32()),
        "start_ns": pa.array([x[1] for x in rows], pa.int64()),
        "end_ns": pa.array([x[2] for x in rows], pa.int64()),
        "kind": kinds.dictionary_encode() if kind_type is None else kinds.cast(kind_type),
    })


# --------------------------------------------------------------------------- the cuts


RECORDS = ["step", "step", "step", "checkpoint_save", "failure", "attempt", "phase", "restore", "accountable",
           None, "stepx"]


@st.composite
def cut_case(draw):
    """Rows of a lifecycle in table order (valid or not: the cuts read anything), as
    the reference's dicts, the table pau reads, and as_of."""
    rows = []
    t = 0
    for _ in range(draw(st.integers(0, 14))):
        chain = draw(st.booleans())  # this row starts where the previous one ended
        start = t if chain else draw(st.one_of(st.none(), st.integers(0, 40)))
        end = draw(st.one_of(st.none(), st.integers(0, 6).map(lambda d, s=start: (s or 0) + d)))
        # Step numbers a few apart (looked up in a byte map) or spread wider than it
        # reaches (a binary search).
        rows.append(dict(record=draw(st.sampled_from(RECORDS)),
                         rank=draw(st.sampled_from([None, -1, 0, 0, 1])),
                         step=draw(st.sampled_from([None, 1, 2, 3, 3, -5, 2**31 - 1])), start_ns=start, end_ns=end,
                         block_end_ns=draw(st.one_of(st.none(), st.integers(0, 45))),
                         durable_ns=draw(st.one_of(st.none(), st.integers(0, 50)))))
        t = end if end is not None else t
    with_rank = draw(st.booleans())
    time_type = draw(st.sampled_from([pa.int64(), pa.timestamp("ns"), pa.timestamp("ns", tz="UTC")]))
    cols = {"record": pa.array([r["record"] for r in rows], pa.string())}
    if with_rank:
        cols["rank"] = pa.array([r["rank"] for r in rows], draw(st.sampled_from([pa.int32(), pa.int64()])))
    if draw(st.integers(0, 3)):
        cols["step"] = pa.array([r["step"] for r in rows], draw(st.sampled_from([pa.int32(), pa.int64()])))
    else:
        for r in rows:
            r["step"] = None
    for key in ("start_ns", "end_ns", "block_end_ns", "durable_ns"):
        if key == "start_ns" or draw(st.integers(0, 4)):
            cols[key] = pa.array([r[key] for r in rows], pa.int64()).cast(time_type)
        else:
            for r in rows:
                r[key] = None
    t = pa.table(cols)
    cuts = sorted(set(draw(st.lists(st.integers(0, len(rows)), max_size=3))))  # batches
    batches = [t.slice(a, b - a) for a, b in zip([0] + cuts, cuts + [len(rows)])]
    t = pa.Table.from_batches([b.combine_chunks().to_batches()[0] if b.num_rows else
                               pa.RecordBatch.from_pylist([], schema=t.schema) for b in batches], t.schema)
    as_of = draw(st.one_of(st.none(), st.integers(0, 60)))
    # Any int64 is a time: the same rows moved before 0 (relative timelines).
    shift = draw(st.sampled_from([0, 0, -25, -2**62]))
    if shift:
        for r in rows:
            for key in ("start_ns", "end_ns", "block_end_ns", "durable_ns"):
                if r[key] is not None:
                    r[key] += shift
        for key in ("start_ns", "end_ns", "block_end_ns", "durable_ns"):
            if key in t.column_names:
                i = t.schema.get_field_index(key)
                col = t[key].cast(pa.int64())
                t = t.set_column(i, key, pa.compute.add(col, pa.scalar(shift, pa.int64())).cast(t.schema.field(key).type))
        as_of = None if as_of is None else as_of + shift
    return rows, t, as_of, with_rank


@settings(max_examples=examples(400), **SETTINGS)
@given(case=cut_case())
def test_cuts_match_the_reference(case):
    rows, t, as_of, with_rank = case
    got = _crossing.cuts(t, as_of)
    assert got is not None
    assert got.dtype == np.int64
    assert got.tolist() == ref.cut_times(rows, as_of, with_rank)


def test_cuts_of_a_layout_read_elsewhere_are_none():
    """Record names as a dictionary, times as floats or in microseconds: the native
    reader says no (the ledger then takes the exact way)."""
    base = {"record": pa.array(["step", "failure"]), "start_ns": pa.array([0, 5], pa.int64())}
    assert _crossing.cuts(pa.table(base), None).tolist() == [0, 5]
    for name, col in [("record", pa.array(["step", "failure"]).dictionary_encode()),
                      ("start_ns", pa.array([0.0, 5.0])),
                      ("start_ns", pa.array([0, 5], pa.timestamp("us"))),
                      ("end_ns", pa.array([1, 6], pa.int32()))]:
        assert _crossing.cuts(pa.table({**base, name: col}), None) is None, name


def test_cuts_of_back_to_back_steps():
    """Steps that follow each other on one rank (the rank as written: -1 is a rank of
    its own here) are no cut, whatever rows lie between them in the table; a gap is,
    and so is where another record begins or ends."""
    rows = [dict(record="accountable", rank=0, start_ns=0, end_ns=100),
            dict(record="step", rank=-1, start_ns=10, end_ns=20),
            dict(record="step", rank=-1, start_ns=20, end_ns=30),  # continues: no cut at 20
            dict(record="step", rank=0, start_ns=30, end_ns=40),   # another rank: cuts at 30
            dict(record="step", rank=0, start_ns=41, end_ns=50),   # a gap: cuts at 40 and 41
            dict(record="checkpoint_save", rank=-1, start_ns=50, end_ns=None, block_end_ns=55, durable_ns=70),
            dict(record="step", rank=0, start_ns=55, end_ns=60)]
    t = pa.table({k: [r.get(k) for r in rows] for k in ("record", "rank", "start_ns", "end_ns", "block_end_ns",
                                                        "durable_ns")})
    assert _crossing.cuts(t, None).tolist() == [0, 10, 30, 40, 41, 50, 55, 60, 70, 100]
    assert ref.cut_times(rows, None) == [0, 10, 30, 40, 41, 50, 55, 60, 70, 100]
    assert _crossing.cuts(t, 65).tolist() == [0, 10, 30, 40, 41, 50, 55, 60, 65, 70, 100]
    # Steps of two ranks interleaved, each rank's back to back: only the ends are cuts.
    inter = [dict(record="step", rank=r, start_ns=10 * k, end_ns=10 * k + 10) for k in range(5) for r in (0, 1)]
    inter.insert(3, dict(record="failure", rank=1, start_ns=33))
    t = pa.table({k: [r.get(k) for r in inter] for k in ("record", "rank", "start_ns", "end_ns")})
    assert _crossing.cuts(t, None).tolist() == ref.cut_times(inter, None) == [0, 33, 50]


# --------------------------------------------------------------------------- the crossing kernel


@st.composite
def crossing_case(draw):
    cuts = sorted(set(draw(st.lists(st.integers(0, 30), min_size=2, max_size=7))))
    if len(cuts) < 2:
        cuts = [0, 30]
    ranks = sorted(set(draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))))
    n_states, n_act, idle = 3, 4, 3
    intervals = []
    for r in ranks:
        t = draw(st.integers(cuts[0] - 2, cuts[-1]))  # sometimes before the first cut
        for _ in range(draw(st.integers(0, 4))):
            t += draw(st.integers(0, 3))  # a gap (not accountable) or none
            e = t + draw(st.integers(1, 6))
            intervals.append((r, t, e, draw(st.integers(0, n_states - 1))))
            t = e
    rows = draw(st.lists(st.tuples(st.sampled_from(ranks + [7]), st.integers(-1, len(cuts) - 2),
                                   st.integers(0, 7), st.integers(0, 9)), max_size=12))
    if draw(st.booleans()):
        rows.sort(key=lambda x: (x[0], x[1]))  # as the sweep gives them
    act_of_mask = draw(st.lists(st.integers(0, n_act - 2), min_size=8, max_size=8))
    act_of_mask[0] = idle
    return rows, cuts, ranks, intervals, act_of_mask, idle, n_states, n_act


@settings(max_examples=examples(500), **SETTINGS)
@given(case=crossing_case())
@example(case=([(0, 0, 1, 4), (0, 1, 2, 3)], [0, 5, 10], [0], [(0, 0, 5, 1), (0, 5, 10, 2)], [3, 0, 1, 2, 0, 0, 0, 0],
               3, 3, 4))  # one window per run
@example(case=([(0, 0, 1, 4)], [0, 10], [0], [(0, 0, 5, 1), (0, 5, 10, 2)], [3, 0, 1, 2, 0, 0, 0, 0], 3, 3, 4))
def test_crossed_cells_match_the_reference(case):
    rows, cuts, ranks, intervals, act_of_mask, idle, n_states, n_act = case
    cols = [np.array([x[k] for x in rows], dt) for k, dt in enumerate((np.int32, np.int64, np.uint8, np.int64))]
    iv = [np.array([x[k] for x in intervals], dt) for k, dt in enumerate((np.int32, np.int64, np.int64, np.int8))]
    masks = np.full(64, idle, np.int8)  # the masks drawn are 0..7
    masks[:8] = act_of_mask
    c = np.array(cuts, np.int64)
    i_rank, i_start, i_end, i_state = iv
    ok, cells_ = _core.crossed_cells(*cols, w_start=c[:-1], w_end=c[1:], ranks=np.array(ranks, np.int32),
                                     i_rank=i_rank, i_start=i_start, i_end=i_end, i_state=i_state,
                                     act_of_mask=masks, idle=idle, n_states=n_states, n_act=n_act)
    cells = (cells_.rank, cells_.state, cells_.activity, cells_.duration)
    want_ok, want = ref.crossed_cells(rows, cuts, ranks, intervals, act_of_mask, idle, n_states, n_act)
    assert ok == want_ok
    if ok:
        assert list(zip(*(c.tolist() for c in cells))) == ref.tidy_cells(want, ranks, n_states, n_act)
        assert [c.dtype for c in cells] == [np.int32, np.int8, np.int8, np.int64]


# --------------------------------------------------------------------------- the ledger


@st.composite
def ledger_case(draw):
    """A generated lifecycle (seconds -> ns) and events of its ranks and one more,
    in quarter seconds, some long, sorted by rank and start."""
    rows, as_of = draw(with_as_of())
    last = max(v for r in rows for v in (r.get("start"), r.get("end"), r.get("block"), r.get("durable"))
               if v is not None)
    ranks = sorted({r["rank"] for r in rows if r.get("rank", -1) >= 0} | {0})
    per_rank = {}
    q = S // 4
    for r in ranks + [max(ranks) + 1]:
        evs = []
        for _ in range(draw(st.integers(0, 12))):
            s = draw(st.integers(0, 4 * (last + 2))) * q
            d = draw(st.sampled_from([0, 1, 1, 2, 4, 12, 40])) * q
            evs.append((s, s + d, draw(st.sampled_from(pc.KINDS))))
        per_rank[r] = evs
    chunk = draw(st.sampled_from([2, 4, 6, 10**9]))  # rows of a chunk at most (10**9: guided by the tail)
    tail = draw(st.sampled_from([2, 3, 10**9]))  # rows of the last chunks at least (10**9: as many as chunk)
    head = draw(st.integers(1, 3))  # rows of a head at most (and half a chunk)
    # Any int64 is a time: sometimes the whole job moved before 0.
    shift = draw(st.sampled_from([0, 0, -S // 4, -2**62]))
    life, events = _moved(table(rows), shift), _moved(events_table(per_rank), shift)
    return life, events, None if as_of is None else as_of * S + shift, (chunk, tail), head


def _moved(t: pa.Table, shift: int) -> pa.Table:
    """`t` with every time column moved by `shift` ns."""
    for key in ("start_ns", "end_ns", "block_end_ns", "durable_ns"):
        if shift and key in t.column_names:
            t = t.set_column(t.schema.get_field_index(key), key,
                             pa.compute.add(t[key], pa.scalar(shift, pa.int64())))
    return t


@settings(max_examples=examples(300), **SETTINGS)
@given(case=ledger_case())
def test_the_early_sweep_gives_the_exact_ledger(case, small_chunks, monkeypatch, taken):
    taken.clear()
    life, events, as_of, (chunk, tail), head = case
    monkeypatch.setattr(_crossing, "CHUNK_MIN_ROWS", chunk)
    monkeypatch.setattr(_crossing, "CHUNK_TAIL_ROWS", tail)
    monkeypatch.setattr(_crossing, "HEAD_ROWS", head)
    got = pc.ledger(events, life, as_of=as_of)
    event(f"early sweep taken: {taken}")
    want = exact(events, life, as_of=as_of)
    assert got.table.equals(want.table)
    assert got.accountable.equals(want.accountable)


def _job(seed=0):
    return synth.training_job(ranks=3, steps=60, seed=seed, mtbf_s=20, checkpoint_every=5, kernels_per_step=6)


@pytest.mark.parametrize("tail", [256, 16])
def test_a_training_job_takes_the_early_sweep_in_chunks(small_chunks, taken, monkeypatch, tail):
    """Chunks of 256 rows; with a tail of 16, the last ones get shorter (more parts)."""
    monkeypatch.setattr(_crossing, "CHUNK_MIN_ROWS", 256)
    monkeypatch.setattr(_crossing, "CHUNK_TAIL_ROWS", tail)
    monkeypatch.setattr(_crossing, "HEAD_ROWS", 64)
    parts = []
    start = _crossing.start
    monkeypatch.setattr(_crossing, "start", lambda *a: parts.append(start(*a)) or parts[-1])
    job = _job()
    got = pc.ledger(job.events, job.lifecycle)
    assert taken == [True]
    n = job.events.num_rows
    uniform = 3 * (n // 3 // 256)  # 3 ranks of about n / 3 rows, in chunks of 256
    assert parts[0].job.parts >= uniform - 3 > 3 * 2
    if tail < 256:  # about log(4 * 256 / 16) / log(4 / 3) shorter chunks at the end
        assert parts[0].job.parts > uniform + 5
    assert got.table.equals(exact(job.events, job.lifecycle).table)
    # the cells are real: activity inside accountable time, conservation per rank
    assert sum(got.table["duration_ns"].to_pylist()) == got.accountable_ns()
    assert got.activity_ns().get("compute", 0) > 0


@pytest.mark.parametrize("head", [1, 2, 1000])
def test_an_event_reaching_past_a_head_falls_back_to_the_exact_way(small_chunks, taken, monkeypatch, head):
    """A long event before a chunk reaches past the chunk's head: the chunk's sweep
    would miss it, so the answer comes the exact way (heads of one row always
    miss it here; heads longer than the chunk are cut to half a chunk)."""
    monkeypatch.setattr(_crossing, "HEAD_ROWS", head)
    life = table([dict(record="accountable", rank=0, start=0, end=100),
                  dict(record="attempt", attempt=1, rank=-1, start=0, end=100, kind="completed")]
                 + [dict(record="step", attempt=1, rank=-1, step=k, start=10 * k, end=10 * k + 10)
                    for k in range(10)])
    evs = [(0, 90 * S, "communication")] + [(k * S, k * S + S // 2, "compute") for k in range(1, 40)]
    events = events_table({0: evs})
    got = pc.ledger(events, life)
    assert taken == [False]
    want = exact(events, life)
    assert got.table.equals(want.table)
    assert want.activity_ns() == {"compute": 39 * S // 2, "communication": 90 * S - 39 * S // 2, "idle": 10 * S}


def test_a_chunk_head_leaves_kinds_running_into_the_chunk(small_chunks, taken):
    """Chunks of two rows, heads of one: every chunk's first row (a collective)
    runs on past the start of the chunk's span, and the chunk opens it there from
    that row alone (no sweep of it); no row reaches past the next chunk's head, so
    the early sweep's cells stand, and equal the exact way's."""
    life = table([dict(record="accountable", rank=0, start=0, end=110),
                  dict(record="attempt", attempt=1, rank=-1, start=0, end=110, kind="completed")]
                 + [dict(record="step", attempt=1, rank=-1, step=k, start=10 * k, end=10 * k + 10)
                    for k in range(11)])
    evs = [e for k in range(10) for e in ((10 * k * S, (10 * k + 11) * S, "communication"),
                                         ((10 * k + 2) * S, (10 * k + 4) * S, "compute"))]
    events = events_table({0: evs})
    got = pc.ledger(events, life)
    assert taken == [True]
    assert got.table.equals(exact(events, life).table)
    # communication covers [0, 101 s) but for the compute inside it; idle after
    assert got.activity_ns() == {"compute": 20 * S, "communication": 81 * S, "idle": 9 * S}


def test_events_not_sorted_by_rank_or_time_fall_back(small_chunks, taken):
    job = _job(1)
    ev = job.events
    shuffled = ev.take(pa.array(np.random.default_rng(0).permutation(ev.num_rows)))
    got = pc.ledger(shuffled, job.lifecycle)
    assert taken == [False]
    assert got.table.equals(exact(ev, job.lifecycle).table)


def test_layouts_the_native_reader_leaves_alone(small_chunks, taken):
    """String kinds, int64 ranks, a record dictionary: the exact way, same answer."""
    job = _job(2)
    want = exact(job.events, job.lifecycle).table
    ev = job.events
    variants = [
        (ev.set_column(ev.schema.get_field_index("kind"), "kind", ev["kind"].cast(pa.string())), job.lifecycle),
        (ev.set_column(0, "rank", ev["rank"].cast(pa.int64())), job.lifecycle),
        (ev, job.lifecycle.set_column(0, "record", job.lifecycle["record"].dictionary_encode())),
    ]
    for events, life in variants:
        taken.clear()
        assert pc.ledger(events, life).table.equals(want)
        assert taken == [False]


def test_events_in_many_batches(small_chunks, taken, monkeypatch):
    monkeypatch.setattr(_crossing, "CHUNK_MIN_ROWS", 256)
    monkeypatch.setattr(_crossing, "HEAD_ROWS", 64)
    job = _job(3)
    batches = job.events.to_batches(max_chunksize=97)
    assert len(batches) > 3
    got = pc.ledger(pa.Table.from_batches(batches), job.lifecycle)
    assert taken == [True]
    assert got.table.equals(exact(job.events, job.lifecycle).table)


def test_a_bad_event_row_is_named_as_the_exact_way_names_it(small_chunks):
    job = _job(4)
    ev = job.events
    end = ev["end_ns"].to_numpy().copy()
    end[ev.num_rows // 2] = ev["start_ns"][ev.num_rows // 2].as_py() - 5  # ends before it starts
    bad = ev.set_column(ev.schema.get_field_index("end_ns"), "end_ns", pa.array(end))
    with pytest.raises(InvalidRowError) as got:
        pc.ledger(bad, job.lifecycle)
    with pytest.raises(InvalidRowError) as want:
        exact(bad, job.lifecycle)
    assert str(got.value) == str(want.value)
    assert f"row {ev.num_rows // 2}" in str(got.value)


def test_too_many_cuts_for_the_events_falls_back(monkeypatch, taken):
    """More window crossings than MAX_CROSSINGS_PER_EVENT per event: the sweep over
    the cuts is declined and the exact way runs."""
    monkeypatch.setattr(_crossing, "OVERLAP_MIN_ROWS", 0)
    monkeypatch.setattr(_crossing, "MAX_CROSSINGS_PER_EVENT", 1e-9)
    job = _job(5)
    assert pc.ledger(job.events, job.lifecycle).table.equals(exact(job.events, job.lifecycle).table)
    assert taken == [False]


def _ledger_in_child(queue):
    job = _job(6)
    queue.put(pc.ledger(job.events, job.lifecycle).table.to_pylist())


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork on this platform")
def test_a_forked_child_gets_helper_threads_of_its_own(small_chunks):
    """The helper threads are the process's own: after a fork (whose child has none)
    the child starts new ones instead of waiting on its parent's."""
    job = _job(6)
    want = pc.ledger(job.events, job.lifecycle).table.to_pylist()  # the parent's helpers exist now
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_ledger_in_child, args=(queue,))
    child.start()
    got = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert got == want


def test_a_checkpoint_saved_while_the_next_step_ran(small_chunks, taken):
    """Step 2's checkpoint is written during step 3: preserved work ends where step 2
    ends, an instant only the steps mark. It is a cut because a checkpoint names step
    2 (cuts that miss a change fall back: see the next test)."""
    life = table([dict(record="accountable", rank=0, start=0, end=100),
                  dict(record="attempt", attempt=1, rank=-1, start=0, end=45, kind="failed"),
                  dict(record="checkpoint_save", attempt=1, rank=-1, step=2, start=25, block=26, durable=27, ok=True),
                  dict(record="failure", attempt=1, rank=-1, start=45, kind="xid79"),
                  dict(record="attempt", attempt=2, rank=-1, start=60, end=100, kind="completed"),
                  dict(record="restore", attempt=2, rank=-1, step=2, start=60, end=62, ok=True)]
                 + [dict(record="step", attempt=1, rank=-1, step=k, start=10 * k - 10, end=10 * k) for k in range(1, 6)]
                 + [dict(record="step", attempt=2, rank=-1, step=k, start=62 + 10 * (k - 3), end=72 + 10 * (k - 3))
                    for k in range(3, 6)])
    assert 20 * S in _crossing.cuts(life, None).tolist()
    events = events_table({0: [(15 * S, 25 * S, "compute"), (70 * S, 71 * S, "compute")]})
    got = pc.ledger(events, life)
    assert taken == [True]
    want = exact(events, life)
    assert got.table.equals(want.table)
    cells = {(r["state"], r["activity"]): r["duration_ns"] for r in want.table.to_pylist()}
    assert cells[("productive", "compute")] == 5 * S + 1 * S  # [15, 20) and [70, 71)
    assert cells[("rolled_back", "compute")] == 5 * S         # [20, 25)


def test_cuts_that_miss_a_change_fall_back(small_chunks, taken, monkeypatch):
    """When a busy window reaches over a state boundary (the native crossing says so:
    see test_crossed_cells_match_the_reference), the early sweep's cells are not
    used: the exact way answers."""
    calls = []
    sweep = _core.CrossingSweep

    class Missed:  # the sweep's job, as if the crossing had found a run boundary inside a window
        def __init__(self, *a, **kw):
            self.job = sweep(*a, **kw)

        def start(self, helpers):
            self.job.start(helpers)

        def wait(self, *a, **kw):
            calls.append(self.job.wait(*a, **kw) is not None)
            return None

    monkeypatch.setattr(_core, "CrossingSweep", Missed)
    monkeypatch.setattr(_crossing, "CHUNK_MIN_ROWS", 10**9)  # no chunks: no head to miss
    monkeypatch.setattr(_crossing, "CHUNK_TAIL_ROWS", 10**9)
    job = _job(7)
    got = pc.ledger(job.events, job.lifecycle)
    assert calls == [True] and taken == [False]
    assert got.table.equals(exact(job.events, job.lifecycle).table)
