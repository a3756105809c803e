"""The fleet's records: scheduler jobs (sacct text and JSON, Kubernetes pods, the Alibaba
pod list, Philly), Megatron-LM logs and NVRx cycle files.

Real samples are checked against independent computations over the same files (pandas
or the raw lines read by hand); the written samples (``tests/data/fleet/*/README.md``)
against the values they were written with; bad input names the file, row, column and fix.
"""

from __future__ import annotations

import calendar
import json
import os
from fractions import Fraction

import pandas as pd
import pyarrow as pa
import pytest

import pau.core as core
from pau.errors import InvalidRowError, NoInputError, OptionError, SchemaError
from pau.readers.detect import UnknownFormatError, _fleet_hint, detect_format
from pau.readers.kubernetes import read_alibaba_pods, read_pods
from pau.readers.megatron import read_megatron
from pau.readers.nvrx import read_nvrx
from pau.readers.scheduler import JOB_LIFECYCLE_SCHEMA, JOBS_QUARANTINE_SCHEMA, JOBS_SCHEMA, Records, jobs_table, read_philly
from pau.readers.slurm import parse_sacct_jobs, read_sacct_jobs
from shared_data import shared

S = 10**9
HERE = os.path.dirname(os.path.abspath(__file__))
FLEET = os.path.join(HERE, "data", "fleet")


def utc(y, mo, d, h, mi, s, us=0):
    return calendar.timegm((y, mo, d, h, mi, s)) * S + us * 1000


def _read(path) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def codes(warnings):
    return [w.code for w in warnings]


# --- the jobs table ---------------------------------------------------------------

def _nothing_set_aside(rec):
    """A reader's one result type: Records whose quarantine is empty, in its layout, when
    nothing was set aside (on_invalid="raise", the default)."""
    assert isinstance(rec, Records)
    assert rec.quarantine.schema.equals(JOBS_QUARANTINE_SCHEMA) and rec.quarantine.num_rows == 0


def test_jobs_table_derives_queue_and_allocation_exactly():
    rows = [
        {"job": "a", "scheduler": "slurm", "submit_ns": 0, "eligible_ns": 5, "start_ns": 12, "end_ns": 112,
         "accelerators": 8, "_where": "line 2"},
        {"job": "b", "scheduler": "kubernetes", "submit_ns": 0, "start_ns": 3, "end_ns": 10,
         "accelerators": Fraction(1, 2), "_where": "line 3"},  # 3.5 ns: rounded half to even -> 4
        {"job": "c", "scheduler": "slurm", "submit_ns": 7, "accelerators": 4, "_where": "line 4"},  # never started
        {"job": "d", "scheduler": "slurm", "submit_ns": 0, "start_ns": 1, "accelerators": 4, "_where": "line 5"},  # running
    ]
    got = jobs_table(rows, table="t", source_file=None)
    t = got.jobs
    assert got.lifecycle is None and got.warnings == [] and got.quarantine.num_rows == 0
    assert t.schema.equals(JOBS_SCHEMA)
    d = t.to_pydict()
    assert d["queue_ns"] == [7, 3, None, 1]  # a: start - eligible (eligible given)
    assert d["allocated_accelerator_ns"] == [800, 4, 0, None]
    assert d["accelerators"] == [8.0, 0.5, 4.0, 4.0]
    assert t.schema.metadata[b"pau.jobs.rounded_rows"] == b"1"


def test_jobs_table_refuses_int64_overflow_and_bad_order():
    year = 365 * 24 * 3600 * S
    big = [{"job": "x", "scheduler": "slurm", "start_ns": 0, "end_ns": year, "accelerators": 300, "_where": "line 9"}]
    with pytest.raises(InvalidRowError, match=r"column 'allocated_accelerator_ns', row 0: .*past int64.*line 9"):
        jobs_table(big, table="t", source_file=None)
    ok = [{"job": "x", "scheduler": "slurm", "start_ns": 0, "end_ns": year, "accelerators": 290, "_where": "line 9"}]
    assert jobs_table(ok, table="t", source_file=None).jobs["allocated_accelerator_ns"][0].as_py() == 290 * year
    back = [{"job": "y", "scheduler": "slurm", "start_ns": 10, "end_ns": 5, "accelerators": 1, "_where": "line 3"}]
    with pytest.raises(InvalidRowError, match=r"column 'end_ns'.*before the start.*Fix: correct the times"):
        jobs_table(back, table="t", source_file=None)
    dup = [{"job": "z", "scheduler": "slurm"}, {"job": "z", "scheduler": "slurm"}]
    q = jobs_table(dup, table="t", source_file="f.txt", on_invalid="quarantine")
    assert q.jobs.num_rows == 1 and q.quarantine["row"].to_pylist() == [1]
    assert "appears twice" in q.quarantine["reason"][0].as_py()


# --- Slurm sacct ------------------------------------------------------------------

def test_sacct_real_sample_jobs_by_hand():
    path = shared("fleet", "slurm_sacct", "psc_bridges_sacct_parsable.txt")
    rec = read_sacct_jobs(path, tz="America/New_York")
    _nothing_set_aside(rec)
    raw = [ln.split("|") for ln in _read(path).splitlines()[1:] if ln.strip()]
    allocs = [f for f in raw if "." not in f[0]]
    assert rec.jobs.num_rows == len(allocs) == 106
    d = {r["job"]: r for r in rec.jobs.to_pylist()}
    # 2074737|_mb_bot240520ps_|GPU|mc4sa9p|32|COMPLETED|0:0 (the file's first line)
    j = d["2074737"]
    assert (j["partition"], j["team"], j["state"], j["exit_code"]) == ("GPU", "mc4sa9p", "COMPLETED", 0)
    assert j["start_ns"] is None and j["accelerators"] is None and j["allocated_accelerator_ns"] is None
    for f in allocs:  # every allocation line, field by field
        r = d[f[0]]
        assert r["state"] == f[5].split(" ")[0] and r["exit_code"] == int(f[6].split(":")[0])
        assert r["team"] == (f[3] or None) and r["partition"] == (f[2] or None)
    assert codes(rec.warnings) == ["sacct.no_tres"]


SACCT_TEXT = """JobID|Cluster|Partition|Account|User|State|ExitCode|Submit|Eligible|Start|End|NNodes|AllocTRES|ReqTRES
101|eos|batch|llm|alice|COMPLETED|0:0|2026-03-02T10:00:00|2026-03-02T10:00:30|2026-03-02T10:05:00|2026-03-02T12:05:00|2|billing=224,cpu=224,gres/gpu:h100=16,node=2|cpu=224,gres/gpu=16,node=2
101.batch|eos||llm||COMPLETED|0:0|2026-03-02T10:05:00|2026-03-02T10:05:00|2026-03-02T10:05:00|2026-03-02T12:05:00|1|cpu=112,gres/gpu:h100=8,node=1|
101.0|eos||llm||COMPLETED|0:0|2026-03-02T10:05:02|2026-03-02T10:05:02|2026-03-02T10:05:02|2026-03-02T12:04:58|2|cpu=224,gres/gpu:h100=16,node=2|
102_3|eos|batch|llm|bob|CANCELLED by 4242|0:0|2026-03-02T11:00:00|2026-03-02T11:00:00|None|2026-03-02T11:30:00|0||cpu=8,gres/gpu=4,node=1
103|eos|batch|llm|bob|RUNNING|0:0|2026-03-02T11:00:00|2026-03-02T11:00:00|2026-03-02T11:00:10|Unknown|1|cpu=8,gres/gpu=2,node=1|
104|eos|cpu|ops|carol|FAILED|2:0|2026-03-02T11:00:00|2026-03-02T11:00:00|2026-03-02T11:00:01|2026-03-02T11:00:02|1|cpu=4,mem=8G,node=1|
"""


def test_sacct_any_fields_steps_folded_and_zone():
    rec = parse_sacct_jobs(SACCT_TEXT, tz="Europe/Paris")  # UTC+1 in March
    d = {r["job"]: r for r in rec.jobs.to_pylist()}
    assert list(d) == ["101", "102_3", "103", "104"]
    a = d["101"]
    assert a["submit_ns"] == utc(2026, 3, 2, 9, 0, 0) and a["start_ns"] == utc(2026, 3, 2, 9, 5, 0)
    assert a["queue_ns"] == (4 * 60 + 30) * S  # from Eligible
    assert (a["accelerators"], a["accelerator_type"], a["nodes"], a["user"], a["cluster"]) == (16.0, "h100", 2, "alice", "eos")
    assert a["allocated_accelerator_ns"] == 16 * 2 * 3600 * S
    c = d["102_3"]  # never started: ReqTRES says what it waited for, and it held nothing
    assert c["state"] == "CANCELLED" and c["start_ns"] is None and c["accelerators"] == 4.0
    assert c["allocated_accelerator_ns"] == 0 and c["queue_ns"] is None
    assert d["103"]["end_ns"] is None and d["103"]["allocated_accelerator_ns"] is None  # still running
    assert d["104"]["accelerators"] == 0.0 and d["104"]["exit_code"] == 2  # a CPU job: no GPU in AllocTRES
    assert rec.warnings == []
    utc_rec = parse_sacct_jobs(SACCT_TEXT)
    assert codes(utc_rec.warnings) == ["sacct.timezone_assumed"]
    assert utc_rec.jobs["submit_ns"][0].as_py() == utc(2026, 3, 2, 10, 0, 0)


def test_sacct_json_sample():
    rec = read_sacct_jobs(os.path.join(FLEET, "slurm_json", "sacct_json_sample.json"))
    raw = json.loads(_read(os.path.join(FLEET, "slurm_json", "sacct_json_sample.json")))["jobs"]
    d = {r["job"]: r for r in rec.jobs.to_pylist()}
    assert list(d) == ["812001", "812002", "812003_7", "812011+0"]
    j = d["812001"]
    assert j["submit_ns"] == raw[0]["time"]["submission"] * S and j["end_ns"] == raw[0]["time"]["end"] * S
    assert (j["accelerators"], j["accelerator_type"], j["nodes"], j["cluster"], j["team"]) == (64.0, "h100", 8, "eos", "llm-pretrain")
    assert j["allocated_accelerator_ns"] == 64 * (raw[0]["time"]["end"] - raw[0]["time"]["start"]) * S
    f = d["812002"]
    assert (f["state"], f["exit_code"], f["restarts"]) == ("NODE_FAIL", 1, 1)
    assert f["queue_ns"] == (raw[1]["time"]["start"] - raw[1]["time"]["eligible"]) * S
    c = d["812003_7"]  # start 0 = never started; requested GPUs kept
    assert c["start_ns"] is None and c["accelerators"] == 8.0 and c["allocated_accelerator_ns"] == 0
    assert d["812011+0"]["accelerators"] == 0.0
    assert rec.warnings == []  # JSON times are epoch seconds: no zone to assume


def test_sacct_bad_input():
    bad = SACCT_TEXT.replace("2026-03-02T12:05:00|2|billing", "2026-03-02T09:05:00|2|billing")
    with pytest.raises(InvalidRowError, match=r"column 'end_ns', row 0: is before the start time \(line 2\).*Fix:"):
        parse_sacct_jobs(bad, tz="UTC")
    orphan = "JobID|State\n7.batch|COMPLETED\n8|FAILED\n"
    q = parse_sacct_jobs(orphan, tz="UTC", on_invalid="quarantine")
    assert isinstance(q, Records) and q.jobs["job"].to_pylist() == ["8"]
    assert q.quarantine["location"].to_pylist() == ["line 2"] and "allocation line" in q.quarantine["reason"][0].as_py()
    with pytest.raises(InvalidRowError, match=r"column 'ExitCode'.*not an exit code.*line 2"):
        parse_sacct_jobs("JobID|ExitCode\n9|zero\n", tz="UTC")
    with pytest.raises(SchemaError, match="jobs"):
        parse_sacct_jobs('{"meta": {}}')
    with pytest.raises(OptionError, match="not a time zone"):
        parse_sacct_jobs(SACCT_TEXT, tz="Mars/Olympus")


# --- Kubernetes --------------------------------------------------------------------

def test_pods_json_sample():
    path = os.path.join(FLEET, "k8s_pods", "pods_sample.json")
    rec = read_pods(path, cluster="lab")
    _nothing_set_aside(rec)
    d = {r["job"]: r for r in rec.jobs.to_pylist()}
    a = d["research/train-a"]
    assert a["submit_ns"] == utc(2026, 3, 2, 10, 0, 0) and a["start_ns"] == utc(2026, 3, 2, 10, 0, 30)
    assert a["end_ns"] == utc(2026, 3, 2, 12, 0, 31, 500000)  # the later container's finishedAt
    assert (a["accelerators"], a["accelerator_type"], a["exit_code"], a["team"]) == (8.0, "NVIDIA-H100-80GB-HBM3", 0, "research")
    assert a["allocated_accelerator_ns"] == 8 * (a["end_ns"] - a["start_ns"])
    b = d["research/train-b"]
    assert (b["state"], b["exit_code"], b["restarts"], b["accelerators"]) == ("Failed", 137, 3, 6.0)  # init container's 6 GPUs
    n = d["research/notebook"]
    assert n["start_ns"] == utc(2026, 3, 2, 9, 0, 5) and n["accelerators"] == 0.5 and n["end_ns"] is None
    w = d["research/waiting"]
    assert w["start_ns"] is None and w["allocated_accelerator_ns"] == 0 and w["nodes"] is None


def test_alibaba_pods_against_pandas():
    path = shared("cluster", "alibaba", "gpu-v2023", "openb_pod_list_default.csv")
    rec = read_alibaba_pods(path, origin_ns=1_700_000_000 * S)
    _nothing_set_aside(rec)
    df = pd.read_csv(path)
    assert rec.jobs.num_rows == len(df) == 8152
    ran = df[df.scheduled_time.notna()]
    # thousandths of a GPU x seconds: exact integers in pandas' int64
    want_milli_s = int((ran.num_gpu * ran.gpu_milli * (ran.deletion_time - ran.scheduled_time.astype("int64"))).sum())
    got = sum(v for v in rec.jobs["allocated_accelerator_ns"].to_pylist())
    assert got * 1000 == want_milli_s * S
    assert rec.jobs.schema.metadata[b"pau.jobs.rounded_rows"] == b"0"
    assert sum(1 for v in rec.jobs["start_ns"].to_pylist() if v is None) == int(df.scheduled_time.isna().sum())
    assert rec.jobs["submit_ns"][1].as_py() == 1_700_000_000 * S + int(df.creation_time[1]) * S
    assert codes(read_alibaba_pods(path).warnings) == ["alibaba.relative_times"]


def test_pods_bad_input(tmp_path):
    p = tmp_path / "pods.json"
    p.write_text(json.dumps({"kind": "List", "items": [
        {"metadata": {"name": "x", "namespace": "n", "creationTimestamp": "yesterday"}, "spec": {}, "status": {}}]}))
    with pytest.raises(InvalidRowError, match=r"pods .*pods.json: column 'metadata.creationTimestamp', row 0: .*items\[0\].*Fix"):
        read_pods(p)
    c = tmp_path / "pods.csv"
    c.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
                 "p0,1,1,1,1500,,LS,Running,0,10,0\np1,1,1,1,500,,LS,Running,0,10,2\n")
    q = read_alibaba_pods(c, origin_ns=0, on_invalid="quarantine")
    assert q.jobs["job"].to_pylist() == ["p1"] and q.jobs["allocated_accelerator_ns"][0].as_py() == 4 * S
    assert q.quarantine["location"].to_pylist() == ["line 2"] and "gpu_milli" in q.quarantine["reason"][0].as_py()
    with pytest.raises(NoInputError):
        read_pods(tmp_path / "none.json")


# --- Philly ------------------------------------------------------------------------

def test_philly_against_pandas():
    path = shared("cluster", "philly", "jobs_subset_marwage.json")
    rec = read_philly(path, tz="UTC")
    _nothing_set_aside(rec)
    raw = json.loads(_read(path))
    att = pd.DataFrame([{"job": j["id"], "gpus": j["num_gpus"], "start": a["start_time"], "end": a["end_time"]}
                        for j in raw for a in j["attempts"]])
    secs = (pd.to_datetime(att.end) - pd.to_datetime(att.start)).dt.total_seconds().astype("int64")
    gpu_s = int((secs * att.gpus).sum())
    assert rec.jobs.num_rows == len(raw) > 0  # 3,034 in the shared subset, its first 100 in tests/data
    assert sum(rec.jobs["allocated_accelerator_ns"].to_pylist()) == gpu_s * S
    d = {r["job"]: r for r in rec.jobs.to_pylist()}
    first = raw[0]
    j = d[first["id"]]
    assert j["restarts"] == len(first["attempts"]) - 1 and j["accelerators"] == first["num_gpus"]
    assert j["queue_ns"] == int((pd.Timestamp(first["attempts"][0]["start_time"]) - pd.Timestamp(first["submitted_time"])).total_seconds()) * S
    life = rec.lifecycle
    assert life.schema.equals(JOB_LIFECYCLE_SCHEMA)
    assert life.num_rows == int(att.gpus.sum())  # one attempt row per attempt and GPU
    assert "philly.no_status" in codes(rec.warnings)


def test_philly_lifecycle_is_one_lineage_per_job(tmp_path):
    p = tmp_path / "p.json"
    p.write_text(json.dumps([{"jobid": "j1", "status": "Pass", "vc": "vc1", "user": "u", "submitted_time": "2017-10-01 00:00:00",
                              "attempts": [{"start_time": "2017-10-01 00:00:10", "end_time": "2017-10-01 00:01:10",
                                            "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}]},
                                           {"start_time": "2017-10-01 00:02:10", "end_time": "2017-10-01 00:03:10",
                                            "detail": [{"ip": "m2", "gpus": ["gpu0", "gpu1"]}]}]}]))
    rec = read_philly(p, tz="America/Los_Angeles")
    j = rec.jobs.to_pylist()[0]
    assert j["start_ns"] == utc(2017, 10, 1, 7, 0, 10) and (j["team"], j["user"], j["state"]) == ("vc1", "u", "Pass")
    assert j["allocated_accelerator_ns"] == 2 * 120 * S and rec.warnings == []
    led = core.ledger(lifecycle=rec.lifecycle.drop(["job"]))
    by = led.table.to_pandas().groupby("state").duration_ns.sum()
    assert by["recovery.outage"] == 2 * 60 * S  # the minute between attempts, on both GPUs
    assert rec.lifecycle.filter(pa.compute.equal(rec.lifecycle["attempt"], 1))["kind"].to_pylist() == ["completed"] * 2


def test_philly_bad_input(tmp_path):
    p = tmp_path / "p.json"
    p.write_text(json.dumps([{"id": "a", "num_gpus": 4, "submitted_time": "2017-10-01 00:00:00",
                              "attempts": [{"start_time": None, "end_time": "2017-10-01 00:01:00"}]},
                             {"id": "b", "num_gpus": 4, "submitted_time": "2017-10-01 00:00:00", "attempts": []}]))
    with pytest.raises(InvalidRowError, match=r"philly .*p.json: column 'attempts.start_time', row 0: .*job 0.*Fix"):
        read_philly(p, tz="UTC")
    q = read_philly(p, tz="UTC", on_invalid="quarantine")
    assert q.jobs["job"].to_pylist() == ["b"] and q.quarantine["job"].to_pylist() == ["a"]
    assert q.jobs["allocated_accelerator_ns"].to_pylist() == [0]


# --- Megatron-LM -------------------------------------------------------------------

MEGA = os.path.join(FLEET, "megatron_log", "gpt3_ckpt_resume_sample.log")


def test_megatron_sample_lifecycle():
    rec = read_megatron(MEGA, tz="UTC", job="812001")
    _nothing_set_aside(rec)
    t = rec.lifecycle.to_pandas(integer_object_nulls=True)
    att = t[t.record == "attempt"]
    assert sorted(att["rank"].unique()) == list(range(8)) and sorted(att.attempt.unique()) == [0, 1]
    assert list(att.drop_duplicates("attempt").kind) == ["failed", "completed"]
    steps = t[t.record == "step"]
    assert list(steps[steps.attempt == 0].step) == list(range(1, 71)) and list(steps[steps.attempt == 1].step) == list(range(51, 101))
    # iterations 11-20: 55.0 ms each, ending at the line's timestamp 10:00:37.802
    s = steps[(steps.attempt == 0) & steps.step.between(11, 20)]
    assert int(s.end_ns.max()) == utc(2026, 3, 2, 10, 0, 37, 802000) and int(s.end_ns.max() - s.start_ns.min()) == 550 * 10**6
    saves = t[t.record == "checkpoint_save"].sort_values("step")
    assert list(saves.step) == [50, 100]
    assert int(saves.block_end_ns.iloc[0]) == utc(2026, 3, 2, 10, 0, 41, 822000)  # scheduled (async)
    assert int(saves.durable_ns.iloc[0]) == utc(2026, 3, 2, 10, 0, 42, 533000)  # successfully saved
    r = t[t.record == "restore"]
    assert list(r.step) == [50] and int(r.start_ns.iloc[0]) == utc(2026, 3, 2, 10, 2, 49, 750000)
    assert int(r.end_ns.iloc[0]) == utc(2026, 3, 2, 10, 3, 4)
    ev = t[t.kind == "eval"]
    assert len(ev) == 2 and int(ev.start_ns.iloc[0]) == utc(2026, 3, 2, 10, 0, 39, 463000)
    assert int(ev.end_ns.iloc[0]) == utc(2026, 3, 2, 10, 0, 41, 572000)  # to the save's start
    assert set(t.job) == {"812001"}
    assert set(codes(rec.warnings)) == {"megatron.attempt_end_unlogged", "megatron.restore_bounds"}
    led = core.ledger(lifecycle=rec.lifecycle.drop(["job"]))
    summ = led.summary()
    assert summ["preserved_steps"] == 100 and summ["failures"] == 1
    by = led.table.to_pandas().groupby("state").duration_ns.sum()
    assert by.sum() == 8 * (utc(2026, 3, 2, 10, 3, 16, 297000) - utc(2026, 3, 2, 10, 0, 0))  # conserved on 8 ranks
    assert by["recovery.outage"] == 8 * (utc(2026, 3, 2, 10, 2, 30) - utc(2026, 3, 2, 10, 0, 43, 89000))


def test_megatron_bad_input(tmp_path):
    p = tmp_path / "old.log"
    p.write_text(" iteration       10/     100 | consumed samples:          320 | elapsed time per iteration (ms): 61.5 |\n")
    with pytest.raises(InvalidRowError, match=r"megatron .*old.log: column 'iteration', row 0: has no timestamp.*line 1.*Fix"):
        read_megatron(p, tz="UTC")
    q = tmp_path / "bad.log"
    q.write_text(_read(MEGA).replace("[2026-03-02 10:00:37.802000]", "[2026-13-02 10:00:37.802000]"))
    with pytest.raises(InvalidRowError, match=r"column 'iteration', row 9: .*not a time.*line 10"):
        read_megatron(q, tz="UTC")
    got = read_megatron(q, tz="UTC", on_invalid="quarantine")
    assert got.quarantine["location"].to_pylist() == ["line 10"]
    assert codes(read_megatron(MEGA).warnings)[0] == "megatron.timezone_assumed"
    back = tmp_path / "back.log"
    back.write_text(_read(MEGA).replace("iteration       20/     100", "iteration        5/     100"))
    with pytest.raises(InvalidRowError, match=r"column 'iteration', row 9: iteration 5 follows iteration 10.*line 10"):
        read_megatron(back, tz="UTC")
    with pytest.raises(OptionError, match="world size 8"):
        read_megatron(MEGA, tz="UTC", ranks=4)


# --- NVRx --------------------------------------------------------------------------

NVRX = os.path.join(FLEET, "nvrx_cycle_info")
NVRX_LOG = os.path.join(FLEET, "nvrx_launcher_log", "ft_launcher_node001.log")


def test_nvrx_cycles_and_profiling_events():
    rec = read_nvrx(NVRX, log=NVRX_LOG, ranks_per_node=4)
    _nothing_set_aside(rec)
    t = rec.lifecycle.to_pandas(integer_object_nulls=True)
    files = [json.loads(_read(os.path.join(NVRX, f"cycle_info.4711.0.{c}"))) for c in range(3)]
    att = t[t.record == "attempt"]
    assert len(att) == 3 * 2 * 4 and sorted(att["rank"].unique()) == list(range(8))
    first = att[att.attempt == 0].iloc[0]
    assert int(first.start_ns) == utc(2026, 3, 2, 10, 0, 0, 120000) and files[0]["cycle_start_time"].startswith("2026-03-02T10:00:00.12")
    kinds = list(att.drop_duplicates("attempt").kind)
    assert kinds[:2] == ["failed", "failed"] and pd.isna(kinds[2])  # the last cycle's end reason is not in the files
    assert att[att.attempt == 2].end_ns.isna().all()  # the open last cycle is not closed by a guess
    f = t[t.record == "failure"]
    assert list(f.attempt) == [0, 1] and int(f.start_ns.iloc[0]) == utc(2026, 3, 2, 10, 5, 1, 250000)
    init = t[t.kind == "init"]
    assert list(init.attempt) == [0, 1, 2]
    assert int(init.end_ns.iloc[1] - init.start_ns.iloc[1]) == 2_100 * 10**6  # worker start 10:05:40.600 -> 42.700
    assert set(codes(rec.warnings)) == {"nvrx.open_cycle"}
    led = core.ledger(lifecycle=rec.lifecycle.drop(["job"]))
    by = led.table.to_pandas().groupby("state").duration_ns.sum()
    assert by["recovery.reinit"] == 8 * (2_100 + 2_200) * 10**6
    # failure detected -> next cycle's start, on 8 ranks: 39.25 s and 52.3 s
    assert by["recovery.outage"] == 8 * (39_250 + 52_300) * 10**6
    assert "nvrx.ranks_are_nodes" in codes(read_nvrx(NVRX).warnings)


def test_nvrx_bad_input(tmp_path):
    good = json.loads(_read(os.path.join(NVRX, "cycle_info.4711.0.0")))
    (tmp_path / "cycle_info.4711.0.0").write_text(json.dumps(good))
    (tmp_path / "cycle_info.4711.0.1").write_text(json.dumps(good))  # says cycle 0
    with pytest.raises(InvalidRowError, match=r"nvrx .*cycle_info.4711.0.1: column 'job_id', row 1: .*its name.*Fix"):
        read_nvrx(tmp_path, ranks_per_node=8)
    q = read_nvrx(tmp_path, ranks_per_node=8, on_invalid="quarantine")
    assert q.quarantine["source_file"][0].as_py().endswith("cycle_info.4711.0.1")
    assert q.lifecycle.num_rows == 2 * 8 and q.quarantine["row"].to_pylist() == [1]
    (tmp_path / "cycle_info.4711.1.0").write_text(json.dumps({**good, "attempt_index": 1}))
    (tmp_path / "cycle_info.4711.0.1").unlink()
    two = read_nvrx(tmp_path, log=NVRX_LOG, ranks_per_node=8)
    assert "nvrx.log_unused" in codes(two.warnings) and set(two.lifecycle["record"].to_pylist()) == {"attempt"}
    with pytest.raises(NoInputError):
        read_nvrx(tmp_path / "nothing")


# --- format detection ----------------------------------------------------------------

@pytest.mark.parametrize("parts,reader", [
    (("fleet", "megatron_log", "gpt3_ckpt_resume_sample.log"), "read_megatron"),
    (("fleet", "nvrx_cycle_info", "cycle_info.4711.0.1"), "read_nvrx"),
    (("fleet", "slurm_json", "sacct_json_sample.json"), "read_sacct_jobs"),
    (("fleet", "k8s_pods", "pods_sample.json"), "read_pods"),
    (("fleet", "slurm_sacct", "psc_bridges_sacct_parsable.txt"), "read_sacct_jobs"),
    (("cluster", "philly", "jobs_subset_marwage.json"), "read_philly"),
    (("cluster", "alibaba", "gpu-v2023", "openb_pod_list_default.csv"), "read_alibaba_pods"),
])
def test_detect_names_the_fleet_reader(parts, reader):
    path = shared(*parts)
    with pytest.raises(UnknownFormatError, match=rf"fleet records, not a run.*Fix: read it with pau\.readers\.{reader}\(path\)"):
        detect_format(path)


def test_a_text_about_a_megatron_log_is_not_one(tmp_path):
    """Megatron-LM's phrases in prose (the README beside the sample log quotes its format
    strings) do not make a log: its lines must start as a real log's do, twice."""
    readme = os.path.join(FLEET, "megatron_log", "README.md")
    assert "elapsed time per iteration (ms)" in _read(readme)  # the phrase the old rule looked for
    assert _fleet_hint(_read(readme)) is None
    log = _read(MEGA)
    assert _fleet_hint(log) == ("a Megatron-LM training log", "read_megatron")
    lines = log.splitlines(keepends=True)
    iters = [ln for ln in lines if " iteration " in ln and "elapsed time per iteration" in ln]
    stamps = [ln for ln in lines if "] datetime: " in ln]
    assert len(iters) >= 2 and len(stamps) >= 2
    assert _fleet_hint("".join(iters[:2])) is not None  # two iteration lines
    assert _fleet_hint("".join(stamps[:2])) is not None  # a log that ended before its first iteration line
    assert _fleet_hint(iters[0]) is None and _fleet_hint(stamps[0]) is None  # one line is no log
    # the lines quoted inside prose (not at a line start) are not a log either
    assert _fleet_hint("".join("see: " + ln for ln in iters[:3] + stamps[:3])) is None
    p = tmp_path / "notes.txt"
    p.write_text("A Megatron-LM log prints `elapsed time per iteration (ms): 55.0` and "
                 "`[after dataloaders are built] datetime: 2026-03-02 10:00:33.000000`.\n")
    with pytest.raises(UnknownFormatError, match="matches no known format"):
        detect_format(p)


def test_megatron_restore_without_timestamps_keeps_the_lineage(tmp_path):
    lines = _read(MEGA).splitlines()
    # attempt 1 begins at its load line (its set-up lines left out): nothing times the restore
    drop = ("[after in-job setup and before initialize_megatron] datetime: 2026-03-02 10:02",
            "[after megatron is initialized] datetime: 2026-03-02 10:02")
    cut = [ln for ln in lines if not ln.startswith(drop)]
    assert len(cut) == len(lines) - 2
    p = tmp_path / "m.log"
    p.write_text("\n".join(cut) + "\n")
    rec = read_megatron(p, tz="UTC")
    t = rec.lifecycle.to_pandas(integer_object_nulls=True)
    r = t[t.record == "restore"]
    first_step = t[(t.record == "step") & (t.attempt == 1)].start_ns.min()
    assert list(r.step) == [50] and list(r.start_ns) == list(r.end_ns) == [first_step]
    assert sorted(t.attempt.unique()) == [0, 1]
    assert "megatron.restore_untimed" in codes(rec.warnings)
    assert core.ledger(lifecycle=rec.lifecycle).summary()["preserved_steps"] == 100


def test_sacct_without_times_asks_no_zone():
    path = shared("fleet", "slurm_sacct", "psc_bridges_sacct_parsable.txt")
    assert codes(read_sacct_jobs(path).warnings) == ["sacct.no_tres"]
