"""Progress of long runs: a snapshot type, a one-line stderr bar, and the tracker
that feeds either from the partitions and row groups as they finish.

No dependency: the bar is one ``\\r``-rewritten line, redrawn at most ten times a
second. Callbacks and the bar are only ever called from the thread that drives the
run (the caller's), so a callback may raise (``KeyboardInterrupt`` included) and the
run stops there like on Ctrl-C.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, TextIO

from pau.errors import PauError

__all__ = ["Progress", "Bar", "Tracker", "tracker"]

#: Seconds between two redraws of the bar, and between two row-count callbacks.
MIN_INTERVAL = 0.1


@dataclass(frozen=True)
class Progress:
    """One snapshot of a run, passed to a ``progress=`` callable.

    ``partitions_total`` is the number of Parquet files (partitions) of the source
    and ``rows_total`` their rows from the Parquet footers (``None`` for an Arrow
    stream, whose length is unknown). Counts only grow during a run.
    """

    partitions_done: int
    partitions_total: int
    rows_done: int
    rows_total: int | None
    elapsed_s: float
    rows_per_s: float


class Bar:
    """``[#####     ] 3/8 partitions  1,234/9,999 rows  12.3 M rows/s  4.5 s`` on ``stream``."""

    def __init__(self, stream: TextIO, *, min_interval: float = MIN_INTERVAL, clock=time.monotonic):
        self.stream, self.min_interval, self.clock = stream, min_interval, clock
        self._last: float | None = None  # time of the last redraw
        self._pending: Progress | None = None  # a snapshot not drawn yet (throttled)
        self.drawn = 0

    @staticmethod
    def render(p: Progress) -> str:
        frac = (p.rows_done / p.rows_total if p.rows_total else
                p.partitions_done / p.partitions_total if p.partitions_total else 1.0)
        bar = "#" * int(30 * min(frac, 1.0))
        rows = f"{p.rows_done:,}/{p.rows_total:,}" if p.rows_total is not None else f"{p.rows_done:,}"
        return (f"[{bar:<30}] {p.partitions_done}/{p.partitions_total} partitions  {rows} rows  "
                f"{p.rows_per_s / 1e6:.1f} M rows/s  {p.elapsed_s:.1f} s")

    def __call__(self, p: Progress) -> None:
        now = self.clock()
        if self._last is not None and now - self._last < self.min_interval:
            self._pending = p
            return
        self._draw(p, now)

    def _draw(self, p: Progress, now: float) -> None:
        self.stream.write("\r" + self.render(p))
        self.stream.flush()
        self._last, self._pending = now, None
        self.drawn += 1

    def close(self) -> None:
        """Draw the last snapshot if it was throttled, then end the line."""
        if self._pending is not None:
            self._draw(self._pending, self.clock())
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


class Tracker:
    """Counts partitions and rows (rows from any thread), reports from the caller's.

    ``partition_done`` reports at once; row counts between partitions are reported by
    ``poll`` at most every :data:`MIN_INTERVAL` seconds.
    """

    def __init__(self, report: Callable[[Progress], Any] | None, partitions_total: int,
                 rows_total: int | None, *, clock=time.monotonic):
        self.report, self.clock = report, clock
        self.partitions_total, self.rows_total = partitions_total, rows_total
        self.partitions_done = 0
        self._rows: dict = {}  # partition -> rows swept so far (exact once it is done)
        self._lock = threading.Lock()
        self._t0 = clock()
        self._last_report = self._t0
        self._last_rows = -1

    @property
    def active(self) -> bool:
        return self.report is not None

    @property
    def rows_done(self) -> int:
        with self._lock:
            return sum(self._rows.values())

    def add_rows(self, part: int, rows: int) -> None:
        """Rows of partition ``part`` swept (any thread)."""
        with self._lock:
            self._rows[part] = self._rows.get(part, 0) + rows

    def partition_done(self, part: int, rows: int | None = None) -> None:
        """Partition ``part`` finished, with ``rows`` rows (None: as counted so far)."""
        if rows is not None:
            with self._lock:
                self._rows[part] = rows
        self.partitions_done += 1
        self._emit()

    def poll(self) -> None:
        if self.report is not None and self.clock() - self._last_report >= MIN_INTERVAL:
            self._emit()

    def snapshot(self) -> Progress:
        elapsed = max(self.clock() - self._t0, 0.0)
        rows = self.rows_done
        return Progress(self.partitions_done, self.partitions_total, rows, self.rows_total, elapsed,
                        rows / elapsed if elapsed > 0 else 0.0)

    def _emit(self) -> None:
        if self.report is None:
            return
        p = self.snapshot()
        self._last_report = self.clock()
        if (p.partitions_done, p.rows_done) == getattr(self, "_last_counts", None):
            return
        self._last_counts = (p.partitions_done, p.rows_done)
        self.report(p)

    def close(self) -> None:
        if isinstance(self.report, Bar):
            self.report.close()


def reporter(progress: Any) -> Callable[[Progress], Any] | None:
    """What a ``progress=`` argument means: None/False off; True a bar on stderr when
    stderr is a terminal; a callable receives :class:`Progress` snapshots."""
    if progress is None or progress is False:
        return None
    if progress is True:
        stream = sys.stderr
        isatty = getattr(stream, "isatty", None)
        return Bar(stream) if stream is not None and isatty is not None and isatty() else None
    if callable(progress):
        return progress
    raise PauError(f"progress: expected None, a bool or a callable taking pau.Progress, got {progress!r}")


def tracker(progress: Any, partitions_total: int, rows_total: int | None) -> Tracker:
    return Tracker(reporter(progress), partitions_total, rows_total)
