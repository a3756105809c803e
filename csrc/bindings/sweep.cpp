// Bindings for the device-activity sweep (csrc/core/sweep.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "../core/exclusive.hpp"
#include "../core/split.hpp"
#include "../core/sweep.hpp"
#include "common.hpp"

namespace py = pybind11;
using pau::core::FeedResult;
using pau::core::Sweep;

namespace {

using pau::bindings::carray;
using pau::bindings::to_numpy;

// The arrow::index_type code of an array of dictionary indices (-1: none of them).
int index_code(const py::array& idx) {
    const auto dt = idx.dtype();
    const py::dtype types[] = {py::dtype::of<int8_t>(),  py::dtype::of<int16_t>(),  py::dtype::of<int32_t>(),
                               py::dtype::of<int64_t>(), py::dtype::of<uint8_t>(), py::dtype::of<uint16_t>(),
                               py::dtype::of<uint32_t>()};
    for (int i = 0; i < 7; ++i)
        if (dt.is(types[i])) return i;
    return -1;
}

// Every array of a feed has the length of rank.
void check_len(const py::array& a, py::ssize_t n, const char* name) {
    pau::bindings::check_len(a, n, name, "rank");
}

template <typename IdxT, typename SweepT>
FeedResult feed_typed(SweepT& sw, const carray<int32_t>& rank, const carray<int64_t>& start,
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
    return sw.template feed<IdxT>(r, s, e, idx, m, ms, n, order);
}

py::dict hist_dict(pau::core::Histogram&& h) {
    py::dict d;  // the arrays moved to numpy, not copied
    d["rank"] = to_numpy(std::move(h.rank));
    d["window"] = to_numpy(std::move(h.window));
    d["mask"] = to_numpy(std::move(h.mask));
    d["duration"] = to_numpy(std::move(h.duration));
    d["span_rank"] = to_numpy(std::move(h.span_rank));
    d["span_start"] = to_numpy(std::move(h.span_start));
    d["span_end"] = to_numpy(std::move(h.span_end));
    return d;
}

// The arrays of one batch of events, held while the core reads them.
struct BatchArrays {
    carray<int32_t> rank;
    carray<int64_t> start, end;
    py::array kind;
    carray<int8_t> kind_map;
};

// Batches of (rank, start, end, kind indices, kind map) arrays, held in `held`
// and read in place by `ev`.
void read_batches(const py::list& batches, std::vector<BatchArrays>& held, std::vector<pau::core::EventBatch>& ev) {
    for (const auto& item : batches) {
        const auto t = item.cast<py::tuple>();
        if (t.size() != 5) throw std::invalid_argument("batches: expected (rank, start, end, kind, kind_map)");
        BatchArrays a{t[0].cast<carray<int32_t>>(), t[1].cast<carray<int64_t>>(), t[2].cast<carray<int64_t>>(),
                      t[3].cast<py::array>(), t[4].cast<carray<int8_t>>()};
        const py::ssize_t n = a.rank.ndim() == 1 ? a.rank.shape(0) : -1;
        check_len(a.rank, n, "rank");
        check_len(a.start, n, "start_ns");
        check_len(a.end, n, "end_ns");
        check_len(a.kind, n, "kind");
        const int code = index_code(a.kind);
        if (code < 0 || !(a.kind.flags() & py::array::c_style))
            throw std::invalid_argument("kind: indices must be a contiguous array of integers");
        ev.push_back(pau::core::EventBatch::of(a.rank.data(), a.start.data(), a.end.data(), a.kind.data(), code,
                                               a.kind_map.data(), a.kind_map.shape(0), n));
        held.push_back(std::move(a));
    }
}

// The permutation the one batch is read through, or nullptr (`order_obj` None); `held`
// keeps the array alive.
const int64_t* batch_order(const py::object& order_obj, const std::vector<pau::core::EventBatch>& ev,
                           carray<int64_t>& held) {
    if (order_obj.is_none()) return nullptr;
    if (ev.size() != 1) throw std::invalid_argument("order: applies to one batch");
    held = order_obj.cast<carray<int64_t>>();
    check_len(held, ev[0].rows, "order");
    return held.data();
}

// sweep_split over batches of (rank, start, end, kind indices, kind map) arrays: the
// histogram as a dict; a FeedError names the first problem a feed met.
py::dict sweep_batches(const carray<int32_t>& wr, const carray<int64_t>& ws, const carray<int64_t>& we,
                         const carray<int64_t>& wrow, const carray<int32_t>& sr, const carray<int64_t>& ss,
                         const carray<int64_t>& se, int64_t bucket, const py::list& batches, int64_t parts,
                         const py::object& order_obj, int64_t max_buckets) {
    const py::ssize_t nw = wr.shape(0), ns = sr.shape(0);
    pau::bindings::check_len(ws, nw, "windows.start_ns", "windows.rank");
    pau::bindings::check_len(we, nw, "windows.end_ns", "windows.rank");
    pau::bindings::check_len(wrow, nw, "windows.row", "windows.rank");
    pau::bindings::check_len(ss, ns, "span.start_ns", "span.rank");
    pau::bindings::check_len(se, ns, "span.end_ns", "span.rank");
    std::vector<BatchArrays> held;
    std::vector<pau::core::EventBatch> ev;
    read_batches(batches, held, ev);
    carray<int64_t> order_arr;
    const int64_t* order = batch_order(order_obj, ev, order_arr);
    pau::core::SweepPlan plan{wr.data(), ws.data(), we.data(), wrow.data(), nw,
                              sr.data(), ss.data(), se.data(), ns,        bucket, max_buckets};
    pau::core::SplitResult r;
    {
        // The arrays are held by `held` and the caller's frame; the core only reads them.
        py::gil_scoped_release release;
        r = pau::core::sweep_split(plan, ev, parts, order);
    }
    if (!r.ok) throw pau::bindings::FeedError(static_cast<int>(r.code), r.row, r.batch);
    return hist_dict(std::move(r.hist));
}

// exclusive_split over batches as sweep_batches takes them, without windows: the
// histogram of winning kinds (one bit per mask, 0 for idle) as a dict; a FeedError
// names the first problem a feed met.
py::dict exclusive_batches(const carray<int32_t>& sr, const carray<int64_t>& ss, const carray<int64_t>& se,
                             const carray<int8_t>& levels, const py::list& batches, int64_t parts,
                             const py::object& order_obj, int kernel) {
    const py::ssize_t ns = sr.shape(0);
    pau::bindings::check_len(ss, ns, "span.start_ns", "span.rank");
    pau::bindings::check_len(se, ns, "span.end_ns", "span.rank");
    if (levels.ndim() != 1 || levels.shape(0) != pau::core::kNumKinds)
        throw std::invalid_argument("levels: expected the priority level of each of the 6 kinds");
    if (kernel < 0 || kernel > 3) throw std::invalid_argument("kernel: 0 (best), 1 (scalar), 2 (AVX-512) or 3 (AVX2)");
    std::vector<BatchArrays> held;
    std::vector<pau::core::EventBatch> ev;
    read_batches(batches, held, ev);
    carray<int64_t> order_arr;
    const int64_t* order = batch_order(order_obj, ev, order_arr);
    pau::core::SweepPlan plan{nullptr, nullptr, nullptr, nullptr, 0, sr.data(), ss.data(), se.data(), ns, 0, 0};
    pau::core::SplitResult r;
    {
        py::gil_scoped_release release;
        r = pau::core::exclusive_split(plan, levels.data(), static_cast<pau::core::LeanKernel>(kernel), ev, parts,
                                       order);
    }
    if (!r.ok) throw pau::bindings::FeedError(static_cast<int>(r.code), r.row, r.batch);
    return hist_dict(std::move(r.hist));
}

// One feed of either sweep (Sweep or ExclusiveSweep: the same feed API): the
// arrays checked, the GIL released while the core reads them.
template <typename SweepT>
py::tuple feed_any(SweepT& sw, const carray<int32_t>& rank, const carray<int64_t>& start,
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
    const int code = index_code(kind_idx);
    const FeedResult res = pau::core::with_index_type(code, [&](auto type) {
        return feed_typed<decltype(type), SweepT>(sw, rank, start, end, kind_idx, kind_map, order, n);
    });
    return py::make_tuple(static_cast<int>(res.code), res.row);
}

py::tuple feed(Sweep& sw, const carray<int32_t>& rank, const carray<int64_t>& start, const carray<int64_t>& end,
               const py::array& kind_idx, const carray<int8_t>& kind_map, const py::object& order_obj) {
    return feed_any(sw, rank, start, end, kind_idx, kind_map, order_obj);
}

py::tuple feed_exclusive(pau::core::ExclusiveSweep& sw, const carray<int32_t>& rank, const carray<int64_t>& start,
                         const carray<int64_t>& end, const py::array& kind_idx, const carray<int8_t>& kind_map,
                         const py::object& order_obj) {
    return feed_any(sw, rank, start, end, kind_idx, kind_map, order_obj);
}

}  // namespace

// The sweeps' entry points for the other translation units (core/sweep_api.hpp):
// compiled here, with the sweeps this file binds, so that each sweep's code is
// compiled once.
namespace pau::core {

void check_levels(const int8_t* levels, LeanKernel kernel) {
    ExclusiveSweep(nullptr, nullptr, nullptr, 0, levels, kernel);  // its constructor checks both
}

namespace {

// Feed the rows of `pieces` to `sw` (either sweep: the same feed): false at the first problem.
template <typename SweepT>
bool feed_part(SweepT& sw, const std::vector<EventBatch>& ev, const std::vector<RankPart::Piece>& pieces) {
    for (const RankPart::Piece& p : pieces) {
        const EventBatch& b = ev[p.batch];
        const FeedResult r = with_index_type(b.kind_type, [&](auto type) {
            using IdxT = decltype(type);
            return sw.template feed<IdxT>(b.rank + p.lo, b.start + p.lo, b.end + p.lo,
                                          static_cast<const IdxT*>(b.kind) + p.lo, b.kind_map.data(),
                                          static_cast<int64_t>(b.kind_map.size()), p.hi - p.lo);
        });
        if (r.code != Code::ok) return false;
    }
    return true;
}

void open_lead(Sweep& sw, int32_t rank, const int64_t* ends, int64_t last_start) {
    sw.open_kinds(rank, ends, last_start);
}
void open_lead(ExclusiveSweep& sw, int32_t rank, const int64_t* ends, int64_t last_start) {
    sw.open_levels(rank, ends, last_start);
}
int64_t reach(Sweep& sw, int32_t rank) { return sw.latest_open_end(rank); }
int64_t reach(ExclusiveSweep& sw, int32_t rank) { return sw.latest_end(rank); }

// The lead opened, the part's rows fed, and (a span of both ends given) the check
// that none reaches past hi and the next chunk's head: the histogram, or false.
template <typename SweepT>
bool sweep_part(SweepT& sw, const RankPartSweep& job, bool fixed, int64_t hi, Histogram& out) {
    const RankPart& part = *job.part;
    const int32_t rank = part.lo;
    if (!part.lead.empty()) {
        int64_t ends[kNumKinds], last_start = 0;
        lead_ends(*job.events, part.lead, ends, last_start);
        open_lead(sw, rank, ends, last_start);
    }
    if (!feed_part(sw, *job.events, part.pieces)) return false;
    if (fixed) {
        if (reach(sw, rank) > hi) return false;  // the next chunk would miss it
        if (!feed_part(sw, *job.events, part.head)) return false;
    }
    out = sw.finish();
    return true;
}

}  // namespace

bool sweep_rank_part(const RankPartSweep& job, Histogram& out) {
    const RankPart& part = *job.part;
    const std::vector<EventBatch>& ev = *job.events;
    auto start_of = [&](const RankPart::Row& r) { return ev[r.batch].start[r.row]; };
    const int32_t rank = part.lo;
    const bool fixed = part.chunk && !part.last;  // a span of both ends given
    const int64_t lo = part.chunk ? start_of(part.from) : 0;
    const int64_t hi = fixed ? start_of(part.to) : job.levels ? std::numeric_limits<int64_t>::max() : 0;
    if (fixed && hi < lo) return false;  // starts decrease: the exact way names the row
    if (job.levels) {
        ExclusiveSweep sw(&rank, &lo, &hi, part.chunk ? 1 : 0, job.levels, job.kernel, job.cuts, job.n_cuts);
        return sweep_part(sw, job, fixed, hi, out);
    }
    const int64_t w = std::max<int64_t>(0, job.n_cuts - 1);
    Sweep sw(job.win_rank, job.cuts, job.cuts + 1, job.win_row, w, &rank, &lo, &hi, fixed ? 1 : 0);
    if (part.chunk && part.last) sw.start_at(rank, lo);
    return sweep_part(sw, job, fixed, hi, out);
}

}  // namespace pau::core

void bind_sweep(py::module_& m) {
    py::class_<Sweep>(m, "Sweep")
        .def(py::init([](const carray<int32_t>& wr, const carray<int64_t>& ws, const carray<int64_t>& we,
                         const carray<int64_t>& wrow, const carray<int32_t>& sr, const carray<int64_t>& ss,
                         const carray<int64_t>& se, int64_t bucket, int64_t max_buckets) {
                 const py::ssize_t nw = wr.shape(0), ns = sr.shape(0);
                 check_len(ws, nw, "windows.start_ns");
                 check_len(we, nw, "windows.end_ns");
                 check_len(wrow, nw, "windows.row");
                 check_len(ss, ns, "span.start_ns");
                 check_len(se, ns, "span.end_ns");
                 auto* sw = new Sweep(wr.data(), ws.data(), we.data(), wrow.data(), nw, sr.data(), ss.data(),
                                      se.data(), ns, bucket);
                 sw->set_max_buckets(max_buckets);
                 return sw;
             }),
             py::arg("win_rank"), py::arg("win_start"), py::arg("win_end"), py::arg("win_row"),
             py::arg("span_rank"), py::arg("span_start"), py::arg("span_end"), py::kw_only(), py::arg("bucket") = 0,
             py::arg("max_buckets") = 0)
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
                 return hist_dict(std::move(h));
             })
        .def_property_readonly("rank_count", &Sweep::rank_count);

    // The exclusive-time sweep fed batch by batch (streamed input without windows).
    py::class_<pau::core::ExclusiveSweep>(m, "ExclusiveSweep")
        .def(py::init([](const carray<int32_t>& sr, const carray<int64_t>& ss, const carray<int64_t>& se,
                         const carray<int8_t>& levels, int kernel) {
                 const py::ssize_t ns = sr.shape(0);
                 check_len(ss, ns, "span.start_ns");
                 check_len(se, ns, "span.end_ns");
                 if (levels.ndim() != 1 || levels.shape(0) != pau::core::kNumKinds)
                     throw std::invalid_argument("levels: expected the priority level of each of the 6 kinds");
                 if (kernel < 0 || kernel > 3)
                     throw std::invalid_argument("kernel: 0 (best), 1 (scalar), 2 (AVX-512) or 3 (AVX2)");
                 return new pau::core::ExclusiveSweep(sr.data(), ss.data(), se.data(), ns, levels.data(),
                                                      static_cast<pau::core::LeanKernel>(kernel));
             }),
             py::arg("span_rank"), py::arg("span_start"), py::arg("span_end"), py::arg("levels"),
             py::arg("kernel") = 0)
        .def("feed", &feed_exclusive, py::arg("rank"), py::arg("start"), py::arg("end"), py::arg("kind_idx"),
             py::arg("kind_map"), py::arg("order") = py::none(),
             "Feed one batch (within a rank, starts must not decrease across feeds); returns (code, row), code 0 "
             "when every row was taken.")
        .def("finish",
             [](pau::core::ExclusiveSweep& sw) {
                 pau::core::Histogram h;
                 {
                     py::gil_scoped_release release;
                     h = sw.finish();
                 }
                 return hist_dict(std::move(h));
             })
        .def_property_readonly("simd", &pau::core::ExclusiveSweep::simd);

    m.def("sweep_batches", &sweep_batches, py::arg("win_rank"), py::arg("win_start"), py::arg("win_end"),
          py::arg("win_row"), py::arg("span_rank"), py::arg("span_start"), py::arg("span_end"), py::kw_only(),
          py::arg("bucket"), py::arg("batches"), py::arg("parts"), py::arg("order") = py::none(),
          py::arg("max_buckets") = 0,
          "Sweep in-memory batches of (rank, start, end, kind indices, kind map) on up to `parts` threads of "
          "the native pool: the histogram; FeedError (code, row, batch) names the first problem met.");

    m.def("exclusive_batches", &exclusive_batches, py::arg("span_rank"), py::arg("span_start"), py::arg("span_end"),
          py::arg("levels"), py::kw_only(), py::arg("batches"), py::arg("parts"), py::arg("order") = py::none(),
          py::arg("kernel") = 0,
          "Exclusive time by nested priority unions (csrc/core/exclusive.hpp) over in-memory batches, no windows: "
          "a histogram whose masks are the winning kind's bit (0: idle); FeedError (code, row, batch) names the "
          "first problem met. levels[c]: the priority level of kind code c (0 highest).");
    m.def("avx512_available", &pau::core::avx512_available,
          "Whether this CPU runs the AVX-512 kernel of exclusive_batches.");
    m.def("avx2_available", &pau::core::avx2_available,
          "Whether this CPU runs the AVX2 kernel of exclusive_batches.");

    m.def(
        "rank_parts",
        [](const py::list& batches, int64_t parts) {
            std::vector<BatchArrays> held;
            std::vector<pau::core::EventBatch> ev;
            read_batches(batches, held, ev);
            py::list out;
            for (const auto& p : pau::core::rank_parts(ev, parts)) out.append(py::make_tuple(p.lo, p.hi));
            return out;
        },
        py::arg("batches"), py::arg("parts"),
        "The rank ranges (lo, hi) of the parts sweep_batches would split these batches into (empty: one "
        "thread, as when a sample shows the ranks unsorted).");

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
