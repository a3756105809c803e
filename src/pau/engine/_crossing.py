"""The full ledger's sweep, run while the lifecycle is attributed.

``ledger(events, lifecycle)`` needs, per rank, the device activity inside each
lifecycle state. The exact way (the rest of ``pau.core.ledger``) attributes first
and then sweeps the events with the state runs as windows: one after the other,
so one core idles while the attribution runs. Here the sweep starts first, on the
native core's helper threads, with windows known before any attribution: the
**cuts**, the instants at which some rank's state may change. A state changes only
at a record's start, end or block end, or at ``as_of`` (or the latest instant,
``as_of``'s default); and between two steps that follow each other on one rank (the
second starting where the first ended) only where another record begins or ends (a
save, a failure) or where preserved work ends: after a step that a checkpoint save
or a restore names (its checkpoint may have been saved later, while the next step
ran). So the cuts are every time of the records that are not steps; the start and
end of each step that does not touch its rank's step before or after it in the
table; the end of each step whose number a save or restore names; and ``as_of``.
They are shared by all ranks: a few hundred on a training job of thousands of steps
with a checkpoint every few dozen.

The native core reads both tables in place through the Arrow C data interface and
splits the events at rank boundaries into parts, and a rank of many events into
chunks (``csrc/core/crossing.hpp``), so that the threads end together. Then the
attribution gives the state runs, and the native core (``CellCrossing``) sums
each window's busy time into the run it lies in; a run's idle time is what its
busy rows leave.

The answer never depends on the guess, only the time does: the exact way runs
instead when a busy window reaches over a run boundary (a state changed at an
instant that is not a cut: no generated lifecycle of the property tests does that,
but the rules are pau's, not the cuts'), when an event reaches past a chunk's head from before
the chunk, when the tables are not of the layout read in place (ranks int32, times
int64 or timestamp[ns], kinds a dictionary of strings, record names strings, no
nulls in the event columns), when the events are not sorted by rank and start or
have a bad row (the exact way sorts them, or names the row), and when there are
more than MAX_CROSSINGS_PER_EVENT window crossings per event.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from pau import _core
from pau.engine._input import KINDS, as_table
from pau.engine._sweep import lean_kernel, levels_of
from pau.engine._threads import cores

#: Events from which the sweep runs beside the attribution (below, starting a
#: thread costs more than it saves).
OVERLAP_MIN_ROWS = 50_000

#: At most this many window crossings per event (cuts x ranks / events): beyond,
#: the exact windows (the state runs) are cheaper to sweep.
MAX_CROSSINGS_PER_EVENT = 1 / 32

#: The events of one rank are swept in chunks of at most
#: max(CHUNK_MIN_ROWS, events / (CHUNKS_PER_CORE * cores)) rows, fewer towards the
#: end: about a (2 * cores)-th of the rows left, down to CHUNK_TAIL_ROWS (or the
#: cap, if lower), so that the threads end together whenever each joined (a chunk
#: costs a few us more).
CHUNK_MIN_ROWS = 100_000
CHUNKS_PER_CORE = 4
CHUNK_TAIL_ROWS = 16_384
#: Rows at the start of a chunk swept by the chunk before it (see
#: ``csrc/core/crossing.hpp``): no event may reach past them from before the chunk.
HEAD_ROWS = 1024

#: The kernel of the exclusive-time sweep each part is swept with (see
#: ``csrc/core/exclusive.hpp``: 0 the best, 1 scalar, 2 AVX-512, 3 AVX2), or None for
#: the full 64-mask sweep: the exclusive one where the CPU runs a vector kernel, as
#: for ``classify`` (``pau.engine._sweep.lean_kernel``).
LEAN_KERNEL: int | None = lean_kernel()

#: "No as_of" for the native core: the least int64 (its null time); any other int64 is a time.
_NO_AS_OF = -(2**63)

_CORES = cores()
# The native helper pool is sized by the same count as every other pool of pau.
_core.set_pool_cores(_CORES)


@dataclass
class Started:
    """A sweep of the events over the cuts, running (see :func:`start`)."""

    job: _core.CrossingSweep
    rows: int


def _exported(table: pa.Table) -> list:
    return [b.__arrow_c_array__() for b in table.to_batches()]


def cuts(lifecycle, as_of: int | None) -> np.ndarray | None:
    """The cuts of a lifecycle table (sorted, distinct), or None for a layout the
    native reader leaves to the exact way."""
    return _core.lifecycle_cuts(_exported(as_table(lifecycle, "lifecycle")), _NO_AS_OF if as_of is None else as_of)


def start(events, lifecycle, as_of: int | None, priority=None) -> Started | None:
    """Start sweeping in-memory events over the cuts of the lifecycle on helper
    threads (the native core reads both tables in place), or None when the events
    are too few to be worth a thread. ``priority``: as in ``ledger`` (the
    exclusive-time sweep needs it up front; the full sweep's cells take it later)."""
    table = as_table(events, "events")
    n = table.num_rows
    if n < OVERLAP_MIN_ROWS:
        return None
    cap = max(CHUNK_MIN_ROWS, n // (CHUNKS_PER_CORE * _CORES))
    job = _core.CrossingSweep(_exported(table), list(KINDS), _exported(as_table(lifecycle, "lifecycle")),
                              as_of=_NO_AS_OF if as_of is None else as_of, parts=min(64, 4 * _CORES),
                              chunk_rows=cap, min_chunk_rows=min(cap, CHUNK_TAIL_ROWS), threads=_CORES,
                              head_rows=HEAD_ROWS, max_crossings_per_event=MAX_CROSSINGS_PER_EVENT,
                              levels=None if LEAN_KERNEL is None else levels_of(priority), kernel=LEAN_KERNEL or 0)
    job.start(_CORES - 1)
    return Started(job, n)


def finish(started: Started, intervals: tuple, ranks: np.ndarray, act_of_mask: np.ndarray, idle: int,
           n_states: int, n_act: int):
    """The cells of the ledger (as the exact way's) from the sweep and the
    state intervals ``(rank, start, end, state)`` of the accountable ``ranks``, or
    None when the exact way must run instead: the cuts did not resolve the states,
    or the sweep declined (a layout not read natively, too many cuts, a problem in
    the events, ranks not sorted), so the exact way names it. The native core merges
    the intervals into runs while its helpers still sweep, then crosses each part's
    histogram with them (``CellCrossing`` in ``csrc/core/crossing.hpp``)."""
    i_rank, i_start, i_end, i_state = intervals
    return started.job.wait(ranks, i_rank, i_start, i_end, i_state, act_of_mask=act_of_mask, idle=idle,
                            n_states=n_states, n_act=n_act)
