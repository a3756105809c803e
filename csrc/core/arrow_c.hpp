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
    const int64_t* int64() const {
        if (format() != "l") return nullptr;
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

// Integer dictionary indices: the type code of pau's sweep (with_index_type in
// sweep.hpp), or -1 for another format.
inline int index_type(const char* format) {
    static const char* const codes[] = {"c", "s", "i", "l", "C", "S", "I"};
    for (int i = 0; i < 7; ++i)
        if (std::strcmp(format, codes[i]) == 0) return i;
    return -1;
}

}  // namespace pau::core::arrow
