#include "soft_qp_post.hpp"

#include "soft_memory.hpp"
#include "soft_qp_complete.hpp"
#include "soft_transfer.hpp"
#include "providers/kit/kit_post_checks.hpp"

#include <cstring>
#include <mutex>
#include <shared_mutex>

namespace ndk::soft {
namespace {

using namespace kit; // the flag masks of the post checks

// Digest 3.4: on an inline failure the provider must push every earlier deferred request.
NTSTATUS fail_inline(SoftQp &qp, NTSTATUS status, Hold hold)
{
    if (qp.released < qp.initiator.size()) {
        qp.released = qp.initiator.size();
        kick(qp, hold);
    }
    return status;
}

// Run `post` with the locks a post needs (soft_wire_lock.hpp): a request that changes memory
// access takes the wire lock exclusive; a send, write, read or receive takes it shared plus
// the QP's connection lock, so connections on other threads go on meanwhile.
template <class Post>
NTSTATUS with_post_locks(SoftQp &qp, Hold hold, Post &&post)
{
    if (hold == Hold::Exclusive) {
        std::lock_guard wire(qp.adapter().mu());
        return post();
    }
    std::shared_lock wire(qp.adapter().mu());
    std::lock_guard connection(qp.connection_mu());
    return post();
}

// A queued Bind, FastRegister or Invalidate names an MR or MW: its close pends until the
// request completes (digest 3.1: "a close stays pending until all pending requests on the
// object are completed"); complete_initiator releases them.  Found by the walker: an MR closed
// while its deferred FastRegister was queued, then executed on the freed MR.  A Send, Write or
// Read holds the MRs its SGL names the same way, and keeps them from deregistration
// (SoftMr::hold_for_request, MR-IN-USE); inline data was copied at the post and holds nothing.
void hold_objects(SoftQp &qp, WorkRequest &wr)
{
    if (wr.mr != nullptr)
        wr.mr->add_dependent();
    if (wr.mw != nullptr)
        wr.mw->add_dependent();
    if (wr.flags & NDK_OP_FLAG_INLINE)
        return;
    for (const NDK_SGE &sge : wr.sgl) {
        SoftObject *owner = token_owner(qp.adapter(), sge.MemoryRegionToken, false);
        if (owner == nullptr || owner->type() != NdkObjectTypeMr)
            continue; // a logical address, or a token the execution refuses
        auto *mr = static_cast<SoftMr *>(owner);
        mr->hold_for_request();
        wr.held_mrs.push_back(mr);
    }
}

// Everything an initiator post shares: a usable QP, allowed flags, room in the queue; then `build` fills the request (returning an inline status) and it is queued.
template <class Build>
NTSTATUS queue_initiator(SoftQp &qp, Hold hold, NDK_OPERATION_TYPE type, PVOID context,
                         ULONG flags, ULONG allowed, Build &build)
{
    bool connected = qp.state != SoftQp::State::Idle && qp.state != SoftQp::State::Disconnected;
    // flag_check=completion: an undocumented flag bit is judged when the request executes.
    bool bad_flags = (flags & ~allowed) != 0 && qp.adapter().knobs().flag_check_at_completion();
    if (NTSTATUS status = check_initiator_post(
            {cq_in_error(qp), connected, qp.initiator.size(), qp.initiator_depth}, flags,
            bad_flags ? allowed | flags : allowed);
        status != STATUS_SUCCESS)
        return fail_inline(qp, status, hold);
    WorkRequest &wr = qp.initiator.next_slot(); // queued only when it is whole (commit)
    wr.type = type;
    wr.context = context;
    wr.flags = flags;
    if (bad_flags) // ND2 QP::Send "bad flags" (digest 4.2), found at execution
        wr.refused = STATUS_INVALID_PARAMETER;
    if (NTSTATUS status = build(qp, wr); status != STATUS_SUCCESS)
        return fail_inline(qp, status, hold);
    hold_objects(qp, wr);
    qp.initiator.commit();
    if (qp.state == SoftQp::State::Error) {
        flush_qp(qp); // ND2: after an error completion every request completes CANCELLED
        return STATUS_SUCCESS;
    }
    if (!(flags & NDK_OP_FLAG_DEFER)) {
        qp.released = qp.initiator.size(); // the end of a deferred chain (digest 3.4)
        kick(qp, hold);
    }
    return STATUS_SUCCESS;
}

// `hold`: Exclusive for a request that changes memory access (changes_memory_access).
template <class Build>
NTSTATUS post_initiator(NDK_QP *ndk_qp, Hold hold, NDK_OPERATION_TYPE type, PVOID context,
                        ULONG flags, ULONG allowed, Build &&build)
{
    SoftQp &qp = *SoftQp::from(ndk_qp);
    return with_post_locks(qp, hold, [&] { return queue_initiator(qp, hold, type, context, flags,
                                                                  allowed, build); });
}

// The SGL of a data request: SGE count, total length, and INLINE data copied now.
NTSTATUS take_sgl(SoftQp &qp, WorkRequest &wr, const NDK_SGE *sgl, ULONG count, ULONG max_sge)
{
    uint64_t total = 0;
    // sge_check=completion: the SGE count is judged when the request executes (execute()).
    bool overrun = count > max_sge && !(wr.flags & NDK_OP_FLAG_INLINE) &&
                   qp.adapter().knobs().sge_check_at_completion();
    if (overrun && wr.refused == STATUS_SUCCESS) // ND2: DATA_OVERRUN, "the SGEs reference
        wr.refused = STATUS_DATA_OVERRUN;        // more than the adapter can send"
    SglLimits limits{overrun ? count : max_sge, qp.adapter().knobs().data_path().max_transfer(),
                     qp.inline_size};
    if (NTSTATUS status = check_sgl(sgl, count, wr.flags, limits, &total); status != STATUS_SUCCESS)
        return status;
    if (wr.flags & NDK_OP_FLAG_INLINE) {
        // The bytes are taken now; tokens are ignored (digest 1.7, NDK_SGE).
        wr.inline_data.resize(total);
        size_t at = 0;
        for (ULONG i = 0; i < count; ++i) {
            if (sgl[i].Length > 0 && sgl[i].VirtualAddress == nullptr)
                return STATUS_INVALID_PARAMETER;
            if (sgl[i].Length > 0)
                std::memcpy(wr.inline_data.data() + at, sgl[i].VirtualAddress, sgl[i].Length);
            at += sgl[i].Length;
        }
        return STATUS_SUCCESS;
    }
    wr.sgl.assign(sgl, sgl + count);
    return STATUS_SUCCESS;
}

} // namespace

NTSTATUS post_send(NDK_QP *qp, PVOID RequestContext, const NDK_SGE *pSgl, ULONG nSge, ULONG Flags)
{
    return post_initiator(
        qp, Hold::Shared, NdkOperationTypeSend, RequestContext, Flags, kSendFlags,
        [&](SoftQp &q, WorkRequest &wr) { return take_sgl(q, wr, pSgl, nSge, q.initiator_sge); });
}

NTSTATUS post_send_and_invalidate(NDK_QP *qp, PVOID RequestContext, const NDK_SGE *pSgl,
                                  ULONG nSge, ULONG Flags, UINT32 RemoteToken)
{
    // The sender's completion type is Send (digest 1.7).
    return post_initiator(qp, Hold::Exclusive, NdkOperationTypeSend, RequestContext, Flags,
                          kSendFlags,
                          [&](SoftQp &q, WorkRequest &wr) {
                              wr.invalidate_remote = true;
                              wr.remote_token = RemoteToken;
                              return take_sgl(q, wr, pSgl, nSge, q.initiator_sge);
                          });
}

NTSTATUS post_read(NDK_QP *qp, PVOID RequestContext, const NDK_SGE *pSgl, ULONG nSge,
                   UINT64 RemoteAddress, UINT32 RemoteToken, ULONG Flags)
{
    // A read that invalidates its sink changes memory access (changes_memory_access).
    Hold hold = Flags & NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE ? Hold::Exclusive : Hold::Shared;
    return post_initiator(qp, hold, NdkOperationTypeRead, RequestContext, Flags, kReadFlags,
                          [&](SoftQp &q, WorkRequest &wr) {
                              const DataPathKnobs &knobs = q.adapter().knobs().data_path();
                              if ((Flags & NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE) &&
                                  (!knobs.has_flag(
                                       NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED) ||
                                   nSge == 0))
                                  return STATUS_INVALID_PARAMETER;
                              wr.remote_address = RemoteAddress;
                              wr.remote_token = RemoteToken;
                              ULONG max = std::min(q.initiator_sge, knobs.max_read_sge());
                              return take_sgl(q, wr, pSgl, nSge, max);
                          });
}

NTSTATUS post_write(NDK_QP *qp, PVOID RequestContext, const NDK_SGE *pSgl, ULONG nSge,
                    UINT64 RemoteAddress, UINT32 RemoteToken, ULONG Flags)
{
    return post_initiator(qp, Hold::Shared, NdkOperationTypeWrite, RequestContext, Flags,
                          kWriteFlags,
                          [&](SoftQp &q, WorkRequest &wr) {
                              wr.remote_address = RemoteAddress;
                              wr.remote_token = RemoteToken;
                              return take_sgl(q, wr, pSgl, nSge, q.initiator_sge);
                          });
}

NTSTATUS post_bind(NDK_QP *qp, PVOID RequestContext, NDK_MR *pMr, NDK_MW *pMw,
                   PVOID VirtualAddress, SIZE_T Length, ULONG Flags)
{
    return post_initiator(
        qp, Hold::Exclusive, NdkOperationTypeBind, RequestContext, Flags, kBindFlags,
        [&](SoftQp &q, WorkRequest &wr) {
            SoftAdapter &adapter = q.adapter();
            SoftMr *mr = adapter.lookup<SoftMr>(pMr, NdkObjectTypeMr);
            SoftMw *mw = adapter.lookup<SoftMw>(pMw, NdkObjectTypeMw);
            if (mr == nullptr || mw == nullptr || mr->fast_register || !mr->registered ||
                mr->pd != q.pd || mw->pd != q.pd)
                return STATUS_INVALID_PARAMETER;
            // A write-enabled window needs an MR that allows local write (digest 1.7).
            if ((Flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == NDK_OP_FLAG_ALLOW_REMOTE_WRITE &&
                !(mr->flags & NDK_MR_FLAG_ALLOW_LOCAL_WRITE))
                return STATUS_ACCESS_VIOLATION;
            auto address = reinterpret_cast<uintptr_t>(VirtualAddress);
            // Inside the MR's range; an index, never zero-based (digest 1.7).
            if (address == 0 || address < mr->address || Length > mr->length ||
                address - mr->address > mr->length - Length ||
                Length > adapter.knobs().data_path().max_window())
                return STATUS_INVALID_PARAMETER;
            wr.mr = mr;
            wr.mw = mw;
            wr.address = address;
            wr.length = Length;
            // The window's token is valid once NdkBind returns (digest 1.5).
            if (mw->bound)
                return STATUS_SUCCESS; // the execution reports INVALID_DEVICE_REQUEST
            mw->remote_token = adapter.tokens().issue(mw->token_slot);
            return STATUS_SUCCESS;
        });
}

NTSTATUS post_fast_register(NDK_QP *qp, PVOID RequestContext, NDK_MR *pMr,
                            ULONG AdapterPageCount, const NDK_LOGICAL_ADDRESS *AdapterPageArray,
                            ULONG FBO, SIZE_T Length, PVOID BaseVirtualAddress, ULONG Flags)
{
    return post_initiator(
        qp, Hold::Exclusive, NdkOperationTypeFastRegister, RequestContext, Flags,
        kFastRegisterFlags,
        [&](SoftQp &q, WorkRequest &wr) {
            SoftMr *mr = q.adapter().lookup<SoftMr>(pMr, NdkObjectTypeMr);
            if (mr == nullptr || !mr->fast_register || !mr->initialized || mr->pd != q.pd)
                return STATUS_INVALID_PARAMETER;
            // Remote access needs an MR initialized with RemoteAccess (digest 1.7).
            // ALLOW_REMOTE_WRITE (0x30) includes the ALLOW_LOCAL_WRITE bit: compare whole.
            bool remote = (Flags & NDK_OP_FLAG_ALLOW_REMOTE_READ) ||
                          (Flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
            if (remote && !mr->remote_access)
                return STATUS_ACCESS_VIOLATION;
            auto base = reinterpret_cast<uintptr_t>(BaseVirtualAddress);
            uint64_t span = uint64_t{AdapterPageCount} * NDK_PAGE_SIZE;
            // BaseVirtualAddress = FBO + n * PAGE_SIZE; Length <= pages * PAGE_SIZE - FBO.
            if (AdapterPageCount == 0 || AdapterPageCount > mr->page_count ||
                AdapterPageArray == nullptr || FBO >= NDK_PAGE_SIZE ||
                base % NDK_PAGE_SIZE != FBO || Length == 0 || Length > span - FBO)
                return STATUS_INVALID_PARAMETER;
            wr.mr = mr;
            wr.address = base;
            wr.length = Length;
            wr.fbo = FBO;
            wr.pages.reserve(AdapterPageCount);
            for (ULONG i = 0; i < AdapterPageCount; ++i)
                wr.pages.push_back(static_cast<uint64_t>(AdapterPageArray[i].QuadPart));
            return STATUS_SUCCESS;
        });
}

NTSTATUS post_invalidate(NDK_QP *qp, PVOID RequestContext, NDK_OBJECT_HEADER *pNdkMrOrMw,
                         ULONG Flags)
{
    return post_initiator(qp, Hold::Exclusive, NdkOperationTypeInvalidate, RequestContext, Flags,
                          kInvalidateFlags,
                          [&](SoftQp &q, WorkRequest &wr) {
                              SoftAdapter &adapter = q.adapter();
                              wr.mr = adapter.lookup<SoftMr>(pNdkMrOrMw, NdkObjectTypeMr);
                              wr.mw = adapter.lookup<SoftMw>(pNdkMrOrMw, NdkObjectTypeMw);
                              if (wr.mr == nullptr && wr.mw == nullptr)
                                  return STATUS_INVALID_PARAMETER;
                              return STATUS_SUCCESS;
                          });
}

NTSTATUS post_receive(NDK_QP *ndk_qp, PVOID RequestContext, const NDK_SGE *pSgl, ULONG nSge)
{
    SoftQp &qp = *SoftQp::from(ndk_qp);
    SoftAdapter &adapter = qp.adapter();
    if (qp.srq != nullptr)
        return STATUS_INVALID_DEVICE_REQUEST; // receives go to the SRQ of this QP
    std::shared_lock wire(adapter.mu());
    std::lock_guard connection(qp.connection_mu());
    uint64_t total = 0;
    if (NTSTATUS status = check_receive_post(
            {cq_in_error(qp), true, qp.receives.size(), qp.receive_depth}, pSgl, nSge,
            {qp.receive_sge, adapter.knobs().data_path().max_transfer(), 0}, &total);
        status != STATUS_SUCCESS)
        return status;
    ReceiveRequest &rr = qp.receives.next_slot();
    rr.context = RequestContext;
    rr.assign_sgl(pSgl, nSge);
    qp.receives.commit();
    if (qp.state == SoftQp::State::Error) {
        flush_qp(qp);
        return STATUS_SUCCESS;
    }
    receive_posted(qp, Hold::Shared);
    return STATUS_SUCCESS;
}

} // namespace ndk::soft
