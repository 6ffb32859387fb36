// Handles for MW, SRQ and shared endpoint (the QP, connector and listener have their own files).
#include "ndk/objects.hpp"

namespace ndk {

Mw::Mw(std::shared_ptr<Adapter> adapter, NDK_MW *mw, std::shared_ptr<Pd> pd)
    : Object(std::move(adapter), &mw->Header, mw->Dispatch->NdkCloseMw, {std::move(pd)}), ndk_(mw)
{
}

UINT32 Mw::get_remote_token()
{
    check_open();
    return ndk_->Dispatch->NdkGetRemoteTokenFromMw(ndk_);
}

Srq::Srq(std::shared_ptr<Adapter> adapter, NDK_SRQ *srq, std::shared_ptr<Pd> pd,
         std::shared_ptr<SrqEvents> events)
    : Object(std::move(adapter), &srq->Header, srq->Dispatch->NdkCloseSrq, {std::move(pd)}),
      ndk_(srq), events_(std::move(events))
{
    event_sink_ = events_;
}

void Srq::notification(PVOID context, NTSTATUS status)
{
    static_cast<SrqEvents *>(context)->notifications.push(status);
}

Call Srq::modify(ULONG srq_depth, ULONG notify_threshold)
{
    check_open();
    Call call = Call::begin();
    void *context = call.context();
    NTSTATUS status = ndk_->Dispatch->NdkModifySrq(ndk_, srq_depth, notify_threshold,
                                                   Call::request_completion, context);
    call.returned(status, context);
    return call;
}

NTSTATUS Srq::receive(PVOID request_context, std::span<const NDK_SGE> sgl)
{
    check_open();
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
    check_open();
    address.length = sizeof address.storage;
    return ndk_->Dispatch->NdkGetLocalAddress(ndk_, address.get(), &address.length);
}

} // namespace ndk
