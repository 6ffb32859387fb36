// The doorbell that wakes a consumer sleeping on an empty ring (core/src/providers/soft/
// shm/shm_doorbell.*): the producer makes a system call only while the consumer says it
// sleeps, arming with a message already there does not sleep, waits are bounded, and two
// threads passing messages with the consumer always going to sleep lose no wake-up (what
// TSan can check; the cross-process case is in test_shm_link.cpp).
#include "providers/soft/shm/shm_doorbell.hpp"
#include "providers/soft/shm/shm_ring.hpp"
#include "providers/soft/shm/shm_segment.hpp"
#include "shm_support.hpp"

#include <gtest/gtest.h>

#include <poll.h>

#include <thread>

namespace {

using namespace ndk::soft::shm;
using namespace ndk::soft::os;
using namespace std::chrono_literals;

constexpr std::uint32_t kSlots = 64;
constexpr std::uint32_t kSlotSize = 32;

class Consumer : public RingConsumer {
public:
    using RingConsumer::RingConsumer;
    bool has_messages() const
    {
        return header_->tail.load(std::memory_order_acquire) !=
               header_->head.load(std::memory_order_relaxed);
    }
};

bool readable(int fd)
{
    pollfd entry{fd, POLLIN, 0};
    return ::poll(&entry, 1, 0) == 1;
}

// A ring and its doorbell word in one segment; both halves of the doorbell share one eventfd
// (a duplicate, as the peer's copy would be).
class ShmDoorbell : public ::testing::Test {
protected:
    ShmSegment segment = ShmSegment::create(
        "doorbell", kCacheLine + ShmRing::bytes_for(kSlots, kSlotSize));
    DoorbellWord *word = ::new (segment.data()) DoorbellWord{};
    std::span<std::byte> region = segment.bytes().subspan(kCacheLine);
    bool formatted = (ShmRing::format(region, kSlots, kSlotSize), true);
    RingProducer producer{region};
    Consumer consumer{region};
    UniqueFd event = make_doorbell_fd();
    DoorbellRinger ringer{word, UniqueFd(::fcntl(event.get(), F_DUPFD_CLOEXEC, 0))};
    DoorbellSleeper sleeper{word, std::move(event)};
    std::byte message[8] = {};
    std::byte out[64];
    std::size_t length = 0;

    bool has_work() const { return consumer.has_messages(); }
    bool push()
    {
        return producer.try_push(message) == RingStatus::ok && ringer.after_publish();
    }
};

TEST_F(ShmDoorbell, TheProducerRingsOnlyWhileTheConsumerSleeps)
{
    for (int i = 0; i < 10; ++i)
        EXPECT_FALSE(push()) << "an awake consumer must cost no system call";
    EXPECT_FALSE(readable(sleeper.fd()));
    while (consumer.try_pop(out, length) == RingStatus::ok) {
    }
    ASSERT_TRUE(sleeper.arm([&] { return has_work(); }));
    EXPECT_TRUE(push());
    EXPECT_TRUE(readable(sleeper.fd()));
    // Rung once: the messages published while the consumer wakes up cost nothing more.
    EXPECT_FALSE(push());
    EXPECT_FALSE(push());
    sleeper.woken();
    EXPECT_FALSE(readable(sleeper.fd()));
    EXPECT_FALSE(push());
}

TEST_F(ShmDoorbell, ArmingWithAMessageWaitingDoesNotSleep)
{
    ASSERT_EQ(producer.try_push(message), RingStatus::ok);
    EXPECT_FALSE(sleeper.arm([&] { return has_work(); }));
    EXPECT_EQ(word->consumer_sleeping.load(), 0u);
    EXPECT_EQ(sleeper.wait([&] { return has_work(); }, 0ms), DoorbellSleeper::Wait::ready);
    EXPECT_EQ(sleeper.sleeps(), 0u);
}

TEST_F(ShmDoorbell, WaitsAreBoundedAndEndAtTheOtherDescriptor)
{
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(sleeper.wait([&] { return has_work(); }, 50ms), DoorbellSleeper::Wait::timeout);
    EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
    EXPECT_EQ(word->consumer_sleeping.load(), 0u);
    test_support::Pipe other;
    other.put('x');
    test_support::Pipe quiet;
    const int others[] = {quiet.read_end.get(), other.read_end.get()};
    EXPECT_EQ(sleeper.wait([&] { return has_work(); }, 5000ms, 0, others),
              DoorbellSleeper::Wait::other_fd);
}

TEST_F(ShmDoorbell, NoWakeUpIsLostBetweenTwoThreads)
{
    constexpr int kCount = 200000;
    std::thread producing([&] {
        for (int i = 0; i < kCount; ++i) {
            std::memcpy(message, &i, sizeof i);
            while (producer.try_push(message) == RingStatus::full)
                std::this_thread::yield();
            ringer.after_publish();
        }
    });
    int next = 0;
    bool in_order = true;
    while (next < kCount) {
        if (consumer.try_pop(out, length) == RingStatus::ok) {
            int got;
            std::memcpy(&got, out, sizeof got);
            in_order = in_order && got == next;
            ++next;
            continue;
        }
        // No spin: every empty ring is a sleep, the race the ordering must win.  A lost
        // wake-up would end here after 5 s.
        if (sleeper.wait([&] { return has_work(); }, 5000ms, 0) != DoorbellSleeper::Wait::ready)
            break;
    }
    producing.join();
    EXPECT_EQ(next, kCount);
    EXPECT_TRUE(in_order);
    EXPECT_GT(sleeper.sleeps(), 0u);
}

} // namespace
