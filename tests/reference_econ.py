"""Slow, obviously correct twins of the economics kernels (the native
``pau._core.attribute_busy``, csrc/core/attrib.hpp).

Plain Python ints and ``fractions.Fraction``; no numpy, no sorting tricks.
"""

from __future__ import annotations

import math
from fractions import Fraction


def attribute_busy(phases, busy):
    """Twin of the native ``attribute_busy`` (per phase rather than per request).

    ``phases``: list of ``(replica, start, end, weight, request_row)``; ``busy``:
    list of ``(replica, start, end)``. Returns ``(attr per phase, idle per busy)``.

    For each busy interval on its own, cut it at every phase boundary; in each piece
    the phases covering it share its length by weight (equally if all weights are
    0): each gets the floor of its exact share, and the ns left over go one each to
    the largest fractional parts, ties to the lower request row.
    """
    attr = [0] * len(phases)
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
            exact = {i: Fraction(length * w[i], total) for i in live}
            share = {i: math.floor(exact[i]) for i in live}
            left = length - sum(share.values())
            ranked = sorted(live, key=lambda i: (-(exact[i] - share[i]), phases[i][4]))
            for i in ranked[:left]:
                share[i] += 1
            for i in live:
                attr[i] += share[i]
    return attr, idle


def request_phases(rows, prefill_weight=1, decode_weight=1):
    """Phases of request dicts (keys as the requests table), as
    ``(replica, start, end, weight, row)``: prefill ``[arrival, first token or end)``
    weighted by input tokens, decode ``[first token, end)`` by output tokens.
    Rejected requests and requests without an end have none."""
    out = []
    for row, r in enumerate(rows):
        if r["status"] == "rejected" or r["end_ns"] is None:
            continue
        ft = r.get("first_token_ns")
        out.append((r["replica"], r["arrival_ns"], r["end_ns"] if ft is None else ft,
                    prefill_weight * (r.get("input_tokens") or 0), row))
        if ft is not None:
            out.append((r["replica"], ft, r["end_ns"], decode_weight * (r.get("output_tokens") or 0), row))
    return out
