// The shm transport's segment and its handoff (core/src/providers/soft/shm/
// shm_segment.*, shm_handoff.*): a sealed memfd, mapped by two parties, reaching the second
// over an abstract Unix socket as SCM_RIGHTS.
#include "providers/soft/shm/shm_handoff.hpp"
#include "providers/soft/shm/shm_segment.hpp"
#include "shm_support.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace {

using namespace ndk::soft::shm;
using namespace ndk::soft::os;
using namespace ndk::soft::shm::test_support;

int error_of(auto &&call)
{
    try {
        call();
    } catch (const std::system_error &e) {
        return e.code().value();
    }
    return 0;
}

std::pair<UniqueFd, UniqueFd> socket_pair()
{
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), 0);
    return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

TEST(ShmSegment, CreateRoundsToPagesZeroFillsAndSealsTheSize)
{
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    ShmSegment segment = ShmSegment::create("test", page + 1);
    EXPECT_EQ(segment.size(), 2 * page);
    for (std::byte b : segment.bytes())
        ASSERT_EQ(b, std::byte{0});
    // Neither side may change the size under the other's mapping.
    EXPECT_NE(::ftruncate(segment.fd(), 0), 0);
    EXPECT_EQ(errno, EPERM);
    EXPECT_NE(::ftruncate(segment.fd(), static_cast<off_t>(4 * page)), 0);
    EXPECT_EQ(error_of([] { ShmSegment::create("empty", 0); }), EINVAL);
}

TEST(ShmSegment, HandedOverDescriptorMapsTheSameMemory)
{
    ShmSegment segment = ShmSegment::create("handoff", 4096);
    auto [a, b] = socket_pair();
    const std::byte tag[3] = {std::byte{1}, std::byte{2}, std::byte{3}};
    send_fd(a.get(), segment.fd(), tag);
    std::byte got[8];
    std::size_t received = 0;
    ShmSegment peer = ShmSegment::adopt(receive_fd(b.get(), got, received));
    ASSERT_EQ(received, 3u);
    EXPECT_EQ(std::memcmp(got, tag, 3), 0);
    ASSERT_EQ(peer.size(), segment.size());
    ASSERT_NE(peer.data(), segment.data());
    std::memcpy(segment.data() + 100, "ndk", 3);
    EXPECT_EQ(std::memcmp(peer.data() + 100, "ndk", 3), 0);
}

TEST(ShmSegment, AdoptRefusesAnUnsealedFile)
{
    UniqueFd fd(::memfd_create("unsealed", MFD_CLOEXEC));
    ASSERT_TRUE(fd);
    ASSERT_EQ(::ftruncate(fd.get(), 4096), 0);
    EXPECT_EQ(error_of([&] { ShmSegment::adopt(std::move(fd)); }), EINVAL);
}

TEST(ShmHandoff, ReceiveSeesThePeersEndAsConnectionReset)
{
    auto [a, b] = socket_pair();
    a.reset();
    std::byte got[1];
    std::size_t received = 0;
    EXPECT_EQ(error_of([&, &b = b] { receive_fd(b.get(), got, received); }), ECONNRESET);
}

TEST(ShmHandoff, AMessageWithoutDescriptorIsAProtocolError)
{
    auto [a, b] = socket_pair();
    ASSERT_EQ(::send(a.get(), "x", 1, 0), 1);
    std::byte got[1];
    std::size_t received = 0;
    EXPECT_EQ(error_of([&, &b = b] { receive_fd(b.get(), got, received); }), EPROTO);
}

TEST(ShmHandoff, AbstractNamesAreExclusiveAndGoWithTheirSocket)
{
    const std::string name = unique_name("handoff");
    EXPECT_EQ(error_of([&] { connect_abstract(name); }), ECONNREFUSED);
    {
        UniqueFd listener = listen_abstract(name);
        EXPECT_EQ(error_of([&] { listen_abstract(name); }), EADDRINUSE);
    }
    // Closed: the name is free again, nothing was left in any filesystem.
    UniqueFd again = listen_abstract(name);
    EXPECT_TRUE(again);
}

TEST(ShmHandoff, AcceptorSeesTheConnectingProcessCredentials)
{
    const std::string name = unique_name("credentials");
    UniqueFd listener = listen_abstract(name);
    ShmSegment segment = ShmSegment::create("credentials", 4096);
    Child child = Child::spawn([&] {
        UniqueFd connection = connect_abstract(name);
        std::byte got[1];
        std::size_t received = 0;
        ShmSegment mine = ShmSegment::adopt(receive_fd(connection.get(), got, received));
        // Answer through the shared memory itself: what the parent reads proves the mapping.
        std::memcpy(mine.data(), "child", 5);
        return 0;
    });
    UniqueFd connection = accept_while_alive(listener.get(), watch_child(child));
    const PeerCredentials who = peer_credentials(connection.get());
    EXPECT_EQ(who.pid, child.pid());
    EXPECT_EQ(who.uid, ::geteuid());
    const std::byte one[1] = {std::byte{1}};
    send_fd(connection.get(), segment.fd(), one);
    ASSERT_EQ(child.wait(), 0);
    EXPECT_EQ(std::memcmp(segment.data(), "child", 5), 0);
}

} // namespace
