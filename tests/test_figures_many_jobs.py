"""No figure mixes jobs silently: every figure over a lifecycle or a ledger, asked of a
lifecycle of two jobs that share rank and attempt numbers, either gives the jobs' figure by
its documented rule or refuses with :class:`pau.errors.ManyJobsError` naming the figure
and the fix (``docs/lifecycle.md``, "Figures of many jobs")."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pac
import pytest

import pau
import pau.core as pc
from pau import synth
from pau.errors import ManyJobsError, OptionError
from pau.figures import cost, economics, goodput, hardware, idle, layers, recovery, stragglers
from pau.figures.compare import compare, top_kernels
from pau.views.chrome_trace import chrome_trace


def with_job(t: pa.Table, name: str) -> pa.Table:
    return t.append_column("job", pa.array([name] * t.num_rows, pa.string()))


def stream(t: pa.Table) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(t.schema, t.to_batches())


def of_job(t: pa.Table, name: str) -> pa.Table:
    """The fix the errors name: the lifecycle filtered by job."""
    return t.filter(pac.equal(t["job"], name))


@pytest.fixture(scope="module")
def jobs():
    """Two small jobs with equal ranks (0, 1) and attempt numbers (from 1), each with
    failures and restores, tagged "a" and "b" and concatenated."""
    a = synth.training_job(ranks=2, steps=40, seed=1, mtbf_s=40, checkpoint_every=10, per_rank_rows=True)
    b = synth.training_job(ranks=2, steps=40, seed=2, mtbf_s=40, checkpoint_every=10, per_rank_rows=True)
    for j in (a, b):  # the case this guards against: the same rank and attempt numbers
        assert set(j.lifecycle["rank"].to_pylist()) - {-1} == {0, 1}
        assert min(v for v in j.lifecycle["attempt"].to_pylist() if v is not None) == 1
        assert len(set(j.lifecycle["attempt"].to_pylist()) - {None}) > 1
    lc = pa.concat_tables([with_job(a.lifecycle, "a"), with_job(b.lifecycle, "b")])
    ev = pa.concat_tables([with_job(a.events, "a"), with_job(b.events, "b")])
    return a, b, lc, ev, pc.ledger(ev, lc)


SAMPLES = pa.table({"rank": pa.array([0], pa.int32()), "time_ns": pa.array([0], pa.int64()),
                    "metric": pa.array(["power_w"]), "value": pa.array([1.0])})

#: Every figure of one job over a lifecycle or a ledger, as (name in the error, call).
REFUSED = [
    ("recovery", lambda a, b, lc, ev, led: recovery.recovery(lc)),
    ("recovery", lambda a, b, lc, ev, led: recovery.recovery(a.lifecycle, ledger=led)),
    ("recovery", lambda a, b, lc, ev, led: recovery.recovery(stream(lc))),
    ("idle by cause", lambda a, b, lc, ev, led: idle.idle_by_cause(ev, lifecycle=stream(lc))),
    ("protection", lambda a, b, lc, ev, led: recovery.protection(led, bound_ns=0)),
    ("stragglers", lambda a, b, lc, ev, led: stragglers.stragglers(lc)),
    ("straggler scores", lambda a, b, lc, ev, led: stragglers.straggler_scores(lc)),
    ("step times", lambda a, b, lc, ev, led: stragglers.step_times(lc)),
    ("step figures", lambda a, b, lc, ev, led: stragglers.step_figures(lc)),
    ("program goodput", lambda a, b, lc, ev, led: goodput.program_goodput(led, 10**9, peak=10**15)),
    ("MPG", lambda a, b, lc, ev, led: goodput.mpg(led)),
    ("ETTR", lambda a, b, lc, ev, led: goodput.ettr(led, queued_ns=0)),
    ("layers", lambda a, b, lc, ev, led: layers.layers(led)),
    ("idle by cause", lambda a, b, lc, ev, led: idle.idle_by_cause(ev, lifecycle=lc)),
    ("idle by cause", lambda a, b, lc, ev, led: idle.idle_by_cause(ev, ledger=led)),
    ("idle cause intervals", lambda a, b, lc, ev, led: idle.idle_cause_intervals(ev, lifecycle=lc)),
    ("host of lifecycle", lambda a, b, lc, ev, led: idle.host_of_lifecycle(lc)),
    ("checkpoint advice", lambda a, b, lc, ev, led: economics.checkpoint_advice(led, checkpoint_cost_s=1)),
    ("cost", lambda a, b, lc, ev, led: cost.cost(led, {"accelerator_hour": 1.0})),
    ("cell intervals", lambda a, b, lc, ev, led: hardware.cell_intervals(led, ev)),
    ("cell metrics", lambda a, b, lc, ev, led: hardware.cell_metrics(led, SAMPLES, events=ev)),
    ("cell metrics", lambda a, b, lc, ev, led: hardware.summary(led, SAMPLES, events=ev)),
    ("Chrome trace", lambda a, b, lc, ev, led: chrome_trace(pau.Run(events=ev, lifecycle=lc))),
    ("Chrome trace", lambda a, b, lc, ev, led: chrome_trace(pau.Run(events=a.events, lifecycle=a.lifecycle),
                                                            ledger=led)),
]


@pytest.mark.parametrize("name,call", REFUSED, ids=[f"{i}-{n}" for i, (n, _) in enumerate(REFUSED)])
def test_a_figure_of_one_job_refuses_many_jobs(jobs, name, call):
    with pytest.raises(ManyJobsError) as e:
        call(*jobs)
    assert isinstance(e.value, OptionError)  # an option that does not apply to this input
    msg = str(e.value)
    assert name in msg and "2 jobs" in msg
    assert "filter the lifecycle by job" in msg and "pau.read_fleet / pau ingest" in msg
    assert e.value.jobs == 2


def test_the_fix_the_error_names_gives_each_job_its_own_figure(jobs):
    """Filtered by job (the column kept, one value), each figure is that job's alone."""
    a, b, lc, ev, led = jobs
    for name, one in (("a", a), ("b", b)):
        mine = of_job(lc, name)
        assert stragglers.step_figures(mine) == stragglers.step_figures(one.lifecycle)
        assert stragglers.stragglers(mine).summary() == stragglers.stragglers(one.lifecycle).summary()
        got, want = recovery.recovery(mine), recovery.recovery(one.lifecycle)
        assert got.summary() == want.summary() and got.per_failure == want.per_failure
        # a stream is read once: the check of its jobs does not leave the figure an empty table
        assert recovery.recovery(stream(mine)).summary() == want.summary()
        ev_one = of_job(ev, name).drop_columns(["job"])
        assert (idle.idle_by_cause(ev_one, lifecycle=stream(mine)).table
                == idle.idle_by_cause(one.events, lifecycle=one.lifecycle).table)
        assert (layers.layers(pc.ledger(lifecycle=mine)).summary()
                == layers.layers(pc.ledger(lifecycle=one.lifecycle)).summary())


def test_compare_reads_the_summary_ratios_of_sums(jobs):
    """compare reads Ledger.summary only: for many jobs its per-step figures are the
    summed accountable time over the summed preserved steps."""
    a, b, lc, ev, led = jobs
    la, lb = pc.ledger(a.events, a.lifecycle), pc.ledger(b.events, b.lifecycle)
    c = compare(led, la).summary()
    acc = la.summary()["accountable_ns"] + lb.summary()["accountable_ns"]
    steps = la.summary()["preserved_steps"] + lb.summary()["preserved_steps"]
    row = next(r for r in c["by_cause"] if r["cause"] == "total")
    assert row["a"] == pytest.approx(acc / steps / 1e9, rel=1e-12)


def test_run_summary_of_many_jobs_keeps_the_ledger_and_leaves_out_the_rest(jobs):
    a, b, lc, ev, led = jobs
    run = pau.Run(events=ev, lifecycle=lc)
    s = run.summary()
    assert s["ledger"] == led.summary()
    assert s["ledger"]["ranks"] == 4  # (job, rank) pairs
    assert [(r["job"], r["rank"]) for r in s["per_rank"]] == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    left = ("steps", "idle_by_cause", "layers", "recovery", "events_outside_accountable")
    for k in left:
        assert s[k] is None, k
    assert s["top_kernels"] == top_kernels(ev)  # pooled: the kernels of every job
    ws = [w for w in run.warnings if w.code == "figures.many_jobs"]
    assert len(ws) == 1 and s["warnings"] == len(run.warnings)
    for k in left:
        assert k in ws[0]
    assert "filter the lifecycle by job" in ws[0]
    run.summary()  # asked again: the warning is not repeated
    assert len([w for w in run.warnings if w.code == "figures.many_jobs"]) == 1
    # one job with a job column: every figure, no warning
    one = pau.Run(events=of_job(ev, "a"), lifecycle=of_job(lc, "a"))
    s1 = one.summary()
    assert s1["recovery"] is not None and s1["steps"] is not None and s1["layers"] is not None
    assert not [w for w in one.warnings if w.code == "figures.many_jobs"]


def test_pau_report_of_many_jobs_leaves_the_outcome_figures_out_and_says_so(jobs, tmp_path, capsys):
    """The command line: the ledger's figures are the jobs' own, summed; the figures of one
    job are None in the JSON, and a warning on stderr names them and the fix."""
    import json

    from pau import cli

    _, _, lc, _, _ = jobs
    path = tmp_path / "run"
    pau.Run(lifecycle=lc).write(path)
    assert cli.main(["report", str(path), "--format", "json", "-o", "-", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    got = json.loads(out)
    assert got["ledger"] == pc.ledger(lifecycle=lc).summary()
    for key in ("checkpoint_advice", "straggler_scores", "mpg", "ettr", "program_goodput", "protection"):
        assert got[key] is None, key
    assert "figures.many_jobs" in err and "pau ingest" in err
    assert cli.main(["report", str(path), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "not computed: checkpoint advice, straggler scores" in text and "need step records" not in text
