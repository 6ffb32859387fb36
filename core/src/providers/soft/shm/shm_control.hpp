// Packets on a connection's control socket (the SOCK_SEQPACKET connection of shm_handoff.hpp):
// one establishment message each, with up to a few descriptors as SCM_RIGHTS (the Reply
// carries the segment and both doorbells' eventfds at once), sent and received without
// blocking, so that the soft provider drives establishment from its own poll loop.
// shm_handoff's send_fd/receive_fd block and carry exactly one descriptor: the segment
// handoff of the building blocks' tests; these are what a connection's exchange needs.
#pragma once

#include "providers/soft/os/unique_fd.hpp"

#include <chrono>
#include <cstddef>
#include <span>
#include <vector>

struct msghdr;

namespace ndk::soft::shm {

enum class PacketStatus {
    ok,
    would_block, // nothing to read yet (receive), or the socket's buffer is full (send)
    closed,      // the peer closed its end or died (EOF, EPIPE, ECONNRESET)
    malformed,   // truncated, or more descriptors than asked for (all of them closed)
};

// Never blocks, never raises SIGPIPE.  Throws std::system_error for other failures.
PacketStatus send_packet(int socket, std::span<const std::byte> payload,
                         std::span<const int> fds = {});

struct ReceivedPacket {
    PacketStatus status = PacketStatus::would_block;
    std::size_t length = 0;   // payload bytes
    std::size_t fd_count = 0; // descriptors placed in the caller's span, in order
};

// The next packet into `payload`, its descriptors (close-on-exec) into `fds`.  A packet longer
// than `payload` or with more descriptors than `fds` holds is `malformed` and consumed.  Never
// blocks.  Throws std::system_error for failures other than those above.
// Every descriptor a received message brought (SCM_RIGHTS), owned at once so that none leaks
// whatever the caller decides next: a peer may send more than was asked for.
std::vector<os::UniqueFd> take_rights(msghdr &message);

ReceivedPacket receive_packet(int socket, std::span<std::byte> payload, std::span<os::UniqueFd> fds);

// Has the peer closed its end?  Looks without consuming (a packet waiting is not an EOF).
bool at_eof(int socket);

// Wait at most `limit` for `fd` to become readable (or hung up); true when it is.
bool wait_readable(int fd, std::chrono::milliseconds limit);

} // namespace ndk::soft::shm
