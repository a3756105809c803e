// pau native core: the RLE / bit-packing hybrid of Parquet (the encoding of
// dictionary indices in RLE_DICTIONARY data pages), decoded to int8 indices.
//
// Format (Apache Parquet, Encodings.md, "Run Length Encoding / Bit-Packing
// Hybrid"): a sequence of runs, each a ULEB128 header h; h & 1 == 1: a bit-packed
// run of (h >> 1) groups of 8 values, each value `bit_width` bits, packed from the
// least significant bit of each byte up, (h >> 1) * bit_width bytes; h & 1 == 0: an
// RLE run of h >> 1 copies of one value stored in ceil(bit_width / 8) bytes, little
// endian. A data page's values are its first `count` decoded values (the last
// bit-packed run may be padded).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace pau::core {

namespace detail {

// 8 values of W bits from W bytes (least significant bit first).
template <int W>
inline void unpack8(const uint8_t* p, int8_t* out) {
    uint64_t w = 0;
    std::memcpy(&w, p, W);
    constexpr uint64_t mask = (1u << W) - 1u;
    for (int j = 0; j < 8; ++j) out[j] = static_cast<int8_t>((w >> (j * W)) & mask);
}

template <int W>
inline void unpack_groups(const uint8_t* p, int64_t groups, int8_t* out) {
    for (int64_t g = 0; g < groups; ++g) unpack8<W>(p + g * W, out + g * 8);
}

inline void unpack_groups(int w, const uint8_t* p, int64_t groups, int8_t* out) {
    switch (w) {
        case 1: return unpack_groups<1>(p, groups, out);
        case 2: return unpack_groups<2>(p, groups, out);
        case 3: return unpack_groups<3>(p, groups, out);
        case 4: return unpack_groups<4>(p, groups, out);
        case 5: return unpack_groups<5>(p, groups, out);
        case 6: return unpack_groups<6>(p, groups, out);
        case 7: return unpack_groups<7>(p, groups, out);
        default: std::memset(out, 0, static_cast<size_t>(groups * 8));
    }
}

}  // namespace detail

// Decode `count` values of bit width `bit_width` (0..7: pau's kinds fit a byte)
// from data[0, size) into out (int8). Throws std::invalid_argument naming what is
// wrong when the runs are truncated or a value is >= `limit` (the dictionary size).
inline void rle_hybrid_int8(const uint8_t* data, int64_t size, int bit_width, int64_t count, int64_t limit,
                            int8_t* out) {
    if (bit_width < 0 || bit_width > 7) throw std::invalid_argument("bit width " + std::to_string(bit_width) + " > 7");
    const uint8_t* p = data;
    const uint8_t* end = data + size;
    int64_t got = 0;
    while (got < count) {
        uint64_t h = 0;
        int shift = 0;
        while (true) {
            if (p >= end) throw std::invalid_argument("run header past the end of the page");
            const uint8_t b = *p++;
            h |= static_cast<uint64_t>(b & 0x7f) << shift;
            if (!(b & 0x80)) break;
            shift += 7;
            if (shift > 63) throw std::invalid_argument("run header too long");
        }
        if (h & 1) {  // bit-packed: groups of 8 values
            const uint64_t groups = h >> 1;
            if (bit_width > 0 && groups > static_cast<uint64_t>(end - p) / static_cast<uint64_t>(bit_width))
                throw std::invalid_argument("bit-packed run past the end of the page");
            const int64_t want = count - got;
            const int64_t full = std::min<int64_t>(static_cast<int64_t>(std::min<uint64_t>(groups, 1ull << 60)),
                                                   want / 8);
            detail::unpack_groups(bit_width, p, full, out + got);
            got += full * 8;
            if (got < count && static_cast<uint64_t>(full) < groups) {  // a last group only partly used
                int8_t tail[8];
                detail::unpack_groups(bit_width, p + full * bit_width, 1, tail);
                const int64_t k = std::min<int64_t>(8, count - got);
                std::memcpy(out + got, tail, static_cast<size_t>(k));
                got += k;
            }
            p += groups * static_cast<uint64_t>(bit_width);
        } else {  // RLE: one value repeated
            const uint64_t n = h >> 1;
            const int bytes = (bit_width + 7) / 8;
            if (end - p < bytes) throw std::invalid_argument("RLE run past the end of the page");
            const uint32_t v = bytes ? *p : 0;
            p += bytes;
            if (v >= 128) throw std::invalid_argument("index " + std::to_string(v) + " >= dictionary size");
            const int64_t take = static_cast<int64_t>(std::min<uint64_t>(n, static_cast<uint64_t>(count - got)));
            std::memset(out + got, static_cast<int>(v), static_cast<size_t>(take));
            got += take;
        }
    }
    // every index within the dictionary (one pass; none needed when the width cannot exceed it)
    if (limit < (int64_t{1} << bit_width)) {
        uint8_t mx = 0;
        for (int64_t i = 0; i < count; ++i) mx = std::max<uint8_t>(mx, static_cast<uint8_t>(out[i]));
        if (count && mx >= limit) throw std::invalid_argument("index " + std::to_string(mx) + " >= dictionary size");
    }
}

}  // namespace pau::core
