// pau native Kineto reader: a streaming parser for PyTorch profiler traces.
//
// A Kineto trace is Chrome trace JSON, either an object {"traceEvents": [...],
// "distributedInfo": {...}, ...} (current) or a bare top-level array of events
// (old). Traces reach gigabytes, and a JSON tree of one costs ~10x its size, so
// this parser never builds a tree. The caller feeds the (decompressed) bytes in
// chunks of any size; the parser walks the top-level structure as a small state
// machine and, for each element of traceEvents, reads only the fields pau needs
// into columns, skipping the rest (operator shapes, call stacks...). Memory is
// the output columns plus the current chunk plus at most one event that
// straddles two chunks.
//
// Resumability: every step of the state machine either consumes a complete unit
// (a key and its value, or one event) or consumes nothing and asks for more
// data; so a step that runs out of bytes is simply retried from the same place
// once more bytes are there. Chunks are parsed where they lie, without a copy;
// only the unit that straddles a chunk boundary is copied (with the start of the
// next chunk) and scanned twice.
//
// Exact time: "ts" and "dur" are microseconds written as decimal text (for
// example 1712195495522456.125). They are converted from the text to int64
// nanoseconds with integer arithmetic, never through a double, which would
// lose the nanoseconds at today's epoch (a double holds ~0.25 us there).
// Digits below the nanosecond (not written by Kineto) are rounded half away
// from zero.
//
// Which events are kept: complete events ("ph": "X") whose category is one of
// the device categories given to the parser, plus the host events other
// analyses need: those with an args.correlation (kernel launches: they tell
// which profiler step a kernel belongs to), those with an args.stream,
// ProfilerStep annotations, the "Trace" event ("PyTorch Profiler (0)"),
// whose extent is the profiler's capture window, and host spans whose name
// holds "DataLoader" or "dataloader" (the host waiting for data: the idle split
// of docs/idle.md). Everything else is only counted, per category.
//
// Malformed input never aborts: the parser stops and reports what it expected,
// at which byte offset (in the decompressed stream) and line. Kept events that
// lack a field or hold an impossible value are set aside with a reason, so the
// caller can raise or quarantine them.
//
// The JSON tokens (strings, numbers, skipped values, objects and arrays, and their
// errors) are scanned by json_lex.hpp's Lexer; this header holds the trace's
// structure: the states of the top level, the fields of an event, the columns.
//
// This header knows nothing of Python; the bindings live in csrc/bindings/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "json_lex.hpp"

namespace pau::kineto {

// Why a kept event was set aside.
enum class Invalid : int32_t {
    missing_ts = 1,
    missing_dur = 2,
    bad_ts = 3,        // not a number, or out of the int64 nanosecond range
    bad_dur = 4,
    negative_dur = 5,
};

inline const char* invalid_reason(Invalid r) {
    switch (r) {
        case Invalid::missing_ts: return "missing \"ts\"";
        case Invalid::missing_dur: return "missing \"dur\"";
        case Invalid::bad_ts: return "\"ts\" is not a number of microseconds within the int64 nanosecond range";
        case Invalid::bad_dur: return "\"dur\" is not a number of microseconds within the int64 nanosecond range";
        case Invalid::negative_dur: return "negative \"dur\"";
    }
    return "invalid";
}

// Interned strings (categories and names). Views point into a deque, whose
// elements never move, so the map can be keyed by string_view without a copy
// per lookup.
class StringTable {
  public:
    int32_t intern(std::string_view s) {
        auto it = index_.find(s);
        if (it != index_.end()) return it->second;
        store_.emplace_back(s);
        const int32_t id = static_cast<int32_t>(store_.size() - 1);
        index_.emplace(std::string_view(store_.back()), id);
        return id;
    }
    const std::deque<std::string>& strings() const { return store_; }
    size_t size() const { return store_.size(); }

  private:
    std::deque<std::string> store_;
    std::unordered_map<std::string_view, int32_t> index_;
};

// One row per kept event, columns in file order.
struct Rows {
    std::vector<int64_t> ts_ns;        // "ts" as written (relative to baseTimeNanoseconds if any)
    std::vector<int64_t> dur_ns;
    std::vector<int32_t> cat;          // StringTable ids
    std::vector<int32_t> name;
    std::vector<int64_t> device;       // args.device, else an integer pid, else -1
    std::vector<int64_t> stream;       // args.stream as an integer, else -1
    std::vector<int64_t> correlation;  // args.correlation, else -1
    std::vector<int64_t> bytes;        // args.bytes, else -1
    std::vector<int64_t> pid;          // integer pid, else -1
    std::vector<uint8_t> is_device;    // 1 when the category is a device category
    std::vector<int64_t> offset;       // byte offset of the event in the decompressed stream (for errors
                                       // found after parsing: a negative time, a step number beyond int64)
};

struct SetAside {
    std::vector<int64_t> offset;  // byte offset of the event in the decompressed stream
    std::vector<int64_t> line;    // 1-based line of that offset
    std::vector<int32_t> reason;  // Invalid
    std::vector<int32_t> cat;
    std::vector<int32_t> name;
};

// What the trace says about itself, beside the events.
struct Meta {
    int32_t format = 0;  // 0 unknown, 1 object with traceEvents, 2 top-level array
    bool has_events_key = false;
    bool has_distributed_info = false;
    bool has_rank = false;
    int64_t rank = -1;
    bool has_world_size = false;
    int64_t world_size = -1;
    std::string backend;
    bool has_base_time = false;
    int64_t base_time_ns = 0;
    std::string display_time_unit;
    std::vector<int64_t> device_ids;      // deviceProperties[i].id
    std::vector<std::string> device_names;
    std::vector<int64_t> label_pids;      // process_labels / process_name metadata events
    std::vector<std::string> labels;
    std::vector<std::string> process_names;
    int64_t elements = 0;                 // elements of the events array
    int64_t complete_events = 0;          // "ph": "X"
    std::vector<int64_t> cat_counts;      // complete events per StringTable id (categories only)
    bool ts_fraction_syntax = false;      // some "ts" literal has a fraction or exponent
    bool ts_missing = false;              // some element has no "ts"
    bool sub_us = false;                  // some kept ts/dur is not a whole microsecond
    bool sub_ns = false;                  // some kept ts/dur had non-zero digits below the nanosecond
};

class Parser {
  public:
    // `device_categories`: the trace categories ("kernel", "gpu_memcpy"...) whose
    // complete events are device activity.
    explicit Parser(const std::vector<std::string>& device_categories) {
        for (const auto& c : device_categories) device_cats_.push_back(strings_.intern(c));
        std::sort(device_cats_.begin(), device_cats_.end());
        device_cat_flag_.assign(strings_.size(), 0);
        for (int32_t c : device_cats_) device_cat_flag_[static_cast<size_t>(c)] = 1;
    }

    // Feed the next chunk of the decompressed stream. Returns false once the
    // input is known to be malformed (see error_message()); later feeds are
    // ignored.
    bool feed(const char* data, size_t n) {
        if (failed_) return false;
        size_t off = 0;  // bytes of `data` before the in-place window
        if (!tail_.empty()) {
            // A unit straddles the previous chunk's end: complete it in tail_,
            // appending only as much of `data` as it needs (doubling), then go
            // on in place. Bytes appended beyond it are parsed again in place.
            const size_t old = tail_.size();
            size_t grow = std::max<size_t>(old, 4096);
            for (;;) {
                const size_t take = std::min(n - off, grow);
                tail_.append(data + off, take);
                off += take;
                window(tail_.data(), tail_.size());
                run();
                if (failed_) return false;
                if (pos_ >= old) break;
                if (off == n) {
                    keep_tail();
                    return true;
                }
                grow *= 2;
            }
            off = pos_ - old;
            discard_consumed();
            tail_.clear();
        }
        // No copy: parse the caller's bytes where they are; keep the unfinished tail.
        window(data + off, n - off);
        run();
        if (failed_) return false;
        keep_tail();
        return true;
    }

    // The stream ended. Returns false when it ended inside the JSON document
    // (a truncated file) or held no document at all.
    bool finish() {
        if (failed_) return false;
        run();
        if (failed_) return false;
        skip_ws_at_pos();
        if (state_ == State::start) return fail(pos_, "the file is empty (no JSON document)");
        if (state_ != State::done)
            return fail(win_len_, std::string("unexpected end of input ") + where() +
                                         ": the file is truncated (or its writer was interrupted)");
        return true;
    }

    bool failed() const { return failed_; }
    const std::string& error_message() const { return error_; }
    int64_t error_offset() const { return error_offset_; }
    int64_t error_line() const { return error_line_; }
    int64_t bytes_seen() const { return base_offset_ + static_cast<int64_t>(win_len_); }

    Rows& rows() { return rows_; }
    SetAside& set_aside() { return aside_; }
    Meta& meta() {
        meta_.cat_counts.resize(strings_.size(), 0);
        return meta_;
    }
    const StringTable& strings() const { return strings_; }

    // Positions of the device rows ordered by (device, ts); ties keep file order.
    std::vector<int64_t> device_order() const {
        std::vector<int64_t> idx;
        const size_t n = rows_.ts_ns.size();
        for (size_t i = 0; i < n; ++i)
            if (rows_.is_device[i]) idx.push_back(static_cast<int64_t>(i));
        auto less = [&](int64_t a, int64_t b) {
            if (rows_.device[a] != rows_.device[b]) return rows_.device[a] < rows_.device[b];
            return rows_.ts_ns[a] < rows_.ts_ns[b];
        };
        if (!std::is_sorted(idx.begin(), idx.end(), less)) std::stable_sort(idx.begin(), idx.end(), less);
        return idx;
    }

  private:
    enum class State { start, obj_key, obj_after, arr_item, arr_after, done };

    using Step = json::Step;
    using Cur = json::Cur;

    // ---------------------------------------------------------------- driver

    void run() {
        while (!failed_) {
            Step s = step();
            if (s == Step::error && !failed_) fail_at(lex_.error_at(), lex_.error());  // the lexer's
            if (s != Step::ok) break;
        }
    }

    // One unit at pos_: the state's next byte, or a member or an event.
    Step step() {
        skip_ws_at_pos();
        if (pos_ >= win_len_) return Step::more;
        const char c = win_[pos_];
        switch (state_) {
            case State::start: return document_start(c);
            case State::obj_key:
                if (c == '}' && first_) return to(State::done);
                return top_member();
            case State::obj_after: return after_member(c);
            case State::arr_item:
                if (c == ']') {
                    if (!first_) {
                        fail(pos_, "malformed JSON: ']' after ',' (a trailing comma) in the events array");
                        return Step::error;
                    }
                    end_array();
                    ++pos_;
                    return Step::ok;
                }
                return event();
            case State::arr_after: return after_event(c);
            case State::done:
                fail(pos_, std::string("malformed JSON: data after the end of the document: ") + json::describe(c));
                return Step::error;
        }
        return Step::error;
    }

    // Consume the byte at pos_ and go to state s.
    Step to(State s) {
        state_ = s;
        ++pos_;
        return Step::ok;
    }

    // The document's first byte: '{' (a trace object) or '[' (a bare array of
    // events), after a UTF-8 byte order mark if there is one.
    Step document_start(char c) {
        if (static_cast<unsigned char>(c) == 0xEF && base_offset_ + static_cast<int64_t>(pos_) == 0) {
            if (win_len_ - pos_ < 3) return Step::more;
            if (static_cast<unsigned char>(win_[pos_ + 1]) == 0xBB &&
                static_cast<unsigned char>(win_[pos_ + 2]) == 0xBF) {
                pos_ += 3;
                return Step::ok;
            }
        }
        if (c == '{') {
            meta_.format = 1;
            first_ = true;
            return to(State::obj_key);
        }
        if (c == '[') {
            meta_.format = 2;
            in_top_array_ = true;
            first_ = true;
            return to(State::arr_item);
        }
        fail(pos_, std::string("not a Kineto trace: a trace is a JSON object with \"traceEvents\" or a JSON "
                               "array of events, but the file starts with ") + json::describe(c));
        return Step::error;
    }

    // After a top-level member: ',' and the next key, or '}' and the end.
    Step after_member(char c) {
        if (c == ',') {
            first_ = false;
            return to(State::obj_key);
        }
        if (c == '}') return to(State::done);
        fail(pos_, std::string("malformed JSON: expected ',' or '}' after a top-level member, found ") +
                       json::describe(c));
        return Step::error;
    }

    // After an event: ',' and the next event, or ']' and the end of the array.
    Step after_event(char c) {
        if (c == ',') {
            first_ = false;
            return to(State::arr_item);
        }
        if (c == ']') {
            end_array();
            ++pos_;
            return Step::ok;
        }
        fail(pos_, std::string("malformed JSON: expected ',' or ']' after an event, found ") + json::describe(c));
        return Step::error;
    }

    void end_array() {
        state_ = in_top_array_ ? State::done : State::obj_after;
        in_top_array_ = false;
    }

    // One top-level member "key": value. Nothing is consumed unless all of it is
    // buffered (except traceEvents, where only the key and '[' are consumed).
    Step top_member() {
        Cur c{win_ + pos_, win_ + win_len_};
        std::string_view key;
        Step s = lex_.string(c, &key);
        if (s != Step::ok) return s;
        s = lex_.expect(c, ':', "':' after a key");
        if (s != Step::ok) return s;
        if (json::equals(key, "traceEvents")) {
            json::skip_ws(c);
            if (c.p >= c.end) return Step::more;
            if (*c.p != '[') {
                fail_at(c.p, std::string("not a Kineto trace: \"traceEvents\" is not an array (found ") + json::describe(*c.p) + ")");
                return Step::error;
            }
            ++c.p;
            meta_.has_events_key = true;
            pos_ = static_cast<size_t>(c.p - win_);
            state_ = State::arr_item;
            first_ = true;
            return Step::ok;
        }
        json::skip_ws(c);
        const char* vstart = c.p;
        s = lex_.value(c);
        if (s != Step::ok) return s;
        std::string_view v(vstart, static_cast<size_t>(c.p - vstart));
        s = top_value(key, v);
        if (s != Step::ok) return s;
        pos_ = static_cast<size_t>(c.p - win_);
        state_ = State::obj_after;
        return Step::ok;
    }

    // The top-level values pau reads; `v` is one complete JSON value.
    Step top_value(std::string_view key, std::string_view v) {
        Cur c{v.data(), v.data() + v.size()};
        if (json::equals(key, "distributedInfo")) {
            if (v.empty() || v[0] != '{') return Step::ok;  // not an object: no rank
            meta_.has_distributed_info = true;
            return distributed_info(c);
        }
        if (json::equals(key, "deviceProperties")) {
            if (v.empty() || v[0] != '[') return Step::ok;
            return device_properties(c);
        }
        if (json::equals(key, "baseTimeNanoseconds")) {
            int64_t x;
            if (!v.empty() && json::integer(v, &x)) {
                meta_.has_base_time = true;
                meta_.base_time_ns = x;
            }
            return Step::ok;
        }
        if (json::equals(key, "displayTimeUnit")) return lex_.string_or_skip(c, &meta_.display_time_unit);
        return Step::ok;
    }

    // distributedInfo: the rank, the world size and the backend.
    Step distributed_info(Cur& c) {
        return lex_.object(c, [&](std::string_view k, Cur& vc) -> Step {
            if (json::equals(k, "rank") || json::equals(k, "world_size")) {
                std::string_view num;
                Step s = lex_.number_or_skip(vc, &num);
                if (s != Step::ok) return s;
                int64_t x;
                if (!num.empty() && json::integer(num, &x)) {
                    if (json::equals(k, "rank")) {
                        meta_.has_rank = true;
                        meta_.rank = x;
                    } else {
                        meta_.has_world_size = true;
                        meta_.world_size = x;
                    }
                }
                return Step::ok;
            }
            if (json::equals(k, "backend")) return lex_.string_or_skip(vc, &meta_.backend);
            return lex_.value(vc);
        });
    }

    // deviceProperties: the id and name of each device object.
    Step device_properties(Cur& c) {
        return lex_.array(c, [&](Cur& ec) -> Step {
            json::skip_ws(ec);
            if (ec.p < ec.end && *ec.p != '{') return lex_.value(ec);
            int64_t id = -1;
            std::string name;
            Step s = lex_.object(ec, [&](std::string_view k, Cur& vc) -> Step {
                if (json::equals(k, "id")) {
                    std::string_view num;
                    Step s2 = lex_.number_or_skip(vc, &num);
                    if (s2 == Step::ok && !num.empty()) json::integer(num, &id);
                    return s2;
                }
                if (json::equals(k, "name")) return lex_.string_or_skip(vc, &name);
                return lex_.value(vc);
            });
            if (s == Step::ok) {
                meta_.device_ids.push_back(id);
                meta_.device_names.push_back(std::move(name));
            }
            return s;
        });
    }

    // ---------------------------------------------------------------- events

    struct Event {
        std::string_view ph, cat, name, ts, dur;
        bool has_ts = false, has_dur = false, ts_is_number = true, dur_is_number = true;
        bool pid_int = false;
        int64_t pid = -1;
        bool has_device = false, has_stream = false, has_corr = false, has_bytes = false;
        int64_t device = -1, stream = -1, corr = -1, bytes = -1;
        std::string arg_name, arg_labels;  // metadata events
        bool has_arg_name = false, has_arg_labels = false;
    };

    Step event() {
        const char* start = win_ + pos_;
        Cur c{start, win_ + win_len_};
        if (*c.p != '{') {
            // Not an event object: skip it, but it must still be valid JSON.
            Step s = lex_.value(c);
            if (s != Step::ok) return s;
            ++meta_.elements;
            pos_ = static_cast<size_t>(c.p - win_);
            state_ = State::arr_after;
            return Step::ok;
        }
        Event e;
        lex_.reset_scratch();
        Step s = lex_.object(c, [&](std::string_view k, Cur& vc) -> Step { return event_member(k, vc, e); });
        if (s != Step::ok) return s;
        ++meta_.elements;
        commit(e, base_offset_ + static_cast<int64_t>(start - win_));
        pos_ = static_cast<size_t>(c.p - win_);
        state_ = State::arr_after;
        return Step::ok;
    }

    Step event_member(std::string_view k, Cur& c, Event& e) {
        json::skip_ws(c);
        if (c.p >= c.end) return Step::more;
        switch (k.size()) {
            case 2:
                if (json::equals(k, "ph")) return lex_.string_view_or_skip(c, &e.ph);
                if (json::equals(k, "ts")) return time_field(c, &e.ts, &e.has_ts, &e.ts_is_number, true);
                break;
            case 3:
                if (json::equals(k, "cat")) return lex_.string_view_or_skip(c, &e.cat);
                if (json::equals(k, "dur")) return time_field(c, &e.dur, &e.has_dur, &e.dur_is_number, false);
                if (json::equals(k, "pid")) {
                    std::string_view num;
                    if (*c.p == '"') return lex_.value(c);
                    Step s = lex_.number_or_skip(c, &num);
                    if (s == Step::ok && !num.empty()) e.pid_int = json::integer(num, &e.pid);
                    return s;
                }
                break;
            case 4:
                if (json::equals(k, "name")) return lex_.string_view_or_skip(c, &e.name);
                if (json::equals(k, "args")) {
                    if (*c.p != '{') return lex_.value(c);
                    return lex_.object(c, [&](std::string_view ak, Cur& vc) -> Step { return arg_member(ak, vc, e); });
                }
                break;
            default:
                break;
        }
        return lex_.value(c);
    }

    Step arg_member(std::string_view k, Cur& c, Event& e) {
        json::skip_ws(c);
        if (c.p >= c.end) return Step::more;
        bool* has = nullptr;
        int64_t* out = nullptr;
        if (json::equals(k, "device")) {
            has = &e.has_device;
            out = &e.device;
        } else if (json::equals(k, "stream")) {
            has = &e.has_stream;
            out = &e.stream;
        } else if (json::equals(k, "correlation")) {
            has = &e.has_corr;
            out = &e.corr;
        } else if (json::equals(k, "bytes")) {
            has = &e.has_bytes;
            out = &e.bytes;
        } else if (json::equals(k, "name")) {
            e.has_arg_name = true;
            return lex_.string_or_skip(c, &e.arg_name);
        } else if (json::equals(k, "labels")) {
            e.has_arg_labels = true;
            return lex_.string_or_skip(c, &e.arg_labels);
        } else {
            return lex_.value(c);
        }
        if (*c.p == '"') {  // a number written as a string ("stream": "7"): read it if it is one
            std::string s;
            Step st = lex_.string_or_skip(c, &s);
            if (st != Step::ok) return st;
            size_t a = 0, b = s.size();
            while (a < b && json::is_ws(s[a])) ++a;
            while (b > a && json::is_ws(s[b - 1])) --b;
            int64_t x;
            if (a < b && json::integer(std::string_view(s).substr(a, b - a), &x)) {
                *has = true;
                *out = x;
            }
            return Step::ok;
        }
        std::string_view num;
        Step s = lex_.number_or_skip(c, &num);
        if (s != Step::ok || num.empty()) return s;
        int64_t x;
        if (json::integer(num, &x)) {
            *has = true;
            *out = x;
        } else {
            // A float such as 7.0: its integer part, like Python's int().
            bool inexact;
            if (json::decimal_to_int(num, 0, &x, &inexact)) {
                *has = true;
                *out = x;
            }
        }
        return Step::ok;
    }

    Step time_field(Cur& c, std::string_view* out, bool* has, bool* is_number, bool is_ts) {
        *has = true;
        if (*c.p == '"' || *c.p == '{' || *c.p == '[' || *c.p == 't' || *c.p == 'f' || *c.p == 'n') {
            *is_number = false;
            if (is_ts) meta_.ts_fraction_syntax = true;  // not an integer column for pandas-based tools
            return lex_.value(c);
        }
        Step s = lex_.number(c, out);
        if (s == Step::ok && is_ts) {
            for (char ch : *out)
                if (ch == '.' || ch == 'e' || ch == 'E') {
                    meta_.ts_fraction_syntax = true;
                    break;
                }
        }
        return s;
    }

    static bool contains(std::string_view s, std::string_view sub) { return s.find(sub) != std::string_view::npos; }

    void commit(const Event& e, int64_t offset) {
        if (!e.has_ts) meta_.ts_missing = true;
        if (json::equals(e.ph, "M")) {
            const bool labels = json::equals(e.name, "process_labels"), name = json::equals(e.name, "process_name");
            if (e.pid_int && (labels || name)) {
                meta_.label_pids.push_back(e.pid);
                meta_.labels.push_back(labels && e.has_arg_labels ? e.arg_labels : std::string());
                meta_.process_names.push_back(name && e.has_arg_name ? e.arg_name : std::string());
            }
            return;
        }
        if (!json::equals(e.ph, "X")) return;
        ++meta_.complete_events;
        const int32_t cat = strings_.intern(e.cat);
        if (static_cast<size_t>(cat) >= meta_.cat_counts.size()) meta_.cat_counts.resize(strings_.size(), 0);
        ++meta_.cat_counts[static_cast<size_t>(cat)];
        const bool device = static_cast<size_t>(cat) < device_cat_flag_.size() && device_cat_flag_[static_cast<size_t>(cat)];
        // DataLoader spans (enumerate(DataLoader)#...__next__, torch/utils/data/dataloader.py
        // frames) are kept for the idle split: the host was waiting for data.
        const bool keep = device || e.has_corr || e.has_stream || contains(e.name, "ProfilerStep") ||
                          json::equals(e.cat, "Trace") || contains(e.name, "DataLoader") ||
                          contains(e.name, "dataloader");
        if (!keep) return;
        const int32_t name = strings_.intern(e.name);
        Invalid bad{};
        int64_t ts = 0, dur = 0;
        bool ts_inexact = false, dur_inexact = false;
        if (!e.has_ts) bad = Invalid::missing_ts;
        else if (!e.ts_is_number || !json::decimal_to_int(e.ts, 3, &ts, &ts_inexact)) bad = Invalid::bad_ts;
        else if (!e.has_dur) bad = Invalid::missing_dur;
        else if (!e.dur_is_number || !json::decimal_to_int(e.dur, 3, &dur, &dur_inexact)) bad = Invalid::bad_dur;
        else if (dur < 0) bad = Invalid::negative_dur;
        if (bad != Invalid{}) {
            aside_.offset.push_back(offset);
            aside_.line.push_back(line_of(offset));
            aside_.reason.push_back(static_cast<int32_t>(bad));
            aside_.cat.push_back(cat);
            aside_.name.push_back(name);
            return;
        }
        meta_.sub_us |= (ts % 1000) != 0 || (dur % 1000) != 0 || ts_inexact || dur_inexact;
        meta_.sub_ns |= ts_inexact || dur_inexact;
        rows_.ts_ns.push_back(ts);
        rows_.dur_ns.push_back(dur);
        rows_.cat.push_back(cat);
        rows_.name.push_back(name);
        rows_.device.push_back(e.has_device ? e.device : (e.pid_int ? e.pid : -1));
        rows_.stream.push_back(e.has_stream ? e.stream : -1);
        rows_.correlation.push_back(e.has_corr ? e.corr : -1);
        rows_.bytes.push_back(e.has_bytes ? e.bytes : -1);
        rows_.pid.push_back(e.pid_int ? e.pid : -1);
        rows_.is_device.push_back(device ? 1 : 0);
        rows_.offset.push_back(offset);
    }

    // ---------------------------------------------------------------- buffer and errors

    void skip_ws_at_pos() {
        while (pos_ < win_len_ && json::is_ws(win_[pos_])) ++pos_;
    }

    // The bytes being parsed: the caller's chunk (in place) or tail_.
    void window(const char* p, size_t n) {
        win_ = p;
        win_len_ = n;
    }

    // Move past the consumed prefix of the window, counting its lines first so
    // that errors can name a line.
    void discard_consumed() {
        lines_before_ += count_lines(win_, win_ + pos_);
        base_offset_ += static_cast<int64_t>(pos_);
        win_ += pos_;
        win_len_ -= pos_;
        pos_ = 0;
        line_cursor_ = base_offset_;
        line_cursor_lines_ = lines_before_;
    }

    // After a feed: keep the unconsumed bytes (at most one unfinished unit) in
    // tail_, since the caller's chunk is gone after it returns.
    void keep_tail() {
        const char* from = win_ + pos_;
        const size_t n = win_len_ - pos_;
        const bool in_tail = !tail_.empty() && win_ >= tail_.data() && win_ <= tail_.data() + tail_.size();
        discard_consumed();
        if (in_tail) tail_.erase(0, static_cast<size_t>(from - tail_.data()));
        else tail_.assign(from, n);
        window(tail_.data(), tail_.size());
    }

    // 1-based line of an absolute offset inside the buffer. Offsets asked for only
    // grow (events are met in order), so counting resumes where it stopped.
    int64_t line_of(int64_t offset) {
        if (offset < line_cursor_) {
            line_cursor_ = base_offset_;
            line_cursor_lines_ = lines_before_;
        }
        const char* a = win_ + (line_cursor_ - base_offset_);
        const char* b = win_ + (offset - base_offset_);
        line_cursor_lines_ += count_lines(a, b);
        line_cursor_ = offset;
        return line_cursor_lines_ + 1;
    }

    // Newlines in [a, b): memchr hops from one to the next, fast both for
    // single-line traces and for pretty-printed ones.
    static int64_t count_lines(const char* a, const char* b) {
        int64_t n = 0;
        while (a < b) {
            const void* hit = std::memchr(a, '\n', static_cast<size_t>(b - a));
            if (!hit) break;
            ++n;
            a = static_cast<const char*>(hit) + 1;
        }
        return n;
    }

    std::string where() const {
        switch (state_) {
            case State::start: return "before the document";
            case State::obj_key:
            case State::obj_after: return "in the top-level object";
            case State::arr_item:
            case State::arr_after:
                return "inside the events array after " + std::to_string(meta_.elements) + " events";
            case State::done: return "after the document";
        }
        return "";
    }

    bool fail(size_t buffer_pos, const std::string& msg) {
        failed_ = true;
        error_offset_ = base_offset_ + static_cast<int64_t>(buffer_pos);
        error_line_ = line_of(error_offset_);
        error_ = msg;
        return false;
    }

    void fail_at(const char* p, const std::string& msg) { fail(static_cast<size_t>(p - win_), msg); }

    std::string tail_;           // an unfinished unit carried over to the next chunk
    const char* win_ = nullptr;  // the bytes being parsed: the caller's chunk or tail_
    size_t win_len_ = 0;
    size_t pos_ = 0;             // consumed up to here in the window
    int64_t base_offset_ = 0;    // absolute offset of win_[0]
    int64_t lines_before_ = 0;   // newlines before win_[0]
    int64_t line_cursor_ = 0;
    int64_t line_cursor_lines_ = 0;
    State state_ = State::start;
    bool first_ = true;
    bool in_top_array_ = false;
    bool failed_ = false;
    std::string error_;
    int64_t error_offset_ = -1;
    int64_t error_line_ = -1;

    StringTable strings_;
    std::vector<int32_t> device_cats_;
    std::vector<uint8_t> device_cat_flag_;
    json::Lexer lex_;  // the JSON tokens: depth, unescaped strings, the error of a scan
    Rows rows_;
    SetAside aside_;
    Meta meta_;
};

}  // namespace pau::kineto
