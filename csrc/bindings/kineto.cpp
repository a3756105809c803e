// Bindings for the streaming Kineto trace parser (csrc/core/kineto.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "../core/kineto.hpp"
#include "common.hpp"

namespace py = pybind11;
using pau::kineto::Parser;

namespace {

using pau::bindings::to_numpy;

// Trace text is UTF-8 by the JSON spec; a broken byte must not make the whole
// file unreadable, so it becomes U+FFFD rather than an exception.
py::str decode(const std::string& s) {
    PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
    if (!o) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(o);
}

py::list decode_all(const std::vector<std::string>& v) {
    py::list out;
    for (const auto& s : v) out.append(decode(s));
    return out;
}

bool feed(Parser& p, const py::buffer& chunk) {
    py::buffer_info info = chunk.request();
    if (info.ndim != 1 || info.itemsize != 1)
        throw std::invalid_argument("feed: expected a 1-d buffer of bytes");
    const char* data = static_cast<const char*>(info.ptr);
    const size_t n = static_cast<size_t>(info.size);
    // Safe without the GIL: `info` holds the buffer export (a bytearray cannot be
    // resized while exported), and a Parser is used by one thread at a time.
    py::gil_scoped_release release;
    return p.feed(data, n);
}

// The parser's result, bound as pau._core.KinetoResult: the kept events' columns,
// the device rows' order, the set-aside events' columns, the metadata and the strings.
struct KinetoResult {
    py::dict rows;
    py::array device_order;
    py::dict set_aside, meta;
    py::list strings;
};

KinetoResult result(Parser& p) {
    std::vector<int64_t> order;
    {
        py::gil_scoped_release release;
        order = p.device_order();
    }
    auto& r = p.rows();
    py::dict rows;
    rows["ts_ns"] = to_numpy(std::move(r.ts_ns));
    rows["dur_ns"] = to_numpy(std::move(r.dur_ns));
    rows["cat"] = to_numpy(std::move(r.cat));
    rows["name"] = to_numpy(std::move(r.name));
    rows["device"] = to_numpy(std::move(r.device));
    rows["stream"] = to_numpy(std::move(r.stream));
    rows["correlation"] = to_numpy(std::move(r.correlation));
    rows["bytes"] = to_numpy(std::move(r.bytes));
    rows["pid"] = to_numpy(std::move(r.pid));
    rows["is_device"] = to_numpy(std::move(r.is_device));
    rows["offset"] = to_numpy(std::move(r.offset));

    auto& a = p.set_aside();
    py::dict aside;
    aside["offset"] = to_numpy(std::move(a.offset));
    aside["line"] = to_numpy(std::move(a.line));
    aside["reason"] = to_numpy(std::move(a.reason));
    aside["cat"] = to_numpy(std::move(a.cat));
    aside["name"] = to_numpy(std::move(a.name));

    auto& m = p.meta();
    py::dict meta;
    meta["format"] = m.format;
    meta["has_events_key"] = m.has_events_key;
    meta["has_distributed_info"] = m.has_distributed_info;
    meta["rank"] = m.has_rank ? py::object(py::int_(m.rank)) : py::object(py::none());
    meta["world_size"] = m.has_world_size ? py::object(py::int_(m.world_size)) : py::object(py::none());
    meta["backend"] = decode(m.backend);
    meta["base_time_ns"] = m.has_base_time ? py::object(py::int_(m.base_time_ns)) : py::object(py::none());
    meta["display_time_unit"] = decode(m.display_time_unit);
    meta["device_ids"] = py::cast(m.device_ids);
    meta["device_names"] = decode_all(m.device_names);
    meta["label_pids"] = py::cast(m.label_pids);
    meta["labels"] = decode_all(m.labels);
    meta["process_names"] = decode_all(m.process_names);
    meta["elements"] = m.elements;
    meta["complete_events"] = m.complete_events;
    meta["cat_counts"] = to_numpy(std::move(m.cat_counts));
    meta["ts_fraction_syntax"] = m.ts_fraction_syntax;
    meta["ts_missing"] = m.ts_missing;
    meta["sub_us"] = m.sub_us;
    meta["sub_ns"] = m.sub_ns;
    meta["bytes"] = p.bytes_seen();

    py::list strings;
    for (const auto& s : p.strings().strings()) strings.append(decode(s));

    return {rows, to_numpy(std::move(order)), aside, meta, strings};
}

}  // namespace

void bind_kineto(py::module_& m) {
    py::class_<KinetoResult>(m, "KinetoResult", "KinetoParser.result's columns, metadata and strings.")
        .def_readonly("rows", &KinetoResult::rows)
        .def_readonly("device_order", &KinetoResult::device_order)
        .def_readonly("set_aside", &KinetoResult::set_aside)
        .def_readonly("meta", &KinetoResult::meta)
        .def_readonly("strings", &KinetoResult::strings);
    py::class_<Parser>(m, "KinetoParser")
        .def(py::init<const std::vector<std::string>&>(), py::arg("device_categories"))
        .def("feed", &feed, py::arg("chunk"),
             "Parse the next chunk of the decompressed trace; False once the input is malformed.")
        .def("finish", &Parser::finish, "The input ended; False if it ended inside the document.")
        .def_property_readonly("error", [](const Parser& p) -> py::object {
            if (!p.failed()) return py::none();
            return py::make_tuple(decode(p.error_message()), p.error_offset(), p.error_line());
        })
        .def_property_readonly("bytes_seen", &Parser::bytes_seen)
        .def("result", &result, "Columns of the kept events, set-aside events and metadata (once).");

    m.def(
        "kineto_invalid_reasons",
        [] {
            py::dict d;
            for (auto r : {pau::kineto::Invalid::missing_ts, pau::kineto::Invalid::missing_dur,
                           pau::kineto::Invalid::bad_ts, pau::kineto::Invalid::bad_dur,
                           pau::kineto::Invalid::negative_dur})
                d[py::int_(static_cast<int>(r))] = pau::kineto::invalid_reason(r);
            return d;
        },
        "Why the Kineto parser sets an event aside: {code: text}.");
}
