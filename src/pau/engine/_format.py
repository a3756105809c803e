"""Durations and shares as people read them: the unit that fits the magnitude.

One rule for every view (the text report, the HTML report, plots): ns below a
microsecond, then µs, ms, s; min from ten minutes, h from ten hours; three decimals.
Shares are percentages with one decimal. HTML tables escape every cell.
"""

from __future__ import annotations

import html
from typing import Any, Iterable, Sequence

__all__ = ["UNITS", "unit", "in_unit", "duration", "pct", "html_table"]

#: Units of a duration, largest first: (name, ns in one).
UNITS = (("h", 3_600 * 10**9), ("min", 60 * 10**9), ("s", 10**9), ("ms", 10**6), ("µs", 10**3))


def unit(ns: int | float) -> tuple[str, int]:
    """The unit that fits a duration: ns below a microsecond, then µs, ms, s; min from
    ten minutes, h from ten hours."""
    a = abs(ns)
    for name, size in UNITS:
        if a >= size * (10 if name in ("h", "min") else 1):
            return name, size
    return "ns", 1


def in_unit(ns: int | float, u: tuple[str, int]) -> str:
    """``ns`` written in the unit ``u`` (from :func:`unit`); a non-zero duration that
    would print as 0.000 in it is written in the unit that fits it instead (a 1.5 µs
    memset in a table of seconds shows as 1.500 µs, not 0.000 s)."""
    name, size = u
    if ns and size > 1 and abs(ns) * 2000 < size:
        u = unit(ns)
        name, size = u
    if size == 1:
        return f"{ns:,} ns" if isinstance(ns, int) else f"{ns:,.0f} ns"
    return f"{ns / size:,.3f} {name}"


def duration(ns: int | float) -> str:
    """A duration in the unit that fits it: 640 ns, 1.500 µs, 9.020 ms, 3.400 s, 2.500 h."""
    return in_unit(ns, unit(ns))


def pct(part: int | float, whole: int | float) -> str:
    """``part`` as a percentage of ``whole`` (one decimal, width 6); ``-`` for a zero whole."""
    return f"{100.0 * part / whole:5.1f}%" if whole else "    -"


def html_table(head: Sequence[str], rows: Iterable[Sequence[Any]], *, right: Iterable[int] = (),
               names: Iterable[int] = ()) -> str:
    """An HTML table; every cell is escaped (trace-supplied names show as text).
    ``right``: indices of columns aligned right (numbers); ``names``: columns of long
    names, wrapped anywhere. A cell given as a pair ``(shown, full)`` shows ``shown``
    with ``full`` as its tooltip (a long name cut)."""
    r, w = set(right), set(names)

    def cell(tag: str, i: int, v: Any) -> str:
        cls = ' class="num"' if i in r else ' class="name"' if (i in w and tag == "td") else ""
        if isinstance(v, tuple):
            shown, full = v
            return f'<{tag}{cls} title="{html.escape(str(full))}">{html.escape(str(shown))}</{tag}>'
        return f"<{tag}{cls}>{html.escape(str(v))}</{tag}>"

    lines = ['<div class="scroll"><table>', "<thead><tr>" + "".join(cell("th", i, h) for i, h in enumerate(head)) + "</tr></thead>",
             "<tbody>"]
    lines += ["<tr>" + "".join(cell("td", i, v) for i, v in enumerate(row)) + "</tr>" for row in rows]
    lines.append("</tbody></table></div>")
    return "\n".join(lines)
