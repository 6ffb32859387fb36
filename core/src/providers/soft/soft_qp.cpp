// Queue pair (digest 1.7): creation with its limits, the receive queue, and flush.
// Initiator work requests need a connection; connections are not established yet
// (docs/semantics.md: ESTABLISH), so they report CONNECTION_INVALID.
#include "soft_objects.hpp"

namespace ndk::soft {
namespace {

// The five sizes of CreateQp against NDK_ADAPTER_INFO (digest 1.2).
bool qp_sizes_valid(const NDK_ADAPTER_INFO &info, ULONG receive_depth, ULONG initiator_depth,
                    ULONG receive_sge, ULONG initiator_sge, ULONG inline_size)
{
    return receive_depth <= info.MaxReceiveQueueDepth &&
           initiator_depth <= info.MaxInitiatorQueueDepth &&
           receive_sge <= info.MaxReceiveRequestSge &&
           initiator_sge <= info.MaxInitiatorRequestSge && inline_size <= info.MaxInlineDataSize;
}

std::unique_ptr<SoftQp> make_qp(SoftPd &pd, NDK_CQ *receive_cq, NDK_CQ *initiator_cq,
                                NDK_SRQ *ndk_srq, NTSTATUS &status)
{
    SoftAdapter &adapter = pd.adapter();
    SoftCq *rcq = adapter.lookup<SoftCq>(receive_cq, NdkObjectTypeCq);
    SoftCq *icq = adapter.lookup<SoftCq>(initiator_cq, NdkObjectTypeCq);
    SoftSrq *srq = nullptr;
    if (ndk_srq != nullptr) {
        srq = adapter.lookup<SoftSrq>(ndk_srq, NdkObjectTypeSrq);
        if (srq == nullptr || srq->pd != &pd) {
            status = STATUS_INVALID_PARAMETER; // not a live SRQ of this PD
            return nullptr;
        }
    }
    if (rcq == nullptr || icq == nullptr) {
        status = STATUS_INVALID_PARAMETER; // not a live CQ of this adapter
        return nullptr;
    }
    auto qp = std::make_unique<SoftQp>(adapter);
    qp->pd = &pd;
    qp->receive_cq = rcq;
    qp->initiator_cq = icq;
    qp->srq = srq;
    qp->depend_on(pd);
    qp->depend_on(*rcq); // antecedents: CQ -> QP, SRQ -> QP (digest 3.1)
    qp->depend_on(*icq);
    if (srq != nullptr)
        qp->depend_on(*srq);
    return qp;
}

} // namespace

NTSTATUS create_qp(NDK_PD *ndk_pd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq, PVOID QPContext,
                   ULONG ReceiveQueueDepth, ULONG InitiatorQueueDepth, ULONG MaxReceiveRequestSge,
                   ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
                   NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext,
                   NDK_QP **ppNdkQp)
{
    SoftPd *pd = SoftPd::from(ndk_pd);
    SoftAdapter &adapter = pd->adapter();
    if (!qp_sizes_valid(adapter.info(), ReceiveQueueDepth, InitiatorQueueDepth,
                        MaxReceiveRequestSge, MaxInitiatorRequestSge, InlineDataSize) ||
        ppNdkQp == nullptr)
        return STATUS_INVALID_PARAMETER;
    return adapter.create<SoftQp>("NdkCreateQp", CreateCompletion, RequestContext, ppNdkQp,
                                  [&](NTSTATUS &status) {
                                      auto qp = make_qp(*pd, pReceiveCq, pInitiatorCq, nullptr,
                                                        status);
                                      if (qp) {
                                          qp->context = QPContext;
                                          qp->receive_depth = ReceiveQueueDepth;
                                          qp->initiator_depth = InitiatorQueueDepth;
                                          qp->receive_sge = MaxReceiveRequestSge;
                                          qp->initiator_sge = MaxInitiatorRequestSge;
                                          qp->inline_size = InlineDataSize;
                                      }
                                      return qp;
                                  });
}

NTSTATUS create_qp_with_srq(NDK_PD *ndk_pd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq,
                            NDK_SRQ *pSrq, PVOID QPContext, ULONG InitiatorQueueDepth,
                            ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
                            NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext,
                            NDK_QP **ppNdkQp)
{
    SoftPd *pd = SoftPd::from(ndk_pd);
    SoftAdapter &adapter = pd->adapter();
    if (!qp_sizes_valid(adapter.info(), 0, InitiatorQueueDepth, 0, MaxInitiatorRequestSge,
                        InlineDataSize) ||
        pSrq == nullptr || ppNdkQp == nullptr)
        return STATUS_INVALID_PARAMETER;
    return adapter.create<SoftQp>("NdkCreateQpWithSrq", CreateCompletion, RequestContext, ppNdkQp,
                                  [&](NTSTATUS &status) {
                                      auto qp = make_qp(*pd, pReceiveCq, pInitiatorCq, pSrq,
                                                        status);
                                      if (qp) {
                                          qp->context = QPContext;
                                          qp->initiator_depth = InitiatorQueueDepth;
                                          qp->initiator_sge = MaxInitiatorRequestSge;
                                          qp->inline_size = InlineDataSize;
                                      }
                                      return qp;
                                  });
}

namespace {

VOID flush(NDK_QP *ndk_qp)
{
    // Every pending request completes with STATUS_CANCELLED (digest 1.7).
    SoftQp *qp = SoftQp::from(ndk_qp);
    std::lock_guard lock(qp->adapter().mu());
    while (!qp->receives.empty()) {
        NDK_RESULT_EX result{};
        result.Status = STATUS_CANCELLED;
        result.QPContext = qp->context;
        result.RequestContext = qp->receives.front();
        result.Type = NdkOperationTypeReceive;
        qp->receives.pop_front();
        post_result(*qp->receive_cq, result, false);
    }
}

NTSTATUS receive(NDK_QP *ndk_qp, PVOID RequestContext, const NDK_SGE *pSgl, ULONG nSge)
{
    SoftQp *qp = SoftQp::from(ndk_qp);
    if (qp->srq != nullptr)
        return STATUS_INVALID_DEVICE_REQUEST; // receives go to the SRQ of this QP
    if (nSge > qp->receive_sge)
        return STATUS_DATA_OVERRUN; // too many SGEs (ND2 QP::Receive, digest 4.2)
    if (nSge > 0 && pSgl == nullptr)
        return STATUS_INVALID_PARAMETER;
    std::lock_guard lock(qp->adapter().mu());
    if (qp->receives.size() >= qp->receive_depth)
        return STATUS_NO_MORE_ENTRIES; // queue full (ND2 QP::Receive, digest 4.2)
    qp->receives.push_back(RequestContext);
    return STATUS_SUCCESS;
}

// Initiator requests on a QP that has no connection (digest 1.7: "QP not connected").
NTSTATUS not_connected(SoftQp *) { return STATUS_CONNECTION_INVALID; }

NTSTATUS send(NDK_QP *qp, PVOID, const NDK_SGE *, ULONG, ULONG)
{
    return not_connected(SoftQp::from(qp));
}
NTSTATUS bind(NDK_QP *qp, PVOID, NDK_MR *, NDK_MW *, PVOID, SIZE_T, ULONG)
{
    return not_connected(SoftQp::from(qp));
}
NTSTATUS fast_register(NDK_QP *qp, PVOID, NDK_MR *, ULONG, const NDK_LOGICAL_ADDRESS *, ULONG,
                       SIZE_T, PVOID, ULONG)
{
    return not_connected(SoftQp::from(qp));
}
NTSTATUS invalidate(NDK_QP *qp, PVOID, NDK_OBJECT_HEADER *, ULONG)
{
    return not_connected(SoftQp::from(qp));
}
NTSTATUS read(NDK_QP *qp, PVOID, const NDK_SGE *, ULONG, UINT64, UINT32, ULONG)
{
    return not_connected(SoftQp::from(qp));
}
NTSTATUS write(NDK_QP *qp, PVOID, const NDK_SGE *, ULONG, UINT64, UINT32, ULONG)
{
    return not_connected(SoftQp::from(qp));
}
NTSTATUS send_and_invalidate(NDK_QP *qp, PVOID, const NDK_SGE *, ULONG, ULONG, UINT32)
{
    return not_connected(SoftQp::from(qp));
}

} // namespace

const NDK_QP_DISPATCH kQpDispatch = {
    close_object<SoftQp>,
    query_extension_not_supported,
    flush,
    send,
    receive,
    bind,
    fast_register,
    invalidate,
    read,
    write,
    send_and_invalidate,
};

} // namespace ndk::soft
