// Fuzz target: the snappy decompressor (csrc/core/snappy.hpp), asked for the length the
// input declares (when at most 16 MiB) and for one byte more and one byte less.
#include <cstdint>
#include <vector>

#include "../core/snappy.hpp"
#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::vector<uint8_t> in(data, data + size);  // exactly the input: a read past it is reported
    uint64_t declared = 0;
    size_t used = 0;
    if (!pau::snappy::length(in.data(), in.size(), declared, used) || declared > (1u << 24)) {
        uint8_t out[64];
        pau::snappy::decompress(in.data(), in.size(), out, sizeof out);
        return 0;
    }
    for (uint64_t n : {declared, declared + 1, declared ? declared - 1 : 0}) {
        std::vector<uint8_t> out(static_cast<size_t>(n));
        const bool ok = pau::snappy::decompress(in.data(), in.size(), out.data(), out.size());
        pau::fuzz::check(!ok || n == declared, "snappy: only the declared length decompresses");
    }
    return 0;
}
