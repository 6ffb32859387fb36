// Listener (digest 1.9) over a listening rdma_cm id.  Each RDMA_CM_EVENT_CONNECT_REQUEST
// becomes a new passive connector handed to the connect event callback; a paused or closing
// listener refuses the request as if nobody listened (verbs_adapter.cpp, on_cm_event).
#include "verbs_objects.hpp"

#include <cerrno>

namespace ndk::verbs {

VListener::VListener(VerbsAdapter &adapter, NDK_FN_CONNECT_EVENT_CALLBACK event, PVOID context)
    : NdkObject(adapter, kType, &kListenerDispatch), connect_event(event), connect_context(context)
{
}

void VListener::destroy_resources()
{
    if (id != nullptr)
        rdma_destroy_id(id);
    id = nullptr;
}

void VListener::on_request(rdma_cm_id *incoming, const std::vector<uint8_t> &data,
                           ULONG responder_resources, ULONG initiator_depth)
{
    auto *connector = new VConnector(adapter());
    connector->id = incoming;
    connector->passive = true;
    connector->listener = this;
    connector->state = VConnector::State::Incoming;
    connector->peer_data = data;
    connector->have_peer_data = true;
    // From our side: the peer's initiator depth bounds our inbound reads, its responder
    // resources our outbound ones (rdma_cm swaps them into this perspective).
    connector->peer_inbound = responder_resources;
    connector->peer_outbound = initiator_depth;
    incoming->context = static_cast<Object *>(connector);
    {
        std::lock_guard lock(adapter().mu());
        connector->depend_on(*this); // the listener's close waits for it (digest 3.5)
        adapter().adopt(connector);
    }
    connect_event(connect_context, connector);
}

NTSTATUS create_listener(NDK_ADAPTER *ndk_adapter, NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
                         PVOID ConnectEventContext, NDK_FN_CREATE_COMPLETION, PVOID,
                         NDK_LISTENER **ppNdkListener)
{
    if (NTSTATUS status = kit::check_create_listener(ConnectEvent, ppNdkListener);
        status != STATUS_SUCCESS)
        return status;
    return kit::create_inline<VListener>(*VerbsAdapter::from(ndk_adapter), ppNdkListener,
                                         ConnectEvent, ConnectEventContext);
}

namespace {

NTSTATUS listen(NDK_LISTENER *ndk_listener, const PSOCKADDR pAddress, ULONG AddressLength,
                NDK_FN_REQUEST_COMPLETION, PVOID)
{
    VListener *listener = VListener::from(ndk_listener);
    VerbsAdapter &adapter = listener->adapter();
    sockaddr_storage address;
    if (!read_address(pAddress, AddressLength, address))
        return STATUS_INVALID_PARAMETER;
    std::lock_guard lock(adapter.mu());
    if (listener->listening)
        return STATUS_INVALID_DEVICE_STATE; // LISTEN-STATE
    if (!own_address(adapter, address))
        return STATUS_INVALID_ADDRESS;
    rdma_cm_id *id = nullptr;
    if (rdma_create_id(adapter.cm(), &id, static_cast<Object *>(listener), RDMA_PS_TCP) != 0)
        return errno_status(errno);
    if (rdma_bind_addr(id, reinterpret_cast<sockaddr *>(&address)) != 0 || rdma_listen(id, 64) != 0) {
        int error = errno;
        rdma_destroy_id(id);
        return error == EADDRINUSE ? STATUS_SHARING_VIOLATION : errno_status(error);
    }
    listener->id = id;
    listener->listening = true;
    return STATUS_SUCCESS;
}

NTSTATUS get_local_address(NDK_LISTENER *ndk_listener, PSOCKADDR pAddress, ULONG *pAddressLength)
{
    VListener *listener = VListener::from(ndk_listener);
    std::lock_guard lock(listener->adapter().mu());
    if (!listener->listening)
        return STATUS_INVALID_DEVICE_STATE;
    return write_address(rdma_get_local_addr(listener->id), pAddress, pAddressLength);
}

VOID control_connect_events(NDK_LISTENER *ndk_listener, BOOLEAN Pause)
{
    VListener *listener = VListener::from(ndk_listener);
    std::lock_guard lock(listener->adapter().mu());
    listener->paused = Pause != FALSE; // paused = as if no listener existed (digest 1.9)
}

NTSTATUS close_listener(NDK_OBJECT_HEADER *header, NDK_FN_CLOSE_COMPLETION completion,
                        PVOID context)
{
    return VListener::from(reinterpret_cast<NDK_LISTENER *>(header))->close(completion, context);
}

} // namespace

const NDK_LISTENER_DISPATCH kListenerDispatch = {
    .NdkCloseListener = close_listener,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkListen = listen,
    .NdkGetLocalAddress = get_local_address,
    .NdkControlConnectEvents = control_connect_events,
};

} // namespace ndk::verbs
