// The soft miniport's NDIS_NDK_CAPABILITIES (digest 3.7, ndk/provider.h QueryNdkCapabilities):
// the object counts from its knobs max_*_count (0 there: no cap, MAXULONG here).
#pragma once

#include "soft_miniport.hpp"

namespace ndk::soft {

NDIS_STATUS ndk_capabilities(Miniport &miniport, NDIS_NDK_CAPABILITIES &capabilities);

} // namespace ndk::soft
