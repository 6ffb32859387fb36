// The completions of a soft CQ waiting to be polled: a single-producer, single-consumer ring
// with no lock of its own (docs/performance.md, "One thread").
//  - One producer at a time: whoever pushes holds the lock that serializes the CQ's producers
//    (post_result, soft_objects.hpp: the connection's lock, the CQ's completion lock or the wire
//    lock exclusive).
//  - One consumer at a time: the consumer serializes NdkGetCqResults and NdkArmCq on one CQ
//    (digest 4.1), so pop runs on one thread at a time, beside a push.
// The producer publishes a slot by the release store of `tail_`, the consumer frees it by the
// release store of `head_`; positions are absolute counts, a slot is `position & mask`.
#pragma once

#include "ndk/ndkpi.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>
#include <vector>

namespace ndk::soft {

class CqRing {
public:
    // Completions waiting: exact on the consumer's thread, a snapshot anywhere else.
    ULONG available() const
    {
        if (failed_.load(std::memory_order_acquire))
            return 0;
        return static_cast<ULONG>(tail_.load(std::memory_order_acquire) -
                                  head_.load(std::memory_order_acquire));
    }

    // Results ever pushed (an absolute count): exact under the producers' serialization or
    // when no producer runs (the wire lock held exclusively).
    uint64_t pushed() const { return tail_.load(std::memory_order_acquire); }

    // Append one result, written in its slot by `fill(NDK_RESULT_EX &)` on a zeroed slot;
    // false when the ring already holds `depth` (an overrun) or has failed.  Written in place,
    // not built elsewhere and copied: a copy reads the result back right after its fields
    // were stored one by one, with wider loads than those stores, which the CPU cannot
    // forward from its store buffer and waits on (docs/performance.md, "One thread").
    // The storage grows geometrically up to the depth, so a CQ allocates O(log depth) times
    // in its life, never per completion, and a deep CQ that stays shallow costs little memory.
    template <class Fill>
    bool push(ULONG depth, Fill &&fill)
    {
        if (failed_.load(std::memory_order_relaxed)) // written by the producers only
            return false;
        uint64_t tail = tail_.load(std::memory_order_relaxed);
        Storage *storage = storage_.load(std::memory_order_relaxed);
        // The consumer's position as last seen: it only moves on, so the count is at most
        // this.  Read again (a line the consumer writes) only when it looks full.
        uint64_t count = tail - head_seen_;
        if (storage == nullptr || count >= depth || count == storage->slots.size()) {
            head_seen_ = head_.load(std::memory_order_acquire); // the slots before it are free
            count = tail - head_seen_;
        }
        if (count >= depth)
            return false;
        if (storage == nullptr || count == storage->slots.size())
            storage = grow(depth, tail);
        NDK_RESULT_EX &slot = storage->slots[tail & storage->mask];
        slot = NDK_RESULT_EX{};
        fill(slot);
        tail_.store(tail + 1, std::memory_order_release); // publishes the slot
        return true;
    }

    // Move up to `n` results into `out` through `convert`; none once the ring has failed.
    template <class Result, class Convert>
    ULONG pop(Result *out, ULONG n, Convert &&convert)
    {
        uint64_t tail = tail_.load(std::memory_order_acquire); // the slots before it are whole
        uint64_t head = head_.load(std::memory_order_relaxed); // written by the consumer only
        if (tail == head || failed_.load(std::memory_order_acquire))
            return 0;
        // Loaded after `tail_`: storage that holds every slot before it (grow() publishes the
        // new storage before any slot written there).
        const Storage *storage = storage_.load(std::memory_order_acquire);
        ULONG taken = static_cast<ULONG>(std::min<uint64_t>(n, tail - head));
        for (ULONG i = 0; i < taken; ++i)
            out[i] = convert(storage->slots[(head + i) & storage->mask]);
        head_.store(head + taken, std::memory_order_release); // frees the slots
        return taken;
    }

    // The CQ error state (digest 1.3): what it holds is dropped and nothing is handed out or
    // accepted after.  A producer's call.
    void fail() { failed_.store(true, std::memory_order_release); }

    // NdkResizeCq: false when it holds more than `depth`.  The storage is kept (it grows on
    // demand up to the new depth).
    bool fits(ULONG depth) const { return available() <= depth; }

private:
    struct Storage {
        explicit Storage(size_t capacity) : slots(capacity), mask(capacity - 1) {}
        std::vector<NDK_RESULT_EX> slots; // a power of two
        uint64_t mask;
    };

    // Full at `tail`: a storage twice as large (at least the depth's power of two when that is
    // smaller), holding the waiting slots at their positions.  The old storage is kept until
    // the CQ goes, since a pop may still be reading it; together they are less than twice the
    // last.
    Storage *grow(ULONG depth, uint64_t tail)
    {
        Storage *old = storage_.load(std::memory_order_relaxed);
        size_t wanted = old == nullptr ? 16 : old->slots.size() * 2;
        size_t capacity = std::min<size_t>(wanted, std::bit_ceil(size_t{depth}));
        auto bigger = std::make_unique<Storage>(std::max<size_t>(capacity, 1));
        if (old != nullptr)
            for (uint64_t at = head_.load(std::memory_order_acquire); at != tail; ++at)
                bigger->slots[at & bigger->mask] = old->slots[at & old->mask];
        Storage *published = bigger.get();
        storages_.push_back(std::move(bigger));
        storage_.store(published, std::memory_order_release);
        return published;
    }

    // The consumer's position, then the producer's, each in its own cache line: each side
    // writes one line, and the producer reads the consumer's only when the ring looks full.
    alignas(64) std::atomic<uint64_t> head_{0};
    alignas(64) std::atomic<uint64_t> tail_{0};
    uint64_t head_seen_ = 0; // the producers': `head_` when last read
    std::atomic<Storage *> storage_{nullptr};
    std::atomic<bool> failed_{false};
    std::vector<std::unique_ptr<Storage>> storages_; // the producers': every storage made
};

} // namespace ndk::soft
