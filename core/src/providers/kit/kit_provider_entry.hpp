// A harness provider's entry (ndk/provider.h) built the same way for every provider: the
// NDIS_NDK_PROVIDER_CHARACTERISTICS header of digest 3.7 and the OidRequest entry that turns
// the miniport context back into the provider's miniport.
#pragma once

#include "ndk/provider.h"

namespace ndk::kit {

template <class Miniport>
using OidRequestFn = NDIS_STATUS (*)(Miniport &, NDIS_OID, bool set, void *buffer, ULONG length,
                                     ULONG *written, ULONG *needed);

// NDK_HARNESS_PROVIDER::OidRequest for a provider whose miniport context is a `Miniport`.
template <class Miniport, OidRequestFn<Miniport> Request>
NDIS_STATUS oid_request_entry(NDIS_HANDLE context, NDIS_OID Oid, BOOLEAN Set, PVOID Buffer,
                              ULONG BufferLength, ULONG *BytesWritten, ULONG *BytesNeeded)
{
    if (context == nullptr)
        return STATUS_INVALID_PARAMETER;
    return Request(*static_cast<Miniport *>(context), Oid, Set != FALSE, Buffer, BufferLength,
                   BytesWritten, BytesNeeded);
}

// A provider's entry: what it supplies, and what every entry shares (the sizes, the version,
// the characteristics header).  Each function has its own type, so a swap does not compile.
template <class Miniport, OidRequestFn<Miniport> Request>
constexpr NDK_HARNESS_PROVIDER make_provider(
    const char *name, OPEN_NDK_ADAPTER_HANDLER open_adapter,
    CLOSE_NDK_ADAPTER_HANDLER close_adapter,
    decltype(NDK_HARNESS_PROVIDER::CreateMiniport) create_miniport,
    decltype(NDK_HARNESS_PROVIDER::DestroyMiniport) destroy_miniport,
    decltype(NDK_HARNESS_PROVIDER::ControlMiniport) control_miniport)
{
    return NDK_HARNESS_PROVIDER{
        .Size = sizeof(NDK_HARNESS_PROVIDER),
        .Version = NDK_HARNESS_PROVIDER_VERSION,
        .Name = name,
        .Characteristics =
            {
                .Header = {NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS,
                           NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1,
                           sizeof(NDIS_NDK_PROVIDER_CHARACTERISTICS)},
                .Flags = 0,
                .OpenNDKAdapterHandler = open_adapter,
                .CloseNDKAdapterHandler = close_adapter,
            },
        .CreateMiniport = create_miniport,
        .DestroyMiniport = destroy_miniport,
        .ControlMiniport = control_miniport,
        .OidRequest = oid_request_entry<Miniport, Request>,
    };
}

// A layer's OidRequest: the wrapped provider answers (digest 3.7), or NDIS_STATUS_INVALID_OID
// when it has no OIDs.
inline NDIS_STATUS forward_oid_request(const NDK_HARNESS_PROVIDER &inner, NDIS_HANDLE inner_handle,
                                       NDIS_OID oid, bool set, void *buffer, ULONG length,
                                       ULONG *written, ULONG *needed)
{
    if (inner.OidRequest == nullptr)
        return NDIS_STATUS_INVALID_OID;
    return inner.OidRequest(inner_handle, oid, set ? TRUE : FALSE, buffer, length, written, needed);
}

} // namespace ndk::kit
