// pau native JSON lexer: the tokens of a JSON text scanned in place, for streaming
// readers that never build a tree (the Kineto reader, kineto.hpp).
//
// Interface. A Cur is a cursor over the bytes buffered so far, [p, end). Every scan
// returns a Step:
//   ok     the token or value was consumed (the cursor moved past it);
//   more   the buffer ended first: nothing is decided, and the caller retries the
//          whole unit from its start once more bytes are there;
//   error  the text is not JSON: error_at() points at the offending byte and error()
//          says what was expected (the owner turns the pointer into an offset/line).
// value() skips any value, checking its grammar; object() and array() hand each
// member or element to a callback, which consumes it with these same scans (or skips
// it with value()); string() views a string's bytes, unescaped into scratch storage
// only when it holds an escape (the views live until reset_scratch()); number() views
// a number's text, which integer() and decimal_to_int() convert exactly. Nesting is
// limited to kMaxDepth levels. A number that reaches the end of the buffer is `more`:
// its digits may go on in the next chunk.
//
// This header knows nothing of Python.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

namespace pau::json {

enum class Step { ok, more, error };

// A cursor over the buffered bytes; `more` means the buffer ended first.
struct Cur {
    const char* p;
    const char* end;
};

inline bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The first '"' or '\\' in [p, end), or end. Strings dominate a trace (keys,
// kernel names), so this reads 8 bytes per step: a byte equal to the pattern
// becomes zero after the xor, and (y - 0x01..) & ~y & 0x80.. flags zero bytes
// (exactly at the lowest one, which is the one used).
inline const char* find_quote_or_backslash(const char* p, const char* end) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && (defined(__GNUC__) || defined(__clang__))
    constexpr uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    constexpr uint64_t quotes = ones * '"', slashes = ones * '\\';
    while (end - p >= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        const uint64_t a = w ^ quotes, b = w ^ slashes;
        const uint64_t m = ((a - ones) & ~a & highs) | ((b - ones) & ~b & highs);
        if (m) return p + (__builtin_ctzll(m) >> 3);
        p += 8;
    }
#endif
    while (p < end && *p != '"' && *p != '\\') ++p;
    return p;
}

// Decimal JSON number text -> value * 10^scale as int64, rounded half away from
// zero. Exact: up to 19 significant digits are accumulated as an integer and the
// decimal point is applied by integer multiplication or division (never through
// a double). Returns false when the text is not a number or the result does not
// fit in int64. `inexact` is set when non-zero digits below the result's unit
// were rounded away.
inline bool decimal_to_int(std::string_view s, int scale, int64_t* out, bool* inexact) {
    size_t i = 0;
    const size_t n = s.size();
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    uint64_t mant = 0;     // the first (up to) 19 significant digits
    int kept = 0;
    int64_t exp10 = 0;     // value = (mant + rest) * 10^exp10, 0 <= rest < 1
    int first = -1;        // the first digit dropped beyond the 19 kept (-1: none)
    bool rest = false;     // a non-zero digit was dropped after that one
    bool any = false;
    auto take = [&](int d, bool fraction) {
        any = true;
        if (kept == 0 && d == 0) {  // leading zero: not significant
            if (fraction) --exp10;
            return;
        }
        if (kept < 19) {
            mant = mant * 10 + static_cast<uint64_t>(d);
            ++kept;
            if (fraction) --exp10;
        } else {
            if (first < 0) first = d;
            else rest |= d != 0;
            if (!fraction) ++exp10;
        }
    };
    while (i < n && s[i] >= '0' && s[i] <= '9') take(s[i++] - '0', false);
    if (i < n && s[i] == '.') {
        ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9') take(s[i++] - '0', true);
    }
    if (!any) return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        bool eneg = false;
        if (i < n && (s[i] == '-' || s[i] == '+')) eneg = s[i++] == '-';
        int64_t e = 0;
        bool edigits = false;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; ++i) {
            edigits = true;
            if (e < 100000) e = e * 10 + (s[i] - '0');
        }
        if (!edigits) return false;
        exp10 += eneg ? -e : e;
    }
    if (i != n) return false;
    *inexact = false;
    const int64_t e = exp10 + scale;
    uint64_t v;
    if (mant == 0) {
        v = 0;
    } else if (e > 0 && first >= 0) {
        return false;  // 19 digits and more before the unit: beyond int64
    } else if (e >= 0) {
        // An integer in the result's unit, save dropped digits just below it
        // (e == 0): they round it.
        v = mant;
        for (int64_t k = 0; k < e; ++k) {
            if (v > std::numeric_limits<uint64_t>::max() / 10) return false;
            v *= 10;
        }
        if (first >= 5) ++v;
        *inexact = first > 0 || rest;
    } else if (-e > 19) {
        v = 0;  // mant < 10^19 <= 10^-e / 10: below half a unit
        *inexact = true;
    } else {
        uint64_t p = 1;
        for (int64_t k = 0; k < -e; ++k) p *= 10;
        v = mant / p;
        const uint64_t r = mant % p;
        // The dropped digits are below one unit of mant, so (r + them) >= p/2
        // exactly when r >= p/2 (p/2 is an integer: p is a power of ten >= 10).
        if (r >= p / 2) ++v;
        *inexact = r != 0 || first > 0 || rest;
    }
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    return true;
}

// Integer JSON number text (no fraction, no exponent) -> int64; false when it is not
// one or does not fit.
inline bool integer(std::string_view s, int64_t* out) {
    size_t i = 0;
    bool neg = false;
    if (i < s.size() && s[i] == '-') {
        neg = true;
        ++i;
    }
    if (i >= s.size()) return false;
    uint64_t v = 0;
    for (; i < s.size(); ++i) {
        if (s[i] < '0' || s[i] > '9') return false;
        if (v > (std::numeric_limits<uint64_t>::max() - 9) / 10) return false;
        v = v * 10 + static_cast<uint64_t>(s[i] - '0');
    }
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    return true;
}

// s == lit for a string literal: a length test, then a compare of a size known at
// compile time, which the compiler does inline (a key test per member of every event;
// std::string_view's == is left a call in a large translation unit).
template <size_t N>
inline __attribute__((always_inline)) bool equals(std::string_view s, const char (&lit)[N]) {
    return s.size() == N - 1 && std::memcmp(s.data(), lit, N - 1) == 0;
}

// A byte for an error message: itself when printable, else its hex code.
inline std::string describe(char c) {
    if (c >= 0x20 && c < 0x7f) return std::string("'") + c + "'";
    static const char* hex = "0123456789abcdef";
    const unsigned char u = static_cast<unsigned char>(c);
    return std::string("byte 0x") + hex[u >> 4] + hex[u & 15];
}

// Whitespace. Most calls find no whitespace at all ("a":1), or one space (", "): test
// that first, on a local copy of the cursor.
inline void skip_ws(Cur& c) {
    const char* p = c.p;
    const char* const end = c.end;
    if (p < end && static_cast<unsigned char>(*p) > ' ') return;
    while (p < end && is_ws(*p)) ++p;
    c.p = p;
}

// The scans that need state: the nesting depth, the scratch storage of unescaped
// strings, and the last error. One Lexer per stream; not thread-safe.
class Lexer {
  public:
    static constexpr int kMaxDepth = 256;

    // Where and why the last scan returned Step::error.
    const char* error_at() const { return error_at_; }
    const std::string& error() const { return error_; }

    // The strings unescaped so far may be overwritten from now on (call it when no
    // view of them is kept any longer: per event).
    void reset_scratch() { scratch_used_ = 0; }

    // Each returns ok (value consumed), more (the buffer ended first: the caller
    // retries the whole unit later) or error (error_at() and error() set).

    Step expect(Cur& c, char ch, const char* what) {
        if (c.p < c.end && *c.p == ch) {
            ++c.p;
            return Step::ok;
        }
        skip_ws(c);
        if (c.p >= c.end) return Step::more;
        if (*c.p != ch) {
            return fail(c.p, std::string("malformed JSON: expected ") + what + ", found " + describe(*c.p));
        }
        ++c.p;
        return Step::ok;
    }

    // A string; `out` views the raw bytes when there is no escape, else the
    // unescaped text in scratch storage that lives until the next event.
    Step string(Cur& c, std::string_view* out) {
        skip_ws(c);
        if (c.p >= c.end) return Step::more;
        if (*c.p != '"') {
            return fail(c.p, std::string("malformed JSON: expected a string, found ") + describe(*c.p));
        }
        const char* s = c.p + 1;
        const char* q = s;
        bool escaped = false;
        for (;;) {
            q = find_quote_or_backslash(q, c.end);
            if (q >= c.end) return Step::more;
            if (*q == '"') break;
            escaped = true;
            q += 2;  // the backslash and the character it escapes
            if (q > c.end) return Step::more;
        }
        c.p = q + 1;
        if (!escaped) {
            *out = std::string_view(s, static_cast<size_t>(q - s));
            return Step::ok;
        }
        return unescape(s, q, out);
    }

    Step string_view_or_skip(Cur& c, std::string_view* out) {
        skip_ws(c);
        if (c.p >= c.end) return Step::more;
        if (*c.p != '"') return value(c);
        return string(c, out);
    }

    Step string_or_skip(Cur& c, std::string* out) {
        std::string_view v;
        skip_ws(c);
        if (c.p >= c.end) return Step::more;
        if (*c.p != '"') return value(c);
        Step s = string(c, &v);
        if (s == Step::ok) out->assign(v.data(), v.size());
        return s;
    }

    // A JSON number (grammar checked); `out` views its text.
    Step number(Cur& c, std::string_view* out) {
        const char* s = c.p;
        const char* p = c.p;
        const char* const end = c.end;
        auto digit = [end](const char* q) { return q < end && static_cast<unsigned char>(*q - '0') <= 9; };
        if (p < c.end && *p == '-') ++p;
        if (p >= c.end) return Step::more;
        if (!digit(p)) {
            return fail(p, std::string("malformed JSON: expected a number, found ") + describe(*p));
        }
        if (*p == '0') ++p;
        else
            while (digit(p)) ++p;
        if (p < c.end && *p == '.') {
            ++p;
            if (p >= c.end) return Step::more;
            if (!digit(p)) {
                return fail(p, "malformed JSON: expected digits after '.'");
            }
            while (digit(p)) ++p;
        }
        if (p < c.end && (*p == 'e' || *p == 'E')) {
            ++p;
            if (p < c.end && (*p == '+' || *p == '-')) ++p;
            if (p >= c.end) return Step::more;
            if (!digit(p)) {
                return fail(p, "malformed JSON: expected digits in an exponent");
            }
            while (digit(p)) ++p;
        }
        // A number at the very end of the buffer may continue in the next chunk.
        if (p >= c.end) return Step::more;
        *out = std::string_view(s, static_cast<size_t>(p - s));
        c.p = p;
        return Step::ok;
    }

    Step number_or_skip(Cur& c, std::string_view* out) {
        skip_ws(c);
        if (c.p >= c.end) return Step::more;
        if (*c.p == '-' || (*c.p >= '0' && *c.p <= '9')) return number(c, out);
        *out = std::string_view();
        return value(c);
    }

    Step literal(Cur& c, const char* word) {
        const size_t n = std::strlen(word);
        for (size_t i = 0; i < n; ++i) {
            if (c.p + i >= c.end) return Step::more;
            if (c.p[i] != word[i]) {
                return fail(c.p, std::string("malformed JSON: unexpected ") + describe(*c.p));
            }
        }
        c.p += n;
        return Step::ok;
    }

    // Skip one value of any kind, checking its grammar.
    Step value(Cur& c) {
        skip_ws(c);
        if (c.p >= c.end) return Step::more;
        switch (*c.p) {
            case '{':
                return object(c, [&](std::string_view, Cur& vc) { return value(vc); });
            case '[':
                return array(c, [&](Cur& ec) { return value(ec); });
            case '"': {
                // Skip without unescaping: find the closing quote only.
                const char* q = c.p + 1;
                for (;;) {
                    q = find_quote_or_backslash(q, c.end);
                    if (q >= c.end) return Step::more;
                    if (*q == '"') break;
                    q += 2;
                    if (q > c.end) return Step::more;
                }
                c.p = q + 1;
                return Step::ok;
            }
            case 't': return literal(c, "true");
            case 'f': return literal(c, "false");
            case 'n': return literal(c, "null");
            default: {
                std::string_view num;
                return number(c, &num);
            }
        }
    }

    // An object; `member(key, cursor)` consumes each value.
    template <typename F>
    Step object(Cur& c, F&& member) {
        return container(c, '{', '}', "an object", [&](Cur& cc) {
            std::string_view key;
            Step s = string(cc, &key);
            if (s != Step::ok) return s;
            s = expect(cc, ':', "':' after a key");
            if (s != Step::ok) return s;
            return member(key, cc);
        });
    }

    // An array; `element(cursor)` consumes each element.
    template <typename F>
    Step array(Cur& c, F&& element) {
        return container(c, '[', ']', "an array", element);
    }

    // The frame both share: the brackets, the commas, the depth limit; `item`
    // consumes one member or element.
    template <typename F>
    Step container(Cur& c, char open, char close, const char* what, F&& item) {
        skip_ws(c);
        if (c.p >= c.end) return Step::more;
        if (*c.p != open) {
            return fail(c.p, std::string("malformed JSON: expected '") + open + "', found " + describe(*c.p));
        }
        if (++depth_ > kMaxDepth) return too_deep(c);
        ++c.p;
        skip_ws(c);
        if (c.p >= c.end) return leave(Step::more);
        if (*c.p == close) {
            ++c.p;
            return leave(Step::ok);
        }
        for (;;) {
            Step s = item(c);
            if (s != Step::ok) return leave(s);
            skip_ws(c);
            if (c.p >= c.end) return leave(Step::more);
            if (*c.p == ',') {
                ++c.p;
                continue;
            }
            if (*c.p == close) {
                ++c.p;
                return leave(Step::ok);
            }
            return leave(fail(c.p, std::string("malformed JSON: expected ',' or '") + close + "' in " + what + ", found " +
                             describe(*c.p)));
        }
    }

  private:
    Step fail(const char* p, std::string msg) {
        error_at_ = p;
        error_ = std::move(msg);
        return Step::error;
    }

    Step unescape(const char* s, const char* e, std::string_view* out) {
        if (scratch_.size() <= scratch_used_) scratch_.resize(scratch_used_ + 1);
        std::string& o = scratch_[scratch_used_++];
        o.clear();
        for (const char* p = s; p < e; ++p) {
            if (*p != '\\') {
                o.push_back(*p);
                continue;
            }
            ++p;
            switch (*p) {
                case '"': o.push_back('"'); break;
                case '\\': o.push_back('\\'); break;
                case '/': o.push_back('/'); break;
                case 'b': o.push_back('\b'); break;
                case 'f': o.push_back('\f'); break;
                case 'n': o.push_back('\n'); break;
                case 'r': o.push_back('\r'); break;
                case 't': o.push_back('\t'); break;
                case 'u': {
                    if (e - p < 5) {
                        return fail(p, "malformed JSON: incomplete \\u escape");
                    }
                    uint32_t cp = 0;
                    if (!hex4(p + 1, &cp)) {
                        return fail(p, "malformed JSON: bad \\u escape");
                    }
                    p += 4;
                    if (cp >= 0xD800 && cp < 0xDC00 && e - p >= 7 && p[1] == '\\' && p[2] == 'u') {
                        uint32_t lo = 0;
                        if (hex4(p + 3, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                            p += 6;
                        }
                    }
                    utf8(cp, o);
                    break;
                }
                default:
                    return fail(p, std::string("malformed JSON: bad escape \\") + describe(*p));
            }
        }
        *out = std::string_view(o);
        return Step::ok;
    }

    static bool hex4(const char* p, uint32_t* out) {
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) {
            const char ch = p[i];
            v <<= 4;
            if (ch >= '0' && ch <= '9') v |= static_cast<uint32_t>(ch - '0');
            else if (ch >= 'a' && ch <= 'f') v |= static_cast<uint32_t>(ch - 'a' + 10);
            else if (ch >= 'A' && ch <= 'F') v |= static_cast<uint32_t>(ch - 'A' + 10);
            else return false;
        }
        *out = v;
        return true;
    }

    static void utf8(uint32_t cp, std::string& o) {
        if (cp < 0x80) {
            o.push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
            o.push_back(static_cast<char>(0xC0 | (cp >> 6)));
            o.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
            o.push_back(static_cast<char>(0xE0 | (cp >> 12)));
            o.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            o.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else {
            o.push_back(static_cast<char>(0xF0 | (cp >> 18)));
            o.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
            o.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            o.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        }
    }

    Step leave(Step s) {
        --depth_;
        return s;
    }

    Step too_deep(Cur& c) {
        --depth_;
        return fail(c.p, "JSON nested more than 256 levels deep");
    }

    int depth_ = 0;
    std::deque<std::string> scratch_;  // a deque: growing it never moves a string that a view points into
    size_t scratch_used_ = 0;
    const char* error_at_ = nullptr;
    std::string error_;
};

}  // namespace pau::json
