// pau native interval core: the lifecycle table as the attribution reads it
// (pau.engine._lifecycle.attribute_rows).
//
// A lifecycle table is mostly step rows, usually in one run, around which lie a few
// hundred other records (attempts, phases, saves, restores, failures). The
// attribution reads the step rows in place (zero-copy views of one run) and every
// other row as int64 columns with a fill for nulls. Reading those few rows column
// by column from Python costs far more than the rows themselves, so this finds the
// step rows and the others in one scan of the record column of the batches
// (exported through the Arrow C data interface, arrow_c.hpp), then gathers each
// column of the others; and of the step rows too when they are not one run.
//
// Only the usual layouts are read: `record` and `kind` utf8 strings; times int64
// or timestamp[ns]; `attempt` and `rank` int32, or int64 within int32; `step` and
// `tokens` int32 or int64; `ok` bool. For any other layout read() says no and the
// caller takes its general path, which converts the column or names the problem.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "arrow_c.hpp"
#include "life_checks.hpp"

namespace pau::core {

class LifeRows {
  public:
    static constexpr int64_t kNull = life::kNull;  // a null time, as everywhere in the lifecycle

    // Rows in table order as int64 columns (nulls and absent columns: kNull, but
    // rank -1 and tokens 0): the columns of every record (row: the position in the
    // table).
    struct Rows {
        std::vector<int64_t> row, attempt, rank, start, end, step, tokens;
    };
    // The rows other than steps, with the columns of saves and the other records:
    // `ok` as 0/1 (null and absent: 1), and the kinds of the rows whose record reads it.
    struct Small : Rows {
        std::vector<int8_t> rec;  // index in the record names, -1 unknown or null
        std::vector<int64_t> block_end, durable;
        std::vector<uint8_t> ok;
        std::vector<int64_t> kinded;  // the rows (positions in these) whose kind is read and not null
        std::vector<std::pair<const char*, int32_t>> kind;  // their kinds (utf8 bytes)
    };
    // The step rows' columns, when they are not one run of rows.
    using Steps = Rows;

    Small small;
    int64_t n_step = 0, first = -1, last = -1;  // the step rows: count, first and last row
    Steps steps;                                // filled unless the step rows are one run
    bool one_run() const { return n_step == 0 || last - first + 1 == n_step; }

    // `names`: the record names (RECORDS), `step_code` the step's, `kinded` the
    // records whose kind is read (one flag per name). False for a layout not read.
    bool read(const std::vector<arrow::Batch>& batches, const std::vector<std::string>& names, int step_code,
              const std::vector<bool>& kinded) {
        std::vector<Columns> cols(batches.size());
        for (size_t b = 0; b < batches.size(); ++b)
            if (!cols[b].read(batches[b])) return false;
        const std::string& step_name = names[static_cast<size_t>(step_code)];
        // The rows (per batch) other than steps, and where the steps are.
        std::vector<std::vector<int64_t>> at(cols.size());
        std::vector<std::vector<std::pair<int64_t, int64_t>>> runs(cols.size());  // of step rows, [i, j)
        int64_t row0 = 0, n = 0, lo = -1, hi = -1;
        for (size_t b = 0; b < cols.size(); ++b) {
            const Columns& c = cols[b];
            int64_t i = 0;
            while (i < c.rows) {
                const int64_t j = c.record.run_of(i, step_name);  // a run of step rows, in a tight loop
                if (j > i) {
                    runs[b].emplace_back(i, j);
                    if (lo < 0) lo = row0 + i;
                    hi = row0 + j - 1;
                    n += j - i;
                    i = j;
                    continue;
                }
                at[b].push_back(i);
                small.row.push_back(row0 + i);
                const int code = c.record.code(i, names);
                small.rec.push_back(static_cast<int8_t>(code));
                if (code >= 0 && kinded[static_cast<size_t>(code)] && c.kind.offsets && c.kind.valid(i)) {
                    small.kinded.push_back(static_cast<int64_t>(small.row.size()) - 1);
                    small.kind.emplace_back(c.kind.data + c.kind.offsets[i], c.kind.offsets[i + 1] - c.kind.offsets[i]);
                }
                ++i;
            }
            row0 += c.rows;
        }
        n_step = n;
        first = lo;
        last = hi;
        // Then each column, gathered (the rows lie far apart in a large table: one
        // simple loop per column lets the loads overlap).
        if (!gather_rows(cols, at, small)) return false;
        gather(cols, at, &Columns::block_end, kNull, small.block_end);
        gather(cols, at, &Columns::durable, kNull, small.durable);
        small.ok.reserve(small.row.size());
        for (size_t b = 0; b < cols.size(); ++b)
            for (int64_t i : at[b]) small.ok.push_back(cols[b].ok(i));
        if (one_run()) return true;
        row0 = 0;
        steps.row.reserve(static_cast<size_t>(n));
        for (size_t b = 0; b < cols.size(); ++b) {
            at[b].clear();
            for (const auto& [i, j] : runs[b]) {
                for (int64_t k = i; k < j; ++k) {
                    at[b].push_back(k);
                    steps.row.push_back(row0 + k);
                }
            }
            row0 += cols[b].rows;
        }
        return gather_rows(cols, at, steps);
    }

  private:
    struct Columns {
        arrow::Utf8 record, kind;
        arrow::Ints attempt, rank, start, end, step, block_end, durable, tokens;
        const uint8_t *ok_bits = nullptr, *ok_validity = nullptr;  // ok_bits nullptr: absent
        int64_t ok0 = 0, rows = 0;

        bool read(const arrow::Batch& batch) {
            if (!batch.ok()) return false;
            rows = batch.rows();
            const arrow::Column rec = batch.column("record"), s = batch.column("start_ns");
            if (!rec || !s || !record.read(rec) || !start.read(s, true)) return false;
            if (!end.read(batch.column("end_ns"), true) || !block_end.read(batch.column("block_end_ns"), true) ||
                !durable.read(batch.column("durable_ns"), true))
                return false;
            if (!attempt.read(batch.column("attempt"), false) || !rank.read(batch.column("rank"), false) ||
                !step.read(batch.column("step"), false) || !tokens.read(batch.column("tokens"), false))
                return false;
            if (!kind.read(batch.column("kind"))) return false;
            const arrow::Column ok = batch.column("ok");
            if (ok) {
                if (ok.format() != "b") return false;
                ok_bits = static_cast<const uint8_t*>(ok.array->buffers[1]);
                ok_validity = ok.has_nulls() ? static_cast<const uint8_t*>(ok.array->buffers[0]) : nullptr;
                ok0 = ok.array->offset;
            }
            return true;
        }

        uint8_t ok(int64_t i) const {
            const int64_t k = ok0 + i;
            if (ok_bits == nullptr || (ok_validity != nullptr && !(ok_validity[k >> 3] >> (k & 7) & 1))) return 1;
            return ok_bits[k >> 3] >> (k & 7) & 1;
        }
    };

    static void gather(const std::vector<Columns>& cols, const std::vector<std::vector<int64_t>>& at,
                       arrow::Ints Columns::*col, int64_t fill, std::vector<int64_t>& out) {
        size_t n = 0;
        for (const auto& a : at) n += a.size();
        out.resize(n);
        int64_t* o = out.data();
        for (size_t b = 0; b < cols.size(); ++b) {
            const arrow::Ints& c = cols[b].*col;
            const std::vector<int64_t>& rows = at[b];
            if (c.values == nullptr) {
                std::fill(o, o + rows.size(), fill);
            } else if (c.validity != nullptr) {
                for (size_t k = 0; k < rows.size(); ++k) o[k] = c.get(rows[k], fill);
            } else if (c.wide) {  // the usual column: a plain gather
                const auto* v = static_cast<const int64_t*>(c.values);
                for (size_t k = 0; k < rows.size(); ++k) o[k] = v[rows[k]];
            } else {
                const auto* v = static_cast<const int32_t*>(c.values);
                for (size_t k = 0; k < rows.size(); ++k) o[k] = v[rows[k]];
            }
            o += rows.size();
        }
    }

    // The columns every record has (not `row`); false when an int64 attempt or rank
    // lies outside int32 (the general path names the row).
    static bool gather_rows(const std::vector<Columns>& cols, const std::vector<std::vector<int64_t>>& at,
                            Rows& out) {
        if (!gather_ids(cols, at, &Columns::attempt, kNull, out.attempt) ||
            !gather_ids(cols, at, &Columns::rank, -1, out.rank))
            return false;
        gather(cols, at, &Columns::start, kNull, out.start);
        gather(cols, at, &Columns::end, kNull, out.end);
        gather(cols, at, &Columns::step, kNull, out.step);
        gather(cols, at, &Columns::tokens, 0, out.tokens);
        return true;
    }

    static bool gather_ids(const std::vector<Columns>& cols, const std::vector<std::vector<int64_t>>& at,
                           arrow::Ints Columns::*col, int64_t fill, std::vector<int64_t>& out) {
        gather(cols, at, col, fill, out);
        for (int64_t x : out)
            if (x != fill && (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()))
                return false;
        return true;
    }
};

}  // namespace pau::core
