// Completion queue (digest 1.3) over an ibv_cq on the adapter's completion channel.
//
// Arm rules (digest 3.2) on verbs: ANY and ERRORS arm with ibv_req_notify_cq(solicited_only=0),
// SOLICITED with solicited_only=1 (the device then signals solicited and error completions
// only, which is exactly NDK's SOLICITED).  verbs only signals completions that arrive after
// the request, so an arm also polls: completions found already waiting satisfy it at once
// (kept in `polled` for the next NdkGetCqResults).
//
// Overrun (digest 1.3, CQ-OVERRUN): rxe and siw size a CQ above the depth asked for, so the
// device rarely overruns (when it does, IBV_EVENT_CQ_ERR).  The provider counts instead: while
// armed, every completion event moves what the device holds into `polled`, and more than
// CqDepth completions waiting there is the overrun; an unarmed CQ is judged at its next arm.
#include "verbs_objects.hpp"
#include "providers/kit/kit_cq_results.hpp"
#include "providers/kit/kit_create_checks.hpp"

#include <algorithm>
#include <unistd.h>

namespace ndk::verbs {

VCq::VCq(VerbsAdapter &adapter) : NdkObject(adapter, kType, &kCqDispatch) {}

void VCq::destroy_resources()
{
    if (cq != nullptr)
        ibv_destroy_cq(cq);
    cq = nullptr;
}

NTSTATUS create_cq(NDK_ADAPTER *ndk_adapter, ULONG CqDepth,
                   NDK_FN_CQ_NOTIFICATION_CALLBACK CqNotification, PVOID CqNotificationContext,
                   GROUP_AFFINITY *Affinity, NDK_FN_CREATE_COMPLETION, PVOID, NDK_CQ **ppNdkCq)
{
    VerbsAdapter *adapter = VerbsAdapter::from(ndk_adapter);
    if (NTSTATUS status = kit::check_create_cq(adapter->info(), CqDepth, CqNotification, Affinity,
                                               ppNdkCq);
        status != STATUS_SUCCESS)
        return status;
    auto *cq = new VCq(*adapter);
    cq->depth = CqDepth;
    cq->notify = CqNotification;
    cq->notify_context = CqNotificationContext;
    cq->notify_cpus = kit::NotificationCpus(Affinity);
    int vector = 0;
    if (Affinity != nullptr) // the completion vector nearest the first CPU asked for
        vector = __builtin_ctzll(Affinity->Mask) % std::max(1, adapter->context()->num_comp_vectors);
    cq->cq = ibv_create_cq(adapter->context(), static_cast<int>(CqDepth),
                           static_cast<Object *>(cq), adapter->channel(), vector);
    if (cq->cq == nullptr) {
        NTSTATUS status = errno_status(errno);
        delete cq;
        return status;
    }
    return adapter->created(cq, ppNdkCq);
}

namespace {

// Call the consumer's callback for a satisfied arm (engine thread, no lock), on a processor
// of the CQ's affinity (the completion vector above only steers the device's interrupt).
void notify_now(VCq &cq, NTSTATUS status)
{
    kit::OnNotificationCpus on(cq.notify_cpus);
    cq.notify(cq.notify_context, status);
}

// Satisfy the arm if what arrived since the last callback matches it.  Lock held.  Returns
// the status to notify with, or STATUS_PENDING for none.
NTSTATUS take_arm(VCq &cq)
{
    return cq.arm.take(cq.error).value_or(STATUS_PENDING); // kit::CqArm
}

// Call the callback for a satisfied arm from the engine: never inside the consumer's own
// call (arm, post), and not once the CQ is gone.
void notify_later(VCq &cq, NTSTATUS status)
{
    VerbsAdapter &adapter = cq.adapter();
    adapter.deliver([cq = &cq, status] {
        bool alive;
        {
            std::lock_guard lock(cq->adapter().mu());
            alive = cq->adapter().exists(cq);
        }
        if (alive)
            notify_now(*cq, status);
    });
}

} // namespace

void VCq::add_local(const NDK_RESULT_EX &result)
{
    if (error != STATUS_SUCCESS)
        return; // no further completions after a CQ error (digest 1.3)
    polled.push_back(result);
    arm.arrived(result.Status != STATUS_SUCCESS); // errors always match SOLICITED
    if (polled.size() > depth)
        fail(STATUS_BUFFER_OVERFLOW);
    if (NTSTATUS status = take_arm(*this); status != STATUS_PENDING)
        notify_later(*this, status);
}

void VCq::fail(NTSTATUS status)
{
    if (error != STATUS_SUCCESS)
        return;
    error = status;
    polled.clear(); // no further completions after a CQ error (digest 1.3)
    std::lock_guard counters(adapter().miniport().mu);
    adapter().miniport().counters.CQError++;
}

void VCq::request_events()
{
    bool solicited = arm.armed() && arm.type() == NDK_CQ_NOTIFY_SOLICITED;
    if (ibv_req_notify_cq(cq, solicited) == 0 && !solicited)
        any_requested = true;
}

void VCq::drain_device()
{
    while (error == STATUS_SUCCESS) {
        size_t before = polled.size();
        if (!poll_device(*this, polled))
            break;
        for (size_t i = before; i < polled.size(); ++i)
            arm.arrived(polled[i].Status != STATUS_SUCCESS); // errors always match SOLICITED
    }
    if (polled.size() > depth)
        fail(STATUS_BUFFER_OVERFLOW); // more completions than CqDepth waiting: the overrun
}

void VCq::on_event()
{
    NTSTATUS status;
    {
        std::lock_guard lock(adapter().mu());
        // The device signalled what was requested: any completion, or (solicited_only) a
        // solicited or an error one.  An ERRORS arm merged into SOLICITED leaves its "any"
        // request with the device, and that event says nothing about solicitation.
        bool filtered = !any_requested;
        any_requested = false;
        // With a filtered request the event itself stands for "a completion that satisfies
        // SOLICITED".
        arm.arrived(arm.armed() && arm.type() == NDK_CQ_NOTIFY_SOLICITED && filtered);
        drain_device();
        status = take_arm(*this);
        if (arm.armed() && error == STATUS_SUCCESS) { // still armed: keep the events coming
            request_events();
            // The device signals only completions that arrive after the request: those that
            // arrived between the drain above and the request would wait unseen, so poll
            // once more (a third send that overran the CQ went unjudged that way).
            drain_device();
            status = take_arm(*this);
        }
    }
    if (status != STATUS_PENDING)
        notify_now(*this, status);
}

void VCq::on_error(NTSTATUS status)
{
    NTSTATUS notify_status;
    {
        std::lock_guard lock(adapter().mu());
        fail(status);
        notify_status = take_arm(*this);
    }
    if (notify_status != STATUS_PENDING)
        notify_now(*this, notify_status);
}

namespace {

NTSTATUS resize_cq(NDK_CQ *ndk_cq, ULONG CqDepth, NDK_FN_REQUEST_COMPLETION, PVOID)
{
    VCq *cq = VCq::from(ndk_cq);
    if (NTSTATUS status = kit::check_resize_cq(cq->adapter().info(), CqDepth);
        status != STATUS_SUCCESS)
        return status;
    std::lock_guard lock(cq->adapter().mu());
    // What the CQ holds is what was moved off the device plus what the device still queues:
    // move it all first, so the two are not judged apart (2 moved + 1 queued passed a resize
    // to 2 when each was compared alone).
    cq->drain_device();
    if (CqDepth < cq->polled.size())
        return STATUS_BUFFER_OVERFLOW;
    if (ibv_resize_cq(cq->cq, static_cast<int>(CqDepth)) != 0)
        return errno == EINVAL ? STATUS_BUFFER_OVERFLOW : errno_status(errno);
    cq->depth = CqDepth;
    return STATUS_SUCCESS;
}

VOID arm_cq(NDK_CQ *ndk_cq, ULONG Type)
{
    VCq *cq = VCq::from(ndk_cq);
    VerbsAdapter &adapter = cq->adapter();
    NTSTATUS status;
    {
        std::lock_guard lock(adapter.mu());
        if (!cq->arm.arm(Type)) // a re-arm before the arm is satisfied merges (kit::CqArm)
            return;
        if (cq->error == STATUS_SUCCESS) {
            cq->request_events();
            // Completions already waiting would not be signalled: take them now (and judge
            // an overrun that happened while unarmed).
            cq->drain_device();
        }
        status = take_arm(*cq);
    }
    if (status != STATUS_PENDING)
        notify_later(*cq, status);
}

template <class Result>
ULONG get_results(NDK_CQ *ndk_cq, Result Results[], ULONG nResults)
{
    VCq *cq = VCq::from(ndk_cq);
    if (!kit::results_wanted(Results, nResults))
        return 0;
    std::lock_guard lock(cq->adapter().mu());
    if (cq->error != STATUS_SUCCESS)
        return 0; // no further completions after a CQ error (digest 1.3)
    ULONG n = 0;
    while (n < nResults) {
        if (cq->polled.empty()) {
            if (!poll_device(*cq, cq->polled))
                break;
            for (const NDK_RESULT_EX &arrived : cq->polled)
                cq->arm.arrived(arrived.Status != STATUS_SUCCESS);
            continue;
        }
        Results[n++] = kit::result_as<Result>(cq->polled.front());
        cq->polled.pop_front();
    }
    return n;
}

ULONG get_cq_results(NDK_CQ *cq, NDK_RESULT Results[], ULONG nResults)
{
    return get_results(cq, Results, nResults);
}

ULONG get_cq_results_ex(NDK_CQ *cq, NDK_RESULT_EX Results[], ULONG nResults)
{
    return get_results(cq, Results, nResults);
}

// ibv_modify_cq (moderation) is an extended verb that neither rxe nor siw implements, and the
// adapter does not report NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED: NOT_SUPPORTED is
// then the required answer (digest 1.3).
NTSTATUS control_moderation(NDK_CQ *, ULONG, ULONG) { return STATUS_NOT_SUPPORTED; }

NTSTATUS close_cq(NDK_OBJECT_HEADER *header, NDK_FN_CLOSE_COMPLETION completion, PVOID context)
{
    return VCq::from(reinterpret_cast<NDK_CQ *>(header))->close(completion, context);
}

} // namespace

const NDK_CQ_DISPATCH kCqDispatch = {
    .NdkCloseCq = close_cq,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkResizeCq = resize_cq,
    .NdkArmCq = arm_cq,
    .NdkGetCqResults = get_cq_results,
    .NdkControlCqInterruptModeration = control_moderation,
    .NdkGetCqResultsEx = get_cq_results_ex,
};

} // namespace ndk::verbs
