// Peer death detection for the shm transport (core/src/providers/soft/os/
// peer_watch.*, process_identity.*): a pidfd that turns a peer's death into an event within
// a bounded wait, and identities that a reused pid cannot impersonate.
#include "providers/soft/os/peer_watch.hpp"
#include "providers/soft/os/process_identity.hpp"
#include "shm_support.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <optional>

namespace {

using namespace ndk::soft::shm;
using namespace ndk::soft::os;
using namespace ndk::soft::shm::test_support;
using namespace std::chrono_literals;

// A bound far above what the kernel takes (microseconds), so a loaded CI machine passes and
// a hang still fails.
constexpr auto kBound = 10s;

TEST(ProcessIdentity, NamesThisProcessAndRejectsAnotherStartTime)
{
    const ProcessIdentity self = self_identity();
    EXPECT_EQ(self.pid, ::getpid());
    EXPECT_GT(self.start_time, 0u);
    EXPECT_TRUE(is_running(self));
    // The same pid with another start time is a different (earlier or later) process.
    EXPECT_FALSE(is_running({self.pid, self.start_time + 1}));
    EXPECT_FALSE(identify(0).has_value());
    EXPECT_FALSE(identify(-1).has_value());
}

// A child blocked until `release` is closed (or it is killed), and a watch on it.
struct WatchedChild {
    Pipe release;
    Child child = Child::spawn([this] {
        release.write_end.reset();
        return release.get() == -1 ? 0 : 1;
    });
    std::optional<ProcessIdentity> identity = identify(child.pid());
    std::optional<PeerWatch> watch = identity ? PeerWatch::open(*identity) : std::nullopt;

    WatchedChild() { release.read_end.reset(); }
};

TEST(ProcessIdentity, AnExitedChildIsNotRunningEvenBeforeItIsReaped)
{
    WatchedChild c;
    ASSERT_TRUE(c.watch.has_value());
    EXPECT_TRUE(is_running(*c.identity));
    c.release.write_end.reset();
    ASSERT_TRUE(c.watch->wait_for_exit(kBound));
    // Now a zombie until reaped: it can no longer act, so it is not running.
    EXPECT_FALSE(is_running(*c.identity));
    EXPECT_EQ(c.child.wait(), 0);
}

TEST(PeerWatch, SeesAKilledChildWithinABoundedWait)
{
    WatchedChild c;
    ASSERT_TRUE(c.watch.has_value());
    EXPECT_FALSE(c.watch->exited());
    c.child.kill(SIGKILL);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(c.watch->wait_for_exit(kBound));
    EXPECT_LT(std::chrono::steady_clock::now() - start, kBound);
    EXPECT_TRUE(c.watch->exited());
    EXPECT_EQ(c.child.wait(), 128 + SIGKILL);
}

TEST(PeerWatch, AGoneOrImpersonatedPeerCannotBeWatched)
{
    Child child = Child::spawn([] { return 0; });
    const pid_t pid = child.pid();
    EXPECT_EQ(child.wait(), 0);
    EXPECT_FALSE(PeerWatch::open({pid, 1}).has_value());
    const ProcessIdentity self = self_identity();
    EXPECT_FALSE(PeerWatch::open({self.pid, self.start_time + 1}).has_value());
    auto watch = PeerWatch::open(self);
    ASSERT_TRUE(watch.has_value());
    EXPECT_FALSE(watch->wait_for_exit(1ms));
}

} // namespace
