// The private extension module pau._core: it only registers the bindings.
#include <pybind11/pybind11.h>

namespace py = pybind11;

void bind_crossing(py::module_& m);
void bind_errors(py::module_& m);
void bind_econ(py::module_& m);
void bind_sweep(py::module_& m);
void bind_kineto(py::module_& m);
void bind_lifecycle(py::module_& m);
void bind_parquet(py::module_& m);

PYBIND11_MODULE(_core, m) {
    m.doc() = "pau's native core (private: use pau.core)";
#ifdef PAU_VERSION
    m.attr("__version__") = PAU_VERSION;
#endif
    bind_errors(m);
    bind_sweep(m);
    bind_crossing(m);
    bind_econ(m);
    bind_kineto(m);
    bind_lifecycle(m);
    bind_parquet(m);
}
