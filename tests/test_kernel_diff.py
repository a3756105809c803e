"""The kernel-level diff of two runs (`pau.figures.compare.kernel_diff`, `pau compare`).

Hand-worked tables first (appeared, disappeared, changed, same; per step; the order),
then the real samples: a trace against itself, and against a copy with one kernel
slowed by a known amount; then the CLI's text, JSON and CSV against the API.
"""

from __future__ import annotations

import csv
import io
import json

import pyarrow as pa
import pyarrow.compute as pac
import pytest
from shared_data import shared

import pau
import pau.core as pc
from pau import _args, cli, errors
from pau.figures import compare
from pau.views import text as text_view


def _events(rows) -> pa.Table:
    """``(name, kind, start_ns, end_ns)`` rows on rank 0, stream 1."""
    return pa.table({
        "rank": pa.array([0] * len(rows), pa.int32()), "stream": pa.array([1] * len(rows), pa.int32()),
        "start_ns": pa.array([r[2] for r in rows], pa.int64()), "end_ns": pa.array([r[3] for r in rows], pa.int64()),
        "kind": pa.array([r[1] for r in rows], pa.string()).dictionary_encode(),
        "name": pa.array([r[0] for r in rows], pa.string()),
    })


A = _events([("k1", "compute", 0, 10), ("k1", "compute", 20, 25),     # 2 events, 15 ns
             ("k2", "compute", 30, 40),                                # 10 ns, only in a
             ("copy", "memcpy", 40, 44),                               # 4 ns in both
             (None, "other", 50, 51),                                  # unnamed, only in a
             ("k4", "compute", 70, 80)])                               # one event of 10 ns
B = _events([("k1", "compute", 0, 12), ("k1", "compute", 20, 26), ("k1", "compute", 30, 33),  # 3, 21 ns
             ("k3", "compute", 40, 47),                                # 7 ns, only in b
             ("copy", "memcpy", 50, 54),                               # 4 ns, moved in time: same
             ("k2", "communication", 60, 62),                          # k2 of another kind: its own row
             ("k4", "compute", 70, 75), ("k4", "compute", 75, 80)])    # two events, same 10 ns

# (name, kind, status, count a, count b, total a, total b), in the documented order:
# |total a - total b| largest first, ties by the larger total, then name, kind.
EXPECTED = [
    ("k2", "compute", "disappeared", 1, 0, 10, 0),
    ("k3", "compute", "appeared", 0, 1, 0, 7),
    ("k1", "compute", "changed", 2, 3, 15, 21),
    ("k2", "communication", "appeared", 0, 1, 0, 2),
    ("(unnamed)", "other", "disappeared", 1, 0, 1, 0),
    ("k4", "compute", "changed", 1, 2, 10, 10),      # count changed, total did not
    ("copy", "memcpy", "same", 1, 1, 4, 4),
]


def test_hand_worked_rows_statuses_and_order():
    d = compare.kernel_diff(A, B)
    got = [(r["name"], r["kind"], r["status"], r["count_a"], r["count_b"], r["total_ns_a"], r["total_ns_b"])
           for r in d.rows]
    assert got == EXPECTED
    for r in d.rows:
        assert r["difference_ns"] == r["total_ns_a"] - r["total_ns_b"]
        assert r["count_difference"] == r["count_a"] - r["count_b"]
        assert r["per_step_ns_a"] is None and r["per_step_difference_ns"] is None  # no steps given
    s = d.summary()
    assert s["status"] == {"appeared": 2, "disappeared": 2, "changed": 2, "same": 1}
    assert (s["total_ns_a"], s["total_ns_b"], s["difference_ns"]) == (40, 44, -4)
    assert s["count"] == 7 and s["left_out"] == 0 and len(s["kernels"]) == 7
    top = d.summary(2)
    assert [r["name"] for r in top["kernels"]] == ["k2", "k3"] and top["left_out"] == 5
    assert top["total_ns_a"] == 40  # totals are over every row, listed or not
    json.dumps(s, allow_nan=False)


def test_per_step_is_total_over_each_runs_steps():
    d = compare.kernel_diff(A, B, steps_a=2, steps_b=3)
    row = {(r["name"], r["kind"]): r for r in d.rows}
    k1 = row[("k1", "compute")]
    assert (k1["per_step_ns_a"], k1["per_step_ns_b"], k1["per_step_difference_ns"]) == (7.5, 7.0, 0.5)
    k3 = row[("k3", "compute")]
    assert (k3["per_step_ns_a"], k3["per_step_ns_b"]) == (0.0, 7 / 3)
    assert k3["per_step_difference_ns"] == -7 / 3
    # the difference is computed exactly, then rounded once: 10/3 - 1/3 = 3 exactly
    d2 = compare.kernel_diff(_events([("k", "compute", 0, 10)]), _events([("k", "compute", 0, 1)]),
                              steps_a=3, steps_b=3)
    assert d2.rows[0]["per_step_difference_ns"] == 3.0
    # one side without steps (None or 0): no per-step figures on any row
    for sa, sb in ((2, None), (None, 3), (0, 3)):
        d3 = compare.kernel_diff(A, B, steps_a=sa, steps_b=sb)
        assert all(r["per_step_ns_a"] is None and r["per_step_ns_b"] is None for r in d3.rows)
    for bad in (-1, 1.5, True):
        with pytest.raises(errors.PauError, match="steps_a"):
            compare.kernel_diff(A, B, steps_a=bad)


def test_grouping_is_top_kernels_rule():
    """One rule groups device events by name: the diff's sides are top_kernels' rows."""
    d = compare.kernel_diff(A, B)
    side_a = {(r["name"], r["kind"]): (r["count_a"], r["total_ns_a"]) for r in d.rows if r["count_a"]}
    assert side_a == {(r["name"], r["kind"]): (r["count"], r["total_ns"]) for r in compare.top_kernels(A, 100)}


def test_an_empty_side_makes_every_row_appear():
    empty = A.slice(0, 0)
    d = compare.kernel_diff(empty, B)
    assert {r["status"] for r in d.rows} == {"appeared"} and len(d.rows) == 5
    assert compare.kernel_diff(empty, empty).rows == []


def test_table_and_render():
    d = compare.kernel_diff(A, B, steps_a=2, steps_b=3, labels=("old", "new"))
    t = d.table()
    assert t.num_rows == 7 and t["difference_ns"].type == pa.int64() and t["per_step_ns_a"].type == pa.float64()
    assert t.column("name").to_pylist() == [r[0] for r in EXPECTED]
    text = d.render(3)
    assert "(old - new)" in text and "2 appeared, 2 disappeared, 2 changed, 1 same" in text
    lines = text.splitlines()
    assert lines[3].split()[0] == "disappeared" and lines[3].split()[-1] == "k2"
    assert "... 4 more" in text


@pytest.fixture(scope="module")
def trace():
    return pau.read(shared("kineto", "hta-trace_filter"))


def test_a_trace_against_itself_is_all_same(trace):
    cmp = pc.compare(trace, trace)
    d = cmp.kernels
    assert d is not None and d.rows
    assert {r["status"] for r in d.rows} == {"same"}
    assert all(r["difference_ns"] == 0 and r["count_difference"] == 0 and r["per_step_difference_ns"] == 0
               for r in d.rows)
    assert d.summary()["difference_ns"] == 0
    assert sum(r["count_a"] for r in d.rows) == trace.events.num_rows
    # per preserved step of the ledger (2 profiled steps here)
    metrics = {r["metric"]: r["a"] for r in cmp.table.to_pylist()}
    assert d.steps_a == d.steps_b == metrics["preserved_steps"] == 2


def _slowed(run, name: str, by_ns: int):
    ev = run.events
    hit = pac.equal(ev["name"].cast(pa.string()), name)
    ev = ev.set_column(ev.schema.get_field_index("end_ns"), "end_ns",
                       pac.add(ev["end_ns"], pac.if_else(hit, by_ns, 0)).cast(pa.int64()))
    return pau.Run(events=ev, lifecycle=run.lifecycle, spans=run.spans, metadata=dict(run.metadata))


def test_one_kernel_slowed_by_a_known_amount_is_the_one_change(trace):
    name, by = "ampere_sgemm_128x64_nn", 1_234
    n = int(pac.sum(pac.equal(trace.events["name"].cast(pa.string()), name).cast(pa.int64())).as_py())
    assert n == 16
    cmp = pc.compare(trace, _slowed(trace, name, by))
    rows = cmp.kernels.rows
    changed = [r for r in rows if r["status"] != "same"]
    assert len(changed) == 1 and changed[0] is rows[0]  # the only change, first in the order
    r = changed[0]
    assert (r["name"], r["kind"], r["status"], r["count_a"], r["count_b"]) == (name, "compute", "changed", 16, 16)
    assert r["difference_ns"] == -n * by                       # a - b: b is slower
    assert r["total_ns_b"] - r["total_ns_a"] == 16 * 1_234
    assert r["per_step_difference_ns"] == -n * by / 2         # 2 preserved steps on each side
    assert all(x["difference_ns"] == 0 for x in rows[1:])


def test_the_facade_carries_the_diff_only_with_events_on_both_sides(trace):
    led = trace.ledger()
    assert pc.compare(led, led).kernels is None
    assert pc.compare(trace, led).kernels is None
    no_events = pau.Run(lifecycle=trace.lifecycle, spans=trace.spans)
    assert pc.compare(trace, no_events).kernels is None
    assert pc.compare(trace, trace).summary()["kernels"]["count"] == len(pc.compare(trace, trace).kernels.rows)


@pytest.fixture(scope="module")
def two_folders(trace, tmp_path_factory):
    root = tmp_path_factory.mktemp("cmp")
    a = trace.write(root / "a")
    b = _slowed(trace, "ampere_sgemm_128x64_nn", 1_234).write(root / "b")
    return a, b


def test_cli_text_json_and_csv_agree_with_the_api(two_folders, capsys):
    a, b = two_folders
    cmp = pc.compare(pau.read(a), pau.read(b), labels=("a", "b"))   # the folders' names

    assert cli.main(["compare", a, b]) == 0
    assert capsys.readouterr().out == text_view.render_compare(cmp, kernels=_args.TOP_KERNELS) + "\n"
    assert cli.main(["compare", a, b, "--kernels", "3"]) == 0
    out = capsys.readouterr().out
    assert out == text_view.render_compare(cmp, kernels=3) + "\n" and f"{len(cmp.kernels.rows) - 3} more" in out

    assert cli.main(["compare", a, b, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc == json.loads(json.dumps(cmp.summary()))
    assert doc["kernels"]["left_out"] == 0 and len(doc["kernels"]["kernels"]) == len(cmp.kernels.rows)
    assert doc["kernels"]["kernels"][0]["difference_ns"] == -16 * 1_234

    assert cli.main(["compare", a, b, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert list(rows[0]) == ["section", "name", "kind", "status", "quantity", "a", "b", "difference"]
    kern = [r for r in rows if r["section"] == "kernels"]
    assert len(kern) == 3 * len(cmp.kernels.rows)
    total = {(r["name"], r["kind"]): r for r in kern if r["quantity"] == "total_ns"}
    for k in cmp.kernels.rows:
        r = total[(k["name"], k["kind"])]
        assert (int(r["a"]), int(r["b"]), int(r["difference"]), r["status"]) == (
            k["total_ns_a"], k["total_ns_b"], k["difference_ns"], k["status"])
    causes = [r for r in rows if r["section"] == "by_cause"]
    assert [(r["name"], float(r["difference"])) for r in causes] == [
        (c["cause"], c["difference"]) for c in cmp.by_cause.to_pylist()]
    metrics = [r for r in rows if r["section"] == "metrics"]
    assert [r["name"] for r in metrics] == cmp.table["metric"].to_pylist()

    assert cli.main(["compare", a, b, "--kernels", "-1"]) == cli.EXIT_USAGE
