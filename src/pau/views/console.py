"""The command line's terminal output through ``rich``: tables rendered to plain text,
and what stderr shows while a run is read (a transient progress display).

Only :mod:`pau.cli` imports this module, so ``import pau`` and ``import pau.core``
never load ``rich`` (``pau --help`` stays fast; ``benchmarks/test_bench_startup.py``).

Tables are plain text whatever the output is (a terminal, a file, a pipe): no colour,
no ANSI code, each table at its natural width (the widest cell of each column; nothing
wraps, however narrow the terminal), trailing spaces removed. The same report gives the
same bytes on a terminal, in ``-o FILE`` and in a test.
"""

from __future__ import annotations

import io
import os
import time
from typing import Any, Sequence, TextIO

from rich.box import Box
from rich.console import Console
from rich.progress import BarColumn, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.progress import Progress as _RichProgress
from rich.table import Table
from rich.text import Text

from pau.engine._progress import MIN_INTERVAL, Progress

__all__ = ["BIG_FILE_BYTES", "Status", "render", "table"]

#: A single file at least this big gets a spinner while it is read (64 MiB).
BIG_FILE_BYTES = 64 * 2**20
#: The width tables are laid out in: wide enough that no table of the report wraps.
_WIDTH = 10_000

# No outer frame; a rule of dashes under the heading and above a total row, one per
# column (as ``nsys stats`` and ``sacct`` print theirs), in ASCII.
_BOX = Box("    \n"
           "    \n"
           " -  \n"
           "    \n"
           " -  \n"
           " -  \n"
           "    \n"
           "    \n", ascii=True)


def table(head: Sequence[str], rows: Sequence[Sequence[str]], *, justify: str | None = None,
          total: Sequence[Sequence[str]] = ()) -> Table:
    """A table of text cells.

    Parameters
    ----------
    head : sequence of str
        The column headings.
    rows : sequence of sequences of str
        The cells, already formatted (units from :mod:`pau.engine._format`); shown as given
        (no markup).
    justify : str, optional
        One letter per column, ``l`` (names) or ``r`` (numbers); by default the first
        column left and the others right.
    total : sequence of sequences of str
        Rows after a rule (totals).

    Returns
    -------
    rich.table.Table
    """
    just = justify or "l" + "r" * (len(head) - 1)
    if len(just) != len(head):
        raise ValueError(f"table: {len(head)} columns but justify {just!r}")
    t = Table(box=_BOX, show_edge=False, pad_edge=False, highlight=False, padding=(0, 1, 0, 0))
    for h, j in zip(head, just):
        t.add_column(Text(h), justify="right" if j == "r" else "left", no_wrap=True)
    for r in rows:
        t.add_row(*(Text(c) for c in r))
    if total:
        t.add_section()
        for r in total:
            t.add_row(*(Text(c) for c in r))
    return t


def render(*items: Table | str) -> str:
    """Tables and lines as plain text (module docstring), one after the other."""
    buf = io.StringIO()
    console = Console(file=buf, width=_WIDTH, color_system=None, force_terminal=False, force_jupyter=False,
                      no_color=True, highlight=False, emoji=False, markup=False, soft_wrap=False)
    for item in items:
        if isinstance(item, str):
            buf.write(item + "\n")
        else:
            console.print(item)
    return "\n".join(line.rstrip() for line in buf.getvalue().rstrip("\n").split("\n"))


def _size(n: int) -> str:
    for u, k in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= k:
            return f"{n / k:,.1f} {u}"
    return f"{n:,} B"


def _files(path: str) -> tuple[int, int]:
    """Files under ``path`` (itself for a file) and their bytes."""
    if not os.path.isdir(path):
        return 1, os.path.getsize(path)
    n = size = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                size += os.path.getsize(os.path.join(root, name))
            except OSError:  # a broken link: the reader names it
                continue
            n += 1
    return n, size


class Status:
    """What stderr shows while the command line reads (a transient ``rich`` progress
    display, gone when the read ends).

    * :meth:`reading`: a spinner naming the path, its files and size, and the time
      elapsed (while a folder of several files or a file of :data:`BIG_FILE_BYTES` or
      more is read);
    * :meth:`file_done`: files done / total, for a folder read file by file;
    * called with a :class:`pau.Progress` (the ``progress=`` callable of
      :func:`pau.read` and :func:`pau.core.classify_dataset`): partitions and rows
      done / total and the rate, redrawn at most every :data:`pau.engine._progress.MIN_INTERVAL`.

    Parameters
    ----------
    stream : text stream
        Where to draw (stderr).
    force : bool
        Draw even when ``stream`` is not a terminal (``--progress``).
    """

    def __init__(self, stream: TextIO, *, force: bool = False, clock: Any = time.monotonic):
        self.console = Console(file=stream, force_terminal=True if force else None, highlight=False,
                               markup=False, emoji=False)
        self.active = force or self.console.is_terminal
        self.clock = clock
        self._progress = _RichProgress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                       TextColumn("{task.fields[counts]}"), TimeElapsedColumn(),
                                       console=self.console, transient=True, refresh_per_second=10)
        self._started = False
        self._tasks: dict[str, TaskID] = {}
        self._last = -1.0
        self.drawn = 0

    def _task(self, key: str, description: str, total: float | None) -> TaskID:
        if not self._started:
            self._progress.start()
            self._started = True
        if key not in self._tasks:
            self._tasks[key] = self._progress.add_task(description, total=total, counts="")
        return self._tasks[key]

    def reading(self, path: str) -> None:
        """Show a spinner for reading ``path`` when it is a folder of several files or a
        big file (else nothing)."""
        if not self.active or not os.path.exists(path):
            return
        n, size = _files(path)
        if (os.path.isdir(path) and n > 1) or size >= BIG_FILE_BYTES:
            what = f"{n:,} files, {_size(size)}" if os.path.isdir(path) else _size(size)
            self._task("read", f"reading {os.path.basename(os.path.normpath(path)) or path}", None)
            self._progress.update(self._tasks["read"], counts=what)
            self.drawn += 1

    def file_done(self, done: int, total: int, path: str) -> None:
        """``done`` of ``total`` files read, the last ``path``."""
        if not self.active:
            return
        tid = self._task("files", "files", total)
        self._progress.update(tid, completed=done, total=total,
                              counts=f"{done:,}/{total:,} files ({os.path.basename(path)})")
        self.drawn += 1

    def __call__(self, p: Progress) -> None:
        if not self.active:
            return
        now = self.clock()
        done = p.partitions_done == p.partitions_total and (p.rows_total is None or p.rows_done >= p.rows_total)
        if not done and self._last >= 0 and now - self._last < MIN_INTERVAL:
            return
        self._last = now
        total = p.rows_total if p.rows_total else max(p.partitions_total, 1)
        completed = p.rows_done if p.rows_total else p.partitions_done
        rows = f"{p.rows_done:,}/{p.rows_total:,}" if p.rows_total is not None else f"{p.rows_done:,}"
        tid = self._task("events", "events", total)
        self._progress.update(tid, completed=completed, total=total,
                              counts=f"{p.partitions_done}/{p.partitions_total} partitions  {rows} rows  "
                                     f"{p.rows_per_s / 1e6:.1f} M rows/s")
        self._progress.refresh()
        self.drawn += 1

    def close(self) -> None:
        """End the display (it leaves no line behind)."""
        if self._started:
            self._progress.refresh()
            self._progress.stop()
            self._started = False
