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

import functools
import importlib
import sys
import threading
from typing import Any, Callable

OPTIONS = {"nogil": True, "cache": True, "boundscheck": False, "fastmath": False}

#: Whether this process has announced a compile (at most once).
ANNOUNCED = False

# Numba itself is imported on the first call of a pau kernel, not with pau: `import
# pau.core` (and everything a command does before it sweeps a lifecycle) does not pay
# for it. Until then each kernel is a _Lazy; the first call of any of them makes every
# registered kernel a Numba dispatcher, in place in its module (so kernels find each
# other, and `_kernels.name(...)` calls the dispatcher directly from then on).
_LAZY: list["_Lazy"] = []
_LOCK = threading.Lock()
_READY = False


class _Lazy:
    """A kernel not yet handed to Numba (see above)."""

    def __init__(self, fn: Callable[..., Any], extra: dict[str, Any]):
        functools.update_wrapper(self, fn)
        self.fn, self.extra = fn, extra
        self.dispatcher: Any = None
        _LAZY.append(self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.dispatcher is None:
            _materialize()
        return self.dispatcher(*args, **kwargs)


def _compile(numba: Any, fn: Callable[..., Any], **extra: Any) -> Any:
    try:
        return numba.njit(**OPTIONS, **extra)(fn)
    except RuntimeError as e:  # no writable cache directory (Numba: "cannot cache function ...")
        if "cannot cache" not in str(e):
            raise
        return numba.njit(**dict(OPTIONS, cache=False), **extra)(fn)


def _materialize() -> None:
    """Every registered kernel as a Numba dispatcher, once per process."""
    global _READY
    with _LOCK:
        if _READY:
            return
        numba = importlib.import_module("numba")
        event = importlib.import_module("numba.core.event")
        event.register("numba:compile", _first_compile_listener(event))
        for lazy in _LAZY:
            lazy.dispatcher = _compile(numba, lazy.fn, **lazy.extra)
        for lazy in _LAZY:  # kernels call each other through their module's globals
            g = lazy.fn.__globals__
            for name, value in list(g.items()):
                if isinstance(value, _Lazy):
                    g[name] = value.dispatcher
        _READY = True


def loaded() -> bool:
    """Whether this process has loaded Numba and pau's kernels (their first call did)."""
    return _READY


def kernel(fn: Callable[..., Any]) -> Any:
    """Compile ``fn`` with pau's options (lazily, on first call)."""
    return _Lazy(fn, {})


def helper(fn: Callable[..., Any]) -> Any:
    """A small function of scalars that kernels call: inlined into them, so it costs
    nothing per call (a helper taking arrays would pay a reference count per array
    argument on every call)."""
    return _Lazy(fn, {"inline": "always"})


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


def _first_compile_listener(event: Any) -> Any:
    """A Numba event listener that writes :func:`announcement` when Numba starts
    compiling a pau kernel, once per process. Numba sends the ``numba:compile`` event
    only when it compiles (a kernel found in the cache is loaded without one)."""

    class _FirstCompile(event.Listener):  # type: ignore[name-defined,misc]
        def on_start(self, ev: Any) -> None:
            _announce(ev)

        def on_end(self, ev: Any) -> None:
            pass

    return _FirstCompile()


def _announce(ev: Any) -> None:
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
