// The rdma_cm events of a connection (engine thread), mapped to the NDK establishment and
// disconnect flow of digest 1.8 / 3.6.  Which status each failure reports is in
// docs/semantics.md (VERBS-CM).
#include "verbs_objects.hpp"

#include <algorithm>
#include <cerrno>

namespace ndk::verbs {
namespace {

void count(VerbsAdapter &adapter, ULONG64 NDIS_NDK_PERFORMANCE_COUNTERS::*counter, int delta = 1)
{
    std::lock_guard lock(adapter.miniport().mu);
    adapter.miniport().counters.*counter += delta;
}

} // namespace

void VConnector::on_event(rdma_cm_event_type event, int status, const std::vector<uint8_t> &data,
                          ULONG responder_resources, ULONG initiator_depth)
{
    (void)status;
    std::function<void()> disconnect_callback;
    {
        std::lock_guard lock(adapter().mu());
        // A connect that failed before reaching a peer leaves the connector idle, able to
        // connect again (CONN-RETRY); its id and QP binding go.  The QP never carried this
        // connection and is free for another, so the connector lets go of it: its close
        // must not flush the QP or mark it disconnected, whatever the QP carries by then
        // (VERBS-REFUSED-QP).
        auto fail_connect = [&](NTSTATUS why, bool reached_peer) {
            count(adapter(), &NDIS_NDK_PERFORMANCE_COUNTERS::ConnectFailure);
            if (qp != nullptr) {
                qp->bound = false;
                qp->state = VQp::State::Idle;
                qp = nullptr;
            }
            state = reached_peer ? State::Rejected : State::Idle;
            if (!reached_peer && id != nullptr) {
                rdma_destroy_id(id); // its events are acknowledged already
                id = nullptr;
            }
            complete(why);
        };
        switch (event) {
        case RDMA_CM_EVENT_ADDR_RESOLVED:
            if (state == State::Resolving && rdma_resolve_route(id, 2000) != 0)
                fail_connect(STATUS_HOST_UNREACHABLE, false);
            break;
        case RDMA_CM_EVENT_ROUTE_RESOLVED:
            if (state == State::Resolving) {
                rdma_conn_param param{};
                param.private_data = own_data.empty() ? nullptr : own_data.data();
                param.private_data_len = static_cast<uint8_t>(own_data.size());
                param.responder_resources = static_cast<uint8_t>(std::min<ULONG>(inbound, 255));
                param.initiator_depth = static_cast<uint8_t>(std::min<ULONG>(outbound, 255));
                param.retry_count = 7;
                param.rnr_retry_count = 7;
                param.qp_num = qp->qp->qp_num;
                if (int error = qp->reset_if_flushed(); error != 0) {
                    fail_connect(errno_status(error), false);
                } else if (rdma_connect(id, &param) != 0) {
                    // iWARP connects its TCP stream here: no route shows up now (VERBS-CM)
                    int error = errno;
                    fail_connect(error == ENETUNREACH || error == EHOSTUNREACH
                                     ? STATUS_HOST_UNREACHABLE
                                     : errno_status(error),
                                 false);
                }
                else
                    state = State::Requested;
            }
            break;
        case RDMA_CM_EVENT_ADDR_ERROR:
        case RDMA_CM_EVENT_ROUTE_ERROR:
        case RDMA_CM_EVENT_UNREACHABLE:
            if (state == State::Resolving || state == State::Requested)
                fail_connect(STATUS_HOST_UNREACHABLE, false); // no route (CONN-UNREACHABLE)
            else if (state == State::Accepting) {
                aborted = true;
                state = State::Done;
                complete(STATUS_IO_TIMEOUT);
            }
            break;
        case RDMA_CM_EVENT_REJECTED:
            if (state == State::Requested) {
                // No listener, a paused or closing one, or the peer's NdkReject: all refused;
                // a reject's private data stays readable (CONN-REFUSED).
                peer_data = data;
                have_peer_data = true;
                // The connector is spent (CONN-RETRY); the QP never carried a connection and
                // may take another, as on soft (the walker met an Accept refused with
                // CONNECTION_ACTIVE on a QP whose Connect had found no listener).
                fail_connect(STATUS_CONNECTION_REFUSED, true);
            } else if (state == State::Accepting) {
                aborted = true; // the active side rejected after our accept
                state = State::Done;
                complete(STATUS_CONNECTION_ABORTED);
            } else if (state == State::Incoming) {
                aborted = true; // the active side gave up before we answered (IB CM: REJ)
            }
            break;
        case RDMA_CM_EVENT_CONNECT_RESPONSE: // RoCE: the peer accepted
        case RDMA_CM_EVENT_ESTABLISHED:
            if (state == State::Requested) {
                // iWARP reports ESTABLISHED here: the connection stands, CompleteConnect only
                // records the disconnect callback.
                peer_data = data;
                have_peer_data = true;
                peer_inbound = responder_resources;
                peer_outbound = initiator_depth;
                state = State::Responded;
                complete(STATUS_SUCCESS);
            } else if (state == State::Accepting && event == RDMA_CM_EVENT_ESTABLISHED) {
                state = State::Established;
                qp->state = VQp::State::Connected;
                count(adapter(), &NDIS_NDK_PERFORMANCE_COUNTERS::Accept);
                count(adapter(), &NDIS_NDK_PERFORMANCE_COUNTERS::ActiveConnection);
                counted_active = true;
                complete(STATUS_SUCCESS);
            }
            break;
        case RDMA_CM_EVENT_CONNECT_ERROR:
            if (state == State::Requested)
                fail_connect(STATUS_IO_TIMEOUT, true);
            else if (state == State::Accepting) {
                aborted = true;
                state = State::Done;
                complete(STATUS_CONNECTION_ABORTED);
            } else if (state == State::Incoming) {
                aborted = true; // the active side gave up before we answered
            }
            break;
        case RDMA_CM_EVENT_DISCONNECTED:
            if (counted_active) {
                count(adapter(), &NDIS_NDK_PERFORMANCE_COUNTERS::ActiveConnection, -1);
                counted_active = false;
            }
            if (state == State::Disconnecting) {
                state = State::Done;
                complete(STATUS_SUCCESS); // our NdkDisconnect: the handshake finished
            } else if (state == State::Established) {
                // The peer disconnected: tell the consumer once; our QP is not flushed
                // (digest 1.11), later initiator posts report CONNECTION_INVALID.
                state = State::PeerGone;
                qp->state = VQp::State::Disconnected;
                // Answer the peer's DREQ (IB CM sends the DREP only when this side
                // disconnects too); otherwise the peer's NdkDisconnect waits for the DREQ
                // timeout.  Our QP is not attached to the id, so it is not flushed.
                rdma_disconnect(id);
                auto plain = on_disconnect;
                auto ex = on_disconnect_ex;
                PVOID context = disconnect_context;
                // rdma_cm does not say why: 0 = not provided (digest 1.11).
                if (ex != nullptr)
                    disconnect_callback = [ex, context] { ex(context, 0); };
                else if (plain != nullptr)
                    disconnect_callback = [plain, context] { plain(context); };
            } else if (state == State::Responded || state == State::Accepting ||
                       state == State::Incoming) {
                aborted = true; // the peer abandoned the establishment (CONN-ABORTED)
                state = State::Done;
                complete(STATUS_CONNECTION_ABORTED);
            }
            break;
        default: // TIMEWAIT_EXIT, ADDR_CHANGE, DEVICE_REMOVAL: nothing the consumer sees
            break;
        }
    }
    if (disconnect_callback)
        disconnect_callback();
}

} // namespace ndk::verbs
