#include "gil.hpp"

#include <algorithm>
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

} // namespace

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
}

bool wait_interruptibly(std::optional<std::chrono::duration<double>> timeout,
                        const std::function<bool(std::chrono::duration<double>)> &step)
{
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    for (;;) {
        std::chrono::duration<double> slice = kSlice;
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
