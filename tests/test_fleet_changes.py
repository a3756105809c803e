"""Change points (PELT, CUSUM) and efficiency as capacity: pau.fleet.changes.

PELT is held against ruptures (a test-only oracle) and against optimal partitioning
written out slowly here (the same optimum without pruning); CUSUM against a scalar loop
of the same rule; both against planted changes.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from depth import examples
from pau.errors import PauError
from pau.fleet import changes as C

rpt = pytest.importorskip("ruptures", reason="ruptures is the PELT oracle (pip install -e '.[test]')")


def generated(seed: int) -> tuple[np.ndarray, float]:
    """A piecewise-constant series with Gaussian noise, and a penalty."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 120))
    k = int(rng.integers(0, 6))
    cuts = np.sort(rng.integers(0, n, k))
    levels = np.repeat(rng.normal(0, 2, k + 1), np.diff(np.r_[0, cuts, n]))
    x = levels + rng.normal(0, rng.uniform(0.05, 1.0), n)
    return x, float(rng.uniform(0.05, 10))


def optimal_partitioning(x: np.ndarray, beta: float) -> list[int]:
    """Jackson et al. (2005): the exact minimum of cost + beta per change, every
    candidate at every step (no pruning), the cost written out per segment."""
    n = len(x)
    F = [-beta] + [math.inf] * n
    last = [0] * (n + 1)
    for t in range(1, n + 1):
        for tau in range(t):
            seg = x[tau:t]
            v = F[tau] + float(((seg - seg.mean()) ** 2).sum()) + beta
            if v < F[t]:
                F[t], last[t] = v, tau
    out, t = [], n
    while last[t] > 0:
        out.append(last[t])
        t = last[t]
    return sorted(out)


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_pelt_agrees_with_ruptures(seed):
    x, pen = generated(seed)
    want = rpt.Pelt(model="l2", min_size=1, jump=1).fit(x).predict(pen=pen)[:-1]
    assert C.pelt(x, penalty=pen).table["period"].to_pylist() == want


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_pelt_is_the_optimum_without_pruning(seed):
    x, pen = generated(seed)
    assert C.pelt(x, penalty=pen).table["period"].to_pylist() == optimal_partitioning(x, pen)


def test_many_series_at_once_equal_one_at_a_time():
    """Series in one call (blocks, a candidate pruned in some series only) give what each
    gives alone, penalty per series included."""
    rng = np.random.default_rng(7)
    S, n = C.BLOCK + 37, 40
    X = rng.normal(0, 1, (S, n)) + np.where(np.arange(n) >= rng.integers(1, n, (S, 1)), 3.0, 0.0)
    pens = rng.uniform(1, 20, S)
    W = rng.uniform(0, 10, (S, n))
    both = C.pelt(X, penalty=pens, weights=W).table
    for s in range(0, S, 23):
        alone = C.pelt(X[s], penalty=pens[s], weights=W[s]).table
        mine = both.filter(np.asarray(both["series"]) == s)
        assert mine["period"].to_pylist() == alone["period"].to_pylist()
        np.testing.assert_allclose(np.asarray(mine["accelerator_hours"]), np.asarray(alone["accelerator_hours"]))


def planted(series: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Goodput 0.90 then 0.80 from period 20 of 52, noise sd 0.01; allocated
    accelerator-hours per period around 1,000."""
    rng = np.random.default_rng(seed)
    X = np.where(np.arange(52) >= 20, 0.80, 0.90) + rng.normal(0, 0.01, (series, 52))
    W = rng.uniform(900, 1100, (series, 52))
    return X, W


@pytest.mark.parametrize("method", ["pelt", "cusum"])
def test_a_planted_drop_is_found_and_costed(method):
    X, W = planted(200)
    res = getattr(C, method)(X, weights=W)
    tab = res.table.to_pydict()
    truth, near, alone = [], [], []
    for s in range(len(X)):
        rows = [i for i, v in enumerate(tab["series"]) if v == s]
        periods = [tab["period"][i] for i in rows]
        # found within one period in every series
        i = rows[int(np.argmin([abs(p - 20) for p in periods]))]
        assert abs(tab["period"][i] - 20) <= 1, (s, periods)
        near.append(tab["accelerator_hours"][i])
        truth.append(-0.10 * W[s, 20:].sum())
        # the levels are the segments' means, the hours (after - before) x the weights after
        t = tab["period"][i]
        nxt = min([p for p in periods if p > t], default=52)
        prv = max([p for p in periods if p < t], default=0)
        before, after = X[s, prv:t].mean(), X[s, t:nxt].mean()
        assert tab["level_before"][i] == pytest.approx(before, rel=1e-12)
        assert tab["level_after"][i] == pytest.approx(after, rel=1e-12)
        assert tab["accelerator_hours"][i] == pytest.approx((after - before) * W[s, t:nxt].sum(), rel=1e-9)
        if periods == [20]:
            # the only change: within 1 % of the productive hours the drop cost in this
            # series' own data (sum over the periods after it of (goodput - before) x hours)
            realised = ((X[s, 20:] - X[s, :20].mean()) * W[s, 20:]).sum()
            assert tab["accelerator_hours"][i] == pytest.approx(realised, rel=0.01)
            alone.append(s)
    # the noise (sd 0.01) alone splits some series again (see docs/fleet.md for the rates)
    assert len(alone) >= 100
    # the planted truth (-0.10 x the hours after the drop): one series' estimate is off by
    # about 3 % (sd of a difference of means over 20 and 32 periods: 0.0029 on 0.10); the
    # mean over the series where the drop is the only change is within 1 %
    err = np.array([near[s] / truth[s] - 1 for s in alone])
    assert abs(err.mean()) < 0.01


def test_default_penalty_and_noise_estimate():
    X, _ = planted(500, seed=3)
    sd = C.noise_sd(X)
    # the robust estimate ignores the level shift; the plain sd of the series does not
    assert np.median(sd) == pytest.approx(0.01, rel=0.05)
    assert X.std(axis=1).min() > 0.04
    np.testing.assert_allclose(C.pelt(X).penalty, 1.5 * 2 * math.log(52) * sd**2)  # 1.5 x BIC
    # a noiseless step: the MAD of the differences is 0, the plain sd of the differences is used
    step = np.r_[np.zeros(10), np.ones(10)]
    assert C.noise_sd(step)[0] == pytest.approx(np.diff(step).std() / math.sqrt(2))
    assert C.pelt(step).table["period"].to_pylist() == [10]


def test_false_alarm_shares_on_noise_match_the_docs():
    """docs/fleet.md states the share of pure-noise series of 52 periods with at least one
    change under the defaults; these hold them to within sampling error."""
    rng = np.random.default_rng(11)
    N = 0.9 + rng.normal(0, 0.01, (4000, 52))

    def share(res):
        return np.unique(np.asarray(res.table["series"])).size / len(N)

    assert 0.15 < share(C.pelt(N, penalty=C.bic_penalty(N))) < 0.22          # docs: 18 %
    default = C.pelt(N)
    assert 0.03 < share(default) < 0.07                                      # docs: 5 %
    assert np.allclose(default.penalty, 1.5 * C.bic_penalty(N))
    assert 0.07 < share(C.cusum(N, target=0.9, sigma=0.01)) < 0.12          # docs: 9 %


def test_constant_and_empty_series_have_no_change():
    for x in ([], [0.1] * 30, np.full((3, 8), 0.7)):
        assert len(C.pelt(x)) == 0
        assert len(C.cusum(x)) == 0
    assert C.pelt(np.ones((0, 5))).table.num_rows == 0


def cusum_reference(x, h, k, sigma, target, warmup):
    """The same rule, one series, scalar Python."""
    n = len(x)
    mu = float(np.mean(x[:warmup])) if target is None else target
    sp = sn = 0.0
    rp = rn = 0
    out = []
    for t in range(n):
        z = (x[t] - mu) / sigma if sigma > 0 else 0.0
        sp = max(0.0, sp + z - k)
        sn = max(0.0, sn - z - k)
        if sp == 0:
            rp = t + 1
        if sn == 0:
            rn = t + 1
        if sigma > 0 and (sp > h or sn > h):
            first = rp if sp >= sn else rn
            best, tau = -1.0, first
            for cand in range(first, t + 1):
                d = float(np.sum(x[cand: t + 1] - mu))
                if d * d / (t + 1 - cand) > best:
                    best, tau = d * d / (t + 1 - cand), cand
            if tau > 0:
                out.append((tau, t))
            mu = float(np.mean(x[tau: tau + warmup]))
            sp = sn = 0.0
            rp = rn = t + 1
    return out


@settings(max_examples=examples(100), deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([(5.0, 0.5), (3.0, 0.25), (8.0, 1.0)]),
       st.integers(1, 10), st.booleans())
def test_cusum_matches_a_scalar_reference(seed, hk, warmup, with_target):
    x, _ = generated(seed)
    X = np.stack([x, x[::-1], 2 * x + 1])
    h, k = hk
    target = 0.0 if with_target else None
    res = C.cusum(X, h=h, k=k, warmup=warmup, target=target).table.to_pydict()
    for s in range(3):
        want = cusum_reference(X[s], h, k, C.noise_sd(X[s])[0], target, warmup)
        got = [(p, d) for q, p, d in zip(res["series"], res["period"], res["detected"]) if q == s]
        assert got == want


def test_cusum_detects_after_the_change_and_given_sigma():
    x = np.r_[np.zeros(20), np.full(20, 1.0)]
    res = C.cusum(x, sigma=0.5, h=5, k=0.5)
    (p,) = res.points
    assert p.period == 20 and p.detected >= 20 and p.level_before == 0 and p.level_after == 1
    assert p.accelerator_hours is None


def test_capacity_in_accelerators_worth():
    # 1,680 productive accelerator-hours more in a 168-hour week: ten accelerators' worth
    assert C.accelerators_gained(10_000, 11_680, 168) == pytest.approx(10.0)
    assert C.accelerators_gained(11_680, 10_000, 168) == pytest.approx(-10.0)
    np.testing.assert_allclose(C.accelerators_gained([0, 24], [24, 0], 24), [1.0, -1.0])
    with pytest.raises(PauError, match="period_hours"):
        C.accelerators_gained(1, 2, 0)
    with pytest.raises(PauError, match="productive_hours_a"):
        C.accelerators_gained(-1, 2, 24)


@pytest.mark.parametrize("call, match", [
    (lambda: C.pelt([1.0, float("nan"), 2.0]), r"series 0, period 1 is nan"),
    (lambda: C.pelt([1.0, 2.0], penalty=0), "penalty"),
    (lambda: C.pelt([[1.0, 2.0]], penalty=[1.0, 2.0]), "one per series"),
    (lambda: C.pelt([1.0, 2.0], weights=[1.0]), "weights"),
    (lambda: C.pelt([1.0, 2.0], weights=[1.0, -1.0]), "weights: series 0, period 1"),
    (lambda: C.pelt(np.zeros((2, 2, 2))), "shape"),
    (lambda: C.cusum([1.0, 2.0], h=-1), "h = -1"),
    (lambda: C.cusum([1.0, 2.0], warmup=0), "warmup"),
    (lambda: C.cusum([1.0, 2.0], target=float("inf")), "target"),
])
def test_bad_input_is_refused(call, match):
    with pytest.raises(PauError, match=match):
        call()


def long_table(seed: int = 0):
    """Three teams' weekly goodput in shuffled rows: two 52-week series (one with the
    planted drop), one of 30 weeks with a null cluster."""
    rng = np.random.default_rng(seed)
    rows, series = [], {}
    for team, n, drop in (("a", 52, True), ("b", 52, False), ("c", 30, True)):
        x = np.where((np.arange(n) >= 20) & drop, 0.80, 0.90) + rng.normal(0, 0.01, n)
        w = rng.uniform(900, 1100, n)
        series[team] = (x, w)
        rows += [(team, None if team == "c" else "east", 7 * i, x[i], w[i]) for i in range(n)]
    rows = [rows[i] for i in rng.permutation(len(rows))]
    cols = ("team", "cluster", "week", "goodput", "allocated_h")
    return pa.table({c: [r[j] for r in rows] for j, c in enumerate(cols)}), series


@pytest.mark.parametrize("method", ["pelt", "cusum"])
def test_group_changes_equal_each_series_alone(method):
    t, series = long_table()
    out = C.group_changes(t, "goodput", by=["team", "cluster"], period="week", weight="allocated_h",
                          method=method).to_pylist()
    assert [r["team"] for r in out] == sorted(r["team"] for r in out)
    for team, (x, w) in series.items():
        alone = getattr(C, method)(x, weights=w).points
        mine = [r for r in out if r["team"] == team]
        assert [r["period"] for r in mine] == [7 * p.period for p in alone]
        assert [r["detected"] for r in mine] == [None if p.detected is None else 7 * p.detected for p in alone]
        assert [r["accelerator_hours"] for r in mine] == pytest.approx([p.accelerator_hours for p in alone])
        assert all(r["cluster"] == (None if team == "c" else "east") for r in mine)
    # the planted drops, found in the groups that have one
    assert {r["team"] for r in out if abs(r["period"] - 140) <= 7 and r["level_after"] < 0.85} == {"a", "c"}


def test_group_changes_refuse_what_they_cannot_use():
    t, _ = long_table()
    with pytest.raises(PauError, match="second row for the same group and period"):
        C.group_changes(pa.concat_tables([t, t.slice(0, 1)]), "goodput", by=["team", "cluster"], period="week")
    g = t.set_column(3, "goodput", pa.array([None] + t["goodput"].to_pylist()[1:], pa.float64()))
    with pytest.raises(PauError, match="column 'goodput', row 0: null"):
        C.group_changes(g, "goodput", by="team", period="week")
    with pytest.raises(PauError, match="column 'period' is missing"):
        C.group_changes(t, "goodput", by="team")
    with pytest.raises(PauError, match="method"):
        C.group_changes(t, "goodput", by="team", period="week", method="binseg")
    empty = C.group_changes(t.slice(0, 0), "goodput", by="team", period="week")
    assert empty.num_rows == 0 and empty.column_names[:2] == ["team", "period"]
