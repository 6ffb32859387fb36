// Queue pair (digest 1.7): creation, the posts, and the data path.  Every post runs the kit's
// inline checks first (docs/semantics.md, POST-CHECKS), then the request joins its queue and
// the QP executes what is released, in order, at once: a Send waits for a receive at the peer,
// a Read or Write copies between the two regions (both in this process).  The completion
// statuses are the soft provider's (docs/semantics.md, DATA-STATUS); an error completion ends
// the connection (QP-ERROR).
#include "loop_objects.hpp"
#include "providers/kit/kit_post_checks.hpp"

#include <algorithm>
#include <cstring>

namespace ndk::loop {

LQp::LQp(LoopAdapter &a, LPd &pd) : NdkObject(a, NdkObjectTypeQp, &kQpDispatch), pd(pd) {}

NTSTATUS create_qp(NDK_PD *ndk_pd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq, PVOID QPContext,
                   ULONG ReceiveQueueDepth, ULONG InitiatorQueueDepth, ULONG MaxReceiveRequestSge,
                   ULONG MaxInitiatorRequestSge, ULONG InlineDataSize, NDK_FN_CREATE_COMPLETION,
                   PVOID, NDK_QP **ppNdkQp)
{
    LPd *pd = static_cast<LPd *>(ndk_pd);
    LoopAdapter &a = pd->adapter();
    kit::QpSizes sizes{ReceiveQueueDepth, InitiatorQueueDepth, MaxReceiveRequestSge,
                       MaxInitiatorRequestSge, InlineDataSize};
    if (NTSTATUS s = kit::check_create_qp(a.info(), sizes, ppNdkQp); s != STATUS_SUCCESS)
        return s;
    std::lock_guard lock(fabric_mu());
    LCq *receive_cq = a.lookup<LCq>(pReceiveCq, NdkObjectTypeCq);
    LCq *initiator_cq = a.lookup<LCq>(pInitiatorCq, NdkObjectTypeCq);
    if (receive_cq == nullptr || initiator_cq == nullptr)
        return STATUS_INVALID_PARAMETER; // docs/semantics.md, QP-OBJECTS
    auto *qp = new LQp(a, *pd);
    qp->set_sizes(sizes);
    qp->receive_cq = receive_cq;
    qp->initiator_cq = initiator_cq;
    qp->qp_context = QPContext;
    qp->depend_on(*pd);
    qp->depend_on(*receive_cq); // CQ -> QP (digest 3.1)
    if (initiator_cq != receive_cq)
        qp->depend_on(*initiator_cq);
    a.adopt(qp);
    *ppNdkQp = qp;
    return STATUS_SUCCESS;
}

// ---- the data path -----------------------------------------------------------------------------

namespace {

struct Span {
    uint8_t *data;
    size_t length;
};
using Spans = std::vector<Span>;

size_t total(const Spans &spans)
{
    size_t n = 0;
    for (const Span &s : spans)
        n += s.length;
    return n;
}

// Copy min(sizes) bytes from the spans `from` into the spans `to`.
void copy(const Spans &to, const Spans &from)
{
    size_t ti = 0, fi = 0, toff = 0, foff = 0;
    while (ti < to.size() && fi < from.size()) {
        size_t n = std::min(to[ti].length - toff, from[fi].length - foff);
        if (n > 0)
            std::memmove(to[ti].data + toff, from[fi].data + foff, n);
        toff += n;
        foff += n;
        if (toff == to[ti].length) { ++ti; toff = 0; }
        if (foff == from[fi].length) { ++fi; foff = 0; }
    }
}

bool inside(const LMr &mr, uint64_t address, uint64_t length)
{
    return address >= mr.base && address - mr.base <= mr.length &&
           length <= mr.length - (address - mr.base);
}

enum class Use { Source, Sink, ReadSink };

// The QP's own SGEs: local tokens of registered regions of its PD, in range, with the access
// the use needs; anything else is STATUS_ACCESS_VIOLATION (DATA-STATUS).
NTSTATUS resolve_local(const LQp &qp, const std::vector<NDK_SGE> &sgl, Use use, Spans &out)
{
    bool sink_flag_needed = !(qp.adapter().info().AdapterFlags &
                              NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED);
    for (const NDK_SGE &sge : sgl) {
        const Fabric::Token *token = Fabric::instance().token(sge.MemoryRegionToken);
        if (token == nullptr || token->remote || &token->mr->pd != &qp.pd)
            return STATUS_ACCESS_VIOLATION;
        const LMr &mr = *token->mr;
        auto address = reinterpret_cast<uintptr_t>(sge.VirtualAddress);
        if (!inside(mr, address, sge.Length) ||
            (use != Use::Source && !(mr.flags & NDK_MR_FLAG_ALLOW_LOCAL_WRITE)) ||
            (use == Use::ReadSink && sink_flag_needed && !(mr.flags & NDK_MR_FLAG_RDMA_READ_SINK)))
            return STATUS_ACCESS_VIOLATION;
        out.push_back({reinterpret_cast<uint8_t *>(address), sge.Length});
    }
    return STATUS_SUCCESS;
}

// The peer's region a Read or Write names: a remote token of the peer's PD with the access;
// a range outside it is STATUS_REMOTE_RESOURCES (digest 1.7, NdkRead).
NTSTATUS resolve_remote(const LQp &peer, UINT32 value, UINT64 address, size_t length, bool write,
                        Span &out)
{
    const Fabric::Token *token = Fabric::instance().token(value);
    if (token == nullptr || !token->remote || &token->mr->pd != &peer.pd)
        return STATUS_ACCESS_VIOLATION;
    const LMr &mr = *token->mr;
    bool allowed = write ? (mr.flags & NDK_MR_FLAG_ALLOW_REMOTE_WRITE) == NDK_MR_FLAG_ALLOW_REMOTE_WRITE
                         : (mr.flags & NDK_MR_FLAG_ALLOW_REMOTE_READ) != 0;
    if (!allowed)
        return STATUS_ACCESS_VIOLATION;
    if (!inside(mr, address, length))
        return STATUS_REMOTE_RESOURCES;
    out = {reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(address)), length};
    return STATUS_SUCCESS;
}

// The statistics' octets and frames (docs/semantics.md, OID-COUNTERS, soft's frame model).
void count(LQp &from, LQp &to, size_t bytes)
{
    uint64_t frames = bytes == 0 ? 1 : (bytes + 4095) / 4096;
    uint64_t octets = bytes + frames * 64;
    auto &out = from.adapter().miniport().counters;
    auto &in = to.adapter().miniport().counters;
    out.RDMAOutOctets += octets;
    out.RDMAOutFrames += frames;
    in.RDMAInOctets += octets;
    in.RDMAInFrames += frames;
}

constexpr NTSTATUS kBlocked = STATUS_PENDING; // a Send with no receive at the peer: it waits

NTSTATUS source_of(const LQp &qp, const WorkRequest &wr, Spans &source)
{
    if (wr.flags & NDK_OP_FLAG_INLINE) {
        source.push_back({const_cast<uint8_t *>(wr.inline_data.data()), wr.inline_data.size()});
        return STATUS_SUCCESS;
    }
    return resolve_local(qp, wr.sgl, Use::Source, source);
}

NTSTATUS execute_send(LQp &qp, const WorkRequest &wr)
{
    LQp &peer = *qp.peer;
    Spans source, sink;
    if (NTSTATUS s = source_of(qp, wr, source); s != STATUS_SUCCESS)
        return s;
    if (peer.receives.empty())
        return kBlocked;
    WorkRequest receive = std::move(peer.receives.front());
    peer.receives.pop_front();
    bool solicited = (wr.flags & NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT) != 0;
    NTSTATUS at_receiver = resolve_local(peer, receive.sgl, Use::Sink, sink);
    if (at_receiver == STATUS_SUCCESS && total(source) > total(sink))
        at_receiver = STATUS_BUFFER_OVERFLOW; // larger than the receive (ND2 table)
    // No region here can be invalidated remotely (no memory windows, no fast registration):
    // the receiver refuses every token of a SendAndInvalidate (digest 1.7).
    if (at_receiver == STATUS_SUCCESS && wr.invalidate)
        at_receiver = STATUS_ACCESS_VIOLATION;
    if (at_receiver != STATUS_SUCCESS) {
        peer.complete(receive, at_receiver, 0, solicited);
        return STATUS_REMOTE_RESOURCES; // an error at the remote QP: ND_REMOTE_ERROR
    }
    copy(sink, source);
    count(qp, peer, total(source));
    peer.complete(receive, STATUS_SUCCESS, static_cast<ULONG>(total(source)), solicited);
    return STATUS_SUCCESS;
}

NTSTATUS execute_rdma(LQp &qp, const WorkRequest &wr)
{
    bool read = wr.type == NdkOperationTypeRead;
    Spans local;
    if (NTSTATUS s = read ? resolve_local(qp, wr.sgl, Use::ReadSink, local) : source_of(qp, wr, local);
        s != STATUS_SUCCESS)
        return s;
    Span remote{};
    if (NTSTATUS s = resolve_remote(*qp.peer, wr.remote_token, wr.remote_address, total(local),
                                    !read, remote);
        s != STATUS_SUCCESS)
        return s;
    if (read) {
        copy(local, {remote});
        count(*qp.peer, qp, remote.length);
    } else {
        copy({remote}, local);
        count(qp, *qp.peer, remote.length);
    }
    return STATUS_SUCCESS;
}

} // namespace

void LQp::complete(const WorkRequest &wr, NTSTATUS status, ULONG bytes, bool solicited)
{
    if (status == STATUS_SUCCESS && (wr.flags & NDK_OP_FLAG_SILENT_SUCCESS))
        return; // digest 2.5: success produces no completion, failure always does
    NDK_RESULT_EX r{};
    r.Status = status;
    r.BytesTransferred = bytes;
    r.QPContext = qp_context;
    r.RequestContext = wr.context;
    r.Type = wr.type;
    (wr.type == NdkOperationTypeReceive ? receive_cq : initiator_cq)->add(r, solicited);
}

void LQp::pump()
{
    while (released > 0 && !initiator.empty() && state == State::Connected) {
        const WorkRequest &wr = initiator.front();
        NTSTATUS status = wr.type == NdkOperationTypeSend         ? execute_send(*this, wr)
                          : wr.type == NdkOperationTypeInvalidate ? STATUS_INVALID_DEVICE_REQUEST
                                                                  : execute_rdma(*this, wr);
        if (status == kBlocked)
            return; // waits for a receive at the peer (receive_posted pumps again)
        WorkRequest done = std::move(initiator.front());
        initiator.pop_front();
        --released;
        complete(done, status);
        if (status != STATUS_SUCCESS) {
            fail_connection();
            return;
        }
    }
}

void LQp::flush()
{
    while (!initiator.empty()) {
        WorkRequest wr = std::move(initiator.front());
        initiator.pop_front();
        complete(wr, STATUS_CANCELLED);
    }
    released = 0;
    while (!receives.empty()) {
        WorkRequest wr = std::move(receives.front());
        receives.pop_front();
        complete(wr, STATUS_CANCELLED);
    }
}

void LQp::fail_connection()
{
    LQp *other = peer;
    state = State::Error;
    flush();
    if (other != nullptr) {
        other->state = State::Error;
        other->flush();
    }
    if (connector != nullptr)
        connector->end_connection(kReasonError);
}

// ---- the posts -------------------------------------------------------------------------------

namespace {

using namespace kit; // the post checks and the flag masks

LQp &from(NDK_QP *qp) { return *static_cast<LQp *>(qp); }

// What every initiator post shares: the kit's checks, `build` (the request's own arguments),
// then the queue.  DEFER holds the request until a post without it or an inline failure
// (digest 3.4).
template <class Build>
NTSTATUS post(NDK_QP *ndk_qp, NDK_OPERATION_TYPE type, PVOID context, ULONG flags, ULONG allowed,
              Build &&build)
{
    LQp &qp = from(ndk_qp);
    std::lock_guard lock(fabric_mu());
    bool connected = qp.state == LQp::State::Connected || qp.state == LQp::State::Error;
    NTSTATUS status = check_initiator_post(
        {cq_in_error(qp), connected, qp.initiator.size(), qp.initiator_depth}, flags, allowed);
    WorkRequest wr;
    wr.type = type;
    wr.context = context;
    wr.flags = flags;
    if (status == STATUS_SUCCESS)
        status = build(qp, wr);
    if (status == STATUS_SUCCESS)
        qp.initiator.push_back(std::move(wr));
    if (qp.state == LQp::State::Error && status == STATUS_SUCCESS) {
        qp.flush(); // after an error completion every request completes CANCELLED (QP-ERROR)
    } else if (status != STATUS_SUCCESS || !(flags & NDK_OP_FLAG_DEFER)) {
        qp.released = qp.initiator.size(); // an inline failure pushes the deferred ones too
        qp.pump();
    }
    return status;
}

// The SGL of a data request: the kit's count and length checks; INLINE bytes taken now.
NTSTATUS take_sgl(const LQp &qp, WorkRequest &wr, const NDK_SGE *sgl, ULONG count, ULONG max_sge)
{
    uint64_t length = 0;
    SglLimits limits{max_sge, qp.adapter().info().MaxTransferLength, qp.inline_size};
    if (NTSTATUS s = check_sgl(sgl, count, wr.flags, limits, &length); s != STATUS_SUCCESS)
        return s;
    if (!(wr.flags & NDK_OP_FLAG_INLINE)) {
        wr.sgl.assign(sgl, sgl + count);
        return STATUS_SUCCESS;
    }
    for (ULONG i = 0; i < count; ++i) { // tokens are ignored (digest 1.7, NDK_SGE)
        if (sgl[i].Length > 0 && sgl[i].VirtualAddress == nullptr)
            return STATUS_INVALID_PARAMETER;
        auto *bytes = static_cast<const uint8_t *>(sgl[i].VirtualAddress);
        wr.inline_data.insert(wr.inline_data.end(), bytes, bytes + sgl[i].Length);
    }
    return STATUS_SUCCESS;
}

NTSTATUS post_send(NDK_QP *qp, PVOID ctx, const NDK_SGE *pSgl, ULONG nSge, ULONG Flags)
{
    return post(qp, NdkOperationTypeSend, ctx, Flags, kSendFlags, [&](LQp &q, WorkRequest &wr) {
        return take_sgl(q, wr, pSgl, nSge, q.initiator_sge);
    });
}

NTSTATUS post_send_and_invalidate(NDK_QP *qp, PVOID ctx, const NDK_SGE *pSgl, ULONG nSge,
                                  ULONG Flags, UINT32 RemoteToken)
{
    // The sender's completion type is Send (digest 1.7).
    return post(qp, NdkOperationTypeSend, ctx, Flags, kSendFlags, [&](LQp &q, WorkRequest &wr) {
        wr.invalidate = true;
        wr.remote_token = RemoteToken;
        return take_sgl(q, wr, pSgl, nSge, q.initiator_sge);
    });
}

NTSTATUS post_read(NDK_QP *qp, PVOID ctx, const NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress,
                   UINT32 RemoteToken, ULONG Flags)
{
    return post(qp, NdkOperationTypeRead, ctx, Flags, kReadFlags, [&](LQp &q, WorkRequest &wr) {
        NDK_ADAPTER_INFO info = q.adapter().info();
        if ((Flags & NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE) &&
            !(info.AdapterFlags & NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED))
            return STATUS_INVALID_PARAMETER; // not flagged by this adapter
        wr.remote_address = RemoteAddress;
        wr.remote_token = RemoteToken;
        return take_sgl(q, wr, pSgl, nSge, std::min(q.initiator_sge, info.MaxReadRequestSge));
    });
}

NTSTATUS post_write(NDK_QP *qp, PVOID ctx, const NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress,
                    UINT32 RemoteToken, ULONG Flags)
{
    return post(qp, NdkOperationTypeWrite, ctx, Flags, kWriteFlags, [&](LQp &q, WorkRequest &wr) {
        wr.remote_address = RemoteAddress;
        wr.remote_token = RemoteToken;
        return take_sgl(q, wr, pSgl, nSge, q.initiator_sge);
    });
}

// Bind and FastRegister name a memory window or a fast-register region, which this example
// cannot create: after the kit's checks, every argument is invalid.
NTSTATUS post_bind(NDK_QP *qp, PVOID ctx, NDK_MR *, NDK_MW *, PVOID, SIZE_T, ULONG Flags)
{
    return post(qp, NdkOperationTypeBind, ctx, Flags, kBindFlags,
                [](LQp &, WorkRequest &) { return STATUS_INVALID_PARAMETER; });
}

NTSTATUS post_fast_register(NDK_QP *qp, PVOID ctx, NDK_MR *, ULONG, const NDK_LOGICAL_ADDRESS *,
                            ULONG, SIZE_T, PVOID, ULONG Flags)
{
    return post(qp, NdkOperationTypeFastRegister, ctx, Flags, kFastRegisterFlags,
                [](LQp &, WorkRequest &) { return STATUS_INVALID_PARAMETER; });
}

// Only a normally registered MR can be named here: the request is accepted and completes
// STATUS_INVALID_DEVICE_REQUEST (digest 1.7: fast-registered MRs only; DATA-STATUS).
NTSTATUS post_invalidate(NDK_QP *qp, PVOID ctx, NDK_OBJECT_HEADER *pNdkMrOrMw, ULONG Flags)
{
    return post(qp, NdkOperationTypeInvalidate, ctx, Flags, kInvalidateFlags,
                [pNdkMrOrMw](LQp &q, WorkRequest &) {
                    return q.adapter().lookup<LMr>(pNdkMrOrMw, NdkObjectTypeMr) != nullptr
                               ? STATUS_SUCCESS
                               : STATUS_INVALID_PARAMETER;
                });
}

NTSTATUS post_receive(NDK_QP *ndk_qp, PVOID ctx, const NDK_SGE *pSgl, ULONG nSge)
{
    LQp &qp = from(ndk_qp);
    std::lock_guard lock(fabric_mu());
    uint64_t length = 0;
    if (NTSTATUS s = check_receive_post(
            {cq_in_error(qp), true, qp.receives.size(), qp.receive_depth}, pSgl, nSge,
            {qp.receive_sge, qp.adapter().info().MaxTransferLength, 0}, &length);
        s != STATUS_SUCCESS)
        return s;
    WorkRequest wr;
    wr.type = NdkOperationTypeReceive;
    wr.context = ctx;
    wr.sgl.assign(pSgl, pSgl + nSge);
    qp.receives.push_back(std::move(wr));
    if (qp.state == LQp::State::Error)
        qp.flush(); // QP-ERROR
    else if (qp.peer != nullptr)
        qp.peer->pump(); // a Send may be waiting for it
    return STATUS_SUCCESS;
}

VOID flush(NDK_QP *qp)
{
    std::lock_guard lock(fabric_mu());
    from(qp).flush(); // the connection stays usable (docs/semantics.md, QP-FLUSH)
}

} // namespace

const NDK_QP_DISPATCH kQpDispatch = {
    .NdkCloseQp = close_object<LQp>,
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

} // namespace ndk::loop
