// pau native interval core: the vector lanes of the exclusive-time sweep's kernels
// (exclusive.hpp), one traits struct per instruction set.
//
// The six priority levels are six int64 lanes: top (the latest end among the events
// of levels <= L) and u (U_L, the union so far), with the clip bounds lo and hi
// broadcast. The kernel's loop (ExclusiveSweep::feed_lanes) is written once over a
// traits struct L, which gives:
//   Lanes                          the lanes (top, u, lo, hi) and lo, hi as scalars
//   Mask, masks(mask)              the lanes of levels k..5 at mask[k + 1], none at mask[0]
//   byte_of(mask, k), of_byte(..)  a level's entry in the byte table of a block's kinds,
//                                  and the mask of an entry (0 is an unknown kind)
//   init, spill, fill              the lanes at the start, stored into a rank, loaded
//   copy(d, s)                     the lanes copied field by field (a copy of the whole
//                                  struct went through general registers, and GCC then
//                                  kept the AVX2 lanes on the stack through the loop)
//   add_event<Clip>(c, m, st, en)  one event [st, en) of the lanes in m
//   rows_ok, one_rank, inside      the checks of a block of 8 rows
// Every operation is a plain inline function with its instruction set's target: the
// kernel's entry points (with that target) flatten them into the loop, so that one
// loop becomes each instruction set's machine code, as if written for it.
//
// AVX-512 (F, VL): the lanes are one 8 x int64 vector, a mask is a mask register; an
// event costs two masked maxima, a subtraction and an add, no branch on the data.
// AVX2: lanes 0-3 in a 256-bit vector and 4-5 in a 128-bit one (on CPUs that split
// 256-bit operations in two, 6 lanes cost 3 halves, not 4). AVX2 has no 64-bit maximum
// and no mask registers: a masked maximum is a compare, an AND with the level's lanes
// and a blend.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PAU_HAVE_X86_KERNELS 1
#else
#define PAU_HAVE_X86_KERNELS 0
#endif

#include <cstdint>
#include <limits>

#if PAU_HAVE_X86_KERNELS
namespace pau::core::lanes {

constexpr int kLevels = 6;
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

#define PAU_AVX512 __attribute__((target("avx512f,avx512vl"))) static inline
#define PAU_AVX2 __attribute__((target("avx2"))) static inline

struct Avx512 {
    struct Lanes {
        __m512i top, u, lo, hi;
        int64_t lo_s, hi_s;  // lo and hi, as scalars
    };
    using Mask = __mmask8;
    PAU_AVX512 void copy(Lanes& d, const Lanes& s) {
        d.top = s.top;
        d.u = s.u;
        d.lo = s.lo;
        d.hi = s.hi;
        d.lo_s = s.lo_s;
        d.hi_s = s.hi_s;
    }
    PAU_AVX512 void masks(Mask* mask) {
        mask[0] = 0;
        for (int k = 0; k < kLevels; ++k) mask[k + 1] = static_cast<__mmask8>((0x3Fu << k) & 0x3Fu);
    }
    // The byte table holds the lanes themselves.
    PAU_AVX512 uint8_t byte_of(const Mask* mask, int k) { return mask[k + 1]; }
    PAU_AVX512 Mask of_byte(const Mask*, uint64_t b) { return static_cast<__mmask8>(b); }
    PAU_AVX512 void init(Lanes& c) {
        c = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_set1_epi64(kMin), _mm512_set1_epi64(kMax), kMin,
             kMax};
    }
    PAU_AVX512 void spill(const Lanes& c, int64_t* top, int64_t* u) {
        _mm512_store_si512(top, c.top);
        _mm512_store_si512(u, c.u);
    }
    // Load u and the clip bounds (and top, with `with_top`).
    PAU_AVX512 void fill(Lanes& c, const int64_t* top, const int64_t* u, int64_t lo, int64_t hi, bool with_top) {
        if (with_top) c.top = _mm512_load_si512(top);
        c.u = _mm512_load_si512(u);
        c.lo = _mm512_set1_epi64(lo);
        c.hi = _mm512_set1_epi64(hi);
        c.lo_s = lo;
        c.hi_s = hi;
    }
    // An event inside the clip bounds needs no clipping: its pieces lie in [st, en) or
    // are empty. Outside m the piece is empty (a = b = top there).
    template <bool Clip>
    PAU_AVX512 void add_event(Lanes& c, const Mask& m, int64_t st, int64_t en) {
        const __m512i b = _mm512_mask_max_epi64(c.top, m, c.top, _mm512_set1_epi64(en));
        const __m512i a = _mm512_mask_max_epi64(c.top, m, c.top, _mm512_set1_epi64(st));
        if (Clip && __builtin_expect(!(st >= c.lo_s && en <= c.hi_s), 0)) {
            const __m512i cb = _mm512_min_epi64(_mm512_max_epi64(b, c.lo), c.hi);
            const __m512i ca = _mm512_min_epi64(_mm512_max_epi64(a, c.lo), c.hi);
            c.u = _mm512_add_epi64(c.u, _mm512_sub_epi64(cb, ca));
        } else {
            c.u = _mm512_add_epi64(c.u, _mm512_sub_epi64(b, a));
        }
        c.top = b;
    }
    // Rows j..j+7 pass the row checks but the kind's (rank >= 0, end >= start, end -
    // start within int64, start not below the previous row's of the same rank).
    PAU_AVX512 bool rows_ok(const int32_t* rank, const int64_t* start, const int64_t* end, int64_t j) {
        const __m256i r8 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rank + j));
        const __m256i rp = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rank + j - 1));
        const __m512i s8 = _mm512_loadu_si512(start + j), sp = _mm512_loadu_si512(start + j - 1);
        const __m512i e8 = _mm512_loadu_si512(end + j);
        __mmask8 bad = _mm256_cmplt_epi32_mask(r8, _mm256_setzero_si256());
        bad |= _mm512_cmplt_epi64_mask(e8, s8);
        bad |= _mm512_cmplt_epi64_mask(_mm512_sub_epi64(e8, s8), _mm512_setzero_si512());
        bad |= _mm256_cmpeq_epi32_mask(r8, rp) & _mm512_cmplt_epi64_mask(s8, sp);
        return bad == 0;
    }
    // Rows j..j+7 are all of rank r.
    PAU_AVX512 bool one_rank(const int32_t* rank, int64_t j, int32_t r) {
        const __m256i r8 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rank + j));
        return _mm256_cmpeq_epi32_mask(r8, _mm256_set1_epi32(r)) == 0xFF;
    }
    // No end of rows j..j+7 is past the clip bound hi.
    PAU_AVX512 bool inside(const int64_t* end, int64_t j, const Lanes& c) {
        return _mm512_cmpgt_epi64_mask(_mm512_loadu_si512(end + j), c.hi) == 0;
    }
};

struct Avx2 {
    struct Lanes {
        __m256i top, u, lo, hi;      // lanes 0-3 (lo and hi: the clip bounds, broadcast)
        __m128i top2, u2, lo2, hi2;  // lanes 4-5
        int64_t lo_s, hi_s;
    };
    struct Mask {  // all ones in the lanes
        __m256i m;
        __m128i m2;
    };
    PAU_AVX2 void copy(Lanes& d, const Lanes& s) {
        d.top = s.top;
        d.u = s.u;
        d.lo = s.lo;
        d.hi = s.hi;
        d.top2 = s.top2;
        d.u2 = s.u2;
        d.lo2 = s.lo2;
        d.hi2 = s.hi2;
        d.lo_s = s.lo_s;
        d.hi_s = s.hi_s;
    }
    PAU_AVX2 void masks(Mask* mask) {
        for (int k = -1; k < kLevels; ++k) {
            alignas(32) int64_t lanes[8];
            for (int l = 0; l < 8; ++l) lanes[l] = k >= 0 && l >= k && l < kLevels ? -1 : 0;
            mask[k + 1].m = _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes));
            mask[k + 1].m2 = _mm_load_si128(reinterpret_cast<const __m128i*>(lanes + 4));
        }
    }
    // The byte table holds level + 1, the position of its mask.
    PAU_AVX2 uint8_t byte_of(const Mask*, int k) { return static_cast<uint8_t>(k + 1); }
    PAU_AVX2 const Mask& of_byte(const Mask* mask, uint64_t b) { return mask[b]; }
    PAU_AVX2 void init(Lanes& c) {
        c.top = _mm256_set1_epi64x(kMin);
        c.top2 = _mm256_castsi256_si128(c.top);
        c.u = _mm256_setzero_si256();
        c.u2 = _mm_setzero_si128();
        c.lo = c.top;
        c.lo2 = c.top2;
        c.hi = _mm256_set1_epi64x(kMax);
        c.hi2 = _mm256_castsi256_si128(c.hi);
        c.lo_s = kMin;
        c.hi_s = kMax;
    }
    PAU_AVX2 void spill(const Lanes& c, int64_t* top, int64_t* u) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(top), c.top);
        _mm_store_si128(reinterpret_cast<__m128i*>(top + 4), c.top2);
        _mm256_store_si256(reinterpret_cast<__m256i*>(u), c.u);
        _mm_store_si128(reinterpret_cast<__m128i*>(u + 4), c.u2);
    }
    PAU_AVX2 void fill(Lanes& c, const int64_t* top, const int64_t* u, int64_t lo, int64_t hi, bool with_top) {
        if (with_top) {
            c.top = _mm256_load_si256(reinterpret_cast<const __m256i*>(top));
            c.top2 = _mm_load_si128(reinterpret_cast<const __m128i*>(top + 4));
        }
        c.u = _mm256_load_si256(reinterpret_cast<const __m256i*>(u));
        c.u2 = _mm_load_si128(reinterpret_cast<const __m128i*>(u + 4));
        c.lo = _mm256_set1_epi64x(lo);
        c.hi = _mm256_set1_epi64x(hi);
        c.lo2 = _mm256_castsi256_si128(c.lo);
        c.hi2 = _mm256_castsi256_si128(c.hi);
        c.lo_s = lo;
        c.hi_s = hi;
    }
    PAU_AVX2 __m256i max4(__m256i x, __m256i y) { return _mm256_blendv_epi8(x, y, _mm256_cmpgt_epi64(y, x)); }
    PAU_AVX2 __m256i min4(__m256i x, __m256i y) { return _mm256_blendv_epi8(x, y, _mm256_cmpgt_epi64(x, y)); }
    PAU_AVX2 __m128i max2(__m128i x, __m128i y) { return _mm_blendv_epi8(x, y, _mm_cmpgt_epi64(y, x)); }
    PAU_AVX2 __m128i min2(__m128i x, __m128i y) { return _mm_blendv_epi8(x, y, _mm_cmpgt_epi64(x, y)); }
    template <bool Clip>
    PAU_AVX2 void add_event(Lanes& c, const Mask& m, int64_t st, int64_t en) {
        const __m256i e4 = _mm256_set1_epi64x(en), s4 = _mm256_set1_epi64x(st);
        const __m128i e2 = _mm256_castsi256_si128(e4), s2 = _mm256_castsi256_si128(s4);
        const __m256i b = _mm256_blendv_epi8(c.top, e4, _mm256_and_si256(_mm256_cmpgt_epi64(e4, c.top), m.m));
        const __m256i a = _mm256_blendv_epi8(c.top, s4, _mm256_and_si256(_mm256_cmpgt_epi64(s4, c.top), m.m));
        const __m128i b2 = _mm_blendv_epi8(c.top2, e2, _mm_and_si128(_mm_cmpgt_epi64(e2, c.top2), m.m2));
        const __m128i a2 = _mm_blendv_epi8(c.top2, s2, _mm_and_si128(_mm_cmpgt_epi64(s2, c.top2), m.m2));
        if (Clip && __builtin_expect(!(st >= c.lo_s && en <= c.hi_s), 0)) {
            c.u = _mm256_add_epi64(c.u, _mm256_sub_epi64(min4(max4(b, c.lo), c.hi), min4(max4(a, c.lo), c.hi)));
            c.u2 = _mm_add_epi64(c.u2, _mm_sub_epi64(min2(max2(b2, c.lo2), c.hi2), min2(max2(a2, c.lo2), c.hi2)));
        } else {
            c.u = _mm256_add_epi64(c.u, _mm256_sub_epi64(b, a));
            c.u2 = _mm_add_epi64(c.u2, _mm_sub_epi64(b2, a2));
        }
        c.top = b;
        c.top2 = b2;
    }
    // 4 bits: the sign of each 64-bit lane.
    PAU_AVX2 unsigned signs4(__m256i x) { return static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(x))); }
    PAU_AVX2 bool rows_ok(const int32_t* rank, const int64_t* start, const int64_t* end, int64_t j) {
        const __m256i r8 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rank + j));
        const __m256i rp = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rank + j - 1));
        const __m256i s0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(start + j));
        const __m256i s1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(start + j + 4));
        const __m256i p0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(start + j - 1));
        const __m256i p1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(start + j + 3));
        const __m256i e0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(end + j));
        const __m256i e1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(end + j + 4));
        unsigned bad = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(r8)));
        bad |= signs4(_mm256_cmpgt_epi64(s0, e0)) | signs4(_mm256_cmpgt_epi64(s1, e1)) << 4;
        bad |= signs4(_mm256_sub_epi64(e0, s0)) | signs4(_mm256_sub_epi64(e1, s1)) << 4;
        bad |= static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(r8, rp)))) &
               (signs4(_mm256_cmpgt_epi64(p0, s0)) | signs4(_mm256_cmpgt_epi64(p1, s1)) << 4);
        return bad == 0;
    }
    PAU_AVX2 bool one_rank(const int32_t* rank, int64_t j, int32_t r) {
        const __m256i r8 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rank + j));
        return _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(r8, _mm256_set1_epi32(r)))) == 0xFF;
    }
    PAU_AVX2 bool inside(const int64_t* end, int64_t j, const Lanes& c) {
        const __m256i e0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(end + j));
        const __m256i e1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(end + j + 4));
        return (signs4(_mm256_cmpgt_epi64(e0, c.hi)) | signs4(_mm256_cmpgt_epi64(e1, c.hi))) == 0;
    }
};

#undef PAU_AVX512
#undef PAU_AVX2

// Byte indices of 8 rows into a dictionary of at most 16 kinds: their entries of the
// 16-entry byte table `tab` from one byte shuffle, in `entries` (a byte each), instead
// of two dependent loads per row. False when an entry is 0 (an unknown kind) or an
// index is past the table: pshufb reads an index's low 4 bits (0 when its top bit is
// set), so an index of 16 to 127 is caught by its bits 4-6.
__attribute__((target("ssse3"))) inline bool byte_entries(__m128i tab, const void* idx, uint64_t& entries) {
    const __m128i idx8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(idx));
    const __m128i m8 = _mm_shuffle_epi8(tab, idx8);
    const __m128i over = _mm_and_si128(idx8, _mm_set1_epi8(0x70));
    const int zero_mask = _mm_movemask_epi8(_mm_cmpeq_epi8(m8, _mm_setzero_si128())) |
                          ~_mm_movemask_epi8(_mm_cmpeq_epi8(over, _mm_setzero_si128()));
    entries = static_cast<uint64_t>(_mm_cvtsi128_si64(m8));
    return __builtin_expect((zero_mask & 0xFF) == 0, 1);
}

}  // namespace pau::core::lanes
#endif
