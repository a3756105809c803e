// Fuzz target: the RLE / bit-packed hybrid decoder (csrc/core/parquet.hpp), as the
// dictionary indices and the definition levels of a page use it: run headers, repeated
// values and bit-packed groups of any width.
//
// Input: byte 0 the bit width (0-63: widths past 32 must be refused), bytes 1-2 the
// value count n, bytes 3-4 the dictionary's size, then the encoded values.
#include <cstdint>
#include <vector>

#include "../core/parquet.hpp"
#include "fuzz.hpp"

namespace pq = pau::parquet;
using pau::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    pau::fuzz::Input in{data, size};
    const int w = in.byte() & 63;
    const int64_t n = static_cast<int64_t>(in.number(2));
    const int64_t dict = static_cast<int64_t>(in.number(2));
    const std::vector<uint8_t> bytes(in.p, in.p + in.n);
    std::vector<int32_t> out(static_cast<size_t>(n));
    if (!pq::rle_hybrid<int32_t>(bytes.data(), bytes.data() + bytes.size(), w, out.data(), n, dict)) return 0;
    check(w <= 32, "rle: a width past 32 bits refused");
    for (int32_t v : out) check(v >= 0 && v < dict, "rle: every value below the dictionary's size");
    return 0;
}
