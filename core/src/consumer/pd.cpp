#include "ndk/objects.hpp"

#include "arguments.hpp"
#include "wrap.hpp"

namespace ndk {

Pd::Pd(std::shared_ptr<Adapter> adapter, NDK_PD *pd)
    : Object(std::move(adapter), &pd->Header, pd->Dispatch->NdkClosePd), ndk_(pd)
{
}

Call Pd::create_mr(bool fast_register)
{
    auto in_call = enter();
    auto self = std::static_pointer_cast<Pd>(shared_from_this());
    Call call = Call::begin(wrapper<Mr>(adapter(), self, fast_register));
    NDK_MR *mr = nullptr;
    void *context = call.context(*adapter());
    NTSTATUS status = ndk_->Dispatch->NdkCreateMr(ndk_, fast_register ? TRUE : FALSE,
                                                  Call::create_completion, context, &mr);
    call.returned(status, context, mr ? &mr->Header : nullptr);
    return call;
}

Call Pd::create_mw()
{
    auto in_call = enter();
    auto self = std::static_pointer_cast<Pd>(shared_from_this());
    Call call = Call::begin(wrapper<Mw>(adapter(), self));
    NDK_MW *mw = nullptr;
    void *context = call.context(*adapter());
    NTSTATUS status = ndk_->Dispatch->NdkCreateMw(ndk_, Call::create_completion, context, &mw);
    call.returned(status, context, mw ? &mw->Header : nullptr);
    return call;
}

Call Pd::create_srq(ULONG srq_depth, ULONG max_receive_request_sge, ULONG notify_threshold,
                    const GROUP_AFFINITY *affinity)
{
    auto in_call = enter();
    auto self = std::static_pointer_cast<Pd>(shared_from_this());
    auto events = std::make_shared<SrqEvents>();
    void *events_context = adapter()->event_context(events);
    Call call = Call::begin(wrapper<Srq>(adapter(), self, events, events_context));
    adapter()->release_on_failure(call, events_context);
    GROUP_AFFINITY copy{};
    if (affinity)
        copy = *affinity;
    NDK_SRQ *srq = nullptr;
    void *context = call.context(*adapter());
    NTSTATUS status = ndk_->Dispatch->NdkCreateSrq(
        ndk_, srq_depth, max_receive_request_sge, notify_threshold, Srq::notification,
        events_context, affinity ? &copy : nullptr, Call::create_completion, context, &srq);
    call.returned(status, context, srq ? &srq->Header : nullptr);
    return call;
}

Call Pd::create_qp(const std::shared_ptr<Cq> &receive_cq, const std::shared_ptr<Cq> &initiator_cq,
                   PVOID qp_context, ULONG receive_queue_depth, ULONG initiator_queue_depth,
                   ULONG max_receive_request_sge, ULONG max_initiator_request_sge,
                   ULONG inline_data_size)
{
    auto in_call = enter();
    auto in_arguments = enter_arguments({receive_cq.get(), initiator_cq.get()});
    std::vector<std::shared_ptr<Object>> holds{shared_from_this(), receive_cq, initiator_cq};
    Call call = Call::begin(wrapper<Qp>(adapter(), holds));
    NDK_QP *qp = nullptr;
    void *context = call.context(*adapter());
    NTSTATUS status = ndk_->Dispatch->NdkCreateQp(
        ndk_, receive_cq ? receive_cq->ndk() : nullptr,
        initiator_cq ? initiator_cq->ndk() : nullptr, qp_context, receive_queue_depth,
        initiator_queue_depth, max_receive_request_sge, max_initiator_request_sge,
        inline_data_size, Call::create_completion, context, &qp);
    call.returned(status, context, qp ? &qp->Header : nullptr);
    return call;
}

Call Pd::create_qp_with_srq(const std::shared_ptr<Cq> &receive_cq,
                            const std::shared_ptr<Cq> &initiator_cq,
                            const std::shared_ptr<Srq> &srq, PVOID qp_context,
                            ULONG initiator_queue_depth, ULONG max_initiator_request_sge,
                            ULONG inline_data_size)
{
    auto in_call = enter();
    auto in_arguments = enter_arguments({receive_cq.get(), initiator_cq.get(), srq.get()});
    std::vector<std::shared_ptr<Object>> holds{shared_from_this(), receive_cq, initiator_cq, srq};
    Call call = Call::begin(wrapper<Qp>(adapter(), holds));
    NDK_QP *qp = nullptr;
    void *context = call.context(*adapter());
    NTSTATUS status = ndk_->Dispatch->NdkCreateQpWithSrq(
        ndk_, receive_cq ? receive_cq->ndk() : nullptr,
        initiator_cq ? initiator_cq->ndk() : nullptr, srq ? srq->ndk() : nullptr, qp_context,
        initiator_queue_depth, max_initiator_request_sge, inline_data_size,
        Call::create_completion, context, &qp);
    call.returned(status, context, qp ? &qp->Header : nullptr);
    return call;
}

UINT32 Pd::get_privileged_memory_region_token()
{
    auto in_call = enter();
    UINT32 token = 0;
    ndk_->Dispatch->NdkGetPrivilegedMemoryRegionToken(ndk_, &token);
    return token;
}

} // namespace ndk
