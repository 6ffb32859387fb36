// The soft RNIC's engine: one thread per adapter that delivers every completion and callback,
// as hardware would through its interrupt path.  Consumers therefore never see a completion
// on the thread that made the call, and callbacks are serialized per adapter, which is how the
// provider keeps the "serialize callbacks" rule of digest 3.2 without per-object locks.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace ndk::soft {

class Engine {
public:
    Engine();
    ~Engine();
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    // Queue a task; it runs on the engine thread, in order.
    void post(std::function<void()> task);
    // Block until every task queued so far (and those they queue) has run.  Not from the engine.
    void drain();
    bool on_engine_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

private:
    void run();

    std::mutex mu_;
    std::condition_variable wake_;
    std::condition_variable idle_;
    std::deque<std::function<void()>> tasks_;
    bool busy_ = false;
    bool stopping_ = false;
    std::thread thread_;
};

} // namespace ndk::soft
