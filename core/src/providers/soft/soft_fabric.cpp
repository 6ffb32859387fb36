#include "soft_fabric.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <sstream>

namespace ndk::soft {

bool IpAddress::is_unspecified() const
{
    size_t n = family == AF_INET ? 4 : 16;
    for (size_t i = 0; i < n; ++i)
        if (bytes[i] != 0)
            return false;
    return true;
}

std::string IpAddress::to_string() const
{
    char buf[INET6_ADDRSTRLEN] = {};
    inet_ntop(family, bytes.data(), buf, sizeof buf);
    return buf;
}

std::optional<IpAddress> IpAddress::parse(const std::string &text)
{
    IpAddress ip;
    if (inet_pton(AF_INET, text.c_str(), ip.bytes.data()) == 1) {
        ip.family = AF_INET;
        return ip;
    }
    if (inet_pton(AF_INET6, text.c_str(), ip.bytes.data()) == 1) {
        ip.family = AF_INET6;
        return ip;
    }
    return std::nullopt;
}

NTSTATUS Endpoint::from_sockaddr(const SOCKADDR *address, ULONG length, Endpoint &out)
{
    if (address == nullptr || length < sizeof(sa_family_t))
        return STATUS_INVALID_PARAMETER;
    if (address->sa_family == AF_INET && length >= sizeof(sockaddr_in)) {
        sockaddr_in in{};
        std::memcpy(&in, address, sizeof in);
        out.ip = IpAddress{};
        out.ip.family = AF_INET;
        std::memcpy(out.ip.bytes.data(), &in.sin_addr, 4);
        out.port = ntohs(in.sin_port);
        return STATUS_SUCCESS;
    }
    if (address->sa_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
        sockaddr_in6 in6{};
        std::memcpy(&in6, address, sizeof in6);
        out.ip = IpAddress{};
        out.ip.family = AF_INET6;
        std::memcpy(out.ip.bytes.data(), &in6.sin6_addr, 16);
        out.port = ntohs(in6.sin6_port);
        return STATUS_SUCCESS;
    }
    return STATUS_INVALID_PARAMETER;
}

ULONG Endpoint::sockaddr_length() const
{
    return ip.family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
}

NTSTATUS Endpoint::to_sockaddr(SOCKADDR *address, ULONG *length) const
{
    if (length == nullptr)
        return STATUS_INVALID_PARAMETER;
    ULONG needed = sockaddr_length();
    if (address == nullptr || *length < needed) {
        *length = needed;
        return STATUS_BUFFER_TOO_SMALL;
    }
    if (ip.family == AF_INET) {
        sockaddr_in in{};
        in.sin_family = AF_INET;
        in.sin_port = htons(port);
        std::memcpy(&in.sin_addr, ip.bytes.data(), 4);
        std::memcpy(address, &in, sizeof in);
    } else {
        sockaddr_in6 in6{};
        in6.sin6_family = AF_INET6;
        in6.sin6_port = htons(port);
        std::memcpy(&in6.sin6_addr, ip.bytes.data(), 16);
        std::memcpy(address, &in6, sizeof in6);
    }
    *length = needed;
    return STATUS_SUCCESS;
}

Fabric &Fabric::instance()
{
    // Never destroyed: adapters may still be closed by other static destructors at exit.
    static Fabric *fabric = new Fabric;
    return *fabric;
}

NTSTATUS Fabric::attach(Miniport *miniport, const std::string &addresses,
                        std::vector<IpAddress> &assigned)
{
    std::lock_guard lock(mu_);
    std::vector<IpAddress> wanted;
    std::string normalized = addresses;
    for (char &c : normalized)
        if (c == ',')
            c = ' ';
    std::istringstream in(normalized);
    for (std::string word; in >> word;) {
        auto ip = IpAddress::parse(word);
        if (!ip || ip->is_unspecified())
            return STATUS_INVALID_ADDRESS;
        if (owners_.count(*ip))
            return STATUS_ADDRESS_ALREADY_EXISTS;
        wanted.push_back(*ip);
    }
    if (wanted.empty()) {
        // Benchmark-range IPv4 (198.18.0.0/15) and a ULA IPv6 address, unique per miniport.
        uint32_t n = 0;
        IpAddress v4, v6;
        do {
            n = next_auto_++;
            v4 = IpAddress{};
            v4.bytes[0] = 198;
            v4.bytes[1] = static_cast<uint8_t>(18 + ((n >> 16) & 1));
            v4.bytes[2] = static_cast<uint8_t>(n >> 8);
            v4.bytes[3] = static_cast<uint8_t>(n);
            std::ostringstream six;
            six << "fd00:6e64:6b::" << std::hex << n;
            v6 = *IpAddress::parse(six.str());
        } while (owners_.count(v4) || owners_.count(v6) || (n & 0xFF) == 0);
        wanted = {v4, v6};
    }
    for (const auto &ip : wanted)
        owners_[ip] = miniport;
    assigned = wanted;
    return STATUS_SUCCESS;
}

void Fabric::detach(Miniport *miniport)
{
    std::lock_guard lock(mu_);
    for (auto it = owners_.begin(); it != owners_.end();)
        it = it->second == miniport ? owners_.erase(it) : std::next(it);
}

std::vector<Miniport *> Fabric::miniports() const
{
    std::lock_guard lock(mu_);
    std::vector<Miniport *> all;
    for (const auto &[ip, miniport] : owners_)
        if (std::find(all.begin(), all.end(), miniport) == all.end())
            all.push_back(miniport);
    return all;
}

Miniport *Fabric::owner(const IpAddress &ip) const
{
    std::lock_guard lock(mu_);
    auto it = owners_.find(ip);
    return it == owners_.end() ? nullptr : it->second;
}

NTSTATUS Fabric::reserve(const IpAddress &ip, uint16_t port, std::pair<uint16_t, uint16_t> range,
                         std::shared_ptr<PortReservation> &out)
{
    std::lock_guard lock(mu_);
    Ports &ports = ports_[ip];
    if (port != 0) {
        if (ports.used.count(port))
            return STATUS_SHARING_VIOLATION;
    } else {
        const uint32_t lo = range.first, size = uint32_t{range.second} - lo + 1;
        const uint32_t start = ports.next >= lo && ports.next <= range.second ? ports.next - lo : 0;
        for (uint32_t i = 0; i < size && port == 0; ++i) {
            const auto candidate = static_cast<uint16_t>(lo + (start + i) % size);
            if (!ports.used.count(candidate))
                port = candidate;
        }
        if (port == 0)
            return STATUS_TOO_MANY_ADDRESSES;
        ports.next = uint32_t{port} + 1;
    }
    ports.used[port] = true;
    out = std::make_shared<PortReservation>(ip, port);
    return STATUS_SUCCESS;
}

void Fabric::release(const IpAddress &ip, uint16_t port)
{
    std::lock_guard lock(mu_);
    auto it = ports_.find(ip);
    if (it != ports_.end())
        it->second.used.erase(port);
}

SoftListener *Fabric::listener_at(const Endpoint &local) const
{
    auto it = listeners_.find({local.ip, local.port});
    return it == listeners_.end() ? nullptr : it->second;
}

void Fabric::set_listener(const Endpoint &local, SoftListener *listener)
{
    if (listener == nullptr)
        listeners_.erase({local.ip, local.port});
    else
        listeners_[{local.ip, local.port}] = listener;
}

bool Fabric::add_tuple(const Endpoint &local, const Endpoint &remote)
{
    return tuples_.emplace(std::make_pair(std::make_pair(local.ip, local.port),
                                          std::make_pair(remote.ip, remote.port)),
                           1)
        .second;
}

void Fabric::remove_tuple(const Endpoint &local, const Endpoint &remote)
{
    tuples_.erase(std::make_pair(std::make_pair(local.ip, local.port),
                                 std::make_pair(remote.ip, remote.port)));
}

} // namespace ndk::soft
