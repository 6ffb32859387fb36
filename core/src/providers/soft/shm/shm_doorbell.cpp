#include "providers/soft/shm/shm_doorbell.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace ndk::soft::shm {

os::UniqueFd make_doorbell_fd()
{
    os::UniqueFd fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!fd)
        throw std::system_error(errno, std::generic_category(), "eventfd");
    return fd;
}

void DoorbellRinger::ring() const
{
    const std::uint64_t one = 1;
    // EAGAIN: the counter is at its maximum, so the eventfd is readable anyway.  A consumer
    // that is gone (EBADF cannot happen: the descriptor is ours) is the peer watch's business.
    while (::write(fd_.get(), &one, sizeof one) < 0 && errno == EINTR) {
    }
}

void DoorbellSleeper::drain() const
{
    std::uint64_t count;
    while (::read(fd_.get(), &count, sizeof count) < 0 && errno == EINTR) {
    }
}

DoorbellSleeper::Sleep DoorbellSleeper::sleep_until(std::chrono::steady_clock::time_point deadline,
                                                    std::span<const int> others)
{
    if (others.size() > kMaxOthers)
        throw std::system_error(EINVAL, std::generic_category(), "doorbell wait: too many fds");
    ++sleeps_;
    pollfd fds[1 + kMaxOthers] = {{fd_.get(), POLLIN, 0}};
    for (std::size_t i = 0; i < others.size(); ++i)
        fds[1 + i] = {others[i], POLLIN, 0};
    for (;;) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        const int ready = ::poll(fds, static_cast<nfds_t>(1 + others.size()),
                                 left.count() > 0 ? static_cast<int>(left.count()) : 0);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready < 0)
            throw std::system_error(errno, std::generic_category(), "poll on a doorbell");
        if (ready == 0)
            return Sleep::timeout;
        return (fds[0].revents & POLLIN) != 0 ? Sleep::rung : Sleep::other_fd;
    }
}

} // namespace ndk::soft::shm
