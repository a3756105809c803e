// pau native core: exact attribution of accelerator busy time to requests in flight.
//
// Conventions (as in sweep.hpp): time is int64 nanoseconds, intervals are half-open
// [start, end), touching intervals do not overlap, all arithmetic is exact integer.
//
// A request of replica r is in prefill on [arrival, first_token) (or [arrival, end)
// when it has no first token) with weight wp * input_tokens, and in decode on
// [first_token, end) with weight wd * output_tokens. Every busy interval of replica r
// is attributed on its own: it is cut at every phase boundary (start or end, zero-
// length phases included) of replica r inside it, and each piece of length L goes to
// the phases in flight by largest remainder: phase i gets floor(L * w_i / S), and
// the L - sum(floor) ns left go one each to the largest remainders L * w_i mod S,
// ties to the lower request row. When every phase in flight has weight 0 they share
// equally (w_i = 1). A piece with no phase in flight is idle. So, per busy interval,
// sum(attributed) + idle == end - start exactly.
//
// The sweep: one pass over the requests in arrival order (the input order when each
// replica's arrivals are already non-decreasing, else one sort of row indices), with
// per replica a min-heap of the phases in flight keyed by end time (a prefill that
// ends becomes its decode) and the busy intervals in start order. No per-request
// allocation; the work is O(n log c + pieces * c) for c phases in flight.
//
// This header knows nothing of Python; the bindings live in csrc/bindings/econ.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pau::core {

// With S <= kAttribMaxWeight every product r * w (r < S, w <= S) fits in int64, and
// so does the tie-break key rem * 2^31 + (2^31 - 1 - row) (rem < S < 2^32, row < 2^31).
constexpr int64_t kAttribMaxWeight = 3'037'000'499;
constexpr int64_t kAttribMaxRows = (int64_t{1} << 31) - 1;

struct AttribResult {
    std::vector<int64_t> prefill;  // ns per request attributed to its prefill
    std::vector<int64_t> decode;   // ns per request attributed to its decode
    std::vector<int64_t> idle;     // idle ns per busy interval
    // When a piece's total weight in flight exceeded kAttribMaxWeight the sweep
    // stops (the outputs are then incomplete): the replica and the piece's end.
    int32_t overflow_replica = -1;
    int64_t overflow_ns = 0;
};

namespace attrib_detail {

constexpr int64_t kNone = -1;  // "no first token" in the first_token column

// a * b saturated at kAttribMaxWeight + 1 (both >= 0): any weight above the limit
// is an overflow once it is in flight, whatever its exact value.
inline int64_t sat_weight(int64_t a, int64_t b) {
    int64_t p;
    if (__builtin_mul_overflow(a, b, &p) || p > kAttribMaxWeight) return kAttribMaxWeight + 1;
    return p;
}

struct Phase {
    int64_t end;
    int64_t w;
    int64_t attr;      // ns attributed so far
    int64_t next_end;  // a prefill's decode: its end, or kNone (no decode / is decode)
    int64_t next_w;
    int32_t row;
    int32_t decode;    // 0 prefill, 1 decode
};

struct EndLater {
    bool operator()(const Phase& a, const Phase& b) const { return a.end > b.end; }
};

struct Busy {
    int64_t start;
    int64_t end;
    int64_t row;  // index into the caller's busy arrays
};

struct Replica {
    std::vector<Phase> heap;  // phases in flight, min-heap on end
    int64_t wsum = 0;         // sum of their (saturated) weights
    int64_t last_cut = std::numeric_limits<int64_t>::min();
    int64_t busy_next = 0;    // next busy interval (index into the replica's slice)
    int64_t busy_stop = 0;
    std::vector<Busy> active;  // busy intervals running
};

// Exact floor(x / d) for 0 <= x < 2^63 and one divisor d > 0 used many times:
// a multiply by floor((2^64 - 1) / d) gives q or q - 1, then one correction.
struct Divider {
    uint64_t d, m;
    explicit Divider(uint64_t d_) : d(d_), m(~uint64_t{0} / d_) {}
    inline void divmod(uint64_t x, uint64_t& q, uint64_t& r) const {
        q = static_cast<uint64_t>((static_cast<unsigned __int128>(x) * m) >> 64);
        r = x - q * d;
        while (r >= d) {
            ++q;
            r -= d;
        }
    }
};

// Few in flight (the usual case): bonus[i] = 1 for the `left` largest of the na
// distinct keys, by counting for each key the larger ones. Branch-free and cheaper
// than a selection at this size; AVX2 when the CPU has it (chosen at load time, so
// the default build still runs on any x86-64), plain code elsewhere.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && !defined(PAU_NO_CLONES)
__attribute__((target_clones("avx2", "default")))
#endif
inline void count_bonus(const int64_t* key, int64_t* bonus, size_t na, int64_t left) {
    // key is padded with -1 up to a multiple of 4 (keys are >= 0): no scalar tail
    const size_t m = (na + 3) & ~size_t{3};
    for (size_t i = 0; i < na; ++i) {
        const int64_t ki = key[i];
        int64_t above = 0;
        for (size_t j = 0; j < m; ++j) above += key[j] > ki;
        bonus[i] = above < left;
    }
}

class Sweeper {
   public:
    Sweeper(const int32_t* rep, const int64_t* arrival, const int64_t* first_token, const int64_t* end,
            const int64_t* tin, const int64_t* tout, int64_t wp, int64_t wd, int64_t n,
            std::vector<Replica>& reps, std::vector<Busy>& busy, AttribResult& out)
        : rep_(rep), arr_(arrival), ft_(first_token), end_(end), tin_(tin), tout_(tout), wp_(wp), wd_(wd),
          n_(n), reps_(reps), busy_(busy), out_(out) {}

    // Run every request (in the order given, arrivals non-decreasing per replica).
    // Returns false on a weight overflow.
    bool run(const int64_t* order) {
        for (int64_t k = 0; k < n_; ++k) {
            const int64_t i = order ? order[k] : k;
            const int32_t r = rep_[i];
            if (r < 0) continue;
            Replica& s = reps_[static_cast<size_t>(r)];
            const int64_t t = arr_[i];
            if (!advance(s, r, t, false)) return false;
            if (!process(s, r, t, true)) return false;
            admit(s, i, t);
        }
        for (size_t r = 0; r < reps_.size(); ++r)
            if (!advance(reps_[r], static_cast<int32_t>(r), 0, true)) return false;
        return true;
    }

   private:
    const int32_t* rep_;
    const int64_t *arr_, *ft_, *end_, *tin_, *tout_;
    int64_t wp_, wd_, n_;
    std::vector<Replica>& reps_;
    std::vector<Busy>& busy_;
    AttribResult& out_;
    std::vector<int64_t> key_, sel_, bonus_;

    // The request's phase in flight from t on (its prefill, or straight its decode
    // when the prefill has zero length); zero-length phases never run.
    void admit(Replica& s, int64_t i, int64_t t) {
        const int64_t ft = ft_[i], e = end_[i];
        const bool has_dec = ft != kNone;
        const int64_t pre_end = has_dec ? ft : e;
        Phase p{pre_end, sat_weight(wp_, tin_[i]), 0, has_dec ? e : kNone,
                has_dec ? sat_weight(wd_, tout_[i]) : 0, static_cast<int32_t>(i), 0};
        if (pre_end <= t) {
            if (!has_dec || e <= t) return;
            p = Phase{e, p.next_w, 0, kNone, 0, static_cast<int32_t>(i), 1};
        }
        s.heap.push_back(p);
        std::push_heap(s.heap.begin(), s.heap.end(), EndLater{});
        s.wsum += p.w;
    }

    // Process every event time of replica s before t (all of them when `all`).
    bool advance(Replica& s, int32_t r, int64_t t, bool all) {
        for (;;) {
            int64_t tau = std::numeric_limits<int64_t>::max();
            bool any = false;
            if (!s.heap.empty()) tau = s.heap.front().end, any = true;
            if (s.busy_next < s.busy_stop) tau = std::min(tau, busy_[static_cast<size_t>(s.busy_next)].start), any = true;
            for (const Busy& b : s.active) tau = std::min(tau, b.end), any = true;
            if (!any || (!all && tau >= t)) return true;
            const bool cut = !s.heap.empty() && s.heap.front().end == tau;
            if (!process(s, r, tau, cut)) return false;
        }
    }

    // Everything that happens at time t on replica s (arrivals excepted): flush the
    // busy runs that end here, then retire phases and busy intervals ending at t,
    // then start the busy intervals starting at t.
    bool process(Replica& s, int32_t r, int64_t t, bool cut) {
        for (size_t j = 0; j < s.active.size(); ++j) {
            Busy& b = s.active[j];
            if (!(cut || b.end <= t)) continue;
            const int64_t len = t - std::max(b.start, s.last_cut);
            if (len <= 0) continue;
            if (s.heap.empty()) {
                out_.idle[static_cast<size_t>(b.row)] += len;
            } else if (!share(s, len)) {
                out_.overflow_replica = r;
                out_.overflow_ns = t;
                return false;
            }
        }
        if (cut) s.last_cut = t;
        while (!s.heap.empty() && s.heap.front().end <= t) {
            std::pop_heap(s.heap.begin(), s.heap.end(), EndLater{});
            Phase p = s.heap.back();
            s.heap.pop_back();
            s.wsum -= p.w;
            (p.decode ? out_.decode : out_.prefill)[static_cast<size_t>(p.row)] = p.attr;
            if (p.next_end != kNone && p.next_end > t) {
                Phase d{p.next_end, p.next_w, 0, kNone, 0, p.row, 1};
                s.heap.push_back(d);
                std::push_heap(s.heap.begin(), s.heap.end(), EndLater{});
                s.wsum += d.w;
            }
        }
        for (size_t j = 0; j < s.active.size();) {
            if (s.active[j].end <= t) {
                s.active[j] = s.active.back();
                s.active.pop_back();
            } else {
                ++j;
            }
        }
        while (s.busy_next < s.busy_stop && busy_[static_cast<size_t>(s.busy_next)].start <= t) {
            const Busy& b = busy_[static_cast<size_t>(s.busy_next++)];
            if (b.end > t) s.active.push_back(b);
        }
        return true;
    }

    // Largest-remainder split of `len` ns among the phases in flight.
    bool share(Replica& s, int64_t len) {
        std::vector<Phase>& h = s.heap;
        const size_t na = h.size();
        if (s.wsum > kAttribMaxWeight) return false;
        const bool equal = s.wsum == 0;
        const int64_t S = equal ? static_cast<int64_t>(na) : s.wsum;
        const int64_t q = len / S, rr = len % S;
        const Divider div(static_cast<uint64_t>(S));
        if (key_.size() < na + 4) key_.resize(na + 4), sel_.resize(na + 4), bonus_.resize(na + 4);
        int64_t given = 0;
        for (size_t i = 0; i < na; ++i) {
            const int64_t w = equal ? 1 : h[i].w;
            uint64_t pq, prem;
            div.divmod(static_cast<uint64_t>(rr * w), pq, prem);
            const int64_t sh = q * w + static_cast<int64_t>(pq);
            h[i].attr += sh;
            given += sh;
            // larger remainder first, then lower request row
            key_[i] = static_cast<int64_t>(prem) * 2147483648LL + (2147483647LL - h[i].row);
        }
        const int64_t left = len - given;  // < na
        if (left <= 0) return true;
        int64_t thr;
        if (na <= 64) {
            for (size_t i = na; i < ((na + 3) & ~size_t{3}); ++i) key_[i] = -1;
            count_bonus(key_.data(), bonus_.data(), na, left);
            for (size_t i = 0; i < na; ++i) h[i].attr += bonus_[i];
            return true;
        }
        if (left == 1) {
            thr = *std::max_element(key_.begin(), key_.begin() + static_cast<std::ptrdiff_t>(na));
        } else {
            std::copy(key_.begin(), key_.begin() + static_cast<std::ptrdiff_t>(na), sel_.begin());
            auto kth = sel_.begin() + (left - 1);
            std::nth_element(sel_.begin(), kth, sel_.begin() + static_cast<std::ptrdiff_t>(na),
                             std::greater<int64_t>());
            thr = *kth;
        }
        // keys are distinct (one phase per request row in flight): exactly `left` pass
        for (size_t i = 0; i < na; ++i) h[i].attr += key_[i] >= thr;
        return true;
    }
};

}  // namespace attrib_detail

// Attribute the busy intervals (b_rep, b_start, b_end; nb rows) of each replica to
// the phases of its requests (rep, arrival, first_token, end, tin, tout; n rows).
// rep[i] < 0: request i ran nowhere (rejected, or never ended) and gets nothing.
// first_token[i] == -1: no first token (prefill until end). Replica codes are in
// [0, n_rep). Throws std::invalid_argument on inconsistent input (row named).
inline AttribResult attribute_busy(const int32_t* rep, const int64_t* arrival, const int64_t* first_token,
                                   const int64_t* end, const int64_t* tin, const int64_t* tout, int64_t wp,
                                   int64_t wd, int64_t n, const int32_t* b_rep, const int64_t* b_start,
                                   const int64_t* b_end, int64_t nb, int32_t n_rep) {
    using namespace attrib_detail;
    if (n > kAttribMaxRows)
        throw std::invalid_argument("requests: at most " + std::to_string(kAttribMaxRows) + " rows at once");
    if (wp < 0 || wd < 0 || n_rep < 0) throw std::invalid_argument("weights and replica count must be >= 0");
    AttribResult out;
    out.prefill.assign(static_cast<size_t>(n), 0);
    out.decode.assign(static_cast<size_t>(n), 0);
    out.idle.assign(static_cast<size_t>(nb), 0);
    std::vector<Replica> reps(static_cast<size_t>(n_rep));

    // Validate, and check whether each replica's arrivals are already in order.
    bool in_order = true;
    {
        std::vector<int64_t> last(static_cast<size_t>(n_rep), std::numeric_limits<int64_t>::min());
        for (int64_t i = 0; i < n; ++i) {
            const int32_t r = rep[i];
            if (r < 0) continue;
            const int64_t a = arrival[i], ft = first_token[i], e = end[i];
            if (r >= n_rep) throw std::invalid_argument("request row " + std::to_string(i) + ": replica code out of range");
            if (a < 0 || e < a || (ft != kNone && (ft < a || ft > e)) || tin[i] < 0 || tout[i] < 0)
                throw std::invalid_argument("request row " + std::to_string(i) +
                                            ": needs 0 <= arrival <= first_token <= end and tokens >= 0");
            int64_t& l = last[static_cast<size_t>(r)];
            if (a < l) in_order = false;
            l = a;
        }
    }
    // Busy intervals grouped by replica (counting sort), each group by start.
    std::vector<Busy> busy(static_cast<size_t>(nb));
    {
        std::vector<int64_t> off(static_cast<size_t>(n_rep) + 1, 0);
        for (int64_t j = 0; j < nb; ++j) {
            if (b_rep[j] < 0 || b_rep[j] >= n_rep)
                throw std::invalid_argument("busy row " + std::to_string(j) + ": replica code out of range");
            if (b_end[j] < b_start[j])
                throw std::invalid_argument("busy row " + std::to_string(j) + ": end_ns before start_ns");
            ++off[static_cast<size_t>(b_rep[j]) + 1];
        }
        for (size_t r = 0; r < static_cast<size_t>(n_rep); ++r) off[r + 1] += off[r];
        std::vector<int64_t> fill(off.begin(), off.end() - 1);
        for (int64_t j = 0; j < nb; ++j)
            busy[static_cast<size_t>(fill[static_cast<size_t>(b_rep[j])]++)] = Busy{b_start[j], b_end[j], j};
        auto by_start = [](const Busy& x, const Busy& y) { return x.start < y.start; };
        for (size_t r = 0; r < static_cast<size_t>(n_rep); ++r) {
            auto b = busy.begin() + off[r], e = busy.begin() + off[r + 1];
            if (!std::is_sorted(b, e, by_start)) std::sort(b, e, by_start);
            reps[r].busy_next = off[r];
            reps[r].busy_stop = off[r + 1];
        }
    }
    std::vector<int64_t> order;
    if (!in_order) {
        std::vector<std::pair<int64_t, int64_t>> keyed;
        keyed.reserve(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i)
            if (rep[i] >= 0) keyed.emplace_back(arrival[i], i);
        std::sort(keyed.begin(), keyed.end());
        order.resize(keyed.size());
        for (size_t k = 0; k < keyed.size(); ++k) order[k] = keyed[k].second;
    }
    Sweeper sw(rep, arrival, first_token, end, tin, tout, wp, wd, in_order ? n : static_cast<int64_t>(order.size()),
               reps, busy, out);
    sw.run(in_order ? nullptr : order.data());
    return out;
}

// Exact int64 sums of value by key: out[k * n_sub + sub[i]] += value[i] for
// k = key[i] (sub absent: out[k]); rows with key < 0 are skipped. Throws on a key or
// sub key out of range.
template <typename SubT>
inline std::vector<int64_t> sum_by_key(const int32_t* key, const int64_t* value, int64_t n, int32_t n_keys,
                                       const SubT* sub, int32_t n_sub) {
    if (n_keys < 0 || n_sub < 1) throw std::invalid_argument("n_keys must be >= 0 and n_sub >= 1");
    std::vector<int64_t> out(static_cast<size_t>(n_keys) * static_cast<size_t>(n_sub), 0);
    for (int64_t i = 0; i < n; ++i) {
        const int32_t k = key[i];
        if (k < 0) continue;
        const int64_t j = sub ? static_cast<int64_t>(sub[i]) : 0;
        if (k >= n_keys || j < 0 || j >= n_sub)
            throw std::invalid_argument("key at row " + std::to_string(i) + " out of range");
        out[static_cast<size_t>(k) * static_cast<size_t>(n_sub) + static_cast<size_t>(j)] += value[i];
    }
    return out;
}

}  // namespace pau::core
