// pau native interval core: what other translation units use of the sweeps
// (sweep.hpp, exclusive.hpp, split.hpp), which are compiled in one: their types,
// small inline helpers, and the declarations of the entry points compiled once
// (sweep_api.cpp; sweep_rank_part and check_levels in bindings/sweep.cpp, the
// translation unit that binds the sweeps). tests/test_cpp_units.py holds it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace pau::core {

namespace arrow {
struct Batch;  // arrow_c.hpp
}

constexpr int kNumKinds = 6;  // compute, communication, memcpy, memset, sync, other
constexpr int kNumMasks = 1 << kNumKinds;
constexpr int64_t kOpen = std::numeric_limits<int64_t>::max();

// Why a feed stopped. Rows are 0-based positions in the fed arrays.
enum class Code : int32_t {
    ok = 0,
    negative_rank = 1,
    too_long = 2,  // end_ns - start_ns does not fit in int64
    end_before_start = 3,
    unknown_kind = 4,
    unsorted = 5,  // start_ns decreased within a rank: the caller re-feeds in order
};

struct FeedResult {
    Code code = Code::ok;
    int64_t row = -1;
};

// The sparse output: one row per (rank, window, mask) with non-zero time.
// window == -1 is "outside every window" (or the whole span when the sweep has
// no windows); otherwise it is an index into the windows given to the Sweep.
struct Histogram {
    std::vector<int32_t> rank;
    std::vector<int64_t> window;
    std::vector<uint8_t> mask;
    std::vector<int64_t> duration;
    // The accounted span of every rank, in the order ranks were first seen.
    std::vector<int32_t> span_rank;
    std::vector<int64_t> span_start;
    std::vector<int64_t> span_end;
};

// The integer types a feed's kind indices may have, by code: 0 int8, 1 int16,
// 2 int32, 3 int64, 4 uint8, 5 uint16, 6 uint32 (arrow::index_type reads the
// same codes off an Arrow format). Calls f(T{}) with the code's type T.
template <typename F>
decltype(auto) with_index_type(int code, F&& f) {
    switch (code) {
        case 0: return f(int8_t{});
        case 1: return f(int16_t{});
        case 2: return f(int32_t{});
        case 3: return f(int64_t{});
        case 4: return f(uint8_t{});
        case 5: return f(uint16_t{});
        case 6: return f(uint32_t{});
        default: throw std::invalid_argument("kind: dictionary indices must be an integer array");
    }
}

// Which kernel sweeps: the best available (AVX-512, else AVX2, else scalar), the
// scalar one, AVX-512 or AVX2 (an error where the CPU lacks it).
enum class LeanKernel : int { best = 0, scalar = 1, avx512 = 2, avx2 = 3 };

// The event columns the sweep reads, of one batch, in place.
struct EventBatch {
    const int32_t* rank = nullptr;
    const int64_t *start = nullptr, *end = nullptr;
    const void* kind = nullptr;  // dictionary indices
    int kind_type = -1;          // arrow::index_type
    std::vector<int8_t> kind_map;  // dictionary position -> kind code, -1 if unknown
    int64_t rows = 0;

    // Arrays the caller holds: `kind` of arrow::index_type `kind_type`, indexing
    // `map` (kind codes, -1 for unknown).
    static EventBatch of(const int32_t* rank, const int64_t* start, const int64_t* end, const void* kind,
                         int kind_type, const int8_t* map, int64_t map_size, int64_t rows) {
        EventBatch b;
        b.rank = rank;
        b.start = start;
        b.end = end;
        b.kind = kind;
        b.kind_type = kind_type;
        b.kind_map.assign(map, map + map_size);
        b.rows = rows;
        return b;
    }

    // False unless rank is int32, the times int64 ns, kind a dictionary of utf8
    // strings, and no column has nulls.
    bool read(const arrow::Batch& batch, const std::vector<std::string>& kinds);
};

// A part of the events: row ranges of batches, and its ranks (lo..hi, first and
// last row's) as the split assumed them.
//
// A part of many rows of one rank is cut further into **chunks** of consecutive
// rows, so that the last parts to run are short and the threads end together. A
// chunk c > 0 begins its span at H_c, the start of its row `head` rows in. Its
// first rows, the head (`lead`), only open the kinds that run on at H_c (the
// latest end of each kind among them: lead_ends, split.hpp); their time is
// accounted by chunk c - 1, which sweeps them after its own rows, and checks them. Chunk 0
// begins at its first row's start; the last chunk ends at the rank's last end.
// Chunk c accounts [H_c, H_{c+1}) exactly when no event before its first row
// reaches past H_c: chunk c - 1 checks that, and when it fails the caller takes
// the exact way.
struct RankPart {
    struct Piece {
        size_t batch;
        int64_t lo, hi;
    };
    struct Row {
        size_t batch;
        int64_t row;
    };
    std::vector<Piece> pieces;
    int32_t lo = 0, hi = 0;
    // Chunks only:
    bool chunk = false;
    bool last = true;          // the rank's last chunk (its span ends at the last end)
    std::vector<Piece> lead;   // but the first: its own head, before its span
    std::vector<Piece> head;   // but the last: the next chunk's head, swept after `pieces`
    Row from{}, to{};          // the span: [start of `from`, start of `to`) (the last: open)
};

// The rows seq[a, b) of a part's pieces, as pieces.
inline std::vector<RankPart::Piece> piece_range(const std::vector<RankPart::Piece>& seq, int64_t a, int64_t b) {
    std::vector<RankPart::Piece> out;
    int64_t at = 0;
    for (const auto& p : seq) {
        const int64_t n = p.hi - p.lo, x = std::max(a, at), z = std::min(b, at + n);
        if (x < z) out.push_back({p.batch, p.lo + (x - at), p.lo + (z - at)});
        at += n;
    }
    return out;
}

inline RankPart::Row row_at(const std::vector<RankPart::Piece>& seq, int64_t i) {
    for (const auto& p : seq) {
        if (i < p.hi - p.lo) return {p.batch, p.lo + i};
        i -= p.hi - p.lo;
    }
    return {seq.back().batch, seq.back().hi - 1};
}

// Split the events into about `parts` row ranges at rank boundaries, each cut at
// the rank boundary nearest an equal share of the rows, assuming the rank column
// sorted (not read whole: the caller checks afterwards that no rank is in two
// parts). Empty when a sample of 65 rows shows it unsorted.
std::vector<RankPart> rank_parts(const std::vector<EventBatch>& batches, int64_t parts);

// The windows and spans of a sweep, as Sweep's constructor takes them.
struct SweepPlan {
    const int32_t* win_rank = nullptr;
    const int64_t *win_start = nullptr, *win_end = nullptr, *win_row = nullptr;
    int64_t n_windows = 0;
    const int32_t* span_rank = nullptr;
    const int64_t *span_start = nullptr, *span_end = nullptr;
    int64_t n_spans = 0;
    int64_t bucket = 0;
    int64_t max_buckets = 0;  // Sweep::set_max_buckets, per part
};

// What sweep_split gives: the histogram, or the first problem a feed met (by
// batch, then row; `row` within its batch).
struct SplitResult {
    bool ok = false;
    Code code = Code::ok;
    int64_t row = 0;
    size_t batch = 0;
    Histogram hist;
};

// One part of the full ledger's early sweep (bindings/crossing.cpp's CrossingSweep),
// its sweep compiled with the others (bindings/sweep.cpp): the full sweep over the
// windows [cuts[w], cuts[w + 1]) shared by every rank (`win_rank` -1, `win_row` w), or
// with `levels` (the priority level of each kind code) the exclusive-time one over the
// cuts. A chunk but the last has the span [lo, hi) of both ends given (the last: from
// lo on), begins with what its lead leaves running, and declines when its rows reach
// past hi (the next chunk would miss them). False when it declines or a feed meets a
// problem (the caller then takes the exact way); else the histogram in `out`.
struct RankPartSweep {
    const std::vector<EventBatch>* events = nullptr;
    const RankPart* part = nullptr;
    const int64_t* cuts = nullptr;
    int64_t n_cuts = 0;
    const int32_t* win_rank = nullptr;
    const int64_t* win_row = nullptr;
    const int8_t* levels = nullptr;  // nullptr: the full sweep
    LeanKernel kernel = LeanKernel::best;
};
bool sweep_rank_part(const RankPartSweep& job, Histogram& out);

// Throws std::invalid_argument, as the ExclusiveSweep's constructor does, unless
// `levels` is a permutation of the priority levels 0..5 and this CPU runs `kernel`.
void check_levels(const int8_t* levels, LeanKernel kernel);

}  // namespace pau::core
