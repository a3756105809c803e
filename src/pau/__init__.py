"""pau: productive accelerator utilization.

An exact ledger of accelerator time from per-rank timelines: what useful work the
accelerators completed and what it cost. The public API lives in :mod:`pau.core`;
the tree shows the layers, bottom to top: :mod:`pau.engine` (columns in, exact ledgers
out), :mod:`pau.readers` (other tools' files), :mod:`pau.figures` and :mod:`pau.compat`
(figures over ledgers and runs), :mod:`pau.run` (one run from every reader),
:mod:`pau.views` (text, plots, HTML), the facade :mod:`pau.core` and the command line.

The names below are loaded on first use (PEP 562), so that ``import pau`` (and the
command line's ``--help``) does not load numpy, pyarrow and the kernels until a name
that needs them is asked for; ``tests/test_layout.py`` holds this one dynamic import
to what the package exports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

try:
    from pau import _core  # noqa: F401  (the compiled core; private)
except ImportError as exc:  # pragma: no cover - only without a build
    raise ImportError(
        "pau's native core (pau._core) is not built. Install pau with `pip install .` "
        "from a clone (a C++17 compiler is needed), not by putting src/ on sys.path."
    ) from exc

from pau import errors

if TYPE_CHECKING:  # what the lazy names are, for type checkers
    from pau.core import (
        ACTIVITIES, KINDS, STATES, Fleet, Ledger, Overlap, Quarantined, attribute, classify, classify_dataset, ledger,
        overlap, read_fleet,
    )
    from pau.run import Run, RunWarning, read, read_runs

__version__: str = _core.__version__

#: Each public name and the module it comes from.
_LAZY = {**dict.fromkeys(("ACTIVITIES", "KINDS", "STATES", "Fleet", "Ledger", "Overlap", "Quarantined", "attribute",
                          "classify", "classify_dataset", "ledger", "overlap", "read_fleet"), "pau.core"),
         **dict.fromkeys(("Run", "RunWarning", "read", "read_runs"), "pau.run")}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pau' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


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
    "Fleet",
    "ledger",
    "overlap",
    "read",
    "read_fleet",
    "read_runs",
    "Run",
    "RunWarning",
    "__version__",
]
