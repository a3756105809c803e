"""Hand-checked examples of pau.core, input forms and output schemas.

The main example (fixture ``two_rank_rows`` in conftest.py), times in ns:

    rank 0: compute [0, 60)  communication [40, 100)  compute [120, 150)
    rank 1: memcpy [10, 30)  compute [20, 50)  sync [50, 50) (zero-length)

rank 0, span [0, 150):
    [0, 40)    compute                 40  -> compute
    [40, 60)   compute+communication   20  -> compute (communication hidden)
    [60, 100)  communication           40  -> communication (exposed)
    [100, 120) nothing                 20  -> idle
    [120, 150) compute                 30  -> compute
    compute 40+20+30 = 90, communication 40, idle 20; 90+40+20 = 150.
    |communication| = 60, |communication ∩ compute| = 20, ratio 20/60 = 1/3.
rank 1, span [10, 50) (the zero-length sync at 50 adds nothing):
    [10, 20)   memcpy                  10  -> memcpy
    [20, 30)   compute+memcpy          10  -> compute
    [30, 50)   compute                 20  -> compute
    compute 10+20 = 30, memcpy 10; 30+10 = 40. No communication: ratio null.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import pau
import pau.core as core
from pau import _core
from pau.engine import _sweep

ACTS = ("compute", "communication", "memcpy", "memset", "sync", "other", "idle")
LABEL = pa.dictionary(pa.int8(), pa.string())


def zeros(**kw):
    row = dict.fromkeys(ACTS, 0)
    row.update(kw)
    return row


def as_dict(table, windows=False):
    """{(rank[, window]): {activity: ns}} of a classify table."""
    out = {}
    for r in table.to_pylist():
        key = (r["rank"], r["window"]) if windows else r["rank"]
        out.setdefault(key, {})[r["activity"]] = r["duration_ns"]
    return out


EXPECTED = {
    0: zeros(compute=90, communication=40, idle=20),
    1: zeros(compute=30, memcpy=10),
}


@pytest.fixture
def events(make_events, two_rank_rows):
    return make_events(two_rank_rows)


# ---------------------------------------------------------------------------
# the worked example


def test_two_rank_example(events):
    out = core.classify(events)
    assert as_dict(out) == EXPECTED
    # conservation: rank 0 spans 150 ns, rank 1 spans 50 - 10 = 40 ns
    totals = out.group_by("rank").aggregate([("duration_ns", "sum")]).to_pylist()
    assert {r["rank"]: r["duration_ns_sum"] for r in totals} == {0: 150, 1: 40}


def test_two_rank_overlap(events):
    res = core.overlap(events)
    matrix = {(r["rank"], r["kinds"]): r["duration_ns"] for r in res.matrix.to_pylist()}
    assert matrix == {
        (0, "idle"): 20,                        # [100, 120)
        (0, "compute"): 70,                     # [0, 40) + [120, 150) = 40 + 30
        (0, "communication"): 40,               # [60, 100)
        (0, "compute+communication"): 20,       # [40, 60)
        (1, "compute"): 20,                     # [30, 50)
        (1, "memcpy"): 10,                      # [10, 20)
        (1, "compute+memcpy"): 10,              # [20, 30)
    }
    ratio = res.ratio.to_pylist()
    assert ratio[0] == {"rank": 0, "communication_ns": 60, "overlap_ns": 20, "ratio": 20 / 60}
    # 0/0 is null, never NaN
    assert ratio[1] == {"rank": 1, "communication_ns": 0, "overlap_ns": 0, "ratio": None}
    assert res.ratio["ratio"].null_count == 1
    assert not any(isinstance(x, float) and math.isnan(x) for x in res.ratio["ratio"].to_pylist())


def test_overlap_ratio_null_without_communication(make_events):
    res = core.overlap(make_events([(0, 0, 10, "compute"), (0, 5, 20, "memcpy")]))
    assert res.ratio.to_pylist() == [
        {"rank": 0, "communication_ns": 0, "overlap_ns": 0, "ratio": None}]
    # communication fully hidden: ratio exactly 1; not hidden at all: exactly 0
    res = core.overlap(make_events([(0, 0, 10, "compute"), (0, 2, 8, "communication"),
                                    (1, 0, 10, "communication"), (1, 10, 20, "compute")]))
    assert [r["ratio"] for r in res.ratio.to_pylist()] == [1.0, 0.0]


def test_windows_example(events):
    windows = pa.table({"rank": pa.array([-1, 0], pa.int32()),
                        "start_ns": [0, 100], "end_ns": [50, 200]})
    out = core.classify(events, windows=windows)
    assert out.column_names == ["rank", "window", "activity", "duration_ns"]
    # rank 0: window 0 = [0, 50): compute 40 + compute(+comm) 10 = 50;
    #         outside, [50, 100): compute(+comm) 10, communication 40;
    #         window 1 = [100, 200) cut to the span [100, 150): idle 20, compute 30.
    # rank 1: window 0 = [0, 50) holds its whole span [10, 50); window 1 is rank 0's;
    #         no time outside windows, so no null-window row.
    assert as_dict(out, windows=True) == {
        (0, None): zeros(compute=10, communication=40),
        (0, 0): zeros(compute=50),
        (0, 1): zeros(compute=30, idle=20),
        (1, 0): zeros(compute=30, memcpy=10),
    }
    # order: by rank, the null window first, then windows in time order
    keys = list(dict.fromkeys((r["rank"], r["window"]) for r in out.to_pylist()))
    assert keys == [(0, None), (0, 0), (0, 1), (1, 0)]


def test_windows_with_ids_and_empty_windows(events):
    # window ids are given; "late" lies after every span, "zero" is zero-length:
    # both still get a row per activity, all zero.
    windows = pa.table({"rank": pa.array([-1, -1, 1], pa.int32()),
                        "start_ns": [1000, 0, 25], "end_ns": [2000, 150, 25],
                        "window": pa.array([30, 10, 20], pa.int64())})
    out = core.classify(events, windows=windows)
    assert as_dict(out, windows=True) == {
        (0, 10): EXPECTED[0], (0, 30): zeros(),
        (1, 10): EXPECTED[1], (1, 20): zeros(), (1, 30): zeros(),
    }
    keys = list(dict.fromkeys((r["rank"], r["window"]) for r in out.to_pylist()))
    assert keys == [(0, 10), (0, 30), (1, 10), (1, 20), (1, 30)]  # time order within rank


def test_bucket_windows(events):
    out = core.classify(events, windows=100)
    # rank 0: bucket 0 = [0, 100): compute 60, communication 40;
    #         bucket 100 = [100, 150): idle 20, compute 30. rank 1 lies in bucket 0.
    assert as_dict(out, windows=True) == {
        (0, 0): zeros(compute=60, communication=40),
        (0, 100): zeros(compute=30, idle=20),
        (1, 0): zeros(compute=30, memcpy=10),
    }
    assert out.schema.field("window").type == pa.int64()
    assert out["window"].null_count == 0


def test_span_clips_events_and_covers_ranks_without_events(events):
    span = pa.table({"rank": pa.array([0, 2], pa.int32()), "start_ns": [50, 0],
                     "end_ns": [130, 10]})
    out = core.classify(events, span=span)
    # rank 0 over [50, 130): compute(+comm) [50, 60) 10, communication [60, 100) 40,
    #   idle [100, 120) 20, compute [120, 130) 10 -> 20 + 40 + 20 = 80.
    # rank 1 keeps its default span [10, 50); rank 2 has no event: 10 ns idle.
    assert as_dict(out) == {
        0: zeros(compute=20, communication=40, idle=20),
        1: EXPECTED[1],
        2: zeros(idle=10),
    }


def test_span_beyond_the_events_is_idle(make_events):
    ev = make_events([(0, 10, 20, "compute")])
    span = {"rank": np.array([0], np.int32), "start_ns": np.array([0]), "end_ns": np.array([100])}
    # [0, 10) idle, [10, 20) compute, [20, 100) idle
    assert as_dict(core.classify(ev, span=span)) == {0: zeros(compute=10, idle=90)}


def test_touching_and_zero_length_events(make_events):
    ev = make_events([
        (0, 0, 10, "communication"),
        (0, 10, 20, "compute"),      # touches: no overlap at t = 10
        (0, 20, 20, "compute"),      # zero-length: covers nothing
        (0, 20, 30, "memset"),
        (0, 15, 15, "communication"),
    ])
    out = core.classify(ev)
    assert as_dict(out) == {0: zeros(communication=10, compute=10, memset=10)}
    res = core.overlap(ev)
    assert res.ratio.to_pylist()[0]["overlap_ns"] == 0
    assert "compute+communication" not in res.matrix["kinds"].to_pylist()


def test_only_zero_length_events(make_events):
    # span [5, 5): the rank is accounted with zero time
    out = core.classify(make_events([(3, 5, 5, "compute")]))
    assert as_dict(out) == {3: zeros()}
    assert core.overlap(make_events([(3, 5, 5, "compute")])).matrix.num_rows == 0


def test_custom_priority(events):
    prio = ["communication", "memcpy", "compute", "memset", "sync", "other"]
    out = core.classify(events, priority=prio)
    # rank 0: communication now wins [40, 100) = 60; compute 40 + 30 = 70; idle 20.
    # rank 1: memcpy wins [10, 30) = 20; compute [30, 50) = 20.
    assert as_dict(out) == {0: zeros(compute=70, communication=60, idle=20),
                            1: zeros(compute=20, memcpy=20)}
    assert as_dict(core.classify(events, priority=tuple(core.DEFAULT_PRIORITY))) == EXPECTED


def test_large_times_are_exact(make_events):
    big = 2**62
    top = 2**63 - 2  # see test_event_ending_at_int64_max for 2**63 - 1
    ev = make_events([(0, big, big + 3, "compute"), (0, big + 1, top, "communication")])
    out = core.classify(ev)
    # compute [big, big+3); communication [big+1, top) exposed from big+3
    assert as_dict(out) == {0: zeros(compute=3, communication=top - big - 3)}
    assert sum(out["duration_ns"].to_pylist()) == top - big
    # one nanosecond just below the end of int64 time, in the last bucket
    ev = make_events([(0, top - 1, top, "sync")])
    assert as_dict(core.classify(ev, windows=2**62), windows=True) == {(0, 2**62): zeros(sync=1)}
    # a span reaching the very end of int64 time: the rest is idle
    span = pa.table({"rank": pa.array([0], pa.int32()), "start_ns": [top - 1], "end_ns": [2**63 - 1]})
    assert as_dict(core.classify(ev, span=span)) == {0: zeros(sync=1, idle=1)}


_INT64_MAX_SCRIPT = """
import pyarrow as pa, pau.core as core
ev = pa.table({"rank": pa.array([0, 0, 0], pa.int32()), "start_ns": [0, 5, 7],
               "end_ns": [2**63 - 1, 2**63 - 1, 9], "kind": ["sync", "memcpy", "compute"]})
print(*[r["duration_ns"] for r in core.classify(ev).to_pylist()])
"""


def test_event_ending_at_int64_max():
    """Regression: an event ending at 2**63 - 1 (a valid int64 time) never returned.

    The sweep uses kOpen = INT64_MAX both as "no open interval" and as a real end:
    ``refresh`` left ``knext`` at its default 0 (compute), ``advance`` cleared the
    compute bit instead of the running kind and looped forever (with the GIL
    released). Run in a subprocess so a hang is a failure, not a stuck suite.
    """
    try:
        proc = subprocess.run([sys.executable, "-c", _INT64_MAX_SCRIPT], capture_output=True,
                              text=True, timeout=15)
    except subprocess.TimeoutExpired:
        pytest.fail("classify() did not return for an event ending at 2**63 - 1 (hang)")
    assert proc.returncode == 0, proc.stderr
    # span [0, M), M = 2**63 - 1: [0, 5) sync 5; [5, 7) sync+memcpy -> memcpy 2;
    # [7, 9) compute 2; [9, M) sync+memcpy -> memcpy M - 9. memcpy = M - 7; sum = M.
    m = 2**63 - 1
    assert proc.stdout.split() == [str(x) for x in (2, 0, m - 7, 0, 5, 0, 0)]


# ---------------------------------------------------------------------------
# input forms


class ArrowStream:
    """Only the Arrow PyCapsule stream interface, nothing else pyarrow-specific."""

    def __init__(self, table):
        self._table = table

    def __arrow_c_stream__(self, requested_schema=None):
        return self._table.__arrow_c_stream__(requested_schema)


def _forms(t: pa.Table):
    chunked = pa.Table.from_batches(
        [b for off in (0, 1, 3) for b in t.slice(off, {0: 1, 1: 2, 3: 10}[off]).to_batches()])
    yield "table", t
    yield "chunked", chunked
    yield "record batch", t.combine_chunks().to_batches()[0]
    yield "reader", pa.RecordBatchReader.from_batches(t.schema, chunked.to_batches())
    yield "capsule", ArrowStream(chunked)
    yield "pandas", t.to_pandas()
    yield "dict", {name: t[name].to_numpy() for name in t.column_names}


@pytest.mark.parametrize("form", ["table", "chunked", "record batch", "reader", "capsule",
                                  "pandas", "dict"])
def test_input_forms(events, form):
    t = events.select(["rank", "start_ns", "end_ns", "kind"])
    obj = dict(_forms(t))[form]
    assert t.num_rows == 6
    if form == "chunked":
        assert obj["rank"].num_chunks == 3
    out = core.classify(obj)
    assert out.equals(core.classify(t))
    assert as_dict(out) == EXPECTED
    assert out.schema.metadata[b"pau.rows"] == b"6"
    # a reader is spent once read: build every input afresh
    assert core.overlap(dict(_forms(t))[form]).matrix.equals(core.overlap(t).matrix)
    assert core.ledger(dict(_forms(t))[form]).table.equals(core.ledger(t).table)


def test_pandas_categorical_and_datetime(events):
    df = events.to_pandas()
    df["kind"] = df["kind"].astype("category")
    df["start_ns"] = pd.to_datetime(df["start_ns"], unit="ns")
    df["end_ns"] = pd.to_datetime(df["end_ns"], unit="ns")
    before = df.copy()
    assert as_dict(core.classify(df)) == EXPECTED
    pd.testing.assert_frame_equal(df, before)  # the caller's frame is untouched


def test_dict_of_numpy_arrays_is_not_modified(two_rank_rows):
    # out of order on purpose: pau sorts a copy, never the caller's arrays
    rows = list(reversed(two_rank_rows))
    d = {"rank": np.array([r[0] for r in rows], np.int64),
         "start_ns": np.array([r[1] for r in rows], np.int64),
         "end_ns": np.array([r[2] for r in rows], np.int64),
         "kind": np.array([r[3] for r in rows])}
    copy = {k: v.copy() for k, v in d.items()}
    assert as_dict(core.classify(d)) == EXPECTED
    for k in d:
        np.testing.assert_array_equal(d[k], copy[k])


@pytest.mark.parametrize("index_type", [pa.int8(), pa.int16(), pa.int32(), pa.int64(),
                                        pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()])
def test_kind_dictionary_index_types(two_rank_rows, index_type):
    # a dictionary in its own order, with a value no row uses
    dictionary = pa.array(["memcpy", "sync", "other", "communication", "compute"])
    idx = [dictionary.to_pylist().index(r[3]) for r in two_rank_rows]
    kind = pa.DictionaryArray.from_arrays(pa.array(idx, index_type), dictionary)
    t = pa.table({"rank": pa.array([r[0] for r in two_rank_rows], pa.int32()),
                  "start_ns": [r[1] for r in two_rank_rows],
                  "end_ns": [r[2] for r in two_rank_rows], "kind": kind})
    assert as_dict(core.classify(t)) == EXPECTED


@pytest.mark.parametrize("kind_type", [pa.string(), pa.large_string(), pa.string_view(),
                                       pa.dictionary(pa.int32(), pa.large_string()),
                                       # Polars' categoricals: a dictionary of string_view
                                       pa.dictionary(pa.uint32(), pa.string_view())])
def test_kind_string_types(make_events, two_rank_rows, kind_type):
    t = make_events(two_rank_rows, dictionary=False)
    t = t.set_column(t.schema.get_field_index("kind"), "kind", t["kind"].cast(kind_type))
    assert as_dict(core.classify(t)) == EXPECTED


def test_kind_dictionaries_differ_between_chunks(make_events):
    # each chunk has its own dictionary; the second chunk is earlier in time, so the
    # table is re-fed in (rank, start) order across chunks
    a = make_events([(0, 10, 20, "compute"), (0, 30, 40, "memset")])
    b = make_events([(0, 0, 5, "communication"), (0, 15, 35, "sync")])
    t = pa.Table.from_batches(a.to_batches() + b.to_batches())
    assert t["kind"].chunk(0).dictionary != t["kind"].chunk(1).dictionary
    # [0,5) comm, [5,10) idle, [10,20) compute, [20,30) sync, [30,40) memset (> sync)
    assert as_dict(core.classify(t)) == {0: zeros(communication=5, idle=5, compute=10, sync=10,
                                                  memset=10)}


@pytest.mark.parametrize("unit,factor", [("ns", 1), ("us", 1_000), ("ms", 1_000_000),
                                         ("s", 1_000_000_000)])
def test_timestamp_times(two_rank_rows, unit, factor):
    def table(start, end):
        return pa.table({"rank": pa.array([r[0] for r in two_rank_rows], pa.int32()),
                         "start_ns": start, "end_ns": end,
                         "kind": [r[3] for r in two_rank_rows]})
    starts = [r[1] for r in two_rank_rows]
    ends = [r[2] for r in two_rank_rows]
    ts = table(pa.array(starts, pa.timestamp(unit)), pa.array(ends, pa.timestamp(unit, "UTC")))
    ints = table(pa.array([s * factor for s in starts], pa.int64()),
                 pa.array([e * factor for e in ends], pa.int64()))
    out = core.classify(ts)
    assert out.equals(core.classify(ints))
    assert as_dict(out) == {r: {k: v * factor for k, v in row.items()}
                            for r, row in EXPECTED.items()}


@pytest.mark.parametrize("rank_type,time_type", [(pa.int8(), pa.int32()), (pa.int64(), pa.uint64()),
                                                 (pa.uint16(), pa.uint32()), (pa.int32(), pa.int64())])
def test_other_integer_types(two_rank_rows, rank_type, time_type):
    t = pa.table({"rank": pa.array([r[0] for r in two_rank_rows], rank_type),
                  "start_ns": pa.array([r[1] for r in two_rank_rows], time_type),
                  "end_ns": pa.array([r[2] for r in two_rank_rows], time_type),
                  "kind": [r[3] for r in two_rank_rows]})
    assert as_dict(core.classify(t)) == EXPECTED


def test_extra_columns_are_ignored(events):
    n = events.num_rows
    t = events.append_column("name", pa.array(["k"] * n)).append_column(
        "step", pa.array(range(n), pa.int64())).append_column(
        "bytes", pa.array([None] * n, pa.int64())).append_column(
        "attempt", pa.array([1] * n, pa.int32()))
    assert core.classify(t).equals(core.classify(events))


def test_empty_input():
    t = pa.table({"rank": pa.array([], pa.int32()), "start_ns": pa.array([], pa.int64()),
                  "end_ns": pa.array([], pa.int64()), "kind": pa.array([], pa.string())})
    out = core.classify(t)
    assert out.num_rows == 0
    assert out.schema.metadata[b"pau.rows"] == b"0"
    assert core.overlap(t).ratio.num_rows == 0
    led = core.ledger(t)
    assert led.table.num_rows == 0 and led.accountable_ns() == 0
    # a span makes the ranks exist: all idle
    span = pa.table({"rank": pa.array([4], pa.int32()), "start_ns": [7], "end_ns": [19]})
    assert as_dict(core.classify(t, span=span)) == {4: zeros(idle=12)}


# ---------------------------------------------------------------------------
# output schema, dtypes and ordering


def test_classify_schema_and_order(make_events, two_rank_rows):
    # ranks given out of order and not contiguous
    rows = [(9,) + r[1:] for r in two_rank_rows if r[0] == 0] + list(two_rank_rows)
    out = core.classify(make_events(rows))
    assert out.schema.names == ["rank", "activity", "duration_ns"]
    assert out.schema.field("rank").type == pa.int32()
    assert out.schema.field("activity").type == LABEL
    assert out.schema.field("duration_ns").type == pa.int64()
    assert out["rank"].to_pylist() == [0] * 7 + [1] * 7 + [9] * 7
    assert out["activity"].to_pylist() == list(ACTS) * 3
    assert tuple(core.ACTIVITIES) == ACTS
    # label columns compare like strings
    sel = out.filter(pc.equal(out["activity"], "idle"))
    assert sel["duration_ns"].to_pylist() == [20, 0, 20]
    assert out.schema.metadata[b"pau.rows"] == str(len(rows)).encode()
    assert out.schema.metadata[b"pau.quarantined_rows"] == b"0"


def test_windowed_schema(events):
    out = core.classify(events, windows=pa.table({"rank": pa.array([-1], pa.int32()),
                                                  "start_ns": [0], "end_ns": [20]}))
    assert out.schema.names == ["rank", "window", "activity", "duration_ns"]
    assert out.schema.field("window").type == pa.int64()
    res = core.overlap(events, windows=50)
    assert res.matrix.schema.names == ["rank", "window", "kinds", "duration_ns"]
    assert res.ratio.schema.names == ["rank", "window", "communication_ns", "overlap_ns", "ratio"]


def test_overlap_schema_and_order(events):
    res = core.overlap(events)
    m = res.matrix
    assert m.schema.names == ["rank", "kinds", "duration_ns"]
    assert m.schema.field("rank").type == pa.int32()
    assert m.schema.field("kinds").type == LABEL
    assert m.schema.field("duration_ns").type == pa.int64()
    # by rank, then by mask (bit i = KINDS[i]): idle=0, compute=1, communication=2, ...
    assert [(r["rank"], r["kinds"]) for r in m.to_pylist()] == [
        (0, "idle"), (0, "compute"), (0, "communication"), (0, "compute+communication"),
        (1, "compute"), (1, "memcpy"), (1, "compute+memcpy")]
    assert res.ratio.schema.types == [pa.int32(), pa.int64(), pa.int64(), pa.float64()]


def test_result_is_the_public_api():
    assert pau.classify is core.classify
    assert issubclass(pau.errors.PauError, ValueError)
    assert set(core.STATES) >= {"productive", "unattributed", "recovery.outage"}


# ---------------------------------------------------------------------------
# the ledger (events only)


def test_ledger_events_only(events):
    led = core.ledger(events)
    t = led.table
    assert t.schema.names == ["rank", "state", "activity", "duration_ns"]
    assert t.schema.field("rank").type == pa.int32()
    assert t.schema.field("state").type.value_type == pa.string()
    assert t.schema.field("activity").type.value_type == pa.string()
    assert t.schema.field("duration_ns").type == pa.int64()
    assert set(t["state"].to_pylist()) == {"unattributed"}
    # non-zero rows only, by rank then activity
    assert [(r["rank"], r["activity"], r["duration_ns"]) for r in t.to_pylist()] == [
        (0, "compute", 90), (0, "communication", 40), (0, "idle", 20),
        (1, "compute", 30), (1, "memcpy", 10)]
    # sums to each span: [0, 150) and [10, 50)
    assert led.accountable.to_pylist() == [{"rank": 0, "accountable_ns": 150},
                                           {"rank": 1, "accountable_ns": 40}]
    assert led.accountable_ns() == 190 == sum(t["duration_ns"].to_pylist())
    assert repr(led) == "Ledger(ranks=2, rows=5)"


def test_ledger_summary(events):
    led = core.ledger(events)
    s = led.summary()
    assert s["ranks"] == 2
    assert s["accountable_ns"] == 190 and isinstance(s["accountable_ns"], int)
    assert s["accountable_accelerator_hours"] == 190 / 3.6e12
    # compute 90 + 30, communication 40, idle 20, memcpy 10
    assert s["activity_ns"] == {"compute": 120, "communication": 40, "idle": 20, "memcpy": 10}
    # without a lifecycle nothing is productive, and goodput is not a number: None
    assert s["state_ns"]["unattributed"] == 190
    assert s["productive_ns"] == 0 and s["goodput"] is None
    by = led.by("activity")
    assert by.column_names == ["activity", "duration_ns"]
    assert dict(zip(by["activity"].to_pylist(), by["duration_ns"].to_pylist()))["idle"] == 20


def test_ledger_matches_classify(events):
    """The events-only ledger is classify without its zero rows."""
    c = {(r["rank"], r["activity"]): r["duration_ns"] for r in core.classify(events).to_pylist()
         if r["duration_ns"]}
    led = {(r["rank"], r["activity"]): r["duration_ns"] for r in core.ledger(events).table.to_pylist()}
    assert led == c


def test_ledger_with_windows_and_span(events):
    span = pa.table({"rank": pa.array([0], pa.int32()), "start_ns": [0], "end_ns": [200]})
    led = core.ledger(events, windows=100, span=span)
    assert led.table.column_names == ["rank", "window", "state", "activity", "duration_ns"]
    # rank 0 over [0, 200): bucket 100 gains idle [150, 200) = 50 on top of 20
    rows = {(r["rank"], r["window"], r["activity"]): r["duration_ns"] for r in led.table.to_pylist()}
    assert rows == {(0, 0, "compute"): 60, (0, 0, "communication"): 40,
                    (0, 100, "idle"): 70, (0, 100, "compute"): 30,
                    (1, 0, "compute"): 30, (1, 0, "memcpy"): 10}
    assert led.accountable_ns() == 200 + 40


def test_ledger_rules_are_the_priority(events):
    prio = ["communication", "memcpy", "compute", "memset", "sync", "other"]
    rows = {(r["rank"], r["activity"]): r["duration_ns"]
            for r in core.ledger(events, rules=prio).table.to_pylist()}
    # as in test_custom_priority
    assert rows == {(0, "compute"): 70, (0, "communication"): 60, (0, "idle"): 20,
                    (1, "compute"): 20, (1, "memcpy"): 20}


def test_ledger_window_table(events):
    windows = pa.table({"rank": pa.array([-1], pa.int32()), "start_ns": [0], "end_ns": [50]})
    rows = {(r["rank"], r["window"], r["activity"]): r["duration_ns"]
            for r in core.ledger(events, windows=windows).table.to_pylist()}
    # as in test_windows_example: window 0 = [0, 50); the rest of rank 0 has no window
    assert rows == {(0, 0, "compute"): 50, (0, None, "compute"): 40,
                    (0, None, "communication"): 40, (0, None, "idle"): 20,
                    (1, 0, "compute"): 30, (1, 0, "memcpy"): 10}


def test_ledger_negative_window_ids(make_events):
    """Window ids may be any integer. Regression: ledger() marked time outside every
    window with id -1 and then nulled every id < 0, so a window with a negative id
    was reported as outside time (and two such windows gave duplicate null rows)."""
    ev = make_events([(0, 0, 3, "compute")])
    windows = pa.table({"rank": pa.array([-1, -1], pa.int32()), "start_ns": [0, 1],
                        "end_ns": [1, 2], "window": pa.array([-2, -1], pa.int64())})
    want = {(0, -2, "compute"): 1, (0, -1, "compute"): 1, (0, None, "compute"): 1}
    got = [(r["rank"], r["window"], r["activity"], r["duration_ns"])
           for r in core.ledger(ev, windows=windows).table.to_pylist()]
    assert as_dict(core.classify(ev, windows=windows), windows=True) == {
        (0, None): zeros(compute=1), (0, -2): zeros(compute=1), (0, -1): zeros(compute=1)}
    assert sorted(got, key=str) == sorted([k + (v,) for k, v in want.items()], key=str)


def test_ledger_needs_events_or_lifecycle(events):
    with pytest.raises(ValueError, match="events"):
        core.ledger()
    with pytest.raises(ValueError, match="as_of"):
        core.ledger(events, as_of=5)


def _rank_runs_table(ranks: list[int]) -> pa.Table:
    """One 10 ns compute event every 20 ns per rank, in the given rank order."""
    n = len(ranks)
    rank = np.asarray(ranks, np.int32)
    start = np.zeros(n, np.int64)
    for r in np.unique(rank):
        m = rank == r
        start[m] = np.arange(m.sum()) * 20
    return pa.table({
        "rank": pa.array(rank),
        "start_ns": pa.array(start),
        "end_ns": pa.array(start + 10),
        "kind": pa.array(["compute"] * n).dictionary_encode(),
    })


def test_threads_fall_back_when_a_rank_is_out_of_order():
    """The thread split reads a sample of the rank column only; a rank that shows up
    out of order between the sampled rows puts one rank into two parts, which the
    parts' results reveal, and the input is swept again on one thread."""
    ranks = [0] * 500 + [1] * 500 + [2] * 500 + [3] * 500
    ranks[1001] = 0  # between two sampled rows (every 2000 / 64 = 31st row)
    t = _rank_runs_table(ranks)
    assert len(_core.rank_parts(_sweep.batch_arrays([_sweep.event_columns(t)]), 2)) == 2  # the sample saw no disorder
    assert np.all(np.diff(np.asarray(ranks)[[min(1999, j * 2000 // 64) for j in range(65)]]) >= 0)
    one = core.classify(t, threads=1)
    assert core.classify(t, threads=2).equals(one)
    busy = {r["rank"]: r["duration_ns"] for r in one.to_pylist() if r["activity"] == "compute"}
    assert busy == {0: 501 * 10, 1: 500 * 10, 2: 499 * 10, 3: 500 * 10}


def test_threads_split_sorted_ranks():
    t = _rank_runs_table([0] * 300 + [1] * 10 + [2] * 700 + [5] * 5)
    one = core.classify(t, threads=1)
    for threads in (2, 3, 4):
        assert core.classify(t, threads=threads).equals(one)
    assert _core.rank_parts(_sweep.batch_arrays([_sweep.event_columns(t)]), 2) == [(0, 1), (2, 5)]


def test_ledger_totals_beyond_int64_stay_exact():
    """8 ranks of 2e18 ns each: 1.6e19 ns in one state, beyond int64. Arrow's grouped
    sums wrap there; the ledger's figures are exact Python ints (found by the fuzz
    suite: an MLPerf line moved 9 years away)."""
    n, span = 8, 2 * 10**18
    t = pa.table({"rank": pa.array(range(n), pa.int32()), "start_ns": pa.array([0] * n, pa.int64()),
                  "end_ns": pa.array([span] * n, pa.int64()),
                  "kind": pa.array(["compute"] * n).dictionary_encode()})
    led = core.ledger(t)
    assert led.state_ns()["unattributed"] == n * span
    assert led.activity_ns()["compute"] == n * span
    assert led.accountable_ns() == n * span
    assert led.summary()["activity_ns"]["compute"] == n * span
    with pytest.raises(pau.errors.PauError, match="beyond int64"):
        led.by("state")
    assert led.by("rank")["duration_ns"].to_pylist() == [span] * n
