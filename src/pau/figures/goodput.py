"""How well productive time used the hardware, and the field's goodput definitions over
one ledger: peak FLOP/s (:data:`PEAK_FLOPS`, :func:`peak_flops`), model FLOPs (PaLM,
:func:`model_flops`), program goodput (MFU, HFU: :func:`program_goodput`), Google's ML
Productivity Goodput (:func:`mpg`), Meta's ETTR (:func:`ettr`) and the schedule they read
the queue from (:func:`schedule_times`).

Every figure is computed from the ledger's own cells (:meth:`pau.core.Ledger.summary`)
and, where a definition needs more, from a schedule (queue and allocation records, e.g.
:func:`pau.readers.slurm.read_sacct`). Ratios are exact :class:`fractions.Fraction` in the
results and floats in their ``summary()`` (JSON-able); a ratio whose denominator is zero is
None. Formulas, sources and how each figure relates to pau's goodput: ``docs/outcome.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any, Mapping, Optional, cast

import numpy as np

from pau.engine._input import as_table, int_values, time_values
from pau.engine.ledger import Ledger
from pau.engine.types import (ETTRSummary, ModelFlopsSummary, MPGSummary, PeakFlopsSummary,
                              ProgramGoodputSummary, RunWarning)
from pau.errors import InvalidRowError, OptionError, PauError, SchemaError
from pau.figures._common import _NS_PER_S, _count, _fd, _frac, _one_job, _positive

__all__ = [
    "PEAK_FLOPS", "PeakFlops", "peak_flops", "ModelFlops", "model_flops", "RECOMPUTE", "ProgramGoodput",
    "program_goodput", "Schedule", "schedule_times", "MPG", "mpg", "ETTR", "ettr",
]


# ---------------------------------------------------------------------------
# peak FLOP/s per accelerator and data type


@dataclass(frozen=True)
class PeakFlops:
    """Peak dense FLOP/s of one accelerator for one data type, and where it comes from."""

    accelerator: str
    dtype: str
    flops: Fraction
    source: str

    def summary(self) -> PeakFlopsSummary:
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


def _peak(peak: Any, accelerator: str | None, dtype: str | None, peaks: Any, what: str) -> PeakFlops:
    if peak is not None:
        if accelerator is not None or peaks is not None:
            raise OptionError(f"{what}: peak= gives the value itself; accelerator=/peaks= would look another one up. "
                              "Fix: give peak= alone, or accelerator= and dtype=")
        if isinstance(peak, PeakFlops):
            return peak
        return PeakFlops("given", dtype or "given", _positive(peak, "peak"), "given by the caller (peak=)")
    if accelerator is None or dtype is None:
        raise OptionError(f"{what}: the peak FLOP/s is unknown. Fix: give accelerator= and dtype= (a row of "
                          "pau.figures.goodput.PEAK_FLOPS), or peak= (FLOP/s per accelerator)")
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

    def summary(self) -> ModelFlopsSummary:
        return cast(ModelFlopsSummary, dict(self.__dict__))


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
    warnings: list[Any] = field(default_factory=list)

    def summary(self) -> ProgramGoodputSummary:
        return cast(ProgramGoodputSummary, _fd({"peak": self.peak.summary(), "basis": self.basis, "units": self.units,
                   "model_flops": self.model_flops, "hardware_flops": self.hardware_flops,
                   "productive_ns": self.productive_ns, "accountable_ns": self.accountable_ns,
                   "mfu": self.mfu, "hfu": self.hfu, "program_goodput": self.program_goodput,
                   "warnings": [str(w) for w in self.warnings]}))


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
    _one_job(ledger, "program goodput")
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


def _sched_for(ledger: Ledger, schedule: Any, as_of: int | None, what: str) -> tuple[Schedule, list[Any]]:
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
    warnings: list[Any] = field(default_factory=list)

    def summary(self) -> MPGSummary:
        return cast(MPGSummary, _fd({"scheduling_goodput": self.scheduling, "runtime_goodput": self.runtime,
                   "program_goodput": self.program, "mpg": self.mpg, "queued_ns": self.queued_ns,
                   "accountable_ns": self.accountable_ns, "productive_ns": self.productive_ns,
                   "schedule_allocated_ns": None if self.schedule is None else self.schedule.allocated_ns,
                   "program": None if self.program_goodput is None else self.program_goodput.summary(),
                   "warnings": [str(w) for w in self.warnings]}))


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
    _one_job(ledger, "MPG")
    s = ledger.summary()
    if s["goodput"] is None and s["preserved_steps"] is None:
        raise PauError("mpg: the ledger has no lifecycle. Fix: build it with a lifecycle table")
    acc, prod = s["accountable_ns"], s["productive_ns"]
    warns: list[Any] = []
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
    warnings: list[Any] = field(default_factory=list)

    def summary(self) -> ETTRSummary:
        return cast(ETTRSummary, _fd({"ettr": self.ettr, "productive_ns": self.productive_ns, "pending_ns": self.pending_ns,
                   "accountable_ns": self.accountable_ns, "queued_ns": self.queued_ns,
                   "available_ns": self.available_ns, "warnings": [str(w) for w in self.warnings]}))


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
    _one_job(ledger, "ETTR")
    s = ledger.summary()
    if s["goodput"] is None and s["preserved_steps"] is None:
        raise PauError("ettr: the ledger has no lifecycle. Fix: build it with a lifecycle table")
    warns: list[Any] = []
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
