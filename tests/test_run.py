"""pau.Run and pau.read: every real sample reads into a run, round-trips through
``pau convert`` to an equal run, and gives one set of figures through every path
(``Run.summary()``, ``Ledger.summary()``, ``pau report --format json``, after convert).

Samples are found under the first data root (``tests/shared_data.py``): the full shared
samples when present, else the curated ``tests/data``.
"""

from __future__ import annotations

import json
import os
import pathlib

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from shared_data import locate, roots, shared

import pau
import pau.core as pc
from pau import cli, errors, synth
from pau.engine.types import QUARANTINE_SCHEMA, quarantine_table
from pau.compat import ml_goodput
from pau.readers import kineto as kineto_reader, nsys as nsys_reader, serving as serving_reader
from pau.readers import telemetry as telemetry_reader
from pau.readers.kineto import read_kineto
from pau.run import MultipleRunsError, Run, detect

# Folders that are one run of several files (one file per rank, or a tool's output).
_RUN_FOLDERS = ("kineto/hta-trace_filter", "kineto/param-dlrm-8ranks", "kineto/pytorch-kineto/resnet50_num_workers_0",
                "serving/aiperf_gpt-oss-20b_run1", "serving/llmperf_vllm_yi34b_4xa10g_c16")


def _root() -> pathlib.Path | None:
    return next((r for r in roots() if r.is_dir()), None)


def _samples() -> list[str]:
    """Every file of the data root a reader recognises (plus the multi-file runs)."""
    root = _root()
    if root is None:
        return []
    out = []
    for d, _, files in sorted(os.walk(root)):
        for f in sorted(files):
            p = pathlib.Path(d) / f
            if f.endswith((".md", ".parquet")):
                continue
            try:
                detect(p)
            except (errors.PauError, OSError):
                continue
            out.append(p.relative_to(root).as_posix())
    return out + [f for f in _RUN_FOLDERS if (root / f).exists()]


SAMPLES = _samples()


def _runs(path: pathlib.Path) -> tuple[list[Run], str]:
    """The runs at path, and the on_invalid that reads them: malformed traces (no
    device events, by design of the sample) raise a PauError unless set aside."""
    try:
        return pau.read_runs(path), "raise"
    except errors.PauError as exc:
        assert str(path) in str(exc) or path.name in str(exc)  # the error names the file
        if detect(path) == "mllog":
            raise
        return pau.read_runs(path, on_invalid="quarantine"), "quarantine"


def _conserves(run: Run) -> None:
    if run.events is None and run.lifecycle is None:
        return
    led = run.ledger()
    per = led.table.group_by("rank").aggregate([("duration_ns", "sum")]).to_pylist()
    acc = {r["rank"]: r["accountable_ns"] for r in led.accountable.to_pylist()}
    assert {r["rank"]: r["duration_ns_sum"] for r in per if r["duration_ns_sum"]} == \
        {k: v for k, v in acc.items() if v}


def _report_json(capsys, *args: str) -> dict:
    capsys.readouterr()
    assert cli.main(["report", *args, "--format", "json", "-o", "-", "--no-progress"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.skipif(not SAMPLES, reason="no test data root (tests/data or ../shared/data)")
@pytest.mark.parametrize("rel", SAMPLES)
def test_every_sample_is_one_run_with_one_set_of_figures(rel, tmp_path, capsys):
    path = shared(*rel.split("/"))
    runs, on_invalid = _runs(path)
    assert runs and all(isinstance(r, Run) for r in runs)
    for k, run in enumerate(runs):
        assert run.metadata["format"] in pau.run.FORMATS
        _conserves(run)
        figures = run.summary()
        json.dumps(figures, allow_nan=False)  # every figure is JSON-able, no NaN
        if run.events is not None or run.lifecycle is not None:
            assert figures["ledger"] == run.ledger().summary()  # one function
        if figures["idle_by_cause"] is not None:  # idle by cause sums to each rank's idle exactly
            idle = {r["rank"]: r["activity_ns"].get("idle", 0) for r in figures["per_rank"]}
            assert {r["rank"]: sum(r["ns"].values()) for r in figures["idle_by_cause"]["per_rank"]} == \
                {r: v for r, v in idle.items() if v}
            assert sum(figures["idle_by_cause"]["ns"].values()) == figures["ledger"]["activity_ns"].get("idle", 0)
        # the archive: an equal run, table by table, and the same figures to the ns
        out = run.write(tmp_path / f"run{k}")
        back = pau.read(out)
        assert back == run, rel
        for name in pau.run.TABLES:
            a, b = getattr(run, name), getattr(back, name)
            assert (a is None and b is None) or a.equals(b), name
        assert back.summary() == figures
    if len(runs) == 1:
        flags = ["--on-invalid", "quarantine"] if on_invalid == "quarantine" else []
        via_cli = _report_json(capsys, str(path), *flags)
        summary = json.loads(json.dumps(runs[0].summary()))
        # the report prints the summary, and adds the figures of pau.cli._report_figures (docs/report.md)
        assert {k: via_cli[k] for k in summary} == summary
        assert set(via_cli) - set(summary) <= {"overlap", "checkpoint_advice", "straggler_scores", "mpg", "ettr",
                                               "program_goodput", "protection"}
        converted = tmp_path / "converted"
        assert cli.main(["convert", str(path), str(converted), *flags]) == 0
        assert _report_json(capsys, str(converted)) == via_cli
    else:
        with pytest.raises(MultipleRunsError, match="read_runs"):
            pau.read(path)


def _trace(name: str) -> pathlib.Path:
    return shared("kineto", *name.split("/"))


def test_a_profiler_trace_gets_a_lifecycle_the_ledger_accepts():
    run = pau.read(_trace("hta-trace_filter"))
    assert run.lifecycle is not None and run.spans.num_rows == 2
    # each rank accountable over its profiled window, a completed attempt of it
    acc = run.lifecycle.filter(pa.compute.equal(run.lifecycle["record"], "accountable"))
    assert acc.select(["rank", "start_ns", "end_ns"]).to_pylist() == run.spans.to_pylist()
    assert any("completed attempt" in a for a in run.metadata["assumed"])
    s = run.summary()["ledger"]
    steps = run.lifecycle.filter(pa.compute.equal(run.lifecycle["record"], "step"))
    step_ns = sum(e - b for b, e in zip(steps["start_ns"].to_pylist(), steps["end_ns"].to_pylist()))
    assert s["productive_ns"] == step_ns and s["goodput"] == step_ns / s["accountable_ns"]
    # the activity of the ledger is the events-only classification over the same spans
    led = run.ledger().by("rank", "activity").to_pylist()
    ref = pc.classify(run.events, span=run.spans).to_pylist()
    got = {(r["rank"], r["activity"]): r["duration_ns"] for r in led}
    assert {(r["rank"], r["activity"]): r["duration_ns"] for r in ref if r["duration_ns"]} == got
    # stragglers work on the trace's lifecycle
    assert pc.stragglers(run.lifecycle.filter(pa.compute.equal(run.lifecycle["record"], "step"))).table.num_rows


def test_convert_keeps_the_profiler_span(tmp_path, capsys):
    """A trace converted and reported gives the idle and span of the trace itself."""
    path = _trace("hta-trace_filter")
    assert cli.main(["convert", str(path), str(tmp_path / "out")]) == 0
    ref = pc.classify(pau.readers.kineto.read_kineto(path).events, span=pau.readers.kineto.read_kineto(path).spans())
    idle0 = sum(r["duration_ns"] for r in ref.to_pylist() if r["rank"] == 0 and r["activity"] == "idle")
    s = _report_json(capsys, str(tmp_path / "out"))
    per = pau.read(tmp_path / "out").ledger().table.to_pylist()
    assert sum(r["duration_ns"] for r in per if r["rank"] == 0 and r["activity"] == "idle") == idle0
    assert s["ledger"]["activity_ns"]["idle"] == sum(
        r["duration_ns"] for r in ref.to_pylist() if r["activity"] == "idle")


def test_the_archive_opens_with_plain_tools(tmp_path):
    run = pau.read(_trace("param-dlrm-8ranks"))
    out = pathlib.Path(run.write(tmp_path / "run"))
    doc = json.loads((out / "pau-run.json").read_text())
    assert set(doc["tables"]) == {"events", "lifecycle", "spans", "host"}  # host: the sync calls (idle by cause)
    assert pq.read_table(out / "lifecycle.parquet").num_rows == run.lifecycle.num_rows
    for events in (pq.read_table(out / "events"),
                   ds.dataset(out / "events", format="parquet", partitioning="hive").to_table()):
        assert events.num_rows == run.events.num_rows
        assert sorted(int(r) for r in set(events["rank"].to_pylist())) == list(range(8))
    duckdb = pytest.importorskip("duckdb")
    got = duckdb.sql(f"select rank, count(*) from read_parquet('{out}/events/**/*.parquet') "
                     "group by rank order by rank").fetchall()
    ranks, counts = np.unique(np.asarray(run.events["rank"]), return_counts=True)
    assert got == list(zip(ranks.tolist(), counts.tolist()))


def test_compare_takes_any_two_runs(capsys):
    kineto_a, kineto_b = _trace("hta-trace_filter"), _trace("param-dlrm-8ranks")
    ml = shared("mlperf", "training_v4.0", "ASUSTeK", "results", "ESC8000A-E12-8xH100-PCIE-80GB", "resnet")
    ml_a, ml_b = ml / "result_1.txt", ml / "result_3.txt"
    for a, b in ((kineto_a, kineto_b), (ml_a, ml_b), (ml_a, kineto_a)):
        capsys.readouterr()
        assert cli.main(["compare", str(a), str(b), "--format", "json"]) == 0
        got = json.loads(capsys.readouterr().out)
        ref = pc.compare(pau.read(a), pau.read(b), labels=(str(a), str(b)))
        assert got["metrics"] == json.loads(json.dumps(ref.table.to_pylist()))
        metrics = {r["metric"]: r for r in got["metrics"]}
        assert metrics["goodput"]["a"] == pau.read(a).summary()["ledger"]["goodput"]


def test_report_goodput_of_an_mlperf_log_is_the_ledgers(capsys):
    """Evals inside a block count as eval (DESIGN's precedence), on every path."""
    path = shared("mlperf", "training_v4.0", "Dell", "results", "R760xax4L40S", "bert", "result_0.txt")
    run = pau.read(path)
    s = _report_json(capsys, str(path))
    assert s["ledger"]["goodput"] == run.ledger().summary()["goodput"]
    assert s["ledger"]["state_ns"]["eval"] > 0
    capsys.readouterr()
    assert cli.main(["report", str(path)]) == 0
    assert f"goodput {100 * s['ledger']['goodput']:.1f} %" in capsys.readouterr().out


def _tiny(ranks=(0,)) -> tuple[pa.Table, pa.Table]:
    ev = pa.table({"rank": pa.array([0, 0, 0, 1], pa.int32()), "start_ns": pa.array([10, 50, 200, 0]),
                   "end_ns": pa.array([20, 150, 210, 5]), "kind": ["compute"] * 4})
    n = len(ranks)
    lc = pa.table({"record": ["accountable"] * n + ["attempt", "step"],
                   "attempt": pa.array([None] * n + [0, 0], pa.int32()),
                   "rank": pa.array(list(ranks) + [-1, -1], pa.int32()),
                   "start_ns": pa.array([0] * n + [0, 0]), "end_ns": pa.array([100] * n + [100, 80]),
                   "step": pa.array([None] * n + [None, 1]), "kind": [None] * n + ["completed", None]})
    return ev, lc


def test_events_outside_accountable_time_are_counted_and_shown(tmp_path, capsys):
    ev, lc = _tiny()
    run = Run(events=ev, lifecycle=lc)
    out = run.summary()["events_outside_accountable"]
    # [50,150) has 50 ns past the accountable [0,100); [200,210) 10; rank 1 has none: 5
    assert out == {"events": 3, "ns": 65, "ranks": [0, 1]}
    assert run.ledger().summary()["activity_ns"]["compute"] == 10 + 50
    run.write(tmp_path / "r")
    capsys.readouterr()
    assert cli.main(["report", str(tmp_path / "r")]) == 0
    got = capsys.readouterr()
    assert "3 events (65 ns) lie outside the accountable time of ranks 0, 1" in got.out
    assert "outside the accountable time" in got.err


def test_a_lifecycle_whose_ranks_do_not_match_is_refused(tmp_path, capsys):
    ev, lc = _tiny()
    synth.write_parquet(ev, tmp_path / "ev.parquet")
    pq.write_table(lc, tmp_path / "lc.parquet")
    assert cli.main(["report", str(tmp_path / "ev.parquet"), "--lifecycle", str(tmp_path / "lc.parquet")]) == 1
    err = capsys.readouterr().err
    assert "ranks 1 have events but no record in the lifecycle" in err and "names ranks 0" in err
    _, lc2 = _tiny(ranks=(0, 1))
    pq.write_table(lc2, tmp_path / "lc2.parquet")
    assert cli.main(["report", str(tmp_path / "ev.parquet"), "--lifecycle", str(tmp_path / "lc2.parquet"),
                     "--format", "json"]) == 0


def test_options_that_do_not_apply_are_errors(tmp_path, capsys):
    trace = _trace("hta-trace_filter")
    nsys = shared("nsys", "icon_isc25", "gpu.sqlite")  # no steps: no lifecycle
    cases = [
        ["report", str(trace), "--steps", "3"],
        ["report", str(nsys), "--price", "2"],
        ["report", str(nsys), "--as-of", "5"],
        ["report", "--power", "p.parquet", "--steps", "5"],
        ["report", "--lifecycle", "x.parquet"],
    ]
    for argv in cases:
        capsys.readouterr()
        assert cli.main(argv) == 2, argv
        assert capsys.readouterr().err.startswith("pau: "), argv
    with pytest.raises(errors.OptionError, match="does not apply to mllog"):
        pau.read(shared("mlperf", "training_v4.0", "Dell", "results", "R760xax4L40S", "bert", "result_0.txt"),
                 rules=None)


def test_write_refuses_a_file_name_and_a_full_folder(tmp_path):
    run = pau.read(_trace("param-dlrm-8ranks"))
    with pytest.raises(errors.PauError, match="a run is written as a folder"):
        run.write(tmp_path / "x.parquet")
    run.write(tmp_path / "r")
    with pytest.raises(errors.PauError, match="overwrite=True"):
        run.write(tmp_path / "r")
    run.write(tmp_path / "r", overwrite=True)
    assert pau.read(tmp_path / "r") == run


def test_reader_warnings_reach_stderr_and_stay_on_the_run(capsys):
    path = _trace("pytorch-kineto/resnet50_num_workers_0")
    run = pau.read(path)
    assert run.warnings and all(w.code and w.message for w in run.warnings)
    assert {w.code for w in run.warnings} == {"kineto.rank_assigned"}  # a code per kind of warning
    assert all(isinstance(w, str) for w in pau.readers.kineto.read_kineto(path).warnings)  # the readers' str warnings
    capsys.readouterr()
    assert cli.main(["report", str(path), "--no-progress"]) == 0
    err = capsys.readouterr().err
    for w in run.warnings:
        assert f"pau: warning: {w.code}: {w.message}" in err


def test_gates_exit_3_when_a_figure_fails(capsys):
    base = ["report", "--steps", "40", "--format", "json", "-o", os.devnull]
    assert cli.main(base + ["--gate", "ledger.goodput>=0.1"]) == 0
    assert cli.main(base + ["--gate", "goodput>=0.99"]) == 3
    assert "gate failed: goodput>=0.99" in capsys.readouterr().err
    assert cli.main(base + ["--gate", "nonsense"]) == 2


def test_formats_agree(capsys, tmp_path):
    """text, json and csv of one report carry the same figures."""
    js = _report_json(capsys, "--steps", "40")
    assert cli.main(["report", "--steps", "40", "--format", "csv", "-o", str(tmp_path / "r.csv")]) == 0
    rows = dict(line.split(",", 1) for line in (tmp_path / "r.csv").read_text().splitlines()[1:])
    assert float(rows['"ledger.goodput"'].strip('"')) == js["ledger"]["goodput"]
    assert int(rows['"ledger.accountable_ns"'].strip('"')) == js["ledger"]["accountable_ns"]
    capsys.readouterr()
    assert cli.main(["report", "--steps", "40"]) == 0
    assert f"goodput {100 * js['ledger']['goodput']:.1f} %" in capsys.readouterr().out


def test_readme_example_runs_as_written(monkeypatch):
    readme = pathlib.Path(__file__).resolve().parents[1] / "README.md"
    text = readme.read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(readme.parent)
    if locate("kineto", "hta-trace_filter") is None:
        pytest.skip("the README's sample trace is not here")
    exec(compile(code, str(readme), "exec"), {})


def test_a_run_without_events_or_lifecycle_has_no_ledger():
    run = pau.read(shared("serving", "aiperf_gpt-oss-20b_run1"))
    with pytest.raises(errors.PauError, match="neither events nor a lifecycle"):
        run.ledger()
    s = run.summary()
    assert s["ledger"] is None and s["requests"]["offered"] == 100
    assert s["requests"]["cancelled"] == 11


def test_run_tables_are_arrow_and_equality_is_strict():
    run = pau.read(_trace("param-dlrm-8ranks"))
    other = Run(events=run.events.slice(1), lifecycle=run.lifecycle, spans=run.spans, metadata=run.metadata)
    assert other != run
    same = Run(events={c: np.asarray(run.events[c]) for c in ("rank", "start_ns")})
    assert isinstance(same.events, pa.Table)


def test_priority_is_one_word_and_rules_its_design_name():
    job = synth.training_job(ranks=2, steps=20, seed=2, mtbf_s=30, checkpoint_every=5)
    prio = ("communication", "compute", "memcpy", "memset", "sync", "other")
    a = pc.ledger(job.events, job.lifecycle, priority=prio)
    assert a.table.equals(pc.ledger(job.events, job.lifecycle, rules=prio).table)
    assert a.table.equals(Run(events=job.events, lifecycle=job.lifecycle).ledger(priority=prio).table)
    assert not a.table.equals(pc.ledger(job.events, job.lifecycle).table)  # the priority matters
    with pytest.raises(errors.PauError, match="give one"):
        pc.ledger(job.events, job.lifecycle, priority=prio, rules=prio)


class _Intervals:
    """A stand-in for a ledger: only ``intervals`` (what outside_accountable reads)."""

    def __init__(self, rows):
        self.intervals = pa.table({"rank": pa.array([r[0] for r in rows], pa.int32()),
                                   "start_ns": pa.array([r[1] for r in rows], pa.int64()),
                                   "end_ns": pa.array([r[2] for r in rows], pa.int64())})


def _outside_by_ns(events, intervals):
    """The slow twin: per event, the ns of it in no interval of its rank, one ns at a
    time; a zero-length event is outside when no interval holds its instant."""
    n_events, n_ns, ranks = 0, 0, set()
    for r, s, e in events:
        mine = [(a, b) for rr, a, b in intervals if rr == r]
        inside = lambda t: any(a <= t < b for a, b in mine)  # noqa: E731
        out = sum(1 for t in range(s, e) if not inside(t)) if e > s else (0 if inside(s) else None)
        if out is None or out > 0:
            n_events += 1
            n_ns += out or 0
            ranks.add(r)
    return {"events": n_events, "ns": n_ns, "ranks": sorted(ranks)}


from depth import examples
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as hst  # noqa: E402


@settings(max_examples=examples(300), deadline=None)
@given(events=hst.lists(hst.tuples(hst.integers(0, 3), hst.integers(0, 50), hst.integers(0, 12)), max_size=12),
       cuts=hst.lists(hst.tuples(hst.integers(0, 2), hst.integers(0, 50), hst.integers(0, 10)), max_size=8))
def test_events_outside_accountable_match_a_count_by_ns(events, cuts):
    # disjoint, touching or apart intervals per rank, from (rank, start, length)
    intervals, last = [], {}
    for r, s, n in sorted(cuts):
        s = max(s, last.get(r, 0))
        intervals.append((r, s, s + n))
        last[r] = s + n
    ev_rows = [(r, s, s + n) for r, s, n in events]
    ev = pa.table({"rank": pa.array([e[0] for e in ev_rows], pa.int32()),
                   "start_ns": pa.array([e[1] for e in ev_rows], pa.int64()),
                   "end_ns": pa.array([e[2] for e in ev_rows], pa.int64())})
    got = pau.run.outside_accountable(ev, _Intervals(intervals))
    assert got == _outside_by_ns(ev_rows, intervals)


def test_overwrite_replaces_a_run_never_another_folder(tmp_path):
    run = pau.read(_trace("param-dlrm-8ranks"))
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(errors.PauError, match="not a pau run"):
        run.write(other, overwrite=True)
    assert (other / "keep.txt").read_text() == "mine"


def test_report_slos_are_the_request_ledgers(capsys):
    path = shared("serving", "aiperf_gpt-oss-20b_run1")
    run = pau.read(path)
    got = _report_json(capsys, str(path), "--slo", "ttft=3.5", "--slo", "e2e=10")
    want = pc.requests(run.requests, slo={"ttft": 3_500_000_000, "e2e": 10_000_000_000}).summary()
    assert got["requests"] == json.loads(json.dumps(want))
    assert got["slo_ns"] == {"ttft": 3_500_000_000, "e2e": 10_000_000_000}
    assert 0 < want["accepted"] < 89  # the SLOs bite: some completed requests are late
    assert cli.main(["report", str(path), "--slo", "ttft=-1"]) == 2
    assert cli.main(["report", "--slo", "ttft=1"]) == 2  # the built-in run has no requests


def test_quarantine_comes_back_one_way_from_every_reader(tmp_path):
    """Whatever a reader sets aside reaches run.quarantine as source_file, location,
    reason (then the reader's own columns), is counted, and survives the archive."""
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 7, "ts": 1.0, "dur": 2.0,
         "args": {"device": 0, "stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "bad", "pid": 1, "tid": 7, "ts": 3.0,
         "args": {"device": 0, "stream": 7}}]}))
    real = shared("serving", "aiperf_gpt-oss-20b_run1", "profile_export.jsonl").read_text()
    serving = tmp_path / "profile_export.jsonl"
    serving.write_text(real.rstrip("\n") + "\n" + json.dumps({"metadata": {"x": 1}}) + "\n")
    lines = real.rstrip("\n").count("\n") + 1
    with pytest.raises(errors.PauError):
        pau.read(trace)
    kineto = pau.read(trace, on_invalid="quarantine")
    q = kineto.quarantine.to_pylist()
    assert [(r["location"], r["reason"], r["name"]) for r in q] == [("line 1, offset 139", 'missing "dur"', "bad")]
    nodevice = pau.read(shared("kineto", "hta-rank_non_gpu"), on_invalid="quarantine")
    assert [(r["location"], r["reason"]) for r in nodevice.quarantine.to_pylist()] == [("file", "no device events")]
    requests = pau.read(serving, on_invalid="quarantine")
    assert [(r["location"], r["source_file"]) for r in requests.quarantine.to_pylist()] == [
        (f"line {lines + 1}", str(serving))]
    assert requests.requests.num_rows == lines
    # the run keeps each reader's table as it is: the common three, then the reader's columns
    assert kineto.quarantine.equals(read_kineto(trace, on_invalid="quarantine").quarantine)
    assert requests.quarantine.to_pylist() == [{"source_file": str(serving), "location": f"line {lines + 1}",
                                                "reason": requests.quarantine["reason"][0].as_py(),
                                                "record": f"line {lines + 1}"}]
    # two readers' rows on one run: each keeps its columns, null in the other's rows
    smi = tmp_path / "smi.csv"
    smi.write_text("timestamp, index, power.draw [W]\n2025/01/01 00:00:00.000, 0, 5 W\n"
                   "2025/01/01 00:00:01.000, 0, -1 W\n")
    both = pau.run.attach_samples(pau.read(trace, on_invalid="quarantine"), smi, on_invalid="quarantine")
    rows = both.quarantine.to_pylist()
    assert [(r["source_file"], r["location"], r["name"]) for r in rows] == [
        (str(trace), "line 1, offset 139", "bad"), (str(smi), "line 3", None)]
    assert rows[1]["reason"].startswith("column power.draw: power_w is -1.0, below 0 W")
    for run in (kineto, nodevice, requests, both):
        assert run.quarantine.column_names[:3] == ["source_file", "location", "reason"]
        assert run.summary()["quarantined"] == run.quarantine.num_rows
        back = pau.read(run.write(tmp_path / f"r{id(run)}"))
        assert back == run and back.quarantine.equals(run.quarantine)


def test_every_readers_quarantine_begins_with_the_common_three():
    """One layout (pau.engine.types.QUARANTINE_SCHEMA), then each reader's own typed columns;
    the tables a reader returns are of its schema, empty or not."""
    common = [("source_file", pa.string()), ("location", pa.string()), ("reason", pa.string())]
    assert [(f.name, f.type) for f in QUARANTINE_SCHEMA] == common
    own = {kineto_reader.QUARANTINE_SCHEMA: [("offset", pa.int64()), ("line", pa.int64()),
                                             ("category", pa.string()), ("name", pa.string())],
           nsys_reader.QUARANTINE_SCHEMA: [("table", pa.string()), ("rowid", pa.int64())],
           serving_reader.QUARANTINE_SCHEMA: [("record", pa.string())],
           telemetry_reader.QUARANTINE_SCHEMA: [],
           ml_goodput.QUARANTINE_SCHEMA: [("row", pa.int64()), ("key", pa.string()), ("entry", pa.string())]}
    for schema, extra in own.items():
        assert [(f.name, f.type) for f in schema] == common + extra
    assert kineto_reader.KinetoTrace(*(pa.table({}),) * 3).quarantine.schema == kineto_reader.QUARANTINE_SCHEMA
    assert nsys_reader.NsysTrace(*(pa.table({}),) * 4).quarantine.schema == nsys_reader.QUARANTINE_SCHEMA
    assert serving_reader.ServingResults(pa.table({}), "vllm").quarantine.schema == serving_reader.QUARANTINE_SCHEMA
    assert telemetry_reader.Telemetry(*(pa.table({}),) * 2, "nvidia_smi", []).quarantine.schema == QUARANTINE_SCHEMA
    assert ml_goodput.read_entries([{"mystery": 1}], on_invalid="quarantine").quarantine.schema == \
        ml_goodput.QUARANTINE_SCHEMA
    # a schema that does not begin with the three is refused where tables are built
    with pytest.raises(errors.PauError, match="must begin with source_file, location, reason"):
        quarantine_table(pa.schema([("row", pa.int64())]), None, [], [])
    with pytest.raises(errors.PauError, match="one value per row"):
        quarantine_table(QUARANTINE_SCHEMA, "f", ["line 1"], [])


def test_the_engines_quarantine_is_the_input_rows_with_row_and_reason(tmp_path):
    """classify/ledger/attribute set aside rows of a table the caller holds: its own
    columns, then ``row`` and ``reason`` (docs/bad-input.md), not the readers' layout."""
    events = pa.table({"rank": pa.array([0, 0], pa.int32()), "start_ns": pa.array([0, 9], pa.int64()),
                       "end_ns": pa.array([5, 3], pa.int64()), "kind": ["compute", "compute"]})
    want = [{"rank": 0, "start_ns": 9, "end_ns": 3, "kind": "compute", "row": 1, "reason": "end_ns before start_ns"}]
    assert pc.classify(events, on_invalid="quarantine").quarantine.to_pylist() == want
    assert pc.ledger(events, on_invalid="quarantine").quarantine.to_pylist() == want
    # read into a run, the same rows take the readers' layout: the file, the place, the reason first
    pq.write_table(events, tmp_path / "e.parquet")
    run = pau.read(tmp_path / "e.parquet", on_invalid="quarantine")
    assert run.quarantine.to_pylist() == [{"source_file": str(tmp_path / "e.parquet"), "location": "events row 1",
                                           "reason": "end_ns before start_ns", "rank": 0, "start_ns": 9, "end_ns": 3,
                                           "kind": "compute"}]


def _two_jobs_run(job_type=pa.string()) -> Run:
    """Two synthetic jobs on the same ranks and times, each its own lineage (a ``job`` column)."""
    jobs = [synth.training_job(ranks=2, steps=20, seed=s, mtbf_s=600, checkpoint_every=5, step_time_s=60,
                               kernels_per_step=3, buckets=1) for s in (1, 2)]

    def named(t: pa.Table, name) -> pa.Table:
        return t.append_column("job", pa.array([name] * t.num_rows, pa.string()).cast(job_type))

    # one chunk: one dictionary (Arrow's equality compares a dictionary column's chunks' dictionaries)
    return Run(events=pa.concat_tables([named(j.events, n) for j, n in zip(jobs, ("A", None))]).combine_chunks(),
               lifecycle=pa.concat_tables([named(j.lifecycle, n) for j, n in zip(jobs, ("A", None))]).combine_chunks(),
               metadata={"format": "pau"})


@pytest.mark.parametrize("job_type", [pa.string(), pa.dictionary(pa.int32(), pa.string())])
def test_a_run_of_many_jobs_writes_and_reads_back_equal(tmp_path, job_type):
    """Events and lifecycle with a ``job`` column go through the run layout: the column and
    its type are kept, the run reads back equal and so do its figures; each job's figures
    are its own (the summed ledger is the two jobs' ledgers side by side)."""
    run = _two_jobs_run(job_type)
    out = run.write(tmp_path / "run")
    assert os.path.isfile(os.path.join(out, "events.parquet"))  # one file: no job=run folder to contradict it
    back = pau.read(out)
    assert back.events.schema.field("job").type == job_type
    assert back == run
    want = run.summary()
    assert back.summary() == want
    alone = [pc.ledger(t.filter(m).drop_columns(["job"]), lc.filter(m2).drop_columns(["job"])).summary()
             for t, lc, m, m2 in [(run.events, run.lifecycle, pa.compute.equal(run.events["job"].cast(pa.string()), "A"),
                                   pa.compute.equal(run.lifecycle["job"].cast(pa.string()), "A")),
                                  (run.events, run.lifecycle, pa.compute.is_null(run.events["job"]),
                                   pa.compute.is_null(run.lifecycle["job"]))]]
    assert want["ledger"]["productive_ns"] == sum(s["productive_ns"] for s in alone) > 0
    assert want["ledger"]["accountable_ns"] == sum(s["accountable_ns"] for s in alone)


def test_run_figures_of_some_keys_are_those_of_all():
    """``keys=`` computes the figures named (a fleet ingest's runs table), each equal to the
    full summary's, and leaves the others None."""
    run = pau.read(_trace("param-dlrm-8ranks"))
    full = pau.run.run_figures(run)
    keys = {"ledger", "recovery", "events_outside_accountable"}
    some = pau.run.run_figures(run, keys=keys)
    assert list(some) == list(full)
    always = {"format", "tables", "nvtx", "slo_ns", "warnings", "quarantined"}
    for k, v in some.items():
        assert v == (full[k] if k in keys | always else None), k
    assert full["top_kernels"] and full["idle_by_cause"] and full["ledger"]  # the others were there to leave out
