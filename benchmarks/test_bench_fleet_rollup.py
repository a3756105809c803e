"""A weekly fleet rollup by three keys (issue 41): ``Fleet.rollup``, beside DuckDB.

A fleet archive of 100,000 runs (``PAU_BENCH_FLEET_RUNS`` sets another count; scaled by
``PAU_BENCH_SCALE``), written directly: the runs table (cluster, accelerator type, team
of 4 x 3 x 8 values) and the runs' hourly cells (a run lasts 1 to 72 hours within a
year, 1 to 4 states an hour, on 8 accelerators), in batches of 1,000 runs as ``pau
ingest`` writes them. No jobs table: allocated is accountable. Measure with::

    python -m pytest benchmarks/test_bench_fleet_rollup.py -p no:cacheprovider --benchmark-enable

Beside it, DuckDB computes the same figures (every state's accelerator-ns, accountable,
per cluster, accelerator type, team and ISO week) from the same Parquet files with one
SQL query; the answers are asserted equal. Target: at least as fast as DuckDB. The peak
memory of a rollup in a fresh process is measured at N / 4 and N runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench_config import SEED, scaled
import pau
from pau.engine.vocab import STATES
from pau.fleet import CELLS_SCHEMA, RUNS_SCHEMA

duckdb = pytest.importorskip("duckdb")

H = 3_600 * 10**9
W = 7 * 24 * H
MONDAY0 = -3 * 24 * H
T0 = 1_704_067_200 * 10**9  # 2024-01-01 00:00 UTC
BATCH = 1_000
BY = ["cluster", "accelerator_type", "team"]


def _runs_count() -> int:
    env = os.environ.get("PAU_BENCH_FLEET_RUNS")
    return int(env) if env else scaled(100_000)


def write_fleet(path, n: int, seed: int = SEED) -> int:
    """An archive of ``n`` runs at ``path``; returns the cells written."""
    rng = np.random.default_rng(seed)
    for d in ("runs", "cells", "store", "staging", ".tmp"):
        os.makedirs(os.path.join(path, d), exist_ok=True)
    with open(os.path.join(path, "pau-fleet.json"), "w") as f:
        json.dump({"pau_fleet_layout": 1}, f)
    clusters = np.array(["east", "west", "north", "south"])
    types = np.array(["H100", "A100", "MI300X"])
    teams = np.array([f"team{i}" for i in range(8)])
    states = np.array(STATES)
    cells = 0
    for b0 in range(0, n, BATCH):
        m = min(BATCH, n - b0)
        keys = np.array([f"{i:032x}" for i in range(b0, b0 + m)])
        start = T0 + rng.integers(0, 365 * 24, m) * H
        hours = rng.integers(1, 73, m)
        # 0 to 2 failures a run, each at an instant of the run, every one recovered (the
        # runs table's lists: recovered failures' instants and their times to recover)
        failures = rng.integers(0, 3, m)
        failure_ns = [sorted((start[i] + rng.integers(0, hours[i] * H, failures[i])).tolist()) for i in range(m)]
        recovery_ns = [rng.integers(60 * 10**9, 3_600 * 10**9, failures[i]).tolist() for i in range(m)]
        cols = {f.name: pa.nulls(m, f.type) for f in RUNS_SCHEMA}
        cols.update(run=pa.array(keys), cluster=pa.array(clusters[rng.integers(0, 4, m)]),
                    accelerator_type=pa.array(types[rng.integers(0, 3, m)]), team=pa.array(teams[rng.integers(0, 8, m)]),
                    accelerators=pa.array(np.full(m, 8)), start_ns=pa.array(start), end_ns=pa.array(start + hours * H),
                    failures=pa.array(failures), not_recovered=pa.array(np.zeros(m, np.int64)),
                    failure_ns=pa.array(failure_ns, pa.list_(pa.int64())),
                    recovery_ns=pa.array(recovery_ns, pa.list_(pa.int64())))
        pq.write_table(pa.table(cols, schema=RUNS_SCHEMA), os.path.join(path, "runs", f"batch-{b0:09d}.parquet"))
        # cells: per run and hour, 1 to 4 states; an hour's states share its 8 accelerator-hours
        run_of_hour = np.repeat(np.arange(m), hours)
        hour = start[run_of_hour] + (np.arange(len(run_of_hour)) - np.repeat(np.cumsum(hours) - hours, hours)) * H
        k = rng.integers(1, 5, len(hour))
        cell_hour = np.repeat(np.arange(len(hour)), k)
        st = rng.integers(0, len(STATES), len(cell_hour))
        dur = rng.integers(1, 2 * H, len(cell_hour))
        table = pa.table({"run": pa.array(keys[run_of_hour[cell_hour]]), "hour_ns": pa.array(hour[cell_hour]),
                          "state": pa.array(states[st]), "activity": pa.array(np.full(len(st), "unknown")),
                          "duration_ns": pa.array(dur)}, schema=CELLS_SCHEMA)
        pq.write_table(table, os.path.join(path, "cells", f"batch-{b0:09d}.parquet"))
        cells += table.num_rows
    return cells


_STATE_SUMS = ",\n       ".join(f"sum(CASE WHEN c.state = '{s}' THEN c.duration_ns ELSE 0 END) AS \"{s}\""
                                for s in STATES)
SQL = f"""
SELECT r.cluster, r.accelerator_type, r.team,
       (c.hour_ns - {MONDAY0}) // {W} * {W} + {MONDAY0} AS week,
       sum(c.duration_ns) AS accountable_ns,
       {_STATE_SUMS}
FROM read_parquet('{{cells}}/*.parquet') c JOIN read_parquet('{{runs}}/*.parquet') r USING (run)
GROUP BY ALL ORDER BY ALL
"""


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    n = _runs_count()
    path = str(tmp_path_factory.mktemp("fleet-rollup") / "fleet")
    cells = write_fleet(path, n)
    return path, n, cells


def _duckdb(path):
    con = duckdb.connect()
    try:
        return con.sql(SQL.format(cells=os.path.join(path, "cells"), runs=os.path.join(path, "runs"))).to_arrow_table()
    finally:
        con.close()


def _same(r, d) -> None:
    t = r.table
    assert t.num_rows == d.num_rows
    d = d.read_all() if hasattr(d, "read_all") else d
    for k in BY:
        assert t[k].to_pylist() == d[k].to_pylist()
    assert t["period_start_ns"].to_pylist() == d["week"].to_pylist()
    assert t["accountable_ns"].to_pylist() == [int(v) for v in d["accountable_ns"].to_pylist()]
    for s in STATES:
        assert t[s.replace(".", "_") + "_ns"].to_pylist() == [int(v) for v in d[s].to_pylist()], s


def test_weekly_rollup_by_three_keys(benchmark, archive, report_note):
    path, n, cells = archive
    fleet = pau.read_fleet(path)
    benchmark.group = f"fleet rollup, {n:,} runs, {cells:,} hourly cells"
    r = benchmark.pedantic(fleet.rollup, kwargs={"by": BY, "every": "1w"}, rounds=3, iterations=1)
    t0 = time.perf_counter()
    d = _duckdb(path)
    duck = time.perf_counter() - t0
    _same(r, d)
    if benchmark.stats:
        med = benchmark.stats.stats.median
        report_note(f"fleet rollup: {n:,} runs, {cells:,} cells, weekly by {', '.join(BY)}: pau {med:.2f} s "
                    f"(median of 3), DuckDB {duck:.2f} s (one run)")


def test_duckdb_same_query(benchmark, archive):
    path, n, cells = archive
    benchmark.group = f"fleet rollup, {n:,} runs, {cells:,} hourly cells"
    d = benchmark.pedantic(_duckdb, args=(path,), rounds=3, iterations=1)
    assert d.num_rows > 0


_PROBE = """
import json, sys, time
import numpy as np
import pau
from pau.fleet import _cells
def hwm():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM"))
f = pau.read_fleet(sys.argv[1])
# Numba and the kernels loaded before the base (about 120 MiB, once a process; a rollup
# loads them past its first 4 Mi cells): what is measured is the rollup's own memory
i32, i64 = np.zeros(1, np.int32), np.zeros(1, np.int64)
_cells.add_cells(_cells.Cells(i32, i32, i64, i64), _cells.Lookup(i64, np.ones(1, np.int8), i64),
                 _cells.Hours(0, i64), np.zeros((1, 3), np.int64), 3)
base = hwm()
t = time.perf_counter()
r = f.rollup(by=["cluster", "accelerator_type", "team"], every="1w")
print(json.dumps({"base": base, "peak": hwm(), "s": time.perf_counter() - t, "rows": r.table.num_rows}))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="VmHWM is Linux's")
def test_memory_is_flat_in_the_number_of_runs(archive, tmp_path, report_note):
    path, n, _ = archive
    small = str(tmp_path / "small")
    write_fleet(small, max(n // 4, 1_000))
    got = {}
    for name, p in (("quarter", small), ("all", path)):
        out = subprocess.run([sys.executable, "-c", _PROBE, p], capture_output=True, text=True, timeout=600,
                             check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        got[name] = json.loads(out.stdout)
    grow = (got["all"]["peak"] - got["all"]["base"]) - (got["quarter"]["peak"] - got["quarter"]["base"])
    report_note(f"fleet rollup peak RSS over the imports: {n // 4:,} runs "
                f"{(got['quarter']['peak'] - got['quarter']['base']) / 2**20:.0f} MiB, {n:,} runs "
                f"{(got['all']['peak'] - got['all']['base']) / 2**20:.0f} MiB")
    # the cells are streamed file by file: what grows is the runs' needed columns, their
    # keys' positions and group codes (under 1 kB a run)
    assert grow < 1_000 * (n - n // 4) + 32 * 2**20
