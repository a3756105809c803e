"""Which device work is which kind: one rule table per device type, as data.

A profiler writes each device event with a *category* (Kineto's activity type:
``kernel``, ``gpu_memcpy``, ``mtia_ccp_events``...) and a *name*. A table says, for
one device type, which categories are device work and how a category and a name
become a kind of DESIGN §2.1. A table is plain data (dicts, lists and strings) so
that a caller can give one from a JSON file and replace a default:

``categories``
    category -> kind, or ``None`` when the category alone does not say (MTIA's command
    processor writes math, copies and waits under one category): then only the name
    rules decide, and a name no rule matches is *unclassified*. Unclassified time
    is counted as ``other`` and reported with its top names in a warning, never
    silently.
``names``
    ``[category or "*", pattern, kind]`` tried in order before the category's kind
    (``re.search``).
``communication``
    patterns of collective kernels: a name matching one of them in a category whose
    kind is ``compute`` is ``communication``.

The tables here are the defaults. Where a rule rests on a real sample or on the
vendor's documented naming, its comment says which; rules without a sample are
marked so (the device's traces were not available to check them).

This module holds data and one validation function only; the readers compile the
tables (``pau.readers.kineto.Rules``).

It also holds the host-side names the idle split reads (``docs/idle.md``):
:data:`SYNC_CALLS`, the runtime and driver calls in which the host blocks until the
device (a stream, an event) has finished, and :data:`DATA_WAIT_SPANS`, the host spans
in which it waits for the next batch of data.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Tuple, TypedDict

from pau.engine.vocab import KINDS
from pau.errors import RulesError

__all__ = ["DATA_WAIT_SPANS", "DEVICE_TABLES", "DEVICES", "RuleTable", "SYNC_CALLS", "check_table", "sync_call"]

#: The device types pau has a table for, in the order their rules are tried.
DEVICES = ("cuda", "rocm", "xpu", "hpu", "mtia", "xla")

# Collective libraries' kernel names, shared by the GPU-like devices: the name starts
# with the library (optionally after a C++ `void `), any case.
_NCCL = r"(?i)^(?:void\s+)?nccl"       # ncclKernel_*, ncclDevKernel_* (NCCL; RCCL keeps the names on ROCm)

#: The default table of each device type (see the module docstring for the fields).
DEVICE_TABLES: Mapping[str, Mapping[str, Any]] = {
    # NVIDIA CUDA (CUPTI through Kineto). Samples: hta-*, param-dlrm-8ranks, pytorch-kineto.
    "cuda": {
        "categories": {
            "kernel": "compute",
            "Kernel": "compute",          # the old Kineto format (pytorch-kineto samples)
            "gpu_memcpy": "memcpy",
            "Memcpy": "memcpy",
            "gpu_memset": "memset",
            "Memset": "memset",
            "cuda_sync": "sync",          # Stream Sync, Event Sync, Context Sync, Stream Wait Event
        },
        "names": [],
        "communication": [
            _NCCL,
            r"(?i)^(?:void\s+)?msccl",    # MSCCL / MSCCL++
        ],
    },
    # AMD ROCm (roctracer through Kineto) writes CUDA's categories. Samples: hta-amd_trace,
    # tracelens-mi300x (RCCL kernels are named ncclDevKernel_* there).
    "rocm": {
        "categories": {},
        "names": [],
        "communication": [r"(?i)^(?:void\s+)?rccl"],  # RCCL builds that prefix their own name
    },
    # Intel XPU (XPUPTI through Kineto) writes "kernel", "gpu_memcpy", "gpu_memset" too;
    # oneCCL's device kernels. No sample.
    "xpu": {
        "categories": {},
        "names": [],
        "communication": [r"(?i)^(?:void\s+)?(?:oneccl|ccl_(?:all|reduce|bcast|broadcast|send|recv))"],
    },
    # Intel Gaudi (HPU): HCCL collectives (also Huawei Ascend's HCCL/HCOM names).
    # No sample.
    "hpu": {
        "categories": {},
        "names": [],
        "communication": [r"(?i)^(?:void\s+)?(?:hccl|hcom)"],
    },
    # Meta MTIA: the command processor's events, one category for every kind.
    # Sample: hta-mtia_inference_trace (pe_exe, merge, remote, dma_request, event_wait,
    # event_record); training traces name each op with its dtype (fc-dtype_Float,
    # batch_matmul-dtype_Float, aten::mul.out-dtype_Float: issue 19).
    "mtia": {
        "categories": {"mtia_ccp_events": None},
        "names": [
            ["mtia_ccp_events", r"^dma", "memcpy"],                        # dma_request
            ["mtia_ccp_events", r"^event_(?:wait|record)$", "sync"],      # a stream waits on / marks an event
            ["mtia_ccp_events", r"(?i)(?:all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|c10d::)",
             "communication"],
            ["mtia_ccp_events", r"^(?:pe_exe|merge|remote)$", "compute"],  # processing-element jobs
            ["mtia_ccp_events", r"-dtype_\w+$", "compute"],               # an op kernel with its dtype
            ["mtia_ccp_events", r"^aten::", "compute"],
        ],
        "communication": [],
    },
    # XLA (TPU, or GPU through XLA): HLO op names. PyTorch/XLA and JAX write XPlane, not
    # Kineto JSON, so no Kineto trace carries these; the rules apply to a category a
    # converter writes once the caller names it, e.g.
    # {"xla": {"categories": {"xla_op": "compute"}}}. No sample.
    "xla": {
        "categories": {},
        "names": [
            ["*", r"^(?:all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute|"
                  r"send|recv)(?:-start|-done)?(?:[.\d]*)$", "communication"],
            ["*", r"^copy(?:-start|-done)?(?:[.\d]*)$", "memcpy"],
        ],
        "communication": [],
    },
}


class RuleTable(TypedDict):
    """One device's rule table as :func:`check_table` returns it: kind per category
    (None: by name only), ``(category, pattern, kind)`` name rules, communication
    patterns."""

    categories: Dict[str, Optional[str]]
    names: List[Tuple[str, ...]]
    communication: List[str]


def check_table(device: str, table: Any) -> RuleTable:
    """A validated copy of one table (:class:`pau.errors.RulesError` naming the device,
    the field and the fix)."""
    if not isinstance(table, Mapping):
        raise RulesError(f"rules[{device!r}]: expected a table, got {type(table).__name__}. Fix: give a mapping "
                         "with categories, names, communication (docs/devices.md)")
    unknown = sorted(set(table) - {"categories", "names", "communication"})
    if unknown:
        raise RulesError(f"rules[{device!r}]: unknown field {', '.join(map(repr, unknown))}. Fix: a table has "
                         "categories, names, communication only")
    cats = dict(table.get("categories") or {})
    for cat, kind in cats.items():
        if kind is not None and kind not in KINDS:
            raise RulesError(f"rules[{device!r}].categories[{cat!r}] = {kind!r}: expected one of "
                             f"{', '.join(KINDS)}. Fix: give one of them, or None (by name only)")
    names: list[tuple[str, ...]] = []
    for i, rule in enumerate(table.get("names") or ()):
        if isinstance(rule, str) or len(rule) != 3:
            raise RulesError(f"rules[{device!r}].names[{i}]: expected [category, pattern, kind], got {rule!r}. "
                             "Fix: give each rule as [category, pattern, kind]")
        names.append(tuple(str(x) for x in rule))
    comm = table.get("communication") or ()
    if isinstance(comm, str):
        raise RulesError(f"rules[{device!r}].communication is a string. Fix: give a list of patterns")
    return {"categories": cats, "names": names, "communication": [str(p) for p in comm]}


#: Host calls that block until the device has drained (a stream, an event or the whole
#: device), per device type: the host waits in them, so device idle time under one is
#: ``sync_wait`` (docs/idle.md). Names as the runtime exports them; Nsight appends the
#: API version (``cudaStreamSynchronize_v3020``) and the per-thread default stream
#: variants end in ``_ptsz``/``_ptds``: :func:`sync_call` strips both. Calls that only
#: order the device (``cudaStreamWaitEvent``) or poll (``cudaStreamQuery``) do not
#: block the host and are not listed.
SYNC_CALLS: Mapping[str, tuple[str, ...]] = {
    # CUDA runtime and driver. Samples: hta-critical_path (cudaStreamSynchronize,
    # cudaEventSynchronize, cudaDeviceSynchronize), param-dlrm-8ranks, icon_isc25 (Nsight).
    "cuda": ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
             "cudaThreadSynchronize", "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize"),
    # HIP. Sample: hta-amd_trace (hipDeviceSynchronize).
    "rocm": ("hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipCtxSynchronize"),
    # Level Zero / Unified Runtime (SYCL) as XPUPTI names them. No sample.
    "xpu": ("zeCommandQueueSynchronize", "zeEventHostSynchronize", "zeFenceHostSynchronize",
            "urQueueFinish", "urEventWait"),
    # Gaudi: no sample, names unknown.
    "hpu": (),
    # MTIA runtime. Sample: hta-mtia_inference_trace (mtia_runtime synchronize,
    # synchronizeStream).
    "mtia": ("synchronize", "synchronizeStream"),
    "xla": (),
}

_SYNC_NAMES = frozenset(n for names in SYNC_CALLS.values() for n in names)
_API_SUFFIX = re.compile(r"(?:_v\d+)?(?:_pt(?:sz|ds))?(?:_v\d+)?$")


def sync_call(name: str, calls: Any = None) -> bool:
    """Whether a host call named ``name`` is a synchronize call of :data:`SYNC_CALLS`
    (or of ``calls``, a set of names), once Nsight's API version suffix (``_v3020``)
    and the per-thread stream suffix (``_ptsz``, ``_ptds``) are stripped."""
    names = _SYNC_NAMES if calls is None else calls
    return name in names or _API_SUFFIX.sub("", name) in names


#: Host spans in which the training loop waits for the next batch (``re.search``): the
#: PyTorch DataLoader's ``__next__`` as ``torch.profiler`` annotates it
#: (``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__``, the
#: ``_MultiProcessingDataLoaderIter`` too: samples param-dlrm-8ranks, pytorch-kineto,
#: hta-rank_non_gpu) and its Python frame with ``with_stack``
#: (``torch/utils/data/dataloader.py(631): __next__``). Nsight's NVTX ranges are matched
#: with the same patterns (``torch.autograd.profiler.emit_nvtx`` writes these names).
DATA_WAIT_SPANS: tuple[str, ...] = (
    r"^enumerate\(DataLoader\)#",
    r"dataloader\.py\(\d+\): __next__$",
)
