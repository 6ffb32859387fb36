// What the connector of a transport with a progress thread of its own (shm, tcp) holds, from
// the connect request to the end of the connection: the exchange that establishes it
// (`TransportEstablishing`), then the established link (`TransportConnection`), and the
// connector's link to the other side over them (`TransportConnectorLink`), whose events are
// written here once; the transport says how each goes on its wire (docs/transport.md, "The
// interface").
//
// Lifetimes and locks: soft_transport_tables.hpp.  Wire lock held (exclusive) for every call.
#pragma once

#include "providers/soft/soft_adapter.hpp"
#include "providers/soft/soft_channel.hpp"
#include "providers/soft/soft_connection.hpp"
#include "providers/soft/soft_connector_link.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <type_traits>

namespace ndk::soft {

// Private data as the wire's bytes and back.
inline std::span<const std::byte> as_bytes(std::span<const unsigned char> data)
{
    return std::as_bytes(data);
}

inline std::span<const unsigned char> as_uchars(std::span<const std::byte> data)
{
    return {reinterpret_cast<const unsigned char *>(data.data()), data.size()};
}

// A call on an exchange or a socket whose failure changes nothing here: the peer gave up or
// went and the progress thread has not told the connector yet, or the system refused
// (descriptors, memory).  The connector learns the outcome from the progress thread next, or
// its establishment timer (or the peer's) ends the wait.
template <class Call>
void best_effort(Call &&call)
{
    try {
        call();
    } catch (const std::exception &) {
    }
}

// A connection being established: the exchange of one side (`Outgoing` the active side's,
// `Incoming` the passive side's), and the connector it serves (null once that connector's link
// is gone).  Wire lock held for `connector`.
template <class Outgoing, class Incoming>
struct TransportEstablishing {
    std::optional<Outgoing> outgoing; // active side
    std::optional<Incoming> incoming; // passive side
    SoftConnector *connector = nullptr;
    // The exchange's socket, watched by the progress thread.
    int fd = -1;
};

// An established connection: the link (`Held`: the link itself, or what owns it), and this
// side's QP and connector (each null once its channel or link is gone, which may happen on the
// data path: an error completion ends the connection under the shared wire lock and the QP's
// connection lock, so `qp` is atomic and the progress thread checks it again under that lock).
// Wire lock held for `connector`.
// `Held` is the link itself, a type derived from it (ConnectionLink), or what owns it.
template <class Link, class Held = Link>
struct TransportConnection {
    explicit TransportConnection(Held l) : link(std::move(l)) {}
    Link &wire()
    {
        if constexpr (std::is_base_of_v<Link, Held>)
            return link;
        else
            return *link;
    }
    Held link;
    std::atomic<SoftQp *> qp{nullptr};
    SoftConnector *connector = nullptr;
};

// A link that knows the connection holding it (as `Connection::link`, made in the connection's
// constructor): the progress thread's handler, given the link, reaches its connection with one
// load, where the tables' connection_of() takes their mutex, looks the link up in a map and
// copies a shared_ptr (two atomic read-modify-writes) on every call; on the shm transport's
// data path that was once per serve of the rings, i.e. per message of a ping-pong
// (docs/performance.md, "The receiving side's lookups").
//
// Why the pointer is good: the progress thread (and a consumer's poll) hands the handler only
// links it watches, a connection's link is watched only through tables.watch(connection), and
// the tables destroy a retired connection only after the queued removal of its link from the
// progress thread (they hold the last reference until then).  Between its retirement and that
// removal the connection has neither QP nor connector (retire_if_unused), so what arrives
// completes nothing, as when connection_of() found no connection.
template <class Link, class Connection>
struct ConnectionLink : Link {
    ConnectionLink(Link l, Connection &c) : Link(std::move(l)), connection(&c) {}
    // `link` is the wire() of a Connection made with this type (the only links its transport's
    // progress watches).
    static Connection &connection_of(Link &link)
    {
        return *static_cast<ConnectionLink &>(link).connection;
    }
    Connection *connection;
};

// The QP's channel over an established connection, for as long as the QP uses it; at its end
// the connection leaves the progress thread unless the connector still has it.  The transport's
// channel adds the data path (soft_channel.hpp).
//
// The receiver-not-ready wait: a Send of the peer that found no receive is held (how, and what
// waits behind it, is the transport's) until a receive is posted or the RNR timeout ends it.
// start_rnr_wait() starts that timeout, end_rnr_wait() ends it early (the Send went on, or
// the hold was dropped), and the channel's end ends it too.
template <class Transport, class Connection>
class TransportChannel : public Channel {
public:
    // A receive was posted: the held Send goes on, here or, when it must run with the wire
    // lock exclusive and this call does not hold it so (retry_from_engine), from the engine.
    void receive_posted(Hold hold) final
    {
        if (!holding_send())
            return;
        if (!retry_from_engine(hold)) {
            retry_held(hold);
            return;
        }
        SoftAdapter &adapter = qp_.adapter();
        adapter.deliver([&adapter, qp = &qp_, channel = this] {
            std::lock_guard lock(adapter.mu());
            if (adapter.exists(qp) && qp->channel.get() == channel)
                channel->retry_held(Hold::Exclusive);
        });
    }

    // How many requests the engine lets travel unanswered, and how many Reads among them: the
    // transport's choice, given at construction.
    PipelineLimits pipeline_limits() const final { return pipeline_; }

protected:
    TransportChannel(Transport &transport, std::shared_ptr<Connection> connection, SoftQp &qp,
                     std::size_t pipeline_depth, std::size_t read_depth = 1)
        : transport_(transport), connection_(std::move(connection)), qp_(qp),
          pipeline_{pipeline_depth, read_depth}
    {
    }

    ~TransportChannel() override
    {
        end_rnr_wait();
        connection_->qp.store(nullptr);
        transport_.tables().retire_if_unused(connection_);
    }

    // `expired` runs after `timeout` on the adapter's engine, under the adapter's lock, unless
    // end_rnr_wait() or another start_rnr_wait() came first or the QP no longer has this
    // channel.
    template <class Expired>
    void start_rnr_wait(std::chrono::microseconds timeout, Expired expired)
    {
        SoftAdapter &adapter = qp_.adapter();
        const std::uint64_t mine = ++rnr_generation_;
        rnr_timer_ = adapter.engine().post_after(
            timeout, [&adapter, qp = &qp_, channel = this, mine, expired = std::move(expired)] {
                std::lock_guard lock(adapter.mu());
                if (!adapter.exists(qp) || qp->channel.get() != channel ||
                    channel->rnr_generation_ != mine)
                    return;
                channel->rnr_timer_ = 0;
                expired();
            });
    }

    void end_rnr_wait()
    {
        if (rnr_timer_ != 0)
            qp_.adapter().engine().cancel(rnr_timer_);
        rnr_timer_ = 0;
        ++rnr_generation_;
    }

    // Whether a Send of the peer is held; whether, with the wire lock held as `hold` says, it
    // must go on from the engine instead; and going on with it (wire lock held as `hold`).
    virtual bool holding_send() const = 0;
    virtual bool retry_from_engine(Hold hold) = 0;
    virtual void retry_held(Hold hold) = 0;

    Transport &transport_;
    std::shared_ptr<Connection> connection_;
    SoftQp &qp_;

private:
    const PipelineLimits pipeline_;
    std::uint64_t rnr_timer_ = 0;
    std::uint64_t rnr_generation_ = 0; // which start_rnr_wait() a timer that runs is for
};

// The connector's line to the other side: the exchange until `connected`, then the link.
// Each event of soft_connector_link.hpp is written here once, as the rules of establishment
// want it (who may still be told, what is best effort, when the connection is there); how it
// goes on the wire is the transport's.  `Transport` has tables() (soft_transport_tables.hpp)
// and, called under the wire lock:
//   send_reply(self, establishing, private_data, inbound, outbound)   the Accept's reply
//   peer_waiting(establishing)         whether the other side still takes the exchange's events
//   send_reject(establishing, private_data)   NdkReject's, or a close before Accept (nullopt)
//   complete(establishing)             the active side's established Connection, or null
//   send_disconnect(connection, reason)
//   make_channel(connection, self)     the QP's channel over the connection
//   kAbandonAtClose                    whether a link that goes before the end abandons the
//                                      exchange itself (else the exchange's end tells the peer)
template <class Transport, class Establishing, class Connection>
class TransportConnectorLink final : public ConnectorLink {
public:
    TransportConnectorLink(Transport &transport, SoftConnector &self,
                           std::shared_ptr<Establishing> establishing)
        : transport_(transport), self_(self), establishing_(std::move(establishing))
    {
        establishing_->connector = &self_;
    }

    ~TransportConnectorLink() override
    {
        if constexpr (Transport::kAbandonAtClose)
            abandon();
        if (establishing_) {
            establishing_->connector = nullptr;
            transport_.tables().retire(establishing_);
        }
        if (connection_) {
            connection_->connector = nullptr;
            transport_.tables().retire_if_unused(connection_);
        }
    }

    void reply(std::span<const unsigned char> private_data, ULONG inbound_read_limit,
               ULONG outbound_read_limit) override
    {
        transport_.send_reply(self_, establishing_, private_data, inbound_read_limit,
                              outbound_read_limit);
    }

    bool reject(std::optional<std::span<const unsigned char>> private_data) override
    {
        if (!establishing_ || !transport_.peer_waiting(*establishing_))
            return false; // the active side gave up or went meanwhile
        best_effort([&] { transport_.send_reject(*establishing_, private_data); });
        return true;
    }

    bool ready_to_use() override
    {
        std::shared_ptr<Connection> connection;
        best_effort([&] { connection = transport_.complete(*establishing_); });
        if (!connection)
            return false; // the passive side went meanwhile
        connected(std::move(connection));
        return true;
    }

    bool refuse_reply() override
    {
        if (!establishing_ || !transport_.peer_waiting(*establishing_))
            return false;
        best_effort([&] { establishing_->outgoing->refuse(); });
        return true;
    }

    void abandon() override
    {
        if (!establishing_)
            return;
        best_effort([&] {
            if (establishing_->outgoing)
                establishing_->outgoing->abandon();
            else
                establishing_->incoming->abandon();
        });
    }

    void disconnect(ULONG reason) override
    {
        if (connection_)
            transport_.send_disconnect(*connection_, reason);
    }

    // The exchange established `connection` (the passive side's when the active side's ready
    // to use arrived, the active side's in ready_to_use()): the QP gets its channel, the link
    // is watched, and the connector is connected.
    void connected(std::shared_ptr<Connection> connection)
    {
        establishing_->connector = nullptr;
        transport_.tables().retire(establishing_);
        establishing_.reset();
        connection_ = std::move(connection);
        connection_->connector = &self_;
        connection_->qp.store(self_.qp);
        self_.qp->channel = transport_.make_channel(connection_, self_);
        transport_.tables().watch(connection_);
        if (self_.passive)
            on_ready_to_use(self_);
        else
            established(self_);
    }

private:
    Transport &transport_;
    SoftConnector &self_;
    std::shared_ptr<Establishing> establishing_;
    std::shared_ptr<Connection> connection_;
};

} // namespace ndk::soft
