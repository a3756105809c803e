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
from pau.errors import PauError
from pau.readers.kineto import InvalidEventError, NoDeviceEventsError, TraceFormatError
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
    assert any("1 rows of CUPTI_ACTIVITY_KIND_KERNEL set aside" in w for w in t.warnings)
    run = pau.read(rev, on_invalid="quarantine")  # the run's one quarantine layout
    assert [(r["source_file"], r["location"]) for r in run.quarantine.to_pylist()] == [
        (str(rev), "CUPTI_ACTIVITY_KIND_KERNEL rowid 2")]
    nocol = tmp_path / "nocol.sqlite"
    con = sqlite3.connect(nocol)
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INT, end INT)")
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (1, 2)")
    con.commit()
    con.close()
    with pytest.raises(TraceFormatError, match="lacks column"):
        read_nsys(nocol)
