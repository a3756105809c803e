"""The fuzz corpus (``tests/fuzz_corpus``, issue 38) through pau's Python entry points.

``csrc/fuzz/run.sh`` runs each native parser's fuzz target over its corpus under
AddressSanitizer and UndefinedBehaviorSanitizer (docs/bad-input.md); this file sends
the same inputs through the calls Python makes, and holds each answer to the suite's
rule (:func:`fuzz.run_case`): a result, or a :class:`pau.errors.PauError`, never
another exception. Where the decoder accepts an input, a second reader must agree:

* ``parquet_chunk``, ``parquet_delta``, ``parquet_rle``: ``_core.parquet_ints`` /
  ``parquet_dictionary`` (a delta or RLE input wrapped in a page, as a chunk holds
  it); values the decoder gives equal those of the slow twin
  (``tests/parquet_reference.py``);
* ``snappy``: ``_core.snappy_decompress``; what it gives equals pyarrow's snappy;
* ``kineto``: ``pau.read(..., format="kineto")``, the figures' conservation checked;
* ``parquet_file``: whole files, by the native decoder (equal to pyarrow's reader
  where it reads a row group) and by ``pau.read`` where they hold events.

Each input's leading bytes are the options its fuzz target reads (``csrc/fuzz/*.cpp``).
"""

from __future__ import annotations

import pathlib
import random
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pau
import pau.core
from pau import _core
from pau.engine import _parquet

import fuzz
import parquet_reference as ref

CORPUS = pathlib.Path(__file__).resolve().parent / "fuzz_corpus"


def _inputs(target: str) -> list[pathlib.Path]:
    files = sorted((CORPUS / target).iterdir())
    assert files, f"no corpus for {target}"
    return files


def _ids(files: list[pathlib.Path]) -> list[str]:
    return [f.name for f in files]


def _i32(v: int) -> bytes:
    return b"\x15" + ref.zigzag_bytes(v)


def _page(kind: int, n: int, encoding: int, values: bytes) -> bytes:
    """A page (Thrift compact header, then ``values``): kind 0 a v1 data page, 2 a
    dictionary page."""
    sub = b"\x2c" if kind == 0 else b"\x4c"   # field 5 (data) or 7 (dictionary), a struct
    levels = _i32(3) + _i32(3) if kind == 0 else b""
    return (_i32(kind) + _i32(len(values)) + _i32(len(values)) + sub + _i32(n) + _i32(encoding) + levels
            + b"\x00\x00" + values)


def _ints(chunk: bytes, bits: int, n: int, codec: int, optional: bool, verify: bool = True):
    out = pa.allocate_buffer(n * bits // 8)
    if not _core.parquet_ints(chunk, bits, n, verify, out, codec, optional):
        return None
    return np.frombuffer(out, np.int64 if bits == 64 else np.int32).tolist()


def _seed_read(path: pathlib.Path, got) -> None:
    """A seed is real data the decoder reads (a mutated input or a crash may be refused)."""
    assert got is not None or not path.name.startswith("seed-"), f"{path.name}: a seed the decoder refuses"


def _twin_agrees(name: str, got, chunk: bytes, bits: int, codec: int, optional: bool, verify: bool = True):
    if got is None:
        return
    try:
        want = ref.int_chunk(chunk, bits, verify, "SNAPPY" if codec else "UNCOMPRESSED", optional)
    except Exception as exc:  # noqa: BLE001 - the decoder read what its twin cannot
        raise AssertionError(f"{name}: decoded, but the slow twin refuses it ({type(exc).__name__}: {exc})")
    assert got == want, f"{name}: the decoder and its slow twin disagree"


@pytest.mark.parametrize("path", _inputs("parquet_chunk"), ids=_ids(_inputs("parquet_chunk")))
def test_parquet_chunk(path):
    data = path.read_bytes()
    how = data[0] if data else 0
    n = int.from_bytes(data[1:4].ljust(3, b"\0"), "little") & 0xFFFF
    chunk = data[4:]
    codec, optional, verify = (1 if how & 8 else 0), bool(how & 16), bool(how & 32)
    name = path.name
    if how & 7 in (0, 1):
        bits = 32 if how & 7 == 0 else 64
        got = fuzz.run_case(name, lambda: _ints(chunk, bits, n, codec, optional, verify))
        _seed_read(path, got)
        _twin_agrees(name, got, chunk, bits, codec, optional, verify)
        return
    index_bits = {2: 8, 3: 16}.get(how & 7, 32)
    out = pa.allocate_buffer(n * index_bits // 8)
    got = fuzz.run_case(name, lambda: _core.parquet_dictionary(chunk, index_bits, n, verify, out, codec, optional))
    _seed_read(path, got)
    if got is not None:
        offsets, strings = got
        indices = np.frombuffer(out, {8: np.int8, 16: np.int16, 32: np.int32}[index_bits])
        assert offsets[0] == 0 and offsets[-1] == len(strings) and (np.diff(offsets) >= 0).all(), name
        assert ((indices >= 0) & (indices < len(offsets) - 1)).all(), name


@pytest.mark.parametrize("path", _inputs("parquet_delta"), ids=_ids(_inputs("parquet_delta")))
def test_parquet_delta(path):
    data = path.read_bytes()
    bits = 64 if data[:1] and data[0] & 1 else 32
    n = int.from_bytes(data[1:3].ljust(2, b"\0"), "little")
    chunk = _page(0, n, 5, data[3:])
    got = fuzz.run_case(path.name, lambda: _ints(chunk, bits, n, 0, False))
    _seed_read(path, got)
    _twin_agrees(path.name, got, chunk, bits, 0, False)


@pytest.mark.parametrize("path", _inputs("parquet_rle"), ids=_ids(_inputs("parquet_rle")))
def test_parquet_rle(path):
    """The hybrid's bytes as the indices of a data page into a dictionary of that many
    int64 values (0, 1, 2...): what the decoder gives equals its twin's."""
    data = path.read_bytes().ljust(5, b"\0")
    width, n = data[0] & 63, int.from_bytes(data[1:3], "little")
    size = int.from_bytes(data[3:5], "little")
    dictionary = np.arange(size, dtype=np.int64).tobytes()
    chunk = _page(2, size, 0, dictionary) + _page(0, n, 8, bytes([width]) + data[5:])
    got = fuzz.run_case(path.name, lambda: _ints(chunk, 64, n, 0, False))
    _seed_read(path, got)
    _twin_agrees(path.name, got, chunk, 64, 0, False)


@pytest.mark.parametrize("path", _inputs("snappy"), ids=_ids(_inputs("snappy")))
def test_snappy(path):
    data = path.read_bytes()
    n, shift = 0, 0
    for b in data[:5]:
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    n = min(n, 1 << 24)
    got = fuzz.run_case(path.name, lambda: _core.snappy_decompress(data, n))
    _seed_read(path, got)
    if got is not None:
        assert got == pa.Codec("snappy").decompress(data, decompressed_size=n).to_pybytes(), path.name


@pytest.mark.parametrize("path", _inputs("kineto"), ids=_ids(_inputs("kineto")))
def test_kineto(tmp_path, path):
    trace = tmp_path / "trace.json"
    trace.write_bytes(path.read_bytes()[1:])
    run = fuzz.run_case(path.name, lambda: pau.read(str(trace), format="kineto"), names=trace.name)
    if run is None or run.events is None or not run.events.num_rows:
        return
    c = fuzz.run_case(path.name, lambda: pau.core.classify(run.events, span=run.spans))
    if c is not None:
        got = dict(zip(*c.group_by("rank").aggregate([("duration_ns", "sum")]).to_pydict().values()))
        want = {r: e - s for r, s, e in zip(*run.spans.to_pydict().values())}
        assert got == want, path.name


@pytest.mark.parametrize("path", _inputs("parquet_file"), ids=_ids(_inputs("parquet_file")))
def test_parquet_file(tmp_path, path):
    """A whole file: each row group the native decoder reads equals pyarrow's; an events
    file reads by ``pau.read`` to conserved figures or to an error naming it."""
    p = tmp_path / "case.parquet"
    shutil.copyfile(path, p)
    name = path.name
    try:
        meta = pq.ParquetFile(p)
    except (OSError, pa.ArrowException):  # a footer pyarrow cannot read: pau names the file
        assert fuzz.run_case(name, lambda: pau.read(str(p)), names=p.name) is None, name
        return
    file = _parquet.File.of(str(p), meta)
    for i in range(meta.num_row_groups):
        for column in file.columns:
            got = _native_agrees_with_pyarrow(name, file, meta, i, column)
            _seed_read(path, got)
    if {"rank", "start_ns", "end_ns", "kind"} <= set(meta.schema_arrow.names):
        run = fuzz.run_case(name, lambda: pau.read(str(p)), names=p.name)
        _seed_read(path, run)
        if run is not None:
            summary = fuzz.run_case(name, run.summary)
            _seed_read(path, summary)
            if summary is not None and summary["ledger"] is not None:
                led = summary["ledger"]
                assert sum(led["state_ns"].values()) == led["accountable_ns"], name


def _native_agrees_with_pyarrow(name: str, file: _parquet.File, meta: pq.ParquetFile, i: int,
                                column: str) -> pa.Table | None:
    """Row group ``i`` of ``column`` read natively (None where the decoder refuses it);
    where it reads it, pyarrow must read it too, to the same values."""
    got = fuzz.run_case(name, lambda: _parquet.read_row_group(file, i, [column], _parquet.Buffer()))
    if got is None:
        return None
    where = f"{name}, row group {i}, {column}"
    try:
        want = meta.read_row_group(i, columns=[column])
    except (OSError, pa.ArrowException) as exc:
        raise AssertionError(f"{where}: read natively, but pyarrow refuses it: {exc}") from None
    assert _indices_inside(got), f"{where}: an index outside the dictionary"
    if _indices_inside(want):
        assert _values(got) == _values(want), f"{where}: native and pyarrow differ"
    # else pyarrow merged a damaged dictionary page's equal strings but not the indices
    # past them: its table is not valid (pau refuses it, naming the row:
    # _parquet.check_indices); the decoder's is.
    return got


def _indices_inside(t: pa.Table) -> bool:
    col = t.column(0).combine_chunks()
    if not pa.types.is_dictionary(col.type) or not len(col):
        return True
    idx = col.indices.to_numpy(zero_copy_only=False)
    return bool(((idx >= 0) & (idx < len(col.dictionary))).all())


def _values(t: pa.Table) -> list:
    """A one-column table's values, a dictionary's decoded (strings as bytes): pyarrow
    merges the equal strings of a damaged dictionary page (its indices follow), the decoder
    keeps the page's strings as they are; the values are the same."""
    col = t.column(0).combine_chunks()
    if pa.types.is_dictionary(col.type):
        col = col.dictionary.take(col.indices)
    if pa.types.is_string(col.type):  # as bytes: neither reader checks a damaged string's UTF-8
        col = col.cast(pa.binary())
    return col.to_pylist()


def _flip_in_chunks(rng, data: bytes) -> bytes:
    """Bytes of the column chunks changed (the footer kept, so that pyarrow opens the
    file): bits flipped, bytes set to any value or to an extreme varint byte."""
    footer = int.from_bytes(data[-8:-4], "little")
    end = len(data) - 8 - footer
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 4, 16))):
        at = rng.randrange(4, end)
        out[at] = rng.choice((out[at] ^ (1 << rng.randrange(8)), rng.randrange(256), 0xFF, 0x80, 0x00))
    return bytes(out)


def test_mutated_files_read_natively_only_as_pyarrow_reads_them(tmp_path):
    """The decoder accepts nothing pyarrow refuses: each seed file, its chunks damaged,
    read row group by row group and column by column by both readers. Where the decoder
    gives a column, pyarrow reads the same; where it refuses, pau's path still answers
    (pyarrow's table or a PauError naming the file)."""
    seeds = [p for p in _inputs("parquet_file") if p.name.startswith("seed-")]
    accepted = 0
    for k in range(fuzz.cases(1000)):
        rng = random.Random(f"38-file-{k}")
        source = rng.choice(seeds)
        p = tmp_path / f"case{k}.parquet"
        p.write_bytes(_flip_in_chunks(rng, source.read_bytes()))
        name = f"file case {k} ({source.name})"
        meta = pq.ParquetFile(p)
        file = _parquet.File.of(str(p), meta)
        for i in range(meta.num_row_groups):
            for column in file.columns:
                accepted += _native_agrees_with_pyarrow(name, file, meta, i, column) is not None
        p.unlink()
    assert accepted, "no damaged chunk was read natively: the test checks nothing"
