"""``amd-smi metric ... --csv`` (watch mode) -> :class:`pau.readers.samples.Telemetry`
(``docs/telemetry.md``).
"""

from __future__ import annotations

import csv
import re
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np

from pau.errors import SchemaError, TelemetryFormatError
from pau.readers.samples import (
    _NA, Telemetry, _Builder, _number, _paths,
    _text_lines,
)

__all__ = ['AMD_SMI_FIELDS', 'read_amd_smi']

# ---------------------------------------------------------------------------
# amd-smi metric --csv

#: amd-smi ``metric --csv`` columns pau reads: column -> (metric, factor to pau's unit).
AMD_SMI_FIELDS: dict[str, tuple[str, float]] = {
    "socket_power": ("power_w", 1.0),
    "gfx_activity": ("gpu_util", 0.01),
    "umc_activity": ("mem_util", 0.01),
    "mm_activity": ("mm_util", 0.01),
    "mem_0_clk": ("mem_clock_mhz", 1.0),
    "hotspot": ("gpu_temp_c", 1.0),
    "mem": ("memory_temp_c", 1.0),
}
_AMD_UNITS = {"power_w": "W", "gpu_util": "%", "mem_util": "%", "mm_util": "%", "mem_clock_mhz": "MHz",
              "gpu_temp_c": "°C", "memory_temp_c": "°C", "gfx_clock_mhz": "MHz"}
_GFX_CLK = re.compile(r"^gfx_(\d+)_clk$")


def read_amd_smi(path: Any, *, on_invalid: str = "raise") -> Telemetry:
    """Read ``amd-smi metric [-p -c -t -u ...] [-w SECONDS] --csv`` output.

    ``timestamp`` is seconds since the epoch, ``gpu`` the device index; ticks of
    watch mode are separated by blank lines (one header at the top). Fields read:
    :data:`AMD_SMI_FIELDS`, and ``gfx_clock_mhz``, the mean of the XCDs' clocks
    ``gfx_N_clk`` that have a value. ``N/A`` is no sample; list-valued columns
    (``"[0, 0, ...]"``: per-instance busy figures), settings (min/max/locked clocks) and
    voltages are not read. A value with a unit suffix (``238 W``) must have the unit
    amd-smi uses. ``amd-smi metric -E`` energy snapshots carry no time and are refused.
    """
    b = _Builder("amd_smi", on_invalid)
    for p in _paths(path, "read_amd_smi"):
        b.sources.append(p)
        rows = list(csv.reader(_text_lines(p)))
        first, cols = _amd_columns(b, p, rows)
        for ln, row in enumerate(rows[first + 1:], start=first + 2):
            if not row or (len(row) == 1 and not row[0].strip()) or [c.strip() for c in row] == cols.head:
                continue   # a blank line between ticks, or a header repeated
            _amd_line(b, p, ln, row, cols)
    return b.finish()


class _Columns:
    """Where an amd-smi CSV's columns are: the header, the time and GPU columns, the XCD
    clocks (``gfx_N_clk``) and the metrics read (column -> (metric, factor))."""

    def __init__(self, head: list[str]):
        self.head = head
        self.ti, self.gi = head.index("timestamp"), head.index("gpu")
        self.gfx = [i for i, h in enumerate(head) if _GFX_CLK.match(h)]
        self.plan: dict[int, tuple[str, float]] = {i: AMD_SMI_FIELDS[h] for i, h in enumerate(head)
                                                   if h in AMD_SMI_FIELDS}


def _amd_columns(b: _Builder, p: str, rows: list[list[str]]) -> tuple[int, _Columns]:
    """The header's row and its columns; the columns not read counted in ``b``."""
    first = next((i for i, r in enumerate(rows) if r), None)
    if first is None:
        raise TelemetryFormatError(p, "no header line", "give amd-smi's CSV output")
    head = [h.strip() for h in rows[first]]
    if "timestamp" not in head:
        if head[:2] == ["gpu", "total_energy_consumption"]:
            raise TelemetryFormatError(p, "an energy snapshot (amd-smi metric -E) without time stamps: pau reads "
                                       "time series", "give amd-smi metric ... -w SECONDS --csv output")
        raise SchemaError(p, "timestamp", "is missing", "give amd-smi metric output in watch mode (-w)")
    if "gpu" not in head:
        raise SchemaError(p, "gpu", "is missing (no column names the GPU of a row)", "give amd-smi's own CSV")
    cols = _Columns(head)
    for i, h in enumerate(head):
        if i not in cols.plan and i not in cols.gfx and i not in (cols.ti, cols.gi):
            b.skip(p, h)
    return first, cols


def _amd_line(b: _Builder, p: str, ln: int, row: list[str], cols: _Columns) -> None:
    """One line's samples (its problems kept in ``b``)."""
    head = cols.head
    if len(row) != len(head):
        b.problem(p, ln, head[min(len(row), len(head) - 1)],
                  f"the line has {len(row)} fields, the header {len(head)} (a line cut short, or a "
                  "truncated file?)", "repair or drop the line")
        return
    ts, gpu = row[cols.ti].strip(), row[cols.gi].strip()
    try:
        when = int(Decimal(ts) * 10**9)
    except InvalidOperation:
        b.problem(p, ln, "timestamp", f"{ts!r} is not seconds since the epoch", "repair or drop the line")
        return
    if not gpu.isdigit():
        b.problem(p, ln, "gpu", f"GPU index {gpu!r} is not a whole number", "repair or drop the line")
        return
    d = b.device(("index", p, int(gpu)), index=int(gpu), source_file=p)
    for i, (metric, factor) in cols.plan.items():
        v = _amd_value(b, p, ln, head[i], row[i], metric)
        if v is not None:
            b.add(d, when, metric, v * factor, p, ln, head[i])
    clocks = [v for v in (_amd_value(b, p, ln, head[i], row[i], "gfx_clock_mhz")
                          if row[i].strip().lower() not in _NA else None for i in cols.gfx) if v is not None]
    if clocks:
        b.add(d, when, "gfx_clock_mhz", float(np.mean(clocks)), p, ln, "gfx_N_clk")


def _amd_value(b: _Builder, p: str, ln: int, column: str, cell: str, metric: str) -> float | None:
    """A cell's number in the metric's amd-smi unit; None for N/A (counted) or a problem (kept)."""
    cell = cell.strip()
    if cell.lower() in _NA:
        b.na(p, column)
        return None
    unit = _AMD_UNITS[metric]
    m = re.match(r"^([-+0-9.eE]+)\s*(\S*)$", cell)
    v = _number(m.group(1)) if m else None
    if v is None or (m and m.group(2) and m.group(2) not in (unit, unit.lstrip("°"))):
        b.problem(p, ln, column, f"{cell!r} is not a number in {unit}",
                  "give amd-smi's own output (pau converts amd-smi's units only)")
        return None
    return v
