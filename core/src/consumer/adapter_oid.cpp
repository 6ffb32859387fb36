// NDIS OID requests on an adapter's miniport (digest 3.7), through the provider entry's
// OidRequest, and the miniport's NDIS_NDK_CAPABILITIES through QueryNdkCapabilities
// (core/include/ndk/provider.h).
#include "ndk/objects.hpp"

#include <vector>

namespace ndk {

NDIS_STATUS Adapter::query_oid(NDIS_OID oid, void *buffer, ULONG length, ULONG *written,
                               ULONG *needed)
{
    auto in_call = enter();
    ULONG written_here = 0, needed_here = 0;
    if (written == nullptr)
        written = &written_here;
    if (needed == nullptr)
        needed = &needed_here;
    *written = 0;
    *needed = 0;
    if (!has_oids())
        return NDIS_STATUS_INVALID_OID; // what NDIS answers for an OID the miniport lacks
    return provider_->entry().OidRequest(miniport_, oid, FALSE, buffer, length, written, needed);
}

NDIS_STATUS Adapter::set_oid(NDIS_OID oid, const void *buffer, ULONG length)
{
    auto in_call = enter();
    if (!has_oids())
        return NDIS_STATUS_INVALID_OID;
    // OidRequest takes a mutable buffer (NDIS shares one for query and set): give it a copy.
    const auto *bytes = static_cast<const UCHAR *>(buffer);
    std::vector<UCHAR> copy;
    if (bytes != nullptr)
        copy.assign(bytes, bytes + length);
    ULONG written = 0, needed = 0;
    return provider_->entry().OidRequest(miniport_, oid, TRUE,
                                         bytes != nullptr ? copy.data() : nullptr, length,
                                         &written, &needed);
}

NDIS_STATUS Adapter::query_ndk_capabilities(NDIS_NDK_CAPABILITIES &capabilities)
{
    auto in_call = enter();
    capabilities = NDIS_NDK_CAPABILITIES{};
    if (!NdkHarnessReportsCapabilities(&provider_->entry()))
        return NDIS_STATUS_NOT_SUPPORTED;
    NDIS_STATUS status = provider_->entry().QueryNdkCapabilities(miniport_, &capabilities);
    capabilities.NdkInfo = nullptr; // the provider's pointer, not the consumer's to follow
    return status;
}

} // namespace ndk
