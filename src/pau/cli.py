"""The ``pau`` command line.

``pau report`` (no path) analyzes a built-in synthetic 8-rank run; ``pau report PATH``
analyzes a Parquet events file or directory, streamed. Printing lives here, never in
the kernels.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from . import core, errors, io, synth
from ._progress import Bar
from .io import write_dataset
from .readers.mllog import mllog_summary

# Columns of the report: (heading, activities summed into it).
_COLUMNS = (
    ("compute", ("compute",)),
    ("exposed comm", ("communication",)),
    ("memcpy", ("memcpy",)),
    ("other", ("memset", "sync", "other")),
    ("idle", ("idle",)),
)


def _seconds(ns: int) -> str:
    return f"{ns / 1e9:,.3f} s"


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:5.1f}%" if whole else "    -"


def render_report(table: pa.Table, title: str) -> str:
    """The per-rank table of a :func:`pau.core.classify` result, as text."""
    ranks = np.asarray(table["rank"])
    acts = np.asarray(table["activity"].to_numpy(zero_copy_only=False)).astype(str)
    dur = np.asarray(table["duration_ns"])
    uniq = np.unique(ranks)
    per = {r: {} for r in uniq.tolist()}
    for r, a, d in zip(ranks.tolist(), acts.tolist(), dur.tolist()):
        per[r][a] = per[r].get(a, 0) + d  # Python ints: exact

    head = ["rank"] + [h for h, _ in _COLUMNS] + ["span"]
    rows = []
    totals = [0] * len(_COLUMNS)
    for r in uniq.tolist():
        span = sum(per[r].values())
        vals = [sum(per[r].get(a, 0) for a in acts_) for _, acts_ in _COLUMNS]
        totals = [t + v for t, v in zip(totals, vals)]
        rows.append([str(r)] + [f"{_seconds(v)} {_pct(v, span)}" for v in vals] + [_seconds(span)])
    whole = sum(totals)
    rows.append(["total"] + [f"{_seconds(v)} {_pct(v, whole)}" for v in totals] + [_seconds(whole)])
    widths = [max(len(x[i]) for x in rows + [head]) for i in range(len(head))]
    fmt = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths))  # noqa: E731
    lines = [title, "", fmt(head), fmt(["-" * w for w in widths])]
    lines += [fmt(x) for x in rows[:-1]] + [fmt(["-" * w for w in widths]), fmt(rows[-1])]
    lines.append("")
    lines.append(f"accountable: {len(uniq)} ranks, {whole / 3.6e12:,.4f} accelerator-hours; "
                 f"exposed communication is communication not hidden under compute")
    return "\n".join(lines)


def _hours(ns: int) -> str:
    return f"{ns / 3.6e12:,.3f} h"


def render_goodput(led) -> str:
    """The goodput section: time per lifecycle state, waste by cause, headline figures."""
    s = led.summary()
    acc = s["accountable_ns"]
    lines = ["", f"goodput {100 * s['goodput']:.1f} % of {_hours(acc)} accountable accelerator time"
             + (f" (strict, productive x compute: {100 * s['goodput_strict']:.1f} %)"
                if s["goodput_strict"] is not None else ""), ""]
    width = max(len(k) for k in s["state_ns"])
    for state, ns in s["state_ns"].items():
        if ns:
            lines.append(f"  {state:<{width}}  {_hours(ns):>12}  {_pct(ns, acc)}")
    if s["badput_by_cause_ns"]:
        lines += ["", "rolled-back work by cause:"]
        for cause, ns in sorted(s["badput_by_cause_ns"].items(), key=lambda kv: -kv[1]):
            lines.append(f"  {cause:<{width}}  {_hours(ns):>12}  {_pct(ns, acc)}")
    lines.append("")
    mtbf = f", MTBF {s['mtbf_s']:,.0f} s" if s["mtbf_s"] else ""
    per_step = s["accountable_ns_per_preserved_step"]
    lines.append(f"failures {s['failures']}{mtbf}; preserved steps {s['preserved_steps']:,}, "
                 f"model cycles {s['preserved_model_cycles']}; "
                 + (f"{per_step / 1e9:,.2f} accelerator-s per preserved step" if per_step else
                    "no preserved step"))
    return "\n".join(lines)


def render_cost(led, price: float, power_path: str | None) -> str:
    """Cost (and energy) per useful output at a price per accelerator-hour."""
    power = None
    if power_path:
        power = pq.read_table(power_path)
    c = core.cost(led, {"per_accelerator_hour": price}, power=power)
    lines = ["", f"cost at ${price:,.2f} per accelerator-hour: total ${c['total_cost']:,.2f}, "
             f"of which waste ${c['waste_cost']:,.2f}"]
    for key, label in (("cost_per_productive_accelerator_hour", "per productive accelerator-hour"),
                       ("cost_per_preserved_step", "per preserved step"),
                       ("cost_per_preserved_model_cycle", "per preserved model cycle"),
                       ("cost_per_million_preserved_tokens", "per million preserved tokens")):
        if c.get(key) is not None:
            lines.append(f"  ${c[key]:,.4f} {label}")
    if c.get("waste_cost_by_cause"):
        lines.append("  waste by cause: " + ", ".join(
            f"{k} ${v:,.2f}" for k, v in sorted(c["waste_cost_by_cause"].items(), key=lambda kv: -kv[1])))
    for key in sorted(k for k in c if k.startswith("energy") and isinstance(c[k], (int, float))):
        lines.append(f"  {key.replace('_', ' ')}: {c[key]:,.4g}")
    return "\n".join(lines)


def _write(table: pa.Table, path: str, fmt: str | None) -> None:
    fmt = fmt or os.path.splitext(path)[1].lstrip(".").lower()
    if fmt == "parquet":
        pq.write_table(table, path)
    elif fmt == "csv":
        plain = pa.table({n: (c.cast(pa.string()) if pa.types.is_dictionary(c.type) else c)
                          for n, c in zip(table.column_names, table.columns)})
        pcsv.write_csv(plain, path)
    elif fmt == "json":
        with open(path, "w") as f:
            json.dump(table.to_pylist(), f, indent=1)
            f.write("\n")
    else:
        raise SystemExit(f"pau: --out {path!r}: unknown format {fmt!r}; use .parquet, .csv or .json "
                         "(or --out-format)")


def _load(path: str, fmt: str | None):
    """(format, events, lifecycle, extra) of a path, read with the right reader."""
    fmt = fmt or io.detect_format(path)
    if fmt == "parquet":
        return fmt, path, None, None
    if fmt == "kineto":
        tr = io.read_kineto(path)
        return fmt, tr.events, None, tr
    if fmt == "nsys":
        tr = io.read_nsys(path)
        lc = tr.lifecycle if tr.lifecycle is not None and tr.lifecycle.num_rows else None
        return fmt, tr.events, lc, tr
    if fmt == "mllog":
        return fmt, None, None, io.read_mllog(path)
    if fmt == "serving":
        return fmt, None, None, io.read_serving(path)
    raise SystemExit(f"pau: unknown --format {fmt!r}")


def _print_table(t: pa.Table) -> None:
    cols = t.column_names
    rows = [[("" if v is None else f"{v:,.4f}" if isinstance(v, float) else str(v)) for v in r.values()]
            for r in t.to_pylist()]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]
    print("  ".join(c.rjust(w) for c, w in zip(cols, widths)))
    for r in rows:
        print("  ".join(v.rjust(w) for v, w in zip(r, widths)))


def _progress_arg(flag: bool | None):
    """``--progress``: a bar on stderr even when it is not a terminal; default: a bar
    when stderr is a terminal; ``--no-progress``: none."""
    if flag is None:
        return True
    if flag:
        return Bar(sys.stderr)
    return False


def _report(args: argparse.Namespace) -> int:
    lifecycle = None
    extra = None
    if args.path is None:
        job = synth.training_job(ranks=args.ranks, steps=args.steps, seed=args.seed, mtbf_s=150.0,
                                 checkpoint_every=50, kernels_per_step=24,
                                 straggler=(args.straggler, 1.25) if args.straggler >= 0 else None)
        events, lifecycle = job.events, job.lifecycle
        title = (f"pau report: built-in synthetic run ({args.ranks} ranks, {args.steps} steps, "
                 f"seed {args.seed}, {events.num_rows:,} events, failures at a 150 s MTBF"
                 + (f", straggler rank {args.straggler} x1.25)" if args.straggler >= 0 else ")"))
    else:
        fmt, events, lifecycle, extra = _load(args.path, args.format)
        title = f"pau report: {args.path} ({fmt})"
        if fmt == "mllog":
            print(title + "\n")
            _print_table(mllog_summary(extra).select(
                ["file", "benchmark", "status", "accelerators", "time_to_train_ns", "accelerator_hours",
                 "goodput"]))
            return 0
        if fmt == "serving":
            req = extra.requests
            print(title + "\n")
            st = req.group_by("status").aggregate([("request_id", "count")]).rename_columns(
                ["status", "requests"])
            _print_table(st)
            return 0
    if args.lifecycle:
        lifecycle = pq.read_table(args.lifecycle)
    span = extra.spans() if hasattr(extra, "spans") and lifecycle is None else None
    led = core.ledger(events, lifecycle, progress=_progress_arg(args.progress), span=span)
    table = led.table.select(["rank", "activity", "duration_ns"])
    print(render_report(table, title))
    if lifecycle is not None:
        print(render_goodput(led))
        if args.price is not None:
            print(render_cost(led, args.price, args.power))
    elif args.price is not None:
        print("\n(--price needs a lifecycle: cost per useful output is cost per preserved work)")
    if args.out:
        _write(led.table, args.out, args.out_format)
        print(f"ledger written to {args.out} ({led.table.num_rows} rows)")
    return 0


def _convert(args: argparse.Namespace) -> int:
    """Write what a reader finds to pau's Parquet layout: events/lifecycle/requests."""
    fmt, events, lifecycle, extra = _load(args.path, args.format)
    os.makedirs(args.out_dir, exist_ok=True)
    written = []
    if fmt == "mllog":
        runs = extra if isinstance(extra, list) else [extra]
        parts = [r.lifecycle.append_column("run", pa.array([i] * r.lifecycle.num_rows, pa.int32()))
                 for i, r in enumerate(runs)]
        lifecycle = pa.concat_tables(parts) if parts else None
    if fmt == "serving":
        pq.write_table(extra.requests, os.path.join(args.out_dir, "requests.parquet"))
        written.append("requests.parquet")
    if isinstance(events, pa.Table):
        write_dataset(events, os.path.join(args.out_dir, "events"), overwrite=True)
        written.append("events/ (partitioned by job and rank)")
    if lifecycle is not None:
        pq.write_table(lifecycle, os.path.join(args.out_dir, "lifecycle.parquet"))
        written.append("lifecycle.parquet")
    print(f"pau convert: {args.path} ({fmt}) -> {args.out_dir}: {', '.join(written) or 'nothing'}")
    return 0


def _run_ledger(path: str):
    """The ledger of a run folder in pau's layout (events.parquet, lifecycle.parquet)."""
    ev = next((p for p in (os.path.join(path, "events"), os.path.join(path, "events.parquet"))
               if os.path.exists(p)), "")
    lc = os.path.join(path, "lifecycle.parquet")
    if not os.path.exists(lc):
        raise SystemExit(f"pau compare: {path!r} has no lifecycle.parquet (write one with pau convert "
                         "or pau.synth)")
    return core.ledger(ev if os.path.exists(ev) else None, pq.read_table(lc))


def _compare(args: argparse.Namespace) -> int:
    a, b = _run_ledger(args.a), _run_ledger(args.b)
    pa_ = {"per_accelerator_hour": args.price_a} if args.price_a is not None else None
    pb_ = {"per_accelerator_hour": args.price_b} if args.price_b is not None else None
    cmp = core.compare(a, b, prices_a=pa_, prices_b=pb_, labels=(args.a, args.b))
    print(cmp.render())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pau", description="Productive accelerator utilization.")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="per-rank ledger of accelerator time")
    rep.add_argument("path", nargs="?", help="Parquet events file or directory (default: a built-in "
                     "synthetic 8-rank run)")
    rep.add_argument("--out", help="write the ledger table to this file (.parquet, .csv, .json)")
    rep.add_argument("--out-format", choices=("parquet", "csv", "json"), help="format of --out")
    rep.add_argument("--ranks", type=int, default=8, help="built-in run: number of ranks")
    rep.add_argument("--lifecycle", help="Parquet lifecycle table (DESIGN 2.2) for the goodput ledger")
    rep.add_argument("--steps", type=int, default=400, help="built-in run: number of steps")
    rep.add_argument("--price", type=float, help="price per accelerator-hour: adds cost per useful output")
    rep.add_argument("--power", help="Parquet power samples (rank, time_ns, watts): adds energy")
    rep.add_argument("--seed", type=int, default=0, help="built-in run: seed")
    rep.add_argument("--straggler", type=int, default=3,
                     help="built-in run: rank slowed by 1.25x (-1 for none)")
    prog = rep.add_mutually_exclusive_group()
    prog.add_argument("--progress", dest="progress", action="store_true", default=None,
                      help="show a progress bar on stderr for a Parquet path even when stderr is not "
                      "a terminal (default: only when it is one)")
    prog.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    rep.add_argument("--format", choices=("parquet", "kineto", "nsys", "mllog", "serving"),
                     help="input format (default: detected from the content)")
    conv = sub.add_parser("convert", help="write a trace/log/results file to pau's Parquet layout")
    conv.add_argument("path")
    conv.add_argument("out_dir")
    conv.add_argument("--format", choices=("parquet", "kineto", "nsys", "mllog", "serving"))
    cmpp = sub.add_parser("compare", help="two runs side by side on the same useful-output denominators")
    cmpp.add_argument("a", help="run folder with lifecycle.parquet (and events.parquet)")
    cmpp.add_argument("b")
    cmpp.add_argument("--price-a", type=float, help="price per accelerator-hour of run a")
    cmpp.add_argument("--price-b", type=float, help="price per accelerator-hour of run b")
    args = parser.parse_args(argv)
    try:
        if args.command == "compare":
            return _compare(args)
        return _convert(args) if args.command == "convert" else _report(args)
    except (errors.PauError, FileNotFoundError) as exc:
        print(f"pau: {exc}", file=sys.stderr)
        return 2
    except errors.Interrupted as exc:  # Ctrl-C: say what was kept
        print(f"\npau: {exc}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `pau report | head`: the reader left; not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
