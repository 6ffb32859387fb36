#include "providers/soft/os/progress_loop.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace ndk::soft::os {

namespace {

constexpr std::uint64_t kWakeData = 0; // the owners' data are never 0

// One sleep in `epoll`: until an event comes (microseconds < 0) or for a nap.
int wait_events(int epoll, epoll_event *events, int capacity, long microseconds)
{
    if (microseconds < 0)
        return ::epoll_wait(epoll, events, capacity, -1);
    const timespec nap{microseconds / 1'000'000, microseconds % 1'000'000 * 1000L};
    const int n = ::epoll_pwait2(epoll, events, capacity, &nap, nullptr);
    if (n < 0 && errno == ENOSYS) // before Linux 5.11: in milliseconds, at least one
        return ::epoll_wait(epoll, events, capacity,
                            static_cast<int>(std::max(1L, (microseconds + 999) / 1000)));
    return n;
}

} // namespace

ProgressLoop::ProgressLoop()
    : epoll_(::epoll_create1(EPOLL_CLOEXEC)), wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC))
{
    if (!epoll_ || !wake_)
        throw std::system_error(errno, std::generic_category(), "epoll or eventfd");
    watch(wake_.get(), kWakeData, EPOLLIN);
}

ProgressLoop::~ProgressLoop() { stop(); }

void ProgressLoop::start()
{
    thread_ = std::thread([this] { run(); });
}

void ProgressLoop::stop()
{
    stopping_.store(true);
    wake();
    if (thread_.joinable())
        thread_.join();
}

void ProgressLoop::wake() const
{
    const std::uint64_t one = 1;
    while (::write(wake_.get(), &one, sizeof one) < 0 && errno == EINTR) {
    }
}

void ProgressLoop::watch(int fd, std::uint64_t data, std::uint32_t events)
{
    control(EPOLL_CTL_ADD, fd, data, events);
}

void ProgressLoop::rewatch(int fd, std::uint64_t data, std::uint32_t events)
{
    control(EPOLL_CTL_MOD, fd, data, events);
}

void ProgressLoop::control(int op, int fd, std::uint64_t data, std::uint32_t events)
{
    epoll_event event{};
    event.events = events;
    event.data.u64 = data;
    if (::epoll_ctl(epoll_.get(), op, fd, &event) != 0)
        throw std::system_error(errno, std::generic_category(),
                                op == EPOLL_CTL_ADD ? "epoll_ctl ADD" : "epoll_ctl MOD");
}

void ProgressLoop::unwatch(int fd) const { ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr); }

void ProgressLoop::run()
{
    constexpr int kBatch = 64;
    epoll_event events[kBatch];
    while (!stopping_.load()) {
        const Sleep sleep = before_sleep();
        if (sleep.microseconds == 0)
            continue;
        const int n = wait_events(epoll_.get(), events, kBatch, sleep.microseconds);
        if (n < 0 && errno != EINTR)
            throw std::system_error(errno, std::generic_category(), "epoll_wait");
        for (int i = 0; i < n; ++i) {
            if (events[i].data.u64 == kWakeData) {
                std::uint64_t count;
                while (::read(wake_.get(), &count, sizeof count) < 0 && errno == EINTR) {
                }
                continue;
            }
            on_event(events[i].data.u64, events[i].events);
        }
    }
}

} // namespace ndk::soft::os
