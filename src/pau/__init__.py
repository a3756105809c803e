"""pau: productive accelerator utilization.

An exact ledger of accelerator time from per-rank timelines: what useful work the
accelerators completed and what it cost. The public API lives in :mod:`pau.core`;
readers and writers in :mod:`pau.io`; synthetic runs in :mod:`pau.synth`.
"""

from __future__ import annotations

try:
    from . import _core  # noqa: F401  (the compiled core; private)
except ImportError as exc:  # pragma: no cover - only without a build
    raise ImportError(
        "pau's native core (pau._core) is not built. Install pau with `pip install .` "
        "from a clone (a C++17 compiler is needed), not by putting src/ on sys.path."
    ) from exc

from . import errors
from .core import (
    ACTIVITIES,
    KINDS,
    STATES,
    Ledger,
    Overlap,
    Quarantined,
    attribute,
    classify,
    classify_dataset,
    ledger,
    overlap,
)
from .run import Run, RunWarning, read, read_runs

__version__ = _core.__version__

__all__ = [
    "ACTIVITIES",
    "KINDS",
    "STATES",
    "Ledger",
    "Overlap",
    "Quarantined",
    "attribute",
    "classify",
    "classify_dataset",
    "errors",
    "ledger",
    "overlap",
    "read",
    "read_runs",
    "Run",
    "RunWarning",
    "__version__",
]
