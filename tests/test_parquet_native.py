"""The native Parquet page decoder (csrc/core/parquet.hpp, pau.engine._parquet) against its
slow twin (tests/parquet_reference.py) and against pyarrow's reader, on files
pyarrow writes with every option the decoder meets: encodings, page sizes and
versions, checksums, value ranges, dictionary sizes."""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from depth import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pau.core as core
import pau.engine.io as pio
from pau import _core
from pau.engine import _parquet
from pau.errors import PauError

import parquet_reference as ref

SETTINGS = dict(deadline=None, max_examples=examples(100),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
I64 = st.integers(-(2**63), 2**63 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)


def _chunk(path, rg: int, leaf: int) -> bytes:
    c = pq.ParquetFile(path).metadata.row_group(rg).column(leaf)
    start = c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset
    with open(path, "rb") as f:
        f.seek(start)
        return f.read(c.total_compressed_size)


#: Codec names as pyarrow's metadata gives them, as the decoder's codec argument.
CODEC = {"UNCOMPRESSED": 0, "SNAPPY": 1}


def _codec(path, rg: int, leaf: int) -> str:
    return pq.ParquetFile(path).metadata.row_group(rg).column(leaf).compression


def _native_ints(chunk: bytes, bits: int, n: int, verify: bool = True, codec: str = "UNCOMPRESSED",
                 optional: bool = False):
    out = pa.allocate_buffer(n * bits // 8)
    if not _core.parquet_ints(chunk, bits, n, verify, out, CODEC[codec], optional):
        return None
    return np.frombuffer(out, np.int64 if bits == 64 else np.int32).tolist()


def _required(name: str, t: pa.DataType) -> pa.Schema:
    return pa.schema([pa.field(name, t, nullable=False)])


def _native_read(path, columns):
    """Every row group of ``columns`` read natively (None if one is not)."""
    file = _parquet.File.of(str(path), pq.ParquetFile(path))
    return [_parquet.read_row_group(file, i, list(columns), _parquet.Buffer())
            for i in range(file.metadata.num_row_groups)]


# --- the checksum -----------------------------------------------------------------


@given(st.binary(max_size=3000))
@settings(**SETTINGS)
def test_crc32_is_zlibs(data):
    assert _core.crc32(data) == zlib.crc32(data)


def test_crc32_of_every_length_around_the_folding_steps():
    rng = np.random.default_rng(0)
    data = rng.integers(0, 256, 1 << 20, dtype=np.uint8).tobytes()
    for n in list(range(0, 200)) + [1023, 1024, 1025, (1 << 20) - 1, 1 << 20]:
        assert _core.crc32(data[:n]) == zlib.crc32(data[:n]), n
    assert _core.crc32(b"123456789") == 0xCBF43926  # the check value of CRC-32


# --- snappy -----------------------------------------------------------------------


@st.composite
def snappy_inputs(draw):
    """Bytes of the shapes that compress differently: random (literals), repeats of a
    short pattern (copies of small offsets, which overlap), sorted int64 times (the
    time columns' pages), and long runs (copies of every length)."""
    shape = draw(st.sampled_from(["random", "pattern", "times", "runs"]))
    if shape == "random":
        return draw(st.binary(max_size=5000))
    if shape == "pattern":
        return draw(st.binary(min_size=1, max_size=9)) * draw(st.integers(0, 3000))
    if shape == "times":
        steps = draw(st.lists(st.integers(0, 1 << draw(st.integers(0, 40))), max_size=2000))
        return np.cumsum(np.array(steps, np.int64)).astype("<i8").tobytes()
    parts = draw(st.lists(st.tuples(st.integers(0, 255), st.integers(1, 300)), max_size=40))
    return b"".join(bytes([b]) * k for b, k in parts)


@given(snappy_inputs())
@settings(**SETTINGS)
def test_snappy_decompresses_what_pyarrow_compresses(data):
    packed = pa.Codec("snappy").compress(data).to_pybytes()
    assert _core.snappy_decompress(packed, len(data)) == data
    if data:
        assert _core.snappy_decompress(packed, len(data) - 1) is None  # not the declared length
    assert _core.snappy_decompress(packed, len(data) + 1) is None


@given(snappy_inputs(), st.data())
@settings(**SETTINGS)
def test_snappy_of_damaged_input_is_none_or_pyarrows_answer(data, draw):
    """Cut or flipped bytes: never a read or write out of bounds; either no answer,
    or the same bytes as pyarrow's decompressor gives (the format has one meaning)."""
    packed = bytearray(pa.Codec("snappy").compress(data).to_pybytes())
    if draw.draw(st.booleans()) and packed:
        packed = packed[:draw.draw(st.integers(0, len(packed) - 1))]
    for _ in range(draw.draw(st.integers(0, 4))):
        if packed:
            packed[draw.draw(st.integers(0, len(packed) - 1))] = draw.draw(st.integers(0, 255))
    got = _core.snappy_decompress(bytes(packed), len(data))
    try:
        want = pa.Codec("snappy").decompress(bytes(packed), decompressed_size=len(data)).to_pybytes()
    except (OSError, ValueError, pa.ArrowException):
        want = None
    if got is not None:
        assert len(got) == len(data)
        if want is not None:
            assert got == want


# --- integer columns --------------------------------------------------------------


def _values(draw, bits: int) -> list[int]:
    ints = I64 if bits == 64 else I32
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    shape = draw(st.sampled_from(["any", "sorted", "small", "extremes", "constant", "steps"]))
    n = draw(st.integers(0, 700))
    if shape == "any":
        return draw(st.lists(ints, min_size=n, max_size=n))
    if shape == "sorted":
        return sorted(draw(st.lists(ints, min_size=n, max_size=n)))
    if shape == "small":
        return draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
    if shape == "extremes":
        return draw(st.lists(st.sampled_from([lo, hi, 0, -1, lo + 1, hi - 1]), min_size=n, max_size=n))
    if shape == "constant":
        return [draw(ints)] * n
    start, step = draw(ints), draw(st.integers(0, 2**20))
    return [max(lo, min(hi, start + k * step)) for k in range(n)]


@st.composite
def int_files(draw):
    bits = draw(st.sampled_from([32, 64]))
    values = _values(draw, bits)
    encoding = draw(st.sampled_from(["DELTA_BINARY_PACKED", "PLAIN", "dictionary"]))
    opts = dict(compression=draw(st.sampled_from(["none", "snappy"])),
                data_page_size=draw(st.sampled_from([64, 300, 4096, 1 << 20])),
                data_page_version=draw(st.sampled_from(["1.0", "2.0"])),
                write_page_checksum=draw(st.booleans()), row_group_size=draw(st.sampled_from([100, 1000, 10_000])))
    if encoding == "dictionary":
        opts["use_dictionary"] = True
    else:
        opts.update(use_dictionary=False, column_encoding={"v": encoding})
    # nullable (pyarrow's default for a table of its own) without nulls: optional in the
    # file, its definition levels all 1
    field = pa.field("v", pa.int64() if bits == 64 else pa.int32(), nullable=draw(st.booleans()))
    return pa.table({"v": pa.array(values, field.type)}, schema=pa.schema([field])), bits, opts


@given(int_files())
@settings(**SETTINGS)
def test_int_chunks_match_the_slow_twin_and_pyarrow(tmp_path, case):
    table, bits, opts = case
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, **opts)
    pf = pq.ParquetFile(path)
    got = _native_read(path, ["v"])
    for i in range(pf.num_row_groups):
        n = pf.metadata.row_group(i).num_rows
        chunk, codec = _chunk(path, i, 0), _codec(path, i, 0)
        optional = table.schema.field("v").nullable
        expected = pf.read_row_group(i).column("v").to_pylist()
        assert ref.int_chunk(chunk, bits, codec=codec, optional=optional) == expected
        assert _native_ints(chunk, bits, n, codec=codec, optional=optional) == expected
        if n:
            assert got[i] is not None and got[i].equals(pf.read_row_group(i))
    if pf.num_row_groups == 0 or table.num_rows == 0:
        assert all(t is None for t in got)  # nothing to read: pyarrow's way


def test_delta_packing_of_every_bit_width(tmp_path):
    """Deltas of each width 0..64 (a miniblock of 32 values per width), across a block edge."""
    rng = np.random.default_rng(1)
    values = [0]
    for w in range(65):
        for _ in range(32):
            step = 0 if w == 0 else int(rng.integers(1 << (w - 1), 1 << w, dtype=np.uint64)) if w < 64 \
                else int(rng.integers(1 << 62, 1 << 63, dtype=np.uint64)) * 2 - int(rng.integers(0, 2))
            values.append((values[-1] + step + 2**63) % 2**64 - 2**63)
    path = tmp_path / "w.parquet"
    pq.write_table(pa.table({"v": pa.array(values, pa.int64())}, schema=_required("v", pa.int64())), path,
                   compression="none",
                   use_dictionary=False, column_encoding={"v": "DELTA_BINARY_PACKED"})
    chunk = _chunk(path, 0, 0)
    assert _native_ints(chunk, 64, len(values)) == values == ref.int_chunk(chunk, 64)


# --- dictionary<string> columns ---------------------------------------------------


@st.composite
def dictionary_files(draw):
    words = draw(st.lists(st.text(max_size=6), min_size=1, max_size=300, unique=True))
    n = draw(st.integers(1, 800))
    picks = draw(st.lists(st.integers(0, len(words) - 1), min_size=n, max_size=n))
    runs = draw(st.booleans())
    if runs:
        picks = sorted(picks)  # long runs (RLE), not bit-packed groups
    index = pa.int8() if len(words) <= 127 else pa.int16()
    kind = pa.DictionaryArray.from_arrays(pa.array(picks, index), pa.array(words, pa.string()))
    opts = dict(compression=draw(st.sampled_from(["none", "snappy"])), use_dictionary=True,
                data_page_size=draw(st.sampled_from([32, 500, 1 << 20])),
                data_page_version=draw(st.sampled_from(["1.0", "2.0"])), write_page_checksum=draw(st.booleans()),
                row_group_size=draw(st.sampled_from([64, 1000, 10_000])))
    field = pa.field("kind", kind.type, nullable=draw(st.booleans()))
    return pa.table({"kind": kind}, schema=pa.schema([field])), opts


@given(dictionary_files())
@settings(**SETTINGS)
def test_dictionary_chunks_match_the_slow_twin_and_pyarrow(tmp_path, case):
    table, opts = case
    path = tmp_path / "d.parquet"
    pq.write_table(table, path, **opts)
    pf = pq.ParquetFile(path)
    got = _native_read(path, ["kind"])
    for i in range(pf.num_row_groups):
        expected = pf.read_row_group(i)
        strings, indices = ref.dictionary_chunk(_chunk(path, i, 0), codec=_codec(path, i, 0),
                                                optional=table.schema.field("kind").nullable)
        col = expected.column("kind").combine_chunks()
        assert strings == col.dictionary.to_pylist() and indices == col.indices.to_pylist()
        assert got[i] is not None and got[i].equals(expected)


# --- what goes to pyarrow instead --------------------------------------------------


def test_chunks_the_decoder_does_not_read_give_none(tmp_path):
    n = 5000
    table = pa.table({"v": pa.array(np.arange(n) * 7, pa.int64()),
                      "s": pa.array([str(i) for i in range(n)], pa.string()),
                      "null": pa.array([None if i % 3 else i for i in range(n)], pa.int64())})
    for codec in ("gzip", "zstd"):                         # codecs other than snappy
        other = tmp_path / f"{codec}.parquet"
        pq.write_table(table.select(["v"]).cast(pa.schema([pa.field("v", pa.int64(), nullable=False)])), other,
                       compression=codec)
        assert _native_read(other, ["v"]) == [None], codec
    plain = tmp_path / "plain.parquet"
    pq.write_table(table, plain, compression="none")
    cols = _parquet.columns_of(pq.ParquetFile(plain))
    assert "s" not in cols                                  # dense strings
    assert cols["v"].optional and cols["null"].optional     # nullable (pyarrow's default)
    assert _native_read(plain, ["null"]) == [None]          # with nulls: told by the statistics
    assert _native_read(plain, ["v"])[0].equals(pq.read_table(plain, columns=["v"]))  # without: read
    bare = tmp_path / "bare.parquet"                        # no statistics: the levels tell
    pq.write_table(table, bare, compression="none", write_statistics=False, data_page_version="1.0")
    assert _native_read(bare, ["null"]) == [None]
    assert _native_ints(_chunk(bare, 0, 2), 64, n, optional=True) is None
    assert _native_ints(_chunk(bare, 0, 0), 64, n, optional=True) == list(range(0, 7 * n, 7))
    required = tmp_path / "required.parquet"
    pq.write_table(table.select(["v"]).cast(pa.schema([pa.field("v", pa.int64(), nullable=False)])), required,
                   compression="none", use_dictionary=False)
    assert _native_read(required, ["v"])[0].equals(pq.read_table(required))


def test_a_page_whose_checksum_fails_gives_none(tmp_path):
    path = tmp_path / "c.parquet"
    values = np.arange(10_000, dtype=np.int64) * 1000
    pq.write_table(pa.table({"v": values}, schema=_required("v", pa.int64())), path, compression="none",
                   use_dictionary=False,
                   column_encoding={"v": "DELTA_BINARY_PACKED"}, write_page_checksum=True)
    chunk = bytearray(_chunk(path, 0, 0))
    assert _native_ints(bytes(chunk), 64, values.size) == values.tolist()
    chunk[-10] ^= 0x10  # a bit of the last page's values
    assert _native_ints(bytes(chunk), 64, values.size) is None
    assert _native_ints(bytes(chunk), 64, values.size, verify=False) != values.tolist()  # unchecked: wrong


def test_truncated_and_miscounted_chunks_give_none():
    path_values = np.arange(3000, dtype=np.int64)
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"v": path_values}, schema=_required("v", pa.int64())), sink, compression="none",
                   use_dictionary=False,
                   column_encoding={"v": "DELTA_BINARY_PACKED"}, data_page_size=512)
    pf = pq.ParquetFile(pa.BufferReader(sink.getvalue()))
    c = pf.metadata.row_group(0).column(0)
    chunk = sink.getvalue().to_pybytes()[c.data_page_offset:c.data_page_offset + c.total_compressed_size]
    assert _native_ints(chunk, 64, 3000) == path_values.tolist()
    for cut in (1, 7, 100, len(chunk) // 2, len(chunk) - 1):
        assert _native_ints(chunk[:cut], 64, 3000) is None, cut
    assert _native_ints(chunk, 64, 2999) is None and _native_ints(chunk, 64, 3001) is None
    with pytest.raises(ValueError, match="out: expected 3000 values of 64 bits"):
        _core.parquet_ints(chunk, 64, 3000, True, pa.allocate_buffer(8))


# --- pau's layout ---------------------------------------------------------------


def test_the_layout_is_read_natively_and_equals_pyarrow(tmp_path, monkeypatch):
    from pau import synth

    events = synth.training_run_for_events(60_000, ranks=3, seed=4)
    root = tmp_path / "ds"
    pio.write_dataset(events, root, row_group_size=7_000)  # row groups of unequal sizes per file
    expected = core.classify(events)
    files = pio.parquet_files(root)
    for path, _ in files:
        md = pq.ParquetFile(path).metadata
        compression = {md.row_group(0).column(j).path_in_schema: md.row_group(0).column(j).compression
                       for j in range(md.num_columns)}
        assert compression["start_ns"] == compression["end_ns"] == compression["kind"] == "UNCOMPRESSED"
        assert compression["stream"] == "SNAPPY"
        for got, want in zip(_native_read(path, ["start_ns", "end_ns", "kind"]),
                             (pq.ParquetFile(path).read_row_group(i, columns=["start_ns", "end_ns", "kind"])
                              for i in range(md.num_row_groups))):
            assert got is not None and got.equals(want, check_metadata=True)

    # the sweep reads through the decoder alone: pyarrow's row group reader is not called
    def refuse(*args, **kwargs):
        raise AssertionError("pyarrow read a row group the native decoder reads")

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", refuse)
    for workers in (1, 2):
        assert core.classify_dataset(root, workers=workers).equals(expected)
    monkeypatch.undo()
    monkeypatch.setattr(_parquet, "ENABLED", False)
    assert core.classify_dataset(root, workers=1).equals(expected)


def test_a_layout_file_with_a_bad_page_is_an_error_naming_it(tmp_path):
    from pau import synth

    events = synth.training_run_for_events(20_000, ranks=2, seed=5)
    root = tmp_path / "ds"
    pio.write_dataset(events, root)
    path = root / "job=job0" / "rank=0" / "part-0.parquet"
    md = pq.ParquetFile(path).metadata.row_group(0)
    start = next(md.column(j) for j in range(md.num_columns) if md.column(j).path_in_schema == "start_ns")
    data = bytearray(path.read_bytes())
    data[start.data_page_offset + start.total_compressed_size - 20] ^= 0x01  # in a checksummed page
    path.write_bytes(bytes(data))
    with pytest.raises(PauError, match="part-0.parquet"):
        core.classify_dataset(root, workers=1)


def test_an_arena_reuses_its_buffers_and_refills_a_changed_constant(tmp_path):
    arena = _parquet.Arena()
    view, held = arena.take("v", 80)
    np.frombuffer(view, np.int64)[:] = 7
    view2, held2 = arena.take("v", 40)  # smaller: the same memory
    assert held2.address == held.address and np.frombuffer(held2, np.int64).tolist() == [7] * 5
    _, held3 = arena.take("v", 160)      # larger: a new buffer
    assert held3.size == 160
    assert arena.int32_constant(3, 4).to_pylist() == [3] * 4
    assert arena.int32_constant(3, 2).to_pylist() == [3] * 2
    assert arena.int32_constant(5, 3).to_pylist() == [5] * 3   # a new value is filled in
    assert arena.int32_constant(5, 6).to_pylist() == [5] * 6   # more rows than held: refilled
    # a row group read into an arena: the next read into it overwrites the first
    events = pa.table({"start_ns": pa.array(np.arange(20, dtype=np.int64)),
                       "end_ns": pa.array(np.arange(20, dtype=np.int64) + 1)},
                      schema=pa.schema([pa.field("start_ns", pa.int64(), False), pa.field("end_ns", pa.int64(), False)]))
    path = tmp_path / "a.parquet"
    pq.write_table(events, path, compression="none", use_dictionary=False, row_group_size=10,
                   column_encoding={"start_ns": "DELTA_BINARY_PACKED", "end_ns": "DELTA_BINARY_PACKED"})
    file = _parquet.File.of(str(path), pq.ParquetFile(path))
    first = _parquet.read_row_group(file, 0, ["start_ns"], _parquet.Buffer(), arena)
    assert first.column(0).to_pylist() == list(range(10))
    second = _parquet.read_row_group(file, 1, ["start_ns"], _parquet.Buffer(), arena)
    assert second.column(0).to_pylist() == list(range(10, 20)) == first.column(0).to_pylist()
