// Fuzz target: a Parquet column chunk through the page decoder (csrc/core/parquet.hpp),
// as pau._core.parquet_ints / parquet_dictionary call it: page headers (Thrift compact),
// checksums, SNAPPY pages, v1 definition levels and v2 level lengths, dictionary pages,
// and PLAIN, DELTA_BINARY_PACKED and RLE_DICTIONARY data pages.
//
// Input: byte 0 the call (bits 0-2: 0 int32, 1 int64, 2-4 dictionary with 8/16/32-bit
// indices; bit 3 SNAPPY; bit 4 optional; bit 5 verify checksums), bytes 1-3 the value
// count n (little-endian, its low 16 bits), then the chunk.
#include <cstdint>
#include <vector>

#include "../core/parquet.hpp"
#include "fuzz.hpp"

namespace pq = pau::parquet;
using pau::fuzz::check;

namespace {

template <typename T>
void ints(const uint8_t* p, size_t n, bool verify, int64_t count, pq::Codec codec, bool optional) {
    std::vector<T> out(static_cast<size_t>(count));
    pq::int_chunk<T>(p, n, verify, out.data(), count, codec, optional);
}

template <typename I>
void dictionary(const uint8_t* p, size_t n, bool verify, int64_t count, pq::Codec codec, bool optional) {
    std::vector<I> out(static_cast<size_t>(count));
    std::vector<int32_t> offsets;
    std::vector<uint8_t> data;
    if (!pq::dictionary_chunk<I>(p, n, verify, out.data(), count, offsets, data, codec, optional)) return;
    // What pau.io builds an Arrow array of without checking it again.
    check(!offsets.empty() && offsets.front() == 0, "dictionary: offsets start at 0");
    check(static_cast<size_t>(offsets.back()) == data.size(), "dictionary: offsets end at the data's size");
    for (size_t k = 1; k < offsets.size(); ++k) check(offsets[k - 1] <= offsets[k], "dictionary: offsets grow");
    const int64_t size = static_cast<int64_t>(offsets.size()) - 1;
    for (I v : out) check(v >= 0 && v < size, "dictionary: every index inside the dictionary");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    pau::fuzz::Input in{data, size};
    const uint8_t how = in.byte();
    const int64_t count = static_cast<int64_t>(in.number(3) & 0xffff);
    const pq::Codec codec = (how & 8) ? pq::kSnappy : pq::kUncompressed;
    const bool optional = how & 16, verify = how & 32;
    switch (how & 7) {
        case 0: ints<int32_t>(in.p, in.n, verify, count, codec, optional); break;
        case 1: ints<int64_t>(in.p, in.n, verify, count, codec, optional); break;
        case 2: dictionary<int8_t>(in.p, in.n, verify, count, codec, optional); break;
        case 3: dictionary<int16_t>(in.p, in.n, verify, count, codec, optional); break;
        default: dictionary<int32_t>(in.p, in.n, verify, count, codec, optional); break;
    }
    return 0;
}
