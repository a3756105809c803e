// pau native interval core: the events' reading and split (sweep_api.hpp), compiled
// once for every translation unit that sweeps.
#include "sweep_api.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "arrow_c.hpp"

namespace pau::core {

bool EventBatch::read(const arrow::Batch& batch, const std::vector<std::string>& kinds) {
    if (!batch.ok()) return false;
    rows = batch.rows();
    const arrow::Column r = batch.column("rank"), s = batch.column("start_ns"), e = batch.column("end_ns"),
                        k = batch.column("kind");
    if (!r || !s || !e || !k || r.has_nulls() || s.has_nulls() || e.has_nulls() || k.has_nulls()) return false;
    rank = r.int32();
    start = s.int64_ns();
    end = e.int64_ns();
    if (!rank || !start || !end) return false;
    const ArrowSchema* dict_schema = k.schema->dictionary;
    const ArrowArray* dict = k.array->dictionary;
    kind_type = arrow::index_type(k.schema->format);
    if (!dict_schema || !dict || kind_type < 0 || std::string(dict_schema->format) != "u") return false;
    const arrow::Column values{dict_schema, dict};
    kind_map.assign(static_cast<size_t>(values.length()), -1);
    for (int64_t j = 0; j < values.length(); ++j) {
        if (!values.valid(j)) continue;
        int32_t len = 0;
        const char* p = values.utf8(j, len);
        for (size_t c = 0; c < kinds.size(); ++c)
            if (kinds[c].size() == static_cast<size_t>(len) && std::memcmp(kinds[c].data(), p, len) == 0)
                kind_map[static_cast<size_t>(j)] = static_cast<int8_t>(c);
    }
    const int width[] = {1, 2, 4, 8, 1, 2, 4};
    kind = static_cast<const char*>(k.array->buffers[1]) + k.array->offset * width[kind_type];
    return true;
}

std::vector<RankPart> rank_parts(const std::vector<EventBatch>& batches, int64_t parts) {
    std::vector<int64_t> offset{0};
    for (const EventBatch& b : batches) offset.push_back(offset.back() + b.rows);
    const int64_t n = offset.back();
    std::vector<RankPart> out;
    if (n == 0 || parts < 1) return out;
    auto rank_at = [&](int64_t i) {
        const size_t b = static_cast<size_t>(std::upper_bound(offset.begin(), offset.end(), i) - offset.begin() - 1);
        return batches[b].rank[i - offset[b]];
    };
    for (int64_t j = 0, prev = rank_at(0); j <= 64; ++j) {
        const int32_t r = rank_at(std::min(n - 1, j * n / 64));
        if (r < prev) return out;
        prev = r;
    }
    auto first_at_least = [&](int64_t v) {  // over the (assumed) sorted ranks
        int64_t lo = 0, hi = n;
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (rank_at(mid) < v) lo = mid + 1;
            else hi = mid;
        }
        return lo;
    };
    std::vector<int64_t> cuts{0, n};
    for (int64_t j = 1; j < parts; ++j) {
        const int64_t i = j * n / parts;
        const int64_t v = rank_at(i), lo = first_at_least(v), hi = first_at_least(v + 1);
        cuts.push_back(i - lo <= hi - i ? lo : hi);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
        RankPart p;
        p.lo = rank_at(cuts[c]);
        p.hi = rank_at(cuts[c + 1] - 1);
        for (size_t b = 0; b < batches.size(); ++b) {
            const int64_t x = std::max(cuts[c], offset[b]), z = std::min(cuts[c + 1], offset[b + 1]);
            if (x < z) p.pieces.push_back({b, x - offset[b], z - offset[b]});
        }
        out.push_back(std::move(p));
    }
    return out;
}

}  // namespace pau::core
