"""A fleet rollup's cost columns (``docs/fleet.md``, "Rollups"): the cost model's rate of
each (accelerator type, cluster), the cost of each group and period split by what its
time did, and the cost of its energy (measured joules where a run measured them, else
the draw the model gives over the allocated hours)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from pau.engine.vocab import STATES
from pau.errors import PauError
import pau.fleet.costs as _costs
import pau.fleet.groups as _groups
import pau.fleet.sums as _sums
from pau.fleet.periods import NS_PER_HOUR

__all__ = ["Pricing", "Sparse", "cost_rows", "energy_cost_rows"]

#: Sums as :meth:`pau.fleet.sums.Acc.result` gives them (the one type, :class:`pau.fleet.sums.Sparse`).
Sparse = _sums.Sparse


class Pricing:
    """The cost model's rate per (accelerator type, cluster), looked up once each;
    ``basis`` and ``currency`` of the rates used."""

    def __init__(self, model: _costs.CostModel | None):
        self.model = model
        self.rates: dict[tuple[Any, Any], _costs.CostRate] = {}
        self.basis: dict[str, str] = {}
        self.currency: str | None = None

    def rate(self, accelerator_type: Any, cluster: Any) -> _costs.CostRate:
        assert self.model is not None
        k = (accelerator_type, cluster)
        if k not in self.rates:
            try:
                rate = self.model.rate(accelerator_type=accelerator_type, cluster=cluster)
            except PauError as exc:
                raise PauError(f"cost model: accelerator_type {accelerator_type!r}, cluster {cluster!r} (of runs or "
                               f"jobs in the fleet): {exc}") from None
            if self.currency is not None and rate.currency != self.currency:
                raise PauError(f"cost model: rates in {self.currency} and {rate.currency}. Fix: one currency")
            self.currency = rate.currency
            self.rates[k] = rate
            self.basis[f"{accelerator_type} / {cluster}"] = rate.label
        return self.rates[k]

    def cost(self, accelerator_type: Any, cluster: Any, time: np.ndarray) -> np.ndarray:
        """cost, productive, rolled_back, recovery, idle, overhead, unaccounted."""
        rate = self.rate(accelerator_type, cluster)
        split = _costs.split_by_state(rate, {s: int(time[i]) for i, s in enumerate(STATES) if time[i]})
        allocated = rate.per_accelerator_hour * int(time[len(STATES)]) / NS_PER_HOUR
        return np.array([allocated, split.productive, split.rolled_back, split.recovery, split.idle, split.overhead,
                         allocated - split.total])


def cost_rows(pricing: Pricing, g: _groups.Groups, user: int, ug: np.ndarray, row_keys: np.ndarray,
               time: Sparse) -> np.ndarray:
    """The seven cost parts per row: each fine group and period priced at its rate, then
    summed per row."""
    fine_keys = np.unique(_sums.pair(time.group, time.start))
    fine = _sums.rows(fine_keys, time.start, time.group, time.column, time.value, len(fine_keys), len(STATES) + 2)
    fine_g, fine_st = _sums.unpair(fine_keys)
    cost = np.zeros((len(row_keys), 7))
    at = np.searchsorted(row_keys, _sums.pair(ug[fine_g], fine_st))
    for i in range(len(fine_keys)):
        fg = int(fine_g[i])
        cost[at[i]] += pricing.cost(g.values[user][fg], g.values[user + 1][fg], fine[i])
    return cost


def energy_cost_rows(pricing: Pricing, g: _groups.Groups, user: int, ug: np.ndarray, row_keys: np.ndarray,
                      runs: pa.Table, ends_idx: np.ndarray, ends_start: np.ndarray,
                     time: Sparse) -> tuple[pa.Array, pa.Array]:
    """``energy_cost`` and ``energy_cost_basis`` per row: the measured joules of the runs
    that ended in it (``energy_j``) at the rate's PUE and energy price, plus the allocated
    accelerator-hours whose energy no run measured at its draw (nominal, or the measured
    mean the model was given), PUE and price. Null where a part has no price (the model
    gives no PUE, energy price or draw)."""
    n_rows = len(row_keys)
    joule = np.full(g.count, np.nan)
    hour = np.full(g.count, np.nan)
    ended = g.run[ends_idx][~np.isnan(runs["energy_j"].to_numpy(zero_copy_only=False)[ends_idx])] \
        if "energy_j" in runs.column_names else np.zeros(0, np.int64)
    for fg in np.unique(np.concatenate([time.group, ended])).tolist():  # the groups with time or energy
        rate = pricing.rate(g.values[user][fg], g.values[user + 1][fg])
        if rate.joule_price is not None:
            joule[fg] = rate.joule_price
            if rate.power_w is not None:
                hour[fg] = rate.power_w * 3_600 * rate.joule_price
    out = np.zeros(n_rows)
    unknown = np.zeros(n_rows, bool)
    basis = np.zeros((n_rows, 2), bool)  # measured, nominal
    if "energy_j" in runs.column_names and len(ends_idx):
        j = runs["energy_j"].to_numpy(zero_copy_only=False)[ends_idx]
        has = ~np.isnan(j)
        f = g.run[ends_idx][has]
        rows = np.searchsorted(row_keys, _sums.pair(ug[f], ends_start[has]))
        price = joule[f]
        out += np.bincount(rows, weights=np.nan_to_num(j[has] * price), minlength=n_rows)
        unknown[rows[np.isnan(price)]] = True
        basis[rows, 0] = True
    nominal = time.column == len(STATES) + 1
    if nominal.any():
        f, st, v = time.group[nominal], time.start[nominal], time.value[nominal]
        rows = np.searchsorted(row_keys, _sums.pair(ug[f], st))
        price = hour[f]
        out += np.bincount(rows, weights=np.nan_to_num(v / NS_PER_HOUR * price), minlength=n_rows)
        unknown[rows[np.isnan(price)]] = True
        basis[rows, 1] = True
    names = np.array([None, "measured", "nominal", "measured and nominal"], dtype=object)
    code = basis[:, 0] + 2 * basis[:, 1]
    null = unknown | (code == 0)
    text = [None if n is None else n + (" (some of it unpriced: the cost model gives no PUE, energy price or draw "
                                         "for its accelerator type or cluster)" if u else "")
            for n, u in zip(names[code].tolist(), unknown.tolist())]
    return pa.array(out, pa.float64(), mask=null), pa.array(text, pa.string())
