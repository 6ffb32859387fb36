// The validated SRQ: its receive queue (validate_work_tracking.cpp) and its notification.
#include "layers/validate/validate_layer.hpp"

namespace ndk::validate {

namespace {

SrqShadow &srq_of(NDK_SRQ *face) { return Shadow::as<SrqShadow>(face); }
NDK_SRQ *real_srq(SrqShadow &srq) { return reinterpret_cast<NDK_SRQ *>(srq.real()); }

NTSTATUS modify_srq(NDK_SRQ *face, ULONG depth, ULONG threshold,
                    NDK_FN_REQUEST_COMPLETION completion, PVOID context)
{
    SrqShadow &srq = srq_of(face);
    if (!srq.usable("NdkModifySrq"))
        return STATUS_INVALID_DEVICE_STATE;
    return run_request(srq.adapter(), &srq, "NdkModifySrq", completion, context,
                       [&](NDK_FN_REQUEST_COMPLETION done, PVOID ctx) {
                           return real_srq(srq)->Dispatch->NdkModifySrq(real_srq(srq), depth,
                                                                        threshold, done, ctx);
                       },
                       [&srq, depth](NTSTATUS status) {
                           if (status == STATUS_SUCCESS && depth != 0)
                               srq.queue.depth = depth; // 0 keeps the depth (digest 1.6)
                       });
}

NTSTATUS srq_receive(NDK_SRQ *face, PVOID context, const NDK_SGE *sgl, ULONG count)
{
    SrqShadow &srq = srq_of(face);
    if (!srq.usable("NdkSrqReceive"))
        return STATUS_INVALID_DEVICE_STATE;
    LayerAdapter &a = srq.adapter();
    a.check_sgl(srq.queue, "NdkSrqReceive", sgl, count, 0, srq.name());
    PVOID handle = a.post_begin(srq.queue, srq, "NdkSrqReceive", context, 0, false);
    NTSTATUS status = real_srq(srq)->Dispatch->NdkSrqReceive(real_srq(srq), handle, sgl, count);
    a.post_end(srq.queue, handle, status);
    check_documented(&srq, a, "NdkSrqReceive", status);
    return status;
}

} // namespace

void srq_notification(PVOID context, NTSTATUS status)
{
    auto &srq = *static_cast<SrqShadow *>(context);
    if (!srq.accepts_callback("NdkSrqNotificationCallback"))
        return;
    srq.consumer_callback(srq.consumer_context, status);
}

const NDK_SRQ_DISPATCH kSrqDispatch = {
    .NdkCloseSrq = close_object,
    .NdkQueryExtension = query_extension,
    .NdkModifySrq = modify_srq,
    .NdkSrqReceive = srq_receive,
};

} // namespace ndk::validate
