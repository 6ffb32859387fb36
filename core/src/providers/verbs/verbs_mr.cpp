// Memory region (digest 1.4) over ibv_reg_mr: an MDL chain's virtually contiguous range is
// registered as one region; the local token is its lkey, the remote token its rkey.
// Fast-register MRs exist as objects, but user-space verbs cannot post a fast registration
// (IB_WR_REG_MR is a kernel verb), so no page count can be initialized.
#include "verbs_objects.hpp"
#include "providers/kit/kit_mr_checks.hpp"

#include <cerrno>

namespace ndk::verbs {

VMr::VMr(VerbsAdapter &adapter, VPd &pd, bool fast_register)
    : NdkObject(adapter, kType, &kMrDispatch), pd(pd), fast_register(fast_register)
{
}

void VMr::destroy_resources()
{
    if (mr != nullptr)
        ibv_dereg_mr(mr);
    mr = nullptr;
}

NTSTATUS create_mr(NDK_PD *ndk_pd, BOOLEAN FastRegister, NDK_FN_CREATE_COMPLETION, PVOID,
                   NDK_MR **ppNdkMr)
{
    VPd *pd = VPd::from(ndk_pd);
    if (NTSTATUS status = kit::check_create_out(ppNdkMr); status != STATUS_SUCCESS)
        return status;
    auto *mr = new VMr(pd->adapter(), *pd, FastRegister != FALSE);
    {
        std::lock_guard lock(pd->adapter().mu());
        mr->depend_on(*pd);
    }
    return pd->adapter().created(mr, ppNdkMr);
}

namespace {

int access_of(ULONG flags, bool memory_windows)
{
    int access = 0;
    // An RDMA read sink is written by the device: LOCAL_WRITE is what verbs asks for.
    if (flags & (NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK))
        access |= IBV_ACCESS_LOCAL_WRITE;
    if (flags & NDK_MR_FLAG_ALLOW_REMOTE_READ)
        access |= IBV_ACCESS_REMOTE_READ;
    if ((flags & NDK_MR_FLAG_ALLOW_REMOTE_WRITE) == NDK_MR_FLAG_ALLOW_REMOTE_WRITE)
        access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    if (memory_windows) // NDK lets any MR carry windows; verbs needs it said at registration
        access |= IBV_ACCESS_MW_BIND;
    return access;
}

NTSTATUS register_mr(NDK_MR *ndk_mr, MDL *Mdl, SIZE_T Length, ULONG Flags,
                     NDK_FN_REQUEST_COMPLETION, PVOID)
{
    VMr *mr = VMr::from(ndk_mr);
    VerbsAdapter &adapter = mr->adapter();
    if (mr->fast_register)
        return STATUS_INVALID_PARAMETER; // the MR kind is fixed at creation (MR-KIND)
    uintptr_t start = 0;
    if (NTSTATUS status = kit::check_register_mr(adapter.info(), Mdl, Length, Flags, &start);
        status != STATUS_SUCCESS)
        return status;
    std::lock_guard lock(adapter.mu());
    if (mr->mr != nullptr)
        return STATUS_INVALID_DEVICE_STATE;
    mr->mr = ibv_reg_mr(mr->pd.pd, reinterpret_cast<void *>(start), Length,
                        access_of(Flags, adapter.device().memory_windows));
    if (mr->mr == nullptr)
        return errno == EFAULT ? STATUS_ACCESS_VIOLATION : errno_status(errno);
    mr->flags = Flags;
    return STATUS_SUCCESS;
}

NTSTATUS deregister_mr(NDK_MR *ndk_mr, NDK_FN_REQUEST_COMPLETION, PVOID)
{
    VMr *mr = VMr::from(ndk_mr);
    if (mr->fast_register)
        return STATUS_INVALID_PARAMETER;
    std::lock_guard lock(mr->adapter().mu());
    if (mr->mr == nullptr)
        return STATUS_INVALID_DEVICE_STATE;
    if (ibv_dereg_mr(mr->mr) != 0)
        return STATUS_DEVICE_BUSY; // rxe refuses while memory windows are bound to it
    mr->mr = nullptr;
    return STATUS_SUCCESS;
}

NTSTATUS initialize_fast_register_mr(NDK_MR *ndk_mr, ULONG AdapterPageCount, BOOLEAN,
                                     NDK_FN_REQUEST_COMPLETION, PVOID)
{
    VMr *mr = VMr::from(ndk_mr);
    if (!mr->fast_register || AdapterPageCount == 0)
        return STATUS_INVALID_PARAMETER;
    // FRMRPageCount is 0: no page count is supported from user space (the documented status).
    return STATUS_IMPLEMENTATION_LIMIT;
}

UINT32 get_remote_token(NDK_MR *ndk_mr)
{
    VMr *mr = VMr::from(ndk_mr);
    std::lock_guard lock(mr->adapter().mu());
    if (mr->mr == nullptr)
        return 0;
    // rxe gives a region without remote access the rkey 0, and 0 is never a valid token
    // (docs/semantics.md: TOKENS).  The remote token is then the region's key: a peer can
    // name it, and the device refuses it for remote access, as the flags say.
    return mr->mr->rkey != 0 ? mr->mr->rkey : mr->mr->lkey;
}

UINT32 get_local_token(NDK_MR *ndk_mr)
{
    VMr *mr = VMr::from(ndk_mr);
    std::lock_guard lock(mr->adapter().mu());
    return mr->mr != nullptr ? mr->mr->lkey : 0;
}

NTSTATUS close_mr(NDK_OBJECT_HEADER *header, NDK_FN_CLOSE_COMPLETION completion, PVOID context)
{
    return VMr::from(reinterpret_cast<NDK_MR *>(header))->close(completion, context);
}

} // namespace

const NDK_MR_DISPATCH kMrDispatch = {
    .NdkCloseMr = close_mr,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkRegisterMr = register_mr,
    .NdkDeregisterMr = deregister_mr,
    .NdkInitializeFastRegisterMr = initialize_fast_register_mr,
    .NdkGetRemoteTokenFromMr = get_remote_token,
    .NdkGetLocalTokenFromMr = get_local_token,
};

} // namespace ndk::verbs
