"""``Fleet.reliability``: the failure rate per accelerator-hour by job-size class fitted
from the archive's own runs (issue 41 item 3), against a pandas computation from the runs
table, and the MTTF it predicts at a size."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from test_fleet_rollup import build_fleet

from pau.fleet import reliability


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    return build_fleet(tmp_path_factory.mktemp("fit"))


def test_rates_by_size_equal_pandas(fleet):
    got = fleet.reliability().to_pandas()
    runs = fleet.runs.to_pandas()
    runs = runs[runs["accountable_ns"].notna() & runs["accelerators"].notna()]
    assert runs["failures"].sum() > 0  # the generated runs fail (mtbf 2400 s)
    runs["cls"] = [2 ** int(math.floor(math.log2(a))) for a in runs["accelerators"]]
    want = runs.groupby("cls").agg(failures=("failures", "sum"), ns=("accountable_ns", "sum"), jobs=("run", "count"))
    assert list(got["accelerators_low"]) == list(want.index)
    assert list(got["failures"]) == list(want["failures"]) and list(got["jobs"]) == list(want["jobs"])
    rate = want["failures"] / (want["ns"] / 3.6e12)
    assert got["rate_per_accelerator_hour"].tolist() == pytest.approx(rate.tolist(), rel=1e-12)
    # one fleet-wide class, and the MTTF it predicts at 16,384 accelerators: 1 / (N r)
    one = fleet.reliability(edges=[1, math.inf]).to_pylist()[0]
    r = one["rate_per_accelerator_hour"]
    assert r == pytest.approx(runs["failures"].sum() / (runs["accountable_ns"].sum() / 3.6e12), rel=1e-12)
    assert reliability.mttf_hours(r, 16_384) == pytest.approx(1 / (16_384 * r), rel=1e-12)
    assert isinstance(got, pd.DataFrame)


def test_rates_by_cause_come_from_each_run_s_summary(fleet):
    """``failures_by_cause`` is each run's ``summary()["recovery"]["by_cause"]`` (the one
    per-run function), and ``reliability(by_cause=True)`` fits each cause's rate per class
    with pandas' sums of it, the ``all`` row equal to the fit without causes."""
    runs = fleet.runs.to_pylist()
    for row in runs:
        rec = fleet.run(row["run"]).summary().get("recovery")
        want = None if rec is None else sorted((c, v["failures"]) for c, v in rec["by_cause"].items())
        got = None if row["failures_by_cause"] is None else sorted(row["failures_by_cause"])
        assert got == want
        if got is not None:
            assert sum(v for _, v in got) == row["failures"]
    got = fleet.reliability(by_cause=True).to_pandas()
    flat = pd.DataFrame([{"cls": 2 ** int(math.floor(math.log2(r["accelerators"]))), "cause": c, "failures": v,
                          "ns": r["accountable_ns"]}
                         for r in runs if r["accountable_ns"] is not None and r["accelerators"] is not None
                         for c, v in (r["failures_by_cause"] or [])])
    causes = sorted(set(flat["cause"]))
    assert causes and set(got["cause"]) == set(causes) | ({"all"} if len(causes) > 1 else set())
    hours = {cls: ns / 3.6e12 for cls, ns in
             pd.DataFrame([{"cls": 2 ** int(math.floor(math.log2(r["accelerators"]))), "ns": r["accountable_ns"]}
                           for r in runs if r["accountable_ns"] is not None and r["accelerators"] is not None])
             .groupby("cls")["ns"].sum().items()}
    sums = flat.groupby(["cls", "cause"])["failures"].sum()
    for row in got.to_dict("records"):
        if row["cause"] == "all":
            continue
        n = int(sums.get((row["accelerators_low"], row["cause"]), 0))
        assert row["failures"] == n
        assert row["rate_per_accelerator_hour"] == pytest.approx(n / hours[row["accelerators_low"]], rel=1e-12)
    if len(causes) > 1:
        plain = fleet.reliability().to_pandas()
        all_rows = got[got["cause"] == "all"]
        assert all_rows["failures"].tolist() == plain["failures"].tolist()


def test_failures_no_cause_accounts_for_are_unknown_and_too_many_are_refused():
    import pyarrow as pa

    from pau.errors import PauError
    from pau.fleet.archive import _cause_counts

    t = pa.table({"run": ["a", "b", "c"], "failures": [3, 2, 0],
                  "failures_by_cause": pa.array([[("x", 1)], None, []], pa.map_(pa.string(), pa.int64()))})
    assert _cause_counts(t) == {"x": [1, 0, 0], "unknown": [2, 2, 0]}
    bad = t.set_column(1, "failures", pa.array([0, 2, 0]))
    with pytest.raises(PauError, match="'a'.*sums to more than its 0 failures"):
        _cause_counts(bad)
