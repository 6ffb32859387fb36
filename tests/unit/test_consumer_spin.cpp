// Whether a consumer spins (core/src/providers/soft/os/consumer_spin.*), as the transports'
// progress threads ask before they sleep: a thread polling back to back spins; one that sleeps
// a millisecond between its polls does not.  Each case polls twice the 32 polls a judgement
// takes, the first 32 only opening the count.  And the serving mark: which progress object a
// thread serves, nested marks restoring the outer.
#include "providers/soft/os/consumer_spin.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace {

using ndk::soft::ConsumerServing;
using ndk::soft::ConsumerSpin;
using Clock = std::chrono::steady_clock;

constexpr int kPolls = 64; // two judgements' worth

TEST(ConsumerSpin, NoPollNoSpin)
{
    const ConsumerSpin spin;
    EXPECT_FALSE(spin.spinning());
}

TEST(ConsumerSpin, PollsBackToBackSpin)
{
    ConsumerSpin spin;
    for (int i = 0; i < kPolls; ++i)
        spin.note_poll();
    EXPECT_TRUE(spin.spinning());
}

// A millisecond's sleep between polls: the thread blocked, and its polls are far apart.
TEST(ConsumerSpin, PollsWithASleepBetweenThemDoNotSpin)
{
    ConsumerSpin spin;
    for (int i = 0; i < kPolls; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        spin.note_poll();
    }
    EXPECT_FALSE(spin.spinning());
}

TEST(ConsumerServing, MarksTheProgressObjectServedUntilItEnds)
{
    const int first = 0, second = 0;
    EXPECT_FALSE(ConsumerServing::serving(&first));
    {
        const ConsumerServing outer(&first);
        EXPECT_TRUE(ConsumerServing::serving(&first));
        {
            const ConsumerServing inner(&second);
            EXPECT_TRUE(ConsumerServing::serving(&second));
            EXPECT_FALSE(ConsumerServing::serving(&first));
        }
        EXPECT_TRUE(ConsumerServing::serving(&first));
        bool other_thread = true;
        std::thread([&] { other_thread = ConsumerServing::serving(&first); }).join();
        EXPECT_FALSE(other_thread); // a mark is its thread's
    }
    EXPECT_FALSE(ConsumerServing::serving(&first));
}

} // namespace
