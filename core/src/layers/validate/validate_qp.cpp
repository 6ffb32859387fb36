// The validated QP: every post goes through post() below, which checks the consumer's side
// (closed object, concurrent posts, queue depth, SGE tokens) and tracks the request until its
// completion is retrieved (validate_work_tracking.cpp).
#include "layers/validate/validate_layer.hpp"

namespace ndk::validate {

namespace {

QpShadow &qp_of(NDK_QP *face) { return Shadow::as<QpShadow>(face); }
NDK_QP *real_qp(QpShadow &qp) { return reinterpret_cast<NDK_QP *>(qp.real()); }

template <class Invoke>
NTSTATUS post(NDK_QP *face, bool initiator, const char *function, PVOID context, ULONG flags,
              const NDK_SGE *sgl, ULONG count, Invoke &&invoke)
{
    QpShadow &qp = qp_of(face);
    if (!qp.usable(function))
        return STATUS_INVALID_DEVICE_STATE;
    LayerAdapter &a = qp.adapter();
    WorkQueue &queue = initiator ? qp.initiator : qp.receive;
    if (sgl != nullptr || count > 0)
        a.check_sgl(queue, function, sgl, count, flags, qp.name());
    PVOID handle = a.post_begin(queue, qp, function, context, flags, initiator);
    NTSTATUS status = invoke(real_qp(qp), handle);
    a.post_end(queue, handle, status);
    check_documented(&qp, a, function, status);
    return status;
}

void flush(NDK_QP *face)
{
    QpShadow &qp = qp_of(face);
    if (qp.usable("NdkFlush"))
        real_qp(qp)->Dispatch->NdkFlush(real_qp(qp));
}

NTSTATUS send(NDK_QP *face, PVOID context, const NDK_SGE *sgl, ULONG count, ULONG flags)
{
    return post(face, true, "NdkSend", context, flags, sgl, count, [&](NDK_QP *real, PVOID h) {
        return real->Dispatch->NdkSend(real, h, sgl, count, flags);
    });
}

NTSTATUS receive(NDK_QP *face, PVOID context, const NDK_SGE *sgl, ULONG count)
{
    return post(face, false, "NdkReceive", context, 0, sgl, count, [&](NDK_QP *real, PVOID h) {
        return real->Dispatch->NdkReceive(real, h, sgl, count);
    });
}

NTSTATUS bind(NDK_QP *face, PVOID context, NDK_MR *mr, NDK_MW *mw, PVOID address, SIZE_T length,
              ULONG flags)
{
    if (check_arguments(qp_of(face).adapter(), "NdkBind",
                        {{mr, NdkObjectTypeMr}, {mw, NdkObjectTypeMw}}) != STATUS_SUCCESS)
        return STATUS_INVALID_PARAMETER; // a bad Bind argument (POST-CHECKS)
    return post(face, true, "NdkBind", context, flags, nullptr, 0, [&](NDK_QP *real, PVOID h) {
        return real->Dispatch->NdkBind(real, h, real_of(mr), real_of(mw), address, length,
                                       flags);
    });
}

NTSTATUS fast_register(NDK_QP *face, PVOID context, NDK_MR *mr, ULONG pages,
                       const NDK_LOGICAL_ADDRESS *page_array, ULONG fbo, SIZE_T length,
                       PVOID base, ULONG flags)
{
    if (check_arguments(qp_of(face).adapter(), "NdkFastRegister", {{mr, NdkObjectTypeMr}}) !=
        STATUS_SUCCESS)
        return STATUS_INVALID_PARAMETER;
    return post(face, true, "NdkFastRegister", context, flags, nullptr, 0,
                [&](NDK_QP *real, PVOID h) {
                    return real->Dispatch->NdkFastRegister(real, h, real_of(mr), pages,
                                                           page_array, fbo, length, base, flags);
                });
}

NTSTATUS invalidate(NDK_QP *face, PVOID context, NDK_OBJECT_HEADER *mr_or_mw, ULONG flags)
{
    if (check_arguments(qp_of(face).adapter(), "NdkInvalidate",
                        {{mr_or_mw, NdkObjectTypeMr, NdkObjectTypeMw}}) != STATUS_SUCCESS)
        return STATUS_INVALID_PARAMETER;
    return post(face, true, "NdkInvalidate", context, flags, nullptr, 0,
                [&](NDK_QP *real, PVOID h) {
                    return real->Dispatch->NdkInvalidate(real, h, real_of(mr_or_mw), flags);
                });
}

NTSTATUS read(NDK_QP *face, PVOID context, const NDK_SGE *sgl, ULONG count, UINT64 address,
              UINT32 token, ULONG flags)
{
    return post(face, true, "NdkRead", context, flags, sgl, count, [&](NDK_QP *real, PVOID h) {
        return real->Dispatch->NdkRead(real, h, sgl, count, address, token, flags);
    });
}

NTSTATUS write(NDK_QP *face, PVOID context, const NDK_SGE *sgl, ULONG count, UINT64 address,
               UINT32 token, ULONG flags)
{
    return post(face, true, "NdkWrite", context, flags, sgl, count, [&](NDK_QP *real, PVOID h) {
        return real->Dispatch->NdkWrite(real, h, sgl, count, address, token, flags);
    });
}

NTSTATUS send_and_invalidate(NDK_QP *face, PVOID context, const NDK_SGE *sgl, ULONG count,
                             ULONG flags, UINT32 token)
{
    return post(face, true, "NdkSendAndInvalidate", context, flags, sgl, count,
                [&](NDK_QP *real, PVOID h) {
                    return real->Dispatch->NdkSendAndInvalidate(real, h, sgl, count, flags,
                                                                token);
                });
}

} // namespace

const NDK_QP_DISPATCH kQpDispatch = {
    .NdkCloseQp = close_object,
    .NdkQueryExtension = query_extension,
    .NdkFlush = flush,
    .NdkSend = send,
    .NdkReceive = receive,
    .NdkBind = bind,
    .NdkFastRegister = fast_register,
    .NdkInvalidate = invalidate,
    .NdkRead = read,
    .NdkWrite = write,
    .NdkSendAndInvalidate = send_and_invalidate,
};

} // namespace ndk::validate
