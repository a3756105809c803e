"""Every figure of the API reaches ``pau report`` (issue 38): each through the same
function the API uses, so the CLI's JSON equals the API's figure (one figure, one path),
and the real serving and telemetry samples report from the command line with the
options the docs name."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pac
import pytest
from shared_data import shared

import pau
import pau.core as pc
from pau import cli, synth
from pau.figures.goodput import ettr, model_flops, mpg, program_goodput
from pau.figures.recovery import protection
from pau.figures.stragglers import straggler_scores
from pau.readers.telemetry import read_telemetry

AIPERF = ("serving", "aiperf_gpt-oss-20b_run1")
LLMPERF = ("serving", "llmperf_vllm_yi34b_4xa10g_c16")
NANOGPT_COLUMNS = "gpu_index=index,temperature_C=temperature.gpu,utilization_gpu_percent=utilization.gpu,power_W=power.draw"


def _json(argv: list[str], capsys, code: int = 0) -> dict:
    extra = ["--no-progress"] if argv[0] == "report" else []
    assert cli.main(argv + ["--format", "json", *extra]) == code, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _same(a, b) -> bool:
    """Equal as JSON (what the CLI prints is the figure through json.dumps)."""
    return json.loads(json.dumps(a)) == json.loads(json.dumps(b))


# --- serving ----------------------------------------------------------------------


@pytest.mark.parametrize("parts", [AIPERF, LLMPERF])
def test_serving_cost_and_latency_are_the_apis(parts, capsys):
    path = str(shared(*parts))
    fig = _json(["report", path, "--price", "2.5", "--accelerator-count", "4", "--slo", "ttft=2"], capsys)
    run = pau.read(path)
    rl = pc.requests(run.requests, slo={"ttft": 2_000_000_000})
    assert _same(fig["cost"], pc.cost(rl, {"per_accelerator_hour": 2.5, "accelerators": 4}))
    assert _same(fig["requests"]["latency"], rl.latency())
    assert fig["cost"]["cost_per_accepted_request"] == pytest.approx(
        2.5 * 4 * rl.summary()["window_ns"] / 3.6e12 / rl.summary()["accepted"], rel=1e-12)
    # the text shows the same, as the tools print it
    assert cli.main(["report", path, "--price", "2.5", "--accelerator-count", "4", "-q"]) == 0
    out = capsys.readouterr().out
    assert "per accepted request" in out and "time to first token (ttft" in out and "p99" in out


def test_serving_price_names_the_fix_that_applies(capsys):
    path = str(shared(*AIPERF))
    assert cli.main(["report", path, "--price", "2", "-q"]) == 2
    err = capsys.readouterr().err
    assert "--accelerator-count" in err and "--lifecycle" not in err
    assert cli.main(["report", path, "--price", "2", "--accelerator-count", "0", "-q"]) == 2
    assert cli.main(["report", "--steps", "5", "--accelerator-count", "2", "--price", "1", "-q"]) == 2


def test_latency_equals_aiperfs_own_summary(capsys):
    fig = _json(["report", str(shared(*AIPERF)), "-q"], capsys)
    rec = json.loads(shared(*AIPERF, "profile_export_aiperf.json").read_text())["records"]
    lat = fig["requests"]["latency"]
    for ours, theirs in (("ttft", "ttft"), ("tpot", "inter_token_latency"), ("e2e", "request_latency")):
        assert rec[theirs]["unit"] == "ms" and lat[ours]["count"] == rec[theirs]["count"] == 89
        for stat in ("avg", "min", "max", "std", "p1", "p5", "p25", "p50", "p75", "p90", "p95", "p99"):
            got = lat[ours]["mean" if stat == "avg" else stat] / 1e6
            assert got == pytest.approx(rec[theirs][stat], rel=1e-12), (ours, stat)


def test_latency_equals_llmperfs_own_summary(capsys):
    fig = _json(["report", str(shared(*LLMPERF)), "-q"], capsys)
    [summary_file] = shared(*LLMPERF).glob("*_summary.json")
    summ = json.loads(summary_file.read_text())
    lat = fig["requests"]["latency"]
    for ours, theirs in (("ttft", "ttft_s"), ("e2e", "end_to_end_latency_s")):
        assert lat[ours]["mean"] / 1e9 == pytest.approx(summ[f"results_{theirs}_mean"], abs=1e-9)
        assert lat[ours]["min"] / 1e9 == pytest.approx(summ[f"results_{theirs}_min"], abs=1e-9)
        assert lat[ours]["max"] / 1e9 == pytest.approx(summ[f"results_{theirs}_max"], abs=1e-9)
        for q in (25, 50, 75, 90, 95, 99):
            assert lat[ours][f"p{q}"] / 1e9 == pytest.approx(summ[f"results_{theirs}_quantiles_p{q}"], abs=1e-9)
        # LLMPerf's std is pandas' (ddof 1); ours is the population's (AIPerf's)
        n = lat[ours]["count"]
        assert lat[ours]["std"] / 1e9 * np.sqrt(n / (n - 1)) == pytest.approx(summ[f"results_{theirs}_stddev"],
                                                                             abs=1e-9)


def test_serving_html_has_a_latency_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "s.html"
    assert cli.main(["report", str(shared(*AIPERF)), "--format", "html", "-o", str(out), "-q"]) == 0
    page = out.read_text()
    assert 'data-plot="latency"' in page and "<h2>Latency</h2>" in page


# --- telemetry --------------------------------------------------------------------


def _run_at(tmp_path, ranks: int, t0_ns: int, *, events: bool = True, name: str = "run") -> str:
    """A synthetic run whose clock starts at ``t0_ns`` (so that real telemetry covers it)."""
    job = synth.training_job(ranks=ranks, steps=40, seed=0, mtbf_s=150.0, checkpoint_every=10, kernels_per_step=8)
    shift = t0_ns - int(pac.min(job.lifecycle["start_ns"]).as_py())

    def moved(t):
        for c in ("start_ns", "end_ns", "block_end_ns", "durable_ns"):
            if c in t.column_names:
                t = t.set_column(t.column_names.index(c), c, pac.add(t[c], pa.scalar(shift, pa.int64())))
        return t

    return pau.Run(events=moved(job.events) if events else None, lifecycle=moved(job.lifecycle)).write(
        tmp_path / name)


NANOGPT_T0 = int(dt.datetime(2025, 9, 24, 3, 48, 33, 493000, tzinfo=dt.timezone.utc).timestamp()) * 10**9


@pytest.mark.parametrize("name", ["nanogpt_pr643_8gpu_power_util_250ms.csv",
                                  "nanogpt_pr643_8gpu_power_util_250ms_head640.csv"])
def test_nvidia_smi_log_under_a_scripts_headers(name, tmp_path, capsys):
    log = str(shared("telemetry", "nvidia_smi", name))
    run_dir = _run_at(tmp_path, 8, NANOGPT_T0)
    # without the options the reader names the fix in the CLI's words
    assert cli.main(["report", run_dir, "--samples", log, "--devices", "index", "-q"]) == 1
    err = capsys.readouterr().err
    assert "--samples-format" in err and "--samples-columns" in err and "columns=" not in err
    fig = _json(["report", run_dir, "--samples", log, "--samples-columns", NANOGPT_COLUMNS, "--devices", "index",
                 "--price", "2"], capsys)
    tel = read_telemetry(log, format="nvidia_smi", columns={"gpu_index": "index", "temperature_C": "temperature.gpu",
                                                            "utilization_gpu_percent": "utilization.gpu",
                                                            "power_W": "power.draw"})
    run = pau.read(run_dir, samples=tel, devices="index")
    led = run.ledger()
    assert _same(fig["telemetry"], run.summary()["telemetry"]) and fig["telemetry"]
    # the samples' power reaches the cost section: energy per useful output
    s = run.samples.filter(pac.equal(run.samples["metric"].cast(pa.string()), "power_w"))
    power = pa.table({"rank": s["rank"], "time_ns": s["time_ns"], "watts": s["value"]})
    want = pc.cost(led, {"per_accelerator_hour": 2.0}, power=power)
    assert _same(fig["cost"], want) and fig["cost"]["energy_j"] > 0
    assert fig["cost"]["energy_per_preserved_step_j"] == pytest.approx(want["energy_j"] / led.summary()["preserved_steps"])


def test_samples_options_need_samples_and_parse(capsys):
    assert cli.main(["report", "--steps", "5", "--samples-timezone", "UTC", "-q"]) == 2
    assert "the built-in run has none" in capsys.readouterr().err
    assert cli.main(["report", str(shared(*AIPERF)), "--samples-timezone", "UTC", "-q"]) == 2
    assert "give --samples too" in capsys.readouterr().err
    assert cli.parse_columns("a=index, b=power.draw [W]") == {"a": "index", "b": "power.draw [W]"}
    assert cli.parse_columns("timestamp,index,power.draw") == ["timestamp", "index", "power.draw"]
    assert cli.parse_time_ns("2025-06-15T15:06:50Z") == 1_750_000_010 * 10**9
    assert cli.parse_time_ns("2025-06-15T17:06:50.000001+02:00") == 1_750_000_010 * 10**9 + 1_000
    assert cli.parse_time_ns("123") == 123
    for bad in ("2025-06-15T15:06:50", "yesterday"):
        with pytest.raises(cli.UsageError, match="--samples-time"):
            cli.parse_time_ns(bad)
    with pytest.raises(cli.UsageError, match="--samples-columns"):
        cli.parse_columns("a=index,power.draw")


def test_telemetry_formats_of_the_parser_are_the_readers():
    from pau import _args
    from pau.readers import telemetry

    assert _args.TELEMETRY_FORMATS == telemetry.FORMATS


@pytest.mark.parametrize("name", ["k8s_ai_conformance_ericsson_T4_busy_scrape.prom",
                                  "k8s_ai_conformance_kops_L4_scrape.prom",
                                  "nvidia_docs_A100_MIG_dcgmproftester_scrape.prom"])
def test_dcgm_exporter_scrapes_with_their_time(name, tmp_path, capsys):
    scrape = str(shared("telemetry", "dcgm_exporter", name))
    run_dir = _run_at(tmp_path, 1, 1_750_000_000 * 10**9)
    assert cli.main(["report", run_dir, "--samples", scrape, "--devices", "index", "-q"]) == 1
    assert "--samples-time" in capsys.readouterr().err
    fig = _json(["report", run_dir, "--samples", scrape, "--samples-time", "2025-06-15T15:06:50Z",
                 "--devices", "index", "-q"], capsys)
    tel = read_telemetry(scrape, time_ns=1_750_000_010 * 10**9)
    run = pau.read(run_dir, samples=tel, devices="index")
    assert fig["tables"]["samples"] == run.samples.num_rows > 0
    assert (pac.unique(run.samples["time_ns"]).to_pylist() == [1_750_000_010 * 10**9])
    assert cli.main(["report", run_dir, "--samples", scrape, "--samples-time", "2025-06-15T15:06:50Z",
                     "--devices", "index", "-q"]) == 0
    assert "none covering an instant of the ledger's time" in capsys.readouterr().out


def test_lifecycle_only_telemetry_that_misses_the_run_is_warned(tmp_path):
    log = str(shared("telemetry", "nvidia_smi", "nanogpt_pr643_8gpu_power_util_250ms_head640.csv"))
    cols = {"gpu_index": "index", "power_W": "power.draw", "temperature_C": "temperature.gpu",
            "utilization_gpu_percent": "utilization.gpu"}
    # four ranks, telemetry of eight GPUs: four devices' samples meet no rank
    four = pau.read(_run_at(tmp_path, 8, NANOGPT_T0, events=False))
    lc = four.lifecycle.filter(pac.less(four.lifecycle["rank"].fill_null(0), 4))
    path = pau.Run(lifecycle=lc).write(tmp_path / "four")
    run = pau.read(path, samples=read_telemetry(log, format="nvidia_smi", columns=cols), devices="index")
    [w] = [w for w in run.warnings if w.code == "telemetry.devices_unmatched"]
    assert "ranks 4, 5, 6, 7" in w.message and "960 samples" in w.message
    # another time: no overlap, said so
    other = _run_at(tmp_path, 8, 1_700_000_000 * 10**9, events=False, name="other")
    run = pau.read(other, samples=read_telemetry(log, format="nvidia_smi", columns=cols), devices="index")
    assert [w.code for w in run.warnings if w.code.startswith("telemetry.")] == ["telemetry.no_overlap"]
    assert "lifecycle records" in run.warnings[-1].message
    # eight ranks, samples of two GPUs: six ranks without samples
    two = read_telemetry(log, format="nvidia_smi", columns=cols)
    keep = pac.less(two.samples["rank"], 2)
    two = type(two)(**{**two.__dict__, "samples": two.samples.filter(keep)})
    run = pau.read(_run_at(tmp_path, 8, NANOGPT_T0, events=False, name="eight"), samples=two, devices="index")
    [w] = [w for w in run.warnings if w.code == "telemetry.ranks_without_samples"]
    assert "ranks 2, 3, 4, 5, 6, 7" in w.message


# --- overlap and the outcome figures ------------------------------------------------


def test_overlap_is_the_apis(capsys):
    path = str(shared("kineto", "hta-trace_filter"))
    fig = _json(["report", path, "-q"], capsys)
    run = pau.read(path)
    rows = pc.overlap(run.events, span=run.spans).ratio.to_pylist()
    assert _same(fig["overlap"]["per_rank"], [{k: r[k] for k in ("rank", "communication_ns", "overlap_ns", "ratio")}
                                              for r in rows])
    comm = sum(r["communication_ns"] for r in rows)
    both = sum(r["overlap_ns"] for r in rows)
    assert fig["overlap"]["communication_ns"] == comm and fig["overlap"]["ratio"] == both / comm
    # exposed communication is the ledger's: all communication minus the part under compute
    assert fig["overlap"]["exposed_ns"] == fig["ledger"]["activity_ns"]["communication"]
    assert cli.main(["report", path, "-q"]) == 0
    out = capsys.readouterr().out
    assert "overlap ratio" in out and f"{100 * both / comm:.1f} %" in out
    assert cli.main(["report", path, "-q", "--format", "csv"]) == 0
    flat = dict(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert float(flat["overlap.ratio"]) == both / comm


FLOPS = ["--flops-per-step", "1000000000000000", "--hardware-flops-per-step", "1200000000000000",
         "--accelerator", "h100-sxm", "--dtype", "bf16"]


def test_outcome_figures_are_the_apis(capsys):
    argv = ["report", "--ranks", "4", "--steps", "60", "--seed", "0", "--price", "2", "--protection-bound", "0.05",
            *FLOPS]
    fig = _json(argv, capsys)
    job = synth.training_job(ranks=4, steps=60, seed=0, mtbf_s=150.0, checkpoint_every=50, kernels_per_step=24,
                             straggler=(3, 1.25))
    led = pau.Run(events=job.events, lifecycle=job.lifecycle).ledger()
    flops = model_flops(per_step=10**15, hardware_per_step=12 * 10**14)
    assert _same(fig["checkpoint_advice"], pc.checkpoint_advice(led)) and fig["checkpoint_advice"]["daly_s"]
    assert _same(fig["mpg"], mpg(led, flops=flops, accelerator="h100-sxm", dtype="bf16").summary())
    pg = program_goodput(led, flops, accelerator="h100-sxm", dtype="bf16").summary()
    assert _same(fig["program_goodput"], pg) and pg["hfu"] is not None and pg["mfu"] is not None
    assert _same(fig["protection"], protection(led, bound_share=0.05, price_per_accelerator_hour=2).summary())
    assert fig["ettr"] is None and fig["straggler_scores"] is None   # no schedule; steps of rank -1 only
    assert cli.main(argv + ["-q"]) == 0
    out = capsys.readouterr().out
    assert f"MFU {100 * pg['mfu']:.1f} %, HFU {100 * pg['hfu']:.1f} %" in out
    # the layers' product is named, and MFU beside it (no unlabelled factor)
    assert f"= MFU over accountable time: MFU {100 * pg['mfu']:.1f} % (useful FLOPs time / productive time)" in out
    assert f"{100 * pg['program_goodput']:.1f} % over accountable time (MFU x goodput" in out
    assert f"program (MFU) {100 * pg['mfu']:.1f} %" in out
    assert "ETTR (needs the queue time: give --schedule)" in out and "checkpoint advice: every" in out
    assert "progress protection" in out and "MPG" in out


def test_straggler_scores_of_per_rank_steps_are_the_apis(capsys):
    path = str(shared("kineto", "hta-trace_filter"))
    run = pau.read(path)
    if run.lifecycle is None:
        pytest.skip("the trace has no steps")
    fig = _json(["report", path, "-q"], capsys)
    assert _same(fig["straggler_scores"], straggler_scores(run.lifecycle).summary())


def test_outcome_options_refused_without_a_lifecycle(capsys):
    path = str(shared(*AIPERF))
    assert cli.main(["report", path, "--protection-bound", "0.1", "-q"]) == 2
    assert "lifecycle" in capsys.readouterr().err
    assert cli.main(["report", "--steps", "5", "--hardware-flops-per-step", "5", "-q"]) == 2
    assert "--flops-per-step" in capsys.readouterr().err


# --- clocks apart ------------------------------------------------------------------


def test_ranks_on_clocks_seconds_apart_are_warned_with_the_fix(tmp_path, capsys):
    """The real 8-host DLRM step with rank 3's clock moved 2.5 s ahead: read as it is,
    the ledger charges seconds of waits for a straggler; the warning names the rank
    and --align, and aligned the waits are the trace's own milliseconds."""
    import gzip

    src = shared("kineto", "param-dlrm-8ranks")
    for f in sorted(src.glob("*.json.gz")):
        doc = json.load(gzip.open(f))
        if f.name.startswith("worker3"):
            for e in doc["traceEvents"]:
                if "ts" in e:
                    e["ts"] += 2_500_000   # µs
        with gzip.open(tmp_path / f.name, "wt") as g:
            json.dump(doc, g)
    assert cli.main(["report", str(tmp_path), "--format", "json"]) == 0
    got = capsys.readouterr()
    fig = json.loads(got.out)
    [line] = [x for x in got.err.splitlines() if "align.clocks_apart" in x]
    assert "rank 3 +2.500 s" in line and "give --align collectives" in line
    assert fig["steps"]["stragglers"]["wait_ns"] > 10**10   # seconds of "waits"
    assert cli.main(["report", str(tmp_path), "--align", "collectives", "--format", "json"]) == 0
    got = capsys.readouterr()
    assert "align.clocks_apart" not in got.err
    assert json.loads(got.out)["steps"]["stragglers"]["wait_ns"] < 10**8
    # the sample as recorded (clocks within 5 µs) is not warned
    run = pau.read(src)
    assert not [w for w in run.warnings if w.code == "align.clocks_apart"]


# --- MLPerf: a trained model is the useful output ------------------------------------

RESNET = ("mlperf", "training_v4.0", "ASUSTeK", "results", "ESC8000A-E12-8xH100-PCIE-80GB", "resnet", "result_1.txt")
TINY = ("mlperf", "training_v4.0", "tinycorp", "results", "tinybox_green", "resnet")


def test_mlperf_runs_compare_per_trained_model(tmp_path, capsys):
    from pau.readers import mlperf_rules

    a, b, failed = str(shared(*RESNET)), str(shared(*TINY, "result_1.txt")), str(shared(*TINY, "result_0.txt"))
    fig = _json(["compare", a, b, "-q"], capsys)
    ra, rb = pau.read(a), pau.read(b)
    # blocks of one, epochs of the other: the per-step denominators are not the same unit
    assert (ra.metadata["step_unit"], rb.metadata["step_unit"]) == ("block", "epoch")
    for side, run in (("a", ra), ("b", rb)):
        got = fig["mlperf"][side]
        assert _same(got, mlperf_rules.time_per_trained_model(run.ledger().summary(), run.metadata))
        assert got["trained_models"] == 1 and got["accountable_ns_per_trained_model"] == \
            run.ledger().summary()["accountable_ns"]
        assert got["time_to_train_ns"] == run.metadata["time_to_train_ns"]
    # a run that did not reach its target trained no model: nothing per model
    rf = pau.read(failed)
    got = mlperf_rules.time_per_trained_model(rf.ledger().summary(), rf.metadata)
    assert rf.metadata["status"] != "success" and got["trained_models"] == 0
    assert got["accountable_ns_per_trained_model"] is None and got["state_ns_per_trained_model"] is None
    assert cli.main(["compare", a, b, "-q", "--labels", "asus,tinybox"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("MLPerf: per trained model") and "accelerator time per trained model" in out
    assert "an MLPerf step is a block" in out
    pytest.importorskip("matplotlib")
    page = tmp_path / "cmp.html"
    assert cli.main(["compare", a, b, "-q", "--format", "html", "-o", str(page)]) == 0
    text = page.read_text()
    assert "<h2>MLPerf: per trained model</h2>" in text and "accelerator time per trained model" in text
    assert cli.main(["compare", a, b, "-q", "--format", "csv"]) == 0
    lines = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    [row] = [r for r in lines if r[:2] == ["mlperf", "accountable_ns_per_trained_model"]]
    assert int(row[5]) == fig["mlperf"]["a"]["accountable_ns_per_trained_model"]
    assert int(row[7]) == int(row[5]) - int(row[6])


def test_trained_models_needs_success_and_the_target():
    from pau.readers.mlperf_rules import trained_models

    assert trained_models({"status": "success", "eval": {"reached": True}}) == 1
    assert trained_models({"status": "success", "eval": {"reached": False}}) == 0
    assert trained_models({"status": "aborted", "eval": {"reached": True}}) == 0
    assert trained_models({"status": "success", "eval": {"reached": None}}) is None


def test_nvidia_smi_native_log_with_its_time_zone(tmp_path, capsys):
    """nvidia-smi's own CSV (local time stamps without a zone): --samples-timezone says
    which; the run's clock starts at the log's first stamp read as UTC."""
    log = str(shared("telemetry", "nvidia_smi", "miris_v100s_native_csv_1s.csv"))
    t0 = int(dt.datetime(2025, 6, 13, 0, 27, 52, 195000, tzinfo=dt.timezone.utc).timestamp()) * 10**9
    run_dir = _run_at(tmp_path, 1, t0)
    assert cli.main(["report", run_dir, "--samples", log, "--devices", "index", "--format", "json"]) == 0
    got = capsys.readouterr()
    assert "nvidia_smi.time_zone_assumed" in got.err and "give --samples-timezone" in got.err
    assert json.loads(got.out)["telemetry"]
    fig = _json(["report", run_dir, "--samples", log, "--devices", "index", "--samples-timezone", "UTC"], capsys)
    run = pau.read(run_dir, samples=read_telemetry(log, timezone="UTC"), devices="index")
    assert _same(fig["telemetry"], run.summary()["telemetry"]) and fig["warnings"] == len(run.warnings)
    assert not [w for w in run.warnings if w.code == "nvidia_smi.time_zone_assumed"]
    # the same stamps in Berlin's summer time are two hours earlier: they miss the run, said so
    assert cli.main(["report", run_dir, "--samples", log, "--devices", "index", "--samples-timezone",
                     "Europe/Berlin"]) == 0
    got = capsys.readouterr()
    assert "telemetry.no_overlap" in got.err and "samples outside the run's time" in got.out


def test_amd_smi_watch_log(tmp_path, capsys):
    log = str(shared("telemetry", "amd_smi", "inferencex_mi355x_amd_smi_metric_watch_head3s.csv"))
    run_dir = _run_at(tmp_path, 8, 1_786_553_852 * 10**9)
    fig = _json(["report", run_dir, "--samples", log, "--devices", "index", "--price", "2"], capsys)
    run = pau.read(run_dir, samples=log, devices="index")
    assert _same(fig["telemetry"], run.summary()["telemetry"]) and fig["telemetry"]
    assert fig["tables"]["samples"] == run.samples.num_rows == 168
    # amd-smi's energy snapshots are no time series: refused with the command that makes one
    snap = str(shared("telemetry", "amd_smi", "inferencex_mi355x_energy_start.csv"))
    assert cli.main(["report", run_dir, "--samples", snap, "--devices", "index", "-q"]) == 1
    assert "amd-smi metric ... -w SECONDS --csv" in capsys.readouterr().err


def test_ettr_and_mpg_with_a_schedule_are_the_apis(tmp_path, capsys):
    from pau.readers.slurm import read_sacct

    # the built-in run starts at 1.7e18 ns (2023-11-14T22:13:20Z); queued ten minutes before, on 4 GPUs
    sacct = tmp_path / "sacct.txt"
    sacct.write_text("JobID|JobName|Partition|State|ExitCode|Submit|Eligible|Start|End|NNodes|AllocTRES\n"
                     "42|train|gpu|COMPLETED|0:0|2023-11-14T22:03:20|2023-11-14T22:03:20|2023-11-14T22:13:20|"
                     "2023-11-14T22:24:00|1|cpu=8,gres/gpu=4,node=1\n")
    fig = _json(["report", "--ranks", "4", "--steps", "60", "--schedule", str(sacct), "-q"], capsys)
    job = synth.training_job(ranks=4, steps=60, seed=0, mtbf_s=150.0, checkpoint_every=50, kernels_per_step=24,
                             straggler=(3, 1.25))
    led = pau.Run(events=job.events, lifecycle=job.lifecycle).ledger()
    schedule = read_sacct(sacct)
    schedule = getattr(schedule, "result", schedule)
    assert _same(fig["ettr"], ettr(led, schedule).summary())
    assert _same(fig["mpg"], mpg(led, schedule).summary())
    assert fig["ettr"]["queued_ns"] == 4 * 600 * 10**9
    assert cli.main(["report", "--ranks", "4", "--steps", "60", "--schedule", str(sacct), "-q"]) == 0
    assert f"ETTR {100 * fig['ettr']['ettr']:.1f} %" in capsys.readouterr().out


def test_slo_values_take_units(capsys):
    assert cli.parse_slo(["ttft=500ms", "tpot=40 ms", "e2e=1.5min"]) == {
        "ttft": 500_000_000, "tpot": 40_000_000, "e2e": 90_000_000_000}
    assert cli.parse_slo(["ttft=0.5", "e2e=250us"]) == {"ttft": 500_000_000, "e2e": 250_000}
    for bad in ("ttft=5 h", "ttft=-1ms", "ttft=fast", "speed=1"):
        with pytest.raises(cli.UsageError, match="--slo"):
            cli.parse_slo([bad])
    path = str(shared(*AIPERF))
    a = _json(["report", path, "--slo", "ttft=500ms", "-q"], capsys)
    b = _json(["report", path, "--slo", "ttft=0.5", "-q"], capsys)
    assert a == b and a["slo_ns"] == {"ttft": 500_000_000}
    assert cli.main(["report", path, "--slo", "tpot=30ms", "-q"]) == 0
    assert "SLOs: tpot <= 30.000 ms" in capsys.readouterr().out


def test_convert_takes_the_samples_options(tmp_path, capsys):
    log = str(shared("telemetry", "nvidia_smi", "nanogpt_pr643_8gpu_power_util_250ms_head640.csv"))
    run_dir = _run_at(tmp_path, 8, NANOGPT_T0)
    out = tmp_path / "converted"
    assert cli.main(["convert", run_dir, str(out), "--samples", log, "--samples-columns", NANOGPT_COLUMNS,
                     "--devices", "index", "-q"]) == 0
    assert "samples (" in capsys.readouterr().out
    back = pau.read(out)
    want = pau.read(run_dir, samples=read_telemetry(log, format="nvidia_smi", columns=dict(
        x.split("=") for x in NANOGPT_COLUMNS.split(","))), devices="index")
    assert back.samples.equals(want.samples)
