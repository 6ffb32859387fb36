// Whether a descriptor has something to read right now (core/src/providers/soft/os/
// descriptor_state.*), the look the soft provider's knob `quiescent` takes at the transports'
// sockets: bytes, the peer's end or a connection to accept make it readable; nothing does not.
#include "providers/soft/os/descriptor_state.hpp"
#include "providers/soft/os/unique_fd.hpp"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

using ndk::soft::os::readable_now;
using ndk::soft::os::UniqueFd;

TEST(DescriptorState, ASocketIsReadableWhenBytesOrThePeersEndWait)
{
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
    UniqueFd a(fds[0]), b(fds[1]);
    EXPECT_FALSE(readable_now(b.get()));
    ASSERT_EQ(::write(a.get(), "x", 1), 1);
    EXPECT_TRUE(readable_now(b.get()));
    char c = 0;
    ASSERT_EQ(::read(b.get(), &c, 1), 1);
    EXPECT_FALSE(readable_now(b.get()));
    a.reset();
    EXPECT_TRUE(readable_now(b.get())); // the peer's end (EOF) is there to read
}

TEST(DescriptorState, AListenerIsReadableWhenAConnectionWaits)
{
    UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr *>(&address), size), 0);
    ASSERT_EQ(::listen(listener.get(), 1), 0);
    ASSERT_EQ(::getsockname(listener.get(), reinterpret_cast<sockaddr *>(&address), &size), 0);
    EXPECT_FALSE(readable_now(listener.get()));
    UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_EQ(::connect(client.get(), reinterpret_cast<sockaddr *>(&address), size), 0);
    EXPECT_TRUE(readable_now(listener.get())); // connect() returned: the handshake is done
}

} // namespace
