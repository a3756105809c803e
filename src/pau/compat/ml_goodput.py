"""ml-goodput-measurement's goodput and badput figures, and pau's ledger of the same log.

`ml-goodput-measurement <https://github.com/AI-Hypercomputer/ml-goodput-measurement>`_
(Apache-2.0) has a training job log structured entries to Cloud Logging (job start and
end, each step's start, accelerator initialization, training preparation, data loading,
custom badput events, Orbax checkpoint save and restore statistics) and computes from
them a goodput percentage, a badput breakdown keyed by its ``BadputType`` names and the
last step. This module reads those entries and computes:

* :func:`get_job_goodput`, :func:`get_job_goodput_interval`, :func:`get_step_deviation`:
  what the library's ``GoodputCalculator`` methods of the same names return, under the
  library's own rules, quirks included (float seconds, as the library computes them);
  :func:`job_goodput_details` gives every intermediate figure;
* :func:`to_lifecycle`: pau's lifecycle table (DESIGN §2.2) of the same entries, and
  :func:`ledger`: pau's ledger of it;
* :func:`side_by_side`: both, with the gap between the two goodputs split into named
  differences (ns and share of the job's time) that add up to it.

The version reproduced is the library's calculator with custom badput events and
without the ``INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION`` bucket (its 0.0.10 release line,
``BadputType`` of 10 names), whose ``tests/goodput_test.py`` scenarios are the test
vectors; with ``elastic=True`` the three buckets of its ``ElasticGoodputCalculator``
(``ELASTIC_SLICE_DOWN``, ``ELASTIC_SCALE_UP``, ``ELASTIC_REINITIALIZATION``) are added.
``docs/ml-goodput.md`` states every rule, the mapping of buckets to pau's states, and
where the two differ and why.

Entries
-------
A list of dicts (the ``jsonPayload`` of each log entry, in the order the library reads
them: ascending log timestamp), a list of Cloud Logging entries (dicts with a
``jsonPayload``, ordered by their ``timestamp``), or a path to a JSON-lines file (one
entry a line, blank lines skipped) or a JSON array of entries. ``job_name`` keeps the
entries of one job (entries without a ``job_name`` are kept, as the library's own tests
log checkpoint statistics without one). Times are POSIX seconds (read as floats, as the
library's recorder writes them); pau converts each to int64 ns exactly
(``round(Fraction(t) * 10**9)``).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import pathlib
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable, Optional, Union

import numpy as np
import pyarrow as pa

from pau.engine.api import ledger as _pau_ledger
from pau.engine.ledger import Ledger
from pau.engine.types import LedgerSummary, Quarantined, check_on_invalid, quarantine_schema, quarantine_table
from pau.engine.vocab import LIFECYCLE_SCHEMA
from pau.errors import InvalidRowError, NoInputError, OptionError, PauError

__all__ = [
    "BADPUT_TYPES",
    "ELASTIC_BADPUT_TYPES",
    "Difference",
    "GoodputFigures",
    "QUARANTINE_SCHEMA",
    "SideBySide",
    "get_job_goodput",
    "get_job_goodput_interval",
    "get_step_deviation",
    "job_goodput_details",
    "ledger_from_entries",
    "read_entries",
    "side_by_side",
    "to_lifecycle",
]

#: The library's ``BadputType`` names, in its enum order.
BADPUT_TYPES = (
    "TPU_INITIALIZATION",
    "TRAINING_PREP",
    "PROGRAM_STARTUP",
    "DATA_LOADING_SYNC",
    "DATA_LOADING_ASYNC",
    "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME",
    "UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME",
    "WASTED_PROGRESS_FROM_DISRUPTION",
    "CUSTOM_BADPUT_EVENTS",
    "OTHER",
)
#: The buckets ``ElasticGoodputCalculator`` adds (``elastic=True``).
ELASTIC_BADPUT_TYPES = ("ELASTIC_SLICE_DOWN", "ELASTIC_SCALE_UP", "ELASTIC_REINITIALIZATION")

_TABLE = "ml-goodput entries"

# The payload keys the library's recorders write.
_JOB_NAME = "job_name"
_STEP_COUNT = "step_count"
_STEP_START = "step_start_time"
_JOB_START = "job_start_time"
_JOB_END = "job_end_time"
_TPU_START, _TPU_END = "tpu_init_start_time", "tpu_init_end_time"
_PREP_START, _PREP_END = "training_prep_start_time", "training_prep_end_time"
_DATA_START, _DATA_END = "data_loading_start_time", "data_loading_end_time"
_CUSTOM_TYPE = "custom_badput_event_type"
_CUSTOM_START, _CUSTOM_END = "custom_badput_event_start_time", "custom_badput_event_end_time"
_WAIT_TYPE = "elastic_wait_event_type"
_WAIT_START, _WAIT_END = "elastic_wait_start_time", "elastic_wait_end_time"
_REINIT_START, _REINIT_END = "elastic_reinit_start_time", "elastic_reinit_end_time"
_SLICES = "elastic_slice_counts_timestamp"
# Orbax's checkpoint statistics (event_type save / restore / emergency_restore).
_EVENT_TYPE = "event_type"
_SAVE_START = "checkpoint_manager_blocking_start_time"
_SAVE_DURATION = "checkpoint_manager_blocking_duration_secs"
_RESTORE_START = "checkpoint_manager_start_time"
_RESTORE_DURATION = "checkpoint_manager_duration_secs"

#: Entry kinds, each by the key that marks it (one per entry).
_KIND_KEYS = (
    ("job_start", _JOB_START), ("job_end", _JOB_END), ("step", _STEP_START),
    ("tpu_init_start", _TPU_START), ("tpu_init_end", _TPU_END),
    ("training_prep_start", _PREP_START), ("training_prep_end", _PREP_END),
    ("data_loading_start", _DATA_START), ("data_loading_end", _DATA_END),
    ("custom_start", _CUSTOM_START), ("custom_end", _CUSTOM_END),
    ("elastic_wait_start", _WAIT_START), ("elastic_wait_end", _WAIT_END),
    ("elastic_reinit_start", _REINIT_START), ("elastic_reinit_end", _REINIT_END),
    ("elastic_slice_counts", _SLICES),
)
_CHECKPOINT_EVENTS = ("save", "restore", "emergency_restore")
#: The key that places each kind in time.
_KEY_OF = dict(_KIND_KEYS, save=_SAVE_START, restore=_RESTORE_START, emergency_restore=_RESTORE_START)

Breakdown = dict[str, Union[float, dict[str, float]]]
TimeLike = Union[float, int, datetime.datetime]


# ---------------------------------------------------------------------------
# Reading entries
# ---------------------------------------------------------------------------


@dataclass
class _Entry:
    index: int          # position in the input (list index, or 0-based line of a file)
    kind: str
    payload: dict[str, Any]   # time values as floats


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class _Bad(Exception):
    """An entry pau cannot use: the key and the reason, and how to fix it."""

    def __init__(self, key: str, reason: str, fix: str):
        self.key, self.reason, self.fix = key, reason, fix
        super().__init__(reason)


def _seconds(payload: dict[str, Any], key: str, *, required: bool = True) -> Optional[float]:
    v = payload.get(key)
    if v is None:
        if required:
            raise _Bad(key, "is missing" if key not in payload else "is null",
                       f"give '{key}' as POSIX seconds")
        return None
    if not _is_number(v) or not math.isfinite(float(v)):
        raise _Bad(key, f"is {v!r}, not a finite number of seconds", f"give '{key}' as POSIX seconds")
    return float(v)


def _kind_of(payload: dict[str, Any]) -> str:
    kinds = [k for k, key in _KIND_KEYS if key in payload]
    et = payload.get(_EVENT_TYPE)
    if et is not None:
        if et not in _CHECKPOINT_EVENTS:
            raise _Bad(_EVENT_TYPE, f"is {et!r}, not one of {', '.join(_CHECKPOINT_EVENTS)}",
                       "drop the entry or correct its event_type")
        kinds.append(str(et))
    if not kinds:
        keys = ", ".join(sorted(map(str, payload))) or "none"
        raise _Bad("(entry)", f"is of no kind the library logs (keys: {keys})",
                   "drop the entry, or give it the key of its kind (job_start_time, step_start_time, ...)")
    if len(kinds) > 1:
        raise _Bad("(entry)", f"holds the keys of several kinds ({', '.join(kinds)})",
                   "log one kind per entry, as the library's recorder does")
    return kinds[0]


@dataclass
class _Unreadable:
    """A line of a JSON-lines file that is not JSON."""

    problem: str


def _check(payload: Any) -> _Entry:
    """One entry's kind and its values checked (index filled by the caller)."""
    if isinstance(payload, _Unreadable):
        raise _Bad("(line)", f"is not JSON ({payload.problem})", "write one JSON object a line")
    if not isinstance(payload, dict):
        raise _Bad("(entry)", f"is a {type(payload).__name__}, not an object", "give each entry as a JSON object")
    kind = _kind_of(payload)
    p = dict(payload)
    if kind in ("save", "restore", "emergency_restore"):
        step = p.get("step")
        if not (isinstance(step, int) and not isinstance(step, bool)):
            raise _Bad("step", f"is {step!r}, not an integer step", "give the checkpoint's step")
        if not isinstance(p.get("directory"), str):
            raise _Bad("directory", f"is {p.get('directory')!r}, not a path",
                       "give the checkpoint directory (the library tells local from gs:// by it)")
        dkey = _SAVE_DURATION if kind == "save" else _RESTORE_DURATION
        skey = _SAVE_START if kind == "save" else _RESTORE_START
        d = _seconds(p, dkey)
        assert d is not None
        if d < 0:
            raise _Bad(dkey, f"is {d!r}, a negative duration", "give the blocking duration in seconds")
        p[dkey] = d
        s = _seconds(p, skey, required=False)
        if s is not None:
            p[skey] = s
        return _Entry(-1, kind, p)
    key = _KEY_OF[kind]
    p[key] = _seconds(p, key)
    if kind == "step":
        sc = p.get(_STEP_COUNT)
        if not (isinstance(sc, int) and not isinstance(sc, bool)):
            raise _Bad(_STEP_COUNT, f"is {sc!r}, not an integer", "give each step_start_time entry its step_count")
    elif kind in ("custom_start", "custom_end"):
        if not isinstance(p.get(_CUSTOM_TYPE), str):
            raise _Bad(_CUSTOM_TYPE, f"is {p.get(_CUSTOM_TYPE)!r}, not a name",
                       "give custom badput events their custom_badput_event_type")
    elif kind in ("elastic_wait_start", "elastic_wait_end"):
        et = p.get(_WAIT_TYPE, "unknown")
        if not isinstance(et, str):
            raise _Bad(_WAIT_TYPE, f"is {et!r}, not a name", "give elastic waits a text event type")
    return _Entry(-1, kind, p)


_RFC3339 = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$")


def _log_timestamp_ns(v: Any) -> Optional[int]:
    """A Cloud Logging entry's RFC 3339 ``timestamp``, in ns (None if absent or not one)."""
    if not isinstance(v, str):
        return None
    m = _RFC3339.match(v)
    if m is None:
        return None
    base = datetime.datetime.fromisoformat(m.group(1) + ("+00:00" if m.group(3) == "Z" else m.group(3)))
    frac = int((m.group(2) or "0").ljust(9, "0"))
    return int(base.timestamp()) * 1_000_000_000 + frac


def _raw(source: Any) -> tuple[str, list[tuple[int, Any]]]:
    """(table name, [(index, object)]) of a list of entries or a file."""
    if isinstance(source, (str, os.PathLike)):
        path = pathlib.Path(source)
        if not path.is_file():
            raise NoInputError(f"{path}: no such file. Fix: give a JSON-lines file of ml-goodput log entries")
        text = path.read_text(encoding="utf-8")
        name = str(path)
        if text.lstrip().startswith("["):
            try:
                items = json.loads(text)
            except json.JSONDecodeError as e:
                raise PauError(f"{name}: not valid JSON ({e}). Fix: give a JSON array or one JSON object a line") from e
            return name, list(enumerate(items))
        out = []
        for i, line in enumerate(text.splitlines()):
            if not line.strip():
                continue
            try:
                out.append((i, json.loads(line)))
            except json.JSONDecodeError as e:
                out.append((i, _Unreadable(e.msg)))
        return name, out
    if isinstance(source, dict):
        raise PauError(f"{_TABLE}: got one dict. Fix: give a list of entries (dicts) or a path")
    if isinstance(source, Iterable):
        return _TABLE, list(enumerate(source))
    raise PauError(f"{_TABLE}: cannot read a {type(source).__name__}. Fix: give a list of dicts or a path")


#: The entries set aside with ``on_invalid="quarantine"``: ``source_file, location,
#: reason`` (:data:`pau.engine.types.QUARANTINE_SCHEMA`; ``source_file`` null for entries
#: given as a list, ``location`` ``row N``), then ``row`` (the entry's index: list
#: position, or 0-based line of a JSON-lines file), ``key`` (the key at fault) and
#: ``entry`` (the entry's JSON).
QUARANTINE_SCHEMA = quarantine_schema(pa.field("row", pa.int64()), pa.field("key", pa.string()),
                                      pa.field("entry", pa.string()))


def _quarantine_table(p: "_Parsed") -> pa.Table:
    def text(x: Any) -> str:
        try:
            return json.dumps(x, sort_keys=True, default=str)
        except (TypeError, ValueError):
            return repr(x)
    rows = p.bad
    return quarantine_table(QUARANTINE_SCHEMA, None if p.name == _TABLE else p.name,
                            [f"row {r[0]}" for r in rows], [r[2] for r in rows],
                            row=pa.array([r[0] for r in rows], pa.int64()), key=[r[1] for r in rows],
                            entry=[text(r[3]) for r in rows])


@dataclass
class _Parsed:
    name: str
    entries: list[_Entry]
    bad: list[tuple[int, str, str, Any]] = field(default_factory=list)

    def reject(self, on_invalid: str, index: int, key: str, reason: str, fix: str, obj: Any) -> None:
        if on_invalid == "raise":
            raise InvalidRowError(self.name, key, index, reason, fix)
        self.bad.append((index, key, reason, obj))


def _parse(source: Any, job_name: Optional[str], on_invalid: str) -> _Parsed:
    check_on_invalid(on_invalid)
    if isinstance(source, _Parsed):
        return source
    name, raw = _raw(source)
    out = _Parsed(name, [])
    # Cloud Logging entries carry the payload in jsonPayload; the library reads them in
    # ascending log timestamp.
    dicts = [(idx, obj) for idx, obj in raw if isinstance(obj, dict)]
    cloud = [idx for idx, obj in dicts if "jsonPayload" in obj]
    if cloud and len(cloud) != len(dicts):
        idx = next(i for i, obj in dicts if "jsonPayload" not in obj)
        raise InvalidRowError(name, "jsonPayload", idx, "is missing while other entries are Cloud Logging "
                              "entries", "give every entry in one shape")
    if cloud:
        keyed = []
        for idx, obj in dicts:
            ts = _log_timestamp_ns(obj.get("timestamp"))
            if ts is None:
                raise InvalidRowError(name, "timestamp", idx, f"is {obj.get('timestamp')!r}, not an RFC 3339 time",
                                      "export the entries with their timestamp (gcloud logging read --format=json)")
            keyed.append((ts, idx, obj["jsonPayload"]))
        keyed.sort(key=lambda x: (x[0], x[1]))
        raw = [(idx, obj) for idx, obj in raw if not isinstance(obj, dict)] + [
            (idx, payload) for _, idx, payload in keyed]
    names = {obj.get(_JOB_NAME) for _, obj in raw if isinstance(obj, dict) and obj.get(_JOB_NAME) is not None}
    if job_name is None and len(names) > 1:
        raise PauError(f"{name}: entries of {len(names)} jobs ({', '.join(sorted(map(str, names)))}). "
                       "Fix: pass job_name= to keep one job's entries")
    for idx, obj in raw:
        if job_name is not None and isinstance(obj, dict) and obj.get(_JOB_NAME) not in (None, job_name):
            continue
        try:
            e = _check(obj)
        except _Bad as b:
            out.reject(on_invalid, idx, b.key, f"{b.reason}", b.fix, obj)
            continue
        e.index = idx
        out.entries.append(e)
    return out


def read_entries(source: Any, *, job_name: Optional[str] = None, on_invalid: str = "raise") -> Any:
    """Read and check ml-goodput-measurement log entries.

    Parameters
    ----------
    source : list of dict, or path
        Payload dicts in the order the library reads them, Cloud Logging entries
        (``jsonPayload``, ordered by ``timestamp``), or a JSON-lines / JSON-array file.
    job_name : str, optional
        Keep only this job's entries (and entries without a ``job_name``). Required
        when the entries name several jobs.
    on_invalid : {"raise", "quarantine"}
        ``"quarantine"`` sets bad entries aside instead of raising.

    Returns
    -------
    list of dict, or Quarantined
        The payloads (times as floats), in reading order; with ``"quarantine"``,
        ``Quarantined(payloads, quarantine)`` where ``quarantine`` is
        :data:`QUARANTINE_SCHEMA`: ``source_file, location, reason``, then ``row`` (the
        entry's index), ``key`` and ``entry`` (its JSON).

    Raises
    ------
    pau.errors.InvalidRowError
        An entry of no known kind, of two kinds, or with a missing, null or non-numeric
        time, step or duration: names the entry's index, the key and the fix.
    """
    p = _parse(source, job_name, on_invalid)
    payloads = [e.payload for e in p.entries]
    if on_invalid == "quarantine":
        return Quarantined(payloads, _quarantine_table(p))
    return payloads


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
                    # A step seen again in this run: the library reads a restart from
                    # step `step`, all progress before it kept.
                    self.disruptions += 1
                    disrupted_at = steps[list(steps)[-1]]
                    seg_p, seg_u = self._segment(steps, step)
                    productive += seg_p
                    sync = True
                    if current_sync is not None:
                        seg_u["DATA_LOADING_SYNC"] = _num(seg_u, "DATA_LOADING_SYNC") + current_sync
                        current_sync = None
                    if job_start is not None and job_start > disrupted_at:
                        gap = job_start - disrupted_at
                        seg_u["WASTED_PROGRESS_FROM_DISRUPTION"] = _num(seg_u, "WASTED_PROGRESS_FROM_DISRUPTION") + gap
                    _accumulate(seg_u, total)
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

    def _elastic(self) -> None:
        # ElasticGoodputCalculator: paired waits by type, paired re-initializations, and
        # TPU initialization / training preparation inside a re-initialization taken out.
        waits, open_w = [], {}
        reinits, open_r = [], None
        for p in self.payloads:
            if _WAIT_START in p:
                open_w[p.get(_WAIT_TYPE, "unknown")] = p[_WAIT_START]
            elif _WAIT_END in p:
                t = p.get(_WAIT_TYPE, "unknown")
                if t in open_w:
                    s = open_w.pop(t)
                    if s < p[_WAIT_END]:
                        waits.append((s, p[_WAIT_END], t))
            if _REINIT_START in p:
                open_r = p[_REINIT_START]
            elif _REINIT_END in p and open_r is not None:
                if open_r < p[_REINIT_END]:
                    reinits.append((open_r, p[_REINIT_END]))
                open_r = None
        u = self.unproductive
        for s, e, t in waits:
            b = "ELASTIC_SCALE_UP" if "scale_up" in t.lower() else "ELASTIC_SLICE_DOWN"
            u[b] = _num(u, b) + (e - s)
        for s, e in reinits:
            u["ELASTIC_REINITIALIZATION"] = _num(u, "ELASTIC_REINITIALIZATION") + (e - s)
        if reinits:
            for bucket, (sk, ek) in (("TPU_INITIALIZATION", (_TPU_START, _TPU_END)),
                                     ("TRAINING_PREP", (_PREP_START, _PREP_END))):
                spans, start = [], None
                for p in self.payloads:
                    if sk in p:
                        start = p[sk]
                    elif ek in p and start is not None:
                        if start < p[ek]:
                            spans.append((start, p[ek]))
                        start = None
                overlap = sum(max(0.0, min(e, re) - max(s, rs)) for s, e in spans for rs, re in reinits)
                if overlap > 0 and bucket in u:
                    cur = u[bucket]
                    assert isinstance(cur, float)
                    u[bucket] = max(0.0, cur - overlap)


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
                        job_name: Optional[str] = None, on_invalid: str = "raise") -> Any:
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
                    job_name: Optional[str] = None, on_invalid: str = "raise") -> Any:
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
                             on_invalid: str = "raise") -> Any:
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


# ---------------------------------------------------------------------------
# pau's lifecycle of the same entries
# ---------------------------------------------------------------------------


def _ns(t: float) -> int:
    """POSIX seconds (a float) to int64 ns, exactly: the float's binary value, rounded."""
    return round(Fraction(t) * 1_000_000_000)


@dataclass
class _Attempt:
    id: int
    start: int
    end: Optional[int] = None          # completed at job_end, or cut at a later start
    kind: str = "running"
    last: int = 0                      # the latest instant any of its records reaches
    steps: list[tuple[int, int, int]] = field(default_factory=list)   # (index, step, start)
    cause: Optional[str] = None


def _records(p: _Parsed, *, ranks: int, as_of: Optional[int], on_invalid: str) -> tuple[list[dict[str, Any]], int]:
    """The lifecycle rows and the as_of instant, from the checked entries in order."""
    rows: list[dict[str, Any]] = []
    attempts: list[_Attempt] = []
    cur: Optional[_Attempt] = None
    phases: dict[str, tuple[int, int, str]] = {}      # open phase -> (entry index, start ns, kind)
    saves: dict[int, list[dict[str, Any]]] = {}       # step -> its save rows
    data_loads: dict[int, int] = {}                   # attempt -> data loadings seen
    restored: list[tuple[dict[str, Any], int]] = []

    def bad(e: _Entry, key: str, reason: str, fix: str) -> None:
        p.reject(on_invalid, e.index, key, reason, fix, e.payload)

    def add(record: str, start: int, end: Optional[int] = None, **kw: Any) -> dict[str, Any]:
        assert cur is not None
        row = {"record": record, "attempt": cur.id, "rank": -1, "start_ns": start, "end_ns": end, **kw}
        rows.append(row)
        cur.last = max(cur.last, start, end if end is not None else start,
                       kw.get("block_end_ns") or start)
        return row

    def close_phases(at: int) -> None:
        # A phase still open when its attempt ends ends there (like a step in flight).
        for _, s, kind in list(phases.values()):
            add("phase", s, max(s, at), kind=kind)
        phases.clear()

    def end_attempt(at: int, cause: Optional[str]) -> None:
        assert cur is not None
        close_phases(max(at, cur.last))
        cur.end = max(at, cur.last)
        cur.kind, cur.cause = "failed", cause

    pairs = {"tpu_init": "init", "training_prep": "init", "custom": "custom", "elastic_reinit": "init"}
    for e in p.entries:
        k, q = e.kind, e.payload
        if k == "job_start":
            t = _ns(q[_JOB_START])
            if cur is not None:
                if cur.end is None and t < cur.last:
                    bad(e, _JOB_START, "is earlier than records of the attempt before it",
                        "log the restart's job_start_time after the last entry of the attempt it ends")
                    continue
                if cur.end is None:
                    end_attempt(cur.last, "disruption")
                elif t < cur.end:
                    bad(e, _JOB_START, "is earlier than the end of the attempt before it",
                        "log the restart's job_start_time after the job_end_time it follows")
                    continue
            cur = _Attempt(len(attempts), t, last=t)
            attempts.append(cur)
            continue
        if k == "elastic_slice_counts":
            continue    # slice counts are telemetry, not time of a state (docs/ml-goodput.md)
        if cur is None:
            bad(e, _KEY_OF[k], "comes before the first job_start_time entry",
                "include the job's job_start_time entry before its other entries")
            continue
        if k == "elastic_wait_start":
            if cur.end is not None:
                bad(e, _WAIT_START, "follows the end of its attempt", "log elastic waits inside the job")
                continue
            t = _ns(q[_WAIT_START])
            if t < cur.last:
                bad(e, _WAIT_START, "is earlier than earlier records of its attempt",
                    "log entries in time order within an attempt")
                continue
            end_attempt(t, "elastic_" + str(q.get(_WAIT_TYPE, "unknown")).lower())
            continue
        if k == "elastic_wait_end":
            t = _ns(q[_WAIT_END])
            if cur.end is None or cur.cause is None or not cur.cause.startswith("elastic_"):
                bad(e, _WAIT_END, "ends an elastic wait that did not start", "log elastic_wait_start_time first")
                continue
            if t < cur.end:
                bad(e, _WAIT_END, "is earlier than the wait's start", "log the wait's times in order")
                continue
            cur = _Attempt(len(attempts), t, last=t)
            attempts.append(cur)
            continue
        if cur.end is not None and cur.kind == "completed":
            bad(e, _KEY_OF[k], "comes after the job_end_time entry of its attempt",
                "log a job_start_time before the entries of a new run")
            continue
        if cur.end is not None:
            bad(e, _KEY_OF[k], "comes during an elastic wait (between its start and end)",
                "log the wait's end before the job resumes")
            continue
        if k == "job_end":
            t = _ns(q[_JOB_END])
            if t < cur.last:
                bad(e, _JOB_END, "is earlier than records of its attempt", "log job_end_time last")
                continue
            close_phases(t)
            cur.end, cur.kind, cur.last = t, "completed", t
            continue
        if k == "step":
            t, step = _ns(q[_STEP_START]), int(q[_STEP_COUNT])
            if cur.steps and step <= cur.steps[-1][1]:
                bad(e, _STEP_COUNT, f"is {step}, not above the step before it ({cur.steps[-1][1]}) in the same "
                    "attempt (the library reads a restart here; pau needs it logged)",
                    "log a job_start_time entry where the job restarted")
                continue
            if t < cur.last:
                bad(e, _STEP_START, "is earlier than records before it in its attempt",
                    "log entries in time order within an attempt")
                continue
            cur.steps.append((e.index, step, t))
            cur.last = max(cur.last, t)
            continue
        if k in ("save", "restore", "emergency_restore"):
            skey = _SAVE_START if k == "save" else _RESTORE_START
            dkey = _SAVE_DURATION if k == "save" else _RESTORE_DURATION
            if q.get(skey) is None:
                bad(e, skey, "is missing: pau places a checkpoint by its start",
                    f"log the checkpoint statistics with {skey}")
                continue
            s = _ns(q[skey])
            if s < cur.start:
                bad(e, skey, "is before the job_start_time of its attempt",
                    "check the clock of the checkpoint statistics")
                continue
            end = s + _ns(q[dkey])
            if k == "save":
                row = add("checkpoint_save", s, None, step=int(q["step"]), block_end_ns=end,
                          durable_ns=end if q.get("synchronous") is True else None, ok=True)
                saves.setdefault(int(q["step"]), []).append(row)
            else:
                step = int(q["step"])
                earlier = [r for r in saves.get(step, []) if r["attempt"] != cur.id and r["start_ns"] < s]
                if not earlier:
                    bad(e, "step", f"restores step {step}, which no save entry of an earlier attempt holds",
                        "include the entries of the run that saved it")
                    continue
                add("restore", s, end, step=step, ok=True)
                restored.append((earlier[-1], s))
            continue
        # the paired phases
        base, edge = k.rsplit("_", 1)
        t = _ns(q[_KEY_OF[k]])
        if base == "data_loading":
            kind = "data_warmup" if data_loads.get(cur.id, 0) == 0 else "data_wait"
        else:
            kind = pairs[base]
        tag = base + ("/" + q[_CUSTOM_TYPE].upper() if base == "custom" else "")
        if edge == "start":
            if t < cur.start:
                bad(e, _KEY_OF[k], "is before the job_start_time of its attempt",
                    "log entries after the job_start_time of their run")
                continue
            if tag in phases:
                bad(e, _KEY_OF[k], f"opens a {base} phase while one is open",
                    f"log the {base} end before the next start")
                continue
            phases[tag] = (e.index, t, kind)
            cur.last = max(cur.last, t)
        else:
            if tag not in phases:
                bad(e, _KEY_OF[k], f"ends a {base} phase that did not start in its attempt",
                    f"log the {base} start first")
                continue
            opened = phases.pop(tag)
            s, kind = opened[1], opened[2]
            if t < s:
                bad(e, _KEY_OF[k], f"is before the {base} phase's start", "log the phase's times in order")
                phases[tag] = opened
                continue
            add("phase", s, t, kind=kind)
            if base == "data_loading":
                data_loads[cur.id] = data_loads.get(cur.id, 0) + 1
    if not attempts:
        raise PauError(f"{p.name}: no job_start_time entry. Fix: include the job's job_start_time entry")
    assert cur is not None
    if cur.end is None:
        if as_of is None:
            raise OptionError(f"{p.name}: the job has no job_end_time entry (it is still running, or its end was "
                              "not logged). Fix: pass query_time= (the instant the ledger is computed as of)")
        if as_of < cur.last:
            raise OptionError(f"{p.name}: query_time is before the job's last entry. Fix: pass a later query_time")
        for _, s, kind in phases.values():
            rows.append({"record": "phase", "attempt": cur.id, "rank": -1, "start_ns": s, "end_ns": None,
                         "kind": kind})
        stop = as_of
    elif cur.kind == "completed":
        if as_of is not None:
            raise OptionError(f"{p.name}: query_time given for a job that ended (its job_end_time sets the "
                              "ledger's time). Fix: drop query_time")
        stop = cur.end
    else:
        stop = max(cur.end, as_of or cur.end)
    # Durability: a synchronous save is durable when it stops blocking; an asynchronous
    # one when a later restore of its step starts (the log has no other evidence).
    for row, s in restored:
        if row["durable_ns"] is None:
            row["durable_ns"] = max(row["block_end_ns"], s)
    for a in attempts:
        for j, (_, step, t) in enumerate(a.steps):
            nxt = a.steps[j + 1][2] if j + 1 < len(a.steps) else (a.end if a.kind == "completed" else None)
            rows.append({"record": "step", "attempt": a.id, "rank": -1, "start_ns": t, "end_ns": nxt, "step": step})
        rows.append({"record": "attempt", "attempt": a.id, "rank": -1, "start_ns": a.start,
                     "end_ns": a.end if a.end is not None else None, "kind": a.kind})
        if a.kind == "failed":
            assert a.end is not None
            rows.append({"record": "failure", "attempt": a.id, "rank": -1, "start_ns": a.end, "kind": a.cause})
    for r in range(ranks):
        rows.append({"record": "accountable", "rank": r, "start_ns": attempts[0].start, "end_ns": stop})
    return rows, stop


def _lifecycle_table(rows: list[dict[str, Any]]) -> pa.Table:
    order = {"accountable": 0, "attempt": 1, "failure": 2, "phase": 3, "restore": 4, "checkpoint_save": 5, "step": 6}
    rows = sorted(rows, key=lambda r: (order[r["record"]], r.get("attempt") or 0, r["start_ns"]))
    cols = {f.name: pa.array([r.get(f.name) for r in rows], f.type) for f in LIFECYCLE_SCHEMA}
    return pa.table(cols, schema=LIFECYCLE_SCHEMA)


def _lifecycle(p: _Parsed, ranks: int, query_time: Optional[TimeLike], on_invalid: str) -> tuple[pa.Table, int]:
    if not isinstance(ranks, int) or isinstance(ranks, bool) or ranks < 1:
        raise OptionError(f"ranks: {ranks!r}. Fix: give the number of accelerators (an integer >= 1)")
    q = _query_seconds(query_time)
    rows, as_of = _records(p, ranks=ranks, as_of=None if q is None else _ns(q), on_invalid=on_invalid)
    return _lifecycle_table(rows), as_of


def to_lifecycle(entries: Any, *, ranks: int = 1, query_time: Optional[TimeLike] = None,
                 job_name: Optional[str] = None, on_invalid: str = "raise") -> Any:
    """pau's lifecycle table (DESIGN §2.2) of ml-goodput-measurement entries.

    Each ``job_start_time`` starts an attempt (and a restart ends the one before it, as
    ``failed`` with a ``failure`` of kind ``disruption`` at its last logged instant);
    ``job_end_time`` completes it; each ``step_start_time`` is a step that ends where
    the next step of its attempt starts (the last one at ``job_end_time``, else in
    flight); TPU initialization, training preparation and elastic re-initialization
    are ``init`` phases; the first data loading of an attempt is ``data_warmup``, later
    ones ``data_wait``; custom badput events are ``custom`` phases; Orbax save and
    restore statistics are ``checkpoint_save`` and ``restore`` records; an elastic wait
    ends its attempt (failure ``elastic_<type>``) and its end starts the next.
    ``accountable`` rows cover ranks ``0..ranks-1`` from the first job start to the
    last job end (or the query time). ``docs/ml-goodput.md`` has every rule.

    Parameters
    ----------
    entries : list of dict, or path
        See :func:`read_entries`.
    ranks : int
        Accelerators of the job (the library's figures are per job; pau's per rank).
    query_time : float or datetime, optional
        Required when the last attempt has no ``job_end_time``: the instant the ledger
        is computed as of (the last attempt is then running).
    job_name, on_invalid
        See :func:`read_entries`; with ``"quarantine"`` entries that contradict the
        others (a step before the job start, a step number that does not increase
        within an attempt, a checkpoint before its attempt, a restore of a step no
        earlier save holds, an end without a start) are set aside too.

    Returns
    -------
    pyarrow.Table, or Quarantined
        With the schema ``pau.engine.vocab.LIFECYCLE_SCHEMA``.
    """
    p = _parse(entries, job_name, on_invalid)
    table, _ = _lifecycle(p, ranks, query_time, on_invalid)
    return Quarantined(table, _quarantine_table(p)) if on_invalid == "quarantine" else table


def ledger_from_entries(entries: Any, *, ranks: int = 1, query_time: Optional[TimeLike] = None,
                        job_name: Optional[str] = None, on_invalid: str = "raise") -> Ledger:
    """pau's ledger (lifecycle only, ``activity`` unknown) of the entries' lifecycle.

    See :func:`to_lifecycle` for the parameters; the ledger is computed as of the last
    ``job_end_time`` or ``query_time``. Entries set aside with ``"quarantine"`` are in
    ``Ledger.lifecycle_quarantine`` (:data:`QUARANTINE_SCHEMA`).
    """
    p = _parse(entries, job_name, on_invalid)
    table, as_of = _lifecycle(p, ranks, query_time, on_invalid)
    led = _pau_ledger(None, table, as_of=as_of)
    if on_invalid == "quarantine":
        led.lifecycle_quarantine = _quarantine_table(p)
    return led


# ---------------------------------------------------------------------------
# Side by side
# ---------------------------------------------------------------------------

_EXPLAIN = {
    "kept_without_restore": (
        "productive", "rolled_back",
        "the library keeps the steps below the step number a restart resumed at (it infers what survived "
        "from repeated step numbers); pau keeps only work a logged checkpoint restore carries over"),
    "pending": (
        "productive", "pending",
        "steps of the still-running attempt after its last durable checkpoint: the library counts them now, "
        "pau holds them pending until a durable checkpoint or the job's completion keeps them"),
    "checkpoint_save": (
        "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME", "checkpoint",
        "the library subtracts each save's mean blocking time (over the workers that logged it) from "
        "productive time wherever the save was, even during work it counts as wasted; pau takes out the "
        "blocking intervals that lie in kept steps"),
    "custom_badput": (
        "CUSTOM_BADPUT_EVENTS", "custom",
        "the library subtracts only custom events wholly inside one counted step window; pau takes out every "
        "custom phase's overlap with a step"),
    "data_loading_in_step": (
        "DATA_LOADING_ASYNC", "data_wait",
        "data loading inside a step: the library counts it productive (asynchronous, overlapped); pau's "
        "data_wait phase takes precedence over the step"),
    "program_startup": (
        "PROGRAM_STARTUP", "productive",
        "the library takes the first step's excess over the average of the later steps of its run out of "
        "productive time (compilation); pau has no record of which part of the step compiled, so the whole "
        "step is productive"),
    "not_counted_by_library": (
        "OTHER", "productive",
        "steps pau keeps that the library does not count (a run restarted at step 0, a jump in step numbers)"),
}


@dataclass(frozen=True)
class Difference:
    """One named part of the gap between the library's productive time and pau's.

    ``ns`` is signed: positive when the library counts the time as productive and pau
    does not, negative the other way; ``share`` is ``ns`` over the job's time. ``library``
    is the library's bucket (or ``productive``) and ``pau`` pau's state where the time
    lies.
    """

    name: str
    ns: int
    share: float
    library: str
    pau: str
    explanation: str


@dataclass
class SideBySide:
    """The library's figures and pau's ledger of the same entries, the gap named.

    Attributes
    ----------
    library : GoodputFigures
    ledger : Ledger
        pau's ledger of :attr:`lifecycle` (lifecycle only).
    lifecycle : pyarrow.Table
    pau : dict
        ``ledger.summary()``.
    differences : tuple of Difference
        Non-zero parts of ``library productive - pau productive``, in ns.
    residual_ns : int
        ``library productive - pau productive - sum(differences)``: the float rounding of
        the library's seconds (0 when the times are whole binary fractions).
    """

    library: GoodputFigures
    ledger: Ledger
    lifecycle: pa.Table
    pau: LedgerSummary
    differences: tuple[Difference, ...]
    residual_ns: int

    def table(self) -> pa.Table:
        """The differences as a table: ``name, ns, share, library, pau, explanation``."""
        d = self.differences
        return pa.table({"name": pa.array([x.name for x in d], pa.string()),
                         "ns": pa.array([x.ns for x in d], pa.int64()),
                         "share": pa.array([x.share for x in d], pa.float64()),
                         "library": pa.array([x.library for x in d], pa.string()),
                         "pau": pa.array([x.pau for x in d], pa.string()),
                         "explanation": pa.array([x.explanation for x in d], pa.string())})

    def goodput(self) -> dict[str, Optional[float]]:
        """Both goodputs as fractions: ``{"library": ..., "pau": ...}``."""
        return {"library": self.library.goodput / 100, "pau": self.pau["goodput"]}


def side_by_side(entries: Any, *, query_time: Optional[TimeLike] = None, elastic: Optional[bool] = None,
                 job_name: Optional[str] = None) -> SideBySide:
    """The library's figures next to pau's ledger of the same entries.

    The gap between the two productive times is split into named parts: the library's
    counted step windows (:attr:`GoodputFigures.counted`) are crossed with pau's state
    intervals, each state the windows' time lies in names a part, the library's
    deductions (program startup, custom events, checkpoint saves) are set against
    them, and pau's productive time outside the windows is the last part. The parts
    and :attr:`SideBySide.residual_ns` add up exactly to the gap.

    Parameters
    ----------
    entries, query_time, elastic, job_name
        See :func:`job_goodput_details` and :func:`to_lifecycle` (one rank: the
        library's figures are per job).
    """
    p = _parse(entries, job_name, "raise")
    lib = _details(p, query_time, elastic)
    table, as_of = _lifecycle(p, 1, query_time, "raise")
    led = _pau_ledger(None, table, as_of=as_of)
    summary = led.summary()
    iv = led.intervals
    assert iv is not None
    iv = iv.filter(pa.compute.equal(iv["rank"], 0))
    i_start = np.asarray(iv["start_ns"], np.int64)
    i_end = np.asarray(iv["end_ns"], np.int64)
    i_state = iv["state"].cast(pa.string()).to_pylist()
    in_windows: dict[str, int] = {}
    for a, b in lib.counted:
        wa, wb = _ns(a), _ns(b)
        lo, hi = np.maximum(i_start, wa), np.minimum(i_end, wb)
        for j in np.flatnonzero(hi > lo):
            in_windows[i_state[j]] = in_windows.get(i_state[j], 0) + int(hi[j] - lo[j])
    ded = {k: _ns(v) for k, v in lib.deductions.items()}
    parts: dict[str, int] = {}
    for state, v in in_windows.items():
        if state == "productive":
            continue
        name = {"rolled_back": "kept_without_restore", "pending": "pending", "checkpoint": "checkpoint_save",
                "checkpoint.lost": "checkpoint_save", "checkpoint.unused": "checkpoint_save",
                "custom": "custom_badput", "eval": "custom_badput", "data_wait": "data_loading_in_step"}.get(
                    state, "in_step:" + state)
        parts[name] = parts.get(name, 0) + v
    parts["checkpoint_save"] = parts.get("checkpoint_save", 0) - ded["UNPRODUCTIVE_CHECKPOINT_SAVE_TIME"]
    parts["custom_badput"] = parts.get("custom_badput", 0) - ded["CUSTOM_BADPUT_EVENTS"]
    parts["program_startup"] = -ded["PROGRAM_STARTUP"]
    prod = summary["productive_ns"]
    parts["not_counted_by_library"] = -(prod - in_windows.get("productive", 0))
    acc = summary["accountable_ns"]
    diffs = []
    for name, v in parts.items():
        if v == 0:
            continue
        libname, pauname, text = _EXPLAIN.get(name, ("productive", name.split(":", 1)[-1],
                                                     "step time the library counts that pau's precedence gives "
                                                     "to another state"))
        diffs.append(Difference(name, v, v / acc if acc else 0.0, libname, pauname, text))
    order = list(_EXPLAIN)
    diffs.sort(key=lambda d: (order.index(d.name) if d.name in order else len(order), d.name))
    residual = _ns(lib.productive_time) - prod - sum(d.ns for d in diffs)
    return SideBySide(lib, led, table, summary, tuple(diffs), residual)
