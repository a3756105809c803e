"""Co-location and interference (DESIGN §4): the intervals in which jobs share a device
(:func:`colocated`), and how much sharing slowed each job and the useful output it cost
(:func:`interference`).

Choices where the design is silent: ``docs/analysis.md``. Time is ``int64`` ns,
intervals half-open ``[start_ns, end_ns)``; overlaps are exact integers, rates and
ratios floats derived at the edge; a ratio with a zero denominator is None, never NaN.
Inputs are never modified.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine._input import _column, as_table, int_values, null_mask, time_values
from pau.engine.types import InterferenceSummary
from pau.errors import InvalidRowError, PauError, SchemaError
from pau.figures._common import _NS_PER_S, _fmt, _ratio

__all__ = ["colocated", "Interference", "interference"]


# ---------------------------------------------------------------------------
# co-location and interference


def _jobs(t: pa.Table, table: str, fix: str) -> tuple[np.ndarray, pa.Array]:
    """The ``job`` column as codes, refusing nulls."""
    job = _column(t, "job", table)
    if job.null_count:
        raise InvalidRowError(table, "job", int(np.flatnonzero(null_mask(job))[0]), "null job", fix,
                              job.null_count)
    return _job_codes(job)


def _job_codes(col: Any) -> tuple[np.ndarray, pa.Array]:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    enc = pc.dictionary_encode(col)
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    # renumber so that code order is value order (jobs come out sorted)
    order = np.asarray(pc.sort_indices(enc.dictionary), np.int64)
    remap = np.empty(order.size, np.int64)
    remap[order] = np.arange(order.size)
    return remap[codes], enc.dictionary.take(pa.array(order))


def colocated(allocations: Any) -> pa.Table:
    """Intervals where two or more jobs share a rank (device).

    Parameters
    ----------
    allocations : table-like
        ``job, rank, start_ns, end_ns``: which job held which device when
        (half-open; a job may have several rows on a rank).

    Returns
    -------
    pyarrow.Table
        ``rank, start_ns, end_ns, jobs, n_jobs`` sorted by ``rank, start_ns``;
        ``jobs`` is the sorted list of distinct jobs sharing the rank throughout
        the interval. Adjacent pieces with the same jobs are merged, so each row is
        a maximal interval.
    """
    t = as_table(allocations, "allocations")
    jc, jobs = _jobs(t, "allocations", "give every allocation its job")
    rank, rnull = int_values(t, "rank", "allocations")
    s, snull = time_values(t, "start_ns", "allocations")
    e, enull = time_values(t, "end_ns", "allocations")
    for name, bad, why in (("rank", rnull, "null rank"), ("start_ns", snull, "null start_ns"),
                           ("end_ns", enull, "null end_ns"), ("end_ns", e < s, "end_ns before start_ns")):
        if bad.any():
            raise InvalidRowError("allocations", name, int(np.flatnonzero(bad)[0]), why,
                                  "give complete allocations with start_ns <= end_ns", int(bad.sum()))
    # Elementary pieces per rank: between consecutive distinct boundaries.
    br = np.concatenate([rank, rank])
    bt = np.concatenate([s, e])
    o = np.lexsort((bt, br))
    br, bt = br[o], bt[o]
    keep = np.ones(br.size, bool)
    keep[1:] = (br[1:] != br[:-1]) | (bt[1:] != bt[:-1])
    br, bt = br[keep], bt[keep]
    # boundary index of each allocation's start and end (within its rank: ranks
    # sort first, so a global searchsorted on (rank, time) is enough)
    key_b = np.rec.fromarrays([br, bt])
    i0 = np.searchsorted(key_b, np.rec.fromarrays([rank, s]))
    i1 = np.searchsorted(key_b, np.rec.fromarrays([rank, e]))
    cnt = i1 - i0  # pieces covered: piece p spans boundary p .. p+1
    seg = np.repeat(i0, cnt) + (np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    sj = np.repeat(jc, cnt)
    empty = pa.table({"rank": pa.array([], pa.int32()), "start_ns": pa.array([], pa.int64()),
                      "end_ns": pa.array([], pa.int64()),
                      "jobs": pa.array([], pa.list_(jobs.type)), "n_jobs": pa.array([], pa.int64())})
    if seg.size == 0:
        return empty
    o = np.lexsort((sj, seg))
    seg, sj = seg[o], sj[o]
    u = np.ones(seg.size, bool)
    u[1:] = (seg[1:] != seg[:-1]) | (sj[1:] != sj[:-1])
    seg, sj = seg[u], sj[u]
    pieces, first, njobs = np.unique(seg, return_index=True, return_counts=True)
    shared = njobs >= 2
    if not shared.any():
        return empty
    pieces, first, njobs = pieces[shared], first[shared], njobs[shared]
    width = int(njobs.max())
    mat = np.full((pieces.size, width), -1, np.int64)
    col_idx = np.arange(width)
    take = first[:, None] + col_idx[None, :]
    valid = col_idx[None, :] < njobs[:, None]
    mat[valid] = sj[take[valid]]
    p_rank, p_start, p_end = br[pieces], bt[pieces], bt[pieces + 1]
    # merge adjacent pieces on the same rank with the same jobs
    new = np.ones(pieces.size, bool)
    new[1:] = ((p_rank[1:] != p_rank[:-1]) | (p_start[1:] != p_end[:-1]) | np.any(mat[1:] != mat[:-1], axis=1))
    gs = np.flatnonzero(new)
    ge = np.concatenate([gs[1:], [pieces.size]]) - 1
    m = mat[gs]
    nj = njobs[gs]
    flat = m[m >= 0]
    offsets = np.concatenate([[0], np.cumsum(nj)]).astype(np.int32)
    job_values = jobs.take(pa.array(flat))
    return pa.table({"rank": pa.array(p_rank[gs], pa.int32()), "start_ns": pa.array(p_start[gs], pa.int64()),
                     "end_ns": pa.array(p_end[ge], pa.int64()),
                     "jobs": pa.ListArray.from_arrays(pa.array(offsets), job_values),
                     "n_jobs": pa.array(nj, pa.int64())})


@dataclass
class Interference:
    """What :func:`interference` returns.

    Attributes
    ----------
    table : pyarrow.Table
        Per job: ``job, colocated_ns, progress, rate_per_s, isolated_rate_per_s,
        isolated_rate_source, normalized_progress, slowdown, lost_output`` and, with
        an ``slo_attainment`` column, ``slo_attainment_colocated,
        slo_attainment_isolated, slo_attainment_loss``.
    """

    table: pa.Table
    _summary: dict[str, Any] = field(default_factory=dict, repr=False)

    def summary(self) -> InterferenceSummary:
        """``jobs``, ``system_throughput`` (sum of normalized progress),
        ``fairness`` (min / max normalized progress), ``lost_output`` (sum)."""
        return cast(InterferenceSummary, dict(self._summary))

    def render(self) -> str:
        s = self.summary()
        lines = [f"interference: {s['jobs']} jobs, system throughput {_fmt(s['system_throughput'])}, "
                 f"fairness {_fmt(s['fairness'])}, lost output {_fmt(s['lost_output'])}",
                 f"{'job':>12} {'norm. progress':>15} {'slowdown':>9} {'lost output':>12}"]
        for r in self.table.to_pylist():
            lines.append(f"{str(r['job']):>12} {_fmt(r['normalized_progress']):>15} {_fmt(r['slowdown']):>9} "
                         f"{_fmt(r['lost_output']):>12}")
        return "\n".join(lines)


def _overlap_with(s: np.ndarray, e: np.ndarray, ws: np.ndarray, we: np.ndarray) -> np.ndarray:
    """ns of each [s, e) covered by the union of the intervals [ws, we)."""
    if ws.size == 0:
        return np.zeros(s.size, np.int64)
    o = np.argsort(ws, kind="stable")
    ws, we = ws[o], we[o]
    run_end = np.maximum.accumulate(we)
    new = np.ones(ws.size, bool)
    new[1:] = ws[1:] > run_end[:-1]
    gs = np.flatnonzero(new)
    ms = ws[gs]
    me = np.maximum.reduceat(we, gs)
    cum = np.concatenate([[0], np.cumsum(me - ms)])

    def covered_before(x: np.ndarray) -> np.ndarray:  # union length in (-inf, x)
        i = np.searchsorted(ms, x, side="right")  # merged intervals starting at or before x
        full = cum[np.maximum(i - 1, 0)]
        part = np.where(i > 0, np.minimum(x, me[np.maximum(i - 1, 0)]) - ms[np.maximum(i - 1, 0)], 0)
        return np.where(i > 0, full + part, 0)

    out: np.ndarray = covered_before(e) - covered_before(s)
    return out


def interference(progress: Any, isolated_rate: Mapping[str, float] | None = None, *, windows: Any = None) -> Interference:
    """How much co-location slowed each job, and the useful output it cost.

    Parameters
    ----------
    progress : table-like
        ``job, start_ns, end_ns, progress``: useful output (steps, accepted
        requests) of each job in each window; optional ``colocated`` (bool: the
        window was shared) and ``slo_attainment`` (0-1, of an interactive job).
    isolated_rate : dict, optional
        ``{job: progress per second when running alone}``. Jobs missing from it are
        measured from their windows that were not co-located.
    windows : table-like, optional
        Co-location intervals, e.g. :func:`colocated`'s output (``start_ns, end_ns,
        jobs``). A progress window of job ``j`` is co-located when it lies inside the
        intervals listing ``j``, isolated when it does not touch them; a window that
        is partly co-located raises (cut the windows at the interval boundaries).
        Without ``windows`` or a ``colocated`` column every window is co-located.

    Returns
    -------
    Interference
        Per job (over its co-located windows, ``T`` their total seconds, ``P`` the
        progress in them, ``r`` the isolated rate): ``normalized_progress = (P/T)/r``,
        ``slowdown = 1 / normalized_progress``, ``lost_output = r*T - P``; with
        ``slo_attainment``, attainment co-located and isolated (window-time
        weighted means) and their difference. Summary: system throughput = sum of
        normalized progress, fairness = min / max normalized progress.
    """
    t = as_table(progress, "progress")
    jc, jobs = _jobs(t, "progress", "give every window its job")
    s, e, prog = _progress_windows(t)
    dur = e - s
    co = _colocated_windows(t, windows, jc, jobs, s, e)
    nj = len(jobs)
    T = np.zeros(nj, np.int64)
    np.add.at(T, jc[co], dur[co])
    P = np.zeros(nj)
    np.add.at(P, jc[co], prog[co])
    Ti = np.zeros(nj, np.int64)
    np.add.at(Ti, jc[~co], dur[~co])
    Pi = np.zeros(nj)
    np.add.at(Pi, jc[~co], prog[~co])
    iso, src = _isolated_rates(jobs.to_pylist(), isolated_rate, Ti, Pi)
    rate = [None if T[j] == 0 else P[j] * _NS_PER_S / T[j] for j in range(nj)]
    norm = [None if (r := rate[j]) is None else _ratio(r, iso[j]) for j in range(nj)]
    slow = [None if x is None else _ratio(1.0, x) for x in norm]
    lost = [iso[j] * T[j] / _NS_PER_S - P[j] for j in range(nj)]
    cols = {"job": jobs, "colocated_ns": pa.array(T, pa.int64()), "progress": pa.array(P, pa.float64()),
            "rate_per_s": pa.array(rate, pa.float64()), "isolated_rate_per_s": pa.array(iso, pa.float64()),
            "isolated_rate_source": pa.array(src, pa.string()),
            "normalized_progress": pa.array(norm, pa.float64()), "slowdown": pa.array(slow, pa.float64()),
            "lost_output": pa.array(lost, pa.float64())}
    if "slo_attainment" in t.schema.names:
        cols.update(_slo_attainment(t, jc, nj, dur, co))
    vals = [x for x in norm if x is not None]
    summary = {"jobs": nj, "system_throughput": float(sum(vals)) if vals else None,
               "fairness": (_ratio(min(vals), max(vals)) if vals else None),
               "lost_output": float(sum(lost))}
    return Interference(pa.table(cols), summary)


def _progress_windows(t: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The progress windows' start, end (int64 ns) and progress (float64), every row checked."""
    s, snull = time_values(t, "start_ns", "progress")
    e, enull = time_values(t, "end_ns", "progress")
    pcol = _column(t, "progress", "progress")
    if not (pa.types.is_integer(pcol.type) or pa.types.is_floating(pcol.type)):
        raise SchemaError("progress", "progress", f"has type {pcol.type}, not a number",
                          "give progress as steps or accepted requests")
    pnull = null_mask(pcol)
    prog = pcol.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False)
    for name, bad, why in (("start_ns", snull, "null start_ns"), ("end_ns", enull, "null end_ns"),
                           ("progress", pnull, "null progress"), ("end_ns", e < s, "end_ns before start_ns"),
                           ("progress", prog < 0, "negative progress")):
        if bad.any():
            raise InvalidRowError("progress", name, int(np.flatnonzero(bad)[0]), why,
                                  "give complete windows with start_ns <= end_ns and progress >= 0",
                                  int(bad.sum()))
    return s, e, prog


def _colocated_windows(t: pa.Table, windows: Any, jc: np.ndarray, jobs: pa.Array, s: np.ndarray,
                       e: np.ndarray) -> np.ndarray:
    """Which progress windows were co-located: the ``colocated`` column, else inside the
    co-location ``windows`` listing the job (partly inside raises), else all of them."""
    n = t.num_rows
    if "colocated" in t.schema.names:
        cc = _column(t, "colocated", "progress")
        if not pa.types.is_boolean(cc.type) or cc.null_count:
            raise SchemaError("progress", "colocated", "is not a bool column without nulls",
                              "give True for shared windows, False for isolated ones")
        co: np.ndarray = cc.to_numpy(zero_copy_only=False).astype(bool)
        return co
    if windows is None:
        return np.ones(n, bool)
    w = as_table(windows, "windows")
    wl = _column(w, "jobs", "windows")
    ws, _ = time_values(w, "start_ns", "windows")
    we, _ = time_values(w, "end_ns", "windows")
    lens = pc.list_value_length(wl).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    flat = pc.list_flatten(wl)
    if flat.type != jobs.type:
        flat = flat.cast(jobs.type)
    fj = pc.index_in(flat, value_set=jobs).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    fs, fe = np.repeat(ws, lens), np.repeat(we, lens)
    covered = np.zeros(n, np.int64)
    for j in np.unique(jc):  # one pass per job, not per row
        rows = np.flatnonzero(jc == j)
        sel = fj == j
        covered[rows] = _overlap_with(s[rows], e[rows], fs[sel], fe[sel])
    dur = e - s
    partial = (covered > 0) & (covered < dur)
    if partial.any():
        raise InvalidRowError("progress", "start_ns", int(np.flatnonzero(partial)[0]),
                              "window is partly co-located",
                              "cut progress windows at the co-location boundaries", int(partial.sum()))
    inside: np.ndarray = (covered > 0) & (covered == dur)
    return inside


def _isolated_rates(names: list[Any], isolated_rate: Mapping[str, float] | None, Ti: np.ndarray,
                    Pi: np.ndarray) -> tuple[list[float], list[str]]:
    """Each job's isolated rate (progress per second) and where it came from: ``given``,
    or ``measured`` over its isolated windows (none: raises)."""
    given = {} if isolated_rate is None else dict(isolated_rate)
    iso, src = [], []
    for j, name in enumerate(names):
        if name in given:
            v = given[name]
            if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
                raise PauError(f"isolated_rate: {name!r} = {v!r}. Fix: give progress per second >= 0")
            iso.append(float(v))
            src.append("given")
        elif Ti[j] > 0:
            iso.append(float(Pi[j] * _NS_PER_S / Ti[j]))
            src.append("measured")
        else:
            raise PauError(f"isolated_rate: job {name!r} has no isolated rate and never ran alone. Fix: give "
                           f"isolated_rate={{{name!r}: progress per second}} or windows where it ran alone")
    return iso, src


def _slo_attainment(t: pa.Table, jc: np.ndarray, nj: int, dur: np.ndarray, co: np.ndarray) -> dict[str, pa.Array]:
    """SLO attainment per job, window-time weighted, co-located and isolated, and the loss."""
    sc = _column(t, "slo_attainment", "progress")
    sv = sc.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)
    has = ~null_mask(sc)

    def wmean(mask: np.ndarray) -> list[float | None]:
        num = np.zeros(nj)
        den = np.zeros(nj, np.int64)
        np.add.at(num, jc[mask], sv[mask] * dur[mask])
        np.add.at(den, jc[mask], dur[mask])
        return [None if den[j] == 0 else num[j] / den[j] for j in range(nj)]

    a_co, a_iso = wmean(co & has), wmean(~co & has)
    return {"slo_attainment_colocated": pa.array(a_co, pa.float64()),
            "slo_attainment_isolated": pa.array(a_iso, pa.float64()),
            "slo_attainment_loss": pa.array([None if x is None or y is None else y - x
                                             for x, y in zip(a_co, a_iso)], pa.float64())}
