"""Megatron-LM training logs (rank 0's / the last rank's stdout) -> a lifecycle table.

The lines read (as ``megatron/training/training.py`` and ``checkpointing.py`` print
them; a launcher's prefix such as ``0: `` or ``[default0]:`` before them is allowed)::

    [after megatron is initialized] datetime: 2026-03-02 10:00:05.120344
     [2026-03-02 10:01:00.512311] iteration       10/     100 | consumed samples:          320 | elapsed time per iteration (ms): 61.5 | ... | number of skipped iterations:   0 | number of nan iterations:   0 |
    [2026-03-02 10:01:01.000000] saving checkpoint at iteration      50 to /ckpt in torch_dist format
      [2026-03-02 10:01:01.250000] scheduled an async checkpoint save at iteration      50 to /ckpt
      [2026-03-02 10:01:04.000000] successfully saved checkpoint from iteration      50 to /ckpt [ t 1/1, ... ]
     loading distributed checkpoint from /ckpt at iteration 50
      successfully loaded checkpoint from /ckpt [ t 1/1, ... ] at iteration 50
     validation loss at iteration 100 | lm loss value: ... | lm loss PPL: ... |
    [after training is done] datetime: 2026-03-02 10:09:00.000000

How they become records (``docs/fleet.md``, "Megatron-LM logs"):

* **Attempts.** A process's run is an attempt: a new one begins at a set-up line
  (``[after in-process setup ...]``, ``[after in-job setup ...]``, ``[after megatron is
  initialized]``) or a ``loading ... checkpoint`` line once the current attempt has trained,
  saved or evaluated. An iteration that does not follow the one before is a bad line. It starts at
  its first timestamp and ends at its last; it ``completed`` with ``[after training is
  done]``, was ``preempted`` with ``exiting program after receiving SIGTERM``, else it
  ``failed`` (an earlier attempt: a warning says its end is its last timestamped line,
  the failure itself was not logged) or, the last one, has no end (a warning: the log
  stops; the ledger counts it running).
* **Steps.** A training line at iteration N logs the mean time of the iterations since
  the line before (``elapsed time per iteration``, a timer that is stopped during
  evaluation and checkpoint saves). The iterations ``N-L+1..N`` (``L`` from the previous
  line's iteration, or the restored iteration) get the window ``[t - L·e, t)`` before
  the line's timestamp ``t``, split evenly to the ns (exact: ``e`` has 0.1 ms
  resolution). A window that would begin before the previous record ended begins where
  it ended instead, and a warning counts such windows.
* **Checkpoints.** ``saving checkpoint`` starts a save; the blocking part ends at
  ``scheduled an async checkpoint save`` (async) or at ``successfully saved`` (sync);
  ``successfully saved`` makes it durable. A save with no such line is never durable.
* **Restores.** Megatron does not time the load: the restore spans from the last
  timestamp before ``loading ... checkpoint`` to the first after ``successfully loaded``
  (it includes building the model, and says so in the warnings); with no timestamp before
  it, it has no duration and sits where the set-up ends (the lineage still runs through it).
* **Evaluation.** ``validation loss at iteration N`` is an ``eval`` phase from the end of
  step N to the start of the next record.
* **Set-up.** From the attempt's start to its first step, outside the restore, is an
  ``init`` phase.

Ranks: attempt rows name every rank ``0..world-1`` (``world`` from ``using world size:
W`` or ``ranks=``); the other records use ``rank = -1``. Times are the host's local time
without a zone (``tz``; not given: UTC, with a warning).
"""

from __future__ import annotations

import os
import re
from fractions import Fraction
from typing import Any, Optional

import pyarrow as pa

from pau.engine.types import RunWarning, check_on_invalid, quarantine_table
from pau.engine.vocab import LIFECYCLE_SCHEMA
from pau.errors import InvalidRowError, NoInputError, OptionError, SchemaError
from pau.readers.scheduler import (
    JOB_LIFECYCLE_SCHEMA, JOBS_QUARANTINE_SCHEMA, MAX_ACCELERATORS, _BadRecord, Records, check_rows, local_time,
    zone,
)

__all__ = ["read_megatron", "MEGATRON_MARKERS"]

_TS = r"\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)\]"
_ITER = re.compile(_TS + r" iteration\s+(\d+)/\s*(\d+) \|.*?elapsed time per iteration \(ms\): (\d+(?:\.\d+)?) \|")
_ITER_NOTS = re.compile(r"(?:^|\s)iteration\s+(\d+)/\s*(\d+) \| consumed samples:")
_SKIP = re.compile(r"number of skipped iterations:\s*(\d+) \| number of nan iterations:\s*(\d+) \|")
_SAVE = re.compile(_TS + r" saving checkpoint at iteration\s+(\d+) to ")
_ASYNC = re.compile(_TS + r" scheduled an async checkpoint save at iteration\s+(\d+) to ")
_SAVED = re.compile(_TS + r" successfully saved checkpoint from iteration\s+(\d+) to ")
_LOAD = re.compile(r" loading (?:distributed )?checkpoint from \S+ at iteration (\d+)")
_LOADED = re.compile(r" successfully loaded checkpoint from \S+ .*at iteration (\d+)")
_DATETIME = re.compile(r"\[([^\]]+)\] datetime: (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)")
_EVAL = re.compile(r" validation\S* loss at iteration (\d+)\b")
_WORLD = re.compile(r"using world size: (\d+)")
_SIGTERM = "exiting program after receiving SIGTERM"
_SETUP = ("after in-process setup", "after in-job setup", "after megatron is initialized")

#: A line with any of these is a Megatron-LM training log (format detection).
MEGATRON_MARKERS = ("elapsed time per iteration (ms):", "] datetime: ", "saving checkpoint at iteration")


class _Attempt:
    def __init__(self, k: int):
        self.k = k
        self.first: Optional[int] = None
        self.last: Optional[int] = None
        self.trained = False
        self.end_kind: Optional[str] = None
        self.iters: list[tuple[int, int, Fraction, int]] = []  # (lineno, iteration, ms, t)
        self.saves: dict[int, list[Any]] = {}  # step -> [start, block_end, durable, lineno]
        self.load: Optional[list[Any]] = None  # [step, start, end, lineno_load]
        self.evals: list[tuple[int, int]] = []  # (step, lineno)
        self.pending_load_end = False

    def saw(self, t: int) -> None:
        if self.first is None or t < self.first:
            self.first = t
        if self.last is None or t > self.last:
            self.last = t
        if self.pending_load_end and self.load is not None:
            self.load[2] = t
            self.pending_load_end = False


def read_megatron(path: str | os.PathLike[str], *, tz: Optional[str] = None, ranks: Optional[int] = None,
                  job: Optional[str] = None, on_invalid: str = "raise") -> Records:
    """Read a Megatron-LM training log (one file; several runs of the job in order are
    several attempts).

    Parameters
    ----------
    path : str or os.PathLike
    tz : str, optional
        The zone of the log's timestamps (local time, no zone). Not given: UTC, with a warning.
    ranks : int, optional
        The job's world size, when the log has no ``using world size:`` line (else 1,
        with a warning). Given and different from the log's: an error.
    job : str, optional
        The scheduler's job id: adds the ``job`` column (:data:`JOB_LIFECYCLE_SCHEMA`).
    on_invalid : {"raise", "quarantine"}
        Quarantine sets aside lines that cannot be read (e.g. a garbled timestamp).

    Returns
    -------
    Records (``lifecycle`` set, ``jobs`` None; ``quarantine`` the lines set aside:
    ``source_file, location, reason, job, row``).
    """
    check_on_invalid(on_invalid)
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise NoInputError(f"read_megatron: no file at {p!r}. Fix: give the training log Megatron-LM printed")
    if ranks is not None and (isinstance(ranks, bool) or not isinstance(ranks, int) or ranks <= 0):
        raise OptionError(f"read_megatron: ranks = {ranks!r}. Fix: give the job's world size, a positive int")
    table = f"megatron {p}"
    warnings: list[RunWarning] = []
    zi, zname = zone(tz, "megatron", "Megatron prints the host's local time.", warnings)
    with open(p, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    log = _Log(zi)
    bad: list[tuple[int, _BadRecord]] = []
    for n, ln in enumerate(lines, start=1):
        try:
            log.line(n, ln)
        except _BadRecord as b:
            bad.append((n, b))
    if bad and on_invalid == "raise":
        n0, b0 = bad[0]
        raise InvalidRowError(table, b0.column, n0 - 1, f"{b0.reason} (line {n0})", b0.fix, count=len(bad))
    attempts = [a for a in log.attempts if a.first is not None]
    if not attempts:
        raise SchemaError(table, "(file)", "has no timestamped Megatron-LM line",
                          "give a Megatron-LM training log (with its [YYYY-MM-DD HH:MM:SS] timestamps)")
    world = _world_size(log.world, ranks, warnings)
    n_steps = sum(max(a.iters[-1][1] - (a.load[0] if a.load is not None else 0), 0) for a in attempts if a.iters)
    check_rows(world * len(attempts) + n_steps, os.path.getsize(p), table, "iteration",
               "one attempt row per rank, one step row per iteration")
    lt = _lifecycle(attempts, world, job, warnings, log.skipped, log.nans)
    lt = lt.replace_schema_metadata({b"pau.megatron.tz": zname.encode(), b"pau.source": p.encode()})
    return Records(None, lt, warnings, _quarantine(p, bad, job))


class _Log:
    """The attempts of a log as its lines are read, one at a time (a line that cannot be
    read raises :class:`_BadRecord`)."""

    def __init__(self, zi: Any):
        self.zi = zi
        self.attempts = [_Attempt(0)]
        self.world: Optional[int] = None
        self.skipped = self.nans = 0

    def new_attempt(self) -> _Attempt:
        a = _Attempt(len(self.attempts))
        self.attempts.append(a)
        return a

    def line(self, n: int, ln: str) -> None:
        a = self.attempts[-1]
        m = _WORLD.search(ln)
        if m:
            self.world = int(m.group(1))
            if not 0 < self.world <= MAX_ACCELERATORS:
                raise _BadRecord("world size", f"{self.world} is not a world size", f"give 1 to {MAX_ACCELERATORS} ranks")
            return
        m = _DATETIME.search(ln)
        if m:
            label, t = m.group(1), local_time(m.group(2), "datetime", self.zi)
            if label.startswith(_SETUP) and a.trained:
                a = self.new_attempt()
            a.saw(t)
            if label == "after training is done":
                a.end_kind = "completed"
            return
        if _SIGTERM in ln:
            a.end_kind = "preempted"
            return
        m = _ITER.search(ln)
        if m:
            self.iteration(a, n, m, ln)
            return
        if _ITER_NOTS.search(ln):
            raise _BadRecord("iteration", "has no timestamp (Megatron-LM before its log lines carried one)",
                      "use a Megatron-LM whose training lines begin with [YYYY-MM-DD HH:MM:SS]")
        if not self.checkpoint(a, n, ln):
            self.load_or_eval(a, n, ln)

    def iteration(self, a: _Attempt, n: int, m: re.Match[str], ln: str) -> None:
        t, it = local_time(m.group(1), "iteration", self.zi), _step(m.group(2))
        before = a.iters[-1][1] if a.iters else (a.load[0] if a.load is not None else 0)
        if it <= before:
            raise _BadRecord("iteration", f"iteration {it} follows iteration {before} in the same attempt",
                      "give the attempts' logs in order (a restarted process prints its set-up or load lines first)")
        a.saw(t)
        a.trained = True
        a.iters.append((n, it, Fraction(m.group(4)), t))
        s = _SKIP.search(ln)
        if s:
            self.skipped += int(s.group(1))
            self.nans += int(s.group(2))

    def checkpoint(self, a: _Attempt, n: int, ln: str) -> bool:
        """A save's start, its async scheduling or its end; False when the line is none."""
        for rx, slot in ((_SAVE, 0), (_ASYNC, 1), (_SAVED, 2)):
            m = rx.search(ln)
            if not m:
                continue
            t, step = local_time(m.group(1), "checkpoint", self.zi), _step(m.group(2))
            a.saw(t)
            a.trained = True
            if slot == 0:
                a.saves[step] = [t, None, None, n]
            elif step not in a.saves:
                raise _BadRecord("checkpoint", f"says the save of iteration {step} ended, but its start is not in this attempt",
                          "give the whole log (the 'saving checkpoint at iteration' line too)")
            else:
                sv = a.saves[step]
                if slot == 1:
                    sv[1] = t
                else:
                    sv[2] = t
                    if sv[1] is None:
                        sv[1] = t
            return True
        return False

    def load_or_eval(self, a: _Attempt, n: int, ln: str) -> None:
        m = _LOAD.search(ln)
        if m:
            if a.trained:  # a load after training: the process started again
                a = self.new_attempt()
            a.load = [_step(m.group(1)), a.last, None, n]
            return
        m = _LOADED.search(ln)
        if m and a.load is not None:
            a.pending_load_end = True
            return
        m = _EVAL.search(ln)
        if m:
            a.evals.append((_step(m.group(1)), n))
            a.trained = True


def _world_size(world: Optional[int], ranks: Optional[int], warnings: list[RunWarning]) -> int:
    """The log's world size, else ``ranks``, else 1 with a warning; the two differing is an error."""
    if world is not None and ranks is not None and world != ranks:
        raise OptionError(f"read_megatron: ranks = {ranks} but the log says world size {world}. Fix: leave ranks out")
    if world is not None:
        return world
    if ranks is not None:
        return ranks
    warnings.append(RunWarning("megatron.ranks_assumed", "megatron: the log names no world size and ranks= was "
                               "not given: one rank. Pass ranks= (the job's world size)"))
    return 1


def _lifecycle(attempts: list[_Attempt], world: int, job: Optional[str], warnings: list[RunWarning],
               skipped: int, nans: int) -> pa.Table:
    """The lifecycle table of the attempts (with a ``job`` column when ``job`` is given),
    and the warnings of what the log does not say."""
    rows: list[tuple[Any, ...]] = []
    clipped = 0
    for a in attempts:
        clipped += _records(a, a is attempts[-1], world, rows, warnings)
    if clipped:
        warnings.append(RunWarning("megatron.windows_clipped",
                                   f"megatron: {clipped} step windows (logged mean × iterations) began before the record "
                                   "before them ended and were begun where it ended"))
    if skipped or nans:
        warnings.append(RunWarning("megatron.skipped_iterations",
                                   f"megatron: {skipped} iterations skipped their update and {nans} had NaN losses "
                                   "(counted as steps: they ran)"))
    if any(a.load is not None for a in attempts):
        warnings.append(RunWarning("megatron.restore_bounds", "megatron: the log does not time checkpoint loads: each "
                                   "restore spans from the timestamp before its 'loading' line to the one after its "
                                   "'successfully loaded' line (model building included)"))
    schema = LIFECYCLE_SCHEMA if job is None else JOB_LIFECYCLE_SCHEMA
    rows.sort(key=lambda r: (r[3], r[0] != "attempt"))
    cols: list[Any] = list(zip(*rows)) if rows else [[] for _ in LIFECYCLE_SCHEMA]
    arrays = [pa.array(list(c), f.type) for c, f in zip(cols, LIFECYCLE_SCHEMA)]
    if job is not None:
        arrays.append(pa.array([job] * len(rows), pa.string()))
    return pa.table(arrays, schema=schema)


def _step(text: str) -> int:
    v = int(text)
    if v > 2**62:
        raise _BadRecord("iteration", f"{text[:40]} is not an iteration number", "give the log as Megatron-LM printed it")
    return v


def _quarantine(p: str, bad: list[Any], job: Optional[str]) -> pa.Table:
    return quarantine_table(JOBS_QUARANTINE_SCHEMA, p, [f"line {n}" for n, _ in bad],
                            [f"{b.column}: {b.reason}. Fix: {b.fix}" for _, b in bad],
                            job=[job] * len(bad), row=[n - 1 for n, _ in bad])


def _records(a: _Attempt, last: bool, world: int, rows: list[Any], warnings: list[RunWarning]) -> int:
    """An attempt's lifecycle rows (added to ``rows``); the count of step windows clipped."""
    k = a.k
    if a.first is None or a.last is None:  # attempts without a timestamp were dropped before
        return 0
    first: int = a.first
    end, kind = _attempt_end(a, last, warnings)
    for r in range(world):
        rows.append(("attempt", k, r, first, end, None, None, None, None, kind, None))
    events, first_step, clipped = _step_rows(a, first, rows)
    for step, sv in a.saves.items():
        block = sv[1] if sv[1] is not None else None
        rows.append(("checkpoint_save", k, -1, sv[0], None, step, block, sv[2], None, None, None))
        events.append((sv[0], block if block is not None else sv[0], "save", step))
    events.sort()
    _eval_rows(a, events, rows)
    init_end = first_step if first_step is not None else (min(e[0] for e in events) if events else a.last)
    _init_rows(a, first, init_end, rows, warnings)
    return clipped


def _attempt_end(a: _Attempt, last: bool, warnings: list[RunWarning]) -> tuple[Optional[int], Optional[str]]:
    """The attempt's end and how it ended: open (running) when the log's last attempt has
    no logged end, failed at its last line when another has none."""
    end, kind = a.last, a.end_kind
    if kind is None and last:
        end = None
        warnings.append(RunWarning("megatron.open_attempt",
                                   f"megatron: attempt {a.k} has no end in the log (no 'after training is done' line): "
                                   "it is left open, counted as running"))
    elif kind is None:
        kind = "failed"
        warnings.append(RunWarning("megatron.attempt_end_unlogged",
                                   f"megatron: attempt {a.k} stopped without a logged end; it ends at its last "
                                   "timestamped line and is counted failed"))
    return end, kind


def _step_rows(a: _Attempt, first: int, rows: list[Any]) -> tuple[list[tuple[int, int, str, int]], Optional[int], int]:
    """A step row per iteration (a logged line's window, its mean × iterations, split
    evenly); the timed records for the evals, the first step's start, the windows clipped."""
    prev_end = first
    prev_iter = a.load[0] if a.load is not None else 0
    events: list[tuple[int, int, str, int]] = []  # (start, end, what, step) of timed records, for evals
    clipped = 0
    first_step = None
    saves = sorted(a.saves.items(), key=lambda kv: kv[1][0])
    si = 0
    for _, it, ms, t in a.iters:
        while si < len(saves) and saves[si][1][0] <= t:
            sv = saves[si][1]
            prev_end = max(prev_end, sv[1] if sv[1] is not None else sv[0])
            si += 1
        L = it - prev_iter  # > 0: checked as the lines were read
        start = t - round(ms * L * 1_000_000)
        if start < prev_end:
            start = prev_end
            clipped += 1
        span = t - start
        for j in range(L):
            s0 = start + span * j // L
            s1 = start + span * (j + 1) // L
            rows.append(("step", a.k, -1, s0, s1, prev_iter + j + 1, None, None, None, None, None))
        events.append((start, t, "step", it))
        first_step = start if first_step is None else first_step
        prev_end, prev_iter = t, it
    return events, first_step, clipped


def _eval_rows(a: _Attempt, events: list[tuple[int, int, str, int]], rows: list[Any]) -> None:
    """An eval phase from the end of its step to the next timed record (or the attempt's last line)."""
    for step, _ in a.evals:
        after = [e for e in events if e[2] == "step" and e[3] == step]
        if not after:
            continue
        s = after[0][1]
        nxt = [e[0] for e in events if e[0] >= s and not (e[2] == "step" and e[3] == step)]
        e_end = min(nxt) if nxt else a.last
        if e_end is not None and e_end > s:
            rows.append(("phase", a.k, -1, s, e_end, None, None, None, None, "eval", None))


def _init_rows(a: _Attempt, first: int, init_end: Optional[int], rows: list[Any], warnings: list[RunWarning]) -> None:
    """The restore (timed by the lines around it, else with no duration) and the set-up
    (``init``) before the first step, around the restore."""
    k = a.k
    if a.load is not None and a.load[1] is not None and a.load[2] is not None:
        rs, re_ = int(a.load[1]), int(a.load[2])
        rows.append(("restore", k, -1, rs, re_, a.load[0], None, None, None, None, None))
        if rs > first:
            rows.append(("phase", k, -1, first, rs, None, None, None, None, "init", None))
        if init_end is not None and init_end > re_:
            rows.append(("phase", k, -1, re_, init_end, None, None, None, None, "init", None))
        return
    if a.load is not None:
        at = init_end if init_end is not None else first
        rows.append(("restore", k, -1, at, at, a.load[0], None, None, None, None, None))
        warnings.append(RunWarning("megatron.restore_untimed",
                                   f"megatron: the restore of iteration {a.load[0]} in attempt {k} (line {a.load[3]}) "
                                   "has no timestamped line before or after it: it is recorded with no duration "
                                   "where the set-up ends (its time counts as set-up)"))
    if init_end is not None and init_end > first:
        rows.append(("phase", k, -1, first, init_end, None, None, None, None, "init", None))
