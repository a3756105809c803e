"""Bad input: every rejection is a pau.errors exception (a ValueError) whose message
names the column (or argument), the first offending row and a fix; quarantine mode
sets bad rows aside instead, with a reason each, and counts them."""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pau.core as core
from pau.engine import _sweep
from pau import errors

GOOD = [(0, 0, 10, "compute"), (0, 5, 20, "communication"), (1, 10, 30, "memcpy"),
        (1, 30, 40, "sync")]


def table(**override) -> pa.Table:
    cols = {
        "rank": pa.array([r[0] for r in GOOD], pa.int32()),
        "start_ns": pa.array([r[1] for r in GOOD], pa.int64()),
        "end_ns": pa.array([r[2] for r in GOOD], pa.int64()),
        "kind": pa.array([r[3] for r in GOOD]).dictionary_encode(),
    }
    cols.update(override)
    return pa.table(cols)


def with_value(column: str, row: int, value, type_=None) -> pa.Table:
    t = table()
    vals = t[column].to_pylist()
    vals[row] = value
    arr = pa.array(vals, type_ or t.schema.field(column).type
                   if not pa.types.is_dictionary(t.schema.field(column).type) else pa.string())
    return t.set_column(t.schema.get_field_index(column), column, arr)


def check_message(exc: BaseException, column: str, row: int | None):
    msg = str(exc)
    assert isinstance(exc, errors.PauError) and isinstance(exc, ValueError)
    assert f"'{column}'" in msg or f"{column}:" in msg, msg
    if row is not None:
        assert re.search(rf"\brow {row}\b", msg), msg
    assert "Fix:" in msg, msg


# ---------------------------------------------------------------------------
# schema problems


@pytest.mark.parametrize("missing", ["rank", "start_ns", "end_ns", "kind"])
def test_missing_column(missing):
    with pytest.raises(errors.SchemaError) as ei:
        core.classify(table().drop_columns([missing]))
    check_message(ei.value, missing, None)
    assert "missing" in str(ei.value)


@pytest.mark.parametrize("column", ["start_ns", "end_ns"])
def test_float_times(column):
    t = table(**{column: pa.array([0.0, 5.0, 10.0, 30.0] if column == "start_ns"
                                  else [10.0, 20.0, 30.0, 40.0])})
    with pytest.raises(errors.SchemaError) as ei:
        core.classify(t)
    check_message(ei.value, column, None)
    assert "double" in str(ei.value) and "int64" in str(ei.value)


def test_string_rank():
    with pytest.raises(errors.SchemaError) as ei:
        core.classify(table(rank=pa.array(["0", "0", "1", "1"])))
    check_message(ei.value, "rank", None)


def test_kind_not_strings():
    with pytest.raises(errors.SchemaError) as ei:
        core.classify(table(kind=pa.array([0, 1, 2, 3])))
    check_message(ei.value, "kind", None)


# ---------------------------------------------------------------------------
# bad rows (raise mode)


@pytest.mark.parametrize("column,row,value,reason", [
    ("rank", 2, None, "null rank"),
    ("start_ns", 1, None, "null start_ns"),
    ("end_ns", 3, None, "null end_ns"),
    ("kind", 2, None, "null kind"),
    ("end_ns", 1, 4, "end_ns before start_ns"),
    ("rank", 1, -1, "negative rank"),
    ("kind", 2, "nccl_allreduce", "unknown kind"),
    ("kind", 0, "idle", "unknown kind"),  # idle is an outcome, not an event kind
])
def test_bad_row(column, row, value, reason):
    t = with_value(column, row, value)
    with pytest.raises(errors.InvalidRowError) as ei:
        core.classify(t)
    check_message(ei.value, column, row)
    assert ei.value.row == row and ei.value.column == column
    assert reason.split()[0] in str(ei.value)
    # the same row is named by overlap, ledger and the dictionary-encoded kind form
    with pytest.raises(errors.InvalidRowError, match=rf"row {row}\b"):
        core.overlap(t)
    with pytest.raises(errors.InvalidRowError, match=rf"row {row}\b"):
        core.ledger(t)


@pytest.mark.parametrize("threads", [2, 3])
def test_bad_row_with_threads(threads):
    # each thread sweeps some ranks, but every thread checks every row: the first bad
    # row of the input is named whichever rank it belongs to
    t = table(rank=pa.array([0, 1, 2, 3], pa.int32()), end_ns=pa.array([10, 20, 5, 1], pa.int64()))
    with pytest.raises(errors.InvalidRowError) as ei:
        core.classify(t, threads=threads)
    assert ei.value.row == 2 and ei.value.count == 2
    # and after an unsorted row (re-fed through a permutation)
    t = table(rank=pa.array([1, 1, 2, 0], pa.int32()), start_ns=pa.array([5, 0, 10, 30], pa.int64()),
              end_ns=pa.array([10, 20, 30, 29], pa.int64()))
    with pytest.raises(errors.InvalidRowError) as ei:
        core.classify(t, threads=threads)
    assert ei.value.row == 3


def test_first_offending_row_is_named_and_all_counted():
    t = table(end_ns=pa.array([10, 4, 30, 1], pa.int64()))  # rows 1 and 3 end before start
    with pytest.raises(errors.InvalidRowError) as ei:
        core.classify(t)
    assert ei.value.row == 1 and ei.value.count == 2
    assert "2 rows in all" in str(ei.value)


def test_bad_row_in_a_later_chunk_counts_from_the_table_start():
    t = table()
    t = pa.Table.from_batches(t.slice(0, 2).to_batches() + with_value(
        "start_ns", 3, 41).slice(2, 2).to_batches())  # after its end (40)
    assert t["rank"].num_chunks == 2
    with pytest.raises(errors.InvalidRowError) as ei:
        core.classify(t)
    assert ei.value.row == 3


def test_bad_row_after_an_unsorted_row():
    # unsorted input takes the re-feed path; the bad row is still named by input position
    t = table(start_ns=pa.array([5, 0, 10, 30], pa.int64()),
              end_ns=pa.array([10, 20, 30, 29], pa.int64()))
    with pytest.raises(errors.InvalidRowError) as ei:
        core.classify(t)
    assert ei.value.row == 3 and ei.value.column == "end_ns"


def test_negative_times_are_times_and_only_a_length_beyond_int64_is_refused():
    """Any int64 is a time (relative timelines, aligned clocks); a shifted table
    classifies the same. An event longer than int64 holds is refused, naming end_ns."""
    base = core.classify(table())
    for shift in (-7 * 10**5, -7 * (2**62 // 7)):  # multiples of the bucket width below
        t = table(start_ns=pa.array([r[1] + shift for r in GOOD], pa.int64()),
                  end_ns=pa.array([r[2] + shift for r in GOOD], pa.int64()))
        assert core.classify(t).equals(base)
        assert core.classify(t, windows=7)["duration_ns"].to_pylist() == \
            core.classify(table(), windows=7)["duration_ns"].to_pylist()
    t = with_value("start_ns", 3, -2**63 + 5)  # 2**63 + 35 ns long
    with pytest.raises(errors.InvalidRowError) as ei:
        core.classify(t)
    check_message(ei.value, "end_ns", 3)
    assert "does not fit in int64" in str(ei.value)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("entry", ["classify", "overlap", "ledger"])
def test_an_end_whose_difference_wraps_is_refused(entry, threads):
    """end_ns - start_ns overflows int64 here (2**62 to -2**62 - 100): the row is
    reversed, and no check may take the wrapped difference for a length (it once
    stretched the span by 4.6e18 ns and the row vanished)."""
    t = pa.table({"rank": pa.array([0, 0], pa.int32()), "start_ns": pa.array([0, 2**62], pa.int64()),
                  "end_ns": pa.array([1000, -2**62 - 100], pa.int64()),
                  "kind": pa.array(["memcpy", "compute"]).dictionary_encode()})
    call = {"classify": lambda: core.classify(t, threads=threads), "overlap": lambda: core.overlap(t),
            "ledger": lambda: core.ledger(t)}[entry]
    with pytest.raises(errors.InvalidRowError) as ei:
        call()
    check_message(ei.value, "end_ns" if entry != "ledger" else ei.value.column, 1)
    assert ei.value.row == 1
    kept, quarantine = core.classify(t, on_invalid="quarantine")
    assert quarantine["row"].to_pylist() == [1]
    assert sum(kept["duration_ns"].to_pylist()) == 1000  # the span of the one good row


def test_uint64_time_beyond_int64():
    t = table(end_ns=pa.array([10, 20, 2**63 + 5, 40], pa.uint64()))
    with pytest.raises(errors.InvalidRowError) as ei:
        core.classify(t)
    check_message(ei.value, "end_ns", 2)
    # within range, uint64 is fine
    assert core.classify(table(end_ns=pa.array([10, 20, 30, 40], pa.uint64()))).num_rows == 14


def test_rank_beyond_int32():
    with pytest.raises(errors.InvalidRowError) as ei:
        core.classify(table(rank=pa.array([0, 0, 2**40, 1], pa.int64())))
    check_message(ei.value, "rank", 2)


def test_timestamp_seconds_overflowing_ns():
    # 10**11 s is year ~5138: more than int64 nanoseconds can hold
    start = pa.array([0, 5, 10**11, 30], pa.int64()).cast(pa.timestamp("s"))
    end = pa.array([10, 20, 10**11, 40], pa.int64()).cast(pa.timestamp("s"))
    with pytest.raises(errors.InvalidRowError) as ei:
        core.classify(table(start_ns=start, end_ns=end))
    check_message(ei.value, "start_ns", 2)
    assert "overflow" in str(ei.value)


def test_timestamp_seconds_overflow_next_to_a_null():
    """Regression: with a null in the column the overflow check was skipped and
    pyarrow's multiply_checked raised a bare ArrowInvalid('overflow')."""
    start = pa.array([0, None, 10**11, 30], pa.int64()).cast(pa.timestamp("s"))
    end = pa.array([10, 20, 10**11, 40], pa.int64()).cast(pa.timestamp("s"))
    with pytest.raises(errors.InvalidRowError) as ei:
        core.classify(table(start_ns=start, end_ns=end))
    check_message(ei.value, "start_ns", 2)


def test_timestamp_seconds_int64_min_is_not_wrapped_to_zero():
    """Regression: the overflow check was ``np.abs(vals) > INT64_MAX // factor``; np.abs
    of INT64_MIN is INT64_MIN (negative), so the row passed, and INT64_MIN * 10**9
    wraps to exactly 0: it was silently accepted as time 0 (1 s of compute here)."""
    start = pa.array([-2**63, 0], pa.int64()).cast(pa.timestamp("s"))
    end = pa.array([1, 1], pa.int64()).cast(pa.timestamp("s"))
    t = pa.table({"rank": pa.array([0, 0], pa.int32()), "start_ns": start, "end_ns": end,
                  "kind": ["compute", "compute"]})
    with pytest.raises(errors.InvalidRowError) as ei:
        core.classify(t)
    assert ei.value.row == 0


# ---------------------------------------------------------------------------
# windows, span and arguments


def windows(rank, start, end, **extra):
    return pa.table({"rank": pa.array(rank, pa.int32()), "start_ns": pa.array(start, pa.int64()),
                     "end_ns": pa.array(end, pa.int64()), **extra})


def test_overlapping_windows_of_every_rank():
    with pytest.raises(errors.InvalidWindowsError) as ei:
        core.classify(table(), windows=windows([-1, -1, -1], [0, 20, 5], [10, 30, 15]))
    msg = str(ei.value)
    assert "windows" in msg and "rows 0 and 2" in msg and "disjoint" in msg


@pytest.mark.parametrize("ranks", [[0, 0], [0, -1], [-1, 0]])
def test_overlapping_windows_of_one_rank(ranks):
    """Windows of one rank (not -1) are checked for overlap when the sweep first meets
    that rank, inside ``Sweep.feed`` (or in the constructor when the rank has a span
    row). Regression: from feed the std::invalid_argument surfaced as a plain
    ValueError, not pau.errors.InvalidWindowsError."""
    w = windows(ranks, [0, 5], [10, 15])
    span = pa.table({"rank": pa.array([0], pa.int32()), "start_ns": [0], "end_ns": [40]})
    with pytest.raises(errors.InvalidWindowsError, match="rows 0 and 1"):
        core.classify(table(), windows=w, span=span)
    with pytest.raises(errors.InvalidWindowsError, match="rows 0 and 1"):
        core.classify(table(), windows=w)


def test_windows_of_different_ranks_may_overlap():
    out = core.classify(table(), windows=windows([0, 1], [0, 5], [10, 15]))
    assert out.num_rows > 0


def test_touching_and_zero_length_windows_are_not_overlaps():
    w = windows([-1, -1, -1, 0], [0, 10, 5, 10], [10, 20, 5, 10])
    assert core.classify(table(), windows=w).num_rows > 0


def test_window_end_before_start():
    with pytest.raises(errors.InvalidWindowsError) as ei:
        core.classify(table(), windows=windows([-1, -1], [0, 5], [3, 4]))
    check_message(ei.value, "windows", 1)


@pytest.mark.parametrize("bad", [
    dict(rank=[-2], start=[0], end=[3]),
    dict(rank=[0], start=[4], end=[3]),
])
def test_window_bad_rank_or_start(bad):
    with pytest.raises(errors.InvalidWindowsError) as ei:
        core.classify(table(), windows=windows(bad["rank"], bad["start"], bad["end"]))
    check_message(ei.value, "windows", 0)


def test_window_nulls():
    w = pa.table({"rank": pa.array([0, None], pa.int32()), "start_ns": [0, 1], "end_ns": [1, 2]})
    with pytest.raises(errors.InvalidWindowsError) as ei:
        core.classify(table(), windows=w)
    check_message(ei.value, "rank", 1)
    w = windows([0], [0], [1], window=pa.array([None], pa.int64()))
    with pytest.raises(errors.InvalidWindowsError, match="'window'"):
        core.classify(table(), windows=w)


def test_a_bucket_width_too_small_for_the_span_is_refused(monkeypatch):
    """1 ns buckets over 1,000 s would be 10**12 windows: refused when the sweep
    reaches the bound (without a span), or before any sweep (with one), not run
    until memory runs out."""
    assert _sweep.max_windows() == _sweep.MAX_WINDOWS == 10**8
    t = table(end_ns=pa.array([10, 20, 30, 1000 * 10**9], pa.int64()))
    span = pa.table({"rank": pa.array([0, 1], pa.int32()), "start_ns": [0, 0], "end_ns": [40, 1000 * 10**9]})
    with pytest.raises(errors.InvalidWindowsError, match="makes 1000000000040 windows over the spans given"):
        core.classify(t, windows=1, span=span)
    monkeypatch.setenv("PAU_MAX_WINDOWS", "100000")  # the default's 10**8 windows take seconds to reach
    for call in (lambda: core.classify(t, windows=1), lambda: core.overlap(t, windows=1),
                 lambda: core.ledger(t, windows=1)):
        with pytest.raises(errors.InvalidWindowsError, match="more than 100000 windows.*PAU_MAX_WINDOWS"):
            call()
    monkeypatch.setenv("PAU_MAX_WINDOWS", "4")
    with pytest.raises(errors.InvalidWindowsError, match="more than 4 windows"):
        core.classify(table(), windows=5)  # rank 0's 20 ns and rank 1's 30 ns: 4 + 6 windows
    monkeypatch.setenv("PAU_MAX_WINDOWS", "10")
    assert core.classify(table(), windows=5)["window"].to_pylist()[::7] == [0, 5, 10, 15, 10, 15, 20, 25, 30, 35]
    monkeypatch.setenv("PAU_MAX_WINDOWS", "many")
    with pytest.raises(errors.InvalidWindowsError, match="PAU_MAX_WINDOWS='many'"):
        core.classify(table(), windows=5)


@pytest.mark.parametrize("width", [0, -5])
def test_bad_bucket_width(width):
    with pytest.raises(errors.InvalidWindowsError, match="bucket width must be > 0"):
        core.classify(table(), windows=width)


def test_windows_missing_column():
    with pytest.raises(errors.SchemaError) as ei:
        core.classify(table(), windows=pa.table({"rank": pa.array([0], pa.int32()),
                                                 "start_ns": [0]}))
    check_message(ei.value, "end_ns", None)


def test_span_with_duplicate_rank():
    span = pa.table({"rank": pa.array([1, 0, 0], pa.int32()), "start_ns": [0, 0, 5],
                     "end_ns": [10, 10, 15]})
    with pytest.raises(errors.InvalidWindowsError) as ei:
        core.classify(table(), span=span)
    msg = str(ei.value)
    assert msg.startswith("span") and "rank 0" in msg and "row 2" in msg


def test_span_end_before_start():
    span = pa.table({"rank": pa.array([0, 1], pa.int32()), "start_ns": [0, 5], "end_ns": [10, 1]})
    with pytest.raises(errors.InvalidWindowsError) as ei:
        core.classify(table(), span=span)
    check_message(ei.value, "span", 1)


@pytest.mark.parametrize("priority", [
    ["compute"],
    ["compute"] * 6,
    ["compute", "communication", "memcpy", "memset", "sync", "idle"],
    ["compute", "communication", "memcpy", "memset", "sync", "other", "idle"],
    "compute",
])
def test_bad_priority(priority):
    with pytest.raises(errors.PauError) as ei:
        core.classify(table(), priority=priority)
    assert "priority" in str(ei.value) and "compute, communication" in str(ei.value)


def test_bad_on_invalid():
    for fn in (core.classify, core.overlap, core.ledger):
        with pytest.raises(errors.PauError, match="on_invalid.*'raise' or 'quarantine'"):
            fn(table(), on_invalid="drop")


def test_bad_threads():
    with pytest.raises(errors.PauError, match="threads"):
        core.classify(table(), threads=0)


def test_unsupported_input_type():
    with pytest.raises(TypeError, match="events: expected a pyarrow.Table"):
        core.classify([(0, 0, 10, "compute")])


# ---------------------------------------------------------------------------
# quarantine


BAD_TABLE_ROWS = [
    (0, 0, 10, "compute"),        # 0 ok
    (None, 0, 10, "compute"),     # 1 null rank
    (0, 5, 20, "communication"),  # 2 ok
    (0, None, 10, "compute"),     # 3 null start_ns
    (1, 30, 20, "compute"),       # 4 end_ns before start_ns
    (-3, 0, 10, "compute"),       # 5 negative rank
    (1, 10, 30, "memcpy"),        # 6 ok
    (1, -2**62 - 1, 2**62, "memcpy"),  # 7 longer than int64 holds
    (1, 0, None, "memcpy"),       # 8 null end_ns
    (1, 0, 10, None),             # 9 null kind
    (1, 0, 10, "gemm"),           # 10 unknown kind
    (1, 40, 50, "sync"),          # 11 ok
]
REASONS = {1: "null rank", 3: "null start_ns", 4: "end_ns before start_ns", 5: "negative rank",
           7: "end_ns - start_ns does not fit in int64", 8: "null end_ns", 9: "null kind", 10: "unknown kind"}


def rows_table(rows, dictionary=True) -> pa.Table:
    kind = pa.array([r[3] for r in rows], pa.string())
    return pa.table({
        "rank": pa.array([r[0] for r in rows], pa.int32()),
        "start_ns": pa.array([r[1] for r in rows], pa.int64()),
        "end_ns": pa.array([r[2] for r in rows], pa.int64()),
        "kind": kind.dictionary_encode() if dictionary else kind,
        "name": pa.array([f"e{i}" for i in range(len(rows))]),
    })


@pytest.mark.parametrize("dictionary", [True, False])
def test_quarantine(dictionary):
    t = rows_table(BAD_TABLE_ROWS, dictionary)
    good = rows_table([r for i, r in enumerate(BAD_TABLE_ROWS) if i not in REASONS], dictionary)
    res = core.classify(t, on_invalid="quarantine")
    assert isinstance(res, core.Quarantined)
    out, q = res
    assert out.equals(core.classify(good))
    assert q.column_names == t.column_names + ["row", "reason"]
    assert dict(zip(q["row"].to_pylist(), q["reason"].to_pylist())) == REASONS
    assert q["name"].to_pylist() == [f"e{i}" for i in sorted(REASONS)]
    assert q.schema.field("row").type == pa.int64()
    assert out.schema.metadata[b"pau.quarantined_rows"] == b"8"
    assert out.schema.metadata[b"pau.rows"] == b"12"


def test_quarantine_overlap_and_ledger():
    t = rows_table(BAD_TABLE_ROWS)
    good = rows_table([r for i, r in enumerate(BAD_TABLE_ROWS) if i not in REASONS])
    res = core.overlap(t, on_invalid="quarantine")
    assert res.result.matrix.equals(core.overlap(good).matrix)
    assert res.result.ratio.equals(core.overlap(good).ratio)
    assert res.quarantine["row"].to_pylist() == sorted(REASONS)
    led = core.ledger(t, on_invalid="quarantine")
    assert led.table.equals(core.ledger(good).table)
    assert led.quarantine["row"].to_pylist() == sorted(REASONS)
    assert led.table.schema.metadata[b"pau.quarantined_rows"] == b"8"


def test_quarantine_with_nothing_bad():
    res = core.classify(table(), on_invalid="quarantine")
    assert res.result.equals(core.classify(table()))
    assert res.quarantine.num_rows == 0
    assert {"row", "reason"} <= set(res.quarantine.column_names)
    assert res.result.schema.metadata[b"pau.quarantined_rows"] == b"0"


def test_quarantine_everything_bad():
    rows = [r for i, r in enumerate(BAD_TABLE_ROWS) if i in REASONS]
    res = core.classify(rows_table(rows), on_invalid="quarantine")
    assert res.result.num_rows == 0
    assert res.quarantine.num_rows == len(rows)


def test_quarantine_unsorted_chunked_input():
    # unsorted and in several chunks: rows are numbered in the whole input
    t = rows_table(list(reversed(BAD_TABLE_ROWS)))
    t = pa.Table.from_batches([b for off in range(0, 12, 5) for b in t.slice(off, 5).to_batches()])
    res = core.classify(t, on_invalid="quarantine")
    assert sorted(res.quarantine["row"].to_pylist()) == sorted(11 - i for i in REASONS)
    good = rows_table([r for i, r in enumerate(BAD_TABLE_ROWS) if i not in REASONS])
    assert res.result.equals(core.classify(good))


@pytest.mark.parametrize("column,array", [
    ("end_ns", pa.array([10, 20, 2**63 + 5, 40], pa.uint64())),
    ("rank", pa.array([0, 0, 2**40, 1], pa.int64())),
    ("start_ns", pa.array([0, 5, 10**11, 30], pa.int64()).cast(pa.timestamp("s"))),
])
def test_quarantine_takes_rows_that_do_not_convert(column, array):
    """BUG: values that do not convert to int64 ns / int32 ranks raise InvalidRowError
    from _input.time_column / rank_column even with on_invalid='quarantine' -- whose
    message itself suggests passing on_invalid='quarantine'."""
    t = table(**{column: array})
    if column == "start_ns":
        t = t.set_column(2, "end_ns", pa.array([10, 20, 10**11, 40], pa.int64()).cast(
            pa.timestamp("s")))
    res = core.classify(t, on_invalid="quarantine")
    assert res.quarantine["row"].to_pylist() == [2]


def test_quarantine_metadata_on_dataset(tmp_path):
    path = tmp_path / "events.parquet"
    t = rows_table(BAD_TABLE_ROWS).sort_by([("start_ns", "ascending")])
    pq.write_table(t, path, row_group_size=4)
    res = core.classify_dataset(path, on_invalid="quarantine", progress=False)
    assert res.result.schema.metadata[b"pau.quarantined_rows"] == b"8"
    assert res.result.schema.metadata[b"pau.rows"] == b"12"
    assert res.quarantine.num_rows == 8
    # rows are numbered in the whole file, across row groups (a streamed source is
    # read for the events columns only, so those are what the quarantine holds)
    cols = ["rank", "start_ns", "end_ns", "kind"]
    q = res.quarantine
    assert q.column_names == cols + ["row", "reason"]
    expect = t.select(cols).take(q["row"]).to_pylist()
    assert q.select(cols).to_pylist() == expect
    by_name = dict(zip(t["name"].to_pylist(), range(t.num_rows)))
    assert sorted(q["row"].to_pylist()) == sorted(by_name[f"e{i}"] for i in REASONS)


# ---------------------------------------------------------------------------
# streamed sources must be start-ordered within a rank


def test_classify_dataset_unsorted_within_a_rank(tmp_path):
    path = tmp_path / "events.parquet"
    # rank 1 goes back in time at row 4; ranks interleave freely before that
    t = table(rank=pa.array([0, 1, 0, 1], pa.int32()))
    t = pa.concat_tables([t, pa.table({"rank": pa.array([1], pa.int32()),
                                       "start_ns": pa.array([1], pa.int64()),
                                       "end_ns": pa.array([2], pa.int64()),
                                       "kind": pa.array(["compute"]).dictionary_encode()})])
    pq.write_table(t, path, row_group_size=2)
    with pytest.raises(errors.UnsortedInputError) as ei:
        core.classify_dataset(path, progress=False)
    msg = str(ei.value)
    assert "'start_ns'" in msg and "row 4" in msg and "rank 1" in msg and "Fix:" in msg
    assert str(path) in msg
    # classify sorts, so the same rows are fine in memory
    assert core.classify(t).num_rows == 14


def test_classify_dataset_unsorted_row_after_quarantined_rows(tmp_path):
    """Regression: with on_invalid='quarantine', _feed_batches reported the unsorted row
    by its position in the batch *after* bad rows were filtered out, so the row named
    was too small by the number of quarantined rows before it (row 2, not row 3)."""
    path = tmp_path / "events.parquet"
    t = pa.table({"rank": pa.array([0, -1, 0, 0], pa.int32()), "start_ns": [0, 0, 20, 5],
                  "end_ns": [10, 1, 30, 8], "kind": ["compute"] * 4})
    pq.write_table(t, path)
    with pytest.raises(errors.UnsortedInputError, match=r"row 3\b"):
        core.classify_dataset(path, on_invalid="quarantine", progress=False)


def test_exceptions_are_value_errors():
    for cls in (errors.SchemaError, errors.InvalidRowError, errors.InvalidWindowsError,
                errors.UnsortedInputError):
        assert issubclass(cls, errors.PauError) and issubclass(cls, ValueError)
    with pytest.raises(ValueError):  # callers catching ValueError keep working
        core.classify(table(rank=pa.array([0, -1, 0, 0], pa.int32())))
