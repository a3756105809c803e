"""The fleet archive on disk (DESIGN §7): its layout, its tables' schemas, the run key,
and :class:`Fleet`, what :func:`read_fleet` opens (``docs/fleet.md``).

    FLEET/
      pau-fleet.json          the layout's version
      runs/<key>.parquet      the runs table: one file per run, one row each
      cells/<key>.parquet     the run's hourly cells
      refusals/<key>.parquet  one row per source refused (or passed over)
      store/<key>/            the run in pau's run layout (``Run.write``)
      jobs/                   the scheduler's jobs table, when one was added
      .tmp/                   files being written (renamed into place when whole)

Every file and folder comes into place by one rename of a whole temporary one, so a
kill leaves nothing half-written: a table is the union of the complete files of its
folder, and a run is in the archive once ``runs/<key>.parquet`` is there.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from typing import Any, Mapping, Sequence

import pyarrow as pa

from pau.engine import io as _io
from pau.engine.vocab import ACTIVITIES, STATES
from pau.errors import PauError
from pau.run import Run, read

__all__ = ["CELLS_SCHEMA", "FIGURES", "FLEET_FILE", "Fleet", "KEY_VERSION", "LAYOUT_VERSION", "REFUSALS_SCHEMA",
           "RUNS_SCHEMA", "figure_values", "read_fleet", "run_key"]

#: The file naming a folder as a fleet archive, and the layout's version.
FLEET_FILE = "pau-fleet.json"
LAYOUT_VERSION = 1
#: What the run key's digest starts with; a new rule gets a new version.
KEY_VERSION = b"pau-fleet-key/1"
#: The archive's tables (one folder of Parquet files each) and the runs' folder.
TABLES = ("runs", "cells", "refusals")
STORE, JOBS, TMP = "store", "jobs", ".tmp"

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
                         pa.field("summary", pa.string())])
#: The hourly cells: the run's ledger cut at UTC hour boundaries.
CELLS_SCHEMA = pa.schema([("run", pa.string()), ("hour_ns", pa.int64()), ("state", pa.string()),
                          ("activity", pa.string()), ("duration_ns", pa.int64())])
#: The refusals: sources refused by their reader (``format`` set) or matching no
#: format (``format`` null).
REFUSALS_SCHEMA = pa.schema([("key", pa.string()), ("source", pa.string()), ("format", pa.string()),
                             ("reason", pa.string())])


def figure_values(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`FIGURES` of a run's summary (``Run.summary()``), by column; a figure
    the run does not have (no ledger, no requests) is None, an activity its ledger does
    not hold 0."""
    out: dict[str, Any] = {}
    for column, path, _ in FIGURES:
        v: Any = summary
        for k in path:
            # activity_ns names the activities that occur: one that does not took 0 ns
            v = (v.get(k, 0 if path[:2] == ("ledger", "activity_ns") else None) if isinstance(v, Mapping)
                 else None)
        out[column] = v
    led = summary.get("ledger")
    out["badput_by_cause_ns"] = None if led is None else sorted(led["badput_by_cause_ns"].items())
    return out


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
    for d in (*TABLES, STORE, TMP):
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


def publish_table(out: str, table: str, key: str, rows: pa.Table, *, first_wins: bool) -> bool:
    """Write ``rows`` as ``out/<table>/<key>.parquet``: to a temporary file, then into
    place in one step. ``first_wins``: an existing file stays (a hard link, which fails
    when the name exists); else it is replaced. True when this call put it there."""
    tmp = temp_path(out, f"{table}-{key}.parquet")
    _io.write_table(rows, tmp)
    final = table_file(out, table, key)
    try:
        if not first_wins:
            os.replace(tmp, final)
            return True
        try:
            os.link(tmp, final)
        except FileExistsError:
            return False
        except OSError:  # a file system without hard links: rename unless it is there
            if os.path.exists(final):
                return False
            os.replace(tmp, final)
            return True
        return True
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def publish_run(out: str, key: str, run: Run) -> None:
    """``run`` in pau's layout as ``out/store/<key>``, written whole in a temporary
    folder and renamed into place. A folder already there is kept: its name is the
    digest of the same sources, and it came into place whole."""
    final = os.path.join(out, STORE, key)
    if os.path.isdir(final):
        return
    tmp = temp_path(out, f"store-{key}")
    try:
        run.write(tmp)
        try:
            os.rename(tmp, final)
        except OSError:
            if not os.path.isdir(final):
                raise
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------
# reading


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
        """The scheduler's jobs table (``jobs/``, e.g. rows of
        ``pau.readers.scheduler``'s ``JOBS_SCHEMA``) when the archive holds one, else
        None. It joins the runs table by ``job`` (and ``cluster``)."""
        path = os.path.join(self.path, JOBS)
        if not os.path.isdir(path) or not any(n.endswith(".parquet") for n in os.listdir(path)):
            return None
        import pyarrow.dataset as ds  # see _read_folder

        return ds.dataset(path, format="parquet").to_table()

    def keys(self) -> list[str]:
        """The run keys of the archive, sorted (from the runs table's file names)."""
        folder = os.path.join(self.path, "runs")
        return sorted(n[: -len(".parquet")] for n in os.listdir(folder) if n.endswith(".parquet"))

    def run(self, key: str) -> Run:
        """The run of key ``key``, read from its folder in pau's run layout."""
        if not isinstance(key, str) or not os.path.isfile(table_file(self.path, "runs", key)):
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
