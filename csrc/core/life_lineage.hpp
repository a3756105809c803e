// pau native interval core: the lineage rule of lifecycle attribution (DESIGN §2.2),
// bound as pau._core.lineage (pau.engine._lifecycle). It runs after the set-up
// (life_setup.hpp), on the ok restores in start order and the checkpoints that gives.
// The twin in plain Python is tests/reference_setup.py.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pau::core::life {

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
