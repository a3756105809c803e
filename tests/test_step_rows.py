"""The step rows both straggler figures read (`pau.figures.stragglers.checked_steps`):
`stragglers` and `straggler_scores` refuse, or quarantine, exactly the same rows, and
those are the rows the rules of docs/analysis.md ("Rows that cannot be used") name,
checked against a slow twin written below, row by row.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from depth import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pau.engine.types import Quarantined
from pau.errors import InvalidRowError, SchemaError
from pau.figures.stragglers import straggler_scores, stragglers
from pau.readers import alibaba


def _table(rows, *, attempt=True, start=True, record=False):
    """``(attempt, rank, step, start_ns, end_ns)`` tuples (None: null) -> a steps table;
    with ``record``, a lifecycle-like table with a ``phase`` row before each step row (step
    row ``i`` is row ``2i + 1``: the figures read the step rows alone and name the
    table's own row numbers)."""
    cols = {}
    if record:
        rows = [x for r in rows for x in ((0, 0, None, 0, 1), r)]
        cols["record"] = pa.array(["phase", "step"] * (len(rows) // 2), pa.string())
    if attempt:
        cols["attempt"] = pa.array([r[0] for r in rows], pa.int32())
    cols["rank"] = pa.array([r[1] for r in rows], pa.int32())
    cols["step"] = pa.array([r[2] for r in rows], pa.int64())
    if start:
        cols["start_ns"] = pa.array([r[3] for r in rows], pa.int64())
    cols["end_ns"] = pa.array([r[4] for r in rows], pa.int64())
    return pa.table(cols)


def _twin(rows, *, attempt=True, start=True):
    """The rules, one row at a time: {row: reason} of the rows that cannot be used, and
    the number of usable rows in flight."""
    bad, seen, in_flight = {}, set(), 0
    for i, (a, r, k, s, e) in enumerate(rows):
        a = a if attempt else 0
        s = s if start else None
        if r is None:
            bad[i] = "null rank"
        elif r == -1:
            bad[i] = "rank -1 (all ranks)"
        elif k is None:
            bad[i] = "null step"
        elif a is None:
            bad[i] = "null attempt"
        elif start and s is None:
            bad[i] = "null start_ns"
        elif start and e is not None and e < s:
            bad[i] = "end_ns before start_ns"
        elif (a, k, r) in seen:
            bad[i] = "duplicate (attempt, step, rank)"
        else:
            seen.add((a, k, r))
            in_flight += e is None
    return bad, in_flight


_maybe = lambda s: st.one_of(st.none(), s)  # noqa: E731
_row = st.tuples(_maybe(st.integers(0, 1)), _maybe(st.integers(-1, 2)), _maybe(st.integers(0, 3)),
                 _maybe(st.integers(0, 20)), _maybe(st.integers(0, 30)))


def _outcome(fn, t, **kw):
    """(quarantined {row: reason}, in_flight) with quarantine; and the raise's (column, row, reason, count)."""
    q = fn(t, on_invalid="quarantine", **kw)
    assert isinstance(q, Quarantined)
    set_aside = dict(zip(q.quarantine["row"].to_pylist(), q.quarantine["reason"].to_pylist()))
    try:
        fn(t, **kw)
        raised = None
    except InvalidRowError as exc:
        raised = (exc.table, exc.column, exc.row, exc.reason, exc.count)
    return set_aside, q.result.in_flight, raised


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(_row, max_size=12), attempt=st.booleans(), record=st.booleans())
def test_both_figures_refuse_the_same_rows(rows, attempt, record):
    t = _table(rows, attempt=attempt, record=record)
    got_s = _outcome(stragglers, t)
    got_n = _outcome(straggler_scores, t)
    assert got_s == got_n  # same rows set aside, same reasons, same in flight, same error
    want, in_flight = _twin(rows, attempt=attempt)
    if record:  # the lifecycle's row numbers
        want = {2 * i + 1: why for i, why in want.items()}
    assert got_s[0] == want
    assert got_s[1] == in_flight
    if want:
        first = min(want)
        assert got_s[2][:3] == ("lifecycle" if record else "steps", {"null rank": "rank", "rank -1 (all ranks)": "rank", "null step": "step",
                                          "null attempt": "attempt", "null start_ns": "start_ns",
                                          "end_ns before start_ns": "end_ns",
                                          "duplicate (attempt, step, rank)": "rank"}[want[first]], first)
        assert got_s[2][3:] == (want[first], len(want))
    else:
        assert got_s[2] is None


def test_a_null_start_is_refused_by_both():
    """docs/analysis.md: start_ns is never null in a lifecycle (DESIGN §2.2); a steps table
    that has the column has it on every row, or the row is refused, by both figures."""
    t = _table([(0, 0, 1, 0, 10), (0, 1, 1, None, 12), (0, 0, 2, 12, 20), (0, 1, 2, 12, 25)])
    for fn in (stragglers, straggler_scores):
        with pytest.raises(InvalidRowError, match="column 'start_ns', row 1: null start_ns"):
            fn(t)
    res, q = stragglers(t, on_invalid="quarantine")
    assert q["row"].to_pylist() == [1] and q["reason"].to_pylist() == ["null start_ns"]
    assert res.table["wait_ns"].to_pylist() == [0, 5, 0]  # step 1: rank 0 alone; step 2: rank 0 waits 25 - 20
    res, q = straggler_scores(t, on_invalid="quarantine")
    assert q["row"].to_pylist() == [1]
    # rank 0: steps of 10 and 8 ns, the lower middle 8; rank 1: 13 (step 1's row set aside)
    assert res.table["median_ns"].to_pylist() == [8, 13]
    assert res.table["relative"].to_pylist() == [1.0, 8 / 13]


def test_without_a_start_column():
    """Ends are what stragglers compares: a table without start_ns is fine for it; the
    scores time each step, so they need the column (a SchemaError naming it)."""
    rows = [(0, 0, 1, None, 10), (0, 1, 1, None, 12)]
    t = _table(rows, start=False)
    assert stragglers(t).table["wait_ns"].to_pylist() == [2, 0]
    with pytest.raises(SchemaError, match="start_ns"):
        straggler_scores(t)


def test_alibaba_reader_refuses_null_keys(tmp_path):
    """A null worker or iteration is refused, naming the column and row (it was read as 0)."""
    for text, col, row in (("worker,gpu,time,batch_time_norm\n0,0,1,10\n,0,1,12\n", "worker", 1),
                           ("worker,gpu,time,batch_time_norm\n0,0,1,10\n0,0,,10\n", "time", 1),
                           ("worker,gpu,time,batch_time_norm\n0,0,1,\n1,0,1,3\n", "batch_time_norm", 0)):
        path = tmp_path / "job_0_norm.csv"
        path.write_text(text)
        with pytest.raises(InvalidRowError, match=f"column '{col}', row {row}: null"):
            alibaba.read_alibaba_minibatch(path)
    path.write_text("worker,gpu,time,batch_time_norm\n1,0,1,10\n0,0,1,12\n0,0,2,5\n")
    t = alibaba.read_alibaba_minibatch(path)
    # step 1 starts at 0; step 2 at step 1's slowest duration (12 units of 1 ms)
    assert t.select(["rank", "step", "start_ns", "end_ns"]).to_pylist() == [
        {"rank": 0, "step": 1, "start_ns": 0, "end_ns": 12_000_000},
        {"rank": 1, "step": 1, "start_ns": 0, "end_ns": 10_000_000},
        {"rank": 0, "step": 2, "start_ns": 12_000_000, "end_ns": 17_000_000}]
