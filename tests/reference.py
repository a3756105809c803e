"""A slow, obviously correct twin of pau's native device-activity sweep.

Nothing here is clever, and nothing here is shared with pau: plain Python ints and
dicts, elementary segments, half-open intervals.

Per rank, every time at which anything can change (event starts and ends, the span
bounds, window bounds, bucket bounds) is collected, sorted and de-duplicated. Between
two consecutive boundaries ``[a, b)`` nothing changes, so an event either covers the
whole segment (``start <= a and b <= end``) or none of it; the same holds for the
windows. Each segment of the span therefore has one set of running kinds (the
6-bit mask, bit ``i`` = ``KINDS[i]``) and at most one window, and its length is
added to ``(rank, window, mask)``. Everything else is read off that histogram.

Inputs (plain Python, no Arrow):

* ``events``: an iterable of ``(rank, start_ns, end_ns, kind)`` tuples (extra trailing
  fields are ignored), already valid (``0 <= start <= end``, kind in :data:`KINDS`).
* ``span``: ``None`` or an iterable of ``(rank, start_ns, end_ns)``; a listed rank is
  accounted over exactly that interval (events clipped, the rest idle), other ranks
  over ``[first event start, last event end)``.
* ``windows``: ``None``; an ``int`` bucket width ``w`` (windows ``[k*w, (k+1)*w)`` for any
  int64 ``k``, named by their start ``k*w``, or by the int64 minimum for a bucket that begins
  below it); or an iterable of ``(rank, start_ns, end_ns)`` or
  ``(rank, start_ns, end_ns, window_id)`` (id defaults to the row number;
  ``rank == -1`` means every rank). Time outside every window goes to window ``None``.

Outputs are dicts keyed by ``(rank, window)`` (``window`` is ``None`` without
windows). The slots present are those pau documents:

* no windows: one slot per accounted rank (even a rank whose span is empty);
* a table of windows: one slot per window of the rank (its own and the rank -1 ones,
  zero-length or out-of-span windows included), plus ``(rank, None)`` when some
  time of the span lies outside every window;
* buckets: one slot per bucket that shares time with the rank's span.
"""

from __future__ import annotations

from fractions import Fraction

KINDS = ("compute", "communication", "memcpy", "memset", "sync", "other")
ACTIVITIES = KINDS + ("idle",)
DEFAULT_PRIORITY = KINDS
BIT = {k: 1 << i for i, k in enumerate(KINDS)}
COMPUTE = BIT["compute"]
COMMUNICATION = BIT["communication"]


def mask_name(mask: int) -> str:
    """``"compute+communication"`` style name of a mask (KINDS order), ``"idle"`` for 0."""
    names = [k for k in KINDS if mask & BIT[k]]
    return "+".join(names) if names else "idle"


def winner(mask: int, priority=DEFAULT_PRIORITY) -> str:
    """The activity a mask counts as: the first kind of ``priority`` that runs, else idle."""
    for kind in priority:
        if mask & BIT[kind]:
            return kind
    return "idle"


# ---------------------------------------------------------------------------
# spans and windows


def spans(events, span=None) -> dict:
    """``{rank: (start, end)}``: the accounted span of every rank."""
    fixed = {}
    if span is not None:
        for rank, start, end in span:
            assert rank not in fixed, "reference: one span row per rank"
            fixed[rank] = (start, end)
    out = dict(fixed)
    for ev in events:
        rank, start, end = ev[0], ev[1], ev[2]
        if rank in fixed:
            continue
        if rank in out:
            lo, hi = out[rank]
            out[rank] = (min(lo, start), max(hi, end))
        else:
            out[rank] = (start, end)
    return out


def _window_rows(windows):
    """Window rows as ``(rank, start, end, id)``, ids defaulting to the row number."""
    rows = []
    for i, w in enumerate(windows):
        rank, start, end = w[0], w[1], w[2]
        wid = w[3] if len(w) > 3 and w[3] is not None else i
        rows.append((rank, start, end, wid))
    return rows


def _windows_of(rank, window_rows):
    return [(s, e, wid) for (r, s, e, wid) in window_rows if r == rank or r == -1]


def _buckets_of(span_start, span_end, width):
    """Starts of the buckets that share time with ``[span_start, span_end)``."""
    if span_end <= span_start:
        return []
    first = span_start // width
    last = (span_end - 1) // width
    assert last - first < 100_000, "reference: too many buckets for the slow path"
    return [k * width for k in range(first, last + 1)]


# ---------------------------------------------------------------------------
# the histogram


def histogram(events, *, span=None, windows=None) -> dict:
    """``{(rank, window): {mask: ns}}`` over every accounted rank's span (non-zero only).

    Slots that exist but hold no time (e.g. a zero-length window) are present with an
    empty dict, so the keys are exactly the slots described in the module docstring.
    """
    events = [tuple(ev) for ev in events]
    rank_span = spans(events, span)
    bucket = windows if isinstance(windows, int) and not isinstance(windows, bool) else None
    window_rows = None if windows is None or bucket is not None else _window_rows(windows)
    if bucket is not None:
        assert bucket > 0

    hist: dict = {}
    for rank, (lo, hi) in rank_span.items():
        mine = [ev for ev in events if ev[0] == rank]
        bounds = {lo, hi}
        for ev in mine:
            bounds.add(ev[1])
            bounds.add(ev[2])
        wins = []
        if window_rows is not None:
            wins = _windows_of(rank, window_rows)
            for s, e, wid in wins:
                bounds.add(s)
                bounds.add(e)
                hist.setdefault((rank, wid), {})
        elif bucket is not None:
            for b in _buckets_of(lo, hi, bucket):
                bounds.add(b)
                bounds.add(b + bucket)
        else:
            hist.setdefault((rank, None), {})
        points = sorted(x for x in bounds if lo <= x <= hi)
        for a, b in zip(points, points[1:]):
            assert a < b
            mask = 0
            for ev in mine:
                if ev[1] <= a and b <= ev[2]:
                    mask |= BIT[ev[3]]
            if bucket is not None:
                window = (a // bucket) * bucket
                assert (b - 1) // bucket * bucket == window
                window = max(window, -(2**63))  # a bucket reaching below int64 is named by the int64 minimum
            elif window_rows is not None:
                inside = [wid for (s, e, wid) in wins if s <= a and b <= e]
                assert len(inside) <= 1, "reference: windows of a rank must be disjoint"
                window = inside[0] if inside else None
            else:
                window = None
            slot = hist.setdefault((rank, window), {})
            slot[mask] = slot.get(mask, 0) + (b - a)
    return hist


# ---------------------------------------------------------------------------
# what pau reports, derived from the histogram


def classify(events, *, span=None, windows=None, priority=None) -> dict:
    """``{(rank, window): {activity: ns}}`` with every activity present (zeros too)."""
    prio = DEFAULT_PRIORITY if priority is None else tuple(priority)
    out = {}
    for slot, masks in histogram(events, span=span, windows=windows).items():
        row = {a: 0 for a in ACTIVITIES}
        for mask, ns in masks.items():
            row[winner(mask, prio)] += ns
        out[slot] = row
    return out


def overlap_matrix(events, *, span=None, windows=None) -> dict:
    """``{(rank, window): {kinds name: ns}}``, non-zero entries only (a slot may be empty)."""
    out = {}
    for slot, masks in histogram(events, span=span, windows=windows).items():
        out[slot] = {mask_name(m): ns for m, ns in masks.items() if ns}
    return out


def overlap_ratio(events, *, span=None, windows=None) -> dict:
    """``{(rank, window): (communication_ns, overlap_ns, ratio)}``.

    ``overlap_ns = |communication ∩ compute|``; ``ratio`` is an exact ``Fraction``, or
    ``None`` when there is no communication (0/0 is not a number).
    """
    out = {}
    for slot, masks in histogram(events, span=span, windows=windows).items():
        comm = sum(ns for m, ns in masks.items() if m & COMMUNICATION)
        both = sum(ns for m, ns in masks.items() if m & COMMUNICATION and m & COMPUTE)
        out[slot] = (comm, both, Fraction(both, comm) if comm else None)
    return out


def ledger(events, *, span=None, windows=None) -> dict:
    """``{(rank, window, state, activity): ns}``: non-zero rows only, state 'unattributed'."""
    out = {}
    for (rank, window), row in classify(events, span=span, windows=windows).items():
        for activity, ns in row.items():
            if ns:
                out[(rank, window, "unattributed", activity)] = ns
    return out


# ---------------------------------------------------------------------------
# reading pau's tables into the shapes above (no accounting here)


def pau_classify(table, windows: bool) -> dict:
    """A ``pau.core.classify`` table as ``{(rank, window): {activity: ns}}``.

    Asserts that no (rank, window, activity) appears twice.
    """
    out: dict = {}
    for r in table.to_pylist():
        slot = (r["rank"], r["window"] if windows else None)
        row = out.setdefault(slot, {})
        assert r["activity"] not in row, f"duplicate row {r}"
        row[r["activity"]] = r["duration_ns"]
    return out


def pau_matrix(table, windows: bool) -> dict:
    out: dict = {}
    for r in table.to_pylist():
        slot = (r["rank"], r["window"] if windows else None)
        row = out.setdefault(slot, {})
        assert r["kinds"] not in row, f"duplicate row {r}"
        row[r["kinds"]] = r["duration_ns"]
    return out


def pau_ratio(table, windows: bool) -> dict:
    out: dict = {}
    for r in table.to_pylist():
        slot = (r["rank"], r["window"] if windows else None)
        assert slot not in out, f"duplicate row {r}"
        out[slot] = (r["communication_ns"], r["overlap_ns"], r["ratio"])
    return out


def pau_ledger(table) -> dict:
    out: dict = {}
    windows = "window" in table.column_names
    for r in table.to_pylist():
        key = (r["rank"], r["window"] if windows else None, r["state"], r["activity"])
        assert key not in out, f"duplicate row {r}"
        out[key] = r["duration_ns"]
    return out
