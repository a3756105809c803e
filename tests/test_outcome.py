"""pau.figures.goodput, .stragglers (scores), .recovery and pau.readers.slurm: program goodput (MFU, HFU), ML Productivity
Goodput, ETTR, NVRx-style straggler scores, recovery and progress protection.

One hand-worked example per definition with the arithmetic beside it (exact
Fractions), mostly on DESIGN §2.4 example A; invariants on generated jobs
(``pau.synth``); the real sacct sample and the real Megatron model config; bad input.
"""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest
from depth import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pau.core as core
import pau.synth as synth
from pau.figures import goodput, recovery, stragglers
from pau.engine.ledger import NS_PER_HOUR
from pau.engine.types import Quarantined
from pau.errors import InvalidRowError, NoInputError, OptionError, PauError, SchemaError
from pau.readers.slurm import SACCT_FORMAT, parse_sacct, read_sacct

from shared_data import shared

S = 10**9
T0 = 1_714_557_600 * S  # 2024-05-01T10:00:00 UTC: example A's time 0
SACCT = ("fleet", "slurm_sacct", "psc_bridges_sacct_parsable.txt")
MEGATRON = ("fleet", "megatron_ckpt_resume", "model_config.yaml")

_COLS = ("record", "attempt", "rank", "start_ns", "end_ns", "step", "block_end_ns", "durable_ns", "ok", "kind")
_TYPES = (pa.string(), pa.int32(), pa.int32(), pa.int64(), pa.int64(), pa.int64(), pa.int64(), pa.int64(),
          pa.bool_(), pa.string())


def _lc(rows: list[dict], t0: int = 0) -> pa.Table:
    """Lifecycle rows in seconds (times shifted by ``t0`` ns)."""
    def ns(c, v):
        return None if v is None else (t0 + v * S if c.endswith("_ns") else v)
    return pa.table({c: pa.array([ns(c, r.get(c)) for r in rows], ty) for c, ty in zip(_COLS, _TYPES)})


def _steps(attempt: int, first: int, last: int, t: int) -> list[dict]:
    """Steps first..last of 10 s each, back to back from t."""
    return [dict(record="step", attempt=attempt, rank=0, step=k, start_ns=t + 10 * (k - first),
                 end_ns=t + 10 * (k - first) + 10) for k in range(first, last + 1)]


def example_a(t0: int = 0) -> pa.Table:
    """DESIGN §2.4 example A (1 rank, seconds): init 0-10; steps 1-5 at 10-60;
    checkpoint@5 60-70 durable 70; steps 6-8 at 70-100; step 9 from 100, failure at
    105; attempt 2 at 130: init 130-140, restore@5 140-150, steps 6-10 at 150-200,
    checkpoint@10 200-210 durable; end 210."""
    return _lc([
        dict(record="accountable", rank=0, start_ns=0, end_ns=210),
        dict(record="attempt", attempt=1, rank=0, start_ns=0, end_ns=105, kind="failed"),
        dict(record="phase", attempt=1, rank=0, start_ns=0, end_ns=10, kind="init"),
        *_steps(1, 1, 5, 10),
        dict(record="checkpoint_save", attempt=1, rank=0, step=5, start_ns=60, block_end_ns=70, durable_ns=70, ok=True),
        *_steps(1, 6, 8, 70),
        dict(record="step", attempt=1, rank=0, step=9, start_ns=100),
        dict(record="failure", attempt=1, rank=0, start_ns=105, kind="xid79"),
        dict(record="attempt", attempt=2, rank=0, start_ns=130, end_ns=210, kind="completed"),
        dict(record="phase", attempt=2, rank=0, start_ns=130, end_ns=140, kind="init"),
        dict(record="restore", attempt=2, rank=0, step=5, start_ns=140, end_ns=150, ok=True),
        *_steps(2, 6, 10, 150),
        dict(record="checkpoint_save", attempt=2, rank=0, step=10, start_ns=200, block_end_ns=210, durable_ns=210,
             ok=True),
    ], t0)


def example_loop() -> pa.Table:
    """Example A, but attempt 2 fails at 155 inside its first step (before any
    checkpoint: a restart loop); attempt 3 at 170: init 170-180, restore@5 180-190,
    steps 6-10 at 190-240, checkpoint@10 240-250 durable; end 250."""
    a = [r for r in example_a().to_pylist() if r["attempt"] != 2 and r["record"] != "accountable"]
    sec = [{k: (v // S if k.endswith("_ns") and v is not None else v) for k, v in r.items()} for r in a]
    return _lc([
        dict(record="accountable", rank=0, start_ns=0, end_ns=250), *sec,
        dict(record="attempt", attempt=2, rank=0, start_ns=130, end_ns=155, kind="failed"),
        dict(record="phase", attempt=2, rank=0, start_ns=130, end_ns=140, kind="init"),
        dict(record="restore", attempt=2, rank=0, step=5, start_ns=140, end_ns=150, ok=True),
        dict(record="step", attempt=2, rank=0, step=6, start_ns=150),
        dict(record="failure", attempt=2, rank=0, start_ns=155, kind="nccl_timeout"),
        dict(record="attempt", attempt=3, rank=0, start_ns=170, end_ns=250, kind="completed"),
        dict(record="phase", attempt=3, rank=0, start_ns=170, end_ns=180, kind="init"),
        dict(record="restore", attempt=3, rank=0, step=5, start_ns=180, end_ns=190, ok=True),
        *_steps(3, 6, 10, 190),
        dict(record="checkpoint_save", attempt=3, rank=0, step=10, start_ns=240, block_end_ns=250, durable_ns=250,
             ok=True),
    ])


@pytest.fixture(scope="module")
def led_a():
    led = core.ledger(None, example_a())
    s = led.summary()
    assert s["productive_ns"] == 100 * S and s["accountable_ns"] == 210 * S  # DESIGN: goodput 100/210
    return led


# ---------------------------------------------------------------------------
# model FLOPs (PaLM appendix B) and peak FLOP/s


def test_model_flops_by_hand():
    # N = 1000, L = 2, H = 4, Q = 8, T = 16: 12·L·H·Q·T = 12·2·4·8·16 = 12,288
    mf = goodput.model_flops(params=1000, layers=2, heads=4, head_dim=8, seq_len=16, tokens_per_step=32, recompute="full")
    assert mf.per_token == 6 * 1000 + 12_288 == 18_288
    assert mf.hardware_per_token == 8 * 1000 + 16 * 1024 == 24_384  # full: one more forward pass (a third)
    assert Fraction(mf.hardware_per_token, mf.per_token) == Fraction(4, 3)
    assert mf.per_step == 18_288 * 32 == 585_216 and mf.hardware_per_step == 24_384 * 32
    sel = goodput.model_flops(params=1000, layers=2, heads=4, head_dim=8, seq_len=16, recompute="selective")
    assert sel.hardware_per_token == 6 * 1000 + 16 * 1024 == 22_384 and sel.per_step is None
    unknown = goodput.model_flops(params=1000, layers=2, heads=4, head_dim=8, seq_len=16, tokens_per_step=32)
    assert unknown.hardware_per_step is None  # recomputation unknown: no HFU
    given = goodput.model_flops(per_step=10**15, recompute="none")
    assert given.per_step == given.hardware_per_step == 10**15


def test_megatron_model_config_flops():
    """The real Megatron-LM ckpt-resume CI model: GPT, 12 layers, hidden 512, 8 heads,
    seq 1024, global batch 32, GPT-2 BPE vocabulary (50,257 tokens, padded by Megatron
    to a multiple of 128: 50,304), tied output embedding, biases and LayerNorms on."""
    text = shared(*MEGATRON).read_text()
    arg = {k: int(v) for k, v in re.findall(r"^\s*--([a-z-]+):\s*(\d+)\s*$", text, re.M)}
    L, h, H, T, gbs = (arg[k] for k in ("num-layers", "hidden-size", "num-attention-heads", "seq-length",
                                        "global-batch-size"))
    assert (L, h, H, T, gbs) == (12, 512, 8, 1024, 32)
    # per layer: LN 2h + QKV 3h²+3h + proj h²+h + LN 2h + fc1 4h²+4h + fc2 4h²+h = 12h² + 13h
    # N = 12·(12·512² + 13·512) + final LN 2·512 + output projection 50,304·512 (tied: once)
    #   = 37,828,608 + 1,024 + 25,755,648 = 63,585,280
    n = L * (12 * h * h + 13 * h) + 2 * h + 50_304 * h
    assert n == 63_585_280
    mf = goodput.model_flops(params=n, layers=L, heads=H, head_dim=h // H, seq_len=T, tokens_per_step=gbs * T,
                       recompute="none")
    # 6N = 381,511,680; 12·L·H·Q·T = 12·12·8·64·1024 = 75,497,472
    assert mf.per_token == 381_511_680 + 75_497_472 == 457_009_152
    assert mf.per_step == 457_009_152 * 32_768 == 14_975_275_892_736


def test_peak_table_has_a_source_per_row_and_the_datasheet_values():
    assert len(goodput.PEAK_FLOPS) >= 40
    for (acc, dt), p in goodput.PEAK_FLOPS.items():
        assert p.accelerator == acc and p.dtype == dt and p.flops > 0 and len(p.source) > 20
    assert goodput.peak_flops("H100_SXM", "bfloat16").flops == 989_500 * 10**9  # 1,979 with sparsity / 2
    assert goodput.peak_flops("a100-sxm", "bf16").flops == 312 * 10**12
    assert goodput.peak_flops("mi300x", "fp8").flops == Fraction("2614.9") * 10**12
    assert goodput.peak_flops("tpu-v5p", "bf16").flops == 459 * 10**12
    assert goodput.peak_flops("l4", "fp8").flops == Fraction("242.5") * 10**12
    mine = goodput.peak_flops("h100-sxm", "bf16", peaks={("h100-sxm", "bf16"): 700e12})
    assert mine.flops == 700 * 10**12 and "caller" in mine.source
    with pytest.raises(TypeError):
        goodput.PEAK_FLOPS[("x", "y")] = mine  # type: ignore[index]


def test_mfu_hfu_and_program_goodput_by_hand(led_a):
    # Example A: 10 preserved steps, productive 100 s, accountable 210 s, 1 accelerator.
    # 6 TFLOP per step (8 with full recomputation) on a 1 TFLOP/s peak:
    #   MFU = 10·6e12 / (1e12·100) = 3/5; HFU = 10·8e12 / (1e12·100) = 4/5
    #   program goodput over accountable time = 10·6e12 / (1e12·210) = 2/7 = MFU × 100/210
    mf = goodput.model_flops(per_step=6 * 10**12, hardware_per_step=8 * 10**12)
    pg = goodput.program_goodput(led_a, mf, peak=10**12)
    assert (pg.mfu, pg.hfu, pg.program_goodput) == (Fraction(3, 5), Fraction(4, 5), Fraction(2, 7))
    assert pg.program_goodput == pg.mfu * Fraction(led_a.summary()["productive_ns"], led_a.summary()["accountable_ns"])
    assert (pg.basis, pg.units, pg.model_flops) == ("steps", 10, 6 * 10**13) and not pg.warnings
    assert pg.summary()["mfu"] == 0.6 and pg.summary()["peak"]["source"] == "given by the caller (peak=)"
    # from the table: an A100 at bf16 (312 TFLOP/s): MFU = 6e13 / (312e12·100) = 1/520
    assert goodput.program_goodput(led_a, 6 * 10**12, accelerator="a100-sxm", dtype="bf16").mfu == Fraction(1, 520)
    # too much work for the peak: MFU above 1 is kept and said
    hot = goodput.program_goodput(led_a, 2 * 10**13, peak=10**12)
    assert hot.mfu == 2 and hot.warnings[0].code == "outcome.mfu_above_one"


# ---------------------------------------------------------------------------
# scheduling: sacct, ML Productivity Goodput, ETTR

SACCT_A = """JobID|JobName|State|ExitCode|Submit|Eligible|Start|End|NNodes|AllocTRES
900|train|COMPLETED|0:0|2024-05-01T09:59:00|2024-05-01T09:59:20|2024-05-01T10:00:00|2024-05-01T10:03:30|1|billing=8,cpu=8,gres/gpu=1,mem=64G,node=1
900.batch|batch|COMPLETED|0:0|2024-05-01T10:00:00|2024-05-01T10:00:00|2024-05-01T10:00:00|2024-05-01T10:03:30|1|cpu=8,gres/gpu=1,mem=64G,node=1
900.extern|extern|COMPLETED|0:0|2024-05-01T10:00:00|2024-05-01T10:00:00|2024-05-01T10:00:00|2024-05-01T10:03:30|1|billing=8,cpu=8,gres/gpu=1,mem=64G,node=1
"""


def test_sacct_times_and_accelerators():
    t = parse_sacct(SACCT_A)
    assert t.num_rows == 1 and t["steps"].to_pylist() == [2]
    r = t.to_pylist()[0]
    # submit 40 s before the start, eligible 20 s later; held 210 s on 1 GPU
    assert (r["submit_ns"], r["eligible_ns"], r["start_ns"], r["end_ns"]) == (T0 - 60 * S, T0 - 40 * S, T0, T0 + 210 * S)
    assert (r["accelerators"], r["nodes"], r["state"], r["exit_code"], r["exit_signal"]) == (1, 1, "COMPLETED", 0, 0)
    # the same instants printed in New York's summer time (UTC-4)
    ny = parse_sacct(SACCT_A.replace("T09:", "T05:").replace("T10:", "T06:"), tz="America/New_York")
    assert ny["start_ns"].to_pylist() == [T0] and ny.schema.metadata[b"pau.sacct.tz"] == b"America/New_York"
    every = parse_sacct(SACCT_A, steps=True)
    assert every["step"].to_pylist() == [None, "batch", "extern"] and "steps" not in every.schema.names
    typed = parse_sacct("JobID|AllocTRES|NNodes\n7|cpu=4,gres/gpu:a100=2,gres/gpu:h100=4|2\n8|cpu=4|1\n")
    assert typed["accelerators"].to_pylist() == [6, None]
    per_node = parse_sacct("JobID|NNodes\n7|2\n", accelerators_per_node=8)
    assert per_node["accelerators"].to_pylist() == [16]
    running = parse_sacct("JobID|Submit|Start|End\n5|1714557600|1714557660|Unknown\n6|1714557600|None|Unknown\n")
    assert running["start_ns"].to_pylist() == [T0 + 60 * S, None] and running["end_ns"].to_pylist() == [None, None]


def test_sacct_real_sample():
    """PSC Bridges (2017), ``--parsable2`` default format: 269 lines, 106 allocations and
    their .batch/.extern steps (the sample's README gives these counts)."""
    path = shared(*SACCT)
    t = read_sacct(path)
    assert t.num_rows == 106 and sum(t["steps"].to_pylist()) == 269 - 106
    assert sorted(set(t["partition"].to_pylist())) == ["GPU", "RM"]
    assert t["partition"].to_pylist().count("GPU") + t["partition"].to_pylist().count("RM") == 106
    every = read_sacct(path, steps=True)
    states = every["state"].to_pylist()
    assert every.num_rows == 269
    assert {s: states.count(s) for s in set(states)} == {"COMPLETED": 161, "RUNNING": 49, "PENDING": 31,
                                                          "TIMEOUT": 10, "CANCELLED": 10, "FAILED": 8}
    assert t.to_pylist()[0] == {"job_id": "2074737", "name": "_mb_bot240520ps_", "partition": "GPU",
                                "account": "mc4sa9p", "state": "COMPLETED", "exit_code": 0, "exit_signal": 0,
                                "alloc_cpus": 32, "steps": 2}
    # it has no Submit/Start/End: no scheduling figure, and the error says what to run
    led = core.ledger(None, example_a())
    with pytest.raises(SchemaError, match="start_ns.*is missing.*Submit"):
        goodput.mpg(led, t)


def test_mpg_factors_by_hand(led_a):
    # Example A held 1 accelerator 210 s after waiting 40 s (from Eligible):
    #   scheduling = 210 / (210 + 40) = 21/25; runtime = 100/210 = 10/21 (pau's goodput)
    #   program = MFU = 3/5 (above); MPG = 21/25 · 10/21 · 3/5 = 6/25
    led = core.ledger(None, example_a(T0))
    m = goodput.mpg(led, parse_sacct(SACCT_A), flops=6 * 10**12, peak=10**12)
    assert (m.scheduling, m.runtime, m.program, m.mpg) == (Fraction(21, 25), Fraction(10, 21), Fraction(3, 5),
                                                           Fraction(6, 25))
    assert m.mpg == m.scheduling * m.runtime * m.program and float(m.runtime) == led.summary()["goodput"]
    assert (m.queued_ns, m.schedule.allocated_ns, m.warnings) == (40 * S, 210 * S, [])
    assert m.summary()["mpg"] == 0.24
    # from Submit when Eligible is not known: 210 / (210 + 60) = 7/9
    no_eligible = parse_sacct(SACCT_A).drop_columns(["eligible_ns"])
    assert goodput.mpg(led, no_eligible).scheduling == Fraction(7, 9)
    # a schedule that allocated more than the ledger accounts is said, not hidden
    # (two accelerators for 210 s; and the time after as_of is cut, as the ledger's is)
    wider = pa.table({"submit_ns": [T0 - 40 * S], "start_ns": [T0], "end_ns": [T0 + 300 * S], "accelerators": [2]})
    w = goodput.mpg(led, wider)
    assert [x.code for x in w.warnings] == ["outcome.schedule_mismatch"]
    assert (w.schedule.allocated_ns, w.queued_ns, w.scheduling) == (420 * S, 80 * S, Fraction(210, 290))
    # without a schedule or FLOPs, the missing factor and the product are None
    part = goodput.mpg(led_a)
    assert part.runtime == Fraction(10, 21) and part.scheduling is None and part.mpg is None


def test_ettr_by_hand(led_a):
    # ETTR = productive / (accountable + queued) = 100 / (210 + 40) = 2/5 = scheduling × runtime
    led = core.ledger(None, example_a(T0))
    e = goodput.ettr(led, parse_sacct(SACCT_A))
    assert (e.ettr, e.available_ns, e.queued_ns) == (Fraction(2, 5), 250 * S, 40 * S)
    assert e.ettr == goodput.mpg(led, parse_sacct(SACCT_A)).scheduling * Fraction(10, 21)
    assert goodput.ettr(led_a, queued_ns=0).ettr == Fraction(10, 21)  # no queue: pau's goodput
    with pytest.raises(OptionError, match="queue time is unknown"):
        goodput.ettr(led_a)


# ---------------------------------------------------------------------------
# straggler scores


def test_straggler_scores_by_hand():
    # windows of 2 steps; durations (ms) per rank:
    #   steps 0,1: r0 10,10 (median 10); r1 10,30 (lower median 10); r2 20,20 (20)
    #   steps 2,3: r0 10,10 (10);        r1 40,40 (40);              r2 20,25 (lower median 20)
    # relative = fastest median of the window / own: w0 1, 1, 10/20; w2 1, 10/40, 10/20
    # individual = own best median so far / own:     w0 1, 1, 1;     w2 1, 10/40, 20/20
    ms = 10**6
    dur = {0: [10, 10, 10, 10], 1: [10, 30, 40, 40], 2: [20, 20, 20, 25]}
    rows = [(r, k, 1000 * k * ms, (1000 * k + d) * ms) for r, ds in dur.items() for k, d in enumerate(ds)]
    rows.append((0, 4, 4000 * ms, None))  # in flight: left out, counted
    t = pa.table({"rank": [x[0] for x in rows], "step": [x[1] for x in rows],
                  "start_ns": pa.array([x[2] for x in rows], pa.int64()), "end_ns": pa.array([x[3] for x in rows], pa.int64())})
    sc = stragglers.straggler_scores(t, every_steps=2)
    got = {(r["window"], r["rank"]): (r["median_ns"] // ms, r["relative"], r["individual"]) for r in sc.table.to_pylist()}
    assert got == {(0, 0): (10, 1.0, 1.0), (0, 1): (10, 1.0, 1.0), (0, 2): (20, 0.5, 1.0),
                   (2, 0): (10, 1.0, 1.0), (2, 1): (40, 0.25, 0.25), (2, 2): (20, 0.5, 1.0)}
    s = sc.summary()
    assert (s["stragglers"], s["in_flight"], s["windows"]) == ([1, 2], 1, 2)
    # time windows of 2 s from the steps' starts give the same windows here
    by_time = stragglers.straggler_scores(t, every_ns=2000 * ms).table
    assert by_time["relative"].to_pylist() == sc.table["relative"].to_pylist()
    # one window (no widths): the individual scores are all 1
    assert set(stragglers.straggler_scores(t).table["individual"].to_pylist()) == {1.0}


def _scores_twin(rows, width):
    """Slow and obvious: per (window, rank) the lower median; relative against the
    window's best rank, individual against the rank's best window so far."""
    cells: dict = {}
    for rank, step, start, end in rows:
        if end is not None:
            cells.setdefault((step // width * width, rank), []).append(end - start)
    med = {k: sorted(v)[(len(v) - 1) // 2] for k, v in cells.items()}
    out, best = {}, {}
    for w, r in sorted(med):
        ref = min(m for (w2, _), m in med.items() if w2 == w)
        best[r] = min(best.get(r, med[w, r]), med[w, r])
        out[w, r] = (med[w, r], ref / med[w, r] if med[w, r] else None, best[r] / med[w, r] if med[w, r] else None)
    return out


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 11), st.integers(0, 50), st.one_of(st.none(), st.integers(0, 40))),
                min_size=1, max_size=60, unique_by=lambda x: (x[0], x[1])), st.integers(1, 5))
def test_straggler_scores_against_a_twin(raw, width):
    rows = [(r, k, s0, None if d is None else s0 + d) for r, k, s0, d in raw]
    t = pa.table({"rank": pa.array([x[0] for x in rows], pa.int32()), "step": pa.array([x[1] for x in rows], pa.int64()),
                  "start_ns": pa.array([x[2] for x in rows], pa.int64()),
                  "end_ns": pa.array([x[3] for x in rows], pa.int64())})
    sc = stragglers.straggler_scores(t, every_steps=width)
    got = {(r["window"], r["rank"]): (r["median_ns"], r["relative"], r["individual"]) for r in sc.table.to_pylist()}
    assert got == _scores_twin(rows, width)
    assert sc.in_flight == sum(1 for x in rows if x[3] is None)
    for v in sc.table["relative"].to_pylist() + sc.table["individual"].to_pylist():
        assert v is None or 0 <= v <= 1


# ---------------------------------------------------------------------------
# recovery and progress protection


def test_time_to_recover_by_hand():
    # Example A: failure at 105 in attempt 1, which had completed step 8 (ended 100).
    #   first step of the next attempt: step 6 at 150 -> 45 s
    #   progress back: restore@5 (< 8) ends 150; re-done step 8 ends 180 -> 75 s
    # failure rate: 1 failure in 210 accelerator-s = 1 · 1000 · 3600 / 210 = 120,000/7 per 1,000 h
    r = recovery.recovery(example_a())
    (f,) = r.per_failure
    assert (f["attempt"], f["cause"], f["next_attempt"], f["progress_step"]) == (1, "xid79", 2, 8)
    assert (f["to_first_step_ns"], f["to_progress_ns"], f["lost_ns"]) == (45 * S, 75 * S, 35 * S)
    assert r.failures_per_1000_accelerator_hours == Fraction(120_000, 7) == r.by_cause["xid79"]["per_1000_accelerator_hours"]
    assert r.restart_loops == [] and [a["moved"] for a in r.attempts] == [True, True]
    # waste as capacity: badput 110 s over a 210 s wall = 11/21 of an accelerator idle throughout
    assert r.waste_equivalent_accelerators == Fraction(11, 21)
    assert r.table().column("to_progress_ns").to_pylist() == [75 * S]


def test_restart_loop_and_two_failures_by_hand():
    # failure 1 at 105 (progress 8): attempt 2 never completes a step; attempt 3 re-does
    #   steps 6, 7, 8 at 190-220 -> 115 s; the first step after 105 is attempt 2's step 6
    #   at 150 -> 45 s
    # failure 2 at 155 (attempt 2 had restored step 5, no step done: progress 5):
    #   attempt 3's restore@5 ends 190 -> 35 s; its first step also starts at 190 -> 35 s
    # attempt 2 ended without a newer durable checkpoint (5 before, 5 after): a restart loop
    r = recovery.recovery(example_loop())
    f1, f2 = r.per_failure
    assert (f1["progress_step"], f1["to_first_step_ns"], f1["to_progress_ns"]) == (8, 45 * S, 115 * S)
    assert (f2["progress_step"], f2["to_first_step_ns"], f2["to_progress_ns"]) == (5, 35 * S, 35 * S)
    assert (f2["lost_ns"], f2["cause"]) == (5 * S, "nccl_timeout")  # 150-155 of step 6
    loop = [a for a in r.attempts if a["restart_loop"]]
    assert [(a["attempt"], a["checkpoint_before"], a["checkpoint_after"], a["ns"]) for a in loop] == [(2, 5, 5, 25 * S)]
    assert r.restart_loops == [{"first_attempt": 2, "last_attempt": 2, "attempts": 1, "ns": 25 * S}]
    assert r.summary()["restart_loop_attempts"] == 1


def test_summary_per_failure_ns_is_the_list_of_the_mean():
    # example_loop: failures at 105 s and 155 s, recovered after 115 s and 35 s (by hand above)
    s = recovery.recovery(example_loop()).summary()
    assert s["per_failure_ns"] == [[105 * S, 115 * S], [155 * S, 35 * S]]
    d = [v for _, v in s["per_failure_ns"] if v is not None]
    assert len(s["per_failure_ns"]) == s["failures"] and len(s["per_failure_ns"]) - len(d) == s["not_recovered"]
    assert s["mean_to_progress_s"] == sum(d) / len(d) / S == 75.0
    # a failure not recovered by as_of: None in the list, not in the mean
    lc = example_loop()
    cut = recovery.recovery(lc, as_of=200 * S).summary()
    assert [t for t, _ in cut["per_failure_ns"]] == [105 * S, 155 * S]
    assert cut["per_failure_ns"][0][1] is None and cut["not_recovered"] >= 1
    got = [v for _, v in cut["per_failure_ns"] if v is not None]
    assert cut["mean_to_progress_s"] == (sum(got) / len(got) / S if got else None)


def test_progress_protection_breach_by_hand(led_a):
    # Contract: at most 30 accelerator-s lost per failure; example A's failure lost 35 s
    # -> a breach of 5 s; at $2 per accelerator-hour it costs 5/3600 · 2 = $1/360.
    # Its share of the work done by then (steps 1-8 and 5 s of step 9: 85 s) is 35/85 = 7/17.
    p = recovery.protection(led_a, bound_ns=30 * S, price_per_accelerator_hour=2)
    (row,) = p.rows
    assert (row["lost_ns"], row["work_ns"], row["share"], row["breach"]) == (35 * S, 85 * S, Fraction(7, 17), True)
    assert (p.breaches, p.excess_ns, p.excess_cost) == (1, 5 * S, Fraction(1, 360))
    assert not recovery.protection(led_a, bound_share=Fraction(1, 2)).breaches  # 7/17 < 1/2
    # per 100 s period: [0,100) lost 0; [100,200) holds the failure, lost 35 of 55 s of step work
    # (step 9's 5 s + steps 6-10's 50 s) -> share 7/11, breach of 5 s; [200,210) no step work.
    # Waste as capacity: badput 50, 50, 10 s -> 1/2, 1/2 and 1 accelerator idle over each period.
    q = recovery.protection(led_a, bound_ns=30 * S, per="period", period_ns=100 * S)
    got = [(r["start_ns"], r["end_ns"], r["lost_ns"], r["work_ns"], r["share"], r["breach"], r["idle_equivalent"])
           for r in q.rows]
    assert got == [(0, 100 * S, 0, 80 * S, Fraction(0), False, Fraction(1, 2)),
                   (100 * S, 200 * S, 35 * S, 55 * S, Fraction(7, 11), True, Fraction(1, 2)),
                   (200 * S, 210 * S, 0, 0, None, False, Fraction(1))]
    assert (q.breaches, q.excess_ns) == (1, 5 * S)
    assert q.table().num_rows == 3 and q.summary()["excess_accelerator_hours"] == 5 / 3600


# ---------------------------------------------------------------------------
# generated jobs: invariants


@pytest.mark.parametrize("seed", range(6))
def test_invariants_on_generated_jobs(seed):
    ranks = 2 + seed % 3
    job = synth.training_job(ranks=ranks, steps=80, seed=seed, mtbf_s=45, checkpoint_every=10, events=False,
                             per_rank_rows=True, async_checkpoint=seed % 2 == 0,
                             shrink_at_failure=2 if seed == 5 else None)
    led = core.ledger(None, job.lifecycle)
    s = led.summary()
    lc = job.lifecycle
    acc = lc.filter(pa.compute.equal(lc["record"], "accountable"))
    start = min(acc["start_ns"].to_pylist())
    sched = pa.table({"submit_ns": [start - 90 * S], "start_ns": [start], "end_ns": [s["as_of"]],
                      "accelerators": [ranks]})
    mf = goodput.model_flops(params=10**9, layers=24, heads=16, head_dim=128, seq_len=2048, tokens_per_step=2**20,
                       recompute="selective")
    m = goodput.mpg(led, sched, flops=mf, accelerator="h100-sxm", dtype="bf16")
    assert m.mpg == m.scheduling * m.runtime * m.program
    assert float(m.runtime) == s["goodput"] and m.runtime == Fraction(s["productive_ns"], s["accountable_ns"])
    assert m.program_goodput.hfu > m.program_goodput.mfu > 0
    assert goodput.ettr(led, sched).ettr == m.scheduling * m.runtime
    sc = stragglers.straggler_scores(lc, every_steps=10).table
    for col in ("relative", "individual"):
        v = np.array([x for x in sc[col].to_pylist() if x is not None])
        assert v.size and ((v >= 0) & (v <= 1)).all() and (v == 1).any()
    r = recovery.recovery(lc, ledger=led)
    assert r.failures == s["failures"] == sum(c["failures"] for c in r.by_cause.values()) == len(r.per_failure)
    for f in r.per_failure:
        assert f["to_first_step_ns"] is None or f["to_first_step_ns"] >= 0
        assert f["to_progress_ns"] is None or f["to_progress_ns"] >= 0
        if r.attempts[-1]["end"] == "completed":  # the job completed: every loss was made good
            assert f["to_progress_ns"] is not None
    p = recovery.protection(led, bound_ns=0, per="period", period_ns=60 * S)
    assert sum(f["lost_ns"] for f in r.per_failure) + p.superseded_ns == s["state_ns"]["rolled_back"]
    assert sum(x["lost_ns"] for x in p.rows) == s["state_ns"]["rolled_back"]
    assert sum(x["badput_ns"] for x in p.rows) == s["badput_ns"]
    assert sum(x["work_ns"] for x in p.rows) == sum(s["state_ns"][k] for k in ("productive", "pending", "rolled_back"))
    assert p.breaches == sum(1 for x in p.rows if x["lost_ns"] > 0)
    assert r.waste_equivalent_accelerators == Fraction(s["badput_ns"], job.as_of - job.start_ns)


# ---------------------------------------------------------------------------
# bad input


def test_bad_flops_and_peaks(led_a):
    with pytest.raises(PauError, match="params = -1 is negative.*Fix"):
        goodput.model_flops(params=-1, layers=2, heads=4, head_dim=8, seq_len=16)
    with pytest.raises(PauError, match="per_step = -5 is negative"):
        goodput.model_flops(per_step=-5)
    with pytest.raises(PauError, match="not an integer"):
        goodput.model_flops(params=1.5, layers=2, heads=4, head_dim=8, seq_len=16)
    with pytest.raises(OptionError, match="lacks heads"):
        goodput.model_flops(params=1, layers=2, head_dim=8, seq_len=16)
    with pytest.raises(OptionError, match="twice"):
        goodput.model_flops(per_step=1, params=1)
    with pytest.raises(PauError, match="below per_step"):
        goodput.model_flops(per_step=10, hardware_per_step=9)
    with pytest.raises(OptionError, match="recompute"):
        goodput.model_flops(per_step=10, recompute="some")
    with pytest.raises(OptionError, match="'h200x' is not in PEAK_FLOPS.*h100-sxm"):
        goodput.peak_flops("h200x", "bf16")
    with pytest.raises(OptionError, match="no 'fp8' peak.*bf16"):
        goodput.peak_flops("a100-sxm", "fp8")
    with pytest.raises(PauError, match="peak = -1 is not positive"):
        goodput.program_goodput(led_a, 10, peak=-1)
    with pytest.raises(PauError, match="not finite"):
        goodput.program_goodput(led_a, 10, peak=float("nan"))
    with pytest.raises(OptionError, match="peak FLOP/s is unknown"):
        goodput.program_goodput(led_a, 10)
    with pytest.raises(PauError, match="is negative"):
        goodput.program_goodput(led_a, -10, peak=1)
    with pytest.raises(PauError, match="no lifecycle"):
        goodput.program_goodput(core.ledger(pa.table({"rank": [0], "start_ns": [0], "end_ns": [5],
                                                 "kind": ["compute"]}), None), 10, peak=1)


def test_bad_sacct_rows_name_row_column_and_fix(tmp_path):
    bad_time = SACCT_A.replace("2024-05-01T10:00:00|2024-05-01T10:03:30|1|billing", "2024-13-01T10:00:00|2024-05-01T10:03:30|1|billing")
    with pytest.raises(InvalidRowError, match=r"column 'Start', row 0: '2024-13-01T10:00:00' is not a time.*line 2.*Fix"):
        parse_sacct(bad_time, source="job900.txt")
    with pytest.raises(InvalidRowError, match=r"column 'Start', row 1: 'yesterday' is not a time"):
        parse_sacct("JobID|Start\n1|2024-05-01T10:00:00\n2|yesterday\n")
    with pytest.raises(InvalidRowError, match=r"column 'End', row 0: is before Start"):
        parse_sacct("JobID|Start|End\n1|2024-05-01T10:00:00|2024-05-01T09:00:00\n")
    with pytest.raises(InvalidRowError, match=r"column 'Start', row 0: is before Submit"):
        parse_sacct("JobID|Submit|Start\n1|2024-05-01T10:00:00|2024-05-01T09:00:00\n")
    with pytest.raises(InvalidRowError, match=r"has 2 fields where the header has 3"):
        parse_sacct("JobID|State|End\n1|RUNNING\n")
    with pytest.raises(InvalidRowError, match=r"column 'NNodes', row 0: 'two' is not"):
        parse_sacct("JobID|NNodes\n1|two\n")
    with pytest.raises(InvalidRowError, match=r"column 'JobID', row 0: is a step of job 5.*steps=True"):
        parse_sacct("JobID|State\n5.batch|COMPLETED\n")
    q = parse_sacct("JobID|Start\n1|2024-05-01T10:00:00\n2|yesterday\n3|None\n", on_invalid="quarantine")
    assert isinstance(q, Quarantined) and q.result["job_id"].to_pylist() == ["1", "3"]
    assert q.quarantine.to_pylist() == [{"JobID": "2", "Start": "yesterday", "row": 1, "line": 3,
                                         "reason": "'yesterday' is not a time (line 3)"}]
    assert q.result.schema.metadata[b"pau.quarantined_rows"] == b"1"
    with pytest.raises(SchemaError, match="JobID"):
        parse_sacct("State|End\nRUNNING|Unknown\n")
    with pytest.raises(OptionError, match="time zone"):
        parse_sacct(SACCT_A, tz="Mars/Olympus")
    with pytest.raises(NoInputError):
        read_sacct(tmp_path / "nothing.txt")
    (tmp_path / "p.txt").write_text("JobID|State|\n1|RUNNING|\n")  # --parsable: a trailing '|'
    assert read_sacct(tmp_path / "p.txt")["state"].to_pylist() == ["RUNNING"]
    assert "Submit" in SACCT_FORMAT and "AllocTRES" in SACCT_FORMAT


def test_bad_schedules_scores_and_bounds(led_a):
    led = core.ledger(None, example_a(T0))
    base = {"submit_ns": [T0 - 40 * S], "start_ns": [T0], "end_ns": [T0 + 210 * S], "accelerators": [1]}
    for col, val, msg in (("accelerators", [0], "accelerators', row 0: is not positive"),
                          ("start_ns", [T0 - 50 * S], "start_ns', row 0: is before the job could start"),
                          ("end_ns", [T0 - S], "end_ns', row 0: is before start_ns"),
                          ("submit_ns", pa.array([None], pa.int64()), "submit_ns', row 0: is null")):
        with pytest.raises(InvalidRowError, match=msg):
            goodput.mpg(led, pa.table({**base, col: val}))
    with pytest.raises(SchemaError, match="accelerators"):
        goodput.ettr(led, pa.table({k: v for k, v in base.items() if k != "accelerators"}))
    with pytest.raises(OptionError, match="not the ledger's as_of"):
        goodput.mpg(led, pa.table(base), as_of=T0)
    steps = pa.table({"rank": [0, -1], "step": [1, 1], "start_ns": [0, 0], "end_ns": [5, 5]})
    with pytest.raises(InvalidRowError, match="column 'rank', row 1: rank -1"):
        stragglers.straggler_scores(steps)
    q = stragglers.straggler_scores(steps, on_invalid="quarantine")
    assert isinstance(q, Quarantined) and q.quarantine["row"].to_pylist() == [1]
    with pytest.raises(OptionError, match="both set the windows"):
        stragglers.straggler_scores(steps, every_steps=1, every_ns=1)
    with pytest.raises(OptionError, match="give one bound"):
        recovery.protection(led_a, bound_ns=1, bound_share=0.1)
    with pytest.raises(PauError, match="above 1"):
        recovery.protection(led_a, bound_share=2)
    with pytest.raises(OptionError, match="needs period_ns"):
        recovery.protection(led_a, bound_ns=1, per="period")
    with pytest.raises(OptionError, match="applies to per='period'"):
        recovery.protection(led_a, bound_ns=1, period_ns=10)
    with pytest.raises(OptionError, match="lifecycle table"):
        recovery.recovery(led_a)
    assert NS_PER_HOUR == 3600 * S
