// A socket address as NDK takes it (PSOCKADDR + length), built from a host string and a port.
#pragma once

#include "ndk/ndkpi.h"

#include <cstdint>
#include <string>

namespace ndk {

struct SocketAddress {
    sockaddr_storage storage{};
    ULONG length = 0;

    // "192.0.2.1" or "2001:db8::1"; throws std::invalid_argument for anything else.
    static SocketAddress from(const std::string &host, uint16_t port);
    SOCKADDR *get() { return reinterpret_cast<SOCKADDR *>(&storage); }
    std::string host() const;
    uint16_t port() const;
};

} // namespace ndk
