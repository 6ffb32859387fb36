// The completions of a soft CQ waiting to be polled: a single-producer, single-consumer ring
// with no lock of its own (docs/performance.md, "One thread" and "Two threads, inproc").
//  - One producer at a time: whoever pushes holds the lock that serializes the CQ's producers
//    (post_result, soft_objects.hpp: the connection's lock, the CQ's completion lock or the wire
//    lock exclusive).
//  - One consumer at a time: the consumer serializes NdkGetCqResults and NdkArmCq on one CQ
//    (digest 4.1), so pop runs on one thread at a time, beside a push.
// Each slot carries its own publication, as a verbs CQE carries its owner bit: the producer
// writes the result, then the slot's `sequence` (its position + 1) with a release store; the
// consumer takes the slot at `head_` once its acquire load of that sequence finds the position
// there.  So a poll reads one line the producer wrote per completion (the slot), and an empty
// poll spins on the slot it will take next, not on a producer's counter.  `tail_` stays the
// producers' count of pushes (for `pushed()` and `available()`), written after the slot's
// sequence; the consumer frees slots by the release store of `head_`.  Positions are absolute
// counts, a slot is `position & mask`, and a slot left from an earlier lap holds a sequence
// smaller than the one wanted.
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
    // Completions waiting: a snapshot (the consumer may have taken a slot whose push has not
    // yet counted itself in `tail_`; never below zero).
    ULONG available() const
    {
        if (failed_.load(std::memory_order_acquire))
            return 0;
        uint64_t tail = tail_.load(std::memory_order_acquire);
        uint64_t head = head_.load(std::memory_order_acquire);
        return tail > head ? static_cast<ULONG>(tail - head) : 0;
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
        if (storage == nullptr || count >= depth || count == storage->capacity) {
            head_seen_ = head_.load(std::memory_order_acquire); // the slots before it are free
            count = tail - head_seen_;
        }
        if (count >= depth)
            return false;
        if (storage == nullptr || count == storage->capacity)
            storage = grow(depth, tail);
        Slot &slot = storage->at(tail);
        slot.result = NDK_RESULT_EX{};
        fill(slot.result);
        slot.sequence.store(tail + 1, std::memory_order_release); // publishes the slot
        tail_.store(tail + 1, std::memory_order_release);          // counts the push
        return true;
    }

    // Move up to `n` results into `out` through `convert`; none once the ring has failed.
    template <class Result, class Convert>
    ULONG pop(Result *out, ULONG n, Convert &&convert)
    {
        if (failed_.load(std::memory_order_acquire))
            return 0;
        const Storage *storage = storage_.load(std::memory_order_acquire);
        return storage == nullptr ? 0 : take(*storage, out, n, convert);
    }

    // The CQ error state (digest 1.3): what it holds is dropped and nothing is handed out or
    // accepted after.  A producer's call.
    void fail() { failed_.store(true, std::memory_order_release); }

    // NdkResizeCq: false when it holds more than `depth`.  The storage is kept (it grows on
    // demand up to the new depth).
    bool fits(ULONG depth) const { return available() <= depth; }

private:
    friend struct CqRingProbe; // the unit test's view of a consumer still holding an old storage

    // One result and its publication in one cache line: the consumer's poll of a slot is one
    // line the producer wrote.
    struct alignas(64) Slot {
        NDK_RESULT_EX result{};
        std::atomic<uint64_t> sequence{0}; // position + 1 once the result is there
    };
    static_assert(sizeof(Slot) == 64, "a slot is one cache line");

    struct Storage {
        explicit Storage(size_t count)
            : slots(std::make_unique<Slot[]>(count)), capacity(count), mask(count - 1)
        {
        }
        Slot &at(uint64_t position) { return slots[position & mask]; }
        const Slot &at(uint64_t position) const { return slots[position & mask]; }
        std::unique_ptr<Slot[]> slots; // a power of two of them
        uint64_t capacity;
        uint64_t mask;
    };

    // The slots from `head_` on that `storage` shows published.  Any storage the producer
    // made: the current one, made before the slots it holds were published, or an older one,
    // never written after the next was made, whose slots past that point hold earlier laps'
    // sequences and so are not taken (the next pop reads the current one).  Slots are
    // published in order (one producer at a time), so the acquire load that finds one makes
    // every slot before it whole: a poll for `n` that finds the n-th there copies the n
    // without reading each one's sequence.
    template <class Result, class Convert>
    ULONG take(const Storage &storage, Result *out, ULONG n, Convert &&convert)
    {
        uint64_t head = head_.load(std::memory_order_relaxed); // written by the consumer only
        auto published = [&](uint64_t position) {
            return storage.at(position).sequence.load(std::memory_order_acquire) == position + 1;
        };
        if (n == 0 || !published(head))
            return 0; // the empty poll: one line, the slot it will take next
        ULONG ready = 1;
        if (n > 1 && published(head + n - 1))
            ready = n;
        else
            while (ready < n && published(head + ready))
                ++ready;
        for (ULONG i = 0; i < ready; ++i)
            out[i] = convert(storage.at(head + i).result);
        head_.store(head + ready, std::memory_order_release); // frees the slots
        return ready;
    }

    // Full at `tail`: a storage twice as large (at least the depth's power of two when that is
    // smaller), holding the waiting slots at their positions with their sequences, so that
    // they stand published there too.  The old storage is kept until the CQ goes, since a pop
    // may still be reading it, and is never written again; together they are less than twice
    // the last.
    Storage *grow(ULONG depth, uint64_t tail)
    {
        Storage *old = storage_.load(std::memory_order_relaxed);
        size_t wanted = old == nullptr ? 16 : old->capacity * 2;
        size_t capacity = std::min<size_t>(wanted, std::bit_ceil(size_t{depth}));
        auto bigger = std::make_unique<Storage>(std::max<size_t>(capacity, 1));
        if (old != nullptr)
            for (uint64_t at = head_.load(std::memory_order_acquire); at != tail; ++at) {
                const Slot &from = old->at(at);
                Slot &to = bigger->at(at);
                to.result = from.result;
                to.sequence.store(at + 1, std::memory_order_relaxed); // storage_ publishes it
            }
        Storage *published = bigger.get();
        storages_.push_back(std::move(bigger));
        storage_.store(published, std::memory_order_release);
        return published;
    }

    // Three lines: the consumer's position; the producers' count and what only they use; and
    // what both sides read and the producers write rarely (at growth and failure), so that
    // reading it never waits for the other core.
    alignas(64) std::atomic<uint64_t> head_{0};
    alignas(64) std::atomic<uint64_t> tail_{0};
    uint64_t head_seen_ = 0;                         // the producers': `head_` when last read
    std::vector<std::unique_ptr<Storage>> storages_; // the producers': every storage made
    alignas(64) std::atomic<Storage *> storage_{nullptr};
    std::atomic<bool> failed_{false};
};

} // namespace ndk::soft
