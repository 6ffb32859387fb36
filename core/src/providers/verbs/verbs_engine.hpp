// The verbs adapter's own thread.  It waits on the adapter's file descriptors (the CQ
// completion channel, the rdma_cm event channel, the device's async events) and on a task
// queue, and is the only thread that calls consumer callbacks, one at a time, as an RNIC's
// interrupt path would (digest 3.2: callbacks are serialized).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ndk::verbs {

class Engine {
public:
    Engine();
    ~Engine();
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    // A readable descriptor and what to do when it is readable (on the engine thread).
    // Register before start().
    void watch(int fd, std::function<void()> on_readable);
    void start();
    // Stop after the queued tasks ran; joins the thread.  Not from the engine thread.
    void stop();

    void post(std::function<void()> task);
    // Run `task` on the engine and wait for it (inline when called on the engine itself).
    void run(const std::function<void()> &task);
    bool on_engine() const { return std::this_thread::get_id() == thread_.get_id(); }

private:
    void loop();
    void wake();

    struct Watch {
        int fd;
        std::function<void()> on_readable;
    };
    std::vector<Watch> watches_;
    int wake_fd_ = -1; // eventfd
    std::mutex mu_;
    std::condition_variable done_;
    std::deque<std::function<void()>> tasks_;
    bool stopping_ = false;
    std::thread thread_;
};

} // namespace ndk::verbs
