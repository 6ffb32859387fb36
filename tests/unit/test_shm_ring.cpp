// The shm transport's SPSC ring (core/src/providers/soft/shm/shm_ring.hpp): its edges
// in one process, then a child producing into a segment it received over the handoff while
// the parent consumes, byte-exact, and a producer killed mid-stream seen as gone, not waited
// for.
#include "providers/soft/os/peer_watch.hpp"
#include "providers/soft/shm/shm_handoff.hpp"
#include "providers/soft/shm/shm_ring.hpp"
#include "providers/soft/shm/shm_segment.hpp"
#include "shm_support.hpp"

#include <gtest/gtest.h>

#include <sched.h>
#include <signal.h>

#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

using namespace ndk::soft::shm;
using namespace ndk::soft::os;
using namespace ndk::soft::shm::test_support;

constexpr std::uint32_t kSlots = 4;
constexpr std::uint32_t kSlotSize = 32; // 28 bytes of message

std::vector<std::byte> bytes(std::size_t n, int seed)
{
    std::vector<std::byte> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<std::byte>(seed * 31 + static_cast<int>(i) * 7);
    return v;
}

// A ring formatted in its own segment (page-aligned, as in the transport), with both ends
// attached in this process.
class ShmRingLocal : public ::testing::Test {
protected:
    ShmSegment segment = ShmSegment::create("ring", ShmRing::bytes_for(kSlots, kSlotSize));
    RingProducer producer = (ShmRing::format(segment.bytes(), kSlots, kSlotSize),
                             RingProducer(segment.bytes()));
    RingConsumer consumer{segment.bytes()};
    std::vector<std::byte> out = std::vector<std::byte>(64);
    std::size_t length = 0;

    RingStatus pop() { return consumer.try_pop(out, length); }
    std::vector<std::byte> popped() const { return {out.begin(), out.begin() + length}; }
};

TEST_F(ShmRingLocal, EmptyFullAndBackAgain)
{
    EXPECT_EQ(pop(), RingStatus::empty);
    for (int i = 0; i < static_cast<int>(kSlots); ++i)
        ASSERT_EQ(producer.try_push(bytes(10, i)), RingStatus::ok) << i;
    EXPECT_EQ(producer.try_push(bytes(10, 99)), RingStatus::full);
    ASSERT_EQ(pop(), RingStatus::ok);
    EXPECT_EQ(popped(), bytes(10, 0));
    // One slot freed: exactly one more fits.
    EXPECT_EQ(producer.try_push(bytes(10, 4)), RingStatus::ok);
    EXPECT_EQ(producer.try_push(bytes(10, 5)), RingStatus::full);
    for (int i = 1; i <= 4; ++i) {
        ASSERT_EQ(pop(), RingStatus::ok);
        EXPECT_EQ(popped(), bytes(10, i));
    }
    EXPECT_EQ(pop(), RingStatus::empty);
}

TEST_F(ShmRingLocal, MessageSizesAtTheEdges)
{
    ASSERT_EQ(producer.max_message(), kSlotSize - 4u);
    EXPECT_EQ(producer.try_push(bytes(producer.max_message() + 1, 1)), RingStatus::too_large);
    EXPECT_EQ(producer.try_push({}), RingStatus::ok);
    EXPECT_EQ(producer.try_push(bytes(producer.max_message(), 2)), RingStatus::ok);
    length = 99;
    ASSERT_EQ(pop(), RingStatus::ok);
    EXPECT_EQ(length, 0u);
    // A buffer too small leaves the message where it is and says what it needs.
    std::byte small[4];
    EXPECT_EQ(consumer.try_pop(small, length), RingStatus::too_small);
    EXPECT_EQ(length, producer.max_message());
    ASSERT_EQ(pop(), RingStatus::ok);
    EXPECT_EQ(popped(), bytes(producer.max_message(), 2));
}

// A message laid into the slot in place (the link's encoding): published with the length its
// writer returns; one that does not fit publishes nothing, and a full ring never calls the
// writer.
TEST_F(ShmRingLocal, AMessageLaidInPlaceIsPublishedOnlyWhenItFits)
{
    const std::vector<std::byte> message = bytes(12, 7);
    auto lay = [&](std::span<std::byte> room) {
        EXPECT_EQ(room.size(), producer.max_message());
        std::memcpy(room.data(), message.data(), message.size());
        return message.size();
    };
    auto too_long = [](std::span<std::byte> room) { return room.size() + 1; };
    EXPECT_EQ(producer.try_push_with(too_long), RingStatus::too_large);
    EXPECT_EQ(pop(), RingStatus::empty);
    for (std::uint32_t i = 0; i < kSlots; ++i)
        ASSERT_EQ(producer.try_push_with(lay), RingStatus::ok) << i;
    bool called = false;
    EXPECT_EQ(producer.try_push_with([&](std::span<std::byte>) {
        called = true;
        return std::size_t{0};
    }),
              RingStatus::full);
    EXPECT_FALSE(called);
    for (std::uint32_t i = 0; i < kSlots; ++i) {
        ASSERT_EQ(pop(), RingStatus::ok);
        EXPECT_EQ(popped(), message);
    }
    EXPECT_EQ(pop(), RingStatus::empty);
}

TEST_F(ShmRingLocal, WrapsAroundManyTimesInOrder)
{
    int next_out = 0;
    for (int i = 0; i < 1000; ++i) {
        ASSERT_EQ(producer.try_push(bytes(1 + i % 28, i)), RingStatus::ok);
        if (i % 3 == 2) { // fall behind, then catch up: the indices pass the slot count often
            while (pop() == RingStatus::ok) {
                ASSERT_EQ(popped(), bytes(1 + next_out % 28, next_out));
                ++next_out;
            }
        }
    }
    while (pop() == RingStatus::ok)
        ++next_out;
    EXPECT_EQ(next_out, 1000);
}

// The same ordering contract between two threads of one process: what TSan can check (it
// does not see into a forked child).
TEST_F(ShmRingLocal, TwoThreadsByteExact)
{
    constexpr int kCount = 20000;
    std::thread producing([&] {
        for (int i = 0; i < kCount; ++i) {
            const auto m = bytes(1 + i % 28, i);
            while (producer.try_push(m) == RingStatus::full)
                std::this_thread::yield();
        }
    });
    int n = 0;
    bool in_order = true;
    while (n < kCount) {
        const RingStatus status = pop();
        if (status == RingStatus::empty) {
            std::this_thread::yield();
            continue;
        }
        if (status != RingStatus::ok)
            break;
        in_order = in_order && popped() == bytes(1 + n % 28, n);
        ++n;
    }
    producing.join();
    EXPECT_EQ(n, kCount);
    EXPECT_TRUE(in_order);
}

TEST_F(ShmRingLocal, ASecondAttachResumesWhereTheIndicesAre)
{
    ASSERT_EQ(producer.try_push(bytes(5, 1)), RingStatus::ok);
    ASSERT_EQ(producer.try_push(bytes(5, 2)), RingStatus::ok);
    RingProducer again(segment.bytes());
    ASSERT_EQ(again.try_push(bytes(5, 3)), RingStatus::ok);
    RingConsumer fresh(segment.bytes());
    for (int i = 1; i <= 3; ++i) {
        ASSERT_EQ(fresh.try_pop(out, length), RingStatus::ok);
        EXPECT_EQ(popped(), bytes(5, i));
    }
}

TEST_F(ShmRingLocal, WhatThePeerWroteIsCheckedBeforeUse)
{
    auto *header = reinterpret_cast<RingHeader *>(segment.data());
    ASSERT_EQ(producer.try_push(bytes(5, 1)), RingStatus::ok);
    // A length word beyond the slot.
    std::uint32_t huge = 1u << 30;
    std::memcpy(segment.data() + sizeof(RingHeader), &huge, sizeof huge);
    EXPECT_EQ(pop(), RingStatus::corrupt);
    // A tail more than a ring's worth ahead of the head.
    header->tail.store(header->head.load() + kSlots + 1);
    EXPECT_EQ(RingConsumer(segment.bytes()).try_pop(out, length), RingStatus::corrupt);
    // A geometry that does not fit the region, and a region never formatted.
    header->slot_count = 1u << 20;
    EXPECT_THROW(RingConsumer{segment.bytes()}, std::invalid_argument);
    ShmSegment blank = ShmSegment::create("blank", 4096);
    EXPECT_THROW(RingProducer{blank.bytes()}, std::invalid_argument);
    EXPECT_THROW(ShmRing::format(blank.bytes(), 3, 32), std::invalid_argument);
    EXPECT_THROW(ShmRing::format(blank.bytes(), 4, 12), std::invalid_argument);
}

// The message number `n`: its length varies over the whole range and its bytes depend on n,
// so a lost, repeated, reordered or torn message shows.
std::vector<std::byte> message(std::uint32_t n, std::size_t max)
{
    std::vector<std::byte> m(1 + (n * 7919u) % max);
    for (std::size_t i = 0; i < m.size(); ++i)
        m[i] = static_cast<std::byte>((n >> (8 * (i % 4))) ^ (i * 13));
    return m;
}

// The child connects to the parent's abstract socket, receives the segment and produces.
int produce(const std::string &name, std::uint32_t count, bool die_after)
{
    UniqueFd connection = connect_abstract(name);
    std::byte tag[1];
    std::size_t received = 0;
    ShmSegment segment = ShmSegment::adopt(receive_fd(connection.get(), tag, received));
    RingProducer producer(segment.bytes());
    for (std::uint32_t n = 0; n < count; ++n) {
        const auto m = message(n, producer.max_message());
        RingStatus status;
        while ((status = producer.try_push(m)) == RingStatus::full)
            ::sched_yield();
        if (status != RingStatus::ok)
            return 2;
    }
    if (die_after)
        ::raise(SIGKILL);
    return 0;
}

// A ring in a segment the parent creates; a child that connects to the parent's abstract
// socket, receives the segment and produces `count` messages; the parent's consumer and its
// watch on the child.
class ForkedRing {
public:
    static constexpr std::uint32_t kSlots = 64;
    static constexpr std::uint32_t kSlotSize = 256;

    ForkedRing(std::uint32_t count, bool die_after)
        : child_(Child::spawn([&] { return produce(name_, count, die_after); })),
          watch_(hand_over()), consumer_(segment_.bytes()), out_(consumer_.max_message())
    {
    }

    // The next message; false when the ring is empty and the producer has exited.
    bool pop() { return pop_while_alive(consumer_, watch_, out_, length_); }

    std::span<const std::byte> message() const { return {out_.data(), length_}; }
    std::size_t max_message() const { return consumer_.max_message(); }
    bool empty() { return consumer_.try_pop(out_, length_) == RingStatus::empty; }
    Child &child() { return child_; }

private:
    // Accept the child's connection and hand it the segment; the watch is opened first, so a
    // child that fails before connecting is an error here, not an accept() that never returns.
    PeerWatch hand_over()
    {
        PeerWatch watch = watch_child(child_);
        UniqueFd connection = accept_while_alive(listener_.get(), watch);
        EXPECT_EQ(peer_credentials(connection.get()).pid, child_.pid());
        const std::byte one[1] = {std::byte{1}};
        send_fd(connection.get(), segment_.fd(), one);
        return watch;
    }

    std::string name_ = unique_name("ring");
    UniqueFd listener_ = listen_abstract(name_);
    ShmSegment segment_ = ShmSegment::create("ring", ShmRing::bytes_for(kSlots, kSlotSize));
    bool formatted_ = (ShmRing::format(segment_.bytes(), kSlots, kSlotSize), true);
    Child child_;
    PeerWatch watch_;
    RingConsumer consumer_;
    std::vector<std::byte> out_;
    std::size_t length_ = 0;
};

TEST(ShmRing, ChildProducesParentConsumesInOrderByteExact)
{
    constexpr std::uint32_t kCount = 50000;
    ForkedRing ring(kCount, false);
    for (std::uint32_t n = 0; n < kCount; ++n) {
        ASSERT_TRUE(ring.pop()) << "producer gone after " << n << " messages";
        const auto expected = message(n, ring.max_message());
        ASSERT_EQ(ring.message().size(), expected.size()) << n;
        ASSERT_EQ(std::memcmp(ring.message().data(), expected.data(), expected.size()), 0) << n;
    }
    EXPECT_EQ(ring.child().wait(), 0);
    EXPECT_TRUE(ring.empty());
}

TEST(ShmRing, AProducerKilledMidStreamIsSeenGoneAfterItsLastMessage)
{
    constexpr std::uint32_t kCount = 10; // fits the ring: the child never waits for us
    ForkedRing ring(kCount, true);
    std::uint32_t got = 0;
    while (ring.pop())
        ++got;
    EXPECT_EQ(got, kCount);
    EXPECT_EQ(ring.child().wait(), 128 + SIGKILL);
}

} // namespace
