"""Cost and energy per unit of useful output (DESIGN §4), of a training ledger or an
inference result.

Money and energy are floats derived at the edge from exact integer time; a figure with a
zero denominator is ``None``, never NaN. Every choice where the design is silent is in
``docs/economics.md``. The results are typed dicts (:class:`LedgerCost`,
:class:`RequestCost`): the command line's JSON and CSV render the same object.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Mapping, Optional, TypedDict, Union, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine._input import _column, as_table, time_column
from pau.engine.ledger import NS_PER_HOUR, Ledger
from pau.engine.types import LedgerSummary
from pau.errors import ArgumentTypeError, InvalidRowError, PauError, SchemaError
from pau.figures._common import _one_job
from pau.figures.economics import RequestLedger, _one
from pau.figures.hardware import integrate

__all__ = ["LedgerCost", "RequestCost", "cost"]


class _Cost(TypedDict):
    total_cost: float
    billed_ns: Optional[int]


class LedgerCost(_Cost, total=False):
    """:func:`cost` of a :class:`~pau.engine.ledger.Ledger`: dollars, and with ``power``
    joules. The cost keys are always there; the ``energy*`` keys only with ``power``.

    ``total_cost`` is the billed cost of the accountable time (``billed_ns``);
    ``cost_by_state`` splits it by lifecycle state, ``waste_cost`` is all but
    ``productive`` and ``pending`` (``waste_cost_by_state``), ``waste_cost_by_cause``
    the rolled-back cost by the failure that threw it away. ``cost_per_*`` are the fully
    allocated cost (all billed time, waste included) over the useful units, None when
    there are none; ``energy_*_j`` the same in joules."""

    cost_by_state: Dict[str, float]
    waste_cost: float
    waste_cost_by_state: Dict[str, float]
    waste_cost_by_cause: Dict[str, float]
    cost_per_productive_accelerator_hour: Optional[float]
    cost_per_preserved_step: Optional[float]
    cost_per_preserved_model_cycle: Optional[float]
    cost_per_million_preserved_tokens: Optional[float]
    energy_j: float
    energy_by_state_j: Dict[str, float]
    waste_energy_j: float
    energy_per_productive_accelerator_hour_j: Optional[float]
    energy_per_preserved_step_j: Optional[float]
    energy_per_preserved_model_cycle_j: Optional[float]
    energy_per_million_preserved_tokens_j: Optional[float]


class RequestCost(_Cost, total=False):
    """:func:`cost` of a :class:`~pau.figures.economics.RequestLedger`. ``billed_ns`` is
    ``accelerators x window`` or the busy time (None when neither is known: a ``total``
    price only). ``cost_by_outcome``, ``waste_cost``, ``waste_cost_by_cause`` and
    ``cost_per_productive_accelerator_hour`` need busy time; the ``energy*`` keys need
    ``power``."""

    cost_per_accepted_request: Optional[float]
    cost_per_million_accepted_tokens: Optional[float]
    cost_per_million_accepted_output_tokens: Optional[float]
    cost_by_outcome: Dict[str, float]
    waste_cost: float
    waste_cost_by_cause: Dict[str, float]
    cost_per_productive_accelerator_hour: Optional[float]
    energy_j: float
    energy_per_accepted_request_j: Optional[float]
    energy_per_million_accepted_tokens_j: Optional[float]
    energy_per_productive_accelerator_hour_j: Optional[float]


# ---------------------------------------------------------------------------
# energy


def _power_columns(power: Any, key: str) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """The samples' key (rank or replica), time (int64 ns) and watts, every row checked."""
    t = as_table(power, "power")
    k = _column(t, key, "power")
    tcol = _column(t, "time_ns", "power")
    tnull = np.asarray(tcol.is_null()) if tcol.null_count else np.zeros(len(tcol), bool)
    if tcol.null_count:
        tcol = tcol.fill_null(pa.scalar(0, tcol.type))
    tm = np.asarray(time_column(tcol, "time_ns", "power"), np.int64)
    w = _column(t, "watts", "power")
    if not (pa.types.is_floating(w.type) or pa.types.is_integer(w.type)):
        raise SchemaError("power", "watts", f"has type {w.type}, not a number", "give watts as numbers")
    wnull = np.asarray(w.is_null()) if w.null_count else np.zeros(len(w), bool)
    knull = np.asarray(k.is_null()) if k.null_count else np.zeros(len(k), bool)
    watts = w.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
    for name, bad, why in ((key, knull, f"null {key}"), ("time_ns", tnull, "null time_ns"),
                           ("watts", wnull, "null watts"),
                           ("watts", ~np.isfinite(watts) | (watts < 0), "watts not finite and >= 0")):
        if bad.any():
            raise InvalidRowError("power", name, int(np.flatnonzero(bad)[0]), why,
                                  "drop or repair the sample", int(bad.sum()))
    return k, tm, watts


def _energy_j(p_key: Any, p_t: Any, p_w: Any, q_key: Any, q_start: Any, q_end: Any) -> np.ndarray:
    """Joules over each ``[q_start, q_end)`` of key ``q_key`` from samples (key, t, W).

    Power is piecewise linear between samples (trapezoids) and held at the first /
    last sample outside them (:func:`pau.figures.hardware.integrate`). Time differences are
    exact int64 ns; watts x ns products are float64 W.ns, divided by 1e9 at the end.
    """
    p_key, p_t, p_w = np.asarray(p_key, np.int64), np.asarray(p_t, np.int64), np.asarray(p_w, np.float64)
    q_key = np.asarray(q_key, np.int64)
    if q_key.size == 0:
        return np.zeros(0, np.float64)
    missing = np.setdiff1d(np.unique(q_key), p_key)
    if missing.size:
        raise PauError(f"power: no samples for rank/replica {missing[0].item()!r}. Fix: give power samples "
                       f"(rank, time_ns, watts) for every rank of the ledger")
    # The signal: linear between consecutive samples of a key, held at the first and
    # last sample's watts before and after them; integrated by pau.figures.hardware's one rule.
    order = np.lexsort((p_t, p_key))
    k, t, w = p_key[order], p_t[order], p_w[order]
    same = k[1:] == k[:-1]
    first = np.concatenate([[True], ~same])
    last = np.concatenate([~same, [True]])
    i64 = np.iinfo(np.int64)
    seg_k = np.concatenate([k[:-1][same], k[first], k[last]])
    seg_s = np.concatenate([t[:-1][same], np.full(int(first.sum()), i64.min), t[last]])
    seg_e = np.concatenate([t[1:][same], t[first], np.full(int(last.sum()), i64.max)])
    seg_a = np.concatenate([w[:-1][same], w[first], w[last]])
    seg_b = np.concatenate([w[1:][same], w[first], w[last]])
    integral, _ = integrate(seg_k, seg_s, seg_e, seg_a, seg_b, q_key, np.asarray(q_start, np.int64),
                            np.asarray(q_end, np.int64))
    out: np.ndarray = integral / 1e9
    return out


# ---------------------------------------------------------------------------
# cost


def _price_per_ns(prices: Mapping[str, Any], keys: np.ndarray, what: str) -> np.ndarray:
    """$ per ns for each key (rank or replica) from a per-hour price."""
    if "per_accelerator_hour" in prices:
        p = prices["per_accelerator_hour"]
        return np.full(keys.size, float(p) / NS_PER_HOUR)
    by_type = "per_type_hour" in prices
    table = prices["per_type_hour"] if by_type else prices["per_rank_hour"]
    types = prices.get("types", {})
    out = np.empty(keys.size, np.float64)
    for i, k in enumerate(keys.tolist()):  # one per rank or replica, not per request
        if by_type:
            if k not in types:
                raise PauError(f"prices: types has no accelerator type for {what} {k!r}. Fix: map every "
                               f"{what} to its type, e.g. types={{{k!r}: 'H100'}}")
            k = types[k]
        if k not in table:
            name = "per_type_hour" if by_type else "per_rank_hour"
            raise PauError(f"prices: {name} has no price for {'type' if by_type else what} {k!r}. "
                           f"Fix: give a price for every {'accelerator type used' if by_type else what}, "
                           f"or use per_accelerator_hour")
        out[i] = float(table[k]) / NS_PER_HOUR
    return out


def _check_prices(prices: Mapping[str, Any]) -> None:
    given = [k for k in ("per_accelerator_hour", "per_rank_hour", "per_type_hour", "total") if k in prices]
    if len(given) != 1:
        raise PauError("prices: give exactly one of per_accelerator_hour, per_rank_hour, per_type_hour "
                       f"or total (got {sorted(prices)})")
    extra = set(prices) - {"per_accelerator_hour", "per_rank_hour", "per_type_hour", "types", "total",
                           "accelerators"}
    if extra:
        raise PauError(f"prices: unknown key {sorted(extra)[0]!r}")
    if ("types" in prices) != ("per_type_hour" in prices):
        raise PauError("prices: per_type_hour and types go together. Fix: give per_type_hour={type: "
                       "price} and types={rank or replica: type}")
    if "types" in prices and not isinstance(prices["types"], dict):
        raise PauError("prices: types must be a dict {rank or replica: accelerator type}")
    if given[0] in ("per_rank_hour", "per_type_hour") and not isinstance(prices[given[0]], dict):
        raise PauError(f"prices: {given[0]} must be a dict of prices per hour")
    v = prices[given[0]]
    vals = list(v.values()) if isinstance(v, dict) else [v]
    for x in vals:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
            raise PauError(f"prices: {given[0]} has {x!r}. Fix: prices are finite numbers >= 0")


def _per(total: float, denom: float | None) -> float | None:
    return total / denom if denom else None


@overload
def cost(ledger_or_requests: Ledger, prices: Mapping[str, Any], *, power: Any = None) -> LedgerCost: ...
@overload
def cost(ledger_or_requests: RequestLedger, prices: Mapping[str, Any], *, power: Any = None) -> RequestCost: ...
def cost(ledger_or_requests: Ledger | RequestLedger, prices: Mapping[str, Any], *,
         power: Any = None) -> Union[LedgerCost, RequestCost]:
    """Cost and energy per unit of useful output (DESIGN §4).

    Parameters
    ----------
    ledger_or_requests : Ledger or RequestLedger
        A training ledger (:func:`pau.core.ledger`) or an inference result
        (:func:`requests`).
    prices : dict
        Exactly one of ``{"per_accelerator_hour": x}``, ``{"per_rank_hour": {rank:
        x}}`` (for a RequestLedger: keyed by replica), ``{"per_type_hour": {type: x},
        "types": {rank: type}}`` (prices by accelerator type, with each rank's or
        replica's type) or ``{"total": dollars}`` (a fully allocated cost for the
        period). For a Ledger the billed time is its
        accountable time; for a RequestLedger it is ``accelerators * window`` when
        ``prices["accelerators"]`` is given, else the busy time.
    power : table-like, optional
        ``rank, time_ns, watts`` (``replica, time_ns, watts`` for a RequestLedger),
        integrated over each ledger state interval (or busy interval):
        piecewise-linear between samples, held flat outside them.

    Returns
    -------
    LedgerCost or RequestCost
        A typed dict: ``total_cost``, ``cost_by_state`` (or ``cost_by_outcome``), ``waste_cost``,
        ``waste_cost_by_state`` / ``waste_cost_by_cause``, the cost per useful
        output (``cost_per_productive_accelerator_hour``,
        ``cost_per_preserved_step``, ``cost_per_preserved_model_cycle``,
        ``cost_per_million_preserved_tokens``; or ``cost_per_accepted_request``,
        ``cost_per_million_accepted_tokens``,
        ``cost_per_million_accepted_output_tokens``), and with ``power`` the same
        with ``energy_`` names in joules. Per-unit figures are the *fully
        allocated* cost (all billed time, waste included) over the useful units;
        ``None`` when there are none.
    """
    _one_job(ledger_or_requests if isinstance(ledger_or_requests, Ledger) else None, "cost")
    if not isinstance(prices, Mapping):
        raise PauError("prices: expected a dict such as {'per_accelerator_hour': 2.0}")
    _check_prices(prices)
    if isinstance(ledger_or_requests, RequestLedger):
        return _cost_requests(ledger_or_requests, prices, power)
    if isinstance(ledger_or_requests, Ledger):
        return _cost_ledger(ledger_or_requests, prices, power)
    raise ArgumentTypeError("cost", "a pau Ledger or RequestLedger", ledger_or_requests)


def _cost_ledger(led: Ledger, prices: Mapping[str, Any], power: Any) -> LedgerCost:
    if "accelerators" in prices:
        raise PauError("prices: 'accelerators' applies to a RequestLedger; a Ledger bills its "
                       "accountable time")
    s = led.summary()
    by = led.by("rank", "state").to_pylist()
    ranks = np.array([r["rank"] for r in by], np.int64)
    ns = np.array([r["duration_ns"] for r in by], np.int64)
    states = [r["state"] for r in by]
    acc = s["accountable_ns"]
    if "total" in prices:
        per_ns = np.full(ranks.size, _per(float(prices["total"]), acc) or 0.0)
    else:
        per_ns = _price_per_ns(prices, ranks, "rank")
    row_cost = ns * per_ns
    cost_by_state: dict[str, float] = {}
    for st, c in zip(states, row_cost.tolist()):
        cost_by_state[st] = cost_by_state.get(st, 0.0) + c
    total = float(prices["total"]) if "total" in prices else float(row_cost.sum())
    useful = ("productive", "pending")
    waste_by_state = {k: v for k, v in cost_by_state.items() if k not in useful and v}
    out: LedgerCost = {"total_cost": total, "billed_ns": acc, "cost_by_state": cost_by_state,
           "waste_cost": float(sum(waste_by_state.values())), "waste_cost_by_state": waste_by_state,
           "waste_cost_by_cause": _by_cause(led, prices, per_rank=None if "total" in prices else True,
                                            uniform=_per(float(prices.get("total", 0.0)), acc))}
    (out["cost_per_productive_accelerator_hour"], out["cost_per_preserved_step"],
     out["cost_per_preserved_model_cycle"], out["cost_per_million_preserved_tokens"]) = _per_unit(total, s)
    if power is not None:
        if led.intervals is None:
            raise PauError("power: energy by state needs the ledger's state intervals. Fix: build the "
                           "ledger with a lifecycle (pau.core.ledger(events, lifecycle))")
        iv = led.intervals
        k, tm, w = _power_columns(power, "rank")
        p_rank = k.cast(pa.int64()).to_numpy(zero_copy_only=False)
        j = _energy_j(p_rank, tm, w, np.asarray(iv["rank"], np.int64), np.asarray(iv["start_ns"]),
                      np.asarray(iv["end_ns"]))
        st = iv["state"].combine_chunks()
        names = st.dictionary.to_pylist()
        idx = st.indices.to_numpy(zero_copy_only=False)
        e_state: dict[str, float] = {}
        for i, v in zip(idx.tolist(), j.tolist()):
            e_state[names[i]] = e_state.get(names[i], 0.0) + v
        etot = float(j.sum())
        out["energy_j"] = etot
        out["energy_by_state_j"] = e_state
        out["waste_energy_j"] = float(sum(v for kk, v in e_state.items() if kk not in useful))
        (out["energy_per_productive_accelerator_hour_j"], out["energy_per_preserved_step_j"],
         out["energy_per_preserved_model_cycle_j"], out["energy_per_million_preserved_tokens_j"]) = _per_unit(etot, s)
    return out


def _per_unit(x: float, s: LedgerSummary) -> tuple[float | None, float | None, float | None, float | None]:
    """``x`` (dollars or joules) per productive accelerator-hour, per preserved step, per
    preserved model cycle and per million preserved tokens; None where there are none."""
    return (_per(x * NS_PER_HOUR, s["productive_ns"]), _per(x, s.get("preserved_steps")),
            _per(x, s.get("preserved_model_cycles")), _per(x * 10**6, s.get("preserved_tokens")))


def _by_cause(led: Ledger, prices: Mapping[str, Any], *, per_rank: bool | None, uniform: float | None
              ) -> dict[str, float]:
    if led.intervals is None:
        return {}
    iv = led.intervals
    rb = iv.filter(pc.equal(iv["state"], "rolled_back"))
    if rb.num_rows == 0:
        return {}
    ranks = np.asarray(rb["rank"], np.int64)
    dur = np.asarray(rb["end_ns"], np.int64) - np.asarray(rb["start_ns"], np.int64)
    per_ns = _price_per_ns(prices, ranks, "rank") if per_rank else np.full(ranks.size, uniform or 0.0)
    out: dict[str, float] = {}
    for c, v in zip(rb["cause"].to_pylist(), (dur * per_ns).tolist()):
        out[c] = out.get(c, 0.0) + v
    return out


def _cost_requests(rl: RequestLedger, prices: Mapping[str, Any], power: Any) -> RequestCost:
    s = rl.summary()
    busy = s.get("busy_ns")
    billed: int | None
    if "accelerators" in prices:
        n_acc = prices["accelerators"]
        if isinstance(n_acc, bool) or not isinstance(n_acc, int) or n_acc < 0:
            raise PauError(f"prices: accelerators = {n_acc!r}. Fix: give a whole number >= 0")
        billed = n_acc * s["window_ns"]
    else:
        billed = busy
    if "total" in prices:
        total = float(prices["total"])
        per_ns = _per(total, billed) if billed is not None else None
    else:
        if billed is None:
            raise PauError("prices: a per-hour price needs billed time. Fix: give requests(..., busy=...) "
                           "or prices['accelerators'] (billed = accelerators x window), or a 'total'")
        if "per_rank_hour" in prices or "per_type_hour" in prices:
            if rl.replicas is None or "accelerators" in prices:
                raise PauError("prices: per_rank_hour / per_type_hour for requests price each replica's "
                               "busy time. Fix: give requests(..., busy=...) and no 'accelerators'")
            keys = np.array(rl.replicas["replica"].to_pylist(), dtype=object)
            total = float((np.asarray(rl.replicas["busy_ns"]) * _price_per_ns(prices, keys, "replica")).sum())
        else:
            total = billed * float(prices["per_accelerator_hour"]) / NS_PER_HOUR
        per_ns = _per(total, billed)
    out: RequestCost = {"total_cost": total, "billed_ns": billed,
           "cost_per_accepted_request": _per(total, s["accepted"]),
           "cost_per_million_accepted_tokens": _per(total * 10**6, s["accepted_tokens"]),
           "cost_per_million_accepted_output_tokens": _per(total * 10**6, s["accepted_output_tokens"])}
    if busy is not None and per_ns is not None:
        assert billed is not None  # busy or accelerators x window
        idle = s["idle_ns"] + (billed - busy)
        parts = {"accepted": s["productive_ns"], "late": s["late_ns"], "failed": s["failed_ns"],
                 "cancelled": s["cancelled_ns"], "idle": idle}
        if "per_rank_hour" in prices or "per_type_hour" in prices:
            r = rl.replicas
            assert r is not None  # checked above
            keys = np.array(r["replica"].to_pylist(), dtype=object)
            pr = _price_per_ns(prices, keys, "replica")
            parts_cost = {o: float((np.asarray(r[f"{o}_ns"]) * pr).sum()) for o in parts}
        else:
            parts_cost = {o: v * per_ns for o, v in parts.items()}
        out["cost_by_outcome"] = parts_cost
        out["waste_cost"] = float(sum(v for o, v in parts_cost.items() if o != "accepted"))
        out["waste_cost_by_cause"] = {o: v for o, v in parts_cost.items() if o != "accepted"}
        out["cost_per_productive_accelerator_hour"] = _per(total * NS_PER_HOUR, s["productive_ns"])
    if power is not None:
        if rl.busy is None:
            raise PauError("power: inference energy is integrated over busy intervals. Fix: give "
                           "requests(..., busy=...)")
        k, tm, w = _power_columns(power, "replica")
        b = rl.busy
        both = pa.concat_arrays([_one(b["replica"]), _one(k).cast(_one(b["replica"]).type)])
        codes = pc.dictionary_encode(both).indices.to_numpy(zero_copy_only=False).astype(np.int64)
        j = _energy_j(codes[b.num_rows:], tm, w, codes[: b.num_rows], np.asarray(b["start_ns"]),
                      np.asarray(b["end_ns"]))
        etot = float(j.sum())
        out["energy_j"] = etot
        out["energy_per_accepted_request_j"] = _per(etot, s["accepted"])
        out["energy_per_million_accepted_tokens_j"] = _per(etot * 10**6, s["accepted_tokens"])
        out["energy_per_productive_accelerator_hour_j"] = _per(etot * NS_PER_HOUR, s["productive_ns"])
    return out
