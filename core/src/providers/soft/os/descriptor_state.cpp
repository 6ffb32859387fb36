#include "providers/soft/os/descriptor_state.hpp"

#include <poll.h>

namespace ndk::soft::os {

bool readable_now(int fd)
{
    pollfd p{fd, POLLIN | POLLRDHUP, 0};
    return ::poll(&p, 1, 0) > 0 && p.revents != 0; // POLLHUP, POLLERR, POLLNVAL come unasked
}

} // namespace ndk::soft::os
