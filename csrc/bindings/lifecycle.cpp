// Bindings of lifecycle attribution's native parts (pau.engine._lifecycle): reading the table
// (csrc/core/life_rows.hpp), the checks and scans of its rows (life_checks.hpp), the
// set-up of the pass (life_setup.hpp) and painting (paint.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../core/life_checks.hpp"
#include "../core/life_rows.hpp"
#include "../core/life_setup.hpp"
#include "../core/paint.hpp"
#include "common.hpp"
#include "exported.hpp"

namespace py = pybind11;
using pau::bindings::carray;
using pau::bindings::bool_view;
using pau::bindings::check_len;
using pau::bindings::def_bools;
using pau::bindings::def_view;
using pau::bindings::Exported;
using pau::bindings::to_bools;
using pau::bindings::to_numpy;
using pau::core::LifeRows;
namespace life = pau::core::life;

namespace {

using Bools = py::array_t<bool, py::array::c_style | py::array::forcecast>;

// f(pointer) on the data of a 1-d int32 or int64 array (read in place when
// C-contiguous, as zero-copy views of Arrow buffers are); a TypeError naming the
// argument for any other type.
template <typename F>
decltype(auto) with_ints(const py::array& a, const char* name, F&& f) {
    if (a.ndim() != 1) throw std::invalid_argument(std::string(name) + ": expected a 1-d array");
    const py::dtype dt = a.dtype();
    if (dt.kind() != 'i' || (dt.itemsize() != 4 && dt.itemsize() != 8))
        throw py::type_error(std::string(name) + ": expected an int32 or int64 array");
    py::array c = py::array::ensure(a, py::array::c_style);
    if (dt.itemsize() == 4) return f(static_cast<const int32_t*>(c.data()), c);
    return f(static_cast<const int64_t*>(c.data()), c);
}

const uint8_t* bool_data(const py::array_t<bool, py::array::c_style | py::array::forcecast>& a) {
    return reinterpret_cast<const uint8_t*>(a.data());
}

// lifecycle_rows' result, bound as pau._core.LifeRead: the core's columns (read as
// numpy views of its vectors) and the kinds as str, decoded while the table's
// buffers they point into are alive.
struct LifeRead {
    LifeRows rows;
    py::list kinds;
};

py::object lifecycle_rows(const py::list& lifecycle, const std::vector<std::string>& names, int step_code,
                          const std::vector<bool>& kinded) {
    if (step_code < 0 || static_cast<size_t>(step_code) >= names.size() || kinded.size() != names.size())
        throw std::invalid_argument("lifecycle_rows: step_code and kinded must match names");
    const Exported life(lifecycle);
    LifeRows rows;
    bool ok = false;
    {
        py::gil_scoped_release release;
        ok = rows.read(life.batches, names, step_code, kinded);
    }
    if (!ok) return py::none();
    const auto n_kinds = static_cast<py::ssize_t>(rows.small.kind.size());
    LifeRead out{std::move(rows), py::list(n_kinds)};
    const auto& kind = out.rows.small.kind;
    for (size_t i = 0; i < kind.size(); ++i) {
        PyObject* str = PyUnicode_DecodeUTF8(kind[i].first, kind[i].second, "strict");
        if (str == nullptr) throw py::error_already_set();
        out.kinds[i] = py::reinterpret_steal<py::object>(str);
    }
    return py::cast(std::move(out));
}

void bind_rows(py::module_& m) {
    using Rows = LifeRows::Rows;
    py::class_<Rows> rows(m, "LifeStepColumns", "Lifecycle rows as int64 columns (numpy views).");
    for (const auto& [name, field] : {std::pair{"row", &Rows::row}, {"attempt", &Rows::attempt}, {"rank", &Rows::rank},
                                      {"start", &Rows::start}, {"end", &Rows::end}, {"step", &Rows::step},
                                      {"tokens", &Rows::tokens}})
        def_view(rows, name, field);
    py::class_<LifeRows::Small, Rows> small(m, "LifeRowColumns",
                                            "The rows other than steps, with the columns of the other records.");
    def_view(small, "rec", &LifeRows::Small::rec);
    def_view(small, "block_end", &LifeRows::Small::block_end);
    def_view(small, "durable", &LifeRows::Small::durable);
    def_bools(small, "ok", &LifeRows::Small::ok);
    def_view(small, "kinded", &LifeRows::Small::kinded);
    py::class_<LifeRead>(m, "LifeRead", "lifecycle_rows' result.")
        .def_property_readonly("rows",
                               [](const py::object& self) {
                                   return py::cast(&self.cast<LifeRead&>().rows.small,
                                                   py::return_value_policy::reference_internal, self);
                               })
        .def_readonly("kinds", &LifeRead::kinds)
        .def_property_readonly("n_step", [](const LifeRead& r) { return r.rows.n_step; })
        .def_property_readonly("first", [](const LifeRead& r) { return r.rows.first; })
        .def_property_readonly("steps", [](const py::object& self) -> py::object {
            LifeRead& r = self.cast<LifeRead&>();
            if (r.rows.one_run()) return py::none();
            return py::cast(&r.rows.steps, py::return_value_policy::reference_internal, self);
        });
    m.def("lifecycle_rows", &lifecycle_rows, py::arg("lifecycle"), py::arg("names"), py::arg("step_code"),
          py::arg("kinded"),
          "The lifecycle's rows other than steps as columns (rows: row, rec, attempt, rank, start, end, step, "
          "block_end, durable, ok, kinded, tokens; kinds: the kinds of the rows `kinded` names) and where the "
          "steps are (n_step, first, and steps: their columns, or None when they are one run of rows); None for "
          "a layout not read natively.");
}

pau::core::Painted paint(const carray<int32_t>& rank, const carray<int64_t>& start, const carray<int64_t>& end,
                         const carray<int8_t>& level, const carray<int64_t>& order) {
    const py::ssize_t n = order.size();
    check_len(rank, start.size(), "rank", "start");
    check_len(end, start.size(), "end", "start");
    check_len(level, start.size(), "level", "start");
    for (py::ssize_t j = 0; j < n; ++j)
        if (order.data()[j] < 0 || order.data()[j] >= start.size())
            throw std::invalid_argument("paint: order must index the rows");
    pau::core::Painted p;
    {
        py::gil_scoped_release release;
        p = pau::core::paint(rank.data(), start.data(), end.data(), level.data(), order.data(), n);
    }
    return p;
}

py::array row_checks(const carray<int8_t>& rec, const carray<int64_t>& start, const carray<int64_t>& end,
                     const carray<int64_t>& block_end, const carray<int64_t>& durable, const carray<int64_t>& rank,
                     const carray<int64_t>& attempt, const carray<int64_t>& step, int64_t acc,
                     const Bools& needs_step) {
    const py::ssize_t n = rec.size();
    for (const py::array* a : {static_cast<const py::array*>(&start), static_cast<const py::array*>(&end),
                               static_cast<const py::array*>(&block_end),
                               static_cast<const py::array*>(&durable), static_cast<const py::array*>(&rank),
                               static_cast<const py::array*>(&attempt), static_cast<const py::array*>(&step)})
        check_len(*a, n, "row_checks column", "rec");
    std::vector<int8_t> out;
    {
        py::gil_scoped_release release;
        out = life::row_checks(rec.data(), start.data(), end.data(), block_end.data(), durable.data(),
                               rank.data(), attempt.data(), step.data(), n, acc, bool_data(needs_step),
                               needs_step.size());
    }
    return to_numpy(std::move(out));
}

// The step columns beside ``start`` are as long as it.
static void check_step_columns(const carray<int64_t>& end, const py::array& rank, const py::array& attempt,
                               const carray<int64_t>& step, const carray<int64_t>& tokens, py::ssize_t n) {
    check_len(end, n, "end", "start");
    check_len(step, n, "step", "start");
    check_len(tokens, n, "tokens", "start");
    check_len(rank, n, "rank", "start");
    check_len(attempt, n, "attempt", "start");
}

py::array step_codes(const carray<int64_t>& start, const carray<int64_t>& end, const py::array& rank,
                     const py::array& attempt, const carray<int64_t>& step, const carray<int64_t>& tokens) {
    const py::ssize_t n = start.size();
    check_step_columns(end, rank, attempt, step, tokens, n);
    return with_ints(rank, "rank", [&](auto r, py::array&) {
        return with_ints(attempt, "attempt", [&](auto a, py::array&) {
            std::vector<int8_t> out;
            {
                py::gil_scoped_release release;
                out = life::step_codes(start.data(), end.data(), r, a, step.data(), tokens.data(), n);
            }
            return to_numpy(std::move(out));
        });
    });
}

life::StepScan scan_steps(const carray<int64_t>& start, const carray<int64_t>& end, const py::array& rank,
                          const py::array& attempt, const carray<int64_t>& step, const carray<int64_t>& tokens,
                          int64_t cut, int64_t att_lo, int64_t att_n, const carray<uint8_t>& end_bits, int64_t end_off,
                          py::array_t<int64_t> end_out) {
    const py::ssize_t n = start.size();
    check_step_columns(end, rank, attempt, step, tokens, n);
    if (att_n < 0) throw std::invalid_argument("scan_steps: att_n must be >= 0");
    const bool fill = end_bits.size() > 0;
    int64_t* out_end = nullptr;
    if (fill) {
        check_len(end_out, n, "end_out", "start");
        if (end_off < 0 || (end_off + n + 7) / 8 > end_bits.size())
            throw std::invalid_argument("scan_steps: end_bits must hold bits end_off .. end_off + n");
        if (!(end_out.flags() & py::array::c_style)) throw std::invalid_argument("end_out: must be contiguous");
        out_end = end_out.mutable_data();
    }
    life::StepScan sc = with_ints(rank, "rank", [&](auto r, py::array&) {
        return with_ints(attempt, "attempt", [&](auto a, py::array&) {
            py::gil_scoped_release release;
            return life::scan_steps(start.data(), end.data(), r, a, step.data(), tokens.data(), n, cut,
                                    att_lo, att_n, fill ? end_bits.data() : nullptr, end_off, out_end);
        });
    });
    return sc;
}

void fill_nulls(const py::array& values, const carray<uint8_t>& bits, int64_t offset, int64_t fill,
                py::array_t<int64_t> out) {
    const py::ssize_t n = out.size();
    check_len(values, n, "values", "out");
    if (offset < 0 || (offset + n + 7) / 8 > bits.size())
        throw std::invalid_argument("fill_nulls: bits must hold bits offset .. offset + n");
    if (!(out.flags() & py::array::c_style)) throw std::invalid_argument("out: must be contiguous");
    int64_t* o = out.mutable_data();
    with_ints(values, "values", [&](auto v, py::array&) {
        py::gil_scoped_release release;
        life::fill_nulls(v, bits.data(), offset, fill, o, n);
        return 0;
    });
}

py::array lut_map(const py::array& values, int64_t lo, const carray<int64_t>& lut) {
    return with_ints(values, "values", [&](auto v, py::array& c) {
        std::vector<int64_t> out;
        {
            py::gil_scoped_release release;
            out = life::lut_map(v, c.size(), lo, lut.data(), lut.size());
        }
        return to_numpy(std::move(out));
    });
}

py::array by_rank_start(const carray<int64_t>& rank, const carray<int64_t>& start, int64_t r_lo,
                        const carray<int64_t>& rank_lut, int64_t n_ranks) {
    check_len(start, rank.size(), "start", "rank");
    for (py::ssize_t i = 0; i < rank.size(); ++i) {
        const int64_t j = rank.data()[i] - r_lo;
        if (j < 0 || j >= rank_lut.size() || rank_lut.data()[j] < 0 || rank_lut.data()[j] >= n_ranks)
            throw std::invalid_argument("by_rank_start: every rank must be in the lookup table");
    }
    return to_numpy(pau::core::by_rank_start(rank.data(), start.data(), rank.size(), r_lo, rank_lut.data(),
                                             n_ranks));
}

void bind_checks(py::module_& m) {
    py::class_<pau::core::Painted> painted(m, "Painted", "paint's pieces: rank, start, end, row.");
    def_view(painted, "rank", &pau::core::Painted::rank);
    def_view(painted, "start", &pau::core::Painted::start);
    def_view(painted, "end", &pau::core::Painted::end);
    def_view(painted, "row", &pau::core::Painted::row);
    m.def("paint", &paint, py::arg("rank"), py::arg("start"), py::arg("end"), py::arg("level"), py::arg("order"),
          "Disjoint top-level pieces of labelled intervals, per rank (csrc/core/paint.hpp): `order` sorts the "
          "rows by (rank, start); at each instant the highest `level` covering it wins, within a level the "
          "later start (ties: the later row). Returns the maximal pieces (Painted: rank, start, end, row).");
    m.def("by_rank_start", &by_rank_start, py::arg("rank"), py::arg("start"), py::arg("r_lo"), py::arg("rank_lut"),
          py::arg("n_ranks"),
          "Row order by (rank, start), stable (numpy's lexsort((start, rank))), ranks dense by "
          "rank_lut[rank - r_lo]: the order the set-up paints in.");
    m.def("row_checks", &row_checks, py::arg("rec"), py::arg("start"), py::arg("end"), py::arg("block_end"),
          py::arg("durable"), py::arg("rank"), py::arg("attempt"), py::arg("step"), py::kw_only(), py::arg("acc"),
          py::arg("needs_step"),
          "Per lifecycle row, the first problem visible in the row alone: 0 none, else 1 + its index in "
          "pau.engine._life_setup._ROW_CHECKS (int8).");
    m.def("step_codes", &step_codes, py::arg("start"), py::arg("end"), py::arg("rank"), py::arg("attempt"),
          py::arg("step"), py::arg("tokens"),
          "Per step row, its first problem alone: 0 none, else 1 + its index in "
          "pau.engine._life_setup._STEP_CHECKS (int8).");
    py::class_<life::StepScan> scan(m, "StepScan", "What scan_steps found (csrc/core/life_checks.hpp, StepScan).");
    for (const auto& [name, field] :
         {std::pair{"bad", &life::StepScan::bad}, {"after", &life::StepScan::after},
          {"max_start", &life::StepScan::max_start}, {"max_end", &life::StepScan::max_end},
          {"neg_rank", &life::StepScan::neg_rank}, {"step_min", &life::StepScan::step_min},
          {"rank_over", &life::StepScan::rank_over}, {"att_out", &life::StepScan::att_out}})
        scan.def_readonly(name, field);
    scan.def_readonly("ordered", &life::StepScan::ordered);
    def_bools(scan, "rank_seen", &life::StepScan::rank_seen);
    def_view(scan, "att_count", &life::StepScan::att_count);
    def_view(scan, "att_max_step", &life::StepScan::att_max_step);
    def_view(scan, "att_max_end", &life::StepScan::att_max_end);
    m.def("scan_steps", &scan_steps, py::arg("start"), py::arg("end"), py::arg("rank"), py::arg("attempt"),
          py::arg("step"), py::arg("tokens"), py::kw_only(), py::arg("cut"), py::arg("att_lo"), py::arg("att_n"),
          py::arg("end_bits"), py::arg("end_off"), py::arg("end_out"),
          "One pass over the step columns (csrc/core/life_checks.hpp, scan_steps): a StepScan. With end_bits "
          "(an Arrow validity bitmap of end, from bit end_off) end's nulls are read from it and end with them "
          "filled is written to end_out.");
    m.def("fill_nulls", &fill_nulls, py::arg("values"), py::arg("bits"), py::arg("offset"), py::arg("fill"),
          py::arg("out"),
          "out[i] = values[i], or fill where bit offset + i of the Arrow validity bitmap bits is clear.");
    m.def("lut_map", &lut_map, py::arg("values"), py::arg("lo"), py::arg("lut"),
          "lut[v - lo] per value (int64), -1 outside the table.");
}

// lineage's result, bound as pau._core.Lineage.
struct LineageOut {
    py::array base, head, on, on_lineage, bad;
};

LineageOut lineage(const carray<int64_t>& r_row, const carray<int64_t>& r_att, const carray<int64_t>& r_step,
                   const carray<int64_t>& r_start, const carray<int64_t>& c_att, const carray<int64_t>& c_step,
                   const carray<int64_t>& c_dur, const Bools& has_durable, const Bools& has_steps,
                   const carray<int64_t>& done_step, const Bools& completed, int64_t null,
                   const carray<int64_t>& job_att) {
    const py::ssize_t nr = r_row.size(), nc = c_att.size(), na = completed.size();
    const py::ssize_t n_jobs = job_att.size() ? job_att.size() - 1 : 0;
    for (py::ssize_t j = 0; j < n_jobs; ++j)
        if (job_att.data()[j] < 0 || job_att.data()[j] > job_att.data()[j + 1] || job_att.data()[j + 1] > na)
            throw std::invalid_argument("lineage: job_att must be non-decreasing offsets into the attempts");
    if (n_jobs && (job_att.data()[0] != 0 || job_att.data()[n_jobs] != na))
        throw std::invalid_argument("lineage: job_att must cover every attempt");
    for (py::ssize_t j = 1; n_jobs && j < nr; ++j)  // restores of a job come together, jobs in order
        if (r_att.data()[j] < r_att.data()[j - 1] &&
            std::upper_bound(job_att.data(), job_att.data() + n_jobs + 1, r_att.data()[j]) !=
                std::upper_bound(job_att.data(), job_att.data() + n_jobs + 1, r_att.data()[j - 1]))
            throw std::invalid_argument("lineage: restores must come job by job");
    for (py::ssize_t g = 1; n_jobs && g < nc; ++g)
        if (c_att.data()[g] < c_att.data()[g - 1])
            throw std::invalid_argument("lineage: checkpoints must come by attempt");
    check_len(r_att, nr, "r_att", "r_row");
    check_len(r_step, nr, "r_step", "r_row");
    check_len(r_start, nr, "r_start", "r_row");
    check_len(c_step, nc, "c_step", "c_att");
    check_len(c_dur, nc, "c_dur", "c_att");
    check_len(has_durable, na, "has_durable", "completed");
    check_len(has_steps, na, "has_steps", "completed");
    check_len(done_step, na, "done_step", "completed");
    for (py::ssize_t j = 0; j < nr; ++j)  // attempts index the per-attempt arrays
        if (r_att.data()[j] < 0 || r_att.data()[j] >= na)
            throw std::invalid_argument("lineage: r_att out of range");
    for (py::ssize_t g = 0; g < nc; ++g)
        if (c_att.data()[g] < 0 || c_att.data()[g] >= na)
            throw std::invalid_argument("lineage: c_att out of range");
    std::vector<int64_t> base(static_cast<size_t>(na), null), head(static_cast<size_t>(na), null);
    std::vector<int64_t> bad(static_cast<size_t>(nr));
    py::array_t<bool> on(na), on_lineage(nc);
    std::fill_n(on.mutable_data(), na, false);
    std::fill_n(on_lineage.mutable_data(), nc, false);
    int64_t n_bad;
    {
        py::gil_scoped_release release;
        if (n_jobs)
            n_bad = life::lineage_jobs(job_att.data(), n_jobs, r_row.data(), r_att.data(), r_step.data(),
                                       r_start.data(), nr, c_att.data(), c_step.data(), c_dur.data(), nc,
                                       has_durable.data(), has_steps.data(), done_step.data(), completed.data(),
                                       null, base.data(), head.data(), on.mutable_data(),
                                       on_lineage.mutable_data(), bad.data());
        else
            n_bad = life::lineage(r_row.data(), r_att.data(), r_step.data(), r_start.data(), nr, c_att.data(),
                                  c_step.data(), c_dur.data(), nc, has_durable.data(), has_steps.data(),
                                  done_step.data(), completed.data(), na, null, base.data(), head.data(),
                                  on.mutable_data(), on_lineage.mutable_data(), bad.data());
    }
    bad.resize(static_cast<size_t>(n_bad));
    return {to_numpy(std::move(base)), to_numpy(std::move(head)), on, on_lineage, to_numpy(std::move(bad))};
}

void bind_lineage(py::module_& m) {
    py::class_<LineageOut>(m, "Lineage", "The lineage rule's result (csrc/core/life_checks.hpp, lineage).")
        .def_readonly("base", &LineageOut::base)
        .def_readonly("head", &LineageOut::head)
        .def_readonly("on", &LineageOut::on)
        .def_readonly("on_lineage", &LineageOut::on_lineage)
        .def_readonly("bad", &LineageOut::bad);
    m.def("lineage", &lineage, py::arg("r_row"), py::arg("r_att"), py::arg("r_step"), py::arg("r_start"),
          py::kw_only(), py::arg("c_att"), py::arg("c_step"), py::arg("c_dur"), py::arg("has_durable"),
          py::arg("has_steps"), py::arg("done_step"), py::arg("completed"), py::arg("null"), py::arg("job_att"),
          "The lineage rule (DESIGN 2.2): base, head, on, on_lineage and bad; bad holds the rows of ok restores "
          "that no checkpoint qualifies for (then the rest is not written). job_att (empty: one job; or the "
          "offsets of each job's attempts, as lifecycle_setup's job_att gives them): each job is its own lineage "
          "(lineage_jobs).");
}

// lifecycle_setup's result, bound as pau._core.Setup: the core's Setup (its vectors
// read as numpy views, see life_setup.hpp) and, with many jobs, the code of each error row.
struct SetupResult : life::Setup {
    std::vector<int64_t> error_codes;
};

// The columns of the rows and the steps' figures lifecycle_setup takes (what the
// caller gives; checked before the core reads them).
void check_setup(const carray<int8_t>& rec, const carray<int64_t>& attempt, const carray<int64_t>& rank,
                 const carray<int64_t>& start, const carray<int64_t>& end, const carray<int64_t>& step,
                 const carray<int64_t>& block_end, const carray<int64_t>& durable, const Bools& ok,
                 const carray<int64_t>& kcode, const std::vector<int64_t>& step_ids, const carray<int64_t>& sa_count,
                 const carray<int64_t>& sa_max_step, const carray<int64_t>& sa_max_end, const py::array& s_att,
                 const carray<int64_t>& s_end, const carray<int64_t>& s_step, const carray<int8_t>& phase_state,
                 const carray<int8_t>& st_codes) {
    const py::ssize_t n = rec.size();
    for (const py::array* a :
         {static_cast<const py::array*>(&attempt), static_cast<const py::array*>(&rank),
          static_cast<const py::array*>(&start), static_cast<const py::array*>(&end),
          static_cast<const py::array*>(&step), static_cast<const py::array*>(&block_end),
          static_cast<const py::array*>(&durable), static_cast<const py::array*>(&ok),
          static_cast<const py::array*>(&kcode)})
        check_len(*a, n, "lifecycle_setup column", "rec");
    if (st_codes.size() != 8) throw std::invalid_argument("lifecycle_setup: st_codes must hold 8 codes");
    const py::ssize_t n_ids = static_cast<py::ssize_t>(step_ids.size());
    check_len(sa_count, n_ids, "sa_count", "step_ids");
    check_len(sa_max_step, n_ids, "sa_max_step", "step_ids");
    check_len(sa_max_end, n_ids, "sa_max_end", "step_ids");
    check_len(s_end, s_att.size(), "s_end", "s_att");
    check_len(s_step, s_att.size(), "s_step", "s_att");
    if (!std::is_sorted(step_ids.begin(), step_ids.end()))
        throw std::invalid_argument("lifecycle_setup: step_ids must be sorted");
    for (py::ssize_t i = 0; i < n; ++i) {  // the kinds index their tables
        const int64_t r = rec.data()[i], k = kcode.data()[i];
        if (r == life::kPhase && (k < 0 || k >= phase_state.size()))
            throw std::invalid_argument("lifecycle_setup: a phase row's kind code is outside phase_state");
        if (r < life::kAcc || r > life::kFail)
            throw std::invalid_argument("lifecycle_setup: record codes must be checked first (row_checks)");
    }
}

// Many jobs (row_job not empty): every row, known rank and step attempt id names a job;
// the number of jobs (0: one job, row_job empty).
int64_t job_count(const carray<int64_t>& rank, py::ssize_t n, const std::vector<int64_t>& known_ranks,
                  const std::vector<int64_t>& step_ids, const carray<int64_t>& row_job, const carray<int64_t>& rank_job,
                  const carray<int64_t>& att_job) {
    const bool jobs = row_job.size() > 0;
    if (jobs && row_job.size() != n)
        throw std::invalid_argument("lifecycle_setup: row_job must have one job per row, or none");
    int64_t n_jobs = 0;
    if (jobs) {
        for (py::ssize_t i = 0; i < rank_job.size(); ++i)
            if (rank_job.data()[i] < 0) throw std::invalid_argument("lifecycle_setup: rank_job below 0");
        for (py::ssize_t i = 0; i < att_job.size(); ++i)
            if (att_job.data()[i] < 0) throw std::invalid_argument("lifecycle_setup: att_job below 0");
        for (py::ssize_t i = 0; i < n; ++i) {
            const int64_t j = row_job.data()[i];
            if (j < 0) throw std::invalid_argument("lifecycle_setup: row_job below 0");
            n_jobs = std::max(n_jobs, j + 1);
        }
        for (py::ssize_t i = 0; i < rank_job.size(); ++i) n_jobs = std::max(n_jobs, rank_job.data()[i] + 1);
        for (py::ssize_t i = 0; i < att_job.size(); ++i) n_jobs = std::max(n_jobs, att_job.data()[i] + 1);
        for (int64_t r : known_ranks)
            if (r < 0 || r >= rank_job.size())
                throw std::invalid_argument("lifecycle_setup: a known rank has no job in rank_job");
        for (int64_t id : step_ids)
            if (id < 0 || id >= att_job.size())
                throw std::invalid_argument("lifecycle_setup: a step attempt id has no job in att_job");
        for (py::ssize_t i = 0; i < n; ++i) {
            const int64_t r = rank.data()[i];
            if (r >= rank_job.size() || (r >= 0 && rank_job.data()[r] != row_job.data()[i]))
                throw std::invalid_argument("lifecycle_setup: a row's rank is not of the row's job");
        }
        if (rank_job.size() >= life::kRankLutMax)
            throw std::invalid_argument("lifecycle_setup: more (job, rank) pairs than the rank table holds");
    }
    return n_jobs;
}

SetupResult lifecycle_setup(const carray<int8_t>& rec, const carray<int64_t>& attempt, const carray<int64_t>& rank,
                            const carray<int64_t>& start, const carray<int64_t>& end, const carray<int64_t>& step,
                            const carray<int64_t>& block_end, const carray<int64_t>& durable, const Bools& ok,
                            const carray<int64_t>& kcode, int64_t n_fail_kinds, int64_t as_of,
                            std::vector<int64_t> known_ranks, std::vector<int64_t> step_ids,
                            const carray<int64_t>& sa_count, const carray<int64_t>& sa_max_step,
                            const carray<int64_t>& sa_max_end, const py::array& s_att, const carray<int64_t>& s_end,
                            const carray<int64_t>& s_step, const carray<int8_t>& phase_state,
                            const carray<int8_t>& st_codes, const carray<int64_t>& row_job,
                            const carray<int64_t>& rank_job, const carray<int64_t>& att_job) {
    check_setup(rec, attempt, rank, start, end, step, block_end, durable, ok, kcode, step_ids, sa_count, sa_max_step,
                sa_max_end, s_att, s_end, s_step, phase_state, st_codes);
    const py::ssize_t n = rec.size();
    const int64_t n_jobs = job_count(rank, n, known_ranks, step_ids, row_job, rank_job, att_job);
    const bool jobs = row_job.size() > 0;
    life::SetupIn in;
    in.rec = rec.data();
    in.attempt = attempt.data();
    in.rank = rank.data();
    in.start = start.data();
    in.end = end.data();
    in.step = step.data();
    in.block_end = block_end.data();
    in.durable = durable.data();
    in.ok = bool_data(ok);
    in.kcode = kcode.data();
    in.n = n;
    in.n_fail_kinds = n_fail_kinds;
    in.as_of = as_of;
    in.known_ranks = std::move(known_ranks);
    in.step_ids = std::move(step_ids);
    in.phase_state = phase_state.data();
    in.st_codes = st_codes.data();
    const std::vector<int64_t> ids = in.step_ids;
    life::JobErrors job_errors;
    life::Setup s = with_ints(s_att, "s_att", [&](auto a, py::array& c) {
        py::gil_scoped_release release;
        if (jobs)
            return life::setup_jobs(in, row_job.data(), rank_job.data(), att_job.data(), n_jobs,
                                    sa_count.data(), sa_max_step.data(), sa_max_end.data(), a, s_end.data(),
                                    s_step.data(), c.size(), job_errors);
        life::Setup out = life::setup(in);
        if (!out.status)
            life::done_steps(out, ids, sa_count.data(), sa_max_step.data(), sa_max_end.data(), a,
                             s_end.data(), s_step.data(), c.size(), as_of);
        return out;
    });
    return SetupResult{std::move(s), std::move(job_errors.code)};
}

void bind_setup(py::module_& m) {
    py::class_<life::Layer> layer(m, "Layer", "A painted layer of the set-up: rank, start, end, state, att, step.");
    def_view(layer, "rank", &life::Layer::rank);
    def_view(layer, "start", &life::Layer::start);
    def_view(layer, "end", &life::Layer::end);
    def_view(layer, "state", &life::Layer::state);
    def_view(layer, "att", &life::Layer::att);
    def_view(layer, "step", &life::Layer::step);
    using S = life::Setup;
    py::class_<SetupResult> setup(m, "Setup", "lifecycle_setup's result (csrc/core/life_setup.hpp, Setup).");
    for (const auto& [name, field] :
         {std::pair{"e_row", &S::e_row}, {"e_rank", &S::e_rank}, {"e_ms", &S::e_ms}, {"e_me", &S::e_me},
          {"a_ids", &S::a_ids}, {"a_start", &S::a_start}, {"a_end", &S::a_end}, {"a_cause", &S::a_cause},
          {"f_att", &S::f_att}, {"f_time", &S::f_time}, {"f_kind", &S::f_kind}, {"c_att", &S::c_att},
          {"c_step", &S::c_step}, {"c_dur", &S::c_dur}, {"m_ids", &S::m_ids}, {"m_off", &S::m_off},
          {"m_ranks", &S::m_ranks}, {"rank_values", &S::rank_values}, {"rank_lut", &S::rank_lut},
          {"m_start", &S::m_start}, {"m_end", &S::m_end}, {"o_ckpt", &S::o_ckpt}, {"r_row", &S::r_row},
          {"r_att", &S::r_att}, {"r_step", &S::r_step}, {"r_start", &S::r_start}, {"done_step", &S::done_step},
          {"m_row", &S::m_row}, {"job_att", &S::job_att}, {"job_acc_min", &S::job_acc_min}})
        def_view(setup, name, field);
    for (const auto& [name, field] : {std::pair{"a_running", &S::a_running}, {"a_completed", &S::a_completed},
                                      {"c_ok", &S::c_ok}, {"has_durable", &S::has_durable},
                                      {"has_steps", &S::has_steps}})
        def_bools(setup, name, field);
    def_view(setup, "error_codes", &SetupResult::error_codes);
    setup.def_readonly("status", &S::status)
        .def_readonly("r_lo", &S::r_lo)
        .def_readonly("dense", &S::dense)
        .def_readonly("acc_min", &S::acc_min)
        .def_property_readonly("background",
                               [](const py::object& self) {
                                   return py::cast(&self.cast<SetupResult&>().background,
                                                   py::return_value_policy::reference_internal, self);
                               })
        .def_property_readonly("overlay", [](const py::object& self) {
            return py::cast(&self.cast<SetupResult&>().overlay, py::return_value_policy::reference_internal, self);
        });
    m.def("lifecycle_setup", &lifecycle_setup, py::arg("rec"), py::arg("attempt"), py::arg("rank"), py::arg("start"),
          py::arg("end"), py::arg("step"), py::arg("block_end"), py::arg("durable"), py::kw_only(), py::arg("ok"),
          py::arg("kcode"), py::arg("n_fail_kinds"), py::arg("as_of"), py::arg("known_ranks"), py::arg("step_ids"),
          py::arg("sa_count"), py::arg("sa_max_step"), py::arg("sa_max_end"), py::arg("s_att"), py::arg("s_end"),
          py::arg("s_step"), py::arg("phase_state"), py::arg("st_codes"), py::arg("row_job"), py::arg("rank_job"),
          py::arg("att_job"),
          "The set-up of lifecycle attribution but the lineage (csrc/core/life_setup.hpp), as a Setup: status "
          "(0, or a relational error code) and the error rows (e_row, e_rank, e_ms, e_me: row, rank, member "
          "start, member end); without an error also the attempts, failures, checkpoints, members, ranks, "
          "the painted layers, the restores and the steps' figures (see life_setup.hpp's Setup). The steps "
          "enter through their attempt ids (step_ids, sorted, with per id the rows, the highest step and the "
          "latest end among rows that ended) and their columns s_att, s_end, s_step. Many jobs (row_job: the job "
          "of each row, empty for one job; rank_job, att_job: of each rank and attempt id, the caller's dense "
          "ids of (job, rank) and (job, attempt) pairs): each job is set up alone, side by side (setup_jobs); "
          "error_codes then gives the code of each error row, of every job.");
}

}  // namespace

void bind_lifecycle(py::module_& m) {
    bind_rows(m);
    bind_checks(m);
    bind_lineage(m);
    bind_setup(m);
}
