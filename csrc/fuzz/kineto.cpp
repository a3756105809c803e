// Fuzz target: the streaming Kineto trace parser (csrc/core/kineto.hpp), fed the input
// whole and in chunks of a size the input chooses: both must agree (the parser is
// resumable at any byte), and the columns must have a row each.
//
// Input: byte 0 the chunk size (1 + byte 0 bytes), then the trace's JSON text.
#include <cstdint>
#include <string>
#include <vector>

#include "../core/kineto.hpp"
#include "fuzz.hpp"

using pau::fuzz::check;
using pau::kineto::Parser;

namespace {

const std::vector<std::string> kDevice = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"};

struct Outcome {
    bool ok;
    std::string error;
    size_t rows, aside;
    std::vector<int64_t> ts, order;
};

Outcome parse(const char* p, size_t n, size_t chunk) {
    Parser parser(kDevice);
    bool ok = true;
    for (size_t at = 0; at < n && ok; at += chunk) ok = parser.feed(p + at, std::min(chunk, n - at));
    ok = ok && parser.finish();
    auto& r = parser.rows();
    const size_t rows = r.ts_ns.size();
    check(r.dur_ns.size() == rows && r.cat.size() == rows && r.name.size() == rows && r.device.size() == rows &&
              r.stream.size() == rows && r.correlation.size() == rows && r.bytes.size() == rows &&
              r.pid.size() == rows && r.is_device.size() == rows && r.offset.size() == rows,
          "kineto: a value per row in every column");
    const auto& strings = parser.strings();
    for (size_t i = 0; i < rows; ++i)
        check(r.cat[i] >= 0 && static_cast<size_t>(r.cat[i]) < strings.size() && r.name[i] >= 0 &&
                  static_cast<size_t>(r.name[i]) < strings.size(),
              "kineto: strings interned");
    auto& a = parser.set_aside();
    check(a.line.size() == a.offset.size() && a.reason.size() == a.offset.size(), "kineto: set-aside columns");
    parser.meta();
    return {ok, ok ? std::string() : parser.error_message(), rows, a.offset.size(), r.ts_ns, parser.device_order()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    pau::fuzz::Input in{data, size};
    const size_t chunk = 1 + in.byte();
    const std::vector<char> text(in.p, in.p + in.n);  // exactly the input: a read past it is reported
    const Outcome whole = parse(text.data(), text.size(), text.size() ? text.size() : 1);
    const Outcome pieces = parse(text.data(), text.size(), chunk);
    check(whole.ok == pieces.ok && whole.error == pieces.error, "kineto: chunked and whole parses agree on errors");
    if (whole.ok)
        check(whole.rows == pieces.rows && whole.aside == pieces.aside && whole.ts == pieces.ts &&
                  whole.order == pieces.order,
              "kineto: chunked and whole parses agree on the rows");
    return 0;
}
