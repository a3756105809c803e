"""DCGM's telemetry -> :class:`pau.readers.samples.Telemetry`: dcgm-exporter ``/metrics``
scrapes, the Prometheus HTTP API's JSON of its series, and ``dcgmi dmon`` output
(``docs/telemetry.md``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from decimal import Decimal, InvalidOperation
from typing import Any, Mapping


from pau.engine.types import RunWarning
from pau.errors import OptionError, SchemaError, TelemetryFormatError
from pau.readers.samples import (
    _MIB, _NA, Telemetry, _Builder, _number, _paths,
    _text_lines, normal_bus_id, normal_uuid,
)

__all__ = ['DCGM_FIELDS', 'DMON_FIELDS', 'read_dcgm_exporter', 'read_dcgmi_dmon', 'read_prometheus_json']

# ---------------------------------------------------------------------------
# DCGM: dcgm-exporter scrapes, the Prometheus API, dcgmi dmon

#: DCGM fields pau reads: field (dcgm-exporter's name without ``DCGM_FI_``; dmon's short
#: name in :data:`DMON_FIELDS`) -> (metric, the unit DCGM reports, factor to pau's unit).
DCGM_FIELDS: dict[str, tuple[str, str, float]] = {
    "DEV_POWER_USAGE": ("power_w", "W", 1.0),
    "DEV_TOTAL_ENERGY_CONSUMPTION": ("energy_j", "mJ", 1e-3),
    "DEV_GPU_UTIL": ("gpu_util", "%", 0.01),
    "DEV_MEM_COPY_UTIL": ("mem_util", "%", 0.01),
    "DEV_ENC_UTIL": ("enc_util", "%", 0.01),
    "DEV_DEC_UTIL": ("dec_util", "%", 0.01),
    "DEV_SM_CLOCK": ("sm_clock_mhz", "MHz", 1.0),
    "DEV_MEM_CLOCK": ("mem_clock_mhz", "MHz", 1.0),
    "DEV_GPU_TEMP": ("gpu_temp_c", "C", 1.0),
    "DEV_MEMORY_TEMP": ("memory_temp_c", "C", 1.0),
    "DEV_FB_USED": ("mem_used_bytes", "MiB", _MIB),
    "DEV_FB_FREE": ("mem_free_bytes", "MiB", _MIB),
    "DEV_FB_RESERVED": ("mem_reserved_bytes", "MiB", _MIB),
    "DEV_FB_TOTAL": ("mem_total_bytes", "MiB", _MIB),
    "PROF_GR_ENGINE_ACTIVE": ("gr_engine_active", "ratio", 1.0),
    "PROF_SM_ACTIVE": ("sm_active", "ratio", 1.0),
    "PROF_SM_OCCUPANCY": ("sm_occupancy", "ratio", 1.0),
    "PROF_PIPE_TENSOR_ACTIVE": ("tensor_active", "ratio", 1.0),
    "PROF_DRAM_ACTIVE": ("dram_active", "ratio", 1.0),
    "PROF_PIPE_FP64_ACTIVE": ("fp64_active", "ratio", 1.0),
    "PROF_PIPE_FP32_ACTIVE": ("fp32_active", "ratio", 1.0),
    "PROF_PIPE_FP16_ACTIVE": ("fp16_active", "ratio", 1.0),
    "PROF_PCIE_TX_BYTES": ("pcie_tx_bytes_per_s", "B/s", 1.0),
    "PROF_PCIE_RX_BYTES": ("pcie_rx_bytes_per_s", "B/s", 1.0),
    "PROF_NVLINK_TX_BYTES": ("nvlink_tx_bytes_per_s", "B/s", 1.0),
    "PROF_NVLINK_RX_BYTES": ("nvlink_rx_bytes_per_s", "B/s", 1.0),
}
#: ``dcgmi dmon`` column names (DCGM's field short names) -> DCGM field.
DMON_FIELDS = {
    "POWER": "DEV_POWER_USAGE", "TOTEC": "DEV_TOTAL_ENERGY_CONSUMPTION", "GPUTL": "DEV_GPU_UTIL",
    "MCUTL": "DEV_MEM_COPY_UTIL", "ENCUT": "DEV_ENC_UTIL", "DECUT": "DEV_DEC_UTIL", "SMCLK": "DEV_SM_CLOCK",
    "MMCLK": "DEV_MEM_CLOCK", "TMPTR": "DEV_GPU_TEMP", "MMTMP": "DEV_MEMORY_TEMP", "FBUSD": "DEV_FB_USED",
    "FBFRE": "DEV_FB_FREE", "FBRSV": "DEV_FB_RESERVED", "FBTTL": "DEV_FB_TOTAL", "GRACT": "PROF_GR_ENGINE_ACTIVE",
    "SMACT": "PROF_SM_ACTIVE", "SMOCC": "PROF_SM_OCCUPANCY", "TENSO": "PROF_PIPE_TENSOR_ACTIVE",
    "DRAMA": "PROF_DRAM_ACTIVE", "FP64A": "PROF_PIPE_FP64_ACTIVE", "FP32A": "PROF_PIPE_FP32_ACTIVE",
    "FP16A": "PROF_PIPE_FP16_ACTIVE", "PCITX": "PROF_PCIE_TX_BYTES", "PCIRX": "PROF_PCIE_RX_BYTES",
    "NVLTX": "PROF_NVLINK_TX_BYTES", "NVLRX": "PROF_NVLINK_RX_BYTES",
}
# The unit a dcgm-exporter HELP text names, "(in MHz)", as pau's DCGM_FIELDS spell it.
_HELP_UNIT = re.compile(r"\(in ([^)]+)\)")
_EXPO = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+(-?\d+))?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')
_MIG_LABELS = ("GPU_I_ID", "GPU_I_PROFILE")


def _labels(text: str) -> dict[str, str] | None:
    """The labels of ``{a="x",b="y"}``; None when the braces do not hold labels."""
    body = text[1:-1].strip()
    out: dict[str, str] = {}
    pos = 0
    while pos < len(body):
        m = _LABEL.match(body, pos)
        if not m:
            return None
        out[m.group(1)] = m.group(2).replace('\\"', '"').replace("\\\\", "\\").replace("\\n", "\n")
        pos = m.end()
    return out


class _Series:
    """Per-series bookkeeping shared by the DCGM readers: the device of a label set
    (MIG instances and series without a GPU are set aside, counted)."""

    def __init__(self, b: _Builder):
        self.b = b
        self.mig: Counter[str] = Counter()
        self.no_gpu: Counter[str] = Counter()

    def device(self, path: str, labels: Mapping[str, str], metric_name: str) -> int | None:
        if any(k in labels for k in _MIG_LABELS):
            self.mig[path] += 1
            return None
        gpu = labels.get("gpu")
        uuid = normal_uuid(labels.get("UUID") or labels.get("uuid"))
        if gpu is None and uuid is None:
            self.no_gpu[path] += 1
            return None
        host = labels.get("Hostname") or labels.get("hostname")
        index = int(gpu) if gpu is not None and gpu.isdigit() else None
        key = ("uuid", uuid) if uuid else ("index", host, path if host is None else None, index)
        return self.b.device(key, index=index, uuid=uuid, bus_id=normal_bus_id(labels.get("pci_bus_id")),
                             name=labels.get("modelName"), host=host, source_file=path)

    def warn(self) -> None:
        for path, n in self.mig.items():
            self.b.warnings.append(RunWarning("dcgm.mig_series_left_out",
                                              f"{path}: {n} samples of MIG instances (labels GPU_I_ID, GPU_I_PROFILE) "
                                              "left out: pau matches whole GPUs to ranks"))
        for path, n in self.no_gpu.items():
            self.b.warnings.append(RunWarning("dcgm.series_without_gpu",
                                              f"{path}: {n} samples of DCGM series without a gpu or UUID label left "
                                              "out: they name no device"))


def _dcgm_field(name: str) -> str | None:
    return name[len("DCGM_FI_"):] if name.startswith("DCGM_FI_") else None


def read_dcgm_exporter(path: Any, *, time_ns: int | None = None, on_invalid: str = "raise") -> Telemetry:
    """Read dcgm-exporter ``/metrics`` scrapes (Prometheus text exposition).

    Parameters
    ----------
    path : str, os.PathLike or a list of them
        Each file holds one scrape, or several whose sample lines carry their own
        time stamp (the exposition format's optional milliseconds after the value).
    time_ns : int, optional
        The scrape's time (ns since the epoch) for lines without a time stamp: a saved
        ``curl .../metrics`` has none. Without it such a line is an error.
    on_invalid : {"raise", "quarantine"}

    Returns
    -------
    Telemetry
        Fields read: :data:`DCGM_FIELDS` (``DCGM_FI_<field>``); devices from the labels
        ``gpu`` (index), ``UUID``, ``pci_bus_id``, ``modelName``, ``Hostname``. Series
        of MIG instances (``GPU_I_ID``) are left out with a warning. A HELP text
        naming another unit than DCGM's (``(in mW)`` for power) is an error.
    """
    b = _Builder("dcgm_exporter", on_invalid)
    series = _Series(b)
    for p in _paths(path, "read_dcgm_exporter"):
        b.sources.append(p)
        lines = _text_lines(p)
        for ln, line in enumerate(lines, start=1):
            s = line.strip()
            if not s:
                continue
            if s.startswith("#"):
                parts = s.split(None, 3)
                if len(parts) >= 3 and parts[1] == "HELP":
                    fld = _dcgm_field(parts[2])
                    unit = _HELP_UNIT.search(parts[3]) if len(parts) > 3 else None
                    if fld in DCGM_FIELDS and unit and unit.group(1).strip() != DCGM_FIELDS[fld][1]:
                        raise SchemaError(p, parts[2], f"is in {unit.group(1).strip()!r} by its HELP text (line {ln}), "
                                          f"not in {DCGM_FIELDS[fld][1]!r} as DCGM reports it",
                                          "give the exporter's own output (pau converts DCGM's units only)")
                continue
            m = _EXPO.match(s)
            labels = _labels(m.group(2)) if m and m.group(2) else ({} if m else None)
            if m is None or labels is None:
                b.problem(p, ln, "line", f"not a sample line of the exposition format ({s[:60]!r}: cut short?)",
                          "repair or drop the line")
                continue
            name, raw, stamp = m.group(1), m.group(3), m.group(4)
            fld = _dcgm_field(name)
            if fld not in DCGM_FIELDS:
                b.skip(p, name)
                continue
            if stamp is not None:
                when = int(stamp) * 10**6
            elif time_ns is not None:
                when = int(time_ns)
            else:
                raise TelemetryFormatError(p, f"line {ln}: the sample has no time stamp (a saved scrape has none)",
                                           "pass time_ns= (the scrape's time, ns since the epoch)")
            d = series.device(p, labels, name)
            if d is None:
                continue
            v = _number(raw)
            metric, _, factor = DCGM_FIELDS[fld]
            if v is None:
                b.problem(p, ln, name, f"value {raw!r} is not a number", "repair or drop the line")
                continue
            b.add(d, when, metric, v * factor, p, ln, name)
    series.warn()
    return b.finish()


def read_prometheus_json(path: Any, *, on_invalid: str = "raise") -> Telemetry:
    """Read dcgm-exporter series as the Prometheus HTTP API returns them: the JSON
    of ``/api/v1/query_range`` (``resultType`` ``matrix``: ``values`` per series) or
    ``/api/v1/query`` (``vector``: one ``value``). Times are seconds (with
    milliseconds) since the epoch, read exactly; values are strings. Fields and
    devices as :func:`read_dcgm_exporter` (``__name__`` is the field); a sample is
    located as ``value R``, the R-th value of the answer (1-based, in file order)."""
    b = _Builder("prometheus_json", on_invalid)
    b.loc_word = "value"
    series = _Series(b)
    for p in _paths(path, "read_prometheus_json"):
        b.sources.append(p)
        with open(p, "rb") as f:
            raw = f.read()
        try:
            doc = json.loads(raw, parse_float=Decimal, parse_int=Decimal)
        except ValueError as exc:
            raise TelemetryFormatError(p, f"not JSON ({exc}; a truncated file?)", "give the API's whole answer") from None
        data = doc.get("data") if isinstance(doc, dict) else None
        if not isinstance(data, dict) or data.get("resultType") not in ("matrix", "vector"):
            raise TelemetryFormatError(p, "not a Prometheus query answer (no data.resultType matrix or vector)",
                                       "save the answer of /api/v1/query_range (or /api/v1/query)")
        k = 0
        for res in data.get("result") or []:
            labels = res.get("metric") or {}
            name = str(labels.get("__name__", ""))
            pts = res.get("values") if data["resultType"] == "matrix" else [res.get("value")]
            pts = [x for x in (pts or []) if x is not None]
            fld = _dcgm_field(name)
            if fld not in DCGM_FIELDS:
                b.skip(p, name or "(no __name__)", len(pts))
                k += len(pts)
                continue
            metric, _, factor = DCGM_FIELDS[fld]
            d = series.device(p, {str(a): str(v) for a, v in labels.items()}, name)
            for pt in pts:
                k += 1
                if d is None:
                    continue
                try:
                    when = int(Decimal(pt[0]) * 10**9)
                    v = float(pt[1])
                except (TypeError, ValueError, IndexError, InvalidOperation):
                    b.problem(p, k, name, f"{pt!r} is not [time, \"value\"]", "give the API's answer unchanged")
                    continue
                b.add(d, when, metric, v * factor, p, k, name)
    series.warn()
    return b.finish()


_DMON_UNITS = {"W": "W", "mJ": "mJ", "MHz": "MHz", "C": "C", "%": "%", "MB": "MiB", "MiB": "MiB", "B/s": "B/s"}


def read_dcgmi_dmon(path: Any, *, start_ns: int | None = None, interval_ns: int | None = None,
                    on_invalid: str = "raise") -> Telemetry:
    """Read ``dcgmi dmon -e FIELDS -d MS`` output.

    The output has no time stamps: row blocks (one row per entity) come every ``-d``
    milliseconds. The k-th block (from 0) is taken at ``start_ns + k * interval_ns``;
    a block ends when an entity seen in it comes again. Header and unit lines
    (``#Entity ...``, ``ID ...``; dmon repeats them) are read for the columns and
    their units; ``N/A`` is no sample. Only ``GPU n`` entities are read.

    Parameters
    ----------
    start_ns, interval_ns : int
        When the first block was taken (ns since the epoch) and ``-d`` in ns. Both
        are required: pau does not guess the times of samples.
    """
    if (not isinstance(start_ns, int) or isinstance(start_ns, bool) or not isinstance(interval_ns, int)
            or isinstance(interval_ns, bool) or interval_ns <= 0):
        raise OptionError("read_dcgmi_dmon: dcgmi dmon writes no time stamps. Fix: pass start_ns= (when the first "
                          "rows were taken, int ns since the epoch) and interval_ns= (dmon's -d, in int ns, > 0)")
    b = _Builder("dcgmi_dmon", on_invalid)
    entities: Counter[str] = Counter()
    for p in _paths(path, "read_dcgmi_dmon"):
        b.sources.append(p)
        f = _DmonFile(b, p, start_ns, interval_ns, entities)
        for ln, line in enumerate(_text_lines(p), start=1):
            f.line(ln, line.rstrip())
    if entities:
        b.warnings.append(RunWarning("dcgmi_dmon.entities_left_out",
                                     f"{sum(entities.values())} rows of entities other than GPUs left out: "
                                     + ", ".join(sorted(entities))))
    return b.finish()


class _DmonFile:
    """One dmon output as its lines are read: the columns (name, position) of the last
    header, their units, and the block (tick) the rows are in."""

    def __init__(self, b: _Builder, p: str, start_ns: int, interval_ns: int, entities: Counter[str]):
        self.b, self.p, self.start_ns, self.interval_ns, self.entities = b, p, start_ns, interval_ns, entities
        self.header: list[tuple[str, int]] | None = None
        self.units: dict[int, str] = {}
        self.block = 0
        self.seen: set[tuple[str, str]] = set()

    def line(self, ln: int, s: str) -> None:
        if not s.strip():
            return
        if s.lstrip().startswith("#Entity"):
            new = [(m.group(0), m.start()) for m in re.finditer(r"\S+", s)][1:]
            if self.header is not None and [n for n, _ in new] != [n for n, _ in self.header]:
                raise TelemetryFormatError(self.p, f"line {ln}: the header changes ({' '.join(n for n, _ in new)})",
                                           "give one dmon run per file")
            self.header = new
        elif s.lstrip().startswith("ID") and self.header is not None:
            self.units_line(ln, s, self.header)
        elif self.header is None:
            raise TelemetryFormatError(self.p, f"line {ln}: a row before the #Entity header", "give dmon's whole output")
        else:
            self.row(ln, s, self.header)

    def units_line(self, ln: int, s: str, header: list[tuple[str, int]]) -> None:
        # units sit under their column's name
        for m in re.finditer(r"\S+", s):
            if m.start() == 0 or m.group(0) == "ID":
                continue
            col = min(range(len(header)), key=lambda i: abs(header[i][1] - m.start()))
            self.units[col] = m.group(0)
        for col, u in self.units.items():
            fld = DMON_FIELDS.get(header[col][0])
            if fld is not None and _DMON_UNITS.get(u) != DCGM_FIELDS[fld][1]:
                raise SchemaError(self.p, header[col][0], f"is in {u!r} (line {ln}), not in "
                                  f"{DCGM_FIELDS[fld][1]!r} as DCGM reports it",
                                  "give dcgmi's own output (pau converts DCGM's units only)")

    def row(self, ln: int, s: str, header: list[tuple[str, int]]) -> None:
        b, p = self.b, self.p
        tok = s.split()
        if len(tok) < 2:
            b.problem(p, ln, "Entity", f"{s!r} is not an entity row (cut short?)", "repair or drop the line")
            return
        ent, eid, vals = tok[0], tok[1], tok[2:]
        if len(vals) != len(header):
            b.problem(p, ln, header[min(len(vals), len(header) - 1)][0],
                      f"the row has {len(vals)} values, the header {len(header)} columns (a line cut short?)",
                      "repair or drop the line")
            return
        if (ent, eid) in self.seen:
            self.block += 1
            self.seen.clear()
        self.seen.add((ent, eid))
        if ent != "GPU" or not eid.isdigit():
            self.entities[f"{ent} {eid}"] += 1
            return
        when = self.start_ns + self.block * self.interval_ns
        if not -2**63 <= when < 2**63:
            b.problem(p, ln, "Entity", f"block {self.block} is taken at {when} ns, past int64 ns",
                      "check start_ns and interval_ns")
            return
        d = b.device(("index", p, int(eid)), index=int(eid), source_file=p)
        for (name, _), raw in zip(header, vals):
            fld = DMON_FIELDS.get(name)
            if fld is None:
                b.skip(p, name)
                continue
            if raw.lower() in _NA:
                b.na(p, name)
                continue
            v = _number(raw)
            if v is None:
                b.problem(p, ln, name, f"value {raw!r} is not a number", "repair or drop the line")
                continue
            metric, _, factor = DCGM_FIELDS[fld]
            b.add(d, when, metric, v * factor, p, ln, name)
