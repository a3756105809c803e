"""How many threads pau uses, decided in one place for the whole process.

The cores a process may use are those of its CPU affinity mask
(``os.sched_getaffinity``; ``os.cpu_count()`` where the platform has none), so a job
pinned to 2 cores of a 64-core node uses 2. Every pool and default in pau asks
:func:`cores`.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

from pau.errors import PauError

__all__ = ["MAX_THREADS", "PARALLEL_MIN_ROWS", "cores", "pool", "run_parts", "thread_count"]

#: The most threads one sweep or attribution is split over.
MAX_THREADS = 8
#: In-memory inputs at least this long are swept on several threads (by rank).
PARALLEL_MIN_ROWS = 500_000


def cores() -> int:
    """The cores this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity on this platform
        return max(1, os.cpu_count() or 1)


def thread_count(threads: int | None, rows: int, minimum: int = PARALLEL_MIN_ROWS) -> int:
    """Threads to use: ``threads``, or with None every core (up to :data:`MAX_THREADS`)
    from ``minimum`` rows of work on, else one."""
    if threads is None:
        return 1 if rows < minimum else min(cores(), MAX_THREADS)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise PauError(f"threads: expected a positive number, got {threads!r}")
    return int(threads)


_POOL: tuple[ThreadPoolExecutor | None, int] = (None, 0)


def pool() -> ThreadPoolExecutor:
    """One pool of sweep threads per process (the core releases the GIL); kept, as
    starting threads on every call costs as much as sweeping 100k events. A forked
    child gets a pool of its own: its parent's threads do not exist there."""
    global _POOL
    current, pid = _POOL
    if current is None or pid != os.getpid():
        current = ThreadPoolExecutor(max_workers=max(2, min(cores(), MAX_THREADS)),
                                     thread_name_prefix="pau-sweep")
        _POOL = (current, os.getpid())
    return current


def run_parts(fn: Callable[..., Any], jobs: Sequence[Sequence[Any]]) -> list:
    """``[fn(*job) for job in jobs]``: the first job on this thread, the others on the
    pool (the native code releases the GIL), so one thread fewer is woken; all on
    this thread when it is one of the pool's (never wait on the pool from inside)."""
    if len(jobs) <= 1 or threading.current_thread().name.startswith("pau-sweep"):
        return [fn(*job) for job in jobs]
    later = [pool().submit(fn, *job) for job in jobs[1:]]
    return [fn(*jobs[0])] + [f.result() for f in later]
