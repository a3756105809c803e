"""The command line's parser, light enough that ``pau --help`` and ``pau --version``
answer without importing numpy, pyarrow or Numba.

``pau`` (the console script) runs :func:`main`: it parses the arguments here, and only a
command that does work imports :mod:`pau.cli`, which carries it out. That import is
dynamic (``importlib.import_module``), one of the two places in pau allowed one
(``tests/test_layout.py`` lists them): a start-up that loads nothing it does not need is
the reason.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Sequence

from pau import _core
from pau.engine._names import ALIGN_METHODS, INPUT_FORMATS, TOP_KERNELS

#: The telemetry formats ``--samples-format`` takes (``pau.readers.telemetry.FORMATS``, kept here so
#: that ``pau --help`` imports no reader; tests/test_cli_views.py checks they agree).
TELEMETRY_FORMATS = ("nvidia_smi", "dcgm_exporter", "prometheus_json", "dcgmi_dmon", "amd_smi", "nsys_gpu_metrics")

__all__ = ["BUILTIN", "EXIT_BAD_INPUT", "EXIT_GATE", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "main", "parser"]

#: Exit codes, the same for every subcommand.
EXIT_OK, EXIT_BAD_INPUT, EXIT_USAGE, EXIT_GATE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

_EXIT_TABLE = """exit codes: 0 done, 1 bad input, 2 usage (or an option that does not apply to the input),
3 a --gate failed, 130 interrupted"""

#: Defaults of the built-in run's options (None in the parser, so that giving them with a
#: path can be refused).
BUILTIN = {"ranks": 8, "steps": 400, "seed": 0, "straggler": 3}


def parser() -> argparse.ArgumentParser:
    """The command line's parser: every subcommand and option."""
    parser = argparse.ArgumentParser(prog="pau", description="Productive accelerator utilization.",
                                     epilog=_EXIT_TABLE)
    parser.add_argument("--version", action="version", version=f"pau {_core.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    report_parser(sub)
    convert_parser(sub)
    compare_parser(sub)
    ingest_parser(sub)
    fleet_parser(sub)
    return parser


def _align_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--align", choices=ALIGN_METHODS, default=None,
                   help="traces from several hosts: put every rank's clock on the lowest rank's, from the "
                   "collectives they share (the offsets go to the run's metadata)")


def _telemetry_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--samples", action="append", metavar="FILE",
                   help="hardware telemetry of the run (nvidia-smi CSV, dcgm-exporter scrape, Prometheus JSON, "
                   "dcgmi dmon, amd-smi CSV); repeatable. Adds each metric's mean per state and activity")
    p.add_argument("--devices", metavar="MAP", help="how the telemetry's devices map to ranks: 'index', or "
                   "DEVICE=RANK,... (default: by UUID, bus id, then GPU index)")
    p.add_argument("--samples-format", dest="samples_format", choices=TELEMETRY_FORMATS,
                   help="the telemetry's format (default: detected from the content; a CSV under a script's own "
                   "headers needs it, or --samples-columns)")
    p.add_argument("--samples-columns", dest="samples_columns", metavar="MAP",
                   help="nvidia-smi CSV under other headers: HEADER=FIELD,... naming the nvidia-smi field each "
                   "column holds (e.g. 'gpu_index=index,power_W=power.draw [W]'); or FIELD,FIELD,... in order "
                   "for a log written with noheader (docs/telemetry.md)")
    p.add_argument("--samples-timezone", dest="samples_timezone", metavar="TZ",
                   help="the zone of nvidia-smi's own time stamps (local time without a zone): UTC, an offset "
                   "such as +02:00, or a zone name such as Europe/Berlin (default UTC, with a warning)")
    p.add_argument("--samples-time", dest="samples_time", metavar="T",
                   help="the time of a saved dcgm-exporter scrape (which holds none): ns since the epoch, or "
                   "an ISO-8601 time with its zone (2025-06-13T00:27:52Z)")


def _skip_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--skip-bad", action="store_true", dest="skip_bad",
                   help="a folder of traces: leave out a file the reader refuses (a warning names it and why) "
                   "and read the rest")


def _verbosity_options(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("-q", "--quiet", action="store_true", help="no warnings on stderr (errors still)")
    g.add_argument("-v", "--verbose", action="count", default=0, help="also say what was read")


def _output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=("text", "json", "csv", "html"), default="text",
                   help="what to print: text (default), json (every figure), csv (a table of figures), "
                   "html (one self-contained page with plots; needs pau[report])")
    p.add_argument("-o", "--output", default="-", help="where the report goes (default -: stdout)")


def report_parser(sub: argparse._SubParsersAction) -> None:
    """``pau report``."""
    fmts = INPUT_FORMATS
    rep = sub.add_parser("report", help="the ledger of a run: activity, goodput, waste by cause", epilog=_EXIT_TABLE)
    _verbosity_options(rep)
    _skip_option(rep)
    rep.add_argument("path", nargs="?", help="a trace, log, results file, Parquet events or a pau run folder "
                     "(default: a built-in synthetic 8-rank run)")
    rep.add_argument("--input-format", choices=fmts, help="input format (default: detected from the content)")
    _output_options(rep)
    _align_option(rep)
    rep.add_argument("--ledger", metavar="FILE", help="also write the ledger table (.parquet, .csv, .json)")
    rep.add_argument("--lifecycle", help="Parquet lifecycle table (DESIGN 2.2) for input that has events only")
    rep.add_argument("--as-of", type=int, dest="as_of", help="the ledger as of this instant (int ns)")
    rep.add_argument("--price", type=float, help="price per accelerator-hour: adds cost per useful output (a "
                     "lifecycle: per preserved step; serving requests: per accepted request, with "
                     "--accelerator-count)")
    rep.add_argument("--accelerator-count", type=int, dest="accelerator_count", metavar="N",
                     help="serving: the accelerators the server ran on; billed time = N x the benchmark window")
    rep.add_argument("--power", help="Parquet power samples (rank, time_ns, watts): adds energy (with --price); "
                     "without it, the power_w of --samples is used")
    _telemetry_options(rep)
    rep.add_argument("--schedule", metavar="FILE", help="sacct --parsable2 output of the job: adds the time it "
                     "queued on top of the layers (docs/layers.md)")
    rep.add_argument("--flops-per-step", type=int, dest="flops_per_step", metavar="N",
                     help="model FLOPs per step: adds the useful-FLOPs layer (with --peak-flops, or --accelerator "
                     "and --dtype)")
    rep.add_argument("--peak-flops", type=float, dest="peak_flops", metavar="F", help="peak FLOP/s per accelerator")
    rep.add_argument("--accelerator", help="accelerator type for the peak table (e.g. h100-sxm; docs/outcome.md)")
    rep.add_argument("--dtype", help="data type for the peak table (e.g. bf16)")
    rep.add_argument("--hardware-flops-per-step", type=int, dest="hardware_flops_per_step", metavar="N",
                     help="hardware FLOPs per step (model FLOPs plus recomputation): adds HFU beside MFU")
    rep.add_argument("--protection-bound", type=float, dest="protection_bound", metavar="SHARE",
                     help="the most lost progress allowed per failure, as a share of the progress made before it "
                     "(e.g. 0.05): adds progress protection (breaches, excess; docs/outcome.md)")
    rep.add_argument("--slo", action="append", metavar="NAME=VALUE",
                     help="a serving SLO: ttft, tpot or e2e, in seconds or with a unit (e.g. ttft=0.5, tpot=40ms); "
                     "repeatable. A request is accepted when it completed and meets every SLO given")
    rep.add_argument("--gate", action="append", metavar="METRIC>=X",
                     help="fail (exit 3) unless the figure holds, e.g. ledger.goodput>=0.45; repeatable")
    rep.add_argument("--on-invalid", choices=("raise", "quarantine"), default="raise", dest="on_invalid",
                     help="rows a reader cannot use: raise (default) or set aside (counted, warned)")
    for k, h in (("ranks", "number of ranks"), ("steps", "number of steps"), ("seed", "seed"),
                 ("straggler", "rank slowed by 1.25x (-1 for none)")):
        rep.add_argument(f"--{k}", type=int, default=None, help=f"built-in run: {h} (default {BUILTIN[k]})")
    prog = rep.add_mutually_exclusive_group()
    prog.add_argument("--progress", dest="progress", action="store_true", default=None,
                      help="a progress bar on stderr while Parquet events are read, even when stderr is not "
                      "a terminal (default: only when it is one)")
    prog.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")


def convert_parser(sub: argparse._SubParsersAction) -> None:
    """``pau convert``."""
    fmts = INPUT_FORMATS
    conv = sub.add_parser("convert", help="write any input as a pau run folder (pau.read gives it back)",
                          epilog=_EXIT_TABLE)
    _verbosity_options(conv)
    _skip_option(conv)
    conv.add_argument("path")
    conv.add_argument("out", help="the run folder to write (with --to chrome-trace: the .json or .json.gz file)")
    conv.add_argument("--input-format", choices=fmts)
    conv.add_argument("--to", choices=("pau", "chrome-trace"), default="pau",
                      help="pau: a run folder (default); chrome-trace: the ledger as tracks (lifecycle state, "
                      "idle, waits for stragglers, failures and checkpoints) beside the device events, in the "
                      "Chrome trace JSON that Perfetto UI and chrome://tracing open")
    conv.add_argument("--overwrite", action="store_true", help="replace OUT when it exists")
    _align_option(conv)
    _telemetry_options(conv)
    conv.add_argument("--on-invalid", choices=("raise", "quarantine"), default="raise", dest="on_invalid")


def compare_parser(sub: argparse._SubParsersAction) -> None:
    """``pau compare``."""
    fmts = INPUT_FORMATS
    cmpp = sub.add_parser("compare", help="two runs side by side on the same useful-output denominators",
                          epilog=_EXIT_TABLE)
    _verbosity_options(cmpp)
    _skip_option(cmpp)
    cmpp.add_argument("a", help="a run in any format pau reads")
    cmpp.add_argument("b")
    cmpp.add_argument("--input-format-a", choices=fmts, dest="input_format_a")
    cmpp.add_argument("--input-format-b", choices=fmts, dest="input_format_b")
    _output_options(cmpp)
    _align_option(cmpp)
    cmpp.add_argument("--labels", metavar="A,B", help="the names of the two runs in the output (default: the "
                      "paths' last parts, as short as tells them apart)")
    cmpp.add_argument("--price-a", type=float, help="price per accelerator-hour of run a")
    cmpp.add_argument("--price-b", type=float, help="price per accelerator-hour of run b")
    cmpp.add_argument("--kernels", type=int, default=TOP_KERNELS, metavar="N",
                      help=f"rows of the kernel diff in text (default {TOP_KERNELS}); json and csv list every row")


def ingest_parser(sub: argparse._SubParsersAction) -> None:
    """``pau ingest SOURCE... -o FLEET`` (docs/fleet.md)."""
    ing = sub.add_parser("ingest", help="read many runs, any format, into a fleet archive (runs table, hourly "
                         "cells, refusals; a re-run adds only what is new)", epilog=_EXIT_TABLE)
    g = ing.add_mutually_exclusive_group()
    g.add_argument("-q", "--quiet", action="store_true", help="no notes on stderr (errors still)")
    g.add_argument("-v", "--verbose", action="count", default=0, help="also list the archive's refusals")
    ing.add_argument("sources", nargs="+", metavar="SOURCE", help="files and folders (searched recursively)")
    ing.add_argument("-o", "--out", required=True, dest="fleet", metavar="FLEET",
                     help="the fleet archive's folder (made when absent)")
    ing.add_argument("--label", action="append", metavar="KEY=VALUE",
                     help="a label of every run of this ingest (job, cluster, accelerator_type, accelerators, team, "
                     "project, user are columns; others go to labels); repeatable")
    ing.add_argument("--labels", metavar="FILE", help="a CSV or JSON labels file, one row per job")
    ing.add_argument("--skip-bad", action="store_true", dest="skip_bad",
                     help="a source its reader refuses goes to the refusals table, and the rest is read (default: "
                     "stop there)")
    ing.add_argument("--cluster", metavar="NAME", help="the cluster of sources whose records name none (scheduler "
                     "records, runs)")
    ing.add_argument("--tz", metavar="ZONE", help="the IANA zone of local times without one (sacct text, Philly's "
                     "job log, Megatron-LM logs; default UTC, with a warning)")
    ing.add_argument("--origin", metavar="TIME", help="where the Alibaba pod list's relative times begin: ns since "
                     "the epoch, or an ISO 8601 UTC time (2023-01-01T00:00:00Z)")
    ing.add_argument("--workers", type=int, metavar="N", help="processes reading at once (default: every core)")
    ing.add_argument("--dask", metavar="ADDRESS", help="read on this Dask scheduler instead (pau[dask])")
    prog = ing.add_mutually_exclusive_group()
    prog.add_argument("--progress", dest="progress", action="store_true", default=None,
                      help="a progress bar on stderr even when it is not a terminal")
    prog.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")


def fleet_parser(sub: argparse._SubParsersAction) -> None:
    """``pau fleet FLEET --by ... --every ...`` (docs/fleet.md, "pau fleet")."""
    flt = sub.add_parser("fleet", help="a fleet archive's accelerator time per group and period: allocated, "
                         "productive, badput by cause, goodput, failures, cost", epilog=_EXIT_TABLE)
    g = flt.add_mutually_exclusive_group()
    g.add_argument("-q", "--quiet", action="store_true", help="no notes on stderr (errors still)")
    g.add_argument("-v", "--verbose", action="count", default=0, help="also say what was read")
    flt.add_argument("fleet", metavar="FLEET", help="a fleet archive (pau ingest ... -o FLEET)")
    flt.add_argument("--by", default="", metavar="KEYS",
                     help="group keys, comma-separated: runs-table columns or labels (cluster,accelerator_type,"
                     "labels.team); default: the whole fleet")
    flt.add_argument("--every", default="week", metavar="PERIOD",
                     help="hour, day, week (ISO, from Monday 00:00 UTC), month, or a multiple: 6h, 2w (default week)")
    flt.add_argument("--tz", metavar="ZONE", help="local days, weeks and months in this IANA zone (Europe/Paris); "
                     "default UTC")
    flt.add_argument("--since", metavar="TIME", help="only time from here (an ISO date or time on the hour, UTC)")
    flt.add_argument("--until", metavar="TIME", help="only time before here (as --since)")
    flt.add_argument("--where", metavar="FILTER", help="the runs (and jobs without a run) kept: KEY=VALUE terms, "
                     "',' and, '|' or, != not (cluster=eos,team=llm|vision)")
    flt.add_argument("--cost-model", dest="cost_model", metavar="TOML",
                     help="a TOML cost model: adds cost and cost per useful output (docs/fleet.md, 'Cost basis')")
    flt.add_argument("--format", choices=("text", "json", "csv", "html", "openmetrics"), default="text",
                     help="text (default), json (every figure), csv (the rollup table), html (one self-contained "
                     "page with plots; needs pau[report]), openmetrics (timestamped samples for promtool)")
    flt.add_argument("-o", "--output", default="-", help="where it goes (default -: stdout)")
    flt.add_argument("--gate", action="append", metavar="METRIC>=X",
                     help="exit 3 unless a figure of the whole selection holds (total.goodput>=0.8, "
                     "last_period.goodput>=0.8; see --format json); repeatable")
    flt.add_argument("--id-labels", dest="id_labels", action="store_true",
                     help="openmetrics: allow job and run ids as labels (one series per job: high cardinality)")


def main(argv: Sequence[str] | None = None) -> int:
    """The console script: parse (``--help`` and ``--version`` end here), then run the
    command through :func:`pau.cli.run`."""
    args = parser().parse_args(argv)
    cli = importlib.import_module("pau.cli")
    code: int = cli.run(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
