"""Issue 41's done-when: a change planted in a generated fleet (the goodput of one cluster
drops from 0.90 to 0.80 in week 20) is found by ``fleet.changes`` within one period, with
the accelerator-hours it cost within 1 %. The archive is written directly (runs table and
hourly cells, as ``pau ingest`` lays them out): two clusters, 52 ISO weeks, 20 runs of 24
hours on 8 accelerators per cluster and week, each run's productive share drawn around its
cluster's level (sd 0.01), the rest rolled back."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import pau
from pau.fleet import CELLS_SCHEMA, RUNS_SCHEMA

H = 3_600 * 10**9
W = 7 * 24 * H
T0 = 1_704_067_200 * 10**9  # 2024-01-01 00:00 UTC, a Monday: week w starts at T0 + w * W


def write(path, weeks=52, per_week=20, drop_week=20, seed=0):
    rng = np.random.default_rng(seed)
    for d in ("runs", "cells", "store", "staging", ".tmp"):
        os.makedirs(os.path.join(path, d), exist_ok=True)
    with open(os.path.join(path, "pau-fleet.json"), "w") as f:
        json.dump({"pau_fleet_layout": 1}, f)
    k = 0
    for w in range(weeks):
        rows = []; cells = []
        for cl in ("a", "b"):
            level = 0.80 if (cl == "a" and w >= drop_week) else 0.90
            for i in range(per_week):
                key = f"{k:032x}"; k += 1
                start = T0 + w * W + int(rng.integers(0, 7 * 24 - 24)) * H
                p = float(np.clip(level + rng.normal(0, 0.01), 0, 1))
                rows.append((key, cl, start))
                prod = int(round(p * 8 * H))
                for h in range(24):
                    cells.append((key, start + h * H, "productive", prod))
                    cells.append((key, start + h * H, "rolled_back", 8 * H - prod))
        m = len(rows)
        cols = {f.name: pa.nulls(m, f.type) for f in RUNS_SCHEMA}
        cols.update(run=pa.array([r[0] for r in rows]), cluster=pa.array([r[1] for r in rows]),
                    accelerator_type=pa.array(["H100"] * m), team=pa.array(["t"] * m), accelerators=pa.array([8] * m),
                    start_ns=pa.array([r[2] for r in rows]), end_ns=pa.array([r[2] + 24 * H for r in rows]),
                    failures=pa.array([0] * m), not_recovered=pa.array([0] * m))
        pq.write_table(pa.table(cols, schema=RUNS_SCHEMA), os.path.join(path, "runs", f"batch-{w:09d}.parquet"))
        c = list(zip(*cells))
        pq.write_table(pa.table({"run": pa.array(c[0]), "hour_ns": pa.array(c[1]), "state": pa.array(c[2]),
                                 "activity": pa.array(["unknown"] * len(c[0])), "duration_ns": pa.array(c[3])},
                                schema=CELLS_SCHEMA), os.path.join(path, "cells", f"batch-{w:09d}.parquet"))


def test_a_planted_drop_is_found_within_one_period_and_costed_within_one_percent(tmp_path):
    path = str(tmp_path / "fleet")
    write(path)
    fleet = pau.read_fleet(path)
    changes = fleet.changes("goodput", by="cluster", every="1w").to_pylist()
    a = [c for c in changes if c["cluster"] == "a"]
    assert len(a) == 1
    week = (a[0]["period"] - T0) // W
    assert abs(week - 20) <= 1
    assert abs(a[0]["level_before"] - 0.90) < 0.005 and abs(a[0]["level_after"] - 0.80) < 0.005
    # planted: -0.10 of the allocated hours of the 32 weeks after the drop (20 runs x 24 h x 8)
    truth = -0.10 * 32 * 20 * 24 * 8
    assert abs(a[0]["accelerator_hours"] - truth) <= 0.01 * abs(truth)
    # the steady cluster: nothing of the planted size (PELT's default penalty may mark
    # noise-sized shifts: docs/fleet.md gives the false-alarm shares)
    assert all(abs(c["level_after"] - c["level_before"]) < 0.01 for c in changes if c["cluster"] == "b")
