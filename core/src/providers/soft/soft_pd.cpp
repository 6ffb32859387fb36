// Protection domain (digest 1.2).
#include "soft_objects.hpp"

namespace ndk::soft {

NTSTATUS create_pd(NDK_ADAPTER *ndk_adapter, NDK_FN_CREATE_COMPLETION, PVOID, NDK_PD **ppNdkPd)
{
    SoftAdapter *adapter = SoftAdapter::from(ndk_adapter);
    if (ppNdkPd == nullptr)
        return STATUS_INVALID_PARAMETER;
    return adapter->create<SoftPd>(ppNdkPd,
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
    .NdkClosePd = close_object<SoftPd>,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkCreateMr = create_mr,
    .NdkCreateMw = create_mw,
    .NdkCreateSrq = create_srq,
    .NdkCreateQp = create_qp,
    .NdkCreateQpWithSrq = create_qp_with_srq,
    .NdkGetPrivilegedMemoryRegionToken = get_privileged_memory_region_token,
};

} // namespace ndk::soft
