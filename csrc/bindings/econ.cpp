// Bindings for the request economics of pau.figures.economics: the busy-time attribution
// (csrc/core/attrib.hpp), the request rows (requests.hpp) and the kept mappings (arena.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <utility>
#include <vector>

#include "../core/arena.hpp"
#include "../core/attrib.hpp"
#include "../core/requests.hpp"
#include "common.hpp"

namespace py = pybind11;

namespace {

using pau::bindings::carray;
using pau::bindings::check_len;
using pau::bindings::to_numpy;

// An optional bool mask (None: nullptr) of n rows; `keep` holds the converted array.
const uint8_t* mask_ptr(const py::object& obj, carray<bool>& keep, py::ssize_t n, const char* name,
                        const char* like = "arrival_ns") {
    if (obj.is_none()) return nullptr;
    keep = obj.cast<carray<bool>>();
    check_len(keep, n, name, like);
    return reinterpret_cast<const uint8_t*>(keep.data());
}

// attribute_busy's result, bound as pau._core.Attribution (arrays own the core's vectors).
struct Attribution {
    py::array prefill_ns, decode_ns, attributed_ns, idle_ns, replica_busy_ns, replica_idle_ns;
    py::object by_outcome, overflow;  // None, or the (replica, outcome) matrix / (replica, time_ns, kind)
};

// request_rows' result, bound as pau._core.RequestRows.
struct Requests {
    py::array reason, outcome, ttft, e2e, tpot;
    int64_t bad = 0, accepted_input_tokens = 0, accepted_output_tokens = 0, arrival_min = 0, arrival_max = 0;
    py::list counts;
    py::object end_max;
};

Attribution attribute_busy(const carray<int32_t>& rep, const carray<int64_t>& arrival,
                         const carray<int64_t>& first_token, const carray<int64_t>& end,
                         const carray<int64_t>& input_tokens, const carray<int64_t>& output_tokens,
                         int64_t prefill_weight, int64_t decode_weight, const carray<int32_t>& b_rep,
                         const carray<int64_t>& b_start, const carray<int64_t>& b_end, int32_t n_replicas,
                         const py::object& outcome_obj, int32_t n_outcomes, int32_t skip_outcome,
                         const py::object& first_token_null, bool rows_checked) {
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
    carray<bool> ftn;
    const uint8_t* fnp = mask_ptr(first_token_null, ftn, n, "first_token_null", "replica");
    pau::core::AttribResult res;
    {
        // Safe without the GIL: every buffer belongs to an array the caller's frame
        // keeps alive, and the sweep touches no Python object.
        py::gil_scoped_release release;
        res = pau::core::attribute_busy(rep.data(), arrival.data(), first_token.data(), end.data(),
                                        input_tokens.data(), output_tokens.data(), prefill_weight,
                                        decode_weight, n, b_rep.data(), b_start.data(), b_end.data(), nb,
                                        n_replicas, op, op ? n_outcomes : 1, skip_outcome, fnp, rows_checked);
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
    return {to_numpy(std::move(res.prefill)),  to_numpy(std::move(res.decode)),
            to_numpy(std::move(res.total)),    to_numpy(std::move(res.idle)),
            to_numpy(std::move(res.rep_busy)), to_numpy(std::move(res.rep_idle)),
            by_outcome,                        overflow};
}


Requests request_rows(const carray<int64_t>& arrival, const py::object& arrival_null, const carray<int64_t>& end,
                      const py::object& end_null, const carray<int64_t>& first_token,
                      const py::object& first_token_null, const carray<int64_t>& tin, const py::object& tin_null,
                      const carray<int64_t>& tout, const py::object& tout_null, const carray<int8_t>& status,
                      const py::object& status_null, const py::object& replica_null, bool need_replica,
                      const py::object& slo_ttft, const py::object& slo_tpot, const py::object& slo_e2e) {
    const py::ssize_t n = arrival.ndim() == 1 ? arrival.shape(0) : -1;
    check_len(arrival, n, "arrival_ns", "arrival_ns");
    check_len(end, n, "end_ns", "arrival_ns");
    check_len(first_token, n, "first_token_ns", "arrival_ns");
    check_len(tin, n, "input_tokens", "arrival_ns");
    check_len(tout, n, "output_tokens", "arrival_ns");
    check_len(status, n, "status", "arrival_ns");
    carray<bool> m[7];
    const uint8_t* an = mask_ptr(arrival_null, m[0], n, "arrival_null");
    const uint8_t* en = mask_ptr(end_null, m[1], n, "end_null");
    const uint8_t* fn = mask_ptr(first_token_null, m[2], n, "first_token_null");
    const uint8_t* tin_n = mask_ptr(tin_null, m[3], n, "tin_null");
    const uint8_t* tout_n = mask_ptr(tout_null, m[4], n, "tout_null");
    const uint8_t* sn = mask_ptr(status_null, m[5], n, "status_null");
    const uint8_t* rn = mask_ptr(replica_null, m[6], n, "replica_null");
    pau::core::RequestSlo slo;
    if (!slo_ttft.is_none()) slo.ttft = true, slo.ttft_ns = slo_ttft.cast<int64_t>();
    if (!slo_e2e.is_none()) slo.e2e = true, slo.e2e_ns = slo_e2e.cast<int64_t>();
    if (!slo_tpot.is_none()) slo.tpot = true, slo.tpot_ns = slo_tpot.cast<double>();
    pau::core::RequestRows r;
    {
        py::gil_scoped_release release;  // plain buffers kept alive by this frame
        r = pau::core::request_rows(n, arrival.data(), an, end.data(), en, first_token.data(), fn, tin.data(),
                                    tin_n, tout.data(), tout_n, status.data(), sn, rn, need_replica, slo);
    }
    Requests d;
    d.reason = to_numpy(std::move(r.reason));
    d.outcome = to_numpy(std::move(r.outcome));
    d.ttft = to_numpy(std::move(r.ttft));
    d.e2e = to_numpy(std::move(r.e2e));
    d.tpot = to_numpy(std::move(r.tpot));
    d.bad = r.bad;
    for (const auto c : r.counts) d.counts.append(c);
    d.accepted_input_tokens = r.accepted_in;
    d.accepted_output_tokens = r.accepted_out;
    d.arrival_min = r.arrival_min;
    d.arrival_max = r.arrival_max;
    d.end_max = r.any_end ? py::object(py::int_(r.end_max)) : py::object(py::none());
    return d;
}

template <typename T>
py::object first_seen_codes(const carray<T>& a, const py::object& a_null, const carray<T>& b,
                            const py::object& b_null, int64_t max_range) {
    const py::ssize_t na = a.ndim() == 1 ? a.shape(0) : -1, nb = b.ndim() == 1 ? b.shape(0) : -1;
    check_len(a, na, "a", "a");
    check_len(b, nb, "b", "b");
    carray<bool> ma, mb;
    const uint8_t* pa_ = mask_ptr(a_null, ma, na, "a_null");
    const uint8_t* pb_ = mask_ptr(b_null, mb, nb, "b_null");
    std::vector<int32_t> ca(static_cast<size_t>(na)), cb(static_cast<size_t>(nb));
    std::vector<int64_t> uniq;
    bool ok;
    {
        py::gil_scoped_release release;  // plain buffers kept alive by this frame
        ok = pau::core::first_seen_codes(a.data(), pa_, na, b.data(), pb_, nb, max_range, ca.data(), cb.data(), uniq);
    }
    if (!ok) return py::none();
    return py::make_tuple(to_numpy(std::move(ca)), to_numpy(std::move(cb)), to_numpy(std::move(uniq)));
}

}  // namespace

void bind_econ(py::module_& m) {
#if defined(__linux__) && defined(MAP_POPULATE)
    m.def("kept_memory_bytes", [] { return pau::core::KeptMappings::get().bytes(); },
          "Bytes of freed large outputs the native core keeps mapped for the next ones (csrc/core/arena.hpp).");
    m.def("release_kept_memory", [] { pau::core::KeptMappings::get().release(); },
          "Unmap the freed large outputs the native core keeps, giving the memory back to the system.");
#else
    m.def("kept_memory_bytes", [] { return size_t{0}; }, "Nothing is kept on this platform.");
    m.def("release_kept_memory", [] {}, "Nothing is kept on this platform.");
#endif
    m.attr("ATTRIB_MAX_WEIGHT") = pau::core::kAttribMaxWeight;
    m.attr("ATTRIB_MAX_ROWS") = pau::core::kAttribMaxRows;
    m.attr("ATTRIB_KEY_BITS") = pau::core::kAttribKeyBits;
    py::class_<Attribution>(m, "Attribution", "attribute_busy's result (see csrc/core/attrib.hpp).")
        .def_readonly("prefill_ns", &Attribution::prefill_ns)
        .def_readonly("decode_ns", &Attribution::decode_ns)
        .def_readonly("attributed_ns", &Attribution::attributed_ns)
        .def_readonly("idle_ns", &Attribution::idle_ns)
        .def_readonly("replica_busy_ns", &Attribution::replica_busy_ns)
        .def_readonly("replica_idle_ns", &Attribution::replica_idle_ns)
        .def_readonly("by_outcome", &Attribution::by_outcome)
        .def_readonly("overflow", &Attribution::overflow);
    py::class_<Requests>(m, "RequestRows", "request_rows' result (see csrc/core/requests.hpp).")
        .def_readonly("reason", &Requests::reason)
        .def_readonly("outcome", &Requests::outcome)
        .def_readonly("ttft", &Requests::ttft)
        .def_readonly("e2e", &Requests::e2e)
        .def_readonly("tpot", &Requests::tpot)
        .def_readonly("bad", &Requests::bad)
        .def_readonly("counts", &Requests::counts)
        .def_readonly("accepted_input_tokens", &Requests::accepted_input_tokens)
        .def_readonly("accepted_output_tokens", &Requests::accepted_output_tokens)
        .def_readonly("arrival_min", &Requests::arrival_min)
        .def_readonly("arrival_max", &Requests::arrival_max)
        .def_readonly("end_max", &Requests::end_max);
    m.def("attribute_busy", &attribute_busy, py::arg("replica"), py::arg("arrival"), py::arg("first_token"),
          py::arg("end"), py::arg("input_tokens"), py::arg("output_tokens"), py::kw_only(), py::arg("prefill_weight"),
          py::arg("decode_weight"), py::arg("busy_replica"), py::arg("busy_start"), py::arg("busy_end"),
          py::arg("n_replicas"), py::arg("outcome") = py::none(), py::arg("n_outcomes") = 1,
          py::arg("skip_outcome") = -1, py::arg("first_token_null") = py::none(), py::arg("rows_checked") = false,
          "Attribution of busy time to the request phases in flight: exact rational shares, "
          "rounded once per phase with per-replica largest remainder; returns an Attribution: "
          "prefill_ns, decode_ns, attributed_ns per request, idle_ns per busy row, replica_busy_ns and "
          "replica_idle_ns, by_outcome (attributed ns per (replica, outcome); None without outcome) and "
          "overflow, None or (replica, time_ns, kind), kind 'weight' or 'precision'. Rows whose "
          "outcome is skip_outcome (>= 0) run nowhere; first_token_null (bool mask) marks rows "
          "without a first token, like first_token == -1.");
    m.def("request_rows", &request_rows, py::arg("arrival"), py::kw_only(), py::arg("arrival_null"), py::arg("end"),
          py::arg("end_null"), py::arg("first_token"), py::arg("first_token_null"), py::arg("input_tokens"),
          py::arg("input_tokens_null"), py::arg("output_tokens"), py::arg("output_tokens_null"), py::arg("status"),
          py::arg("status_null"), py::arg("replica_null"), py::arg("need_replica"), py::arg("slo_ttft"),
          py::arg("slo_tpot"), py::arg("slo_e2e"),
          "One pass over request rows: invalid reason per row, latencies, outcome, counts and window "
          "bounds (see csrc/core/requests.hpp request_rows). Masks are bool arrays or None.");
    m.def("first_seen_codes", &first_seen_codes<int32_t>, py::arg("a"), py::arg("a_null"), py::arg("b"),
          py::arg("b_null"), py::arg("max_range"));
    m.def("first_seen_codes", &first_seen_codes<int64_t>, py::arg("a"), py::arg("a_null"), py::arg("b"),
          py::arg("b_null"), py::arg("max_range"),
          "Codes of int32 or int64 values (a, then b; same dtype) in order of first appearance, -1 for "
          "nulls (bool masks or None), as (codes_a, codes_b, uniques); None when max - min > max_range.");
}
