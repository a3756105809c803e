"""Request accounting with busy-time attribution (issue 5: economics).

``pau.figures.economics.requests`` end to end on ``10M`` synthetic requests (scaled by
``PAU_BENCH_SCALE``) with ``busy`` and the default weights; target >= 5M requests
per second on one core. Measure with::

    python -m pytest benchmarks -p no:cacheprovider -k economics --benchmark-enable

With ``--benchmark-disable`` (CI) nothing is timed, so the log is 200k requests and
the answers are still checked.

The serving log (seeded, built untimed by :func:`serving_log`): 10,000 requests per
replica, Poisson arrivals every 0.2 s (busy: about 10 requests in flight per replica)
or every 1 s (light: about 2) on average, TTFT lognormal (median 80 ms), decode
lognormal (median 1.5 s). The attribution keeps a heap of the phases in flight
(O(n log c) for c in flight; it used to split every piece among all of them), so both are timed;
rows in arrival order across replicas (as a serving log is written); status 97 % ok,
1 % error, 0.5 % timeout, 1 % rejected, 0.5 % cancelled. Busy intervals: each
replica's accelerator is busy 900 ms out of every second over the whole run.

The answer is asserted: attributed + idle == busy to the ns (and per replica), outcome
counts equal a direct numpy count, and rejected requests hold no accelerator time.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import pau.figures.economics as E
from bench_config import SEED, events_label, scaled, timed

PER_REPLICA = 10_000
STATUSES = ("ok", "error", "timeout", "rejected", "cancelled")
STATUS_P = (0.97, 0.01, 0.005, 0.01, 0.005)
BUSY_PERIOD_NS = 1_000_000_000
BUSY_NS = 900_000_000


def serving_log(n: int, gap_s: float = 0.2, seed: int = SEED) -> tuple[pa.Table, pa.Table]:
    """``(requests, busy)`` tables of ``n`` synthetic requests, one every ``gap_s``
    seconds on average per replica (see the module doc)."""
    rng = np.random.default_rng(seed)
    replicas = max(1, n // PER_REPLICA)
    rep = rng.integers(0, replicas, n).astype(np.int32)
    order = np.argsort(rep, kind="stable")
    counts = np.bincount(rep, minlength=replicas)
    gaps = rng.exponential(gap_s * 1e9, n).astype(np.int64) + 1
    # arrivals: a Poisson process per replica (cumulative gaps restarted per replica)
    cum = np.cumsum(gaps)
    first = np.repeat(np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    base = np.where(first > 0, cum[first - 1], 0)
    arrival = np.empty(n, np.int64)
    arrival[order] = cum - base
    ttft = (rng.lognormal(np.log(80e6), 0.5, n)).astype(np.int64)
    decode = (rng.lognormal(np.log(1.5e9), 0.6, n)).astype(np.int64)
    status_code = rng.choice(len(STATUSES), n, p=STATUS_P).astype(np.int8)
    first_token = arrival + ttft
    end = first_token + decode
    input_tokens = rng.lognormal(np.log(500), 1.0, n).astype(np.int64)
    output_tokens = np.maximum(decode // 20_000_000, 1)
    rejected = status_code == 3
    no_ft = rejected | ((status_code == 1) & (rng.random(n) < 0.5))
    # rows in arrival order across replicas
    row = np.argsort(arrival, kind="stable")
    status = pa.DictionaryArray.from_arrays(pa.array(status_code[row]), pa.array(STATUSES))
    req = pa.table({
        "request_id": pa.array(np.arange(n, dtype=np.int64)),
        "replica": pa.array(rep[row]),
        "arrival_ns": pa.array(arrival[row]),
        "first_token_ns": pa.array(first_token[row], mask=no_ft[row]),
        "end_ns": pa.array(end[row], mask=rejected[row]),
        "input_tokens": pa.array(input_tokens[row]),
        "output_tokens": pa.array(output_tokens[row]),
        "status": status,
    })
    horizon = int(end.max()) + BUSY_PERIOD_NS
    k = horizon // BUSY_PERIOD_NS + 1
    starts = np.arange(k, dtype=np.int64) * BUSY_PERIOD_NS
    busy = pa.table({
        "replica": pa.array(np.repeat(np.arange(replicas, dtype=np.int32), k)),
        "start_ns": pa.array(np.tile(starts, replicas)),
        "end_ns": pa.array(np.tile(starts + BUSY_NS, replicas)),
    })
    return req, busy


LOADS = {"busy": 0.2, "light": 1.0}  # mean seconds between arrivals on a replica


@pytest.fixture(scope="module", params=list(LOADS))
def log(request):
    n = scaled(10_000_000 if timed(request.config) else 200_000)
    return request.param, serving_log(n, LOADS[request.param])


def test_requests_with_attribution(benchmark, log, report_note):
    load, (req, busy) = log
    n = req.num_rows
    benchmark.group = f"requests() with busy, {events_label(n)} requests"
    E.requests(req.slice(0, 1000), busy=busy.slice(0, 10))  # warm caches, untimed
    out = benchmark(E.requests, req, busy=busy)
    s = out.summary()
    # conservation, exact: every busy ns is attributed to a request or idle
    busy_ns = int((np.asarray(busy["end_ns"]) - np.asarray(busy["start_ns"])).sum())
    attributed = int(np.asarray(out.table["attributed_ns"]).sum())
    idle = int(np.asarray(out.busy["idle_ns"]).sum())
    assert attributed + idle == busy_ns == s["busy_ns"]
    assert s["productive_ns"] + s["late_ns"] + s["failed_ns"] + s["cancelled_ns"] + s["idle_ns"] == busy_ns
    r = out.replicas
    parts = sum(np.asarray(r[k]) for k in ("accepted_ns", "late_ns", "failed_ns", "cancelled_ns", "idle_ns"))
    assert (parts == np.asarray(r["busy_ns"])).all()  # conservation per replica
    assert (np.asarray(out.table["attributed_prefill_ns"]) + np.asarray(out.table["attributed_decode_ns"])
            == np.asarray(out.table["attributed_ns"])).all()
    # outcomes (no SLO): ok -> accepted, error/timeout -> failed, straight from status
    code = np.asarray(req["status"].combine_chunks().indices)
    want = {"accepted": (code == 0).sum(), "late": 0, "failed": ((code == 1) | (code == 2)).sum(),
            "rejected": (code == 3).sum(), "cancelled": (code == 4).sum()}
    assert {o: s[o] for o in E.OUTCOMES} == want
    att = np.asarray(out.table["attributed_ns"])
    assert (att[code == 3] == 0).all() and attributed > busy_ns // 2
    if benchmark.stats:
        med = benchmark.stats.stats.median
        ran = np.asarray(out.table["e2e_ns"].fill_null(0)).sum()
        in_flight = ran / (busy_ns / BUSY_NS * BUSY_PERIOD_NS)
        report_note(f"requests() with busy ({load}, {in_flight:.1f} in flight): {n:,} requests in "
                    f"{med * 1e3:.0f} ms (median) = {n / med / 1e6:.2f} M requests/s")
