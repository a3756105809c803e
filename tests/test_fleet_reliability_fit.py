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
