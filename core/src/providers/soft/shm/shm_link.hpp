// One soft connection between two processes, and the exchange that establishes it.
//
// A ShmLink is what an established connection holds: the segment (a ring each way and their
// doorbells, shm_doorbell.hpp), the peer's identity with a PeerWatch on it, and the control
// socket the exchange ran over, kept open because its EOF is a second death signal (and a
// closed link).  Its layout, written by the passive side before the handoff:
//
//   [0]        LinkHeader: magic, slot count, slot size (the active side checks them)
//   [64]       DoorbellWord of the ring to the active side (the active side sleeps on it)
//   [128]      DoorbellWord of the ring to the passive side
//   [192]      ring to the active side, then (cache-line aligned) the ring to the passive side
//
// Each ring's producer also publishes, in its tail's cache line (RingHeader::beside_tail), its
// success answers to the other side's requests: "every request of the peer up to this
// sequence answered STATUS_SUCCESS".  The target answers in order, so one counter says what
// an Ack message per request said, without a ring slot, a decode or a lock per answer
// (docs/transport.md, "Answers"); beside the tail, a side polling its ring reads both in one
// line.
//
// The establishment (docs/transport.md, "Connections between processes"):
//
//   active (OutgoingConnection)                         passive (ShmAcceptor, Incoming...)
//   registry.find(dst) -> socket name, owner
//   connect, check SO_PEERCRED against the owner  --->  accept, check SO_PEERCRED uid
//   ConnectRequest                                --->  check sender = SO_PEERCRED pid
//                                                 <---  Reply + [memfd, eventfd x2]  or  Reject
//   ReadyToUse (CompleteConnect) or RefuseReply   --->
//   (either side, before it is established: Abandon; an EOF at any step is a failure)
//
// Nothing here blocks beyond a bounded time: every step is a non-blocking call that reports
// `waiting` until the peer's packet is there, and fd() is what to poll for it (the progress
// thread or the caller's own loop).  Timeouts are the caller's: it calls abandon().
//
// Threads: a link's send side and receive side may be used by two threads at once (one ring
// each), but each by one thread at a time (SPSC): the soft provider's per-connection send and
// receive locks.  The establishment objects are used by one thread at a time.
#pragma once

#include "providers/soft/os/peer_watch.hpp"
#include "providers/soft/shm/shm_doorbell.hpp"
#include "providers/soft/shm/shm_handoff.hpp"
#include "providers/soft/shm/shm_messages.hpp"
#include "providers/soft/shm/shm_registry.hpp"
#include "providers/soft/shm/shm_ring.hpp"
#include "providers/soft/shm/shm_segment.hpp"

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ndk::soft::shm {

struct LinkGeometry {
    std::uint32_t slot_count = 256; // per direction
    std::uint32_t slot_size = 512;  // bytes per slot: a Send carries up to 468 inline bytes
};

enum class LinkSide { active, passive };

// Reads one side accepts at once (IRD) and issues at once (ORD).  Each side announces its own
// in the exchange; what the consumer is told to use is the soft provider's business.
struct ReadLimits {
    std::uint32_t inbound = 0;
    std::uint32_t outbound = 0;
    bool operator==(const ReadLimits &) const = default;
};

// The consumer end of a link's ring, able to look without taking (for the doorbell's re-check).
class LinkConsumer : public RingConsumer {
public:
    using RingConsumer::RingConsumer;
    bool has_messages() const
    {
        // head is ours (only we write it); tail is the producer's, read with acquire as a pop
        // would.
        return header_->tail.load(std::memory_order_acquire) !=
               header_->head.load(std::memory_order_relaxed);
    }
};

class ShmLink {
public:
    ShmLink(ShmLink &&) noexcept = default;
    ShmLink &operator=(ShmLink &&) noexcept = default;

    LinkSide side() const { return side_; }
    const os::ProcessIdentity &peer() const { return peer_; }
    // This end's name and the peer's, the same in both processes: the segment and the side
    // (the knob `quiescent` pairs the ends it sees, soft_quiet.hpp).  Empty when the kernel
    // does not say which segment this is.
    std::string end_name() const;
    std::string peer_end_name() const;
    // The read limits each side announced in the exchange.
    const ReadLimits &local_limits() const { return local_limits_; }
    const ReadLimits &peer_limits() const { return peer_limits_; }
    std::size_t max_message() const { return inbound_.max_message(); }

    // ---- sending (one thread at a time) ----
    // Push one message and ring the peer's doorbell if it sleeps.  `full`: nothing was sent;
    // the caller retries later (and checks peer_gone(): a dead consumer never frees a slot).
    RingStatus send_bytes(std::span<const std::byte> message);
    // encode() into the next slot and publish it; `too_large` when the message does not fit.
    RingStatus send(const Message &message);
    // How many sends had to wake the peer with a system call.
    std::uint64_t doorbells_rung() const { return rung_; }
    // Every request of the peer up to `sequence` answered STATUS_SUCCESS (stored with release
    // beside our ring's tail): the peer's doorbell is rung if it sleeps, as for a message.
    // Sequences only grow.
    void publish_answered(std::uint64_t sequence);

    // ---- receiving (one thread at a time) ----
    RingStatus receive_bytes(std::span<std::byte> out, std::size_t &length);
    // The next message decoded into `message` (spans into `buffer`, which must hold
    // max_message() bytes).  `ok` with Malformed when the peer wrote garbage.
    RingStatus receive(std::span<std::byte> buffer, Message &message);
    // The peer's answers counter when it moved since the last call, else nothing.  Call it after
    // each message taken and before handling it (and when the ring is empty): the peer
    // publishes its counter before any message that follows the answers, so an error Ack never
    // overtakes the successes before it.
    std::optional<std::uint64_t> take_answered();
    // Messages in the ring, or answers the peer published that take_answered() has not taken.
    bool has_messages() const
    {
        return inbound_.has_messages() ||
               inbound_.beside_tail().load(std::memory_order_acquire) !=
                   answered_taken_.value.load(std::memory_order_relaxed);
    }

    enum class Wait { ready, timeout, peer_gone };
    // Until a message is there, at most `limit`: spin, then sleep on the doorbell, the peer's
    // pidfd and the control socket.  `peer_gone` (the peer exited or closed the link) only
    // once the ring is empty: its last messages count.
    Wait wait_for_messages(std::chrono::milliseconds limit,
                           unsigned spin = DoorbellSleeper::kDefaultSpin);
    std::uint64_t sleeps() const { return sleeper_.sleeps(); }

    // For an outside poll loop (shm_progress.hpp): arm before waiting on doorbell_fd(); false
    // when messages arrived meanwhile (do not sleep).  doorbell_woken() once awake.
    bool arm_doorbell() { return sleeper_.arm([this] { return has_messages(); }); }
    void doorbell_woken() { sleeper_.woken(); }

    // Readable when this side's doorbell was rung.
    int doorbell_fd() const { return sleeper_.fd(); }
    // Readable when the peer exited.
    int peer_fd() const { return watch_.fd(); }
    // Readable at EOF: the peer closed the link or died.  Nothing else travels on it once the
    // link is established (reserved for later control: more memory, a re-handoff).
    int control_fd() const { return control_.get(); }
    // The peer exited or closed its end.  Does not block.
    bool peer_gone() const;

private:
    friend class IncomingConnection;
    friend class OutgoingConnection;
    ShmLink(LinkSide side, ShmSegment segment, os::UniqueFd control, os::PeerWatch watch,
            os::ProcessIdentity peer, os::UniqueFd to_active, os::UniqueFd to_passive, ReadLimits local,
            ReadLimits peer_limits);
    // After a push: rings the peer's doorbell if it sleeps.
    RingStatus published(RingStatus status);

    LinkSide side_;
    ShmSegment segment_;
    os::UniqueFd control_;
    os::PeerWatch watch_;
    os::ProcessIdentity peer_;
    LinkGeometry geometry_; // a private copy, checked once
    RingProducer outbound_;
    LinkConsumer inbound_;
    DoorbellRinger ringer_;
    DoorbellSleeper sleeper_;
    // What take_answered() last returned: written by the receiving thread, read by any thread
    // that asks has_messages() (quiescence).
    struct Taken {
        std::atomic<std::uint64_t> value{0};
        Taken() = default;
        Taken(Taken &&other) noexcept : value(other.value.load(std::memory_order_relaxed)) {}
        Taken &operator=(Taken &&other) noexcept
        {
            value.store(other.value.load(std::memory_order_relaxed), std::memory_order_relaxed);
            return *this;
        }
    } answered_taken_;
    std::uint64_t rung_ = 0;
    ReadLimits local_limits_;
    ReadLimits peer_limits_;
};

// Where establishment stands, for either side.
enum class Establish {
    waiting,     // nothing new: poll fd() and call again
    request,     // passive: the ConnectRequest is there, answer it (accept or reject)
    replied,     // active: the Reply is there, complete() or abandon()
    rejected,    // active: the passive side rejected (its private data in answer())
    established, // take_link()
    refused,     // passive: the active side turned the Reply down (RefuseReply)
    abandoned,   // the other side gave up (Abandon)
    failed,      // the peer went, or sent something invalid
};

// The passive side's request, owned (the packet it came in is gone).
struct ReceivedRequest {
    Endpoint source;
    Endpoint destination;
    ReadLimits limits; // the active side's
    os::ProcessIdentity sender;
    std::vector<std::byte> private_data;
};

// The active side's answer: a Reply's limits and private data, or a Reject's private data.
struct ReceivedAnswer {
    ReadLimits limits; // the passive side's (a Reply's)
    std::vector<std::byte> private_data;
    // False for a Reject without private data (the passive connector closed before it
    // accepted), as opposed to an NdkReject with empty private data.
    bool private_data_present = true;
};

class IncomingConnection {
public:
    int fd() const { return control_.get(); }
    const PeerCredentials &credentials() const { return credentials_; }

    // Read what arrived: `request` once (then `waiting`, or `abandoned` / `failed` when the
    // active side gives up or goes before the answer), then after accept() `established`,
    // `refused` or `abandoned`.
    // `failed` at EOF, for a malformed packet, or a request whose sender is not the process
    // the kernel says connected (or is not running).
    Establish poll();
    const ReceivedRequest &request() const { return request_; }

    // Answer with a Reply carrying the connection's new segment and doorbells (its private
    // data is sent at once).  Throws std::system_error, and std::logic_error when no request
    // is there.  False when the peer is gone: poll() then says `abandoned` if it gave up
    // first (its Abandon was waiting), else `failed`.
    bool accept(const Reply &reply, LinkGeometry geometry = {});
    // Answer with a Reject: with private data (NdkReject) or without (the passive connector
    // closed before it accepted).  The connection is then done.
    void reject(std::optional<std::span<const std::byte>> private_data);
    // Give up (close or timeout), before or after accept().
    void abandon();
    ShmLink take_link();

private:
    friend class ShmAcceptor;
    IncomingConnection(os::UniqueFd control, PeerCredentials credentials);

    Establish read_request();
    Establish read_unanswered();
    Establish read_ready();
    // A request is there and neither accept() nor reject() answered it, nor did the peer give up.
    bool unanswered_request() const
    {
        return requested_ && !answered_ &&
               (outcome_ == Establish::request || outcome_ == Establish::waiting);
    }

    os::UniqueFd control_;
    PeerCredentials credentials_;
    Establish outcome_ = Establish::waiting;
    bool requested_ = false; // the request was read
    bool answered_ = false;  // accept() sent the Reply
    ReceivedRequest request_;
    std::optional<os::PeerWatch> watch_;
    std::optional<ShmSegment> segment_;
    os::UniqueFd to_active_;
    os::UniqueFd to_passive_;
    ReadLimits local_limits_; // the Reply's
};

// Listens for one soft endpoint: an abstract socket, registered in the host's registry for as
// long as the acceptor lives.
class ShmAcceptor {
public:
    // Throws std::system_error: EADDRINUSE when a running process holds the endpoint.
    ShmAcceptor(EndpointRegistry registry, const Endpoint &endpoint);
    ~ShmAcceptor();
    ShmAcceptor(const ShmAcceptor &) = delete;
    ShmAcceptor &operator=(const ShmAcceptor &) = delete;

    // Readable when a connection waits.
    int fd() const { return listener_.get(); }
    const Endpoint &endpoint() const { return endpoint_; }

    // The next waiting connection of our own uid, or nothing.  Does not block.  A connection
    // from another uid is closed here (abstract sockets have no permissions of their own).
    std::optional<IncomingConnection> accept();

private:
    EndpointRegistry registry_;
    Endpoint endpoint_;
    os::ProcessIdentity self_;
    os::UniqueFd listener_;
};

struct ConnectParameters {
    Endpoint source;
    Endpoint destination;
    ReadLimits limits;
    std::span<const std::byte> private_data;
};

class OutgoingConnection {
public:
    // Find the destination's listener, connect to it and send the ConnectRequest.  Throws
    // std::system_error: ECONNREFUSED when no running process listens there (or its socket
    // is not its own), EPERM for a listener of another uid.
    static OutgoingConnection connect(const EndpointRegistry &registry,
                                      const ConnectParameters &parameters);

    int fd() const { return control_.get(); }
    const os::ProcessIdentity &peer() const { return peer_; }

    // `replied`, `rejected`, `abandoned` or `failed` once the answer is there.
    Establish poll();
    const ReceivedAnswer &answer() const { return answer_; }

    // After `replied`: send ReadyToUse; the link is then established on both sides.  Throws
    // std::logic_error when no Reply is there; returns nothing when the peer is gone.
    std::optional<ShmLink> complete();
    // After `replied`: turn the Reply down (NdkReject after the reply, a close, a timeout).
    void refuse();
    // Give up before any answer (a timeout, or the consumer closed the connector).
    void abandon();

private:
    OutgoingConnection(os::UniqueFd control, os::PeerWatch watch, os::ProcessIdentity peer, ReadLimits local)
        : control_(std::move(control)), watch_(std::move(watch)), peer_(peer), local_limits_(local)
    {
    }

    os::UniqueFd control_;
    os::PeerWatch watch_;
    os::ProcessIdentity peer_;
    ReadLimits local_limits_;
    Establish outcome_ = Establish::waiting;
    ReceivedAnswer answer_;
    std::optional<ShmSegment> segment_;
    os::UniqueFd to_active_;
    os::UniqueFd to_passive_;
};

// The registry's text for an endpoint's address (inet_ntop).
std::string address_text(const Endpoint &endpoint);

} // namespace ndk::soft::shm
