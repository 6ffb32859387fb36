// The `hold` / `release` / `held` knobs: catch one provider call in flight, deterministically,
// so a test can prove that a validation layer notices a consumer calling concurrently (digest
// 3.1, 3.2: calls the consumer must not overlap).  `hold=NdkGetCqResults` makes the next call of
// that dispatch function block at its very start, before any provider lock, until `release=1`
// or the adapter's close; `held` reads how many calls are blocked.  The hook is in every
// dispatch table entry (soft_dispatch_entry.hpp) and costs one relaxed atomic load while no
// hold is armed anywhere.
#pragma once

#include "ndk/ndkpi.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "providers/kit/kit_functions.hpp"

namespace ndk::soft {

class SoftAdapter;

// What `hold` accepts: any NDK dispatch function, by its member name (kit::kFunctions).  A
// name several tables share (NdkQueryExtension, NdkGetLocalAddress) catches whichever is
// called first.
constexpr bool is_holdable_function(std::string_view name)
{
    return kit::is_function(name);
}

// One miniport's hold.  Not copyable; lives in the Miniport.
class CallHold {
public:
    CallHold() = default;
    ~CallHold();
    CallHold(const CallHold &) = delete;
    CallHold &operator=(const CallHold &) = delete;

    // True while some miniport has a hold armed: the only thing a dispatch entry reads when
    // no test uses this.
    static bool armed_anywhere() { return armed_anywhere_.load(std::memory_order_relaxed) != 0; }

    // The knobs: `hold` (set: arm, read: the armed name), `release` (set), `held` (read).
    static bool is_knob(std::string_view key);
    NTSTATUS set(std::string_view key, const std::string &value, std::string &reply);
    NTSTATUS get(std::string_view key, std::string &value) const;

    // Marks a caught call in flight: from the moment it was caught until it returns.
    class Ticket {
    public:
        Ticket() = default;
        Ticket(CallHold *hold, uint64_t id) : hold_(hold), id_(id) {}
        Ticket(Ticket &&other) noexcept : hold_(other.hold_), id_(other.id_)
        {
            other.hold_ = nullptr;
        }
        Ticket &operator=(Ticket &&) = delete;
        ~Ticket()
        {
            if (hold_ != nullptr)
                hold_->returned(id_);
        }

    private:
        CallHold *hold_ = nullptr;
        uint64_t id_ = 0;
    };

    // At the start of dispatch function `function` on `adapter`: if the hold is armed for it,
    // consume it and block until release or the adapter's close.
    Ticket enter(const SoftAdapter *adapter, std::string_view function);

    // The adapter closes: its held calls go on, and this returns once they have returned, so
    // none of them runs into the adapter's teardown.
    void release_adapter(const SoftAdapter *adapter);

private:
    struct Caught {
        const SoftAdapter *adapter;
        bool released = false;
    };

    void disarm(); // mu_ held
    void returned(uint64_t id);

    static inline std::atomic<int> armed_anywhere_{0};

    mutable std::mutex mu_;
    std::condition_variable changed_;
    bool armed_ = false;
    std::string function_;
    uint64_t next_id_ = 1;
    std::map<uint64_t, Caught> caught_; // caught and not returned yet
};

} // namespace ndk::soft
