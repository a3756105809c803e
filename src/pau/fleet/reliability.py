"""Reliability by job size: failure rates per accelerator-hour fitted from the fleet's own
failures, the MTTF they predict at a size, and the checkpoint interval for it (DESIGN §7).

Failures are taken as a Poisson process whose rate grows with the accelerators a job holds:
``r`` failures per accelerator-hour, so a job of ``N`` accelerators fails at ``N r`` per hour
and its mean time to failure is ``1 / (N r)`` (Kokolis et al. 2024, arXiv 2410.21680).
:func:`failure_rates` fits ``r`` per job-size class (and per cause) by maximum likelihood,
``failures / accelerator-hours``, with the exact (Garwood) interval; :func:`at_size` turns a
rate into the MTTF at a size and the checkpoint advice of
:func:`pau.figures.economics.checkpoint_interval` there. ``docs/fleet.md`` ("Reliability by
job size") has the formulas and a worked example.

The chi-square quantiles of the interval are computed here (SciPy is not a dependency):
bisection on the regularized lower incomplete gamma function, evaluated by its series
below ``a + 1`` and its continued fraction above (Numerical Recipes, 3rd ed., 6.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from pau.engine._input import as_table
from pau.errors import PauError, SchemaError
from pau.figures.economics import checkpoint_interval

__all__ = ["gamma_p", "chi2_quantile", "poisson_interval", "failure_rates", "mttf_hours", "SizeAdvice",
           "at_size"]

_EPS = 1e-16
_TINY = 1e-300


def gamma_p(a: float, x: float) -> float:
    """The regularized lower incomplete gamma function ``P(a, x)`` (``a > 0``, ``x >= 0``).

    Series ``e^-x x^a / Gamma(a) * sum_n x^n / (a (a+1) ... (a+n))`` for ``x < a + 1``;
    else ``1 - Q(a, x)`` with ``Q`` from its continued fraction (modified Lentz).
    Relative accuracy about 1e-15.
    """
    if not (a > 0 and math.isfinite(a)):
        raise PauError(f"gamma_p: a = {a!r}. Fix: a > 0")
    if not x >= 0:
        raise PauError(f"gamma_p: x = {x!r}. Fix: x >= 0")
    if x == 0:
        return 0.0
    if math.isinf(x):
        return 1.0
    log_front = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        n = 0
        while abs(term) > abs(total) * _EPS:
            n += 1
            term *= x / (a + n)
            total += term
            if n > 100_000:  # pragma: no cover - converges in O(sqrt(a)) terms
                break
        return min(1.0, total * math.exp(log_front))
    b = x + 1.0 - a
    c = 1.0 / _TINY
    d = 1.0 / b
    h = d
    i = 0
    while True:
        i += 1
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = _TINY if abs(d) < _TINY else d
        c = b + an / c
        c = _TINY if abs(c) < _TINY else c
        d = 1.0 / d
        step = d * c
        h *= step
        if abs(step - 1.0) < _EPS or i > 100_000:
            break
    return max(0.0, 1.0 - math.exp(log_front) * h)


def chi2_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of the chi-square distribution with ``df`` degrees of freedom.

    ``2 x`` where ``P(df / 2, x) = p``, found by bisection (``P`` increases in ``x``)
    until the bracket is narrower than 4e-16 of its top (relative error about 1e-13,
    tested against SciPy). ``p = 0`` gives 0.
    """
    if not (0 <= p < 1):
        raise PauError(f"chi2_quantile: p = {p!r}. Fix: 0 <= p < 1")
    if not (df > 0 and math.isfinite(df)):
        raise PauError(f"chi2_quantile: df = {df!r}. Fix: df > 0")
    if p == 0:
        return 0.0
    a = df / 2.0
    lo, hi = 0.0, max(1.0, a)
    while gamma_p(a, hi) < p:
        lo, hi = hi, hi * 2.0
    while hi - lo > 4 * _EPS * hi:  # about 50 halvings from a bracket [x, 2x]
        mid = 0.5 * (lo + hi)
        if gamma_p(a, mid) < p:
            lo = mid
        else:
            hi = mid
    return lo + hi  # 2 x, x the bracket's midpoint


def poisson_interval(failures: int, exposure: float, confidence: float = 0.95) -> tuple[float, Optional[float]]:
    """The exact (Garwood 1936) interval of a Poisson rate from ``failures`` in ``exposure``.

    ``[chi2(alpha/2, 2k) / 2, chi2(1 - alpha/2, 2k + 2) / 2] / exposure`` with
    ``alpha = 1 - confidence``; the lower end is 0 when ``k = 0``. Returns
    ``(low, high)``; ``high`` is None when there is no exposure (nothing bounds the rate).
    """
    if not (0 < confidence < 1):
        raise PauError(f"confidence = {confidence!r}. Fix: a fraction between 0 and 1, e.g. 0.95")
    if failures < 0 or exposure < 0:
        raise PauError(f"poisson_interval: failures = {failures!r}, exposure = {exposure!r}. Fix: both >= 0")
    if exposure == 0:
        return 0.0, None
    alpha = 1.0 - confidence
    low = chi2_quantile(alpha / 2, 2 * failures) / 2 / exposure if failures else 0.0
    high = chi2_quantile(1 - alpha / 2, 2 * failures + 2) / 2 / exposure
    return low, high


# ---------------------------------------------------------------------------
# rates by job size


def _column(t: pa.Table, name: str, what: str, *, integer: bool) -> np.ndarray:
    if name not in t.column_names:
        raise SchemaError("jobs", name, "is missing", f"give the {what} of each job or run in a column "
                                                      f"'{name}', or name the column (failure_rates({what}=...))")
    col = t[name]
    if col.null_count:
        row = int(np.flatnonzero(np.asarray(col.is_null()))[0])
        raise PauError(f"jobs: column '{name}', row {row}: null ({col.null_count} rows in all). Fix: every "
                       f"job needs its {what}")
    typ = col.type
    if not (pa.types.is_integer(typ) or pa.types.is_floating(typ)):
        raise SchemaError("jobs", name, f"has type {typ}, not a number", f"give the {what} as numbers")
    v = np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
    bad = ~np.isfinite(v) | (v < 0) | ((v != np.round(v)) if integer else False)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        kind = "whole numbers >= 0" if integer else "finite numbers >= 0"
        raise PauError(f"jobs: column '{name}', row {row}: {float(v[row])!r} ({int(bad.sum())} rows in all). "
                       f"Fix: the {what} are {kind}")
    return v


def _classes(acc: np.ndarray, edges: Optional[Sequence[float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(class of each row, low edge of each class, high edge of each class (inf: open))."""
    if edges is None:
        bad = acc < 1
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise PauError(f"jobs: column 'accelerators', row {row}: {int(acc[row])}. Fix: a job holds at "
                           "least one accelerator")
        k = np.floor(np.log2(acc)).astype(np.int64)
        # log2 of an exact power of two is exact, but guard the floor against rounding
        k += (2.0 ** (k + 1) <= acc).astype(np.int64)
        k -= (2.0 ** k > acc).astype(np.int64)
        present = np.unique(k)
        return np.searchsorted(present, k), 2.0 ** present, 2.0 ** (present + 1)
    e = np.asarray(list(edges), dtype=np.float64)
    if e.ndim != 1 or len(e) < 2 or np.isnan(e).any() or (np.diff(e) <= 0).any():
        raise PauError(f"edges = {list(edges)!r}. Fix: give two or more increasing accelerator counts; class i "
                       "holds jobs with edges[i] <= accelerators < edges[i + 1] (the last edge may be inf)")
    cls = np.searchsorted(e, acc, side="right") - 1
    out = (cls < 0) | (cls >= len(e) - 1)
    if out.any():
        row = int(np.flatnonzero(out)[0])
        raise PauError(f"jobs: column 'accelerators', row {row}: {int(acc[row])} is outside the edges "
                       f"[{e[0]:g}, {e[-1]:g}). Fix: widen edges (the last may be inf)")
    return cls, e[:-1], e[1:]


RATES_SCHEMA = pa.schema([
    ("accelerators_low", pa.int64()), ("accelerators_high", pa.int64()), ("cause", pa.string()),
    ("jobs", pa.int64()), ("accelerator_hours", pa.float64()), ("failures", pa.int64()),
    ("rate_per_accelerator_hour", pa.float64()), ("rate_low", pa.float64()), ("rate_high", pa.float64()),
])


def failure_rates(jobs: Any, *, failures: Union[str, Sequence[str], Mapping[str, str]] = "failures",
                  accelerators: str = "accelerators", accelerator_hours: str = "accelerator_hours",
                  edges: Optional[Sequence[float]] = None, confidence: float = 0.95) -> pa.Table:
    """Failure rate per accelerator-hour by job-size class (and cause), with its interval.

    Parameters
    ----------
    jobs : table-like
        One row per job or run: ``accelerators`` (a whole number >= 1),
        ``accelerator_hours`` (its accountable accelerator-hours) and failure counts.
    failures : str, list of str, or dict
        The failure count column(s): one column (its name is the cause), several (one
        cause each), or ``{cause: column}``. With more than one cause, a row ``"all"``
        per class sums them (Poisson rates add).
    edges : list of numbers, optional
        Class ``i`` holds jobs with ``edges[i] <= accelerators < edges[i+1]``; the last
        edge may be ``math.inf``. Default: powers of two (1, 2-3, 4-7, ...), the classes
        that have jobs. ``edges=[1, math.inf]`` gives one fleet-wide rate.
    confidence : float
        Of the interval (exact Poisson, :func:`poisson_interval`).

    Returns
    -------
    pyarrow.Table
        ``accelerators_low, accelerators_high`` (the class; high exclusive, null when
        open), ``cause, jobs, accelerator_hours, failures, rate_per_accelerator_hour``
        (``failures / accelerator_hours``, the maximum-likelihood Poisson rate),
        ``rate_low, rate_high``. A class without accelerator-hours has a null rate and
        upper bound (never 0 or inf).
    """
    t = as_table(jobs, "jobs")
    if isinstance(failures, str):
        causes = {failures: failures}
    elif isinstance(failures, Mapping):
        causes = dict(failures)
    else:
        causes = {c: c for c in failures}
    if not causes:
        raise PauError("failures: no column named. Fix: name the failure count column(s)")
    acc = _column(t, accelerators, "accelerators", integer=True)
    hours = _column(t, accelerator_hours, "accelerator_hours", integer=False)
    counts = {cause: _column(t, col, f"failures ({col})", integer=True) for cause, col in causes.items()}
    if len(causes) > 1:
        if "all" in counts:
            raise PauError("failures: a cause is named 'all', the name of the sum. Fix: rename it")
        counts["all"] = np.sum(list(counts.values()), axis=0)
    cls, low, high = _classes(acc, edges)
    m = len(low)
    n_jobs = np.bincount(cls, minlength=m)
    exposure = np.bincount(cls, weights=hours, minlength=m)
    per_class = {cause: np.bincount(cls, weights=c, minlength=m) for cause, c in counts.items()}
    rows: dict[str, list[Any]] = {f.name: [] for f in RATES_SCHEMA}
    for i in range(m):
        for cause, c in per_class.items():
            k = int(c[i])
            lo, hi = poisson_interval(k, float(exposure[i]), confidence)
            rows["accelerators_low"].append(int(low[i]))
            rows["accelerators_high"].append(None if math.isinf(high[i]) else int(high[i]))
            rows["cause"].append(cause)
            rows["jobs"].append(int(n_jobs[i]))
            rows["accelerator_hours"].append(float(exposure[i]))
            rows["failures"].append(k)
            rows["rate_per_accelerator_hour"].append(k / exposure[i] if exposure[i] > 0 else None)
            rows["rate_low"].append(lo if exposure[i] > 0 else None)
            rows["rate_high"].append(hi)
    return pa.table(rows, schema=RATES_SCHEMA)


def mttf_hours(rate_per_accelerator_hour: float, accelerators: float) -> Optional[float]:
    """Mean time to failure (hours) of a job of ``accelerators`` at a failure rate per
    accelerator-hour: ``1 / (accelerators * rate)``; None (unbounded) when the rate is 0."""
    r = float(rate_per_accelerator_hour)
    n = float(accelerators)
    if not (math.isfinite(r) and r >= 0):
        raise PauError(f"rate_per_accelerator_hour = {rate_per_accelerator_hour!r}. Fix: a finite rate >= 0")
    if not (math.isfinite(n) and n >= 1):
        raise PauError(f"accelerators = {accelerators!r}. Fix: a job holds one accelerator or more")
    return 1.0 / (n * r) if r > 0 else None


@dataclass(frozen=True)
class SizeAdvice:
    """What a failure rate predicts for a job of ``accelerators``.

    ``mttf_h`` (and ``mttf_h_low``/``mttf_h_high`` from the rate's interval, None when
    unbounded); ``checkpoint`` is :func:`pau.figures.economics.checkpoint_interval`'s
    result at ``mtbf_s = 3600 * mttf_h`` (Young's and Daly's intervals, the expected
    goodput at each and at the current interval); ``daly_s`` and
    ``expected_goodput`` are its Daly entries.
    """

    accelerators: int
    rate_per_accelerator_hour: float
    mttf_h: Optional[float]
    mttf_h_low: Optional[float]
    mttf_h_high: Optional[float]
    checkpoint: Optional[Mapping[str, Any]]
    daly_s: Optional[float]
    expected_goodput: Optional[float]


def at_size(rate: Union[float, pa.Table], accelerators: int, *, checkpoint_cost_s: float,
            restart_s: float = 0.0, current_interval_s: Optional[float] = None, cause: str = "all",
            interval: Optional[tuple[float, Optional[float]]] = None) -> SizeAdvice:
    """The MTTF and the checkpoint advice for a job of ``accelerators``.

    Parameters
    ----------
    rate : float or pyarrow.Table
        Failures per accelerator-hour, or :func:`failure_rates`' table: then the row of
        the class holding ``accelerators`` and ``cause`` (``"all"``, or the only cause)
        gives the rate and its interval. A size outside every class is refused: pass a
        rate (the fleet-wide one, ``failure_rates(..., edges=[1, math.inf])``) to
        extrapolate.
    checkpoint_cost_s, restart_s, current_interval_s
        As :func:`pau.figures.economics.checkpoint_interval`.
    interval : (low, high), optional
        The rate's interval, when ``rate`` is a number.
    """
    if isinstance(accelerators, bool) or not isinstance(accelerators, (int, np.integer)) or accelerators < 1:
        raise PauError(f"accelerators = {accelerators!r}. Fix: a whole number >= 1")
    n = int(accelerators)
    if isinstance(rate, pa.Table):
        causes = set(rate["cause"].to_pylist())
        pick = cause if cause in causes else (next(iter(causes)) if len(causes) == 1 else None)
        if pick is None:
            raise PauError(f"cause = {cause!r} is not in the rates table. Fix: one of {sorted(causes)}")
        found = [r for r in rate.to_pylist() if r["cause"] == pick and r["accelerators_low"] <= n
                 and (r["accelerators_high"] is None or n < r["accelerators_high"])]
        if not found:
            raise PauError(f"no class of the rates table holds {n} accelerators. Fix: pass a rate to "
                           "extrapolate, e.g. the fleet-wide one (failure_rates(..., edges=[1, math.inf]))")
        row = found[0]
        if row["rate_per_accelerator_hour"] is None:
            raise PauError(f"the class of {n} accelerators has no accelerator-hours: no rate. Fix: pass a rate")
        r = float(row["rate_per_accelerator_hour"])
        interval = (row["rate_low"], row["rate_high"])
    else:
        r = float(rate)
    m = mttf_hours(r, n)
    lo_h = hi_h = None
    if interval is not None:
        lo_rate, hi_rate = interval
        lo_h = mttf_hours(hi_rate, n) if hi_rate is not None else 0.0
        hi_h = mttf_hours(lo_rate, n)
    if m is None:
        return SizeAdvice(n, r, None, lo_h, hi_h, None, None, None)
    ck = checkpoint_interval(m * 3600.0, checkpoint_cost_s, restart_s, current_interval_s=current_interval_s)
    return SizeAdvice(n, r, m, lo_h, hi_h, ck, ck["daly_s"], ck["expected_goodput_daly"])
