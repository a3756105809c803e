"""``pau ingest``: runs per second into a fleet archive, and the parent's peak memory.

Group ``fleet ingest``: N small synthetic runs (``pau.synth.training_job``: 2 ranks,
20 steps with failures and checkpoints, written in pau's run layout, each with its own
``job`` so each has its own run key), N = 20 × ``PAU_BENCH_SCALE`` (at least 5), and
10N. Each case ingests them into a new archive (``pau.fleet.ingest``) in a fresh
process, on one process (``workers=1``: the runs are read in the parent) and on two
(``workers=2``, a process pool), and reports runs/s and the parent's peak RSS
(``VmHWM``, as ``memory_probe.py`` explains; the pool's processes are not counted).

The answer is asserted: every run is added, the runs table holds N (or 10N) rows with
their jobs, and a second ingest adds nothing. Memory must stay flat: the parent keeps
no per-run state (the walk is lazy, a bounded number of tasks are in flight, the counts
are the only thing kept, and the compaction into the tables' batches holds at most 64
staged rows and one batch's keys), so the peak for 10N runs is asserted within 16 MiB of
the peak for N runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pau
import pau.synth
from bench_config import SEED, scale

#: Runs in the small case (the large one has ten times as many).
N = max(5, int(round(20 * scale())))
#: How far the parent's peak RSS may grow from N to 10N runs.
FLAT_BYTES = 16 * 2**20

#: One ingest in a fresh process: prints its counts, seconds and the parent's peak RSS.
PROBE = """
import json, sys, time
import pau.fleet

def hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

base = hwm()
t0 = time.perf_counter()
res = pau.fleet.ingest([sys.argv[1]], sys.argv[2], workers=int(sys.argv[3]), progress=False)
print(json.dumps({"added": res.added, "present": res.present, "refused": res.refused,
                  "passed_over": res.passed_over, "seconds": time.perf_counter() - t0,
                  "baseline_rss_bytes": base, "peak_rss_bytes": hwm()}))
"""

#: Where the pau under test lies, for the processes the benchmark starts.
SRC = os.path.dirname(os.path.dirname(os.path.abspath(pau.__file__)))


def _write_runs(root: Path, n: int) -> None:
    templates = [pau.synth.training_job(ranks=2, steps=20, seed=SEED + k, mtbf_s=600, checkpoint_every=5,
                                        step_time_s=60, kernels_per_step=3, buckets=1) for k in range(5)]
    for i in range(n):
        job = templates[i % len(templates)]
        pau.Run(events=job.events, lifecycle=job.lifecycle, metadata={"format": "pau", "job": f"job-{i}"}).write(
            root / f"part{i // 100}" / f"run{i:05d}")


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[int, Path]:
    out = {}
    for n in (N, 10 * N):
        root = tmp_path_factory.mktemp(f"runs{n}")
        _write_runs(root, n)
        out[n] = root
    return out


def _probe(src: Path, out: Path, workers: int) -> dict:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run([sys.executable, "-c", PROBE, str(src), str(out), str(workers)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


_PEAKS: dict[tuple[int, int], int] = {}


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("size", ["N", "10N"])
def test_ingest(benchmark, report_note, tmp_path, sources, size, workers):
    n = N if size == "N" else 10 * N
    got: list[dict] = []
    outs: list[Path] = []

    def once():
        out = tmp_path / f"fleet{len(outs)}"
        outs.append(out)
        got.append(_probe(sources[n], out, workers))

    benchmark.group = "fleet ingest"
    benchmark.pedantic(once, rounds=1, iterations=1)
    r = got[-1]
    assert (r["added"], r["present"], r["refused"], r["passed_over"]) == (n, 0, 0, 0)
    runs = pau.read_fleet(outs[-1]).runs
    assert runs.num_rows == n and sorted(runs["job"].to_pylist()) == sorted(f"job-{i}" for i in range(n))
    again = _probe(sources[n], outs[-1], workers)
    assert (again["added"], again["present"]) == (0, n)
    _PEAKS[(n, workers)] = r["peak_rss_bytes"]
    benchmark.extra_info.update(runs=n, seconds=r["seconds"], peak_rss_bytes=r["peak_rss_bytes"])
    report_note(f"fleet ingest: {n} runs, workers={workers}: {n / r['seconds']:.1f} runs/s "
                f"({r['seconds']:.2f} s), parent peak RSS {r['peak_rss_bytes'] / 2**20:.0f} MiB "
                f"(after imports {r['baseline_rss_bytes'] / 2**20:.0f} MiB); again: {again['seconds']:.2f} s, "
                "nothing added")
    small = _PEAKS.get((N, workers))
    if size == "10N" and small is not None:
        assert r["peak_rss_bytes"] - small <= FLAT_BYTES, (
            f"parent peak RSS grew {(r['peak_rss_bytes'] - small) / 2**20:.1f} MiB from {N} to {n} runs")
