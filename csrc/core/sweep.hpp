// pau native interval core: the exact device-activity sweep.
//
// Conventions (stated once, here and in pau.core):
//   * time is int64 nanoseconds; every interval is half-open [start, end);
//     two intervals that touch (a.end == b.start) do not overlap;
//   * an event of kind k makes bit k of the "mask" set while it runs; the sweep
//     accumulates, per rank and per window, the exact time spent under each of
//     the 2^6 masks. Every other figure (exclusive time by priority, idle,
//     union busy, |communication ∩ compute|) is a fixed linear map of that
//     64-bin histogram, so it is computed outside the kernel and the kernel
//     needs no notion of priority.
//   * conservation: the bins of a rank (over all its windows and the time
//     outside windows) sum to span_end - span_start exactly, by construction:
//     the cursor t only moves forward and every move adds (new t - old t) to
//     exactly one bin.
//
// This header knows nothing of Python; the bindings live in csrc/bindings/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "order.hpp"
#include "sweep_api.hpp"

namespace pau::core {

// The hot helpers of the feed loop must be inlined into it: a call would take the
// address of the cursor (Hot) and force it out of registers. In a translation unit
// with many instantiations GCC's growth limits otherwise leave them out of line
// (measured: 215 against 265 M events/s).
#define PAU_HOT inline __attribute__((always_inline))

// The exclusive sweep's vector kernels (exclusive.hpp) prefetch the row this far
// ahead in each of the four columns, once per block of 8 rows. On a virtual machine
// whose hardware prefetcher does not keep up with four streams, the AVX-512 kernel ran
// 290 M events/s from memory against 500-700 in cache, and 545 with this (synth-8r,
// 10M events; 256 and 1,024 rows ahead alike; the AVX2 kernel 115 -> 240). The full
// sweep's loop gained nothing measurable from it.
constexpr int64_t kPrefetchRows = 256;
template <typename IdxT>
inline void prefetch_rows(const int32_t* rank, const int64_t* start, const int64_t* end, const IdxT* kind_idx,
                          int64_t j, int64_t n) {
    const int64_t a = std::min(j + kPrefetchRows, n - 1);  // never past the columns
    __builtin_prefetch(start + a);
    __builtin_prefetch(end + a);
    __builtin_prefetch(rank + a);
    __builtin_prefetch(kind_idx + a);
}

// Per-rank states of a sweep, kept in the order they were made: found through a
// table for ranks below kDirect (the common, dense case) and a map above.
template <typename State>
class RankTable {
  public:
    static constexpr int32_t kDirect = 1 << 22;

    State* find(int32_t r) const {
        if (r >= 0 && static_cast<size_t>(r) < direct_.size()) return direct_[static_cast<size_t>(r)];
        auto it = sparse_.find(r);
        return it == sparse_.end() ? nullptr : it->second;
    }
    // A new state for rank r (not in the table yet), its `rank` set.
    State& create(int32_t r) {
        states_.push_back(std::make_unique<State>());
        State* s = states_.back().get();
        s->rank = r;
        if (r >= 0 && r < kDirect) {
            if (static_cast<size_t>(r) >= direct_.size()) direct_.resize(static_cast<size_t>(r) + 1, nullptr);
            direct_[static_cast<size_t>(r)] = s;
        } else {
            sparse_[r] = s;
        }
        return *s;
    }
    const std::vector<std::unique_ptr<State>>& states() const { return states_; }
    size_t size() const { return states_.size(); }

  private:
    std::vector<std::unique_ptr<State>> states_;
    std::vector<State*> direct_;
    std::unordered_map<int32_t, State*> sparse_;
};

// An event row, checked: the one rule of every sweep (Sweep::feed and each kernel of
// ExclusiveSweep). A rank >= 0, end >= start, end - start within int64, a known kind
// (k >= 0: the kind, or its level, -1 when unknown), in this order: false, and `res`
// naming row i and the first check it fails, on a bad row.
//
// Times are any int64. Two predictable tests for all row checks: en < st is compared,
// never taken from the difference (which wraps: st = 2^62, en = -2^62 - 100); with
// en >= st the difference, computed unsigned, is exact, and above INT64_MAX
// (st = -2^62 - 1, en = 2^62 + 1) it does not fit.
PAU_HOT bool row_ok(int32_t r, int64_t st, int64_t en, int64_t k, int64_t i, FeedResult& res) {
    const int64_t len = static_cast<int64_t>(static_cast<uint64_t>(en) - static_cast<uint64_t>(st));
    if (__builtin_expect(((static_cast<int64_t>(r) | len | k) < 0) | (en < st), 0)) {
        if (r < 0) res = {Code::negative_rank, i};
        else if (en < st) res = {Code::end_before_start, i};
        else if (len < 0) res = {Code::too_long, i};
        else res = {Code::unknown_kind, i};
        return false;
    }
    return true;
}

// Row i of the spans, checked: a rank >= 0, end >= start, and (`repeated`) not a
// second row of one rank. Throws std::invalid_argument naming the row and the fix.
inline void check_span(const int32_t* span_rank, const int64_t* span_start, const int64_t* span_end, int64_t i,
                       bool repeated) {
    if (span_rank[i] < 0)
        throw std::invalid_argument("span: column 'rank', row " + std::to_string(i) +
                                    ": negative rank. Fix: ranks are accelerator indices >= 0");
    if (span_end[i] < span_start[i])
        throw std::invalid_argument("span: column 'end_ns', row " + std::to_string(i) +
                                    ": end_ns < start_ns. Fix: a span is [start_ns, end_ns)");
    if (repeated)
        throw std::invalid_argument("span: rank " + std::to_string(span_rank[i]) + " has more than one row (second at row " +
                                    std::to_string(i) + "). Fix: give one span per rank");
}

class Sweep {
  public:
    // Windows: parallel arrays of n_windows rows, any order. A row with rank -1
    // applies to every rank. `row_id` is the caller's row number, used only in
    // error messages. Span: parallel arrays, at most one row per rank; ranks
    // without a row get [first event start, last event end). A bucket width > 0
    // instead makes fixed windows [k*width, (k+1)*width), named by their start.
    Sweep(const int32_t* win_rank, const int64_t* win_start, const int64_t* win_end,
          const int64_t* win_row, int64_t n_windows, const int32_t* span_rank,
          const int64_t* span_start, const int64_t* span_end, int64_t n_spans,
          int64_t bucket_width = 0)
        : has_windows_(n_windows > 0), bucket_(bucket_width), clip_(n_spans > 0) {
        if (bucket_width < 0) throw std::invalid_argument("windows: bucket width must be > 0");
        if (bucket_width > 0 && n_windows > 0)
            throw std::invalid_argument("windows: give either a table of windows or a bucket width");
        index_windows(win_rank, win_start, win_end, win_row, n_windows);
        for (int64_t i = 0; i < n_spans; ++i) {
            check_span(span_rank, span_start, span_end, i, find(span_rank[i]) != nullptr);
            RankState& s = create(span_rank[i]);
            s.span_start = span_start[i];
            s.span_end = span_end[i];
            s.fixed_span = true;
            s.t = span_start[i];
        }
    }

    // Feed events in order. Within one rank, start_ns must not decrease across
    // all feeds; ranks may interleave freely. `kind_idx` indexes `kind_map`, which
    // maps to a kind code 0..5 or -1 (unknown). `order` (optional) is a
    // permutation to read the arrays through.
    template <typename IdxT>
    FeedResult feed(const int32_t* rank, const int64_t* start, const int64_t* end,
                    const IdxT* kind_idx, const int8_t* kind_map, int64_t map_size, int64_t n,
                    const int64_t* order = nullptr) {
        const bool windowed = has_windows_ || bucket_ > 0;
        if (windowed) {
            return order ? feed_impl<IdxT, true, true, true>(rank, start, end, kind_idx, kind_map, map_size, n, order)
                         : feed_impl<IdxT, false, true, true>(rank, start, end, kind_idx, kind_map, map_size, n, order);
        }
        if (clip_) {
            return order ? feed_impl<IdxT, true, false, true>(rank, start, end, kind_idx, kind_map, map_size, n, order)
                         : feed_impl<IdxT, false, false, true>(rank, start, end, kind_idx, kind_map, map_size, n, order);
        }
        return order ? feed_impl<IdxT, true, false, false>(rank, start, end, kind_idx, kind_map, map_size, n, order)
                     : feed_impl<IdxT, false, false, false>(rank, start, end, kind_idx, kind_map, map_size, n, order);
    }

    // Close every rank at its span end and return the histogram. The Sweep is
    // spent afterwards.
    Histogram finish() {
        for (auto& p : ranks_.states()) {
            RankState& s = *p;
            if (!s.started && !s.fixed_span) continue;
            // Without a given span a rank ends at its last event end: every event
            // either ended before the cursor or still holds its kind's open end.
            int64_t last = s.t;
            for (int k = 0; k < kNumKinds; ++k)
                if ((s.active >> k & 1) && s.ce[k] > last) last = s.ce[k];
            const int64_t target = s.fixed_span ? s.span_end : last;
            if (!s.fixed_span) s.span_end = target;
            Hot h{};
            load(h, s);
            if (has_windows_ || bucket_ > 0) set_route(h, route(s, h.t));
            if (has_windows_ || bucket_ > 0) advance<true>(h, s, target);
            else advance<false>(h, s, target);
            store(h, s);
            if (!(has_windows_ || bucket_ > 0)) s.out.touched = ~0ull;
            if (has_windows_ && s.wpos < s.wins.size()) flush(s, s.wins[s.wpos], s.cur);
            if (bucket_ > 0 && s.in_bucket) flush(s, bucket_start(s.bucket), s.cur);
            flush(s, -1, s.out);
            hist_.span_rank.push_back(s.rank);
            hist_.span_start.push_back(s.span_start);
            hist_.span_end.push_back(std::max(s.span_start, s.span_end));
        }
        return std::move(hist_);
    }

    int64_t rank_count() const { return static_cast<int64_t>(ranks_.size()); }

    // Bucket mode: refuse (std::length_error, "windows: ...") to open more than
    // `n` buckets over all ranks (0: no bound), so that a width too small for the
    // span fails before its histogram outgrows memory.
    void set_max_buckets(int64_t n) { max_buckets_ = n; }

    // Begin rank r's span at t, before its first event, and end it at its last
    // event end (as without a span): events fed from before t set the kinds
    // running at t but no time before t is accounted. Windowed sweeps only (they
    // clip every piece to the span).
    void start_at(int32_t r, int64_t t) {
        if (!has_windows_ || find(r) != nullptr)
            throw std::logic_error("Sweep::start_at: a windowed sweep, before the rank's first event");
        RankState& s = state(r);
        s.started = true;
        s.span_start = t;
        s.t = t;
    }

    // Open on rank r, before any of its events is fed, the kinds that events
    // before its span start leave running there: ends[k] is the latest end of kind
    // k among those events (kinds ending at or before the span start stay closed).
    // No time before the span start is accounted, so the state at the start is
    // the same as after sweeping them. `last_start`, the latest of their starts,
    // is what the next event fed must not start before. Span-clipped sweeps only
    // (a given span, or start_at).
    void open_kinds(int32_t r, const int64_t* ends, int64_t last_start) {
        RankState* s = find(r);
        if (s == nullptr || !(s->fixed_span || s->started) || s->active != 0)
            throw std::logic_error("Sweep::open_kinds: a rank with a span and no event yet");
        for (int k = 0; k < kNumKinds; ++k) {
            if (ends[k] > s->span_start) {
                s->active |= static_cast<uint8_t>(1u << k);
                s->ce[k] = ends[k];
            }
        }
        s->last_start = last_start;
    }

    // The latest end among the kinds open on rank r after the events fed so far
    // (INT64_MIN when none is open or the rank was not met): no event fed so far
    // reaches past it.
    int64_t latest_open_end(int32_t r) {
        const RankState* s = find(r);
        int64_t out = std::numeric_limits<int64_t>::min();
        if (s != nullptr)
            for (int k = 0; k < kNumKinds; ++k)
                if ((s->active >> k & 1) && s->ce[k] > out) out = s->ce[k];
        return out;
    }

  private:
    struct Bins {
        int64_t v[kNumMasks] = {0};
        uint64_t touched = 0;
    };
    struct RankState {
        int32_t rank = 0;
        bool started = false;
        bool fixed_span = false;
        uint8_t active = 0;                 // kinds with an open merged interval
        int64_t t = 0;                      // time before t is accounted
        int64_t span_start = 0;
        int64_t span_end = kOpen;           // open until finish() for default spans
        int64_t last_start = std::numeric_limits<int64_t>::min();
        int64_t ce[kNumKinds] = {kOpen, kOpen, kOpen, kOpen, kOpen, kOpen};  // open ends; kOpen = inactive
        std::vector<int64_t> wins;          // this rank's windows, sorted by start
        size_t wpos = 0;
        int64_t bucket = 0;                 // bucket index of `cur` in bucket mode (any int64:
        bool in_bucket = false;             // width 1 makes every time one), once in_bucket
        Bins cur;                           // the window at wpos
        Bins out;                           // outside every window (or the whole span)
    };

    // The cursor of one rank, copied into locals while that rank's events stream
    // by: the histogram stores cannot alias it, so it stays in registers.
    struct Hot {
        int64_t t;
        int64_t next;           // earliest open end among active kinds (kOpen if none)
        int64_t knext;          // the kind that owns `next`
        uint32_t active;        // kinds with an open merged interval
        int64_t ce[kNumKinds];  // open end of the merged interval per kind; kOpen = inactive
        int64_t last_start;
        int64_t lo, hi;         // the span, for clipping
        int64_t* bins;          // where time goes (windowed: the current route's bins)
        // Windowed sweeps: time from the cursor t up to dhi goes to bins without
        // further checks (see route).
        int64_t dhi;
    };

    // Clip: some rank has a given span (without one, a rank's cursor never leaves
    // [first start, last end), so no clipping is needed).
    template <typename IdxT, bool Ordered, bool Windowed, bool Clip>
    FeedResult feed_impl(const int32_t* rank, const int64_t* start, const int64_t* end,
                         const IdxT* kind_idx, const int8_t* kind_map, int64_t map_size, int64_t n,
                         const int64_t* order) {
        int8_t byte_map[256];
        for (int b = 0; b < 256; ++b) byte_map[b] = b < map_size ? kind_map[b] : -1;
        RankState* s = last_state_;
        int32_t cur = last_rank_;
        Hot h{};
        if (s) {
            load(h, *s);
            if (Windowed) set_route(h, route(*s, h.t));
        }
        FeedResult res;
        for (int64_t j = 0; j < n; ++j) {
            const int64_t i = Ordered ? order[j] : j;
            const int32_t r = rank[i];
            const int64_t st = start[i];
            const int64_t en = end[i];
            int64_t k;
            if constexpr (sizeof(IdxT) == 1) {  // byte indices: a full table, no bound check
                k = byte_map[static_cast<uint8_t>(kind_idx[i])];
            } else {
                const uint64_t ki = static_cast<uint64_t>(static_cast<int64_t>(kind_idx[i]));
                k = ki < static_cast<uint64_t>(map_size) ? kind_map[ki] : -1;
            }
            if (!row_ok(r, st, en, k, i, res)) break;
            if (__builtin_expect(r != cur, 0)) {
                if (s) store(h, *s);
                cur = r;
                s = &state(r);
                if (!s->started) {  // a rank's first event always arrives through here
                    s->started = true;
                    if (!s->fixed_span) {
                        s->span_start = st;
                        s->t = st;
                    }
                }
                load(h, *s);
                if (Windowed) set_route(h, route(*s, h.t));
            }
            if (__builtin_expect(st < h.last_start, 0)) {
                res = {Code::unsorted, i};
                break;
            }
            h.last_start = st;
            if (Windowed) {
                // Time from the cursor to st is accounted while this event is taken:
                // when both lie in the current window (or gap between windows), which
                // also lies inside the span, all of it lands in one place and the
                // plain, unclipped accounting applies (one compare per event instead
                // of a window check per accounted piece).
                if (__builtin_expect(st < h.dhi, 1)) {
                    take<false, false>(h, *s, st, en, k);
                } else {  // out of line, on a copy: the cursor's address must not escape
                    Hot c = h;
                    take_crossing(c, *s, st, en, k);
                    h = c;
                }
            } else {
                take<false, Clip>(h, *s, st, en, k);
            }
        }
        if (s) store(h, *s);
        last_state_ = s;
        last_rank_ = cur;
        return res;
    }

    // Take one event [st, en) of kind k into the cursor of rank s, accounting the
    // time before st. Windowed: route every accounted piece (see account).
    template <bool Windowed, bool Clip>
    PAU_HOT void take(Hot& h, RankState& s, int64_t st, int64_t en, int64_t k) {
        const uint32_t bit = 1u << k;
        // Fast paths for the common shapes of a stream (kernels one after another,
        // nothing else running): same result as the general path below.
        if (h.active == bit) {
            const int64_t c = h.ce[k];
            if (st <= c) {  // overlaps or touches its kind's open interval: extend it
                if (en > c) {
                    h.ce[k] = en;
                    h.next = en;
                }
                return;  // the mask does not change at st: no time to account yet
            }
            if (c > h.t) {  // under {k}
                account<Windowed, Clip>(h, s, h.t, c);
                h.t = c;
            }
            h.active = 0;
            if (st > h.t) {  // idle gap (the cursor never moves back: a span may start later)
                account<Windowed, Clip>(h, s, h.t, st);
                h.t = st;
            }
            h.active = bit;
            h.ce[k] = en;
            h.next = en;
            return;
        }
        const uint32_t obit = h.active & ~bit;
        if ((h.active & bit) && obit && !(obit & (obit - 1))) {
            // Its kind and one other kind are open (a kernel under a collective).
            const int o = __builtin_ctz(obit);
            const int64_t c = h.ce[k], co = h.ce[o];
            if (st <= c) {  // extends its kind's open interval
                if (en > c) {
                    h.ce[k] = en;
                    if (h.knext == k) refresh(h);
                }
                return;
            }
            if (co > st) {  // its kind closed before st, the other runs on past st
                if (c > h.t) {
                    account<Windowed, Clip>(h, s, h.t, c);
                    h.t = c;
                }
                h.active = obit;
                if (st > h.t) {
                    account<Windowed, Clip>(h, s, h.t, st);
                    h.t = st;
                }
                h.active = obit | bit;
                h.ce[k] = en;
                h.next = en < co ? en : co;
                h.knext = en < co ? k : o;
                return;
            }
        }
        if (h.active == 0) {
            if (st > h.t) {
                account<Windowed, Clip>(h, s, h.t, st);  // idle
                h.t = st;
            }
            h.active = bit;
            h.ce[k] = en;
            h.next = en;
            h.knext = k;
            return;
        }
        advance<Windowed, Clip>(h, s, st);
        if (h.active & bit) {
            if (en > h.ce[k]) {
                h.ce[k] = en;
                if (k == h.knext) refresh(h);
            }
        } else {
            h.active |= bit;
            h.ce[k] = en;
            if (en < h.next) {
                h.next = en;
                h.knext = k;
            }
        }
    }

    __attribute__((noinline)) void take_crossing(Hot& h, RankState& s, int64_t st, int64_t en, int64_t k) {
        take<true, true>(h, s, st, en, k);
    }

    // Recompute the earliest open end; visits only the active kinds (usually
    // none or one once the interval that just closed is gone).
    PAU_HOT static void refresh(Hot& h) {
        uint32_t a = h.active;
        if (!a) {
            h.next = kOpen;
            h.knext = 0;
            return;
        }
        // Start from an active kind, so an open end of exactly kOpen (an event
        // ending at INT64_MAX) still names the kind that owns it.
        int64_t km = __builtin_ctz(a);
        int64_t m = h.ce[km];
        for (a &= a - 1; a; a &= a - 1) {
            const int k = __builtin_ctz(a);
            const bool lt = h.ce[k] < m;
            m = lt ? h.ce[k] : m;
            km = lt ? k : km;
        }
        h.next = m;
        h.knext = km;
    }

    PAU_HOT static void load(Hot& h, RankState& s) {
        h.t = s.t;
        for (int k = 0; k < kNumKinds; ++k) h.ce[k] = s.ce[k];
        h.last_start = s.last_start;
        h.active = s.active;
        h.lo = s.span_start;
        h.hi = s.span_end;
        h.bins = s.out.v;
        refresh(h);
    }
    PAU_HOT static void store(Hot& h, RankState& s) {
        s.t = h.t;
        for (int k = 0; k < kNumKinds; ++k) s.ce[k] = h.ce[k];
        s.last_start = h.last_start;
        s.active = static_cast<uint8_t>(h.active);
    }

    RankState* find(int32_t r) { return ranks_.find(r); }

    RankState& create(int32_t r) {
        RankState& s = ranks_.create(r);
        if (has_windows_) build_windows(s);
        return s;
    }

    RankState& state(int32_t r) {
        if (r == last_rank_ && last_state_ != nullptr) return *last_state_;
        RankState* s = find(r);
        if (s == nullptr) s = &create(r);
        last_rank_ = r;
        last_state_ = s;
        return *s;
    }

    // Move the cursor h of rank s to `target`, closing the merged intervals that
    // end on the way, earliest first. Intervals are merged per kind (touching
    // ones included), so only the earliest open end (h.next) can change the mask
    // before `target`.
    template <bool Windowed, bool Clip = true>
    PAU_HOT void advance(Hot& h, RankState& s, int64_t target) {
        while (h.next <= target && h.active) {
            if (h.next > h.t) {
                account<Windowed, Clip>(h, s, h.t, h.next);
                h.t = h.next;
            }
            h.active &= ~(1u << h.knext);
            h.ce[h.knext] = kOpen;
            refresh(h);
        }
        if (target > h.t) {
            account<Windowed, Clip>(h, s, h.t, target);
            h.t = target;
        }
    }

    template <bool Windowed, bool Clip>
    PAU_HOT void account(Hot& h, RankState& s, int64_t a, int64_t b) {
        if (Windowed) {
            if (b <= h.dhi) {  // inside the current window (or gap); a is the cursor
                h.bins[h.active] += b - a;
            } else {
                set_route(h, slow_account(s, a, b, static_cast<uint8_t>(h.active)));
            }
        } else if (Clip) {
            a = a < h.lo ? h.lo : a;
            b = b > h.hi ? h.hi : b;
            const int64_t d = b - a;
            h.bins[h.active] += d > 0 ? d : 0;
        } else {
            h.bins[h.active] += b - a;  // callers pass a < b inside the span
        }
    }

    // Where time from t on goes, until the next window (or bucket) boundary.
    // Returned by value so that the caller's cursor never has its address taken
    // (it stays in registers; stores through `dest` cannot alias it).
    struct Route {
        int64_t hi;  // time in [cursor, hi) goes to dest
        Bins* dest;
    };
    Route route(RankState& s, int64_t t) const {
        const int64_t lo = std::max(t, s.span_start);
        int64_t hi = 0;
        Bins* dest = nullptr;
        if (bucket_ > 0) {
            const int64_t k = bucket_of(lo);
            if (s.in_bucket && k == s.bucket) {
                hi = bucket_end(k);
                dest = &s.cur;
            }
        } else if (s.wpos >= s.wins.size()) {
            hi = kOpen;
            dest = &s.out;
        } else {
            const int64_t w = s.wins[s.wpos];
            if (lo < wstart_[w]) {
                hi = wstart_[w];
                dest = &s.out;
            } else if (lo < wend_[w]) {
                hi = wend_[w];
                dest = &s.cur;
            }
        }
        // At a boundary, or with the cursor before the span: no piece may take the
        // fast route (nothing ends before INT64_MIN, and a piece ending there is empty);
        // the slow path decides. Hence a piece [t, b) with b <= hi always starts inside
        // the route.
        if (dest == nullptr || t < s.span_start) return {std::numeric_limits<int64_t>::min(), &s.out};
        return {std::min(hi, s.span_end), dest};
    }
    // Every bin of a route's destination counts as touched (flush then visits all 64
    // and emits the non-zero ones): the hot loop keeps no per-add bookkeeping.
    static void set_route(Hot& h, const Route& r) {
        h.dhi = r.hi;
        r.dest->touched = ~0ull;
        h.bins = r.dest->v;
    }
    // Crossing a window (or bucket) boundary: rare, kept out of line so the hot
    // loop stays small.
    // Takes the cursor's fields by value: its address must not escape the hot loop.
    __attribute__((noinline)) Route slow_account(RankState& s, int64_t a, int64_t b, uint8_t mask) {
        add(s, a, b, mask);
        return route(s, b);
    }

    void add(RankState& s, int64_t a, int64_t b, uint8_t mask) {
        if (a < s.span_start) a = s.span_start;
        if (b > s.span_end) b = s.span_end;
        if (a >= b) return;
        if (bucket_ > 0) {
            while (a < b) {
                const int64_t k = bucket_of(a);
                const int64_t hi = bucket_end(k);
                if (!s.in_bucket || k != s.bucket) {
                    if (s.in_bucket) flush(s, bucket_start(s.bucket), s.cur);
                    s.bucket = k;
                    s.in_bucket = true;
                    if (max_buckets_ > 0 && ++buckets_ > max_buckets_) too_many_buckets(s.rank, a);
                }
                const int64_t c = std::min(b, hi);
                put(s.cur, mask, c - a);
                a = c;
            }
            return;
        }
        if (!has_windows_) {
            s.out.v[mask] += b - a;
            s.out.touched |= 1ull << mask;
            return;
        }
        while (a < b) {
            if (s.wpos >= s.wins.size()) {
                put(s.out, mask, b - a);
                return;
            }
            const int64_t w = s.wins[s.wpos];
            const int64_t ws = wstart_[w], we = wend_[w];
            if (we <= a) {  // window already over (zero-length ones included)
                flush(s, w, s.cur);
                ++s.wpos;
            } else if (a < ws) {
                const int64_t c = std::min(b, ws);
                put(s.out, mask, c - a);
                a = c;
            } else {
                const int64_t c = std::min(b, we);
                put(s.cur, mask, c - a);
                a = c;
            }
        }
    }

    // Bucket k is [k * width, (k + 1) * width), k = floor(t / width) for any int64 t;
    // its ends are clamped to the int64 range (the first and last buckets are cut).
    int64_t bucket_of(int64_t t) const {
        const int64_t q = t / bucket_;  // truncates towards zero
        return (t % bucket_ < 0) ? q - 1 : q;
    }
    static int64_t clamp64(__int128 v) {
        if (v < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
        if (v > kOpen) return kOpen;
        return static_cast<int64_t>(v);
    }
    int64_t bucket_start(int64_t k) const { return clamp64(static_cast<__int128>(k) * bucket_); }
    int64_t bucket_end(int64_t k) const { return clamp64((static_cast<__int128>(k) + 1) * bucket_); }

    [[noreturn]] void too_many_buckets(int32_t rank, int64_t t) const {
        throw std::length_error("windows: a bucket width of " + std::to_string(bucket_) +
                                " ns makes more than " + std::to_string(max_buckets_) +
                                " windows (reached on rank " + std::to_string(rank) + " at " + std::to_string(t) +
                                " ns). Fix: give a wider bucket width, or raise the bound with the environment "
                                "variable PAU_MAX_WINDOWS");
    }

    static void put(Bins& bins, uint8_t mask, int64_t d) {
        bins.v[mask] += d;
        bins.touched |= 1ull << mask;
    }

    // Emit the non-zero bins (a bin never added to is zero) and clear them. A
    // route marks all 64 touched, so the bins are visited by groups of 8 with one
    // test each (an or the compiler vectorizes): most groups are all zero.
    void flush(RankState& s, int64_t window, Bins& bins) {
        if (!bins.touched) return;
        for (int g = 0; g < kNumMasks; g += 8) {
            int64_t any = 0;
            for (int k = g; k < g + 8; ++k) any |= bins.v[k];
            if (!any) continue;
            for (int k = g; k < g + 8; ++k) {
                if (bins.v[k] == 0) continue;
                hist_.rank.push_back(s.rank);
                hist_.window.push_back(window);
                hist_.mask.push_back(static_cast<uint8_t>(k));
                hist_.duration.push_back(bins.v[k]);
                bins.v[k] = 0;
            }
        }
        bins.touched = 0;
    }

    void index_windows(const int32_t* wr, const int64_t* ws, const int64_t* we, const int64_t* wrow,
                       int64_t n) {
        wstart_.assign(ws, ws + n);
        wend_.assign(we, we + n);
        wrow_.assign(wrow, wrow + n);
        std::vector<int64_t> idx(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
            if (wr[i] < -1) throw std::invalid_argument("windows: rank must be >= -1 (row " + std::to_string(wrow[i]) + ")");
            if (we[i] < ws[i]) throw std::invalid_argument("windows: end_ns < start_ns at row " + std::to_string(wrow[i]));
            idx[static_cast<size_t>(i)] = i;
        }
        const auto before = [&](int64_t a, int64_t b) {
            if (wr[a] != wr[b]) return wr[a] < wr[b];
            if (ws[a] != ws[b]) return ws[a] < ws[b];
            return we[a] < we[b];
        };
        if (!std::is_sorted(idx.begin(), idx.end(), before)) std::sort(idx.begin(), idx.end(), before);
        for (int64_t i : idx) {
            if (wr[i] == -1) global_wins_.push_back(i);
            else own_wins_[wr[i]].push_back(i);
        }
        check_disjoint(global_wins_, -1);
    }

    void check_disjoint(const std::vector<int64_t>& w, int32_t rank) const {
        // Sorted by start; zero-length windows cover no time and may sit anywhere.
        int64_t reach = std::numeric_limits<int64_t>::min(), holder = -1;
        for (int64_t i : w) {
            if (wstart_[i] == wend_[i]) continue;
            if (wstart_[i] < reach) {
                throw std::invalid_argument(
                    "windows: rows " + std::to_string(wrow_[holder]) + " and " +
                    std::to_string(wrow_[i]) + " overlap on rank " +
                    (rank < 0 ? std::string("-1 (every rank)") : std::to_string(rank)) +
                    ". Fix: make the windows of one rank disjoint, so that they sum to the whole");
            }
            reach = wend_[i];
            holder = i;
        }
    }

    void build_windows(RankState& s) {
        auto it = own_wins_.find(s.rank);
        if (it == own_wins_.end()) {
            s.wins = global_wins_;
            return;
        }
        const auto& own = it->second;
        s.wins.resize(own.size() + global_wins_.size());
        std::merge(own.begin(), own.end(), global_wins_.begin(), global_wins_.end(), s.wins.begin(),
                   [&](int64_t a, int64_t b) {
                       return wstart_[a] != wstart_[b] ? wstart_[a] < wstart_[b] : wend_[a] < wend_[b];
                   });
        check_disjoint(s.wins, s.rank);
    }

    bool has_windows_;
    int64_t bucket_;
    int64_t max_buckets_ = 0, buckets_ = 0;
    bool clip_;  // some rank has a given span: time must be clipped to it
    std::vector<int64_t> wstart_, wend_, wrow_;
    std::vector<int64_t> global_wins_;
    std::unordered_map<int32_t, std::vector<int64_t>> own_wins_;

    RankTable<RankState> ranks_;
    int32_t last_rank_ = -1;
    RankState* last_state_ = nullptr;
    Histogram hist_;
};

}  // namespace pau::core
