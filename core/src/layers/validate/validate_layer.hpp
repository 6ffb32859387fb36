// The validated stand-ins.  Every object the consumer holds is a Face: the NDK object layout
// (header + dispatch, digest 1.0) with the layer's dispatch table, owned by a Shadow that knows
// the provider's real object and the state the rules need.  Shadows live until their miniport
// is destroyed, so a late or misdirected callback, or a call on a closed object, always finds
// valid memory and is reported instead of reaching freed memory.
#pragma once

#include "layers/validate/validate_session.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <thread>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ndk::validate {

class LayerAdapter;
class Shadow;

// The layer's dispatch table for an object type.
const void *layer_dispatch(NDK_OBJECT_TYPE type);

// The consumer's view of an object: laid out as every NDK_xxx (Header, then Dispatch), plus
// the way back to its shadow.
struct Face {
    NDK_OBJECT_HEADER Header;
    const void *Dispatch;
    Shadow *owner;
};

enum class State {
    Open,
    Closing,    // the consumer called its close
    Completing, // the provider completed the close; its completion is running
    Closed,     // the close completion returned (or the close returned STATUS_SUCCESS)
};

class Shadow {
public:
    Shadow(LayerAdapter &adapter, NDK_OBJECT_TYPE type, const void *layer_dispatch);
    virtual ~Shadow() = default;
    Shadow(const Shadow &) = delete;
    Shadow &operator=(const Shadow &) = delete;

    static Shadow &of(const void *face) { return *static_cast<const Face *>(face)->owner; }
    template <class T>
    static T &as(const void *face)
    {
        return static_cast<T &>(of(face));
    }

    LayerAdapter &adapter() const { return adapter_; }
    NDK_OBJECT_TYPE type() const { return type_; }
    const std::string &name() const { return name_; }
    void *face() { return &face_; }
    NDK_OBJECT_HEADER *real() const { return real_; }
    template <class Dispatch>
    const Dispatch *real_dispatch() const
    {
        return static_cast<const Dispatch *>(real_dispatch_);
    }

    // Bind the provider's object once it exists (inline return or create completion): check
    // its header and dispatch table (OBJECT-* rules), stamp the consumer's NdkReserved.
    void bind(NDK_OBJECT_HEADER *real, const char *call);
    bool bound() const { return real_ != nullptr; }

    // A consumer call on this object: false (and OBJECT-CLOSED-CALL, or OBJECT-DISPATCH when
    // the provider gave no dispatch table) when it must not be forwarded.
    bool usable(const char *call);
    // A provider callback on this object: false (and CALLBACK-AFTER-CLOSE) when it came after
    // the close completion started; the callback is then not delivered.
    bool accepts_callback(const char *callback);

    State state() const { return state_.load(std::memory_order_acquire); }
    // The provider called the close completion from inside the close call: it returned from
    // the callback long before the layer delivers it, so the object counts as closed.
    std::atomic<bool> close_held{false};
    void set_state(State state) { state_.store(state, std::memory_order_release); }

    // Antecedent -> successor pairs of digest 3.1 (CQ->QP, SRQ->QP, QP->connector,
    // shared endpoint->connector, listener->accepted connector).
    // A tentative successor (the connector of a Connect or Accept still pending) is not
    // judged until confirm_successor: the request may already have failed inside the
    // provider, which then holds nothing, and only its completion tells the layer so.
    void add_successor(Shadow &successor, bool tentative = false);
    void confirm_successor(Shadow &successor);
    void remove_successor(Shadow &successor);
    // Called when this object's close completed: CLOSE-ANTECEDENT-OPEN if a successor is open.
    void check_successors_closed(const char *call);
    // The NdkReserved stamp still intact at close (OBJECT-HEADER-RESERVED).
    void check_reserved(const char *call);

    void report(const char *rule, const char *call, std::string message) const;

    // The consumer called the close: judge what must be settled by now (validate_work_tracking.cpp).
    virtual void closing() {}

protected:
    LayerAdapter &adapter_;

private:
    Face face_{};
    NDK_OBJECT_TYPE type_;
    std::string name_;
    NDK_OBJECT_HEADER *real_ = nullptr;
    const void *real_dispatch_ = nullptr;
    std::atomic<State> state_{State::Open};
    mutable std::mutex mu_;
    std::vector<Shadow *> successors_;
    std::vector<Shadow *> tentative_successors_;
};

// One queue of work requests (a QP's initiator or receive queue, or an SRQ): what was posted
// and not yet retired, in post order (validate_work_tracking.cpp).
struct WorkQueue {
    const char *what = "";
    ULONG depth = 0;
    Shadow *pd = nullptr;                // for SGE-TOKEN
    std::atomic<bool> posting{false};    // POST-CONCURRENT
    std::deque<uint32_t> outstanding;    // record indices, post order (adapter's wr lock)
    std::vector<uint32_t> overtaken;     // a later request completed first
    // False for an SRQ: its receives complete on the receive CQs of whichever QPs took them,
    // and the consumer may retrieve those CQs in any order (or close one unread), so a later
    // receive retrieved first says nothing about an earlier one (WR-COMPLETION-ORDER and
    // WR-COMPLETION-MISSING are not judged there).
    bool judge_order = true;
};

class MrShadow : public Shadow {
public:
    MrShadow(LayerAdapter &adapter, Shadow &pd);
    Shadow &pd;
    std::atomic<UINT32> local_token{0};
    std::atomic<bool> token_known{false};
    void closing() override;
};

class CqShadow : public Shadow {
public:
    CqShadow(LayerAdapter &adapter);
    NDK_FN_CQ_NOTIFICATION_CALLBACK consumer_callback = nullptr;
    PVOID consumer_context = nullptr;
    std::atomic<bool> busy{false}; // CQ-CONCURRENT-CALL
    std::mutex arm_mu;
    // Arms not yet matched by a notification.  A count, not a flag: an arm made while the
    // provider's notification for the previous one is queued but not yet delivered is a second
    // arm (the provider cleared the first before it queued the callback), so two notifications
    // then follow two arms.  Where the provider merged the two arms instead, one bogus extra
    // notification goes unreported (the layer errs towards silence).
    int unsatisfied_arms = 0;
    bool notified_since_arm = false;
    int in_callback = 0;
};

class SrqShadow : public Shadow {
public:
    SrqShadow(LayerAdapter &adapter);
    NDK_FN_SRQ_NOTIFICATION_CALLBACK consumer_callback = nullptr;
    PVOID consumer_context = nullptr;
    WorkQueue queue;
    void closing() override;
};

class QpShadow : public Shadow {
public:
    QpShadow(LayerAdapter &adapter);
    PVOID consumer_qp_context = nullptr;
    WorkQueue initiator;
    WorkQueue receive;
    SrqShadow *srq = nullptr;
    void closing() override;
};

class ConnectorShadow : public Shadow {
public:
    ConnectorShadow(LayerAdapter &adapter);
    NDK_FN_DISCONNECT_EVENT_CALLBACK disconnect = nullptr;
    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX disconnect_ex = nullptr;
    PVOID disconnect_context = nullptr;
    std::atomic<bool> established{false}; // Accept / CompleteConnect was called
    Shadow *listener = nullptr;           // the listener whose connect event delivered it
};

class ListenerShadow : public Shadow {
public:
    ListenerShadow(LayerAdapter &adapter);
    NDK_FN_CONNECT_EVENT_CALLBACK consumer_callback = nullptr;
    PVOID consumer_context = nullptr;
};

// PD, MR, MW, shared endpoint: nothing beyond what every shadow has.
class PlainShadow : public Shadow {
public:
    PlainShadow(LayerAdapter &adapter, NDK_OBJECT_TYPE type)
        : Shadow(adapter, type, layer_dispatch(type))
    {
    }
};

// One asynchronous call (create, request or close) from the consumer's call to its
// completion (validate_calls.cpp).
struct CallRecord {
    enum class Kind { Create, Request, Close } kind;
    const char *function = "";
    Shadow *target = nullptr;  // the object the call is on (Create: the object being made)
    NDK_FN_CREATE_COMPLETION create_completion = nullptr;
    NDK_FN_REQUEST_COMPLETION request_completion = nullptr;
    NDK_FN_CLOSE_COMPLETION close_completion = nullptr;
    PVOID consumer_context = nullptr;
    void *out_slot = nullptr;  // the provider's out-parameter (Create)
    std::function<void(NTSTATUS)> on_done; // after the provider completed, before delivery
    std::mutex mu;
    std::condition_variable cv; // signalled when the call returned
    std::thread::id caller;
    bool returned = false;
    NTSTATUS inline_status = STATUS_PENDING;
    int completions = 0;
    bool held = false;         // a completion arrived during the call: delivered on return
    NTSTATUS held_status = STATUS_SUCCESS;
    NDK_OBJECT_HEADER *held_object = nullptr;
    std::chrono::steady_clock::time_point since;
    bool judged_missing = false;
};

// A work request between its post and its retirement.
struct WorkRecord {
    uint32_t generation = 0;
    bool live = false;
    bool expects_completion = true; // not a SILENT_SUCCESS initiator request
    bool silent = false;
    bool overtaken = false;
    bool missing_reported = false;
    bool owns_posting = false;      // this post set WorkQueue::posting
    WorkQueue *queue = nullptr;
    Shadow *owner = nullptr;        // the QP or SRQ
    PVOID consumer_context = nullptr;
    const char *function = "";
};

class LayerAdapter {
public:
    LayerAdapter(ValidatedMiniport &miniport, NDK_ADAPTER *real);
    static LayerAdapter &of(NDK_ADAPTER *face);
    NDK_ADAPTER *face() { return reinterpret_cast<NDK_ADAPTER *>(&face_); }
    NDK_ADAPTER *real() const { return real_; }
    ValidatedMiniport &miniport() const { return miniport_; }
    NDK_VERSION version() const { return real_->Header.Version; }

    // The real adapter's NDK_ADAPTER_INFO now (knobs may change it at run time).
    NDK_ADAPTER_INFO info() const;

    // Shadows are made here and kept until the miniport goes.
    template <class T, class... Args>
    T &make(Args &&...args)
    {
        auto shadow = std::make_unique<T>(*this, std::forward<Args>(args)...);
        T &ref = *shadow;
        std::lock_guard lock(mu_);
        faces_.emplace(ref.face(), &ref);
        shadows_.push_back(std::move(shadow));
        return ref;
    }
    // The shadow whose face `face` is, when it is one of this adapter's, else nullptr; found
    // by the address alone, so a pointer of anything else (another adapter's object, a plain
    // adapter's, a made-up one) is never read (docs/semantics.md, OBJECT-OWN).
    Shadow *own(const void *face) const;
    std::string next_name(NDK_OBJECT_TYPE type);

    // validate_calls.cpp
    CallRecord &new_call(CallRecord::Kind kind, const char *function, Shadow *target);
    void judge_overdue();
    // The adapter's close returned: nothing may complete any more.
    void closed();
    // The adapter's close began: from now on it closes whatever the consumer left open, and
    // those objects get no close completion, so a pending antecedent close that completes
    // during it is not judged against them (CLOSE-ANTECEDENT-OPEN).
    void closing() { closing_.store(true, std::memory_order_release); }
    bool is_closing() const { return closing_.load(std::memory_order_acquire); }

    // validate_work_tracking.cpp
    PVOID post_begin(WorkQueue &queue, Shadow &owner, const char *function, PVOID context,
                     ULONG flags, bool initiator);
    void post_end(WorkQueue &queue, PVOID handle, NTSTATUS status);
    void translate(CqShadow &cq, NDK_RESULT *results, ULONG count, const char *call);
    void translate(CqShadow &cq, NDK_RESULT_EX *results, ULONG count, const char *call);
    void check_sgl(WorkQueue &queue, const char *call, const NDK_SGE *sgl, ULONG count,
                   ULONG flags, const std::string &object);
    void close_queue(WorkQueue &queue, Shadow &owner);
    void learn_local_token(UINT32 token, Shadow *pd);
    void forget_local_token(UINT32 token, Shadow *pd);
    void learn_remote_token(UINT32 token);
    void register_qp(QpShadow &qp);

    void report(const char *rule, const std::string &object, const char *call,
                std::string message) const
    {
        miniport_.report(rule, object, call, std::move(message));
    }

private:
    struct AdapterFace {
        NDK_OBJECT_HEADER Header;
        const void *Dispatch;
        LayerAdapter *self;
    };
    AdapterFace face_{};
    ValidatedMiniport &miniport_;
    NDK_ADAPTER *real_;
    mutable std::mutex mu_;
    std::vector<std::unique_ptr<Shadow>> shadows_;
    std::unordered_map<const void *, Shadow *> faces_; // each shadow's face
    std::deque<CallRecord> calls_;
    unsigned counters_[NdkObjectTypeMax + 1] = {};
    bool closed_ = false;
    std::atomic<bool> closing_{false};

    // validate_work_tracking.cpp, under wr_mu_
    uint32_t alloc_record();
    void free_record(uint32_t index);
    WorkRecord *find_record(PVOID handle, uint32_t *index);
    void retire(uint32_t index, NTSTATUS status, const char *call);
    PVOID translate_one(PVOID &qp_context, PVOID request_context, NTSTATUS status,
                        const char *call);

    std::mutex wr_mu_;
    std::deque<WorkRecord> records_;
    std::vector<uint32_t> free_records_;
    std::unordered_set<const void *> qps_;
    std::unordered_map<UINT32, std::vector<Shadow *>> local_tokens_; // token -> its PDs
    std::unordered_set<UINT32> remote_tokens_;
};

// The dispatch tables (one file per object).
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


// STATUS-UNDOCUMENTED: warn when `function` returned (or completed with) a status its
// reference page does not list (validate_documented_status.cpp).
void check_documented(const Shadow *object, LayerAdapter &adapter, const char *function,
                      NTSTATUS status);

// validate_calls.cpp: run one asynchronous call through the layer.
//   invoke(completion, context, out) calls the provider with the layer's completion and
//   context (and, for a create, the provider's out-parameter slot) and returns its status.
NTSTATUS run_create(LayerAdapter &adapter, Shadow &made, const char *function,
                    NDK_FN_CREATE_COMPLETION completion, PVOID context, void **consumer_out,
                    const std::function<NTSTATUS(NDK_FN_CREATE_COMPLETION, PVOID, void **)>
                        &invoke,
                    std::function<void(NTSTATUS)> on_done = {});
NTSTATUS run_request(LayerAdapter &adapter, Shadow *target, const char *function,
                     NDK_FN_REQUEST_COMPLETION completion, PVOID context,
                     const std::function<NTSTATUS(NDK_FN_REQUEST_COMPLETION, PVOID)> &invoke,
                     std::function<void(NTSTATUS)> on_done = {});
// NDK_FN_CLOSE_OBJECT for every validated object.
NTSTATUS close_object(NDK_OBJECT_HEADER *object, NDK_FN_CLOSE_COMPLETION completion,
                      PVOID context);
// NdkQueryExtension for every validated object: forwarded to the real object.
NTSTATUS query_extension(NDK_OBJECT_HEADER *object, GUID *id, NDK_VERSION version,
                         NDK_EXTENSION_INTERFACE *out);

// The layer's own callbacks, given to the provider in place of the consumer's.
void cq_notification(PVOID context, NTSTATUS status);       // context: CqShadow*
void srq_notification(PVOID context, NTSTATUS status);      // context: SrqShadow*
void connect_event(PVOID context, NDK_CONNECTOR *connector); // context: ListenerShadow*

// The real object behind a face the consumer passed as an argument, once check_arguments()
// accepted it (nullptr stays nullptr).
template <class T>
T *real_of(T *face)
{
    return face == nullptr ? nullptr : reinterpret_cast<T *>(Shadow::of(face).real());
}

// An object the consumer passes as an argument, and the type its parameter names (an
// Invalidate's names two: an MR or an MW).
struct Argument {
    const void *face;
    NDK_OBJECT_TYPE type;
    NDK_OBJECT_TYPE or_type = NdkObjectTypeUndefined;
};

// The objects passed as arguments of `call` (the CQs and SRQ of a CreateQp, the QP and shared
// endpoint of a Connect or Accept, the MR and MW of a Bind, FastRegister or Invalidate):
// STATUS_SUCCESS when each is an open object of `adapter` of its parameter's type, or NULL
// (left to the provider to judge).  Otherwise STATUS_INVALID_PARAMETER, and the call is not
// forwarded: a pointer that is not one of this adapter's faces, or names another type, is
// never followed (docs/semantics.md, OBJECT-OWN); one whose close was called is reported
// (OBJECT-CLOSED-CALL), since its real object may be gone and its memory taken by a new
// object of the provider, which real_of() would hand the provider.
NTSTATUS check_arguments(LayerAdapter &adapter, const char *call,
                         std::initializer_list<Argument> arguments);

} // namespace ndk::validate
