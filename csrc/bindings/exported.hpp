// Record batches exported through the Arrow C data interface, as the bindings take them.
#pragma once

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "../core/arrow_c.hpp"

namespace pau::bindings {

namespace py = pybind11;

// Exported batches as (schema capsule, array capsule) pairs, kept alive here.
struct Exported {
    std::vector<py::object> keep;
    std::vector<pau::core::arrow::Batch> batches;

    explicit Exported(const py::list& pairs) {
        for (const auto& item : pairs) {
            const auto pair = item.cast<py::tuple>();
            if (pair.size() != 2) throw std::invalid_argument("expected (schema, array) capsules of a batch");
            py::capsule schema = pair[0].cast<py::capsule>(), array = pair[1].cast<py::capsule>();
            if (std::string(schema.name() ? schema.name() : "") != "arrow_schema" ||
                std::string(array.name() ? array.name() : "") != "arrow_array")
                throw std::invalid_argument("expected the capsules of __arrow_c_array__");
            batches.push_back({schema.get_pointer<ArrowSchema>(), array.get_pointer<ArrowArray>()});
            keep.push_back(schema);
            keep.push_back(array);
        }
    }
};

}  // namespace pau::bindings
