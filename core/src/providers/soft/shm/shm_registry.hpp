// The endpoints of one host's shm adapters: which process listens on which soft address and
// port, and where it accepts connections (an abstract socket name, shm_handoff.hpp), so that
// a connect from another process finds its listener.
//
// A directory (per user: default /dev/shm/ndk-harness-<uid>, mode 0700) with one small file
// per endpoint, named "<address>#<port>".  Why files: registrations are rare (listen, bind)
// and lookups happen once per connect, so nothing here is on the data path; in exchange the
// kernel gives what a shared table would have to build: rename() publishes a complete entry
// atomically, so lookups take no lock; writers serialize on flock() of a lock file, which
// the kernel releases when its holder dies, so a crashed process cannot wedge the registry.
//
// Each entry names its owner by pid and start time (process_identity.hpp).  An entry whose
// owner is no longer running is stale: lookups ignore it, a registration of the same
// endpoint takes it over, and reclaim_stale() deletes it.  A process killed with SIGKILL
// therefore costs one small file until the next registration or sweep, and nothing else.
//
// A fabric's directory (knob shm_fabric) goes with its last user: remove_if_unused() deletes
// it once it holds no entry of a running process, which the shm transport calls when an
// adapter closes, and for every fabric directory of the user when one opens (so that a
// killed run's directories go too: reclaim_unused_fabrics).  The lock file goes with the
// directory, so a writer that locks checks that the file it holds is still the directory's
// (lock()); one that finds the directory gone makes it again.
#pragma once

#include "providers/soft/os/process_identity.hpp"
#include "providers/soft/os/unique_fd.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ndk::soft::shm {

struct EndpointEntry {
    std::string address; // the soft address as text: IPv4 dotted quad or IPv6
    std::uint16_t port = 0;
    os::ProcessIdentity owner;
    std::string socket_name; // abstract socket on which the owner accepts connections

    bool operator==(const EndpointEntry &) const = default;
};

enum class AddResult { added, in_use };

class EndpointRegistry {
public:
    // The registry in `directory`, created (0700) when missing.  An existing directory must be
    // ours, a real directory and closed to others: another user could otherwise plant entries
    // that send our connects to their process.  Throws std::system_error.
    explicit EndpointRegistry(std::filesystem::path directory);

    // /dev/shm/ndk-harness-<euid>: tmpfs, so entries never touch a disk and vanish at reboot.
    static std::filesystem::path default_directory();

    // Register `entry`; `in_use` when a running process holds the endpoint (written to
    // `holder` when given).  A stale holder's entry is replaced.  Throws std::invalid_argument
    // for an address that cannot be a file name, std::system_error on I/O failure.
    AddResult add(const EndpointEntry &entry, EndpointEntry *holder = nullptr);

    // The running owner's entry; nothing when absent or stale.  Takes no lock.
    std::optional<EndpointEntry> find(const std::string &address, std::uint16_t port) const;

    // Remove the endpoint if `owner` holds it; false otherwise (a process may only drop its
    // own registrations, never one a later owner made after reclaiming).
    bool remove(const std::string &address, std::uint16_t port, const os::ProcessIdentity &owner);

    // Entries of running owners (for OID_NDK_LOCAL_ENDPOINTS-style listings).
    std::vector<EndpointEntry> list() const;

    // Delete every stale entry (and any file a writer left half-made when it died); returns
    // how many entries went.
    std::size_t reclaim_stale();

    // Reclaim the stale entries, then delete the directory (its lock file with it) when no
    // entry of a running process is left in it; true when it went.  Never the user's default
    // directory, which holds the fabrics: only a fabric's (fabric_directory()).
    bool remove_if_unused();

    // The directory of fabric `name` (knob shm_fabric) inside `base`.
    static std::filesystem::path fabric_directory(const std::filesystem::path &base,
                                                  const std::string &name);

    // remove_if_unused() for every fabric directory in `base`; returns how many went.
    static std::size_t reclaim_unused_fabrics(const std::filesystem::path &base);

    const std::filesystem::path &directory() const { return directory_; }

private:
    // flock() of the directory's lock file, made (with the directory) when missing; retried
    // until the file locked is the one the directory holds, since remove_if_unused() may
    // unlink it under a waiter.
    os::UniqueFd lock() const;
    // Make the directory (and its parent, the user's default directory) when missing, and
    // check that both are private directories of this user.  Throws std::system_error.
    void make_directory() const;
    // reclaim_stale() with the lock held; `live` is set when an entry of a running process
    // (or a file a running writer is making) stays.
    std::size_t reclaim_stale_locked(bool *live);
    std::filesystem::path entry_path(const std::string &address, std::uint16_t port) const;
    void publish(const EndpointEntry &entry);

    std::filesystem::path directory_;
};

} // namespace ndk::soft::shm
