"""pau's lifecycle (DESIGN §2.2) and ledger of ml-goodput-measurement's entries:
:func:`to_lifecycle`, :func:`ledger_from_entries`. :mod:`pau.compat.ml_goodput` is the
front (``docs/ml-goodput.md`` has every rule)."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional

import pyarrow as pa

from pau.compat.mlg_entries import (
    _CUSTOM_TYPE, _JOB_END, _JOB_START, _KEY_OF, _RESTORE_DURATION, _RESTORE_START, _SAVE_DURATION, _SAVE_START,
    _STEP_COUNT, _STEP_START, _WAIT_END, _WAIT_START, _WAIT_TYPE, TimeLike, _Entry, _parse, _Parsed,
    _quarantine_table,
)
from pau.compat.mlg_library import _query_seconds
from pau.engine.api import ledger as _pau_ledger
from pau.engine.ledger import Ledger
from pau.engine.types import Quarantined
from pau.engine.vocab import LIFECYCLE_SCHEMA
from pau.errors import OptionError, PauError


__all__ = ["ledger_from_entries", "to_lifecycle"]

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
