#include "providers/soft/os/consumer_spin.hpp"

#include <array>
#include <chrono>
#include <cstddef>

namespace ndk::soft {

namespace {

constexpr std::int64_t kSpinGap = 50'000;        // ns
constexpr std::int64_t kStillSpinning = 100'000; // ns after the polls a clock read closed

std::int64_t steady_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

thread_local std::array<ConsumerSpin::PollClock, 4> tl_poll_clocks{};
thread_local std::size_t tl_next_poll_clock = 0;

ConsumerSpin::PollClock &poll_clock_of(const void *owner)
{
    for (ConsumerSpin::PollClock &clock : tl_poll_clocks)
        if (clock.owner == owner)
            return clock;
    ConsumerSpin::PollClock &reused = tl_poll_clocks[tl_next_poll_clock++ % tl_poll_clocks.size()];
    reused = {owner, 0, 0};
    return reused;
}

} // namespace

void ConsumerSpin::note_poll_of_another()
{
    PollClock &clock = poll_clock_of(this);
    tl_last_ = &clock;
    if (++clock.polls >= kPollsPerClockRead)
        read_clock(clock);
}

void ConsumerSpin::read_clock(PollClock &clock)
{
    clock.polls = 0;
    const std::int64_t now = steady_ns();
    const std::int64_t took = now - clock.read_ns;
    clock.read_ns = now;
    if (took < kPollsPerClockRead * kSpinGap)
        spinning_until_ns_.store(now + took + kStillSpinning, std::memory_order_relaxed);
}

bool ConsumerSpin::spinning() const
{
    return steady_ns() < spinning_until_ns_.load(std::memory_order_relaxed);
}

} // namespace ndk::soft
