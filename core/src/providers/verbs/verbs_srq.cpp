// Shared receive queue (digest 1.6) over an ibv_srq.  The NDK threshold is the verbs SRQ
// limit: the device raises IBV_EVENT_SRQ_LIMIT_REACHED when fewer receives than the limit
// remain, and disarms; NdkModifySrq with a threshold re-arms.  A threshold that is already
// crossed when it is set notifies at once (digest 1.6), which verbs would not do by itself.
#include "verbs_objects.hpp"
#include "providers/kit/kit_create_checks.hpp"
#include "providers/kit/kit_post_checks.hpp"

#include <cerrno>

namespace ndk::verbs {

VSrq::VSrq(VerbsAdapter &adapter, VPd &pd) : NdkObject(adapter, kType, &kSrqDispatch), pd(pd) {}

void VSrq::destroy_resources()
{
    if (srq != nullptr)
        ibv_destroy_srq(srq);
    srq = nullptr;
}

void VSrq::on_limit()
{
    {
        std::lock_guard lock(adapter().mu());
        if (threshold == 0)
            return;
        threshold = 0; // disarmed until the next NdkModifySrq with a threshold
    }
    notify(notify_context, STATUS_SUCCESS);
}

namespace {

// Arm `srq` with `threshold` (lock held): the device's limit, or at once if already crossed.
NTSTATUS arm(VSrq &srq, ULONG threshold)
{
    ibv_srq_attr attr{};
    attr.srq_limit = threshold;
    if (ibv_modify_srq(srq.srq, &attr, IBV_SRQ_LIMIT) != 0)
        return errno_status(errno);
    srq.threshold = threshold;
    if (srq.receives.pending.size() < threshold) {
        VSrq *target = &srq;
        srq.adapter().deliver([target] {
            bool alive;
            {
                std::lock_guard lock(target->adapter().mu());
                alive = target->adapter().exists(target) && target->threshold != 0;
                if (alive)
                    target->threshold = 0;
            }
            if (alive)
                target->notify(target->notify_context, STATUS_SUCCESS);
        });
    }
    return STATUS_SUCCESS;
}

} // namespace

NTSTATUS create_srq(NDK_PD *ndk_pd, ULONG SrqDepth, ULONG MaxReceiveRequestSge,
                    ULONG NotifyThreshold, NDK_FN_SRQ_NOTIFICATION_CALLBACK SrqNotification,
                    PVOID SrqNotificationContext, GROUP_AFFINITY *Affinity,
                    NDK_FN_CREATE_COMPLETION, PVOID, NDK_SRQ **ppNdkSrq)
{
    VPd *pd = VPd::from(ndk_pd);
    VerbsAdapter &adapter = pd->adapter();
    if (NTSTATUS status =
            kit::check_create_srq(adapter.info(), SrqDepth, MaxReceiveRequestSge, NotifyThreshold,
                                  SrqNotification, Affinity, ppNdkSrq);
        status != STATUS_SUCCESS)
        return status;
    auto *srq = new VSrq(adapter, *pd);
    srq->depth = SrqDepth;
    srq->max_sge = MaxReceiveRequestSge;
    srq->notify = SrqNotification;
    srq->notify_context = SrqNotificationContext;
    ibv_srq_init_attr init{};
    init.srq_context = static_cast<Object *>(srq);
    init.attr.max_wr = SrqDepth;
    init.attr.max_sge = std::max<ULONG>(MaxReceiveRequestSge, 1);
    srq->srq = ibv_create_srq(pd->pd, &init);
    if (srq->srq == nullptr) {
        NTSTATUS status = errno_status(errno);
        delete srq;
        return status;
    }
    {
        std::lock_guard lock(adapter.mu());
        srq->depend_on(*pd);
    }
    NDK_SRQ *out = nullptr;
    adapter.created(srq, &out);
    if (NotifyThreshold > 0) { // creation takes the threshold like NdkModifySrq
        std::lock_guard lock(adapter.mu());
        arm(*srq, NotifyThreshold);
    }
    *ppNdkSrq = out;
    return STATUS_SUCCESS;
}

namespace {

NTSTATUS modify_srq(NDK_SRQ *ndk_srq, ULONG SrqDepth, ULONG NotifyThreshold,
                    NDK_FN_REQUEST_COMPLETION, PVOID)
{
    VSrq *srq = VSrq::from(ndk_srq);
    VerbsAdapter &adapter = srq->adapter();
    std::lock_guard lock(adapter.mu());
    if (NTSTATUS status = kit::check_modify_srq(adapter.info(), srq->depth, SrqDepth,
                                                NotifyThreshold, srq->notify);
        status != STATUS_SUCCESS)
        return status;
    if (SrqDepth != 0 && SrqDepth != srq->depth) {
        if (SrqDepth < srq->receives.pending.size())
            return STATUS_BUFFER_OVERFLOW; // below the receives queued (SRQ-DEPTH)
        ibv_srq_attr attr{};
        attr.max_wr = SrqDepth;
        if (ibv_modify_srq(srq->srq, &attr, IBV_SRQ_MAX_WR) != 0)
            return errno_status(errno);
        srq->depth = SrqDepth;
    }
    if (NotifyThreshold > 0)
        return arm(*srq, NotifyThreshold);
    return STATUS_SUCCESS;
}

NTSTATUS srq_receive(NDK_SRQ *ndk_srq, PVOID RequestContext, const NDK_SGE *pSgl, ULONG nSge)
{
    VSrq *srq = VSrq::from(ndk_srq);
    std::lock_guard lock(srq->adapter().mu());
    uint64_t total = 0;
    if (NTSTATUS status = kit::check_receive_post(
            {false, true, srq->receives.pending.size(), srq->depth}, pSgl, nSge,
            {srq->max_sge, srq->adapter().info().MaxTransferLength, 0}, &total);
        status != STATUS_SUCCESS)
        return status;
    std::vector<ibv_sge> sges(nSge);
    for (ULONG i = 0; i < nSge; ++i)
        sges[i] = {reinterpret_cast<uint64_t>(pSgl[i].VirtualAddress), pSgl[i].Length,
                   pSgl[i].MemoryRegionToken};
    Request request;
    request.context = RequestContext;
    request.type = NdkOperationTypeReceive;
    ibv_recv_wr wr{};
    wr.wr_id = srq->receives.add(request);
    wr.sg_list = sges.data();
    wr.num_sge = static_cast<int>(nSge);
    ibv_recv_wr *bad = nullptr;
    if (int error = ibv_post_srq_recv(srq->srq, &wr, &bad); error != 0) {
        srq->receives.pending.erase(wr.wr_id);
        return errno_status(error);
    }
    return STATUS_SUCCESS;
}

NTSTATUS close_srq(NDK_OBJECT_HEADER *header, NDK_FN_CLOSE_COMPLETION completion, PVOID context)
{
    return VSrq::from(reinterpret_cast<NDK_SRQ *>(header))->close(completion, context);
}

} // namespace

const NDK_SRQ_DISPATCH kSrqDispatch = {
    .NdkCloseSrq = close_srq,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkModifySrq = modify_srq,
    .NdkSrqReceive = srq_receive,
};

} // namespace ndk::verbs
