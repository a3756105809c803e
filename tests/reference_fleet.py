"""Slow, obviously correct twins of the fleet's kernels (``pau.fleet._cells``), for the
Hypothesis tests that compare them: Python integers, one cell at a time."""

from __future__ import annotations

import numpy as np

H = 3_600 * 10**9
INT64_MAX = 2**63 - 1
KEPT, ALONE, UNMEASURED = 1, 2, 4


def add_cells(cells, lookup, hours, table: np.ndarray, columns: int) -> tuple[tuple[int, int, int], np.ndarray]:
    """What ``pau.fleet._cells.add_cells`` returns and leaves in ``table`` (a copy is
    returned; the argument is not touched): each row checked, then its duration added to
    its state's sum, and to allocated (no job) and allocated not measured (no job, energy
    not measured) of its group and period, a sum past int64 refused before it is made."""
    out = [[int(v) for v in row] for row in table]
    for i in range(len(cells.duration)):
        g = int(lookup.fine[int(cells.run[i])])
        s = int(lookup.state[int(cells.state[i])])
        d, h = int(cells.duration[i]), int(cells.hour[i])
        if g < 0 or s < 0 or d < 0 or h % H != 0:
            return (1, i, 0), np.array(out, np.int64).reshape(table.shape)
        f = int(lookup.flags[int(cells.run[i])])
        row = int(hours.row[h // H - hours.first])
        if not f & KEPT or row < 0:
            continue
        targets = [s]
        if f & ALONE:
            targets.append(columns - 2)
            if f & UNMEASURED:
                targets.append(columns - 1)
        for c in targets:
            if out[row][g * columns + c] + d > INT64_MAX:
                return (2, i, row * table.shape[1] + g * columns + c), np.array(out, np.int64).reshape(table.shape)
            out[row][g * columns + c] += d
    return (0, 0, 0), np.array(out, np.int64).reshape(table.shape)
