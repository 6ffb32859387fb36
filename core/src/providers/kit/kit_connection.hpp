// The argument rules of connection establishment every provider keeps (digest 1.8): the
// private data a Connect or an Accept carries, and the read limits a connection ends up with.
#pragma once

#include "ndk/ndkpi.h"

#include <algorithm>

namespace ndk::kit {

// The private data of NdkConnect (at most the adapter's MaxCallerData) or NdkAccept
// (MaxCalleeData): a NULL buffer with a length is STATUS_INVALID_PARAMETER, a length above
// `max_length` STATUS_INVALID_BUFFER_SIZE (docs/semantics.md, CONN-PRIVATE-DATA).
inline NTSTATUS check_private_data(const void *data, ULONG length, ULONG max_length)
{
    if (data == nullptr && length > 0)
        return STATUS_INVALID_PARAMETER;
    if (length > max_length)
        return STATUS_INVALID_BUFFER_SIZE;
    return STATUS_SUCCESS;
}

// An effective read limit (digest 1.8, "Read-limit rules"): the limit the consumer asks for,
// capped at the adapter's MaxInboundReadLimit (MaxOutboundReadLimit for an outbound one) and
// at the peer's opposite limit (its outbound for our inbound) once the peer's is known.
inline ULONG read_limit(ULONG requested, ULONG adapter_max, ULONG peer_opposite = MAXULONG)
{
    return std::min({requested, adapter_max, peer_opposite});
}

} // namespace ndk::kit
