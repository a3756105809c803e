// pau native core: exact attribution of accelerator busy time to requests in flight.
//
// Conventions (as in sweep.hpp): time is int64 nanoseconds, intervals are half-open
// [start, end), touching intervals do not overlap, all time arithmetic is exact.
//
// A request of replica r is in prefill on [arrival, first_token) (or [arrival, end)
// when it has no first token) with weight wp * input_tokens, and in decode on
// [first_token, end) with weight wd * output_tokens; zero-length phases never run.
// Each busy interval of replica r is cut at the phase boundaries of r into pieces; a
// piece p of length len_p with phases in flight of total weight W_p gives phase i the
// exact rational share len_p * w_i / W_p (w_i = 1 for all of them when W_p == 0); a
// piece with nothing in flight is idle. Phase i's exact share is then
//
//     A_i = w_i * (F(e_i) - F(s_i)),   F(t) = sum over pieces before t of len_p / W_p
//
// (pieces of overlapping busy rows counted once per row), so one sweep over the
// replica's boundaries in time order computes every A_i without visiting the phases in
// flight per piece. Rounding happens once per phase, conservation per replica:
// phase i gets floor(A_i), and the T_r - sum(floor) ns left (T_r = busy - idle of the
// replica, exact) go one each to the phases with the largest fractional parts, ranked
// by key = ceil(frac * 2^31) (fractional parts compared at 2^-31 ns), ties to the lower
// request row, then prefill before decode. Idle per busy interval is exact.
//
// Fixed point. F is unsigned 128-bit with 64 fractional bits; each piece adds
// floor(len * B * 2^64 / W) (B busy rows covering it). The computed share A'_i =
// w_i * dF lies in (A_i - eps_i, A_i] with eps_i = max(w_i, 1) * k_i * 2^-64 ns, k_i
// the number of inexact additions while the phase ran. The sweep checks sum(eps_i) <
// 1 ns per replica (else it reports a precision overflow rather than round wrongly);
// then every phase gets floor(A_i) or ceil(A_i) (a share just below an integer in
// fixed point has the largest key and always gets its ns back) and the allocation is
// the one the exact rule gives unless an exact fractional part lies within eps_i above
// a multiple of 2^-31 ns.
//
// Limits: the total weight in flight on a busy piece <= kAttribMaxWeight (2^63 - 1),
// so that W and len * B fit in 64 bits (len * B <= the replica's busy time, checked
// < 2^63), every F < 2^127 and w * dF < 2^127.
//
// The sweep: one pass over the requests in arrival order (the input order when each
// replica's arrivals are already non-decreasing, else one sort of row indices), with
// per replica a min-heap of the next boundary of each phase in flight (a prefill that
// ends becomes its decode) and the busy intervals in start order: O(n log c) for c in
// flight, plus O(n) for the per-replica largest remainder (nth_element).
//
// This header knows nothing of Python; the bindings live in csrc/bindings/econ.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pau::core {

using u128 = unsigned __int128;

constexpr int64_t kAttribMaxWeight = std::numeric_limits<int64_t>::max();
constexpr int64_t kAttribMaxRows = (int64_t{1} << 31) - 1;
constexpr int kAttribKeyBits = 31;  // fractional parts are ranked at 2^-31 ns

enum AttribOverflow : int32_t { kOverflowWeight = 0, kOverflowPrecision = 1 };

struct AttribResult {
    std::vector<int64_t> prefill;  // ns per request attributed to its prefill
    std::vector<int64_t> decode;   // ns per request attributed to its decode
    std::vector<int64_t> idle;     // idle ns per busy interval
    // On an overflow the sweep stops (the outputs are then incomplete): the replica,
    // the time (weight: the piece's end; precision: -1) and the kind.
    int32_t overflow_replica = -1;
    int64_t overflow_ns = 0;
    int32_t overflow_kind = kOverflowWeight;
};

namespace attrib_detail {

constexpr int64_t kNone = -1;  // "no first token" in the first_token column
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// floor((hi * 2^64 + lo) / d) and the remainder, for hi < d (the quotient fits).
inline uint64_t div128(uint64_t hi, uint64_t lo, uint64_t d, uint64_t& rem) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    uint64_t q, r;
    __asm__("divq %[d]" : "=a"(q), "=d"(r) : [d] "r"(d), "a"(lo), "d"(hi) : "cc");
    rem = r;
    return q;
#else
    const u128 x = (static_cast<u128>(hi) << 64) | lo;
    rem = static_cast<uint64_t>(x % d);
    return static_cast<uint64_t>(x / d);
#endif
}

// w * f for w < 2^63 when the exact product is known to be < 2^128 (here < 2^127):
// the high word of f times w then fits in 64 bits.
inline u128 mul_64_128(uint64_t w, u128 f) {
    const uint64_t lo = static_cast<uint64_t>(f), hi = static_cast<uint64_t>(f >> 64);
    return static_cast<u128>(w) * lo + (static_cast<u128>(w * hi) << 64);
}

// a * b for a, b >= 0, saturated at 2^63: any weight above the limit is an overflow
// once it is in flight on a busy piece, whatever its exact value.
inline uint64_t sat_weight(int64_t a, int64_t b) {
    int64_t p;
    if (__builtin_mul_overflow(a, b, &p)) return uint64_t{1} << 63;
    return static_cast<uint64_t>(p);
}

// Ranking key of a phase: (frac key desc, row asc, prefill first) as one uint64 to
// sort descending; row < 2^31.
inline uint64_t pack(uint64_t frac, int32_t row, int32_t decode) {
    const uint64_t key = (frac >> (64 - kAttribKeyBits)) + ((frac << kAttribKeyBits) != 0);  // ceil
    return (key << 32) | (static_cast<uint64_t>(0x7fffffff - row) << 1) | static_cast<uint64_t>(1 - decode);
}

struct Slot {       // a phase in flight
    u128 f_start;   // F (or F0 for a zero weight) when it started
    uint64_t k_start;  // inexact additions so far when it started
    uint64_t w;
    int64_t next_end;  // a prefill's decode: its end, or kNone
    uint64_t next_w;
    int32_t row;
    int32_t decode;
};

struct Next {  // heap entry: the next boundary of a phase in flight
    int64_t t;
    uint32_t slot;
};

struct ActiveBusy {
    int64_t end;
    int64_t row;
    uint64_t i_start;
};

struct Busy {
    int64_t start;
    int64_t end;
    int64_t row;  // index into the caller's busy arrays
};

struct Replica {
    u128 F = 0;    // sum len * B / W over pieces with W > 0 (64 fractional bits)
    u128 F0 = 0;   // sum len * B / N over pieces where all weights in flight are 0
    u128 W = 0;    // total weight in flight
    u128 err = 0;  // sum of max(w, 1) * k over finished phases (units of 2^-64 ns)
    int64_t N = 0;      // phases in flight
    int64_t B = 0;      // busy rows running
    uint64_t K = 0;     // inexact additions to F / F0
    uint64_t I = 0;     // ns with nothing in flight (mod 2^64; only differences are used)
    int64_t last = kMin;
    int64_t busy_next = 0, busy_stop = 0;
    int64_t busy_total = 0, idle_total = 0, floor_sum = 0;
    int64_t cand_begin = 0, cand_end = 0;
    std::vector<Next> heap;  // min-heap on t
    std::vector<Slot> slots;
    std::vector<uint32_t> free_slots;
    std::vector<ActiveBusy> active;
};

class Sweeper {
   public:
    Sweeper(const int32_t* rep, const int64_t* arrival, const int64_t* first_token, const int64_t* end,
            const int64_t* tin, const int64_t* tout, int64_t wp, int64_t wd, int64_t n,
            std::vector<Replica>& reps, const std::vector<Busy>& busy, std::vector<uint64_t>& cand,
            AttribResult& out)
        : rep_(rep), arr_(arrival), ft_(first_token), end_(end), tin_(tin), tout_(tout), wp_(wp), wd_(wd),
          n_(n), reps_(reps), busy_(busy), cand_(cand), out_(out) {}

    // Run every request (in the order given, arrivals non-decreasing per replica),
    // then round per replica. Returns false on an overflow (recorded in out_).
    bool run(const int64_t* order) {
        for (int64_t k = 0; k < n_; ++k) {
            const int64_t i = order ? order[k] : k;
            const int32_t r = rep_[i];
            if (r < 0) continue;
            Replica& s = reps_[static_cast<size_t>(r)];
            const int64_t t = arr_[i];
            if (!advance(s, r, t) || !accumulate(s, r, t)) return false;
            admit(s, i, t);
        }
        for (size_t r = 0; r < reps_.size(); ++r) {
            Replica& s = reps_[r];
            if (!advance(s, static_cast<int32_t>(r), kMax)) return false;
            if (!round(s, static_cast<int32_t>(r))) return false;
            s = Replica{};  // free its memory now
        }
        return true;
    }

   private:
    const int32_t* rep_;
    const int64_t *arr_, *ft_, *end_, *tin_, *tout_;
    int64_t wp_, wd_, n_;
    std::vector<Replica>& reps_;
    const std::vector<Busy>& busy_;
    std::vector<uint64_t>& cand_;
    AttribResult& out_;

    // Add the piece [last, t) of replica s to its prefixes.
    bool accumulate(Replica& s, int32_t r, int64_t t) {
        if (t <= s.last) return true;
        // unsigned: `last` starts at INT64_MIN, and the wrapped length only ever
        // reaches I, whose differences stay exact
        const uint64_t len = static_cast<uint64_t>(t) - static_cast<uint64_t>(s.last);
        s.last = t;
        if (s.N == 0) {
            s.I += len;
            return true;
        }
        if (s.B == 0) return true;
        uint64_t d;
        if (s.W == 0) {
            d = static_cast<uint64_t>(s.N);
        } else {
            if (s.W > static_cast<u128>(kAttribMaxWeight)) {
                out_.overflow_replica = r;
                out_.overflow_ns = t;
                out_.overflow_kind = kOverflowWeight;
                return false;
            }
            d = static_cast<uint64_t>(s.W);
        }
        const uint64_t m = len * static_cast<uint64_t>(s.B);  // <= the replica's busy ns < 2^63
        uint64_t rem;
        const uint64_t lo = div128(m % d, 0, d, rem);
        const u128 c = (static_cast<u128>(m / d) << 64) | lo;
        (s.W == 0 ? s.F0 : s.F) += c;
        s.K += rem != 0;
        return true;
    }

    void start_phase(Replica& s, int64_t end, uint64_t w, int64_t next_end, uint64_t next_w, int32_t row,
                     int32_t decode) {
        uint32_t k;
        if (!s.free_slots.empty()) {
            k = s.free_slots.back();
            s.free_slots.pop_back();
        } else {
            k = static_cast<uint32_t>(s.slots.size());
            s.slots.emplace_back();
        }
        s.slots[k] = Slot{w ? s.F : s.F0, s.K, w, next_end, next_w, row, decode};
        s.W += w;
        ++s.N;
        push(s.heap, Next{end, k});
    }

    // The request's phase in flight from t on (its prefill, or straight its decode
    // when the prefill has zero length).
    void admit(Replica& s, int64_t i, int64_t t) {
        const int64_t ft = ft_[i], e = end_[i];
        const bool has_dec = ft != kNone;
        const int64_t pre_end = has_dec ? ft : e;
        const int32_t row = static_cast<int32_t>(i);
        if (pre_end > t) {
            start_phase(s, pre_end, sat_weight(wp_, tin_[i]), has_dec && e > ft ? e : kNone,
                        has_dec ? sat_weight(wd_, tout_[i]) : 0, row, 0);
        } else if (has_dec && e > t) {
            start_phase(s, e, sat_weight(wd_, tout_[i]), kNone, 0, row, 1);
        }
    }

    // The phase in slot k ends now: its share, rounded down, and its ranking key.
    void finish(Replica& s, Slot& p) {
        const u128 d = (p.w ? s.F : s.F0) - p.f_start;
        const u128 x = p.w ? mul_64_128(p.w, d) : d;
        const int64_t fl = static_cast<int64_t>(x >> 64);
        const uint64_t frac = static_cast<uint64_t>(x);
        (p.decode ? out_.decode : out_.prefill)[static_cast<size_t>(p.row)] = fl;
        s.floor_sum += fl;
        s.err += static_cast<u128>(p.w ? p.w : 1) * (s.K - p.k_start);
        if (frac) cand_[static_cast<size_t>(s.cand_end++)] = pack(frac, p.row, p.decode);
        s.W -= p.w;
        --s.N;
    }

    // Process every event of replica s at a time <= t, each after the piece before it.
    bool advance(Replica& s, int32_t r, int64_t t) {
        for (;;) {
            int64_t tau = kMax;
            int which = -1;
            if (!s.heap.empty()) tau = s.heap.front().t, which = 0;
            if (s.busy_next < s.busy_stop && busy_[static_cast<size_t>(s.busy_next)].start < tau)
                tau = busy_[static_cast<size_t>(s.busy_next)].start, which = 1;
            size_t ai = 0;
            for (size_t j = 0; j < s.active.size(); ++j)
                if (s.active[j].end < tau) tau = s.active[j].end, which = 2, ai = j;
            if (which < 0 || tau > t) return true;
            if (!accumulate(s, r, tau)) return false;
            if (which == 0) {
                const uint32_t k = s.heap.front().slot;
                Slot& p = s.slots[k];
                finish(s, p);
                if (p.next_end != kNone) {  // the prefill becomes its decode
                    const int64_t next_end = p.next_end;
                    p = Slot{p.next_w ? s.F : s.F0, s.K, p.next_w, kNone, 0, p.row, 1};
                    s.W += p.w;
                    ++s.N;
                    replace_top(s.heap, Next{next_end, k});
                } else {
                    pop(s.heap);
                    s.free_slots.push_back(k);
                }
            } else if (which == 1) {
                const Busy& b = busy_[static_cast<size_t>(s.busy_next++)];
                ++s.B;
                s.active.push_back(ActiveBusy{b.end, b.row, s.I});
            } else {
                const ActiveBusy a = s.active[ai];
                s.active[ai] = s.active.back();
                s.active.pop_back();
                --s.B;
                const int64_t idle = static_cast<int64_t>(s.I - a.i_start);
                out_.idle[static_cast<size_t>(a.row)] = idle;
                s.idle_total += idle;
            }
        }
    }

    // Largest remainder over the replica's phases: T - sum(floor) ns, one each.
    bool round(Replica& s, int32_t r) {
        const int64_t left = s.busy_total - s.idle_total - s.floor_sum;
        const int64_t nc = s.cand_end - s.cand_begin;
        if (s.err >> 64 || left < 0 || left > nc || left >= (int64_t{1} << kAttribKeyBits)) {
            out_.overflow_replica = r;
            out_.overflow_ns = -1;
            out_.overflow_kind = kOverflowPrecision;
            return false;
        }
        if (left == 0) return true;
        auto b = cand_.begin() + s.cand_begin, e = cand_.begin() + s.cand_end;
        if (left < nc) std::nth_element(b, b + (left - 1), e, std::greater<uint64_t>());
        for (auto it = b; it != b + left; ++it) {
            const uint64_t c = *it;
            const size_t row = static_cast<size_t>(0x7fffffff - static_cast<int64_t>((c >> 1) & 0x7fffffff));
            ++((c & 1) ? out_.prefill : out_.decode)[row];
        }
        return true;
    }

    static bool earlier(const Next& a, const Next& b) { return a.t < b.t; }

    static void push(std::vector<Next>& h, Next x) {
        size_t i = h.size();
        h.push_back(x);
        while (i > 0) {
            const size_t p = (i - 1) / 2;
            if (!earlier(x, h[p])) break;
            h[i] = h[p];
            i = p;
        }
        h[i] = x;
    }

    static void sift_down(std::vector<Next>& h, Next x) {
        const size_t n = h.size();
        size_t i = 0;
        for (;;) {
            size_t c = 2 * i + 1;
            if (c >= n) break;
            if (c + 1 < n && earlier(h[c + 1], h[c])) ++c;
            if (!earlier(h[c], x)) break;
            h[i] = h[c];
            i = c;
        }
        h[i] = x;
    }

    static void replace_top(std::vector<Next>& h, Next x) { sift_down(h, x); }

    static void pop(std::vector<Next>& h) {
        const Next x = h.back();
        h.pop_back();
        if (!h.empty()) sift_down(h, x);
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

    // Validate, count rows per replica, and check whether each replica's arrivals
    // are already in order.
    bool in_order = true;
    std::vector<int64_t> count(static_cast<size_t>(n_rep), 0);
    {
        std::vector<int64_t> last(static_cast<size_t>(n_rep), kMin);
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
            ++count[static_cast<size_t>(r)];
        }
    }
    // Phase ranking keys: at most two per request, grouped by replica.
    std::vector<uint64_t> cand(2 * static_cast<size_t>(n));
    {
        int64_t off = 0;
        for (size_t r = 0; r < static_cast<size_t>(n_rep); ++r) {
            reps[r].cand_begin = reps[r].cand_end = off;
            off += 2 * count[r];
        }
    }
    // Busy intervals grouped by replica (counting sort), each group by start;
    // zero-length ones hold nothing and are left out.
    std::vector<Busy> busy;
    {
        std::vector<int64_t> off(static_cast<size_t>(n_rep) + 1, 0);
        for (int64_t j = 0; j < nb; ++j) {
            if (b_rep[j] < 0 || b_rep[j] >= n_rep)
                throw std::invalid_argument("busy row " + std::to_string(j) + ": replica code out of range");
            if (b_end[j] < b_start[j])
                throw std::invalid_argument("busy row " + std::to_string(j) + ": end_ns before start_ns");
            if (b_end[j] == b_start[j]) continue;
            Replica& s = reps[static_cast<size_t>(b_rep[j])];
            int64_t len;
            if (__builtin_sub_overflow(b_end[j], b_start[j], &len) ||
                __builtin_add_overflow(s.busy_total, len, &s.busy_total))
                throw std::invalid_argument("busy row " + std::to_string(j) +
                                            ": the busy time of its replica sums past 2^63 - 1 ns");
            ++off[static_cast<size_t>(b_rep[j]) + 1];
        }
        for (size_t r = 0; r < static_cast<size_t>(n_rep); ++r) off[r + 1] += off[r];
        busy.resize(static_cast<size_t>(off.back()));
        std::vector<int64_t> fill(off.begin(), off.end() - 1);
        for (int64_t j = 0; j < nb; ++j)
            if (b_end[j] > b_start[j])
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
               reps, busy, cand, out);
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
