"""Scheduler records in the fleet archive, and jobs joined to runs (DESIGN §7,
docs/fleet.md "Jobs in the archive"): ``pau ingest`` of sacct, pod lists and Philly's job
log into ``jobs/``; ``fleet.jobs`` with its ``run``; ``fleet.jobs_summary()``; Megatron-LM
logs, NVRx cycle files and Philly's jobs as runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.parquet  # noqa: F401  (pa.parquet)
import pyarrow.compute as pc
import pytest

import pau
import pau.fleet
from pau.engine.vocab import LIFECYCLE_SCHEMA
from pau.errors import OptionError
from pau.fleet import records
from pau.readers import JOBS_SCHEMA
from pau.run import Run

S = 10**9
H = 3_600 * S
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
PHILLY = os.path.join(DATA, "cluster", "philly", "jobs_subset_marwage.json")
SRC = os.path.dirname(os.path.dirname(os.path.abspath(pau.__file__)))

HEADER = "JobID|Cluster|Partition|Account|User|State|ExitCode|Submit|Eligible|Start|End|NNodes|AllocTRES|ReqTRES\n"
#: Three jobs of cluster c1, by hand: 101 holds 4 GPUs for an hour, 102 2 GPUs for 30
#: minutes, 103 was cancelled while pending (it held nothing).
DUMP_A = HEADER + (
    "101|c1|gpu|llm|ann|COMPLETED|0:0|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:10:00|"
    "2024-01-01T01:10:00|1|cpu=8,gres/gpu=4|gres/gpu=4\n"
    "102|c1|gpu|vision|bob|COMPLETED|0:0|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:00:00|"
    "2024-01-01T00:30:00|1|cpu=4,gres/gpu=2|gres/gpu=2\n"
    "103|c1|gpu|llm|ann|CANCELLED by 7|0:0|2024-01-01T00:00:00|2024-01-01T00:00:00|Unknown|"
    "2024-01-01T00:05:00|1||gres/gpu=8\n")
#: An earlier dump: 102 still running (no end), 104 seen only here.
DUMP_EARLY = HEADER + (
    "102|c1|gpu|vision|bob|RUNNING|0:0|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:00:00|"
    "Unknown|1|cpu=4,gres/gpu=2|gres/gpu=2\n"
    "104|c1|gpu|vision|bob|COMPLETED|0:0|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:00:00|"
    "2024-01-01T00:00:10|1|cpu=4,gres/gpu=1|gres/gpu=1\n")
T0 = int(datetime(2024, 1, 1, tzinfo=timezone.utc).timestamp()) * S


def _lifecycle_run(folder, job=None, cluster=None, start=T0, seconds=600, ranks=2):
    """A run in pau's layout: one attempt of ``ranks`` ranks, one productive step."""
    rows = [{"record": "attempt", "attempt": 0, "rank": r, "start_ns": start, "end_ns": start + seconds * S,
             "kind": "completed"} for r in range(ranks)]
    rows.append({"record": "step", "attempt": 0, "rank": -1, "start_ns": start, "end_ns": start + seconds * S,
                 "step": 1})
    lc = pa.Table.from_pylist(rows, schema=LIFECYCLE_SCHEMA)
    meta = {k: v for k, v in (("job", job), ("cluster", cluster)) if v is not None}
    return Run(lifecycle=lc, metadata=meta).write(str(folder))


@pytest.fixture
def small(tmp_path):
    """sacct of jobs 101-103 (c1); runs: of job 101 (c1), of no job, of job 999 (not in
    the jobs table)."""
    src = tmp_path / "src"
    (src / "sched").mkdir(parents=True)
    (src / "sched" / "dump_a.txt").write_text(DUMP_A)
    _lifecycle_run(src / "runs" / "r101", job="101", cluster="c1")
    _lifecycle_run(src / "runs" / "lonely", seconds=300)
    _lifecycle_run(src / "runs" / "r999", job="999", cluster="c1", seconds=60)
    return src


def test_jobs_joined_to_runs_by_hand(small, tmp_path):
    out = tmp_path / "fleet"
    res = pau.fleet.ingest([small], out, workers=1, tz="UTC")
    assert (res.added, res.job_sources, res.jobs) == (3, 1, 3)
    fleet = pau.read_fleet(out)
    jobs = fleet.jobs
    assert jobs.schema.names == [*JOBS_SCHEMA.names, "run"]
    assert jobs.schema.equals(pau.fleet.FLEET_JOBS_SCHEMA)
    assert jobs["job"].to_pylist() == ["101", "102", "103"]
    runs = fleet.runs
    key_101 = runs.filter(pc.equal(runs["job"], "101"))["run"][0].as_py()
    assert jobs["run"].to_pylist() == [key_101, None, None]
    # 4 GPUs x 1 h, 2 GPUs x 30 min, nothing (never started)
    assert jobs["allocated_accelerator_ns"].to_pylist() == [4 * H, 2 * H // 2, 0]
    assert fleet.jobs_summary() == {
        "jobs": 3, "jobs_with_run": 1, "jobs_without_run": 2, "jobs_with_several_runs": 0,
        "runs": 3, "runs_with_job": 1, "runs_without_job": 2, "job_records_superseded": 0,
        "unattributed_accelerator_ns": H, "jobs_without_run_allocation_unknown": 0,
    }
    # a re-ingest adds nothing
    again = pau.fleet.ingest([small], out, workers=1, tz="UTC")
    assert (again.added, again.job_sources, again.jobs, again.present) == (0, 0, 0, 4)
    assert len(os.listdir(out / "jobs")) == 1
    assert fleet.jobs.equals(jobs)


def test_a_job_in_two_dumps_is_one_row_the_one_that_says_more(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "later.txt").write_text(DUMP_A)
    (b / "earlier.txt").write_text(DUMP_EARLY)
    tables = []
    for order in ([a, b], [b, a]):
        out = tmp_path / f"fleet-{len(tables)}"
        for folder in order:  # one ingest after the other: the order must not matter
            pau.fleet.ingest([folder], out, workers=1, tz="UTC")
        fleet = pau.read_fleet(out)
        tables.append(fleet.jobs)
        assert fleet.jobs_summary()["job_records_superseded"] == 1
    assert tables[0].equals(tables[1])
    jobs = tables[0]
    assert jobs["job"].to_pylist() == ["101", "102", "103", "104"]
    row = jobs.filter(pc.equal(jobs["job"], "102")).to_pylist()[0]
    assert (row["state"], row["end_ns"]) == ("COMPLETED", T0 + 1_800 * S)  # the record with the end


def test_cluster_option_joins_records_that_name_none(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    text = DUMP_A.replace("|Cluster|", "|").replace("|c1|", "|")
    (src / "dump.txt").write_text(text)
    _lifecycle_run(src / "r101", job="101")  # the run names no cluster either
    out = tmp_path / "fleet"
    pau.fleet.ingest([src], out, workers=1, tz="UTC", cluster="east")
    fleet = pau.read_fleet(out)
    assert set(fleet.jobs["cluster"].to_pylist()) == {"east"}
    assert fleet.runs["cluster"].to_pylist() == ["east"]
    assert fleet.jobs_summary()["jobs_with_run"] == 1


def test_tz_option_reads_sacct_local_times(tmp_path):
    src = tmp_path / "dump.txt"
    src.write_text(DUMP_A)
    starts = {}
    for tz in ("UTC", "America/New_York"):
        out = tmp_path / tz.replace("/", "-")
        pau.fleet.ingest([src], out, workers=1, tz=tz)
        starts[tz] = pau.read_fleet(out).jobs["start_ns"][0].as_py()
    assert starts["America/New_York"] - starts["UTC"] == 5 * H  # EST in January
    with pytest.raises(OptionError, match="not a time zone"):
        pau.fleet.ingest([src], tmp_path / "bad", tz="Mars/Olympus")


def test_cli_options(small, tmp_path):
    pods = os.path.join(DATA, "fleet", "k8s_pods", "pods_sample.json")
    out = tmp_path / "fleet"
    cmd = [sys.executable, "-c", "import sys; from pau._args import main; sys.exit(main())", "ingest", str(small),
           pods, "-o", str(out), "--tz", "UTC", "--cluster", "k", "--origin", "2023-01-01T00:00:00Z",
           "--workers", "1"]
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC})
    assert p.returncode == 0, p.stderr
    assert "jobs added from 2 sources of scheduler records" in p.stderr
    jobs = pau.read_fleet(out).jobs
    assert set(jobs.filter(pc.equal(jobs["scheduler"], "kubernetes"))["cluster"].to_pylist()) == {"k"}
    bad = subprocess.run(cmd[:-3] + ["yesterday", "--workers", "1"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": SRC})
    assert bad.returncode == 2 and "--origin yesterday" in bad.stderr


# ---------------------------------------------------------------------------
# lifecycles as runs


def test_nvrx_cycle_files_are_one_run_named_by_their_job(tmp_path):
    out = tmp_path / "fleet"
    labels = tmp_path / "labels.csv"
    labels.write_text("job,team\n4711,resilience\n")
    res = pau.fleet.ingest([os.path.join(DATA, "fleet", "nvrx_cycle_info")], out, workers=1, labels=[str(labels)])
    assert res.added == 1
    row = pau.read_fleet(out).runs.to_pylist()[0]
    assert (row["format"], row["job"], row["team"]) == ("nvrx", "4711", "resilience")
    assert len(row["sources"]) == 3
    direct = Run(lifecycle=pau.readers.read_nvrx(os.path.join(DATA, "fleet", "nvrx_cycle_info")).lifecycle
                 .drop(["job"])).summary()["ledger"]
    assert row["accountable_ns"] == direct["accountable_ns"] > 0


def test_megatron_log_is_a_run_labelled_with_its_job(tmp_path):
    log = os.path.join(DATA, "fleet", "megatron_log", "gpt3_ckpt_resume_sample.log")
    out = tmp_path / "fleet"
    res = pau.fleet.ingest([log], out, workers=1, tz="UTC", labels={"job": "77", "cluster": "c1"})
    assert res.added == 1
    fleet = pau.read_fleet(out)
    row = fleet.runs.to_pylist()[0]
    assert (row["format"], row["job"], row["cluster"]) == ("megatron", "77", "c1")
    assert row["productive_ns"] > 0 and row["rolled_back_ns"] > 0
    assert fleet.run(row["run"]).summary()["ledger"]["state_ns"]["rolled_back"] == row["rolled_back_ns"]


def test_the_megatron_folder_ingests_without_skipping_its_readme(tmp_path):
    """The sample's folder holds the log and a README quoting Megatron's format strings:
    the README is no log, so the folder ingests without --skip-bad, one run."""
    src = os.path.join(DATA, "fleet", "megatron_log")
    assert records.records_format(os.path.join(src, "README.md")) is None
    res = pau.fleet.ingest([src], tmp_path / "fleet", workers=1, tz="UTC")
    assert res.added == 1
    assert [r["format"] for r in pau.read_fleet(tmp_path / "fleet").runs.to_pylist()] == ["megatron"]


# ---------------------------------------------------------------------------
# Philly: a jobs row and a run per job


def _philly_by_pandas(path):
    """Per job, from the raw JSON: GPU-ns of the attempts rolled back and of the one
    kept. Philly's log has no checkpoints, so an attempt that failed or was retried loses
    all its work; the last attempt keeps it unless it failed or was killed."""
    with open(path) as f:
        data = json.load(f)
    out = {}
    for job in data:
        attempts = job["attempts"]
        status = job.get("status")
        rolled = kept = 0
        for k, a in enumerate(attempts):
            gpus = sum(len(d["gpus"]) for d in a.get("detail") or []) or job["num_gpus"]
            s = datetime.strptime(a["start_time"], "%Y-%m-%d %H:%M:%S")
            e = datetime.strptime(a["end_time"], "%Y-%m-%d %H:%M:%S")
            ns = gpus * int((e - s).total_seconds()) * S
            if k < len(attempts) - 1 or status in ("Failed", "Killed"):
                rolled += ns
            else:
                kept += ns
        out[job.get("jobid", job.get("id"))] = (rolled, kept)
    return out


@pytest.fixture(scope="module")
def philly_fleet(tmp_path_factory):
    out = tmp_path_factory.mktemp("philly") / "fleet"
    res = pau.fleet.ingest([PHILLY], out, workers=2, tz="UTC")
    assert res.job_sources == 1 and res.jobs == 100 and res.added == 100
    return pau.read_fleet(out)


def test_philly_rolled_back_gpu_hours_per_job_match_pandas(philly_fleet):
    import pandas as pd

    expect = pd.DataFrame([(j, r, k) for j, (r, k) in _philly_by_pandas(PHILLY).items()],
                          columns=["job", "rolled_back_ns", "productive_ns"]).set_index("job").sort_index()
    got = (philly_fleet.runs.select(["job", "rolled_back_ns", "productive_ns"]).to_pandas()
           .set_index("job").sort_index())
    assert len(got) == 100 and (expect["rolled_back_ns"] > 0).sum() >= 5
    pd.testing.assert_frame_equal(got, expect, check_dtype=False)
    jobs = philly_fleet.jobs
    assert jobs["run"].null_count == 0
    # every attempt ended: a job's allocation is its kept and rolled-back GPU time
    alloc = dict(zip(jobs["job"].to_pylist(), jobs["allocated_accelerator_ns"].to_pylist()))
    assert all(alloc[j] == r + k for j, (r, k) in _philly_by_pandas(PHILLY).items())
    assert philly_fleet.jobs_summary()["jobs_without_run"] == 0


def test_philly_ingest_killed_before_its_jobs_file_reads_again(philly_fleet, tmp_path):
    out = tmp_path / "fleet"
    shutil.copytree(philly_fleet.path, out)
    for n in os.listdir(out / "jobs"):
        os.unlink(out / "jobs" / n)  # as if killed after its runs, before its jobs file
    res = pau.fleet.ingest([PHILLY], out, workers=1, tz="UTC")
    assert (res.added, res.present, res.jobs) == (0, 100, 100)
    fleet = pau.read_fleet(out)
    assert fleet.jobs.equals(philly_fleet.jobs) and fleet.runs.equals(philly_fleet.runs)


def test_records_format_names_the_reader():
    assert records.records_format(PHILLY) == "philly"
    assert records.records_format(os.path.join(DATA, "fleet", "slurm_json", "sacct_json_sample.json")) == "sacct"
    assert records.records_format(os.path.join(DATA, "fleet", "README.md")) is None


def test_a_readers_warnings_are_kept_with_its_jobs(tmp_path):
    src = tmp_path / "dump.txt"
    src.write_text(DUMP_A)
    res = pau.fleet.ingest([src], tmp_path / "fleet", workers=1)  # no tz: read as UTC, with a warning
    assert (res.job_sources, res.jobs_warned) == (1, 1)
    (name,) = os.listdir(tmp_path / "fleet" / "jobs")
    meta = pa.parquet.read_schema(tmp_path / "fleet" / "jobs" / name).metadata
    codes = [c for c, _ in json.loads(meta[b"pau.jobs.warnings"])]
    assert codes == ["sacct.timezone_assumed"]


def test_origin_places_the_alibaba_pod_list(tmp_path):
    c = tmp_path / "pods.csv"
    c.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
                 "scheduled_time\np0,1,1,2,500,V100,LS,Succeeded,0,100,40\n")
    res = pau.fleet.ingest([c], tmp_path / "fleet", workers=1, origin_ns=T0, cluster="ali")
    assert (res.jobs, res.jobs_warned) == (1, 0)  # placed: no relative-times warning
    row = pau.read_fleet(tmp_path / "fleet").jobs.to_pylist()[0]
    # 2 GPUs x 500 milli = 1 GPU, from 40 s to 100 s after the origin
    assert (row["cluster"], row["start_ns"], row["end_ns"]) == ("ali", T0 + 40 * S, T0 + 100 * S)
    assert row["allocated_accelerator_ns"] == 60 * S
    with pytest.raises(OptionError, match="origin_ns"):
        pau.fleet.ingest([c], tmp_path / "other", origin_ns=1.5)


def test_bad_scheduler_records_stop_or_are_refused(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "bad.txt").write_text(HEADER + "105|c1|gpu\n")  # 3 fields where the header has 14
    _lifecycle_run(src / "r1", job="1", cluster="c1")
    with pytest.raises(pau.fleet.IngestError, match=r"bad.txt \(sacct\)"):
        pau.fleet.ingest([src], tmp_path / "stop", workers=1, tz="UTC")
    res = pau.fleet.ingest([src], tmp_path / "fleet", workers=1, tz="UTC", skip_bad=True)
    assert (res.refused, res.added, res.job_sources) == (1, 1, 0)
    fleet = pau.read_fleet(tmp_path / "fleet")
    refusal = fleet.refusals.to_pylist()[0]
    assert refusal["format"] == "sacct" and "14" in refusal["reason"]
    assert fleet.jobs is None and fleet.jobs_summary()["runs_without_job"] == 1
