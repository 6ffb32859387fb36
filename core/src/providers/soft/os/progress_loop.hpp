// The thread under a transport's progress (shm_progress.hpp, tcp_progress.hpp): it sleeps in
// epoll on the descriptors its owner watches and hands each event to the owner, and before
// each sleep lets the owner serve what needs no event (a ring with messages, a link with bytes
// already read).  What the two transports share is written here once: the epoll set, the
// eventfd that wakes the sleep, the thread, how it sleeps (until woken, or a nap shorter than a
// millisecond where the kernel has epoll_pwait2) and how it stops.
//
// The owner derives from it, calls start() last in its constructor and stop() first in its
// destructor, so the thread calls the hooks only while the owner is whole.  The hooks run on
// the thread, one at a time; `mutex_` is the owner's to hold around them (recursive, so a
// handler it calls may add or remove what it watches).
#pragma once

#include "providers/soft/os/unique_fd.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>

namespace ndk::soft::os {

class ProgressLoop {
public:
    ProgressLoop(const ProgressLoop &) = delete;
    ProgressLoop &operator=(const ProgressLoop &) = delete;

    // Joins the thread; again, nothing.  After it returns no hook is called.
    void stop();

    // The calling thread is the loop's own.
    bool on_loop_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

protected:
    // How long the thread sleeps after before_sleep().
    struct Sleep {
        static constexpr long kUntilWoken = -1;
        long microseconds = kUntilWoken; // 0: look again at once, without sleeping
    };

    // The epoll set and the wake eventfd; std::system_error when either cannot be made.
    ProgressLoop();
    ~ProgressLoop();

    void start();
    // The thread stops sleeping and calls before_sleep() again.  Any thread.
    void wake() const;

    // Report `events` on `fd` to on_event with `data` (never 0: the eventfd's).  std::system_error
    // when epoll refuses it.
    void watch(int fd, std::uint64_t data, std::uint32_t events);
    // Report `events` instead of what `fd` was watched for (an edge-triggered one reports
    // again what is ready already).  std::system_error when epoll refuses it.
    void rewatch(int fd, std::uint64_t data, std::uint32_t events);
    // No more events for `fd`; one not watched (removed already) is no error.
    void unwatch(int fd) const;

    // Serve what is ready before sleeping, and say for how long to sleep.
    virtual Sleep before_sleep() = 0;
    // An event of a watched descriptor.
    virtual void on_event(std::uint64_t data, std::uint32_t events) = 0;

    std::recursive_mutex mutex_;

private:
    void run();
    void control(int op, int fd, std::uint64_t data, std::uint32_t events);

    UniqueFd epoll_;
    UniqueFd wake_;
    std::atomic<bool> stopping_{false};
    std::thread thread_;
};

} // namespace ndk::soft::os
