#include "providers/soft/tcp/tcp_address.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cerrno>
#include <string>
#include <system_error>

namespace ndk::soft::tcp {

std::optional<TcpAddress> TcpAddress::parse(std::string_view ip, std::uint16_t port)
{
    const std::string text(ip); // inet_pton wants a terminated string
    TcpAddress address;
    auto *v4 = reinterpret_cast<sockaddr_in *>(&address.storage_);
    if (::inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        address.size_ = sizeof(sockaddr_in);
        return address;
    }
    address.storage_ = {};
    auto *v6 = reinterpret_cast<sockaddr_in6 *>(&address.storage_);
    if (::inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        address.size_ = sizeof(sockaddr_in6);
        return address;
    }
    return std::nullopt;
}

TcpAddress TcpAddress::asked(int fd, int (*query)(int, sockaddr *, socklen_t *))
{
    TcpAddress address;
    address.size_ = sizeof address.storage_;
    if (query(fd, reinterpret_cast<sockaddr *>(&address.storage_), &address.size_) != 0)
        throw std::system_error(errno, std::generic_category(), "getsockname/getpeername");
    return address;
}

TcpAddress TcpAddress::local_of(int fd) { return asked(fd, ::getsockname); }
TcpAddress TcpAddress::peer_of(int fd) { return asked(fd, ::getpeername); }

std::uint16_t TcpAddress::port() const
{
    if (family() == AF_INET)
        return ntohs(reinterpret_cast<const sockaddr_in *>(&storage_)->sin_port);
    if (family() == AF_INET6)
        return ntohs(reinterpret_cast<const sockaddr_in6 *>(&storage_)->sin6_port);
    return 0;
}

std::string TcpAddress::text() const
{
    char buffer[INET6_ADDRSTRLEN] = {};
    if (family() == AF_INET) {
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in *>(&storage_)->sin_addr, buffer,
                    sizeof buffer);
        return std::string(buffer) + ":" + std::to_string(port());
    }
    if (family() == AF_INET6) {
        ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6 *>(&storage_)->sin6_addr,
                    buffer, sizeof buffer);
        return "[" + std::string(buffer) + "]:" + std::to_string(port());
    }
    return "(none)";
}

} // namespace ndk::soft::tcp
