// The shm transport (shm_transport.hpp; docs/transport.md, "The shm transport in the
// soft provider").
//
// Locks and lifetimes: soft_transport_tables.hpp.  The handler takes the wire lock exclusive
// for establishment, teardown and Sends that invalidate, shared plus the QP's connection lock
// for data; it reaches a connection from the link it serves (ConnectionLink, alive while the
// link is watched) and looks at the connector and the QP only through the connection's
// pointers to them, under the wire lock, so it never touches a closed object.
#include "providers/soft/shm/shm_transport.hpp"

#include "providers/soft/os/descriptor_state.hpp"
#include "providers/soft/shm/shm_link.hpp"
#include "providers/soft/shm/shm_payloads.hpp"
#include "providers/soft/shm/shm_progress.hpp"
#include "providers/soft/soft_channel.hpp"
#include "providers/soft/soft_connection.hpp"
#include "providers/soft/soft_connector_link.hpp"
#include "providers/soft/soft_qp_complete.hpp"
#include "providers/soft/soft_target.hpp"
#include "providers/soft/soft_transfer.hpp"
#include "providers/soft/soft_transport_link.hpp"
#include "providers/soft/soft_transport_tables.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <iterator>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <system_error>
#include <vector>

namespace ndk::soft {
namespace {

// A registry entry at port 0 claims an address for its owner: no socket listens there.
constexpr const char *kAddressClaim = "address-claim";

// Messages of one link taken per readable() call: a consumer's poll that serves the rings
// returns while a peer streams (unbounded, one poll of a target that polls now and then served
// a whole run's 2,000 1 MiB Writes); the progress thread calls again while any are left.  One
// pipeline's worth (ShmChannel::kPipelineDepth).
constexpr std::size_t kMessagesPerServe = 16;

// The user's default registry, or the fabric `name` inside it (knob shm_fabric).  What killed
// processes left there (their entries, the fabric directories nobody uses any more) is swept
// first.
std::filesystem::path registry_directory(const std::string &name)
{
    std::filesystem::path base = shm::EndpointRegistry::default_directory();
    shm::EndpointRegistry parent(base); // made, and checked to be ours, first
    parent.reclaim_stale();
    shm::EndpointRegistry::reclaim_unused_fabrics(base);
    if (name.empty())
        return base;
    return shm::EndpointRegistry::fabric_directory(base, name);
}

shm::Endpoint to_shm(const Endpoint &e)
{
    shm::Endpoint out;
    out.family = e.ip.family == AF_INET ? shm::AddressFamily::ipv4 : shm::AddressFamily::ipv6;
    std::memcpy(out.address.data(), e.ip.bytes.data(), e.ip.family == AF_INET ? 4 : 16);
    out.port = e.port;
    return out;
}

Endpoint to_soft(const shm::Endpoint &e)
{
    Endpoint out;
    out.ip.family = e.family == shm::AddressFamily::ipv4 ? AF_INET : AF_INET6;
    std::memcpy(out.ip.bytes.data(), e.address.data(), e.family == shm::AddressFamily::ipv4 ? 4 : 16);
    out.port = e.port;
    return out;
}

ULONG disconnect_reason(shm::DisconnectReason reason)
{
    switch (reason) {
    case shm::DisconnectReason::graceful: return kDisconnectGraceful;
    case shm::DisconnectReason::abortive: return kDisconnectAbortive;
    default: return kDisconnectError;
    }
}

shm::DisconnectReason wire_reason(ULONG reason)
{
    switch (reason) {
    case kDisconnectGraceful: return shm::DisconnectReason::graceful;
    case kDisconnectAbortive: return shm::DisconnectReason::abortive;
    default: return shm::DisconnectReason::error;
    }
}

// Each event is sent on the exchange as it stands (best_effort): one the exchange refuses is
// dropped.  The exchange's socket is the link's control socket once established (watched
// again as that).
using Establishing = TransportEstablishing<shm::OutgoingConnection, shm::IncomingConnection>;
struct Connection;
using ShmConnectionLink = ConnectionLink<shm::ShmLink, Connection>;
// Its link knows it (ConnectionLink): readable() finds it without the tables.
struct Connection : TransportConnection<shm::ShmLink, ShmConnectionLink> {
    explicit Connection(shm::ShmLink l)
        : TransportConnection(ShmConnectionLink(std::move(l), *this))
    {
    }
    Connection(const Connection &) = delete; // its link points at it: it stays where it was made
    Connection &operator=(const Connection &) = delete;
};

class ShmTransport;
using ShmTables =
    TransportTables<shm::ShmProgress, shm::ShmAcceptor, shm::ShmLink, Establishing, Connection>;

// The QP's data path over a link: the initiator's requests go out as messages and are answered
// by the target, a success by its answers counter and an error by an Ack message
// (ShmLink::publish_answered; Answer::later, answered() completes them); the target side of the
// peer's requests runs on the progress thread (ShmTransport::on_message).
//
// Writes, Sends and Reads are pipelined (pipeline_limits(): the engine lets that many travel
// behind the first, and as many Reads as the connection's outbound read limit, soft_pipeline.hpp):
// the target takes the ring's messages in order and answers each in order, so answers come
// back in the order of the requests, and one counter says which succeeded.  A Send that finds no receive
// is held, and what the peer sent after it waits behind it (held_), taken in order once the
// Send goes on; when the Send's RNR timeout ends it instead, what waited is dropped unanswered:
// the initiator's IO_TIMEOUT puts its QP in the error state, which completes the rest
// CANCELLED.  An answer names its request's sequence: older requests in flight that it passes
// were dropped so, and an Ack for a request the QP no longer has in flight (NdkFlush completed
// it CANCELLED, keeping the connection) completes nothing.
class ShmChannel final : public TransportChannel<ShmTransport, Connection> {
public:
    // `outbound_read_limit`: the connection's, which bounds the Reads in flight (at least one).
    ShmChannel(ShmTransport &transport, std::shared_ptr<Connection> connection, SoftQp &qp,
               ULONG outbound_read_limit);

    Answer send(SoftQp &qp, const Spans &source, bool solicited,
                std::optional<UINT32> invalidate) override;
    Answer write(SoftQp &qp, const Spans &source, UINT32 token, UINT64 address) override;
    Answer read(SoftQp &qp, const Spans &sink, UINT32 token, UINT64 address) override;
    void fail_peer() override;

    // The target side of the peer's Send, Write or Read Request, on the progress thread.
    void arrived(std::span<const std::byte> raw, const shm::Message &message);
    // The Ack of a request of ours (an error answer).
    void acknowledged(const shm::Ack &ack, Hold hold);
    // The peer answered every request of ours up to `sequence` STATUS_SUCCESS (its answers
    // counter, ShmLink::take_answered): the oldest in flight, if covered, completes as its Ack would; false when
    // none is.  One at a time: a completion may end the connection, which destroys this channel.
    bool answered_next(std::uint64_t sequence, Hold hold);

private:
    // Requests in flight per QP.  Each direction's ring (256 slots by default) then carries at
    // most this many requests of one side and this many Acks of the other, plus a Terminate and
    // a Disconnect: never full unless the peer stopped reading.
    static constexpr std::size_t kPipelineDepth = 16;

    // A request of ours the peer has not answered: its sequence, and its vectors when they
    // did not fit the slot (the peer pulls them from here until it answers).
    struct InFlight {
        std::uint64_t sequence = 0;
        std::vector<shm::WireVector> list;
    };
    InFlight &next_request();
    Answer transmit(const shm::Message &message);
    // The target side of one of the peer's requests, in its turn; false when it failed the
    // connection, which destroys this channel (fail_connection: nothing of it may be touched).
    [[nodiscard]] bool take(std::span<const std::byte> raw, const shm::Message &message);
    // What waited behind a held Send that went on, taken in order (until another Send holds).
    void take_waiting(std::deque<std::vector<std::byte>> waiting);
    // The peer's Send taken at the target: its answer, or nothing when its payload cannot be
    // had (malformed, or the initiator's memory gone).
    std::optional<Answer> take_send(const shm::Send &send);
    void answer(std::uint64_t sequence, NTSTATUS status);
    // A Send that found no receive: held until one is posted or the initiator's RNR timeout.
    void hold_send(std::span<const std::byte> raw, std::uint64_t sequence,
                   std::uint32_t rnr_timeout_ms);
    bool holding_send() const override { return !held_.empty(); }
    // A Send with Invalidate changes memory access: the engine goes on from it (and from what
    // waits behind it), exclusive.
    bool retry_from_engine(Hold hold) override;
    void retry_held(Hold hold) override;
    void drop_held();

    std::uint64_t next_sequence_ = 1;
    std::deque<InFlight> in_flight_;       // oldest first
    SlotRoom send_room_, write_room_, read_room_; // what a slot carries, fixed by the link
    // A Send of the peer waiting for a receive, first, then what the peer sent after it.
    std::deque<std::vector<std::byte>> held_;
    bool refusing_ = false;                // an error answered: nothing more is taken
    shm::PeerMappings mappings_;           // the peer's shared allocations mapped here
};

// The connector's line to the other process: establishment through the exchange's objects,
// then Disconnect messages on the link.
using ShmConnectorLink = TransportConnectorLink<ShmTransport, Establishing, Connection>;

class ShmTransport final : public Transport, private shm::ProgressHandler {
public:
    explicit ShmTransport(Miniport &miniport)
        : miniport_(miniport), registry_(registry_directory(miniport.knobs.shm_fabric())),
          self_(os::self_identity())
    {
        for (const IpAddress &ip : miniport_.addresses) {
            shm::EndpointEntry holder;
            if (registry_.add({ip.to_string(), 0, self_, kAddressClaim}, &holder) !=
                shm::AddResult::added) {
                release_claims();
                throw AddressUnavailable(ip.to_string() + " is held by process " +
                                     std::to_string(holder.owner.pid));
            }
            claimed_.push_back(ip);
        }
        progress_.emplace(static_cast<shm::ProgressHandler &>(*this));
        tables_.attach(*progress_);
    }

    ~ShmTransport() override
    {
        progress_.reset(); // joins the thread: no handler call from now on
        release_claims();
        if (registry_.directory() != shm::EndpointRegistry::default_directory()) {
            try {
                registry_.remove_if_unused(); // the fabric's directory goes with its last user
            } catch (...) {
                // Left to the next adapter's sweep (reclaim_unused_fabrics).
            }
        }
    }

    NTSTATUS start_listening(SoftListener &listener) override
    {
        Fabric::instance().set_listener(listener.port->endpoint(), &listener);
        try {
            const Endpoint &endpoint = listener.port->endpoint();
            tables_.listen(listener, std::make_shared<shm::ShmAcceptor>(registry_, to_shm(endpoint)),
                           endpoint);
        } catch (const std::exception &) {
            // The endpoint could not be published (the registry failed): connects to it are
            // refused, as to any endpoint nobody listens on.
        }
        return STATUS_SUCCESS;
    }

    void stop_listening(SoftListener &listener) override
    {
        Fabric::instance().set_listener(listener.port->endpoint(), nullptr);
        tables_.unlisten(listener); // destroyed (its registry entry with it) on the progress thread
    }

    NTSTATUS connect(SoftConnector &c, std::span<const unsigned char> private_data) override
    {
        SoftAdapter &adapter = c.adapter();
        const std::string address = c.remote.ip.to_string();
        if (!registry_.find(address, 0))
            return STATUS_HOST_UNREACHABLE; // no soft RNIC of this host has the address
        if (Miniport *owner = Fabric::instance().owner(c.remote.ip);
            owner != nullptr && !loopback_allowed(adapter, *owner))
            return STATUS_HOST_UNREACHABLE; // docs/semantics.md, CONN-LOOPBACK
        if (!registry_.find(address, c.remote.port))
            return STATUS_CONNECTION_REFUSED; // nobody listens there
        auto establishing = std::make_shared<Establishing>();
        try {
            establishing->outgoing = shm::OutgoingConnection::connect(
                registry_, {to_shm(c.local), to_shm(c.remote),
                            {c.inbound_read_limit, c.outbound_read_limit}, as_bytes(private_data)});
        } catch (const std::system_error &) {
            return STATUS_CONNECTION_REFUSED; // the listener went meanwhile, or is not ours
        }
        establishing->fd = establishing->outgoing->fd();
        tables_.watch(establishing);
        c.link = std::make_unique<ShmConnectorLink>(*this, c, establishing);
        return STATUS_SUCCESS;
    }

    bool poll_from_consumer() override { return progress_->poll_from_consumer(); }

    // Nothing in flight: the progress thread idle, no change queued for it, no establishment,
    // no connection waiting at an acceptor, and on every link the peer has not told of its end
    // (link_ended), nothing in our ring, the peer's process and control socket quiet, and the
    // peer's end one of this process's links (whose ring, our messages to it, is looked at
    // too).  A link told of its end takes nothing more.
    bool quiescent(QuietLedger &ledger) override
    {
        using Kind = shm::ShmProgress::Kind;
        return tables_.quiescent(ledger, [&](const shm::ShmProgress::Entry &entry) {
            if (entry.kind == Kind::acceptor)
                return !os::readable_now(entry.fd);
            if (entry.kind != Kind::link || entry.state.gone)
                return true; // an fd is an establishment's (none: settled) or the tables' own
            const shm::ShmLink &link = entry.link();
            const std::string here = link.end_name();
            if (here.empty() || link.has_messages() || os::readable_now(link.control_fd()) ||
                os::readable_now(link.peer_fd()))
                return false;
            ledger.end_here(here);
            ledger.needs(link.peer_end_name());
            return true;
        });
    }

    ShmTables &tables() { return tables_; }

    // ---- the connector's events on the wire (ShmConnectorLink), wire lock held ----

    // A link that goes before the end only retires its exchange: the exchange closes once the
    // progress thread no longer watches it, and the peer learns from that.
    static constexpr bool kAbandonAtClose = false;

    void send_reply(SoftConnector &, const std::shared_ptr<Establishing> &e,
                    std::span<const unsigned char> private_data, ULONG inbound_read_limit,
                    ULONG outbound_read_limit)
    {
        best_effort([&] {
            e->incoming->accept(
                shm::Reply{inbound_read_limit, outbound_read_limit, as_bytes(private_data)});
        });
    }

    // Looks at the exchange now: false when the other side gave up or went (what the progress
    // thread would tell the connector next).
    bool peer_waiting(Establishing &e)
    {
        shm::Establish what = shm::Establish::waiting;
        best_effort([&] { what = e.outgoing ? e.outgoing->poll() : e.incoming->poll(); });
        return what != shm::Establish::abandoned && what != shm::Establish::failed;
    }

    void send_reject(Establishing &e, std::optional<std::span<const unsigned char>> private_data)
    {
        if (private_data)
            e.incoming->reject(as_bytes(*private_data));
        else
            e.incoming->reject(std::nullopt);
    }

    std::shared_ptr<Connection> complete(Establishing &e)
    {
        std::optional<shm::ShmLink> link = e.outgoing->complete();
        return link ? std::make_shared<Connection>(std::move(*link)) : nullptr;
    }

    // A full ring means the peer stopped reading: it learns by its own end.
    void send_disconnect(Connection &connection, ULONG reason)
    {
        (void)connection.link.send(shm::Disconnect{wire_reason(reason)});
    }

    std::unique_ptr<Channel> make_channel(std::shared_ptr<Connection> connection,
                                          SoftConnector &self)
    {
        return std::make_unique<ShmChannel>(*this, std::move(connection), *self.qp,
                                            self.outbound_read_limit);
    }

private:
    void release_claims()
    {
        for (const IpAddress &ip : claimed_) {
            try {
                registry_.remove(ip.to_string(), 0, self_);
            } catch (...) {
                // Stale once we exit: the next claim of the address takes it over.
            }
        }
        claimed_.clear();
    }

    // ---- the progress thread ----

    void incoming(shm::ShmAcceptor &acceptor) override
    {
        while (auto connection = acceptor.accept()) {
            auto establishing = std::make_shared<Establishing>();
            establishing->incoming.emplace(std::move(*connection));
            establishing->fd = establishing->incoming->fd();
            tables_.watch_here(establishing); // on the progress thread: directly
        }
    }

    void ready(int fd) override
    {
        std::shared_ptr<Establishing> establishing = tables_.ready(fd);
        if (!establishing)
            return;
        std::lock_guard wire(Fabric::instance().wire());
        if (establishing->outgoing)
            active_progress(establishing);
        else
            passive_progress(establishing);
    }

    void active_progress(const std::shared_ptr<Establishing> &e)
    {
        shm::Establish what = e->outgoing->poll();
        SoftConnector *c = e->connector;
        if (what == shm::Establish::waiting)
            return;
        if (what != shm::Establish::replied)
            tables_.retire(e); // the exchange is over
        if (c == nullptr)
            return; // the connector went: its link abandoned or refused the exchange
        const shm::ReceivedAnswer &answer = e->outgoing->answer();
        switch (what) {
        case shm::Establish::replied:
            on_reply(*c, as_uchars(answer.private_data), answer.limits.inbound,
                     answer.limits.outbound);
            break;
        case shm::Establish::rejected:
            if (answer.private_data_present)
                on_rejected(*c, as_uchars(answer.private_data));
            else
                on_rejected(*c, std::nullopt);
            break;
        case shm::Establish::failed: // the listener's process went: as if its connector closed
            if (c->state == SoftConnector::State::Connecting) {
                on_rejected(*c, std::nullopt);
                break;
            }
            [[fallthrough]];
        default: on_abandoned(*c); break; // CompleteConnect finds CONNECTION_ABORTED
        }
    }

    void passive_progress(const std::shared_ptr<Establishing> &e)
    {
        shm::Establish what = e->incoming->poll();
        if (what == shm::Establish::waiting)
            return;
        if (what == shm::Establish::request) {
            request_arrived(e);
            return;
        }
        SoftConnector *p = tables_.finish(e);
        if (p == nullptr)
            return;
        switch (what) {
        case shm::Establish::established: {
            SoftQp *qp = p->qp;
            if (qp == nullptr || p->state != SoftConnector::State::Accepting) {
                on_abandoned(*p);
                break;
            }
            auto connection = std::make_shared<Connection>(e->incoming->take_link());
            static_cast<ShmConnectorLink &>(*p->link).connected(connection);
            break;
        }
        default: // refused, abandoned, or the active side's process went
            if (p->state == SoftConnector::State::Accepting)
                on_reply_refused(*p); // the Accept fails: CONNECTION_ABORTED
            else
                on_abandoned(*p); // its Accept or Reject finds CONNECTION_ABORTED
            break;
        }
    }

    // A ConnectRequest reached one of our acceptors: a passive connector, or a Reject without
    // private data when no listener takes it (paused, closing: CONNECTION_REFUSED at the peer).
    void request_arrived(const std::shared_ptr<Establishing> &e)
    {
        const shm::ReceivedRequest &request = e->incoming->request();
        SoftListener *listener = listener_taking_requests(to_soft(request.destination));
        if (listener == nullptr || &listener->adapter().miniport() != &miniport_) {
            best_effort([&] { e->incoming->reject(std::nullopt); });
            tables_.retire(e);
            return;
        }
        SoftConnector &p = connect_request_arrived(
            *listener, to_soft(request.source), {request.limits.inbound, request.limits.outbound},
            as_uchars(request.private_data));
        p.link = std::make_unique<ShmConnectorLink>(*this, p, e);
        deliver_connect_event(p);
    }

    void readable(shm::ShmLink &link) override
    {
        // Every link served here is a connection's (ConnectionLink: alive while served; once
        // retired it has no QP nor connector, and its messages complete nothing).
        Connection &connection = ShmConnectionLink::connection_of(link);
        if (buffer_.size() < link.max_message())
            buffer_.resize(link.max_message());
        std::size_t length = 0;
        for (std::size_t taken = 0; taken < kMessagesPerServe; ++taken) {
            const bool message = link.receive_bytes(buffer_, length) == shm::RingStatus::ok;
            // Taken after the message and applied before it: the successes the peer answered
            // before an error Ack complete first (ShmLink::take_answered).  Taken even when
            // the connection is gone, or the link would look busy for ever.
            const std::optional<std::uint64_t> answered = link.take_answered();
            if (!message) {
                if (answered)
                    with_qp(connection,
                            [&](SoftQp &qp) { apply_answered(connection, qp, *answered); });
                return;
            }
            on_message(connection, answered, std::span<const std::byte>(buffer_.data(), length));
        }
    }

    // Runs `serve(qp)` with the locks data needs: the wire lock shared and the QP's connection
    // lock.  Nothing when the channel went (the connection is over here).
    template <class Serve>
    static void with_qp(Connection &connection, Serve &&serve)
    {
        std::shared_lock wire(Fabric::instance().wire());
        SoftQp *qp = connection.qp.load();
        if (qp == nullptr)
            return;
        std::lock_guard lock(qp->connection_mu()); // the QP lives: closes are exclusive
        if (connection.qp.load() != qp)
            return; // its channel went while we waited
        serve(*qp);
    }

    // The connection's channel on `qp` while it lasts: a completion may end the connection,
    // which destroys the channel (fail_connection).
    static ShmChannel *channel_of(Connection &connection, SoftQp &qp)
    {
        return connection.qp.load() == &qp ? &static_cast<ShmChannel &>(*qp.channel) : nullptr;
    }

    // The peer answered our requests up to `sequence` STATUS_SUCCESS: each completes as its
    // Ack would, for as long as the channel lasts.
    static void apply_answered(Connection &connection, SoftQp &qp, std::uint64_t sequence)
    {
        while (ShmChannel *channel = channel_of(connection, qp))
            if (!channel->answered_next(sequence, Hold::Shared))
                return;
    }

    // One message of the peer, after the successes it answered before it (`answered`), with
    // the locks each needs.
    void on_message(Connection &connection, std::optional<std::uint64_t> answered,
                    std::span<const std::byte> raw)
    {
        shm::Message message = shm::decode(raw);
        bool exclusive = !std::holds_alternative<shm::Send>(message) &&
                         !std::holds_alternative<shm::Write>(message) &&
                         !std::holds_alternative<shm::ReadRequest>(message) &&
                         !std::holds_alternative<shm::Ack>(message);
        if (auto *send = std::get_if<shm::Send>(&message); send && send->invalidate)
            exclusive = true; // it changes memory access (soft_transfer.hpp)
        if (exclusive) {
            if (answered)
                with_qp(connection, [&](SoftQp &qp) { apply_answered(connection, qp, *answered); });
            std::lock_guard wire(Fabric::instance().wire());
            on_control(connection, raw, message);
            return;
        }
        with_qp(connection, [&](SoftQp &qp) {
            if (answered)
                apply_answered(connection, qp, *answered);
            ShmChannel *channel = channel_of(connection, qp);
            if (channel == nullptr)
                return;
            if (auto *ack = std::get_if<shm::Ack>(&message))
                channel->acknowledged(*ack, Hold::Shared);
            else
                channel->arrived(raw, message);
        });
    }

    // Teardown, invalidating Sends and garbage: wire lock exclusive.
    void on_control(Connection &connection, std::span<const std::byte> raw,
                    const shm::Message &message)
    {
        if (auto *d = std::get_if<shm::Disconnect>(&message)) {
            if (SoftConnector *c = connection.connector;
                c != nullptr && c->state == SoftConnector::State::Connected)
                on_disconnected(*c, disconnect_reason(d->reason));
            return;
        }
        SoftQp *qp = connection.qp.load();
        if (qp == nullptr)
            return;
        if (std::holds_alternative<shm::Terminate>(message)) {
            // The peer's QP failed (an error completion there): ours follows (digest 4.2).
            qp->state = SoftQp::State::Error;
            flush_qp(*qp);
            return;
        }
        if (std::holds_alternative<shm::Send>(message)) {
            static_cast<ShmChannel &>(*qp->channel).arrived(raw, message);
            return;
        }
        if (std::holds_alternative<shm::ReceiveReady>(message))
            return; // the target decides a held Send's fate: nothing to do here
        // Malformed, or establishment traffic on an established link: the peer is broken.
        if (qp->state == SoftQp::State::Connected)
            fail_connection(*qp);
    }

    void link_ended(shm::ShmLink &link) override
    {
        std::shared_ptr<Connection> connection = tables_.connection_of(link);
        if (!connection)
            return;
        std::lock_guard wire(Fabric::instance().wire());
        SoftConnector *c = connection->connector;
        if (SoftQp *qp = connection->qp.load(); qp != nullptr && qp->state == SoftQp::State::Connected) {
            qp->state = SoftQp::State::Error; // what was in flight is lost
            flush_qp(*qp);
        }
        if (c != nullptr && c->state == SoftConnector::State::Connected)
            on_disconnected(*c, kDisconnectError);
    }

    Miniport &miniport_;
    shm::EndpointRegistry registry_;
    os::ProcessIdentity self_;
    std::vector<IpAddress> claimed_;
    ShmTables tables_;
    std::vector<std::byte> buffer_; // the progress thread's message
    std::optional<shm::ShmProgress> progress_; // last: stopped first
};

// ---- ShmChannel ---------------------------------------------------------------------------

ShmChannel::ShmChannel(ShmTransport &transport, std::shared_ptr<Connection> connection,
                       SoftQp &qp, ULONG outbound_read_limit)
    : TransportChannel(transport, std::move(connection), qp, kPipelineDepth,
                       std::clamp<std::size_t>(outbound_read_limit, 1, kPipelineDepth))
{
    std::size_t room = connection_->link.max_message();
    auto vectors = [room](shm::MessageType type) {
        return std::pair{shm::max_slot_vectors(room, type),
                         shm::max_slot_shared_vectors(room, type)};
    };
    auto [send_vectors, send_shared] = vectors(shm::MessageType::send);
    auto [write_vectors, write_shared] = vectors(shm::MessageType::write);
    auto [read_vectors, read_shared] = vectors(shm::MessageType::read_request);
    send_room_ = {shm::max_inline_send(room), send_vectors, send_shared};
    write_room_ = {shm::max_inline_write(room), write_vectors, write_shared};
    read_room_ = {0, read_vectors, read_shared};
}

ShmChannel::InFlight &ShmChannel::next_request()
{
    InFlight &request = in_flight_.emplace_back();
    request.sequence = next_sequence_++;
    return request;
}

Answer ShmChannel::transmit(const shm::Message &message)
{
    // At most kPipelineDepth requests per QP, plus Acks, a Terminate and a Disconnect: the
    // ring is never full unless the peer stopped reading, which ends the connection.
    if (connection_->link.send(message) != shm::RingStatus::ok) {
        in_flight_.pop_back(); // never went: it completes now
        return {.status = STATUS_CONNECTION_ABORTED};
    }
    return {.later = true};
}

Answer ShmChannel::send(SoftQp &qp, const Spans &source, bool solicited,
                        std::optional<UINT32> invalidate)
{
    InFlight &request = next_request();
    shm::Message message; // built in place: transmit() takes the variant, not a copy of it
    auto &m = message.emplace<shm::Send>();
    m.sequence = request.sequence;
    m.solicited = solicited;
    m.invalidate = invalidate.has_value();
    m.invalidate_token = invalidate.value_or(0);
    m.rnr_timeout_ms = static_cast<std::uint32_t>(qp.adapter().knobs().rnr_timeout().count());
    m.payload = outgoing_payload(source, send_room_, request.list);
    return transmit(message);
}

Answer ShmChannel::write(SoftQp &, const Spans &source, UINT32 token, UINT64 address)
{
    InFlight &request = next_request();
    shm::Message message;
    auto &m = message.emplace<shm::Write>();
    m.sequence = request.sequence;
    m.remote_address = address;
    m.remote_token = token;
    m.payload = outgoing_payload(source, write_room_, request.list);
    return transmit(message);
}

Answer ShmChannel::read(SoftQp &, const Spans &sink, UINT32 token, UINT64 address)
{
    InFlight &request = next_request();
    shm::Message message;
    auto &m = message.emplace<shm::ReadRequest>();
    m.sequence = request.sequence;
    m.remote_address = address;
    m.remote_token = token;
    m.sink = outgoing_payload(sink, read_room_, request.list);
    return transmit(message);
}

void ShmChannel::fail_peer()
{
    (void)connection_->link.send(shm::Terminate{0, static_cast<std::uint32_t>(STATUS_CANCELLED)});
}

void ShmChannel::answer(std::uint64_t sequence, NTSTATUS status)
{
    // Requests are answered in order, so a success is the link's counter moving to it (no
    // message); an error is an Ack message, behind the counter that covers every request
    // before it.
    if (status == STATUS_SUCCESS) {
        connection_->link.publish_answered(sequence);
        return;
    }
    // An error answer puts the initiator's QP in the error state (digest 4.2), which completes
    // what it sent after this request CANCELLED: none of that is taken here, as a responder
    // that NAKs a request executes none behind it.
    refusing_ = true;
    (void)connection_->link.send(shm::Ack{sequence, static_cast<std::uint32_t>(status)});
}

bool ShmChannel::answered_next(std::uint64_t sequence, Hold hold)
{
    if (in_flight_.empty() || in_flight_.front().sequence > sequence)
        return false;
    acknowledged({in_flight_.front().sequence, static_cast<std::uint32_t>(STATUS_SUCCESS)}, hold);
    return true;
}

void ShmChannel::acknowledged(const shm::Ack &ack, Hold hold)
{
    // Requests before it that the peer dropped unanswered (behind a Send its RNR timeout
    // ended) are over: the QP's error state flushed them.
    while (!in_flight_.empty() && in_flight_.front().sequence < ack.sequence)
        in_flight_.pop_front();
    if (in_flight_.empty() || in_flight_.front().sequence != ack.sequence)
        return; // not a request of ours in flight
    // The QP's requests in flight are the newest of ours: older ones were flushed meanwhile
    // and their answers complete nothing.
    const std::size_t live = qp_.in_flight - (qp_.settled_behind ? 1 : 0);
    const bool flushed = in_flight_.size() > live;
    in_flight_.pop_front();
    if (flushed)
        return;
    auto status = static_cast<NTSTATUS>(ack.status);
    if (hold == Hold::Exclusive || qp_.initiator.empty() ||
        !changes_memory_access(qp_.initiator.front())) {
        answered(qp_, status, hold);
        return;
    }
    // A Read that invalidates its sink completes with the wire lock exclusive: the engine.
    SoftAdapter &adapter = qp_.adapter();
    adapter.deliver([&adapter, qp = &qp_, channel = this, status] {
        std::lock_guard lock(adapter.mu());
        if (adapter.exists(qp) && qp->channel.get() == channel)
            answered(*qp, status, Hold::Exclusive);
    });
}

std::optional<Answer> ShmChannel::take_send(const shm::Send &send)
{
    std::optional<UINT32> invalidate;
    if (send.invalidate)
        invalidate = send.invalidate_token;
    if (send.payload.form == shm::PayloadForm::inline_bytes) { // nothing to open or map
        const Span bytes = inline_span(send.payload.bytes);
        LocalPayload payload(std::span(&bytes, 1));
        return arrive_send(qp_, payload, send.solicited, invalidate);
    }
    IncomingPayload payload;
    if (!payload.open(connection_->link.peer().pid, send.payload, mappings_))
        return std::nullopt;
    return arrive_send(qp_, payload, send.solicited, invalidate);
}

void ShmChannel::arrived(std::span<const std::byte> raw, const shm::Message &message)
{
    if (refusing_)
        return; // behind a request that failed: never taken (answer())
    if (!held_.empty()) {
        held_.emplace_back(raw.begin(), raw.end()); // behind the held Send, in order
        return;
    }
    (void)take(raw, message); // returns at once either way
}

bool ShmChannel::take(std::span<const std::byte> raw, const shm::Message &message)
{
    if (auto *send = std::get_if<shm::Send>(&message)) {
        std::optional<Answer> a = take_send(*send);
        if (!a) {
            fail_connection(qp_); // a payload we cannot have
            return false;
        }
        if (a->no_receive)
            hold_send(raw, send->sequence, send->rnr_timeout_ms);
        else
            answer(send->sequence, a->status);
        return true;
    }
    pid_t peer = connection_->link.peer().pid;
    IncomingPayload payload; // not for a Send, whose common form needs none (take_send)
    if (auto *write = std::get_if<shm::Write>(&message)) {
        NTSTATUS s = payload.open(peer, write->payload, mappings_)
                         ? arrive_write(qp_, write->remote_token, write->remote_address, payload)
                         : STATUS_ACCESS_VIOLATION;
        answer(write->sequence, s);
        return true;
    }
    if (auto *read = std::get_if<shm::ReadRequest>(&message)) {
        NTSTATUS s = payload.open(peer, read->sink, mappings_)
                         ? arrive_read(qp_, read->remote_token, read->remote_address, payload)
                         : STATUS_ACCESS_VIOLATION;
        answer(read->sequence, s);
        return true;
    }
    fail_connection(qp_); // nothing else reaches the target side
    return false;
}

void ShmChannel::take_waiting(std::deque<std::vector<std::byte>> waiting)
{
    while (!waiting.empty() && !refusing_) {
        if (!held_.empty()) { // another Send holds: the rest waits behind it
            std::move(waiting.begin(), waiting.end(), std::back_inserter(held_));
            return;
        }
        std::vector<std::byte> raw = std::move(waiting.front());
        waiting.pop_front();
        if (!take(raw, shm::decode(raw)))
            return; // the connection failed: this channel is gone
    }
}

void ShmChannel::hold_send(std::span<const std::byte> raw, std::uint64_t sequence,
                           std::uint32_t rnr_timeout_ms)
{
    if (rnr_timeout_ms == 0) { // no retries
        answer(sequence, STATUS_IO_TIMEOUT);
        return;
    }
    held_.emplace_front(raw.begin(), raw.end());
    start_rnr_wait(std::chrono::milliseconds(rnr_timeout_ms), [this, sequence] {
        held_.clear(); // and what waited behind it
        answer(sequence, STATUS_IO_TIMEOUT); // receiver not ready
    });
}

void ShmChannel::drop_held()
{
    end_rnr_wait();
    held_.clear();
}

bool ShmChannel::retry_from_engine(Hold hold)
{
    if (hold != Hold::Shared)
        return false;
    for (const std::vector<std::byte> &raw : held_) {
        const shm::Message message = shm::decode(raw);
        const auto *send = std::get_if<shm::Send>(&message);
        if (send != nullptr && send->invalidate)
            return true;
    }
    return false;
}

void ShmChannel::retry_held(Hold)
{
    if (held_.empty())
        return;
    shm::Message message = shm::decode(held_.front()); // spans into it: kept until answered
    const auto &send = std::get<shm::Send>(message);
    std::optional<Answer> a = take_send(send);
    if (!a) {
        drop_held();
        fail_connection(qp_);
        return;
    }
    if (a->no_receive)
        return; // another QP of the SRQ took the receive: the RNR timer runs on
    std::uint64_t sequence = send.sequence;
    std::deque<std::vector<std::byte>> waiting = std::move(held_);
    waiting.pop_front();
    drop_held();
    answer(sequence, a->status);
    take_waiting(std::move(waiting));
}

} // namespace

std::unique_ptr<Transport> make_shm_transport(Miniport &miniport)
{
    return std::make_unique<ShmTransport>(miniport);
}

} // namespace ndk::soft
