"""pau.readers.nsys: Nsight Systems SQLite exports.

Sample: ``nsys/icon_isc25``, found by ``shared_data`` (see its README). Expected figures were
hand-checked with sqlite3 queries on gpu.sqlite, e.g.
``SELECT count(*), sum("end"-start) FROM CUPTI_ACTIVITY_KIND_MEMCPY`` -> 5511, 32532292;
``SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL`` -> 7 (all on device 0, stream 7,
globalPid 287332540350464 -> pid 349138 ``graupel``); SYNCHRONIZATION -> 6 rows,
sum 42156101; ``TARGET_INFO_SESSION_START_TIME.utcEpochNs`` = 1744298836266214360;
NVTX_EVENTS: 5 ranges (type 59), texts via textId: transform_reduce, exclusive_scan,
for_each x3. Bad files are built in ``tmp_path``.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pyarrow.compute as pc
import pytest

import pau
import pau.core
from pau import cli
from pau.errors import PauError
from pau.errors import InvalidEventError, NoDeviceEventsError, TraceFormatError
from pau.readers.nsys import read_nsys

from shared_data import shared

BASE = 1744298836266214360


def _sample(name):
    return shared("nsys", "icon_isc25", name)


def _sum(t, kind):
    m = pc.equal(t.events["kind"].cast("string"), kind)
    ev = t.events.filter(m)
    return ev.num_rows, int(pc.sum(pc.subtract(ev["end_ns"], ev["start_ns"])).as_py() or 0)


def test_gpu_sample_counts_and_sums():
    t = read_nsys(_sample("gpu.sqlite"))
    assert t.warnings == []
    assert t.ranks.num_rows == 1
    r = t.ranks.to_pylist()[0]
    assert (r["device"], r["pid"], r["session_start_ns"]) == (0, 349138, BASE)
    assert r["process"].endswith("graupel") and r["device_name"] == "NVIDIA GeForce RTX 4070 SUPER"
    assert t.events.num_rows == 5524
    assert _sum(t, "memcpy") == (5511, 32532292)
    assert _sum(t, "sync") == (6, 42156101)
    n, _ = _sum(t, "compute")
    assert n == 7
    # first kernel: start 362768816, end 383605490 (session ns), shortName DeviceReduceKernel
    k = t.events.filter(pc.equal(t.events["name"].cast("string"), "DeviceReduceKernel")).to_pylist()
    assert [(e["start_ns"], e["end_ns"], e["stream"]) for e in k] == [
        (BASE + 362768816, BASE + 383605490, 7)]
    assert int(pc.sum(t.events["bytes"]).as_py()) == 320208904   # sum(bytes) of MEMCPY
    st = t.events["start_ns"].to_numpy()
    assert np.all(np.diff(st) >= 0)
    assert t.events.schema.field("kind").type.index_type.bit_width == 8


def test_relative_times_and_nvtx():
    t = read_nsys(_sample("gpu.sqlite"), absolute=False)
    assert t.events["start_ns"].to_numpy().min() == 362733654   # min(start) of SYNCHRONIZATION
    assert t.nvtx["text"].to_pylist() == ["transform_reduce", "exclusive_scan", "for_each", "for_each",
                                          "for_each"]
    assert t.lifecycle.num_rows == 0   # no range matches the default step pattern


def test_nvtx_steps_and_phases_feed_the_ledger():
    t = read_nsys(_sample("gpu.sqlite"), absolute=False, step_pattern=r"^for_each$",
                  phase_patterns={"custom": "scan|reduce"})
    life = t.lifecycle.to_pylist()
    steps = [(x["step"], x["start_ns"], x["end_ns"]) for x in life if x["record"] == "step"]
    # NVTX for_each ranges: 389815853-391518336, 393233167-400140392, 400142147-409784299
    assert steps == [(1, 389815853, 391518336), (2, 393233167, 400140392), (3, 400142147, 409784299)]
    assert [x["kind"] for x in life if x["record"] == "phase"] == ["custom", "custom"]
    led = pau.core.ledger(t.events, t.lifecycle).table
    prod = led.filter(pc.equal(led["state"], "productive"))
    # productive = the three for_each ranges: 1702483 + 6907225 + 9642152
    assert int(pc.sum(prod["duration_ns"]).as_py()) == 18251860


def test_directory_and_files_without_device_activity():
    # reads the whole folder, so it needs all three exports in one place (tests/data keeps
    # only gpu.sqlite: cpu.sqlite and rank_.sqlite are 2 MB each)
    data = _sample("gpu.sqlite").parent
    for name in ("cpu.sqlite", "rank_.sqlite"):
        if not (data / name).exists():
            pytest.skip(f"sample {data / name} absent (only in ../shared/data/nsys/icon_isc25)")
    for name in ("cpu.sqlite", "rank_.sqlite"):   # no CUPTI kernel/memcpy tables
        with pytest.raises(NoDeviceEventsError, match="no device activity"):
            read_nsys(data / name)
    t = read_nsys(data, on_invalid="quarantine")
    assert t.ranks.num_rows == 1 and t.events.num_rows == 5524
    assert sum("skipped" in w for w in t.warnings) == 2
    # the files set aside whole, as the Kineto reader lists a file without device events
    assert t.quarantine.filter(pc.equal(t.quarantine["location"], "file")).to_pylist() == [
        {"source_file": str(data / name), "location": "file", "reason": "no device events", "table": None,
         "rowid": None} for name in ("cpu.sqlite", "rank_.sqlite")]


def _mini(path, rows=(), communication=False):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", [(1, "gemm"), (2, "ncclDevKernel_AllReduce_Sum")])
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT, "
                "globalPid INT, shortName INT)")
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?)", rows)
    con.commit()
    con.close()
    return path


def test_minimal_schema_two_processes_and_communication(tmp_path):
    pid = lambda p: p << 24  # noqa: E731
    p = _mini(tmp_path / "a.sqlite", [(0, 10, 0, 7, pid(5), 1), (5, 20, 0, 8, pid(5), 2),
                                       (0, 4, 1, 7, pid(6), 1)])
    t = read_nsys(p)
    assert any("TARGET_INFO_SESSION_START_TIME" in w for w in t.warnings)
    assert t.ranks.select(["rank", "device", "pid"]).to_pylist() == [
        {"rank": 0, "device": 0, "pid": 5}, {"rank": 1, "device": 1, "pid": 6}]
    assert t.events["kind"].cast("string").to_pylist() == ["compute", "communication", "compute"]


def test_bad_files(tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(TraceFormatError, match="empty"):
        read_nsys(empty)
    text = tmp_path / "x.sqlite"
    text.write_text('{"traceEvents": []}')
    with pytest.raises(TraceFormatError, match="not a SQLite"):
        read_nsys(text)
    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (a INT)")
    con.commit()
    con.close()
    with pytest.raises(TraceFormatError, match="StringIds"):
        read_nsys(other)
    good = _mini(tmp_path / "good.sqlite", [(0, 10, 0, 7, 5 << 24, 1)] * 2000)
    data = good.read_bytes()
    trunc = tmp_path / "trunc.sqlite"
    trunc.write_bytes(data[: len(data) // 2])
    with pytest.raises(PauError):
        read_nsys(trunc)
    rev = _mini(tmp_path / "rev.sqlite", [(0, 10, 0, 7, 5 << 24, 1), (30, 20, 0, 7, 5 << 24, 1)])
    with pytest.raises(InvalidEventError, match="rowid 2"):
        read_nsys(rev)
    t = read_nsys(rev, on_invalid="quarantine")
    assert t.events.num_rows == 1 and t.quarantine["rowid"].to_pylist() == [2]
    assert t.quarantine.to_pylist() == [{  # the common three, then the table and its rowid
        "source_file": str(rev), "location": "table CUPTI_ACTIVITY_KIND_KERNEL rowid 2",
        "reason": "end before start", "table": "CUPTI_ACTIVITY_KIND_KERNEL", "rowid": 2}]
    assert any("1 rows of CUPTI_ACTIVITY_KIND_KERNEL set aside" in w for w in t.warnings)
    run = pau.read(rev, on_invalid="quarantine")  # the run keeps the reader's table as it is
    assert run.quarantine.equals(t.quarantine)
    nocol = tmp_path / "nocol.sqlite"
    con = sqlite3.connect(nocol)
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INT, end INT)")
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (1, 2)")
    con.commit()
    con.close()
    with pytest.raises(TraceFormatError, match="lacks column"):
        read_nsys(nocol)


# --- issue 19: the capture window, memset and sync, wrong types, int64 -----------------

EPOCH = 1_700_000_000_000_000_000


def _export(path, tables, *, epoch=EPOCH, duration=2_000_000_000):
    """A small export: ``tables`` maps an activity table to its rows (start, end, deviceId,
    streamId, globalPid, kind column); the session start and the capture's length."""
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    con.execute("INSERT INTO StringIds VALUES (1, 'gemm')")
    extra = {"CUPTI_ACTIVITY_KIND_KERNEL": "shortName", "CUPTI_ACTIVITY_KIND_MEMSET": "memKind",
             "CUPTI_ACTIVITY_KIND_MEMCPY": "copyKind", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": "syncType"}
    for table, rows in tables.items():
        # no declared types: SQLite then stores each value as given (what a fuzzer writes)
        con.execute(f"CREATE TABLE {table} (start, end, deviceId, streamId, globalPid, {extra[table]})")
        con.executemany(f"INSERT INTO {table} VALUES (?,?,?,?,?,?)", rows)
    if epoch is not None:
        con.execute("CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, "
                    "localTime TEXT)")
        con.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?, '', '')", (epoch,))
    if duration is not None:
        con.execute("CREATE TABLE ANALYSIS_DETAILS (globalVid INTEGER, duration INTEGER, startTime INTEGER, "
                    "stopTime INTEGER)")
        con.execute("INSERT INTO ANALYSIS_DETAILS VALUES (1, ?, 7, ?)", (duration, 7 + duration))
    con.commit()
    con.close()
    return path


def test_a_memset_alone_spans_the_capture_and_memset_and_sync_are_themselves(tmp_path):
    # one 1.5 us memset and one sync, no kernel table, in a 2 s capture
    p = _export(tmp_path / "memset.sqlite", {
        "CUPTI_ACTIVITY_KIND_MEMSET": [(1_000_000, 1_001_500, 0, 7, 5 << 24, 1)],
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": [(1_001_500, 1_002_000, 0, 7, 5 << 24, 3)]})
    t = read_nsys(p)
    assert t.events["kind"].cast("string").to_pylist() == ["memset", "sync"]
    assert t.spans().to_pylist() == [{"rank": 0, "start_ns": EPOCH, "end_ns": EPOCH + 2_000_000_000}]
    sparse = [w for w in t.warnings if w.code == "nsys.sparse_span"]
    assert len(sparse) == 1 and "0.00%" in sparse[0] and "2000000000 ns" in sparse[0]
    run = pau.read(p)
    assert run.spans.to_pylist() == t.spans().to_pylist()
    assert any(w.code == "nsys.sparse_span" for w in run.warnings)
    act = run.summary()["ledger"]["activity_ns"]
    assert act["memset"] == 1_500 and act["sync"] == 500
    assert act["idle"] == 2_000_000_000 - 2_000   # the capture, not the memset, is the span
    assert sum(act.values()) == 2_000_000_000


def test_the_capture_grows_to_events_outside_it_and_missing_capture_is_said(tmp_path):
    p = _export(tmp_path / "out.sqlite", {"CUPTI_ACTIVITY_KIND_KERNEL": [(-5, 100, 0, 7, 5 << 24, 1)]},
                duration=50)
    t = read_nsys(p)
    assert t.spans().to_pylist() == [{"rank": 0, "start_ns": EPOCH - 5, "end_ns": EPOCH + 100}]
    assert [w.code for w in t.warnings] == ["nsys.outside_capture"]
    q = _export(tmp_path / "nocap.sqlite", {"CUPTI_ACTIVITY_KIND_KERNEL": [(10, 100, 0, 7, 5 << 24, 1)]},
                duration=None)
    t = read_nsys(q)
    assert t.spans().to_pylist() == [{"rank": 0, "start_ns": EPOCH + 10, "end_ns": EPOCH + 100}]
    assert [w.code for w in t.warnings] == ["nsys.no_capture_window"]


def test_the_real_sample_spans_its_capture():
    # ANALYSIS_DETAILS.duration = 777255881 ns = DIAGNOSTIC_EVENT "Profiling has stopped"
    t = read_nsys(_sample("gpu.sqlite"))
    assert t.spans().to_pylist() == [{"rank": 0, "start_ns": BASE, "end_ns": BASE + 777255881}]
    assert t.warnings == []   # device activity 362733654..499174829: 17.6 % of the capture


@pytest.mark.parametrize("column, value, reason", [
    ("start", "12abc", "column start is not an integer ('12abc')"),
    ("end", 1e300, "column end is not an integer (1e+300)"),
    ("end", float("nan"), "column end is null"),    # SQLite stores a NaN as NULL
    ("start", b"\x00\x01", "column start is not an integer (b'\\x00\\x01')"),
    ("deviceId", 0.5, "column deviceId is not an integer (0.5)"),
    ("globalPid", "5", "column globalPid is not an integer ('5')"),
    ("shortName", 2.0, "column shortName is not an integer (2.0)"),
])
def test_a_value_of_the_wrong_type_names_table_column_and_rowid(tmp_path, column, value, reason):
    row = {"start": 0, "end": 10, "deviceId": 0, "streamId": 7, "globalPid": 5 << 24, "shortName": 1}
    row[column] = value
    p = _export(tmp_path / "t.sqlite", {"CUPTI_ACTIVITY_KIND_KERNEL": [(20, 30, 0, 7, 5 << 24, 1),
                                                                      tuple(row.values())]})
    with pytest.raises(InvalidEventError) as e:
        read_nsys(p)
    assert f"table CUPTI_ACTIVITY_KIND_KERNEL, rowid 2: {reason}" in str(e.value)
    t = read_nsys(p, on_invalid="quarantine")
    assert t.events["start_ns"].to_pylist() == [EPOCH + 20]
    assert t.quarantine.select(["rowid", "reason"]).to_pylist() == [{"rowid": 2, "reason": reason}]


def test_a_time_the_session_start_pushes_beyond_int64_is_refused(tmp_path):
    top = np.iinfo(np.int64).max
    p = _export(tmp_path / "wrap.sqlite", {"CUPTI_ACTIVITY_KIND_KERNEL": [(0, 10, 0, 7, 5 << 24, 1),
                                                                         (0, top, 0, 7, 5 << 24, 1)]})
    with pytest.raises(InvalidEventError, match=r"rowid 2: end \+ the session start .* is beyond int64"):
        read_nsys(p)
    t = read_nsys(p, on_invalid="quarantine")
    assert t.events["end_ns"].to_pylist() == [EPOCH + 10]   # not wrapped to a negative time
    assert read_nsys(p, absolute=False).events["end_ns"].to_pylist() == [10, top]


def test_a_session_start_or_capture_of_the_wrong_type_is_refused(tmp_path):
    p = _export(tmp_path / "s.sqlite", {"CUPTI_ACTIVITY_KIND_KERNEL": [(0, 10, 0, 7, 5 << 24, 1)]},
                epoch="soon")
    with pytest.raises(TraceFormatError, match="utcEpochNs is 'soon'"):
        read_nsys(p)
    q = _export(tmp_path / "d.sqlite", {"CUPTI_ACTIVITY_KIND_KERNEL": [(0, 10, 0, 7, 5 << 24, 1)]},
                duration=-1)
    with pytest.raises(TraceFormatError, match="ANALYSIS_DETAILS.duration"):
        read_nsys(q)


def test_an_empty_folder_is_a_pau_error(tmp_path):
    with pytest.raises(PauError, match="no Nsight Systems exports"):
        read_nsys(tmp_path)


def test_a_name_that_is_not_utf8_is_read_with_replacement_characters(tmp_path):
    # found by tests/test_fuzz_readers.py (a flipped byte in StringIds): sqlite3 raised
    # UnicodeDecodeError
    p = _export(tmp_path / "u.sqlite", {"CUPTI_ACTIVITY_KIND_KERNEL": [(0, 10, 0, 7, 5 << 24, 1)]})
    con = sqlite3.connect(p)
    con.execute("UPDATE StringIds SET value = CAST(X'67656D6DB7' AS TEXT) WHERE id = 1")
    con.commit()
    con.close()
    assert read_nsys(p).events["name"].cast("string").to_pylist() == ["gemm\ufffd"]


def test_nvtx_ranges_summarised_as_nsys_stats_does(capsys):
    path = shared("nsys", "icon_isc25", "gpu.sqlite")
    run = pau.read(path)
    rows = run.summary()["nvtx"]
    # the export's five ranges by hand: transform_reduce 1 (23,486,665 ns), for_each 3, exclusive_scan 1
    nvtx = read_nsys(path).nvtx
    want: dict = {}
    for r in nvtx.to_pylist():
        want.setdefault(r["text"], []).append(r["end_ns"] - r["start_ns"])
    assert [r["name"] for r in rows] == sorted(want, key=lambda k: -sum(want[k]))
    for r in rows:
        d = want[r["name"]]
        assert (r["count"], r["total_ns"], r["min_ns"], r["max_ns"], r["mean_ns"]) == (
            len(d), sum(d), min(d), max(d), sum(d) // len(d))
    assert sum(r["share"] for r in rows) == pytest.approx(1.0, rel=1e-12)
    assert cli.main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "NVTX ranges (3 by total time" in out and "transform_reduce" in out
