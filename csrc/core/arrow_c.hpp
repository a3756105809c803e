// pau native interval core: reading record batches through the Arrow C data interface.
//
// A record batch exported with `__arrow_c_array__` is a struct array: an
// ArrowSchema (format "+s", one child per column, each with its name and format)
// and an ArrowArray (one child per column, with its buffers). The structs are the
// interface's own (https://arrow.apache.org/docs/format/CDataInterface.html); pau
// reads them without linking Arrow. Only the layouts pau reads zero-copy are
// understood here; for anything else the readers say no (nullptr / false) and the
// caller takes its general path, which converts or names the problem.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
struct ArrowSchema {
    const char* format;
    const char* name;
    const char* metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema** children;
    struct ArrowSchema* dictionary;
    void (*release)(struct ArrowSchema*);
    void* private_data;
};

struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void** buffers;
    struct ArrowArray** children;
    struct ArrowArray* dictionary;
    void (*release)(struct ArrowArray*);
    void* private_data;
};
#endif
}

namespace pau::core::arrow {

// One column of an exported batch.
struct Column {
    const ArrowSchema* schema = nullptr;
    const ArrowArray* array = nullptr;

    explicit operator bool() const { return array != nullptr; }
    int64_t length() const { return array->length; }
    bool has_nulls() const { return array->null_count != 0 && array->buffers[0] != nullptr; }
    bool valid(int64_t i) const {
        if (!has_nulls()) return true;
        const int64_t k = array->offset + i;
        return (static_cast<const uint8_t*>(array->buffers[0])[k >> 3] >> (k & 7)) & 1;
    }
    std::string format() const { return schema->format; }

    // int64, or a timestamp in ns (any time zone): the values, else nullptr.
    const int64_t* int64_ns() const {
        const std::string f = format();
        if (f != "l" && f.rfind("tsn:", 0) != 0) return nullptr;
        return static_cast<const int64_t*>(array->buffers[1]) + array->offset;
    }
    const int32_t* int32() const {
        if (format() != "i") return nullptr;
        return static_cast<const int32_t*>(array->buffers[1]) + array->offset;
    }
    // A utf8 string column (int32 offsets): i's bytes, or false for another layout.
    bool is_utf8() const { return format() == "u"; }
    const char* utf8(int64_t i, int32_t& len) const {
        const auto* off = static_cast<const int32_t*>(array->buffers[1]) + array->offset;
        len = off[i + 1] - off[i];
        return static_cast<const char*>(array->buffers[2]) + off[i];
    }
};

// The columns of an exported record batch, by name.
struct Batch {
    const ArrowSchema* schema = nullptr;
    const ArrowArray* array = nullptr;

    // A struct array with no offset of its own (as pyarrow exports a batch).
    bool ok() const {
        return schema && array && std::strcmp(schema->format, "+s") == 0 && array->offset == 0 &&
               schema->n_children == array->n_children;
    }
    int64_t rows() const { return array->length; }
    Column column(const char* name) const {
        for (int64_t i = 0; i < schema->n_children; ++i)
            if (schema->children[i]->name && std::strcmp(schema->children[i]->name, name) == 0)
                return Column{schema->children[i], array->children[i]};
        return Column{};
    }
};

// Per-row readers of one column, with its buffers and offset looked up once (a
// Column goes through the ArrowArray on every call). An absent column (a Column
// that is false) reads as absent, not as an error.

// An integer column's values and validity bitmap, with the array's offset applied.
struct Ints {
    const void* values = nullptr;  // nullptr: the column is absent
    const uint8_t* validity = nullptr;
    int64_t bit0 = 0;
    bool wide = true;  // int64 (else int32)

    // int64 or timestamp[ns] (`times`), or int32/int64: false for another type.
    bool read(const Column& c, bool times) {
        if (!c) return true;
        const std::string f = c.format();
        if (f == "l" || (times && f.rfind("tsn:", 0) == 0)) wide = true;
        else if (!times && f == "i") wide = false;
        else return false;
        values = static_cast<const char*>(c.array->buffers[1]) + c.array->offset * (wide ? 8 : 4);
        validity = c.has_nulls() ? static_cast<const uint8_t*>(c.array->buffers[0]) : nullptr;
        bit0 = c.array->offset;
        return true;
    }
    bool valid(int64_t i) const {
        return validity == nullptr || (validity[(bit0 + i) >> 3] >> ((bit0 + i) & 7) & 1);
    }
    int64_t get(int64_t i, int64_t fill) const {
        if (values == nullptr || !valid(i)) return fill;
        return wide ? static_cast<const int64_t*>(values)[i] : static_cast<const int32_t*>(values)[i];
    }
};

// A utf8 column (int32 offsets).
struct Utf8 {
    const int32_t* offsets = nullptr;  // nullptr: absent
    const char* data = nullptr;
    const uint8_t* validity = nullptr;
    int64_t bit0 = 0, rows = 0;

    bool read(const Column& c) {
        if (!c) return true;
        if (!c.is_utf8()) return false;
        offsets = static_cast<const int32_t*>(c.array->buffers[1]) + c.array->offset;
        data = static_cast<const char*>(c.array->buffers[2]);
        validity = c.has_nulls() ? static_cast<const uint8_t*>(c.array->buffers[0]) : nullptr;
        bit0 = c.array->offset;
        rows = c.length();
        return true;
    }
    bool valid(int64_t i) const {
        return validity == nullptr || (validity[(bit0 + i) >> 3] >> ((bit0 + i) & 7) & 1);
    }
    // Whether row i's value is `name` (false when null).
    bool is(int64_t i, const std::string& name) const {
        return valid(i) && offsets[i + 1] - offsets[i] == static_cast<int32_t>(name.size()) &&
               std::memcmp(data + offsets[i], name.data(), name.size()) == 0;
    }
    // The end of the run of rows from i (up to `to`, else the last row) whose value is `name`.
    int64_t run_of(int64_t i, const std::string& name, int64_t to = -1) const {
        const int64_t end = to < 0 ? rows : to;
        if (name.size() == 4 && validity == nullptr) {  // a 4-byte name ("step"): one 32-bit word per row
            uint32_t word;
            std::memcpy(&word, name.data(), 4);
            for (; i < end; ++i) {
                const int32_t a = offsets[i];
                if (offsets[i + 1] - a != 4) break;  // before the load: no read past the data
                uint32_t w;
                std::memcpy(&w, data + a, 4);
                if (w != word) break;
            }
            return i;
        }
        while (i < end && is(i, name)) ++i;
        return i;
    }
    // Index of row i's value in `names`; -1 when null or none.
    int code(int64_t i, const std::vector<std::string>& names) const {
        if (!valid(i)) return -1;
        const int32_t a = offsets[i], len = offsets[i + 1] - a;
        for (size_t k = 0; k < names.size(); ++k)
            if (names[k].size() == static_cast<size_t>(len) && std::memcmp(names[k].data(), data + a, len) == 0)
                return static_cast<int>(k);
        return -1;
    }
};

// Integer dictionary indices: the type code of pau's sweep (with_index_type in
// sweep_api.hpp), or -1 for another format.
inline int index_type(const char* format) {
    static const char* const codes[] = {"c", "s", "i", "l", "C", "S", "I"};
    for (int i = 0; i < 7; ++i)
        if (std::strcmp(format, codes[i]) == 0) return i;
    return -1;
}

}  // namespace pau::core::arrow
