// The validated connector: private-data and connection-data rules (digest 1.8), the QP and
// shared endpoint becoming its antecedents (3.1), and its disconnect events.
#include "layers/validate/validate_layer.hpp"

#include <type_traits>

namespace ndk::validate {

namespace {

ConnectorShadow &connector_of(NDK_CONNECTOR *face) { return Shadow::as<ConnectorShadow>(face); }
NDK_CONNECTOR *real_connector(ConnectorShadow &c)
{
    return reinterpret_cast<NDK_CONNECTOR *>(c.real());
}

void check_private_data(ConnectorShadow &c, const char *call, const void *data, ULONG length)
{
    if (data == nullptr && length > 0)
        c.report("PRIVATE-DATA-NULL", call,
                 "pPrivateData is NULL with PrivateDataLength " + std::to_string(length));
}

void disconnect_event(PVOID context)
{
    auto &c = *static_cast<ConnectorShadow *>(context);
    if (c.accepts_callback("NdkDisconnectEventCallback") && c.disconnect != nullptr)
        c.disconnect(c.disconnect_context);
}

void disconnect_event_ex(PVOID context, ULONG reason)
{
    auto &c = *static_cast<ConnectorShadow *>(context);
    if (c.accepts_callback("NdkDisconnectEventCallbackEx") && c.disconnect_ex != nullptr)
        c.disconnect_ex(c.disconnect_context, reason);
}

// `antecedents` become the connector's once the call succeeded (digest 3.1); until then the
// link is tentative: a Connect refused inside the provider holds no QP, though its completion
// may still be on its way when the consumer closes the QP.
std::function<void(NTSTATUS)> link(ConnectorShadow &c, std::vector<Shadow *> antecedents)
{
    for (Shadow *a : antecedents)
        a->add_successor(c, /*tentative=*/true);
    return [&c, antecedents](NTSTATUS status) {
        for (Shadow *a : antecedents)
            if (status == STATUS_SUCCESS)
                a->confirm_successor(c);
            else
                a->remove_successor(c);
    };
}
// The same for arguments that check_arguments() accepted; a NULL one names nothing.
std::function<void(NTSTATUS)> link(ConnectorShadow &c, std::initializer_list<const void *> faces)
{
    std::vector<Shadow *> antecedents;
    for (const void *face : faces)
        if (face != nullptr)
            antecedents.push_back(&Shadow::of(face));
    return link(c, std::move(antecedents));
}

NTSTATUS connect(NDK_CONNECTOR *face, NDK_QP *qp, const PSOCKADDR src, ULONG src_length,
                 const PSOCKADDR dst, ULONG dst_length, ULONG irl, ULONG orl, const PVOID data,
                 ULONG data_length, NDK_FN_REQUEST_COMPLETION completion, PVOID context)
{
    ConnectorShadow &c = connector_of(face);
    if (!c.usable("NdkConnect"))
        return STATUS_INVALID_DEVICE_STATE;
    if (check_arguments(c.adapter(), "NdkConnect", {{qp, NdkObjectTypeQp}}) != STATUS_SUCCESS)
        return STATUS_INVALID_PARAMETER;
    check_private_data(c, "NdkConnect", data, data_length);
    auto on_done = link(c, {qp});
    return run_request(c.adapter(), &c, "NdkConnect", completion, context,
                       [&](NDK_FN_REQUEST_COMPLETION done, PVOID ctx) {
                           return real_connector(c)->Dispatch->NdkConnect(
                               real_connector(c), real_of(qp), src, src_length, dst,
                               dst_length, irl, orl, data, data_length, done, ctx);
                       },
                       std::move(on_done));
}

NTSTATUS connect_with_shared_endpoint(NDK_CONNECTOR *face, NDK_QP *qp,
                                      NDK_SHARED_ENDPOINT *endpoint, const PSOCKADDR dst,
                                      ULONG dst_length, ULONG irl, ULONG orl, const PVOID data,
                                      ULONG data_length, NDK_FN_REQUEST_COMPLETION completion,
                                      PVOID context)
{
    ConnectorShadow &c = connector_of(face);
    const char *call = "NdkConnectWithSharedEndpoint";
    if (!c.usable(call))
        return STATUS_INVALID_DEVICE_STATE;
    if (check_arguments(c.adapter(), call,
                        {{qp, NdkObjectTypeQp}, {endpoint, NdkObjectTypeSharedEndpoint}}) !=
        STATUS_SUCCESS)
        return STATUS_INVALID_PARAMETER;
    check_private_data(c, call, data, data_length);
    auto on_done = link(c, {qp, endpoint});
    return run_request(c.adapter(), &c, call, completion, context,
                       [&](NDK_FN_REQUEST_COMPLETION done, PVOID ctx) {
                           return real_connector(c)->Dispatch->NdkConnectWithSharedEndpoint(
                               real_connector(c), real_of(qp), real_of(endpoint), dst,
                               dst_length, irl, orl, data, data_length, done, ctx);
                       },
                       std::move(on_done));
}

// The disconnect callback the consumer registered, and the layer's own in its place.
void set_disconnect(ConnectorShadow &c, NDK_FN_DISCONNECT_EVENT_CALLBACK event, PVOID context)
{
    c.disconnect = event;
    c.disconnect_context = context;
}
void set_disconnect(ConnectorShadow &c, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX event, PVOID context)
{
    c.disconnect_ex = event;
    c.disconnect_context = context;
}
template <class Event>
Event layer_disconnect(Event event)
{
    if (event == nullptr)
        return nullptr;
    if constexpr (std::is_same_v<Event, NDK_FN_DISCONNECT_EVENT_CALLBACK>)
        return disconnect_event;
    else
        return disconnect_event_ex;
}

// NdkCompleteConnect and NdkCompleteConnectEx: `Entry` is the dispatch member to forward to.
template <auto Entry, class Event>
NTSTATUS complete_connect_as(const char *call, NDK_CONNECTOR *face, Event event,
                             PVOID event_context, NDK_FN_REQUEST_COMPLETION completion,
                             PVOID context)
{
    ConnectorShadow &c = connector_of(face);
    if (!c.usable(call))
        return STATUS_INVALID_DEVICE_STATE;
    c.established = true;
    set_disconnect(c, event, event_context);
    return run_request(c.adapter(), &c, call, completion, context,
                       [&](NDK_FN_REQUEST_COMPLETION done, PVOID ctx) {
                           NDK_CONNECTOR *real = real_connector(c);
                           return (real->Dispatch->*Entry)(real, layer_disconnect(event), &c,
                                                           done, ctx);
                       });
}

NTSTATUS complete_connect(NDK_CONNECTOR *face, NDK_FN_DISCONNECT_EVENT_CALLBACK event,
                          PVOID event_context, NDK_FN_REQUEST_COMPLETION completion,
                          PVOID context)
{
    return complete_connect_as<&NDK_CONNECTOR_DISPATCH::NdkCompleteConnect>(
        "NdkCompleteConnect", face, event, event_context, completion, context);
}

NTSTATUS complete_connect_ex(NDK_CONNECTOR *face, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX event,
                             PVOID event_context, NDK_FN_REQUEST_COMPLETION completion,
                             PVOID context)
{
    return complete_connect_as<&NDK_CONNECTOR_DISPATCH::NdkCompleteConnectEx>(
        "NdkCompleteConnectEx", face, event, event_context, completion, context);
}

// The accepted connector holds its QP, and its listener's endpoint (digest 3.5).
std::vector<Shadow *> accept_antecedents(ConnectorShadow &c, NDK_QP *qp)
{
    std::vector<Shadow *> antecedents;
    if (qp != nullptr)
        antecedents.push_back(&Shadow::of(qp));
    if (c.listener != nullptr)
        antecedents.push_back(c.listener);
    return antecedents;
}

// NdkAccept and NdkAcceptEx.
template <auto Entry, class Event>
NTSTATUS accept_as(const char *call, NDK_CONNECTOR *face, NDK_QP *qp, ULONG irl, ULONG orl,
                   const PVOID data, ULONG data_length, Event event, PVOID event_context,
                   NDK_FN_REQUEST_COMPLETION completion, PVOID context)
{
    ConnectorShadow &c = connector_of(face);
    if (!c.usable(call))
        return STATUS_INVALID_DEVICE_STATE;
    if (check_arguments(c.adapter(), call, {{qp, NdkObjectTypeQp}}) != STATUS_SUCCESS)
        return STATUS_INVALID_PARAMETER;
    check_private_data(c, call, data, data_length);
    c.established = true;
    set_disconnect(c, event, event_context);
    auto on_done = link(c, accept_antecedents(c, qp));
    return run_request(c.adapter(), &c, call, completion, context,
                       [&](NDK_FN_REQUEST_COMPLETION done, PVOID ctx) {
                           NDK_CONNECTOR *real = real_connector(c);
                           return (real->Dispatch->*Entry)(real, real_of(qp), irl, orl, data,
                                                           data_length, layer_disconnect(event),
                                                           &c, done, ctx);
                       },
                       std::move(on_done));
}

NTSTATUS accept(NDK_CONNECTOR *face, NDK_QP *qp, ULONG irl, ULONG orl, const PVOID data,
                ULONG data_length, NDK_FN_DISCONNECT_EVENT_CALLBACK event, PVOID event_context,
                NDK_FN_REQUEST_COMPLETION completion, PVOID context)
{
    return accept_as<&NDK_CONNECTOR_DISPATCH::NdkAccept>("NdkAccept", face, qp, irl, orl, data,
                                                         data_length, event, event_context,
                                                         completion, context);
}

NTSTATUS accept_ex(NDK_CONNECTOR *face, NDK_QP *qp, ULONG irl, ULONG orl, const PVOID data,
                   ULONG data_length, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX event,
                   PVOID event_context, NDK_FN_REQUEST_COMPLETION completion, PVOID context)
{
    return accept_as<&NDK_CONNECTOR_DISPATCH::NdkAcceptEx>("NdkAcceptEx", face, qp, irl, orl,
                                                           data, data_length, event,
                                                           event_context, completion, context);
}

NTSTATUS reject(NDK_CONNECTOR *face, const PVOID data, ULONG data_length)
{
    ConnectorShadow &c = connector_of(face);
    if (!c.usable("NdkReject"))
        return STATUS_INVALID_DEVICE_STATE;
    check_private_data(c, "NdkReject", data, data_length);
    NTSTATUS status = real_connector(c)->Dispatch->NdkReject(real_connector(c), data, data_length);
    check_documented(&c, c.adapter(), "NdkReject", status);
    return status;
}

NTSTATUS get_connection_data(NDK_CONNECTOR *face, ULONG *irl, ULONG *orl, PVOID data,
                             ULONG *length)
{
    ConnectorShadow &c = connector_of(face);
    const char *call = "NdkGetConnectionData";
    if (!c.usable(call))
        return STATUS_INVALID_DEVICE_STATE;
    if (c.established)
        c.report("CONNDATA-AFTER-ESTABLISH", call,
                 "called after NdkAccept / NdkCompleteConnect on this connector");
    if (data == nullptr && length != nullptr)
        check_private_data(c, call, data, *length);
    NTSTATUS status = real_connector(c)->Dispatch->NdkGetConnectionData(real_connector(c), irl,
                                                                         orl, data, length);
    check_documented(&c, c.adapter(), call, status);
    return status;
}

NTSTATUS get_local_address(NDK_CONNECTOR *face, PSOCKADDR address, ULONG *length)
{
    ConnectorShadow &c = connector_of(face);
    if (!c.usable("NdkGetLocalAddress"))
        return STATUS_INVALID_DEVICE_STATE;
    NTSTATUS status =
        real_connector(c)->Dispatch->NdkGetLocalAddress(real_connector(c), address, length);
    check_documented(&c, c.adapter(), "NdkGetLocalAddress", status);
    return status;
}

NTSTATUS get_peer_address(NDK_CONNECTOR *face, PSOCKADDR address, ULONG *length)
{
    ConnectorShadow &c = connector_of(face);
    if (!c.usable("NdkGetPeerAddress"))
        return STATUS_INVALID_DEVICE_STATE;
    NTSTATUS status =
        real_connector(c)->Dispatch->NdkGetPeerAddress(real_connector(c), address, length);
    check_documented(&c, c.adapter(), "NdkGetPeerAddress", status);
    return status;
}

NTSTATUS disconnect(NDK_CONNECTOR *face, NDK_FN_REQUEST_COMPLETION completion, PVOID context)
{
    ConnectorShadow &c = connector_of(face);
    if (!c.usable("NdkDisconnect"))
        return STATUS_INVALID_DEVICE_STATE;
    return run_request(c.adapter(), &c, "NdkDisconnect", completion, context,
                       [&](NDK_FN_REQUEST_COMPLETION done, PVOID ctx) {
                           return real_connector(c)->Dispatch->NdkDisconnect(real_connector(c),
                                                                             done, ctx);
                       });
}

} // namespace

const NDK_CONNECTOR_DISPATCH kConnectorDispatch = {
    .NdkCloseConnector = close_object,
    .NdkQueryExtension = query_extension,
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

} // namespace ndk::validate
