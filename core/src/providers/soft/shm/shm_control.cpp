#include "providers/soft/shm/shm_control.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

namespace ndk::soft::shm {

namespace {

// The most descriptors one packet carries (the Reply: segment and two doorbells), plus room
// to see a peer that sent more, so they are closed rather than cut off by MSG_CTRUNC.
constexpr std::size_t kMaxFds = 8;

bool peer_closed(int error) { return error == EPIPE || error == ECONNRESET; }

} // namespace

PacketStatus send_packet(int socket, std::span<const std::byte> payload, std::span<const int> fds)
{
    if (payload.empty() || fds.size() > kMaxFds)
        throw std::system_error(EINVAL, std::generic_category(), "control packet");
    iovec data{const_cast<std::byte *>(payload.data()), payload.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(kMaxFds * sizeof(int))] = {};
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    if (!fds.empty()) {
        message.msg_control = control;
        message.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
        cmsghdr *c = CMSG_FIRSTHDR(&message);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
        std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
    }
    ssize_t sent;
    do
        sent = ::sendmsg(socket, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (sent < 0 && errno == EINTR);
    if (sent >= 0)
        return PacketStatus::ok;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
        return PacketStatus::would_block;
    if (peer_closed(errno))
        return PacketStatus::closed;
    throw std::system_error(errno, std::generic_category(), "sendmsg on a control socket");
}

std::vector<os::UniqueFd> take_rights(msghdr &message)
{
    std::vector<os::UniqueFd> received;
    for (cmsghdr *c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        const std::size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < n; ++i) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            received.emplace_back(fd);
        }
    }
    return received;
}

ReceivedPacket receive_packet(int socket, std::span<std::byte> payload, std::span<os::UniqueFd> fds)
{
    iovec data{payload.data(), payload.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(kMaxFds * sizeof(int))] = {};
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    ssize_t got;
    do
        got = ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    while (got < 0 && errno == EINTR);
    ReceivedPacket result;
    if (got < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return result;
        if (peer_closed(errno)) {
            result.status = PacketStatus::closed;
            return result;
        }
        throw std::system_error(errno, std::generic_category(), "recvmsg on a control socket");
    }
    std::vector<os::UniqueFd> received = take_rights(message);
    if (got == 0) {
        result.status = PacketStatus::closed;
        return result;
    }
    if ((message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 || received.size() > fds.size()) {
        result.status = PacketStatus::malformed;
        return result;
    }
    for (std::size_t i = 0; i < received.size(); ++i)
        fds[i] = std::move(received[i]);
    result.status = PacketStatus::ok;
    result.length = static_cast<std::size_t>(got);
    result.fd_count = received.size();
    return result;
}

bool at_eof(int socket)
{
    char byte;
    ssize_t got;
    do
        got = ::recv(socket, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    while (got < 0 && errno == EINTR);
    return got == 0 || (got < 0 && peer_closed(errno));
}

bool wait_readable(int fd, std::chrono::milliseconds limit)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd entry{fd, POLLIN, 0};
        const int ready = ::poll(&entry, 1, left.count() > 0 ? static_cast<int>(left.count()) : 0);
        if (ready >= 0)
            return ready > 0;
        if (errno != EINTR)
            throw std::system_error(errno, std::generic_category(), "poll");
    }
}

} // namespace ndk::soft::shm
