#include "soft_capabilities.hpp"

#include "providers/kit/kit_provider_entry.hpp"

namespace ndk::soft {

NDIS_STATUS ndk_capabilities(Miniport &miniport, NDIS_NDK_CAPABILITIES &capabilities)
{
    const ObjectCaps caps = miniport.knobs.caps();
    const NDK_ADAPTER_INFO info = miniport.knobs.adapter_info(NDK_VERSION{2, 1});
    capabilities.MaxQpCount = kit::capability_count(caps.max_qp);
    capabilities.MaxCqCount = kit::capability_count(caps.max_cq);
    capabilities.MaxMrCount = kit::capability_count(caps.max_mr);
    capabilities.MaxPdCount = kit::capability_count(caps.max_pd);
    capabilities.MaxMwCount = kit::capability_count(caps.max_mw);
    // MaxSrqCount 0 says "no SRQ", as MaxSrqDepth 0 does in NDK_ADAPTER_INFO (digest 2.1).
    capabilities.MaxSrqCount = info.MaxSrqDepth == 0 ? 0 : kit::capability_count(caps.max_srq);
    // The read limits are per QP (NDK_ADAPTER_INFO); soft keeps none adapter-wide.
    capabilities.MaxInboundReadLimit = 0;
    capabilities.MaxOutboundReadLimit = 0;
    capabilities.MissingCounterMask = 0; // it keeps every counter of OID_NDK_STATISTICS
    return NDIS_STATUS_SUCCESS;
}

} // namespace ndk::soft
