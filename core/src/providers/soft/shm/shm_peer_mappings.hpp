// The peer process's shared allocations (ndk/shared_memory.hpp) mapped into this one, so that a
// payload lying in one is copied with memcpy instead of process_vm_readv/writev (PayloadForm::
// shared_vectors, shm_messages.hpp; docs/transport.md, "Zero-copy").
//
// An allocation is opened as /proc/<pid>/fd/<fd>: the kernel allows it to a process of the
// same user that may read the peer's state (PTRACE_MODE_READ, which Yama does not narrow), and
// the file must be the one the payload names (device, inode), a memfd sealed against shrinking
// (so the peer cannot truncate it under our mapping into a SIGBUS), and as large as announced.
// Anything else (the descriptor closed, another file there, no permission) is remembered as
// not mappable and the caller copies by cross-memory attach: the same bytes, the same statuses.
//
// Each allocation is mapped once and kept for the next payload that names it, until:
// the connection goes (clear(), the destructor); the peer no longer holds it at that
// descriptor (checked for every kept one whenever a new one is mapped, so a peer that frees
// and allocates over and over leaves at most one stale mapping here); or kMaxMappings are kept
// (the least recently used goes).  A mapping a copy is using stays until that copy ends
// (shared ownership), whichever of those happens meanwhile.
#pragma once

#include "providers/soft/shm/shm_messages.hpp"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace ndk::soft::shm {

// One of the peer's allocations, mapped here (MAP_SHARED, read and write).
class PeerMapping {
public:
    PeerMapping(std::byte *base, std::size_t size) : base_(base), size_(size) {}
    ~PeerMapping();
    PeerMapping(const PeerMapping &) = delete;
    PeerMapping &operator=(const PeerMapping &) = delete;

    // Where the peer's address `address` (inside `region`, as decode() checked) is here.
    std::byte *local(const WireRegion &region, std::uint64_t address) const
    {
        return base_ + (address - region.base);
    }

private:
    std::byte *base_;
    std::size_t size_;
};

class PeerMappings {
public:
    static constexpr std::size_t kMaxMappings = 64;

    // `region` of process `peer` mapped here, or null when it cannot be (see above).
    std::shared_ptr<const PeerMapping> map(pid_t peer, const WireRegion &region);
    // How many allocations are mapped (not counting those remembered as not mappable).
    std::size_t mapped() const;
    void clear();

private:
    struct Entry {
        std::int32_t fd;
        std::uint64_t device, inode, size;
        std::shared_ptr<const PeerMapping> mapping; // null: not mappable
        std::uint64_t last_use;
    };
    // Drops the entries whose file the peer no longer holds at that descriptor.
    void sweep(pid_t peer);
    static std::shared_ptr<const PeerMapping> open(pid_t peer, const WireRegion &region);

    mutable std::mutex mu_; // a held Send is taken on the thread that posts the receive
    std::vector<Entry> entries_;
    std::uint64_t uses_ = 0;
};

} // namespace ndk::soft::shm
