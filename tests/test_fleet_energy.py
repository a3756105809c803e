"""Energy in the fleet (``docs/fleet.md``): the runs table's ``energy_j`` is the run's
``summary()["telemetry"]`` energy, the rollup's periods sum to each group's energy (null
for a group with none, never 0 J), and ``pau_energy_joules_total`` parses as OpenMetrics."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

import pau
import pau.core
from pau import synth
from pau.readers.telemetry import SAMPLES_SCHEMA
from pau.views import openmetrics

parser = pytest.importorskip("prometheus_client.openmetrics.parser")

H = 3_600 * 10**9


def _job(i: int) -> synth.TrainingJob:
    return synth.training_job(ranks=2, steps=30, seed=i, mtbf_s=2400, checkpoint_every=5, step_time_s=600,
                              kernels_per_step=3, buckets=1, events=False,
                              start_ns=synth.DEFAULT_START_NS + i * 29 * H + 17 * 10**9)


def _samples(job: synth.TrainingJob, seed: int, metric: str = "power_w") -> pa.Table:
    """Power every 10 s on both ranks, from the job's start to past its end."""
    rng = np.random.default_rng(seed)
    lo, hi = job.start_ns - 60 * 10**9, job.as_of + 60 * 10**9
    t = np.arange(lo, hi, 10 * 10**9, dtype=np.int64)
    ranks = np.repeat(np.array([0, 1], np.int32), len(t))
    return pa.table({"rank": ranks, "time_ns": np.tile(t, 2),
                     "metric": pa.array([metric] * len(ranks)).dictionary_encode(),
                     "value": rng.uniform(100.0, 700.0, len(ranks))}, schema=SAMPLES_SCHEMA)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("energy")
    runs = {}
    for cluster, seeds, powered in (("east", (0, 1, 2), True), ("west", (3, 4), False)):
        (root / cluster).mkdir()
        for i in seeds:
            job = _job(i)
            run = pau.Run(lifecycle=job.lifecycle, samples=_samples(job, i) if powered else None,
                          metadata={"format": "pau", "job": f"job-{i}"})
            run.write(root / cluster / f"run{i:03d}")
            runs[f"job-{i}"] = pau.read(root / cluster / f"run{i:03d}")
        pau.core.ingest([root / cluster], root / "fleet", workers=1,
                        labels={"cluster": cluster, "accelerator_type": "H100"})
    return pau.read_fleet(root / "fleet"), runs


def test_the_runs_table_energy_is_the_summary_s(fleet):
    f, runs = fleet
    got = {r["job"]: r for r in f.runs.to_pylist()}
    assert f.runs.schema.field("energy_j").type == pa.float64()
    for job, run in runs.items():
        tel = run.summary()["telemetry"]
        if tel is None:
            assert got[job]["energy_j"] is None and got[job]["energy_productive_j"] is None
            assert got[job]["energy_metric"] is None
            continue
        power = [r for r in tel if r["metric"] == "power_w"]
        assert got[job]["energy_metric"] == "power_w"
        assert got[job]["energy_j"] == math.fsum(r["energy_j"] for r in power) > 0
        assert got[job]["energy_productive_j"] == math.fsum(r["energy_j"] for r in power
                                                            if r["state"] == "productive") > 0
        assert got[job]["energy_productive_j"] < got[job]["energy_j"]


def test_energy_values_take_one_metric_and_null_for_none():
    from pau.fleet.archive import energy_values
    rows = [{"state": "productive", "metric": "power_w", "energy_j": 5.0},
            {"state": "idle", "metric": "power_w", "energy_j": 2.0},
            {"state": "productive", "metric": "energy_j", "energy_j": 4.0},
            {"state": "productive", "metric": "sm_active", "energy_j": None}]
    assert energy_values(rows) == ("energy_j", 4.0, 4.0)  # the counter, never power added to it
    assert energy_values(rows[:2]) == ("power_w", 7.0, 5.0)
    assert energy_values(rows[1:2]) == ("power_w", 2.0, None)  # no sample over productive time: unknown
    assert energy_values(rows[3:]) == (None, None, None)
    assert energy_values(None) == (None, None, None)


@pytest.mark.parametrize("every", ["1h", "1d", "1w"])
def test_the_rollup_periods_sum_to_each_group_s_energy(fleet, every):
    f, _ = fleet
    r = f.rollup(by="cluster", every=every)
    runs = f.runs.to_pylist()
    rows = r.table.to_pylist()
    east = [x for x in rows if x["cluster"] == "east"]
    want = math.fsum(x["energy_j"] for x in runs if x["cluster"] == "east")
    assert math.isclose(math.fsum(x["energy_j"] or 0.0 for x in east), want, rel_tol=1e-12)
    # each run's energy in the period of its last ns
    for x in east:
        mine = [y["energy_j"] for y in runs if y["cluster"] == "east"
                and x["period_start_ns"] <= y["end_ns"] - 1 < x["period_end_ns"]]
        assert x["energy_j"] == (math.fsum(mine) if mine else None)
        if x["energy_j"] is not None:
            assert x["energy_per_preserved_step_j"] == x["energy_j"] / x["preserved_steps"]
    assert all(x["energy_j"] is None and x["energy_per_preserved_step_j"] is None for x in rows
               if x["cluster"] == "west")
    totals = {t["cluster"]: t for t in r.totals().to_pylist()}
    assert math.isclose(totals["east"]["energy_j"], want, rel_tol=1e-12)
    assert totals["west"]["energy_j"] is None
    assert math.isclose(r.overall()["energy_j"], want, rel_tol=1e-12)
    assert f.rollup(by="cluster", where="cluster=west").overall()["energy_j"] is None


def test_openmetrics_energy_counter(fleet):
    f, _ = fleet
    r = f.rollup(by=["cluster", "accelerator_type"], every="1d")
    fams = {x.name: x for x in parser.text_string_to_metric_families(openmetrics.render(r))}
    fam = fams["pau_energy_joules"]
    assert fam.type == "counter" and fam.unit == "joules"
    assert {s.labels["cluster"] for s in fam.samples} == {"east"}  # west has no energy: no series
    rows = [x for x in r.table.to_pylist() if x["cluster"] == "east"]
    for s in fam.samples:
        ts = s.timestamp.sec * 10**9 + s.timestamp.nsec
        upto = sum(x["energy_j"] for x in rows if x["energy_j"] is not None and x["period_end_ns"] <= ts)
        assert s.name == "pau_energy_joules_total" and s.value == pytest.approx(upto, rel=1e-12)
    assert fam.samples[-1].value == pytest.approx(sum(x["energy_j"] for x in f.runs.to_pylist()
                                                      if x["energy_j"] is not None), rel=1e-12)


def test_the_text_has_an_energy_column_only_with_energy(fleet):
    from pau.views import fleet_text
    f, _ = fleet
    text = fleet_text.render(f.rollup(by="cluster", every="1w"))
    assert "energy kWh" in text
    kwh = f"{math.fsum(x['energy_j'] for x in f.runs.to_pylist() if x['energy_j'] is not None) / 3.6e6:,.1f}"
    total = next(line for line in text.splitlines() if line.startswith("total"))
    assert total.split()[-1] == kwh
    assert "energy kWh" not in fleet_text.render(f.rollup(by="cluster", every="1w", where="cluster=west"))


def test_an_archive_written_before_the_energy_columns_reads_them_as_null(fleet, tmp_path):
    import os
    import shutil

    import pyarrow.parquet as pq
    f, _ = fleet
    old = tmp_path / "old"
    shutil.copytree(f.path, old)
    for name in os.listdir(old / "runs"):
        t = pq.read_table(old / "runs" / name)
        pq.write_table(t.drop_columns(["energy_metric", "energy_j", "energy_productive_j"]), old / "runs" / name)
    g = pau.read_fleet(old)
    assert g.runs.num_rows == 5 and g.runs["energy_j"].null_count == 5
    r = g.rollup(by="cluster", every="1d")
    assert r.table["energy_j"].null_count == r.table.num_rows and r.overall()["energy_j"] is None
    assert "pau_energy_joules_total" not in openmetrics.render(r)


_PRICED = {"defaults": {"pue": 1.25, "energy_price_per_kwh": 0.2},
           "accelerator": {"H100": {"purchase_price": 30000, "life_years": 5, "nominal_power_w": 700,
                                    "network_storage_per_accelerator_hour": 0.0,
                                    "operations_per_accelerator_hour": 0.0}}}


@pytest.mark.parametrize("every", ["1h", "1d"])
def test_energy_cost_is_measured_joules_else_nominal_draw(fleet, every):
    """``energy_cost``: the measured joules of the runs that ended in the row at PUE x
    price, plus the allocated hours of runs with no measured energy at the nominal draw;
    its basis says which. Computed again here from the runs table and the cells."""
    f, _ = fleet
    r = f.rollup(by="cluster", every=every, cost_model=_PRICED)
    assert len(r.cost_basis) > 1 and list(r.cost_basis) == sorted(r.cost_basis)  # the same order for the same data
    per_j = 1.25 * 0.2 / 3.6e6
    runs = f.runs.to_pylist()
    cluster_of = {x["run"]: x["cluster"] for x in runs}
    cells = f.cells.to_pylist()
    for row in r.table.to_pylist():
        ended = [y["energy_j"] for y in runs if y["cluster"] == row["cluster"] and y["energy_j"] is not None
                 and row["period_start_ns"] <= y["end_ns"] - 1 < row["period_end_ns"]]
        unmeasured_ns = sum(c["duration_ns"] for c in cells if cluster_of[c["run"]] == row["cluster"]
                            and row["period_start_ns"] <= c["hour_ns"] < row["period_end_ns"]
                            and row["cluster"] == "west")
        want = math.fsum(ended) * per_j + unmeasured_ns / H * 700 * 3_600 * per_j
        basis = {(True, False): "measured", (False, True): "nominal", (True, True): "measured and nominal",
                 (False, False): None}[(bool(ended), bool(unmeasured_ns))]
        assert row["energy_cost_basis"] == basis
        if basis is None:
            assert row["energy_cost"] is None  # never 0 for unknown
        else:
            assert math.isclose(row["energy_cost"], want, rel_tol=1e-12)
    assert {x["energy_cost_basis"] for x in r.table.to_pylist() if x["cluster"] == "west"} == {"nominal"}
    assert "measured" in {x["energy_cost_basis"] for x in r.table.to_pylist() if x["cluster"] == "east"}
    total = r.overall()
    assert math.isclose(total["energy_cost"], math.fsum(x["energy_cost"] or 0.0 for x in r.table.to_pylist()),
                        rel_tol=1e-12)


def test_energy_cost_without_an_energy_price_is_null_and_says_so(fleet):
    f, _ = fleet
    contract = {"accelerator": {"H100": {"contract_rate_per_accelerator_hour": 2.0}}}
    rows = f.rollup(by="cluster", every="1d", cost_model=contract).table.to_pylist()
    assert rows and all(x["energy_cost"] is None for x in rows)
    assert all(x["energy_cost_basis"] is None or "unpriced" in x["energy_cost_basis"] for x in rows)
    assert any(x["energy_cost_basis"] for x in rows)


def test_the_fleet_page_shows_energy_beside_cost_in_a_browser(fleet, tmp_path):
    """The page has the measured energy (kWh), energy per preserved step and the energy's
    cost as cards, an energy section (kWh per period, J per preserved step per group) and
    the per-row columns; it renders in headless Chromium."""
    pytest.importorskip("matplotlib")
    import re

    from test_html import _browser

    from pau.views import fleet_html

    f, _ = fleet
    r = f.rollup(by="cluster", every="1d", cost_model=_PRICED)
    page = fleet_html.render(r, title="energy")
    o = r.overall()
    assert f"{o['energy_j'] / 3.6e6:,.2f}" in page and "measured energy (kWh)" in page
    assert f"{o['energy_per_preserved_step_j']:,.0f}" in page and f"{o['energy_cost']:,.2f}" in page
    assert re.findall(r'data-plot="([a-z-]+)"', page) == ["goodput-trend", "productive-trend", "badput-by-cause",
                                                          "cost-split", "energy", "energy-per-step"]
    assert re.search(r"<th[^>]*>energy kWh</th>", page) and re.search(r"<th[^>]*>energy cost \(USD\)</th>", page)
    # without measured energy (the west cluster alone): no energy cards nor section, never 0 kWh
    west = fleet_html.render(f.rollup(by="cluster", every="1d", where="cluster=west", cost_model=_PRICED),
                             title="west")
    assert "measured energy" not in west and 'data-plot="energy"' not in west
    result, console, png = _browser(page, tmp_path, "fleet-energy")
    assert console == [] and result["resources"] == 0
    assert [p["plot"] for p in result["plots"]][-2:] == ["energy", "energy-per-step"]
    for p in result["plots"]:
        assert p["width"] > 200 and p["height"] > 60 and p["coloured"] > 0, p


def test_openmetrics_energy_cost_counter(fleet):
    f, _ = fleet
    r = f.rollup(by="cluster", every="1d", cost_model=_PRICED)
    fam = {x.name: x for x in parser.text_string_to_metric_families(openmetrics.render(r))}["pau_energy_cost"]
    assert fam.type == "counter" and {s.labels["currency"] for s in fam.samples} == {"USD"}
    for cluster in ("east", "west"):
        rows = [x for x in r.table.to_pylist() if x["cluster"] == cluster]
        mine = [s for s in fam.samples if s.labels["cluster"] == cluster]
        assert len(mine) == sum(x["energy_cost"] is not None for x in rows) > 0
        for s in mine:
            ts = s.timestamp.sec * 10**9 + s.timestamp.nsec
            upto = sum(x["energy_cost"] for x in rows if x["energy_cost"] is not None and x["period_end_ns"] <= ts)
            assert s.name == "pau_energy_cost_total" and s.value == pytest.approx(upto, rel=1e-12)


def test_the_text_gives_the_energy_cost_and_its_basis(fleet):
    from pau.views import fleet_text

    f, _ = fleet
    r = f.rollup(by="cluster", every="1w", cost_model=_PRICED)
    text = fleet_text.render(r)
    assert f"energy cost in USD: {r.overall()['energy_cost']:,.2f} (measured" in text
    contract = {"accelerator": {"H100": {"contract_rate_per_accelerator_hour": 2.0}}}
    assert "energy cost in USD: not priced" in fleet_text.render(f.rollup(by="cluster", cost_model=contract))
