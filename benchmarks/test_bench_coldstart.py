"""Cold start (issue: speed on every shape, item 3): whole processes with an empty
Numba cache, as a fresh install or a new container runs them.

* ``pau report`` of the built-in run. Target: under 10 s on a quiet 2-core machine.
* ``pau.core.attribute`` of a small lifecycle (DESIGN §2.4's example A: a failure,
  a restore, two checkpoints). Target: its kernels compile in under 3 s.
* ``pau.core.classify_dataset`` of a 20M-event archive in pau's layout (8 ranks,
  ``pau.engine.io.write_dataset``; scaled by ``PAU_BENCH_SCALE``) in a fresh process,
  the batch job's and the CLI's case, side by side with DuckDB's first query of the
  same files in a fresh process (``test_fresh_classify_dataset``). Target: pau's
  process at least as fast as DuckDB's. An exclusive-time figure is not a simple SQL
  query, so DuckDB computes what ``test_bench_archive.py`` compares with: it reads the
  same four columns and sums ``end_ns - start_ns`` per rank and kind. Each process
  imports its library, computes and prints the answer (pau's is asserted against
  ``classify`` of the table in memory, DuckDB's against pyarrow's sums), timed around
  ``subprocess.run``; the two alternate, one warm-up process each first (the files
  then sit in the page cache for both). Python's bytecode is written once to a
  temporary ``PYTHONPYCACHEPREFIX`` and reused, as an installed package's is (a
  process with ``PYTHONDONTWRITEBYTECODE`` set and no bytecode compiles pau's
  sources on every start, about 0.15 s more). ``PAU_BENCH_FRESH_ROUNDS`` processes
  each (default 11; one in CI).

Each case is one process (``time.perf_counter`` around ``subprocess.run``) with
``NUMBA_CACHE_DIR`` set to a new empty directory, so every Numba kernel it needs
compiles; its CPU time (user + system, from ``resource.getrusage``) is noted beside
the wall time, as it is what a quiet machine would show when others share this one.
The attribute process also reports its own first and second call of ``attribute``
(their difference is the compile). In CI (``--benchmark-disable``) each runs once
and only its answer is checked: it completes, prints its result, and announces its
first compile on stderr. For the figures::

    python -m pytest benchmarks/test_bench_coldstart.py -p no:cacheprovider \\
        --benchmark-enable --benchmark-columns=min,median,rounds
"""

from __future__ import annotations

import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

import pytest

import pyarrow as pa
import pyarrow.compute as pc

import pau.core
import pau.engine.io
import pau.synth
from bench_config import SEED, events_label, scaled, timed

#: The built-in run's report, as the console script `pau report` runs it.
REPORT = "import sys; from pau.cli import main; sys.exit(main(['report']))"
#: A small lifecycle attributed twice (the second call loads nothing and compiles
#: nothing): the times of both and the intervals' count, as JSON on stdout.
ATTRIBUTE = """
import json, time
import pyarrow as pa
import pau.core as pc

S = 10**9
rows = [("accountable", None, 0, 0, 210, None, None, None, None, None),
        ("attempt", 1, -1, 0, 105, None, None, None, None, "failed"),
        ("phase", 1, 0, 0, 10, None, None, None, None, "init")]
rows += [("step", 1, 0, 10 + 10 * (k - 1), 20 + 10 * (k - 1), k, None, None, None, None) for k in range(1, 6)]
rows += [("checkpoint_save", 1, 0, 60, None, 5, 70, 70, True, None)]
rows += [("step", 1, 0, 70 + 10 * (k - 6), 80 + 10 * (k - 6), k, None, None, None, None) for k in range(6, 9)]
rows += [("step", 1, 0, 100, None, 9, None, None, None, None),
         ("failure", 1, -1, 105, None, None, None, None, None, "xid79"),
         ("attempt", 2, -1, 130, 210, None, None, None, None, "completed"),
         ("phase", 2, 0, 130, 140, None, None, None, None, "init"),
         ("restore", 2, 0, 140, 150, 5, None, None, True, None)]
rows += [("step", 2, 0, 150 + 10 * (k - 6), 160 + 10 * (k - 6), k, None, None, None, None) for k in range(6, 11)]
rows += [("checkpoint_save", 2, 0, 200, None, 10, 210, 210, True, None)]
names = ["record", "attempt", "rank", "start_ns", "end_ns", "step", "block_end_ns", "durable_ns", "ok", "kind"]
cols = {n: [r[i] for r in rows] for i, n in enumerate(names)}
for n in ("start_ns", "end_ns", "block_end_ns", "durable_ns"):
    cols[n] = [None if v is None else v * S for v in cols[n]]
table = pa.table(cols)
t0 = time.perf_counter()
iv = pc.attribute(table)
t1 = time.perf_counter()
again = pc.attribute(table)
t2 = time.perf_counter()
assert iv.equals(again)
print(json.dumps({"first_s": t1 - t0, "second_s": t2 - t1, "intervals": iv.num_rows}))
"""


def _cold(code: str) -> dict:
    """Run `code` in a new Python process with an empty NUMBA_CACHE_DIR: its wall and
    CPU seconds, stdout and stderr."""
    with tempfile.TemporaryDirectory(prefix="pau-cold-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cached = sum(1 for p in pathlib.Path(cache).rglob("*.nbi"))
    assert res.returncode == 0, res.stderr
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "stdout": res.stdout, "stderr": res.stderr, "cached_kernels": cached}


def _announced(run: dict) -> None:
    """The process compiled (into its empty cache) and said so, once."""
    lines = [x for x in run["stderr"].splitlines() if x.startswith("pau: compiling")]
    assert len(lines) == 1, run["stderr"]
    assert run["cached_kernels"] >= 1


def _note(benchmark, report_note, name: str, runs: list, extra: str = "") -> None:
    """Record the figures of `runs` (the benchmark's own timing is the same process
    runs, with the harness around them)."""
    walls = sorted(r["wall_s"] for r in runs)
    cpus = sorted(r["cpu_s"] for r in runs)
    benchmark.extra_info.update(wall_s=walls, cpu_s=cpus)
    report_note(f"cold start: {name}: wall {walls[len(walls) // 2]:.2f} s (min {walls[0]:.2f}), CPU "
                f"{cpus[len(cpus) // 2]:.2f} s (min {cpus[0]:.2f}), {len(runs)} processes{extra}; "
                f"load average {os.getloadavg()[0]:.2f}")


@pytest.fixture
def timing(request) -> bool:
    """Whether this run records figures (--benchmark-enable): then 3 processes per
    case, else one."""
    return timed(request.config)


def test_cold_report(benchmark, report_note, timing):
    """`pau report` of the built-in run, from an empty cache."""
    runs: list = []

    def once():
        runs.append(_cold(REPORT))

    benchmark.group = "cold start"
    benchmark.pedantic(once, rounds=3 if timing else 1, iterations=1)
    for run in runs:
        assert "goodput" in run["stdout"].lower(), run["stdout"][:500]
        _announced(run)
    if timing:
        _note(benchmark, report_note, "pau report (built-in run)", runs)


def test_cold_attribute(benchmark, report_note, timing):
    """`pau.core.attribute` of a small lifecycle, from an empty cache."""
    runs: list = []

    def once():
        runs.append(_cold(ATTRIBUTE))

    benchmark.group = "cold start"
    benchmark.pedantic(once, rounds=3 if timing else 1, iterations=1)
    calls = []
    for run in runs:
        out = json.loads(run["stdout"].strip().splitlines()[-1])
        assert out["intervals"] == 20  # DESIGN §2.4 A: 20 state intervals on its one rank
        assert out["second_s"] < out["first_s"]
        _announced(run)
        calls.append(out)
    if not timing:
        return
    first = sorted(c["first_s"] for c in calls)
    compile_s = sorted(c["first_s"] - c["second_s"] for c in calls)
    _note(benchmark, report_note, "pau.core.attribute (small lifecycle)", runs,
          f"; in process: first call {first[len(first) // 2]:.2f} s, of which compiling "
          f"{compile_s[len(compile_s) // 2]:.2f} s")


#: pau's whole path in a fresh process: the import, one classify_dataset of the archive
#: (argv[1]); the in-process times of both and the answer, as JSON on stdout.
PAU_FRESH = """
import time
t0 = time.perf_counter()
import json, sys
import pau.core
t1 = time.perf_counter()
t = pau.core.classify_dataset(sys.argv[1], progress=False)
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "call_s": t2 - t1,
                  "rows": list(zip(t["rank"].to_pylist(), t["activity"].to_pylist(), t["duration_ns"].to_pylist()))}))
"""
#: DuckDB's first query of the same files in a fresh process: the four columns pau
#: reads, a per-rank, per-kind sum of durations on all cores (as test_bench_archive.py).
DUCKDB_FRESH = """
import time
t0 = time.perf_counter()
import json, sys
import duckdb
t1 = time.perf_counter()
rows = duckdb.connect().execute(
    "SELECT CAST(rank AS INTEGER), CAST(kind AS VARCHAR), sum(end_ns - start_ns) "
    "FROM read_parquet('" + sys.argv[1] + "/**/*.parquet', hive_partitioning = true) GROUP BY 1, 2").fetchall()
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "call_s": t2 - t1, "rows": [[int(r), k, int(d)] for r, k, d in rows]}))
"""


def fresh_rounds(timing: bool) -> int:
    raw = os.environ.get("PAU_BENCH_FRESH_ROUNDS", "11")
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"PAU_BENCH_FRESH_ROUNDS: expected an int, got {raw!r}") from None
    if n < 1:
        raise ValueError(f"PAU_BENCH_FRESH_ROUNDS: must be >= 1, got {raw!r}")
    return n if timing else 1


class FreshArchive:
    """A 20M-event archive in pau's layout (scaled) and the answers it must give."""

    def __init__(self, root: pathlib.Path, rows: int, ranks: int = 8):
        table = pau.synth.training_run_for_events(rows, ranks=ranks, seed=SEED)
        self.rows = table.num_rows
        self.path = root / "archive"
        pau.engine.io.write_dataset(table, self.path)
        got = pau.core.classify(table)
        self.classified = list(zip(got["rank"].to_pylist(), got["activity"].to_pylist(),
                                   got["duration_ns"].to_pylist()))
        d = pa.table({"rank": table["rank"], "kind": pc.cast(table["kind"], pa.string()),
                      "d": pc.subtract(table["end_ns"], table["start_ns"])})
        sums = d.group_by(["rank", "kind"]).aggregate([("d", "sum")])
        self.by_rank_kind = {(r, k): v for r, k, v in zip(sums["rank"].to_pylist(), sums["kind"].to_pylist(),
                                                          sums["d_sum"].to_pylist())}
        self.label = f"{events_label(rows)} events x {ranks} ranks"


@pytest.fixture(scope="module")
def fresh_archive(tmp_path_factory) -> FreshArchive:
    return FreshArchive(tmp_path_factory.mktemp("fresh"), scaled(20_000_000))


def _fresh(code: str, path: pathlib.Path, env: dict) -> dict:
    """One fresh process running `code` on `path`: its wall seconds and its JSON."""
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", code, str(path)], env=env, capture_output=True, text=True,
                         timeout=600)
    wall = time.perf_counter() - t0
    assert res.returncode == 0, res.stderr
    return {"wall_s": wall, **json.loads(res.stdout.strip().splitlines()[-1])}


def _median(xs: list) -> float:
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def test_fresh_classify_dataset(benchmark, report_note, timing, fresh_archive):
    """pau's classify_dataset against DuckDB's first query, each in fresh processes."""
    duckdb = pytest.importorskip("duckdb")
    rounds = fresh_rounds(timing)
    runs: dict = {"pau": [], "duckdb": []}
    with tempfile.TemporaryDirectory(prefix="pau-pyc-") as pyc:
        env = dict(os.environ, PYTHONPYCACHEPREFIX=pyc)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        for code in (PAU_FRESH, DUCKDB_FRESH):  # bytecode written, files in the page cache
            _fresh(code, fresh_archive.path, env)

        def once():
            runs["pau"].append(_fresh(PAU_FRESH, fresh_archive.path, env))
            runs["duckdb"].append(_fresh(DUCKDB_FRESH, fresh_archive.path, env))

        benchmark.group = f"fresh process: classify_dataset {fresh_archive.label}"
        benchmark.pedantic(once, rounds=rounds, iterations=1)
    for run in runs["pau"]:
        assert [tuple(r) for r in run["rows"]] == fresh_archive.classified
    for run in runs["duckdb"]:
        assert {(r, k): d for r, k, d in run["rows"]} == fresh_archive.by_rank_kind
    med = {who: {k: _median([r[k] for r in rs]) for k in ("wall_s", "import_s", "call_s")}
           for who, rs in runs.items()}
    ratio = med["duckdb"]["wall_s"] / med["pau"]["wall_s"]
    benchmark.extra_info.update(pau_wall_s=[r["wall_s"] for r in runs["pau"]],
                                duckdb_wall_s=[r["wall_s"] for r in runs["duckdb"]], ratio=ratio,
                                duckdb_version=duckdb.__version__)
    if timing:
        p, d = med["pau"], med["duckdb"]
        report_note(f"fresh process, {fresh_archive.label}: pau.core.classify_dataset {p['wall_s']:.3f} s "
                    f"(import {p['import_s']:.3f}, call {p['call_s']:.3f}) against DuckDB's first query "
                    f"{d['wall_s']:.3f} s (import {d['import_s']:.3f}, query {d['call_s']:.3f}): "
                    f"{ratio:.2f}x DuckDB's pace; medians of {rounds} processes each, "
                    f"load average {os.getloadavg()[0]:.2f}")
