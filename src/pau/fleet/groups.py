"""Group keys and filters of a fleet rollup (``docs/fleet.md``, "Rollups"): ``where``
terms, a group key's values in the runs or jobs table (a column or ``labels.K``), the
fine groups of runs and jobs, and the run (row of the runs table) of each cell."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.errors import PauError, SchemaError

__all__ = ["Groups", "KeyIndex", "groups", "key_column", "mask", "parse_where"]

# ---------------------------------------------------------------------------
# where


def parse_where(where: Any) -> list[tuple[str, bool, frozenset[str]]]:
    """``"cluster=eos,team=llm|vision,format!=mllog"`` or ``{"cluster": "eos", "team":
    ["llm", "vision"]}`` -> ``[(key, equal, values)]``; every term must hold (``|``: any
    of the values; ``!=``: none of them). Keys as ``by``'s: a column or ``labels.K``."""
    if where is None:
        return []
    terms: list[tuple[str, bool, frozenset[str]]] = []
    if isinstance(where, Mapping):
        for k, v in where.items():
            vals = [v] if isinstance(v, str) or not isinstance(v, Iterable) else list(v)
            terms.append((str(k), True, frozenset(str(x) for x in vals)))
        return terms
    for part in str(where).split(","):
        m = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*(!=|=)\s*(.*?)\s*", part)
        if m is None:
            raise PauError(f"where = {where!r}: {part!r} is not KEY=VALUE. Fix: e.g. cluster=eos,team=llm|vision "
                           "(',' and; '|' or; != not)")
        terms.append((m.group(1), m.group(2) == "=", frozenset(v.strip() for v in m.group(3).split("|"))))
    return terms


# ---------------------------------------------------------------------------
# group values of runs and jobs


def key_column(table: pa.Table, key: str, name: str, *, strict: bool) -> pa.ChunkedArray:
    """The values of group key ``key`` in ``table`` as strings: a column, or
    ``labels.K`` (the column ``K`` when the table has one, else the labels map's ``K``).
    A key the table lacks: an error (``strict``, the runs table) or nulls (jobs)."""
    n = table.num_rows
    col = key
    if key.startswith("labels."):
        sub = key[len("labels."):]
        if sub in table.column_names:
            col = sub
        elif "labels" in table.column_names:
            return pc.map_lookup(table["labels"], sub, "first").cast(pa.string())
        elif not strict:
            return pa.chunked_array([pa.nulls(n, pa.string())])
    if col not in table.column_names:
        if strict:
            raise SchemaError(name, key, "is not a column of the runs table nor a label",
                              "group by a column (cluster, accelerator_type, team, ...) or labels.NAME")
        return pa.chunked_array([pa.nulls(n, pa.string())])
    c = table[col]
    if pa.types.is_dictionary(c.type):
        c = c.cast(pa.string())
    if pa.types.is_floating(c.type):  # a job's fractional accelerators: as the number reads
        return pa.chunked_array([pa.array([None if v is None else f"{v:g}" for v in c.to_pylist()], pa.string())])
    if not (pa.types.is_string(c.type) or pa.types.is_large_string(c.type)):
        try:
            c = c.cast(pa.string())
        except pa.ArrowInvalid:
            raise SchemaError(name, key, f"is of type {c.type}, which cannot be a group", "group by a column of "
                              "strings or numbers") from None
    return c


def mask(table: pa.Table, terms: list[tuple[str, bool, frozenset[str]]], name: str, *, strict: bool) -> np.ndarray:
    keep = np.ones(table.num_rows, bool)
    for key, equal, values in terms:
        v = key_column(table, key, name, strict=strict)
        hit = np.asarray(pc.is_in(v, value_set=pa.array(sorted(values), pa.string())).fill_null(False))
        keep &= hit if equal else ~hit
    return keep



@dataclass
class Groups:
    """The fine groups: the ``by`` values, and with a cost model the (accelerator type,
    cluster) of the rate. ``run`` and ``job``: the fine group of each row (a job with a
    run is in its run's); ``values[i]``: key i's value per fine group."""

    count: int
    run: np.ndarray
    job: np.ndarray
    values: list[list[Any]]


def groups(runs: pa.Table, jobs: pa.Table | None, job_run: np.ndarray, keys: list[str]) -> Groups:
    n_runs = runs.num_rows
    n_all = n_runs + (0 if jobs is None else jobs.num_rows)
    if not keys or n_all == 0:
        return Groups(1, np.zeros(n_runs, np.int64), np.zeros(n_all - n_runs, np.int64), [])
    cols = []
    for k in keys:
        parts = [*key_column(runs, k, "runs", strict=True).chunks]
        if jobs is not None:
            parts += key_column(jobs, k, "jobs", strict=False).chunks
        cols.append(pa.concat_arrays(parts) if parts else pa.array([], pa.string()))
    count, fine = _combined(cols)
    first = np.zeros(count, np.int64)
    first[fine[::-1]] = np.arange(n_all)[::-1]
    values = [a.take(pa.array(first)).to_pylist() for a in cols]
    run_fine = fine[:n_runs]
    own = fine[n_runs:]
    job_fine = np.where(job_run >= 0, run_fine[np.maximum(job_run, 0)] if n_runs else 0, own)
    return Groups(count, run_fine, job_fine, values)


def _combined(cols: list[pa.Array]) -> tuple[int, np.ndarray]:
    """The distinct tuples of the key columns' values (each column's codes by first
    appearance, null first) and each row's index among them, in the order of the code
    tuples. One int64 code per row (the columns' codes in mixed radix) when the radix
    product fits, the tuples sorted once; with 2**22 tuples or fewer a table lookup
    instead of the sort."""
    codes = [np.asarray(pc.dictionary_encode(a).indices.fill_null(-1), np.int64) + 1 for a in cols]
    radix = [int(c.max()) + 1 if len(c) else 1 for c in codes]
    if math.prod(radix) >= 1 << 62:  # mixed radix would overflow: sort the tuples
        uniq, inverse = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
        return len(uniq), inverse.reshape(-1).astype(np.int64)
    code = codes[0]
    for c, r in zip(codes[1:], radix[1:]):
        code = code * r + c
    size = math.prod(radix)
    if size <= 1 << 22:
        present = np.zeros(size, bool)
        present[code] = True
        lookup = np.cumsum(present) - 1
        return int(present.sum()), lookup[code]
    uniq, inverse = np.unique(code, return_inverse=True)
    return len(uniq), inverse.reshape(-1).astype(np.int64)


class KeyIndex:
    """The row of each value of a table's key column (the runs' ``run``), looked up a
    dictionary at a time. A dictionary that is a run of the keys in order (the cells of
    a batch of runs, written with that batch of the runs table) is found as a slice:
    where the last one was, or just after it; else its values are looked up one by one
    in a dict of every key, built on the first such miss (``pc.index_in`` would hash
    every key on each call)."""

    def __init__(self, keys: pa.Array | pa.ChunkedArray):
        self.keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
        self.position: dict[Any, int] | None = None
        self.at = self.next = 0

    def entries(self, dic: pa.Array) -> np.ndarray:
        """The row of each value of ``dic`` (-1: absent)."""
        n = len(dic)
        guesses = [self.at, self.next]
        if self.position is not None and n:
            guesses.append(self.position.get(dic[0].as_py(), -1))
        for off in guesses:
            if 0 <= off and off + n <= len(self.keys) and self.keys.slice(off, n).equals(dic):
                self.at, self.next = off, off + n
                return np.arange(off, off + n, dtype=np.int64)
        if self.position is None:
            self.position = {k: i for i, k in enumerate(self.keys.to_pylist())}
            return self.entries(dic)
        return np.array([self.position.get(v, -1) for v in dic.to_pylist()], dtype=np.int64)

    def rows(self, col: pa.Array) -> np.ndarray:
        """The row of each of ``col``'s values (-1: absent)."""
        if not pa.types.is_dictionary(col.type):
            col = pc.dictionary_encode(col)
        if col.null_count:
            return np.asarray(pc.index_in(col.cast(col.type.value_type), value_set=self.keys).fill_null(-1),
                              dtype=np.int64)
        return self.entries(col.dictionary)[np.asarray(col.indices.to_numpy(zero_copy_only=False), np.int64)]
