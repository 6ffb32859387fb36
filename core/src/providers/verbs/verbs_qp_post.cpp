// QP work requests (digest 1.7): the inline checks of docs/semantics.md (POST-CHECKS), then
// one ibv_post_send / ibv_post_recv.  DEFER is a hint (digest 3.4) that verbs has no use for:
// every request goes to the device at once.
#include "verbs_objects.hpp"
#include "providers/kit/kit_post_checks.hpp"

#include <algorithm>
#include <cerrno>

namespace ndk::verbs {
namespace {

using namespace kit; // the post checks and their flag masks

struct Post {
    ibv_send_wr wr{};
    std::vector<ibv_sge> sges;
    Request request;
};

// The SGL of a data request: count, total and inline limits, converted to ibv_sge.
NTSTATUS take_sgl(VQp &qp, Post &post, ULONG flags, const NDK_SGE *sgl, ULONG count,
                  ULONG max_sge)
{
    uint64_t total = 0;
    SglLimits limits{max_sge, qp.adapter().info().MaxTransferLength, qp.inline_size};
    if (NTSTATUS status = check_sgl(sgl, count, flags, limits, &total); status != STATUS_SUCCESS)
        return status;
    post.sges.resize(count);
    for (ULONG i = 0; i < count; ++i)
        post.sges[i] = {reinterpret_cast<uint64_t>(sgl[i].VirtualAddress), sgl[i].Length,
                        sgl[i].MemoryRegionToken}; // the local token is the lkey
    post.wr.sg_list = post.sges.data();
    post.wr.num_sge = static_cast<int>(count);
    post.request.bytes = static_cast<ULONG>(total);
    return STATUS_SUCCESS;
}

// Everything an initiator post shares: a usable QP, allowed flags, room in the queue; `build`
// fills the work request; then it is posted.
template <class Build>
NTSTATUS post_initiator(NDK_QP *ndk_qp, NDK_OPERATION_TYPE type, PVOID context, ULONG flags,
                        ULONG allowed, Build &&build)
{
    VQp &qp = *VQp::from(ndk_qp);
    std::lock_guard lock(qp.adapter().mu());
    if (NTSTATUS status = check_initiator_post({cq_in_error(qp), qp.state == VQp::State::Connected,
                                                qp.sends.pending.size(), qp.initiator_depth},
                                               flags, allowed);
        status != STATUS_SUCCESS)
        return status;
    Post post;
    post.request.context = context;
    post.request.type = type;
    if (NTSTATUS status = build(qp, post); status != STATUS_SUCCESS)
        return status;
    ibv_send_wr &wr = post.wr;
    // Silent: a completion only on failure (digest 2.5).  A Read is signalled to the device
    // all the same: siw completes a later Send before an earlier Read's response arrives, and
    // only the Read's own completion says when it finished (VERBS-SQ-ORDER; its success is
    // not reported).
    post.request.silent = (flags & NDK_OP_FLAG_SILENT_SUCCESS) != 0;
    post.request.signaled = !post.request.silent || wr.opcode == IBV_WR_RDMA_READ;
    if (post.request.signaled)
        wr.send_flags |= IBV_SEND_SIGNALED;
    if (flags & NDK_OP_FLAG_READ_FENCE)
        wr.send_flags |= IBV_SEND_FENCE;
    if (flags & NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT)
        wr.send_flags |= IBV_SEND_SOLICITED;
    if (flags & NDK_OP_FLAG_INLINE)
        wr.send_flags |= IBV_SEND_INLINE;
    wr.wr_id = qp.sends.add(post.request);
    ibv_send_wr *bad = nullptr;
    if (int error = ibv_post_send(qp.qp, &wr, &bad); error != 0) {
        qp.sends.pending.erase(wr.wr_id);
        return error == ENOMEM ? STATUS_NO_MORE_ENTRIES : errno_status(error);
    }
    return STATUS_SUCCESS;
}

NTSTATUS post_send(NDK_QP *qp, PVOID RequestContext, const NDK_SGE *pSgl, ULONG nSge, ULONG Flags)
{
    return post_initiator(qp, NdkOperationTypeSend, RequestContext, Flags, kSendFlags,
                          [&](VQp &q, Post &p) {
                              p.wr.opcode = IBV_WR_SEND;
                              return take_sgl(q, p, Flags, pSgl, nSge, q.initiator_sge);
                          });
}

NTSTATUS post_send_and_invalidate(NDK_QP *qp, PVOID RequestContext, const NDK_SGE *pSgl,
                                  ULONG nSge, ULONG Flags, UINT32 RemoteToken)
{
    // The sender's completion type is Send (digest 1.7).
    return post_initiator(qp, NdkOperationTypeSend, RequestContext, Flags, kSendFlags,
                          [&](VQp &q, Post &p) {
                              if (window_rkey_unbound(RemoteToken))
                                  return STATUS_INVALID_DEVICE_REQUEST; // VERBS-MW-GUARD
                              p.wr.opcode = IBV_WR_SEND_WITH_INV;
                              p.wr.invalidate_rkey = RemoteToken;
                              // libsiw (rdma-core 44) sends wr.rdma.rkey as the Invalidate
                              // STag, not invalidate_rkey (VERBS-SIW-SEND-INVALIDATE); other
                              // devices ignore wr.rdma for a Send.
                              p.wr.wr.rdma.rkey = RemoteToken;
                              window_rkey_invalidated(RemoteToken);
                              return take_sgl(q, p, Flags, pSgl, nSge, q.initiator_sge);
                          });
}

NTSTATUS post_read(NDK_QP *qp, PVOID RequestContext, const NDK_SGE *pSgl, ULONG nSge,
                   UINT64 RemoteAddress, UINT32 RemoteToken, ULONG Flags)
{
    return post_initiator(qp, NdkOperationTypeRead, RequestContext, Flags, kReadFlags,
                          [&](VQp &q, Post &p) {
                              // Read with local invalidate is not reported in AdapterFlags:
                              // verbs has no such work request.
                              if (Flags & NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE)
                                  return STATUS_INVALID_PARAMETER;
                              p.wr.opcode = IBV_WR_RDMA_READ;
                              p.wr.wr.rdma.remote_addr = RemoteAddress;
                              p.wr.wr.rdma.rkey = RemoteToken;
                              ULONG max = std::min(q.initiator_sge,
                                                   q.adapter().info().MaxReadRequestSge);
                              return take_sgl(q, p, Flags, pSgl, nSge, max);
                          });
}

NTSTATUS post_write(NDK_QP *qp, PVOID RequestContext, const NDK_SGE *pSgl, ULONG nSge,
                    UINT64 RemoteAddress, UINT32 RemoteToken, ULONG Flags)
{
    return post_initiator(qp, NdkOperationTypeWrite, RequestContext, Flags, kWriteFlags,
                          [&](VQp &q, Post &p) {
                              p.wr.opcode = IBV_WR_RDMA_WRITE;
                              p.wr.wr.rdma.remote_addr = RemoteAddress;
                              p.wr.wr.rdma.rkey = RemoteToken;
                              return take_sgl(q, p, Flags, pSgl, nSge, q.initiator_sge);
                          });
}

NTSTATUS post_bind(NDK_QP *qp, PVOID RequestContext, NDK_MR *pMr, NDK_MW *pMw,
                   PVOID VirtualAddress, SIZE_T Length, ULONG Flags)
{
    return post_initiator(
        qp, NdkOperationTypeBind, RequestContext, Flags, kBindFlags, [&](VQp &q, Post &p) {
            VerbsAdapter &adapter = q.adapter();
            VMr *mr = adapter.lookup<VMr>(pMr, NdkObjectTypeMr);
            VMw *mw = adapter.lookup<VMw>(pMw, NdkObjectTypeMw);
            if (mr == nullptr || mw == nullptr || mr->mr == nullptr || &mr->pd != &q.pd ||
                &mw->pd != &q.pd)
                return STATUS_INVALID_PARAMETER;
            if (mw->mw == nullptr)
                return STATUS_INSUFFICIENT_RESOURCES; // its replacement failed (VMw::release_qp)
            bool remote_write =
                (Flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
            if (remote_write && !(mr->flags & NDK_MR_FLAG_ALLOW_LOCAL_WRITE))
                return STATUS_ACCESS_VIOLATION; // digest 1.7
            auto address = reinterpret_cast<uintptr_t>(VirtualAddress);
            auto start = reinterpret_cast<uintptr_t>(mr->mr->addr);
            if (address == 0 || address < start || Length > mr->mr->length ||
                address - start > mr->mr->length - Length)
                return STATUS_INVALID_PARAMETER;
            p.wr.opcode = IBV_WR_BIND_MW;
            p.wr.bind_mw.mw = mw->mw;
            // A type 2 window gets a new rkey per bind; the token is valid once NdkBind
            // returns (digest 1.5).
            p.wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
            p.wr.bind_mw.bind_info.mr = mr->mr;
            p.wr.bind_mw.bind_info.addr = address;
            p.wr.bind_mw.bind_info.length = Length;
            p.wr.bind_mw.bind_info.mw_access_flags =
                ((Flags & NDK_OP_FLAG_ALLOW_REMOTE_READ) ? IBV_ACCESS_REMOTE_READ : 0) |
                (remote_write ? IBV_ACCESS_REMOTE_WRITE : 0);
            window_rkey_forget(mw->rkey);
            mw->rkey = p.wr.bind_mw.rkey;
            window_rkey_bound(mw->rkey, true);
            p.request.bind = mw;
            p.request.rkey = mw->rkey;
            mw->bound_through_qp(q);
            return STATUS_SUCCESS;
        });
}

// NdkFastRegister needs IB_WR_REG_MR, a kernel verb; no MR can be initialized for it either.
NTSTATUS post_fast_register(NDK_QP *, PVOID, NDK_MR *, ULONG, const NDK_LOGICAL_ADDRESS *, ULONG,
                            SIZE_T, PVOID, ULONG)
{
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS post_invalidate(NDK_QP *qp, PVOID RequestContext, NDK_OBJECT_HEADER *pNdkMrOrMw,
                         ULONG Flags)
{
    return post_initiator(qp, NdkOperationTypeInvalidate, RequestContext, Flags, kInvalidateFlags,
                          [&](VQp &q, Post &p) {
                              VerbsAdapter &adapter = q.adapter();
                              VMr *mr = adapter.lookup<VMr>(pNdkMrOrMw, NdkObjectTypeMr);
                              VMw *mw = adapter.lookup<VMw>(pNdkMrOrMw, NdkObjectTypeMw);
                              if (mr == nullptr && mw == nullptr)
                                  return STATUS_INVALID_PARAMETER;
                              if (mw != nullptr && window_rkey_unbound(mw->rkey))
                                  return STATUS_INVALID_DEVICE_REQUEST; // VERBS-MW-GUARD
                              if (mw != nullptr)
                                  window_rkey_bound(mw->rkey, false);
                              p.wr.opcode = IBV_WR_LOCAL_INV;
                              // An MR was never fast-registered here: the device reports the
                              // invalidate of its rkey as it sees fit.
                              p.wr.invalidate_rkey = mw != nullptr ? mw->rkey
                                                     : mr->mr != nullptr ? mr->mr->rkey : 0;
                              p.request.bind = mw;
                              p.request.invalidate = true;
                              return STATUS_SUCCESS;
                          });
}

NTSTATUS post_receive(NDK_QP *ndk_qp, PVOID RequestContext, const NDK_SGE *pSgl, ULONG nSge)
{
    VQp &qp = *VQp::from(ndk_qp);
    std::lock_guard lock(qp.adapter().mu());
    if (qp.srq != nullptr)
        return STATUS_INVALID_DEVICE_REQUEST; // its receives go to the SRQ (QP-SRQ-RECEIVE)
    uint64_t total = 0;
    if (NTSTATUS status = check_receive_post(
            {cq_in_error(qp), true, qp.receives.pending.size(), qp.receive_depth}, pSgl, nSge,
            {qp.receive_sge, qp.adapter().info().MaxTransferLength, 0}, &total);
        status != STATUS_SUCCESS)
        return status;
    std::vector<ibv_sge> sges(nSge);
    for (ULONG i = 0; i < nSge; ++i)
        sges[i] = {reinterpret_cast<uint64_t>(pSgl[i].VirtualAddress), pSgl[i].Length,
                   pSgl[i].MemoryRegionToken};
    Request request;
    request.context = RequestContext;
    request.type = NdkOperationTypeReceive;
    // On iWARP a QP whose connection ended is in the error state: the stream is gone, and siw
    // moves the QP there when it ends, with no completion to say so (and its ibv_query_qp
    // does not report the state): VERBS-POST-AFTER-END.
    if (qp.state == VQp::State::Disconnected && qp.adapter().device().iwarp)
        qp.in_error = true;
    if (qp.in_error) {
        // VERBS-POST-IN-ERROR: rxe never completes a receive posted on a QP in the error
        // state, siw's user-space queue is flushed only on the transition into it; NDK
        // cancels it (digest 1.7).  Once the device has flushed what came before (results
        // of a queue leave in order), the provider completes it CANCELLED itself.
        qp.receive_cq->drain_device();
        if (qp.receives.pending.empty()) {
            qp.receive_cq->add_local(cancelled_result(qp, request));
            return STATUS_SUCCESS;
        }
    }
    ibv_recv_wr wr{};
    wr.wr_id = qp.receives.add(request);
    wr.sg_list = sges.data();
    wr.num_sge = static_cast<int>(nSge);
    ibv_recv_wr *bad = nullptr;
    if (int error = ibv_post_recv(qp.qp, &wr, &bad); error != 0) {
        qp.receives.pending.erase(wr.wr_id);
        return error == ENOMEM ? STATUS_NO_MORE_ENTRIES : errno_status(error);
    }
    return STATUS_SUCCESS;
}

VOID flush(NDK_QP *ndk_qp)
{
    VQp &qp = *VQp::from(ndk_qp);
    std::lock_guard lock(qp.adapter().mu());
    qp.flush(); // every queued request completes IBV_WC_WR_FLUSH_ERR = STATUS_CANCELLED
}

NTSTATUS close_qp(NDK_OBJECT_HEADER *header, NDK_FN_CLOSE_COMPLETION completion, PVOID context)
{
    return VQp::from(reinterpret_cast<NDK_QP *>(header))->close(completion, context);
}

} // namespace

const NDK_QP_DISPATCH kQpDispatch = {
    .NdkCloseQp = close_qp,
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

} // namespace ndk::verbs
