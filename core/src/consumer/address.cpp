#include "ndk/address.hpp"

#include <arpa/inet.h>
#include <cstring>
#include <stdexcept>

namespace ndk {

SocketAddress SocketAddress::from(const std::string &host, uint16_t port)
{
    SocketAddress a;
    auto *in = reinterpret_cast<sockaddr_in *>(&a.storage);
    auto *in6 = reinterpret_cast<sockaddr_in6 *>(&a.storage);
    if (inet_pton(AF_INET, host.c_str(), &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        in->sin_port = htons(port);
        a.length = sizeof(sockaddr_in);
    } else if (inet_pton(AF_INET6, host.c_str(), &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        a.length = sizeof(sockaddr_in6);
    } else {
        throw std::invalid_argument("not an IPv4 or IPv6 address: '" + host + "'");
    }
    return a;
}

std::string SocketAddress::host() const
{
    char buf[INET6_ADDRSTRLEN] = {};
    if (storage.ss_family == AF_INET)
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in *>(&storage)->sin_addr, buf,
                  sizeof buf);
    else if (storage.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6 *>(&storage)->sin6_addr, buf,
                  sizeof buf);
    return buf;
}

uint16_t SocketAddress::port() const
{
    if (storage.ss_family == AF_INET)
        return ntohs(reinterpret_cast<const sockaddr_in *>(&storage)->sin_port);
    if (storage.ss_family == AF_INET6)
        return ntohs(reinterpret_cast<const sockaddr_in6 *>(&storage)->sin6_port);
    return 0;
}

} // namespace ndk
