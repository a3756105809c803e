// pau native interval core: the set-up of lifecycle attribution (pau.engine._lifecycle._setup).
//
// From the records other than steps (a few hundred: attempts, phases, saves,
// restores, failures, accountable rows) and the figures of the scan of the steps,
// by the rules of pau.engine._lifecycle: the attempts (start order, effective end, cause),
// the failures, the membership of ranks in attempts, the checkpoints, and the
// painted background (outage < unattributed < init/restore) and overlay
// (eval/custom/data_wait < checkpoint) of the pass; or the first relational error
// of the input (rows that contradict others), with its rows. The lineage rule
// (which restore each attempt used, which steps survive) is not here: it runs
// after this, in Numba (pau.engine._kernels.lineage), on the ok restores in start order
// and the checkpoints this gives; the overlay's saves then take their state from it.
// The twin in numpy and plain Python is tests/reference_setup.py.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "life_checks.hpp"
#include "paint.hpp"

namespace pau::core::life {

constexpr int64_t kBig = std::numeric_limits<int64_t>::max();
// Record codes, as pau.engine._lifecycle.RECORDS orders them.
enum : int64_t { kAcc = 0, kAtt = 1, kPhase = 2, kStep = 3, kCkpt = 4, kRest = 5, kFail = 6 };
// Attempt kinds, as pau.engine._lifecycle.ATTEMPT_KINDS orders them.
enum : int64_t { kKindCompleted = 0, kKindFailed = 1, kKindPreempted = 2, kKindRunning = 3 };
constexpr int64_t kInitKinds = 3;  // the first phase kinds are the init kinds
// Causes past the failure kinds: n_fail_kinds + these.
enum : int64_t { kCauseFailed = 0, kCausePreempted = 1, kCauseEnded = 2, kCauseSuperseded = 3 };
// Positions in st_codes (the state codes of the layers).
enum : int { kOutage = 0, kUnattributed, kRestoreState, kInit, kReinit, kLost, kCheckpoint, kUnused };
// Relational errors (Setup::status) and the rows they name in e_row (positions in
// the records), with e_rank, e_ms, e_me as said.
enum : int {
    kNoAttempt = 1,        // a record names an attempt without an attempt row: the first row of the least such id
    kStepNoAttempt = 2,    // a step does (the caller finds the first such step)
    kNoRank = 3,           // an attempt row of rank -1 while no rank is known
    kOutside = 4,          // phases, saves, restores starting outside their attempt on a rank (rank, member
                           // start and end: kNull when not a member): every one
    kRestoreError = 5,     // (the lineage's) an ok restore of a step no ok checkpoint was durable for before it
    kFailureOutside = 6,   // failures before their attempt's start or after its end (that start and end): every one
    kAttemptOverlap = 7,   // an attempt's time on a rank overlaps an earlier attempt's there (rank, the earlier
                           // attempt's id and its end there): every one
};
// Ranks spread wider than this pass through attribution as dense positions.
constexpr int64_t kRankLutMax = int64_t{1} << 24;

// The records (n rows, columns as pau.engine._lifecycle._Rows, kNull for nulls; ok 0/1;
// kcode: attempt rows index ATTEMPT_KINDS (-1: none), phase rows PHASE_KINDS,
// failure rows the caller's sorted failure kinds) and the steps' figures.
struct SetupIn {
    const int8_t* rec;
    const int64_t *attempt, *rank, *start, *end, *step, *block_end, *durable;
    const uint8_t* ok;
    const int64_t* kcode;
    int64_t n = 0;
    int64_t n_fail_kinds = 0, as_of = 0;
    std::vector<int64_t> known_ranks;  // ranks known besides the records': the steps' and the caller's
    std::vector<int64_t> step_ids;     // the steps' attempt ids, sorted, distinct
    const int8_t* phase_state;         // state code per phase kind
    const int8_t* st_codes;            // state codes at kOutage ... kUnused
};

// Painted pieces: rank (a dense position when Setup::dense), start, end and the
// state, dense attempt (-1: none) and step (kNull: none) of the interval each is of.
struct Layer {
    std::vector<int32_t> rank;
    std::vector<int64_t> start, end;
    std::vector<int8_t> state;
    std::vector<int32_t> att;
    std::vector<int64_t> step;
};

struct Setup {
    int status = 0;
    std::vector<int64_t> e_row, e_rank, e_ms, e_me;
    // attempts by dense index (start order, then id)
    std::vector<int64_t> a_ids, a_start, a_end, a_cause;  // a_cause: -1 none
    std::vector<uint8_t> a_running, a_completed;
    // failures as of as_of, distinct, by (time, attempt, kind)
    std::vector<int64_t> f_att, f_time, f_kind;
    // checkpoints per (dense attempt, step), sorted; c_dur kNull unless ok and durable as of as_of
    std::vector<int64_t> c_att, c_step, c_dur;
    std::vector<uint8_t> c_ok, has_durable;  // has_durable: per dense attempt
    // members: attempt m_ids[j] has the sorted ranks m_ranks[m_off[j]:m_off[j + 1]]
    std::vector<int64_t> m_ids, m_off, m_ranks;
    // ranks: rank_lut[rank - r_lo] is the dense rank; m_start/m_end per (dense attempt, dense rank)
    std::vector<int64_t> rank_values, rank_lut, m_start, m_end;
    int64_t r_lo = 0;
    bool dense = false;
    int64_t acc_min = kBig;  // the earliest accountable start (kBig: none)
    Layer background, overlay;
    // the checkpoint of each overlay piece (-1: a phase); its state is kLost when
    // that checkpoint is not durable, else kUnused until the lineage says
    std::vector<int64_t> o_ckpt;
    // the ok restores (as of as_of) by start, stably: row, dense attempt, step, start
    std::vector<int64_t> r_row, r_att, r_step, r_start;
    // per dense attempt: it has step rows; and, if it completed, the highest step it
    // completed by its end (kNull: none), from done_steps
    std::vector<uint8_t> has_steps;
    std::vector<int64_t> done_step;
    // membership of (dense attempt d, dense rank r) at m_start[m_row[d] + r]: one
    // block of attempts x ranks per job (one job: m_row[d] = d * ranks)
    std::vector<int64_t> m_row;
    // jobs (setup_jobs): job j's dense attempts are job_att[j] .. job_att[j + 1], its
    // earliest accountable start job_acc_min[j] (kBig: none); one job: {0, attempts}
    std::vector<int64_t> job_att, job_acc_min;
};

namespace detail {

inline int64_t find(const std::vector<int64_t>& keys, int64_t v) {
    auto p = std::lower_bound(keys.begin(), keys.end(), v);
    return (p != keys.end() && *p == v) ? p - keys.begin() : -1;
}

inline void distinct(std::vector<int64_t>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
}

// A stable sort order of rows 0..n-1 by `less`: the identity when already sorted.
template <typename Less>
std::vector<int64_t> stable_order(int64_t n, Less less) {
    std::vector<int64_t> o(static_cast<size_t>(n));
    std::iota(o.begin(), o.end(), 0);
    if (!std::is_sorted(o.begin(), o.end(), less)) std::stable_sort(o.begin(), o.end(), less);
    return o;
}

}  // namespace detail

inline Setup setup(const SetupIn& in) {
    using detail::find;
    Setup out;
    const int64_t n = in.n, as_of = in.as_of;
    const int8_t* rec = in.rec;
    const int64_t *attempt = in.attempt, *rank = in.rank, *start = in.start, *end = in.end, *step = in.step;
    auto fail = [&out](int code, std::vector<int64_t> row, std::vector<int64_t> rk, std::vector<int64_t> ms,
                       std::vector<int64_t> me) {
        out.status = code;
        out.e_row = std::move(row);
        out.e_rank = std::move(rk);
        out.e_ms = std::move(ms);
        out.e_me = std::move(me);
        return out;
    };

    // -- attempts: per id the earliest start, the latest end (null if one is open)
    // and the first kind given
    std::vector<int64_t> u;
    for (int64_t i = 0; i < n; ++i)
        if (rec[i] == kAtt) u.push_back(attempt[i]);
    detail::distinct(u);
    const int64_t nA = static_cast<int64_t>(u.size());
    std::vector<int64_t> p_start(nA, kBig), p_end(nA, kNull), p_kind(nA, -1);
    std::vector<uint8_t> p_seen(nA, 0);
    for (int64_t i = 0; i < n; ++i) {
        if (rec[i] != kAtt) continue;
        const int64_t p = find(u, attempt[i]), s = start[i], e = end[i];
        if (!p_seen[p]) {
            p_seen[p] = 1;
            p_start[p] = s;
            p_end[p] = e;
            p_kind[p] = in.kcode[i];
        } else {
            p_start[p] = std::min(p_start[p], s);
            p_end[p] = (p_end[p] == kNull || e == kNull) ? kNull : std::max(p_end[p], e);
            if (p_kind[p] < 0) p_kind[p] = in.kcode[i];
        }
    }
    // by (start, id): u is sorted
    const std::vector<int64_t> order =
        detail::stable_order(nA, [&](int64_t a, int64_t b) { return p_start[a] < p_start[b]; });
    std::vector<int64_t> dense_of(nA);  // position in u -> dense index
    out.a_ids.resize(nA);
    out.a_start.resize(nA);
    for (int64_t i = 0; i < nA; ++i) {
        dense_of[order[i]] = i;
        out.a_ids[i] = u[order[i]];
        out.a_start[i] = p_start[order[i]];
    }
    const std::vector<int64_t>& a_ids = out.a_ids;
    const std::vector<int64_t>& a_start = out.a_start;
    // every record but accountable names a known attempt (row_d: its dense index)
    std::vector<int64_t> row_d(n, -1);
    int64_t miss = -1;
    for (int64_t i = 0; i < n; ++i) {
        if (rec[i] == kAcc) continue;
        const int64_t p = find(u, attempt[i]);
        if (p < 0) {
            if (miss < 0 || attempt[i] < attempt[miss]) miss = i;
        } else {
            row_d[i] = dense_of[p];
        }
    }
    if (miss >= 0) {
        for (int64_t i = 0; i < n; ++i)  // the first row of the least unknown id
            if (attempt[i] == attempt[miss]) return fail(kNoAttempt, {i}, {}, {}, {});
    }
    for (int64_t id : in.step_ids)
        if (find(u, id) < 0) return fail(kStepNoAttempt, {}, {}, {}, {});

    // -- failures as of as_of, distinct, by (time, attempt, kind); the first of each
    // attempt ends it. A failure before its attempt began, or after the end its
    // attempt rows give, contradicts them.
    std::vector<int64_t> fr;
    for (int64_t i = 0; i < n; ++i)
        if (rec[i] == kFail && start[i] <= as_of) fr.push_back(i);
    {
        std::vector<int64_t> bad_f, bad_s, bad_e;
        for (int64_t i : fr) {
            const int64_t p = find(u, attempt[i]);
            if (start[i] < p_start[p] || (p_end[p] != kNull && start[i] > p_end[p])) {
                bad_f.push_back(i);
                bad_s.push_back(p_start[p]);
                bad_e.push_back(p_end[p]);
            }
        }
        if (!bad_f.empty()) return fail(kFailureOutside, std::move(bad_f), {}, std::move(bad_s), std::move(bad_e));
    }
    const int64_t nf = static_cast<int64_t>(fr.size());
    std::vector<int64_t> fo = detail::stable_order(nf, [&](int64_t a, int64_t b) {
        const int64_t i = fr[a], j = fr[b];
        if (start[i] != start[j]) return start[i] < start[j];
        if (attempt[i] != attempt[j]) return attempt[i] < attempt[j];
        return in.kcode[i] < in.kcode[j];
    });
    std::vector<uint8_t> ff_has(nA, 0);
    std::vector<int64_t> ff_t(nA, 0), ff_k(nA, 0);
    for (int64_t j = 0; j < nf; ++j) {
        const int64_t i = fr[fo[j]];
        if (j > 0) {
            const int64_t q = fr[fo[j - 1]];
            if (attempt[i] == attempt[q] && start[i] == start[q] && in.kcode[i] == in.kcode[q]) continue;
        }
        out.f_att.push_back(attempt[i]);
        out.f_time.push_back(start[i]);
        out.f_kind.push_back(in.kcode[i]);
        const int64_t d = row_d[i];
        if (!ff_has[d]) {
            ff_has[d] = 1;
            ff_t[d] = start[i];
            ff_k[d] = in.kcode[i];
        }
    }
    out.a_end.resize(nA);
    out.a_running.assign(nA, 0);
    out.a_cause.assign(nA, -1);
    out.a_completed.assign(nA, 0);
    const int64_t nfk = in.n_fail_kinds;
    for (int64_t i = 0; i < nA; ++i) {
        const int64_t p = order[i], ea = p_end[p];
        bool has_e = ea != kNull && ea <= as_of;
        int64_t e = ea, c = -1;
        if (ff_has[i]) {
            e = has_e ? std::min(e, ff_t[i]) : ff_t[i];
            has_e = true;
            c = ff_k[i];
        } else if (has_e) {
            const int64_t kd = p_kind[p];
            if (kd == kKindRunning) c = nfk + kCauseEnded;
            else if (kd == kKindFailed) c = nfk + kCauseFailed;
            else if (kd == kKindPreempted) c = nfk + kCausePreempted;
        }
        if (!has_e && i + 1 < nA) {
            e = std::min(a_start[i + 1], as_of);  // superseded by the next attempt
            has_e = true;
            if (c < 0) c = nfk + kCauseSuperseded;
        }
        if (!has_e) {
            e = as_of;
            out.a_running[i] = 1;
        }
        out.a_end[i] = std::max(std::min(e, as_of), a_start[i]);
        out.a_cause[i] = c;
        out.a_completed[i] = !out.a_running[i] && c < 0;
    }
    const std::vector<int64_t>& a_end = out.a_end;

    // -- ranks, membership, accountable time
    std::vector<int64_t> acc_rows;
    for (int64_t i = 0; i < n; ++i)
        if (rec[i] == kAcc) acc_rows.push_back(i);
    const int64_t n_acc = static_cast<int64_t>(acc_rows.size());
    std::vector<int64_t> known = in.known_ranks;
    for (int64_t i = 0; i < n; ++i)
        if (rank[i] >= 0) known.push_back(rank[i]);
    detail::distinct(known);
    // membership rows: per-rank attempt rows first, then rank -1 rows per rank
    // accountable at the attempt's start (every known rank without accountable rows)
    std::vector<int64_t> mm_d, mm_r, mm_s, mm_e, mm_i;  // mm_i: the attempt row of each
    auto member = [&](int64_t d, int64_t r, int64_t s, int64_t e, int64_t i) {
        mm_d.push_back(d);
        mm_r.push_back(r);
        mm_s.push_back(s);
        mm_e.push_back(e);
        mm_i.push_back(i);
    };
    for (int64_t i = 0; i < n; ++i) {
        if (rec[i] != kAtt || rank[i] < 0) continue;
        const int64_t d = row_d[i], ae = a_end[d];
        const int64_t oe = (end[i] == kNull || end[i] > as_of) ? ae : std::min(end[i], ae);
        member(d, rank[i], start[i], std::max(oe, start[i]), i);
    }
    for (int64_t i = 0; i < n; ++i) {
        if (rec[i] != kAtt || rank[i] >= 0) continue;
        const int64_t d = row_d[i], t0 = start[i];
        if (n_acc) {
            for (int64_t q : acc_rows)
                if (start[q] <= t0 && (end[q] == kNull || end[q] > t0)) member(d, rank[q], a_start[d], a_end[d], i);
        } else {
            if (known.empty()) return fail(kNoRank, {i}, {}, {}, {});
            for (int64_t r : known) member(d, r, a_start[d], a_end[d], i);
        }
    }
    // distinct (attempt, rank), the first row of each, sorted
    const int64_t nm = static_cast<int64_t>(mm_d.size());
    std::vector<int64_t> mo = detail::stable_order(nm, [&](int64_t a, int64_t b) {
        return mm_d[a] != mm_d[b] ? mm_d[a] < mm_d[b] : mm_r[a] < mm_r[b];
    });
    {
        int64_t k = 0;
        for (int64_t j = 0; j < nm; ++j)
            if (j == 0 || mm_d[mo[j]] != mm_d[mo[k - 1]] || mm_r[mo[j]] != mm_r[mo[k - 1]]) mo[k++] = mo[j];
        mo.resize(k);
    }
    const int64_t nmu = static_cast<int64_t>(mo.size());
    std::vector<int64_t> mem_att(nmu), mem_rank(nmu), mem_start(nmu), mem_end(nmu);
    for (int64_t j = 0; j < nmu; ++j) {
        mem_att[j] = mm_d[mo[j]];
        mem_rank[j] = mm_r[mo[j]];
        mem_start[j] = mm_s[mo[j]];
        mem_end[j] = mm_e[mo[j]];
    }
    // the members of each attempt by id (ranks sorted)
    {
        const std::vector<int64_t> by_id = detail::stable_order(
            nmu, [&](int64_t a, int64_t b) { return a_ids[mem_att[a]] < a_ids[mem_att[b]]; });
        out.m_off.push_back(0);
        for (int64_t j = 0; j < nmu; ++j) {
            const int64_t id = a_ids[mem_att[by_id[j]]];
            if (j == 0 || id != out.m_ids.back()) {
                out.m_ids.push_back(id);
                out.m_off.push_back(j);
            }
            out.m_off.back() = j + 1;
            out.m_ranks.push_back(mem_rank[by_id[j]]);
        }
    }
    std::vector<int64_t> acc_rank, acc_start, acc_end;
    if (n_acc) {
        for (int64_t q : acc_rows) {
            acc_rank.push_back(rank[q]);
            acc_start.push_back(start[q]);
            acc_end.push_back(end[q] == kNull ? as_of : std::min(end[q], as_of));
        }
    } else {
        acc_rank = mem_rank;
        detail::distinct(acc_rank);
        acc_start.assign(acc_rank.size(), kBig);
        acc_end.assign(acc_rank.size(), -kBig);
        for (int64_t j = 0; j < nmu; ++j) {
            const int64_t p = std::lower_bound(acc_rank.begin(), acc_rank.end(), mem_rank[j]) - acc_rank.begin();
            acc_start[p] = std::min(acc_start[p], mem_start[j]);
            acc_end[p] = std::max(acc_end[p], mem_end[j]);
        }
    }
    for (size_t j = 0; j < acc_rank.size(); ++j) {
        acc_end[j] = std::max(acc_end[j], acc_start[j]);
        out.acc_min = std::min(out.acc_min, acc_start[j]);
    }
    out.job_att = {0, nA};
    out.job_acc_min = {out.acc_min};
    std::vector<int64_t>& rank_values = out.rank_values;
    rank_values = known;
    rank_values.insert(rank_values.end(), acc_rank.begin(), acc_rank.end());
    rank_values.insert(rank_values.end(), mem_rank.begin(), mem_rank.end());
    detail::distinct(rank_values);
    const int64_t nRv = static_cast<int64_t>(rank_values.size());
    const int64_t nR = std::max<int64_t>(nRv, 1);
    int64_t r_lo = nRv ? rank_values[0] : 0;
    const int64_t span = nRv ? rank_values.back() - r_lo + 1 : 0;
    const bool dense = span >= kRankLutMax;  // ranks far apart: positions, not values, in the layers
    if (dense) {
        r_lo = 0;
        out.rank_lut.resize(nRv);
        std::iota(out.rank_lut.begin(), out.rank_lut.end(), 0);
    } else {
        out.rank_lut.assign(span, -1);
        for (int64_t j = 0; j < nRv; ++j) out.rank_lut[rank_values[j] - r_lo] = j;
    }
    out.r_lo = r_lo;
    out.dense = dense;
    const std::vector<int64_t>& rank_lut = out.rank_lut;
    auto rank_pos = [&](int64_t v) -> int64_t {  // the dense rank of rank v, -1 if none
        if (dense) return find(rank_values, v);
        const int64_t j = v - r_lo;
        return (0 <= j && j < static_cast<int64_t>(rank_lut.size())) ? rank_lut[j] : -1;
    };
    out.m_row.resize(nA);
    for (int64_t d = 0; d < nA; ++d) out.m_row[d] = d * nR;
    out.m_start.assign(nA * nR, kNull);
    out.m_end.assign(nA * nR, kNull);
    std::vector<int64_t>& m_start = out.m_start;
    std::vector<int64_t>& m_end = out.m_end;
    std::vector<int64_t> m_src(nA * nR, -1);  // the attempt row of each membership
    for (int64_t j = 0; j < nmu; ++j) {
        const int64_t c = mem_att[j] * nR + rank_pos(mem_rank[j]);
        m_start[c] = mem_start[j];
        m_end[c] = mem_end[j];
        m_src[c] = mm_i[mo[j]];
    }
    // Attempts follow each other on a rank: one starting there before the one before
    // it ended contradicts it. Attempts are in start order (their dense index), and so,
    // almost always, are their memberships on each rank; a rank where they are not is
    // checked in the order of its membership starts.
    {
        std::vector<int64_t> bad_i, bad_r, bad_a, bad_e;
        std::vector<int64_t> seq;
        for (int64_t rp = 0; rp < nRv; ++rp) {
            seq = detail::stable_order(nA, [&](int64_t a, int64_t b) { return m_start[a * nR + rp] < m_start[b * nR + rp]; });
            int64_t prev = -1;
            for (int64_t d : seq) {
                const int64_t c = d * nR + rp;
                if (m_start[c] == kNull) continue;
                if (prev >= 0 && m_start[c] < m_end[prev * nR + rp]) {
                    bad_i.push_back(m_src[c]);
                    bad_r.push_back(rank_values[rp]);
                    bad_a.push_back(a_ids[prev]);
                    bad_e.push_back(m_end[prev * nR + rp]);
                }
                prev = d;
            }
        }
        if (!bad_i.empty())
            return fail(kAttemptOverlap, std::move(bad_i), std::move(bad_r), std::move(bad_a), std::move(bad_e));
    }

    // -- phases, saves and restores on each member rank (rank -1: every member),
    // checked against their attempt on that rank and cut at its end
    std::vector<int64_t> x_src, x_rank;
    auto small = [&](int64_t i) { return rec[i] == kPhase || rec[i] == kCkpt || rec[i] == kRest; };
    for (int64_t i = 0; i < n; ++i) {
        if (small(i) && rank[i] >= 0) {
            x_src.push_back(i);
            x_rank.push_back(rank[i]);
        }
    }
    for (int64_t i = 0; i < n; ++i) {
        if (!small(i) || rank[i] >= 0) continue;
        const int64_t p = find(out.m_ids, attempt[i]);
        if (p < 0) continue;
        for (int64_t q = out.m_off[p]; q < out.m_off[p + 1]; ++q) {
            x_src.push_back(i);
            x_rank.push_back(out.m_ranks[q]);
        }
    }
    const int64_t ne = static_cast<int64_t>(x_src.size());
    std::vector<int64_t> x_d(ne), x_end(ne), x_block(ne);
    {
        std::vector<int64_t> e_row, e_rank, e_ms, e_me;
        for (int64_t k = 0; k < ne; ++k) {
            const int64_t i = x_src[k], d = row_d[i], rd = rank_pos(x_rank[k]);
            const int64_t ms = rd >= 0 ? m_start[d * nR + rd] : kNull;
            const int64_t me = rd >= 0 ? m_end[d * nR + rd] : kNull;
            if (ms == kNull || start[i] < ms || start[i] > me) {
                e_row.push_back(i);
                e_rank.push_back(x_rank[k]);
                e_ms.push_back(ms);
                e_me.push_back(me);
                continue;
            }
            x_d[k] = d;
            int64_t e = end[i];
            x_end[k] = std::max((e == kNull || e > me) ? me : e, start[i]);
            e = in.block_end[i];
            x_block[k] = std::max((e == kNull || e > me) ? me : e, start[i]);
        }
        if (!e_row.empty())
            return fail(kOutside, std::move(e_row), std::move(e_rank), std::move(e_ms), std::move(e_me));
    }

    // -- checkpoints: per (attempt, step) durable when the last shard is, ok if all are
    {
        std::vector<int64_t> cr;
        for (int64_t i = 0; i < n; ++i)
            if (rec[i] == kCkpt) cr.push_back(i);
        const int64_t nc = static_cast<int64_t>(cr.size());
        // shards come save by save: usually sorted
        const std::vector<int64_t> co = detail::stable_order(nc, [&](int64_t a, int64_t b) {
            const int64_t i = cr[a], j = cr[b];
            return row_d[i] != row_d[j] ? row_d[i] < row_d[j] : step[i] < step[j];
        });
        for (int64_t j = 0; j < nc; ++j) {
            const int64_t i = cr[co[j]];
            const int64_t dur = in.durable[i] == kNull ? kBig : in.durable[i];
            if (j == 0 || row_d[i] != out.c_att.back() || step[i] != out.c_step.back()) {
                out.c_att.push_back(row_d[i]);
                out.c_step.push_back(step[i]);
                out.c_dur.push_back(dur);
                out.c_ok.push_back(in.ok[i] ? 1 : 0);
            } else {
                out.c_dur.back() = std::max(out.c_dur.back(), dur);
                out.c_ok.back() = out.c_ok.back() && in.ok[i];
            }
        }
        out.has_durable.assign(nA, 0);
        for (size_t g = 0; g < out.c_att.size(); ++g) {
            if (!(out.c_ok[g] && out.c_dur[g] <= as_of)) out.c_dur[g] = kNull;
            else out.has_durable[out.c_att[g]] = 1;
        }
    }

    // -- the ok restores (as of as_of) by start, for the lineage
    {
        std::vector<int64_t> rr;
        for (int64_t i = 0; i < n; ++i)
            if (rec[i] == kRest && start[i] <= as_of) rr.push_back(i);
        const std::vector<int64_t> ro = detail::stable_order(
            static_cast<int64_t>(rr.size()), [&](int64_t a, int64_t b) { return start[rr[a]] < start[rr[b]]; });
        for (int64_t j : ro) {
            const int64_t i = rr[j];
            if (!in.ok[i]) continue;
            out.r_row.push_back(i);
            out.r_att.push_back(row_d[i]);
            out.r_step.push_back(step[i]);
            out.r_start.push_back(start[i]);
        }
    }

    // Pieces of a layer painted by (rank, start): ranks as dense positions when dense.
    auto painted = [&](std::vector<int32_t>& l_rank, const std::vector<int64_t>& l_start,
                       const std::vector<int64_t>& l_end, const std::vector<int8_t>& l_level) {
        if (dense)
            for (int32_t& r : l_rank) r = static_cast<int32_t>(find(rank_values, r));
        const int64_t m = static_cast<int64_t>(l_rank.size());
        const std::vector<int64_t> o = by_rank_start(l_rank.data(), l_start.data(), m, r_lo, rank_lut.data(), nR);
        return paint(l_rank.data(), l_start.data(), l_end.data(), l_level.data(), o.data(), m);
    };
    const int8_t* st = in.st_codes;

    // -- background: accountable (outage) < attempts (unattributed) < init/restore
    {
        std::vector<int32_t> b_rank;
        std::vector<int64_t> b_start, b_end, b_step;
        std::vector<int8_t> b_level, b_state;
        std::vector<int32_t> b_att;
        auto row = [&](int64_t r, int64_t s, int64_t e, int8_t level, int8_t state, int64_t a, int64_t stp) {
            b_rank.push_back(static_cast<int32_t>(r));
            b_start.push_back(s);
            b_end.push_back(e);
            b_level.push_back(level);
            b_state.push_back(state);
            b_att.push_back(static_cast<int32_t>(a));
            b_step.push_back(stp);
        };
        for (size_t j = 0; j < acc_rank.size(); ++j) row(acc_rank[j], acc_start[j], acc_end[j], 0, st[kOutage], -1, kNull);
        for (int64_t j = 0; j < nmu; ++j)
            row(mem_rank[j], mem_start[j], mem_end[j], 1, st[kUnattributed], mem_att[j], kNull);
        for (int64_t k = 0; k < ne; ++k) {
            const int64_t i = x_src[k];
            if (rec[i] == kRest)
                row(x_rank[k], start[i], x_end[k], 2, st[kRestoreState], x_d[k], step[i]);
            else if (rec[i] == kPhase && in.kcode[i] < kInitKinds)
                row(x_rank[k], start[i], x_end[k], 2, x_d[k] == 0 ? st[kInit] : st[kReinit], x_d[k], kNull);
        }
        const Painted B = painted(b_rank, b_start, b_end, b_level);
        Layer& L = out.background;
        L.rank = B.rank;
        L.start = B.start;
        L.end = B.end;
        for (int64_t w : B.row) {
            L.state.push_back(b_state[w]);
            L.att.push_back(b_att[w]);
            L.step.push_back(b_step[w]);
        }
    }

    // -- overlay: eval/custom/data_wait < checkpoint (blocking part)
    {
        std::vector<int32_t> o_rank;
        std::vector<int64_t> o_start, o_end, o_step, o_group;
        std::vector<int8_t> o_level, o_state;
        std::vector<int32_t> o_att;
        for (int64_t k = 0; k < ne; ++k) {  // phases first, then saves
            const int64_t i = x_src[k];
            if (rec[i] != kPhase || in.kcode[i] < kInitKinds) continue;
            o_rank.push_back(static_cast<int32_t>(x_rank[k]));
            o_start.push_back(start[i]);
            o_end.push_back(x_end[k]);
            o_level.push_back(0);
            o_state.push_back(in.phase_state[in.kcode[i]]);
            o_att.push_back(static_cast<int32_t>(x_d[k]));
            o_step.push_back(kNull);
            o_group.push_back(-1);
        }
        int64_t g = -1;
        for (int64_t k = 0; k < ne; ++k) {
            const int64_t i = x_src[k];
            if (rec[i] != kCkpt) continue;
            const int64_t d = x_d[k];
            // the shards of one save come together
            if (g < 0 || out.c_att[g] != d || out.c_step[g] != step[i]) {
                int64_t lo = 0, hi = static_cast<int64_t>(out.c_att.size());
                while (lo < hi) {  // the first checkpoint at or after (d, step): every save's is one
                    const int64_t mid = (lo + hi) / 2;
                    if (out.c_att[mid] < d || (out.c_att[mid] == d && out.c_step[mid] < step[i])) lo = mid + 1;
                    else hi = mid;
                }
                g = lo;
            }
            o_rank.push_back(static_cast<int32_t>(x_rank[k]));
            o_start.push_back(start[i]);
            o_end.push_back(x_block[k]);
            o_level.push_back(1);
            o_state.push_back(out.c_dur[g] == kNull ? st[kLost] : st[kUnused]);
            o_att.push_back(static_cast<int32_t>(d));
            o_step.push_back(step[i]);
            o_group.push_back(g);
        }
        const Painted O = painted(o_rank, o_start, o_end, o_level);
        Layer& L = out.overlay;
        L.rank = O.rank;
        L.start = O.start;
        L.end = O.end;
        for (int64_t w : O.row) {
            L.state.push_back(o_state[w]);
            L.att.push_back(o_att[w]);
            L.step.push_back(o_step[w]);
            out.o_ckpt.push_back(o_group[w]);
        }
    }
    return out;
}

// The steps' figures per attempt of a set-up `s` without error: has_steps, and
// done_step for the attempts that completed (the highest step that ended by
// min(as_of, the attempt's end)). `ids` are the steps' attempt ids, sorted and
// distinct, with per id the rows, the highest step and the latest end among rows
// that ended; when every step of an attempt that ended did so by then its figure is
// the highest step, else the n step rows (attempt, end, step) are read.
template <typename A>
void done_steps(Setup& s, const std::vector<int64_t>& ids, const int64_t* count, const int64_t* max_step,
                const int64_t* max_end, const A* s_att, const int64_t* s_end, const int64_t* s_step, int64_t n,
                int64_t as_of) {
    const int64_t nA = static_cast<int64_t>(s.a_ids.size());
    s.has_steps.assign(nA, 0);
    s.done_step.assign(nA, kNull);
    std::vector<int64_t> scan;  // the dense attempts whose figure needs the rows
    for (int64_t d = 0; d < nA; ++d) {
        const int64_t j = detail::find(ids, s.a_ids[d]);
        s.has_steps[d] = j >= 0;
        if (j < 0 || !s.a_completed[d] || count[j] == 0 || max_end[j] == kNull) continue;
        if (max_end[j] <= std::min(as_of, s.a_end[d])) s.done_step[d] = max_step[j];
        else scan.push_back(d);
    }
    if (scan.empty()) return;
    std::vector<int64_t> scan_ids(scan.size());  // sorted by id, with their dense index
    std::vector<int64_t> by_id = detail::stable_order(static_cast<int64_t>(scan.size()), [&](int64_t a, int64_t b) {
        return s.a_ids[scan[a]] < s.a_ids[scan[b]];
    });
    for (size_t k = 0; k < scan.size(); ++k) scan_ids[k] = s.a_ids[scan[by_id[k]]];
    for (int64_t i = 0; i < n; ++i) {
        const int64_t k = detail::find(scan_ids, static_cast<int64_t>(s_att[i]));
        if (k < 0) continue;
        const int64_t d = scan[by_id[k]], e = s_end[i];
        // a step done after its attempt ended does not count
        if (e != kNull && e <= as_of && e <= s.a_end[d] && (s.done_step[d] == kNull || s_step[i] > s.done_step[d]))
            s.done_step[d] = s_step[i];
    }
}

// The lineage rule of DESIGN §2.2: the chain of surviving work, per attempt (dense
// index, in start order) the steps (base, head].
//
// Each attempt used its last ok restore (r_*: the ok restores as of as_of by start,
// stably: row, dense attempt, step, start; nr rows) and read the checkpoint it restored:
// the latest one of that step durable before the restore began, written by another
// attempt (c_*: checkpoints per (dense attempt, step), nc rows; c_dur is `null` unless ok
// and durable as of as_of). The chain starts at the last attempt that did something
// (has_steps, a restore used, has_durable): its head is its last completed step when it
// completed (done_step), else its latest durable checkpoint, never below its base; it
// follows the restores back.
//
// Writes base, head (filled with null by the caller), on (false) and on_lineage (per
// checkpoint: durable and a lineage step of its attempt) over n_att attempts. Returns
// the number of ok restores for which no checkpoint qualifies, their rows in bad[:n]
// (then nothing else is written); 0 otherwise.
inline int64_t lineage(const int64_t* r_row, const int64_t* r_att, const int64_t* r_step, const int64_t* r_start,
                       int64_t nr, const int64_t* c_att, const int64_t* c_step, const int64_t* c_dur, int64_t nc,
                       const bool* has_durable, const bool* has_steps, const int64_t* done_step,
                       const bool* a_completed, int64_t n_att, int64_t null, int64_t* base, int64_t* head, bool* on,
                       bool* on_lineage, int64_t* bad) {
    const size_t na = static_cast<size_t>(n_att);
    std::vector<char> used(na, 0), seen(na, 0);
    std::vector<int64_t> used_step(na, 0), used_w(na, 0);
    int64_t n_bad = 0;
    for (int64_t j = 0; j < nr; ++j) {
        int64_t w = -1;
        for (int64_t g = 0; g < nc; ++g)
            if (c_step[g] == r_step[j] && c_dur[g] != null && c_dur[g] <= r_start[j] && c_att[g] != r_att[j] &&
                (w < 0 || c_dur[g] > c_dur[w]))
                w = g;
        if (w < 0) {
            bad[n_bad++] = r_row[j];
        } else {
            const size_t a = static_cast<size_t>(r_att[j]);
            used[a] = 1;
            used_step[a] = r_step[j];
            used_w[a] = c_att[w];
        }
    }
    if (n_bad) return n_bad;
    // An attempt with no step, no restore and no durable checkpoint (one still
    // initializing, or one that died before it restored) neither keeps nor discards
    // earlier work.
    int64_t cur = n_att - 1;
    while (cur > 0 && !has_steps[cur] && !used[static_cast<size_t>(cur)] && !has_durable[cur]) --cur;
    bool first = true;
    int64_t h = null;
    while (cur >= 0 && !seen[static_cast<size_t>(cur)]) {
        const size_t c = static_cast<size_t>(cur);
        seen[c] = 1;
        const int64_t b = used[c] ? used_step[c] : null;
        if (first) {
            first = false;
            if (a_completed[cur]) {
                h = done_step[cur];
                if (h == null) h = b;
            } else {
                h = null;
                for (int64_t g = 0; g < nc; ++g)
                    if (c_att[g] == cur && c_dur[g] != null && (h == null || c_step[g] > h)) h = c_step[g];
                if (h == null) h = b;
                if (b != null && h != null && h < b) h = b;
            }
        }
        on[cur] = true;
        base[cur] = b;
        head[cur] = h;
        if (!used[c]) break;
        h = used_step[c];
        cur = used_w[c];
    }
    for (int64_t g = 0; g < nc; ++g) {
        const int64_t a = c_att[g], k = c_step[g];
        on_lineage[g] = c_dur[g] != null && on[a] && head[a] != null && k <= head[a] && (base[a] == null || k > base[a]);
    }
    return n_bad;
}


// Many jobs in one table (a `job` column): each job is its own lineage. Attempt and
// rank ids are the caller's dense ids of (job, attempt) and (job, rank) pairs, job-major
// (att_job, rank_job: the job of each id; row_job: of each record). The records are
// grouped by job once (a stable counting sort), each job is set up alone by `setup`
// and `done_steps` (its rows, its known ranks, its steps' attempt ids with their figures
// count, max_step, max_end, aligned with in.step_ids), and the results are put side by
// side: attempts, checkpoints, memberships, ranks and layers in job order, so a job's
// dense attempts, checkpoints and ranks are contiguous; membership is one block per job
// (m_row); rows are positions in the caller's records. When jobs contradict themselves,
// status is the first such job's and the error rows of every such job are listed, each
// with its code in e_code.
struct JobErrors {
    std::vector<int64_t> code;  // per error row (kStepNoAttempt: one entry with row -1)
};

template <typename A>
Setup setup_jobs(const SetupIn& in, const int64_t* row_job, const int64_t* rank_job, const int64_t* att_job,
                 int64_t n_jobs, const int64_t* count, const int64_t* max_step, const int64_t* max_end,
                 const A* s_att, const int64_t* s_end, const int64_t* s_step, int64_t ns, JobErrors& errs) {
    const int64_t n = in.n;
    std::vector<int64_t> off(static_cast<size_t>(n_jobs) + 1, 0), ord(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) ++off[row_job[i] + 1];
    for (int64_t j = 0; j < n_jobs; ++j) off[j + 1] += off[j];
    {
        std::vector<int64_t> at(off.begin(), off.end() - 1);
        for (int64_t i = 0; i < n; ++i) ord[at[row_job[i]]++] = i;
    }
    auto gather = [&](const auto* src) {
        using T = std::remove_cv_t<std::remove_pointer_t<decltype(src)>>;
        std::vector<T> g(static_cast<size_t>(n));
        for (int64_t k = 0; k < n; ++k) g[k] = src[ord[k]];
        return g;
    };
    const std::vector<int8_t> rec = gather(in.rec);
    const std::vector<int64_t> attempt = gather(in.attempt), rank = gather(in.rank), start = gather(in.start),
                               end = gather(in.end), step = gather(in.step), block_end = gather(in.block_end),
                               durable = gather(in.durable), kcode = gather(in.kcode);
    const std::vector<uint8_t> ok = gather(in.ok);
    std::vector<std::vector<int64_t>> known(static_cast<size_t>(n_jobs)), ids(static_cast<size_t>(n_jobs)),
        pos(static_cast<size_t>(n_jobs));
    for (int64_t r : in.known_ranks) known[rank_job[r]].push_back(r);
    for (size_t k = 0; k < in.step_ids.size(); ++k) {
        const int64_t j = att_job[in.step_ids[k]];
        ids[j].push_back(in.step_ids[k]);
        pos[j].push_back(static_cast<int64_t>(k));
    }
    Setup out;
    out.job_att.push_back(0);
    int64_t n_err_jobs = 0;
    std::vector<int64_t> j_count, j_max_step, j_max_end;
    for (int64_t j = 0; j < n_jobs; ++j) {
        const int64_t lo = off[j];
        SetupIn sub = in;
        sub.rec = rec.data() + lo;
        sub.attempt = attempt.data() + lo;
        sub.rank = rank.data() + lo;
        sub.start = start.data() + lo;
        sub.end = end.data() + lo;
        sub.step = step.data() + lo;
        sub.block_end = block_end.data() + lo;
        sub.durable = durable.data() + lo;
        sub.ok = ok.data() + lo;
        sub.kcode = kcode.data() + lo;
        sub.n = off[j + 1] - lo;
        sub.known_ranks = std::move(known[j]);
        sub.step_ids = ids[j];
        Setup s = setup(sub);
        if (s.status) {
            if (n_err_jobs++ == 0) out.status = s.status;
            if (s.e_row.empty()) {  // kStepNoAttempt: the caller finds the step
                out.e_row.push_back(-1);
                out.e_rank.push_back(kNull);
                out.e_ms.push_back(kNull);
                out.e_me.push_back(kNull);
                errs.code.push_back(s.status);
            }
            for (size_t k = 0; k < s.e_row.size(); ++k) {
                out.e_row.push_back(ord[lo + s.e_row[k]]);
                out.e_rank.push_back(k < s.e_rank.size() ? s.e_rank[k] : kNull);
                out.e_ms.push_back(k < s.e_ms.size() ? s.e_ms[k] : kNull);
                out.e_me.push_back(k < s.e_me.size() ? s.e_me[k] : kNull);
                errs.code.push_back(s.status);
            }
            continue;
        }
        if (n_err_jobs) continue;  // the answer is the errors: nothing more to put together
        j_count.clear();
        j_max_step.clear();
        j_max_end.clear();
        for (int64_t k : pos[j]) {
            j_count.push_back(count[k]);
            j_max_step.push_back(max_step[k]);
            j_max_end.push_back(max_end[k]);
        }
        done_steps(s, ids[j], j_count.data(), j_max_step.data(), j_max_end.data(), s_att, s_end, s_step, ns,
                   in.as_of);
        // side by side with the jobs before
        const int64_t a0 = static_cast<int64_t>(out.a_ids.size()), c0 = static_cast<int64_t>(out.c_att.size());
        const int64_t r0 = static_cast<int64_t>(out.rank_values.size()), m0 = static_cast<int64_t>(out.m_start.size());
        const int64_t nA = static_cast<int64_t>(s.a_ids.size());
        const int64_t nR = std::max<int64_t>(static_cast<int64_t>(s.rank_values.size()), 1);
        auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
        auto shifted = [](auto& to, const auto& from, int64_t by) {
            for (auto v : from) to.push_back(v >= 0 ? v + by : v);
        };
        append(out.a_ids, s.a_ids);
        append(out.a_start, s.a_start);
        append(out.a_end, s.a_end);
        append(out.a_cause, s.a_cause);
        append(out.a_running, s.a_running);
        append(out.a_completed, s.a_completed);
        append(out.f_att, s.f_att);
        append(out.f_time, s.f_time);
        append(out.f_kind, s.f_kind);
        shifted(out.c_att, s.c_att, a0);
        append(out.c_step, s.c_step);
        append(out.c_dur, s.c_dur);
        append(out.c_ok, s.c_ok);
        append(out.has_durable, s.has_durable);
        if (out.m_off.empty()) out.m_off.push_back(0);
        const int64_t mr0 = static_cast<int64_t>(out.m_ranks.size());
        append(out.m_ids, s.m_ids);
        for (size_t k = 1; k < s.m_off.size(); ++k) out.m_off.push_back(s.m_off[k] + mr0);
        append(out.m_ranks, s.m_ranks);
        append(out.rank_values, s.rank_values);
        append(out.m_start, s.m_start);
        append(out.m_end, s.m_end);
        for (int64_t d = 0; d < nA; ++d) out.m_row.push_back(m0 + d * nR - r0);
        out.acc_min = std::min(out.acc_min, s.acc_min);
        out.job_acc_min.push_back(s.acc_min);
        for (Layer* L : {&out.background, &out.overlay}) {
            const Layer& F = L == &out.background ? s.background : s.overlay;
            append(L->rank, F.rank);
            append(L->start, F.start);
            append(L->end, F.end);
            append(L->state, F.state);
            shifted(L->att, F.att, a0);
            append(L->step, F.step);
        }
        shifted(out.o_ckpt, s.o_ckpt, c0);
        for (int64_t r : s.r_row) out.r_row.push_back(ord[lo + r]);
        shifted(out.r_att, s.r_att, a0);
        append(out.r_step, s.r_step);
        append(out.r_start, s.r_start);
        append(out.has_steps, s.has_steps);
        append(out.done_step, s.done_step);
        out.job_att.push_back(a0 + nA);
    }
    if (out.status) return out;
    if (out.m_off.empty()) out.m_off.push_back(0);
    // the ranks are the caller's dense ids: a lookup table over them
    const int64_t nRv = static_cast<int64_t>(out.rank_values.size());
    out.r_lo = nRv ? out.rank_values[0] : 0;
    const int64_t span = nRv ? out.rank_values.back() - out.r_lo + 1 : 0;
    out.rank_lut.assign(span, -1);
    for (int64_t k = 0; k < nRv; ++k) out.rank_lut[out.rank_values[k] - out.r_lo] = k;
    return out;
}

// The lineage rule per job (job_att: each job's dense attempts, as setup_jobs gives
// them; its restores and checkpoints are contiguous, in job order): each job alone by
// `lineage`; the rows of bad restores of every job in bad. Returns their number.
inline int64_t lineage_jobs(const int64_t* job_att, int64_t n_jobs, const int64_t* r_row, const int64_t* r_att,
                            const int64_t* r_step, const int64_t* r_start, int64_t nr, const int64_t* c_att,
                            const int64_t* c_step, const int64_t* c_dur, int64_t nc, const bool* has_durable,
                            const bool* has_steps, const int64_t* done_step, const bool* a_completed, int64_t null,
                            int64_t* base, int64_t* head, bool* on, bool* on_lineage, int64_t* bad) {
    int64_t n_bad = 0, r = 0, c = 0;
    std::vector<int64_t> ra, ca;
    for (int64_t j = 0; j < n_jobs; ++j) {
        const int64_t a0 = job_att[j], a1 = job_att[j + 1];
        const int64_t r_lo = r, c_lo = c;
        while (r < nr && r_att[r] < a1) ++r;
        while (c < nc && c_att[c] < a1) ++c;
        ra.assign(r_att + r_lo, r_att + r);
        for (int64_t& v : ra) v -= a0;
        ca.assign(c_att + c_lo, c_att + c);
        for (int64_t& v : ca) v -= a0;
        n_bad += lineage(r_row + r_lo, ra.data(), r_step + r_lo, r_start + r_lo, r - r_lo, ca.data(), c_step + c_lo,
                         c_dur + c_lo, c - c_lo, has_durable + a0, has_steps + a0, done_step + a0, a_completed + a0,
                         a1 - a0, null, base + a0, head + a0, on + a0, on_lineage + c_lo, bad + n_bad);
    }
    return n_bad;
}

}  // namespace pau::core::life
