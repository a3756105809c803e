"""What failures cost after they happened, over one ledger: failure rate, time to
recover, restart loops and waste as capacity (:func:`recovery`), and lost progress
against a contracted bound (:func:`protection`).

Every figure is computed from the ledger's own cells, its state intervals and its
attribution (attempts, failures, checkpoints), and from the lifecycle table's step and
restore records. Ratios are exact :class:`fractions.Fraction` in the results and floats
in their ``summary()`` (JSON-able); a ratio whose denominator is zero is None. Formulas
and how each figure relates to pau's goodput: ``docs/outcome.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional, Union, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine._input import _column, as_table, int_values, time_values
from pau.engine._lifecycle import NULL, Attribution
from pau.engine.api import ledger as _ledger_of
from pau.engine.ledger import NS_PER_HOUR, Ledger, exact_sums
from pau.engine.types import ProtectionSummary, RecoverySummary
from pau.errors import OptionError, PauError
from pau.figures._common import _NS_PER_S, _count, _f, _fd, _frac, _one_job, _positive

__all__ = ["Recovery", "recovery", "Protection", "protection"]

Number = Union[int, float, Fraction]


def _intervals(led: Ledger, what: str) -> pa.Table:
    iv = led.intervals
    if iv is None:
        raise PauError(f"{what}: the ledger has no lifecycle. Fix: build it with a lifecycle table")
    return iv


def _att(led: Ledger, what: str) -> Attribution:
    att: Attribution | None = led._att  # the attribution behind the ledger's figures (one path for them all)
    if att is None:
        raise PauError(f"{what}: the ledger has no lifecycle. Fix: build it with a lifecycle table "
                       "(pau.core.ledger(events, lifecycle))")
    return att


# ---------------------------------------------------------------------------
# recovery: failure rate, time to recover, restart loops


@dataclass
class Recovery:
    """What :func:`recovery` returns.

    Attributes
    ----------
    accountable_ns : int
    failures : int
        The ledger's ``failures``.
    failures_per_1000_accelerator_hours : Fraction or None
    by_cause : dict
        ``cause -> {"failures": int, "per_1000_accelerator_hours": Fraction}``.
    per_failure : list of dict
        One per failure, in time order: ``attempt, time_ns, cause, next_attempt,
        first_step_ns, to_first_step_ns, progress_step, recovered_ns,
        to_progress_ns, lost_ns`` (see :func:`recovery`).
    attempts : list of dict
        One per attempt, in start order: ``attempt, start_ns, end_ns, end, running,
        checkpoint_before, checkpoint_after, moved, restart_loop, ns``.
    restart_loops : list of dict
        Runs of consecutive restart-loop attempts: ``first_attempt, last_attempt,
        attempts, ns``.
    badput_ns, wall_ns : int
    waste_equivalent_accelerators : Fraction or None
        ``badput_ns / wall_ns``: the accelerators that, idle for the whole wall time,
        would waste as much.

    ``summary()`` holds, besides the figures, ``per_failure_ns``: ``[time_ns,
    to_progress_ns]`` per failure in time order (None: not recovered), the list its
    ``mean_to_progress_s`` and ``not_recovered`` are computed from.
    """

    accountable_ns: int
    failures: int
    failures_per_1000_accelerator_hours: Optional[Fraction]
    by_cause: dict[str, Any]
    per_failure: list[Any]
    attempts: list[Any]
    restart_loops: list[Any]
    badput_ns: int
    wall_ns: int
    waste_equivalent_accelerators: Optional[Fraction]

    def table(self) -> pa.Table:
        """:attr:`per_failure` as a table."""
        cols = ("attempt", "time_ns", "cause", "next_attempt", "first_step_ns", "to_first_step_ns", "progress_step",
                "recovered_ns", "to_progress_ns", "lost_ns")
        types = (pa.int32(), pa.int64(), pa.string(), pa.int32(), pa.int64(), pa.int64(), pa.int64(), pa.int64(),
                 pa.int64(), pa.int64())
        return pa.table({c: pa.array([f[c] for f in self.per_failure], ty) for c, ty in zip(cols, types)})

    def summary(self) -> RecoverySummary:
        ttr = [f["to_first_step_ns"] for f in self.per_failure if f["to_first_step_ns"] is not None]
        # each failure's instant and time to recover progress (None: not recovered): the
        # mean and not_recovered below are of this list (the fleet's runs table keeps it)
        pairs = [[f["time_ns"], f["to_progress_ns"]] for f in self.per_failure]
        ttp = [d for _, d in pairs if d is not None]
        return {"failures": self.failures, "accountable_ns": self.accountable_ns,
                "failures_per_1000_accelerator_hours": _float(self.failures_per_1000_accelerator_hours),
                "by_cause": {c: {"failures": v["failures"], "per_1000_accelerator_hours":
                                 _float(v["per_1000_accelerator_hours"])} for c, v in self.by_cause.items()},
                "mean_to_first_step_s": float(Fraction(sum(ttr), len(ttr) * _NS_PER_S)) if ttr else None,
                "mean_to_progress_s": float(Fraction(sum(ttp), len(ttp) * _NS_PER_S)) if ttp else None,
                "not_recovered": len(pairs) - len(ttp), "per_failure_ns": pairs,
                "restart_loop_attempts": sum(1 for a in self.attempts if a["restart_loop"]),
                "restart_loops": [{"first_attempt": x["first_attempt"], "last_attempt": x["last_attempt"],
                                   "attempts": x["attempts"], "ns": x["ns"]} for x in self.restart_loops],
                "badput_ns": self.badput_ns, "wall_ns": self.wall_ns,
                "waste_equivalent_accelerators": _float(self.waste_equivalent_accelerators)}


def _float(x: Fraction | None) -> float | None:
    return None if x is None else float(x)


def _ledger_for(lifecycle: Any, ledger: Ledger | None, as_of: int | None, what: str) -> Ledger:
    if ledger is None:
        return _ledger_of(None, lifecycle, as_of=as_of)
    if not isinstance(ledger, Ledger):
        raise OptionError(f"{what}: ledger= is a {type(ledger).__name__}, not a Ledger. Fix: give pau.core.ledger(...)")
    if as_of is not None and ledger.summary()["as_of"] != as_of:
        raise OptionError(f"{what}: as_of = {as_of} is not the ledger's as_of. Fix: leave as_of out, or build the "
                          "ledger with it")
    return ledger


def _records(t: pa.Table, record: str) -> pa.Table:
    rec = _column(t, "record", "lifecycle")
    if pa.types.is_dictionary(rec.type):
        rec = rec.cast(rec.type.value_type)
    return t.filter(pc.fill_null(pc.equal(rec, record), False))


def _col_or_null(t: pa.Table, name: str, what: str) -> tuple[np.ndarray, np.ndarray]:
    if name not in t.schema.names:
        return np.zeros(t.num_rows, np.int64), np.ones(t.num_rows, bool)
    return (time_values if name.endswith("_ns") else int_values)(t, name, what)


def _failure_rows(att: Attribution) -> list[tuple[int, int, str]]:
    return sorted(((int(a), int(tm), str(k)) for a, tm, k in att.failures_all), key=lambda f: (f[1], f[2], f[0]))


def _by_attempt(intervals: pa.Table, state: str | None) -> dict[int, int]:
    iv = intervals if state is None else intervals.filter(pc.equal(intervals["state"], state))
    iv = iv.filter(pc.is_valid(iv["attempt"]))
    if iv.num_rows == 0:
        return {}
    t = pa.table({"attempt": iv["attempt"].cast(pa.int64()), "ns": pc.subtract(iv["end_ns"], iv["start_ns"])})
    return {int(a): v for (a,), v in exact_sums(t, ["attempt"], "ns").items()}


def recovery(lifecycle: Any, *, ledger: Ledger | None = None, as_of: int | None = None) -> Recovery:
    """Failure rate, time to recover per failure, restart loops and waste as capacity.

    Parameters
    ----------
    lifecycle : table-like
        The lifecycle table (DESIGN §2.2): its step and restore records give when
        progress came back.
    ledger : Ledger, optional
        The ledger of that lifecycle (built when not given).
    as_of : int, optional
        See :func:`pau.core.attribute`; with ``ledger=`` it must be the ledger's.

    Returns
    -------
    Recovery

    Notes
    -----
    * Failure rate: the ledger's failures x 1,000 / accountable accelerator-hours,
      overall and per cause (each failure's kind).
    * Per failure at ``t_f`` ending attempt ``a``: ``to_first_step_ns`` = the start of
      the first step after ``t_f`` (of a later attempt) - ``t_f``.
      ``progress_step`` = the progress ``a`` had made by ``t_f``: its highest step
      completed by then, else the step its restore brought back (None: nothing).
      ``recovered_ns`` = the first instant after ``t_f`` at which a later attempt has
      that progress again: an ok restore of a checkpoint at least as far ends, or a
      step at least as far completes (the re-done work included); with no progress
      to regain, the first step's start. ``to_progress_ns = recovered_ns - t_f``.
      None where it had not happened by ``as_of``. A step is completed when every
      row of it (per rank) has ended, by ``as_of``.
    * ``lost_ns``: the rolled-back accelerator-ns charged to the failure (the ledger's
      ``rolled_back`` time of attempt ``a``; on its first failure when several).
    * An attempt is in a restart loop when it ended (not completed, not running)
      without moving the last durable checkpoint forward: no checkpoint (of any
      attempt) durable by its end holds a later step than the newest durable by its
      start (the ledger's own checkpoints: ok and durable by ``as_of``).
    """
    if isinstance(lifecycle, Ledger):
        raise OptionError("recovery: the first argument is a Ledger; the step and restore records it needs are in the "
                          "lifecycle table. Fix: recovery(lifecycle, ledger=that_ledger)")
    lifecycle = as_table(lifecycle, "lifecycle")  # read once: a stream is read by the ledger and below
    _one_job(lifecycle, "recovery")
    _one_job(ledger, "recovery")
    led = _ledger_for(lifecycle, ledger, as_of, "recovery")
    att = _att(led, "recovery")
    s = led.summary()
    t = as_table(lifecycle, "lifecycle")
    prog = _Progress(t, att.as_of)
    iv = _intervals(led, "recovery")
    fails = _failure_rows(att)
    per_failure = _per_failure(att, fails, prog, _by_attempt(iv, "rolled_back"))
    attempts = _attempt_rows(att, _by_attempt(iv, None))
    acc = s["accountable_ns"]
    causes: dict[str, int] = {}
    for f in fails:
        causes[f[2]] = causes.get(f[2], 0) + 1

    def rate(c: int) -> Fraction | None:
        return _frac(c * 1000 * NS_PER_HOUR, acc)

    badput = s["badput_ns"] or 0
    return Recovery(acc, len(fails), rate(len(fails)), {c: {"failures": v, "per_1000_accelerator_hours": rate(v)}
                                                        for c, v in sorted(causes.items())},
                    per_failure, attempts, _restart_loops(attempts), badput, att.wall_ns, _frac(badput, att.wall_ns))


class _Progress:
    """The progress each attempt made, from the lifecycle's step and restore records as
    of ``at``: its completed steps (every rank's row ended) and its ok restores."""

    def __init__(self, t: pa.Table, at: int) -> None:
        self.first_step: dict[int, int] = {}  # attempt -> start of its first step
        # attempt -> (steps ascending, completion), completed only
        self.comp: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._steps(_records(t, "step"), at)
        self.restores: dict[int, list[tuple[int, int]]] = {}  # attempt -> [(step, end)]
        rs = _records(t, "restore")
        ra, ra_null = _col_or_null(rs, "attempt", "lifecycle")
        rk, rk_null = _col_or_null(rs, "step", "lifecycle")
        re_, re_null = _col_or_null(rs, "end_ns", "lifecycle")
        rok = np.ones(rs.num_rows, bool) if "ok" not in rs.schema.names else \
            np.asarray(pc.fill_null(rs["ok"], True).to_numpy(zero_copy_only=False), bool)
        r_good = ~ra_null & ~rk_null & ~re_null & rok & (re_ <= at)
        for a_, k_, e_ in zip(ra[r_good].tolist(), rk[r_good].tolist(), re_[r_good].tolist()):
            self.restores.setdefault(a_, []).append((k_, e_))

    def _steps(self, st: pa.Table, at: int) -> None:
        """Completion per (attempt, step), first start per attempt."""
        sa, sa_null = _col_or_null(st, "attempt", "lifecycle")
        sk, sk_null = _col_or_null(st, "step", "lifecycle")
        ss, _ = _col_or_null(st, "start_ns", "lifecycle")
        se, se_null = _col_or_null(st, "end_ns", "lifecycle")
        live = ~sa_null & ~sk_null & (ss <= at)
        sa, sk, ss, se, done = sa[live], sk[live], ss[live], se[live], (~se_null[live]) & (se[live] <= at)
        if not sa.size:
            return
        o = np.lexsort((sk, sa))
        ga, gk, gs = sa[o], sk[o], ss[o]
        ge, gd = np.where(done[o], se[o], np.iinfo(np.int64).max), done[o]
        cut = np.flatnonzero(np.r_[True, (ga[1:] != ga[:-1]) | (gk[1:] != gk[:-1]), True])
        lo = cut[:-1]
        g_att, g_step = ga[lo], gk[lo]
        g_end = np.maximum.reduceat(ge, lo)
        g_done = np.logical_and.reduceat(gd, lo)
        g_start = np.minimum.reduceat(gs, lo)
        a_cut = np.flatnonzero(np.r_[True, g_att[1:] != g_att[:-1], True])
        for a0, a1 in zip(a_cut[:-1].tolist(), a_cut[1:].tolist()):  # one slice per attempt
            a_ = int(g_att[a0])
            self.first_step[a_] = int(g_start[a0:a1].min())
            m = g_done[a0:a1]
            self.comp[a_] = (g_step[a0:a1][m], g_end[a0:a1][m])

    def at(self, a_: int, t_f: int) -> int | None:
        """The progress attempt ``a_`` had made by ``t_f``: its highest step completed,
        else the step its restore brought back (None: nothing)."""
        best = None
        if a_ in self.comp:
            steps_, ends_ = self.comp[a_]
            m = ends_ <= t_f
            if m.any():
                best = int(steps_[m].max())
        for k_, e_ in self.restores.get(a_, []):
            if e_ <= t_f and (best is None or k_ > best):
                best = k_
        return best

    def regained(self, after: list[int], p: int) -> int | None:
        """The first instant one of the attempts ``after`` has progress ``p`` again."""
        for b in after:  # attempts in start order: the first with a candidate holds the earliest
            cands = [e_ for k_, e_ in self.restores.get(b, []) if k_ >= p]
            if b in self.comp:
                steps_, ends_ = self.comp[b]
                m = steps_ >= p
                if m.any():
                    cands.append(int(ends_[m].min()))
            if cands:
                return min(cands)
        return None


def _per_failure(att: Attribution, fails: list[tuple[int, int, str]], prog: _Progress,
                 lost_by_att: dict[int, int]) -> list[dict[str, Any]]:
    """One row per failure: the next attempt, its first step, the progress to regain and
    when it was, and the rolled-back ns (on the attempt's first failure)."""
    A = att.attempts
    order = np.argsort(A.start, kind="stable")
    ids = [int(A.ids[i]) for i in order]
    a_start = {int(A.ids[i]): int(A.start[i]) for i in order}
    pos = {a: j for j, a in enumerate(ids)}
    first_of_att: set[tuple[int, int, str]] = set()
    seen: set[int] = set()
    for f in fails:
        if f[0] not in seen:
            seen.add(f[0])
            first_of_att.add(f)
    rows = []
    for f in fails:
        a_, t_f, kind = f
        later = [b for b in ids[pos[a_] + 1:] if a_start[b] >= t_f] if a_ in pos else []
        fs = next(((b, prog.first_step[b]) for b in later if b in prog.first_step), None)
        p = prog.at(a_, t_f)
        rec_at = fs[1] if (p is None and fs is not None) else (prog.regained(later, p) if p is not None else None)
        rows.append({
            "attempt": a_, "time_ns": t_f, "cause": kind, "next_attempt": later[0] if later else None,
            "first_step_ns": None if fs is None else fs[1],
            "to_first_step_ns": None if fs is None else fs[1] - t_f,
            "progress_step": p, "recovered_ns": rec_at,
            "to_progress_ns": None if rec_at is None else rec_at - t_f,
            "lost_ns": lost_by_att.get(a_, 0) if f in first_of_att else 0,
        })
    return rows


def _attempt_rows(att: Attribution, ns_by_att: dict[int, int]) -> list[dict[str, Any]]:
    """One row per attempt in start order: how it ended, the newest durable checkpoint
    before and after it (ok, by as_of), and whether it is in a restart loop."""
    A, C = att.attempts, att.checkpoints
    durable = np.asarray(C.durable, np.int64)
    c_ok = durable != NULL
    c_step, c_dur = np.asarray(C.step, np.int64)[c_ok], durable[c_ok]

    def newest(by: int) -> int | None:
        m = c_dur <= by
        return int(c_step[m].max()) if m.any() else None

    attempts = []
    for i in np.argsort(A.start, kind="stable"):
        a_ = int(A.ids[i])
        running, completed = bool(A.running[i]), bool(A.completed[i])
        before, after = newest(int(A.start[i]) - 1), newest(int(A.end[i]))
        moved = after is not None and (before is None or after > before)
        attempts.append({"attempt": a_, "start_ns": int(A.start[i]), "end_ns": int(A.end[i]),
                         "end": "running" if running else "completed" if completed else
                         (str(A.cause[i]) if A.cause[i] is not None else "ended"), "running": running,
                         "checkpoint_before": before, "checkpoint_after": after, "moved": moved,
                         "restart_loop": not running and not completed and not moved,
                         "ns": ns_by_att.get(a_, 0)})
    return attempts


def _restart_loops(attempts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs of consecutive attempts in a restart loop: first and last attempt, how many, ns."""
    loops: list[dict[str, Any]] = []
    prev = None
    for x in attempts:
        if x["restart_loop"]:
            if loops and loops[-1]["last_attempt"] == prev:
                loops[-1].update(last_attempt=x["attempt"], attempts=loops[-1]["attempts"] + 1,
                                 ns=loops[-1]["ns"] + x["ns"])
            else:
                loops.append({"first_attempt": x["attempt"], "last_attempt": x["attempt"], "attempts": 1,
                              "ns": x["ns"]})
        prev = x["attempt"]
    return loops


# ---------------------------------------------------------------------------
# progress protection


@dataclass
class Protection:
    """What :func:`protection` returns.

    Attributes
    ----------
    per : str
        ``"failure"`` or ``"period"``.
    bound_ns, bound_share : int or Fraction or None
        The contracted bound (one of them).
    rows : list of dict
        Per failure: ``attempt, time_ns, cause, lost_ns, work_ns, share, allowed_ns,
        breach, excess_ns, excess_cost``. Per period: ``start_ns, end_ns, failures,
        lost_ns, work_ns, share, allowed_ns, breach, excess_ns, excess_cost,
        badput_ns, idle_equivalent``.
    breaches : int
    excess_ns : Fraction
        Lost progress beyond the bound, over all breaches (accelerator-ns).
    excess_cost : Fraction or None
        ``excess_ns`` in accelerator-hours times the price, when one was given.
    superseded_ns : int
        Rolled-back work no failure threw away (an attempt that ended without one):
        in a period's loss, not in any failure's.
    """

    per: str
    bound_ns: Optional[int]
    bound_share: Optional[Fraction]
    rows: list[Any]
    breaches: int
    excess_ns: Fraction
    excess_cost: Optional[Fraction]
    superseded_ns: int

    def table(self) -> pa.Table:
        if not self.rows:
            return pa.table({})
        return pa.table({k: pa.array([_f(r[k]) for r in self.rows]) for k in self.rows[0]})

    def summary(self) -> ProtectionSummary:
        return cast(ProtectionSummary, _fd({"per": self.per, "bound_ns": self.bound_ns, "bound_share": self.bound_share,
                   "rows": len(self.rows), "breaches": self.breaches, "excess_ns": self.excess_ns,
                   "excess_accelerator_hours": self.excess_ns / NS_PER_HOUR, "excess_cost": self.excess_cost,
                   "superseded_ns": self.superseded_ns}))


_WORK = ("productive", "pending", "rolled_back")


def _clipped(s: np.ndarray, e: np.ndarray, lo: int, hi: int) -> int:
    """ns of the intervals [s, e) inside [lo, hi)."""
    d = np.minimum(e, hi) - np.maximum(s, lo)
    return int(d[d > 0].sum(dtype=np.int64))


def _buckets(s: np.ndarray, e: np.ndarray, width: int, first: int, count: int) -> list[int]:
    """ns of the intervals in each bucket [first + i·w, first + (i+1)·w), exact."""
    out = [0] * count
    keep = e > s
    s, e = s[keep], e[keep]
    i0 = (s - first) // width
    i1 = (e - 1 - first) // width
    one = i0 == i1
    if one.any():
        sums = np.zeros(count, np.int64)
        np.add.at(sums, i0[one], (e - s)[one])
        out = [int(x) for x in sums]
    for a, b, j0, j1 in zip(s[~one].tolist(), e[~one].tolist(), i0[~one].tolist(), i1[~one].tolist()):
        for j in range(j0, j1 + 1):
            lo, hi = first + j * width, first + (j + 1) * width
            out[j] += min(b, hi) - max(a, lo)
    return out


def protection(ledger: Ledger, *, bound_ns: int | None = None, bound_share: Number | None = None,
               per: str = "failure", period_ns: int | None = None,
               price_per_accelerator_hour: Number | None = None) -> Protection:
    """Check lost progress against a contracted bound, per failure or per period.

    Parameters
    ----------
    ledger : Ledger
        With a lifecycle.
    bound_ns : int, optional
        The most lost progress allowed, in accelerator-ns (per failure or per period).
    bound_share : number, optional
        The most lost progress allowed as a share (in [0, 1]) of the progress made:
        per failure, of the step work done up to the failure; per period, of the step
        work done in the period. Give one of ``bound_ns`` and ``bound_share``.
    per : {"failure", "period"}
    period_ns : int
        With ``per="period"``: the period's length; periods are aligned to multiples
        of it, from the ledger's first accountable instant to ``as_of``.
    price_per_accelerator_hour : number, optional
        Prices the excess.

    Returns
    -------
    Protection

    Notes
    -----
    Lost progress is the ledger's ``rolled_back`` accelerator time. A failure's loss
    is the rolled-back time of the attempt it ended (see :func:`recovery`); a
    period's loss is that of the failures in it (the period the loss happened in,
    wherever the lost work was done), plus work rolled back without a failure (an
    attempt ending without one: at its end). Step work is ``productive + pending +
    rolled_back`` time. A breach is a loss above the bound (``lost > bound_ns``, or
    ``lost > bound_share x work``); its excess is ``lost - allowed``. Per period the
    rows also give the waste as capacity: ``badput_ns`` (accountable time neither
    productive nor pending in the period) over the period's observed length, the
    accelerators that idle for the whole period would waste as much.
    """
    b_ns, b_sh, width, price = _protection_options(bound_ns, bound_share, per, period_ns,
                                                   price_per_accelerator_hour)
    _one_job(ledger, "protection")
    att = _att(ledger, "protection")
    iv = _intervals(ledger, "protection")
    st = iv["state"].cast(pa.string()) if pa.types.is_dictionary(iv["state"].type) else iv["state"]
    s_all = np.asarray(iv["start_ns"].to_numpy(zero_copy_only=False), np.int64)
    e_all = np.asarray(iv["end_ns"].to_numpy(zero_copy_only=False), np.int64)
    st_np = np.asarray(st.to_numpy(zero_copy_only=False), object)
    work = np.isin(st_np, _WORK)
    lost_by_att = _by_attempt(iv, "rolled_back")
    fails = _failure_rows(att)
    first: dict[int, tuple[int, int, str]] = {}
    for f in fails:
        first.setdefault(f[0], f)
    superseded = {a: v for a, v in lost_by_att.items() if a not in first and v}
    judge = _Judge(b_ns, b_sh, price)
    rows = []
    if width is None:  # per failure
        ws, we = s_all[work], e_all[work]
        for f in fails:
            lost = lost_by_att.get(f[0], 0) if first[f[0]] == f else 0
            w = _clipped(ws, we, np.iinfo(np.int64).min, f[1])
            rows.append({"attempt": f[0], "time_ns": f[1], "cause": f[2], "lost_ns": lost, "work_ns": w,
                         **judge(lost, w)})
    else:
        A = att.attempts
        end_of = {int(A.ids[i]): int(A.end[i]) for i in range(A.ids.size)}
        losses = [(first[a][1], v) for a, v in lost_by_att.items() if a in first] + \
                 [(end_of[a], v) for a, v in superseded.items()]
        waste = ~np.isin(st_np, ("productive", "pending"))
        rows = _period_rows(att, width, fails, losses, (s_all[work], e_all[work]), (s_all[waste], e_all[waste]),
                            judge)
    breaches = sum(1 for r in rows if r["breach"])
    excess = sum((r["excess_ns"] for r in rows), Fraction(0))
    return Protection(per, b_ns, b_sh, rows, breaches, excess,
                      None if price is None else excess / NS_PER_HOUR * price, sum(superseded.values()))


def _protection_options(bound_ns: int | None, bound_share: Number | None, per: str, period_ns: int | None,
                        price_per_accelerator_hour: Number | None
                        ) -> tuple[int | None, Fraction | None, int | None, Fraction | None]:
    """:func:`protection`'s options checked: the bound in ns or as a share, the period's
    width (None: per failure) and the price."""
    if per not in ("failure", "period"):
        raise OptionError(f"protection: per = {per!r}. Fix: give 'failure' or 'period'")
    if (bound_ns is None) == (bound_share is None):
        raise OptionError("protection: give one bound: bound_ns= (accelerator-ns of lost progress) or bound_share= "
                          "(a share of the progress made)")
    b_ns = None if bound_ns is None else _count(bound_ns, "bound_ns")
    b_sh = None
    if bound_share is not None:
        b_sh = Fraction(0) if bound_share == 0 else _positive(bound_share, "bound_share")
        if b_sh > 1:
            raise PauError(f"protection: bound_share = {bound_share!r} is above 1. Fix: give a share in [0, 1]")
    width = None
    if per == "period":
        if period_ns is None:
            raise OptionError("protection: per='period' needs period_ns=. Fix: give the period's length in ns")
        width = _count(period_ns, "period_ns", positive=True)
    elif period_ns is not None:
        raise OptionError("protection: period_ns= applies to per='period'. Fix: leave it out, or pass per='period'")
    price = None if price_per_accelerator_hour is None else (
        Fraction(0) if price_per_accelerator_hour == 0 else _positive(price_per_accelerator_hour,
                                                                       "price_per_accelerator_hour"))
    return b_ns, b_sh, width, price


class _Judge:
    """A loss against the bound: its share of the work, what was allowed, whether it is a
    breach and by how much (priced when a price was given)."""

    def __init__(self, b_ns: int | None, b_sh: Fraction | None, price: Fraction | None) -> None:
        self.b_ns, self.b_sh, self.price = b_ns, b_sh, price

    def __call__(self, lost: int, work_ns: int) -> dict[str, Any]:
        if self.b_ns is not None:
            allowed = Fraction(self.b_ns)
        else:
            assert self.b_sh is not None
            allowed = self.b_sh * work_ns
        breach = lost > allowed
        excess = Fraction(lost) - allowed if breach else Fraction(0)
        return {"share": _frac(lost, work_ns), "allowed_ns": allowed, "breach": breach, "excess_ns": excess,
                "excess_cost": None if self.price is None else excess / NS_PER_HOUR * self.price}


def _period_rows(att: Attribution, width: int, fails: list[tuple[int, int, str]], losses: list[tuple[int, int]],
                 work: tuple[np.ndarray, np.ndarray], waste: tuple[np.ndarray, np.ndarray],
                 judge: _Judge) -> list[dict[str, Any]]:
    """One row per period of ``width`` ns (aligned to its multiples) from the first
    accountable instant to as_of: failures, lost progress (each loss at its instant),
    step work, the judgement, badput and the idle equivalent."""
    lo_t, hi_t = att.as_of - att.wall_ns, att.as_of
    base = (lo_t // width) * width
    count = max(1, -(-(hi_t - base) // width))
    w_b = _buckets(np.maximum(work[0], lo_t), np.minimum(work[1], hi_t), width, base, count)
    b_b = _buckets(np.maximum(waste[0], lo_t), np.minimum(waste[1], hi_t), width, base, count)
    nf = [0] * count
    for f in fails:
        j = (f[1] - base) // width
        if 0 <= j < count:
            nf[j] += 1
    lost_b = [0] * count
    for tm, v in losses:
        j = min(max((tm - base) // width, 0), count - 1)
        lost_b[j] += v
    rows = []
    for j in range(count):
        p0, p1 = max(base + j * width, lo_t), min(base + (j + 1) * width, hi_t)
        rows.append({"start_ns": p0, "end_ns": p1, "failures": nf[j], "lost_ns": lost_b[j], "work_ns": w_b[j],
                     **judge(lost_b[j], w_b[j]), "badput_ns": b_b[j], "idle_equivalent": _frac(b_b[j], p1 - p0)})
    return rows
