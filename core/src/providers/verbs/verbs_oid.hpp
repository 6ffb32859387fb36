// OID_NDK_* requests on a verbs miniport (digest 3.7).
#pragma once

#include "verbs_adapter.hpp"

namespace ndk::verbs {

NDIS_STATUS oid_request(Miniport &miniport, NDIS_OID oid, bool set, void *buffer, ULONG length,
                        ULONG *written, ULONG *needed);

} // namespace ndk::verbs
