// Queue pair (digest 1.7): creation with its limits, flush and close.  Posting is in
// soft_qp_post.cpp, execution in soft_transfer.cpp.
#include "soft_channel.hpp"
#include "soft_qp_complete.hpp"
#include "soft_qp_post.hpp"
#include "soft_transfer.hpp"
#include "providers/kit/kit_create_checks.hpp"

namespace ndk::soft {
namespace {

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
    qp->initiator.place_counts(&qp->initiator_head, &qp->initiator_count); // its posts' line
    rcq->producers.add(&qp->connection_mu());
    icq->producers.add(&qp->connection_mu());
    if (srq != nullptr) {
        qp->depend_on(*srq);
        srq->qps.push_back(qp.get());
    }
    return qp;
}

} // namespace

NTSTATUS create_qp(NDK_PD *ndk_pd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq, PVOID QPContext,
                   ULONG ReceiveQueueDepth, ULONG InitiatorQueueDepth, ULONG MaxReceiveRequestSge,
                   ULONG MaxInitiatorRequestSge, ULONG InlineDataSize, NDK_FN_CREATE_COMPLETION,
                   PVOID, NDK_QP **ppNdkQp)
{
    SoftPd *pd = SoftPd::from(ndk_pd);
    SoftAdapter &adapter = pd->adapter();
    const kit::QpSizes sizes{ReceiveQueueDepth, InitiatorQueueDepth, MaxReceiveRequestSge,
                             MaxInitiatorRequestSge, InlineDataSize};
    if (NTSTATUS status = kit::check_create_qp(adapter.info(), sizes, ppNdkQp);
        status != STATUS_SUCCESS)
        return status;
    return adapter.create<SoftQp>(ppNdkQp, [&](NTSTATUS &status) {
        auto qp = make_qp(*pd, pReceiveCq, pInitiatorCq, nullptr, status);
        if (qp) {
            qp->context = QPContext;
            qp->set_sizes(sizes);
        }
        return qp;
    });
}

NTSTATUS create_qp_with_srq(NDK_PD *ndk_pd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq, NDK_SRQ *pSrq,
                            PVOID QPContext, ULONG InitiatorQueueDepth,
                            ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
                            NDK_FN_CREATE_COMPLETION, PVOID, NDK_QP **ppNdkQp)
{
    SoftPd *pd = SoftPd::from(ndk_pd);
    SoftAdapter &adapter = pd->adapter();
    const kit::QpSizes sizes{0, InitiatorQueueDepth, 0, MaxInitiatorRequestSge, InlineDataSize};
    if (NTSTATUS status = kit::check_create_qp(adapter.info(), sizes, ppNdkQp);
        status != STATUS_SUCCESS)
        return status;
    if (pSrq == nullptr)
        return STATUS_INVALID_PARAMETER;
    return adapter.create<SoftQp>(ppNdkQp, [&](NTSTATUS &status) {
        auto qp = make_qp(*pd, pReceiveCq, pInitiatorCq, pSrq, status);
        if (qp) {
            qp->context = QPContext;
            qp->set_sizes(sizes);
        }
        return qp;
    });
}

namespace {

VOID flush(NDK_QP *ndk_qp)
{
    // Every pending request on both queues completes with STATUS_CANCELLED (digest 1.7).
    // The connection stays up (docs/semantics.md, QP-FLUSH).
    SoftQp *qp = SoftQp::from(ndk_qp);
    std::lock_guard lock(qp->adapter().mu());
    flush_qp(*qp);
}

} // namespace

SoftQp::~SoftQp() { add_traffic_to(adapter().miniport().counters); } // wire lock held

void SoftQp::on_close()
{
    // A close cancels what is still queued (digest 3.1).
    flush_qp(*this);
    if (srq != nullptr)
        std::erase(srq->qps, this);
    // Flushed, it completes nothing more.
    receive_cq->producers.remove(&connection_mu());
    initiator_cq->producers.remove(&connection_mu());
}

void SoftQp::share_connection_lock(std::shared_ptr<ConnectionLine> line, size_t end)
{
    for (SoftCq *cq : {receive_cq, initiator_cq}) {
        cq->producers.remove(&connection_mu());
        cq->producers.add(&line->mu);
    }
    // The counts the peer's transfers and posts read and write go with the lock (receives
    // posted before the connection are carried over); the initiator queue's head stays in
    // this QP's own line, as only this QP's posts and completions use it.
    ConnectionLine::End &at = line->ends.at(end);
    receives.place_counts(&at.receive_head, &at.receive_count);
    initiator.place_counts(&initiator_head, &at.initiator_count);
    connection = std::move(line);
}

const NDK_QP_DISPATCH kQpDispatch = {
    .NdkCloseQp = close_object<SoftQp>,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkFlush = flush,
    .NdkSend = post_send,
    .NdkReceive = post_receive,
    .NdkBind = post_bind,
    .NdkFastRegister = post_fast_register,
    .NdkInvalidate = post_invalidate,
    .NdkRead = post_read,
    .NdkWrite = post_write,
    .NdkSendAndInvalidate = post_send_and_invalidate,
};

} // namespace ndk::soft
