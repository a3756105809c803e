"""The one place that sets Numba's options for pau's kernels.

* ``nogil=True``: kernels release the GIL, so callers may run them on threads.
* ``cache=True``: compiled code is cached beside the module; only the first call
  of a fresh install pays the compile time.
* ``boundscheck=False`` and no ``fastmath``: kernels do integer interval
  arithmetic that must be exact; their inputs are validated before they run.
"""

from __future__ import annotations

from numba import njit

OPTIONS = {"nogil": True, "cache": True, "boundscheck": False, "fastmath": False}


def kernel(fn):
    """Compile ``fn`` with pau's options (lazily, on first call)."""
    return njit(**OPTIONS)(fn)
