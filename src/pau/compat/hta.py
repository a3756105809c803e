"""Holistic Trace Analysis 0.5.0's figures, computed by pau on the same trace files.

``temporal_breakdown``, ``idle_time_breakdown`` and ``comm_comp_overlap`` return what
HTA 0.5.0's ``TraceAnalysis(trace_dir=...)`` followed by ``get_temporal_breakdown()``,
``get_idle_time_breakdown()`` and ``get_comm_comp_overlap()`` return, with the same
column names (``(us)`` spelled ``_us``), as pandas DataFrames (pandas is an optional
dependency, imported when these are called). The traces are read by pau's streaming
reader (:func:`pau.readers.kineto.read_kineto`'s parser); HTA's definitions are then
applied as HTA applies them, so that a team moving from HTA can check pau against
the numbers it knows:

* **Microseconds.** When any ``ts`` of a file is written with a fraction, HTA rounds
  every event inward to whole microseconds (start up, end down, as doubles), so events
  shorter than a microsecond can get a negative duration; otherwise it keeps the
  numbers as written.
* **The last profiler step is dropped.** When the traces hold two or more distinct
  ``ProfilerStep`` names, only device events launched (by correlation id) by a host
  event that starts before the last ``ProfilerStep`` starts are kept, and host events
  from then on are dropped.
* **What a kernel is.** Every remaining event with an integer ``args.stream`` other
  than -1 is a kernel (kernels, copies, fills, stream syncs, and even a host operator
  that records a stream), whatever its category.
* **Kinds by name only.** Communication: the name matches ``^nccl.*Kernel``. Compute:
  the name does not match ``^nccl.*Kernel``, ``.*Memcpy``, ``^Memset`` nor ``.*Sync``.
  The rest (copies, fills, syncs) is "non-compute".
* **The kernel span.** A rank's time is its first kernel start to its last kernel end.

``docs/kineto.md`` measures each of these against pau's exact figures on the samples.
Ranks are pau's (``distributedInfo.rank``, else the file name, else the first free
rank); HTA gives every file without ``distributedInfo`` rank 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from pau.errors import NoDeviceEventsError
from pau.readers._kineto_parse import _File
from pau.readers.kineto import _load_files

if TYPE_CHECKING:  # pandas is an optional extra (pau[pandas]): imported when a function runs
    import pandas

__all__ = ["comm_comp_overlap", "idle_time_breakdown", "temporal_breakdown"]

# HTA 0.5.0's kernel typing (hta.utils.utils), by name only.
_COMM = re.compile(r"^nccl.*Kernel")
_MEMORY = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
_NOT_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
_COMMUNICATION, _MEMORY_T, _COMPUTATION, _OTHER = 0, 1, 2, 3

# Categories of get_idle_time_breakdown's kernels.
_IDLE_CATS = ("kernel", "Kernel", "gpu_memset", "Memset", "gpu_memcpy", "Memcpy", "mtia_ccp_events")
# Device-wide syncs count as GPU events in HTA's filter although their stream is -1.
_DEVICE_SYNCS = ("Event Sync", "Context Sync")


def _kernel_type(name: str) -> int:
    if _COMM.match(name):
        return _COMMUNICATION
    if _MEMORY.match(name):
        return _MEMORY_T
    if not _NOT_COMPUTE.match(name):
        return _COMPUTATION
    return _OTHER


@dataclass
class _Rank:
    """One rank's events as HTA sees them after loading."""

    rank: int
    path: str
    ts: np.ndarray          # float64 us
    end: np.ndarray         # float64 us (ts + dur)
    stream: np.ndarray      # int64
    cat: np.ndarray         # str ids
    name: np.ndarray
    ktype: np.ndarray       # int8 per row (HTA kernel type of the name)
    runtime_ts: np.ndarray  # float64 us: ts of the launching host event, NaN if none
    strings: list[Any]


def _hta_times(f: _File) -> tuple[np.ndarray, np.ndarray]:
    """HTA's float64 (start, duration) in microseconds of every kept row, before
    alignment.

    The double of a decimal "ts" text is reproduced from the exact nanoseconds as
    q + r/1000 (q whole microseconds, r the rest): q is exact in a double and r/1000
    is one correctly rounded division, and the sum rounds like the text would (a
    double-rounding tie needs r/1000 to be a multiple of 1/8, which is exact).
    """
    ts_ns, dur_ns = f.rows["ts_ns"], f.rows["dur_ns"]
    q, r = np.divmod(ts_ns, 1000)
    ts = q.astype(np.float64) + r.astype(np.float64) / 1000.0
    dur = dur_ns.astype(np.float64) / 1000.0
    if f.meta["ts_fraction_syntax"] or f.meta["ts_missing"]:
        # A float "ts" column: HTA rounds starts up and ends down to whole us.
        end = np.floor(ts + dur)
        ts = np.ceil(ts)
        return ts, end - ts
    return ts, dur


def _ranks(trace_dir: Any, *, exact: bool = False, last_step: bool = False) -> list[_Rank]:
    """Each rank's events as HTA 0.5.0 keeps them.

    The private knobs undo one HTA definition at a time, to measure it (docs/kineto.md):
    ``exact`` keeps nanoseconds (times are then ns, not us, and never rounded);
    ``last_step`` keeps the last profiler step.
    """
    files = sorted(_load_files(trace_dir), key=lambda f: f.rank)
    # HTA's filter applies when all traces together name two or more ProfilerSteps.
    step_names: set[str] = set()
    for f in files:
        step_names.update(s for s in (f.strings[i] for i in np.unique(f.rows["name"])) if "ProfilerStep" in s)
    filtering = len(step_names) >= 2 and not last_step
    # HTA subtracts the earliest start of all ranks before any sum; the sums of its
    # doubles are exact only then, so do the same.
    if exact:
        origin_ns = min((int(f.rows["ts_ns"].min()) for f in files if f.rows["ts_ns"].size), default=0)
        times = [((f.rows["ts_ns"] - origin_ns).astype(np.float64), f.rows["dur_ns"].astype(np.float64))
                 for f in files]
    else:
        times = [_hta_times(f) for f in files]
    origin = min((float(t.min()) for t, _ in times if t.size), default=0.0)
    out = []
    for f, (ts, dur) in zip(files, times):
        rows, strings = f.rows, f.strings
        ts = ts - origin
        end = ts + dur
        stream, corr = rows["stream"], rows["correlation"]
        name = rows["name"]
        syncs = np.array([i for i, s in enumerate(strings) if s in _DEVICE_SYNCS], np.int32)
        gpu = ((stream >= 0) & (corr >= 0)) | np.isin(name, syncs)
        cpu = ~gpu
        # Launch time of each GPU row: the last host row with its correlation id.
        with_corr = corr != -1
        hc = np.flatnonzero(cpu & with_corr)
        if hc.size:
            order = np.argsort(corr[hc], kind="stable")
            keys = corr[hc][order]
            # last occurrence of each key among host rows (file order)
            last = np.r_[keys[1:] != keys[:-1], True]
            keys_u, rows_u = keys[last], hc[order][last]
            g = np.flatnonzero(gpu & with_corr)
            pos = np.searchsorted(keys_u, corr[g])
            hit = pos < keys_u.size
            hit[hit] = keys_u[pos[hit]] == corr[g][hit]
            runtime_row = np.full(name.size, -1, np.int64)
            runtime_row[g[hit]] = rows_u[pos[hit]]
        else:
            runtime_row = np.full(name.size, -1, np.int64)
        if filtering:
            is_step = np.isin(name, np.array([i for i, s in enumerate(strings) if s in step_names], np.int32))
            step_ts = ts[cpu & is_step]
            last_start = step_ts.max() if step_ts.size else np.nan
            cpu_keep = cpu & (ts < last_start)
            # GPU rows survive when a kept host row has their correlation id, once per
            # such host row (HTA merges on the id).
            kc, counts = np.unique(corr[cpu_keep], return_counts=True)
            g = np.flatnonzero(gpu)
            pos = np.searchsorted(kc, corr[g])
            hit = pos < kc.size
            hit[hit] = kc[pos[hit]] == corr[g][hit]
            reps = np.zeros(g.size, np.int64)
            reps[hit] = counts[pos[hit]]
            keep = np.concatenate([np.repeat(g, reps), np.flatnonzero(cpu_keep)])
            kept_host = np.zeros(name.size, bool)
            kept_host[cpu_keep] = True
        else:
            keep = np.arange(name.size)
            kept_host = cpu.copy()
        rt_row = runtime_row[keep]
        rt_ok = (rt_row >= 0) & kept_host[np.maximum(rt_row, 0)]
        rt = np.where(rt_ok, ts[np.maximum(rt_row, 0)], np.nan)
        uniq = np.unique(name[keep])
        types = np.full(len(strings), _OTHER, np.int8)
        for i in uniq.tolist():
            types[i] = _kernel_type(strings[i])
        out.append(_Rank(f.rank, f.path, ts[keep], end[keep], stream[keep], rows["cat"][keep], name[keep],
                         types[name[keep]], rt, strings))
    return out


def _merge(ts: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """HTA's merge_kernel_intervals: sort by start; a row opens a new group when it
    starts after every earlier row's end; each group spans min start .. max end."""
    if ts.size == 0:
        return ts, end
    order = np.argsort(ts, kind="stable")
    t, e = ts[order], end[order]
    reach = np.maximum.accumulate(e)
    new = np.r_[False, t[1:] > reach[:-1]]
    starts = np.flatnonzero(np.r_[True, new[1:]])
    g_ts = np.minimum.reduceat(t, starts)
    g_end = np.maximum.reduceat(e, starts)
    order = np.argsort(g_ts, kind="stable")
    return g_ts[order], g_end[order]


def _kernels(r: _Rank) -> np.ndarray:
    out: np.ndarray = r.stream != -1
    return out


def _no_kernels(r: _Rank, what: str) -> NoDeviceEventsError:
    return NoDeviceEventsError(
        r.path, f"rank {r.rank} has no kernels left for HTA's {what} (no event with an args.stream "
        "after HTA's filter of the last profiler step); HTA 0.5.0 fails on such a rank too",
        "leave CPU-only traces out of the directory, or use pau.readers.kineto.read_kineto with "
        "on_invalid='quarantine'")


def _pandas() -> ModuleType:
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - pandas is in the test extra
        raise ImportError("pau.compat.hta returns pandas DataFrames: pip install 'pau[pandas]'") from exc
    mod: ModuleType = pd
    return mod


def temporal_breakdown(trace_dir: Any, **_knobs: Any) -> pandas.DataFrame:
    """HTA 0.5.0's ``get_temporal_breakdown()``.

    Returns
    -------
    pandas.DataFrame
        ``rank, idle_time_us, compute_time_us, non_compute_time_us, kernel_time_us,
        idle_time_pctg, compute_time_pctg, non_compute_time_pctg``: times in
        microseconds over the kernel span (first kernel start to last kernel end,
        without the last profiler step), percentages of it rounded to 2 decimals.
    """
    pd = _pandas()
    rows = []
    for r in _ranks(trace_dir, **_knobs):
        k = _kernels(r)
        if not k.any():
            raise _no_kernels(r, "temporal breakdown")
        g_ts, g_end = _merge(r.ts[k], r.end[k])
        kernel_time = g_end[-1] - g_ts[0]
        idle = kernel_time - (g_end.sum() - g_ts.sum())
        comp = k & (r.ktype == _COMPUTATION)
        c_ts, c_end = _merge(r.ts[comp], r.end[comp])
        compute = c_end.sum() - c_ts.sum()
        rows.append((r.rank, idle, compute, kernel_time - compute - idle, kernel_time))
    df = pd.DataFrame(rows, columns=["rank", "idle_time_us", "compute_time_us", "non_compute_time_us",
                                     "kernel_time_us"])
    for col in ("idle_time_us", "compute_time_us", "non_compute_time_us", "kernel_time_us"):
        df[col] = df[col].astype("float64")
    for part in ("idle_time", "compute_time", "non_compute_time"):
        df[f"{part}_pctg"] = (100 * (df[f"{part}_us"] / df["kernel_time_us"])).round(2)
    return df


def comm_comp_overlap(trace_dir: Any) -> pandas.DataFrame:
    """HTA 0.5.0's ``get_comm_comp_overlap()``.

    Returns
    -------
    pandas.DataFrame
        ``rank, comp_comm_overlap_pctg``: the time communication kernels (by name) run
        under computation kernels, in percent of their time, rounded to 2 decimals; NaN
        for a rank without communication kernels (0/0, as in HTA).
    """
    pd = _pandas()
    rows = []
    for r in _ranks(trace_dir):
        k = _kernels(r)
        comm = k & (r.ktype == _COMMUNICATION)
        comp = k & (r.ktype == _COMPUTATION)
        m_ts, m_end = _merge(r.ts[comm], r.end[comm])
        p_ts, p_end = _merge(r.ts[comp], r.end[comp])
        # Walk the starts (+1 comm, +2 comp) and ends in time order; time spent at a
        # running total of 3 is overlap.
        times = np.concatenate([m_ts, m_end, p_ts, p_end])
        status = np.concatenate([np.full(m_ts.size, 1), np.full(m_end.size, -1),
                                 np.full(p_ts.size, 2), np.full(p_end.size, -2)])
        order = np.argsort(times, kind="stable")
        t, running = times[order], np.cumsum(status[order])
        both = float(np.diff(t)[running[:-1] == 3].sum()) if t.size else 0.0
        total = float((m_end - m_ts).sum())
        ratio = both / total if total else np.nan
        rows.append((r.rank, ratio))
    df = pd.DataFrame(rows, columns=["rank", "comp_comm_overlap_ratio"])
    df["comp_comm_overlap_pctg"] = (100 * df["comp_comm_overlap_ratio"]).round(2)
    return df[["rank", "comp_comm_overlap_pctg"]]


def idle_time_breakdown(trace_dir: Any, ranks: Sequence[int] | None = None,
                        streams: Sequence[int] | None = None, consecutive_kernel_delay: float = 30) -> pandas.DataFrame:
    """HTA 0.5.0's ``get_idle_time_breakdown()`` (its first DataFrame).

    Per rank and stream, the gaps between consecutive kernels (kernels, copies, fills
    and MTIA events) are ``host_wait`` when the next kernel was launched after the
    previous one ended, ``kernel_wait`` when shorter than ``consecutive_kernel_delay``
    (compared with microseconds, as HTA does although its documentation says ns), and
    ``other`` otherwise.

    Parameters
    ----------
    ranks : sequence of int, optional
        Default: every rank (HTA's default is rank 0 only).
    streams : sequence of int, optional
        Default: every stream, in order of appearance.

    Returns
    -------
    pandas.DataFrame
        ``rank, stream, idle_category, idle_time, idle_time_ratio`` (idle time in
        microseconds; both rounded to 2 decimals, as HTA does), and a column HTA does
        not have, ``negative_gap_time``: the part of ``idle_time`` that is negative gaps
        (microseconds, <= 0; 0.0 when there is none). HTA sums a kernel that starts
        before the previous one on its stream ends as a negative gap, so an
        ``idle_time`` can be below zero; pau keeps HTA's figure and flags it here: idle
        time without such gaps is ``idle_time - negative_gap_time``.
    """
    pd = _pandas()
    out = []
    for r in _ranks(trace_dir):
        if ranks is not None and r.rank not in ranks:
            continue
        idle_cats = np.array([i for i, s in enumerate(r.strings) if s in _IDLE_CATS], np.int32)
        k = (r.stream != -1) & np.isin(r.cat, idle_cats)
        if not k.any():
            raise _no_kernels(r, "idle time breakdown")
        ks = r.stream[k]
        _, first = np.unique(ks, return_index=True)
        order_streams = ks[np.sort(first)].tolist() if not streams else list(streams)
        for s in order_streams:
            sel = np.flatnonzero(k & (r.stream == s))
            sel = sel[np.argsort(r.ts[sel], kind="stable")]
            ts, end, rt = r.ts[sel], r.end[sel], r.runtime_ts[sel]
            prev_end = np.r_[np.nan, end[:-1]]
            gap = ts - prev_end
            with np.errstate(invalid="ignore"):
                host = rt > prev_end
                kernel = ~host & (gap < consecutive_kernel_delay)
            cat = np.where(host, 0, np.where(kernel, 1, 2))
            sums = {c: float(np.nansum(gap[cat == c])) for c in (0, 1, 2) if (cat == c).any()}
            # HTA sums every gap, negative ones too (a kernel starting before the previous
            # one on its stream ends: overlap, not idle time). Keep its figure, and say
            # how much of it is such negative gaps.
            with np.errstate(invalid="ignore"):
                negative = {c: float(np.nansum(np.where(gap < 0, gap, 0.0)[cat == c])) for c in sums}
            total = sum(sums.values())
            for c, v in sums.items():
                with np.errstate(invalid="ignore", divide="ignore"):
                    ratio = v / total if total else np.nan
                out.append((r.rank, int(s), ("host_wait", "kernel_wait", "other")[c], v, ratio, negative[c]))
    df = pd.DataFrame(out, columns=["rank", "stream", "idle_category", "idle_time", "idle_time_ratio",
                                    "negative_gap_time"])
    df["idle_time"] = df["idle_time"].round(2)
    df["idle_time_ratio"] = df["idle_time_ratio"].round(2)
    df["negative_gap_time"] = df["negative_gap_time"].round(2)
    return df
