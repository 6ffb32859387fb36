// The completions of a soft CQ waiting to be polled.  The thread that moves the data pushes
// (the adapter's lock held); the consumer's NdkGetCqResults pops under the ring's own lock
// only, and an empty poll takes no lock at all: a consumer busy-polling on one thread never
// contends with the peer thread that completes its requests (docs/performance.md).
#pragma once

#include "ndk/ndkpi.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

namespace ndk::soft {

class CqRing {
public:
    // Completions waiting, without the lock: a hint for the poller's fast path, exact under
    // the lock.
    ULONG available() const { return available_.load(std::memory_order_acquire); }

    // Append one result; false when the ring already holds `depth` (an overrun).  The storage
    // grows geometrically up to the depth, so a CQ allocates O(log depth) times in its life,
    // never per completion, and a deep CQ that stays shallow costs little memory.
    bool push(const NDK_RESULT_EX &result, ULONG depth)
    {
        std::lock_guard lock(mu_);
        if (count_ >= depth || failed_)
            return false;
        if (count_ == slots_.size())
            grow(depth);
        slots_[(head_ + count_) % slots_.size()] = result;
        ++count_;
        available_.store(count_, std::memory_order_release);
        return true;
    }

    // Move up to `n` results into `out` through `convert`; none once the ring has failed.
    template <class Result, class Convert>
    ULONG pop(Result *out, ULONG n, Convert &&convert)
    {
        if (available() == 0)
            return 0;
        std::lock_guard lock(mu_);
        ULONG taken = 0;
        for (; taken < n && count_ > 0 && !failed_; ++taken) {
            out[taken] = convert(slots_[head_]);
            head_ = (head_ + 1) % slots_.size();
            --count_;
        }
        available_.store(count_, std::memory_order_release);
        return taken;
    }

    size_t size() const
    {
        std::lock_guard lock(mu_);
        return count_;
    }

    // The CQ error state (digest 1.3): what it holds is dropped and nothing is handed out or
    // accepted after.
    void fail()
    {
        std::lock_guard lock(mu_);
        failed_ = true;
        head_ = count_ = 0;
        available_.store(0, std::memory_order_release);
    }

    // NdkResizeCq: false when it holds more than `depth`.  The storage is kept (it grows on
    // demand up to the new depth).
    bool fits(ULONG depth) const
    {
        std::lock_guard lock(mu_);
        return count_ <= depth;
    }

private:
    void grow(ULONG depth)
    {
        size_t capacity = std::min<size_t>(depth, std::max<size_t>(16, slots_.size() * 2));
        std::vector<NDK_RESULT_EX> bigger(capacity);
        for (size_t i = 0; i < count_; ++i)
            bigger[i] = slots_[(head_ + i) % slots_.size()];
        slots_.swap(bigger);
        head_ = 0;
    }

    mutable std::mutex mu_;
    std::vector<NDK_RESULT_EX> slots_;
    size_t head_ = 0;
    size_t count_ = 0;
    bool failed_ = false;
    std::atomic<ULONG> available_{0};
};

} // namespace ndk::soft
