"""The fleet archive on disk (DESIGN §7): its layout, its tables' schemas, the run key,
the batches the tables are made of, and :class:`Fleet`, what :func:`read_fleet` opens
(``docs/fleet.md``).

    FLEET/
      pau-fleet.json              the layout's version
      runs/batch-<id>.parquet     the runs table: batches of rows, one per run
      cells/batch-<id>.parquet    the runs' hourly cells, the same batches
      refusals/<key>.parquet      one row per source refused (or passed over)
      store/<key>/                the run in pau's run layout (``Run.write``)
      staging/<key>.run.parquet   a run's row and cells until they go into a batch
      staging/<key>.cells.parquet
      jobs/<key>.parquet          the scheduler's jobs: one file per source of records
      .tmp/                       files being written (renamed into place when whole)

Every file and folder comes into place by one rename of a whole temporary one. A worker
stages a run's row and cells, then renames its folder into ``store/``: that rename is
the commit. :func:`compact` moves the staged rows of committed runs into the tables, a
batch at a time under a journal, so a kill leaves no table with a partial or doubled
batch (``docs/fleet.md``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import uuid
from typing import Any, Dict, Iterator, List, Mapping, Sequence, Tuple, TypedDict, Union

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pau.engine import io as _io
from pau.engine.vocab import ACTIVITIES, STATES
from pau.errors import PauError
from pau.figures import goodput as _goodput
from pau.readers.scheduler import JOBS_SCHEMA
import pau.fleet.reliability as _reliability
import pau.fleet.rollup as _rollup
from pau.run import Run, read

__all__ = ["CELLS_SCHEMA", "ENERGY_METRICS", "FIGURES", "FLEET_FILE", "FLEET_JOBS_SCHEMA", "FigureValue", "Fleet",
           "JobsSummary", "KEY_VERSION", "LAYOUT_VERSION", "REFUSALS_SCHEMA", "RUNS_SCHEMA", "energy_values",
           "failure_causes", "figure_values", "flops_values", "read_fleet", "run_key"]

#: The file naming a folder as a fleet archive, and the layout's version.
FLEET_FILE = "pau-fleet.json"
LAYOUT_VERSION = 1
#: What the run key's digest starts with; a new rule gets a new version.
KEY_VERSION = b"pau-fleet-key/1"
#: The archive's tables (one folder of Parquet files each) and the runs' folder.
TABLES = ("runs", "cells", "refusals")
STORE, STAGING, JOBS, TMP = "store", "staging", "jobs", ".tmp"
#: Runs per batch of the runs and cells tables (a batch is written one run at a time).
BATCH_RUNS = 1000

_ACTIVITY_NAMES = (*ACTIVITIES, "unknown")


def _col(name: str) -> str:
    return name.replace(".", "_")


#: The headline figures of a run as columns of the runs table: (column, path in
#: ``Run.summary()``, type). ``pau.run.run_figures`` computes them (the one function
#: behind ``run.summary()``); :func:`figure_values` only picks them out.
FIGURES: tuple[tuple[str, tuple[str, ...], pa.DataType], ...] = (
    ("ranks", ("ledger", "ranks"), pa.int64()),
    ("accountable_ns", ("ledger", "accountable_ns"), pa.int64()),
    *((f"{_col(s)}_ns", ("ledger", "state_ns", s), pa.int64()) for s in STATES),
    ("productive_strict_ns", ("ledger", "productive_strict_ns"), pa.int64()),
    ("badput_ns", ("ledger", "badput_ns"), pa.int64()),
    ("goodput", ("ledger", "goodput"), pa.float64()),
    ("goodput_strict", ("ledger", "goodput_strict"), pa.float64()),
    *((f"activity_{a}_ns", ("ledger", "activity_ns", a), pa.int64()) for a in _ACTIVITY_NAMES),
    ("failures", ("ledger", "failures"), pa.int64()),
    ("mtbf_s", ("ledger", "mtbf_s"), pa.float64()),
    ("preserved_steps", ("ledger", "preserved_steps"), pa.int64()),
    ("preserved_tokens", ("ledger", "preserved_tokens"), pa.int64()),
    ("preserved_model_cycles", ("ledger", "preserved_model_cycles"), pa.int64()),
    ("failures_per_1000_accelerator_hours", ("recovery", "failures_per_1000_accelerator_hours"), pa.float64()),
    ("mean_to_first_step_s", ("recovery", "mean_to_first_step_s"), pa.float64()),
    ("mean_to_progress_s", ("recovery", "mean_to_progress_s"), pa.float64()),
    ("not_recovered", ("recovery", "not_recovered"), pa.int64()),
    ("restart_loop_attempts", ("recovery", "restart_loop_attempts"), pa.int64()),
    ("requests_offered", ("requests", "offered"), pa.int64()),
    ("requests_accepted", ("requests", "accepted"), pa.int64()),
    ("requests_late", ("requests", "late"), pa.int64()),
    ("requests_failed", ("requests", "failed"), pa.int64()),
    ("requests_rejected", ("requests", "rejected"), pa.int64()),
    ("requests_cancelled", ("requests", "cancelled"), pa.int64()),
    ("slo_attainment", ("requests", "slo_attainment"), pa.float64()),
    ("request_goodput_per_s", ("requests", "request_goodput_per_s"), pa.float64()),
    ("accepted_tokens", ("requests", "accepted_tokens"), pa.int64()),
    ("mlperf_status", ("mlperf", "status"), pa.string()),
    ("time_to_train_ns", ("mlperf", "time_to_train_ns"), pa.int64()),
    ("events_outside_accountable_ns", ("events_outside_accountable", "ns"), pa.int64()),
    ("warnings", ("warnings",), pa.int64()),
    ("quarantined", ("quarantined",), pa.int64()),
)

#: Facts of the run besides its figures (``docs/fleet.md``).
_FACTS = pa.schema([
    ("run", pa.string()), ("source", pa.string()), ("sources", pa.list_(pa.string())), ("format", pa.string()),
    ("job", pa.string()), ("cluster", pa.string()), ("accelerator_type", pa.string()),
    ("accelerators", pa.int64()), ("team", pa.string()), ("project", pa.string()), ("user", pa.string()),
    ("start_ns", pa.int64()), ("end_ns", pa.int64()), ("labels", pa.map_(pa.string(), pa.string())),
])
#: The runs table: one row per run.
RUNS_SCHEMA = pa.schema([*_FACTS, *(pa.field(c, t) for c, _, t in FIGURES),
                         pa.field("badput_by_cause_ns", pa.map_(pa.string(), pa.int64())),
                         pa.field("failure_ns", pa.list_(pa.int64())), pa.field("recovery_ns", pa.list_(pa.int64())),
                         *(pa.field(c, t) for c, t in (("energy_metric", pa.string()), ("energy_j", pa.float64()),
                                                       ("energy_productive_j", pa.float64()))),
                         pa.field("failures_by_cause", pa.map_(pa.string(), pa.int64())),
                         *(pa.field(c, pa.float64()) for c in ("useful_flops", "peak_flops"))])
#: The hourly cells: the run's ledger cut at UTC hour boundaries.
CELLS_SCHEMA = pa.schema([("run", pa.string()), ("hour_ns", pa.int64()), ("state", pa.string()),
                          ("activity", pa.string()), ("duration_ns", pa.int64())])
#: The refusals: sources refused by their reader (``format`` set) or matching no
#: format (``format`` null).
REFUSALS_SCHEMA = pa.schema([("key", pa.string()), ("source", pa.string()), ("format", pa.string()),
                             ("reason", pa.string())])
#: ``fleet.jobs``: the scheduler's jobs table (``pau.readers.JOBS_SCHEMA``), then ``run``,
#: the key of the job's run (joined by ``cluster`` and ``job``; null when it has none).
FLEET_JOBS_SCHEMA = JOBS_SCHEMA.append(pa.field("run", pa.string()))


#: A value :func:`figure_values` gives a column of the runs table: a figure of
#: :data:`FIGURES` (int, float, or ``mlperf_status``'s str), a list of instants
#: (``failure_ns``, ``recovery_ns``), (name, count) pairs of a map column
#: (``badput_by_cause_ns``, ``failures_by_cause``), or None where the run has none.
FigureValue = Union[int, float, str, List[int], List[Tuple[str, int]], None]


def figure_values(summary: Mapping[str, Any]) -> Dict[str, FigureValue]:
    """The :data:`FIGURES` of a run's summary (``Run.summary()``), by column, and the
    runs table's columns made of it (``badput_by_cause_ns``, :func:`failure_lists`,
    :func:`energy_values`, :func:`failure_causes`); a figure the run does not have (no
    ledger, no requests) is None, an activity its ledger does not hold 0.

    A dict by column name, not a TypedDict: its keys are :data:`FIGURES`' (a column per
    state and per activity of ``pau.engine.vocab``) and :data:`RUNS_SCHEMA` is their
    one list; a TypedDict would be a second one to keep in step."""
    out: Dict[str, FigureValue] = {}
    for column, path, _ in FIGURES:
        v: Any = summary
        for k in path:
            # activity_ns names the activities that occur: one that does not took 0 ns
            v = (v.get(k, 0 if path[:2] == ("ledger", "activity_ns") else None) if isinstance(v, Mapping)
                 else None)
        out[column] = v
    led = summary.get("ledger")
    out["badput_by_cause_ns"] = None if led is None else sorted(led["badput_by_cause_ns"].items())
    out["failure_ns"], out["recovery_ns"] = failure_lists(summary.get("recovery"))
    out["energy_metric"], out["energy_j"], out["energy_productive_j"] = energy_values(summary.get("telemetry"))
    out["failures_by_cause"] = failure_causes(summary.get("recovery"))
    return out


#: The labels :func:`flops_values` reads (``pau ingest --label flops_per_step=...``).
FLOPS_LABELS = ("flops_per_step", "flops_per_token", "peak_flops", "peak_accelerator", "dtype")


def _label_number(labels: Mapping[str, str], name: str, source: str) -> float | None:
    v = labels.get(name)
    if v is None:
        return None
    try:
        x = float(v)
    except ValueError:
        x = math.nan
    if not math.isfinite(x) or x <= 0:
        raise PauError(f"labels of {source}: {name}={v!r} is not a positive number. Fix: label it with FLOPs "
                       f"(e.g. {name}=6.3e15)")
    return x


def flops_values(summary: Mapping[str, Any], labels: Mapping[str, str], accelerator_type: str | None,
                 source: str) -> dict[str, float | None]:
    """``useful_flops`` and ``peak_flops`` of the runs table from a run's summary and
    labels (``docs/fleet.md``, "MFU").

    ``useful_flops``: the ledger's ``preserved_steps`` x the label ``flops_per_step``
    (model FLOPs of one step), else its ``preserved_tokens`` x ``flops_per_token``; None
    when neither label is given or the run has no ledger. ``peak_flops``: the peak dense
    FLOP/s of one accelerator: the label ``peak_flops``, else
    :func:`pau.figures.goodput.peak_flops` of the label ``peak_accelerator`` (else the
    run's ``accelerator_type``) and the label ``dtype``; None when no ``dtype`` is given
    (no data type is assumed) or the table has no such accelerator. A label that is not
    a positive number is refused naming the source."""
    led = summary.get("ledger")
    per_step = _label_number(labels, "flops_per_step", source)
    per_token = _label_number(labels, "flops_per_token", source)
    useful = None
    if led is not None and per_step is not None and led.get("preserved_steps") is not None:
        useful = float(led["preserved_steps"]) * per_step
    elif led is not None and per_token is not None and led.get("preserved_tokens") is not None:
        useful = float(led["preserved_tokens"]) * per_token
    peak = _label_number(labels, "peak_flops", source)
    name = labels.get("peak_accelerator") or accelerator_type
    if peak is None and name is not None and labels.get("dtype"):
        try:
            peak = float(_goodput.peak_flops(name, labels["dtype"]).flops)
        except PauError:
            peak = None  # not in the table: no MFU for the run (null), never a guess
    return {"useful_flops": useful, "peak_flops": peak}


def failure_causes(recovery: Mapping[str, Any] | None) -> list[tuple[str, int]] | None:
    """``failures_by_cause`` of the runs table from a run's ``summary()["recovery"]
    ["by_cause"]`` (each failure's kind, as its lifecycle's failure record gives it): the
    failures per cause, sorted by cause. None without a recovery figure."""
    if recovery is None:
        return None
    return sorted((str(c), int(v["failures"])) for c, v in recovery["by_cause"].items())


#: The metrics that give energy (``pau.readers.telemetry.METRICS`` in W or J), the one
#: taken first: the device's own energy counter, then its averaged power, then the
#: instant power. One metric only: two would count the same joules twice.
ENERGY_METRICS = ("energy_j", "power_avg_w", "power_w")


def energy_values(telemetry: Sequence[Mapping[str, Any]] | None) -> tuple[str | None, float | None, float | None]:
    """``energy_metric``, ``energy_j`` and ``energy_productive_j`` of the runs table from
    a run's ``summary()["telemetry"]`` (:func:`pau.figures.hardware.summary`, one row per
    state, activity and metric): the ``energy_j`` of its rows of the first metric of
    :data:`ENERGY_METRICS` it holds, summed over the states (and over ``productive``
    alone; None when no sample covers productive time). All None when the run has no power or energy samples: no energy is not 0 J.
    Each row's energy is over its covered ns (the samples' reach, ``docs/telemetry.md``)."""
    rows = [r for r in telemetry or () if r.get("energy_j") is not None]
    metric = next((m for m in ENERGY_METRICS if any(r["metric"] == m for r in rows)), None)
    if metric is None:
        return None, None, None
    mine = [r for r in rows if r["metric"] == metric]
    prod = [r["energy_j"] for r in mine if r["state"] == "productive"]
    return metric, math.fsum(r["energy_j"] for r in mine), math.fsum(prod) if prod else None


def failure_lists(recovery: Mapping[str, Any] | None) -> tuple[list[int] | None, list[int] | None]:
    """``failure_ns`` and ``recovery_ns`` of the runs table from a run's
    ``summary()["recovery"]["per_failure_ns"]``: the instants of the recovered failures
    (in time order) then of those not recovered (in time order), and the time to recover
    progress of each recovered one, in the same order (``recovery_ns[i]`` is that of
    ``failure_ns[i]``; the last ``not_recovered`` failures have none). None without a
    recovery figure."""
    if recovery is None:
        return None, None
    pairs = recovery["per_failure_ns"]
    done = [(t, d) for t, d in pairs if d is not None]
    return [t for t, _ in done] + [t for t, d in pairs if d is None], [d for _, d in done]


# ---------------------------------------------------------------------------
# the run key


def run_key(fmt: str, root: str, files: Sequence[str]) -> str:
    """The run key: 32 hex digits of BLAKE2b (16 bytes) over :data:`KEY_VERSION`, the
    format, and for each file of the run, in the order of their relative names: the
    relative name (below ``root`` when ``root`` is a folder, else the file's own name),
    its size and its bytes. So the same bytes under the same names give the same key
    wherever they lie; another name, or one changed byte, another key."""
    h = hashlib.blake2b(digest_size=16)
    h.update(KEY_VERSION + b"\0" + fmt.encode() + b"\0")
    base = root if os.path.isdir(root) else os.path.dirname(root)
    named = sorted((os.path.relpath(f, base).replace(os.sep, "/"), f) for f in files)
    for name, f in named:
        size = os.path.getsize(f)
        raw = name.encode("utf-8", "surrogateescape")
        h.update(len(raw).to_bytes(8, "little") + raw + size.to_bytes(8, "little"))
        with open(f, "rb") as fh:
            got = 0
            while chunk := fh.read(1 << 20):
                h.update(chunk)
                got += len(chunk)
        if got != size:
            raise PauError(f"{f}: {got} bytes read where its size was {size}: the file changed while it was "
                           "read. Fix: ingest it again once it is written")
    return h.hexdigest()


def passed_over_key(path: str) -> str:
    """The key of a file that no reader recognises: of its absolute path (its bytes are
    not read), so a re-run records it once."""
    return hashlib.blake2b(b"pau-fleet-passed-over/1\0" + os.path.abspath(path).encode("utf-8", "surrogateescape"),
                           digest_size=16).hexdigest()


# ---------------------------------------------------------------------------
# writing: whole files renamed into place


def create(out: str) -> None:
    """Make ``out`` a fleet archive (or check that it is one)."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise PauError(f"ingest: {out!r} is a file. Fix: give a folder for the fleet archive")
    if os.path.isdir(out) and os.listdir(out) and not os.path.isfile(os.path.join(out, FLEET_FILE)):
        raise PauError(f"ingest: {out!r} is not empty and holds no {FLEET_FILE}: not a fleet archive. Fix: give "
                       "a new or empty folder, or an archive pau ingest wrote")
    for d in (*TABLES, STORE, STAGING, JOBS, TMP):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    doc = os.path.join(out, FLEET_FILE)
    if not os.path.isfile(doc):
        tmp = temp_path(out, FLEET_FILE)
        with open(tmp, "w") as f:
            json.dump({"pau_fleet_layout": LAYOUT_VERSION}, f)
            f.write("\n")
        os.replace(tmp, doc)
    else:
        _check_version(out)


def _check_version(path: str) -> None:
    with open(os.path.join(path, FLEET_FILE)) as f:
        try:
            version = json.load(f).get("pau_fleet_layout")
        except (ValueError, AttributeError):
            version = None
    if not isinstance(version, int) or version > LAYOUT_VERSION:
        raise PauError(f"{path}/{FLEET_FILE}: fleet layout {version!r} is not one this pau reads (up to "
                       f"{LAYOUT_VERSION}). Fix: upgrade pau")


def temp_path(out: str, name: str) -> str:
    """A fresh name in ``out/.tmp`` (the process, the thread and a random part)."""
    return os.path.join(out, TMP, f"{name}.{os.getpid()}.{uuid.uuid4().hex}")


def table_file(out: str, table: str, key: str) -> str:
    return os.path.join(out, table, f"{key}.parquet")


def _write(rows: pa.Table, final: str, out: str) -> None:
    """``rows`` as the Parquet file ``final``: written whole to ``.tmp``, then renamed."""
    tmp = temp_path(out, os.path.basename(final))
    try:
        _io.write_table(rows, tmp)
        os.replace(tmp, final)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def publish_refusal(out: str, key: str, rows: pa.Table) -> None:
    """The refusal of source ``key`` (replacing an earlier one)."""
    _write(rows, table_file(out, "refusals", key), out)


def publish_jobs(out: str, key: str, rows: pa.Table) -> None:
    """The jobs rows of the source of key ``key``: ``jobs/<key>.parquet``, written whole
    and renamed into place (the source's commit)."""
    os.makedirs(os.path.join(out, JOBS), exist_ok=True)
    _write(rows, table_file(out, JOBS, key), out)


def drop_refusal(out: str, key: str) -> None:
    try:
        os.unlink(table_file(out, "refusals", key))
    except FileNotFoundError:
        pass


def staged(out: str, key: str, table: str) -> str:
    return os.path.join(out, STAGING, f"{key}.{table}.parquet")


def in_store(out: str, key: str) -> bool:
    """Whether run ``key`` is committed (its folder renamed into ``store/``)."""
    return os.path.isdir(os.path.join(out, STORE, key))


def commit_run(out: str, key: str, run: Run, row: pa.Table, cells: pa.Table | None) -> bool:
    """Stage the run's ``row`` and ``cells``, then write ``run`` in pau's layout to a
    temporary folder and rename it to ``store/<key>``: the commit. False when that folder
    is there already (another copy of the same sources committed first; the staged row,
    of the same key, is one of theirs)."""
    final = os.path.join(out, STORE, key)
    if os.path.isdir(final):
        return False
    if cells is not None:
        _write(cells, staged(out, key, "cells"), out)
    _write(row, staged(out, key, "run"), out)
    tmp = temp_path(out, f"store-{key}")
    try:
        run.write(tmp)
        try:
            os.rename(tmp, final)
        except OSError:
            if not os.path.isdir(final):
                raise
            return False
        return True
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------
# batches: staged rows into the tables


def _journal(out: str, name: str) -> str:
    return os.path.join(out, STAGING, f"compact-{name}.json")


def _batch(out: str, table: str, name: str) -> str:
    return os.path.join(out, table, f"batch-{name}.parquet")


def _recover(out: str) -> None:
    """Finish or undo a compaction a kill interrupted: its runs batch in place means it
    was done (the staged files it lists go); else its cells batch, if any, goes."""
    folder = os.path.join(out, STAGING)
    with os.scandir(folder) as entries:
        journals = [e.path for e in entries if e.name.startswith("compact-") and e.name.endswith(".json")]
    for path in journals:
        with open(path) as f:
            doc = json.load(f)
        name = doc["batch"]
        if os.path.exists(_batch(out, "runs", name)):
            for key in doc["keys"]:
                for t in ("run", "cells"):
                    try:
                        os.unlink(staged(out, key, t))
                    except FileNotFoundError:
                        pass
        elif os.path.exists(_batch(out, "cells", name)):
            os.unlink(_batch(out, "cells", name))
        os.unlink(path)


def _committed(out: str) -> Iterator[str]:
    """Keys of the staged rows whose run is committed; staged files of runs that are
    not (a kill before the commit) are removed. Only while no worker writes."""
    with os.scandir(os.path.join(out, STAGING)) as entries:
        for entry in entries:
            if entry.name.endswith(".cells.parquet"):  # a worker killed between its two staged files
                if not in_store(out, entry.name[: -len(".cells.parquet")]):
                    os.unlink(entry.path)
                continue
            if not entry.name.endswith(".run.parquet"):
                continue
            key = entry.name[: -len(".run.parquet")]
            if in_store(out, key):
                yield key
            else:
                for t in ("run", "cells"):
                    try:
                        os.unlink(staged(out, key, t))
                    except FileNotFoundError:
                        pass


#: Staged tables gathered into one row group of a batch: at most this many, and at most
#: this many bytes (a table read from a file holds more memory than its bytes: about
#: 80 KiB for a one-row table of the runs table's 69 columns).
ROW_GROUP_FILES, ROW_GROUP_BYTES = 64, 8 * 2**20


def _stream(files: list[str], final: str, schema: pa.Schema, out: str) -> bool:
    """The tables of ``files`` one after another into the Parquet file ``final``
    (written whole to ``.tmp``, then renamed), a row group per :data:`ROW_GROUP_FILES`
    files or :data:`ROW_GROUP_BYTES` gathered; False when none of them exists."""
    tmp = temp_path(out, os.path.basename(final))
    writer = None
    held: list[pa.Table] = []
    size = 0

    def flush() -> None:
        nonlocal writer, size
        if not held:
            return
        if writer is None:
            writer = pq.ParquetWriter(tmp, schema, write_page_checksum=True)
        writer.write_table(pa.concat_tables(held).combine_chunks())
        held.clear()
        size = 0

    try:
        for f in files:
            if not os.path.exists(f):
                continue
            t = _io.read_table(f).cast(schema)
            held.append(t)
            size += t.nbytes
            if size >= ROW_GROUP_BYTES or len(held) == ROW_GROUP_FILES:
                flush()
        flush()
        if writer is None:
            return False
        writer.close()
        writer = None
        os.replace(tmp, final)
        return True
    finally:
        if writer is not None:
            writer.close()
        if os.path.exists(tmp):
            os.unlink(tmp)


def _flush(out: str, keys: list[str]) -> None:
    """One batch: a journal naming it and its keys, the cells batch, the runs batch
    (its rename completes the batch), then the staged files go, then the journal."""
    name = uuid.uuid4().hex
    journal = _journal(out, name)
    tmp = temp_path(out, os.path.basename(journal))
    with open(tmp, "w") as f:
        json.dump({"batch": name, "keys": keys}, f)
    os.replace(tmp, journal)
    _stream([staged(out, k, "cells") for k in keys], _batch(out, "cells", name), CELLS_SCHEMA, out)
    _stream([staged(out, k, "run") for k in keys], _batch(out, "runs", name), RUNS_SCHEMA, out)
    for k in keys:
        for t in ("run", "cells"):
            try:
                os.unlink(staged(out, k, t))
            except FileNotFoundError:
                pass
    os.unlink(journal)


def compact(out: str, *, batch_runs: int | None = None) -> int:
    """Move the staged rows and cells of committed runs into the tables, ``batch_runs``
    runs per batch file (default :data:`BATCH_RUNS`); first finish or undo a compaction a kill interrupted. Only while
    no worker writes to the archive (``ingest`` calls it before and after its work,
    holding the archive's lock). Returns the runs moved. Memory: one run's files and the
    keys of one batch."""
    _recover(out)
    per_batch = BATCH_RUNS if batch_runs is None else batch_runs
    moved = 0
    keys: list[str] = []
    for key in _committed(out):
        keys.append(key)
        if len(keys) == per_batch:
            _flush(out, keys)
            moved += len(keys)
            keys = []
    if keys:
        _flush(out, keys)
        moved += len(keys)
    return moved


# ---------------------------------------------------------------------------
# reading


def _cause_counts(runs: pa.Table) -> dict[str, list[int]]:
    """Each run's failures per cause (``failures_by_cause``), a list per cause over the
    runs, causes sorted; the failures no cause accounts for are ``unknown``. A run whose
    causes sum to more than its failures is refused naming it."""
    per = [dict(m or []) for m in runs["failures_by_cause"].to_pylist()]
    unknown = []
    for i, (mine, n) in enumerate(zip(per, runs["failures"].to_pylist())):
        rest = n - sum(mine.values())
        if rest < 0:
            raise PauError(f"runs: run {runs['run'][i].as_py()!r}: failures_by_cause {sorted(mine.items())} sums to "
                           f"more than its {n} failures. Fix: ingest the run again (both are its summary's)")
        unknown.append(rest)
    causes = sorted({c for m in per for c in m})
    counts = {c: [m.get(c, 0) for m in per] for c in causes}
    if any(unknown) or not counts:
        counts["unknown"] = unknown
    return counts


def _read_folder(path: str, schema: pa.Schema) -> pa.Table:
    """The union of the Parquet files of a table's folder, sorted by its first column
    (the run key); its schema when the folder holds none."""
    import pyarrow.dataset as ds  # loads pandas: only when an archive is read (tests/test_layout.py)

    if not os.path.isdir(path) or not any(n.endswith(".parquet") for n in os.listdir(path)):
        return schema.empty_table()
    table = ds.dataset(path, format="parquet", schema=schema).to_table()
    keys = [(schema.names[0], "ascending")] + [(n, "ascending") for n in ("hour_ns", "state", "activity")
                                               if n in schema.names]
    return table.sort_by(keys)


class JobsSummary(TypedDict):
    """What :meth:`Fleet.jobs_summary` returns: counts of the join of jobs and runs
    (exact ints; its docstring says what each counts)."""

    jobs: int
    jobs_with_run: int
    jobs_without_run: int
    jobs_with_several_runs: int
    runs: int
    runs_with_job: int
    runs_without_job: int
    job_records_superseded: int
    unattributed_accelerator_ns: int
    jobs_without_run_allocation_unknown: int


class Fleet:
    """A fleet archive (``pau ingest``), opened by :func:`read_fleet`.

    Attributes are read from disk when asked for (each time: an ingest may add to
    the archive meanwhile)."""

    def __init__(self, path: str):
        self.path = path

    @property
    def runs(self) -> pa.Table:
        """The runs table (:data:`RUNS_SCHEMA`), sorted by run key."""
        return _read_folder(os.path.join(self.path, "runs"), RUNS_SCHEMA)

    @property
    def cells(self) -> pa.Table:
        """The hourly cells of every run (:data:`CELLS_SCHEMA`)."""
        return _read_folder(os.path.join(self.path, "cells"), CELLS_SCHEMA)

    @property
    def refusals(self) -> pa.Table:
        """Sources refused by their reader, or matching no format (:data:`REFUSALS_SCHEMA`)."""
        return _read_folder(os.path.join(self.path, "refusals"), REFUSALS_SCHEMA)

    @property
    def jobs(self) -> pa.Table | None:
        """The scheduler's jobs (:data:`FLEET_JOBS_SCHEMA`: ``pau.readers.JOBS_SCHEMA``'s
        columns, then ``run``), one row per ``(cluster, job)``, sorted by them; None when
        the archive holds no scheduler records.

        ``run`` is the key of the run whose ``cluster`` and ``job`` are the job's (null
        equal to null), null when the job has no run; of several runs of one job, the
        smallest key (``jobs_summary()`` counts such jobs; the runs table has them all).
        A job in several sources (overlapping ``sacct`` dumps) is one row: the record that
        says the most, by its end (a job with an end over one still running), then its
        start, then its submit time, later first, then the source's key (the largest):
        so the result does not depend on the order of ingests. ``jobs_summary()`` counts
        the records superseded."""
        got = self._jobs()
        return None if got is None else got[0]

    def _jobs(self) -> tuple[pa.Table, int] | None:
        path = os.path.join(self.path, JOBS)
        files = sorted(n for n in os.listdir(path) if n.endswith(".parquet")) if os.path.isdir(path) else []
        if not files:
            return None
        parts = []
        for n in files:
            t = _io.read_table(os.path.join(path, n))
            missing = [c for c in JOBS_SCHEMA.names if c not in t.column_names]
            if missing:
                raise PauError(f"{os.path.join(path, n)}: a jobs file without the column(s) {', '.join(missing)} of "
                               "pau.readers.JOBS_SCHEMA. Fix: remove it and ingest its scheduler records with pau "
                               "ingest, which writes jobs/ itself")
            t = t.select(JOBS_SCHEMA.names).cast(JOBS_SCHEMA)
            parts.append(t.append_column("_source", pa.array([n[: -len(".parquet")]] * t.num_rows, pa.string())))
        t = pa.concat_tables(parts)
        order = []
        for c in ("end_ns", "start_ns", "submit_ns"):
            t = t.append_column(f"_has_{c}", pc.is_valid(t[c]))
            order += [(f"_has_{c}", "descending"), (c, "descending")]
        t = t.take(pc.sort_indices(t, order + [("_source", "descending")]))
        seen: set[tuple[Any, Any]] = set()
        keep = []
        for i, k in enumerate(zip(t["cluster"].to_pylist(), t["job"].to_pylist())):
            if k not in seen:
                seen.add(k)
                keep.append(i)
        superseded = t.num_rows - len(keep)
        t = t.take(pa.array(keep, pa.int64())).select(JOBS_SCHEMA.names)
        t = t.sort_by([("cluster", "ascending"), ("job", "ascending")])
        runs = self.runs.select(["run", "cluster", "job"])
        by_job: dict[tuple[Any, Any], list[str]] = {}
        for key, cluster, job in zip(*(runs[c].to_pylist() for c in ("run", "cluster", "job"))):
            if job is not None:
                by_job.setdefault((cluster, job), []).append(key)
        keys = [min(by_job[k]) if k in by_job else None
                for k in zip(t["cluster"].to_pylist(), t["job"].to_pylist())]
        return t.append_column(FLEET_JOBS_SCHEMA.field("run"), pa.array(keys, pa.string())), superseded

    def jobs_summary(self) -> JobsSummary:
        """Counts of the join of jobs and runs (DESIGN §7: both are counted):

        ``jobs`` (rows of :attr:`jobs`), ``jobs_with_run``, ``jobs_without_run``,
        ``jobs_with_several_runs``; ``runs``, ``runs_with_job`` (their ``cluster`` and
        ``job`` name a row of :attr:`jobs`), ``runs_without_job`` (no ``job``, or a job
        the jobs table does not hold: each stands on its own); ``job_records_superseded``
        (records of a job already given by another source); and
        ``unattributed_accelerator_ns``, the allocation of the jobs without a run (each is
        accountable and ``unattributed`` for its whole allocation; a Python int, exact),
        with ``jobs_without_run_allocation_unknown`` of them not counted in it (no end or no
        accelerators: null, never 0)."""
        runs = self.runs.select(["run", "cluster", "job"])
        got = self._jobs()
        table, superseded = got if got is not None else (FLEET_JOBS_SCHEMA.empty_table(), 0)
        known = set(zip(table["cluster"].to_pylist(), table["job"].to_pylist()))
        runs_with_job = sum(1 for c, j in zip(runs["cluster"].to_pylist(), runs["job"].to_pylist())
                            if j is not None and (c, j) in known)
        per_job: dict[tuple[Any, Any], int] = {}
        for c, j in zip(runs["cluster"].to_pylist(), runs["job"].to_pylist()):
            if j is not None:
                per_job[(c, j)] = per_job.get((c, j), 0) + 1
        with_run = [r is not None for r in table["run"].to_pylist()]
        alloc = table["allocated_accelerator_ns"].to_pylist()
        lonely = [a for a, w in zip(alloc, with_run) if not w]
        return {
            "jobs": table.num_rows,
            "jobs_with_run": sum(with_run),
            "jobs_without_run": len(with_run) - sum(with_run),
            "jobs_with_several_runs": sum(1 for k in known if per_job.get(k, 0) > 1),
            "runs": runs.num_rows,
            "runs_with_job": runs_with_job,
            "runs_without_job": runs.num_rows - runs_with_job,
            "job_records_superseded": superseded,
            "unattributed_accelerator_ns": sum(a for a in lonely if a is not None),
            "jobs_without_run_allocation_unknown": sum(1 for a in lonely if a is None),
        }

    def rollup(self, by: str | Sequence[str] = (), every: str = "1w", since: Any = None, until: Any = None,
               where: Any = None, *, cost_model: Any = None, tz: str | None = None) -> _rollup.Rollup:
        """Accelerator time and its figures per group and period: :func:`pau.fleet.rollup.rollup`
        over the runs table, the hourly cells (streamed from their files) and the jobs table
        (``docs/fleet.md``, "Rollups")."""
        return _rollup.rollup(self._runs_for(by, where, cost_model is not None), self._cells_source(), self.jobs,
                              by=by, every=every, since=since, until=until, where=where, cost_model=cost_model,
                              tz=tz)

    def changes(self, metric: str, by: str | Sequence[str] = (), every: str = "1w", *, method: str = "pelt",
                **options: Any) -> pa.Table:
        """Change points of a rollup column per group (:func:`pau.fleet.rollup.changes`)."""
        return _rollup.changes(self.rollup(by=by, every=every), metric, method=method, **options)

    def reliability(self, *, edges: Sequence[float] | None = None, confidence: float = 0.95,
                    by_cause: bool = False) -> pa.Table:
        """Failure rate per accelerator-hour by job-size class, fitted from the fleet's own
        runs (:func:`pau.fleet.reliability.failure_rates` over the runs table: each run's
        ``accelerators``, its accountable accelerator-hours and its ledger's failures; runs
        without a ledger or an accelerator count are left out). With ``by_cause``, a row
        per class and cause (the runs table's ``failures_by_cause``, from the same
        ``run.summary()``'s recovery figure; a run's failures no cause accounts for, as a
        run without a lifecycle, are ``unknown``) and the ``all`` row. Feed a class's rate
        to :func:`pau.fleet.reliability.at_size` for the MTTF and checkpoint interval at a
        size."""
        cols = ["run", "accelerators", "accountable_ns", "failures"]
        runs = self.runs.select(cols + (["failures_by_cause"] if by_cause else []))
        runs = runs.filter(pc.and_(pc.is_valid(runs["accountable_ns"]),
                                   pc.and_(pc.is_valid(runs["accelerators"]), pc.is_valid(runs["failures"]))))
        hours = pc.divide(pc.cast(runs["accountable_ns"], pa.float64()), 3.6e12)
        table = pa.table({"accelerators": runs["accelerators"], "accelerator_hours": hours,
                          "failures": runs["failures"]})
        if not by_cause:
            return _reliability.failure_rates(table, edges=edges, confidence=confidence)
        counts = _cause_counts(runs)
        for cause, values in counts.items():
            table = table.append_column(f"cause:{cause}", pa.array(values, pa.int64()))
        return _reliability.failure_rates(table, failures={c: f"cause:{c}" for c in counts}, edges=edges,
                                          confidence=confidence)

    def capacity(self, period_a: Any, period_b: Any, by: str | Sequence[str] = (), every: str = "1w") -> pa.Table:
        """Efficiency as capacity between two periods per group (:func:`pau.fleet.rollup.capacity`)."""
        return _rollup.capacity(self.rollup(by=by, every=every), period_a, period_b)

    def _runs_for(self, by: str | Sequence[str], where: Any, cost: bool) -> pa.Table:
        """The runs table's columns a rollup reads (all of them when the folder is empty)."""
        path = os.path.join(self.path, "runs")
        if not os.path.isdir(path) or not any(n.endswith(".parquet") for n in os.listdir(path)):
            return RUNS_SCHEMA.empty_table()
        keys = [by] if isinstance(by, str) else list(by)
        return _rollup.read_runs(path, keys + [k for k, _, _ in _rollup.parse_where(where)], cost)

    def _cells_source(self) -> Any:
        """The cells' folder when it holds files (read a batch at a time), else an empty table."""
        path = os.path.join(self.path, "cells")
        has = os.path.isdir(path) and any(n.endswith(".parquet") for n in os.listdir(path))
        return path if has else CELLS_SCHEMA.empty_table()

    def keys(self) -> list[str]:
        """The run keys of the runs table, sorted."""
        keys: list[str] = self.runs["run"].to_pylist()
        return keys

    def run(self, key: str) -> Run:
        """The run of key ``key``, read from its folder in pau's run layout."""
        if not isinstance(key, str) or len(key) != 32 or not in_store(self.path, key):
            raise PauError(f"{self.path}: no run of key {key!r} in the fleet archive. Fix: take a key from "
                           "fleet.runs['run']")
        return read(os.path.join(self.path, STORE, key), format="pau")

    def __len__(self) -> int:
        return len(self.keys())

    def __repr__(self) -> str:
        return f"Fleet({self.path!r}, runs={len(self)})"


def read_fleet(path: str | os.PathLike[str]) -> Fleet:
    """Open the fleet archive at ``path`` (written by ``pau ingest`` /
    :func:`pau.fleet.ingest`)."""
    p = os.fspath(path)
    if not os.path.isfile(os.path.join(p, FLEET_FILE)):
        raise PauError(f"{p!r}: not a fleet archive (no {FLEET_FILE}). Fix: write one with pau ingest SOURCE... "
                       f"-o {p}")
    _check_version(p)
    return Fleet(p)
