// The Python side of the ndk package that the binding builds on: its pure-Python modules of
// values, enumerations and exceptions.  The dependency goes one way: the package imports
// _core, and _core imports only these leaf modules, none of which imports _core or the
// package's __init__ (tests/binding/test_layering.py keeps it so).  numpy's compiled core does
// the same with numpy.core._exceptions.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <utility>

namespace ndk::py {

namespace pyb = pybind11;

// The leaf modules _core may import.
inline constexpr const char *kPackageLeafModules[] = {
    "ndk._status",     // Status
    "ndk._constants",  // the NDK enumerations
    "ndk._errors",     // NdkError and the other exceptions
    "ndk._knobs",      // Knobs (adapter.knobs), set_knob / get_knob
    "ndk._oid",        // OidResult and the OID answer parsers
    "ndk._connection", // ConnectionData, AddressResult
    "ndk._capabilities", // NdkCapabilities (adapter.query_ndk_capabilities)
    "ndk._display",    // how the values show in IPython and notebooks (bind_display.cpp)
};

// `name` of the leaf module `module` (one of kPackageLeafModules).
inline pyb::object package_attr(const char *module, const char *name)
{
    return pyb::module_::import(module).attr(name);
}

// Raise the ndk exception `name` (a class of ndk._errors) built from `args`.
template <class... Args>
[[noreturn]] void raise_package_error(const char *name, Args &&...args)
{
    pyb::object cls = package_attr("ndk._errors", name);
    pyb::object error = cls(std::forward<Args>(args)...);
    PyErr_SetObject(cls.ptr(), error.ptr());
    throw pyb::error_already_set();
}

} // namespace ndk::py
