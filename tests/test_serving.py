"""pau.readers.serving: vLLM / AIPerf / LLMPerf / GenAI-Perf per-request results.

Real outputs (``serving/`` in ``../shared/data`` or ``tests/data``, found with
``shared``): AIPerf against gpt-oss-20b (``profile_export.jsonl``, 100 requests, 11
cancelled on purpose, beside AIPerf's own ``profile_export_aiperf.json``/``.csv``) and
LLMPerf against vLLM (``*_individual_responses.json``, 112 requests, beside
``*_summary.json``). Their tests check pau's table against the figures each tool wrote
in its summary, recomputed from the table with DESIGN's definitions (TTFT = first_token
- arrival, E2E = end - arrival) and each tool's own statistics (numpy's linear
percentiles; AIPerf's std over the population, LLMPerf's pandas std with ddof 1).

No real vLLM ``--save-result`` or GenAI-Perf export with a licence was found (see the
serving README), so those files are built in ``tmp_path`` from the documented formats:
vLLM ``benchmark_serving.py --save-result`` (ttfts, itls, input_lens, output_lens,
errors, duration, date), GenAI-Perf's ``profile_export.json`` (experiments[].requests[]
with timestamp and response_timestamps), and small AIPerf / LLMPerf files in the layout
of the real ones for the edge cases. Expected figures are hand-computed from the values
written.
"""

from __future__ import annotations

import csv
import json
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import pau.core
from pau.readers.detect import UnknownFormatError, detect_format
from pau.readers.serving import QUARANTINE_SCHEMA, REQUESTS_SCHEMA, ServingFormatError, read_serving

from shared_data import shared

AIPERF = ("serving", "aiperf_gpt-oss-20b_run1")
LLMPERF = ("serving", "llmperf_vllm_yi34b_4xa10g_c16")
LLMPERF_STEM = "01-ai-Yi-1-5-34B-Chat_550_150"

VLLM = {"date": "20250101-120000", "backend": "vllm", "model_id": "m", "duration": 2.5, "completed": 2,
        "input_lens": [10, 20, 30], "output_lens": [3, 1, 0], "ttfts": [0.1, 0.25, 0.0],
        "itls": [[0.02, 0.03], [], []], "errors": ["", "", "Bad Request"]}


def test_vllm(tmp_path):
    p = tmp_path / "vllm.json"
    p.write_text(json.dumps(VLLM))
    r = read_serving(p)
    assert r.format == "vllm" and r.requests.schema == REQUESTS_SCHEMA
    assert r.meta["duration"] == 2.5
    rows = r.requests.to_pylist()
    # request 0: ttft 0.1 s, itls 0.02 + 0.03 s -> end 0.15 s
    assert rows[0] == {"request_id": "0", "replica": None, "arrival_ns": 0, "first_token_ns": 100_000_000,
                       "end_ns": 150_000_000, "input_tokens": 10, "output_tokens": 3, "status": "ok"}
    assert rows[1]["end_ns"] == rows[1]["first_token_ns"] == 250_000_000
    assert rows[2]["status"] == "error"
    assert any("no arrival times" in w and "3 requests" in w for w in r.warnings)


def test_vllm_with_start_times(tmp_path):
    p = tmp_path / "vllm.json"
    p.write_text(json.dumps({**VLLM, "start_times": [0.0, 1.0, 2.0], "e2els": [0.2, 0.3, 0.0]}))
    rows = read_serving(p).requests.to_pylist()
    assert (rows[1]["arrival_ns"], rows[1]["first_token_ns"], rows[1]["end_ns"]) == (
        1_000_000_000, 1_250_000_000, 1_300_000_000)


def _aiperf_rec(i, start, ttft_ms=None, end=None, isl=5, osl=4, error=None, cancelled=False):
    metrics = {"input_sequence_length": {"value": isl, "unit": "tokens"}}
    if ttft_ms is not None:
        metrics.update(time_to_first_token={"value": ttft_ms, "unit": "ms"},
                       output_sequence_length={"value": osl, "unit": "tokens"})
    return json.dumps({"metadata": {"session_num": i, "x_request_id": f"r{i}", "request_start_ns": start,
                                    "request_end_ns": end, "was_cancelled": cancelled},
                       "metrics": metrics, "error": error})


def test_aiperf(tmp_path):
    p = tmp_path / "profile_export.jsonl"
    p.write_text("\n".join([
        _aiperf_rec(0, 1_000, ttft_ms=2.5, end=9_000_000),
        _aiperf_rec(1, 2_000, end=3_000, error={"code": 504, "type": "TimeoutError", "message": "t"}),
        _aiperf_rec(2, 3_000, end=4_000, error={"code": 429, "type": "HTTPError", "message": "busy"}),
        _aiperf_rec(3, 4_000, end=5_000, error={"code": 499, "type": "RequestCancellationError",
                                                "message": "c"}, cancelled=True),
        _aiperf_rec(4, 5_000, end=6_000, error={"code": 500, "type": "InternalServerError", "message": "x"}),
    ]) + "\n")
    r = read_serving(p)
    assert r.format == "aiperf"
    rows = r.requests.to_pylist()
    # ttft 2.5 ms after the start at 1000 ns
    assert (rows[0]["request_id"], rows[0]["first_token_ns"], rows[0]["end_ns"]) == ("r0", 2_501_000, 9_000_000)
    assert [x["status"] for x in rows] == ["ok", "timeout", "rejected", "cancelled", "error"]


def test_aiperf_bad_line(tmp_path):
    p = tmp_path / "profile_export.jsonl"
    p.write_text(_aiperf_rec(0, 1, ttft_ms=1.0, end=5) + "\n" + '{"metadata": {"x": 1}}\n')
    with pytest.raises(ServingFormatError, match="line 2"):
        read_serving(p)
    r = read_serving(p, on_invalid="quarantine")
    assert r.requests.num_rows == 1 and any("1 unusable records" in w for w in r.warnings)
    assert r.quarantine.schema == QUARANTINE_SCHEMA
    assert r.quarantine.to_pylist() == [{"source_file": str(p), "location": "line 2",
                                         "reason": "not a usable AIPerf record: no request start "
                                                   "(metadata.timestamp_ns)", "record": "line 2"}]


def test_genai_perf(tmp_path):
    p = tmp_path / "profile_export.json"
    p.write_text(json.dumps({"experiments": [{"experiment": {"mode": "concurrency", "value": 1}, "requests": [
        {"timestamp": 100, "request_inputs": {}, "response_timestamps": [150, 170, 200], "response_outputs": []},
        {"timestamp": 300, "request_inputs": {}, "response_timestamps": [], "response_outputs": []}]}],
        "version": ""}))
    r = read_serving(p)
    rows = r.requests.to_pylist()
    assert (rows[0]["arrival_ns"], rows[0]["first_token_ns"], rows[0]["end_ns"]) == (100, 150, 200)
    assert [x["status"] for x in rows] == ["ok", "error"]


def test_bad_files(tmp_path):
    cases = {"empty.json": ("", "empty"),
             "trunc.json": (json.dumps(VLLM)[:40], "malformed JSON"),
             "summary.json": (json.dumps({"duration": 1.0, "completed": 3}), "without per-request"),
             "short.json": (json.dumps({**VLLM, "ttfts": [0.1]}), "'itls' has 3 entries"),
             "other.json": (json.dumps({"traceEvents": []}), "not a known serving")}
    for name, (text, msg) in cases.items():
        p = tmp_path / name
        p.write_text(text)
        with pytest.raises(ServingFormatError, match=msg):
            read_serving(p)


# --- the real files -------------------------------------------------------------------

def _stats(x: np.ndarray, ddof: int) -> dict:
    """Each tool's figures: mean, min, max, std and numpy's linear percentiles."""
    out = {"avg": x.mean(), "min": x.min(), "max": x.max(), "std": x.std(ddof=ddof)}
    out.update({f"p{q}": np.percentile(x, q) for q in (1, 5, 25, 50, 75, 90, 95, 99)})
    return out


def _col(t, name) -> np.ndarray:
    col = t[name]
    assert col.null_count == 0 or not pa.types.is_integer(col.type), f"{name} has nulls"
    return col.to_numpy(zero_copy_only=False)


@pytest.fixture
def aiperf():
    path = shared(*AIPERF, "profile_export.jsonl")
    summary = json.loads(shared(*AIPERF, "profile_export_aiperf.json").read_text())
    return path, summary


@pytest.fixture
def llmperf():
    path = shared(*LLMPERF, f"{LLMPERF_STEM}_individual_responses.json")
    summary = json.loads(shared(*LLMPERF, f"{LLMPERF_STEM}_summary.json").read_text())
    return path, summary


@pytest.mark.parametrize("parts", [
    (*AIPERF, "profile_export.jsonl"), AIPERF,
    (*LLMPERF, f"{LLMPERF_STEM}_individual_responses.json"), LLMPERF,
    ("serving",),
])
def test_detect_real(parts):
    # the files, and the folders that hold them beside the tools' summaries
    assert detect_format(shared(*parts)) == "serving"


@pytest.mark.parametrize("parts, fix", [
    ((*AIPERF, "profile_export_aiperf.json"), "profile_export.jsonl"),
    ((*LLMPERF, f"{LLMPERF_STEM}_summary.json"), "individual_responses.json"),
])
def test_summaries_alone(parts, fix):
    p = shared(*parts)
    with pytest.raises(UnknownFormatError, match=f"summary.*{fix}"):
        detect_format(p)
    with pytest.raises(ServingFormatError, match=f"summary.*{fix}"):
        read_serving(p)


def test_aiperf_real_counts(aiperf):
    path, summary = aiperf
    rec = summary["records"]
    for p in (path, path.parent):   # the file, and the folder beside its summaries
        r = read_serving(p)
        assert r.format == "aiperf" and r.requests.schema == REQUESTS_SCHEMA
        assert r.meta["source"] == str(path) and r.quarantine.num_rows == 0
        status = _col(r.requests, "status")
        # 100 requests (--num-requests 100), of which AIPerf counts 89 completed and 11
        # errors, all of them RequestCancellationError (code 499)
        assert summary["input_config"]["loadgen"]["request_count"] == len(status) == 100
        assert rec["request_count"]["avg"] == (status == "ok").sum() == 89
        [err] = summary["error_summary"]
        assert err["error_details"]["code"] == 499 and err["error_details"]["type"] == "RequestCancellationError"
        assert rec["error_request_count"]["avg"] == err["count"] == (status == "cancelled").sum() == 11
        assert set(status) == {"ok", "cancelled"}
        assert len(set(_col(r.requests, "request_id"))) == 100
        assert r.meta["reasoning_tokens"] == rec["total_reasoning_tokens"]["avg"] == 19792
        assert any("11 cancelled requests" in w and "no end time" in w for w in r.warnings)


def test_aiperf_real_against_summary(aiperf):
    """pau's ns against AIPerf's profile_export_aiperf.json. AIPerf's per-request ms
    are integer ns / 10^6 in float64, so pau's exact ns give the same floats to an ulp
    and the aggregates agree to float rounding: rel 1e-12."""
    path, summary = aiperf
    rec = summary["records"]
    t = read_serving(path).requests
    ok = t.filter(pc.equal(t["status"], "ok"))
    arrival, first, end = _col(ok, "arrival_ns"), _col(ok, "first_token_ns"), _col(ok, "end_ns")
    figures = {"ttft": (first - arrival) / 1e6, "request_latency": (end - arrival) / 1e6,
               "output_sequence_length": _col(ok, "output_tokens").astype(float),
               "input_sequence_length": _col(ok, "input_tokens").astype(float)}
    for metric, x in figures.items():
        assert rec[metric]["count"] == len(x) == 89
        for stat, v in _stats(x, ddof=0).items():
            assert v == pytest.approx(rec[metric][stat], rel=1e-12, abs=1e-9), (metric, stat)
    assert rec["ttft"]["unit"] == rec["request_latency"]["unit"] == "ms"
    assert _col(ok, "output_tokens").sum() == rec["total_osl"]["avg"] == 21624
    assert _col(ok, "input_tokens").sum() == rec["total_isl"]["avg"] == 48950
    # the run's span: AIPerf's duration (s, 9 decimals) is exact in ns; its min/max
    # timestamps are float64 (within 128 ns of an integer near 1.76e18)
    span = int(Decimal(repr(rec["benchmark_duration"]["avg"])) * 10**9)
    assert end.max() - arrival.min() == span == 9_317_788_951
    assert abs(int(arrival.min()) - int(rec["min_request_timestamp"]["avg"])) <= 128
    assert abs(int(end.max()) - int(rec["max_response_timestamp"]["avg"])) <= 128


def test_aiperf_real_csv(aiperf):
    """The CSV rounds to 2 decimals: agreement to 0.005 (plus float rounding)."""
    path, _ = aiperf
    text = shared(*AIPERF, "profile_export_aiperf.csv").read_text()
    per_request, totals = text.split("\n\n", 1)   # a per-metric block, then run totals
    lines = list(csv.reader(per_request.splitlines()))
    head, rows = lines[0][1:], {r[0]: r[1:] for r in lines[1:] if r}
    rows.update({r[0]: r[1:] for r in csv.reader(totals.splitlines()) if r})
    t = read_serving(path).requests
    ok = t.filter(pc.equal(t["status"], "ok"))
    arrival = _col(ok, "arrival_ns")
    for name, x in {"Time to First Token (ms)": (_col(ok, "first_token_ns") - arrival) / 1e6,
                    "Request Latency (ms)": (_col(ok, "end_ns") - arrival) / 1e6,
                    "Output Sequence Length (tokens)": _col(ok, "output_tokens").astype(float)}.items():
        got = _stats(x, ddof=0)
        for stat, text in zip(head, rows[name]):
            assert got[stat] == pytest.approx(float(text), abs=0.005 + 1e-9), (name, stat)
    assert float(rows["Request Count"][0]) == ok.num_rows
    assert float(rows["Error Request Count"][0]) == t.num_rows - ok.num_rows


def test_aiperf_real_ledger(aiperf):
    """pau.core.requests on the table: its TTFT/E2E are the table's, its TPOT is
    AIPerf's inter-token latency ((latency - ttft) / (osl - 1)), and its window and
    goodput are AIPerf's benchmark duration and request throughput."""
    path, summary = aiperf
    rec = summary["records"]
    t = read_serving(path).requests
    led = pau.core.requests(t)
    s = led.summary()
    assert (s["offered"], s["accepted"], s["cancelled"], s["quarantined"]) == (100, 89, 11, 0)
    assert s["window_ns"] == 9_317_788_951
    assert s["request_goodput_per_s"] == pytest.approx(rec["request_throughput"]["avg"], rel=1e-12)
    assert s["accepted_output_tokens"] == rec["total_osl"]["avg"]
    assert s["accepted_input_tokens"] == rec["total_isl"]["avg"]
    lt = led.table
    assert lt["request_id"].equals(t["request_id"])
    assert (_col(lt, "e2e_ns") == _col(t, "end_ns") - _col(t, "arrival_ns")).all()
    mask = pc.equal(t["status"], "ok")
    ok, lok = t.filter(mask), lt.filter(mask)
    assert (_col(lok, "ttft_ns") == _col(ok, "first_token_ns") - _col(ok, "arrival_ns")).all()
    assert set(lt.filter(pc.invert(mask))["outcome"].to_pylist()) == {"cancelled"}
    tpot = _col(lok, "tpot_ns") / 1e6
    for stat, v in _stats(tpot, ddof=0).items():
        assert v == pytest.approx(rec["inter_token_latency"][stat], rel=1e-12), stat
    assert (1e3 / tpot).mean() == pytest.approx(rec["output_token_throughput_per_user"]["avg"], rel=1e-12)


def test_aiperf_real_records_exact(aiperf):
    """Per record, against the file's own fields: AIPerf's request_latency and ttft (ms,
    float64 text such as 8877.632309999999, an ulp of 1.8e-6 ns) are pau's integer ns to
    within 1e-3 ns: the ns are exact."""
    path, _ = aiperf
    t = read_serving(path).requests
    by_id = {r["request_id"]: r for r in t.to_pylist()}
    n = 0
    for line in path.read_text().splitlines():
        raw = json.loads(line, parse_float=Decimal)
        row = by_id[raw["metadata"]["x_request_id"]]
        assert row["arrival_ns"] == raw["metadata"]["timestamp_ns"]
        if raw["error"] is None:
            m = raw["metrics"]
            assert row["end_ns"] == m["max_response_timestamp"]["value"]
            assert abs((row["end_ns"] - row["arrival_ns"]) - m["request_latency"]["value"] * 10**6) < Decimal("1e-3")
            assert abs((row["first_token_ns"] - row["arrival_ns"]) - m["ttft"]["value"] * 10**6) < Decimal("1e-3")
            n += 1
        else:
            assert row["status"] == "cancelled" and row["first_token_ns"] is None
            assert "after 0.000 seconds" in raw["error"]["message"] and row["end_ns"] == row["arrival_ns"]
    assert n == 89


def test_llmperf_real_counts(llmperf):
    path, summary = llmperf
    for p in (path, path.parent):
        r = read_serving(p)
        assert r.format == "llmperf" and r.requests.schema == REQUESTS_SCHEMA
        assert r.meta["source"] == str(path) and r.quarantine.num_rows == 0
        t = r.requests
        assert t.num_rows == summary["results_num_requests_started"] == 112
        assert (_col(t, "status") == "ok").sum() == summary["results_num_completed_requests"] == 112
        assert summary["results_number_errors"] == 0
        assert (_col(t, "arrival_ns") == 0).all() and t["replica"].null_count == 112
        assert any("no arrival times" in w and "112 requests" in w for w in r.warnings)


def test_llmperf_real_against_summary(llmperf):
    """pau's ns against LLMPerf's summary (pandas quantiles = numpy linear percentiles,
    std with ddof 1, over the requests without errors). Rounding each time to the ns
    moves it by at most 0.5 ns, and means, quantiles and std move by no more: agreement
    to 1e-9 s."""
    path, summary = llmperf
    t = read_serving(path).requests
    arrival = _col(t, "arrival_ns")
    figures = {"ttft_s": ((_col(t, "first_token_ns") - arrival) / 1e9, 1e-9),
               "end_to_end_latency_s": ((_col(t, "end_ns") - arrival) / 1e9, 1e-9),
               "number_output_tokens": (_col(t, "output_tokens").astype(float), 1e-9),
               "number_input_tokens": (_col(t, "input_tokens").astype(float), 1e-9)}
    names = {"avg": "mean", "std": "stddev", "min": "min", "max": "max"}
    for metric, (x, tol) in figures.items():
        for stat, v in _stats(x, ddof=1).items():
            key = f"results_{metric}_{names.get(stat, 'quantiles_' + stat)}"
            if key in summary:   # LLMPerf writes p25..p99
                assert v == pytest.approx(float(summary[key]), abs=tol), key
    assert summary["results_ttft_s_quantiles_p99"] == pytest.approx(
        np.percentile((_col(t, "first_token_ns") - arrival) / 1e9, 99), abs=1e-9)
    assert int(summary["results_number_output_tokens_max"]) == _col(t, "output_tokens").max() == 167
    assert summary["mean_input_tokens"] == _col(t, "input_tokens").mean() == 550


def test_llmperf_real_records(llmperf):
    """Every time within 0.5 ns (plus float rounding) of the seconds the file holds."""
    path, _ = llmperf
    raw = json.loads(path.read_text())
    rows = read_serving(path).requests.to_pylist()
    assert len(raw) == len(rows) == 112
    for i, (x, row) in enumerate(zip(raw, rows)):
        assert row["request_id"] == str(i)
        assert abs(row["first_token_ns"] - x["ttft_s"] * 1e9) <= 0.5 + 1e-5
        assert abs(row["end_ns"] - x["end_to_end_latency_s"] * 1e9) <= 0.5 + 1e-5
        assert (row["input_tokens"], row["output_tokens"]) == (x["number_input_tokens"], x["number_output_tokens"])
    assert rows[0]["first_token_ns"] == 586_540_365   # 0.5865403649986547 s


def test_llmperf_real_ledger(llmperf):
    path, summary = llmperf
    t = read_serving(path).requests
    led = pau.core.requests(t)
    s = led.summary()
    assert (s["offered"], s["accepted"], s["quarantined"]) == (112, 112, 0)
    assert s["accepted_output_tokens"] == pytest.approx(summary["results_number_output_tokens_mean"] * 112, abs=1e-6)
    arrival = _col(t, "arrival_ns")
    ttft, e2e = _col(led.table, "ttft_ns"), _col(led.table, "e2e_ns")
    assert (ttft == _col(t, "first_token_ns") - arrival).all() and (e2e == _col(t, "end_ns") - arrival).all()
    assert (ttft / 1e9).mean() == pytest.approx(summary["results_ttft_s_mean"], abs=1e-9)
    assert np.percentile(e2e / 1e9, 50) == pytest.approx(summary["results_end_to_end_latency_s_quantiles_p50"],
                                                         abs=1e-9)


# --- LLMPerf and AIPerf edge cases (files in the layout of the real ones) ---------------

def _llmperf_rec(ttft, e2e, tin=10, tout=5, code=None, msg=""):
    return {"error_code": code, "error_msg": msg, "inter_token_latency_s": 0.0, "ttft_s": ttft,
            "end_to_end_latency_s": e2e, "request_output_throughput_token_per_s": 0.0,
            "number_total_tokens": tin + tout, "number_output_tokens": tout, "number_input_tokens": tin}


def test_llmperf_rounding(tmp_path):
    """Seconds -> ns from the decimal text, half away from zero: 2.5 ns -> 3 and
    1.0000000005 s -> 1,000,000,001 ns (half to even would give 2 and 1,000,000,000);
    1.0000000015 s -> 1,000,000,002 ns (float64 * 1e9 gives 1000000001.4999999)."""
    p = tmp_path / "x_individual_responses.json"
    p.write_text(json.dumps([_llmperf_rec(0.1, 0.3), _llmperf_rec(2.5e-09, 1.0000000005),
                             _llmperf_rec(1.5e-09, 1.0000000015), _llmperf_rec(0, 18.712564567998925)]))
    assert round(1.0000000015 * 1e9) == 1_000_000_001   # what float multiplication would give
    rows = read_serving(p).requests.to_pylist()
    assert [(r["first_token_ns"], r["end_ns"]) for r in rows] == [
        (100_000_000, 300_000_000), (3, 1_000_000_001), (2, 1_000_000_002), (0, 18_712_564_568)]
    assert detect_format(p) == "serving"


def test_llmperf_errors(tmp_path):
    p = tmp_path / "x_individual_responses.json"
    p.write_text(json.dumps([_llmperf_rec(0.5, 2.0), _llmperf_rec(0, 0, tout=0, code=429, msg="busy"),
                             _llmperf_rec(0, 0.7, tout=0, code=504, msg="gateway"),
                             _llmperf_rec(0.2, 0, tout=3, code=500, msg="boom"),
                             _llmperf_rec(0, 0, tout=0, code=None, msg="Timeout reading stream")]))
    r = read_serving(p)
    rows = r.requests.to_pylist()
    assert [x["status"] for x in rows] == ["ok", "rejected", "timeout", "error", "timeout"]
    assert [x["first_token_ns"] for x in rows] == [500_000_000, None, None, None, None]
    assert [x["end_ns"] for x in rows] == [2_000_000_000, 0, 700_000_000, 0, 0]
    assert any("4 failed requests" in w for w in r.warnings)
    pau.core.requests(r.requests)   # failed requests are valid ledger rows


def test_llmperf_bad_record(tmp_path):
    p = tmp_path / "x_individual_responses.json"
    bad = _llmperf_rec(0.1, 0.2)
    bad["ttft_s"] = "fast"
    p.write_text(json.dumps([_llmperf_rec(0.1, 0.2), bad, {"ttft_s": 0.1}]))
    with pytest.raises(ServingFormatError, match=r"record 1: not a usable LLMPerf record: ttft_s is 'fast'.*"
                                                 r"Fix: .*on_invalid='quarantine'"):
        read_serving(p)
    r = read_serving(p, on_invalid="quarantine")
    assert r.requests.num_rows == 1
    assert r.quarantine.column("record").to_pylist() == ["record 1", "record 2"]
    assert r.quarantine.select(["source_file", "location"]).to_pylist() == [
        {"source_file": str(p), "location": f"record {i}"} for i in (1, 2)]   # 0-based index in the list
    assert "no end_to_end_latency_s, number_input_tokens, number_output_tokens" in r.quarantine["reason"][1].as_py()
    assert any("2 unusable records set aside (first at record 1" in w for w in r.warnings)


def _aiperf_real_rec(i, start, ttft_ms=None, latency_ns=None, osl=7, error=None, unit="ms"):
    """A record in the layout of AIPerf's real export (timestamp_ns, {"value", "unit"})."""
    md = {"x_request_id": f"id{i}", "conversation_id": f"c{i}", "turn_index": 0, "timestamp_ns": start,
          "worker_id": "w", "credit_phase": "profiling"}
    if error is not None:
        return json.dumps({"metadata": md, "metrics": {"error_request_count": {"value": 1, "unit": "requests"}},
                           "error": error})
    m = {"input_sequence_length": {"value": 11, "unit": "tokens"}, "ttft": {"value": ttft_ms, "unit": unit},
         "request_latency": {"value": latency_ns / 1e6, "unit": "ms"},
         "min_request_timestamp": {"value": start, "unit": "ns"},
         "max_response_timestamp": {"value": start + latency_ns, "unit": "ns"},
         "output_sequence_length": {"value": osl, "unit": "tokens"},
         "reasoning_token_count": {"value": 2, "unit": "tokens"}}
    return json.dumps({"metadata": md, "metrics": m, "error": None})


def test_aiperf_real_layout(tmp_path):
    start = 1_759_522_419_154_829_652
    p = tmp_path / "profile_export.jsonl"
    p.write_text("\n".join([
        _aiperf_real_rec(0, start, ttft_ms=464.66410099999996, latency_ns=7_936_968_269),
        _aiperf_real_rec(1, start + 5, error={"code": 499, "type": "RequestCancellationError",
                                              "message": "Request was cancelled after 0.250 seconds"}),
        _aiperf_real_rec(2, start + 6, error={"code": 499, "type": "RequestCancellationError", "message": "?"}),
        _aiperf_real_rec(3, start + 7, error={"code": 500, "type": "InternalServerError", "message": "x"}),
    ]) + "\n")
    assert detect_format(p) == "serving"
    r = read_serving(p)
    rows = r.requests.to_pylist()
    assert rows[0] == {"request_id": "id0", "replica": None, "arrival_ns": start,
                       "first_token_ns": start + 464_664_101, "end_ns": start + 7_936_968_269,
                       "input_tokens": 11, "output_tokens": 7, "status": "ok"}
    assert [x["status"] for x in rows] == ["ok", "cancelled", "cancelled", "error"]
    assert [x["end_ns"] for x in rows[1:]] == [start + 5 + 250_000_000, None, None]
    assert r.meta["reasoning_tokens"] == 2
    assert any("1 cancelled requests without an end time" in w for w in r.warnings)
    assert not any("request_latency differs" in w for w in r.warnings)


def test_aiperf_units_and_bad_values(tmp_path):
    p = tmp_path / "profile_export.jsonl"
    p.write_text(_aiperf_real_rec(0, 1_000, ttft_ms=2_500, latency_ns=9_000, unit="us") + "\n")
    assert read_serving(p).requests["first_token_ns"].to_pylist() == [2_501_000]
    p.write_text(_aiperf_real_rec(0, 1_000, ttft_ms=2.5, latency_ns=9_000, unit="fortnights") + "\n")
    with pytest.raises(ServingFormatError, match="line 1: .*unit 'fortnights'"):
        read_serving(p)
    lines = [_aiperf_real_rec(0, 1_000, ttft_ms=0.001, latency_ns=9_000), "not json",
             json.dumps({"metadata": {"timestamp_ns": 5}, "metrics": {}, "error": None})]
    p.write_text("\n".join(lines) + "\n")
    r = read_serving(p, on_invalid="quarantine")
    assert r.requests.num_rows == 1 and r.requests["first_token_ns"][0].as_py() == 2_000
    assert r.quarantine["record"].to_pylist() == ["line 2", "line 3"]
    assert "without an end time" in r.quarantine["reason"][1].as_py()


def test_directories(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    (d / "a_individual_responses.json").write_text(json.dumps([_llmperf_rec(0.1, 0.2)]))
    (d / "a_summary.json").write_text(json.dumps({"results_ttft_s_mean": 0.1, "results_num_completed_requests": 1}))
    assert detect_format(d) == "serving"
    assert read_serving(d).meta["source"] == str(d / "a_individual_responses.json")
    (d / "b_individual_responses.json").write_text(json.dumps([_llmperf_rec(0.1, 0.2)]))
    with pytest.raises(ServingFormatError, match="2 per-request result files"):
        read_serving(d)
    e = tmp_path / "only_summary"
    e.mkdir()
    (e / "s.json").write_text(json.dumps({"results_ttft_s_mean": 0.1}))
    with pytest.raises(ServingFormatError, match="no per-request serving results"):
        read_serving(e)


def test_aiperf_latency_mismatch(tmp_path):
    rec = json.loads(_aiperf_real_rec(0, 1_000, ttft_ms=1.0, latency_ns=9_000_000))
    rec["metrics"]["request_latency"]["value"] = 8.0   # 8 ms, but the timestamps are 9 ms apart
    p = tmp_path / "profile_export.jsonl"
    p.write_text(json.dumps(rec) + "\n")
    r = read_serving(p)
    assert r.requests["end_ns"].to_pylist() == [9_001_000]
    assert any("1 records whose request_latency differs" in w and "line 1" in w for w in r.warnings)


# --- issue 19, finding 4: no INT64_MIN, no negative counts; one error naming the field --

_BAD_NUMBERS = [("null", "is None, not a number"), ("NaN", "is nan, not a number"),
                ("Infinity", "is inf, not a number"), ("-Infinity", "is -inf, not a number"),
                ("1e300", "outside the int64 ns range"), ("-0.5", "a latency is >= 0")]


@pytest.mark.parametrize("text, reason", _BAD_NUMBERS)
def test_vllm_bad_latency_is_named_or_set_aside(tmp_path, text, reason):
    doc = json.dumps({**VLLM, "ttfts": [0.1, "X", 0.0]}).replace('"X"', text)
    p = tmp_path / "vllm.json"
    p.write_text(doc)
    with pytest.raises(ServingFormatError, match=rf"vllm.json, request 1: ttfts\[1\] .*{reason}"):
        read_serving(p)
    r = read_serving(p, on_invalid="quarantine")
    assert r.requests["request_id"].to_pylist() == ["0", "2"]
    assert r.quarantine["record"].to_pylist() == ["request 1"]
    assert r.quarantine.select(["source_file", "location"]).to_pylist() == [
        {"source_file": str(p), "location": "request 1"}]
    assert r.quarantine["reason"][0].as_py().startswith("ttfts[1] ")
    assert min(r.requests["first_token_ns"].to_pylist()) >= 0   # nothing turned into INT64_MIN
    run = pau.read(p, on_invalid="quarantine")
    assert run.quarantine.equals(r.quarantine) and any(w.code == "serving.records_set_aside" for w in run.warnings)


@pytest.mark.parametrize("text, reason", _BAD_NUMBERS)
def test_llmperf_bad_latency_is_named(tmp_path, text, reason):
    recs = [_llmperf_rec(0.1, 1.0), _llmperf_rec(0.2, "X")]
    p = tmp_path / "x_individual_responses.json"
    p.write_text(json.dumps(recs).replace('"X"', text))
    with pytest.raises(ServingFormatError, match=rf"record 1: .*end_to_end_latency_s .*{reason}"):
        read_serving(p)
    assert read_serving(p, on_invalid="quarantine").requests.num_rows == 1


@pytest.mark.parametrize("text, reason", _BAD_NUMBERS[1:])
def test_aiperf_bad_ttft_is_named(tmp_path, text, reason):
    good = _aiperf_real_rec(0, 1_000, ttft_ms=0.5, latency_ns=2_000_000)
    bad = _aiperf_real_rec(1, 5_000, ttft_ms="X", latency_ns=2_000_000).replace('"X"', text)
    p = tmp_path / "profile_export.jsonl"
    p.write_text(good + "\n" + bad + "\n")
    with pytest.raises(ServingFormatError, match=rf"line 2: .*metrics.ttft .*{reason}"):
        read_serving(p)


def test_negative_or_fractional_token_counts_are_refused(tmp_path):
    p = tmp_path / "vllm.json"
    p.write_text(json.dumps({**VLLM, "output_lens": [3, -1, 0]}))
    with pytest.raises(ServingFormatError, match=r"request 1: output_lens\[1\] is -1: a token count is >= 0"):
        read_serving(p)
    p.write_text(json.dumps({**VLLM, "input_lens": [10, 2.5, 30]}))
    with pytest.raises(ServingFormatError, match=r"request 1: input_lens\[1\] is '2.5', not a whole number"):
        read_serving(p)
    q = tmp_path / "x_individual_responses.json"
    q.write_text(json.dumps([_llmperf_rec(0.1, 1.0, tout=-3)]))
    with pytest.raises(ServingFormatError, match="record 0: .*number_output_tokens is -3: a token count is >= 0"):
        read_serving(q)
    a = tmp_path / "profile_export.jsonl"
    a.write_text(_aiperf_real_rec(0, 1_000, ttft_ms=0.5, latency_ns=2_000_000, osl=-7) + "\n")
    with pytest.raises(ServingFormatError, match="line 1: .*output_sequence_length is -7"):
        read_serving(a)


def test_sums_beyond_int64_and_structures_of_the_wrong_shape(tmp_path):
    p = tmp_path / "vllm.json"
    p.write_text(json.dumps({**VLLM, "ttfts": [9e9, 0.25, 0.0], "itls": [[9e9], [], []]}))
    with pytest.raises(ServingFormatError, match="request 0: end = .* outside the int64 ns range"):
        read_serving(p)
    p.write_text(json.dumps({**VLLM, "ttfts": "abc"}))
    with pytest.raises(ServingFormatError, match="'ttfts' is a str, not a list"):
        read_serving(p)
    g = tmp_path / "profile_export.json"
    g.write_text(json.dumps({"experiments": [5]}))
    with pytest.raises(ServingFormatError, match=r"experiments\[0\]: not a GenAI-Perf experiment"):
        read_serving(g)
    g.write_text(json.dumps({"experiments": [{"requests": [{"timestamp": 1, "response_timestamps": [2]}, 7]}]}))
    with pytest.raises(ServingFormatError, match=r"experiments\[0\].requests\[1\]: not a JSON object"):
        read_serving(g)
    assert read_serving(g, on_invalid="quarantine").requests.num_rows == 1


def test_deep_nesting_and_bytes_that_are_not_utf8(tmp_path):
    p = tmp_path / "deep.json"
    p.write_text('{"ttfts": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ServingFormatError, match="malformed JSON"):
        read_serving(p)
    a = tmp_path / "profile_export.jsonl"
    a.write_text(_aiperf_real_rec(0, 1_000, ttft_ms=0.5, latency_ns=2_000_000) + "\n" +
                 '{"metadata": ' + "[" * 100_000 + "\n")
    with pytest.raises(ServingFormatError, match="line 2: not a usable AIPerf record: not JSON"):
        read_serving(a)
    b = tmp_path / "bytes.json"
    b.write_bytes(json.dumps(VLLM).encode()[:20] + b"\xff" + json.dumps(VLLM).encode()[20:])
    with pytest.raises(ServingFormatError, match="not UTF-8 text: byte 20 .line 1. is 0xff"):
        read_serving(b)
