"""The rollup's cell kernel (``pau.fleet._cells.add_cells``) against its slow twin
(``reference_fleet.add_cells``) on generated batches, bad rows and sums at the edge of
int64 included; and a rollup through the kernel equal to one through NumPy alone."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pau.fleet.cellsums as fleet_cellsums
import pau.fleet.rollup as fleet_rollup
from pau.errors import PauError
from pau.fleet import _cells
from pau.fleet import costs as fleet_costs
import reference_fleet
from test_fleet_costs import MODEL
from test_fleet_rollup import build_fleet

H = 3_600 * 10**9
INT64_MAX = 2**63 - 1


@st.composite
def batches(draw):
    groups, columns = draw(st.integers(1, 3)), draw(st.integers(3, 5))
    n_runs, n_states = draw(st.integers(1, 5)), columns - 2
    first = draw(st.integers(-10**6, 10**6))
    n_hours = draw(st.integers(1, 6))
    periods = draw(st.integers(1, 3))
    row = np.array(draw(st.lists(st.integers(-1, periods - 1), min_size=n_hours, max_size=n_hours)), np.int64)
    n = draw(st.integers(0, 30))
    big = draw(st.booleans())  # durations and sums near int64
    dur = st.integers(-2, INT64_MAX // 3) if big else st.integers(-2, 10**6)
    run = np.array(draw(st.lists(st.integers(0, n_runs - 1), min_size=n, max_size=n)), np.int32)
    state = np.array(draw(st.lists(st.integers(0, n_states), min_size=n, max_size=n)), np.int32)
    off_hour = draw(st.lists(st.sampled_from([0, 0, 0, 0, 1, -1]), min_size=n, max_size=n))
    hour = np.array([(first + draw(st.integers(0, n_hours - 1))) * H + o for o in off_hour], np.int64)
    duration = np.array(draw(st.lists(dur, min_size=n, max_size=n)), np.int64)
    fine = np.array(draw(st.lists(st.integers(-1, groups - 1), min_size=n_runs, max_size=n_runs)), np.int64)
    flags = np.array(draw(st.lists(st.sampled_from([0, 1, 3, 7, 2]), min_size=n_runs, max_size=n_runs)), np.int8)
    states = np.array(draw(st.lists(st.integers(-1, n_states - 1), min_size=n_states + 1, max_size=n_states + 1)),
                      np.int64)
    start = st.integers(0, INT64_MAX) if big else st.integers(0, 10**6)
    table = np.array(draw(st.lists(start, min_size=periods * groups * columns, max_size=periods * groups * columns)),
                     np.int64).reshape(periods, groups * columns)
    return (_cells.Cells(run, state, hour, duration), _cells.Lookup(fine, flags, states),
            _cells.Hours(first, row), table, columns)


@settings(max_examples=300, deadline=None)
@given(batches())
def test_the_kernel_is_its_twin(batch):
    cells, lookup, hours, table, columns = batch
    want, want_table = reference_fleet.add_cells(cells, lookup, hours, table, columns)
    got = tuple(int(x) for x in _cells.add_cells(cells, lookup, hours, table, columns))
    assert got == want
    assert table.tolist() == want_table.tolist()


def test_an_empty_batch_and_a_sum_at_int64_max():
    cells = _cells.Cells(np.zeros(2, np.int32), np.zeros(2, np.int32), np.array([0, 0], np.int64),
                         np.array([INT64_MAX - 5, 5], np.int64))
    lookup = _cells.Lookup(np.zeros(1, np.int64), np.array([1], np.int8), np.zeros(1, np.int64))
    table = np.zeros((1, 3), np.int64)
    assert tuple(_cells.add_cells(cells, lookup, _cells.Hours(0, np.zeros(1, np.int64)), table, 3)) == (0, 0, 0)
    assert table[0, 0] == INT64_MAX  # exactly int64's largest: made
    one = _cells.Cells(*(a[:1] for a in cells[:3]), np.array([1], np.int64))
    assert tuple(_cells.add_cells(one, lookup, _cells.Hours(0, np.zeros(1, np.int64)), table, 3)) == (2, 0, 0)
    assert table[0, 0] == INT64_MAX  # one more: refused, not made
    empty = _cells.Cells(*(a[:0] for a in cells))
    assert tuple(_cells.add_cells(empty, lookup, _cells.Hours(0, np.zeros(1, np.int64)), table, 3)) == (0, 0, 0)


@pytest.mark.parametrize("kw", [dict(by=["cluster", "team"], every="1w"),
                                dict(by="cluster", every="1d", since="2023-11-15T00:00:00Z", until="2023-11-25T00:00:00Z"),
                                dict(every="1mo", tz="Europe/Paris"),
                                dict(by="team", every="6h", where="cluster=east"),
                                dict(by="cluster", every="1w", cost_model="model")])
def test_a_rollup_through_the_kernel_is_one_through_numpy(fleet_archive, monkeypatch, kw):
    """The archive's cells (dictionary columns) go through the kernel; with it off
    (``KERNEL_HOURS = 0``) through NumPy alone: the same table, to the last column."""
    fleet = fleet_archive
    if kw.get("cost_model") == "model":  # runs not measured: allocated not measured, priced at nominal power
        kw = dict(kw, cost_model=fleet_costs.cost_model(fleet_costs.tomllib.loads(MODEL)))
    monkeypatch.setattr(fleet_cellsums, "KERNEL_AFTER", 0)  # the kernel from the first cell
    real, calls = _cells.add_cells, []
    monkeypatch.setattr(_cells, "add_cells", lambda *a: calls.append(1) or real(*a))
    through_kernel = fleet.rollup(**kw)
    assert calls
    monkeypatch.setattr(fleet_cellsums, "KERNEL_HOURS", 0)
    calls.clear()
    through_numpy = fleet.rollup(**kw)
    assert not calls
    assert through_kernel.table.num_rows > 0
    assert through_kernel.table.equals(through_numpy.table)


@pytest.fixture(scope="module")
def fleet_archive(tmp_path_factory):
    return build_fleet(tmp_path_factory.mktemp("cells"))


def test_numba_is_loaded_only_past_a_few_million_cells(fleet_archive, monkeypatch):
    """A process that has not loaded Numba sums its first KERNEL_AFTER cells by NumPy,
    then by the kernel (one that has: by the kernel from the first cell)."""
    real, calls = _cells.add_cells, []
    monkeypatch.setattr(_cells, "add_cells", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(fleet_cellsums._jit, "loaded", lambda: False)
    small = fleet_archive.rollup(by="cluster", every="1w")
    assert not calls
    monkeypatch.setattr(fleet_cellsums, "KERNEL_AFTER", 1)  # past the first batch
    assert fleet_archive.rollup(by="cluster", every="1w").table.equals(small.table)
    assert calls


@pytest.mark.parametrize("bad, match", [("duration", "column 'duration_ns': negative"),
                                        ("hour", "column 'hour_ns': not on an hour"),
                                        ("state", "column 'state': 'lunch'"),
                                        ("run", "column 'run': 'nobody'")])
def test_a_bad_row_in_the_kernel_path_is_refused_as_numpy_refuses_it(fleet_archive, monkeypatch, bad, match):
    """Cells as dictionaries (the kernel's way) with one bad row: the NumPy checks' error,
    naming the column and the value; a row the kernel refuses but NumPy would not (a bug)
    is an error too, never summed twice."""
    monkeypatch.setattr(fleet_cellsums, "KERNEL_AFTER", 0)
    cells = fleet_archive.cells
    i = cells.num_rows // 2
    cols = {c: cells[c].to_pylist() for c in ("run", "hour_ns", "state", "duration_ns")}
    if bad == "duration":
        cols["duration_ns"][i] = -1
    elif bad == "hour":
        cols["hour_ns"][i] += 1
    elif bad == "state":
        cols["state"][i] = "lunch"
    else:
        cols["run"][i] = "nobody"
    table = pa.table({"run": pa.array(cols["run"]).dictionary_encode(), "hour_ns": pa.array(cols["hour_ns"], pa.int64()),
                      "state": pa.array(cols["state"]).dictionary_encode(),
                      "duration_ns": pa.array(cols["duration_ns"], pa.int64())})
    real, calls = _cells.add_cells, []
    monkeypatch.setattr(_cells, "add_cells", lambda *a: calls.append(1) or real(*a))
    with pytest.raises(PauError, match=match):
        fleet_rollup.rollup(fleet_archive.runs, table, every="1w")
    assert calls  # the kernel met the row first
    monkeypatch.setattr(fleet_cellsums, "_checked", lambda b, index: None)
    with pytest.raises(PauError, match="a bug in pau"):
        fleet_rollup.rollup(fleet_archive.runs, table, every="1w")
