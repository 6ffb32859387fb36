// Socket addresses as connectors, listeners and shared endpoints take and give them.
#include "verbs_objects.hpp"

#include <cstring>

namespace ndk::verbs {

bool read_address(const SOCKADDR *address, ULONG length, sockaddr_storage &out)
{
    if (address == nullptr)
        return false;
    if (address->sa_family == AF_INET && length >= sizeof(sockaddr_in)) {
        out = {};
        std::memcpy(&out, address, sizeof(sockaddr_in));
        return true;
    }
    if (address->sa_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
        out = {};
        std::memcpy(&out, address, sizeof(sockaddr_in6));
        return true;
    }
    return false; // malformed: not an address at all (docs/semantics.md, ADDRESS)
}

namespace {

bool unspecified(const sockaddr_storage &a)
{
    if (a.ss_family == AF_INET)
        return reinterpret_cast<const sockaddr_in &>(a).sin_addr.s_addr == htonl(INADDR_ANY);
    return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6 &>(a).sin6_addr);
}

bool same_host(const sockaddr_storage &a, const sockaddr_storage &b)
{
    if (a.ss_family != b.ss_family)
        return false;
    if (a.ss_family == AF_INET)
        return reinterpret_cast<const sockaddr_in &>(a).sin_addr.s_addr ==
               reinterpret_cast<const sockaddr_in &>(b).sin_addr.s_addr;
    return std::memcmp(&reinterpret_cast<const sockaddr_in6 &>(a).sin6_addr,
                       &reinterpret_cast<const sockaddr_in6 &>(b).sin6_addr, 16) == 0;
}

void set_port(sockaddr_storage &a, uint16_t port)
{
    if (a.ss_family == AF_INET)
        reinterpret_cast<sockaddr_in &>(a).sin_port = htons(port);
    else
        reinterpret_cast<sockaddr_in6 &>(a).sin6_port = htons(port);
}

} // namespace

bool own_address(const VerbsAdapter &adapter, sockaddr_storage &address)
{
    uint16_t port = port_of(reinterpret_cast<const sockaddr *>(&address));
    for (const sockaddr_storage &mine : adapter.device().addresses) {
        if (mine.ss_family != address.ss_family)
            continue;
        if (unspecified(address)) {
            // The unspecified address is the adapter's first of that family: rdma_cm would
            // bind it to every device, and an NDK adapter is one RNIC.
            address = mine;
            set_port(address, port);
            return true;
        }
        if (same_host(mine, address))
            return true;
    }
    return false;
}

NTSTATUS write_address(const sockaddr *address, PSOCKADDR out, ULONG *length)
{
    if (length == nullptr)
        return STATUS_INVALID_PARAMETER;
    ULONG needed = length_of(address);
    if (out == nullptr || *length < needed) {
        *length = needed;
        return STATUS_BUFFER_TOO_SMALL;
    }
    std::memcpy(out, address, needed);
    *length = needed;
    return STATUS_SUCCESS;
}

} // namespace ndk::verbs
