"""Outcome figures over one ledger: program goodput (MFU, HFU), the field's goodput
definitions (ML Productivity Goodput, ETTR, NVRx-style straggler scores), and recovery
(failure rate, time to recover, restart loops, progress protection, waste as capacity).

Every figure is computed from the ledger's own cells (:meth:`pau.core.Ledger.summary`,
its state intervals and its attribution) and, where a definition needs more, from the
lifecycle table and a schedule (queue and allocation records, e.g.
:func:`pau.readers.slurm.read_sacct`). Ratios are exact :class:`fractions.Fraction`
in the results and floats in their ``summary()`` (JSON-able); a ratio whose
denominator is zero is None. Formulas, sources and how each figure relates to pau's
goodput: ``docs/outcome.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any, Mapping, Optional, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine.api import ledger as _ledger_of
from pau.engine._input import _column, as_table, int_values, time_values
from pau.engine.ledger import NS_PER_HOUR, Ledger, exact_sums
from pau.figures.analysis import step_rows
from pau.engine.types import Quarantined, RunWarning, check_on_invalid
from pau.errors import InvalidRowError, OptionError, PauError, SchemaError
from pau.engine._lifecycle import NULL, Attribution

__all__ = [
    "PEAK_FLOPS", "PeakFlops", "peak_flops", "ModelFlops", "model_flops", "ProgramGoodput", "program_goodput",
    "MPG", "mpg", "ETTR", "ettr", "StragglerScores", "straggler_scores", "Recovery", "recovery",
    "Protection", "protection", "Schedule", "schedule_times",
]

_NS_PER_S = 10**9
Number = Union[int, float, Fraction]


def _frac(a: int | Fraction, b: int | Fraction) -> Fraction | None:
    return Fraction(a) / Fraction(b) if b else None


def _f(x: Any) -> Any:
    """JSON-able: Fractions to floats, recursively."""
    if isinstance(x, Fraction):
        return float(x)
    if isinstance(x, dict):
        return {k: _f(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_f(v) for v in x]
    return x


def _count(value: Any, what: str, *, positive: bool = False) -> int:
    """A non-negative (or positive) Python int; anything else raises naming the argument."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise PauError(f"{what} = {value!r} is not an integer. Fix: give {what} as an integer")
    v = int(value)
    if v < 0 or (positive and v == 0):
        raise PauError(f"{what} = {v} is {'negative' if v < 0 else 'zero'}. Fix: give {what} as a "
                       f"{'positive' if positive else 'non-negative'} integer")
    return v


def _positive(value: Any, what: str) -> Fraction:
    """A positive finite number as an exact Fraction (a float is taken at its exact value)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, Fraction, np.integer, np.floating)):
        raise PauError(f"{what} = {value!r} is not a number. Fix: give {what} as a positive number")
    if isinstance(value, (float, np.floating)) and not np.isfinite(value):
        raise PauError(f"{what} = {value!r} is not finite. Fix: give {what} as a positive number")
    v = Fraction(value) if not isinstance(value, (np.integer, np.floating)) else Fraction(value.item())
    if v <= 0:
        raise PauError(f"{what} = {value!r} is not positive. Fix: give {what} as a positive number")
    return v


def _intervals(led: Ledger, what: str) -> pa.Table:
    iv = led.intervals
    if iv is None:
        raise PauError(f"{what}: the ledger has no lifecycle. Fix: build it with a lifecycle table")
    return iv


def _att(led: Ledger, what: str) -> Attribution:
    att = led._att  # the attribution behind the ledger's figures (one path for them all)
    if att is None:
        raise PauError(f"{what}: the ledger has no lifecycle. Fix: build it with a lifecycle table "
                       "(pau.core.ledger(events, lifecycle))")
    return att


# ---------------------------------------------------------------------------
# peak FLOP/s per accelerator and data type


@dataclass(frozen=True)
class PeakFlops:
    """Peak dense FLOP/s of one accelerator for one data type, and where it comes from."""

    accelerator: str
    dtype: str
    flops: Fraction
    source: str

    def summary(self) -> dict:
        return {"accelerator": self.accelerator, "dtype": self.dtype, "flops": float(self.flops),
                "source": self.source}


_H100 = ("NVIDIA H100 Tensor Core GPU datasheet, {col} column; its tensor-core figures are with "
         "sparsity ('1/2 lower without sparsity'): dense is half")
_A100 = "NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf), dense figures"
_V100 = "NVIDIA Tesla V100 GPU Accelerator datasheet, {col} column (Tensor Performance: mixed FP16/FP32)"
_L4 = "NVIDIA L4 Tensor Core GPU datasheet; its tensor-core figures are with sparsity: dense is half"
_T4 = "NVIDIA T4 Tensor Core GPU datasheet (Mixed Precision FP16/FP32, INT8, Single Precision)"
_MI300X = "AMD Instinct MI300X accelerator data sheet (amd.com), peak dense (without sparsity)"
_MI355X = ("AMD Instinct MI355X GPU data sheet (amd.com), peak dense: published rounded (2.5 PF FP16/BF16, "
           "5 PF FP8, 10 PF MXFP4); the value is what it rounds: the 2.4 GHz peak engine clock x 1,024 matrix "
           "cores x FLOP per clock (1,024 for BF16)")
_TPU = "Cloud TPU {v} documentation (cloud.google.com/tpu/docs/{v}), system architecture: peak compute per chip"

_ROWS = [
    ("h100-sxm", "fp64", "67", _H100.format(col="H100 SXM")), ("h100-sxm", "fp32", "67", _H100.format(col="H100 SXM")),
    ("h100-sxm", "tf32", "494.5", _H100.format(col="H100 SXM")),
    ("h100-sxm", "bf16", "989.5", _H100.format(col="H100 SXM")),
    ("h100-sxm", "fp16", "989.5", _H100.format(col="H100 SXM")),
    ("h100-sxm", "fp8", "1979", _H100.format(col="H100 SXM")), ("h100-sxm", "int8", "1979", _H100.format(col="H100 SXM")),
    ("h100-pcie", "fp64", "51", _H100.format(col="H100 PCIe")), ("h100-pcie", "fp32", "51", _H100.format(col="H100 PCIe")),
    ("h100-pcie", "tf32", "378", _H100.format(col="H100 PCIe")),
    ("h100-pcie", "bf16", "756.5", _H100.format(col="H100 PCIe")),
    ("h100-pcie", "fp16", "756.5", _H100.format(col="H100 PCIe")),
    ("h100-pcie", "fp8", "1513", _H100.format(col="H100 PCIe")),
    ("h100-pcie", "int8", "1513", _H100.format(col="H100 PCIe")),
    *[(a, d, v, _A100) for a in ("a100-sxm", "a100-pcie")
      for d, v in (("fp64", "19.5"), ("fp32", "19.5"), ("tf32", "156"), ("bf16", "312"), ("fp16", "312"),
                   ("int8", "624"))],
    ("v100-sxm2", "fp64", "7.8", _V100.format(col="V100 SXM2")), ("v100-sxm2", "fp32", "15.7", _V100.format(col="V100 SXM2")),
    ("v100-sxm2", "fp16", "125", _V100.format(col="V100 SXM2")),
    ("v100-pcie", "fp64", "7", _V100.format(col="V100 PCIe")), ("v100-pcie", "fp32", "14", _V100.format(col="V100 PCIe")),
    ("v100-pcie", "fp16", "112", _V100.format(col="V100 PCIe")),
    ("l4", "fp32", "30.3", _L4), ("l4", "tf32", "60", _L4), ("l4", "bf16", "121", _L4), ("l4", "fp16", "121", _L4),
    ("l4", "fp8", "242.5", _L4), ("l4", "int8", "242.5", _L4),
    ("t4", "fp32", "8.1", _T4), ("t4", "fp16", "65", _T4), ("t4", "int8", "130", _T4),
    ("mi300x", "fp64", "163.4", _MI300X), ("mi300x", "fp32", "163.4", _MI300X), ("mi300x", "tf32", "653.7", _MI300X),
    ("mi300x", "bf16", "1307.4", _MI300X), ("mi300x", "fp16", "1307.4", _MI300X),
    ("mi300x", "fp8", "2614.9", _MI300X), ("mi300x", "int8", "2614.9", _MI300X),
    ("mi355x", "fp64", "78.6", _MI355X), ("mi355x", "bf16", "2516.6", _MI355X), ("mi355x", "fp16", "2516.6", _MI355X),
    ("mi355x", "fp8", "5033.2", _MI355X), ("mi355x", "mxfp4", "10066.4", _MI355X),
    ("tpu-v4", "bf16", "275", _TPU.format(v="v4")), ("tpu-v4", "int8", "275", _TPU.format(v="v4")),
    ("tpu-v5e", "bf16", "197", _TPU.format(v="v5e")), ("tpu-v5e", "int8", "393", _TPU.format(v="v5e")),
    ("tpu-v5p", "bf16", "459", _TPU.format(v="v5p")),
    ("tpu-v6e", "bf16", "918", _TPU.format(v="v6e")), ("tpu-v6e", "int8", "1836", _TPU.format(v="v6e")),
]

#: Peak dense FLOP/s (TOP/s for int8) per accelerator, keyed ``(accelerator, dtype)``,
#: each with its source document (``docs/outcome.md`` lists them). Read-only: callers
#: override a value with ``peak=`` or extend the table with ``peaks=``.
PEAK_FLOPS: Mapping[tuple[str, str], PeakFlops] = MappingProxyType({
    (a, d): PeakFlops(a, d, Fraction(v) * 10**12, s) for a, d, v, s in _ROWS})

_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32",
           "float64": "fp64", "double": "fp64", "tensorfloat32": "tf32", "float8": "fp8", "e4m3": "fp8",
           "fp8_e4m3": "fp8", "e5m2": "fp8", "fp8_e5m2": "fp8", "fp4": "mxfp4"}


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(" ", "-")


def peak_flops(accelerator: str, dtype: str, *, peaks: Mapping[tuple[str, str], Any] | None = None) -> PeakFlops:
    """The peak dense FLOP/s of ``accelerator`` for ``dtype``.

    Parameters
    ----------
    accelerator : str
        A name of :data:`PEAK_FLOPS` (``"h100-sxm"``, ``"a100-sxm"``, ``"mi300x"``,
        ``"tpu-v5p"``...; case and ``_``/``-`` do not matter).
    dtype : str
        ``"bf16"``, ``"fp16"``, ``"tf32"``, ``"fp32"``, ``"fp64"``, ``"fp8"``, ``"int8"``,
        ``"mxfp4"`` (``"bfloat16"``, ``"float16"``... are the same).
    peaks : mapping, optional
        ``{(accelerator, dtype): FLOP/s or PeakFlops}`` looked up before the table
        (a value you measured, or an accelerator the table lacks).

    Returns
    -------
    PeakFlops
    """
    acc = _norm(accelerator)
    dt = _DTYPES.get(dtype.strip().lower(), dtype.strip().lower())
    for (a, d), v in (peaks or {}).items():
        if _norm(a) == acc and _DTYPES.get(d.strip().lower(), d.strip().lower()) == dt:
            if isinstance(v, PeakFlops):
                return v
            return PeakFlops(acc, dt, _positive(v, f"peaks[{a!r}, {d!r}]"), "given by the caller (peaks=)")
    hit = PEAK_FLOPS.get((acc, dt))
    if hit is not None:
        return hit
    known = sorted({a for a, _ in PEAK_FLOPS})
    if acc not in known:
        raise OptionError(f"peak_flops: accelerator {accelerator!r} is not in PEAK_FLOPS (known: {', '.join(known)}). "
                          "Fix: give one of those, or its peak with peak= or peaks={(accelerator, dtype): FLOP/s}")
    dts = sorted(d for a, d in PEAK_FLOPS if a == acc)
    raise OptionError(f"peak_flops: {acc} has no {dtype!r} peak in PEAK_FLOPS (known: {', '.join(dts)}). "
                      "Fix: give one of those, or the value with peak= or peaks=")


def _peak(peak: Any, accelerator: str | None, dtype: str | None, peaks, what: str) -> PeakFlops:
    if peak is not None:
        if accelerator is not None or peaks is not None:
            raise OptionError(f"{what}: peak= gives the value itself; accelerator=/peaks= would look another one up. "
                              "Fix: give peak= alone, or accelerator= and dtype=")
        if isinstance(peak, PeakFlops):
            return peak
        return PeakFlops("given", dtype or "given", _positive(peak, "peak"), "given by the caller (peak=)")
    if accelerator is None or dtype is None:
        raise OptionError(f"{what}: the peak FLOP/s is unknown. Fix: give accelerator= and dtype= (a row of "
                          "pau.figures.outcome.PEAK_FLOPS), or peak= (FLOP/s per accelerator)")
    return peak_flops(accelerator, dtype, peaks=peaks)


# ---------------------------------------------------------------------------
# model FLOPs (PaLM appendix B)


@dataclass(frozen=True)
class ModelFlops:
    """Model and hardware FLOPs per token and per step (:func:`model_flops`).

    ``hardware_*`` is None when the recomputation is not known (HFU then is too).
    """

    per_token: Optional[int]
    hardware_per_token: Optional[int]
    tokens_per_step: Optional[int]
    per_step: Optional[int]
    hardware_per_step: Optional[int]
    recompute: Optional[str]

    def summary(self) -> dict:
        return dict(self.__dict__)


RECOMPUTE = ("none", "selective", "full")


def model_flops(*, params: int | None = None, layers: int | None = None, heads: int | None = None,
                head_dim: int | None = None, seq_len: int | None = None, tokens_per_step: int | None = None,
                per_step: int | None = None, hardware_per_step: int | None = None,
                recompute: str | None = None) -> ModelFlops:
    """Model FLOPs of a dense decoder-only Transformer, by PaLM's appendix B, or as given.

    Either a model description (``params, layers, heads, head_dim, seq_len``) or
    ``per_step`` (model FLOPs of one optimizer step, all accelerators together).

    Parameters
    ----------
    params : int
        ``N``: the parameters the matmuls use per token (every weight but the
        embedding lookup tables; an output projection tied to the token embedding
        counted once). See ``docs/outcome.md``.
    layers, heads, head_dim, seq_len : int
        ``L``, ``H``, ``Q``, ``T`` of the formula.
    tokens_per_step : int, optional
        Tokens per optimizer step (global batch x sequence length); gives the per-step
        figures.
    per_step, hardware_per_step : int, optional
        FLOPs of one step, given instead of a description.
    recompute : {"none", "selective", "full"}, optional
        Activation recomputation, for hardware FLOPs. None: not known (no HFU).

    Returns
    -------
    ModelFlops

    Notes
    -----
    Model FLOPs per token ``6N + 12·L·H·Q·T`` (Chowdhery et al. 2022, PaLM, appendix
    B): the forward pass is a third of it (``2N + 4LHQT``), the backward two thirds.
    Hardware FLOPs add what recomputation runs again (Korthikanti et al. 2022,
    "Reducing Activation Recomputation in Large Transformer Models"): ``full``
    one more forward pass, ``8N + 16LHQT``; ``selective`` (the attention core,
    ``QKᵀ`` and attention over ``V``) its ``4LHQT``, ``6N + 16LHQT``; ``none`` the
    model FLOPs.
    """
    if recompute is not None and recompute not in RECOMPUTE:
        raise OptionError(f"model_flops: recompute = {recompute!r}. Fix: give one of {', '.join(RECOMPUTE)}, "
                          "or None when it is not known")
    desc = {"params": params, "layers": layers, "heads": heads, "head_dim": head_dim, "seq_len": seq_len}
    given = [k for k, v in desc.items() if v is not None]
    if per_step is not None:
        if given or tokens_per_step is not None:
            raise OptionError(f"model_flops: per_step= and a model description ({', '.join(given) or 'tokens_per_step'}) "
                              "give the FLOPs twice. Fix: give one of them")
        ps = _count(per_step, "per_step")
        if hardware_per_step is not None:
            hw: int | None = _count(hardware_per_step, "hardware_per_step")
            if hw is not None and hw < ps:
                raise PauError(f"model_flops: hardware_per_step = {hw} is below per_step = {ps}. Fix: hardware FLOPs "
                               "count the model's and what recomputation adds: give hardware_per_step >= per_step")
        elif recompute == "none":
            hw = ps
        elif recompute is not None:
            raise OptionError(f"model_flops: recompute = {recompute!r} needs the model description to count what it "
                              "adds. Fix: give hardware_per_step=, or the description instead of per_step=")
        else:
            hw = None
        return ModelFlops(None, None, None, ps, hw, recompute)
    if hardware_per_step is not None:
        raise OptionError("model_flops: hardware_per_step= goes with per_step=. Fix: with a model description, "
                          "give recompute= instead")
    missing = [k for k, v in desc.items() if v is None]
    if missing:
        raise OptionError(f"model_flops: the model description lacks {', '.join(missing)}. Fix: give params, layers, "
                          "heads, head_dim and seq_len, or per_step=")
    n = _count(params, "params")
    L, H, Q, T = (_count(desc[k], k, positive=True) for k in ("layers", "heads", "head_dim", "seq_len"))
    attn = L * H * Q * T
    per_token = 6 * n + 12 * attn
    hw_token = {None: None, "none": per_token, "selective": 6 * n + 16 * attn, "full": 8 * n + 16 * attn}[recompute]
    tps = None if tokens_per_step is None else _count(tokens_per_step, "tokens_per_step", positive=True)
    return ModelFlops(per_token, hw_token, tps, None if tps is None else per_token * tps,
                      None if tps is None or hw_token is None else hw_token * tps, recompute)


# ---------------------------------------------------------------------------
# program goodput: MFU, HFU


@dataclass
class ProgramGoodput:
    """What :func:`program_goodput` returns.

    Attributes
    ----------
    peak : PeakFlops
    basis : str
        ``"steps"`` (preserved steps x FLOPs per step) or ``"tokens"`` (preserved
        tokens x FLOPs per token).
    units : int
        Preserved steps or tokens.
    model_flops, hardware_flops : int
        FLOPs of the preserved work (hardware: None when the recomputation is unknown).
    productive_ns, accountable_ns : int
        The ledger's cells (accelerator-ns).
    mfu, hfu : Fraction
        Over productive time: ``FLOPs / (peak x productive seconds)``.
    program_goodput : Fraction
        Model FLOPs of the preserved work over the peak FLOPs of all accountable time:
        ``mfu x productive / accountable`` (``mfu x`` pau's goodput).
    warnings : list of RunWarning
    """

    peak: PeakFlops
    basis: str
    units: int
    model_flops: int
    hardware_flops: Optional[int]
    productive_ns: int
    accountable_ns: int
    mfu: Optional[Fraction]
    hfu: Optional[Fraction]
    program_goodput: Optional[Fraction]
    warnings: list = field(default_factory=list)

    def summary(self) -> dict:
        return _f({"peak": self.peak.summary(), "basis": self.basis, "units": self.units,
                   "model_flops": self.model_flops, "hardware_flops": self.hardware_flops,
                   "productive_ns": self.productive_ns, "accountable_ns": self.accountable_ns,
                   "mfu": self.mfu, "hfu": self.hfu, "program_goodput": self.program_goodput,
                   "warnings": [str(w) for w in self.warnings]})


def program_goodput(ledger: Ledger, flops: ModelFlops | int, *, accelerator: str | None = None,
                    dtype: str | None = None, peak: Any = None,
                    peaks: Mapping[tuple[str, str], Any] | None = None) -> ProgramGoodput:
    """MFU and HFU over productive time, and program goodput over accountable time.

    Parameters
    ----------
    ledger : Ledger
        A ledger with a lifecycle. Every rank is taken to be one accelerator of the
        given type.
    flops : ModelFlops or int
        :func:`model_flops`, or model FLOPs per step.
    accelerator, dtype : str, optional
        The row of :data:`PEAK_FLOPS` (see :func:`peak_flops`).
    peak : number or PeakFlops, optional
        Peak FLOP/s per accelerator, instead of the table.
    peaks : mapping, optional
        Extra or overriding rows for the lookup (see :func:`peak_flops`).

    Returns
    -------
    ProgramGoodput

    Notes
    -----
    ``MFU = F_model / (P x t_productive)``, ``HFU = F_hardware / (P x t_productive)``
    (PaLM, appendix B), where ``F`` counts the preserved work (the ledger's
    ``preserved_steps`` times FLOPs per step; or ``preserved_tokens`` times FLOPs
    per token when only those are known), ``P`` is the peak FLOP/s of one accelerator
    and ``t_productive`` the ledger's productive accelerator-seconds. Program goodput
    over accountable time is ``F_model / (P x t_accountable) = MFU x goodput``.
    """
    pk = _peak(peak, accelerator, dtype, peaks, "program_goodput")
    if isinstance(flops, ModelFlops):
        mf = flops
    else:
        mf = ModelFlops(None, None, None, _count(flops, "flops (model FLOPs per step)"), None, None)
    s = ledger.summary()
    if s["goodput"] is None and s["preserved_steps"] is None:
        raise PauError("program_goodput: the ledger has no lifecycle, so no preserved work. Fix: build it with a "
                       "lifecycle table")
    steps, tokens = s["preserved_steps"] or 0, s["preserved_tokens"] or 0
    if mf.per_step is not None:
        basis, units, model = "steps", steps, steps * mf.per_step
        hw = None if mf.hardware_per_step is None else steps * mf.hardware_per_step
    elif mf.per_token is not None and tokens:
        basis, units, model = "tokens", tokens, tokens * mf.per_token
        hw = None if mf.hardware_per_token is None else tokens * mf.hardware_per_token
    else:
        raise PauError("program_goodput: FLOPs per token need preserved tokens, and the ledger has none. Fix: give "
                       "model_flops(..., tokens_per_step=) so the preserved steps count, or step rows with tokens")
    prod, acc = s["productive_ns"], s["accountable_ns"]
    denom = pk.flops * prod / _NS_PER_S
    mfu = _frac(model, denom) if prod else None
    hfu = _frac(hw, denom) if (prod and hw is not None) else None
    pg = mfu * Fraction(prod, acc) if (mfu is not None and acc) else None
    warns = []
    for name, v in (("mfu", mfu), ("hfu", hfu)):
        if v is not None and v > 1:
            warns.append(RunWarning(f"outcome.{name}_above_one",
                                    f"{name} = {float(v):.4g} exceeds 1: the FLOPs per step, the peak or the "
                                    "accelerator type overstates the work or understates the hardware"))
    return ProgramGoodput(pk, basis, units, model, hw, prod, acc, mfu, hfu, pg, warns)


# ---------------------------------------------------------------------------
# schedules: the time a job wanted its accelerators and had them


@dataclass
class Schedule:
    """The queue and allocation records of a job (:func:`schedule_times`).

    ``queued_ns``: accelerator-ns the job waited for its allocations (from
    ``eligible_ns``, else ``submit_ns``, to ``start_ns``); ``allocated_ns``:
    accelerator-ns it held them (``start_ns`` to ``end_ns``); both cut at ``as_of``.
    ``rows`` counts the records used, ``after_as_of`` those that became ready only
    after ``as_of`` (not counted, as the ledger ignores records after it).
    """

    queued_ns: int
    allocated_ns: int
    rows: int
    after_as_of: int
    as_of: int


def schedule_times(schedule: Any, *, as_of: int) -> Schedule:
    """Queued and allocated accelerator-ns of a schedule, as of ``as_of``.

    Parameters
    ----------
    schedule : table-like
        One row per allocation: ``submit_ns`` and/or ``eligible_ns`` (when the job
        could start), ``start_ns`` (null: still waiting), ``end_ns`` (null: still
        running), ``accelerators``. :func:`pau.readers.slurm.read_sacct` gives it.
    as_of : int
        Waits and allocations still open are cut here; records ready only after it
        are not counted.

    Returns
    -------
    Schedule
    """
    name = "schedule"
    t = as_table(schedule, name)
    fix_cols = ("run sacct with --format=JobID,Submit,Eligible,Start,End,AllocTRES "
                "(pau.readers.slurm.SACCT_FORMAT), or give submit_ns, start_ns, end_ns and accelerators")
    names = set(t.schema.names)
    for c in ("start_ns", "end_ns", "accelerators"):
        if c not in names:
            raise SchemaError(name, c, f"is missing (columns present: {', '.join(t.schema.names) or 'none'})", fix_cols)
    if "eligible_ns" not in names and "submit_ns" not in names:
        raise SchemaError(name, "submit_ns", "is missing, and so is eligible_ns: the wait cannot be known", fix_cols)
    n = t.num_rows
    start, s_null = time_values(t, "start_ns", name)
    end, e_null = time_values(t, "end_ns", name)
    acc, a_null = int_values(t, "accelerators", name)
    ready = np.zeros(n, np.int64)
    r_null = np.ones(n, bool)
    for c in ("eligible_ns", "submit_ns"):  # eligible wins where both are known
        if c in names:
            v, nl = time_values(t, c, name)
            take = r_null & ~nl
            ready[take], r_null[take] = v[take], False
    checks = [
        (r_null, "eligible_ns" if "eligible_ns" in names else "submit_ns", "is null: when the job could start is unknown",
         "give submit_ns (or eligible_ns) on every row"),
        (a_null, "accelerators", "is null", "give the allocation's accelerator count (sacct's AllocTRES gres/gpu)"),
        (~a_null & (acc <= 0), "accelerators", "is not positive", "give the allocation's accelerator count"),
        (~s_null & ~r_null & (start < ready), "start_ns", "is before the job could start (submit/eligible)",
         "correct the times"),
        (~s_null & ~e_null & (end < start), "end_ns", "is before start_ns", "correct the times"),
        (s_null & ~e_null, "start_ns", "is null while end_ns is not", "give the allocation's start"),
    ]
    for mask, col, why, fix in checks:
        if mask.any():
            raise InvalidRowError(name, col, int(np.flatnonzero(mask)[0]), why, fix, int(mask.sum()))
    use = ready < as_of
    q = np.where(s_null, as_of, np.minimum(start, as_of)) - ready
    h = np.where(s_null | (start >= as_of), 0, np.where(e_null, as_of, np.minimum(end, as_of)) - start)
    queued = sum(int(x) * int(a) for x, a in zip(q[use], acc[use]))
    alloc = sum(int(x) * int(a) for x, a in zip(h[use], acc[use]))
    return Schedule(queued, alloc, int(use.sum()), int((~use).sum()), as_of)


def _sched_for(ledger: Ledger, schedule: Any, as_of: int | None, what: str) -> tuple[Schedule, list]:
    s = ledger.summary()
    led_as_of = s["as_of"]
    if as_of is not None and led_as_of is not None and as_of != led_as_of:
        raise OptionError(f"{what}: as_of = {as_of} is not the ledger's as_of ({led_as_of}). Fix: leave as_of out "
                          "(the ledger's is used), or build the ledger with the same as_of")
    at = as_of if as_of is not None else led_as_of
    if at is None:
        raise OptionError(f"{what}: the schedule needs an as_of and the ledger has none. Fix: give as_of=")
    sc = schedule_times(schedule, as_of=at)
    warns = []
    if sc.allocated_ns != s["accountable_ns"]:
        warns.append(RunWarning("outcome.schedule_mismatch",
                                f"the schedule allocated {sc.allocated_ns} accelerator-ns and the ledger accounts "
                                f"{s['accountable_ns']}: the wait comes from the schedule, what the job had from the "
                                "ledger"))
    return sc, warns


# ---------------------------------------------------------------------------
# ML Productivity Goodput and ETTR


@dataclass
class MPG:
    """What :func:`mpg` returns: Google's ML Productivity Goodput and its factors.

    ``scheduling = A / (A + Q)``, ``runtime = P / A`` (pau's goodput), ``program``
    = MFU over productive time, ``mpg`` their product (None when a factor is), with
    ``A`` the ledger's accountable, ``P`` its productive accelerator-ns and ``Q`` the
    schedule's queued accelerator-ns.
    """

    scheduling: Optional[Fraction]
    runtime: Optional[Fraction]
    program: Optional[Fraction]
    mpg: Optional[Fraction]
    queued_ns: Optional[int]
    accountable_ns: int
    productive_ns: int
    schedule: Optional[Schedule]
    program_goodput: Optional[ProgramGoodput]
    warnings: list = field(default_factory=list)

    def summary(self) -> dict:
        return _f({"scheduling_goodput": self.scheduling, "runtime_goodput": self.runtime,
                   "program_goodput": self.program, "mpg": self.mpg, "queued_ns": self.queued_ns,
                   "accountable_ns": self.accountable_ns, "productive_ns": self.productive_ns,
                   "schedule_allocated_ns": None if self.schedule is None else self.schedule.allocated_ns,
                   "program": None if self.program_goodput is None else self.program_goodput.summary(),
                   "warnings": [str(w) for w in self.warnings]})


def mpg(ledger: Ledger, schedule: Any = None, *, flops: ModelFlops | int | None = None,
        accelerator: str | None = None, dtype: str | None = None, peak: Any = None,
        peaks: Mapping[tuple[str, str], Any] | None = None, as_of: int | None = None) -> MPG:
    """ML Productivity Goodput = scheduling goodput x runtime goodput x program goodput.

    Parameters
    ----------
    ledger : Ledger
        With a lifecycle.
    schedule : table-like, optional
        The job's allocations (see :func:`schedule_times`); without it the scheduling
        factor (and the product) is None.
    flops, accelerator, dtype, peak, peaks : optional
        As for :func:`program_goodput`; without ``flops`` the program factor (and
        the product) is None.
    as_of : int, optional
        Defaults to the ledger's; another value is an error.

    Returns
    -------
    MPG
    """
    s = ledger.summary()
    if s["goodput"] is None and s["preserved_steps"] is None:
        raise PauError("mpg: the ledger has no lifecycle. Fix: build it with a lifecycle table")
    acc, prod = s["accountable_ns"], s["productive_ns"]
    warns: list = []
    sc = None
    scheduling = None
    if schedule is not None:
        sc, w = _sched_for(ledger, schedule, as_of, "mpg")
        warns += w
        scheduling = _frac(acc, acc + sc.queued_ns)
    runtime = _frac(prod, acc)
    pg = None
    if flops is not None:
        pg = program_goodput(ledger, flops, accelerator=accelerator, dtype=dtype, peak=peak, peaks=peaks)
        warns += pg.warnings
    elif any(v is not None for v in (accelerator, dtype, peak, peaks)):
        raise OptionError("mpg: accelerator=/dtype=/peak=/peaks= apply to the program factor, which needs flops=. "
                          "Fix: give flops= too, or leave them out")
    program = None if pg is None else pg.mfu
    product = None if None in (scheduling, runtime, program) else scheduling * runtime * program  # type: ignore[operator]
    return MPG(scheduling, runtime, program, product, None if sc is None else sc.queued_ns, acc, prod, sc, pg, warns)


@dataclass
class ETTR:
    """What :func:`ettr` returns: ``ettr = productive / (accountable + queued)``."""

    ettr: Optional[Fraction]
    productive_ns: int
    pending_ns: int
    accountable_ns: int
    queued_ns: int
    available_ns: int
    warnings: list = field(default_factory=list)

    def summary(self) -> dict:
        return _f({"ettr": self.ettr, "productive_ns": self.productive_ns, "pending_ns": self.pending_ns,
                   "accountable_ns": self.accountable_ns, "queued_ns": self.queued_ns,
                   "available_ns": self.available_ns, "warnings": [str(w) for w in self.warnings]})


def ettr(ledger: Ledger, schedule: Any = None, *, queued_ns: int | None = None, as_of: int | None = None) -> ETTR:
    """Meta's Effective Training Time Ratio of a job run.

    Parameters
    ----------
    ledger : Ledger
        With a lifecycle.
    schedule : table-like, optional
        The run's allocations (see :func:`schedule_times`): the queue time.
    queued_ns : int, optional
        The queued accelerator-ns instead of a schedule (0 for a run that never waited).
    as_of : int, optional
        Defaults to the ledger's; another value is an error.

    Returns
    -------
    ETTR

    Notes
    -----
    ``ETTR = productive runtime / available wallclock time`` (Kokolis et al. 2024,
    "Revisiting Reliability in Large-Scale Machine Learning Research Clusters",
    arXiv 2410.21680): the available time runs from when the job could first be scheduled, queue
    included; productive runtime leaves out initialization, restarts, checkpointing
    and the work re-done after a failure. In the ledger's cells: ``P / (A + Q)``
    (accelerator-ns, so a job whose allocation changes size is weighted by its
    accelerators). ``pending`` work is not counted productive (reported beside it).
    """
    s = ledger.summary()
    if s["goodput"] is None and s["preserved_steps"] is None:
        raise PauError("ettr: the ledger has no lifecycle. Fix: build it with a lifecycle table")
    warns: list = []
    if schedule is not None and queued_ns is not None:
        raise OptionError("ettr: schedule= and queued_ns= both give the queue time. Fix: give one")
    if schedule is not None:
        sc, warns = _sched_for(ledger, schedule, as_of, "ettr")
        q = sc.queued_ns
    elif queued_ns is not None:
        q = _count(queued_ns, "queued_ns")
    else:
        raise OptionError("ettr: the queue time is unknown. Fix: give schedule= (sacct Submit/Start/End, "
                          "pau.readers.slurm.read_sacct) or queued_ns= (0 for a run that never waited)")
    acc, prod = s["accountable_ns"], s["productive_ns"]
    return ETTR(_frac(prod, acc + q), prod, s["pending_ns"], acc, q, acc + q, warns)


# ---------------------------------------------------------------------------
# NVRx-style straggler scores


@dataclass
class StragglerScores:
    """What :func:`straggler_scores` returns.

    Attributes
    ----------
    table : pyarrow.Table
        One row per (window, rank): ``[attempt,] window, rank, steps, median_ns,
        relative, individual`` (scores float64, null where the median is 0).
    in_flight : int
        Step rows without an end, left out.
    quarantine : pyarrow.Table or None
    """

    table: pa.Table
    in_flight: int = 0
    quarantine: pa.Table | None = None

    def summary(self, threshold: float = 0.75) -> dict:
        """Per rank the lowest scores, and the ranks below ``threshold`` (NVRx's
        default 0.75) on either score in any window."""
        rows = self.table.to_pylist()
        ranks: dict[int, dict] = {}
        for r in rows:
            d = ranks.setdefault(r["rank"], {"rank": r["rank"], "min_relative": None, "min_individual": None})
            for k, c in (("min_relative", "relative"), ("min_individual", "individual")):
                if r[c] is not None and (d[k] is None or r[c] < d[k]):
                    d[k] = r[c]
        below = sorted(k for k, d in ranks.items() if any(v is not None and v < threshold
                                                            for v in (d["min_relative"], d["min_individual"])))
        return {"windows": len({(r.get("attempt"), r["window"]) for r in rows}), "ranks": len(ranks),
                "in_flight": self.in_flight, "threshold": threshold, "stragglers": below,
                "per_rank": [ranks[k] for k in sorted(ranks)],
                "quarantined": 0 if self.quarantine is None else self.quarantine.num_rows}


_SCORE_REASONS = ("ok", "null rank", "rank -1 (all ranks)", "null step", "null start_ns", "end_ns before start_ns",
                  "duplicate (attempt, step, rank)")
_SCORE_FIX = ("", "give every step record its rank", "give one step record per rank: scores need each rank's own time",
              "give every step record its step number", "give every step record its start",
              "correct the times", "give one row per (attempt, step, rank)")
_SCORE_COL = ("", "rank", "rank", "step", "start_ns", "end_ns", "rank")


def _lower_median(sorted_vals: np.ndarray) -> int:
    """The lower of the two middle values (torch.median's rule, which NVRx uses): an
    element, so exact ns."""
    return int(sorted_vals[(sorted_vals.size - 1) // 2])


def straggler_scores(steps: Any, *, every_steps: int | None = None, every_ns: int | None = None,
                     on_invalid: str = "raise") -> StragglerScores | Quarantined:
    """NVRx-style performance scores per rank and report window, in [0, 1].

    Parameters
    ----------
    steps : table-like
        A lifecycle table (its ``step`` records) or ``rank, step, start_ns, end_ns``
        (optional ``attempt``).
    every_steps : int, optional
        A report window holds the steps ``k`` with the same ``k // every_steps`` (per
        attempt): windows aligned to multiples of the width.
    every_ns : int, optional
        A report window holds the steps that start in the same ``[j·w, (j+1)·w)``.
        Neither: one window per attempt.
    on_invalid : {"raise", "quarantine"}
        Null rank, step or start, ``rank = -1``, ``end_ns < start_ns`` and duplicate
        ``(attempt, step, rank)`` rows (all but the first).

    Returns
    -------
    StragglerScores or pau.core.Quarantined

    Notes
    -----
    As NVIDIA's nvidia-resiliency-ext straggler detection scores a section
    (``ReportGenerator._compute_sections_perf_scores``): per window, the median step
    time ``m(r, w)`` of each rank (the lower middle value, as ``torch.median``);
    **relative** score ``min over ranks m(·, w) / m(r, w)`` (against the fastest rank
    of the window), **individual** score ``min over windows w' <= w m(r, w') /
    m(r, w)`` (against the rank's own best so far, the current window included).
    Both are in [0, 1]; 1 is the reference itself. Windows are taken in order of
    ``(attempt, window)``.
    """
    check_on_invalid(on_invalid)
    if every_steps is not None and every_ns is not None:
        raise OptionError("straggler_scores: every_steps= and every_ns= both set the windows. Fix: give one")
    width_s = None if every_steps is None else _count(every_steps, "every_steps", positive=True)
    width_t = None if every_ns is None else _count(every_ns, "every_ns", positive=True)
    t = step_rows(steps)
    n = t.num_rows
    rank, rank_null = int_values(t, "rank", "steps")
    step, step_null = int_values(t, "step", "steps")
    has_att = "attempt" in t.schema.names
    attempt = int_values(t, "attempt", "steps")[0] if has_att else np.zeros(n, np.int64)
    start, start_null = time_values(t, "start_ns", "steps")
    end, end_null = time_values(t, "end_ns", "steps")
    reasons = np.zeros(n, np.int8)

    def mark(mask, c):
        reasons[(reasons == 0) & mask] = c

    mark(rank_null, 1)
    mark(~rank_null & (rank == -1), 2)
    mark(step_null, 3)
    mark(start_null, 4)
    mark(~end_null & ~start_null & (end < start), 5)
    order = np.lexsort((rank, step, attempt))
    cand = order[reasons[order] == 0]
    if cand.size > 1:
        same = ((attempt[cand][1:] == attempt[cand][:-1]) & (step[cand][1:] == step[cand][:-1])
                & (rank[cand][1:] == rank[cand][:-1]))
        dup = np.zeros(n, bool)
        dup[cand[1:][same]] = True
        mark(dup, 6)
    bad = reasons != 0
    quarantine = None
    if bad.any():
        rows = np.flatnonzero(bad)
        if on_invalid == "raise":
            i = int(rows[0])
            r = int(reasons[i])
            raise InvalidRowError("steps", _SCORE_COL[r], i, _SCORE_REASONS[r], _SCORE_FIX[r], int(rows.size))
        quarantine = t.take(pa.array(rows)).append_column("row", pa.array(rows, pa.int64())).append_column(
            "reason", pa.array([_SCORE_REASONS[int(x)] for x in reasons[rows]], pa.string()))
    keep = ~bad & ~end_null
    in_flight = int((~bad & end_null).sum())
    a, k, r, s0, dur = attempt[keep], step[keep], rank[keep], start[keep], end[keep] - start[keep]
    if width_s is not None:
        win = (k // width_s) * width_s
    elif width_t is not None:
        win = (s0 // width_t) * width_t
    else:
        win = np.zeros(a.size, np.int64)
    o = np.lexsort((dur, r, win, a))
    a, win, r, dur = a[o], win[o], r[o], dur[o]
    cut = np.flatnonzero(np.r_[True, (a[1:] != a[:-1]) | (win[1:] != win[:-1]) | (r[1:] != r[:-1]), True]) \
        if a.size else np.zeros(1, np.int64)
    cells = []  # (attempt, window, rank, steps, median)
    for lo, hi in zip(cut[:-1].tolist(), cut[1:].tolist()):
        cells.append((int(a[lo]), int(win[lo]), int(r[lo]), hi - lo, _lower_median(dur[lo:hi])))
    best_in_window: dict[tuple[int, int], int] = {}
    for c in cells:
        key = (c[0], c[1])
        best_in_window[key] = min(best_in_window.get(key, c[4]), c[4])
    best_of_rank: dict[int, int] = {}
    out = []
    for c in cells:  # in (attempt, window, rank) order: each rank's windows in order
        best_of_rank[c[2]] = min(best_of_rank.get(c[2], c[4]), c[4])
        med = c[4]
        rel = best_in_window[(c[0], c[1])] / med if med else None
        ind = best_of_rank[c[2]] / med if med else None
        out.append((*c, rel, ind))
    cols: dict[str, pa.Array] = {}
    if has_att:
        cols["attempt"] = pa.array([x[0] for x in out], pa.int32())
    cols.update(window=pa.array([x[1] for x in out], pa.int64()), rank=pa.array([x[2] for x in out], pa.int32()),
                steps=pa.array([x[3] for x in out], pa.int64()), median_ns=pa.array([x[4] for x in out], pa.int64()),
                relative=pa.array([x[5] for x in out], pa.float64()),
                individual=pa.array([x[6] for x in out], pa.float64()))
    res = StragglerScores(pa.table(cols), in_flight, quarantine)
    if on_invalid == "quarantine":
        return Quarantined(res, quarantine if quarantine is not None else t.slice(0, 0).append_column(
            "row", pa.array([], pa.int64())).append_column("reason", pa.array([], pa.string())))
    return res


# ---------------------------------------------------------------------------
# recovery: failure rate, time to recover, restart loops


@dataclass
class Recovery:
    """What :func:`recovery` returns.

    Attributes
    ----------
    accountable_ns : int
    failures : int
        The ledger's ``failures``.
    failures_per_1000_accelerator_hours : Fraction or None
    by_cause : dict
        ``cause -> {"failures": int, "per_1000_accelerator_hours": Fraction}``.
    per_failure : list of dict
        One per failure, in time order: ``attempt, time_ns, cause, next_attempt,
        first_step_ns, to_first_step_ns, progress_step, recovered_ns,
        to_progress_ns, lost_ns`` (see :func:`recovery`).
    attempts : list of dict
        One per attempt, in start order: ``attempt, start_ns, end_ns, end, running,
        checkpoint_before, checkpoint_after, moved, restart_loop, ns``.
    restart_loops : list of dict
        Runs of consecutive restart-loop attempts: ``first_attempt, last_attempt,
        attempts, ns``.
    badput_ns, wall_ns : int
    waste_equivalent_accelerators : Fraction or None
        ``badput_ns / wall_ns``: the accelerators that, idle for the whole wall time,
        would waste as much.
    """

    accountable_ns: int
    failures: int
    failures_per_1000_accelerator_hours: Optional[Fraction]
    by_cause: dict
    per_failure: list
    attempts: list
    restart_loops: list
    badput_ns: int
    wall_ns: int
    waste_equivalent_accelerators: Optional[Fraction]

    def table(self) -> pa.Table:
        """:attr:`per_failure` as a table."""
        cols = ("attempt", "time_ns", "cause", "next_attempt", "first_step_ns", "to_first_step_ns", "progress_step",
                "recovered_ns", "to_progress_ns", "lost_ns")
        types = (pa.int32(), pa.int64(), pa.string(), pa.int32(), pa.int64(), pa.int64(), pa.int64(), pa.int64(),
                 pa.int64(), pa.int64())
        return pa.table({c: pa.array([f[c] for f in self.per_failure], ty) for c, ty in zip(cols, types)})

    def summary(self) -> dict:
        ttr = [f["to_first_step_ns"] for f in self.per_failure if f["to_first_step_ns"] is not None]
        ttp = [f["to_progress_ns"] for f in self.per_failure if f["to_progress_ns"] is not None]
        return _f({"failures": self.failures, "accountable_ns": self.accountable_ns,
                   "failures_per_1000_accelerator_hours": self.failures_per_1000_accelerator_hours,
                   "by_cause": self.by_cause,
                   "mean_to_first_step_s": Fraction(sum(ttr), len(ttr) * _NS_PER_S) if ttr else None,
                   "mean_to_progress_s": Fraction(sum(ttp), len(ttp) * _NS_PER_S) if ttp else None,
                   "not_recovered": sum(1 for f in self.per_failure if f["to_progress_ns"] is None),
                   "restart_loop_attempts": sum(1 for a in self.attempts if a["restart_loop"]),
                   "restart_loops": self.restart_loops, "badput_ns": self.badput_ns, "wall_ns": self.wall_ns,
                   "waste_equivalent_accelerators": self.waste_equivalent_accelerators})


def _ledger_for(lifecycle: Any, ledger: Ledger | None, as_of: int | None, what: str) -> Ledger:
    if ledger is None:
        return _ledger_of(None, lifecycle, as_of=as_of)
    if not isinstance(ledger, Ledger):
        raise OptionError(f"{what}: ledger= is a {type(ledger).__name__}, not a Ledger. Fix: give pau.core.ledger(...)")
    if as_of is not None and ledger.summary()["as_of"] != as_of:
        raise OptionError(f"{what}: as_of = {as_of} is not the ledger's as_of. Fix: leave as_of out, or build the "
                          "ledger with it")
    return ledger


def _records(t: pa.Table, record: str) -> pa.Table:
    rec = _column(t, "record", "lifecycle")
    if pa.types.is_dictionary(rec.type):
        rec = rec.cast(rec.type.value_type)
    return t.filter(pc.fill_null(pc.equal(rec, record), False))


def _col_or_null(t: pa.Table, name: str, what: str) -> tuple[np.ndarray, np.ndarray]:
    if name not in t.schema.names:
        return np.zeros(t.num_rows, np.int64), np.ones(t.num_rows, bool)
    return (time_values if name.endswith("_ns") else int_values)(t, name, what)


def _failure_rows(att: Attribution) -> list[tuple[int, int, str]]:
    return sorted(((int(a), int(tm), str(k)) for a, tm, k in att.failures_all), key=lambda f: (f[1], f[2], f[0]))


def _by_attempt(intervals: pa.Table, state: str | None) -> dict[int, int]:
    iv = intervals if state is None else intervals.filter(pc.equal(intervals["state"], state))
    iv = iv.filter(pc.is_valid(iv["attempt"]))
    if iv.num_rows == 0:
        return {}
    t = pa.table({"attempt": iv["attempt"].cast(pa.int64()), "ns": pc.subtract(iv["end_ns"], iv["start_ns"])})
    return {int(a): v for (a,), v in exact_sums(t, ["attempt"], "ns").items()}


def recovery(lifecycle: Any, *, ledger: Ledger | None = None, as_of: int | None = None) -> Recovery:
    """Failure rate, time to recover per failure, restart loops and waste as capacity.

    Parameters
    ----------
    lifecycle : table-like
        The lifecycle table (DESIGN §2.2): its step and restore records give when
        progress came back.
    ledger : Ledger, optional
        The ledger of that lifecycle (built when not given).
    as_of : int, optional
        See :func:`pau.core.attribute`; with ``ledger=`` it must be the ledger's.

    Returns
    -------
    Recovery

    Notes
    -----
    * Failure rate: the ledger's failures x 1,000 / accountable accelerator-hours,
      overall and per cause (each failure's kind).
    * Per failure at ``t_f`` ending attempt ``a``: ``to_first_step_ns`` = the start of
      the first step after ``t_f`` (of a later attempt) - ``t_f``.
      ``progress_step`` = the progress ``a`` had made by ``t_f``: its highest step
      completed by then, else the step its restore brought back (None: nothing).
      ``recovered_ns`` = the first instant after ``t_f`` at which a later attempt has
      that progress again: an ok restore of a checkpoint at least as far ends, or a
      step at least as far completes (the re-done work included); with no progress
      to regain, the first step's start. ``to_progress_ns = recovered_ns - t_f``.
      None where it had not happened by ``as_of``. A step is completed when every
      row of it (per rank) has ended, by ``as_of``.
    * ``lost_ns``: the rolled-back accelerator-ns charged to the failure (the ledger's
      ``rolled_back`` time of attempt ``a``; on its first failure when several).
    * An attempt is in a restart loop when it ended (not completed, not running)
      without moving the last durable checkpoint forward: no checkpoint (of any
      attempt) durable by its end holds a later step than the newest durable by its
      start (the ledger's own checkpoints: ok and durable by ``as_of``).
    """
    if isinstance(lifecycle, Ledger):
        raise OptionError("recovery: the first argument is a Ledger; the step and restore records it needs are in the "
                          "lifecycle table. Fix: recovery(lifecycle, ledger=that_ledger)")
    led = _ledger_for(lifecycle, ledger, as_of, "recovery")
    att = _att(led, "recovery")
    s = led.summary()
    at = att.as_of
    t = as_table(lifecycle, "lifecycle")
    A = att.attempts
    order = np.argsort(A.start, kind="stable")
    ids = [int(A.ids[i]) for i in order]
    a_start = {int(A.ids[i]): int(A.start[i]) for i in order}
    a_end = {int(A.ids[i]): int(A.end[i]) for i in order}
    pos = {a: j for j, a in enumerate(ids)}

    # steps: completion per (attempt, step), first start per attempt
    st = _records(t, "step")
    sa, sa_null = _col_or_null(st, "attempt", "lifecycle")
    sk, sk_null = _col_or_null(st, "step", "lifecycle")
    ss, _ = _col_or_null(st, "start_ns", "lifecycle")
    se, se_null = _col_or_null(st, "end_ns", "lifecycle")
    live = ~sa_null & ~sk_null & (ss <= at)
    sa, sk, ss, se, done = sa[live], sk[live], ss[live], se[live], (~se_null[live]) & (se[live] <= at)
    first_step: dict[int, int] = {}  # attempt -> start of its first step
    comp: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # attempt -> (steps ascending, completion), completed only
    if sa.size:
        o = np.lexsort((sk, sa))
        ga, gk, gs = sa[o], sk[o], ss[o]
        ge, gd = np.where(done[o], se[o], np.iinfo(np.int64).max), done[o]
        cut = np.flatnonzero(np.r_[True, (ga[1:] != ga[:-1]) | (gk[1:] != gk[:-1]), True])
        lo = cut[:-1]
        g_att, g_step = ga[lo], gk[lo]
        g_end = np.maximum.reduceat(ge, lo)
        g_done = np.logical_and.reduceat(gd, lo)
        g_start = np.minimum.reduceat(gs, lo)
        a_cut = np.flatnonzero(np.r_[True, g_att[1:] != g_att[:-1], True])
        for a0, a1 in zip(a_cut[:-1].tolist(), a_cut[1:].tolist()):  # one slice per attempt
            a_ = int(g_att[a0])
            first_step[a_] = int(g_start[a0:a1].min())
            m = g_done[a0:a1]
            comp[a_] = (g_step[a0:a1][m], g_end[a0:a1][m])
    rs = _records(t, "restore")
    ra, ra_null = _col_or_null(rs, "attempt", "lifecycle")
    rk, rk_null = _col_or_null(rs, "step", "lifecycle")
    re_, re_null = _col_or_null(rs, "end_ns", "lifecycle")
    rok = np.ones(rs.num_rows, bool) if "ok" not in rs.schema.names else \
        np.asarray(pc.fill_null(rs["ok"], True).to_numpy(zero_copy_only=False), bool)
    r_good = ~ra_null & ~rk_null & ~re_null & rok & (re_ <= at)
    restores: dict[int, list[tuple[int, int]]] = {}  # attempt -> [(step, end)]
    for a_, k_, e_ in zip(ra[r_good].tolist(), rk[r_good].tolist(), re_[r_good].tolist()):
        restores.setdefault(a_, []).append((k_, e_))

    def progress(a_: int, t_f: int) -> int | None:
        best = None
        if a_ in comp:
            steps_, ends_ = comp[a_]
            m = ends_ <= t_f
            if m.any():
                best = int(steps_[m].max())
        for k_, e_ in restores.get(a_, []):
            if e_ <= t_f and (best is None or k_ > best):
                best = k_
        return best

    def regained(after: list[int], p: int) -> int | None:
        for b in after:  # attempts in start order: the first with a candidate holds the earliest
            cands = [e_ for k_, e_ in restores.get(b, []) if k_ >= p]
            if b in comp:
                steps_, ends_ = comp[b]
                m = steps_ >= p
                if m.any():
                    cands.append(int(ends_[m].min()))
            if cands:
                return min(cands)
        return None

    iv = _intervals(led, "recovery")
    lost_by_att = _by_attempt(iv, "rolled_back")
    fails = _failure_rows(att)
    first_of_att: set[tuple[int, int, str]] = set()
    seen: set[int] = set()
    for f in fails:
        if f[0] not in seen:
            seen.add(f[0])
            first_of_att.add(f)
    per_failure = []
    for f in fails:
        a_, t_f, kind = f
        later = [b for b in ids[pos[a_] + 1:] if a_start[b] >= t_f] if a_ in pos else []
        fs = next(((b, first_step[b]) for b in later if b in first_step), None)
        p = progress(a_, t_f)
        rec_at = fs[1] if (p is None and fs is not None) else (regained(later, p) if p is not None else None)
        per_failure.append({
            "attempt": a_, "time_ns": t_f, "cause": kind, "next_attempt": later[0] if later else None,
            "first_step_ns": None if fs is None else fs[1],
            "to_first_step_ns": None if fs is None else fs[1] - t_f,
            "progress_step": p, "recovered_ns": rec_at,
            "to_progress_ns": None if rec_at is None else rec_at - t_f,
            "lost_ns": lost_by_att.get(a_, 0) if f in first_of_att else 0,
        })

    # restart loops: checkpoints durable (ok, by as_of) per attempt span
    C = att.checkpoints
    durable = np.asarray(C.durable, np.int64)
    c_ok = durable != NULL
    c_step, c_dur = np.asarray(C.step, np.int64)[c_ok], durable[c_ok]

    def newest(by: int) -> int | None:
        m = c_dur <= by
        return int(c_step[m].max()) if m.any() else None

    ns_by_att = _by_attempt(iv, None)
    attempts = []
    for i in order:
        a_ = int(A.ids[i])
        running, completed = bool(A.running[i]), bool(A.completed[i])
        before, after = newest(int(A.start[i]) - 1), newest(int(A.end[i]))
        moved = after is not None and (before is None or after > before)
        attempts.append({"attempt": a_, "start_ns": a_start[a_], "end_ns": a_end[a_],
                         "end": "running" if running else "completed" if completed else
                         (str(A.cause[i]) if A.cause[i] is not None else "ended"), "running": running,
                         "checkpoint_before": before, "checkpoint_after": after, "moved": moved,
                         "restart_loop": not running and not completed and not moved,
                         "ns": ns_by_att.get(a_, 0)})
    loops: list[dict] = []
    prev = None
    for x in attempts:
        if x["restart_loop"]:
            if loops and loops[-1]["last_attempt"] == prev:
                loops[-1].update(last_attempt=x["attempt"], attempts=loops[-1]["attempts"] + 1,
                                 ns=loops[-1]["ns"] + x["ns"])
            else:
                loops.append({"first_attempt": x["attempt"], "last_attempt": x["attempt"], "attempts": 1,
                              "ns": x["ns"]})
        prev = x["attempt"]

    acc = s["accountable_ns"]
    nf = len(fails)
    causes: dict[str, int] = {}
    for f in fails:
        causes[f[2]] = causes.get(f[2], 0) + 1
    rate = (lambda c: _frac(c * 1000 * NS_PER_HOUR, acc))
    badput = s["badput_ns"] or 0
    return Recovery(acc, nf, rate(nf), {c: {"failures": v, "per_1000_accelerator_hours": rate(v)}
                                        for c, v in sorted(causes.items())},
                    per_failure, attempts, loops, badput, att.wall_ns, _frac(badput, att.wall_ns))


# ---------------------------------------------------------------------------
# progress protection


@dataclass
class Protection:
    """What :func:`protection` returns.

    Attributes
    ----------
    per : str
        ``"failure"`` or ``"period"``.
    bound_ns, bound_share : int or Fraction or None
        The contracted bound (one of them).
    rows : list of dict
        Per failure: ``attempt, time_ns, cause, lost_ns, work_ns, share, allowed_ns,
        breach, excess_ns, excess_cost``. Per period: ``start_ns, end_ns, failures,
        lost_ns, work_ns, share, allowed_ns, breach, excess_ns, excess_cost,
        badput_ns, idle_equivalent``.
    breaches : int
    excess_ns : Fraction
        Lost progress beyond the bound, over all breaches (accelerator-ns).
    excess_cost : Fraction or None
        ``excess_ns`` in accelerator-hours times the price, when one was given.
    superseded_ns : int
        Rolled-back work no failure threw away (an attempt that ended without one):
        in a period's loss, not in any failure's.
    """

    per: str
    bound_ns: Optional[int]
    bound_share: Optional[Fraction]
    rows: list
    breaches: int
    excess_ns: Fraction
    excess_cost: Optional[Fraction]
    superseded_ns: int

    def table(self) -> pa.Table:
        if not self.rows:
            return pa.table({})
        return pa.table({k: pa.array([_f(r[k]) for r in self.rows]) for k in self.rows[0]})

    def summary(self) -> dict:
        return _f({"per": self.per, "bound_ns": self.bound_ns, "bound_share": self.bound_share,
                   "rows": len(self.rows), "breaches": self.breaches, "excess_ns": self.excess_ns,
                   "excess_accelerator_hours": self.excess_ns / NS_PER_HOUR, "excess_cost": self.excess_cost,
                   "superseded_ns": self.superseded_ns})


_WORK = ("productive", "pending", "rolled_back")


def _clipped(s: np.ndarray, e: np.ndarray, lo: int, hi: int) -> int:
    """ns of the intervals [s, e) inside [lo, hi)."""
    d = np.minimum(e, hi) - np.maximum(s, lo)
    return int(d[d > 0].sum(dtype=np.int64))


def _buckets(s: np.ndarray, e: np.ndarray, width: int, first: int, count: int) -> list[int]:
    """ns of the intervals in each bucket [first + i·w, first + (i+1)·w), exact."""
    out = [0] * count
    keep = e > s
    s, e = s[keep], e[keep]
    i0 = (s - first) // width
    i1 = (e - 1 - first) // width
    one = i0 == i1
    if one.any():
        sums = np.zeros(count, np.int64)
        np.add.at(sums, i0[one], (e - s)[one])
        out = [int(x) for x in sums]
    for a, b, j0, j1 in zip(s[~one].tolist(), e[~one].tolist(), i0[~one].tolist(), i1[~one].tolist()):
        for j in range(j0, j1 + 1):
            lo, hi = first + j * width, first + (j + 1) * width
            out[j] += min(b, hi) - max(a, lo)
    return out


def protection(ledger: Ledger, *, bound_ns: int | None = None, bound_share: Number | None = None,
               per: str = "failure", period_ns: int | None = None,
               price_per_accelerator_hour: Number | None = None) -> Protection:
    """Check lost progress against a contracted bound, per failure or per period.

    Parameters
    ----------
    ledger : Ledger
        With a lifecycle.
    bound_ns : int, optional
        The most lost progress allowed, in accelerator-ns (per failure or per period).
    bound_share : number, optional
        The most lost progress allowed as a share (in [0, 1]) of the progress made:
        per failure, of the step work done up to the failure; per period, of the step
        work done in the period. Give one of ``bound_ns`` and ``bound_share``.
    per : {"failure", "period"}
    period_ns : int
        With ``per="period"``: the period's length; periods are aligned to multiples
        of it, from the ledger's first accountable instant to ``as_of``.
    price_per_accelerator_hour : number, optional
        Prices the excess.

    Returns
    -------
    Protection

    Notes
    -----
    Lost progress is the ledger's ``rolled_back`` accelerator time. A failure's loss
    is the rolled-back time of the attempt it ended (see :func:`recovery`); a
    period's loss is that of the failures in it (the period the loss happened in,
    wherever the lost work was done), plus work rolled back without a failure (an
    attempt ending without one: at its end). Step work is ``productive + pending +
    rolled_back`` time. A breach is a loss above the bound (``lost > bound_ns``, or
    ``lost > bound_share x work``); its excess is ``lost - allowed``. Per period the
    rows also give the waste as capacity: ``badput_ns`` (accountable time neither
    productive nor pending in the period) over the period's observed length, the
    accelerators that idle for the whole period would waste as much.
    """
    if per not in ("failure", "period"):
        raise OptionError(f"protection: per = {per!r}. Fix: give 'failure' or 'period'")
    if (bound_ns is None) == (bound_share is None):
        raise OptionError("protection: give one bound: bound_ns= (accelerator-ns of lost progress) or bound_share= "
                          "(a share of the progress made)")
    b_ns = None if bound_ns is None else _count(bound_ns, "bound_ns")
    b_sh = None
    if bound_share is not None:
        b_sh = Fraction(0) if bound_share == 0 else _positive(bound_share, "bound_share")
        if b_sh > 1:
            raise PauError(f"protection: bound_share = {bound_share!r} is above 1. Fix: give a share in [0, 1]")
    if per == "period":
        width = _count(period_ns, "period_ns", positive=True) if period_ns is not None else None
        if width is None:
            raise OptionError("protection: per='period' needs period_ns=. Fix: give the period's length in ns")
    elif period_ns is not None:
        raise OptionError("protection: period_ns= applies to per='period'. Fix: leave it out, or pass per='period'")
    price = None if price_per_accelerator_hour is None else (
        Fraction(0) if price_per_accelerator_hour == 0 else _positive(price_per_accelerator_hour,
                                                                       "price_per_accelerator_hour"))
    att = _att(ledger, "protection")
    iv = _intervals(ledger, "protection")
    st = iv["state"].cast(pa.string()) if pa.types.is_dictionary(iv["state"].type) else iv["state"]
    s_all = np.asarray(iv["start_ns"].to_numpy(zero_copy_only=False), np.int64)
    e_all = np.asarray(iv["end_ns"].to_numpy(zero_copy_only=False), np.int64)
    st_np = np.asarray(st.to_numpy(zero_copy_only=False), object)
    work = np.isin(st_np, _WORK)
    waste = ~np.isin(st_np, ("productive", "pending"))
    lost_by_att = _by_attempt(iv, "rolled_back")
    fails = _failure_rows(att)
    first: dict[int, tuple[int, int, str]] = {}
    for f in fails:
        first.setdefault(f[0], f)
    A = att.attempts
    end_of = {int(A.ids[i]): int(A.end[i]) for i in range(A.ids.size)}
    superseded = {a: v for a, v in lost_by_att.items() if a not in first and v}

    def judge(lost: int, work_ns: int) -> dict:
        if b_ns is not None:
            allowed = Fraction(b_ns)
        else:
            assert b_sh is not None
            allowed = b_sh * work_ns
        breach = lost > allowed
        excess = Fraction(lost) - allowed if breach else Fraction(0)
        return {"share": _frac(lost, work_ns), "allowed_ns": allowed, "breach": breach, "excess_ns": excess,
                "excess_cost": None if price is None else excess / NS_PER_HOUR * price}

    rows = []
    if per == "failure":
        ws, we = s_all[work], e_all[work]
        for f in fails:
            lost = lost_by_att.get(f[0], 0) if first[f[0]] == f else 0
            w = _clipped(ws, we, np.iinfo(np.int64).min, f[1])
            rows.append({"attempt": f[0], "time_ns": f[1], "cause": f[2], "lost_ns": lost, "work_ns": w,
                         **judge(lost, w)})
    else:
        assert width is not None
        lo_t, hi_t = att.as_of - att.wall_ns, att.as_of
        base = (lo_t // width) * width
        count = max(1, -(-(hi_t - base) // width))
        events = [(first[a][1], v) for a, v in lost_by_att.items() if a in first] + \
                 [(end_of[a], v) for a, v in superseded.items()]
        w_b = _buckets(np.maximum(s_all[work], lo_t), np.minimum(e_all[work], hi_t), width, base, count)
        b_b = _buckets(np.maximum(s_all[waste], lo_t), np.minimum(e_all[waste], hi_t), width, base, count)
        nf = [0] * count
        for f in fails:
            j = (f[1] - base) // width
            if 0 <= j < count:
                nf[j] += 1
        lost_b = [0] * count
        for tm, v in events:
            j = min(max((tm - base) // width, 0), count - 1)
            lost_b[j] += v
        for j in range(count):
            p0, p1 = max(base + j * width, lo_t), min(base + (j + 1) * width, hi_t)
            rows.append({"start_ns": p0, "end_ns": p1, "failures": nf[j], "lost_ns": lost_b[j], "work_ns": w_b[j],
                         **judge(lost_b[j], w_b[j]), "badput_ns": b_b[j], "idle_equivalent": _frac(b_b[j], p1 - p0)})
    breaches = sum(1 for r in rows if r["breach"])
    excess = sum((r["excess_ns"] for r in rows), Fraction(0))
    return Protection(per, b_ns, b_sh, rows, breaches, excess,
                      None if price is None else excess / NS_PER_HOUR * price, sum(superseded.values()))
