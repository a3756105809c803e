// The sweep's histogram as Python sees it: a dict of numpy arrays, moved, not copied.
#pragma once

#include <pybind11/pybind11.h>

#include <utility>

#include "../core/sweep.hpp"
#include "common.hpp"

namespace pau::bindings {

inline py::dict histogram_dict(pau::core::Histogram&& h) {
    py::dict d;
    d["rank"] = to_numpy(std::move(h.rank));
    d["window"] = to_numpy(std::move(h.window));
    d["mask"] = to_numpy(std::move(h.mask));
    d["duration"] = to_numpy(std::move(h.duration));
    d["span_rank"] = to_numpy(std::move(h.span_rank));
    d["span_start"] = to_numpy(std::move(h.span_start));
    d["span_end"] = to_numpy(std::move(h.span_end));
    return d;
}

}  // namespace pau::bindings
