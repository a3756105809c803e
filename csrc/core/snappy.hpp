// Snappy decompression (raw format, as Parquet's SNAPPY codec stores each page), for the
// page decoder (parquet.hpp): pyarrow's default files compress their pages so.
//
// The format (Google's snappy, format_description.txt): the uncompressed length as a
// little-endian base-128 varint, then elements, each a tag byte whose low two bits say
// what it is:
//
//   00 literal: length - 1 in the upper six bits, or (60..63) in the next 1..4 bytes,
//      little-endian; then the bytes;
//   01 copy: length 4 + bits 2..4, offset bits 5..7 (high) and the next byte (low);
//   10 copy: length 1 + the upper six bits, offset in the next 2 bytes;
//   11 copy: length 1 + the upper six bits, offset in the next 4 bytes.
//
// A copy repeats `length` bytes from `offset` bytes back in the output, byte by byte
// (so an offset below the length repeats a pattern). The output must be exactly the
// declared length; any element reaching past the input or the output, an offset of 0
// or before the start, gives false, never a read or write out of bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pau::snappy {

// The declared uncompressed length and the varint's size; false when it does not parse
// (more than 5 bytes, or past the input).
inline bool length(const uint8_t* in, size_t n, uint64_t& out, size_t& used) {
    out = 0;
    for (size_t i = 0; i < n && i < 5; ++i) {
        out |= static_cast<uint64_t>(in[i] & 0x7f) << (7 * i);
        if ((in[i] & 0x80) == 0) {
            used = i + 1;
            return out <= 0xffffffffu;
        }
    }
    return false;
}

// Decompress `n` bytes at `in` into exactly `out_n` bytes at `out`.
inline bool decompress(const uint8_t* in, size_t n, uint8_t* out, size_t out_n) {
    uint64_t declared = 0;
    size_t used = 0;
    if (!length(in, n, declared, used) || declared != out_n) return false;
    const uint8_t* ip = in + used;
    const uint8_t* const in_end = in + n;
    uint8_t* op = out;
    uint8_t* const out_end = out + out_n;
    while (ip < in_end) {
        const uint8_t tag = *ip++;
        if ((tag & 3) == 0) {  // a literal
            // Its length in 64 bits: up to 2^32 (4 bytes of length - 1), checked against
            // the bytes left on both sides before it is used.
            uint64_t len64 = (tag >> 2) + 1u;
            if (len64 > 60) {
                const size_t extra = static_cast<size_t>(len64 - 60);  // 1..4 bytes of length - 1
                if (static_cast<size_t>(in_end - ip) < extra) return false;
                uint64_t v = 0;
                for (size_t k = 0; k < extra; ++k) v |= static_cast<uint64_t>(ip[k]) << (8 * k);
                ip += extra;
                len64 = v + 1;
            }
            const size_t in_left = static_cast<size_t>(in_end - ip), out_left = static_cast<size_t>(out_end - op);
            if (len64 > in_left || len64 > out_left) return false;
            const size_t len = static_cast<size_t>(len64);
            if (len <= 16 && in_left >= 16 && out_left >= 16) {
                std::memcpy(op, ip, 16);  // one wide copy; the bytes past len are written again later
            } else {
                std::memcpy(op, ip, len);
            }
            ip += len;
            op += len;
            continue;
        }
        size_t len, offset;
        if ((tag & 3) == 1) {
            if (ip >= in_end) return false;
            len = 4 + ((tag >> 2) & 7);
            offset = (static_cast<size_t>(tag >> 5) << 8) | *ip++;
        } else if ((tag & 3) == 2) {
            if (in_end - ip < 2) return false;
            len = 1 + (tag >> 2);
            offset = static_cast<size_t>(ip[0]) | (static_cast<size_t>(ip[1]) << 8);
            ip += 2;
        } else {
            if (in_end - ip < 4) return false;
            len = 1 + (tag >> 2);
            offset = static_cast<size_t>(ip[0]) | (static_cast<size_t>(ip[1]) << 8) |
                     (static_cast<size_t>(ip[2]) << 16) | (static_cast<size_t>(ip[3]) << 24);
            ip += 4;
        }
        const size_t done = static_cast<size_t>(op - out), out_left = static_cast<size_t>(out_end - op);
        if (offset == 0 || offset > done || len > out_left) return false;
        const uint8_t* src = op - offset;
        if (offset >= 8 && out_left >= len + 8) {
            // 8 bytes a step: each step's source lies wholly before its destination
            // (offset >= 8); up to 7 bytes past len are written again later.
            for (size_t k = 0; k < len; k += 8) std::memcpy(op + k, src + k, 8);
        } else {
            for (size_t k = 0; k < len; ++k) op[k] = src[k];
        }
        op += len;
    }
    return op == out_end;
}

}  // namespace pau::snappy
