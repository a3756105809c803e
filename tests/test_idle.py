"""Idle by cause (pau.figures.idle): hand-worked timelines, the reference twin
(tests/reference_idle.py) under Hypothesis, every real sample and generated runs, and
what the Kineto and Nsight readers give it (launch_ns, the host table)."""

from __future__ import annotations

import gzip
import json
import math
import shutil
import sqlite3

import numpy as np
import pyarrow as pa
import pytest
from depth import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pau
import pau.core as core
import reference_idle as ref
from pau import synth
from pau.readers.devices import sync_call
from pau.errors import InvalidRowError, OptionError, SchemaError
from pau.figures.idle import (
    CAUSES, host_of_lifecycle, host_wait_intervals, idle_by_cause, idle_cause_intervals,
)
from pau.readers.kineto import HOST_SCHEMA, read_kineto
from pau.readers.nsys import read_nsys
from shared_data import shared

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
INT64_MAX = 2**63 - 1


def _events(rows, launch=True):
    """rows: (rank, start, end, launch or None)."""
    cols = {"rank": pa.array([r[0] for r in rows], pa.int32()),
            "start_ns": pa.array([r[1] for r in rows], pa.int64()),
            "end_ns": pa.array([r[2] for r in rows], pa.int64()),
            "kind": pa.array(["compute"] * len(rows), pa.string())}
    if launch:
        cols["launch_ns"] = pa.array([r[3] for r in rows], pa.int64())
    return pa.table(cols)


def _host(rows):
    return pa.table({"rank": pa.array([r[0] for r in rows], pa.int32()),
                     "start_ns": pa.array([r[1] for r in rows], pa.int64()),
                     "end_ns": pa.array([r[2] for r in rows], pa.int64()),
                     "cause": pa.array([r[3] for r in rows], pa.string())})


def _by_group(table):
    """{(rank, window or None): {cause: ns}}, groups that are all zero left out."""
    out: dict = {}
    has_window = "window" in table.column_names
    for row in table.to_pylist():
        key = (row["rank"], row["window"] if has_window else None)
        out.setdefault(key, dict.fromkeys(CAUSES, 0))[row["cause"]] += row["duration_ns"]
    return {k: v for k, v in out.items() if any(v.values())}


# ---------------------------------------------------------------------------
# hand-worked


# Rank 0 over [0, 100): A [10,20) launched at 2, B [40,50) at 30, C [60,70) at 45 (before
# the device drained at 50), D [80,90) with no launch; sync_wait [25,35), data_wait [85,95).
HAND = [(0, 10, 20, 2), (0, 40, 50, 30), (0, 60, 70, 45), (0, 80, 90, None)]
HAND_HOST = [(0, 25, 35, "sync_wait"), (0, 85, 95, "data_wait")]
SPAN = pa.table({"rank": pa.array([0], pa.int32()), "start_ns": [0], "end_ns": [100]})


def test_hand_worked_split():
    res = idle_by_cause(_events(HAND), _host(HAND_HOST), span=SPAN)
    # gap [0,10): host_wait [0,2), other [2,10). gap [20,40): host_wait [20,25), sync [25,35)
    # (it outranks the host wait [20,30)), other [35,40). gap [50,60): C was launched at 45,
    # before the drain: other. gap [70,80): D has no launch: other. tail [90,100): data
    # [90,95) (under D [85,90) the device is busy), other [95,100).
    assert res.summary == {"data_wait": 5, "sync_wait": 10, "host_wait": 2 + 5,
                           "idle.other": 8 + 5 + 10 + 10 + 5}
    assert sum(res.summary.values()) == core.ledger(_events(HAND), span=SPAN).activity_ns()["idle"] == 60
    assert res.table.column_names == ["rank", "cause", "duration_ns"]
    assert res.table["cause"].to_pylist() == list(CAUSES)
    assert res.table["duration_ns"].to_pylist() == [5, 10, 7, 38]


def test_hand_worked_split_per_window():
    res = idle_by_cause(_events(HAND), _host(HAND_HOST), span=SPAN, windows=50)
    got = _by_group(res.table)
    assert got == {(0, 0): {"data_wait": 0, "sync_wait": 10, "host_wait": 7, "idle.other": 13},
                   (0, 50): {"data_wait": 5, "sync_wait": 0, "host_wait": 0, "idle.other": 25}}
    led = core.ledger(_events(HAND), span=SPAN, windows=50)
    assert sum(res.summary.values()) == led.activity_ns()["idle"]


def test_without_launches_or_host_everything_is_other():
    res = idle_by_cause(_events(HAND, launch=False), span=SPAN)
    assert res.summary == {"data_wait": 0, "sync_wait": 0, "host_wait": 0, "idle.other": 60}


def test_host_wait_takes_the_earliest_launch_of_the_events_that_close_the_gap():
    # Two events start at 40 after a drain at 20; launched at 35 and 25: the device waited
    # for the host until 25. A zero-length event at 30 neither ends nor closes the gap.
    rows = [(0, 0, 20, None), (0, 40, 50, 35), (0, 40, 45, 25), (0, 30, 30, 29)]
    r, s, e = host_wait_intervals(*(np.array(c) for c in zip(*[(a, b, c, d or 0) for a, b, c, d in rows])),
                                  np.array([d is not None for *_, d in rows]), np.array([0]), np.array([0]))
    assert (r.tolist(), s.tolist(), e.tolist()) == ([0], [20], [25])
    # A launch after the event's start (another clock): the whole gap is host wait.
    r, s, e = host_wait_intervals(np.array([0, 0]), np.array([0, 40]), np.array([20, 50]), np.array([0, 47]),
                                  np.array([False, True]), np.array([0]), np.array([0]))
    assert (s.tolist(), e.tolist()) == ([20], [40])


def test_the_gap_before_the_first_event_starts_at_the_span():
    # span [-100, 100) (negative times are times): first event at 0 launched at -40.
    span = pa.table({"rank": pa.array([3], pa.int32()), "start_ns": [-100], "end_ns": [100]})
    res = idle_by_cause(_events([(3, 0, 50, -40)]), span=span)
    assert res.summary == {"data_wait": 0, "sync_wait": 0, "host_wait": 60, "idle.other": 40 + 50}


def test_host_rank_minus_one_is_every_rank_and_unknown_ranks_wait_for_nothing():
    ev = _events([(0, 0, 10, None), (0, 20, 30, None), (1, 0, 10, None), (1, 20, 30, None)])
    res = idle_by_cause(ev, _host([(-1, 12, 16, "data_wait"), (1, 10, 20, "sync_wait"),
                                   (7, 0, 30, "sync_wait")]))
    assert _by_group(res.table) == {(0, None): {"data_wait": 4, "sync_wait": 0, "host_wait": 0, "idle.other": 6},
                                    (1, None): {"data_wait": 4, "sync_wait": 6, "host_wait": 0, "idle.other": 0}}


def _two_attempts() -> pa.Table:
    """Accountable [0, 40) (attempt 0, preempted) and [60, 100) (attempt 1, one step);
    a data_wait phase [30, 40) on every rank."""
    return pa.table({
        "record": ["accountable", "accountable", "attempt", "attempt", "step", "phase"],
        "attempt": pa.array([None, None, 0, 1, 1, 0], pa.int32()),
        "rank": pa.array([0, 0, 0, 0, 0, -1], pa.int32()),
        "start_ns": [0, 60, 0, 60, 60, 30], "end_ns": [40, 100, 40, 100, 100, 40],
        "step": pa.array([None, None, None, None, 1, None], pa.int64()),
        "kind": [None, None, "preempted", "completed", None, "data_wait"]})


def test_lifecycle_ledger_splits_the_idle_inside_accountable_time():
    # Accountable [0, 40) (attempt 0, preempted) and [60, 100) (attempt 1): the ledger
    # does not count [40, 60), nor does the split. A data_wait phase [30, 40).
    lc = _two_attempts()
    ev = _events(HAND)
    led = core.ledger(ev, lc)
    assert led.activity_ns()["idle"] == 10 + 20 + 10 + 10   # [0,10) [20,40) [70,80) [90,100)
    res = idle_by_cause(ev, _host(HAND_HOST), lifecycle=lc, ledger=led)
    assert res.table.column_names == ["rank", "cause", "duration_ns"]
    # [0,2) host, [2,10) other; [20,25) host, [25,30) sync, [30,40) data (the phase);
    # [70,80) other; [90,95) data, [95,100) other
    assert res.summary == {"data_wait": 10 + 5, "sync_wait": 5, "host_wait": 2 + 5, "idle.other": 8 + 10 + 5}
    assert sum(res.summary.values()) == led.activity_ns()["idle"]


def test_host_of_lifecycle():
    lc = pa.table({"record": ["phase", "phase", "step"], "rank": pa.array([2, -1, 0], pa.int32()),
                   "start_ns": [5, 7, 0], "end_ns": pa.array([9, None, 3], pa.int64()),
                   "kind": ["data_wait", "data_wait", None]})
    h = host_of_lifecycle(lc)
    assert h.schema == HOST_SCHEMA
    assert h.to_pylist() == [{"rank": 2, "start_ns": 5, "end_ns": 9, "cause": "data_wait"},
                             {"rank": -1, "start_ns": 7, "end_ns": INT64_MAX, "cause": "data_wait"}]


def test_bad_input_names_table_column_and_row():
    ev = _events(HAND)
    with pytest.raises(InvalidRowError, match=r"host.*end_ns.*row 1"):
        idle_by_cause(ev, _host([(0, 1, 2, "sync_wait"), (0, 5, 3, "sync_wait")]))
    with pytest.raises(InvalidRowError, match=r"host.*cause.*row 0.*'lunch'"):
        idle_by_cause(ev, _host([(0, 1, 2, "lunch")]))
    with pytest.raises(InvalidRowError, match=r"host.*rank.*row 0"):
        idle_by_cause(ev, _host([(-2, 1, 2, "sync_wait")]))
    with pytest.raises(SchemaError, match="cause"):
        idle_by_cause(ev, pa.table({"rank": pa.array([0], pa.int32()), "start_ns": [1], "end_ns": [2]}))
    with pytest.raises(InvalidRowError, match=r"events.*row 1"):
        idle_by_cause(_events([(0, 0, 5, None), (0, 9, 3, None)]))
    with pytest.raises(SchemaError, match="launch_ns"):
        idle_by_cause(ev.set_column(4, "launch_ns", pa.array([1.5, 2.0, 3.0, 4.0])))
    events_only = core.ledger(ev, span=SPAN)
    with pytest.raises(OptionError, match="no lifecycle"):
        idle_by_cause(ev, ledger=events_only)
    lc = pa.table({"record": ["accountable", "attempt"], "attempt": pa.array([None, 0], pa.int32()),
                   "rank": pa.array([0, 0], pa.int32()), "start_ns": [0, 0], "end_ns": [100, 100],
                   "kind": [None, "completed"]})
    with pytest.raises(OptionError, match="span and windows"):
        idle_by_cause(ev, ledger=core.ledger(ev, lc), span=SPAN)


# ---------------------------------------------------------------------------
# the twin, under Hypothesis

SCALES = (1, 7, 2**40)
BASES = (0, -(2**62), 2**62)


@st.composite
def cases(draw):
    scale = draw(st.sampled_from(SCALES))
    base = draw(st.sampled_from(BASES))
    t = lambda off: base + off * scale  # noqa: E731
    ranks = draw(st.lists(st.sampled_from([0, 1, 5]), min_size=1, max_size=3, unique=True))
    events = []
    for r in ranks:
        for _ in range(draw(st.integers(0, 8))):
            s = draw(st.integers(0, 40))
            d = draw(st.integers(0, 12))
            lag = draw(st.one_of(st.none(), st.integers(-4, 20)))
            events.append((r, t(s), t(s + d), None if lag is None else t(s - lag)))
    host = []
    for _ in range(draw(st.integers(0, 6))):
        r = draw(st.sampled_from(ranks + [-1, 9]))
        s = draw(st.integers(-5, 50))
        host.append((r, t(s), t(s + draw(st.integers(0, 15))), draw(st.sampled_from(["data_wait", "sync_wait"]))))
    span = None
    if draw(st.booleans()):
        span = [(r, t(draw(st.integers(-10, 10))), t(draw(st.integers(30, 60)))) for r in ranks
                if draw(st.booleans())]
    windows = None
    mode = draw(st.sampled_from(["none", "list", "bucket"]))
    if mode == "list":
        windows = []
        for r in ranks + [-1]:
            if draw(st.booleans()):
                cuts = sorted(draw(st.lists(st.integers(-10, 60), min_size=2, max_size=6, unique=True)))
                for a, b in zip(cuts[::2], cuts[1::2]):
                    windows.append((r, t(a), t(b), len(windows)))
        if any(w[0] == -1 for w in windows):  # a rank -1 window is every rank's: no other may overlap it
            windows = [w for w in windows if w[0] == -1]
    elif mode == "bucket":
        windows = scale * draw(st.sampled_from([5, 16]))
    return events, host, span, windows, scale


def _spans(events, span):
    out = {}
    for r, s, e, _ in events:
        lo, hi = out.get(r, (s, e))
        out[r] = (min(lo, s), max(hi, e))
    for r, s, e in span or []:
        out[r] = (s, e)
    return out


def _inputs(events, host, span, windows):
    ev = _events(events)
    h = _host(host) if host else None
    sp = None if span is None else pa.table({"rank": pa.array([x[0] for x in span], pa.int32()),
                                             "start_ns": pa.array([x[1] for x in span], pa.int64()),
                                             "end_ns": pa.array([x[2] for x in span], pa.int64())})
    if isinstance(windows, list):
        windows = pa.table({"rank": pa.array([w[0] for w in windows], pa.int32()),
                            "start_ns": pa.array([w[1] for w in windows], pa.int64()),
                            "end_ns": pa.array([w[2] for w in windows], pa.int64()),
                            "window": pa.array([w[3] for w in windows], pa.int64())})
    return ev, h, sp, windows


def _ref_windows(windows, spans):
    """Bucket windows as a list, for the twin: [k*w, (k+1)*w) named by their start."""
    if not isinstance(windows, int):
        return windows
    out = []
    for r, (lo, hi) in spans.items():
        k = lo // windows
        while k * windows < hi:
            out.append((r, k * windows, (k + 1) * windows, k * windows))
            k += 1
    return out


@settings(max_examples=examples(300), **SETTINGS)
@given(cases())
def test_matches_the_reference(case):
    events, host, span, windows, _ = case
    spans = _spans(events, span)
    if not spans:
        return
    ev, h, sp, win = _inputs(events, host, span, windows)
    res = idle_by_cause(ev, h, span=sp, windows=win)
    want = ref.split(events, host, spans, _ref_windows(windows, spans))
    assert _by_group(res.table) == {k: v for k, v in want.items() if any(v.values())}
    # parts sum to the ledger's idle exactly, rank by rank and window by window
    idle = core.classify(ev, span=sp, windows=win)
    idle = idle.filter(pa.compute.equal(idle["activity"], "idle"))
    got = {k: sum(v.values()) for k, v in _by_group(res.table).items()}
    has_w = "window" in idle.column_names
    per: dict = {}
    for r in idle.to_pylist():
        key = (r["rank"], r["window"] if has_w else None)
        per[key] = per.get(key, 0) + r["duration_ns"]
    per = {k: v for k, v in per.items() if v}
    assert got == per
    led = core.ledger(ev, span=sp, windows=win)
    assert sum(res.summary.values()) == led.activity_ns().get("idle", 0)


def _union_len(intervals, lo, hi):
    return sum(min(e, hi) - max(s, lo) for s, e in ref.busy_union(intervals) if min(e, hi) > max(s, lo))


@settings(max_examples=examples(200), **SETTINGS)
@given(cases(), st.integers(-(2**40), 2**40))
def test_shifting_every_time_shifts_nothing(case, shift):
    events, host, span, windows, scale = case
    if not events:
        return
    if isinstance(windows, int):
        shift -= shift % windows   # bucket edges move with whole buckets only
    move = lambda x: None if x is None else x + shift  # noqa: E731
    moved = ([(r, s + shift, e + shift, move(launch)) for r, s, e, launch in events],
             [(r, s + shift, e + shift, c) for r, s, e, c in host],
             None if span is None else [(r, s + shift, e + shift) for r, s, e in span],
             [(r, s + shift, e + shift, w) for r, s, e, w in windows] if isinstance(windows, list) else windows)
    if any(abs(x) > 2**62 + 2**45 for row in moved[0] for x in row[1:3]):
        return
    a = idle_by_cause(*_inputs(events, host, span, windows)[:2], span=_inputs(events, host, span, windows)[2],
                      windows=_inputs(events, host, span, windows)[3])
    ev, h, sp, win = _inputs(*moved)
    b = idle_by_cause(ev, h, span=sp, windows=win)
    assert a.summary == b.summary
    assert a.table["duration_ns"].to_pylist() == b.table["duration_ns"].to_pylist()


@settings(max_examples=examples(200), **SETTINGS)
@given(cases())
def test_causes_never_exceed_idle_nor_their_intervals(case):
    events, host, span, _, _ = case
    spans = _spans(events, span)
    if not spans:
        return
    ev, h, sp, _ = _inputs(events, host, span, None)
    res = _by_group(idle_by_cause(ev, h, span=sp).table)
    for (r, _), got in res.items():
        lo, hi = spans[r]
        busy = [(s, e) for rr, s, e, _ in events if rr == r]
        idle = (hi - lo) - _union_len(busy, lo, hi)
        assert all(v >= 0 for v in got.values()) and sum(got.values()) == idle
        mine = lambda c: [(s, e) for rr, s, e, cc in host if rr in (r, -1) and cc == c]  # noqa: E731
        # data_wait is exactly the idle time under a data-loading span (it wins there)
        assert got["data_wait"] == _union_len(mine("data_wait") + busy, lo, hi) - _union_len(busy, lo, hi)
        assert got["sync_wait"] <= _union_len(mine("sync_wait"), lo, hi)
        hw = ref.host_waits([(s, e, launch) for rr, s, e, launch in events if rr == r], lo)
        assert got["host_wait"] <= _union_len(hw, lo, hi)


# ---------------------------------------------------------------------------
# generated runs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_training_runs_sum_to_idle(seed):
    ev = synth.training_run(ranks=3, steps=4, kernels_per_step=12, seed=seed)
    rng = np.random.default_rng(seed)
    start = np.asarray(ev["start_ns"])
    lag = rng.integers(-1_000, 6_000, start.size)   # gaps are a few us: some launches come after the drain
    launch = pa.array(start - lag, pa.int64(), mask=rng.random(start.size) < 0.2)
    ev = ev.append_column("launch_ns", launch)
    lo, hi = int(start.min()), int(np.asarray(ev["end_ns"]).max())
    n = 12
    hs = rng.integers(lo - 10**5, hi, n)
    host = pa.table({"rank": pa.array(rng.integers(-1, 3, n).astype(np.int32)), "start_ns": pa.array(hs),
                     "end_ns": pa.array(hs + rng.integers(0, 3 * 10**5, n)),
                     "cause": pa.array(rng.choice(["data_wait", "sync_wait"], n))})
    res = idle_by_cause(ev, host)
    led = core.ledger(ev)
    assert sum(res.summary.values()) == led.activity_ns()["idle"]
    assert res.summary["host_wait"] > 0 and res.summary["data_wait"] > 0 and res.summary["sync_wait"] > 0
    by = idle_by_cause(ev, host, windows=10**7)
    assert by.summary == res.summary


def test_generated_training_job_with_its_lifecycle():
    job = synth.training_job(ranks=2, steps=30, seed=4, mtbf_s=10.0, kernels_per_step=8, checkpoint_every=5,
                             checkpoint_cost_s=1.0)
    led = core.ledger(job.events, job.lifecycle, as_of=job.as_of)
    res = idle_by_cause(job.events, None, lifecycle=job.lifecycle, ledger=led)
    assert sum(res.summary.values()) == led.activity_ns()["idle"] > 0


# ---------------------------------------------------------------------------
# real samples

KINETO = ["hta-amd_trace", "hta-critical_path/alexnet", "hta-critical_path/cuda_event_sync",
          "hta-critical_path/cuda_event_sync_multi_stream", "hta-critical_path/simple_add",
          "hta-mtia_inference_trace", "hta-nccl_parser_config", "hta-ns_resolution_trace",
          "hta-trace_file_list", "hta-trace_filter", "hta-triton_example", "param-dlrm-8ranks",
          "pytorch-kineto/resnet50_num_workers_0", "pytorch-kineto/resnet50_num_workers_4",
          "tracelens-mi300x"]   # only in ../shared/data: skipped without it
NSYS = [("icon_isc25", "gpu.sqlite"), ("pipit", "perlmutter-cloverleaf-cuda.sqlite"),
        ("pipit", "saxpy-mpi-cuda_nsys_perlmutter0.sqlite")]


def _split_of_run(run, host):
    led = run.ledger()
    if led.intervals is not None:
        return led, idle_by_cause(run.events, host, lifecycle=run.lifecycle, ledger=led)
    return led, idle_by_cause(run.events, host, span=run.spans)


@pytest.mark.parametrize("name", KINETO)
def test_every_kineto_sample_sums_to_its_idle(name):
    path = shared("kineto", name)
    trace = read_kineto(path)
    led, res = _split_of_run(pau.read(path), trace.host)
    assert sum(res.summary.values()) == led.activity_ns()["idle"]
    # events-only over the profiled window too
    events_only = idle_by_cause(trace.events, trace.host, span=trace.spans())
    assert sum(events_only.summary.values()) == core.ledger(trace.events, span=trace.spans()).activity_ns()["idle"]


@pytest.mark.parametrize("parts", NSYS, ids=["/".join(p) for p in NSYS])
def test_every_nsys_sample_sums_to_its_idle(parts):
    path = shared("nsys", *parts)
    trace = read_nsys(path)
    led, res = _split_of_run(pau.read(path), trace.host)
    assert sum(res.summary.values()) == led.activity_ns()["idle"]
    assert trace.events["launch_ns"].null_count < trace.events.num_rows


def test_dlrm_sample_figures():
    # param-dlrm-8ranks: every rank has one DataLoader span and 11 synchronize calls
    # (10 cudaStreamSynchronize, 1 cudaDeviceSynchronize); 128 of its 2,244 device events
    # (elementwise kernels) have no host event with their correlation id in the trace.
    trace = read_kineto(shared("kineto", "param-dlrm-8ranks"))
    counts = trace.host.group_by(["rank", "cause"]).aggregate([("start_ns", "count")]).to_pylist()
    assert sorted((c["rank"], str(c["cause"]), c["start_ns_count"]) for c in counts) == [
        (r, c, n) for r in range(8) for c, n in (("data_wait", 1), ("sync_wait", 11))]
    assert trace.events.column_names[-1] == "launch_ns"
    assert (trace.events.num_rows, trace.events["launch_ns"].null_count) == (2244, 128)
    assert trace.events.column_names[:-1] == ["rank", "stream", "start_ns", "end_ns", "kind", "name", "step",
                                              "bytes"]
    res = idle_by_cause(trace.events, trace.host, span=trace.spans())
    assert res.summary == {"data_wait": 9_136_000, "sync_wait": 501_000, "host_wait": 49_024_000,
                           "idle.other": 13_487_000}


def test_resnet_data_wait_falls_with_data_loader_workers():
    # The same model with 0 and 4 DataLoader workers: waiting for data drops from 283 ms
    # to 6 ms of the profiled steps.
    got = {}
    for w in (0, 4):
        path = shared("kineto", f"pytorch-kineto/resnet50_num_workers_{w}")
        got[w] = _split_of_run(pau.read(path), read_kineto(path).host)[1].summary["data_wait"]
    assert got == {0: 282_671_000, 4: 5_688_000}


def test_nsys_sample():
    path = shared("nsys", "icon_isc25", "gpu.sqlite")
    trace = read_nsys(path)
    base = trace.ranks["session_start_ns"][0].as_py()  # utcEpochNs of the session
    # 6 cudaStreamSynchronize_v3020 calls; the first runs 362732965..383619611 (session ns)
    assert trace.host.num_rows == 6 and set(trace.host["cause"].to_pylist()) == {"sync_wait"}
    assert trace.host.to_pylist()[0] == {"rank": 0, "start_ns": base + 362732965, "end_ns": base + 383619611,
                                         "cause": "sync_wait"}
    ev = trace.events
    kernels = ev.filter(pa.compute.equal(ev["kind"], "compute"))
    # the first kernel (correlationId 591) was launched by the cudaLaunchKernel starting at 362657262
    assert kernels["launch_ns"][0].as_py() == base + 362657262
    assert kernels["launch_ns"].null_count == 0
    # 5,510 of the 5,511 copies have correlationId 0 (no API call): no launch
    assert ev["launch_ns"].null_count == 5510
    led, res = _split_of_run(pau.read(path), trace.host)
    assert sum(res.summary.values()) == led.activity_ns()["idle"]
    assert res.summary == {"data_wait": 0, "sync_wait": 4324, "host_wait": 367_242_453, "idle.other": 358_093_611}


def test_nsys_dataloader_ranges_are_data_wait(tmp_path):
    src = shared("nsys", "icon_isc25", "gpu.sqlite")
    path = tmp_path / "gpu.sqlite"
    shutil.copy(src, path)
    con = sqlite3.connect(path)
    tid = con.execute("SELECT globalTid FROM NVTX_EVENTS LIMIT 1").fetchone()[0]
    con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?, ?, 59, ?, ?)",
                (384_000_000, 386_000_000, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", tid))
    con.commit()
    con.close()
    trace = read_nsys(path)
    data = trace.host.filter(pa.compute.equal(trace.host["cause"], "data_wait")).to_pylist()
    base = trace.ranks["session_start_ns"][0].as_py()
    assert data == [{"rank": 0, "start_ns": base + 384_000_000, "end_ns": base + 386_000_000,
                     "cause": "data_wait"}]


# ---------------------------------------------------------------------------
# the Kineto reader's launches and host table


def _trace(tmp_path, events, devices=None):
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(json.dumps({"distributedInfo": {"rank": 0}, "traceEvents": events}).encode()))
    return p


def _x(cat, name, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def test_kineto_launch_is_the_earliest_host_call_with_the_correlation(tmp_path):
    events = [
        _x("cuda_runtime", "cudaLaunchKernel", 10, 5, correlation=7),
        _x("cuda_driver", "cuLaunchKernel", 11, 3, correlation=7),     # inside it, same id
        _x("kernel", "k", 20, 4, pid=0, tid=7, device=0, stream=7, correlation=7),
        _x("kernel", "orphan", 30, 4, pid=0, tid=7, device=0, stream=7, correlation=99),
        _x("cuda_runtime", "cudaStreamSynchronize", 24, 8, correlation=8),
        _x("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 9),
        _x("cpu_op", "aten::add", 1, 2),   # not a host wait
    ]
    t = read_kineto(_trace(tmp_path, events))
    assert t.events["launch_ns"].to_pylist() == [10_000, None]
    assert t.host.to_pylist() == [
        {"rank": 0, "start_ns": 0, "end_ns": 9_000, "cause": "data_wait"},
        {"rank": 0, "start_ns": 24_000, "end_ns": 32_000, "cause": "sync_wait"}]
    # the span: first to last device event, [20, 34) us (no steps)
    res = idle_by_cause(t.events, t.host, span=t.spans())
    # gap [24, 30) us before "orphan": sync_wait (the call runs 24..32); nothing else idle
    assert res.summary == {"data_wait": 0, "sync_wait": 6_000, "host_wait": 0, "idle.other": 0}


def test_kineto_host_waits_belong_to_every_device_of_the_file(tmp_path):
    events = [
        _x("kernel", "a", 20, 4, pid=0, tid=7, device=0, stream=7, correlation=1),
        _x("kernel", "b", 20, 4, pid=1, tid=7, device=1, stream=7, correlation=2),
        _x("cuda_runtime", "cudaDeviceSynchronize", 24, 8, pid=9, correlation=3),
    ]
    t = read_kineto(_trace(tmp_path, events))
    assert sorted(t.host["rank"].to_pylist()) == [0, 1]


def test_sync_call_names():
    assert sync_call("cudaStreamSynchronize") and sync_call("cudaStreamSynchronize_v3020")
    assert sync_call("cuStreamSynchronize_ptsz") and sync_call("hipDeviceSynchronize")
    assert not sync_call("cudaStreamWaitEvent") and not sync_call("cudaLaunchKernel_v7000")


# ---------------------------------------------------------------------------
# pau.compat.hta: negative idle values are flagged, HTA's figures kept


def test_hta_negative_gaps_on_the_mtia_sample(tmp_path):
    pytest.importorskip("pandas")
    from pau.compat import hta

    src = shared("kineto", "hta-mtia_inference_trace")
    plain = hta.idle_time_breakdown(src)
    # the sample has no kernel that starts before the previous one on its stream ends
    assert (plain["negative_gap_time"] == 0.0).all() and (plain["idle_time"] >= 0).all()
    # HTA rounds this file's events inward to whole us (ts up, ts + dur down). Move the
    # kernel after stream 105's first one of 20 us or more to start 7 us before that one
    # ends: that gap becomes -7 us, flagged; the stream's total idle time moves only by
    # the rounding of the moved kernel (its gaps before and after shift by as much).
    doc = json.load(gzip.open(next(src.glob("*.json.gz"))))
    on = sorted((e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "mtia_ccp_events"
                 and e.get("args", {}).get("stream") == 105), key=lambda e: float(e["ts"]))
    i = next(k for k, e in enumerate(on) if float(e["dur"]) >= 20)
    long, nxt = on[i], on[i + 1]
    old_ts, dur = float(nxt["ts"]), float(nxt["dur"])
    prev_end = math.floor(float(long["ts"]) + float(long["dur"]))
    new_ts = prev_end - 7
    nxt["ts"] = float(new_ts)
    out = tmp_path / "mtia.json.gz"
    out.write_bytes(gzip.compress(json.dumps(doc).encode()))
    moved = hta.idle_time_breakdown(out)
    s_plain = plain[plain["stream"] == 105]
    s_moved = moved[moved["stream"] == 105]
    assert s_moved["negative_gap_time"].sum() == -7.0
    # gap before: new_ts - ceil(old_ts); gap after: -(new_ts + floor(dur) - floor(old_ts + dur))
    change = (new_ts - math.ceil(old_ts)) - (new_ts + math.floor(dur) - math.floor(old_ts + dur))
    assert round(s_moved["idle_time"].sum() - s_plain["idle_time"].sum(), 2) == change
    other = moved[moved["stream"] != 105]
    assert (other["negative_gap_time"] == 0.0).all()


# ---------------------------------------------------------------------------
# the split as intervals (idle_cause_intervals)


def _iv(table):
    return [(r["rank"], r["start_ns"], r["end_ns"], r["cause"]) for r in table.to_pylist()]


def _iv_sums(table):
    """{(rank, None): {cause: ns}} of cause intervals, as _by_group gives a table."""
    out: dict = {}
    for r, s, e, c in _iv(table):
        out.setdefault((r, None), dict.fromkeys(CAUSES, 0))[c] += e - s
    return {k: v for k, v in out.items() if any(v.values())}


def test_hand_worked_intervals():
    got = idle_cause_intervals(_events(HAND), _host(HAND_HOST), span=SPAN)
    assert got.column_names == ["rank", "start_ns", "end_ns", "cause"]
    # the gaps of test_hand_worked_split, piece by piece, in time order
    assert _iv(got) == [(0, 0, 2, "host_wait"), (0, 2, 10, "idle.other"), (0, 20, 25, "host_wait"),
                        (0, 25, 35, "sync_wait"), (0, 35, 40, "idle.other"), (0, 50, 60, "idle.other"),
                        (0, 70, 80, "idle.other"), (0, 90, 95, "data_wait"), (0, 95, 100, "idle.other")]


def test_hand_worked_intervals_inside_accountable_time():
    lc = _two_attempts()
    ev = _events(HAND)
    led = core.ledger(ev, lc)
    got = idle_cause_intervals(ev, _host(HAND_HOST), lifecycle=lc, ledger=led)
    # [40, 60) is not accountable: [50, 60) is not idle of the ledger
    assert _iv(got) == [(0, 0, 2, "host_wait"), (0, 2, 10, "idle.other"), (0, 20, 25, "host_wait"),
                        (0, 25, 30, "sync_wait"), (0, 30, 40, "data_wait"), (0, 70, 80, "idle.other"),
                        (0, 90, 95, "data_wait"), (0, 95, 100, "idle.other")]
    assert sum(e - s for _, s, e, _ in _iv(got)) == led.activity_ns()["idle"]


@settings(max_examples=examples(200), **SETTINGS)
@given(cases())
def test_intervals_sum_to_the_split(case):
    """Per rank and cause, the intervals' durations are idle_by_cause's figures (summed
    over windows: windows split the table, not the time); disjoint and maximal."""
    events, host, span, windows, _ = case
    if not _spans(events, span):
        return
    ev, h, sp, win = _inputs(events, host, span, windows)
    res = idle_by_cause(ev, h, span=sp, windows=win)
    got = idle_cause_intervals(ev, h, span=sp, windows=win)
    want: dict = {}
    for k, v in _by_group(res.table).items():
        acc = want.setdefault((k[0], None), dict.fromkeys(CAUSES, 0))
        for c, ns in v.items():
            acc[c] += ns
    assert _iv_sums(got) == {k: v for k, v in want.items() if any(v.values())}
    rows = _iv(got)
    assert all(s < e for _, s, e, _ in rows)
    for a, b in zip(rows, rows[1:]):
        if a[0] == b[0]:
            assert b[1] >= a[2] and not (b[1] == a[2] and b[3] == a[3])


def test_resnet_sample_intervals_are_the_split():
    path = shared("kineto", "pytorch-kineto", "resnet50_num_workers_0")
    run = pau.read(path)
    led = run.ledger()
    if led.intervals is not None:
        res = idle_by_cause(run.events, run.host, lifecycle=run.lifecycle, ledger=led)
        got = idle_cause_intervals(run.events, run.host, lifecycle=run.lifecycle, ledger=led)
    else:
        res = idle_by_cause(run.events, run.host, span=run.spans)
        got = idle_cause_intervals(run.events, run.host, span=run.spans)
    assert {k[0]: v for k, v in _iv_sums(got).items()} == {k[0]: v for k, v in _by_group(res.table).items()}
    assert sum(e - s for _, s, e, _ in _iv(got)) == led.activity_ns()["idle"]
    assert res.summary["data_wait"] > 0 and res.summary["host_wait"] > 0  # the sample has causes to split
