"""Hardware telemetry -> pau's samples table (DESIGN §6): ``rank, time_ns, metric, value``.

The front of the telemetry readers: :func:`read_telemetry` and :func:`detect_telemetry`,
and every name of :mod:`pau.readers.samples` (the table, the metrics, :class:`Telemetry`)
and of the readers, one module per tool (:mod:`pau.readers.nvidia_smi`,
:mod:`pau.readers.dcgm`, :mod:`pau.readers.amd_smi`, :mod:`pau.readers.nsys_metrics`).

One reader per format, each returning a :class:`Telemetry`: the samples, the devices
they came from (index, UUID, PCI bus id, name, host), warnings and the samples set
aside (``on_invalid="quarantine"``). In a reader's samples, ``rank`` is the device's
number in :attr:`Telemetry.devices` (0, 1, ... in the order the file names them);
:func:`pau.read` (``samples=``) maps devices to the ranks of a run (``docs/telemetry.md``).

=================================  ===============================================
format (``read_telemetry``)        what
=================================  ===============================================
``nvidia_smi``                     ``nvidia-smi --query-gpu=... --format=csv`` logs
                                   (with or without units/header), and CSVs of the
                                   same fields under other headers (``columns=``)
``dcgm_exporter``                  dcgm-exporter ``/metrics`` scrapes (Prometheus
                                   text exposition)
``prometheus_json``                the Prometheus HTTP API's answer to a query of
                                   dcgm-exporter series (``/api/v1/query_range``)
``dcgmi_dmon``                     ``dcgmi dmon -e ... -d MS`` output
``amd_smi``                        ``amd-smi metric ... --csv`` (watch mode)
``nsys_gpu_metrics``               the ``GPU_METRICS`` table of an Nsight Systems
                                   SQLite export (``nsys profile --gpu-metrics-devices``)
=================================  ===============================================

Metrics have one name each in pau (:data:`METRICS`, with unit, kind and valid range),
whatever the tool called them: ``power_w``, ``sm_active``, ``tensor_active``... A
field of the file that is not a time signal pau knows (an XID code, a licence
status, a min/max clock setting) is not read, and the warning
``telemetry.fields_not_read`` names it.

Bad input is an error naming the file, the line (``row``; for Nsight the
``rowid``), the column and the fix, or with ``on_invalid="quarantine"`` a row of
:attr:`Telemetry.quarantine` (``source_file, location, reason``): a value that is NaN
or infinite, below or above what the metric can be (a negative power, a utilisation
above 100 %), with a unit the field does not have, a line cut short, a second sample
of one device and metric at the same instant, or one earlier than a sample before it.
"""

from __future__ import annotations

import csv
import os
import re
from typing import Any, Callable

from pau.errors import NoInputError, OptionError, TelemetryFormatError
from pau.readers.amd_smi import AMD_SMI_FIELDS, read_amd_smi
from pau.readers.dcgm import DCGM_FIELDS, DMON_FIELDS, read_dcgm_exporter, read_dcgmi_dmon, read_prometheus_json
from pau.readers.nsys_metrics import NSYS_METRICS, has_gpu_metrics, nsys_gpus, read_nsys_gpu_metrics
from pau.readers.nvidia_smi import _HEAD_UNIT, _NVSMI_IDENT, NVIDIA_SMI_FIELDS, read_nvidia_smi
from pau.readers.samples import (
    DEVICES_SCHEMA, FORMATS, KINDS, METRICS, QUARANTINE_SCHEMA, SAMPLES_SCHEMA, Metric, Telemetry, _paths,
    check_samples, normal_bus_id, normal_uuid,
)

__all__ = [
    "AMD_SMI_FIELDS", "DCGM_FIELDS", "DEVICES_SCHEMA", "DMON_FIELDS", "FORMATS", "KINDS", "METRICS", "Metric",
    "NSYS_METRICS", "NVIDIA_SMI_FIELDS", "QUARANTINE_SCHEMA", "SAMPLES_SCHEMA", "Telemetry", "TelemetryFormatError",
    "check_samples", "detect_telemetry", "has_gpu_metrics", "normal_bus_id", "normal_uuid", "nsys_gpus",
    "read_amd_smi", "read_dcgm_exporter", "read_dcgmi_dmon", "read_nsys_gpu_metrics", "read_nvidia_smi",
    "read_prometheus_json", "read_telemetry",
]

# ---------------------------------------------------------------------------
# detection and the one entry point


def detect_telemetry(path: str | os.PathLike[str]) -> str:
    """The telemetry format of a file (one of :data:`FORMATS`), from its content."""
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise NoInputError(f"nothing at {p!r}. Fix: give a telemetry file")
    with open(p, "rb") as f:
        head = f.read(64 * 1024)
    if not head.strip():
        raise TelemetryFormatError(p, "the file is empty", "give the tool's output file")
    if head[:16] == b"SQLite format 3\x00":
        return "nsys_gpu_metrics"
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    s = text.lstrip()
    if s.startswith("{"):
        if '"resultType"' in text:
            return "prometheus_json"
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if lines and lines[0].lstrip().startswith("#Entity"):
        return "dcgmi_dmon"
    if re.search(r"^(?:# (?:HELP|TYPE) )?DCGM_FI_\w+", text, re.M):
        return "dcgm_exporter"
    first = next(csv.reader([lines[0]], skipinitialspace=True)) if lines else []
    cells = [c.strip() for c in first]
    if cells[:2] == ["gpu", "total_energy_consumption"] or ("timestamp" in cells and "gpu" in cells and (
            "socket_power" in cells or "gfx_activity" in cells)):
        return "amd_smi"
    fields = {(_HEAD_UNIT.match(c).group(1).strip() if _HEAD_UNIT.match(c) else c) for c in cells}  # type: ignore[union-attr]
    if fields & set(NVIDIA_SMI_FIELDS) or (cells and cells[0] == "timestamp" and fields & (set(_NVSMI_IDENT)
                                                                                         - {"timestamp"})):
        return "nvidia_smi"
    raise TelemetryFormatError(p, "the content matches no telemetry format pau reads",
                               f"give one of {', '.join(FORMATS)}, or pass the format (and, for a CSV under other "
                               "headers, columns=)")


_READERS: dict[str, Callable[..., Telemetry]] = {"nvidia_smi": read_nvidia_smi, "dcgm_exporter": read_dcgm_exporter,
            "prometheus_json": read_prometheus_json, "dcgmi_dmon": read_dcgmi_dmon, "amd_smi": read_amd_smi,
            "nsys_gpu_metrics": read_nsys_gpu_metrics}


def read_telemetry(path: Any, *, format: str | None = None, on_invalid: str = "raise", **options: Any) -> Telemetry:
    """Read telemetry files of one format (detected from the first file's content
    unless ``format`` is given). ``options`` go to that format's reader:
    ``columns``, ``timezone`` (nvidia_smi), ``time_ns`` (dcgm_exporter), ``start_ns``,
    ``interval_ns`` (dcgmi_dmon), ``absolute`` (nsys_gpu_metrics); one that does not
    apply is an error."""
    paths = _paths(path, "read_telemetry")
    fmt = format or detect_telemetry(paths[0])
    if fmt not in _READERS:
        raise OptionError(f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    accepts = {"nvidia_smi": {"columns", "timezone"}, "dcgm_exporter": {"time_ns"},
               "dcgmi_dmon": {"start_ns", "interval_ns"}, "nsys_gpu_metrics": {"absolute"}}.get(fmt, set())
    extra = sorted(set(options) - accepts)
    if extra:
        raise OptionError(f"read_telemetry: option {', '.join(extra)} does not apply to {fmt} (it takes "
                          f"{', '.join(sorted(accepts)) or 'no option'})")
    return _READERS[fmt](paths, on_invalid=on_invalid, **options)
