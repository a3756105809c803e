// The native errors that are not ValueErrors of a message alone: pau._core.FeedError
// carries the code, row and batch of the first problem a feed met, which
// pau.engine._native (the one translation point) turns into pau.errors.
#include <pybind11/pybind11.h>

#include <exception>

#include "common.hpp"

namespace py = pybind11;

void bind_errors(py::module_& m) {
    // A ValueError, so that a caller that knows nothing of it still sees an input error.
    static py::handle feed_error = PyErr_NewException("pau._core.FeedError", PyExc_ValueError, nullptr);
    m.attr("FeedError") = py::reinterpret_borrow<py::object>(feed_error);
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const pau::bindings::FeedError& e) {
            py::object err = feed_error(e.what());
            err.attr("code") = e.code;
            err.attr("row") = e.row;
            err.attr("batch") = e.batch;
            PyErr_SetObject(feed_error.ptr(), err.ptr());
        }
    });
}
