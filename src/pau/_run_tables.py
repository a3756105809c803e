"""The tables of a run from its readers' output and its files: a trace's steps made a
lifecycle, the readers' warnings, the clocks' check, the quarantine, pau's run layout's
table files and events, and what falls outside the accountable time
(:func:`outside_accountable`, one of the figures of :func:`pau.run.run_figures`).
:mod:`pau.run` builds its :class:`pau.run.Run` from them.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine import io as _io
from pau.engine._input import spans_of
from pau.engine._sweep import wide_ranks
from pau.engine.ledger import Ledger
from pau.engine.types import QUARANTINE_SCHEMA, OutsideAccountable, RunWarning
from pau.engine.vocab import LIFECYCLE_SCHEMA
from pau.errors import PauError
from pau.figures import align as _align
from pau.figures._common import _one_job

#: The tables of a run, in the order they are written.
TABLES = ("events", "lifecycle", "spans", "requests", "samples", "host", "quarantine")


def outside_accountable(events: pa.Table | None, led: Ledger | None) -> OutsideAccountable | None:
    """Events of a lifecycle ledger that lie (partly) outside their rank's accountable
    time: their count, the ns outside, and the ranks. The ledger counts only
    accountable time, so this is what it left out. None without both tables."""
    if events is None or led is None or led.intervals is None:
        return None
    iv = led.intervals
    _one_job(iv, "events outside accountable time")  # matched by rank: two jobs' rank 0 would be one
    rank = np.asarray(events["rank"], np.int64)
    start = np.asarray(events["start_ns"], np.int64)
    end = np.asarray(events["end_ns"], np.int64)
    i_rank = np.asarray(iv["rank"], np.int64)
    i_start = np.asarray(iv["start_ns"], np.int64)
    i_end = np.asarray(iv["end_ns"], np.int64)
    n_events, n_ns, ranks = 0, 0, []
    for r in np.unique(rank).tolist():
        sel = rank == r
        s, e = start[sel], end[sel]
        mine = i_rank == r
        # The rank's accountable time: disjoint intervals, in start order.
        a_s, a_e = i_start[mine], i_end[mine]
        order = np.argsort(a_s, kind="stable")
        a_s, a_e = a_s[order], a_e[order]
        prefix = np.concatenate([[0], np.cumsum(a_e - a_s)])

        def covered_before(t: np.ndarray) -> np.ndarray:
            """Accountable ns of this rank before each instant t (exact)."""
            k = np.searchsorted(a_s, t, "right")  # intervals starting at or before t
            last = np.maximum(k - 1, 0)
            partial = np.where(k > 0, np.minimum(t, a_e[last]) - a_s[last], 0) if a_s.size else 0
            return prefix[np.maximum(k - 1, 0)] * (k > 0) + partial

        outside = (e - s) - (covered_before(e) - covered_before(s)) if a_s.size else (e - s)
        # A zero-length event covers no time; it is outside when no interval holds it.
        point = e == s
        if point.any():
            k = np.searchsorted(a_s, s[point], "right") - 1
            held = (k >= 0) & (s[point] < a_e[np.maximum(k, 0)]) if a_s.size else np.zeros(k.size, bool)
            flag = np.asarray(outside > 0)
            flag[np.flatnonzero(point)] = ~held
        else:
            flag = np.asarray(outside > 0)
        if flag.any():
            n_events += int(flag.sum())
            n_ns += int(np.asarray(outside)[flag].sum())
            ranks.append(int(r))
    return {"events": n_events, "ns": n_ns, "ranks": ranks}


def _trace_lifecycle(steps: pa.Table, spans: pa.Table) -> pa.Table | None:
    """A profiler trace's steps made into a lifecycle the ledger accepts: each rank is
    accountable over its span, which is one completed attempt (attempt 0) of it."""
    if steps is None or steps.num_rows == 0:
        return None
    n = spans.num_rows
    null64 = pa.nulls(n, pa.int64())
    rank = spans["rank"].combine_chunks()
    start, end = spans["start_ns"].combine_chunks(), spans["end_ns"].combine_chunks()

    def records(record: str, kind: pa.Array) -> pa.Table:
        return pa.table({
            "record": pa.array([record] * n, pa.string()), "attempt": pa.array(np.zeros(n, np.int32)),
            "rank": rank, "start_ns": start, "end_ns": end, "step": null64, "block_end_ns": null64,
            "durable_ns": null64, "ok": pa.nulls(n, pa.bool_()), "kind": kind, "tokens": null64,
        }, schema=LIFECYCLE_SCHEMA)

    head = [records("accountable", pa.nulls(n, pa.string())),
            records("attempt", pa.array(["completed"] * n, pa.string()))]
    return pa.concat_tables(head + [steps.cast(LIFECYCLE_SCHEMA)])


_ASSUMED_TRACE = ("each rank is accountable over its profiled window (spans), one completed attempt: "
                  "every profiled step counts as preserved work (a profiler trace records no "
                  "checkpoints or failures)")


def _reader_warnings(fmt: str, messages: Sequence[str]) -> list[RunWarning]:
    """The reader's warnings (each a RunWarning with its code; a plain message gets
    the format's generic code)."""
    return [m if isinstance(m, RunWarning) else RunWarning(f"{fmt}.reader", str(m)) for m in messages]


#: Ranks whose collectives end this far apart, read without ``align=``, are on clocks
#: that disagree (docs/align.md). A collective ends on all its ranks within a kernel's
#: tail of each other (the real 8-host DLRM sample: within 5 µs), whoever arrived late,
#: so the ends' offset measures the clocks and not straggling; NTP keeps hosts of one
#: cluster within about a millisecond, PTP within a microsecond. 10 ms is ten times
#: NTP's error and far below the seconds of unsynchronised hosts, whose offsets the
#: ledger would count as waits for stragglers.
CLOCK_SKEW_NS = 10_000_000


def _clock_skew(events: pa.Table, path: str) -> RunWarning | None:
    """``align.clocks_apart`` when some rank's collectives end more than
    :data:`CLOCK_SKEW_NS` (and more than the anchors' own spread) from the lowest
    rank's: its clock is off, and ``align`` would put it right."""
    if pc.count_distinct(events["rank"]).as_py() < 2:
        return None
    a = _align.offsets(events)
    far = [r for r in a.table.to_pylist() if r["offset_ns"] is not None and abs(r["offset_ns"]) > CLOCK_SKEW_NS
           and abs(r["offset_ns"]) > r["uncertainty_ns"]]
    if not far:
        return None
    worst = max(far, key=lambda r: abs(r["offset_ns"]))
    shown = ", ".join(f"rank {r['rank']} {r['offset_ns'] / 1e9:+.3f} s" for r in far[:8])
    return RunWarning("align.clocks_apart", f"{path}: the collectives the ranks share end up to "
                      f"{abs(worst['offset_ns']) / 1e9:.3f} s apart on their clocks ({shown}{' ...' if len(far) > 8 else ''}, "
                      f"against rank {a.reference}; a collective ends together on every rank, so their clocks "
                      f"differ by that much): read as it is, the offsets count as waits for stragglers. Fix: "
                      "read with align='collectives' (pau report --align collectives)")


def _quarantine(table: pa.Table) -> pa.Table | None:
    """A reader's quarantine as the run keeps it: the reader's table as it is (it begins
    with :data:`pau.engine.types.QUARANTINE_SCHEMA`, ``source_file, location, reason``, then
    the reader's own columns); None when nothing was set aside."""
    if table.num_rows == 0:
        return None
    if table.schema.names[:3] != QUARANTINE_SCHEMA.names:
        raise PauError(f"quarantine with columns {table.column_names}: a run's quarantine begins with "
                       "source_file, location, reason. Fix: build it with pau.engine.types.quarantine_table")
    return table


def _table_files(path: str) -> dict[str, str]:
    """The tables of a run folder, by the names pau writes: ``events/`` (or
    ``events.parquet``) and ``<table>.parquet``."""
    out = {}
    for name in TABLES:
        for cand in ((name, f"{name}.parquet") if name == "events" else (f"{name}.parquet",)):
            if os.path.exists(os.path.join(path, cand)):
                out[name] = os.path.join(path, cand)
                break
    return out


def _read_events(path: str, progress: Any) -> pa.Table:
    """Every column of a Parquet events file or folder (hive keys fill ``rank``), read
    row group by row group (with ``progress``), in numeric rank order."""
    files = _io.parquet_files(path)
    names = list(_io.read_schema(files[0][0]).names)
    columns = names + [k for k in ("rank",) if k not in names and k in files[0][1]]
    for f, _ in files:
        _io.layout_version(f)
    batches = list(_io.stream_events(path, columns=columns, progress=progress))
    events = pa.Table.from_batches(batches) if batches else _io.read_dataset(path).select(columns)
    events = events.replace_schema_metadata(None)
    if "rank" in events.column_names and events.num_rows:
        events = events.take(pc.sort_indices(events, [("rank", "ascending")]))  # stable
    return events


def _wide_rank_rows(table: pa.Table, reasons: np.ndarray, spans: pa.Table | None) -> np.ndarray:
    """The usable rows (``reasons`` 0) of the ranks without a given span whose span
    (first start to last end of those rows) int64 cannot hold."""
    ok = reasons == 0
    sp = spans_of(table.filter(pa.array(ok)))
    got = {"span_rank": np.asarray(sp["rank"]), "span_start": np.asarray(sp["start_ns"]),
           "span_end": np.asarray(sp["end_ns"])}
    wide = wide_ranks(got)
    if spans is not None:
        wide = wide[~np.isin(wide, np.asarray(spans["rank"]))]
    if not wide.size:
        return np.zeros(table.num_rows, bool)
    rank = table["rank"]
    rows: np.ndarray = ok & np.isin(np.asarray(rank.fill_null(-1) if rank.null_count else rank, np.int64), wide)
    return rows


def _rank_list(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks[:20])) + (f" ... ({len(ranks)} in all)" if len(ranks) > 20 else "")
