// Bindings for the device-activity sweep (csrc/core/sweep.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstring>
#include <memory>
#include <vector>

#include "../core/parts.hpp"
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
    FeedResult res;
    if (dt.is(py::dtype::of<int8_t>()))
        res = feed_typed<int8_t>(sw, rank, start, end, kind_idx, kind_map, order, n);
    else if (dt.is(py::dtype::of<int16_t>()))
        res = feed_typed<int16_t>(sw, rank, start, end, kind_idx, kind_map, order, n);
    else if (dt.is(py::dtype::of<int32_t>()))
        res = feed_typed<int32_t>(sw, rank, start, end, kind_idx, kind_map, order, n);
    else if (dt.is(py::dtype::of<int64_t>()))
        res = feed_typed<int64_t>(sw, rank, start, end, kind_idx, kind_map, order, n);
    else if (dt.is(py::dtype::of<uint8_t>()))
        res = feed_typed<uint8_t>(sw, rank, start, end, kind_idx, kind_map, order, n);
    else if (dt.is(py::dtype::of<uint16_t>()))
        res = feed_typed<uint16_t>(sw, rank, start, end, kind_idx, kind_map, order, n);
    else if (dt.is(py::dtype::of<uint32_t>()))
        res = feed_typed<uint32_t>(sw, rank, start, end, kind_idx, kind_map, order, n);
    else
        throw std::invalid_argument("kind: dictionary indices must be an integer array");
    return py::make_tuple(static_cast<int>(res.code), res.row);
}

// One sweep per part of the input (row ranges at rank boundaries), run by
// pau::core::Tasks: start() hands them to worker threads and returns; wait() has
// the calling thread help, without the GIL, then returns each part's histogram or
// the first problem its feeds met. Each part's Sweep is built on the thread that
// runs it, with the windows and, of the spans, those of its rank range (part 0
// also takes the spans of ranks no part holds). The workers never touch Python:
// every array is pinned here and read through pointers taken under the GIL.
class SweepParts {
  public:
    SweepParts(const carray<int32_t>& wr, const carray<int64_t>& ws, const carray<int64_t>& we,
               const carray<int64_t>& wrow, const carray<int32_t>& sr, const carray<int64_t>& ss,
               const carray<int64_t>& se, int64_t bucket, const py::list& parts)
        : wr_(wr), ws_(ws), we_(we), wrow_(wrow), sr_(sr), ss_(ss), se_(se), bucket_(bucket) {
        pau::bindings::check_len(ws, wr.shape(0), "windows.start_ns", "windows.rank");
        pau::bindings::check_len(we, wr.shape(0), "windows.end_ns", "windows.rank");
        pau::bindings::check_len(wrow, wr.shape(0), "windows.row", "windows.rank");
        pau::bindings::check_len(ss, sr.shape(0), "span.start_ns", "span.rank");
        pau::bindings::check_len(se, sr.shape(0), "span.end_ns", "span.rank");
        parts_.resize(parts.size());
        for (size_t i = 0; i < parts_.size(); ++i) {
            const auto spec = parts[i].cast<py::tuple>();
            if (spec.size() != 3) throw std::invalid_argument("SweepParts: a part is (pieces, low rank, high rank)");
            Part& part = parts_[i];
            part.lo = spec[1].cast<int64_t>();
            part.hi = spec[2].cast<int64_t>();
            for (const auto& item : spec[0].cast<py::list>()) {
                const auto t = item.cast<py::tuple>();
                if (t.size() != 5)
                    throw std::invalid_argument("SweepParts: a piece is (rank, start, end, kind_idx, kind_map)");
                auto rank = t[0].cast<carray<int32_t>>();
                auto start = t[1].cast<carray<int64_t>>();
                auto end = t[2].cast<carray<int64_t>>();
                auto idx = t[3].cast<py::array>();
                auto map = t[4].cast<carray<int8_t>>();
                Piece pc;
                pc.n = rank.ndim() == 1 ? rank.shape(0) : -1;
                check_len(rank, pc.n, "rank");
                check_len(start, pc.n, "start_ns");
                check_len(end, pc.n, "end_ns");
                check_len(idx, pc.n, "kind");
                if (!(idx.flags() & py::array::c_style))
                    throw std::invalid_argument("kind: indices must be contiguous");
                pc.idx_type = idx_type(idx.dtype());
                pc.rank = rank.data();
                pc.start = start.data();
                pc.end = end.data();
                pc.idx = idx.data();
                pc.map = map.data();
                pc.map_size = map.shape(0);
                keep_.insert(keep_.end(), {rank, start, end, idx, map});
                part.pieces.push_back(pc);
            }
        }
    }

    void start(size_t workers) {
        if (tasks_) throw std::logic_error("SweepParts: already started");
        tasks_ = std::make_unique<pau::core::Tasks>([this](size_t i) { run(i); }, parts_.size());
        tasks_->start(workers);
    }

    // The parts' histograms joined (a dict, as Sweep.finish: ranks of one part
    // together, parts in order), or the first problem met as (code, row, part,
    // piece), the row counted in that piece.
    py::object wait() {
        if (!tasks_) start(0);
        pau::core::Histogram all;
        {
            py::gil_scoped_release release;
            tasks_->wait();
        }
        for (size_t i = 0; i < parts_.size(); ++i) {
            const Part& p = parts_[i];
            if (p.result.code != pau::core::Code::ok)
                return py::make_tuple(static_cast<int>(p.result.code), p.result.row, static_cast<int64_t>(i), p.at);
        }
        {
            py::gil_scoped_release release;
            size_t rows = 0, spans = 0;
            for (const Part& p : parts_) {
                rows += p.hist.rank.size();
                spans += p.hist.span_rank.size();
            }
            all.rank.reserve(rows);
            all.window.reserve(rows);
            all.mask.reserve(rows);
            all.duration.reserve(rows);
            all.span_rank.reserve(spans);
            all.span_start.reserve(spans);
            all.span_end.reserve(spans);
            for (Part& p : parts_) {
                append(all.rank, p.hist.rank);
                append(all.window, p.hist.window);
                append(all.mask, p.hist.mask);
                append(all.duration, p.hist.duration);
                append(all.span_rank, p.hist.span_rank);
                append(all.span_start, p.hist.span_start);
                append(all.span_end, p.hist.span_end);
                p.hist = pau::core::Histogram();
            }
        }
        py::dict d;
        d["rank"] = to_numpy(std::move(all.rank));
        d["window"] = to_numpy(std::move(all.window));
        d["mask"] = to_numpy(std::move(all.mask));
        d["duration"] = to_numpy(std::move(all.duration));
        d["span_rank"] = to_numpy(std::move(all.span_rank));
        d["span_start"] = to_numpy(std::move(all.span_start));
        d["span_end"] = to_numpy(std::move(all.span_end));
        return std::move(d);
    }

  private:
    struct Piece {
        const int32_t* rank = nullptr;
        const int64_t* start = nullptr;
        const int64_t* end = nullptr;
        const void* idx = nullptr;
        const int8_t* map = nullptr;
        int64_t map_size = 0;
        int64_t n = 0;
        int idx_type = 0;
    };
    struct Part {
        int64_t lo = 0, hi = -1;  // its ranks
        std::vector<Piece> pieces;
        FeedResult result;
        int64_t at = -1;  // the piece whose feed stopped
        pau::core::Histogram hist;
    };

    static int idx_type(const py::dtype& dt) {
        const py::dtype kinds[] = {py::dtype::of<int8_t>(),  py::dtype::of<int16_t>(),  py::dtype::of<int32_t>(),
                                   py::dtype::of<int64_t>(), py::dtype::of<uint8_t>(), py::dtype::of<uint16_t>(),
                                   py::dtype::of<uint32_t>()};
        for (int i = 0; i < 7; ++i)
            if (dt.is(kinds[i])) return i;
        throw std::invalid_argument("kind: dictionary indices must be an integer array");
    }

    template <typename T>
    static void append(std::vector<T>& to, const std::vector<T>& from) {
        to.insert(to.end(), from.begin(), from.end());
    }

    template <typename IdxT>
    static FeedResult feed_as(Sweep& sw, const Piece& p) {
        return sw.feed<IdxT>(p.rank, p.start, p.end, static_cast<const IdxT*>(p.idx), p.map, p.map_size, p.n);
    }

    bool held(int64_t rank) const {
        for (const Part& p : parts_)
            if (p.lo <= rank && rank <= p.hi) return true;
        return false;
    }

    void run(size_t i) {
        Part& part = parts_[i];
        std::vector<int32_t> sr;
        std::vector<int64_t> ss, se;
        const int64_t ns = sr_.shape(0);
        for (int64_t k = 0; k < ns; ++k) {
            const int64_t r = sr_.data()[k];
            if ((part.lo <= r && r <= part.hi) || (i == 0 && !held(r))) {
                sr.push_back(sr_.data()[k]);
                ss.push_back(ss_.data()[k]);
                se.push_back(se_.data()[k]);
            }
        }
        Sweep sw(wr_.data(), ws_.data(), we_.data(), wrow_.data(), wr_.shape(0), sr.data(), ss.data(), se.data(),
                 static_cast<int64_t>(sr.size()), bucket_);
        for (size_t j = 0; j < part.pieces.size(); ++j) {
            const Piece& p = part.pieces[j];
            FeedResult r;
            switch (p.idx_type) {
                case 0: r = feed_as<int8_t>(sw, p); break;
                case 1: r = feed_as<int16_t>(sw, p); break;
                case 2: r = feed_as<int32_t>(sw, p); break;
                case 3: r = feed_as<int64_t>(sw, p); break;
                case 4: r = feed_as<uint8_t>(sw, p); break;
                case 5: r = feed_as<uint16_t>(sw, p); break;
                default: r = feed_as<uint32_t>(sw, p); break;
            }
            if (r.code != pau::core::Code::ok) {
                part.result = r;
                part.at = static_cast<int64_t>(j);
                return;
            }
        }
        part.hist = sw.finish();
    }

    carray<int32_t> wr_;
    carray<int64_t> ws_, we_, wrow_;
    carray<int32_t> sr_;
    carray<int64_t> ss_, se_;
    int64_t bucket_;
    std::vector<Part> parts_;
    std::vector<py::object> keep_;             // the pieces' arrays
    std::unique_ptr<pau::core::Tasks> tasks_;  // last: joined before the arrays go
};

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
                 py::dict d;
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

    py::class_<SweepParts>(m, "SweepParts")
        .def(py::init<const carray<int32_t>&, const carray<int64_t>&, const carray<int64_t>&,
                      const carray<int64_t>&, const carray<int32_t>&, const carray<int64_t>&,
                      const carray<int64_t>&, int64_t, const py::list&>(),
             py::arg("win_rank"), py::arg("win_start"), py::arg("win_end"), py::arg("win_row"),
             py::arg("span_rank"), py::arg("span_start"), py::arg("span_end"), py::arg("bucket"),
             py::arg("parts"),
             "Sweeps of one plan (windows, spans, bucket as Sweep) over parts of the input: per part "
             "(pieces, low rank, high rank), each piece (rank, start, end, kind_idx, kind_map).")
        .def("start", &SweepParts::start, py::arg("workers"),
             "Start up to `workers` threads on the parts; returns at once.")
        .def("wait", &SweepParts::wait,
             "Help on this thread, join; the joined histogram or (code, row, part, piece).");

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
