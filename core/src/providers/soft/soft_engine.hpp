// The soft RNIC's engine: one thread per adapter that delivers every completion and callback,
// as hardware would through its interrupt path.  Consumers therefore never see a callback on
// the thread that made the call, and callbacks are serialized per adapter, which is how the
// provider keeps the "serialize callbacks" rule of digest 3.2 without per-object locks.
//
// Manual progress (knob progress=manual) stops the thread from taking tasks on its own: each
// step() lets it run a given number of tasks, so a scenario can place a completion or a close
// exactly between two callbacks.  Timers (receiver-not-ready and connection timeouts) become
// tasks when due, and so are stepped like any other.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace ndk::soft {

class Engine {
public:
    using Clock = std::chrono::steady_clock;

    Engine();
    ~Engine();
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    // Queue a task; it runs on the engine thread, in order.
    void post(std::function<void()> task);
    // Queue a task to run once `delay` has passed; returns an id for cancel().
    uint64_t post_after(std::chrono::microseconds delay, std::function<void()> task);
    // Drop a timer that has not become due yet (a no-op otherwise).
    void cancel(uint64_t timer);
    // Block until every task queued so far (and those they queue) has run, stepping through
    // manual progress.  Timers not yet due are not waited for.  Not from the engine thread.
    void drain();
    bool on_engine_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

    void set_manual(bool manual);
    // Manual progress: run up to `steps` tasks and return how many ran (fewer when the queue
    // empties).  Not from the engine thread.
    unsigned step(unsigned steps);
    // Tasks queued and not run yet (due timers included).
    size_t queued();
    // Nothing queued, nothing running, no timer set: the engine does nothing until a call
    // gives it something (the knob `quiescent`, soft_provider.cpp).
    bool idle();

private:
    void run();
    bool may_run() const; // mu_ held
    void promote_due_timers(Clock::time_point now); // mu_ held

    std::mutex mu_;
    std::condition_variable wake_;
    std::condition_variable idle_;
    std::deque<std::function<void()>> tasks_;
    std::multimap<Clock::time_point, std::pair<uint64_t, std::function<void()>>> timers_;
    uint64_t next_timer_ = 1;
    bool busy_ = false;
    bool stopping_ = false;
    bool manual_ = false;
    int draining_ = 0;
    unsigned credits_ = 0;
    std::thread thread_;
};

} // namespace ndk::soft
