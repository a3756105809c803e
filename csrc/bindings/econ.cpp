// Bindings for the busy-time attribution of pau.economics (csrc/core/attrib.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <utility>
#include <vector>

#include "../core/attrib.hpp"

namespace py = pybind11;

namespace {

template <typename T>
using carray = py::array_t<T, py::array::c_style | py::array::forcecast>;

template <typename T>
py::array_t<T> to_numpy(std::vector<T>&& v) {
    auto* heap = new std::vector<T>(std::move(v));
    py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<T>*>(p); });
    return py::array_t<T>(static_cast<py::ssize_t>(heap->size()), heap->data(), owner);
}

void check_len(const py::array& a, py::ssize_t n, const char* name, const char* like) {
    if (a.ndim() != 1 || a.shape(0) != n)
        throw std::invalid_argument(std::string(name) + ": expected a 1-d array of the same length as " + like);
}

py::tuple attribute_busy(const carray<int32_t>& rep, const carray<int64_t>& arrival,
                         const carray<int64_t>& first_token, const carray<int64_t>& end,
                         const carray<int64_t>& input_tokens, const carray<int64_t>& output_tokens,
                         int64_t prefill_weight, int64_t decode_weight, const carray<int32_t>& b_rep,
                         const carray<int64_t>& b_start, const carray<int64_t>& b_end, int32_t n_replicas,
                         const py::object& outcome_obj, int32_t n_outcomes) {
    const py::ssize_t n = rep.ndim() == 1 ? rep.shape(0) : -1;
    check_len(rep, n, "replica", "replica");
    check_len(arrival, n, "arrival_ns", "replica");
    check_len(first_token, n, "first_token_ns", "replica");
    check_len(end, n, "end_ns", "replica");
    check_len(input_tokens, n, "input_tokens", "replica");
    check_len(output_tokens, n, "output_tokens", "replica");
    const py::ssize_t nb = b_rep.ndim() == 1 ? b_rep.shape(0) : -1;
    check_len(b_rep, nb, "busy.replica", "busy.replica");
    check_len(b_start, nb, "busy.start_ns", "busy.replica");
    check_len(b_end, nb, "busy.end_ns", "busy.replica");
    carray<int8_t> outcome;
    if (!outcome_obj.is_none()) {
        outcome = outcome_obj.cast<carray<int8_t>>();
        check_len(outcome, n, "outcome", "replica");
    }
    const int8_t* op = outcome_obj.is_none() ? nullptr : outcome.data();
    pau::core::AttribResult res;
    {
        // Safe without the GIL: every buffer belongs to an array the caller's frame
        // keeps alive, and the sweep touches no Python object.
        py::gil_scoped_release release;
        res = pau::core::attribute_busy(rep.data(), arrival.data(), first_token.data(), end.data(),
                                        input_tokens.data(), output_tokens.data(), prefill_weight,
                                        decode_weight, n, b_rep.data(), b_start.data(), b_end.data(), nb,
                                        n_replicas, op, op ? n_outcomes : 1);
    }
    py::object overflow = py::none();
    if (res.overflow_replica >= 0)
        overflow = py::make_tuple(res.overflow_replica, res.overflow_ns,
                                  res.overflow_kind == pau::core::kOverflowWeight ? "weight" : "precision");
    py::object by_outcome = py::none();
    if (op) {
        auto a = to_numpy(std::move(res.rep_outcome));
        by_outcome = a.reshape({static_cast<py::ssize_t>(n_replicas), static_cast<py::ssize_t>(n_outcomes)});
    }
    return py::make_tuple(to_numpy(std::move(res.prefill)), to_numpy(std::move(res.decode)),
                          to_numpy(std::move(res.total)), to_numpy(std::move(res.idle)),
                          to_numpy(std::move(res.rep_busy)), to_numpy(std::move(res.rep_idle)), by_outcome,
                          overflow);
}

}  // namespace

void bind_econ(py::module_& m) {
    m.attr("ATTRIB_MAX_WEIGHT") = pau::core::kAttribMaxWeight;
    m.attr("ATTRIB_MAX_ROWS") = pau::core::kAttribMaxRows;
    m.attr("ATTRIB_KEY_BITS") = pau::core::kAttribKeyBits;
    m.def("attribute_busy", &attribute_busy, py::arg("replica"), py::arg("arrival"), py::arg("first_token"),
          py::arg("end"), py::arg("input_tokens"), py::arg("output_tokens"), py::arg("prefill_weight"),
          py::arg("decode_weight"), py::arg("busy_replica"), py::arg("busy_start"), py::arg("busy_end"),
          py::arg("n_replicas"), py::arg("outcome") = py::none(), py::arg("n_outcomes") = 1,
          "Attribution of busy time to the request phases in flight: exact rational shares, "
          "rounded once per phase with per-replica largest remainder; returns (prefill_ns, "
          "decode_ns, attributed_ns per request, idle_ns per busy row, busy_ns and idle_ns per "
          "replica, attributed ns per (replica, outcome) or None without outcome, overflow) with "
          "overflow None or (replica, time_ns, kind), kind 'weight' or 'precision'.");
    m.def(
        "sum_by_key",
        [](const carray<int32_t>& key, const carray<int64_t>& value, int32_t n_keys, const py::object& sub_obj,
           int32_t n_sub) {
            const py::ssize_t n = key.ndim() == 1 ? key.shape(0) : -1;
            check_len(value, n, "value", "key");
            carray<int8_t> sub;
            if (!sub_obj.is_none()) {
                sub = sub_obj.cast<carray<int8_t>>();
                check_len(sub, n, "sub", "key");
            }
            const int8_t* sp = sub_obj.is_none() ? nullptr : sub.data();
            std::vector<int64_t> out;
            {
                py::gil_scoped_release release;  // plain buffers kept alive by this frame
                out = pau::core::sum_by_key(key.data(), value.data(), n, n_keys, sp, sub_obj.is_none() ? 1 : n_sub);
            }
            return to_numpy(std::move(out));
        },
        py::arg("key"), py::arg("value"), py::arg("n_keys"), py::arg("sub") = py::none(), py::arg("n_sub") = 1,
        "Exact int64 sums of value per key in [0, n_keys) (per (key, sub) pair, flattened, when sub is "
        "given); keys < 0 are skipped.");
}
