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
// (pieces of overlapping busy rows counted once per row; a piece with one phase in
// flight goes whole to it, through an exact integer prefix G), so one sweep over the
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
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "arena.hpp"
#include "int128.hpp"

namespace pau::core {

constexpr int64_t kAttribMaxWeight = std::numeric_limits<int64_t>::max();
constexpr int64_t kAttribMaxRows = (int64_t{1} << 31) - 1;
constexpr int kAttribKeyBits = 31;  // fractional parts are ranked at 2^-31 ns

enum AttribOverflow : int32_t { kOverflowWeight = 0, kOverflowPrecision = 1 };

struct AttribResult {
    buffer<int64_t> prefill;  // ns per request attributed to its prefill
    buffer<int64_t> decode;   // ns per request attributed to its decode
    buffer<int64_t> total;    // prefill + decode per request
    buffer<int64_t> idle;          // idle ns per busy interval
    std::vector<int64_t> rep_busy;     // per replica: busy ns (overlapping rows counted each)
    std::vector<int64_t> rep_idle;     // per replica: idle ns
    std::vector<int64_t> rep_outcome;  // per replica and outcome (n_rep x n_out): attributed ns
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

// a * b for a, b >= 0, saturated at 2^63: any weight above the limit is an overflow
// once it is in flight on a busy piece, whatever its exact value.
inline uint64_t sat_weight(int64_t a, int64_t b) {
    int64_t p;
    if (__builtin_mul_overflow(a, b, &p)) return uint64_t{1} << 63;
    return static_cast<uint64_t>(p);
}

// Ranking key of a fractional part: ceil(frac * 2^31), in [0, 2^31].
inline uint32_t frac_key(uint64_t frac) {
    return static_cast<uint32_t>((frac >> (64 - kAttribKeyBits)) + ((frac << kAttribKeyBits) != 0));
}

struct Slot {       // a phase in flight
    U128 f_start;   // F (or F0 for a zero weight) when it started
    uint64_t g_start;  // G when it started
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

// The caller's busy rows, grouped by replica and by start within a group: the
// k-th is row perm[k], or row k when the input already is in that order.
struct BusyRows {
    const int64_t* start;
    const int64_t* end;
    std::vector<int64_t> perm;
    int64_t row(int64_t k) const { return perm.empty() ? k : perm[static_cast<size_t>(k)]; }
};

struct Replica {
    U128 F;        // sum len * B / W over pieces with W > 0 (64 fractional bits)
    U128 F0;       // sum len * B / N over pieces where all weights in flight are 0
    U128 W;        // total weight in flight
    U128 err;      // sum of max(w, 1) * k over finished phases (units of 2^-64 ns)
    uint64_t G = 0;     // sum len * B over pieces with one phase in flight (exact ns)
    int64_t N = 0;      // phases in flight
    int64_t B = 0;      // busy rows running
    uint64_t K = 0;     // inexact additions to F / F0
    uint64_t I = 0;     // ns with nothing in flight (mod 2^64; only differences are used)
    int64_t last = kMin;
    int64_t busy_next = 0, busy_stop = 0;
    int64_t busy_start = kMax;  // start of busy row busy_next (kMax: none left)
    int64_t busy_ev = kMax;     // min(busy_start, the ends of the running busy rows)
    int64_t busy_total = 0, idle_total = 0, floor_sum = 0;
    int64_t cand_begin = 0, cand_end = 0;
    uint32_t thr = 0xffffffffu;  // after rounding: keys above get 1 ns, keys equal while quota lasts
    int64_t quota = 0;
    std::vector<Next> heap;  // min-heap on t
    std::vector<Slot> slots;
    std::vector<uint32_t> free_slots;
    std::vector<ActiveBusy> active;
};

class Sweeper {
   public:
    Sweeper(const int32_t* rep, const int64_t* arrival, const int64_t* first_token, const int64_t* end,
            const int64_t* tin, const int64_t* tout, int64_t wp, int64_t wd, int64_t n,
            std::vector<Replica>& reps, const BusyRows& busy, buffer<uint32_t>& cand,
            const uint8_t* ft_null, const int8_t* outcome, int32_t skip_outcome, AttribResult& out)
        : rep_(rep), arr_(arrival), ft_(first_token), end_(end), tin_(tin), tout_(tout), wp_(wp), wd_(wd),
          n_(n), reps_(reps), busy_(busy), cand_(cand), ftn_(ft_null), oc_(outcome), skip_(skip_outcome),
          out_(out) {}

    // Replica code of row i; -1 when it runs nowhere (its outcome is the skipped one).
    int32_t rep_of(int64_t i) const { return (oc_ && oc_[i] == skip_) ? -1 : rep_[i]; }
    // First token of row i; kNone when it has none.
    int64_t ft_of(int64_t i) const { return (ftn_ && ftn_[i]) ? kNone : ft_[i]; }

    // Run every request (in the order given, arrivals non-decreasing per replica),
    // then round per replica. Returns false on an overflow (recorded in out_).
    bool run(const int64_t* order, const int8_t* outcome, int32_t n_out) {
        // Requests of many replicas interleave, and jumping between their states
        // costs a cache miss per touch (measured: 40 % of the sweep). So take the rows
        // in chunks and, within a chunk, the rows of each replica together (stable: a
        // replica's arrivals stay in order; replicas are independent).
        constexpr int64_t kChunk = 32768;
        const size_t n_rep = reps_.size();
        const bool counting = n_rep <= static_cast<size_t>(4 * kChunk);
        std::vector<int64_t> rows(static_cast<size_t>(std::min(n_, kChunk))), grouped(rows.size());
        std::vector<int32_t> grouped_rep(rows.size());  // the replica of grouped[j], read in sequence
        std::vector<int32_t> first(counting ? n_rep + 1 : 0);
        std::vector<std::pair<int32_t, int64_t>> keyed;
        for (int64_t c0 = 0; c0 < n_; c0 += kChunk) {
            const int64_t c1 = std::min(n_, c0 + kChunk);
            size_t m = 0;
            if (counting) {
                std::fill(first.begin(), first.end(), 0);
                for (int64_t k = c0; k < c1; ++k) {
                    const int64_t i = order ? order[k] : k;
                    const int32_t r = rep_of(i);
                    if (r < 0) continue;
                    rows[m++] = i;
                    ++first[static_cast<size_t>(r) + 1];
                }
                for (size_t r = 0; r < n_rep; ++r) first[r + 1] += first[r];
                for (size_t j = 0; j < m; ++j) {
                    const int32_t r = rep_[rows[j]];  // kept rows: code as is
                    const size_t at = static_cast<size_t>(first[static_cast<size_t>(r)]++);
                    grouped[at] = rows[j];
                    grouped_rep[at] = r;
                }
            } else {
                keyed.clear();
                for (int64_t k = c0; k < c1; ++k) {
                    const int64_t i = order ? order[k] : k;
                    if (rep_of(i) >= 0) keyed.emplace_back(rep_[i], k);
                }
                std::sort(keyed.begin(), keyed.end());
                m = keyed.size();
                for (size_t j = 0; j < m; ++j) {
                    grouped[j] = order ? order[keyed[j].second] : keyed[j].second;
                    grouped_rep[j] = keyed[j].first;
                }
            }
            for (size_t j = 0; j < m; ++j) {
                // the next replica's state, ahead of the switch to it: its struct
                // first, then (once that is in) its heap, slots and next busy row
                if (j + 16 < m && grouped_rep[j + 16] != grouped_rep[j + 15]) {
                    const char* p = reinterpret_cast<const char*>(&reps_[static_cast<size_t>(grouped_rep[j + 16])]);
                    for (size_t o = 0; o < sizeof(Replica); o += 64) __builtin_prefetch(p + o);
                }
                if (j + 4 < m && grouped_rep[j + 4] != grouped_rep[j + 3]) {
                    const Replica& t = reps_[static_cast<size_t>(grouped_rep[j + 4])];
                    __builtin_prefetch(t.heap.data());
                    const char* sp = reinterpret_cast<const char*>(t.slots.data());
                    const size_t sb = std::min<size_t>(t.slots.size() * sizeof(Slot), 1024);
                    for (size_t o = 0; o < sb; o += 64) __builtin_prefetch(sp + o);
                    if (t.busy_next < t.busy_stop) __builtin_prefetch(busy_.start + busy_.row(t.busy_next));
                    __builtin_prefetch(&cand_[static_cast<size_t>(t.cand_end)], 1);
                }
                if (j + 8 < m) {  // grouped rows are strided: fetch a few ahead
                    const int64_t a = grouped[j + 8];
                    __builtin_prefetch(arr_ + a);
                    __builtin_prefetch(ft_ + a);
                    __builtin_prefetch(end_ + a);
                    __builtin_prefetch(tin_ + a);
                    __builtin_prefetch(tout_ + a);
                    if (ftn_) __builtin_prefetch(ftn_ + a);
                    // admit() writes the row's outputs
                    __builtin_prefetch(out_.prefill.data() + a, 1);
                    __builtin_prefetch(out_.decode.data() + a, 1);
                    __builtin_prefetch(out_.total.data() + a, 1);
                }
                const int64_t i = grouped[j];
                const int32_t r = grouped_rep[j];
                Replica& s = reps_[static_cast<size_t>(r)];
                const int64_t t = arr_[i];
                if (!advance(s, r, t) || !accumulate(s, r, t)) return false;
                admit(s, i, t);
            }
        }
        for (size_t r = 0; r < reps_.size(); ++r) {
            Replica& s = reps_[r];
            if (!advance(s, static_cast<int32_t>(r), kMax)) return false;
            if (!round(s, static_cast<int32_t>(r))) return false;
            out_.rep_busy[r] = s.busy_total;
            out_.rep_idle[r] = s.idle_total;
            const uint32_t thr = s.thr;
            const int64_t quota = s.quota;
            s = Replica{};  // free its memory now
            s.thr = thr;
            s.quota = quota;
        }
        finish_rows(outcome, n_out);
        return true;
    }

   private:
    const int32_t* rep_;
    const int64_t *arr_, *ft_, *end_, *tin_, *tout_;
    int64_t wp_, wd_, n_;
    std::vector<Replica>& reps_;
    const BusyRows& busy_;
    buffer<uint32_t>& cand_;
    std::vector<uint32_t> sel_;  // round(): the keys of the threshold's bucket
    const uint8_t* ftn_;
    const int8_t* oc_;
    int32_t skip_;
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
        const uint64_t m = len * static_cast<uint64_t>(s.B);  // <= the replica's busy ns < 2^63
        if (s.N == 1) {  // the one phase in flight takes the whole piece: no division
            s.G += m;
            return true;
        }
        uint64_t d;
        const bool equal = (s.W.lo | s.W.hi) == 0;
        if (equal) {
            d = static_cast<uint64_t>(s.N);
        } else {
            if (s.W.hi || s.W.lo > static_cast<uint64_t>(kAttribMaxWeight)) {
                out_.overflow_replica = r;
                out_.overflow_ns = t;
                out_.overflow_kind = kOverflowWeight;
                return false;
            }
            d = s.W.lo;
        }
        uint64_t rem;
        const uint64_t lo = div128(m % d, 0, d, rem);
        const u128 c = (static_cast<u128>(m / d) << 64) | lo;
        U128& f = equal ? s.F0 : s.F;
        f.set(f.get() + c);
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
        Slot& p = s.slots[k];
        p.f_start.copy_from(w ? s.F : s.F0);
        p.g_start = s.G;
        p.k_start = s.K;
        p.w = w;
        p.next_end = next_end;
        p.next_w = next_w;
        p.row = row;
        p.decode = decode;
        s.W.set(s.W.get() + w);
        ++s.N;
        push(s.heap, end, k);
    }

    // The request's phase in flight from t on (its prefill, or straight its decode
    // when the prefill has zero length).
    void admit(Replica& s, int64_t i, int64_t t) {
        const int64_t ft = ft_of(i), e = end_[i];
        const bool has_dec = ft != kNone;
        const size_t k = static_cast<size_t>(i);
        out_.prefill[k] = out_.decode[k] = out_.total[k] = 0;  // total holds the keys until finish_rows
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
        const u128 d = (p.w ? s.F : s.F0).get() - p.f_start.get();
        // + the pieces it had alone, exact: x <= its exact share < 2^127
        const u128 x = (p.w ? mul_64_128(p.w, d) : d) + (static_cast<u128>(s.G - p.g_start) << 64);
        const int64_t fl = static_cast<int64_t>(x >> 64);
        const uint32_t key = frac_key(static_cast<uint64_t>(x));
        const size_t row = static_cast<size_t>(p.row);
        (p.decode ? out_.decode : out_.prefill)[row] = fl;
        // both keys of a row wait in its `total` slot until finish_rows: a plain 4-byte
        // store into its low (prefill) or high (decode) half, no read of a cold line
        std::memcpy(reinterpret_cast<char*>(out_.total.data() + row) + (p.decode ? 4 : 0), &key, 4);
        s.floor_sum += fl;
        s.err.set(s.err.get() + static_cast<u128>(p.w ? p.w : 1) * (s.K - p.k_start));
        if (key) cand_[static_cast<size_t>(s.cand_end++)] = key;
        s.W.set(s.W.get() - p.w);
        --s.N;
    }

    // Process every event of replica s at a time <= t, each after the piece before it.
    bool advance(Replica& s, int32_t r, int64_t t) {
        for (;;) {
            // the next event: a phase boundary (first at a tie), else a busy row's start
            // or end (s.busy_ev, the earliest of them; starts first at a tie)
            const bool phase = !s.heap.empty() && !(s.busy_ev < s.heap.front().t);
            const int64_t tau = phase ? s.heap.front().t : s.busy_ev;
            // kMax as busy_ev is also "no busy event left"; a busy row may end at kMax
            if (tau > t || (!phase && tau == kMax && s.active.empty() && s.busy_next >= s.busy_stop)) return true;
            if (!accumulate(s, r, tau)) return false;
            if (phase) {
                const uint32_t k = s.heap.front().slot;
                Slot& p = s.slots[k];
                finish(s, p);
                if (p.next_end != kNone) {  // the prefill becomes its decode
                    const int64_t next_end = p.next_end;
                    p.w = p.next_w;
                    p.f_start.copy_from(p.w ? s.F : s.F0);
                    p.g_start = s.G;
                    p.k_start = s.K;
                    p.next_end = kNone;
                    p.decode = 1;
                    s.W.set(s.W.get() + p.w);
                    ++s.N;
                    sift_down(s.heap, next_end, k);
                } else {
                    pop(s.heap);
                    s.free_slots.push_back(k);
                }
                continue;
            }
            if (s.busy_start == tau && s.busy_next < s.busy_stop) {  // kMax: maybe none left
                const int64_t j = busy_.row(s.busy_next++);
                s.busy_start = s.busy_next < s.busy_stop ? busy_.start[busy_.row(s.busy_next)] : kMax;
                if (s.busy_next + 8 < s.busy_stop) {  // this replica's busy rows, a few ahead
                    const int64_t ahead = busy_.row(s.busy_next + 8);
                    __builtin_prefetch(busy_.start + ahead);
                    __builtin_prefetch(busy_.end + ahead);
                    __builtin_prefetch(out_.idle.data() + ahead, 1);  // written when the row ends
                }
                if (busy_.end[j] > tau) {
                    ++s.B;
                    s.active.push_back(ActiveBusy{busy_.end[j], j, s.I});
                } else {  // zero-length rows hold nothing
                    out_.idle[static_cast<size_t>(j)] = 0;
                }
            } else {  // the first running busy row that ends at tau
                size_t ai = 0;
                while (s.active[ai].end != tau) ++ai;
                const ActiveBusy a = s.active[ai];
                s.active[ai] = s.active.back();
                s.active.pop_back();
                --s.B;
                const int64_t idle = static_cast<int64_t>(s.I - a.i_start);
                out_.idle[static_cast<size_t>(a.row)] = idle;
                s.idle_total += idle;
            }
            int64_t ev = s.busy_start;
            for (const ActiveBusy& a : s.active) ev = std::min(ev, a.end);
            s.busy_ev = ev;
        }
    }

    // Largest remainder over the replica's phases: T - sum(floor) ns, one each to the
    // largest keys, ties to the lower row (then prefill first). Here only the threshold:
    // the left-th largest key and how many phases with exactly that key still get one;
    // finish_rows() hands them out in row order, which is the tie order.
    bool round(Replica& s, int32_t r) {
        const int64_t left = s.busy_total - s.idle_total - s.floor_sum;
        const int64_t nc = s.cand_end - s.cand_begin;
        if (s.err.hi || left < 0 || left > nc || left >= (int64_t{1} << kAttribKeyBits)) {
            out_.overflow_replica = r;
            out_.overflow_ns = -1;
            out_.overflow_kind = kOverflowPrecision;
            return false;
        }
        if (left == 0) return true;
        auto b = cand_.begin() + s.cand_begin, e = cand_.begin() + s.cand_end;
        if (nc < 4096) {
            std::tie(s.thr, s.quota) = kth_largest(b, e, left);
            return true;
        }
        // Many keys: a histogram of their top bits (keys <= 2^31, so key >> 21 <= 1024)
        // finds the bucket of the threshold; only that bucket is selected in.
        uint32_t hist[1025] = {};
        for (auto it = b; it != e; ++it) ++hist[*it >> 21];
        int64_t above = 0;
        int bkt = 1024;
        for (; bkt > 0 && above + hist[bkt] < left; --bkt) above += hist[bkt];
        sel_.clear();
        for (auto it = b; it != e; ++it)
            if (static_cast<int>(*it >> 21) == bkt) sel_.push_back(*it);
        const int64_t need = left - above;  // 1 <= need <= hist[bkt]
        std::tie(s.thr, s.quota) = kth_largest(sel_.begin(), sel_.end(), need);
        return true;
    }

    // The k-th largest key of [b, e) (1 <= k <= e - b) and how many of the k largest
    // equal it. Reorders [b, e).
    template <typename It>
    static std::pair<uint32_t, int64_t> kth_largest(It b, It e, int64_t k) {
        if (k < e - b) std::nth_element(b, b + (k - 1), e, std::greater<uint32_t>());
        const uint32_t thr = *std::min_element(b, b + k);
        int64_t above = 0;
        for (auto it = b; it != b + k; ++it) above += *it > thr;
        return {thr, k - above};
    }

    // Hand out the ns left, total per request, per replica and outcome sums: one pass
    // in row order.
    void finish_rows(const int8_t* outcome, int32_t n_out) {
        const int64_t n = static_cast<int64_t>(out_.prefill.size());
        struct Round {  // a replica's threshold and quota, packed (a Replica is 5 lines)
            uint32_t thr;
            int64_t quota;
        };
        std::vector<Round> rounds(reps_.size());
        for (size_t r = 0; r < reps_.size(); ++r) rounds[r] = Round{reps_[r].thr, reps_[r].quota};
        for (int64_t i = 0; i < n; ++i) {
            const int32_t r = rep_of(i);
            const size_t k = static_cast<size_t>(i);
            if (r < 0) {
                out_.prefill[k] = out_.decode[k] = out_.total[k] = 0;
                continue;
            }
            Round& s = rounds[static_cast<size_t>(r)];
            int64_t pre = out_.prefill[k], dec = out_.decode[k];
            uint32_t kp, kd;
            std::memcpy(&kp, reinterpret_cast<const char*>(out_.total.data() + k), 4);
            std::memcpy(&kd, reinterpret_cast<const char*>(out_.total.data() + k) + 4, 4);
            if (kp > s.thr || (kp == s.thr && s.quota > 0)) {
                s.quota -= kp == s.thr;
                out_.prefill[k] = ++pre;
            }
            if (kd > s.thr || (kd == s.thr && s.quota > 0)) {
                s.quota -= kd == s.thr;
                out_.decode[k] = ++dec;
            }
            out_.total[k] = pre + dec;
            if (outcome) out_.rep_outcome[static_cast<size_t>(r) * static_cast<size_t>(n_out) +
                                          static_cast<size_t>(outcome[i])] += pre + dec;
        }
    }

    static void push(std::vector<Next>& h, int64_t t, uint32_t slot) {
        size_t i = h.size();
        h.emplace_back();
        while (i > 0) {
            const size_t p = (i - 1) / 2;
            if (!(t < h[p].t)) break;
            h[i].t = h[p].t;
            h[i].slot = h[p].slot;
            i = p;
        }
        h[i].t = t;
        h[i].slot = slot;
    }

    // Put (t, slot) at the root and sift it down.
    static void sift_down(std::vector<Next>& h, int64_t t, uint32_t slot) {
        const size_t n = h.size();
        size_t i = 0;
        for (;;) {
            size_t c = 2 * i + 1;
            if (c >= n) break;
            if (c + 1 < n && h[c + 1].t < h[c].t) ++c;
            if (!(h[c].t < t)) break;
            h[i].t = h[c].t;
            h[i].slot = h[c].slot;
            i = c;
        }
        h[i].t = t;
        h[i].slot = slot;
    }

    static void pop(std::vector<Next>& h) {
        const int64_t t = h.back().t;
        const uint32_t slot = h.back().slot;
        h.pop_back();
        if (!h.empty()) sift_down(h, t, slot);
    }
};

// Busy rows grouped by replica, each group by start: as given when they already
// are (no copy), else through a permutation (counting sort, then a sort per group).
// Checks each row (replica code, end >= start) and sums each replica's busy time
// (busy_total) without overflow; sets each replica's cursor over its rows.
inline BusyRows group_busy(std::vector<Replica>& reps, const int32_t* b_rep, const int64_t* b_start,
                           const int64_t* b_end, int64_t nb, int32_t n_rep) {
    BusyRows busy{b_start, b_end, {}};
    std::vector<int64_t> off(static_cast<size_t>(n_rep) + 1, 0);
    bool grouped = true;
    // a run of rows of one replica sums in locals (busy rows usually come grouped)
    int32_t cur = -1;
    int64_t cur_total = 0, cur_rows = 0;
    for (int64_t j = 0; j < nb; ++j) {
        const int32_t r = b_rep[j];
        if (r < 0 || r >= n_rep)
            throw std::invalid_argument("busy row " + std::to_string(j) + ": replica code out of range");
        if (b_end[j] < b_start[j])
            throw std::invalid_argument("busy row " + std::to_string(j) + ": end_ns before start_ns");
        if (j > 0 && (r < b_rep[j - 1] || (r == b_rep[j - 1] && b_start[j] < b_start[j - 1]))) grouped = false;
        if (r != cur) {
            if (cur >= 0) {
                reps[static_cast<size_t>(cur)].busy_total = cur_total;
                off[static_cast<size_t>(cur) + 1] += cur_rows;
            }
            cur = r;
            cur_total = reps[static_cast<size_t>(r)].busy_total;
            cur_rows = 0;
        }
        int64_t len;
        if (__builtin_sub_overflow(b_end[j], b_start[j], &len) || __builtin_add_overflow(cur_total, len, &cur_total))
            throw std::invalid_argument("busy row " + std::to_string(j) +
                                        ": the busy time of its replica sums past 2^63 - 1 ns");
        ++cur_rows;
    }
    if (cur >= 0) {
        reps[static_cast<size_t>(cur)].busy_total = cur_total;
        off[static_cast<size_t>(cur) + 1] += cur_rows;
    }
    for (size_t r = 0; r < static_cast<size_t>(n_rep); ++r) off[r + 1] += off[r];
    if (!grouped) {
        busy.perm.resize(static_cast<size_t>(nb));
        std::vector<int64_t> fill(off.begin(), off.end() - 1);
        for (int64_t j = 0; j < nb; ++j) busy.perm[static_cast<size_t>(fill[static_cast<size_t>(b_rep[j])]++)] = j;
        auto by_start = [&](int64_t x, int64_t y) { return b_start[x] < b_start[y]; };
        for (size_t r = 0; r < static_cast<size_t>(n_rep); ++r) {
            auto b = busy.perm.begin() + off[r], e = busy.perm.begin() + off[r + 1];
            if (!std::is_sorted(b, e, by_start)) std::sort(b, e, by_start);
        }
    }
    for (size_t r = 0; r < static_cast<size_t>(n_rep); ++r) {
        reps[r].busy_next = off[r];
        reps[r].busy_stop = off[r + 1];
        reps[r].busy_start = reps[r].busy_ev = off[r] < off[r + 1] ? b_start[busy.row(off[r])] : kMax;
    }
    return busy;
}

}  // namespace attrib_detail

// Attribute the busy intervals (b_rep, b_start, b_end; nb rows) of each replica to
// the phases of its requests (rep, arrival, first_token, end, tin, tout; n rows).
// rep[i] < 0: request i ran nowhere (rejected, or never ended) and gets nothing.
// first_token[i] == -1 (or ft_null[i]): no first token (prefill until end). Rows whose
// outcome is skip_outcome (>= 0) run nowhere either. rows_checked: the caller has
// validated times and tokens (request_rows in requests.hpp did), so only codes are
// checked here. Replica codes are in [0, n_rep). outcome (optional, codes in
// [0, n_out)): the per replica and outcome sums of attributed ns. Throws
// std::invalid_argument on inconsistent input (row named).
inline AttribResult attribute_busy(const int32_t* rep, const int64_t* arrival, const int64_t* first_token,
                                   const int64_t* end, const int64_t* tin, const int64_t* tout, int64_t wp,
                                   int64_t wd, int64_t n, const int32_t* b_rep, const int64_t* b_start,
                                   const int64_t* b_end, int64_t nb, int32_t n_rep,
                                   const int8_t* outcome = nullptr, int32_t n_out = 1,
                                   int32_t skip_outcome = -1, const uint8_t* ft_null = nullptr,
                                   bool rows_checked = false) {
    using namespace attrib_detail;
    if (n > kAttribMaxRows)
        throw std::invalid_argument("requests: at most " + std::to_string(kAttribMaxRows) + " rows at once");
    if (wp < 0 || wd < 0 || n_rep < 0 || n_out < 1)
        throw std::invalid_argument("weights and replica count must be >= 0, outcome count >= 1");
    AttribResult out;
    // prefill, decode, total: written for every row (zeroed when a request is admitted,
    // or by finish_rows for rows that run nowhere)
    out.prefill.resize(static_cast<size_t>(n));
    out.decode.resize(static_cast<size_t>(n));
    out.total.resize(static_cast<size_t>(n));
    out.idle.resize(static_cast<size_t>(nb));  // each written once, when its row ends (or starts, empty)
    out.rep_busy.assign(static_cast<size_t>(n_rep), 0);
    out.rep_idle.assign(static_cast<size_t>(n_rep), 0);
    out.rep_outcome.assign(outcome ? static_cast<size_t>(n_rep) * static_cast<size_t>(n_out) : 0, 0);
    std::vector<Replica> reps(static_cast<size_t>(n_rep));

    // Validate, count rows per replica, and check whether each replica's arrivals
    // are already in order.
    bool in_order = true;
    std::vector<int64_t> count(static_cast<size_t>(n_rep), 0);
    // rows whose outcome is skip_outcome run nowhere (replica code read as -1);
    // first_token under ft_null reads as kNone
    if (!outcome) skip_outcome = -1;
    const int8_t* skip_codes = skip_outcome >= 0 ? outcome : nullptr;
    {
        std::vector<int64_t> last(static_cast<size_t>(n_rep), kMin);
        for (int64_t i = 0; i < n; ++i) {
            const int32_t r = (skip_codes && skip_codes[i] == skip_outcome) ? -1 : rep[i];
            if (r < 0) continue;
            const int64_t a = arrival[i];
            if (r >= n_rep) throw std::invalid_argument("request row " + std::to_string(i) + ": replica code out of range");
            if (!rows_checked) {
                const int64_t ft = (ft_null && ft_null[i]) ? kNone : first_token[i], e = end[i];
                if (a < 0 || e < a || (ft != kNone && (ft < a || ft > e)) || tin[i] < 0 || tout[i] < 0)
                    throw std::invalid_argument("request row " + std::to_string(i) +
                                                ": needs 0 <= arrival <= first_token <= end and tokens >= 0");
            }
            if (outcome && (outcome[i] < 0 || outcome[i] >= n_out))
                throw std::invalid_argument("request row " + std::to_string(i) + ": outcome code out of range");
            int64_t& l = last[static_cast<size_t>(r)];
            if (a < l) in_order = false;
            l = a;
            ++count[static_cast<size_t>(r)];
        }
    }
    // Phase ranking keys, at most two per request, grouped by replica (to find each
    // replica's threshold); the keys per row wait in out.total. Every cand slot is
    // written before it is read.
    buffer<uint32_t> cand(2 * static_cast<size_t>(n));
    {
        int64_t off = 0;
        for (size_t r = 0; r < static_cast<size_t>(n_rep); ++r) {
            reps[r].cand_begin = reps[r].cand_end = off;
            off += 2 * count[r];
        }
    }
    BusyRows busy = group_busy(reps, b_rep, b_start, b_end, nb, n_rep);
    std::vector<int64_t> order;
    if (!in_order) {
        std::vector<std::pair<int64_t, int64_t>> keyed;
        keyed.reserve(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i)
            if (rep[i] >= 0 && !(skip_codes && skip_codes[i] == skip_outcome)) keyed.emplace_back(arrival[i], i);
        std::sort(keyed.begin(), keyed.end());
        order.resize(keyed.size());
        for (size_t k = 0; k < keyed.size(); ++k) order[k] = keyed[k].second;
    }
    Sweeper sw(rep, arrival, first_token, end, tin, tout, wp, wd, in_order ? n : static_cast<int64_t>(order.size()),
               reps, busy, cand, ft_null, skip_codes, skip_outcome, out);
    sw.run(in_order ? nullptr : order.data(), outcome, n_out);
    return out;
}

}  // namespace pau::core
