// The fault layer: an NDK_HARNESS_PROVIDER stacked over the Provider it is handed
// (ndk::fault::wrap, fault_provider.cpp) that acts,
// at the ABI edge, the test knobs no provider implements itself: `fail`, `hold`, the
// create/request/close completion modes and the `misbehave` names visible at the edge
// (docs/knobs.md, docs/architecture.md).  Every
// object the consumer holds is a Face: the NDK layout (header, then the layer's dispatch
// table) and the provider's object behind it.  A face, and the records of the callbacks of
// the calls made on it or creating it, are retired when the object's close completes and made
// again only after 64 more (FaultAdapter::retire), so a call on a closed object is refused and
// a late callback lands in valid memory, while an adapter whose objects come and go does not
// grow.
#pragma once

#include "ndk/fault.hpp"
#include "ndk/ndkpi.h"
#include "ndk/provider.h"
#include "ndk/registry.hpp"
#include "layers/fault/fault_knob_values.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

namespace ndk::fault {

class FaultAdapter;
class FaultMiniport;

// Every NDK object: its header, then its dispatch table (digest 1.0).
struct AnyObject {
    NDK_OBJECT_HEADER Header;
    const void *Dispatch;
};

// The consumer's view of a provider object.  `magic` tells a face from anything else a dispatch
// entry of the layer may be called on; an object argument is recognised by its address alone
// (FaultAdapter::owns), since a foreign pointer may not be readable that far.
struct CqResults;
struct CallbackRecord;
struct Face {
    NDK_OBJECT_HEADER Header;
    const void *Dispatch;
    uint64_t magic;
    AnyObject *inner;
    FaultAdapter *adapter;
    // A CQ's results the layer fetched and has not handed out (drop_completion,
    // reorder_completions), owned by the adapter; made the first time one of those knobs acts
    // on the CQ (FaultAdapter::results_of), nullptr until then and for other objects.
    std::atomic<CqResults *> results{nullptr};
    // Which object of those the face has stood for (FaultAdapter::wrap counts them), so that a
    // late retire for an earlier one leaves a face made again alone.
    uint64_t generation = 0;
    // The records of the callbacks of calls on the object or creating it: retired with it.
    std::vector<CallbackRecord *> records;
};
inline constexpr uint64_t kFaceMagic = 0x4e444b4641434531ull; // "NDKFACE1"
// A face whose object's close completed (FaultAdapter::retire): face_of() no longer finds it,
// so a call on the closed object is STATUS_INVALID_HANDLE, not a call into freed memory, until
// the face is made again for another object.
inline constexpr uint64_t kRetiredFaceMagic = 0x4e444b4641434530ull; // "NDKFACE0"

// Face of an object pointer, or nullptr when it is not one of this layer's.
inline Face *face_of(const void *object)
{
    auto *face = static_cast<Face *>(const_cast<void *>(object));
    return face != nullptr && face->magic == kFaceMagic ? face : nullptr;
}

// A consumer callback and its context, replaced at the provider by a layer callback whose
// context is the record.  `created` is the object type a create completion delivers.
struct CallbackRecord {
    void (*function)() = nullptr;
    PVOID context = nullptr;
    NDK_OBJECT_TYPE created = NdkObjectTypeUndefined;
    bool completion = false; // a create, request or close completion (not an event)
    bool cq_notification = false; // the notification callback of NdkCreateCq
    FaultAdapter *adapter = nullptr;
    // A close's completion: the face it retires (and which of its objects) when it is called.
    Face *retires = nullptr;
    uint64_t retires_generation = 0;
    // A pending create's completion: the other record its call made (a CQ's or SRQ's
    // notification), which belongs to the object it delivers, as this one does.
    CallbackRecord *sibling = nullptr;
    // Fresh until its call says whose it is; then a face's (retired with it) or retired (made
    // again after kRetiredKept others).  A record is adopted once: a create completion called
    // twice does not put it in two faces.
    enum class Owner { Fresh, Face, Retired } owner = Owner::Fresh;
    template <class Fn>
    Fn consumer() const
    {
        return reinterpret_cast<Fn>(function);
    }
};

using Mode = CompletionMode;

// The `misbehave` names the layer acts at the ABI edge (docs/knobs.md says what each breaks);
// the rest need a provider's internals and stay the soft provider's.
enum class Misbehave {
    None,
    CompleteAfterInline,
    CompleteTwice,
    NeverComplete,
    OutParamAfterPending,
    OutParamMissingInline,
    RequestCompleteAfterInline,
    RequestCompleteTwice,
    RequestNeverComplete,
    HeaderVersion,
    HeaderType,
    HeaderReserved,
    DispatchNull,
    UndocumentedStatus,
    ModerationPending,
    ModerationNotSupported,
    ProviderErrorCode,
    NotifyTwice,
    DropInvalidateToken,
    CompleteSilent,
    DropCompletion,
    ReorderCompletions,
};

// What the layer keeps of a CQ while drop_completion or reorder_completions acts on its
// results (fault_results.cpp): what it fetched from the provider and has not handed out yet,
// and per QP (by QPContext) how many successful initiator completions it has seen.
struct CqResults {
    std::mutex mu;
    std::deque<NDK_RESULT_EX> ready;
    std::map<PVOID, uint64_t> successes;
    std::atomic<bool> holding{false}; // `ready` is not empty
};

// NdkGetCqResults / NdkGetCqResultsEx on `face` (a CQ) while drop_completion or
// reorder_completions is set, or the layer still holds results: up to `count` results into
// `out` (NDK_RESULT_EX when `ex`, else NDK_RESULT).
ULONG get_cq_results(Face &face, Misbehave misbehave, void *out, ULONG count, bool ex);

// A `misbehave` name the layer acts, as the knob spells it.
struct MisbehaveName {
    const char *name;
    Misbehave value;
};
// Every name the layer acts, "none" first (fault_injection.cpp).
std::span<const MisbehaveName> misbehave_table();

struct ArmedFailure {
    NTSTATUS status;
    bool async;
    int remaining; // -1: every call
};

// The knobs the layer supplies, for one miniport.  Read on every call: `active` says whether
// anything is armed, so a call with nothing armed pays one atomic load.
class Injection {
public:
    Injection();  // registered for wake_holds()
    ~Injection();
    Injection(const Injection &) = delete;
    Injection &operator=(const Injection &) = delete;
    // Wake the held calls to check whether what they are on closes (fault::wake_holds).
    void wake();
    // One row of the layer's knob table (fault_knob_table.cpp): the knobs it covers, what
    // docs/knobs.md says of them, and how the layer sets and reads them (under the lock).  The
    // table is the one place a knob of the layer is spelt: set(), get(), is_knob, the `knobs`
    // listing and docs/knobs.md's rows come from it.
    struct Knob {
        const char *names;  // space-separated
        const char *values; // what a value is
        const char *effect; // what it does
        // "" or why the value is refused; nullptr: read only.
        std::string (*set)(Injection &, std::string_view name, const std::string &value);
        std::string (*get)(const Injection &, std::string_view name);
    };
    static std::span<const Knob> knob_table();
    // The rows of docs/knobs.md's knob table (kit::knob_markdown_header() heads them).
    static std::string knob_table_markdown();
    // The three completion modes, one per kind of call.
    struct Modes {
        Mode create = Mode::Inline, request = Mode::Inline, close = Mode::Inline;
    };
    // Whether `key` is one of the layer's knobs.
    static bool is_knob(std::string_view key);
    static const std::vector<std::string> &knob_names();
    NTSTATUS set(const std::string &key, const std::string &value, std::string &reply);
    NTSTATUS get(const std::string &key, std::string &value) const;

    bool active() const { return active_.load(std::memory_order_acquire); }
    Misbehave misbehave() const { return misbehave_.load(std::memory_order_acquire); }
    // Whether `name` is a misbehave value the layer acts ("none" included).
    static bool is_misbehave(const std::string &name);
    // The names the layer acts, "none" left out.
    static std::vector<std::string> misbehave_names();
    // The failure armed for `function`, consumed by this call.
    std::optional<ArmedFailure> take_failure(std::string_view function);
    // Whether a call of this kind that the provider completed inline should pend instead.
    enum class Kind { Create, Request, Close };
    bool should_pend(Kind kind);

    // `hold`: at the start of `function` on `adapter`: if the hold is armed for it, consume it
    // and block until `release`, the adapter's close, or the close of an object the call is
    // on (fault::enter_closable); true when it caught the call, which
    // then reports returned() once it has returned.
    bool enter(const FaultAdapter *adapter, std::string_view function);
    void returned(const FaultAdapter *adapter);
    // The adapter closes: its held calls go on, and this returns once they have returned.
    void release_adapter(const FaultAdapter *adapter);

private:
    void update_active();
    static const Knob kKnobTable[];
    static const Knob *find_knob(std::string_view key);
    // The table's actions (fault_knob_table.cpp).
    static std::string set_mode(Injection &, std::string_view name, const std::string &value);
    static std::string get_mode(const Injection &, std::string_view name);
    static std::string set_seed(Injection &, std::string_view, const std::string &value);
    static std::string get_seed(const Injection &, std::string_view);
    static std::string set_fail(Injection &, std::string_view, const std::string &value);
    static std::string get_fail(const Injection &, std::string_view);
    static std::string clear_failures(Injection &, std::string_view, const std::string &);
    static std::string set_misbehave(Injection &, std::string_view, const std::string &value);
    static std::string get_misbehave(const Injection &, std::string_view);
    static std::string set_hold(Injection &, std::string_view name, const std::string &value);
    static std::string get_hold(const Injection &, std::string_view name);

    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<bool> active_{false};
    std::atomic<Misbehave> misbehave_{Misbehave::None};
    std::map<std::string, ArmedFailure, std::less<>> failures_;
    Modes modes_;
    uint64_t seed_ = 1;
    std::mt19937_64 random_{1};
    std::string hold_;                                 // the armed function, "" when none
    int held_ = 0;                                     // calls blocked now
    std::multiset<const FaultAdapter *> caught_;       // caught calls not yet returned
    std::set<const FaultAdapter *> closing_;           // adapters whose close released them
    uint64_t release_generation_ = 0;
};

// Runs deferred completions (pending modes, async failures) on the layer's own thread, so a
// completion never runs on the thread of the call that returned STATUS_PENDING.  One queue in
// order: a call that may pend reserves its place before it reaches the provider, and while an
// adapter has anything queued, the provider's own completions for it queue behind; so a
// successor's deferred close completion still comes before its antecedent's (digest 3.1).
class Deferrer {
public:
    Deferrer();
    ~Deferrer();
    // Nothing queued or running in any deferrer of the process (the knob `quiescent`).
    static bool all_idle();
    using Job = std::function<void()>;
    // A place in the queue for a completion not known yet; fill or cancel it.
    uint64_t reserve(const FaultAdapter *adapter);
    void fill(uint64_t slot, Job job);
    void cancel(uint64_t slot);
    void post(const FaultAdapter *adapter, Job job) { fill(reserve(adapter), std::move(job)); }
    // Queue `job` if `adapter` has anything queued (true), else leave it to the caller.
    bool post_if_behind(const FaultAdapter *adapter, Job &job);
    // Whether anything of `adapter` is queued or running, seen from outside the layer's thread
    // (a job running on it is delivered in order already).
    bool busy(const FaultAdapter *adapter);
    // Returns once nothing of `adapter` is queued or running: an adapter that closes gets its
    // completions first.
    void drain(const FaultAdapter *adapter);
    // The provider's `progress=manual`: the layer's thread runs nothing either, and step()
    // runs up to `steps` completions, oldest first, on the calling thread (as the provider's
    // `step` does); it returns how many ran.  queued() is how many wait.
    void set_manual(bool manual);
    unsigned step(unsigned steps);
    size_t queued();

private:
    struct Entry {
        uint64_t slot;
        const FaultAdapter *adapter;
        Job job;
        bool ready;
    };
    void run();
    // Runs the job at `at` with the lock released, marking its adapter as running.
    void run_job(std::unique_lock<std::mutex> &lock, std::deque<Entry>::iterator at);
    bool has(const FaultAdapter *adapter) const; // lock held
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Entry> jobs_;
    std::atomic<size_t> queued_{0}; // jobs_.size(), read without the lock
    uint64_t next_slot_ = 1;
    const FaultAdapter *running_ = nullptr;
    bool stop_ = false;
    bool manual_ = false;
    std::thread thread_;
    std::thread::id thread_id_;
};

class FaultMiniport {
public:
    FaultMiniport(std::shared_ptr<Provider> inner, NDIS_HANDLE inner_handle)
        : inner(std::move(inner)), inner_handle(inner_handle)
    {
    }
    std::shared_ptr<Provider> inner;
    NDIS_HANDLE inner_handle;
    Injection injection;
    Deferrer deferrer;
};

class FaultAdapter {
public:
    FaultAdapter(FaultMiniport &miniport, NDK_ADAPTER *inner);
    FaultMiniport &miniport;
    Face *face() { return faces_.front().get(); }

    // A face for the provider's object (nullptr stays nullptr).
    Face *wrap(NDK_OBJECT_HEADER *inner, NDK_OBJECT_TYPE type);
    // The object of `face` closed: its face is made again for a later object (after
    // kRetiredKept other closes), so an adapter whose objects come and go keeps as many faces
    // as it has objects open, not one for every object it ever had.  A second call (a close
    // completed twice) and the adapter's own face change nothing.
    void retire(Face *face, uint64_t generation);
    // Records of a call that live as long as `face`'s object (nullptr entries are skipped);
    // with `face` nullptr (the object was not made), retired now.
    void adopt(Face *face, CallbackRecord *first, CallbackRecord *second);
    // Whether `object` is one of this adapter's faces of an open object, by its address (read
    // only once the address is known to be a face).
    bool owns(const void *object);
    CallbackRecord *record(void (*function)(), PVOID context, NDK_OBJECT_TYPE created,
                           bool completion);
    // The CQ face's results, made now if it has none yet.
    CqResults &results_of(Face &cq);

private:
    std::mutex mu_;
    // Retired faces wait this many closes before they are made again: a closed object's
    // handle used soon after its close is refused, not taken for a newer object.
    static constexpr size_t kRetiredKept = 64;
    std::deque<std::unique_ptr<Face>> faces_;
    std::unordered_set<const void *> own_; // the faces' addresses
    std::deque<Face *> retired_;           // oldest first
    std::deque<std::unique_ptr<CallbackRecord>> records_;
    std::deque<CallbackRecord *> retired_records_; // oldest first, kept as the faces are
    void retire_record(CallbackRecord *record); // mu_ held
    template <class T>
    T *reuse_or_make(std::deque<T *> &retired, std::deque<std::unique_ptr<T>> &all, bool &fresh);
    std::deque<std::unique_ptr<CqResults>> cq_results_;
};

// The layer's dispatch table for an object type (fault_dispatch.cpp).
const void *layer_dispatch(NDK_OBJECT_TYPE type);

} // namespace ndk::fault
