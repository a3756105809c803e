"""One fleet archive of every real sample (issue 40's done-when): the shared samples of
every kind (Philly's job log, the sacct sample, the Alibaba pod list, every MLPerf log, the
Kineto traces, the Nsight exports, the serving outputs) and the Megatron-LM and NVRx
samples of ``tests/data/fleet``, ingested by ``pau ingest`` into one archive that opens
with ``pau.read_fleet``, pyarrow, DuckDB and Polars, and whose runs table holds each run's
``Run.summary()``. Skips without the shared samples (a fresh clone has only tests/data)."""

from __future__ import annotations

import os
import pathlib

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
from shared_data import ROOT as SHARED
from test_fleet_rollup import assert_rollup_equals_pandas

import pau
from pau import cli
from pau.fleet import archive

TESTS = pathlib.Path(__file__).resolve().parent

pytestmark = pytest.mark.skipif(os.environ.get("PAU_TEST_DATA") or not SHARED.is_dir(),
                                reason="needs the full shared samples (../shared/data)")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    out = tmp_path_factory.mktemp("real") / "fleet"
    sources = [str(SHARED), str(TESTS / "data" / "fleet")]
    assert cli.main(["ingest", *sources, "-o", str(out), "--skip-bad", "--no-progress", "--workers", "2"]) == 0
    return pau.read_fleet(out)


def test_every_kind_of_record_is_in_the_archive(fleet):
    formats = set(fleet.runs["format"].to_pylist())
    assert {"kineto", "nsys", "mllog", "serving", "philly", "megatron", "nvrx"} <= formats
    schedulers = set(fleet.jobs["scheduler"].to_pylist())
    assert schedulers == {"slurm", "kubernetes", "philly"}
    # every Philly job is a run of its own and a jobs row, joined by cluster and job
    philly_runs = fleet.runs.filter(pc.equal(fleet.runs["format"], "philly"))
    philly_jobs = fleet.jobs.filter(pc.equal(fleet.jobs["scheduler"], "philly"))
    assert philly_runs.num_rows == philly_jobs.num_rows > 1000
    assert philly_jobs["run"].null_count == 0
    # every MLPerf result log of the v4.0 folder is a run (their system files are not)
    logs = list((SHARED / "mlperf").rglob("result_*.txt"))
    assert fleet.runs.filter(pc.equal(fleet.runs["format"], "mllog")).num_rows == len(logs)
    # the jobs without a run are counted, with their allocation: never left out
    s = fleet.jobs_summary()
    assert s["jobs"] == fleet.jobs.num_rows == s["jobs_with_run"] + s["jobs_without_run"]
    assert s["runs"] == fleet.runs.num_rows == s["runs_with_job"] + s["runs_without_job"]
    assert s["jobs_without_run"] > 0 and s["unattributed_accelerator_ns"] > 0


def test_every_refusal_names_its_source_and_reason(fleet):
    ref = fleet.refusals.to_pylist()
    assert ref and all(r["source"] and r["reason"] for r in ref)
    refused = {r["source"] for r in ref if r["format"] is not None}
    # CPU-only traces hold no accelerator time: refused, with the fix, never a zero run
    assert any("hta-cpu_only" in s for s in refused)
    assert not set(fleet.runs["source"].to_pylist()) & refused


def test_the_runs_table_holds_each_runs_summary(fleet):
    """Every run of every format but Philly's thousands, and 25 Philly jobs."""
    runs = fleet.runs
    philly = pc.equal(runs["format"], "philly")
    rows = runs.filter(pc.invert(philly)).to_pylist() + runs.filter(philly).slice(0, 25).to_pylist()
    for row in rows:
        want = archive.figure_values(fleet.run(row["run"]).summary())
        assert {c: row[c] for c in want} == want, row["source"]


def test_plain_tools_open_the_archive(fleet):
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    p = fleet.path
    runs = ds.dataset(os.path.join(p, "runs")).to_table()
    assert runs.num_rows == fleet.runs.num_rows
    jobs = ds.dataset(os.path.join(p, "jobs")).to_table()
    assert jobs.num_rows >= fleet.jobs.num_rows  # the files hold every record; fleet.jobs one row per job
    acc = pc.sum(fleet.runs["accountable_ns"]).as_py()
    assert duckdb.connect().execute(
        f"SELECT sum(accountable_ns) FROM read_parquet('{p}/runs/*.parquet')").fetchone()[0] == acc
    cells = pl.read_parquet(os.path.join(p, "cells", "*.parquet"))
    assert cells["duration_ns"].sum() == pc.sum(fleet.cells["duration_ns"]).as_py() == acc
    assert isinstance(fleet.cells, pa.Table)


@pytest.mark.parametrize("by", [["cluster"], ["accelerator_type", "labels.format"]])
def test_rollups_of_the_real_archive_equal_pandas(fleet, by):
    """Issue 41's done-when on the archive of the real samples: the rollup's allocated,
    accountable and state columns per group and week equal the pandas computation of
    ``tests/test_fleet_rollup.py`` from the runs, cells and jobs tables (jobs of Philly,
    sacct and Alibaba cut at the week boundaries)."""
    assert fleet.jobs is not None and fleet.jobs.num_rows > 0 and fleet.cells.num_rows > 0
    assert_rollup_equals_pandas(fleet, by, "1w")
