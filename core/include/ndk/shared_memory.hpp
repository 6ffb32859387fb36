// Memory another process can map: the buffers the harness allocates for zero-copy transfers
// between processes (`ndk.alloc` in Python).  Each allocation is its own memfd, sized once and
// sealed against shrinking and growing (so a process that maps it can never be made to fault
// past its end), mapped MAP_SHARED here, and listed in a table of this process's shared
// allocations.  A provider that moves bytes to another process (soft's shm transport) looks a
// buffer up there and, when it lies in one allocation, tells its peer which descriptor and file
// to map instead of copying through process_vm_readv/writev (docs/transport.md, "Zero-copy").
//
// Registered as any other memory: the allocation is only where the bytes live; registration,
// tokens, bounds and access checks are the provider's, unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace ndk {

// Where a shared allocation is, and how a process of the same user opens it:
// /proc/<pid>/fd/<fd>, checked to be the file (device, inode).
struct SharedRange {
    std::uintptr_t base = 0; // the mapping's first byte in this process
    std::size_t size = 0;    // the memfd's size (whole pages)
    int fd = -1;             // the memfd, in this process's descriptor table
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
};

class SharedMemory {
public:
    // At least `size` bytes (rounded up to whole pages; 0 is refused), zero-filled.  Throws
    // std::invalid_argument for 0, std::system_error when the kernel refuses (ENOMEM, EMFILE).
    explicit SharedMemory(std::size_t size);
    ~SharedMemory();
    SharedMemory(SharedMemory &&other) noexcept;
    SharedMemory &operator=(SharedMemory &&) = delete;
    SharedMemory(const SharedMemory &) = delete;
    SharedMemory &operator=(const SharedMemory &) = delete;

    void *data() const { return reinterpret_cast<void *>(range_.base); }
    std::size_t size() const { return requested_; } // what was asked for
    const SharedRange &range() const { return range_; }

private:
    SharedRange range_;
    std::size_t requested_ = 0;
};

// The shared allocation of this process that holds all of [address, address + length), if
// one does.  Thread-safe; a lookup is a shared lock and a map search.
std::optional<SharedRange> find_shared_memory(const void *address, std::size_t length);

// How many shared allocations this process holds (for tests of their release).
std::size_t shared_memory_count();

} // namespace ndk
