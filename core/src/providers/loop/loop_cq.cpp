// Completion queue (digest 1.3): results in a deque, the arm in kit::CqArm (digest 3.2), an
// overrun when a completion finds the CQ full.  No resize, no interrupt moderation: the
// adapter does not flag them, so both are STATUS_NOT_SUPPORTED as required.
#include "loop_objects.hpp"
#include "providers/kit/kit_cq_results.hpp"

#include <type_traits>

namespace ndk::loop {

LCq::LCq(LoopAdapter &a) : NdkObject(a, NdkObjectTypeCq, &kCqDispatch) {}

void LCq::add(const NDK_RESULT_EX &result, bool solicited)
{
    if (error != STATUS_SUCCESS)
        return; // no further completions after a CQ error (digest 1.3)
    if (results.size() >= depth) {
        error = STATUS_BUFFER_OVERFLOW; // the overrun: the CQ and its QPs are unusable
        results.clear();
        adapter().miniport().counters.CQError++;
    } else {
        results.push_back(result);
        arm.arrived(solicited || result.Status != STATUS_SUCCESS); // errors match SOLICITED
    }
    notify_if_owed();
}

void LCq::notify_if_owed()
{
    auto status = arm.take(error); // once per arm (kit::CqArm)
    if (!status)
        return;
    LoopAdapter &a = adapter();
    deliver(a, [&a, cq = this, status = *status] {
        {
            std::lock_guard lock(fabric_mu());
            if (!a.exists(cq))
                return;
        }
        kit::OnNotificationCpus on(cq->notify_cpus); // a processor the CQ prefers
        cq->notify(cq->notify_context, status); // the CQ is freed on this thread only
    });
}

NTSTATUS create_cq(NDK_ADAPTER *ndk_adapter, ULONG CqDepth,
                   NDK_FN_CQ_NOTIFICATION_CALLBACK CqNotification, PVOID CqNotificationContext,
                   GROUP_AFFINITY *Affinity, NDK_FN_CREATE_COMPLETION, PVOID, NDK_CQ **ppNdkCq)
{
    LoopAdapter *adapter = LoopAdapter::from(ndk_adapter);
    if (NTSTATUS s = kit::check_create_cq(adapter->info(), CqDepth, CqNotification, Affinity,
                                          ppNdkCq);
        s != STATUS_SUCCESS)
        return s;
    auto *cq = new LCq(*adapter);
    cq->depth = CqDepth;
    cq->notify = CqNotification;
    cq->notify_context = CqNotificationContext;
    cq->notify_cpus = kit::NotificationCpus(Affinity);
    return adapter->created(cq, ppNdkCq);
}

namespace {

LCq *from(NDK_CQ *cq) { return static_cast<LCq *>(cq); }

NTSTATUS resize_cq(NDK_CQ *cq, ULONG CqDepth, NDK_FN_REQUEST_COMPLETION, PVOID)
{
    return kit::check_resize_cq(from(cq)->adapter().info(), CqDepth); // NOT_SUPPORTED here
}

VOID arm_cq(NDK_CQ *ndk_cq, ULONG Type)
{
    LCq *cq = from(ndk_cq);
    std::lock_guard lock(fabric_mu());
    if (cq->arm.arm(Type)) // a re-arm before the arm is satisfied merges (kit::CqArm)
        cq->notify_if_owed();
}

template <class Result>
ULONG get_results(NDK_CQ *ndk_cq, Result Results[], ULONG nResults)
{
    LCq *cq = from(ndk_cq);
    std::lock_guard lock(fabric_mu());
    ULONG n = 0;
    for (; kit::results_wanted(Results, nResults) && n < nResults && !cq->results.empty(); ++n) {
        Results[n] = kit::result_as<Result>(cq->results.front());
        cq->results.pop_front();
    }
    return n;
}

ULONG get_cq_results(NDK_CQ *cq, NDK_RESULT Results[], ULONG n) { return get_results(cq, Results, n); }

ULONG get_cq_results_ex(NDK_CQ *cq, NDK_RESULT_EX Results[], ULONG n)
{
    return get_results(cq, Results, n);
}

NTSTATUS control_moderation(NDK_CQ *, ULONG, ULONG)
{
    return STATUS_NOT_SUPPORTED; // required without NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED
}

} // namespace

const NDK_CQ_DISPATCH kCqDispatch = {
    .NdkCloseCq = close_object<LCq>,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkResizeCq = resize_cq,
    .NdkArmCq = arm_cq,
    .NdkGetCqResults = get_cq_results,
    .NdkControlCqInterruptModeration = control_moderation,
    .NdkGetCqResultsEx = get_cq_results_ex,
};

} // namespace ndk::loop
