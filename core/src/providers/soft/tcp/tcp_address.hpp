// A real IPv4 or IPv6 socket address for the tcp link (tcp_establish.hpp): what an acceptor
// binds, what a connection connects to, and the 4-tuple a link reports (OID_NDK_CONNECTIONS
// will list it next to the ND connection).  A value type over sockaddr_storage, so that the
// family is never guessed from a string twice.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ndk::soft::tcp {

class TcpAddress {
public:
    TcpAddress() = default;
    // A numeric address ("127.0.0.1", "::1"), no name lookup; nothing when it is not one.
    static std::optional<TcpAddress> parse(std::string_view ip, std::uint16_t port);
    // What the kernel says a socket is bound or connected to.
    static TcpAddress local_of(int fd);
    static TcpAddress peer_of(int fd);

    int family() const { return storage_.ss_family; }
    std::uint16_t port() const;
    // "127.0.0.1:5000", "[::1]:5000".
    std::string text() const;

    const sockaddr *data() const { return reinterpret_cast<const sockaddr *>(&storage_); }
    socklen_t size() const { return size_; }

private:
    static TcpAddress asked(int fd, int (*query)(int, sockaddr *, socklen_t *));

    sockaddr_storage storage_{};
    socklen_t size_ = 0;
};

} // namespace ndk::soft::tcp
