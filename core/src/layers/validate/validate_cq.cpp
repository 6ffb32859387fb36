// The validated CQ: arm and notification rules (digest 3.2), the consumer's serialization of
// arm and polls, moderation (1.3), and the results, whose contexts the layer translates back
// to the consumer's (validate_work_tracking.cpp).
#include "layers/validate/validate_layer.hpp"

namespace ndk::validate {

namespace {

CqShadow &cq_of(NDK_CQ *face) { return Shadow::as<CqShadow>(face); }

// CQ-CONCURRENT-CALL: GetCqResults(Ex) and ArmCq never run concurrently on one CQ.
class Serialized {
public:
    Serialized(CqShadow &cq, const char *call) : cq_(cq)
    {
        if (cq.busy.exchange(true, std::memory_order_acquire)) {
            cq.report("CQ-CONCURRENT-CALL", call,
                      "called while another GetCqResults/GetCqResultsEx/ArmCq on this CQ "
                      "had not returned");
            owner_ = false;
        }
    }
    ~Serialized()
    {
        if (owner_)
            cq_.busy.store(false, std::memory_order_release);
    }

private:
    CqShadow &cq_;
    bool owner_ = true;
};

NTSTATUS resize_cq(NDK_CQ *face, ULONG depth, NDK_FN_REQUEST_COMPLETION completion,
                   PVOID context)
{
    CqShadow &cq = cq_of(face);
    if (!cq.usable("NdkResizeCq"))
        return STATUS_INVALID_DEVICE_STATE;
    if (!(cq.adapter().info().AdapterFlags & NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED))
        cq.report("CQ-RESIZE-UNSUPPORTED", "NdkResizeCq",
                  "NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED is not set");
    auto real = reinterpret_cast<NDK_CQ *>(cq.real());
    return run_request(cq.adapter(), &cq, "NdkResizeCq", completion, context,
                       [&](NDK_FN_REQUEST_COMPLETION done, PVOID ctx) {
                           return real->Dispatch->NdkResizeCq(real, depth, done, ctx);
                       });
}

void arm_cq(NDK_CQ *face, ULONG type)
{
    CqShadow &cq = cq_of(face);
    if (!cq.usable("NdkArmCq"))
        return;
    Serialized serialized(cq, "NdkArmCq");
    {
        std::lock_guard lock(cq.arm_mu);
        ++cq.unsatisfied_arms;
        cq.notified_since_arm = false;
    }
    auto real = reinterpret_cast<NDK_CQ *>(cq.real());
    real->Dispatch->NdkArmCq(real, type);
}

ULONG get_cq_results(NDK_CQ *face, NDK_RESULT results[], ULONG count)
{
    CqShadow &cq = cq_of(face);
    if (!cq.usable("NdkGetCqResults"))
        return 0;
    Serialized serialized(cq, "NdkGetCqResults");
    auto real = reinterpret_cast<NDK_CQ *>(cq.real());
    ULONG n = real->Dispatch->NdkGetCqResults(real, results, count);
    cq.adapter().translate(cq, results, n, "NdkGetCqResults");
    return n;
}

ULONG get_cq_results_ex(NDK_CQ *face, NDK_RESULT_EX results[], ULONG count)
{
    CqShadow &cq = cq_of(face);
    if (!cq.usable("NdkGetCqResultsEx"))
        return 0;
    Serialized serialized(cq, "NdkGetCqResultsEx");
    const NDK_VERSION version = cq.adapter().version();
    if (version.Major == 1 && version.Minor < 2)
        cq.report("CQ-RESULTS-EX-VERSION", "NdkGetCqResultsEx",
                  "NdkGetCqResultsEx called on an adapter opened at NDKPI " +
                      std::to_string(version.Major) + "." + std::to_string(version.Minor) +
                      ": NDK_RESULT_EX and its function begin at 1.2");
    auto real = reinterpret_cast<NDK_CQ *>(cq.real());
    ULONG n = real->Dispatch->NdkGetCqResultsEx(real, results, count);
    cq.adapter().translate(cq, results, n, "NdkGetCqResultsEx");
    return n;
}

NTSTATUS control_moderation(NDK_CQ *face, ULONG interval, ULONG count)
{
    CqShadow &cq = cq_of(face);
    const char *call = "NdkControlCqInterruptModeration";
    if (!cq.usable(call))
        return STATUS_INVALID_DEVICE_STATE;
    auto real = reinterpret_cast<NDK_CQ *>(cq.real());
    NTSTATUS status = real->Dispatch->NdkControlCqInterruptModeration(real, interval, count);
    if (status == STATUS_PENDING)
        cq.report("MODERATION-PENDING", call, "returned STATUS_PENDING (it must not)");
    bool supported =
        cq.adapter().info().AdapterFlags & NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED;
    if (supported && status == STATUS_NOT_SUPPORTED)
        cq.report("MODERATION-NOT-SUPPORTED", call,
                  "returned STATUS_NOT_SUPPORTED although the adapter sets "
                  "NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED");
    else if (!supported && status != STATUS_NOT_SUPPORTED)
        cq.report("MODERATION-NOT-SUPPORTED", call,
                  "must return STATUS_NOT_SUPPORTED: the adapter does not set "
                  "NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED");
    check_documented(&cq, cq.adapter(), call, status);
    return status;
}

} // namespace

void cq_notification(PVOID context, NTSTATUS status)
{
    auto &cq = *static_cast<CqShadow *>(context);
    const char *call = "NdkCqNotificationCallback";
    if (!cq.accepts_callback(call))
        return;
    {
        std::lock_guard lock(cq.arm_mu);
        if (cq.in_callback > 0)
            cq.report("CQ-CALLBACK-CONCURRENT", call,
                      "a notification callback started while another on this CQ had not "
                      "returned");
        if (cq.unsatisfied_arms == 0)
            cq.report(cq.notified_since_arm ? "CQ-NOTIFY-TWICE" : "CQ-NOTIFY-UNARMED", call,
                      cq.notified_since_arm
                          ? "a second notification for one arm"
                          : "a notification although the CQ was not armed");
        else // consumed before the consumer runs: it may re-arm from the callback
            --cq.unsatisfied_arms;
        cq.notified_since_arm = true;
        ++cq.in_callback;
    }
    cq.consumer_callback(cq.consumer_context, status);
    std::lock_guard lock(cq.arm_mu);
    --cq.in_callback;
}

const NDK_CQ_DISPATCH kCqDispatch = {
    .NdkCloseCq = close_object,
    .NdkQueryExtension = query_extension,
    .NdkResizeCq = resize_cq,
    .NdkArmCq = arm_cq,
    .NdkGetCqResults = get_cq_results,
    .NdkControlCqInterruptModeration = control_moderation,
    .NdkGetCqResultsEx = get_cq_results_ex,
};

} // namespace ndk::validate
