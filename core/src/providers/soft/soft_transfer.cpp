#include "soft_transfer.hpp"

#include "soft_channel.hpp"
#include "soft_connection.hpp"
#include "soft_memory.hpp"
#include "soft_pipeline.hpp"
#include "soft_qp_complete.hpp"
#include "soft_target.hpp"

namespace ndk::soft {
namespace {

// The initiator's half of a send, write or read: its own SGL resolved, then the operation
// handed to the connection's channel, which runs the target's half (soft_target.hpp).
Answer execute_send(SoftQp &qp, WorkRequest &wr)
{
    Spans &source = qp.local_spans;
    source.clear();
    if (wr.flags & NDK_OP_FLAG_INLINE)
        source.push_back({wr.inline_data.data(), wr.inline_data.size()});
    else if (NTSTATUS s = resolve_local(qp, wr.sgl, LocalAccess::Read, source); s != STATUS_SUCCESS)
        return {.status = s};
    bool solicited = (wr.flags & NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT) != 0;
    std::optional<UINT32> invalidate;
    if (wr.invalidate_remote)
        invalidate = wr.remote_token;
    return qp.channel->send(qp, source, solicited, invalidate);
}

Answer execute_rdma(SoftQp &qp, WorkRequest &wr)
{
    bool read = wr.type == NdkOperationTypeRead;
    Spans &local = qp.local_spans;
    local.clear();
    if (!read && (wr.flags & NDK_OP_FLAG_INLINE)) {
        local.push_back({wr.inline_data.data(), wr.inline_data.size()});
    } else if (NTSTATUS s = resolve_local(qp, wr.sgl, read ? LocalAccess::ReadSink
                                                           : LocalAccess::Read,
                                          local);
               s != STATUS_SUCCESS) {
        return {.status = s};
    }
    if (!read)
        return qp.channel->write(qp, local, wr.remote_token, wr.remote_address);
    return qp.channel->read(qp, local, wr.remote_token, wr.remote_address);
}

// The bytes a Send, Write or Read moves: its SGL's (or inline data's) length.
size_t request_length(const WorkRequest &wr)
{
    if (wr.flags & NDK_OP_FLAG_INLINE)
        return wr.inline_data.size();
    size_t length = 0;
    for (const NDK_SGE &sge : wr.sgl)
        length += sge.Length;
    return length;
}

// What a transfer does at the initiator once the target answered `status`: the traffic
// counters, and a Read's local invalidate; the status to complete the request with.
NTSTATUS transfer_answered(SoftQp &qp, const WorkRequest &wr, NTSTATUS status)
{
    if (status != STATUS_SUCCESS)
        return status;
    switch (wr.type) {
    case NdkOperationTypeSend:
    case NdkOperationTypeWrite: count_out(qp, request_length(wr)); break;
    case NdkOperationTypeRead:
        count_in(qp, request_length(wr));
        if (wr.flags & NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE) {
            // The first SGE's fast-register MR is invalidated by a successful read (digest 1.7).
            auto *mr = static_cast<SoftMr *>(
                token_owner(qp.adapter(), wr.sgl.front().MemoryRegionToken, false));
            if (mr == nullptr || !mr->fast_register || !mr->mapped)
                return STATUS_INVALID_DEVICE_REQUEST;
            mr->mapped = false;
        }
        break;
    default: break;
    }
    return status;
}

Answer execute_bind(SoftQp &qp, WorkRequest &wr)
{
    SoftMw &mw = *wr.mw;
    SoftMr &mr = *wr.mr;
    if (mw.bound)
        return {.status = STATUS_INVALID_DEVICE_REQUEST}; // bound already: invalidate first
    if (!mr.registered || mr.pd != qp.pd || mw.pd != qp.pd)
        return {.status = STATUS_ACCESS_VIOLATION};
    mw.bound = true;
    mw.mr = &mr;
    mw.address = wr.address;
    mw.length = wr.length;
    mw.flags = wr.flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE ? wr.flags | NDK_OP_FLAG_ALLOW_REMOTE_READ
                                                         : wr.flags;
    ++mr.bound_windows;
    mr.add_dependent(); // the MR's close waits for the window (digest 3.1)
    qp.adapter().tokens().enable(mw.remote_token, true);
    if (mw.close_requested())
        // The window's close came while this Bind was queued (it pends on the Bind, digest
        // 3.1) and unbound what was there then: the Bind completes, and the window it made
        // goes with the close, or the MR would wait for it forever.  Found by the walker on
        // transport=shm and tcp, where a Bind can wait behind a request in flight.
        unbind_window(mw);
    return {};
}

Answer execute_fast_register(SoftQp &qp, WorkRequest &wr)
{
    SoftMr &mr = *wr.mr;
    if (mr.mapped)
        return {.status = STATUS_INVALID_DEVICE_REQUEST}; // registered already: invalidate first
    auto &pages = qp.adapter().lams().pages;
    for (uint64_t page : wr.pages)
        if (pages.find(page) == pages.end())
            return {.status = STATUS_ACCESS_VIOLATION}; // not a logical address of this adapter
    mr.mapped = true;
    mr.pages = std::move(wr.pages);
    mr.fbo = wr.fbo;
    mr.address = wr.address;
    mr.length = wr.length;
    mr.flags = fast_register_access(wr.flags);
    return {};
}

Answer execute_invalidate(WorkRequest &wr)
{
    if (wr.mw != nullptr) {
        if (!wr.mw->bound)
            return {.status = STATUS_INVALID_DEVICE_REQUEST}; // ND2: invalidating an unbound MW
        unbind_window(*wr.mw);
        return {};
    }
    if (!wr.mr->fast_register || !wr.mr->mapped)
        return {.status = STATUS_INVALID_DEVICE_REQUEST}; // digest 1.7: fast-registered MRs only
    wr.mr->mapped = false;
    return {};
}

Answer execute(SoftQp &qp, WorkRequest &wr)
{
    if (wr.refused != STATUS_SUCCESS) // a post check left to execution (WorkRequest::refused)
        return {.status = wr.refused};
    switch (wr.type) {
    case NdkOperationTypeSend: {
        Answer a = execute_send(qp, wr);
        if (!a.no_receive && !a.later)
            a.status = transfer_answered(qp, wr, a.status);
        return a;
    }
    case NdkOperationTypeRead:
    case NdkOperationTypeWrite: {
        Answer a = execute_rdma(qp, wr);
        if (!a.later)
            a.status = transfer_answered(qp, wr, a.status);
        return a;
    }
    case NdkOperationTypeBind: return execute_bind(qp, wr);
    case NdkOperationTypeFastRegister: return execute_fast_register(qp, wr);
    case NdkOperationTypeInvalidate: return execute_invalidate(wr);
    default: return {.status = STATUS_INVALID_DEVICE_REQUEST};
    }
}

void pump(SoftQp &qp, Hold hold);

// The head request is done with `status`: completed and dequeued; an error ends the
// connection.  False when the queue must stop.
bool complete_head(SoftQp &qp, NTSTATUS status)
{
    cancel_rnr_timer(qp);
    complete_initiator(qp, qp.initiator.front(), status);
    qp.initiator.pop_front();
    --qp.released;
    if (status != STATUS_SUCCESS) {
        fail_connection(qp);
        return false;
    }
    return true;
}

// The head send waited rnr_timeout_ms for a receive: it fails, and the connection with it.
void rnr_expired(SoftQp &qp)
{
    qp.rnr_timer = 0;
    if (qp.initiator.empty() || qp.state != SoftQp::State::Connected)
        return;
    complete_initiator(qp, qp.initiator.front(), STATUS_IO_TIMEOUT);
    qp.initiator.pop_front();
    if (qp.released > 0)
        --qp.released;
    fail_connection(qp);
}

void wait_for_receive(SoftQp &qp)
{
    if (qp.rnr_timer != 0)
        return;
    SoftAdapter &adapter = qp.adapter();
    auto timeout = adapter.knobs().rnr_timeout();
    if (timeout.count() == 0) {
        rnr_expired(qp); // no retries
        return;
    }
    uint64_t mine = ++qp.rnr_generation;
    qp.rnr_timer = adapter.engine().post_after(timeout, [&adapter, qp = &qp, mine] {
        std::lock_guard lock(adapter.mu());
        if (adapter.exists(qp) && qp->rnr_generation == mine && qp->rnr_timer != 0)
            rnr_expired(*qp);
    });
}

// The shared data path met a request that changes memory access: the engine goes on from it,
// with the wire lock exclusive.  Under the connection's lock.
void continue_on_engine(SoftQp &qp)
{
    if (qp.continuation_queued)
        return;
    qp.continuation_queued = true;
    SoftAdapter &adapter = qp.adapter();
    adapter.deliver([&adapter, qp = &qp] {
        std::lock_guard lock(adapter.mu());
        if (!adapter.exists(qp))
            return;
        qp->continuation_queued = false;
        pump(*qp, Hold::Exclusive);
    });
}

// Whether `next` may start now, behind the requests in flight (soft_pipeline.hpp).
bool may_follow(SoftQp &qp, const WorkRequest &next)
{
    if (qp.in_flight == 0)
        return true;
    return qp.channel && may_follow(qp.initiator, qp.in_flight, qp.settled_behind.has_value(),
                                    next, qp.channel->pipeline_limits());
}

void pump(SoftQp &qp, Hold hold)
{
    while (qp.released > qp.in_flight && qp.initiator.size() > qp.in_flight) {
        if (qp.state != SoftQp::State::Connected)
            return; // queued until a flush (peer disconnected) or already flushed (error)
        WorkRequest &next = qp.initiator.at(qp.in_flight);
        if (!may_follow(qp, next))
            return; // it starts when those in flight are answered
        if (hold == Hold::Shared && changes_memory_access(next)) {
            continue_on_engine(qp);
            return;
        }
        Answer outcome = execute(qp, next);
        if (outcome.no_receive) {
            wait_for_receive(qp);
            return;
        }
        if (outcome.later) {
            ++qp.in_flight;
            continue;
        }
        if (qp.in_flight > 0) {
            // Settled behind requests still in flight: it completes after them.
            qp.settled_behind = outcome.status;
            ++qp.in_flight;
            return;
        }
        if (!complete_head(qp, outcome.status))
            return;
    }
}

} // namespace

bool changes_memory_access(const WorkRequest &wr)
{
    switch (wr.type) {
    case NdkOperationTypeBind:
    case NdkOperationTypeFastRegister:
    case NdkOperationTypeInvalidate: return true;
    case NdkOperationTypeSend: return wr.invalidate_remote;
    case NdkOperationTypeRead: return (wr.flags & NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE) != 0;
    default: return false;
    }
}

void kick(SoftQp &qp, Hold hold)
{
    SoftAdapter &adapter = qp.adapter();
    if (!adapter.knobs().manual_progress()) {
        pump(qp, hold);
        return;
    }
    adapter.deliver([&adapter, qp = &qp] {
        std::lock_guard lock(adapter.mu());
        if (adapter.exists(qp))
            pump(*qp, Hold::Exclusive);
    });
}

void answered(SoftQp &qp, NTSTATUS status, Hold hold)
{
    if (qp.in_flight == 0 || qp.initiator.empty())
        return; // flushed meanwhile: the request completed CANCELLED
    --qp.in_flight;
    status = transfer_answered(qp, qp.initiator.front(), status);
    if (!complete_head(qp, status))
        return;
    if (qp.in_flight == 1 && qp.settled_behind) {
        // The one that settled behind it is first now (its status counted at execution).
        const NTSTATUS settled = *qp.settled_behind;
        qp.settled_behind.reset();
        qp.in_flight = 0;
        if (!complete_head(qp, settled))
            return;
    }
    kick(qp, hold);
}

void receive_posted(SoftQp &qp, Hold hold)
{
    if (qp.channel)
        qp.channel->receive_posted(hold);
}

void fail_connection(SoftQp &qp)
{
    qp.state = SoftQp::State::Error;
    flush_qp(qp);
    if (qp.channel)
        qp.channel->fail_peer();
    if (qp.connector != nullptr)
        connection_terminated(*qp.connector);
}

} // namespace ndk::soft
