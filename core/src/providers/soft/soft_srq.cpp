// Shared receive queue (digest 1.6).
#include "soft_dispatch_entry.hpp"
#include "soft_transfer.hpp"

namespace ndk::soft {

// Disarms once fired (digest 1.6).
void srq_check_threshold(SoftSrq &srq)
{
    if (srq.threshold == 0 || srq.receives.size() >= srq.threshold)
        return;
    srq.threshold = 0;
    auto notify = srq.notify;
    auto context = srq.notify_context;
    deliver_event(srq, [notify, context] { notify(context, STATUS_SUCCESS); });
}

NTSTATUS create_srq(NDK_PD *ndk_pd, ULONG SrqDepth, ULONG MaxReceiveRequestSge,
                    ULONG NotifyThreshold, NDK_FN_SRQ_NOTIFICATION_CALLBACK SrqNotification,
                    PVOID SrqNotificationContext, GROUP_AFFINITY *Affinity,
                    NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext,
                    NDK_SRQ **ppNdkSrq)
{
    SoftPd *pd = SoftPd::from(ndk_pd);
    SoftAdapter &adapter = pd->adapter();
    NDK_ADAPTER_INFO info = adapter.info();
    if (SrqDepth == 0 || SrqDepth > info.MaxSrqDepth ||
        MaxReceiveRequestSge > info.MaxReceiveRequestSge)
        return STATUS_INVALID_PARAMETER; // digest 1.2: depth or SGE beyond the adapter's limit
    if (NotifyThreshold > SrqDepth || (NotifyThreshold > 0 && SrqNotification == nullptr) ||
        !affinity_valid(Affinity) || ppNdkSrq == nullptr)
        return STATUS_INVALID_PARAMETER;
    return adapter.create<SoftSrq>("NdkCreateSrq", CreateCompletion, RequestContext, ppNdkSrq,
                                   [&](NTSTATUS &) {
                                       auto srq = std::make_unique<SoftSrq>(adapter);
                                       srq->pd = pd;
                                       srq->depth = SrqDepth;
                                       srq->max_sge = MaxReceiveRequestSge;
                                       srq->threshold = NotifyThreshold;
                                       srq->notify = SrqNotification;
                                       srq->notify_context = SrqNotificationContext;
                                       srq->depend_on(*pd);
                                       return srq;
                                   });
}

namespace {

NTSTATUS modify_srq(NDK_SRQ *ndk_srq, ULONG SrqDepth, ULONG NotifyThreshold,
                    NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{
    SoftSrq *srq = SoftSrq::from(ndk_srq);
    SoftAdapter &adapter = srq->adapter();
    if (SrqDepth > adapter.info().MaxSrqDepth)
        return STATUS_INVALID_PARAMETER;
    {
        std::lock_guard lock(adapter.mu());
        ULONG depth = SrqDepth != 0 ? SrqDepth : srq->depth; // 0 keeps the depth
        if (SrqDepth != 0 && SrqDepth < srq->receives.size())
            return STATUS_BUFFER_OVERFLOW; // below the receives outstanding (digest 4.2)
        if (NotifyThreshold > depth || (NotifyThreshold > 0 && srq->notify == nullptr))
            return STATUS_INVALID_PARAMETER;
    }
    return adapter.request(srq, "NdkModifySrq", RequestCompletion, RequestContext,
                           [srq, SrqDepth, NotifyThreshold] {
                               std::lock_guard lock(srq->adapter().mu());
                               if (SrqDepth != 0) {
                                   if (SrqDepth < srq->receives.size())
                                       return STATUS_BUFFER_OVERFLOW;
                                   srq->depth = SrqDepth;
                               }
                               if (NotifyThreshold != 0) { // 0 keeps threshold and arming
                                   srq->threshold = NotifyThreshold;
                                   srq_check_threshold(*srq); // already below: fire now
                               }
                               return STATUS_SUCCESS;
                           });
}

NTSTATUS srq_receive(NDK_SRQ *ndk_srq, PVOID RequestContext, const NDK_SGE *pSgl, ULONG nSge)
{
    SoftSrq *srq = SoftSrq::from(ndk_srq);
    if (auto failure = srq->adapter().knobs().take_failure("NdkSrqReceive"))
        return failure->status;
    if (nSge > srq->max_sge)
        return STATUS_DATA_OVERRUN; // too many SGEs (ND2 SRQ::Receive, digest 4.2)
    if (nSge > 0 && pSgl == nullptr)
        return STATUS_INVALID_PARAMETER;
    std::lock_guard lock(srq->adapter().mu());
    if (srq->receives.size() >= srq->depth)
        return STATUS_NO_MORE_ENTRIES; // queue full (ND2 SRQ::Receive, digest 4.2)
    srq->receives.push_back(ReceiveRequest{RequestContext, {pSgl, pSgl + nSge}});
    for (SoftQp *qp : srq->qps)
        receive_posted(*qp); // a send waiting at a peer of any of its QPs may proceed
    return STATUS_SUCCESS;
}

} // namespace

const NDK_SRQ_DISPATCH kSrqDispatch = {
    entry<SoftSrq, "NdkCloseSrq", close_object<SoftSrq>>,
    entry<SoftSrq, "NdkQueryExtension", query_extension_not_supported>,
    entry<SoftSrq, "NdkModifySrq", modify_srq>,
    entry<SoftSrq, "NdkSrqReceive", srq_receive>,
};

} // namespace ndk::soft
