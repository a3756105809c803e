"""nvidia-smi ``--query-gpu=... --format=csv`` logs -> :class:`pau.readers.samples.Telemetry`
(``docs/telemetry.md``).
"""

from __future__ import annotations

import csv
import re
from typing import Any, List, Mapping, Sequence, Tuple


from pau.engine.types import RunWarning
from pau.errors import OptionError, SchemaError, TelemetryFormatError
from pau.readers.samples import (
    _MIB, _NA, Telemetry, _Builder, _number, _parse_time, _paths,
    _text_lines, _zone, normal_bus_id, normal_uuid,
)

__all__ = ['NVIDIA_SMI_FIELDS', 'read_nvidia_smi']

# ---------------------------------------------------------------------------
# nvidia-smi --query-gpu --format=csv

#: nvidia-smi query fields pau reads: field -> (metric, the unit nvidia-smi prints, factor to pau's unit).
NVIDIA_SMI_FIELDS: dict[str, tuple[str, str, float]] = {
    "utilization.gpu": ("gpu_util", "%", 0.01),
    "utilization.memory": ("mem_util", "%", 0.01),
    "utilization.encoder": ("enc_util", "%", 0.01),
    "utilization.decoder": ("dec_util", "%", 0.01),
    "power.draw": ("power_w", "W", 1.0),
    "power.draw.instant": ("power_w", "W", 1.0),
    "power.draw.average": ("power_avg_w", "W", 1.0),
    "temperature.gpu": ("gpu_temp_c", "C", 1.0),
    "temperature.memory": ("memory_temp_c", "C", 1.0),
    "clocks.current.sm": ("sm_clock_mhz", "MHz", 1.0),
    "clocks.sm": ("sm_clock_mhz", "MHz", 1.0),
    "clocks.current.memory": ("mem_clock_mhz", "MHz", 1.0),
    "clocks.mem": ("mem_clock_mhz", "MHz", 1.0),
    "clocks.current.graphics": ("gfx_clock_mhz", "MHz", 1.0),
    "clocks.gr": ("gfx_clock_mhz", "MHz", 1.0),
    "memory.used": ("mem_used_bytes", "MiB", _MIB),
    "memory.free": ("mem_free_bytes", "MiB", _MIB),
    "memory.total": ("mem_total_bytes", "MiB", _MIB),
    "memory.reserved": ("mem_reserved_bytes", "MiB", _MIB),
}
_NVSMI_IDENT = {"index": "index", "uuid": "uuid", "gpu_uuid": "uuid", "pci.bus_id": "bus_id",
                "gpu_bus_id": "bus_id", "name": "name", "gpu_name": "name", "timestamp": "timestamp"}
_HEAD_UNIT = re.compile(r"^\s*([^\[\]]+?)\s*(?:\[([^\]]*)\])?\s*$")


def _nvsmi_columns(path: str, header: list[str], columns: Any) -> list[tuple[str, str | None]]:
    """(field, unit or None) per column: from the header, renamed by ``columns`` (a
    dict), or ``columns`` itself (a list, for ``--format=csv,noheader``)."""
    if isinstance(columns, Mapping):
        cells = [columns.get(h.strip(), h) for h in header]
        unknown = sorted(set(columns) - {h.strip() for h in header})
        if unknown:
            raise OptionError(f"columns: {path} has no column {unknown[0]!r} (its header: {', '.join(header)})")
    else:
        cells = list(header)
    out = []
    for c in cells:
        m = _HEAD_UNIT.match(c)
        if not m:
            raise TelemetryFormatError(path, f"column {c!r} is not an nvidia-smi field", "give the query field name, "
                                       "e.g. 'power.draw [W]' (columns= maps a header to it)")
        out.append((m.group(1).strip(), m.group(2).strip() if m.group(2) is not None else None))
    return out


def read_nvidia_smi(path: Any, *, columns: Sequence[str] | Mapping[str, str] | None = None,
                    timezone: str | None = None, on_invalid: str = "raise") -> Telemetry:
    """Read ``nvidia-smi --query-gpu=... --format=csv[,nounits][,noheader]`` logs.

    Parameters
    ----------
    path : str, os.PathLike or a list of them
        One log per file (several files: one per node; their devices are numbered on).
    columns : list or dict, optional
        A list: the query fields in order, for a log written with ``noheader``
        (``["timestamp", "index", "power.draw [W]"]``). A dict: header names of a CSV
        written by a script around nvidia-smi, mapped to the fields they hold
        (``{"gpu_index": "index", "power_W": "power.draw [W]"}``).
    timezone : str, optional
        The zone of nvidia-smi's own time stamps (``2025/06/13 00:27:52.195``, local
        time without a zone): ``"UTC"``, an offset (``"+02:00"``) or a zone name
        (``"Europe/Berlin"``). Without it they are taken as UTC, with the warning
        ``nvidia_smi.time_zone_assumed``. ISO-8601 times with a zone keep theirs.
    on_invalid : {"raise", "quarantine"}

    Returns
    -------
    Telemetry
        Fields read: :data:`NVIDIA_SMI_FIELDS`; a device is named by ``uuid`` when the
        log has it, else by ``index`` (per file); ``pci.bus_id`` and ``name`` are kept.
    """
    b = _Builder("nvidia_smi", on_invalid)
    zone = _zone(timezone)
    naive = 0
    for p in _paths(path, "read_nvidia_smi"):
        b.sources.append(p)
        rows = list(csv.reader(_text_lines(p), skipinitialspace=True))
        spec, data_from = _nvsmi_spec(p, rows, columns)
        plan = _nvsmi_plan(b, p, spec)
        for ln, row in enumerate(rows[data_from:], start=data_from + 1):
            if not row:
                continue
            if len(row) != len(spec):
                b.problem(p, ln, spec[min(len(row), len(spec) - 1)][0],
                          f"the line has {len(row)} fields, the header {len(spec)} (a line cut short, or a "
                          "truncated file?)", "repair or drop the line")
                continue
            ident, when, ok = _nvsmi_line(b, p, ln, row, plan, spec, zone)
            naive += when is not None and not when[1]
            if not ok or when is None:
                continue
            uuid = normal_uuid(ident.get("uuid"))
            dkey = ("uuid", uuid) if uuid else ("index", p, ident.get("index"), normal_bus_id(ident.get("bus_id")))
            d = b.device(dkey, index=ident.get("index"), uuid=uuid, bus_id=normal_bus_id(ident.get("bus_id")),
                         name=ident.get("name"), source_file=p)
            _nvsmi_values(b, p, ln, d, when[0], row, plan, spec)
    out = b.finish()
    if naive and zone is None:
        out.warnings.append(RunWarning("nvidia_smi.time_zone_assumed",
                                       f"{naive} time stamps carry no zone (nvidia-smi writes local time): taken as "
                                       "UTC. Fix: pass timezone= (e.g. 'Europe/Berlin' or '+02:00')"))
    return out


def _nvsmi_spec(p: str, rows: list[list[str]], columns: Sequence[str] | Mapping[str, str] | None
                ) -> tuple[list[tuple[str, str | None]], int]:
    """(field, unit) per column and the first data row: from ``columns`` (a list, for a
    log without header) or the header line (renamed by ``columns``, a dict)."""
    first = 0
    while first < len(rows) and not rows[first]:
        first += 1
    if isinstance(columns, (list, tuple)):
        spec, data_from = _nvsmi_columns(p, list(columns), None), first
    else:
        if first >= len(rows):
            raise TelemetryFormatError(p, "no header line", "give nvidia-smi's CSV output")
        spec, data_from = _nvsmi_columns(p, rows[first], columns), first + 1
    fields = [f for f, _ in spec]
    if "timestamp" not in fields:
        raise SchemaError(p, "timestamp", "is missing (every sample needs its time)",
                          "query the field timestamp first: nvidia-smi --query-gpu=timestamp,index,...")
    if not ({"index", "uuid", "gpu_uuid", "pci.bus_id", "gpu_bus_id"} & set(fields)):
        raise SchemaError(p, "index", "is missing: no column names the GPU of a row (index, uuid or pci.bus_id)",
                          "query index or uuid, or map the column that holds it with columns=")
    return spec, data_from


#: What a reader does with a column: ("ident", key) | ("metric", metric, unit, factor) | ("skip",).
_Plan = List[Tuple[Any, ...]]


def _nvsmi_plan(b: _Builder, p: str, spec: list[tuple[str, str | None]]) -> _Plan:
    """What to do with each column; a metric in another unit than nvidia-smi's is an error."""
    plan: _Plan = []
    for name, unit in spec:
        if name in _NVSMI_IDENT:
            plan.append(("ident", _NVSMI_IDENT[name]))
        elif name in NVIDIA_SMI_FIELDS:
            metric, want, factor = NVIDIA_SMI_FIELDS[name]
            if unit is not None and unit != want:
                raise SchemaError(p, f"{name} [{unit}]", f"is in {unit!r}, not in {want!r} as nvidia-smi writes "
                                  "it", f"give the field in [{want}] (pau converts nvidia-smi's units only)")
            plan.append(("metric", metric, want, factor))
        else:
            plan.append(("skip",))
            b.skip(p, name)
    return plan


def _nvsmi_line(b: _Builder, p: str, ln: int, row: list[str], plan: _Plan, spec: list[tuple[str, str | None]],
                zone: Any) -> tuple[dict[str, Any], tuple[int, bool] | None, bool]:
    """A line's device identifiers, its time (ns, whether it had a zone; None when it
    cannot be read) and whether the line is usable (its problems kept in ``b``)."""
    ident: dict[str, Any] = {}
    when: tuple[int, bool] | None = None
    bad = False
    for cell, how, (name, _) in zip(row, plan, spec):
        if how[0] != "ident":
            continue
        cell, key = cell.strip(), how[1]
        if key == "timestamp":
            when = _parse_time(cell, zone)
            if when is None:
                b.problem(p, ln, "timestamp", f"{cell!r} is not a date-time", "repair or drop the line")
                bad = True
        elif key == "index":
            if not cell.isdigit():
                b.problem(p, ln, name, f"GPU index {cell!r} is not a whole number", "repair the line")
                bad = True
            else:
                ident["index"] = int(cell)
        else:
            ident[key] = cell if cell.lower() not in _NA else None
    return ident, when, not bad


def _nvsmi_values(b: _Builder, p: str, ln: int, d: int, when: int, row: list[str], plan: _Plan,
                  spec: list[tuple[str, str | None]]) -> None:
    """The line's metric samples of device ``d`` (N/A counted, a value in another unit a problem)."""
    for cell, how, (name, _) in zip(row, plan, spec):
        if how[0] != "metric":
            continue
        cell = cell.strip()
        metric, unit, factor = how[1], how[2], how[3]
        if cell.lower() in _NA:
            b.na(p, name)
            continue
        text = cell[: -len(unit)].strip() if cell.endswith(unit) else cell
        v = _number(text)
        if v is None:
            m = re.match(r"^[-+0-9.eE]+\s*(\S+)$", cell)
            reason = (f"{cell!r} is in {m.group(1)!r}, not {unit!r}" if m else f"{cell!r} is not a number")
            b.problem(p, ln, name, reason, f"give {name} in {unit} as nvidia-smi writes it")
            continue
        b.add(d, when, metric, v * factor, p, ln, name)


