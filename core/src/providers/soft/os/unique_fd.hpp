// One owned file descriptor, closed when its owner goes.  Every piece of the shm transport
// holds kernel objects (memfds, sockets, pidfds) that must not leak across a failed setup or
// into a process that outlives the connection, so none of them is a bare int.
#pragma once

#include <unistd.h>

#include <utility>

namespace ndk::soft::os {

class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : fd_(fd) {}
    UniqueFd(UniqueFd &&other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    UniqueFd &operator=(UniqueFd &&other) noexcept
    {
        if (this != &other)
            reset(std::exchange(other.fd_, -1));
        return *this;
    }
    UniqueFd(const UniqueFd &) = delete;
    UniqueFd &operator=(const UniqueFd &) = delete;
    ~UniqueFd() { reset(); }

    int get() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    int release() { return std::exchange(fd_, -1); }
    void reset(int fd = -1)
    {
        // close() is not retried on EINTR: on Linux the descriptor is gone either way.
        if (fd_ >= 0)
            ::close(fd_);
        fd_ = fd;
    }

private:
    int fd_ = -1;
};

} // namespace ndk::soft::os
