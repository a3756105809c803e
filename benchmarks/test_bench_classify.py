"""In-memory classification: pau against the engines a user would otherwise use.

One benchmark group per input size, so the report puts the engines side by side:

* ``test_pau_overlap``: ``pau.core.overlap`` + reduction to the five figures
  (:func:`engines.pau_numbers`): the complete answer from one pau call.
* ``test_pau_classify``: ``pau.core.classify`` alone (exclusive time by priority).
* ``test_pau_classify_one_thread``: the same with ``threads=1``.
* ``test_numba_exclusive``: a plain single-threaded Numba sweep computing what
  ``classify`` computes, exclusive time per activity by priority
  (``engines.numba_exclusive``).
* ``test_numba_sweep``: a leaner single-threaded Numba sweep of the four union figures
  only (``engines.numba_sweep``): it cannot tell memcpy, memset, sync or other apart.
* ``test_duckdb_sql``: the same figures in DuckDB SQL (``engines.duckdb_numbers``).

Inputs (prepared once per session, untimed): the Arrow table exactly as
``pau.synth.training_run_for_events`` produces it (sorted by ``(rank, start_ns)``,
``kind`` a dictionary) for pau; numpy arrays for Numba, with the kind dictionary
already turned into ``int8`` codes (a conversion a Numba user must do, left out
of the timing); for DuckDB the same Arrow table registered as a view.

Every benchmark asserts that its answer equals pau's, exactly. The engines
themselves are checked against a brute-force count on small timelines first.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import engines
import pau.core


# --------------------------------------------------------------------------- benchmarks


def test_pau_overlap(benchmark, case, note_rate):
    benchmark.group = case.group
    benchmark.extra_info["events"] = case.n
    got = benchmark(engines.pau_numbers, case.table)
    note_rate(benchmark, case.n)
    assert got == case.reference, got.diff(case.reference)


def test_pau_classify(benchmark, case, note_rate):
    benchmark.group = case.group
    benchmark.extra_info["events"] = case.n
    out = benchmark(pau.core.classify, case.table)
    note_rate(benchmark, case.n)
    want = engines.classify_view_of(case.reference)
    got = engines.classify_view(out)
    assert engines.views_equal(got, want), (got, want)
    assert out.schema.metadata[b"pau.rows"] == str(case.n).encode()


def test_pau_classify_one_thread(benchmark, case, note_rate):
    """``classify(threads=1)``: pau on the same single core as the Numba sweep (by
    default pau sweeps inputs of ``pau.engine._threads.PARALLEL_MIN_ROWS`` (500,000) rows or more
    on one thread per core, by rank)."""
    benchmark.group = case.group
    benchmark.extra_info["events"] = case.n
    out = benchmark(pau.core.classify, case.table, threads=1)
    note_rate(benchmark, case.n)
    assert engines.views_equal(engines.classify_view(out), engines.classify_view_of(case.reference))


def test_numba_exclusive(benchmark, case, note_rate):
    benchmark.group = case.group
    benchmark.extra_info["events"] = case.n
    got = benchmark(engines.numba_exclusive, *case.columns)
    note_rate(benchmark, case.n)
    assert engines.views_equal(got, engines.exclusive_view(pau.core.classify(case.table)))


def test_numba_sweep(benchmark, case, note_rate):
    benchmark.group = case.group
    benchmark.extra_info["events"] = case.n
    got = benchmark(engines.numba_sweep, *case.columns)
    note_rate(benchmark, case.n)
    assert got == case.reference, got.diff(case.reference)


def test_duckdb_sql(benchmark, case, note_rate):
    benchmark.group = case.group
    benchmark.extra_info["events"] = case.n
    # About a second per call at 1M events, several at 10M: three rounds for a median.
    got = benchmark.pedantic(engines.duckdb_numbers, args=(case.duckdb,), rounds=3,
                             iterations=1, warmup_rounds=0)
    note_rate(benchmark, case.n)
    assert got == case.reference, got.diff(case.reference)


def test_reference_is_not_trivial(case):
    """The synthetic run exercises every figure (a check on the benchmark input)."""
    r = case.reference
    assert case.ranks == case.requested_ranks
    assert (r.busy < r.span).all()              # idle gaps exist
    assert (r.overlap > 0).all()                # overlapped communication
    assert (r.overlap < r.communication).all()  # and exposed communication
    assert (r.compute < r.busy).all()           # copies/syncs outside compute


# --------------------------------------------------------------------------- engines are right


def brute_force(table: pa.Table) -> engines.Numbers:
    """Mark every nanosecond of small timelines: obviously correct, slow."""
    rank = table["rank"].to_numpy()
    start = table["start_ns"].to_numpy()
    end = table["end_ns"].to_numpy()
    kind = np.asarray(table["kind"].to_pylist(), dtype=object)
    rows = []
    for r in np.unique(rank):
        m = rank == r
        lo, hi = int(start[m].min()), int(end[m].max())
        busy = np.zeros(max(hi - lo, 0), bool)
        p, c = busy.copy(), busy.copy()
        for s, e, k in zip(start[m], end[m], kind[m]):
            busy[s - lo:e - lo] = True  # half-open [s, e)
            if k == "compute":
                p[s - lo:e - lo] = True
            elif k == "communication":
                c[s - lo:e - lo] = True
        rows.append((r, hi - lo, busy.sum(), p.sum(), c.sum(), (p & c).sum()))
    cols = list(zip(*rows)) if rows else [[]] * 6
    return engines._numbers(*cols)


def brute_exclusive(table: pa.Table) -> dict:
    """Exclusive time per activity by marking every nanosecond with the winner."""
    rank = table["rank"].to_numpy()
    start = table["start_ns"].to_numpy()
    end = table["end_ns"].to_numpy()
    kind = np.asarray(table["kind"].to_pylist(), dtype=object)
    acts = pau.core.ACTIVITIES
    out = {"rank": np.unique(rank).astype(np.int32), **{a: [] for a in acts}}
    for r in out["rank"]:
        m = rank == r
        lo, hi = int(start[m].min()), int(end[m].max())
        win = np.full(max(hi - lo, 0), len(acts) - 1)  # idle
        for s, e, k in zip(start[m], end[m], kind[m]):
            seg = win[s - lo:e - lo]
            np.minimum(seg, acts.index(k), out=seg)  # KINDS order is the priority
        for i, a in enumerate(acts):
            out[a].append(int((win == i).sum()))
    return {k: np.asarray(v, np.int64) if k != "rank" else v for k, v in out.items()}


def _small_timeline(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    start = rng.integers(0, 300, n)
    # Many zero-length, touching and nested events at this scale.
    end = start + rng.choice([0, 1, 5, 20, 60], n)
    kind = rng.choice(np.array(["compute", "communication", "memcpy", "sync", "other"]), n)
    t = pa.table({
        "rank": pa.array(rng.integers(0, 4, n), pa.int32()),
        "start_ns": pa.array(start, pa.int64()),
        "end_ns": pa.array(end, pa.int64()),
        "kind": pa.array(kind).dictionary_encode(),
    })
    return t.sort_by([("rank", "ascending"), ("start_ns", "ascending")])


EDGE = pa.table({
    # rank 0: touching compute [0,10) [10,20); comm [5,25) overlaps 15 ns of it;
    #         zero-length comm at 30; memcpy [40,50) after a gap.
    # rank 1: one zero-length event only (span 0).
    # rank 2: comm nested in comm, no compute.
    "rank": pa.array([0, 0, 0, 0, 0, 1, 2, 2], pa.int32()),
    "start_ns": pa.array([0, 5, 10, 30, 40, 7, 100, 110], pa.int64()),
    "end_ns": pa.array([10, 25, 20, 30, 50, 7, 200, 120], pa.int64()),
    "kind": pa.array(["compute", "communication", "compute", "communication", "memcpy",
                      "sync", "communication", "communication"]).dictionary_encode(),
})
EDGE_WANT = engines._numbers(
    [0, 1, 2],
    [50, 0, 100],   # span
    [35, 0, 100],   # busy: [0,25) + [40,50)
    [20, 0, 0],     # compute
    [20, 0, 100],   # communication
    [15, 0, 0],     # overlap: [5,20)
)


def _all_engines(table: pa.Table) -> dict:
    con = engines.duckdb_connect(table)
    try:
        return {
            "pau.overlap": engines.pau_numbers(table),
            "numba": engines.numba_sweep(*engines.numpy_columns(table)),
            "duckdb": engines.duckdb_numbers(con),
            "duckdb islands": engines.duckdb_numbers(con, sql=engines.DUCKDB_ISLANDS_SQL),
        }
    finally:
        con.close()


def test_engines_on_edge_cases():
    assert brute_force(EDGE) == EDGE_WANT, brute_force(EDGE).diff(EDGE_WANT)
    for name, got in _all_engines(EDGE).items():
        assert got == EDGE_WANT, f"{name}: {got.diff(EDGE_WANT)}"
    view = engines.classify_view(pau.core.classify(EDGE))
    assert engines.views_equal(view, engines.classify_view_of(EDGE_WANT)), view
    ex = engines.numba_exclusive(*engines.numpy_columns(EDGE))
    assert engines.views_equal(ex, brute_exclusive(EDGE)), ex
    assert ex["memcpy"].tolist() == [10, 0, 0] and ex["sync"].tolist() == [0, 0, 0], ex


@pytest.mark.parametrize("seed", range(40))
def test_engines_match_brute_force(seed):
    table = _small_timeline(seed)
    want = brute_force(table)
    for name, got in _all_engines(table).items():
        assert got == want, f"{name}: {got.diff(want)}"
    view = engines.classify_view(pau.core.classify(table))
    assert engines.views_equal(view, engines.classify_view_of(want)), view
    brute = brute_exclusive(table)
    assert engines.views_equal(engines.numba_exclusive(*engines.numpy_columns(table)), brute)
    assert engines.views_equal(engines.exclusive_view(pau.core.classify(table)), brute)
