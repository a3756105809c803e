"""The fleet archive (DESIGN §7, docs/fleet.md): ``pau ingest`` / ``pau.fleet.ingest`` and
``pau.read_fleet``, on real samples of several formats and on synthetic runs."""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import pau
import pau.core
from pau import synth
from pau.errors import NoDeviceEventsError, PauError
from pau.fleet import archive
from pau.fleet.ingester import IngestError, hourly_cells
from shared_data import shared

H = 3_600 * 10**9
#: Where the pau under test lies, for the processes the tests start.
SRC = os.path.dirname(os.path.dirname(os.path.abspath(pau.__file__)))

#: Real samples of every kind of source: Kineto traces (one and several ranks), MLPerf
#: logs (a folder of several, with their system descriptions), serving results (AIPerf,
#: LLMPerf, each beside its summaries), an Nsight export.
SAMPLES = [("kineto", "hta-trace_filter"), ("kineto", "param-dlrm-8ranks"), ("mlperf", "training_v4.0", "tinycorp"),
           ("serving", "aiperf_gpt-oss-20b_run1"), ("serving", "llmperf_vllm_yi34b_4xa10g_c16"),
           ("nsys", "icon_isc25", "gpu.sqlite")]


@pytest.fixture(scope="module")
def samples():
    return [str(shared(*p)) for p in SAMPLES]


@pytest.fixture(scope="module")
def fleet(samples, tmp_path_factory):
    out = tmp_path_factory.mktemp("fleet") / "archive"
    res = pau.core.ingest(samples, out, workers=2, labels={"cluster": "lab", "campaign": "q4"})
    assert res.added >= 7 and res.refused == 0
    return pau.read_fleet(out)


def _sorted(t: pa.Table, key: str) -> pa.Table:
    names = [key] + [n for n in ("hour_ns", "state", "activity") if n in t.column_names]
    return t.sort_by([(n, "ascending") for n in names])


# ---------------------------------------------------------------------------
# the runs table


def test_every_format_is_in_the_runs_table(fleet):
    runs = fleet.runs
    formats = sorted(set(runs["format"].to_pylist()))
    assert formats == ["kineto", "mllog", "nsys", "serving"]
    assert runs.schema.equals(archive.RUNS_SCHEMA)
    assert sorted(runs["run"].to_pylist()) == fleet.keys() == runs["run"].to_pylist()
    assert len(set(runs["run"].to_pylist())) == runs.num_rows
    # the labels given for every run: a column, or the labels map
    assert set(runs["cluster"].to_pylist()) == {"lab"}
    assert all(dict(m)["campaign"] == "q4" for m in runs["labels"].to_pylist())
    # the 8-rank trace folder is one run of 8 accelerators, its 8 files its sources
    dlrm = runs.filter(pc.match_substring(runs["source"], "param-dlrm-8ranks")).to_pylist()
    assert len(dlrm) == 1 and dlrm[0]["accelerators"] == 8 and len(dlrm[0]["sources"]) == 8
    # MLPerf logs are a run each, their system's accelerators read from its description
    ml = runs.filter(pc.equal(runs["format"], "mllog")).to_pylist()
    assert len(ml) == 2 and {r["accelerators"] for r in ml} == {6}
    assert all(dict(r["labels"])["submitter"] == "tinycorp" for r in ml)


def test_the_runs_table_holds_each_runs_summary(fleet):
    """Every figure of the runs table is the run's Run.summary(), read back from the
    archive's copy of the run."""
    rows = fleet.runs.to_pylist()
    for row in rows:
        run = fleet.run(row["run"])
        s = run.summary()
        want = archive.figure_values(s)
        got = {c: row[c] for c in want}
        assert got == want, row["source"]
        if s["ledger"] is not None:
            led = s["ledger"]
            assert row["accountable_ns"] == led["accountable_ns"] == sum(
                row[f"{k.replace('.', '_')}_ns"] for k in pau.STATES)
            assert row["rolled_back_ns"] == led["state_ns"]["rolled_back"]
        if run.requests is not None:
            assert row["requests_offered"] == s["requests"]["offered"] == run.requests.num_rows
        assert row["format"] == run.metadata["format"]


def test_start_and_end_are_the_accountable_time(fleet):
    for row in fleet.runs.to_pylist():
        run = fleet.run(row["run"])
        if run.lifecycle is not None:
            iv = run.ledger().intervals
            assert (row["start_ns"], row["end_ns"]) == (pc.min(iv["start_ns"]).as_py(), pc.max(iv["end_ns"]).as_py())
        elif run.spans is not None:
            assert row["start_ns"] == pc.min(run.spans["start_ns"]).as_py()
        if row["start_ns"] is not None:
            assert row["start_ns"] < row["end_ns"]


# ---------------------------------------------------------------------------
# hourly cells


def _ledger_cells(led) -> dict:
    t = led.by("state", "activity")
    return {(s, a): v for s, a, v in zip(t["state"].to_pylist(), t["activity"].to_pylist(),
                                          t["duration_ns"].to_pylist())}


def test_hourly_cells_sum_to_the_ledger_of_every_run(fleet):
    cells = fleet.cells
    assert cells.schema.equals(archive.CELLS_SCHEMA)
    with_ledger = 0
    for key in fleet.keys():
        run = fleet.run(key)
        mine = cells.filter(pc.equal(cells["run"], key))
        if run.events is None and run.lifecycle is None:
            assert mine.num_rows == 0  # serving results: no ledger, no cells
            continue
        with_ledger += 1
        got: dict = {}
        for s, a, v in zip(mine["state"].to_pylist(), mine["activity"].to_pylist(), mine["duration_ns"].to_pylist()):
            got[(s, a)] = got.get((s, a), 0) + v
        assert got == _ledger_cells(run.ledger()), run.metadata["sources"][0]
        hours = mine["hour_ns"].to_pylist()
        assert all(h % H == 0 for h in hours)
        per_hour: dict = {}
        for h, v in zip(hours, mine["duration_ns"].to_pylist()):
            per_hour[h] = per_hour.get(h, 0) + v
        assert max(per_hour.values()) <= H * run.ledger().accountable.num_rows
    assert with_ledger >= 5


def _reference_state_hours(intervals: pa.Table) -> dict:
    """ns per (hour, state), each interval split at the hours one ns-range at a time."""
    out: dict = {}
    for a, b, s in zip(intervals["start_ns"].to_pylist(), intervals["end_ns"].to_pylist(),
                       intervals["state"].to_pylist()):
        t = a
        while t < b:
            h = t // H * H
            e = min(b, h + H)
            out[(h, s)] = out.get((h, s), 0) + e - t
            t = e
    return out


@pytest.mark.parametrize("events", [True, False])
def test_hourly_cells_of_a_job_of_several_hours(events):
    """A synthetic job with failures over about four hours: each hour's time per
    state is the state intervals cut at the hours (a plain loop), and the activities
    of the cells sum to the ledger's."""
    job = synth.training_job(ranks=2, steps=40, seed=1, mtbf_s=1200, checkpoint_every=10, step_time_s=120,
                             kernels_per_step=3, buckets=1)
    run = pau.Run(events=job.events if events else None, lifecycle=job.lifecycle)
    led = run.ledger()
    cells = hourly_cells(run, led)
    assert len(set(cells["hour_ns"].to_pylist())) >= 4
    by_state: dict = {}
    for h, s, v in zip(cells["hour_ns"].to_pylist(), cells["state"].to_pylist(), cells["duration_ns"].to_pylist()):
        by_state[(h, s)] = by_state.get((h, s), 0) + v
    assert by_state == _reference_state_hours(led.intervals)
    got: dict = {}
    for s, a, v in zip(cells["state"].to_pylist(), cells["activity"].to_pylist(), cells["duration_ns"].to_pylist()):
        got[(s, a)] = got.get((s, a), 0) + v
    assert got == _ledger_cells(led)
    if not events:
        assert set(cells["activity"].to_pylist()) == {"unknown"}


def test_hourly_cells_of_events_only_are_the_engines_hour_buckets():
    job = synth.training_job(ranks=2, steps=40, seed=2, mtbf_s=None, checkpoint_every=10, step_time_s=120,
                             kernels_per_step=3, buckets=1)
    run = pau.Run(events=job.events)
    led = run.ledger()
    cells = hourly_cells(run, led)
    assert set(cells["state"].to_pylist()) == {"unattributed"}
    want = pau.core.ledger(job.events, windows=H).by("window", "activity")
    got: dict = {}
    for h, a, v in zip(cells["hour_ns"].to_pylist(), cells["activity"].to_pylist(), cells["duration_ns"].to_pylist()):
        got[(h, a)] = got.get((h, a), 0) + v
    assert got == {(w, a): v for w, a, v in zip(*(want[c].to_pylist() for c in ("window", "activity", "duration_ns")))
                   if v}


# ---------------------------------------------------------------------------
# opening the archive with other tools


def test_pyarrow_opens_runs_and_cells(fleet):
    import pyarrow.dataset as ds

    runs = ds.dataset(os.path.join(fleet.path, "runs")).to_table()
    assert _sorted(runs, "run").equals(fleet.runs)
    cells = ds.dataset(os.path.join(fleet.path, "cells")).to_table()
    assert cells.num_rows == fleet.cells.num_rows
    assert pc.sum(cells["duration_ns"]).as_py() == pc.sum(fleet.cells["duration_ns"]).as_py()


def test_duckdb_opens_runs_and_cells(fleet):
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    p = fleet.path
    n, acc = con.execute(f"SELECT count(*), sum(accountable_ns) FROM read_parquet('{p}/runs/*.parquet')").fetchone()
    assert n == fleet.runs.num_rows and acc == pc.sum(fleet.runs["accountable_ns"]).as_py()
    # the cells joined to the runs: each run's cells sum to its accountable time
    rows = con.execute(f"""
        SELECT r.run, r.accountable_ns, sum(c.duration_ns) AS cells
        FROM read_parquet('{p}/runs/*.parquet') r JOIN read_parquet('{p}/cells/*.parquet') c USING (run)
        GROUP BY r.run, r.accountable_ns""").fetchall()
    assert rows and all(acc == int(cells) for _, acc, cells in rows)
    assert con.execute(f"SELECT labels['cluster'] FROM read_parquet('{p}/runs/*.parquet') LIMIT 1").fetchone()[0] \
        in (None, [], "lab")


def test_polars_opens_runs_and_cells(fleet):
    pl = pytest.importorskip("polars")
    runs = pl.read_parquet(os.path.join(fleet.path, "runs", "*.parquet"))
    assert runs.height == fleet.runs.num_rows
    cells = pl.read_parquet(os.path.join(fleet.path, "cells", "*.parquet"))
    assert cells["duration_ns"].sum() == pc.sum(fleet.cells["duration_ns"]).as_py()


# ---------------------------------------------------------------------------
# idempotence, keys, refusals


def test_a_second_ingest_adds_nothing(fleet, samples):
    before = (fleet.runs, fleet.cells, fleet.refusals)
    res = pau.core.ingest(samples, fleet.path, workers=1, labels={"cluster": "lab", "campaign": "q4"})
    assert res.added == 0 and res.present == before[0].num_rows and res.refused == 0
    after = (fleet.runs, fleet.cells, fleet.refusals)
    assert all(a.equals(b) for a, b in zip(before, after))


@pytest.mark.parametrize("workers", [1, 2])
def test_the_run_key_is_of_the_bytes_and_names(tmp_path, workers):
    src = shared("serving", "llmperf_vllm_yi34b_4xa10g_c16")
    name = "01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json"
    a, b, c = (tmp_path / x for x in "abc")
    for d in (a, b, c):
        d.mkdir()
    shutil.copy(src / name, a / name)
    shutil.copy(src / name, b / name)           # the same bytes under another folder
    raw = (src / name).read_bytes()
    (c / name).write_bytes(raw.replace(b'"ttft_s": 0.', b'"ttft_s": 1.', 1))  # one value changed
    assert raw != (c / name).read_bytes()
    res = pau.core.ingest([a, b, c], tmp_path / "fleet", workers=workers)
    assert (res.added, res.present) == (2, 1)
    assert pau.read_fleet(tmp_path / "fleet").runs.num_rows == 2  # one row per key
    keys = {archive.run_key("serving", str(d / name), [str(d / name)]) for d in (a, b, c)}
    assert len(keys) == 2 and keys == set(pau.read_fleet(tmp_path / "fleet").keys())


def _bad_trace(folder) -> str:
    """A Kineto trace cut off mid-file."""
    src = shared("kineto", "hta-trace_file_list", "inference_rank_1.json.gz")
    raw = gzip.decompress(src.read_bytes())
    folder.mkdir(parents=True)
    path = folder / "cut.json.gz"
    path.write_bytes(gzip.compress(raw[: len(raw) // 2]))
    return str(path)


def test_a_bad_source_is_refused_and_changes_no_other_run(tmp_path, samples):
    _bad_trace(tmp_path / "bad")  # a folder of traces, one of them cut off
    good = samples[:3]
    res = pau.core.ingest([*good, tmp_path / "bad"], tmp_path / "with", workers=2, skip_bad=True)
    assert res.refused == 1
    f = pau.read_fleet(tmp_path / "with")
    refused = f.refusals.filter(pc.is_valid(f.refusals["format"])).to_pylist()
    assert len(refused) == 1 and refused[0]["source"] == str(tmp_path / "bad")
    assert refused[0]["format"] == "kineto" and "cut.json.gz" in refused[0]["reason"]
    alone = pau.core.ingest(good, tmp_path / "without", workers=1)
    assert alone.added == res.added
    assert f.runs.equals(pau.read_fleet(tmp_path / "without").runs)
    assert f.cells.equals(pau.read_fleet(tmp_path / "without").cells)


def test_without_skip_bad_ingest_stops_at_the_bad_source(tmp_path):
    bad = _bad_trace(tmp_path / "bad")
    with pytest.raises(IngestError) as err:
        pau.core.ingest([bad], tmp_path / "fleet", workers=1)
    assert isinstance(err.value, PauError) and str(tmp_path / "bad") in str(err.value)
    assert "cut.json.gz" in str(err.value) and err.value.format == "kineto"
    assert pau.read_fleet(tmp_path / "fleet").refusals.num_rows == 0


def test_files_of_no_format_are_listed_and_do_not_stop_ingest(fleet):
    ref = fleet.refusals
    passed = ref.filter(pc.is_null(ref["format"]))
    names = [os.path.basename(s) for s in passed["source"].to_pylist()]
    # the MLPerf system description and the serving tools' summaries are not runs
    assert "tinybox_green.json" in names and "profile_export_aiperf.json" in names
    assert all(r for r in passed["reason"].to_pylist())
    assert ref.filter(pc.is_valid(ref["format"])).num_rows == 0


def test_a_named_file_of_no_format_is_an_error(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("not a run\n")
    with pytest.raises(IngestError, match="notes.txt"):
        pau.core.ingest([p], tmp_path / "fleet", workers=1)
    res = pau.core.ingest([p], tmp_path / "fleet", workers=1, skip_bad=True)
    assert res.passed_over == 1


def test_labels_file_joined_by_job(tmp_path):
    src = shared("serving", "aiperf_gpt-oss-20b_run1")
    (tmp_path / "labels.csv").write_text("job,team,project,accelerators,queue\n42,vision,llm,4,gpu\n7,x,y,1,z\n")
    pau.core.ingest([src], tmp_path / "fleet", workers=1, labels=[str(tmp_path / "labels.csv"), {"job": "42"}])
    row = pau.read_fleet(tmp_path / "fleet").runs.to_pylist()[0]
    assert (row["job"], row["team"], row["project"], row["accelerators"]) == ("42", "vision", "llm", 4)
    assert dict(row["labels"]) == {"queue": "gpu", "tool": "aiperf"}
    (tmp_path / "bad.csv").write_text("team\nx\n")
    with pytest.raises(PauError, match="row 0 has no job"):
        pau.core.ingest([src], tmp_path / "fleet2", workers=1, labels=str(tmp_path / "bad.csv"))
    (tmp_path / "bad.json").write_text('[{"job": "1", "accelerators": "eight"}]')
    with pytest.raises(PauError, match="row 0: accelerators='eight' is not a count"):
        pau.core.ingest([src], tmp_path / "fleet2", workers=1, labels=str(tmp_path / "bad.json"))
    assert not (tmp_path / "fleet2").exists()  # refused before anything is written


def test_read_fleet_refuses_other_folders_and_unknown_keys(tmp_path, fleet):
    with pytest.raises(PauError, match="not a fleet archive"):
        pau.read_fleet(tmp_path)
    with pytest.raises(PauError, match="no run of key"):
        fleet.run("0" * 32)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "y").write_text("")
    with pytest.raises(PauError, match="not a fleet archive"):
        pau.core.ingest([shared("nsys", "icon_isc25", "gpu.sqlite")], tmp_path / "x", workers=1)
    assert fleet.jobs is None


def test_no_jobs_table_without_scheduler_records(tmp_path):
    out = tmp_path / "fleet"
    pau.core.ingest([shared("nsys", "icon_isc25", "gpu.sqlite")], out, workers=1)
    fleet = pau.read_fleet(out)
    assert fleet.jobs is None  # tests/test_fleet_jobs.py: the archive with scheduler records
    assert fleet.jobs_summary()["runs_without_job"] == 1
    (out / "jobs" / "part-0.parquet").parent.mkdir(exist_ok=True)
    pq.write_table(pa.table({"job": ["1"], "accelerators": [8]}), out / "jobs" / "part-0.parquet")
    with pytest.raises(PauError, match=r"part-0.parquet: a jobs file without the column\(s\) cluster, scheduler"):
        pau.read_fleet(out).jobs


# ---------------------------------------------------------------------------
# crash safety: kill -9 mid-way, re-run, same archive


def _synthetic_runs(root, n: int) -> None:
    for i in range(n):
        job = synth.training_job(ranks=2, steps=20, seed=i, mtbf_s=600, checkpoint_every=5, step_time_s=60,
                                 kernels_per_step=3, buckets=1)
        pau.Run(events=job.events, lifecycle=job.lifecycle, metadata={"format": "pau", "job": f"job-{i}"}).write(
            root / f"team{i % 3}" / f"run{i:03d}")


def _ingest_cmd(src, out) -> list[str]:
    code = ("import sys, pau.fleet as f; f.ingest([sys.argv[1]], sys.argv[2], workers=1, skip_bad=True)")
    return [sys.executable, "-c", code, str(src), str(out)]


def _tables(path) -> tuple:
    f = pau.read_fleet(path)
    return _sorted(f.runs, "run"), _sorted(f.cells, "run"), _sorted(f.refusals, "key")


def test_kill_mid_way_then_resume_gives_the_same_archive(tmp_path):
    src = tmp_path / "runs"
    _synthetic_runs(src, 24)
    (src / "README.md").write_text("notes\n")  # a passed-over file among them
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    whole = tmp_path / "whole"
    subprocess.run(_ingest_cmd(src, whole), check=True, env=env, capture_output=True)
    out = tmp_path / "killed"
    proc = subprocess.Popen(_ingest_cmd(src, out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            store = out / "store"
            if store.is_dir() and len(os.listdir(store)) >= 4:
                break
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    partial = len(os.listdir(out / "store"))
    assert 4 <= partial < 24  # killed mid-way
    f = pau.read_fleet(out)
    assert f.runs.num_rows == 0 and f.cells.num_rows == 0  # the tables get whole batches only
    subprocess.run(_ingest_cmd(src, out), check=True, env=env, capture_output=True)
    for a, b in zip(_tables(out), _tables(whole)):
        assert a.equals(b)
    assert sorted(os.listdir(out / "store")) == sorted(os.listdir(whole / "store"))
    assert os.listdir(out / ".tmp") == ["ingest.lock"] and os.listdir(out / "staging") == []
    runs = pau.read_fleet(out).runs
    assert runs.num_rows == 24 and sorted(runs["job"].to_pylist()) == sorted(f"job-{i}" for i in range(24))


# ---------------------------------------------------------------------------
# on a Dask cluster


def test_a_dask_cluster_writes_the_same_archive(tmp_path, fleet, samples):
    distributed = pytest.importorskip("distributed", reason="dask[distributed] not installed (pau[dask])")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        res = pau.core.ingest(samples, tmp_path / "fleet", client=client,
                              labels={"cluster": "lab", "campaign": "q4"})
    assert res.added == fleet.runs.num_rows
    for a, b in zip(_tables(tmp_path / "fleet"), _tables(fleet.path)):
        assert a.equals(b)


# ---------------------------------------------------------------------------
# the command line


def test_pau_ingest_on_the_command_line(tmp_path, capsys):
    from pau.cli import main

    out = tmp_path / "fleet"
    src = str(shared("mlperf", "training_v4.0", "tinycorp"))
    assert main(["ingest", src, "-o", str(out), "--label", "team=infra", "--workers", "1", "--no-progress"]) == 0
    err = capsys.readouterr().err
    runs = pau.read_fleet(out).runs
    warned = sum(w > 0 for w in runs["warnings"].to_pylist())
    assert f"2 runs added ({warned} with warnings" in err
    assert runs["team"].to_pylist() == ["infra", "infra"]
    assert main(["ingest", src, "-o", str(out), "--workers", "1", "-v"]) == 0
    err = capsys.readouterr().err
    assert "0 runs added (0 with warnings: the runs table's warnings column), 2 already there" in err
    assert "passed over: " in err and "tinybox_green.json (no format)" in err
    assert main(["ingest", src, "-o", str(out), "--label", "oops"]) == 2
    assert main(["ingest", str(tmp_path / "nothing"), "-o", str(out)]) == 1


def test_an_archive_among_the_sources_is_not_walked(tmp_path):
    src = tmp_path / "data"
    shutil.copytree(shared("mlperf", "training_v4.0", "tinycorp"), src)
    first = pau.core.ingest([src], src / "fleet", workers=1)
    again = pau.core.ingest([src], src / "fleet", workers=1)
    assert (first.added, again.added, again.present) == (2, 0, 2)
    assert first.passed_over == again.passed_over == 1  # the system description, not the archive's files
    sources = pau.read_fleet(src / "fleet").refusals["source"].to_pylist()
    assert [os.path.basename(s) for s in sources] == ["tinybox_green.json"]


def test_pau_ingest_on_a_dask_scheduler(tmp_path, capsys):
    distributed = pytest.importorskip("distributed", reason="dask[distributed] not installed (pau[dask])")
    from pau.cli import main

    src = str(shared("mlperf", "training_v4.0", "tinycorp"))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        assert main(["ingest", src, "-o", str(tmp_path / "fleet"), "--dask", cluster.scheduler_address, "-q"]) == 0
    assert pau.read_fleet(tmp_path / "fleet").runs.num_rows == 2


class _Killed(BaseException):
    """Stands for a kill in the middle of a compaction."""


@pytest.mark.parametrize("after", [1, 2])
def test_a_compaction_cut_short_is_undone_or_finished(tmp_path, monkeypatch, after):
    """Cut after the cells batch (undone: the staged runs go into a new batch) or after
    the runs batch (finished: the staged files go): the next ingest's tables equal an
    uninterrupted one's, each run once."""
    src = tmp_path / "runs"
    _synthetic_runs(src, 7)
    pau.core.ingest([src], tmp_path / "whole", workers=1)
    monkeypatch.setattr(archive, "BATCH_RUNS", 3)
    real, calls = archive._stream, []

    def stream(*args, **kwargs):
        got = real(*args, **kwargs)
        calls.append(args[1])
        if len(calls) == after:
            raise _Killed()
        return got

    monkeypatch.setattr(archive, "_stream", stream)
    with pytest.raises(_Killed):
        pau.core.ingest([src], tmp_path / "cut", workers=1)
    monkeypatch.setattr(archive, "_stream", real)
    assert len(os.listdir(tmp_path / "cut" / "store")) == 7
    journals = [n for n in os.listdir(tmp_path / "cut" / "staging") if n.startswith("compact-")]
    assert len(journals) == 1
    again = pau.core.ingest([src], tmp_path / "cut", workers=1)
    assert (again.added, again.present) == (0, 7)
    for a, b in zip(_tables(tmp_path / "cut"), _tables(tmp_path / "whole")):
        assert a.equals(b)
    assert len(os.listdir(tmp_path / "cut" / "runs")) == 3  # batches of 3, 3 and 1
    assert os.listdir(tmp_path / "cut" / "staging") == []


def test_one_ingest_at_a_time(tmp_path):
    fcntl = pytest.importorskip("fcntl")
    src = shared("nsys", "icon_isc25", "gpu.sqlite")
    pau.core.ingest([src], tmp_path / "fleet", workers=1)
    with open(tmp_path / "fleet" / ".tmp" / "ingest.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another ingest, writing
        with pytest.raises(PauError, match="another ingest is writing to this archive"):
            pau.core.ingest([src], tmp_path / "fleet", workers=1)
    assert pau.core.ingest([src], tmp_path / "fleet", workers=1).present == 1


def test_a_run_of_many_jobs_is_stored_with_its_jobs(tmp_path):
    """A run whose events and lifecycle have a ``job`` column (two jobs on the same ranks and
    hours): ingested, stored in pau's layout with the column, its row the run's summary and
    its cells summing to its ledger, each job's intervals over its own events."""
    jobs = [synth.training_job(ranks=2, steps=20, seed=s, mtbf_s=600, checkpoint_every=5, step_time_s=60,
                               kernels_per_step=3, buckets=1) for s in (1, 2)]

    def named(t, name):
        return t.append_column("job", pa.array([name] * t.num_rows, pa.string()))

    run = pau.Run(events=pa.concat_tables([named(j.events, n) for j, n in zip(jobs, "AB")]),
                  lifecycle=pa.concat_tables([named(j.lifecycle, n) for j, n in zip(jobs, "AB")]),
                  metadata={"format": "pau"})
    src = run.write(tmp_path / "run")
    res = pau.fleet.ingest([src], tmp_path / "fleet", progress=False)
    assert res.added == 1 and res.refused == 0
    fl = pau.fleet.Fleet(tmp_path / "fleet")
    (key,) = fl.keys()
    stored = fl.run(key)
    assert stored.events.equals(run.events) and stored.lifecycle.equals(run.lifecycle)
    want = run.summary()["ledger"]
    row = fl.runs.to_pylist()[0]
    assert (row["productive_ns"], row["accountable_ns"]) == (want["productive_ns"], want["accountable_ns"])
    cells = fl.cells
    got: dict = {}
    for s, a, v in zip(cells["state"].to_pylist(), cells["activity"].to_pylist(), cells["duration_ns"].to_pylist()):
        got[(s, a)] = got.get((s, a), 0) + v
    alone = [pau.core.ledger(j.events, j.lifecycle) for j in jobs]
    summed: dict = {}
    for led in alone:
        for k, v in _ledger_cells(led).items():
            summed[k] = summed.get(k, 0) + v
    assert got == {k: v for k, v in summed.items() if v}


def test_an_nsight_export_without_device_activity_is_refused_alone(tmp_path):
    """The ICON folder holds three Nsight exports, two without device activity (a CPU-only
    profile, one with runtime calls but no kernel or copy): with skip_bad each is a row
    of the refusals table (its own path and the reader's reason) and the run is the one
    export with device work; without it ingest stops naming the file. pau.read of the
    folder, or of the file, still refuses it."""
    folder = shared("nsys", "icon_isc25", "cpu.sqlite").parent  # tests/data holds gpu.sqlite alone: skip there
    bad = {str(folder / "cpu.sqlite"), str(folder / "rank_.sqlite")}
    with pytest.raises(IngestError, match="cpu.sqlite: no device activity"):
        pau.fleet.ingest([folder], tmp_path / "stop", workers=1, progress=False)
    with pytest.raises(NoDeviceEventsError):
        pau.read(folder)
    with pytest.raises(NoDeviceEventsError):
        pau.read(folder / "cpu.sqlite")
    res = pau.fleet.ingest([folder], tmp_path / "fleet", workers=1, progress=False, skip_bad=True)
    assert (res.added, res.refused, res.warned) == (1, 2, 1)
    fl = pau.fleet.Fleet(tmp_path / "fleet")
    refused = {r["source"]: r for r in fl.refusals.filter(pc.is_valid(fl.refusals["format"])).to_pylist()}
    assert set(refused) == bad
    for path, row in refused.items():
        assert row["format"] == "nsys" and row["reason"].startswith(f"{path}: no device activity")
    (key,) = fl.keys()
    run, alone = fl.run(key), pau.read(folder / "gpu.sqlite")
    assert run.events.equals(alone.events)
    assert sorted(run.metadata["skipped_files"]) == sorted(bad)
    assert fl.runs["ranks"].to_pylist() == [alone.summary()["ledger"]["ranks"]]
    again = pau.fleet.ingest([folder], tmp_path / "fleet", workers=1, progress=False, skip_bad=True)
    assert (again.added, again.present) == (0, 1)
    assert pau.fleet.Fleet(tmp_path / "fleet").refusals.equals(fl.refusals)
