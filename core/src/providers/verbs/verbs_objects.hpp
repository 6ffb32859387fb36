// The verbs NDK objects: each an NDK object ({Header; Dispatch}) over its verbs resource.
// Their functions live one file per object (verbs_cq.cpp, verbs_qp.cpp, ...).
#pragma once

#include "verbs_adapter.hpp"
#include "providers/kit/kit_cq_arm.hpp"
#include "providers/kit/kit_create_checks.hpp"
#include "providers/kit/kit_notification_cpus.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ndk::verbs {

template <class Ndk>
using NdkObject = kit::NdkObject<Ndk, Object>;

// ---- CQ --------------------------------------------------------------------------------------

struct VCq : NdkObject<NDK_CQ> {
    static constexpr NDK_OBJECT_TYPE kType = NdkObjectTypeCq;
    explicit VCq(VerbsAdapter &adapter);
    static VCq *from(NDK_CQ *cq) { return static_cast<VCq *>(cq); }

    ibv_cq *cq = nullptr;
    ULONG depth = 0;
    NDK_FN_CQ_NOTIFICATION_CALLBACK notify = nullptr;
    PVOID notify_context = nullptr;
    kit::NotificationCpus notify_cpus; // NdkCreateCq's Affinity: where the callback runs
    kit::CqArm arm; // the arm, and what arrived since the last callback (digest 3.2)
    NTSTATUS error = STATUS_SUCCESS; // CQ error (async event): no more completions
    std::deque<NDK_RESULT_EX> polled; // taken from the device at arm time, not yet returned

    // Engine thread: the completion channel fired for this CQ / the device reported an error.
    void on_event();
    void on_error(NTSTATUS status);
    // Lock held: move what the device holds into `polled`; more than `depth` there is an
    // overrun (STATUS_BUFFER_OVERFLOW).  fail(): enter the CQ error state, once.
    void drain_device();
    void fail(NTSTATUS status);
    // Lock held: a result the provider makes itself (a receive posted on a QP in the error
    // state, VERBS-POST-IN-ERROR), queued and signalled like one taken off the device.
    void add_local(const NDK_RESULT_EX &result);
    // Lock held: ask the device for the next completion event the arm needs.
    void request_events();
    bool any_requested = false; // an "any completion" event request is outstanding

protected:
    void destroy_resources() override;
};

// ---- PD, MR, MW ------------------------------------------------------------------------------

struct VPd : NdkObject<NDK_PD> {
    static constexpr NDK_OBJECT_TYPE kType = NdkObjectTypePd;
    explicit VPd(VerbsAdapter &adapter);
    static VPd *from(NDK_PD *pd) { return static_cast<VPd *>(pd); }
    ibv_pd *pd = nullptr;

protected:
    void destroy_resources() override;
};

struct VMr : NdkObject<NDK_MR> {
    static constexpr NDK_OBJECT_TYPE kType = NdkObjectTypeMr;
    VMr(VerbsAdapter &adapter, VPd &pd, bool fast_register);
    static VMr *from(NDK_MR *mr) { return static_cast<VMr *>(mr); }
    VPd &pd;
    bool fast_register;
    ibv_mr *mr = nullptr;
    ULONG flags = 0;

protected:
    void destroy_resources() override;
};

struct VQp;

struct VMw : NdkObject<NDK_MW> {
    static constexpr NDK_OBJECT_TYPE kType = NdkObjectTypeMw;
    VMw(VerbsAdapter &adapter, VPd &pd);
    static VMw *from(NDK_MW *mw) { return static_cast<VMw *>(mw); }
    VPd &pd;
    ibv_mw *mw = nullptr;
    uint32_t rkey = 0;        // the rkey of the current (or last posted) bind
    // Every QP this ibv_mw was bound through (adapter lock), not only the last: rxe refuses to
    // bind a type 2 window that is still bound (IBV_WC_MW_BIND_ERR) and keeps its reference on
    // the QP of the earlier bind, so a second Bind through another QP without an Invalidate
    // leaves the first QP held (VERBS-MW-QP-REF, docs/semantics.md).
    std::vector<VQp *> bound_through;

    // A QP it was bound through is going: rxe's type 2 window holds a reference on that QP
    // until the window is invalidated or freed, and ibv_destroy_qp waits for it forever
    // (VERBS-MW-QP-REF).  The window is swapped for a fresh, unbound one, which is what
    // invalidation by the QP's end means, and leaves the lists of the other QPs it was bound
    // through.  Adapter lock held.
    void release_qp(VQp &going);
    void bound_through_qp(VQp &qp); // a Bind through `qp` was posted.  Adapter lock held.

protected:
    void destroy_resources() override;
};

// rxe in Linux 6.1 dereferences NULL when a type 2 window that is not bound is invalidated,
// locally (IBV_WR_LOCAL_INV) or by a peer's SEND_WITH_INV (rxe_do_invalidate_mw: mw->mr is
// NULL), and the kernel panics.  The provider therefore tracks, process-wide, which window
// rkeys are bound, and refuses such an invalidate inline (docs/semantics.md, VERBS-MW-GUARD).
void window_rkey_bound(uint32_t rkey, bool bound);
void window_rkey_forget(uint32_t rkey);
// A SendAndInvalidate named this token: if it is a window's, that window is now unbound.  A
// token of no window of this process (an MR's, another provider's) is not recorded: it is
// not known to be a window at all.
void window_rkey_invalidated(uint32_t rkey);
bool window_rkey_unbound(uint32_t rkey); // a window's rkey, known to be unbound

// ---- requests in flight ----------------------------------------------------------------------

// What a completion must report for a posted request (ibv_wc has no type on error).
struct Request {
    PVOID context = nullptr;
    NDK_OPERATION_TYPE type = NdkOperationTypeSend;
    ULONG bytes = 0;
    VMw *bind = nullptr; // Bind / Invalidate of a memory window
    uint32_t rkey = 0;   // the window's rkey after the bind
    bool invalidate = false;
    bool silent = false;  // NDK_OP_FLAG_SILENT_SUCCESS: a result only on failure
    bool signaled = true; // the device will complete it (IBV_SEND_SIGNALED)
    // Initiator requests: completed by the device, its result held until every earlier
    // signalled request has completed (VERBS-SQ-ORDER); report = false for a silent success.
    bool done = false;
    bool report = true;
    NDK_RESULT_EX result{};
};

// Requests of one queue by sequence number (the work request id).  Send-queue results leave
// in issue order, and a result also retires the silent requests posted before it
// (verbs_completion.cpp, release_in_order).
// Receive ids carry kReceiveTag, so a QP with one CQ for both queues tells them apart.
constexpr uint64_t kReceiveTag = uint64_t{1} << 63;
struct RequestQueue {
    explicit RequestQueue(uint64_t tag = 0) : next(tag | 1) {}
    std::map<uint64_t, Request> pending;
    uint64_t next;
    uint64_t add(const Request &r)
    {
        pending.emplace(next, r);
        return next++;
    }
};

// ---- SRQ ---------------------------------------------------------------------------------------

struct VSrq : NdkObject<NDK_SRQ> {
    static constexpr NDK_OBJECT_TYPE kType = NdkObjectTypeSrq;
    VSrq(VerbsAdapter &adapter, VPd &pd);
    static VSrq *from(NDK_SRQ *srq) { return static_cast<VSrq *>(srq); }
    VPd &pd;
    ibv_srq *srq = nullptr;
    ULONG depth = 0;
    ULONG max_sge = 0;
    ULONG threshold = 0; // armed while > 0
    NDK_FN_SRQ_NOTIFICATION_CALLBACK notify = nullptr;
    PVOID notify_context = nullptr;
    RequestQueue receives{kReceiveTag};
    void on_limit(); // engine thread: IBV_EVENT_SRQ_LIMIT_REACHED

protected:
    void destroy_resources() override;
};

// ---- QP ----------------------------------------------------------------------------------------

struct VConnector;

struct VQp : NdkObject<NDK_QP>, kit::QpSizes {
    static constexpr NDK_OBJECT_TYPE kType = NdkObjectTypeQp;
    VQp(VerbsAdapter &adapter, VPd &pd);
    static VQp *from(NDK_QP *qp) { return static_cast<VQp *>(qp); }
    enum class State { Idle, Connecting, Connected, Disconnected };

    VPd &pd;
    VCq *receive_cq = nullptr;
    VCq *initiator_cq = nullptr;
    VSrq *srq = nullptr;
    ibv_qp *qp = nullptr;
    PVOID qp_context = nullptr;
    State state = State::Idle;
    bool bound = false;   // carried a connection (a QP carries one in its life, digest 3.6)
    RequestQueue sends, receives{kReceiveTag};
    std::vector<VMw *> windows; // bound through this QP since their ibv_mw was allocated (VMw::release_qp)

    // In IBV_QPS_ERR: since a flush or an error completion, or on iWARP since the connection
    // ended (reset_if_flushed takes a QP that never connected back to INIT).
    bool in_error = false;
    // Move to the error state: everything queued completes with IBV_WC_WR_FLUSH_ERR.  Lock held.
    void flush();
    // A QP flushed before it carried a connection goes back to INIT (through RESET) before a
    // connection uses it: NDK's flush cancels requests, it does not spoil the QP for the
    // Connect or Accept that may follow (docs/semantics.md, VERBS-FLUSH-BEFORE-CONNECT).
    // Lock held; an errno, 0 on success.
    int reset_if_flushed();
    // Modify to `state` with the attributes rdma_cm computes for the connection `id`.
    int modify_from_cm(rdma_cm_id *id, ibv_qp_state state);

protected:
    void on_close() override;
    void destroy_resources() override;

private:
    void cancel_posted();  // lock not held
    void drain_cqs();      // lock held: both CQs' device completions into their results
    void cancel_pending(); // lock held
};

// The result of a request the provider cancels itself (VERBS-CLOSE-CANCELS,
// VERBS-POST-IN-ERROR), as the device reports a flushed one (verbs_completion.cpp).
NDK_RESULT_EX cancelled_result(const VQp &qp, const Request &request);

// ---- connection management -----------------------------------------------------------------

struct VListener;
struct VSharedEndpoint;

struct VConnector : NdkObject<NDK_CONNECTOR> {
    static constexpr NDK_OBJECT_TYPE kType = NdkObjectTypeConnector;
    explicit VConnector(VerbsAdapter &adapter);
    static VConnector *from(NDK_CONNECTOR *c) { return static_cast<VConnector *>(c); }
    enum class State {
        Idle,         // nothing yet
        Resolving,    // active: address / route resolution, then the request
        Requested,    // active: rdma_connect sent, waiting for the peer
        Responded,    // active: the peer accepted (RoCE: REP); CompleteConnect or Reject next
        Incoming,     // passive: delivered by the listener; Accept or Reject next
        Accepting,    // passive: rdma_accept sent, waiting for the peer's CompleteConnect
        Established,  // connected
        Disconnecting, // our NdkDisconnect is waiting for rdma_cm
        PeerGone,     // the peer disconnected; one local Disconnect remains allowed
        Rejected,     // refused by the peer (its private data readable) or by us
        Done,         // disconnected, failed or aborted: spent
    };

    rdma_cm_id *id = nullptr;
    State state = State::Idle;
    bool passive = false;
    VQp *qp = nullptr;
    VListener *listener = nullptr;
    VSharedEndpoint *endpoint = nullptr;
    std::string endpoint_destination; // its entry in endpoint->destinations
    std::vector<uint8_t> peer_data; // the peer's private data (request, reply or reject)
    bool have_peer_data = false;
    ULONG peer_inbound = 0, peer_outbound = 0; // read limits offered to us (our perspective)
    ULONG inbound = 0, outbound = 0;           // what we asked for
    std::vector<uint8_t> own_data;              // our Connect's private data, sent later
    bool aborted = false; // the peer abandoned the establishment (CONNECTION_ABORTED next)
    NDK_FN_REQUEST_COMPLETION pending = nullptr; // Connect / Accept / Disconnect in flight
    PVOID pending_context = nullptr;
    NDK_FN_DISCONNECT_EVENT_CALLBACK on_disconnect = nullptr;
    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX on_disconnect_ex = nullptr;
    PVOID disconnect_context = nullptr;
    bool counted_active = false; // counted in ActiveConnection

    // Engine thread, no lock: an rdma_cm event for this connection.
    void on_event(rdma_cm_event_type event, int status, const std::vector<uint8_t> &data,
                  ULONG responder_resources, ULONG initiator_depth);
    // Complete the request in flight (lock held; the callback runs on the engine).
    void complete(NTSTATUS status);

protected:
    void on_close() override;
    void destroy_resources() override;
};

struct VListener : NdkObject<NDK_LISTENER> {
    static constexpr NDK_OBJECT_TYPE kType = NdkObjectTypeListener;
    VListener(VerbsAdapter &adapter, NDK_FN_CONNECT_EVENT_CALLBACK event, PVOID context);
    static VListener *from(NDK_LISTENER *l) { return static_cast<VListener *>(l); }
    rdma_cm_id *id = nullptr;
    bool listening = false;
    bool paused = false;
    NDK_FN_CONNECT_EVENT_CALLBACK connect_event;
    PVOID connect_context;
    // Engine thread, no lock: a connection request arrived on `incoming`.
    void on_request(rdma_cm_id *incoming, const std::vector<uint8_t> &data,
                    ULONG responder_resources, ULONG initiator_depth);

protected:
    void destroy_resources() override;
};

struct VSharedEndpoint : NdkObject<NDK_SHARED_ENDPOINT> {
    static constexpr NDK_OBJECT_TYPE kType = NdkObjectTypeSharedEndpoint;
    explicit VSharedEndpoint(VerbsAdapter &adapter);
    static VSharedEndpoint *from(NDK_SHARED_ENDPOINT *e) { return static_cast<VSharedEndpoint *>(e); }
    rdma_cm_id *id = nullptr; // holds the address:port (REUSEADDR, never listens)
    sockaddr_storage address{};
    // "address port" of every destination its connectors connect to: one 4-tuple each
    // (ADDRESS_ALREADY_EXISTS, digest 1.8).  Adapter lock.
    std::multiset<std::string> destinations;

protected:
    void destroy_resources() override;
};

// ---- shared helpers ----------------------------------------------------------------------------

extern const NDK_CQ_DISPATCH kCqDispatch;
extern const NDK_PD_DISPATCH kPdDispatch;
extern const NDK_MR_DISPATCH kMrDispatch;
extern const NDK_MW_DISPATCH kMwDispatch;
extern const NDK_SRQ_DISPATCH kSrqDispatch;
extern const NDK_QP_DISPATCH kQpDispatch;
extern const NDK_CONNECTOR_DISPATCH kConnectorDispatch;
extern const NDK_LISTENER_DISPATCH kListenerDispatch;
extern const NDK_SHARED_ENDPOINT_DISPATCH kSharedEndpointDispatch;

// Adapter-level creates (verbs_cq.cpp, verbs_pd.cpp, verbs_connector.cpp, ...).
NTSTATUS create_cq(NDK_ADAPTER *, ULONG, NDK_FN_CQ_NOTIFICATION_CALLBACK, PVOID, GROUP_AFFINITY *,
                   NDK_FN_CREATE_COMPLETION, PVOID, NDK_CQ **);
NTSTATUS create_pd(NDK_ADAPTER *, NDK_FN_CREATE_COMPLETION, PVOID, NDK_PD **);
NTSTATUS create_connector(NDK_ADAPTER *, NDK_FN_CREATE_COMPLETION, PVOID, NDK_CONNECTOR **);
NTSTATUS create_listener(NDK_ADAPTER *, NDK_FN_CONNECT_EVENT_CALLBACK, PVOID,
                         NDK_FN_CREATE_COMPLETION, PVOID, NDK_LISTENER **);
NTSTATUS create_shared_endpoint(NDK_ADAPTER *, const PSOCKADDR, ULONG, NDK_FN_CREATE_COMPLETION,
                                PVOID, NDK_SHARED_ENDPOINT **);

// PD-level creates (verbs_mr.cpp, verbs_mw.cpp, verbs_srq.cpp, verbs_qp.cpp).
NTSTATUS create_mr(NDK_PD *, BOOLEAN, NDK_FN_CREATE_COMPLETION, PVOID, NDK_MR **);
NTSTATUS create_mw(NDK_PD *, NDK_FN_CREATE_COMPLETION, PVOID, NDK_MW **);
NTSTATUS create_srq(NDK_PD *, ULONG, ULONG, ULONG, NDK_FN_SRQ_NOTIFICATION_CALLBACK, PVOID,
                    GROUP_AFFINITY *, NDK_FN_CREATE_COMPLETION, PVOID, NDK_SRQ **);
NTSTATUS create_qp(NDK_PD *, NDK_CQ *, NDK_CQ *, PVOID, ULONG, ULONG, ULONG, ULONG, ULONG,
                   NDK_FN_CREATE_COMPLETION, PVOID, NDK_QP **);
NTSTATUS create_qp_with_srq(NDK_PD *, NDK_CQ *, NDK_CQ *, NDK_SRQ *, PVOID, ULONG, ULONG, ULONG,
                            NDK_FN_CREATE_COMPLETION, PVOID, NDK_QP **);

// Take one work completion off the CQ's device queue and append the results it releases to
// `out`, converted (none while it waits for an earlier request, several when it completes
// the one they waited for).  False if the device held none.  Lock held (verbs_completion.cpp).
bool poll_device(VCq &cq, std::deque<NDK_RESULT_EX> &out);
// ibv_wc_status -> NTSTATUS (docs/semantics.md, VERBS-STATUS).
NTSTATUS wc_status(ibv_wc_status status, NDK_OPERATION_TYPE type);
// errno of a failed verbs or rdma_cm call -> NTSTATUS.
NTSTATUS errno_status(int error);

// A socket address the consumer passed: valid family and length, copied out.  False if not.
bool read_address(const SOCKADDR *address, ULONG length, sockaddr_storage &out);
// Whether `address` is one of the adapter's, or unspecified (then replaced by the first
// address of its family, port kept).  Lock not needed.
bool own_address(const VerbsAdapter &adapter, sockaddr_storage &address);
// Copy a socket address to the consumer's buffer (BUFFER_TOO_SMALL with the size needed).
NTSTATUS write_address(const sockaddr *address, PSOCKADDR out, ULONG *length);


} // namespace ndk::verbs
