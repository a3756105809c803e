"""ml-goodput-measurement's own figures of its entries, under its rules, quirks included:
:func:`get_job_goodput`, :func:`get_job_goodput_interval`, :func:`get_step_deviation` and
:func:`job_goodput_details`. :mod:`pau.compat.ml_goodput` is the front (``docs/ml-goodput.md``)."""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np

from pau.compat.mlg_entries import (
    _CUSTOM_END, _CUSTOM_START, _CUSTOM_TYPE, _DATA_END, _DATA_START, _EVENT_TYPE, _JOB_END, _JOB_START, _PREP_END,
    _PREP_START, _REINIT_END, _REINIT_START, _RESTORE_DURATION, _SAVE_DURATION, _STEP_COUNT, _STEP_START, _TABLE,
    _TPU_END, _TPU_START, _WAIT_END, _WAIT_START, _WAIT_TYPE, BADPUT_TYPES, ELASTIC_BADPUT_TYPES, Breakdown,
    TimeLike, _Entry, _is_number, _parse, _Parsed, _quarantine_table,
)
from pau.engine.types import Quarantined
from pau.errors import OptionError, PauError


__all__ = ["GoodputFigures", "get_job_goodput", "get_job_goodput_interval", "get_step_deviation", "job_goodput_details"]

# ---------------------------------------------------------------------------
# The library's figures
# ---------------------------------------------------------------------------


def _us(t: float) -> float:
    """A POSIX time as the library's cache keeps it: a datetime (microseconds)."""
    return datetime.datetime.fromtimestamp(t, tz=datetime.timezone.utc).timestamp()


def _query_seconds(query_time: Optional[TimeLike]) -> Optional[float]:
    if query_time is None:
        return None
    if isinstance(query_time, datetime.datetime):
        if query_time.tzinfo is None:
            raise OptionError("query_time: a naive datetime. Fix: give an aware datetime (UTC) or POSIX seconds")
        return query_time.timestamp()
    if not _is_number(query_time) or not math.isfinite(float(query_time)):
        raise OptionError(f"query_time: {query_time!r} is not POSIX seconds. Fix: give seconds or a datetime")
    return float(query_time)


@dataclass(frozen=True)
class GoodputFigures:
    """Everything the library's calculator computes for one query, in its units.

    Attributes
    ----------
    goodput : float
        Goodput in percent of the total job time.
    badput : dict
        Percent of the total job time per ``BadputType`` name; ``CUSTOM_BADPUT_EVENTS``
        maps each custom event type (upper case) to its percent.
    last_step : int
        The library's "last step": the highest step of the last run of steps.
    total_job_time : float
        Seconds from the first ``job_start_time`` to the last ``job_end_time`` (or
        the query time).
    productive_time : float
        Seconds the library counts as productive.
    unproductive_time : dict
        Seconds per ``BadputType`` name (``OTHER`` included), after the library's
        sanitizing (a bucket below 0 or above the total is set to 0).
    disruptions : int
        Repeated step numbers seen (the library's disruption count).
    sanitized : tuple of str
        The buckets the library set to 0 because they were below 0 or above the total.
    counted : tuple of (float, float)
        The step windows ``[start, next start)`` (seconds) the library counted as
        productive, the last one ending at ``job_end_time``.
    deductions : dict
        Seconds the library subtracted from those windows: ``PROGRAM_STARTUP``,
        ``CUSTOM_BADPUT_EVENTS`` (the events inside counted windows) and
        ``UNPRODUCTIVE_CHECKPOINT_SAVE_TIME``.
    """

    goodput: float
    badput: Breakdown
    last_step: int
    total_job_time: float
    productive_time: float
    unproductive_time: Breakdown
    disruptions: int
    sanitized: tuple[str, ...]
    counted: tuple[tuple[float, float], ...]
    deductions: dict[str, float]


def _custom_intervals(payloads: list[dict[str, Any]]) -> list[tuple[float, float, str]]:
    # A start opens an event of its type (a second start replaces the first); an end
    # closes the open event of its type; only events of positive length count.
    out, open_ = [], {}
    for p in payloads:
        if _CUSTOM_START in p:
            open_[p[_CUSTOM_TYPE].upper()] = p[_CUSTOM_START]
        elif _CUSTOM_END in p:
            t = p[_CUSTOM_TYPE].upper()
            if t in open_:
                s = open_.pop(t)
                if s < p[_CUSTOM_END]:
                    out.append((s, p[_CUSTOM_END], t))
    return out


def _checkpoint_seconds(payloads: list[dict[str, Any]], event: str, key: str) -> float:
    # Orbax statistics: per (step, local or gs://), the mean over the workers that
    # logged it; summed over those keys. Restores count event_type "restore" only.
    groups: dict[str, list[float]] = {}
    for p in payloads:
        if p.get(_EVENT_TYPE) != event:
            continue
        where = "persistent" if p["directory"].startswith("gs://") else "local"
        groups.setdefault(f"{p['step']}-{where}", []).append(float(p[key]))
    return sum((sum(v) / len(v) for v in groups.values()), 0.0)


def _num(d: Breakdown, key: str) -> float:
    """A flat bucket's seconds (0 when absent)."""
    v = d.get(key, 0.0)
    assert not isinstance(v, dict)
    return float(v)


def _accumulate(seg: Breakdown, total: Breakdown) -> None:
    # The library's merge: nested dicts add per key; a float adds only onto a float.
    for k, v in seg.items():
        if isinstance(v, dict):
            if k not in total:
                total[k] = dict(v)
            else:
                cur = total[k]
                if isinstance(cur, dict):
                    for kk, vv in v.items():
                        cur[kk] = cur.get(kk, 0.0) + vv
        elif k in total:
            cur = total[k]
            if isinstance(cur, float):
                total[k] = cur + v
        else:
            total[k] = v


class _Lib:
    """The library's pass over the entries (``_get_current_productive_and_unproductive_time``)."""

    def __init__(self, payloads: list[dict[str, Any]], elastic: bool):
        self.payloads = payloads
        self.custom = _custom_intervals(payloads)
        self.counted: list[tuple[float, float]] = []
        self.startup = 0.0
        self.custom_deducted = 0.0
        self.disruptions = 0
        self.productive, self.unproductive, self.last_step = self._run()
        if elastic:
            self._elastic()

    def _segment(self, steps: dict[int, float], curr: int) -> tuple[float, Breakdown]:
        """Productive and unproductive time of a run of steps that ends at step ``curr``."""
        if curr == 0:
            return 0.0, {}
        items = list(steps.items())
        min_step = min(steps)
        total = first = wasted = 0.0
        times: list[float] = []
        custom: dict[str, float] = {}
        windows: list[tuple[float, float]] = []
        custom_in = 0.0
        n = 0
        for (ps, pt), (cs, ct) in zip(items, items[1:]):
            raw = ct - pt
            if cs <= curr:
                if cs - 1 != ps:
                    continue
                c = 0.0
                for s, e, typ in self.custom:
                    if pt <= s and e <= ct:
                        c += e - s
                        custom[typ] = custom.get(typ, 0.0) + (e - s)
                adj = max(0.0, raw - c)
                total += adj
                if ps == min_step:
                    first = adj
                else:
                    times.append(adj)
                windows.append((pt, ct))
                custom_in += raw - adj
                n += 1
            else:
                wasted += raw
        if n == 0:
            return 0.0, {"WASTED_PROGRESS_FROM_DISRUPTION": wasted}
        self.counted += windows
        self.custom_deducted += custom_in
        if len(times) == 0:
            return first, {"WASTED_PROGRESS_FROM_DISRUPTION": wasted, "CUSTOM_BADPUT_EVENTS": custom,
                           "PROGRAM_STARTUP": 0.0}
        average = (total - first) / len(times)
        extra = max(0.0, first - average)
        self.startup += extra
        return total - extra, {"PROGRAM_STARTUP": extra, "WASTED_PROGRESS_FROM_DISRUPTION": wasted,
                               "CUSTOM_BADPUT_EVENTS": custom}

    def _run(self) -> tuple[float, Breakdown, int]:
        productive = 0.0
        total: Breakdown = {}
        steps: dict[int, float] = {}
        job_start = job_end = None
        tpu_s = prep_s = data_s = None
        tpu = prep = data = 0.0
        sync = True
        current_sync: Optional[float] = None
        for p in self.payloads:
            if _JOB_START in p:
                job_start = p[_JOB_START]
            if _STEP_START in p:
                step = int(p[_STEP_COUNT])
                if step not in steps:
                    steps[step] = p[_STEP_START]
                else:
                    productive += self._restart(steps, step, job_start, current_sync, total)
                    sync, current_sync = True, None
                    steps = {step: p[_STEP_START]}
            if _JOB_END in p:
                job_end = p[_JOB_END]
            if _TPU_START in p:
                tpu_s = p[_TPU_START]
            elif _TPU_END in p and tpu_s is not None:
                tpu += p[_TPU_END] - tpu_s
                tpu_s = None
            elif _PREP_START in p:
                prep_s = p[_PREP_START]
            elif _PREP_END in p and prep_s is not None:
                prep += p[_PREP_END] - prep_s
                prep_s = None
            elif _DATA_START in p:
                data_s = p[_DATA_START]
            elif _DATA_END in p and data_s is not None:
                current_sync = p[_DATA_END] - data_s
                data += current_sync
                if sync:
                    # The first data loading after a start or restart blocks.
                    total["DATA_LOADING_SYNC"] = _num(total, "DATA_LOADING_SYNC") + current_sync
                    sync = False
                data_s = None
        self.save = _checkpoint_seconds(self.payloads, "save", _SAVE_DURATION)
        restore = _checkpoint_seconds(self.payloads, "restore", _RESTORE_DURATION)
        total["TPU_INITIALIZATION"] = tpu
        total["TRAINING_PREP"] = prep
        total["DATA_LOADING_ASYNC"] = data - _num(total, "DATA_LOADING_SYNC")
        total["UNPRODUCTIVE_CHECKPOINT_SAVE_TIME"] = self.save
        total["UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME"] = restore
        if not steps:
            self.save = 0.0
            return 0.0, total, 0
        last = max(steps)
        seg_p, seg_u = self._segment(steps, last)
        productive += seg_p
        _accumulate(seg_u, total)
        if job_end is not None:
            # The last step counts only once the job has ended.
            productive += job_end - steps[last]
            self.counted.append((steps[last], job_end))
        productive -= self.save
        return productive, total, last

    def _restart(self, steps: dict[int, float], step: int, job_start: Optional[float],
                 current_sync: Optional[float], total: Breakdown) -> float:
        """A step seen again in this run: the library reads a restart from step ``step``,
        all progress before it kept. Adds the segment's unproductive time to ``total``
        (the data loading in flight as sync, the time from the last step to the restart
        as wasted progress) and returns its productive time."""
        self.disruptions += 1
        disrupted_at = steps[list(steps)[-1]]
        seg_p, seg_u = self._segment(steps, step)
        if current_sync is not None:
            seg_u["DATA_LOADING_SYNC"] = _num(seg_u, "DATA_LOADING_SYNC") + current_sync
        if job_start is not None and job_start > disrupted_at:
            gap = job_start - disrupted_at
            seg_u["WASTED_PROGRESS_FROM_DISRUPTION"] = _num(seg_u, "WASTED_PROGRESS_FROM_DISRUPTION") + gap
        _accumulate(seg_u, total)
        return seg_p

    def _elastic(self) -> None:
        # ElasticGoodputCalculator: paired waits by type, paired re-initializations, and
        # TPU initialization / training preparation inside a re-initialization taken out.
        waits = _elastic_waits(self.payloads)
        reinits = [(s, e) for s, e in _paired(self.payloads, _REINIT_START, _REINIT_END)]
        u = self.unproductive
        for s, e, t in waits:
            b = "ELASTIC_SCALE_UP" if "scale_up" in t.lower() else "ELASTIC_SLICE_DOWN"
            u[b] = _num(u, b) + (e - s)
        for s, e in reinits:
            u["ELASTIC_REINITIALIZATION"] = _num(u, "ELASTIC_REINITIALIZATION") + (e - s)
        if reinits:
            for bucket, (sk, ek) in (("TPU_INITIALIZATION", (_TPU_START, _TPU_END)),
                                     ("TRAINING_PREP", (_PREP_START, _PREP_END))):
                spans = _paired(self.payloads, sk, ek)
                overlap = sum(max(0.0, min(e, re) - max(s, rs)) for s, e in spans for rs, re in reinits)
                if overlap > 0 and bucket in u:
                    cur = u[bucket]
                    assert isinstance(cur, float)
                    u[bucket] = max(0.0, cur - overlap)


def _elastic_waits(payloads: list[dict[str, Any]]) -> list[tuple[float, float, str]]:
    """ElasticGoodputCalculator's waits: a start and the next end of its type, when the
    end is later."""
    waits, open_w = [], {}
    for p in payloads:
        if _WAIT_START in p:
            open_w[p.get(_WAIT_TYPE, "unknown")] = p[_WAIT_START]
        elif _WAIT_END in p:
            t = p.get(_WAIT_TYPE, "unknown")
            if t in open_w:
                s = open_w.pop(t)
                if s < p[_WAIT_END]:
                    waits.append((s, p[_WAIT_END], t))
    return waits


def _paired(payloads: list[dict[str, Any]], start_key: str, end_key: str) -> list[tuple[float, float]]:
    """Spans of a start and the next end after it (an end without a start, or not after
    it, is left out), as the library pairs them."""
    spans, start = [], None
    for p in payloads:
        if start_key in p:
            start = p[start_key]
        elif end_key in p and start is not None:
            if start < p[end_key]:
                spans.append((start, p[end_key]))
            start = None
    return spans


def _finish(lib: _Lib, total_job_time: float, elastic: bool) -> GoodputFigures:
    """``get_job_goodput``'s checks, sanitizing, ``OTHER`` and percentages."""
    prod = lib.productive
    if prod < 0.0 or prod > total_job_time:
        raise PauError(f"{_TABLE}: the library's productive time is {prod!r} s, outside [0, {total_job_time!r}] "
                       "(the library raises 'Productive training time is invalid'). Fix: check the order "
                       "and times of the entries")
    u = lib.unproductive
    sanitized = []
    for k, v in u.items():
        if isinstance(v, float):
            if v < 0.0 or v > total_job_time:
                u[k] = 0.0
                sanitized.append(k)
        elif isinstance(v, dict):
            for kk, vv in v.items():
                if vv < 0.0 or vv > total_job_time:
                    v[kk] = 0.0
                    sanitized.append(f"{k}.{kk}")
    flat = 0.0
    for k, v in u.items():
        if k in ("DATA_LOADING_ASYNC", "OTHER"):
            continue
        if isinstance(v, float):
            flat += v
        elif isinstance(v, dict):
            flat += sum(v.values())
    u["OTHER"] = max(0.0, total_job_time - prod - flat)

    def pct(v: float) -> float:
        return (v / total_job_time) * 100 if 0 < v < total_job_time else 0.0

    badput: Breakdown = {}
    for k in BADPUT_TYPES + (ELASTIC_BADPUT_TYPES if elastic else ()):
        v = u.get(k, {} if k == "CUSTOM_BADPUT_EVENTS" else 0.0)
        if isinstance(v, dict):
            badput[k] = {kk: pct(vv) for kk, vv in v.items()}
        else:
            badput[k] = pct(v)
    return GoodputFigures(
        goodput=(float(prod) / total_job_time) * 100, badput=badput, last_step=lib.last_step,
        total_job_time=total_job_time, productive_time=prod, unproductive_time=u,
        disruptions=lib.disruptions, sanitized=tuple(sanitized), counted=tuple(lib.counted),
        deductions={"PROGRAM_STARTUP": lib.startup, "CUSTOM_BADPUT_EVENTS": lib.custom_deducted,
                    "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME": lib.save})


def _has_elastic(entries: list[_Entry]) -> bool:
    return any(e.kind.startswith("elastic_") for e in entries)


def _details(p: _Parsed, query_time: Optional[TimeLike], elastic: Optional[bool]) -> GoodputFigures:
    payloads = [e.payload for e in p.entries]
    el = _has_elastic(p.entries) if elastic is None else bool(elastic)
    starts = [q[_JOB_START] for q in payloads if _JOB_START in q]
    ends = [q[_JOB_END] for q in payloads if _JOB_END in q]
    if not starts:
        raise PauError(f"{p.name}: no job_start_time entry, so the total job time is zero and the library "
                       "cannot compute goodput. Fix: include the job's job_start_time entry")
    if ends:
        end = ends[-1]
        last_start = max(i for i, q in enumerate(payloads) if _JOB_START in q)
        if query_time is not None and any(_JOB_END in q for q in payloads[last_start:]):
            raise OptionError(f"{p.name}: query_time given for a job that ended (its job_end_time sets its "
                              "time). Fix: drop query_time")
    else:
        q = _query_seconds(query_time)
        if q is None:
            raise OptionError(f"{p.name}: the job has no job_end_time entry, so the library runs its time to the "
                              "query time. Fix: pass query_time= (POSIX seconds or an aware datetime)")
        end = q
    total = _us(end) - _us(starts[0])
    if total == 0.0:
        raise PauError(f"{p.name}: the total job time is zero (the library raises here). Fix: check "
                       "job_start_time and job_end_time")
    return _finish(_Lib(payloads, el), total, el)


def job_goodput_details(entries: Any, *, query_time: Optional[TimeLike] = None, elastic: Optional[bool] = None,
                        job_name: Optional[str] = None,
                        on_invalid: str = "raise") -> Union[GoodputFigures, Quarantined]:
    """Every figure of the library's ``get_job_goodput``, in seconds and percent.

    Parameters
    ----------
    entries : list of dict, or path
        See :func:`read_entries`.
    query_time : float or datetime, optional
        The query instant (POSIX seconds or an aware datetime). Required when the job
        has no ``job_end_time`` entry: the library then runs the job's time to "now".
    elastic : bool, optional
        Add ``ElasticGoodputCalculator``'s buckets. Default: when there are elastic entries.
    job_name : str, optional
        See :func:`read_entries`.
    on_invalid : {"raise", "quarantine"}

    Returns
    -------
    GoodputFigures, or Quarantined
    """
    p = _parse(entries, job_name, on_invalid)
    out = _details(p, query_time, elastic)
    return Quarantined(out, _quarantine_table(p)) if on_invalid == "quarantine" else out


def get_job_goodput(entries: Any, *, include_badput_breakdown: bool = False,
                    query_time: Optional[TimeLike] = None, elastic: Optional[bool] = None,
                    job_name: Optional[str] = None,
                    on_invalid: str = "raise") -> Union[tuple[float, Breakdown, int], Quarantined]:
    """What the library's ``GoodputCalculator.get_job_goodput`` returns for these entries.

    Parameters
    ----------
    entries : list of dict, or path
        See :func:`read_entries`.
    include_badput_breakdown : bool
        As in the library: without it the breakdown is ``{}``.
    query_time, elastic, job_name, on_invalid
        See :func:`job_goodput_details`.

    Returns
    -------
    tuple, or Quarantined
        ``(goodput_percent, badput_breakdown, last_step)``; the breakdown is keyed by
        ``BadputType`` name (:data:`BADPUT_TYPES`), in percent of the total job time.

    Raises
    ------
    pau.errors.PauError
        Where the library raises: no ``job_start_time`` (zero total time), or a
        productive time outside ``[0, total]``.
    """
    p = _parse(entries, job_name, on_invalid)
    d = _details(p, query_time, elastic)
    out = (d.goodput, d.badput if include_badput_breakdown else {}, d.last_step)
    return Quarantined(out, _quarantine_table(p)) if on_invalid == "quarantine" else out


def _entry_time(payload: dict[str, Any]) -> Optional[float]:
    # The library's get_timestamp_from_log_entry: the first value whose key has "time".
    for k, v in payload.items():
        if "time" in k:
            return v if _is_number(v) else None
    return None


def get_job_goodput_interval(entries: Any, interval_start: TimeLike, interval_end: TimeLike, *,
                             elastic: Optional[bool] = None, job_name: Optional[str] = None,
                             on_invalid: str = "raise"
                             ) -> Union[tuple[float, Breakdown, int, float, int], Quarantined]:
    """What the library's ``get_job_goodput_interval`` returns.

    The entries in the window are those whose first time-named value (the library's
    ``get_timestamp_from_log_entry``) lies in ``(interval_start, interval_end]``; the
    window's time runs from ``max(interval_start, first entry)`` to ``min(interval_end,
    last entry)``.

    Returns
    -------
    tuple, or Quarantined
        ``(goodput_percent, badput_breakdown, last_step, total_time_s, disruptions)``.
    """
    p = _parse(entries, job_name, on_invalid)
    a, b = _query_seconds(interval_start), _query_seconds(interval_end)
    assert a is not None and b is not None
    ua, ub = _us(a), _us(b)
    inside = []
    for e in p.entries:
        t = _entry_time(e.payload)
        if t is not None and ua < _us(t) <= ub:
            inside.append(e)
    if not inside:
        raise PauError(f"{p.name}: no entry within the interval ({a!r}, {b!r}] (the library raises here). "
                       "Fix: widen the interval")
    first, last = _entry_time(inside[0].payload), _entry_time(inside[-1].payload)
    assert first is not None and last is not None
    s, e_ = max(ua, _us(first)), min(ub, _us(last))
    if s >= e_:
        raise PauError(f"{p.name}: the interval's start is on or after its end once cut to its entries "
                       "(the library raises here). Fix: widen the interval")
    el = _has_elastic(p.entries) if elastic is None else bool(elastic)
    lib = _Lib([x.payload for x in inside], el)
    d = _finish(lib, e_ - s, el)
    out = (d.goodput, d.badput, d.last_step, d.total_job_time, d.disruptions)
    return Quarantined(out, _quarantine_table(p)) if on_invalid == "quarantine" else out


def get_step_deviation(entries: Any, *, configured_ideal_step_time: Optional[float] = None,
                       job_name: Optional[str] = None) -> dict[int, float]:
    """What the library's ``get_step_deviation`` returns: ``|step time - ideal|`` per step.

    A step's time is the next step's start minus its start, for consecutive step
    numbers. The ideal step time, unless configured, is the library's
    ``compute_ideal_step_time``: of the step times of at least 1 s, the mean of those
    at most ``median + 3 * MAD`` (MAD: the median of the absolute deviations from the
    median).

    Raises
    ------
    pau.errors.PauError
        No step time, or no ideal step time (the library raises ``ValueError``).
    """
    p = _parse(entries, job_name, "raise")
    times: dict[int, float] = {}
    prev: Optional[tuple[int, float]] = None
    for e in p.entries:
        if e.kind != "step":
            continue
        step, t = int(e.payload[_STEP_COUNT]), e.payload[_STEP_START]
        if prev is not None and step == prev[0] + 1:
            times[prev[0]] = t - prev[1]
        prev = (step, t)
    if not times:
        raise PauError(f"{p.name}: no step time (two consecutive step numbers). Fix: include the step entries")
    ideal: Optional[float] = configured_ideal_step_time
    if ideal is None:
        kept = np.array([t for t in times.values() if t >= 1.0])
        if kept.size:
            med = float(np.median(kept))
            mad = float(np.median(np.abs(kept - med)))
            normal = kept[kept <= med + mad * 3]
            ideal = float(np.mean(normal)) if normal.size else None
    if not ideal:
        raise PauError(f"{p.name}: no ideal step time (no step of 1 s or more). Fix: pass configured_ideal_step_time=")
    return {s: abs(t - ideal) for s, t in times.items()}
