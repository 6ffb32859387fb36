// The shm transport's endpoint registry (core/src/providers/soft/shm/shm_registry.*):
// add, find, remove; entries of exited processes recognized as stale and reclaimed; several
// processes registering one endpoint at once, exactly one winning.
#include "providers/soft/os/process_identity.hpp"
#include "providers/soft/shm/shm_registry.hpp"
#include "shm_support.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace {

using namespace ndk::soft::shm;
using namespace ndk::soft::os;
using namespace ndk::soft::shm::test_support;
namespace fs = std::filesystem;

// Each test gets a fresh private directory, removed whatever the test's outcome.
class ShmRegistry : public ShmRegistryDirTest {
protected:
    EndpointEntry entry(const std::string &address, std::uint16_t port,
                        const ProcessIdentity &owner, const std::string &socket = "s")
    {
        return {address, port, owner, socket};
    }

    std::size_t files() const
    {
        std::size_t n = 0;
        for (const auto &f : fs::directory_iterator(dir_))
            n += f.path().filename() != ".lock";
        return n;
    }
};

TEST_F(ShmRegistry, AddFindRemove)
{
    EndpointRegistry registry(dir_);
    const ProcessIdentity self = self_identity();
    const EndpointEntry mine = entry("192.0.2.1", 4000, self, "ndk/listener/1");
    EXPECT_FALSE(registry.find("192.0.2.1", 4000).has_value());
    ASSERT_EQ(registry.add(mine), AddResult::added);
    EXPECT_EQ(registry.find("192.0.2.1", 4000), mine);
    EXPECT_FALSE(registry.find("192.0.2.1", 4001).has_value());
    EXPECT_FALSE(registry.find("192.0.2.2", 4000).has_value());

    EndpointEntry holder;
    EXPECT_EQ(registry.add(entry("192.0.2.1", 4000, self, "other"), &holder), AddResult::in_use);
    EXPECT_EQ(holder, mine);
    ASSERT_EQ(registry.add(entry("2001:db8::1", 4000, self)), AddResult::added);
    EXPECT_EQ(registry.list().size(), 2u);

    // Only the owner removes.
    EXPECT_FALSE(registry.remove("192.0.2.1", 4000, {self.pid, self.start_time + 1}));
    EXPECT_TRUE(registry.remove("192.0.2.1", 4000, self));
    EXPECT_FALSE(registry.find("192.0.2.1", 4000).has_value());
    EXPECT_FALSE(registry.remove("192.0.2.1", 4000, self));
    EXPECT_EQ(registry.list().size(), 1u);
}

TEST_F(ShmRegistry, RejectsNamesThatAreNotAddresses)
{
    EndpointRegistry registry(dir_);
    const ProcessIdentity self = self_identity();
    EXPECT_THROW(registry.add(entry("../etc", 1, self)), std::invalid_argument);
    EXPECT_THROW(registry.add(entry("a/b", 1, self)), std::invalid_argument);
    EXPECT_THROW(registry.add(entry(".lock", 1, self)), std::invalid_argument);
    EXPECT_THROW(registry.add(entry("", 1, self)), std::invalid_argument);
    EXPECT_THROW(registry.add(entry("192.0.2.1", 1, self, "two\nlines")), std::invalid_argument);
    EXPECT_EQ(files(), 0u);
}

TEST_F(ShmRegistry, RefusesADirectoryOthersCanWrite)
{
    ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
    EXPECT_THROW(EndpointRegistry{dir_}, std::system_error);
    ASSERT_EQ(::chmod(dir_.c_str(), 0700), 0);
    EXPECT_NO_THROW(EndpointRegistry{dir_});
}

TEST_F(ShmRegistry, AnExitedOwnersEntryIsStaleAndReclaimed)
{
    EndpointRegistry registry(dir_);
    Child child = Child::spawn([&] {
        EndpointRegistry theirs(dir_);
        const ProcessIdentity me = self_identity();
        const bool ok = theirs.add({"192.0.2.7", 5000, me, "child"}) == AddResult::added &&
                        theirs.add({"192.0.2.7", 5001, me, "child"}) == AddResult::added;
        return ok ? 0 : 1;
    });
    ASSERT_EQ(child.wait(), 0);
    EXPECT_EQ(files(), 2u);
    // Its owner is gone: invisible to lookups and listings...
    EXPECT_FALSE(registry.find("192.0.2.7", 5000).has_value());
    EXPECT_TRUE(registry.list().empty());
    // ...taken over by a new registration of the same endpoint...
    const ProcessIdentity self = self_identity();
    ASSERT_EQ(registry.add(entry("192.0.2.7", 5000, self, "parent")), AddResult::added);
    EXPECT_EQ(registry.find("192.0.2.7", 5000)->socket_name, "parent");
    // ...and swept with the rest.
    EXPECT_EQ(registry.reclaim_stale(), 1u);
    EXPECT_EQ(files(), 1u);
    EXPECT_TRUE(registry.find("192.0.2.7", 5000).has_value());
}

TEST_F(ShmRegistry, AReusedPidDoesNotKeepAnEntryAlive)
{
    EndpointRegistry registry(dir_);
    const ProcessIdentity self = self_identity();
    // This pid, but a process that started at another time: the entry's owner is gone.
    ASSERT_EQ(registry.add(entry("192.0.2.9", 1, {self.pid, self.start_time + 1})),
              AddResult::added);
    EXPECT_FALSE(registry.find("192.0.2.9", 1).has_value());
    EXPECT_EQ(registry.add(entry("192.0.2.9", 1, self)), AddResult::added);
}

TEST_F(ShmRegistry, ConcurrentRegistrationsFromSeveralProcessesHaveOneWinner)
{
    constexpr int kChildren = 4;
    Pipe go;      // EOF starts every child at once
    Pipe release; // EOF lets them exit
    Pipe results; // one byte per child: 'a' added, 'u' in use, 'e' error
    std::vector<Child> children;
    for (int i = 0; i < kChildren; ++i) {
        children.push_back(Child::spawn([&, i] {
            go.write_end.reset();
            release.write_end.reset();
            char result = 'e';
            if (go.get() == -1) {
                try {
                    EndpointRegistry theirs(dir_);
                    const auto r = theirs.add(
                        {"192.0.2.1", 6000, self_identity(), "child" + std::to_string(i)});
                    result = r == AddResult::added ? 'a' : 'u';
                } catch (...) {
                }
            }
            results.put(result);
            return release.get() == -1 ? 0 : 1;
        }));
    }
    go.write_end.reset();
    results.write_end.reset();
    int added = 0;
    int in_use = 0;
    for (int i = 0; i < kChildren; ++i) {
        const int r = results.get();
        added += r == 'a';
        in_use += r == 'u';
    }
    EXPECT_EQ(added, 1);
    EXPECT_EQ(in_use, kChildren - 1);
    EndpointRegistry registry(dir_);
    const auto winner = registry.find("192.0.2.1", 6000);
    ASSERT_TRUE(winner.has_value());
    bool winner_is_a_child = false;
    for (const Child &c : children)
        winner_is_a_child = winner_is_a_child || winner->owner.pid == c.pid();
    EXPECT_TRUE(winner_is_a_child);

    release.write_end.reset();
    for (Child &c : children)
        EXPECT_EQ(c.wait(), 0);
    EXPECT_FALSE(registry.find("192.0.2.1", 6000).has_value());
    EXPECT_EQ(registry.reclaim_stale(), 1u);
    EXPECT_EQ(files(), 0u);
}

TEST_F(ShmRegistry, ASweepRemovesADeadWritersHalfMadeFile)
{
    EndpointRegistry registry(dir_);
    Child child = Child::spawn([] { return 0; });
    const pid_t dead = child.pid();
    ASSERT_EQ(child.wait(), 0);
    const fs::path leftover = dir_ / (".tmp-" + std::to_string(dead) + "-1-0");
    { std::ofstream(leftover) << "half"; }
    const ProcessIdentity self = self_identity();
    const fs::path in_progress =
        dir_ / (".tmp-" + std::to_string(self.pid) + '-' + std::to_string(self.start_time) + "-99");
    { std::ofstream(in_progress) << "half"; }
    EXPECT_EQ(registry.reclaim_stale(), 0u); // entries: none; leftovers are not entries
    EXPECT_FALSE(fs::exists(leftover));
    EXPECT_TRUE(fs::exists(in_progress)); // a running writer's file stays
}

// A fabric's directory goes with its last user, lock file and all; a new user makes it again.
TEST_F(ShmRegistry, AFabricDirectoryGoesWithItsLastUser)
{
    const fs::path fabric = EndpointRegistry::fabric_directory(dir_, "last-user");
    EndpointRegistry registry(fabric);
    const ProcessIdentity self = self_identity();
    ASSERT_EQ(registry.add(entry("192.0.2.3", 0, self)), AddResult::added);
    EXPECT_FALSE(registry.remove_if_unused()) << "a running process's entry keeps it";
    EXPECT_TRUE(fs::exists(fabric / ".lock"));
    ASSERT_TRUE(registry.remove("192.0.2.3", 0, self));
    EXPECT_TRUE(registry.remove_if_unused());
    EXPECT_FALSE(fs::exists(fabric));
    // Removing what is gone does not make the directory again...
    EXPECT_FALSE(registry.remove("192.0.2.3", 0, self));
    EXPECT_TRUE(registry.list().empty());
    EXPECT_FALSE(fs::exists(fabric));
    // ...registering does.
    ASSERT_EQ(registry.add(entry("192.0.2.3", 0, self)), AddResult::added);
    EXPECT_EQ(registry.find("192.0.2.3", 0)->address, "192.0.2.3");
}

// A killed run's fabric (its owners gone) is reclaimed by the next sweep of the default
// directory; a fabric with a running owner stays.
TEST_F(ShmRegistry, ASweepReclaimsTheFabricsOfExitedOwners)
{
    const fs::path dead = EndpointRegistry::fabric_directory(dir_, "dead");
    const fs::path alive = EndpointRegistry::fabric_directory(dir_, "alive");
    Child child = Child::spawn([&] {
        EndpointRegistry theirs(dead);
        return theirs.add({"192.0.2.4", 0, self_identity(), "child"}) == AddResult::added ? 0 : 1;
    });
    ASSERT_EQ(child.wait(), 0);
    EndpointRegistry ours(alive);
    ASSERT_EQ(ours.add(entry("192.0.2.5", 0, self_identity())), AddResult::added);
    ASSERT_TRUE(fs::exists(dead));
    EXPECT_EQ(EndpointRegistry::reclaim_unused_fabrics(dir_), 1u);
    EXPECT_FALSE(fs::exists(dead));
    EXPECT_TRUE(ours.find("192.0.2.5", 0).has_value());
}

// Writers that lock while another process removes the directory under them: every one of
// them ends up registered in a directory that exists (lock() starts again on a lock file
// that was unlinked while it waited).
TEST_F(ShmRegistry, RegistrationsRacingTheLastUsersRemovalAllLand)
{
    const fs::path fabric = EndpointRegistry::fabric_directory(dir_, "race");
    constexpr int kChildren = 3;
    constexpr int kRounds = 200;
    std::vector<Child> children;
    for (int c = 0; c < kChildren; ++c)
        children.push_back(Child::spawn([&, c] {
            EndpointRegistry registry(fabric);
            const ProcessIdentity me = self_identity();
            const std::string address = "192.0.2." + std::to_string(10 + c);
            for (int round = 0; round < kRounds; ++round) {
                if (registry.add({address, 0, me, "child"}) != AddResult::added ||
                    !registry.find(address, 0).has_value())
                    return 1;
                if (!registry.remove(address, 0, me))
                    return 2;
                registry.remove_if_unused();
            }
            return 0;
        }));
    for (auto &child : children)
        EXPECT_EQ(child.wait(), 0);
    EndpointRegistry registry(fabric);
    EXPECT_TRUE(registry.remove_if_unused());
}

// Opening a fabric's registry while another process sweeps the fabrics nobody uses (every
// adapter opened with transport=shm sweeps first): the sweep may remove the new, still empty
// directory between its mkdir and its check, and the open makes it again rather than failing
// (an adapter's open failed so, STATUS_INSUFFICIENT_RESOURCES, "stat of the shm registry ...:
// No such file or directory", in the suite over soft:shm with two workers).
TEST_F(ShmRegistry, OpeningAFabricWhileAnotherProcessSweepsItAlwaysSucceeds)
{
    const fs::path fabric = EndpointRegistry::fabric_directory(dir_, "swept");
    constexpr int kRounds = 2000;
    Child opener = Child::spawn([&] {
        for (int round = 0; round < kRounds; ++round) {
            try {
                EndpointRegistry registry(fabric);
            } catch (const std::exception &) {
                return 1;
            }
        }
        return 0;
    });
    Child sweeper = Child::spawn([&] {
        for (int round = 0; round < kRounds; ++round)
            EndpointRegistry::reclaim_unused_fabrics(dir_);
        return 0;
    });
    EXPECT_EQ(opener.wait(), 0);
    EXPECT_EQ(sweeper.wait(), 0);
}

} // namespace
