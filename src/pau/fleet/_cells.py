"""A batch of hourly cells summed into a rollup's dense table in one pass (a Numba
kernel; ``docs/fleet.md``, "Rollups").

The cells' ``run`` and ``state`` columns come as dictionary indices; :class:`Lookup`
gives each dictionary entry its fine group and flags (a run) or its state, so a cell
costs a few array reads. Each cell of a kept run, in an hour inside ``since``/``until``,
adds its duration to its (period, fine group, state) sum, and to the group's
allocated column when its run has no job (and to the column after when, also, its
energy was not measured). The kernel checks every row as the NumPy path does (a run and
a state that exist, a duration >= 0, an hour on the hour), stopping at the first that
fails, and refuses a sum past int64 before making it. Its slow twin is
``tests/reference_fleet.py``'s ``add_cells``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pau.engine._jit import kernel

__all__ = ["ALONE", "BAD_ROW", "Cells", "Hours", "KEPT", "Lookup", "OVERFLOW", "UNMEASURED", "add_cells"]

#: Flags of a run (one byte each): its cells are summed; it has no job (its accountable
#: time is allocated); with a cost model, no job and its energy not measured.
KEPT, ALONE, UNMEASURED = 1, 2, 4
#: What :func:`add_cells` returns first: a row failed its checks; a sum would pass int64.
BAD_ROW, OVERFLOW = 1, 2

_NS_PER_HOUR = 3_600_000_000_000
_INT64_MAX = 9_223_372_036_854_775_807


class Cells(NamedTuple):
    """A batch of cells: dictionary indices of ``run`` and ``state`` (int32), and
    ``hour_ns`` and ``duration_ns`` (int64), one entry per cell."""

    run: np.ndarray
    state: np.ndarray
    hour: np.ndarray
    duration: np.ndarray


class Lookup(NamedTuple):
    """Per entry of the batch's ``run`` dictionary, its run's fine group (-1: no run of
    the runs table) and flags (:data:`KEPT`, :data:`ALONE`, :data:`UNMEASURED`); per
    entry of its ``state`` dictionary, the state's index in ``STATES`` (-1: none)."""

    fine: np.ndarray
    flags: np.ndarray
    state: np.ndarray


class Hours(NamedTuple):
    """The table's row of each hour from hour number ``first`` (``hour_ns // 1 h``) on,
    covering the batch's hours; -1 for an hour outside ``since``/``until``."""

    first: int
    row: np.ndarray


@kernel
def add_cells(cells, lookup, hours, table, columns):  # type: ignore[no-untyped-def]
    """Sum the batch into ``table`` (int64, a row per period, ``columns`` per fine group:
    the states, allocated, allocated not measured). Returns ``(0, 0, 0)``, or
    ``(BAD_ROW, row, 0)`` at the first row that fails a check, or ``(OVERFLOW, row,
    flat index of the sum)`` (that sum not made)."""
    flat = table.reshape(-1)
    width = table.shape[1]
    alloc = columns - 2
    for i in range(len(cells.duration)):
        g = lookup.fine[cells.run[i]]
        s = lookup.state[cells.state[i]]
        d = cells.duration[i]
        h = cells.hour[i]
        q = h // _NS_PER_HOUR
        if g < 0 or s < 0 or d < 0 or q * _NS_PER_HOUR != h:
            return BAD_ROW, i, 0
        f = lookup.flags[cells.run[i]]
        row = hours.row[q - hours.first]
        if (f & KEPT) == 0 or row < 0:
            continue
        at = row * width + g * columns
        if flat[at + s] > _INT64_MAX - d:
            return OVERFLOW, i, at + s
        flat[at + s] += d
        if (f & ALONE) != 0:
            if flat[at + alloc] > _INT64_MAX - d:
                return OVERFLOW, i, at + alloc
            flat[at + alloc] += d
            if (f & UNMEASURED) != 0:
                if flat[at + alloc + 1] > _INT64_MAX - d:
                    return OVERFLOW, i, at + alloc + 1
                flat[at + alloc + 1] += d
    return 0, 0, 0
