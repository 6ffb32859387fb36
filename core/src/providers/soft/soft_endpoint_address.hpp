// Resolving a local address given to CreateSharedEndpoint or Listen against the adapter:
// a malformed address is STATUS_INVALID_PARAMETER, an address the RNIC does not own is
// STATUS_INVALID_ADDRESS (digest 1.1, 1.9).  The unspecified address means the adapter's first
// address of that family.
#pragma once

#include "soft_adapter.hpp"

namespace ndk::soft {

inline NTSTATUS resolve_local(SoftAdapter &adapter, const SOCKADDR *address, ULONG length,
                              Endpoint &out)
{
    NTSTATUS status = Endpoint::from_sockaddr(address, length, out);
    if (status != STATUS_SUCCESS)
        return status;
    if (out.ip.is_unspecified()) {
        for (const auto &ip : adapter.miniport().addresses) {
            if (ip.family == out.ip.family) {
                out.ip = ip;
                return STATUS_SUCCESS;
            }
        }
        return STATUS_INVALID_ADDRESS;
    }
    return adapter.miniport().owns(out.ip) ? STATUS_SUCCESS : STATUS_INVALID_ADDRESS;
}

} // namespace ndk::soft
