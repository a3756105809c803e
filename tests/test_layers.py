"""pau.figures.layers: the stack from requested time down to useful FLOPs, worked by hand."""

from __future__ import annotations

import json
from fractions import Fraction

import pyarrow as pa
import pytest
from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import pau
import pau.core as pc
from pau import cli, synth
from pau.figures import layers
from pau.errors import PauError
from pau.readers.slurm import parse_sacct

from test_outcome import SACCT_A, T0, example_a

S = 10**9


def _events() -> pa.Table:
    """Example A's rank 0: compute 10-40 s and communication 35-50 s (in steps 1-5),
    compute 150-190 s (in steps 6-10 of attempt 2)."""
    rows = [(10, 40, "compute"), (35, 50, "communication"), (150, 190, "compute")]
    return pa.table({"rank": pa.array([0] * 3, pa.int32()), "start_ns": [T0 + a * S for a, _, _ in rows],
                     "end_ns": [T0 + b * S for _, b, _ in rows], "kind": [k for _, _, k in rows]})


def _samples() -> pa.Table:
    """sm_active 0.5 every 10 s over the whole run (each value holds for the period before it)."""
    times = [T0 + k * 10 * S for k in range(22)]
    return pa.table({"rank": pa.array([0] * len(times), pa.int32()), "time_ns": times,
                     "metric": pa.array(["sm_active"] * len(times)).dictionary_encode(),
                     "value": [0.5] * len(times)})


def test_every_layer_by_hand():
    # Example A (DESIGN 2.4): accountable 210 s; productive 100 s (steps 1-5 and 6-10);
    # lost to rolled-back work 35 s (xid79), checkpoints 20, init 10, outage 25, re-init 10
    # (attempt 2's init), restore 10.
    # Productive compute: 30 s (10-40) + 40 s (150-190) = 70 s; lost: communication 10 s
    # (exposed, 40-50), idle 20 s. Hardware: sm_active 0.5 -> 35 s. FLOPs: 10 preserved
    # steps x 2e12 at 1e12 FLOP/s = 20 s. The schedule waited 40 s from Eligible: 250 s.
    led = pc.ledger(_events(), example_a(T0))
    got = layers.layers(led, samples=_samples(), events=_events(), schedule=parse_sacct(SACCT_A),
                        flops=2 * 10**12, peak=10**12)
    names = [r.name for r in got.rows]
    assert names == ["requested", "accountable", "productive", "productive_compute", "hardware_active", "useful_flops"]
    assert [r.ns for r in got.rows] == [250 * S, 210 * S, 100 * S, 70 * S, 35 * S, 20 * S]
    assert [r.factor for r in got.rows] == [None, Fraction(21, 25), Fraction(10, 21), Fraction(7, 10),
                                            Fraction(1, 2), Fraction(4, 7)]
    assert got.product == Fraction(2, 25) == got.rows[-1].ns / got.rows[0].ns
    lost = {r.name: r.lost for r in got.rows}
    assert lost["accountable"] == {"queued": 40 * S}
    assert lost["productive"] == {"rolled_back.xid79": 35 * S, "checkpoint": 20 * S, "initialization": 10 * S,
                                  "recovery.outage": 25 * S, "recovery.reinit": 10 * S, "recovery.restore": 10 * S}
    assert lost["productive_compute"] == {"idle": 20 * S, "communication": 10 * S}
    assert lost["hardware_active"] == {"inactive": 35 * S}
    assert lost["useful_flops"] == {"below_peak": 15 * S}
    # the MPG factors are layers of the same stack: scheduling x runtime x (productive compute
    # x hardware x FLOPs relative to productive time) = MFU
    m = pau.figures.goodput.mpg(led, parse_sacct(SACCT_A), flops=2 * 10**12, peak=10**12)
    assert m.scheduling == got.rows[1].factor and m.runtime == got.rows[2].factor
    assert m.program == got.rows[3].factor * got.rows[4].factor * got.rows[5].factor


def test_layers_left_out_are_named_and_the_run_and_report_show_them(capsys, tmp_path):
    run = pau.Run(events=_events(), lifecycle=example_a(T0))
    got = run.layers()
    assert [r.name for r in got.rows] == ["accountable", "productive", "productive_compute"]
    assert set(got.left_out) == {"requested", "hardware_active", "useful_flops"}
    assert run.summary()["layers"] == got.summary()
    folder = run.write(tmp_path / "run")
    assert cli.main(["report", folder]) == 0
    out = capsys.readouterr().out
    assert "layers, top down" in out and "productive_compute" in out and "x 0.700" in out
    with pytest.raises(PauError, match="no lifecycle"):
        pau.Run(events=_events()).layers()


@settings(max_examples=examples(8), deadline=None)
@given(seed=st.integers(0, 2**16), ranks=st.integers(1, 4))
def test_factors_multiply_back_exactly_on_generated_jobs(seed, ranks):
    job = synth.training_job(ranks=ranks, steps=30, seed=seed, mtbf_s=40.0, checkpoint_every=8, kernels_per_step=6)
    led = pc.ledger(job.events, job.lifecycle)
    got = layers.layers(led)
    assert got.product == got.rows[-1].ns / got.rows[0].ns
    # every integer step loses exactly what its causes say
    for above, r in zip(got.rows, got.rows[1:]):
        assert above.ns - r.ns == sum(r.lost.values())
    s = led.summary()
    assert got.rows[1].ns == s["productive_ns"] and got.rows[2].ns == s["productive_strict_ns"]
    assert float(got.product) == pytest.approx(s["goodput_strict"], rel=1e-15)


def test_the_report_takes_the_stack_s_top_and_bottom_and_prices_it(tmp_path, capsys):
    folder = pau.Run(events=_events(), lifecycle=example_a(T0)).write(tmp_path / "run")
    sacct = tmp_path / "job.sacct"
    sacct.write_text(SACCT_A)
    args = ["report", folder, "--schedule", str(sacct), "--flops-per-step", str(2 * 10**12), "--peak-flops", "1e12",
            "--price", "3.6", "--format", "json"]
    assert cli.main(args) == 0
    lay = json.loads(capsys.readouterr().out)["layers"]
    assert [r["name"] for r in lay["layers"]] == ["requested", "accountable", "productive", "productive_compute",
                                                  "useful_flops"]
    assert [r["ns"] for r in lay["layers"]] == [250 * S, 210 * S, 100 * S, 70 * S, 20 * S]
    # $3.6 per accelerator-hour is $0.001 per accelerator-second
    assert [r["cost"] for r in lay["layers"]] == pytest.approx([0.25, 0.21, 0.1, 0.07, 0.02], rel=1e-12)
    assert lay["layers"][1]["lost_cost"] == {"queued": pytest.approx(0.04, rel=1e-12)}
    assert lay["product"] == pytest.approx(0.08, rel=1e-15)
    assert cli.main(["report", folder, "--flops-per-step", "5"]) == 2
    assert "needs the peak" in capsys.readouterr().err
