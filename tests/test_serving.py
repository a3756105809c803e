"""pau.readers.serving: vLLM / AIPerf / GenAI-Perf per-request results.

No real per-request serving results exist in ``../shared/data`` (the Azure LLM trace
README says vLLM/SGLang latency JSONs were searched for and not found), so the files
here are built in ``tmp_path`` from the documented formats: vLLM ``benchmark_serving.py
--save-result`` (ttfts, itls, input_lens, output_lens, errors, duration, date), AIPerf's
``profile_export.jsonl`` records (metadata / metrics / error, as in AIPerf's
"Working with Profile Export Files" guide) and GenAI-Perf's ``profile_export.json``
(experiments[].requests[] with timestamp and response_timestamps). Expected figures are
hand-computed from the values written.
"""

from __future__ import annotations

import json

import pytest

from pau.readers.serving import REQUESTS_SCHEMA, ServingFormatError, read_serving

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
