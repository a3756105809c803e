"""pau.readers.kineto: PyTorch profiler (Kineto) traces.

Real samples come from ``kineto/`` under the data roots of ``shared_data`` (``../shared/data``
or the copy in ``tests/data``; see its README); a test whose sample is absent is skipped with
a message. Bad files are built in ``tmp_path``.

Expected figures were derived as follows: event counts by kind, ranks and steps were
read once with pau and checked against ``json.load`` + a plain-Python classification
(``_reference_events`` below, the slow twin that the parametrized test compares on
every sample); the time figures marked "hand-checked" were computed by hand from the
trace text quoted in the comment.
"""

from __future__ import annotations

import decimal
import gzip
import json
import pathlib
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import pau.core
from pau.errors import (
    DuplicateRankError, InvalidEventError, NoDeviceEventsError, OptionError, PauError, TraceError, TraceFormatError,
)
from pau.readers import _kineto_parse, kineto
from pau.readers.kineto import KinetoTrace, NameRule, Rules, read_kineto

from shared_data import shared  # noqa: E402


def sample(name: str) -> pathlib.Path:
    return shared("kineto", *name.split("/"))


# sample -> (ranks as (rank, rank_source, device, time_resolution, format),
#            device events by rank and kind, step records, compute ns by rank)
SAMPLES = {
    "hta-amd_trace": ([(0, "assigned", 2, "ns", "traceEvents")], {0: {"compute": 14, "memcpy": 2}}, 2,
                      {0: 110881}),
    "hta-critical_path/alexnet": ([(0, "distributedInfo", 0, "us", "traceEvents")],
                                  {0: {"compute": 79, "memcpy": 16, "memset": 3, "sync": 41}}, 0, {0: 10630000}),
    "hta-critical_path/cuda_event_sync": ([(0, "distributedInfo", 0, "us", "traceEvents")],
                                          {0: {"compute": 4, "memcpy": 1, "sync": 4}}, 1, {0: 49000}),
    "hta-critical_path/cuda_event_sync_multi_stream": ([(0, "distributedInfo", 0, "us", "traceEvents")],
                                                       {0: {"compute": 3, "memset": 3, "sync": 5}}, 0,
                                                       {0: 369000}),
    "hta-critical_path/simple_add": ([(0, "distributedInfo", 0, "us", "traceEvents")],
                                     {0: {"compute": 79, "memcpy": 16, "memset": 3, "sync": 41}}, 0, {0: 10670000}),
    "hta-critical_path/end_to_end/simple_add/input": ([(0, "distributedInfo", 0, "us", "traceEvents")],
                                                      {0: {"compute": 79, "memcpy": 16, "memset": 3, "sync": 41}},
                                                      0, {0: 10670000}),
    "hta-critical_path/end_to_end/simple_add/output": ([(0, "distributedInfo", 0, "us", "traceEvents")],
                                                       {0: {"compute": 79, "memcpy": 16, "memset": 3, "sync": 41}},
                                                       0, {0: 10670000}),
    "hta-mtia_inference_trace": ([(0, "file name", 17, "ns", "traceEvents")],
                                 {0: {"compute": 97, "memcpy": 877, "sync": 339}}, 0, {0: 414085123}),
    "hta-nccl_parser_config": ([(0, "distributedInfo", 0, "ns", "traceEvents")],
                               {0: {"communication": 21, "compute": 2679, "memcpy": 960, "memset": 114}}, 3,
                               {0: 115655847}),
    "hta-ns_resolution_trace": ([(0, "distributedInfo", 0, "ns", "traceEvents")],
                                {0: {"compute": 4350, "memcpy": 1600, "memset": 145}}, 5, {0: 468153602}),
    "hta-trace_file_list": ([(1, "distributedInfo", 0, "us", "traceEvents")], {1: {"compute": 4}}, 0, {1: 30000}),
    "hta-trace_filter": ([(0, "distributedInfo", 0, "us", "traceEvents"), (1, "distributedInfo", 1, "us", "traceEvents")],
                         {0: {"communication": 10, "compute": 1144, "memcpy": 40, "memset": 10},
                          1: {"communication": 10, "compute": 1094, "memcpy": 40, "memset": 10}}, 4,
                         {0: 210320000, 1: 271973000}),
    "hta-triton_example": ([(0, "assigned", 0, "ns", "traceEvents")], {0: {"compute": 1}}, 1, {0: 1760}),
    "pytorch-kineto/resnet50_num_workers_0": ([(0, "assigned", 0, "us", "array")],
                                              {0: {"compute": 9538, "memcpy": 12, "memset": 377}}, 6, {0: 635237000}),
    "pytorch-kineto/resnet50_num_workers_4": ([(0, "assigned", 0, "us", "array")],
                                              {0: {"compute": 9484, "memcpy": 12, "memset": 352}}, 6, {0: 649603000}),
}
# Samples with no device activity: CPU-only profiles (their README: "malformed cases").
CPU_ONLY = {
    "hta-cpu_only": (34, 16),   # (rank from distributedInfo, complete events)
    "hta-rank_non_gpu": (0, 2467),
    "hta-rank_unavailable": (None, 2467),
    "hta-distributed_info_unavailable": (None, 2467),
}


# ---------------------------------------------------------------------------
# the slow twin: json.load + Decimal + a plain-Python classification


_REF_CATS = {"kernel": "compute", "Kernel": "compute", "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
             "gpu_memset": "memset", "Memset": "memset", "cuda_sync": "sync", "mtia_ccp_events": "other"}
_REF_COMM = re.compile(r"^(void\s+)?(nccl|rccl|msccl|hccl|hcom)", re.I)
_REF_MTIA = {"pe_exe": "compute", "merge": "compute", "remote": "compute", "event_wait": "sync",
             "event_record": "sync"}


def _ns(text) -> int:
    return int((decimal.Decimal(str(text)) * 1000).to_integral_value(decimal.ROUND_HALF_UP))


def _reference_events(path: pathlib.Path) -> list[tuple]:
    """(stream, start_ns, end_ns, kind, name) of every device event of one file, sorted."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        doc = json.loads(f.read(), parse_float=str)
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    base = 0 if isinstance(doc, list) else int(doc.get("baseTimeNanoseconds", 0))
    out = []
    for e in events:
        cat = e.get("cat")
        if e.get("ph") != "X" or cat not in _REF_CATS:
            continue
        kind = _REF_CATS[cat]
        if cat == "mtia_ccp_events":
            kind = "memcpy" if e["name"].startswith("dma") else _REF_MTIA.get(e["name"], "other")
        elif kind == "compute" and _REF_COMM.match(e["name"]):
            kind = "communication"
        start = base + _ns(e["ts"])
        stream = int(e.get("args", {}).get("stream", -1))
        if not -2**31 <= stream < 2**31:  # Kineto writes device-wide syncs as 4294967295
            stream = -1
        out.append((stream, start, start + _ns(e["dur"]), kind, e["name"]))
    return sorted(out)


def _files(path: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for p in path.iterdir() if p.name.endswith((".json", ".gz"))) if path.is_dir() else [path]


# ---------------------------------------------------------------------------
# every sample


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_expected_figures(name):
    ranks, counts, steps, compute = SAMPLES[name]
    trace = read_kineto(sample(name))
    got_ranks = [(r["rank"], r["rank_source"], r["device"], r["time_resolution"], r["format"])
                 for r in trace.ranks.to_pylist()]
    assert got_ranks == ranks
    got = {}
    for r in trace.events.group_by(["rank", "kind"]).aggregate([("start_ns", "count")]).to_pylist():
        got.setdefault(r["rank"], {})[r["kind"]] = r["start_ns_count"]
    assert got == counts
    assert trace.lifecycle.num_rows == steps
    ex = pau.core.classify(trace.events)
    got_compute = {r["rank"]: r["duration_ns"] for r in ex.to_pylist() if r["activity"] == "compute"}
    assert got_compute == compute
    # conservation: each rank's activities sum to its span (first start to last end)
    for row in ex.group_by("rank").aggregate([("duration_ns", "sum")]).to_pylist():
        ev = trace.events.filter(pc.equal(trace.events["rank"], row["rank"]))
        assert row["duration_ns_sum"] == pc.max(ev["end_ns"]).as_py() - pc.min(ev["start_ns"]).as_py()


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_events_equal_the_slow_reference(name):
    path = sample(name)
    trace = read_kineto(path)
    want = [e for f in _files(path) for e in _reference_events(f)]
    t = trace.events
    got = sorted(zip(t["stream"].to_pylist(), t["start_ns"].to_pylist(), t["end_ns"].to_pylist(),
                     t["kind"].to_pylist(), t["name"].to_pylist()))
    assert got == sorted(want)


@pytest.mark.parametrize("name", sorted(CPU_ONLY))
def test_cpu_only_samples_raise_a_clear_error_or_are_quarantined(name):
    rank, complete = CPU_ONLY[name]
    path = sample(name)
    with pytest.raises(NoDeviceEventsError, match=f"no device events: {complete} complete events") as err:
        read_kineto(path)
    assert str(path) in str(err.value) and "on_invalid='quarantine'" in str(err.value)
    trace = read_kineto(path, on_invalid="quarantine")
    assert trace.events.num_rows == 0
    assert trace.quarantine["reason"].to_pylist() == ["no device events"]
    assert any("no device events" in w for w in trace.warnings)
    row = trace.ranks.to_pylist()[0]
    assert row["device"] is None and row["events"] == 0
    if rank is not None:
        assert row["rank"] == rank and row["rank_source"] == "distributedInfo"


def test_schemas_follow_the_design():
    trace = read_kineto(sample("hta-nccl_parser_config"))
    s = trace.events.schema
    assert s.names[:5] == ["rank", "stream", "start_ns", "end_ns", "kind"]
    assert s.field("rank").type == pa.int32() and s.field("stream").type == pa.int32()
    assert s.field("start_ns").type == pa.int64() and s.field("end_ns").type == pa.int64()
    assert s.field("kind").type == pa.dictionary(pa.int8(), pa.string())
    assert pa.types.is_dictionary(s.field("name").type) and s.field("name").type.value_type == pa.string()
    assert s.field("step").type == pa.int64() and s.field("bytes").type == pa.int64()
    assert trace.lifecycle.schema.names == ["record", "attempt", "rank", "start_ns", "end_ns", "step",
                                            "block_end_ns", "durable_ns", "ok", "kind", "tokens"]
    assert trace.lifecycle.schema.field("attempt").type == pa.int32()
    assert set(trace.lifecycle["record"].to_pylist()) == {"step"}
    assert trace.lifecycle["step"].to_pylist() == [4, 5, 6]
    # ordered by (rank, start_ns), so pau.core never needs to sort
    start = np.asarray(trace.events["start_ns"])
    assert (np.diff(start) >= 0).all()
    row = trace.ranks.to_pylist()[0]
    assert row["world_size"] == 2 and row["backend"] == "nccl"
    assert row["device_name"] == "NVIDIA A100-PG509-200" and row["base_time_ns"] == 1711964646000000000
    assert row["pid"] == 2910249 and row["source_file"].endswith("nccl_data.json.gz")


def test_triton_kernel_hand_checked():
    # The one kernel: "ts": 2413669097444.592, "dur": 1.76 (us), relative to
    # "baseTimeNanoseconds": 1727743122000000000.
    # start = 1727743122000000000 + 2413669097444592 = 1730156791097444592; end = start + 1760.
    trace = read_kineto(sample("hta-triton_example"))
    ev = trace.events.to_pylist()
    assert len(ev) == 1
    assert ev[0]["start_ns"] == 1730156791097444592 and ev[0]["end_ns"] == 1730156791097446352
    assert ev[0]["stream"] == 7 and ev[0]["kind"] == "compute" and ev[0]["name"] == "triton_poi_fused_add_cos_sin_0"
    assert ev[0]["step"] == 1   # launched (cuLaunchKernel, correlation 35) inside ProfilerStep#1


def test_cuda_event_sync_hand_checked():
    # Four kernels on stream 7, ts/dur (us): ...512145/1, and three more summing 48 us of
    # distinct compute (HTA's compute_time(us) = 49 on the same file agrees).
    trace = read_kineto(sample("hta-critical_path/cuda_event_sync"))
    ex = {r["activity"]: r["duration_ns"] for r in pau.core.classify(trace.events).to_pylist()}
    assert ex["compute"] == 49_000
    sync = trace.events.filter(pc.equal(trace.events["kind"], "sync"))
    # "Event Sync" events are device-wide: stream -1
    assert sorted(sync["stream"].to_pylist()) == [-1, -1, -1, 7]


def test_resnet50_num_workers_0_idles_more_per_step_than_4():
    per_step = {}
    for workers in (0, 4):
        trace = read_kineto(sample(f"pytorch-kineto/resnet50_num_workers_{workers}"))
        steps = trace.lifecycle
        windows = steps.select(["rank", "start_ns", "end_ns"]).append_column("window", steps["step"])
        ex = pau.core.classify(trace.events, windows=windows, span=trace.spans())
        idle = ex.filter(pc.and_(pc.equal(ex["activity"], "idle"), pc.is_valid(ex["window"])))
        assert idle.num_rows == 6
        per_step[workers] = np.asarray(idle["duration_ns"])
    # The data-loading-bound run (num_workers=0) leaves the GPU idle longer in every step
    # (~110 ms against ~69 ms) and on average.
    assert per_step[0].mean() > per_step[4].mean() * 1.3
    assert (per_step[0][1:] > per_step[4][1:]).all()


def test_steps_come_from_launches():
    trace = read_kineto(sample("hta-ns_resolution_trace"))
    steps = trace.events["step"]
    assert steps.null_count == 0
    assert set(steps.to_pylist()) == {101, 102, 103, 104, 105}
    life = trace.lifecycle.to_pylist()
    assert [r["step"] for r in life] == [101, 102, 103, 104, 105]
    assert all(r["attempt"] == 0 and r["rank"] == 0 and r["end_ns"] > r["start_ns"] for r in life)


def test_spans_cover_events_and_steps():
    trace = read_kineto(sample("hta-nccl_parser_config"))
    span = trace.spans().to_pylist()[0]
    assert span["start_ns"] == min(pc.min(trace.events["start_ns"]).as_py(),
                                   pc.min(trace.lifecycle["start_ns"]).as_py())
    assert span["end_ns"] == max(pc.max(trace.events["end_ns"]).as_py(), pc.max(trace.lifecycle["end_ns"]).as_py())


def test_mtia_events_by_name_rules():
    trace = read_kineto(sample("hta-mtia_inference_trace"))
    t = trace.events
    kinds = dict(zip(t["name"].to_pylist(), t["kind"].to_pylist()))
    assert kinds == {"pe_exe": "compute", "merge": "compute", "remote": "compute", "dma_request": "memcpy",
                     "event_wait": "sync", "event_record": "sync"}
    assert trace.ranks["device_name"].to_pylist() == ["ARTEMIS"]


def test_tiny_chunks_give_the_same_columns():
    path = _files(sample("hta-nccl_parser_config"))[0]
    cats = sorted(kineto.DEFAULT_RULES.categories)
    whole = _kineto_parse._parse_file(str(path), cats)
    for size in (1 << 16, 4099, 61):
        part = _kineto_parse._parse_file(str(path), cats, chunk_bytes=size)
        for col in whole.rows:
            assert np.array_equal(whole.rows[col], part.rows[col]), (size, col)
        assert whole.strings == part.strings


# ---------------------------------------------------------------------------
# classification rules


@pytest.mark.parametrize("name", [
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
    "ncclDevKernel_Generic(ncclDevComm*, unsigned long, ncclWork*)",
    "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "ncclkernel_allreduce",
    "NCCLKERNEL_ALLREDUCE",
    "void ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
    "rcclKernel_AllReduce",
    "mscclKernel_Sum_float_LL",
    "hcom_allReduce__123_0_1",
    "HcclAllReduce",
])
def test_communication_kernel_names(name):
    assert Rules().classify("kernel", name) == "communication"
    assert Rules().classify("Kernel", name) == "communication"


@pytest.mark.parametrize("name", [
    "Cijk_Alik_Bljk_SB_MT64x16x32_MI16x16x1",       # rocBLAS GEMM on AMD: compute
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>>",
    "ampere_sgemm_128x64_nn",
    "triton_poi_fused_add_cos_sin_0",
    "my_nccl_wrapper_kernel",                       # nccl not at the start
])
def test_compute_kernel_names(name):
    assert Rules().classify("kernel", name) == "compute"


def test_category_decides_before_the_name():
    r = Rules()
    assert r.classify("gpu_memcpy", "ncclKernel_x") == "memcpy"
    assert r.classify("gpu_memset", "Memset (Device)") == "memset"
    assert r.classify("Memcpy", "Memcpy HtoD (Pageable -> Device)") == "memcpy"
    assert r.classify("cuda_sync", "Event Sync") == "sync"
    assert r.classify("kernel", "Memcpy DtoD") == "compute"  # a kernel is a kernel
    for host in ("cpu_op", "cuda_runtime", "user_annotation", "gpu_user_annotation", "python_function", "Trace"):
        assert r.classify(host, "ncclKernel_x") is None
    assert r.classify("mtia_ccp_events", "something_new") == "other"


def test_rules_extend_and_validate():
    r = Rules().extend(communication=[r"^my_allreduce"], categories={"xpu_kernel": "compute"},
                       names=[("kernel", r"^fused_copy", "memcpy")])
    assert r.classify("kernel", "my_allreduce_v2") == "communication"
    assert r.classify("xpu_kernel", "ncclKernel_x") == "communication"
    assert r.classify("kernel", "fused_copy_1") == "memcpy"
    assert r.classify("kernel", "ncclKernel_x") == "communication"  # defaults kept
    assert isinstance(r.names[0], NameRule)
    with pytest.raises(ValueError, match="expected one of"):
        Rules(categories={"kernel": "gpu"})
    with pytest.raises(ValueError, match="bad regular expression"):
        Rules(communication=["("])
    with pytest.raises(ValueError, match="kind must be one of"):
        Rules(names=[("*", "x", "busy")])
    with pytest.raises(TypeError, match="Rules"):
        read_kineto(sample("hta-triton_example"), rules=[("kernel", "compute")])
    # a mapping is device tables; a category -> kind mapping is not one
    with pytest.raises(OptionError, match=r"rules\['kernel'\]: expected a table"):
        read_kineto(sample("hta-triton_example"), rules={"kernel": "compute"})


def test_custom_rules_reach_the_events(tmp_path):
    p = _write(tmp_path / "t.json", [_kernel(0, 10, "my_allreduce"), _x("xpu_kernel", 20, 5, "k2")])
    default = read_kineto(p)
    assert default.events["kind"].to_pylist() == ["compute"]
    assert any("xpu_kernel 1" in w for w in default.warnings)   # unknown category, counted
    custom = read_kineto(p, rules=Rules().extend(communication=["^my_"], categories={"xpu_kernel": "compute"}))
    assert custom.events["kind"].to_pylist() == ["communication", "compute"]


# ---------------------------------------------------------------------------
# synthetic traces


def _x(cat, ts, dur, name, **args):
    args.setdefault("stream", 7)
    args.setdefault("device", 0)
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur, "args": args}


def _kernel(ts, dur, name="k", **args):
    return _x("kernel", ts, dur, name, **args)


def _write(path: pathlib.Path, events, *, rank=0, old=False, gz=False, raw=None, **top) -> pathlib.Path:
    if raw is None:
        if old:
            doc = events
        else:
            doc = {"schemaVersion": 1, **top, "traceEvents": events}
            if rank is not None:
                doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 2}
        raw = json.dumps(doc)
    data = raw.encode() if isinstance(raw, str) else raw
    if gz:
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def test_nanosecond_precision_from_decimal_text(tmp_path):
    # ts "1.001" us and dur "0.999" us: exactly 1001 ns and 999 ns, never via a double.
    raw = ('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, '
           '"ts": 1.001, "dur": 0.999, "args": {"stream": 7, "device": 0}}], "distributedInfo": {"rank": 0}}')
    t = read_kineto(_write(tmp_path / "a.json", None, raw=raw))
    assert t.events["start_ns"].to_pylist() == [1001] and t.events["end_ns"].to_pylist() == [2000]
    assert t.ranks["time_resolution"].to_pylist() == ["ns"]


def test_large_timestamps_keep_every_digit(tmp_path):
    # 1712195495522456.125 us: as a double this is 1712195495522456.0 or .25;
    # pau keeps 1712195495522456125 ns. Exponents and sub-ns digits are exact too.
    raw = ('{"distributedInfo": {"rank": 0}, "traceEvents": ['
           '{"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "ts": 1712195495522456.125, "dur": 2.5e-1, '
           '"args": {"stream": 7}},'
           '{"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "ts": 1.7121954955224571E15, "dur": 0.0004, '
           '"args": {"stream": 7}},'
           '{"ph": "X", "cat": "kernel", "name": "c", "pid": 0, "ts": 1712195495522458.0005, "dur": 1, '
           '"args": {"stream": 7}}]}')
    t = read_kineto(_write(tmp_path / "a.json", None, raw=raw))
    assert t.events["start_ns"].to_pylist() == [1712195495522456125, 1712195495522457100, 1712195495522458001]
    assert t.events["end_ns"].to_pylist() == [1712195495522456375, 1712195495522457100, 1712195495522459001]
    assert any("below the nanosecond" in w for w in t.warnings)


def test_base_time_is_added(tmp_path):
    p = _write(tmp_path / "a.json", [_kernel(5.5, 1)], baseTimeNanoseconds=1_000_000_000_000_000_000,
               displayTimeUnit="ns")
    t = read_kineto(p)
    assert t.events["start_ns"].to_pylist() == [1_000_000_000_000_005_500]
    assert t.ranks["base_time_ns"].to_pylist() == [1_000_000_000_000_000_000]


def test_old_and_new_format_plain_and_gzip_agree(tmp_path):
    events = [_kernel(10, 5, "a"), _x("gpu_memcpy", 20, 3, "Memcpy HtoD"), _kernel(30, 1, "ncclKernel_x")]
    variants = [
        _write(tmp_path / "new.json", events),
        _write(tmp_path / "new.json.gz", events, gz=True),
        _write(tmp_path / "old.json", events, old=True),
        _write(tmp_path / "gz-with-odd-name.trace", events, gz=True),  # gzip found by its magic bytes
    ]
    tables = [read_kineto(p).events for p in variants]
    for t in tables[1:]:
        assert t.select(["stream", "start_ns", "end_ns", "kind"]).equals(
            tables[0].select(["stream", "start_ns", "end_ns", "kind"]))
    assert tables[0]["kind"].to_pylist() == ["compute", "memcpy", "communication"]
    assert read_kineto(variants[2]).ranks["format"].to_pylist() == ["array"]


def test_unicode_and_escapes_in_names(tmp_path):
    raw = ('{"distributedInfo": {"rank": 0}, "traceEvents": [{"ph": "X", "cat": "kernel", "pid": 0, '
           '"name": "k\\"quoted\\" \\\\ caf\\u00e9 \\ud83d\\ude80", "ts": 1, "dur": 1, "args": {"stream": 7}}]}')
    t = read_kineto(_write(tmp_path / "a.json", None, raw=raw))
    assert t.events["name"].to_pylist() == ['k"quoted" \\ café 🚀']


def test_multi_device_file_gives_one_rank_per_device(tmp_path):
    a = _write(tmp_path / "a.json", [_kernel(0, 10, device=0), _kernel(0, 10, device=1),
                                     _kernel(20, 5, device=1), _kernel(1, 2, device=3)], rank=0)
    b = _write(tmp_path / "b.json", [_kernel(0, 4, device=0)], rank=1)
    t = read_kineto(tmp_path)
    got = [(r["rank"], r["file_rank"], r["device"], r["events"], r["source_file"]) for r in t.ranks.to_pylist()]
    assert got == [(0, 0, 0, 1, str(a)), (1, 0, 1, 2, str(a)), (2, 0, 3, 1, str(a)), (3, 1, 0, 1, str(b))]
    assert any("several devices" in w for w in t.warnings)
    assert t.events["rank"].to_pylist() == [0, 1, 1, 2, 3]


def test_ranks_from_file_names_and_assigned(tmp_path):
    _write(tmp_path / "trace_rank_3.json", [_kernel(0, 1)], rank=None)
    _write(tmp_path / "worker-a.json", [_kernel(0, 1)], rank=None)
    _write(tmp_path / "x.json", [_kernel(0, 1)], rank=0)
    t = read_kineto(tmp_path)
    got = {r["source_file"].rsplit("/", 1)[1]: (r["rank"], r["rank_source"]) for r in t.ranks.to_pylist()}
    assert got == {"trace_rank_3.json": (3, "file name"), "worker-a.json": (1, "assigned"),
                   "x.json": (0, "distributedInfo")}
    assert len(t.warnings) == 2 and all("no distributedInfo.rank" in w for w in t.warnings)


def test_duplicate_rank_is_an_error(tmp_path):
    _write(tmp_path / "a.json", [_kernel(0, 1)], rank=5)
    _write(tmp_path / "b.json", [_kernel(0, 1)], rank=5)
    with pytest.raises(DuplicateRankError, match=r"b\.json: rank 5 .* also claimed by .*a\.json"):
        read_kineto(tmp_path)


def test_list_of_paths(tmp_path):
    a = _write(tmp_path / "a.json", [_kernel(0, 1)], rank=0)
    b = _write(tmp_path / "b.json", [_kernel(0, 1)], rank=1)
    assert read_kineto([a, b]).ranks["rank"].to_pylist() == [0, 1]


# ---------------------------------------------------------------------------
# bad files


def _valid_doc() -> bytes:
    events = [_kernel(i * 10, 5, f"k{i}") for i in range(200)]
    return json.dumps({"distributedInfo": {"rank": 0}, "traceEvents": events}, indent=1).encode()


def test_truncated_gzip(tmp_path):
    data = gzip.compress(_valid_doc())
    p = tmp_path / "t.json.gz"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError, match="gzip stream is truncated or corrupt") as err:
        read_kineto(p)
    assert err.value.path == str(p) and err.value.offset is not None and err.value.offset > 0


def test_gzip_with_and_without_isal_agree(tmp_path):
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(_valid_doc()))
    cats = sorted(kineto.DEFAULT_RULES.categories)
    fast = _kineto_parse._parse_file(str(p), cats, fast_gzip=True)
    slow = _kineto_parse._parse_file(str(p), cats, fast_gzip=False)
    for col in fast.rows:
        assert np.array_equal(fast.rows[col], slow.rows[col])


def test_corrupt_gzip(tmp_path):
    data = bytearray(gzip.compress(_valid_doc()))
    data[40:60] = b"\x00" * 20
    p = tmp_path / "t.json.gz"
    p.write_bytes(bytes(data))
    with pytest.raises(TraceFormatError, match="truncated or corrupt"):
        read_kineto(p)


def test_truncated_json_names_where(tmp_path):
    doc = _valid_doc()
    p = _write(tmp_path / "t.json", None, raw=doc[:5000])
    with pytest.raises(TraceFormatError, match="unexpected end of input inside the events array after") as err:
        read_kineto(p)
    assert err.value.offset == 5000 and err.value.line == doc[:5000].count(b"\n") + 1
    assert "truncated" in str(err.value)


def test_malformed_json_names_byte_and_line(tmp_path):
    raw = '{"distributedInfo": {"rank": 0},\n"traceEvents": [\n{"ph": "X", "cat": "kernel" "name": "k"}]}'
    p = _write(tmp_path / "t.json", None, raw=raw)
    with pytest.raises(TraceFormatError, match="malformed JSON: expected ',' or '}' in an object") as err:
        read_kineto(p)
    assert err.value.offset == raw.index('"name"') and err.value.line == 3
    assert f"byte {err.value.offset} (line 3)" in str(err.value)


@pytest.mark.parametrize("raw, message", [
    ('{"traceEvents": [{"ph": "X",}]}', "malformed JSON: expected a string"),
    ('{"traceEvents": [1, 2,]}', "trailing comma"),
    ('{"traceEvents": []} x', "data after the end of the document"),
    ('{"traceEvents": [{"name": tru}]}', "malformed JSON: unexpected"),
    ('{"traceEvents": [{"ts": 1.}]}', "expected digits after '.'"),
    ('{"traceEvents": {"a": 1}}', '"traceEvents" is not an array'),
])
def test_malformed_json_variants(tmp_path, raw, message):
    with pytest.raises(TraceFormatError, match=re.escape(message)):
        read_kineto(_write(tmp_path / "t.json", None, raw=raw))


def test_empty_file(tmp_path):
    p = tmp_path / "empty.json"
    p.write_bytes(b"")
    with pytest.raises(TraceFormatError, match="the file is empty"):
        read_kineto(p)
    p.write_bytes(b"  \n ")
    with pytest.raises(TraceFormatError, match="the file is empty"):
        read_kineto(p)
    gz = tmp_path / "empty.json.gz"
    gz.write_bytes(gzip.compress(b""))
    with pytest.raises(TraceFormatError, match="the file is empty"):
        read_kineto(gz)


@pytest.mark.parametrize("raw, message", [
    ("rank,start_ns,end_ns\n0,1,2\n", "not a Kineto trace: a trace is a JSON object"),
    (b"SQLite format 3\x00" + b"\x00" * 100, "not a Kineto trace"),
    ('{"schemaVersion": 1, "deviceProperties": []}', 'not a Kineto trace: a JSON object without a "traceEvents"'),
    ('":::MLLOG {}"', "not a Kineto trace"),
])
def test_wrong_format(tmp_path, raw, message):
    with pytest.raises(TraceFormatError, match=re.escape(message)):
        read_kineto(_write(tmp_path / "t.json", None, raw=raw))


def test_no_gpu_events(tmp_path):
    p = _write(tmp_path / "cpu.json", [_x("cpu_op", 0, 5, "aten::mm"), _x("cpu_op", 5, 5, "aten::add")])
    with pytest.raises(NoDeviceEventsError, match=r"no device events: 2 complete events.*cpu_op 2"):
        read_kineto(p)
    # In a directory, the other ranks are still read when asked to quarantine.
    _write(tmp_path / "gpu.json", [_kernel(0, 5)], rank=1)
    t = read_kineto(tmp_path, on_invalid="quarantine")
    assert t.events["rank"].to_pylist() == [1]
    assert t.quarantine.to_pylist() == [{"source_file": str(p), "location": "file", "reason": "no device events",
                                         "offset": None, "line": None, "category": None, "name": None}]


def test_missing_fields_raise_or_quarantine(tmp_path):
    events = [_kernel(0, 5, "ok1"), _kernel(10, 5, "ok2")]
    events.append({"ph": "X", "cat": "kernel", "name": "no_dur", "pid": 0, "ts": 20, "args": {"stream": 7}})
    events.append({"ph": "X", "cat": "gpu_memcpy", "name": "no_ts", "pid": 0, "dur": 1, "args": {"stream": 7}})
    events.append(_kernel(30, -2, "negative"))
    events.append(_kernel("40", 1, "ts_as_string"))
    raw = json.dumps({"distributedInfo": {"rank": 0}, "traceEvents": events}, indent=0)
    p = _write(tmp_path / "t.json", None, raw=raw)
    with pytest.raises(InvalidEventError, match=r"kernel event 'no_dur': missing \"dur\" \(4 such events") as err:
        read_kineto(p)
    assert err.value.offset == raw.index('{\n"ph": "X",\n"cat": "kernel",\n"name": "no_dur"')
    assert err.value.line == raw[: err.value.offset].count("\n") + 1
    t = read_kineto(p, on_invalid="quarantine")
    assert t.events["name"].to_pylist() == ["ok1", "ok2"]
    q = t.quarantine.to_pylist()
    assert [(r["name"], r["reason"]) for r in q] == [
        ("no_dur", 'missing "dur"'), ("no_ts", 'missing "ts"'), ("negative", 'negative "dur"'),
        ("ts_as_string", '"ts" is not a number of microseconds within the int64 nanosecond range')]
    assert any("4 events set aside" in w for w in t.warnings)
    # the common three columns: the file, "line L, offset B" of the event's "{" (an ASCII
    # file: bytes are characters), the reason; then the event's own offset, line, category
    starts = [raw.rindex("{", 0, raw.index(f'"name": "{n}"')) for n in ("no_dur", "no_ts", "negative", "ts_as_string")]
    lines = [raw[:b].count("\n") + 1 for b in starts]
    assert lines == [32, 42, 52, 65]  # 5 header lines, then 13 lines a kernel, 10 one without dur or ts
    assert [(r["source_file"], r["location"], r["reason"]) for r in q] == [
        (str(p), f"line {ln}, offset {b}", r["reason"]) for r, b, ln in zip(q, starts, lines)]
    assert [(r["offset"], r["line"], r["category"]) for r in q] == [
        (b, ln, c) for b, ln, c in zip(starts, lines, ("kernel", "gpu_memcpy", "kernel", "kernel"))]


def test_timestamp_overflow_is_invalid(tmp_path):
    p = _write(tmp_path / "t.json", [_kernel(1e20, 1, "huge"), _kernel(1, 1)])
    with pytest.raises(InvalidEventError, match="int64 nanosecond range"):
        read_kineto(p)


def test_missing_paths_and_bad_arguments(tmp_path):
    with pytest.raises(FileNotFoundError, match="no Kineto trace file or directory"):
        read_kineto(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="no trace files"):
        read_kineto(tmp_path)
    with pytest.raises(ValueError, match="on_invalid"):
        read_kineto(tmp_path, on_invalid="skip")


def test_errors_are_pau_errors():
    for cls in (TraceError, TraceFormatError, InvalidEventError, NoDeviceEventsError, DuplicateRankError):
        assert issubclass(cls, PauError) and issubclass(cls, ValueError)


def test_repr():
    t = read_kineto(sample("hta-trace_filter"))
    assert isinstance(t, KinetoTrace)
    assert repr(t) == "KinetoTrace(ranks=2, events=2358, steps=4, warnings=0)"


# ---------------------------------------------------------------------------
# issue 19: fuzz findings 2, 5 and 8, and spans the trace covers


def test_corrupt_gzip_names_the_byte_with_the_default_chunk_size(tmp_path):
    # Finding 8: the parser sees whole 1 MB chunks, so a file that fails inside its
    # first chunk said "after 0 bytes of JSON". A wrong CRC fails after all of it.
    events = [_kernel(i * 10, 5, f"k{i}") for i in range(3000)]
    doc = json.dumps({"distributedInfo": {"rank": 0}, "traceEvents": events}, indent=1).encode()
    data = bytearray(gzip.compress(doc, mtime=0))
    data[-8] ^= 0xFF  # the CRC-32 of the trailer
    p = tmp_path / "t.json.gz"
    p.write_bytes(bytes(data))
    with pytest.raises(TraceFormatError, match=r"corrupt at byte \d+ of the file, after \d+ bytes of JSON") as err:
        read_kineto(p)
    packed, json_bytes = map(int, re.search(r"byte (\d+) of the file, after (\d+) bytes", str(err.value)).groups())
    assert len(data) - 8 - 256 <= packed <= len(data) - 8     # where the damage is, to a 256-byte piece
    assert 0.9 * len(doc) < json_bytes <= len(doc)            # not 0
    assert err.value.offset == json_bytes


def test_negative_ts_without_a_base_is_a_time_before_the_epoch(tmp_path):
    # Finding 2: "ts": -1 was accepted without a word and the first error came later,
    # from span=. Any int64 is a time now (issue 19 item 6): read, spanned, classified.
    events = [_kernel(10, 5, "a"), _kernel(-1, 5, "b")]
    p = _write(tmp_path / "neg.json", events)
    t = read_kineto(p)
    assert sorted(t.events["start_ns"].to_pylist()) == [-1000, 10_000]
    run = pau.read(p)
    led = run.ledger()
    assert led.accountable["accountable_ns"].to_pylist() == [16_000]  # [-1 us, 15 us)


def test_negative_ts_relative_to_a_base_is_a_time_like_any_other(tmp_path):
    p = _write(tmp_path / "a.json", [_kernel(-1, 2, "a"), _kernel(5, 1, "b")], baseTimeNanoseconds=10_000)
    t = read_kineto(p)
    assert t.events["start_ns"].to_pylist() == [9_000, 15_000]
    assert t.events["end_ns"].to_pylist() == [11_000, 16_000]


def test_negative_base_time_is_added_with_a_warning_or_refused(tmp_path):
    p = _write(tmp_path / "a.json", [_kernel(5, 1, "a")], baseTimeNanoseconds=-2_000)
    t = read_kineto(p)
    assert t.events["start_ns"].to_pylist() == [3_000]
    assert "kineto.negative_base_time" in [w.code for w in t.warnings]
    p = _write(tmp_path / "b.json", [_kernel(1, 1, "a")], baseTimeNanoseconds=-2_000)
    assert read_kineto(p).events["start_ns"].to_pylist() == [-1_000]  # before the epoch: a time too


def test_times_beyond_int64_after_the_base_are_refused_with_the_event(tmp_path):
    p = _write(tmp_path / "a.json", [_kernel(9_000_000_000_000_000, 1, "a")],
               baseTimeNanoseconds=2**63 - 10)
    with pytest.raises(InvalidEventError, match="beyond the int64 nanosecond range") as err:
        read_kineto(p)
    assert err.value.offset is not None


@pytest.mark.parametrize("rank", [2**31, 2**40, 2**63 - 1])
def test_rank_beyond_int32_is_a_trace_error(tmp_path, rank):
    # Finding 5: OverflowError from numpy.
    p = _write(tmp_path / "a.json", [_kernel(1, 1)], rank=rank)
    with pytest.raises(TraceFormatError, match=f"distributedInfo.rank is {rank}, beyond the largest rank") as err:
        read_kineto(p)
    assert err.value.path == str(p)


def test_rank_beyond_int32_in_the_file_name_is_a_trace_error(tmp_path):
    p = _write(tmp_path / "rank-99999999999.json", [_kernel(1, 1)], rank=None)
    with pytest.raises(TraceFormatError, match="the file name gives rank 99999999999"):
        read_kineto(p)


def test_a_20_digit_profiler_step_is_an_invalid_event(tmp_path):
    # Finding 5: OverflowError for ProfilerStep#<20 digits>.
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#12345678901234567890", "pid": 0,
            "tid": 1, "ts": 0, "dur": 100}
    p = _write(tmp_path / "a.json", [step, _kernel(1, 1)])
    with pytest.raises(InvalidEventError, match=r"'ProfilerStep#12345678901234567890': the ProfilerStep# number "
                       "is beyond int64") as err:
        read_kineto(p)
    assert err.value.offset == p.read_bytes().index(b'{"ph": "X", "cat": "user_annotation"')
    t = read_kineto(p, on_invalid="quarantine")
    assert t.lifecycle.num_rows == 0 and t.quarantine.num_rows == 1
    assert t.quarantine.select(["source_file", "location", "reason", "name"]).to_pylist() == [{
        "source_file": str(p), "location": f"line 1, offset {err.value.offset}",
        "reason": "the ProfilerStep# number is beyond int64", "name": "ProfilerStep#12345678901234567890"}]
    ok = dict(step, name="ProfilerStep#9223372036854775807")  # the largest that fits
    assert read_kineto(_write(tmp_path / "b.json", [ok, _kernel(1, 1)])).lifecycle["step"].to_pylist() == [2**63 - 1]


def test_span_is_clipped_to_the_capture_window(tmp_path):
    # hta-triton_example: ProfilerStep#1 ends 13 s after the capture window.
    t = read_kineto(sample("hta-triton_example"))
    win = t.ranks.to_pylist()[0]
    assert (win["window_start_ns"], win["window_end_ns"]) == (1730156790742269099, 1730156791097763283)
    span = t.spans().to_pylist()[0]
    assert span == {"rank": 0, "start_ns": 1730156791096090100, "end_ns": 1730156791097763283}
    assert t.lifecycle["end_ns"].to_pylist() == [1730156791097763283]
    codes = [w.code for w in t.warnings]
    assert "kineto.steps_clipped_to_window" in codes and "kineto.low_device_coverage" in codes
    (low,) = [w for w in t.warnings if w.code == "kineto.low_device_coverage"]
    assert "1,760 ns of its 1,673,183 ns span (0.11 %, below 5 %)" in low
    # the run's ledger covers the captured 1.67 ms, not 13.3 s
    run = pau.read(sample("hta-triton_example"))
    assert run.summary()["ledger"]["accountable_ns"] == 1_673_183


def test_window_does_not_cut_device_events(tmp_path):
    trace_ev = {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": 0, "tid": 0, "ts": 100,
                "dur": 100}
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 0, "tid": 1, "ts": 120,
            "dur": 10_000}
    p = _write(tmp_path / "a.json", [trace_ev, step, _kernel(50, 20, "early"), _kernel(150, 10)])
    t = read_kineto(p)
    assert t.spans().to_pylist() == [{"rank": 0, "start_ns": 50_000, "end_ns": 200_000}]
    assert t.lifecycle["start_ns"].to_pylist() == [120_000] and t.lifecycle["end_ns"].to_pylist() == [200_000]
    codes = [w.code for w in t.warnings]
    assert "kineto.events_outside_window" in codes and "kineto.steps_clipped_to_window" in codes
    assert "kineto.low_device_coverage" not in codes  # 30 of 150 us: 20 %
