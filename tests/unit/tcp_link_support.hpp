// Helpers of the TCP link tests (test_tcp_*.cpp): establishing a pair of links over loopback
// (127.0.0.1 or ::1 only) with every wait bounded by a deadline (a stuck step fails the test
// with what it was waiting for, never at the CTest timeout), a sink that rebuilds whole
// messages from segments as a provider would place them (tagged at their offset, untagged by
// MSN and MO), and a raw socket that plays a peer byte by byte.
#pragma once

#include "providers/soft/iwarp/ddp_rdmap.hpp"
#include "providers/soft/iwarp/mpa.hpp"
#include "providers/soft/iwarp/mpa_fpdu.hpp"
#include "providers/soft/tcp/tcp_establish.hpp"
#include "providers/soft/tcp/tcp_link.hpp"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ndk::soft::tcp::test_support {

using Clock = std::chrono::steady_clock;
inline constexpr std::chrono::milliseconds kStepLimit{10000};

inline std::vector<std::byte> bytes_of(const std::string &text)
{
    const auto *begin = reinterpret_cast<const std::byte *>(text.data());
    return {begin, begin + text.size()};
}

inline std::string text_of(std::span<const std::byte> bytes)
{
    return {reinterpret_cast<const char *>(bytes.data()), bytes.size()};
}

// n bytes that differ per seed and position, so that a misplaced or lost byte shows.
inline std::vector<std::byte> pattern(std::size_t n, unsigned seed)
{
    std::vector<std::byte> out(n);
    for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<std::byte>(seed * 131 + i * 7 + (i >> 8));
    return out;
}

inline TcpAddress loopback(const std::string &ip, std::uint16_t port = 0)
{
    const auto address = TcpAddress::parse(ip, port);
    if (!address)
        throw std::invalid_argument("not an address: " + ip);
    return *address;
}

inline int remaining_ms(Clock::time_point deadline)
{
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Wait for any of `fds` to be ready for `events`, at most until the deadline; throws on timeout
// with `what` so that the failure names the step.
inline void wait_for(std::vector<int> fds, short events, Clock::time_point deadline,
                     const std::string &what)
{
    std::vector<pollfd> set;
    for (int fd : fds)
        set.push_back({fd, events, 0});
    for (;;) {
        const int left = remaining_ms(deadline);
        if (left == 0)
            throw std::runtime_error("timed out waiting for " + what);
        const int n = ::poll(set.data(), set.size(), left);
        if (n > 0)
            return;
    }
}

// A sink that rebuilds messages from their segments the way a provider places them: an
// untagged message's segments at their MO (each where the last ended), a tagged one's at
// tagged offset minus the message's first offset.
class MessageSink : public SegmentSink {
public:
    struct Message {
        iwarp::RdmapOpcode opcode{};
        std::uint32_t stag = 0;      // tagged
        std::uint64_t offset = 0;    // tagged: the first segment's offset
        std::uint32_t msn = 0;       // untagged
        std::uint32_t invalidate_stag = 0;
        std::vector<std::byte> bytes;
        std::size_t segments = 0;
        std::optional<iwarp::ReadRequest> read_request;
        std::optional<std::uint8_t> terminate_layer, terminate_etype, terminate_code;
    };

    std::vector<Message> messages; // complete ones, in order of their last segment
    bool misplaced = false;        // a segment not where the previous one ended

    void segment(const InboundSegment &segment) override
    {
        const auto &h = segment.header;
        const bool tagged = iwarp::is_tagged(h.opcode);
        Message &m = tagged ? open_tagged_[h.opcode == iwarp::RdmapOpcode::rdma_write]
                            : open_untagged_[h.queue];
        if (m.segments == 0) {
            m.opcode = h.opcode;
            m.stag = h.stag;
            m.offset = h.tagged_offset;
            m.msn = h.msn;
            m.invalidate_stag = h.invalidate_stag;
        }
        const std::uint64_t at = tagged ? h.tagged_offset - m.offset : h.message_offset;
        if (at != m.bytes.size() || h.opcode != m.opcode)
            misplaced = true;
        m.bytes.insert(m.bytes.end(), segment.payload.begin(), segment.payload.end());
        ++m.segments;
        m.read_request = segment.read_request;
        if (segment.terminate) {
            m.terminate_layer = segment.terminate->layer;
            m.terminate_etype = segment.terminate->etype;
            m.terminate_code = segment.terminate->code;
        }
        if (segment.message_complete) {
            messages.push_back(std::move(m));
            m = Message{};
        }
    }

private:
    std::map<bool, Message> open_tagged_;
    std::map<std::uint32_t, Message> open_untagged_;
};

// Receive on `receiver` (flushing `sender`'s queue meanwhile) until `done` or the link ends;
// throws on the deadline.
inline TcpLinkState receive_until(TcpLink &receiver, SegmentSink &sink,
                                  const std::function<bool()> &done, TcpLink *sender = nullptr,
                                  std::chrono::milliseconds limit = kStepLimit)
{
    const auto deadline = Clock::now() + limit;
    for (;;) {
        if (sender != nullptr)
            sender->flush();
        const TcpLinkState state = receiver.receive(sink);
        if (done() || state != TcpLinkState::open)
            return state;
        std::vector<pollfd> set{{receiver.fd(), POLLIN, 0}};
        if (sender != nullptr && sender->queued() > 0)
            set.push_back({sender->fd(), POLLOUT, 0});
        if (remaining_ms(deadline) == 0)
            throw std::runtime_error("timed out receiving");
        ::poll(set.data(), set.size(), std::min(remaining_ms(deadline), 100));
    }
}

struct LinkPair {
    std::unique_ptr<TcpLink> active;
    std::unique_ptr<TcpLink> passive;
    iwarp::MpaFrame request; // as the passive side read it
    iwarp::MpaFrame reply;   // as the active side read it
};

struct PairSettings {
    iwarp::MpaSettings active;
    iwarp::MpaSettings passive;
    std::vector<std::byte> request_data;
    std::vector<std::byte> reply_data;
    TcpEstablishOptions options;
    bool bind_source = false; // the active side binds the same loopback address first
};

// An established pair over `ip` (127.0.0.1 or ::1), both sides driven from this thread.
inline LinkPair establish_pair(const std::string &ip, const PairSettings &settings = {})
{
    const auto deadline = Clock::now() + kStepLimit;
    TcpAcceptor acceptor(loopback(ip), settings.options);
    TcpConnectParameters parameters;
    parameters.destination = acceptor.local_address();
    parameters.settings = settings.active;
    parameters.private_data = settings.request_data;
    parameters.options = settings.options;
    if (settings.bind_source)
        parameters.source = loopback(ip);
    auto outgoing = OutgoingTcpConnection::connect(parameters);

    std::optional<IncomingTcpConnection> incoming;
    LinkPair pair;
    while (!pair.active || !pair.passive) {
        if (!incoming)
            incoming = acceptor.accept();
        if (!pair.active) {
            const TcpEstablish step = outgoing.poll();
            if (step == TcpEstablish::replied) {
                pair.reply = outgoing.reply();
                pair.active = outgoing.complete();
            } else if (step != TcpEstablish::waiting) {
                throw std::runtime_error(
                    "active establishment: step " + std::to_string(static_cast<int>(step)) +
                    ", failure " + std::to_string(static_cast<int>(outgoing.failure())) +
                    ", refusal " + std::to_string(static_cast<int>(outgoing.refusal())));
            }
        }
        if (incoming && !pair.passive) {
            TcpEstablish step = incoming->poll();
            if (step == TcpEstablish::request) {
                pair.request = incoming->request();
                step = incoming->accept(settings.passive, settings.reply_data);
            }
            if (step == TcpEstablish::established)
                pair.passive = incoming->take_link();
            else if (step != TcpEstablish::waiting)
                throw std::runtime_error(
                    "passive establishment: step " + std::to_string(static_cast<int>(step)) +
                    ", failure " + std::to_string(static_cast<int>(incoming->failure())) +
                    ", refusal " + std::to_string(static_cast<int>(incoming->refusal())));
        }
        if (pair.active && pair.passive)
            break;
        // Readable ones; a connect in progress shows as writable, so each wait is capped
        // short: the loop looks again rather than sleeping on a socket that will not be.
        std::vector<pollfd> set{{acceptor.fd(), POLLIN, 0}};
        if (outgoing.fd() >= 0)
            set.push_back({outgoing.fd(), POLLIN, 0});
        if (incoming && incoming->fd() >= 0)
            set.push_back({incoming->fd(), POLLIN, 0});
        if (remaining_ms(deadline) == 0)
            throw std::runtime_error("timed out establishing");
        ::poll(set.data(), set.size(), std::min(remaining_ms(deadline), 20));
    }
    return pair;
}

// A plain blocking TCP socket that speaks to a link byte by byte: a peer that can send
// anything, garbage included.
class RawPeer {
public:
    explicit RawPeer(const TcpAddress &to) : fd_(::socket(to.family(), SOCK_STREAM | SOCK_CLOEXEC, 0))
    {
        if (fd_ < 0 || ::connect(fd_, to.data(), to.size()) != 0)
            throw std::runtime_error("raw connect failed");
        // Each send() goes at once (Nagle would hold an RTR behind the unacknowledged request).
        const int one = 1;
        ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    ~RawPeer() { close(); }
    RawPeer(const RawPeer &) = delete;
    RawPeer &operator=(const RawPeer &) = delete;

    int fd() const { return fd_; }
    void close()
    {
        if (fd_ >= 0)
            ::close(fd_);
        fd_ = -1;
    }
    void send(std::span<const std::byte> bytes)
    {
        std::size_t at = 0;
        while (at < bytes.size()) {
            const ssize_t n = ::send(fd_, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
            if (n <= 0)
                throw std::runtime_error("raw send failed");
            at += static_cast<std::size_t>(n);
        }
    }
    void shutdown_write() { ::shutdown(fd_, SHUT_WR); }
    // Close with a reset (SO_LINGER 0) instead of a FIN.
    void reset()
    {
        const linger hard{1, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
        close();
    }

    // Read until `complete(bytes so far)` or EOF; throws on the deadline.
    std::vector<std::byte> read_until(const std::function<bool(std::span<const std::byte>)> &complete,
                                      bool *eof = nullptr)
    {
        const auto deadline = Clock::now() + kStepLimit;
        while (!complete(received_)) {
            wait_for({fd_}, POLLIN, deadline, "raw peer read");
            std::byte chunk[4096];
            const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
            if (n <= 0) {
                if (eof != nullptr)
                    *eof = true;
                break;
            }
            received_.insert(received_.end(), chunk, chunk + n);
        }
        return received_;
    }
    // Drop the first `n` bytes read (a frame handled).
    void consume(std::size_t n) { received_.erase(received_.begin(), received_.begin() + static_cast<std::ptrdiff_t>(n)); }

private:
    int fd_ = -1;
    std::vector<std::byte> received_;
};

// A whole FPDU around one DDP segment (headers by the codec), for a raw peer.
inline std::vector<std::byte> fpdu_of(const iwarp::SegmentHeader &header,
                                      std::span<const std::byte> payload, bool crc)
{
    iwarp::ParsedSegment segment;
    segment.header = header;
    segment.payload = payload;
    return iwarp::encode_fpdu(iwarp::encode_segment(segment), crc);
}

} // namespace ndk::soft::tcp::test_support
