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
// and a 128-bit vector and takes a masked maximum as a compare, an AND and a blend;
// its blocks and checks are the same. The scalar kernel computes the same lanes one
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
#include <unordered_map>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PAU_HAVE_X86_KERNELS 1
#else
#define PAU_HAVE_X86_KERNELS 0
#endif

#include "split.hpp"
#include "sweep.hpp"

namespace pau::core {

// Which kernel sweeps: the best available (AVX-512, else AVX2, else scalar), the
// scalar one, AVX-512 or AVX2 (an error where the CPU lacks it).
enum class LeanKernel : int { best = 0, scalar = 1, avx512 = 2, avx2 = 3 };

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
    // chunk's lead, crossing.hpp) leave: ends[c] the latest end among those of
    // kind code c (INT64_MIN: none), last_start the latest start (the next event
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
    // An event starting at st >= s.next_cut: move the rank on to st's window.
    void advance(Rank& s, int64_t st) const {
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
    Rank& create(int32_t r) { return ranks_.create(r); }
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
    // The vector cursor of the rank being swept.
    struct Lanes {
        __m512i top, u, lo, hi;
        int64_t lo_s, hi_s;  // lo and hi, as scalars
    };
    // One event [st, en) of the lanes in `m` (levels k..5). An event inside the
    // clip bounds needs no clipping: its pieces lie in [st, en) or are empty.
    template <bool Clip>
    __attribute__((target("avx512f"), always_inline)) static inline void add_event(Lanes& c, __mmask8 m, int64_t st,
                                                                                  int64_t en) {
        const __m512i b = _mm512_mask_max_epi64(c.top, m, c.top, _mm512_set1_epi64(en));
        const __m512i a = _mm512_mask_max_epi64(c.top, m, c.top, _mm512_set1_epi64(st));
        if (Clip && __builtin_expect(!(st >= c.lo_s && en <= c.hi_s), 0)) {
            const __m512i cb = _mm512_min_epi64(_mm512_max_epi64(b, c.lo), c.hi);
            const __m512i ca = _mm512_min_epi64(_mm512_max_epi64(a, c.lo), c.hi);
            c.u = _mm512_add_epi64(c.u, _mm512_sub_epi64(cb, ca));
        } else {
            c.u = _mm512_add_epi64(c.u, _mm512_sub_epi64(b, a));  // 0 outside m: a = b = top there
        }
        c.top = b;
    }
    struct Cursor {
        Lanes v;
        Rank* s;
        int32_t cur;
        int64_t last;  // the start of the last event taken (its rank is cur)
        FeedResult res;
        const int64_t* order = nullptr;
    };
    // Leave the rank swept so far (its last event started at `last`), if any, and
    // take rank r, whose first event here starts at st.
    __attribute__((target("avx512f"), always_inline)) inline Rank* switch_rank(Lanes& c, Rank* s, int64_t last, int32_t r, int64_t st) {
        if (s != nullptr) {
            _mm512_store_si512(s->top, c.top);
            _mm512_store_si512(s->u, c.u);
            s->last_start = last;
        }
        s = &state(r);
        begin(*s, st);
        c.top = _mm512_load_si512(s->top);
        c.u = _mm512_load_si512(s->u);
        c.lo = _mm512_set1_epi64(s->lo);
        c.hi = _mm512_set1_epi64(s->hi);
        c.lo_s = s->lo;
        c.hi_s = s->hi;
        return s;
    }

    // Spill the lanes into the rank, move it on to the window of st, reload.
    __attribute__((target("avx512f"), always_inline)) inline void advance_lanes(Lanes& c, Rank* s, int64_t st) {
        _mm512_store_si512(s->top, c.top);
        _mm512_store_si512(s->u, c.u);
        advance(*s, st);
        c.u = _mm512_load_si512(s->u);
        c.lo = _mm512_set1_epi64(s->lo);
        c.hi = _mm512_set1_epi64(s->hi);
        c.lo_s = s->lo;
        c.hi_s = s->hi;
    }

    template <typename IdxT, bool Ordered, bool Clip, bool Windows = false>
    __attribute__((target("avx512f,avx512vl"))) FeedResult feed_avx512(const int32_t* rank, const int64_t* start,
                                                                       const int64_t* end, const IdxT* kind_idx,
                                                                       const int8_t* lv, int64_t map_size, int64_t n,
                                                                       const int64_t* order) {
        __mmask8 mask[kNumKinds];  // mask[k]: the lanes of levels k..5
        for (int k = 0; k < kNumKinds; ++k) mask[k] = static_cast<__mmask8>((0x3Fu << k) & 0x3Fu);
        // Byte indices into a dictionary of at most 16 kinds (the usual case): the
        // lane masks of a block's 8 rows come from one byte shuffle of a 16-entry
        // table (mask 0: an unknown kind, or an index past the dictionary) instead of
        // two dependent loads per row; a block with a zero mask goes row by row.
        const bool byte_masks = sizeof(IdxT) == 1 && map_size <= 16;
        alignas(16) uint8_t mtab[16] = {0};
        if (byte_masks)
            for (int64_t q = 0; q < map_size; ++q) mtab[q] = lv[q] >= 0 ? mask[lv[q]] : 0;
        const __m128i mtab16 = _mm_load_si128(reinterpret_cast<const __m128i*>(mtab));
        Cursor c{{_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_set1_epi64(kMin), _mm512_set1_epi64(kMax), kMin, kMax},
                 nullptr, -1, kMin, {}};
        FeedResult& res = c.res;
        c.order = order;
        int64_t j = 0;
        if (!Ordered) {
            // Blocks of 8 rows checked at once: rank >= 0, end >= start, end - start
            // within int64, start not below the previous row's of the same rank (the
            // first row of a rank here is checked against its state on the switch).
            // Kinds are checked row by row (a table look-up each row makes anyway).
            const __m512i zero = _mm512_setzero_si512();
            if (n > 0 && !checked<IdxT, Ordered, Clip, Windows>(c, mask, rank, start, end, kind_idx, lv, map_size, 0, 1))
                return res;
            // The lanes in locals (registers) here; in c around the calls that take c.
            Lanes v = c.v;
            int32_t cur = c.cur;
            Rank* rs = c.s;
            int64_t next = Windows && rs != nullptr ? rs->next_cut : kMax;  // the rank's next cut
            for (j = 1; j + 8 <= n; j += 8) {
                prefetch_rows(rank, start, end, kind_idx, j, n);
                const __m256i r8 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rank + j));
                const __m256i rp = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rank + j - 1));
                const __m512i s8 = _mm512_loadu_si512(start + j), sp = _mm512_loadu_si512(start + j - 1);
                const __m512i e8 = _mm512_loadu_si512(end + j);
                __mmask8 bad = _mm256_cmplt_epi32_mask(r8, _mm256_setzero_si256());
                bad |= _mm512_cmplt_epi64_mask(e8, s8);
                bad |= _mm512_cmplt_epi64_mask(_mm512_sub_epi64(e8, s8), zero);
                bad |= _mm256_cmpeq_epi32_mask(r8, rp) & _mm512_cmplt_epi64_mask(s8, sp);
                // The common block: no problem, all 8 rows of the rank being swept,
                // all starting in its window (starts do not decrease within the
                // block: checked above) and, when clipping, all inside its clip
                // bounds, so that no row needs a test but its kind's.
                const bool plain = __builtin_expect(bad == 0, 1) &&
                                   _mm256_cmpeq_epi32_mask(r8, _mm256_set1_epi32(cur)) == 0xFF &&
                                   (!Windows || start[j + 7] < next) &&
                                   (!Clip || (start[j] >= v.lo_s && _mm512_cmpgt_epi64_mask(e8, v.hi) == 0));
                if constexpr (sizeof(IdxT) == 1) {
                    if (byte_masks && plain) {
                        // pshufb reads an index's low 4 bits (0 when its top bit is
                        // set): an index of 16 to 127 is caught by its bits 4-6.
                        const __m128i idx8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(kind_idx + j));
                        const __m128i m8 = _mm_shuffle_epi8(mtab16, idx8);
                        const __m128i over = _mm_and_si128(idx8, _mm_set1_epi8(0x70));
                        const int zero_mask = _mm_movemask_epi8(_mm_cmpeq_epi8(m8, _mm_setzero_si128())) |
                                              ~_mm_movemask_epi8(_mm_cmpeq_epi8(over, _mm_setzero_si128()));
                        if (__builtin_expect((zero_mask & 0xFF) == 0, 1)) {
                            uint64_t mm = static_cast<uint64_t>(_mm_cvtsi128_si64(m8));
                            for (int64_t i = j; i < j + 8; ++i, mm >>= 8)
                                add_event<false>(v, static_cast<__mmask8>(mm), start[i], end[i]);
                            c.last = start[j + 7];
                            continue;
                        }
                    }
                }
                if (plain && !byte_masks) {
                    for (int64_t i = j; i < j + 8; ++i) {
                        const int64_t k = level_at(kind_idx, i, lv, map_size);
                        if (__builtin_expect(k < 0, 0)) {
                            res = {Code::unknown_kind, i};
                            return res;
                        }
                        add_event<false>(v, mask[k], start[i], end[i]);
                    }
                    c.last = start[j + 7];
                    continue;
                }
                // Any other block (a problem in it, a rank or a window begins in it,
                // a row reaches past the clip bounds): row by row with every check,
                // away from this loop; a problem is found there, at its first row.
                c.v = v;
                c.cur = cur;
                c.s = rs;
                if (!checked<IdxT, Ordered, Clip, Windows>(c, mask, rank, start, end, kind_idx, lv, map_size, j, j + 8))
                    return res;
                v = c.v;
                cur = c.cur;
                rs = c.s;
                if (Windows) next = rs->next_cut;
            }
            c.v = v;
            c.cur = cur;
            c.s = rs;
        }
        if (!checked<IdxT, Ordered, Clip, Windows>(c, mask, rank, start, end, kind_idx, lv, map_size, j, n)) return res;
        if (c.s != nullptr) {
            _mm512_store_si512(c.s->top, c.v.top);
            _mm512_store_si512(c.s->u, c.v.u);
            c.s->last_start = c.last;
        }
        return res;
    }

    // Rows [from, to) with every check, one by one: false (and c.res set) when one
    // fails.
    template <typename IdxT, bool Ordered, bool Clip, bool Windows>
    __attribute__((target("avx512f"), noinline)) bool checked(Cursor& c, const __mmask8* mask, const int32_t* rank,
                                                    const int64_t* start, const int64_t* end, const IdxT* kind_idx,
                                                    const int8_t* lv, int64_t map_size, int64_t from, int64_t to) {
        for (int64_t j = from; j < to; ++j) {
            const int64_t i = Ordered ? c.order[j] : j;
            const int32_t r = rank[i];
            const int64_t st = start[i], en = end[i];
            const int64_t k = level_at(kind_idx, i, lv, map_size);
            if (!row_ok(r, st, en, k, i, c.res)) return false;
            if (c.s == nullptr || r != c.cur) {
                c.s = switch_rank(c.v, c.s, c.last, r, st);
                c.cur = r;
                c.last = c.s->last_start;
            }
            if (st < c.last) {
                c.res = {Code::unsorted, i};
                return false;
            }
            c.last = st;
            if (Windows && st >= c.s->next_cut) advance_lanes(c.v, c.s, st);
            add_event<Clip>(c.v, mask[k], st, en);
        }
        return true;
    }
    // The AVX2 kernel: the same lanes, 0-3 in a 256-bit vector and 4-5 in a 128-bit
    // one (on CPUs that split 256-bit operations in two, 6 lanes cost 3 halves, not
    // 4). AVX2 has no 64-bit maximum and no mask registers: a masked maximum is a
    // compare, an AND with the level's lanes and a blend. The blocks, their checks
    // and the row-by-row path are those of the AVX-512 kernel.
    struct Lanes2 {
        __m256i top, u, lo, hi;      // lanes 0-3 (lo and hi: the clip bounds, broadcast)
        __m128i top2, u2, lo2, hi2;  // lanes 4-5
        int64_t lo_s, hi_s;
    };
    struct LaneMask2 {  // all ones in the lanes of levels k..5
        __m256i m;
        __m128i m2;
    };
    __attribute__((target("avx2"), always_inline)) static inline __m256i max4(__m256i x, __m256i y) {
        return _mm256_blendv_epi8(x, y, _mm256_cmpgt_epi64(y, x));
    }
    __attribute__((target("avx2"), always_inline)) static inline __m256i min4(__m256i x, __m256i y) {
        return _mm256_blendv_epi8(x, y, _mm256_cmpgt_epi64(x, y));
    }
    __attribute__((target("avx2"), always_inline)) static inline __m128i max2(__m128i x, __m128i y) {
        return _mm_blendv_epi8(x, y, _mm_cmpgt_epi64(y, x));
    }
    __attribute__((target("avx2"), always_inline)) static inline __m128i min2(__m128i x, __m128i y) {
        return _mm_blendv_epi8(x, y, _mm_cmpgt_epi64(x, y));
    }
    // add_event with AVX2.
    template <bool Clip>
    __attribute__((target("avx2"), always_inline)) static inline void add_event2(Lanes2& c, const LaneMask2& m,
                                                                                int64_t st, int64_t en) {
        const __m256i e4 = _mm256_set1_epi64x(en), s4 = _mm256_set1_epi64x(st);
        const __m128i e2 = _mm256_castsi256_si128(e4), s2 = _mm256_castsi256_si128(s4);
        const __m256i b = _mm256_blendv_epi8(c.top, e4, _mm256_and_si256(_mm256_cmpgt_epi64(e4, c.top), m.m));
        const __m256i a = _mm256_blendv_epi8(c.top, s4, _mm256_and_si256(_mm256_cmpgt_epi64(s4, c.top), m.m));
        const __m128i b2 = _mm_blendv_epi8(c.top2, e2, _mm_and_si128(_mm_cmpgt_epi64(e2, c.top2), m.m2));
        const __m128i a2 = _mm_blendv_epi8(c.top2, s2, _mm_and_si128(_mm_cmpgt_epi64(s2, c.top2), m.m2));
        if (Clip && __builtin_expect(!(st >= c.lo_s && en <= c.hi_s), 0)) {
            c.u = _mm256_add_epi64(c.u, _mm256_sub_epi64(min4(max4(b, c.lo), c.hi), min4(max4(a, c.lo), c.hi)));
            c.u2 = _mm_add_epi64(c.u2, _mm_sub_epi64(min2(max2(b2, c.lo2), c.hi2), min2(max2(a2, c.lo2), c.hi2)));
        } else {
            c.u = _mm256_add_epi64(c.u, _mm256_sub_epi64(b, a));
            c.u2 = _mm_add_epi64(c.u2, _mm_sub_epi64(b2, a2));
        }
        c.top = b;
        c.top2 = b2;
    }
    struct Cursor2 {
        Lanes2 v;
        Rank* s;
        int32_t cur;
        int64_t last;
        FeedResult res;
        const int64_t* order = nullptr;
    };
    __attribute__((target("avx2"), always_inline)) static inline void spill2(const Lanes2& c, Rank* s) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(s->top), c.top);
        _mm_store_si128(reinterpret_cast<__m128i*>(s->top + 4), c.top2);
        _mm256_store_si256(reinterpret_cast<__m256i*>(s->u), c.u);
        _mm_store_si128(reinterpret_cast<__m128i*>(s->u + 4), c.u2);
    }
    // Load u and the clip bounds (and top, with `top`) from the rank.
    __attribute__((target("avx2"), always_inline)) static inline void fill2(Lanes2& c, const Rank* s, bool top) {
        if (top) {
            c.top = _mm256_load_si256(reinterpret_cast<const __m256i*>(s->top));
            c.top2 = _mm_load_si128(reinterpret_cast<const __m128i*>(s->top + 4));
        }
        c.u = _mm256_load_si256(reinterpret_cast<const __m256i*>(s->u));
        c.u2 = _mm_load_si128(reinterpret_cast<const __m128i*>(s->u + 4));
        c.lo = _mm256_set1_epi64x(s->lo);
        c.hi = _mm256_set1_epi64x(s->hi);
        c.lo2 = _mm256_castsi256_si128(c.lo);
        c.hi2 = _mm256_castsi256_si128(c.hi);
        c.lo_s = s->lo;
        c.hi_s = s->hi;
    }
    // 4 bits: the sign of each 64-bit lane.
    __attribute__((target("avx2"), always_inline)) static inline unsigned signs4(__m256i x) {
        return static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(x)));
    }

    template <typename IdxT, bool Ordered, bool Clip, bool Windows = false>
    __attribute__((target("avx2"))) FeedResult feed_avx2(const int32_t* rank, const int64_t* start,
                                                         const int64_t* end, const IdxT* kind_idx, const int8_t* lv,
                                                         int64_t map_size, int64_t n, const int64_t* order) {
        // mask[k + 1]: the lanes of levels k..5; mask[0]: none
        alignas(32) LaneMask2 mask[kNumKinds + 1];
        for (int k = -1; k < kNumKinds; ++k) {
            alignas(32) int64_t lanes[8];
            for (int l = 0; l < 8; ++l) lanes[l] = k >= 0 && l >= k && l < kNumKinds ? -1 : 0;
            mask[k + 1].m = _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes));
            mask[k + 1].m2 = _mm_load_si128(reinterpret_cast<const __m128i*>(lanes + 4));
        }
        // Byte indices into at most 16 kinds: level + 1 of a block's 8 rows from one
        // byte shuffle (0: unknown), as in the AVX-512 kernel.
        const bool byte_masks = sizeof(IdxT) == 1 && map_size <= 16;
        alignas(16) uint8_t mtab[16] = {0};
        if (byte_masks)
            for (int64_t q = 0; q < map_size; ++q) mtab[q] = lv[q] >= 0 ? static_cast<uint8_t>(lv[q] + 1) : 0;
        const __m128i mtab16 = _mm_load_si128(reinterpret_cast<const __m128i*>(mtab));
        Cursor2 c{};
        c.v.top = _mm256_set1_epi64x(kMin);
        c.v.top2 = _mm256_castsi256_si128(c.v.top);
        c.v.lo = c.v.top;
        c.v.lo2 = c.v.top2;
        c.v.hi = _mm256_set1_epi64x(kMax);
        c.v.hi2 = _mm256_castsi256_si128(c.v.hi);
        c.v.lo_s = kMin;
        c.v.hi_s = kMax;
        c.s = nullptr;
        c.cur = -1;
        c.last = kMin;
        FeedResult& res = c.res;
        c.order = order;
        int64_t j = 0;
        if (!Ordered) {
            if (n > 0 && !checked2<IdxT, Ordered, Clip, Windows>(c, mask, rank, start, end, kind_idx, lv, map_size, 0, 1))
                return res;
            Lanes2 v = c.v;
            int32_t cur = c.cur;
            Rank* rs = c.s;
            int64_t next = Windows && rs != nullptr ? rs->next_cut : kMax;
            for (j = 1; j + 8 <= n; j += 8) {
                prefetch_rows(rank, start, end, kind_idx, j, n);
                const __m256i r8 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rank + j));
                const __m256i rp = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rank + j - 1));
                const __m256i s0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(start + j));
                const __m256i s1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(start + j + 4));
                const __m256i p0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(start + j - 1));
                const __m256i p1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(start + j + 3));
                const __m256i e0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(end + j));
                const __m256i e1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(end + j + 4));
                // rank < 0, end < start, end - start past int64, a start below the
                // previous row's of the same rank: as in the AVX-512 kernel
                unsigned bad = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(r8)));
                bad |= signs4(_mm256_cmpgt_epi64(s0, e0)) | signs4(_mm256_cmpgt_epi64(s1, e1)) << 4;
                bad |= signs4(_mm256_sub_epi64(e0, s0)) | signs4(_mm256_sub_epi64(e1, s1)) << 4;
                bad |= static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(r8, rp)))) &
                       (signs4(_mm256_cmpgt_epi64(p0, s0)) | signs4(_mm256_cmpgt_epi64(p1, s1)) << 4);
                const bool plain =
                    __builtin_expect(bad == 0, 1) &&
                    _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(r8, _mm256_set1_epi32(cur)))) == 0xFF &&
                    (!Windows || start[j + 7] < next) &&
                    (!Clip || (start[j] >= v.lo_s &&
                               (signs4(_mm256_cmpgt_epi64(e0, v.hi)) | signs4(_mm256_cmpgt_epi64(e1, v.hi))) == 0));
                if constexpr (sizeof(IdxT) == 1) {
                    if (byte_masks && plain) {
                        const __m128i idx8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(kind_idx + j));
                        const __m128i m8 = _mm_shuffle_epi8(mtab16, idx8);
                        const __m128i over = _mm_and_si128(idx8, _mm_set1_epi8(0x70));
                        const int zero_mask = _mm_movemask_epi8(_mm_cmpeq_epi8(m8, _mm_setzero_si128())) |
                                              ~_mm_movemask_epi8(_mm_cmpeq_epi8(over, _mm_setzero_si128()));
                        if (__builtin_expect((zero_mask & 0xFF) == 0, 1)) {
                            uint64_t mm = static_cast<uint64_t>(_mm_cvtsi128_si64(m8));
                            for (int64_t i = j; i < j + 8; ++i, mm >>= 8)
                                add_event2<false>(v, mask[mm & 0xFF], start[i], end[i]);
                            c.last = start[j + 7];
                            continue;
                        }
                    }
                }
                if (plain && !byte_masks) {
                    for (int64_t i = j; i < j + 8; ++i) {
                        const int64_t k = level_at(kind_idx, i, lv, map_size);
                        if (__builtin_expect(k < 0, 0)) {
                            res = {Code::unknown_kind, i};
                            return res;
                        }
                        add_event2<false>(v, mask[k + 1], start[i], end[i]);
                    }
                    c.last = start[j + 7];
                    continue;
                }
                c.v = v;
                c.cur = cur;
                c.s = rs;
                if (!checked2<IdxT, Ordered, Clip, Windows>(c, mask, rank, start, end, kind_idx, lv, map_size, j, j + 8))
                    return res;
                v = c.v;
                cur = c.cur;
                rs = c.s;
                if (Windows) next = rs->next_cut;
            }
            c.v = v;
            c.cur = cur;
            c.s = rs;
        }
        if (!checked2<IdxT, Ordered, Clip, Windows>(c, mask, rank, start, end, kind_idx, lv, map_size, j, n)) return res;
        if (c.s != nullptr) {
            spill2(c.v, c.s);
            c.s->last_start = c.last;
        }
        return res;
    }

    // checked() of the AVX2 kernel.
    template <typename IdxT, bool Ordered, bool Clip, bool Windows>
    __attribute__((target("avx2"), noinline)) bool checked2(Cursor2& c, const LaneMask2* mask, const int32_t* rank,
                                                           const int64_t* start, const int64_t* end,
                                                           const IdxT* kind_idx, const int8_t* lv, int64_t map_size,
                                                           int64_t from, int64_t to) {
        for (int64_t j = from; j < to; ++j) {
            const int64_t i = Ordered ? c.order[j] : j;
            const int32_t r = rank[i];
            const int64_t st = start[i], en = end[i];
            const int64_t k = level_at(kind_idx, i, lv, map_size);
            if (!row_ok(r, st, en, k, i, c.res)) return false;
            if (c.s == nullptr || r != c.cur) {
                if (c.s != nullptr) {
                    spill2(c.v, c.s);
                    c.s->last_start = c.last;
                }
                c.s = &state(r);
                begin(*c.s, st);
                fill2(c.v, c.s, true);
                c.cur = r;
                c.last = c.s->last_start;
            }
            if (st < c.last) {
                c.res = {Code::unsorted, i};
                return false;
            }
            c.last = st;
            if (Windows && st >= c.s->next_cut) {
                spill2(c.v, c.s);
                advance(*c.s, st);
                fill2(c.v, c.s, false);
            }
            add_event2<Clip>(c.v, mask[k + 1], st, en);
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
