"""Exact int64 sums of a fleet rollup (``docs/fleet.md``, "Rollups"): values summed by
code through ``numpy.bincount`` in two exact halves, sums kept dense per period or
sparse (:class:`Acc`), (group, period) pairs as one int64 key; a sum past int64 is
refused naming it."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pau.errors import PauError
import pau.fleet.periods as _periods
from pau.fleet.periods import NS_PER_HOUR, Period

__all__ = ["INT64_MAX", "Acc", "Sparse", "pair", "refuse_overflow", "rows", "sum_by", "unpair"]

#: The largest int64: a sum beyond it is refused (292 accelerator-years in one group and
#: period). Sums are checked exactly (Python integers) where their float64 estimate
#: reaches NEAR.
INT64_MAX = 2**63 - 1
NEAR = float(2**62)
TOO_BIG = ("is beyond int64 ns (292 accelerator-years in one group and period). Fix: group finer or take "
            "shorter periods")


def refuse_overflow(a: np.ndarray, b: np.ndarray | None = None) -> None:
    """Refuse when ``a + b`` (or the sum of ``a`` along its last axis, ``b`` None) would
    pass int64; exact for the entries whose float64 estimate is near."""
    if b is None:
        est = a.astype(np.float64).sum(axis=-1)
        for i in np.flatnonzero(est.reshape(-1) >= NEAR).tolist():
            row = a.reshape(-1, a.shape[-1])[i]
            if sum(int(v) for v in row) > INT64_MAX:
                raise PauError(f"a rollup sum of {sum(int(v) for v in row):,} ns {TOO_BIG}")
        return
    est = a.astype(np.float64) + b.astype(np.float64)
    for i in np.flatnonzero(est.reshape(-1) >= NEAR).tolist():
        total = int(a.reshape(-1)[i]) + int(b.reshape(-1)[i])
        if total > INT64_MAX:
            raise PauError(f"a rollup sum of {total:,} ns {TOO_BIG}")

# ---------------------------------------------------------------------------
# exact sums


#: numpy's ``ufunc.at`` is a fast loop from 1.25 (about 25 times faster than two
#: ``bincount`` calls on a million values; before, slower than they are).
_FAST_AT = tuple(int(x) for x in np.__version__.split(".")[:2]) >= (1, 25)


def sum_by(codes: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """``values`` (int64 >= 0) summed by ``codes`` (0 <= code < size), exactly: by
    ``np.add.at`` in int64 when the float64 estimate of their total is below 2**62 (no bin
    can pass int64; numpy 1.25 and later, whose ``add.at`` is a fast loop), else the low 26
    bits and the rest through ``np.bincount`` (float64, exact while a bin's sum stays below
    2**53, checked), else ``np.add.at`` again or Python integers near int64."""
    if len(values) == 0:
        return np.zeros(size, np.int64)
    if _FAST_AT and float(values.sum(dtype=np.float64)) < NEAR:
        out = np.zeros(size, np.int64)
        np.add.at(out, codes, values)
        return out
    hi = values >> 26
    lo = values & ((1 << 26) - 1)
    if int(hi.max(initial=0)) * len(values) < 2**53 and len(values) < 2**27:
        high = np.bincount(codes, weights=hi, minlength=size).astype(np.int64)
        low = np.bincount(codes, weights=lo, minlength=size).astype(np.int64)
        # high * 2**26 + low < (high + low // 2**26 + 1) * 2**26: only bins near the top can overflow
        for i in np.flatnonzero(high + (low >> 26) >= (INT64_MAX >> 26)).tolist():
            if (int(high[i]) << 26) + int(low[i]) > INT64_MAX:
                raise PauError(f"a rollup sum of {(int(high[i]) << 26) + int(low[i]):,} ns {TOO_BIG}")
        return (high << 26) + low
    if float(values.astype(np.float64).sum()) < NEAR:
        out = np.zeros(size, np.int64)
        np.add.at(out, codes, values)
        return out
    exact = [0] * size  # near int64: Python integers
    for c, v in zip(codes.tolist(), values.tolist()):
        exact[c] += v
    if max(exact) > INT64_MAX:
        raise PauError(f"a rollup sum of {max(exact):,} ns {TOO_BIG}")
    return np.array(exact, np.int64)


class Sparse(NamedTuple):
    """Sums kept sparse, as :meth:`Acc.result` gives them: four int64 arrays of one
    length, an entry per (period start, fine group, column) key, each key once, each
    sum non-zero."""

    start: np.ndarray   #: the period's start (ns)
    group: np.ndarray   #: the fine group's code
    column: np.ndarray  #: the column summed (its index among the accumulator's columns)
    value: np.ndarray   #: the sum


class Acc:
    """Sums keyed by (period start, fine group, column), kept sparse: the non-zero sums of
    each batch, combined exactly (``sum_by``) whenever they pass :data:`COMPACT` entries
    and at the end. Memory: the (period, group, column) cells with time in them, not the
    cells read nor every group in every period."""

    COMPACT = 1 << 20
    #: Below this many (period, group, column) cells in all, the sums are dense arrays per
    #: period instead (faster; 64 MiB at most).
    DENSE = 1 << 23

    def __init__(self, groups: int, columns: int, period: Period, periods: int):
        self.G, self.C, self.period = groups, columns, period
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (period start, g * C + c, sum)
        self.pending = self.compacted = 0
        # dense: a row of G * C sums per period (``rows``: period start -> row of ``table``)
        self.rows: dict[int, int] | None = {} if periods * groups * columns <= self.DENSE else None
        self.table = np.zeros((0, groups * columns), np.int64)

    def _index(self, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The period starts present (a superset, in order) and each value's index there:
        arithmetic on the periods (no sort) when their range is small, else np.unique."""
        p = self.period
        if p.edges is not None:
            i = _periods.edge_index(p, start)
            i0 = int(i.min())
            n = int(i.max()) - i0 + 1
            if n * self.G * self.C <= (1 << 24):
                return p.edges[i0:i0 + n], i - i0
        elif p.unit == "mo":
            m = _periods.months(start)
            m0 = int(m.min())
            pi = (m - m0) // p.n
            n = int(pi.max()) + 1
            if n * self.G * self.C <= (1 << 24):
                return _periods.month_start(m0 + np.arange(n, dtype=np.int64) * p.n), pi
        else:
            w = p.width_ns
            assert w is not None
            lo = int(start.min())
            pi = (start - lo) // w
            n = int(pi.max()) + 1
            if n * self.G * self.C <= (1 << 24):
                return lo + np.arange(n, dtype=np.int64) * w, pi
        ps, inv = np.unique(start, return_inverse=True)
        return ps, inv.reshape(-1)

    def add(self, group: np.ndarray, start: np.ndarray, column: np.ndarray, values: np.ndarray,
            total: int | None = None) -> None:
        """Each value into its (group, period, column); with ``total``, also into that
        column of its group and period (no value's own column): one pass when dense."""
        if len(values) == 0:
            return
        ps, pi = self._index(start)
        gc = self.G * self.C
        size = len(ps) * gc
        code = pi.reshape(-1) * gc + group * self.C + column
        if size <= 4 * len(values) + (1 << 16):
            sums = sum_by(code, values, size)
            if self.rows is not None:
                if total is not None:  # the group and period's sum over its columns, refused past int64
                    per = sums.reshape(-1, self.C)
                    refuse_overflow(per)
                    per[:, total] = per.sum(axis=1)
                self._add_dense(ps, sums.reshape(len(ps), gc))
                return
            keys = np.flatnonzero(sums)
            vals = sums[keys]
        else:
            u, inv = np.unique(code, return_inverse=True)
            vals = sum_by(inv.reshape(-1), values, len(u))
            nz = vals != 0
            keys, vals = u[nz], vals[nz]
        self.parts.append((ps[keys // gc], keys % gc, vals))
        self.pending += len(vals)
        if self.pending > max(self.COMPACT, 2 * self.compacted):
            self._compact()
        if total is not None:
            self.add(group, start, np.full(len(values), total), values)

    def dense_rows(self, starts: np.ndarray) -> np.ndarray:
        """The dense table's row of each period start (new ones zero; the table grows)."""
        rows = self.rows
        assert rows is not None
        out = np.array([rows.setdefault(s, len(rows)) for s in starts.tolist()], np.int64)
        if len(rows) > len(self.table):
            grown = np.zeros((max(len(rows), 2 * len(self.table)), self.table.shape[1]), np.int64)
            grown[:len(self.table)] = self.table
            self.table = grown
        return out

    def _add_dense(self, ps: np.ndarray, table: np.ndarray) -> None:
        """The rows of ``table`` (one per period start of ``ps``) added to the dense
        periods: one overflow check, then in place."""
        present = np.flatnonzero(table.any(axis=1))
        if not len(present):
            return
        rows = self.dense_rows(ps[present])
        refuse_overflow(self.table[rows], table[present])
        self.table[rows] += table[present]

    def _compact(self) -> None:
        if len(self.parts) <= 1:
            return
        st = np.concatenate([x[0] for x in self.parts])
        gc = np.concatenate([x[1] for x in self.parts])
        v = np.concatenate([x[2] for x in self.parts])
        order = np.lexsort((gc, st))
        st, gc, v = st[order], gc[order], v[order]
        new = np.r_[True, (st[1:] != st[:-1]) | (gc[1:] != gc[:-1])] if len(st) else np.zeros(0, bool)
        inv = np.cumsum(new) - 1
        self.parts = [(st[new], gc[new], sum_by(inv, v, int(new.sum())))]
        self.pending = self.compacted = len(self.parts[0][2])

    def result(self) -> Sparse:
        """The sums: (period start, fine group, column, sum), each key once, sums non-zero."""
        if self.rows:  # the dense periods as sparse entries, with those added sparse
            for p_, r in self.rows.items():
                nz = np.flatnonzero(self.table[r])
                self.parts.append((np.full(len(nz), p_, np.int64), nz, self.table[r][nz]))
            self.rows = {}
            self.table = np.zeros((0, self.table.shape[1]), np.int64)
        self._compact()
        if not self.parts:
            z = np.zeros(0, np.int64)
            return Sparse(z, z, z, z)
        st, gc, v = self.parts[0]
        return Sparse(st, gc // self.C, gc % self.C, v)



def rows(keys: np.ndarray, st: np.ndarray, g: np.ndarray, c: np.ndarray, v: np.ndarray, n_rows: int,
          columns: int) -> np.ndarray:
    """Sparse sums (period start ``st``, group ``g``, column ``c``) summed into a dense
    (row, column) array, the row of each (``g``, ``st``) found in ``keys`` (sorted pairs
    as one int64 code: :func:`pair`); exact, refused past int64."""
    row = np.searchsorted(keys, pair(g, st))
    return sum_by(row * columns + c, v, n_rows * columns).reshape(n_rows, columns)


def pair(g: np.ndarray, st: np.ndarray) -> np.ndarray:
    """(group, period start) as one sortable int64 key: groups first, then periods in
    order. Every period starts on an hour, and int64 ns hold under 2**22 hours either
    side of the epoch: the low :data:`HOUR_BITS` bits are the hour plus 2**22."""
    return np.asarray(g.astype(np.int64) * (1 << HOUR_BITS) + (st // NS_PER_HOUR + (1 << 22)), np.int64)


def unpair(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return key >> HOUR_BITS, ((key & ((1 << HOUR_BITS) - 1)) - (1 << 22)) * NS_PER_HOUR


HOUR_BITS = 23

