// Helpers shared by the binding files: numpy arrays in and out of the core.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pau::bindings {

namespace py = pybind11;

// A C-contiguous numpy array of T (converted when the caller's is not).
template <typename T>
using carray = py::array_t<T, py::array::c_style | py::array::forcecast>;

// A vector handed to numpy without a copy: the array owns it through a capsule.
// Any allocator (the core allocates some outputs uninitialized).
template <typename T, typename A>
py::array_t<T> to_numpy(std::vector<T, A>&& v) {
    using V = std::vector<T, A>;
    auto* heap = new V(std::move(v));
    py::capsule owner(heap, [](void* p) { delete static_cast<V*>(p); });
    return py::array_t<T>(static_cast<py::ssize_t>(heap->size()), heap->data(), owner);
}

// A vector of 0/1 bytes handed to numpy as a bool array, without a copy.
inline py::array to_bools(std::vector<uint8_t>&& v) {
    auto* heap = new std::vector<uint8_t>(std::move(v));
    py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<uint8_t>*>(p); });
    return py::array(py::dtype("bool"), {static_cast<py::ssize_t>(heap->size())}, {py::ssize_t{1}}, heap->data(),
                     owner);
}

// A vector of the object `owner` wraps as a numpy array over the vector's memory
// (no copy): the array holds `owner`, so the vector lives as long as the array.
template <typename T>
py::array_t<T> view(std::vector<T>& v, const py::handle& owner) {
    return py::array_t<T>(static_cast<py::ssize_t>(v.size()), v.data(), owner);
}

// The same for 0/1 bytes, as a bool array.
inline py::array bool_view(std::vector<uint8_t>& v, const py::handle& owner) {
    return py::array(py::dtype("bool"), {static_cast<py::ssize_t>(v.size())}, {py::ssize_t{1}}, v.data(), owner);
}

// Read-only attributes of a bound class (Cls: its py::class_) that are vectors of the
// bound struct (or of a base of it), as numpy views (see view): one per member pointer.
template <typename Cls, typename C, typename T>
void def_view(Cls& cls, const char* name, std::vector<T> C::*field) {
    using Self = typename Cls::type;
    cls.def_property_readonly(name, [field](const py::object& self) {
        return view(self.cast<Self&>().*field, self);
    });
}

template <typename Cls, typename C>
void def_bools(Cls& cls, const char* name, std::vector<uint8_t> C::*field) {
    using Self = typename Cls::type;
    cls.def_property_readonly(name,
                              [field](const py::object& self) { return bool_view(self.cast<Self&>().*field, self); });
}

// The first problem a feed of event batches met (the core's FeedResult code, the row
// within the batch, the batch): raised as pau._core.FeedError (errors.cpp), which
// pau.engine._native turns into pau.errors.
struct FeedError : std::runtime_error {
    int code;
    int64_t row, batch;
    FeedError(int code_, int64_t row_, int64_t batch_)
        : std::runtime_error("feed stopped at row " + std::to_string(row_) + " of batch " + std::to_string(batch_) +
                             " (code " + std::to_string(code_) + ")"),
          code(code_), row(row_), batch(batch_) {}
};

// A 1-d array of n elements, or an error naming the argument and the one it must match.
inline void check_len(const py::array& a, py::ssize_t n, const char* name, const char* like) {
    if (a.ndim() != 1 || a.shape(0) != n)
        throw std::invalid_argument(std::string(name) + ": expected a 1-d array of the same length as " + like);
}

}  // namespace pau::bindings
