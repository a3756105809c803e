"""Slow, obviously correct twins of the economics kernels (the native
``pau._core.attribute_busy``, csrc/core/attrib.hpp).

Plain Python ints and ``fractions.Fraction``; no numpy, no prefix sums, no sorting tricks.
"""

from __future__ import annotations

import math
from fractions import Fraction

KEY_BITS = 31  # fractional parts are ranked at 2**-31 ns (pau._core.ATTRIB_KEY_BITS)


def exact_shares(phases, busy):
    """Exact rational share of every phase, and exact idle ns per busy interval.

    ``phases``: list of ``(replica, start, end, weight, request_row, decode)``;
    ``busy``: list of ``(replica, start, end)``. Each busy interval on its own is cut
    at every phase boundary of its replica; in each piece the phases covering it share
    its length by weight (equally if all their weights are 0); a piece that no phase
    covers is idle.
    """
    share = [Fraction(0)] * len(phases)
    idle = [0] * len(busy)
    for bi, (rep, bs, be) in enumerate(busy):
        mine = [i for i, p in enumerate(phases) if p[0] == rep]
        cuts = {bs, be}
        for i in mine:
            for x in phases[i][1:3]:
                if bs < x < be:
                    cuts.add(x)
        cuts = sorted(cuts)
        for t0, t1 in zip(cuts, cuts[1:]):
            length = t1 - t0
            live = [i for i in mine if phases[i][1] <= t0 < phases[i][2]]
            if not live:
                idle[bi] += length
                continue
            w = {i: phases[i][3] for i in live}
            if sum(w.values()) == 0:
                w = {i: 1 for i in live}
            total = sum(w.values())
            for i in live:
                share[i] += Fraction(length * w[i], total)
    return share, idle


def attribute_busy(phases, busy):
    """Twin of the native ``attribute_busy`` (per phase rather than per request).

    Returns ``(attributed ns per phase, idle ns per busy interval)``. The exact shares
    of :func:`exact_shares` are rounded once per phase, conserving each replica: every
    phase gets the floor of its share, and the replica's busy ns minus its idle ns minus
    those floors go one each to the phases with the largest fractional parts, compared
    as ``ceil(fraction * 2**31)``, ties to the lower request row, then prefill first.
    """
    share, idle = exact_shares(phases, busy)
    attr = [math.floor(s) for s in share]
    for rep in {p[0] for p in phases}:
        mine = [i for i, p in enumerate(phases) if p[0] == rep]
        total = sum(be - bs - idle[bi] for bi, (r, bs, be) in enumerate(busy) if r == rep)
        left = total - sum(attr[i] for i in mine)
        key = {i: math.ceil((share[i] - attr[i]) * 2**KEY_BITS) for i in mine}
        ranked = sorted(mine, key=lambda i: (-key[i], phases[i][4], phases[i][5]))
        for i in ranked[:left]:
            attr[i] += 1
    return attr, idle


def request_phases(rows, prefill_weight=1, decode_weight=1):
    """Phases of request dicts (keys as the requests table), as
    ``(replica, start, end, weight, row, decode)``: prefill ``[arrival, first token or
    end)`` weighted by input tokens, decode ``[first token, end)`` by output tokens.
    Rejected requests and requests without an end have none."""
    out = []
    for row, r in enumerate(rows):
        if r["status"] == "rejected" or r["end_ns"] is None:
            continue
        ft = r.get("first_token_ns")
        out.append((r["replica"], r["arrival_ns"], r["end_ns"] if ft is None else ft,
                    prefill_weight * (r.get("input_tokens") or 0), row, 0))
        if ft is not None:
            out.append((r["replica"], ft, r["end_ns"], decode_weight * (r.get("output_tokens") or 0), row, 1))
    return out
