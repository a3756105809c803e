// pau native interval core: the checks and scans of lifecycle rows that come
// before attribution (pau.engine._lifecycle): each row's own problems, one pass over the
// step columns, nulls filled, values looked up. Time is int64 ns; kNull (the least
// int64) marks a missing value, as pau.engine._lifecycle's NULL.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "life_null.hpp"

namespace pau::core::life {

// Per row, the first problem visible in the row alone: 0 none, else 1 + its index
// in pau.engine._lifecycle._ROW_CHECKS. `acc` is the code of accountable records;
// needs_step[code] says a record must name a step (codes below n_codes).
inline std::vector<int8_t> row_checks(const int8_t* rec, const int64_t* start, const int64_t* end,
                                      const int64_t* block_end, const int64_t* durable, const int64_t* rank,
                                      const int64_t* attempt, const int64_t* step, int64_t n, int64_t acc,
                                      const uint8_t* needs_step, int64_t n_codes) {
    std::vector<int8_t> out(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < n; ++i) {
        const int64_t r = rec[i], s = start[i], e = end[i], b = block_end[i], d = durable[i];
        int8_t c = 0;
        if (r < 0 || r >= n_codes) c = 1;
        else if (s == kNull) c = 2;
        else if (e != kNull && e < s) c = 3;
        else if (b != kNull && b < s) c = 4;
        else if (d != kNull && d < s) c = 5;
        else if (rank[i] < -1) c = 6;
        else if (r != acc && attempt[i] == kNull) c = 7;
        else if (needs_step[r] && step[i] == kNull) c = 8;
        else if (r == acc && rank[i] < 0) c = 9;
        out[i] = c;
    }
    return out;
}

// The first problem of a step row alone: 0 none, else 1 + its index in
// pau.engine._lifecycle._STEP_CHECKS.
inline int8_t step_code(int64_t s, int64_t e, int64_t r, int64_t a, int64_t k, int64_t tok) {
    if (s == kNull) return 1;
    if (e != kNull && e < s) return 2;
    if (r < -1) return 3;
    if (a == kNull) return 4;
    if (k == kNull) return 5;
    if (tok < 0) return 6;
    return 0;
}

template <typename R, typename A>
std::vector<int8_t> step_codes(const int64_t* start, const int64_t* end, const R* rank, const A* attempt,
                               const int64_t* step, const int64_t* tokens, int64_t n) {
    std::vector<int8_t> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        out[i] = step_code(start[i], end[i], static_cast<int64_t>(rank[i]), static_cast<int64_t>(attempt[i]), step[i],
                           tokens[i]);
    return out;
}

// Ranks counted in a presence table up to this value.
constexpr int64_t kRankLimit = int64_t{1} << 24;

// What attribution needs of the step rows before it can label them, in one pass
// (see scan_steps).
struct StepScan {
    int64_t bad = 0, after = 0, max_start = kNull, max_end = kNull, neg_rank = 0, rank_over = 0, att_out = 0;
    bool ordered = true;
    int64_t step_min = std::numeric_limits<int64_t>::max();
    std::vector<uint8_t> rank_seen = std::vector<uint8_t>(1024, 0);
    std::vector<int64_t> att_count, att_max_step, att_max_end;
};

// One pass over the step columns. `bad`: rows that cannot be used (step_code);
// the other figures are only meaningful when it is 0. `after`: rows starting after
// `cut`; the latest start and non-null end; whether rows come by (rank, start);
// rows of rank -1; the least step; rank_seen[r] for ranks below kRankLimit
// (rank_over counts rows above); per attempt id att_lo + j (j < att_n) the rows,
// the highest step and the latest end among rows that ended (att_out: rows of
// other ids). With `end_bits` (an Arrow validity bitmap of `end` from bit
// `end_off`) the nulls of `end` are read from it and `end` with kNull filled in is
// written to `end_out` on the way.
template <typename R, typename A>
StepScan scan_steps(const int64_t* start, const int64_t* end, const R* rank, const A* attempt, const int64_t* step,
                    const int64_t* tokens, int64_t n, int64_t cut, int64_t att_lo, int64_t att_n,
                    const uint8_t* end_bits, int64_t end_off, int64_t* end_out) {
    StepScan sc;
    sc.att_count.assign(static_cast<size_t>(att_n), 0);
    sc.att_max_step.assign(static_cast<size_t>(att_n), kNull);
    sc.att_max_end.assign(static_cast<size_t>(att_n), kNull);
    int64_t pr = -2, ps = 0;
    for (int64_t i = 0; i < n; ++i) {
        const int64_t s = start[i];
        int64_t e;
        if (end_bits != nullptr) {
            const int64_t j = i + end_off;
            e = ((end_bits[j >> 3] >> (j & 7)) & 1) ? end[i] : kNull;
            end_out[i] = e;
        } else {
            e = end[i];
        }
        const int64_t r = static_cast<int64_t>(rank[i]), a = static_cast<int64_t>(attempt[i]), k = step[i];
        if (step_code(s, e, r, a, k, tokens[i]) != 0) {
            ++sc.bad;
            continue;
        }
        if (s > cut) ++sc.after;
        if (s > sc.max_start) sc.max_start = s;
        if (e != kNull && e > sc.max_end) sc.max_end = e;
        if (r < pr || (r == pr && s < ps)) sc.ordered = false;
        pr = r;
        ps = s;
        if (k < sc.step_min) sc.step_min = k;
        if (r < 0) {
            ++sc.neg_rank;
        } else if (r < static_cast<int64_t>(sc.rank_seen.size())) {
            sc.rank_seen[r] = 1;
        } else if (r < kRankLimit) {
            const int64_t grown = std::min(std::max(2 * static_cast<int64_t>(sc.rank_seen.size()), r + 1), kRankLimit);
            sc.rank_seen.resize(static_cast<size_t>(grown), 0);
            sc.rank_seen[r] = 1;
        } else {
            ++sc.rank_over;
        }
        const int64_t j = a - att_lo;
        if (0 <= j && j < att_n) {
            ++sc.att_count[j];
            if (e != kNull) {
                if (k > sc.att_max_step[j]) sc.att_max_step[j] = k;
                if (e > sc.att_max_end[j]) sc.att_max_end[j] = e;
            }
        } else {
            ++sc.att_out;
        }
    }
    return sc;
}

// out[i] = values[i], or `fill` where bit offset + i of the Arrow validity bitmap
// `bits` is clear.
template <typename T>
void fill_nulls(const T* values, const uint8_t* bits, int64_t offset, int64_t fill, int64_t* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const int64_t j = i + offset;
        out[i] = ((bits[j >> 3] >> (j & 7)) & 1) ? static_cast<int64_t>(values[i]) : fill;
    }
}

// lut[v - lo] per value, -1 outside the table.
template <typename T>
std::vector<int64_t> lut_map(const T* values, int64_t n, int64_t lo, const int64_t* lut, int64_t n_lut) {
    std::vector<int64_t> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        const int64_t v = static_cast<int64_t>(values[i]);
        // v - lo in unsigned arithmetic: exact for v >= lo, whatever their magnitudes
        const uint64_t d = static_cast<uint64_t>(v) - static_cast<uint64_t>(lo);
        out[i] = (v >= lo && d < static_cast<uint64_t>(n_lut)) ? lut[d] : -1;
    }
    return out;
}

}  // namespace pau::core::life
