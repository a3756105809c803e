"""A billion-event archive classified end to end, in bounded memory (issue: scale).

    python benchmarks/billion.py DIR [--events 1000000000] [--ranks 8] [--workers 2]

Writes (once; skipped when DIR already holds it) a synthetic run in pau's archive layout,
one file per rank (`DIR/job=job0/rank=R/part-0.parquet`), streaming chunk by chunk from
`pau.synth.iter_training_run` with the layout's encodings; then runs
`pau.core.classify_dataset(DIR)` in a child process and prints wall time, events per second
(per core) and the child's peak RSS (VmHWM). Not collected by pytest: it needs several GB
of disk and minutes of time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import pyarrow.parquet as pq

from pau.engine import io
from pau import synth

CHILD = r"""
import json, sys, time
import pau.core as core
t0 = time.perf_counter()
out = core.classify_dataset(sys.argv[1], workers=int(sys.argv[2]), progress=False)
dt = time.perf_counter() - t0
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"seconds": dt, "rows": int(out.schema.metadata[b"pau.rows"]), "peak_kb": hwm,
                  "span_ns": int(sum(out["duration_ns"].to_pylist()))}))
"""


def write(root: str, n_events: int, ranks: int, seed: int = 0) -> int:
    steps = synth.steps_for_events(n_events, ranks=ranks)
    writers = {}
    rows = 0
    t0 = time.perf_counter()
    try:
        for chunk in synth.iter_training_run(ranks=ranks, steps=steps, seed=seed, chunk_events=10_000_000):
            rank = chunk.column("rank").to_numpy()
            cuts = np.flatnonzero(np.r_[True, rank[1:] != rank[:-1], True])
            for a, b in zip(cuts[:-1], cuts[1:]):
                r = int(rank[a])
                part = chunk.slice(a, b - a).drop_columns(["rank"])  # the rank=R folder names it
                if r not in writers:
                    d = os.path.join(root, "job=job0", f"rank={r}")
                    os.makedirs(d, exist_ok=True)
                    meta = dict(part.schema.metadata or {})
                    meta[io._LAYOUT_KEY] = str(io.LAYOUT_VERSION).encode()
                    meta[io._RANK_NOT_NULL] = b"1"
                    schema = part.schema.with_metadata(meta)
                    writers[r] = (pq.ParquetWriter(os.path.join(d, "part-0.parquet"), schema,
                                                   **io._layout_options(schema, "snappy")), meta)
                w, meta = writers[r]
                w.write_table(part.replace_schema_metadata(meta), row_group_size=1_000_000)
                rows += part.num_rows
            print(f"\rwritten {rows:,} rows, {time.perf_counter() - t0:.0f} s", end="", file=sys.stderr)
    finally:
        for w, _ in writers.values():
            w.close()
    print(file=sys.stderr)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--events", type=int, default=1_000_000_000)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.root, "job=job0")):
        write(args.root, args.events, args.ranks)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(args.root) for f in fs)
    res = json.loads(subprocess.run([sys.executable, "-c", CHILD, args.root, str(args.workers)],
                                    capture_output=True, text=True, check=True).stdout)
    eps = res["rows"] / res["seconds"]
    print(f"{res['rows']:,} events ({size / 1e9:.1f} GB on disk) classified in {res['seconds']:.1f} s: "
          f"{eps / 1e6:.0f} M events/s ({eps / 1e6 / args.workers:.0f} M/s per worker), "
          f"peak RSS {res['peak_kb'] / 1024:.0f} MB")


if __name__ == "__main__":
    main()
