// The soft CQ's ring (core/src/providers/soft/soft_cq_ring.hpp): one producer and one
// consumer with no lock between them; completions come out in order, none lost, an overrun
// refused at the depth; and CqProducers, which says when the connection lock serializes a
// CQ's producers (soft_cq_producers.hpp).
#include "providers/soft/soft_cq_producers.hpp"
#include "providers/soft/soft_cq_ring.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

using ndk::soft::CqProducers;
using ndk::soft::CqRing;

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
