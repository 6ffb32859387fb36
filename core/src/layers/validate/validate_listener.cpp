// The validated listener (its connect events deliver validated connectors) and shared
// endpoint.
#include "layers/validate/validate_layer.hpp"

namespace ndk::validate {

namespace {

ListenerShadow &listener_of(NDK_LISTENER *face) { return Shadow::as<ListenerShadow>(face); }
NDK_LISTENER *real_listener(ListenerShadow &l) { return reinterpret_cast<NDK_LISTENER *>(l.real()); }

NTSTATUS listen(NDK_LISTENER *face, const PSOCKADDR address, ULONG length,
                NDK_FN_REQUEST_COMPLETION completion, PVOID context)
{
    ListenerShadow &l = listener_of(face);
    if (!l.usable("NdkListen"))
        return STATUS_INVALID_DEVICE_STATE;
    return run_request(l.adapter(), &l, "NdkListen", completion, context,
                       [&](NDK_FN_REQUEST_COMPLETION done, PVOID ctx) {
                           return real_listener(l)->Dispatch->NdkListen(real_listener(l), address,
                                                                        length, done, ctx);
                       });
}

NTSTATUS listener_local_address(NDK_LISTENER *face, PSOCKADDR address, ULONG *length)
{
    ListenerShadow &l = listener_of(face);
    if (!l.usable("NdkGetLocalAddress"))
        return STATUS_INVALID_DEVICE_STATE;
    NTSTATUS status =
        real_listener(l)->Dispatch->NdkGetLocalAddress(real_listener(l), address, length);
    check_documented(&l, l.adapter(), "NdkGetLocalAddress", status);
    return status;
}

void control_connect_events(NDK_LISTENER *face, BOOLEAN pause)
{
    ListenerShadow &l = listener_of(face);
    if (l.usable("NdkControlConnectEvents"))
        real_listener(l)->Dispatch->NdkControlConnectEvents(real_listener(l), pause);
}

NTSTATUS endpoint_local_address(NDK_SHARED_ENDPOINT *face, PSOCKADDR address, ULONG *length)
{
    Shadow &e = Shadow::of(face);
    if (!e.usable("NdkGetLocalAddress"))
        return STATUS_INVALID_DEVICE_STATE;
    auto real = reinterpret_cast<NDK_SHARED_ENDPOINT *>(e.real());
    NTSTATUS status = real->Dispatch->NdkGetLocalAddress(real, address, length);
    check_documented(&e, e.adapter(), "NdkGetLocalAddress", status);
    return status;
}

} // namespace

void connect_event(PVOID context, NDK_CONNECTOR *connector)
{
    auto &l = *static_cast<ListenerShadow *>(context);
    const char *call = "NdkConnectEventCallback";
    if (!l.accepts_callback(call))
        return;
    ConnectorShadow &c = l.adapter().make<ConnectorShadow>();
    c.listener = &l;
    if (connector == nullptr) {
        c.set_state(State::Closed);
        l.consumer_callback(l.consumer_context, nullptr);
        return;
    }
    c.bind(&connector->Header, call);
    l.consumer_callback(l.consumer_context, static_cast<NDK_CONNECTOR *>(c.face()));
}

const NDK_LISTENER_DISPATCH kListenerDispatch = {
    .NdkCloseListener = close_object,
    .NdkQueryExtension = query_extension,
    .NdkListen = listen,
    .NdkGetLocalAddress = listener_local_address,
    .NdkControlConnectEvents = control_connect_events,
};

const NDK_SHARED_ENDPOINT_DISPATCH kSharedEndpointDispatch = {
    .NdkCloseSharedEndpoint = close_object,
    .NdkQueryExtension = query_extension,
    .NdkGetLocalAddress = endpoint_local_address,
};

} // namespace ndk::validate
