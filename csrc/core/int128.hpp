// pau native core: the unsigned 128-bit arithmetic of the busy-time attribution
// (attrib.hpp): a 128-by-64-bit division, a 64-by-128-bit product, and a 128-bit value
// kept as two scalar words.
//
// This header knows nothing of Python.
#pragma once

#include <cstdint>

namespace pau::core {

using u128 = unsigned __int128;

// floor((hi * 2^64 + lo) / d) and the remainder, for hi < d (the quotient fits).
inline uint64_t div128(uint64_t hi, uint64_t lo, uint64_t d, uint64_t& rem) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    uint64_t q, r;
    __asm__("divq %[d]" : "=a"(q), "=d"(r) : [d] "r"(d), "a"(lo), "d"(hi) : "cc");
    rem = r;
    return q;
#else
    const u128 x = (static_cast<u128>(hi) << 64) | lo;
    rem = static_cast<uint64_t>(x % d);
    return static_cast<uint64_t>(x / d);
#endif
}

// w * f for w < 2^63 when the exact product is known to be < 2^128 (here < 2^127):
// the high word of f times w then fits in 64 bits.
inline u128 mul_64_128(uint64_t w, u128 f) {
    const uint64_t lo = static_cast<uint64_t>(f), hi = static_cast<uint64_t>(f >> 64);
    return static_cast<u128>(w) * lo + (static_cast<u128>(w * hi) << 64);
}

// An unsigned 128-bit value kept as two scalar words: a u128 member is copied with
// 16-byte vector moves, and loading one right after the two scalar stores of an add
// stalls on store forwarding (a quarter of the sweep's time, measured).
struct U128 {
    uint64_t lo = 0, hi = 0;
    u128 get() const { return (static_cast<u128>(hi) << 64) | lo; }
    // A copy through two general registers (a plain struct copy is vectorized).
    void copy_from(const U128& o) {
        uint64_t l = o.lo, h = o.hi;
        __asm__("" : "+r"(l), "+r"(h));
        lo = l;
        hi = h;
    }
    void set(u128 v) {
        lo = static_cast<uint64_t>(v);
        hi = static_cast<uint64_t>(v >> 64);
    }
};

}  // namespace pau::core
