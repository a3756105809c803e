"""A fleet rollup as OpenMetrics text with timestamps (``pau fleet --format openmetrics``,
``docs/fleet.md`` "OpenMetrics"): history that ``promtool tsdb create-blocks-from
openmetrics`` loads into Prometheus.

One sample per group and period, stamped at the period's end (seconds since the epoch).
Prometheus naming: base units (seconds), ``_ratio`` for 0-1, counters' samples end in
``_total`` and are cumulative over the group's periods (Prometheus' ``increase()`` over a
period gives the period's figure back), every family has ``# TYPE``, ``# UNIT`` (when it
has a unit) and ``# HELP``, the text ends with ``# EOF``. The families come one after the
other, each group's samples together in time order (OpenMetrics forbids interleaving).
Label values are escaped (backslash, double quote, line feed). The group keys are the
labels; job and run ids are refused as labels unless asked for (one series per job or run
is the cardinality Prometheus is not built for).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Optional

from pau.engine.vocab import STATES
from pau.errors import PauError
from pau.fleet.rollup import Rollup

__all__ = ["METRICS", "label_name", "render"]

_NS = 10**9
#: Group keys that name one job or run: refused as labels unless ``id_labels``.
ID_KEYS = ("job", "run", "source", "sources")


def label_name(key: str) -> str:
    """A group key as a label name: ``labels.team`` -> ``labels_team``; other characters
    outside ``[a-zA-Z0-9_]`` -> ``_``; a leading digit gets ``_``."""
    name = re.sub(r"[^a-zA-Z0-9_]", "_", key)
    return "_" + name if name[:1].isdigit() else name


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(v: Any) -> str:
    return str(v) if isinstance(v, int) else repr(float(v))


def _stamp(ns: int) -> str:
    """ns since the epoch as seconds, exactly (decimal digits of the ns)."""
    s, rest = divmod(ns, _NS)
    return str(s) if rest == 0 else f"{s}.{rest:09d}".rstrip("0")


#: A family: (name, type, unit, help, rollup column, an extra label (name, value) or None,
#: divisor of the column's value). Counters are the column summed over the group's periods
#: up to each one (in the column's integers, divided at the end); gauges the period's value.
_Family = tuple[str, str, str, str, str, Optional[tuple[str, str]], int]


def _families(costs: bool, currency: str | None) -> list[_Family]:
    fams: list[_Family] = [
        ("pau_allocated_accelerator_seconds", "counter", "seconds",
         "Accelerator time the scheduler allocated (without a jobs table: the time the runs accounted).",
         "allocated_ns", None, _NS),
    ]
    for s in STATES:
        fams.append(("pau_accelerator_seconds", "counter", "seconds",
                     ("Accountable accelerator time by lifecycle state (pau's ledger; a job with no run is "
                     "unattributed)."), s.replace(".", "_") + "_ns", ("state", s), _NS))
    fams += [
        ("pau_goodput_ratio", "gauge", "ratio", ("Productive over accountable accelerator time in the period "
         "(a ratio of sums)."), "goodput", None, 1),
        ("pau_allocated_goodput_ratio", "gauge", "ratio", ("Productive over allocated accelerator time in the "
         "period."), "goodput_allocated", None, 1),
        ("pau_failures", "counter", "", "Failures of the runs that ended in the period.", "failures", None, 1),
        ("pau_preserved_steps", "counter", "", "Training steps preserved by the runs that ended in the period.",
         "preserved_steps", None, 1),
        ("pau_energy_joules", "counter", "joules", ("Energy of the runs that ended in the period, from their "
         "power or energy samples (a group with none has no sample)."), "energy_j", None, 1),
        ("pau_mfu_ratio", "gauge", "ratio", ("Model FLOPs utilisation over productive time of the runs that ended "
         "in the period and know their FLOPs per step and peak (a ratio of sums)."), "mfu", None, 1),
        ("pau_jobs_started", "counter", "", "Jobs that started in the period.", "jobs_started", None, 1),
        ("pau_queue_seconds", "counter", "seconds", "Queue time of the jobs that started in the period.",
         "queue_ns", None, _NS),
        ("pau_time_to_recover_mean_seconds", "gauge", "seconds", ("Mean time from a failure to progress again, "
         "over the recoveries of the runs that ended in the period."), "time_to_recover_mean_s", None, 1),
        ("pau_time_to_recover_p90_seconds", "gauge", "seconds", ("90th percentile of the runs' mean times to "
         "recover, weighted by their recoveries."), "time_to_recover_p90_s", None, 1),
    ]
    if costs:
        fams.append(("pau_cost", "counter", "", (f"Cost of the allocated accelerator time in {currency} (the cost "
                     "model's rate per accelerator type and cluster)."), "cost", ("currency", currency or ""), 1))
        fams.append(("pau_energy_cost", "counter", "", (f"Cost of the energy in {currency}: measured joules where a "
                     "run measured them, else the nominal draw over the allocated hours, at the model's PUE and "
                     "price (a period with no priced energy has no sample)."), "energy_cost",
                     ("currency", currency or ""), 1))
    return fams


#: The metric families, by name (without ``_total``).
METRICS = tuple(dict.fromkeys(f[0] for f in _families(True, "USD")))


def render(r: Rollup, *, id_labels: bool = False) -> str:
    """The rollup as OpenMetrics text (ends with ``# EOF``)."""
    ids = [k for k in r.by if k in ID_KEYS]
    if ids and not id_labels:
        raise PauError(f"openmetrics: grouped by {', '.join(ids)}: one series per job or run (cardinality). Fix: "
                       "group by cluster, team, accelerator_type, ...; or pass id_labels=True (--id-labels)")
    names = [label_name(k) for k in r.by]
    if len(set(names)) != len(names):
        raise PauError(f"openmetrics: the group keys {r.by} give the same label name twice. Fix: group by one of them")
    rows = r.table.to_pylist()
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in r.by), []).append(row)
    for g in groups.values():
        g.sort(key=lambda x: x["period_end_ns"])
    fams = _families("cost" in r.table.column_names, r.currency)
    out: list[str] = []
    seen: set[str] = set()
    for name, kind, unit, text, column, extra, scale in fams:
        if name not in seen:
            seen.add(name)
            out.append(f"# TYPE {name} {kind}")
            if unit:
                out.append(f"# UNIT {name} {unit}")
            out.append(f"# HELP {name} {_help(text)}")
        sample = name + ("_total" if kind == "counter" else "")
        for key, period_rows in groups.items():
            labels = [(n, "" if v is None else str(v)) for n, v in zip(names, key)]
            if extra is not None:
                labels.append(extra)
            lab = ",".join(f'{n}="{_escape(v)}"' for n, v in labels if v != "")
            lab = "{" + lab + "}" if lab else ""
            total: Any = 0
            for row in period_rows:
                v = row[column]
                if v is None:
                    continue
                if kind == "counter":
                    total += v
                    v = total
                out.append(f"{sample}{lab} {_number(v if scale == 1 else v / scale)} {_stamp(row['period_end_ns'])}")
    out.append("# EOF")
    return "\n".join(out) + "\n"


def describe() -> Sequence[tuple[str, str, str, str]]:
    """(name, type, unit, help) of every family, for the docs."""
    return [(f[0], f[1], f[2], f[3]) for f in _families(True, "USD")]

