"""Change points in a fleet's figures over periods, and efficiency as capacity (DESIGN §7).

A *series* is one group's metric over consecutive periods (a team's weekly goodput, a
cluster's productive accelerator-hours per day). Two detectors, both pure numpy and
vectorised over many series of the same length (one row of a 2-D array per series):

* :func:`pelt`: the exact optimal segmentation under a Gaussian mean-shift cost and a
  penalty per change (Killick, Fearnhead and Eckley 2012), pruned by their rule;
* :func:`cusum`: Page's (1954) two-sided standardised CUSUM with drift ``k`` and
  threshold ``h``, restarted after each alarm.

Each change point reports its period index, the means of the segments before and after
it, and, given a weight per period (allocated accelerator-hours for a ratio metric such
as goodput), the accelerator-hours the change won (positive) or lost (negative):
``(after - before) * sum(weights over the segment after the change)``.
:func:`accelerators_gained` turns productive accelerator-hours gained between two periods into
accelerators' worth. ``docs/fleet.md`` ("Change points") has the formulas and the
choices made where the design is silent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Optional, Sequence, Union, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine._input import as_table
from pau.errors import PauError, SchemaError

__all__ = ["PENALTY_BIC_FACTOR", "ChangePoint", "Changes", "pelt", "cusum", "noise_sd", "bic_penalty",
           "default_penalty", "group_changes", "accelerators_gained"]

#: 1 / Phi^-1(3/4): makes the median absolute deviation a consistent estimate of a
#: Gaussian standard deviation.
MAD_TO_SD = 1.482602218505602

#: Series per block of the PELT pass.
BLOCK = 512

CHANGES_SCHEMA = pa.schema([
    ("series", pa.int64()), ("period", pa.int64()), ("detected", pa.int64()),
    ("level_before", pa.float64()), ("level_after", pa.float64()),
    ("accelerator_hours", pa.float64()),
])


class ChangePoint(NamedTuple):
    """One change point of one series.

    ``period`` is the index of the first period at the new level; ``detected`` the period
    at which CUSUM raised its alarm (``None`` for PELT, which segments the whole series
    at once); ``accelerator_hours`` is ``None`` when no weights were given.
    """

    series: int
    period: int
    detected: Optional[int]
    level_before: float
    level_after: float
    accelerator_hours: Optional[float]


@dataclass(frozen=True)
class Changes:
    """What :func:`pelt` and :func:`cusum` return.

    Attributes
    ----------
    table : pyarrow.Table
        One row per change point (``CHANGES_SCHEMA``: ``series, period, detected,
        level_before, level_after, accelerator_hours``), ordered by series then period.
    method : str
        ``"pelt"`` or ``"cusum"``.
    sigma : numpy.ndarray
        Per series, the noise standard deviation used (given, or :func:`noise_sd`).
    penalty : numpy.ndarray or None
        PELT: the penalty per change point of each series. CUSUM: None.
    """

    table: pa.Table
    method: str
    sigma: np.ndarray
    penalty: Optional[np.ndarray]

    @property
    def points(self) -> list[ChangePoint]:
        """The change points as :class:`ChangePoint` records."""
        return [ChangePoint(*row.values()) for row in self.table.to_pylist()]

    def __len__(self) -> int:
        return int(self.table.num_rows)


# ---------------------------------------------------------------------------
# input


def _series(x: Any, name: str = "x") -> tuple[np.ndarray, bool]:
    """``x`` as a float64 (series, periods) array; whether it was one series."""
    a = np.asarray(x, dtype=np.float64)
    one = a.ndim == 1
    if one:
        a = a[None, :]
    if a.ndim != 2:
        raise PauError(f"{name}: expected one series (1-D) or one series per row (2-D), got shape "
                       f"{a.shape}. Fix: pass an array of shape (periods,) or (series, periods)")
    bad = ~np.isfinite(a)
    if bad.any():
        s, t = np.argwhere(bad)[0]
        raise PauError(f"{name}: series {s}, period {t} is {float(a[s, t])!r} ({int(bad.sum())} such values). "
                       "Fix: a period with no time has no ratio: leave it out of the series, or fill it "
                       "explicitly before looking for changes")
    return a, one


def _per_series(value: Any, S: int, name: str, *, positive: Optional[bool]) -> np.ndarray:
    """One value per series: finite, and > 0 (``positive=True``), >= 0 (False) or any (None)."""
    v = np.asarray(value, dtype=np.float64)
    if v.ndim == 0:
        v = np.full(S, float(v))
    if v.shape != (S,):
        raise PauError(f"{name}: expected one value or one per series ({S}), got shape {v.shape}")
    ok = np.isfinite(v)
    if positive is not None:
        ok &= (v > 0) if positive else (v >= 0)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        bound = {True: " > 0", False: " >= 0", None: ""}[positive]
        raise PauError(f"{name}: series {i} has {float(v[i])!r}. Fix: give a finite number{bound}")
    return v


def _weights(weights: Any, shape: tuple[int, int]) -> Optional[np.ndarray]:
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim == 1 and w.shape[0] == shape[1]:
        w = np.broadcast_to(w, shape)
    if w.shape != shape:
        raise PauError(f"weights: expected shape ({shape[1]},) or {shape} (one weight per period, "
                       f"per series), got {w.shape}")
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        s, t = np.argwhere(bad)[0]
        raise PauError(f"weights: series {s}, period {t} is {float(w[s, t])!r}. Fix: weights are accelerator-hours "
                       "per period: finite and >= 0")
    return w


def _prefix(a: np.ndarray) -> np.ndarray:
    out = np.zeros((a.shape[0], a.shape[1] + 1))
    np.cumsum(a, axis=1, out=out[:, 1:])
    return out


# ---------------------------------------------------------------------------
# the noise and the penalty


def noise_sd(x: Any) -> np.ndarray:
    """Robust noise standard deviation of each series, from its first differences.

    ``sigma = 1.4826 * MAD(diff(x)) / sqrt(2)``: the first differences remove the level, so
    a level shift touches one difference only and the median absolute deviation ignores
    it; 1.4826 makes the MAD a Gaussian standard deviation, and ``sqrt(2)`` undoes the
    variance doubling of a difference of two independent noises. When more than half the
    differences are equal (a noiseless or quantised series) the MAD is 0 and the ordinary
    standard deviation of the differences over ``sqrt(2)`` is used; a constant series
    gives 0 (it has no change point).

    Returns one value per series (an array of shape ``(series,)``; one series gives
    shape ``(1,)``).
    """
    a, _ = _series(x)
    if a.shape[1] < 2:
        return np.zeros(a.shape[0])
    d = np.diff(a, axis=1)
    mad = np.median(np.abs(d - np.median(d, axis=1, keepdims=True)), axis=1)
    sd = MAD_TO_SD * mad / math.sqrt(2)
    flat = sd == 0
    if flat.any():
        sd[flat] = d[flat].std(axis=1) / math.sqrt(2)
    return np.asarray(sd, np.float64)


def bic_penalty(x: Any, sigma: Any = None) -> np.ndarray:
    """The BIC penalty per change point: ``2 * log(n) * sigma**2``.

    BIC for a Gaussian mean shift: a change adds two parameters (its position and the new
    mean), each costing ``log(n)`` in units of twice the negative log-likelihood, which
    is the sum of squared deviations over ``sigma**2``; so in the cost's units (sum of
    squares) a change costs ``2 log(n) sigma**2``. ``sigma`` defaults to
    :func:`noise_sd`.
    """
    a, _ = _series(x)
    sd = noise_sd(a) if sigma is None else _per_series(sigma, a.shape[0], "sigma", positive=False)
    return np.asarray(2.0 * math.log(max(a.shape[1], 1)) * sd * sd, np.float64)


# ---------------------------------------------------------------------------
# PELT


def _pelt_last(a: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """PELT over the rows of ``a``: ``last[s, t]`` = the start of the last segment of the
    optimal segmentation of ``a[s, :t]``.

    F(0) = -beta; F(t) = min over candidates tau of F(tau) + C(tau, t) + beta, with
    C the sum of squared deviations from the segment mean. After each t a candidate is
    dropped for good when F(tau) + C(tau, t) > F(t) (Killick et al. 2012, eq. 4 with
    K = 0, which holds for this cost). The columns evaluated at t are the candidates
    alive in any series; a candidate pruned in one series is masked there.
    """
    S, n = a.shape
    # centred on the median: exact zeros for a constant series (exact ties, no change),
    # and smaller sums of squares for the subtraction below
    c = a - np.median(a, axis=1, keepdims=True)
    P, Q = _prefix(c), _prefix(c * c)
    # G[s, tau] = F(tau) while tau is a candidate of series s, +inf once pruned there
    G = np.full((S, n + 1), np.inf)
    G[:, 0] = -beta
    inv_len = 1.0 / np.arange(n, 0, -1, dtype=np.float64)  # 1 / (t - tau), by n - t + tau
    last = np.zeros((S, n + 1), dtype=np.int64)
    cand = np.zeros(1, dtype=np.int64)
    rows = np.arange(S)
    for t in range(1, n + 1):
        # while no candidate is pruned in every series, the candidates are 0..t-1: slices
        # (views) instead of gathers
        whole = len(cand) == t
        cols = slice(0, t) if whole else cand
        dP = P[:, t, None] - P[:, cols]
        total = Q[:, t, None] - Q[:, cols]
        dP *= dP
        dP *= inv_len[n - t + cand]
        total -= dP
        total += G[:, cols]
        j = np.argmin(total, axis=1)
        Ft = total[rows, j] + beta
        last[:, t] = cand[j]
        drop = total > Ft[:, None]  # pruned candidates hold inf: dropped again
        if whole:
            np.copyto(G[:, cols], np.inf, where=drop)
        else:
            total[drop] = np.inf
            G[:, cols] = np.where(drop, np.inf, G[:, cols])
        G[:, t] = Ft
        cand = np.append(cand[~drop.all(axis=0)], t)
    return last


def _backtrack(last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(series, period) of every change point, ordered by series then period."""
    S, n1 = last.shape
    cur = np.full(S, n1 - 1, dtype=np.int64)
    ss, tt = [], []
    rows = np.arange(S)
    while True:
        prev = last[rows, cur]
        hit = prev > 0
        if not hit.any():
            break
        ss.append(rows[hit])
        tt.append(prev[hit])
        cur = np.where(hit, prev, 0)
    if not ss:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    s, t = np.concatenate(ss), np.concatenate(tt)
    order = np.lexsort((t, s))
    return s[order], t[order]


def _report(a: np.ndarray, w: Optional[np.ndarray], s: np.ndarray, t: np.ndarray,
            detected: Optional[np.ndarray]) -> pa.Table:
    """The change points' table: segment means around each and the hours won or lost."""
    n = a.shape[1]
    # the segment before a change starts at the previous change of the same series (or
    # 0), the one after ends at the next (or n)
    same_prev = np.zeros(len(s), bool)
    same_prev[1:] = s[1:] == s[:-1]
    same_next = np.zeros(len(s), bool)
    same_next[:-1] = same_prev[1:]
    start = np.zeros(len(s), np.int64)
    start[1:] = np.where(same_prev[1:], t[:-1], 0)
    end = np.full(len(s), n, np.int64)
    end[:-1] = np.where(same_next[:-1], t[1:], n)
    P = _prefix(a)
    before = (P[s, t] - P[s, start]) / (t - start)
    after = (P[s, end] - P[s, t]) / (end - t)
    if w is None:
        hours = pa.nulls(len(s), pa.float64())
    else:
        PW = _prefix(w)
        hours = pa.array((after - before) * (PW[s, end] - PW[s, t]))
    return pa.table([pa.array(s), pa.array(t),
                     pa.array(detected) if detected is not None else pa.nulls(len(s), pa.int64()),
                     pa.array(before), pa.array(after), hours], schema=CHANGES_SCHEMA)


#: PELT's default penalty is this many times BIC's: BIC alone marks a change in 18.5 % of
#: pure-noise series of 52 periods, 1.5 x BIC in 4.9 % (``docs/fleet.md``, "Default penalty").
PENALTY_BIC_FACTOR = 1.5


def default_penalty(x: Any, sigma: Any = None) -> np.ndarray:
    """PELT's default penalty per change point: :data:`PENALTY_BIC_FACTOR` x
    :func:`bic_penalty`, ``3 * log(n) * sigma**2``: stricter than BIC, so that over a fleet
    of many groups about one noise series in twenty shows a change (``docs/fleet.md``)."""
    return np.asarray(PENALTY_BIC_FACTOR * bic_penalty(x, sigma), np.float64)


def pelt(x: Any, *, penalty: Any = None, weights: Any = None) -> Changes:
    """Change points of the mean by PELT: the exact optimal segmentation.

    Minimises ``sum over segments of C(segment) + penalty * (number of changes)`` with
    ``C`` the sum of squared deviations from the segment's mean (a Gaussian mean-shift
    cost, ruptures' ``"l2"``), segments of one period or more.

    Parameters
    ----------
    x : array_like
        One series (shape ``(periods,)``) or one series per row (``(series, periods)``);
        finite values.
    penalty : float or array_like, optional
        Penalty per change point (> 0), one value or one per series; default
        :func:`default_penalty` (``1.5 x 2 log(n) sigma**2``, 1.5 x BIC, ``sigma`` from
        :func:`noise_sd`).
        A series whose default penalty is 0 is constant and has no change point.
    weights : array_like, optional
        Per period (shape ``(periods,)``, shared) or per series and period: the
        accelerator-hours each period weighs (allocated accelerator-hours for a ratio
        metric such as goodput). Without weights ``accelerator_hours`` is null.

    Returns
    -------
    Changes
    """
    a, _ = _series(x)
    S, n = a.shape
    w = _weights(weights, a.shape)
    sigma = noise_sd(a)
    if penalty is None:
        beta = default_penalty(a, sigma)
    else:
        beta = _per_series(penalty, S, "penalty", positive=True)
    if n == 0:
        return Changes(_report(a, w, np.zeros(0, np.int64), np.zeros(0, np.int64), None), "pelt", sigma, beta)
    # blocks of rows whose working arrays stay in the CPU's cache (2.3x faster on 10,000
    # series than one pass over all of them)
    last = np.concatenate([_pelt_last(a[i: i + BLOCK], beta[i: i + BLOCK]) for i in range(0, S, BLOCK)]) \
        if S else np.zeros((0, n + 1), np.int64)
    s, t = _backtrack(last)
    return Changes(_report(a, w, s, t, None), "pelt", sigma, beta)


# ---------------------------------------------------------------------------
# CUSUM


def cusum(x: Any, *, h: float = 5.0, k: float = 0.5, sigma: Any = None, target: Any = None,
          warmup: int = 8, weights: Any = None) -> Changes:
    """Change points by Page's two-sided standardised CUSUM, restarted after each alarm.

    With ``z_t = (x_t - mu) / sigma``::

        S+_t = max(0, S+_{t-1} + z_t - k)      S-_t = max(0, S-_{t-1} - z_t - k)

    An alarm is raised at the first ``t`` with ``S+_t > h`` or ``S-_t > h``. The change is
    placed within the alarming sum's run (from the period after it was last 0 up to
    ``t``) at the ``tau`` that maximises ``(sum_{j=tau..t} (x_j - mu))**2 / (t + 1 - tau)``:
    the most likely start of a shift from ``mu`` to an unknown level. (The start of the run
    alone, the textbook estimate, is early when small deviations had begun the run before
    a large shift.) Both sums then restart at 0 from ``t + 1``, with ``mu`` the mean of the
    ``warmup`` periods from the change on (the new level; this looks past the alarm: the
    detector segments a series after the fact, it does not monitor one live).

    Parameters
    ----------
    x : array_like
        One series or one per row, as :func:`pelt`.
    h, k : float
        Threshold and drift, in standard deviations (defaults 5 and 0.5: a shift of one
        standard deviation is detected after about 10 periods; in-control, one false
        alarm every few hundred periods).
    sigma : float or array_like, optional
        The noise standard deviation per series; default :func:`noise_sd`. A series with
        sigma 0 (constant) raises no alarm.
    target : float or array_like, optional
        The in-control level of the first segment; default the mean of its first
        ``warmup`` periods.
    warmup : int
        Periods whose mean is a segment's reference level (>= 1).
    weights : array_like, optional
        As :func:`pelt`.

    Returns
    -------
    Changes
        ``detected`` holds each alarm's period.
    """
    a, _ = _series(x)
    S, n = a.shape
    w = _weights(weights, a.shape)
    for name, v in (("h", h), ("k", k)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            raise PauError(f"{name} = {v!r}. Fix: give a finite number >= 0 (in standard deviations)")
    if not (isinstance(warmup, (int, np.integer)) and warmup >= 1):
        raise PauError(f"warmup = {warmup!r}. Fix: give a whole number of periods >= 1")
    sd = noise_sd(a) if sigma is None else _per_series(sigma, S, "sigma", positive=False)
    P = _prefix(a)
    if target is None:
        first = min(warmup, n)
        mu = P[:, first] / max(first, 1)
    else:
        mu = _per_series(target, S, "target", positive=None).copy()
    live = sd > 0
    inv = np.where(live, 1.0 / np.where(live, sd, 1.0), 0.0)
    sp, sn = np.zeros(S), np.zeros(S)
    run_p, run_n = np.zeros(S, np.int64), np.zeros(S, np.int64)
    ss, tt, dd = [], [], []
    for t in range(n):
        z = (a[:, t] - mu) * inv
        sp = np.maximum(0.0, sp + z - k)
        sn = np.maximum(0.0, sn - z - k)
        run_p = np.where(sp == 0, t + 1, run_p)
        run_n = np.where(sn == 0, t + 1, run_n)
        alarm = live & ((sp > h) | (sn > h))
        if alarm.any():
            i = np.flatnonzero(alarm)
            first = np.where(sp[i] >= sn[i], run_p[i], run_n[i])
            # the change's period within the alarming run: the tau whose shift from mu
            # to the mean of x[tau..t] is most likely, (sum of x - mu)^2 / length
            taus = np.arange(t + 1)
            m = t + 1 - taus
            D = (P[i, t + 1, None] - P[i, : t + 1]) - mu[i, None] * m
            score = D * D / m
            score[taus[None, :] < first[:, None]] = -np.inf
            tau = np.argmax(score, axis=1)
            # a change at period 0 (a series that begins away from `target`) has no
            # level before it: the reference moves to the new level, no change is reported
            inside = tau > 0
            ss.append(i[inside])
            tt.append(tau[inside])
            dd.append(np.full(int(inside.sum()), t, np.int64))
            end = np.minimum(tau + warmup, n)
            mu[i] = (P[i, end] - P[i, tau]) / (end - tau)
            sp[i] = sn[i] = 0.0
            run_p[i] = run_n[i] = t + 1
    if ss:
        s, tc, d = np.concatenate(ss), np.concatenate(tt), np.concatenate(dd)
        order = np.lexsort((tc, s))
        s, tc, d = s[order], tc[order], d[order]
    else:
        s = tc = d = np.zeros(0, np.int64)
    return Changes(_report(a, w, s, tc, d), "cusum", sd, None)


# ---------------------------------------------------------------------------
# a long table: one row per group and period


def group_changes(table: Any, metric: str, *, by: Any = (), period: str = "period",
                  weight: Optional[str] = None, method: str = "pelt", **options: Any) -> pa.Table:
    """Change points of ``metric`` for every group of a long table (a rollup's output).

    Each group's series is its rows in ``period`` order (a period missing from the table
    is not in the series); groups of the same length go through :func:`pelt` or
    :func:`cusum` together.

    Parameters
    ----------
    table : table-like
        One row per group and period: the ``by`` columns, ``period`` (any sortable
        type: a period start in ns, a date), ``metric`` and optionally ``weight``.
    metric, period, weight : str
        Column names; ``weight`` as ``weights`` of :func:`pelt` (allocated
        accelerator-hours for a ratio metric).
    by : str or list of str
        The group columns (none: one series).
    method : ``"pelt"`` or ``"cusum"``
    **options
        Passed to the method (``penalty``, ``h``, ``k``, ``target``, ``sigma``, ``warmup``).

    Returns
    -------
    pyarrow.Table
        The ``by`` columns, then ``period`` (the period value of the first period at the
        new level), ``detected`` (CUSUM's alarm period value; null for PELT),
        ``level_before``, ``level_after``, ``accelerator_hours``; ordered by group then period.
    """
    fns: dict[str, Callable[..., Changes]] = {"pelt": pelt, "cusum": cusum}
    if method not in fns:
        raise PauError(f"method = {method!r}. Fix: 'pelt' or 'cusum'")
    keys = [by] if isinstance(by, str) else list(by)
    t = as_table(table, "table")
    for col in keys + [period, metric] + ([weight] if weight is not None else []):
        if col not in t.column_names:
            raise SchemaError("table", col, "is missing", "name an existing column (group_changes(by=..., "
                                                          "period=..., metric=..., weight=...))")
    for col in [period, metric] + ([weight] if weight is not None else []):
        if t[col].null_count:
            row = int(np.flatnonzero(np.asarray(t[col].is_null()))[0])
            raise PauError(f"table: column '{col}', row {row}: null ({t[col].null_count} rows in all). Fix: a "
                           "period with no time has no ratio: leave its row out, or fill it explicitly")
    order = pc.sort_indices(t, sort_keys=[(k, "ascending") for k in keys + [period]])
    t = t.take(order)
    n = t.num_rows
    # group of each row: a code per distinct combination of the by columns (nulls a value)
    if keys and n:
        codes = []
        for k in keys:
            enc = pc.dictionary_encode(t[k]).combine_chunks()
            codes.append(np.asarray(enc.indices.fill_null(-1)))
        _, group = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
        group = group.reshape(-1)
        # sorted by the keys, so each group's rows are contiguous; number them in order
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    else:
        starts = np.zeros(1 if n else 0, np.int64)
    lengths = np.diff(np.r_[starts, n]).astype(np.int64)
    pv = t[period].combine_chunks()
    same = pc.equal(pv.slice(1), pv.slice(0, max(n - 1, 0)))
    dup = np.asarray(same.fill_null(False)) & (np.repeat(np.arange(len(starts)), lengths)[1:] ==
                                                np.repeat(np.arange(len(starts)), lengths)[:-1])
    if dup.any():
        row = int(order[int(np.flatnonzero(dup)[0]) + 1].as_py())
        raise PauError(f"table: column '{period}', row {row}: a second row for the same group and period. "
                       "Fix: one row per group and period (roll up first)")
    x = np.asarray(t[metric].to_numpy(zero_copy_only=False), dtype=np.float64)
    w = None if weight is None else np.asarray(t[weight].to_numpy(zero_copy_only=False), dtype=np.float64)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, pa.Table]] = []
    for L in np.unique(lengths):
        gs = np.flatnonzero(lengths == L)
        rows = starts[gs, None] + np.arange(L)
        res = fns[method](x[rows], weights=None if w is None else w[rows], **options).table
        sidx = np.asarray(res["series"])
        base = starts[gs][sidx]
        det = res["detected"]
        det_rows = np.asarray(det.fill_null(0)) + base
        parts.append((gs[sidx], base + np.asarray(res["period"]),
                      np.where(np.asarray(det.is_null()), -1, det_rows), res))
    if parts:
        g = np.concatenate([q[0] for q in parts])
        at = np.concatenate([q[1] for q in parts])
        det_at = np.concatenate([q[2] for q in parts])
        stats = pa.concat_tables([q[3] for q in parts])
    else:
        g = at = det_at = np.zeros(0, np.int64)
        stats = CHANGES_SCHEMA.empty_table()
    o = np.lexsort((at, g))
    g, at, det_at = g[o], at[o], det_at[o]
    stats = stats.take(pa.array(o))
    cols = {k: t[k].take(pa.array(starts[g])) for k in keys}
    cols["period"] = pv.take(pa.array(at))
    cols["detected"] = pv.take(pa.array(np.where(det_at < 0, 0, det_at), mask=det_at < 0))
    for c in ("level_before", "level_after", "accelerator_hours"):
        cols[c] = stats[c]
    return pa.table(cols)


# ---------------------------------------------------------------------------
# efficiency as capacity


#: Hours given to :func:`accelerators_gained` as an array (a NumPy array, a list).
_Hours = Union[np.ndarray, Sequence[float]]


@overload
def accelerators_gained(productive_hours_a: float, productive_hours_b: float, period_hours: float) -> float: ...
@overload
def accelerators_gained(productive_hours_a: _Hours, productive_hours_b: _Hours | float,
                        period_hours: _Hours | float) -> np.ndarray: ...
@overload
def accelerators_gained(productive_hours_a: float, productive_hours_b: _Hours,
                        period_hours: _Hours | float) -> np.ndarray: ...
@overload
def accelerators_gained(productive_hours_a: float, productive_hours_b: float, period_hours: _Hours) -> np.ndarray: ...


def accelerators_gained(productive_hours_a: float | _Hours, productive_hours_b: float | _Hours,
                        period_hours: float | _Hours) -> float | np.ndarray:
    """Efficiency as capacity: productive accelerator-hours gained from period a to
    period b, over the hours in a period, in accelerators' worth.

    ``(productive_hours_b - productive_hours_a) / period_hours``: a fleet that does 1,680
    more productive accelerator-hours in a week (168 h) than the week before gained
    the work of 10 accelerators running all week. Negative when it lost. Three numbers
    give a float; an array (a NumPy array, of any shape, or a list) among them gives a
    NumPy array, the three broadcast.
    """
    a = np.asarray(productive_hours_a, dtype=np.float64)
    b = np.asarray(productive_hours_b, dtype=np.float64)
    p = np.asarray(period_hours, dtype=np.float64)
    for name, v, ok, fix in (
            ("productive_hours_a", a, np.isfinite(a) & (a >= 0), "productive accelerator-hours are finite and >= 0"),
            ("productive_hours_b", b, np.isfinite(b) & (b >= 0), "productive accelerator-hours are finite and >= 0"),
            ("period_hours", p, np.isfinite(p) & (p > 0), "the hours in a period are finite and > 0 (168 for a week)")):
        if not ok.all():
            i = int(np.flatnonzero(~ok.reshape(-1))[0])
            where = f"[{i}]" if v.ndim else ""
            raise PauError(f"{name}{where} = {float(v.reshape(-1)[i])!r}. Fix: {fix}")
    out = np.asarray((b - a) / p)  # an array of 0-d arrays too (NumPy gives a scalar)
    given = (productive_hours_a, productive_hours_b, period_hours)
    return out if any(isinstance(v, np.ndarray) or np.ndim(v) for v in given) else float(out)
