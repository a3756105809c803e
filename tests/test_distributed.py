"""pau.io.write_dataset (the archive layout) and pau.distributed.classify_partitions.

One generated archive (about 200k events, 4 ranks, pau's layout) per module; every
way of running the partitions must give exactly ``classify_dataset(root)``, which
itself equals ``classify(table)``.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import pau.core as core
import pau.distributed as dist
import pau.io as pio
import pau.synth as synth
from pau.errors import PauError

RANKS = 4


@pytest.fixture(scope="module")
def run() -> pa.Table:
    return synth.training_run_for_events(200_000, ranks=RANKS, seed=3)


@pytest.fixture(scope="module")
def archive(tmp_path_factory, run):
    root = tmp_path_factory.mktemp("archive")
    # Small row groups so that each partition is streamed in several pieces.
    pio.write_dataset(run, root, row_group_size=20_000)
    return root


@pytest.fixture(scope="module")
def expected(run):
    return core.classify(run)


@pytest.fixture
def counted(monkeypatch):
    """Count partition sweeps (thread executors run in this process)."""
    calls: list = []
    real = dist._partition_hist

    def spy(path, keys, plan):
        calls.append(os.path.basename(os.path.dirname(path)))
        return real(path, keys, plan)

    monkeypatch.setattr(dist, "_partition_hist", spy)
    return calls


# --------------------------------------------------------------------------- layout


def test_write_dataset_layout(archive, run):
    files = pio.parquet_files(archive)
    assert [os.path.relpath(p, archive) for p, _ in files] == [
        os.path.join("job=job0", f"rank={r}", "part-0.parquet") for r in range(RANKS)]
    for path, keys in files:
        assert pio.layout_version(path) == pio.LAYOUT_VERSION
        t = pq.read_table(path)
        assert t.schema.field("kind").type == pa.dictionary(pa.int8(), pa.string())
        assert np.all(np.diff(t["start_ns"].to_numpy()) >= 0)
        assert set(t["rank"].to_pylist()) == {keys["rank"]}
        col = pq.ParquetFile(path).metadata.row_group(0)
        encodings = {col.column(i).path_in_schema: col.column(i).encodings for i in range(col.num_columns)}
        assert "DELTA_BINARY_PACKED" in encodings["start_ns"]
        assert "DELTA_BINARY_PACKED" in encodings["end_ns"]
    back = pio.read_dataset(archive).drop_columns(["job"])
    key = [("rank", "ascending"), ("start_ns", "ascending"), ("end_ns", "ascending"), ("stream", "ascending")]
    assert back.sort_by(key).equals(run.sort_by(key))


def test_write_dataset_round_trip(archive, expected):
    assert core.classify_dataset(archive, progress=False).equals(expected)  # one thread per rank file
    assert core.classify_dataset(archive, progress=False, workers=1).equals(expected)  # streamed


def test_rank_column_dropped_comes_from_the_folder(tmp_path, run, expected):
    # Older or foreign archives may drop the rank column: the rank=R folder fills it.
    pio.write_dataset(run, tmp_path)
    for path, _ in pio.parquet_files(tmp_path):
        pq.write_table(pq.read_table(path).drop_columns(["rank"]), path)
    assert core.classify_dataset(tmp_path, progress=False).equals(expected)
    assert dist.classify_partitions(tmp_path).equals(expected)


def test_write_dataset_refuses_to_overwrite(tmp_path, run):
    small = run.slice(0, 1000)
    pio.write_dataset(small, tmp_path)
    with pytest.raises(FileExistsError):
        pio.write_dataset(small, tmp_path)
    pio.write_dataset(small, tmp_path, overwrite=True)
    pio.write_dataset(small, tmp_path, job="job1")
    assert {k["job"] for _, k in pio.parquet_files(tmp_path)} == {"job0", "job1"}


def test_newer_layout_is_refused(tmp_path, run):
    path = tmp_path / "f.parquet"
    t = run.slice(0, 10)
    pq.write_table(t.replace_schema_metadata({"pau.layout_version": str(pio.LAYOUT_VERSION + 1)}), path)
    with pytest.raises(ValueError, match="newer"):
        pio.layout_version(path)
    assert pio.layout_version(_plain(tmp_path, t)) == 0


def _plain(tmp_path, t):
    p = tmp_path / "plain.parquet"
    pq.write_table(t, p)
    return p


# --------------------------------------------------------------------------- executors


def test_thread_pool_equals_single_thread(archive, expected):
    single = dist.classify_partitions(archive, workers=1)
    assert single.equals(expected)
    assert dist.classify_partitions(archive, workers=4).equals(expected)
    assert single.schema.metadata[b"pau.rows"] == str(expected_rows(archive)).encode()


def expected_rows(archive) -> int:
    return sum(pq.read_metadata(p).num_rows for p, _ in pio.parquet_files(archive))


def test_process_pool(archive, expected):
    assert dist.classify_partitions(archive, executor="process", workers=2).equals(expected)


def test_any_executor(archive, expected):
    with cf.ThreadPoolExecutor(2) as pool:
        assert dist.classify_partitions(archive, executor=pool).equals(expected)
        # A pool passed in is left running.
        assert pool.submit(lambda: 1).result() == 1


def test_windows_span_priority(archive, run):
    span = pa.table({"rank": pa.array([0, 2, 9], pa.int32()),
                     "start_ns": [0, 0, 5], "end_ns": [10**13, 10**12, 10**9]})
    prio = ["communication", "compute", "memcpy", "memset", "sync", "other"]
    for windows in (None, 10**9):
        want = core.classify(run, windows=windows, span=span, priority=prio)
        got = dist.classify_partitions(archive, windows=windows, span=span, priority=prio)
        assert got.equals(want)
        assert core.classify_dataset(archive, windows=windows, span=span, priority=prio,
                                     progress=False).equals(want)


def test_list_of_files(archive, expected):
    files = [p for p, _ in pio.parquet_files(archive)]
    assert dist.classify_partitions(files).equals(expected)


def test_rank_in_two_partitions_is_refused(tmp_path, run):
    for i, part in enumerate((run.slice(0, 1000), run.slice(1000, 1000))):
        pq.write_table(part.sort_by("start_ns"), tmp_path / f"p{i}.parquet")
    with pytest.raises(PauError, match="disjoint"):
        dist.classify_partitions(tmp_path)


def test_dask_local_cluster(archive, expected):
    distributed = pytest.importorskip("distributed", reason="dask[distributed] not installed (pau[dask])")
    # Two real worker processes, as a cluster would run them.
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        assert dist.classify_partitions(archive, client=client).equals(expected)


# --------------------------------------------------------------------------- incremental, resumable


def test_kill_and_resume(archive, expected, tmp_path, counted):
    results = tmp_path / "results"
    first = dist.classify_partitions(archive, results_dir=results)
    assert first.equals(expected) and len(counted) == RANKS
    saved = sorted(results.iterdir())
    assert len(saved) == RANKS and all(p.suffix == ".parquet" for p in saved)
    # A run killed before its last partition finished: that result is missing.
    lost = saved[1]
    lost.unlink()
    counted.clear()
    again = dist.classify_partitions(archive, results_dir=results)
    assert again.equals(expected)
    assert len(counted) == 1
    assert again.schema.metadata[b"pau.partitions_computed"] == b"1"
    assert again.schema.metadata[b"pau.partitions_reused"] == str(RANKS - 1).encode()
    # Nothing left to do: nothing recomputed, same answer.
    counted.clear()
    assert dist.classify_partitions(archive, results_dir=results).equals(expected)
    assert counted == []


def test_half_written_result_is_recomputed(archive, expected, tmp_path, counted):
    results = tmp_path / "results"
    dist.classify_partitions(archive, results_dir=results)
    victim = sorted(results.iterdir())[0]
    victim.write_bytes(victim.read_bytes()[:50])  # a torn file
    counted.clear()
    assert dist.classify_partitions(archive, results_dir=results).equals(expected)
    assert len(counted) == 1


def test_new_partition_recomputes_only_it(tmp_path, run, counted):
    root = tmp_path / "archive"
    results = tmp_path / "results"
    old = run.filter(pc.less(run["rank"], RANKS - 1))
    pio.write_dataset(old, root)
    assert dist.classify_partitions(root, results_dir=results).equals(core.classify(old))
    assert len(counted) == RANKS - 1
    # The last rank arrives as a new job folder of the same archive.
    pio.write_dataset(run.filter(pc.equal(run["rank"], RANKS - 1)), root, job="late")
    counted.clear()
    got = dist.classify_partitions(root, results_dir=results)
    assert got.equals(core.classify(run))
    assert counted == [f"rank={RANKS - 1}"]


def test_changed_partition_and_other_plan_are_recomputed(archive, tmp_path, run, counted):
    root = tmp_path / "archive"
    shutil.copytree(archive, root)
    results = tmp_path / "results"
    dist.classify_partitions(root, results_dir=results)
    # Rewrite rank 0 with fewer events: only it is recomputed.
    part = run.filter(pc.equal(run["rank"], 0)).slice(0, 5000)
    pio.write_dataset(pa.concat_tables([part] + [run.filter(pc.equal(run["rank"], r))
                                                 for r in range(1, RANKS)]), root, overwrite=True)
    os.utime(root / "job=job0" / "rank=0" / "part-0.parquet", ns=(1, 1))  # a different mtime for sure
    for r in range(1, RANKS):  # ranks 1.. keep their files' identity (same bytes, old mtime)
        src = archive / "job=job0" / f"rank={r}" / "part-0.parquet"
        dst = root / "job=job0" / f"rank={r}" / "part-0.parquet"
        shutil.copy2(src, dst)
    counted.clear()
    want = core.classify_dataset(root, progress=False, workers=1)
    assert dist.classify_partitions(root, results_dir=results).equals(want)
    assert counted == ["rank=0"]
    # Other windows: another plan, so nothing is reused.
    counted.clear()
    dist.classify_partitions(root, results_dir=results, windows=10**9)
    assert len(counted) == RANKS


def test_bad_arguments(archive):
    with pytest.raises(PauError):
        dist.classify_partitions(archive, executor="gpu")
    with pytest.raises(PauError):
        dist.classify_partitions(archive, workers=0)
    with pytest.raises(PauError):
        dist.classify_partitions(42)


def test_ledger_over_a_partitioned_archive_equals_in_memory(tmp_path):
    # The lifecycle's state intervals are the windows of every partition's sweep; the
    # partitions run one per thread and their histograms merge (disjoint ranks).
    from pau import synth

    job = synth.training_job(ranks=4, steps=120, seed=3, mtbf_s=40.0, checkpoint_every=20,
                             kernels_per_step=16)
    pio.write_dataset(job.events, tmp_path)
    led = core.ledger(str(tmp_path), job.lifecycle)
    assert led.table.equals(core.ledger(job.events, job.lifecycle).table)
    assert sum(led.table["duration_ns"].to_pylist()) == led.accountable_ns()
