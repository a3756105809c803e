"""Hostile bytes in Parquet files (issue 38): each defect an adversary found, reproduced
on a file pyarrow writes and then damages as the adversary did.

The rule each test holds: the native page decoder (``csrc/core/parquet.hpp``) refuses
what pyarrow refuses (it returns None and pyarrow's reader names the damage), never
reads outside its buffers or allocates what the file does not hold, and pau answers
with a :class:`pau.errors.PauError` that names the file. ``tests/test_fuzz_corpus.py``
sweeps the fuzz corpus (``tests/fuzz_corpus``) through the same entry points.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pau
import pau.core
from pau import _core
from pau.engine import _input, _parquet
from pau.engine.vocab import KINDS
from pau.errors import InvalidRowError, PauError

import parquet_reference as ref

N = 200


uleb, zigzag = ref.uleb_bytes, ref.zigzag_bytes


def _events(path, *, delta: bool = False, kinds: tuple[str, ...] = ("compute", "communication", "memcpy")):
    """An events file written by pyarrow (uncompressed, so the native decoder reads it):
    random start times (DELTA_BINARY_PACKED when ``delta``), a required ``kind`` column
    of dictionary indices bit-packed at 2 bits."""
    rng = np.random.default_rng(38)
    start = np.sort(rng.integers(0, 2**40, N)).astype(np.int64)
    table = pa.table({"rank": pa.array(np.zeros(N, np.int32)), "start_ns": start,
                      "end_ns": start + rng.integers(0, 1000, N),
                      "kind": pa.array(rng.choice(list(kinds), N)).dictionary_encode()})
    schema = pa.schema([pa.field(f.name, f.type, nullable=False) for f in table.schema])
    options = dict(use_dictionary=["kind"], column_encoding={"start_ns": "DELTA_BINARY_PACKED"}) if delta else {}
    pq.write_table(table.cast(schema), path, compression="none", **options)
    return table


def _data_page(path, column: str) -> tuple[int, int]:
    """Where the values of ``column``'s first data page lie in the file: (offset, size)."""
    md = pq.ParquetFile(path).metadata.row_group(0)
    c = next(md.column(j) for j in range(md.num_columns) if md.column(j).path_in_schema == column)
    data = path.read_bytes()
    header, pos = ref.struct(data, c.data_page_offset)
    assert header[1] == ref.DATA_PAGE and 4 not in header  # no checksum: the page may be rewritten
    return pos, header[3]


def _replace_page_values(path, column: str, values: bytes) -> None:
    """The first data page of ``column`` holds ``values`` (zero-padded to its size)."""
    at, size = _data_page(path, column)
    assert len(values) <= size
    data = bytearray(path.read_bytes())
    data[at:at + size] = values + bytes(size - len(values))
    path.write_bytes(bytes(data))


def _native(path, columns):
    return _parquet.read_row_group(_parquet.File.of(str(path), pq.ParquetFile(path)), 0, columns, _parquet.Buffer())


def _refused_by_all(path, column: str) -> None:
    """pyarrow refuses the file, the native decoder too, and pau names the file."""
    with pytest.raises((OSError, pa.ArrowException)):
        pq.read_table(path)
    assert _native(path, [column]) is None
    with pytest.raises(PauError, match=path.name):
        pau.core.classify_dataset(str(path), workers=1)
    with pytest.raises(PauError, match=path.name):
        pau.read(str(path))


# --- DELTA_BINARY_PACKED: a block size past 32 bits --------------------------------


def _page(n: int, values: bytes, encoding: int = 5) -> bytes:
    """A v1 data page (Thrift compact header, then ``values``) of ``n`` INT64 values."""
    def i32(v: int) -> bytes:
        return b"\x15" + zigzag(v)
    header = (i32(0) + i32(len(values)) + i32(len(values)) + b"\x2c" + i32(n) + i32(encoding) + i32(3) + i32(3)
              + b"\x00\x00")
    return header + values


@pytest.mark.parametrize("block, minis", [(2**63, 1), (2**63, 2), (2**62, 1), (2**63 + 2**62, 2), (2**32 * 128, 4)])
@pytest.mark.parametrize("width", [0, 1, 2, 8, 63, 64])
def test_a_delta_block_size_past_32_bits_is_refused(block, minis, width):
    """A block of 2**62 values or more made the miniblock's stride negative or wrap
    (``i += per_mini; p += per_mini * w / 8``): reads outside the page, or values
    decoded from a header pyarrow refuses (it reads the block size as 32 bits)."""
    values = uleb(block) + uleb(minis) + uleb(N) + zigzag(0) + zigzag(3) + bytes([width] * minis) + bytes(range(256)) * 8
    out = pa.allocate_buffer(8 * N)
    assert _core.parquet_ints(_page(N, values), 64, N, True, out, 0, False) is False


def test_a_delta_page_pyarrow_refuses_is_refused_natively(tmp_path):
    path = tmp_path / "delta.parquet"
    _events(path, delta=True)
    assert _native(path, ["start_ns"]) is not None  # read natively before the damage
    _replace_page_values(path, "start_ns", uleb(2**62) + uleb(1) + uleb(N) + zigzag(0) + zigzag(3) + bytes([8]))
    _refused_by_all(path, "start_ns")


@pytest.mark.parametrize("bits, value", [(32, 2**31), (32, -(2**31) - 1), (64, 2**63)])
def test_a_delta_first_value_wider_than_the_column_is_refused(bits, value):
    """pyarrow reads the first value and each minimum delta as the column's type."""
    n = 3
    raw = (uleb((value << 1) ^ (value >> 127)) if bits == 64 else zigzag(value))
    values = uleb(128) + uleb(4) + uleb(n) + raw + zigzag(1) + bytes(4) + bytes(64)
    assert _core.parquet_ints(_page(n, values), bits, n, True, pa.allocate_buffer(bits // 8 * n), 0, False) is False


# --- the RLE / bit-packed hybrid: a run header past 32 bits -------------------------


@pytest.mark.parametrize("run", [2**31, 2**62])
def test_an_rle_run_past_32_bits_is_refused_not_clamped(tmp_path, run):
    """A run of 2**62 repeats was clamped to the values left and decoded; pyarrow reads
    a run header as 32 bits and refuses the file."""
    path = tmp_path / "rle.parquet"
    _events(path)
    assert _native(path, ["kind"]) is not None
    _replace_page_values(path, "kind", bytes([2]) + uleb(run << 1) + bytes([0]))
    _refused_by_all(path, "kind")


def test_an_rle_run_that_fits_still_reads(tmp_path):
    """The same page with a run of exactly the values: both readers give every row
    the first kind (the check refuses the width pyarrow refuses, not runs)."""
    path = tmp_path / "rle.parquet"
    _events(path)
    _replace_page_values(path, "kind", bytes([2]) + uleb(N << 1) + bytes([1]))
    want = pq.read_table(path, columns=["kind"])
    got = _native(path, ["kind"])
    assert got is not None and got.equals(want)
    assert set(want.column("kind").to_pylist()) == {want.column("kind").chunk(0).dictionary[1].as_py()}


# --- the footer's chunk sizes: memory from a few bytes --------------------------------


def _set_total_compressed_size(path, column: str, size: int) -> None:
    """The footer's ColumnMetaData.total_compressed_size of ``column`` set to ``size``
    (the i64 fields 5, 6, 7 follow each other; the footer's length is rewritten)."""
    data = path.read_bytes()
    md = pq.ParquetFile(path).metadata.row_group(0)
    c = next(md.column(j) for j in range(md.num_columns) if md.column(j).path_in_schema == column)
    n = int.from_bytes(data[-8:-4], "little")
    footer = data[-8 - n:-8]
    head = b"\x16" + zigzag(c.num_values) + b"\x16" + zigzag(c.total_uncompressed_size) + b"\x16"
    old = head + zigzag(c.total_compressed_size)
    at = footer.index(old, footer.rindex(column.encode()))  # in the chunk's metadata, after its path
    footer = footer[:at] + head + zigzag(size) + footer[at + len(old):]
    path.write_bytes(data[:-8 - n] + footer + len(footer).to_bytes(4, "little") + b"PAR1")


@pytest.mark.parametrize("size", [2**34, 2**40])
def test_a_chunk_size_past_the_file_allocates_nothing(tmp_path, monkeypatch, size):
    """A footer declaring a chunk of 2**34 bytes grew a buffer of 16 GiB before any
    check; 2**40 escaped as a raw MemoryError. Every size is now checked against the
    file's before a buffer is fitted."""
    path = tmp_path / "big.parquet"
    _events(path)
    _set_total_compressed_size(path, "start_ns", size)
    limit = path.stat().st_size
    fit = _parquet.Buffer.fit

    def checked_fit(self, n):
        assert n <= limit, f"a buffer of {n} bytes for a file of {limit}"
        return fit(self, n)

    monkeypatch.setattr(_parquet.Buffer, "fit", checked_fit)
    assert _native(path, ["start_ns"]) is None
    with pytest.raises(PauError, match=path.name):
        pau.core.classify_dataset(str(path), workers=1)
    with pytest.raises(PauError, match=path.name):
        pau.read(str(path))


# --- a dictionary index out of its dictionary -------------------------------------------


def test_a_dictionary_index_out_of_range_names_file_column_row(tmp_path):
    """pyarrow reads indices past the dictionary without a check; they reached
    ``_input`` as an IndexError. Now an error naming the file, the column, the row."""
    path = tmp_path / "idx.parquet"
    table = _events(path)
    at, _ = _data_page(path, "kind")
    data = bytearray(path.read_bytes())
    assert data[at] == 2 and data[at + 1] & 1  # 2-bit indices, a bit-packed run first
    data[at + 2 + 9] = 0xFF                     # rows 36-39: index 3 of a dictionary of 3
    path.write_bytes(bytes(data))
    assert pq.read_table(path).column("kind").chunk(0).indices[36].as_py() == 3
    assert _native(path, ["kind"]) is None      # the native decoder checks every index
    for call in (lambda: pau.read(str(path)), lambda: pau.core.classify_dataset(str(path), workers=1)):
        with pytest.raises(PauError, match=path.name) as err:
            call()
        assert "'kind'" in str(err.value) and "row 36" in str(err.value)
    assert table.num_rows == N


def test_an_in_memory_dictionary_index_out_of_range_is_an_invalid_row():
    kinds = pa.DictionaryArray.from_arrays(pa.array([0, 1, 5, 0], pa.int32()), pa.array(["compute", "memcpy"]),
                                           safe=False)
    events = pa.table({"rank": pa.array([0, 0, 0, 0], pa.int32()), "start_ns": [0, 10, 20, 30],
                       "end_ns": [5, 15, 25, 35], "kind": kinds})
    with pytest.raises(InvalidRowError, match=r"column 'kind', row 2: dictionary index 5 is outside") as err:
        pau.core.classify(events)
    assert err.value.column == "kind" and err.value.row == 2
    # set aside as a kind pau does not know; the other three rows classified
    out = pau.core.classify(events, on_invalid="quarantine")
    assert out.quarantine.column("row").to_pylist() == [2]
    assert out.quarantine.column("reason").to_pylist() == ["unknown kind"]
    busy = {a: d for a, d in zip(*out.result.select(["activity", "duration_ns"]).to_pydict().values())}
    assert busy["compute"] == 10 and busy["memcpy"] == 5



@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64"])
@pytest.mark.parametrize("size", [2, 300])
def test_every_index_type_outside_the_dictionary_is_an_invalid_row(dtype, size):
    """Each index type's extreme values, negative ones and those just past the dictionary
    (of 2 strings, and of 300, longer than a signed byte reaches, its positions from 128
    on naming compute, where a negative byte read as unsigned would land) are refused by
    their row on both sweeps (exclusive time alone, and the full one that windows take),
    and set aside as unknown kinds; an index inside the dictionary naming no kind is an
    unknown kind."""
    info = np.iinfo(dtype)
    names = ["compute", "memcpy"] + [f"x{i}" for i in range(2, min(size, 128))] + ["compute"] * (size - 128)
    for v in sorted({-1, -2, info.min, info.max, size, size - 1, 127, 1 << 7, 1 << 15}):
        if not info.min <= v <= info.max or (0 <= v < size and names[v] in KINDS):
            continue
        idx = np.zeros(40, dtype)  # blocks of 8 rows: the vector kernels' paths, not only the row-by-row one
        idx[1], idx[20] = 1, v
        kinds = pa.DictionaryArray.from_arrays(pa.array(idx), pa.array(names), safe=False)
        start = np.arange(40, dtype=np.int64) * 10
        events = pa.table({"rank": pa.array(np.zeros(40, np.int32)), "start_ns": start, "end_ns": start + 5,
                           "kind": kinds})
        want = (f"unknown kind '{names[v]}'" if 0 <= v < size
                else f"dictionary index {v} is outside the column's dictionary of {size} strings")
        for windows in (None, 100):
            with pytest.raises(InvalidRowError, match=r"column 'kind', row 20: ") as err:
                pau.core.classify(events, windows=windows)
            assert want in str(err.value), (dtype, v, windows, str(err.value))
            out = pau.core.classify(events, windows=windows, on_invalid="quarantine")
            assert out.quarantine.column("row").to_pylist() == [20], (dtype, v, windows)
            assert out.quarantine.column("reason").to_pylist() == ["unknown kind"]
            busy: dict[str, int] = {}
            for a, d in zip(*out.result.select(["activity", "duration_ns"]).to_pydict().values()):
                busy[a] = busy.get(a, 0) + d
            assert busy["compute"] == 5 * 38 and busy["memcpy"] == 5, (dtype, v, windows, busy)

# --- what pyarrow's reader requires of a page, which the decoder now requires too ----


def test_v2_definition_levels_are_read_not_the_null_count(tmp_path):
    """A v2 page's header says no value is null while its definition levels say every
    one is: pyarrow believes the levels; the decoder read values where pyarrow reads
    nulls. Now it reads the levels and leaves such a page to pyarrow."""
    path = tmp_path / "v2.parquet"
    values = pa.array(np.arange(N, dtype=np.int64) * 7)  # nullable: definition levels written
    pq.write_table(pa.table({"v": values}), path, compression="none", use_dictionary=False,
                   data_page_version="2.0")
    md = pq.ParquetFile(path).metadata.row_group(0).column(0)
    data = bytearray(path.read_bytes())
    header, at = ref.struct(bytes(data), md.data_page_offset)
    v2 = header[8]
    assert header[1] == ref.DATA_PAGE_V2 and v2[2] == 0 and v2[5] == 3   # no nulls; one RLE run of 1s
    assert data[at + 2] == 1
    assert _native(path, ["v"]).column("v").to_pylist() == values.to_pylist()
    data[at + 2] = 0                                                     # every level 0: null
    path.write_bytes(bytes(data))
    assert pq.read_table(path).column("v").null_count == N
    assert _native(path, ["v"]) is None


@pytest.mark.parametrize("cut", [8, 16])
def test_a_delta_page_whose_last_miniblock_stops_short_is_refused(cut):
    """pyarrow skips the last miniblock's padding after the last value and refuses a page
    that stops before it; the decoder read it."""
    n = 40   # the first value, then 39 deltas in the first miniblock of 32, and 7 in the second
    values = uleb(128) + uleb(4) + uleb(n) + zigzag(5) + zigzag(1) + bytes([8, 8, 0, 0]) + bytes(range(64))
    page = _page(n, values)
    out = pa.allocate_buffer(8 * n)
    assert _core.parquet_ints(page, 64, n, True, out, 0, False) is True
    assert _core.parquet_ints(_page(n, values[:-cut]), 64, n, True, out, 0, False) is False


def test_a_page_header_without_its_required_fields_is_refused():
    """pyarrow's Thrift reader refuses a DataPageHeader without its level encodings
    (fields 3 and 4, required by the format); the decoder ignored them."""
    n = 3
    values = bytes(8 * n)
    good = _page(n, values, encoding=0)
    out = pa.allocate_buffer(8 * n)
    assert _core.parquet_ints(good, 64, n, True, out, 0, False) is True
    def i32(v: int) -> bytes:
        return b"\x15" + zigzag(v)
    missing = (i32(0) + i32(len(values)) + i32(len(values)) + b"\x2c" + i32(n) + i32(0) + b"\x00\x00") + values
    assert _core.parquet_ints(missing, 64, n, True, out, 0, False) is False


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"])
@pytest.mark.parametrize("n", [1, 5, 127, 128, 129, 200, 40_000])
def test_kind_index_outside_the_dictionary_is_seen_in_one_pass(dtype, n):
    """`pau.engine._input._outside` (the one-pass check of a dictionary column's indices) against the
    plain rule: some index < 0 or >= n."""
    info = np.iinfo(dtype)
    candidates = sorted({0, n - 1, n, n + 1, info.max, info.min, -1, -100, -(n // 2) - 1, 1 << 15, -(1 << 15)})
    for v in candidates:
        if not info.min <= v <= info.max:
            continue
        idx = np.array([0, v, 0], dtype=dtype)
        want = bool((idx.astype(np.int64) < 0).any() or (idx.astype(np.int64) >= n).any())
        assert _input._outside(idx, n) == want, (dtype, n, v)
