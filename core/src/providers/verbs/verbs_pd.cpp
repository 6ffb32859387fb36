// Protection domain (digest 1.2) over an ibv_pd.
#include "verbs_objects.hpp"

#include <cerrno>

namespace ndk::verbs {

VPd::VPd(VerbsAdapter &adapter) : NdkObject(adapter, kType, &kPdDispatch) {}

void VPd::destroy_resources()
{
    if (pd != nullptr)
        ibv_dealloc_pd(pd);
    pd = nullptr;
}

NTSTATUS create_pd(NDK_ADAPTER *ndk_adapter, NDK_FN_CREATE_COMPLETION, PVOID, NDK_PD **ppNdkPd)
{
    VerbsAdapter *adapter = VerbsAdapter::from(ndk_adapter);
    if (NTSTATUS status = kit::check_create_out(ppNdkPd); status != STATUS_SUCCESS)
        return status;
    auto *pd = new VPd(*adapter);
    pd->pd = ibv_alloc_pd(adapter->context());
    if (pd->pd == nullptr) {
        NTSTATUS status = errno_status(errno);
        delete pd;
        return status;
    }
    return adapter->created(pd, ppNdkPd);
}

namespace {

// The privileged token covers BuildLAM's logical addresses, which user-space verbs cannot
// produce (verbs_adapter.cpp, build_lam); there is no such token, so the PD reports 0, which
// is never a valid token (docs/semantics.md, TOKENS).
VOID get_privileged_token(NDK_PD *, UINT32 *pToken)
{
    if (pToken != nullptr)
        *pToken = 0;
}

NTSTATUS close_pd(NDK_OBJECT_HEADER *header, NDK_FN_CLOSE_COMPLETION completion, PVOID context)
{
    return VPd::from(reinterpret_cast<NDK_PD *>(header))->close(completion, context);
}

} // namespace

const NDK_PD_DISPATCH kPdDispatch = {
    .NdkClosePd = close_pd,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkCreateMr = create_mr,
    .NdkCreateMw = create_mw,
    .NdkCreateSrq = create_srq,
    .NdkCreateQp = create_qp,
    .NdkCreateQpWithSrq = create_qp_with_srq,
    .NdkGetPrivilegedMemoryRegionToken = get_privileged_token,
};

} // namespace ndk::verbs
