"""Small helpers several figure modules share: ratios, JSON-able values, checked
arguments, numbers as text. Private: the figures' docs name none of them."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine._input import as_table
from pau.engine.ledger import Ledger
from pau.errors import ManyJobsError, PauError

#: ns per second: accelerator-seconds are derived from exact ns at the edge.
_NS_PER_S = 10**9


def _ratio(a: float, b: float) -> float | None:
    """``a / b`` as a float, None when ``b`` is 0 (never NaN)."""
    return a / b if b else None


def _fmt(v: Any) -> str:
    """A figure as text: ``-`` for None, floats to 6 significant digits, ints with separators."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.6g}"
    return f"{v:,}"


def _frac(a: int | Fraction, b: int | Fraction) -> Fraction | None:
    """``a / b`` as an exact Fraction, None when ``b`` is 0."""
    return Fraction(a) / Fraction(b) if b else None


def _f(x: Any) -> Any:
    """JSON-able: Fractions to floats, recursively."""
    if isinstance(x, Fraction):
        return float(x)
    if isinstance(x, dict):
        return {k: _f(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_f(v) for v in x]
    return x


def _fd(figures: dict[str, Any]) -> dict[str, Any]:
    """A summary's figures JSON-able (:func:`_f` of a dict)."""
    return {k: _f(v) for k, v in figures.items()}


def _count(value: Any, what: str, *, positive: bool = False) -> int:
    """A non-negative (or positive) Python int; anything else raises naming the argument."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise PauError(f"{what} = {value!r} is not an integer. Fix: give {what} as an integer")
    v = int(value)
    if v < 0 or (positive and v == 0):
        raise PauError(f"{what} = {v} is {'negative' if v < 0 else 'zero'}. Fix: give {what} as a "
                       f"{'positive' if positive else 'non-negative'} integer")
    return v


def _positive(value: Any, what: str) -> Fraction:
    """A positive finite number as an exact Fraction (a float is taken at its exact value)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, Fraction, np.integer, np.floating)):
        raise PauError(f"{what} = {value!r} is not a number. Fix: give {what} as a positive number")
    if isinstance(value, (float, np.floating)) and not np.isfinite(value):
        raise PauError(f"{what} = {value!r} is not finite. Fix: give {what} as a positive number")
    v = Fraction(value) if not isinstance(value, (np.integer, np.floating)) else Fraction(value.item())
    if v <= 0:
        raise PauError(f"{what} = {value!r} is not positive. Fix: give {what} as a positive number")
    return v


def _job_count(source: Any, table: str = "lifecycle") -> int:
    """How many jobs a lifecycle or a ledger holds: the distinct values of its ``job``
    column (null: one unnamed job), 1 without one. A stream is read here: callers pass
    the table they read once."""
    if isinstance(source, Ledger):
        att = source._att
        if att is not None and att.jobs is not None:
            return len(att.jobs.names)
        t = source.table
    elif source is None:
        return 1
    else:
        t = source if isinstance(source, pa.Table) else as_table(source, table)
    if "job" not in t.schema.names or t.num_rows == 0:
        return 1
    col = t.column("job")
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return int(pc.count_distinct(col, mode="all").as_py())


def _one_job(source: Any, figure: str, table: str = "lifecycle") -> None:
    """Refuse (:class:`pau.errors.ManyJobsError`, naming ``figure`` and the fix) a
    lifecycle or ledger of many jobs: the figures of one job would mix them."""
    n = _job_count(source, table)
    if n > 1:
        raise ManyJobsError(figure, n)
