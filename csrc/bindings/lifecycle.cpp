// Bindings for reading the lifecycle table (csrc/core/life_rows.hpp, pau.lifecycle).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "../core/life_rows.hpp"
#include "common.hpp"
#include "exported.hpp"

namespace py = pybind11;
using pau::bindings::Exported;
using pau::bindings::to_numpy;
using pau::core::LifeRows;

void bind_lifecycle(py::module_& m) {
    m.def(
        "lifecycle_rows",
        [](const py::list& lifecycle, const std::vector<std::string>& names, int step_code,
           const std::vector<bool>& kinded) -> py::object {
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
            LifeRows::Small& s = rows.small;
            py::list kind(static_cast<py::ssize_t>(s.kind.size()));
            for (size_t i = 0; i < s.kind.size(); ++i) {
                PyObject* str = PyUnicode_DecodeUTF8(s.kind[i].first, s.kind[i].second, "strict");
                if (str == nullptr) throw py::error_already_set();
                kind[i] = py::reinterpret_steal<py::object>(str);
            }
            py::array_t<bool> ok_col(static_cast<py::ssize_t>(s.ok.size()));
            if (!s.ok.empty()) std::memcpy(ok_col.mutable_data(), s.ok.data(), s.ok.size());
            py::tuple small = py::make_tuple(
                to_numpy(std::move(s.row)), to_numpy(std::move(s.rec)), to_numpy(std::move(s.attempt)),
                to_numpy(std::move(s.rank)), to_numpy(std::move(s.start)), to_numpy(std::move(s.end)),
                to_numpy(std::move(s.step)), to_numpy(std::move(s.block_end)), to_numpy(std::move(s.durable)),
                ok_col, to_numpy(std::move(s.kinded)), kind, to_numpy(std::move(s.tokens)));
            py::object steps = py::none();
            if (!rows.one_run()) {
                LifeRows::Steps& t = rows.steps;
                steps = py::make_tuple(to_numpy(std::move(t.row)), to_numpy(std::move(t.attempt)),
                                       to_numpy(std::move(t.rank)), to_numpy(std::move(t.start)),
                                       to_numpy(std::move(t.end)), to_numpy(std::move(t.step)),
                                       to_numpy(std::move(t.tokens)));
            }
            return py::make_tuple(small, rows.n_step, rows.first, steps);
        },
        py::arg("lifecycle"), py::arg("names"), py::arg("step_code"), py::arg("kinded"),
        "The lifecycle's rows other than steps as columns, and where the steps are: "
        "((row, rec, attempt, rank, start, end, step, block_end, durable, ok, kinded, kinds, tokens), "
        "step count, first step row, the step rows' (row, attempt, rank, start, end, step, tokens) or "
        "None when they are one run); None for a layout not read natively.");
}
