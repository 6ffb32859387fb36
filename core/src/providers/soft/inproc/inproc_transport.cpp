// The inproc transport: both ends of every connection are in this process.  A connect request
// finds its listener in the fabric's table and becomes a connector of the listener's adapter;
// the connector link hands each establishment event straight to the other connector
// (soft_connector_link.hpp); the channel runs an operation at the peer's target side at once,
// under the connection's one lock (soft_channel.hpp).
#include "providers/soft/soft_channel.hpp"
#include "providers/soft/soft_connection.hpp"
#include "providers/soft/soft_connector_link.hpp"
#include "providers/soft/soft_qp_complete.hpp"
#include "providers/soft/soft_target.hpp"
#include "providers/soft/soft_transfer.hpp"
#include "providers/soft/soft_transport.hpp"

#include <algorithm>

namespace ndk::soft {
namespace {

// Where a connect request goes: the listener at `dest`, or the status that refuses it.
NTSTATUS find_listener(SoftAdapter &adapter, const Endpoint &dest, SoftListener *&out)
{
    Miniport *owner = Fabric::instance().owner(dest.ip);
    if (owner == nullptr)
        return STATUS_HOST_UNREACHABLE; // no soft RNIC has this address
    if (!loopback_allowed(adapter, *owner))
        return STATUS_HOST_UNREACHABLE; // docs/semantics.md, CONN-LOOPBACK
    out = listener_taking_requests(dest);
    return out != nullptr ? STATUS_SUCCESS : STATUS_CONNECTION_REFUSED;
}

class InprocTransport final : public Transport {
public:
    NTSTATUS start_listening(SoftListener &listener) override
    {
        Fabric::instance().set_listener(listener.port->endpoint(), &listener);
        return STATUS_SUCCESS;
    }

    void stop_listening(SoftListener &listener) override
    {
        Fabric::instance().set_listener(listener.port->endpoint(), nullptr);
    }

    NTSTATUS connect(SoftConnector &c, std::span<const unsigned char> private_data) override
    {
        SoftListener *listener = nullptr;
        if (NTSTATUS s = find_listener(c.adapter(), c.remote, listener); s != STATUS_SUCCESS)
            return s;
        SoftConnector &incoming = connect_request_arrived(
            *listener, c.local, {c.inbound_read_limit, c.outbound_read_limit}, private_data);
        link_inproc(c, incoming);
        deliver_connect_event(incoming);
        return STATUS_SUCCESS;
    }
};

} // namespace

Transport &inproc_transport()
{
    static InprocTransport transport;
    return transport;
}

Answer InprocChannel::send(SoftQp &, const Spans &source, bool solicited,
                           std::optional<UINT32> invalidate)
{
    LocalPayload payload(source);
    return arrive_send(peer_, payload, solicited, invalidate);
}

Answer InprocChannel::write(SoftQp &, const Spans &source, UINT32 token, UINT64 address)
{
    LocalPayload payload(source);
    return {.status = arrive_write(peer_, token, address, payload)};
}

Answer InprocChannel::read(SoftQp &, const Spans &sink, UINT32 token, UINT64 address)
{
    LocalPayload payload(sink);
    return {.status = arrive_read(peer_, token, address, payload)};
}

void InprocChannel::receive_posted(Hold hold)
{
    if (!peer_.initiator.empty())
        kick(peer_, hold);
}

void InprocChannel::fail_peer()
{
    peer_.state = SoftQp::State::Error;
    flush_qp(peer_);
}

void link_inproc(SoftConnector &active, SoftConnector &passive)
{
    active.link = std::make_unique<InprocConnectorLink>(active, passive);
    passive.link = std::make_unique<InprocConnectorLink>(passive, active);
}

void InprocConnectorLink::reply(std::span<const unsigned char> private_data,
                                ULONG inbound_read_limit, ULONG outbound_read_limit)
{
    on_reply(peer_, private_data, inbound_read_limit, outbound_read_limit);
}

bool InprocConnectorLink::reject(std::optional<std::span<const unsigned char>> private_data)
{
    on_rejected(peer_, private_data);
    return true;
}

bool InprocConnectorLink::ready_to_use()
{
    SoftQp &active = *self_.qp, &passive = *peer_.qp;
    active.channel = std::make_unique<InprocChannel>(passive);
    passive.channel = std::make_unique<InprocChannel>(active);
    // From now on a transfer touches both QPs: one lock for the connection, in one line with
    // what both ends' posts and transfers write per message (soft_connection_line.hpp).
    auto line = std::make_shared<ConnectionLine>();
    active.share_connection_lock(line, 0);
    passive.share_connection_lock(std::move(line), 1);
    established(self_);
    on_ready_to_use(peer_);
    return true;
}

bool InprocConnectorLink::refuse_reply()
{
    on_reply_refused(peer_);
    return true;
}

void InprocConnectorLink::abandon() { on_abandoned(peer_); }

void InprocConnectorLink::disconnect(ULONG reason) { on_disconnected(peer_, reason); }

} // namespace ndk::soft
