// The soft miniport's NDIS OIDs (digest 3.7): OID_NDK_STATISTICS, OID_NDK_CONNECTIONS,
// OID_NDK_LOCAL_ENDPOINTS (queries) and OID_NDK_SET_STATE (a set).
#pragma once

#include "soft_miniport.hpp"

namespace ndk::soft {

NDIS_STATUS oid_request(Miniport &miniport, NDIS_OID oid, bool set, void *buffer, ULONG length,
                        ULONG *written, ULONG *needed);

} // namespace ndk::soft
