// pau native core: the checks of the request rows of pau.figures.economics.requests
// (one pass: the first reason a row is invalid, its latencies and outcome) and the codes
// of replica values in order of first appearance.
//
// This header knows nothing of Python; the bindings live in csrc/bindings/econ.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "arena.hpp"

namespace pau::core {

// One pass over the request rows of pau.figures.economics.requests: the first reason a row is
// invalid (0 = valid; codes as economics._REASONS), and for every row the latencies
// (0 where a time is missing), the
// outcome (accepted 0, late 1, failed 2, rejected 3, cancelled 4) and, over valid rows,
// the counts per outcome, accepted tokens and the window bounds. Null masks may be
// null pointers (no nulls); values under a null are never read as numbers.
// status: 0 ok, 2 error/timeout, 3 rejected, 4 cancelled, -1 unknown or null.
struct RequestRows {
    buffer<int8_t> reason, outcome;  // every element written
    buffer<int64_t> ttft, e2e;
    buffer<double> tpot;
    int64_t bad = 0;
    int64_t counts[5] = {0, 0, 0, 0, 0};
    int64_t accepted_in = 0, accepted_out = 0;
    int64_t arrival_min = 0, arrival_max = 0, end_max = 0;
    bool any_end = false;
};

struct RequestSlo {
    bool ttft = false, tpot = false, e2e = false;
    int64_t ttft_ns = 0, e2e_ns = 0;  // met when <= (integer bounds)
    double tpot_ns = 0;
};

inline RequestRows request_rows(int64_t n, const int64_t* arr, const uint8_t* arr_null, const int64_t* end,
                                const uint8_t* end_null, const int64_t* ft, const uint8_t* ft_null,
                                const int64_t* tin, const uint8_t* tin_null, const int64_t* tout,
                                const uint8_t* tout_null, const int8_t* status, const uint8_t* status_null,
                                const uint8_t* rep_null, bool need_replica, const RequestSlo& slo) {
    RequestRows o;
    const size_t un = static_cast<size_t>(n);
    o.reason.resize(un);
    o.outcome.resize(un);
    o.ttft.resize(un);
    o.e2e.resize(un);
    o.tpot.resize(un);
    int64_t amin = std::numeric_limits<int64_t>::max(), amax = std::numeric_limits<int64_t>::min();
    int64_t emax = std::numeric_limits<int64_t>::min();
    for (int64_t i = 0; i < n; ++i) {
        const bool a_ok = !(arr_null && arr_null[i]), e_ok = !(end_null && end_null[i]);
        const bool f_ok = !(ft_null && ft_null[i]);
        const bool ti_ok = !(tin_null && tin_null[i]), to_ok = !(tout_null && tout_null[i]);
        const int64_t a = a_ok ? arr[i] : 0, e = e_ok ? end[i] : 0, f = f_ok ? ft[i] : 0;
        const int64_t ti = ti_ok ? tin[i] : 0, to = to_ok ? tout[i] : 0;
        const int8_t st = status[i];
        const bool rejected = st == 3, ok = st == 0;
        int8_t why = 0;
        if (!a_ok) why = 1;
        else if (a < 0) why = 2;
        else if (status_null && status_null[i]) why = 3;
        else if (st < 0) why = 4;
        else if (!e_ok && !rejected) why = 5;
        else if (e_ok && e < a) why = 6;
        else if (!f_ok && ok) why = 7;
        else if (f_ok && e_ok && (f < a || f > e)) why = 8;
        else if (ti < 0 || to < 0 || (ok && (!ti_ok || !to_ok))) why = 9;
        else if (need_replica && rep_null && rep_null[i] && !rejected) why = 10;
        const size_t k = static_cast<size_t>(i);
        o.reason[k] = why;
        if (why) {
            ++o.bad;
            o.ttft[k] = o.e2e[k] = 0;
            o.tpot[k] = 0;
            o.outcome[k] = 0;
            continue;
        }
        // valid: 0 <= a, and a <= f <= e where present, so no difference overflows
        const int64_t ttft = f_ok ? f - a : 0, e2e = e_ok ? e - a : 0;
        const double tpot = (f_ok && e_ok && to > 1) ? static_cast<double>(e2e - ttft) / static_cast<double>(to - 1) : 0.0;
        o.ttft[k] = ttft;
        o.e2e[k] = e2e;
        o.tpot[k] = tpot;
        int8_t out = st;
        if (ok && ((slo.ttft && f_ok && ttft > slo.ttft_ns) || (slo.e2e && e_ok && e2e > slo.e2e_ns) ||
                   (slo.tpot && f_ok && e_ok && !(tpot <= slo.tpot_ns))))
            out = 1;
        o.outcome[k] = out;
        ++o.counts[out];
        if (out == 0) {
            o.accepted_in += ti;
            o.accepted_out += to;
        }
        amin = std::min(amin, a);
        amax = std::max(amax, a);
        if (e_ok) {
            emax = std::max(emax, e);
            o.any_end = true;
        }
    }
    if (o.bad < n) {
        o.arrival_min = amin;
        o.arrival_max = amax;
    }
    o.end_max = o.any_end ? emax : 0;
    return o;
}

// Codes of integer values in order of first appearance over a then b (as Arrow's
// dictionary_encode of their concatenation), -1 for nulls, through a direct table
// over [min, max]. Returns false, untouched, when that range exceeds max_range.
template <typename T>
inline bool first_seen_codes(const T* a, const uint8_t* a_null, int64_t na, const T* b, const uint8_t* b_null,
                             int64_t nb, int64_t max_range, int32_t* ca, int32_t* cb, std::vector<int64_t>& uniq) {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    auto bounds = [&lo, &hi](const T* v, const uint8_t* nul, int64_t n) {
        T l = std::numeric_limits<T>::max(), h = std::numeric_limits<T>::min();  // locals: vectorizable
        bool any = false;
        if (nul) {
            for (int64_t i = 0; i < n; ++i)
                if (!nul[i]) l = std::min(l, v[i]), h = std::max(h, v[i]), any = true;
        } else {
            for (int64_t i = 0; i < n; ++i) l = std::min(l, v[i]), h = std::max(h, v[i]);
            any = n > 0;
        }
        if (any) lo = std::min<int64_t>(lo, l), hi = std::max<int64_t>(hi, h);
    };
    bounds(a, a_null, na);
    bounds(b, b_null, nb);
    if (lo > hi) lo = hi = 0;  // all null
    if (static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) > static_cast<uint64_t>(max_range)) return false;
    std::vector<int32_t> slot(static_cast<size_t>(hi - lo) + 1, -1);
    auto code = [&](const T* v, const uint8_t* nul, int64_t n, int32_t* out) {
        for (int64_t i = 0; i < n; ++i) {
            if (nul && nul[i]) {
                out[i] = -1;
                continue;
            }
            int32_t& c = slot[static_cast<size_t>(static_cast<int64_t>(v[i]) - lo)];
            if (c < 0) {
                c = static_cast<int32_t>(uniq.size());
                uniq.push_back(v[i]);
            }
            out[i] = c;
        }
    };
    code(a, a_null, na, ca);
    code(b, b_null, nb, cb);
    return true;
}

}  // namespace pau::core
