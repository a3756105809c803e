"""How Kineto (and Nsight) device events become pau kinds, and which host events explain
device idle time: :class:`Rules` (re-exported by :mod:`pau.readers.kineto`, where the docs
name it) and the host causes (:data:`HOST_CAUSES`, :func:`host_cause`, :func:`host_table`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

import numpy as np
import pyarrow as pa

from pau.engine.vocab import KINDS
from pau.errors import OptionError, OptionTypeError
from pau.readers.devices import DATA_WAIT_SPANS, DEVICE_TABLES, DEVICES, check_table, sync_call

__all__ = [
    "DEFAULT_CATEGORIES", "DEFAULT_COMMUNICATION", "DEFAULT_NAME_RULES", "DEFAULT_RULES", "HOST_CATEGORIES",
    "HOST_CAUSES", "HOST_SCHEMA", "NameRule", "Rules", "host_cause", "host_table",
]


class NameRule(NamedTuple):
    """``kind`` for device events of ``category`` (``"*"``: any) whose name matches
    ``pattern`` (:func:`re.search`)."""

    category: str
    pattern: str
    kind: str


def _tables_union(tables: Mapping[str, Mapping[str, Any]]
                  ) -> tuple[dict[str, str | None], tuple[str, ...], tuple[NameRule, ...]]:
    """(categories, communication, names) of device tables merged in DEVICES order (then
    any other device the caller adds). A name rule for ``"*"`` applies to its own
    table's categories only, so one vendor's names never reach another's events."""
    order = [d for d in DEVICES if d in tables] + sorted(d for d in tables if d not in DEVICES)
    cats: dict[str, str | None] = {}
    comm: list[str] = []
    names: list[NameRule] = []
    for device in order:
        t = check_table(device, tables[device])
        cats.update(t["categories"])
        comm.extend(p for p in t["communication"] if p not in comm)
        for cat, pattern, kind in t["names"]:
            for c in (t["categories"] if cat == "*" else [cat]):
                names.append(NameRule(c, pattern, kind))
    return cats, tuple(comm), tuple(names)


_DEFAULT_CATS, _DEFAULT_COMM, _DEFAULT_NAMES = _tables_union(DEVICE_TABLES)

#: Trace category -> kind (None: by name only). Categories not listed are host activity.
DEFAULT_CATEGORIES: Mapping[str, str | None] = _DEFAULT_CATS
#: Kernel names that are communication (matched with re.search).
DEFAULT_COMMUNICATION: tuple[str, ...] = _DEFAULT_COMM
#: Name rules tried before the category's default kind.
DEFAULT_NAME_RULES: tuple[NameRule, ...] = _DEFAULT_NAMES

#: Categories known to be host activity (not reported as unknown).
HOST_CATEGORIES = frozenset({
    "cpu_op", "Operator", "user_annotation", "gpu_user_annotation", "cuda_runtime", "Runtime",
    "cuda_driver", "Driver", "python_function", "Python", "Trace", "mtia_runtime",
    "cpu_instant_event", "overhead", "Overhead", "cuda_profiler_range", "fwdbwd", "ac2g",
    "async", "async_gpu", "python", "xpu_runtime", "xpu_driver", "privateuse1_runtime",
    "privateuse1_driver",
})


#: Entries of a Rules' memo of matches before it starts again.
_MEMO_MAX = 1 << 16


@dataclass(frozen=True)
class Rules:
    """How Kineto events become pau kinds.

    A complete event is device activity when its category is a key of ``categories``.
    Its kind is then, in order: the kind of the first :class:`NameRule` in ``names``
    that applies; ``communication`` when the category's kind is ``compute`` and the
    name matches a pattern of ``communication``; else ``categories[category]``. A
    category whose kind is ``None`` is classified by name only: an event no name rule
    matches is ``other`` and *unclassified*, which :func:`read_kineto` reports with its
    top names (warning ``kineto.unclassified_device_time``).

    The defaults are the device tables of :data:`pau.readers.devices.DEVICE_TABLES` (one per
    device type: CUDA, ROCm, XPU, HPU, MTIA, XLA), merged. Replace or add a device's
    table with :meth:`from_tables` (data, e.g. from a JSON file; ``read_kineto(path,
    rules={"mtia": {...}})`` does the same), or extend the rules::

        rules = Rules().extend(communication=[r"^my_allreduce"],
                               categories={"xpu_kernel": "compute"})
    """

    categories: Mapping[str, str | None] = field(default_factory=lambda: dict(DEFAULT_CATEGORIES))
    communication: Sequence[str] = DEFAULT_COMMUNICATION
    names: Sequence[NameRule] = DEFAULT_NAME_RULES

    def __post_init__(self) -> None:
        object.__setattr__(self, "categories", dict(self.categories))
        object.__setattr__(self, "communication", tuple(self.communication))
        object.__setattr__(self, "names", tuple(NameRule(*r) for r in self.names))
        for cat, kind in self.categories.items():
            if kind is not None and kind not in KINDS:
                raise OptionError(f"rules.categories[{cat!r}] = {kind!r}: expected one of {', '.join(KINDS)}, "
                                 "or None (by name only)")
        for rule in self.names:
            if rule.kind not in KINDS:
                raise OptionError(f"rules.names: {rule}: kind must be one of {', '.join(KINDS)}")
        try:
            comm = [re.compile(p) for p in self.communication]
            names = [(r.category, re.compile(r.pattern), r.kind) for r in self.names]
        except re.error as exc:
            raise OptionError(f"rules: bad regular expression {exc.pattern!r}: {exc}") from None
        object.__setattr__(self, "_comm", comm)
        object.__setattr__(self, "_names", names)
        object.__setattr__(self, "_memo", {})  # (category, name) -> match(): names repeat across files and runs

    @classmethod
    def from_tables(cls, tables: Mapping[str, Mapping[str, Any]], *, defaults: bool = True) -> "Rules":
        """Rules from device tables (see :mod:`pau.readers.devices` for their fields): each
        field of a given device's table replaces that field of the default table, the
        fields not given are kept (``defaults=False``: only the given tables)."""
        if not isinstance(tables, Mapping):
            raise OptionTypeError(f"rules: expected a pau.readers.kineto.Rules or a mapping of device tables, "
                            f"got {type(tables).__name__}")
        merged: dict[str, Mapping[str, Any]] = dict(DEVICE_TABLES) if defaults else {}
        for device, table in tables.items():
            # A field given replaces that field of the default table; the others stay.
            base = merged.get(device, {})
            merged[device] = {**base, **table} if isinstance(table, Mapping) else table
        return cls(*_tables_union(merged))

    def extend(self, *, categories: Mapping[str, str | None] | None = None,
               communication: Iterable[str] = (), names: Iterable[Sequence[str]] = ()) -> "Rules":
        """A copy with more rules; the new ones take precedence."""
        cats = dict(self.categories)
        cats.update(categories or {})
        return Rules(cats, tuple(communication) + tuple(self.communication),
                     tuple(NameRule(*r) for r in names) + tuple(self.names))

    def match(self, category: str, name: str) -> tuple[str | None, bool]:
        """``(kind, classified)`` of one event: kind None when the category is not device
        activity; ``classified`` False when a by-name category's event matched no rule
        (its kind is then ``other``)."""
        memo: dict[tuple[str, str], tuple[str | None, bool]] = self._memo  # type: ignore[attr-defined]
        got = memo.get((category, name))
        if got is None:
            got = self._match(category, name)
            if len(memo) >= _MEMO_MAX:  # a bound on memory for an ingest of many distinct names
                memo.clear()
            memo[(category, name)] = got
        return got

    def _match(self, category: str, name: str) -> tuple[str | None, bool]:
        if category not in self.categories:
            return None, True
        base = self.categories[category]
        for cat, pattern, kind in self._names:  # type: ignore[attr-defined]
            if (cat == "*" or cat == category) and pattern.search(name):
                return kind, True
        if base is None:
            return "other", False
        if base == "compute" and any(p.search(name) for p in self._comm):  # type: ignore[attr-defined]
            return "communication", True
        return base, True

    def classify(self, category: str, name: str) -> str | None:
        """The kind of one event, or None when its category is not device activity."""
        return self.match(category, name)[0]


DEFAULT_RULES = Rules()


#: The causes a host interval can give device idle time (docs/idle.md), in the order of
#: the ``cause`` dictionary of :data:`HOST_SCHEMA`.
HOST_CAUSES = ("data_wait", "sync_wait")
#: The host table of a trace: intervals in which the host waited (rank -1: every rank).
HOST_SCHEMA = pa.schema([("rank", pa.int32()), ("start_ns", pa.int64()), ("end_ns", pa.int64()),
                         ("cause", pa.dictionary(pa.int8(), pa.string()))])
_DATA_WAIT = [re.compile(p) for p in DATA_WAIT_SPANS]


def host_table(rank: np.ndarray, start: np.ndarray, end: np.ndarray, cause: np.ndarray) -> pa.Table:
    """A :data:`HOST_SCHEMA` table from columns (``cause``: indices into
    :data:`HOST_CAUSES`), sorted by (rank, start, end)."""
    rank, start, end = (np.asarray(rank, np.int32), np.asarray(start, np.int64), np.asarray(end, np.int64))
    cause = np.asarray(cause, np.int8)
    order = np.lexsort((end, start, rank))
    return pa.table({
        "rank": pa.array(rank[order], pa.int32()), "start_ns": pa.array(start[order], pa.int64()),
        "end_ns": pa.array(end[order], pa.int64()),
        "cause": pa.DictionaryArray.from_arrays(pa.array(cause[order], pa.int8()),
                                                pa.array(HOST_CAUSES, pa.string())),
    }, schema=HOST_SCHEMA)


@functools.lru_cache(maxsize=1 << 14)
def host_cause(name: str) -> int:
    """The :data:`HOST_CAUSES` index of a host event named ``name`` (a synchronize call
    or a DataLoader span), or -1."""
    if any(p.search(name) for p in _DATA_WAIT):
        return HOST_CAUSES.index("data_wait")
    if sync_call(name):
        return HOST_CAUSES.index("sync_wait")
    return -1
