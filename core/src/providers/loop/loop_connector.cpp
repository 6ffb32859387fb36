// Connector (digest 1.8): the connection flow of digest 3.5 between two connectors of this
// process.  Connect finds the listener at the destination in the
// fabric and hands it a new passive connector through its connect event; Accept completes the
// Connect; CompleteConnect joins the two QPs and completes the Accept.  The statuses are the
// soft provider's (docs/semantics.md, CONN-*, DISCONNECT*); there are no timeouts.
#include "loop_objects.hpp"
#include "providers/kit/kit_connection.hpp"

#include <algorithm>
#include <cstring>

namespace ndk::loop {

namespace {

void count(LoopAdapter &a, ULONG64 NDIS_NDK_PERFORMANCE_COUNTERS::*counter, int delta = 1)
{
    a.miniport().counters.*counter += delta;
}

} // namespace

// ---- the connection's life -----------------------------------------------------------------

using State = LConnector::State;

LConnector::LConnector(LoopAdapter &a) : NdkObject(a, NdkObjectTypeConnector, &kConnectorDispatch) {}

void LConnector::finish_pending(NTSTATUS status)
{
    if (pending == nullptr)
        return;
    deliver(adapter(), [callback = pending, context = pending_context, status] {
        callback(context, status);
    });
    pending = nullptr;
    release_dependent(); // the request held the connector open (digest 3.1)
}

// Establishment ended without a connection; the QP may carry another one.
void LConnector::establishment_failed(NTSTATUS status)
{
    state = State::Done;
    peer = nullptr;
    if (qp != nullptr && qp->connector == this)
        qp->connector = nullptr;
    count(adapter(), &NDIS_NDK_PERFORMANCE_COUNTERS::ConnectFailure);
    finish_pending(status);
}

namespace {

void leave_connected(LConnector &c)
{
    if (c.state == State::Connected)
        c.state = State::Disconnected;
    c.peer = nullptr;
    if (c.counted_active) {
        c.counted_active = false;
        count(c.adapter(), &NDIS_NDK_PERFORMANCE_COUNTERS::ActiveConnection, -1);
    }
    if (c.qp != nullptr) {
        c.qp->peer = nullptr;
        if (c.qp->state == LQp::State::Connected)
            c.qp->state = LQp::State::Disconnected; // its posts: CONNECTION_INVALID (QP-STATE)
    }
}

void establish(LConnector &active, LConnector &passive)
{
    active.state = passive.state = State::Connected;
    active.qp->peer = passive.qp;
    passive.qp->peer = active.qp;
    active.qp->state = passive.qp->state = LQp::State::Connected;
    count(active.adapter(), &NDIS_NDK_PERFORMANCE_COUNTERS::Connect);
    count(passive.adapter(), &NDIS_NDK_PERFORMANCE_COUNTERS::Accept);
    for (LConnector *c : {&active, &passive}) {
        count(c->adapter(), &NDIS_NDK_PERFORMANCE_COUNTERS::ActiveConnection);
        c->counted_active = true;
    }
    passive.finish_pending(STATUS_SUCCESS);
}

} // namespace

void LConnector::end_connection(ULONG reason)
{
    LConnector *other = peer;
    if (reason == kReasonError && state == State::Connected)
        for (LConnector *c : {this, other})
            if (c != nullptr)
                count(c->adapter(), &NDIS_NDK_PERFORMANCE_COUNTERS::ConnectionError);
    leave_connected(*this);
    if (other == nullptr)
        return;
    leave_connected(*other);
    // The peer is told once; its QP is not flushed (digest 1.11).
    PVOID context = other->disconnect_context;
    if (auto ex = other->on_disconnect_ex)
        deliver(other->adapter(), [ex, context, reason] { ex(context, reason); });
    else if (auto plain = other->on_disconnect)
        deliver(other->adapter(), [plain, context] { plain(context); });
}

void LConnector::on_close()
{
    // A close cancels what is in flight and ends the connection abortively (digest 3.1, 3.6).
    switch (state) {
    case State::Connecting: // the listener's side sees the peer abandon
    case State::Accepting:  // the connecting side's CompleteConnect reports CONNECTION_ABORTED
        if (peer != nullptr)
            peer->peer = nullptr;
        establishment_failed(STATUS_CANCELLED);
        break;
    case State::Incoming: // as if rejected
    case State::Replied:  // the accepting side's Accept is aborted
        if (peer != nullptr)
            peer->establishment_failed(state == State::Incoming ? STATUS_CONNECTION_REFUSED
                                                                : STATUS_CONNECTION_ABORTED);
        peer = nullptr;
        state = State::Done;
        break;
    case State::Connected:
        end_connection(kReasonClosed);
        if (qp != nullptr)
            qp->flush();
        break;
    default:
        break;
    }
    if (qp != nullptr && qp->connector == this)
        qp->connector = nullptr;
    if (holds_port) {
        Fabric::instance().release(local); // the endpoint reference (digest 3.5)
        holds_port = false;
    }
}

// ---- the connector's functions ---------------------------------------------------------------

NTSTATUS create_connector(NDK_ADAPTER *ndk_adapter, NDK_FN_CREATE_COMPLETION, PVOID,
                          NDK_CONNECTOR **ppNdkConnector)
{
    return kit::create_inline<LConnector>(*LoopAdapter::from(ndk_adapter), ppNdkConnector);
}

namespace {

LConnector &connector_of(NDK_CONNECTOR *c) { return *static_cast<LConnector *>(c); }

// The QP a Connect or Accept is given: one of this adapter's, never connected before.
NTSTATUS usable_qp(const LConnector &c, NDK_QP *ndk_qp, LQp *&qp)
{
    qp = c.adapter().lookup<LQp>(ndk_qp, NdkObjectTypeQp);
    if (qp == nullptr)
        return STATUS_INVALID_PARAMETER;
    if (qp->connector != nullptr || qp->state != LQp::State::Idle)
        return STATUS_CONNECTION_ACTIVE; // one connection in a QP's life (CONN-ACTIVE)
    return STATUS_SUCCESS;
}

void bind_qp(LConnector &c, LQp &qp)
{
    c.qp = &qp;
    qp.connector = &c;
    c.depend_on(qp); // QP -> connector (digest 3.1)
}

void hold_request(LConnector &c, NDK_FN_REQUEST_COMPLETION completion, PVOID context)
{
    c.pending = completion;
    c.pending_context = context;
    c.add_dependent();
}

NTSTATUS connect(NDK_CONNECTOR *ndk_connector, NDK_QP *pNdkQp, const PSOCKADDR pSrcAddress,
                 ULONG SrcAddressLength, const PSOCKADDR pDestAddress, ULONG DestAddressLength,
                 ULONG InboundReadLimit, ULONG OutboundReadLimit, const PVOID pPrivateData,
                 ULONG PrivateDataLength, NDK_FN_REQUEST_COMPLETION RequestCompletion,
                 PVOID RequestContext)
{
    LConnector &c = connector_of(ndk_connector);
    LoopAdapter &a = c.adapter();
    NDK_ADAPTER_INFO info = a.info();
    if (RequestCompletion == nullptr)
        return STATUS_INVALID_PARAMETER;
    if (NTSTATUS s = kit::check_private_data(pPrivateData, PrivateDataLength, info.MaxCallerData);
        s != STATUS_SUCCESS)
        return s;
    Endpoint local, remote;
    if (NTSTATUS s = Endpoint::from_sockaddr(pSrcAddress, SrcAddressLength, local); s != STATUS_SUCCESS)
        return s;
    if (NTSTATUS s = Endpoint::from_sockaddr(pDestAddress, DestAddressLength, remote); s != STATUS_SUCCESS)
        return s;
    std::lock_guard lock(fabric_mu());
    Fabric &fabric = Fabric::instance();
    if (c.state != State::Idle)
        return STATUS_CONNECTION_ACTIVE; // one connection per connector (digest 3.6)
    if (NTSTATUS s = resolve_local(a, local); s != STATUS_SUCCESS)
        return s;
    if (local.family != remote.family)
        return STATUS_INVALID_ADDRESS; // CONN-FAMILY
    LQp *qp = nullptr;
    if (NTSTATUS s = usable_qp(c, pNdkQp, qp); s != STATUS_SUCCESS)
        return s;
    // Refused or unreachable before reaching a peer: inline, and the connector stays idle
    // (CONN-REFUSED, CONN-UNREACHABLE, CONN-RETRY).
    auto found = fabric.listeners.find(remote);
    LListener *l = found == fabric.listeners.end() ? nullptr : found->second;
    NTSTATUS refused = fabric.owner(remote) == nullptr ? STATUS_HOST_UNREACHABLE
                       : l == nullptr || l->paused    ? STATUS_CONNECTION_REFUSED
                                                      : STATUS_SUCCESS;
    if (NTSTATUS s = fabric.reserve(local); s != STATUS_SUCCESS)
        return s; // SHARING_VIOLATION, TOO_MANY_ADDRESSES
    if (refused != STATUS_SUCCESS) {
        fabric.release(local);
        count(a, &NDIS_NDK_PERFORMANCE_COUNTERS::ConnectFailure);
        return refused;
    }
    bind_qp(c, *qp);
    c.state = State::Connecting;
    c.local = local;
    c.remote = remote;
    c.holds_port = true;
    c.inbound_limit = kit::read_limit(InboundReadLimit, info.MaxInboundReadLimit);
    c.outbound_limit = kit::read_limit(OutboundReadLimit, info.MaxOutboundReadLimit);
    hold_request(c, RequestCompletion, RequestContext);

    // The request reaches the listener: a new passive connector, delivered by its connect
    // event.  It holds the listener's port (+1, digest 3.5) and the listener.
    LoopAdapter &pa = l->adapter();
    NDK_ADAPTER_INFO pinfo = pa.info();
    auto *p = new LConnector(pa);
    p->passive = true;
    p->state = State::Incoming;
    p->depend_on(*l);
    p->local = l->local;
    p->remote = local;
    fabric.hold(p->local);
    p->holds_port = true;
    p->peer = &c;
    c.peer = p;
    const auto *bytes = static_cast<const uint8_t *>(pPrivateData);
    p->peer_data.assign(bytes, bytes + PrivateDataLength);
    p->data_available = true;
    // What the passive side sees before it accepts: the peer's limits, capped by its adapter.
    p->inbound_limit = std::min(c.outbound_limit, pinfo.MaxInboundReadLimit);
    p->outbound_limit = std::min(c.inbound_limit, pinfo.MaxOutboundReadLimit);
    pa.adopt(p);
    deliver(pa, [&pa, event = l->connect_event, context = l->connect_context, p] {
        {
            std::lock_guard lock(fabric_mu());
            if (!pa.exists(p))
                return; // its adapter closed meanwhile
        }
        event(context, p);
    });
    return STATUS_PENDING; // completes when the passive side accepts or rejects
}

NTSTATUS connect_with_shared_endpoint(NDK_CONNECTOR *, NDK_QP *, NDK_SHARED_ENDPOINT *,
                                      const PSOCKADDR, ULONG, ULONG, ULONG, const PVOID, ULONG,
                                      NDK_FN_REQUEST_COMPLETION, PVOID)
{
    return STATUS_NOT_SUPPORTED; // no shared endpoint can exist here
}

NTSTATUS accept_common(NDK_CONNECTOR *ndk_connector, NDK_QP *pNdkQp, ULONG InboundReadLimit,
                       ULONG OutboundReadLimit, const PVOID pPrivateData, ULONG PrivateDataLength,
                       NDK_FN_DISCONNECT_EVENT_CALLBACK plain,
                       NDK_FN_DISCONNECT_EVENT_CALLBACK_EX ex, PVOID DisconnectEventContext,
                       NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{
    LConnector &p = connector_of(ndk_connector);
    NDK_ADAPTER_INFO info = p.adapter().info();
    if (RequestCompletion == nullptr)
        return STATUS_INVALID_PARAMETER;
    if (NTSTATUS s = kit::check_private_data(pPrivateData, PrivateDataLength, info.MaxCalleeData);
        s != STATUS_SUCCESS)
        return s;
    std::lock_guard lock(fabric_mu());
    if (p.state != State::Incoming)
        return STATUS_CONNECTION_INVALID; // not a connector a connect event delivered
    LQp *qp = nullptr;
    if (NTSTATUS s = usable_qp(p, pNdkQp, qp); s != STATUS_SUCCESS)
        return s;
    bind_qp(p, *qp);
    hold_request(p, RequestCompletion, RequestContext);
    LConnector *c = p.peer;
    if (c == nullptr) {
        p.establishment_failed(STATUS_CONNECTION_ABORTED); // the connecting side gave up
        return STATUS_PENDING;
    }
    p.inbound_limit = kit::read_limit(InboundReadLimit, info.MaxInboundReadLimit, c->outbound_limit);
    p.outbound_limit = kit::read_limit(OutboundReadLimit, info.MaxOutboundReadLimit, c->inbound_limit);
    p.on_disconnect = plain;
    p.on_disconnect_ex = ex;
    p.disconnect_context = DisconnectEventContext;
    p.state = State::Accepting;
    // The reply reaches the active side: its Connect completes.
    const auto *bytes = static_cast<const uint8_t *>(pPrivateData);
    c->peer_data.assign(bytes, bytes + PrivateDataLength);
    c->data_available = true;
    c->inbound_limit = p.outbound_limit;
    c->outbound_limit = p.inbound_limit;
    c->state = State::Replied;
    c->finish_pending(STATUS_SUCCESS);
    return STATUS_PENDING; // completes with the active side's CompleteConnect
}

NTSTATUS accept(NDK_CONNECTOR *c, NDK_QP *qp, ULONG ird, ULONG ord, const PVOID data, ULONG length,
                NDK_FN_DISCONNECT_EVENT_CALLBACK event, PVOID event_context,
                NDK_FN_REQUEST_COMPLETION completion, PVOID context)
{
    return accept_common(c, qp, ird, ord, data, length, event, nullptr, event_context, completion,
                         context);
}

NTSTATUS accept_ex(NDK_CONNECTOR *c, NDK_QP *qp, ULONG ird, ULONG ord, const PVOID data,
                   ULONG length, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX event, PVOID event_context,
                   NDK_FN_REQUEST_COMPLETION completion, PVOID context)
{
    return accept_common(c, qp, ird, ord, data, length, nullptr, event, event_context, completion,
                         context);
}

NTSTATUS complete_connect_common(NDK_CONNECTOR *ndk_connector,
                                 NDK_FN_DISCONNECT_EVENT_CALLBACK plain,
                                 NDK_FN_DISCONNECT_EVENT_CALLBACK_EX ex, PVOID context)
{
    LConnector &c = connector_of(ndk_connector);
    std::lock_guard lock(fabric_mu());
    if (c.state != State::Replied)
        return STATUS_CONNECTION_INVALID; // "QP is not connecting" (digest 1.8)
    if (c.peer == nullptr) {
        c.establishment_failed(STATUS_SUCCESS); // nothing pending: only the state
        return STATUS_CONNECTION_ABORTED;       // the accepting side abandoned (CONN-ABORTED)
    }
    c.on_disconnect = plain;
    c.on_disconnect_ex = ex;
    c.disconnect_context = context;
    establish(c, *c.peer);
    return STATUS_SUCCESS;
}

NTSTATUS complete_connect(NDK_CONNECTOR *c, NDK_FN_DISCONNECT_EVENT_CALLBACK event,
                          PVOID event_context, NDK_FN_REQUEST_COMPLETION, PVOID)
{
    return complete_connect_common(c, event, nullptr, event_context);
}

NTSTATUS complete_connect_ex(NDK_CONNECTOR *c, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX event,
                             PVOID event_context, NDK_FN_REQUEST_COMPLETION, PVOID)
{
    return complete_connect_common(c, nullptr, event, event_context);
}

NTSTATUS reject(NDK_CONNECTOR *ndk_connector, const PVOID pPrivateData, ULONG PrivateDataLength)
{
    LConnector &c = connector_of(ndk_connector);
    NDK_ADAPTER_INFO info = c.adapter().info();
    if (pPrivateData == nullptr && PrivateDataLength > 0)
        return STATUS_INVALID_PARAMETER;
    std::lock_guard lock(fabric_mu());
    if (PrivateDataLength > (c.passive ? info.MaxCalleeData : info.MaxCallerData))
        return STATUS_INVALID_BUFFER_SIZE;
    if (c.state != State::Incoming && c.state != State::Replied)
        return STATUS_CONNECTION_INVALID;
    LConnector *other = c.peer;
    bool passive = c.state == State::Incoming;
    c.peer = nullptr;
    c.state = State::Done;
    if (c.qp != nullptr && c.qp->connector == &c)
        c.qp->connector = nullptr;
    if (other == nullptr)
        return STATUS_CONNECTION_ABORTED; // the peer gave up already
    if (passive) { // the connecting side is refused, and may read why
        const auto *bytes = static_cast<const uint8_t *>(pPrivateData);
        other->peer_data.assign(bytes, bytes + PrivateDataLength);
        other->data_available = true;
    }
    other->establishment_failed(passive ? STATUS_CONNECTION_REFUSED : STATUS_CONNECTION_ABORTED);
    return STATUS_SUCCESS;
}

NTSTATUS get_connection_data(NDK_CONNECTOR *ndk_connector, ULONG *pInboundReadLimit,
                             ULONG *pOutboundReadLimit, PVOID pPrivateData,
                             ULONG *pPrivateDataLength)
{
    LConnector &c = connector_of(ndk_connector);
    if (pPrivateDataLength == nullptr)
        return STATUS_INVALID_PARAMETER;
    std::lock_guard lock(fabric_mu());
    if (!c.data_available)
        return STATUS_CONNECTION_INVALID; // nothing received yet
    if (pPrivateData == nullptr && *pPrivateDataLength > 0)
        return STATUS_INVALID_PARAMETER; // "the consumer must never do this" (digest 1.8)
    if (pInboundReadLimit != nullptr)
        *pInboundReadLimit = c.inbound_limit;
    if (pOutboundReadLimit != nullptr)
        *pOutboundReadLimit = c.outbound_limit;
    auto required = static_cast<ULONG>(c.peer_data.size()); // exactly what was sent (CONN-RDS)
    ULONG given = *pPrivateDataLength;
    *pPrivateDataLength = required;
    if (pPrivateData == nullptr)
        return STATUS_SUCCESS; // the size query
    if (ULONG n = std::min(given, required); n > 0)
        std::memcpy(pPrivateData, c.peer_data.data(), n);
    return given >= required ? STATUS_SUCCESS : STATUS_BUFFER_TOO_SMALL;
}

NTSTATUS get_address(NDK_CONNECTOR *ndk_connector, bool peer, PSOCKADDR pAddress, ULONG *pLength)
{
    LConnector &c = connector_of(ndk_connector);
    std::lock_guard lock(fabric_mu());
    if (c.state == State::Idle)
        return STATUS_CONNECTION_INVALID; // no connection attempted
    return (peer ? c.remote : c.local).to_sockaddr(pAddress, pLength);
}

NTSTATUS get_local_address(NDK_CONNECTOR *c, PSOCKADDR a, ULONG *l) { return get_address(c, false, a, l); }
NTSTATUS get_peer_address(NDK_CONNECTOR *c, PSOCKADDR a, ULONG *l) { return get_address(c, true, a, l); }

NTSTATUS disconnect(NDK_CONNECTOR *ndk_connector, NDK_FN_REQUEST_COMPLETION, PVOID)
{
    LConnector &c = connector_of(ndk_connector);
    std::lock_guard lock(fabric_mu());
    if (c.state != State::Connected && c.state != State::Disconnected)
        return STATUS_CONNECTION_INVALID; // not connected, or disconnected already
    if (c.state == State::Connected)
        c.end_connection(kReasonDisconnect);
    c.state = State::Done;
    if (c.qp != nullptr)
        c.qp->flush(); // the implicit flush after a disconnect (digest 1.8)
    return STATUS_SUCCESS;
}

} // namespace

const NDK_CONNECTOR_DISPATCH kConnectorDispatch = {
    .NdkCloseConnector = close_object<LConnector>,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkConnect = connect,
    .NdkConnectWithSharedEndpoint = connect_with_shared_endpoint,
    .NdkCompleteConnect = complete_connect,
    .NdkAccept = accept,
    .NdkReject = reject,
    .NdkGetConnectionData = get_connection_data,
    .NdkGetLocalAddress = get_local_address,
    .NdkGetPeerAddress = get_peer_address,
    .NdkDisconnect = disconnect,
    .NdkCompleteConnectEx = complete_connect_ex,
    .NdkAcceptEx = accept_ex,
};

} // namespace ndk::loop
