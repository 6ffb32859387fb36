// Which of a QP's requests may travel behind others still in flight (soft_transfer.cpp,
// pump()): the rules that keep NDK's order while a channel carries several requests at once.
//
// A channel that answers in posting order (soft_channel.hpp, pipeline_limits()) may carry up to
// `depth` requests of a QP; completing them in the order the answers come is then completing
// them in issue order (digest 4.2).  What may follow:
//   - Writes, Sends that invalidate nothing, and Reads that invalidate nothing at the initiator
//     (the target takes a QP's requests in order, digest 1.7, so a Read behind a Write reads
//     what the Write placed, and a Write behind a Read lands after the Read took its bytes);
//   - at most `reads` Reads at once: the connection's outbound read limit, which is never more
//     than the peer's inbound one (digest 1.8, "Read-limit rules"; kit::read_limit);
//   - a request with NDK_OP_FLAG_READ_FENCE only once no Read is in flight ("all prior reads
//     must complete first", digest 2.5): a Write or Send that reads a prior Read's sink then
//     carries what the Read brought.
// A request that changes memory access (Bind, FastRegister, Invalidate, a Send with Invalidate,
// a Read that invalidates its sink), or that completes at execution (WorkRequest::refused),
// starts only when nothing is in flight, and nothing starts behind it until it completes; so
// does anything behind a request that settled at execution behind others.
#pragma once

#include "soft_objects.hpp"

#include <cstddef>

namespace ndk::soft {

struct PipelineLimits {
    std::size_t depth = 1; // requests in flight at once
    std::size_t reads = 1; // Reads among them
};

// Whether `wr` may be in flight behind other requests, or have others behind it.
inline bool pipelines(const WorkRequest &wr)
{
    if (wr.refused != STATUS_SUCCESS)
        return false;
    switch (wr.type) {
    case NdkOperationTypeWrite: return true;
    case NdkOperationTypeSend: return !wr.invalidate_remote;
    case NdkOperationTypeRead: return (wr.flags & NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE) == 0;
    default: return false;
    }
}

// Whether `next` may start now behind the first `in_flight` requests of `initiator` (a QP's
// initiator queue, oldest first).  `settled_behind`: the last of those settled at execution
// and waits to complete after the others.
template <class Queue>
bool may_follow(Queue &initiator, std::size_t in_flight, bool settled_behind,
                const WorkRequest &next, PipelineLimits limits)
{
    if (in_flight == 0)
        return true;
    // Every request in flight behind the first passed this test: only the first may be one
    // that does not pipeline.
    if (settled_behind || in_flight >= limits.depth || !pipelines(next) ||
        !pipelines(initiator.front()))
        return false;
    const bool read = next.type == NdkOperationTypeRead;
    const bool fenced = (next.flags & NDK_OP_FLAG_READ_FENCE) != 0;
    if (!read && !fenced)
        return true;
    std::size_t reads = 0;
    for (std::size_t i = 0; i < in_flight; ++i)
        reads += initiator.at(i).type == NdkOperationTypeRead ? 1 : 0;
    if (fenced && reads > 0)
        return false;
    return !read || reads < limits.reads;
}

} // namespace ndk::soft
