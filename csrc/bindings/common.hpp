// Helpers shared by the binding files: numpy arrays in and out of the core.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

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

// A 1-d array of n elements, or an error naming the argument and the one it must match.
inline void check_len(const py::array& a, py::ssize_t n, const char* name, const char* like) {
    if (a.ndim() != 1 || a.shape(0) != n)
        throw std::invalid_argument(std::string(name) + ": expected a 1-d array of the same length as " + like);
}

}  // namespace pau::bindings
