// Listener (digest 1.9): Listen reserves the address:port; paused connect events make the
// listener look absent to incoming requests.
#include "soft_connector_link.hpp" // a connector is made here: its link's type is needed
#include "soft_endpoint_address.hpp"
#include "soft_objects.hpp"
#include "soft_transport.hpp"

#include <algorithm>

namespace ndk::soft {

NTSTATUS create_listener(NDK_ADAPTER *ndk_adapter, NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
                         PVOID ConnectEventContext, NDK_FN_CREATE_COMPLETION, PVOID,
                         NDK_LISTENER **ppNdkListener)
{
    SoftAdapter *adapter = SoftAdapter::from(ndk_adapter);
    if (ConnectEvent == nullptr || ppNdkListener == nullptr)
        return STATUS_INVALID_PARAMETER;
    return adapter->create<SoftListener>(ppNdkListener, [&](NTSTATUS &) {
        auto l = std::make_unique<SoftListener>(*adapter);
        l->connect_event = ConnectEvent;
        l->connect_event_context = ConnectEventContext;
        return l;
    });
}

namespace {

NTSTATUS listen(NDK_LISTENER *ndk_listener, const PSOCKADDR pAddress, ULONG AddressLength,
                NDK_FN_REQUEST_COMPLETION, PVOID)
{
    SoftListener *listener = SoftListener::from(ndk_listener);
    SoftAdapter &adapter = listener->adapter();
    Endpoint local;
    if (NTSTATUS status = resolve_local(adapter, pAddress, AddressLength, local);
        status != STATUS_SUCCESS)
        return status;
    std::shared_ptr<PortReservation> port;
    {
        std::lock_guard lock(adapter.mu());
        if (listener->port)
            return STATUS_INVALID_DEVICE_STATE; // already listening
        NTSTATUS status = Fabric::instance().reserve(local.ip, local.port,
                                                     adapter.knobs().ephemeral_ports(), port);
        if (status != STATUS_SUCCESS)
            return status;
        listener->port = port;
    }
    const bool any_port = local.port == 0;
    return adapter.request(
        [listener, any_port] {
            SoftAdapter &adapter = listener->adapter();
            std::lock_guard lock(adapter.mu());
            if (listener->port == nullptr || listener->close_requested())
                return STATUS_CANCELLED; // closed while the listen was pending
            NTSTATUS s = adapter.transport().start_listening(*listener);
            // A port this provider chose may be another program's on a host's network (tcp):
            // choose again, as a kernel's bind to port 0 would (each pick another port:
            // Fabric::reserve goes on from its last pick).
            for (int again = 0; s == STATUS_SHARING_VIOLATION && any_port && again < kPortRepicks;
                 ++again) {
                std::shared_ptr<PortReservation> other;
                if (Fabric::instance().reserve(listener->port->endpoint().ip, 0,
                                               adapter.knobs().ephemeral_ports(),
                                               other) != STATUS_SUCCESS)
                    break;
                listener->port = std::move(other);
                s = adapter.transport().start_listening(*listener);
            }
            if (s != STATUS_SUCCESS)
                return s; // the failure path below lets the port go
            listener->listening = true;
            return STATUS_SUCCESS;
        },
        [listener] { // a failed listen leaves nothing reserved
            std::lock_guard lock(listener->adapter().mu());
            listener->port.reset();
        });
}

NTSTATUS get_local_address(NDK_LISTENER *ndk_listener, PSOCKADDR pAddress, ULONG *pAddressLength)
{
    SoftListener *listener = SoftListener::from(ndk_listener);
    std::lock_guard lock(listener->adapter().mu());
    if (!listener->port)
        return STATUS_INVALID_DEVICE_STATE; // not listening (ND2 Listener::GetLocalAddress)
    return listener->port->endpoint().to_sockaddr(pAddress, pAddressLength);
}

VOID control_connect_events(NDK_LISTENER *ndk_listener, BOOLEAN Pause)
{
    SoftListener *listener = SoftListener::from(ndk_listener);
    std::lock_guard lock(listener->adapter().mu());
    listener->paused = Pause != FALSE;
}

} // namespace

bool loopback_allowed(SoftAdapter &adapter, const Miniport &owner)
{
    return &owner != &adapter.miniport() ||
           (adapter.info().AdapterFlags & NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED);
}

SoftListener *listener_taking_requests(const Endpoint &local)
{
    SoftListener *listener = Fabric::instance().listener_at(local);
    if (listener == nullptr || listener->paused || listener->close_requested() ||
        !listener->listening)
        return nullptr;
    return listener;
}

SoftConnector &connect_request_arrived(SoftListener &listener, const Endpoint &remote,
                                       RequestedReadLimits requested,
                                       std::span<const unsigned char> private_data)
{
    SoftAdapter &adapter = listener.adapter();
    NDK_ADAPTER_INFO info = adapter.info();
    auto p = std::make_unique<SoftConnector>(adapter);
    p->passive = true;
    p->state = SoftConnector::State::Incoming;
    p->listener = &listener;
    p->depend_on(listener);
    p->port = listener.port;
    p->local = listener.port->endpoint();
    p->remote = remote;
    p->requested_inbound_read_limit = requested.inbound;
    p->requested_outbound_read_limit = requested.outbound;
    p->peer_private_data.assign(private_data.begin(), private_data.end());
    p->data_available = true;
    // What the passive side sees before it accepts: the peer's limits, capped by its adapter.
    p->inbound_read_limit = std::min(requested.outbound, info.MaxInboundReadLimit);
    p->outbound_read_limit = std::min(requested.inbound, info.MaxOutboundReadLimit);
    SoftConnector &incoming = *p;
    adapter.adopt(std::move(p));
    return incoming;
}

void deliver_connect_event(SoftConnector &incoming)
{
    SoftListener &listener = *incoming.listener;
    auto event = listener.connect_event;
    auto event_context = listener.connect_event_context;
    SoftConnector *c = &incoming;
    deliver_event(listener, [event, event_context, c] { event(event_context, c); });
}

void SoftListener::on_close()
{
    // New requests are refused from now on (digest 3.5); the port stays held by the connectors
    // this listener delivered until they close.
    if (listening)
        adapter().transport().stop_listening(*this);
    listening = false;
    port.reset();
}

const NDK_LISTENER_DISPATCH kListenerDispatch = {
    .NdkCloseListener = close_object<SoftListener>,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkListen = listen,
    .NdkGetLocalAddress = get_local_address,
    .NdkControlConnectEvents = control_connect_events,
};

} // namespace ndk::soft
