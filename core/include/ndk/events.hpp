// Events a provider delivers on its own thread (CQ and SRQ notifications, connect and
// disconnect events), queued for the consumer to wait on.  The provider's thread only pushes;
// it never runs consumer code beyond that (ARCHITECTURE, "Python").
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

namespace ndk {

template <class T>
class EventQueue {
public:
    void push(T value)
    {
        {
            std::lock_guard lock(mu_);
            events_.push_back(std::move(value));
            ++delivered_;
        }
        cv_.notify_all();
    }

    // The next event, waiting at most `timeout` (nullopt: do not wait), or until `stop` is
    // set and wake() called (a close, ndk/close_signal.hpp).
    std::optional<T> pop(std::optional<std::chrono::duration<double>> timeout = std::nullopt,
                         const std::atomic<bool> *stop = nullptr)
    {
        std::unique_lock lock(mu_);
        if (timeout)
            cv_.wait_for(lock, *timeout, [this, stop] {
                return !events_.empty() || (stop != nullptr && stop->load());
            });
        if (events_.empty())
            return std::nullopt;
        T value = std::move(events_.front());
        events_.pop_front();
        return value;
    }

    // Wake the waits in pop() to check their `stop`, which the caller set before.
    void wake()
    {
        { std::lock_guard lock(mu_); } // a pop between its check of `stop` and its wait is in
        cv_.notify_all();              // the wait once this lock was had: it hears the notify
    }

    // How many events were delivered in all (popped or not).
    unsigned long delivered() const
    {
        std::lock_guard lock(mu_);
        return delivered_;
    }

private:
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<T> events_;
    unsigned long delivered_ = 0;
};

} // namespace ndk
