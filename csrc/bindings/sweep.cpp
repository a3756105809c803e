// Bindings for the device-activity sweep (csrc/core/sweep.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstring>

#include "../core/sweep.hpp"
#include "common.hpp"

namespace py = pybind11;
using pau::core::FeedResult;
using pau::core::Sweep;

namespace {

using pau::bindings::carray;
using pau::bindings::to_numpy;

// Every array of a feed has the length of rank.
void check_len(const py::array& a, py::ssize_t n, const char* name) {
    pau::bindings::check_len(a, n, name, "rank");
}

template <typename IdxT>
FeedResult feed_typed(Sweep& sw, const carray<int32_t>& rank, const carray<int64_t>& start,
                      const carray<int64_t>& end, const py::array& kind_idx,
                      const carray<int8_t>& kind_map, const int64_t* order, int64_t n) {
    const auto* idx = static_cast<const IdxT*>(kind_idx.data());
    const int32_t* r = rank.data();
    const int64_t* s = start.data();
    const int64_t* e = end.data();
    const int8_t* m = kind_map.data();
    const int64_t ms = kind_map.shape(0);
    // Safe without the GIL: every buffer is owned by an array that the caller's
    // frame keeps alive, and the Sweep is not shared between threads.
    py::gil_scoped_release release;
    return sw.feed<IdxT>(r, s, e, idx, m, ms, n, order);
}

py::tuple feed(Sweep& sw, const carray<int32_t>& rank, const carray<int64_t>& start,
               const carray<int64_t>& end, const py::array& kind_idx, const carray<int8_t>& kind_map,
               const py::object& order_obj) {
    const py::ssize_t n = rank.ndim() == 1 ? rank.shape(0) : -1;
    check_len(rank, n, "rank");
    check_len(start, n, "start_ns");
    check_len(end, n, "end_ns");
    check_len(kind_idx, n, "kind");
    if (!(kind_idx.flags() & py::array::c_style))
        throw std::invalid_argument("kind: indices must be contiguous");
    const int64_t* order = nullptr;
    carray<int64_t> order_arr;
    if (!order_obj.is_none()) {
        order_arr = order_obj.cast<carray<int64_t>>();
        check_len(order_arr, n, "order");
        order = order_arr.data();
    }
    const auto dt = kind_idx.dtype();
    const py::dtype types[] = {py::dtype::of<int8_t>(),  py::dtype::of<int16_t>(),  py::dtype::of<int32_t>(),
                               py::dtype::of<int64_t>(), py::dtype::of<uint8_t>(), py::dtype::of<uint16_t>(),
                               py::dtype::of<uint32_t>()};
    int code = -1;
    for (int i = 0; i < 7 && code < 0; ++i)
        if (dt.is(types[i])) code = i;
    const FeedResult res = pau::core::with_index_type(code, [&](auto type) {
        return feed_typed<decltype(type)>(sw, rank, start, end, kind_idx, kind_map, order, n);
    });
    return py::make_tuple(static_cast<int>(res.code), res.row);
}

}  // namespace

void bind_sweep(py::module_& m) {
    py::class_<Sweep>(m, "Sweep")
        .def(py::init([](const carray<int32_t>& wr, const carray<int64_t>& ws, const carray<int64_t>& we,
                         const carray<int64_t>& wrow, const carray<int32_t>& sr, const carray<int64_t>& ss,
                         const carray<int64_t>& se, int64_t bucket) {
                 const py::ssize_t nw = wr.shape(0), ns = sr.shape(0);
                 check_len(ws, nw, "windows.start_ns");
                 check_len(we, nw, "windows.end_ns");
                 check_len(wrow, nw, "windows.row");
                 check_len(ss, ns, "span.start_ns");
                 check_len(se, ns, "span.end_ns");
                 return new Sweep(wr.data(), ws.data(), we.data(), wrow.data(), nw, sr.data(), ss.data(),
                                  se.data(), ns, bucket);
             }),
             py::arg("win_rank"), py::arg("win_start"), py::arg("win_end"), py::arg("win_row"),
             py::arg("span_rank"), py::arg("span_start"), py::arg("span_end"), py::arg("bucket") = 0)
        .def("feed", &feed, py::arg("rank"), py::arg("start"), py::arg("end"), py::arg("kind_idx"),
             py::arg("kind_map"), py::arg("order") = py::none(),
             "Feed one batch; returns (code, row), code 0 when every row was taken.")
        .def("finish",
             [](Sweep& sw) {
                 pau::core::Histogram h;
                 {
                     py::gil_scoped_release release;
                     h = sw.finish();
                 }
                 py::dict d;  // the arrays moved to numpy, not copied
                 d["rank"] = to_numpy(std::move(h.rank));
                 d["window"] = to_numpy(std::move(h.window));
                 d["mask"] = to_numpy(std::move(h.mask));
                 d["duration"] = to_numpy(std::move(h.duration));
                 d["span_rank"] = to_numpy(std::move(h.span_rank));
                 d["span_start"] = to_numpy(std::move(h.span_start));
                 d["span_end"] = to_numpy(std::move(h.span_end));
                 return d;
             })
        .def_property_readonly("rank_count", &Sweep::rank_count);

    m.def(
        "order_by_rank_start",
        [](const carray<int32_t>& rank, const carray<int64_t>& start) {
            const py::ssize_t n = rank.shape(0);
            check_len(start, n, "start_ns");
            std::vector<int64_t> order;
            {
                py::gil_scoped_release release;
                order = pau::core::order_by_rank_start(rank.data(), start.data(), n);
            }
            return to_numpy(std::move(order));
        },
        py::arg("rank"), py::arg("start"), "A permutation ordering rows by (rank, start).");
}
