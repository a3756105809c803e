"""pau.readers.mllog: MLPerf :::MLLOG result logs.

Samples: ``mlperf/training_v4.0``, found by ``shared_data``: all 17 logs in
``../shared/data``, 13 of them in ``tests/data``. The folder's README has a per-file table
that gives init_s, run_s, blocks and status. Expected figures were read off the log lines
(``grep -E '"key": "(init|run)_(start|stop)"'``): e.g. ASUSTeK resnet result_3:
init_start 1715254598030, init_stop 1715254624886, run_start 1715254624886; its
run_stop has status aborted. Accelerator counts are number_of_nodes x
accelerators_per_node from ``<submitter>/systems/<system>.json``.
Bad logs are built in ``tmp_path``.
"""

from __future__ import annotations

import json
import pathlib

import pyarrow.compute as pc
import pytest

import pau.core
from pau.errors import MultipleRunsError, PauError
from pau.readers.mllog import QUARANTINE_SCHEMA, MLLogError, MLLogRun, mllog_summary, read_mllog, read_mllog_runs

from shared_data import ROOT, shared

SAMPLES = ("mlperf", "training_v4.0")

# file -> (status, init_s, run_s (None: no run_stop), blocks/epochs, accelerators); status and
# rounded seconds from the README table, accelerators from the systems JSONs.
EXPECTED = {
    "ASUSTeK/results/ESC8000A-E12-8xH100-PCIE-80GB/resnet/result_1.txt": ("success", 27, 1245, 9, 8),
    "ASUSTeK/results/ESC8000A-E12-8xH100-PCIE-80GB/resnet/result_3.txt": ("aborted", 27, 1316, 10, 8),
    "ASUSTeK/results/ESC_N8A-E12/ssd/result_0.txt": ("success", 59, 2163, None, 8),
    "Dell/results/R760xax4L40S/bert/result_0.txt": ("success", 9, 4949, 1, 4),
    "Dell/results/R760xax4L40S/bert/result_9.txt": ("aborted", 9, 5122, 1, 4),
    "GigaComputing/results/G593-SD1_hugectr/dlrm_dcnv2/result_0.txt": ("success", 74, 243, None, 8),
    "GigaComputing/results/G593-SD1_pytorch/stable_diffusion/result_0.txt": ("success", 145, 2557, 67, 8),
    "Google/results/cloud-tpu-v5p-1024-maxtext/gpt3/result_0.txt": ("success", 119, 6888, 23, 512),
    "Intel-HabanaLabs/results/HLS-Gaudi2-PT/llama2_70b_lora/result_0.txt": ("success", 1249, 5115, 6, 8),
    "NVIDIA/results/eos-dfw_n1344_ngc24.04_nemo/gpt3/result_0.txt": ("success", 803, 223, 22, 10752),
    "NVIDIA/results/eos_n64_ngc24.04_dgl/gnn/result_0.txt": ("success", 39, 64, None, 512),
    "NVIDIA/results/eos_n64_ngc24.04_nemo/gpt3/result_0.txt": ("success", 291, 3148, 24, 512),
    "NVIDIA/results/eos_n96_ngc23.09_mxnet/unet3d/result_00.txt": ("success", 133, 48, 137, 768),
    "NVIDIA/results/eos_n96_ngc23.09_mxnet/unet3d/result_04.txt": ("aborted", 131, 18, 51, 768),
    "Red_Hat/results/AS-8125GS-TNHR-RHEL9.4/llama2_70b_lora/result_0.txt": ("success", 70, 2042, 6, 8),
    "tinycorp/results/tinybox_green/resnet/result_0.txt": ("no_run_stop", 1785, None, None, 6),
    "tinycorp/results/tinybox_green/resnet/result_1.txt": ("success", 1194, 7336, None, 6),
}


@pytest.fixture(scope="module")
def data():
    return shared(*SAMPLES)


@pytest.fixture(scope="module")
def runs(data):
    return {str(pathlib.Path(r.path).relative_to(data)): r for r in read_mllog_runs(data)}


def test_every_sample(runs, data):
    # Every log present is read, and nothing else. tests/data holds a subset of EXPECTED
    # (not the 2.5 MB NVIDIA gpt3 log and three others); the full folder holds them all.
    present = {name: v for name, v in EXPECTED.items() if (data / name).exists()}
    if data == ROOT.joinpath(*SAMPLES):
        assert sorted(present) == sorted(EXPECTED)
    assert present and sorted(runs) == sorted(present)
    for name, (status, init_s, run_s, blocks, acc) in present.items():
        r = runs[name]
        assert r.status == status, name
        assert round(r.init_ns / 1e9) == init_s, name
        assert (None if r.time_to_train_ns is None else round(r.time_to_train_ns / 1e9)) == run_s, name
        if blocks is not None:
            assert r.blocks == blocks, name
        assert r.accelerators == acc and r.accelerators_source.startswith("system json"), name
        life = r.lifecycle
        assert life.num_rows and life["start_ns"].null_count == 0
        att = life.filter(pc.equal(life["record"], "attempt")).to_pylist()
        assert len(att) == 1 and att[0]["kind"] == ("completed" if status == "success" else "failed")
        n_acc = pc.sum(pc.equal(life["record"], "accountable")).as_py()
        assert n_acc == acc


def test_exact_times_and_failed_attempt(runs):
    r = runs["ASUSTeK/results/ESC8000A-E12-8xH100-PCIE-80GB/resnet/result_3.txt"]
    assert r.init_ns == (1715254624886 - 1715254598030) * 1_000_000
    life = r.lifecycle.to_pylist()
    init = [x for x in life if x["record"] == "phase" and x["kind"] == "init"]
    assert [(x["start_ns"], x["end_ns"]) for x in init] == [(1715254598030_000000, 1715254624886_000000)]
    first = [x for x in life if x["record"] == "step"][0]
    assert (first["step"], first["start_ns"], first["rank"]) == (1, 1715254625693_000000, -1)
    fail = [x for x in life if x["record"] == "failure"]
    assert len(fail) == 1 and fail[0]["kind"] == "aborted" and fail[0]["start_ns"] == r.end_ns
    assert any("aborted" in w for w in r.warnings)
    led = pau.core.ledger(lifecycle=r.lifecycle).table
    # An aborted run: nothing productive; all block time rolled back.
    assert "productive" not in led["state"].to_pylist()
    total = int(pc.sum(led["duration_ns"]).as_py())
    assert total == 8 * (r.end_ns - r.start_ns)   # conservation over 8 accelerators


def test_success_run_ledger_and_summary(runs, data):
    r = runs["ASUSTeK/results/ESC8000A-E12-8xH100-PCIE-80GB/resnet/result_1.txt"]
    led = pau.core.ledger(lifecycle=r.lifecycle).table
    states = set(led["state"].to_pylist())
    assert {"productive", "initialization", "eval"} <= states and "rolled_back" not in states
    s = mllog_summary(list(runs.values())).to_pylist()
    by = {pathlib.Path(x["file"]).relative_to(data).as_posix(): x for x in s}
    x = by["ASUSTeK/results/ESC8000A-E12-8xH100-PCIE-80GB/resnet/result_1.txt"]
    assert x["accelerators"] == 8 and x["status"] == "success"
    assert (x["epochs"], x["blocks"], x["target_reached"]) == (35, 9, True)
    assert "goodput" not in x  # goodput is the ledger's figure, never the reader's
    # The goodput of a log is the ledger's: evals inside a block count as eval
    # (DESIGN's precedence), and a run without run_stop preserves nothing.
    failed = pau.read(data / "tinycorp/results/tinybox_green/resnet/result_0.txt").summary()["ledger"]
    assert failed["goodput"] == 0.0 and failed["state_ns"]["rolled_back"] > 0
    ok = pau.read(data / "ASUSTeK/results/ESC8000A-E12-8xH100-PCIE-80GB/resnet/result_1.txt").summary()["ledger"]
    states = dict.fromkeys(pau.core.STATES, 0)
    for row in led.to_pylist():
        states[row["state"]] += row["duration_ns"]
    assert ok["goodput"] == states["productive"] / sum(states.values())
    assert 0.9 < ok["goodput"] < 1.0


def test_no_run_stop(runs):
    r = runs["tinycorp/results/tinybox_green/resnet/result_0.txt"]
    assert r.time_to_train_ns is None and any("no run_stop" in w for w in r.warnings)
    assert [x["kind"] for x in r.lifecycle.to_pylist() if x["record"] == "failure"] == ["no_run_stop"]


def test_repeated_rank_lines(runs, data):
    name = "NVIDIA/results/eos-dfw_n1344_ngc24.04_nemo/gpt3/result_0.txt"
    if name not in runs:
        pytest.skip(f"sample {data / name} absent (2.5 MB: only in ../shared/data/mlperf/training_v4.0)")
    big = runs[name]
    # init_start is written by each of the 10,752 ranks: counted once
    assert any("repeated" in w for w in big.warnings)


def _log(tmp_path, lines, name="result_0.txt"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def _line(key, t, prefix="", **md):
    return prefix + ":::MLLOG " + json.dumps({"namespace": "", "time_ms": t, "event_type": "POINT_IN_TIME",
                                              "key": key, "value": None, "metadata": md})


def test_prefixes_system_argument_and_epochs(tmp_path):
    p = _log(tmp_path, [
        "some banner", _line("init_start", 1000, "0: "), _line("init_stop", 2000, "[1,0]<stdout>: "),
        _line("run_start", 2000), _line("epoch_start", 2100, epoch_num=1), _line("epoch_stop", 2600),
        _line("epoch_start", 2600), _line("eval_start", 2900), _line("eval_stop", 3000),
        _line("run_stop", 3100, status="success"), _line("run_start", "x")])
    r = read_mllog(p, system={"number_of_nodes": "2", "accelerators_per_node": "4"}, on_invalid="quarantine")
    assert isinstance(r, MLLogRun) and r.accelerators == 8 and r.accelerators_source == "argument"
    assert r.time_to_train_ns == 1100 * 10**6 and r.init_ns == 1000 * 10**6
    steps = [(x["step"], x["start_ns"], x["end_ns"]) for x in r.lifecycle.to_pylist() if x["record"] == "step"]
    # the second epoch has no stop: it ends at run_stop
    assert steps == [(1, 2100 * 10**6, 2600 * 10**6), (2, 2600 * 10**6, 3100 * 10**6)]
    assert any("1 malformed" in w for w in r.warnings)
    assert r.quarantine.to_pylist() == [{"source_file": str(p), "location": "line 11", "reason": "time_ms is not a "
                                         "finite number of ms whose ns fit int64 ('x')", "line": 11, "key": "run_start"}]
    with pytest.raises(MLLogError, match="line 11: malformed :::MLLOG line: time_ms"):
        read_mllog(p)
    r2 = read_mllog(p, on_invalid="quarantine")
    assert r2.accelerators == 1 and any("one accelerator assumed" in w for w in r2.warnings)


def test_fractional_time_ms_is_exact(tmp_path):
    p = _log(tmp_path, [
        ':::MLLOG {"key": "run_start", "time_ms": 1715254624886.123456, "metadata": {}}',
        ':::MLLOG {"key": "run_stop", "time_ms": 1715254624887, "metadata": {"status": "success"}}'])
    r = read_mllog(p, system={"number_of_nodes": 1, "accelerators_per_node": 1})
    assert r.start_ns == 1715254624886123456


def test_bad_logs(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(MLLogError, match="empty"):
        read_mllog(empty)
    with pytest.raises(MLLogError, match="no :::MLLOG lines"):
        read_mllog(_log(tmp_path, ["hello", '{"traceEvents": []}'], "other.txt"))
    with pytest.raises(MLLogError, match="trunc.txt, line 1: malformed :::MLLOG line: the JSON after :::MLLOG "
                       "does not parse"):
        read_mllog(_log(tmp_path, [':::MLLOG {"key": "run_start", "time_'], "trunc.txt"))
    with pytest.raises(MLLogError, match="trunc.txt, line 1: all 1 :::MLLOG lines are malformed"):
        read_mllog(tmp_path / "trunc.txt", on_invalid="quarantine")   # no line left: no run
    with pytest.raises(PauError, match="on_invalid: expected 'raise' or 'quarantine'"):
        read_mllog(tmp_path / "trunc.txt", on_invalid="skip")
    with pytest.raises(MLLogError, match="no run_start"):
        read_mllog(_log(tmp_path, [_line("init_start", 1)], "norun.txt"))
    with pytest.raises(FileNotFoundError):
        read_mllog(tmp_path / "nothing")


# --- issue 19, finding 5: only pau.errors, naming the file and the line -----------------

def _ok_run(tmp_path, extra, name="r.txt"):
    return _log(tmp_path, [_line("run_start", 1000), *extra, _line("run_stop", 3000, status="success")], name)


@pytest.mark.parametrize("bad", [
    ':::MLLOG {"key": "eval_start", "time_ms": 100000000000000000000000000000, "metadata": {}}',  # ns > int64
    ':::MLLOG {"key": "eval_start", "time_ms": 1e400, "metadata": {}}',
    ':::MLLOG {"key": "eval_start", "time_ms": 1e999999999, "metadata": {}}',  # decimal.Overflow
    ':::MLLOG {"key": "eval_start", "time_ms": -1e30, "metadata": {}}',
    ':::MLLOG {"key": "eval_start", "time_ms": 1000, "value": ' + "[" * 100_000 + "]" * 100_000 + "}",
])
def test_a_line_beyond_int64_or_nested_too_deep_is_malformed(tmp_path, bad):
    p = _ok_run(tmp_path, [bad])
    with pytest.raises(MLLogError, match=r"r.txt, line 2: malformed :::MLLOG line: .*Fix: correct or delete the line"):
        read_mllog(p, system={"number_of_nodes": 1, "accelerators_per_node": 1})
    r = read_mllog(p, system={"number_of_nodes": 1, "accelerators_per_node": 1}, on_invalid="quarantine")
    assert r.time_to_train_ns == 2000 * 10**6 and r.evals == 0
    assert any(w.code == "mllog.malformed_lines" and "first at line 2" in w for w in r.warnings)
    assert r.quarantine.schema == QUARANTINE_SCHEMA and r.quarantine["line"].to_pylist() == [2]
    assert r.quarantine["key"].to_pylist() == [None if "[[" in bad else "eval_start"]


def test_a_system_description_that_is_not_one_is_refused_or_ignored(tmp_path):
    p = _ok_run(tmp_path, [])
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(MLLogError, match="deep.json: the system description is not valid JSON"):
        read_mllog(p, system=deep)
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    with pytest.raises(MLLogError, match="not a JSON object"):
        read_mllog(p, system=listed)
    with pytest.raises(MLLogError, match="cannot be read"):
        read_mllog(p, system=tmp_path / "absent.json")
    with pytest.raises(MLLogError, match="more than 1,000,000"):
        read_mllog(p, system={"number_of_nodes": 10**9, "accelerators_per_node": 10**9})
    line = _ok_run(tmp_path, [':::SYSJSON {"number_of_nodes": "9' + "9" * 30 + '", "accelerators_per_node": 8}'],
                   "sys.txt")
    with pytest.raises(MLLogError, match="sys.txt: the system description \\(SYSJSON line\\)"):
        read_mllog(line)


def test_an_empty_folder_is_a_pau_error(tmp_path):
    from pau.errors import NoInputError, PauError
    with pytest.raises(PauError, match="no MLPerf result logs"):
        read_mllog(tmp_path)
    with pytest.raises(NoInputError):   # also a FileNotFoundError, as before
        read_mllog(tmp_path / "nothing")


# --- issue 39: one type per reader, on_invalid on each ------------------------------------

HABANA = ("Intel-HabanaLabs", "results", "HLS-Gaudi2-PT", "llama2_70b_lora", "result_0.txt")


def test_read_mllog_is_one_run_and_read_mllog_runs_a_list(data, tmp_path):
    one = data.joinpath(*HABANA)
    r = read_mllog(one)
    assert isinstance(r, MLLogRun) and r.path == str(one)
    assert r.quarantine.schema == QUARANTINE_SCHEMA and r.quarantine.num_rows == 0
    got = read_mllog_runs(one)
    assert isinstance(got, list) and len(got) == 1 and got[0].lifecycle == r.lifecycle
    # a folder holding one log is that log; one holding several is refused before any is read
    assert read_mllog(data.joinpath(*HABANA[:-1])).lifecycle == r.lifecycle
    folder = data / "ASUSTeK"
    with pytest.raises(MultipleRunsError, match=r"3 MLPerf result logs .*Fix: .*read_mllog_runs\(path\)"):
        read_mllog(folder)
    runs = read_mllog_runs(folder)
    assert [pathlib.Path(x.path).relative_to(folder).as_posix() for x in runs] == sorted(
        name[len("ASUSTeK/"):] for name in EXPECTED if name.startswith("ASUSTeK/") and (data / name).exists())


# Damage done to lines of the real Habana log (1-based line -> (new text, the key the
# quarantine names, a word of the reason)).
_DAMAGE = {
    10: (':::MLLOG {"namespace": "", "time_ms": 1715240631569, "event_type": "POINT_IN_TIME", "key": "global_b',
         None, "does not parse"),
    14: (':::MLLOG ["opt_learning_rate_warmup_factor", 1715240631569]', None, "not an object (a list)"),
    16: (':::MLLOG {"time_ms": 1715240631569, "value": 0.0001}', None, "no key"),
    24: (':::MLLOG {"key": "train_loss", "value": 3.2219}', "train_loss", "no time_ms"),
    25: (':::MLLOG {"key": "train_loss", "time_ms": "1715241367915", "value": 1.3738}', "train_loss",
         "time_ms is not a finite number"),
    26: (':::MLLOG {"key": "train_loss", "time_ms": 1.5e300, "value": 1.3224}', "train_loss",
         "whose ns fit int64 (1.5E+300)"),
    27: (':::MLLOG {"key": 7, "time_ms": 1715242450389}', None, "key is not a string (7)"),
}


def _damaged(tmp_path, src: pathlib.Path, damage: dict) -> tuple[pathlib.Path, pathlib.Path]:
    """A copy of ``src`` with lines replaced as ``damage`` says, and one with them deleted,
    in the MLPerf layout (the system JSON found beside the results)."""
    lines = src.read_text().splitlines()
    out = []
    for name, keep in (("damaged", True), ("deleted", False)):
        root = tmp_path / name / "Intel-HabanaLabs"
        (root / "systems").mkdir(parents=True)
        (root / "systems" / "HLS-Gaudi2-PT.json").write_bytes(
            src.parents[3].joinpath("systems", "HLS-Gaudi2-PT.json").read_bytes())
        p = root.joinpath(*HABANA[1:])
        p.parent.mkdir(parents=True)
        text = [damage[i][0] if i in damage else x for i, x in enumerate(lines, 1) if keep or i not in damage]
        p.write_text("\n".join(text) + "\n")
        out.append(p)
    return out[0], out[1]


def test_malformed_lines_of_a_real_log_raise_or_are_set_aside(data, tmp_path):
    src = data.joinpath(*HABANA)
    damaged, deleted = _damaged(tmp_path, src, _DAMAGE)
    # raise: the first malformed line, named with its file and the fix
    with pytest.raises(MLLogError) as exc:
        read_mllog(damaged)
    assert (exc.value.path, exc.value.line) == (str(damaged), 10)
    assert str(exc.value).startswith(f"{damaged}, line 10: malformed :::MLLOG line: the JSON after :::MLLOG "
                                     "does not parse") and "on_invalid='quarantine'" in exc.value.fix
    # quarantine: every damaged line, one row each with its reason; the rest read as if the
    # lines were not there
    r = read_mllog(damaged, on_invalid="quarantine")
    q = r.quarantine.to_pylist()
    assert [x["line"] for x in q] == sorted(_DAMAGE) and [x["location"] for x in q] == [f"line {i}" for i in sorted(_DAMAGE)]
    assert {x["source_file"] for x in q} == {str(damaged)}
    for x in q:
        text, key, why = _DAMAGE[x["line"]]
        assert x["key"] == key and why in x["reason"], x
    w = [w for w in r.warnings if w.code == "mllog.malformed_lines"]
    assert len(w) == 1 and f"{len(_DAMAGE)} malformed :::MLLOG lines set aside" in w[0] and "first at line 10" in w[0]
    clean = read_mllog(deleted)
    assert r.lifecycle == clean.lifecycle and r.eval == clean.eval
    assert (r.status, r.time_to_train_ns, r.init_ns, r.blocks, r.accelerators) == (
        clean.status, clean.time_to_train_ns, clean.init_ns, clean.blocks, clean.accelerators)
    assert [x for x in r.warnings if x.code != "mllog.malformed_lines"] == [
        x.__class__(x.code, x.message.replace(str(deleted), str(damaged))) for x in clean.warnings]


def test_pau_read_and_the_cli_quarantine_mllog_lines(data, tmp_path, capsys):
    damaged, deleted = _damaged(tmp_path, data.joinpath(*HABANA), {24: _DAMAGE[24], 25: _DAMAGE[25]})
    with pytest.raises(MLLogError, match="line 24"):
        pau.read(damaged)
    run = pau.read(damaged, on_invalid="quarantine")
    assert run.quarantine is not None and run.quarantine["line"].to_pylist() == [24, 25]
    assert run.quarantine.column_names == QUARANTINE_SCHEMA.names
    assert any(w.code == "mllog.malformed_lines" for w in run.warnings)
    s = run.summary()
    assert s["quarantined"] == 2 and s["ledger"] == pau.read(deleted).summary()["ledger"]
    out = run.write(tmp_path / "run")
    assert pau.read(out) == run   # the quarantine kept in pau's layout
    assert cli.main(["report", str(damaged)]) == 1
    err = capsys.readouterr().err
    assert f"{damaged}, line 24: malformed :::MLLOG line: no time_ms" in err
    assert cli.main(["report", str(damaged), "--on-invalid", "quarantine", "--format", "json", "-o", "-"]) == 0
    got = capsys.readouterr()
    assert json.loads(got.out)["quarantined"] == 2 and "mllog.malformed_lines" in got.err


# --- issue 16: the eval metric against its quality target, epochs and blocks, time to train -----

from pau.readers import mlperf_rules as _mlperf
from pau import cli
from pau.views import html as html_report  # noqa: E402
from pau.run import run_figures  # noqa: E402

# The v4.0 targets as the compliance checker's ATLEAST_ONE_CHECK lines write them (read in
# mlcommons/logging, the files each row of pau.readers.mlperf_rules.TARGETS names): benchmark -> [(part,
# direction, target)].
CHECKER_V40 = {
    "bert": [(None, ">=", 0.720)], "dlrm_dcnv2": [(None, ">=", 0.80275)], "gnn": [(None, ">=", 0.72)],
    "gpt3": [(None, "<=", 2.69)], "llama2_70b_lora": [(None, "<=", 0.925)],
    "maskrcnn": [("BBOX", ">=", 0.377), ("SEGM", ">=", 0.339)], "resnet": [(None, ">=", 0.759)],
    "rnnt": [(None, "<=", 0.058)], "ssd": [(None, ">=", 0.340)],
    "stable_diffusion": [("FID", "<=", 90.0), ("CLIP", ">=", 0.15)], "unet3d": [(None, ">=", 0.908)],
}


# Rounds 5.0 and 5.1, as training_5.X.0/closed_<benchmark>.yaml write their ATLEAST_ONE_CHECK
# (mlcommons/logging, read at the commits the table names).
CHECKER_V50 = {
    "bert": [(None, ">=", 0.720)], "dlrm_dcnv2": [(None, ">=", 0.80275)], "llama2_70b_lora": [(None, "<=", 0.925)],
    "llama31_405b": [(None, "<=", 5.6)], "retinanet": [(None, ">=", 0.340)], "rgat": [(None, ">=", 0.72)],
    "stable_diffusion": [("FID", "<=", 90.0), ("CLIP", ">=", 0.15)],
}
CHECKER_V51 = {
    "dlrm_dcnv2": [(None, ">=", 0.80275)], "flux1": [(None, "<=", 0.586)], "llama2_70b_lora": [(None, "<=", 0.925)],
    "llama31_405b": [(None, "<=", 5.6)], "llama31_8b": [(None, "<=", 3.3)], "retinanet": [(None, ">=", 0.340)],
    "rgat": [(None, ">=", 0.72)],
}


def test_the_target_table_is_the_checkers():
    got: dict = {}
    for t in _mlperf.TARGETS:
        got.setdefault(t.round, {}).setdefault(t.benchmark, []).append((t.part, t.direction, t.target))
        assert len(t.commit) == 40 and int(t.commit, 16) >= 0
        assert t.source.startswith("mlperf_logging/compliance_checker/") and t.source.endswith(".yaml")
        if t.round != "4.0":
            assert t.source.startswith(f"mlperf_logging/compliance_checker/training_{t.round}.0/closed_")
    # every benchmark training_X.Y.0/closed_common.yaml accepts, no other
    assert got == {"4.0": CHECKER_V40, "5.0": CHECKER_V50, "5.1": CHECKER_V51}
    assert _mlperf.ROUNDS == ("4.0", "5.0", "5.1")
    assert _mlperf.round_of_path("x/training_results_v4.0/NVIDIA/results/a/gpt3/result_0.txt") == "4.0"
    assert _mlperf.round_of_path("x/training_3.1.0/r.txt") == "3.1" and _mlperf.round_of_path("a/b.txt") is None
    # the folder MLCommons' v5.1 results repository is cloned as
    assert _mlperf.round_of_path("x/mlperf_training_v5.1/NVIDIA/results/a/llama31_8b/result_0.txt") == "5.1"
    assert _mlperf.round_of_path("x/mlperf_training_results_v5.0/r.txt") == "5.0"


@pytest.mark.parametrize("bench, good, bad", [("llama31_8b", 3.29, 3.31), ("llama31_405b", 5.59, 5.61),
                                                  ("flux1", 0.585, 0.587)])
def test_a_v51_log_is_judged_against_its_round(tmp_path, bench, good, bad):
    root = tmp_path / "mlperf_training_v5.1" / "Sub" / "results" / "sys" / bench
    root.mkdir(parents=True)
    for name, v in (("ok.txt", good), ("miss.txt", bad)):
        def kv(key, t, value, **md):
            return ":::MLLOG " + json.dumps({"key": key, "time_ms": t, "value": value, "metadata": md})

        lines = [kv("submission_benchmark", 0, bench), kv("submission_division", 0, "closed"),
                 _line("run_start", 1000), kv("eval_accuracy", 2000, v, samples_count=1),
                 _line("run_stop", 3000, status="success")]
        (root / name).write_text("\n".join(lines) + "\n")
        r = read_mllog(root / name, system={"number_of_nodes": 1, "accelerators_per_node": 1})
        assert r.eval["round"] == "5.1" and r.eval["assumed"] == [] and r.eval["reached"] is (v == good)
        assert r.eval["target_source"].startswith("mlcommons/logging mlperf_logging/compliance_checker/training_5.1.0/")

def test_every_sample_reaches_its_target_exactly_when_it_says_success(runs):
    assert runs
    for name, r in runs.items():
        ev = r.eval
        assert ev["round"] == "4.0" and ev["division"] == "closed" and ev["assumed"] == [], name
        assert [(p["name"], p["direction"], p["target"]) for p in ev["parts"]] == CHECKER_V40[r.benchmark], name
        assert ev["target_source"].startswith("mlcommons/logging mlperf_logging/compliance_checker/"), name
        assert ev["reached"] is (r.status == "success"), name
        assert not [w for w in r.warnings if w.code == "mllog.target_mismatch"], name


def test_hand_checked_resnet_and_ssd(data):
    # resnet result_1: run_start 1715251919964; last eval_accuracy 0.7602 (epoch_num 35) at
    # 1715253165202; 35 epoch_start lines in 9 blocks, the first block first_epoch_num 1,
    # epoch_count 3, the second 4 and 4.
    r = read_mllog(data / "ASUSTeK/results/ESC8000A-E12-8xH100-PCIE-80GB/resnet/result_1.txt")
    assert (r.epochs, r.blocks, r.step_unit, r.epoch_count) == (35, 9, "block", None)
    assert [(b["first_epoch_num"], b["epoch_count"]) for b in r.block_spans[:2]] == [(1, 3), (4, 4)]
    assert r.block_spans[0]["start_ns"] == 1715251920664 * 10**6
    ev = r.eval
    assert len(ev["values"]) == 9 and ev["values"][-1] == {
        "value": 0.7602, "epoch_num": 35, "time_ns": 1715253165202 * 10**6,
        "run_time_ns": (1715253165202 - 1715251919964) * 10**6}
    assert (ev["last"], ev["target"], ev["direction"], ev["reached"]) == (0.7602, 0.759, ">=", True)
    assert ev["target_source"] == ("mlcommons/logging mlperf_logging/compliance_checker/training_3.1.0/"
                                   "closed_resnet.yaml @ 5c07d0cd")
    # ssd result_0: epoch_count 8 and first_epoch_num 0 written as keys; epochs 0..4, no
    # blocks; evals after epochs 1..4, the last 0.3472699265477491 at 1715226832230
    # (run_start 1715224670202).
    s = read_mllog(data / "ASUSTeK/results/ESC_N8A-E12/ssd/result_0.txt")
    assert (s.epochs, s.blocks, s.step_unit, s.epoch_count, s.first_epoch_num) == (5, 0, "epoch", 8, 0)
    assert [e["epoch_num"] for e in s.epoch_spans] == [0, 1, 2, 3, 4]
    ev = s.eval
    assert [v["epoch_num"] for v in ev["values"]] == [1, 2, 3, 4]
    assert ev["values"][0]["value"] == 0.23193513235066282
    assert ev["last"] == 0.3472699265477491 and ev["best"] == 0.3472699265477491 and ev["reached"] is True
    assert ev["values"][-1]["run_time_ns"] == (1715226832230 - 1715224670202) * 10**6
    assert _mlperf.verdict_text(ev) == "eval_accuracy 0.3473 >= 0.34: reached"


def test_json_and_text_reports_show_the_target(data, capsys):
    path = data / "ASUSTeK/results/ESC8000A-E12-8xH100-PCIE-80GB/resnet/result_3.txt"
    assert cli.main(["report", str(path), "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)["mlperf"]
    assert got == run_figures(pau.read(path))["mlperf"]
    # run_start 1715254624886; README: aborted after 1316 s; 37 epochs in 10 blocks; the
    # last eval_accuracy 0.75838 misses 0.759.
    assert (got["status"], got["epochs"], got["blocks"], got["benchmark"]) == ("aborted", 37, 10, "resnet")
    assert round(got["time_to_train_s"]) == 1316 and got["time_to_train_s"] == got["time_to_train_ns"] / 1e9
    assert (got["eval"]["last"], got["eval"]["reached"]) == (0.75838, False)
    assert cli.main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "status aborted (not a valid result)" in out and "time to train 21.9" in out
    assert "37 epochs in 10 blocks; eval_accuracy 0.7584 >= 0.759: not reached (target: mlcommons/logging " in out
    run = pau.read(path)
    cards = html_report._cards(run_figures(run), run)
    assert '<div class="v">aborted</div><div class="k">MLPerf status: not a valid result</div>' in cards
    assert '<div class="v">not reached</div>' in cards and '<div class="v">37 epochs in 10 blocks</div>' in cards
    ok = data / "ASUSTeK/results/ESC_N8A-E12/ssd/result_0.txt"
    assert cli.main(["report", str(ok)]) == 0
    out = capsys.readouterr().out
    assert "status success, 8 accelerators" in out and "5 epochs; eval_accuracy 0.3473 >= 0.34: reached" in out
    run = pau.read(ok)
    cards = html_report._cards(run_figures(run), run)
    assert "eval_accuracy 0.3473 &gt;= 0.34 (MLPerf quality target, round 4.0)" in cards
    assert '<div class="v">reached</div>' in cards and '<div class="v">5 epochs</div>' in cards


def _eval_log(tmp_path, evals, status="success", benchmark="resnet", division="closed", name="r.txt"):
    lines = [':::MLLOG ' + json.dumps({"key": "submission_benchmark", "time_ms": 0, "value": benchmark}),
             _line("run_start", 1000)]
    if division is not None:
        lines.insert(0, ':::MLLOG ' + json.dumps({"key": "submission_division", "time_ms": 0, "value": division}))
    for i, (v, md) in enumerate(evals):
        lines.append(":::MLLOG " + json.dumps({"key": "eval_accuracy", "time_ms": 1100 + i, "value": v, "metadata": md}))
    lines.append(_line("run_stop", 3000, status=status))
    return read_mllog(_log(tmp_path, lines, name), system={"number_of_nodes": 1, "accelerators_per_node": 1})


def test_a_status_that_contradicts_the_target_is_warned(tmp_path):
    r = _eval_log(tmp_path, [(0.76, {"epoch_num": 1}), (0.7589, {"epoch_num": 2})])
    # the last eval misses 0.759 (an earlier one passed: the last one is what counts here)
    assert r.eval["reached"] is False and r.eval["best"] == 0.76 and r.eval["last"] == 0.7589
    w = [w for w in r.warnings if w.code == "mllog.target_mismatch"]
    assert len(w) == 1 and "status is 'success'" in w[0] and "misses" in w[0] and "0.7589 >= 0.759" in w[0]
    # the path names no round: the latest round of the table, written down
    assert r.eval["round"] == "4.0" and "round 4.0" in r.eval["assumed"][0]
    r = _eval_log(tmp_path, [(0.80, {"epoch_num": 1})], status="aborted", name="a.txt")
    assert r.eval["reached"] is True and any(w.code == "mllog.target_mismatch" and "reaches" in w for w in r.warnings)
    # a value past the checker's plausibility bound (< 1.0) does not reach the target
    r = _eval_log(tmp_path, [(1.0, {"epoch_num": 1})], benchmark="gnn", name="g.txt")
    assert r.eval["reached"] is False
    assert _mlperf.verdict_text(r.eval) == ("eval_accuracy 1.0000 >= 0.72: not reached "
                                            "(outside the checker's bound < 1)")


def test_no_target_known(tmp_path):
    r = _eval_log(tmp_path, [(0.5, {"epoch_num": 1})], benchmark="my_model")
    assert r.eval["reached"] is None and r.eval["target"] is None and r.eval["last"] == 0.5
    assert "no quality target known for benchmark 'my_model' in round 5.1" in r.eval["note"]
    assert not [w for w in r.warnings if w.code == "mllog.target_mismatch"]
    r = _eval_log(tmp_path, [(0.5, {"epoch_num": 1})], division="open", name="o.txt")
    assert r.eval["reached"] is None and r.eval["note"].startswith("open division")
    p = tmp_path / "x.txt"
    p.write_text((tmp_path / "o.txt").read_text().replace('"open"', '"closed"'))
    r = read_mllog(p, system={"number_of_nodes": 1, "accelerators_per_node": 1}, mlperf_round="3.1")
    assert r.eval["reached"] is None and r.eval["round"] == "3.1" and r.eval["assumed"] == []
    # no submission_division: taken as closed, written down
    r = _eval_log(tmp_path, [(0.77, {"epoch_num": 1})], division=None, name="n.txt")
    assert r.eval["reached"] is True and any("closed division" in a for a in r.eval["assumed"])


def test_several_metrics_are_judged_at_one_eval_point(tmp_path):
    sd = [(93.6, {"samples_count": 100, "metric": "FID"}), (0.155, {"samples_count": 100, "metric": "CLIP"}),
          (86.1, {"samples_count": 200, "metric": "FID"})]
    r = _eval_log(tmp_path, sd, benchmark="stable_diffusion")
    # the last point (200 samples) has no CLIP yet: not reached; FID's best is 86.1
    fid, clip = r.eval["parts"]
    assert (fid["name"], fid["last"], fid["best"], fid["reached"]) == ("FID", 86.1, 86.1, True)
    assert (clip["name"], clip["last"], clip["reached"]) == ("CLIP", None, False)
    assert r.eval["reached"] is False and r.eval["last"] is None
    r = _eval_log(tmp_path, sd + [(0.1767, {"samples_count": 200, "metric": "CLIP"})], benchmark="stable_diffusion",
                  name="b.txt")
    assert r.eval["reached"] is True
    assert _mlperf.verdict_text(r.eval) == "eval_accuracy FID 86.1000 <= 90, CLIP 0.1767 >= 0.15: reached"
    # Mask R-CNN writes both metrics in one value: BBOX 0.38 passes 0.377, SEGM 0.33 misses 0.339
    r = _eval_log(tmp_path, [({"BBOX": 0.38, "SEGM": 0.33}, {"epoch_num": 5})], benchmark="maskrcnn",
                  status="aborted", name="m.txt")
    assert [(p["name"], p["reached"]) for p in r.eval["parts"]] == [("BBOX", True), ("SEGM", False)]
    assert r.eval["reached"] is False


def test_an_eval_value_that_is_not_a_number_is_kept_and_warned(tmp_path):
    r = _eval_log(tmp_path, [(0.77, {"epoch_num": 1}), ("n/a", {"epoch_num": 2})], status="aborted")
    assert [v["value"] for v in r.eval["values"]] == [0.77, "n/a"]
    assert r.eval["last"] is None and r.eval["best"] == 0.77 and r.eval["reached"] is False
    assert any(w.code == "mllog.eval_not_numeric" and "first at line 5" in w for w in r.warnings)
