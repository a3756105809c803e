"""Hardware telemetry -> pau's samples table (DESIGN §6): ``rank, time_ns, metric, value``.

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
import datetime as _dt
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine._input import _column, as_table, rank_column, time_column
from pau.engine.types import QUARANTINE_SCHEMA, RunWarning, check_on_invalid, quarantine_table
from pau.errors import InvalidRowError, NoInputError, OptionError, SchemaError, TelemetryFormatError
from pau.readers.nsys import _Db, _session

__all__ = [
    "DEVICES_SCHEMA", "FORMATS", "METRICS", "Metric", "QUARANTINE_SCHEMA", "SAMPLES_SCHEMA", "Telemetry",
    "TelemetryFormatError", "check_samples", "detect_telemetry", "normal_bus_id", "normal_uuid", "nsys_gpus",
    "read_amd_smi", "read_dcgm_exporter", "read_dcgmi_dmon", "read_nsys_gpu_metrics", "read_nvidia_smi",
    "read_prometheus_json", "read_telemetry",
]

# ---------------------------------------------------------------------------
# the vocabulary: schemas and metrics, defined once

#: The samples table (DESIGN §6). ``rank`` is the device number in a reader's output,
#: the run's rank once attached to a run.
SAMPLES_SCHEMA = pa.schema([
    pa.field("rank", pa.int32(), nullable=False), pa.field("time_ns", pa.int64(), nullable=False),
    pa.field("metric", pa.dictionary(pa.int32(), pa.string()), nullable=False),
    pa.field("value", pa.float64(), nullable=False),
])

#: One row per device a telemetry file names: ``device`` is its number (the ``rank``
#: of :attr:`Telemetry.samples`); the rest is what the file says of it (null when not).
DEVICES_SCHEMA = pa.schema([
    ("device", pa.int32()), ("index", pa.int32()), ("uuid", pa.string()), ("bus_id", pa.string()),
    ("name", pa.string()), ("host", pa.string()), ("source_file", pa.string()), ("samples", pa.int64()),
])

#: Samples set aside with ``on_invalid="quarantine"``: the common quarantine layout
#: (:data:`pau.engine.types.QUARANTINE_SCHEMA`, ``source_file, location, reason``) and no
#: column of its own. ``QUARANTINE_SCHEMA`` of this module is that schema.

#: The formats :func:`read_telemetry` reads.
FORMATS = ("nvidia_smi", "dcgm_exporter", "prometheus_json", "dcgmi_dmon", "amd_smi", "nsys_gpu_metrics")


@dataclass(frozen=True)
class Metric:
    """A metric of the samples table.

    ``kind`` says how the value holds between two samples (``docs/telemetry.md``):

    * ``"instant"``: the value at the sample's instant (a gauge: power, clocks,
      temperatures, memory used); linear between consecutive samples.
    * ``"interval"``: the average over the interval that ends at the sample (a
      utilisation or activity ratio, a rate); constant over ``[previous sample, this
      sample)``.
    * ``"counter"``: a running total (energy since boot); linear between samples, so
      its increase over an interval is exact at the samples and pro rata between them.

    ``low``/``high``: the smallest and largest valid value (None: no bound).
    """

    name: str
    kind: str
    unit: str
    low: float | None
    high: float | None
    description: str


def _m(name: str, kind: str, unit: str, low: float | None, high: float | None, description: str) -> Metric:
    return Metric(name, kind, unit, low, high, description)


#: Every metric pau knows, by name.
METRICS: dict[str, Metric] = {m.name: m for m in (
    _m("power_w", "instant", "W", 0.0, None, "board (NVIDIA) or socket (AMD) power draw"),
    _m("power_avg_w", "interval", "W", 0.0, None, "power averaged by the device over its own window "
       "(nvidia-smi power.draw.average)"),
    _m("energy_j", "counter", "J", 0.0, None, "energy consumed since the driver loaded (a running total)"),
    _m("gpu_util", "interval", "ratio", 0.0, 1.0, "share of the sample period with a kernel running "
       "(nvidia-smi utilization.gpu, DCGM GPU_UTIL, amd-smi gfx_activity)"),
    _m("mem_util", "interval", "ratio", 0.0, 1.0, "share of the sample period with device memory read or "
       "written (nvidia-smi utilization.memory, DCGM MEM_COPY_UTIL, amd-smi umc_activity)"),
    _m("enc_util", "interval", "ratio", 0.0, 1.0, "video encoder utilisation"),
    _m("dec_util", "interval", "ratio", 0.0, 1.0, "video decoder utilisation"),
    _m("mm_util", "interval", "ratio", 0.0, 1.0, "multimedia engine activity (amd-smi mm_activity)"),
    _m("gr_engine_active", "interval", "ratio", 0.0, 1.0, "share of time the graphics/compute engine is "
       "active (DCGM PROF_GR_ENGINE_ACTIVE, Nsight GR Active)"),
    _m("sm_active", "interval", "ratio", 0.0, 1.0, "share of cycles an SM has a warp resident, over all "
       "SMs (DCGM PROF_SM_ACTIVE, Nsight SMs Active)"),
    _m("sm_occupancy", "interval", "ratio", 0.0, 1.0, "resident warps over the SMs' maximum (DCGM "
       "PROF_SM_OCCUPANCY)"),
    _m("tensor_active", "interval", "ratio", 0.0, 1.0, "share of cycles the tensor pipe is active (DCGM "
       "PROF_PIPE_TENSOR_ACTIVE, Nsight Tensor Active)"),
    _m("dram_active", "interval", "ratio", 0.0, 1.0, "share of cycles the device memory interface sends or "
       "receives (DCGM PROF_DRAM_ACTIVE)"),
    _m("fp64_active", "interval", "ratio", 0.0, 1.0, "share of cycles the FP64 pipe is active"),
    _m("fp32_active", "interval", "ratio", 0.0, 1.0, "share of cycles the FP32 pipe is active"),
    _m("fp16_active", "interval", "ratio", 0.0, 1.0, "share of cycles the FP16 pipe is active"),
    _m("pcie_tx_bytes_per_s", "interval", "B/s", 0.0, None, "PCIe bytes sent per second"),
    _m("pcie_rx_bytes_per_s", "interval", "B/s", 0.0, None, "PCIe bytes received per second"),
    _m("nvlink_tx_bytes_per_s", "interval", "B/s", 0.0, None, "NVLink bytes sent per second"),
    _m("nvlink_rx_bytes_per_s", "interval", "B/s", 0.0, None, "NVLink bytes received per second"),
    _m("sm_clock_mhz", "instant", "MHz", 0.0, None, "SM clock"),
    _m("gfx_clock_mhz", "instant", "MHz", 0.0, None, "graphics clock (NVIDIA clocks.gr, Nsight GPC clock; "
       "AMD: the mean of the XCDs' gfx clocks)"),
    _m("mem_clock_mhz", "instant", "MHz", 0.0, None, "memory clock"),
    _m("gpu_temp_c", "instant", "°C", None, None, "GPU temperature (AMD: hotspot)"),
    _m("memory_temp_c", "instant", "°C", None, None, "memory (HBM) temperature"),
    _m("mem_used_bytes", "instant", "B", 0.0, None, "device memory used"),
    _m("mem_free_bytes", "instant", "B", 0.0, None, "device memory free"),
    _m("mem_reserved_bytes", "instant", "B", 0.0, None, "device memory reserved by the driver"),
    _m("mem_total_bytes", "instant", "B", 0.0, None, "device memory in all"),
)}

KINDS = ("instant", "interval", "counter")
_MIB = 2.0 ** 20



@dataclass
class Telemetry:
    """What a telemetry reader returns.

    Attributes
    ----------
    samples : pyarrow.Table
        :data:`SAMPLES_SCHEMA`, ordered by ``(rank, metric, time_ns)``; ``rank`` is the
        device number (a row of :attr:`devices`).
    devices : pyarrow.Table
        :data:`DEVICES_SCHEMA`: ``device, index, uuid, bus_id, name, host,
        source_file, samples``.
    format : str
        One of :data:`FORMATS`.
    sources : list of str
    warnings : list of RunWarning
    quarantine : pyarrow.Table
        :data:`QUARANTINE_SCHEMA`: ``source_file, location, reason`` (``location``:
        ``line N``, ``value N`` (Prometheus JSON), ``table GPU_METRICS rowid N`` or ``row N``).
    """

    samples: pa.Table
    devices: pa.Table
    format: str
    sources: list[str]
    warnings: list[RunWarning] = field(default_factory=list)
    quarantine: pa.Table = field(default_factory=QUARANTINE_SCHEMA.empty_table)

    def __repr__(self) -> str:
        return (f"Telemetry(format={self.format!r}, devices={self.devices.num_rows}, "
                f"samples={self.samples.num_rows}, warnings={len(self.warnings)}, "
                f"quarantined={self.quarantine.num_rows})")


# ---------------------------------------------------------------------------
# identities


def normal_uuid(uuid: str | None) -> str | None:
    """A GPU UUID in one spelling: lower case, without nvidia-smi's ``GPU-`` prefix
    (Nsight writes it bare). MIG instance UUIDs (``MIG-...``) keep their prefix."""
    if uuid is None:
        return None
    u = uuid.strip().lower()
    if not u or u in ("n/a", "[n/a]"):
        return None
    return u[4:] if u.startswith("gpu-") else u


_BUS = re.compile(r"^(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$")


def normal_bus_id(bus: str | None) -> str | None:
    """A PCI bus id in one spelling, ``dddd:bb:dd.f`` in lower case (nvidia-smi and DCGM
    write an 8-digit domain, ``00000000:37:00.0``; Nsight a 4-digit one); None when it
    is not a bus id."""
    if bus is None:
        return None
    m = _BUS.match(bus.strip())
    if not m:
        return None
    dom = int(m.group(1) or "0", 16)
    return f"{dom:04x}:{int(m.group(2), 16):02x}:{int(m.group(3), 16):02x}.{m.group(4)}"


# ---------------------------------------------------------------------------
# checking samples: one rule for readers and for tables given by hand


def _problems(dev: np.ndarray, t: np.ndarray, names: list[str], codes: np.ndarray, value: np.ndarray,
              extra: Mapping[str, str] | None = None) -> tuple[np.ndarray, list[tuple[int, str, str, str]]]:
    """Rows that are not usable samples: ``(keep mask, [(row, column, reason, fix)])``.

    ``names[codes[i]]`` is row i's metric. Checked in order: an unknown metric, a value
    that is NaN or infinite or out of the metric's range, then per (device, metric) in
    row order a time not after every earlier usable sample's (a duplicate instant or
    an earlier one: the first sample stays, the later is set aside)."""
    n = t.size
    keep = np.ones(n, bool)
    out: list[tuple[int, str, str, str]] = []
    extra = dict(extra or {})
    for c, name in enumerate(names):
        sel = codes == c
        if not sel.any():
            continue
        rows = np.flatnonzero(sel)
        spec = METRICS.get(name)
        if spec is None and name not in extra:
            keep[rows] = False
            out += [(int(i), "metric", f"unknown metric {name!r}",
                     f"name it as pau does ({', '.join(sorted(METRICS))}), or declare its kind "
                     "(kinds={name: 'instant'|'interval'|'counter'})") for i in rows]
            continue
        v = value[rows]
        bad = ~np.isfinite(v)
        for i in rows[bad]:
            out.append((int(i), "value", f"{name} is {float(value[i])!r} (NaN or infinite)",
                        "drop the sample or repair it (a tool writes N/A where it has no value)"))
        if spec is not None:
            fin = ~bad
            if spec.low is not None:
                low = fin & (v < spec.low)
                for i in rows[low]:
                    out.append((int(i), "value", f"{name} is {float(value[i])!r}, below {spec.low:g} {spec.unit} "
                                f"({spec.description} cannot be negative)", "drop or repair the sample"))
                bad |= low
            if spec.high is not None:
                high = fin & (v > spec.high)
                for i in rows[high]:
                    out.append((int(i), "value", f"{name} is {float(value[i])!r}, above {spec.high:g} (a ratio; "
                                "percentages are divided by 100 when read)", "drop or repair the sample"))
                bad |= high
        keep[rows[bad]] = False
    # order within each (device, metric), in row order, over the rows still usable
    ok = np.flatnonzero(keep)
    if ok.size:
        order = ok[np.lexsort((ok, codes[ok], dev[ok]))]
        d, m = dev[order], codes[order]
        starts = np.flatnonzero(np.concatenate([[True], (d[1:] != d[:-1]) | (m[1:] != m[:-1])]))
        ends = np.append(starts[1:], order.size)
        for a, b in zip(starts.tolist(), ends.tolist()):
            if b - a < 2:
                continue
            idx = order[a:b]
            tt = t[idx]
            prev = np.maximum.accumulate(tt)[:-1]
            late = np.flatnonzero(tt[1:] <= prev) + 1
            for j in late.tolist():
                i = int(idx[j])
                keep[i] = False
                same = tt[j] == prev[j - 1]
                what = (f"a second {names[codes[i]]} sample of this device at time_ns {int(tt[j])}"
                        if same else f"{names[codes[i]]} at time_ns {int(tt[j])} is earlier than a sample "
                        f"before it (time_ns {int(prev[j - 1])}): out of order")
                out.append((i, "time_ns", what, "keep one sample per device, metric and instant, in time order"))
    out.sort()
    return keep, out


def _sorted_samples(dev: np.ndarray, t: np.ndarray, names: list[str], codes: np.ndarray,
                    value: np.ndarray) -> pa.Table:
    """The samples table in ``(rank, metric name, time_ns)`` order, metric names sorted."""
    used = sorted({names[c] for c in np.unique(codes).tolist()}) if codes.size else []
    remap = np.full(max(len(names), 1), -1, np.int32)
    for i, nm in enumerate(names):
        if nm in used:
            remap[i] = used.index(nm)
    mc = remap[codes] if codes.size else np.empty(0, np.int32)
    order = np.lexsort((t, mc, dev))
    return pa.table({
        "rank": pa.array(dev[order].astype(np.int32), pa.int32()),
        "time_ns": pa.array(t[order], pa.int64()),
        "metric": pa.DictionaryArray.from_arrays(pa.array(mc[order], pa.int32()), pa.array(used, pa.string())),
        "value": pa.array(value[order], pa.float64()),
    }, schema=SAMPLES_SCHEMA)


def check_samples(samples: Any, *, on_invalid: str = "raise", kinds: Mapping[str, str] | None = None,
                  table: str = "samples") -> tuple[pa.Table, pa.Table | None]:
    """A samples table checked and put in pau's form.

    Parameters
    ----------
    samples : table-like
        ``rank`` (int), ``time_ns`` (int64 ns or a timestamp), ``metric`` (string or
        dictionary of strings, a name of :data:`METRICS`), ``value`` (number).
    on_invalid : {"raise", "quarantine"}
        Rows that are not usable samples (null fields, an unknown metric, a value that
        is NaN, infinite or out of range, a duplicate or out-of-order time within one
        rank and metric): raise :class:`pau.errors.InvalidRowError` naming the first,
        or set them aside.
    kinds : dict, optional
        Metrics outside :data:`METRICS` and their kind (``"instant"``, ``"interval"``
        or ``"counter"``); they have no range check.
    table : str
        The table's name in messages.

    Returns
    -------
    (pyarrow.Table, pyarrow.Table or None)
        The usable samples (:data:`SAMPLES_SCHEMA`, in ``(rank, metric, time_ns)``
        order) and the rows set aside (``source_file, location, reason`` with
        ``location`` = ``row N``, 0-based), None when none were.
    """
    check_on_invalid(on_invalid)
    for k, v in (kinds or {}).items():
        if v not in KINDS:
            raise OptionError(f"kinds: {k!r} has kind {v!r}; expected one of {', '.join(KINDS)}")
    t = as_table(samples, table)
    cols = {n: _column(t, n, table) for n in ("rank", "time_ns", "metric", "value")}
    if not (pa.types.is_integer(cols["value"].type) or pa.types.is_floating(cols["value"].type)):
        raise SchemaError(table, "value", f"has type {cols['value'].type}, not a number", "give values as numbers")
    mt = cols["metric"].type
    if pa.types.is_dictionary(mt):
        metric = cols["metric"].cast(mt.value_type)
    elif pa.types.is_string(mt) or pa.types.is_large_string(mt):
        metric = cols["metric"]
    else:
        raise SchemaError(table, "metric", f"has type {mt}, not string", "name metrics as strings, e.g. 'power_w'")
    nulls = np.zeros(t.num_rows, bool)
    null_col = np.full(t.num_rows, "", object)
    for name in ("rank", "time_ns", "metric", "value"):
        arr = metric if name == "metric" else cols[name]
        if arr.null_count:
            m = np.asarray(arr.is_null()) & ~nulls
            null_col[m] = name
            nulls |= m
    zero = {"rank": pa.scalar(0, cols["rank"].type), "time_ns": pa.scalar(0, cols["time_ns"].type)}
    rank = rank_column(cols["rank"].fill_null(zero["rank"]) if cols["rank"].null_count else cols["rank"], table)
    tm = time_column(cols["time_ns"].fill_null(zero["time_ns"]) if cols["time_ns"].null_count else cols["time_ns"],
                     "time_ns", table)
    assert isinstance(rank, np.ndarray) and isinstance(tm, np.ndarray)
    enc = pc.dictionary_encode(metric.fill_null("") if metric.null_count else metric)
    names = [str(x) for x in enc.dictionary.to_pylist()]
    codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False), np.int64)
    value = cols["value"].cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
    neg = rank < 0
    probs: list[tuple[int, str, str, str]] = [(int(i), str(null_col[i]), f"null {null_col[i]}",
                                               "give every sample its rank, time_ns, metric and value")
                                              for i in np.flatnonzero(nulls)]
    probs += [(int(i), "rank", f"negative rank ({int(rank[i])})", "ranks are accelerator indices >= 0")
              for i in np.flatnonzero(neg & ~nulls)]
    usable = ~(nulls | neg)
    sub = np.flatnonzero(usable)
    keep_sub, more = _problems(rank[sub], tm[sub], names, codes[sub], value[sub], kinds)
    probs += [(int(sub[i]), c, r, f) for i, c, r, f in more]
    probs.sort()
    keep = np.zeros(t.num_rows, bool)
    keep[sub[keep_sub]] = True
    if probs and on_invalid == "raise":
        i, c, r, f = probs[0]
        raise InvalidRowError(table, c, i, r, f, len(probs))
    out = _sorted_samples(rank[keep], tm[keep], names, codes[keep], value[keep])
    if not probs:
        return out, None
    q = quarantine_table(QUARANTINE_SCHEMA, None, [f"row {i}" for i, *_ in probs],
                         [f"column {c}: {r}" for _, c, r, _ in probs])
    return out, q


# ---------------------------------------------------------------------------
# building a reader's result


class _Builder:
    """Samples of one or more files as they are read, with every problem kept until
    the end, so the first one (in file order) is the one raised."""

    def __init__(self, fmt: str, on_invalid: str):
        check_on_invalid(on_invalid)
        self.fmt, self.on_invalid = fmt, on_invalid
        self.dev: list[int] = []
        self.t: list[int] = []
        self.metric: list[int] = []
        self.value: list[float] = []
        self.where: list[int] = []          # index into self.places
        self.places: list[tuple[str, int, str]] = []   # (file, line or rowid, column)
        self.names: list[str] = []
        self._name_code: dict[str, int] = {}
        self.devices: list[dict[str, Any]] = []
        self._dev_key: dict[Any, int] = {}
        self.problems: list[tuple[str, int, str, str, str]] = []   # (file, line, column, reason, fix)
        self.warnings: list[RunWarning] = []
        self.not_read: dict[str, Counter] = {}    # file -> field -> count
        self.missing: dict[str, Counter] = {}     # file -> column -> N/A values
        self.sources: list[str] = []
        self.loc_word = "line"

    def device(self, key: Any, **ident: Any) -> int:
        d = self._dev_key.get(key)
        if d is None:
            d = len(self.devices)
            self._dev_key[key] = d
            self.devices.append({"device": d, "index": None, "uuid": None, "bus_id": None, "name": None,
                                 "host": None, "source_file": None})
        row = self.devices[d]
        for k, v in ident.items():
            if v is not None and row.get(k) is None:
                row[k] = v
        return d

    def code(self, metric: str) -> int:
        c = self._name_code.get(metric)
        if c is None:
            c = self._name_code[metric] = len(self.names)
            self.names.append(metric)
        return c

    def add(self, dev: int, t: int, metric: str, value: float, path: str, line: int, column: str) -> None:
        self.dev.append(dev)
        self.t.append(t)
        self.metric.append(self.code(metric))
        self.value.append(value)
        self.where.append(len(self.places))
        self.places.append((path, line, column))

    def problem(self, path: str, line: int, column: str, reason: str, fix: str) -> None:
        self.problems.append((path, line, column, reason, fix))

    def skip(self, path: str, name: str, count: int = 1) -> None:
        self.not_read.setdefault(path, Counter())[name] += count

    def na(self, path: str, column: str) -> None:
        self.missing.setdefault(path, Counter())[column] += 1

    def finish(self) -> Telemetry:
        dev = np.array(self.dev, np.int64)
        t = np.array(self.t, np.int64)
        codes = np.array(self.metric, np.int64)
        value = np.array(self.value, np.float64)
        keep, probs = _problems(dev, t, self.names, codes, value)
        allp = list(self.problems)
        for i, col, reason, fix in probs:
            path, line, column = self.places[self.where[i]]
            allp.append((path, line, column if col == "value" else col, reason, fix))
        order = {p: k for k, p in enumerate(self.sources)}
        allp.sort(key=lambda p: (order.get(p[0], len(order)), p[1]))
        if allp and self.on_invalid == "raise":
            path, line, column, reason, fix = allp[0]
            raise InvalidRowError(path, column, line, (f"{self.loc_word} {line}: " if self.loc_word != "line"
                                                       else "") + reason, fix, len(allp))
        samples = _sorted_samples(dev[keep], t[keep], self.names, codes[keep], value[keep])
        counts = np.bincount(dev[keep], minlength=len(self.devices)) if keep.any() else np.zeros(len(self.devices),
                                                                                                 np.int64)
        for row in self.devices:
            row["samples"] = int(counts[row["device"]])
        devices = pa.Table.from_pylist(self.devices, schema=DEVICES_SCHEMA)
        warnings = list(self.warnings)
        for path, cnt in self.not_read.items():
            names = sorted(cnt)
            shown = ", ".join(names[:12]) + (f" (+{len(names) - 12} more)" if len(names) > 12 else "")
            warnings.append(RunWarning("telemetry.fields_not_read",
                                       f"{path}: {len(names)} fields are not time signals pau knows and were not "
                                       f"read: {shown} (pau's metrics: pau.readers.telemetry.METRICS)"))
        for path, cnt in self.missing.items():
            parts = ", ".join(f"{c} ({n})" for c, n in sorted(cnt.items()))
            warnings.append(RunWarning("telemetry.not_available",
                                       f"{path}: {sum(cnt.values())} values were N/A or not supported, so no sample "
                                       f"there: {parts}"))
        if allp:
            first = allp[0]
            warnings.append(RunWarning("telemetry.samples_set_aside",
                                       f"{first[0]}: {len(allp)} samples or lines set aside (first: {self.loc_word} "
                                       f"{first[1]}, {first[3]}); see the quarantine"))
        q = quarantine_table(QUARANTINE_SCHEMA, [p[0] for p in allp], [f"{self.loc_word} {p[1]}" for p in allp],
                             [f"column {p[2]}: {p[3]}" for p in allp])
        return Telemetry(samples, devices, self.fmt, list(self.sources), warnings, q)


def _paths(path: Any, what: str) -> list[str]:
    if isinstance(path, (str, os.PathLike)):
        items = [os.fspath(path)]
    else:
        items = [os.fspath(p) for p in path]
        if not items:
            raise NoInputError(f"{what}: no paths given. Fix: give a file or a list of files")
    for p in items:
        if not os.path.isfile(p):
            raise NoInputError(f"{what}: no file at {p!r}. Fix: give a telemetry file (or a list of them)")
    return items


def _text_lines(path: str) -> list[str]:
    with open(path, "rb") as f:
        raw = f.read()
    if not raw.strip():
        raise TelemetryFormatError(path, "the file is empty", "give the tool's output file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TelemetryFormatError(path, f"not UTF-8 text (byte {exc.start})", "give the tool's text output") from None
    return text.lstrip("\ufeff").splitlines()


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


_NA = {"", "n/a", "[n/a]", "na", "[not supported]", "not supported", "[unknown error]", "[insufficient permissions]",
       "[gpu requires reset]", "[gpu is lost]", "[no data]"}


# ---------------------------------------------------------------------------
# time stamps

_TS = re.compile(r"^(\d{4})[-/](\d{2})[-/](\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?\s*"
                 r"(Z|[+-]\d{2}:?\d{2})?$")
_OFFSET = re.compile(r"^(?:UTC)?([+-])(\d{2}):?(\d{2})$")


def _zone(timezone: str | None) -> Any:
    """None, an offset in seconds, or a zoneinfo zone."""
    if timezone is None:
        return None
    if timezone.upper() in ("UTC", "Z", "GMT"):
        return 0
    m = _OFFSET.match(timezone.strip())
    if m:
        return (1 if m.group(1) == "+" else -1) * (int(m.group(2)) * 3600 + int(m.group(3)) * 60)
    try:
        import zoneinfo
        return zoneinfo.ZoneInfo(timezone)
    except Exception:  # zoneinfo raises several kinds for a bad key
        raise OptionError(f"timezone: {timezone!r} is neither 'UTC', an offset such as '+02:00', nor a zone "
                          "name such as 'Europe/Berlin'") from None


def _parse_time(text: str, zone: Any) -> tuple[int, bool] | None:
    """``(ns since the epoch, had a zone)`` of a date-time, exactly; None if it is not
    one. A time without a zone is in ``zone`` (None: UTC)."""
    m = _TS.match(text.strip())
    if not m:
        return None
    y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
    frac = m.group(7) or ""
    try:
        days = _dt.date(y, mo, d).toordinal() - 719163
    except ValueError:
        return None
    if h > 23 or mi > 59 or s > 60:
        return None
    sec = days * 86400 + h * 3600 + mi * 60 + s
    tz = m.group(8)
    if tz:
        if tz != "Z":
            sign = 1 if tz[0] == "+" else -1
            digits = tz[1:].replace(":", "")
            sec -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    elif isinstance(zone, int):
        sec -= zone
    elif zone is not None:
        local = _dt.datetime(y, mo, d, h, mi, min(s, 59), tzinfo=zone)
        off = local.utcoffset()
        sec -= int(off.total_seconds()) if off is not None else 0
    return sec * 10**9 + int(frac.ljust(9, "0") if frac else 0), bool(tz)


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
        lines = _text_lines(p)
        rows = list(csv.reader(lines, skipinitialspace=True))
        first = 0
        while first < len(rows) and not rows[first]:
            first += 1
        if isinstance(columns, (list, tuple)):
            spec = _nvsmi_columns(p, list(columns), None)
            data_from = first
        else:
            if first >= len(rows):
                raise TelemetryFormatError(p, "no header line", "give nvidia-smi's CSV output")
            spec = _nvsmi_columns(p, rows[first], columns)
            data_from = first + 1
        fields = [f for f, _ in spec]
        if "timestamp" not in fields:
            raise SchemaError(p, "timestamp", "is missing (every sample needs its time)",
                              "query the field timestamp first: nvidia-smi --query-gpu=timestamp,index,...")
        if not ({"index", "uuid", "gpu_uuid", "pci.bus_id", "gpu_bus_id"} & set(fields)):
            raise SchemaError(p, "index", "is missing: no column names the GPU of a row (index, uuid or pci.bus_id)",
                              "query index or uuid, or map the column that holds it with columns=")
        plan: list[tuple[Any, ...]] = []   # per column: ("ident", key) | ("metric", metric, unit, factor) | ("skip",)
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
        ncol = len(spec)
        for ln, row in enumerate(rows[data_from:], start=data_from + 1):
            if not row:
                continue
            if len(row) != ncol:
                b.problem(p, ln, spec[min(len(row), ncol - 1)][0],
                          f"the line has {len(row)} fields, the header {ncol} (a line cut short, or a "
                          "truncated file?)", "repair or drop the line")
                continue
            ident: dict[str, Any] = {}
            when = None
            vals: list[tuple[str, str, float, str, str]] = []
            bad = False
            for cell, how, (name, _) in zip(row, plan, spec):
                cell = cell.strip()
                if how[0] == "ident":
                    key = how[1]
                    if key == "timestamp":
                        got = _parse_time(cell, zone)
                        if got is None:
                            b.problem(p, ln, "timestamp", f"{cell!r} is not a date-time", "repair or drop the line")
                            bad = True
                        else:
                            when = got[0]
                            naive += not got[1]
                    elif key == "index":
                        if not cell.isdigit():
                            b.problem(p, ln, name, f"GPU index {cell!r} is not a whole number", "repair the line")
                            bad = True
                        else:
                            ident["index"] = int(cell)
                    else:
                        ident[key] = cell if cell.lower() not in _NA else None
                elif how[0] == "metric":
                    vals.append((name, cell, 0.0, how[1], how[2]))
            if bad or when is None:
                continue
            uuid = normal_uuid(ident.get("uuid"))
            dkey = ("uuid", uuid) if uuid else ("index", p, ident.get("index"), normal_bus_id(ident.get("bus_id")))
            d = b.device(dkey, index=ident.get("index"), uuid=uuid, bus_id=normal_bus_id(ident.get("bus_id")),
                         name=ident.get("name"), source_file=p)
            for (name, cell, _, metric, unit), how in zip(vals, [h for h in plan if h[0] == "metric"]):
                if cell.lower() in _NA:
                    b.na(p, name)
                    continue
                text = cell
                if text.endswith(unit):
                    text = text[: -len(unit)].strip()
                v = _number(text)
                if v is None:
                    m = re.match(r"^[-+0-9.eE]+\s*(\S+)$", cell)
                    reason = (f"{cell!r} is in {m.group(1)!r}, not {unit!r}" if m else f"{cell!r} is not a number")
                    b.problem(p, ln, name, reason, f"give {name} in {unit} as nvidia-smi writes it")
                    continue
                b.add(d, when, metric, v * how[3], p, ln, name)
    out = b.finish()
    if naive and zone is None:
        out.warnings.append(RunWarning("nvidia_smi.time_zone_assumed",
                                       f"{naive} time stamps carry no zone (nvidia-smi writes local time): taken as "
                                       "UTC. Fix: pass timezone= (e.g. 'Europe/Berlin' or '+02:00')"))
    return out


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
        self.mig: Counter = Counter()
        self.no_gpu: Counter = Counter()

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
    if start_ns is None or interval_ns is None or interval_ns <= 0:
        raise OptionError("read_dcgmi_dmon: dcgmi dmon writes no time stamps. Fix: pass start_ns= (when the first "
                          "rows were taken, ns since the epoch) and interval_ns= (dmon's -d, in ns, > 0)")
    b = _Builder("dcgmi_dmon", on_invalid)
    entities: Counter = Counter()
    for p in _paths(path, "read_dcgmi_dmon"):
        b.sources.append(p)
        lines = _text_lines(p)
        header: list[tuple[str, int]] | None = None
        units: dict[int, str] = {}
        block = 0
        seen: set[tuple[str, str]] = set()
        for ln, line in enumerate(lines, start=1):
            s = line.rstrip()
            if not s.strip():
                continue
            if s.lstrip().startswith("#Entity"):
                new = [(m.group(0), m.start()) for m in re.finditer(r"\S+", s)][1:]
                if header is not None and [n for n, _ in new] != [n for n, _ in header]:
                    raise TelemetryFormatError(p, f"line {ln}: the header changes ({' '.join(n for n, _ in new)})",
                                               "give one dmon run per file")
                header = new
                continue
            if s.lstrip().startswith("ID") and header is not None:
                # units sit under their column's name
                for m in re.finditer(r"\S+", s):
                    if m.start() == 0 or m.group(0) == "ID":
                        continue
                    col = min(range(len(header)), key=lambda i: abs(header[i][1] - m.start()))
                    units[col] = m.group(0)
                for col, u in units.items():
                    fld = DMON_FIELDS.get(header[col][0])
                    if fld is not None and _DMON_UNITS.get(u) != DCGM_FIELDS[fld][1]:
                        raise SchemaError(p, header[col][0], f"is in {u!r} (line {ln}), not in "
                                          f"{DCGM_FIELDS[fld][1]!r} as DCGM reports it",
                                          "give dcgmi's own output (pau converts DCGM's units only)")
                continue
            if header is None:
                raise TelemetryFormatError(p, f"line {ln}: a row before the #Entity header", "give dmon's whole output")
            tok = s.split()
            if len(tok) < 2:
                b.problem(p, ln, "Entity", f"{s!r} is not an entity row (cut short?)", "repair or drop the line")
                continue
            ent, eid, vals = tok[0], tok[1], tok[2:]
            if len(vals) != len(header):
                b.problem(p, ln, header[min(len(vals), len(header) - 1)][0],
                          f"the row has {len(vals)} values, the header {len(header)} columns (a line cut short?)",
                          "repair or drop the line")
                continue
            if (ent, eid) in seen:
                block += 1
                seen.clear()
            seen.add((ent, eid))
            if ent != "GPU" or not eid.isdigit():
                entities[f"{ent} {eid}"] += 1
                continue
            when = int(start_ns) + block * int(interval_ns)
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
    if entities:
        b.warnings.append(RunWarning("dcgmi_dmon.entities_left_out",
                                     f"{sum(entities.values())} rows of entities other than GPUs left out: "
                                     + ", ".join(sorted(entities))))
    return b.finish()


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
        lines = _text_lines(p)
        rows = list(csv.reader(lines))
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
        ti, gi = head.index("timestamp"), head.index("gpu")
        gfx = [i for i, h in enumerate(head) if _GFX_CLK.match(h)]
        plan: dict[int, tuple[str, float]] = {i: AMD_SMI_FIELDS[h] for i, h in enumerate(head) if h in AMD_SMI_FIELDS}
        for i, h in enumerate(head):
            if i not in plan and i not in gfx and i not in (ti, gi):
                b.skip(p, h)
        for ln, row in enumerate(rows[first + 1:], start=first + 2):
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if [c.strip() for c in row] == head:
                continue   # a header repeated
            if len(row) != len(head):
                b.problem(p, ln, head[min(len(row), len(head) - 1)],
                          f"the line has {len(row)} fields, the header {len(head)} (a line cut short, or a "
                          "truncated file?)", "repair or drop the line")
                continue
            ts, gpu = row[ti].strip(), row[gi].strip()
            try:
                when = int(Decimal(ts) * 10**9)
            except InvalidOperation:
                b.problem(p, ln, "timestamp", f"{ts!r} is not seconds since the epoch", "repair or drop the line")
                continue
            if not gpu.isdigit():
                b.problem(p, ln, "gpu", f"GPU index {gpu!r} is not a whole number", "repair or drop the line")
                continue
            d = b.device(("index", p, int(gpu)), index=int(gpu), source_file=p)

            def value(i: int, metric: str) -> float | None:
                cell = row[i].strip()
                if cell.lower() in _NA:
                    b.na(p, head[i])
                    return None
                unit = _AMD_UNITS[metric]
                m = re.match(r"^([-+0-9.eE]+)\s*(\S*)$", cell)
                v = _number(m.group(1)) if m else None
                if v is None or (m and m.group(2) and m.group(2) not in (unit, unit.lstrip("°"))):
                    b.problem(p, ln, head[i], f"{cell!r} is not a number in {unit}",
                              "give amd-smi's own output (pau converts amd-smi's units only)")
                    return None
                return v

            for i, (metric, factor) in plan.items():
                v = value(i, metric)
                if v is not None:
                    b.add(d, when, metric, v * factor, p, ln, head[i])
            clocks = [v for v in (value(i, "gfx_clock_mhz") if row[i].strip().lower() not in _NA else None
                                  for i in gfx) if v is not None]
            if clocks:
                b.add(d, when, "gfx_clock_mhz", float(np.mean(clocks)), p, ln, "gfx_N_clk")
    return b.finish()


# ---------------------------------------------------------------------------
# Nsight Systems: GPU_METRICS

#: Nsight Systems GPU metric names pau reads (the name before the bracketed unit) ->
#: (metric, the unit in brackets, factor to pau's unit).
NSYS_METRICS: dict[str, tuple[str, str, float]] = {
    "GR Active": ("gr_engine_active", "Throughput %", 0.01),
    "SMs Active": ("sm_active", "Throughput %", 0.01),
    "Tensor Active": ("tensor_active", "Throughput %", 0.01),
    "GPC Clock Frequency": ("gfx_clock_mhz", "MHz", 1.0),
}
_NSYS_NAME = re.compile(r"^\s*(.*?)\s*(?:\[([^\]]*)\])?\s*$")


def nsys_gpus(path: str) -> list[dict[str, Any]]:
    """The GPUs an Nsight Systems export names (``TARGET_INFO_GPU``): ``id`` (the
    ``deviceId`` of its activity tables), ``uuid``, ``bus_id`` (normalised), ``name``;
    empty when the table is missing."""
    db = _Db(path)
    try:
        if "TARGET_INFO_GPU" not in db.tables:
            return []
        cols = db.columns("TARGET_INFO_GPU")
        sel = [c if c in cols else "NULL" for c in ("id", "uuid", "busLocation", "name")]
        return [{"id": i, "uuid": normal_uuid(u) if isinstance(u, str) else None,
                 "bus_id": normal_bus_id(bl) if isinstance(bl, str) else None, "name": n if isinstance(n, str) else None}
                for i, u, bl, n in db.query(f"SELECT {', '.join(sel)} FROM TARGET_INFO_GPU") if type(i) is int]
    finally:
        db.close()


def has_gpu_metrics(path: str) -> bool:
    """Whether an Nsight Systems export holds a ``GPU_METRICS`` table with rows."""
    db = _Db(path)
    try:
        return "GPU_METRICS" in db.tables and bool(db.query("SELECT 1 FROM GPU_METRICS LIMIT 1"))
    finally:
        db.close()


def read_nsys_gpu_metrics(path: Any, *, absolute: bool = True, on_invalid: str = "raise") -> Telemetry:
    """Read the ``GPU_METRICS`` table of Nsight Systems SQLite exports.

    ``GPU_METRICS(timestamp, typeId, metricId, value)`` with the names in
    ``TARGET_INFO_GPU_METRICS(typeId, metricId, metricName)``; the GPU of a sample is
    ``typeId & 0xFF`` (the ``id`` of ``TARGET_INFO_GPU``, which gives its UUID, bus id
    and name). Times are session-relative and get the session start added
    (``absolute``), as :func:`pau.readers.nsys.read_nsys` does. Metric names read:
    :data:`NSYS_METRICS` (``"SMs Active [Throughput %]"``: the unit in brackets must be
    the one listed); a sample is located by its ``rowid``.
    """
    b = _Builder("nsys_gpu_metrics", on_invalid)
    b.loc_word = "table GPU_METRICS rowid"
    for p in _paths(path, "read_nsys_gpu_metrics"):
        b.sources.append(p)
        db = _Db(p)
        try:
            if "GPU_METRICS" not in db.tables or "TARGET_INFO_GPU_METRICS" not in db.tables:
                raise TelemetryFormatError(p, "no GPU_METRICS table (the report was not captured with GPU metrics)",
                                           "profile with nsys profile --gpu-metrics-devices=all and export again")
            base, _ = _session(db, p, absolute, b.warnings)
            gpus = {g["id"]: g for g in nsys_gpus(p)}
            icols = db.columns("TARGET_INFO_GPU_METRICS")
            tsel = "typeId" if "typeId" in icols else "NULL"
            names: dict[tuple[Any, int], str] = {}
            for ty, mid, nm in db.query(f"SELECT DISTINCT {tsel}, metricId, metricName FROM TARGET_INFO_GPU_METRICS"):
                names[(ty, mid)] = str(nm)
                names.setdefault((None, mid), str(nm))
            plan: dict[str, tuple[str, float] | None] = {}
            for nm in set(names.values()):
                m = _NSYS_NAME.match(nm)
                base_name, unit = (m.group(1), m.group(2)) if m else (nm, None)
                spec = NSYS_METRICS.get(base_name)
                if spec is None:
                    plan[nm] = None
                    continue
                if unit is not None and unit != spec[1]:
                    raise SchemaError(p, f"TARGET_INFO_GPU_METRICS.{nm}", f"is in [{unit}], not in [{spec[1]}]",
                                      "give an export of a report with Nsight's standard GPU metric sets")
                plan[nm] = (spec[0], spec[2])
            rows = db.query("SELECT rowid, timestamp, typeId, metricId, value FROM GPU_METRICS ORDER BY rowid")
        finally:
            db.close()
        skipped: Counter = Counter()
        for rowid, ts, ty, mid, val in rows:
            nm = names.get((ty, mid)) or names.get((None, mid))
            if nm is None:
                b.problem(p, rowid, "metricId", f"metricId {mid!r} has no name in TARGET_INFO_GPU_METRICS",
                          "export the report again")
                continue
            how = plan.get(nm)
            if how is None:
                skipped[nm] += 1
                continue
            if type(ts) is not int or type(ty) is not int:
                b.problem(p, rowid, "timestamp", f"timestamp {ts!r} or typeId {ty!r} is not an integer",
                          "export the report again")
                continue
            if not isinstance(val, (int, float)):
                b.problem(p, rowid, "value", f"value {val!r} is not a number", "export the report again")
                continue
            gid = ty & 0xFF
            g = gpus.get(gid, {})
            d = b.device(("uuid", g["uuid"]) if g.get("uuid") else ("index", p, gid), index=gid, uuid=g.get("uuid"),
                         bus_id=g.get("bus_id"), name=g.get("name"), source_file=p)
            b.add(d, ts + base, how[0], float(val) * how[1], p, rowid, nm)
        for nm, n in skipped.items():
            b.skip(p, nm, n)
    return b.finish()


# ---------------------------------------------------------------------------
# detection and the one entry point


def detect_telemetry(path: str | os.PathLike) -> str:
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


_READERS: dict[str, Any] = {"nvidia_smi": read_nvidia_smi, "dcgm_exporter": read_dcgm_exporter,
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


__all__ += ["AMD_SMI_FIELDS", "DCGM_FIELDS", "DMON_FIELDS", "KINDS", "NSYS_METRICS", "NVIDIA_SMI_FIELDS",
            "has_gpu_metrics"]
