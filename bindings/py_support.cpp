#include "py_support.hpp"

#include "ndk/call.hpp"

#include <algorithm>
#include <mutex>
#include <vector>

namespace ndk::py {
namespace {

// Immortal: Python objects must not be released by a static destructor after the interpreter
// has finalized.
std::mutex &deferred_mu = *new std::mutex;
std::vector<std::shared_ptr<void>> &deferred = *new std::vector<std::shared_ptr<void>>;

template <class T>
std::shared_ptr<void> gil_safe(std::unique_ptr<T> owned)
{
    return std::shared_ptr<void>(owned.release(), [](void *p) {
        auto *held = static_cast<T *>(p);
        if (PyGILState_Check()) {
            delete held;
            return;
        }
        std::lock_guard lock(deferred_mu);
        deferred.push_back(std::shared_ptr<void>(held, [](void *q) { delete static_cast<T *>(q); }));
    });
}

} // namespace

std::shared_ptr<void> keep_alive(std::unique_ptr<pyb::buffer_info> buffer)
{
    return gil_safe(std::move(buffer));
}

std::unique_ptr<pyb::buffer_info> contiguous_buffer(const pyb::buffer &buffer, bool writable)
{
    auto info = std::make_unique<pyb::buffer_info>(buffer.request(writable));
    pyb::ssize_t expected = info->itemsize;
    for (auto d = info->ndim; d-- > 0;) {
        if (info->shape[d] > 1 && info->strides[d] != expected) {
            PyErr_SetString(PyExc_BufferError, "the buffer must be C-contiguous memory");
            throw pyb::error_already_set();
        }
        expected *= info->shape[d];
    }
    return info;
}

void release_deferred()
{
    std::vector<std::shared_ptr<void>> now;
    {
        std::lock_guard lock(deferred_mu);
        now.swap(deferred);
    }
}

pyb::object enum_of(const char *name, long long value)
{
    try {
        return pyb::module_::import("ndk._constants").attr(name)(value);
    } catch (pyb::error_already_set &e) {
        if (!e.matches(PyExc_ValueError))
            throw;
        return pyb::int_(value);
    }
}

std::chrono::duration<double> timeout_of(const pyb::object &timeout)
{
    constexpr double kYear = 365.0 * 24 * 3600; // "forever", and the cap: a huge duration
                                                // would overflow the clock arithmetic
    if (timeout.is_none())
        return std::chrono::duration<double>(kYear);
    if (!PyFloat_Check(timeout.ptr()) && !PyLong_Check(timeout.ptr()))
        throw pyb::type_error("timeout must be None or a number of seconds");
    double seconds = timeout.cast<double>();
    if (!(seconds >= 0))
        throw pyb::value_error("timeout must be None or a number of seconds >= 0");
    return std::chrono::duration<double>(std::min(seconds, kYear));
}

GROUP_AFFINITY affinity_of(const pyb::object &affinity)
{
    GROUP_AFFINITY a{};
    if (pyb::isinstance<pyb::tuple>(affinity)) {
        auto pair = affinity.cast<pyb::tuple>();
        if (pair.size() != 2)
            throw pyb::value_error("affinity is a CPU mask or a (mask, group) pair");
        a.Mask = pair[0].cast<uint64_t>();
        a.Group = pair[1].cast<uint16_t>();
    } else {
        a.Mask = affinity.cast<uint64_t>();
    }
    return a;
}

bool wait_released(const Call &call, double seconds)
{
    pyb::gil_scoped_release release;
    if (seconds < 0)
        return call.wait();
    return call.wait(Call::Seconds(seconds));
}

} // namespace ndk::py
