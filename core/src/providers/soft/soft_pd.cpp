// Protection domain (digest 1.2).
#include "soft_dispatch_entry.hpp"
#include "soft_objects.hpp"

namespace ndk::soft {

NTSTATUS create_pd(NDK_ADAPTER *ndk_adapter, NDK_FN_CREATE_COMPLETION CreateCompletion,
                   PVOID RequestContext, NDK_PD **ppNdkPd)
{
    SoftAdapter *adapter = SoftAdapter::from(ndk_adapter);
    if (adapter->misbehave() == Misbehave::UndocumentedStatus)
        return STATUS_INVALID_PARAMETER_MIX; // broken on purpose: not a status of this function
    if (ppNdkPd == nullptr)
        return STATUS_INVALID_PARAMETER;
    return adapter->create<SoftPd>("NdkCreatePd", CreateCompletion, RequestContext, ppNdkPd,
                                   [&](NTSTATUS &) { return std::make_unique<SoftPd>(*adapter); });
}

namespace {

VOID get_privileged_memory_region_token(NDK_PD *ndk_pd, UINT32 *pToken)
{
    // Local read and write only, never remote: it names BuildLAM logical addresses (digest 1.2).
    if (pToken != nullptr)
        *pToken = SoftPd::from(ndk_pd)->adapter().privileged_token();
}

} // namespace

const NDK_PD_DISPATCH kPdDispatch = {
    .NdkClosePd = entry<SoftPd, "NdkClosePd", close_object<SoftPd>>,
    .NdkQueryExtension = entry<SoftPd, "NdkQueryExtension", query_extension_not_supported>,
    .NdkCreateMr = entry<SoftPd, "NdkCreateMr", create_mr>,
    .NdkCreateMw = entry<SoftPd, "NdkCreateMw", create_mw>,
    .NdkCreateSrq = entry<SoftPd, "NdkCreateSrq", create_srq>,
    .NdkCreateQp = entry<SoftPd, "NdkCreateQp", create_qp>,
    .NdkCreateQpWithSrq = entry<SoftPd, "NdkCreateQpWithSrq", create_qp_with_srq>,
    .NdkGetPrivilegedMemoryRegionToken = entry<SoftPd, "NdkGetPrivilegedMemoryRegionToken", get_privileged_memory_region_token>,
};

} // namespace ndk::soft
