#include "providers/soft/os/peer_watch.hpp"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace ndk::soft::os {

std::optional<PeerWatch> PeerWatch::open(const ProcessIdentity &peer)
{
    // The raw system call: glibc gained a wrapper only in 2.36.
    const long fd = ::syscall(SYS_pidfd_open, peer.pid, 0);
    if (fd < 0) {
        if (errno == ESRCH)
            return std::nullopt;
        throw std::system_error(errno, std::generic_category(), "pidfd_open");
    }
    PeerWatch watch(UniqueFd(static_cast<int>(fd)), peer.pid);
    // The pidfd now pins whichever process had the pid; make sure it is the one we meant.
    if (!is_running(peer))
        return std::nullopt;
    return watch;
}

bool PeerWatch::wait_for_exit(std::chrono::milliseconds limit) const
{
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + limit;
    for (;;) {
        const auto left =
            std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now());
        pollfd entry{fd_.get(), POLLIN, 0};
        const int ready = ::poll(&entry, 1, left.count() > 0 ? static_cast<int>(left.count()) : 0);
        if (ready > 0)
            return true;
        if (ready == 0)
            return false;
        if (errno != EINTR)
            throw std::system_error(errno, std::generic_category(), "poll on a pidfd");
    }
}

} // namespace ndk::soft::os
