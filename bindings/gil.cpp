#include "gil.hpp"

#include "ndk/fault.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <utility>
#include <thread>

namespace ndk::py {
namespace {

bool finalizing()
{
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
}

[[noreturn]] void park_until_exit()
{
    for (;;)
        std::this_thread::sleep_for(std::chrono::hours(1));
}

std::atomic<double> slice_seconds{0.05};

unsigned long main_thread_ident = 0;

// The exception a signal handler raised while this thread was held in the provider, kept until
// the call returns (~ReleasedGil raises it).
struct HeldException {
    PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
};
thread_local HeldException held_exception;

// fault::HoldInterrupted: on the main thread (the only one CPython runs signal handlers on),
// take the GIL and run the pending handlers; true when one raised (KeyboardInterrupt).
bool held_call_interrupted()
{
    if (PyThread_get_thread_ident() != main_thread_ident || !Py_IsInitialized() ||
        finalizing() || held_exception.type != nullptr)
        return false;
    PyGILState_STATE gil = PyGILState_Ensure();
    const bool raised = PyErr_CheckSignals() != 0;
    if (raised)
        PyErr_Fetch(&held_exception.type, &held_exception.value, &held_exception.traceback);
    PyGILState_Release(gil);
    return raised;
}

} // namespace

std::chrono::duration<double> wait_slice()
{
    return std::chrono::duration<double>(slice_seconds.load());
}

std::chrono::duration<double> set_wait_slice(std::chrono::duration<double> slice)
{
    return std::chrono::duration<double>(slice_seconds.exchange(slice.count()));
}

void hear_signals_in_held_calls()
{
    main_thread_ident = pybind11::module_::import("threading")
                            .attr("main_thread")()
                            .attr("ident")
                            .cast<unsigned long>();
    fault::set_hold_interrupted(held_call_interrupted);
}

// Nested inside another ReleasedGil (a helper that releases, called where the GIL is already
// released), it does nothing.
ReleasedGil::ReleasedGil() : state_(PyGILState_Check() ? PyEval_SaveThread() : nullptr) {}

ReleasedGil::~ReleasedGil() noexcept(false)
{
    if (state_ == nullptr)
        return;
    if (finalizing())
        park_until_exit();
    PyEval_RestoreThread(state_);
    if (held_exception.type != nullptr) {
        HeldException e = std::exchange(held_exception, HeldException{});
        if (std::uncaught_exceptions() == 0) {
            PyErr_Restore(e.type, e.value, e.traceback);
            throw pybind11::error_already_set(); // the held call returned: now it is heard
        }
        // The call is failing with another exception, which pybind11 sets over this one: a
        // Ctrl-C is tripped again, to be heard at the next check instead of lost.
        if (PyErr_GivenExceptionMatches(e.type, PyExc_KeyboardInterrupt))
            PyErr_SetInterrupt();
        Py_XDECREF(e.type);
        Py_XDECREF(e.value);
        Py_XDECREF(e.traceback);
    }
}

bool wait_interruptibly(std::optional<std::chrono::duration<double>> timeout,
                        const std::function<bool(std::chrono::duration<double>)> &step)
{
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    for (;;) {
        std::chrono::duration<double> slice = wait_slice();
        if (timeout) {
            std::chrono::duration<double> left = *timeout - (Clock::now() - start);
            slice = std::clamp(left, std::chrono::duration<double>::zero(), slice);
        }
        if (released([&] { return step(slice); }))
            return true;
        if (PyErr_CheckSignals() != 0)
            throw pybind11::error_already_set();
        if (timeout && Clock::now() - start >= *timeout)
            return false;
    }
}

} // namespace ndk::py
