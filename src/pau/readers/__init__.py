"""Readers that turn other tools' files into pau's tables (DESIGN §5).

Each reader lives in its own module and returns pau's tables (``events``,
``lifecycle``, ``requests``...) plus what it learned about the input, without
analysing it: analysis is :mod:`pau.core`'s job.

* :mod:`pau.readers.kineto`: PyTorch profiler (Kineto) Chrome-trace JSON.
* :mod:`pau.readers.nsys`: Nsight Systems SQLite exports.
* :mod:`pau.readers.mllog`: MLPerf ``:::MLLOG`` result logs.
* :mod:`pau.readers.serving`: vLLM / AIPerf / GenAI-Perf per-request results.
* :mod:`pau.readers.scheduler`, :mod:`pau.readers.slurm`, :mod:`pau.readers.kubernetes`:
  scheduler records (Philly, ``sacct`` text and JSON, Kubernetes pods, the Alibaba pod
  list) as the jobs table of DESIGN §7 (``docs/fleet.md``).
* :mod:`pau.readers.megatron`, :mod:`pau.readers.nvrx`: Megatron-LM training logs and
  NVRx cycle files as lifecycles.
* :mod:`pau.readers.telemetry`: hardware telemetry, one module per tool
  (:mod:`pau.readers.nvidia_smi`, :mod:`pau.readers.dcgm`, :mod:`pau.readers.amd_smi`,
  :mod:`pau.readers.nsys_metrics`) over :mod:`pau.readers.samples`.
* :mod:`pau.readers.detect`: which of them a path needs.

``docs/readers.md`` lists every reader and the one type it returns; their error classes
are in :mod:`pau.errors`.
"""

from __future__ import annotations

from pau.errors import MLLogError, ServingFormatError, UnknownFormatError
from pau.readers.detect import FORMATS, detect_format
from pau.readers.kineto import KinetoTrace, Rules, read_kineto
from pau.readers.kubernetes import read_alibaba_pods, read_pods
from pau.readers.megatron import read_megatron
from pau.readers.mllog import MLLogRun, mllog_summary, read_mllog, read_mllog_runs
from pau.readers.nsys import NsysTrace, read_nsys
from pau.readers.nvrx import read_nvrx
from pau.readers.scheduler import JOB_LIFECYCLE_SCHEMA, JOBS_SCHEMA, Records, read_philly
from pau.readers.serving import REQUESTS_SCHEMA, ServingResults, read_serving
from pau.readers.slurm import read_sacct_jobs

__all__ = [
    "FORMATS", "JOBS_SCHEMA", "JOB_LIFECYCLE_SCHEMA", "KinetoTrace", "MLLogError", "MLLogRun", "NsysTrace", "REQUESTS_SCHEMA", "Records", "Rules",
    "ServingFormatError", "ServingResults", "UnknownFormatError", "detect_format", "mllog_summary",
    "read_alibaba_pods", "read_kineto", "read_megatron", "read_mllog", "read_mllog_runs", "read_nsys", "read_nvrx", "read_philly",
    "read_pods", "read_sacct_jobs", "read_serving",
]
