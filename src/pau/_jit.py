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


def helper(fn):
    """A small function of scalars that kernels call: inlined into them, so it costs
    nothing per call (a helper taking arrays would pay a reference count per array
    argument on every call)."""
    return njit(inline="always", **OPTIONS)(fn)
