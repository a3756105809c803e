"""The full ledger's sweep, run while the lifecycle is attributed.

``ledger(events, lifecycle)`` needs, per rank, the device activity inside each
lifecycle state. The exact way (``pau.core.ledger``'s fallback) attributes first
and then sweeps the events with the state runs as windows: one after the other,
so one core idles while the attribution runs. Here the sweep starts first, on a
worker thread, with windows known before any attribution: the **cuts**, every
instant at which some rank's state may change. A state changes only at a record's
start, end, block end (or at ``as_of``), and between two steps that follow each
other on one rank it changes only where some other record begins or ends, so the
cuts are every time of the records that are not steps, plus the start and end of
each step that does not touch the step before or after it in the table, plus
``as_of``. They are shared by all ranks (a few hundred on a training job of
thousands of steps, one checkpoint every few dozen).

Then the attribution gives the state runs, and :func:`pau._kernels.crossed_cells`
sums each window's busy time into the run it lies in; a run's idle time is what
its busy rows leave. When some busy window reaches over a run boundary (a state
changed at an instant that is not a cut: a layout the cuts did not foresee), the
answer is not used and the caller sweeps again the exact way, so the result never
depends on the guess, only the time does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from . import _core
from ._input import as_table, event_columns
from .errors import PauError

#: Events from which the sweep runs beside the attribution (below, starting a
#: thread costs more than it saves).
OVERLAP_MIN_ROWS = 50_000

#: At most this many window crossings per event (cuts x ranks / events): beyond,
#: the exact windows (the state runs) are cheaper to sweep.
MAX_CROSSINGS_PER_EVENT = 1 / 32

_NO_SPAN = (np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0, np.int64))


def cuts(lifecycle: pa.Table, as_of: int | None) -> np.ndarray | None:
    """The instants at which some rank's state may change (sorted, distinct), or
    None when the table is not one this guess reads (the exact way then runs)."""
    from .lifecycle import _STEP, _num, _record_codes

    n = lifecycle.num_rows
    names = lifecycle.schema.names
    if n == 0 or "start_ns" not in names or "record" not in names:
        return None
    try:
        codes = _record_codes(lifecycle)[0]
        s, e, b, d, rank = (_num(lifecycle, c, n, -1, names)
                            for c in ("start_ns", "end_ns", "block_end_ns", "durable_ns", "rank"))
    except PauError:  # the attribution names it
        return None
    step = codes == _STEP
    # A step that the next row continues (a step of the same rank starting where it
    # ends): no cut between them.
    cont = step[:-1] & step[1:] & (e[:-1] == s[1:]) & (rank[:-1] == rank[1:])
    keep_start = np.concatenate(([True], ~cont)) | ~step
    keep_end = np.concatenate((~cont, [True])) | ~step
    other = ~step
    parts = [s[keep_start], e[keep_end], b[other], d[other]]
    if as_of is not None:
        parts.append(np.array([as_of], np.int64))
    out = np.unique(np.concatenate(parts))
    return out[out >= 0]


@dataclass
class Started:
    """A sweep of the events running over the cuts (see :func:`start`)."""

    job: object
    cuts: np.ndarray
    rows: int


def start(events, lifecycle, as_of: int | None) -> Started | None:
    """Start sweeping in-memory events over the cuts of the lifecycle on worker
    threads, or None when this does not apply (small or unusual input: the exact
    way handles it, errors included)."""
    from .core import _rank_split

    table = as_table(events, "events")
    n = table.num_rows
    if n < OVERLAP_MIN_ROWS:
        return None
    life = as_table(lifecycle, "lifecycle")
    c = cuts(life, as_of)
    if c is None or c.size < 2:
        return None
    cols = []
    for batch in table.to_batches():
        col = event_columns(batch)
        if col is None:
            return None
        cols.append(col)
    cores = os.cpu_count() or 1
    split = _rank_split(cols, min(64, 4 * cores))
    if split is None:  # not sorted by rank: the exact way sweeps it on one thread
        return None
    n_ranks = sum(hi - lo + 1 for _, lo, hi in split)  # at most
    if (c.size - 1) * n_ranks > n * MAX_CROSSINGS_PER_EVENT:
        return None
    specs = [([(cols[b].rank[sl], cols[b].start[sl], cols[b].end[sl], cols[b].kind.indices[sl], cols[b].kind.codes)
               for b, sl in pieces], lo, hi) for pieces, lo, hi in split]
    w = c.size - 1
    job = _core.SweepParts(np.full(w, -1, np.int32), c[:-1], c[1:], np.arange(w, dtype=np.int64), *_NO_SPAN, 0,
                           specs)
    job.start(min(cores - 1, len(specs)))
    return Started(job, c, n)


def finish(started: Started, att, act_of_mask: np.ndarray, idle: int, n_states: int, n_act: int):
    """The cells of the ledger (as ``_kernels.state_cells``) from the sweep and the
    attribution, or None when the cuts did not resolve the states or the sweep met
    a problem (the caller then runs the exact way, which names it)."""
    from ._kernels import crossed_cells

    hist = started.job.wait()
    if isinstance(hist, tuple):
        return None
    pieces = att.pieces
    cols = pieces[0] if len(pieces) == 1 else tuple(np.concatenate([p[k] for p in pieces]) for k in range(4))
    ok, cells = crossed_cells(hist["rank"], hist["window"], hist["mask"], hist["duration"], started.cuts,
                              np.asarray(att.accountable["rank"]), *cols, act_of_mask, idle, n_states, n_act)
    return cells if ok else None
