// ndk._core: the pybind11 binding.  Thin by design: argument conversion, GIL handling,
// exception translation, reprs and docstrings; the behaviour lives in core/.
#include "package_types.hpp"
#include "gil.hpp"
#include "py_support.hpp"

#include <pybind11/stl.h>

#include <vector>

namespace ndk::py {
void add_text_signatures(pyb::module_ &m); // text_signatures.cpp: for inspect.signature
}

PYBIND11_MODULE(_core, m)
{
    m.doc() = "Binding of the ndk-harness C++ core; use the `ndk` package.";
    // The package's modules this one imports (package_types.hpp), for the layering test.
    m.attr("_LEAF_MODULES") = std::vector<std::string>(std::begin(ndk::py::kPackageLeafModules),
                                                       std::end(ndk::py::kPackageLeafModules));
    ndk::py::hear_signals_in_held_calls();
    m.def(
        "_set_wait_slice",
        [](double seconds) {
            if (!(seconds > 0))
                throw pybind11::value_error("_set_wait_slice: seconds must be > 0");
            return ndk::py::set_wait_slice(std::chrono::duration<double>(seconds)).count();
        },
        pybind11::arg("seconds"),
        "For tests: how long a wait sleeps between its checks for signals (default 0.05 s); "
        "returns the previous value.  A close wakes a wait without it (docs/semantics.md, "
        "WAIT-CLOSED).");
    ndk::py::bind_constants(m);
    ndk::py::bind_call(m);
    ndk::py::bind_validation(m);
    ndk::py::declare_adapter(m);
    ndk::py::bind_object_base(m);
    ndk::py::bind_cq(m);
    ndk::py::bind_objects(m);
    ndk::py::bind_lam(m);
    ndk::py::bind_shared_memory(m);
    ndk::py::bind_qp(m);
    ndk::py::bind_connector(m);
    ndk::py::bind_adapter(m);
    ndk::py::bind_raw(m);
    ndk::py::add_text_signatures(m); // after every binding: reads pybind11's docstrings
    ndk::py::name_argument_errors(m); // it wraps every function bound above
    ndk::py::bind_display(m); // last: every class's repr, and the displays of the values
}
