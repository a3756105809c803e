"""pau.compat.hta against Holistic Trace Analysis 0.5.0 on the shared Kineto samples.

Every expected figure below is HTA 0.5.0's own output on that sample, obtained with
HolisticTraceAnalysis==0.5.0 from the package index, installed in a separate
environment, as::

    ta = TraceAnalysis(trace_dir=SAMPLE)
    ta.get_temporal_breakdown(visualize=False)
    ta.get_idle_time_breakdown(ranks=all_ranks, visualize=False)[0]
    ta.get_comm_comp_overlap(visualize=False)

(HTA's ``(us)`` column suffix is spelled ``_us`` by pau). The issue allows 0.1
percentage point; pau reproduces these exactly, and the tests hold it to that.
"""

from __future__ import annotations

import math
import pathlib

import pytest

pd = pytest.importorskip("pandas")

from pau.compat import hta  # noqa: E402
from pau.errors import NoDeviceEventsError  # noqa: E402

from shared_data import shared  # noqa: E402


def sample(name: str) -> pathlib.Path:
    return shared("kineto", *name.split("/"))


# rank, idle_time_us, compute_time_us, non_compute_time_us, kernel_time_us,
# idle_time_pctg, compute_time_pctg, non_compute_time_pctg  (HTA 0.5.0 output)
TEMPORAL = {
    "hta-amd_trace": [(0, 8780.0, 96.0, 35.0, 8911.0, 98.53, 1.08, 0.39)],
    "hta-critical_path/alexnet": [(0, 12929684.0, 10637.0, 55690.0, 12996011.0, 99.49, 0.08, 0.43)],
    "hta-critical_path/cuda_event_sync": [(0, 207.0, 49.0, 7.0, 263.0, 78.71, 18.63, 2.66)],
    "hta-critical_path/cuda_event_sync_multi_stream": [(0, 19132.0, 371.0, 3.0, 19506.0, 98.08, 1.9, 0.02)],
    "hta-critical_path/simple_add": [(0, 16414376.0, 10676.0, 39287.0, 16464339.0, 99.7, 0.06, 0.24)],
    "hta-critical_path/end_to_end/simple_add/input": [
        (0, 16414376.0, 10676.0, 39287.0, 16464339.0, 99.7, 0.06, 0.24)],
    "hta-critical_path/end_to_end/simple_add/output": [
        (0, 16414376.0, 10676.0, 39287.0, 16464339.0, 99.7, 0.06, 0.24)],
    "hta-mtia_inference_trace": [(0, 19235.0, 419614.0, 4426.0, 443275.0, 4.34, 94.66, 1.0)],
    "hta-nccl_parser_config": [(0, 338781.0, 75169.0, 21636.0, 435586.0, 77.78, 17.26, 4.97)],
    "hta-ns_resolution_trace": [(0, 10113.0, 372150.0, 2371.0, 384634.0, 2.63, 96.75, 0.62)],
    "hta-trace_file_list": [(1, 1599.0, 30.0, 0.0, 1629.0, 98.16, 1.84, 0.0)],
    "hta-trace_filter": [(0, 321378.0, 106252.0, 172428.0, 600058.0, 53.56, 17.71, 28.74),
                         (1, 328671.0, 135548.0, 136455.0, 600674.0, 54.72, 22.57, 22.72)],
    "hta-triton_example": [(0, 0.0, 94.0, 0.0, 94.0, 0.0, 100.0, 0.0)],
}

# rank, comp_comm_overlap_pctg (None: HTA's NaN, no communication kernels)
OVERLAP = {
    "hta-nccl_parser_config": [(0, 14.31)],
    "hta-trace_filter": [(0, 11.81), (1, 20.05)],
    "hta-amd_trace": [(0, None)],
    "hta-ns_resolution_trace": [(0, None)],
    "hta-cpu_only": [(34, None)],
}

# rank, stream, idle_category, idle_time, idle_time_ratio
IDLE = {
    "hta-nccl_parser_config": [
        (0, 7, "host_wait", 357247.0, 0.99), (0, 7, "kernel_wait", 2155.0, 0.01), (0, 7, "other", 0.0, 0.0),
        (0, 40, "host_wait", 381499.0, 1.0), (0, 40, "other", 0.0, 0.0)],
    "hta-ns_resolution_trace": [
        (0, 7, "host_wait", 1709.0, 0.17), (0, 7, "kernel_wait", 8404.0, 0.83), (0, 7, "other", 0.0, 0.0)],
    "hta-critical_path/cuda_event_sync_multi_stream": [
        (0, 20, "host_wait", 32.0, 1.0), (0, 20, "other", 0.0, 0.0), (0, 28, "kernel_wait", 15.0, 1.0),
        (0, 28, "other", 0.0, 0.0), (0, 24, "kernel_wait", 15.0, 1.0), (0, 24, "other", 0.0, 0.0)],
    "hta-trace_filter": [
        (0, 23, "host_wait", 596037.0, 1.0), (0, 23, "kernel_wait", 70.0, 0.0), (0, 23, "other", 34.0, 0.0),
        (0, 84, "host_wait", 148934.0, 1.0), (0, 84, "kernel_wait", 6.0, 0.0), (0, 84, "other", 0.0, 0.0),
        (0, 25, "kernel_wait", 9.0, 0.0), (0, 25, "other", 47865.0, 1.0), (0, 7, "host_wait", 213825.0, 0.45),
        (0, 7, "kernel_wait", 1985.0, 0.0), (0, 7, "other", 261740.0, 0.55), (0, 203, "other", 0.0, None),
        (1, 23, "host_wait", 596313.0, 1.0), (1, 23, "kernel_wait", 100.0, 0.0), (1, 23, "other", 0.0, 0.0),
        (1, 25, "kernel_wait", 9.0, 0.0), (1, 25, "other", 53028.0, 1.0), (1, 7, "host_wait", 156827.0, 0.36),
        (1, 7, "kernel_wait", 1816.0, 0.0), (1, 7, "other", 281064.0, 0.64), (1, 84, "host_wait", 251860.0, 0.92),
        (1, 84, "other", 23247.0, 0.08), (1, 203, "other", 0.0, None)],
    "hta-amd_trace": [(0, 0, "host_wait", 8780.0, 1.0), (0, 0, "other", 0.0, 0.0)],
    "hta-triton_example": [(0, 7, "other", 0.0, None)],
}
# The MTIA sample has 12 streams; the first three as HTA lists them.
IDLE_MTIA_HEAD = [
    (0, 108, "host_wait", 228224.0, 0.79), (0, 108, "kernel_wait", 616.0, 0.0), (0, 108, "other", 60202.0, 0.21),
    (0, 112, "host_wait", 299058.0, 0.89), (0, 112, "kernel_wait", 432.0, 0.0), (0, 112, "other", 36813.0, 0.11),
    (0, 105, "host_wait", 361836.0, 1.0), (0, 105, "kernel_wait", 176.0, 0.0), (0, 105, "other", 217.0, 0.0),
]


def _same(a, b) -> bool:
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return a == b


def _rows(df) -> list[tuple]:
    return [tuple(None if isinstance(v, float) and math.isnan(v) else v for v in r)
            for r in df.itertuples(index=False, name=None)]


@pytest.mark.parametrize("name", sorted(TEMPORAL))
def test_temporal_breakdown_equals_hta(name):
    df = hta.temporal_breakdown(sample(name))
    assert list(df.columns) == ["rank", "idle_time_us", "compute_time_us", "non_compute_time_us",
                                "kernel_time_us", "idle_time_pctg", "compute_time_pctg",
                                "non_compute_time_pctg"]
    got = _rows(df)
    assert len(got) == len(TEMPORAL[name])
    for g, w in zip(got, TEMPORAL[name]):
        assert g == w, (name, g, w)


@pytest.mark.parametrize("name", sorted(OVERLAP))
def test_comm_comp_overlap_equals_hta(name):
    df = hta.comm_comp_overlap(sample(name))
    assert list(df.columns) == ["rank", "comp_comm_overlap_pctg"]
    got = _rows(df)
    assert len(got) == len(OVERLAP[name])
    for g, w in zip(got, OVERLAP[name]):
        assert g[0] == w[0] and _same(w[1], g[1]), (name, g, w)


@pytest.mark.parametrize("name", sorted(IDLE))
def test_idle_time_breakdown_equals_hta(name):
    df = hta.idle_time_breakdown(sample(name))
    assert list(df.columns) == ["rank", "stream", "idle_category", "idle_time", "idle_time_ratio",
                                "negative_gap_time"]
    got = _rows(df)
    assert len(got) == len(IDLE[name])
    for g, w in zip(got, IDLE[name]):
        assert g[:4] == w[:4] and _same(w[4], g[4]), (name, g, w)


def test_idle_time_breakdown_mtia_streams_and_filters():
    path = sample("hta-mtia_inference_trace")
    df = hta.idle_time_breakdown(path)
    assert [r[:5] for r in _rows(df)[:9]] == IDLE_MTIA_HEAD
    assert df["stream"].nunique() == 12
    only = hta.idle_time_breakdown(path, streams=[105])
    assert [r[:5] for r in _rows(only)] == IDLE_MTIA_HEAD[6:9]
    assert hta.idle_time_breakdown(path, ranks=[3]).empty


def test_percentages_are_within_a_tenth_of_a_point_of_hta_by_construction():
    """The issue's bound, stated as a test: every percentage differs by < 0.1 point."""
    for name, rows in TEMPORAL.items():
        df = hta.temporal_breakdown(sample(name))
        for g, w in zip(_rows(df), rows):
            for a, b in zip(g[5:], w[5:]):
                assert abs(a - b) < 0.1


def test_ranks_without_kernels_raise_like_hta_fails():
    # HTA 0.5.0 raises IndexError here; pau names the file and the reason.
    with pytest.raises(NoDeviceEventsError, match="no kernels"):
        hta.temporal_breakdown(sample("hta-cpu_only"))
    with pytest.raises(NoDeviceEventsError, match="no kernels"):
        hta.idle_time_breakdown(sample("hta-rank_non_gpu"))


def test_old_format_traces_get_hta_figures_too():
    # HTA 0.5.0 cannot read the old top-level-array format; pau applies its
    # definitions anyway. The ResNet-50 pair: more idle with num_workers=0.
    w0 = hta.temporal_breakdown(sample("pytorch-kineto/resnet50_num_workers_0"))
    w4 = hta.temporal_breakdown(sample("pytorch-kineto/resnet50_num_workers_4"))
    assert w0["idle_time_pctg"][0] > w4["idle_time_pctg"][0]


def test_negative_kernel_wait_is_kept_and_flagged(tmp_path):
    # HTA sums a kernel starting before the previous one on its stream ends as a
    # negative gap (issue 19: -10,478 us on an MTIA trace). pau keeps HTA's figure and
    # says how much of it is such gaps.
    import gzip
    import json

    def k(ts, dur, corr, name):
        return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                "args": {"stream": 7, "device": 0, "correlation": corr}}

    def launch(ts, corr):
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts,
                "dur": 1, "args": {"correlation": corr}}

    events = [launch(0, 1), k(10, 100, 1, "a"), launch(1, 2), k(60, 20, 2, "b"),  # b starts 50 us before a ends
              launch(2, 3), k(100, 10, 3, "c")]
    p = tmp_path / "overlap.json.gz"
    p.write_bytes(gzip.compress(json.dumps({"distributedInfo": {"rank": 0}, "traceEvents": events}).encode()))
    df = hta.idle_time_breakdown(p)
    rows = {r[2]: r for r in _rows(df)}
    # gaps: b - a = 60 - 110 = -50 (kernel_wait), c - b = 100 - 80 = 20 (kernel_wait)
    assert rows["kernel_wait"][3] == -30.0 and rows["kernel_wait"][5] == -50.0
    assert all(r[5] <= 0 for r in rows.values())
    assert rows["kernel_wait"][3] - rows["kernel_wait"][5] == 20.0  # the idle time without overlap
