// Handles for MW, SRQ and shared endpoint (the QP, connector and listener have their own files).
#include "ndk/objects.hpp"

namespace ndk {

Mw::Mw(std::shared_ptr<Adapter> adapter, NDK_MW *mw, std::shared_ptr<Pd> pd)
    : Object(std::move(adapter), &mw->Header, mw->Dispatch->NdkCloseMw, {std::move(pd)}), ndk_(mw)
{
}

UINT32 Mw::get_remote_token()
{
    auto in_call = enter();
    return ndk_->Dispatch->NdkGetRemoteTokenFromMw(ndk_);
}

Srq::Srq(std::shared_ptr<Adapter> adapter, NDK_SRQ *srq, std::shared_ptr<Pd> pd,
         std::shared_ptr<SrqEvents> events, void *event_context)
    : Object(std::move(adapter), &srq->Header, srq->Dispatch->NdkCloseSrq, {std::move(pd)}),
      ndk_(srq), events_(std::move(events))
{
    event_context_ = event_context;
}

void Srq::notification(PVOID context, NTSTATUS status)
{
    if (auto events = Adapter::find_event_sink<SrqEvents>(context))
        events->notifications.push(status); // else: after the close, or not an SRQ's context
}

Call Srq::modify(ULONG srq_depth, ULONG notify_threshold)
{
    auto in_call = enter();
    Call call = Call::begin();
    void *context = call.context(*adapter());
    NTSTATUS status = ndk_->Dispatch->NdkModifySrq(ndk_, srq_depth, notify_threshold,
                                                   Call::request_completion, context);
    call.returned(status, context);
    return call;
}

NTSTATUS Srq::receive(PVOID request_context, std::span<const NDK_SGE> sgl)
{
    auto in_call = enter();
    return ndk_->Dispatch->NdkSrqReceive(ndk_, request_context, sgl.data(),
                                         static_cast<ULONG>(sgl.size()));
}

SharedEndpoint::SharedEndpoint(std::shared_ptr<Adapter> adapter, NDK_SHARED_ENDPOINT *endpoint)
    : Object(std::move(adapter), &endpoint->Header, endpoint->Dispatch->NdkCloseSharedEndpoint),
      ndk_(endpoint)
{
}

NTSTATUS SharedEndpoint::get_local_address(SocketAddress &address)
{
    auto in_call = enter();
    address.length = sizeof address.storage;
    return ndk_->Dispatch->NdkGetLocalAddress(ndk_, address.get(), &address.length);
}

} // namespace ndk
