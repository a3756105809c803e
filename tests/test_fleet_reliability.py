"""Reliability by job size: pau.fleet.reliability (Poisson rates by class, exact intervals,
MTTF at a size, the checkpoint advice there)."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from depth import examples
from pau.errors import PauError, SchemaError
from pau.figures.economics import checkpoint_interval
from pau.fleet import reliability as R

# Garwood's exact 95 % limits for k Poisson events in unit exposure, as tabulated
# (e.g. Ulm 1990, Am. J. Epidemiol. 131:373; the limits are chi2/2 quantiles).
GARWOOD = {0: (0.0, 3.689), 1: (0.0253, 5.572), 2: (0.2422, 7.225), 5: (1.623, 11.668),
           10: (4.795, 18.390)}
# Chi-square quantiles from printed tables.
CHI2 = [(0.95, 1, 3.841), (0.975, 1, 5.024), (0.05, 1, 0.00393), (0.95, 10, 18.307),
        (0.025, 10, 3.247), (0.99, 30, 50.892), (0.5, 2, 1.386), (0.001, 5, 0.210)]


@pytest.mark.parametrize("p, df, want", CHI2)
def test_chi2_quantiles_against_printed_tables(p, df, want):
    decimals = len(repr(want).split(".")[1])
    assert R.chi2_quantile(p, df) == pytest.approx(want, abs=0.5 * 10**-decimals)


@pytest.mark.parametrize("k", sorted(GARWOOD))
def test_garwood_limits(k):
    low, high = R.poisson_interval(k, 1.0)
    assert (round(low, 4 if k < 5 else 3), round(high, 3)) == pytest.approx(GARWOOD[k], abs=1e-3)
    # exposure scales the rate
    low2, high2 = R.poisson_interval(k, 250.0)
    assert (low2, high2) == pytest.approx((low / 250, high / 250))


def test_gamma_p_known_values():
    # P(1, x) = 1 - e^-x; P(1/2, x) = erf(sqrt(x)); P(3, x) = P(Poisson(x) >= 3)
    for x in (0.01, 0.5, 1.0, 2.0, 7.5, 40.0):
        assert R.gamma_p(1.0, x) == pytest.approx(-math.expm1(-x), rel=1e-13)
        assert R.gamma_p(0.5, x) == pytest.approx(math.erf(math.sqrt(x)), rel=1e-13)
        tail = sum(math.exp(-x) * x**j / math.factorial(j) for j in range(3, 150))  # P(X >= 3), X ~ Poisson(x)
        assert R.gamma_p(3.0, x) == pytest.approx(tail, rel=1e-12)
    assert R.gamma_p(2.0, 0.0) == 0.0 and R.gamma_p(2.0, math.inf) == 1.0


@settings(max_examples=examples(150), deadline=None)
@given(st.floats(1e-6, 1 - 1e-6), st.one_of(st.floats(0.05, 50), st.integers(1, 20_000).map(float)))
def test_chi2_quantile_against_scipy(p, df):
    stats = pytest.importorskip("scipy.stats", reason="SciPy (installed with ruptures) is the oracle")
    assert R.chi2_quantile(p, df) == pytest.approx(float(stats.chi2.ppf(p, df)), rel=1e-10)


def jobs():
    # sizes 1..1024; class 8-15 gets 4 failures in 20,000 accelerator-hours, etc.
    return pa.table({
        "accelerators": [1, 1, 8, 12, 8, 64, 100, 1024],
        "accelerator_hours": [500.0, 500.0, 8_000.0, 6_000.0, 6_000.0, 32_000.0, 18_000.0, 100_000.0],
        "hw": [0, 0, 1, 2, 0, 3, 1, 9],
        "sw": [1, 0, 0, 1, 0, 0, 2, 1],
    })


def test_rates_by_power_of_two_classes():
    t = R.failure_rates(jobs(), failures={"hardware": "hw", "software": "sw"})
    rows = [r for r in t.to_pylist() if r["cause"] == "all"]
    assert [(r["accelerators_low"], r["accelerators_high"]) for r in rows] == [(1, 2), (8, 16), (64, 128), (1024, 2048)]
    by = {r["accelerators_low"]: r for r in rows}
    assert by[8]["jobs"] == 3 and by[8]["accelerator_hours"] == 20_000 and by[8]["failures"] == 4
    assert by[8]["rate_per_accelerator_hour"] == 4 / 20_000
    low, high = R.poisson_interval(4, 20_000)
    assert (by[8]["rate_low"], by[8]["rate_high"]) == (low, high)
    assert by[64]["failures"] == 6 and by[64]["accelerator_hours"] == 50_000
    hw = {r["accelerators_low"]: r for r in t.to_pylist() if r["cause"] == "hardware"}
    assert hw[1024]["rate_per_accelerator_hour"] == 9 / 100_000
    # causes add up to "all"
    for lo in by:
        parts = [r["failures"] for r in t.to_pylist() if r["accelerators_low"] == lo and r["cause"] != "all"]
        assert sum(parts) == by[lo]["failures"]


def test_rates_with_given_edges_keep_empty_classes():
    t = R.failure_rates(jobs(), failures="hw", edges=[1, 8, 512, math.inf]).to_pylist()
    assert [(r["accelerators_low"], r["accelerators_high"], r["failures"]) for r in t] == \
        [(1, 8, 0), (8, 512, 7), (512, None, 9)]
    assert t[0]["rate_per_accelerator_hour"] == 0.0 and t[0]["rate_low"] == 0.0
    assert t[0]["rate_high"] == pytest.approx(3.689 / 1_000, rel=1e-3)
    empty = R.failure_rates(jobs(), failures="hw", edges=[1, 2, 4, 2048]).to_pylist()[1]
    assert empty["accelerator_hours"] == 0 and empty["rate_per_accelerator_hour"] is None
    assert empty["rate_high"] is None
    with pytest.raises(PauError, match="outside the edges"):
        R.failure_rates(jobs(), failures="hw", edges=[2, 4096])
    with pytest.raises(PauError, match="edges"):
        R.failure_rates(jobs(), failures="hw", edges=[4, 2])


@pytest.mark.parametrize("change, match", [
    ({"accelerators": [0, 1, 8, 12, 8, 64, 100, 1024]}, r"'accelerators', row 0"),
    ({"accelerators": [1.5, 1, 8, 12, 8, 64, 100, 1024]}, r"'accelerators', row 0: 1.5"),
    ({"accelerator_hours": [500.0, -1.0, 8_000.0, 6_000.0, 6_000.0, 32_000.0, 18_000.0, 1.0]},
     r"'accelerator_hours', row 1"),
    ({"hw": pa.array([0, None, 1, 2, 0, 3, 1, 9])}, r"'hw', row 1: null"),
    ({"hw": ["a"] * 8}, "not a number"),
])
def test_bad_rows_are_named(change, match):
    t = jobs()
    for k, v in change.items():
        t = t.set_column(t.column_names.index(k), k, pa.array(v) if not isinstance(v, pa.Array) else v)
    with pytest.raises(PauError, match=match):
        R.failure_rates(t, failures="hw")


def test_a_missing_column_is_a_schema_error():
    with pytest.raises(SchemaError, match="failures"):
        R.failure_rates(jobs())


# Kokolis et al. 2024 (arXiv 2410.21680): 6.50 and 2.34 failures per 1,000 node-days on
# RSC-1 and RSC-2, nodes of 8 GPUs.
def per_gpu_hour(per_1000_node_days: float) -> float:
    return per_1000_node_days / 1_000 / (8 * 24)


@pytest.mark.parametrize("cluster, per_1000, gpus, hours", [
    ("RSC-1", 6.50, 16_384, 1.803), ("RSC-2", 2.34, 16_384, 5.008),
    ("RSC-1", 6.50, 1_024, 28.85), ("RSC-1", 6.50, 131_072, 0.2254),
])
def test_mttf_of_the_kokolis_clusters(cluster, per_1000, gpus, hours):
    # by hand: 1 / (gpus / 8 nodes x per_1000 / 1000 per day) x 24 h
    assert 24 / (gpus / 8 * per_1000 / 1_000) == pytest.approx(hours, rel=1e-3)
    assert R.mttf_hours(per_gpu_hour(per_1000), gpus) == pytest.approx(hours, rel=1e-3)


def test_at_size_calls_the_checkpoint_advice():
    r = per_gpu_hour(6.50)
    a = R.at_size(r, 16_384, checkpoint_cost_s=30, restart_s=600, current_interval_s=1_800)
    m = 24 / (16_384 / 8 * 6.50 / 1_000) * 3_600
    assert a.mttf_h * 3_600 == pytest.approx(m)
    want = checkpoint_interval(m, 30, 600, current_interval_s=1_800)
    assert a.checkpoint == pytest.approx(want)
    assert a.daly_s == want["daly_s"] and a.expected_goodput == want["expected_goodput_daly"]
    # docs/fleet.md's worked numbers
    assert a.daly_s == pytest.approx(604.2, abs=0.1)
    assert a.expected_goodput == pytest.approx(0.827, abs=1e-3)
    assert a.mttf_h_low is None and a.mttf_h_high is None


def test_at_size_from_the_rates_table():
    t = R.failure_rates(jobs(), failures={"hardware": "hw", "software": "sw"})
    a = R.at_size(t, 12, checkpoint_cost_s=10)
    assert a.rate_per_accelerator_hour == 4 / 20_000
    assert a.mttf_h == pytest.approx(1 / (12 * 4 / 20_000))
    low, high = R.poisson_interval(4, 20_000)
    assert (a.mttf_h_low, a.mttf_h_high) == pytest.approx((1 / (12 * high), 1 / (12 * low)))
    assert R.at_size(t, 12, checkpoint_cost_s=10, cause="hardware").rate_per_accelerator_hour == 3 / 20_000
    with pytest.raises(PauError, match="no class of the rates table holds 4096"):
        R.at_size(t, 4_096, checkpoint_cost_s=10)
    with pytest.raises(PauError, match="cause"):
        R.at_size(t, 12, checkpoint_cost_s=10, cause="power")
    # no failure: no MTTF, no advice (never a zero or an infinity)
    z = R.at_size(0.0, 8, checkpoint_cost_s=10)
    assert (z.mttf_h, z.checkpoint, z.daly_s) == (None, None, None)
    with pytest.raises(PauError, match="accelerators"):
        R.at_size(1e-5, 0, checkpoint_cost_s=10)


def test_many_jobs_fit_the_rate_they_were_drawn_from():
    """Failures drawn at a known rate per accelerator-hour: each class's 95 % interval
    holds it (all four classes, a 1 - 0.95^4 = 19 % chance to miss one by luck is
    avoided by the fixed seed, and the point estimates are within 10 %)."""
    rng = np.random.default_rng(5)
    sizes = 2 ** rng.integers(0, 4, 4_000) * 8
    hours = rng.uniform(10, 200, 4_000) * sizes
    rate = 2e-4
    fails = rng.poisson(rate * hours)
    t = R.failure_rates({"accelerators": sizes, "accelerator_hours": hours, "failures": fails}).to_pylist()
    assert len(t) == 4
    for row in t:
        assert row["rate_low"] < rate < row["rate_high"]
        assert row["rate_per_accelerator_hour"] == pytest.approx(rate, rel=0.1)
