"""The figures' summaries are TypedDicts (issue 39): each summary holds exactly the
keys of its type, in the type's order, nested summaries included."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import pau
from pau import cli, synth
from pau.engine import types as T
from pau.figures import compare, goodput, interference, recovery, stragglers
from pau.figures.idle import CAUSES
from pau.readers.mllog import read_mllog

from shared_data import shared

S = 10**9


def _keys(summary, typ) -> None:
    assert list(summary) == list(typ.__annotations__), typ.__name__


@pytest.fixture(scope="module")
def job():
    j = synth.training_job(ranks=4, steps=60, seed=0, mtbf_s=150.0, checkpoint_every=50, kernels_per_step=24,
                           straggler=(3, 1.25))
    return j, pau.Run(events=j.events, lifecycle=j.lifecycle).ledger()


def _steps() -> pa.Table:
    """Three ranks, four steps each, rank 2 slower in steps 1 and 3; one step in flight."""
    rows = [(r, k, 10 * k * S, (10 * k + 2 + (r == 2) * (k % 2)) * S) for r in range(3) for k in range(4)]
    rows.append((0, 4, 40 * S, None))
    return pa.table({"rank": [x[0] for x in rows], "step": [x[1] for x in rows],
                     "start_ns": pa.array([x[2] for x in rows], pa.int64()),
                     "end_ns": pa.array([x[3] for x in rows], pa.int64())})


def test_stragglers_summary():
    s = stragglers.stragglers(_steps()).summary()
    _keys(s, T.StragglersSummary)
    assert s["steps"] == 4 and s["ranks"] == 3 and s["in_flight"] == 1


def test_straggler_scores_summary():
    s = stragglers.straggler_scores(_steps(), every_steps=2).summary()
    _keys(s, T.StragglerScoresSummary)
    assert [r["rank"] for r in s["per_rank"]] == [0, 1, 2]
    for r in s["per_rank"]:
        _keys(r, T.RankScore)


def test_protection_summary(job):
    _, led = job
    _keys(recovery.protection(led, bound_share=0.05, price_per_accelerator_hour=2).summary(), T.ProtectionSummary)
    _keys(recovery.protection(led, bound_ns=0).summary(), T.ProtectionSummary)


def test_goodput_summaries(job):
    _, led = job
    flops = goodput.model_flops(per_step=10**15, hardware_per_step=12 * 10**14)
    _keys(flops.summary(), T.ModelFlopsSummary)
    _keys(goodput.model_flops(params=10**9, layers=4, heads=8, head_dim=64, seq_len=128, tokens_per_step=1024,
                              recompute="full").summary(), T.ModelFlopsSummary)
    _keys(goodput.peak_flops("h100-sxm", "bf16").summary(), T.PeakFlopsSummary)
    pg = goodput.program_goodput(led, flops, accelerator="h100-sxm", dtype="bf16").summary()
    _keys(pg, T.ProgramGoodputSummary)
    _keys(pg["peak"], T.PeakFlopsSummary)
    m = goodput.mpg(led, flops=flops, accelerator="h100-sxm", dtype="bf16").summary()
    _keys(m, T.MPGSummary)
    assert m["program"] is not None
    _keys(m["program"], T.ProgramGoodputSummary)
    _keys(goodput.mpg(led).summary(), T.MPGSummary)
    _keys(goodput.ettr(led, queued_ns=0).summary(), T.ETTRSummary)


def test_interference_summary():
    prog = pa.table({"job": ["x", "x", "y", "y"],
                     "start_ns": pa.array([0, 10 * S, 10 * S, 20 * S], pa.int64()),
                     "end_ns": pa.array([10 * S, 20 * S, 20 * S, 30 * S], pa.int64()),
                     "progress": pa.array([100, 60, 40, 50], pa.int64())})
    win = pa.table({"rank": pa.array([1], pa.int32()), "start_ns": pa.array([10 * S], pa.int64()),
                    "end_ns": pa.array([20 * S], pa.int64()), "jobs": [["x", "y"]]})
    s = interference.interference(prog, windows=win).summary()
    _keys(s, T.InterferenceSummary)
    assert s["jobs"] == 2


def test_comparison_and_kernel_diff_summaries(job):
    j, led = job
    r = compare.compare(led, led, events_a=j.events, events_b=j.events)
    s = r.summary(kernels=3)
    _keys(s, T.ComparisonSummary)
    assert s["kernels"] is not None
    _keys(s["kernels"], T.KernelDiffSummary)
    assert s["kernels"]["left_out"] == s["kernels"]["count"] - 3
    _keys(compare.compare(led, led).summary(), T.ComparisonSummary)


def test_run_summary_idle_by_cause_and_mlperf(capsys):
    """``pau report --format json``'s ``idle_by_cause`` and ``mlperf``, key for key their
    types' (the keys they always had: the output is byte for byte what it was before
    the types, checked by hand on the built-in run, an MLPerf log and a Kineto trace)."""
    assert cli.main(["report", "--format", "json"]) == 0   # the built-in run
    got = json.loads(capsys.readouterr().out)
    idle = got["idle_by_cause"]
    _keys(idle, T.IdleFigures)
    assert list(idle["ns"]) == list(CAUSES) and [r["rank"] for r in idle["per_rank"]] == list(range(8))
    for r in idle["per_rank"]:
        _keys(r, T.RankIdle)
    assert {c: sum(r["ns"][c] for r in idle["per_rank"]) for c in CAUSES} == idle["ns"]
    assert got["mlperf"] is None
    path = shared("mlperf", "training_v4.0", "ASUSTeK", "results", "ESC_N8A-E12", "ssd", "result_0.txt")
    assert cli.main(["report", str(path), "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    m = got["mlperf"]
    _keys(m, T.MLPerfFigures)
    assert list(m) == sorted(m) and got["idle_by_cause"] is None   # no events: no idle
    assert m["eval"] is not None and sorted(m["eval"]) == sorted(T.MLPerfEval.__annotations__)
    for p in m["eval"]["parts"]:
        assert sorted(p) == sorted(T.MLPerfTargetPart.__annotations__)
    ev = read_mllog(path).eval   # the reader's, in judge's order
    _keys(ev, T.MLPerfEval)
    for p in ev["parts"]:
        _keys(p, T.MLPerfTargetPart)
    assert json.loads(json.dumps(ev)) == m["eval"]
