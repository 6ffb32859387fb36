// Connector (digest 1.8).  This file holds creation and the calls on a connector that has no
// connection: they report CONNECTION_INVALID, as ND2 does for an unconnected connector
// (digest 4.2).  Establishment (Connect, Accept, ...) is not implemented yet and reports
// STATUS_NOT_SUPPORTED; see docs/semantics.md.
#include "soft_objects.hpp"

namespace ndk::soft {

NTSTATUS create_connector(NDK_ADAPTER *ndk_adapter, NDK_FN_CREATE_COMPLETION CreateCompletion,
                          PVOID RequestContext, NDK_CONNECTOR **ppNdkConnector)
{
    SoftAdapter *adapter = SoftAdapter::from(ndk_adapter);
    if (ppNdkConnector == nullptr)
        return STATUS_INVALID_PARAMETER;
    return adapter->create<SoftConnector>(
        "NdkCreateConnector", CreateCompletion, RequestContext, ppNdkConnector,
        [&](NTSTATUS &) { return std::make_unique<SoftConnector>(*adapter); });
}

namespace {

NTSTATUS connect(NDK_CONNECTOR *, NDK_QP *, const PSOCKADDR, ULONG, const PSOCKADDR, ULONG, ULONG,
                 ULONG, const PVOID, ULONG, NDK_FN_REQUEST_COMPLETION, PVOID)
{
    return STATUS_NOT_SUPPORTED;
}
NTSTATUS connect_with_shared_endpoint(NDK_CONNECTOR *, NDK_QP *, NDK_SHARED_ENDPOINT *,
                                      const PSOCKADDR, ULONG, ULONG, ULONG, const PVOID, ULONG,
                                      NDK_FN_REQUEST_COMPLETION, PVOID)
{
    return STATUS_NOT_SUPPORTED;
}
NTSTATUS complete_connect(NDK_CONNECTOR *, NDK_FN_DISCONNECT_EVENT_CALLBACK, PVOID,
                          NDK_FN_REQUEST_COMPLETION, PVOID)
{
    return STATUS_CONNECTION_INVALID; // "QP is not connecting" (digest 1.8)
}
NTSTATUS complete_connect_ex(NDK_CONNECTOR *, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX, PVOID,
                             NDK_FN_REQUEST_COMPLETION, PVOID)
{
    return STATUS_CONNECTION_INVALID;
}
NTSTATUS accept(NDK_CONNECTOR *, NDK_QP *, ULONG, ULONG, const PVOID, ULONG,
                NDK_FN_DISCONNECT_EVENT_CALLBACK, PVOID, NDK_FN_REQUEST_COMPLETION, PVOID)
{
    return STATUS_CONNECTION_INVALID; // no incoming request on this connector
}
NTSTATUS accept_ex(NDK_CONNECTOR *, NDK_QP *, ULONG, ULONG, const PVOID, ULONG,
                   NDK_FN_DISCONNECT_EVENT_CALLBACK_EX, PVOID, NDK_FN_REQUEST_COMPLETION, PVOID)
{
    return STATUS_CONNECTION_INVALID;
}
NTSTATUS reject(NDK_CONNECTOR *, const PVOID, ULONG) { return STATUS_CONNECTION_INVALID; }
NTSTATUS get_connection_data(NDK_CONNECTOR *, ULONG *, ULONG *, PVOID, ULONG *)
{
    return STATUS_CONNECTION_INVALID;
}
NTSTATUS get_local_address(NDK_CONNECTOR *, PSOCKADDR, ULONG *)
{
    return STATUS_CONNECTION_INVALID;
}
NTSTATUS get_peer_address(NDK_CONNECTOR *, PSOCKADDR, ULONG *)
{
    return STATUS_CONNECTION_INVALID;
}
NTSTATUS disconnect(NDK_CONNECTOR *, NDK_FN_REQUEST_COMPLETION, PVOID)
{
    return STATUS_CONNECTION_INVALID;
}

} // namespace

const NDK_CONNECTOR_DISPATCH kConnectorDispatch = {
    close_object<SoftConnector>,
    query_extension_not_supported,
    connect,
    connect_with_shared_endpoint,
    complete_connect,
    accept,
    reject,
    get_connection_data,
    get_local_address,
    get_peer_address,
    disconnect,
    complete_connect_ex,
    accept_ex,
};

} // namespace ndk::soft
