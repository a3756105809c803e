"""Placement across hardware generations: one workload on several systems, ranked by
cost per useful output on the fleet's cost basis (DESIGN §7, ``docs/fleet.md``,
"Placement across hardware generations").

:func:`placement` takes runs of one benchmark on several systems (MLPerf Training result
logs: each system's accelerator type and count come from its system description) and
ranks the configurations by cost per trained model: a run that reached the benchmark's
quality target (:func:`pau.readers.mlperf_rules.trained_models`), never a block of
samples, whose size differs from one submission to another. Per configuration: the runs,
those that reached the target, the time to train as MLPerf scores it, the accountable
accelerator-hours per trained model, the measured goodput (``Run.summary()``), the rate
(:meth:`pau.fleet.costs.CostModel.rate`), the cost per trained model
(:func:`pau.fleet.costs.per_trained_model`) and what it paid for
(:func:`pau.fleet.costs.split_by_state`).

:func:`at_scale` projects each configuration to another accelerator count, price or
checkpoint interval, under assumptions it writes into its result (:data:`WHAT_IF_ASSUMPTIONS`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import pyarrow as pa

from pau.errors import ArgumentTypeError, PauError
import pau.fleet.costs as _costs
import pau.fleet.reliability as _rel
from pau.readers import mlperf_rules as _mlperf
from pau.run import Run, read_runs

__all__ = ["MIN_RUNS", "DROPPED", "RULES_SOURCE", "WHAT_IF_ASSUMPTIONS", "Placement", "WhatIf", "at_scale",
           "placement", "score_time_to_train"]

NS_PER_HOUR = 3_600 * 10**9

#: Where the scoring rule and the minimum numbers of runs come from: MLPerf Training
#: rules, section "Benchmark Results", as they stood for round 4.0 (the last change to
#: the file before the round's submissions).
RULES_SOURCE = "mlcommons/training_policies training_rules.adoc @ 9f32f97d (2024-04-14), \"Benchmark Results\""

#: MLPerf Training v4.0's minimum number of runs per benchmark (:data:`RULES_SOURCE`'s
#: table, by area and problem; ``ssd`` is the light-weight object detection).
MIN_RUNS: Mapping[str, int] = {
    "resnet": 5, "unet3d": 40, "ssd": 5, "maskrcnn": 5, "stable_diffusion": 10, "bert": 10, "rnnt": 10,
    "gpt3": 3, "llama2_70b_lora": 10, "dlrm_dcnv2": 10, "gnn": 10,
}
#: Runs dropped at each end (the fastest and the slowest) and the non-converging runs a
#: valid result may hold: one of each, UNET3D four ("due to large variance").
DROPPED: Mapping[str, int] = {"unet3d": 4}

WHAT_IF_ASSUMPTIONS = (
    "initialization takes the same wall time per run at any scale (its accelerator-hours grow with the count)",
    "everything from run_start on (training, evaluations, the runs that missed the target) scales perfectly: "
    "wall time x accelerators is constant, divided by the scaling efficiency given",
    "the share of runs that reach the target does not change with scale",
    "the measured runs had no hardware failure; at the new count failures are Poisson at the rate given per "
    "accelerator-hour (MTTF = 1 / (N r)), each costing the work since the last checkpoint plus the restart "
    "time, checkpoints blocking for checkpoint_cost_s every checkpoint interval (Daly's when none is given): "
    "the scaled time from run_start is divided by Daly's expected goodput (pau.fleet.reliability.at_size)",
    "the price is the cost model's rate for the accelerator type (one rate per type, over the whole run)",
)


@dataclass(frozen=True)
class Placement:
    """:func:`placement`'s result.

    ``table``: one row per configuration, ranked by cost per trained model (the cheapest
    first; configurations without a trained model last, cost null); ``runs``: one row per
    run read; ``benchmark``; ``output`` (``"trained_model"``); ``currency``;
    ``assumptions`` (how the time to train was scored, what a trained model is);
    ``warnings``: the runs' warnings.
    """

    table: pa.Table
    runs: pa.Table
    benchmark: str
    output: str
    currency: str
    assumptions: tuple[str, ...]
    warnings: list[str] = field(default_factory=list)


#: The columns of :func:`at_scale`'s table.
WHAT_IF_SCHEMA = pa.schema([
    ("rank", pa.int64()), ("benchmark", pa.string()), ("submitter", pa.string()), ("system", pa.string()),
    ("accelerator_type", pa.string()), ("accelerators_measured", pa.int64()), ("accelerators", pa.int64()),
    ("scaling_efficiency", pa.float64()), ("failure_rate_per_accelerator_hour", pa.float64()),
    ("mttf_h", pa.float64()), ("checkpoint_interval_s", pa.float64()), ("expected_goodput", pa.float64()),
    ("time_to_train_ns", pa.int64()), ("accelerator_hours_per_trained_model", pa.float64()),
    ("rate_per_accelerator_hour", pa.float64()), ("currency", pa.string()), ("cost_basis", pa.string()),
    ("cost_per_trained_model", pa.float64()), ("cost_per_trained_model_measured", pa.float64()),
])


@dataclass(frozen=True)
class WhatIf:
    """:func:`at_scale`'s result: ``table`` (one row per configuration, ranked by the
    projected cost per trained model) and the ``assumptions`` the projection makes."""

    table: pa.Table
    assumptions: tuple[str, ...]
    currency: str


def score_time_to_train(times_ns: Sequence[int], failed: int, benchmark: Optional[str], *,
                        scoring: str = "mlperf") -> tuple[Optional[int], str, bool]:
    """The time to train of one configuration from its runs' times.

    ``times_ns``: ``run_stop - run_start`` of the runs that reached the target; ``failed``:
    the runs that did not. ``scoring="mlperf"`` applies MLPerf's rule (:data:`RULES_SOURCE`):
    drop the fastest and the slowest run (UNET3D: four of each) and average the rest, a
    run that missed the target counting as the slowest (at most one such run, UNET3D
    four); when there are too few runs to drop them, or too many missed the target, the
    mean of the runs that reached it, and the text says why it is not an MLPerf score.
    ``"mean"`` and ``"median"``: of the runs that reached the target.

    Returns ``(time_ns, how, mlperf_score)``: the time (the mean rounded to the ns; None
    without a run that reached the target), the rule applied in words, and whether it is
    a valid MLPerf score (the rule applied to at least the benchmark's minimum of runs).
    """
    ts = sorted(int(t) for t in times_ns)
    n = len(ts)
    if scoring not in ("mlperf", "mean", "median"):
        raise PauError(f"scoring = {scoring!r}. Fix: one of 'mlperf', 'mean', 'median'")
    if not n:
        return None, f"no run reached the target ({failed} run{'s' if failed != 1 else ''} did not)", False
    if scoring == "median":
        mid = n // 2
        t = ts[mid] if n % 2 else _round_div(ts[mid - 1] + ts[mid], 2)
        return t, f"median of the {n} runs that reached the target", False
    mean_text = f"mean of the {n} run{'s' if n != 1 else ''} that reached the target"
    if scoring == "mean":
        return _round_div(sum(ts), n), mean_text, False
    k = DROPPED.get(benchmark or "", 1)
    minimum = MIN_RUNS.get(benchmark or "")
    total = n + failed
    if failed > k:
        return (_round_div(sum(ts), n), f"{mean_text}: not an MLPerf score ({failed} runs missed the target, "
                f"MLPerf allows {k})", False)
    if total <= 2 * k:
        need = f"MLPerf's minimum for {benchmark} is {minimum}" if minimum else "MLPerf drops the fastest and slowest"
        return (_round_div(sum(ts), n), f"{mean_text}: not an MLPerf score ({total} run{'s' if total != 1 else ''}, "
                f"too few to drop {k} fastest and {k} slowest; {need})", False)
    # runs that missed the target are the slowest: dropped first from the top
    kept = ts[k:n - (k - failed)]
    valid = minimum is not None and total >= minimum
    note = "" if valid else (f"; {total} runs, fewer than MLPerf's minimum of {minimum}" if minimum
                             else f"; no MLPerf minimum of runs known for {benchmark!r}")
    return (_round_div(sum(kept), len(kept)), f"MLPerf's olympic mean: {len(kept)} of {total} runs, the {k} fastest "
            f"and {k} slowest dropped ({failed} that missed the target among the slowest){note}", valid)


def _round_div(a: int, b: int) -> int:
    """``a / b`` rounded half to even, in integers."""
    q, r = divmod(a, b)
    return q + (1 if 2 * r > b or (2 * r == b and q % 2) else 0)


def _as_runs(runs: Iterable[Any]) -> list[Run]:
    if isinstance(runs, (Run, str, os.PathLike)):
        runs = [runs]
    out: list[Run] = []
    for r in runs:
        if isinstance(r, Run):
            out.append(r)
        elif isinstance(r, (str, os.PathLike)):
            out.extend(read_runs(r))
        else:
            raise ArgumentTypeError("placement", "pau Runs or paths", r)
    if not out:
        raise PauError("placement: no runs given. Fix: give the runs (or paths) of one benchmark on several systems")
    return out


def _source(run: Run) -> str:
    src = run.metadata.get("sources") or []
    return str(src[0]) if src else "run"


def _run_row(run: Run, accelerator_types: Mapping[str, str]) -> dict[str, Any]:
    md = run.metadata
    src = _source(run)
    if md.get("format") != "mllog":
        raise PauError(f"placement: {src} is a {md.get('format')!r} run, not an MLPerf result log: its useful "
                       "output (a trained model) cannot be told. Fix: give MLPerf Training result logs")
    if md.get("accelerators_source") == "assumed":
        raise PauError(f"placement: {src}: the accelerator count is not known (one was assumed). Fix: put the "
                       "system description beside the logs (<submitter>/systems/<system>.json) or read the log "
                       "with system=")
    model = md.get("accelerator_model")
    if model is None:
        raise PauError(f"placement: {src}: the system description names no accelerator_model_name. Fix: add "
                       "it to the system description")
    models = _mlperf.trained_models(md)
    if models is None:
        ev = md.get("eval") or {}
        raise PauError(f"placement: {src}: whether it trained a model cannot be told ({ev.get('note')}). Fix: "
                       "read closed-division logs of a benchmark with a known target, or pass mlperf_round= "
                       "to pau.read")
    led = run.summary()["ledger"]
    if led is None:
        raise PauError(f"placement: {src}: no ledger. Fix: give MLPerf result logs")
    per = _mlperf.time_per_trained_model(led, md)
    ev = md.get("eval") or {}
    return {
        "source": src, "benchmark": md.get("benchmark"), "submitter": md.get("submitter"),
        "system": md.get("system"), "accelerator_model": model,
        "accelerator_type": accelerator_types.get(model, model), "accelerators": int(md["accelerators"]),
        "status": md.get("status"), "reached": ev.get("reached"), "trained_models": int(models),
        "time_to_train_ns": md.get("time_to_train_ns"), "accountable_ns": int(per["accountable_ns"]),
        "productive_ns": int(led["productive_ns"]), "goodput": led["goodput"],
        "initialization_ns": int((led.get("state_ns") or {}).get("initialization", 0)),
        "_state_ns": {k: int(v) for k, v in (led.get("state_ns") or {}).items()},
        "_target": json_key(ev),
    }


def json_key(ev: Mapping[str, Any]) -> tuple[Any, ...]:
    """What makes two runs' targets the same: each part's name, direction and target."""
    return tuple((p.get("name"), p.get("direction"), p.get("target")) for p in ev.get("parts") or [])


RUNS_SCHEMA = pa.schema([
    ("source", pa.string()), ("benchmark", pa.string()), ("submitter", pa.string()), ("system", pa.string()),
    ("accelerator_model", pa.string()), ("accelerator_type", pa.string()), ("accelerators", pa.int64()),
    ("status", pa.string()), ("reached", pa.bool_()), ("trained_models", pa.int64()),
    ("time_to_train_ns", pa.int64()), ("accountable_ns", pa.int64()), ("productive_ns", pa.int64()),
    ("initialization_ns", pa.int64()), ("goodput", pa.float64()),
])

TABLE_SCHEMA = pa.schema([
    ("rank", pa.int64()), ("benchmark", pa.string()), ("submitter", pa.string()), ("system", pa.string()),
    ("accelerator_model", pa.string()), ("accelerator_type", pa.string()), ("accelerators", pa.int64()),
    ("runs", pa.int64()), ("trained_models", pa.int64()),
    ("time_to_train_ns", pa.int64()), ("time_to_train_median_ns", pa.int64()), ("time_to_train_scoring", pa.string()),
    ("mlperf_score", pa.bool_()),
    ("accountable_ns", pa.int64()), ("initialization_ns", pa.int64()),
    ("accelerator_hours_per_trained_model", pa.float64()), ("time_to_train_accelerator_hours", pa.float64()),
    ("goodput", pa.float64()),
    ("rate_per_accelerator_hour", pa.float64()), ("currency", pa.string()), ("cost_basis", pa.string()),
    ("cost_per_trained_model", pa.float64()), ("cost_ratio_to_cheapest", pa.float64()),
    ("cost_productive", pa.float64()), ("cost_rolled_back", pa.float64()), ("cost_recovery", pa.float64()),
    ("cost_idle", pa.float64()), ("cost_overhead", pa.float64()), ("sources", pa.list_(pa.string())),
])


def _configuration(benchmark: str, key: tuple[Any, ...], rs: list[dict[str, Any]], cost_model: _costs.CostModel,
                   scoring: str) -> dict[str, Any]:
    """One row of :func:`placement`'s table: the runs ``rs`` of one configuration
    (``key``: submitter, system, accelerator model, count), priced."""
    submitter, system, model, n = key
    atype = rs[0]["accelerator_type"]
    try:
        rate = cost_model.rate(accelerator_type=atype)
    except PauError as exc:
        raise PauError(f"placement: {submitter} {system} ({n} x {model}): {exc}") from exc
    trained = sum(r["trained_models"] for r in rs)
    ok_times = [int(r["time_to_train_ns"]) for r in rs if r["trained_models"]]
    ttt, how, valid = score_time_to_train(ok_times, len(rs) - len(ok_times), benchmark, scoring=scoring)
    med, _, _ = score_time_to_train(ok_times, len(rs) - len(ok_times), benchmark, scoring="median")
    acc = sum(r["accountable_ns"] for r in rs)
    prod = sum(r["productive_ns"] for r in rs)
    state_ns: dict[str, int] = {}
    for r in rs:
        for k, v in r["_state_ns"].items():
            state_ns[k] = state_ns.get(k, 0) + v
    hours = acc / NS_PER_HOUR
    fig = _costs.per_trained_model(rate, hours, trained)
    split = _costs.split_by_state(rate, state_ns)

    def per(v: float, trained: int = trained) -> Optional[float]:
        return None if not trained else v / trained

    return {
        "benchmark": benchmark, "submitter": submitter, "system": system, "accelerator_model": model,
        "accelerator_type": atype, "accelerators": n, "runs": len(rs), "trained_models": trained,
        "time_to_train_ns": ttt, "time_to_train_median_ns": med, "time_to_train_scoring": how,
        "mlperf_score": valid, "accountable_ns": acc, "initialization_ns": sum(r["initialization_ns"] for r in rs),
        "accelerator_hours_per_trained_model": per(hours),
        "time_to_train_accelerator_hours": None if ttt is None else n * ttt / NS_PER_HOUR,
        "goodput": prod / acc if acc else None,
        "rate_per_accelerator_hour": rate.per_accelerator_hour, "currency": rate.currency,
        "cost_basis": rate.basis, "cost_per_trained_model": fig.value,
        "cost_productive": per(split.productive), "cost_rolled_back": per(split.rolled_back),
        "cost_recovery": per(split.recovery), "cost_idle": per(split.idle), "cost_overhead": per(split.overhead),
        "sources": [r["source"] for r in rs],
    }


def placement(runs: Iterable[Any], cost_model: _costs.CostModel, *, output: str = "trained_model",
              scoring: str = "mlperf", accelerator_types: Optional[Mapping[str, str]] = None) -> Placement:
    """Rank the configurations that ran one workload by cost per trained model.

    Parameters
    ----------
    runs : iterable of pau.Run or paths
        MLPerf Training result logs of one benchmark on several systems (a path may be a
        folder: every log below it, :func:`pau.read_runs`). Each run's system description
        gives its accelerator type (``accelerator_model_name``) and count.
    cost_model : pau.fleet.costs.CostModel
        The cost basis; ``cost_model.rate(accelerator_type=...)`` prices each
        configuration.
    output : str
        ``"trained_model"``: a run that stopped with ``success`` and whose last eval
        reached the quality target (:func:`pau.readers.mlperf_rules.trained_models`).
    scoring : str
        How the time to train is scored (:func:`score_time_to_train`): ``"mlperf"``
        (default), ``"mean"`` or ``"median"``.
    accelerator_types : mapping, optional
        The cost model's accelerator type of each ``accelerator_model_name``
        (``{"NVIDIA H100-SXM5-80GB": "H100"}``); a name not in it is its own type.

    Returns
    -------
    Placement
        ``table`` (one row per configuration, ranked) and ``runs`` (one row per run);
        ``docs/fleet.md`` lists the columns.

    Raises
    ------
    pau.errors.PauError
        No runs; a run that is not an MLPerf log, with no known accelerator count or
        type, or whose output cannot be judged (no known target); runs of several
        benchmarks or targets; a configuration the cost model cannot price.
    """
    if output != "trained_model":
        raise PauError(f"placement: output = {output!r}. Fix: output='trained_model' (a run to the quality "
                       "target: the one output comparable across systems)")
    if not isinstance(cost_model, _costs.CostModel):
        raise ArgumentTypeError("placement", "a pau.fleet.costs.CostModel (costs.cost_model(...)) as cost_model",
                                cost_model)
    all_runs = _as_runs(runs)
    types = dict(accelerator_types or {})
    rows = [_run_row(r, types) for r in all_runs]
    benches = sorted({str(r["benchmark"]) for r in rows})
    if len(benches) != 1:
        raise PauError(f"placement: the runs are of {len(benches)} benchmarks ({', '.join(benches)}). Fix: give "
                       "the runs of one benchmark")
    targets = {r["_target"] for r in rows}
    if len(targets) != 1:
        raise PauError(f"placement: the runs of {benches[0]} are judged against different targets "
                       f"({sorted(targets, key=str)}): trained models are not the same output. Fix: give runs of "
                       "one round")
    benchmark = benches[0]
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["submitter"], r["system"], r["accelerator_model"], r["accelerators"]), []).append(r)
    out = [_configuration(benchmark, key, rs, cost_model, scoring) for key, rs in groups.items()]
    currency = out[-1]["currency"] if out else cost_model.currency
    out.sort(key=lambda x: (x["cost_per_trained_model"] is None, x["cost_per_trained_model"] or 0.0,
                            str(x["submitter"]), str(x["system"])))
    costs = [x["cost_per_trained_model"] for x in out if x["cost_per_trained_model"] is not None]
    best = min(costs) if costs else None
    for i, x in enumerate(out, 1):
        x["rank"] = i
        c = x["cost_per_trained_model"]
        x["cost_ratio_to_cheapest"] = None if c is None or not best else c / best
    target_text = ", ".join(f"{name + ' ' if name else ''}{op} {t:g}" for name, op, t in rows[0]["_target"])
    assumptions = (
        f"a trained model is a run that stopped with status success and whose last eval reached {benchmark}'s "
        f"quality target ({target_text}); runs that did not are paid for and train none",
        "accelerator-hours per trained model: every accountable accelerator-hour of the configuration's runs "
        "(initialization, evaluations and the runs that missed the target included) over its trained models",
        "time to train: " + (f"MLPerf's rule, {RULES_SOURCE}" if scoring == "mlperf"
                             else f"{scoring} of the runs that reached the target"),
        "goodput: productive over accountable ns, summed over the configuration's runs (Run.summary()'s ledger)",
    )
    table = pa.Table.from_pylist(out, schema=TABLE_SCHEMA)
    runs_t = pa.Table.from_pylist([{k: v for k, v in r.items() if not k.startswith("_")} for r in rows],
                                  schema=RUNS_SCHEMA)
    warnings: list[str] = [w for r in all_runs for w in r.warnings]
    return Placement(table, runs_t, benchmark, output, currency, assumptions, warnings)


def _check_what_if(scaling_efficiency: Any, failure_rate: Any, checkpoint_cost_s: Any, restart_s: Any,
                   checkpoint_interval_s: Any) -> float:
    """:func:`at_scale`'s numbers checked; the scaling efficiency as a float."""
    if isinstance(scaling_efficiency, bool) or not (0 < float(scaling_efficiency) <= 1):
        raise PauError(f"scaling_efficiency = {scaling_efficiency!r}. Fix: a number in (0, 1]")
    if failure_rate is not None and not isinstance(failure_rate, pa.Table) and (
            isinstance(failure_rate, bool) or not isinstance(failure_rate, (int, float))
            or not math.isfinite(failure_rate) or failure_rate < 0):
        raise PauError(f"failure_rate = {failure_rate!r}. Fix: failures per accelerator-hour, a finite number >= 0, "
                       "or pau.fleet.reliability.failure_rates' table")
    for name, v in (("checkpoint_cost_s", checkpoint_cost_s), ("restart_s", restart_s),
                    ("checkpoint_interval_s", checkpoint_interval_s)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
                              or v < 0 or (name == "checkpoint_interval_s" and v == 0)):
            bound = "> 0" if name == "checkpoint_interval_s" else ">= 0"
            raise PauError(f"{name} = {v!r}. Fix: seconds, a finite number {bound}")
    return float(scaling_efficiency)


def _goodput_at(failure_rate: Union[float, pa.Table, None], m: int, train_s: Optional[float],
                checkpoint_cost_s: float, restart_s: float, checkpoint_interval_s: Optional[float],
                system: Any) -> tuple[Optional[float], Optional[float], Optional[float], Optional[float]]:
    """Daly's expected goodput at ``m`` accelerators over a training of ``train_s`` (1
    without failures; None when the time to train is not known), the MTTF (h), the failure
    rate per accelerator-hour and the checkpoint interval used."""
    g: Optional[float] = 1.0
    mttf_h: Optional[float] = None
    fr: Optional[float] = (None if failure_rate is None or isinstance(failure_rate, pa.Table)
                           else float(failure_rate))
    interval: Optional[float] = None
    if failure_rate is not None and not (isinstance(failure_rate, (int, float)) and failure_rate == 0):
        if train_s is None:
            g = None
        else:
            if checkpoint_interval_s is None and not checkpoint_cost_s > 0:
                raise PauError("at_scale: Daly's checkpoint interval needs checkpoint_cost_s > 0. Fix: give "
                               "checkpoint_cost_s, or checkpoint_interval_s")
            whole = checkpoint_interval_s is not None and checkpoint_interval_s >= train_s
            cur_int = train_s if whole else checkpoint_interval_s
            adv = _rel.at_size(failure_rate, m, checkpoint_cost_s=0.0 if whole else checkpoint_cost_s,
                               restart_s=restart_s, current_interval_s=cur_int)
            mttf_h, fr = adv.mttf_h, adv.rate_per_accelerator_hour
            if adv.checkpoint is not None:
                if cur_int is None:
                    g, interval = adv.expected_goodput, adv.daly_s
                else:
                    g, interval = adv.checkpoint["expected_goodput_current"], cur_int
                if not g:
                    raise PauError(f"at_scale: {system} at {m} accelerators: the expected goodput is 0 "
                                   "(no work survives between failures). Fix: a shorter checkpoint interval")
    return g, mttf_h, fr, interval


def at_scale(result: Placement, accelerators: Union[int, Mapping[str, int], None] = None, *,
             cost_model: Optional[_costs.CostModel] = None, failure_rate: Union[float, pa.Table, None] = None,
             checkpoint_cost_s: float = 0.0, restart_s: float = 0.0, checkpoint_interval_s: Optional[float] = None,
             scaling_efficiency: float = 1.0) -> WhatIf:
    """Each configuration of a :func:`placement` at another accelerator count, price or
    checkpoint interval, under :data:`WHAT_IF_ASSUMPTIONS` (written into the result).

    Per configuration with ``N`` accelerators measured and ``M`` in the what-if, of its
    accountable accelerator-ns per trained model ``A`` (initialization ``I``):

        hours(M) = (I * M / N + (A - I) / e / G) / 3.6e12
        time to train(M) = time to train * N / M / e / G

    ``e`` the scaling efficiency, ``G`` Daly's expected goodput at ``M`` accelerators
    (:func:`pau.fleet.reliability.at_size` at the failure rate; 1 without one).

    Parameters
    ----------
    accelerators : int, mapping or None
        The count of every configuration, ``{system: count}`` (the others keep theirs),
        or None (every configuration keeps its count).
    cost_model : CostModel, optional
        Another price; by default the rates of the placement.
    failure_rate : float or failure_rates' table, optional
        Failures per accelerator-hour; None or 0: no failures (``G = 1``).
    checkpoint_cost_s, restart_s : float
        Blocking time of a checkpoint, time from a failure to resumed work (s).
    checkpoint_interval_s : float, optional
        Work between checkpoints (s); None: Daly's interval (needs ``checkpoint_cost_s > 0``).
        An interval at or past the projected training time means no checkpoint: a
        failure restarts the run (the whole training is one segment).
    scaling_efficiency : float
        ``e`` in (0, 1]: the parallel efficiency of the new count relative to the measured one.
    """
    if not isinstance(result, Placement):
        raise ArgumentTypeError("at_scale", "placement()'s result", result)
    e = _check_what_if(scaling_efficiency, failure_rate, checkpoint_cost_s, restart_s, checkpoint_interval_s)
    rows = []
    for r in result.table.to_pylist():
        n = int(r["accelerators"])
        m = accelerators.get(r["system"], n) if isinstance(accelerators, Mapping) else (
            n if accelerators is None else accelerators)
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise PauError(f"accelerators = {m!r} for {r['system']}. Fix: a whole number >= 1")
        if cost_model is not None:
            try:
                rate_obj = cost_model.rate(accelerator_type=r["accelerator_type"])
            except PauError as exc:
                raise PauError(f"at_scale: {r['submitter']} {r['system']}: {exc}") from exc
            per_h, basis, cur = rate_obj.per_accelerator_hour, rate_obj.basis, rate_obj.currency
        else:
            per_h, basis, cur = r["rate_per_accelerator_hour"], r["cost_basis"], r["currency"]
        trained = r["trained_models"]
        ttt = r["time_to_train_ns"]
        train_s = None if ttt is None else ttt / 1e9 * n / m / e
        g, mttf_h, fr, interval = _goodput_at(failure_rate, m, train_s, checkpoint_cost_s, restart_s,
                                              checkpoint_interval_s, r["system"])
        hours = None
        if trained and g is not None:
            a_ns = r["accountable_ns"] / trained
            i_ns = r["initialization_ns"] / trained
            hours = (i_ns * m / n + (a_ns - i_ns) / e / g) / NS_PER_HOUR
        cost = None if hours is None else per_h * hours
        rows.append({
            "benchmark": r["benchmark"], "submitter": r["submitter"], "system": r["system"],
            "accelerator_type": r["accelerator_type"], "accelerators_measured": n, "accelerators": m,
            "scaling_efficiency": e, "failure_rate_per_accelerator_hour": fr,
            "mttf_h": mttf_h, "checkpoint_interval_s": interval, "expected_goodput": g,
            "time_to_train_ns": None if train_s is None or g is None else int(round(train_s / g * 1e9)),
            "accelerator_hours_per_trained_model": hours,
            "rate_per_accelerator_hour": per_h, "currency": cur, "cost_basis": basis,
            "cost_per_trained_model": cost,
            "cost_per_trained_model_measured": r["cost_per_trained_model"],
        })
    rows.sort(key=lambda x: (x["cost_per_trained_model"] is None, x["cost_per_trained_model"] or 0.0,
                             str(x["submitter"]), str(x["system"])))
    for i, x in enumerate(rows, 1):
        x["rank"] = i
    cur = rows[0]["currency"] if rows else result.currency
    return WhatIf(pa.Table.from_pylist(rows, schema=WHAT_IF_SCHEMA), WHAT_IF_ASSUMPTIONS, cur)
