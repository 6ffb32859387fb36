// The connector handle: connection establishment and teardown (digest 1.8, 3.5, 3.6).
#include "ndk/objects.hpp"

#include "arguments.hpp"
#include "request.hpp"

#include <stdexcept>
#include <string>

namespace ndk {
namespace {

// What the provider may read until a Connect or Accept completes: kept alive by the Call.
struct ConnectArguments {
    SocketAddress src;
    SocketAddress dest;
    PrivateData private_data;
};

ULONG address_length(std::optional<ULONG> length)
{
    constexpr ULONG kStorage = sizeof(sockaddr_storage);
    if (!length)
        return kStorage;
    if (*length > kStorage)
        throw std::invalid_argument("address length " + std::to_string(*length) +
                                    " is larger than the address buffer (" +
                                    std::to_string(kStorage) + " bytes)");
    return *length;
}

} // namespace

Connector::Connector(std::shared_ptr<Adapter> adapter, NDK_CONNECTOR *connector,
                     std::vector<std::shared_ptr<Object>> holds)
    : Object(std::move(adapter), &connector->Header, connector->Dispatch->NdkCloseConnector,
             std::move(holds)),
      ndk_(connector), events_(std::make_shared<ConnectorEvents>())
{
    event_context_ = this->adapter()->event_context(events_);
}

void Connector::disconnect_event(PVOID context) { disconnect_event_ex(context, 0); }

void Connector::disconnect_event_ex(PVOID context, ULONG provider_disconnect_reason)
{
    if (auto events = Adapter::find_event_sink<ConnectorEvents>(context))
        events->disconnects.push(provider_disconnect_reason); // else: after the close
}

NDK_FN_DISCONNECT_EVENT_CALLBACK Connector::disconnect_callback(bool wanted) const
{
    return wanted ? &Connector::disconnect_event : nullptr;
}

NDK_FN_DISCONNECT_EVENT_CALLBACK_EX Connector::disconnect_callback_ex(bool wanted) const
{
    return wanted ? &Connector::disconnect_event_ex : nullptr;
}

void Connector::check_ex(const char *function) const
{
    // The Ex members exist in 2.1 dispatch tables only (digest 2.7); a consumer must not reach
    // for them on an older object.
    NDK_VERSION v = header()->Version;
    if (v.Major < 2 || (v.Major == 2 && v.Minor < 1))
        throw Error(STATUS_NOT_SUPPORTED, std::string(function) + " is NDKPI 2.1; the connector is " +
                                              std::to_string(v.Major) + "." +
                                              std::to_string(v.Minor));
}

Call Connector::connect(const std::shared_ptr<Qp> &qp, const SocketAddress &src,
                        const SocketAddress &dest, ULONG inbound_read_limit,
                        ULONG outbound_read_limit, const PrivateData &private_data)
{
    auto in_call = enter();
    auto in_arguments = enter_arguments({qp.get()});
    hold(qp);
    auto args = std::make_shared<ConnectArguments>(ConnectArguments{src, dest, private_data});
    return issue_request(*adapter(),
        [&](void *context) {
            return ndk_->Dispatch->NdkConnect(
                ndk_, qp ? qp->ndk() : nullptr, args->src.get(), args->src.length,
                args->dest.get(), args->dest.length, inbound_read_limit, outbound_read_limit,
                args->private_data.data(), args->private_data.length(), Call::request_completion,
                context);
        },
        args);
}

Call Connector::connect_with_shared_endpoint(const std::shared_ptr<Qp> &qp,
                                             const std::shared_ptr<SharedEndpoint> &shared_endpoint,
                                             const SocketAddress &dest, ULONG inbound_read_limit,
                                             ULONG outbound_read_limit,
                                             const PrivateData &private_data)
{
    auto in_call = enter();
    auto in_arguments = enter_arguments({qp.get(), shared_endpoint.get()});
    hold(qp);
    hold(shared_endpoint);
    auto args = std::make_shared<ConnectArguments>(ConnectArguments{{}, dest, private_data});
    return issue_request(*adapter(),
        [&](void *context) {
            return ndk_->Dispatch->NdkConnectWithSharedEndpoint(
                ndk_, qp ? qp->ndk() : nullptr, shared_endpoint ? shared_endpoint->ndk() : nullptr,
                args->dest.get(), args->dest.length, inbound_read_limit, outbound_read_limit,
                args->private_data.data(), args->private_data.length(), Call::request_completion,
                context);
        },
        args);
}

Call Connector::complete_connect(bool with_disconnect_event)
{
    auto in_call = enter();
    return issue_request(*adapter(), [&](void *context) {
        return ndk_->Dispatch->NdkCompleteConnect(
            ndk_, disconnect_callback(with_disconnect_event),
            with_disconnect_event ? event_context_ : nullptr, Call::request_completion, context);
    });
}

Call Connector::complete_connect_ex(bool with_disconnect_event)
{
    auto in_call = enter();
    check_ex("NdkCompleteConnectEx");
    return issue_request(*adapter(), [&](void *context) {
        return ndk_->Dispatch->NdkCompleteConnectEx(
            ndk_, disconnect_callback_ex(with_disconnect_event),
            with_disconnect_event ? event_context_ : nullptr, Call::request_completion, context);
    });
}

Call Connector::accept(const std::shared_ptr<Qp> &qp, ULONG inbound_read_limit,
                       ULONG outbound_read_limit, const PrivateData &private_data,
                       bool with_disconnect_event)
{
    auto in_call = enter();
    auto in_arguments = enter_arguments({qp.get()});
    hold(qp);
    auto args = std::make_shared<ConnectArguments>(ConnectArguments{{}, {}, private_data});
    return issue_request(*adapter(),
        [&](void *context) {
            return ndk_->Dispatch->NdkAccept(
                ndk_, qp ? qp->ndk() : nullptr, inbound_read_limit, outbound_read_limit,
                args->private_data.data(), args->private_data.length(),
                disconnect_callback(with_disconnect_event),
                with_disconnect_event ? event_context_ : nullptr, Call::request_completion,
                context);
        },
        args);
}

Call Connector::accept_ex(const std::shared_ptr<Qp> &qp, ULONG inbound_read_limit,
                          ULONG outbound_read_limit, const PrivateData &private_data,
                          bool with_disconnect_event)
{
    auto in_call = enter();
    check_ex("NdkAcceptEx");
    auto in_arguments = enter_arguments({qp.get()});
    hold(qp);
    auto args = std::make_shared<ConnectArguments>(ConnectArguments{{}, {}, private_data});
    return issue_request(*adapter(),
        [&](void *context) {
            return ndk_->Dispatch->NdkAcceptEx(
                ndk_, qp ? qp->ndk() : nullptr, inbound_read_limit, outbound_read_limit,
                args->private_data.data(), args->private_data.length(),
                disconnect_callback_ex(with_disconnect_event),
                with_disconnect_event ? event_context_ : nullptr, Call::request_completion,
                context);
        },
        args);
}

NTSTATUS Connector::reject(const PrivateData &private_data)
{
    auto in_call = enter();
    return ndk_->Dispatch->NdkReject(ndk_, private_data.data(), private_data.length());
}

NTSTATUS Connector::get_connection_data(ULONG *inbound_read_limit, ULONG *outbound_read_limit,
                                        PVOID private_data, ULONG *private_data_length)
{
    auto in_call = enter();
    return ndk_->Dispatch->NdkGetConnectionData(ndk_, inbound_read_limit, outbound_read_limit,
                                                private_data, private_data_length);
}

NTSTATUS Connector::get_local_address(SocketAddress &address, std::optional<ULONG> length)
{
    auto in_call = enter();
    address = SocketAddress{};
    address.length = address_length(length);
    return ndk_->Dispatch->NdkGetLocalAddress(ndk_, address.get(), &address.length);
}

NTSTATUS Connector::get_peer_address(SocketAddress &address, std::optional<ULONG> length)
{
    auto in_call = enter();
    address = SocketAddress{};
    address.length = address_length(length);
    return ndk_->Dispatch->NdkGetPeerAddress(ndk_, address.get(), &address.length);
}

Call Connector::disconnect()
{
    auto in_call = enter();
    return issue_request(*adapter(), [&](void *context) {
        return ndk_->Dispatch->NdkDisconnect(ndk_, Call::request_completion, context);
    });
}

} // namespace ndk
