"""MFU in the fleet (``docs/fleet.md``, "MFU"): the runs table's ``useful_flops`` is the
run's preserved steps x the ``flops_per_step`` label, ``peak_flops`` the peak of its
accelerator and ``dtype`` labels, and the rollup's ``mfu`` the ratio of their sums over
the runs that ended in a row (null where unknown, never 0)."""

from __future__ import annotations

import math

import pytest

import pau
import pau.core
from pau import synth
from pau.errors import PauError
from pau.figures.goodput import peak_flops

H = 3_600 * 10**9
FLOPS = 6.3e15


def _job(i: int) -> synth.TrainingJob:
    return synth.training_job(ranks=2, steps=30, seed=i, mtbf_s=2400, checkpoint_every=5, step_time_s=600,
                              kernels_per_step=3, buckets=1, events=False,
                              start_ns=synth.DEFAULT_START_NS + i * 29 * H + 17 * 10**9)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("mfu")
    for cluster, seeds, labels in (("east", (0, 1, 2), {"flops_per_step": f"{FLOPS:g}", "dtype": "bf16"}),
                                   ("west", (3, 4), {})):
        (root / cluster).mkdir()
        for i in seeds:
            pau.Run(lifecycle=_job(i).lifecycle, metadata={"format": "pau", "job": f"job-{i}"}).write(
                root / cluster / f"run{i:03d}")
        pau.core.ingest([root / cluster], root / "fleet", workers=1,
                        labels={"cluster": cluster, "accelerator_type": "H100-SXM", **labels})
    return pau.read_fleet(root / "fleet")


def test_useful_flops_and_peak_per_run(fleet):
    peak = float(peak_flops("h100-sxm", "bf16").flops)
    for row in fleet.runs.to_pylist():
        steps = fleet.run(row["run"]).summary()["ledger"]["preserved_steps"]
        if row["cluster"] == "east":
            assert steps > 0 and row["useful_flops"] == steps * FLOPS
            assert row["peak_flops"] == peak == 989.5e12
        else:  # no label: unknown, never 0
            assert row["useful_flops"] is None and row["peak_flops"] is None


@pytest.mark.parametrize("every", ["1d", "1w"])
def test_the_rollup_mfu_is_a_ratio_of_sums_over_productive_time(fleet, every):
    r = fleet.rollup(by="cluster", every=every)
    runs = fleet.runs.to_pylist()
    peak = 989.5e12
    for row in r.table.to_pylist():
        mine = [y for y in runs if y["cluster"] == row["cluster"]
                and row["period_start_ns"] <= y["end_ns"] - 1 < row["period_end_ns"]]
        if row["cluster"] == "west" or not mine:
            assert row["useful_flops"] is None and row["mfu"] is None
            continue
        useful = math.fsum(y["preserved_steps"] * FLOPS for y in mine)
        cap = math.fsum(y["productive_ns"] / 1e9 * peak for y in mine)
        assert row["useful_flops"] == pytest.approx(useful, rel=1e-12)
        assert row["mfu"] == pytest.approx(useful / cap, rel=1e-12)
        assert 0 < row["mfu"]
    east = [y for y in runs if y["cluster"] == "east"]
    want = math.fsum(y["preserved_steps"] * FLOPS for y in east) / math.fsum(
        y["productive_ns"] / 1e9 * peak for y in east)
    assert r.overall()["mfu"] == pytest.approx(want, rel=1e-12)
    assert fleet.rollup(by="cluster", where="cluster=west").overall()["mfu"] is None


def test_a_flops_label_that_is_not_a_number_is_refused(tmp_path):
    (tmp_path / "a").mkdir()
    pau.Run(lifecycle=_job(0).lifecycle, metadata={"format": "pau"}).write(tmp_path / "a" / "run")
    with pytest.raises(PauError, match="flops_per_step='lots' is not a positive number"):
        pau.core.ingest([tmp_path / "a"], tmp_path / "fleet", workers=1, labels={"flops_per_step": "lots"})


def test_the_fleet_page_has_an_mfu_card_only_when_known(fleet):
    pytest.importorskip("matplotlib")
    from pau.views import fleet_html

    r = fleet.rollup(by="cluster", every="1w")
    assert f"{100 * r.overall()['mfu']:.1f}%" in fleet_html.render(r, title="mfu")
    west = fleet_html.render(fleet.rollup(by="cluster", every="1w", where="cluster=west"), title="west")
    assert "MFU" not in west


def test_openmetrics_mfu_gauge(fleet):
    parser = pytest.importorskip("prometheus_client.openmetrics.parser")
    from pau.views import openmetrics

    r = fleet.rollup(by="cluster", every="1d")
    fam = {x.name: x for x in parser.text_string_to_metric_families(openmetrics.render(r))}["pau_mfu_ratio"]
    assert fam.type == "gauge" and fam.unit == "ratio"
    want = {(x["cluster"], x["period_end_ns"]): x["mfu"] for x in r.table.to_pylist() if x["mfu"] is not None}
    got = {(s.labels["cluster"], s.timestamp.sec * 10**9 + s.timestamp.nsec): s.value for s in fam.samples}
    assert want and got == want  # west knows no FLOPs: no series


def test_the_text_gives_the_mfu_only_when_known(fleet):
    from pau.views import fleet_text

    r = fleet.rollup(by="cluster", every="1w")
    assert f"productive time; runs that know their FLOPs): {100 * r.overall()['mfu']:.1f}%" in fleet_text.render(r)
    assert "MFU" not in fleet_text.render(fleet.rollup(by="cluster", where="cluster=west"))
