// The soft provider's NDK objects.  Each derives from its NDK structure (so the consumer's
// pointer converts back with a static_cast) and from SoftObject (lifetime).  Each type's
// dispatch table and functions live in soft_<object>.cpp.
#pragma once

#include "soft_adapter.hpp"
#include "soft_connection_line.hpp"
#include "soft_cq_producers.hpp"
#include "soft_cq_ring.hpp"
#include "soft_fabric.hpp"
#include "soft_object.hpp"
#include "soft_request_queue.hpp"
#include "soft_spans.hpp"
#include "providers/kit/kit_cq_arm.hpp"
#include "providers/kit/kit_create_checks.hpp"
#include "providers/kit/kit_mr_checks.hpp"
#include "providers/kit/kit_notification_cpus.hpp"

#include <atomic>
#include <deque>
#include <mutex>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace ndk::soft {

extern const NDK_ADAPTER_DISPATCH kAdapterDispatch;
extern const NDK_CQ_DISPATCH kCqDispatch;
extern const NDK_PD_DISPATCH kPdDispatch;
extern const NDK_MR_DISPATCH kMrDispatch;
extern const NDK_MW_DISPATCH kMwDispatch;
extern const NDK_SRQ_DISPATCH kSrqDispatch;
extern const NDK_QP_DISPATCH kQpDispatch;
extern const NDK_CONNECTOR_DISPATCH kConnectorDispatch;
extern const NDK_LISTENER_DISPATCH kListenerDispatch;
extern const NDK_SHARED_ENDPOINT_DISPATCH kSharedEndpointDispatch;

// Binds an NDK structure type to its object type and dispatch table, and sets up the header.
template <class Ndk, NDK_OBJECT_TYPE Type, class Dispatch, const Dispatch *Table>
class SoftTyped : public Ndk, public SoftObject {
public:
    static constexpr NDK_OBJECT_TYPE kType = Type;
    using NdkType = Ndk;
    explicit SoftTyped(SoftAdapter &adapter);
    NDK_OBJECT_HEADER &header() override { return this->Header; }
};

template <class Ndk, NDK_OBJECT_TYPE Type, class Dispatch, const Dispatch *Table>
SoftTyped<Ndk, Type, Dispatch, Table>::SoftTyped(SoftAdapter &adapter)
    : Ndk{}, SoftObject(adapter, Type)
{
    init_header(this->Header, Type, adapter.version());
    this->Dispatch = Table; // set before the object is returned (digest 1.0)
}

class SoftCq : public SoftTyped<NDK_CQ, NdkObjectTypeCq, NDK_CQ_DISPATCH, &kCqDispatch> {
public:
    using SoftTyped::SoftTyped;
    static SoftCq *from(NDK_CQ *cq) { return static_cast<SoftCq *>(cq); }

    ULONG depth = 0;
    NDK_FN_CQ_NOTIFICATION_CALLBACK notify = nullptr;
    PVOID notify_context = nullptr;
    kit::NotificationCpus notify_cpus; // NdkCreateCq's Affinity: where the callback runs
    ULONG moderation_interval = 0;
    ULONG moderation_count = 0;
    CqRing results; // completions waiting to be polled (one producer, one consumer)
    kit::CqArm arm; // the arm, and what arrived since the last callback (digest 3.2)
    // A CQ error (overrun): reported once through the notification callback, by the arm in
    // place or the next one; no completion is reported after it (digest 1.3).  Atomic: posts
    // on other connections read it (the post checks) while one fails the CQ.
    std::atomic<NTSTATUS> error{STATUS_SUCCESS};
    // Serializes the connections that complete into this CQ at once under the shared wire
    // lock: the ring's pushes, the arm, the moderation timer and the error above.  Taken only
    // when the QPs bound to the CQ hold more than one connection lock (`producers`).
    std::mutex completion_mu;
    CqProducers producers;
    uint64_t moderation_timer = 0; // interval moderation: fires a deferred notification
    uint64_t moderation_serial = 0; // which timer is this CQ's (unique across all CQs)
};

class SoftPd : public SoftTyped<NDK_PD, NdkObjectTypePd, NDK_PD_DISPATCH, &kPdDispatch> {
public:
    using SoftTyped::SoftTyped;
    static SoftPd *from(NDK_PD *pd) { return static_cast<SoftPd *>(pd); }
};

class SoftMr : public SoftTyped<NDK_MR, NdkObjectTypeMr, NDK_MR_DISPATCH, &kMrDispatch> {
public:
    using SoftTyped::SoftTyped;
    static SoftMr *from(NDK_MR *mr) { return static_cast<SoftMr *>(mr); }

    SoftPd *pd = nullptr;
    bool fast_register = false;
    bool busy = false;       // a register/deregister/initialize is in flight
    bool registered = false; // normal MR: RegisterMr completed
    bool initialized = false; // fast-register MR: InitializeFastRegisterMr completed
    bool remote_access = false;
    ULONG page_count = 0;
    uintptr_t address = 0;
    SIZE_T length = 0;
    ULONG flags = 0;          // NDK_MR_FLAG_* of the registration or fast registration
    UINT32 local_token = 0;
    UINT32 remote_token = 0;
    uint32_t token_slot = 0; // in the adapter's TokenTable, for the MR's life
    // Fast-register MR: valid between a FastRegister and an Invalidate (digest 1.7).  Its
    // range [address, address + length) is an index; the data lives on `pages` (logical
    // addresses of this adapter's LAMs) starting `fbo` bytes into the first page.
    bool mapped = false;
    std::vector<uint64_t> pages;
    ULONG fbo = 0;
    int bound_windows = 0; // memory windows bound to this MR (MR -> MW, digest 3.1)

    // A posted Send, Write or Read whose SGL names this MR holds it until the request completes
    // (docs/semantics.md, MR-IN-USE): NdkDeregisterMr answers STATUS_DEVICE_BUSY meanwhile, a
    // close pends (digest 3.1) and the local token keeps working for those requests, so no
    // transport ever reads a payload from memory its consumer got back.  Taken under the wire
    // lock, shared or exclusive; atomic, as the data path releases it on several threads.  A
    // counted dependent (kit::Lifetime): one read-modify-write per hold and per release.
    void hold_for_request() { add_counted_dependent(); }
    void release_for_request() { release_counted_dependent(); }
    bool in_use_by_requests() const { return counted_dependents() > 0; }

protected:
    void on_close() override;
    void on_destroy() override;
};

class SoftMw : public SoftTyped<NDK_MW, NdkObjectTypeMw, NDK_MW_DISPATCH, &kMwDispatch> {
public:
    using SoftTyped::SoftTyped;
    static SoftMw *from(NDK_MW *mw) { return static_cast<SoftMw *>(mw); }

    SoftPd *pd = nullptr;
    UINT32 remote_token = 0; // assigned when NdkBind returns
    uint32_t token_slot = 0; // in the adapter's TokenTable, for the window's life
    // Between the Bind's execution and an Invalidate: the window [address, address + length)
    // of `mr`, with NDK_OP_FLAG_ALLOW_REMOTE_READ / _WRITE in `flags`.
    bool bound = false;
    SoftMr *mr = nullptr;
    uintptr_t address = 0;
    SIZE_T length = 0;
    ULONG flags = 0;

protected:
    void on_close() override;
    void on_destroy() override;
};

// A posted receive (QP receive queue or SRQ), one cache line when its SGL has one entry (the
// common case): the Send that takes it in process, on the peer's thread, reads one line the
// posting thread wrote rather than the request's and its SGL's heap block (docs/performance.md,
// "Two threads").
struct alignas(64) ReceiveRequest {
    PVOID context = nullptr;

    std::span<const NDK_SGE> sgl() const
    {
        if (count_ == 1)
            return {&first_, 1};
        return more_;
    }
    void assign_sgl(const NDK_SGE *sgl, ULONG count)
    {
        count_ = count;
        if (count == 1)
            first_ = sgl[0];
        else
            more_.assign(sgl, sgl + count);
    }

    void clear() // for reuse by the next receive (RequestQueue): the SGL keeps its capacity
    {
        context = nullptr;
        count_ = 0;
        more_.clear();
    }

private:
    NDK_SGE first_{};            // the SGL when it has one entry
    ULONG count_ = 0;
    std::vector<NDK_SGE> more_;  // the SGL when it has none or more than one
};
static_assert(sizeof(ReceiveRequest) == 64, "a receive of one SGE is one cache line");

// A posted initiator request (digest 1.7), kept until the engine executes it.
struct WorkRequest {
    NDK_OPERATION_TYPE type = NdkOperationTypeSend; // Send also for SendAndInvalidate
    PVOID context = nullptr;
    ULONG flags = 0;
    std::vector<NDK_SGE> sgl;
    std::vector<unsigned char> inline_data; // NDK_OP_FLAG_INLINE: copied at post time
    UINT64 remote_address = 0;
    UINT32 remote_token = 0;
    bool invalidate_remote = false; // SendAndInvalidate: remote_token is invalidated
    // A post check left to execution (knobs sge_check, flag_check = completion): the status
    // the request completes with instead of executing, or SUCCESS.
    NTSTATUS refused = STATUS_SUCCESS;
    SoftMr *mr = nullptr;           // Bind, FastRegister, Invalidate of an MR
    SoftMw *mw = nullptr;           // Bind, Invalidate of an MW
    uintptr_t address = 0;          // Bind: window start; FastRegister: base virtual address
    SIZE_T length = 0;
    std::vector<uint64_t> pages; // FastRegister
    ULONG fbo = 0;
    // The MRs the SGL names, held from the commit to the completion (SoftMr::hold_for_request;
    // complete_initiator releases them, so a slot is reused empty).
    std::vector<SoftMr *> held_mrs;

    void clear() // for reuse by the next post (RequestQueue): the vectors keep their capacity
    {
        type = NdkOperationTypeSend;
        context = nullptr;
        flags = 0;
        sgl.clear();
        inline_data.clear();
        remote_address = 0;
        remote_token = 0;
        invalidate_remote = false;
        refused = STATUS_SUCCESS;
        mr = nullptr;
        mw = nullptr;
        address = 0;
        length = 0;
        pages.clear();
        fbo = 0;
    }
};

class Channel;
class ConnectorLink;
class SoftConnector;
class SoftQp;

class SoftSrq : public SoftTyped<NDK_SRQ, NdkObjectTypeSrq, NDK_SRQ_DISPATCH, &kSrqDispatch> {
public:
    using SoftTyped::SoftTyped;
    static SoftSrq *from(NDK_SRQ *srq) { return static_cast<SoftSrq *>(srq); }

    SoftPd *pd = nullptr;
    ULONG depth = 0;
    ULONG max_sge = 0;
    ULONG threshold = 0; // > 0: armed
    RequestQueue<ReceiveRequest> receives; // posted and not consumed
    // The connections of its QPs take receives at once under the shared wire lock: this
    // guards `receives` and the threshold then (posting and modifying are exclusive).
    std::mutex take_mu;
    std::vector<SoftQp *> qps;           // QPs created on this SRQ
    NDK_FN_SRQ_NOTIFICATION_CALLBACK notify = nullptr;
    PVOID notify_context = nullptr;
};

class SoftQp : public SoftTyped<NDK_QP, NdkObjectTypeQp, NDK_QP_DISPATCH, &kQpDispatch>,
               public kit::QpSizes {
public:
    using SoftTyped::SoftTyped;
    static SoftQp *from(NDK_QP *qp) { return static_cast<SoftQp *>(qp); }

    SoftPd *pd = nullptr;
    SoftCq *receive_cq = nullptr;
    SoftCq *initiator_cq = nullptr;
    SoftSrq *srq = nullptr;
    PVOID context = nullptr;
    RequestQueue<ReceiveRequest> receives; // posted and not consumed

    // Connection state (digest 3.5, 3.6; docs/semantics.md, QP-STATE).
    enum class State {
        Idle,         // never connected: initiator posts report CONNECTION_INVALID
        Connected,    // linked to `peer`
        Disconnected, // the connection ended gracefully: CONNECTION_INVALID, queues kept
        Error,        // an error completion ended it: posts complete with STATUS_CANCELLED
    };
    State state = State::Idle;
    // The connection's data path to the peer, set while Connected (soft_channel.hpp).
    std::unique_ptr<Channel> channel;
    SoftConnector *connector = nullptr;
    RequestQueue<WorkRequest> initiator; // posted, not executed (its head: initiator_head)
    // The lock of this QP's connection, in its ConnectionLine: its own until the connection
    // is established, then one line shared with the peer QP, so the two ends of a connection
    // are serialized and two connections are not.  Replaced only with the wire lock held
    // exclusive, through share_connection_lock (its CQs count who completes into them:
    // CqProducers), which also moves this QP's queue counts into the shared line at `end`
    // (soft_connection_line.hpp).
    std::shared_ptr<ConnectionLine> connection = std::make_shared<ConnectionLine>();
    std::mutex &connection_mu() const { return connection->mu; }
    void share_connection_lock(std::shared_ptr<ConnectionLine> line, size_t end);

    // From here to `local_spans`: what this QP's own posts write on each message (the
    // initiator queue's head, `released`, `in_flight`), in a line of its own, apart from the
    // fields above, which the peer's transfers and posts read in process (srq, receive_cq,
    // context, the queues' storage and where their counts are), so that no line the peer reads
    // is written by this end on each message (docs/performance.md, "Two threads").
    // The initiator queue's head, and its count until an in-process connection takes that
    // into its line (RequestQueue::place_counts, at creation).
    alignas(64) uint32_t initiator_head = 0, initiator_count = 0;
    size_t released = 0;   // how many of `initiator` may execute (the rest are deferred)
    // How many requests at the front of `initiator` the channel carries (one, or several
    // Writes and Sends where the channel pipelines them); answered() ends the first.
    size_t in_flight = 0;
    // The last of those settled when it executed, behind others in flight (it failed before
    // reaching the peer): its status, for when it is first, so completions keep posting order.
    std::optional<NTSTATUS> settled_behind;
    uint64_t rnr_timer = 0; // the head send waits for a receive at the peer until this fires
    uint64_t rnr_generation = 0;
    // The shared data path met a request that changes memory access and left it for the
    // engine (soft_transfer.cpp, pump).
    bool continuation_queued = false;

    // What a transfer writes at each end, in two cache lines: the first written by the thread
    // running this QP's initiator, the second by the peer's transfers arriving at this QP's
    // target side (in process, the peer's thread), so that neither line is written from both
    // ends of a connection on each message (docs/performance.md, "Two threads").  Each holds
    // the spans of that transfer (its source or sink; the operation being placed,
    // soft_target.hpp), kept between transfers so that moving data allocates nothing once
    // they have grown, and the RDMA traffic counters (OID_NDK_STATISTICS) of that direction,
    // kept here so that two connections never write one line either; the OID adds them up and
    // a destroyed QP folds them into its miniport's counters.  Under the connection's lock.
    struct Counted {
        uint64_t octets = 0, frames = 0;
    };
    alignas(64) Spans local_spans;
    Counted sent;     // a Send's or Write's payload, a Read Response this QP was the target of
    alignas(64) Spans incoming_spans;
    Counted received; // a Send or Write this QP was the target of, a Read Response it read
    void add_traffic_to(NDIS_NDK_PERFORMANCE_COUNTERS &c) const
    {
        c.RDMAOutOctets += sent.octets;
        c.RDMAOutFrames += sent.frames;
        c.RDMAInOctets += received.octets;
        c.RDMAInFrames += received.frames;
    }

    ~SoftQp() override;

protected:
    void on_close() override;
};

class SoftSharedEndpoint
    : public SoftTyped<NDK_SHARED_ENDPOINT, NdkObjectTypeSharedEndpoint,
                       NDK_SHARED_ENDPOINT_DISPATCH, &kSharedEndpointDispatch> {
public:
    using SoftTyped::SoftTyped;
    static SoftSharedEndpoint *from(NDK_SHARED_ENDPOINT *se)
    {
        return static_cast<SoftSharedEndpoint *>(se);
    }
    std::shared_ptr<PortReservation> port;

protected:
    void on_close() override { port.reset(); }
};

class SoftListener : public SoftTyped<NDK_LISTENER, NdkObjectTypeListener, NDK_LISTENER_DISPATCH,
                                      &kListenerDispatch> {
public:
    using SoftTyped::SoftTyped;
    static SoftListener *from(NDK_LISTENER *l) { return static_cast<SoftListener *>(l); }

    NDK_FN_CONNECT_EVENT_CALLBACK connect_event = nullptr;
    PVOID connect_event_context = nullptr;
    bool listening = false;
    bool paused = false;
    std::shared_ptr<PortReservation> port;

protected:
    void on_close() override;
};

class SoftConnector : public SoftTyped<NDK_CONNECTOR, NdkObjectTypeConnector,
                                       NDK_CONNECTOR_DISPATCH, &kConnectorDispatch> {
public:
    using SoftTyped::SoftTyped;
    static SoftConnector *from(NDK_CONNECTOR *c) { return static_cast<SoftConnector *>(c); }

    // Establishment and connection (digest 1.8, 3.5, 3.6; docs/semantics.md, CONN-STATE).
    enum class State {
        Idle,         // created; Connect / ConnectWithSharedEndpoint may be called
        Connecting,   // active: waiting for the peer's Accept or Reject
        Incoming,     // passive: delivered by a connect event, waiting for Accept or Reject
        Replied,      // active: Connect completed, waiting for CompleteConnect or Reject
        Accepting,    // passive: Accept called, waiting for the peer's CompleteConnect
        Connected,
        Disconnected, // ended (either side, gracefully or not); cannot be reused
        Failed,       // establishment ended (rejected, refused, aborted, timed out)
    };
    State state = State::Idle;
    bool passive = false;
    // The line to the other side's connector while establishing or connected, null once the
    // relation ended or the other side gave up (soft_connector_link.hpp).
    std::unique_ptr<ConnectorLink> link;
    SoftQp *qp = nullptr;
    SoftListener *listener = nullptr; // passive: the listener that delivered it
    std::shared_ptr<PortReservation> port; // the local endpoint reference (digest 3.5)
    Endpoint local, remote;
    bool tuple_registered = false;
    // Read limits: requested by this side, then effective (what GetConnectionData reports).
    ULONG inbound_read_limit = 0, outbound_read_limit = 0;
    // Passive: the limits the connect request carried (the active side's requested ones).
    ULONG requested_inbound_read_limit = 0, requested_outbound_read_limit = 0;
    // The peer's private data, as GetConnectionData returns it.
    std::vector<unsigned char> peer_private_data;
    bool data_available = false; // GetConnectionData has something to report
    // The establishment request in flight (Connect, Accept or CompleteConnect).
    NDK_FN_REQUEST_COMPLETION pending_completion = nullptr;
    PVOID pending_context = nullptr;
    uint64_t timer = 0; // establishment timeout
    uint64_t timer_generation = 0;
    bool local_disconnect = false; // NdkDisconnect was called on this side
    // Disconnect event registered by CompleteConnect(Ex) / Accept(Ex).
    NDK_FN_DISCONNECT_EVENT_CALLBACK disconnect_event = nullptr;
    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX disconnect_event_ex = nullptr;
    PVOID disconnect_context = nullptr;
    bool disconnect_indicated = false;
    bool counted_active = false; // counted in ActiveConnection

    ~SoftConnector() override;

protected:
    void on_close() override;
};

// NDK_FN_CLOSE_OBJECT for a dispatch table: the header is the first member of every object.
template <class T>
NTSTATUS close_object(NDK_OBJECT_HEADER *header, NDK_FN_CLOSE_COMPLETION completion,
                      PVOID context)
{
    using Ndk = typename T::NdkType;
    return static_cast<T *>(reinterpret_cast<Ndk *>(header))->close(completion, context);
}

// Create functions of the adapter and PD dispatch tables, each in its object's file.
NTSTATUS create_cq(NDK_ADAPTER *, ULONG, NDK_FN_CQ_NOTIFICATION_CALLBACK, PVOID, GROUP_AFFINITY *,
                   NDK_FN_CREATE_COMPLETION, PVOID, NDK_CQ **);
NTSTATUS create_pd(NDK_ADAPTER *, NDK_FN_CREATE_COMPLETION, PVOID, NDK_PD **);
NTSTATUS create_shared_endpoint(NDK_ADAPTER *, const PSOCKADDR, ULONG, NDK_FN_CREATE_COMPLETION,
                                PVOID, NDK_SHARED_ENDPOINT **);
NTSTATUS create_connector(NDK_ADAPTER *, NDK_FN_CREATE_COMPLETION, PVOID, NDK_CONNECTOR **);
NTSTATUS create_listener(NDK_ADAPTER *, NDK_FN_CONNECT_EVENT_CALLBACK, PVOID,
                         NDK_FN_CREATE_COMPLETION, PVOID, NDK_LISTENER **);
NTSTATUS create_mr(NDK_PD *, BOOLEAN, NDK_FN_CREATE_COMPLETION, PVOID, NDK_MR **);
NTSTATUS create_mw(NDK_PD *, NDK_FN_CREATE_COMPLETION, PVOID, NDK_MW **);
NTSTATUS create_srq(NDK_PD *, ULONG, ULONG, ULONG, NDK_FN_SRQ_NOTIFICATION_CALLBACK, PVOID,
                    GROUP_AFFINITY *, NDK_FN_CREATE_COMPLETION, PVOID, NDK_SRQ **);
NTSTATUS create_qp(NDK_PD *, NDK_CQ *, NDK_CQ *, PVOID, ULONG, ULONG, ULONG, ULONG, ULONG,
                   NDK_FN_CREATE_COMPLETION, PVOID, NDK_QP **);
NTSTATUS create_qp_with_srq(NDK_PD *, NDK_CQ *, NDK_CQ *, NDK_SRQ *, PVOID, ULONG, ULONG, ULONG,
                            NDK_FN_CREATE_COMPLETION, PVOID, NDK_QP **);
NTSTATUS build_lam(NDK_ADAPTER *, MDL *, SIZE_T, NDK_FN_REQUEST_COMPLETION, PVOID,
                   NDK_LOGICAL_ADDRESS_MAPPING *, ULONG *, ULONG *);
VOID release_lam(NDK_ADAPTER *, NDK_LOGICAL_ADDRESS_MAPPING *);

// Deliver an event callback of `object` on the engine.  Until it returns the object counts it
// as a dependent, so a close issued meanwhile pends (digest 3.1: "a close stays pending until
// ... all event callbacks have returned").  Lock held.
void deliver_event(SoftObject &object, std::function<void()> callback);

// Enter the CQ error state with `status` (digest 1.3: STATUS_BUFFER_OVERFLOW for an overrun,
// STATUS_INTERNAL_ERROR for a fatal error): the completions it holds are dropped, none is
// reported after, its QPs' posts fail (CQ-OVERRUN-QP) and the arm is told once (CQ-ERROR-ARM).
// A CQ already in error keeps its first status.  Lock held.
void fail_cq(SoftCq &cq, NTSTATUS status);
// What follows a completion's entry into the CQ's ring (post_result): an armed consumer is
// told (digest 3.2).  The CQ's producers serialized.
void result_posted(SoftCq &cq, NTSTATUS status, bool solicited);
// Queue a completion of `status` on a CQ and notify an armed consumer (digest 3.2); `fill`
// writes the result's other fields straight into its slot (CqRing::push).  Lock held.
template <class Fill>
void post_result(SoftCq &cq, NTSTATUS status, bool solicited, Fill &&fill)
{
    // Connections on other threads may complete here too, unless the caller's connection lock
    // is the only one the CQ's producers hold (CqProducers): then it is the one lock taken.
    std::unique_lock lock(cq.completion_mu, std::defer_lock);
    if (!cq.producers.serialized_by_connection())
        lock.lock();
    if (cq.error != STATUS_SUCCESS)
        return; // no further completions are reported after a CQ error (digest 1.3)
    if (!cq.results.push(cq.depth, [&](NDK_RESULT_EX &slot) {
            slot.Status = status;
            fill(slot);
        })) {
        fail_cq(cq, STATUS_BUFFER_OVERFLOW); // overrun: the CQ is unusable from now on
        return;
    }
    result_posted(cq, status, solicited);
}

// Fire the SRQ limit notification when armed and below the threshold (digest 1.6).  Lock held.
void srq_check_threshold(SoftSrq &srq);

// Complete an asynchronous request that holds a dependent reference on `object` (taken when
// the request was issued): the completion runs on the engine, then the reference is dropped.
// Lock held.
void complete_held_request(SoftObject &object, NDK_FN_REQUEST_COMPLETION completion,
                           PVOID context, NTSTATUS status);

// The processor-affinity check shared by CreateCq and CreateSrq.

} // namespace ndk::soft
