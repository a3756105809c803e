"""`pau report`: the main job."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pau
import pau.core as pc
from pau.engine import _format
from pau import cli, synth


def _cells(line: str) -> list[str]:
    """The cells of a table line (columns are at least two spaces apart)."""
    return [c for c in re.split(r"\s{2,}", line.strip()) if c]


def _fig(v) -> str:
    """A comparison figure as pau compare prints it."""
    return "-" if v is None else f"{v:,.6g}" if isinstance(v, float) else f"{v:,}"


def _rows(out: str) -> dict:
    """rank -> the printed cells of that row."""
    rows = {}
    for line in out.splitlines():
        cells = line.split()
        if cells and (cells[0].isdigit() or cells[0] == "total"):
            rows.setdefault(cells[0], cells)  # the activity table comes first
    return rows


def test_builtin_run_prints_eight_ranks_and_totals(capsys):
    assert cli.main(["report", "--no-progress"]) == 0
    out = capsys.readouterr().out
    rows = _rows(out)
    assert sorted(k for k in rows if k != "total") == [str(r) for r in range(8)]
    assert "total" in rows
    # Every row's percentages sum to 100 (within print rounding).
    for cells in rows.values():
        pcts = [float(c.rstrip("%")) for c in cells if c.endswith("%")]
        assert len(pcts) == 6 and abs(sum(pcts) - 100.0) < 0.3
    # every activity that occurs has its column (sync and other as themselves, never folded)
    head = next(line.split() for line in out.splitlines() if line.split()[:1] == ["rank"])
    assert head == ["rank", "compute", "exposed", "comm", "memcpy", "sync", "other", "idle", "span"]
    # The straggler (rank 3) computes more and waits less in collectives.
    comp = {r: float(rows[r][1]) for r in rows if r != "total"}
    assert max(comp, key=comp.get) == "3"


def test_report_numbers_match_classify(tmp_path, capsys):
    events = synth.training_run(ranks=2, steps=20, seed=4)
    path = tmp_path / "ev.parquet"
    synth.write_parquet(events, path)
    assert cli.main(["report", str(path), "--no-progress"]) == 0
    rows = _rows(capsys.readouterr().out)
    t = pc.classify(events).to_pylist()
    compute0 = sum(r["duration_ns"] for r in t if r["rank"] == 0 and r["activity"] == "compute")
    size = {"ns": 1, "µs": 10**3, "ms": 10**6, "s": 10**9, "min": 60 * 10**9, "h": 3600 * 10**9}[rows["0"][2]]
    assert rows["0"][1] == f"{compute0 / size:,.3f}"


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_out_writes_the_ledger(tmp_path, capsys, fmt):
    out = tmp_path / f"ledger.{fmt}"
    assert cli.main(["report", "--steps", "20", "--no-progress", "--ledger", str(out)]) == 0
    job = synth.training_job(ranks=8, steps=20, seed=0, mtbf_s=150.0, checkpoint_every=50,
                             kernels_per_step=24, straggler=(3, 1.25))
    led = pc.ledger(job.events, job.lifecycle)
    if fmt == "json":
        rows = json.loads(out.read_text())
        assert len(rows) == led.table.num_rows
        assert sum(r["duration_ns"] for r in rows) == led.accountable_ns()
    elif fmt == "parquet":
        t = pq.read_table(out)
        assert t.column_names == ["rank", "state", "activity", "duration_ns"]
        assert sum(t["duration_ns"].to_pylist()) == led.accountable_ns()
    else:
        lines = out.read_text().splitlines()
        assert lines[0] == '"rank","state","activity","duration_ns"'
        assert len(lines) == led.table.num_rows + 1


def test_builtin_run_shows_goodput_and_waste_by_cause(capsys):
    assert cli.main(["report", "--no-progress"]) == 0
    out = capsys.readouterr().out
    job = synth.training_job(ranks=8, steps=400, seed=0, mtbf_s=150.0, checkpoint_every=50,
                             kernels_per_step=24, straggler=(3, 1.25))
    s = pc.ledger(job.events, job.lifecycle).summary()
    assert f"goodput {100 * s['goodput']:.1f} %" in out
    assert "rolled-back work by cause:" in out
    for cause in s["badput_by_cause_ns"]:
        assert cause in out
    assert f"failures {s['failures']}," in out


def test_lifecycle_option_reads_parquet(tmp_path, capsys):
    job = synth.training_job(ranks=2, steps=30, seed=2, mtbf_s=20.0, checkpoint_every=10,
                             kernels_per_step=8)
    ev, lc = tmp_path / "ev.parquet", tmp_path / "lc.parquet"
    synth.write_parquet(job.events, ev)
    pq.write_table(job.lifecycle, lc)
    assert cli.main(["report", str(ev), "--lifecycle", str(lc), "--no-progress"]) == 0
    out = capsys.readouterr().out
    g = pc.ledger(job.events, job.lifecycle).summary()["goodput"]
    assert f"goodput {100 * g:.1f} %" in out


def test_missing_path_is_an_error_not_a_zero(tmp_path, capsys):
    assert cli.main(["report", str(tmp_path / "nope.parquet"), "--no-progress"]) == 1
    assert "nope.parquet" in capsys.readouterr().err


def test_console_script_runs():
    res = subprocess.run([sys.executable, "-m", "pau.cli", "report", "--steps", "5", "--no-progress"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "total" in res.stdout


from shared_data import shared  # noqa: E402


def test_report_detects_kineto_and_matches_the_reader(capsys):
    path = shared("kineto", "hta-trace_filter")
    assert cli.main(["report", str(path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "(kineto)" in out
    from pau.readers.kineto import read_kineto

    tr = read_kineto(path)
    t = pc.classify(tr.events, span=tr.spans()).to_pylist()
    idle0 = sum(r["duration_ns"] for r in t if r["rank"] == 0 and r["activity"] == "idle")
    cells = _rows(out)["0"]   # ... idle, its unit, its share, span, its unit: one unit per column
    size = {"ns": 1, "µs": 10**3, "ms": 10**6, "s": 10**9, "min": 60 * 10**9, "h": 3600 * 10**9}[cells[-4]]
    assert f"{idle0 / size:,.3f}" == cells[-5]


RUNS_HEAD = ["source", "benchmark", "status", "accelerators", "reached", "time to train", "accountable", "goodput"]


def test_report_on_mlperf_results_lists_runs(capsys):
    path = str(shared("mlperf", "training_v4.0", "NVIDIA"))
    assert cli.main(["report", path]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "(mllog)" in lines[0] and _cells(lines[2]) == RUNS_HEAD
    runs = pau.read_runs(path)
    rows = [dict(zip(RUNS_HEAD, _cells(line))) for line in lines[4:4 + len(runs)]]
    for run, row in zip(runs, rows):  # every figure from the run's own summary
        m, led = run.metadata, run.summary()["ledger"]
        ev = m.get("eval") or {}
        assert row["source"] == os.path.relpath(m["sources"][0], path)
        assert row["status"] == m["status"] and row["accelerators"] == str(m["accelerators"])
        assert row["reached"] == {True: "yes", False: "no", None: "-"}[ev.get("reached")]
        # one unit per column: the value in the column's unit, to its decimals
        assert (row["time to train"] == "-") == (m.get("time_to_train_ns") is None)
        if m.get("time_to_train_ns") is not None:
            assert _close(row["time to train"], m["time_to_train_ns"])
        assert _close(row["accountable"], led["accountable_ns"])
        assert row["goodput"] == f"{100 * led['goodput']:.1f}%"
    assert any(r["status"] == "aborted" for r in rows)
    for col in ("time to train", "accountable"):
        assert len({r[col].split()[-1] for r in rows if r[col] != "-"}) == 1, col


def test_mlperf_folder_table_by_hand(capsys):
    """ASUSTeK's two ResNet runs: result_1 reached 0.7602 >= 0.759 in 1,245.238 s
    (20.754 min); result_3 stopped at 0.75838 (aborted): not reached, goodput 0."""
    path = str(shared("mlperf", "training_v4.0", "ASUSTeK"))
    assert cli.main(["report", path, "-q"]) == 0
    rows = {r[0]: r for r in (_cells(line) for line in capsys.readouterr().out.splitlines()) if r[:1]
            and r[0].endswith(".txt")}
    r1 = rows[os.path.join("results", "ESC8000A-E12-8xH100-PCIE-80GB", "resnet", "result_1.txt")]
    r3 = rows[os.path.join("results", "ESC8000A-E12-8xH100-PCIE-80GB", "resnet", "result_3.txt")]
    assert r1[1:6] == ["resnet", "success", "8", "yes", "20.754 min"]
    assert r3[1:5] == ["resnet", "aborted", "8", "no"] and r3[-1] == "0.0%"


def test_convert_then_report_gives_the_same_ledger(tmp_path, capsys):
    path = shared("nsys", "icon_isc25", "gpu.sqlite")
    assert cli.main(["convert", str(path), str(tmp_path / "out")]) == 0
    conv = pc.classify_dataset(str(tmp_path / "out" / "events"))
    from pau.readers.nsys import read_nsys

    ref = pc.classify(read_nsys(path).events)
    assert conv.select(["rank", "activity", "duration_ns"]).to_pylist() == ref.to_pylist()


def test_price_adds_cost_per_useful_output(capsys):
    assert cli.main(["report", "--steps", "60", "--price", "3", "--no-progress"]) == 0
    out = capsys.readouterr().out
    job = synth.training_job(ranks=8, steps=60, seed=0, mtbf_s=150.0, checkpoint_every=50,
                             kernels_per_step=24, straggler=(3, 1.25))
    c = pc.cost(pc.ledger(job.events, job.lifecycle), {"per_accelerator_hour": 3.0})
    # accountable hours x $3, as printed
    assert f"total ${c['total_cost']:,.2f}" in out
    # below a dime, two significant digits ($0.014, not a $0.01 that hides a third of it)
    [step] = re.findall(r"\$([0-9.,]+) per preserved step", out)
    assert float(step) == pytest.approx(c["cost_per_preserved_step"], rel=0.05) and len(step.lstrip("0.")) == 2


_UNIT_NS = {"ns": 1, "µs": 10**3, "ms": 10**6, "s": 10**9, "min": 60 * 10**9, "h": 3600 * 10**9}


def _read_cell(cell: str) -> float | None:
    """A printed figure back as a number: durations in ns, shares and points as
    fractions, money and counts as they are; ``-`` as None."""
    if cell == "-":
        return None
    num, _, u = cell.replace("$", "").replace(",", "").partition(" ")
    if u in _UNIT_NS:
        return float(num) * _UNIT_NS[u]
    return float(num) / 100 if u in ("%", "pt") else float(num)


def _close(printed: str, value: float | None, per: float = 1.0) -> bool:
    """``printed`` shows ``value`` (times ``per``) to its printed precision: 3 decimals
    of its unit, or three significant digits."""
    got = _read_cell(printed)
    if value is None or got is None:
        return got is None and value is None
    want = value * per
    return abs(got - want) <= max(abs(want) * 5e-3, 1e-9 * abs(per) if per != 1 else 1e-9) or \
        abs(got - want) <= 0.0005 * _UNIT_NS.get(printed.rsplit(" ", 1)[-1], 1)


def test_compare_two_runs(tmp_path, capsys):
    runs = []
    for name, mtbf in (("a", 150.0), ("b", 600.0)):
        job = synth.training_job(ranks=4, steps=60, seed=1, mtbf_s=mtbf, checkpoint_every=20,
                                 kernels_per_step=8)
        d = tmp_path / name
        d.mkdir()
        synth.write_parquet(job.events, d / "events.parquet")
        pq.write_table(job.lifecycle, d / "lifecycle.parquet")
        runs.append((str(d), pau.Run(events=job.events, lifecycle=job.lifecycle)))
    assert cli.main(["compare", runs[0][0], runs[1][0], "--labels", "before,after"]) == 0
    out = capsys.readouterr().out
    cmp = pc.compare(runs[0][1], runs[1][1])
    lines = [_cells(line) for line in out.splitlines()]
    # the metrics table, its columns named by --labels, then one row per metric: times in
    # one unit per row (hours and seconds shown as durations), goodput as a percentage
    assert lines[0] == ["metric", "before", "after", "difference"]
    rows = {c[0]: c[1:] for c in lines if len(c) == 4}
    for r in cmp.table.to_pylist():
        m = r["metric"]
        name = {"accountable_accelerator_hours": "accountable accelerator time",
                "productive_accelerator_hours": "productive accelerator time",
                "badput_accelerator_hours": "badput accelerator time",
                "accelerator_seconds_per_preserved_step": "accelerator time per preserved step",
                "productive_accelerator_seconds_per_preserved_step":
                    "productive accelerator time per preserved step"}.get(m, m.replace("_", " "))
        per = 3600e9 if m.endswith("_hours") else 1e9 if "seconds" in m else 1.0
        cells = rows[name]
        if per != 1.0:
            assert len({c.rsplit(" ", 1)[-1] for c in cells if c != "-"}) == 1, cells  # one unit per row
        for cell, v in zip(cells, (r["a"], r["b"], r["difference"])):
            assert _close(cell, v, per), (m, cell, v)
    assert rows["goodput"][0] == f"{100 * cmp.table.to_pylist()[3]['a']:.1f} %"
    # the by-cause table, one row per cause and kind, in ns per preserved step
    assert "accelerator time per preserved step, by cause (before - after)" in out
    for r in cmp.by_cause.to_pylist():
        [cells] = [c for c in lines if c[:2] == [r["cause"], r["kind"]]]
        for cell, v in zip(cells[2:], (r["a"], r["b"], r["difference"])):
            assert _close(cell, v, 1e9), (r, cell)
    # the kernel diff (tests/test_kernel_diff.py): its first rows, one unit per column
    assert "device work by name and kind" in out and "a = before, b = after" in out
    table = [c for c in lines if c and c[0] in ("appeared", "disappeared", "changed", "same")]
    for k, cells in zip(cmp.kernels.rows[:3], table):
        assert cells[:4] == [k["status"], k["kind"], f"{k['count_a']:,}", f"{k['count_b']:,}"] and cells[-1] == k["name"]
        for cell, v in zip(cells[4:10], (k["total_ns_a"], k["total_ns_b"], k["difference_ns"], k["per_step_ns_a"],
                                          k["per_step_ns_b"], k["per_step_difference_ns"])):
            assert _close(cell, v), (cell, v)
    for col in range(4, 10):
        assert len({c[col].rsplit(" ", 1)[-1] for c in table}) == 1, col
    # the figure of one metric by hand: 4 ranks in both runs, no difference
    assert rows["ranks"] == ["4", "4", "0"]


def test_compare_labels_default_to_the_paths_last_parts(tmp_path, capsys):
    job = synth.training_job(ranks=2, steps=20, seed=1, mtbf_s=150.0, checkpoint_every=10, kernels_per_step=8)
    for side in ("x", "y"):
        d = tmp_path / side / "trace"
        d.mkdir(parents=True)
        synth.write_parquet(job.events, d / "events.parquet")
        pq.write_table(job.lifecycle, d / "lifecycle.parquet")
    assert cli.main(["compare", str(tmp_path / "x" / "trace"), str(tmp_path / "y" / "trace")]) == 0
    head = _cells(capsys.readouterr().out.splitlines()[0])
    assert head == ["metric", "x/trace", "y/trace", "difference"] and str(tmp_path) not in " ".join(head)
    assert cli.main(["compare", str(tmp_path / "x" / "trace"), str(tmp_path / "y" / "trace"), "--labels", "a"]) == 2
    assert "--labels" in capsys.readouterr().err


def test_report_on_an_archive_shows_progress_only_when_asked_or_on_a_terminal(tmp_path, capsys, monkeypatch):
    import io as _io

    from pau.engine import io as pio

    events = synth.training_run(ranks=2, steps=20, seed=4)
    pio.write_dataset(events, tmp_path / "archive")
    path = str(tmp_path / "archive")
    total = f"{events.num_rows:,}"
    assert cli.main(["report", path]) == 0  # stderr is not a terminal here: no bar
    out = capsys.readouterr()
    assert out.err == "" and _rows(out.out)["0"]
    assert cli.main(["report", path, "--no-progress"]) == 0
    assert capsys.readouterr().err == ""
    assert cli.main(["report", path, "--progress"]) == 0
    err = capsys.readouterr().err
    # drawn even off a terminal when asked; the last drawing has every row, then the
    # (transient) display erases its lines
    assert f"2/2 partitions  {total}/{total} rows" in err and "reading archive" in err
    assert err.endswith("\x1b[2K")

    class FakeTTY(_io.StringIO):
        def isatty(self):
            return True

    for flags, shown in (([], True), (["--no-progress"], False)):
        tty = FakeTTY()
        monkeypatch.setattr(sys, "stderr", tty)
        assert cli.main(["report", path] + flags) == 0
        monkeypatch.undo()
        assert (f"{total}/{total} rows" in tty.getvalue()) is shown


def test_ctrl_c_exits_130_and_says_what_was_kept(monkeypatch, capsys):
    """Ctrl-C during a run (errors.Interrupted) is not an error of the input: exit code
    130 (the shell's for SIGINT) and the message saying how to resume."""
    from pau import errors

    def stopped(args):
        raise errors.Interrupted("3 of 8 partitions are saved in results/; re-run with the same "
                                 "results_dir to resume", saved=3, total=8, results_dir="results")

    monkeypatch.setattr(cli, "_report", stopped)
    assert cli.main(["report", "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert "3 of 8 partitions are saved" in err and "resume" in err


def test_version(capsys):
    with pytest.raises(SystemExit) as ex:
        cli.main(["--version"])
    assert ex.value.code == 0
    assert capsys.readouterr().out.strip() == f"pau {pau.__version__}"


@pytest.mark.parametrize("ns, text", [(640, "640 ns"), (1_500, "1.500 µs"), (9_020_000, "9.020 ms"),
                                      (3_400_000_000, "3.400 s"), (599 * 10**9, "599.000 s"),
                                      (600 * 10**9, "10.000 min"), (9 * 3600 * 10**9, "540.000 min"),
                                      (10 * 3600 * 10**9, "10.000 h"), (-2_000, "-2.000 µs")])
def test_durations_print_in_the_unit_that_fits(ns, text):
    assert _format.duration(ns) == text


# ---------------------------------------------------------------------------
# conventions: input a user has, quiet and verbose, folders


def test_an_nsys_report_gets_the_export_command(tmp_path, capsys):
    rep = tmp_path / "profile.nsys-rep"
    rep.write_bytes(b"\x00" * 64)
    assert cli.main(["report", str(rep)]) == 1
    assert "nsys export --type sqlite" in capsys.readouterr().err
    assert cli.main(["report", str(tmp_path)]) == 1  # a folder of unexported reports says the same
    assert "nsys export --type sqlite" in capsys.readouterr().err


def test_an_events_csv_reads_as_its_table(tmp_path, capsys):
    rows = [(0, 0, 100, "compute"), (0, 50, 200, "communication"), (1, 10, 30, "memcpy"), (1, 40, 41, "memset")]
    path = tmp_path / "events.csv"
    path.write_text("rank,start_ns,end_ns,kind\n" + "".join(f"{r},{s},{e},{k}\n" for r, s, e, k in rows))
    table = pa.table({"rank": pa.array([r[0] for r in rows], pa.int32()), "start_ns": [r[1] for r in rows],
                      "end_ns": [r[2] for r in rows], "kind": [r[3] for r in rows]})
    run = pau.read(path)
    assert run.metadata["format"] == "csv" and run.events.num_rows == 4
    assert run.ledger().summary() == pc.ledger(table).summary()
    assert cli.main(["report", str(path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["ledger"] == pc.ledger(table).summary()


def test_bad_csv_rows_name_the_file_and_can_be_set_aside(tmp_path, capsys):
    path = tmp_path / "events.csv"
    path.write_text("rank,start_ns,end_ns,kind\n0,0,100,compute\n0,300,200,compute\n0,400,500,warp\n")
    assert cli.main(["report", str(path)]) == 1
    err = capsys.readouterr().err
    assert str(path) in err and "row 1" in err and "--on-invalid quarantine" in err
    run = pau.read(path, on_invalid="quarantine")
    assert run.events.num_rows == 1
    assert run.quarantine.select(["location", "reason"]).to_pylist() == [
        {"location": "line 3", "reason": "end_ns before start_ns"}, {"location": "line 4", "reason": "unknown kind"}]
    assert [w.code for w in run.warnings] == ["events.quarantined"]
    path.write_text("rank,start_ns,end_ns,kind\n0,zero,100,compute\n")
    assert cli.main(["report", str(path)]) == 1
    err = capsys.readouterr().err
    assert str(path) in err and "invalid value 'zero'" in err


def test_parquet_events_can_be_set_aside_too(tmp_path):
    t = pa.table({"rank": pa.array([0, 0], pa.int32()), "start_ns": [0, 300], "end_ns": [100, 200],
                  "kind": ["compute", "compute"]})
    pq.write_table(t, tmp_path / "e.parquet")
    run = pau.read(tmp_path / "e.parquet", on_invalid="quarantine")
    assert run.events.num_rows == 1 and run.quarantine["location"].to_pylist() == ["events row 1"]


def test_quiet_and_verbose(capsys):
    trace = str(shared("kineto", "hta-triton_example"))
    assert cli.main(["report", trace]) == 0
    assert "pau: warning: kineto.rank_assigned" in capsys.readouterr().err
    assert cli.main(["report", "-q", trace]) == 0
    assert capsys.readouterr().err == ""
    assert cli.main(["report", "-v", trace]) == 0
    err = capsys.readouterr().err
    assert "pau: read kineto" in err and "events 1" in err and "warning" in err
    assert cli.main(["compare", "-q", trace, trace]) == 0
    assert capsys.readouterr().err == ""


def test_folders_are_searched_below_their_top(tmp_path, capsys):
    src = shared("kineto", "hta-trace_filter")
    deep = tmp_path / "job" / "host0" / "traces"
    deep.mkdir(parents=True)
    for f in sorted(src.iterdir()):
        if f.name.endswith((".json", ".gz")):
            shutil.copy(f, deep / f.name)
    assert pau.read(tmp_path / "job").summary()["ledger"] == pau.read(src).summary()["ledger"]


def test_the_output_is_checked_before_any_work(tmp_path, capsys):
    assert cli.main(["report", "-o", str(tmp_path / "missing" / "r.txt")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert cli.main(["report", "-o", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_skip_bad_leaves_out_a_file_the_reader_refuses(tmp_path, capsys):
    src = shared("kineto", "hta-trace_filter")
    for f in sorted(src.iterdir()):
        if f.name.endswith((".json", ".gz")):
            shutil.copy(f, tmp_path / f.name)
    (tmp_path / "rank-9.json").write_text('{"traceEvents": [{"ph": "X", "cat": "kernel"')  # truncated
    assert cli.main(["report", str(tmp_path)]) == 1
    assert "rank-9.json" in capsys.readouterr().err
    assert cli.main(["report", str(tmp_path), "--skip-bad", "--format", "json"]) == 0
    out = capsys.readouterr()
    assert "read.skipped_file" in out.err and "rank-9.json" in out.err
    assert json.loads(out.out)["ledger"] == pau.read(src).summary()["ledger"]
    run = pau.read(tmp_path, skip_bad=True)
    assert [w.code for w in run.warnings][:1] == ["read.skipped_file"]
    assert run.metadata["skipped_files"] == [str(tmp_path / "rank-9.json")]


class _TTY:
    """A stderr that says it is a terminal (what the progress display draws on)."""

    def __init__(self):
        import io as _io

        self.buf = _io.StringIO()

    def write(self, s):
        return self.buf.write(s)

    def flush(self):
        pass

    def isatty(self):
        return True

    def getvalue(self):
        return self.buf.getvalue()


def test_a_folder_of_mlperf_logs_counts_files_on_a_terminal(monkeypatch, capsys):
    path = str(shared("mlperf", "training_v4.0", "ASUSTeK"))
    n = len(pau.read_runs(path))
    for flags, shown in (([], True), (["-q"], False), (["--no-progress"], False)):
        tty = _TTY()
        monkeypatch.setattr(sys, "stderr", tty)
        assert cli.main(["report", path] + flags) == 0
        monkeypatch.undo()
        err = tty.getvalue()
        assert (f"{n}/{n} files" in err and "reading ASUSTeK" in err) is shown, err
    # the report itself is the same with and without the display
    capsys.readouterr()
    assert cli.main(["report", path, "--no-progress", "-q"]) == 0
    plain = capsys.readouterr().out
    monkeypatch.setattr(sys, "stderr", _TTY())
    assert cli.main(["report", path, "-q", "--progress"]) == 0
    monkeypatch.undo()
    assert capsys.readouterr().out == plain


def test_a_big_file_gets_a_spinner_with_its_size(monkeypatch):
    from pau.views import console as _console

    path = str(shared("kineto", "pytorch-kineto", "resnet50_num_workers_0"))
    files = [os.path.join(r, f) for r, _, fs in os.walk(path) for f in fs]
    one = max(files, key=os.path.getsize)
    size = os.path.getsize(one)
    monkeypatch.setattr(_console, "BIG_FILE_BYTES", size)  # this file is "big" from here on
    tty = _TTY()
    monkeypatch.setattr(sys, "stderr", tty)
    assert cli.main(["report", one]) == 0
    monkeypatch.undo()
    assert f"reading {os.path.basename(one)}" in tty.getvalue() and _console._size(size) in tty.getvalue()
    monkeypatch.setattr(_console, "BIG_FILE_BYTES", size + 1)  # one byte short: no spinner
    tty = _TTY()
    monkeypatch.setattr(sys, "stderr", tty)
    assert cli.main(["report", one]) == 0
    monkeypatch.undo()
    assert "reading" not in tty.getvalue()


def test_console_tables_are_plain_and_aligned():
    from pau.views import console as _console

    text = _console.render(_console.table(["name", "time"], [["a[b]", "1.000 s"], ["longer name", "12.500 ms"]],
                                          total=[["total", "1.013 s"]]))
    # names left, numbers right, markup shown as written, a rule per column
    assert text.splitlines() == ["name              time",
                                 "------------ ---------",
                                 "a[b]           1.000 s",
                                 "longer name  12.500 ms",
                                 "------------ ---------",
                                 "total          1.013 s"]
    assert "\x1b" not in text
