// pau native interval core: the set-up of lifecycle attribution, its parts. The
// records it reads (SetupIn), the answer it gives (Setup, with the relational errors it
// finds) and the passes `life::setup` (life_setup.hpp) runs over them in turn, each
// filling its part of the answer: attempts, failures and the attempts' ends,
// membership, accountable time, dense ranks, the member spans of phases, saves and
// restores, checkpoints, restores, and the two painted layers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
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

// The passes of `setup`, in this order, and the state they share. A pass that finds a
// relational error sets it in the answer (status and rows) and returns false; the set-up
// then stops there.
namespace pass {

// Labelled intervals to paint into a layer: each with its level, and the state, dense
// attempt, step and checkpoint (-1: a phase) of the pieces it gives.
struct Labelled {
    std::vector<int32_t> rank, att;
    std::vector<int64_t> start, end, step, ckpt;
    std::vector<int8_t> level, state;
    void add(int64_t r, int64_t s, int64_t e, int lvl, int8_t st, int64_t a, int64_t stp, int64_t ck = -1) {
        rank.push_back(static_cast<int32_t>(r));
        start.push_back(s);
        end.push_back(e);
        level.push_back(static_cast<int8_t>(lvl));
        state.push_back(st);
        att.push_back(static_cast<int32_t>(a));
        step.push_back(stp);
        ckpt.push_back(ck);
    }
};

struct State {
    const SetupIn& in;
    Setup& out;
    // attempts: their ids u (sorted, distinct) and per position in u the earliest start,
    // the latest end (kNull if one is open) and the first kind given; order[d] is the
    // position of dense attempt d, dense_of its inverse
    std::vector<int64_t> u, p_start, p_end, p_kind, order, dense_of;
    std::vector<int64_t> row_d;  // per record: the dense index of its attempt (-1: accountable)
    // per dense attempt: its first failure as of as_of (time, kind)
    std::vector<uint8_t> ff_has;
    std::vector<int64_t> ff_t, ff_k;
    std::vector<int64_t> acc_rows, known;  // the accountable rows; the ranks known, distinct
    // membership rows (dense attempt, rank, start, end, attempt row); mo: the first row of
    // each distinct (attempt, rank), sorted
    std::vector<int64_t> mm_d, mm_r, mm_s, mm_e, mm_i, mo;
    std::vector<int64_t> mem_att, mem_rank, mem_start, mem_end;  // the distinct memberships
    std::vector<int64_t> acc_rank, acc_start, acc_end;           // accountable time per rank
    int64_t nR = 1;              // the ranks' block in m_start, m_end (at least 1)
    std::vector<int64_t> m_src;  // the attempt row of each membership, as m_start
    // phases, saves and restores on each member rank: record row, rank; their dense
    // attempt, end and blocking end, cut at the member's end
    std::vector<int64_t> x_src, x_rank, x_d, x_end, x_block;

    bool fail(int code, std::vector<int64_t> row, std::vector<int64_t> rk = {}, std::vector<int64_t> ms = {},
              std::vector<int64_t> me = {}) {
        out.status = code;
        out.e_row = std::move(row);
        out.e_rank = std::move(rk);
        out.e_ms = std::move(ms);
        out.e_me = std::move(me);
        return false;
    }
    // The dense rank of rank v, -1 if none.
    int64_t rank_pos(int64_t v) const {
        if (out.dense) return detail::find(out.rank_values, v);
        const int64_t j = v - out.r_lo;
        return (0 <= j && j < static_cast<int64_t>(out.rank_lut.size())) ? out.rank_lut[j] : -1;
    }
    // The layer of labelled intervals painted by (rank, start): ranks as dense positions
    // when dense; the checkpoint of each piece in ckpt when asked.
    Layer layer(Labelled& x, std::vector<int64_t>* ckpt) const {
        if (out.dense)
            for (int32_t& r : x.rank) r = static_cast<int32_t>(detail::find(out.rank_values, r));
        const int64_t m = static_cast<int64_t>(x.rank.size());
        const std::vector<int64_t> o =
            by_rank_start(x.rank.data(), x.start.data(), m, out.r_lo, out.rank_lut.data(), nR);
        Painted P = paint(x.rank.data(), x.start.data(), x.end.data(), x.level.data(), o.data(), m);
        Layer L;
        L.rank = std::move(P.rank);
        L.start = std::move(P.start);
        L.end = std::move(P.end);
        for (int64_t w : P.row) {
            L.state.push_back(x.state[w]);
            L.att.push_back(x.att[w]);
            L.step.push_back(x.step[w]);
            if (ckpt) ckpt->push_back(x.ckpt[w]);
        }
        return L;
    }
};

// Attempts: per id the earliest start, the latest end (null if one is open) and the
// first kind given; dense indices by (start, id).
inline void attempts(State& S) {
    const SetupIn& in = S.in;
    for (int64_t i = 0; i < in.n; ++i)
        if (in.rec[i] == kAtt) S.u.push_back(in.attempt[i]);
    detail::distinct(S.u);
    const int64_t nA = static_cast<int64_t>(S.u.size());
    S.p_start.assign(nA, kBig);
    S.p_end.assign(nA, kNull);
    S.p_kind.assign(nA, -1);
    std::vector<uint8_t> p_seen(nA, 0);
    for (int64_t i = 0; i < in.n; ++i) {
        if (in.rec[i] != kAtt) continue;
        const int64_t p = detail::find(S.u, in.attempt[i]), s = in.start[i], e = in.end[i];
        if (!p_seen[p]) {
            p_seen[p] = 1;
            S.p_start[p] = s;
            S.p_end[p] = e;
            S.p_kind[p] = in.kcode[i];
        } else {
            S.p_start[p] = std::min(S.p_start[p], s);
            S.p_end[p] = (S.p_end[p] == kNull || e == kNull) ? kNull : std::max(S.p_end[p], e);
            if (S.p_kind[p] < 0) S.p_kind[p] = in.kcode[i];
        }
    }
    // by (start, id): u is sorted
    S.order = detail::stable_order(nA, [&](int64_t a, int64_t b) { return S.p_start[a] < S.p_start[b]; });
    S.dense_of.resize(nA);
    S.out.a_ids.resize(nA);
    S.out.a_start.resize(nA);
    for (int64_t i = 0; i < nA; ++i) {
        S.dense_of[S.order[i]] = i;
        S.out.a_ids[i] = S.u[S.order[i]];
        S.out.a_start[i] = S.p_start[S.order[i]];
    }
}

// Every record but accountable names a known attempt (row_d: its dense index), and so
// does every step.
inline bool known_attempts(State& S) {
    const SetupIn& in = S.in;
    const int64_t* attempt = in.attempt;
    S.row_d.assign(in.n, -1);
    int64_t miss = -1;
    for (int64_t i = 0; i < in.n; ++i) {
        if (in.rec[i] == kAcc) continue;
        const int64_t p = detail::find(S.u, attempt[i]);
        if (p < 0) {
            if (miss < 0 || attempt[i] < attempt[miss]) miss = i;
        } else {
            S.row_d[i] = S.dense_of[p];
        }
    }
    if (miss >= 0) {
        for (int64_t i = 0; i < in.n; ++i)  // the first row of the least unknown id
            if (attempt[i] == attempt[miss]) return S.fail(kNoAttempt, {i});
    }
    for (int64_t id : in.step_ids)
        if (detail::find(S.u, id) < 0) return S.fail(kStepNoAttempt, {});
    return true;
}

// Failures as of as_of, distinct, by (time, attempt, kind); the first of each attempt
// ends it. A failure before its attempt began, or after the end its attempt rows
// give, contradicts them.
inline bool failures(State& S) {
    const SetupIn& in = S.in;
    const int64_t *attempt = in.attempt, *start = in.start, *kcode = in.kcode;
    std::vector<int64_t> fr;
    for (int64_t i = 0; i < in.n; ++i)
        if (in.rec[i] == kFail && start[i] <= in.as_of) fr.push_back(i);
    std::vector<int64_t> bad_f, bad_s, bad_e;
    for (int64_t i : fr) {
        const int64_t p = detail::find(S.u, attempt[i]);
        if (start[i] < S.p_start[p] || (S.p_end[p] != kNull && start[i] > S.p_end[p])) {
            bad_f.push_back(i);
            bad_s.push_back(S.p_start[p]);
            bad_e.push_back(S.p_end[p]);
        }
    }
    if (!bad_f.empty()) return S.fail(kFailureOutside, std::move(bad_f), {}, std::move(bad_s), std::move(bad_e));
    const int64_t nf = static_cast<int64_t>(fr.size()), nA = static_cast<int64_t>(S.u.size());
    std::vector<int64_t> fo = detail::stable_order(nf, [&](int64_t a, int64_t b) {
        const int64_t i = fr[a], j = fr[b];
        if (start[i] != start[j]) return start[i] < start[j];
        if (attempt[i] != attempt[j]) return attempt[i] < attempt[j];
        return kcode[i] < kcode[j];
    });
    S.ff_has.assign(nA, 0);
    S.ff_t.assign(nA, 0);
    S.ff_k.assign(nA, 0);
    for (int64_t j = 0; j < nf; ++j) {
        const int64_t i = fr[fo[j]];
        if (j > 0) {
            const int64_t q = fr[fo[j - 1]];
            if (attempt[i] == attempt[q] && start[i] == start[q] && kcode[i] == kcode[q]) continue;
        }
        S.out.f_att.push_back(attempt[i]);
        S.out.f_time.push_back(start[i]);
        S.out.f_kind.push_back(kcode[i]);
        const int64_t d = S.row_d[i];
        if (!S.ff_has[d]) {
            S.ff_has[d] = 1;
            S.ff_t[d] = start[i];
            S.ff_k[d] = kcode[i];
        }
    }
    return true;
}

// Each attempt's effective end and cause: its first failure, else the end its rows
// give as of as_of (the cause its kind says), else the next attempt's start
// (superseded), else as_of (still running).
inline void attempt_ends(State& S) {
    Setup& out = S.out;
    const int64_t nA = static_cast<int64_t>(S.u.size()), as_of = S.in.as_of, nfk = S.in.n_fail_kinds;
    out.a_end.resize(nA);
    out.a_running.assign(nA, 0);
    out.a_cause.assign(nA, -1);
    out.a_completed.assign(nA, 0);
    for (int64_t i = 0; i < nA; ++i) {
        const int64_t p = S.order[i], ea = S.p_end[p];
        bool has_e = ea != kNull && ea <= as_of;
        int64_t e = ea, c = -1;
        if (S.ff_has[i]) {
            e = has_e ? std::min(e, S.ff_t[i]) : S.ff_t[i];
            has_e = true;
            c = S.ff_k[i];
        } else if (has_e) {
            const int64_t kd = S.p_kind[p];
            if (kd == kKindRunning) c = nfk + kCauseEnded;
            else if (kd == kKindFailed) c = nfk + kCauseFailed;
            else if (kd == kKindPreempted) c = nfk + kCausePreempted;
        }
        if (!has_e && i + 1 < nA) {
            e = std::min(out.a_start[i + 1], as_of);  // superseded by the next attempt
            has_e = true;
            if (c < 0) c = nfk + kCauseSuperseded;
        }
        if (!has_e) {
            e = as_of;
            out.a_running[i] = 1;
        }
        out.a_end[i] = std::max(std::min(e, as_of), out.a_start[i]);
        out.a_cause[i] = c;
        out.a_completed[i] = !out.a_running[i] && c < 0;
    }
}

// Membership rows: per-rank attempt rows first, then rank -1 rows per rank accountable
// at the attempt's start (every known rank without accountable rows).
inline bool membership_rows(State& S) {
    const SetupIn& in = S.in;
    const int64_t *rank = in.rank, *start = in.start, *end = in.end;
    const Setup& out = S.out;
    for (int64_t i = 0; i < in.n; ++i)
        if (in.rec[i] == kAcc) S.acc_rows.push_back(i);
    S.known = in.known_ranks;
    for (int64_t i = 0; i < in.n; ++i)
        if (rank[i] >= 0) S.known.push_back(rank[i]);
    detail::distinct(S.known);
    auto member = [&S](int64_t d, int64_t r, int64_t s, int64_t e, int64_t i) {
        S.mm_d.push_back(d);
        S.mm_r.push_back(r);
        S.mm_s.push_back(s);
        S.mm_e.push_back(e);
        S.mm_i.push_back(i);
    };
    for (int64_t i = 0; i < in.n; ++i) {
        if (in.rec[i] != kAtt || rank[i] < 0) continue;
        const int64_t d = S.row_d[i], ae = out.a_end[d];
        const int64_t oe = (end[i] == kNull || end[i] > in.as_of) ? ae : std::min(end[i], ae);
        member(d, rank[i], start[i], std::max(oe, start[i]), i);
    }
    for (int64_t i = 0; i < in.n; ++i) {
        if (in.rec[i] != kAtt || rank[i] >= 0) continue;
        const int64_t d = S.row_d[i], t0 = start[i];
        if (!S.acc_rows.empty()) {
            for (int64_t q : S.acc_rows)
                if (start[q] <= t0 && (end[q] == kNull || end[q] > t0))
                    member(d, rank[q], out.a_start[d], out.a_end[d], i);
        } else {
            if (S.known.empty()) return S.fail(kNoRank, {i});
            for (int64_t r : S.known) member(d, r, out.a_start[d], out.a_end[d], i);
        }
    }
    return true;
}

// The distinct (attempt, rank) memberships, the first row of each, sorted; and the
// members of each attempt by id (ranks sorted).
inline void members(State& S) {
    const int64_t nm = static_cast<int64_t>(S.mm_d.size());
    const std::vector<int64_t>&mm_d = S.mm_d, &mm_r = S.mm_r;
    std::vector<int64_t>& mo = S.mo;
    mo = detail::stable_order(
        nm, [&](int64_t a, int64_t b) { return mm_d[a] != mm_d[b] ? mm_d[a] < mm_d[b] : mm_r[a] < mm_r[b]; });
    int64_t k = 0;
    for (int64_t j = 0; j < nm; ++j)
        if (j == 0 || mm_d[mo[j]] != mm_d[mo[k - 1]] || mm_r[mo[j]] != mm_r[mo[k - 1]]) mo[k++] = mo[j];
    mo.resize(k);
    const int64_t nmu = static_cast<int64_t>(mo.size());
    S.mem_att.resize(nmu);
    S.mem_rank.resize(nmu);
    S.mem_start.resize(nmu);
    S.mem_end.resize(nmu);
    for (int64_t j = 0; j < nmu; ++j) {
        S.mem_att[j] = mm_d[mo[j]];
        S.mem_rank[j] = mm_r[mo[j]];
        S.mem_start[j] = S.mm_s[mo[j]];
        S.mem_end[j] = S.mm_e[mo[j]];
    }
    Setup& out = S.out;
    const std::vector<int64_t>& a_ids = out.a_ids;
    const std::vector<int64_t> by_id = detail::stable_order(
        nmu, [&](int64_t a, int64_t b) { return a_ids[S.mem_att[a]] < a_ids[S.mem_att[b]]; });
    out.m_off.push_back(0);
    for (int64_t j = 0; j < nmu; ++j) {
        const int64_t id = a_ids[S.mem_att[by_id[j]]];
        if (j == 0 || id != out.m_ids.back()) {
            out.m_ids.push_back(id);
            out.m_off.push_back(j);
        }
        out.m_off.back() = j + 1;
        out.m_ranks.push_back(S.mem_rank[by_id[j]]);
    }
}

// Accountable time per rank: the accountable rows (cut at as_of), else each member
// rank from its first membership's start to its last one's end; the earliest start.
inline void accountable(State& S) {
    const SetupIn& in = S.in;
    Setup& out = S.out;
    if (!S.acc_rows.empty()) {
        for (int64_t q : S.acc_rows) {
            S.acc_rank.push_back(in.rank[q]);
            S.acc_start.push_back(in.start[q]);
            S.acc_end.push_back(in.end[q] == kNull ? in.as_of : std::min(in.end[q], in.as_of));
        }
    } else {
        S.acc_rank = S.mem_rank;
        detail::distinct(S.acc_rank);
        S.acc_start.assign(S.acc_rank.size(), kBig);
        S.acc_end.assign(S.acc_rank.size(), -kBig);
        for (size_t j = 0; j < S.mem_rank.size(); ++j) {
            const int64_t p = std::lower_bound(S.acc_rank.begin(), S.acc_rank.end(), S.mem_rank[j]) - S.acc_rank.begin();
            S.acc_start[p] = std::min(S.acc_start[p], S.mem_start[j]);
            S.acc_end[p] = std::max(S.acc_end[p], S.mem_end[j]);
        }
    }
    for (size_t j = 0; j < S.acc_rank.size(); ++j) {
        S.acc_end[j] = std::max(S.acc_end[j], S.acc_start[j]);
        out.acc_min = std::min(out.acc_min, S.acc_start[j]);
    }
    out.job_att = {0, static_cast<int64_t>(out.a_ids.size())};
    out.job_acc_min = {out.acc_min};
}

// The ranks (known, accountable, members) as dense positions, through a lookup table
// unless they spread wider than kRankLutMax; membership by (dense attempt, dense rank).
inline void dense_ranks(State& S) {
    Setup& out = S.out;
    std::vector<int64_t>& rank_values = out.rank_values;
    rank_values = S.known;
    rank_values.insert(rank_values.end(), S.acc_rank.begin(), S.acc_rank.end());
    rank_values.insert(rank_values.end(), S.mem_rank.begin(), S.mem_rank.end());
    detail::distinct(rank_values);
    const int64_t nRv = static_cast<int64_t>(rank_values.size()), nA = static_cast<int64_t>(out.a_ids.size());
    const int64_t nR = S.nR = std::max<int64_t>(nRv, 1);
    out.r_lo = nRv ? rank_values[0] : 0;
    const int64_t span = nRv ? rank_values.back() - out.r_lo + 1 : 0;
    out.dense = span >= kRankLutMax;  // ranks far apart: positions, not values, in the layers
    if (out.dense) {
        out.r_lo = 0;
        out.rank_lut.resize(nRv);
        std::iota(out.rank_lut.begin(), out.rank_lut.end(), 0);
    } else {
        out.rank_lut.assign(span, -1);
        for (int64_t j = 0; j < nRv; ++j) out.rank_lut[rank_values[j] - out.r_lo] = j;
    }
    out.m_row.resize(nA);
    for (int64_t d = 0; d < nA; ++d) out.m_row[d] = d * nR;
    out.m_start.assign(nA * nR, kNull);
    out.m_end.assign(nA * nR, kNull);
    S.m_src.assign(nA * nR, -1);
    for (size_t j = 0; j < S.mo.size(); ++j) {
        const int64_t c = S.mem_att[j] * nR + S.rank_pos(S.mem_rank[j]);
        out.m_start[c] = S.mem_start[j];
        out.m_end[c] = S.mem_end[j];
        S.m_src[c] = S.mm_i[S.mo[j]];
    }
}

// Attempts follow each other on a rank: one starting there before the one before it
// ended contradicts it. Attempts are in start order (their dense index), and so, almost
// always, are their memberships on each rank; a rank where they are not is checked in
// the order of its membership starts.
inline bool no_overlap(State& S) {
    const Setup& out = S.out;
    const std::vector<int64_t>&m_start = out.m_start, &m_end = out.m_end;
    const int64_t nA = static_cast<int64_t>(out.a_ids.size()), nR = S.nR;
    std::vector<int64_t> bad_i, bad_r, bad_a, bad_e;
    std::vector<int64_t> seq;
    for (int64_t rp = 0; rp < static_cast<int64_t>(out.rank_values.size()); ++rp) {
        seq = detail::stable_order(nA, [&](int64_t a, int64_t b) { return m_start[a * nR + rp] < m_start[b * nR + rp]; });
        int64_t prev = -1;
        for (int64_t d : seq) {
            const int64_t c = d * nR + rp;
            if (m_start[c] == kNull) continue;
            if (prev >= 0 && m_start[c] < m_end[prev * nR + rp]) {
                bad_i.push_back(S.m_src[c]);
                bad_r.push_back(out.rank_values[rp]);
                bad_a.push_back(out.a_ids[prev]);
                bad_e.push_back(m_end[prev * nR + rp]);
            }
            prev = d;
        }
    }
    if (!bad_i.empty())
        return S.fail(kAttemptOverlap, std::move(bad_i), std::move(bad_r), std::move(bad_a), std::move(bad_e));
    return true;
}

// Phases, saves and restores on each member rank (rank -1: every member), checked
// against their attempt on that rank and cut at its end.
inline bool member_spans(State& S) {
    const SetupIn& in = S.in;
    const Setup& out = S.out;
    const int64_t *rank = in.rank, *start = in.start;
    auto small = [&](int64_t i) { return in.rec[i] == kPhase || in.rec[i] == kCkpt || in.rec[i] == kRest; };
    for (int64_t i = 0; i < in.n; ++i) {
        if (small(i) && rank[i] >= 0) {
            S.x_src.push_back(i);
            S.x_rank.push_back(rank[i]);
        }
    }
    for (int64_t i = 0; i < in.n; ++i) {
        if (!small(i) || rank[i] >= 0) continue;
        const int64_t p = detail::find(out.m_ids, in.attempt[i]);
        if (p < 0) continue;
        for (int64_t q = out.m_off[p]; q < out.m_off[p + 1]; ++q) {
            S.x_src.push_back(i);
            S.x_rank.push_back(out.m_ranks[q]);
        }
    }
    const int64_t ne = static_cast<int64_t>(S.x_src.size());
    S.x_d.resize(ne);
    S.x_end.resize(ne);
    S.x_block.resize(ne);
    std::vector<int64_t> e_row, e_rank, e_ms, e_me;
    for (int64_t k = 0; k < ne; ++k) {
        const int64_t i = S.x_src[k], d = S.row_d[i], rd = S.rank_pos(S.x_rank[k]);
        const int64_t ms = rd >= 0 ? out.m_start[d * S.nR + rd] : kNull;
        const int64_t me = rd >= 0 ? out.m_end[d * S.nR + rd] : kNull;
        if (ms == kNull || start[i] < ms || start[i] > me) {
            e_row.push_back(i);
            e_rank.push_back(S.x_rank[k]);
            e_ms.push_back(ms);
            e_me.push_back(me);
            continue;
        }
        S.x_d[k] = d;
        int64_t e = in.end[i];
        S.x_end[k] = std::max((e == kNull || e > me) ? me : e, start[i]);
        e = in.block_end[i];
        S.x_block[k] = std::max((e == kNull || e > me) ? me : e, start[i]);
    }
    if (!e_row.empty()) return S.fail(kOutside, std::move(e_row), std::move(e_rank), std::move(e_ms), std::move(e_me));
    return true;
}

// Checkpoints: per (attempt, step) durable when the last shard is, ok if all are.
inline void checkpoints(State& S) {
    const SetupIn& in = S.in;
    Setup& out = S.out;
    const int64_t* step = in.step;
    const std::vector<int64_t>& row_d = S.row_d;
    std::vector<int64_t> cr;
    for (int64_t i = 0; i < in.n; ++i)
        if (in.rec[i] == kCkpt) cr.push_back(i);
    // shards come save by save: usually sorted
    const std::vector<int64_t> co = detail::stable_order(static_cast<int64_t>(cr.size()), [&](int64_t a, int64_t b) {
        const int64_t i = cr[a], j = cr[b];
        return row_d[i] != row_d[j] ? row_d[i] < row_d[j] : step[i] < step[j];
    });
    for (size_t j = 0; j < cr.size(); ++j) {
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
    out.has_durable.assign(out.a_ids.size(), 0);
    for (size_t g = 0; g < out.c_att.size(); ++g) {
        if (!(out.c_ok[g] && out.c_dur[g] <= in.as_of)) out.c_dur[g] = kNull;
        else out.has_durable[out.c_att[g]] = 1;
    }
}

// The ok restores (as of as_of) by start, stably, for the lineage.
inline void restores(State& S) {
    const SetupIn& in = S.in;
    std::vector<int64_t> rr;
    for (int64_t i = 0; i < in.n; ++i)
        if (in.rec[i] == kRest && in.start[i] <= in.as_of) rr.push_back(i);
    const std::vector<int64_t> ro = detail::stable_order(
        static_cast<int64_t>(rr.size()), [&](int64_t a, int64_t b) { return in.start[rr[a]] < in.start[rr[b]]; });
    for (int64_t j : ro) {
        const int64_t i = rr[j];
        if (!in.ok[i]) continue;
        S.out.r_row.push_back(i);
        S.out.r_att.push_back(S.row_d[i]);
        S.out.r_step.push_back(in.step[i]);
        S.out.r_start.push_back(in.start[i]);
    }
}

// The background layer: accountable (outage) < attempts (unattributed) < init/restore.
inline void background(State& S) {
    const SetupIn& in = S.in;
    const int8_t* st = in.st_codes;
    Labelled b;
    for (size_t j = 0; j < S.acc_rank.size(); ++j)
        b.add(S.acc_rank[j], S.acc_start[j], S.acc_end[j], 0, st[kOutage], -1, kNull);
    for (size_t j = 0; j < S.mem_rank.size(); ++j)
        b.add(S.mem_rank[j], S.mem_start[j], S.mem_end[j], 1, st[kUnattributed], S.mem_att[j], kNull);
    for (size_t k = 0; k < S.x_src.size(); ++k) {
        const int64_t i = S.x_src[k], d = S.x_d[k];
        if (in.rec[i] == kRest)
            b.add(S.x_rank[k], in.start[i], S.x_end[k], 2, st[kRestoreState], d, in.step[i]);
        else if (in.rec[i] == kPhase && in.kcode[i] < kInitKinds)
            b.add(S.x_rank[k], in.start[i], S.x_end[k], 2, d == 0 ? st[kInit] : st[kReinit], d, kNull);
    }
    S.out.background = S.layer(b, nullptr);
}

// The overlay layer: eval/custom/data_wait < checkpoint (its blocking part); a save's
// state is kLost when its checkpoint is not durable, else kUnused until the lineage says.
inline void overlay(State& S) {
    const SetupIn& in = S.in;
    const Setup& out = S.out;
    const int64_t* step = in.step;
    Labelled o;
    for (size_t k = 0; k < S.x_src.size(); ++k) {  // phases first, then saves
        const int64_t i = S.x_src[k];
        if (in.rec[i] != kPhase || in.kcode[i] < kInitKinds) continue;
        o.add(S.x_rank[k], in.start[i], S.x_end[k], 0, in.phase_state[in.kcode[i]], S.x_d[k], kNull);
    }
    int64_t g = -1;
    for (size_t k = 0; k < S.x_src.size(); ++k) {
        const int64_t i = S.x_src[k];
        if (in.rec[i] != kCkpt) continue;
        const int64_t d = S.x_d[k];
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
        const int8_t state = out.c_dur[g] == kNull ? in.st_codes[kLost] : in.st_codes[kUnused];
        o.add(S.x_rank[k], in.start[i], S.x_block[k], 1, state, d, step[i], g);
    }
    S.out.overlay = S.layer(o, &S.out.o_ckpt);
}

}  // namespace pass

}  // namespace pau::core::life
