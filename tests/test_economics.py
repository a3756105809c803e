"""Hand-checkable examples of pau.figures.economics (DESIGN §3-4). The arithmetic is in the
comments; every ns figure is compared exactly."""

from __future__ import annotations

import math
import sys

import numpy as np
import pyarrow as pa
import pytest

import pau.core as pc
from pau import _core
import pau.figures.economics as E
import pau.figures.cost as C
import pau.synth
from pau.engine.types import (
    LayerSummary, LayersSummary, Latency, RecoverySummary, RequestLatency, RequestSummary, StepFigures, StepRank,
    StragglerFigures, RangeRow, TelemetryRow,
)
from pau.figures import compare, hardware, layers, recovery
from pau.figures.stragglers import step_figures
from pau.errors import ArgumentTypeError, InvalidRowError, PauError

S = 10**9
H = 3600 * S


def _req(rows):
    cols = ("request_id", "replica", "arrival_ns", "first_token_ns", "end_ns", "input_tokens",
            "output_tokens", "status")
    types = (pa.int64(), pa.string(), pa.int64(), pa.int64(), pa.int64(), pa.int64(), pa.int64(),
             pa.string())
    return pa.table({c: pa.array([r[i] for r in rows], t) for i, (c, t) in enumerate(zip(cols, types))})


def test_seed_example_four_cents_per_request():
    # 2,000,000 accepted requests, fully allocated cost $80,000: 80,000 / 2,000,000 = $0.04
    n = 2_000_000
    arrival = np.arange(n, dtype=np.int64) * 1000
    t = {"request_id": np.arange(n), "replica": np.zeros(n, np.int64), "arrival_ns": arrival,
         "first_token_ns": arrival + 10, "end_ns": arrival + 100,
         "input_tokens": np.full(n, 10), "output_tokens": np.full(n, 5),
         "status": np.full(n, "ok", dtype=object)}
    rl = E.requests(t)
    assert rl.summary()["accepted"] == n
    c = C.cost(rl, {"total": 80_000})
    assert c["cost_per_accepted_request"] == pytest.approx(0.04, rel=1e-15)
    # tokens: 15 per request -> 30M tokens; 80,000 / 30 = 2,666.67 $ per million
    assert c["cost_per_million_accepted_tokens"] == pytest.approx(80_000 / 30)


def test_latencies_and_outcomes():
    rows = [
        # id, replica, arrival, first token, end, in, out, status
        (1, "a", 0, 100, 1000, 5, 10, "ok"),    # TTFT 100, E2E 1000, TPOT (1000-100)/9 = 100
        (2, "a", 0, 300, 400, 5, 1, "ok"),      # TTFT 300 > 200: late; TPOT 0 (1 token)
        (3, "a", 0, None, 50, 5, 0, "error"),   # failed, no TTFT
        (4, "a", 0, None, None, 5, 0, "rejected"),
        (5, "a", 0, 10, 20, 5, 2, "cancelled"),
        (6, "a", 0, 10, 20, 5, 2, "timeout"),   # failed
    ]
    rl = E.requests(_req(rows), slo={"ttft": 200}, window=(0, 2 * S))
    t = rl.table
    assert t["outcome"].to_pylist() == ["accepted", "late", "failed", "rejected", "cancelled", "failed"]
    assert t["ttft_ns"].to_pylist() == [100, 300, None, None, 10, 10]
    assert t["e2e_ns"].to_pylist() == [1000, 400, 50, None, 20, 20]
    assert t["tpot_ns"].to_pylist() == [100.0, 0.0, None, None, 10.0, 10.0]
    s = rl.summary()
    # offered 6, cancelled 1: attainment 1 / (6 - 1) = 0.2; goodput 1 accepted / 2 s
    assert (s["offered"], s["accepted"], s["late"], s["failed"], s["rejected"], s["cancelled"]) == (
        6, 1, 1, 2, 1, 1)
    assert s["slo_attainment"] == pytest.approx(0.2)
    assert s["request_goodput_per_s"] == pytest.approx(0.5)
    assert (s["accepted_input_tokens"], s["accepted_output_tokens"]) == (5, 10)


def _batch_step():
    # One busy interval [1000, 1100) (100 ns) on replica r0. In flight during it:
    #   A prefilling (arrival 1000, first token 1100) with 300 input tokens,
    #   B, C, D decoding (first token 500, end 2000) with 50, 100, 50 output tokens.
    rows = [
        (0, "r0", 1000, 1100, 1200, 300, 2, "ok"),
        (1, "r0", 0, 500, 2000, 9, 50, "ok"),
        (2, "r0", 0, 500, 2000, 9, 100, "ok"),
        (3, "r0", 0, 500, 2000, 9, 50, "ok"),
    ]
    busy = {"replica": np.array(["r0"], object), "start_ns": np.array([1000]), "end_ns": np.array([1100])}
    return _req(rows), busy


def test_batch_step_token_weights():
    req, busy = _batch_step()
    rl = E.requests(req, busy=busy)
    # weights 300 : 50 : 100 : 50 (sum 500) of 100 ns -> 60, 10, 20, 10, no remainder
    assert rl.table["attributed_ns"].to_pylist() == [60, 10, 20, 10]
    assert rl.table["attributed_prefill_ns"].to_pylist() == [60, 0, 0, 0]
    assert rl.summary()["productive_ns"] == 100
    assert rl.weights == {"prefill": 1, "decode": 1}


def test_batch_step_custom_phase_weights():
    req, busy = _batch_step()
    rl = E.requests(req, busy=busy, weights={"prefill": 0.25, "decode": 1})
    # 0.25 : 1 -> integers 1 : 4; weights 300, 200, 400, 200 (sum 1100)
    # exact shares 100*w/1100: 27.27, 18.18, 36.36, 18.18 -> floors 27, 18, 36, 18 (99)
    # remainders 100*w mod 1100: 300, 200, 400, 200 -> the 1 ns left goes to C (400)
    assert rl.table["attributed_ns"].to_pylist() == [27, 18, 37, 18]
    assert sum(rl.table["attributed_ns"].to_pylist()) == 100


def test_hour_of_eight_accelerators():
    # 8 replicas, each busy for the whole hour [0, 1 h). One request per replica runs
    # the whole hour: replicas 0-3 accepted (TTFT 1 s <= SLO 2 s), 4-5 late (TTFT 5 s),
    # 6 failed (error); replica 7 serves nothing (idle). Two requests are rejected.
    rows = []
    for r in range(7):
        ft = 5 * S if r in (4, 5) else 1 * S
        rows.append((r, f"g{r}", 0, ft, H, 10, 100, "error" if r == 6 else "ok"))
    rows += [(7, None, 0, None, None, 10, 0, "rejected"), (8, None, 0, None, None, 10, 0, "rejected")]
    busy = {"replica": np.array([f"g{r}" for r in range(8)], object),
            "start_ns": np.zeros(8, np.int64), "end_ns": np.full(8, H)}
    rl = E.requests(_req(rows), busy=busy, slo={"ttft": 2 * S}, window=(0, H))
    s = rl.summary()
    assert (s["accepted"], s["late"], s["failed"], s["rejected"]) == (4, 2, 1, 2)
    assert s["slo_attainment"] == pytest.approx(4 / 9)  # 4 / (9 offered - 0 cancelled)
    assert s["request_goodput_per_s"] == pytest.approx(4 / 3600)
    assert (s["busy_ns"], s["productive_ns"], s["late_ns"], s["failed_ns"], s["idle_ns"]) == (
        8 * H, 4 * H, 2 * H, H, H)
    # $2 per accelerator-hour: 8 h billed = $16; $16 / 4 accepted = $4 each;
    # $16 / 4 productive hours = $4 per productive hour; waste late $4, failed $2, idle $2
    c = C.cost(rl, {"per_accelerator_hour": 2.0})
    assert c["total_cost"] == pytest.approx(16.0)
    assert c["cost_per_accepted_request"] == pytest.approx(4.0)
    assert c["cost_per_productive_accelerator_hour"] == pytest.approx(4.0)
    assert c["waste_cost_by_cause"] == pytest.approx({"late": 4.0, "failed": 2.0, "cancelled": 0.0, "idle": 2.0})
    # the same billed as 8 accelerators for the 1 h window
    c8 = C.cost(rl, {"per_accelerator_hour": 2.0, "accelerators": 8})
    assert c8["total_cost"] == pytest.approx(16.0) and c8["billed_ns"] == 8 * H
    # per replica prices: g0..g6 at $2, g7 at $4 -> 7*2 + 4 = $18, idle (g7) costs $4
    cr = C.cost(rl, {"per_rank_hour": {**{f"g{r}": 2.0 for r in range(7)}, "g7": 4.0}})
    assert cr["total_cost"] == pytest.approx(18.0)
    assert cr["cost_by_outcome"]["idle"] == pytest.approx(4.0)
    # 500 W flat on every replica: 8 h * 500 W = 4 kWh = 14.4 MJ; / 4 accepted = 3.6 MJ
    power = {"replica": np.array([f"g{r}" for r in range(8)], object), "time_ns": np.zeros(8, np.int64),
             "watts": np.full(8, 500.0)}
    ce = C.cost(rl, {"per_accelerator_hour": 2.0}, power=power)
    assert ce["energy_j"] == pytest.approx(14.4e6)
    assert ce["energy_per_accepted_request_j"] == pytest.approx(3.6e6)


def test_young_and_daly_interval():
    # MTBF 24 h = 86,400 s, checkpoint 5 min = 300 s: Young sqrt(2 * 300 * 86,400)
    # = sqrt(51,840,000) = 7,200 s. Daly: x = C / 2M = 1/576, sqrt(x) = 1/24,
    # 7,200 * (1 + 1/72 + 1/5,184) - 300 = 7,200 + 100 + 1.3889 - 300 = 7,001.389 s.
    a = E.checkpoint_interval(86_400, 300, current_interval_s=3_600)
    assert a["young_s"] == pytest.approx(7_200.0)
    assert a["daly_s"] == pytest.approx(7_001.3889, abs=1e-3)
    # goodput = tau / (M (exp((tau + C)/M) - 1)) with R = 0
    g = lambda tau: tau / (86_400 * math.expm1((tau + 300) / 86_400))  # noqa: E731
    assert a["expected_goodput_current"] == pytest.approx(g(3_600))
    assert a["expected_goodput_daly"] == pytest.approx(g(a["daly_s"]))
    assert a["expected_goodput_daly"] > a["expected_goodput_current"]


def test_checkpoint_monte_carlo_confirms_analytic():
    # M = 1 h, C = 60 s, R = 120 s: 1,000 runs of 200 intervals each
    a = E.checkpoint_interval(3_600, 60, 120, current_interval_s=1_800, simulate=1_000, seed=7)
    assert a["simulated_goodput_daly"] == pytest.approx(a["expected_goodput_daly"], abs=0.005)
    assert a["simulated_goodput_current"] == pytest.approx(a["expected_goodput_current"], abs=0.005)


def test_cost_per_preserved_step_on_a_synthetic_job():
    job = pau.synth.training_job(ranks=2, steps=300, seed=3, mtbf_s=200.0, events=False)
    led = pc.ledger(lifecycle=job.lifecycle, as_of=job.as_of)
    s = led.summary()
    c = C.cost(led, {"per_accelerator_hour": 3.0})
    # by hand: accountable hours * $3, over the preserved steps
    total = s["accountable_ns"] / H * 3.0
    assert c["total_cost"] == pytest.approx(total)
    assert c["cost_per_preserved_step"] == pytest.approx(total / s["preserved_steps"])
    assert c["cost_per_productive_accelerator_hour"] == pytest.approx(total / (s["productive_ns"] / H))
    assert c["cost_per_million_preserved_tokens"] == pytest.approx(total * 1e6 / s["preserved_tokens"])
    # the cost of the states sums to the total; waste excludes productive and pending
    assert sum(c["cost_by_state"].values()) == pytest.approx(total)
    prod = (s["state_ns"]["productive"] + s["state_ns"]["pending"]) / H * 3.0
    assert c["waste_cost"] == pytest.approx(total - prod)
    assert sum(c["waste_cost_by_cause"].values()) == pytest.approx(s["state_ns"]["rolled_back"] / H * 3.0)
    # fully allocated: $1,000 for the period -> $1,000 / preserved steps
    assert C.cost(led, {"total": 1000})["cost_per_preserved_step"] == pytest.approx(1000 / s["preserved_steps"])
    # flat 400 W on both ranks: energy = 400 W * accountable seconds
    start = int(np.asarray(led.intervals["start_ns"]).min())
    power = {"rank": np.array([0, 1]), "time_ns": np.array([start, start]), "watts": np.array([400.0, 400.0])}
    ce = C.cost(led, {"per_accelerator_hour": 3.0}, power=power)
    assert ce["energy_j"] == pytest.approx(400 * s["accountable_ns"] / S)
    assert ce["energy_per_preserved_step_j"] == pytest.approx(ce["energy_j"] / s["preserved_steps"])


def test_power_is_piecewise_linear():
    # samples 100 W at 0 and 300 W at 10 s: over [0, 10 s) (100 + 300)/2 * 10 = 2,000 J;
    # over [2 s, 4 s): 140 W and 180 W -> 160 * 2 = 320 J; after 10 s held at 300 W
    e = C._energy_j(np.array([0, 0]), np.array([0, 10 * S]), np.array([100.0, 300.0]),
                    np.zeros(3, np.int64), np.array([0, 2 * S, 10 * S]), np.array([10 * S, 4 * S, 12 * S]))
    assert e.tolist() == pytest.approx([2000.0, 320.0, 600.0])


def test_checkpoint_advice_from_ledger():
    job = pau.synth.training_job(ranks=2, steps=400, seed=5, mtbf_s=150.0, checkpoint_every=50,
                                 events=False)
    led = pc.ledger(lifecycle=job.lifecycle, as_of=job.as_of)
    a = E.checkpoint_advice(led)
    m = a["measured"]
    assert m["failures"] == led.summary()["failures"]
    if m["failures"] and m["saves"]:
        assert a["young_s"] == pytest.approx(math.sqrt(2 * m["checkpoint_cost_s"] * m["mtbf_s"]))
        assert 0 < a["expected_goodput_current"] < 1


def _keys(typed_dict: type) -> tuple[frozenset, frozenset]:
    return typed_dict.__required_keys__, typed_dict.__required_keys__ | typed_dict.__optional_keys__


def test_results_have_exactly_the_keys_of_their_typed_dicts():
    """cost and the checkpoint figures return the TypedDicts pau.core exports: every
    required key, only declared keys, and every key once power (or simulate) is given."""
    job = pau.synth.training_job(ranks=2, steps=200, seed=5, mtbf_s=150.0, checkpoint_every=50, events=False)
    led = pc.ledger(lifecycle=job.lifecycle, as_of=job.as_of)
    start = int(np.asarray(led.intervals["start_ns"]).min())
    power = {"rank": np.array([0, 1]), "time_ns": np.array([start, start]), "watts": np.array([400.0, 400.0])}
    required, every = _keys(pc.LedgerCost)
    c = pc.cost(led, {"per_accelerator_hour": 3.0})
    assert required <= set(c) and set(c) == every - {k for k in every if k.startswith(("energy", "waste_energy"))}
    assert set(pc.cost(led, {"per_accelerator_hour": 3.0}, power=power)) == every
    required, every = _keys(pc.RequestCost)
    rows = [(1, "a", 0, 100, 1000, 5, 10, "ok"), (2, "a", 0, 200, 900, 5, 10, "ok")]
    busy = {"replica": ["a"], "start_ns": [0], "end_ns": [1000]}
    rl = pc.requests(_req(rows), busy=busy)
    assert set(pc.cost(rl, {"per_accelerator_hour": 2.0})) == every - {k for k in every if k.startswith("energy")}
    power_r = {"replica": ["a"], "time_ns": [0], "watts": [100.0]}
    assert set(pc.cost(rl, {"per_accelerator_hour": 2.0}, power=power_r)) == every
    assert set(pc.cost(pc.requests(_req(rows)), {"total": 5.0})) == required | {
        "cost_per_accepted_request", "cost_per_million_accepted_tokens", "cost_per_million_accepted_output_tokens"}
    required, every = _keys(pc.CheckpointInterval)
    assert set(pc.checkpoint_interval(3_600, 60)) == required
    assert set(pc.checkpoint_interval(3_600, 60, simulate=2)) == every
    required, every = _keys(pc.CheckpointAdvice)
    advice = pc.checkpoint_advice(led)
    assert set(advice) == required and set(advice["measured"]) == set(E.MeasuredCheckpoints.__required_keys__)
    assert set(pc.checkpoint_advice(led, mtbf_s=100.0, checkpoint_cost_s=5.0, simulate=2)) == every
    required, every = _keys(RequestSummary)
    assert set(rl.summary()) == every and set(pc.requests(_req(rows)).summary()) == required
    assert set(rl.latency()) == set(RequestLatency.__required_keys__)
    assert all(set(v) == set(Latency.__required_keys__) for v in rl.latency().values())
    figs = step_figures(pau.synth.training_job(ranks=2, steps=50, seed=1, per_rank_rows=True).lifecycle)
    assert figs is not None and set(figs) == set(StepFigures.__required_keys__)
    assert set(figs["stragglers"]) == set(StragglerFigures.__required_keys__)
    assert all(set(r) == set(StepRank.__required_keys__) for r in figs["per_rank"])
    rs = recovery.recovery(job.lifecycle, ledger=led, as_of=job.as_of).summary()
    assert set(rs) == set(RecoverySummary.__required_keys__) and rs["failures"] == led.summary()["failures"]
    required, every = _keys(LayerSummary)
    assert all(set(r) == required for r in layers.layers(led).summary()["layers"])
    priced = layers.layers(led, price_per_accelerator_hour=2.0).summary()
    assert set(priced) == set(LayersSummary.__required_keys__) and all(set(r) == every for r in priced["layers"])
    end = int(np.asarray(led.intervals["end_ns"]).max())
    t = np.arange(start, end + S, S)  # one sample a second on each rank
    samples = pa.table({"rank": pa.array(np.repeat([0, 1], t.size), pa.int32()), "time_ns": np.tile(t, 2),
                        "metric": pa.array(["power_w"] * (2 * t.size)).dictionary_encode(),
                        "value": np.full(2 * t.size, 300.0)})
    tel = hardware.summary(led, samples)
    assert tel and all(set(r) == set(TelemetryRow.__required_keys__) for r in tel)
    ranges = {"text": ["a", "b", "a"], "start_ns": [0, 5, 10], "end_ns": [4, 7, None]}
    assert [set(r) for r in compare.range_summary(ranges)] == [set(RangeRow.__required_keys__)] * 2
    with pytest.raises(ArgumentTypeError, match="checkpoint_advice: expected a pau Ledger, got dict"):
        pc.checkpoint_advice({})
    with pytest.raises(TypeError):  # also a TypeError, as before
        pc.cost({}, {"per_accelerator_hour": 1.0})


def test_invalid_rows_raise_or_quarantine():
    rows = [(1, "a", 0, 100, 1000, 5, 10, "ok"), (2, "a", 500, None, 50, 5, 10, "error"),
            (3, "a", 0, 100, 1000, 5, 10, "weird")]
    with pytest.raises(InvalidRowError, match="end_ns.*row 1"):
        E.requests(_req(rows))
    res, q = E.requests(_req(rows), on_invalid="quarantine")
    assert q["row"].to_pylist() == [1, 2]
    assert q["reason"].to_pylist() == ["end_ns before arrival_ns", "unknown status"]
    s = res.summary()
    assert (s["offered"], s["accepted"], s["quarantined"]) == (3, 1, 2)
    with pytest.raises(PauError, match="prices"):
        C.cost(res, {"total": 1, "per_accelerator_hour": 2})
    with pytest.raises(PauError, match="slo"):
        E.requests(_req(rows[:1]), slo={"latency": 5})


def test_prices_by_accelerator_type():
    # Requests: 4 replicas busy the whole hour [0, 1 h); h0, h1 are H100 at $4/h, a0, a1
    # A100 at $2/h. h0, a0 each run one accepted request all hour; h1 and a1 run nothing.
    # Total 2 * $4 + 2 * $2 = $12; accepted h0 $4 + a0 $2 = $6; idle h1 $4 + a1 $2 = $6;
    # $12 / 2 accepted = $6 per accepted request.
    rows = [(0, "h0", 0, S, H, 10, 100, "ok"), (1, "a0", 0, S, H, 10, 100, "ok")]
    reps = np.array(["h0", "h1", "a0", "a1"], object)
    busy = {"replica": reps, "start_ns": np.zeros(4, np.int64), "end_ns": np.full(4, H)}
    rl = E.requests(_req(rows), busy=busy)
    prices = {"per_type_hour": {"H100": 4.0, "A100": 2.0},
              "types": {"h0": "H100", "h1": "H100", "a0": "A100", "a1": "A100"}}
    c = C.cost(rl, prices)
    assert c["total_cost"] == pytest.approx(12.0)
    assert c["cost_by_outcome"]["accepted"] == pytest.approx(6.0)
    assert c["cost_by_outcome"]["idle"] == pytest.approx(6.0)
    assert c["cost_per_accepted_request"] == pytest.approx(6.0)
    # the same prices written per replica give the same answer
    per_rank = {"per_rank_hour": {r: prices["per_type_hour"][t] for r, t in prices["types"].items()}}
    assert C.cost(rl, per_rank)["total_cost"] == pytest.approx(12.0)
    # Training ledger: rank 0 (H100) accountable 1 h, rank 1 (A100) 2 h: 1 * $4 + 2 * $2 = $8
    ev = {"rank": np.array([0, 1], np.int32), "stream": np.zeros(2, np.int32),
          "start_ns": np.zeros(2, np.int64), "end_ns": np.array([H, 2 * H]),
          "kind": np.array(["compute", "compute"], object)}
    led = pc.ledger(ev)
    cl = C.cost(led, {"per_type_hour": {"H100": 4.0, "A100": 2.0}, "types": {0: "H100", 1: "A100"}})
    assert cl["total_cost"] == pytest.approx(8.0)
    # a rank without a type, a type without a price, types without per_type_hour: raise
    with pytest.raises(PauError, match="types has no accelerator type for rank 1"):
        C.cost(led, {"per_type_hour": {"H100": 4.0}, "types": {0: "H100"}})
    with pytest.raises(PauError, match="per_type_hour has no price for type 'A100'"):
        C.cost(led, {"per_type_hour": {"H100": 4.0}, "types": {0: "H100", 1: "A100"}})
    with pytest.raises(PauError, match="go together"):
        C.cost(led, {"per_accelerator_hour": 4.0, "types": {0: "H100"}})


def test_timestamp_columns_with_missing_first_token():
    # microsecond timestamps; request 1 errored before its first token. Busy [0, 10 us):
    # request 0 prefills [0, 2 us) with 3 tokens, decodes [2, 10 us) with 5; request 1
    # prefills [0, 4 us) with 1 token. [0, 2 us): 2000 ns split 3:1 -> 1500, 500;
    # [2, 4 us): 5:1 -> 1666.67, 333.33 -> 1666 + 1 (larger remainder) = 1667, 333;
    # [4, 10 us): 6000 to request 0. So 1500 + 1667 + 6000 = 9167 and 500 + 333 = 833.
    us = pa.timestamp("us")
    req = pa.table({"request_id": [0, 1], "replica": ["r", "r"],
                    "arrival_ns": pa.array([0, 0], us), "first_token_ns": pa.array([2, None], us),
                    "end_ns": pa.array([10, 4], us), "input_tokens": [3, 1], "output_tokens": [5, 0],
                    "status": ["ok", "error"]})
    busy = {"replica": np.array(["r"], object), "start_ns": np.array([0]), "end_ns": np.array([10_000])}
    rl = E.requests(req, busy=busy)
    assert rl.table["attributed_ns"].to_pylist() == [9167, 833]
    assert rl.table["ttft_ns"].to_pylist() == [2000, None]


def _big_log(seed: int, n: int = 1_100_000, replicas: int = 100):
    """A serving log and busy rows large enough (over 8 MB per output column) that the
    native core maps the outputs of their own (csrc/core/arena.hpp: KeptMappings)."""
    rng = np.random.default_rng(seed)
    rep = rng.integers(0, replicas, n).astype(np.int32)
    arrival = np.sort(rng.integers(0, 10**12, n))
    ttft = rng.integers(0, 10**8, n)
    first = np.where(rng.random(n) < 0.1, -1, arrival + ttft)  # -1: no first token (failed)
    end = arrival + ttft + rng.integers(0, 2 * 10**9, n)
    req = pa.table({"request_id": pa.array(np.arange(n)), "replica": pa.array(rep), "arrival_ns": pa.array(arrival),
                    "first_token_ns": pa.array(first, mask=first < 0), "end_ns": pa.array(end),
                    "input_tokens": pa.array(rng.integers(0, 1000, n)),
                    "output_tokens": pa.array(rng.integers(0, 100, n)),
                    "status": pa.array(np.where(first < 0, "error", "ok"))})
    per = n // replicas
    starts = np.sort(rng.integers(0, 10**12, (replicas, per)), axis=1).ravel()
    lens = np.where(rng.random(starts.size) < 0.05, 0, rng.integers(0, 10**9, starts.size))  # some empty rows
    busy = pa.table({"replica": pa.array(np.repeat(np.arange(replicas, dtype=np.int32), per)),
                     "start_ns": pa.array(starts), "end_ns": pa.array(starts + lens)})
    return req, busy


def test_large_outputs_in_kept_memory_give_the_same_answers():
    """The core keeps the mappings of large freed outputs and writes the next call's
    into them: every output element must be written anew, whatever the memory held. A
    log attributed before and after another log of the same size gives equal columns,
    and busy time is conserved."""
    req_b, busy_b = _big_log(1)
    first = E.requests(req_b, busy=busy_b)
    want = {c: np.asarray(first.table[c]).copy() for c in ("attributed_prefill_ns", "attributed_decode_ns",
                                                          "attributed_ns")}
    want_idle = np.asarray(first.busy["idle_ns"]).copy()
    del first
    req_a, busy_a = _big_log(2)
    other = E.requests(req_a, busy=busy_a)
    assert int(np.asarray(other.busy["idle_ns"]).sum()) > 0
    del other
    again = E.requests(req_b, busy=busy_b)
    for c, w in want.items():
        assert np.array_equal(np.asarray(again.table[c]), w), c
    assert np.array_equal(np.asarray(again.busy["idle_ns"]), want_idle)
    empty = np.asarray(busy_b["end_ns"]) == np.asarray(busy_b["start_ns"])
    assert empty.any() and (want_idle[empty] == 0).all()
    busy_ns = int((np.asarray(busy_b["end_ns"]) - np.asarray(busy_b["start_ns"])).sum())
    assert int(want["attributed_ns"].sum()) + int(want_idle.sum()) == busy_ns
    # the outputs of `other` were freed: kept (on Linux), until released
    if sys.platform == "linux":
        assert _core.kept_memory_bytes() > 8 << 20
    pc.release_kept_memory()  # the public name the docs give (docs/economics.md)
    assert _core.kept_memory_bytes() == 0
