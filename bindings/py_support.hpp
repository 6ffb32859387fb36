// What every binding file shares: NTSTATUS <-> ndk.Status conversion, and holders that keep
// Python objects alive from C++ without ever touching a Python reference on a provider thread.
#pragma once

#include "ndk/events.hpp"
#include "ndk/ndkpi.h"
#include "ndk/objects.hpp"
#include "ndk/validation.hpp"

#include <pybind11/pybind11.h>

#include "gil.hpp"
#include "package_types.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace ndk {
class Adapter;
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

// A buffer whose memory is one C-contiguous range, or BufferError: a strided view (e.g.
// memoryview(b)[::2]) would have the provider read or write memory that is not the buffer's.
std::unique_ptr<pyb::buffer_info> contiguous_buffer(const pyb::buffer &buffer,
                                                    bool writable = false);

// A member of one of ndk's enumerations (ndk._constants), e.g. enum_of("OpType", 1); a value
// that is no member (a provider's garbage) stays a plain int rather than raising.
pyb::object enum_of(const char *name, long long value);

// A raw pointer-sized value as an int (addresses, raw contexts).
inline uintptr_t context_value(PVOID value) { return reinterpret_cast<uintptr_t>(value); }

// Arguments out of range or of the wrong type name the parameter and its range, never
// pybind11's "incompatible function arguments" (docs/architecture.md, "The binding"):
//  - the unsigned integer types (USHORT, ULONG/UINT32, UINT64/SIZE_T) load through the casters
//    below, which note why a value failed (note_argument_failure);
//  - name_argument_errors(m), called once the module is bound, makes every function that has a
//    single overload raise, when its arguments do not load, TypeError / ValueError /
//    OverflowError naming the parameter (from the note, or from the signature's types).
enum class ArgumentFailure { None, NotInt, Negative, TooLarge };
// Classify `value` as an unsigned integer of `bits` bits; *out gets it when it fits.
ArgumentFailure check_unsigned(pyb::handle value, unsigned bits, uint64_t *out);
void note_argument_failure(pyb::handle value, unsigned bits, ArgumentFailure why);
// The value, or the exception naming `parameter` (TypeError, ValueError, OverflowError).
uint64_t unsigned_arg(pyb::handle value, unsigned bits, const char *parameter);
void name_argument_errors(pyb::module_ &m);

// A timeout in seconds from Python, converted under the GIL: None waits (nearly) forever; a
// negative or NaN timeout is a ValueError.
std::chrono::duration<double> timeout_of(const pyb::object &timeout);

// The next event of `queue`, waiting at most `timeout` with the GIL released (gil.hpp:
// Ctrl-C interrupts it).  An event already queued is returned even after `owner` closed; a
// wait for one more ends with ClosedError (ndk.ObjectClosedError) as soon as `owner` or its
// adapter closes, which wakes it (Object::watch_close): no event follows a close (digest 3.1).
template <class T>
std::optional<T> pop_released(const Object &owner, EventQueue<T> &queue,
                              const pyb::object &timeout)
{
    // The close wakes the wait at once (WAIT-CLOSED); the slices are for Ctrl-C.
    std::atomic<bool> woken{false};
    auto watches = owner.watch_close([&] {
        woken.store(true);
        queue.wake();
    });
    std::optional<T> event;
    wait_interruptibly(timeout_of(timeout), [&](std::chrono::duration<double> slice) {
        woken.store(false); // before the check: a close after it wakes the pop below
        event = queue.pop();
        if (!event) {
            owner.check_open();
            event = queue.pop(slice, &woken);
        }
        return event.has_value();
    });
    return event;
}

// A GROUP_AFFINITY from Python: an int mask (group 0) or a (mask, group) pair.
GROUP_AFFINITY affinity_of(const pyb::object &affinity);

// Free, with the GIL, what calls made with the GIL released let go of (the consumer's parked
// references, then Python buffers they held): after a close, deregister or LAM release, the
// buffer can be resized again as soon as the call returns.
void let_go_now();

// Wait on the Call `call` (the C++ side of the ndk.Call `self`), with the GIL released
// (Ctrl-C interrupts it).  seconds < 0: forever.  A wait for a completion that can no longer
// come ends with ClosedError (ndk.ObjectClosedError): the close of the object the call was
// issued on completed, or its adapter was torn down (remember_owner).
bool wait_released(pyb::handle self, const Call &call, double seconds);
// Remember on the ndk.Call `call` what the method `self` it came from was called on, for
// wait_released.  Weakly: a pending Call keeps neither its object nor its adapter alive.
void remember_owner(pyb::handle call, pyb::handle self);
// TimeoutError for the ndk.Call `call` that did not complete within `timeout`: names its NDK
// function (set on every Call a bound function returns) and what was awaited.
[[noreturn]] void raise_call_timeout(pyb::handle call, const pyb::object &timeout);
// The NDK function an ndk.Call records (e.g. "NdkCreateCq"), or "the NDK call".
std::string call_function(pyb::handle call);

// What a validation Session recorded, read with the GIL released: judging overdue completions
// takes the layer's locks, which a provider thread may hold.
std::vector<validate::Violation> violations_of(validate::Session &session);

// In registration order: a class must be registered before a signature names it.
void bind_constants(pyb::module_ &m);
void bind_call(pyb::module_ &m);
void bind_validation(pyb::module_ &m); // Violation, Rule, ValidationSession, rules()
void declare_adapter(pyb::module_ &m); // the class only: the classes below name it
void bind_object_base(pyb::module_ &m); // Object, Sge, Mdl
void bind_cq(pyb::module_ &m);          // Cq, Result, ResultEx
void bind_objects(pyb::module_ &m);     // Pd, Mr, Mw, Srq, SharedEndpoint
void bind_lam(pyb::module_ &m);         // Lam, LamCall
void bind_shared_memory(pyb::module_ &m); // SharedBuffer
void bind_qp(pyb::module_ &m);
void bind_connector(pyb::module_ &m);   // Connector, Listener
void bind_adapter(pyb::module_ &m);     // AdapterInfo, AdapterInfoQuery, every Adapter method
void bind_raw(pyb::module_ &m);         // the submodule raw (ndk.testing.raw)
void bind_display(pyb::module_ &m);     // every bound class: hashable repr, IPython, HTML

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
        static object status_type = ndk::py::package_attr("ndk._status", "Status");
        return status_type(static_cast<uint32_t>(status.value)).release();
    }
};

// The unsigned integer types of NDK parameters: an int (or an object with __index__), else the
// failure is noted for name_argument_errors.
template <class T>
struct checked_unsigned_caster {
    PYBIND11_TYPE_CASTER(T, const_name("int"));

    bool load(handle source, bool convert)
    {
        uint64_t v = 0;
        auto why = ndk::py::ArgumentFailure::NotInt;
        if (PyLong_Check(source.ptr()) || (convert && PyIndex_Check(source.ptr())))
            why = ndk::py::check_unsigned(source, 8 * sizeof(T), &v);
        if (why != ndk::py::ArgumentFailure::None) {
            ndk::py::note_argument_failure(source, 8 * sizeof(T), why);
            return false;
        }
        value = static_cast<T>(v);
        return true;
    }

    static handle cast(T v, return_value_policy, handle)
    {
        return PyLong_FromUnsignedLongLong(static_cast<unsigned long long>(v));
    }
};

template <>
struct type_caster<unsigned short> : checked_unsigned_caster<unsigned short> {};
template <>
struct type_caster<unsigned int> : checked_unsigned_caster<unsigned int> {};
template <>
struct type_caster<unsigned long> : checked_unsigned_caster<unsigned long> {};
template <>
struct type_caster<unsigned long long> : checked_unsigned_caster<unsigned long long> {};

} // namespace pybind11::detail
