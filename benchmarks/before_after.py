"""The one-core figures of this checkout against another checkout's, in one run.

    python benchmarks/before_after.py OTHER_SRC [--pairs 2] [--data DIR]

OTHER_SRC is the ``src`` folder of another checkout of pau, built in place (``git worktree
add ../pau-base COMMIT && cd ../pau-base && python setup.py build_ext --inplace``). The inputs
are made once, by this checkout (the lifecycle benchmark's 10M step records and its two
training jobs, the economics benchmark's two serving logs, the streaming benchmark's
10M-event zstd Parquet file), and written as single-chunk Arrow files (the Parquet file as
it is), so both versions read the same tables. Then child processes, one per version
in turn (``--pairs`` times each: other, this, other, this, ...), each with the other's
``src`` first on ``PYTHONPATH`` or not, time what the targets are about, with the API
the two versions share:

- ``pau.core.attribute(records, threads=1)``: step records per second, median of 7 calls;
- ``pau.figures.economics.requests(log, busy=busy)``, both logs: requests per second, median of 3;
- ``pau.core.classify(events)`` and ``pau.core.ledger(events, lifecycle)`` on each job,
  timed in pairs (one right after the other, 21 pairs): the medians and the median ratio;
  then ``classify(events, threads=1)`` of each: events per second, median of 7;
- ``pau.core.classify_dataset(file)`` of the Parquet file: events per second, median of 7;
- ``pau.read(folder).ledger()`` of the 8-rank PARAM DLRM Kineto trace in ``tests/data``:
  MB of uncompressed JSON per second, median of 7.

Not collected by pytest: it takes about 4 minutes a pair and a built second checkout.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import feather

from bench_config import SEED
from pau import synth
from test_bench_economics import LOADS, serving_log

JOB_EVENTS = (2_000_000, 10_000_000)  # the lifecycle benchmark's two jobs
#: a real Kineto trace: the 8-rank PARAM DLRM step (its uncompressed JSON's MB give the reader's rate)
KINETO = pathlib.Path(__file__).resolve().parents[1] / "tests" / "data" / "kineto" / "param-dlrm-8ranks"
KINETO_MB = sum(len(gzip.decompress(p.read_bytes())) for p in KINETO.glob("*.json.gz")) / 1e6

CHILD = r"""
import json, sys, time
import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pau
import pau.core as pc
try:
    import pau.figures.economics as E
except ImportError:  # a checkout from before the subpackages (issue 39): the module was pau.economics
    import pau.economics as E

data = sys.argv[1]
def load(name):
    return feather.read_table(f"{data}/{name}.arrow", memory_map=False)

out = {"pau": pau.__file__}
rec = load("records")
n_steps = int(pa.compute.sum(pa.compute.equal(rec["record"], "step")).as_py())
pc.attribute(rec, threads=1)
ts = []
for _ in range(7):
    t = time.perf_counter(); pc.attribute(rec, threads=1); ts.append(time.perf_counter() - t)
out["attribute M step records/s"] = n_steps / np.median(ts) / 1e6
del rec
for load_name in sys.argv[2].split(","):
    req, busy = load(f"requests-{load_name}"), load(f"busy-{load_name}")
    E.requests(req.slice(0, 1000), busy=busy.slice(0, 10))
    ts = []
    for _ in range(3):
        t = time.perf_counter(); E.requests(req, busy=busy); ts.append(time.perf_counter() - t)
    out[f"requests ({load_name}) M/s"] = req.num_rows / np.median(ts) / 1e6
for n in sys.argv[3].split(","):
    ev, lc = load(f"events-{n}"), load(f"lifecycle-{n}")
    pc.classify(ev)
    pc.ledger(ev, lc)
    c, led, ratio = [], [], []
    for _ in range(21):
        t0 = time.perf_counter(); pc.classify(ev); t1 = time.perf_counter()
        pc.ledger(ev, lc); t2 = time.perf_counter()
        c.append(t1 - t0); led.append(t2 - t1); ratio.append((t2 - t1) / (t1 - t0))
    rows = f"{ev.num_rows / 1e6:.2f}M events"
    out[f"classify ms, {rows}"] = float(np.median(c)) * 1e3
    out[f"ledger ms, {rows}"] = float(np.median(led)) * 1e3
    out[f"ledger / classify (paired), {rows}"] = float(np.median(ratio))
    ts = []
    for _ in range(7):
        t = time.perf_counter(); pc.classify(ev, threads=1); ts.append(time.perf_counter() - t)
    out[f"classify(threads=1) M events/s, {rows}"] = ev.num_rows / np.median(ts) / 1e6
import pyarrow.parquet as pq
n_ev = pq.ParquetFile(f"{data}/events.parquet").metadata.num_rows
pc.classify_dataset(f"{data}/events.parquet")
ts = []
for _ in range(7):
    t = time.perf_counter(); pc.classify_dataset(f"{data}/events.parquet"); ts.append(time.perf_counter() - t)
out["classify_dataset M events/s (zstd Parquet)"] = n_ev / np.median(ts) / 1e6
kineto, mb = sys.argv[4], float(sys.argv[5])
pau.read(kineto).ledger()
ts = []
for _ in range(7):
    t = time.perf_counter(); pau.read(kineto).ledger(); ts.append(time.perf_counter() - t)
out["pau.read(Kineto).ledger() MB/s"] = mb / np.median(ts)
print(json.dumps(out))
"""


def _write(table: pa.Table, path: str) -> None:
    # one chunk (feather splits a table at 64K rows by default)
    feather.write_feather(table, path, compression="uncompressed", chunksize=1 << 30)


def rec_events() -> pa.Table:
    """The streaming benchmark's 10M-event training run (the dataset benchmark's shape)."""
    return synth.training_run_for_events(10_000_000, ranks=8, seed=SEED)


def make_inputs(root: str) -> None:
    """The benchmarks' inputs (seeded), one Arrow file each."""
    n = 10_000_000
    per_attempt = max(2, n // (1024 * 50))
    rec = synth.lifecycle_records(n, ranks=1024, attempts=50, seed=SEED,
                                  checkpoint_every=max(1, min(50, per_attempt // 2)))
    _write(rec, f"{root}/records.arrow")
    for events in JOB_EVENTS:
        steps = max(20, int(events / 8 / 150))
        job = synth.training_job(ranks=8, steps=steps, seed=SEED, mtbf_s=steps / 3, checkpoint_every=25,
                                 kernels_per_step=96)
        _write(job.events, f"{root}/events-{events}.arrow")
        _write(job.lifecycle, f"{root}/lifecycle-{events}.arrow")
    pq.write_table(rec_events(), f"{root}/events.parquet", compression="zstd", row_group_size=1 << 20)
    for name, gap in LOADS.items():
        req, busy = serving_log(n, gap)
        _write(req, f"{root}/requests-{name}.arrow")
        _write(busy, f"{root}/busy-{name}.arrow")


def measure(src: str | None, data: str) -> dict:
    """One child process on ``src``'s pau (None: this checkout's)."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    jobs = ",".join(str(e) for e in JOB_EVENTS)
    res = subprocess.run([sys.executable, "-c", CHILD, data, ",".join(LOADS), jobs, str(KINETO),
                          f"{KINETO_MB:.3f}"], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("other_src", help="the src folder of the other checkout, built in place")
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--data", help="a folder for the inputs (made when empty; default: a temporary one)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data or tmp
        if not os.path.exists(f"{data}/records.arrow"):
            os.makedirs(data, exist_ok=True)
            make_inputs(data)
        runs: dict[str, list[dict]] = {"other": [], "this": []}
        for _ in range(args.pairs):
            for which, src in (("other", args.other_src), ("this", None)):
                load = os.getloadavg()[0]
                r = measure(src, data)
                r["load"] = load
                runs[which].append(r)
                print(which, json.dumps(r), flush=True)
    keys = [k for k in runs["this"][0] if k not in ("pau", "load")]
    print(f"\n| figure | other ({args.other_src}) | this checkout |\n|---|---|---|")
    for k in keys:
        cells = [" / ".join(f"{r[k]:.2f}" for r in runs[w]) for w in ("other", "this")]
        print(f"| {k} | {cells[0]} | {cells[1]} |")
    loads = [f"{r['load']:.2f}" for w in ("other", "this") for r in runs[w]]
    print(f"\nload average (1 min) at the start of each child: {', '.join(loads)}")


if __name__ == "__main__":
    main()
