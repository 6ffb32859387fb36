// Handing a shm segment to a peer process: a connection on an abstract-namespace Unix socket,
// over which the memfd travels as SCM_RIGHTS ancillary data.  Abstract names live in the
// kernel, not in the filesystem, so they vanish with the last descriptor (a SIGKILLed
// listener leaves no name behind), and a connection's end is an EOF the survivor reads.
//
// Abstract sockets carry no file permissions: any process in the same network namespace can
// connect.  The accepting side therefore checks the peer's credentials (peer_credentials())
// before it hands over anything.
#pragma once

#include "providers/soft/os/unique_fd.hpp"

#include <sys/types.h>

#include <cstddef>
#include <span>
#include <string_view>

namespace ndk::soft::shm {

// SOCK_SEQPACKET: connection-oriented like a stream (an EOF when the peer goes) and keeping
// message boundaries, so a descriptor and the bytes that describe it arrive together.
// Throws std::system_error; EADDRINUSE when another socket holds the name.
os::UniqueFd listen_abstract(std::string_view name);
os::UniqueFd accept_connection(int listener);
// ECONNREFUSED when nobody listens on the name.
os::UniqueFd connect_abstract(std::string_view name);

struct PeerCredentials {
    pid_t pid;
    uid_t uid;
    gid_t gid;
};
// What the kernel recorded for the other end when it connected (SO_PEERCRED): not a claim
// the peer makes, so it can be trusted for the uid check.
PeerCredentials peer_credentials(int connection);

// One message: `payload` (at least one byte: a message of ancillary data alone is not
// portable) and `fd` as SCM_RIGHTS.  Throws std::system_error (EPIPE when the peer is gone).
void send_fd(int connection, int fd, std::span<const std::byte> payload);

// The message send_fd() sent: its payload copied into `payload` and its descriptor, received
// close-on-exec.  `received` is the payload's length.  Throws std::system_error: ECONNRESET
// for an EOF (the peer went before sending), EPROTO for a message without exactly one
// descriptor or longer than `payload` (any descriptor that came with it is closed).
os::UniqueFd receive_fd(int connection, std::span<std::byte> payload, std::size_t &received);

} // namespace ndk::soft::shm
