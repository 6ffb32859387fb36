// ndk._core: the pybind11 binding.  Thin by design: argument conversion, GIL handling,
// exception translation, reprs and docstrings; the behaviour lives in core/.
#include "py_support.hpp"

namespace ndk::py {
void bind_batch(pyb::module_ &m); // bind_batch.cpp: Qp.post_many, Cq.poll_into (after Qp, Cq)
void add_text_signatures(pyb::module_ &m); // text_signatures.cpp: for inspect.signature
}

PYBIND11_MODULE(_core, m)
{
    m.doc() = "Binding of the ndk-harness C++ core; use the `ndk` package.";
    ndk::py::bind_constants(m);
    ndk::py::bind_call(m);
    ndk::py::bind_validation(m);
    ndk::py::bind_adapter(m);
    ndk::py::bind_object_base(m);
    ndk::py::bind_cq(m);
    ndk::py::bind_objects(m);
    ndk::py::bind_lam(m);
    ndk::py::bind_qp(m);
    ndk::py::bind_connector(m);
    ndk::py::bind_batch(m);
    ndk::py::bind_raw(m);
    ndk::py::add_text_signatures(m); // after every binding: reads pybind11's docstrings
    ndk::py::name_argument_errors(m); // last: it wraps every function bound above
}
