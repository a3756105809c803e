"""``pau.synth.fleet``: a synthetic fleet's jobs, sacct text and lifecycles
(docs/fleet.md, "A synthetic fleet")."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import pau
import pau.fleet
from pau import synth
from pau.errors import OptionError
from pau.readers import JOB_LIFECYCLE_SCHEMA, JOBS_SCHEMA, read_sacct_jobs
from pau.run import Run

S = 10**9


def _ledger(fl, job):
    lc = fl.lifecycle
    return Run(lifecycle=lc.filter(pc.equal(lc["job"], job)).drop(["job"])).summary()["ledger"]


def test_deterministic_by_seed():
    a, b, c = synth.fleet(2_000, seed=3), synth.fleet(2_000, seed=3), synth.fleet(2_000, seed=4)
    assert a.jobs.equals(b.jobs) and a.lifecycle.equals(b.lifecycle)
    assert not a.jobs.equals(c.jobs)
    assert a.jobs.schema.equals(JOBS_SCHEMA) and a.lifecycle.schema.equals(JOB_LIFECYCLE_SCHEMA)


def test_sacct_text_reads_back_as_the_jobs_table(tmp_path):
    fl = synth.fleet(3_000, seed=1, failures_per_accelerator_hour=1e-3)
    path = tmp_path / "jobs.txt"
    path.write_text(fl.sacct_text())
    got = read_sacct_jobs(path, tz="UTC").jobs
    assert got.equals(fl.jobs)


def test_sizes_lengths_and_failures_follow_the_parameters():
    rate = 2e-3
    fl = synth.fleet(20_000, seed=2, failures_per_accelerator_hour=rate, max_accelerators=256, outage_s=300)
    j = fl.jobs
    acc = np.asarray(j["accelerators"])
    assert set(np.unique(acc)) <= {2.0**k for k in range(9)}
    assert abs(np.log2(acc).mean() - 1.5) < 0.1  # the geometric law's mean, before the cap at 2**8 moves it a little
    assert (acc >= 128).sum() > 200  # a heavy tail: 2**7 and up
    # failures: Poisson at rate x accelerators per hour of attempts (the allocation less the outages)
    restarts = np.asarray(j["restarts"], np.int64)
    failed = np.asarray(pc.equal(j["state"], "FAILED"), bool)
    failures = restarts.sum() + failed.sum()
    alloc_h = np.asarray(j["allocated_accelerator_ns"], np.float64) / 3.6e12
    exposure = (alloc_h - acc * restarts * 300 / 3_600).sum()
    expected = rate * exposure
    assert abs(failures - expected) < 4 * math.sqrt(expected)
    queue = np.asarray(j["queue_ns"]) / S
    assert 200 < np.median(queue) < 450  # log-normal, median 300 s


def test_each_lifecycle_accounts_for_its_whole_allocation():
    fl = synth.fleet(1_500, seed=5, failures_per_accelerator_hour=2e-3, profiled=0.2, max_accelerators=64)
    j = fl.jobs
    rows = {r["job"]: r for r in j.to_pylist()}
    profiled = j.filter(pa.array(fl.profiled))
    assert profiled.num_rows == len(fl.lifecycle["job"].unique()) > 200
    seen_failure = False
    for job in profiled["job"].to_pylist()[:150]:
        led, r = _ledger(fl, job), rows[job]
        assert led["accountable_ns"] == r["allocated_accelerator_ns"]
        assert led["ranks"] == r["accelerators"]
        fails = r["restarts"] + (r["state"] == "FAILED")
        assert led["failures"] == fails
        n = int(r["accelerators"])
        if fails == 0:  # by hand: init, then the work and a checkpoint per segment
            st = led["state_ns"]
            assert st["initialization"] == n * 300 * S and st["rolled_back"] == 0
            assert led["accountable_ns"] == st["initialization"] + st["productive"] + st["checkpoint"]
        else:
            seen_failure = True
            assert led["state_ns"]["recovery.outage"] == n * 300 * S * r["restarts"]  # between attempts
    assert seen_failure


def test_written_fleet_ingests_jobs_and_runs(tmp_path):
    fl = synth.fleet(300, seed=7, profiled=0.1, max_accelerators=16, failures_per_accelerator_hour=1e-3)
    counts = fl.write(tmp_path / "src")
    assert counts == {"jobs": 300, "runs": int(fl.profiled.sum())}
    res = pau.fleet.ingest([tmp_path / "src"], tmp_path / "fleet", workers=1, tz="UTC")
    assert (res.jobs, res.added) == (300, counts["runs"])
    fleet = pau.read_fleet(tmp_path / "fleet")
    s = fleet.jobs_summary()
    assert (s["jobs"], s["jobs_with_run"], s["jobs_without_run"], s["runs_without_job"]) == (
        300, counts["runs"], 300 - counts["runs"], 0)
    jobs = fleet.jobs.filter(pc.is_valid(fleet.jobs["run"]))
    runs = {r["run"]: r for r in fleet.runs.to_pylist()}
    for job in jobs.to_pylist():
        run = runs[job["run"]]
        assert run["accountable_ns"] == job["allocated_accelerator_ns"]
        assert (run["accelerators"], run["accelerator_type"]) == (int(job["accelerators"]), job["accelerator_type"])
    lonely = fleet.jobs.filter(pc.is_null(fleet.jobs["run"]))
    assert s["unattributed_accelerator_ns"] == sum(lonely["allocated_accelerator_ns"].to_pylist())


def test_bad_parameters():
    with pytest.raises(OptionError, match="power of two"):
        synth.fleet(10, max_accelerators=100)
    with pytest.raises(OptionError, match="cluster_weights"):
        synth.fleet(10, cluster_weights=(1.0,))
