"""A slow, plain reading of Parquet column chunks: the twin of the native page
decoder (``csrc/core/parquet.hpp``) in the tests.

It follows parquet-format's text directly: the Thrift compact protocol read field
by field into dicts, DELTA_BINARY_PACKED and the RLE / bit-packed hybrid decoded
one value at a time with Python ints. Uncompressed or SNAPPY chunks of required
columns, as the native decoder; snappy pages are decompressed by pyarrow's codec
(Arrow's build of Google's snappy), not by pau's decompressor.
"""

from __future__ import annotations

import zlib

import pyarrow as pa

DATA_PAGE, INDEX_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 1, 2, 3
PLAIN, PLAIN_DICTIONARY, DELTA_BINARY_PACKED, RLE_DICTIONARY = 0, 2, 5, 8


class Unsupported(Exception):
    """A chunk this reading does not cover (or a malformed one)."""


def uleb_bytes(v: int) -> bytes:
    """``v`` (>= 0) as an unsigned LEB128 varint: the encoder the damaged-file tests write with."""
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def zigzag_bytes(v: int) -> bytes:
    """``v`` (a signed 64-bit value) zigzag-encoded, as a varint."""
    return uleb_bytes(((v << 1) ^ (v >> 63)) & (2**64 - 1))


def uleb(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise Unsupported("varint past the end")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def zigzag(buf: bytes, pos: int) -> tuple[int, int]:
    v, pos = uleb(buf, pos)
    return (v >> 1) ^ -(v & 1), pos


def _value(buf: bytes, pos: int, ctype: int, element: bool) -> tuple[object, int]:
    if ctype in (1, 2):  # bool: in a field, the type is the value; in a list, a byte
        if element:
            return buf[pos] == 1, pos + 1
        return ctype == 1, pos
    if ctype == 3:
        return buf[pos], pos + 1
    if ctype in (4, 5, 6):
        return zigzag(buf, pos)
    if ctype == 7:
        return buf[pos:pos + 8], pos + 8
    if ctype == 8:
        n, pos = uleb(buf, pos)
        return buf[pos:pos + n], pos + n
    if ctype in (9, 10):
        h = buf[pos]
        pos += 1
        n = h >> 4
        if n == 15:
            n, pos = uleb(buf, pos)
        items = []
        for _ in range(n):
            v, pos = _value(buf, pos, h & 0x0F, True)
            items.append(v)
        return items, pos
    if ctype == 11:
        n, pos = uleb(buf, pos)
        out = {}
        if n:
            kv = buf[pos]
            pos += 1
            for _ in range(n):
                k, pos = _value(buf, pos, kv >> 4, True)
                v, pos = _value(buf, pos, kv & 0x0F, True)
                out[k] = v
        return out, pos
    if ctype == 12:
        return struct(buf, pos)
    raise Unsupported(f"compact type {ctype}")


def struct(buf: bytes, pos: int) -> tuple[dict, int]:
    """A Thrift compact struct at pos: {field id: value} and the position after it."""
    fields: dict = {}
    last = 0
    while True:
        b = buf[pos]
        pos += 1
        if b == 0:
            return fields, pos
        delta, ctype = b >> 4, b & 0x0F
        if delta:
            fid = last + delta
        else:
            fid, pos = zigzag(buf, pos)
        fields[fid], pos = _value(buf, pos, ctype, False)
        last = fid


def _wrap(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def delta_binary_packed(buf: bytes, n: int, bits: int) -> list[int]:
    block, pos = uleb(buf, 0)
    minis, pos = uleb(buf, pos)
    total, pos = uleb(buf, pos)
    first, pos = zigzag(buf, pos)
    if total != n:
        raise Unsupported("count")
    per = block // minis
    values = [first] if n else []
    while len(values) < n:
        min_delta, pos = zigzag(buf, pos)
        widths = buf[pos:pos + minis]
        pos += minis
        for w in widths:
            if len(values) >= n:
                break
            body = int.from_bytes(buf[pos:pos + per * w // 8], "little")
            for k in range(per):
                if len(values) >= n:
                    break
                values.append(_wrap(values[-1] + min_delta + ((body >> (k * w)) & ((1 << w) - 1)), bits))
            pos += per * w // 8
    return values


def rle_hybrid(buf: bytes, width: int, n: int) -> list[int]:
    out: list[int] = []
    pos = 0
    while len(out) < n:
        header, pos = uleb(buf, pos)
        if header & 1:
            count = (header >> 1) * 8
            body = int.from_bytes(buf[pos:pos + count * width // 8], "little")
            out += [(body >> (k * width)) & ((1 << width) - 1) for k in range(count)]
            pos += count * width // 8
        else:
            nbytes = (width + 7) // 8
            out += [int.from_bytes(buf[pos:pos + nbytes], "little")] * (header >> 1)
            pos += nbytes
    return out[:n]


def pages(chunk: bytes, verify: bool = True, codec: str = "UNCOMPRESSED"):
    """(header, data) of each page of a chunk, decompressed: the checksum covers the
    bytes as stored; a v2 data page's levels are stored as they are, its values
    compressed unless its header says not (field 7, is_compressed)."""
    pos = 0
    while pos < len(chunk):
        header, pos = struct(chunk, pos)
        size, full = header[3], header[2]
        data = chunk[pos:pos + size]
        if verify and 4 in header and zlib.crc32(data) != header[4] & 0xFFFFFFFF:
            raise Unsupported("checksum")
        pos += size
        if codec == "SNAPPY":
            skip = header[8].get(5, 0) + header[8].get(6, 0) if header[1] == DATA_PAGE_V2 else 0
            if header[1] != DATA_PAGE_V2 or header[8].get(7, True):
                values = pa.Codec("snappy").decompress(data[skip:], decompressed_size=full - skip).to_pybytes()
                data = data[:skip] + values
        elif codec != "UNCOMPRESSED" or size != full:
            raise Unsupported("compressed page")
        yield header, data


def _values_of(header: dict, data: bytes, optional: bool = False) -> tuple[int, int, bytes]:
    """(count, encoding, the values' bytes) of a data page of a column without nulls:
    required, or optional (max definition level 1) with every level 1 (a v1 page
    writes them first: a 4-byte length, then the RLE / bit-packed hybrid of width 1)."""
    if header[1] == DATA_PAGE:
        n = header[5][1]
        if optional:
            size = int.from_bytes(data[:4], "little")
            if any(level != 1 for level in rle_hybrid(data[4:4 + size], 1, n)):
                raise Unsupported("a null")
            data = data[4 + size:]
        return n, header[5][2], data
    h = header[8]
    if h.get(2, 0):
        raise Unsupported("a null")
    skip = h.get(5, 0) + h.get(6, 0)
    return h[1], h[4], data[skip:]


def int_chunk(chunk: bytes, bits: int, verify: bool = True, codec: str = "UNCOMPRESSED",
              optional: bool = False) -> list[int]:
    """The values of an INT32/INT64 chunk."""
    dictionary: list[int] | None = None
    out: list[int] = []
    for header, data in pages(chunk, verify, codec):
        if header[1] == INDEX_PAGE:
            continue
        if header[1] == DICTIONARY_PAGE:
            n = header[7][1]
            dictionary = [int.from_bytes(data[k * bits // 8:(k + 1) * bits // 8], "little", signed=True)
                          for k in range(n)]
            continue
        n, encoding, values = _values_of(header, data, optional)
        if encoding == PLAIN:
            out += [int.from_bytes(values[k * bits // 8:(k + 1) * bits // 8], "little", signed=True)
                    for k in range(n)]
        elif encoding == DELTA_BINARY_PACKED:
            out += delta_binary_packed(values, n, bits)
        elif encoding in (PLAIN_DICTIONARY, RLE_DICTIONARY):
            assert dictionary is not None
            out += [dictionary[i] for i in rle_hybrid(values[1:], values[0], n)]
        else:
            raise Unsupported(f"encoding {encoding}")
    return out


def dictionary_chunk(chunk: bytes, verify: bool = True, codec: str = "UNCOMPRESSED",
                     optional: bool = False) -> tuple[list[str], list[int]]:
    """(the dictionary's strings, the indices) of a dictionary-encoded BYTE_ARRAY chunk."""
    strings: list[str] = []
    indices: list[int] = []
    for header, data in pages(chunk, verify, codec):
        if header[1] == DICTIONARY_PAGE:
            pos = 0
            for _ in range(header[7][1]):
                n = int.from_bytes(data[pos:pos + 4], "little")
                strings.append(data[pos + 4:pos + 4 + n].decode())
                pos += 4 + n
            continue
        if header[1] == INDEX_PAGE:
            continue
        n, encoding, values = _values_of(header, data, optional)
        if encoding not in (PLAIN_DICTIONARY, RLE_DICTIONARY):
            raise Unsupported(f"encoding {encoding}")
        indices += rle_hybrid(values[1:], values[0], n)
    return strings, indices
