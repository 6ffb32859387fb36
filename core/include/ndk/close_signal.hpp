// How a close tells the threads that wait on what it closes (docs/semantics.md, WAIT-CLOSED):
// a wait (for an event of a queue, for a Call's completion) registers how to wake it with the
// object and the adapter it waits on, and each close wakes the waits registered on what it
// closes the moment the state they check changes, instead of their noticing it at their next
// re-check.  The wake only interrupts the wait; the waiter then asks the object (check_open,
// close_completed) what changed.
#pragma once

#include <functional>
#include <list>
#include <memory>
#include <mutex>

namespace ndk {

class CloseSignal {
public:
    using Wake = std::function<void()>;

    // A registered wake, removed when this goes.  Once the destructor returned, the wake is
    // not running and will not run: it may refer to what the waiter owns.
    class [[nodiscard]] Watch {
    public:
        Watch() = default;
        Watch(Watch &&other) noexcept = default;
        Watch &operator=(Watch &&other) noexcept;
        Watch(const Watch &) = delete;
        Watch &operator=(const Watch &) = delete;
        ~Watch();

    private:
        friend class CloseSignal;
        Watch(std::shared_ptr<CloseSignal> signal, std::list<Wake>::iterator at)
            : signal_(std::move(signal)), at_(at)
        {
        }
        void reset();
        std::shared_ptr<CloseSignal> signal_;
        std::list<Wake>::iterator at_;
    };

    // Register `wake` until the Watch goes.
    static Watch watch(const std::shared_ptr<CloseSignal> &signal, Wake wake);
    // Run every registered wake, on this thread, after the state the waiters check changed.
    void notify();

private:
    std::mutex mu_; // held while a wake runs, so that ~Watch waits for it
    std::list<Wake> wakes_;
};

} // namespace ndk
