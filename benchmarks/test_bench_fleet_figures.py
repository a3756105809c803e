"""The fleet's change points over many series (issue 41): ``pau.fleet.changes``.

10,000 series of 52 periods (a year of weekly figures for 10,000 groups; the series count
scaled by ``PAU_BENCH_SCALE``), goodput around 0.90 with noise sd 0.01; every tenth series
drops to 0.80 at period 20. Target: PELT and CUSUM each under a second for all of them.
Measure with::

    python -m pytest benchmarks -p no:cacheprovider -k fleet_figures --benchmark-enable

Beside them, ruptures' PELT (the engine a user would otherwise use, one series per call)
on 200 of the series, when it is installed, for the time per series.

The answer is asserted once: each planted drop is found within one period, the median
levels before and after it are within 0.002 of 0.90 and 0.80, and PELT's breakpoints
equal ruptures' on the series it ran.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench_config import SEED, scaled
from pau.fleet import changes as C

PERIODS = 52
EVERY = 10  # one planted drop every EVERY series


@pytest.fixture(scope="module")
def series():
    n = scaled(10_000)  # at least 1,000
    rng = np.random.default_rng(SEED)
    X = 0.90 + rng.normal(0, 0.01, (n, PERIODS))
    X[::EVERY, 20:] -= 0.10
    W = rng.uniform(900, 1100, (n, PERIODS))
    return X, W


def check(res, X):
    tab = res.table.to_pydict()
    s = np.asarray(tab["series"])
    p = np.asarray(tab["period"])
    planted = np.arange(0, len(X), EVERY)
    before, after = np.asarray(tab["level_before"]), np.asarray(tab["level_after"])
    # each planted drop: a change within one period of 20 whose level falls by over 0.05
    # (the noise alone splits off a short segment now and then, with levels a few
    # hundredths apart)
    drop = (np.abs(p - 20) <= 1) & (after - before < -0.05)
    assert sorted(s[drop]) == list(planted)
    assert abs(np.median(before[drop]) - 0.90) < 0.002 and abs(np.median(after[drop]) - 0.80) < 0.002
    assert np.all(np.asarray(tab["accelerator_hours"])[drop] < 0)


@pytest.mark.parametrize("method", ["pelt", "cusum"])
def test_change_points_of_many_series(benchmark, series, method, report_note):
    X, W = series
    benchmark.group = f"change points, {len(X):,} series of {PERIODS} periods"
    res = benchmark(getattr(C, method), X, weights=W)
    check(res, X)
    if method == "pelt":
        rpt = pytest.importorskip("ruptures")
        for i in range(0, len(X), max(1, len(X) // 20)):
            want = rpt.Pelt(model="l2", min_size=1, jump=1).fit(X[i]).predict(pen=float(res.penalty[i]))[:-1]
            got = [int(q) for q, v in zip(res.table["period"].to_pylist(), res.table["series"].to_pylist()) if v == i]
            assert got == want
    if benchmark.stats:
        med = benchmark.stats.stats.median
        report_note(f"{method}: {len(X):,} series of {PERIODS} periods in {med * 1e3:.0f} ms (median), "
                    f"{med / len(X) * 1e6:.1f} us a series")


def test_ruptures_pelt_one_series_a_call(benchmark, series, report_note):
    rpt = pytest.importorskip("ruptures")
    X, _ = series
    sub = X[:200]
    pen = C.default_penalty(sub)
    benchmark.group = f"change points, {len(X):,} series of {PERIODS} periods"

    def run():
        return [rpt.Pelt(model="l2", min_size=1, jump=1).fit(x).predict(pen=float(b))[:-1]
                for x, b in zip(sub, pen)]

    out = benchmark(run)
    got = C.pelt(sub).table.to_pydict()
    for i, want in enumerate(out):
        assert [p for p, s in zip(got["period"], got["series"]) if s == i] == want
    if benchmark.stats:
        med = benchmark.stats.stats.median
        report_note(f"ruptures Pelt: {len(sub)} series in {med * 1e3:.0f} ms (median), "
                    f"{med / len(sub) * 1e6:.0f} us a series")
