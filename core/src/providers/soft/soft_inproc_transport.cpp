// The inproc transport: both ends of every connection are in this process.  Its channel runs
// an operation at the peer's target side at once, under the connection's one lock
// (soft_channel.hpp); its connector link hands each establishment event straight to the
// other connector (soft_connector_link.hpp).
#include "soft_channel.hpp"
#include "soft_connection.hpp"
#include "soft_connector_link.hpp"
#include "soft_target.hpp"

namespace ndk::soft {

Reply InprocChannel::send(SoftQp &, const Spans &source, bool solicited,
                          std::optional<UINT32> invalidate)
{
    LocalPayload payload(source);
    SendArrival arrival = arrive_send(peer_, payload, solicited, invalidate);
    return arrival.no_receive ? Reply::waiting() : Reply::done_with(arrival.status);
}

Reply InprocChannel::write(SoftQp &, const Spans &source, UINT32 token, UINT64 address)
{
    LocalPayload payload(source);
    return Reply::done_with(arrive_write(peer_, token, address, payload));
}

Reply InprocChannel::read(SoftQp &, const Spans &sink, UINT32 token, UINT64 address)
{
    LocalPayload payload(sink);
    return Reply::done_with(arrive_read(peer_, token, address, payload));
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

void InprocConnectorLink::reject(std::optional<std::span<const unsigned char>> private_data)
{
    on_rejected(peer_, private_data);
}

void InprocConnectorLink::ready_to_use()
{
    SoftQp &active = *self_.qp, &passive = *peer_.qp;
    active.channel = std::make_unique<InprocChannel>(passive);
    passive.channel = std::make_unique<InprocChannel>(active);
    // From now on a transfer touches both QPs: one lock for the connection (soft_objects.hpp).
    active.connection_mu = passive.connection_mu = std::make_shared<std::mutex>();
    established(self_);
    on_ready_to_use(peer_);
}

void InprocConnectorLink::refuse_reply() { on_reply_refused(peer_); }

void InprocConnectorLink::abandon() { on_abandoned(peer_); }

void InprocConnectorLink::disconnect(ULONG reason) { on_disconnected(peer_, reason); }

} // namespace ndk::soft
