"""``as_of`` on every kind of run (issue 38, item 4): a profiler trace, a lifecycle
alone, a trace with its lifecycle and failures, a serving run; an instant before,
inside and after the records; in the API (``run.summary(as_of=...)``) and the CLI
(``pau report ... --as-of``), which must give the same figures.

What ``as_of`` means (docs/lifecycle.md): time after it is not accountable, progress
not yet preserved at it is ``pending``. So the accountable time as of ``t`` is the
accountable time of the whole run cut at ``t``; before the first record nothing is
accountable (the shares are None, never a made-up zero); after the last record the
ledger is the whole run's.
"""

from __future__ import annotations

import json

import pyarrow.compute as pac
import pytest
from shared_data import shared

import pau
from pau import cli, errors, synth

MLPERF = ("mlperf", "training_v4.0", "ASUSTeK", "results", "ESC8000A-E12-8xH100-PCIE-80GB", "resnet", "result_1.txt")


def _kineto(tmp_path):
    return shared("kineto", "hta-trace_filter")


def _mlperf(tmp_path):
    return shared(*MLPERF)


def _training_job(tmp_path):
    """Events and a lifecycle with failures, restores and checkpoints, as pau's layout."""
    job = synth.training_job(ranks=2, steps=60, mtbf_s=60, checkpoint_every=10, seed=3)
    assert pac.sum(pac.equal(job.lifecycle["record"], "failure")).as_py() > 0  # failures to roll back
    return pau.Run(events=job.events, lifecycle=job.lifecycle).write(tmp_path / "job")


def _lifecycle_only(tmp_path):
    job = synth.training_job(ranks=3, steps=40, mtbf_s=120, checkpoint_every=8, seed=5)
    return pau.Run(lifecycle=job.lifecycle).write(tmp_path / "life")


def _serving(tmp_path):
    return shared("serving", "aiperf_gpt-oss-20b_run1")


KINDS = {"kineto": _kineto, "mlperf": _mlperf, "training_job": _training_job, "lifecycle_only": _lifecycle_only,
         "serving": _serving}
WHEN = ("before", "inside", "after")


def _extent(run: pau.Run) -> tuple[int, int]:
    """First and last instant of the run's records (lifecycle and events)."""
    lo, hi = [], []
    for t in (run.lifecycle, run.events):
        if t is None:
            continue
        lo.append(pac.min(t["start_ns"]).as_py())
        hi.append(max(pac.max(t["start_ns"]).as_py(), pac.max(t["end_ns"]).as_py() or 0))
    if run.requests is not None:
        lo.append(pac.min(run.requests["arrival_ns"]).as_py())
        hi.append(pac.max(run.requests["end_ns"]).as_py())
    return min(lo), max(hi)


def _instant(run: pau.Run, when: str) -> int:
    lo, hi = _extent(run)
    return {"before": lo - 1, "inside": lo + (hi - lo) // 2, "after": hi + 1}[when]


def _clipped(intervals, t: int) -> dict[int, int]:
    """Per rank, the time of ``intervals`` before ``t``."""
    out: dict[int, int] = {}
    for r in intervals.select(["rank", "start_ns", "end_ns"]).to_pylist():
        out[r["rank"]] = out.get(r["rank"], 0) + max(0, min(r["end_ns"], t) - r["start_ns"])
    return out


def _report_json(capsys, path, t: int) -> dict:
    capsys.readouterr()
    assert cli.main(["report", str(path), "--as-of", str(t), "--format", "json", "-o", "-", "--no-progress"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("when", WHEN)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_as_of_on_every_kind_of_run(kind, when, tmp_path, capsys):
    path = KINDS[kind](tmp_path)
    run = pau.read(path)
    t = _instant(run, when)
    if kind == "serving":
        _refused(run, path, t, capsys)
        return
    assert run.lifecycle is not None
    s = run.summary(as_of=t)
    led = run.ledger(as_of=t)
    whole = run.ledger()
    figures = s["ledger"]
    assert figures == led.summary()  # one function
    assert figures["as_of"] == t
    # time conserves: the states sum to accountable time, rank by rank the cells too
    assert sum(figures["state_ns"].values()) == figures["accountable_ns"]
    per_rank = {r["rank"]: sum(r["activity_ns"].values()) for r in s["per_rank"]}
    acc = {r["rank"]: r["accountable_ns"] for r in led.accountable.to_pylist()}
    assert {k: v for k, v in per_rank.items() if v} == {k: v for k, v in acc.items() if v}
    # accountable time ends at as_of: it is the whole run's, cut at t
    assert led.intervals.num_rows == 0 or pac.max(led.intervals["end_ns"]).as_py() <= t
    expect = _clipped(whole.intervals, t)
    assert {k: v for k, v in acc.items() if v} == {k: v for k, v in expect.items() if v}
    assert figures["accountable_ns"] == sum(expect.values())
    if when == "before":
        assert figures["accountable_ns"] == 0
        assert figures["goodput"] is None  # no share of nothing, not a zero
        assert s["layers"]["product"] is None
        assert s["layers"]["layers"][0]["ns"] == 0
    elif when == "inside":
        assert 0 < figures["accountable_ns"] < whole.summary()["accountable_ns"]
        assert s["layers"]["product"] is not None
    else:  # after the last record: the whole run's ledger
        full = whole.summary()
        for key in ("accountable_ns", "state_ns", "activity_ns", "goodput", "preserved_steps"):
            assert figures[key] == full[key], key
    if s["idle_by_cause"] is not None:  # idle by cause sums to the ledger's idle, as of t too
        assert sum(s["idle_by_cause"]["ns"].values()) == figures["activity_ns"].get("idle", 0)
    if s["events_outside_accountable"] is not None and when == "before":
        busy = pac.sum(pac.greater(pac.subtract(run.events["end_ns"], run.events["start_ns"]), 0)).as_py()
        assert s["events_outside_accountable"]["events"] == busy  # every event is after as_of
    # the CLI's JSON path gives the API's figures; its text path prints them
    report, expect = _report_json(capsys, path, t), json.loads(json.dumps(s))
    # the report holds every figure of the summary as it is (and the report-only figures beside them)
    assert {k: report.get(k) for k in expect} == expect
    assert cli.main(["report", str(path), "--as-of", str(t), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert ("nothing is accountable as of" in text) == (when == "before")
    assert "no lifecycle" not in text
    if when != "before":
        assert f"goodput {100 * figures['goodput']:.1f} %" in text


def _refused(run, path, t: int, capsys) -> None:
    """Requests have no lifecycle: there is no progress to cut at an instant. The API
    refuses saying why (it used to ignore as_of and answer for the whole run), as the
    CLI does."""
    assert run.lifecycle is None and run.requests is not None
    with pytest.raises(errors.OptionError, match="as_of.*lifecycle.*requests"):
        run.summary(as_of=t)
    capsys.readouterr()
    assert cli.main(["report", str(path), "--as-of", str(t), "--format", "json", "-o", "-", "--no-progress"]) == 2
    assert "--as-of applies to a lifecycle" in capsys.readouterr().err
    assert run.summary()["requests"] is not None  # without as_of, its figures


def test_as_of_on_events_alone_is_refused():
    job = synth.training_job(ranks=2, steps=10, seed=1)
    run = pau.Run(events=job.events)
    with pytest.raises(errors.OptionError, match="as_of"):
        run.summary(as_of=int(pac.min(job.events["start_ns"]).as_py()))
