// The pages of one Parquet column chunk, decoded: pau's reader of its own archive
// layout (pau.engine.io.write_dataset), for the encodings that layout writes.
//
// A column chunk is a run of pages, each a Thrift compact-protocol header and its
// bytes (parquet-format: PageHeader, DataPageHeader, DataPageHeaderV2,
// DictionaryPageHeader). What is decoded here: uncompressed or SNAPPY pages (pau's
// layout writes the first, pyarrow by default the second; snappy.hpp) of a column
// without repetition and without nulls (max definition level 0, or 1 with every value
// defined), holding
//
//   * INT32 or INT64 values, PLAIN, DELTA_BINARY_PACKED, or dictionary indices
//     (RLE_DICTIONARY / PLAIN_DICTIONARY) into a PLAIN dictionary page;
//   * BYTE_ARRAY values as dictionary indices only (Arrow's dictionary<string>):
//     the dictionary page's strings and the indices.
//
// Anything else (another codec, another encoding, an index out of its dictionary, a page
// that does not add up, a checksum that does not match) makes the call return
// false: pyarrow then reads the row group and raises what it finds (pau.engine.io). So
// this file never decides what a malformed file means; it only reads well-formed
// pages fast. The checksum of a page (CRC-32 of its bytes, as zlib's) is checked
// when asked, as pyarrow checks it when pau opens a file.
//
// Hostile bytes: every size, count, width and offset read from the chunk is checked
// against the bytes that exist (and against the widths pyarrow reads them as: a
// DELTA_BINARY_PACKED block size, miniblock count and value count are 32-bit, a run
// header of the RLE / bit-packed hybrid too) before it is used in arithmetic, a
// pointer or an allocation; a value pyarrow refuses is refused here (false), so the
// decoder accepts nothing pyarrow does not read. csrc/fuzz/ holds a fuzz target per
// entry point (docs/bad-input.md).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "snappy.hpp"

namespace pau::parquet {

// parquet-format's enums (the values are the format's).
enum PageType : int { kDataPage = 0, kIndexPage = 1, kDictionaryPage = 2, kDataPageV2 = 3 };
enum Encoding : int { kPlain = 0, kPlainDictionary = 2, kRle = 3, kDeltaBinaryPacked = 5, kRleDictionary = 8 };
enum Codec : int { kUncompressed = 0, kSnappy = 1 };  // CompressionCodec: the two read here

// ---- CRC-32 (polynomial 0x04C11DB7, bit-reflected: zlib's) ----
//
// Eight bytes a step by tables; on x86 with PCLMULQDQ, 64 bytes a step by folding
// with carry-less multiplication (V. Gopal et al., "Fast CRC Computation for Generic
// Polynomials Using PCLMULQDQ Instruction", Intel, 2009: the constants x^k mod P of
// its reflected form for folding 512 and 128 bits, then 64 to 32 bits and a Barrett
// reduction), with the tables for what is left. `state` is the register before the
// final inversion: crc32() starts it at all ones and inverts it at the end.

struct Crc32Tables {
    uint32_t t[8][256];
    Crc32Tables() {
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[0][i] = c;
        }
        for (int s = 1; s < 8; ++s)
            for (uint32_t i = 0; i < 256; ++i) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
};

inline uint32_t crc32_tables(uint32_t state, const uint8_t* p, size_t n) {
    static const Crc32Tables tables;
    const auto& t = tables.t;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);  // little-endian
        w ^= state;
        state = t[7][w & 0xff] ^ t[6][(w >> 8) & 0xff] ^ t[5][(w >> 16) & 0xff] ^ t[4][(w >> 24) & 0xff] ^
                t[3][(w >> 32) & 0xff] ^ t[2][(w >> 40) & 0xff] ^ t[1][(w >> 48) & 0xff] ^ t[0][w >> 56];
    }
    for (; n; ++p, --n) state = t[0][(state ^ *p) & 0xff] ^ (state >> 8);
    return state;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PAU_CRC32_FOLD 1

inline bool crc32_fold_available() {
    static const bool yes = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    return yes;
}

#define PAU_FOLD_TARGET __attribute__((target("pclmul,sse4.1")))

PAU_FOLD_TARGET inline __m128i crc32_load(const uint8_t* q) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
}

// a folded over the distance of k onto b: a.lo * k.lo ^ a.hi * k.hi ^ b
PAU_FOLD_TARGET inline __m128i crc32_step(__m128i a, __m128i k, __m128i b) {
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11)), b);
}

// The state after the first n bytes, n a multiple of 16 and at least 64.
PAU_FOLD_TARGET inline uint32_t crc32_fold(uint32_t state, const uint8_t* p, size_t n) {
    // The paper's constants for the reflected polynomial (powers of x mod P): a pair
    // for folding over 512 bits, a pair for 128 bits, one for the fold to 64 bits,
    // and P with mu = floor(x^64 / P) for the Barrett reduction to 32 bits.
    const __m128i by4 = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);
    const __m128i by1 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
    const __m128i to64 = _mm_set_epi64x(0, 0x163cd6124LL);
    const __m128i barrett = _mm_set_epi64x(0x1f7011641LL, 0x1db710641LL);
    const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x0 = _mm_xor_si128(crc32_load(p), _mm_cvtsi32_si128(static_cast<int>(state)));
    __m128i x1 = crc32_load(p + 16), x2 = crc32_load(p + 32), x3 = crc32_load(p + 48);
    p += 64;
    n -= 64;
    for (; n >= 64; p += 64, n -= 64) {
        x0 = crc32_step(x0, by4, crc32_load(p));
        x1 = crc32_step(x1, by4, crc32_load(p + 16));
        x2 = crc32_step(x2, by4, crc32_load(p + 32));
        x3 = crc32_step(x3, by4, crc32_load(p + 48));
    }
    __m128i x = crc32_step(crc32_step(crc32_step(x0, by1, x1), by1, x2), by1, x3);
    for (; n >= 16; p += 16, n -= 16) x = crc32_step(x, by1, crc32_load(p));
    // 128 -> 64 bits, then 64 -> 32 (two folds), then Barrett
    x = _mm_xor_si128(_mm_clmulepi64_si128(x, by1, 0x10), _mm_srli_si128(x, 8));
    x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, low32), to64, 0x00), _mm_srli_si128(x, 4));
    __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x, low32), barrett, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), barrett, 0x00);
    return static_cast<uint32_t>(_mm_extract_epi32(_mm_xor_si128(x, t), 1));
}
#undef PAU_FOLD_TARGET
#endif

inline uint32_t crc32(const uint8_t* p, size_t n) {
    uint32_t state = 0xFFFFFFFFu;
#ifdef PAU_CRC32_FOLD
    if (n >= 64 && crc32_fold_available()) {
        const size_t folded = n & ~size_t{15};
        state = crc32_fold(state, p, folded);
        p += folded;
        n -= folded;
    }
#endif
    return ~crc32_tables(state, p, n);
}

// ---- the Thrift compact protocol, as far as a page header needs it ----

class Compact {
  public:
    // pyarrow's limits on what its Thrift reader accepts (ReaderProperties'
    // thrift_string_size_limit and thrift_container_size_limit): past them it refuses.
    static constexpr uint64_t kStringLimit = 100'000'000, kContainerLimit = 1'000'000;

    Compact(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}

    bool ok() const { return ok_; }
    const uint8_t* pos() const { return p_; }

    uint8_t byte() {
        if (p_ >= end_) return fail<uint8_t>();
        return *p_++;
    }
    // An unsigned LEB128 number of at most 64 bits (bits past the 64th: a failure).
    uint64_t varint() {
        uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            const uint8_t b = byte();
            if (shift == 63 && (b & 0x7e)) return fail<uint64_t>();
            v |= uint64_t{b & 0x7fu} << shift;
            if (!(b & 0x80)) return v;
        }
        return fail<uint64_t>();
    }
    // A varint of at most `bits` bits, as pyarrow reads one into a narrower integer
    // (a value past them: a failure).
    uint64_t varint_of(int bits) {
        const uint64_t v = varint();
        if (bits < 64 && (v >> bits)) return fail<uint64_t>();
        return v;
    }
    int64_t zigzag(int bits = 64) {
        const uint64_t v = varint_of(bits);
        return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
    }
    // The next field of a struct: its type (0 at the struct's end) and id (from the last one).
    int field(int16_t& id) {
        const uint8_t b = byte();
        if (!ok_ || b == 0) return 0;
        const int delta = b >> 4;
        id = delta ? static_cast<int16_t>(id + delta) : static_cast<int16_t>(zigzag());
        return b & 0x0f;
    }
    // An i32 field (compact type 5), else a failure.
    int64_t i32(int type) {
        if (type != 5) return fail<int64_t>();
        const int64_t v = zigzag();
        if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) return fail<int64_t>();
        return v;
    }
    // Skip a value of a compact type; `element`: inside a list, where a bool is a byte.
    void skip(int type, bool element = false, int depth = 0) {
        if (depth > 32) return fail<void>();
        switch (type) {
            case 1:
            case 2:
                if (element) byte();  // a field's bool is in its type
                return;
            case 3: byte(); return;
            case 4:
            case 5:
            case 6: varint(); return;
            case 7: bytes(8); return;
            case 8: {
                const uint64_t n = varint();
                if (n > kStringLimit) return fail<void>();
                bytes(n);
                return;
            }
            case 9:
            case 10: {
                const uint8_t h = byte();
                uint64_t n = h >> 4;
                if (n == 15) n = varint();
                if (n > kContainerLimit) return fail<void>();
                for (uint64_t i = 0; i < n && ok_; ++i) skip(h & 0x0f, true, depth + 1);
                return;
            }
            case 11: {
                const uint64_t n = varint();
                if (n == 0) return;
                if (n > kContainerLimit) return fail<void>();
                const uint8_t kv = byte();
                for (uint64_t i = 0; i < n && ok_; ++i) {
                    skip(kv >> 4, true, depth + 1);
                    skip(kv & 0x0f, true, depth + 1);
                }
                return;
            }
            case 12: {
                int16_t id = 0;
                for (int t = field(id); t && ok_; t = field(id)) skip(t, false, depth + 1);
                return;
            }
            default: return fail<void>();
        }
    }

  private:
    void bytes(uint64_t n) {
        if (n > static_cast<uint64_t>(end_ - p_)) return fail<void>();
        p_ += n;
    }
    template <typename T>
    T fail() {
        ok_ = false;
        p_ = end_;
        if constexpr (!std::is_void_v<T>) return T{};
    }

    const uint8_t* p_;
    const uint8_t* end_;
    bool ok_ = true;
};

// What a page header says (only what is read here).
struct PageHeader {
    int64_t type = -1;
    int64_t uncompressed = -1, compressed = -1;
    bool has_crc = false;
    uint32_t crc = 0;
    int64_t values = -1;  // num_values (nulls included)
    int64_t encoding = -1;
    int64_t def_encoding = -1;        // v1: the definition levels' encoding
    int64_t nulls = 0;                // v2
    int64_t def_bytes = 0, rep_bytes = 0;  // v2: the levels before the values
    bool values_compressed = true;    // v2's is_compressed
    bool compressed_set = false;      // v2: is_compressed written (pyarrow's default differs by version)
    int64_t rows = 0;                 // v2: num_rows
};

// The header's fields the format marks required, as bits (1 << field id) of i32 fields,
// per struct: PageHeader (type and both sizes), DataPageHeader (num_values, encoding and
// both level encodings), DictionaryPageHeader (num_values, encoding), DataPageHeaderV2
// (num_values, num_nulls, num_rows, encoding, both level lengths). pyarrow's Thrift
// code refuses a header that lacks one (or holds it with another type), so this does too.
constexpr uint32_t kRequired[9] = {0b1110, 0, 0, 0, 0, 0b11110, 0, 0b110, 0b1111110};

inline bool read_page_header(Compact& c, PageHeader& h) {
    int16_t id = 0;
    uint32_t seen = 0;  // the top-level fields read, as bits
    for (int type = c.field(id); type && c.ok(); type = c.field(id)) {
        if (id >= 5 && id <= 8 && type == 12) {  // one of the page kinds' headers
            int16_t sub = 0;
            uint32_t sub_seen = 0;  // its required i32 fields
            for (int t = c.field(sub); t && c.ok(); t = c.field(sub)) {
                if (sub >= 1 && sub <= 6 && t == 5) sub_seen |= 1u << sub;
                if (id == 5 && sub == 1) h.values = c.i32(t);         // DataPageHeader
                else if (id == 5 && sub == 2) h.encoding = c.i32(t);
                else if (id == 5 && sub == 3) h.def_encoding = c.i32(t);
                else if (id == 7 && sub == 1) h.values = c.i32(t);    // DictionaryPageHeader
                else if (id == 7 && sub == 2) h.encoding = c.i32(t);
                else if (id == 8 && sub == 1) h.values = c.i32(t);    // DataPageHeaderV2
                else if (id == 8 && sub == 2) h.nulls = c.i32(t);
                else if (id == 8 && sub == 3) h.rows = c.i32(t);
                else if (id == 8 && sub == 4) h.encoding = c.i32(t);
                else if (id == 8 && sub == 5) h.def_bytes = c.i32(t);
                else if (id == 8 && sub == 6) h.rep_bytes = c.i32(t);
                else if (id == 8 && sub == 7 && (t == 1 || t == 2)) {
                    h.values_compressed = t == 1;
                    h.compressed_set = true;
                }
                else c.skip(t);
            }
            if ((sub_seen & kRequired[id]) != kRequired[id]) return false;
            continue;
        }
        if (id >= 1 && id <= 3 && type == 5) seen |= 1u << id;
        switch (id) {
            case 1: h.type = c.i32(type); break;
            case 2: h.uncompressed = c.i32(type); break;
            case 3: h.compressed = c.i32(type); break;
            case 4:
                h.crc = static_cast<uint32_t>(static_cast<int32_t>(c.i32(type)));
                h.has_crc = true;
                break;
            default: c.skip(type);
        }
    }
    return c.ok() && (seen & kRequired[0]) == kRequired[0] && h.type >= 0 && h.compressed >= 0 &&
           h.uncompressed >= 0 && h.rows >= 0;
}

// ---- bit unpacking: values of W bits, least significant bit first ----

inline uint64_t load64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

// `count` values (a multiple of 8) of W bits from `in` into `out`; reads up to 8
// bytes past the count * W / 8 it unpacks (the caller pads where needed).
template <int W, typename U>
void unpack(const uint8_t* in, U* out, int64_t count) {
    static_assert(W >= 0 && W <= 64, "bit width");
    constexpr uint64_t mask = W == 64 ? ~uint64_t{0} : (uint64_t{1} << W) - 1;
    for (int64_t g = 0; g < count; g += 8, in += W, out += 8) {
        if constexpr (W == 0) {
            for (int k = 0; k < 8; ++k) out[k] = 0;
        } else {
#pragma GCC unroll 8
            for (int k = 0; k < 8; ++k) {
                constexpr int kBits = W;
                const int bit = k * kBits, at = bit >> 3, shift = bit & 7;
                uint64_t v = load64(in + at) >> shift;
                if (shift + kBits > 64) v |= uint64_t{in[at + 8]} << (64 - shift);
                out[k] = static_cast<U>(v & mask);
            }
        }
    }
}

template <typename U, int... W>
constexpr auto unpackers(std::integer_sequence<int, W...>) {
    return std::array<void (*)(const uint8_t*, U*, int64_t), sizeof...(W)>{&unpack<W, U>...};
}

// unpack<w> for a bit width known at run time (0..bits of U); `in` must hold
// count * w / 8 bytes and `end` is where the readable bytes stop: the last groups
// are unpacked from a zero-padded copy when the 8 bytes of slack are not there.
template <typename U>
void unpack_width(int w, const uint8_t* in, const uint8_t* end, U* out, int64_t count) {
    static constexpr auto table = unpackers<U>(std::make_integer_sequence<int, sizeof(U) * 8 + 1>{});
    const auto fn = table[static_cast<size_t>(w)];
    // groups of 8 whose loads stay inside [in, end)
    const int64_t safe_bytes = std::max<int64_t>(0, (end - in) - 8);
    const int64_t safe = w ? std::min<int64_t>(count, safe_bytes / w * 8) : count;
    fn(in, out, safe);
    if (safe == count) return;
    uint8_t pad[64 * 8 + 16] = {0};  // up to 8 groups of 64 bits, and the slack
    in += safe / 8 * w;
    out += safe;
    for (int64_t left = count - safe; left > 0;) {
        const int64_t n = std::min<int64_t>(left, 64);
        const int64_t bytes = n / 8 * w;
        std::memset(pad, 0, sizeof pad);
        std::memcpy(pad, in, static_cast<size_t>(std::max<int64_t>(0, std::min<int64_t>(bytes, end - in))));
        fn(pad, out, n);
        in += bytes;
        out += n;
        left -= n;
    }
}

// ---- DELTA_BINARY_PACKED ----

// `count` deltas (a multiple of 8) of W bits from `in`, each added with min_delta
// to the running value `prev`, into out: unpack and prefix sum in one pass. Reads
// up to 8 bytes past the count * W / 8 it unpacks.
template <int W, typename U, typename T>
void unpack_sum(const uint8_t* in, int64_t count, U& prev, U min_delta, T* out) {
    constexpr uint64_t mask = W == 64 ? ~uint64_t{0} : (uint64_t{1} << W) - 1;
    U acc = prev;
    for (int64_t g = 0; g < count; g += 8, in += W, out += 8) {
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) {
            uint64_t v = 0;
            if constexpr (W > 0) {
                const int bit = k * W, at = bit >> 3, shift = bit & 7;
                v = load64(in + at) >> shift;
                if (shift + W > 64) v |= uint64_t{in[at + 8]} << (64 - shift);
                v &= mask;
            }
            acc += min_delta + static_cast<U>(v);  // wraps, as the writer's deltas did
            out[k] = static_cast<T>(acc);
        }
    }
    prev = acc;
}

template <typename T, int... W>
constexpr auto summers(std::integer_sequence<int, W...>) {
    using U = std::make_unsigned_t<T>;
    return std::array<void (*)(const uint8_t*, int64_t, U&, U, T*), sizeof...(W)>{&unpack_sum<W, U, T>...};
}

// The `n` values of one page into out; false when the page does not hold them.
template <typename T>
bool delta_binary_packed(const uint8_t* p, const uint8_t* end, T* out, int64_t n) {
    using U = std::make_unsigned_t<T>;
    constexpr int kBits = static_cast<int>(sizeof(T) * 8);
    Compact c(p, end);
    // pyarrow reads the block size, the miniblock count and the value count as 32-bit
    // unsigned numbers and the first value (and each block's minimum delta) as T: a
    // value past those widths is refused, as pyarrow refuses it. So per_mini < 2^32 and
    // every product below (at most per_mini * 64) fits in int64.
    const uint64_t block = c.varint_of(32), minis = c.varint_of(32), total = c.varint_of(32);
    const U first = static_cast<U>(c.zigzag(kBits));
    if (!c.ok() || n < 0 || block == 0 || block % 128 || minis == 0 || block % minis || (block / minis) % 32 ||
        total != static_cast<uint64_t>(n))
        return false;
    if (n == 0) return true;
    const int64_t per_mini = static_cast<int64_t>(block / minis);
    U raw[512];
    U prev = first;
    out[0] = static_cast<T>(prev);
    int64_t i = 1;
    p = c.pos();
    while (i < n) {
        Compact b(p, end);
        const U min_delta = static_cast<U>(b.zigzag(kBits));
        p = b.pos();
        if (!b.ok() || static_cast<uint64_t>(end - p) < minis) return false;
        const uint8_t* widths = p;
        p += minis;
        for (uint64_t m = 0; m < minis && i < n; ++m) {
            const int w = widths[m];
            if (w > static_cast<int>(sizeof(U) * 8)) return false;
            const int64_t keep = std::min<int64_t>(per_mini, n - i);
            // The whole miniblock must be there, the last one's padding too: pyarrow
            // skips past it after the last value and refuses a page that stops short.
            if (per_mini * w / 8 > end - p) return false;
            if (keep == per_mini && per_mini * w / 8 + 8 <= end - p) {  // a whole miniblock, and slack
                static constexpr auto sum = summers<T>(std::make_integer_sequence<int, sizeof(U) * 8 + 1>{});
                sum[static_cast<size_t>(w)](p, per_mini, prev, min_delta, out + i);
                i += per_mini;
                p += per_mini * w / 8;
                continue;
            }
            for (int64_t done = 0; done < keep;) {  // in pieces of at most 512 values
                const int64_t take = std::min<int64_t>(512, keep - done);
                const int64_t groups = (take + 7) / 8 * 8;
                unpack_width<U>(w, p + done / 8 * w, end, raw, groups);
                for (int64_t k = 0; k < take; ++k) {
                    prev += min_delta + raw[k];  // wraps, as the writer's deltas did
                    out[i + k] = static_cast<T>(prev);
                }
                i += take;
                done += take;
            }
            p += per_mini * w / 8;
        }
    }
    return true;
}

// ---- the RLE / bit-packed hybrid (dictionary indices) ----

// `count` values (a multiple of 8) of W bits from `in` into out; returns the
// largest. Reads up to 8 bytes past the count * W / 8 it unpacks.
template <int W, typename I>
uint32_t unpack_top(const uint8_t* in, int64_t count, I* out) {
    constexpr uint64_t mask = (uint64_t{1} << W) - 1;
    uint32_t top = 0;
    for (int64_t g = 0; g < count; g += 8, in += W, out += 8) {
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) {
            uint32_t v = 0;
            if constexpr (W > 0) {
                const int bit = k * W, at = bit >> 3, shift = bit & 7;
                v = static_cast<uint32_t>((load64(in + at) >> shift) & mask);
            }
            top = std::max(top, v);
            out[k] = static_cast<I>(v);
        }
    }
    return top;
}

template <typename I, int... W>
constexpr auto toppers(std::integer_sequence<int, W...>) {
    return std::array<uint32_t (*)(const uint8_t*, int64_t, I*), sizeof...(W)>{&unpack_top<W, I>...};
}

// `n` indices of `w` bits into out, each below `size`; false otherwise.
template <typename I>
bool rle_hybrid(const uint8_t* p, const uint8_t* end, int w, I* out, int64_t n, int64_t size) {
    if (w < 0 || w > 32 || n < 0) return false;
    uint32_t raw[512];
    const int value_bytes = (w + 7) / 8;
    int64_t i = 0;
    while (i < n) {
        Compact c(p, end);
        // pyarrow reads a run's header as a 32-bit unsigned number (a longer one is
        // refused, never clamped), a bit-packed run of at most 2^31 / 8 groups.
        const uint64_t header = c.varint_of(32);
        p = c.pos();
        if (!c.ok()) return false;
        if (header & 1) {  // bit-packed: groups of 8 values
            const uint64_t groups = header >> 1;
            if (groups == 0 || groups > static_cast<uint64_t>(std::numeric_limits<int32_t>::max() / 8) ||
                groups > static_cast<uint64_t>(n))
                return false;
            const int64_t count = static_cast<int64_t>(groups) * 8, keep = std::min<int64_t>(count, n - i);
            // The run's bytes must be there, as pyarrow requires: all of them, save a
            // last group of 8 cut short (some writers do not pad it).
            if (static_cast<int64_t>(groups) * w > end - p && (end - p) * 8 / w <= count - 8) return false;
            if ((keep * w + 7) / 8 > end - p) return false;
            if (keep == count && count / 8 * w + 8 <= end - p) {  // the whole run, and slack
                static constexpr auto top = toppers<I>(std::make_integer_sequence<int, 33>{});
                if (top[static_cast<size_t>(w)](p, count, out + i) >= size) return false;
                i += count;
                p += count / 8 * w;
                continue;
            }
            for (int64_t done = 0; done < keep;) {
                const int64_t take = std::min<int64_t>(512, keep - done);
                unpack_width<uint32_t>(w, p + done / 8 * w, end, raw, (take + 7) / 8 * 8);
                uint32_t top = 0;
                for (int64_t k = 0; k < take; ++k) {
                    top = std::max(top, raw[k]);
                    out[i + k] = static_cast<I>(raw[k]);
                }
                if (top >= size) return false;
                i += take;
                done += take;
            }
            p += std::min<int64_t>(count / 8 * w, end - p);
        } else {  // a run of one value
            const uint64_t run = header >> 1;
            if (run == 0 || value_bytes > end - p) return false;
            uint32_t v = 0;
            for (int b = 0; b < value_bytes; ++b) v |= uint32_t{p[b]} << (8 * b);
            p += value_bytes;
            if (v >= size) return false;
            const int64_t keep = std::min<int64_t>(static_cast<int64_t>(run), n - i);  // run < 2^31
            std::fill(out + i, out + i + keep, static_cast<I>(v));
            i += keep;
        }
    }
    return true;
}

// ---- a column chunk ----

// One page, located: its header and its bytes.
struct Page {
    PageHeader h;
    const uint8_t* data;  // the page's bytes (after the header; decompressed), `size` of them
    int64_t size;
};

// Walks the pages of a chunk: false at a header that does not parse, a page that
// reaches past the chunk, a checksum that fails (it covers the bytes as stored), or
// a page that does not decompress to its uncompressed size. An uncompressed chunk's
// pages are read in place; a SNAPPY chunk's are decompressed into `scratch`, valid
// until the next page (a v2 data page's levels are never compressed; its values are
// unless its header says not).
class Pages {
  public:
    static constexpr int64_t kMaxHeaderBytes = 16 << 20;  // pyarrow's kDefaultMaxPageHeaderSize

    Pages(const uint8_t* p, size_t n, bool verify, Codec codec = kUncompressed)
        : p_(p), end_(p + n), verify_(verify), codec_(codec) {}

    bool done() const { return p_ == end_; }
    bool next(Page& page) {
        Compact c(p_, end_);
        page.h = PageHeader{};
        if (!read_page_header(c, page.h)) return false;
        const PageHeader& h = page.h;
        const uint8_t* stored = c.pos();
        if (stored - p_ > kMaxHeaderBytes) return false;  // pyarrow's limit on a page header
        if (h.compressed > end_ - stored) return false;
        if (verify_ && h.has_crc && crc32(stored, static_cast<size_t>(h.compressed)) != h.crc) return false;
        p_ = stored + h.compressed;
        page.data = stored;
        page.size = h.compressed;
        if (codec_ == kUncompressed) return h.compressed == h.uncompressed;
        if (codec_ != kSnappy) return false;
        // A v2 data page's levels come first, as they are; then the values.
        const int64_t levels = h.type == kDataPageV2 ? h.def_bytes + h.rep_bytes : 0;
        if (levels < 0 || levels > h.compressed || levels > h.uncompressed) return false;
        // A v2 page that does not say whether its values are compressed: pyarrow's
        // versions read it differently, so it is theirs to read.
        if (h.type == kDataPageV2 && !h.compressed_set) return false;
        if (h.type == kDataPageV2 && !h.values_compressed) return h.compressed == h.uncompressed;
        // The declared size against what the stored bytes can hold, before it is
        // allocated: a snappy element of n bytes gives at most 64 / 3 * n (a 3-byte
        // copy of 64), so a page claiming more than 22 times its bytes cannot
        // decompress (pyarrow refuses it too).
        if (h.uncompressed - levels > 22 * (h.compressed - levels) + 32) return false;
        // Grown only (a resize down and up again would zero the bytes between).
        if (scratch_.size() < static_cast<size_t>(h.uncompressed)) scratch_.resize(static_cast<size_t>(h.uncompressed));
        if (levels) std::memcpy(scratch_.data(), stored, static_cast<size_t>(levels));
        if (!snappy::decompress(stored + levels, static_cast<size_t>(h.compressed - levels), scratch_.data() + levels,
                                static_cast<size_t>(h.uncompressed - levels)))
            return false;
        page.data = scratch_.data();
        page.size = h.uncompressed;
        return true;
    }

  private:
    const uint8_t* p_;
    const uint8_t* end_;
    bool verify_;
    Codec codec_;
    std::vector<uint8_t> scratch_;
};

// The values of a data page of a column without nulls: [begin, end). An optional
// column (max definition level 1, `optional`) is read when the page holds no null:
// its definition levels (v1: a 4-byte length, then the RLE / bit-packed hybrid of
// width 1; v2: the hybrid, its length in the header, and a null count of 0) are read
// into `levels` and must all be 1.
inline bool data_values(const Page& page, const uint8_t*& begin, const uint8_t*& end, bool optional,
                        std::vector<uint8_t>& levels) {
    begin = page.data;
    end = page.data + page.size;
    const PageHeader& h = page.h;
    if (h.values < 0) return false;
    if (h.type == kDataPageV2) {
        if (h.nulls != 0 || h.def_bytes < 0 || h.rep_bytes < 0 || h.def_bytes + h.rep_bytes > end - begin)
            return false;
        if (optional) {
            // The header's null count is not the levels: pyarrow decodes them (after
            // the repetition levels, without a length of their own), so the decoder does
            // too, and reads the page only when every level is 1.
            const uint8_t* def = begin + h.rep_bytes;
            levels.resize(static_cast<size_t>(h.values));
            if (!rle_hybrid<uint8_t>(def, def + h.def_bytes, 1, levels.data(), h.values, 2)) return false;
            for (uint8_t v : levels)
                if (v != 1) return false;
        }
        begin += h.def_bytes + h.rep_bytes;
        return true;
    }
    if (!optional) return true;  // a required column's v1 page: no levels written
    if (h.def_encoding != kRle || end - begin < 4) return false;  // (BIT_PACKED levels: not read here)
    uint32_t len;
    std::memcpy(&len, begin, 4);
    begin += 4;
    if (len > static_cast<uint64_t>(end - begin)) return false;
    levels.resize(static_cast<size_t>(h.values));
    if (!rle_hybrid<uint8_t>(begin, begin + len, 1, levels.data(), h.values, 2)) return false;
    for (uint8_t v : levels)
        if (v != 1) return false;  // a null: pyarrow's way
    begin += len;
    return true;
}

// The `n` INT32 / INT64 values of a chunk (every data page, in order) into out.
template <typename T>
bool int_chunk(const uint8_t* chunk, size_t bytes, bool verify, T* out, int64_t n, Codec codec = kUncompressed,
               bool optional = false) {
    Pages pages(chunk, bytes, verify, codec);
    std::vector<T> dict;
    std::vector<int32_t> idx;
    std::vector<uint8_t> levels;
    bool has_dict = false;
    int64_t i = 0;
    while (!pages.done()) {
        Page page;
        if (!pages.next(page)) return false;
        const PageHeader& h = page.h;
        if (h.type == kIndexPage) continue;
        if (h.type == kDictionaryPage) {
            if (has_dict || (h.encoding != kPlain && h.encoding != kPlainDictionary) || h.values < 0 ||
                h.values * static_cast<int64_t>(sizeof(T)) > page.size)
                return false;
            dict.resize(static_cast<size_t>(h.values));
            if (h.values) std::memcpy(dict.data(), page.data, static_cast<size_t>(h.values) * sizeof(T));
            has_dict = true;
            continue;
        }
        if (h.type != kDataPage && h.type != kDataPageV2) return false;
        const uint8_t *b, *e;
        if (h.values < 0 || h.values > n - i || !data_values(page, b, e, optional, levels)) return false;
        T* o = out + i;
        switch (h.encoding) {
            case kPlain:
                if (h.values * static_cast<int64_t>(sizeof(T)) > e - b) return false;
                if (h.values) std::memcpy(o, b, static_cast<size_t>(h.values) * sizeof(T));
                break;
            case kDeltaBinaryPacked:
                if (!delta_binary_packed<T>(b, e, o, h.values)) return false;
                break;
            case kRleDictionary:
            case kPlainDictionary:
                if (!has_dict || b >= e) return false;
                idx.resize(static_cast<size_t>(h.values));
                if (!rle_hybrid<int32_t>(b + 1, e, *b, idx.data(), h.values, static_cast<int64_t>(dict.size())))
                    return false;
                for (int64_t k = 0; k < h.values; ++k) o[k] = dict[static_cast<size_t>(idx[static_cast<size_t>(k)])];
                break;
            default: return false;
        }
        i += h.values;
    }
    return i == n;
}

// A BYTE_ARRAY chunk of dictionary indices: the dictionary's strings (offsets, n + 1
// of them, into data) and the `n` indices into out.
template <typename I>
bool dictionary_chunk(const uint8_t* chunk, size_t bytes, bool verify, I* out, int64_t n,
                      std::vector<int32_t>& offsets, std::vector<uint8_t>& data, Codec codec = kUncompressed,
                      bool optional = false) {
    Pages pages(chunk, bytes, verify, codec);
    std::vector<uint8_t> levels;
    bool has_dict = false;
    int64_t i = 0, size = 0;
    while (!pages.done()) {
        Page page;
        if (!pages.next(page)) return false;
        const PageHeader& h = page.h;
        if (h.type == kIndexPage) continue;
        if (h.type == kDictionaryPage) {
            if (has_dict || (h.encoding != kPlain && h.encoding != kPlainDictionary) || h.values < 0 ||
                h.values > std::numeric_limits<I>::max() + int64_t{1})
                return false;
            const uint8_t* p = page.data;
            const uint8_t* e = p + page.size;
            offsets.assign(1, 0);
            data.clear();
            for (int64_t k = 0; k < h.values; ++k) {
                if (e - p < 4) return false;
                uint32_t len;
                std::memcpy(&len, p, 4);
                p += 4;
                if (len > static_cast<uint64_t>(e - p) ||
                    data.size() + len > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
                    return false;
                data.insert(data.end(), p, p + len);
                p += len;
                offsets.push_back(static_cast<int32_t>(data.size()));
            }
            size = h.values;
            has_dict = true;
            continue;
        }
        if (h.type != kDataPage && h.type != kDataPageV2) return false;
        const uint8_t *b, *e;
        if (!has_dict || h.values < 0 || h.values > n - i || !data_values(page, b, e, optional, levels) || b >= e ||
            (h.encoding != kRleDictionary && h.encoding != kPlainDictionary))
            return false;
        if (!rle_hybrid<I>(b + 1, e, *b, out + i, h.values, size)) return false;
        i += h.values;
    }
    return has_dict && i == n;
}

}  // namespace pau::parquet
