// The soft CQ's ring (core/src/providers/soft/soft_cq_ring.hpp): one producer and one
// consumer with no lock between them; completions come out in order, none lost, none taken
// before its slot is published (across the ring's laps and its growth), an overrun refused at
// the depth; and CqProducers, which says when the connection lock serializes a
// CQ's producers (soft_cq_producers.hpp).
#include "providers/soft/soft_cq_producers.hpp"
#include "providers/soft/soft_cq_ring.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace ndk::soft {

// A consumer that loaded the ring's storage before the producer replaced it with a larger one
// and reads it after: what pop does when a growth falls between its two loads.
struct CqRingProbe {
    static const void *storage(const CqRing &ring)
    {
        return ring.storage_.load(std::memory_order_acquire);
    }
    template <class Convert>
    static ULONG take_from(CqRing &ring, const void *storage, NDK_RESULT_EX *out, ULONG n,
                           Convert &&convert)
    {
        return ring.take(*static_cast<const CqRing::Storage *>(storage), out, n, convert);
    }
};

} // namespace ndk::soft

namespace {

using ndk::soft::CqProducers;
using ndk::soft::CqRing;
using ndk::soft::CqRingProbe;

NDK_RESULT_EX numbered(uint64_t n)
{
    NDK_RESULT_EX r{};
    r.RequestContext = reinterpret_cast<PVOID>(n);
    return r;
}

uint64_t number_of(const NDK_RESULT_EX &r) { return reinterpret_cast<uint64_t>(r.RequestContext); }

const auto as_is = [](const NDK_RESULT_EX &r) { return r; };

// A push of a result built here: the ring's fill writes it whole into the slot.
bool push(CqRing &ring, const NDK_RESULT_EX &result, ULONG depth)
{
    return ring.push(depth, [&](NDK_RESULT_EX &slot) { slot = result; });
}

TEST(CqRing, AFillWritesOnAZeroedSlotEvenWhereAnEarlierResultWas)
{
    CqRing ring;
    const ULONG depth = 1; // a storage of one slot, which every push reuses
    NDK_RESULT_EX full{};
    full.Status = STATUS_CANCELLED;
    full.BytesTransferred = 64;
    full.QPContext = &ring;
    full.RequestContext = &full;
    full.Type = NdkOperationTypeReceiveAndInvalidate;
    full.ProviderErrorCode = 7;
    full.TypeSpecificCompletionOutput = 0x1234;
    NDK_RESULT_EX out{};
    for (int round = 0; round < 3; ++round) {
        ASSERT_TRUE(push(ring, full, depth));
        ASSERT_EQ(ring.pop(&out, 1, as_is), 1u);
        auto send = [](NDK_RESULT_EX &slot) { slot.Type = NdkOperationTypeSend; };
        ASSERT_TRUE(ring.push(depth, send));
        ASSERT_EQ(ring.pop(&out, 1, as_is), 1u);
        EXPECT_EQ(out.Type, NdkOperationTypeSend);
        EXPECT_EQ(out.Status, STATUS_SUCCESS); // the rest as zeroed, nothing of `full`
        EXPECT_EQ(out.BytesTransferred, 0u);
        EXPECT_EQ(out.QPContext, nullptr);
        EXPECT_EQ(out.RequestContext, nullptr);
        EXPECT_EQ(out.ProviderErrorCode, 0u);
        EXPECT_EQ(out.TypeSpecificCompletionOutput, 0u);
    }
}

TEST(CqRing, HandsOutInOrderAcrossItsGrowth)
{
    CqRing ring;
    const ULONG depth = 1000;
    for (uint64_t n = 0; n < depth; ++n) // grows 16, 32, ... 1024 on the way
        ASSERT_TRUE(push(ring, numbered(n), depth));
    EXPECT_EQ(ring.available(), depth);
    std::vector<NDK_RESULT_EX> out(depth);
    ASSERT_EQ(ring.pop(out.data(), 7, as_is), 7u);
    ASSERT_EQ(ring.pop(out.data() + 7, depth, as_is), depth - 7);
    for (uint64_t n = 0; n < depth; ++n)
        ASSERT_EQ(number_of(out[n]), n);
    EXPECT_EQ(ring.pop(out.data(), 1, as_is), 0u);
}

TEST(CqRing, RefusesThePushBeyondTheDepthAndTakesOneOncePolled)
{
    CqRing ring;
    for (uint64_t n = 0; n < 5; ++n)
        ASSERT_TRUE(push(ring, numbered(n), 5));
    EXPECT_FALSE(push(ring, numbered(5), 5)); // the overrun (digest 1.3)
    NDK_RESULT_EX one;
    ASSERT_EQ(ring.pop(&one, 1, as_is), 1u);
    EXPECT_EQ(number_of(one), 0u);
    EXPECT_TRUE(push(ring, numbered(5), 5));
    EXPECT_FALSE(ring.fits(4));
    EXPECT_TRUE(ring.fits(5));
}

TEST(CqRing, AFailedRingHandsOutAndTakesNothing)
{
    CqRing ring;
    ASSERT_TRUE(push(ring, numbered(1), 4));
    ring.fail();
    NDK_RESULT_EX one;
    EXPECT_EQ(ring.available(), 0u);
    EXPECT_EQ(ring.pop(&one, 1, as_is), 0u);
    EXPECT_FALSE(push(ring, numbered(2), 4));
}

// A producer thread and a consumer thread at once, the ring growing while the consumer reads:
// every completion arrives once, in order (run under TSan by the tsan tree's unit label).
TEST(CqRing, OneProducerAndOneConsumerOnTwoThreadsLoseNothing)
{
    CqRing ring;
    const uint64_t total = 200000;
    const ULONG depth = 4096;
    std::thread producer([&] {
        for (uint64_t n = 0; n < total;)
            if (push(ring, numbered(n), depth))
                ++n;
            else
                std::this_thread::yield(); // full: the consumer is behind
    });
    uint64_t next = 0;
    std::vector<NDK_RESULT_EX> out(64);
    while (next < total) {
        ULONG taken = ring.pop(out.data(), static_cast<ULONG>(out.size()), as_is);
        for (ULONG i = 0; i < taken; ++i, ++next)
            ASSERT_EQ(number_of(out[i]), next);
        if (taken == 0)
            std::this_thread::yield();
    }
    producer.join();
    EXPECT_EQ(ring.available(), 0u);
}

// The storage of 16 slots laps over and over: each slot is reused with a new sequence, and
// the slot at the consumer's position, holding the lap before's result, is never taken.
TEST(CqRing, ASlotLeftFromTheLapBeforeIsNotTaken)
{
    CqRing ring;
    const ULONG depth = 16; // one storage of 16 slots, never grown
    std::vector<NDK_RESULT_EX> out(depth);
    uint64_t next = 0;
    for (int lap = 0; lap < 100; ++lap) {
        for (ULONG i = 0; i < 5; ++i) // five at a time: the positions drift across the slots
            ASSERT_TRUE(push(ring, numbered(next + i), depth));
        ASSERT_EQ(ring.pop(out.data(), depth, as_is), 5u);
        for (ULONG i = 0; i < 5; ++i, ++next)
            ASSERT_EQ(number_of(out[i]), next);
        // Empty: the slot at the consumer's position holds a result of an earlier lap (or
        // none yet in the first), which the poll does not take.
        ASSERT_EQ(ring.pop(out.data(), depth, as_is), 0u);
        ASSERT_EQ(ring.available(), 0u);
    }
    EXPECT_EQ(ring.pushed(), next);
}

// A growth between the consumer's load of the storage and its reads of the slots: the old
// storage hands out what was pushed before the growth, in order, and nothing pushed after it
// (its slots there hold the lap before's), and the next poll finds the rest in the new one.
TEST(CqRing, AConsumerHoldingTheStorageBeforeAGrowthTakesNothingStale)
{
    CqRing ring;
    const ULONG depth = 1000;
    for (uint64_t n = 0; n < 16; ++n) // the first storage, 16 slots, full
        ASSERT_TRUE(push(ring, numbered(n), depth));
    std::vector<NDK_RESULT_EX> out(64);
    ASSERT_EQ(ring.pop(out.data(), 3, as_is), 3u); // frees the slots of 0, 1, 2
    const void *old = CqRingProbe::storage(ring);
    for (uint64_t n = 16; n < 19; ++n) // in the old storage, over the freed slots
        ASSERT_TRUE(push(ring, numbered(n), depth));
    ASSERT_EQ(CqRingProbe::storage(ring), old);
    for (uint64_t n = 19; n < 25; ++n) // full at 19: grows to 32 slots, these written there
        ASSERT_TRUE(push(ring, numbered(n), depth));
    ASSERT_NE(CqRingProbe::storage(ring), old);

    ASSERT_EQ(CqRingProbe::take_from(ring, old, out.data(), 64, as_is), 16u); // 3 .. 18
    for (uint64_t i = 0; i < 16; ++i)
        ASSERT_EQ(number_of(out[i]), 3 + i);
    EXPECT_EQ(CqRingProbe::take_from(ring, old, out.data(), 64, as_is), 0u); // 19 is not there
    ASSERT_EQ(ring.pop(out.data(), 64, as_is), 6u); // the new storage: 19 .. 24
    for (uint64_t i = 0; i < 6; ++i)
        ASSERT_EQ(number_of(out[i]), 19 + i);
    EXPECT_EQ(ring.pop(out.data(), 64, as_is), 0u);
    EXPECT_EQ(ring.available(), 0u);
}

// The slots copied into a larger storage stand published there: a consumer that reads only
// the new storage hands them all out, from where it was, in order.
TEST(CqRing, SlotsCopiedByAGrowthAreTakenFromTheNewStorage)
{
    CqRing ring;
    const ULONG depth = 64;
    for (uint64_t n = 0; n < 10; ++n)
        ASSERT_TRUE(push(ring, numbered(n), depth));
    std::vector<NDK_RESULT_EX> out(depth);
    ASSERT_EQ(ring.pop(out.data(), 4, as_is), 4u);
    for (uint64_t n = 10; n < 21; ++n) // 16 waiting when 20 comes: grows, copying 4 .. 19
        ASSERT_TRUE(push(ring, numbered(n), depth));
    ASSERT_EQ(ring.available(), 17u);
    ASSERT_EQ(ring.pop(out.data(), depth, as_is), 17u);
    for (uint64_t i = 0; i < 17; ++i)
        ASSERT_EQ(number_of(out[i]), 4 + i);
}

TEST(CqRing, AFailedRingHandsOutNothingFromAnyStorage)
{
    CqRing ring;
    for (uint64_t n = 0; n < 40; ++n) // two growths
        ASSERT_TRUE(push(ring, numbered(n), 64));
    NDK_RESULT_EX one;
    ASSERT_EQ(ring.pop(&one, 1, as_is), 1u);
    ring.fail();
    EXPECT_EQ(ring.available(), 0u);
    EXPECT_EQ(ring.pop(&one, 1, as_is), 0u);
    EXPECT_FALSE(push(ring, numbered(40), 64));
    EXPECT_EQ(ring.pushed(), 40u); // the refused push is not counted
    EXPECT_TRUE(ring.fits(0));
}

// Many short lives of a ring, each growing from 16 to 1024 slots while the consumer polls on
// another thread, the consumer taking one or a few at a time: every result arrives once, in
// order and whole (all its fields those of its push: a slot read before its fields were
// written would show a torn or earlier result), and the count the ring reports stays within
// the depth (run under TSan by the tsan tree's unit label, where any read of a slot not
// ordered after its write is reported).
TEST(CqRing, AResultIsTakenWholeWhileTheRingGrowsUnderTheConsumer)
{
    const ULONG depth = 1024;
    const uint64_t per_ring = 1500;
    auto filled = [](uint64_t n) {
        return [n](NDK_RESULT_EX &slot) {
            slot.Status = static_cast<NTSTATUS>(n * 3);
            slot.BytesTransferred = static_cast<ULONG>(n * 7);
            slot.RequestContext = reinterpret_cast<PVOID>(n);
            slot.TypeSpecificCompletionOutput = n * 11;
        };
    };
    for (int life = 0; life < 40; ++life) {
        CqRing ring;
        std::thread producer([&] {
            for (uint64_t n = 0; n < per_ring;)
                if (ring.push(depth, filled(n)))
                    ++n;
                else
                    std::this_thread::yield(); // full: the consumer is behind
        });
        // Checked after the join: a failed assertion here would leave the thread running.
        uint64_t next = 0;
        bool whole = true, within_depth = true;
        std::vector<NDK_RESULT_EX> out(3);
        while (next < per_ring && whole && within_depth) {
            within_depth = ring.available() <= depth;
            ULONG want = 1 + static_cast<ULONG>(next % 3);
            ULONG taken = ring.pop(out.data(), want, as_is);
            for (ULONG i = 0; i < taken; ++i, ++next) {
                const NDK_RESULT_EX &r = out[i];
                whole = whole && number_of(r) == next &&
                        r.Status == static_cast<NTSTATUS>(next * 3) &&
                        r.BytesTransferred == static_cast<ULONG>(next * 7) &&
                        r.TypeSpecificCompletionOutput == next * 11;
            }
            if (taken == 0)
                std::this_thread::yield();
        }
        if (!whole || !within_depth) // let the producer finish: it waits for room otherwise
            while (ring.pop(out.data(), 3, as_is) != 0 || ring.pushed() < per_ring)
                ;
        producer.join();
        ASSERT_TRUE(whole) << "result " << next << " of life " << life;
        ASSERT_TRUE(within_depth) << "available() beyond the depth at " << next;
        EXPECT_EQ(ring.pushed(), per_ring);
        EXPECT_EQ(ring.pop(out.data(), 3, as_is), 0u);
    }
}

TEST(CqProducers, OneLockWhileEveryBindingHoldsTheSame)
{
    std::mutex a, b;
    CqProducers producers;
    EXPECT_TRUE(producers.serialized_by_connection()); // nothing completes into it yet
    producers.add(&a);
    producers.add(&a); // one QP's initiator and receive CQ
    EXPECT_TRUE(producers.serialized_by_connection());
    producers.add(&b); // a second connection
    EXPECT_FALSE(producers.serialized_by_connection());
    producers.remove(&a);
    EXPECT_FALSE(producers.serialized_by_connection()); // one binding of `a` is left
    producers.remove(&a);
    EXPECT_TRUE(producers.serialized_by_connection());
}

} // namespace
