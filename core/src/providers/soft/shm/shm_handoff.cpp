#include "providers/soft/shm/shm_handoff.hpp"

#include "providers/soft/shm/shm_control.hpp"

#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <vector>
#include <system_error>

namespace ndk::soft::shm {

namespace {

[[noreturn]] void fail(int error, const char *what)
{
    throw std::system_error(error, std::generic_category(), what);
}

// An abstract address: sun_path starts with a NUL, and the length given to the kernel
// delimits the name (no terminating NUL is part of it).
socklen_t abstract_address(std::string_view name, sockaddr_un &address)
{
    std::memset(&address, 0, sizeof address);
    address.sun_family = AF_UNIX;
    if (name.empty() || name.size() + 1 > sizeof address.sun_path)
        fail(ENAMETOOLONG, "abstract socket name");
    std::memcpy(address.sun_path + 1, name.data(), name.size());
    return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

// A socket on which `op` (bind or connect) was done with the abstract address `name`.
os::UniqueFd socket_at(std::string_view name, int (*op)(int, const sockaddr *, socklen_t),
                   const char *what)
{
    os::UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (!fd)
        fail(errno, "socket(AF_UNIX)");
    sockaddr_un address;
    const socklen_t length = abstract_address(name, address);
    if (op(fd.get(), reinterpret_cast<const sockaddr *>(&address), length) != 0)
        fail(errno, what);
    return fd;
}

} // namespace

os::UniqueFd listen_abstract(std::string_view name)
{
    os::UniqueFd fd = socket_at(name, &::bind, "bind of an abstract socket");
    if (::listen(fd.get(), SOMAXCONN) != 0)
        fail(errno, "listen");
    return fd;
}

os::UniqueFd accept_connection(int listener)
{
    int fd;
    do
        fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        fail(errno, "accept");
    return os::UniqueFd(fd);
}

os::UniqueFd connect_abstract(std::string_view name)
{
    return socket_at(name, &::connect, "connect to an abstract socket");
}

PeerCredentials peer_credentials(int connection)
{
    ucred credentials{};
    socklen_t length = sizeof credentials;
    if (::getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0)
        fail(errno, "SO_PEERCRED");
    return {credentials.pid, credentials.uid, credentials.gid};
}

void send_fd(int connection, int fd, std::span<const std::byte> payload)
{
    if (payload.empty())
        fail(EINVAL, "send_fd without payload");
    iovec data{const_cast<std::byte *>(payload.data()), payload.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr *c = CMSG_FIRSTHDR(&message);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    ssize_t sent;
    // MSG_NOSIGNAL: a peer that died must become EPIPE here, not SIGPIPE for the process.
    do
        sent = ::sendmsg(connection, &message, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    if (sent < 0)
        fail(errno, "sendmsg with SCM_RIGHTS");
}

os::UniqueFd receive_fd(int connection, std::span<std::byte> payload, std::size_t &received)
{
    iovec data{payload.data(), payload.size()};
    // Room for a few descriptors, so that a peer sending too many is seen (and they are
    // closed) rather than silently truncated with MSG_CTRUNC.
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))] = {};
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    ssize_t got;
    do
        got = ::recvmsg(connection, &message, MSG_CMSG_CLOEXEC);
    while (got < 0 && errno == EINTR);
    if (got < 0)
        fail(errno, "recvmsg with SCM_RIGHTS");
    std::vector<os::UniqueFd> fds = take_rights(message); // closed unless exactly one came
    if (got == 0)
        fail(ECONNRESET, "peer closed before sending its segment");
    if (fds.size() != 1 || (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0)
        fail(EPROTO, "handoff message without exactly one descriptor");
    os::UniqueFd fd = std::move(fds.front());
    received = static_cast<std::size_t>(got);
    return fd;
}

} // namespace ndk::soft::shm
