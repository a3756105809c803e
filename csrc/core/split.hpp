// pau native interval core: events split at rank boundaries, and the in-memory
// sweep run on the native pool (parts.hpp).
//
// Events are read in place, either from record batches through the Arrow C data
// interface (EventBatch::read, the full ledger's early sweep in crossing.hpp) or
// from arrays the caller already holds (EventBatch::of, pau.engine._sweep's in-memory
// sweep). rank_parts splits them at rank boundaries without reading every row;
// sweep_split sweeps each part on its own thread and checks afterwards that the
// split's assumption (ranks sorted) held, sweeping again on one thread when not.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "arrow_c.hpp"
#include "parts.hpp"
#include "sweep.hpp"

namespace pau::core {

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
    bool read(const arrow::Batch& batch, const std::vector<std::string>& kinds) {
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
};

// A part of the events: row ranges of batches, and its ranks (lo..hi, first and
// last row's) as the split assumed them.
//
// A part of many rows of one rank is cut further into **chunks** of consecutive
// rows, so that the last parts to run are short and the threads end together. A
// chunk c > 0 begins its span at H_c, the start of its row `head` rows in. Its
// first rows, the head (`lead`), only open the kinds that run on at H_c (the
// latest end of each kind among them: lead_ends); their time is accounted by
// chunk c - 1, which sweeps them after its own rows, and checks them. Chunk 0
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
inline std::vector<RankPart> rank_parts(const std::vector<EventBatch>& batches, int64_t parts) {
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

namespace detail {

// The spans of `spans` (indices into the plan's), as the arrays a sweep takes.
struct PartSpans {
    std::vector<int32_t> rank;
    std::vector<int64_t> start, end;
};

inline PartSpans part_spans(const SweepPlan& plan, const std::vector<int64_t>& spans) {
    PartSpans out;
    for (int64_t i : spans) {
        out.rank.push_back(plan.span_rank[i]);
        out.start.push_back(plan.span_start[i]);
        out.end.push_back(plan.span_end[i]);
    }
    return out;
}

// Feed `pieces` to `sw` (the full Sweep or the ExclusiveSweep: the same feed and finish),
// stopping at the first problem.
template <class SweepT>
SplitResult feed_pieces(SweepT& sw, const std::vector<EventBatch>& batches,
                        const std::vector<RankPart::Piece>& pieces, const int64_t* order) {
    SplitResult out;
    for (const RankPart::Piece& p : pieces) {
        const EventBatch& b = batches[p.batch];
        const FeedResult r = with_index_type(b.kind_type, [&](auto type) {
            using IdxT = decltype(type);
            // With an order (a permutation of the one batch), the arrays are read through it.
            if (order) return sw.template feed<IdxT>(b.rank, b.start, b.end, static_cast<const IdxT*>(b.kind),
                                                     b.kind_map.data(), static_cast<int64_t>(b.kind_map.size()),
                                                     p.hi - p.lo, order + p.lo);
            return sw.template feed<IdxT>(b.rank + p.lo, b.start + p.lo, b.end + p.lo,
                                          static_cast<const IdxT*>(b.kind) + p.lo, b.kind_map.data(),
                                          static_cast<int64_t>(b.kind_map.size()), p.hi - p.lo);
        });
        if (r.code != Code::ok) {
            out.code = r.code;
            out.row = p.lo + r.row;
            out.batch = p.batch;
            return out;
        }
    }
    out.hist = sw.finish();
    out.ok = true;
    return out;
}

// One sweep over `pieces` with the spans of `spans` (indices into the plan's).
inline SplitResult sweep_pieces(const SweepPlan& plan, const std::vector<EventBatch>& batches,
                                const std::vector<RankPart::Piece>& pieces, const std::vector<int64_t>& spans,
                                const int64_t* order) {
    const PartSpans sp = part_spans(plan, spans);
    Sweep sw(plan.win_rank, plan.win_start, plan.win_end, plan.win_row, plan.n_windows, sp.rank.data(),
             sp.start.data(), sp.end.data(), static_cast<int64_t>(sp.rank.size()), plan.bucket);
    sw.set_max_buckets(plan.max_buckets);
    return feed_pieces(sw, batches, pieces, order);
}

template <typename T>
void append(std::vector<T>& to, const std::vector<T>& from) {
    to.insert(to.end(), from.begin(), from.end());
}

}  // namespace detail

// Sweep the events of `batches` (in memory, sorted by start within each rank; an
// `order`, a permutation of the one batch, to read it through otherwise) into one
// histogram, on up to `parts` threads of the native pool, the caller's included.
// The events are split at rank boundaries (rank_parts); each part gets the spans
// of its ranks, the first also those of ranks without events. The split assumed
// the rank column sorted; when a rank turns up in two parts it was not, and the
// events are swept again on one thread. A problem in a feed (unsorted starts, a
// bad row) is returned, the first by batch and row; errors in the windows or
// spans are thrown (std::invalid_argument), as by Sweep.
// The split and merge of sweep_split, for any sweep: `sweep(pieces, spans, order)`
// sweeps those pieces with those spans (indices into the plan's) into a SplitResult.
template <class SweepPieces>
SplitResult split_sweep(const SweepPlan& plan, const std::vector<EventBatch>& batches, int64_t parts,
                        const int64_t* order, SweepPieces&& sweep) {
    std::vector<RankPart::Piece> whole;
    for (size_t b = 0; b < batches.size(); ++b) whole.push_back({b, 0, batches[b].rows});
    std::vector<int64_t> all_spans(static_cast<size_t>(plan.n_spans));
    for (int64_t i = 0; i < plan.n_spans; ++i) all_spans[static_cast<size_t>(i)] = i;
    const std::vector<RankPart> split =
        (parts > 1 && order == nullptr) ? rank_parts(batches, parts) : std::vector<RankPart>{};
    if (split.size() < 2) return sweep(whole, all_spans, order);

    std::vector<std::vector<int64_t>> spans(split.size());
    for (int64_t i = 0; i < plan.n_spans; ++i) {
        size_t at = 0;  // parts hold rising rank ranges (as assumed); no part: the first
        for (size_t q = 0; q < split.size(); ++q)
            if (plan.span_rank[i] >= split[q].lo && plan.span_rank[i] <= split[q].hi) at = q;
        spans[at].push_back(i);
    }
    std::vector<SplitResult> results(split.size());
    Tasks tasks([&](size_t q) { results[q] = sweep(split[q].pieces, spans[q], nullptr); }, split.size());
    tasks.start(split.size() - 1);
    tasks.wait();

    const SplitResult* first = nullptr;
    for (const SplitResult& r : results)
        if (!r.ok && (first == nullptr || std::make_pair(r.batch, r.row) < std::make_pair(first->batch, first->row)))
            first = &r;
    if (first != nullptr) return *first;
    std::vector<int32_t> seen;
    for (const SplitResult& r : results) detail::append(seen, r.hist.span_rank);
    std::sort(seen.begin(), seen.end());
    if (std::adjacent_find(seen.begin(), seen.end()) != seen.end())  // a rank in two parts: not sorted after all
        return sweep(whole, all_spans, nullptr);
    SplitResult out = std::move(results[0]);
    for (size_t q = 1; q < results.size(); ++q) {
        const Histogram& h = results[q].hist;
        detail::append(out.hist.rank, h.rank);
        detail::append(out.hist.window, h.window);
        detail::append(out.hist.mask, h.mask);
        detail::append(out.hist.duration, h.duration);
        detail::append(out.hist.span_rank, h.span_rank);
        detail::append(out.hist.span_start, h.span_start);
        detail::append(out.hist.span_end, h.span_end);
    }
    return out;
}

inline SplitResult sweep_split(const SweepPlan& plan, const std::vector<EventBatch>& batches, int64_t parts,
                               const int64_t* order = nullptr) {
    return split_sweep(plan, batches, parts, order,
                       [&](const std::vector<RankPart::Piece>& pieces, const std::vector<int64_t>& spans,
                           const int64_t* ord) { return detail::sweep_pieces(plan, batches, pieces, spans, ord); });
}

}  // namespace pau::core
