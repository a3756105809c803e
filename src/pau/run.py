"""pau.Run: the one in-memory form of a run, and pau.read: the one way in (DESIGN §6).

Every reader's output becomes a :class:`Run`; ``run.write(path)`` writes it in pau's
layout and :func:`read` of that path gives back an equal run, table by table. The
figures of a run come from :meth:`Run.summary`, which ``pau report`` (every output
format), ``pau compare`` and :meth:`pau.core.Ledger.summary` share.

Choices where the design is silent (also in ``docs/run.md``):

* A profiler trace (Kineto, Nsight) with step annotations gets a lifecycle the
  ledger accepts: each rank is accountable over its profiled window (``spans``),
  and that window is one **completed** attempt of that rank. So every profiled
  step counts as preserved work: a profiler cannot see checkpoints or failures.
  The assumption is written in ``metadata["assumed"]``. A trace without steps has no
  lifecycle; its ledger is events-only and has no goodput (null, not zero).
* A run's events are in ``(rank, start_ns)`` order, the order every reader gives;
  :meth:`Run.write` keeps it (a rank's events out of that order are sorted).
* A path holding several runs (a folder of MLPerf result logs) is read with
  :func:`read_runs`; :func:`read` refuses it, naming the runs.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Sequence, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from pau.engine import api as _engine
from pau.figures import align as _align
from pau.figures import idle as _idle
from pau.figures import layers as _layers
from pau.figures import recovery as _recovery
from pau.engine import io as _io
from pau.figures import hardware as _telemetry
from pau.engine._format import html_table
from pau.engine._names import INPUT_FORMATS
from pau.engine._input import REASONS, as_table, raise_first, row_reasons, spans_of
from pau.engine._sweep import SPAN_REASON
from pau.engine.types import (IdleFigures, MLPerfFigures, RankIdle, RunSummary, RunWarning, check_on_invalid,
                              quarantine_schema, quarantine_table)
from pau.engine.ledger import Ledger
from pau.figures.compare import range_summary, top_kernels
from pau.figures.stragglers import step_figures
from pau.figures.economics import requests as _request_ledger
from pau.errors import ManyJobsError, MultipleRunsError, OptionError, OptionTypeError, PauError, SchemaError
from pau.readers.detect import detect_format
from pau.readers.kineto import KinetoTrace, read_kineto, trace_files
from pau.readers.mllog import MLLogRun, read_mllog_runs
from pau.readers.nsys import NsysTrace, nsys_files, read_nsys
from pau.readers.serving import ServingResults, read_serving
from pau.readers import telemetry as _readers_telemetry
from pau._run_tables import (
    _ASSUMED_TRACE, CLOCK_SKEW_NS, TABLES, _clock_skew, _quarantine, _rank_list, _read_events, _reader_warnings,
    _table_files, _trace_lifecycle, _wide_rank_rows, outside_accountable,
)

__all__ = ["CLOCK_SKEW_NS", "FORMATS", "TABLES", "MultipleRunsError", "Run", "RunWarning", "attach_samples", "detect",
           "outside_accountable", "read", "read_runs", "run_figures", "spans_of"]

#: The formats :func:`read` knows; ``pau`` is pau's own run layout (a folder).
FORMATS = INPUT_FORMATS
#: The file naming a folder as a pau run, and its version.
RUN_FILE = "pau-run.json"
RUN_LAYOUT_VERSION = 1


def _tables_equal(a: pa.Table | None, b: pa.Table | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return bool(a.schema.remove_metadata().equals(b.schema.remove_metadata()) and a.equals(b))


@dataclass(eq=False)
class Run:
    """One run: device events, lifecycle, accountable spans, requests, telemetry.

    Attributes
    ----------
    events : pyarrow.Table or None
        Device events (DESIGN §2.1), in ``(rank, start_ns)`` order.
    lifecycle : pyarrow.Table or None
        Lifecycle records (DESIGN §2.2), one the ledger accepts.
    spans : pyarrow.Table or None
        ``rank, start_ns, end_ns``: the accountable span per rank (a profiler's window).
    requests : pyarrow.Table or None
        Serving requests (DESIGN §3).
    samples : pyarrow.Table or None
        Hardware telemetry ``rank, time_ns, metric, value``.
    host : pyarrow.Table or None
        ``rank, start_ns, end_ns, cause``: host intervals that explain device idle
        (``sync_wait``: a synchronize call; ``data_wait``: a data-loader span), from the
        trace readers (``docs/idle.md``).
    metadata : dict
        JSON-able facts: ``format``, ``sources``, per-rank devices (``ranks``), ``assumed``
        (what the reader assumed), and what the format records (benchmark, status...).
    warnings : list of RunWarning
    quarantine : pyarrow.Table or None
        Rows or files set aside with ``on_invalid="quarantine"``: each reader's table as
        it is, ``source_file, location, reason`` first (:data:`pau.engine.types.QUARANTINE_SCHEMA`;
        ``location``: ``line L, offset B`` or ``file`` in a trace, ``table T rowid N`` or
        ``file`` in an Nsight export, ``line N``/``record N`` in serving results), then
        the reader's own columns (docs/bad-input.md).
    """

    events: pa.Table | None = None
    lifecycle: pa.Table | None = None
    spans: pa.Table | None = None
    requests: pa.Table | None = None
    samples: pa.Table | None = None
    host: pa.Table | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[RunWarning] = field(default_factory=list)
    quarantine: pa.Table | None = None

    def __post_init__(self) -> None:
        for name in TABLES:
            value = getattr(self, name)
            if value is not None and not isinstance(value, pa.Table):
                setattr(self, name, as_table(value, name))

    # -- figures ------------------------------------------------------------

    def ledger(self, *, as_of: int | None = None, priority: Sequence[str] | None = None,
               progress: Any = None) -> Ledger:
        """The ledger (DESIGN §2.3) of this run: state × activity per rank.

        With a lifecycle its accountable records set each rank's time; without one
        the ledger is events-only over :attr:`spans` (or first to last event)."""
        if self.events is None and self.lifecycle is None:
            raise PauError("run.ledger: this run has neither events nor a lifecycle (it holds "
                           f"{', '.join(self.tables()) or 'no table'}). Fix: read a trace or a lifecycle, "
                           "or use run.summary() for request figures")
        if self.lifecycle is not None:
            return _engine.ledger(self.events, self.lifecycle, as_of=as_of, priority=priority, progress=progress)
        if as_of is not None:
            raise OptionError("run.ledger: as_of applies to a lifecycle, and this run has none")
        return _engine.ledger(self.events, span=self.spans, priority=priority, progress=progress)

    def layers(self, *, as_of: int | None = None, schedule: Any = None, flops: Any = None,
               accelerator: str | None = None, dtype: str | None = None, peak: Any = None,
               price_per_accelerator_hour: float | None = None) -> _layers.Layers:
        """The stack from accelerator time asked for down to useful FLOPs
        (:func:`pau.figures.layers.layers`): accountable, productive, productive compute, the
        hardware's activity over it (with samples), FLOPs at peak (with ``flops``); a
        ``schedule`` adds the time queued on top."""
        if self.lifecycle is None:
            raise PauError("run.layers: the run has no lifecycle, so no productive layer. Fix: read a trace "
                           "with steps, or give the run's lifecycle")
        return _layers.layers(self.ledger(as_of=as_of), samples=self.samples, events=self.events,
                              schedule=schedule, flops=flops, accelerator=accelerator, dtype=dtype, peak=peak,
                              price_per_accelerator_hour=price_per_accelerator_hour)

    def summary(self, *, as_of: int | None = None, slo: dict[str, Any] | None = None) -> RunSummary:
        """Every headline figure of the run as a JSON-able dict (see :func:`run_figures`)."""
        return run_figures(self, as_of=as_of, slo=slo)

    # -- tables and equality ------------------------------------------------

    def tables(self) -> list[str]:
        """Names of the tables this run holds."""
        return [n for n in TABLES if getattr(self, n) is not None]

    def equals(self, other: object) -> bool:
        """Same tables (schema and rows, in order), metadata and warnings."""
        if not isinstance(other, Run):
            return False
        return (all(_tables_equal(getattr(self, n), getattr(other, n)) for n in TABLES)
                and _jsonable(self.metadata) == _jsonable(other.metadata)
                and self.warnings == other.warnings)

    def __eq__(self, other: object) -> bool:
        return self.equals(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = [f"{n}={getattr(self, n).num_rows}" for n in self.tables()]
        return f"Run(format={self.metadata.get('format')!r}, {', '.join(parts)}, warnings={len(self.warnings)})"

    def _repr_html_(self) -> str:
        """A notebook's view: the tables held (rows), the format and sources, the
        warnings. Nothing is computed: ``run.ledger()`` shows the figures."""
        m = self.metadata
        rows = [[n, f"{getattr(self, n).num_rows:,}"] for n in self.tables()]
        facts = [["format", str(m.get("format"))],
                 ["sources", ", ".join(str(x) for x in m.get("sources", [])[:5]) or "-"],
                 ["warnings", f"{len(self.warnings)}"],
                 ["quarantined rows", "0" if self.quarantine is None else f"{self.quarantine.num_rows:,}"]]
        parts = ["<p><b>pau Run</b></p>", html_table(["", ""], facts),
                 html_table(["table", "rows"], rows, right=(1,))]
        if self.warnings:
            parts.append(html_table(["warning", "message"], [[w.code, w.message] for w in self.warnings[:20]]))
        return "\n".join(parts)

    # -- writing --------------------------------------------------------------

    def write(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> str:
        """Write the run in pau's layout: a folder (see ``docs/run.md``).

        ``path/pau-run.json`` (metadata, warnings, the tables' columns), ``events/``
        (:func:`pau.engine.io.write_dataset`: ``job=run/rank=R/part-0.parquet``) and one
        ``<table>.parquet`` per other table. Events with a ``job`` column (a run of many
        jobs) or none are one file, ``events.parquet``, as written. Returns the folder's path."""
        out = os.fspath(path)
        if out.endswith((".parquet", ".json", ".gz")):
            raise PauError(f"run.write: {out!r}: a run is written as a folder (several tables). Fix: give "
                           "a folder name without a file suffix")
        if os.path.isfile(out):
            raise PauError(f"run.write: {out!r} is a file. Fix: give a folder")
        if os.path.isdir(out) and os.listdir(out):
            if not overwrite:
                raise PauError(f"run.write: {out!r} exists and is not empty. Fix: pass overwrite=True "
                               "(pau convert --overwrite) or another folder")
            if not os.path.isfile(os.path.join(out, RUN_FILE)):
                # overwrite replaces a run, never a folder of something else
                raise PauError(f"run.write: {out!r} is not empty and holds no {RUN_FILE}: not a pau run, "
                               "so overwrite does not replace it. Fix: give another folder")
            shutil.rmtree(out)
        os.makedirs(out, exist_ok=True)
        columns = {}
        for name in self.tables():
            table = getattr(self, name)
            columns[name] = table.column_names
            if name == "events" and table.num_rows and "job" not in table.column_names:
                _io.write_dataset(table, os.path.join(out, "events"), job="run")
            else:  # empty events have no rank to partition by, events of many jobs their own job
                # column (the folder job=run would contradict it): one file keeps the schema and rows
                _io.write_table(table, os.path.join(out, f"{name}.parquet"))
        doc = {"pau_run_layout": RUN_LAYOUT_VERSION, "tables": columns, "metadata": self.metadata,
               "warnings": [{"code": w.code, "message": w.message} for w in self.warnings]}
        # one line per top-level key, each value by json's C encoder (json.dump, and any
        # indent, take its pure-Python one: a few ms a run, which a fleet ingest feels)
        text = ",\n".join(f" {json.dumps(k)}: {json.dumps(doc[k], sort_keys=True, default=_json_default)}"
                           for k in sorted(doc))
        with open(os.path.join(out, RUN_FILE), "w") as f:
            f.write("{\n" + text + "\n}\n")
        return out


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise OptionTypeError(f"metadata: {type(value).__name__} {value!r} is not JSON-able. Fix: give metadata of JSON "
                          "types (str, int, float, bool, None, and lists and dicts of them)")


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=_json_default))


# ---------------------------------------------------------------------------
# figures: one function for every way of asking


def run_figures(run: Run, *, as_of: int | None = None, slo: dict[str, Any] | None = None,
                ledger: Ledger | None = None, keys: Collection[str] | None = None) -> RunSummary:
    """The figures of a run, JSON-able: what ``pau report --format json`` prints.

    Keys: ``format``, ``tables`` (rows per table), ``ledger`` (:meth:`Ledger.summary`
    when the run has events or a lifecycle, else None), ``requests``
    (:meth:`pau.figures.economics.RequestLedger.summary` when it has requests, else None),
    ``slo_ns`` (the SLOs the requests were checked against, ns; empty when none),
    ``per_rank`` (:meth:`Ledger.rank_activity`: each rank's span and ns per activity;
    None without a ledger), ``top_kernels`` (:func:`pau.figures.compare.top_kernels`: the device work that took the
    most time; None without events), ``nvtx`` (an Nsight export's NVTX ranges by name,
    :func:`pau.figures.compare.range_summary`, as the reader found them; None for other
    formats), ``steps`` (:func:`pau.figures.stragglers.step_figures`:
    step times per rank and the stragglers; None without per-rank steps),
    ``layers`` (:func:`pau.figures.layers.layers` of a lifecycle ledger: accountable, productive,
    productive compute and, with samples, the hardware's activity, each with its factor
    and losses), ``recovery`` (:func:`pau.figures.recovery.recovery`: failures per 1,000
    accelerator-hours, time to recover, restart loops), ``idle_by_cause`` (:func:`pau.figures.idle.idle_by_cause`: idle split into host_wait,
    data_wait, sync_wait and idle.other, ``ns`` for the job and ``per_rank``; None
    without events), ``telemetry`` (:func:`pau.figures.hardware.summary`: each metric's time-weighted mean, and
    energy, per state and activity; None without samples),
    ``events_outside_accountable`` (events that fall
    outside their rank's accountable
    time, counted, never dropped silently: ``events``, ``ns``, ``ranks``; None when
    there is nothing to check), ``warnings`` (count), ``quarantined`` (rows) and
    ``mlperf`` (an MLPerf log's benchmark, status, time to train, epochs, blocks and
    ``eval``: the eval metric against its quality target; None for other formats).

    ``ledger``: the run's ledger when the caller has it already (``run.ledger(as_of=...)``),
    so that it is not computed twice. ``keys``: the figures to compute (the others are
    None; ``format``, ``tables``, ``nvtx``, ``slo_ns``, ``warnings`` and ``quarantined``
    always are); all by default. A fleet ingest asks for those its runs table holds.

    A lifecycle of many jobs (a ``job`` column naming more than one): ``ledger`` and
    ``per_rank`` are the jobs' own, side by side and summed (:meth:`Ledger.summary`),
    ``top_kernels`` pools every job's events, and the figures of one job (``steps``,
    ``idle_by_cause``, ``layers``, ``recovery``, ``telemetry``,
    ``events_outside_accountable``) are None, never mixed: a warning in ``run.warnings``
    (code ``figures.many_jobs``) names them and the fix (``docs/lifecycle.md``).
    """
    if as_of is not None and run.lifecycle is None:
        raise OptionError("as_of: the figures as of an instant are those of a lifecycle (progress not yet "
                          "preserved at as_of is pending, time after it is not accountable), and this run has "
                          f"none (it holds {', '.join(run.tables()) or 'no table'}). Fix: drop as_of, or give "
                          "the run's lifecycle")
    led = ledger if ledger is not None else (
        run.ledger(as_of=as_of) if (run.events is not None or run.lifecycle is not None) else None)
    left_out: list[str] = []

    def one_job(key: str, figure: Callable[[], Any]) -> Any:
        """``figure()``, or None when it is a figure of one job and the run holds many
        (:class:`pau.errors.ManyJobsError`): ``key`` is named in the warning."""
        try:
            return figure()
        except ManyJobsError:
            left_out.append(key)
            return None

    figures: dict[str, Callable[[], Any]] = {
        "ledger": lambda: None if led is None else led.summary(),
        "per_rank": lambda: None if led is None else led.rank_activity(),
        "top_kernels": lambda: None if run.events is None else top_kernels(run.events),
        "steps": lambda: None if run.lifecycle is None else one_job("steps", lambda: step_figures(run.lifecycle)),
        "idle_by_cause": lambda: one_job("idle_by_cause", lambda: _idle_figures(run, led)),
        "layers": lambda: (None if led is None or led.intervals is None else one_job(
            "layers", lambda: _layers.layers(led, samples=run.samples, events=run.events).summary())),
        "recovery": lambda: (None if led is None or led.intervals is None or run.lifecycle is None else
                             one_job("recovery", lambda: _recovery.recovery(run.lifecycle, ledger=led).summary())),
        "telemetry": lambda: (None if run.samples is None or led is None else one_job(
            "telemetry", lambda: _telemetry.summary(led, run.samples, events=run.events,
                                                    span=run.spans if run.lifecycle is None else None))),
        "requests": lambda: None if run.requests is None else _request_ledger(run.requests, slo=slo).summary(),
        "events_outside_accountable": lambda: one_job("events_outside_accountable",
                                                      lambda: outside_accountable(run.events, led)),
        "mlperf": lambda: _mlperf_figures(run),
    }
    got = {k: (f() if keys is None or k in keys else None) for k, f in figures.items()}
    got.update({"format": run.metadata.get("format"), "tables": {n: getattr(run, n).num_rows for n in run.tables()},
                "nvtx": run.metadata.get("nvtx_summary"), "slo_ns": dict(slo or {}), "warnings": len(run.warnings),
                "quarantined": 0 if run.quarantine is None else run.quarantine.num_rows})
    out = cast(RunSummary, {k: got[k] for k in RunSummary.__annotations__})
    if left_out:
        w = RunWarning("figures.many_jobs", (
            f"the lifecycle holds many jobs (its 'job' column): {', '.join(left_out)} left out (None), being figures "
            "of one job that would mix the jobs' ranks and attempts; the ledger's figures are the jobs' own, summed. "
            "Fix: compute them per job: filter the lifecycle by job, or use pau.read_fleet / pau ingest, which keeps "
            "one run per job"))
        if not any(x.code == w.code and x == w for x in run.warnings):  # once, however often asked
            run.warnings.append(w)
        out["warnings"] = len(run.warnings)
    return out


#: The MLPerf facts of a run's metadata that the figures carry (``run_figures``' ``mlperf``).
_MLPERF_KEYS = ("benchmark", "division", "submitter", "system", "status", "accelerators", "time_to_train_ns",
                "time_to_train_s", "epochs", "blocks", "step_unit", "epoch_count", "first_epoch_num", "evals", "eval")


def _mlperf_figures(run: Run) -> MLPerfFigures | None:
    """An MLPerf log's result: status, time to train, epochs and blocks, the eval metric
    against its quality target (``metadata["eval"]``, ``pau.readers.mlperf_rules.judge``); None for
    other formats. JSON-able, its keys (and the eval's) in alphabetical order."""
    if run.metadata.get("format") != "mllog":
        return None
    return cast(MLPerfFigures, _jsonable({k: run.metadata.get(k) for k in _MLPERF_KEYS}))


def _idle_figures(run: Run, led: Ledger | None) -> IdleFigures | None:
    """Idle by cause over the ledger's time: within the lifecycle's state intervals, or
    over the spans of an events-only ledger; None without events."""
    if led is None or run.events is None:
        return None
    if led.intervals is not None:
        res = _idle.idle_by_cause(run.events, run.host, lifecycle=run.lifecycle, ledger=led)
    else:
        res = _idle.idle_by_cause(run.events, run.host, span=run.spans)
    per: dict[int, dict[str, int]] = {}
    for r in res.table.to_pylist():
        per.setdefault(int(r["rank"]), {})[r["cause"]] = int(r["duration_ns"])
    per_rank: list[RankIdle] = [{"rank": k, "ns": v} for k, v in sorted(per.items())]
    return {"ns": dict(res.summary), "per_rank": per_rank}


# ---------------------------------------------------------------------------
# from each reader to a Run


def _from_trace(trace: KinetoTrace | NsysTrace, fmt: str, path: str, align: str | None = None) -> Run:
    spans = trace.spans()  # Kineto: the profiled window; Nsight: the capture window
    steps = trace.lifecycle
    events = trace.events
    host = trace.host if trace.host.num_rows else None
    alignment = None
    if align is not None:  # every rank's times onto the lowest rank's clock, before spans make a lifecycle
        alignment = _align.offsets(events)
        events, spans, steps, host = (_align.apply(t, alignment) for t in (events, spans, steps, host))
    has_steps = steps is not None and steps.num_rows > 0 and bool(pc.any(pc.equal(steps["record"], "step")).as_py())
    lifecycle = _trace_lifecycle(steps, spans) if has_steps else None
    meta: dict[str, Any] = {
        "format": fmt, "sources": sorted({str(x) for x in trace.ranks["source_file"].to_pylist()
                                          if x is not None}) or [path],
        "ranks": trace.ranks.to_pylist(), "assumed": [_ASSUMED_TRACE] if lifecycle is not None else []}
    warnings = _reader_warnings(fmt, trace.warnings)
    if alignment is not None:
        meta["alignment"] = alignment.as_dict()
        unaligned = [r["rank"] for r in alignment.table.to_pylist() if r["offset_ns"] is None]
        if unaligned:
            warnings.append(RunWarning("align.no_anchors", f"{path}: no collective pairs rank(s) "
                                       f"{', '.join(map(str, unaligned))} with rank {alignment.reference}: their "
                                       "clocks are left as they are"))
    elif events.num_rows and "name" in events.column_names:
        skew = _clock_skew(events, path)
        if skew is not None:
            warnings.append(skew)
    if steps is not None and steps.num_rows and not has_steps:
        warnings.append(RunWarning("trace.no_steps", f"{path}: {steps.num_rows} phase records but no step: "
                                   "the run has no lifecycle (no goodput); the phases are in metadata"))
        meta["phases"] = steps.to_pylist()
    elif lifecycle is None:
        meta["assumed"].append("no step annotations: events-only ledger over each rank's profiled window")
    if isinstance(trace, NsysTrace):
        meta["nvtx_ranges"] = trace.nvtx.num_rows
        meta["nvtx_summary"] = range_summary(trace.nvtx)  # nsys stats' NVTX range summary, top names
    return Run(events=events, lifecycle=lifecycle, spans=spans, host=host, metadata=meta, warnings=warnings,
               quarantine=_quarantine(trace.quarantine))


def _from_mllog(r: MLLogRun) -> Run:
    meta = {"format": "mllog", "sources": [r.path], "benchmark": r.benchmark, "submitter": r.submitter,
            "system": r.system, "status": r.status, "accelerators": r.accelerators,
            "accelerators_source": r.accelerators_source, "accelerator_model": r.accelerator_model,
            "init_ns": r.init_ns, "time_to_train_ns": r.time_to_train_ns,
            "time_to_train_s": None if r.time_to_train_ns is None else r.time_to_train_ns / 1e9,
            "division": r.division, "epochs": r.epochs, "blocks": r.blocks, "step_unit": r.step_unit,
            "epoch_count": r.epoch_count, "first_epoch_num": r.first_epoch_num, "evals": r.evals, "eval": r.eval,
            "assumed": ([] if not r.accelerators_source == "assumed" else ["one accelerator (no system description)"])
            + list(r.eval.get("assumed", []))}
    lc = r.lifecycle
    acc = lc.filter(pc.equal(lc["record"], "accountable"))
    return Run(lifecycle=lc, spans=spans_of(acc), metadata=meta, warnings=_reader_warnings("mllog", r.warnings),
               quarantine=_quarantine(r.quarantine))


def _from_serving(s: ServingResults, path: str) -> Run:
    meta = {"format": "serving", "tool": s.format, "sources": [path], **_jsonable(s.meta)}
    return Run(requests=s.requests, metadata=meta, warnings=_reader_warnings("serving", s.warnings),
               quarantine=_quarantine(s.quarantine))


def _is_run_folder(path: str) -> bool:
    """A folder in pau's run layout: ``pau-run.json``, or (written by hand or by an
    older pau) only tables named as pau names them, a lifecycle among them."""
    if os.path.isfile(os.path.join(path, RUN_FILE)):
        return True
    tables = _table_files(path)
    others = [f for f in os.listdir(path) if not f.startswith(".")
              and os.path.join(path, f) not in tables.values()]
    return "lifecycle" in tables or ("events" in tables and len(tables) > 1 and not others)


def _read_run_folder(path: str, progress: Any) -> Run:
    if not os.path.isfile(os.path.join(path, RUN_FILE)):
        found = _table_files(path)
        tables: dict[str, pa.Table] = {n: (_read_events(p, progress) if n == "events" else _io.read_table(p))
                                       for n, p in found.items()}
        return Run(**tables, metadata={"format": "pau", "sources": [path],
                                       "assumed": [f"no {RUN_FILE}: tables read by their file names"]})
    with open(os.path.join(path, RUN_FILE)) as f:
        doc = json.load(f)
    version = doc.get("pau_run_layout")
    if not isinstance(version, int) or version > RUN_LAYOUT_VERSION:
        raise PauError(f"{path}/{RUN_FILE}: pau run layout {version!r} is not one this pau reads (up to "
                       f"{RUN_LAYOUT_VERSION}). Fix: upgrade pau")
    tables = {}
    files = _table_files(path)
    for name, columns in doc.get("tables", {}).items():
        if name not in TABLES:
            raise PauError(f"{path}/{RUN_FILE}: unknown table {name!r}. Fix: tables are {', '.join(TABLES)}")
        if name not in files:
            raise PauError(f"{path}: {RUN_FILE} lists table {name!r} but its file is missing. Fix: "
                           "write the run again (pau convert)")
        if os.path.isdir(files[name]):
            tables[name] = _read_events(files[name], progress).select(columns)
        else:
            tables[name] = _io.read_table(files[name])
    warnings = [RunWarning(w["code"], w["message"]) for w in doc.get("warnings", [])]
    return Run(**tables, metadata=doc.get("metadata", {}), warnings=warnings)


def _read_parquet(path: str, progress: Any) -> Run:
    """Plain Parquet (a file or a folder of them): an events table."""
    return Run(events=_read_events(path, progress), metadata={"format": "parquet", "sources": [path],
                                                              "assumed": []})


#: Column types of a CSV of device events (DESIGN §2.1); other columns are read as pyarrow infers them.
_CSV_TYPES = {"rank": pa.int32(), "stream": pa.int32(), "start_ns": pa.int64(), "end_ns": pa.int64(),
              "kind": pa.string(), "name": pa.string(), "step": pa.int64(), "bytes": pa.int64(),
              "attempt": pa.int32()}


def _read_csv(path: str, on_invalid: str) -> Run:
    """A CSV file of device events (a header naming ``rank, start_ns, end_ns, kind``),
    read by pyarrow's CSV reader with the events' column types. Rows are checked as
    every events table is: a bad row raises naming the file and the row (row N is line
    N + 2), or with ``on_invalid="quarantine"`` is set aside (``location``: ``line L``)."""
    if os.path.isdir(path):
        raise PauError(f"{path}: a folder; the CSV reader reads one file. Fix: give the file, or write the "
                       "events as Parquet (a folder of Parquet files is one table)")
    try:
        table = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
            column_types=_CSV_TYPES, strings_can_be_null=True))
    except (pa.ArrowInvalid, OSError) as exc:
        raise PauError(f"{path}: not a CSV of device events pau can read: {exc}. Fix: a header line naming "
                       "rank, start_ns, end_ns, kind (stream, name optional), integers for ranks and ns, "
                       "one event per line") from None
    missing = [c for c in ("rank", "start_ns", "end_ns", "kind") if c not in table.column_names]
    if missing:
        raise SchemaError(path, missing[0], "is not in the header", "name rank, start_ns, end_ns and kind in the "
                          "first line")
    return _screened(Run(events=table, metadata={"format": "csv", "sources": [path], "assumed": []}), path,
                     on_invalid, lambda i: f"line {i + 2}")


def _screened(run: Run, path: str, on_invalid: str, where: Any) -> Run:
    """``run`` with its events' rows checked now (as the ledger would check them): the
    first bad row raises naming ``path``, or with ``on_invalid="quarantine"`` the bad
    rows are set aside into ``run.quarantine`` (``location``: ``where(row)``) with a
    warning."""
    table = run.events
    assert table is not None
    reasons = row_reasons(table, path)
    # with quarantine, also the events of a rank whose span int64 cannot hold (without,
    # the ledger refuses the rank, naming it)
    wide = _wide_rank_rows(table, reasons, run.spans) if on_invalid == "quarantine" else None
    if not reasons.any() and (wide is None or not wide.any()):
        return run
    if on_invalid == "raise":
        raise_first(table, reasons, 0, path)
    why = np.asarray(REASONS, dtype=object)[reasons]
    if wide is not None:
        why[wide] = SPAN_REASON
    bad = np.flatnonzero((reasons != 0) | (False if wide is None else wide))
    q = table.take(pa.array(bad))
    quarantine = quarantine_table(quarantine_schema(*q.schema), path, [where(i) for i in bad.tolist()],
                                  why[bad].tolist(), **{c: q[c] for c in q.column_names})
    keep = np.ones(table.num_rows, bool)
    keep[bad] = False
    run.events = table.filter(pa.array(keep))
    _add_quarantine(run, quarantine)
    run.warnings.append(RunWarning("events.quarantined", f"{path}: {bad.size:,} event rows set aside "
                                   "(run.quarantine)"))
    return run


def detect(path: str | os.PathLike[str]) -> str:
    """The format of ``path`` (one of :data:`FORMATS`), from its content: a folder with
    ``pau-run.json`` is ``pau``; anything else as :func:`pau.readers.detect.detect_format`."""
    path = os.fspath(path)
    if os.path.isdir(path) and _is_run_folder(path):
        return "pau"
    return detect_format(path)


def read_runs(path: str | os.PathLike[str], *, format: str | None = None, on_invalid: str = "raise",
              **options: Any) -> list[Run]:
    """Every run at ``path`` (several for a folder of MLPerf result logs, else one).
    Parameters as for :func:`read`."""
    samples, devices = options.pop("samples", None), options.pop("devices", None)
    skip = options.pop("skip_bad", False)
    runs = _read_runs(path, format=format, on_invalid=on_invalid,
                      skip_bad=skip if isinstance(skip, tuple) else (PauError,) if skip else (), **options)
    if samples is None and devices is None:
        for run in runs:   # an Nsight export captured with GPU metrics brings its own samples
            if run.metadata.get("format") == "nsys" and run.samples is None:
                _nsys_gpu_metrics(run, on_invalid)
        return runs
    if samples is None:
        raise OptionError("read: devices= maps telemetry devices to ranks; give the telemetry too (samples=)")
    if len(runs) != 1:
        raise OptionError(f"read: samples= applies to one run, and {os.fspath(path)!r} holds {len(runs)}. Fix: "
                          "read one run")
    attach_samples(runs[0], samples, devices=devices, on_invalid=on_invalid)
    return runs


# ---------------------------------------------------------------------------
# telemetry: samples matched to the run's ranks (docs/telemetry.md)


def _rank_devices(run: Run) -> list[dict[str, Any]]:
    """The run's ranks and what names their accelerators: the reader's ``device`` (GPU
    index), and for an Nsight export the UUID and bus id its TARGET_INFO_GPU gives."""
    ranks = [dict(r) for r in run.metadata.get("ranks") or [] if isinstance(r, dict)]
    if run.metadata.get("format") == "nsys":
        gpus: dict[str, dict[int, dict[str, Any]]] = {}
        for r in ranks:
            src = r.get("source_file")
            if src and os.path.isfile(src) and src not in gpus:
                gpus[src] = {g["id"]: g for g in _readers_telemetry.nsys_gpus(src)}
            g = gpus.get(src or "", {}).get(r.get("device"))  # type: ignore[arg-type]
            if g:
                r.setdefault("uuid", g["uuid"])
                r.setdefault("bus_id", g["bus_id"])
    return ranks


def attach_samples(run: Run, samples: Any, *, devices: Any = None, on_invalid: str = "raise") -> Run:
    """Put telemetry on ``run`` (in place; also returned): ``samples`` is a telemetry
    file or a list of them (format detected, :func:`pau.readers.telemetry.read_telemetry`),
    a :class:`~pau.readers.telemetry.Telemetry` already read (for reader options), or a
    samples table whose ``rank`` already names the run's ranks. Devices are matched to
    ranks by :func:`pau.figures.hardware.match_devices` (``devices``: an explicit mapping or
    ``"index"``); the match is in ``metadata["telemetry"]``."""
    check_on_invalid(on_invalid)
    if run.samples is not None:
        raise OptionError("samples: the run holds samples already. Fix: read it without samples=, or drop "
                          "run.samples first")
    if isinstance(samples, (str, os.PathLike)) or (isinstance(samples, (list, tuple)) and samples
                                                  and all(isinstance(x, (str, os.PathLike)) for x in samples)):
        tel = _readers_telemetry.read_telemetry(samples, on_invalid=on_invalid)
    elif isinstance(samples, _readers_telemetry.Telemetry):
        tel = samples
    else:
        if devices is not None:
            raise OptionError("devices: a samples table names ranks already; devices= maps a telemetry file's devices")
        clean, q = _readers_telemetry.check_samples(samples, on_invalid=on_invalid)
        run.samples = clean
        _add_quarantine(run, q)
        return run
    att = _telemetry.match_samples(tel, _rank_devices(run), devices=devices)
    out = att.samples
    if run.metadata.get("alignment") and out.num_rows:   # the traces' clocks moved: the samples' with them
        al = run.metadata["alignment"]
        shift = _align.Alignment(pa.Table.from_pylist(al["ranks"]), al.get("reference_rank"), al.get("names_left_out", 0))
        moved = _align.apply(out.rename_columns(["rank", "start_ns", "metric", "value"]), shift)
        assert moved is not None
        out = moved.rename_columns(out.column_names).cast(out.schema)
    run.samples = out
    run.warnings.extend(_reader_warnings(tel.format, tel.warnings) + att.warnings)
    run.metadata.setdefault("assumed", []).extend(att.assumed)
    run.metadata["telemetry"] = {"format": tel.format, "sources": tel.sources, "matched_by": att.matched_by,
                                 "devices": att.devices}
    _add_quarantine(run, tel.quarantine if tel.quarantine.num_rows else None)
    _check_sample_ranks(run, out)
    return run


def _run_extent(run: Run) -> tuple[set[int], int | None, int | None, str]:
    """The ranks of a run (its spans', events' and lifecycle's own ranks, rank -1 left
    out) and its time: the spans, else the lifecycle's records, else the events; and
    what the time was taken from."""
    ranks: set[int] = set()
    for t in (run.spans, run.events, run.lifecycle):
        if t is not None and "rank" in t.column_names and t.num_rows:
            ranks.update(int(r) for r in pc.unique(t["rank"].drop_null()).to_pylist() if r >= 0)
    for t, what in ((run.spans, "spans"), (run.lifecycle, "lifecycle records"), (run.events, "events")):
        if t is not None and t.num_rows:
            ends = t["end_ns"] if "end_ns" in t.column_names else t["start_ns"]
            hi = pc.max(ends).as_py()
            return ranks, pc.min(t["start_ns"]).as_py(), hi if hi is not None else pc.max(t["start_ns"]).as_py(), what
    return ranks, None, None, "nothing"


def _check_sample_ranks(run: Run, samples: pa.Table) -> None:
    """Warnings for samples that cannot meet the run's ledger: samples of a rank the run
    does not have (``telemetry.devices_unmatched``), ranks of the run without samples
    (``telemetry.ranks_without_samples``, unless the match said so already) and samples
    wholly outside the run's time (``telemetry.no_overlap``): for every run, a
    lifecycle-only one included (its records give its ranks and time)."""
    if not samples.num_rows:
        return
    ranks, lo, hi, what = _run_extent(run)
    have = {int(r) for r in pc.unique(samples["rank"]).to_pylist()}
    codes = {w.code for w in run.warnings}
    if ranks:
        extra = sorted(have - ranks)
        if extra:
            n = int(pc.sum(pc.is_in(samples["rank"], pa.array(extra, samples["rank"].type))).as_py() or 0)
            run.warnings.append(RunWarning(
                "telemetry.devices_unmatched",
                f"{n:,} samples are of ranks {', '.join(map(str, extra[:20]))}{' ...' if len(extra) > 20 else ''}, "
                f"which the run does not have (its ranks: {_rank_list(sorted(ranks))}): no ledger cell takes them. "
                "Fix: map the devices to the run's ranks (devices={device: rank}, --devices DEVICE=RANK,...)"))
        missing = sorted(ranks - have)
        if missing and "telemetry.ranks_without_samples" not in codes:
            run.warnings.append(RunWarning(
                "telemetry.ranks_without_samples",
                f"ranks {_rank_list(missing)} have no telemetry sample: their cells are unknown for every metric"))
    if lo is not None and hi is not None:
        t = samples["time_ns"]
        s_lo, s_hi = pc.min(t).as_py(), pc.max(t).as_py()
        if s_hi < lo or s_lo > hi:
            run.warnings.append(RunWarning("telemetry.no_overlap", f"the samples ({s_lo} .. {s_hi} ns) lie wholly "
                                           f"outside the run's {what} ({lo} .. {hi} ns): other clocks, or another "
                                           "time zone (timezone= of the reader, --samples-timezone)?"))


def _add_quarantine(run: Run, q: pa.Table | None) -> None:
    """Add a reader's quarantine ``q`` (checked by :func:`_quarantine`) to ``run.quarantine``,
    after the rows there; columns of one reader and not the other are null in the other's
    rows."""
    q = None if q is None else _quarantine(q)
    if q is None:
        return
    run.quarantine = q if run.quarantine is None else pa.concat_tables([run.quarantine, q],
                                                                       promote_options="default")


def _nsys_gpu_metrics(run: Run, on_invalid: str) -> None:
    """The GPU_METRICS of the run's Nsight exports, when they have some, as its samples;
    a match that cannot be made is a warning (the trace reads without them)."""
    files = [s for s in run.metadata.get("sources", []) if os.path.isfile(s)
             and _readers_telemetry.has_gpu_metrics(s)]
    if not files:
        return
    tel = _readers_telemetry.read_nsys_gpu_metrics(files, on_invalid=on_invalid)
    try:
        attach_samples(run, tel, on_invalid=on_invalid)
    except OptionError as exc:
        run.warnings.append(RunWarning("nsys.gpu_metrics_unmatched", f"GPU_METRICS of {', '.join(files)} not "
                                       f"attached: {exc}"))


def _check_read_options(fmt: str, options: dict[str, Any], on_invalid: str) -> None:
    """:class:`OptionError` for an option the reader of ``fmt`` does not take, a
    :class:`PauError` for an ``on_invalid`` that is not one (checked before anything is
    read)."""
    accepts = {"kineto": {"rules", "threads", "align"}, "nsys": {"rules", "align"}, "mllog": {"system"},
               "pau": {"progress"}, "parquet": {"progress"}}.get(fmt, set())
    unknown = sorted(set(options) - accepts)
    if unknown:
        raise OptionError(f"read: option {', '.join(unknown)} does not apply to {fmt} input (it takes "
                       f"{', '.join(sorted(accepts)) or 'no option'})")
    check_on_invalid(on_invalid)


def _read_pau_or_parquet(p: str, fmt: str, on_invalid: str, options: dict[str, Any]) -> Run:
    """A run in pau's layout or plain Parquet events; the files of a dataset that are not
    Parquet become warnings, and with ``on_invalid="quarantine"`` the events' rows are
    checked now."""
    with _io.skipped_files() as skipped:  # files of a dataset that are not Parquet
        run = (_read_run_folder if fmt == "pau" else _read_parquet)(p, options.get("progress"))
    run.warnings.extend(skipped)
    if on_invalid == "quarantine" and run.events is not None:  # the events' rows, checked now
        run = _screened(run, p, on_invalid, lambda i: f"events row {i}")
    return run


def _read_trace_folder_skipping(p: str, fmt: str, on_invalid: str, skip_bad: tuple[type[PauError], ...],
                                align: str | None, options: dict[str, Any]) -> Run:
    """A folder of Kineto traces or Nsight exports read without the files its reader
    refuses with one of ``skip_bad``: each is left out (named in the error) and the rest
    read again, with a ``read.skipped_file`` warning and ``metadata["skipped_files"]``,
    ``["skipped_reasons"]``. The last file, or one the error does not name, re-raises."""
    reader = read_kineto if fmt == "kineto" else read_nsys
    files = (trace_files if fmt == "kineto" else nsys_files)(p)
    refused: list[tuple[str, str]] = []
    while True:  # a file the reader refuses is named in its error: leave it out and read the rest
        try:
            run = _from_trace(reader(files, on_invalid=on_invalid, **options), fmt, p, align)
        except skip_bad as exc:
            named = getattr(exc, "path", None)
            bad = named if named in files else next((f for f in files if f in str(exc)), None)
            if bad is None or len(files) == 1:
                raise
            files = [f for f in files if f != bad]
            refused.append((bad, str(exc)))
            continue
        run.warnings[:0] = [RunWarning("read.skipped_file", f"{f}: skipped (--skip-bad): {why}")
                            for f, why in refused]
        if refused:
            run.metadata["skipped_files"] = [f for f, _ in refused]
            run.metadata["skipped_reasons"] = [why for _, why in refused]
        return run


def _read_runs(path: str | os.PathLike[str], *, format: str | None = None, on_invalid: str = "raise",
               skip_bad: tuple[type[PauError], ...] = (), **options: Any) -> list[Run]:
    p = os.fspath(path)
    if not os.path.exists(p):
        raise FileNotFoundError(f"nothing at {p!r}")
    fmt = format or detect(p)
    if fmt not in FORMATS:
        raise PauError(f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    _check_read_options(fmt, options, on_invalid)
    if fmt in ("pau", "parquet"):
        return [_read_pau_or_parquet(p, fmt, on_invalid, options)]
    if fmt == "csv":
        return [_read_csv(p, on_invalid)]
    align = options.pop("align", None)
    if align is not None and align not in _align.METHODS:
        raise OptionError(f"align: expected one of {', '.join(_align.METHODS)}, got {align!r}")
    if fmt in ("kineto", "nsys"):
        if skip_bad and os.path.isdir(p):
            return [_read_trace_folder_skipping(p, fmt, on_invalid, skip_bad, align, options)]
        reader = read_kineto if fmt == "kineto" else read_nsys
        return [_from_trace(reader(p, on_invalid=on_invalid, **options), fmt, p, align)]
    if fmt == "mllog":
        return [_from_mllog(r) for r in read_mllog_runs(p, on_invalid=on_invalid, **options)]
    got_s = read_serving(p, on_invalid=on_invalid)
    return [_from_serving(got_s, p)]


def read(path: str | os.PathLike[str], *, format: str | None = None, on_invalid: str = "raise",
         **options: Any) -> Run:
    """Read any input pau knows into a :class:`Run`.

    Parameters
    ----------
    path : str or os.PathLike
        A file or folder: a PyTorch profiler (Kineto) trace or a folder of them, an
        Nsight Systems SQLite export, an MLPerf result log, serving benchmark
        results, plain Parquet events, or a run in pau's layout (``run.write``).
    format : str, optional
        One of :data:`FORMATS`; detected from the content by default.
    on_invalid : {"raise", "quarantine"}
        For readers that can set rows aside (Kineto, Nsight, MLPerf, serving): ``"quarantine"``
        keeps the usable rows and puts the others in :attr:`Run.quarantine`.
    **options
        Reader options: ``rules``, ``threads`` (Kineto), ``rules`` (Nsight),
        ``align="collectives"`` (Kineto and Nsight: every rank's clock put on the
        lowest rank's, from the collectives they share, see :mod:`pau.figures.align`; the
        offsets are in ``metadata["alignment"]``),
        ``system`` (MLPerf), ``progress`` (Parquet and pau runs: a bar or callback
        while the events are read, as in :func:`pau.core.classify_dataset`). An option that does not apply to the format is an error.
        ``samples`` (every format): hardware telemetry for the run, a file or a list
        of files (nvidia-smi CSV, dcgm-exporter scrape, Prometheus JSON, dcgmi dmon,
        amd-smi CSV, Nsight GPU_METRICS), a :class:`pau.readers.telemetry.Telemetry`
        or a samples table (see :func:`attach_samples`); ``devices``: how its devices
        map to ranks (a dict, or ``"index"``; by default by UUID, bus id, then GPU
        index, ``docs/telemetry.md``). An Nsight export with a GPU_METRICS table
        brings its samples without ``samples=``. ``skip_bad`` (a folder of Kineto
        traces or Nsight exports): a file the reader refuses is left out, with a
        ``read.skipped_file`` warning naming it and why, and the rest is read (the
        files left out and why in ``metadata["skipped_files"]``, ``["skipped_reasons"]``);
        a tuple of error classes leaves out only the files refused with one of them.

    Raises
    ------
    MultipleRunsError
        The path holds several runs (use :func:`read_runs`).
    pau.errors.PauError
        Whatever the reader refuses, naming the file and the fix.
    """
    runs = read_runs(path, format=format, on_invalid=on_invalid, **options)
    if len(runs) != 1:
        names = ", ".join(os.path.basename(str(r.metadata.get("sources", ["?"])[0])) for r in runs[:5])
        raise MultipleRunsError(f"{os.fspath(path)}: {len(runs)} runs ({names}{' ...' if len(runs) > 5 else ''}). "
                                "Fix: read one file, or pau.read_runs(path) for the list")
    return runs[0]
