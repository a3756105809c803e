// pau native interval core: the exclusive-time sweep by nested priority unions.
//
// What `classify` asks for without windows: per rank, the exact time won by each
// kind under a priority order, and idle. The full sweep (sweep.hpp) keeps the
// 64-mask overlap histogram; this one keeps only what exclusive time needs.
//
// Priority levels 0..5 (0 highest). U_L = |union of the events of levels 0..L|
// (clipped to the rank's span). Over a rank's events in start order, with top_L
// the latest end among the events of levels <= L seen so far, an event [s, e) of
// level k adds to every U_L with L >= k the part of it past top_L, the piece
// [max(s, top_L), max(e, top_L)) (empty when e <= top_L), then raises top_L to
// max(e, top_L): the pieces of one level are disjoint and their union is the
// level's union (the standard merge of start-sorted intervals). With the span
// [lo, hi) (the given one, else [INT64_MIN, INT64_MAX]) a piece [a, b) counts
//     clip(b) - clip(a),   clip(x) = min(max(x, lo), hi),
// its length inside the span: exact on the whole int64 range (a <= b, so
// 0 <= clip(b) - clip(a) <= e - s, which the row checks keep within int64).
// Exclusive time of level 0 is U_0, of level L > 0 it is U_L - U_(L-1); idle is
// |span| - U_5. So the kind of highest priority running wins every instant
// (DESIGN §2), and the figures sum to the span by construction.
//
// The six levels are the lanes of one 8 x int64 vector: with AVX-512 (checked
// at run time) an event costs two masked maxima, a subtraction and an add, no
// branch that depends on the data; the row checks run on 8 rows at once, and a
// block of 8 with any problem is taken again row by row, which finds the first.
// Without AVX-512, the AVX2 kernel (checked at run time) keeps the lanes in a 256-bit
// and a 128-bit vector and takes a masked maximum as a compare, an AND and a blend.
// Both are one loop (feed_lanes) over the lanes of an instruction set (lanes.hpp), so
// their blocks and checks are the same. The scalar kernel computes the same lanes one
// by one; it is the twin the tests compare on any machine.
//
// Output: the Histogram of sweep.hpp with one row per (rank, winning kind) of
// non-zero time, mask = 1 << kind (0 for idle), window -1, so the caller's map
// from masks to activities gives the same table as for the full histogram.
//
// Windows shared by every rank (the full ledger's cuts, crossing.hpp): with cuts
// c_0 < ... < c_m, window w is [c_w, c_(w+1)). A rank keeps the window its last
// event started in and clips to it (and to its span); U_L then is the union of
// the levels <= L inside that window. An event starting at or after the window's
// end moves the rank on: the window's rows are written, and every window it
// enters begins with what is carried into it. All events so far start before the
// new window's start A, so each of them that reaches past A covers [A, its end):
// their union past A is [A, top_L), and U_L of the new window [A, B) starts at
// clip(top_L) - A. Later pieces begin at or after top_L, so nothing is counted
// twice. Time before c_0 and from c_m on is in no window and not counted; the
// output has one row per (rank, window, winning kind) of non-zero time and no
// idle rows (the caller takes idle as what is left of its own intervals).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "lanes.hpp"
#include "split.hpp"
#include "sweep.hpp"
#include "sweep_api.hpp"

namespace pau::core {

inline bool avx512_available() {
#if PAU_HAVE_X86_KERNELS
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
}

inline bool avx2_available() {
#if PAU_HAVE_X86_KERNELS
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
}

class ExclusiveSweep {
  public:
    // Spans as in Sweep (at most one row per rank); `level_of_kind[c]` is the
    // priority level (0 highest) of kind code c, a permutation of 0..5.
    // `cuts` (n_cuts sorted, distinct; nullptr: no windows): windows shared by
    // every rank, as above; a span then only clips.
    ExclusiveSweep(const int32_t* span_rank, const int64_t* span_start, const int64_t* span_end, int64_t n_spans,
                   const int8_t* level_of_kind, LeanKernel kernel, const int64_t* cuts = nullptr,
                   int64_t n_cuts = 0)
        : clip_(n_spans > 0 || cuts != nullptr), windows_(cuts != nullptr), cuts_(cuts),
          n_cuts_(cuts != nullptr ? n_cuts : 0) {
        for (int64_t i = 1; i < n_cuts_; ++i)
            if (cuts_[i] <= cuts_[i - 1]) throw std::invalid_argument("cuts: expected sorted, distinct times");
        bool seen[kNumKinds] = {false};
        for (int c = 0; c < kNumKinds; ++c) {
            const int l = level_of_kind[c];
            if (l < 0 || l >= kNumKinds || seen[l])
                throw std::invalid_argument("priority: levels must be a permutation of 0..5");
            seen[l] = true;
            level_[c] = static_cast<int8_t>(l);
            kind_of_level_[l] = static_cast<int8_t>(c);
        }
        if (kernel == LeanKernel::avx512 && !avx512_available())
            throw std::invalid_argument("kernel: this CPU has no AVX-512");
        if (kernel == LeanKernel::avx2 && !avx2_available())
            throw std::invalid_argument("kernel: this CPU has no AVX2");
        if (kernel == LeanKernel::best)
            kernel = avx512_available() ? LeanKernel::avx512 : avx2_available() ? LeanKernel::avx2 : LeanKernel::scalar;
        kernel_ = kernel;
        for (int64_t i = 0; i < n_spans; ++i) {
            check_span(span_rank, span_start, span_end, i, find(span_rank[i]) != nullptr);
            Rank& s = create(span_rank[i]);
            s.fixed = true;
            s.span_start = s.lo = s.span_lo = span_start[i];
            s.span_end = s.hi = s.span_hi = span_end[i];
        }
    }

    // Windows only: before rank r's first event, what the events before them (a
    // chunk's lead: lead_ends, split.hpp) leave: ends[c] the latest end among
    // those of kind code c (INT64_MIN: none), last_start the latest start (the next event
    // may not start earlier). Their union inside each window is carried as above.
    void open_levels(int32_t r, const int64_t* ends, int64_t last_start) {
        if (!windows_) throw std::logic_error("ExclusiveSweep::open_levels: a windowed sweep only");
        Rank& s = state(r);
        if (s.started) throw std::logic_error("ExclusiveSweep::open_levels: before the rank's first event");
        for (int l = 0; l < kNumKinds; ++l) {
            int64_t top = kMin;
            for (int c = 0; c < kNumKinds; ++c)
                if (level_[c] <= l && ends[c] > top) top = ends[c];
            s.top[l] = top;
        }
        s.last_start = last_start;
    }

    // The latest end among rank r's events so far (INT64_MIN: none).
    int64_t latest_end(int32_t r) {
        const Rank* s = find(r);
        return s == nullptr ? kMin : s->top[kNumKinds - 1];
    }

    // Feed events: within one rank start_ns must not decrease across all feeds
    // (Code::unsorted otherwise); ranks may interleave. Arguments as Sweep::feed.
    template <typename IdxT>
    FeedResult feed(const int32_t* rank, const int64_t* start, const int64_t* end, const IdxT* kind_idx,
                    const int8_t* kind_map, int64_t map_size, int64_t n, const int64_t* order = nullptr) {
        // Dictionary position -> level (-1: unknown kind).
        std::vector<int8_t> lv(static_cast<size_t>(std::max<int64_t>(map_size, 256)), -1);
        for (int64_t j = 0; j < map_size; ++j)
            lv[static_cast<size_t>(j)] = kind_map[j] >= 0 && kind_map[j] < kNumKinds ? level_[kind_map[j]] : -1;
        switch (kernel_) {
            case LeanKernel::avx2:
                return feed_as<LeanKernel::avx2>(rank, start, end, kind_idx, lv.data(), map_size, n, order);
            case LeanKernel::avx512:
                return feed_as<LeanKernel::avx512>(rank, start, end, kind_idx, lv.data(), map_size, n, order);
            default:
                return feed_as<LeanKernel::scalar>(rank, start, end, kind_idx, lv.data(), map_size, n, order);
        }
    }

    // Every rank's exclusive time by winning kind, and its span. Spent afterwards.
    Histogram finish() {
        Histogram h;
        if (windows_) return finish_windows();
        for (auto& p : ranks_.states()) {
            Rank& s = *p;
            if (!s.started && !s.fixed) continue;
            if (!s.fixed) s.span_end = s.top[kNumKinds - 1];
            int64_t below = 0;
            for (int l = 0; l <= kNumKinds; ++l) {
                const int64_t u = l < kNumKinds ? s.u[l] : s.span_end - s.span_start;
                const int64_t d = u - below;
                below = u;
                if (d == 0) continue;
                h.rank.push_back(s.rank);
                h.window.push_back(-1);
                h.mask.push_back(l < kNumKinds ? static_cast<uint8_t>(1u << kind_of_level_[l]) : 0);
                h.duration.push_back(d);
            }
            h.span_rank.push_back(s.rank);
            h.span_start.push_back(s.span_start);
            h.span_end.push_back(s.span_end);
        }
        return h;
    }

    // Whether a vector kernel sweeps (AVX-512 or AVX2).
    bool simd() const { return kernel_ != LeanKernel::scalar; }

  private:
    static constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
    static constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

    struct Rank {
        alignas(64) int64_t top[8] = {kMin, kMin, kMin, kMin, kMin, kMin, kMin, kMin};
        alignas(64) int64_t u[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int32_t rank = 0;
        bool started = false, fixed = false;
        int64_t span_start = 0, span_end = 0;
        int64_t lo = kMin, hi = kMax;  // clipping bounds (the given span, else none; windows: its part of the window)
        int64_t last_start = kMin;
        // Windows only: the span's bounds, the window the last event started in
        // (-1 before the first cut, n_cuts - 1 from the last on), the start of the
        // next one (an event starting there or later moves on), the rows written.
        int64_t span_lo = kMin, span_hi = kMax;
        int64_t w = -1, next_cut = kMax;
        std::vector<int64_t> out_window, out_duration;
        std::vector<uint8_t> out_mask;
    };

    // Windows: the window of time t (-1 before the first cut).
    int64_t window_of(int64_t t) const {
        return (std::upper_bound(cuts_, cuts_ + n_cuts_, t) - cuts_) - 1;
    }
    // Enter window v: its clip bounds, and U_L of what is carried into it.
    void enter(Rank& s, int64_t v) const {
        s.w = v;
        int64_t a = 0, b = 0;
        s.next_cut = kMax;
        if (n_cuts_ > 0) {
            if (v < 0) {
                a = b = s.next_cut = cuts_[0];
            } else if (v >= n_cuts_ - 1) {
                a = b = cuts_[n_cuts_ - 1];
            } else {
                a = cuts_[v];
                b = s.next_cut = cuts_[v + 1];
            }
        }
        a = std::max(a, s.span_lo);
        b = std::min(b, s.span_hi);
        if (a > b) a = b;
        s.lo = a;
        s.hi = b;
        for (int l = 0; l < kNumKinds; ++l) s.u[l] = wrap_sub(clip(s, s.top[l]), a);
    }
    // Write the rows of the rank's window (nothing outside every window).
    void emit(Rank& s) const {
        if (s.w < 0 || s.w >= n_cuts_ - 1) return;
        int64_t below = 0;
        for (int l = 0; l < kNumKinds; ++l) {
            const int64_t d = wrap_sub(s.u[l], below);
            below = s.u[l];
            if (d == 0) continue;
            s.out_window.push_back(s.w);
            s.out_mask.push_back(static_cast<uint8_t>(1u << kind_of_level_[l]));
            s.out_duration.push_back(d);
        }
    }
    // The rank's windows from its current one up to (not into) window `to`: each
    // written, the ones between entered with their carry (none once nothing
    // reaches them).
    void pass_windows(Rank& s, int64_t to) const {
        emit(s);
        for (int64_t v = s.w + 1; v < to && v < n_cuts_ - 1; ++v) {
            if (s.top[kNumKinds - 1] <= cuts_[v]) break;
            enter(s, v);
            emit(s);
        }
    }
    // The window of time t >= the start of window w (w >= -1): a few steps on from
    // w (the next window, most often), else a binary search over the rest.
    int64_t window_after(int64_t w, int64_t t) const {
        for (int k = 0; k < 4; ++k, ++w)
            if (w + 1 >= n_cuts_ || cuts_[w + 1] > t) return w;
        return (std::upper_bound(cuts_ + w + 1, cuts_ + n_cuts_, t) - cuts_) - 1;
    }
    // An event starting at st >= s.next_cut: move the rank on to st's window (out of
    // line: the vector kernels' entry points flatten what they call).
    __attribute__((noinline)) void advance(Rank& s, int64_t st) const {
        const int64_t to = window_after(s.w, st);
        pass_windows(s, to);
        enter(s, to);
    }
    static int64_t wrap_sub(int64_t a, int64_t b) {
        return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
    }

    Histogram finish_windows() {
        Histogram h;
        for (auto& p : ranks_.states()) {
            Rank& s = *p;
            if (!s.started && !s.fixed) continue;
            if (s.started) pass_windows(s, n_cuts_);
            if (!s.fixed) s.span_end = std::max(s.span_start, s.top[kNumKinds - 1]);
            h.rank.insert(h.rank.end(), s.out_window.size(), s.rank);
            h.window.insert(h.window.end(), s.out_window.begin(), s.out_window.end());
            h.mask.insert(h.mask.end(), s.out_mask.begin(), s.out_mask.end());
            h.duration.insert(h.duration.end(), s.out_duration.begin(), s.out_duration.end());
            h.span_rank.push_back(s.rank);
            h.span_start.push_back(s.span_start);
            h.span_end.push_back(s.span_end);
        }
        return h;
    }

    Rank* find(int32_t r) { return ranks_.find(r); }
    // A new rank's state (out of line, as advance: the vector kernels flatten what they call).
    __attribute__((noinline)) Rank& create(int32_t r) { return ranks_.create(r); }
    Rank& state(int32_t r) {
        Rank* s = find(r);
        return s != nullptr ? *s : create(r);
    }

    template <typename IdxT>
    static int64_t level_at(const IdxT* kind_idx, int64_t i, const int8_t* lv, int64_t map_size) {
        if constexpr (sizeof(IdxT) == 1) {  // byte indices: lv has 256 entries, no bound check
            return lv[static_cast<uint8_t>(kind_idx[i])];
        } else {
            const uint64_t ki = static_cast<uint64_t>(static_cast<int64_t>(kind_idx[i]));
            return ki < static_cast<uint64_t>(map_size) ? lv[ki] : -1;
        }
    }

    // A rank's first event begins its span (unless given), and with windows
    // enters the window it starts in.
    void begin(Rank& s, int64_t st) const {
        if (!s.started) {
            s.started = true;
            if (!s.fixed) s.span_start = st;
            if (windows_) enter(s, window_of(st));
        }
    }

    // Kernel K with its template flags taken from the order, the clipping and the
    // windows (windows always clip).
    template <LeanKernel K, typename IdxT>
    FeedResult feed_as(const int32_t* rank, const int64_t* start, const int64_t* end, const IdxT* kind_idx,
                       const int8_t* lv, int64_t map_size, int64_t n, const int64_t* order) {
        if (windows_)
            return order ? feed_with<K, IdxT, true, true, true>(rank, start, end, kind_idx, lv, map_size, n, order)
                         : feed_with<K, IdxT, false, true, true>(rank, start, end, kind_idx, lv, map_size, n, order);
        if (clip_)
            return order ? feed_with<K, IdxT, true, true, false>(rank, start, end, kind_idx, lv, map_size, n, order)
                         : feed_with<K, IdxT, false, true, false>(rank, start, end, kind_idx, lv, map_size, n, order);
        return order ? feed_with<K, IdxT, true, false, false>(rank, start, end, kind_idx, lv, map_size, n, order)
                     : feed_with<K, IdxT, false, false, false>(rank, start, end, kind_idx, lv, map_size, n, order);
    }
    // The scalar kernel clips through each rank's bounds, so it takes no Clip flag.
    template <LeanKernel K, typename IdxT, bool Ordered, bool Clip, bool Windows>
    FeedResult feed_with(const int32_t* rank, const int64_t* start, const int64_t* end, const IdxT* kind_idx,
                         const int8_t* lv, int64_t map_size, int64_t n, const int64_t* order) {
#if PAU_HAVE_X86_KERNELS
        if constexpr (K == LeanKernel::avx2)
            return feed_avx2<IdxT, Ordered, Clip, Windows>(rank, start, end, kind_idx, lv, map_size, n, order);
        else if constexpr (K == LeanKernel::avx512)
            return feed_avx512<IdxT, Ordered, Clip, Windows>(rank, start, end, kind_idx, lv, map_size, n, order);
        else
#endif
            return feed_scalar<IdxT, Ordered, Windows>(rank, start, end, kind_idx, lv, map_size, n, order);
    }

    template <typename IdxT, bool Ordered, bool Windows>
    FeedResult feed_scalar(const int32_t* rank, const int64_t* start, const int64_t* end, const IdxT* kind_idx,
                           const int8_t* lv, int64_t map_size, int64_t n, const int64_t* order) {
        FeedResult res;
        Rank* s = nullptr;
        int32_t cur = -1;
        for (int64_t j = 0; j < n; ++j) {
            const int64_t i = Ordered ? order[j] : j;
            const int32_t r = rank[i];
            const int64_t st = start[i], en = end[i];
            const int64_t k = level_at(kind_idx, i, lv, map_size);
            if (!row_ok(r, st, en, k, i, res)) break;
            if (s == nullptr || r != cur) {
                cur = r;
                s = &state(r);
                begin(*s, st);
            }
            if (st < s->last_start) {
                res = {Code::unsorted, i};
                break;
            }
            s->last_start = st;
            if (Windows && st >= s->next_cut) advance(*s, st);
            for (int l = 0; l < kNumKinds; ++l) {
                const int64_t top = s->top[l];
                const int64_t b = l >= k && en > top ? en : top;  // the piece [a, b)
                const int64_t a = l >= k && st > top ? st : top;
                s->u[l] = static_cast<int64_t>(static_cast<uint64_t>(s->u[l]) +
                                               static_cast<uint64_t>(clip(*s, b) - clip(*s, a)));
                s->top[l] = b;
            }
        }
        return res;
    }
    static int64_t clip(const Rank& s, int64_t x) { return std::min(std::max(x, s.lo), s.hi); }

#if PAU_HAVE_X86_KERNELS
    // The vector kernels: one loop over the lanes of an instruction set (L: lanes::Avx512
    // or lanes::Avx2, lanes.hpp). Its entry points, feed_avx512 and feed_avx2 (and the
    // row-by-row path's, checked_avx512 and checked_avx2), carry the instruction set's
    // target and flatten the loop and the lanes' operations into themselves.
    template <typename L>
    struct Cursor {
        typename L::Lanes v;
        Rank* s;
        int32_t cur;
        int64_t last;  // the start of the last event taken (its rank is cur)
        FeedResult res;
        const int64_t* order = nullptr;
    };

    template <typename IdxT, bool Ordered, bool Clip, bool Windows>
    __attribute__((target("avx512f,avx512vl"), flatten)) FeedResult feed_avx512(
        const int32_t* rank, const int64_t* start, const int64_t* end, const IdxT* kind_idx, const int8_t* lv,
        int64_t map_size, int64_t n, const int64_t* order) {
        return feed_lanes<lanes::Avx512, IdxT, Ordered, Clip, Windows>(rank, start, end, kind_idx, lv, map_size, n,
                                                                       order);
    }
    template <typename IdxT, bool Ordered, bool Clip, bool Windows>
    __attribute__((target("avx2"), flatten)) FeedResult feed_avx2(const int32_t* rank, const int64_t* start,
                                                                  const int64_t* end, const IdxT* kind_idx,
                                                                  const int8_t* lv, int64_t map_size, int64_t n,
                                                                  const int64_t* order) {
        return feed_lanes<lanes::Avx2, IdxT, Ordered, Clip, Windows>(rank, start, end, kind_idx, lv, map_size, n,
                                                                     order);
    }
    template <typename IdxT, bool Ordered, bool Clip, bool Windows>
    __attribute__((target("avx512f,avx512vl"), flatten, noinline)) bool checked_avx512(
        Cursor<lanes::Avx512>& c, const lanes::Avx512::Mask* mask, const int32_t* rank, const int64_t* start,
        const int64_t* end, const IdxT* kind_idx, const int8_t* lv, int64_t map_size, int64_t from, int64_t to) {
        return checked_rows<lanes::Avx512, IdxT, Ordered, Clip, Windows>(c, mask, rank, start, end, kind_idx, lv,
                                                                         map_size, from, to);
    }
    template <typename IdxT, bool Ordered, bool Clip, bool Windows>
    __attribute__((target("avx2"), flatten, noinline)) bool checked_avx2(
        Cursor<lanes::Avx2>& c, const lanes::Avx2::Mask* mask, const int32_t* rank, const int64_t* start,
        const int64_t* end, const IdxT* kind_idx, const int8_t* lv, int64_t map_size, int64_t from, int64_t to) {
        return checked_rows<lanes::Avx2, IdxT, Ordered, Clip, Windows>(c, mask, rank, start, end, kind_idx, lv,
                                                                       map_size, from, to);
    }
    // Rows [from, to) with every check, one by one (away from the loop of blocks):
    // false (and c.res set) when one fails.
    template <typename L, typename IdxT, bool Ordered, bool Clip, bool Windows>
    bool checked(Cursor<L>& c, const typename L::Mask* mask, const int32_t* rank, const int64_t* start,
                 const int64_t* end, const IdxT* kind_idx, const int8_t* lv, int64_t map_size, int64_t from,
                 int64_t to) {
        if constexpr (std::is_same_v<L, lanes::Avx512>)
            return checked_avx512<IdxT, Ordered, Clip, Windows>(c, mask, rank, start, end, kind_idx, lv, map_size,
                                                                from, to);
        else
            return checked_avx2<IdxT, Ordered, Clip, Windows>(c, mask, rank, start, end, kind_idx, lv, map_size, from,
                                                              to);
    }

    // The loop. Blocks of 8 rows are checked at once: rank >= 0, end >= start, end -
    // start within int64, start not below the previous row's of the same rank (the
    // first row of a rank here is checked against its state on the switch). Kinds are
    // checked row by row (a table look-up each row makes anyway), or for byte indices
    // into a dictionary of at most 16 kinds (the usual case) by one byte shuffle of a
    // 16-entry table (lanes::byte_entries); a block with an unknown kind goes row by row.
    template <typename L, typename IdxT, bool Ordered, bool Clip, bool Windows>
    FeedResult feed_lanes(const int32_t* rank, const int64_t* start, const int64_t* end, const IdxT* kind_idx,
                          const int8_t* lv, int64_t map_size, int64_t n, const int64_t* order) {
        alignas(32) typename L::Mask mask[kNumKinds + 1];  // mask[k + 1]: the lanes of levels k..5
        L::masks(mask);
        const bool byte_masks = sizeof(IdxT) == 1 && map_size <= 16;
        alignas(16) uint8_t mtab[16] = {0};
        if (byte_masks)
            for (int64_t q = 0; q < map_size; ++q) mtab[q] = lv[q] >= 0 ? L::byte_of(mask, lv[q]) : 0;
        Cursor<L> c{};
        L::init(c.v);
        c.s = nullptr;
        c.cur = -1;
        c.last = kMin;
        c.order = order;
        FeedResult& res = c.res;
        int64_t j = 0;
        if (!Ordered) {
            if (n > 0 && !checked<L, IdxT, Ordered, Clip, Windows>(c, mask, rank, start, end, kind_idx, lv, map_size,
                                                                  0, 1))
                return res;
            // The lanes in locals (registers) through the loop of blocks; in c around
            // the calls that take c.
            int32_t cur = c.cur;
            Rank* rs = c.s;
            int64_t next = Windows && rs != nullptr ? rs->next_cut : kMax;  // the rank's next cut
            for (j = 1; j + 8 <= n; j += 8) {
                // The common blocks: an inner loop with no call in it, over lanes (and
                // the last start) that live in it alone, copied from and to c field by
                // field (L::copy). A copy of the whole struct moved the 256-bit lanes
                // through general registers, and GCC then kept top and u on the stack
                // through the loop: a store and two reloads on the lanes' dependency
                // chain every block (the AVX2 kernel about 5 % slower than 52faf57's).
                typename L::Lanes v;
                L::copy(v, c.v);
                int64_t last = c.last;
                for (; j + 8 <= n; j += 8) {
                    prefetch_rows(rank, start, end, kind_idx, j, n);
                    // The common block: no problem, all 8 rows of the rank being swept, all
                    // starting in its window (starts do not decrease within the block:
                    // checked) and, when clipping, all inside its clip bounds, so that no
                    // row needs a test but its kind's.
                    const bool plain = __builtin_expect(L::rows_ok(rank, start, end, j), 1) &&
                                       L::one_rank(rank, j, cur) && (!Windows || start[j + 7] < next) &&
                                       (!Clip || (start[j] >= v.lo_s && L::inside(end, j, v)));
                    if (__builtin_expect(!plain, 0)) break;
                    if constexpr (sizeof(IdxT) == 1) {
                        uint64_t mm = 0;
                        // Expected here, at the branch: the hint inside byte_entries does not
                        // reach it, and GCC then moved this block out of the loop's line (two
                        // more taken jumps per block, about 1.5 % of classify(threads=1)).
                        // The table loaded each block (the empty asm hides where tab
                        // points), not held in a register through the loop: with it held,
                        // the block's 16 AVX2 registers ran short (no gain without this).
                        const __m128i* tab = reinterpret_cast<const __m128i*>(mtab);
                        asm("" : "+r"(tab));
                        if (__builtin_expect(byte_masks && lanes::byte_entries(_mm_load_si128(tab), kind_idx + j, mm),
                                             1)) {
#pragma GCC unroll 8  // as GCC unrolled each kernel's copy before: the loop carries no branch
                            for (int64_t i = j; i < j + 8; ++i, mm >>= 8)
                                L::template add_event<false>(v, L::of_byte(mask, mm & 0xFF), start[i], end[i]);
                            last = start[j + 7];
                            continue;
                        }
                    }
                    if (!byte_masks) {
                        for (int64_t i = j; i < j + 8; ++i) {
                            const int64_t k = level_at(kind_idx, i, lv, map_size);
                            if (__builtin_expect(k < 0, 0)) {
                                res = {Code::unknown_kind, i};
                                return res;
                            }
                            L::template add_event<false>(v, mask[k + 1], start[i], end[i]);
                        }
                        last = start[j + 7];
                        continue;
                    }
                    break;
                }
                L::copy(c.v, v);
                c.last = last;
                if (j + 8 > n) break;
                // Any other block (a problem in it, a rank or a window begins in it, a
                // row reaches past the clip bounds): row by row with every check, away
                // from this loop; a problem is found there, at its first row.
                c.cur = cur;
                c.s = rs;
                if (!checked<L, IdxT, Ordered, Clip, Windows>(c, mask, rank, start, end, kind_idx, lv, map_size, j,
                                                              j + 8))
                    return res;
                cur = c.cur;
                rs = c.s;
                if (Windows) next = rs->next_cut;
            }
            c.cur = cur;
            c.s = rs;
        }
        if (!checked<L, IdxT, Ordered, Clip, Windows>(c, mask, rank, start, end, kind_idx, lv, map_size, j, n))
            return res;
        if (c.s != nullptr) {
            L::spill(c.v, c.s->top, c.s->u);
            c.s->last_start = c.last;
        }
        return res;
    }

    template <typename L, typename IdxT, bool Ordered, bool Clip, bool Windows>
    bool checked_rows(Cursor<L>& c, const typename L::Mask* mask, const int32_t* rank, const int64_t* start,
                      const int64_t* end, const IdxT* kind_idx, const int8_t* lv, int64_t map_size, int64_t from,
                      int64_t to) {
        for (int64_t j = from; j < to; ++j) {
            const int64_t i = Ordered ? c.order[j] : j;
            const int32_t r = rank[i];
            const int64_t st = start[i], en = end[i];
            const int64_t k = level_at(kind_idx, i, lv, map_size);
            if (!row_ok(r, st, en, k, i, c.res)) return false;
            if (c.s == nullptr || r != c.cur) {  // leave the rank swept so far, take rank r
                if (c.s != nullptr) {
                    L::spill(c.v, c.s->top, c.s->u);
                    c.s->last_start = c.last;
                }
                c.s = &state(r);
                begin(*c.s, st);
                L::fill(c.v, c.s->top, c.s->u, c.s->lo, c.s->hi, true);
                c.cur = r;
                c.last = c.s->last_start;
            }
            if (st < c.last) {
                c.res = {Code::unsorted, i};
                return false;
            }
            c.last = st;
            if (Windows && st >= c.s->next_cut) {  // spill, move the rank on to st's window, reload
                L::spill(c.v, c.s->top, c.s->u);
                advance(*c.s, st);
                L::fill(c.v, c.s->top, c.s->u, c.s->lo, c.s->hi, false);
            }
            L::template add_event<Clip>(c.v, mask[k + 1], st, en);
        }
        return true;
    }
#endif

    bool clip_;
    bool windows_;
    const int64_t* cuts_;
    int64_t n_cuts_;
    LeanKernel kernel_ = LeanKernel::scalar;
    int8_t level_[kNumKinds] = {0};
    int8_t kind_of_level_[kNumKinds] = {0};
    RankTable<Rank> ranks_;
};

namespace detail {

inline SplitResult exclusive_pieces(const SweepPlan& plan, const int8_t* levels, LeanKernel kernel,
                                    const std::vector<EventBatch>& batches,
                                    const std::vector<RankPart::Piece>& pieces, const std::vector<int64_t>& spans,
                                    const int64_t* order) {
    const PartSpans sp = part_spans(plan, spans);
    ExclusiveSweep sw(sp.rank.data(), sp.start.data(), sp.end.data(), static_cast<int64_t>(sp.rank.size()), levels,
                      kernel);
    return feed_pieces(sw, batches, pieces, order);
}

}  // namespace detail

// sweep_split (split.hpp) with the exclusive-time sweep: the same split at rank
// boundaries, the same result contract; the plan's windows must be empty.
inline SplitResult exclusive_split(const SweepPlan& plan, const int8_t* levels, LeanKernel kernel,
                                   const std::vector<EventBatch>& batches, int64_t parts,
                                   const int64_t* order = nullptr) {
    if (plan.n_windows > 0 || plan.bucket > 0)
        throw std::logic_error("exclusive_split: no windows (the full sweep handles them)");
    return split_sweep(plan, batches, parts, order,
                       [&](const std::vector<RankPart::Piece>& pieces, const std::vector<int64_t>& spans,
                           const int64_t* ord) {
                           return detail::exclusive_pieces(plan, levels, kernel, batches, pieces, spans, ord);
                       });
}

}  // namespace pau::core
