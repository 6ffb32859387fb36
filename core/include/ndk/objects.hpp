// The C++ consumer API: RAII handles over the NDK C ABI.  Every asynchronous NDK function is a
// method returning a Call (core/include/ndk/call.hpp); inline functions return their NTSTATUS.
// A handle keeps what it depends on alive (its adapter, its parent, its antecedents), and
// closes its object when the last reference goes.  That close does not wait: the object's
// event sink stays in the context table until the provider completes the close (or the
// adapter goes), so no callback can reach freed memory (object.cpp).  Methods on a closed
// object throw ndk::ClosedError.
#pragma once

#include "ndk/address.hpp"
#include "ndk/call.hpp"
#include "ndk/close_signal.hpp"
#include "ndk/events.hpp"
#include "ndk/private_data.hpp"
#include "ndk/registry.hpp"
#include "ndk/validation.hpp"

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <typeinfo>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ndk {

class Adapter;
class Cq;
class Lam;
class Object;
class Srq;

// "CQ", "PD", ...: an object type as messages name it.
const char *object_type_name(NDK_OBJECT_TYPE type);

// One call into the provider in progress on an object (and its adapter), from Object::enter()
// or Adapter::enter() to the end of the scope.  This is the consumer side's concurrency
// contract (docs/semantics.md, "The consumer's side"), kept here once for every method: a call
// is entered only while its object and adapter are open (else ClosedError), and a close that
// meets calls in flight pends: the provider's close is issued when the last of them returns,
// so a provider never sees an object closed under a call still running on it.
class [[nodiscard]] InCall {
public:
    InCall(InCall &&other) noexcept
        : object_(std::exchange(other.object_, nullptr)),
          adapter_(std::exchange(other.adapter_, nullptr))
    {
    }
    InCall(const InCall &) = delete;
    InCall &operator=(const InCall &) = delete;
    InCall &operator=(InCall &&) = delete;
    ~InCall();

private:
    friend class Object;
    friend class Adapter;
    InCall(Object *object, Adapter *adapter) : object_(object), adapter_(adapter) {}
    Object *object_;
    Adapter *adapter_;
};

class Object : public std::enable_shared_from_this<Object> {
public:
    virtual ~Object();
    Object(const Object &) = delete;
    Object &operator=(const Object &) = delete;

    NDK_OBJECT_HEADER *header() const { return header_; }
    // Remembered at creation: the header is the provider's memory, gone once closed.
    NDK_OBJECT_TYPE type() const { return type_; }
    const std::shared_ptr<Adapter> &adapter() const { return adapter_; }
    // False once close() was called (even if the close is still pending).
    bool is_open() const;
    // NdkCloseXxx.  A second call returns the first call's record.
    Call close();
    // True once nothing issued on the object can complete any more: the provider completed
    // its close (its requests' completions come before it, digest 3.1), or the adapter is
    // torn down.
    bool close_completed() const;
    // Throws ClosedError when closed or when the adapter is closed.
    void check_open() const;
    // Run `wake` (on the closing thread) whenever a close changes what check_open or
    // close_completed answer: this object's close, its completion, its adapter's close and
    // teardown.  For as long as the watches live (docs/semantics.md, WAIT-CLOSED).
    std::vector<CloseSignal::Watch> watch_close(const CloseSignal::Wake &wake) const;
    // Enter a call into the provider on this object: ClosedError when closed (InCall).
    InCall enter() const;
    // Keep `antecedent` alive as long as this handle: a successor made so by a call rather
    // than at creation (QP -> connector via Connect/Accept, MR -> MW via Bind; digest 3.1).
    void hold(std::shared_ptr<Object> antecedent);

protected:
    Object(std::shared_ptr<Adapter> adapter, NDK_OBJECT_HEADER *header,
           NDK_FN_CLOSE_OBJECT close_function, std::vector<std::shared_ptr<Object>> holds = {});
    // Called by close() just before it calls NdkCloseXxx, once.  Not called from ~Object (the
    // derived part is gone by then): a derived class that needs it closes in its destructor.
    virtual void closing() {}
    // What the object holds for the provider (registered memory), handed over when the close
    // is issued and dropped once it completes: the provider may use it until then.
    virtual std::shared_ptr<void> held_until_closed() { return nullptr; }
    // The context the provider's event callbacks get (Adapter::event_context), or nullptr:
    // released when the close completes, or with the adapter.
    void *event_context_ = nullptr;

private:
    friend class InCall;
    void leave() const;
    void issue_close(Call call);

    std::shared_ptr<Adapter> adapter_;
    NDK_OBJECT_HEADER *header_;
    NDK_OBJECT_TYPE type_;
    NDK_FN_CLOSE_OBJECT close_function_; // read once: the consumer owns Dispatch afterwards
    std::vector<std::shared_ptr<Object>> holds_;
    mutable std::mutex mu_;
    Call close_call_;
    // Set as close() begins: ends the fault layer's holds of the calls on this object
    // (fault::enter_closable, docs/semantics.md CLOSE-HELD).
    std::atomic<bool> closing_{false};
    std::shared_ptr<CloseSignal> close_signal_ = std::make_shared<CloseSignal>();
    // Set as the provider completes the close (shared: the completion may outlive the handle).
    std::shared_ptr<std::atomic<bool>> close_done_ = std::make_shared<std::atomic<bool>>(false);
    mutable int calls_in_flight_ = 0;
    mutable bool close_deferred_ = false; // close() met calls in flight: the last one issues it
};

class Adapter : public std::enable_shared_from_this<Adapter> {
public:
    // Create a miniport on the provider with `options` ("key=value" lines) and open an NDK
    // adapter on it asking for `version` (major, lowest acceptable minor).  Throws ndk::Error
    // with the NDIS status (e.g. NDIS_STATUS_BAD_VERSION) or the provider's reason.
    // With `validate`, the provider is wrapped in the validation layer (ndk/validation.hpp):
    // validation() then gives what it recorded.
    static std::shared_ptr<Adapter> open(const std::string &provider, const std::string &options,
                                         NDK_VERSION version = {2, 0}, bool validate = false);
    ~Adapter();

    NDK_ADAPTER *ndk() const { return ndk_; }
    const std::string &provider_name() const { return provider_->name(); }
    // False once close() began (even while it pends on calls in flight), and in a process
    // forked from the one that opened it.
    bool is_open() const;
    // True in a process forked after the open (docs/semantics.md, FORK): the adapter, its
    // objects, its provider state and threads are the parent's; the child neither uses them
    // (InheritedError) nor closes them (close() and the destructors leave them as they are).
    bool inherited() const;
    void check_open() const;
    // Run `wake` (on the closing thread) as the adapter's close begins and as it tears the
    // provider's adapter down (is_open, accepts_closes), for as long as the watch lives.
    CloseSignal::Watch watch_close(const CloseSignal::Wake &wake) const;
    // Enter a call into the provider on the adapter: ClosedError once closing (InCall).
    InCall enter();
    // Close every object still open (successors first), then the adapter.  Blocking, unless
    // calls are in flight on the adapter or its objects (another thread is inside the
    // provider): then it returns at once, and the last of those calls to return finishes
    // the close.  Knobs stay usable until then (a `hold` can still be released).
    void close();
    // End every call the fault layer holds on this adapter (knob `hold`, docs/knobs.md) and
    // disarm its hold: the adapter's close does (an object's close ends the holds of the calls
    // on that object: CLOSE-HELD).
    void end_holds();
    // True until the provider's adapter is closed: objects may still issue their closes.
    bool accepts_closes() const;
    // An object's close about to reach the provider: false once the adapter is torn down.
    // While one is under way (until end_close), the adapter's close does not free the
    // provider's adapter under it: it pends like a call in flight, and end_close finishes it.
    bool begin_close();
    void end_close();

    NTSTATUS query_adapter_info(NDK_ADAPTER_INFO *info, ULONG *size);
    NDK_ADAPTER_INFO query_info(); // throws ndk::Error
    NTSTATUS query_extension(GUID *id, NDK_VERSION version, NDK_EXTENSION_INTERFACE *out);

    // NDIS OID requests on the adapter's miniport (digest 3.7), through the provider entry's
    // OidRequest.  A provider without one answers NDIS_STATUS_INVALID_OID, as NDIS does for an
    // OID the miniport does not support.  `written` / `needed` may be null.
    bool has_oids() const { return provider_->entry().OidRequest != nullptr; }
    NDIS_STATUS query_oid(NDIS_OID oid, void *buffer, ULONG length, ULONG *written,
                          ULONG *needed);
    NDIS_STATUS set_oid(NDIS_OID oid, const void *buffer, ULONG length);
    // The miniport's NDIS_NDK_CAPABILITIES (digest 3.7), through the provider entry's
    // QueryNdkCapabilities; NDIS_STATUS_NOT_SUPPORTED when the provider does not report them
    // (NdkHarnessReportsCapabilities).  NdkInfo is left NULL.
    NDIS_STATUS query_ndk_capabilities(NDIS_NDK_CAPABILITIES &capabilities);

    Call create_cq(ULONG cq_depth, const GROUP_AFFINITY *affinity = nullptr);
    Call create_pd();
    Call create_connector();
    Call create_listener();
    Call create_shared_endpoint(SocketAddress address);
    // NdkBuildLAM over the MDL chain (linked here; kept until the call completes) into a
    // mapping of `lam_size` bytes (default: enough for the pages touched).  The Lam's fields
    // are valid once the Call is done; it holds `keepalive` while mapped (ndk/lam.hpp).
    std::pair<Call, std::shared_ptr<Lam>> build_lam(std::vector<MDL> chain, SIZE_T length,
                                                    std::optional<ULONG> lam_size,
                                                    std::shared_ptr<void> keepalive);

    // Knobs (provider-defined text key/value pairs); STATUS_NOT_SUPPORTED when unknown.
    bool has_knobs() const { return provider_->entry().ControlMiniport != nullptr; }
    NTSTATUS set_knob(const std::string &key, const std::string &value, std::string &reply);
    NTSTATUS get_knob(const std::string &key, std::string &value);
    // The adapter's IP addresses as its provider states them (knob `address`:
    // "192.0.2.1,2001:db8::1"), in order; nullopt when the provider does not say.
    std::optional<std::vector<std::string>> addresses();

    void track(const std::shared_ptr<Object> &object);

    // A context for the provider's event callbacks (CQ and SRQ notifications, connect and
    // disconnect events): a handle to `sink` in the consumer's context table, valid until
    // released or until the adapter is torn down, so a callback after that finds nothing
    // (core/src/consumer/context_table.hpp).  The callback looks it up with find_event_sink.
    template <class T>
    void *event_context(std::shared_ptr<T> sink)
    {
        return add_event_context(typeid(T), std::move(sink));
    }
    template <class T>
    static std::shared_ptr<T> find_event_sink(void *context)
    {
        return std::static_pointer_cast<T>(find_event_context(typeid(T), context));
    }
    // Let it go (a completion may call this: it needs no adapter reference).
    static void forget_event_context(void *context);
    // Release it if `create` fails: no object will own it.
    void release_on_failure(const Call &create, void *context);

    // The validation layer's record of this adapter; nullptr when opened without validation.
    const std::shared_ptr<validate::Session> &validation() const { return validation_; }

private:
    friend class Call;
    friend class InCall;
    friend class Object;
    Adapter(std::shared_ptr<Provider> provider, NDIS_HANDLE miniport, NDK_ADAPTER *adapter);
    void enter_call();
    void leave();
    [[noreturn]] void throw_inherited() const;
    void *add_event_context(const std::type_info &type, std::shared_ptr<void> sink);
    // Remember a context handed to the provider on this adapter (an event sink's, a call's):
    // finish_close() erases what is left of them from the context table.
    void track_context(void *context);
    static std::shared_ptr<void> find_event_context(const std::type_info &type, void *context);
    std::vector<Call> close_children();
    void finish_close(std::vector<Call> closes);

    std::shared_ptr<Provider> provider_;
    NDIS_HANDLE miniport_;
    NDK_ADAPTER *ndk_;
    std::shared_ptr<validate::Session> validation_;
    const unsigned fork_generation_; // fork_generation() at the open
    const int opener_pid_;
    mutable std::mutex mu_;
    bool open_ = true;      // false once close() began
    bool torn_down_ = false; // the provider's adapter and miniport are gone
    std::atomic<bool> closing_{false}; // open_, for the fault layer's holds (CLOSE-HELD)
    std::shared_ptr<CloseSignal> close_signal_ = std::make_shared<CloseSignal>();
    int calls_in_flight_ = 0;
    int closes_in_flight_ = 0; // objects' closes inside the provider (begin_close)
    std::condition_variable closes_done_;
    bool close_deferred_ = false;
    std::vector<Call> deferred_closes_;
    std::vector<std::weak_ptr<Object>> children_;
    // Every context handed to the provider on this adapter that may still be in the table
    // (event sinks, pending calls): once the provider's adapter is closed no callback can
    // come (digest 3.1), and what an entry holds must not outlive the adapter.
    std::unordered_set<void *> contexts_;
};

// A gate the consumer's notification callback waits at while closed: a test holds one
// callback inside the consumer, so a provider that delivers another callback on the same CQ
// meanwhile provably overlaps them (ndk.testing.raw.gate_cq_callbacks, for the validation
// layer's CQ-CALLBACK-CONCURRENT rule).  Open by default: then it costs one atomic load.
class CallbackGate {
public:
    void close();
    void open();
    // How many callbacks are waiting at the gate now.
    int waiting() const;
    void pass(); // called by the callback: returns once the gate is open

private:
    std::atomic<bool> closed_{false};
    mutable std::mutex mu_;
    std::condition_variable cv_;
    int waiting_ = 0;
};

struct CqEvents {
    EventQueue<NTSTATUS> notifications;
    CallbackGate gate;
    // NdkCreateCq's Affinity as the consumer passed it (nullopt: none), and the processor the
    // latest notification callback ran on (sched_getcpu; -1 before the first): where the
    // provider honored the preference (docs/semantics.md CQ-AFFINITY).
    std::optional<GROUP_AFFINITY> affinity;
    std::atomic<int> notification_cpu{-1};
};

// Arm and the result getters are serialized per CQ here, as the consumer must (digest 3.2),
// so callers on several threads (Python releases the GIL while polling) stay conforming.
class Cq : public Object {
public:
    Cq(std::shared_ptr<Adapter> adapter, NDK_CQ *cq, std::shared_ptr<CqEvents> events,
       void *event_context);
    NDK_CQ *ndk() const { return ndk_; }

    Call resize(ULONG cq_depth);
    void arm(ULONG type);
    std::vector<NDK_RESULT> get_results(ULONG n);
    std::vector<NDK_RESULT_EX> get_results_ex(ULONG n);
    ULONG get_results_into(std::span<NDK_RESULT_EX> results);
    NTSTATUS control_interrupt_moderation(ULONG interval, ULONG count);
    CqEvents &events() const { return *events_; }

    static void notification(PVOID context, NTSTATUS status);

private:
    NDK_CQ *ndk_;
    std::shared_ptr<CqEvents> events_;
    std::mutex poll_mu_; // digest 3.2: GetCqResults(Ex) and ArmCq never run concurrently
};

class Mr;
class Mw;
class Qp;

class Pd : public Object {
public:
    Pd(std::shared_ptr<Adapter> adapter, NDK_PD *pd);
    NDK_PD *ndk() const { return ndk_; }

    Call create_mr(bool fast_register);
    Call create_mw();
    Call create_srq(ULONG srq_depth, ULONG max_receive_request_sge, ULONG notify_threshold,
                    const GROUP_AFFINITY *affinity = nullptr);
    Call create_qp(const std::shared_ptr<Cq> &receive_cq, const std::shared_ptr<Cq> &initiator_cq,
                   PVOID qp_context, ULONG receive_queue_depth, ULONG initiator_queue_depth,
                   ULONG max_receive_request_sge, ULONG max_initiator_request_sge,
                   ULONG inline_data_size);
    Call create_qp_with_srq(const std::shared_ptr<Cq> &receive_cq,
                            const std::shared_ptr<Cq> &initiator_cq,
                            const std::shared_ptr<Srq> &srq, PVOID qp_context,
                            ULONG initiator_queue_depth, ULONG max_initiator_request_sge,
                            ULONG inline_data_size);
    UINT32 get_privileged_memory_region_token();

private:
    NDK_PD *ndk_;
};

class Mr : public Object {
public:
    Mr(std::shared_ptr<Adapter> adapter, NDK_MR *mr, std::shared_ptr<Pd> pd, bool fast_register);
    NDK_MR *ndk() const { return ndk_; }
    bool fast_register() const { return fast_register_; }

    // NdkRegisterMr with the consumer's MDL chain (kept until the call completes).  Every
    // registration path holds the memory it registers: `keepalive` from the call until the
    // region is deregistered (or the MR closed); C++ callers that own the memory pass none.
    Call register_mdl(std::vector<MDL> chain, SIZE_T length, ULONG flags,
                      std::shared_ptr<void> keepalive = {});
    // Register [address, address + length): the MDL chain is built here.
    Call register_buffer(void *address, SIZE_T length, ULONG flags,
                         std::shared_ptr<void> keepalive);
    Call deregister();
    Call initialize_fast_register(ULONG adapter_page_count, bool remote_access);
    UINT32 get_local_token();
    UINT32 get_remote_token();
    // The registered range, if registered through register_buffer or register_mdl.
    uintptr_t registered_address() const;
    SIZE_T registered_length() const;

protected:
    std::shared_ptr<void> held_until_closed() override;

private:
    NDK_MR *ndk_;
    bool fast_register_;
    mutable std::mutex mr_mu_;
    std::shared_ptr<std::vector<MDL>> mdl_;
    std::shared_ptr<void> keepalive_;
    uintptr_t address_ = 0;
    SIZE_T length_ = 0;
};

class Mw : public Object {
public:
    Mw(std::shared_ptr<Adapter> adapter, NDK_MW *mw, std::shared_ptr<Pd> pd);
    NDK_MW *ndk() const { return ndk_; }
    UINT32 get_remote_token();

private:
    NDK_MW *ndk_;
};

struct SrqEvents {
    EventQueue<NTSTATUS> notifications;
};

class Srq : public Object {
public:
    Srq(std::shared_ptr<Adapter> adapter, NDK_SRQ *srq, std::shared_ptr<Pd> pd,
        std::shared_ptr<SrqEvents> events, void *event_context);
    NDK_SRQ *ndk() const { return ndk_; }
    Call modify(ULONG srq_depth, ULONG notify_threshold);
    NTSTATUS receive(PVOID request_context, std::span<const NDK_SGE> sgl);
    SrqEvents &events() const { return *events_; }
    static void notification(PVOID context, NTSTATUS status);

private:
    NDK_SRQ *ndk_;
    std::shared_ptr<SrqEvents> events_;
};

// One single-SGE request of a batch (Qp::post_batch).  40 bytes with no padding, so a caller
// can hand over an array of records it filled elsewhere (the Python binding's post_many); an
// all-zero SGE (address 0, length 0) posts no SGL at all.
struct BatchRequest {
    uint64_t request_context;
    uint64_t address;
    uint32_t length;
    uint32_t token;
    uint64_t remote_address;
    uint32_t remote_token;
    uint32_t flags;
};
static_assert(sizeof(BatchRequest) == 40 && offsetof(BatchRequest, remote_address) == 24 &&
              offsetof(BatchRequest, flags) == 36);

enum class BatchOp { Send, Receive, Write, Read };

// How far a batch went: `posted` requests returned STATUS_SUCCESS; `status` is SUCCESS, or the
// status of the request at index `posted`, which was not posted (and none after it).
struct BatchOutcome {
    size_t posted = 0;
    NTSTATUS status = STATUS_SUCCESS;
};

// Posts are inline (digest 1.7): each returns the provider's NTSTATUS, and a request that
// returned STATUS_SUCCESS completes later through the CQ.
class Qp : public Object {
public:
    Qp(std::shared_ptr<Adapter> adapter, NDK_QP *qp, std::vector<std::shared_ptr<Object>> holds);
    NDK_QP *ndk() const { return ndk_; }
    void flush();
    NTSTATUS receive(PVOID request_context, std::span<const NDK_SGE> sgl);
    NTSTATUS send(PVOID request_context, std::span<const NDK_SGE> sgl, ULONG flags);
    NTSTATUS send_and_invalidate(PVOID request_context, std::span<const NDK_SGE> sgl,
                                 ULONG flags, UINT32 remote_token);
    NTSTATUS read(PVOID request_context, std::span<const NDK_SGE> sgl, UINT64 remote_address,
                  UINT32 remote_token, ULONG flags);
    NTSTATUS write(PVOID request_context, std::span<const NDK_SGE> sgl, UINT64 remote_address,
                   UINT32 remote_token, ULONG flags);
    // Bind makes the MW a successor of the MR (digest 3.1): the MW handle then holds the MR.
    NTSTATUS bind(PVOID request_context, const std::shared_ptr<Mr> &mr,
                  const std::shared_ptr<Mw> &mw, PVOID virtual_address, SIZE_T length,
                  ULONG flags);
    NTSTATUS fast_register(PVOID request_context, Mr &mr,
                           std::span<const NDK_LOGICAL_ADDRESS> adapter_page_array, ULONG fbo,
                           SIZE_T length, PVOID base_virtual_address, ULONG flags);
    NTSTATUS invalidate(PVOID request_context, Object &mr_or_mw, ULONG flags);
    // Many posts of one kind in one call, in order, stopping at the first that does not return
    // SUCCESS; `flags` are OR-ed into each request's.  One enter() for the whole batch.
    BatchOutcome post_batch(BatchOp op, std::span<const BatchRequest> requests, ULONG flags);

private:
    NDK_QP *ndk_;
};

struct ConnectorEvents {
    // One per disconnect callback: the ProviderDisconnectReason of
    // NDK_FN_DISCONNECT_EVENT_CALLBACK_EX, 0 for NDK_FN_DISCONNECT_EVENT_CALLBACK (digest 1.11).
    EventQueue<ULONG> disconnects;
};

class SharedEndpoint;

// A connector, created by the adapter or delivered by a listener's connect event.  Once
// Connect/Accept is called with a QP (or a shared endpoint), the handle holds it: the QP and
// the endpoint are antecedents of the connector (digest 3.1).
class Connector : public Object {
public:
    Connector(std::shared_ptr<Adapter> adapter, NDK_CONNECTOR *connector,
              std::vector<std::shared_ptr<Object>> holds = {});
    NDK_CONNECTOR *ndk() const { return ndk_; }

    Call connect(const std::shared_ptr<Qp> &qp, const SocketAddress &src,
                 const SocketAddress &dest, ULONG inbound_read_limit, ULONG outbound_read_limit,
                 const PrivateData &private_data = {});
    Call connect_with_shared_endpoint(const std::shared_ptr<Qp> &qp,
                                      const std::shared_ptr<SharedEndpoint> &shared_endpoint,
                                      const SocketAddress &dest, ULONG inbound_read_limit,
                                      ULONG outbound_read_limit,
                                      const PrivateData &private_data = {});
    // with_disconnect_event: pass our disconnect callback (else NULL, NULL).
    Call complete_connect(bool with_disconnect_event);
    // NDKPI 2.1: throws Error(STATUS_NOT_SUPPORTED) on an object of an older version.
    Call complete_connect_ex(bool with_disconnect_event);
    Call accept(const std::shared_ptr<Qp> &qp, ULONG inbound_read_limit,
                ULONG outbound_read_limit, const PrivateData &private_data,
                bool with_disconnect_event);
    Call accept_ex(const std::shared_ptr<Qp> &qp, ULONG inbound_read_limit,
                   ULONG outbound_read_limit, const PrivateData &private_data,
                   bool with_disconnect_event);
    NTSTATUS reject(const PrivateData &private_data = {});
    // Raw: every pointer is passed as given (null read limits and a NULL buffer included).
    NTSTATUS get_connection_data(ULONG *inbound_read_limit, ULONG *outbound_read_limit,
                                 PVOID private_data, ULONG *private_data_length);
    // *pAddressLength is `length` (default: the whole storage; at most that, else
    // std::invalid_argument); on return address.length holds what the provider wrote back.
    NTSTATUS get_local_address(SocketAddress &address, std::optional<ULONG> length = std::nullopt);
    NTSTATUS get_peer_address(SocketAddress &address, std::optional<ULONG> length = std::nullopt);
    Call disconnect();

    ConnectorEvents &events() const { return *events_; }
    static void disconnect_event(PVOID context);
    static void disconnect_event_ex(PVOID context, ULONG provider_disconnect_reason);

private:
    NDK_FN_DISCONNECT_EVENT_CALLBACK disconnect_callback(bool wanted) const;
    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX disconnect_callback_ex(bool wanted) const;
    void check_ex(const char *function) const;

    NDK_CONNECTOR *ndk_;
    std::shared_ptr<ConnectorEvents> events_;
};

struct ListenerEvents {
    EventQueue<NDK_CONNECTOR *> connections;
    // Set when the listener's close begins: connectors delivered from then on are closed at
    // once, since nobody will pop them and they would hold the listener's close forever.
    std::mutex mu;
    bool closing = false;
};

class Listener : public Object {
public:
    Listener(std::shared_ptr<Adapter> adapter, NDK_LISTENER *listener,
             std::shared_ptr<ListenerEvents> events, void *event_context);
    ~Listener() override;
    NDK_LISTENER *ndk() const { return ndk_; }
    Call listen(SocketAddress address);
    NTSTATUS get_local_address(SocketAddress &address);
    void control_connect_events(bool pause);
    // The next connector a connect event delivered, as a handle (tracked by the adapter, holding
    // this listener: its antecedent), or nullptr after `timeout` (nullopt: do not wait) or once
    // `stop` is set and wake_waits() called.
    std::shared_ptr<Connector> next_connection(std::optional<Call::Seconds> timeout,
                                               const std::atomic<bool> *stop = nullptr);
    // Wake the waits in next_connection to check their `stop` (a close, watch_close).
    void wake_waits() const { events_->connections.wake(); }
    static void connect_event(PVOID context, NDK_CONNECTOR *connector);

protected:
    // Close the connectors delivered but never taken with next_connection (digest 3.5: the
    // listener's close would otherwise wait for them).
    void closing() override;

private:
    NDK_LISTENER *ndk_;
    std::shared_ptr<ListenerEvents> events_;
};

class SharedEndpoint : public Object {
public:
    SharedEndpoint(std::shared_ptr<Adapter> adapter, NDK_SHARED_ENDPOINT *endpoint);
    NDK_SHARED_ENDPOINT *ndk() const { return ndk_; }
    NTSTATUS get_local_address(SocketAddress &address);

private:
    NDK_SHARED_ENDPOINT *ndk_;
};

} // namespace ndk
