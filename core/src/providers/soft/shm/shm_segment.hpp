// A shared memory segment two processes map: an anonymous memfd, sized once and sealed so
// that neither side can shrink it under the other (a shrunk mapping turns the peer's next
// access into SIGBUS, a crash instead of a connection error).  The segment has no name in
// any filesystem: it reaches the peer as a file descriptor over a Unix socket
// (shm_handoff.hpp), so a process killed with SIGKILL leaves nothing behind in /dev/shm.
// docs/transport.md, "shm", says why.
#pragma once

#include "providers/soft/os/unique_fd.hpp"

#include <cstddef>
#include <span>
#include <string>

namespace ndk::soft::shm {

class ShmSegment {
public:
    // A new zero-filled segment of `size` bytes (rounded up to whole pages), mapped shared.
    // `debug_name` only shows in /proc/<pid>/fd and /proc/<pid>/maps ("memfd:<name>").
    // Throws std::system_error when the kernel refuses (limits, no memory).
    static ShmSegment create(const std::string &debug_name, std::size_t size);

    // Map a segment received from a peer.  Its size is the memfd's own, not one the peer
    // claims, and it must carry the seals create() puts on it: a peer could otherwise hand
    // over a file it can still truncate.  Takes the descriptor whether or not it succeeds;
    // throws std::system_error (EINVAL for a descriptor that is not such a segment).
    static ShmSegment adopt(os::UniqueFd fd);

    ShmSegment() = default;
    ShmSegment(ShmSegment &&other) noexcept;
    ShmSegment &operator=(ShmSegment &&other) noexcept;
    ShmSegment(const ShmSegment &) = delete;
    ShmSegment &operator=(const ShmSegment &) = delete;
    ~ShmSegment();

    std::byte *data() const { return base_; }
    std::size_t size() const { return size_; }
    std::span<std::byte> bytes() const { return {base_, size_}; }
    // The descriptor to hand to a peer (the segment keeps owning it).
    int fd() const { return fd_.get(); }
    // Which memfd this is, the same in every process that maps it ("device:inode"); empty
    // when the kernel does not say.
    std::string file_id() const;

private:
    ShmSegment(os::UniqueFd fd, std::byte *base, std::size_t size);
    void unmap();

    os::UniqueFd fd_;
    std::byte *base_ = nullptr;
    std::size_t size_ = 0;
};

} // namespace ndk::soft::shm
