// The passive side of establishment (Accept, Reject), CompleteConnect, Disconnect, the
// establishment timeout, and what closing a connector or an error completion does to its
// connection (digest 1.8, 1.11, 3.1, 3.5, 3.6).
#include "soft_connection.hpp"

#include "soft_channel.hpp"
#include "soft_connector_link.hpp"
#include "soft_qp_complete.hpp"
#include "providers/kit/kit_connection.hpp"

#include <algorithm>

namespace ndk::soft {

void complete_held_request(SoftObject &object, NDK_FN_REQUEST_COMPLETION completion,
                           PVOID context, NTSTATUS status)
{
    SoftAdapter &adapter = object.adapter();
    adapter.deliver([&object, &adapter, completion, context, status] {
        adapter.finish_request(&object, completion, context, status);
    });
}

namespace {

using State = SoftConnector::State;

// Finish the Connect or Accept this connector has in flight.
void finish_pending(SoftConnector &c, NTSTATUS status)
{
    if (c.pending_completion == nullptr)
        return;
    auto completion = c.pending_completion;
    auto context = c.pending_context;
    c.pending_completion = nullptr;
    complete_held_request(c, completion, context, status);
}

// Establishment ended without a connection; the QP may be used by another connector.
void establishment_failed(SoftConnector &c, NTSTATUS status)
{
    stop_establishment_timer(c);
    c.state = State::Failed;
    c.link.reset();
    if (c.qp != nullptr && c.qp->connector == &c)
        c.qp->connector = nullptr;
    Miniport::count(c.adapter().miniport().counters.ConnectFailure);
    finish_pending(c, status);
}

void indicate_disconnect(SoftConnector &c, ULONG reason)
{
    if (c.disconnect_indicated || c.local_disconnect)
        return; // once, and not to a side that disconnected itself (digest 3.6)
    c.disconnect_indicated = true;
    PVOID context = c.disconnect_context;
    if (auto ex = c.disconnect_event_ex)
        deliver_event(c, [ex, context, reason] { ex(context, reason); });
    else if (auto plain = c.disconnect_event)
        deliver_event(c, [plain, context] { plain(context); });
}

void leave_connected(SoftConnector &c)
{
    c.state = State::Disconnected;
    c.link.reset();
    if (c.counted_active) {
        c.counted_active = false;
        Miniport::count(c.adapter().miniport().counters.ActiveConnection, -1);
    }
    if (c.qp != nullptr) {
        c.qp->channel.reset();
        if (c.qp->state == SoftQp::State::Connected)
            c.qp->state = SoftQp::State::Disconnected;
    }
}


NTSTATUS start_accept(NDK_CONNECTOR *ndk_connector, NDK_QP *ndk_qp, ULONG irl, ULONG orl,
                      const void *private_data, ULONG private_data_length,
                      NDK_FN_DISCONNECT_EVENT_CALLBACK event,
                      NDK_FN_DISCONNECT_EVENT_CALLBACK_EX event_ex, PVOID event_context,
                      NDK_FN_REQUEST_COMPLETION completion, PVOID context)
{
    SoftConnector &p = *SoftConnector::from(ndk_connector);
    SoftAdapter &adapter = p.adapter();
    NDK_ADAPTER_INFO info = adapter.info();
    if (completion == nullptr)
        return STATUS_INVALID_PARAMETER;
    // ND2 Connector::Accept (digest 4.2)
    if (NTSTATUS status =
            kit::check_private_data(private_data, private_data_length, info.MaxCalleeData);
        status != STATUS_SUCCESS)
        return status;
    std::lock_guard lock(adapter.mu());
    if (p.state != State::Incoming)
        return STATUS_CONNECTION_INVALID; // not a connector delivered by a connect event
    SoftQp *qp = adapter.lookup<SoftQp>(ndk_qp, NdkObjectTypeQp);
    if (qp == nullptr)
        return STATUS_INVALID_PARAMETER;
    if (qp->connector != nullptr || qp->state != SoftQp::State::Idle)
        return STATUS_CONNECTION_ACTIVE; // docs/semantics.md, CONN-QP-REUSE
    p.qp = qp;
    qp->connector = &p;
    p.depend_on(*qp);
    p.pending_completion = completion;
    p.pending_context = context;
    p.add_dependent();
    if (!p.link) {
        establishment_failed(p, STATUS_CONNECTION_ABORTED); // the connecting peer gave up
        return STATUS_PENDING;
    }
    p.inbound_read_limit =
        kit::read_limit(irl, info.MaxInboundReadLimit, p.requested_outbound_read_limit);
    p.outbound_read_limit =
        kit::read_limit(orl, info.MaxOutboundReadLimit, p.requested_inbound_read_limit);
    p.disconnect_event = event;
    p.disconnect_event_ex = event_ex;
    p.disconnect_context = event_context;
    p.state = State::Accepting;
    start_establishment_timer(p); // IO_TIMEOUT if the peer never calls CompleteConnect
    const auto *bytes = static_cast<const unsigned char *>(private_data);
    p.link->reply({bytes, private_data_length}, p.inbound_read_limit, p.outbound_read_limit);
    return STATUS_PENDING;
}

NTSTATUS start_complete_connect(NDK_CONNECTOR *ndk_connector,
                                NDK_FN_DISCONNECT_EVENT_CALLBACK event,
                                NDK_FN_DISCONNECT_EVENT_CALLBACK_EX event_ex, PVOID event_context,
                                NDK_FN_REQUEST_COMPLETION, PVOID)
{
    SoftConnector &c = *SoftConnector::from(ndk_connector);
    SoftAdapter &adapter = c.adapter();
    {
        std::lock_guard lock(adapter.mu());
        if (c.state != State::Replied)
            return STATUS_CONNECTION_INVALID; // "QP is not connecting" (digest 1.8)
    }
    return adapter.request([&c, event, event_ex, event_context] {
        std::lock_guard lock(c.adapter().mu());
        if (c.state != State::Replied)
            return STATUS_CONNECTION_INVALID;
        stop_establishment_timer(c);
        if (!c.link) { // the accepting peer abandoned
            establishment_failed(c, STATUS_SUCCESS);
            return STATUS_CONNECTION_ABORTED;
        }
        c.disconnect_event = event;
        c.disconnect_event_ex = event_ex;
        c.disconnect_context = event_context;
        if (!c.link->ready_to_use()) { // both sides connected, the peer's Accept completes
            establishment_failed(c, STATUS_SUCCESS); // or the peer went meanwhile
            return STATUS_CONNECTION_ABORTED;
        }
        return STATUS_SUCCESS;
    });
}

void establishment_timed_out(SoftConnector &c)
{
    c.timer = 0;
    switch (c.state) {
    case State::Connecting: // no Accept or Reject from the listener's side
    case State::Accepting:  // no CompleteConnect from the connecting side
        if (c.link)
            c.link->abandon();
        establishment_failed(c, STATUS_IO_TIMEOUT);
        break;
    case State::Replied: // CompleteConnect never came: the accepting side is told
        if (c.link) {
            c.link->refuse_reply();
            c.link.reset();
        }
        c.state = State::Failed;
        break;
    default: break;
    }
}

} // namespace

void start_establishment_timer(SoftConnector &c)
{
    SoftAdapter &adapter = c.adapter();
    uint64_t mine = ++c.timer_generation;
    auto timeout = adapter.knobs().connect_timeout();
    c.timer = adapter.engine().post_after(timeout, [&adapter, connector = &c, mine] {
        std::lock_guard lock(adapter.mu());
        if (adapter.exists(connector) && connector->timer_generation == mine &&
            connector->timer != 0)
            establishment_timed_out(*connector);
    });
}

void stop_establishment_timer(SoftConnector &c)
{
    if (c.timer != 0) {
        c.adapter().engine().cancel(c.timer);
        c.timer = 0;
    }
    ++c.timer_generation;
}

void end_connection(SoftConnector &local, ULONG reason)
{
    std::unique_ptr<ConnectorLink> link = std::move(local.link);
    leave_connected(local);
    if (link)
        link->disconnect(reason);
}

void connection_terminated(SoftConnector &local)
{
    if (local.state != State::Connected)
        return;
    Miniport::count(local.adapter().miniport().counters.ConnectionError);
    end_connection(local, kDisconnectError);
}

void established(SoftConnector &c)
{
    c.state = State::Connected;
    c.qp->state = SoftQp::State::Connected;
    auto &counters = c.adapter().miniport().counters;
    Miniport::count(c.passive ? counters.Accept : counters.Connect);
    Miniport::count(counters.ActiveConnection);
    c.counted_active = true;
}

void on_reply(SoftConnector &active, std::span<const unsigned char> private_data,
              ULONG peer_inbound_read_limit, ULONG peer_outbound_read_limit)
{
    // The reply reaches the active side: its Connect completes.
    active.peer_private_data.assign(private_data.begin(), private_data.end());
    active.data_available = true;
    active.inbound_read_limit = peer_outbound_read_limit;
    active.outbound_read_limit = peer_inbound_read_limit;
    active.state = State::Replied;
    stop_establishment_timer(active);
    start_establishment_timer(active); // IO_TIMEOUT if it never calls CompleteConnect
    finish_pending(active, STATUS_SUCCESS);
}

void on_rejected(SoftConnector &active, std::optional<std::span<const unsigned char>> private_data)
{
    if (private_data) {
        active.peer_private_data.assign(private_data->begin(), private_data->end());
        active.data_available = true;
    }
    establishment_failed(active, STATUS_CONNECTION_REFUSED);
}

void on_ready_to_use(SoftConnector &passive)
{
    stop_establishment_timer(passive);
    established(passive);
    finish_pending(passive, STATUS_SUCCESS); // the Accept completes (digest 1.8)
}

void on_reply_refused(SoftConnector &passive)
{
    establishment_failed(passive, STATUS_CONNECTION_ABORTED);
}

void on_abandoned(SoftConnector &c) { c.link.reset(); }

void on_disconnected(SoftConnector &c, ULONG reason)
{
    if (reason == kDisconnectError)
        Miniport::count(c.adapter().miniport().counters.ConnectionError);
    leave_connected(c);
    indicate_disconnect(c, reason);
}

NTSTATUS accept(NDK_CONNECTOR *connector, NDK_QP *qp, ULONG InboundReadLimit,
                ULONG OutboundReadLimit, const PVOID pPrivateData, ULONG PrivateDataLength,
                NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent, PVOID DisconnectEventContext,
                NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{
    return start_accept(connector, qp, InboundReadLimit, OutboundReadLimit, pPrivateData,
                        PrivateDataLength, DisconnectEvent, nullptr, DisconnectEventContext,
                        RequestCompletion, RequestContext);
}

NTSTATUS accept_ex(NDK_CONNECTOR *connector, NDK_QP *qp, ULONG InboundReadLimit,
                   ULONG OutboundReadLimit, const PVOID pPrivateData, ULONG PrivateDataLength,
                   NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
                   PVOID DisconnectEventContext, NDK_FN_REQUEST_COMPLETION RequestCompletion,
                   PVOID RequestContext)
{
    return start_accept(connector, qp, InboundReadLimit, OutboundReadLimit, pPrivateData,
                        PrivateDataLength, nullptr, DisconnectEvent, DisconnectEventContext,
                        RequestCompletion, RequestContext);
}

NTSTATUS complete_connect(NDK_CONNECTOR *connector, NDK_FN_DISCONNECT_EVENT_CALLBACK event,
                          PVOID event_context, NDK_FN_REQUEST_COMPLETION completion,
                          PVOID context)
{
    return start_complete_connect(connector, event, nullptr, event_context, completion, context);
}

NTSTATUS complete_connect_ex(NDK_CONNECTOR *connector, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX event,
                             PVOID event_context, NDK_FN_REQUEST_COMPLETION completion,
                             PVOID context)
{
    return start_complete_connect(connector, nullptr, event, event_context, completion, context);
}

NTSTATUS reject(NDK_CONNECTOR *ndk_connector, const PVOID pPrivateData, ULONG PrivateDataLength)
{
    SoftConnector &c = *SoftConnector::from(ndk_connector);
    SoftAdapter &adapter = c.adapter();
    if (pPrivateData == nullptr && PrivateDataLength > 0)
        return STATUS_INVALID_PARAMETER;
    NDK_ADAPTER_INFO info = adapter.info();
    std::lock_guard lock(adapter.mu());
    if (PrivateDataLength > (c.passive ? info.MaxCalleeData : info.MaxCallerData))
        return STATUS_INVALID_BUFFER_SIZE; // ND2 Connector::Reject (digest 4.2)
    if (c.state == State::Incoming) {
        std::unique_ptr<ConnectorLink> link = std::move(c.link);
        c.state = State::Failed;
        if (!link)
            return STATUS_CONNECTION_ABORTED; // the connecting peer gave up already
        const auto *bytes = static_cast<const unsigned char *>(pPrivateData);
        if (!link->reject(std::span<const unsigned char>(bytes, PrivateDataLength)))
            return STATUS_CONNECTION_ABORTED;
        return STATUS_SUCCESS;
    }
    if (c.state == State::Replied) {
        // The active side refuses the read limits or private data (digest 3.5).
        std::unique_ptr<ConnectorLink> link = std::move(c.link);
        stop_establishment_timer(c);
        c.state = State::Failed;
        if (c.qp != nullptr && c.qp->connector == &c)
            c.qp->connector = nullptr;
        if (!link || !link->refuse_reply())
            return STATUS_CONNECTION_ABORTED;
        return STATUS_SUCCESS;
    }
    return STATUS_CONNECTION_INVALID;
}

NTSTATUS disconnect(NDK_CONNECTOR *ndk_connector, NDK_FN_REQUEST_COMPLETION, PVOID)
{
    SoftConnector &c = *SoftConnector::from(ndk_connector);
    SoftAdapter &adapter = c.adapter();
    auto may_disconnect = [&c] {
        return !c.local_disconnect &&
               (c.state == State::Connected || c.state == State::Disconnected);
    };
    {
        std::lock_guard lock(adapter.mu());
        if (!may_disconnect())
            return STATUS_CONNECTION_INVALID; // not connected, or disconnected already
    }
    return adapter.request([&c, may_disconnect] {
        std::lock_guard lock(c.adapter().mu());
        if (!may_disconnect())
            return STATUS_CONNECTION_INVALID;
        if (c.state == State::Connected)
            end_connection(c, kDisconnectGraceful);
        c.local_disconnect = true;
        if (c.qp != nullptr)
            flush_qp(*c.qp); // the implicit flush after a disconnect (digest 1.8)
        return STATUS_SUCCESS;
    });
}

SoftConnector::~SoftConnector() = default;

void SoftConnector::on_close()
{
    // A close cancels what is in flight and ends the connection abortively (digest 3.1, 3.6).
    stop_establishment_timer(*this);
    switch (state) {
    case State::Connecting: // the listener's side sees the peer abandon
    case State::Accepting:  // its CompleteConnect reports CONNECTION_ABORTED
        if (link)
            link->abandon();
        establishment_failed(*this, STATUS_CANCELLED);
        break;
    case State::Incoming: // as if rejected, without private data
        if (std::unique_ptr<ConnectorLink> l = std::move(link))
            l->reject(std::nullopt);
        state = State::Failed;
        break;
    case State::Replied:
        if (std::unique_ptr<ConnectorLink> l = std::move(link))
            l->refuse_reply();
        state = State::Failed;
        break;
    case State::Connected:
        end_connection(*this, kDisconnectAbortive);
        if (qp != nullptr)
            flush_qp(*qp);
        break;
    default: break;
    }
    if (qp != nullptr && qp->connector == this)
        qp->connector = nullptr;
    if (tuple_registered) {
        Fabric::instance().remove_tuple(local, remote);
        tuple_registered = false;
    }
    port.reset(); // the endpoint reference (digest 3.5)
}

} // namespace ndk::soft
