// A harness provider's entry (ndk/provider.h) built the same way for every provider: the
// NDIS_NDK_PROVIDER_CHARACTERISTICS header of digest 3.7 and the OidRequest entry that turns
// the miniport context back into the provider's miniport.
#pragma once

#include "ndk/provider.h"

#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

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

template <class Miniport>
using CapabilitiesFn = NDIS_STATUS (*)(Miniport &, NDIS_NDK_CAPABILITIES &);

// NDK_HARNESS_PROVIDER::QueryNdkCapabilities for a provider whose miniport context is a
// `Miniport`: the header and NdkInfo are filled here, the counts by `Query`.
template <class Miniport, CapabilitiesFn<Miniport> Query>
NDIS_STATUS capabilities_entry(NDIS_HANDLE context, NDIS_NDK_CAPABILITIES *capabilities)
{
    if (context == nullptr || capabilities == nullptr)
        return STATUS_INVALID_PARAMETER;
    *capabilities = NDIS_NDK_CAPABILITIES{};
    capabilities->Header = {NDIS_OBJECT_TYPE_DEFAULT, NDIS_NDK_CAPABILITIES_REVISION_1,
                            sizeof(NDIS_NDK_CAPABILITIES)};
    NDIS_STATUS status = Query(*static_cast<Miniport *>(context), *capabilities);
    capabilities->NdkInfo = nullptr;
    return status;
}

// A count of NDIS_NDK_CAPABILITIES from a provider's own cap, where 0 means "no cap": MAXULONG
// (nothing the provider counts) in place of 0, which would say "none at all".
constexpr ULONG capability_count(ULONG cap) { return cap == 0 ? MAXULONG : cap; }

// OPEN_NDK_ADAPTER_HANDLER's version negotiation (digest 1.1): a major the provider does not
// implement (`highest` empty: the provider's highest minor of the requested major) fails with
// NDIS_STATUS_BAD_VERSION, so does a requested minor above the provider's highest; otherwise
// the adapter uses, and reports in NDK_ADAPTER_INFO and every object header, its highest minor.
inline NDIS_STATUS negotiate_version(NDK_VERSION requested, std::optional<USHORT> highest,
                                     NDK_VERSION &granted)
{
    if (!highest || requested.Minor > *highest)
        return NDIS_STATUS_BAD_VERSION;
    granted = NDK_VERSION{requested.Major, *highest};
    return NDIS_STATUS_SUCCESS;
}

// The versions the providers of this tree implement, NDKPI 1.2 and 2.1 (digest 2.7;
// docs/semantics.md, VERSIONS): the highest minor of `major`, or none.
inline std::optional<USHORT> implemented_minor(USHORT major)
{
    if (major == 1)
        return USHORT{2};
    if (major == 2)
        return USHORT{1};
    return std::nullopt;
}

// What a provider's open does once the entry has checked its arguments: the miniport, the
// version the consumer asks for (NDIS_OPEN_NDK_ADAPTER_PARAMETERS.Version), the out-pointer.
template <class Miniport>
using OpenFn = NDIS_STATUS (*)(Miniport &, NDK_VERSION requested, NDK_ADAPTER **);

// OPEN_NDK_ADAPTER_HANDLER for a provider whose miniport context is a `Miniport`: a NULL
// context, parameter block or out-pointer is STATUS_INVALID_PARAMETER before the provider is
// asked (digest 1.1).
template <class Miniport, OpenFn<Miniport> Open>
NDIS_STATUS open_adapter_entry(NDIS_HANDLE context, PNDIS_OPEN_NDK_ADAPTER_PARAMETERS parameters,
                               NDK_ADAPTER **ppNdkAdapter)
{
    if (context == nullptr || parameters == nullptr || ppNdkAdapter == nullptr)
        return STATUS_INVALID_PARAMETER;
    return Open(*static_cast<Miniport *>(context), parameters->Version, ppNdkAdapter);
}

template <class Miniport>
using ControlFn = NTSTATUS (*)(Miniport &, const char *key, const char *value, char *reply,
                               ULONG reply_length);

// NDK_HARNESS_PROVIDER::ControlMiniport (ndk/provider.h) for a provider whose miniport context
// is a `Miniport`: a NULL context or key is STATUS_INVALID_PARAMETER.
template <class Miniport, ControlFn<Miniport> Control>
NTSTATUS control_entry(NDIS_HANDLE context, const char *key, const char *value, char *reply,
                       ULONG reply_length)
{
    if (context == nullptr || key == nullptr)
        return STATUS_INVALID_PARAMETER;
    return Control(*static_cast<Miniport *>(context), key, value, reply, reply_length);
}

// CreateMiniport's options (ndk/provider.h): "key=value" lines (NULL: none), in order; an empty
// line is skipped and a line without '=' is a key with an empty value.
inline std::vector<std::pair<std::string, std::string>> parse_options(const char *options)
{
    std::vector<std::pair<std::string, std::string>> parsed;
    std::istringstream lines(options != nullptr ? options : "");
    for (std::string line; std::getline(lines, line);) {
        if (line.empty())
            continue;
        auto eq = line.find('=');
        parsed.emplace_back(line.substr(0, eq),
                            eq == std::string::npos ? "" : line.substr(eq + 1));
    }
    return parsed;
}

// A provider's entry: what it supplies, and what every entry shares (the sizes, the version,
// the characteristics header).  Each function has its own type, so a swap does not compile.
// `Capabilities` (nullptr: the provider does not report them) answers QueryNdkCapabilities.
template <class Miniport, OidRequestFn<Miniport> Request, CapabilitiesFn<Miniport> Capabilities>
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
        .QueryNdkCapabilities = capabilities_entry<Miniport, Capabilities>,
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

// A layer's QueryNdkCapabilities: the wrapped provider answers, or NDIS_STATUS_NOT_SUPPORTED
// when it does not report them (its entry is older, or has none).
inline NDIS_STATUS forward_ndk_capabilities(const NDK_HARNESS_PROVIDER &inner,
                                            NDIS_HANDLE inner_handle,
                                            NDIS_NDK_CAPABILITIES &capabilities)
{
    if (!NdkHarnessReportsCapabilities(&inner))
        return NDIS_STATUS_NOT_SUPPORTED;
    return inner.QueryNdkCapabilities(inner_handle, &capabilities);
}

} // namespace ndk::kit
