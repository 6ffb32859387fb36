// Listener (digest 1.9): a listening address:port in the fabric, which Connect finds
// (loop_connector.cpp).  A paused listener is as good as absent; a closing one is removed at
// once, while its port stays held by the connectors it delivered (digest 3.5).
#include "loop_objects.hpp"

namespace ndk::loop {

NTSTATUS resolve_local(const LoopAdapter &a, Endpoint &at)
{
    for (const Endpoint &mine : a.miniport().addresses) {
        if (mine.family == at.family && (at.unspecified() || mine.ip == at.ip)) {
            at.ip = mine.ip;
            return STATUS_SUCCESS;
        }
    }
    return STATUS_INVALID_ADDRESS;
}

LListener::LListener(LoopAdapter &a, NDK_FN_CONNECT_EVENT_CALLBACK event, PVOID context)
    : NdkObject(a, NdkObjectTypeListener, &kListenerDispatch), connect_event(event),
      connect_context(context)
{
}

void LListener::on_close()
{
    if (!listening)
        return;
    Fabric::instance().listeners.erase(local); // new requests are refused at once (digest 3.5)
    Fabric::instance().release(local);         // its connectors still hold the port
}

NTSTATUS create_listener(NDK_ADAPTER *ndk_adapter, NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
                         PVOID ConnectEventContext, NDK_FN_CREATE_COMPLETION, PVOID,
                         NDK_LISTENER **ppNdkListener)
{
    if (NTSTATUS s = kit::check_create_listener(ConnectEvent, ppNdkListener); s != STATUS_SUCCESS)
        return s;
    return kit::create_inline<LListener>(*LoopAdapter::from(ndk_adapter), ppNdkListener,
                                         ConnectEvent, ConnectEventContext);
}

namespace {

LListener &listener_of(NDK_LISTENER *l) { return *static_cast<LListener *>(l); }

NTSTATUS listen(NDK_LISTENER *ndk_listener, const PSOCKADDR pAddress, ULONG AddressLength,
                NDK_FN_REQUEST_COMPLETION, PVOID)
{
    LListener &l = listener_of(ndk_listener);
    Endpoint at;
    if (NTSTATUS s = Endpoint::from_sockaddr(pAddress, AddressLength, at); s != STATUS_SUCCESS)
        return s;
    std::lock_guard lock(fabric_mu());
    if (l.listening)
        return STATUS_INVALID_DEVICE_STATE; // docs/semantics.md, LISTEN-STATE
    if (NTSTATUS s = resolve_local(l.adapter(), at); s != STATUS_SUCCESS)
        return s;
    if (NTSTATUS s = Fabric::instance().reserve(at); s != STATUS_SUCCESS)
        return s; // SHARING_VIOLATION, or TOO_MANY_ADDRESSES for port 0
    l.listening = true;
    l.local = at;
    Fabric::instance().listeners[at] = &l;
    return STATUS_SUCCESS;
}

NTSTATUS listener_local_address(NDK_LISTENER *ndk_listener, PSOCKADDR pAddress, ULONG *pLength)
{
    LListener &l = listener_of(ndk_listener);
    std::lock_guard lock(fabric_mu());
    if (!l.listening)
        return STATUS_INVALID_DEVICE_STATE; // LISTEN-STATE
    return l.local.to_sockaddr(pAddress, pLength);
}

VOID control_connect_events(NDK_LISTENER *ndk_listener, BOOLEAN Pause)
{
    std::lock_guard lock(fabric_mu());
    listener_of(ndk_listener).paused = Pause != FALSE; // paused = absent (digest 1.9)
}

} // namespace

const NDK_LISTENER_DISPATCH kListenerDispatch = {
    .NdkCloseListener = close_object<LListener>,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkListen = listen,
    .NdkGetLocalAddress = listener_local_address,
    .NdkControlConnectEvents = control_connect_events,
};

} // namespace ndk::loop
