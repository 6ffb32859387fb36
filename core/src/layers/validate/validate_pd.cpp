// The validated PD: the creates of its children, with the antecedents each QP gets (its CQs
// and SRQ, digest 3.1), and the privileged token (a valid local token of this PD).
#include "layers/validate/validate_layer.hpp"

namespace ndk::validate {

namespace {

Shadow &pd_of(NDK_PD *face) { return Shadow::of(face); }
NDK_PD *real_pd(Shadow &pd) { return reinterpret_cast<NDK_PD *>(pd.real()); }

NTSTATUS create_mr(NDK_PD *face, BOOLEAN fast_register, NDK_FN_CREATE_COMPLETION completion,
                   PVOID context, NDK_MR **out)
{
    Shadow &pd = pd_of(face);
    if (!pd.usable("NdkCreateMr"))
        return STATUS_INVALID_DEVICE_STATE;
    LayerAdapter &a = pd.adapter();
    MrShadow &mr = a.make<MrShadow>(pd);
    return run_create(a, mr, "NdkCreateMr", completion, context, reinterpret_cast<void **>(out),
                      [&](NDK_FN_CREATE_COMPLETION done, PVOID ctx, void **slot) {
                          return real_pd(pd)->Dispatch->NdkCreateMr(
                              real_pd(pd), fast_register, done, ctx,
                              reinterpret_cast<NDK_MR **>(slot));
                      });
}

NTSTATUS create_mw(NDK_PD *face, NDK_FN_CREATE_COMPLETION completion, PVOID context,
                   NDK_MW **out)
{
    Shadow &pd = pd_of(face);
    if (!pd.usable("NdkCreateMw"))
        return STATUS_INVALID_DEVICE_STATE;
    LayerAdapter &a = pd.adapter();
    PlainShadow &mw = a.make<PlainShadow>(NdkObjectTypeMw);
    return run_create(a, mw, "NdkCreateMw", completion, context, reinterpret_cast<void **>(out),
                      [&](NDK_FN_CREATE_COMPLETION done, PVOID ctx, void **slot) {
                          return real_pd(pd)->Dispatch->NdkCreateMw(
                              real_pd(pd), done, ctx, reinterpret_cast<NDK_MW **>(slot));
                      });
}

NTSTATUS create_srq(NDK_PD *face, ULONG depth, ULONG max_sge, ULONG threshold,
                    NDK_FN_SRQ_NOTIFICATION_CALLBACK notification, PVOID notification_context,
                    GROUP_AFFINITY *affinity, NDK_FN_CREATE_COMPLETION completion,
                    PVOID context, NDK_SRQ **out)
{
    Shadow &pd = pd_of(face);
    if (!pd.usable("NdkCreateSrq"))
        return STATUS_INVALID_DEVICE_STATE;
    LayerAdapter &a = pd.adapter();
    SrqShadow &srq = a.make<SrqShadow>();
    srq.consumer_callback = notification;
    srq.consumer_context = notification_context;
    srq.queue.depth = depth;
    srq.queue.pd = &pd;
    return run_create(a, srq, "NdkCreateSrq", completion, context, reinterpret_cast<void **>(out),
                      [&](NDK_FN_CREATE_COMPLETION done, PVOID ctx, void **slot) {
                          return real_pd(pd)->Dispatch->NdkCreateSrq(
                              real_pd(pd), depth, max_sge, threshold,
                              notification ? srq_notification : nullptr, &srq, affinity, done,
                              ctx, reinterpret_cast<NDK_SRQ **>(slot));
                      });
}

// Once the QP exists, it is a successor of its CQs and SRQ (digest 3.1).
std::function<void(NTSTATUS)> link_qp(QpShadow &qp, NDK_CQ *receive_cq, NDK_CQ *initiator_cq,
                                      NDK_SRQ *srq)
{
    Shadow *antecedents[3] = {receive_cq ? &Shadow::of(receive_cq) : nullptr,
                              initiator_cq ? &Shadow::of(initiator_cq) : nullptr,
                              srq ? &Shadow::of(srq) : nullptr};
    return [&qp, antecedents](NTSTATUS status) {
        if (status != STATUS_SUCCESS)
            return;
        for (Shadow *antecedent : antecedents)
            if (antecedent != nullptr)
                antecedent->add_successor(qp);
        qp.adapter().register_qp(qp);
    };
}

// A QP's shadow: the consumer's QPContext (restored in every result) and its queues.
QpShadow &new_qp(Shadow &pd, PVOID qp_context, ULONG initiator_depth, ULONG receive_depth)
{
    QpShadow &qp = pd.adapter().make<QpShadow>();
    qp.consumer_qp_context = qp_context;
    qp.initiator.depth = initiator_depth;
    qp.initiator.pd = &pd;
    qp.receive.depth = receive_depth;
    qp.receive.pd = &pd;
    return qp;
}

NTSTATUS create_qp(NDK_PD *face, NDK_CQ *receive_cq, NDK_CQ *initiator_cq, PVOID qp_context,
                   ULONG receive_depth, ULONG initiator_depth, ULONG max_receive_sge,
                   ULONG max_initiator_sge, ULONG inline_size,
                   NDK_FN_CREATE_COMPLETION completion, PVOID context, NDK_QP **out)
{
    Shadow &pd = pd_of(face);
    if (!pd.usable("NdkCreateQp"))
        return STATUS_INVALID_DEVICE_STATE;
    LayerAdapter &a = pd.adapter();
    if (check_arguments(a, "NdkCreateQp",
                        {{receive_cq, NdkObjectTypeCq}, {initiator_cq, NdkObjectTypeCq}}) !=
        STATUS_SUCCESS)
        return STATUS_INVALID_PARAMETER; // docs/semantics.md QP-OBJECTS
    QpShadow &qp = new_qp(pd, qp_context, initiator_depth, receive_depth);
    auto link = link_qp(qp, receive_cq, initiator_cq, nullptr);
    // The QP's context in every result is the layer's (its shadow), translated back to the
    // consumer's QPContext when the results are retrieved.
    NTSTATUS status = run_create(
        a, qp, "NdkCreateQp", completion, context, reinterpret_cast<void **>(out),
        [&](NDK_FN_CREATE_COMPLETION done, PVOID ctx, void **slot) {
            return real_pd(pd)->Dispatch->NdkCreateQp(
                real_pd(pd), real_of(receive_cq), real_of(initiator_cq), &qp, receive_depth,
                initiator_depth, max_receive_sge, max_initiator_sge, inline_size, done, ctx,
                reinterpret_cast<NDK_QP **>(slot));
        },
        std::move(link));
    return status;
}

NTSTATUS create_qp_with_srq(NDK_PD *face, NDK_CQ *receive_cq, NDK_CQ *initiator_cq,
                            NDK_SRQ *srq, PVOID qp_context, ULONG initiator_depth,
                            ULONG max_initiator_sge, ULONG inline_size,
                            NDK_FN_CREATE_COMPLETION completion, PVOID context, NDK_QP **out)
{
    Shadow &pd = pd_of(face);
    if (!pd.usable("NdkCreateQpWithSrq"))
        return STATUS_INVALID_DEVICE_STATE;
    LayerAdapter &a = pd.adapter();
    if (check_arguments(a, "NdkCreateQpWithSrq",
                        {{receive_cq, NdkObjectTypeCq},
                         {initiator_cq, NdkObjectTypeCq},
                         {srq, NdkObjectTypeSrq}}) != STATUS_SUCCESS)
        return STATUS_INVALID_PARAMETER;
    QpShadow &qp = new_qp(pd, qp_context, initiator_depth, 0); // receives go to the SRQ
    qp.srq = srq ? &Shadow::as<SrqShadow>(srq) : nullptr;
    auto link = link_qp(qp, receive_cq, initiator_cq, srq);
    NTSTATUS status = run_create(
        a, qp, "NdkCreateQpWithSrq", completion, context, reinterpret_cast<void **>(out),
        [&](NDK_FN_CREATE_COMPLETION done, PVOID ctx, void **slot) {
            return real_pd(pd)->Dispatch->NdkCreateQpWithSrq(
                real_pd(pd), real_of(receive_cq), real_of(initiator_cq), real_of(srq), &qp,
                initiator_depth, max_initiator_sge, inline_size, done, ctx,
                reinterpret_cast<NDK_QP **>(slot));
        },
        std::move(link));
    return status;
}

void get_privileged_token(NDK_PD *face, UINT32 *token)
{
    Shadow &pd = pd_of(face);
    if (!pd.usable("NdkGetPrivilegedMemoryRegionToken"))
        return;
    real_pd(pd)->Dispatch->NdkGetPrivilegedMemoryRegionToken(real_pd(pd), token);
    if (token != nullptr)
        pd.adapter().learn_local_token(*token, &pd);
}

} // namespace

const NDK_PD_DISPATCH kPdDispatch = {
    .NdkClosePd = close_object,
    .NdkQueryExtension = query_extension,
    .NdkCreateMr = create_mr,
    .NdkCreateMw = create_mw,
    .NdkCreateSrq = create_srq,
    .NdkCreateQp = create_qp,
    .NdkCreateQpWithSrq = create_qp_with_srq,
    .NdkGetPrivilegedMemoryRegionToken = get_privileged_token,
};

} // namespace ndk::validate
