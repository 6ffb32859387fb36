// Queue pair (digest 1.7) over an RC ibv_qp.  The QP exists before any connection (NDK creates
// it on the PD, connectors come later), so it is created with ibv_create_qp, not
// rdma_create_qp, and taken to INIT at once so that receives may be posted before the
// connection; the connector then moves it on with the attributes rdma_cm computes
// (rdma_init_qp_attr).  Flush is the verbs error state.
#include "verbs_objects.hpp"
#include "providers/kit/kit_create_checks.hpp"

#include <cerrno>
#include <chrono>
#include <thread>

namespace ndk::verbs {

VQp::VQp(VerbsAdapter &adapter, VPd &pd) : NdkObject(adapter, kType, &kQpDispatch), pd(pd) {}

// ibv_destroy_qp drops what is still posted without a completion, and a completion that
// arrives for a QP already gone has nobody to report to (poll_device); an NDK close must
// cancel what is posted (digest 3.1).  So: flush, and move the flushed completions into the
// CQs' results while the QP still names them.  siw flushes inside the modify, rxe in its
// tasks shortly after; a device that never flushes costs the close kCancelWait.
void VQp::cancel_posted()
{
    constexpr auto kCancelWait = std::chrono::milliseconds(500);
    {
        std::lock_guard lock(adapter().mu());
        flush();
    }
    auto deadline = std::chrono::steady_clock::now() + kCancelWait;
    for (;;) {
        {
            std::lock_guard lock(adapter().mu());
            drain_cqs();
            // a failed CQ takes no more results: nothing to wait for on it
            bool waiting = receive_cq->error == STATUS_SUCCESS && srq == nullptr &&
                           !receives.pending.empty();
            if (initiator_cq->error == STATUS_SUCCESS)
                for (const auto &[id, request] : sends.pending)
                    waiting = waiting || (request.signaled && !request.done);
            if (!waiting)
                break;
        }
        if (std::chrono::steady_clock::now() > deadline)
            break;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    std::lock_guard lock(adapter().mu());
    cancel_pending();
}

void VQp::drain_cqs()
{
    for (VCq *cq : {receive_cq, initiator_cq})
        if (cq->error == STATUS_SUCCESS)
            cq->drain_device();
}

// What the device did not flush is cancelled by the provider, in each queue's order: siw
// flushes only on the transition into the error state, so a receive posted into its
// user-space queue after the peer ended the stream is never flushed (VERBS-CLOSE-CANCELS).
// A completion the device still delivers for one of them finds no request and is dropped.
void VQp::cancel_pending()
{
    if (srq == nullptr)
        for (const auto &[id, request] : receives.pending)
            receive_cq->add_local(cancelled_result(*this, request));
    receives.pending.clear();
    for (auto &[id, request] : sends.pending) {
        if (!request.done)
            initiator_cq->add_local(cancelled_result(*this, request));
        else if (request.report)
            initiator_cq->add_local(request.result); // held for an earlier one: in order
    }
    sends.pending.clear();
}

// A close must itself start cancelling what is posted (digest 3.1), also when it pends: the
// QP's connector (its successor) may stay open for long, and until it closes nothing else
// would end a receive the peer never answers or a Send it never acknowledges
// (VERBS-CLOSE-PENDING-FLUSHES).  What the device then flushes completes through the CQs
// while the QP still names them; destroy_resources() cancels whatever is left.
void VQp::on_close()
{
    if (!sends.pending.empty() || !receives.pending.empty())
        flush();
}

void VQp::destroy_resources()
{
    if (qp != nullptr) {
        cancel_posted();
        {
            std::lock_guard lock(adapter().mu());
            adapter().qps().erase(qp->qp_num);
            for (VMw *window : windows)
                window->release_qp(*this);
            windows.clear();
        }
        ibv_destroy_qp(qp);
    }
    qp = nullptr;
}

void VQp::flush()
{
    if (qp == nullptr)
        return;
    // Nothing posted on a QP that never connected: nothing to cancel, and the error state
    // would only spoil it for a connection (siw has no way out of IBV_QPS_ERR:
    // VERBS-FLUSH-BEFORE-CONNECT).
    if (state == State::Idle && sends.pending.empty() && receives.pending.empty())
        return;
    // Again when already flushed: moving to the error state again flushes what was posted
    // since (rxe flushes on every transition to IBV_QPS_ERR, in its tasks just after).
    // siw flushes inside the modify, and only on the transition into the error state; the
    // peer's end of the stream may have put the QP there unseen, and siw cannot be asked
    // (its ibv_query_qp leaves qp_state unset).  So on iWARP, what the modify did not flush
    // will never be: collect what the device completed, then cancel the rest, in order
    // (VERBS-FLUSH-AGAIN).
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE) == 0) // NdkFlush is VOID: nothing to report
        in_error = true;
    if (adapter().device().iwarp) {
        drain_cqs();
        cancel_pending();
    }
}

int VQp::modify_from_cm(rdma_cm_id *id, ibv_qp_state state)
{
    ibv_qp_attr attr{};
    int mask = 0;
    attr.qp_state = state;
    if (rdma_init_qp_attr(id, &attr, &mask) != 0)
        return errno;
    if (state == IBV_QPS_INIT) // keep what we set at creation (the remote access rights)
        attr.qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
    return ibv_modify_qp(qp, &attr, mask) == 0 ? 0 : errno;
}

namespace {

// INIT, so receives can be posted before the connection: port and P_Key index on RoCE (one
// port; the P_Key table's default entry), access rights for the peer's reads and writes.
int to_init(VQp &qp)
{
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
    int mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS;
    if (!qp.adapter().device().iwarp) {
        attr.pkey_index = 0;
        attr.port_num = 1;
        mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    }
    return ibv_modify_qp(qp.qp, &attr, mask) == 0 ? 0 : errno;
}

} // namespace

int VQp::reset_if_flushed()
{
    if (!in_error || state == State::Connected || state == State::Disconnected)
        return 0; // never connected yet: Idle, or Connecting through the connector now
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RESET;
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE) != 0)
        return errno;
    in_error = false;
    return to_init(*this);
}

namespace {

NTSTATUS make_qp(VPd *pd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq, NDK_SRQ *pSrq, PVOID QPContext,
                 const kit::QpSizes &sizes, NDK_QP **ppNdkQp)
{
    VerbsAdapter &adapter = pd->adapter();
    NDK_ADAPTER_INFO info = adapter.info();
    if (NTSTATUS status = kit::check_create_qp(info, sizes, ppNdkQp); status != STATUS_SUCCESS)
        return status;
    auto *qp = new VQp(adapter, *pd);
    {
        std::lock_guard lock(adapter.mu());
        qp->receive_cq = adapter.lookup<VCq>(pReceiveCq, NdkObjectTypeCq);
        qp->initiator_cq = adapter.lookup<VCq>(pInitiatorCq, NdkObjectTypeCq);
        qp->srq = pSrq != nullptr ? adapter.lookup<VSrq>(pSrq, NdkObjectTypeSrq) : nullptr;
        if (qp->receive_cq == nullptr || qp->initiator_cq == nullptr ||
            (pSrq != nullptr && (qp->srq == nullptr || &qp->srq->pd != pd))) {
            delete qp;
            return STATUS_INVALID_PARAMETER; // QP-OBJECTS
        }
    }
    qp->qp_context = QPContext;
    qp->set_sizes(sizes);
    ibv_qp_init_attr init{};
    init.qp_context = static_cast<Object *>(qp);
    init.send_cq = qp->initiator_cq->cq;
    init.recv_cq = qp->receive_cq->cq;
    init.srq = qp->srq != nullptr ? qp->srq->srq : nullptr;
    init.qp_type = IBV_QPT_RC;
    // A depth of 0 is a send- or receive-only QP for NDK (QP-DEPTH-ZERO): verbs wants at least
    // one entry, and the NDK depth is what the posts check.
    init.cap.max_send_wr = std::max<ULONG>(sizes.initiator_depth, 1);
    init.cap.max_recv_wr = qp->srq != nullptr ? 0 : std::max<ULONG>(sizes.receive_depth, 1);
    init.cap.max_send_sge = std::max<ULONG>(sizes.initiator_sge, 1);
    init.cap.max_recv_sge = qp->srq != nullptr ? 0 : std::max<ULONG>(sizes.receive_sge, 1);
    init.cap.max_inline_data = sizes.inline_size;
    qp->qp = ibv_create_qp(pd->pd, &init);
    if (qp->qp == nullptr) {
        NTSTATUS status = errno_status(errno);
        delete qp;
        return status;
    }
    if (int error = to_init(*qp); error != 0) {
        ibv_destroy_qp(qp->qp);
        delete qp;
        return errno_status(error);
    }
    {
        std::lock_guard lock(adapter.mu());
        if (!adapter.exists(qp->receive_cq) || !adapter.exists(qp->initiator_cq)) {
            ibv_destroy_qp(qp->qp);
            delete qp;
            return STATUS_INVALID_PARAMETER;
        }
        qp->depend_on(*pd);
        qp->depend_on(*qp->receive_cq);
        if (qp->initiator_cq != qp->receive_cq)
            qp->depend_on(*qp->initiator_cq);
        if (qp->srq != nullptr)
            qp->depend_on(*qp->srq);
        adapter.qps()[qp->qp->qp_num] = qp;
    }
    return adapter.created(qp, ppNdkQp);
}

} // namespace

NTSTATUS create_qp(NDK_PD *pd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq, PVOID QPContext,
                   ULONG ReceiveQueueDepth, ULONG InitiatorQueueDepth, ULONG MaxReceiveRequestSge,
                   ULONG MaxInitiatorRequestSge, ULONG InlineDataSize, NDK_FN_CREATE_COMPLETION,
                   PVOID, NDK_QP **ppNdkQp)
{
    return make_qp(VPd::from(pd), pReceiveCq, pInitiatorCq, nullptr, QPContext,
                   {ReceiveQueueDepth, InitiatorQueueDepth, MaxReceiveRequestSge,
                    MaxInitiatorRequestSge, InlineDataSize},
                   ppNdkQp);
}

NTSTATUS create_qp_with_srq(NDK_PD *pd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq, NDK_SRQ *pSrq,
                            PVOID QPContext, ULONG InitiatorQueueDepth,
                            ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
                            NDK_FN_CREATE_COMPLETION, PVOID, NDK_QP **ppNdkQp)
{
    if (pSrq == nullptr)
        return STATUS_INVALID_PARAMETER;
    return make_qp(VPd::from(pd), pReceiveCq, pInitiatorCq, pSrq, QPContext,
                   {0, InitiatorQueueDepth, 0, MaxInitiatorRequestSge, InlineDataSize}, ppNdkQp);
}

} // namespace ndk::verbs
