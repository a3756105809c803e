// pau native interval core: labelled intervals painted into disjoint pieces
// (pau.engine._lifecycle's background and overlay, pau.figures.hardware's activity).
//
// paint: at each instant of a rank the interval of the highest level covering it
// wins; within a level the later start wins, ties the later row. The pieces are
// maximal (touching pieces of one row merge); instants covered by no interval give
// none. by_rank_start: the row order paint reads, by (rank, start), stable.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

namespace pau::core {

struct Painted {
    std::vector<int32_t> rank;
    std::vector<int64_t> start, end, row;  // row: the interval each piece is of
};

// `order` sorts the n rows by (rank, start).
template <typename R>
Painted paint(const R* rank, const int64_t* start, const int64_t* end, const int8_t* level, const int64_t* order,
              int64_t n) {
    Painted out;
    std::vector<int64_t> bounds;
    std::vector<int64_t> win;
    auto piece = [&](int64_t r, int64_t s, int64_t e, int64_t row) {
        out.rank.push_back(static_cast<int32_t>(r));
        out.start.push_back(s);
        out.end.push_back(e);
        out.row.push_back(row);
    };
    int64_t a = 0;
    while (a < n) {
        const int64_t r = static_cast<int64_t>(rank[order[a]]);
        int64_t b = a;
        while (b < n && static_cast<int64_t>(rank[order[b]]) == r) ++b;
        const int64_t k = b - a;
        // Intervals of the rank that do not overlap (the usual overlay: saves and
        // phases one after another) are their own pieces.
        bool disjoint = true;
        int64_t reach = std::numeric_limits<int64_t>::min();  // the latest end of a non-empty interval so far
        for (int64_t j = a; j < b; ++j) {
            const int64_t i = order[j];
            if (end[i] > start[i]) {
                if (start[i] < reach) {
                    disjoint = false;
                    break;
                }
                reach = std::max(reach, end[i]);
            }
        }
        if (disjoint) {
            for (int64_t j = a; j < b; ++j) {
                const int64_t i = order[j];
                if (end[i] > start[i]) piece(r, start[i], end[i], i);
            }
            a = b;
            continue;
        }
        bounds.resize(static_cast<size_t>(2 * k));
        for (int64_t j = 0; j < k; ++j) {
            const int64_t i = order[a + j];
            bounds[2 * j] = start[i];
            bounds[2 * j + 1] = end[i];
        }
        std::sort(bounds.begin(), bounds.end());
        bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
        const int64_t nseg = static_cast<int64_t>(bounds.size()) - 1;
        if (nseg > 0) {
            win.assign(static_cast<size_t>(nseg), -1);
            for (int64_t j = 0; j < k; ++j) {
                const int64_t i = order[a + j];
                if (end[i] <= start[i]) continue;
                const int64_t lo = std::lower_bound(bounds.begin(), bounds.end(), start[i]) - bounds.begin();
                const int64_t hi = std::lower_bound(bounds.begin(), bounds.end(), end[i]) - bounds.begin();
                for (int64_t s = lo; s < hi; ++s) {
                    const int64_t w = win[s];
                    if (w < 0 || level[i] > level[w] ||
                        (level[i] == level[w] && (start[i] > start[w] || (start[i] == start[w] && i > w))))
                        win[s] = i;
                }
            }
            for (int64_t s = 0; s < nseg; ++s) {
                const int64_t w = win[s];
                if (w < 0) continue;
                if (!out.row.empty() && out.row.back() == w && out.end.back() == bounds[s] && out.rank.back() == r)
                    out.end.back() = bounds[s + 1];
                else
                    piece(r, bounds[s], bounds[s + 1], w);
            }
        }
        a = b;
    }
    return out;
}

// Row order by (rank, start), stable (numpy's ``lexsort((start, rank))``): a
// counting sort by dense rank ``rank_lut[rank - r_lo]`` (below n_ranks), then a
// stable sort by start of each rank's rows that are not in time order already.
template <typename R>
std::vector<int64_t> by_rank_start(const R* rank, const int64_t* start, int64_t n, int64_t r_lo,
                                   const int64_t* rank_lut, int64_t n_ranks) {
    std::vector<int64_t> count(static_cast<size_t>(n_ranks + 1), 0);
    for (int64_t i = 0; i < n; ++i) ++count[rank_lut[static_cast<int64_t>(rank[i]) - r_lo] + 1];
    for (int64_t d = 0; d < n_ranks; ++d) count[d + 1] += count[d];
    std::vector<int64_t> first(count.begin(), count.begin() + n_ranks);
    std::vector<int64_t> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        const int64_t d = rank_lut[static_cast<int64_t>(rank[i]) - r_lo];
        out[count[d]++] = i;
    }
    for (int64_t d = 0; d < n_ranks; ++d) {
        auto lo = out.begin() + first[d], hi = out.begin() + count[d];
        auto by_start = [&](int64_t x, int64_t y) { return start[x] < start[y]; };
        if (!std::is_sorted(lo, hi, by_start)) std::stable_sort(lo, hi, by_start);
    }
    return out;
}

}  // namespace pau::core
