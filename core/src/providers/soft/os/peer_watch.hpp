// Seeing a peer process die: a pidfd (pidfd_open, Linux >= 5.3) becomes readable when the
// process exits, whatever killed it, and can sit in the same poll set as the connection's
// other descriptors.  A survivor that waits on a ring checks it (or polls it) and turns the
// death into a connection error instead of waiting forever for a message that will not come.
// Unlike kill(pid, 0), a pidfd keeps naming the same process even after its pid is reused.
#pragma once

#include "providers/soft/os/process_identity.hpp"
#include "providers/soft/os/unique_fd.hpp"

#include <chrono>
#include <optional>

namespace ndk::soft::os {

class PeerWatch {
public:
    // A watch on `peer`, opened only if the process running under its pid is still the one
    // named (the start time is checked after the pidfd is held, so a pid reused in between is
    // caught).  Nothing when it is gone.  Throws std::system_error on other failures (ENOSYS
    // on a kernel older than 5.3, EMFILE).
    static std::optional<PeerWatch> open(const ProcessIdentity &peer);

    // The pidfd, readable (POLLIN) once the peer has exited: for the caller's own poll loop.
    int fd() const { return fd_.get(); }
    pid_t pid() const { return pid_; }

    // Has the peer exited?  Does not block.
    bool exited() const { return wait_for_exit(std::chrono::milliseconds(0)); }

    // Wait at most `limit` for the peer to exit; true when it has.
    bool wait_for_exit(std::chrono::milliseconds limit) const;

private:
    PeerWatch(UniqueFd fd, pid_t pid) : fd_(std::move(fd)), pid_(pid) {}

    UniqueFd fd_;
    pid_t pid_;
};

} // namespace ndk::soft::os
