// One thread per adapter that calls the consumer's callbacks, in the order they were queued,
// one at a time, never inside the consumer's own call (digest 3.2), as an RNIC's interrupt
// path would.  Stopping it runs what is queued first.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace ndk::loop {

class Engine {
public:
    Engine();
    ~Engine(); // stops
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    void post(std::function<void()> task);
    // Run `task` on the engine after everything queued, and wait for it (at once when called
    // on the engine itself).  Never with the fabric lock held.
    void run(const std::function<void()> &task);
    void stop();

private:
    void loop();

    std::mutex mu_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> tasks_;
    bool stopping_ = false;
    std::thread thread_; // started once the members above exist
    std::thread::id id_; // the engine's thread, set before any task is queued
};

} // namespace ndk::loop
