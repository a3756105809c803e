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
from ._input import KINDS, as_table

#: Events from which the sweep runs beside the attribution (below, starting a
#: thread costs more than it saves).
OVERLAP_MIN_ROWS = 50_000

#: At most this many window crossings per event (cuts x ranks / events): beyond,
#: the exact windows (the state runs) are cheaper to sweep.
MAX_CROSSINGS_PER_EVENT = 1 / 32

#: The events of one rank are swept in chunks of at least this many rows, about
#: CHUNKS_PER_CORE chunks per core over all the events, so that the threads end
#: together (a chunk costs about 10 us more, and its head is swept twice).
CHUNK_MIN_ROWS = 100_000
CHUNKS_PER_CORE = 16
#: Rows at the start of a chunk swept by the chunk before it (see
#: ``csrc/core/crossing.hpp``): no event may reach past them from before the chunk.
HEAD_ROWS = 1024

_CORES = os.cpu_count() or 1


@dataclass
class Started:
    """A sweep of the events over the cuts, running (see :func:`start`)."""

    job: object
    rows: int


def _exported(table: pa.Table) -> list:
    return [b.__arrow_c_array__() for b in table.to_batches()]


def cuts(lifecycle, as_of: int | None) -> np.ndarray | None:
    """The cuts of a lifecycle table (sorted, distinct), or None for a layout the
    native reader leaves to the exact way."""
    return _core.lifecycle_cuts(_exported(as_table(lifecycle, "lifecycle")), -1 if as_of is None else as_of)


def start(events, lifecycle, as_of: int | None) -> Started | None:
    """Start sweeping in-memory events over the cuts of the lifecycle on helper
    threads (the native core reads both tables in place), or None when the events
    are too few to be worth a thread."""
    table = as_table(events, "events")
    n = table.num_rows
    if n < OVERLAP_MIN_ROWS:
        return None
    job = _core.CrossingSweep(_exported(table), list(KINDS), _exported(as_table(lifecycle, "lifecycle")),
                              -1 if as_of is None else as_of, min(64, 4 * _CORES),
                              max(CHUNK_MIN_ROWS, n // (CHUNKS_PER_CORE * _CORES)), HEAD_ROWS,
                              MAX_CROSSINGS_PER_EVENT)
    job.start(_CORES - 1)
    return Started(job, n)


def finish(started: Started, att, act_of_mask: np.ndarray, idle: int, n_states: int, n_act: int):
    """The cells of the ledger (as ``_kernels.state_cells``) from the sweep and the
    attribution, or None when the exact way must run instead: the cuts did not
    resolve the states, or the sweep declined (a layout not read natively, too many
    cuts, a problem in the events, ranks not sorted), so the exact way names it."""
    from ._kernels import crossed_cells

    out = started.job.wait()
    if out is None:
        return None
    cut, hist = out
    pieces = att.pieces
    cols = pieces[0] if len(pieces) == 1 else tuple(np.concatenate([p[k] for p in pieces]) for k in range(4))
    ok, cells = crossed_cells(hist["rank"], hist["window"], hist["mask"], hist["duration"], cut,
                              np.asarray(att.accountable["rank"]), *cols, act_of_mask, idle, n_states, n_act)
    return cells if ok else None
