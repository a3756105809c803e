"""Cold start (issue: speed on every shape, item 3): whole processes with an empty
Numba cache, as a fresh install or a new container runs them.

* ``pau report`` of the built-in run. Target: under 10 s on a quiet 2-core machine.
* ``pau.core.attribute`` of a small lifecycle (DESIGN §2.4's example A: a failure,
  a restore, two checkpoints). Target: its kernels compile in under 3 s.

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

from bench_config import timed

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
