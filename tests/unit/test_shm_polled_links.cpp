// The list of links a consumer's empty poll reads without the progress mutex
// (core/src/providers/soft/shm/shm_polled_links.hpp): stale until made, it tells empty from
// waiting once made, and invalidate() returns only after a read in progress has ended, so that
// the owner may destroy a link once it returns.
#include "providers/soft/shm/shm_polled_links.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace {

using ndk::soft::shm::PolledLinks;

struct FakeLink {
    std::atomic<bool> messages{false};
    bool has_messages() const { return messages.load(); }
};

using Peek = PolledLinks<FakeLink>::Peek;

TEST(ShmPolledLinks, StaleUntilMadeThenEmptyOrWaiting)
{
    FakeLink a, b;
    PolledLinks<FakeLink> polled;
    EXPECT_FALSE(polled.current());
    EXPECT_EQ(polled.peek(), Peek::stale);
    polled.make([&](auto list) {
        list(a);
        list(b);
    });
    EXPECT_TRUE(polled.current());
    EXPECT_EQ(polled.peek(), Peek::empty);
    b.messages = true;
    EXPECT_EQ(polled.peek(), Peek::waiting);
    polled.invalidate();
    EXPECT_FALSE(polled.current());
    EXPECT_EQ(polled.peek(), Peek::stale); // b is no longer looked at
    polled.make([&](auto list) { list(a); });
    EXPECT_EQ(polled.peek(), Peek::empty);
}

// A link whose has_messages() holds the reading thread until released: invalidate(), called
// meanwhile on a third thread, returns only after that read ended.
struct HeldLink {
    std::atomic<bool> entered{false};
    std::atomic<bool> release{false};
    std::atomic<int> *clock = nullptr;
    std::atomic<int> left_at{0};
    bool has_messages() const
    {
        auto *self = const_cast<HeldLink *>(this);
        self->entered = true;
        while (!release)
            std::this_thread::yield();
        self->left_at = ++*clock;
        return false;
    }
};

TEST(ShmPolledLinks, InvalidateWaitsForAReadInProgress)
{
    std::atomic<int> clock{0};
    HeldLink link;
    link.clock = &clock;
    PolledLinks<HeldLink> polled;
    polled.make([&](auto list) { list(link); });
    PolledLinks<HeldLink>::Peek seen = PolledLinks<HeldLink>::Peek::stale;
    std::thread reader([&] { seen = polled.peek(); });
    while (!link.entered)
        std::this_thread::yield();
    std::atomic<int> invalidated_at{0};
    std::thread invalidating([&] {
        polled.invalidate();
        invalidated_at = ++clock;
    });
    // Time for a wrong invalidate() to return before the read ends; a right one waits.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    link.release = true;
    reader.join();
    invalidating.join();
    EXPECT_EQ(seen, PolledLinks<HeldLink>::Peek::empty);
    EXPECT_LT(link.left_at.load(), invalidated_at.load());
    EXPECT_EQ(polled.peek(), PolledLinks<HeldLink>::Peek::stale);
}

} // namespace
