// Which process, exactly: a pid alone is reused by the kernel once its owner is reaped, so a
// registry entry or a peer record that kept only the pid would one day name a stranger.  The
// start time (field 22 of /proc/<pid>/stat, clock ticks since boot) does not repeat for one
// pid within a boot, so (pid, start time) names one process for its whole life.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace ndk::soft::os {

struct ProcessIdentity {
    pid_t pid = 0;
    std::uint64_t start_time = 0;

    bool operator==(const ProcessIdentity &) const = default;
};

// The process now running as `pid`; nothing when there is none, or when it has exited and
// only its zombie waits to be reaped (it can no longer touch shared memory or answer).
std::optional<ProcessIdentity> identify(pid_t pid);

// This process.
ProcessIdentity self_identity();

// True when `who` still runs: its pid is alive and has the same start time.
bool is_running(const ProcessIdentity &who);

} // namespace ndk::soft::os
