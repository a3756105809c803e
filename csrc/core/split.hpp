// pau native interval core: events split at rank boundaries, and the in-memory
// sweep run on the native pool (parts.hpp).
//
// Events are read in place, either from record batches through the Arrow C data
// interface (EventBatch::read, the full ledger's early sweep in crossing.hpp) or
// from arrays the caller already holds (EventBatch::of, pau.engine._sweep's in-memory
// sweep). rank_parts splits them at rank boundaries without reading every row
// (EventBatch, RankPart and rank_parts are in sweep_api.hpp, compiled once in
// sweep_api.cpp: the full ledger's translation unit uses them too); sweep_split sweeps each part on its own thread and checks afterwards that the
// split's assumption (ranks sorted) held, sweeping again on one thread when not.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "parts.hpp"
#include "sweep.hpp"
#include "sweep_api.hpp"

namespace pau::core {

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

// Rows [lo, hi) of one batch into lead_ends's maxima.
template <typename IdxT>
void kind_ends(const EventBatch& b, int64_t lo, int64_t hi, int64_t* ends, int64_t& last_start) {
    const IdxT* idx = static_cast<const IdxT*>(b.kind);
    const int64_t map_size = static_cast<int64_t>(b.kind_map.size());
    for (int64_t i = lo; i < hi; ++i) {
        const uint64_t ki = static_cast<uint64_t>(static_cast<int64_t>(idx[i]));
        const int k = ki < static_cast<uint64_t>(map_size) ? b.kind_map[ki] : -1;
        if (k >= 0 && b.end[i] > ends[k]) ends[k] = b.end[i];
        if (b.start[i] > last_start) last_start = b.start[i];
    }
}

// The latest end of each kind among the rows of `pieces` (INT64_MIN for a kind
// none has; rows of no known kind are skipped), and their latest start.
inline void lead_ends(const std::vector<EventBatch>& batches, const std::vector<RankPart::Piece>& pieces,
                      int64_t* ends, int64_t& last_start) {
    for (int k = 0; k < kNumKinds; ++k) ends[k] = std::numeric_limits<int64_t>::min();
    last_start = std::numeric_limits<int64_t>::min();
    for (const RankPart::Piece& p : pieces) {
        const EventBatch& b = batches[p.batch];
        with_index_type(b.kind_type, [&](auto type) { kind_ends<decltype(type)>(b, p.lo, p.hi, ends, last_start); });
    }
}

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
