"""A binary search over positions, for columns read one value at a time."""

from __future__ import annotations

from typing import Callable


def lower_bound(n: int, value_at: Callable[[int], int], target: int) -> int:
    """The first position ``i`` in ``[0, n)`` with ``value_at(i) >= target`` (``n`` if
    none), when ``value_at`` does not decrease; ``bisect_left`` on positions (its
    ``key`` argument needs Python 3.10)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if value_at(mid) < target:
            lo = mid + 1
        else:
            hi = mid
    return lo
