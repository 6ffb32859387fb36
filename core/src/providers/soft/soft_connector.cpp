// Connector (digest 1.8): creation, the active side of establishment (Connect and
// ConnectWithSharedEndpoint deliver a new connector to the listener through its connect
// event), the address getters and GetConnectionData.  The rest of the connection's life is in
// soft_connection.cpp.
#include "soft_connection.hpp"
#include "soft_connector_link.hpp" // a connector is made here: its link's type is needed
#include "soft_endpoint_address.hpp"
#include "soft_transport.hpp"

#include <algorithm>
#include <cstring>

namespace ndk::soft {

NTSTATUS create_connector(NDK_ADAPTER *ndk_adapter, NDK_FN_CREATE_COMPLETION, PVOID,
                          NDK_CONNECTOR **ppNdkConnector)
{
    SoftAdapter *adapter = SoftAdapter::from(ndk_adapter);
    if (ppNdkConnector == nullptr)
        return STATUS_INVALID_PARAMETER;
    return adapter->create<SoftConnector>(
        ppNdkConnector, [&](NTSTATUS &) { return std::make_unique<SoftConnector>(*adapter); });
}

namespace {

// A failure found while starting a connect: returned inline, as the "(i/a)" of digest 1.8
// allows (the fault layer's request_mode=pending reports it through the completion instead).
NTSTATUS refuse(SoftConnector &c, NTSTATUS status)
{
    Miniport::count(c.adapter().miniport().counters.ConnectFailure);
    return status;
}

// Connect and ConnectWithSharedEndpoint (`se` set).
NTSTATUS start_connect(NDK_CONNECTOR *ndk_connector, NDK_QP *ndk_qp, NDK_SHARED_ENDPOINT *ndk_se,
                       const SOCKADDR *src, ULONG src_length, const SOCKADDR *dest,
                       ULONG dest_length, ULONG irl, ULONG orl, const void *private_data,
                       ULONG private_data_length, NDK_FN_REQUEST_COMPLETION completion,
                       PVOID context)
{
    SoftConnector &c = *SoftConnector::from(ndk_connector);
    SoftAdapter &adapter = c.adapter();
    NDK_ADAPTER_INFO info = adapter.info();
    if (completion == nullptr || (private_data == nullptr && private_data_length > 0))
        return STATUS_INVALID_PARAMETER;
    if (private_data_length > info.MaxCallerData)
        return STATUS_INVALID_BUFFER_SIZE; // ND2 Connector::Connect (digest 4.2)
    Endpoint remote;
    if (NTSTATUS s = Endpoint::from_sockaddr(dest, dest_length, remote); s != STATUS_SUCCESS)
        return s;

    std::lock_guard lock(adapter.mu());
    if (c.state != SoftConnector::State::Idle)
        return STATUS_CONNECTION_ACTIVE; // one connection per connector (digest 3.6)
    SoftQp *qp = adapter.lookup<SoftQp>(ndk_qp, NdkObjectTypeQp);
    if (qp == nullptr)
        return STATUS_INVALID_PARAMETER;
    if (qp->connector != nullptr || qp->state != SoftQp::State::Idle)
        return STATUS_CONNECTION_ACTIVE; // docs/semantics.md, CONN-QP-REUSE
    SoftSharedEndpoint *se = nullptr;
    Endpoint local;
    std::shared_ptr<PortReservation> port;
    if (ndk_se != nullptr) {
        se = adapter.lookup<SoftSharedEndpoint>(ndk_se, NdkObjectTypeSharedEndpoint);
        if (se == nullptr || !se->port)
            return STATUS_INVALID_PARAMETER;
        port = se->port; // +1 on the shared endpoint (digest 3.5)
        local = port->endpoint();
    } else {
        if (NTSTATUS s = resolve_local(adapter, src, src_length, local); s != STATUS_SUCCESS)
            return s;
    }
    if (local.ip.family != remote.ip.family)
        return STATUS_INVALID_ADDRESS; // docs/semantics.md, CONN-FAMILY
    const bool any_port = port == nullptr && local.port == 0;
    if (!port) {
        // SHARING_VIOLATION when the port is taken, TOO_MANY_ADDRESSES when port 0 finds none.
        if (NTSTATUS s = Fabric::instance().reserve(local.ip, local.port,
                                                    adapter.knobs().ephemeral_ports(), port);
            s != STATUS_SUCCESS)
            return s;
        local = port->endpoint();
    }
    c.inbound_read_limit = std::min(irl, info.MaxInboundReadLimit);
    c.outbound_read_limit = std::min(orl, info.MaxOutboundReadLimit);
    const auto *bytes = static_cast<const unsigned char *>(private_data);
    // The 4-tuple may exist already (digest 1.8): in this fabric, or on the host's network
    // (tcp: the host's TCP still closing an earlier connection of the same two endpoints).
    // A port the fabric picked is then picked again, as a kernel's connect from port 0 would;
    // the busy ones stay held until the end, so each pick is another port.
    std::vector<std::shared_ptr<PortReservation>> busy;
    for (int again = 0;; ++again) {
        NTSTATUS s = STATUS_ADDRESS_ALREADY_EXISTS;
        if (Fabric::instance().add_tuple(local, remote)) {
            c.local = local;
            c.remote = remote;
            s = adapter.transport().connect(c, {bytes, private_data_length});
            if (s == STATUS_SUCCESS)
                break;
            Fabric::instance().remove_tuple(local, remote);
        }
        if (s != STATUS_ADDRESS_ALREADY_EXISTS || !any_port || again == kPortRepicks)
            return refuse(c, s);
        busy.push_back(std::move(port));
        if (Fabric::instance().reserve(local.ip, 0, adapter.knobs().ephemeral_ports(), port) !=
            STATUS_SUCCESS)
            return refuse(c, s);
        local = port->endpoint();
    }

    // Commit: the QP and the shared endpoint become antecedents of the connector (3.1).
    c.state = SoftConnector::State::Connecting;
    c.qp = qp;
    qp->connector = &c;
    c.depend_on(*qp);
    if (se != nullptr)
        c.depend_on(*se);
    c.port = std::move(port);
    c.tuple_registered = true;
    c.pending_completion = completion;
    c.pending_context = context;
    c.add_dependent(); // the connect request in flight (3.1)
    start_establishment_timer(c);
    return STATUS_PENDING;
}

NTSTATUS connect(NDK_CONNECTOR *connector, NDK_QP *qp, const PSOCKADDR pSrcAddress,
                 ULONG SrcAddressLength, const PSOCKADDR pDestAddress, ULONG DestAddressLength,
                 ULONG InboundReadLimit, ULONG OutboundReadLimit, const PVOID pPrivateData,
                 ULONG PrivateDataLength, NDK_FN_REQUEST_COMPLETION RequestCompletion,
                 PVOID RequestContext)
{
    return start_connect(connector, qp, nullptr, pSrcAddress, SrcAddressLength, pDestAddress,
                         DestAddressLength, InboundReadLimit, OutboundReadLimit, pPrivateData,
                         PrivateDataLength, RequestCompletion, RequestContext);
}

NTSTATUS connect_with_shared_endpoint(NDK_CONNECTOR *connector, NDK_QP *qp,
                                      NDK_SHARED_ENDPOINT *se, const PSOCKADDR pDestAddress,
                                      ULONG DestAddressLength, ULONG InboundReadLimit,
                                      ULONG OutboundReadLimit, const PVOID pPrivateData,
                                      ULONG PrivateDataLength,
                                      NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                      PVOID RequestContext)
{
    if (se == nullptr)
        return STATUS_INVALID_PARAMETER;
    return start_connect(connector, qp, se, nullptr, 0, pDestAddress, DestAddressLength,
                         InboundReadLimit, OutboundReadLimit, pPrivateData, PrivateDataLength,
                         RequestCompletion, RequestContext);
}

NTSTATUS get_connection_data(NDK_CONNECTOR *ndk_connector, ULONG *pInboundReadLimit,
                             ULONG *pOutboundReadLimit, PVOID pPrivateData,
                             ULONG *pPrivateDataLength)
{
    SoftConnector &c = *SoftConnector::from(ndk_connector);
    if (pPrivateDataLength == nullptr)
        return STATUS_INVALID_PARAMETER;
    std::lock_guard lock(c.adapter().mu());
    if (!c.data_available)
        return STATUS_CONNECTION_INVALID; // nothing received yet (ND2 GetReadLimits)
    if (pPrivateData == nullptr && *pPrivateDataLength > 0)
        return STATUS_INVALID_PARAMETER; // "the consumer must never do this" (digest 1.8)
    if (pInboundReadLimit != nullptr)
        *pInboundReadLimit = c.inbound_read_limit;
    if (pOutboundReadLimit != nullptr)
        *pOutboundReadLimit = c.outbound_read_limit;
    // RDS: the soft provider reports exactly what the peer sent (docs/semantics.md, CONN-RDS).
    auto required = static_cast<ULONG>(c.peer_private_data.size());
    ULONG given = *pPrivateDataLength;
    *pPrivateDataLength = required;
    if (pPrivateData == nullptr)
        return STATUS_SUCCESS; // NULL and 0: the size query
    if (ULONG n = std::min(given, required); n > 0)
        std::memcpy(pPrivateData, c.peer_private_data.data(), n);
    return given >= required ? STATUS_SUCCESS : STATUS_BUFFER_TOO_SMALL;
}

NTSTATUS get_address(SoftConnector &c, bool peer, PSOCKADDR address, ULONG *length)
{
    std::lock_guard lock(c.adapter().mu());
    if (c.state == SoftConnector::State::Idle)
        return STATUS_CONNECTION_INVALID; // no connection attempted (ND2 GetLocalAddress)
    return (peer ? c.remote : c.local).to_sockaddr(address, length);
}

NTSTATUS get_local_address(NDK_CONNECTOR *c, PSOCKADDR pAddress, ULONG *pAddressLength)
{
    return get_address(*SoftConnector::from(c), false, pAddress, pAddressLength);
}

NTSTATUS get_peer_address(NDK_CONNECTOR *c, PSOCKADDR pAddress, ULONG *pAddressLength)
{
    return get_address(*SoftConnector::from(c), true, pAddress, pAddressLength);
}

} // namespace

const NDK_CONNECTOR_DISPATCH kConnectorDispatch = {
    .NdkCloseConnector = close_object<SoftConnector>,
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

} // namespace ndk::soft
