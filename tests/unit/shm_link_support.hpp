// Helpers of the shm link tests (test_shm_link.cpp, test_shm_progress.cpp): establishing a
// link between the parent and a forked child with every wait bounded (a child that fails
// makes the parent's wait end at its pidfd, not at the CTest timeout), and the numbered
// messages whose bytes show any loss, repeat, reordering or tear.
#pragma once

#include "providers/soft/shm/shm_control.hpp"
#include "providers/soft/shm/shm_link.hpp"
#include "shm_support.hpp"

#include <chrono>
#include <cstring>
#include <optional>
#include <utility>
#include <stdexcept>
#include <vector>

namespace ndk::soft::shm::test_support {

inline constexpr std::chrono::milliseconds kStepLimit{5000};

inline Endpoint ipv4(std::uint8_t last, std::uint16_t port)
{
    Endpoint e;
    e.address = {192, 0, 2, last};
    e.port = port;
    return e;
}

inline std::span<const std::byte> text(const char *s) { return std::as_bytes(std::span(s, std::strlen(s))); }

inline std::string as_text(const std::vector<std::byte> &bytes)
{
    return {reinterpret_cast<const char *>(bytes.data()), bytes.size()};
}

// Poll an establishment until it moves on from `waiting`, at most kStepLimit.
template <class Connection>
Establish next_step(Connection &connection)
{
    const auto deadline = std::chrono::steady_clock::now() + kStepLimit;
    for (;;) {
        const Establish state = connection.poll();
        if (state != Establish::waiting)
            return state;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0 || !wait_readable(connection.fd(), left))
            throw std::runtime_error("establishment step timed out");
    }
}

// The parent's side: the child's connection on `acceptor` (the child's pidfd ends the wait
// if it exits first), its request read.
inline IncomingConnection incoming_from(ShmAcceptor &acceptor, const os::PeerWatch &child)
{
    const auto deadline = std::chrono::steady_clock::now() + kStepLimit;
    for (;;) {
        if (auto connection = acceptor.accept())
            return std::move(*connection);
        pollfd fds[2] = {{acceptor.fd(), POLLIN, 0}, {child.fd(), POLLIN, 0}};
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0 || ::poll(fds, 2, static_cast<int>(left.count())) == 0)
            throw std::runtime_error("no connection in time");
        if ((fds[1].revents & POLLIN) != 0 && (fds[0].revents & POLLIN) == 0)
            throw std::runtime_error("child exited without connecting");
    }
}

// The whole passive side: accept with `reply`, wait for ReadyToUse.
inline ShmLink accept_link(ShmAcceptor &acceptor, const os::PeerWatch &child, const Reply &reply,
                           ReceivedRequest *request = nullptr, LinkGeometry geometry = {})
{
    IncomingConnection incoming = incoming_from(acceptor, child);
    if (next_step(incoming) != Establish::request)
        throw std::runtime_error("no connect request");
    if (request != nullptr)
        *request = incoming.request();
    if (!incoming.accept(reply, geometry))
        throw std::runtime_error("peer gone before the reply");
    if (next_step(incoming) != Establish::established)
        throw std::runtime_error("no ReadyToUse");
    return incoming.take_link();
}

// The whole active side (in a child): connect to `destination`, complete on the Reply.
inline std::optional<ShmLink> connect_link(const std::filesystem::path &registry,
                                           const Endpoint &destination,
                                           std::span<const std::byte> private_data = {},
                                           ReadLimits limits = {4, 4})
{
    OutgoingConnection outgoing = OutgoingConnection::connect(
        EndpointRegistry(registry), {ipv4(9, 1), destination, limits, private_data});
    if (next_step(outgoing) != Establish::replied)
        return std::nullopt;
    return outgoing.complete();
}

// Both ends of a link in this process (the active side first): what the tests of threads
// within one process use, where TSan can see both sides.
inline std::pair<ShmLink, ShmLink> link_pair_in_process(const std::filesystem::path &registry,
                                                        const Endpoint &listen)
{
    ShmAcceptor acceptor{EndpointRegistry(registry), listen};
    OutgoingConnection outgoing =
        OutgoingConnection::connect(EndpointRegistry(registry), {ipv4(9, 1), listen, {}, {}});
    std::optional<IncomingConnection> incoming = acceptor.accept();
    if (!incoming || next_step(*incoming) != Establish::request || !incoming->accept(Reply{}) ||
        next_step(outgoing) != Establish::replied)
        throw std::runtime_error("in-process establishment failed");
    std::optional<ShmLink> active = outgoing.complete();
    if (!active || next_step(*incoming) != Establish::established)
        throw std::runtime_error("in-process establishment did not complete");
    return {std::move(*active), incoming->take_link()};
}

// Message `n` of a stream: 1 to `max` bytes that depend on n.
inline std::vector<std::byte> numbered(std::uint32_t n, std::size_t max)
{
    std::vector<std::byte> m(1 + (n * 7919u) % max);
    for (std::size_t i = 0; i < m.size(); ++i)
        m[i] = static_cast<std::byte>((n >> (8 * (i % 4))) ^ (i * 13));
    return m;
}

// Send, waiting while the ring is full; false once the peer is gone.
inline bool send_while_alive(ShmLink &link, std::span<const std::byte> message)
{
    for (;;) {
        const RingStatus status = link.send_bytes(message);
        if (status == RingStatus::ok)
            return true;
        if (status != RingStatus::full || link.peer_gone())
            return false;
        ::sched_yield();
    }
}

// Receive the next message, sleeping on the doorbell when the ring is empty; false when the
// peer is gone (or nothing came in kStepLimit).
inline bool receive_while_alive(ShmLink &link, std::vector<std::byte> &out, std::size_t &length,
                                unsigned spin = DoorbellSleeper::kDefaultSpin)
{
    for (;;) {
        const RingStatus status = link.receive_bytes(out, length);
        if (status == RingStatus::ok)
            return true;
        if (status != RingStatus::empty ||
            link.wait_for_messages(kStepLimit, spin) != ShmLink::Wait::ready)
            return false;
    }
}

} // namespace ndk::soft::shm::test_support
