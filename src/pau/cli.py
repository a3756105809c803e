"""The ``pau`` command line: it parses (``pau._args``), calls the API and writes what
the views (``pau.views.text``, ``pau.views.html``) render.

Every command reads its input through :func:`pau.read` (format detected from the
content, ``--input-format`` to override) and takes its figures from
:meth:`pau.Run.summary`, so ``report`` in every ``--format``, ``compare`` and the API
agree. Exit codes (one table, also in ``pau --help``):

====  ==========================================================================
0     done
1     bad input (a :mod:`pau.errors` exception, a missing file)
2     usage (an unknown flag, or an option that does not apply to the input)
3     a ``--gate`` failed
130   interrupted (Ctrl-C)
====  ==========================================================================
"""

from __future__ import annotations

import argparse
import datetime as _dt
import decimal
import importlib.util
import json
import math
import operator
import os
import re
import sys
from typing import Any, Callable, Mapping, Sequence, TextIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from pau.engine import _jit
from pau import core, errors, synth
from pau.errors import UsageError
from pau.views import html as html_report
from pau.figures import layers
# the outcome figures (in pau.figures.goodput, .recovery and .stragglers once the figures are split by concept)
from pau.figures.goodput import ettr, model_flops, mpg, program_goodput
from pau.figures.recovery import protection
from pau.figures.stragglers import straggler_scores
from pau.readers.mllog import mllog_files
from pau.readers.slurm import read_sacct
from pau.readers import mlperf_rules as _mlperf
from pau.readers.telemetry import read_telemetry
from pau.engine.ledger import Ledger
from pau.fleet.ingester import IngestError
from pau.views import console as _console
from pau.views import text as text_view
from pau.engine.types import Quarantined
from pau.views.chrome_trace import write_chrome_trace
from pau.views import fleet_html, fleet_text, openmetrics
from pau._args import BUILTIN as _BUILTIN
from pau._args import EXIT_BAD_INPUT, EXIT_GATE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, parser
from pau.run import Run, detect, read_runs, run_figures
















































# ---------------------------------------------------------------------------
# gates: `--gate ledger.goodput>=0.45`

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq}
_GATE = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(>=|<=|==|>|<)\s*(-?[0-9][0-9_.eE+\-]*)\s*$")


def check_gates(gates: Sequence[str], figures: Mapping[str, Any]) -> list[str]:
    """The gates that fail, each with its figure; a null or missing figure fails."""
    values = dict(text_view.flatten(figures))
    failed = []
    for g in gates:
        m = _GATE.match(g)
        if m is None:
            raise UsageError(f"--gate {g!r}: expected METRIC OP NUMBER, e.g. ledger.goodput>=0.45 "
                             f"(OP one of {', '.join(_OPS)})")
        name, op, number = m.group(1), m.group(2), float(m.group(3))
        key = name if name in values else next((k for k in values if k.endswith("." + name)), None)
        if key is None:
            raise UsageError(f"--gate {g!r}: no figure {name!r} in this report (see --format json)")
        v = values[key]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or (isinstance(v, float) and math.isnan(v)):
            failed.append(f"{g}: {key} is {v!r}, not a number")
        elif not _OPS[op](v, number):
            failed.append(f"{g}: {key} = {v!r}")
    return failed


# ---------------------------------------------------------------------------
# commands


def _status(flag: bool | None) -> _console.Status | None:
    """What stderr shows while the input is read (:class:`pau.views.console.Status`):
    ``--progress`` always (a terminal or not), ``--no-progress`` never; by default when
    stderr is a terminal and not with ``-q``."""
    if flag is False or (flag is None and _VERBOSITY["level"] < 0):
        return None
    status = _console.Status(sys.stderr, force=bool(flag))
    return status if status.active else None


def _read(path: str, fmt: str | None, args: argparse.Namespace) -> list[Run]:
    options: dict[str, Any] = {}
    status = _status(getattr(args, "progress", None))
    kind = (fmt or detect(path)) if os.path.exists(path) else None
    # the row-group bar while events are read applies to Parquet and pau runs only
    if kind in ("parquet", "pau"):
        options["progress"] = False if status is None else status
    if getattr(args, "align", None):
        options["align"] = args.align
    if getattr(args, "skip_bad", False):
        options["skip_bad"] = True
    reader = _telemetry_options(args)
    if getattr(args, "samples", None):
        files = args.samples if len(args.samples) > 1 else args.samples[0]
        # with reader options, the telemetry is read here and handed over (pau.read takes a Telemetry)
        options["samples"] = files if reader is None else read_telemetry(
            files, on_invalid=getattr(args, "on_invalid", "raise"), **reader)
        if args.devices:
            options["devices"] = parse_devices(args.devices)
    elif getattr(args, "devices", None):
        raise UsageError("--devices maps the devices of --samples to ranks; give --samples too")
    elif reader is not None:
        raise UsageError("--samples-format, --samples-columns, --samples-timezone and --samples-time say how to read "
                         "--samples; give --samples too")
    on_invalid = getattr(args, "on_invalid", "raise")
    if status is None:
        return read_runs(path, format=fmt, on_invalid=on_invalid, **options)
    try:
        status.reading(path)
        if kind == "mllog" and os.path.isdir(path) and "samples" not in options:
            # a folder of result logs, one run each: read file by file, counting files
            files = mllog_files(path)
            runs: list[Run] = []
            for i, f in enumerate(files):
                runs += read_runs(f, format="mllog", on_invalid=on_invalid, **options)
                status.file_done(i + 1, len(files), f)
            return runs
        return read_runs(path, format=fmt, on_invalid=on_invalid, **options)
    finally:
        status.close()


def _telemetry_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The telemetry reader's options from ``--samples-format``, ``--samples-columns``,
    ``--samples-timezone`` and ``--samples-time`` (``pau.readers.telemetry.read_telemetry``:
    ``format``, ``columns``, ``timezone``, ``time_ns``); None when none is given. A
    format is implied by the options only nvidia-smi (columns, timezone) or
    dcgm-exporter (time) take."""
    fmt = getattr(args, "samples_format", None)
    cols, tz, when = (getattr(args, k, None) for k in ("samples_columns", "samples_timezone", "samples_time"))
    if fmt is None and cols is None and tz is None and when is None:
        return None
    out: dict[str, Any] = {}
    if cols is not None:
        out["columns"] = parse_columns(cols)
    if tz is not None:
        out["timezone"] = tz
    if when is not None:
        out["time_ns"] = parse_time_ns(when)
    implied = "nvidia_smi" if ("columns" in out or "timezone" in out) else "dcgm_exporter" if "time_ns" in out else None
    if fmt is None:
        fmt = implied
    out["format"] = fmt
    return out


def parse_columns(text: str) -> list[str] | dict[str, str]:
    """``--samples-columns``: ``HEADER=FIELD,...`` (a dict) or ``FIELD,...`` (a list, for
    a log written with ``noheader``)."""
    items = [x.strip() for x in text.split(",")]
    if not all(items):
        raise UsageError(f"--samples-columns {text!r}: an empty name; give HEADER=FIELD,... or FIELD,...")
    if any("=" in x for x in items):
        if not all("=" in x for x in items):
            raise UsageError(f"--samples-columns {text!r}: give every column as HEADER=FIELD, or none (FIELD,... "
                             "in the order of a noheader log)")
        pairs = [(h.strip(), f.strip()) for h, f in (x.split("=", 1) for x in items)]
        out: dict[str, str] = dict(pairs)
        if len(out) != len(pairs):
            raise UsageError(f"--samples-columns {text!r}: a header given twice")
        return out
    return items


def parse_time_ns(text: str, option: str = "--samples-time") -> int:
    """An instant given on the command line (``--samples-time``, ``--origin``): int ns since
    the epoch, or an ISO-8601 time with its zone (exact to the microsecond, the most
    ``datetime`` holds)."""
    t = text.strip()
    if t.lstrip("-").isdigit():
        return int(t)
    try:
        when = _dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise UsageError(f"{option} {text}: give ns since the epoch or an ISO-8601 time with its zone, "
                         "e.g. 2025-06-13T00:27:52Z")
    delta = when - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1_000


def parse_devices(text: str) -> str | dict[str, int]:
    """``--devices index`` or ``--devices DEVICE=RANK,...`` (a device named by its
    index, UUID or bus id, as the telemetry names it; docs/telemetry.md)."""
    if text.strip() == "index":
        return "index"
    out: dict[str, int] = {}
    for item in text.split(","):
        dev, eq, rank = item.strip().rpartition("=")
        if not eq or not dev or not rank.strip().lstrip("-").isdigit():
            raise UsageError(f"--devices {text!r}: expected 'index' or DEVICE=RANK,... (e.g. 0=0,1=1 or "
                             "GPU-5c7f...=3)")
        if dev in out:
            raise UsageError(f"--devices: device {dev!r} given twice")
        out[dev] = int(rank)
    return out


def _builtin(args: argparse.Namespace) -> tuple[Run, str]:
    o = {k: (_BUILTIN[k] if getattr(args, k) is None else getattr(args, k)) for k in _BUILTIN}
    job = synth.training_job(ranks=o["ranks"], steps=o["steps"], seed=o["seed"], mtbf_s=150.0,
                             checkpoint_every=50, kernels_per_step=24,
                             straggler=(o["straggler"], 1.25) if o["straggler"] >= 0 else None)
    assert job.events is not None  # built with events
    title = (f"pau report: built-in synthetic run ({o['ranks']} ranks, {o['steps']} steps, "
             f"seed {o['seed']}, {job.events.num_rows:,} events, failures at a 150 s MTBF"
             + (f", straggler rank {o['straggler']} x1.25)" if o["straggler"] >= 0 else ")"))
    run = Run(events=job.events, lifecycle=job.lifecycle,
              metadata={"format": "synthetic", "sources": [], "assumed": [], "options": o})
    return run, title


def _with_lifecycle(run: Run, path: str) -> Run:
    """``--lifecycle FILE``: a lifecycle for a run that has none, whose ranks must be
    the events' ranks."""
    if run.lifecycle is not None:
        raise UsageError(f"--lifecycle {path}: the input has a lifecycle of its own "
                         f"({text_view.count(run.lifecycle.num_rows, 'record')}); drop --lifecycle")
    if run.events is None:
        raise UsageError(f"--lifecycle {path}: the input has no device events to cross it with. Fix: "
                         "report the lifecycle alone: a folder holding it as lifecycle.parquet is a run "
                         "(pau report FOLDER)")
    lc = pq.read_table(path)
    ev_ranks = set(np.unique(np.asarray(run.events["rank"])).tolist())
    lc_rank = np.asarray(lc["rank"].fill_null(-1)) if "rank" in lc.column_names else np.empty(0, np.int64)
    lc_ranks = set(np.unique(lc_rank[lc_rank >= 0]).tolist())
    if not lc_ranks:
        raise errors.PauError(f"--lifecycle {path}: no record names a rank (accountable records name "
                              "the ranks); fix the lifecycle")
    if ev_ranks - lc_ranks:
        missing = sorted(ev_ranks - lc_ranks)
        raise errors.PauError(
            f"--lifecycle {path}: ranks {_ranks(missing)} have events but no record in the lifecycle "
            f"(which names ranks {_ranks(sorted(lc_ranks))}). Fix: give the lifecycle of this run")
    return Run(events=run.events, lifecycle=lc, spans=run.spans, requests=run.requests, samples=run.samples,
               metadata={**run.metadata, "lifecycle_source": path}, warnings=list(run.warnings),
               quarantine=run.quarantine)


def _ranks(ranks: list[int]) -> str:
    shown = ", ".join(map(str, ranks[:10]))
    return shown + (f" ... ({len(ranks)} in all)" if len(ranks) > 10 else "")


#: -q: no warnings on stderr (errors still); -v: also what was read.
_VERBOSITY = {"level": 0}


def _note(text: str, level: int = 0) -> None:
    """A line on stderr at this verbosity: 0 warnings and notes (not with -q), 1 with -v."""
    if _VERBOSITY["level"] >= level:
        print(f"pau: {text}", file=sys.stderr)


def _warn(run: Run, err: TextIO) -> None:
    if _VERBOSITY["level"] >= 1:
        src = ", ".join(str(x) for x in run.metadata.get("sources", [])[:3])
        rows = ", ".join(f"{n} {getattr(run, n).num_rows:,}" for n in run.tables())
        print(f"pau: read {run.metadata.get('format')} ({src}): {rows or 'no table'}", file=err)
    if _VERBOSITY["level"] < 0:
        return
    for w in run.warnings:
        print(f"pau: warning: {w.code}: {_cli_words(w.message)}", file=err)


def _cli_words(message: str) -> str:
    """The API's advice in the command line's words."""
    for api, cli in (("pass on_invalid='quarantine'", "give --on-invalid quarantine"),
                     ("on_invalid='quarantine'", "--on-invalid quarantine"),
                     ("pass time_ns= (the scrape's time, ns since the epoch)",
                      "give --samples-time (the scrape's time: ns since the epoch, or ISO-8601 with its zone)"),
                     ("pass timezone=", "give --samples-timezone"), ("timezone= of the reader, ", ""),
                     ("pass the format (and, for a CSV under other headers, columns=)",
                      "give --samples-format (and, for a CSV under other headers, --samples-columns)"),
                     ("map the column that holds it with columns=", "map the column that holds it with --samples-columns"),
                     ("(columns= maps a header to it)", "(--samples-columns maps a header to it)"),
                     ("read with align='collectives' (pau report --align collectives)", "give --align collectives")):
        message = message.replace(api, cli)
    return message


def _emit(text: str, out: str) -> None:
    if out == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        with open(out, "w") as f:
            f.write(text if text.endswith("\n") else text + "\n")


def _write_table(table: pa.Table, path: str) -> None:
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    if ext == "parquet":
        pq.write_table(table, path)
    elif ext == "csv":
        plain = pa.table({n: (c.cast(pa.string()) if pa.types.is_dictionary(c.type) else c)
                          for n, c in zip(table.column_names, table.columns)})
        pcsv.write_csv(plain, path)
    elif ext == "json":
        with open(path, "w") as f:
            json.dump(table.to_pylist(), f, indent=1)
            f.write("\n")
    else:
        raise UsageError(f"--ledger {path!r}: unknown file type {ext!r}; use .parquet, .csv or .json")


_SLO_NAMES = ("ttft", "tpot", "e2e")


#: Units ``--slo`` takes after a number (seconds when none is given), in ns.
_SLO_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9, "min": 60 * 10**9}
_SLO_VALUE = re.compile(r"^([0-9.eE+\-]+)\s*(ns|us|µs|ms|s|min)?$")


def parse_slo(items: Sequence[str]) -> dict[str, int]:
    """``["ttft=0.5", "e2e=30s", "tpot=40ms"]`` -> ``{"ttft": 500000000, "e2e":
    30000000000, "tpot": 40000000}`` (ns, exact: the number is read as a decimal in its
    unit, seconds by default, rounded half away from zero)."""
    out: dict[str, int] = {}
    for item in items:
        name, eq, value = item.partition("=")
        name = name.strip().lower()
        m = _SLO_VALUE.match(value.strip())
        try:
            num: decimal.Decimal | None = decimal.Decimal(m.group(1)) if m else None
        except decimal.InvalidOperation:
            num = None
        if not eq or name not in _SLO_NAMES or m is None or num is None or not num.is_finite() or num < 0:
            raise UsageError(f"--slo {item!r}: expected NAME=VALUE with NAME one of {', '.join(_SLO_NAMES)} "
                             f"and VALUE >= 0 in seconds or with a unit ({', '.join(_SLO_UNITS)}), e.g. ttft=0.5 "
                             "or tpot=40ms")
        if name in out:
            raise UsageError(f"--slo {name} given twice")
        out[name] = int((num * _SLO_UNITS[m.group(2) or "s"]).to_integral_value(rounding=decimal.ROUND_HALF_UP))
    return out


def _report_figures(run: Run, args: argparse.Namespace) -> tuple[dict[str, Any], Ledger | None]:
    """The run's summary plus what the report's options add, each through the API's
    function (one figure, one path): ``cost`` (:func:`pau.core.cost`), ``overlap``
    (:func:`pau.core.overlap`), and for a lifecycle ``checkpoint_advice``
    (:func:`pau.core.checkpoint_advice`), ``straggler_scores``, ``mpg``, ``ettr``,
    ``program_goodput`` (MFU, HFU) and ``protection`` (docs/outcome.md)."""
    has_ledger = run.events is not None or run.lifecycle is not None
    _check_report_options(run, args, has_ledger)
    slo = parse_slo(args.slo or [])
    if slo and run.requests is None:
        raise UsageError("--slo applies to serving requests, and this input has none")
    led = run.ledger(as_of=args.as_of) if has_ledger else None
    # the run's summary as a plain dict (the report adds its sections to it)
    figures: dict[str, Any] = dict(run_figures(run, as_of=args.as_of, slo=slo or None, ledger=led))
    if run.events is not None:
        figures["overlap"] = _overlap_figures(core.overlap(run.events, span=run.spans if run.lifecycle is None
                                                           else None))
    if args.price is not None:
        figures["cost"] = _cost(run, led, args, slo)
    stack = (args.schedule, args.flops_per_step, args.peak_flops, args.accelerator)
    lifecycle_ledger = led is not None and led.intervals is not None
    _check_training_options(args, stack, lifecycle_ledger)
    if lifecycle_ledger:
        assert led is not None
        schedule = None
        if args.schedule is not None:
            got = read_sacct(args.schedule)
            schedule = got.result if isinstance(got, Quarantined) else got
        if any(x is not None for x in stack) or args.price is not None:
            figures["layers"] = layers.layers(
                led, samples=run.samples, events=run.events, schedule=schedule, flops=args.flops_per_step,
                accelerator=args.accelerator, dtype=args.dtype, peak=args.peak_flops,
                price_per_accelerator_hour=args.price).summary()
        figures.update(_outcome_figures(run, led, args, schedule))
    return figures, led


def _check_report_options(run: Run, args: argparse.Namespace, has_ledger: bool) -> None:
    """Refuse ``pau report``'s options that do not apply to the input (never ignored)."""
    if args.as_of is not None and run.lifecycle is None:
        raise UsageError("--as-of applies to a lifecycle, and this input has none")
    if args.price is not None and run.lifecycle is None and run.requests is None:
        raise UsageError("--price gives cost per useful output: per preserved step of a lifecycle, or per accepted "
                         "request of a serving benchmark, and this input has neither. Fix: give --lifecycle FILE "
                         "(its steps) with these events")
    if args.accelerator_count is not None and (run.requests is None or args.price is None):
        raise UsageError("--accelerator-count bills a serving benchmark's window (with --price); this input has no "
                         "serving requests" if run.requests is None else "--accelerator-count goes with --price")
    if args.power is not None and args.price is None:
        raise UsageError("--power adds energy to the cost section: give --price too")
    if args.ledger is not None and not has_ledger:
        raise UsageError("--ledger: this input has no events or lifecycle, so no ledger table")


def _check_training_options(args: argparse.Namespace, stack: tuple[Any, ...], lifecycle_ledger: bool) -> None:
    """Refuse the layers' and outcome figures' options without a lifecycle ledger, or
    without what they go with."""
    if any(x is not None for x in stack) or args.hardware_flops_per_step is not None \
            or args.protection_bound is not None:
        if not lifecycle_ledger:
            raise UsageError("--schedule, --flops-per-step, --hardware-flops-per-step, --peak-flops, --accelerator and "
                             "--protection-bound apply to the lifecycle of a training run, and this input has none")
        if args.flops_per_step is not None and args.peak_flops is None and args.accelerator is None:
            raise UsageError("--flops-per-step needs the peak it is measured against: --peak-flops F, or "
                             "--accelerator NAME --dtype TYPE (docs/outcome.md)")
        if args.hardware_flops_per_step is not None and args.flops_per_step is None:
            raise UsageError("--hardware-flops-per-step goes with --flops-per-step (HFU beside MFU)")


def _overlap_figures(ov: core.Overlap) -> dict[str, Any]:
    """``overlap``: per rank and for the job, all communication (exposed or hidden
    under compute), the part under compute and their ratio (:func:`pau.core.overlap`'s
    ``ratio`` table; the job's figures are its sums, exact ns)."""
    rows = [{"rank": r["rank"], "communication_ns": r["communication_ns"], "overlap_ns": r["overlap_ns"],
             "ratio": r["ratio"]} for r in ov.ratio.to_pylist()]
    comm = sum(r["communication_ns"] for r in rows)
    both = sum(r["overlap_ns"] for r in rows)
    return {"communication_ns": comm, "overlap_ns": both, "exposed_ns": comm - both,
            "ratio": both / comm if comm else None, "per_rank": rows}


def _power(run: Run, args: argparse.Namespace) -> pa.Table | None:
    """The power samples of the cost section: ``--power``, else the ``power_w`` samples
    of ``--samples`` (``rank, time_ns, watts``), else None."""
    if args.power is not None:
        return pq.read_table(args.power)
    if run.samples is None:
        return None
    s = run.samples
    pw = s.filter(pc.equal(s["metric"].cast(pa.string()), "power_w"))
    if not pw.num_rows:
        return None
    return pa.table({"rank": pw["rank"], "time_ns": pw["time_ns"], "watts": pw["value"]})


def _cost(run: Run, led: Ledger | None, args: argparse.Namespace, slo: dict[str, int]) -> core.LedgerCost | core.RequestCost:
    """``--price``: :func:`pau.core.cost` of the lifecycle ledger (per preserved step,
    energy from ``--power`` or the samples' power), or of the serving requests (per
    accepted request; billed time ``--accelerator-count`` x the window)."""
    prices: dict[str, Any] = {"per_accelerator_hour": args.price}
    if run.lifecycle is not None:
        assert led is not None
        return core.cost(led, prices, power=_power(run, args))
    if args.power is not None:
        raise UsageError("--power integrates power over a lifecycle ledger's states; a serving benchmark holds "
                         "no busy intervals to integrate it over")
    if args.accelerator_count is None:
        raise UsageError("--price on a serving benchmark bills its accelerators over the benchmark window. Fix: "
                         "give --accelerator-count N (the accelerators the server ran on)")
    if args.accelerator_count < 1:
        raise UsageError(f"--accelerator-count {args.accelerator_count}: give a number >= 1")
    prices["accelerators"] = args.accelerator_count
    return core.cost(core.requests(run.requests, slo=slo or None), prices)


def _outcome_figures(run: Run, led: Ledger, args: argparse.Namespace, schedule: Any) -> dict[str, Any]:
    """The outcome figures of a lifecycle ledger, each the summary of its API function:
    checkpoint advice (Young, Daly), NVRx straggler scores, MPG and its factors, ETTR
    (with --schedule), MFU and HFU (with --flops-per-step) and progress protection
    (with --protection-bound). Of a lifecycle of many jobs, each is left out (None) with a
    warning: they are figures of one job (:class:`pau.errors.ManyJobsError`)."""
    try:
        return _one_job_outcome_figures(run, led, args, schedule)
    except errors.ManyJobsError as exc:
        _note(f"warning: figures.many_jobs: checkpoint advice, straggler scores, MPG, ETTR, MFU/HFU and "
              f"progress protection left out (figures of one job): {_cli_words(str(exc))}")
        return {**dict.fromkeys(("checkpoint_advice", "straggler_scores", "mpg", "ettr", "program_goodput",
                                 "protection")), "outcome_left_out": "figures of one job; the lifecycle holds many"}


def _one_job_outcome_figures(run: Run, led: Ledger, args: argparse.Namespace, schedule: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"checkpoint_advice": core.checkpoint_advice(led)}
    steps = run.lifecycle is not None and run.lifecycle.num_rows and _has_steps(run.lifecycle)
    scores = straggler_scores(run.lifecycle) if steps else None
    out["straggler_scores"] = None if scores is None else scores.summary()  # type: ignore[union-attr]
    flops: Any = None
    if args.flops_per_step is not None:
        flops = model_flops(per_step=args.flops_per_step, hardware_per_step=args.hardware_flops_per_step)
    peak = dict(accelerator=args.accelerator, dtype=args.dtype, peak=args.peak_flops)
    out["mpg"] = mpg(led, schedule, flops=flops, **peak).summary()
    out["ettr"] = None if schedule is None else ettr(led, schedule).summary()
    out["program_goodput"] = None if flops is None else program_goodput(led, flops, **peak).summary()
    out["protection"] = (None if args.protection_bound is None else
                         protection(led, bound_share=args.protection_bound,
                                    price_per_accelerator_hour=args.price).summary())
    return out


def _has_steps(lifecycle: pa.Table) -> bool:
    """Whether a lifecycle holds step records of ranks of their own (the straggler
    scores' input: a rank -1 step says nothing about one rank's pace)."""
    st = lifecycle.filter(pc.equal(lifecycle["record"].cast(pa.string()), "step"))
    return st.num_rows > 0 and st["rank"].null_count == 0 and bool(pc.all(pc.greater_equal(st["rank"], 0)).as_py())


def _report(args: argparse.Namespace) -> int:
    runs, title = _report_runs(args)
    for run in runs:
        _warn(run, sys.stderr)
    if len(runs) != 1:
        if args.price is not None or args.power or args.ledger or args.as_of is not None:
            raise UsageError(f"--price, --power, --ledger and --as-of apply to one run; {args.path} holds "
                             f"{len(runs)} (report one file)")
        rows = [(r, r.summary()) for r in runs]
        figures: Any = {"runs": [f for _, f in rows]}
        text = text_view.render_runs(rows, title, args.path)
    else:
        run = runs[0]
        figures, led = _report_figures(run, args)
        table = None if led is None else led.table
        text = text_view.render(run, figures, table, title=title, price=args.price)
        outside = figures["events_outside_accountable"]
        if outside and outside["events"]:
            _note(f"warning: events_outside_accountable: {text_view.count(outside['events'], 'event')} "
                  f"({outside['ns']:,} ns) lie outside the accountable time of ranks "
                  f"{_ranks(outside['ranks'])}; the ledger does not count them")
        if args.ledger:
            assert table is not None  # --ledger without a ledger is refused by _report_figures
            _write_table(table, args.ledger)
            _note(f"ledger written to {args.ledger} ({text_view.count(table.num_rows, 'row')})")
    if args.format == "json":
        _emit(text_view.to_json(figures), args.output)
    elif args.format in ("csv", "html") and "runs" in figures:
        raise UsageError(f"--format {args.format} shows one run; use --format json for several")
    elif args.format == "csv":
        _emit(text_view.render_csv(figures), args.output)
    elif args.format == "html":
        rl = None if run.requests is None else core.requests(run.requests, slo=parse_slo(args.slo or []) or None)
        _emit(html_report.render(run, figures, led, title=title, price=args.price, requests=rl), args.output)
    else:
        _emit(text, args.output)
    failed = check_gates(args.gate or [], figures if "runs" not in figures else {})
    for f in failed:
        print(f"pau: gate failed: {f}", file=sys.stderr)
    return EXIT_GATE if failed else EXIT_OK


def _report_runs(args: argparse.Namespace) -> tuple[list[Run], str]:
    """``pau report``'s runs (the built-in one, or those of PATH) and its title; options
    that do not apply to them are refused."""
    if args.path is None:
        if args.input_format or args.lifecycle:
            raise UsageError("--input-format and --lifecycle apply to a PATH; the built-in run has its own")
        given = [f"--{k.replace('_', '-')}" for k in ("samples", "devices", "samples_format", "samples_columns",
                                                        "samples_timezone", "samples_time") if getattr(args, k)]
        if given:
            raise UsageError(f"{', '.join(given)} add telemetry to a PATH's run; the built-in run has none. "
                             "Fix: give the run's PATH")
        run, title = _builtin(args)
        runs = [run]
    else:
        given = [f"--{k}" for k in _BUILTIN if getattr(args, k) is not None]
        if given:
            raise UsageError(f"{', '.join(given)} set the built-in run and do not apply to {args.path}")
        runs = _read(args.path, args.input_format, args)
        title = f"pau report: {args.path} ({runs[0].metadata.get('format') or 'pau'})" if runs else ""
        if args.lifecycle:
            if len(runs) != 1:
                raise UsageError("--lifecycle applies to one run; the path holds several")
            runs = [_with_lifecycle(runs[0], args.lifecycle)]
    return runs, title


def _convert(args: argparse.Namespace) -> int:
    """Write a run in pau's layout (pau.read of the folder gives back an equal run), or
    with ``--to chrome-trace`` its ledger as tracks beside its device events."""
    if args.to == "chrome-trace":
        return _convert_chrome_trace(args)
    runs = _read(args.path, args.input_format, args)
    for run in runs:
        _warn(run, sys.stderr)
    if len(runs) == 1:
        out = runs[0].write(args.out, overwrite=args.overwrite)
        written = [f"{n} ({text_view.count(getattr(runs[0], n).num_rows, 'row')})" for n in runs[0].tables()]
        print(f"pau convert: {args.path} ({runs[0].metadata.get('format')}) -> {out}: {', '.join(written)}")
        return EXIT_OK
    # several runs (a folder of MLPerf logs): one run folder each, named after its source
    if os.path.isdir(args.out) and os.listdir(args.out) and not args.overwrite:
        raise errors.PauError(f"{args.out!r} exists and is not empty. Fix: pass --overwrite or another folder")
    os.makedirs(args.out, exist_ok=True)
    for i, run in enumerate(runs):
        src = os.path.splitext(os.path.basename(str(run.metadata.get("sources", [f"run{i}"])[0])))[0]
        run.write(os.path.join(args.out, f"{i:04d}-{src}"), overwrite=args.overwrite)
    print(f"pau convert: {args.path} -> {args.out}: {len(runs)} runs (one folder each)")
    return EXIT_OK


def _convert_chrome_trace(args: argparse.Namespace) -> int:
    """``pau convert IN OUT --to chrome-trace``: one JSON file (``.gz``: compressed)."""
    out = args.out
    if os.path.isdir(out):
        raise UsageError(f"--to chrome-trace writes a file and {out!r} is a folder: give a file name, e.g. trace.json")
    if os.path.exists(out) and not args.overwrite:
        raise errors.PauError(f"{out!r} exists. Fix: pass --overwrite or another file name")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise errors.PauError(f"{out!r}: no folder {parent!r}. Fix: create it, or write elsewhere")
    runs = _read(args.path, args.input_format, args)
    if len(runs) != 1:
        raise UsageError(f"--to chrome-trace writes one run; {args.path} holds {len(runs)} (convert one file)")
    run = runs[0]
    _warn(run, sys.stderr)
    doc_path = write_chrome_trace(run, out, overwrite=args.overwrite)
    events = 0 if run.events is None else run.events.num_rows
    print(f"pau convert: {args.path} ({run.metadata.get('format')}) -> {doc_path}: Chrome trace, "
          f"{events:,} device events beside the ledger's tracks (open in https://ui.perfetto.dev or chrome://tracing)")
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    if args.kernels < 0:
        raise UsageError(f"--kernels {args.kernels}: give a number of rows >= 0")
    sides = []
    for path, fmt in ((args.a, args.input_format_a), (args.b, args.input_format_b)):
        runs = _read(path, fmt, args)
        if len(runs) != 1:
            raise UsageError(f"pau compare: {path} holds {len(runs)} runs; compare two single runs")
        _warn(runs[0], sys.stderr)
        sides.append(runs[0])
    if (args.price_a is None) != (args.price_b is None):
        raise UsageError("--price-a and --price-b go together")
    pa_ = {"per_accelerator_hour": args.price_a} if args.price_a is not None else None
    pb_ = {"per_accelerator_hour": args.price_b} if args.price_b is not None else None
    labels = parse_labels(args.labels, args.a, args.b)
    mlperf = None
    if all(r.metadata.get("format") == "mllog" for r in sides):
        # MLPerf's useful output is a trained model (blocks hold unequal samples across submissions)
        leds = [r.ledger() for r in sides]
        cmp = core.compare(leds[0], leds[1], prices_a=pa_, prices_b=pb_, labels=labels)
        mlperf = {"a": _mlperf.time_per_trained_model(leds[0].summary(), sides[0].metadata),
                  "b": _mlperf.time_per_trained_model(leds[1].summary(), sides[1].metadata)}
    else:
        cmp = core.compare(sides[0], sides[1], prices_a=pa_, prices_b=pb_, labels=labels)
    if args.format == "json":  # every row of the kernel diff (a file for tools)
        _emit(text_view.to_json({**cmp.summary(), **({"mlperf": mlperf} if mlperf else {})}), args.output)
    elif args.format == "csv":
        _emit(text_view.render_compare_csv(cmp, mlperf), args.output)
    elif args.format == "html":
        _emit(html_report.render_compare(cmp, title=f"pau compare: {labels[0]} ({args.a}) against {labels[1]} ({args.b})",
                                         kernels=max(args.kernels, 30), mlperf=mlperf), args.output)
    else:
        _emit(text_view.render_compare(cmp, kernels=args.kernels, mlperf=mlperf), args.output)
    return EXIT_OK






def parse_labels(text: str | None, a: str, b: str) -> tuple[str, str]:
    """``--labels A,B``, or by default the two paths' last parts: as many as tell them
    apart (``run1/trace`` and ``run2/trace``), the whole paths when nothing else does."""
    if text is not None:
        got = [x.strip() for x in text.split(",")]
        if len(got) != 2 or not all(got) or got[0] == got[1]:
            raise UsageError(f"--labels {text!r}: give two different names, A,B (e.g. --labels before,after)")
        return got[0], got[1]
    pa_, pb_ = (os.path.normpath(x).split(os.sep) for x in (a, b))
    for k in range(1, max(len(pa_), len(pb_)) + 1):
        la, lb = "/".join(pa_[-k:]), "/".join(pb_[-k:])
        if la != lb:
            return la, lb
    return a, b


def _check_output(args: argparse.Namespace) -> None:
    """Before any work: the report's output can be written, and an HTML report has
    its plotting library."""
    out = getattr(args, "output", "-")
    if out != "-":
        folder = os.path.dirname(os.path.abspath(out))
        if os.path.isdir(out):
            raise UsageError(f"-o {out}: is a folder; give a file name")
        if not os.path.isdir(folder):
            raise UsageError(f"-o {out}: the folder {folder} does not exist")
        if not os.access(folder, os.W_OK) or (os.path.exists(out) and not os.access(out, os.W_OK)):
            raise UsageError(f"-o {out}: not writable")
    if getattr(args, "format", None) == "html" and importlib.util.find_spec("matplotlib") is None:
        raise UsageError("--format html draws its plots with matplotlib, which is not installed. "
                         "Fix: pip install 'pau[report]'")


def _origin_ns(text: str | None) -> int | None:
    """``--origin``: ns since the epoch, or an ISO 8601 time with a zone (Z or +hh:mm)."""
    return None if text is None else parse_time_ns(text, "--origin")


def _ingest(args: argparse.Namespace) -> int:
    """``pau ingest SOURCE... -o FLEET``: :func:`pau.core.ingest`, a summary line on stderr."""
    labels: list[Any] = [] if args.labels is None else [args.labels]
    static = {}
    for item in args.label or []:
        k, eq, v = item.partition("=")
        if not eq or not k.strip():
            raise UsageError(f"--label {item}: expected KEY=VALUE")
        static[k.strip()] = v
    labels.append(static)
    client = None
    if args.dask:
        if importlib.util.find_spec("distributed") is None:
            raise UsageError("--dask runs on a Dask cluster, and dask.distributed is not installed. Fix: pip install "
                             "'pau[dask]'")
        from distributed import Client  # the optional extra

        client = Client(args.dask)  # type: ignore[no-untyped-call, unused-ignore]
    status = _status(args.progress)

    def progress(p: Any) -> None:  # sources done of those found so far
        assert status is not None
        status.file_done(p.partitions_done, p.partitions_total, f"{p.rows_done:,} runs added")

    try:
        res = core.ingest(args.sources, args.fleet, labels=labels, workers=args.workers, client=client,
                          skip_bad=args.skip_bad, progress=False if status is None else progress,
                          cluster=args.cluster, tz=args.tz, origin_ns=_origin_ns(args.origin))
    except IngestError as exc:  # in the command line's words
        raise errors.PauError(str(exc).replace("pass skip_bad=True (pau ingest --skip-bad)",
                                               "give --skip-bad")) from None
    finally:
        if status is not None:
            status.close()
        if client is not None:
            client.close()  # type: ignore[no-untyped-call, unused-ignore]
    jobs = (f"{res.jobs:,} jobs added from {res.job_sources:,} sources of scheduler records ({res.jobs_warned:,} "
            "with warnings: the jobs files' metadata), " if res.job_sources else "")
    _note(f"{args.fleet}: {jobs}{res.added:,} runs added ({res.warned:,} with warnings: the runs table's warnings "
          "column), "
          f"{res.present:,} already there, {res.refused:,} refused, {res.passed_over:,} files of no format pau reads "
          "(the refusals table lists both; -v prints it)")
    if _VERBOSITY["level"] >= 1:
        refusals = core.read_fleet(args.fleet).refusals.sort_by("source")
        for src, fmt, why in zip(*(refusals[c].to_pylist() for c in ("source", "format", "reason"))):
            _note(f"{'refused' if fmt else 'passed over'}: {src} ({fmt or 'no format'}): {_cli_words(why)}", 1)
    return EXIT_OK


def _fleet(args: argparse.Namespace) -> int:
    """``pau fleet FLEET``: :meth:`pau.fleet.Fleet.rollup` in text, json, csv, html or openmetrics."""
    fleet = core.read_fleet(args.fleet)
    by = [k.strip() for k in args.by.split(",") if k.strip()]
    r = fleet.rollup(by=by, every=args.every, since=args.since, until=args.until, where=args.where,
                     cost_model=args.cost_model, tz=args.tz)
    for w in r.warnings:
        _note(f"warning: {w}")
    figures = fleet_text.figures(r)
    if args.format == "json":
        text = json.dumps(figures, indent=1, allow_nan=False)
    elif args.format == "csv":
        sink = pa.BufferOutputStream()
        pcsv.write_csv(r.table, sink)
        text = sink.getvalue().to_pybytes().decode()
    elif args.format == "openmetrics":
        text = openmetrics.render(r, id_labels=args.id_labels)
    elif args.format == "html":
        text = fleet_html.render(r, title=f"pau fleet: {os.path.basename(os.path.abspath(args.fleet))}")
    else:
        text = fleet_text.render(r)
    _emit(text, args.output)
    failed = check_gates(args.gate or [], {k: figures[k] for k in ("total", "last_period") if figures[k]})
    for f in failed:
        print(f"pau: gate failed: {f}", file=sys.stderr)
    return EXIT_GATE if failed else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """``pau`` with these arguments (``sys.argv[1:]`` by default): the exit code."""
    return run(parser().parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Carry out a parsed command line (:func:`pau._args.parser`): the exit code."""
    _VERBOSITY["level"] = -1 if args.quiet else min(args.verbose, 1)
    if args.quiet:
        _jit.silence()  # nor the one line of a first compile
    try:
        _check_output(args)
        if args.command == "compare":
            return _compare(args)
        if args.command == "ingest":
            return _ingest(args)
        if args.command == "fleet":
            return _fleet(args)
        return _convert(args) if args.command == "convert" else _report(args)
    except (UsageError, errors.OptionError) as exc:
        print(f"pau: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (errors.PauError, FileNotFoundError) as exc:
        print(f"pau: {_cli_words(str(exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except errors.Interrupted as exc:  # Ctrl-C: say what was kept
        print(f"\npau: {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("\npau: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `pau report | head`: the reader left; not an error
        sys.stderr.close()
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
