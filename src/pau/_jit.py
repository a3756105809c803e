"""The one place that sets Numba's options for pau's kernels, and where their
compiled code goes.

* ``nogil=True``: kernels release the GIL, so callers may run them on threads.
* ``cache=True``: a kernel compiles on its first call with an empty cache (seconds);
  later processes load the compiled code. Numba picks the cache directory: the
  ``NUMBA_CACHE_DIR`` environment variable when set; else ``__pycache__`` beside
  the module when it is writable; else a user-wide directory (``numba`` in the
  user's cache directory: ``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux). When none
  is writable the kernels compile in every process instead of failing to import.
* ``boundscheck=False`` and no ``fastmath``: kernels do integer interval
  arithmetic that must be exact; their inputs are validated before they run.

The first compile of a process says so in one line on stderr (:data:`ANNOUNCED`),
naming the cache directory; a process that loads every kernel from the cache says
nothing.
"""

from __future__ import annotations

import sys

from numba import njit
from numba.core import event

OPTIONS = {"nogil": True, "cache": True, "boundscheck": False, "fastmath": False}

#: Whether this process has announced a compile (at most once).
ANNOUNCED = False


def _compile(fn, **extra):
    try:
        return njit(**OPTIONS, **extra)(fn)
    except RuntimeError as e:  # no writable cache directory (Numba: "cannot cache function ...")
        if "cannot cache" not in str(e):
            raise
        return njit(**dict(OPTIONS, cache=False), **extra)(fn)


def kernel(fn):
    """Compile ``fn`` with pau's options (lazily, on first call)."""
    return _compile(fn)


def helper(fn):
    """A small function of scalars that kernels call: inlined into them, so it costs
    nothing per call (a helper taking arrays would pay a reference count per array
    argument on every call)."""
    return _compile(fn, inline="always")


def announcement(cache_dir: str | None) -> str:
    """The line a process writes on stderr before its first compile of a pau kernel.

    Parameters
    ----------
    cache_dir : str or None
        Where the compiled code goes (None: nowhere writable).

    Returns
    -------
    str
    """
    if cache_dir is None:
        return ("pau: compiling its Numba kernels for this process (a few seconds): no writable cache "
                "directory, so every process compiles them; set NUMBA_CACHE_DIR to one to keep them")
    return (f"pau: compiling its Numba kernels for first use (a few seconds, once): they are cached in "
            f"{cache_dir} (NUMBA_CACHE_DIR sets where)")


def silence() -> None:
    """No announcement in this process (``pau -q``; the test suite, which checks the
    line in processes of its own)."""
    global ANNOUNCED
    ANNOUNCED = True


class _FirstCompile(event.Listener):
    """Writes :func:`announcement` when Numba starts compiling a pau kernel, once per
    process. Numba sends the ``numba:compile`` event only when it compiles (a kernel
    found in the cache is loaded without one)."""

    def on_start(self, ev) -> None:
        global ANNOUNCED
        if ANNOUNCED:
            return
        dispatcher = ev.data.get("dispatcher")
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
        if not module.startswith("pau."):
            return
        ANNOUNCED = True
        sys.stderr.write(announcement(dispatcher.stats.cache_path) + "\n")
        sys.stderr.flush()

    def on_end(self, ev) -> None:
        pass


event.register("numba:compile", _FirstCompile())
