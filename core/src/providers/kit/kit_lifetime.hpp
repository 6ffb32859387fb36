// The lifetime rules of digest 3.1, for an NDK object of any provider:
//  - an object counts its dependents: successors (the QPs on a CQ), children (the MRs of a PD)
//    and its own requests and event callbacks in flight;
//  - NdkCloseXxx of an object with dependents returns STATUS_PENDING, and the close completes
//    once the last one is gone; a NULL close completion makes that close a dereference
//    (docs/semantics.md, CLOSE-NO-COMPLETION): the object goes with its last dependent and
//    nobody is told;
//  - a second close of one object is the consumer's error, STATUS_INVALID_DEVICE_STATE
//    (DOUBLE-CLOSE);
//  - a successor's close completion returns before its antecedents may complete theirs.
// The provider decides where the completion runs (its engine thread) and frees the object;
// this keeps the counts and the order.  Every member needs the provider's adapter lock.
#pragma once

#include "ndk/ndkpi.h"

#include <atomic>
#include <cstdint>
#include <vector>

namespace ndk::kit {

class Lifetime {
public:
    Lifetime() = default;
    virtual ~Lifetime() = default;
    Lifetime(const Lifetime &) = delete;
    Lifetime &operator=(const Lifetime &) = delete;

    // This object is a successor or child of `antecedent`, whose close now waits for it.
    void depend_on(Lifetime &antecedent)
    {
        antecedent.add_dependent();
        antecedents_.push_back(&antecedent);
    }
    // Atomic: a provider may take and drop dependents from its data path on several threads
    // (the soft provider's flush of a request that holds an MR); a close is requested only
    // with the provider's object state held exclusively, so close_requested_ is stable then.
    void add_dependent() { counts_.fetch_add(kDependent, std::memory_order_relaxed); }
    // One dependent is gone; the last one of an object whose close waits calls
    // on_last_dependent().
    void release_dependent() { release(kDependent); }
    int dependents() const { return dependents_in(counts_.load(std::memory_order_acquire)); }

    // A dependent the provider also counts apart (the soft MR's requests that name it,
    // MR-IN-USE): one read-modify-write on the data path, not two, because both counts share
    // one word.  It is a dependent like any other for the close.
    void add_counted_dependent()
    {
        counts_.fetch_add(kDependent | kCounted, std::memory_order_relaxed);
    }
    void release_counted_dependent() { release(kDependent | kCounted); }
    int counted_dependents() const
    {
        return static_cast<int>(counts_.load(std::memory_order_acquire) >> kCountedShift);
    }
    bool close_requested() const { return close_requested_; }
    // The close returned STATUS_PENDING (or is a dereference) and waits for its dependents.
    bool close_pending() const { return close_pending_; }

protected:
    // NdkCloseXxx, first step: false for a second close (the caller returns
    // STATUS_INVALID_DEVICE_STATE); true marks the close requested.
    bool begin_close()
    {
        if (close_requested_)
            return false;
        close_requested_ = true;
        return true;
    }
    // The close waits for the dependents: keep its completion (NULL: a dereference).
    void pend_close(NDK_FN_CLOSE_COMPLETION completion, PVOID context)
    {
        close_pending_ = true;
        close_completion_ = completion;
        close_context_ = context;
    }
    // NdkCloseXxx under the provider's lock, for a provider whose close completes where it
    // frees the object (digest 3.1): a second close is STATUS_INVALID_DEVICE_STATE
    // (DOUBLE-CLOSE); otherwise `cancel` runs (the provider retires the object and cancels what
    // it has in flight; a dependent it releases meanwhile does not finish the object), then a
    // close with dependents left pends: STATUS_PENDING, the completion kept (NULL: a
    // dereference, CLOSE-NO-COMPLETION).  STATUS_SUCCESS: none left, the caller finishes the
    // object now (outside the lock, where its callbacks run, so none runs after the close).
    template <class Cancel>
    NTSTATUS close_or_pend(NDK_FN_CLOSE_COMPLETION completion, PVOID context, Cancel &&cancel)
    {
        if (!begin_close())
            return STATUS_INVALID_DEVICE_STATE;
        in_close_ = true;
        cancel();
        in_close_ = false;
        if (dependents() > 0) {
            pend_close(completion, context);
            return STATUS_PENDING;
        }
        finishing_ = true;
        return STATUS_SUCCESS;
    }
    // For on_last_dependent() after close_or_pend(): true once, when the pending close may
    // finish now; false while the close is still cancelling (it finishes the object itself)
    // and once the object is finishing.
    bool claim_finish()
    {
        if (finishing_ || in_close_)
            return false;
        finishing_ = true;
        return true;
    }
    // The object goes another way (its adapter's close frees it): nothing may finish it again.
    void mark_finishing() { finishing_ = true; }
    // Tell the consumer the pending close is done (nothing for a dereference).  Call it before
    // release_antecedents(), so a successor's completion comes first.
    void call_close_completion() const
    {
        if (close_completion_ != nullptr)
            close_completion_(close_context_);
    }
    // Release every antecedent this object held (their closes may now complete); `alive`
    // says whether one still exists (a provider that may have freed it already).
    template <class Alive>
    void release_antecedents(Alive &&alive)
    {
        std::vector<Lifetime *> antecedents;
        antecedents.swap(antecedents_);
        for (Lifetime *antecedent : antecedents)
            if (alive(antecedent))
                antecedent->release_dependent();
    }
    void release_antecedents()
    {
        release_antecedents([](const Lifetime *) { return true; });
    }

    // The dependents of an object whose close was requested reached zero.
    virtual void on_last_dependent() = 0;

private:
    // counts_: the dependents in the low half, those of them counted apart in the high half.
    static constexpr int kCountedShift = 32;
    static constexpr std::uint64_t kDependent = 1;
    static constexpr std::uint64_t kCounted = std::uint64_t{1} << kCountedShift;
    static int dependents_in(std::uint64_t counts) { return static_cast<int>(counts & 0xffffffffu); }
    void release(std::uint64_t what)
    {
        if (dependents_in(counts_.fetch_sub(what, std::memory_order_acq_rel)) == 1 &&
            close_requested_)
            on_last_dependent();
    }

    std::vector<Lifetime *> antecedents_;
    std::atomic<std::uint64_t> counts_{0};
    bool close_requested_ = false;
    bool close_pending_ = false;
    bool in_close_ = false;
    bool finishing_ = false;
    NDK_FN_CLOSE_COMPLETION close_completion_ = nullptr;
    PVOID close_context_ = nullptr;
};

// An NDK object of a provider whose adapter class is `Adapter`: the NDK structure's header
// (the derived class holds the structure), the object type, the adapter, the lifetime.
template <class Adapter>
class AdapterObject : public Lifetime {
public:
    AdapterObject(Adapter &adapter, NDK_OBJECT_TYPE type) : adapter_(adapter), type_(type) {}

    virtual NDK_OBJECT_HEADER &header() = 0;
    NDK_OBJECT_TYPE type() const { return type_; }
    Adapter &adapter() const { return adapter_; }

private:
    Adapter &adapter_;
    NDK_OBJECT_TYPE type_;
};

} // namespace ndk::kit
