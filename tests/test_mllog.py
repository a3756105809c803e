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
from pau.readers.mllog import MLLogError, MLLogRun, mllog_summary, read_mllog

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
    return {str(pathlib.Path(r.path).relative_to(data)): r for r in read_mllog(data)}


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
    r = read_mllog(p, system={"number_of_nodes": "2", "accelerators_per_node": "4"})
    assert isinstance(r, MLLogRun) and r.accelerators == 8 and r.accelerators_source == "argument"
    assert r.time_to_train_ns == 1100 * 10**6 and r.init_ns == 1000 * 10**6
    steps = [(x["step"], x["start_ns"], x["end_ns"]) for x in r.lifecycle.to_pylist() if x["record"] == "step"]
    # the second epoch has no stop: it ends at run_stop
    assert steps == [(1, 2100 * 10**6, 2600 * 10**6), (2, 2600 * 10**6, 3100 * 10**6)]
    assert any("1 malformed" in w for w in r.warnings)
    r2 = read_mllog(p)
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
    with pytest.raises(MLLogError, match="malformed"):
        read_mllog(_log(tmp_path, [':::MLLOG {"key": "run_start", "time_'], "trunc.txt"))
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
def test_a_line_beyond_int64_or_nested_too_deep_is_malformed_and_counted(tmp_path, bad):
    r = read_mllog(_ok_run(tmp_path, [bad]), system={"number_of_nodes": 1, "accelerators_per_node": 1})
    assert r.time_to_train_ns == 2000 * 10**6 and r.evals == 0
    assert any(w.code == "mllog.malformed_lines" and "first at line 2" in w for w in r.warnings)


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
