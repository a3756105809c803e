// pau native interval core: rows in (rank, start) order.
//
// The sweeps take each rank's events in start order; a caller whose rows are not
// (pau.engine._sweep) asks for the permutation that puts them so, ties in row order.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pau::core {

// Sort (start, row) pairs by start, stably: an LSD radix sort by bytes of the
// start (as unsigned, its sign bit flipped, so that negative times come first),
// skipping the bytes that every key shares; short runs by std::stable_sort.
inline void sort_by_start(std::pair<int64_t, int64_t>* a, size_t n, std::vector<std::pair<int64_t, int64_t>>& tmp) {
    auto by_start = [](const std::pair<int64_t, int64_t>& x, const std::pair<int64_t, int64_t>& y) {
        return x.first < y.first;
    };
    if (n < 1024) {
        std::stable_sort(a, a + n, by_start);
        return;
    }
    auto key = [](int64_t v) { return static_cast<uint64_t>(v) ^ (uint64_t{1} << 63); };
    std::vector<std::array<size_t, 256>> count(8);
    for (auto& c : count) c.fill(0);
    for (size_t i = 0; i < n; ++i) {
        const uint64_t k = key(a[i].first);
        for (int d = 0; d < 8; ++d) ++count[static_cast<size_t>(d)][(k >> (8 * d)) & 0xFF];
    }
    tmp.resize(n);
    std::pair<int64_t, int64_t>* src = a;
    std::pair<int64_t, int64_t>* dst = tmp.data();
    const uint64_t first = key(a[0].first);
    for (int d = 0; d < 8; ++d) {
        std::array<size_t, 256>& c = count[static_cast<size_t>(d)];
        if (c[(first >> (8 * d)) & 0xFF] == n) continue;  // every key has this byte
        size_t at = 0;
        for (size_t& x : c) {
            const size_t m = x;
            x = at;
            at += m;
        }
        for (size_t i = 0; i < n; ++i) dst[c[(key(src[i].first) >> (8 * d)) & 0xFF]++] = src[i];
        std::swap(src, dst);
    }
    if (src != a) std::copy(src, src + n, a);
}

// A permutation that orders rows by (rank, start), ties in row order (as
// numpy's lexsort((start, rank))). Counting sort by rank (through dense ids in
// rank order), then each rank's run is sorted as contiguous (start, row) pairs
// (sort_by_start) unless it is already in order.
inline std::vector<int64_t> order_by_rank_start(const int32_t* rank, const int64_t* start, int64_t n) {
    std::unordered_map<int32_t, int64_t> dense;
    std::vector<int32_t> ranks;
    std::vector<int32_t> id(static_cast<size_t>(n));
    int32_t prev = 0;
    int32_t prev_id = -1;
    constexpr int32_t kDirect = 1 << 20;  // ranks 0 .. kDirect - 1 by a table, others by a map
    std::vector<int32_t> direct;
    for (int64_t i = 0; i < n; ++i) {
        const int32_t r = rank[i];
        if (prev_id < 0 || r != prev) {
            prev = r;
            if (r >= 0 && r < kDirect) {
                if (static_cast<size_t>(r) >= direct.size()) direct.resize(static_cast<size_t>(r) + 1, -1);
                int32_t& slot = direct[static_cast<size_t>(r)];
                if (slot < 0) {
                    slot = static_cast<int32_t>(ranks.size());
                    ranks.push_back(r);
                }
                prev_id = slot;
            } else {
                auto [it, fresh] = dense.try_emplace(r, static_cast<int64_t>(ranks.size()));
                if (fresh) ranks.push_back(r);
                prev_id = static_cast<int32_t>(it->second);
            }
        }
        id[static_cast<size_t>(i)] = prev_id;
    }
    const size_t g = ranks.size();
    std::vector<int64_t> by_rank(g);
    for (size_t i = 0; i < g; ++i) by_rank[i] = static_cast<int64_t>(i);
    std::sort(by_rank.begin(), by_rank.end(), [&](int64_t a, int64_t b) { return ranks[a] < ranks[b]; });
    std::vector<int64_t> pos(g);
    for (size_t i = 0; i < g; ++i) pos[static_cast<size_t>(by_rank[i])] = static_cast<int64_t>(i);
    std::vector<int64_t> offset(g + 1, 0);
    for (int64_t i = 0; i < n; ++i) ++offset[static_cast<size_t>(pos[id[static_cast<size_t>(i)]]) + 1];
    for (size_t i = 0; i < g; ++i) offset[i + 1] += offset[i];
    std::vector<std::pair<int64_t, int64_t>> keyed(static_cast<size_t>(n));
    {
        std::vector<int64_t> fill(offset.begin(), offset.end() - 1);
        for (int64_t i = 0; i < n; ++i) {
            const size_t p = static_cast<size_t>(fill[static_cast<size_t>(pos[id[static_cast<size_t>(i)]])]++);
            keyed[p] = {start[i], i};
        }
    }
    std::vector<int64_t>().swap(pos);
    std::vector<int32_t>().swap(id);
    std::vector<std::pair<int64_t, int64_t>> tmp;
    for (size_t k = 0; k < g; ++k) {
        auto b = keyed.begin() + offset[k], e = keyed.begin() + offset[k + 1];
        auto by_start = [](const std::pair<int64_t, int64_t>& x, const std::pair<int64_t, int64_t>& y) {
            return x.first < y.first;
        };
        if (!std::is_sorted(b, e, by_start)) sort_by_start(&*b, static_cast<size_t>(e - b), tmp);
    }
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = keyed[static_cast<size_t>(i)].second;
    return order;
}

}  // namespace pau::core
