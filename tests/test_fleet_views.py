"""``pau fleet``: its text, JSON, CSV and gate; the OpenMetrics exposition (parsed by
prometheus_client's OpenMetrics parser, loaded by promtool when it is installed); the
HTML page in headless Chromium."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess

import pyarrow as pa
import pyarrow.csv as pcsv
import pytest
from test_fleet_rollup import build_fleet

from pau import cli
from pau.engine.vocab import STATES
from pau.errors import PauError
from pau.fleet.rollup import Rollup, changes
from pau.views import openmetrics

parser = pytest.importorskip("prometheus_client.openmetrics.parser")

COSTS = """
[accelerator.H100]
contract_rate_per_accelerator_hour = 2.0
[accelerator.A100]
contract_rate_per_accelerator_hour = 1.0
"""


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    return build_fleet(tmp_path_factory.mktemp("views"))


@pytest.fixture(scope="module")
def costs(tmp_path_factory):
    p = tmp_path_factory.mktemp("costs") / "costs.toml"
    p.write_text(COSTS)
    return str(p)


# ---------------------------------------------------------------------------
# OpenMetrics


def _families(text: str) -> dict:
    return {f.name: f for f in parser.text_string_to_metric_families(text)}


def test_openmetrics_parses_and_holds_the_rollup(fleet):
    r = fleet.rollup(by=["cluster", "accelerator_type"], every="1d",
                     cost_model={"accelerator": {"H100": {"contract_rate_per_accelerator_hour": 2.0},
                                                 "A100": {"contract_rate_per_accelerator_hour": 1.0}}})
    text = openmetrics.render(r)
    assert text.endswith("# EOF\n")
    fams = _families(text)
    assert fams["pau_accelerator_seconds"].type == "counter" and fams["pau_accelerator_seconds"].unit == "seconds"
    assert fams["pau_goodput_ratio"].type == "gauge" and fams["pau_goodput_ratio"].unit == "ratio"
    assert fams["pau_failures"].type == "counter"
    assert all(s.name.endswith("_total") for f in fams.values() if f.type == "counter" for s in f.samples)
    # counters: each group's periods summed up to each period's end, stamped at that end (seconds)
    rows = r.table.to_pylist()
    for state in ("productive", "rolled_back", "unattributed"):
        col = state + "_ns"
        for s in fams["pau_accelerator_seconds"].samples:
            if s.labels["state"] != state:
                continue
            key = (s.labels["cluster"], s.labels["accelerator_type"])
            ts = s.timestamp.sec * 10**9 + s.timestamp.nsec
            upto = sum(x[col] for x in rows if (x["cluster"], x["accelerator_type"]) == key
                       and x["period_end_ns"] <= ts)
            assert s.value == pytest.approx(upto / 1e9, rel=1e-15)
            assert any(x["period_end_ns"] == ts for x in rows)
    # gauges: the period's value; a period without one has no sample
    goodput = {(s.labels["cluster"], s.timestamp.sec): s.value for s in fams["pau_goodput_ratio"].samples}
    want = {(x["cluster"], x["period_end_ns"] // 10**9): x["goodput"] for x in rows if x["goodput"] is not None}
    assert goodput == pytest.approx(want)
    assert {s.labels["state"] for s in fams["pau_accelerator_seconds"].samples} == set(STATES)
    assert fams["pau_cost"].samples[0].labels["currency"] == "USD"
    # every series in time order, no labelset split across the text (OpenMetrics forbids interleaving)
    seen: dict = {}
    last = None
    for s in fams["pau_accelerator_seconds"].samples:
        key = tuple(sorted(s.labels.items()))
        if key != last:
            assert key not in seen, "a series' samples are not together"
            last = key
        t = s.timestamp.sec
        assert seen.get(key, -1) < t
        seen[key] = t


def test_openmetrics_escapes_labels_and_refuses_ids(fleet):
    r = fleet.rollup(by=["cluster"], every="1w")
    odd = 'a "quoted"\\back\nslash'
    t = r.table.set_column(0, "cluster", pa.array([odd] * r.table.num_rows))
    text = openmetrics.render(Rollup(t, r.by, r.every, None, None, r.allocated_from))
    fams = _families(text)
    assert {s.labels["cluster"] for s in fams["pau_goodput_ratio"].samples} == {odd}
    with pytest.raises(PauError, match="cardinality"):
        openmetrics.render(fleet.rollup(by=["job"], every="1w"))
    by_job = openmetrics.render(fleet.rollup(by=["job"], every="1w"), id_labels=True)
    assert 'job="job-0"' in by_job
    assert openmetrics.label_name("labels.team") == "labels_team"


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (apt-get install prometheus)")
def test_promtool_loads_the_history(fleet, tmp_path):
    text = openmetrics.render(fleet.rollup(by=["cluster"], every="1d"))
    (tmp_path / "fleet.om").write_text(text)
    res = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(tmp_path / "fleet.om"),
                          str(tmp_path / "data")], capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stderr
    listed = subprocess.run(["promtool", "tsdb", "list", str(tmp_path / "data")], capture_output=True, text=True,
                            timeout=300, check=True).stdout
    samples = sum(int(line.split()[4]) for line in listed.splitlines()[1:])
    assert samples == sum(len(f.samples) for f in _families(text).values())


# ---------------------------------------------------------------------------
# the command


def test_pau_fleet_text_json_csv(fleet, costs, capsys):
    args = ["fleet", fleet.path, "--by", "cluster,team", "--every", "week", "--cost-model", costs]
    assert cli.main(args) == 0
    out = capsys.readouterr()
    text = out.out
    assert "jobs whose allocation is not known" in out.err
    r = fleet.rollup(by=["cluster", "team"], every="1w", cost_model=costs)
    for row in r.table.to_pylist():
        assert re.search(rf"{row['cluster']}\s+{row['team']}\s+{row['period']}\s+{row['allocated_h']:,.1f}", text)
    assert "badput by cause" in text and "H100 / east" in text
    assert cli.main(args + ["--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["total"] == json.loads(json.dumps(r.overall()))
    assert doc["total"]["allocated_ns"] == sum(r.table["allocated_ns"].to_pylist())
    assert len(doc["rows"]) == r.table.num_rows and doc["allocated_from"] == "jobs"
    assert cli.main(args + ["--format", "csv"]) == 0
    got = pcsv.read_csv(io.BytesIO(capsys.readouterr().out.encode()))
    assert got["allocated_ns"].to_pylist() == r.table["allocated_ns"].to_pylist()
    assert got["period"].to_pylist() == r.table["period"].to_pylist()


def test_pau_fleet_since_until_where(fleet, capsys):
    args = ["fleet", fleet.path, "--by", "team", "--every", "day", "--since", "2023-11-15", "--until",
            "2023-11-17T06:00", "--where", "cluster=east", "--format", "json", "-q"]
    assert cli.main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    r = fleet.rollup(by="team", every="1d", since="2023-11-15", until="2023-11-17T06:00", where="cluster=east")
    assert doc["rows"] == json.loads(json.dumps(r.table.to_pylist()))
    assert {x["team"] for x in doc["rows"]} == {"llm"}
    assert doc["since_ns"] == 1_700_006_400 * 10**9 and doc["until_ns"] == (1_700_006_400 + 54 * 3600) * 10**9
    assert doc["rows"][-1]["period_end_ns"] == doc["until_ns"]
    assert cli.main(["fleet", fleet.path, "--since", "2023-11-15T00:30", "-q"]) == 1
    assert "whole hour" in capsys.readouterr().err
    assert cli.main(["fleet", fleet.path, "--by", "cluster", "--every", "week", "--tz", "Asia/Tokyo", "--format",
                     "json", "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"] == json.loads(json.dumps(fleet.rollup(by="cluster", every="1w", tz="Asia/Tokyo").table
                                                .to_pylist()))
    assert all((x["period_start_ns"] // 10**9 + 9 * 3600) % (7 * 86400) == 4 * 86400 for x in doc["rows"])


def test_pau_fleet_gate(fleet, capsys):
    g = fleet.rollup(every="1w").overall()["goodput"]
    base = ["fleet", fleet.path, "--every", "week", "-q"]
    assert cli.main(base + ["--gate", f"total.goodput>={g - 0.001}"]) == 0
    assert cli.main(base + ["--gate", f"goodput>={g + 0.001}"]) == 3
    assert "gate failed: goodput" in capsys.readouterr().err
    assert cli.main(base + ["--gate", "nope>=1"]) == 2
    assert cli.main(base + ["--every", "fortnight"]) == 1
    assert "not a period" in capsys.readouterr().err


def test_pau_fleet_openmetrics_to_a_file(fleet, tmp_path, capsys):
    out = tmp_path / "fleet.om"
    assert cli.main(["fleet", fleet.path, "--by", "cluster", "--every", "day", "--format", "openmetrics", "-q",
                     "-o", str(out)]) == 0
    assert out.read_text() == openmetrics.render(fleet.rollup(by=["cluster"], every="1d"))


# ---------------------------------------------------------------------------
# the page


def test_the_fleet_page_renders_in_a_browser(fleet, costs, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from test_html import _browser

    out = tmp_path / "fleet.html"
    assert cli.main(["fleet", fleet.path, "--by", "cluster", "--every", "day", "--cost-model", costs,
                     "--format", "html", "-q", "-o", str(out)]) == 0
    page = out.read_text()
    assert re.findall(r'data-plot="([a-z-]+)"', page) == ["goodput-trend", "productive-trend", "badput-by-cause",
                                                          "cost-split"]
    # the change points marked: one marker series per group with changes, in each trend
    r = fleet.rollup(by=["cluster"], every="1d")
    with_changes = sum(len(set(changes(r, m)["cluster"].to_pylist())) for m in ("goodput", "productive_h"))
    assert with_changes > 0 and page.count('id="change-point"') == with_changes
    result, console, png = _browser(page, tmp_path, "fleet")
    assert console == [] and result["resources"] == 0
    assert [p["plot"] for p in result["plots"]] == ["goodput-trend", "productive-trend", "badput-by-cause",
                                                    "cost-split"]
    for p in result["plots"]:
        assert p["width"] > 200 and p["height"] > 60 and p["coloured"] > 0, p
    assert png.stat().st_size > 10_000


def test_openmetrics_of_nothing_is_an_empty_exposition():
    from pau.fleet import CELLS_SCHEMA, RUNS_SCHEMA
    from pau.fleet.rollup import rollup

    r = rollup(RUNS_SCHEMA.empty_table(), CELLS_SCHEMA.empty_table(), every="1d")
    text = openmetrics.render(r)
    assert text.endswith("# EOF\n") and not [line for line in text.splitlines() if not line.startswith("#")]
    assert _families(text)["pau_goodput_ratio"].samples == []
    with pytest.raises(PauError):
        openmetrics.render(Rollup(r.table.append_column("x", pa.array([], pa.string())), ["job"], r.every, None,
                                  None, "runs"))
