#include "soft_qp_complete.hpp"

#include "soft_target.hpp"

namespace ndk::soft {

void complete_initiator(SoftQp &qp, WorkRequest &wr, NTSTATUS status)
{
    // Held since the post (soft_qp_post.cpp, hold_objects).
    if (wr.mr != nullptr)
        wr.mr->release_dependent();
    if (wr.mw != nullptr)
        wr.mw->release_dependent();
    for (SoftMr *mr : wr.held_mrs)
        mr->release_for_request();
    wr.held_mrs.clear();
    if (status == STATUS_SUCCESS && (wr.flags & NDK_OP_FLAG_SILENT_SUCCESS))
        return; // digest 2.5: success produces no completion, failure always does
    post_result(*qp.initiator_cq, status, false, [&](NDK_RESULT_EX &r) {
        r.QPContext = qp.context;
        r.RequestContext = wr.context;
        r.Type = wr.type;
    });
}

void cancel_rnr_timer(SoftQp &qp)
{
    if (qp.rnr_timer != 0) {
        qp.adapter().engine().cancel(qp.rnr_timer);
        qp.rnr_timer = 0;
    }
    ++qp.rnr_generation; // a timer task already queued is stale from now on
}

void flush_qp(SoftQp &qp)
{
    cancel_rnr_timer(qp);
    qp.in_flight = 0; // their answers, if they come, find nothing to complete
    qp.settled_behind.reset();
    while (!qp.initiator.empty()) {
        complete_initiator(qp, qp.initiator.front(), STATUS_CANCELLED);
        qp.initiator.pop_front();
    }
    qp.released = 0;
    while (!qp.receives.empty()) {
        complete_receive(qp, qp.receives.front(), STATUS_CANCELLED, 0, false);
        qp.receives.pop_front();
    }
}

} // namespace ndk::soft
