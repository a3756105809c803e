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

Group ``fleet ingest: synthetic fleet``: ``pau.synth.fleet`` of J jobs and 10J (J =
``PAU_BENCH_FLEET_JOBS``, default 500 × ``PAU_BENCH_SCALE``; docs/fleet.md "Scale" gives
J = 10,000), written as a sacct file and a run per profiled job, ingested on one process
and on two; ``jobs_summary()`` is asserted, and with two workers the parent's peak RSS
from J to 10J jobs within 100 MB.

Group ``fleet ingest: Kineto traces tiled``: copies of a real 8-rank Kineto trace, each
with its times and ids moved (``PAU_BENCH_KINETO_COPIES``, default 8 × the scale), in MB/s
of uncompressed JSON end to end and per CPU-second (the parent's and the workers' time).
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
import json, resource, sys, time
import pau.fleet

def cpu():
    return sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))

def hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

base = hwm()
c0 = cpu()
t0 = time.perf_counter()
res = pau.fleet.ingest([sys.argv[1]], sys.argv[2], workers=int(sys.argv[3]), progress=False)
print(json.dumps({"added": res.added, "present": res.present, "refused": res.refused,
                  "passed_over": res.passed_over, "seconds": time.perf_counter() - t0,
                  "cpu_seconds": cpu() - c0,
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


# ---------------------------------------------------------------------------
# the synthetic fleet: scheduler records and lifecycles, J jobs and 10J

def fleet_jobs() -> int:
    """Jobs of the small synthetic fleet: ``PAU_BENCH_FLEET_JOBS`` (default 500 ×
    ``PAU_BENCH_SCALE``, at least 100); the large one has ten times as many. The figures
    in docs/fleet.md are of ``PAU_BENCH_FLEET_JOBS=10000`` (10,000 and 100,000 jobs)."""
    raw = os.environ.get("PAU_BENCH_FLEET_JOBS")
    if raw is None:
        return max(100, int(round(500 * scale())))
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"PAU_BENCH_FLEET_JOBS: expected an int, got {raw!r}") from None
    if n < 1:
        raise ValueError(f"PAU_BENCH_FLEET_JOBS: must be >= 1, got {n}")
    return n


J = fleet_jobs()
#: How far the parent's peak RSS may grow from J to 10J jobs (two workers: the parent
#: reads nothing).
FLEET_FLAT_BYTES = 100 * 2**20

#: One ingest of a fleet in a fresh process: its counts, seconds and peak RSS.
FLEET_PROBE = PROBE.replace("progress=False)", "progress=False, tz='UTC')").replace(
    '"passed_over": res.passed_over,', '"passed_over": res.passed_over, "jobs": res.jobs,')


@pytest.fixture(scope="module")
def fleets(tmp_path_factory) -> dict[int, tuple[Path, dict]]:
    out = {}
    for n in (J, 10 * J):
        root = tmp_path_factory.mktemp(f"fleet{n}")
        out[n] = (root, pau.synth.fleet(n, seed=SEED).write(root))
    return out


def _fleet_probe(src: Path, out: Path, workers: int) -> dict:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run([sys.executable, "-c", FLEET_PROBE, str(src), str(out), str(workers)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


_FLEET_PEAKS: dict[tuple[int, int], int] = {}


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("size", ["J", "10J"])
def test_ingest_synthetic_fleet(benchmark, report_note, tmp_path, fleets, size, workers):
    n = J if size == "J" else 10 * J
    src, written = fleets[n]
    got: list[dict] = []
    out = tmp_path / "fleet"

    def once():
        got.append(_fleet_probe(src, out, workers))

    benchmark.group = "fleet ingest: synthetic fleet"
    benchmark.pedantic(once, rounds=1, iterations=1)
    r = got[-1]
    assert (r["added"], r["jobs"], r["refused"], r["passed_over"]) == (written["runs"], n, 0, 0)
    summary = pau.read_fleet(out).jobs_summary()
    assert (summary["jobs"], summary["jobs_with_run"], summary["runs_without_job"]) == (n, written["runs"], 0)
    _FLEET_PEAKS[(n, workers)] = r["peak_rss_bytes"]
    benchmark.extra_info.update(jobs=n, runs=written["runs"], seconds=r["seconds"], peak_rss_bytes=r["peak_rss_bytes"])
    report_note(f"fleet ingest: synthetic fleet of {n} jobs ({written['runs']} runs), workers={workers}: "
                f"{written['runs'] / r['seconds']:.1f} runs/s ({r['seconds']:.2f} s), parent peak RSS "
                f"{r['peak_rss_bytes'] / 2**20:.0f} MiB (after imports {r['baseline_rss_bytes'] / 2**20:.0f} MiB)")
    small = _FLEET_PEAKS.get((J, workers))
    if size == "10J" and small is not None and workers > 1:
        assert r["peak_rss_bytes"] - small < FLEET_FLAT_BYTES, (
            f"parent peak RSS grew {(r['peak_rss_bytes'] - small) / 2**20:.1f} MiB from {J} to {n} jobs")


# ---------------------------------------------------------------------------
# real Kineto traces tiled to size: MB/s of uncompressed JSON per core

#: The real trace tiled: 8 ranks of PARAM's DLRM (tests/data/kineto, about 7.4 MB of
#: JSON); ``PAU_BENCH_KINETO_COPIES`` copies (default 8 × ``PAU_BENCH_SCALE``).
KINETO = Path(__file__).resolve().parents[1] / "tests" / "data" / "kineto" / "param-dlrm-8ranks"


def kineto_copies() -> int:
    raw = os.environ.get("PAU_BENCH_KINETO_COPIES")
    return max(2, int(round(8 * scale()))) if raw is None else int(raw)


def _tile(root: Path, copies: int) -> int:
    """``copies`` runs, each the real trace with its times moved by whole hours and its
    ids (pid, correlation) moved, as a user's archive of many runs would hold; returns
    the bytes of JSON written (uncompressed)."""
    import gzip

    docs = {f.name: json.loads(gzip.open(f).read()) for f in sorted(KINETO.glob("*.json.gz"))}
    total = 0
    for k in range(copies):
        shift = k * 3_600 * 10**6  # µs
        folder = root / f"job{k:04d}"
        folder.mkdir(parents=True)
        for name, doc in docs.items():
            events = []
            for ev in doc["traceEvents"]:
                ev = dict(ev)
                if isinstance(ev.get("ts"), (int, float)):
                    ev["ts"] = ev["ts"] + shift
                if isinstance(ev.get("pid"), int):
                    ev["pid"] = ev["pid"] + k
                args = ev.get("args")
                if isinstance(args, dict) and isinstance(args.get("correlation"), int):
                    ev["args"] = {**args, "correlation": args["correlation"] + k * 10**6}
                events.append(ev)
            raw = json.dumps({**doc, "traceEvents": events}).encode()
            total += len(raw)
            with gzip.open(folder / name, "wb", compresslevel=1) as f:
                f.write(raw)
    return total


@pytest.fixture(scope="module")
def tiled(tmp_path_factory) -> tuple[Path, int, int]:
    root = tmp_path_factory.mktemp("kineto-tiled")
    copies = kineto_copies()
    return root, copies, _tile(root, copies)


@pytest.mark.parametrize("workers", [1, 2])
def test_ingest_tiled_kineto(benchmark, report_note, tmp_path, tiled, workers):
    src, copies, nbytes = tiled
    got: list[dict] = []
    out = tmp_path / "fleet"

    def once():
        got.append(_probe(src, out, workers))

    benchmark.group = "fleet ingest: Kineto traces tiled"
    benchmark.pedantic(once, rounds=1, iterations=1)
    r = got[-1]
    assert (r["added"], r["refused"]) == (copies, 0)
    runs = pau.read_fleet(out).runs
    assert runs.num_rows == copies and len(set(runs["accountable_ns"].to_pylist())) == 1  # the same trace, moved
    mbps = nbytes / 1e6 / r["seconds"]
    per_cpu = nbytes / 1e6 / r["cpu_seconds"]
    benchmark.extra_info.update(copies=copies, json_bytes=nbytes, seconds=r["seconds"], mb_per_s=mbps,
                                mb_per_cpu_second=per_cpu)
    report_note(f"fleet ingest: {copies} copies of an 8-rank Kineto trace ({nbytes / 1e6:.0f} MB of JSON), "
                f"workers={workers}: {r['seconds']:.2f} s, {mbps:.1f} MB/s end to end, {per_cpu:.1f} MB per "
                f"CPU-second ({r['cpu_seconds']:.2f} CPU-s, the workers' included)")
