// How the bound values show: repr that pprint accepts, IPython's _repr_pretty_ and notebooks'
// _repr_html_ (the layout itself is ndk._display's, shared with the package's Python values).
//
// pybind11 binds a method as an `instancemethod`, which is unhashable, and pprint looks a
// type's __repr__ up in a dict: pprint.pprint(adapter.query_info()) raised "TypeError:
// unhashable type: 'instancemethod'", and pytest's assertion diffs, which pformat, printed
// "representation of details failed".  Each class's __repr__ becomes a method descriptor (as
// a C type's methods are), which hashes, calling the bound repr.
#include "package_types.hpp"
#include "py_support.hpp"

#include <Python.h>

#include <unordered_map>

namespace ndk::py {

namespace {

// The class -> its bound __repr__ (kept for the module's life, as the classes are).
std::unordered_map<PyTypeObject *, PyObject *> &bound_reprs()
{
    static auto *reprs = new std::unordered_map<PyTypeObject *, PyObject *>();
    return *reprs;
}

PyObject *call_bound_repr(PyObject *self, PyObject *)
{
    // The nearest class in self's MRO whose repr was bound (a subclass inherits its base's).
    PyObject *mro = Py_TYPE(self)->tp_mro;
    for (Py_ssize_t i = 0; mro != nullptr && i < PyTuple_GET_SIZE(mro); ++i) {
        auto found = bound_reprs().find(reinterpret_cast<PyTypeObject *>(PyTuple_GET_ITEM(mro, i)));
        if (found != bound_reprs().end())
            return PyObject_CallOneArg(found->second, self);
    }
    return PyObject_Repr(self); // not reached: the descriptor is set only where one was kept
}

PyMethodDef repr_method = {"__repr__", call_bound_repr, METH_NOARGS, "Return repr(self)."};

void hashable_repr(pyb::handle cls)
{
    auto *type = reinterpret_cast<PyTypeObject *>(cls.ptr());
    PyObject *bound = PyDict_GetItemString(type->tp_dict, "__repr__");
    if (bound == nullptr || !PyInstanceMethod_Check(bound))
        return;
    Py_INCREF(bound);
    bound_reprs()[type] = bound;
    auto descriptor = pyb::reinterpret_steal<pyb::object>(PyDescr_NewMethod(type, &repr_method));
    if (!descriptor)
        throw pyb::error_already_set();
    cls.attr("__repr__") = descriptor;
}

// _repr_pretty_ and _repr_html_, laid out by ndk._display from the class's fields.
void displays(pyb::handle cls)
{
    cls.attr("_repr_pretty_") = pyb::cpp_function(
        [](const pyb::object &self, const pyb::object &printer, bool cycle) {
            package_attr("ndk._display", "pretty")(self, printer, cycle);
        },
        pyb::name("_repr_pretty_"), pyb::is_method(cls), pyb::arg("printer"), pyb::arg("cycle"),
        "IPython's pretty printer: ndk.Name(field=value, ...), a field a line when it does not fit.");
    cls.attr("_repr_html_") = pyb::cpp_function(
        [](const pyb::object &self) { return package_attr("ndk._display", "html")(self); },
        pyb::name("_repr_html_"), pyb::is_method(cls),
        "A notebook's display: the fields as a table.");
}

void show_classes(const pyb::handle &names, const pyb::object &shown)
{
    for (auto item : pyb::reinterpret_borrow<pyb::dict>(names)) {
        pyb::handle value = item.second;
        if (!PyType_Check(value.ptr()) ||
            !pyb::str(value.attr("__module__")).attr("startswith")("ndk._core").cast<bool>())
            continue; // not a bound class (the package's enumerations, say)
        hashable_repr(value);
        auto *type = reinterpret_cast<PyTypeObject *>(value.ptr());
        if (shown.contains(value.attr("__name__")) ||
            PyDict_GetItemString(type->tp_dict, "_fields") != nullptr)
            displays(value);
    }
}

} // namespace

void bind_display(pyb::module_ &m)
{
    pyb::object shown = package_attr("ndk._display", "BOUND_FIELDS");
    show_classes(m.attr("__dict__"), shown);
    for (auto item : pyb::reinterpret_borrow<pyb::dict>(m.attr("__dict__")))
        if (PyModule_Check(item.second.ptr())) // ndk._core.raw
            show_classes(item.second.attr("__dict__"), shown);
}

} // namespace ndk::py
