"""Reading PyTorch profiler (Kineto) traces: pau against Holistic Trace Analysis 0.5.0.

* ``test_read_and_classify_sample``: ``pau.readers.kineto.read_kineto`` + the per-rank
  breakdown (``pau.core.classify``) on the shared samples, answers asserted.
* ``test_against_hta``: one trace file made of back-to-back copies of the
  ``hta-nccl_parser_config`` sample (times shifted, ids renumbered: a longer run of the
  same job), read by both tools in fresh processes, side by side:

  - pau: ``read_kineto`` + ``pau.core.classify`` (the per-rank breakdown), and
    ``pau.compat.hta.temporal_breakdown`` (HTA's own figures, computed by pau);
  - HTA 0.5.0: ``TraceAnalysis(trace_dir=...)`` (its load) + ``get_temporal_breakdown``.

  Each tool's wall time (in process, after its imports: pyarrow's lazy import of
  pandas included, as HTA imports pandas too) and peak RSS (``VmHWM``, the process's
  whole high-water mark, imports included; the baseline after imports is reported
  too) are measured, and pau's HTA-compatible figures must equal HTA's.

HTA is not a dependency of pau: install it in a separate environment and point
``PAU_HTA_PYTHON`` at its interpreter::

    python3 -m venv hta-venv
    hta-venv/bin/pip install HolisticTraceAnalysis==0.5.0
    export PAU_HTA_PYTHON=$PWD/hta-venv/bin/python

Without it the comparison is skipped with a message. ``PAU_BENCH_KINETO_COPIES``
(default 10, about 84 MB of JSON and 405,000 events) sets the size of the trace;
``PAU_BENCH_KINETO_REPEAT`` (default 2) how many fresh processes of each tool run (the
best time and the lowest peak are kept, the same for both tools);
``PAU_BENCH_KINETO_STRICT=1`` also asserts the targets of issue 4 (at least 30x
faster, at most a quarter of HTA's peak memory), which depend on the machine's load.
"""

from __future__ import annotations

import gzip
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

import pau.core
from pau.readers.kineto import read_kineto

# The tests' data roots (tests/shared_data.py): $PAU_TEST_DATA, ../shared/data, tests/data.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from shared_data import shared  # noqa: E402

HTA_PYTHON = os.environ.get("PAU_HTA_PYTHON", "")


def sample(name: str) -> pathlib.Path:
    return shared("kineto", *name.split("/"))


# --------------------------------------------------------------------------- samples

#: sample -> {rank: (compute_ns, idle_ns)} of pau.core.classify on read_kineto's events
SAMPLE_ANSWERS = {
    "hta-nccl_parser_config": {0: (115655847, 503050991)},
    "hta-ns_resolution_trace": {0: (468153602, 7574738)},
    "hta-trace_filter": {0: (210320000, 675191000), 1: (271973000, 651136000)},
    "pytorch-kineto/resnet50_num_workers_0": {0: (635237000, 642678000)},
}


def _read_and_classify(path):
    trace = read_kineto(path)
    return pau.core.classify(trace.events)


@pytest.mark.parametrize("name", sorted(SAMPLE_ANSWERS))
def test_read_and_classify_sample(benchmark, name, report_note):
    path = sample(name)
    benchmark.group = "read_kineto + classify (shared samples)"
    out = benchmark(_read_and_classify, path)
    got = {}
    for r in out.to_pylist():
        got.setdefault(r["rank"], {})[r["activity"]] = r["duration_ns"]
    assert {k: (v["compute"], v["idle"]) for k, v in got.items()} == SAMPLE_ANSWERS[name]
    stats = getattr(benchmark, "stats", None)
    if stats is not None:
        report_note(f"read_kineto + classify {name}: median {stats.stats.median * 1e3:.1f} ms")


# --------------------------------------------------------------------------- against HTA


def replicate_trace(src: pathlib.Path, dst: pathlib.Path, copies: int) -> int:
    """Write ``copies`` back-to-back copies of the Kineto trace ``src`` as one trace
    (times shifted by the trace's length, correlation/flow ids and step numbers
    renumbered). Returns the number of events written."""
    with gzip.open(src, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    timed = [e for e in events if e.get("ph") == "X" and e.get("cat") != "Trace"]
    t0 = min(float(e["ts"]) for e in timed)
    t1 = max(float(e["ts"]) + float(e["dur"]) for e in timed)
    span = int(t1 - t0) + 1000
    step = re.compile(r"^ProfilerStep#(\d+)$")
    numbers = [int(m.group(1)) for e in timed if (m := step.match(e.get("name", "")))]
    nsteps = max(numbers) - min(numbers) + 1 if numbers else 0
    head = json.dumps({k: v for k, v in doc.items() if k != "traceEvents"})[:-1]
    written = 0
    with open(dst, "w") as out:
        out.write(head + ', "traceEvents": [\n')
        for k in range(copies):
            for e in events:
                if k and e.get("ph") == "M":
                    continue
                e = dict(e)
                if isinstance(e.get("ts"), (int, float)):
                    e["ts"] = round(e["ts"] + k * span, 3)
                if k and isinstance(e.get("args"), dict):
                    a = dict(e["args"])
                    for key in ("correlation", "External id"):
                        if isinstance(a.get(key), int) and a[key] > 0:
                            a[key] += k * 10_000_000
                    e["args"] = a
                if k and e.get("ph") in ("s", "f") and isinstance(e.get("id"), int):
                    e["id"] += k * 10_000_000
                if m := step.match(e.get("name") or ""):
                    e["name"] = f"ProfilerStep#{int(m.group(1)) + k * nsteps}"
                out.write(("" if written == 0 else ",\n") + json.dumps(e))
                written += 1
        out.write("\n]}\n")
    return written


_HWM = '''
def hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
'''

# pyarrow imports pandas (when installed) on the first pa.array() of a process: that
# is an import, done before the clock starts, like HTA's own import of pandas.
_WARM = '''
import pyarrow as pa
pa.array([0])
'''

PAU_PROBE = _HWM + _WARM + '''
import json, sys, time
import pau.core
from pau.readers.kineto import read_kineto
base = hwm()
t = time.perf_counter()
trace = read_kineto(sys.argv[1])
out = pau.core.classify(trace.events)
seconds = time.perf_counter() - t
figures = {r["activity"]: r["duration_ns"] for r in out.to_pylist()}
print(json.dumps({"seconds": seconds, "baseline_rss_bytes": base, "peak_rss_bytes": hwm(),
                  "events": trace.events.num_rows, "figures": figures}))
'''

PAU_HTA_PROBE = _HWM + _WARM + '''
import json, sys, time
from pau.compat import hta
base = hwm()
t = time.perf_counter()
df = hta.temporal_breakdown(sys.argv[1])
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "baseline_rss_bytes": base, "peak_rss_bytes": hwm(),
                  "temporal": json.loads(df.to_json(orient="records"))}))
'''

HTA_PROBE = _HWM + '''
import json, logging, sys, time, warnings
warnings.simplefilter("ignore")
from hta.trace_analysis import TraceAnalysis
logging.disable(logging.CRITICAL)
base = hwm()
t = time.perf_counter()
ta = TraceAnalysis(trace_dir=sys.argv[1])
df = ta.get_temporal_breakdown(visualize=False)
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "baseline_rss_bytes": base, "peak_rss_bytes": hwm(),
                  "temporal": json.loads(df.to_json(orient="records"))}))
'''


def _probe(python: str, code: str, path: pathlib.Path) -> dict:
    """Best of PAU_BENCH_KINETO_REPEAT fresh processes (fastest time, lowest peak)."""
    best: dict = {}
    for _ in range(int(os.environ.get("PAU_BENCH_KINETO_REPEAT", "2"))):
        res = subprocess.run([python, "-c", code, str(path)], capture_output=True, text=True, timeout=3600)
        if res.returncode != 0:
            raise AssertionError(f"{python} probe failed:\n{res.stderr[-3000:]}")
        run = json.loads(res.stdout.strip().splitlines()[-1])
        if not best:
            best = run
        else:
            assert {k: v for k, v in run.items() if "seconds" not in k and "rss" not in k} == \
                {k: v for k, v in best.items() if "seconds" not in k and "rss" not in k}
            best["seconds"] = min(best["seconds"], run["seconds"])
            best["peak_rss_bytes"] = min(best["peak_rss_bytes"], run["peak_rss_bytes"])
    return best


@pytest.fixture(scope="session")
def big_json(tmp_path_factory):
    copies = int(os.environ.get("PAU_BENCH_KINETO_COPIES", "10"))
    src = sample("hta-nccl_parser_config") / "nccl_data.json.gz"
    folder = tmp_path_factory.mktemp("kineto-big-json")
    events = replicate_trace(src, folder / "rank-0.json", copies)
    return folder, events


@pytest.fixture(scope="session", params=["json", "json.gz"])
def big_trace(request, big_json, tmp_path_factory):
    """The big trace as plain JSON, or gzip (level 1, as torch.profiler's handler writes
    a .gz when asked), each alone in a folder (HTA reads a folder)."""
    folder, events = big_json
    if request.param == "json":
        return folder, events, "JSON"
    gz = tmp_path_factory.mktemp("kineto-big-gz")
    with open(folder / "rank-0.json", "rb") as f, gzip.open(gz / "rank-0.json.gz", "wb", compresslevel=1) as out:
        while block := f.read(1 << 24):
            out.write(block)
    return gz, events, "gzip JSON"


def _isal() -> bool:
    from pau.readers import _kineto_parse
    return _kineto_parse._fast_gzip is not None


def _mb(x: int) -> str:
    return f"{x / 2**20:,.0f} MB"


def test_against_hta(big_trace, report_note):
    if not HTA_PYTHON or not os.path.exists(HTA_PYTHON):
        where = f"no interpreter at {HTA_PYTHON}" if HTA_PYTHON else "PAU_HTA_PYTHON is not set"
        pytest.skip(f"HolisticTraceAnalysis 0.5.0 not found: {where} (see this module's docstring "
                    "to install it in a separate venv)")
    folder, n, fmt = big_trace
    size = sum(p.stat().st_size for p in folder.iterdir())
    ours = _probe(sys.executable, PAU_PROBE, folder)
    compat = _probe(sys.executable, PAU_HTA_PROBE, folder)
    theirs = _probe(HTA_PYTHON, HTA_PROBE, folder)

    # The answers: pau's HTA-compatible figures are HTA's, exactly.
    want = [{k.replace("(us)", "_us"): v for k, v in row.items()} for row in theirs["temporal"]]
    assert compat["temporal"] == want
    # pau's own breakdown conserves the span and sees every device event once.
    assert ours["events"] > 0 and sum(ours["figures"].values()) > 0

    speed = theirs["seconds"] / ours["seconds"]
    memory = ours["peak_rss_bytes"] / theirs["peak_rss_bytes"]
    lines = [
        f"Kineto trace of {n:,} events, {_mb(size)} of {fmt} (PAU_BENCH_KINETO_COPIES copies of nccl_data"
        f"{', inflated with ISA-L' if fmt != 'JSON' and _isal() else ''}):",
        f"  pau read_kineto + classify: {ours['seconds']:.2f} s, peak RSS {_mb(ours['peak_rss_bytes'])} "
        f"(after imports {_mb(ours['baseline_rss_bytes'])})",
        f"  pau.compat.hta.temporal_breakdown: {compat['seconds']:.2f} s, peak RSS "
        f"{_mb(compat['peak_rss_bytes'])}",
        f"  HTA 0.5.0 load + temporal breakdown: {theirs['seconds']:.2f} s, peak RSS "
        f"{_mb(theirs['peak_rss_bytes'])} (after imports {_mb(theirs['baseline_rss_bytes'])})",
        f"  pau is {speed:.0f}x faster with {memory:.1%} of HTA's peak memory "
        f"({theirs['seconds'] / compat['seconds']:.0f}x for the HTA-compatible figures)",
    ]
    for line in lines:
        report_note(line)
    print("\n".join(lines))
    if os.environ.get("PAU_BENCH_KINETO_STRICT") == "1":
        assert speed >= 30, lines
        assert memory <= 0.25, lines
