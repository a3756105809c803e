"""Hardware telemetry: the readers (real nvidia-smi, dcgm-exporter and amd-smi output),
the samples table joined to the ledger (means, unknown time, energy), devices matched to
ranks, and the bad-input matrix (docs/telemetry.md).

Real samples come from ``telemetry/`` under the data roots of ``shared_data``; the
nanoGPT log is its first 640 rows (``tests/data/telemetry/README.md``).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from depth import examples
from hypothesis import given, settings, strategies as st

import pau
from pau import cli
from pau.figures import hardware as T
from pau.engine.types import QUARANTINE_SCHEMA
from pau.engine.vocab import KINDS
from pau.figures.cost import cost
from pau.errors import InvalidRowError, OptionError, PauError, SchemaError
from pau.readers import telemetry as R

sys.path.insert(0, str(Path(__file__).parent))
import lifecycle_cases as L  # noqa: E402
from shared_data import shared  # noqa: E402

S = 10**9
NANOGPT = ("telemetry", "nvidia_smi", "nanogpt_pr643_8gpu_power_util_250ms_head640.csv")
NANOGPT_COLUMNS = {"gpu_index": "index", "temperature_C": "temperature.gpu",
                   "utilization_gpu_percent": "utilization.gpu [%]", "power_W": "power.draw [W]"}


def _utc(y, mo, d, h, mi, s, ms=0) -> int:
    import calendar
    return (calendar.timegm((y, mo, d, h, mi, s)) * 1000 + ms) * 10**6


def _series(tel, rank, metric):
    s = tel.samples
    sel = s.filter(pc.and_(pc.equal(s["rank"], rank), pc.equal(s["metric"].cast(pa.string()), metric)))
    return sel["time_ns"].to_pylist(), sel["value"].to_pylist()


# ---------------------------------------------------------------------------
# the real formats


def test_nvidia_smi_native_csv():
    path = shared("telemetry", "nvidia_smi", "miris_v100s_native_csv_1s.csv")
    tel = R.read_telemetry(path)
    assert tel.format == "nvidia_smi"
    # 107 rows x 5 fields (utilization.gpu/.memory, memory.total/.used, temperature.gpu)
    assert tel.samples.num_rows == 535
    assert tel.devices.to_pylist() == [{"device": 0, "index": 0, "uuid": None, "bus_id": None,
                                        "name": "Tesla V100S-PCIE-32GB", "host": None, "source_file": str(path),
                                        "samples": 535}]
    t, v = _series(tel, 0, "gpu_util")
    # 2025/06/13 00:28:05.202, "9 %"; local time without a zone: taken as UTC, warned
    assert t[13] == _utc(2025, 6, 13, 0, 28, 5, 202) and v[13] == pytest.approx(0.09)
    assert t[0] == _utc(2025, 6, 13, 0, 27, 52, 195) and t[-1] == _utc(2025, 6, 13, 0, 29, 38, 248)
    _, used = _series(tel, 0, "mem_used_bytes")
    assert used[13] == 364 * 2**20
    assert _series(tel, 0, "mem_total_bytes")[1][0] == 32768 * 2**20
    assert [w.code for w in tel.warnings] == ["nvidia_smi.time_zone_assumed"]
    # the same log in UTC+02:00 is two hours earlier in UTC
    tz = R.read_telemetry(path, timezone="+02:00")
    assert _series(tz, 0, "gpu_util")[0][0] == t[0] - 2 * 3600 * S
    assert tz.warnings == []


def test_nvidia_smi_script_csv_with_columns():
    path = shared(*NANOGPT)
    tel = R.read_telemetry(path, format="nvidia_smi", columns=NANOGPT_COLUMNS)
    assert tel.devices["index"].to_pylist() == list(range(8))
    assert tel.devices["samples"].to_pylist() == [240] * 8      # 80 ticks x 3 fields
    t, p = _series(tel, 0, "power_w")
    assert t[0] == _utc(2025, 9, 24, 3, 48, 33, 493) and p[:3] == [387.26, 387.36, 387.42]
    assert t[-1] == _utc(2025, 9, 24, 3, 48, 55, 719) and p[-1] == 391.94
    assert _series(tel, 1, "power_w")[1][0] == 422.55
    assert _series(tel, 0, "gpu_util")[1][0] == 1.0 and _series(tel, 0, "gpu_temp_c")[1][0] == 38.0
    assert tel.warnings == []     # ISO-8601 with Z: no zone assumed
    with pytest.raises(R.TelemetryFormatError, match="matches no telemetry format"):
        R.read_telemetry(path)    # the script's own header is no nvidia-smi header


@pytest.mark.parametrize("name, power, n, unread", [
    ("k8s_ai_conformance_ericsson_T4_busy_scrape.prom", 68.244, 18, 2),
    ("k8s_ai_conformance_kops_L4_scrape.prom", 16.365, 18, 5),
    ("nvidia_docs_A100_MIG_dcgmproftester_scrape.prom", 409.692, 13, 4),
])
def test_dcgm_exporter_scrapes(name, power, n, unread):
    path = shared("telemetry", "dcgm_exporter", name)
    with pytest.raises(R.TelemetryFormatError, match="no time stamp.*time_ns="):
        R.read_telemetry(path)
    tel = R.read_telemetry(path, time_ns=1_000 * S)
    assert tel.format == "dcgm_exporter" and tel.samples.num_rows == n and tel.devices.num_rows == 1
    assert _series(tel, 0, "power_w") == ([1_000 * S], [power])
    not_read = [w for w in tel.warnings if w.code == "telemetry.fields_not_read"]
    assert len(not_read) == 1 and f": {unread} fields are not time signals" in not_read[0]


def test_dcgm_exporter_t4_values_and_identity():
    tel = R.read_telemetry(shared("telemetry", "dcgm_exporter", "k8s_ai_conformance_ericsson_T4_busy_scrape.prom"),
                           time_ns=0)
    d = tel.devices.to_pylist()[0]
    assert (d["index"], d["uuid"], d["bus_id"], d["name"], d["host"]) == (
        0, "6d5c0ac5-74d7-3130-46f1-e93ed57f469a", "0000:37:00.0", "Tesla T4", "cp-bm14r7")
    got = dict(zip(tel.samples["metric"].cast(pa.string()).to_pylist(), tel.samples["value"].to_pylist()))
    assert got["gpu_util"] == pytest.approx(0.91) and got["mem_util"] == pytest.approx(0.73)
    assert got["gr_engine_active"] == 0.156205 and got["tensor_active"] == 0.005822
    assert got["dram_active"] == 0.092781
    assert got["energy_j"] == pytest.approx(15_152_422.938)      # 15,152,422,938 mJ
    assert got["mem_used_bytes"] == 5120 * 2**20 and got["sm_clock_mhz"] == 660


def test_dcgm_mig_series_are_left_out_with_a_warning():
    tel = R.read_telemetry(shared("telemetry", "dcgm_exporter", "nvidia_docs_A100_MIG_dcgmproftester_scrape.prom"),
                           time_ns=0)
    mig = [w for w in tel.warnings if w.code == "dcgm.mig_series_left_out"]
    assert len(mig) == 1 and ": 3 samples of MIG instances" in mig[0]
    got = dict(zip(tel.samples["metric"].cast(pa.string()).to_pylist(), tel.samples["value"].to_pylist()))
    assert got["tensor_active"] == 0.92926 and got["gr_engine_active"] == 0.99563   # the whole GPU's


def test_amd_smi_watch_csv():
    tel = R.read_telemetry(shared("telemetry", "amd_smi", "inferencex_mi355x_amd_smi_metric_watch_head3s.csv"))
    assert tel.format == "amd_smi"
    assert tel.devices["index"].to_pylist() == list(range(8))
    # 3 ticks x 8 GPUs x 7 metrics (mm_activity is N/A throughout)
    assert tel.samples.num_rows == 168
    t, p = _series(tel, 0, "power_w")
    assert t == [1786553852 * S, 1786553853 * S, 1786553854 * S] and p == [238.0, 239.0, 238.0]
    assert _series(tel, 0, "gfx_clock_mhz")[1][0] == 102.25   # mean of 95 94 94 95 109 109 111 111
    assert _series(tel, 2, "power_w")[1] == [246.0, 246.0, 246.0]
    assert _series(tel, 0, "gpu_temp_c")[1][0] == 37.0 and _series(tel, 0, "memory_temp_c")[1][0] == 23.0
    assert _series(tel, 0, "gpu_util")[1] == [0.0, 0.0, 0.0]
    na = [w for w in tel.warnings if w.code == "telemetry.not_available"]
    assert len(na) == 1 and "mm_activity (24)" in na[0]


def test_amd_smi_energy_snapshots_are_refused():
    for name in ("inferencex_mi355x_energy_start.csv", "inferencex_mi355x_energy_end.csv"):
        with pytest.raises(R.TelemetryFormatError, match="energy snapshot.*without time stamps"):
            R.read_telemetry(shared("telemetry", "amd_smi", name))


def test_the_nsight_samples_have_no_gpu_metrics():
    path = shared("nsys", "icon_isc25", "gpu.sqlite")
    assert not R.has_gpu_metrics(str(path))
    assert pau.read(path).samples is None
    with pytest.raises(R.TelemetryFormatError, match="no GPU_METRICS"):
        R.read_nsys_gpu_metrics(path)


def _with_gpu_metrics(src: Path, dst: Path, rows: list, names: list) -> Path:
    shutil.copy(src, dst)
    dst.chmod(0o644)
    con = sqlite3.connect(dst)
    con.execute("CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER NOT NULL, sourceId INTEGER NOT NULL, "
                "typeName TEXT NOT NULL, metricId INTEGER NOT NULL, metricName TEXT NOT NULL)")
    con.execute("CREATE TABLE GPU_METRICS (timestamp INTEGER, typeId INTEGER NOT NULL, metricId INTEGER NOT NULL, "
                "value INTEGER NOT NULL)")
    con.executemany("INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?, ?, ?, ?, ?)", names)
    con.executemany("INSERT INTO GPU_METRICS VALUES (?, ?, ?, ?)", rows)
    con.commit()
    con.close()
    return dst


def test_nsys_gpu_metrics_table(tmp_path):
    src = shared("nsys", "icon_isc25", "gpu.sqlite")
    base = 1744298836266214360      # TARGET_INFO_SESSION_START_TIME.utcEpochNs of that export
    ty = 0x10000 | 0                 # GPU 0 in the low byte
    names = [(ty, 0, "GPU 0", 1, "SMs Active [Throughput %]"), (ty, 0, "GPU 0", 2, "Tensor Active [Throughput %]"),
             (ty, 0, "GPU 0", 3, "SM Issue [Throughput %]")]
    rows = [(0, ty, 1, 40), (100_000_000, ty, 1, 80), (0, ty, 2, 10), (100_000_000, ty, 2, 30),
            (0, ty, 3, 5)]
    db = _with_gpu_metrics(src, tmp_path / "gm.sqlite", rows, names)
    tel = R.read_telemetry(db)
    assert tel.format == "nsys_gpu_metrics"
    d = tel.devices.to_pylist()[0]
    assert (d["index"], d["uuid"], d["bus_id"], d["name"]) == (0, "42588b38-60a5-e756-6c8a-27285ef89d7b",
                                                               "0000:01:00.0", "NVIDIA GeForce RTX 4070 SUPER")
    assert _series(tel, 0, "sm_active") == ([base, base + 100_000_000], [0.4, 0.8])
    assert any(w.code == "telemetry.fields_not_read" and "SM Issue" in w for w in tel.warnings)
    # pau.read attaches them by itself, matched by UUID to the trace's rank of GPU 0
    run = pau.read(db)
    assert run.metadata["telemetry"]["matched_by"] == "uuid"
    assert run.samples.num_rows == 4 and set(run.samples["rank"].to_pylist()) == {0}
    # a unit other than Nsight's is refused
    bad = _with_gpu_metrics(src, tmp_path / "bad.sqlite", rows[:1], [(ty, 0, "GPU 0", 1, "SMs Active [MHz]")])
    with pytest.raises(SchemaError, match=r"\[MHz\], not in \[Throughput %\]"):
        R.read_nsys_gpu_metrics(bad)
    # a value above 100 % is set aside, located as the Nsight reader locates a row
    over = _with_gpu_metrics(src, tmp_path / "over.sqlite", [(0, ty, 1, 40), (100_000_000, ty, 1, 150)], names[:1])
    tel = R.read_nsys_gpu_metrics(over, on_invalid="quarantine")
    assert _series(tel, 0, "sm_active") == ([base], [0.4])
    assert [(r["source_file"], r["location"]) for r in tel.quarantine.to_pylist()] == [
        (str(over), "table GPU_METRICS rowid 2")]    # the second row inserted
    assert "sm_active is 1.5, above 1" in tel.quarantine["reason"][0].as_py()


def test_dcgmi_dmon_output(tmp_path):
    text = ("#Entity   POWER    TOTEC      SMACT   TENSO\n"
            "ID        W        mJ\n"
            "GPU 0     100.000  1000000    0.500   0.250\n"
            "GPU 1     200.000  2000000    N/A     0.125\n"
            "GPU 0     300.000  1002000    0.750   0.375\n"
            "#Entity   POWER    TOTEC      SMACT   TENSO\n"
            "ID        W        mJ\n"
            "GPU 1     250.000  2002250    1.000   0.625\n")
    path = tmp_path / "dmon.txt"
    path.write_text(text)
    with pytest.raises(OptionError, match="start_ns= .* interval_ns="):
        R.read_telemetry(path)
    tel = R.read_telemetry(path, start_ns=10 * S, interval_ns=S)
    assert tel.format == "dcgmi_dmon"
    assert _series(tel, 0, "power_w") == ([10 * S, 11 * S], [100.0, 300.0])
    assert _series(tel, 1, "energy_j") == ([10 * S, 11 * S], [2000.0, 2002.25])
    assert _series(tel, 1, "sm_active") == ([11 * S], [1.0])
    with pytest.raises(OptionError, match="start_ns= .* interval_ns="):
        R.read_telemetry(path, start_ns=1.5, interval_ns=S)  # an int of ns, never truncated
    top = 2**63 - 1 - S // 2   # the first block fits int64 ns, the second does not
    with pytest.raises(InvalidRowError, match=r"block 1 is taken at \d+ ns, past int64 ns"):
        R.read_telemetry(path, start_ns=top, interval_ns=S)
    path.write_text(text.replace("mJ", "J "))
    with pytest.raises(SchemaError, match="TOTEC.*'J'"):
        R.read_telemetry(path, start_ns=0, interval_ns=S)


def test_prometheus_query_range_json(tmp_path):
    path = tmp_path / "q.json"
    path.write_text('{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":'
                    '"DCGM_FI_DEV_POWER_USAGE","gpu":"3","UUID":"GPU-AB","Hostname":"n1"},"values":'
                    '[[1700000000.125,"100.5"],[1700000015.125,"200"]]},{"metric":{"__name__":"up"},'
                    '"values":[[1700000000,"1"]]}]}}')
    tel = R.read_telemetry(path)
    assert tel.format == "prometheus_json"
    assert _series(tel, 0, "power_w") == ([1700000000125000000, 1700000015125000000], [100.5, 200.0])
    assert tel.devices.to_pylist()[0]["uuid"] == "ab" and tel.devices.to_pylist()[0]["host"] == "n1"
    path.write_text(path.read_text()[:80])
    with pytest.raises(R.TelemetryFormatError, match="not JSON.*truncated"):
        R.read_telemetry(path, format="prometheus_json")


# ---------------------------------------------------------------------------
# cell metrics: hand-worked


def _one_step_run():
    """1 rank, seconds: init 0-10, step 1 at 10-30 (compute 12-28), the attempt runs to 40."""
    lc = L.table([dict(record="accountable", rank=0, start=0, end=40),
                  dict(record="attempt", attempt=0, rank=-1, start=0, end=40, kind="completed"),
                  dict(record="phase", attempt=0, rank=0, start=0, end=10, kind="init"),
                  dict(record="step", attempt=0, rank=0, step=1, start=10, end=30)])
    ev = pa.table({"rank": pa.array([0], pa.int32()), "stream": pa.array([0], pa.int32()),
                   "start_ns": pa.array([12 * S], pa.int64()), "end_ns": pa.array([28 * S], pa.int64()),
                   "kind": ["compute"]})
    return ev, lc, pau.core.ledger(ev, lc)


def _cells(table):
    return {(r["state"], r["activity"], r["metric"]): r for r in table.to_pylist()}


def test_mean_over_a_cell_cut_by_a_sample_boundary():
    ev, lc, led = _one_step_run()
    # sm_active at 0, 20, 40 s: each value is the mean of the period before it, so
    # 0.5 holds over [0, 20) and 1.0 over [20, 40); the sample at 20 cuts the cell
    # productive x compute = [12, 28): (8 x 0.5 + 8 x 1.0) / 16 = 0.75
    samples = {"rank": [0, 0, 0], "time_ns": [0, 20 * S, 40 * S], "metric": ["sm_active"] * 3,
               "value": [0.25, 0.5, 1.0]}
    c = _cells(T.cell_metrics(led, samples, events=ev))
    pc_ = c[("productive", "compute", "sm_active")]
    assert (pc_["duration_ns"], pc_["covered_ns"], pc_["unknown_ns"], pc_["mean"]) == (16 * S, 16 * S, 0, 0.75)
    assert pc_["energy_j"] is None
    assert c[("productive", "idle", "sm_active")]["mean"] == 0.75          # [10, 12) and [28, 30)
    assert c[("initialization", "idle", "sm_active")]["mean"] == 0.5        # [0, 10)
    assert c[("unattributed", "idle", "sm_active")]["mean"] == 1.0          # [30, 40)


def test_power_is_piecewise_linear_and_energy_exact():
    ev, lc, led = _one_step_run()
    # 100 W at 0 s, 300 W at 40 s: P(t) = 100 + 5 t; productive x compute [12, 28):
    # (160 + 240) / 2 x 16 s = 3,200 J; initialization [0, 10): (100 + 150) / 2 x 10 = 1,250 J
    samples = {"rank": [0, 0], "time_ns": [0, 40 * S], "metric": ["power_w"] * 2, "value": [100.0, 300.0]}
    c = _cells(T.cell_metrics(led, samples, events=ev))
    assert c[("productive", "compute", "power_w")]["energy_j"] == 3200.0
    assert c[("productive", "compute", "power_w")]["mean"] == 200.0
    assert c[("initialization", "idle", "power_w")]["energy_j"] == 1250.0
    whole = T.cell_metrics(led, samples, events=ev, by=()).to_pylist()
    assert whole == [{"metric": "power_w", "duration_ns": 40 * S, "covered_ns": 40 * S, "unknown_ns": 0,
                      "mean": 200.0, "energy_j": 8000.0}]


def test_rolled_back_energy_agrees_with_economics():
    led = pau.core.ledger(lifecycle=L.example_a())
    # P(t) = 100 + t W over DESIGN's example A (0-210 s); rolled back [70, 105):
    # 35 s x (170 + 205) / 2 = 6,562.5 J
    samples = {"rank": [0, 0], "time_ns": [0, 210 * S], "metric": ["power_w"] * 2, "value": [100.0, 310.0]}
    # two samples 210 s apart: beyond the default 60 s bound, so nothing is covered...
    assert T.cell_metrics(led, samples, by=()).to_pylist()[0]["covered_ns"] == 0
    # ...unless the gap is allowed (economics.cost interpolates every gap)
    by_state = {r["state"]: r for r in T.cell_metrics(led, samples, by=("state",), max_gap_ns=None).to_pylist()}
    assert by_state["rolled_back"]["energy_j"] == 6562.5
    assert by_state["rolled_back"]["duration_ns"] == 35 * S
    # the same integral through economics.cost (the one rule, pau.figures.hardware.integrate)
    e = cost(led, {"per_accelerator_hour": 1.0}, power={"rank": [0, 0], "time_ns": [0, 210 * S],
                                                      "watts": [100.0, 310.0]})
    assert e["energy_by_state_j"]["rolled_back"] == 6562.5
    assert sum(r["energy_j"] for r in by_state.values()) == pytest.approx(e["energy_j"])


def test_gaps_and_the_ends_are_unknown():
    ev, lc, led = _one_step_run()
    # samples at 5, 15 and 35 s with max_gap 15 s: [15, 35) is a 20 s gap -> unknown;
    # so are [0, 5) before the first sample and [35, 40) after the last
    samples = {"rank": [0] * 3, "time_ns": [5 * S, 15 * S, 35 * S], "metric": ["power_w"] * 3,
               "value": [100.0, 200.0, 300.0]}
    whole = T.cell_metrics(led, samples, events=ev, by=(), max_gap_ns=15 * S).to_pylist()[0]
    assert (whole["covered_ns"], whole["unknown_ns"]) == (10 * S, 30 * S)
    assert whole["energy_j"] == 1500.0 and whole["mean"] == 150.0        # [5, 15) only
    # without a bound the gap is interpolated: [5, 35) covered
    free = T.cell_metrics(led, samples, events=ev, by=(), max_gap_ns=None).to_pylist()[0]
    assert (free["covered_ns"], free["unknown_ns"]) == (30 * S, 10 * S)
    c = _cells(T.cell_metrics(led, samples, events=ev, max_gap_ns=15 * S))
    assert c[("productive", "compute", "power_w")]["covered_ns"] == 3 * S      # [12, 15)
    # an interval series covers nothing before its second sample: [5, 15) and nothing else
    util = {**samples, "metric": ["gpu_util"] * 3, "value": [0.25, 0.5, 0.75]}
    u = T.cell_metrics(led, util, events=ev, by=(), max_gap_ns=15 * S).to_pylist()[0]
    assert (u["covered_ns"], u["mean"]) == (10 * S, 0.5)
    # a rank without samples is unknown throughout
    none = T.cell_metrics(led, {"rank": [5], "time_ns": [0], "metric": ["power_w"], "value": [1.0]},
                          events=ev, by=()).to_pylist()[0]
    assert (none["covered_ns"], none["mean"], none["energy_j"]) == (0, None, 0.0)


def test_counter_energy_and_a_reset():
    ev, lc, led = _one_step_run()
    # energy counter 1,000 J at 0 s, 9,000 J at 40 s: 200 W throughout
    samples = {"rank": [0, 0], "time_ns": [0, 40 * S], "metric": ["energy_j"] * 2, "value": [1000.0, 9000.0]}
    c = _cells(T.cell_metrics(led, samples, events=ev))
    assert c[("productive", "compute", "energy_j")]["energy_j"] == 3200.0
    assert c[("productive", "compute", "energy_j")]["mean"] == 200.0
    # the counter goes down at 20 s (a reset): [10, 20) is unknown, not a negative energy
    reset = {"rank": [0] * 3, "time_ns": [0, 10 * S, 20 * S], "metric": ["energy_j"] * 3,
             "value": [1000.0, 3000.0, 5.0]}
    w = T.cell_metrics(led, reset, events=ev, by=()).to_pylist()[0]
    assert (w["covered_ns"], w["energy_j"]) == (10 * S, 2000.0)


def test_windows_of_an_events_only_ledger():
    ev = pa.table({"rank": pa.array([0, 0], pa.int32()), "stream": pa.array([0, 0], pa.int32()),
                   "start_ns": pa.array([0, 30 * S], pa.int64()), "end_ns": pa.array([25 * S, 40 * S], pa.int64()),
                   "kind": ["compute", "memcpy"]})
    led = pau.core.ledger(ev, windows=20 * S)
    samples = {"rank": [0, 0], "time_ns": [0, 40 * S], "metric": ["power_w"] * 2, "value": [0.0, 400.0]}
    rows = {(r["window"], r["activity"]): r for r in T.cell_metrics(led, samples, events=ev, windows=20 * S)
            .to_pylist()}
    assert rows[(0, "compute")]["energy_j"] == 2000.0          # [0, 20): P = 10 t
    assert rows[(20 * S, "compute")]["energy_j"] == 1125.0     # [20, 25): 5 x 225
    assert rows[(20 * S, "memcpy")]["energy_j"] == 3500.0      # [30, 40): 10 x 350
    with pytest.raises(PauError, match="windows"):
        T.cell_metrics(led, samples, events=ev)


def test_the_cells_must_be_the_ledgers():
    ev, lc, led = _one_step_run()
    other = ev.set_column(3, "end_ns", pa.array([29 * S], pa.int64()))
    with pytest.raises(PauError, match="holds .* ns from the events given .* in the ledger"):
        T.cell_intervals(led, other)
    with pytest.raises(PauError, match="pass the events"):
        T.cell_intervals(led)


# ---------------------------------------------------------------------------
# a real log joined to a ledger


def _run_over(tel, ranks: int) -> pau.Run:
    """A lifecycle over the telemetry's time: each rank accountable from the first to the
    last sample, one completed attempt, one step over the middle half."""
    t0 = pc.min(tel.samples["time_ns"]).as_py()
    t1 = pc.max(tel.samples["time_ns"]).as_py()
    q = (t1 - t0) // 4
    rows = []
    for r in range(ranks):
        rows += [dict(record="accountable", rank=r, start_ns=t0, end_ns=t1),
                 dict(record="attempt", attempt=0, rank=r, start_ns=t0, end_ns=t1, kind="completed"),
                 dict(record="step", attempt=0, rank=r, step=1, start_ns=t0 + q, end_ns=t1 - q)]
    lc = pa.table({c: pa.array([x.get(c) for x in rows], ty) for c, ty in L.COLUMNS.items()})
    ranks_meta = [{"rank": r, "device": r} for r in range(ranks)]
    return pau.Run(lifecycle=lc, spans=pa.table({"rank": pa.array(range(ranks), pa.int32()),
                                                 "start_ns": [t0] * ranks, "end_ns": [t1] * ranks}),
                   metadata={"format": "pau", "ranks": ranks_meta, "assumed": []})


def test_nanogpt_log_joined_to_a_ledger(tmp_path):
    tel = R.read_telemetry(shared(*NANOGPT), format="nvidia_smi", columns=NANOGPT_COLUMNS)
    run = _run_over(tel, 8)
    folder = run.write(tmp_path / "run")
    got = pau.read(folder, samples=tel)           # matched by the ranks' GPU index
    assert got.metadata["telemetry"]["matched_by"] == "index"
    assert any("CUDA_VISIBLE_DEVICES" in a for a in got.metadata["assumed"])
    led = got.ledger()
    cells = T.cell_metrics(led, got.samples, max_gap_ns=2 * S)
    rank0 = [r for r in cells.to_pylist() if r["rank"] == 0 and r["metric"] == "power_w"]
    # the whole of rank 0 is covered (0.29-0.30 s between samples); its energy is the
    # trapezoid sum of the log's own rows
    t, p = _series(tel, 0, "power_w")
    trapezoids = sum((t[i + 1] - t[i]) * (p[i] + p[i + 1]) / 2 for i in range(len(t) - 1)) / 1e9
    assert sum(r["unknown_ns"] for r in rank0) == 0
    assert sum(r["energy_j"] for r in rank0) == pytest.approx(trapezoids, rel=1e-12)
    assert sum(r["duration_ns"] for r in rank0) == t[-1] - t[0]
    # and the run round-trips with its samples
    again = got.write(tmp_path / "again")
    back = pau.read(again)
    assert back == got and back.samples.equals(got.samples)


def test_amd_log_joined_to_a_ledger():
    tel = R.read_telemetry(shared("telemetry", "amd_smi", "inferencex_mi355x_amd_smi_metric_watch_head3s.csv"))
    run = pau.run.attach_samples(_run_over(tel, 8), tel)
    whole = {(r["rank"], r["metric"]): r for r in T.cell_metrics(run.ledger(), run.samples, by=("rank",))
             .to_pylist()}
    # GPU 0: 238, 239, 238 W at 1 s ticks: (238.5 + 238.5) J over 2 s
    assert whole[(0, "power_w")]["energy_j"] == 477.0 and whole[(0, "power_w")]["mean"] == 238.5
    assert whole[(2, "power_w")]["energy_j"] == 492.0           # 246 W flat
    assert whole[(0, "gpu_util")]["mean"] == 0.0
    assert whole[(0, "gpu_util")]["covered_ns"] == 2 * S


# ---------------------------------------------------------------------------
# devices to ranks


def _devices(rows):
    return pa.Table.from_pylist([{"device": i, "index": None, "uuid": None, "bus_id": None, "name": None,
                                  "host": None, "source_file": None, "samples": 1, **r} for i, r in enumerate(rows)],
                                schema=R.DEVICES_SCHEMA)


def test_match_by_uuid_then_bus_then_index():
    devs = _devices([{"index": 0, "uuid": "aa", "bus_id": "0000:01:00.0"},
                     {"index": 1, "uuid": "bb", "bus_id": "0000:02:00.0"}])
    ranks = [{"rank": 0, "uuid": "GPU-BB"}, {"rank": 1, "uuid": "GPU-AA"}]
    assert T.match_devices(devs, ranks)[:2] == ({1: 0, 0: 1}, "uuid")
    ranks = [{"rank": 5, "bus_id": "00000000:02:00.0"}]
    assert T.match_devices(devs, ranks)[:2] == ({1: 5}, "bus_id")
    ranks = [{"rank": 3, "device": 1}, {"rank": 4, "device": 0}]
    assert T.match_devices(devs, ranks)[:2] == ({1: 3, 0: 4}, "index")
    assert T.match_devices(devs, None, mapping="index")[:2] == ({0: 0, 1: 1}, "index")
    assert T.match_devices(devs, None, mapping={"GPU-aa": 7, 1: 8})[:2] == ({0: 7, 1: 8}, "devices")


def test_ambiguous_matches_are_refused():
    two_hosts = _devices([{"index": 0, "host": "a"}, {"index": 0, "host": "b"}])
    with pytest.raises(OptionError, match="GPU index 0 names 2 devices.*host a.*host b.*Fix: pass devices="):
        T.match_devices(two_hosts, [{"rank": 0, "device": 0}])
    assert T.match_devices(two_hosts, None, mapping={("a", 0): 0, ("b", 0): 1})[0] == {0: 0, 1: 1}
    one = _devices([{"index": 0}])
    with pytest.raises(OptionError, match="ranks 0 and 8 both name GPU index 0"):
        T.match_devices(one, [{"rank": 0, "device": 0}, {"rank": 8, "device": 0}])
    with pytest.raises(OptionError, match="names no accelerator per rank"):
        T.match_devices(one, [{"rank": 0}])
    with pytest.raises(OptionError, match="'GPU-zz' names no device"):
        T.match_devices(one, None, mapping={"GPU-zz": 0})
    with pytest.raises(OptionError, match="rank 0 is given two devices"):
        T.match_devices(two_hosts, None, mapping={("a", 0): 0, ("b", 0): 0})


def test_unmatched_devices_and_ranks_are_warned():
    tel = R.read_telemetry(shared("telemetry", "amd_smi", "inferencex_mi355x_amd_smi_metric_watch_head3s.csv"))
    run = _run_over(tel, 8)
    run.metadata["ranks"] = [{"rank": 0, "device": 0}, {"rank": 1, "device": 9}]
    pau.run.attach_samples(run, tel)
    codes = {w.code: w for w in run.warnings}
    assert "7 telemetry devices match no rank" in codes["telemetry.devices_unmatched"]
    assert "ranks 1 have no telemetry device" in codes["telemetry.ranks_without_samples"]
    assert set(run.samples["rank"].to_pylist()) == {0} and run.samples.num_rows == 21


def test_read_options_for_samples(tmp_path):
    tel = R.read_telemetry(shared("telemetry", "amd_smi", "inferencex_mi355x_amd_smi_metric_watch_head3s.csv"))
    folder = _run_over(tel, 8).write(tmp_path / "r")
    with pytest.raises(OptionError, match="give the telemetry too"):
        pau.read(folder, devices="index")
    run = pau.read(folder, samples=shared("telemetry", "amd_smi", "inferencex_mi355x_amd_smi_metric_watch_head3s.csv"),
                   devices="index")
    assert run.metadata["telemetry"]["matched_by"] == "index" and run.samples.num_rows == 168
    with pytest.raises(OptionError, match="holds samples already"):
        pau.run.attach_samples(run, tel)
    table = pau.read(folder, samples={"rank": [0], "time_ns": [0], "metric": ["power_w"], "value": [1.0]})
    assert table.samples.num_rows == 1


# ---------------------------------------------------------------------------
# the bad-input matrix


BAD_TABLES = [
    ("out of order", [(0, 20, "power_w", 1.0), (0, 10, "power_w", 2.0)], "time_ns", 1, "out of order"),
    ("duplicate", [(0, 10, "power_w", 1.0), (0, 10, "power_w", 2.0)], "time_ns", 1, "a second power_w sample"),
    ("NaN", [(0, 10, "power_w", float("nan"))], "value", 0, "NaN or infinite"),
    ("negative", [(0, 10, "sm_clock_mhz", 5.0), (0, 20, "power_w", -3.0)], "value", 1, "below 0 W"),
    ("ratio above 1", [(0, 10, "sm_active", 61.0)], "value", 0, "above 1"),
    ("unknown metric", [(0, 10, "power_kw", 1.0)], "metric", 0, "unknown metric 'power_kw'"),
    ("null", [(0, None, "power_w", 1.0)], "time_ns", 0, "null time_ns"),
]


def _table(rows):
    return pa.table({"rank": pa.array([r[0] for r in rows], pa.int32()),
                     "time_ns": pa.array([r[1] for r in rows], pa.int64()),
                     "metric": [r[2] for r in rows], "value": pa.array([r[3] for r in rows], pa.float64())})


@pytest.mark.parametrize("case, rows, column, row, reason", BAD_TABLES, ids=[c[0] for c in BAD_TABLES])
def test_bad_samples_table(case, rows, column, row, reason):
    with pytest.raises(InvalidRowError, match="Fix: ") as err:
        R.check_samples(_table(rows))
    assert (err.value.table, err.value.column, err.value.row) == ("samples", column, row)
    assert reason in err.value.reason
    assert R.check_samples(_table([(0, 1, "power_w", 1.0)]))[1].equals(QUARANTINE_SCHEMA.empty_table())
    clean, q = R.check_samples(_table(rows), on_invalid="quarantine")
    assert q.schema == QUARANTINE_SCHEMA     # an in-memory table: no file
    assert q["source_file"].to_pylist() == [None] and q["location"].to_pylist() == [f"row {row}"]
    assert q["reason"][0].as_py().startswith(f"column {column}: ") and reason in q["reason"][0].as_py()
    assert clean.num_rows == len(rows) - 1
    # the same through cell_metrics
    ev, lc, led = _one_step_run()
    with pytest.raises(InvalidRowError):
        T.cell_metrics(led, _table(rows), events=ev)
    table, quarantine = T.cell_metrics(led, _table(rows), events=ev, on_invalid="quarantine")
    assert quarantine.num_rows == 1


NVSMI_HEAD = "timestamp, index, power.draw [W], utilization.gpu [%]\n"
BAD_FILES = [
    ("unknown unit in the header", NVSMI_HEAD.replace("[W]", "[mW]") + "2025/01/01 00:00:00.000, 0, 5 mW, 1 %\n",
     SchemaError, r"power.draw \[mW\].*is in 'mW', not in 'W'"),
    ("unknown unit in a value", NVSMI_HEAD + "2025/01/01 00:00:00.000, 0, 387 mW, 1 %\n",
     InvalidRowError, r"column 'power.draw', row 2: '387 mW' is in 'mW', not 'W'"),
    ("truncated", NVSMI_HEAD + "2025/01/01 00:00:00.000, 0, 300 W, 1 %\n2025/01/01 00:00:01.000, 0, 30",
     InvalidRowError, r"row 3: the line has 3 fields, the header 4"),
    ("NaN", NVSMI_HEAD + "2025/01/01 00:00:00.000, 0, nan W, 1 %\n", InvalidRowError, r"row 2: power_w is nan"),
    ("negative", NVSMI_HEAD + "2025/01/01 00:00:00.000, 0, -5 W, 1 %\n", InvalidRowError,
     r"row 2: power_w is -5.0, below 0 W"),
    ("over 100 %", NVSMI_HEAD + "2025/01/01 00:00:00.000, 0, 5 W, 101 %\n", InvalidRowError,
     r"row 2: gpu_util is 1.01, above 1"),
    ("duplicate", NVSMI_HEAD + "2025/01/01 00:00:00.000, 0, 5 W, 1 %\n2025/01/01 00:00:00.000, 0, 6 W, 1 %\n",
     InvalidRowError, r"column 'time_ns', row 3: a second power_w sample"),
    ("out of order", NVSMI_HEAD + "2025/01/01 00:00:01.000, 0, 5 W, 1 %\n2025/01/01 00:00:00.000, 0, 6 W, 1 %\n",
     InvalidRowError, r"row 3: power_w at time_ns \d+ is earlier"),
    ("bad time", NVSMI_HEAD + "yesterday, 0, 5 W, 1 %\n", InvalidRowError, r"column 'timestamp', row 2"),
]


@pytest.mark.parametrize("case, text, exc, match", BAD_FILES, ids=[c[0] for c in BAD_FILES])
def test_bad_nvidia_smi_files(tmp_path, case, text, exc, match):
    path = tmp_path / "log.csv"
    path.write_text(text)
    with pytest.raises(exc, match=match) as err:
        R.read_nvidia_smi(path, timezone="UTC")
    assert str(path) in str(err.value) and "Fix: " in str(err.value)
    if exc is InvalidRowError:
        tel = R.read_nvidia_smi(path, timezone="UTC", on_invalid="quarantine")
        assert tel.quarantine.num_rows >= 1
        assert tel.quarantine["source_file"][0].as_py() == str(path)
        assert tel.quarantine["location"][0].as_py().startswith("line ")
        assert any(w.code == "telemetry.samples_set_aside" for w in tel.warnings)


def test_bad_dcgm_and_amd_files(tmp_path):
    real = shared("telemetry", "dcgm_exporter", "k8s_ai_conformance_kops_L4_scrape.prom").read_text()
    p = tmp_path / "s.prom"
    p.write_text(real.replace("Power draw (in W)", "Power draw (in mW)"))
    with pytest.raises(SchemaError, match="DCGM_FI_DEV_POWER_USAGE.*'mW'"):
        R.read_telemetry(p, time_ns=0)
    p.write_text(real[: real.index("DCGM_FI_DEV_POWER_USAGE{") + 40])     # cut inside the labels
    with pytest.raises(InvalidRowError, match=r"row 15: not a sample line"):
        R.read_telemetry(p, time_ns=0)
    assert R.read_telemetry(p, time_ns=0, on_invalid="quarantine").quarantine["location"].to_pylist() == ["line 15"]
    amd = shared("telemetry", "amd_smi", "inferencex_mi355x_amd_smi_metric_watch_head3s.csv").read_text()
    p = tmp_path / "a.csv"
    p.write_text(amd[:-200])       # the last line cut short
    with pytest.raises(InvalidRowError, match=r"row 27: the line has \d+ fields, the header 114"):
        R.read_telemetry(p)
    tel = R.read_telemetry(p, on_invalid="quarantine")
    assert tel.samples.num_rows == 161 and tel.quarantine["location"].to_pylist() == ["line 27"]


def test_quarantine_reaches_the_run(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(NVSMI_HEAD + "2025/01/01 00:00:00.000, 0, 5 W, 1 %\n2025/01/01 00:00:01.000, 0, -1 W, 2 %\n")
    tel = R.read_nvidia_smi(path, timezone="UTC", on_invalid="quarantine")
    run = pau.run.attach_samples(pau.Run(metadata={"ranks": [{"rank": 0, "device": 0}]}), tel)
    assert run.quarantine.to_pylist() == [{"source_file": str(path), "location": "line 3",
                                           "reason": "column power.draw: power_w is -1.0, below 0 W (board (NVIDIA) "
                                                     "or socket (AMD) power draw cannot be negative)"}]
    assert run.samples.num_rows == 3


# ---------------------------------------------------------------------------
# the integral and the cells against slow, obviously correct twins


def _slow_cells(events, span, priority=KINDS):
    """Per ns of the span: the highest-priority kind running, or idle."""
    out = {}
    for t in range(span[0], span[1]):
        running = {k for s, e, k in events if s <= t < e}
        kind = next((k for k in priority if k in running), "idle")
        out[t] = kind
    return out


def _slow_value(kind, samples, t, max_gap):
    """The exact integral of the signal over [t, t + 1) (a Fraction), or None."""
    ts = [s for s, _ in samples]
    for i in range(len(ts) - 1):
        a, b = ts[i], ts[i + 1]
        if a <= t < b and b - a <= max_gap:
            va, vb = Fraction(samples[i][1]), Fraction(samples[i + 1][1])
            if kind == "interval":
                return vb
            v = lambda x: va + (vb - va) * Fraction(x - a, b - a)  # noqa: E731
            return (v(t) + v(t + 1)) / 2
    return None


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 15), st.sampled_from(KINDS)), max_size=6),
       st.lists(st.tuples(st.integers(0, 50), st.integers(0, 8)), min_size=1, max_size=8, unique_by=lambda x: x[0]),
       st.sampled_from(["power_w", "gpu_util"]), st.integers(1, 20))
def test_cell_metrics_match_a_per_ns_twin(evs, pts, metric, max_gap):
    events = [(s, s + d, k) for s, d, k in evs]
    span = (0, 50)
    ev = pa.table({"rank": pa.array([0] * len(events), pa.int32()), "stream": pa.array([0] * len(events), pa.int32()),
                   "start_ns": pa.array([e[0] for e in events], pa.int64()),
                   "end_ns": pa.array([e[1] for e in events], pa.int64()), "kind": pa.array([e[2] for e in events],
                                                                                          pa.string())})
    sp = pa.table({"rank": pa.array([0], pa.int32()), "start_ns": [span[0]], "end_ns": [span[1]]})
    led = pau.core.ledger(ev, span=sp)
    pts = sorted(pts)
    scale = 1.0 if metric == "power_w" else 0.125
    samples = {"rank": [0] * len(pts), "time_ns": [p[0] for p in pts], "metric": [metric] * len(pts),
               "value": [p[1] * scale for p in pts]}
    got = {r["activity"]: r for r in T.cell_metrics(led, samples, events=ev, span=sp, max_gap_ns=max_gap)
           .to_pylist()}
    kinds = _slow_cells(events, span)
    kind = R.METRICS[metric].kind
    want: dict = {}
    for t, act in kinds.items():
        w = want.setdefault(act, [0, 0, Fraction(0)])
        w[0] += 1
        v = _slow_value(kind, [(p[0], Fraction(p[1]) * Fraction(scale)) for p in pts], t, max_gap)
        if v is not None:
            w[1] += 1
            w[2] += v
    assert set(got) == set(want)
    for act, (dur, cov, integral) in want.items():
        r = got[act]
        assert (r["duration_ns"], r["covered_ns"], r["unknown_ns"]) == (dur, cov, dur - cov)
        if cov:
            assert r["mean"] == pytest.approx(float(integral / cov), rel=1e-12, abs=1e-12)
        else:
            assert r["mean"] is None


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.tuples(st.integers(-30, 30), st.integers(1, 10), st.integers(0, 9), st.integers(0, 9)),
                max_size=6),
       st.lists(st.tuples(st.integers(-40, 40), st.integers(0, 20)), min_size=1, max_size=5))
def test_integrate_matches_a_per_ns_twin(segs, queries):
    # disjoint segments: each starts after the last one's end
    s, e, a, b = [], [], [], []
    at = -50
    for gap, length, v0, v1 in segs:
        at += abs(gap) % 5
        s.append(at)
        e.append(at + length)
        a.append(float(v0))
        b.append(float(v1))
        at += length
    qs = [q[0] for q in queries]
    qe = [q[0] + q[1] for q in queries]
    got, cov = T.integrate(np.zeros(len(s), np.int64), np.array(s, np.int64), np.array(e, np.int64), np.array(a),
                           np.array(b), np.zeros(len(qs), np.int64), np.array(qs, np.int64), np.array(qe, np.int64))
    for k in range(len(qs)):
        want, n = Fraction(0), 0
        for t in range(qs[k], qe[k]):
            for i in range(len(s)):
                if s[i] <= t < e[i]:
                    v = lambda x: Fraction(a[i]) + (Fraction(b[i]) - Fraction(a[i])) * Fraction(x - s[i], e[i] - s[i])  # noqa: E731,B023
                    want += (v(t) + v(t + 1)) / 2
                    n += 1
        assert cov[k] == n
        assert got[k] == pytest.approx(float(want), rel=1e-12, abs=1e-9)


def test_schema_round_trip_keeps_the_dictionary(tmp_path):
    clean, _ = R.check_samples({"rank": [1, 0], "time_ns": [5, 3], "metric": ["power_w", "sm_active"],
                                "value": [1.0, 0.5]})
    assert clean.schema.equals(R.SAMPLES_SCHEMA)
    assert clean.to_pylist() == [{"rank": 0, "time_ns": 3, "metric": "sm_active", "value": 0.5},
                                 {"rank": 1, "time_ns": 5, "metric": "power_w", "value": 1.0}]
    run = pau.Run(samples=clean, metadata={"format": "pau"})
    back = pau.read(run.write(tmp_path / "r"))
    assert back.samples.schema.equals(R.SAMPLES_SCHEMA) and back == run


def test_aligned_runs_move_their_samples(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(NVSMI_HEAD + "2025/01/01 00:00:00.000, 0, 5 W, 1 %\n2025/01/01 00:00:00.000, 1, 6 W, 2 %\n")
    tel = R.read_nvidia_smi(path, timezone="UTC")
    al = {"method": "collectives", "reference_rank": 0, "names_left_out": 0,
          "ranks": [{"rank": 0, "offset_ns": 0, "uncertainty_ns": 0, "anchors": 3},
                    {"rank": 1, "offset_ns": 500, "uncertainty_ns": 10, "anchors": 3}]}
    run = pau.run.attach_samples(pau.Run(metadata={"ranks": [{"rank": 0, "device": 0}, {"rank": 1, "device": 1}],
                                                   "alignment": al}), tel)
    t0 = _utc(2025, 1, 1, 0, 0, 0)
    got = {(r["rank"], r["metric"]): r["time_ns"] for r in run.samples.to_pylist()}
    assert got == {(0, "gpu_util"): t0, (0, "power_w"): t0, (1, "gpu_util"): t0 - 500, (1, "power_w"): t0 - 500}


def test_report_shows_the_telemetry_figures_of_the_summary(tmp_path, capsys):
    path = shared("telemetry", "amd_smi", "inferencex_mi355x_amd_smi_metric_watch_head3s.csv")
    tel = R.read_telemetry(path)
    folder = _run_over(tel, 8).write(tmp_path / "run")
    api = pau.read(folder, samples=str(path)).summary()["telemetry"]
    assert api and {r["metric"] for r in api} >= {"power_w", "gpu_util"}
    assert cli.main(["report", folder, "--samples", str(path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["telemetry"] == api
    assert cli.main(["report", folder, "--samples", str(path)]) == 0
    text = capsys.readouterr().out
    assert "hardware telemetry by state and activity" in text
    # energy of the whole job: the per-rank energies of test_amd_log_joined_to_a_ledger, summed
    power = [r for r in api if r["metric"] == "power_w"]
    assert sum(r["energy_j"] for r in power) == pytest.approx(sum(
        r["energy_j"] for r in T.cell_metrics(pau.read(folder, samples=str(path)).ledger(),
                                              pau.read(folder, samples=str(path)).samples, by=("rank",)).to_pylist()
        if r["metric"] == "power_w"), rel=1e-12)
    assert cli.main(["report", folder, "--devices", "index"]) == 2
    assert "give --samples too" in capsys.readouterr().err
