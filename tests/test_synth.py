"""Tests of pau.synth, the synthetic training-run generator.

Everything here is checked with plain numpy (no pau.core): union lengths per kind are
computed by a sweep over the interval boundaries of each rank.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pau import synth
from pau.errors import OptionError

KINDS = ("compute", "communication", "memcpy", "memset", "sync", "other")


# --------------------------------------------------------------------------- helpers


def cols(t: pa.Table) -> dict[str, np.ndarray]:
    kind = t["kind"].combine_chunks()
    out = {
        "rank": t["rank"].to_numpy(),
        "stream": t["stream"].to_numpy(),
        "start": t["start_ns"].to_numpy(),
        "end": t["end_ns"].to_numpy(),
        "step": t["step"].to_numpy(),
        "kind": np.asarray(kind.dictionary.to_pylist(), dtype=object)[kind.indices.to_numpy()],
    }
    return out


def activity(t: pa.Table) -> dict[int, dict[str, int]]:
    """Per rank: union time of each kind, exposed communication, overlap C∩P, busy, span."""
    c = cols(t)
    result = {}
    for rank in np.unique(c["rank"]):
        m = c["rank"] == rank
        s, e, k = c["start"][m], c["end"][m], c["kind"][m]
        bounds = np.unique(np.concatenate([s, e]))
        seg = np.diff(bounds)
        active = {}
        for kind in KINDS:
            km = k == kind
            delta = np.zeros(len(bounds), np.int64)
            np.add.at(delta, np.searchsorted(bounds, s[km]), 1)
            np.add.at(delta, np.searchsorted(bounds, e[km]), -1)
            active[kind] = np.cumsum(delta)[:-1] > 0
        comp, comm = active["compute"], active["communication"]
        row = {kind: int(seg[a].sum()) for kind, a in active.items()}
        row["exposed_communication"] = int(seg[comm & ~comp].sum())
        row["overlap"] = int(seg[comm & comp].sum())
        row["busy"] = int(seg[np.any(list(active.values()), axis=0)].sum())
        row["span"] = int(bounds[-1] - bounds[0])
        result[int(rank)] = row
    return result


def assert_sorted_by_rank_start(t: pa.Table) -> None:
    c = cols(t)
    dr, ds = np.diff(c["rank"]), np.diff(c["start"])
    assert np.all((dr > 0) | ((dr == 0) & (ds >= 0)))


def assert_invariants(t: pa.Table, ranks: int, steps: int, kernels: int, buckets: int,
                      start_ns: int) -> None:
    c = cols(t)
    assert_sorted_by_rank_start(t)
    assert set(np.unique(c["rank"])) == set(range(ranks))
    assert np.all(c["start"] >= start_ns)
    assert np.all(c["end"] > c["start"])
    # streams: one per role, events of one stream never overlap on a rank
    assert set(c["stream"][c["kind"] == "communication"]) == {synth.COMMUNICATION_STREAM}
    assert set(c["stream"][c["kind"] == "memcpy"]) == {synth.COPY_STREAM}
    for kind in ("compute", "memset", "sync", "other"):
        assert set(c["stream"][c["kind"] == kind]) <= {synth.COMPUTE_STREAM}
    for rank in range(ranks):
        for stream in np.unique(c["stream"]):
            m = (c["rank"] == rank) & (c["stream"] == stream)
            s, e = c["start"][m], c["end"][m]
            assert np.all(s[1:] >= e[:-1]), (rank, stream)
    # composition of each (rank, step)
    key = c["rank"].astype(np.int64) * steps + c["step"]
    n = ranks * steps
    for kind, lo, hi in (("compute", kernels, kernels), ("communication", buckets, buckets),
                         ("memcpy", 1, 1), ("sync", 1, 1), ("memset", 0, 1), ("other", 0, 1)):
        counts = np.bincount(key[c["kind"] == kind], minlength=n)
        assert counts.min() >= lo and counts.max() <= hi, kind
    # steps follow each other on each rank: the step starts at the previous step's end,
    # then a data wait with no event, then the H2D copy; the sync ends the step.
    first = np.full(n, np.iinfo(np.int64).max)
    last = np.zeros(n, np.int64)
    np.minimum.at(first, key, c["start"])
    np.maximum.at(last, key, c["end"])
    first, last = first.reshape(ranks, steps), last.reshape(ranks, steps)
    assert np.all(first[:, 1:] > last[:, :-1])
    copy = c["kind"] == "memcpy"
    assert np.array_equal(c["start"][copy].reshape(ranks, steps), first)
    sync = c["kind"] == "sync"
    assert np.array_equal(c["end"][sync].reshape(ranks, steps), last)
    # synchronizing collectives: each bucket of a step ends at the same instant everywhere
    comm = c["kind"] == "communication"
    comm_end = c["end"][comm].reshape(ranks, steps * buckets)
    assert np.all(comm_end == comm_end[0])


# --------------------------------------------------------------------------- schema


@pytest.mark.parametrize("names", [False, True])
def test_schema_and_dtypes(names):
    t = synth.training_run(ranks=3, steps=5, seed=1, names=names)
    assert t.schema.equals(synth.events_schema(names))
    expected = ["rank", "stream", "start_ns", "end_ns", "kind"] + (["name"] if names else []) \
        + ["step"]
    assert t.column_names == expected
    assert t.schema.field("rank").type == pa.int32()
    assert t.schema.field("stream").type == pa.int32()
    assert t.schema.field("start_ns").type == pa.int64()
    assert t.schema.field("end_ns").type == pa.int64()
    assert t.schema.field("step").type == pa.int64()
    assert t.schema.field("kind").type == pa.dictionary(pa.int8(), pa.string())
    assert t["kind"].combine_chunks().dictionary.to_pylist() == list(KINDS)
    assert synth.KINDS == KINDS
    assert t.num_rows > 0 and all(t[n].null_count == 0 for n in t.column_names)
    if names:
        c = cols(t)
        name = np.asarray(t["name"].to_pylist(), dtype=object)
        assert np.all(name[c["kind"] == "communication"]
                      == "ncclDevKernel_AllReduce_Sum_bf16_RING_LL")
        assert all(len(x) > 0 for x in name)


def test_names_do_not_change_events():
    a = synth.training_run(ranks=2, steps=4, seed=3)
    b = synth.training_run(ranks=2, steps=4, seed=3, names=True)
    assert b.drop_columns(["name"]).equals(a)


def test_every_kind_present_and_realistic_durations():
    t = synth.training_run(ranks=4, steps=40, seed=0)
    c = cols(t)
    assert set(c["kind"]) == set(KINDS)
    dur = c["end"] - c["start"]
    comp = dur[c["kind"] == "compute"]
    # kernels: tens of µs to ms
    assert 10_000 < np.median(comp) < 500_000
    assert comp.max() < 50_000_000
    # a step lasts milliseconds; data waits (gap before the copy) exist and vary
    act = activity(t)
    for row in act.values():
        assert 0.5 < row["compute"] / row["span"] < 0.95
        assert row["busy"] < row["span"]  # idle: data waits and launch gaps


def test_start_ns_and_first_step():
    t = synth.training_run(ranks=2, steps=3, start_ns=0, seed=2)
    c = cols(t)
    assert np.all(c["start"] >= 0) and np.all(c["end"] >= c["start"])
    t2 = synth.training_run(ranks=2, steps=3, start_ns=10**12, seed=2)
    c2 = cols(t2)
    assert np.array_equal(c2["start"] - c["start"], np.full(len(c["start"]), 10**12))


# --------------------------------------------------------------------------- determinism


def test_same_seed_identical_and_seeds_differ():
    a = synth.training_run(ranks=4, steps=20, seed=7)
    b = synth.training_run(ranks=4, steps=20, seed=7)
    c = synth.training_run(ranks=4, steps=20, seed=8)
    assert a.equals(b)
    assert not np.array_equal(a["end_ns"].to_numpy()[:100], c["end_ns"].to_numpy()[:100])


def test_prefix_stability():
    """A longer run starts with the shorter run's steps (blocks are seeded by index)."""
    short = synth.training_run(ranks=2, steps=5, seed=4)
    long = synth.training_run(ranks=2, steps=9, seed=4)
    kept = long.filter(pc.less(long["step"], 5))
    assert kept.equals(short)


# --------------------------------------------------------------------------- model


def test_invariants_default_run():
    t = synth.training_run(ranks=8, steps=30, seed=0)
    assert_invariants(t, 8, 30, synth.DEFAULT_KERNELS_PER_STEP, synth.DEFAULT_BUCKETS,
                      synth.DEFAULT_START_NS)


@settings(max_examples=examples(25), deadline=None)
@given(ranks=st.integers(1, 5), steps=st.integers(1, 12), kernels=st.integers(3, 40),
       buckets=st.integers(1, 6), seed=st.integers(0, 2**32), straggle=st.booleans())
def test_invariants_property(ranks, steps, kernels, buckets, seed, straggle):
    n_opt = max(1, kernels // 32)
    n_bwd = (kernels - n_opt) - max(1, (kernels - n_opt) // 3)
    buckets = min(buckets, n_bwd)
    straggler = (ranks - 1, 2.0) if straggle else None
    t = synth.training_run(ranks, steps, kernels_per_step=kernels, buckets=buckets, seed=seed,
                           straggler=straggler, start_ns=1000)
    assert_invariants(t, ranks, steps, kernels, buckets, 1000)


def test_communication_partly_hidden_with_exposed_tail():
    act = activity(synth.training_run(ranks=4, steps=30, seed=5))
    for row in act.values():
        ratio = row["overlap"] / row["communication"]
        assert 0.2 < ratio < 0.95
        assert row["exposed_communication"] > 0


def test_straggler_slows_itself_and_makes_others_wait():
    base = activity(synth.training_run(ranks=6, steps=40, seed=11))
    slow = activity(synth.training_run(ranks=6, steps=40, seed=11, straggler=(2, 1.5)))
    assert slow[2]["compute"] > 1.3 * base[2]["compute"]
    for r in range(6):
        if r == 2:
            continue
        assert slow[r]["compute"] == pytest.approx(base[r]["compute"], rel=1e-3)
        assert slow[r]["exposed_communication"] > 1.3 * base[r]["exposed_communication"]
        # others wait more than the straggler does
        assert slow[r]["exposed_communication"] > slow[2]["exposed_communication"]
    # (None, factor) means no straggler
    a = synth.training_run(ranks=2, steps=3, seed=1, straggler=(None, 3.0))
    assert a.equals(synth.training_run(ranks=2, steps=3, seed=1))


@pytest.mark.parametrize("kwargs, match", [
    ({"ranks": 0}, "ranks must be a positive int"),
    ({"steps": -1}, "steps must be a non-negative int"),
    ({"steps": 1.5}, "steps must be a non-negative int"),
    ({"kernels_per_step": 2}, "kernels_per_step must be >= 3"),
    ({"kernels_per_step": 9.0}, "kernels_per_step must be an int"),
    ({"buckets": 0}, "buckets must be between 1"),
    ({"buckets": 10_000}, "buckets must be between 1"),
    ({"seed": -1}, "seed must be a non-negative int"),
    ({"straggler": (8, 2.0)}, "straggler rank"),
    ({"straggler": (0, 0.0)}, "straggler factor"),
    ({"straggler": (0, "x")}, "straggler factor"),
    ({"straggler": 3}, "straggler must be None or a"),
    ({"start_ns": -5}, "start_ns must be a non-negative int"),
])
def test_invalid_arguments(kwargs, match):
    """A bad argument is an OptionError (a ValueError) naming it, never a bare builtin."""
    args = {"ranks": 8, "steps": 2, **kwargs}
    with pytest.raises(OptionError, match=match):
        synth.training_run(**args)


def test_zero_steps_is_empty():
    t = synth.training_run(ranks=3, steps=0)
    assert t.num_rows == 0 and t.schema.equals(synth.events_schema())


# --------------------------------------------------------------------------- sizing


def test_sizing_helpers():
    assert synth.expected_events(8, 100) == pytest.approx(8 * 100 * (96 + 4 + 2 + 0.35))
    assert synth.steps_for_events(0) == 1
    for n in (20_000, 200_000):
        t = synth.training_run_for_events(n, ranks=4, seed=3)
        assert abs(t.num_rows - n) / n < 0.03
        steps = synth.steps_for_events(n, ranks=4)
        assert t["step"].to_numpy().max() == steps - 1
    t = synth.training_run_for_events(50_000, ranks=2, kernels_per_step=20, buckets=2)
    assert abs(t.num_rows - 50_000) / 50_000 < 0.03


# --------------------------------------------------------------------------- chunks / Parquet


def sort_rank_start(t: pa.Table) -> pa.Table:
    order = np.lexsort((t["start_ns"].to_numpy(), t["rank"].to_numpy()))
    return t.take(pa.array(order))


def test_iter_training_run_chunks_bounded_and_equal_to_one_table():
    full = synth.training_run(ranks=8, steps=700, seed=9)
    chunks = list(synth.iter_training_run(8, 700, seed=9, chunk_events=300_000))
    assert len(chunks) >= 2
    assert all(0 < c.num_rows <= 300_000 for c in chunks)
    steps_seen = []
    for c in chunks:
        assert c.schema.equals(full.schema)
        assert_sorted_by_rank_start(c)
        steps_seen.append((c["step"].to_numpy().min(), c["step"].to_numpy().max()))
    # chunks are consecutive blocks of steps for all ranks
    assert steps_seen[0][0] == 0 and steps_seen[-1][1] == 699
    assert all(b[0] == a[1] + 1 for a, b in zip(steps_seen, steps_seen[1:]))
    assert sort_rank_start(pa.concat_tables(chunks)).equals(full)


def test_write_parquet_round_trip(tmp_path):
    t = synth.training_run(ranks=3, steps=10, seed=1, names=True)
    path = tmp_path / "run.parquet"
    assert synth.write_parquet(t, path, row_group_size=1000) == t.num_rows
    back = pq.read_table(path)
    assert back.schema.equals(t.schema)
    assert back.schema.field("kind").type == pa.dictionary(pa.int8(), pa.string())
    assert back.drop_columns(["kind"]).equals(t.drop_columns(["kind"]))
    assert back["kind"].cast(pa.string()).equals(t["kind"].cast(pa.string()))
    meta = pq.ParquetFile(path).metadata
    assert meta.num_rows == t.num_rows
    assert max(meta.row_group(i).num_rows for i in range(meta.num_row_groups)) <= 1000
    assert meta.row_group(0).column(0).compression == "ZSTD"


def test_write_parquet_streams_and_empty(tmp_path):
    t = synth.training_run(ranks=2, steps=6, seed=1)
    reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=100))
    p1 = tmp_path / "a.parquet"
    assert synth.write_parquet(reader, p1) == t.num_rows
    back = pq.read_table(p1)
    assert back.schema.equals(t.schema)
    assert back.drop_columns(["kind"]).equals(t.drop_columns(["kind"]))
    assert back["kind"].cast(pa.string()).equals(t["kind"].cast(pa.string()))
    p2 = tmp_path / "empty.parquet"
    assert synth.write_parquet(iter([]), p2) == 0
    empty = pq.read_table(p2)
    assert empty.num_rows == 0 and empty.schema.equals(synth.events_schema())


def test_write_training_run_round_trip(tmp_path):
    path = tmp_path / "big.parquet"
    n = 400_000
    rows = synth.write_training_run(path, n, ranks=4, seed=5, chunk_events=150_000,
                                    row_group_size=100_000)
    pf = pq.ParquetFile(path)
    assert pf.metadata.num_rows == rows
    assert abs(rows - n) / n < 0.03
    assert pf.schema_arrow.equals(synth.events_schema())
    assert all(pf.metadata.row_group(i).num_rows <= 100_000
               for i in range(pf.metadata.num_row_groups))
    back = pf.read()
    c = cols(back)
    # sorted by start within each rank across the whole file
    for r in range(4):
        assert np.all(np.diff(c["start"][c["rank"] == r]) >= 0)
    expected = synth.training_run_for_events(n, ranks=4, seed=5)
    got = sort_rank_start(back)
    assert got.drop_columns(["kind"]).equals(expected.drop_columns(["kind"]))
    assert got["kind"].cast(pa.string()).equals(expected["kind"].cast(pa.string()))


def test_write_training_run_memory_is_bounded_by_a_chunk(tmp_path):
    n = 1_500_000
    tracemalloc.start()
    try:
        synth.training_run_for_events(n, ranks=8, seed=1)
        _, whole = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        synth.write_training_run(tmp_path / "m.parquet", n, ranks=8, seed=1,
                                 chunk_events=150_000)
        _, streamed = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert streamed < whole / 3
