// Cross-memory copies for the shm transport (core/src/providers/soft/os/
// cross_memory.*): a child's buffer read and written through vector lists longer than
// IOV_MAX and cut differently on the two sides, a copy stopped at an unmapped page with the
// exact count before it, and the error once the child is gone.  Then the soft provider's
// target side over them (shm_cross_memory_payload.hpp).
#include "providers/soft/shm/shm_cross_memory_payload.hpp"
#include "providers/soft/os/cross_memory.hpp"
#include "shm_support.hpp"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

namespace {

using namespace ndk::soft::shm;
using namespace ndk::soft::os;
using namespace ndk::soft::shm::test_support;

constexpr std::size_t kBuffer = 64 * 1024;

// The parent copies from and into its children; that needs ptrace rights over them.
bool may_copy_with_children()
{
    const PtracePolicy policy = ptrace_policy();
    return policy == PtracePolicy::classic || policy == PtracePolicy::descendants ||
           (policy == PtracePolicy::admin_only && ::geteuid() == 0);
}

std::byte pattern(std::size_t i, int seed)
{
    return static_cast<std::byte>((i * 131 + static_cast<std::size_t>(seed)) % 251);
}

// `buffer` cut into pieces of `piece` bytes (the last one shorter).
std::vector<iovec> cut(std::byte *buffer, std::size_t size, std::size_t piece)
{
    std::vector<iovec> list;
    for (std::size_t at = 0; at < size; at += piece)
        list.push_back({buffer + at, std::min(piece, size - at)});
    return list;
}

// Memory the child has at the same address as the parent (fork), but its own contents.
struct Pages {
    std::size_t size;
    std::byte *base;
    explicit Pages(std::size_t bytes)
        : size(bytes), base(static_cast<std::byte *>(::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)))
    {
    }
    ~Pages() { ::munmap(base, size); }
};

// A child that fills `pages` with its pattern (seed 7), signals `ready`, waits for EOF on
// `release`, then checks that the parent wrote pattern 9 into `written`.
Child pattern_child(Pages &pages, Pages &written, Pipe &ready, Pipe &release)
{
    Child child = Child::spawn([&] {
        release.write_end.reset();
        for (std::size_t i = 0; i < pages.size; ++i)
            pages.base[i] = pattern(i, 7);
        ready.put('r');
        if (release.get() != -1)
            return 1;
        for (std::size_t i = 0; i < written.size; ++i)
            if (written.base[i] != pattern(i, 9))
                return 3;
        return 0;
    });
    release.read_end.reset();
    ready.write_end.reset();
    return child;
}

// pattern_child with its memory and pipes, declared in the order they are made.
struct PatternPeer {
    Pages theirs{kBuffer};
    Pages target{kBuffer};
    Pipe ready;
    Pipe release;
    Child child = pattern_child(theirs, target, ready, release);
};

TEST(CrossMemory, ReadsAndWritesAChildsBufferAcrossIovMaxBatches)
{
    if (!may_copy_with_children())
        GTEST_SKIP() << "Yama ptrace_scope (/proc/sys/kernel/yama/ptrace_scope) forbids cross-memory copies into a child here: set it to 0 or 1, or run as root under 2";
    PatternPeer peer;
    ASSERT_EQ(peer.ready.get(), 'r');
    Pages &theirs = peer.theirs, &target = peer.target;
    Pipe &release = peer.release;
    Child &child = peer.child;

    // 17-byte pieces here, 23-byte pieces there: 3856 and 2850 vectors, both over IOV_MAX,
    // and no boundary of one list meets the other's except by chance.
    std::vector<std::byte> mine(kBuffer);
    const auto local = cut(mine.data(), kBuffer, 17);
    const auto remote = cut(theirs.base, kBuffer, 23);
    ASSERT_GT(local.size(), static_cast<std::size_t>(IOV_MAX));
    ASSERT_GT(remote.size(), static_cast<std::size_t>(IOV_MAX));
    const CopyResult read = read_from(child.pid(), local, remote);
    EXPECT_EQ(read.status, CopyStatus::ok) << to_string(read.status);
    ASSERT_EQ(read.bytes, kBuffer);
    for (std::size_t i = 0; i < kBuffer; ++i)
        ASSERT_EQ(mine[i], pattern(i, 7)) << "byte " << i;

    for (std::size_t i = 0; i < kBuffer; ++i)
        mine[i] = pattern(i, 9);
    const CopyResult wrote =
        write_to(child.pid(), cut(mine.data(), kBuffer, 4000), cut(target.base, kBuffer, 5));
    EXPECT_EQ(wrote.status, CopyStatus::ok) << to_string(wrote.status);
    EXPECT_EQ(wrote.bytes, kBuffer);
    release.write_end.reset();
    EXPECT_EQ(child.wait(), 0); // the child found every byte in place
}

TEST(CrossMemory, ListsOfDifferentLengthsCopyTheShorter)
{
    // Our own process is the simplest peer for the arithmetic.
    std::vector<std::byte> from(100, std::byte{5});
    std::vector<std::byte> to(60);
    const iovec local[] = {{to.data(), 10}, {to.data() + 10, 0}, {to.data() + 10, 50}};
    const iovec remote[] = {{from.data(), 100}};
    const CopyResult r = read_from(::getpid(), local, remote);
    EXPECT_EQ(r.status, CopyStatus::ok);
    EXPECT_EQ(r.bytes, 60u);
    EXPECT_EQ(to, std::vector<std::byte>(60, std::byte{5}));
    EXPECT_EQ(read_from(::getpid(), {}, remote).bytes, 0u);
}

TEST(CrossMemory, ACopyStopsAtAnUnmappedPageWithTheCountBeforeIt)
{
    if (!may_copy_with_children())
        GTEST_SKIP() << "Yama ptrace_scope (/proc/sys/kernel/yama/ptrace_scope) forbids cross-memory copies into a child here: set it to 0 or 1, or run as root under 2";
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    Pages theirs(3 * page);
    Pipe ready;
    Pipe release;
    Child child = Child::spawn([&] {
        release.write_end.reset();
        std::memset(theirs.base, 0x5a, 3 * page);
        ::munmap(theirs.base + 2 * page, page); // in the child only
        ready.put('r');
        return release.get() == -1 ? 0 : 1;
    });
    release.read_end.reset();
    ready.write_end.reset();
    ASSERT_EQ(ready.get(), 'r');
    std::vector<std::byte> mine(3 * page);
    // Several remote vectors, the fault inside the third: the count is exact to the byte.
    const iovec local[] = {{mine.data(), mine.size()}};
    const iovec remote[] = {{theirs.base, page / 2},
                            {theirs.base + page / 2, page + page / 2 + 100},
                            {theirs.base + 2 * page + 100, page - 100}};
    const CopyResult r = read_from(child.pid(), local, remote);
    EXPECT_EQ(r.status, CopyStatus::bad_address) << to_string(r.status);
    EXPECT_EQ(r.os_error, EFAULT);
    EXPECT_EQ(r.bytes, 2 * page);
    for (std::size_t i = 0; i < 2 * page; ++i)
        ASSERT_EQ(mine[i], std::byte{0x5a}) << i;
    release.write_end.reset();
    EXPECT_EQ(child.wait(), 0);
}

TEST(CrossMemory, AGonePeerIsReportedAsGone)
{
    Pages theirs(4096);
    Child child = Child::spawn([] { return 0; });
    const pid_t pid = child.pid();
    ASSERT_EQ(child.wait(), 0);
    std::vector<std::byte> mine(4096);
    const iovec local[] = {{mine.data(), mine.size()}};
    const iovec remote[] = {{theirs.base, theirs.size}};
    const CopyResult r = read_from(pid, local, remote);
    EXPECT_EQ(r.status, CopyStatus::peer_gone);
    EXPECT_EQ(r.os_error, ESRCH);
    EXPECT_EQ(r.bytes, 0u);
    EXPECT_EQ(write_to(pid, local, remote).status, CopyStatus::peer_gone);
}

TEST(CrossMemory, ErrnoMapsToASmallSetOfStatuses)
{
    EXPECT_EQ(copy_status_from_errno(ESRCH), CopyStatus::peer_gone);
    EXPECT_EQ(copy_status_from_errno(EPERM), CopyStatus::not_permitted);
    EXPECT_EQ(copy_status_from_errno(EFAULT), CopyStatus::bad_address);
    EXPECT_EQ(copy_status_from_errno(ENOMEM), CopyStatus::no_memory);
    EXPECT_EQ(copy_status_from_errno(EINVAL), CopyStatus::invalid);
    EXPECT_EQ(copy_status_from_errno(EIO), CopyStatus::other);
    EXPECT_STREQ(to_string(CopyStatus::peer_gone), "peer_gone");
}

// The target side of the soft provider sees another process's bytes as a payload: a Send's
// source pulled into receive spans longer than it (only its length is copied), a Read's
// sink pushed from the target's spans, and a peer that is gone a failed copy, not a crash.
TEST(CrossMemoryPayload, PullsASourceAndPushesASinkInAnotherProcess)
{
    if (!may_copy_with_children())
        GTEST_SKIP() << "Yama ptrace_scope (/proc/sys/kernel/yama/ptrace_scope) forbids cross-memory copies into a child here: set it to 0 or 1, or run as root under 2";
    PatternPeer peer;
    ASSERT_EQ(peer.ready.get(), 'r');
    const auto source = cut(peer.theirs.base, kBuffer, 3000); // the initiator's SGL, in the child
    ndk::soft::CrossMemoryPayload send(peer.child.pid(), source);
    ASSERT_EQ(send.length(), kBuffer);
    std::vector<std::byte> receive(kBuffer + 100, std::byte{0xee}); // a larger receive buffer
    auto *at = reinterpret_cast<unsigned char *>(receive.data());
    const ndk::soft::Spans sink = {{at, 1000}, {at + 1000, kBuffer + 100 - 1000}};
    ASSERT_TRUE(send.copy_to(sink)) << to_string(send.last_copy().status);
    for (std::size_t i = 0; i < kBuffer; ++i)
        ASSERT_EQ(receive[i], pattern(i, 7)) << "byte " << i;
    EXPECT_EQ(receive[kBuffer], std::byte{0xee}) << "a byte past the payload was written";

    std::vector<std::byte> mine(kBuffer);
    for (std::size_t i = 0; i < kBuffer; ++i)
        mine[i] = pattern(i, 9);
    const auto read_sink = cut(peer.target.base, kBuffer, 777); // the Read's sink, in the child
    ndk::soft::CrossMemoryPayload read(peer.child.pid(), read_sink);
    auto *from = reinterpret_cast<unsigned char *>(mine.data());
    ASSERT_TRUE(read.copy_from({{from, kBuffer / 2}, {from + kBuffer / 2, kBuffer / 2}}))
        << to_string(read.last_copy().status);
    peer.release.write_end.reset();
    EXPECT_EQ(peer.child.wait(), 0); // the child found the Read Response in its sink

    EXPECT_FALSE(send.copy_to(sink)); // reaped: its pid names no process now
    EXPECT_EQ(send.last_copy().status, CopyStatus::peer_gone);
}

} // namespace
