"""Hardware telemetry joined to the ledger (DESIGN §6, ``docs/telemetry.md``).

Every cell of a ledger (rank × state × activity, and per window) gets, for each
metric of the samples table, the time its samples cover, the time they do not
(``unknown``), the time-weighted mean over the covered part and, for power (and
an energy counter), the energy in joules.

How a value holds between two samples depends on the metric's kind
(:data:`pau.readers.telemetry.METRICS`):

* ``instant`` (power, clocks, temperatures, memory used): linear between consecutive
  samples (DESIGN §4: power is piecewise-linear), so energy is the trapezoid rule,
  exact for that signal;
* ``interval`` (utilisation and activity ratios, rates): nvidia-smi documents
  ``utilization.gpu`` as the share of "the past sample period", DCGM its profiling
  fields as averages over the sample interval; so a sample's value holds, constant,
  over ``[previous sample, this sample)``;
* ``counter`` (energy since boot): linear between samples (a constant rate), so the
  increase over an interval is the counter's own at the samples and pro rata between.

A gap between consecutive samples longer than ``max_gap_ns`` (default
:data:`DEFAULT_MAX_GAP_NS`) is ``unknown``, not interpolated; so is time before a
series' first sample and after its last (an ``interval`` series starts covering at
its first sample's successor: the first sample's own period is not known), and the
span across a counter that went down (a reset). Integrals are float64 of exact
int64 ns differences.

The ledger's cells as intervals (:func:`cell_intervals`) come from the ledger's
state intervals (or each rank's span) crossed with the exclusive activity of the
events, painted by the priority of kinds (:func:`pau.engine._kernels.paint`: at each
instant the highest-priority running kind wins, as in the ledger); their ns are
checked against the ledger's own cells, so a mismatch (other events, another
priority) is an error, never a silent difference.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa

from pau.engine import _kernels
from pau.engine._input import as_table, event_columns, raise_first, row_reasons
from pau.engine.ledger import Ledger, exact_sums
from pau.engine._sweep import plan_of
from pau.engine.types import Quarantined, RunWarning, TelemetryRow, check_on_invalid
from pau.engine.vocab import ACTIVITIES, DEFAULT_PRIORITY, KINDS, STATES
from pau.errors import ArgumentTypeError, OptionError, PauError
from pau.figures._common import _one_job
from pau.readers.telemetry import (
    METRICS, SAMPLES_SCHEMA, Telemetry, check_samples, normal_bus_id, normal_uuid,
)

__all__ = ["DEFAULT_MAX_GAP_NS", "Attached", "cell_intervals", "cell_metrics", "integrate",
           "match_devices", "match_samples", "summary"]

#: The default bound on a gap between two samples that is interpolated (60 s): a
#: longer gap is ``unknown``. It holds nvidia-smi ``-l 1`` logs, dcgm-exporter's
#: default 30 s collection and Prometheus' default 1 min scrape; pass ``max_gap_ns``
#: close to the sampling interval for a stricter account.
DEFAULT_MAX_GAP_NS = 60 * 10**9

_I64 = np.iinfo(np.int64)
_UNKNOWN_ACT = len(ACTIVITIES)
_ACT_NAMES = ACTIVITIES + ("unknown",)
_NO_WINDOW = np.iinfo(np.int64).min   # the window of time outside every window (null)


# ---------------------------------------------------------------------------
# the one integral: a piecewise-linear signal over intervals


def integrate(seg_key: np.ndarray, seg_start: np.ndarray, seg_end: np.ndarray, seg_v0: np.ndarray,
              seg_v1: np.ndarray, q_key: np.ndarray, q_start: np.ndarray,
              q_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The integral of a piecewise-linear signal over each query interval, and the ns
    of the query the signal covers.

    Parameters
    ----------
    seg_key, seg_start, seg_end, seg_v0, seg_v1 : numpy arrays
        The signal: per key, disjoint half-open segments ``[start, end)`` on which it
        runs linearly from ``v0`` (at ``start``) towards ``v1`` (at ``end``); constant
        when ``v0 == v1`` (then ``start`` and ``end`` may be the ends of int64, a value
        held for ever). Time outside every segment has no value.
    q_key, q_start, q_end : numpy arrays
        The intervals ``[q_start, q_end)``, each of one key.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``integral`` (float64, value × ns) and ``covered`` (int64 ns) per query. On one
        segment the integral over ``[x, y)`` is ``(y - x) * (v(x) + v(y)) / 2`` with
        ``v`` linear (the trapezoid rule, exact for a linear signal); ``y - x`` is an
        exact int64.
    """
    q_key = np.asarray(q_key, np.int64)
    q_start = np.asarray(q_start, np.int64)
    q_end = np.asarray(q_end, np.int64)
    out = np.zeros(q_key.size, np.float64)
    cov = np.zeros(q_key.size, np.int64)
    if q_key.size == 0:
        return out, cov
    seg_key = np.asarray(seg_key, np.int64)
    seg_start = np.asarray(seg_start, np.int64)
    seg_end = np.asarray(seg_end, np.int64)
    v0 = np.asarray(seg_v0, np.float64)
    v1 = np.asarray(seg_v1, np.float64)
    live = seg_end > seg_start
    seg_key, seg_start, seg_end, v0, v1 = (a[live] for a in (seg_key, seg_start, seg_end, v0, v1))
    order = np.lexsort((seg_start, seg_key))
    seg_key, seg_start, seg_end, v0, v1 = (a[order] for a in (seg_key, seg_start, seg_end, v0, v1))
    for key in np.unique(q_key).tolist():
        lo_k, hi_k = np.searchsorted(seg_key, key, "left"), np.searchsorted(seg_key, key, "right")
        if lo_k == hi_k:
            continue
        s, e, a, b = seg_start[lo_k:hi_k], seg_end[lo_k:hi_k], v0[lo_k:hi_k], v1[lo_k:hi_k]
        qi = np.flatnonzero(q_key == key)
        qs, qe = q_start[qi], q_end[qi]
        lo = np.searchsorted(e, qs, "right")   # first segment ending after the query starts
        hi = np.searchsorted(s, qe, "left")    # segments starting before the query ends
        n = np.maximum(hi - lo, 0)
        total = int(n.sum())
        if total == 0:
            continue
        pq = np.repeat(np.arange(qi.size), n)
        first = np.concatenate([[0], np.cumsum(n)[:-1]])
        ps = lo[pq] + (np.arange(total) - first[pq])
        x = np.maximum(qs[pq], s[ps])
        y = np.minimum(qe[pq], e[ps])
        length = y - x
        ok = length > 0
        pq, ps, x, y, length = pq[ok], ps[ok], x[ok], y[ok], length[ok]
        va, vb = a[ps], b[ps]
        vx, vy = va.copy(), va.copy()
        slope = va != vb
        if slope.any():
            ss, se = s[ps][slope], e[ps][slope]
            span = (se - ss).astype(np.float64)
            d = (vb - va)[slope]
            vx[slope] = va[slope] + d * ((x[slope] - ss).astype(np.float64) / span)
            vy[slope] = va[slope] + d * ((y[slope] - ss).astype(np.float64) / span)
        part = length.astype(np.float64) * ((vx + vy) / 2)
        np.add.at(out, qi[pq], part)
        np.add.at(cov, qi[pq], length)
    return out, cov


def _segments(kind: str, t: np.ndarray, v: np.ndarray, max_gap_ns: int | None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The segments of one series (times strictly increasing) by its kind: ``start,
    end, v0, v1``; values per second for a counter's rate."""
    if t.size < 2:
        e = np.empty(0, np.int64)
        return e, e, np.empty(0), np.empty(0)
    s, e = t[:-1], t[1:]
    dt = e - s
    ok = np.ones(dt.size, bool) if max_gap_ns is None else dt <= max_gap_ns
    if kind == "instant":
        a, b = v[:-1], v[1:]
    elif kind == "interval":
        a = b = v[1:]
    else:   # counter: the rate, per second; a counter going down (a reset) leaves the gap unknown
        inc = v[1:] - v[:-1]
        ok &= inc >= 0
        a = b = inc / (dt.astype(np.float64) / 1e9)
    return s[ok], e[ok], a[ok], b[ok]


# ---------------------------------------------------------------------------
# the ledger's cells as intervals


def _cross(a_s: np.ndarray, a_e: np.ndarray, a_lab: np.ndarray, b_s: np.ndarray, b_e: np.ndarray, b_lab: Any,
           default: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pieces of intervals ``a`` (disjoint) cut by intervals ``b`` (disjoint):
    ``start, end, a's label, b's label (default where no b)``."""
    if a_s.size == 0:
        e = np.empty(0, np.int64)
        return e, e, np.empty(0, a_lab.dtype), np.empty(0, np.asarray(b_lab).dtype if np.size(b_lab) else np.int64)
    oa = np.argsort(a_s, kind="stable")
    a_s, a_e, a_lab = a_s[oa], a_e[oa], a_lab[oa]
    ob = np.argsort(b_s, kind="stable")
    b_s, b_e, b_lab = b_s[ob], b_e[ob], np.asarray(b_lab)[ob]
    bounds = np.unique(np.concatenate([a_s, a_e, b_s, b_e]))
    lo, hi = bounds[:-1], bounds[1:]
    ia = np.searchsorted(a_s, lo, "right") - 1
    keep = (ia >= 0) & (lo < a_e[np.maximum(ia, 0)])
    lo, hi, ia = lo[keep], hi[keep], ia[keep]
    if b_s.size:
        ib = np.searchsorted(b_s, lo, "right") - 1
        inb = (ib >= 0) & (lo < b_e[np.maximum(ib, 0)])
        lab = np.where(inb, b_lab[np.maximum(ib, 0)], default)
    else:
        lab = np.full(lo.size, default)
    return lo, hi, a_lab[ia], lab


def _activity(events: Any, priority: Sequence[str] | None) -> tuple[np.ndarray, ...]:
    """The exclusive activity of the events per rank: ``rank, start, end, kind code``
    (gaps are idle), painted by the priority of kinds."""
    ev = as_table(events, "events")
    cols = event_columns(ev)
    if cols is None or (cols.kind.codes[cols.kind.indices] < 0).any() or (cols.end < cols.start).any():
        raise_first(ev, row_reasons(ev), 0)
    assert cols is not None
    prio = tuple(DEFAULT_PRIORITY if priority is None else priority)
    if sorted(prio) != sorted(KINDS):
        raise PauError(f"priority: expected an ordering of all of {', '.join(KINDS)} (highest first), got {list(prio)}")
    code = cols.kind.codes[cols.kind.indices].astype(np.int64)
    level_of = np.array([len(KINDS) - prio.index(k) for k in KINDS], np.int8)
    level = level_of[code]
    rank = np.asarray(cols.rank, np.int32)
    order = np.lexsort((cols.start, rank))
    r, s, e, row = _kernels.paint(rank, np.asarray(cols.start, np.int64), np.asarray(cols.end, np.int64), level,
                                  order)  # type: ignore[no-untyped-call]
    return np.asarray(r, np.int64), np.asarray(s), np.asarray(e), code[row]


def _states(ledger: Ledger, events: Any, span: Any) -> tuple[np.ndarray, ...]:
    """``rank, start, end, state code`` of every accountable interval."""
    iv = ledger.intervals
    if iv is not None:
        st = iv["state"].combine_chunks()
        names = [str(x) for x in st.dictionary.to_pylist()]
        code_of = np.array([STATES.index(n) for n in names], np.int64)
        idx = np.asarray(st.indices.to_numpy(zero_copy_only=False), np.int64)
        return (np.asarray(iv["rank"], np.int64), np.asarray(iv["start_ns"], np.int64),
                np.asarray(iv["end_ns"], np.int64), code_of[idx] if idx.size else idx)
    if span is not None:
        sp = plan_of(None, span)
        r, s, e = sp.span_rank.astype(np.int64), sp.span_start, sp.span_end
    elif events is not None:
        ev = as_table(events, "events")
        cols = event_columns(ev)
        if cols is None:
            raise_first(ev, row_reasons(ev), 0)
        assert cols is not None
        rank = np.asarray(cols.rank, np.int64)
        r = np.unique(rank)
        s = np.array([cols.start[rank == k].min() for k in r.tolist()], np.int64)
        e = np.array([cols.end[rank == k].max() for k in r.tolist()], np.int64)
    else:
        raise PauError("cell_intervals: an events-only ledger needs its events (or span=) to place its time")
    return r, s, e, np.full(r.size, STATES.index("unattributed"), np.int64)


def _windows(rank: np.ndarray, start: np.ndarray, end: np.ndarray, windows: Any
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pieces cut by the windows: ``(rank, start, end, window id or _NO_WINDOW, row)``."""
    if isinstance(windows, (int, np.integer)) and not isinstance(windows, bool):
        plan = plan_of(int(windows), None)
        w = plan.bucket
        k0 = np.floor_divide(start, w)
        k1 = np.floor_divide(end - 1, w)
        n = (k1 - k0 + 1).astype(np.int64)
        row = np.repeat(np.arange(start.size), n)
        first = np.concatenate([[0], np.cumsum(n)[:-1]])
        k = k0[row] + (np.arange(int(n.sum())) - first[row])
        s = np.maximum(start[row], k * w)
        e = np.minimum(end[row], (k + 1) * w)
        return rank[row], s, e, k * w, row
    plan = plan_of(windows, None)
    out: list[list[np.ndarray]] = [[], [], [], [], []]
    for r in np.unique(rank).tolist():
        mine = np.flatnonzero(rank == r)
        sel = np.flatnonzero((plan.win_rank == r) | (plan.win_rank == -1))
        ws, we = plan.win_start[sel], plan.win_end[sel]
        ids = plan.win_id[sel] if plan.win_id.size else sel.astype(np.int64)
        lo, hi, row, wid = _cross(start[mine], end[mine], mine, ws, we, ids, _NO_WINDOW)
        for lst, v in zip(out, (np.full(lo.size, r, np.int64), lo, hi, wid, row)):
            lst.append(v)
    cat = [np.concatenate(x) if x else np.empty(0, np.int64) for x in out]
    return cat[0], cat[1], cat[2], cat[3].astype(np.int64), cat[4].astype(np.int64)


def cell_intervals(ledger: Ledger, events: Any = None, *, span: Any = None, windows: Any = None,
                   priority: Sequence[str] | None = None) -> pa.Table:
    """The ledger's cells as intervals: ``rank, [window,] start_ns, end_ns, state,
    activity``, disjoint per rank, in ``(rank, start_ns)`` order.

    Parameters
    ----------
    ledger : Ledger
        The ledger (:func:`pau.core.ledger`, :meth:`pau.Run.ledger`).
    events : table-like, optional
        The events the ledger was built from; required when it has events (a ledger
        holds their sums, not their times). Without them the activity is ``unknown``.
    span, windows, priority : optional
        As given to :func:`pau.core.ledger` (``span`` and ``windows`` only for an
        events-only ledger).

    Raises
    ------
    pau.errors.PauError
        The intervals' ns per cell differ from the ledger's (other events, span,
        windows or priority than the ledger's), naming the first differing cell.
    """
    _one_job(ledger, "cell intervals (telemetry per ledger cell)")
    if not isinstance(ledger, Ledger):
        raise ArgumentTypeError("cell_intervals", "a pau Ledger", ledger)
    if ledger.has_events and events is None:
        raise PauError("cell_intervals: the ledger has device activity but no events were given. Fix: pass the "
                       "events the ledger was built from (events=run.events)")
    if ledger.intervals is not None and (span is not None or windows is not None):
        raise OptionError("cell_intervals: span and windows apply to events-only ledgers, as in pau.core.ledger")
    sr, ss, se, sc = _states(ledger, events if ledger.has_events else None, span)
    parts = []
    if events is not None and ledger.has_events:
        ar, as_, ae, ac = _activity(events, priority)
        for r in np.unique(sr).tolist():
            m, n = sr == r, ar == r
            lo, hi, st, act = _cross(ss[m], se[m], sc[m], as_[n], ae[n], ac[n], len(KINDS))
            parts.append((np.full(lo.size, r, np.int64), lo, hi, st, act))
    else:
        parts.append((sr, ss, se, sc, np.full(sr.size, _UNKNOWN_ACT, np.int64)))
    rank, start, end, state, act = (np.concatenate([p[k] for p in parts]) if parts else np.empty(0, np.int64)
                                    for k in range(5))
    win = None
    if windows is not None:
        rank, start, end, win, row = _windows(rank, start, end, windows)
        state, act = state[row], act[row]
    keep = end > start
    rank, start, end, state, act = rank[keep], start[keep], end[keep], state[keep], act[keep]
    if win is not None:
        win = win[keep]
    order = np.lexsort((start, rank))
    cols: dict[str, Any] = {"rank": pa.array(rank[order].astype(np.int32), pa.int32())}
    if win is not None:
        w = win[order]
        cols["window"] = pa.array(w, pa.int64(), mask=w == _NO_WINDOW)
    cols["start_ns"] = pa.array(start[order], pa.int64())
    cols["end_ns"] = pa.array(end[order], pa.int64())
    cols["state"] = pa.DictionaryArray.from_arrays(pa.array(state[order].astype(np.int8)), pa.array(STATES))
    cols["activity"] = pa.DictionaryArray.from_arrays(pa.array(act[order].astype(np.int8)), pa.array(_ACT_NAMES))
    out = pa.table(cols)
    _check_cells(ledger, out)
    return out


def _check_cells(ledger: Ledger, cells: pa.Table) -> None:
    keys = [k for k in ("rank", "window", "state", "activity") if k in cells.column_names]
    if "window" in ledger.table.column_names and "window" not in keys:
        raise PauError("cell_intervals: the ledger has windows. Fix: pass the windows it was built with (windows=)")
    t = pa.table({**{k: cells[k] for k in keys},
                  "duration_ns": pa.array(np.asarray(cells["end_ns"]) - np.asarray(cells["start_ns"]), pa.int64())})
    mine = {k: v for k, v in exact_sums(t, keys, "duration_ns").items() if v}
    theirs = {k: v for k, v in exact_sums(ledger.table, keys, "duration_ns").items() if v}
    if mine != theirs:
        diff = sorted(set(mine) | set(theirs), key=repr)
        first = next(k for k in diff if mine.get(k, 0) != theirs.get(k, 0))
        raise PauError(f"cell_intervals: cell {dict(zip(keys, first))} holds {mine.get(first, 0)} ns from the events "
                       f"given and {theirs.get(first, 0)} ns in the ledger. Fix: pass the events, span, windows and "
                       "priority the ledger was built with")


# ---------------------------------------------------------------------------
# metrics per cell

_ENERGY_UNITS = ("W", "J")


def cell_metrics(ledger: Ledger, samples: Any, *, events: Any = None, span: Any = None, windows: Any = None,
                 priority: Sequence[str] | None = None, max_gap_ns: int | None = DEFAULT_MAX_GAP_NS,
                 by: Sequence[str] | None = None, kinds: Mapping[str, str] | None = None,
                 on_invalid: str = "raise") -> pa.Table | Quarantined:
    """Each metric's time-weighted mean (and energy) per ledger cell.

    Parameters
    ----------
    ledger : Ledger
    samples : table-like
        ``rank, time_ns, metric, value`` (:attr:`pau.Run.samples`; checked by
        :func:`pau.readers.telemetry.check_samples`).
    events, span, windows, priority :
        As for :func:`cell_intervals` (``events=run.events``).
    max_gap_ns : int or None
        A gap between consecutive samples of a series longer than this is
        ``unknown`` (default :data:`DEFAULT_MAX_GAP_NS`); None interpolates every gap.
    by : sequence of str, optional
        The keys to group by, from ``rank, window, state, activity`` (default all
        the ledger has): ``by=("state", "activity")`` gives the whole job's cells,
        ``by=("state",)`` its states.
    kinds : dict, optional
        Metrics outside :data:`pau.readers.telemetry.METRICS` and their kind.
    on_invalid : {"raise", "quarantine"}
        For samples that are not usable (see ``check_samples``).

    Returns
    -------
    pyarrow.Table or Quarantined
        One row per group and metric: the keys, ``metric``, ``duration_ns`` (the
        group's ns), ``covered_ns`` (ns with a value), ``unknown_ns`` (``duration_ns
        - covered_ns``), ``mean`` (time-weighted over the covered ns; for a counter,
        its rate per second; null when nothing is covered) and ``energy_j`` (for
        metrics in W: the integral over the covered ns; for a counter in J: its
        increase; else null). With ``on_invalid="quarantine"``: ``(table,
        quarantine)``.
    """
    _one_job(ledger, "cell metrics (telemetry per ledger cell)")
    check_on_invalid(on_invalid)
    if max_gap_ns is not None and (isinstance(max_gap_ns, bool) or not isinstance(max_gap_ns, (int, np.integer))
                                   or max_gap_ns < 0):
        raise OptionError(f"max_gap_ns: expected an int of ns >= 0 or None, got {max_gap_ns!r}")
    clean, quarantine = check_samples(samples, on_invalid=on_invalid, kinds=kinds)
    cells = cell_intervals(ledger, events, span=span, windows=windows, priority=priority)
    have = [k for k in ("rank", "window", "state", "activity") if k in cells.column_names]
    keys = list(have if by is None else by)
    bad = [k for k in keys if k not in have]
    if bad or len(set(keys)) != len(keys):
        raise OptionError(f"by: expected distinct names among {', '.join(have)}, got {list(keys)}")
    c_rank = np.asarray(cells["rank"], np.int64)
    c_s, c_e = np.asarray(cells["start_ns"], np.int64), np.asarray(cells["end_ns"], np.int64)
    dur = c_e - c_s
    key_cols: dict[str, np.ndarray] = {
        "rank": c_rank,
        "window": (np.asarray(cells["window"].fill_null(_NO_WINDOW), np.int64) if "window" in have else c_rank),
        "state": np.asarray(cells["state"].combine_chunks().indices, np.int64) if cells.num_rows else c_rank[:0],
        "activity": np.asarray(cells["activity"].combine_chunks().indices, np.int64) if cells.num_rows else c_rank[:0],
    }
    if keys:
        stacked = np.stack([key_cols[k] for k in keys], axis=1)
        groups, inverse = np.unique(stacked, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
    else:
        groups, inverse = np.zeros((1 if cells.num_rows else 0, 0), np.int64), np.zeros(cells.num_rows, np.int64)
    g_dur = np.zeros(len(groups), np.int64)
    np.add.at(g_dur, inverse, dur)

    parts = _metric_parts(clean, kinds, max_gap_ns, (c_rank, c_s, c_e), inverse, len(groups))
    cat = {k: (np.concatenate([p[k] for p in parts]) if parts else np.empty(0, np.int64))
           for k in ("metric", "covered", "mean", "integral", "energy", "group")}
    gidx = cat["group"].astype(np.int64)
    cols: dict[str, Any] = {}
    for j, k in enumerate(keys):
        v = groups[gidx, j] if gidx.size else np.empty(0, np.int64)
        if k == "rank":
            cols[k] = pa.array(v.astype(np.int32), pa.int32())
        elif k == "window":
            cols[k] = pa.array(v, pa.int64(), mask=v == _NO_WINDOW)
        else:
            vocab = STATES if k == "state" else _ACT_NAMES
            cols[k] = pa.array(np.asarray(vocab, object)[v] if v.size else [], pa.string())
    covered = cat["covered"].astype(np.int64)
    d = g_dur[gidx] if gidx.size else np.empty(0, np.int64)
    cols["metric"] = pa.array(cat["metric"].tolist(), pa.string())
    cols["duration_ns"] = pa.array(d, pa.int64())
    cols["covered_ns"] = pa.array(covered, pa.int64())
    cols["unknown_ns"] = pa.array(d - covered, pa.int64())
    cols["mean"] = pa.array(cat["mean"].astype(np.float64), pa.float64(), mask=covered == 0)
    en = cat["energy"].astype(bool)
    cols["energy_j"] = pa.array(cat["integral"].astype(np.float64) / 1e9, pa.float64(), mask=~en)
    out = pa.table(cols)
    if on_invalid == "quarantine":
        return Quarantined(out, quarantine)
    return out


def _metric_parts(clean: pa.Table, kinds: Mapping[str, str] | None, max_gap_ns: int | None,
                  cells: tuple[np.ndarray, np.ndarray, np.ndarray], inverse: np.ndarray,
                  n_groups: int) -> list[dict[str, np.ndarray]]:
    """Per metric in the samples, per group of cells (``inverse``: each cell's group):
    the integral, the covered ns, the mean and whether the integral is energy."""
    c_rank, c_s, c_e = cells
    metric = clean["metric"].combine_chunks()
    names = [str(x) for x in metric.dictionary.to_pylist()]
    m_code = np.asarray(metric.indices.to_numpy(zero_copy_only=False), np.int64)
    s_rank = np.asarray(clean["rank"], np.int64)
    s_t = np.asarray(clean["time_ns"], np.int64)
    s_v = np.asarray(clean["value"], np.float64)
    present = sorted({names[c] for c in np.unique(m_code).tolist()})
    parts: list[dict[str, np.ndarray]] = []
    for name in present:
        spec = METRICS.get(name)
        kind = spec.kind if spec is not None else dict(kinds or {})[name]
        sel = m_code == names.index(name)
        seg: list[list[np.ndarray]] = [[], [], [], [], []]
        for r in np.unique(s_rank[sel]).tolist():
            mine = sel & (s_rank == r)
            s, e, a, b = _segments(kind, s_t[mine], s_v[mine], max_gap_ns)
            for lst, v in zip(seg, (np.full(s.size, r, np.int64), s, e, a, b)):
                lst.append(v)
        sk, ss, se, sa, sb = (np.concatenate(x) if x else np.empty(0) for x in seg)
        integral, covered = integrate(sk, ss, se, sa, sb, c_rank, c_s, c_e)
        g_int = np.zeros(n_groups, np.float64)
        g_cov = np.zeros(n_groups, np.int64)
        np.add.at(g_int, inverse, integral)
        np.add.at(g_cov, inverse, covered)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = g_int / g_cov
        energy = (spec is not None and spec.unit in _ENERGY_UNITS)
        parts.append({"metric": np.full(n_groups, name, object), "covered": g_cov, "mean": mean,
                      "integral": g_int, "energy": np.full(n_groups, energy), "group": np.arange(n_groups)})
    return parts


def summary(ledger: Ledger, samples: Any, *, events: Any = None, span: Any = None) -> list[TelemetryRow]:
    """The telemetry figures of a run's summary: :func:`cell_metrics` of the whole job
    by (state, activity), one dict per group and metric (``state, activity, metric,
    duration_ns, covered_ns, unknown_ns, mean, energy_j``), groups with no covered ns
    left out. ``pau report`` prints these."""
    t = cell_metrics(ledger, samples, events=events, span=span, by=("state", "activity"))
    assert isinstance(t, pa.Table)
    rows: list[TelemetryRow] = [r for r in t.to_pylist() if r["covered_ns"]]
    return rows


# ---------------------------------------------------------------------------
# devices to ranks


@dataclass
class Attached:
    """Telemetry matched to a run's ranks (:func:`match_samples`).

    ``samples``: the samples table with the run's ranks (:data:`SAMPLES_SCHEMA`);
    ``devices``: per device, what the file says of it and its ``rank`` (None when it
    matched none); ``matched_by``: ``uuid``, ``bus_id``, ``index`` or ``devices`` (the
    mapping given); ``warnings`` and ``assumed`` (for ``run.metadata["assumed"]``)."""

    samples: pa.Table
    devices: list[dict[str, Any]]
    matched_by: str
    warnings: list[RunWarning] = field(default_factory=list)
    assumed: list[str] = field(default_factory=list)


def _device_label(d: Mapping[str, Any]) -> str:
    bits = [f"index {d['index']}" if d.get("index") is not None else None,
            f"UUID {d['uuid']}" if d.get("uuid") else None, f"bus {d['bus_id']}" if d.get("bus_id") else None,
            f"host {d['host']}" if d.get("host") else None,
            os.path.basename(str(d["source_file"])) if d.get("source_file") else None]
    return "device " + ", ".join(b for b in bits if b)


def match_devices(devices: pa.Table, ranks: Sequence[Mapping[str, Any]] | None, *,
                  mapping: Mapping[Any, int] | str | None = None) -> tuple[dict[int, int], str, list[str]]:
    """Which rank each telemetry device is: ``({device: rank}, matched_by, assumed)``.

    Parameters
    ----------
    devices : pyarrow.Table
        :attr:`pau.readers.telemetry.Telemetry.devices`.
    ranks : list of dict, optional
        The run's ranks (``run.metadata["ranks"]``): ``rank`` and what names its
        accelerator: ``uuid``, ``bus_id``, ``device`` (the GPU index), ``host``.
    mapping : dict or ``"index"``, optional
        An explicit mapping, key -> rank, a key being a UUID (``"GPU-..."``), a PCI
        bus id, an int (the GPU index) or ``(host or file name, index)``; or
        ``"index"``: each device's rank is its GPU index (one host).

    The rule, without a mapping: by UUID when both the ranks and the devices have
    UUIDs, else by PCI bus id when both have them, else by GPU index (the file must
    name each index once: one host). Two ranks claiming one device, or a key that
    names several devices, is ambiguous and refused.

    Raises
    ------
    pau.errors.OptionError
        An ambiguous or impossible match, naming the devices and ranks, and the fix.
    """
    devs = devices.to_pylist()
    if isinstance(mapping, str):
        if mapping != "index":
            raise OptionError(f"devices: expected a dict or 'index', got {mapping!r}")
        return {dev: i for i, dev in _unique_index(devs).items()}, "index", []
    if mapping is not None:
        out = _given_mapping(mapping, devs)
        _one_device_per_rank(out, devs)
        return out, "devices", []
    rk = [r for r in (ranks or []) if r.get("rank") is not None]
    if not rk or not any(r.get(k) is not None for r in rk for k in ("uuid", "bus_id", "device")):
        raise OptionError("samples: the run names no accelerator per rank (no UUID, bus id or GPU index in "
                          "metadata['ranks']), so the telemetry's devices cannot be matched to ranks. Fix: " + _FIX)
    for key in ("uuid", "bus_id"):
        if all(r.get(key) for r in rk) and all(d[key] for d in devs):
            return _match_by_name(key, rk, devs), key, []
    by_index = _unique_index(devs)
    out = {}
    claimed: dict[int, int] = {}
    for r in rk:
        if r.get("device") is None:
            continue
        dev = by_index.get(int(r["device"]))
        if dev is None:
            continue
        if dev in claimed and claimed[dev] != int(r["rank"]):
            raise OptionError(f"samples: ranks {claimed[dev]} and {r['rank']} both name GPU index {r['device']} "
                              "(ranks on several hosts, or processes sharing a GPU): which one the telemetry's "
                              f"{_device_label(devs[dev])} is cannot be told. Fix: " + _FIX)
        claimed[dev] = int(r["rank"])
        out[dev] = int(r["rank"])
    note = ("telemetry matched to ranks by GPU index: a trace's device index is the CUDA ordinal of its "
            "process, which differs from nvidia-smi's index when CUDA_VISIBLE_DEVICES or CUDA_DEVICE_ORDER "
            "renumber the GPUs (pass devices= to match by UUID)")
    return out, "index", [note]


_FIX = ("pass devices={key: rank} (key: a UUID, a PCI bus id, a GPU index or (host, index)), or "
        "devices='index' when each rank is the GPU of that index")


def _unique_index(devs: list[dict[str, Any]]) -> dict[int, int]:
    """{GPU index: device}; an index naming several devices (several hosts) is refused."""
    idx: dict[int, list[int]] = {}
    for d in devs:
        if d["index"] is not None:
            idx.setdefault(int(d["index"]), []).append(int(d["device"]))
    dup = {i: v for i, v in idx.items() if len(v) > 1}
    if dup:
        i, v = next(iter(sorted(dup.items())))
        raise OptionError(f"samples: GPU index {i} names {len(v)} devices ("
                          + "; ".join(_device_label(devs[k]) for k in v)
                          + "): several hosts or files, so an index does not say which. Fix: " + _FIX)
    return {i: v[0] for i, v in idx.items()}


def _given_mapping(mapping: Mapping[Any, int], devs: list[dict[str, Any]]) -> dict[int, int]:
    """{device: rank} from ``devices=``: each key must name exactly one device, once."""
    out: dict[int, int] = {}
    for key, rank in mapping.items():
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 0:
            raise OptionError(f"devices: rank {rank!r} for {key!r} is not a rank (an int >= 0)")
        hits = _devices_named(key, devs)
        if not hits:
            raise OptionError(f"devices: {key!r} names no device of the telemetry (it has: "
                              + "; ".join(_device_label(d) for d in devs) + ")")
        if len(hits) > 1:
            raise OptionError(f"devices: {key!r} names {len(hits)} devices ("
                              + "; ".join(_device_label(devs[h]) for h in hits) + "). Fix: name each by its "
                              "UUID, or by (host or file name, index)")
        if hits[0] in out:
            raise OptionError(f"devices: {_device_label(devs[hits[0]])} is given twice (ranks {out[hits[0]]} "
                              f"and {rank})")
        out[hits[0]] = int(rank)
    return out


def _devices_named(key: Any, devs: list[dict[str, Any]]) -> list[int]:
    """The devices a ``devices=`` key names: (host or file name, index), an index, a UUID or a bus id."""
    if isinstance(key, tuple) and len(key) == 2:
        return [d["device"] for d in devs if d["index"] == key[1] and key[0] in (
            d["host"], d["source_file"], os.path.basename(str(d["source_file"])))]
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return [d["device"] for d in devs if d["index"] == int(key)]
    if isinstance(key, str):
        u, bus = normal_uuid(key), normal_bus_id(key)
        return [d["device"] for d in devs if (u and d["uuid"] == u) or (bus and d["bus_id"] == bus)]
    raise OptionError(f"devices: key {key!r} is not a UUID, a bus id, an index or (host, index)")


def _match_by_name(key: str, rk: list[Mapping[str, Any]], devs: list[dict[str, Any]]) -> dict[int, int]:
    """{device: rank} by ``uuid`` or ``bus_id`` (both sides name every one); two ranks
    on one device are refused."""
    norm = normal_uuid if key == "uuid" else normal_bus_id
    by = {d[key]: int(d["device"]) for d in devs}
    out: dict[int, int] = {}
    claimed: dict[int, int] = {}
    for r in rk:
        dev = by.get(norm(r[key]) or "")
        if dev is None:
            continue
        if dev in claimed and claimed[dev] != int(r["rank"]):
            raise OptionError(f"samples: ranks {claimed[dev]} and {r['rank']} both run on "
                              f"{_device_label(devs[dev])} (several processes on one GPU): its samples "
                              "would count for both. Fix: " + _FIX)
        claimed[dev] = int(r["rank"])
        out[dev] = int(r["rank"])
    return out


def _one_device_per_rank(out: Mapping[int, int], devs: list[dict[str, Any]]) -> None:
    seen: dict[int, int] = {}
    for dev, rank in out.items():
        if rank in seen:
            raise OptionError(f"devices: rank {rank} is given two devices ({_device_label(devs[seen[rank]])}; "
                              f"{_device_label(devs[dev])}). Fix: one device per rank")
        seen[rank] = dev


def match_samples(telemetry: Telemetry, ranks: Sequence[Mapping[str, Any]] | None, *,
                  devices: Mapping[Any, int] | str | None = None) -> Attached:
    """The telemetry's samples with the run's ranks (see :func:`match_devices`).

    Devices that match no rank are left out, with the warning
    ``telemetry.devices_unmatched`` counting their samples; ranks with a device in the
    run's metadata but no telemetry get ``telemetry.ranks_without_samples``."""
    mapping, how, assumed = match_devices(telemetry.devices, ranks, mapping=devices)
    _one_device_per_rank(mapping, telemetry.devices.to_pylist())
    s = telemetry.samples
    dev = np.asarray(s["rank"], np.int64)
    lut = np.full(max(telemetry.devices.num_rows, 1), -1, np.int64)
    for d, r in mapping.items():
        lut[d] = r
    new = lut[dev] if dev.size else dev
    keep = new >= 0
    warnings: list[RunWarning] = []
    infos = []
    for d in telemetry.devices.to_pylist():
        infos.append({**d, "rank": mapping.get(int(d["device"]))})
    lost = [d for d in infos if d["rank"] is None and d["samples"]]
    if lost:
        warnings.append(RunWarning("telemetry.devices_unmatched", f"{len(lost)} telemetry devices match no rank "
                                   f"(matched by {how}); their {sum(d['samples'] for d in lost)} samples are left "
                                   "out: " + "; ".join(_device_label(d) for d in lost)))
    named = sorted({int(r["rank"]) for r in (ranks or []) if r.get("rank") is not None
                    and any(r.get(k) is not None for k in ("uuid", "bus_id", "device"))})
    missing = sorted(set(named) - set(mapping.values())) if how != "devices" else []
    if missing:
        warnings.append(RunWarning("telemetry.ranks_without_samples",
                                   f"ranks {', '.join(map(str, missing[:20]))}{' ...' if len(missing) > 20 else ''} "
                                   "have no telemetry device: their cells are unknown for every metric"))
    idx = np.flatnonzero(keep)
    t = s.take(pa.array(idx))
    t = t.set_column(0, pa.field("rank", pa.int32(), nullable=False), pa.array(new[idx].astype(np.int32), pa.int32()))
    order = np.lexsort((np.asarray(t["time_ns"]), np.asarray(t["metric"].combine_chunks().indices), new[idx]))
    t = t.take(pa.array(order)).cast(SAMPLES_SCHEMA)
    return Attached(t, infos, how, warnings, assumed)
