"""``pau ingest``: many runs, in any format pau reads, and the scheduler's records into
one fleet archive (DESIGN §7, ``docs/fleet.md``).

The calling process only walks the sources (lazily, a folder at a time) and hands
each run's sources to a worker (this process, a process pool, or a Dask cluster),
keeping a bounded number in flight and counters: nothing of a run stays in it. A
worker computes the run key, skips a run already in the archive, reads the run with
:func:`pau.run.read_runs`, computes its figures with :func:`pau.run.run_figures` (the
function behind ``Run.summary()``) and its hourly cells, and writes them each whole,
renamed into place (:mod:`pau.fleet.archive`).
"""

from __future__ import annotations

import concurrent.futures as cf
import csv
import json
import os
import shutil
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pau.engine import api as _engine
from pau.engine._progress import tracker
from pau.engine._threads import cores
from pau.engine.ledger import NS_PER_HOUR, Ledger
from pau.errors import IngestError, NoDeviceEventsError, NoInputError, OptionError, PauError
import pau.fleet.archive as _archive
import pau.fleet.records as _records
from pau.readers.detect import UnknownFormatError, detect_format
from pau.readers.kineto import trace_files
from pau.readers.scheduler import zone as _zone
from pau.readers.nsys import nsys_files
from pau.run import RUN_FILE, Run, read_runs, run_figures

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: pau.core imports, ingest says why it cannot run
    fcntl = None  # type: ignore[assignment]

__all__ = ["IngestError", "IngestResult", "Source", "hourly_cells", "ingest", "sources_of"]

#: Formats whose reader takes a folder of files as one run (one file per rank).
_TRACE_FORMATS = {"kineto": trace_files, "nsys": nsys_files}
#: Label names that are columns of the runs table of their own.
PROMOTED = ("job", "cluster", "accelerator_type", "accelerators", "team", "project", "user")
#: Facts of a run's metadata kept as labels (what the records say), when they are text.
RECORD_LABELS = ("benchmark", "submitter", "system", "division", "tool", "model", "team", "project", "user")


@dataclass(frozen=True)
class Source:
    """The sources of one run, as the walk found them: ``root`` is what
    :func:`pau.run.read_runs` reads, ``files`` the files whose bytes make the run key;
    ``format`` None for a file no reader recognises (``reason`` says why)."""

    root: str
    format: str | None
    files: tuple[str, ...]
    reason: str | None = None
    given: bool = False  # named on the command line (not found in a folder)


@dataclass
class IngestResult:
    """What an ingest did: runs ``added``, already ``present`` (skipped by key: runs,
    and sources of scheduler records whose jobs are in the archive), ``refused`` (a
    reader refused them, with ``skip_bad``) and ``passed_over`` (files no reader
    recognises, in folders); each is in the archive's tables. ``warned``: runs added
    whose reading warned (the runs table's ``warnings`` column counts them; the run's
    ``warnings`` are kept in its folder). ``job_sources``: sources of scheduler records
    added to the jobs table, ``jobs`` their rows, ``jobs_warned`` those sources whose
    reader warned (``jobs/<key>.parquet``'s metadata ``pau.jobs.warnings`` keeps the
    warnings)."""

    path: str
    added: int = 0
    present: int = 0
    refused: int = 0
    passed_over: int = 0
    warned: int = 0
    job_sources: int = 0
    jobs: int = 0
    jobs_warned: int = 0

    @property
    def seen(self) -> int:
        return self.added + self.present + self.refused + self.passed_over + self.job_sources


# ---------------------------------------------------------------------------
# the walk


def _visible(name: str) -> bool:
    return not name.startswith(".")


def _all_files(folder: str) -> list[str]:
    out = []
    for d, dirs, files in os.walk(folder):
        dirs[:] = sorted(x for x in dirs if _visible(x))
        out += [os.path.join(d, f) for f in sorted(files) if _visible(f)]
    return out


def _detect(path: str) -> tuple[str | None, str | None]:
    """The format of a file: a run's (``pau.read``'s formats), a fleet record's
    (:data:`pau.fleet.records.RECORD_FORMATS`), or None with the detector's reason."""
    try:
        return detect_format(path), None
    except UnknownFormatError as exc:
        rec = _records.records_format(path)
        return (rec, None) if rec is not None else (None, exc.problem)
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"


def _walk(folder: str) -> Iterator[Source]:
    """The runs under ``folder``, a folder at a time (see ``docs/fleet.md``). A fleet
    archive (the one being written, say) is not a source: it is not walked."""
    if os.path.isfile(os.path.join(folder, _archive.FLEET_FILE)):
        return
    if os.path.isfile(os.path.join(folder, RUN_FILE)):  # a run in pau's layout
        yield Source(folder, "pau", tuple(_all_files(folder)))
        return
    try:
        entries = sorted((e for e in os.scandir(folder) if _visible(e.name)), key=lambda e: e.name)
    except OSError as exc:
        yield Source(folder, None, (), f"the folder cannot be listed ({exc.strerror or exc})")
        return
    files = [e.path for e in entries if e.is_file()]
    dirs = [e.path for e in entries if e.is_dir(follow_symlinks=False)]  # as os.walk: no loop through a link
    if any(f.endswith(".parquet") for f in files) or any("=" in os.path.basename(d) for d in dirs):
        # Parquet events: the folder is one table (hive folders rank=R included)
        yield Source(folder, "parquet", tuple(f for f in _all_files(folder) if f.endswith(".parquet")))
        return
    found = [(f, *_detect(f)) for f in files]
    traces = [fmt for fmt in _TRACE_FORMATS if any(k == fmt for _, k, _ in found)]
    for trace in traces:  # the folder's traces are one run, with its subfolders' (pau.read_runs)
        yield Source(folder, trace, tuple(_TRACE_FORMATS[trace](folder)))
    cycles: dict[str, list[str]] = {}  # NVRx cycle files: each job's are one run
    for f, fmt, reason in found:
        if fmt == "nvrx":
            cycles.setdefault(_records.nvrx_job(f) or f, []).append(f)
        elif fmt not in _TRACE_FORMATS:
            yield Source(f, fmt, (f,), reason)
    for job_files in cycles.values():
        yield Source(folder if len(cycles) == 1 else job_files[0], "nvrx", tuple(job_files))
    if not traces:
        for d in dirs:
            yield from _walk(d)


def sources_of(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> Iterator[Source]:
    """Every run's sources under ``paths`` (files and folders, folders searched
    recursively), lazily."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not items:
        raise NoInputError("ingest: no sources given. Fix: give files or folders")
    for item in items:
        p = os.fspath(item)
        if not os.path.exists(p):
            raise NoInputError(f"ingest: nothing at {p!r}. Fix: give a file or a folder")
    for item in items:
        p = os.fspath(item)
        if os.path.isdir(p):
            yield from _walk(p)
        else:
            fmt, reason = _detect(p)
            yield Source(p, fmt, (p,), reason, given=True)


# ---------------------------------------------------------------------------
# labels


def _load_labels_file(path: str) -> dict[str, dict[str, str]]:
    """``job -> {label: value}`` from a CSV (a header naming ``job``) or JSON file (a
    list of objects with ``job``, or an object ``{job: {label: value}}``)."""
    try:
        if path.endswith(".json"):
            with open(path) as f:
                doc = json.load(f)
            rows = ([dict(v, job=k) for k, v in doc.items()] if isinstance(doc, dict) else doc)
        else:
            with open(path, newline="") as f:
                rows = list(csv.DictReader(f))
    except (OSError, ValueError) as exc:
        raise PauError(f"labels: {path}: cannot be read ({exc}). Fix: a CSV with a header naming job, or a JSON "
                       "list of objects with job") from None
    out: dict[str, dict[str, str]] = {}
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or row.get("job") in (None, ""):
            raise PauError(f"labels: {path}: row {i} has no job. Fix: every row names the job its labels are for")
        job = str(row["job"])
        if job in out:
            raise PauError(f"labels: {path}: row {i}: job {job!r} is labelled twice. Fix: one row per job")
        out[job] = {str(k): str(v) for k, v in row.items() if k != "job" and v not in (None, "")}
        if not out[job].get("accelerators", "0").isdigit():
            raise PauError(f"labels: {path}: row {i}: accelerators={out[job]['accelerators']!r} is not a count. Fix: "
                           "a whole number, or leave it empty")
    return out


_LABEL_FILES: dict[tuple[str, float], dict[str, dict[str, str]]] = {}


def _labels_by_job(path: str | None) -> dict[str, dict[str, str]]:
    """The labels file, read once per process (workers read it themselves)."""
    if path is None:
        return {}
    key = (path, os.path.getmtime(path))
    if key not in _LABEL_FILES:
        _LABEL_FILES.clear()
        _LABEL_FILES[key] = _load_labels_file(path)
    return _LABEL_FILES[key]


def _split_labels(labels: Any) -> tuple[dict[str, str], str | None]:
    """``labels=`` of :func:`ingest`: a mapping (every run), a path (a labels file by
    job), or a list of both."""
    static: dict[str, str] = {}
    path = None
    items = labels if isinstance(labels, (list, tuple)) else [] if labels is None else [labels]
    for item in items:
        if isinstance(item, Mapping):
            static.update({str(k): str(v) for k, v in item.items()})
        elif isinstance(item, (str, os.PathLike)):
            if path is not None:
                raise OptionError("labels: one labels file. Fix: join them into one")
            path = os.path.abspath(os.fspath(item))
            _load_labels_file(path)  # checked now, before any work
        else:
            raise OptionError(f"labels: expected a mapping, a file or a list of them, got {type(item).__name__}")
    if "accelerators" in static and not static["accelerators"].isdigit():
        raise OptionError(f"labels: accelerators={static['accelerators']!r}: expected a count")
    return static, path


def _run_labels(run: Run, static: dict[str, str], path: str | None) -> dict[str, str]:
    """The run's labels: what its records say, under the labels file's row for its job,
    under the labels given for every run (later wins)."""
    m = run.metadata
    out = {k: m[k] for k in RECORD_LABELS if isinstance(m.get(k), str)}
    for k in ("job", "cluster"):
        if isinstance(m.get(k), (str, int)) and not isinstance(m.get(k), bool):
            out[k] = str(m[k])
    job = static.get("job", out.get("job"))
    if job is not None:
        out.update(_labels_by_job(path).get(job, {}))
    out.update(static)
    return out


# ---------------------------------------------------------------------------
# one run: its row, its cells


def _accelerator_type(run: Run) -> str | None:
    m = run.metadata
    if isinstance(m.get("accelerator_model"), str):
        return str(m["accelerator_model"])
    names = {r.get("device_name") for r in m.get("ranks") or [] if isinstance(r, dict)}
    names.discard(None)
    return str(names.pop()) if len(names) == 1 else None


def _accelerators(run: Run, led: Ledger | None) -> int | None:
    n = run.metadata.get("accelerators")
    if isinstance(n, int) and not isinstance(n, bool):
        return n
    return None if led is None else led.accountable.num_rows


def _extent(run: Run, led: Ledger | None) -> tuple[int | None, int | None]:
    """First and last ns of the run: its accountable time (the ledger's state intervals
    or the spans), else its requests, else its events."""
    tables = ((None if led is None else led.intervals, "start_ns", "end_ns"), (run.spans, "start_ns", "end_ns"),
              (run.requests, "arrival_ns", "end_ns"), (run.events, "start_ns", "end_ns"))
    for table, lo, hi in tables:
        if table is not None and table.num_rows and lo in table.column_names and hi in table.column_names:
            a, b = pc.min(table[lo]).as_py(), pc.max(table[hi]).as_py()
            if a is not None and b is not None:
                return int(a), int(b)
    return None, None


#: The figures of :func:`pau.run.run_figures` the runs table holds (:func:`pau.fleet.archive.figure_values`).
ROW_FIGURES = frozenset({path[0] for _, path, _ in _archive.FIGURES} | {"ledger", "recovery", "telemetry"})


def hourly_cells(run: Run, led: Ledger) -> pa.Table:
    """``hour_ns, state, activity, duration_ns``: the run's ledger cut at UTC hour
    boundaries (multiples of 3,600 s since the epoch), non-zero cells, summed over ranks.

    With a lifecycle, the windows of the engine's sweep (:func:`pau.engine.api.ledger`)
    are the ledger's state intervals cut at the hours, over each rank's accountable
    span, so each cell gets the exact activity time inside it; with events only, the
    run's spans in buckets of an hour; with a lifecycle alone, the intervals cut at the
    hours (activity ``unknown``). A run of many jobs (a ``job`` column): each job's
    intervals over its own events. Per run the cells sum exactly to the ledger's."""
    iv = led.intervals
    if iv is None:  # events only: the engine's hour buckets
        assert run.events is not None
        t = _engine.ledger(run.events, span=run.spans, windows=NS_PER_HOUR).table
        t = t.filter(pc.is_valid(t["window"]))
        hour = np.asarray(t["window"], np.int64)
        state = np.asarray(t["state"].cast(pa.string()), object)
        act = np.asarray(t["activity"].cast(pa.string()), object)
        dur = np.asarray(t["duration_ns"], np.int64)
        return _cells(hour, state, act, dur)
    events = run.events if led.has_events else None
    if "job" not in iv.column_names:
        return _cells(*_lifecycle_cells(iv, events))
    # a run of many jobs: each job's intervals over its own events (its ranks are its own)
    parts = []
    for job in iv["job"].cast(pa.string()).unique().to_pylist():
        parts.append(_lifecycle_cells(_of_job(iv, job), None if events is None else _of_job(events, job)))
    return _cells(*(np.concatenate([p[k] for p in parts]) for k in range(4)))


def _of_job(t: pa.Table, job: str | None) -> pa.Table:
    """The rows of one job (None: the unnamed one's) without the ``job`` column."""
    col = t["job"].cast(pa.string())
    mask = pc.is_null(col) if job is None else pc.fill_null(pc.equal(col, job), False)
    return t.filter(mask).drop_columns(["job"])


def _lifecycle_cells(iv: pa.Table, events: pa.Table | None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``hour, state, activity, duration`` of one job's state intervals cut at the
    hours, over its events (activity ``unknown`` without them)."""
    rank = np.asarray(iv["rank"], np.int64)
    start, end = np.asarray(iv["start_ns"], np.int64), np.asarray(iv["end_ns"], np.int64)
    states = np.asarray(iv["state"].cast(pa.string()), object)
    # each interval cut at the hours it crosses: piece j of interval i is [max(start, h), min(end, h + H))
    first = start // NS_PER_HOUR
    n = (end - 1) // NS_PER_HOUR - first + 1
    idx = np.repeat(np.arange(start.size), n)
    offset = np.arange(idx.size) - np.repeat(np.cumsum(n) - n, n)
    hour = (first[idx] + offset) * NS_PER_HOUR
    w_start, w_end = np.maximum(start[idx], hour), np.minimum(end[idx], hour + NS_PER_HOUR)
    if events is None:
        return hour, states[idx], np.full(idx.size, "unknown", object), w_end - w_start
    w_rank = rank[idx]
    windows = pa.table({"rank": pa.array(w_rank, pa.int32()), "start_ns": w_start, "end_ns": w_end,
                        "window": np.arange(idx.size, dtype=np.int64)})
    order = np.argsort(w_rank, kind="stable")   # each rank's span: its first to its last interval
    ranks, first_of = np.unique(w_rank[order], return_index=True)
    span = pa.table({"rank": pa.array(ranks, pa.int32()),
                     "start_ns": np.minimum.reduceat(w_start[order], first_of),
                     "end_ns": np.maximum.reduceat(w_end[order], first_of)})
    t = _engine.ledger(events, windows=windows, span=span).table
    t = t.filter(pc.is_valid(t["window"]))  # outside every accountable interval: not counted
    win = np.asarray(t["window"], np.int64)
    return (hour[win], states[idx][win], np.asarray(t["activity"].cast(pa.string()), object),
            np.asarray(t["duration_ns"], np.int64))


def _cells(hour: np.ndarray, state: np.ndarray, activity: np.ndarray, dur: np.ndarray) -> pa.Table:
    """Summed by (hour, state, activity), in that order; zero cells left out. A cell
    holds at most an hour per rank, so its int64 sum cannot overflow below 2.5 million
    ranks."""
    t = pa.table({"hour_ns": pa.array(hour, pa.int64()), "state": pa.array(state, pa.string()),
                  "activity": pa.array(activity, pa.string()), "duration_ns": pa.array(dur, pa.int64())})
    keys = ["hour_ns", "state", "activity"]
    t = t.group_by(keys).aggregate([("duration_ns", "sum")]).rename_columns([*keys, "duration_ns"])
    t = t.filter(pc.not_equal(t["duration_ns"], 0))
    return t.sort_by([(k, "ascending") for k in keys]).select([*keys, "duration_ns"])


def run_row(key: str, src: Source, run: Run, led: Ledger | None, summary: Mapping[str, Any],
            static: dict[str, str], labels_path: str | None) -> pa.Table:
    """The runs table's row of one run."""
    labels = _run_labels(run, static, labels_path)
    start, end = _extent(run, led)
    acc = labels.get("accelerators")
    if acc is not None and not str(acc).isdigit():
        raise PauError(f"labels of {src.root}: accelerators={acc!r} is not a count. Fix: label it with a whole number")
    row: dict[str, Any] = {
        "run": key, "source": src.root, "sources": list(src.files), "format": src.format,
        "job": labels.get("job"), "cluster": labels.get("cluster"),
        "accelerator_type": labels.get("accelerator_type", _accelerator_type(run)),
        "accelerators": int(acc) if acc is not None else _accelerators(run, led),
        "team": labels.get("team"), "project": labels.get("project"), "user": labels.get("user"),
        "start_ns": start, "end_ns": end,
        "labels": sorted((k, v) for k, v in labels.items() if k not in PROMOTED),
        **_archive.figure_values(summary),
    }
    row.update(_archive.flops_values(summary, labels, row["accelerator_type"], src.root))
    return pa.Table.from_pylist([row], schema=_archive.RUNS_SCHEMA)


# ---------------------------------------------------------------------------
# the worker


@dataclass(frozen=True)
class _Settings:
    out: str
    labels: dict[str, str]
    labels_path: str | None
    skip_bad: bool
    cluster: str | None = None
    tz: str | None = None
    origin_ns: int | None = None
    threads: int | None = None   # a Kineto read's parse threads (1 when runs are read by several processes)


def _refuse(s: _Settings, key: str, src: Source, reason: str) -> None:
    rows = pa.Table.from_pylist([{"key": key, "source": src.root, "format": src.format, "reason": reason}],
                                schema=_archive.REFUSALS_SCHEMA)
    _archive.publish_refusal(s.out, key, rows)


def ingest_source(src: Source, s: _Settings) -> tuple[str, str | None, Any]:
    """Ingest one run's sources: ``(outcome, key, reason)`` with outcome ``added``,
    ``present``, ``refused``, ``passed_over`` or ``bad`` (refused without ``skip_bad``:
    nothing written), ``added_warned`` for a run added with warnings. Runs in a worker:
    everything it keeps is on disk."""
    if src.format is None:
        if src.given and not s.skip_bad:
            return "bad", None, src.reason
        key = _archive.passed_over_key(src.root)
        if not os.path.exists(_archive.table_file(s.out, "refusals", key)):  # once
            _refuse(s, key, src, src.reason or "matches no format pau reads")
        return "passed_over", key, src.reason
    if src.format in _records.RECORD_FORMATS:
        return ingest_records(src, s)
    key = _archive.passed_over_key(src.root)  # until the bytes are read
    try:
        key = _archive.run_key(src.format, src.root, src.files)
        if _archive.in_store(s.out, key):
            _archive.drop_refusal(s.out, key)  # a kill between the commit and this may have left it
            return "present", key, None
        # an Nsight export without device activity (a CPU-only profile) among others adds
        # nothing to their figures: with skip_bad it is refused alone and the rest read
        skip = (NoDeviceEventsError,) if s.skip_bad and src.format == "nsys" and os.path.isdir(src.root) else ()
        opts: dict[str, Any] = {"threads": s.threads} if src.format == "kineto" and s.threads else {}
        runs = read_runs(src.root, format=src.format, skip_bad=skip, **opts)
        if len(runs) != 1:
            raise PauError(f"{len(runs)} runs where one was expected")
        run = runs[0]
        staged = _stage(key, src, run, s)
    except (PauError, OSError) as exc:
        return _failed(s, key, src, exc)
    added = _archive.commit_run(s.out, key, run, *staged)
    _archive.drop_refusal(s.out, key)  # refused before, read now (a newer pau): no longer a refusal
    files_refused = _refuse_files(s, src, run)
    if not added:
        return "present", key, None
    if files_refused:
        return "records", key, {"added": 1, "warned": 1, "refused": files_refused}
    return ("added_warned" if run.warnings else "added"), key, None


def _failed(s: _Settings, key: str, src: Source, exc: Exception) -> tuple[str, str, str]:
    """A source that could not be read: ``bad`` (the ingest stops), or with ``skip_bad`` a
    row of the refusals table and ``refused``."""
    reason = str(exc) or type(exc).__name__
    if not s.skip_bad:
        return "bad", key, reason
    _refuse(s, key, src, reason)
    return "refused", key, reason


def _refuse_files(s: _Settings, src: Source, run: Run) -> int:
    """The files the reader left out of ``run`` (``metadata["skipped_files"]``), each a
    row of the refusals table under the key it has as a source of its own."""
    skipped = run.metadata.get("skipped_files") or []
    for f, why in zip(skipped, run.metadata.get("skipped_reasons") or []):
        _refuse(s, _archive.run_key(str(src.format), f, (f,)), Source(f, src.format, (f,)), why)
    return len(skipped)


def _stage(key: str, src: Source, run: Run, s: _Settings) -> tuple[pa.Table, pa.Table | None]:
    """A run's row and its cells (with the run key). ``s.cluster`` names the cluster of
    a run whose records name none."""
    if s.cluster is not None and run.metadata.get("cluster") in (None, ""):
        run.metadata["cluster"] = s.cluster
    led = run.ledger() if (run.events is not None or run.lifecycle is not None) else None
    # the figures the runs table holds; a run with a job column gets them all, so that its
    # warning (figures.many_jobs, stored with it) names every figure left out, as run.summary()'s
    many = any(t is not None and "job" in t.column_names for t in (run.events, run.lifecycle))
    keys = None if many else ROW_FIGURES
    summary = run_figures(run, ledger=led, keys=keys)
    cells = None if led is None else hourly_cells(run, led)
    row = run_row(key, src, run, led, summary, s.labels, s.labels_path)
    if cells is not None:
        cells = cells.add_column(0, "run", pa.array([key] * cells.num_rows, pa.string())).cast(_archive.CELLS_SCHEMA)
    return row, cells


def ingest_records(src: Source, s: _Settings) -> tuple[str, str | None, Any]:
    """Ingest a source of fleet records (:mod:`pau.fleet.records`): its runs, each
    committed as any run, then its jobs rows as ``jobs/<key>.parquet``, whose rename is
    the source's commit (a kill before it: the next ingest reads the source again, and
    its runs committed are present by key). ``("records", key, counts)``, or ``bad`` /
    ``refused`` as :func:`ingest_source`."""
    fmt = str(src.format)
    key = _archive.passed_over_key(src.root)
    counts = {"added": 0, "present": 0, "warned": 0, "job_sources": 0, "jobs": 0, "jobs_warned": 0}
    try:
        key = _archive.run_key(fmt, src.root, src.files)
        has_jobs = fmt in _records.JOB_FORMATS
        if (_records.jobs_present(s.out, key) if has_jobs else _archive.in_store(s.out, key)):
            _archive.drop_refusal(s.out, key)
            return "present", key, None
        got = _records.read_records(fmt, src.root, src.files, cluster=s.cluster, tz=s.tz,
                                    origin_ns=s.origin_ns)
        runs = []
        for suffix, run in got.runs:
            rkey = _records.run_key_of(key, suffix)
            if _archive.in_store(s.out, rkey):
                counts["present"] += 1
                continue
            runs.append((rkey, run, _stage(rkey, src, run, s)))
            if len(runs) == 64:  # a Philly log of many jobs: committed as it is read, 64 at a time
                _commit_runs(s, runs, counts)
                runs = []
    except (PauError, OSError) as exc:
        return _failed(s, key, src, exc)
    _commit_runs(s, runs, counts)
    if has_jobs and got.jobs is not None:
        _archive.publish_jobs(s.out, key, _records.jobs_file_table(got.jobs, got.warnings))
        counts["job_sources"] += 1
        counts["jobs"] += got.jobs.num_rows
        counts["jobs_warned"] += bool(got.warnings)
    _archive.drop_refusal(s.out, key)
    return "records", key, counts


def _commit_runs(s: _Settings, runs: list[tuple[str, Run, tuple[pa.Table, pa.Table | None]]],
                 counts: dict[str, int]) -> None:
    for rkey, run, staged in runs:
        if _archive.commit_run(s.out, rkey, run, *staged):
            counts["added"] += 1
            counts["warned"] += bool(run.warnings)
        else:
            counts["present"] += 1


def _run_chunk(chunk: list[Source], s: _Settings) -> list[tuple[Source, tuple[str, str | None, Any]]]:
    """Several sources in one task (fewer round trips); stops after a ``bad`` one."""
    out = []
    for src in chunk:
        got = ingest_source(src, s)
        out.append((src, got))
        if got[0] == "bad":
            break
    return out


# ---------------------------------------------------------------------------
# the driver


class _Lock:
    """The archive's lock: one ingest at a time writes to it (the lock goes with the
    process, a kill included)."""

    def __init__(self, out: str):
        if fcntl is None:  # pragma: no cover
            raise PauError("ingest: this platform has no fcntl file locks, which keep two ingests from writing to one "
                           "archive. Fix: run pau ingest on Linux or macOS")
        self.f = open(os.path.join(out, _archive.TMP, "ingest.lock"), "w")
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.f.close()
            raise PauError(f"ingest: {out!r}: another ingest is writing to this archive. Fix: wait for it to "
                           "end") from None

    def close(self) -> None:
        self.f.close()


def _clean_tmp(out: str) -> None:
    """Leftovers of an ingest that was killed (this one holds the lock)."""
    folder = os.path.join(out, _archive.TMP)
    for name in os.listdir(folder):
        if name == "ingest.lock":
            continue
        p = os.path.join(folder, name)
        if os.path.isdir(p):
            shutil.rmtree(p, ignore_errors=True)
        else:
            os.unlink(p)


def _chunks(sources: Iterator[Source], size: int) -> Iterator[list[Source]]:
    chunk: list[Source] = []
    for src in sources:
        chunk.append(src)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def ingest(sources: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], *,
           labels: Any = None, workers: int | None = None, client: Any = None, skip_bad: bool = False,
           progress: Any = None, chunk: int = 1, cluster: str | None = None, tz: str | None = None,
           origin_ns: int | None = None) -> IngestResult:
    """Read every run under ``sources`` into the fleet archive ``out`` (``docs/fleet.md``).

    Parameters
    ----------
    sources : path or list of paths
        Files and folders in any format :func:`pau.read` knows; folders are searched
        recursively, and the files of one run are grouped as :func:`pau.read_runs`
        groups them (a folder with traces is one run; each MLPerf log, serving results
        file or CSV its own run; a folder of Parquet files one table). Also the fleet
        records of :mod:`pau.fleet.records`: scheduler records (sacct, pod lists, the
        Alibaba pod list) go to the jobs table; Megatron-LM logs and each job's NVRx
        cycle files are runs; Philly's job log is both, a run per job.
    out : path
        The archive's folder (made when absent). A run already in it (by run key) is
        skipped, so a re-run adds only what is new.
    labels : mapping, path, or a list of both
        Labels of the runs: a mapping applies to every run (``pau ingest --label
        k=v``); a path is a CSV or JSON labels file, one row per ``job``, applied to the
        runs of that job (``--labels FILE``). ``job``, ``cluster``,
        ``accelerator_type``, ``accelerators``, ``team``, ``project``, ``user`` are
        columns of the runs table; the others go to its ``labels`` map.
    workers : int, optional
        Processes reading runs at once (a ``ProcessPoolExecutor``); default every core;
        1 reads in this process. With ``client``, the tasks in flight on the cluster.
    client : distributed.Client, optional
        Read on a Dask cluster instead (its workers must see ``sources`` and ``out`` at
        the same paths).
    skip_bad : bool
        A source that its reader refuses is written to the refusals table with the
        reason, and the others go on; by default ingest stops there with
        :class:`IngestError` naming it (runs finished before stay in the archive).
    progress : None, bool or callable
        As in :func:`pau.core.classify_dataset`: partitions are the runs' sources (done
        and found so far), rows the runs added.
    chunk : int
        Sources per task sent to a worker.
    cluster : str, optional
        The cluster of the sources whose records name none (``pau ingest --cluster``):
        scheduler records (``sacct`` output without a ``Cluster`` field, pod lists, the
        readers' ``cluster=``) and runs (a run's ``cluster`` label still wins).
    tz : str, optional
        The IANA zone of local times without a zone: ``sacct`` text, Philly's job log,
        Megatron-LM logs (the readers' ``tz=``; not given: UTC, with their warning).
    origin_ns : int, optional
        Where the Alibaba pod list's times (seconds from the trace's start) begin
        (``read_alibaba_pods``' ``origin_ns=``; not given: 0, with its warning).

    Returns
    -------
    IngestResult
        Counts of runs added, present, refused and files passed over.
    """
    outp = os.fspath(out)
    _check_options(chunk, workers, tz, cluster, origin_ns)
    static, labels_path = _split_labels(labels)
    walk = sources_of(sources)
    first = next(walk, None)  # the sources exist before the archive is made
    _archive.create(outp)
    lock = _Lock(outp)
    try:
        _clean_tmp(outp)
        _archive.compact(outp)  # what a killed ingest committed, into the tables
        # several readers at once share the cores already: each parses its files on one thread
        threads = None if client is None and (workers or cores()) == 1 else 1
        s = _Settings(os.path.abspath(outp), static, labels_path, skip_bad, cluster, tz, origin_ns, threads)
        result = IngestResult(outp)
        track = tracker(progress, 0, None)

        def found() -> Iterator[Source]:
            if first is not None:
                track.partitions_total += 1
                yield first
            for src in walk:
                track.partitions_total += 1
                yield src

        def done(src: Source, got: tuple[str, str | None, Any]) -> None:
            outcome, _, reason = got
            if outcome == "bad":
                raise IngestError(src.root, src.format, reason or "refused")
            if outcome == "records":
                for name, n in reason.items():
                    setattr(result, name, getattr(result, name) + n)
                track.partition_done(0, result.added)
                return
            if outcome == "added_warned":
                outcome = "added"
                result.warned += 1
            setattr(result, outcome, getattr(result, outcome) + 1)
            # one running count (a key per source would keep per-run state here)
            track.partition_done(0, result.added)

        tasks = _chunks(found(), chunk)
        try:
            if client is not None:
                _drive_dask(client, tasks, s, workers, done)
            elif (workers or cores()) == 1:
                for c in tasks:
                    for src, got in _run_chunk(c, s):
                        done(src, got)
            else:
                with cf.ProcessPoolExecutor(max_workers=workers or cores()) as pool:
                    _drive(lambda c: pool.submit(_run_chunk, c, s), tasks, 2 * (workers or cores()), done,
                           cancel=lambda fs: [f.cancel() for f in fs])
        finally:  # no worker writes now: the runs committed go into the tables, also when stopped
            _archive.compact(outp)
            track.close()
        return result
    finally:
        lock.close()


def _check_options(chunk: int, workers: int | None, tz: str | None, cluster: str | None,
                   origin_ns: int | None) -> None:
    """:func:`ingest`'s options, refused before any work."""
    if chunk < 1:
        raise OptionError(f"chunk: expected at least 1, got {chunk}")
    if workers is not None and workers < 1:
        raise OptionError(f"workers: expected at least 1, got {workers}")
    if tz is not None:
        _zone(tz, "ingest", "", [])  # a zone that is none
    if cluster is not None and (not isinstance(cluster, str) or not cluster):
        raise OptionError(f"cluster: expected a name, got {cluster!r}")
    if origin_ns is not None and (isinstance(origin_ns, bool) or not isinstance(origin_ns, int)
                                  or not -2**63 < origin_ns < 2**63):
        raise OptionError(f"origin_ns: expected int64 ns since the epoch, got {origin_ns!r}")


def _drive(submit: Callable[[list[Source]], Any], tasks: Iterator[list[Source]], in_flight: int,
           done: Callable[..., None], cancel: Callable[[set[Any]], Any]) -> None:
    """Keep ``in_flight`` tasks running; hand each result to ``done`` (which may raise:
    then the tasks not started are cancelled and the running ones end, whole)."""
    pending: set[Any] = set()
    try:
        for c in tasks:
            pending.add(submit(c))
            if len(pending) >= in_flight:
                finished, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                for f in finished:
                    for src, got in f.result():
                        done(src, got)
        while pending:
            finished, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            for f in finished:
                for src, got in f.result():
                    done(src, got)
    except BaseException:
        cancel(pending)
        raise


def _drive_dask(client: Any, tasks: Iterator[list[Source]], s: _Settings, workers: int | None,
                done: Callable[..., None]) -> None:
    import distributed  # the optional extra: only with a client

    dist: Any = distributed

    n = workers or max(1, sum(client.nthreads().values()))
    pending = dist.as_completed()
    active: list[Any] = []
    try:
        for c in tasks:
            fut = client.submit(_run_chunk, c, s, pure=False)
            pending.add(fut)
            active.append(fut)
            if pending.count() >= 2 * n:
                f = next(pending)
                for src, got in f.result():
                    done(src, got)
                active.remove(f)
                f.release()
        for f in pending:
            for src, got in f.result():
                done(src, got)
            active.remove(f)
            f.release()
    except BaseException:
        for f in active:
            f.cancel()
        dist.wait(active)  # a task that had started ends (whole) before the tables are compacted
        raise
