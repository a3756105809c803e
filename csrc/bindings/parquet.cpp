// Bindings of the Parquet page decoder (csrc/core/parquet.hpp), used by pau.engine.io to
// read the column chunks of pau's archive layout. Each call decodes one column
// chunk held in a buffer, with the GIL released, or returns None when the chunk is
// not one the decoder reads (pau.engine.io then reads the row group with pyarrow).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../core/parquet.hpp"
#include "common.hpp"

namespace py = pybind11;
using pau::bindings::to_numpy;
namespace pq = pau::parquet;

namespace {

// The bytes of a buffer: one dimension, contiguous.
std::pair<const uint8_t*, size_t> bytes_of(const py::buffer_info& info, const char* name) {
    if (info.ndim != 1 || (info.shape[0] > 1 && info.strides[0] != info.itemsize))
        throw std::invalid_argument(std::string(name) + ": expected a contiguous buffer");
    return {static_cast<const uint8_t*>(info.ptr), static_cast<size_t>(info.shape[0] * info.itemsize)};
}

// Where n values of T go: a writable buffer of exactly n * sizeof(T) bytes.
template <typename T>
T* out_of(const py::buffer_info& info, int64_t n) {
    const auto [p, len] = bytes_of(info, "out");
    if (info.readonly) throw std::invalid_argument("out: expected a writable buffer");
    if (n < 0 || len != static_cast<size_t>(n) * sizeof(T))
        throw std::invalid_argument("out: expected " + std::to_string(n) + " values of " +
                                    std::to_string(sizeof(T) * 8) + " bits");
    return reinterpret_cast<T*>(const_cast<uint8_t*>(p));
}

pq::Codec codec_of(int codec) {
    if (codec != pq::kUncompressed && codec != pq::kSnappy)
        throw std::invalid_argument("codec: expected 0 (uncompressed) or 1 (snappy), got " + std::to_string(codec));
    return static_cast<pq::Codec>(codec);
}

template <typename T>
bool ints(const py::buffer_info& chunk, const py::buffer_info& out, int64_t n, bool verify, pq::Codec codec,
          bool optional) {
    const auto [p, len] = bytes_of(chunk, "chunk");
    T* o = out_of<T>(out, n);
    py::gil_scoped_release release;
    return pq::int_chunk<T>(p, len, verify, o, n, codec, optional);
}

template <typename I>
py::object dictionary(const py::buffer_info& chunk, const py::buffer_info& out, int64_t n, bool verify,
                      pq::Codec codec, bool optional) {
    const auto [p, len] = bytes_of(chunk, "chunk");
    I* o = out_of<I>(out, n);
    std::vector<int32_t> offsets;
    std::vector<uint8_t> data;
    bool ok;
    {
        py::gil_scoped_release release;
        ok = pq::dictionary_chunk<I>(p, len, verify, o, n, offsets, data, codec, optional);
    }
    if (!ok) return py::none();
    return py::make_tuple(to_numpy(std::move(offsets)), to_numpy(std::move(data)));
}

}  // namespace

void bind_parquet(py::module_& m) {
    m.def(
        "parquet_ints",
        [](const py::buffer& chunk, int bits, int64_t n, bool verify, const py::buffer& out, int codec,
           bool optional) {
            const py::buffer_info c = chunk.request(), o = out.request(true);
            const pq::Codec k = codec_of(codec);
            if (bits == 32) return ints<int32_t>(c, o, n, verify, k, optional);
            if (bits == 64) return ints<int64_t>(c, o, n, verify, k, optional);
            throw std::invalid_argument("bits: expected 32 (INT32) or 64 (INT64), got " + std::to_string(bits));
        },
        py::arg("chunk"), py::arg("bits"), py::arg("n"), py::arg("verify"), py::arg("out"), py::arg("codec") = 0,
        py::arg("optional") = false,
        "Decode the n values of an INT32 or INT64 column chunk without nulls (PLAIN,\n"
        "DELTA_BINARY_PACKED or dictionary pages; codec 0 uncompressed, 1 SNAPPY; optional:\n"
        "max definition level 1, every value defined) into out;\n"
        "False when the chunk is not one read here (out is then undefined). verify: check\n"
        "each page's CRC-32 where it has one (a mismatch gives False).");
    m.def(
        "parquet_dictionary",
        [](const py::buffer& chunk, int index_bits, int64_t n, bool verify, const py::buffer& out, int codec,
           bool optional) -> py::object {
            const py::buffer_info c = chunk.request(), o = out.request(true);
            const pq::Codec k = codec_of(codec);
            if (index_bits == 8) return dictionary<int8_t>(c, o, n, verify, k, optional);
            if (index_bits == 16) return dictionary<int16_t>(c, o, n, verify, k, optional);
            if (index_bits == 32) return dictionary<int32_t>(c, o, n, verify, k, optional);
            throw std::invalid_argument("index_bits: expected 8, 16 or 32, got " + std::to_string(index_bits));
        },
        py::arg("chunk"), py::arg("index_bits"), py::arg("n"), py::arg("verify"), py::arg("out"), py::arg("codec") = 0,
        py::arg("optional") = false,
        "Decode a dictionary-encoded BYTE_ARRAY column chunk without nulls (codec 0\n"
        "uncompressed, 1 SNAPPY): its n indices into out, and (offsets, data), the\n"
        "dictionary's strings as Arrow string offsets into data; None when the chunk is not\n"
        "one read here.");
    m.def(
        "snappy_decompress",
        [](const py::buffer& data, int64_t n) -> py::object {
            const py::buffer_info info = data.request();
            const auto [p, len] = bytes_of(info, "data");
            if (n < 0) throw std::invalid_argument("n: expected a size >= 0");
            std::vector<uint8_t> out(static_cast<size_t>(n));
            bool ok;
            {
                py::gil_scoped_release release;
                ok = pau::snappy::decompress(p, len, out.data(), out.size());
            }
            if (!ok) return py::none();
            return py::bytes(reinterpret_cast<const char*>(out.data()), out.size());
        },
        py::arg("data"), py::arg("n"),
        "Raw snappy data decompressed to exactly n bytes (the page decoder's own\n"
        "decompressor), or None when it does not decompress to n bytes.");
    m.def(
        "crc32",
        [](const py::buffer& data) {
            const py::buffer_info info = data.request();
            const auto [p, len] = bytes_of(info, "data");
            return pq::crc32(p, len);
        },
        py::arg("data"), "CRC-32 of the bytes (zlib's), as a Parquet page checksum.");
}
