"""Reading and writing pau's tables.

Parquet sources are streamed one row group at a time: pyarrow's batch iterator was
seen holding far more memory than a row group on large files, while a row-group
read holds one row group. The next row group is read on a second thread while the
caller works on the current one (pyarrow releases the GIL while decoding).
"""

from __future__ import annotations

import contextvars
import inspect
import os
import shutil
import threading
import warnings
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Callable, Generator, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pau.engine import _parquet
from pau.engine._input import EVENT_COLUMNS, as_table, iter_batches
from pau.engine._progress import tracker
from pau.engine.types import RunWarning
from pau.errors import NoInputError, OptionError, PauError, SchemaError

__all__ = ["stream_events", "parquet_files", "write_dataset", "read_dataset", "layout_version", "LAYOUT_VERSION",
           "row_group_bytes", "read_table", "read_schema", "write_table", "skipped_files"]



def _hive_keys(path: str, root: str | None = None) -> dict[str, Any]:
    """The ``key=value`` folders a file lies in (``job=J/rank=R/part-0.parquet``), below
    ``root`` when given, so a file of pau's layout named alone still has its rank;
    integers as ints."""
    keys: dict[str, Any] = {}
    folder = os.path.dirname(os.path.abspath(path))
    if root is not None:
        folder = os.path.relpath(folder, os.path.abspath(root))
    for part in os.path.normpath(folder).split(os.sep):
        k, eq, v = part.partition("=")
        if eq and k.isidentifier() and v:
            keys[k] = int(v) if v.lstrip("-").isdigit() else v
    return keys


#: While :func:`skipped_files` is active: the warnings about files left out of a dataset
#: (one per folder), instead of a Python warning.
_SKIPPED: contextvars.ContextVar[dict[str, RunWarning] | None] = contextvars.ContextVar("pau_io_skipped",
                                                                                      default=None)


@contextmanager
def skipped_files() -> Iterator[list[RunWarning]]:
    """Within the block, :func:`parquet_files` reports the files it leaves out of a
    dataset into the list this yields (filled when the block ends; once per folder),
    instead of as a Python ``UserWarning``: :func:`pau.read` puts them in
    ``run.warnings``."""
    found: dict[str, RunWarning] = {}
    token = _SKIPPED.set(found)
    out: list[RunWarning] = []
    try:
        yield out
    finally:
        _SKIPPED.reset(token)
        out.extend(found.values())


def parquet_files(source: str | os.PathLike[str]) -> list[tuple[str, dict[str, Any]]]:
    """Parquet files under ``source`` in path order, with their hive partition values.

    A folder is walked as pyarrow.dataset lists a hive-partitioned one: names that start
    with ``.`` or ``_`` are not data (``_SUCCESS``, ``_metadata``, ``.part.tmp``) and are
    passed over. Of the other files, those whose names do not end in ``.parquet`` (a
    ``README.txt``, a ``part-1.parquet.tmp`` left by a writer) are skipped with one
    warning that counts and names them (a Python ``UserWarning``, or ``run.warnings``
    under :func:`skipped_files`); a file named ``.parquet`` that is not Parquet is an
    error naming it when it is read. Raises :class:`pau.errors.NoInputError` when
    nothing is at ``source`` or a folder holds no Parquet file."""
    path = os.fspath(source)
    if os.path.isfile(path):
        return [(path, _hive_keys(path))]
    if not os.path.isdir(path):
        raise NoInputError(f"no Parquet file or directory at {path!r}")
    # Walked without importing pyarrow.dataset: it imports pandas, a third of pau's
    # import time.
    out, skipped = [], []
    for folder, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        for name in files:
            if not name.startswith((".", "_")):
                f = os.path.join(folder, name)
                if name.endswith(".parquet"):
                    out.append((f, _hive_keys(f, path)))
                else:
                    skipped.append(os.path.relpath(f, path))
    out.sort(key=lambda item: item[0])
    if skipped:
        skipped.sort()
        shown = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
        w = RunWarning("dataset.skipped_files", f"{path}: {len(skipped)} files not named *.parquet left out "
                       f"of the dataset ({shown})")
        found = _SKIPPED.get()
        if found is not None:
            found.setdefault(path, w)
        else:
            warnings.warn(w.message, UserWarning, stacklevel=2)
    if not out:
        raise NoInputError(f"no Parquet files (*.parquet) under {path!r}" +
                           (f" ({len(skipped)} other files)" if skipped else "") +
                           ". Fix: give a Parquet file or a folder of them (pau.engine.io.write_dataset writes one)")
    return out


def _corrupt(path: str, exc: BaseException, where: str = "") -> PauError:
    """A pyarrow failure on ``path`` as pau's error: pyarrow's own messages name neither
    the file nor what to do."""
    return PauError(f"{path}{where}: not readable as Parquet ({type(exc).__name__}: {exc}). Fix: the file is "
                    "truncated, corrupt or not Parquet (a page checksum that does not match is corruption): "
                    "write it again from its source, or move it out of the dataset")


#: What pyarrow raises on a file it cannot read (ArrowInvalid is a ValueError, ArrowIOError
#: an OSError).
_READ_ERRORS = (pa.ArrowException, OSError, ValueError)


def _open(path: str) -> pq.ParquetFile:
    """``path`` opened with every data page's checksum verified where it has one."""
    try:
        pf = pq.ParquetFile(path, page_checksum_verification=True)
        pf.schema_arrow  # decoded here, so that a corrupt schema names its file too
    except _READ_ERRORS as exc:
        raise _corrupt(path, exc) from None
    return pf


def read_table(path: str | os.PathLike[str], columns: Sequence[str] | None = None) -> pa.Table:
    """One Parquet file, with its page checksums verified; pau's error (naming the file)
    when it cannot be read."""
    p = os.fspath(path)
    pf = _open(p)
    try:
        return pf.read(columns=None if columns is None else list(columns))
    except _READ_ERRORS as exc:
        raise _corrupt(p, exc) from None


def read_schema(path: str | os.PathLike[str]) -> pa.Schema:
    """The Arrow schema of one Parquet file (pau's error, naming it, when unreadable)."""
    return _open(os.fspath(path)).schema_arrow


def write_table(table: pa.Table, path: str | os.PathLike[str], **options: Any) -> None:
    """``pyarrow.parquet.write_table`` with a checksum on every page, so that a flipped
    bit is an error on read rather than a changed figure."""
    pq.write_table(table, os.fspath(path), write_page_checksum=True, **options)


def _check_keys(t: pa.Table, keys: dict[str, Any], path: str, where: str = "") -> None:
    """Refuse a file whose column contradicts the hive folder it lies in (``rank=7/``
    holding rank 1): which one is right cannot be known, and either choice changes the
    figures silently."""
    for c, v in keys.items():
        if c not in t.column_names or t.num_rows == 0:
            continue
        col = t.column(c)
        if isinstance(v, int) and pa.types.is_integer(col.type) and col.null_count == 0:
            mm = pc.min_max(col).as_py()
            if mm["min"] == v == mm["max"]:
                continue
        same = pc.fill_null(pc.equal(pc.cast(col, pa.string()), pa.scalar(str(v))), False)
        if pc.all(same).as_py():
            continue
        row = int(pc.index(same, False).as_py())
        raise PauError(f"{path}{where}: column '{c}' holds {col[row].as_py()!r} at row {row}, but the file lies "
                       f"in the folder {c}={v}. Fix: move the file to the folder of its {c}, or rewrite it "
                       f"with {c} = {v!r} (pau.engine.io.write_dataset names the folders from the column)")


def row_group_bytes(path: str | os.PathLike[str], columns: Sequence[str] = EVENT_COLUMNS,
                    keys: dict[str, Any] | None = None) -> list[int]:
    """Estimated bytes one row group of ``path`` takes once read (the ``columns`` as
    Arrow arrays), per row group, from the Parquet footer alone.

    Fixed-width columns cost ``rows x width`` (plus a validity bitmap); dictionary
    columns their indices plus the column's uncompressed size in the file (an upper
    bound of the dictionary); other columns their uncompressed size plus offsets.
    A column missing from the file but named by a hive key (``rank``) costs 4 bytes
    a row. The Parquet "uncompressed" size alone would be far too low for pau's
    delta-encoded times (about 2 bytes a value against 8 in memory).
    """
    pf = _open(os.fspath(path))
    schema = pf.schema_arrow
    meta = pf.metadata
    out = []
    for i in range(meta.num_row_groups):
        rg = meta.row_group(i)
        rows = rg.num_rows
        stored = {rg.column(j).path_in_schema: rg.column(j).total_uncompressed_size
                  for j in range(rg.num_columns)}
        total = 0
        for c in columns:
            if c not in schema.names:
                total += 4 * rows if c in (keys or {}) else 0
                continue
            t = schema.field(c).type
            bitmap = (rows + 7) // 8
            if pa.types.is_dictionary(t):
                total += rows * t.index_type.bit_width // 8 + bitmap + stored.get(c, 0)
            elif getattr(t, "bit_width", 0) >= 8:
                total += rows * t.bit_width // 8 + bitmap
            else:
                total += stored.get(c, 0) + 8 * rows + bitmap
        out.append(int(total))
    return out


_READERS = threading.local()


def _reader(path: str) -> pq.ParquetFile:
    """This thread's ParquetFile of ``path``: a ParquetFile is not safe to read from
    two threads at once (it crashed), so each reading thread opens its own, and keeps
    one file open at a time (reopened when the file changed on disk)."""
    st = os.stat(path)
    key = (os.fspath(path), st.st_size, st.st_mtime_ns, st.st_ino)
    if getattr(_READERS, "key", None) != key:
        _READERS.pf, _READERS.key = _open(path), key
    return _READERS.pf


def _buffer() -> _parquet.Buffer:
    """This thread's buffer for the native decoder's column chunks."""
    buf = getattr(_READERS, "buf", None)
    if buf is None:
        _READERS.buf = buf = _parquet.Buffer()
    return buf


def _read_row_group(file: _parquet.File, i: int, columns: list[str], arena: _parquet.Arena | None) -> pa.Table:
    """Row group ``i`` of ``columns``: by the native decoder where it reads them (pau's
    layout; into ``arena``'s buffers when given), else by pyarrow; the same table
    either way."""
    t = _parquet.read_row_group(file, i, columns, _buffer(), arena)
    if t is None:
        t = _reader(file.path).read_row_group(i, columns=columns)
        _parquet.check_indices(t, f"{file.path}, row group {i}")  # pyarrow does not check them
    return t


def _constant_int32(value: int, n: int) -> pa.Array:
    """n copies of an int32, in fresh memory of the Arrow pool (a reader with an arena
    fills its own once per value: :meth:`pau.engine._parquet.Arena.int32_constant`)."""
    buf = pa.allocate_buffer(4 * n)
    np.frombuffer(buf, np.int32)[:] = value
    return pa.Array.from_buffers(pa.int32(), n, [None, buf])


def _row_group_reads(files: list[tuple[str, dict[str, Any]]], columns: list[str],
                     batch_rows: int | None, arena: _parquet.Arena | None = None,
                     ) -> Iterator[tuple[Callable[[], pa.Table], int]]:
    """Callables, each reading one row group (optionally sliced into batches). With
    an ``arena`` (:class:`pau.engine._parquet.Arena`), each table is valid until the next
    read: for a caller on one thread that is done with each before the next."""
    for path, keys in files:
        pf = _open(path)
        file = _parquet.File.of(path, pf)
        names = pf.schema_arrow.names
        present = [c for c in columns if c in names]
        missing = [c for c in columns if c not in names and c in keys]
        # the rank field as written (layout 2 keeps its nullability in the metadata)
        rank_field = pa.field("rank", pa.int32(),
                              nullable=(pf.schema_arrow.metadata or {}).get(_RANK_NOT_NULL) != b"1")
        for i in range(pf.num_row_groups):
            def read(path: str = path, file: _parquet.File = file, i: int = i, present: list[str] = present,
                     missing: list[str] = missing, keys: dict[str, Any] = keys,
                     rank_field: pa.Field = rank_field) -> pa.Table:
                try:
                    t = _read_row_group(file, i, present, arena)
                except _READ_ERRORS as exc:
                    raise _corrupt(path, exc, f", row group {i}") from None
                _check_keys(t, keys, path, f", row group {i}")
                for c in missing:
                    value = keys[c]
                    if c == "rank":
                        t = t.append_column(rank_field, _constant_int32(int(value), t.num_rows) if arena is None
                                            else arena.int32_constant(int(value), t.num_rows))
                    else:
                        t = t.append_column(c, pa.array([value] * t.num_rows))
                return t
            yield read, pf.metadata.row_group(i).num_rows


#: Row groups read ahead of the one being swept, on as many threads (each with its own
#: ParquetFile): two keep both cores decoding, where one row group's four columns
#: alone leave a core idle at times.
READ_AHEAD = 2


def stream_events(source: Any, *, columns: Sequence[str] = EVENT_COLUMNS, batch_rows: int | None = None,
                  progress: Any = None, read_ahead: bool | int = True) -> Generator[pa.RecordBatch, None, None]:
    """Record batches of the events columns from a Parquet file/directory or a stream.

    ``progress``: None/False (default) nothing; True a bar on stderr when it is a
    terminal; a callable receives :class:`pau.engine.distributed.Progress` snapshots (one
    partition is one file). ``read_ahead``: row groups read ahead of the caller, each on a thread of its own
    (True: :data:`READ_AHEAD`; False or 0: none) while the caller works on the
    current one."""
    if not isinstance(source, (str, os.PathLike, list, tuple)):
        track = tracker(progress, 0, None)
        try:
            for batch in _sliced(iter_batches(source, "events"), batch_rows):
                yield batch
                track.add_rows(0, batch.num_rows)
                track.poll()
            track._emit()
        finally:
            track.close()
        return
    paths = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    files = [f for p in paths for f in parquet_files(p)]
    reads = []  # (read, rows, index of the file, last row group of its file)
    for k, f in enumerate(files):
        rg = list(_row_group_reads([f], list(columns), batch_rows))
        reads += [(read, n, k, j == len(rg) - 1) for j, (read, n) in enumerate(rg)]
    track = tracker(progress, len(files), sum(r[1] for r in reads))
    try:
        depth = READ_AHEAD if read_ahead is True else int(read_ahead or 0)
        with ThreadPoolExecutor(max_workers=max(depth, 1)) as pool:
            pending = deque(pool.submit(reads[k][0]) for k in range(min(depth, len(reads))))
            for k, (read, rows, part, last) in enumerate(reads):
                table = pending.popleft().result() if depth else read()
                if depth and k + depth < len(reads):
                    pending.append(pool.submit(reads[k + depth][0]))
                for batch in _sliced(table.to_batches(), batch_rows):
                    yield batch
                del table
                track.add_rows(part, rows)
                if last:
                    track.partition_done(part)
                else:
                    track.poll()
    finally:
        track.close()


def _sliced(batches: Iterable[pa.RecordBatch], batch_rows: int | None) -> Iterator[pa.RecordBatch]:
    for b in batches:
        if not batch_rows or b.num_rows <= batch_rows:
            yield b
        else:
            for off in range(0, b.num_rows, batch_rows):
                yield b.slice(off, batch_rows)


# ---------------------------------------------------------------------------
# pau's archive layout

#: Version of the archive layout :func:`write_dataset` writes (file metadata key
#: ``pau.layout_version``). Readers accept every version up to this one; files
#: without the key (plain Parquet) read as version 0.
LAYOUT_VERSION = 2
_LAYOUT_KEY = b"pau.layout_version"
#: Layout 2: b"1" when the events' rank field (not stored) was not nullable.
_RANK_NOT_NULL = b"pau.rank_not_null"
#: Integer columns stored with DELTA_BINARY_PACKED (sorted or slowly varying).
_DELTA_COLUMNS = ("start_ns", "end_ns", "stream", "step", "bytes", "attempt")
#: The columns pau's sweeps read (``rank`` is a folder), written uncompressed for the
#: native decoder (:mod:`pau.engine._parquet`): a codec shrinks delta-packed times by less
#: than 0.1 % and costs a pass over them.
_UNCOMPRESSED = ("start_ns", "end_ns", "kind")


def layout_version(path: str | os.PathLike[str]) -> int:
    """The ``pau.layout_version`` of one Parquet file (0 when it has none).

    Raises :class:`pau.errors.PauError` for a version newer than this pau reads, or a
    file that is not readable Parquet."""
    meta = _open(os.fspath(path)).metadata.metadata or {}
    raw = meta.get(_LAYOUT_KEY)
    try:
        version = int(raw) if raw is not None else 0
    except ValueError:
        raise PauError(f"{os.fspath(path)}: pau.layout_version is {raw!r}, not a number. Fix: the file is "
                       "corrupt: write it again") from None
    if version > LAYOUT_VERSION:
        raise PauError(f"{os.fspath(path)}: pau archive layout version {version} is newer than "
                         f"this pau reads (up to {LAYOUT_VERSION}). Fix: upgrade pau")
    return version


def _layout_options(schema: pa.Schema, compression: str) -> dict[str, Any]:
    delta, dictionary = {}, []
    for f in schema:
        if f.name in _DELTA_COLUMNS and pa.types.is_integer(f.type) and f.type.bit_width in (32, 64):
            delta[f.name] = "DELTA_BINARY_PACKED"
        elif pa.types.is_dictionary(f.type) or pa.types.is_string(f.type) \
                or pa.types.is_large_string(f.type) or f.name == "rank":
            dictionary.append(f.name)
    stats = [c for c in ("start_ns", "end_ns") if c in schema.names]
    codecs = {f.name: "none" if f.name in _UNCOMPRESSED else compression for f in schema}
    opts: dict[str, Any] = dict(compression=codecs, use_dictionary=dictionary, column_encoding=delta,
                                write_statistics=stats)
    if _PAGE_ROWS_OPTION:
        # pages bounded by bytes (1 MiB) only, not by pyarrow's 20,000 rows: fewer, larger
        # pages read with less work per value
        opts["max_rows_per_page"] = MAX_ROWS_PER_PAGE
    return opts


#: Rows per data page at most in pau's layout (pyarrow >= the version with
#: ``max_rows_per_page``; older ones keep their own bound).
MAX_ROWS_PER_PAGE = 1_000_000
_PAGE_ROWS_OPTION = "max_rows_per_page" in inspect.signature(pq.ParquetWriter.__init__).parameters


def write_dataset(events: Any, root: str | os.PathLike[str], *, job: str = "job0",
                  row_group_size: int = 1_000_000, compression: str = "snappy",
                  overwrite: bool = False) -> int:
    """Write events in pau's archive layout: ``root/job=J/rank=R/part-0.parquet``.

    One file per rank (hive partitions ``job`` and ``rank``), ordered by ``start_ns``
    (a rank's events already in that order keep their order; others are sorted by
    ``(start_ns, end_ns)``), so :func:`pau.core.classify_dataset` and
    :func:`pau.engine.distributed.classify_partitions` stream it without sorting. All
    columns of ``events`` are kept. Encodings are chosen for reading speed at no
    larger size than pyarrow's defaults (``benchmarks/test_bench_archive.py``):

    * ``start_ns``, ``end_ns`` and the other integer columns (``stream, step, bytes,
      attempt``) are DELTA_BINARY_PACKED (no dictionary);
    * ``kind`` and ``name`` are dictionary-encoded; ``rank`` is the ``rank=R`` folder
      only, not a column of the file, so that plain readers open the archive without
      flags (``pyarrow.parquet.read_table(root)``, ``pyarrow.dataset``, DuckDB,
      Polars: a column and a hive key of one name but two types cannot be merged).
      pau's readers fill it from the folder (``int32``). Layout version 1 kept it in
      the file too; both versions read;
    * ``start_ns``, ``end_ns`` and ``kind``, the columns pau's sweeps read, are not
      compressed: pau's native page decoder (:mod:`pau.engine._parquet`) reads them about 3x
      faster than pyarrow, and a codec would shrink the delta-packed times by less than
      0.1 %; the other columns are compressed with ``compression`` (snappy: zstd saves
      a few percent but decodes about 1.6x slower; every Parquet reader knows snappy);
    * statistics only for ``start_ns`` and ``end_ns`` (time pruning);
    * data pages of up to 1 MiB with no bound on their rows (:data:`MAX_ROWS_PER_PAGE`;
      pyarrow's default of 20,000 rows a page costs about 7 % more reading time);
    * the Arrow schema is stored (``kind`` reads back as ``dictionary<int8, string>``)
      and the file metadata carries ``pau.layout_version`` (:data:`LAYOUT_VERSION`).

    Parameters
    ----------
    events : table-like
        An events table (DESIGN §2.1); ``rank`` must have no nulls.
    root : str or os.PathLike
        The archive directory (created). Several jobs can share a root.
    job : str, default "job0"
        The ``job=`` partition value.
    row_group_size : int, default 1_000_000
        Maximum rows per row group.
    compression : str, default "snappy"
        Parquet codec of the columns other than ``start_ns``, ``end_ns`` and ``kind``
        (``"zstd"``: a few percent smaller, slower to read).
    overwrite : bool, default False
        When ``root/job=J`` exists: replace it if True, else raise FileExistsError.

    Returns
    -------
    int
        Number of rows written.
    """
    if isinstance(row_group_size, bool) or not isinstance(row_group_size, int) or row_group_size < 1:
        raise OptionError(f"row_group_size must be a positive int, got {row_group_size!r}")
    if not isinstance(job, str) or not job or "/" in job or "=" in job:
        raise OptionError(f"job: expected a non-empty name without '/' or '=', got {job!r}")
    table = as_table(events, "events")
    if "rank" not in table.column_names:
        raise SchemaError("events", "rank", "is missing", "the archive is partitioned by rank: give the events' rank")
    if table.column("rank").null_count:
        first = int(pc.index(pc.is_null(table.column("rank")), True).as_py())
        raise SchemaError("events", "rank", f"is null at row {first} ({table.column('rank').null_count} rows in all)",
                          "give every event its rank (the archive is partitioned by rank)")
    job_dir = os.path.join(os.fspath(root), f"job={job}")
    if os.path.exists(job_dir):
        if not overwrite:
            raise FileExistsError(f"{job_dir} exists. Fix: pass overwrite=True or another job")
        shutil.rmtree(job_dir)
    stored = table.schema.remove(table.schema.get_field_index("rank"))
    opts = _layout_options(stored, compression)
    meta = dict(table.schema.metadata or {})
    meta[_LAYOUT_KEY] = str(LAYOUT_VERSION).encode()
    meta[_RANK_NOT_NULL] = b"0" if table.schema.field("rank").nullable else b"1"
    schema = stored.with_metadata(meta)
    ranks = np.unique(table.column("rank").to_numpy())
    sort_keys = [(c, "ascending") for c in ("start_ns", "end_ns") if c in table.column_names]
    rows = 0
    for r in ranks:
        part = table.filter(pc.equal(table.column("rank"), pa.scalar(r, table.schema.field("rank").type)))
        if sort_keys and not _start_ordered(part):
            part = part.sort_by(sort_keys)
        d = os.path.join(job_dir, f"rank={int(r)}")
        os.makedirs(d, exist_ok=True)
        tmp = os.path.join(d, ".part-0.parquet.tmp")
        # page checksums: a flipped bit in a page is an error on read, not a changed figure
        with pq.ParquetWriter(tmp, schema, write_page_checksum=True, **opts) as writer:
            writer.write_table(part.drop_columns(["rank"]).replace_schema_metadata(meta),
                               row_group_size=row_group_size)
        os.replace(tmp, os.path.join(d, "part-0.parquet"))
        rows += part.num_rows
    if not ranks.size:
        os.makedirs(job_dir, exist_ok=True)
    return rows


def _start_ordered(part: pa.Table) -> bool:
    start = part.column("start_ns").to_numpy()
    return bool(np.all(start[1:] >= start[:-1]))


def read_dataset(root: str | os.PathLike[str], *, columns: Sequence[str] | None = None) -> pa.Table:
    """Read a Parquet file or a dataset (pau's layout or any hive-partitioned one) whole.

    Hive keys (``job``, ``rank``) fill columns the files lack; archives of every
    layout version up to :data:`LAYOUT_VERSION` are read. For large archives stream
    instead (:func:`pau.core.classify_dataset`, :func:`stream_events`)."""
    tables = []
    for path, keys in parquet_files(root):
        layout_version(path)
        t = read_table(path, columns=None if columns is None else
                       [c for c in columns if c in read_schema(path).names])
        _check_keys(t, keys, path)
        not_null = (t.schema.metadata or {}).get(_RANK_NOT_NULL) == b"1"
        for c, v in keys.items():
            if c not in t.column_names and (columns is None or c in columns):
                field = pa.field(c, pa.int32(), nullable=not not_null) if c == "rank" else c
                t = t.append_column(field, pa.array([v] * t.num_rows, pa.int32() if c == "rank" else None))
        tables.append(t.replace_schema_metadata(None))
    return pa.concat_tables(tables, promote_options="default")
