"""pau's lifecycle (DESIGN §2.2) and ledger of ml-goodput-measurement's entries:
:func:`to_lifecycle`, :func:`ledger_from_entries`. :mod:`pau.compat.ml_goodput` is the
front (``docs/ml-goodput.md`` has every rule)."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional, Union

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


#: The paired phases' kinds in the lifecycle (data loading: ``data_warmup`` first, then ``data_wait``).
_PHASE_KIND = {"tpu_init": "init", "training_prep": "init", "custom": "custom", "elastic_reinit": "init"}


class _Rows:
    """The lifecycle rows of the checked entries, built entry by entry in order; an entry
    that contradicts the others is rejected (raised, or set aside with quarantine)."""

    def __init__(self, p: _Parsed, on_invalid: str):
        self.p, self.on_invalid = p, on_invalid
        self.rows: list[dict[str, Any]] = []
        self.attempts: list[_Attempt] = []
        self.cur: Optional[_Attempt] = None
        self.phases: dict[str, tuple[int, int, str]] = {}      # open phase -> (entry index, start ns, kind)
        self.saves: dict[int, list[dict[str, Any]]] = {}       # step -> its save rows
        self.data_loads: dict[int, int] = {}                   # attempt -> data loadings seen
        self.restored: list[tuple[dict[str, Any], int]] = []

    def bad(self, e: _Entry, key: str, reason: str, fix: str) -> None:
        self.p.reject(self.on_invalid, e.index, key, reason, fix, e.payload)

    def add(self, record: str, start: int, end: Optional[int] = None, **kw: Any) -> dict[str, Any]:
        cur = self.cur
        assert cur is not None
        row = {"record": record, "attempt": cur.id, "rank": -1, "start_ns": start, "end_ns": end, **kw}
        self.rows.append(row)
        cur.last = max(cur.last, start, end if end is not None else start, kw.get("block_end_ns") or start)
        return row

    def close_phases(self, at: int) -> None:
        # A phase still open when its attempt ends ends there (like a step in flight).
        for _, s, kind in list(self.phases.values()):
            self.add("phase", s, max(s, at), kind=kind)
        self.phases.clear()

    def end_attempt(self, at: int, cause: Optional[str]) -> None:
        cur = self.cur
        assert cur is not None
        self.close_phases(max(at, cur.last))
        cur.end = max(at, cur.last)
        cur.kind, cur.cause = "failed", cause

    def start_attempt(self, t: int) -> None:
        self.cur = _Attempt(len(self.attempts), t, last=t)
        self.attempts.append(self.cur)

    def entry(self, e: _Entry) -> None:
        """Read one entry: its kind's step, after the checks every kind shares."""
        k, cur = e.kind, self.cur
        if k == "job_start":
            self.job_start(e)
        elif k == "elastic_slice_counts":
            pass    # slice counts are telemetry, not time of a state (docs/ml-goodput.md)
        elif cur is None:
            self.bad(e, _KEY_OF[k], "comes before the first job_start_time entry",
                     "include the job's job_start_time entry before its other entries")
        elif k == "elastic_wait_start":
            self.wait_start(e, cur)
        elif k == "elastic_wait_end":
            self.wait_end(e, cur)
        elif cur.end is not None and cur.kind == "completed":
            self.bad(e, _KEY_OF[k], "comes after the job_end_time entry of its attempt",
                     "log a job_start_time before the entries of a new run")
        elif cur.end is not None:
            self.bad(e, _KEY_OF[k], "comes during an elastic wait (between its start and end)",
                     "log the wait's end before the job resumes")
        elif k == "job_end":
            self.job_end(e, cur)
        elif k == "step":
            self.step(e, cur)
        elif k in ("save", "restore", "emergency_restore"):
            self.checkpoint(e, cur)
        else:
            self.phase(e, cur)

    def job_start(self, e: _Entry) -> None:
        t, cur = _ns(e.payload[_JOB_START]), self.cur
        if cur is not None:
            if cur.end is None and t < cur.last:
                self.bad(e, _JOB_START, "is earlier than records of the attempt before it",
                         "log the restart's job_start_time after the last entry of the attempt it ends")
                return
            if cur.end is None:
                self.end_attempt(cur.last, "disruption")
            elif t < cur.end:
                self.bad(e, _JOB_START, "is earlier than the end of the attempt before it",
                         "log the restart's job_start_time after the job_end_time it follows")
                return
        self.start_attempt(t)

    def wait_start(self, e: _Entry, cur: _Attempt) -> None:
        if cur.end is not None:
            self.bad(e, _WAIT_START, "follows the end of its attempt", "log elastic waits inside the job")
            return
        t = _ns(e.payload[_WAIT_START])
        if t < cur.last:
            self.bad(e, _WAIT_START, "is earlier than earlier records of its attempt",
                     "log entries in time order within an attempt")
            return
        self.end_attempt(t, "elastic_" + str(e.payload.get(_WAIT_TYPE, "unknown")).lower())

    def wait_end(self, e: _Entry, cur: _Attempt) -> None:
        t = _ns(e.payload[_WAIT_END])
        if cur.end is None or cur.cause is None or not cur.cause.startswith("elastic_"):
            self.bad(e, _WAIT_END, "ends an elastic wait that did not start", "log elastic_wait_start_time first")
        elif t < cur.end:
            self.bad(e, _WAIT_END, "is earlier than the wait's start", "log the wait's times in order")
        else:
            self.start_attempt(t)

    def job_end(self, e: _Entry, cur: _Attempt) -> None:
        t = _ns(e.payload[_JOB_END])
        if t < cur.last:
            self.bad(e, _JOB_END, "is earlier than records of its attempt", "log job_end_time last")
            return
        self.close_phases(t)
        cur.end, cur.kind, cur.last = t, "completed", t

    def step(self, e: _Entry, cur: _Attempt) -> None:
        t, step = _ns(e.payload[_STEP_START]), int(e.payload[_STEP_COUNT])
        if cur.steps and step <= cur.steps[-1][1]:
            self.bad(e, _STEP_COUNT, f"is {step}, not above the step before it ({cur.steps[-1][1]}) in the same "
                     "attempt (the library reads a restart here; pau needs it logged)",
                     "log a job_start_time entry where the job restarted")
        elif t < cur.last:
            self.bad(e, _STEP_START, "is earlier than records before it in its attempt",
                     "log entries in time order within an attempt")
        else:
            cur.steps.append((e.index, step, t))
            cur.last = max(cur.last, t)

    def checkpoint(self, e: _Entry, cur: _Attempt) -> None:
        k, q = e.kind, e.payload
        skey = _SAVE_START if k == "save" else _RESTORE_START
        dkey = _SAVE_DURATION if k == "save" else _RESTORE_DURATION
        if q.get(skey) is None:
            self.bad(e, skey, "is missing: pau places a checkpoint by its start",
                     f"log the checkpoint statistics with {skey}")
            return
        s = _ns(q[skey])
        if s < cur.start:
            self.bad(e, skey, "is before the job_start_time of its attempt",
                     "check the clock of the checkpoint statistics")
            return
        end = s + _ns(q[dkey])
        step = int(q["step"])
        if k == "save":
            row = self.add("checkpoint_save", s, None, step=step, block_end_ns=end,
                           durable_ns=end if q.get("synchronous") is True else None, ok=True)
            self.saves.setdefault(step, []).append(row)
            return
        earlier = [r for r in self.saves.get(step, []) if r["attempt"] != cur.id and r["start_ns"] < s]
        if not earlier:
            self.bad(e, "step", f"restores step {step}, which no save entry of an earlier attempt holds",
                     "include the entries of the run that saved it")
            return
        self.add("restore", s, end, step=step, ok=True)
        self.restored.append((earlier[-1], s))

    def phase(self, e: _Entry, cur: _Attempt) -> None:
        """One end of a paired phase (TPU initialization, training preparation, data
        loading, a custom badput event, elastic re-initialization)."""
        k, q = e.kind, e.payload
        base, edge = k.rsplit("_", 1)
        t = _ns(q[_KEY_OF[k]])
        if base == "data_loading":
            kind = "data_warmup" if self.data_loads.get(cur.id, 0) == 0 else "data_wait"
        else:
            kind = _PHASE_KIND[base]
        tag = base + ("/" + q[_CUSTOM_TYPE].upper() if base == "custom" else "")
        if edge == "start":
            if t < cur.start:
                self.bad(e, _KEY_OF[k], "is before the job_start_time of its attempt",
                         "log entries after the job_start_time of their run")
            elif tag in self.phases:
                self.bad(e, _KEY_OF[k], f"opens a {base} phase while one is open",
                         f"log the {base} end before the next start")
            else:
                self.phases[tag] = (e.index, t, kind)
                cur.last = max(cur.last, t)
            return
        if tag not in self.phases:
            self.bad(e, _KEY_OF[k], f"ends a {base} phase that did not start in its attempt",
                     f"log the {base} start first")
            return
        opened = self.phases.pop(tag)
        s, kind = opened[1], opened[2]
        if t < s:
            self.bad(e, _KEY_OF[k], f"is before the {base} phase's start", "log the phase's times in order")
            self.phases[tag] = opened
            return
        self.add("phase", s, t, kind=kind)
        if base == "data_loading":
            self.data_loads[cur.id] = self.data_loads.get(cur.id, 0) + 1

    def stop(self, as_of: Optional[int]) -> int:
        """The ledger's end: the job's end, or ``as_of`` for a job still running (its open
        phases left open)."""
        if not self.attempts:
            raise PauError(f"{self.p.name}: no job_start_time entry. Fix: include the job's job_start_time entry")
        cur = self.cur
        assert cur is not None
        if cur.end is None:
            if as_of is None:
                raise OptionError(f"{self.p.name}: the job has no job_end_time entry (it is still running, or its end "
                                  "was not logged). Fix: pass query_time= (the instant the ledger is computed as of)")
            if as_of < cur.last:
                raise OptionError(f"{self.p.name}: query_time is before the job's last entry. Fix: pass a later "
                                  "query_time")
            for _, s, kind in self.phases.values():
                self.rows.append({"record": "phase", "attempt": cur.id, "rank": -1, "start_ns": s, "end_ns": None,
                                  "kind": kind})
            return as_of
        if cur.kind == "completed":
            if as_of is not None:
                raise OptionError(f"{self.p.name}: query_time given for a job that ended (its job_end_time sets the "
                                  "ledger's time). Fix: drop query_time")
            return cur.end
        return max(cur.end, as_of or cur.end)

    def finish(self, ranks: int, stop: int) -> list[dict[str, Any]]:
        """The rows with the saves' durability, the steps, attempts, failures and the
        accountable rows added."""
        # Durability: a synchronous save is durable when it stops blocking; an asynchronous
        # one when a later restore of its step starts (the log has no other evidence).
        for row, s in self.restored:
            if row["durable_ns"] is None:
                row["durable_ns"] = max(row["block_end_ns"], s)
        rows = self.rows
        for a in self.attempts:
            for j, (_, step, t) in enumerate(a.steps):
                nxt = a.steps[j + 1][2] if j + 1 < len(a.steps) else (a.end if a.kind == "completed" else None)
                rows.append({"record": "step", "attempt": a.id, "rank": -1, "start_ns": t, "end_ns": nxt, "step": step})
            rows.append({"record": "attempt", "attempt": a.id, "rank": -1, "start_ns": a.start,
                         "end_ns": a.end if a.end is not None else None, "kind": a.kind})
            if a.kind == "failed":
                assert a.end is not None
                rows.append({"record": "failure", "attempt": a.id, "rank": -1, "start_ns": a.end, "kind": a.cause})
        for r in range(ranks):
            rows.append({"record": "accountable", "rank": r, "start_ns": self.attempts[0].start, "end_ns": stop})
        return rows


def _records(p: _Parsed, *, ranks: int, as_of: Optional[int], on_invalid: str) -> tuple[list[dict[str, Any]], int]:
    """The lifecycle rows and the as_of instant, from the checked entries in order."""
    b = _Rows(p, on_invalid)
    for e in p.entries:
        b.entry(e)
    stop = b.stop(as_of)
    return b.finish(ranks, stop), stop


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
                 job_name: Optional[str] = None, on_invalid: str = "raise") -> Union[pa.Table, Quarantined]:
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
