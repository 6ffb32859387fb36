#include "loop_fabric.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cstring>
#include <netinet/in.h>
#include <sstream>

namespace ndk::loop {

std::optional<Endpoint> Endpoint::parse(const std::string &text)
{
    Endpoint e;
    if (inet_pton(AF_INET, text.c_str(), e.ip.data()) == 1)
        e.family = AF_INET;
    else if (inet_pton(AF_INET6, text.c_str(), e.ip.data()) == 1)
        e.family = AF_INET6;
    else
        return std::nullopt;
    return e;
}

NTSTATUS Endpoint::from_sockaddr(const SOCKADDR *address, ULONG length, Endpoint &out)
{
    if (address == nullptr)
        return STATUS_INVALID_PARAMETER;
    out = Endpoint{};
    if (address->sa_family == AF_INET && length >= sizeof(sockaddr_in)) {
        const auto *in = reinterpret_cast<const sockaddr_in *>(address);
        out.family = AF_INET;
        std::memcpy(out.ip.data(), &in->sin_addr, 4);
        out.port = ntohs(in->sin_port);
        return STATUS_SUCCESS;
    }
    if (address->sa_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
        const auto *in6 = reinterpret_cast<const sockaddr_in6 *>(address);
        out.family = AF_INET6;
        std::memcpy(out.ip.data(), &in6->sin6_addr, 16);
        out.port = ntohs(in6->sin6_port);
        return STATUS_SUCCESS;
    }
    return STATUS_INVALID_PARAMETER;
}

SOCKADDR_INET Endpoint::to_inet() const
{
    SOCKADDR_INET out{};
    if (family == AF_INET) {
        out.Ipv4.sin_family = AF_INET;
        out.Ipv4.sin_port = htons(port);
        std::memcpy(&out.Ipv4.sin_addr, ip.data(), 4);
    } else {
        out.Ipv6.sin6_family = AF_INET6;
        out.Ipv6.sin6_port = htons(port);
        std::memcpy(&out.Ipv6.sin6_addr, ip.data(), 16);
    }
    return out;
}

NTSTATUS Endpoint::to_sockaddr(PSOCKADDR address, ULONG *length) const
{
    if (length == nullptr)
        return STATUS_INVALID_PARAMETER;
    ULONG needed = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (address == nullptr || *length < needed) {
        *length = needed;
        return STATUS_BUFFER_TOO_SMALL;
    }
    SOCKADDR_INET inet = to_inet();
    std::memcpy(address, &inet, needed);
    *length = needed;
    return STATUS_SUCCESS;
}

std::string Endpoint::text() const
{
    char buffer[INET6_ADDRSTRLEN] = {};
    inet_ntop(family, ip.data(), buffer, sizeof buffer);
    return buffer;
}

bool Endpoint::unspecified() const
{
    size_t n = family == AF_INET ? 4 : 16;
    return std::all_of(ip.begin(), ip.begin() + static_cast<long>(n), [](uint8_t b) { return b == 0; });
}

Fabric &Fabric::instance()
{
    static Fabric *fabric = new Fabric; // never destroyed: adapters may close at exit
    return *fabric;
}

NTSTATUS Fabric::attach(Miniport &miniport, const std::string &addresses)
{
    std::vector<Endpoint> wanted;
    std::istringstream words(addresses);
    for (std::string word; std::getline(words, word, ',');) {
        if (word.empty())
            continue;
        auto ip = Endpoint::parse(word);
        if (!ip || ip->unspecified())
            return STATUS_INVALID_ADDRESS;
        wanted.push_back(*ip);
    }
    std::lock_guard lock(mu);
    if (wanted.empty()) { // 198.18.x.y (RFC 2544) and fd00:6c6f:6f70::n ("loop"), unused ones
        for (;;) {
            uint32_t n = next_miniport_++;
            auto v4 = Endpoint::parse("198.18." + std::to_string((n >> 8) & 0xFF) + "." +
                                      std::to_string(n & 0xFF));
            std::ostringstream v6;
            v6 << "fd00:6c6f:6f70::" << std::hex << n;
            auto six = Endpoint::parse(v6.str());
            if ((n & 0xFF) != 0 && !owners_.count(*v4) && !owners_.count(*six)) {
                wanted = {*v4, *six};
                break;
            }
        }
    }
    for (const Endpoint &ip : wanted)
        if (owners_.count(ip))
            return STATUS_ADDRESS_ALREADY_EXISTS; // one RNIC per address (ADDRESS-UNIQUE)
    for (const Endpoint &ip : wanted)
        owners_[ip] = &miniport;
    miniport.addresses = wanted;
    return STATUS_SUCCESS;
}

void Fabric::detach(Miniport &miniport)
{
    std::lock_guard lock(mu);
    for (const Endpoint &ip : miniport.addresses)
        owners_.erase(ip);
}

Miniport *Fabric::owner(const Endpoint &address) const
{
    auto it = owners_.find(address.host());
    return it == owners_.end() ? nullptr : it->second;
}

NTSTATUS Fabric::reserve(Endpoint &at)
{
    if (at.port != 0) {
        if (ports_.count(at))
            return STATUS_SHARING_VIOLATION; // the address:port is held (digest 3.5)
        ports_[at] = 1;
        return STATUS_SUCCESS;
    }
    for (uint32_t port = 49152; port <= 65535; ++port) { // the ephemeral range (digest 1.1)
        Endpoint candidate = at;
        candidate.port = static_cast<uint16_t>(port);
        if (!ports_.count(candidate)) {
            at = candidate;
            ports_[at] = 1;
            return STATUS_SUCCESS;
        }
    }
    return STATUS_TOO_MANY_ADDRESSES;
}

void Fabric::release(const Endpoint &at)
{
    auto it = ports_.find(at);
    if (it != ports_.end() && --it->second == 0)
        ports_.erase(it);
}

UINT32 Fabric::add_token(LMr *mr, bool remote)
{
    UINT32 value;
    do
        value = next_token_++;
    while (value == 0 || tokens_.count(value));
    tokens_[value] = Token{mr, remote};
    return value;
}

const Fabric::Token *Fabric::token(UINT32 value) const
{
    auto it = tokens_.find(value);
    return it == tokens_.end() ? nullptr : &it->second;
}

} // namespace ndk::loop
