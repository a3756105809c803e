"""MLPerf Training quality targets, and a run's eval metric judged against them.

An MLPerf Training result counts only when the run reached its benchmark's quality target
(MLPerf Training rules: "time to train to a quality target"). The targets below are the
ones MLCommons' own compliance checker applies: repository ``mlcommons/logging``, folder
``mlperf_logging/compliance_checker``. For a closed-division log of round X.Y the checker
reads ``training_X.Y.0/common.yaml``, which enqueues ``training_X.Y.0/closed_common.yaml``,
which enqueues ``training_X.Y.0/closed_<submission_benchmark>.yaml``; the target is that
file's ``ATLEAST_ONE_CHECK`` on ``eval_accuracy``: at least one eval must pass it, e.g.
``v['value'] >= 0.7590 and v['value'] < 1.0`` for ResNet-50. The first comparison is the
target with its direction (``>=`` higher is better, ``<=`` lower is better); the other is
a plausibility bound, kept here as ``bound``.

The stored copy of that repository holds one path per distinct file content, so a file
that did not change from an earlier round is found under the latest earlier
``training_X.Y.0`` folder (or ``X.Y.0`` before round 1.1) that holds it; each row names the
path and commit it was read from. Where that round's file was renamed (DLRM-DCNv2's
``closed_dlrmv2.yaml`` in ``training_3.0.0``) the row says so in ``note``.

This module is data and plain Python (level 0): it imports nothing of pau and nothing
heavy.
"""

from __future__ import annotations

import json
import math
import operator
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Mapping, Optional, Sequence, TypedDict, Union

if TYPE_CHECKING:  # types only: this module imports nothing of pau when it runs
    from pau.engine.types import MLPerfEval, MLPerfTargetPart

__all__ = ["CHECKER_REPO", "EVAL_KEY", "QualityTarget", "ROUNDS", "TARGETS", "TARGETS_V5", "is_number", "judge", "meets",
           "PerTrainedModel", "time_per_trained_model", "trained_models",
           "progress_text", "round_of_path", "status_text", "targets_for", "verdict_text"]

#: The repository whose compliance checker the targets come from.
CHECKER_REPO = "mlcommons/logging"
#: The log key of the eval metric in MLPerf Training logs.
EVAL_KEY = "eval_accuracy"

_CC = "mlperf_logging/compliance_checker/"


@dataclass(frozen=True)
class QualityTarget:
    """One quality target of one benchmark in one round (closed division).

    Attributes
    ----------
    benchmark : str
        ``submission_benchmark`` as the log writes it.
    round : str
        MLPerf Training round, ``"4.0"``.
    part : str or None
        None: the eval value itself. A name (``"FID"``, ``"BBOX"``): one of several
        metrics, written as the eval line's ``metadata.metric`` or as a key of its value.
    direction : str
        ``">="`` (higher is better) or ``"<="`` (lower is better).
    target : float
    bound : tuple of (str, float) or None
        The checker's other comparison, a plausibility bound (``("<", 1.0)``).
    measure : str
        What the value measures (MLCommons' benchmark table, mlcommons.org/benchmarks/training).
    source, commit : str
        The checker file (path in :data:`CHECKER_REPO`) and the commit it was read at.
    note : str
    """

    benchmark: str
    round: str
    part: str | None
    direction: str
    target: float
    bound: tuple[str, float] | None
    measure: str
    source: str
    commit: str
    note: str = ""

    @property
    def source_text(self) -> str:
        """``mlcommons/logging <path> @ <commit, 8 digits>``."""
        return f"{CHECKER_REPO} {self.source} @ {self.commit[:8]}"


def _t(benchmark: str, part: str | None, direction: str, target: float, bound: tuple[str, float] | None,
       measure: str, folder: str, file: str, commit: str, note: str = "", *, round: str = "4.0") -> QualityTarget:
    return QualityTarget(benchmark, round, part, direction, target, bound, measure, f"{_CC}{folder}/{file}",
                         commit, note)


def _v5(round: str, benchmark: str, part: str | None, direction: str, target: float,
        bound: tuple[str, float] | None, measure: str, file: str, commit: str, note: str = "") -> QualityTarget:
    """A row of round 5.0 or 5.1, read from ``training_<round>.0/<file>`` at ``commit``
    (the last commit that changed the file, in the repository's history to 2026-07-29)."""
    return _t(benchmark, part, direction, target, bound, measure, f"training_{round}.0", file, commit, note,
              round=round)


_SD_NOTE = ("FID and CLIP of one eval point together: the checker's aggregated_eval_accuracy requires "
            "0 <= FID <= 90 and 0.15 <= CLIP <= 1 on one line")


#: The quality targets of MLPerf Training v4.0, closed division: every benchmark
#: ``training_4.0.0/closed_common.yaml`` accepts (maskrcnn and rnnt are accepted by the
#: checker, though the round had no results for them).
TARGETS: tuple[QualityTarget, ...] = (
    _t("bert", None, ">=", 0.720, ("<", 1.0), "Mask-LM accuracy",
       "training_3.0.0", "closed_bert.yaml", "293a02b50e42f6fd7c49a3e078ea546b09ecf280"),
    _t("dlrm_dcnv2", None, ">=", 0.80275, ("<=", 1.0), "AUC",
       "training_3.0.0", "closed_dlrmv2.yaml", "751e1eeade390f57a91d47045e18a10acf88b609",
       "the file closed_common enqueues is closed_dlrm_dcnv2.yaml; its earlier content is stored as "
       "closed_dlrmv2.yaml, and training_5.0.0/closed_dlrm_dcnv2.yaml has the same target"),
    _t("gnn", None, ">=", 0.72, ("<", 1.0), "classification accuracy",
       "training_4.0.0", "closed_gnn.yaml", "596cb01a6ce95e41ec19067a10959ea18548bb35"),
    _t("gpt3", None, "<=", 2.69, (">", 2.6), "log perplexity",
       "training_3.0.0", "closed_gpt3.yaml", "3811db49f92285f5c3c6f1331c97f5b3013a7daa"),
    _t("llama2_70b_lora", None, "<=", 0.925, (">", 0.0), "cross-entropy loss",
       "training_4.0.0", "closed_llama2_70b_lora.yaml", "022b39136cc71ddafa0863fe2098b7dceb251d84"),
    _t("maskrcnn", "BBOX", ">=", 0.377, ("<", 1.0), "box min AP",
       "training_3.0.0", "closed_maskrcnn.yaml", "ca5c75a500b260863b238818dd749932e7264732"),
    _t("maskrcnn", "SEGM", ">=", 0.339, ("<", 1.0), "mask min AP",
       "training_3.0.0", "closed_maskrcnn.yaml", "ca5c75a500b260863b238818dd749932e7264732"),
    _t("resnet", None, ">=", 0.7590, ("<", 1.0), "top-1 classification accuracy",
       "training_3.1.0", "closed_resnet.yaml", "5c07d0cd60224b3008b96662ebce06acfde977ec"),
    _t("rnnt", None, "<=", 0.058, (">", 0.0), "word error rate",
       "training_3.0.0", "closed_rnnt.yaml", "b497e4df3551f7e667ad8facbdd12ac22c8ea878"),
    _t("ssd", None, ">=", 0.340, ("<", 1.0), "mAP",
       "training_3.0.0", "closed_ssd.yaml", "ca5c75a500b260863b238818dd749932e7264732"),
    _t("stable_diffusion", "FID", "<=", 90.0, (">=", 0.0), "FID",
       "training_3.1.0", "closed_stable_diffusion.yaml", "eb8f46c568e202f84965f70dc2f0730a95dd31ce",
       "FID and CLIP of one eval point together (the checker groups by step_num; v4.0 logs and "
       "training_5.0.0 group by samples_count, same targets)"),
    _t("stable_diffusion", "CLIP", ">=", 0.15, ("<=", 1.0), "CLIP score",
       "training_3.1.0", "closed_stable_diffusion.yaml", "eb8f46c568e202f84965f70dc2f0730a95dd31ce",
       "FID and CLIP of one eval point together (the checker groups by step_num; v4.0 logs and "
       "training_5.0.0 group by samples_count, same targets)"),
    _t("unet3d", None, ">=", 0.908, None, "mean DICE score",
       "1.0.0", "closed_unet3d.yaml", "489f975920c6ad6b70ed29ccd5c8602f48839e47",
       "an earlier stored version of the file (3af209cf) checks 0.91; 0.908 is MLCommons' published target"),
)

#: Rounds 5.0 and 5.1, closed division: every benchmark ``training_5.0.0/closed_common.yaml``
#: and ``training_5.1.0/closed_common.yaml`` accept, each row's ``ATLEAST_ONE_CHECK`` on
#: ``eval_accuracy`` (``aggregated_eval_accuracy`` for Stable Diffusion) as the file holds it
#: at the commit named. The measures are MLCommons' benchmark table's (Llama 3.1 8B and 405B:
#: log perplexity; Flux.1: validation loss).
TARGETS_V5: tuple[QualityTarget, ...] = (
    _v5("5.0", "bert", None, ">=", 0.720, ("<", 1.0), "Mask-LM accuracy",
        "closed_bert.yaml", "ad4e9a6c3dfd82ffdf12c18d59c26f72d8cbdf25"),
    _v5("5.0", "dlrm_dcnv2", None, ">=", 0.80275, ("<=", 1.0), "AUC",
        "closed_dlrm_dcnv2.yaml", "ad4e9a6c3dfd82ffdf12c18d59c26f72d8cbdf25"),
    _v5("5.0", "llama2_70b_lora", None, "<=", 0.925, (">", 0.0), "cross-entropy loss",
        "closed_llama2_70b_lora.yaml", "ad4e9a6c3dfd82ffdf12c18d59c26f72d8cbdf25"),
    _v5("5.0", "llama31_405b", None, "<=", 5.6, (">", 0.0), "log perplexity",
        "closed_llama31_405b.yaml", "38a90cd123d228091efabfbbb37004b70f42cfc2"),
    _v5("5.0", "retinanet", None, ">=", 0.340, ("<", 1.0), "mAP",
        "closed_retinanet.yaml", "ad4e9a6c3dfd82ffdf12c18d59c26f72d8cbdf25"),
    _v5("5.0", "rgat", None, ">=", 0.72, ("<", 1.0), "classification accuracy",
        "closed_rgat.yaml", "e6e040b7f040a44ddce305b233b08ca58c8f7353"),
    _v5("5.0", "stable_diffusion", "FID", "<=", 90.0, (">=", 0.0), "FID",
        "closed_stable_diffusion.yaml", "ad4e9a6c3dfd82ffdf12c18d59c26f72d8cbdf25", _SD_NOTE),
    _v5("5.0", "stable_diffusion", "CLIP", ">=", 0.15, ("<=", 1.0), "CLIP score",
        "closed_stable_diffusion.yaml", "ad4e9a6c3dfd82ffdf12c18d59c26f72d8cbdf25", _SD_NOTE),
    _v5("5.1", "dlrm_dcnv2", None, ">=", 0.80275, ("<=", 1.0), "AUC",
        "closed_dlrm_dcnv2.yaml", "187ee9cfb92996639ea2a435b5fd5623851f74bb"),
    _v5("5.1", "flux1", None, "<=", 0.586, (">", 0.0), "validation loss",
        "closed_flux1.yaml", "e5dd1117213b604ea0d1658d48875f8700c1533c"),
    _v5("5.1", "llama2_70b_lora", None, "<=", 0.925, (">", 0.0), "cross-entropy loss",
        "closed_llama2_70b_lora.yaml", "187ee9cfb92996639ea2a435b5fd5623851f74bb"),
    _v5("5.1", "llama31_405b", None, "<=", 5.6, (">", 0.0), "log perplexity",
        "closed_llama31_405b.yaml", "470daf0fc0e6347a8c46ee8071b7dc92310ff81f"),
    _v5("5.1", "llama31_8b", None, "<=", 3.3, (">", 0.0), "log perplexity",
        "closed_llama31_8b.yaml", "90738a37679311377b1ee85eaa5e8486c43b0a4a",
        "earlier stored versions of the file (a8de7d2e, a placeholder copied from BERT) check >= 0.720"),
    _v5("5.1", "retinanet", None, ">=", 0.340, ("<", 1.0), "mAP",
        "closed_retinanet.yaml", "187ee9cfb92996639ea2a435b5fd5623851f74bb"),
    _v5("5.1", "rgat", None, ">=", 0.72, ("<", 1.0), "classification accuracy",
        "closed_rgat.yaml", "187ee9cfb92996639ea2a435b5fd5623851f74bb"),
)
TARGETS = TARGETS + TARGETS_V5

#: The rounds :data:`TARGETS` covers, oldest first.
ROUNDS: tuple[str, ...] = tuple(sorted({t.round for t in TARGETS}, key=lambda r: tuple(map(int, r.split(".")))))

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}


def targets_for(benchmark: str | None, round: str) -> tuple[QualityTarget, ...]:
    """The targets of ``benchmark`` in ``round`` (one per part; empty when none is known)."""
    return tuple(t for t in TARGETS if t.benchmark == benchmark and t.round == round)


def meets(value: Any, t: QualityTarget) -> bool:
    """Whether ``value`` passes the checker's comparison: the target in its direction and
    the plausibility bound. A value that is not a finite number passes nothing."""
    if not is_number(value):
        return False
    ok = _OPS[t.direction](value, t.target)
    return bool(ok and (t.bound is None or _OPS[t.bound[0]](value, t.bound[1])))


_ROUND_DIR = re.compile(r"^(?:mlperf_)?training(?:_results)?_v?(\d+\.\d+)(?:\.0)?$")


def round_of_path(path: str | os.PathLike[str]) -> str | None:
    """The MLPerf Training round a result's path names (``training_v4.0``,
    ``training_results_v4.0``, ``mlperf_training_v5.1``, ``training_4.0.0``: ``"4.0"``),
    the deepest such folder; None when none does."""
    for part in reversed(os.path.normpath(os.fspath(path)).split(os.sep)):
        m = _ROUND_DIR.match(part)
        if m:
            return m.group(1)
    return None


def is_number(v: Any) -> bool:
    """A finite int or float (not a bool; an int beyond the floats' range is not one)."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _part_value(rec: Mapping[str, Any], part: str | None) -> Any:
    """The value of one part in one eval record, or None when the record has none."""
    v = rec.get("value")
    if part is None:
        return v if "metric" not in rec and not isinstance(v, dict) else None
    if isinstance(v, dict):
        return v.get(part)
    return v if rec.get("metric") == part else None


def _points(values: Sequence[Mapping[str, Any]]) -> list[dict[str | None, Any]]:
    """The eval points of a run in time order, each ``{part: value}``: a record with one
    value (part None) or a dict of named values is a point; records naming one ``metric``
    each are one point per ``samples_count``/``step_num``/``epoch_num``, placed at its
    latest record (FID and CLIP of one Stable Diffusion checkpoint, as the checker
    aggregates them)."""
    pts: dict[str, dict[str | None, Any]] = {}
    for i, rec in enumerate(values):
        v = rec.get("value")
        if "metric" in rec and not isinstance(v, dict):
            key = json.dumps([rec.get(k) for k in ("samples_count", "step_num", "epoch_num")], default=str)
            parts: dict[str | None, Any] = {rec["metric"]: v}
        else:
            key, parts = f"#{i}", (dict(v) if isinstance(v, dict) else {None: v})
        got = pts.pop(key, {})
        got.update(parts)
        pts[key] = got   # re-inserted: the point sits at its latest record
    return list(pts.values())


def _parts_of(values: Sequence[Mapping[str, Any]]) -> list[str | None]:
    names: list[str | None] = []
    for rec in values:
        v = rec.get("value")
        for n in (list(v) if isinstance(v, dict) else [rec.get("metric")]):
            if n not in names:
                names.append(n)
    return names


def judge(benchmark: str | None, values: Iterable[Mapping[str, Any]], *, round: str | None,
          division: str | None, key: str = EVAL_KEY) -> MLPerfEval:
    """A run's eval metric against its benchmark's quality target (JSON-able).

    Parameters
    ----------
    benchmark : str or None
        ``submission_benchmark``.
    values : iterable of dict
        The eval records in time order, each with ``value`` (a number, or a dict of named
        numbers) and, for one of several metrics, ``metric``.
    round : str or None
        The MLPerf Training round; None: the latest of :data:`ROUNDS` with a target for the
        benchmark (else the latest), written in ``assumed``.
    division : str or None
        ``closed`` or ``open``; None is taken as closed (written in ``assumed``). The
        table holds the closed division's targets: an open-division run gets none.
    key : str
        The log key of the eval metric.

    Returns
    -------
    MLPerfEval
        ``metric`` (the key), ``values`` (as given), ``last`` (the value at the last eval
        point, see :func:`_points`; None when it is not a number), ``best`` (the highest, or
        lowest when lower is better), ``target``, ``direction`` for a benchmark with one
        metric (None with several: see ``parts``), ``reached`` (every part's value at the
        last eval point passes its target and bound; None when no target is known),
        ``target_source``,
        ``round``, ``division``, ``parts`` (per metric: ``name, measure, last, best, target,
        direction, bound, reached``), ``assumed`` and ``note`` (why no target, or the row's note).
    """
    vals = [dict(v) for v in values]
    assumed = []
    if round is None:
        known = [r for r in ROUNDS if targets_for(benchmark, r)]
        round = known[-1] if known else ROUNDS[-1]
        assumed.append(f"MLPerf Training round {round} (the path names no round; the latest with a target for "
                       f"{benchmark!r})" if known else f"MLPerf Training round {round} (the path names no round)")
    if division is None:
        assumed.append("closed division (the log has no submission_division)")
    ts = targets_for(benchmark, round) if division in (None, "closed") else ()
    note = None
    if not ts:
        note = ("open division: the table holds the closed division's targets" if division not in (None, "closed")
                else f"no quality target known for benchmark {benchmark!r} in round {round}")
    parts: list[MLPerfTargetPart] = []
    rows: list[tuple[str | None, QualityTarget | None]] = (
        [(t.part, t) for t in ts] if ts else [(n, None) for n in (_parts_of(vals) or [None])])
    points = _points(vals)
    for name, t in rows:
        series = [x for x in (_part_value(r, name) for r in vals) if is_number(x)]
        at_last = points[-1].get(name) if points else None
        last = at_last if is_number(at_last) else None
        best = None
        if t is not None and series:
            best = max(series) if t.direction == ">=" else min(series)
        parts.append({"name": name, "measure": None if t is None else t.measure, "last": last, "best": best,
                      "target": None if t is None else t.target, "direction": None if t is None else t.direction,
                      "bound": None if t is None or t.bound is None else list(t.bound),
                      "reached": None if t is None else (last is not None and meets(last, t))})
    one = parts[0] if len(parts) == 1 else None
    return {
        "metric": key, "values": vals,
        "last": None if one is None else one["last"], "best": None if one is None else one["best"],
        "target": None if one is None else one["target"], "direction": None if one is None else one["direction"],
        "reached": None if not ts else all(p["reached"] for p in parts),
        "target_source": None if not ts else ts[0].source_text,
        "round": round, "division": division, "parts": parts, "assumed": assumed,
        "note": note if note is not None else (ts[0].note or None),
    }


def _value_text(v: float, target: float | None = None, direction: str | None = None) -> str:
    """An eval value written so that its comparison with the target reads off the text:
    at least four decimals and one more than the target has, more while the rounded
    text would compare otherwise than the value (0.75838 against 0.759 is written
    0.75838, never 0.7584); without a target, four significant digits."""
    if target is None or direction is None or not abs(v) >= 1e-3:
        return f"{v:.4g}"
    t = repr(float(target))
    d = max(4, (len(t.split(".")[1]) if "." in t and "e" not in t else 0) + 1)
    op = _OPS[direction]
    while d < 17:
        shown = float(f"{v:.{d}f}")
        if op(shown, target) == op(v, target) and (shown == target) == (v == target):
            break
        d += 1
    return f"{v:.{d}f}"


def verdict_text(ev: Mapping[str, Any]) -> str:
    """One line for :func:`judge`'s result: ``eval_accuracy 0.7602 >= 0.759: reached``;
    with several metrics ``eval_accuracy FID 86.1336 <= 90, CLIP 0.1767 >= 0.15: reached``;
    ``not reached`` when it is missed (naming the checker's bound when that is what
    fails); the last value and why there is no target when none is known."""
    metric, parts = ev["metric"], ev["parts"]
    if ev["reached"] is None:
        lasts = [p for p in parts if p["last"] is not None]
        if not lasts:
            return f"no numeric {metric} logged"
        shown = ", ".join((f"{p['name']} " if p["name"] else "") + _value_text(p["last"]) for p in lasts)
        return f"{metric} {shown} (last; {ev['note']})"
    items, out_of_bound = [], []
    for p in parts:
        name = f"{p['name']} " if p["name"] else ""
        val = "none logged" if p["last"] is None else _value_text(p["last"], p["target"], p["direction"])
        items.append(f"{name}{val} {p['direction']} {p['target']:g}")
        if (p["last"] is not None and not p["reached"] and p["bound"] is not None
                and _OPS[p["direction"]](p["last"], p["target"])):
            out_of_bound.append(f"{name}outside the checker's bound {p['bound'][0]} {p['bound'][1]:g}")
    verdict = "reached" if ev["reached"] else "not reached"
    if out_of_bound:
        verdict += " (" + "; ".join(out_of_bound) + ")"
    return f"{metric} {', '.join(items)}: {verdict}"


def progress_text(epochs: int, blocks: int) -> str:
    """The epochs and blocks a log ran: ``35 epochs in 9 blocks``, ``5 epochs``,
    ``23 blocks``, ``no epoch or block lines``."""
    def n(k: int, what: str) -> str:
        return f"{k:,} {what}" + ("" if k == 1 else "s")
    if epochs and blocks:
        return f"{n(epochs, 'epoch')} in {n(blocks, 'block')}"
    if epochs or blocks:
        return n(epochs, "epoch") if epochs else n(blocks, "block")
    return "no epoch or block lines"


def status_text(status: str | None) -> str:
    """``run_stop``'s status for people: ``status success``; any other named plainly as no
    result (``status aborted (not a valid result)``, ``no run_stop (the log ends before
    the run stopped: not a valid result)``)."""
    if status == "success":
        return "status success"
    if status == "no_run_stop":
        return "no run_stop (the log ends before the run stopped: not a valid result)"
    return f"status {status} (not a valid result)"


def trained_models(metadata: Mapping[str, Any]) -> int | None:
    """MLPerf's useful output: one trained model for a run that stopped with status
    ``success`` and whose eval reached its quality target at the last eval point
    (``metadata["eval"]["reached"]``, :func:`judge`), 0 for a run that did not (any
    other status, or the target missed), None when no target is known (open division,
    a benchmark the table does not hold): then it cannot be said."""
    ev = metadata.get("eval") or {}
    if metadata.get("status") != "success":
        return 0
    reached = ev.get("reached")
    return None if reached is None else int(bool(reached))


class PerTrainedModel(TypedDict):
    """:func:`time_per_trained_model` of one MLPerf run (JSON-able; exact ns)."""

    trained_models: Optional[int]
    time_to_train_ns: Optional[int]
    accountable_ns: int
    accountable_ns_per_trained_model: Union[int, float, None]
    state_ns_per_trained_model: Optional[Dict[str, Union[int, float, None]]]
    reached: Optional[bool]
    status: Optional[str]
    benchmark: Optional[str]


def time_per_trained_model(ledger: Mapping[str, Any], metadata: Mapping[str, Any]) -> PerTrainedModel:
    """An MLPerf run's accelerator time per trained model (:func:`trained_models`), the
    denominator MLPerf compares submissions by (time to train one model to the target),
    where blocks and epochs hold different numbers of samples from one submission to
    another. ``ledger``: the run's ``Ledger.summary()``. JSON-able: ``trained_models``,
    ``time_to_train_ns``, ``accountable_ns``, ``accountable_ns_per_trained_model`` and
    ``state_ns_per_trained_model`` (exact ns; None without a trained model)."""
    n = trained_models(metadata)
    acc = int(ledger["accountable_ns"])
    states = {k: int(v) for k, v in (ledger.get("state_ns") or {}).items() if v}

    def per(v: int) -> int | float | None:
        if not n:
            return None
        return v // n if v % n == 0 else v / n

    return {"trained_models": n, "time_to_train_ns": metadata.get("time_to_train_ns"), "accountable_ns": acc,
            "accountable_ns_per_trained_model": per(acc),
            "state_ns_per_trained_model": None if not n else {k: per(v) for k, v in states.items()},
            "reached": (metadata.get("eval") or {}).get("reached"), "status": metadata.get("status"),
            "benchmark": metadata.get("benchmark")}

