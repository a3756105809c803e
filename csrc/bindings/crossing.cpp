// Bindings for the full ledger's early sweep (csrc/core/crossing.hpp, pau.engine._crossing).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../core/crossing.hpp"
#include "../core/parts.hpp"
#include "../core/sweep_api.hpp"
#include "common.hpp"
#include "exported.hpp"

namespace py = pybind11;
using namespace pau::core;

namespace {

using pau::bindings::carray;
using pau::bindings::check_len;
using pau::bindings::Exported;
using pau::bindings::to_numpy;

// States and activities travel as int8 codes.
void check_codes(int64_t n_states, int64_t n_act) {
    if (n_states < 1 || n_states > 127 || n_act < 1 || n_act > 127)
        throw std::invalid_argument("n_states and n_act: expected 1 to 127 (int8 codes)");
}

// The ledger's tidy rows (CellCrossing::tidy), bound as pau._core.Cells: numpy arrays
// that own the core's vectors (no copy).
struct Cells {
    py::array rank, state, activity, duration;
};

Cells tidy_cells(CellCrossing::Tidy&& t) {
    return {to_numpy(std::move(t.rank)), to_numpy(std::move(t.state)), to_numpy(std::move(t.activity)),
            to_numpy(std::move(t.duration))};
}

// state_runs' result, bound as pau._core.StateRuns.
struct Runs {
    py::array rank, start, end, state;
};

std::vector<LifeBatch> read_lifecycle(const Exported& life, bool& ok) {
    std::vector<LifeBatch> out(life.batches.size());
    ok = true;
    for (size_t i = 0; i < out.size(); ++i) ok = ok && out[i].read(life.batches[i]);
    return out;
}

// Sweeps the events over the cuts of a lifecycle, one part per task (a range of
// ranks, or a chunk of one rank's events): the first task to run computes the
// cuts (and whether there are few enough to be worth it), every task then sweeps
// its part. The caller starts helpers, does its own work (the attribution), then
// waits with the state intervals; the result is None whenever the exact way must
// run instead (a layout not read here, too many cuts, a problem in a feed, ranks
// not sorted after all, cuts that do not resolve the states), else the ledger's
// cells (CellCrossing). With `levels` (the priority level of each kind code), each
// part is swept for exclusive time by nested priority unions over the cuts
// (ExclusiveSweep with windows, exclusive.hpp), else by the full 64-mask sweep; the
// cells are the same.
class CrossingSweep {
  public:
    CrossingSweep(const py::list& events, const std::vector<std::string>& kinds, const py::list& lifecycle,
                  int64_t as_of, int64_t parts, int64_t chunk_rows, int64_t min_chunk_rows, int64_t threads,
                  int64_t head_rows, double max_crossings_per_event, const py::object& levels, int kernel)
        : events_(events), life_(lifecycle), as_of_(as_of), max_crossings_(max_crossings_per_event) {
        if (!levels.is_none()) {
            const carray<int8_t> lv = levels.cast<carray<int8_t>>();
            if (lv.ndim() != 1 || lv.shape(0) != kNumKinds)
                throw std::invalid_argument("levels: expected the priority level of each of the 6 kinds");
            std::copy(lv.data(), lv.data() + kNumKinds, levels_);
            lean_ = true;
        }
        if (kernel < 0 || kernel > 3) throw std::invalid_argument("kernel: 0 (best), 1 (scalar), 2 (AVX-512) or 3 (AVX2)");
        kernel_ = static_cast<LeanKernel>(kernel);
        if (lean_) check_levels(levels_, kernel_);
        bool ok = true;
        for (const auto& b : events_.batches) {
            ev_.emplace_back();
            ok = ok && ev_.back().read(b, kinds);
        }
        lc_ = read_lifecycle(life_, ok_life_);
        if (ok && ok_life_) parts_ = chunked(rank_parts(ev_, parts), chunk_rows, min_chunk_rows, threads, head_rows);
        results_.resize(parts_.size());
        for (const EventBatch& b : ev_) rows_ += b.rows;
    }

    void start(size_t helpers) {
        if (tasks_) throw std::logic_error("CrossingSweep: already started");
        tasks_ = std::make_unique<Tasks>([this](size_t i) { run(i); }, parts_.size());
        tasks_->start(helpers);
    }

    // Help sweep, then cross the histograms with the state intervals (sorted by
    // rank and start; their ranks among the sorted accountable `ranks`) into the
    // ledger's cells (CellCrossing), or None when the exact way must run instead.
    // The intervals are merged into runs before this thread helps, while the
    // helpers still sweep.
    py::object wait(const carray<int32_t>& ranks, const carray<int32_t>& i_rank, const carray<int64_t>& i_start,
                    const carray<int64_t>& i_end, const carray<int8_t>& i_state, const carray<int8_t>& act_of_mask,
                    int64_t idle, int64_t n_states, int64_t n_act) {
        if (waited_) throw std::logic_error("CrossingSweep: already waited for");
        const py::ssize_t n = i_rank.size();
        check_len(i_start, n, "i_start", "i_rank");
        check_len(i_end, n, "i_end", "i_rank");
        check_len(i_state, n, "i_state", "i_rank");
        check_len(act_of_mask, kNumMasks, "act_of_mask", "the 64 masks");
        waited_ = true;
        if (!tasks_) start(0);
        check_codes(n_states, n_act);
        bool ok = !parts_.empty();
        CellCrossing::Tidy cells;
        {
            py::gil_scoped_release release;
            if (ok) std::call_once(once_, [this] { windows(); });  // no parts: the tables were not read
            const int64_t n_windows = std::max<int64_t>(0, static_cast<int64_t>(cuts_.size()) - 1);
            CellCrossing cross(ranks.data(), ranks.size(), cuts_.data(), cuts_.data() + (n_windows > 0),
                               n_windows, act_of_mask.data(), idle, n_states, n_act);
            ok = ok && !declined_ && cross.set_runs(i_rank.data(), i_start.data(), i_end.data(), i_state.data(), n);
            tasks_->wait();
            ok = ok && !declined_;
            for (const Result& r : results_) ok = ok && r.fed;
            ok = ok && ranks_apart();
            for (const Result& r : results_) {
                const Histogram& h = r.hist;
                ok = ok && cross.add(h.rank.data(), h.window.data(), h.mask.data(), h.duration.data(),
                                     static_cast<int64_t>(h.rank.size()));
            }
            if (ok) cells = cross.tidy();
        }
        if (!ok) return py::none();
        return py::cast(tidy_cells(std::move(cells)));
    }

    int64_t parts() const { return static_cast<int64_t>(parts_.size()); }

  private:
    struct Result {
        bool fed = false;  // every piece taken
        Histogram hist;
    };

    // The cuts and their windows, once, by the first task to run.
    void windows() {
        cuts_ = cut_times(lc_, as_of_);
        const int64_t w = static_cast<int64_t>(cuts_.size()) - 1;
        int64_t ranks = 0;
        for (const RankPart& p : parts_)
            if (p.last) ranks += int64_t{p.hi} - p.lo + 1;  // at most (a chunked rank once)
        if (w < 1 || static_cast<double>(w) * static_cast<double>(ranks) >
                         max_crossings_ * static_cast<double>(rows_)) {
            declined_ = true;
            return;
        }
        wrank_.assign(static_cast<size_t>(w), -1);
        wrow_.resize(static_cast<size_t>(w));
        for (int64_t i = 0; i < w; ++i) wrow_[static_cast<size_t>(i)] = i;
    }

    // One part (sweep_rank_part, compiled with the sweeps in bindings/sweep.cpp): the
    // full sweep over the cuts or, with levels, the exclusive-time one.
    void run(size_t i) {
        std::call_once(once_, [this] { windows(); });
        if (declined_) return;
        RankPartSweep job;
        job.events = &ev_;
        job.part = &parts_[i];
        job.cuts = cuts_.data();
        job.n_cuts = static_cast<int64_t>(cuts_.size());
        job.win_rank = wrank_.data();
        job.win_row = wrow_.data();
        job.levels = lean_ ? levels_ : nullptr;
        job.kernel = kernel_;
        results_[i].fed = sweep_rank_part(job, results_[i].hist);
    }

    // False when a part holds a rank outside its range or a rank is in two parts
    // but for chunks of one (the rank column was not sorted after all).
    bool ranks_apart() const {
        std::vector<std::pair<int32_t, int64_t>> seen;  // (rank, part; the chunks of a rank: -1 - rank)
        for (size_t i = 0; i < results_.size(); ++i) {
            const RankPart& p = parts_[i];
            for (int32_t r : results_[i].hist.span_rank) {
                if (r < p.lo || r > p.hi) return false;
                seen.emplace_back(r, p.chunk ? -1 - int64_t{r} : static_cast<int64_t>(i));
            }
        }
        std::sort(seen.begin(), seen.end());
        for (size_t k = 1; k < seen.size(); ++k)
            if (seen[k].first == seen[k - 1].first && seen[k].second != seen[k - 1].second) return false;
        return true;
    }

    Exported events_, life_;
    std::vector<EventBatch> ev_;
    std::vector<LifeBatch> lc_;
    bool ok_life_ = false;
    int64_t as_of_;
    double max_crossings_;
    int64_t rows_ = 0;
    std::vector<RankPart> parts_;
    std::vector<Result> results_;
    std::once_flag once_;
    std::vector<int64_t> cuts_, wrow_;
    std::vector<int32_t> wrank_;
    bool declined_ = false;
    bool waited_ = false;
    bool lean_ = false;
    int8_t levels_[kNumKinds] = {0};
    LeanKernel kernel_ = LeanKernel::best;
    std::unique_ptr<Tasks> tasks_;  // last: joined before what its tasks read goes
};

}  // namespace

void bind_crossing(py::module_& m) {
    py::class_<Cells>(m, "Cells", "The ledger's non-zero cells in (rank, state, activity) order.")
        .def_readonly("rank", &Cells::rank)
        .def_readonly("state", &Cells::state)
        .def_readonly("activity", &Cells::activity)
        .def_readonly("duration", &Cells::duration);
    py::class_<Runs>(m, "StateRuns", "Runs of state intervals (state_runs).")
        .def_readonly("rank", &Runs::rank)
        .def_readonly("start", &Runs::start)
        .def_readonly("end", &Runs::end)
        .def_readonly("state", &Runs::state);
    m.def(
        "set_pool_cores", [](unsigned cores) { return Workers::set_cores(cores); }, py::arg("cores"),
        "Size the native helper pool for this many cores (before its first use): True when applied.");

    py::class_<CrossingSweep>(m, "CrossingSweep")
        .def(py::init<const py::list&, const std::vector<std::string>&, const py::list&, int64_t, int64_t, int64_t,
                      int64_t, int64_t, int64_t, double, const py::object&, int>(),
             py::arg("events"), py::arg("kinds"), py::arg("lifecycle"), py::kw_only(), py::arg("as_of"), py::arg("parts"),
             py::arg("chunk_rows"), py::arg("min_chunk_rows"), py::arg("threads"), py::arg("head_rows"),
             py::arg("max_crossings_per_event"), py::arg("levels") = py::none(), py::arg("kernel") = 0,
             "Events and lifecycle as lists of exported batches (__arrow_c_array__); as_of -2**63 (the least int64) for none.")
        .def("start", &CrossingSweep::start, py::arg("helpers"), "Ask helper threads to start; returns at once.")
        .def("wait", &CrossingSweep::wait, py::arg("ranks"), py::arg("i_rank"), py::arg("i_start"),
             py::arg("i_end"), py::arg("i_state"), py::kw_only(), py::arg("act_of_mask"), py::arg("idle"),
             py::arg("n_states"), py::arg("n_act"),
             "Help, then the ledger's cells from the state intervals, or None when the exact way must run "
             "instead.")
        .def_property_readonly("parts", &CrossingSweep::parts);

    m.def(
        "crossed_cells",
        [](const carray<int32_t>& h_rank, const carray<int64_t>& h_window, const carray<uint8_t>& h_mask,
           const carray<int64_t>& h_duration, const carray<int64_t>& w_start, const carray<int64_t>& w_end,
           const carray<int32_t>& ranks, const carray<int32_t>& i_rank, const carray<int64_t>& i_start,
           const carray<int64_t>& i_end, const carray<int8_t>& i_state, const carray<int8_t>& act_of_mask,
           int64_t idle, int64_t n_states, int64_t n_act) {
            const py::ssize_t nh = h_rank.size(), n = i_rank.size();
            check_len(h_window, nh, "h_window", "h_rank");
            check_len(h_mask, nh, "h_mask", "h_rank");
            check_len(h_duration, nh, "h_duration", "h_rank");
            check_len(w_end, w_start.size(), "w_end", "w_start");
            check_len(i_start, n, "i_start", "i_rank");
            check_len(i_end, n, "i_end", "i_rank");
            check_len(i_state, n, "i_state", "i_rank");
            check_len(act_of_mask, kNumMasks, "act_of_mask", "the 64 masks");
            check_codes(n_states, n_act);
            bool ok = false;
            CellCrossing::Tidy cells;
            {
                py::gil_scoped_release release;
                CellCrossing cross(ranks.data(), ranks.size(), w_start.data(), w_end.data(), w_start.size(),
                                   act_of_mask.data(), idle, n_states, n_act);
                ok = cross.set_runs(i_rank.data(), i_start.data(), i_end.data(), i_state.data(), n) &&
                     cross.add(h_rank.data(), h_window.data(), h_mask.data(), h_duration.data(), nh);
                if (ok) cells = cross.tidy();
            }
            return py::make_tuple(ok, tidy_cells(std::move(cells)));
        },
        py::arg("h_rank"), py::arg("h_window"), py::arg("h_mask"), py::arg("h_duration"), py::kw_only(),
        py::arg("w_start"), py::arg("w_end"), py::arg("ranks"), py::arg("i_rank"), py::arg("i_start"), py::arg("i_end"),
        py::arg("i_state"), py::arg("act_of_mask"), py::arg("idle"), py::arg("n_states"), py::arg("n_act"),
        "The ledger's cells from a histogram over windows [w_start, w_end) (the cuts, or the state runs) "
        "and the state intervals (CellCrossing): (ok, cells); ok is False when the windows do not resolve "
        "the states.");

    m.def(
        "state_runs",
        [](const carray<int32_t>& rank, const carray<int64_t>& start, const carray<int64_t>& end,
           const carray<int8_t>& state) {
            const py::ssize_t n = rank.size();
            check_len(start, n, "start", "rank");
            check_len(end, n, "end", "rank");
            check_len(state, n, "state", "rank");
            StateRuns r;
            {
                py::gil_scoped_release release;
                r = state_runs(rank.data(), start.data(), end.data(), state.data(), n);
            }
            return Runs{to_numpy(std::move(r.rank)), to_numpy(std::move(r.start)), to_numpy(std::move(r.end)),
                        to_numpy(std::move(r.state))};
        },
        py::arg("rank"), py::arg("start"), py::arg("end"), py::arg("state"),
        "The runs of state intervals sorted by rank and start (intervals of one rank and one state that "
        "touch become one): (rank, start, end, state).");

    m.def(
        "lifecycle_cuts",
        [](const py::list& lifecycle, int64_t as_of) -> py::object {
            Exported life(lifecycle);
            bool ok = false;
            const auto batches = read_lifecycle(life, ok);
            if (!ok) return py::none();
            return to_numpy(cut_times(batches, as_of));
        },
        py::arg("lifecycle"), py::arg("as_of"),
        "The cuts of a lifecycle (exported batches), or None for a layout not read natively.");
}
