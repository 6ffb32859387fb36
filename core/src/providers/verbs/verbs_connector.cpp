// Connector (digest 1.8) over an rdma_cm id, with the QP created apart (verbs_qp.cpp): the
// id carries only the connection, the QP number goes in the connection parameters, and the QP
// moves to RTR/RTS with the attributes rdma_cm computes.  On RoCE the active side receives
// RDMA_CM_EVENT_CONNECT_RESPONSE (the peer's REP), which is exactly where NdkConnect completes
// and NdkGetConnectionData / NdkCompleteConnect / NdkReject take over; NdkCompleteConnect then
// sends the RTU (rdma_establish), which completes the peer's NdkAccept.  On iWARP the kernel
// finishes the MPA exchange itself: the active side sees ESTABLISHED, and NdkCompleteConnect
// has nothing left to send.  The rdma_cm events are handled in verbs_connection.cpp.
#include "verbs_objects.hpp"
#include "providers/kit/kit_connection.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ndk::verbs {

VConnector::VConnector(VerbsAdapter &adapter) : NdkObject(adapter, kType, &kConnectorDispatch) {}

void VConnector::complete(NTSTATUS status)
{
    if (pending == nullptr)
        return;
    NDK_FN_REQUEST_COMPLETION callback = pending;
    PVOID context = pending_context;
    pending = nullptr;
    adapter().deliver([callback, context, status] { callback(context, status); });
    release_dependent(); // the request held the connector open
}

void VConnector::on_close()
{
    complete(STATUS_CANCELLED); // a close cancels what is pending (digest 3.1)
}

void VConnector::destroy_resources()
{
    State was;
    {
        std::lock_guard lock(adapter().mu());
        was = state;
        state = State::Done;
        if (counted_active) {
            std::lock_guard counters(adapter().miniport().mu);
            adapter().miniport().counters.ActiveConnection--;
            counted_active = false;
        }
        if (qp != nullptr && adapter().exists(qp)) {
            qp->flush(); // closing a connected connector flushes its QP (CONN-CLOSE)
            qp->state = VQp::State::Disconnected;
        }
        if (endpoint != nullptr && adapter().exists(endpoint)) {
            auto it = endpoint->destinations.find(endpoint_destination);
            if (it != endpoint->destinations.end())
                endpoint->destinations.erase(it); // the 4-tuple is free again
        }
    }
    if (id == nullptr)
        return;
    if (was == State::Incoming)
        rdma_reject(id, nullptr, 0); // the peer's connect is refused (CONN-REFUSED)
    else if (was != State::Idle && was != State::Rejected && was != State::Done)
        rdma_disconnect(id); // the peer sees its establishment aborted, or a disconnect
    rdma_destroy_id(id);
    id = nullptr;
}

NTSTATUS create_connector(NDK_ADAPTER *ndk_adapter, NDK_FN_CREATE_COMPLETION, PVOID,
                          NDK_CONNECTOR **ppNdkConnector)
{
    return kit::create_inline<VConnector>(*VerbsAdapter::from(ndk_adapter), ppNdkConnector);
}

namespace {

bool connected_state(VConnector::State s)
{
    using S = VConnector::State;
    return s == S::Responded || s == S::Incoming || s == S::Accepting || s == S::Established ||
           s == S::Disconnecting || s == S::PeerGone;
}

NTSTATUS start_connect(VConnector *c, NDK_QP *ndk_qp, sockaddr_storage source,
                       VSharedEndpoint *endpoint, const PSOCKADDR pDestAddress,
                       ULONG DestAddressLength, ULONG InboundReadLimit, ULONG OutboundReadLimit,
                       const PVOID pPrivateData, ULONG PrivateDataLength,
                       NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{
    VerbsAdapter &adapter = c->adapter();
    NDK_ADAPTER_INFO info = adapter.info();
    sockaddr_storage destination;
    if (!read_address(pDestAddress, DestAddressLength, destination))
        return STATUS_INVALID_PARAMETER;
    if (NTSTATUS status =
            kit::check_private_data(pPrivateData, PrivateDataLength, info.MaxCallerData);
        status != STATUS_SUCCESS)
        return status;
    std::lock_guard lock(adapter.mu());
    if (c->state != VConnector::State::Idle)
        return STATUS_CONNECTION_ACTIVE;
    VQp *qp = adapter.lookup<VQp>(ndk_qp, NdkObjectTypeQp);
    if (qp == nullptr)
        return STATUS_INVALID_PARAMETER;
    if (qp->bound)
        return STATUS_CONNECTION_ACTIVE; // a QP carries one connection (CONN-ACTIVE)
    if (source.ss_family != destination.ss_family || !own_address(adapter, source))
        return STATUS_INVALID_ADDRESS;
    std::string tuple;
    if (endpoint != nullptr) { // one connection per 4-tuple through a shared endpoint
        const auto *to = reinterpret_cast<const sockaddr *>(&destination);
        tuple = address_to_text(to) + " " + std::to_string(port_of(to));
        if (endpoint->destinations.count(tuple) != 0)
            return STATUS_ADDRESS_ALREADY_EXISTS;
    }
    rdma_cm_id *id = nullptr;
    if (rdma_create_id(adapter.cm(), &id, static_cast<Object *>(c), RDMA_PS_TCP) != 0)
        return errno_status(errno);
    if (endpoint != nullptr) { // the shared endpoint's port is shared by its connectors
        int one = 1;
        rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof one);
    }
    if (rdma_bind_addr(id, reinterpret_cast<sockaddr *>(&source)) != 0 ||
        rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr *>(&destination), 2000) != 0) {
        int error = errno;
        rdma_destroy_id(id);
        return error == EADDRINUSE ? STATUS_SHARING_VIOLATION
               : error == EADDRNOTAVAIL ? STATUS_INVALID_ADDRESS
                                        : STATUS_HOST_UNREACHABLE;
    }
    c->id = id;
    c->qp = qp;
    c->endpoint = endpoint;
    if (endpoint != nullptr) {
        endpoint->destinations.insert(tuple);
        c->endpoint_destination = tuple;
    }
    qp->bound = true;
    qp->state = VQp::State::Connecting;
    c->depend_on(*qp);
    if (endpoint != nullptr)
        c->depend_on(*endpoint);
    c->inbound = kit::read_limit(InboundReadLimit, info.MaxInboundReadLimit);
    c->outbound = kit::read_limit(OutboundReadLimit, info.MaxOutboundReadLimit);
    auto *bytes = static_cast<const uint8_t *>(pPrivateData);
    c->own_data.assign(bytes, bytes + PrivateDataLength);
    c->pending = RequestCompletion;
    c->pending_context = RequestContext;
    c->add_dependent();
    c->state = VConnector::State::Resolving;
    return STATUS_PENDING; // completes when the peer answers (verbs_connection.cpp)
}

NTSTATUS connect(NDK_CONNECTOR *ndk_connector, NDK_QP *pNdkQp, const PSOCKADDR pSrcAddress,
                 ULONG SrcAddressLength, const PSOCKADDR pDestAddress, ULONG DestAddressLength,
                 ULONG InboundReadLimit, ULONG OutboundReadLimit, const PVOID pPrivateData,
                 ULONG PrivateDataLength, NDK_FN_REQUEST_COMPLETION RequestCompletion,
                 PVOID RequestContext)
{
    sockaddr_storage source;
    if (!read_address(pSrcAddress, SrcAddressLength, source))
        return STATUS_INVALID_PARAMETER;
    return start_connect(VConnector::from(ndk_connector), pNdkQp, source, nullptr, pDestAddress,
                         DestAddressLength, InboundReadLimit, OutboundReadLimit, pPrivateData,
                         PrivateDataLength, RequestCompletion, RequestContext);
}

NTSTATUS connect_with_shared_endpoint(NDK_CONNECTOR *ndk_connector, NDK_QP *pNdkQp,
                                      NDK_SHARED_ENDPOINT *pNdkSharedEndpoint,
                                      const PSOCKADDR pDestAddress, ULONG DestAddressLength,
                                      ULONG InboundReadLimit, ULONG OutboundReadLimit,
                                      const PVOID pPrivateData, ULONG PrivateDataLength,
                                      NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                      PVOID RequestContext)
{
    VConnector *c = VConnector::from(ndk_connector);
    VSharedEndpoint *endpoint;
    sockaddr_storage source;
    {
        std::lock_guard lock(c->adapter().mu());
        endpoint = c->adapter().lookup<VSharedEndpoint>(pNdkSharedEndpoint,
                                                        NdkObjectTypeSharedEndpoint);
        if (endpoint == nullptr)
            return STATUS_INVALID_PARAMETER;
        source = endpoint->address;
    }
    return start_connect(c, pNdkQp, source, endpoint, pDestAddress, DestAddressLength,
                         InboundReadLimit, OutboundReadLimit, pPrivateData, PrivateDataLength,
                         RequestCompletion, RequestContext);
}

NTSTATUS complete_connect_common(NDK_CONNECTOR *ndk_connector,
                                 NDK_FN_DISCONNECT_EVENT_CALLBACK plain,
                                 NDK_FN_DISCONNECT_EVENT_CALLBACK_EX ex, PVOID context)
{
    VConnector *c = VConnector::from(ndk_connector);
    VerbsAdapter &adapter = c->adapter();
    std::lock_guard lock(adapter.mu());
    if (c->aborted)
        return STATUS_CONNECTION_ABORTED; // the accepting peer abandoned (digest 1.8)
    if (c->state != VConnector::State::Responded || c->passive)
        return STATUS_CONNECTION_INVALID; // "QP is not connecting"
    if (!adapter.device().iwarp) {
        int error = c->qp->modify_from_cm(c->id, IBV_QPS_RTR);
        if (error == 0)
            error = c->qp->modify_from_cm(c->id, IBV_QPS_RTS);
        if (error == 0 && rdma_establish(c->id) != 0)
            error = errno;
        if (error != 0) {
            c->state = VConnector::State::Done;
            return STATUS_CONNECTION_ABORTED;
        }
    }
    c->state = VConnector::State::Established;
    c->qp->state = VQp::State::Connected;
    c->on_disconnect = plain;
    c->on_disconnect_ex = ex;
    c->disconnect_context = context;
    std::lock_guard counters(adapter.miniport().mu);
    adapter.miniport().counters.Connect++;
    adapter.miniport().counters.ActiveConnection++;
    c->counted_active = true;
    return STATUS_SUCCESS;
}

NTSTATUS complete_connect(NDK_CONNECTOR *c, NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
                          PVOID DisconnectEventContext, NDK_FN_REQUEST_COMPLETION, PVOID)
{
    return complete_connect_common(c, DisconnectEvent, nullptr, DisconnectEventContext);
}

NTSTATUS complete_connect_ex(NDK_CONNECTOR *c, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
                             PVOID DisconnectEventContext, NDK_FN_REQUEST_COMPLETION, PVOID)
{
    return complete_connect_common(c, nullptr, DisconnectEvent, DisconnectEventContext);
}

NTSTATUS accept_common(NDK_CONNECTOR *ndk_connector, NDK_QP *pNdkQp, ULONG InboundReadLimit,
                       ULONG OutboundReadLimit, const PVOID pPrivateData, ULONG PrivateDataLength,
                       NDK_FN_DISCONNECT_EVENT_CALLBACK plain,
                       NDK_FN_DISCONNECT_EVENT_CALLBACK_EX ex, PVOID DisconnectEventContext,
                       NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{
    VConnector *c = VConnector::from(ndk_connector);
    VerbsAdapter &adapter = c->adapter();
    NDK_ADAPTER_INFO info = adapter.info();
    if (NTSTATUS status =
            kit::check_private_data(pPrivateData, PrivateDataLength, info.MaxCalleeData);
        status != STATUS_SUCCESS)
        return status;
    std::lock_guard lock(adapter.mu());
    // The connecting peer abandoned (digest 1.8): an Accept reports it through its completion,
    // the only way the digest lists for it.
    auto abandoned = [&] {
        c->aborted = true;
        c->pending = RequestCompletion;
        c->pending_context = RequestContext;
        c->add_dependent();
        c->complete(STATUS_CONNECTION_ABORTED);
        return STATUS_PENDING;
    };
    if (c->aborted)
        return c->pending == nullptr ? abandoned() : STATUS_CONNECTION_ABORTED;
    if (c->state != VConnector::State::Incoming)
        return STATUS_CONNECTION_INVALID;
    VQp *qp = adapter.lookup<VQp>(pNdkQp, NdkObjectTypeQp);
    if (qp == nullptr)
        return STATUS_INVALID_PARAMETER;
    if (qp->bound)
        return STATUS_CONNECTION_ACTIVE;
    c->inbound = kit::read_limit(InboundReadLimit, info.MaxInboundReadLimit, c->peer_inbound);
    c->outbound = kit::read_limit(OutboundReadLimit, info.MaxOutboundReadLimit, c->peer_outbound);
    int error = qp->reset_if_flushed();
    if (error == 0 && !adapter.device().iwarp) { // RoCE: ready to send before the REP goes out
        error = qp->modify_from_cm(c->id, IBV_QPS_RTR);
        if (error == 0)
            error = qp->modify_from_cm(c->id, IBV_QPS_RTS);
    }
    rdma_conn_param param{};
    param.private_data = pPrivateData;
    param.private_data_len = static_cast<uint8_t>(PrivateDataLength);
    param.responder_resources = static_cast<uint8_t>(std::min<ULONG>(c->inbound, 255));
    param.initiator_depth = static_cast<uint8_t>(std::min<ULONG>(c->outbound, 255));
    param.rnr_retry_count = 7;
    param.qp_num = qp->qp->qp_num;
    if (error == 0 && rdma_accept(c->id, &param) != 0)
        error = errno;
    if (error != 0) {
        c->state = VConnector::State::Done;
        return abandoned(); // the peer is gone
    }
    c->qp = qp;
    qp->bound = true;
    qp->state = VQp::State::Connecting;
    c->depend_on(*qp);
    c->on_disconnect = plain;
    c->on_disconnect_ex = ex;
    c->disconnect_context = DisconnectEventContext;
    c->pending = RequestCompletion;
    c->pending_context = RequestContext;
    c->add_dependent();
    c->state = VConnector::State::Accepting;
    return STATUS_PENDING; // completes with ESTABLISHED: the peer's CompleteConnect
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

NTSTATUS reject(NDK_CONNECTOR *ndk_connector, const PVOID pPrivateData, ULONG PrivateDataLength)
{
    VConnector *c = VConnector::from(ndk_connector);
    VerbsAdapter &adapter = c->adapter();
    NDK_ADAPTER_INFO info = adapter.info();
    if (pPrivateData == nullptr && PrivateDataLength > 0)
        return STATUS_INVALID_PARAMETER;
    std::lock_guard lock(adapter.mu());
    if (c->aborted)
        return STATUS_CONNECTION_ABORTED;
    bool passive = c->state == VConnector::State::Incoming;
    bool active = c->state == VConnector::State::Responded && !c->passive;
    if (!passive && !active)
        return STATUS_CONNECTION_INVALID;
    if (PrivateDataLength > (passive ? info.MaxCalleeData : info.MaxCallerData))
        return STATUS_INVALID_BUFFER_SIZE;
    if (rdma_reject(c->id, pPrivateData, static_cast<uint8_t>(PrivateDataLength)) != 0 && active)
        rdma_disconnect(c->id); // iWARP: the connection already stands; end it
    c->state = VConnector::State::Rejected;
    c->have_peer_data = false;
    if (c->qp != nullptr && active) {
        c->qp->flush();
        c->qp->state = VQp::State::Disconnected;
    }
    return STATUS_SUCCESS;
}

NTSTATUS get_connection_data(NDK_CONNECTOR *ndk_connector, ULONG *pInboundReadLimit,
                             ULONG *pOutboundReadLimit, PVOID pPrivateData,
                             ULONG *pPrivateDataLength)
{
    VConnector *c = VConnector::from(ndk_connector);
    if (pPrivateDataLength == nullptr || (pPrivateData == nullptr && *pPrivateDataLength > 0))
        return STATUS_INVALID_PARAMETER;
    VerbsAdapter &adapter = c->adapter();
    NDK_ADAPTER_INFO info = adapter.info();
    std::lock_guard lock(adapter.mu());
    using S = VConnector::State;
    bool rejected_with_data = c->state == S::Rejected && c->have_peer_data;
    if (c->state != S::Responded && c->state != S::Incoming && !rejected_with_data)
        return STATUS_CONNECTION_INVALID;
    ULONG inbound = 0, outbound = 0;
    if (c->state == S::Incoming) { // the peer's request, capped by this adapter
        inbound = std::min(c->peer_inbound, info.MaxInboundReadLimit);
        outbound = std::min(c->peer_outbound, info.MaxOutboundReadLimit);
    } else if (c->state == S::Responded) { // effective: ours capped by the peer's answer
        inbound = std::min(c->inbound, c->peer_inbound);
        outbound = std::min(c->outbound, c->peer_outbound);
    }
    if (pInboundReadLimit != nullptr)
        *pInboundReadLimit = inbound;
    if (pOutboundReadLimit != nullptr)
        *pOutboundReadLimit = outbound;
    // RDS: what rdma_cm delivered (on RoCE the whole fixed-size private data field).
    ULONG required = static_cast<ULONG>(c->peer_data.size());
    if (pPrivateData == nullptr && *pPrivateDataLength == 0) {
        *pPrivateDataLength = required; // the size query (digest 1.8)
        return STATUS_SUCCESS;
    }
    ULONG copy = std::min(*pPrivateDataLength, required);
    if (copy > 0)
        std::memcpy(pPrivateData, c->peer_data.data(), copy);
    bool enough = *pPrivateDataLength >= required;
    *pPrivateDataLength = required;
    return enough ? STATUS_SUCCESS : STATUS_BUFFER_TOO_SMALL;
}

NTSTATUS get_address(NDK_CONNECTOR *ndk_connector, PSOCKADDR pAddress, ULONG *pAddressLength,
                     bool local)
{
    VConnector *c = VConnector::from(ndk_connector);
    std::lock_guard lock(c->adapter().mu());
    // A connecting connector has its local address too (rdma_bind_addr picked the port).
    bool connecting = c->state == VConnector::State::Resolving ||
                      c->state == VConnector::State::Requested;
    if (c->id == nullptr || !(connected_state(c->state) || (local && connecting)))
        return STATUS_CONNECTION_INVALID;
    return write_address(local ? rdma_get_local_addr(c->id) : rdma_get_peer_addr(c->id), pAddress,
                         pAddressLength);
}

NTSTATUS get_local_address(NDK_CONNECTOR *c, PSOCKADDR a, ULONG *l) { return get_address(c, a, l, true); }
NTSTATUS get_peer_address(NDK_CONNECTOR *c, PSOCKADDR a, ULONG *l) { return get_address(c, a, l, false); }

NTSTATUS disconnect(NDK_CONNECTOR *ndk_connector, NDK_FN_REQUEST_COMPLETION RequestCompletion,
                    PVOID RequestContext)
{
    VConnector *c = VConnector::from(ndk_connector);
    VerbsAdapter &adapter = c->adapter();
    std::lock_guard lock(adapter.mu());
    using S = VConnector::State;
    if (c->state != S::Established && c->state != S::PeerGone)
        return STATUS_CONNECTION_INVALID;
    bool peer_gone = c->state == S::PeerGone;
    // The local QP is flushed: an implicit flush after a graceful disconnect (digest 1.8).
    c->qp->flush();
    c->qp->state = VQp::State::Disconnected;
    if (c->counted_active) {
        std::lock_guard counters(adapter.miniport().mu);
        adapter.miniport().counters.ActiveConnection--;
        c->counted_active = false;
    }
    if (rdma_disconnect(c->id) != 0 || peer_gone || RequestCompletion == nullptr) {
        c->state = S::Done;
        return STATUS_SUCCESS;
    }
    c->state = S::Disconnecting; // completes with RDMA_CM_EVENT_DISCONNECTED
    c->pending = RequestCompletion;
    c->pending_context = RequestContext;
    c->add_dependent();
    return STATUS_PENDING;
}

NTSTATUS close_connector(NDK_OBJECT_HEADER *header, NDK_FN_CLOSE_COMPLETION completion,
                         PVOID context)
{
    return VConnector::from(reinterpret_cast<NDK_CONNECTOR *>(header))->close(completion, context);
}

} // namespace

const NDK_CONNECTOR_DISPATCH kConnectorDispatch = {
    .NdkCloseConnector = close_connector,
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

} // namespace ndk::verbs
