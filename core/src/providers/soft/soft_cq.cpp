// Completion queue (digest 1.3).
#include "providers/kit/kit_cq_results.hpp"
#include "soft_objects.hpp"
#include "soft_transport.hpp"
#include "providers/kit/kit_create_checks.hpp"
#include "providers/kit/kit_notification_cpus.hpp"

#include <algorithm>
#include <atomic>
#include <unistd.h>

namespace ndk::soft {

NTSTATUS create_cq(NDK_ADAPTER *ndk_adapter, ULONG CqDepth,
                   NDK_FN_CQ_NOTIFICATION_CALLBACK CqNotification, PVOID CqNotificationContext,
                   GROUP_AFFINITY *Affinity, NDK_FN_CREATE_COMPLETION, PVOID, NDK_CQ **ppNdkCq)
{
    SoftAdapter *adapter = SoftAdapter::from(ndk_adapter);
    if (NTSTATUS status = kit::check_create_cq(adapter->info(), CqDepth, CqNotification, Affinity,
                                               ppNdkCq);
        status != STATUS_SUCCESS)
        return status;
    return adapter->create<SoftCq>(ppNdkCq, [&](NTSTATUS &) {
        auto cq = std::make_unique<SoftCq>(*adapter);
        cq->depth = CqDepth;
        cq->notify = CqNotification;
        cq->notify_context = CqNotificationContext;
        cq->notify_cpus = kit::NotificationCpus(Affinity);
        return cq;
    });
}

namespace {

void satisfy_arm(SoftCq &cq, bool moderation_expired = false);

// Call the notification callback from the engine (digest 3.2), on a processor of the CQ's
// affinity when it asked for one (CQ-AFFINITY).  Lock held.
void notify_consumer(SoftCq &cq, NTSTATUS status)
{
    auto notify = cq.notify;
    auto context = cq.notify_context;
    Misbehave mode = cq.adapter().misbehave(); // concurrent_cq_callbacks
    deliver_event(cq, [notify, context, status, mode, cpus = cq.notify_cpus] {
        kit::OnNotificationCpus on(cpus);
        call_cq_notification(mode, notify, context, status);
    });
}

// Interrupt moderation (digest 1.3): interval 0 is none; a count within the depth lets the
// count control; an interval other than MAXULONG lets time control (from the first completion
// since the last notification).
bool count_controls(const SoftCq &cq)
{
    return cq.moderation_interval != 0 && cq.moderation_count != 0 &&
           cq.moderation_count != MAXULONG && cq.moderation_count <= cq.depth;
}
bool interval_controls(const SoftCq &cq)
{
    return cq.moderation_interval != 0 && cq.moderation_interval != MAXULONG;
}

// True when moderation holds the notification back for now.
bool moderated(SoftCq &cq, bool expired)
{
    if (cq.moderation_interval == 0 || expired)
        return false;
    if (count_controls(cq) && cq.arm.arrived_count() >= cq.moderation_count)
        return false;
    if (interval_controls(cq) && cq.moderation_timer == 0) {
        SoftAdapter &adapter = cq.adapter();
        auto interval = std::chrono::microseconds(cq.moderation_interval);
        // The timer outlives its CQ when the CQ closes first; another object may then live at
        // the CQ's address (exists() alone would take it for the CQ and call through its
        // memory).  The serial, unique across CQs, says whether the CQ there is still ours.
        static std::atomic<uint64_t> serials{0};
        uint64_t serial = ++serials;
        cq.moderation_serial = serial;
        cq.moderation_timer = adapter.engine().post_after(interval, [&adapter, cq = &cq, serial] {
            std::lock_guard lock(adapter.mu());
            const SoftObject *object = cq;
            if (adapter.exists(object) && object->type() == NdkObjectTypeCq &&
                cq->moderation_serial == serial && cq->moderation_timer != 0) {
                cq->moderation_timer = 0;
                satisfy_arm(*cq, true);
            }
        });
    }
    return true;
}

// Notify the consumer if the arm is owed a notification now (kit::CqArm), unless interrupt
// moderation holds it back.  Lock held.
void satisfy_arm(SoftCq &cq, bool moderation_expired)
{
    cq.arm.catch_up(cq.results.pushed()); // the ring counts the arrivals (post_result)
    auto status = cq.arm.take(cq.error, [&] { return moderated(cq, moderation_expired); });
    if (!status)
        return;
    if (*status == STATUS_SUCCESS && cq.moderation_timer != 0) {
        cq.adapter().engine().cancel(cq.moderation_timer);
        cq.moderation_timer = 0;
    }
    notify_consumer(cq, *status);
}

} // namespace

void fail_cq(SoftCq &cq, NTSTATUS status)
{
    if (cq.error != STATUS_SUCCESS)
        return;
    cq.error = status;
    cq.results.fail();
    Miniport::count(cq.adapter().miniport().counters.CQError);
    satisfy_arm(cq);
}

void result_posted(SoftCq &cq, NTSTATUS status, bool solicited)
{
    // The ring's count of pushes is the arm's count of arrivals (kit::CqArm::catch_up): with
    // no arm pending, a completion writes nothing of the arm, whose line would otherwise cross
    // to this thread from the CQ's other producer (the peer's thread) on every message.
    if (solicited || status != STATUS_SUCCESS) // errors satisfy SOLICITED
        cq.arm.solicited_arrived();
    if (cq.arm.armed())
        satisfy_arm(cq); // an arm pending: what arrived since the last callback may satisfy it
    else if (cq.adapter().misbehave() == Misbehave::NotifyUnarmed)
        notify_consumer(cq, STATUS_SUCCESS); // broken on purpose: no arm asked for it
}

namespace {

NTSTATUS resize_cq(NDK_CQ *ndk_cq, ULONG CqDepth, NDK_FN_REQUEST_COMPLETION, PVOID)
{
    SoftCq *cq = SoftCq::from(ndk_cq);
    SoftAdapter &adapter = cq->adapter();
    if (NTSTATUS status = kit::check_resize_cq(adapter.info(), CqDepth); status != STATUS_SUCCESS)
        return status;
    {
        std::lock_guard lock(adapter.mu());
        if (!cq->results.fits(CqDepth))
            return STATUS_BUFFER_OVERFLOW; // smaller than what it holds (digest 4.2, CQ::Resize)
    }
    return adapter.request([cq, CqDepth] {
        std::lock_guard lock(cq->adapter().mu());
        if (!cq->results.fits(CqDepth))
            return STATUS_BUFFER_OVERFLOW;
        cq->depth = CqDepth;
        return STATUS_SUCCESS;
    });
}

VOID arm_cq(NDK_CQ *ndk_cq, ULONG Type)
{
    SoftCq *cq = SoftCq::from(ndk_cq);
    std::lock_guard lock(cq->adapter().mu());
    if (!cq->arm.arm(Type)) // a re-arm before the arm is satisfied merges (kit::CqArm)
        return;
    satisfy_arm(*cq); // completions that arrived since the last callback satisfy it at once
}

template <class Result>
ULONG get_results(NDK_CQ *ndk_cq, Result Results[], ULONG nResults)
{
    SoftCq *cq = SoftCq::from(ndk_cq);
    if (!kit::results_wanted(Results, nResults))
        return 0;
    // The ring's lock only, never the adapter's: the poller does not wait for a transfer.
    ULONG taken = cq->results.pop(Results, nResults, kit::result_as<Result>);
    // Found empty: the transport may make progress on this thread (soft_transport.hpp).  The
    // in-process fabric has none to make (its transfers run inside the posts): a spinning
    // consumer's empty poll stays a few loads.
    if (Transport *transport = cq->adapter().own_transport();
        taken == 0 && transport != nullptr && transport->poll_from_consumer())
        taken = cq->results.pop(Results, nResults, kit::result_as<Result>);
    return taken;
}

ULONG get_cq_results(NDK_CQ *cq, NDK_RESULT Results[], ULONG nResults)
{
    return get_results(cq, Results, nResults);
}

ULONG get_cq_results_ex(NDK_CQ *cq, NDK_RESULT_EX Results[], ULONG nResults)
{
    return get_results(cq, Results, nResults);
}

NTSTATUS control_cq_interrupt_moderation(NDK_CQ *ndk_cq, ULONG ModerationInterval,
                                         ULONG ModerationCount)
{
    SoftCq *cq = SoftCq::from(ndk_cq);
    SoftAdapter &adapter = cq->adapter();
    // Inline only: this function never pends.
    // NOT_SUPPORTED is required without the flag and forbidden with it (digest 1.3).
    if (!(adapter.info().AdapterFlags & NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED))
        return STATUS_NOT_SUPPORTED;
    std::lock_guard lock(adapter.mu());
    if (ModerationInterval == MAXULONG &&
        (ModerationCount == MAXULONG || ModerationCount > cq->depth))
        return STATUS_INVALID_PARAMETER_MIX; // neither interval nor count would control
    cq->moderation_interval = ModerationInterval;
    cq->moderation_count = ModerationCount;
    // "The latest setting must take effect as soon as possible" (digest 1.3): a notification
    // the old setting held back is re-judged now.
    if (cq->moderation_timer != 0) {
        adapter.engine().cancel(cq->moderation_timer);
        cq->moderation_timer = 0;
    }
    satisfy_arm(*cq);
    return STATUS_SUCCESS;
}

} // namespace

const NDK_CQ_DISPATCH kCqDispatch = {
    .NdkCloseCq = close_object<SoftCq>,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkResizeCq = resize_cq,
    .NdkArmCq = arm_cq,
    .NdkGetCqResults = get_cq_results,
    .NdkControlCqInterruptModeration = control_cq_interrupt_moderation,
    .NdkGetCqResultsEx = get_cq_results_ex,
};

} // namespace ndk::soft
