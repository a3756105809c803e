// pau native interval core: what the full ledger's early sweep reads (pau.engine._crossing).
//
// `ledger(events, lifecycle)` sweeps the events on helper threads while Python
// attributes the lifecycle. The sweep's windows are the **cuts**: every instant at
// which some rank's lifecycle state may change, read from the lifecycle table
// before any attribution (cut_times). The events are read in place and split at
// rank boundaries into parts (rank_parts, sweep_api.hpp), a rank of many events further
// into chunks (chunked), one sweep each. Both tables are read as record batches through
// the Arrow C data interface (arrow_c.hpp), and a layout not read zero-copy is
// declined: the caller then takes the exact way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "arrow_c.hpp"
#include "life_null.hpp"
#include "sweep_api.hpp"

namespace pau::core {

// The lifecycle columns the cuts need, of one batch.
struct LifeBatch {
    arrow::Utf8 record;
    arrow::Ints start, end, block_end, durable, rank, step;
    int64_t rows = 0;

    // False when a column has a layout read elsewhere (the exact way).
    bool read(const arrow::Batch& batch) {
        if (!batch.ok()) return false;
        rows = batch.rows();
        const arrow::Column rec = batch.column("record"), s = batch.column("start_ns");
        return rec && s && record.read(rec) && start.read(s, true) && end.read(batch.column("end_ns"), true) &&
               block_end.read(batch.column("block_end_ns"), true) &&
               durable.read(batch.column("durable_ns"), true) && rank.read(batch.column("rank"), false) &&
               step.read(batch.column("step"), false);
    }

    struct Row {
        bool numbered;  // with a step number
        int64_t s, e, b, d, rank, number;
    };
    // The end of the run of step rows from i (i itself if row i is not one).
    int64_t step_run(int64_t i) const { return record.run_of(i, kStep); }
    // The step number of row i, if it has one.
    bool number(int64_t i, int64_t& out) const {
        if (!step.values || !step.valid(i)) return false;
        out = step.get(i, 0);
        return true;
    }

    // Row i's times, rank and step number.
    Row fields(int64_t i) const {
        Row r{};
        r.s = start.get(i, life::kNull);  // nulls and absent columns: no time
        r.e = end.get(i, life::kNull);
        r.b = block_end.get(i, life::kNull);
        r.d = durable.get(i, life::kNull);
        r.rank = !rank.values ? -1 : !rank.valid(i) ? -2 : rank.get(i, 0);
        r.numbered = number(i, r.number);
        return r;
    }

  private:
    inline static const std::string kStep = "step";
};

// The cuts, sorted and distinct: every time of a row that is not a step; the start
// of each step row that does not continue its rank's step row before it (in table
// order; one that ends where it starts), and the end of each step row that its
// rank's next step row does not continue; the end of each step row whose number a
// row that is not a step names (a checkpoint save or a restore: where preserved
// work may end); and `as_of` unless it is life::kNull. No null time is a cut. A step
// row's rank is its key as written (-1, all ranks, is a key of its own; a null
// rank, -2, too). Rows run on from one batch into the next.
inline std::vector<int64_t> cut_times(const std::vector<LifeBatch>& batches, int64_t as_of) {
    std::vector<int64_t> out;
    // Step numbers that rows other than steps name, as a byte map over their range
    // when it is small (a look-up per step row), else sorted.
    std::vector<int64_t> named;
    for (const LifeBatch& batch : batches) {
        if (!batch.step.values) continue;
        int64_t k = 0;
        for (int64_t i = 0; i < batch.rows;) {
            const int64_t j = batch.step_run(i);  // step rows are skipped a run at a time
            if (j > i) {
                i = j;
                continue;
            }
            if (batch.number(i, k)) named.push_back(k);
            ++i;
        }
    }
    std::sort(named.begin(), named.end());
    named.erase(std::unique(named.begin(), named.end()), named.end());
    constexpr int64_t kMapMax = 1 << 24;
    const bool mapped = !named.empty() && static_cast<uint64_t>(named.back()) - static_cast<uint64_t>(named.front()) <
                                              static_cast<uint64_t>(kMapMax);
    std::vector<char> named_map;
    if (mapped) {
        named_map.assign(static_cast<size_t>(named.back() - named.front() + 1), 0);
        for (int64_t k : named) named_map[static_cast<size_t>(k - named.front())] = 1;
    }
    auto is_named = [&](int64_t k) {
        if (named.empty()) return false;
        if (!mapped) return std::binary_search(named.begin(), named.end(), k);
        return k >= named.front() && k <= named.back() && named_map[static_cast<size_t>(k - named.front())] != 0;
    };
    // Per rank key, the end of its last step row (not a cut yet: the next may continue it).
    constexpr int64_t kDirect = 1 << 20;
    std::vector<int64_t> open_end;  // keys -2 .. kDirect - 3, by key + 2
    std::vector<char> open;
    std::unordered_map<int64_t, int64_t> open_far;  // other keys
    auto step = [&](int64_t key, int64_t s, int64_t e) {
        int64_t* slot = nullptr;
        bool was_open = false;
        if (key + 2 >= 0 && key + 2 < kDirect) {
            const size_t k = static_cast<size_t>(key + 2);
            if (k >= open.size()) {
                open.resize(k + 1, 0);
                open_end.resize(k + 1, 0);
            }
            was_open = open[k];
            open[k] = 1;
            slot = &open_end[k];
        } else {
            auto [it, fresh] = open_far.try_emplace(key, 0);
            was_open = !fresh;
            slot = &it->second;
        }
        if (!(was_open && *slot == s)) {
            if (was_open) out.push_back(*slot);
            out.push_back(s);
        }
        *slot = e;
    };
    for (const LifeBatch& batch : batches) {
        for (int64_t i = 0; i < batch.rows;) {
            const int64_t j = batch.step_run(i);
            if (j == i) {  // not a step
                const LifeBatch::Row r = batch.fields(i);
                out.insert(out.end(), {r.s, r.e, r.b, r.d});
                ++i;
                continue;
            }
            for (; i < j; ++i) {
                const LifeBatch::Row r = batch.fields(i);
                step(r.rank, r.s, r.e);
                if (r.numbered && is_named(r.number)) out.push_back(r.e);
            }
        }
    }
    for (size_t k = 0; k < open.size(); ++k)
        if (open[k]) out.push_back(open_end[k]);
    for (const auto& kv : open_far) out.push_back(kv.second);
    if (as_of != life::kNull) out.push_back(as_of);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    if (!out.empty() && out.front() == life::kNull) out.erase(out.begin());  // nulls sort first
    return out;
}

// Cut the parts of one rank into chunks, guided: a chunk has about a
// 2 * threads-th of the rows left from its start to the end of all the parts
// (taken in order), at most `chunk_rows` and at least `min_rows`, so the chunks
// get shorter towards the end and the threads, whenever each joined, end
// together. Heads have `head_rows` (at most half the chunk they begin).
inline std::vector<RankPart> chunked(std::vector<RankPart> parts, int64_t chunk_rows, int64_t min_rows,
                                     int64_t threads, int64_t head_rows) {
    std::vector<int64_t> rows(parts.size(), 0);
    int64_t left = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
        for (const auto& pc : parts[i].pieces) rows[i] += pc.hi - pc.lo;
        left += rows[i];
    }
    min_rows = std::max<int64_t>(min_rows, 2);
    chunk_rows = std::max(chunk_rows, min_rows);
    std::vector<RankPart> out;
    for (size_t i = 0; i < parts.size(); ++i) {
        RankPart& p = parts[i];
        const int64_t n = rows[i];
        // Chunk boundaries k[0] = 0 < ... < k[m] = n.
        std::vector<int64_t> k{0};
        if (p.lo == p.hi) {
            for (int64_t a = 0; n - a >= 2 * min_rows;) {
                const int64_t size = std::clamp((left - a) / (2 * std::max<int64_t>(threads, 1)), min_rows, chunk_rows);
                if (n - a - size < min_rows) break;  // the rest is one chunk
                a += size;
                k.push_back(a);
            }
        }
        k.push_back(n);
        left -= n;
        const size_t m = k.size() - 1;
        if (m < 2) {
            out.push_back(std::move(p));
            continue;
        }
        auto head = [&](size_t c) {  // rows of chunk c's head (c >= 1)
            return std::max<int64_t>(1, std::min(head_rows, (k[c + 1] - k[c]) / 2));
        };
        for (size_t c = 0; c < m; ++c) {
            RankPart q;
            q.lo = q.hi = p.lo;
            q.chunk = true;
            q.last = c == m - 1;
            const int64_t a = k[c], b = k[c + 1], own = c == 0 ? a : a + head(c);
            q.lead = piece_range(p.pieces, a, own);
            q.pieces = piece_range(p.pieces, own, b);
            q.from = row_at(p.pieces, own);
            if (!q.last) {
                const int64_t h = head(c + 1);
                q.head = piece_range(p.pieces, b, b + h);
                q.to = row_at(p.pieces, b + h);
            }
            out.push_back(std::move(q));
        }
    }
    return out;
}

// The runs of state intervals (sorted by rank and start): intervals of one rank
// and one state that touch become one. The sweep of the full ledger's exact way
// takes them as its windows; CellCrossing crosses a histogram with them.
struct StateRuns {
    std::vector<int32_t> rank;
    std::vector<int64_t> start, end;
    std::vector<int8_t> state;
};

inline StateRuns state_runs(const int32_t* rank, const int64_t* start, const int64_t* end, const int8_t* state,
                            int64_t n) {
    StateRuns r;
    for (int64_t i = 0; i < n; ++i) {
        const size_t m = r.rank.size();
        if (m > 0 && r.rank[m - 1] == rank[i] && r.state[m - 1] == state[i] && r.end[m - 1] == start[i]) {
            r.end[m - 1] = end[i];
        } else {
            r.rank.push_back(rank[i]);
            r.start.push_back(start[i]);
            r.end.push_back(end[i]);
            r.state.push_back(state[i]);
        }
    }
    return r;
}

// The full ledger's cells from a sweep's histogram and the state runs, for either
// way the full ledger sweeps: over the cuts (window w is [cuts[w], cuts[w + 1]) on
// every rank: the early sweep) or over the state runs themselves (window w is run
// w, of its rank only: the exact way). The windows are given as their starts and
// ends, `w_start[w]`, `w_end[w]`.
//
// set_runs merges the state intervals (sorted by rank and start, ranks among the
// sorted accountable `ranks`) into runs (state_runs). Each run first puts its
// whole time in the `idle` activity of its (rank, state) cell. add() then takes
// histogram rows, best in the order the sweep gives them (a rank's rows in window
// order; a rank's chunks one after the other): each row of a busy mask (not 0)
// moves its time from idle to its activity, in the cell of the run its window lies
// in, or nowhere when the window lies outside every run of its rank (or its rank
// is not accountable, or it is outside every window). Idle time is what is left,
// so rows of mask 0 are not read and the sweep needs no spans.
//
// Cells are indexed (p * n_states + state) * n_act + activity for rank ranks[p].
// Either call returns false when the windows do not resolve the states (a busy
// row's window reaches over a run boundary, a run reaches outside the windows'
// extent) or an argument is out of range: the early sweep's caller then takes the
// exact way, whose windows always resolve them.
class CellCrossing {
  public:
    CellCrossing(const int32_t* ranks, int64_t n_ranks, const int64_t* w_start, const int64_t* w_end,
                 int64_t n_windows, const int8_t* act_of_mask, int64_t idle, int64_t n_states, int64_t n_act)
        : ranks_(ranks), n_ranks_(n_ranks), w_start_(w_start), w_end_(w_end), n_windows_(n_windows),
          act_(act_of_mask), idle_(idle), n_states_(n_states), n_act_(n_act) {
        if (n_ranks >= 0 && n_states > 0 && n_act > 0 && idle >= 0 && idle < n_act)
            cells_.assign(static_cast<size_t>(n_ranks * n_states * n_act), 0);
        for (int64_t w = 0; w < n_windows; ++w) {
            lo_all_ = std::min(lo_all_, w_start[w]);
            hi_all_ = std::max(hi_all_, w_end[w]);
        }
    }

    // act_of_mask has kNumMasks entries, each an activity below n_act.
    bool set_runs(const int32_t* rank, const int64_t* start, const int64_t* end, const int8_t* state, int64_t n) {
        if (cells_.empty() && n_ranks_ > 0) return false;
        for (int m = 0; m < kNumMasks; ++m)
            if (act_[m] < 0 || act_[m] >= n_act_) return false;
        StateRuns runs_of = state_runs(rank, start, end, state, n);
        for (int8_t x : runs_of.state)
            if (x < 0 || x >= n_states_) return false;
        r_rank_ = std::move(runs_of.rank);
        r_start_ = std::move(runs_of.start);
        r_end_ = std::move(runs_of.end);
        r_state_ = std::move(runs_of.state);
        const int64_t runs = static_cast<int64_t>(r_rank_.size());
        first_.assign(static_cast<size_t>(n_ranks_ + 1), 0);
        int64_t p = 0;
        for (int64_t j = 0; j < runs; ++j) {
            while (p < n_ranks_ && ranks_[p] != r_rank_[j]) first_[++p] = j;
            if (p == n_ranks_ || n_windows_ == 0 || r_start_[j] < lo_all_ || r_end_[j] > hi_all_) return false;
            cells_[(p * n_states_ + r_state_[j]) * n_act_ + idle_] += r_end_[j] - r_start_[j];
        }
        for (int64_t q = p + 1; q <= n_ranks_; ++q) first_[q] = runs;
        ready_ = true;
        return true;
    }

    // Histogram rows (after set_runs); the cursor carries over from one call to the next.
    bool add(const int32_t* h_rank, const int64_t* h_window, const uint8_t* h_mask, const int64_t* h_duration,
             int64_t n) {
        if (!ready_) return false;
        for (int64_t i = 0; i < n; ++i) {
            const int64_t w = h_window[i];
            if (h_mask[i] == 0 || w < 0) continue;
            if (h_mask[i] >= kNumMasks || w >= n_windows_) return false;
            if (h_rank[i] != last_rank_) {
                last_rank_ = h_rank[i];
                const int32_t* at = std::lower_bound(ranks_, ranks_ + n_ranks_, h_rank[i]);
                pos_ = (at == ranks_ + n_ranks_ || *at != h_rank[i]) ? -1 : at - ranks_;
                if (pos_ >= 0) {
                    lo_ = first_[static_cast<size_t>(pos_)];
                    hi_ = first_[static_cast<size_t>(pos_) + 1];
                    j_ = lo_ - 1;
                }
            }
            if (pos_ < 0) continue;
            const int64_t a = w_start_[w], b = w_end_[w];
            // j_: the last run of the rank starting at or before a (lo_ - 1: none). A
            // rank's rows come in window order, so it only moves forward but for a
            // restart (the next chunk of the rank).
            if (j_ >= lo_ && r_start_[j_] > a) j_ = lo_ - 1;
            while (j_ + 1 < hi_ && r_start_[j_ + 1] <= a) ++j_;
            if (j_ >= lo_ && b <= r_end_[j_]) {
                const int64_t base = (pos_ * n_states_ + r_state_[j_]) * n_act_;
                cells_[base + act_[h_mask[i]]] += h_duration[i];
                cells_[base + idle_] -= h_duration[i];
            } else if ((j_ >= lo_ && r_end_[j_] > a) || (j_ + 1 < hi_ && r_start_[j_ + 1] < b)) {
                return false;
            }
        }
        return true;
    }

    std::vector<int64_t>& cells() { return cells_; }

    // The non-zero cells in index order, as the ledger's tidy rows: (rank, state,
    // activity, duration), ranks from the accountable `ranks`.
    struct Tidy {
        std::vector<int32_t> rank;
        std::vector<int8_t> state, activity;
        std::vector<int64_t> duration;
    };
    Tidy tidy() const {
        Tidy t;
        const int64_t n = static_cast<int64_t>(cells_.size());
        for (int64_t i = 0; i < n; ++i) {
            const int64_t d = cells_[static_cast<size_t>(i)];
            if (d == 0) continue;
            const int64_t q = i / n_act_;
            t.rank.push_back(ranks_[q / n_states_]);
            t.state.push_back(static_cast<int8_t>(q % n_states_));
            t.activity.push_back(static_cast<int8_t>(i % n_act_));
            t.duration.push_back(d);
        }
        return t;
    }

  private:
    const int32_t* ranks_;
    int64_t n_ranks_;
    const int64_t *w_start_, *w_end_;
    int64_t n_windows_;
    int64_t lo_all_ = std::numeric_limits<int64_t>::max(), hi_all_ = std::numeric_limits<int64_t>::min();
    const int8_t* act_;
    int64_t idle_, n_states_, n_act_;
    std::vector<int64_t> cells_;
    std::vector<int32_t> r_rank_;
    std::vector<int64_t> r_start_, r_end_;
    std::vector<int8_t> r_state_;
    std::vector<int64_t> first_;  // runs of rank position p: first_[p] .. first_[p + 1]
    bool ready_ = false;
    int64_t last_rank_ = std::numeric_limits<int64_t>::min(), pos_ = -1, lo_ = 0, hi_ = 0, j_ = 0;
};

}  // namespace pau::core
