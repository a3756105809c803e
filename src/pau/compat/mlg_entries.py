"""ml-goodput-measurement's log entries read and checked (:func:`read_entries`): the
payload keys its recorders write, the kinds of entry, and the quarantine of the ones pau
cannot use. :mod:`pau.compat.ml_goodput` is the front (``docs/ml-goodput.md``)."""

from __future__ import annotations

import datetime
import json
import math
import os
import pathlib
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Union

import pyarrow as pa

from pau.engine.types import Quarantined, check_on_invalid, quarantine_schema, quarantine_table
from pau.errors import InvalidRowError, NoInputError, PauError

__all__ = ["BADPUT_TYPES", "ELASTIC_BADPUT_TYPES", "QUARANTINE_SCHEMA", "Breakdown", "TimeLike", "read_entries"]

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


def read_entries(source: Any, *, job_name: Optional[str] = None,
                 on_invalid: str = "raise") -> Union[list[dict[str, Any]], Quarantined]:
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
