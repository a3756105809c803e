"""Clock alignment across ranks, from the collectives they share (issue 19 item 3).

Per-rank traces from different hosts carry each host's clock. A collective
(all-reduce, all-to-all, send/receive of one ring step) ends on every participant at
nearly the same true instant: no rank leaves it before the last one has joined and
the data has moved. So the differences between the end times of one collective on
two ranks measure their clocks' offset, up to how unevenly the kernel's tail ends.

The rule (``offsets``):

* The anchors are the device events of kind ``communication``. The k-th collective
  kernel of a given name on a rank is matched with the k-th of that name on every
  other rank (the order of collectives on one communicator is the same on all its
  ranks). A name is used only when every rank that has it has it the same number of
  times; otherwise its occurrences cannot be paired without guessing, and it is
  left out (counted in the result).
* The reference is the lowest rank. A rank's offset is the median over its anchors
  of ``end(rank) - end(reference)`` (the lower of the two middle values when their
  number is even); its uncertainty is the largest distance of an
  anchor's difference from that median (so every anchor agrees with the offset to
  within it), 0 with one anchor, which the result also says (``anchors``).
* A rank with no anchor shared with the reference gets no offset (null) and keeps
  its clock; so does every rank when no name can be paired. The caller says so.

Applying an offset (``apply``) subtracts it from every time of that rank's rows, so
the rank reads on the reference's clock. Times stay exact int64 ns; a shift that
would leave int64 is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, TypedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine._names import ALIGN_METHODS
from pau.errors import PauError

__all__ = ["AlignedRank", "Alignment", "AlignmentMetadata", "offsets", "apply", "METHODS"]

#: The ways ``pau.read(..., align=...)`` knows.
METHODS = ALIGN_METHODS


class AlignedRank(TypedDict):
    """One rank of :class:`AlignmentMetadata`: a row of :attr:`Alignment.table`."""

    rank: int
    offset_ns: Optional[int]
    uncertainty_ns: Optional[int]
    anchors: int


class AlignmentMetadata(TypedDict):
    """:meth:`Alignment.as_dict`: ``run.metadata["alignment"]``."""

    method: str
    reference_rank: Optional[int]
    names_left_out: int
    ranks: List[AlignedRank]


@dataclass(frozen=True)
class Alignment:
    """Clock offsets per rank: ``table`` is ``rank, offset_ns, uncertainty_ns,
    anchors`` (offset and uncertainty null where no anchor ties the rank to the
    reference), ``reference`` the rank whose clock the others are put on, and
    ``names_left_out`` the collective names that could not be paired."""

    table: pa.Table
    reference: int | None
    names_left_out: int

    def as_dict(self) -> AlignmentMetadata:
        """For ``run.metadata["alignment"]`` (JSON-ready)."""
        ranks: list[AlignedRank] = [{"rank": r["rank"], "offset_ns": r["offset_ns"], "uncertainty_ns": r["uncertainty_ns"],
                                     "anchors": r["anchors"]} for r in self.table.to_pylist()]
        return {"method": "collectives", "reference_rank": self.reference, "names_left_out": self.names_left_out,
                "ranks": ranks}


def offsets(events: pa.Table) -> Alignment:
    """The clock offset of every rank of ``events`` against the lowest rank (see the
    module docstring)."""
    ranks = sorted(set(pc.unique(events["rank"]).to_pylist())) if events.num_rows else []
    comm = events.filter(pc.equal(events["kind"].cast(pa.string()), "communication")) \
        if events.num_rows else events
    if "name" not in comm.column_names:
        raise PauError("align: the events have no 'name' column to pair collectives by. Fix: read the "
                       "trace with a reader that keeps kernel names (Kineto, Nsight)")
    rank = np.asarray(comm["rank"].to_numpy(zero_copy_only=False), np.int64)
    name = np.asarray(comm["name"].cast(pa.string()).to_numpy(zero_copy_only=False), dtype=object)
    start = np.asarray(comm["start_ns"].to_numpy(zero_copy_only=False), np.int64)
    end = np.asarray(comm["end_ns"].to_numpy(zero_copy_only=False), np.int64)
    # The k-th occurrence of a name on a rank, in start order: one sort by (name,
    # rank, start), then each group is a slice.
    uniq, code = np.unique(name.astype(str), return_inverse=True) if name.size else (np.empty(0, str),
                                                                                  np.empty(0, np.int64))
    order = np.lexsort((start, rank, code))
    c, r_, e = code[order], rank[order], end[order]
    cut = np.flatnonzero(np.r_[True, (c[1:] != c[:-1]) | (r_[1:] != r_[:-1]), True]) if c.size else np.zeros(1, int)
    ends: dict[tuple[object, int], np.ndarray] = {}
    for lo, hi in zip(cut[:-1], cut[1:]):
        ends[(str(uniq[c[lo]]), int(r_[lo]))] = e[lo:hi]
    names = sorted({n for n, _ in ends}, key=str)
    paired = [n for n in names if len({ends[(n, r)].size for r in ranks if (n, r) in ends}) == 1]
    ref: int = ranks[0] if ranks else 0  # no ranks: no rows below
    rows: list[tuple[int, int | None, int | None, int]] = []
    for r in ranks:
        diffs = [ends[(n, r)] - ends[(n, ref)] for n in paired if (n, r) in ends and (n, ref) in ends]
        d = np.concatenate(diffs) if diffs else np.empty(0, np.int64)
        if d.size == 0:
            rows.append((r, None, None, 0))
            continue
        srt = np.sort(d)  # the median, in ints (the lower middle when even: exact, no float)
        off = int(srt[(d.size - 1) // 2])
        rows.append((r, off, int(np.max(np.abs(d - off))), int(d.size)))
    table = pa.table({"rank": pa.array([x[0] for x in rows], pa.int32()),
                      "offset_ns": pa.array([x[1] for x in rows], pa.int64()),
                      "uncertainty_ns": pa.array([x[2] for x in rows], pa.int64()),
                      "anchors": pa.array([x[3] for x in rows], pa.int64())})
    return Alignment(table, ref if ranks else None, len(names) - len(paired))


_TIME_COLUMNS = ("start_ns", "end_ns", "block_end_ns", "durable_ns", "launch_ns")


def apply(table: pa.Table | None, alignment: Alignment) -> pa.Table | None:
    """``table`` with every time of each rank's rows moved onto the reference clock
    (``time - offset_ns``); rows of ranks without an offset, and rows of rank -1 (every
    rank), unchanged."""
    if table is None or table.num_rows == 0:
        return table
    a = alignment.table.filter(pc.is_valid(alignment.table["offset_ns"]))
    if a.num_rows == 0:
        return table
    rank = np.asarray(table["rank"].to_numpy(zero_copy_only=False), np.int64)
    keys = np.asarray(a["rank"].to_numpy(zero_copy_only=False), np.int64)  # ranks are distinct
    order = np.argsort(keys)
    keys, offs = keys[order], np.asarray(a["offset_ns"].to_numpy(zero_copy_only=False), np.int64)[order]
    pos = np.minimum(np.searchsorted(keys, rank), keys.size - 1)
    shift = np.where(keys[pos] == rank, offs[pos], 0)  # rank -1 and unaligned ranks: 0
    out = table
    for col in _TIME_COLUMNS:
        if col not in out.column_names:
            continue
        arr = out[col].combine_chunks()
        typ = arr.type
        vals = arr.cast(pa.int64())
        v = np.asarray(vals.fill_null(0).to_numpy(zero_copy_only=False), np.int64)
        lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
        wrap = ((shift > 0) & (v < lo + shift)) | ((shift < 0) & (v > hi + shift))
        if (wrap & np.asarray(vals.is_valid())).any():
            i = int(np.flatnonzero(wrap)[0])
            raise PauError(f"align: rank {int(rank[i])}'s clock offset {int(shift[i])} ns moves {col} of row {i} "
                           "beyond int64. Fix: read without align, or check the traces' clocks")
        moved = pa.array(v - shift, pa.int64(), mask=np.asarray(vals.is_null()) if vals.null_count else None)
        out = out.set_column(out.schema.get_field_index(col), col, moved.cast(typ))
    return out
