"""The ``kind`` column of a Parquet row group decoded by pau instead of pyarrow.

pyarrow turns a dictionary-encoded string column into an Arrow dictionary array at
about 3 ns a value (as long as decoding both int64 time columns of pau's layout);
pau needs only the dictionary positions, which ``pau._core.rle_dict_indices``
decodes at a fraction of that. This module reads the column chunk's pages itself:

* page headers: Thrift compact protocol (Apache Thrift, ``doc/specs/thrift-compact-
  protocol.md``), fields of ``PageHeader`` in ``parquet.thrift`` (1 type, 2
  uncompressed size, 3 compressed size, 4 crc, 5 data page header, 7 dictionary page
  header);
* a required column, or an optional one whose definition levels (data page v1:
  4-byte length, RLE hybrid of width 1) say no value is null;
* every page's CRC-32 where it has one (the zlib polynomial, over the page's stored
  bytes, as the Parquet format defines ``crc``) is checked, as pyarrow does with
  ``page_checksum_verification``;
* any shape this reader does not take (data page v2, nulls, repetition, another
  encoding or codec, more than 127 dictionary entries) returns None, and the caller
  reads the column with pyarrow;
* the dictionary page is PLAIN byte arrays (4-byte little-endian length, bytes); data
  pages are RLE_DICTIONARY: one byte of bit width, then the RLE / bit-packing hybrid
  (``csrc/core/rle_hybrid.hpp``).

The result is the ``dictionary<int8, string>`` array pyarrow gives for pau's files.
"""

from __future__ import annotations

import os
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from . import _core

_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)
_DATA_PAGE, _DICTIONARY_PAGE = 0, 2
_PLAIN, _PLAIN_DICTIONARY, _RLE, _RLE_DICTIONARY = 0, 2, 3, 8
_DICT_TYPE = pa.dictionary(pa.int8(), pa.string())


class _Malformed(ValueError):
    """Bytes that are not the Thrift or page data they should be."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        if pos >= len(buf):
            raise _Malformed("varint past the end")
        b = buf[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        if not b & 0x80:
            return out, pos
        shift += 7
        if shift > 70:
            raise _Malformed("varint too long")


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def _value(buf: bytes, pos: int, typ: int) -> tuple[object, int]:
    """One Thrift compact value of type ``typ``: ints, bytes, dicts (structs); lists,
    sets and maps are skipped (None)."""
    if typ in (_TRUE, _FALSE):
        return typ == _TRUE, pos
    if typ == _BYTE:
        if pos >= len(buf):
            raise _Malformed("byte past the end")
        return buf[pos], pos + 1
    if typ in (_I16, _I32, _I64):
        n, pos = _varint(buf, pos)
        return _zigzag(n), pos
    if typ == _DOUBLE:
        return None, pos + 8
    if typ == _BINARY:
        n, pos = _varint(buf, pos)
        if pos + n > len(buf):
            raise _Malformed("binary past the end")
        return buf[pos:pos + n], pos + n
    if typ in (_LIST, _SET):
        if pos >= len(buf):
            raise _Malformed("list past the end")
        head = buf[pos]
        pos += 1
        size, elem = head >> 4, head & 0x0F
        if size == 15:
            size, pos = _varint(buf, pos)
        for _ in range(size):
            # booleans in a list are one byte each
            _, pos = _value(buf, pos, _BYTE if elem in (_TRUE, _FALSE) else elem)
        return None, pos
    if typ == _MAP:
        size, pos = _varint(buf, pos)
        if size:
            if pos >= len(buf):
                raise _Malformed("map past the end")
            kv = buf[pos]
            pos += 1
            for _ in range(size):
                _, pos = _value(buf, pos, kv >> 4)
                _, pos = _value(buf, pos, kv & 0x0F)
        return None, pos
    if typ == _STRUCT:
        return _struct(buf, pos)
    raise _Malformed(f"Thrift type {typ}")


def _struct(buf: bytes, pos: int, depth: int = 0) -> tuple[dict, int]:
    """A Thrift compact struct as {field id: value}."""
    if depth > 16:
        raise _Malformed("structs nested too deep")
    out: dict = {}
    last = 0
    while True:
        if pos >= len(buf):
            raise _Malformed("struct past the end")
        head = buf[pos]
        pos += 1
        typ = head & 0x0F
        if typ == _STOP:
            return out, pos
        delta = head >> 4
        if delta:
            fid = last + delta
        else:
            n, pos = _varint(buf, pos)
            fid = _zigzag(n)
        last = fid
        if typ == _STRUCT:
            out[fid], pos = _struct(buf, pos, depth + 1)
        else:
            out[fid], pos = _value(buf, pos, typ)


def _plain_strings(data: bytes, count: int) -> list[str]:
    out, pos = [], 0
    for _ in range(count):
        if pos + 4 > len(data):
            raise _Malformed("dictionary entry past the end")
        n = int.from_bytes(data[pos:pos + 4], "little")
        pos += 4
        if pos + n > len(data):
            raise _Malformed("dictionary entry past the end")
        out.append(data[pos:pos + n].decode("utf-8"))
        pos += n
    return out


def kind_column(path: str, pf: pq.ParquetFile, row_group: int, name: str = "kind") -> pa.Array | None:
    """Column ``name`` of one row group as ``dictionary<int8, string>``, every page's
    CRC-32 checked where it has one; None when the chunk is not of the shape read here (the caller
    reads it with pyarrow). Raises ValueError on a checksum that does not match or
    pages that are not what their headers say."""
    schema = pf.schema_arrow
    if name not in schema.names or schema.field(name).type != _DICT_TYPE:
        return None
    meta = pf.metadata
    rg = meta.row_group(row_group)
    j = schema.get_field_index(name)
    leaf = pf.schema.column(j)
    optional = leaf.max_definition_level == 1
    if leaf.max_definition_level > 1 or leaf.max_repetition_level or leaf.physical_type != "BYTE_ARRAY" \
            or leaf.path != name:
        return None
    col = rg.column(j)
    codec = col.compression
    if codec not in ("SNAPPY", "UNCOMPRESSED"):
        return None
    start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
    if start is None or start < 4:
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        buf = os.pread(fd, col.total_compressed_size, start)
    finally:
        os.close(fd)
    if len(buf) != col.total_compressed_size:
        raise _Malformed("column chunk past the end of the file")
    rows = rg.num_rows
    dictionary: list[str] | None = None
    parts: list[np.ndarray] = []
    got = pos = 0
    while pos < len(buf):
        header, pos = _struct(buf, pos)
        typ, usize, csize, crc = header.get(1), header.get(2), header.get(3), header.get(4)
        if not isinstance(csize, int) or not isinstance(usize, int) or csize < 0 or usize < 0 \
                or pos + csize > len(buf):
            raise _Malformed("page size past the end of the column chunk")
        if typ not in (_DICTIONARY_PAGE, _DATA_PAGE):
            return None  # data page v2, index pages: pyarrow reads them
        page = buf[pos:pos + csize]
        pos += csize
        # a page without a checksum is not checked (nor is it by pyarrow)
        if crc is not None and (not isinstance(crc, int) or zlib.crc32(page) != crc & 0xFFFFFFFF):
            raise _Malformed(f"page checksum mismatch in column '{name}'")
        data = page if codec == "UNCOMPRESSED" else \
            pa.decompress(page, decompressed_size=usize, codec="snappy", asbytes=True)
        if typ == _DICTIONARY_PAGE:
            dh = header.get(7)
            if not isinstance(dh, dict) or dh.get(2) not in (_PLAIN, _PLAIN_DICTIONARY) or dictionary is not None:
                return None
            count = dh.get(1)
            if not isinstance(count, int) or count < 0 or count > 127:
                return None
            dictionary = _plain_strings(data, count)
        else:
            dp = header.get(5)
            if not isinstance(dp, dict) or dp.get(2) not in (_RLE_DICTIONARY, _PLAIN_DICTIONARY) \
                    or dictionary is None:
                return None
            count = dp.get(1)
            if not isinstance(count, int) or count < 0 or got + count > rows:
                raise _Malformed("more values in the pages than rows in the row group")
            if count:
                values = memoryview(data)
                if optional:  # definition levels: 4-byte length, RLE hybrid of width 1; all 1 (no null)
                    if dp.get(3) != _RLE or len(data) < 4:
                        return None
                    n = int.from_bytes(data[:4], "little")
                    if 4 + n > len(data):
                        raise _Malformed("definition levels past the end of the page")
                    if not _core.rle_dict_indices(values[4:4 + n], 1, count, 2).all():
                        return None  # nulls: pyarrow reads them
                    values = values[4 + n:]
                if not len(values):
                    raise _Malformed("empty data page")
                parts.append(_core.rle_dict_indices(values[1:], values[0], count, len(dictionary)))
            got += count
    if got != rows or dictionary is None:
        raise _Malformed(f"{got} values in column '{name}' for {rows} rows")
    indices = parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.empty(0, np.int8)
    return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int8()), pa.array(dictionary, pa.string()))
