// Fuzz target: the DELTA_BINARY_PACKED decoder (csrc/core/parquet.hpp) over the values
// of one page: the block header (block size, miniblocks, value count, first value), each
// block's minimum delta and bit widths, and the bit-packed miniblocks.
//
// Input: byte 0 bit 0 the width (0 int32, 1 int64), bytes 1-2 the value count n, then
// the page's values.
#include <cstdint>
#include <vector>

#include "../core/parquet.hpp"
#include "fuzz.hpp"

namespace pq = pau::parquet;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    pau::fuzz::Input in{data, size};
    const bool wide = in.byte() & 1;
    const int64_t n = static_cast<int64_t>(in.number(2));
    // The page's bytes in a buffer of their own, so that a read past them is reported.
    const std::vector<uint8_t> page(in.p, in.p + in.n);
    if (wide) {
        std::vector<int64_t> out(static_cast<size_t>(n));
        pq::delta_binary_packed<int64_t>(page.data(), page.data() + page.size(), out.data(), n);
    } else {
        std::vector<int32_t> out(static_cast<size_t>(n));
        pq::delta_binary_packed<int32_t>(page.data(), page.data() + page.size(), out.data(), n);
    }
    return 0;
}
