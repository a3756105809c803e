"""Periods of a fleet rollup (``docs/fleet.md``, "Rollups"): hours, days, ISO weeks and
months in UTC or a local time zone, their starts, ends and names, and the times
``since``/``until`` (whole hours: the hourly cells cannot be cut inside one)."""

from __future__ import annotations

import datetime as _dt
import re
import zoneinfo
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pau.errors import PauError

__all__ = ["MAX_LOCAL_PERIODS", "MONDAY0", "NS_PER_DAY", "NS_PER_HOUR", "NS_PER_S", "Period", "edge_index",
           "local_edges", "month_start", "months", "parse_every", "parse_time", "period_ends", "period_names",
           "period_starts"]

NS_PER_S = 10**9
NS_PER_HOUR = 3_600 * NS_PER_S
NS_PER_DAY = 24 * NS_PER_HOUR
#: Monday 1969-12-29 00:00 UTC: ISO weeks start here and every 7 days from it.
MONDAY0 = -3 * NS_PER_DAY

# ---------------------------------------------------------------------------
# periods


@dataclass(frozen=True)
class Period:
    """A period length: ``n`` hours, days or weeks (``unit`` ``"h"``, ``"d"``, ``"w"``),
    or ``n`` calendar months (``"mo"``). ``text`` as given. With ``tz`` (an IANA zone),
    days, weeks and months are local ones: ``edges`` holds their boundaries (ns, UTC,
    sorted) over the times a rollup covers (:func:`local_edges`)."""

    n: int
    unit: str
    text: str
    tz: str | None = None
    edges: Any = field(default=None, compare=False, repr=False)

    @property
    def width_ns(self) -> int | None:
        return None if self.unit == "mo" else self.n * {"h": NS_PER_HOUR, "d": NS_PER_DAY, "w": 7 * NS_PER_DAY}[self.unit]


_UNITS = {"h": "h", "hour": "h", "hours": "h", "hourly": "h", "d": "d", "day": "d", "days": "d", "daily": "d",
          "w": "w", "week": "w", "weeks": "w", "weekly": "w", "mo": "mo", "month": "mo", "months": "mo",
          "monthly": "mo"}


def parse_every(every: str | Period) -> Period:
    """``"1h"``, ``"6h"``, ``"1d"``, ``"1w"``, ``"1mo"``, ``"hour"``, ``"day"``, ``"week"``, ``"month"``."""
    if isinstance(every, Period):
        return every
    m = re.fullmatch(r"\s*(\d*)\s*([a-z]+)\s*", str(every).lower())
    if m is None or m.group(2) not in _UNITS or (m.group(1) and int(m.group(1)) < 1):
        raise PauError(f"every = {every!r}: not a period. Fix: 1h, 6h, 1d, 1w, 1mo (or hour, day, week, month)")
    return Period(int(m.group(1) or 1), _UNITS[m.group(2)], str(every))


def months(t: np.ndarray) -> np.ndarray:
    """Months since 1970-01 of each ns time."""
    return t.astype("datetime64[ns]").astype("datetime64[M]").astype(np.int64)


def month_start(m: np.ndarray) -> np.ndarray:
    return m.astype("datetime64[M]").astype("datetime64[ns]").astype(np.int64)


def period_starts(t: Any, every: str | Period) -> np.ndarray:
    """The start (ns, UTC) of the period holding each time ``t`` (ns): hours and days
    from the epoch, weeks from Monday 00:00 UTC (ISO weeks), months from the 1st."""
    p = parse_every(every)
    t = np.asarray(t, dtype=np.int64)
    if p.edges is not None:
        return np.asarray(p.edges[edge_index(p, t)], np.int64)
    if p.unit == "mo":
        m = months(t)
        return month_start((m // p.n) * p.n)
    w = p.width_ns
    assert w is not None
    origin = MONDAY0 if p.unit == "w" else 0
    return np.asarray((t - origin) // w * w + origin, np.int64)


def period_ends(starts: np.ndarray, every: str | Period) -> np.ndarray:
    """The end (exclusive) of the periods starting at ``starts``."""
    p = parse_every(every)
    s = np.asarray(starts, dtype=np.int64)
    if p.edges is not None:
        return np.asarray(p.edges[edge_index(p, s) + 1], np.int64)
    if p.unit == "mo":
        return month_start(months(s) + p.n)
    assert p.width_ns is not None
    return s + p.width_ns


def period_names(starts: np.ndarray, every: str | Period) -> list[str]:
    """``2026-W05`` (ISO week), ``2026-02`` (month), ``2026-02-01`` (day),
    ``2026-02-01T13`` (hour): the name of each period, by its start."""
    p = parse_every(every)
    out = []
    zone = _zone(p.tz) if p.tz else None
    for s in np.asarray(starts, dtype=np.int64).tolist():
        d = _dt.datetime(1970, 1, 1) + _dt.timedelta(microseconds=s // 1000)
        if zone is not None:
            d = d.replace(tzinfo=_dt.timezone.utc).astimezone(zone)
        if p.unit == "w":
            y, w, _ = d.isocalendar()
            out.append(f"{y}-W{w:02d}")
        elif p.unit == "mo":
            out.append(f"{d.year:04d}-{d.month:02d}")
        elif p.unit == "d":
            out.append(d.strftime("%Y-%m-%d"))
        else:
            out.append(d.strftime("%Y-%m-%dT%H"))
    return out


def _zone(tz: str) -> Any:
    try:
        return zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise PauError(f"tz = {tz!r}: no such time zone. Fix: an IANA name (Europe/Paris, America/New_York) or "
                       "None for UTC") from None


def edge_index(p: Period, t: np.ndarray) -> np.ndarray:
    i = np.searchsorted(p.edges, t, side="right") - 1
    if len(i) and (i.min() < 0 or i.max() >= len(p.edges) - 1):
        bad = int(t[(i < 0) | (i >= len(p.edges) - 1)][0])
        raise PauError(f"a time ({bad} ns) outside the local periods computed for the rollup "
                       f"({int(p.edges[0])} to {int(p.edges[-1])} ns). Fix: give since and until around the data")
    return i


#: At most this many local periods in one rollup.
MAX_LOCAL_PERIODS = 1_000_000


def local_edges(p: Period, tz: str, first_ns: int, last_ns: int) -> Period:
    """``p`` with the boundaries of its local days, weeks (from Monday) or months in zone
    ``tz`` from the period holding ``first_ns`` to past ``last_ns``: each local midnight
    as ns UTC (a day of a daylight-saving change lasts 23 or 25 hours). Every boundary
    must fall on a UTC hour (the hourly cells cannot be cut inside one): a zone whose
    offset is not whole hours is refused. ``n`` days count from 1970-01-01, weeks from
    Monday 1969-12-29, months from January 1970, local."""
    if p.unit == "h":
        raise PauError(f"tz = {tz!r} with every = {p.text!r}: hours are UTC hours. Fix: a local period is a day, "
                       "week or month")
    zone = _zone(tz)
    d0 = (_dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
          + _dt.timedelta(microseconds=first_ns // 1000)).astimezone(zone).date()
    if p.unit == "d":
        d0 = _dt.date(1970, 1, 1) + _dt.timedelta(days=(d0 - _dt.date(1970, 1, 1)).days // p.n * p.n)
    elif p.unit == "w":
        monday = _dt.date(1969, 12, 29)
        d0 = monday + _dt.timedelta(days=(d0 - monday).days // (7 * p.n) * 7 * p.n)
    else:
        m = (d0.year * 12 + d0.month - 1 - 1970 * 12) // p.n * p.n + 1970 * 12
        d0 = _dt.date(m // 12, m % 12 + 1, 1)
    edges: list[int] = []
    d = d0
    while True:
        local = _dt.datetime(d.year, d.month, d.day, tzinfo=zone)
        delta = local - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        ns = (delta.days * 86_400 + delta.seconds) * NS_PER_S
        if ns % NS_PER_HOUR:
            raise PauError(f"tz = {tz!r}: local midnight of {d} is not on a UTC hour (the zone's offset is not whole "
                           "hours): the hourly cells cannot be cut there. Fix: UTC periods (no tz), or a zone "
                           "with whole-hour offsets")
        edges.append(ns)
        if ns > last_ns:
            break
        if len(edges) > MAX_LOCAL_PERIODS:
            raise PauError(f"tz = {tz!r}: over {MAX_LOCAL_PERIODS:,} local periods. Fix: give since and until")
        if p.unit == "mo":
            m = d.year * 12 + d.month - 1 + p.n
            d = _dt.date(m // 12, m % 12 + 1, 1)
        else:
            d = d + _dt.timedelta(days=p.n * (7 if p.unit == "w" else 1))
    return Period(p.n, p.unit, p.text, tz, np.array(edges, np.int64))


def parse_time(value: Any, what: str) -> int | None:
    """A time for ``since``/``until``: ns since the epoch (int), a ``datetime`` (naive is
    UTC), or an ISO 8601 date or time (``2026-02-02``, ``2026-02-02T06:00``); it must be
    a whole hour (cells are hours)."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        ns = int(value)
    else:
        if isinstance(value, str):
            try:
                value = _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            except ValueError:
                raise PauError(f"{what} = {value!r}: not a time. Fix: an ISO date or time (2026-02-02, "
                               "2026-02-02T06:00), or ns since the epoch") from None
        if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
            value = _dt.datetime(value.year, value.month, value.day)
        if not isinstance(value, _dt.datetime):
            raise PauError(f"{what} = {value!r}: not a time. Fix: ns since the epoch, a datetime or an ISO string")
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        delta = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        ns = (delta.days * 86_400 + delta.seconds) * NS_PER_S + delta.microseconds * 1000
    if ns % NS_PER_HOUR:
        raise PauError(f"{what} = {value!r}: not on a whole hour (UTC). Fix: the hourly cells cannot be cut inside "
                       "an hour; give a time on the hour")
    return ns

