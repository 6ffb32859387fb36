// The list of links a consumer's empty poll reads without the progress mutex
// (core/src/providers/soft/shm/shm_polled_links.hpp, over os/asymmetric_readers.hpp): stale
// until made, it tells empty from waiting once made, and invalidate() returns only after a
// read in progress has ended, so that the owner may destroy a link once it returns.  Each
// test runs with both fences: membarrier (where the kernel offers it) and full fences.
#include "providers/soft/shm/shm_polled_links.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace {

using ndk::soft::os::AsymmetricReaders;
using ndk::soft::shm::PolledLinks;
using Fence = AsymmetricReaders::Fence;

class ShmPolledLinks : public ::testing::TestWithParam<Fence> {
protected:
    void SetUp() override
    {
        if (GetParam() == Fence::membarrier && AsymmetricReaders::default_fence() != Fence::membarrier)
            GTEST_SKIP() << "the kernel refuses membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) here "
                            "(Linux < 4.14 or a seccomp filter): the provider uses the "
                            "full-fence form, which the FullFence cases test";
    }
};

struct FakeLink {
    std::atomic<bool> messages{false};
    bool has_messages() const { return messages.load(); }
};

TEST_P(ShmPolledLinks, StaleUntilMadeThenEmptyOrWaiting)
{
    using Peek = PolledLinks<FakeLink>::Peek;
    FakeLink a, b;
    PolledLinks<FakeLink> polled(GetParam());
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

TEST_P(ShmPolledLinks, InvalidateWaitsForAReadInProgress)
{
    using Peek = PolledLinks<HeldLink>::Peek;
    std::atomic<int> clock{0};
    HeldLink link;
    link.clock = &clock;
    PolledLinks<HeldLink> polled(GetParam());
    polled.make([&](auto list) { list(link); });
    Peek seen = Peek::stale;
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
    EXPECT_EQ(seen, Peek::empty);
    EXPECT_LT(link.left_at.load(), invalidated_at.load());
    EXPECT_EQ(polled.peek(), Peek::stale);
}

// Threads that read and exit give their slots back: many short-lived readers, each reading
// once, while the list is invalidated and made again, end with every read seeing a list.
TEST_P(ShmPolledLinks, ShortLivedReadersAndInvalidationsInterleave)
{
    using Peek = PolledLinks<FakeLink>::Peek;
    FakeLink link;
    link.messages = true;
    PolledLinks<FakeLink> polled(GetParam());
    polled.make([&](auto list) { list(link); });
    std::atomic<bool> stop{false};
    std::thread writer([&] {
        while (!stop) {
            polled.invalidate();
            polled.make([&](auto list) { list(link); });
        }
    });
    int waiting = 0, stale = 0;
    for (int i = 0; i < 200; ++i) {
        Peek seen = Peek::empty;
        std::thread reader([&] { seen = polled.peek(); });
        reader.join();
        ASSERT_NE(seen, Peek::empty) << "read " << i; // the one link has messages
        (seen == Peek::waiting ? waiting : stale) += 1;
    }
    stop = true;
    writer.join();
    EXPECT_EQ(waiting + stale, 200);
}

// A read from a thread-local destructor that runs after the thread gave its slot back: the
// slot may be another thread's by then, whose reads would end this one's announcement, and the
// writer would not wait for it.  Threads holding reads take every free slot (there are fewer
// than kTakers in this process) while the late read is in progress; the writer must still wait.
struct LateReader {
    const AsymmetricReaders *owner = nullptr;
    std::atomic<bool> *reading = nullptr, *release = nullptr, *done = nullptr;
    ~LateReader()
    {
        if (owner == nullptr)
            return;
        AsymmetricReaders::Reading read(*owner);
        reading->store(true);
        while (!release->load())
            std::this_thread::yield();
        done->store(true);
    }
};

TEST_P(ShmPolledLinks, AReadAfterTheThreadGaveItsSlotBackIsStillWaitedFor)
{
    constexpr int kTakers = 64;
    AsymmetricReaders late_owner(GetParam()), takers_owner(GetParam());
    std::atomic<bool> reading{false}, release{false}, done{false};
    std::thread exiting([&] {
        // Constructed before the thread's slot, so destroyed after it gave the slot back.
        thread_local LateReader late;
        late.reading = &reading; // fields one by one: a temporary LateReader would read
        late.release = &release;
        late.done = &done;
        late.owner = &late_owner;
        AsymmetricReaders::Reading first(takers_owner); // takes the thread's slot
    });
    while (!reading.load())
        std::this_thread::yield();
    std::atomic<int> holding{0};
    std::atomic<bool> end_takers{false};
    std::vector<std::thread> takers;
    for (int i = 0; i < kTakers; ++i)
        takers.emplace_back([&] {
            {
                AsymmetricReaders::Reading read(takers_owner);
                ++holding;
                while (!end_takers.load())
                    std::this_thread::yield();
            } // ends the announcement in its slot, whoever else thinks it theirs
            while (!release.load())
                std::this_thread::yield(); // keeps the slot taken until the check is over
        });
    while (holding.load() < kTakers)
        std::this_thread::yield();
    end_takers = true;
    bool done_when_waited = false;
    std::thread writer([&] {
        late_owner.wait_for_readers();
        done_when_waited = done.load();
    });
    // Time for a wrong wait to return while the late read is in progress; a right one waits.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    release = true;
    writer.join();
    exiting.join();
    for (std::thread &t : takers)
        t.join();
    EXPECT_TRUE(done_when_waited);
}

INSTANTIATE_TEST_SUITE_P(Fences, ShmPolledLinks, ::testing::Values(Fence::membarrier, Fence::full),
                         [](const auto &info) {
                             return info.param == Fence::membarrier ? "Membarrier" : "FullFence";
                         });

} // namespace
