// The fault layer: an NDK_HARNESS_PROVIDER (ndk_fault_layer) that wraps any provider and adds,
// at the ABI edge, the test knobs a provider need not implement itself: `fail`, `hold`, and
// the create/request/close completion modes (docs/knobs.md, docs/architecture.md).  Every
// object the consumer holds is a Face: the NDK layout (header, then the layer's dispatch
// table) and the provider's object behind it.  Faces and the records of callbacks live until
// their adapter closes, so a late callback or a call on a closed object lands in valid memory.
#pragma once

#include "ndk/fault.hpp"
#include "ndk/ndkpi.h"
#include "ndk/provider.h"
#include "ndk/registry.hpp"
#include "providers/kit/kit_test_knobs.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace ndk::fault {

class FaultAdapter;
class FaultMiniport;

// Every NDK object: its header, then its dispatch table (digest 1.0).
struct AnyObject {
    NDK_OBJECT_HEADER Header;
    const void *Dispatch;
};

// The consumer's view of a provider object.  `magic` tells a face from anything else a
// consumer may pass (that is forwarded untouched, for the provider to judge).
struct Face {
    NDK_OBJECT_HEADER Header;
    const void *Dispatch;
    uint64_t magic;
    AnyObject *inner;
    FaultAdapter *adapter;
};
inline constexpr uint64_t kFaceMagic = 0x4e444b4641434531ull; // "NDKFACE1"

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
    FaultAdapter *adapter = nullptr;
    template <class Fn>
    Fn consumer() const
    {
        return reinterpret_cast<Fn>(function);
    }
};

using Mode = kit::CompletionMode;

// The `misbehave` names the layer can act at the ABI edge (docs/knobs.md says what each
// breaks); the rest need a provider's internals and stay the soft provider's.
enum class Misbehave {
    None,
    CompleteAfterInline,
    CompleteTwice,
    NeverComplete,
    OutParamAfterPending,
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
};

struct ArmedFailure {
    NTSTATUS status;
    bool async;
    int remaining; // -1: every call
};

// The knobs the layer supplies, for one miniport.  Read on every call: `active` says whether
// anything is armed, so a call with nothing armed pays one atomic load.
class Injection {
public:
    // Whether `key` is one of the layer's knobs.
    static bool is_knob(std::string_view key);
    static const std::vector<std::string> &knob_names();
    NTSTATUS set(const std::string &key, const std::string &value, std::string &reply);
    NTSTATUS get(const std::string &key, std::string &value) const;

    bool active() const { return active_.load(std::memory_order_acquire); }
    Misbehave misbehave() const { return misbehave_.load(std::memory_order_acquire); }
    // Whether `name` is a misbehave value the layer acts ("none" included).
    static bool is_misbehave(const std::string &name);
    // The failure armed for `function`, consumed by this call.
    std::optional<ArmedFailure> take_failure(std::string_view function);
    // Whether a call of this kind that the provider completed inline should pend instead.
    enum class Kind { Create, Request, Close };
    bool should_pend(Kind kind);

    // `hold`: at the start of `function` on `adapter`: if the hold is armed for it, consume it
    // and block until `release` or the adapter's close; true when it caught the call, which
    // then reports returned() once it has returned.
    bool enter(const FaultAdapter *adapter, std::string_view function);
    void returned(const FaultAdapter *adapter);
    // The adapter closes: its held calls go on, and this returns once they have returned.
    void release_adapter(const FaultAdapter *adapter);

private:
    void update_active();

    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<bool> active_{false};
    std::atomic<Misbehave> misbehave_{Misbehave::None};
    std::map<std::string, ArmedFailure, std::less<>> failures_;
    Mode create_ = Mode::Inline, request_ = Mode::Inline, close_ = Mode::Inline;
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
    ~Deferrer();
    using Job = std::function<void()>;
    // A place in the queue for a completion not known yet; fill or cancel it.
    uint64_t reserve(const FaultAdapter *adapter);
    void fill(uint64_t slot, Job job);
    void cancel(uint64_t slot);
    void post(const FaultAdapter *adapter, Job job) { fill(reserve(adapter), std::move(job)); }
    // Queue `job` if `adapter` has anything queued (true), else leave it to the caller.
    bool post_if_behind(const FaultAdapter *adapter, Job &job);
    // Returns once nothing of `adapter` is queued or running: an adapter that closes gets its
    // completions first.
    void drain(const FaultAdapter *adapter);

private:
    struct Entry {
        uint64_t slot;
        const FaultAdapter *adapter;
        Job job;
        bool ready;
    };
    void run();
    bool has(const FaultAdapter *adapter) const; // lock held
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Entry> jobs_;
    std::atomic<size_t> queued_{0}; // jobs_.size(), read without the lock
    uint64_t next_slot_ = 1;
    const FaultAdapter *running_ = nullptr;
    bool stop_ = false;
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
    // Layer knobs the provider implements itself are passed to it, unless this is set
    // (`fault_prefer_layer`): then the layer supplies every knob it has.
    bool prefer_layer = false;
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
    CallbackRecord *record(void (*function)(), PVOID context, NDK_OBJECT_TYPE created,
                           bool completion);

private:
    std::mutex mu_;
    std::deque<std::unique_ptr<Face>> faces_;
    std::deque<std::unique_ptr<CallbackRecord>> records_;
};

// The layer's dispatch table for an object type (fault_dispatch.cpp).
const void *layer_dispatch(NDK_OBJECT_TYPE type);

} // namespace ndk::fault
