// Protection domain (digest 1.2) and memory region (digest 1.4).  A region is an MDL chain's
// virtually contiguous range with a local and a remote token from the fabric.  Memory
// windows, SRQs, fast-register regions and the privileged token are not implemented by this
// example, and NDK_ADAPTER_INFO says so (MaxWindowSize, MaxSrqDepth and FRMRPageCount are 0).
// Their creates return STATUS_NOT_SUPPORTED, except an SRQ's: digest 1.2 states
// INVALID_PARAMETER for SrqDepth > MaxSrqDepth, which every depth is when the maximum is 0.
#include "loop_objects.hpp"
#include "providers/kit/kit_mr_checks.hpp"

namespace ndk::loop {

LPd::LPd(LoopAdapter &a) : NdkObject(a, NdkObjectTypePd, &kPdDispatch) {}

LMr::LMr(LoopAdapter &a, LPd &pd) : NdkObject(a, NdkObjectTypeMr, &kMrDispatch), pd(pd) {}

void LMr::deregister()
{
    if (!registered)
        return;
    Fabric::instance().remove_token(local_token);
    Fabric::instance().remove_token(remote_token);
    registered = false;
    local_token = remote_token = 0;
}

NTSTATUS create_pd(NDK_ADAPTER *ndk_adapter, NDK_FN_CREATE_COMPLETION, PVOID, NDK_PD **ppNdkPd)
{
    return kit::create_inline<LPd>(*LoopAdapter::from(ndk_adapter), ppNdkPd);
}

namespace {

LMr *from(NDK_MR *mr) { return static_cast<LMr *>(mr); }

NTSTATUS create_mr(NDK_PD *ndk_pd, BOOLEAN FastRegister, NDK_FN_CREATE_COMPLETION, PVOID,
                   NDK_MR **ppNdkMr)
{
    if (NTSTATUS s = kit::check_create_out(ppNdkMr); s != STATUS_SUCCESS)
        return s;
    if (FastRegister)
        return STATUS_NOT_SUPPORTED; // FRMRPageCount 0: no fast registration here
    LPd *pd = static_cast<LPd *>(ndk_pd);
    auto *mr = new LMr(pd->adapter(), *pd);
    {
        std::lock_guard lock(fabric_mu());
        mr->depend_on(*pd); // the PD's close waits for its MRs (docs/semantics.md, PARENT)
    }
    return pd->adapter().created(mr, ppNdkMr);
}

NTSTATUS create_mw(NDK_PD *, NDK_FN_CREATE_COMPLETION, PVOID, NDK_MW **)
{
    return STATUS_NOT_SUPPORTED; // MaxWindowSize 0
}

NTSTATUS create_srq(NDK_PD *pd, ULONG SrqDepth, ULONG MaxReceiveRequestSge,
                    ULONG NotifyThreshold, NDK_FN_SRQ_NOTIFICATION_CALLBACK SrqNotification,
                    PVOID, GROUP_AFFINITY *Affinity, NDK_FN_CREATE_COMPLETION, PVOID,
                    NDK_SRQ **ppNdkSrq)
{
    if (NTSTATUS s = kit::check_create_srq(static_cast<LPd *>(pd)->adapter().info(), SrqDepth,
                                           MaxReceiveRequestSge, NotifyThreshold,
                                           SrqNotification, Affinity, ppNdkSrq);
        s != STATUS_SUCCESS)
        return s; // INVALID_PARAMETER: MaxSrqDepth is 0
    return STATUS_NOT_SUPPORTED; // unreachable while MaxSrqDepth is 0
}

NTSTATUS create_qp_with_srq(NDK_PD *, NDK_CQ *, NDK_CQ *, NDK_SRQ *, PVOID, ULONG, ULONG, ULONG,
                            NDK_FN_CREATE_COMPLETION, PVOID, NDK_QP **)
{
    return STATUS_NOT_SUPPORTED; // no SRQ can exist
}

VOID get_privileged_token(NDK_PD *, UINT32 *pToken)
{
    if (pToken != nullptr)
        *pToken = 0; // no logical addresses (NdkBuildLAM): 0, never a valid token
}

NTSTATUS register_mr(NDK_MR *ndk_mr, MDL *Mdl, SIZE_T Length, ULONG Flags,
                     NDK_FN_REQUEST_COMPLETION, PVOID)
{
    LMr *mr = from(ndk_mr);
    uintptr_t start = 0;
    if (NTSTATUS s = kit::check_register_mr(mr->adapter().info(), Mdl, Length, Flags, &start);
        s != STATUS_SUCCESS)
        return s;
    std::lock_guard lock(fabric_mu());
    if (mr->registered)
        return STATUS_INVALID_DEVICE_STATE; // MR-STATE
    mr->base = start;
    mr->length = Length;
    mr->flags = Flags;
    mr->local_token = Fabric::instance().add_token(mr, false);
    mr->remote_token = Fabric::instance().add_token(mr, true);
    mr->registered = true;
    return STATUS_SUCCESS;
}

NTSTATUS deregister_mr(NDK_MR *ndk_mr, NDK_FN_REQUEST_COMPLETION, PVOID)
{
    LMr *mr = from(ndk_mr);
    std::lock_guard lock(fabric_mu());
    if (!mr->registered)
        return STATUS_INVALID_DEVICE_STATE; // MR-STATE
    mr->deregister();
    return STATUS_SUCCESS;
}

NTSTATUS initialize_fast_register_mr(NDK_MR *, ULONG, BOOLEAN, NDK_FN_REQUEST_COMPLETION, PVOID)
{
    return STATUS_INVALID_PARAMETER; // only on a fast-register MR, which cannot exist (MR-KIND)
}

UINT32 get_remote_token(NDK_MR *mr)
{
    std::lock_guard lock(fabric_mu());
    return from(mr)->remote_token; // 0 while not registered (TOKENS)
}

UINT32 get_local_token(NDK_MR *mr)
{
    std::lock_guard lock(fabric_mu());
    return from(mr)->local_token;
}

} // namespace

const NDK_PD_DISPATCH kPdDispatch = {
    .NdkClosePd = close_object<LPd>,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkCreateMr = create_mr,
    .NdkCreateMw = create_mw,
    .NdkCreateSrq = create_srq,
    .NdkCreateQp = create_qp,
    .NdkCreateQpWithSrq = create_qp_with_srq,
    .NdkGetPrivilegedMemoryRegionToken = get_privileged_token,
};

const NDK_MR_DISPATCH kMrDispatch = {
    .NdkCloseMr = close_object<LMr>,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkRegisterMr = register_mr,
    .NdkDeregisterMr = deregister_mr,
    .NdkInitializeFastRegisterMr = initialize_fast_register_mr,
    .NdkGetRemoteTokenFromMr = get_remote_token,
    .NdkGetLocalTokenFromMr = get_local_token,
};

} // namespace ndk::loop
