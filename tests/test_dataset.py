"""classify_dataset: Parquet files, directories, hive partitions and Arrow streams give
exactly what classify gives on the same rows loaded in memory."""

from __future__ import annotations

import io
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import pau.core as core

KINDS = ("compute", "communication", "memcpy", "memset", "sync", "other")


@pytest.fixture(scope="module")
def events() -> pa.Table:
    """4 ranks x 300 events, sorted by (rank, start_ns); overlaps, ties, zero-length."""
    rng = np.random.default_rng(7)
    n_per, ranks = 300, 4
    rank = np.repeat(np.arange(ranks, dtype=np.int32), n_per)
    start = np.concatenate([np.sort(rng.integers(0, 5_000, n_per)) for _ in range(ranks)])
    end = start + rng.choice([0, 1, 3, 10, 40, 200], rank.size)
    kind = pa.DictionaryArray.from_arrays(
        pa.array(rng.integers(0, len(KINDS), rank.size).astype(np.int8)), pa.array(KINDS))
    return pa.table({"rank": rank, "stream": pa.array(rng.integers(0, 3, rank.size), pa.int32()),
                     "start_ns": pa.array(start, pa.int64()), "end_ns": pa.array(end, pa.int64()),
                     "kind": kind})


@pytest.fixture(scope="module")
def expected(events):
    return core.classify(events)


def test_single_file(tmp_path, events, expected):
    path = tmp_path / "events.parquet"
    pq.write_table(events, path, row_group_size=128)
    assert pq.ParquetFile(path).num_row_groups > 1
    for batch_rows in (None, 1, 50, 10_000):
        out = core.classify_dataset(path, batch_rows=batch_rows, progress=False)
        assert out.equals(expected)
        assert out.schema.metadata[b"pau.rows"] == str(events.num_rows).encode()
    assert core.classify_dataset(str(path), progress=False).equals(expected)


@pytest.mark.parametrize("depth", [0, 1, 2, 5])
def test_read_ahead_depth_does_not_change_the_stream(tmp_path, events, expected, depth):
    """Row groups read ahead on threads of their own (each with its own ParquetFile)
    come back in order, whatever the depth."""
    import pau.engine.io

    path = tmp_path / "events.parquet"
    pq.write_table(events, path, row_group_size=100)
    got = pa.Table.from_batches(list(pau.engine.io.stream_events(path, read_ahead=depth)))
    assert got.equals(events.select(["rank", "start_ns", "end_ns", "kind"]))
    # Under a memory budget the stream reads ahead only what fits: same answer.
    one = pau.engine.io.row_group_bytes(str(path), ("rank", "start_ns", "end_ns", "kind"), {})
    budget = max(one) * (2 + depth)
    assert core.classify_dataset(path, memory_budget=budget, progress=False).equals(expected)


def test_ranks_interleaved_in_time_order(tmp_path, events, expected):
    # start order overall (ranks interleave): still start-ordered within each rank
    path = tmp_path / "by_time.parquet"
    pq.write_table(events.sort_by([("start_ns", "ascending")]), path, row_group_size=100)
    assert core.classify_dataset(path, progress=False).equals(expected)


def test_directory_of_files(tmp_path, events, expected):
    d = tmp_path / "dir"
    d.mkdir()
    # split by rank into several files, one with several row groups
    for r in range(4):
        part = events.filter(pc.equal(events["rank"], r))
        pq.write_table(part, d / f"part-{r}.parquet", row_group_size=70)
    assert core.classify_dataset(d, progress=False).equals(expected)
    # a list of files is a source too
    files = sorted(str(p) for p in d.iterdir())
    assert core.classify_dataset(files, progress=False).equals(expected)


def test_directory_split_in_time(tmp_path, events, expected):
    # files hold consecutive time ranges of every rank, in path order
    d = tmp_path / "time"
    d.mkdir()
    t = events.sort_by([("start_ns", "ascending")])
    for i, off in enumerate(range(0, t.num_rows, 400)):
        pq.write_table(t.slice(off, 400), d / f"chunk-{i:03d}.parquet")
    assert core.classify_dataset(d, progress=False).equals(expected)


def test_hive_partitions_fill_the_rank_column(tmp_path, events, expected):
    d = tmp_path / "hive"
    for r in range(4):
        part = events.filter(pc.equal(events["rank"], r)).drop_columns(["rank"])
        (d / f"rank={r}").mkdir(parents=True)
        pq.write_table(part, d / f"rank={r}" / "events.parquet", row_group_size=90)
    assert "rank" not in pq.read_schema(d / "rank=2" / "events.parquet").names
    out = core.classify_dataset(d, progress=False)
    assert out.equals(expected)
    assert out.schema.field("rank").type == pa.int32()


def test_record_batch_reader_and_capsule(events, expected):
    reader = pa.RecordBatchReader.from_batches(events.schema, events.to_batches(max_chunksize=64))
    assert core.classify_dataset(reader).equals(expected)

    class Stream:
        def __arrow_c_stream__(self, requested_schema=None):
            return events.__arrow_c_stream__(requested_schema)

    assert core.classify_dataset(Stream(), batch_rows=33).equals(expected)


def test_in_memory_table_is_accepted(events, expected):
    # not a stream: loaded as a table, so it may be in any order
    shuffled = events.take(np.random.default_rng(1).permutation(events.num_rows))
    assert core.classify_dataset(shuffled).equals(expected)


def test_windows_span_and_priority(tmp_path, events):
    path = tmp_path / "events.parquet"
    pq.write_table(events, path, row_group_size=100)
    windows = pa.table({"rank": pa.array([-1, 2], pa.int32()), "start_ns": [0, 3000],
                        "end_ns": [1000, 3500]})
    span = pa.table({"rank": pa.array([1, 9], pa.int32()), "start_ns": [100, 0],
                     "end_ns": [4000, 50]})
    prio = ["memcpy", "sync", "compute", "other", "memset", "communication"]
    for kw in (dict(windows=windows), dict(windows=700), dict(span=span),
               dict(windows=windows, span=span, priority=prio)):
        assert core.classify_dataset(path, progress=False, **kw).equals(
            core.classify(events, **kw)), kw


def test_ledger_streams_a_path(tmp_path, events):
    path = tmp_path / "events.parquet"
    pq.write_table(events, path, row_group_size=100)
    assert core.ledger(str(path)).table.equals(core.ledger(events).table)


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar(tmp_path, events, monkeypatch, capsys):
    path = tmp_path / "events.parquet"
    pq.write_table(events, path, row_group_size=500)
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    assert core.classify_dataset(path, progress=True).equals(core.classify(events))
    err = tty.getvalue()
    assert err.startswith("\r[") and err.endswith("\n")
    assert "1/1 partitions  1,200/1,200 rows" in err.split("\r")[-1]
    monkeypatch.undo()
    core.classify_dataset(path, progress=True)  # stderr is not a terminal: no bar
    core.classify_dataset(path, progress=False)
    core.classify_dataset(path)
    assert capsys.readouterr().err == ""


def test_bar_is_throttled_and_draws_the_last_snapshot():
    from pau.engine._progress import Bar, Progress

    now = [0.0]
    out = io.StringIO()
    bar = Bar(out, clock=lambda: now[0])
    for k in range(1, 101):  # 100 updates in 0.99 s: about 10 drawn
        bar(Progress(k, 100, 10 * k, 1000, now[0], 10.0))
        now[0] += 0.01
    assert 9 <= bar.drawn <= 11
    bar.close()
    last = out.getvalue().rstrip("\n").split("\r")[-1]
    assert "100/100 partitions  1,000/1,000 rows" in last and "#" * 30 in last
    assert out.getvalue().count("\n") == 1


def test_progress_callable_on_a_stream(tmp_path, events):
    path = tmp_path / "events.parquet"
    pq.write_table(events, path, row_group_size=100)
    seen = []
    assert core.classify_dataset(path, progress=seen.append, workers=1).equals(core.classify(events))
    rows = [p.rows_done for p in seen]
    assert rows == sorted(rows) and rows[-1] == events.num_rows
    assert seen[-1].partitions_done == seen[-1].partitions_total == 1
    assert {p.rows_total for p in seen} == {events.num_rows}
    seen.clear()
    reader = pa.RecordBatchReader.from_batches(events.schema, events.to_batches(max_chunksize=64))
    assert core.classify_dataset(reader, progress=seen.append).equals(core.classify(events))
    assert seen[-1].rows_done == events.num_rows and seen[-1].rows_total is None


def test_missing_source(tmp_path):
    with pytest.raises(FileNotFoundError):
        core.classify_dataset(tmp_path / "nope.parquet", progress=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError):
        core.classify_dataset(tmp_path / "empty", progress=False)


def test_quarantine_matches_classify(tmp_path, events):
    bad = events.slice(0, 3)
    bad = bad.set_column(bad.schema.get_field_index("end_ns"), "end_ns",
                         pa.array([-1, 0, -5], pa.int64()))  # end before start
    t = pa.concat_tables([events.slice(0, 500), bad, events.slice(500)])
    t = t.sort_by([("rank", "ascending"), ("start_ns", "ascending")])
    path = tmp_path / "events.parquet"
    pq.write_table(t, path, row_group_size=97)
    res = core.classify_dataset(path, on_invalid="quarantine", progress=False)
    mem = core.classify(t, on_invalid="quarantine")
    assert res.result.equals(mem.result)
    assert res.quarantine["row"].to_pylist() == mem.quarantine["row"].to_pylist()
    assert res.quarantine["reason"].to_pylist() == ["end_ns before start_ns"] * 3


def test_a_rewritten_file_is_read_anew(tmp_path):
    """Reading threads keep their file open between row groups; a file rewritten at the
    same path between two calls must not be read through the old handle."""
    path = tmp_path / "events.parquet"

    def write(n):
        pq.write_table(pa.table({
            "rank": pa.array(np.zeros(n, np.int32)), "start_ns": pa.array(np.arange(n) * 10),
            "end_ns": pa.array(np.arange(n) * 10 + 5), "kind": pa.array(["compute"] * n)}), path)

    write(10)
    for depth_workers in (1, None):
        write(10)
        assert core.classify_dataset(path, workers=depth_workers).column("duration_ns")[0].as_py() == 50
        write(20)
        assert core.classify_dataset(path, workers=depth_workers).column("duration_ns")[0].as_py() == 100


# --- issue 19, finding 6: stray files, page checksums, hive keys; finding 5: errors ------

def test_files_not_named_parquet_are_skipped_with_a_counted_warning(tmp_path, events, expected):
    import pau
    from pau.engine import io as pio

    root = tmp_path / "ds"
    pio.write_dataset(events, root)
    (root / "README.txt").write_text("notes")
    (root / "job=job0" / "rank=1" / "part-1.parquet.tmp").write_bytes(b"PAR1 half written")
    (root / "_SUCCESS").write_text("")   # pyarrow's convention: not data, passed over silently
    with pytest.warns(UserWarning, match=r"2 files not named \*.parquet left out of the dataset "
                                         r"\(README.txt, job=job0/rank=1/part-1.parquet.tmp\)"):
        got = core.classify_dataset(root, progress=False)
    assert got.equals(expected)
    run = pau.read(root)   # in run.warnings, not as a Python warning
    assert [w.code for w in run.warnings] == ["dataset.skipped_files"]
    assert run.events.num_rows == events.num_rows


def test_a_parquet_name_that_is_not_parquet_is_an_error_naming_it(tmp_path, events):
    from pau.engine import io as pio
    from pau.errors import PauError

    root = tmp_path / "ds"
    pio.write_dataset(events, root)
    junk = root / "job=job0" / "rank=2" / "junk.parquet"
    junk.write_text("not parquet at all")
    with pytest.raises(PauError, match=r"junk.parquet: not readable as Parquet"):
        core.classify_dataset(root, progress=False)
    part = root / "job=job0" / "rank=0" / "part-0.parquet"
    data = part.read_bytes()
    part.write_bytes(data[: len(data) // 2])   # truncated
    junk.unlink()
    with pytest.raises(PauError, match=r"rank=0/part-0.parquet: not readable as Parquet"):
        core.classify_dataset(root, progress=False)
    with pytest.raises(PauError, match="part-0.parquet: not readable as Parquet"):
        pio.read_dataset(root)


def test_an_empty_folder_is_a_pau_error(tmp_path):
    from pau.errors import NoInputError

    (tmp_path / "empty").mkdir()
    with pytest.raises(NoInputError, match="no Parquet files"):
        core.classify_dataset(tmp_path / "empty", progress=False)


def test_page_checksums_catch_every_bit_flip_in_the_data(tmp_path, events, expected):
    """A flipped bit in a data page changed the result silently in 3 of 30 cases before
    pau wrote page checksums; now it is an error naming the file, or (a bit in a part of
    the file no figure reads) the same result."""
    from pau.engine import io as pio
    from pau.errors import PauError

    root = tmp_path / "ds"
    pio.write_dataset(events, root)
    part = root / "job=job0" / "rank=1" / "part-0.parquet"
    data = part.read_bytes()
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    rng = np.random.default_rng(19)
    errors = 0
    for pos in rng.integers(4, footer, 60).tolist():   # the pages, not the footer
        flipped = bytearray(data)
        flipped[pos] ^= 1 << int(rng.integers(8))
        part.write_bytes(bytes(flipped))
        try:
            got = core.classify_dataset(root, progress=False, workers=1)
        except PauError as exc:
            assert "part-0.parquet" in str(exc)
            errors += 1
            continue
        assert got.equals(expected), pos
    assert errors > 40   # most bits are in checksummed pages


def test_a_hive_key_that_contradicts_the_file_is_refused(tmp_path, events):
    from pau.engine import io as pio
    from pau.errors import PauError

    folder = tmp_path / "ds" / "rank=7"
    folder.mkdir(parents=True)
    one = events.filter(pc.equal(events["rank"], 1))
    pq.write_table(one, folder / "part-0.parquet")
    for read in (lambda: core.classify_dataset(tmp_path / "ds", progress=False),
                 lambda: pio.read_dataset(tmp_path / "ds")):
        with pytest.raises(PauError, match=r"rank=7/part-0.parquet.*column 'rank' holds 1 at row 0, but the "
                                           r"file lies in the folder rank=7"):
            read()
    pq.write_table(one.set_column(0, "rank", pa.array(np.full(one.num_rows, 7, np.int32))),
                   folder / "part-0.parquet")
    assert core.classify_dataset(tmp_path / "ds", progress=False)["rank"].to_pylist()[0] == 7


# ---------------------------------------------------------------------------
# streamed exclusive time (no windows): the exclusive-time sweep, both kernels,
# against the slow reference

from depth import examples
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import pau.engine.io  # noqa: E402
import reference as ref  # noqa: E402
from pau import _core
from pau.engine import _native, _sweep  # noqa: E402
from pau.errors import UnsortedInputError  # noqa: E402
from test_properties import KERNELS, SETTINGS, _span_arg, cases, events_table  # noqa: E402


@pytest.mark.parametrize("kernel", KERNELS)
def test_in_memory_classify_reads_best_kernel_at_each_call(monkeypatch, kernel):
    """``BEST_KERNEL`` is read when ``classify`` sweeps, not when pau is imported: the
    zoo benchmark times each kernel through it, as the tests here do for streams."""
    seen = []
    native = _native.call

    def spy(call, *args, **kwargs):
        if call is _core.exclusive_batches:
            seen.append(kwargs["kernel"])
        return native(call, *args, **kwargs)

    monkeypatch.setattr(_native, "call", spy)
    monkeypatch.setattr(_sweep, "_VECTOR", True)
    monkeypatch.setattr(_sweep, "BEST_KERNEL", kernel)
    rows = [(0, 0, 10, "compute", 0), (0, 5, 20, "communication", 1), (1, 3, 4, "memcpy", 0)]
    out = core.classify(events_table(rows), threads=1)
    assert seen == [kernel]
    got = {(r["rank"], r["activity"]): r["duration_ns"] for r in out.to_pylist()}
    assert got[0, "compute"] == 10 and got[0, "communication"] == 10 and got[1, "memcpy"] == 1


def test_streams_without_windows_take_the_exclusive_sweep(monkeypatch):
    monkeypatch.setattr(_sweep, "_VECTOR", True)
    monkeypatch.setattr(_sweep, "BEST_KERNEL", 1)
    plan = _sweep.stream_plan(_sweep.plan_of(None, None), ["sync", "memset", "memcpy", "other",
                                                           "communication", "compute"])
    assert isinstance(plan.sweep(), _core.ExclusiveSweep)
    assert plan.levels.tolist() == [5, 4, 2, 1, 0, 3]  # KINDS order: compute last ... sync first
    assert plan.kernel == 1
    # windows need the full sweep, and so does a CPU without AVX-512 or AVX2
    assert isinstance(_sweep.stream_plan(_sweep.plan_of(100, None), None).sweep(), _core.Sweep)
    monkeypatch.setattr(_sweep, "_VECTOR", False)
    assert isinstance(_sweep.stream_plan(_sweep.plan_of(None, None), None).sweep(), _core.Sweep)


def test_exclusive_stream_by_hand():
    """compute [0, 10) and communication [5, 20) on rank 3, fed in two batches; rank 1
    has a span [0, 30) and one memcpy [25, 40) clipped to it."""
    for kernel in KERNELS:
        plan = _sweep.Plan(span_rank=np.array([1], np.int32), span_start=np.array([0], np.int64),
                           span_end=np.array([30], np.int64), levels=_sweep.levels_of(None), kernel=kernel)
        sw = plan.sweep()
        codes = np.arange(6, dtype=np.int8)  # dictionary position = kind code
        feeds = [([3], [0], [10], [0]), ([3, 1], [5, 25], [20, 40], [1, 2])]
        for r, s, e, k in feeds:
            assert sw.feed(np.array(r, np.int32), np.array(s, np.int64), np.array(e, np.int64),
                           np.array(k, np.int8), codes) == (0, -1)  # code 0: every row taken
        got = _sweep.exclusive(sw.finish(), plan, None)
        rows = {(r["rank"], r["activity"]): r["duration_ns"] for r in got.to_pylist() if r["duration_ns"]}
        assert rows == {(3, "compute"): 10, (3, "communication"): 10, (1, "memcpy"): 5, (1, "idle"): 25}
        # a start that goes back within a rank, in a later feed: code 5 (unsorted) at that row
        sw = plan.sweep()
        sw.feed(np.array([3], np.int32), np.array([7], np.int64), np.array([9], np.int64), np.array([0], np.int8),
                codes)
        assert sw.feed(np.array([3, 3], np.int32), np.array([8, 6], np.int64), np.array([9, 9], np.int64),
                       np.array([0, 0], np.int8), codes) == (_native.UNSORTED, 1)


def test_exclusive_sweep_kernel_codes():
    """0 picks the best kernel the CPU runs (AVX-512, else AVX2, else scalar); a kernel
    the CPU lacks, or an unknown code, is refused."""
    args = (np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int64), _sweep.levels_of(None))
    vector = bool(_core.avx512_available() or _core.avx2_available())
    assert _core.ExclusiveSweep(*args, kernel=0).simd == vector
    assert not _core.ExclusiveSweep(*args, kernel=1).simd
    for code, present in ((2, _core.avx512_available()), (3, _core.avx2_available())):
        if present:
            assert _core.ExclusiveSweep(*args, kernel=code).simd
        else:
            with pytest.raises(ValueError, match="this CPU has no"):
                _core.ExclusiveSweep(*args, kernel=code)
    for code in (-1, 4):
        with pytest.raises(ValueError, match="kernel: 0"):
            _core.ExclusiveSweep(*args, kernel=code)


def test_unsorted_stream_names_the_row_through_the_exclusive_sweep(tmp_path, events, monkeypatch):
    monkeypatch.setattr(_sweep, "_VECTOR", True)
    monkeypatch.setattr(_sweep, "BEST_KERNEL", 1)
    t = events.slice(0, 10)
    swapped = pa.concat_tables([t.slice(0, 3), t.slice(4, 1), t.slice(3, 1), t.slice(5)])
    if swapped["start_ns"][3].as_py() == swapped["start_ns"][4].as_py():
        pytest.skip("tie")
    pq.write_table(swapped, tmp_path / "e.parquet")
    with pytest.raises(UnsortedInputError, match="row 4"):
        core.classify_dataset(tmp_path / "e.parquet", progress=False)


@settings(max_examples=examples(60), **SETTINGS)
@given(cases(windows=("none",)), st.permutations(ref.KINDS), st.sampled_from([None, 1, 3]),
       st.integers(1, 5), st.sampled_from(["file", "layout", "layout_streamed"]))
def test_classify_dataset_exclusive_sweep_matches_reference(tmp_path_factory, case, priority, batch_rows, group,
                                                           source):
    """A file in start order (ranks interleaved) or pau's layout, swept by partition
    or streamed, split into row groups and batches: the exclusive-time sweep's
    answer through classify_dataset is the reference's, with either kernel."""
    tl, _, _, sp = case
    table = events_table(tl.rows).sort_by([("start_ns", "ascending")])
    want = ref.classify(tl.rows, span=sp, priority=priority)
    root = tmp_path_factory.mktemp("lean")
    if source == "file":
        path, workers = root / "events.parquet", None
        pq.write_table(table, path, row_group_size=group)
    else:
        if not table.num_rows:
            return  # an archive of no rank has no file to read
        path, workers = root, (2 if source == "layout" else 1)
        pau.engine.io.write_dataset(table, root, row_group_size=group)
        batch_rows = None if source == "layout" else batch_rows
    for kernel in KERNELS:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_sweep, "_VECTOR", True)
            mp.setattr(_sweep, "BEST_KERNEL", kernel)
            got = core.classify_dataset(path, span=_span_arg(sp), priority=list(priority), batch_rows=batch_rows,
                                        workers=workers, progress=False)
        assert ref.pau_classify(got, False) == want, kernel
        assert got.schema.metadata[b"pau.rows"] == str(len(tl.rows)).encode()
