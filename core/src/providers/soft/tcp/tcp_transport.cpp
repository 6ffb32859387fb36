// The tcp transport (tcp_transport.hpp; docs/transport.md, "The tcp transport in the soft
// provider").
//
// Locks and lifetimes: soft_transport_tables.hpp, as for shm.  The handler takes the wire
// lock exclusive for everything it does (establishment, segments, teardown).
//
// Unlike shm, iWARP has no answer to a Send or an RDMA Write, and an error the target finds
// reaches the initiator as a Terminate that ends the connection (RFC 5040 section 7): the
// channel below follows each with a zero-length Read, whose answer says the peer placed it.
// docs/semantics.md, TCP-*, says what each Terminate, close and reset does to the NDK objects.
#include "providers/soft/tcp/tcp_transport.hpp"

#include "providers/soft/os/descriptor_state.hpp"
#include "providers/soft/soft_channel.hpp"
#include "providers/soft/soft_connection.hpp"
#include "providers/soft/soft_connector_link.hpp"
#include "providers/soft/soft_memory.hpp"
#include "providers/soft/soft_qp_complete.hpp"
#include "providers/soft/soft_target.hpp"
#include "providers/soft/soft_transfer.hpp"
#include "providers/soft/soft_transport_link.hpp"
#include "providers/soft/soft_transport_tables.hpp"
#include "providers/soft/tcp/tcp_establish.hpp"
#include "providers/soft/tcp/tcp_link.hpp"
#include "providers/soft/tcp/tcp_progress.hpp"

#include <poll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <system_error>
#include <vector>

namespace ndk::soft {
namespace {

using iwarp::RdmapOpcode;
using iwarp::TerminateReason;
using tcp::InboundSegment;
using tcp::LinkSendStatus;
using tcp::TcpAddress;
using tcp::TcpEstablish;
using tcp::TcpLink;
using tcp::TcpLinkState;

// RFC 6581's IRD and ORD are 14-bit fields.
constexpr ULONG kMpaMaxReadDepth = 0x3FFF;

TcpAddress to_tcp(const Endpoint &e)
{
    return *TcpAddress::parse(e.ip.to_string(), e.port); // an IpAddress always prints parsable
}

Endpoint to_soft(const TcpAddress &a)
{
    Endpoint out;
    (void)Endpoint::from_sockaddr(reinterpret_cast<const SOCKADDR *>(a.data()), a.size(), out);
    return out;
}

// Our side of MPA's exchange: NDK's read limits as RFC 6581's IRD and ORD, and whether this
// adapter asks for CRC32c (knob mpa_crc; the peer's asking is honoured regardless, RFC 5044 7.1).
iwarp::MpaSettings mpa_settings(const SoftAdapter &adapter, ULONG inbound_read_limit,
                                ULONG outbound_read_limit)
{
    iwarp::MpaSettings s;
    s.crc = adapter.knobs().mpa_crc();
    s.ird = static_cast<std::uint16_t>(std::min(inbound_read_limit, kMpaMaxReadDepth));
    s.ord = static_cast<std::uint16_t>(std::min(outbound_read_limit, kMpaMaxReadDepth));
    return s;
}

// Whether `ip` is an address of this host: a socket bound there accepts a connection from
// itself.  An AnyIP route (`ip route add local 198.18.0.0/15 dev lo`) makes a whole range
// local; IPv6 binds such an address only with IP_FREEBIND, which would bind any address, so
// the connection is what proves it.
bool address_is_local(const IpAddress &ip)
{
    try {
        tcp::TcpEstablishOptions options;
        options.free_bind = true;
        tcp::TcpAcceptor acceptor(*TcpAddress::parse(ip.to_string(), 0), options);
        tcp::TcpConnectParameters p;
        p.destination = acceptor.local_address();
        p.options = options;
        auto probe = tcp::OutgoingTcpConnection::connect(p);
        pollfd ready{probe.fd(), POLLOUT, 0};
        if (::poll(&ready, 1, 1000) <= 0)
            return false;
        int error = 0;
        socklen_t size = sizeof error;
        ::getsockopt(probe.fd(), SOL_SOCKET, SO_ERROR, &error, &size);
        return error == 0;
    } catch (const std::exception &) {
        return false;
    }
}

// Whether the other end of an establishment's socket has closed or reset it: what the
// progress thread would report next, looked at now, when this side is about to act on it.
bool peer_gone(int fd)
{
    pollfd p{fd, POLLRDHUP, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

// A socket call that fails (out of descriptors, memory) is dropped (best_effort): the
// connection it was for ends by its own timeout or the peer's.
struct Establishing
    : TransportEstablishing<tcp::OutgoingTcpConnection, tcp::IncomingTcpConnection> {
    Endpoint local; // passive: the listener's endpoint the request came to
};
using Connection = TransportConnection<TcpLink, std::unique_ptr<TcpLink>>;

class TcpTransport;
using TcpTables =
    TransportTables<tcp::TcpProgress, tcp::TcpAcceptor, TcpLink, Establishing, Connection>;

// The QP's data path over a link.  Each request of the initiator stays in flight
// (Answer::later) until the peer has taken it: a Read until its Read Response, a Send or Write
// until the Read Response of a zero-length Read Request sent right after it, which the peer
// answers only once everything before it is placed (RDMAP processes a stream in order, RFC
// 5040 5.5).  Read Responses come back in the order of their requests, so several Writes and
// Sends may be in flight at once (pipeline_limits(): as many zero-length Reads as the
// connection's outbound read limit, RFC 6581's ORD, lets this side have outstanding), each
// completed by its own Read Response, in posting order.  A Terminate naming the first request
// in flight (every one before it was answered before the peer failed it) instead completes it
// with the error the peer found, so the initiator's statuses are the in-process fabric's
// (docs/semantics.md, TCP-*).
// The peer's segments arrive through segment(), on the progress thread, wire lock exclusive.
class TcpChannel final : public TransportChannel<TcpTransport, Connection>,
                         public tcp::SegmentSink {
public:
    TcpChannel(TcpTransport &transport, std::shared_ptr<Connection> connection, SoftQp &qp,
               ULONG outbound_read_limit)
        : TransportChannel(transport, std::move(connection), qp,
                           std::clamp<std::size_t>(outbound_read_limit, 1, kMaxPipelined))
    {
    }

    Answer send(SoftQp &qp, const Spans &source, bool solicited,
                std::optional<UINT32> invalidate) override;
    Answer write(SoftQp &qp, const Spans &source, UINT32 token, UINT64 address) override;
    Answer read(SoftQp &qp, const Spans &sink, UINT32 token, UINT64 address) override;
    void fail_peer() override;

    void segment(const InboundSegment &segment) override;
    // The link ended without a Terminate of ours or theirs (FIN, reset): what was in flight.
    void link_lost(TcpLinkState how);

private:
    enum class Request { none, send, write, read };

    // The request's SGL as the link's body pieces: sent from the registered memory itself.
    static std::vector<std::span<const std::byte>> pieces_of(const Spans &spans);
    // The most requests one QP has in flight, whatever its read limit.  One for now: with
    // Sends in flight behind one the peer refuses, the refused Send completed CANCELLED
    // instead of with the peer's error in about one run in four of ERROR-FLUSH-IN-ORDER
    // between two network namespaces (tests/tcp/two-namespaces.sh), and never with one in
    // flight; until that race is understood the pipeline stays one deep (docs/performance.md).
    static constexpr std::size_t kMaxPipelined = 1;

    // Whether the first request in flight is still the QP's: NdkFlush completes the QP's
    // requests CANCELLED and keeps the connection (docs/semantics.md, QP-FLUSH), so the answers
    // to those it flushed still come, first; they are taken and complete nothing.
    bool first_is_live() const;
    // A request's entry in flight, and the Read Request whose Response answers it: for a
    // Read the Read itself, for a Send or Write the zero-length Read that fences it.
    iwarp::ReadRequest enter_flight(Request kind, Spans sink = {}, UINT32 source_token = 0,
                                    UINT64 source_address = 0);
    // The request's messages went: in flight until the peer's answer; or the link had ended,
    // and its entry is taken back.
    Answer in_flight(LinkSendStatus sent);
    void take(const InboundSegment &s);
    void send_segment(const InboundSegment &s);
    void write_segment(const InboundSegment &s);
    void read_request(const InboundSegment &s);
    void read_response(const InboundSegment &s);
    void terminated(const iwarp::TerminateMessage &t);
    // This side found an error in what the peer sent: the Terminate that names it, the QP
    // flushed, and the disconnect event, as the target of a failed request gets in-process.
    void fail(TerminateReason reason, std::span<const std::byte> ulpdu);
    // A Send with no receive posted is held, and what follows it on the stream waits behind
    // it, until a receive comes or this adapter's rnr_timeout_ms ends it.
    void hold(const InboundSegment &s);
    void keep(const InboundSegment &s);
    bool holding_send() const override { return holding_; }
    // The held Send, and what waited behind it, go on from the engine with the wire lock
    // exclusive whatever the poster held: they may invalidate, end the connection, or
    // complete a Read.
    bool retry_from_engine(Hold) override { return true; }
    void retry_held(Hold) override;
    void drop_held();

    std::vector<std::byte> incoming_send_; // the peer's Send, reassembled
    std::vector<std::byte> response_;      // a Read Response gathered at the target
    TerminateReason failing_ = TerminateReason::rdmap_local_catastrophic; // fail_peer's reason
    // The requests in flight, oldest first, each with the sink STag of the Read whose
    // Response answers it, and where that Response goes (a fence's is empty).
    struct InFlight {
        Request kind = Request::none;
        std::uint32_t stag = 0;
        Spans sink;
        std::size_t length = 0;
    };
    std::deque<InFlight> in_flight_;
    std::uint32_t read_stag_ = 0;
    // What waits behind a held Send: each segment's bytes, and whether it ended its message.
    struct Waiting {
        std::vector<std::byte> ulpdu;
        bool message_complete = false;
    };
    std::vector<Waiting> waiting_;
    std::size_t waiting_bytes_ = 0;
    bool holding_ = false;
};

using TcpConnectorLink = TransportConnectorLink<TcpTransport, Establishing, Connection>;

// A segment for a connection nobody uses any more: read and dropped.
class DiscardSink final : public tcp::SegmentSink {
public:
    void segment(const InboundSegment &) override {}
};

class TcpTransport final : public Transport, private tcp::TcpProgressHandler {
public:
    explicit TcpTransport(Miniport &miniport)
        : miniport_(miniport)
    {
        for (const IpAddress &ip : miniport_.addresses)
            if (!address_is_local(ip))
                throw AddressUnavailable(ip.to_string());
        options_.free_bind = true;
        if (!request_timer_)
            throw std::system_error(errno, std::generic_category(), "timerfd_create");
        progress_.emplace(static_cast<tcp::TcpProgressHandler &>(*this));
        tables_.attach(*progress_);
        progress_->add_fd(request_timer_.get());
    }

    ~TcpTransport() override { progress_.reset(); }

    TcpTables &tables() { return tables_; }

    // A consumer's empty poll serves the sockets with bytes on its own thread (tcp_progress.hpp).
    bool poll_from_consumer() override { return progress_->poll_from_consumer(); }

    // Nothing in flight: the progress thread idle, no change queued for it, no establishment
    // (and so no accepted connection awaiting its MPA request), no connection waiting at an
    // acceptor and none paused, and on every link nothing queued and, while it is open,
    // nothing to read and the peer's end one of this process's sockets, which has read every
    // byte this end wrote (and its FIN).  Reads, not the kernel's acknowledgements, are
    // compared: bytes acknowledged may still wait in the peer's socket, and a delayed ACK
    // would hold the answer up to 40 ms after each message.  A link already ended (link_ended
    // told) reads nothing more; until then any event on it would still tell.
    bool quiescent(QuietLedger &ledger) override
    {
        using Kind = tcp::TcpProgress::Kind;
        return tables_.quiescent(ledger, [&](const tcp::TcpProgress::Entry &entry) {
            if (entry.kind == Kind::acceptor)
                return !entry.state.paused && !os::readable_now(entry.fd);
            return entry.kind != Kind::link || link_quiet(entry.link(), entry.state, ledger);
        });
    }

    // ---- the connector's events on the wire (TcpConnectorLink), wire lock held ----

    // A link that goes before the end abandons its exchange at once (the stream ends), not
    // when the progress thread lets it go.
    static constexpr bool kAbandonAtClose = true;

    void send_reply(SoftConnector &self, const std::shared_ptr<Establishing> &e,
                    std::span<const unsigned char> private_data, ULONG inbound_read_limit,
                    ULONG outbound_read_limit)
    {
        TcpEstablish what = TcpEstablish::failed;
        best_effort([&] {
            what = e->incoming->accept(
                mpa_settings(self.adapter(), inbound_read_limit, outbound_read_limit),
                as_bytes(private_data));
        });
        if (what != TcpEstablish::waiting)
            revisit(e); // established at once (no RTR), or failed
    }

    // The other side has not closed or reset the exchange's socket, and a passive side's
    // request still waits for its answer.
    bool peer_waiting(Establishing &e)
    {
        if (e.incoming) {
            TcpEstablish what = TcpEstablish::failed;
            best_effort([&] { what = e.incoming->poll(); });
            if (what != TcpEstablish::request)
                return false;
        }
        return !peer_gone(e.fd);
    }

    // A close before Accept just ends the stream.
    void send_reject(Establishing &e, std::optional<std::span<const unsigned char>> private_data)
    {
        if (private_data)
            e.incoming->reject(as_bytes(*private_data));
        else
            e.incoming->abandon();
    }

    // Null when the passive side closed, or timed out, after its reply.
    std::shared_ptr<Connection> complete(Establishing &e)
    {
        if (peer_gone(e.fd))
            return nullptr;
        std::unique_ptr<TcpLink> link = e.outgoing->complete();
        return link ? std::make_shared<Connection>(std::move(link)) : nullptr;
    }

    void send_disconnect(Connection &connection, ULONG reason)
    {
        TcpLink &link = *connection.link;
        switch (reason) {
        case kDisconnectGraceful: link.close(); break;  // FIN after what is queued
        case kDisconnectAbortive: link.abort(); break;  // a reset
        default: link.terminate(TerminateReason::rdmap_local_catastrophic); break;
        }
    }

    std::unique_ptr<Channel> make_channel(std::shared_ptr<Connection> connection,
                                          SoftConnector &self)
    {
        return std::make_unique<TcpChannel>(*this, std::move(connection), *self.qp,
                                            self.outbound_read_limit);
    }

    NTSTATUS start_listening(SoftListener &listener) override
    {
        std::shared_ptr<tcp::TcpAcceptor> acceptor;
        try {
            acceptor = std::make_shared<tcp::TcpAcceptor>(to_tcp(listener.port->endpoint()),
                                                          options_);
        } catch (const std::system_error &e) {
            // The host's port is held by a socket outside this provider.
            return e.code().value() == EADDRINUSE ? STATUS_SHARING_VIOLATION
                                                  : STATUS_INSUFFICIENT_RESOURCES;
        }
        Fabric::instance().set_listener(listener.port->endpoint(), &listener);
        tables_.listen(listener, acceptor, listener.port->endpoint());
        return STATUS_SUCCESS;
    }

    void stop_listening(SoftListener &listener) override
    {
        Fabric::instance().set_listener(listener.port->endpoint(), nullptr);
        if (std::shared_ptr<tcp::TcpAcceptor> acceptor = tables_.unlisten(listener))
            acceptor->stop(); // the port is free for the next listen now, not when the thread runs
    }

    NTSTATUS connect(SoftConnector &c, std::span<const unsigned char> private_data) override
    {
        SoftAdapter &adapter = c.adapter();
        // A destination in this process is checked as the in-process fabric checks it, so the
        // statuses do not depend on which transport carries the request.
        if (Miniport *owner = Fabric::instance().owner(c.remote.ip); owner != nullptr) {
            if (!loopback_allowed(adapter, *owner))
                return STATUS_HOST_UNREACHABLE; // docs/semantics.md, CONN-LOOPBACK
            if (listener_taking_requests(c.remote) == nullptr)
                return STATUS_CONNECTION_REFUSED;
        }
        auto establishing = std::make_shared<Establishing>();
        tcp::TcpConnectParameters p;
        p.destination = to_tcp(c.remote);
        p.source = to_tcp(c.local);
        p.settings = mpa_settings(adapter, c.inbound_read_limit, c.outbound_read_limit);
        p.private_data = as_bytes(private_data);
        p.options = options_;
        try {
            establishing->outgoing.emplace(tcp::OutgoingTcpConnection::connect(p));
        } catch (const std::system_error &e) {
            return e.code().value() == EADDRINUSE ? STATUS_ADDRESS_ALREADY_EXISTS
                                                  : STATUS_INSUFFICIENT_RESOURCES;
        }
        if (establishing->outgoing->poll() == TcpEstablish::failed) {
            switch (establishing->outgoing->error()) {
            case ENETUNREACH:
            case EHOSTUNREACH: return STATUS_HOST_UNREACHABLE;
            // The socket is bound to the connector's endpoint, so the kernel finds no port
            // for it only when the 4-tuple is in use: a connection of the host's TCP that is
            // still closing (the connector picks another port when it chose this one).
            case EADDRNOTAVAIL: return STATUS_ADDRESS_ALREADY_EXISTS;
            default: return STATUS_CONNECTION_REFUSED;
            }
        }
        establishing->fd = establishing->outgoing->fd();
        tables_.watch(establishing);
        c.link = std::make_unique<TcpConnectorLink>(*this, c, establishing);
        return STATUS_SUCCESS;
    }

    // ---- for links and channels (wire lock held) ----

    // Look at an establishment again on the progress thread (its socket may have nothing
    // more to say: a reply that established the passive side at once).
    void revisit(const std::shared_ptr<Establishing> &establishing)
    {
        tables_.later([this, establishing] {
            std::lock_guard wire(Fabric::instance().wire());
            progress_of(establishing);
        });
    }

private:
    using Clock = std::chrono::steady_clock;

    // One link for quiescent(): its end named in the ledger, while its socket is connected,
    // by its 4-tuple (the peer's end is the reverse) with what it has read; while it is open,
    // nothing to read and the peer's end needed, having read everything this end wrote.
    static bool link_quiet(const TcpLink &link, const tcp::TcpEntryState &state,
                           QuietLedger &ledger)
    {
        if (state.kick || link.queued() != 0)
            return false;
        std::string local, peer;
        try {
            local = TcpAddress::local_of(link.fd()).text();
            peer = TcpAddress::peer_of(link.fd()).text();
        } catch (const std::system_error &) {
            // Not connected (reset, or closed both ways): nothing more goes out on it.
        }
        const tcp::StreamTally tally = link.tally();
        if (!peer.empty())
            ledger.end_here("tcp " + local + " " + peer, {tally.read, tally.eof});
        if (state.ended)
            return true;
        if (peer.empty() || link.state() != TcpLinkState::open || os::readable_now(link.fd()))
            return false;
        ledger.needs("tcp " + peer + " " + local, {tally.written, tally.shut_down});
        return true;
    }

    // An accepted connection whose MPA request has not come yet, and when it is dropped.
    struct AwaitingRequest {
        Clock::time_point deadline;
        std::weak_ptr<Establishing> establishing;
    };

    // ---- the progress thread ----

    void incoming(tcp::TcpAcceptor &acceptor) override
    {
        Endpoint local;
        std::chrono::milliseconds request_timeout{};
        tables_.read_listener(acceptor, [&](SoftListener &listener, const Endpoint &endpoint) {
            local = endpoint;
            request_timeout = listener.adapter().knobs().mpa_request_timeout();
        });
        for (;;) {
            std::optional<tcp::IncomingTcpConnection> connection;
            best_effort([&] { connection = acceptor.accept(); });
            if (!connection)
                return; // none waits, or no descriptor for it (the progress thread pauses)
            auto establishing = std::make_shared<Establishing>();
            establishing->incoming.emplace(std::move(*connection));
            establishing->local = local;
            establishing->fd = establishing->incoming->fd();
            if (tables_.watch_here(establishing))
                await_request(establishing, Clock::now() + request_timeout);
        }
    }

    // docs/semantics.md TCP-LISTENER: a peer that connects and sends no whole MPA request
    // within the listener's mpa_request_timeout_ms is dropped, so that silent peers cannot
    // keep the process's descriptors (and, out of them, its listeners every other peer) for
    // as long as they like.  On the progress thread.
    void await_request(const std::shared_ptr<Establishing> &establishing,
                       Clock::time_point deadline)
    {
        awaiting_request_.push_back({deadline, establishing});
        if (awaiting_request_.size() == 1 || deadline < next_request_deadline_)
            arm_request_timer(deadline);
    }

    void arm_request_timer(Clock::time_point deadline)
    {
        next_request_deadline_ = deadline;
        const auto wait = std::max(std::chrono::nanoseconds(1),
                                   std::chrono::nanoseconds(deadline - Clock::now()));
        itimerspec when{};
        when.it_value.tv_sec = static_cast<time_t>(wait.count() / 1'000'000'000);
        when.it_value.tv_nsec = static_cast<long>(wait.count() % 1'000'000'000);
        ::timerfd_settime(request_timer_.get(), 0, &when, nullptr);
    }

    // The request timer went off: drop every connection past its deadline that has sent no
    // request yet (one that has is a connector's now, or retired), and arm for the next.
    void drop_silent_peers()
    {
        std::uint64_t expirations = 0;
        [[maybe_unused]] ssize_t n = ::read(request_timer_.get(), &expirations, sizeof expirations);
        const Clock::time_point now = Clock::now();
        std::optional<Clock::time_point> next;
        std::lock_guard wire(Fabric::instance().wire());
        std::erase_if(awaiting_request_, [&](const AwaitingRequest &a) {
            std::shared_ptr<Establishing> e = a.establishing.lock();
            if (!e || e->connector != nullptr || tables_.establishing_at(e->fd) != e)
                return true; // answered, or gone
            if (a.deadline > now) {
                next = std::min(next.value_or(a.deadline), a.deadline);
                return false;
            }
            // Retired, not closed here: the descriptor closes once the progress thread no
            // longer watches it (a number reused before that would be unwatched with it).
            tables_.retire(e);
            return true;
        });
        if (next)
            arm_request_timer(*next);
    }

    void ready(int fd) override
    {
        if (fd == request_timer_.get()) {
            drop_silent_peers();
            return;
        }
        std::shared_ptr<Establishing> establishing = tables_.ready(fd);
        if (!establishing)
            return;
        std::lock_guard wire(Fabric::instance().wire());
        progress_of(establishing);
    }

    void progress_of(const std::shared_ptr<Establishing> &e)
    {
        if (e->outgoing)
            active_progress(e);
        else
            passive_progress(e);
    }

    void active_progress(const std::shared_ptr<Establishing> &e)
    {
        TcpEstablish what = e->outgoing->poll();
        SoftConnector *c = e->connector;
        if (what == TcpEstablish::waiting)
            return;
        if (what != TcpEstablish::replied)
            tables_.retire(e);
        if (c == nullptr)
            return; // the connector went: its link abandoned the exchange
        if (c->state != SoftConnector::State::Connecting) {
            // Replied already: the passive side went before our CompleteConnect, which finds
            // CONNECTION_ABORTED (a reply seen again changes nothing).
            if (what != TcpEstablish::replied)
                on_abandoned(*c);
            return;
        }
        const iwarp::MpaFrame &reply = e->outgoing->reply();
        switch (what) {
        case TcpEstablish::replied: {
            ULONG ird = reply.enhanced ? reply.enhanced->ird : 0;
            ULONG ord = reply.enhanced ? reply.enhanced->ord : 0;
            on_reply(*c, as_uchars(reply.private_data), ird, ord);
            break;
        }
        case TcpEstablish::rejected: on_rejected(*c, as_uchars(reply.private_data)); break;
        default: // the connect failed, or the peer closed or reset before its answer
            on_rejected(*c, std::nullopt);
            break;
        }
    }

    void passive_progress(const std::shared_ptr<Establishing> &e)
    {
        TcpEstablish what = e->incoming->poll();
        if (what == TcpEstablish::waiting)
            return;
        if (what == TcpEstablish::request) {
            if (e->connector == nullptr)
                request_arrived(e);
            return;
        }
        SoftConnector *p = tables_.finish(e);
        if (p == nullptr)
            return;
        if (what == TcpEstablish::established && p->qp != nullptr &&
            p->state == SoftConnector::State::Accepting) {
            auto connection = std::make_shared<Connection>(e->incoming->take_link());
            static_cast<TcpConnectorLink &>(*p->link).connected(connection);
            return;
        }
        if (p->state == SoftConnector::State::Accepting)
            on_reply_refused(*p); // the active side turned the reply down, or went
        else
            on_abandoned(*p); // its Accept or Reject finds CONNECTION_ABORTED
    }

    // An MPA request reached one of our acceptors: a passive connector, or a reject frame
    // without private data when no listener takes it (paused, closing).
    void request_arrived(const std::shared_ptr<Establishing> &e)
    {
        SoftListener *listener = listener_taking_requests(e->local);
        if (listener == nullptr || &listener->adapter().miniport() != &miniport_) {
            best_effort([&] { e->incoming->reject({}); });
            tables_.retire(e);
            return;
        }
        const iwarp::MpaFrame &request = e->incoming->request();
        RequestedReadLimits limits;
        if (request.enhanced)
            limits = {request.enhanced->ird, request.enhanced->ord};
        Endpoint remote = to_soft(TcpAddress::peer_of(e->fd));
        SoftConnector &p = connect_request_arrived(*listener, remote, limits,
                                                   as_uchars(request.private_data));
        p.link = std::make_unique<TcpConnectorLink>(*this, p, e);
        deliver_connect_event(p);
    }

    void readable(TcpLink &link) override
    {
        std::shared_ptr<Connection> connection = tables_.connection_of(link);
        std::lock_guard wire(Fabric::instance().wire());
        SoftQp *qp = connection ? connection->qp.load() : nullptr;
        if (qp == nullptr || !qp->channel) {
            DiscardSink discard;
            link.receive(discard);
            return;
        }
        link.receive(static_cast<TcpChannel &>(*qp->channel));
    }

    void link_ended(TcpLink &link) override
    {
        std::shared_ptr<Connection> connection = tables_.connection_of(link);
        if (!connection)
            return;
        if (miniport_.knobs.link_end_held()) {
            // Left as it is: the next request meets the ended stream (LINK-END).
            miniport_.link_ends_held.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        std::lock_guard wire(Fabric::instance().wire());
        if (SoftQp *qp = connection->qp.load(); qp != nullptr && qp->channel)
            static_cast<TcpChannel &>(*qp->channel).link_lost(link.state());
        SoftConnector *c = connection->connector;
        if (c == nullptr || c->state != SoftConnector::State::Connected)
            return;
        switch (link.state()) {
        case TcpLinkState::closed: on_disconnected(*c, kDisconnectGraceful); break;
        case TcpLinkState::reset:
        case TcpLinkState::aborted: on_disconnected(*c, kDisconnectAbortive); break;
        default: on_disconnected(*c, kDisconnectError); break;
        }
    }

    Miniport &miniport_;
    tcp::TcpEstablishOptions options_;
    // The progress thread's: accepted connections awaiting their MPA request, and the timer
    // that goes off at the earliest deadline among them.
    std::vector<AwaitingRequest> awaiting_request_;
    Clock::time_point next_request_deadline_{};
    os::UniqueFd request_timer_{::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)};
    TcpTables tables_;
    std::optional<tcp::TcpProgress> progress_; // last: stopped first
};

// ---- TcpChannel ---------------------------------------------------------------------------

// The most a held Send may keep waiting behind it before the stream is given up.
constexpr std::size_t kMaxWaitingBytes = 16u << 20;

std::vector<std::span<const std::byte>> TcpChannel::pieces_of(const Spans &spans)
{
    std::vector<std::span<const std::byte>> pieces;
    pieces.reserve(spans.size());
    for (const Span &s : spans)
        pieces.emplace_back(reinterpret_cast<const std::byte *>(s.host), s.length);
    return pieces;
}

bool TcpChannel::first_is_live() const
{
    // The QP counts its live requests in flight, and a settled one behind them that has no
    // answer to come; the flushed ones' entries are the oldest here.
    const std::size_t live = qp_.in_flight - (qp_.settled_behind ? 1 : 0);
    return in_flight_.size() <= live;
}

iwarp::ReadRequest TcpChannel::enter_flight(Request kind, Spans sink, UINT32 source_token,
                                            UINT64 source_address)
{
    InFlight &entry = in_flight_.emplace_back();
    entry.kind = kind;
    entry.stag = ++read_stag_; // a stale response names another
    entry.sink = std::move(sink);
    entry.length = total_length(entry.sink);
    iwarp::ReadRequest request;
    request.sink_stag = entry.stag;
    request.size = static_cast<std::uint32_t>(entry.length);
    request.source_stag = source_token;
    request.source_offset = source_address;
    return request;
}

Answer TcpChannel::in_flight(LinkSendStatus sent)
{
    if (sent == LinkSendStatus::closed) {
        in_flight_.pop_back();
        return {.status = STATUS_CONNECTION_ABORTED}; // the link has ended
    }
    return {.later = true};
}

// A Send or Write is followed by a zero-length Read (source STag 0, which a zero-length Read
// does not check, RFC 5040 7.4), whose response is the peer's "placed"; both go in one
// sendmsg.
Answer TcpChannel::send(SoftQp &, const Spans &source, bool solicited,
                        std::optional<UINT32> invalidate)
{
    RdmapOpcode opcode = solicited ? (invalidate ? RdmapOpcode::send_solicited_invalidate
                                                 : RdmapOpcode::send_solicited)
                                   : (invalidate ? RdmapOpcode::send_invalidate
                                                 : RdmapOpcode::send);
    const auto pieces = pieces_of(source);
    const iwarp::ReadRequest fence = enter_flight(Request::send);
    return in_flight(connection_->link->send_pieces(opcode, pieces, invalidate.value_or(0), &fence));
}

Answer TcpChannel::write(SoftQp &, const Spans &source, UINT32 token, UINT64 address)
{
    const auto pieces = pieces_of(source);
    const iwarp::ReadRequest fence = enter_flight(Request::write);
    return in_flight(connection_->link->write_pieces(token, address, pieces, &fence));
}

Answer TcpChannel::read(SoftQp &, const Spans &sink, UINT32 token, UINT64 address)
{
    return in_flight(connection_->link->read_request(enter_flight(Request::read, sink, token, address)));
}

void TcpChannel::fail_peer()
{
    in_flight_.clear();
    drop_held();
    connection_->link->terminate(failing_);
}

void TcpChannel::fail(TerminateReason reason, std::span<const std::byte> ulpdu)
{
    in_flight_.clear();
    drop_held();
    failing_ = reason;
    connection_->link->terminate(reason, ulpdu);
    if (qp_.state != SoftQp::State::Connected)
        return;
    qp_.state = SoftQp::State::Error;
    flush_qp(qp_);
    if (SoftConnector *c = qp_.connector; c != nullptr && c->state == SoftConnector::State::Connected)
        on_disconnected(*c, kDisconnectError); // last: this channel goes with it
}

void TcpChannel::segment(const InboundSegment &s)
{
    if (holding_) {
        keep(s);
        return;
    }
    take(s);
}

void TcpChannel::take(const InboundSegment &s)
{
    if (s.terminate) {
        terminated(*s.terminate);
        return;
    }
    if (qp_.state != SoftQp::State::Connected)
        return; // flushed or disconnected here: what still arrives is dropped
    switch (s.header.opcode) {
    case RdmapOpcode::send:
    case RdmapOpcode::send_invalidate:
    case RdmapOpcode::send_solicited:
    case RdmapOpcode::send_solicited_invalidate: send_segment(s); break;
    case RdmapOpcode::rdma_write: write_segment(s); break;
    case RdmapOpcode::read_request: read_request(s); break;
    case RdmapOpcode::read_response: read_response(s); break;
    default: fail(TerminateReason::rdmap_unexpected_opcode, s.ulpdu); break;
    }
}

// Why a Send the target could not take ends the stream (RFC 5041 7.2, RFC 5040 7.2).
TerminateReason send_refused(NTSTATUS at_target, bool invalidate)
{
    if (at_target == STATUS_BUFFER_OVERFLOW)
        return TerminateReason::ddp_untagged_message_too_long;
    if (invalidate && at_target == STATUS_ACCESS_VIOLATION)
        return TerminateReason::rdmap_operation_cannot_invalidate;
    return TerminateReason::rdmap_local_catastrophic;
}

void TcpChannel::send_segment(const InboundSegment &s)
{
    if (incoming_send_.size() + s.payload.size() > qp_.adapter().info().MaxTransferLength) {
        fail(TerminateReason::ddp_untagged_message_too_long, s.ulpdu);
        return;
    }
    incoming_send_.insert(incoming_send_.end(), s.payload.begin(), s.payload.end());
    if (!s.message_complete)
        return;
    Spans spans{{reinterpret_cast<unsigned char *>(incoming_send_.data()), incoming_send_.size()}};
    LocalPayload payload(spans);
    const RdmapOpcode op = s.header.opcode;
    const bool solicited =
        op == RdmapOpcode::send_solicited || op == RdmapOpcode::send_solicited_invalidate;
    std::optional<UINT32> invalidate;
    if (iwarp::carries_invalidate(op))
        invalidate = s.header.invalidate_stag;
    Answer a = arrive_send(qp_, payload, solicited, invalidate);
    if (a.no_receive) {
        hold(s);
        return;
    }
    incoming_send_.clear();
    if (a.status != STATUS_SUCCESS)
        fail(send_refused(a.at_target, invalidate.has_value()), s.ulpdu);
}

// Why a tagged access the target refused ends the stream (RFC 5040 7.1, protection errors):
// a range outside the region or window (STATUS_REMOTE_RESOURCES at the target, DATA-STATUS)
// is a base or bounds violation, at the DDP layer for a Write's placement (RFC 5041 7.2) and
// at RDMAP for a Read Request's source; a token or rights problem a protection error.
TerminateReason tagged_refused(NTSTATUS status, bool read_request)
{
    if (status == STATUS_REMOTE_RESOURCES)
        return read_request ? TerminateReason::rdmap_base_or_bounds
                            : TerminateReason::ddp_tagged_base_or_bounds;
    return status == STATUS_ACCESS_VIOLATION ? TerminateReason::rdmap_protection_unspecified
                                             : TerminateReason::rdmap_local_catastrophic;
}

void TcpChannel::write_segment(const InboundSegment &s)
{
    auto *bytes = const_cast<unsigned char *>(reinterpret_cast<const unsigned char *>(s.payload.data()));
    Spans spans{{bytes, s.payload.size()}};
    LocalPayload payload(spans);
    NTSTATUS status = arrive_write(qp_, s.header.stag, s.header.tagged_offset, payload);
    if (status != STATUS_SUCCESS)
        fail(tagged_refused(status, false), s.ulpdu);
}

// The target's answer to a Read Request: the source bytes gathered, then one Read Response.
class ReadResponseSink final : public PayloadSink {
public:
    ReadResponseSink(std::size_t length, std::vector<std::byte> &buffer)
        : length_(length), buffer_(buffer)
    {
    }
    size_t length() const override { return length_; }
    bool copy_from(const Spans &source) override
    {
        buffer_.clear();
        for (const Span &s : source) {
            const auto *bytes = reinterpret_cast<const std::byte *>(s.host);
            buffer_.insert(buffer_.end(), bytes, bytes + s.length);
        }
        return true;
    }

private:
    std::size_t length_;
    std::vector<std::byte> &buffer_;
};

void TcpChannel::read_request(const InboundSegment &s)
{
    const iwarp::ReadRequest &r = *s.read_request;
    response_.clear();
    if (r.size != 0) { // a zero-length Read names no memory (RFC 5040 7.4): nothing to check
        ReadResponseSink sink(r.size, response_);
        NTSTATUS status = arrive_read(qp_, r.source_stag, r.source_offset, sink);
        if (status != STATUS_SUCCESS) {
            fail(tagged_refused(status, true), s.ulpdu);
            return;
        }
    }
    connection_->link->read_response(r.sink_stag, r.sink_offset, response_);
}

void TcpChannel::read_response(const InboundSegment &s)
{
    const std::uint64_t offset = s.header.tagged_offset;
    if (in_flight_.empty() || s.header.stag != in_flight_.front().stag) {
        fail(TerminateReason::ddp_tagged_invalid_stag, s.ulpdu);
        return;
    }
    const InFlight &first = in_flight_.front();
    if (offset > first.length || s.payload.size() > first.length - offset) {
        fail(TerminateReason::ddp_tagged_base_or_bounds, s.ulpdu);
        return;
    }
    if (!first_is_live()) {
        // A flushed request's answer: its sink is the consumer's again, nothing is placed.
        if (s.message_complete)
            in_flight_.pop_front();
        return;
    }
    // Place the segment at its offset in the sink's spans.
    std::size_t skip = offset, from = 0;
    for (const Span &span : first.sink) {
        if (from == s.payload.size())
            break;
        if (skip >= span.length) {
            skip -= span.length;
            continue;
        }
        std::size_t n = std::min(span.length - skip, s.payload.size() - from);
        std::memcpy(span.host + skip, s.payload.data() + from, n);
        from += n;
        skip = 0;
    }
    if (!s.message_complete)
        return;
    in_flight_.pop_front();
    answered(qp_, STATUS_SUCCESS, Hold::Exclusive);
}

// What the initiator's request completes with when the peer's Terminate names it
// (docs/semantics.md, TCP-TERMINATE): the statuses the in-process fabric gives the same error.
NTSTATUS status_for(TerminateReason reason, bool send)
{
    if (send) // the target's receive completed with the error, or there was none
        return reason == TerminateReason::ddp_untagged_msn_no_buffer ? STATUS_IO_TIMEOUT
                                                                     : STATUS_REMOTE_RESOURCES;
    switch (reason) {
    case TerminateReason::rdmap_base_or_bounds:
    case TerminateReason::ddp_tagged_base_or_bounds:
        return STATUS_REMOTE_RESOURCES; // beyond the remote memory (digest 1.7, NdkRead)
    case TerminateReason::rdmap_invalid_stag:
    case TerminateReason::rdmap_access_rights:
    case TerminateReason::rdmap_stag_not_associated:
    case TerminateReason::rdmap_to_wrap:
    case TerminateReason::rdmap_protection_unspecified:
    case TerminateReason::ddp_tagged_invalid_stag:
    case TerminateReason::ddp_tagged_stag_not_associated:
    case TerminateReason::ddp_tagged_to_wrap: return STATUS_ACCESS_VIOLATION;
    default: return STATUS_REMOTE_RESOURCES;
    }
}

// The RDMAP opcode of the segment a Terminate names (its D field: a DDP header, whose second
// byte is RDMAP's control field, RFC 5040 4.3 and 4.8), or nothing.
std::optional<RdmapOpcode> named_opcode(const iwarp::TerminateMessage &t)
{
    if (!t.read_request.empty())
        return RdmapOpcode::read_request;
    if (t.ddp_header.size() < 2)
        return std::nullopt;
    return static_cast<RdmapOpcode>(std::to_integer<unsigned>(t.ddp_header[1]) & 0x0F);
}

void TcpChannel::terminated(const iwarp::TerminateMessage &t)
{
    if (qp_.state != SoftQp::State::Connected)
        return;
    const iwarp::TerminateReasonEntry *entry = iwarp::find_terminate_reason(t.layer, t.etype, t.code);
    const TerminateReason reason = entry ? entry->reason : TerminateReason::unknown;
    const std::optional<RdmapOpcode> named = named_opcode(t);
    // A Terminate naming a request flushed here is the peer's failure like any other.
    const Request first =
        in_flight_.empty() || !first_is_live() ? Request::none : in_flight_.front().kind;
    bool ours = false;
    switch (first) {
    case Request::send:
        ours = named && *named >= RdmapOpcode::send && *named <= RdmapOpcode::send_solicited_invalidate;
        break;
    case Request::write: ours = named == RdmapOpcode::rdma_write; break;
    case Request::read: ours = named == RdmapOpcode::read_request; break;
    default: break;
    }
    if (ours) {
        // Our request failed at the peer: it completes with the error, which ends the
        // connection from this side (fail_connection), as in-process.
        const bool send = first == Request::send;
        in_flight_.pop_front();
        answered(qp_, status_for(reason, send), Hold::Exclusive);
        return;
    }
    // The peer's own QP failed: ours follows, with the disconnect event (digest 4.2).
    in_flight_.clear();
    drop_held();
    qp_.state = SoftQp::State::Error;
    flush_qp(qp_);
    if (SoftConnector *c = qp_.connector; c != nullptr && c->state == SoftConnector::State::Connected)
        on_disconnected(*c, kDisconnectError); // last: this channel goes with it
}

void TcpChannel::link_lost(TcpLinkState how)
{
    if (qp_.state != SoftQp::State::Connected)
        return;
    drop_held();
    if (how == TcpLinkState::closed) {
        // The peer's Disconnect: the disconnect event follows, as in-process; a request whose
        // answer can no longer come is cancelled, with what follows it.
        if (!in_flight_.empty()) {
            in_flight_.clear();
            flush_qp(qp_);
        }
        return;
    }
    in_flight_.clear();
    qp_.state = SoftQp::State::Error; // what was in flight is lost with the stream
    flush_qp(qp_);
}

// ---- a Send waiting for a receive -----------------------------------------------------------

void TcpChannel::hold(const InboundSegment &s)
{
    holding_ = true;
    waiting_.push_back({{s.ulpdu.begin(), s.ulpdu.end()}, true}); // the Send's last segment
    waiting_bytes_ = s.ulpdu.size();
    start_rnr_wait(qp_.adapter().knobs().rnr_timeout(), [this] {
        std::vector<std::byte> ulpdu = waiting_.front().ulpdu;
        fail(TerminateReason::ddp_untagged_msn_no_buffer, ulpdu); // receiver not ready
    });
}

void TcpChannel::keep(const InboundSegment &s)
{
    waiting_bytes_ += s.ulpdu.size();
    if (waiting_bytes_ > kMaxWaitingBytes) {
        std::vector<std::byte> ulpdu = waiting_.front().ulpdu;
        fail(TerminateReason::ddp_untagged_msn_no_buffer, ulpdu);
        return;
    }
    waiting_.push_back({{s.ulpdu.begin(), s.ulpdu.end()}, s.message_complete});
}

void TcpChannel::retry_held(Hold)
{
    if (!holding_)
        return;
    std::vector<Waiting> waiting = std::move(waiting_);
    waiting_.clear();
    waiting_bytes_ = 0;
    holding_ = false;
    end_rnr_wait();
    // The held Send first (its payload is still in incoming_send_), then the rest in order;
    // one that finds no receive holds again, and what follows it waits once more.
    std::size_t i = 0;
    for (; i < waiting.size(); ++i) {
        if (holding_) {
            waiting_.insert(waiting_.end(), std::make_move_iterator(waiting.begin() + i),
                            std::make_move_iterator(waiting.end()));
            for (const Waiting &w : waiting_)
                waiting_bytes_ += w.ulpdu.size();
            return;
        }
        const Waiting &w = waiting[i];
        auto parsed = iwarp::parse_segment(w.ulpdu); // parsed once already: it parses again
        if (!parsed)
            return;
        InboundSegment s;
        s.header = parsed->header;
        s.payload = i == 0 ? std::span<const std::byte>() : parsed->payload; // held: reassembled
        s.read_request = parsed->read_request;
        s.terminate = parsed->terminate;
        s.message_complete = w.message_complete;
        s.ulpdu = w.ulpdu;
        const bool ends = s.terminate.has_value();
        SoftQp &qp = qp_;
        take(s);
        if (ends || qp.channel.get() != this)
            return; // the connection ended, and this channel with it
    }
}

void TcpChannel::drop_held()
{
    end_rnr_wait();
    holding_ = false;
    waiting_.clear();
    waiting_bytes_ = 0;
    incoming_send_.clear();
}

} // namespace

std::unique_ptr<Transport> make_tcp_transport(Miniport &miniport)
{
    return std::make_unique<TcpTransport>(miniport);
}

} // namespace ndk::soft
