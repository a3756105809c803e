"""The ``GPU_METRICS`` table of an Nsight Systems SQLite export (``nsys profile
--gpu-metrics-devices``) -> :class:`pau.readers.samples.Telemetry` (``docs/telemetry.md``).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any


from pau.errors import SchemaError, TelemetryFormatError
from pau.readers.nsys import _Db, _session
from pau.readers.samples import (
    Telemetry, _Builder, _paths,
    normal_bus_id, normal_uuid,
)

__all__ = ['NSYS_METRICS', 'has_gpu_metrics', 'nsys_gpus', 'read_nsys_gpu_metrics']

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
        skipped: Counter[str] = Counter()
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


