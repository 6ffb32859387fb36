// The GIL around calls that may block in the provider or wait for it, in one place:
//  - released, so other Python threads run meanwhile (a call held inside the provider must not
//    freeze the interpreter, and another thread must be able to release or close it);
//  - waits in slices, so Ctrl-C (KeyboardInterrupt) is noticed within a slice (50 ms) whatever
//    the timeout, leaving the awaited call or queue as it was.  The slices are for signals
//    only: a close wakes the waits on what it closes at once (ndk/close_signal.hpp);
//  - a call held inside the provider (the fault layer's knob `hold`) hears Ctrl-C too: the held
//    main thread runs the pending signal handlers every ~50 ms (hear_signals_in_held_calls);
//    an exception one raised ends the hold and is raised when the call returns;
//  - never taken back by a thread while the interpreter finalizes: CPython would end such a
//    thread by unwinding its C++ frames, which aborts the process ("terminate called without
//    an active exception" at exit, with a daemon thread polling a CQ).  The thread parks
//    instead, as CPython 3.14 itself does, until the process exits.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <functional>
#include <optional>
#include <thread>

namespace ndk::py {

// How long a wait sleeps between its checks for signals: 50 ms.  set_wait_slice changes it,
// for the tests that show a close wakes a wait by itself (ndk._core._set_wait_slice).
std::chrono::duration<double> wait_slice();
std::chrono::duration<double> set_wait_slice(std::chrono::duration<double> slice);

class ReleasedGil {
public:
    ReleasedGil();
    // noexcept(false): finalization may begin between the check and taking the GIL back, and
    // CPython then ends the thread with a forced unwind (pthread_exit) from inside this
    // destructor; it must pass through (pybind11 rethrows it), not terminate the process.
    ~ReleasedGil() noexcept(false);
    ReleasedGil(const ReleasedGil &) = delete;
    ReleasedGil &operator=(const ReleasedGil &) = delete;

private:
    PyThreadState *state_;
};

// Let a call held by the fault layer's knob `hold` on the main thread end when a signal's
// Python handler raises (once, at module import, on the main thread).
void hear_signals_in_held_calls();

// f() with the GIL released.
template <class F>
decltype(auto) released(F &&f)
{
    ReleasedGil gil;
    return f();
}

// Call step(slice) with the GIL released until it returns true, each call waiting at most
// `slice` (<= wait_slice()), for at most `timeout` in all (nullopt: no limit).  Between slices the
// GIL is taken and pending signals run their handlers: KeyboardInterrupt propagates as
// pybind11::error_already_set.  Returns false when the timeout passed first.
bool wait_interruptibly(std::optional<std::chrono::duration<double>> timeout,
                        const std::function<bool(std::chrono::duration<double> slice)> &step);

// Call poll() until it returns true, with the GIL released and Ctrl-C heard as above: a short
// spin first (results usually follow a post within microseconds), then sleeps of ~30 us.
// Returns false when the timeout passed first; a zero timeout polls once.
template <class Poll>
bool poll_interruptibly(std::optional<std::chrono::duration<double>> timeout, Poll poll)
{
    using Clock = std::chrono::steady_clock;
    unsigned polls = 0;
    return wait_interruptibly(timeout, [&](std::chrono::duration<double> slice) {
        auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(slice);
        for (;; ++polls) {
            if (poll())
                return true;
            if (Clock::now() >= until)
                return false;
            if (polls < 200)
                std::this_thread::yield();
            else
                std::this_thread::sleep_for(std::chrono::microseconds(30));
        }
    });
}

} // namespace ndk::py
