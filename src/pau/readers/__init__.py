"""Readers that turn other tools' files into pau's tables (DESIGN §5).

Each reader lives in its own module and returns pau's tables (``events``,
``lifecycle``, ``requests``...) plus what it learned about the input, without
analysing it: analysis is :mod:`pau.core`'s job.

* :mod:`pau.readers.kineto`: PyTorch profiler (Kineto) Chrome-trace JSON.
* :mod:`pau.readers.nsys`: Nsight Systems SQLite exports.
* :mod:`pau.readers.mllog`: MLPerf ``:::MLLOG`` result logs.
* :mod:`pau.readers.serving`: vLLM / AIPerf / GenAI-Perf per-request results.
* :mod:`pau.readers.detect`: which of them a path needs.
"""

from __future__ import annotations

from pau.readers.detect import FORMATS, UnknownFormatError, detect_format
from pau.readers.kineto import KinetoTrace, Rules, read_kineto
from pau.readers.mllog import MLLogError, MLLogRun, mllog_summary, read_mllog
from pau.readers.nsys import NsysTrace, read_nsys
from pau.readers.serving import REQUESTS_SCHEMA, ServingFormatError, ServingResults, read_serving

__all__ = [
    "FORMATS", "KinetoTrace", "MLLogError", "MLLogRun", "NsysTrace", "REQUESTS_SCHEMA", "Rules",
    "ServingFormatError", "ServingResults", "UnknownFormatError", "detect_format", "mllog_summary",
    "read_kineto", "read_mllog", "read_nsys", "read_serving",
]
