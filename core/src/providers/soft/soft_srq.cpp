// Shared receive queue (digest 1.6).
#include "soft_transfer.hpp"
#include "providers/kit/kit_create_checks.hpp"
#include "providers/kit/kit_post_checks.hpp"

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
                    NDK_FN_CREATE_COMPLETION, PVOID, NDK_SRQ **ppNdkSrq)
{
    SoftPd *pd = SoftPd::from(ndk_pd);
    SoftAdapter &adapter = pd->adapter();
    if (NTSTATUS status =
            kit::check_create_srq(adapter.info(), SrqDepth, MaxReceiveRequestSge, NotifyThreshold,
                                  SrqNotification, Affinity, ppNdkSrq);
        status != STATUS_SUCCESS)
        return status;
    return adapter.create<SoftSrq>(ppNdkSrq, [&](NTSTATUS &) {
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
                    NDK_FN_REQUEST_COMPLETION, PVOID)
{
    SoftSrq *srq = SoftSrq::from(ndk_srq);
    SoftAdapter &adapter = srq->adapter();
    {
        std::lock_guard lock(adapter.mu());
        if (NTSTATUS status = kit::check_modify_srq(adapter.info(), srq->depth, SrqDepth,
                                                    NotifyThreshold, srq->notify);
            status != STATUS_SUCCESS)
            return status;
        if (SrqDepth != 0 && SrqDepth < srq->receives.size())
            return STATUS_BUFFER_OVERFLOW; // below the receives outstanding (digest 4.2)
    }
    return adapter.request([srq, SrqDepth, NotifyThreshold] {
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
    std::lock_guard lock(srq->adapter().mu());
    uint64_t total = 0;
    if (NTSTATUS status = kit::check_receive_post(
            {false, true, srq->receives.size(), srq->depth}, pSgl, nSge,
            {srq->max_sge, srq->adapter().knobs().data_path().max_transfer(), 0}, &total);
        status != STATUS_SUCCESS)
        return status;
    ReceiveRequest &rr = srq->receives.next_slot();
    rr.context = RequestContext;
    rr.assign_sgl(pSgl, nSge);
    srq->receives.commit();
    for (SoftQp *qp : srq->qps)
        receive_posted(*qp); // a send waiting at a peer of any of its QPs may proceed
    return STATUS_SUCCESS;
}

} // namespace

const NDK_SRQ_DISPATCH kSrqDispatch = {
    .NdkCloseSrq = close_object<SoftSrq>,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkModifySrq = modify_srq,
    .NdkSrqReceive = srq_receive,
};

} // namespace ndk::soft
