"""The int64 edge (issue 38, item 2): a rank whose span int64 cannot hold.

Each event's length is checked row by row; a rank's span (first event start to last
event end, or the ``span=`` given) is not a row, and ``b - a`` over it wrapped in the
sweep: one event at -2**63 and one near 2**63 - 1 gave idle -16. Now such a rank is
refused with :class:`pau.errors.SpanOverflowError` naming it (and the fix), or its
events are set aside with ``on_invalid="quarantine"``, on every entry point. Timelines
placed so that a rank's span lands just below, at or just above 2**63 - 1 are exact
against the reference twin (``tests/reference.py``) when the span fits, and raise
when it does not.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pytest
from depth import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pau
import pau.core as core
import reference as ref
from pau.engine import distributed, io as pio
from pau import errors

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
REASON = "the rank's span (first event start to last event end) does not fit in int64 ns"


def _events(rows) -> pa.Table:
    return pa.table({
        "rank": pa.array([r[0] for r in rows], pa.int32()),
        "start_ns": pa.array([r[1] for r in rows], pa.int64()),
        "end_ns": pa.array([r[2] for r in rows], pa.int64()),
        "kind": pa.array([r[3] for r in rows], pa.string()),
    })


# The adversary's input: rank 0 from -2**63 to 2**63 - 2 (2**64 - 2 ns), rank 1 ordinary.
WIDE = [(0, INT64_MIN, INT64_MIN + 5, "compute"), (0, INT64_MAX - 10, INT64_MAX - 1, "compute"),
        (1, 0, 10, "compute"), (1, 20, 30, "communication")]
RANK1 = {"compute": 10, "communication": 10, "idle": 10}


def _rank1_ok(table: pa.Table) -> None:
    got = {r["activity"]: r["duration_ns"] for r in table.to_pylist() if r["duration_ns"]}
    assert set(table.column("rank").to_pylist()) == {1}
    assert got == RANK1


def _archive(tmp_path) -> str:
    path = str(tmp_path / "ds")
    pio.write_dataset(_events(WIDE), path)
    return path


ENTRY_POINTS = {
    "classify": lambda tmp: core.classify(_events(WIDE)),
    "classify threads=2": lambda tmp: core.classify(_events(WIDE), threads=2),
    "overlap": lambda tmp: core.overlap(_events(WIDE)),
    "classify windows": lambda tmp: core.classify(_events(WIDE), windows=pa.table(
        {"rank": pa.array([-1], pa.int32()), "start_ns": [INT64_MIN], "end_ns": [INT64_MAX]})),
    "classify buckets": lambda tmp: core.classify(_events(WIDE), windows=2**62),
    "classify_dataset": lambda tmp: core.classify_dataset(_archive(tmp)),
    "classify_dataset workers=1": lambda tmp: core.classify_dataset(_archive(tmp), workers=1),
    "classify_dataset stream": lambda tmp: core.classify_dataset(
        pa.RecordBatchReader.from_batches(_events(WIDE).schema, _events(WIDE).to_batches())),
    "classify_partitions": lambda tmp: distributed.classify_partitions(_archive(tmp)),
    "ledger": lambda tmp: core.ledger(_events(WIDE)),
    "ledger of a path": lambda tmp: core.ledger(_archive(tmp)),
    "run.summary": lambda tmp: pau.Run(events=_events(WIDE)).summary(),
}


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_a_rank_whose_span_overflows_is_refused_naming_it(name, tmp_path):
    with pytest.raises(errors.SpanOverflowError, match=r"rank 0 spans \[-9223372036854775808, "
                       r"9223372036854775806\).*18446744073709551614 ns.*Fix: correct the times") as e:
        ENTRY_POINTS[name](tmp_path)
    assert (e.value.rank, e.value.start_ns, e.value.end_ns) == (0, INT64_MIN, INT64_MAX - 1)


def test_pau_read_of_a_file_refuses_it_naming_the_file(tmp_path):
    path = tmp_path / "events.csv"
    pcsv.write_csv(_events(WIDE), path)
    run = pau.read(path)
    with pytest.raises(errors.SpanOverflowError, match="rank 0 spans"):
        run.summary()
    with pytest.raises(errors.SpanOverflowError, match=r"ds.*rank 0 spans"):  # a streamed archive names itself
        core.classify_dataset(_archive(tmp_path), workers=1)


def test_pau_read_with_quarantine_sets_the_rank_aside(tmp_path):
    path = tmp_path / "events.csv"
    pcsv.write_csv(_events(WIDE + [(1, 5, 4, "compute")]), path)
    run = pau.read(path, on_invalid="quarantine")
    q = run.quarantine.to_pylist()
    assert [(r["location"], r["reason"]) for r in q] == [("line 2", REASON), ("line 3", REASON),
                                                         ("line 6", "end_ns before start_ns")]
    assert set(run.events.column("rank").to_pylist()) == {1}
    s = run.summary()
    assert s["quarantined"] == 3
    assert {r["rank"]: r["activity_ns"] for r in s["per_rank"]} == {1: RANK1}
    assert any(w.code == "events.quarantined" for w in run.warnings)


def test_a_given_span_that_overflows_is_refused():
    span = pa.table({"rank": pa.array([1, 0], pa.int32()), "start_ns": [0, INT64_MIN], "end_ns": [50, 0]})
    with pytest.raises(errors.InvalidWindowsError, match=r"span: row 1, rank 0: .* lasts 9223372036854775808 ns"):
        core.classify(_events(WIDE), span=span)
    # one ns shorter fits, and clips rank 0's far events away: exact
    span = pa.table({"rank": pa.array([0], pa.int32()), "start_ns": [INT64_MIN + 1], "end_ns": [0]})
    out = core.classify(_events(WIDE), span=span)
    got = {(r["rank"], r["activity"]): r["duration_ns"] for r in out.to_pylist() if r["duration_ns"]}
    assert got == {(0, "compute"): 4, (0, "idle"): INT64_MAX - 4, **{(1, a): v for a, v in RANK1.items()}}


QUARANTINE = {
    "classify": lambda tmp: core.classify(_events(WIDE), on_invalid="quarantine"),
    "classify_dataset": lambda tmp: core.classify_dataset(_archive(tmp), on_invalid="quarantine"),
    "classify_dataset workers=1": lambda tmp: core.classify_dataset(_archive(tmp), workers=1,
                                                                     on_invalid="quarantine"),
    "classify_partitions": lambda tmp: distributed.classify_partitions(_archive(tmp), on_invalid="quarantine"),
}


@pytest.mark.parametrize("name", sorted(QUARANTINE))
def test_quarantine_sets_the_ranks_events_aside(name, tmp_path):
    got = QUARANTINE[name](tmp_path)
    _rank1_ok(got.result)
    q = got.quarantine
    assert q.column("reason").to_pylist() == [REASON, REASON]
    assert q.column("start_ns").to_pylist() == [INT64_MIN, INT64_MAX - 10]
    assert got.result.schema.metadata[b"pau.quarantined_rows"] == b"2"
    assert got.result.schema.metadata[b"pau.rows"] == b"4"


def test_quarantine_numbers_the_rows_and_keeps_other_reasons():
    rows = [(2, 0, 5, "compute")] + WIDE + [(0, 9, 3, "compute"), (3, 0, 1, "bogus")]
    got = core.classify(_events(rows), on_invalid="quarantine")
    q = {r["row"]: r["reason"] for r in got.quarantine.to_pylist()}
    assert q == {1: REASON, 2: REASON, 5: "end_ns before start_ns", 6: "unknown kind"}
    assert set(got.result.column("rank").to_pylist()) == {1, 2}
    ov = core.overlap(_events(rows), on_invalid="quarantine")
    assert {r["row"]: r["reason"] for r in ov.quarantine.to_pylist()} == q
    led = core.ledger(_events(rows), on_invalid="quarantine")
    assert {r["row"]: r["reason"] for r in led.quarantine.to_pylist()} == q
    assert led.accountable_ns() == 30 + 5


def test_a_stream_read_once_cannot_set_a_rank_aside():
    t = _events(WIDE)
    with pytest.raises(errors.PauError, match="rank 0's span .* cannot be set aside from a stream"):
        core.classify_dataset(pa.RecordBatchReader.from_batches(t.schema, t.to_batches()), on_invalid="quarantine")


# ---------------------------------------------------------------------------
# the lifecycle: a rank's accountable time


def _lifecycle(rows) -> pa.Table:
    return pa.table({
        "record": [r[0] for r in rows], "attempt": pa.array([0] * len(rows), pa.int64()),
        "rank": pa.array([0] * len(rows), pa.int32()), "start_ns": pa.array([r[1] for r in rows], pa.int64()),
        "end_ns": pa.array([r[2] for r in rows], pa.int64()), "step": pa.array([r[3] for r in rows], pa.int64()),
        "kind": pa.array([r[4] for r in rows], pa.string()),
    })


@pytest.mark.parametrize("lo", [INT64_MIN + 1, -5])
def test_a_lifecycle_rank_whose_time_overflows_is_refused(lo):
    hi = lo + INT64_MAX + 1  # one ns too long
    lc = _lifecycle([("attempt", lo, hi, None, "completed"), ("step", lo, lo + 5, 1, None),
                     ("step", hi - 9, hi, 2, None)])
    for call in (lambda: core.attribute(lc), lambda: core.ledger(None, lc),
                 lambda: core.ledger(_events([(0, lo, lo + 1, "compute")]), lc),
                 lambda: pau.Run(lifecycle=lc).summary()):
        with pytest.raises(errors.SpanOverflowError, match="lifecycle: rank 0 spans .*first accountable instant"):
            call()
    # as_of ends the ledger in time: exact
    led = core.ledger(None, lc, as_of=lo + INT64_MAX)
    s = led.summary()
    assert s["accountable_ns"] == INT64_MAX
    # the attempt still runs at as_of, without a checkpoint: step 1 and step 2 (cut at as_of) pending
    assert s["state_ns"]["pending"] == 5 + 8
    assert sum(s["state_ns"].values()) == INT64_MAX


def test_a_lifecycle_that_just_fits_is_exact():
    lo = INT64_MIN + 1
    hi = lo + INT64_MAX
    lc = _lifecycle([("attempt", lo, hi, None, "completed"), ("step", lo, lo + 5, 1, None),
                     ("step", hi - 9, hi, 2, None)])
    s = core.ledger(_events([(0, lo, lo + 3, "compute"), (0, hi - 1, hi, "memcpy")]), lc).summary()
    assert s["accountable_ns"] == INT64_MAX
    assert s["state_ns"]["productive"] == 14 and s["state_ns"]["unattributed"] == INT64_MAX - 14
    assert s["activity_ns"] == {"compute": 3, "memcpy": 1, "idle": INT64_MAX - 4}


# ---------------------------------------------------------------------------
# generated timelines at the edge, against the reference twin


@st.composite
def edge_timelines(draw):
    """Ranks whose events sit in two clusters: near a start S and near S + L, with L
    within a few ns of 2**63 - 1 (so the span just fits, fits exactly, or does not),
    or small; S as low as -2**63 and as high as the top cluster allows (up to the
    event end 2**63 - 1)."""
    rows = []
    for rank in draw(st.lists(st.sampled_from([0, 1, 2, 7]), min_size=1, max_size=3, unique=True)):
        length = draw(st.one_of(st.integers(INT64_MAX - 40, INT64_MAX + 40), st.integers(0, 60)))
        top = INT64_MAX - length  # S + L <= 2**63 - 1
        start = draw(st.one_of(st.integers(INT64_MIN, INT64_MIN + 30), st.integers(max(INT64_MIN, top - 30), top)))
        for _ in range(draw(st.integers(1, 4))):
            off, n = draw(st.one_of(st.just(0), st.integers(0, 20))), draw(st.integers(0, 20))
            if draw(st.booleans()):  # near S
                a = start + min(off, length)
                rows.append((rank, a, min(a + n, start + length), draw(st.sampled_from(ref.KINDS)), 0))
            else:  # near S + L
                b = start + length - min(off, length)
                rows.append((rank, max(b - n, start), b, draw(st.sampled_from(ref.KINDS)), 0))
    return draw(st.permutations(rows))


def _wide(rows, span=None) -> list:
    return sorted(r for r, (s, e) in ref.spans(rows, span).items() if e - s > INT64_MAX)


@st.composite
def edge_windows(draw):
    """No windows, buckets of 2**61 and more, or windows over the whole int64 range."""
    kind = draw(st.sampled_from(["none", "bucket", "list"]))
    if kind == "bucket":
        return draw(st.sampled_from([2**61, 2**62, INT64_MAX]))
    if kind == "list":
        cuts = sorted(set(draw(st.lists(st.sampled_from([INT64_MIN, INT64_MIN + 9, -1, 0, 2**62, INT64_MAX - 9,
                                                          INT64_MAX]), min_size=2, max_size=5))))
        return [(-1, a, b) for a, b in zip(cuts, cuts[1:])]
    return None


def _windows_arg(w):
    if w is None or isinstance(w, int):
        return w
    return pa.table({"rank": pa.array([x[0] for x in w], pa.int32()), "start_ns": pa.array([x[1] for x in w],
                     pa.int64()), "end_ns": pa.array([x[2] for x in w], pa.int64())})


@settings(max_examples=examples(300), **SETTINGS)
@given(edge_timelines(), edge_windows(), st.integers(1, 2))
def test_edge_timelines_are_exact_or_refused(rows, windows, threads):
    events = _events(rows)
    wide = _wide(rows)
    w = _windows_arg(windows)
    if wide:
        with pytest.raises(errors.SpanOverflowError) as e:
            core.classify(events, windows=w, threads=threads)
        assert e.value.rank == wide[0]
        with pytest.raises(errors.SpanOverflowError):
            core.overlap(events, windows=w)
        got = core.classify(events, windows=w, on_invalid="quarantine")
        assert sorted(set(got.quarantine.column("rank").to_pylist())) == wide
        assert got.quarantine.column("reason").to_pylist() == [REASON] * got.quarantine.num_rows
        rows = [r for r in rows if r[0] not in wide]
        out = got.result
    else:
        out = core.classify(events, windows=w, threads=threads)
        matrix = core.overlap(events, windows=w).matrix
        want = {slot: m for slot, m in ref.overlap_matrix(rows, windows=windows).items() if m}
        assert ref.pau_matrix(matrix, w is not None) == want
    assert ref.pau_classify(out, w is not None) == ref.classify(rows, windows=windows)


@settings(max_examples=examples(150), **SETTINGS)
@given(edge_timelines())
def test_edge_timelines_streamed_and_in_the_ledger(rows):
    events = _events(rows)
    wide = _wide(rows)
    ordered = events.sort_by([("rank", "ascending"), ("start_ns", "ascending")])
    stream = pa.RecordBatchReader.from_batches(ordered.schema, ordered.to_batches(max_chunksize=2))
    if wide:
        with pytest.raises(errors.SpanOverflowError) as e:
            core.classify_dataset(stream)
        assert e.value.rank == wide[0]
        with pytest.raises(errors.SpanOverflowError):
            core.ledger(events)
        return
    assert ref.pau_classify(core.classify_dataset(stream), False) == ref.classify(rows)
    led = core.ledger(events)
    assert ref.pau_ledger(led.table) == ref.ledger(rows)
    assert {r["rank"]: r["accountable_ns"] for r in led.accountable.to_pylist()} == \
        {r: e - s for r, (s, e) in ref.spans(rows).items()}


@settings(max_examples=examples(150), **SETTINGS)
@given(edge_timelines(), st.data())
def test_edge_timelines_with_given_spans(rows, data):
    """A span given for a rank sets its length: spans that fit clip the events (exact);
    one that does not is refused before any sweep."""
    ranks = sorted({r[0] for r in rows})
    span = []
    for r in data.draw(st.lists(st.sampled_from(ranks), unique=True)):
        a = data.draw(st.one_of(st.integers(INT64_MIN, INT64_MIN + 20), st.integers(-20, 20)))
        b = data.draw(st.integers(a, min(INT64_MAX, a + INT64_MAX + 20)))
        span.append((r, a, b))
    sp = pa.table({"rank": pa.array([s[0] for s in span], pa.int32()), "start_ns": pa.array([s[1] for s in span],
                   pa.int64()), "end_ns": pa.array([s[2] for s in span], pa.int64())})
    too_long = [s for s in span if s[2] - s[1] > INT64_MAX]
    if too_long:
        with pytest.raises(errors.InvalidWindowsError, match=f"rank {too_long[0][0]}: .* more than int64"):
            core.classify(_events(rows), span=sp)
        return
    wide = _wide(rows, span)
    if wide:
        with pytest.raises(errors.SpanOverflowError):
            core.classify(_events(rows), span=sp)
        return
    assert ref.pau_classify(core.classify(_events(rows), span=sp), False) == ref.classify(rows, span=span)


def test_a_lifecycle_time_of_minus_2_63_is_named_not_called_null():
    """The lifecycle reads the least int64 as no time: a record starting there is
    refused saying so, not as a "null start_ns" the table does not hold."""
    lc = _lifecycle([("attempt", 0, 10, None, "completed"), ("step", INT64_MIN, 5, 1, None)])
    with pytest.raises(errors.InvalidRowError, match=r"row 1: start_ns = -9223372036854775808, the least int64"):
        core.attribute(lc)
    lc = _lifecycle([("attempt", 0, 10, None, "completed"), ("step", None, 5, 1, None)])
    with pytest.raises(errors.InvalidRowError, match=r"row 1: null start_ns"):
        core.attribute(lc)


def test_a_saved_partition_result_with_a_wrapped_rank_is_computed_again(tmp_path, monkeypatch):
    """Results saved by a pau that did not check spans hold wrapped counts: not reused."""
    import pau.engine._sweep as sweep_module

    path, saved = _archive(tmp_path), str(tmp_path / "saved")
    with monkeypatch.context() as m:  # as before the check: the wrapped counts are saved
        for module in (sweep_module, distributed):
            m.setattr(module, "wide_ranks", lambda hist: np.empty(0, np.int32))
        old = distributed.classify_partitions(path, results_dir=saved)
    assert min(old.column("duration_ns").to_pylist()) < 0  # what was saved: idle -16
    with pytest.raises(errors.SpanOverflowError, match="rank 0 spans"):
        distributed.classify_partitions(path, results_dir=saved)


def test_events_far_outside_a_lifecycle_that_fits_are_left_out_exactly():
    """With a lifecycle, its accountable time is the span: rank 0's events at both ends
    of int64 lie outside it, are left out (and counted so), and nothing is refused."""
    lc = pa.table({"record": ["attempt", "step"], "attempt": pa.array([0, 0], pa.int64()),
                   "rank": pa.array([0, 0], pa.int32()), "start_ns": pa.array([0, 0], pa.int64()),
                   "end_ns": pa.array([100, 40], pa.int64()), "step": pa.array([None, 1], pa.int64()),
                   "kind": ["completed", None]})
    events = _events(WIDE[:2] + [(0, 10, 30, "compute")])
    s = core.ledger(events, lc).summary()
    assert s["accountable_ns"] == 100
    assert s["activity_ns"] == {"compute": 20, "idle": 80}
    figures = pau.Run(events=events, lifecycle=lc).summary()
    assert figures["ledger"] == s
    assert figures["events_outside_accountable"]["events"] == 2
    assert figures["events_outside_accountable"]["ns"] == 5 + 9


# generated lifecycles moved to the very ends of int64 (the least int64 itself is the
# lifecycle's null time, so the low end is -2**63 + 1)

_LIFE_TIMES = ("start_ns", "end_ns", "block_end_ns", "durable_ns")


def _moved(t: pa.Table, shift: int) -> pa.Table:
    for name in _LIFE_TIMES:
        i = t.schema.get_field_index(name)
        t = t.set_column(i, name, pa.array([None if v is None else v + shift for v in t[name].to_pylist()],
                                           pa.int64()))
    return t


@settings(max_examples=examples(100), **SETTINGS)
@given(case=st.deferred(lambda: _with_as_of()), end=st.sampled_from(["low", "high"]))
def test_a_lifecycle_at_either_end_of_int64_is_attributed_the_same(case, end):
    from lifecycle_cases import S, table

    rows, as_of = case
    t = table(rows)
    as_of_ns = None if as_of is None else as_of * S
    times = [v for name in _LIFE_TIMES for v in t[name].to_pylist() if v is not None]
    times += [] if as_of_ns is None else [as_of_ns]
    shift = INT64_MIN + 1 - min(times) if end == "low" else INT64_MAX - max(times)
    moved = _moved(t, shift)
    got = core.attribute(moved, as_of=None if as_of_ns is None else as_of_ns + shift)
    want = core.attribute(t, as_of=as_of_ns)
    back = got
    for name in ("start_ns", "end_ns"):
        i = back.schema.get_field_index(name)
        back = back.set_column(i, name, pa.array([v - shift for v in back[name].to_pylist()], pa.int64()))
    assert back.equals(want)
    s_got = core.ledger(lifecycle=moved, as_of=None if as_of_ns is None else as_of_ns + shift).summary()
    s_want = core.ledger(lifecycle=t, as_of=as_of_ns).summary()
    assert s_got["as_of"] - shift == s_want["as_of"]
    assert {**s_got, "as_of": s_want["as_of"]} == s_want


def _with_as_of():
    from test_lifecycle_properties import with_as_of

    return with_as_of()


def test_an_as_of_beyond_int64_is_refused():
    lc = _lifecycle([("attempt", 0, 10, None, "completed"), ("step", 0, 5, 1, None)])
    for t in (INT64_MAX + 1, INT64_MIN - 1):
        with pytest.raises(errors.PauError, match=f"as_of: {t} does not fit in int64"):
            core.attribute(lc, as_of=t)
    assert core.ledger(None, lc, as_of=INT64_MAX).summary()["accountable_ns"] == 10
