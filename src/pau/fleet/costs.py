"""The cost basis: a TOML cost model per accelerator type or cluster (DESIGN §7).

:func:`cost_model` reads the model (a TOML file or the same as a dict);
:meth:`CostModel.rate` gives the cost per accelerator-hour of one accelerator type or
cluster and its parts, each with the basis it was computed on; the helpers below turn it
into cost per useful output and split a cost by what the hours did. Every figure carries
its basis. ``docs/fleet.md`` ("Cost basis") shows the format, what the model includes and
leaves out, and one example checked by hand.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Union

import numpy as np
import pyarrow as pa

from pau.engine._input import as_table
from pau.engine.vocab import STATES
from pau.errors import ArgumentTypeError, NoInputError, PauError, SchemaError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9 and 3.10 (pyproject: tomli there)
    import tomli as tomllib

__all__ = [
    "HOURS_PER_YEAR", "CostModel", "CostRate", "CostFigure", "CostSplit", "cost_model",
    "per_preserved_step", "per_trained_model", "per_million_tokens", "per_accepted_request",
    "split_by_state",
]

#: Straight-line depreciation charges every hour of a 365-day year.
HOURS_PER_YEAR = 365 * 24
NS_PER_HOUR = 3_600 * 10**9

#: Keys of a section, by the part of the cost they price.
PARTS = {
    "capital": ("purchase_price", "life_years", "contract_rate_per_accelerator_hour"),
    "power": ("nominal_power_w", "pue", "energy_price_per_kwh"),
    "network_storage": ("network_storage_per_accelerator_hour", "network_storage_fraction_of_capex"),
    "operations": ("operations_per_accelerator_hour",),
}
KEYS = tuple(k for ks in PARTS.values() for k in ks) + ("currency",)
#: Two ways to price one part: a more specific section (cluster over accelerator type
#: over defaults) that uses one way drops the other way's keys of the less specific
#: ones, so two bases are never mixed. Other keys override one by one.
ALTERNATIVES = (
    (("purchase_price", "life_years"), ("contract_rate_per_accelerator_hour",)),
    (("network_storage_per_accelerator_hour",), ("network_storage_fraction_of_capex",)),
)
SECTIONS = ("defaults", "accelerator", "cluster")


def _where(section: str, key: str) -> str:
    return f"cost model [{section}] {key}"


def _number(section: str, key: str, value: Any, *, positive: bool = False, at_least: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PauError(f"{_where(section, key)} = {value!r}: not a number. Fix: write a finite number, "
                       f"e.g. {key} = 0")
    v = float(value)
    if at_least is not None and v < at_least:
        raise PauError(f"{_where(section, key)} = {value!r}: below {at_least:g}. Fix: give a value >= {at_least:g}")
    if v < 0 or (positive and v == 0):
        raise PauError(f"{_where(section, key)} = {value!r}: {'not positive' if positive else 'negative'}. "
                       f"Fix: prices, lives and power are {'> 0' if positive else '>= 0'}")
    return v


@dataclass(frozen=True)
class CostRate:
    """The cost of one accelerator-hour and its parts (all in ``currency``).

    ``per_accelerator_hour = capital + power + network_storage + operations``;
    ``parts_basis`` says how each part was computed, ``basis`` is all of them on one
    line, ``sections`` the model's sections it came from (least specific first).
    """

    per_accelerator_hour: float
    capital: float
    power: float
    network_storage: float
    operations: float
    currency: str
    capital_basis: str  # "purchase" (straight-line depreciation) or "contract"
    parts_basis: Mapping[str, str]
    sections: tuple[str, ...]
    #: What prices energy apart from the hour (None when the model does not give it): the
    #: draw per accelerator (W, measured or nominal), the PUE and the price of a kWh.
    power_w: Optional[float] = None
    pue: Optional[float] = None
    energy_price_per_kwh: Optional[float] = None

    @property
    def joule_price(self) -> Optional[float]:
        """The price of a joule at the accelerator: ``pue * energy_price_per_kwh / 3.6e6``
        (None when the model gives no PUE or energy price)."""
        if self.pue is None or self.energy_price_per_kwh is None:
            return None
        return self.pue * self.energy_price_per_kwh / 3.6e6

    @property
    def basis(self) -> str:
        return "; ".join(f"{k}: {v}" for k, v in self.parts_basis.items())

    @property
    def label(self) -> str:
        """The rate as the figures state it: ``"2.5 USD/accelerator-hour (BASIS)"``."""
        return f"{self.per_accelerator_hour:g} {self.currency}/accelerator-hour ({self.basis})"


@dataclass(frozen=True)
class CostFigure:
    """A cost per useful output: ``value`` (None when there was no output), per what,
    in which currency, on which basis (:attr:`CostRate.basis`)."""

    value: Optional[float]
    per: str
    currency: str
    basis: str


@dataclass(frozen=True)
class CostSplit:
    """What a cost paid for: ``productive``, ``rolled_back``, ``recovery``, ``idle``
    (``unattributed``: allocated, nothing accounted in it) and ``overhead`` (every other
    state: checkpoints, initialization, evaluation, data waits, pending and custom work);
    ``by_state`` per state. The five parts sum to ``total``."""

    productive: float
    rolled_back: float
    recovery: float
    idle: float
    overhead: float
    total: float
    by_state: Mapping[str, float]
    currency: str
    basis: str


GROUPS = {"productive": ("productive",), "rolled_back": ("rolled_back",),
          "recovery": ("recovery.outage", "recovery.reinit", "recovery.restore"),
          "idle": ("unattributed",)}


@dataclass(frozen=True)
class CostModel:
    """A parsed cost model. ``sections`` maps ``"defaults"``, ``"accelerator.<type>"`` and
    ``"cluster.<name>"`` to their keys; ``source`` names where it was read from."""

    sections: Mapping[str, Mapping[str, Any]]
    source: str = "cost model"
    currency: str = "USD"

    def rate(self, accelerator_type: Optional[str] = None, cluster: Optional[str] = None, *,
             measured_power_w: Optional[float] = None) -> CostRate:
        """The cost per accelerator-hour of an accelerator type, a cluster, or a cluster's
        accelerators of a type.

        The sections ``defaults``, ``accelerator.<accelerator_type>`` and
        ``cluster.<cluster>`` apply in that order, a key of a later one replacing the
        earlier one's. Two ways of pricing one part never mix: a purchase price drops an
        inherited contract rate, and a per-hour network and storage share an inherited
        fraction (and the reverse); a section with a contract rate inherits no cost key
        at all (the contract prices the hour as a whole; power, network and storage or
        operations billed on top are written beside it). A named type or cluster
        without a section is an error unless the other one has one; ``sections`` of the
        result says which were read.

        Parameters
        ----------
        measured_power_w : float, optional
            Mean power per accelerator measured by telemetry (W); replaces the model's
            ``nominal_power_w``.
        """
        used = ["defaults"] if "defaults" in self.sections else []
        named = [(f"accelerator.{accelerator_type}", accelerator_type), (f"cluster.{cluster}", cluster)]
        found = [key for key, name in named if name is not None and key in self.sections]
        if accelerator_type is None and cluster is None:
            raise PauError(f"{self.source}: rate() needs an accelerator_type or a cluster. Fix: name one of "
                           f"{sorted(k for k in self.sections if k != 'defaults')}")
        if not found:
            asked = " or ".join(f"[{k}]" for k, name in named if name is not None)
            raise PauError(f"{self.source}: no section {asked}. Fix: add one, or name one of "
                           f"{sorted(k for k in self.sections if k != 'defaults')}")
        used += found
        keys: dict[str, tuple[str, Any]] = {}  # key -> (section, value)
        for sec in used:
            vals = self.sections[sec]
            if "contract_rate_per_accelerator_hour" in vals:
                # a contract prices the accelerator-hour as a whole: what is billed on top
                # is written beside it (or more specifically), never inherited
                keys = {k: v for k, v in keys.items() if k == "currency"}
            for a, b in ALTERNATIVES:
                for mine, other in ((a, b), (b, a)):
                    if any(k in vals for k in mine):
                        for k in other:
                            keys.pop(k, None)
            for k, v in vals.items():
                keys[k] = (sec, v)
        return _rate(keys, tuple(used), self.source, self.currency, measured_power_w)


def _power(cbasis: str, keys: Mapping[str, tuple[str, Any]], need: Callable[..., float],
           measured_power_w: Optional[float], cur: str) -> tuple[float, str]:
    """The power part of a rate and its basis: measured or nominal draw x PUE x energy
    price; a contract rate includes it unless the sections give the accelerator's
    nominal draw (power billed apart)."""
    if cbasis == "contract" and "nominal_power_w" not in keys:
        return 0.0, "included in the contract rate" + (
            "" if measured_power_w is None else f" (the measured {measured_power_w:g} W is not charged again)")
    if measured_power_w is not None:
        w = _number("rate()", "measured_power_w", measured_power_w)
        wbasis = f"measured mean {w:g} W"
    else:
        w = need("nominal_power_w", "add nominal_power_w (the accelerator's draw in W, its share of the "
                                    "node included), or pass rate(measured_power_w=...)")
        wbasis = f"nominal {w:g} W"
    pue = need("pue", "add pue (facility power over IT power, >= 1)", at_least=1.0)
    kwh = need("energy_price_per_kwh", f"add energy_price_per_kwh (in {cur})")
    return w / 1000.0 * pue * kwh, f"{wbasis} x PUE {pue:g} x {kwh:g} {cur}/kWh"


def _rate(keys: dict[str, tuple[str, Any]], used: tuple[str, ...], source: str, currency: str,
          measured_power_w: Optional[float]) -> CostRate:
    last = used[-1]

    def get(k: str, **kw: Any) -> Optional[float]:
        if k not in keys:
            return None
        sec, v = keys[k]
        return _number(sec, k, v, **kw)

    def need(k: str, fix: str, **kw: Any) -> float:
        v = get(k, **kw)
        if v is None:
            raise PauError(f"{source} [{last}]: '{k}' is missing (sections read: {', '.join(used)}). Fix: {fix}")
        return v

    basis: dict[str, str] = {}
    cur = keys["currency"][1] if "currency" in keys else currency
    contract = get("contract_rate_per_accelerator_hour")
    price = get("purchase_price")
    if contract is not None and (price is not None or "life_years" in keys):
        raise PauError(f"{source} [{last}]: both a contract rate and a purchase price. Fix: keep one basis: "
                       f"contract_rate_per_accelerator_hour, or purchase_price with life_years")
    if contract is not None:
        capital, cbasis = contract, "contract"
        basis["capital"] = f"contract rate {contract:g} {cur}/accelerator-hour"
    else:
        price = need("purchase_price", "add purchase_price (per accelerator, with life_years), or "
                                       "contract_rate_per_accelerator_hour")
        life = need("life_years", "add life_years (straight-line depreciation over the life)", positive=True)
        capital, cbasis = price / (life * HOURS_PER_YEAR), "purchase"
        basis["capital"] = (f"purchase {price:g} {cur} straight-line over {life:g} years, charged to every "
                            f"hour of the life ({HOURS_PER_YEAR} h a year), used or not")
    power, basis["power"] = _power(cbasis, keys, need, measured_power_w, cur)
    # network and storage: per accelerator-hour or a fraction of the depreciation
    per_h = get("network_storage_per_accelerator_hour")
    frac = get("network_storage_fraction_of_capex")
    if per_h is not None and frac is not None:
        raise PauError(f"{source} [{last}]: both network_storage_per_accelerator_hour and "
                       "network_storage_fraction_of_capex. Fix: keep one")
    if frac is not None:
        if cbasis != "purchase":
            raise PauError(f"{source} [{last}]: network_storage_fraction_of_capex needs a purchase price "
                           "(there is no capex under a contract rate). Fix: give "
                           "network_storage_per_accelerator_hour instead")
        net = frac * capital
        basis["network_storage"] = f"{frac:g} of the depreciation"
    elif per_h is not None:
        net = per_h
        basis["network_storage"] = f"{per_h:g} {cur}/accelerator-hour"
    elif cbasis == "contract":
        net = 0.0
        basis["network_storage"] = "included in the contract rate"
    else:
        raise PauError(f"{source} [{last}]: the network and storage share is missing. Fix: add "
                       "network_storage_per_accelerator_hour or network_storage_fraction_of_capex (0 if "
                       "costed elsewhere)")
    ops = get("operations_per_accelerator_hour")
    if ops is None:
        if cbasis != "contract":
            need("operations_per_accelerator_hour", "add operations_per_accelerator_hour (staff, support, "
                                                    "space; 0 if costed elsewhere)")
        ops = 0.0
        basis["operations"] = "included in the contract rate"
    else:
        basis["operations"] = f"{ops:g} {cur}/accelerator-hour"
    total = capital + power + net + ops
    draw = measured_power_w if measured_power_w is not None else get("nominal_power_w")
    return CostRate(total, capital, power, net, ops, cur, cbasis, basis, used, draw,
                    get("pue", at_least=1.0), get("energy_price_per_kwh"))


def _check_section(name: str, values: Any) -> dict[str, Any]:
    if not isinstance(values, Mapping):
        raise PauError(f"cost model [{name}]: expected a table of keys, got {values!r}. Fix: write "
                       f"[{name}] followed by key = value lines")
    for k, v in values.items():
        if k not in KEYS:
            raise PauError(f"{_where(name, k)}: unknown key. Fix: use one of {', '.join(KEYS)}")
        if k == "currency":
            if not isinstance(v, str) or not v:
                raise PauError(f"{_where(name, k)} = {v!r}. Fix: write a currency name, e.g. currency = \"USD\"")
        else:
            _number(name, k, v, positive=k in ("life_years",),
                    at_least=1.0 if k == "pue" else None)
    return dict(values)


def cost_model(model: Union[str, "os.PathLike[str]", Mapping[str, Any]]) -> CostModel:
    """Read a cost model: a TOML file's path, or the same content as a dict.

    Format (``docs/fleet.md``, "Cost basis")::

        currency = "USD"                 # optional, default USD

        [defaults]                       # optional: applies to every section
        pue = 1.2
        energy_price_per_kwh = 0.10

        [accelerator.H100]               # purchased: straight-line depreciation
        purchase_price = 30000
        life_years = 5
        nominal_power_w = 700
        network_storage_fraction_of_capex = 0.15   # or network_storage_per_accelerator_hour
        operations_per_accelerator_hour = 0.10

        [cluster.cloud-a]                # rented: a contract rate
        contract_rate_per_accelerator_hour = 2.50

    Raises
    ------
    pau.errors.NoInputError
        No file at the path.
    pau.errors.PauError
        TOML that does not parse, an unknown section or key, a value that is not a
        number, negative, or out of range; each message names the key and the fix.
        (Missing keys are reported by :meth:`CostModel.rate`, which knows the basis.)
    """
    if isinstance(model, (str, os.PathLike)):
        source = f"cost model {os.fspath(model)}"
        try:
            with open(model, "rb") as f:
                data = tomllib.load(f)
        except FileNotFoundError:
            raise NoInputError(f"{source}: no such file. Fix: give the path of a TOML cost model") from None
        except tomllib.TOMLDecodeError as exc:
            raise PauError(f"{source}: not valid TOML ({exc}). Fix: correct the file at that line") from None
    elif isinstance(model, Mapping):
        data, source = dict(model), "cost model"
    else:
        raise ArgumentTypeError("cost_model", "a path or a dict", model)
    currency = data.pop("currency", "USD")
    if not isinstance(currency, str) or not currency:
        raise PauError(f"{source}: currency = {currency!r}. Fix: write a currency name, e.g. currency = \"USD\"")
    sections: dict[str, dict[str, Any]] = {}
    for top, body in data.items():
        if top not in SECTIONS:
            raise PauError(f"{source}: unknown section or key '{top}'. Fix: use [defaults], "
                           "[accelerator.<type>], [cluster.<name>] or currency")
        if top == "defaults":
            sections["defaults"] = _check_section("defaults", body)
            continue
        if not isinstance(body, Mapping) or not body:
            raise PauError(f"{source}: [{top}] names no {top}. Fix: write [{top}.<name>] sections")
        for name, values in body.items():
            sections[f"{top}.{name}"] = _check_section(f"{top}.{name}", values)
    return CostModel(sections, source, currency)


# ---------------------------------------------------------------------------
# cost per useful output


def _check_rate(rate: Any) -> CostRate:
    if not isinstance(rate, CostRate):
        raise ArgumentTypeError("a cost figure", "a CostRate (cost_model(...).rate(...)): a cost figure says its basis, "
                                "which a bare number does not carry", rate)
    return rate


def _count(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v) or v < 0:
        raise PauError(f"{name} = {v!r}. Fix: give a finite number >= 0")
    return float(v)


def _per(rate: Any, accelerator_hours: Any, outputs: Any, per: str, what: str) -> CostFigure:
    r = _check_rate(rate)
    hours = _count("accelerator_hours", accelerator_hours)
    n = _count(what, outputs)
    value = r.per_accelerator_hour * hours / n if n else None
    return CostFigure(value, per, r.currency, f"{hours:g} accelerator-hours at {r.label}")


def per_preserved_step(rate: CostRate, accelerator_hours: float, preserved_steps: float) -> CostFigure:
    """Cost per preserved step: ``rate * accelerator_hours / preserved_steps``.

    ``accelerator_hours`` are all the hours the steps paid for (allocated or accountable,
    waste included), not the productive hours alone. None when no step was preserved.
    """
    return _per(rate, accelerator_hours, preserved_steps, "preserved step", "preserved_steps")


def per_trained_model(rate: CostRate, accelerator_hours: float, models: float = 1) -> CostFigure:
    """Cost per trained model: ``rate * accelerator_hours / models`` (every hour the
    training took, failed attempts and restarts included)."""
    return _per(rate, accelerator_hours, models, "trained model", "models")


def per_accepted_request(rate: CostRate, accelerator_hours: float, accepted_requests: float) -> CostFigure:
    """Cost per accepted request: ``rate * accelerator_hours / accepted_requests``
    (the hours of every replica serving, idle and failed requests included)."""
    return _per(rate, accelerator_hours, accepted_requests, "accepted request", "accepted_requests")


def per_million_tokens(rate: CostRate, tokens_per_accelerator_second: float) -> CostFigure:
    """Cost per million delivered tokens:
    ``rate / (tokens_per_accelerator_second * 3600) * 1e6``.

    ``tokens_per_accelerator_second`` counts delivered tokens (of accepted requests, or
    of preserved training steps) over every accelerator-second paid for, so waste
    lowers it. None when it is 0.
    """
    r = _check_rate(rate)
    tps = _count("tokens_per_accelerator_second", tokens_per_accelerator_second)
    value = r.per_accelerator_hour / (tps * 3600.0) * 1e6 if tps else None
    return CostFigure(value, "million delivered tokens", r.currency,
                      f"{tps:g} delivered tokens per accelerator-second at {r.label}")


def split_by_state(rate: CostRate, accelerator_ns_by_state: Any) -> CostSplit:
    """Split the cost of accelerator time by what it did.

    Parameters
    ----------
    rate : CostRate
    accelerator_ns_by_state : mapping or table
        Accelerator-ns per lifecycle state (``{"productive": ns, ...}``), or a table with
        ``state`` and ``duration_ns`` columns (a ledger, or a fleet's hourly cells), summed
        per state. States are DESIGN §2.3's.

    Returns
    -------
    CostSplit
        ``productive`` (productive), ``rolled_back``, ``recovery`` (``recovery.*``),
        ``idle`` (``unattributed``) and ``overhead`` (the other states); they sum to
        ``total`` = rate x all the hours.
    """
    r = _check_rate(rate)
    if isinstance(accelerator_ns_by_state, Mapping):
        ns = {}
        for k, v in accelerator_ns_by_state.items():
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise PauError(f"accelerator_ns_by_state['{k}'] = {v!r}. Fix: give whole nanoseconds >= 0")
            ns[str(k)] = int(v)
    else:
        t = as_table(accelerator_ns_by_state, "accelerator_ns_by_state")
        for col in ("state", "duration_ns"):
            if col not in t.column_names:
                raise SchemaError("accelerator_ns_by_state", col, "is missing",
                                  "give a table with state and duration_ns columns, or a dict of ns per state")
        st = t["state"].cast(pa.string()) if pa.types.is_dictionary(t["state"].type) else t["state"]
        if t["duration_ns"].null_count or st.null_count:
            raise SchemaError("accelerator_ns_by_state", "state" if st.null_count else "duration_ns",
                              "has nulls", "every row needs a state and a duration")
        d = np.asarray(t["duration_ns"].cast(pa.int64()))
        if (d < 0).any():
            row = int(np.flatnonzero(d < 0)[0])
            raise PauError(f"accelerator_ns_by_state: column 'duration_ns', row {row}: negative ({int(d[row])}). "
                           "Fix: durations are >= 0 ns")
        ns = {}
        for s, v in zip(st.to_pylist(), d.tolist()):
            ns[s] = ns.get(s, 0) + v
    unknown = sorted(set(ns) - set(STATES))
    if unknown:
        raise PauError(f"accelerator_ns_by_state: unknown state {unknown[0]!r}. Fix: use the lifecycle states "
                       f"{', '.join(STATES)}")
    per_ns = r.per_accelerator_hour / NS_PER_HOUR
    by_state = {s: v * per_ns for s, v in ns.items()}
    parts = {g: sum(by_state.get(s, 0.0) for s in states) for g, states in GROUPS.items()}
    grouped = {s for states in GROUPS.values() for s in states}
    overhead = sum(v for s, v in by_state.items() if s not in grouped)
    total = sum(ns.values()) * per_ns
    return CostSplit(parts["productive"], parts["rolled_back"], parts["recovery"], parts["idle"], overhead,
                     total, by_state, r.currency, f"{sum(ns.values()) / NS_PER_HOUR:g} accelerator-hours at {r.label}")
