"""The samples table of hardware telemetry (DESIGN §6) and what every telemetry reader
shares: the metrics pau knows (:data:`METRICS`), :class:`Telemetry` (a reader's result),
:func:`check_samples` (a samples table given directly), device identifiers, time stamps,
and the builder that collects a reader's samples and problems.

The readers are one module per tool (:mod:`pau.readers.nvidia_smi`,
:mod:`pau.readers.dcgm`, :mod:`pau.readers.amd_smi`, :mod:`pau.readers.nsys_metrics`);
:mod:`pau.readers.telemetry` is their front (``read_telemetry``, ``detect_telemetry``)
and names all of this too.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine._input import _column, as_table, rank_column, time_column
from pau.engine.types import QUARANTINE_SCHEMA, RunWarning, check_on_invalid, quarantine_table
from pau.errors import InvalidRowError, NoInputError, OptionError, SchemaError, TelemetryFormatError

__all__ = [
    "DEVICES_SCHEMA", "FORMATS", "KINDS", "METRICS", "Metric", "QUARANTINE_SCHEMA", "SAMPLES_SCHEMA", "Telemetry",
    "check_samples", "normal_bus_id", "normal_uuid",
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
                  table: str = "samples") -> tuple[pa.Table, pa.Table]:
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
    (pyarrow.Table, pyarrow.Table)
        The usable samples (:data:`SAMPLES_SCHEMA`, in ``(rank, metric, time_ns)``
        order) and the rows set aside (``source_file, location, reason`` with
        ``location`` = ``row N``, 0-based), empty when none were (always with
        ``on_invalid="raise"``, which raises instead).
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
        return out, QUARANTINE_SCHEMA.empty_table()
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
        self.not_read: dict[str, Counter[str]] = {}    # file -> field -> count
        self.missing: dict[str, Counter[str]] = {}     # file -> column -> N/A values
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


