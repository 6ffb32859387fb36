#include "providers/soft/shm/shm_link.hpp"

#include "providers/soft/shm/shm_control.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <atomic>
#include <cerrno>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <system_error>

namespace ndk::soft::shm {

namespace {

[[noreturn]] void fail(int error, const char *what)
{
    throw std::system_error(error, std::generic_category(), what);
}

// ---- the segment's layout (shm_link.hpp) --------------------------------------------------

struct LinkHeader {
    std::uint32_t magic;
    std::uint32_t slot_count;
    std::uint32_t slot_size;
    std::uint32_t reserved;
};

constexpr std::uint32_t kLinkMagic = 0x4e444b4c; // "NDKL"
constexpr std::size_t kToActiveBell = kCacheLine;
constexpr std::size_t kToPassiveBell = 2 * kCacheLine;
constexpr std::size_t kRings = 3 * kCacheLine;
// A slot larger than this is a peer's mistake, not a geometry (and keeps the sizes below far
// from overflowing).
constexpr std::uint32_t kMaxSlotSize = 1u << 20;
constexpr std::uint32_t kMaxSlots = 1u << 16;
static_assert(sizeof(LinkHeader) <= kCacheLine);

std::size_t ring_stride(const LinkGeometry &g)
{
    return (ShmRing::bytes_for(g.slot_count, g.slot_size) + kCacheLine - 1) / kCacheLine * kCacheLine;
}

std::size_t segment_bytes(const LinkGeometry &g) { return kRings + 2 * ring_stride(g); }

std::span<std::byte> ring_region(const ShmSegment &segment, const LinkGeometry &g,
                                 LinkSide consumer)
{
    const std::size_t at = kRings + (consumer == LinkSide::active ? 0 : ring_stride(g));
    return segment.bytes().subspan(at, ring_stride(g));
}

DoorbellWord *bell(const ShmSegment &segment, LinkSide consumer)
{
    return std::launder(reinterpret_cast<DoorbellWord *>(
        segment.data() + (consumer == LinkSide::active ? kToActiveBell : kToPassiveBell)));
}

bool valid_link_geometry(const LinkGeometry &g)
{
    return ShmRing::valid_geometry(g.slot_count, g.slot_size) && g.slot_size <= kMaxSlotSize &&
           g.slot_count <= kMaxSlots;
}

// The passive side lays out a fresh (zeroed) segment.
ShmSegment make_link_segment(const LinkGeometry &g)
{
    if (!valid_link_geometry(g))
        throw std::invalid_argument("shm link geometry");
    ShmSegment segment = ShmSegment::create("ndk-shm-link", segment_bytes(g));
    ::new (segment.data() + kToActiveBell) DoorbellWord{};
    ::new (segment.data() + kToPassiveBell) DoorbellWord{};
    ShmRing::format(ring_region(segment, g, LinkSide::active), g.slot_count, g.slot_size);
    ShmRing::format(ring_region(segment, g, LinkSide::passive), g.slot_count, g.slot_size);
    const LinkHeader header{kLinkMagic, g.slot_count, g.slot_size, 0};
    std::memcpy(segment.data(), &header, sizeof header);
    return segment;
}

// The geometry the passive side wrote, checked against the segment's real size.
std::optional<LinkGeometry> link_geometry(const ShmSegment &segment)
{
    if (segment.size() < kRings)
        return std::nullopt;
    LinkHeader header;
    std::memcpy(&header, segment.data(), sizeof header);
    const LinkGeometry g{header.slot_count, header.slot_size};
    if (header.magic != kLinkMagic || !valid_link_geometry(g) || segment.size() < segment_bytes(g))
        return std::nullopt;
    return g;
}

LinkGeometry checked_geometry(const ShmSegment &segment)
{
    const auto g = link_geometry(segment);
    if (!g)
        throw std::invalid_argument("shm link segment header");
    return *g;
}

std::array<std::byte, kMaxControlMessage> control_buffer() { return {}; }

// Encode an establishment message and send it; `closed` when the peer is gone.
PacketStatus send_control(int socket, const Message &message, std::span<const int> fds = {})
{
    auto buffer = control_buffer();
    const std::size_t length = encode(message, buffer);
    const PacketStatus status = send_packet(socket, std::span(buffer).first(length), fds);
    // A fresh connection's buffer holds far more than the few packets of an exchange.
    if (status == PacketStatus::would_block)
        fail(EAGAIN, "control socket full during establishment");
    return status;
}

// One packet without descriptors, decoded into `message` (spans into `buffer`).  An outcome
// when there is nothing for the caller to look at: `waiting`, `failed` (EOF, a malformed or
// truncated packet), `abandoned` (the peer gave up); nothing when `message` is the caller's.
std::optional<Establish> read_plain(int socket, std::array<std::byte, kMaxControlMessage> &buffer,
                                    Message &message)
{
    const ReceivedPacket packet = receive_packet(socket, buffer, {});
    if (packet.status == PacketStatus::would_block)
        return Establish::waiting;
    if (packet.status != PacketStatus::ok)
        return Establish::failed;
    message = decode(std::span(buffer).first(packet.length));
    if (std::holds_alternative<Abandon>(message))
        return Establish::abandoned;
    return std::nullopt;
}

std::vector<std::byte> owned(std::span<const std::byte> bytes) { return {bytes.begin(), bytes.end()}; }

std::string socket_name_for(const Endpoint &endpoint)
{
    static std::atomic<unsigned> serial{0};
    return "ndk-harness/" + std::to_string(::geteuid()) + '/' + std::to_string(::getpid()) + '/' +
           std::to_string(serial.fetch_add(1)) + '/' + address_text(endpoint) + '#' +
           std::to_string(endpoint.port);
}

} // namespace

std::string address_text(const Endpoint &endpoint)
{
    char text[INET6_ADDRSTRLEN] = {};
    const int family = endpoint.family == AddressFamily::ipv4 ? AF_INET : AF_INET6;
    if (::inet_ntop(family, endpoint.address.data(), text, sizeof text) == nullptr)
        fail(errno, "inet_ntop");
    return text;
}

// ---- ShmLink ------------------------------------------------------------------------------

ShmLink::ShmLink(LinkSide side, ShmSegment segment, os::UniqueFd control, os::PeerWatch watch,
                 os::ProcessIdentity peer, os::UniqueFd to_active, os::UniqueFd to_passive, ReadLimits local,
                 ReadLimits peer_limits)
    : side_(side), segment_(std::move(segment)), control_(std::move(control)),
      watch_(std::move(watch)), peer_(peer), geometry_(checked_geometry(segment_)),
      outbound_(ring_region(segment_, geometry_,
                            side == LinkSide::active ? LinkSide::passive : LinkSide::active)),
      inbound_(ring_region(segment_, geometry_, side)),
      local_limits_(local), peer_limits_(peer_limits)
{
    const LinkSide other = side == LinkSide::active ? LinkSide::passive : LinkSide::active;
    os::UniqueFd &mine = side == LinkSide::active ? to_active : to_passive;
    os::UniqueFd &theirs = side == LinkSide::active ? to_passive : to_active;
    sleeper_ = DoorbellSleeper(bell(segment_, side), std::move(mine));
    ringer_ = DoorbellRinger(bell(segment_, other), std::move(theirs));
}

// ThreadSanitizer keys synchronization by virtual address.  Both ends of a link in one process
// (two soft adapters with transport=shm) map the segment twice, at two addresses, so TSan does
// not see the ring's release and acquire pair up, and reports the memory a message hands over
// (a buffer the target then fills by cross-memory copy) as a race.  Under TSan only, each send
// also releases, and each receive acquires, one process-local word per segment (its inode),
// which both mappings share: the order the ring really gives, stated where TSan can see it.
#if defined(__SANITIZE_THREAD__)
namespace {
std::atomic<std::uint64_t> &tsan_handoff_word(int segment_fd)
{
    static std::mutex mutex;
    static std::map<ino_t, std::unique_ptr<std::atomic<std::uint64_t>>> words;
    struct stat st{};
    ::fstat(segment_fd, &st);
    std::lock_guard lock(mutex);
    auto &word = words[st.st_ino];
    if (!word)
        word = std::make_unique<std::atomic<std::uint64_t>>(0);
    return *word;
}
} // namespace
#define NDK_TSAN_HANDOFF_RELEASE() \
    tsan_handoff_word(segment_.fd()).fetch_add(1, std::memory_order_release)
#define NDK_TSAN_HANDOFF_ACQUIRE() \
    (void)tsan_handoff_word(segment_.fd()).load(std::memory_order_acquire)
#else
#define NDK_TSAN_HANDOFF_RELEASE() (void)0
#define NDK_TSAN_HANDOFF_ACQUIRE() (void)0
#endif

RingStatus ShmLink::send_bytes(std::span<const std::byte> message)
{
    NDK_TSAN_HANDOFF_RELEASE();
    return published(outbound_.try_push(message));
}

RingStatus ShmLink::published(RingStatus status)
{
    if (status == RingStatus::ok && ringer_.after_publish())
        ++rung_;
    return status;
}

void ShmLink::publish_answered(std::uint64_t sequence)
{
    NDK_TSAN_HANDOFF_RELEASE();
    outbound_.beside_tail().store(sequence, std::memory_order_release);
    if (ringer_.after_publish())
        ++rung_;
}

std::optional<std::uint64_t> ShmLink::take_answered()
{
    const std::uint64_t through = inbound_.beside_tail().load(std::memory_order_acquire);
    if (through == answered_taken_.value.load(std::memory_order_relaxed))
        return std::nullopt;
    answered_taken_.value.store(through, std::memory_order_relaxed);
    NDK_TSAN_HANDOFF_ACQUIRE();
    return through;
}

RingStatus ShmLink::send(const Message &message)
{
    NDK_TSAN_HANDOFF_RELEASE();
    // Encoded straight into the slot (encode() returns 0 when it does not fit).
    return published(outbound_.try_push_with([&message](std::span<std::byte> room) {
        const std::size_t length = encode(message, room);
        return length == 0 ? room.size() + 1 : length;
    }));
}

RingStatus ShmLink::receive_bytes(std::span<std::byte> out, std::size_t &length)
{
    const RingStatus status = inbound_.try_pop(out, length);
    if (status == RingStatus::ok)
        NDK_TSAN_HANDOFF_ACQUIRE();
    return status;
}

RingStatus ShmLink::receive(std::span<std::byte> buffer, Message &message)
{
    std::size_t length = 0;
    const RingStatus status = receive_bytes(buffer, length);
    if (status == RingStatus::ok)
        message = decode(buffer.first(length));
    return status;
}

ShmLink::Wait ShmLink::wait_for_messages(std::chrono::milliseconds limit, unsigned spin)
{
    const int others[] = {watch_.fd(), control_.get()};
    const auto waited = sleeper_.wait([this] { return has_messages(); }, limit, spin, others);
    if (waited == DoorbellSleeper::Wait::ready)
        return Wait::ready;
    if (waited == DoorbellSleeper::Wait::timeout)
        return Wait::timeout;
    // The peer exited or closed its end (or wrote on the control socket, which an established
    // link never does): what it published before is still ours to read.
    return has_messages() ? Wait::ready : Wait::peer_gone;
}

namespace {

std::string end_of(const ShmSegment &segment, LinkSide side)
{
    std::string id = segment.file_id();
    if (id.empty())
        return {};
    return "shm " + id + (side == LinkSide::active ? " active" : " passive");
}

} // namespace

std::string ShmLink::end_name() const { return end_of(segment_, side_); }

std::string ShmLink::peer_end_name() const
{
    return end_of(segment_, side_ == LinkSide::active ? LinkSide::passive : LinkSide::active);
}

bool ShmLink::peer_gone() const { return watch_.exited() || at_eof(control_.get()); }

// ---- the passive side ---------------------------------------------------------------------

ShmAcceptor::ShmAcceptor(EndpointRegistry registry, const Endpoint &endpoint)
    : registry_(std::move(registry)), endpoint_(endpoint), self_(os::self_identity())
{
    const std::string name = socket_name_for(endpoint);
    listener_ = listen_abstract(name);
    // accept() must not block: the progress thread calls it when the socket polls readable,
    // and a connection may have been withdrawn in between.
    const int flags = ::fcntl(listener_.get(), F_GETFL);
    if (flags < 0 || ::fcntl(listener_.get(), F_SETFL, flags | O_NONBLOCK) != 0)
        fail(errno, "O_NONBLOCK on a listener");
    // Listen first, then register: whoever finds the entry finds a socket to connect to.
    if (registry_.add({address_text(endpoint), endpoint.port, self_, name}) != AddResult::added)
        fail(EADDRINUSE, "shm endpoint in use");
}

ShmAcceptor::~ShmAcceptor()
{
    try {
        registry_.remove(address_text(endpoint_), endpoint_.port, self_);
    } catch (...) {
        // The entry stays until it is found stale: our pid stops running with us.
    }
}

std::optional<IncomingConnection> ShmAcceptor::accept()
{
    for (;;) {
        const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return std::nullopt;
            fail(errno, "accept on a shm listener");
        }
        os::UniqueFd connection(fd);
        const PeerCredentials credentials = peer_credentials(connection.get());
        if (credentials.uid != ::geteuid())
            continue; // closed: another user's process never reaches our memory
        return IncomingConnection(std::move(connection), credentials);
    }
}

IncomingConnection::IncomingConnection(os::UniqueFd control, PeerCredentials credentials)
    : control_(std::move(control)), credentials_(credentials)
{
}

Establish IncomingConnection::poll()
{
    if (outcome_ == Establish::request)
        outcome_ = Establish::waiting; // reported once: from now on only what is new
    if (outcome_ != Establish::waiting)
        return outcome_;
    if (!requested_)
        outcome_ = read_request();
    else if (!answered_)
        outcome_ = read_unanswered();
    else
        outcome_ = read_ready();
    if (outcome_ == Establish::request)
        requested_ = true;
    return outcome_;
}

// Between the request and our answer the active side may only give up (its timeout, its
// close): an Abandon, or EOF when it went.
Establish IncomingConnection::read_unanswered()
{
    auto buffer = control_buffer();
    Message message;
    if (const auto outcome = read_plain(control_.get(), buffer, message))
        return *outcome;
    return Establish::failed; // anything else is out of turn
}

Establish IncomingConnection::read_request()
{
    auto buffer = control_buffer();
    Message message;
    if (const auto outcome = read_plain(control_.get(), buffer, message))
        return *outcome;
    const auto *request = std::get_if<ConnectRequest>(&message);
    // The sender names itself; the kernel says who connected: they must agree, so a process
    // cannot have its peer watch a third one.
    if (request == nullptr || request->sender.pid != credentials_.pid)
        return Establish::failed;
    watch_ = os::PeerWatch::open(request->sender);
    if (!watch_)
        return Establish::failed;
    request_ = {request->source, request->destination,
                {request->inbound_read_limit, request->outbound_read_limit}, request->sender,
                owned(request->private_data)};
    return Establish::request;
}

Establish IncomingConnection::read_ready()
{
    auto buffer = control_buffer();
    Message message;
    if (const auto outcome = read_plain(control_.get(), buffer, message))
        return *outcome;
    if (std::holds_alternative<ReadyToUse>(message))
        return Establish::established;
    return std::holds_alternative<RefuseReply>(message) ? Establish::refused : Establish::failed;
}

bool IncomingConnection::accept(const Reply &reply, LinkGeometry geometry)
{
    if (!unanswered_request())
        throw std::logic_error("IncomingConnection::accept without a request");
    segment_ = make_link_segment(geometry);
    to_active_ = make_doorbell_fd();
    to_passive_ = make_doorbell_fd();
    local_limits_ = {reply.inbound_read_limit, reply.outbound_read_limit};
    const int fds[] = {segment_->fd(), to_active_.get(), to_passive_.get()};
    answered_ = true;
    if (send_control(control_.get(), reply, fds) != PacketStatus::ok) {
        // Gone: what it sent before closing (an Abandon) is still ours to read.
        outcome_ = read_ready();
        if (outcome_ == Establish::waiting || outcome_ == Establish::established)
            outcome_ = Establish::failed;
        return false;
    }
    outcome_ = Establish::waiting;
    return true;
}

void IncomingConnection::reject(std::optional<std::span<const std::byte>> private_data)
{
    if (!unanswered_request())
        throw std::logic_error("IncomingConnection::reject without a request");
    send_control(control_.get(), Reject{private_data});
    outcome_ = Establish::failed;
    control_.reset();
}

void IncomingConnection::abandon()
{
    if (control_)
        send_control(control_.get(), Abandon{});
    outcome_ = Establish::abandoned;
    control_.reset();
}

ShmLink IncomingConnection::take_link()
{
    if (outcome_ != Establish::established || !segment_)
        throw std::logic_error("IncomingConnection::take_link before ReadyToUse");
    outcome_ = Establish::failed; // taken
    return ShmLink(LinkSide::passive, std::move(*segment_), std::move(control_),
                   std::move(*watch_), request_.sender, std::move(to_active_),
                   std::move(to_passive_), local_limits_, request_.limits);
}

// ---- the active side ----------------------------------------------------------------------

OutgoingConnection OutgoingConnection::connect(const EndpointRegistry &registry,
                                               const ConnectParameters &parameters)
{
    const auto entry = registry.find(address_text(parameters.destination),
                                     parameters.destination.port);
    if (!entry)
        fail(ECONNREFUSED, "no shm listener at the destination");
    auto watch = os::PeerWatch::open(entry->owner);
    if (!watch)
        fail(ECONNREFUSED, "the shm listener exited");
    os::UniqueFd control = connect_abstract(entry->socket_name);
    // The name is only as good as the registry entry: make sure the registered owner, and a
    // process of ours, is what answered.
    const PeerCredentials credentials = peer_credentials(control.get());
    if (credentials.pid != entry->owner.pid)
        fail(ECONNREFUSED, "the shm listener's socket belongs to another process");
    if (credentials.uid != ::geteuid())
        fail(EPERM, "the shm listener runs as another user");
    const ConnectRequest request{parameters.source,          parameters.destination,
                                 parameters.limits.inbound,  parameters.limits.outbound,
                                 os::self_identity(),            parameters.private_data};
    if (send_control(control.get(), request) != PacketStatus::ok)
        fail(ECONNREFUSED, "the shm listener closed the connection");
    return OutgoingConnection(std::move(control), std::move(*watch), entry->owner,
                              parameters.limits);
}

Establish OutgoingConnection::poll()
{
    if (outcome_ != Establish::waiting)
        return outcome_;
    auto buffer = control_buffer();
    std::array<os::UniqueFd, 3> fds;
    const ReceivedPacket packet = receive_packet(control_.get(), buffer, fds);
    if (packet.status == PacketStatus::would_block)
        return Establish::waiting;
    outcome_ = Establish::failed;
    if (packet.status != PacketStatus::ok)
        return outcome_;
    const Message message = decode(std::span(buffer).first(packet.length));
    if (const auto *reject = std::get_if<Reject>(&message); reject && packet.fd_count == 0) {
        answer_ = {{}, owned(reject->private_data.value_or(std::span<const std::byte>{})),
                   reject->private_data.has_value()};
        outcome_ = Establish::rejected;
    } else if (std::holds_alternative<Abandon>(message) && packet.fd_count == 0) {
        outcome_ = Establish::abandoned;
    } else if (const auto *reply = std::get_if<Reply>(&message);
               reply && packet.fd_count == fds.size()) {
        try {
            segment_ = ShmSegment::adopt(std::move(fds[0]));
        } catch (const std::system_error &) {
            return outcome_; // not a sealed segment: failed
        }
        if (!link_geometry(*segment_))
            return outcome_;
        to_active_ = std::move(fds[1]);
        to_passive_ = std::move(fds[2]);
        answer_ = {{reply->inbound_read_limit, reply->outbound_read_limit},
                   owned(reply->private_data), true};
        outcome_ = Establish::replied;
    }
    return outcome_;
}

std::optional<ShmLink> OutgoingConnection::complete()
{
    if (outcome_ != Establish::replied)
        throw std::logic_error("OutgoingConnection::complete without a Reply");
    outcome_ = Establish::failed; // taken, whatever happens next
    if (send_control(control_.get(), ReadyToUse{}) != PacketStatus::ok)
        return std::nullopt;
    // Checked again by the rings themselves, which throw std::invalid_argument for a header
    // the peer rewrote since poll().
    return ShmLink(LinkSide::active, std::move(*segment_), std::move(control_), std::move(watch_),
                   peer_, std::move(to_active_), std::move(to_passive_), local_limits_,
                   answer_.limits);
}

void OutgoingConnection::refuse()
{
    if (outcome_ != Establish::replied)
        throw std::logic_error("OutgoingConnection::refuse without a Reply");
    send_control(control_.get(), RefuseReply{});
    outcome_ = Establish::failed;
    control_.reset();
}

void OutgoingConnection::abandon()
{
    if (control_)
        send_control(control_.get(), Abandon{});
    outcome_ = Establish::abandoned;
    control_.reset();
}

} // namespace ndk::soft::shm
