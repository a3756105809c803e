// pau native interval core: the set-up of lifecycle attribution (pau.engine._lifecycle._setup).
//
// From the records other than steps (a few hundred: attempts, phases, saves,
// restores, failures, accountable rows) and the figures of the scan of the steps,
// by the rules of pau.engine._lifecycle: the attempts (start order, effective end, cause),
// the failures, the membership of ranks in attempts, the checkpoints, and the
// painted background (outage < unattributed < init/restore) and overlay
// (eval/custom/data_wait < checkpoint) of the pass; or the first relational error
// of the input (rows that contradict others), with its rows. Its records, answer
// and passes are in life_passes.hpp. The lineage rule (which restore each attempt
// used, which steps survive) is not here: it runs after this (life_lineage.hpp), on
// the ok restores in start order and the checkpoints this gives; the overlay's saves
// then take their state from it. The twin in numpy and plain Python is
// tests/reference_setup.py.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "life_lineage.hpp"
#include "life_passes.hpp"

namespace pau::core::life {

// The set-up of one job: the passes in turn, up to the first relational error.
inline Setup setup(const SetupIn& in) {
    Setup out;
    pass::State S{in, out};
    pass::attempts(S);
    if (!pass::known_attempts(S) || !pass::failures(S)) return out;
    pass::attempt_ends(S);
    if (!pass::membership_rows(S)) return out;
    pass::members(S);
    pass::accountable(S);
    pass::dense_ranks(S);
    if (!pass::no_overlap(S) || !pass::member_spans(S)) return out;
    pass::checkpoints(S);
    pass::restores(S);
    pass::background(S);
    pass::overlay(S);
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

namespace jobs {

// The records grouped by job (a stable counting sort: ord[k] is the caller's row at
// position k, job j's rows at off[j] .. off[j + 1]), their columns in that order, and
// per job its known ranks and its steps' attempt ids (pos: their places in in.step_ids).
struct ByJob {
    std::vector<int64_t> off, ord;
    std::vector<int8_t> rec;
    std::vector<int64_t> attempt, rank, start, end, step, block_end, durable, kcode;
    std::vector<uint8_t> ok;
    std::vector<std::vector<int64_t>> known, ids, pos;

    ByJob(const SetupIn& in, const int64_t* row_job, const int64_t* rank_job, const int64_t* att_job, int64_t n_jobs)
        : off(static_cast<size_t>(n_jobs) + 1, 0), ord(static_cast<size_t>(in.n)), known(n_jobs), ids(n_jobs),
          pos(n_jobs) {
        const int64_t n = in.n;
        for (int64_t i = 0; i < n; ++i) ++off[row_job[i] + 1];
        for (int64_t j = 0; j < n_jobs; ++j) off[j + 1] += off[j];
        std::vector<int64_t> at(off.begin(), off.end() - 1);
        for (int64_t i = 0; i < n; ++i) ord[at[row_job[i]]++] = i;
        auto gather = [&](auto& to, const auto* src) {
            to.resize(static_cast<size_t>(n));
            for (int64_t k = 0; k < n; ++k) to[k] = src[ord[k]];
        };
        gather(rec, in.rec);
        gather(attempt, in.attempt);
        gather(rank, in.rank);
        gather(start, in.start);
        gather(end, in.end);
        gather(step, in.step);
        gather(block_end, in.block_end);
        gather(durable, in.durable);
        gather(kcode, in.kcode);
        gather(ok, in.ok);
        for (int64_t r : in.known_ranks) known[rank_job[r]].push_back(r);
        for (size_t k = 0; k < in.step_ids.size(); ++k) {
            const int64_t j = att_job[in.step_ids[k]];
            ids[j].push_back(in.step_ids[k]);
            pos[j].push_back(static_cast<int64_t>(k));
        }
    }

    // The records of job j (its known ranks moved out).
    SetupIn of(const SetupIn& in, int64_t j) {
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
        return sub;
    }
};

// The error rows of job j's set-up s, in the caller's rows, each with its code.
inline void add_errors(Setup& out, const Setup& s, const ByJob& g, int64_t j, JobErrors& errs) {
    auto row = [&](int64_t r, int64_t rk, int64_t ms, int64_t me) {
        out.e_row.push_back(r);
        out.e_rank.push_back(rk);
        out.e_ms.push_back(ms);
        out.e_me.push_back(me);
        errs.code.push_back(s.status);
    };
    if (s.e_row.empty()) row(-1, kNull, kNull, kNull);  // kStepNoAttempt: the caller finds the step
    auto at = [](const std::vector<int64_t>& v, size_t k) { return k < v.size() ? v[k] : kNull; };
    for (size_t k = 0; k < s.e_row.size(); ++k)
        row(g.ord[g.off[j] + s.e_row[k]], at(s.e_rank, k), at(s.e_ms, k), at(s.e_me, k));
}

template <typename T>
void append(std::vector<T>& to, const std::vector<T>& from) {
    to.insert(to.end(), from.begin(), from.end());
}
// Appended, each index (>= 0) shifted by `by`.
template <typename T>
void shifted(std::vector<T>& to, const std::vector<T>& from, int64_t by) {
    for (T v : from) to.push_back(v >= 0 ? static_cast<T>(v + by) : v);
}

// Job j's set-up s put after the jobs before it in out: dense attempts, checkpoints and
// ranks shifted past theirs, rows back to the caller's.
inline void side_by_side(Setup& out, const Setup& s, const ByJob& g, int64_t j) {
    const int64_t a0 = static_cast<int64_t>(out.a_ids.size()), c0 = static_cast<int64_t>(out.c_att.size());
    const int64_t r0 = static_cast<int64_t>(out.rank_values.size()), m0 = static_cast<int64_t>(out.m_start.size());
    const int64_t nA = static_cast<int64_t>(s.a_ids.size());
    const int64_t nR = std::max<int64_t>(static_cast<int64_t>(s.rank_values.size()), 1);
    for (auto f : {&Setup::a_ids, &Setup::a_start, &Setup::a_end, &Setup::a_cause, &Setup::f_att, &Setup::f_time,
                   &Setup::f_kind, &Setup::c_step, &Setup::c_dur, &Setup::m_ids, &Setup::m_ranks,
                   &Setup::rank_values, &Setup::m_start, &Setup::m_end, &Setup::r_step, &Setup::r_start,
                   &Setup::done_step})
        append(out.*f, s.*f);
    for (auto f : {&Setup::a_running, &Setup::a_completed, &Setup::c_ok, &Setup::has_durable, &Setup::has_steps})
        append(out.*f, s.*f);
    shifted(out.c_att, s.c_att, a0);
    if (out.m_off.empty()) out.m_off.push_back(0);
    const int64_t mr0 = static_cast<int64_t>(out.m_ranks.size() - s.m_ranks.size());
    for (size_t k = 1; k < s.m_off.size(); ++k) out.m_off.push_back(s.m_off[k] + mr0);
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
    for (int64_t r : s.r_row) out.r_row.push_back(g.ord[g.off[j] + r]);
    shifted(out.r_att, s.r_att, a0);
    out.job_att.push_back(a0 + nA);
}

}  // namespace jobs

template <typename A>
Setup setup_jobs(const SetupIn& in, const int64_t* row_job, const int64_t* rank_job, const int64_t* att_job,
                 int64_t n_jobs, const int64_t* count, const int64_t* max_step, const int64_t* max_end,
                 const A* s_att, const int64_t* s_end, const int64_t* s_step, int64_t ns, JobErrors& errs) {
    jobs::ByJob g(in, row_job, rank_job, att_job, n_jobs);
    Setup out;
    out.job_att.push_back(0);
    int64_t n_err_jobs = 0;
    std::vector<int64_t> j_count, j_max_step, j_max_end;
    for (int64_t j = 0; j < n_jobs; ++j) {
        Setup s = setup(g.of(in, j));
        if (s.status) {
            if (n_err_jobs++ == 0) out.status = s.status;
            jobs::add_errors(out, s, g, j, errs);
            continue;
        }
        if (n_err_jobs) continue;  // the answer is the errors: nothing more to put together
        j_count.clear();
        j_max_step.clear();
        j_max_end.clear();
        for (int64_t k : g.pos[j]) {
            j_count.push_back(count[k]);
            j_max_step.push_back(max_step[k]);
            j_max_end.push_back(max_end[k]);
        }
        done_steps(s, g.ids[j], j_count.data(), j_max_step.data(), j_max_end.data(), s_att, s_end, s_step, ns,
                   in.as_of);
        jobs::side_by_side(out, s, g, j);
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

}  // namespace pau::core::life
