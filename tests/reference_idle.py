"""The idle split by cause, the slow and obvious way (the twin of pau.figures.idle).

Plain Python over lists: the busy union is built by merging intervals, each gap's
host wait is read off the events that start where the gap ends, and the split walks
every elementary segment between consecutive boundaries, asking in precedence order
what covers it. No numpy, no sweep.
"""

from __future__ import annotations

CAUSES = ("data_wait", "sync_wait", "host_wait", "idle.other")


def busy_union(intervals):
    """Merged [start, end) pieces of the non-empty intervals (touching ones join)."""
    pieces = []
    for s, e in sorted((s, e) for s, e in intervals if e > s):
        if pieces and s <= pieces[-1][1]:
            pieces[-1][1] = max(pieces[-1][1], e)
        else:
            pieces.append([s, e])
    return [tuple(p) for p in pieces]


def host_waits(events, span_start):
    """Host-wait intervals of one rank: ``events`` are (start, end, launch or None).

    The gap before each piece of the busy union runs from the previous piece's end (the
    span start before the first piece, and never before it) to the piece's start; its
    host wait ends at the earliest launch of the events starting there, or at the gap's
    end, whichever comes first."""
    out = []
    prev = span_start
    for s, e in busy_union([(a, b) for a, b, _ in events]):
        g0 = max(prev, span_start)
        launches = [launch for a, b, launch in events if b > a and a == s and launch is not None]
        if launches and s > g0:
            g1 = min(min(launches), s)
            if g1 > g0:
                out.append((g0, g1))
        prev = e
    return out


def _covers(intervals, a, b):
    return any(s <= a and b <= e and e > s for s, e in intervals)


def split(events, host, spans, windows=None):
    """{(rank, window): {cause: ns}} over each rank's span.

    events: (rank, start, end, launch or None); host: (rank, start, end, cause) with
    rank -1 for every rank; spans: {rank: (start, end)}; windows: None or a list of
    (rank, start, end, id) (rank -1: every rank), disjoint within a rank. Time of a span
    outside every window is under window None."""
    out = {}
    for r, (lo, hi) in spans.items():
        mine = [(s, e, launch) for rr, s, e, launch in events if rr == r]
        busy = [(s, e) for s, e, _ in mine]
        data = [(s, e) for rr, s, e, c in host if rr in (r, -1) and c == "data_wait"]
        sync = [(s, e) for rr, s, e, c in host if rr in (r, -1) and c == "sync_wait"]
        hw = host_waits(mine, lo)
        wins = [(s, e, w) for rr, s, e, w in (windows or []) if rr in (r, -1)]
        cuts = {lo, hi}
        for group in (busy, data, sync, hw, [(s, e) for s, e, _ in wins]):
            for s, e in group:
                cuts.update(t for t in (s, e) if lo <= t <= hi)
        cuts = sorted(cuts)
        keys = [None] if windows is None else [w for _, _, w in wins]
        if windows is not None:
            keys.append(None)
        for w in keys:
            out.setdefault((r, w), dict.fromkeys(CAUSES, 0))
        for a, b in zip(cuts[:-1], cuts[1:]):
            if _covers(busy, a, b):
                continue
            cause = ("data_wait" if _covers(data, a, b) else "sync_wait" if _covers(sync, a, b)
                     else "host_wait" if _covers(hw, a, b) else "idle.other")
            w = None
            if windows is not None:
                w = next((wid for s, e, wid in wins if s <= a and b <= e), None)
            out[(r, w)][cause] += b - a
    return out
