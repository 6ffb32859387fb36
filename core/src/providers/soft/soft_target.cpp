#include "soft_target.hpp"

#include "soft_memory.hpp"

namespace ndk::soft {
namespace {

constexpr ULONG kFramePayload = 4096; // payload bytes per counted frame
constexpr ULONG kFrameOverhead = 64;  // L2 + transport header bytes per frame (digest 3.7)

struct Frames {
    uint64_t frames, octets;
};

Frames frames_for(size_t bytes)
{
    uint64_t frames = bytes == 0 ? 1 : (bytes + kFramePayload - 1) / kFramePayload;
    return {frames, bytes + frames * kFrameOverhead};
}

// The next receive for an incoming send, from the QP's SRQ or its own receive queue, or
// nullptr.  It is consumed; the pointer stays valid until the next receive is posted to that
// queue, which cannot happen while the connection's lock is held (RequestQueue keeps the slot).
ReceiveRequest *take_receive(SoftQp &qp)
{
    if (qp.srq == nullptr) { // under the connection's lock
        if (qp.receives.empty())
            return nullptr;
        ReceiveRequest *rr = &qp.receives.front();
        qp.receives.pop_front();
        return rr;
    }
    SoftSrq &srq = *qp.srq; // shared by connections that may be taking from it right now
    std::lock_guard lock(srq.take_mu);
    if (srq.receives.empty())
        return nullptr;
    ReceiveRequest *rr = &srq.receives.front();
    srq.receives.pop_front();
    srq_check_threshold(srq);
    return rr;
}

// Invalidate the remote token a SendAndInvalidate names at the receiver.  False when the
// token is not a fast-registered MR or bound MW of the receiver's PD (digest 1.7: the
// receiver must then abort the connection).
bool invalidate_remote_token(SoftQp &receiver, UINT32 token)
{
    SoftObject *owner = token_owner(receiver.adapter(), token, true);
    if (owner == nullptr)
        return false;
    if (owner->type() == NdkObjectTypeMw) {
        auto *mw = static_cast<SoftMw *>(owner);
        if (!mw->bound || mw->pd != receiver.pd)
            return false;
        unbind_window(*mw);
        return true;
    }
    auto *mr = static_cast<SoftMr *>(owner);
    if (!mr->fast_register || !mr->mapped || mr->pd != receiver.pd)
        return false;
    mr->mapped = false;
    return true;
}

// The target's part of an RDMA Write (`write`) or Read Request: the tagged range resolved
// against the target's own MR/MW table, then `move` copies the bytes in or out.
template <class Move>
NTSTATUS arrive_tagged(SoftQp &target, UINT32 token, UINT64 address, size_t bytes, bool write,
                       Move &&move)
{
    Spans &spans = target.incoming_spans;
    spans.clear();
    if (NTSTATUS s = resolve_remote(target, token, address, bytes, write, spans);
        s != STATUS_SUCCESS)
        return s;
    if (!move(spans))
        return STATUS_CONNECTION_ABORTED; // the initiator went away mid-transfer
    return STATUS_SUCCESS;
}

} // namespace

void complete_receive(SoftQp &qp, const ReceiveRequest &rr, NTSTATUS status, ULONG bytes,
                      bool solicited, std::optional<UINT32> invalidated)
{
    post_result(*qp.receive_cq, status, solicited, [&](NDK_RESULT_EX &r) {
        r.QPContext = qp.context;
        r.RequestContext = rr.context;
        r.Type = NdkOperationTypeReceive;
        r.BytesTransferred = bytes;
        if (invalidated) {
            r.Type = NdkOperationTypeReceiveAndInvalidate;
            r.TypeSpecificCompletionOutput = *invalidated; // digest 2.3
        }
    });
}

LocalPayload::LocalPayload(std::span<const Span> spans) : spans_(spans), length_(total_length(spans)) {}

bool LocalPayload::copy_to(const Spans &sink)
{
    copy_spans(sink, spans_);
    return true;
}

bool LocalPayload::copy_from(const Spans &source)
{
    copy_spans(spans_, source);
    return true;
}

Answer arrive_send(SoftQp &target, PayloadSource &payload, bool solicited,
                        std::optional<UINT32> invalidate)
{
    ReceiveRequest *rr = take_receive(target);
    if (rr == nullptr)
        return {.no_receive = true}; // receiver not ready: the initiator waits
    Spans &sink = target.incoming_spans;
    sink.clear();
    NTSTATUS at_receiver = resolve_local(target, rr->sgl(), LocalAccess::Write, sink);
    size_t bytes = payload.length();
    if (at_receiver == STATUS_SUCCESS && bytes > total_length(sink))
        at_receiver = STATUS_BUFFER_OVERFLOW; // larger than the posted receive (ND2 table)
    if (at_receiver == STATUS_SUCCESS && invalidate &&
        !invalidate_remote_token(target, *invalidate))
        at_receiver = STATUS_ACCESS_VIOLATION;
    if (at_receiver == STATUS_SUCCESS && !payload.copy_to(sink))
        at_receiver = STATUS_CONNECTION_ABORTED; // the initiator went away mid-transfer
    if (at_receiver != STATUS_SUCCESS) {
        complete_receive(target, *rr, at_receiver, 0, solicited);
        // The send caused an error on the remote QP: ND_REMOTE_ERROR, the same number as
        // STATUS_REMOTE_RESOURCES (digest 4.1).
        return {.status = STATUS_REMOTE_RESOURCES, .at_target = at_receiver};
    }
    count_in(target, bytes);
    complete_receive(target, *rr, STATUS_SUCCESS, static_cast<ULONG>(bytes), solicited,
                     invalidate);
    return {};
}

NTSTATUS arrive_write(SoftQp &target, UINT32 token, UINT64 address, PayloadSource &payload)
{
    size_t bytes = payload.length();
    NTSTATUS status = arrive_tagged(target, token, address, bytes, true,
                                    [&](const Spans &sink) { return payload.copy_to(sink); });
    if (status == STATUS_SUCCESS)
        count_in(target, bytes);
    return status;
}

NTSTATUS arrive_read(SoftQp &target, UINT32 token, UINT64 address, PayloadSink &sink)
{
    size_t bytes = sink.length();
    NTSTATUS status = arrive_tagged(target, token, address, bytes, false,
                                    [&](const Spans &source) { return sink.copy_from(source); });
    if (status == STATUS_SUCCESS)
        count_out(target, bytes); // the Read Response leaves the target
    return status;
}

void count_out(SoftQp &from, size_t bytes)
{
    Frames f = frames_for(bytes);
    from.sent.octets += f.octets;
    from.sent.frames += f.frames;
}

void count_in(SoftQp &to, size_t bytes)
{
    Frames f = frames_for(bytes);
    to.received.octets += f.octets;
    to.received.frames += f.frames;
}

} // namespace ndk::soft
