"""Readers that turn other tools' files into pau's tables (DESIGN §5).

Each reader lives in its own module and returns pau's tables (``events``,
``lifecycle``...) plus what it learned about the input, without analysing it:
analysis is :mod:`pau.core`'s job.

* :mod:`pau.readers.kineto`: PyTorch profiler (Kineto) Chrome-trace JSON.
"""

from __future__ import annotations

from .kineto import KinetoTrace, Rules, read_kineto

__all__ = ["KinetoTrace", "Rules", "read_kineto"]
