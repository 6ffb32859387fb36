// The loop provider's adapter and NDK objects.  Each object is its NDK structure
// ({Header; Dispatch}) and a kit::AdapterObject (digest 3.1 lifetime); its functions live in
// one file per object (loop_cq.cpp, loop_pd.cpp, loop_qp.cpp, loop_connector.cpp,
// loop_listener.cpp).  Every member is guarded by the fabric lock (loop_fabric.hpp).
#pragma once

#include "loop_engine.hpp"
#include "loop_fabric.hpp"
#include "providers/kit/kit_cq_arm.hpp"
#include "providers/kit/kit_create_checks.hpp"
#include "providers/kit/kit_notification_cpus.hpp"
#include "providers/kit/kit_lifetime.hpp"
#include "providers/kit/kit_object_header.hpp"
#include "providers/kit/kit_object_registry.hpp"

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

namespace ndk::loop {

using kit::init_header;
using kit::query_extension_not_supported;

class LoopAdapter;

class LoopObject : public kit::AdapterObject<LoopAdapter> {
public:
    using AdapterObject::AdapterObject;
    // NDK_FN_CLOSE_OBJECT of every object type.
    NTSTATUS close(NDK_FN_CLOSE_COMPLETION completion, PVOID context);
    // The adapter closes with the object still open: close it without waiting for anything
    // (engine thread, lock held); the adapter then frees it.
    void shut_down();

protected:
    // The close was requested (lock held): cancel what is in flight, leave the fabric.
    virtual void on_close() {}
    void on_last_dependent() override;

private:
    void finish(); // engine thread: the close completion, the antecedents, delete
};

class LoopAdapter : public NDK_ADAPTER {
public:
    LoopAdapter(Miniport &miniport, NDK_VERSION version);
    ~LoopAdapter(); // the blocking close (digest 3.1): no callback runs after it
    static LoopAdapter *from(NDK_ADAPTER *a) { return static_cast<LoopAdapter *>(a); }

    Miniport &miniport() const { return miniport_; }
    NDK_VERSION version() const { return version_; }
    static NDK_ADAPTER_INFO info(NDK_VERSION version);
    NDK_ADAPTER_INFO info() const { return info(version_); }
    Engine &engine() { return engine_; }

    template <class T>
    T *lookup(const void *ndk_object, NDK_OBJECT_TYPE type) const
    {
        return registry_.lookup<T>(ndk_object, type);
    }
    bool exists(const LoopObject *object) const { return registry_.exists(object); }
    // A new object: into the tables, out to the consumer (every create completes inline).
    template <class T, class Out>
    NTSTATUS created(T *object, Out **out)
    {
        {
            std::lock_guard lock(fabric_mu());
            adopt(object);
        }
        *out = object;
        return STATUS_SUCCESS;
    }
    void adopt(LoopObject *object); // lock held
    void forget(LoopObject *object) // lock held
    {
        registry_.remove(*object);
        std::erase(order_, object);
    }
    void retire(LoopObject *object) { registry_.retire(*object); } // lock held
    template <class F>
    void for_each_object(F &&visit) // lock held
    {
        for (LoopObject *object : order_)
            visit(*object);
    }

private:
    Miniport &miniport_;
    NDK_VERSION version_;
    kit::ObjectRegistry<LoopObject> registry_;
    std::vector<LoopObject *> order_; // creation order
    Engine engine_;                   // last: stops first
};

template <class Ndk>
using NdkObject = kit::NdkObject<Ndk, LoopObject>;

// The same close function in every dispatch table.
template <class T>
NTSTATUS close_object(NDK_OBJECT_HEADER *header, NDK_FN_CLOSE_COMPLETION completion, PVOID ctx)
{
    return T::template from_header<T>(header)->close(completion, ctx);
}

// ---- CQ, PD, MR ------------------------------------------------------------------------------

struct LCq : NdkObject<NDK_CQ> {
    explicit LCq(LoopAdapter &a);
    ULONG depth = 0;
    NDK_FN_CQ_NOTIFICATION_CALLBACK notify = nullptr;
    PVOID notify_context = nullptr;
    kit::NotificationCpus notify_cpus; // NdkCreateCq's Affinity: where the callback runs
    kit::CqArm arm;
    NTSTATUS error = STATUS_SUCCESS; // an overrun: no further completions (digest 1.3)
    std::deque<NDK_RESULT_EX> results;
    // A completion arrives; `solicited` for a solicited send's receive.  Lock held.
    void add(const NDK_RESULT_EX &result, bool solicited);
    void notify_if_owed(); // lock held: the callback goes through the engine
};

struct LPd : NdkObject<NDK_PD> {
    explicit LPd(LoopAdapter &a);
};

struct LMr : NdkObject<NDK_MR> {
    LMr(LoopAdapter &a, LPd &pd);
    LPd &pd;
    bool registered = false;
    uintptr_t base = 0;
    size_t length = 0;
    ULONG flags = 0;
    UINT32 local_token = 0, remote_token = 0;
    void deregister(); // lock held

protected:
    void on_close() override { deregister(); }
};

// ---- QP --------------------------------------------------------------------------------------

struct LConnector;

// A posted request: what it does, its data, and where.
struct WorkRequest {
    NDK_OPERATION_TYPE type = NdkOperationTypeSend;
    PVOID context = nullptr;
    ULONG flags = 0;
    std::vector<NDK_SGE> sgl;
    std::vector<uint8_t> inline_data; // NDK_OP_FLAG_INLINE: the bytes, taken at the post
    UINT64 remote_address = 0;
    UINT32 remote_token = 0;
    bool invalidate = false; // NdkSendAndInvalidate of remote_token
};

struct LQp : NdkObject<NDK_QP>, kit::QpSizes {
    LQp(LoopAdapter &a, LPd &pd);
    enum class State { Idle, Connected, Disconnected, Error };
    LPd &pd;
    LCq *receive_cq = nullptr;
    LCq *initiator_cq = nullptr;
    PVOID qp_context = nullptr;
    State state = State::Idle;
    LConnector *connector = nullptr; // the connection it carries (one in its life)
    LQp *peer = nullptr;
    std::deque<WorkRequest> initiator, receives;
    size_t released = 0; // initiator requests not held back by DEFER (digest 3.4)

    void pump();             // execute what is released, in order (lock held)
    void flush();            // everything queued completes STATUS_CANCELLED (lock held)
    void fail_connection();  // an error completion ends the connection (docs/semantics.md QP-ERROR)
    void complete(const WorkRequest &wr, NTSTATUS status, ULONG bytes = 0, bool solicited = false);

protected:
    void on_close() override { flush(); }
};

// ---- connector, listener ---------------------------------------------------------------------

struct LListener : NdkObject<NDK_LISTENER> {
    LListener(LoopAdapter &a, NDK_FN_CONNECT_EVENT_CALLBACK event, PVOID context);
    NDK_FN_CONNECT_EVENT_CALLBACK connect_event;
    PVOID connect_context;
    bool listening = false;
    bool paused = false;
    Endpoint local;

protected:
    void on_close() override;
};

struct LConnector : NdkObject<NDK_CONNECTOR> {
    explicit LConnector(LoopAdapter &a);
    enum class State {
        Idle,       // nothing yet
        Connecting, // active: Connect pending, the passive side has not answered
        Incoming,   // passive: delivered by a connect event; Accept or Reject next
        Replied,    // active: Connect completed (accepted); CompleteConnect or Reject next
        Accepting,  // passive: Accept pending until the active side's CompleteConnect
        Connected,
        Disconnected, // the peer ended it; one local Disconnect remains allowed
        Done,         // refused, rejected, aborted, or disconnected locally: spent
    };
    State state = State::Idle;
    bool passive = false;
    LQp *qp = nullptr;
    LConnector *peer = nullptr; // nullptr once the peer abandoned
    Endpoint local, remote;
    bool holds_port = false;
    ULONG inbound_limit = 0, outbound_limit = 0;
    std::vector<uint8_t> peer_data; // private data received (GetConnectionData)
    bool data_available = false;
    NDK_FN_REQUEST_COMPLETION pending = nullptr; // Connect or Accept in flight
    PVOID pending_context = nullptr;
    NDK_FN_DISCONNECT_EVENT_CALLBACK on_disconnect = nullptr;
    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX on_disconnect_ex = nullptr;
    PVOID disconnect_context = nullptr;
    bool counted_active = false;

    void finish_pending(NTSTATUS status); // the Connect or Accept completes (lock held)
    void establishment_failed(NTSTATUS status);
    // The connection ends: both sides leave it, the peer is told why (reason, digest 1.11).
    void end_connection(ULONG reason);

protected:
    void on_close() override;
};

// ProviderDisconnectReason values (docs/semantics.md, DISCONNECT-REASON, as soft).
constexpr ULONG kReasonDisconnect = 1, kReasonClosed = 2, kReasonError = 3;

// ---- dispatch tables and creates --------------------------------------------------------------

extern const NDK_CQ_DISPATCH kCqDispatch;
extern const NDK_PD_DISPATCH kPdDispatch;
extern const NDK_MR_DISPATCH kMrDispatch;
extern const NDK_QP_DISPATCH kQpDispatch;
extern const NDK_CONNECTOR_DISPATCH kConnectorDispatch;
extern const NDK_LISTENER_DISPATCH kListenerDispatch;

NTSTATUS create_cq(NDK_ADAPTER *, ULONG, NDK_FN_CQ_NOTIFICATION_CALLBACK, PVOID, GROUP_AFFINITY *,
                   NDK_FN_CREATE_COMPLETION, PVOID, NDK_CQ **);
NTSTATUS create_pd(NDK_ADAPTER *, NDK_FN_CREATE_COMPLETION, PVOID, NDK_PD **);
NTSTATUS create_connector(NDK_ADAPTER *, NDK_FN_CREATE_COMPLETION, PVOID, NDK_CONNECTOR **);
NTSTATUS create_listener(NDK_ADAPTER *, NDK_FN_CONNECT_EVENT_CALLBACK, PVOID,
                         NDK_FN_CREATE_COMPLETION, PVOID, NDK_LISTENER **);
NTSTATUS create_qp(NDK_PD *, NDK_CQ *, NDK_CQ *, PVOID, ULONG, ULONG, ULONG, ULONG, ULONG,
                   NDK_FN_CREATE_COMPLETION, PVOID, NDK_QP **);

// A local address given to Listen or Connect: the unspecified address is the adapter's first of
// that family; another RNIC's address is STATUS_INVALID_ADDRESS (docs/semantics.md, ADDRESS).
NTSTATUS resolve_local(const LoopAdapter &a, Endpoint &at); // loop_listener.cpp

// Call a consumer callback on `adapter`'s engine, never inside the consumer's call.
inline void deliver(LoopAdapter &adapter, std::function<void()> callback)
{
    adapter.engine().post(std::move(callback));
}

} // namespace ndk::loop
