// What the connector of a transport with a progress thread of its own (shm, tcp) holds, from
// the connect request to the end of the connection: the exchange that establishes it
// (`TransportEstablishing`), then the established link (`TransportConnection`), and the
// connector's link to the other side over them (`TransportConnectorLink`), whose steps that do
// not depend on the wire are written here once; the transport's link adds how each event of
// soft_connector_link.hpp goes on its wire (docs/transport.md, "The interface").
//
// Lifetimes and locks: soft_transport_tables.hpp.  Wire lock held (exclusive) for every call.
#pragma once

#include "providers/soft/soft_channel.hpp"
#include "providers/soft/soft_connection.hpp"
#include "providers/soft/soft_connector_link.hpp"

#include <atomic>
#include <cstddef>
#include <memory>
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
template <class Link, class Held = Link>
struct TransportConnection {
    explicit TransportConnection(Held l) : link(std::move(l)) {}
    Link &wire()
    {
        if constexpr (std::is_same_v<Held, Link>)
            return link;
        else
            return *link;
    }
    Held link;
    std::atomic<SoftQp *> qp{nullptr};
    SoftConnector *connector = nullptr;
};

// The connector's line to the other side: the exchange until `connected`, then the link.
// `Transport` has tables() (soft_transport_tables.hpp).
template <class Transport, class Establishing, class Connection>
class TransportConnectorLink : public ConnectorLink {
public:
    TransportConnectorLink(Transport &transport, SoftConnector &self,
                           std::shared_ptr<Establishing> establishing)
        : transport_(transport), self_(self), establishing_(std::move(establishing))
    {
        establishing_->connector = &self_;
    }

    ~TransportConnectorLink() override
    {
        if (establishing_) {
            establishing_->connector = nullptr;
            transport_.tables().retire(establishing_);
        }
        if (connection_) {
            connection_->connector = nullptr;
            transport_.tables().retire_if_unused(connection_);
        }
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
        self_.qp->channel = make_channel();
        transport_.tables().watch(connection_);
        if (self_.passive)
            on_ready_to_use(self_);
        else
            established(self_);
    }

protected:
    // The QP's channel over connection_.
    virtual std::unique_ptr<Channel> make_channel() = 0;

    Transport &transport_;
    SoftConnector &self_;
    std::shared_ptr<Establishing> establishing_;
    std::shared_ptr<Connection> connection_;
};

} // namespace ndk::soft
