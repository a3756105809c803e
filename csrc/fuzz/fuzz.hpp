// Shared by the fuzz targets (csrc/fuzz/*.cpp): a reader of the few leading bytes
// that choose a case's options, and the check that stops a run on a broken invariant.
//
// Each target is a libFuzzer entry, LLVMFuzzerTestOneInput, over the pure C++
// headers of csrc/core (no Python), built with AddressSanitizer and
// UndefinedBehaviorSanitizer by csrc/fuzz/run.sh (docs/bad-input.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace pau::fuzz {

// The input, read from the front: options first, then the bytes under test.
struct Input {
    const uint8_t* p;
    size_t n;

    // The next byte (0 past the end).
    uint8_t byte() {
        if (n == 0) return 0;
        --n;
        return *p++;
    }
    // The next `k` bytes as a little-endian number (missing bytes are 0).
    uint64_t number(int k) {
        uint64_t v = 0;
        for (int i = 0; i < k; ++i) v |= uint64_t{byte()} << (8 * i);
        return v;
    }
};

// A broken invariant is a finding, as a sanitizer's report is.
inline void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
        std::abort();
    }
}

}  // namespace pau::fuzz
