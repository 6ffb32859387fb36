// What every binding file shares: NTSTATUS <-> ndk.Status conversion, and holders that keep
// Python objects alive from C++ without ever touching a Python reference on a provider thread.
#pragma once

#include "ndk/ndkpi.h"

#include <pybind11/pybind11.h>

#include <memory>

namespace ndk {
class Call;
}

namespace ndk::py {

namespace pyb = pybind11;

// A status as Python sees it: an ndk.Status (an IntEnum of unsigned values).
struct Status {
    NTSTATUS value;
};

// Keep a Python object alive from C++.  The reference may be dropped on any thread: without
// the GIL it is queued and released at the next binding call that holds the GIL, so a provider
// thread never waits for the GIL (which could deadlock with a consumer waiting on it).
std::shared_ptr<void> keep_alive(std::unique_ptr<pyb::buffer_info> buffer);
void release_deferred(); // GIL held

// A member of one of ndk's enumerations (ndk._constants), e.g. enum_of("OpType", 1).
pyb::object enum_of(const char *name, long long value);

// A GROUP_AFFINITY from Python: an int mask (group 0) or a (mask, group) pair.
GROUP_AFFINITY affinity_of(const pyb::object &affinity);

// Wait on a Call, with the GIL released.  seconds < 0: forever.
bool wait_released(const Call &call, double seconds);

void bind_constants(pyb::module_ &m);
void bind_call(pyb::module_ &m);
void bind_adapter(pyb::module_ &m);
void bind_objects(pyb::module_ &m);

} // namespace ndk::py

namespace pybind11::detail {

template <>
struct type_caster<ndk::py::Status> {
    PYBIND11_TYPE_CASTER(ndk::py::Status, const_name("ndk.Status"));

    bool load(handle source, bool)
    {
        if (!PyLong_Check(source.ptr()))
            return false;
        long long v = PyLong_AsLongLong(source.ptr());
        if (PyErr_Occurred() || v < -0x80000000LL || v > 0xFFFFFFFFLL) {
            PyErr_Clear();
            return false;
        }
        value.value = static_cast<NTSTATUS>(static_cast<uint32_t>(v));
        return true;
    }

    static handle cast(ndk::py::Status status, return_value_policy, handle)
    {
        static object status_type = module_::import("ndk._status").attr("Status");
        return status_type(static_cast<uint32_t>(status.value)).release();
    }
};

} // namespace pybind11::detail
