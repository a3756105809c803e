"""pau.engine.io.write_dataset (the archive layout) and pau.engine.distributed.classify_partitions.

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
import pau.engine.distributed as dist
import pau.engine.io as pio
import pau.synth as synth
from pau.engine import _sweep
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

    def spy(path, keys, plan, *args):
        calls.append(os.path.basename(os.path.dirname(path)))
        return real(path, keys, plan, *args)

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
        assert "rank" not in t.column_names  # the rank=R folder alone names it
        col = pq.ParquetFile(path).metadata.row_group(0)
        encodings = {col.column(i).path_in_schema: col.column(i).encodings for i in range(col.num_columns)}
        assert "DELTA_BINARY_PACKED" in encodings["start_ns"]
        assert "DELTA_BINARY_PACKED" in encodings["end_ns"]
    back = pio.read_dataset(archive).select(run.column_names)
    key = [("rank", "ascending"), ("start_ns", "ascending"), ("end_ns", "ascending"), ("stream", "ascending")]
    assert back.sort_by(key).equals(run.sort_by(key))
    # plain readers open the archive without flags
    plain = pq.read_table(archive)
    assert plain.num_rows == run.num_rows
    assert sorted(int(r) for r in set(plain["rank"].to_pylist())) == list(range(RANKS))


def test_write_dataset_round_trip(archive, expected):
    assert core.classify_dataset(archive, progress=False).equals(expected)  # one thread per rank file
    assert core.classify_dataset(archive, progress=False, workers=1).equals(expected)  # streamed


def test_rank_column_in_the_file_still_reads(tmp_path, run, expected):
    # Layout 1 (and foreign archives) kept the rank column in each file beside the
    # rank=R folder: pau reads them the same.
    pio.write_dataset(run, tmp_path)
    for path, keys in pio.parquet_files(tmp_path):
        t = pq.read_table(path)
        t = t.add_column(0, "rank", pa.array(np.full(t.num_rows, int(keys["rank"]), np.int32)))
        pq.write_table(t.replace_schema_metadata({"pau.layout_version": "1"}), path)
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


def test_saved_results_are_reused_for_the_same_priority_only(archive, run, tmp_path, counted):
    """Where exclusive time alone is swept (the nested-union sweep, whose histogram
    depends on the priority), a result saved under one priority is not read back under
    another: each gets its own answer, equal to classify's."""
    results = tmp_path / "results"
    prio = ["communication", "compute", "memcpy", "memset", "sync", "other"]
    first = dist.classify_partitions(archive, results_dir=results)
    assert first.equals(core.classify(run))
    counted.clear()
    other = dist.classify_partitions(archive, results_dir=results, priority=prio)
    assert other.equals(core.classify(run, priority=prio))
    assert len(counted) == (RANKS if _sweep.lean_path(_sweep.plan_of(None, None)) else 0)
    counted.clear()
    assert dist.classify_partitions(archive, results_dir=results, priority=prio).equals(other)
    assert counted == []


def test_half_written_result_is_recomputed(archive, expected, tmp_path, counted):
    results = tmp_path / "results"
    dist.classify_partitions(archive, results_dir=results)
    victim = sorted(results.iterdir())[0]
    victim.write_bytes(victim.read_bytes()[:50])  # a torn file
    counted.clear()
    assert dist.classify_partitions(archive, results_dir=results).equals(expected)
    assert len(counted) == 1


@pytest.mark.parametrize("at", [i / 16 for i in range(16)] + [1.05, 1.2])  # the last two: in the footer
def test_a_flipped_bit_in_a_saved_result_is_recomputed_not_believed(archive, expected, tmp_path, counted, at):
    # results carry page checksums: a flipped bit anywhere in a page is caught on load and
    # that partition runs again; it never changes the answer
    results = tmp_path / "results"
    dist.classify_partitions(archive, results_dir=results)
    victim = sorted(results.iterdir())[0]
    pf = pq.ParquetFile(victim)
    data = bytearray(victim.read_bytes())
    col = pf.metadata.row_group(0).column(pf.schema_arrow.get_field_index("duration"))
    first = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
    data[first + int(col.total_compressed_size * at)] ^= 0x10
    victim.write_bytes(bytes(data))
    counted.clear()
    assert dist.classify_partitions(archive, results_dir=results).equals(expected)


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


# --------------------------------------------------------------------------- progress


def _snapshots():
    seen: list = []
    return seen, seen.append


@pytest.mark.parametrize("executor", [None, "process"])
def test_progress_callable_counts_are_right_and_monotone(archive, expected, executor):
    seen, report = _snapshots()
    got = dist.classify_partitions(archive, executor=executor, workers=2, progress=report)
    assert got.equals(expected)
    total = expected_rows(archive)
    assert seen, "no progress reported"
    assert all(isinstance(p, dist.Progress) for p in seen)
    assert all(p.partitions_total == RANKS and p.rows_total == total for p in seen)
    for a, b in zip(seen, seen[1:]):
        assert b.partitions_done >= a.partitions_done and b.rows_done >= a.rows_done
        assert b.elapsed_s >= a.elapsed_s
    last = seen[-1]
    assert (last.partitions_done, last.rows_done) == (RANKS, total)
    # Every partition's completion is reported, never with fewer rows than the files done.
    per_file = sorted(pq.read_metadata(p).num_rows for p, _ in pio.parquet_files(archive))
    assert sorted({p.partitions_done for p in seen})[-RANKS:] == list(range(1, RANKS + 1))
    for p in seen:
        assert sum(per_file[:p.partitions_done]) <= p.rows_done <= total and p.rows_per_s >= 0


def test_progress_reports_reused_partitions(archive, expected, tmp_path):
    results = tmp_path / "results"
    dist.classify_partitions(archive, results_dir=results)
    seen, report = _snapshots()
    assert dist.classify_partitions(archive, results_dir=results, progress=report).equals(expected)
    assert [p.partitions_done for p in seen] == list(range(1, RANKS + 1))
    assert seen[-1].rows_done == expected_rows(archive)


def test_progress_true_draws_only_on_a_terminal(archive, expected, monkeypatch, capsys):
    import io
    import sys

    class FakeTTY(io.StringIO):
        def isatty(self):
            return True

    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    assert dist.classify_partitions(archive, workers=2, progress=True).equals(expected)
    text = tty.getvalue()
    total = expected_rows(archive)
    assert text.startswith("\r[") and text.endswith("\n") and text.count("\n") == 1
    last = text.rstrip("\n").split("\r")[-1]
    assert f"{RANKS}/{RANKS} partitions  {total:,}/{total:,} rows" in last
    assert "M rows/s" in last and "#" * 30 in last
    monkeypatch.undo()
    # Not a terminal (pytest's capture): nothing is written.
    assert dist.classify_partitions(archive, workers=2, progress=True).equals(expected)
    assert capsys.readouterr().err == ""


def test_bad_progress_is_refused(archive):
    with pytest.raises(PauError, match="progress"):
        dist.classify_partitions(archive, progress="yes")


# --------------------------------------------------------------------------- Ctrl-C


def _interrupt_after(k):
    seen: list = []

    def report(p):
        seen.append(p)
        if p.partitions_done >= k:
            raise KeyboardInterrupt

    return report


@pytest.mark.parametrize("k", [1, 2])
def test_interrupt_keeps_finished_partitions_and_resumes(archive, expected, tmp_path, counted, k):
    from pau.errors import Interrupted

    results = tmp_path / "results"
    with pytest.raises(Interrupted) as info:
        dist.classify_partitions(archive, results_dir=results, workers=1, progress=_interrupt_after(k))
    exc = info.value
    assert isinstance(exc, KeyboardInterrupt) and not isinstance(exc, ValueError)
    saved = [p for p in results.iterdir() if p.suffix == ".parquet"]
    # The k reported partitions are saved; the one running then was finished and saved too.
    assert k <= len(saved) == exc.saved <= k + 1 and exc.total == RANKS
    assert f"{exc.saved} of {RANKS} partitions are saved" in str(exc) and "resume" in str(exc)
    first = len(counted)
    assert first == exc.saved  # nothing was started and thrown away
    again = dist.classify_partitions(archive, results_dir=results)
    assert again.equals(expected)
    assert again.schema.metadata[b"pau.partitions_reused"] == str(exc.saved).encode()
    # Only the remaining partitions were computed: each partition exactly once in all.
    assert sorted(counted) == [f"rank={r}" for r in range(RANKS)]


def test_interrupt_without_results_dir_says_nothing_was_kept(archive):
    from pau.errors import Interrupted

    with pytest.raises(Interrupted, match="none kept") as info:
        dist.classify_partitions(archive, workers=2, progress=_interrupt_after(1))
    assert info.value.saved == 0
    with pytest.raises(Interrupted, match="classify_dataset interrupted"):
        core.classify_dataset(archive, workers=2, progress=_interrupt_after(1))


def test_interrupt_with_a_process_pool_shuts_it_down(archive, expected, tmp_path):
    from pau.errors import Interrupted

    results = tmp_path / "results"
    with pytest.raises(Interrupted):
        dist.classify_partitions(archive, executor="process", workers=2, results_dir=results,
                                 progress=_interrupt_after(1))
    assert dist.classify_partitions(archive, results_dir=results).equals(expected)


# --------------------------------------------------------------------------- memory budget


@pytest.fixture
def in_flight(monkeypatch):
    """The most partitions being swept at the same time (thread executors)."""
    import threading

    state = {"now": 0, "max": 0}
    lock = threading.Lock()
    real = dist._partition_hist

    def spy(*args):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        try:
            return real(*args)
        finally:
            with lock:
                state["now"] -= 1

    monkeypatch.setattr(dist, "_partition_hist", spy)
    return state


def _footprint(archive) -> int:
    """What one partition of the archive is charged: two of its largest row groups."""
    return max(dist.ROW_GROUP_COPIES * max(pio.row_group_bytes(p, keys=k)) for p, k in pio.parquet_files(archive))


def test_row_group_bytes_bounds_what_a_read_holds(archive):
    path, keys = pio.parquet_files(archive)[0]
    est = pio.row_group_bytes(path, keys=keys)
    pf = pq.ParquetFile(path)
    assert len(est) == pf.num_row_groups
    for i, e in enumerate(est):
        t = pf.read_row_group(i, columns=["rank", "start_ns", "end_ns", "kind"])
        assert t.nbytes <= e <= 2 * t.nbytes


def test_tiny_budget_runs_one_partition_at_a_time(archive, expected, in_flight):
    one = _footprint(archive)
    got = dist.classify_partitions(archive, workers=4, memory_budget=one)
    assert got.equals(expected)
    assert in_flight["max"] == 1 and got.schema.metadata[b"pau.max_in_flight"] == b"1"
    in_flight["max"] = 0
    got = dist.classify_partitions(archive, workers=4, memory_budget=2 * one)
    assert got.equals(expected) and got.schema.metadata[b"pau.max_in_flight"] == b"2"
    assert in_flight["max"] <= 2
    assert core.classify_dataset(archive, memory_budget=one).equals(expected)
    assert core.classify_dataset(archive, memory_budget=f"{one}B", workers=1).equals(expected)


def test_budget_smaller_than_a_row_group_raises(archive):
    from pau.errors import MemoryBudgetError

    one = _footprint(archive)
    for call in (lambda b: dist.classify_partitions(archive, memory_budget=b),
                 lambda b: core.classify_dataset(archive, memory_budget=b),
                 lambda b: core.classify_dataset(archive, memory_budget=b, workers=1)):
        with pytest.raises(MemoryBudgetError, match="row_group_size") as info:
            call(one - 1)
        assert f"at least {one:,}" in str(info.value)


def test_memory_budget_strings():
    assert dist.parse_memory_budget("2GiB") == 2 * 2**30
    assert dist.parse_memory_budget("1.5 MB") == 1_500_000
    assert dist.parse_memory_budget(4096) == 4096 and dist.parse_memory_budget(None) is None
    for bad in ("lots", "2 GiBs", 0, -1, True, 1.5):
        with pytest.raises(PauError, match="memory_budget"):
            dist.parse_memory_budget(bad)


# --------------------------------------------------------------------------- quarantine


@pytest.fixture(scope="module")
def dirty(tmp_path_factory, run):
    """The archive with bad rows in ranks 1 and 3 (end before start, an unknown kind)."""
    root = tmp_path_factory.mktemp("dirty")
    tables = []
    for r in range(RANKS):
        t = run.filter(pc.equal(run["rank"], r)).sort_by([("start_ns", "ascending"), ("end_ns", "ascending")])
        if r in (1, 3):
            n = t.num_rows
            end = t["end_ns"].to_numpy().copy()
            end[[5, n // 2, n - 1]] = -1
            kind = t["kind"].to_pylist()
            kind[7] = "gpu"
            t = t.set_column(t.schema.get_field_index("end_ns"), "end_ns", pa.array(end, pa.int64()))
            t = t.set_column(t.schema.get_field_index("kind"), "kind", pa.array(kind).dictionary_encode())
        tables.append(t)
        d = root / "job=job0" / f"rank={r}"
        d.mkdir(parents=True)
        pq.write_table(t, d / "part-0.parquet", row_group_size=20_000)
    return root, pa.concat_tables(tables, promote_options="permissive")


def test_quarantine_equals_classify_on_the_concatenated_table(dirty, tmp_path):
    root, whole = dirty
    want = core.classify(whole, on_invalid="quarantine")
    assert want.quarantine.num_rows == 8
    cols = ["rank", "start_ns", "end_ns", "row", "reason"]
    for got in (dist.classify_partitions(root, on_invalid="quarantine"),
                dist.classify_partitions(root, on_invalid="quarantine", executor="process", workers=2),
                core.classify_dataset(root, on_invalid="quarantine"),
                core.classify_dataset(root, on_invalid="quarantine", workers=1)):
        assert got.result.equals(want.result)
        assert got.result.schema.metadata[b"pau.quarantined_rows"] == b"8"
        assert got.quarantine.select(cols).equals(want.quarantine.select(cols))
        assert got.quarantine["kind"].to_pylist() == want.quarantine["kind"].to_pylist()
    with pytest.raises(PauError, match="row"):
        dist.classify_partitions(root)


def test_quarantine_results_are_saved_and_reused(dirty, tmp_path, counted):
    root, whole = dirty
    want = core.classify(whole, on_invalid="quarantine")
    results = tmp_path / "results"
    dist.classify_partitions(root, on_invalid="quarantine", results_dir=results)
    counted.clear()
    got = dist.classify_partitions(root, on_invalid="quarantine", results_dir=results)
    assert counted == []
    assert got.result.equals(want.result) and got.quarantine.equals(
        dist.classify_partitions(root, on_invalid="quarantine").quarantine)
    # A saved result with bad rows is not reused to answer on_invalid="raise": it raises.
    counted.clear()
    with pytest.raises(PauError):
        dist.classify_partitions(root, results_dir=results, workers=1)
    assert counted and set(counted) <= {"rank=1", "rank=3"}


# --------------------------------------------------------------------------- job-keyed ranks


@pytest.fixture(scope="module")
def two_jobs(tmp_path_factory, run):
    """job=A holds the run; job=B the same rank numbers with other events."""
    root = tmp_path_factory.mktemp("jobs")
    other = synth.training_run_for_events(30_000, ranks=2, seed=11)
    pio.write_dataset(run, root, job="A", row_group_size=20_000)
    pio.write_dataset(other, root, job="B")
    return root, {"A": run, "B": other}


def test_same_rank_in_two_jobs_is_refused_with_the_fix(two_jobs):
    root, _ = two_jobs
    for call in (lambda: dist.classify_partitions(root), lambda: core.classify_dataset(root),
                 lambda: core.classify_dataset(root, workers=1), lambda: core.ledger(str(root))):
        with pytest.raises(PauError, match="rank 0 is in job 'A'.*and in job 'B'.*by_job=True"):
            call()


def test_by_job_classifies_each_job_apart(two_jobs, tmp_path):
    root, runs = two_jobs
    span = pa.table({"rank": pa.array([0, 7], pa.int32()), "start_ns": [0, 0], "end_ns": [10**13, 10**9]})
    for kw in ({}, dict(windows=10**9), dict(span=span)):
        want = pa.concat_tables([
            (t := core.classify(runs[j], **kw)).add_column(0, "job", pa.array([j] * t.num_rows, pa.string()))
            for j in ("A", "B")])
        got = dist.classify_partitions(root, by_job=True, **kw)
        assert got.equals(want), kw
        assert core.classify_dataset(root, by_job=True, **kw).equals(want), kw
    assert got.schema.metadata[b"pau.rows"] == str(sum(t.num_rows for t in runs.values())).encode()
    # One job's folder alone needs no by_job.
    assert dist.classify_partitions(root / "job=B").equals(core.classify(runs["B"]))
    # A file of the layout named alone keeps its job and rank from its folders...
    one = pio.parquet_files(root)[0][0]
    assert pio.parquet_files(one)[0][1] == pio.parquet_files(root)[0][1]
    # ...and a file under no job folder cannot be split by job.
    plain = tmp_path / "plain.parquet"
    pq.write_table(pq.read_table(one).append_column("rank", pa.array(
        np.zeros(pq.read_metadata(one).num_rows, np.int32))), plain)
    with pytest.raises(PauError, match="job=J"):
        dist.classify_partitions(plain, by_job=True)
