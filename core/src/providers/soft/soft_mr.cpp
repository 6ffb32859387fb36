// Memory region (digest 1.4): normal registration from an MDL chain, or fast-register
// initialization; the two kinds are fixed at creation (FastRegister).
#include "soft_memory.hpp"

namespace ndk::soft {

NTSTATUS create_mr(NDK_PD *ndk_pd, BOOLEAN FastRegister, NDK_FN_CREATE_COMPLETION, PVOID,
                   NDK_MR **ppNdkMr)
{
    SoftPd *pd = SoftPd::from(ndk_pd);
    SoftAdapter &adapter = pd->adapter();
    if (ppNdkMr == nullptr)
        return STATUS_INVALID_PARAMETER;
    return adapter.create<SoftMr>(ppNdkMr, [&](NTSTATUS &status) {
        auto mr = std::make_unique<SoftMr>(adapter);
        std::optional<uint32_t> slot = adapter.tokens().open(*mr);
        if (!slot) {
            status = STATUS_INSUFFICIENT_RESOURCES; // every token index in use
            return std::unique_ptr<SoftMr>();
        }
        mr->token_slot = *slot;
        mr->pd = pd;
        mr->fast_register = FastRegister != FALSE;
        mr->depend_on(*pd);
        return mr;
    });
}

namespace {

NTSTATUS register_mr(NDK_MR *ndk_mr, MDL *Mdl, SIZE_T Length, ULONG Flags,
                     NDK_FN_REQUEST_COMPLETION, PVOID)
{
    SoftMr *mr = SoftMr::from(ndk_mr);
    SoftAdapter &adapter = mr->adapter();
    if (mr->fast_register)
        return STATUS_INVALID_PARAMETER; // only MRs created with FastRegister = FALSE
    uintptr_t start = 0;
    if (NTSTATUS status = kit::check_register_mr(adapter.info(), Mdl, Length, Flags, &start);
        status != STATUS_SUCCESS)
        return status;
    {
        std::lock_guard lock(adapter.mu());
        if (mr->registered)
            return STATUS_INVALID_DEVICE_STATE;
    }
    return adapter.request([mr, address = start, Length, Flags] {
        SoftAdapter &a = mr->adapter();
        std::lock_guard lock(a.mu());
        if (mr->registered)
            return STATUS_INVALID_DEVICE_STATE;
        mr->registered = true;
        mr->address = address;
        mr->length = Length;
        mr->flags = Flags;
        mr->local_token = a.tokens().issue(mr->token_slot);
        mr->remote_token = a.tokens().issue(mr->token_slot);
        a.tokens().enable(mr->local_token, false);
        a.tokens().enable(mr->remote_token, true);
        return STATUS_SUCCESS;
    });
}

NTSTATUS deregister_mr(NDK_MR *ndk_mr, NDK_FN_REQUEST_COMPLETION, PVOID)
{
    SoftMr *mr = SoftMr::from(ndk_mr);
    SoftAdapter &adapter = mr->adapter();
    if (mr->fast_register)
        return STATUS_INVALID_PARAMETER;
    {
        std::lock_guard lock(adapter.mu());
        if (!mr->registered)
            return STATUS_INVALID_DEVICE_STATE;
        // Windows still bound (ND2 MR::Deregister, digest 4.2), or requests posted that read
        // or write it (MR-IN-USE).
        if (mr->bound_windows > 0 || mr->in_use_by_requests())
            return STATUS_DEVICE_BUSY;
    }
    return adapter.request([mr] {
        std::lock_guard lock(mr->adapter().mu());
        if (!mr->registered)
            return STATUS_INVALID_DEVICE_STATE;
        if (mr->bound_windows > 0 || mr->in_use_by_requests())
            return STATUS_DEVICE_BUSY;
        mr->adapter().tokens().revoke(mr->local_token);
        mr->adapter().tokens().revoke(mr->remote_token);
        mr->registered = false;
        mr->address = 0;
        mr->length = 0;
        mr->local_token = mr->remote_token = 0;
        return STATUS_SUCCESS;
    });
}

NTSTATUS initialize_fast_register_mr(NDK_MR *ndk_mr, ULONG AdapterPageCount, BOOLEAN RemoteAccess,
                                     NDK_FN_REQUEST_COMPLETION, PVOID)
{
    SoftMr *mr = SoftMr::from(ndk_mr);
    SoftAdapter &adapter = mr->adapter();
    if (!mr->fast_register || AdapterPageCount == 0)
        return STATUS_INVALID_PARAMETER; // MR must be created with FastRegister = TRUE
    // A fast-register MR maps at most what one registration may cover.
    if (AdapterPageCount > adapter.info().MaxRegistrationSize / NDK_PAGE_SIZE)
        return STATUS_IMPLEMENTATION_LIMIT;
    {
        std::lock_guard lock(adapter.mu());
        if (mr->initialized)
            return STATUS_INVALID_DEVICE_STATE;
    }
    return adapter.request([mr, AdapterPageCount, RemoteAccess] {
        SoftAdapter &a = mr->adapter();
        std::lock_guard lock(a.mu());
        if (mr->initialized)
            return STATUS_INVALID_DEVICE_STATE;
        mr->initialized = true;
        mr->page_count = AdapterPageCount;
        mr->remote_access = RemoteAccess != FALSE;
        mr->local_token = a.tokens().issue(mr->token_slot);
        mr->remote_token = a.tokens().issue(mr->token_slot);
        a.tokens().enable(mr->local_token, false);
        a.tokens().enable(mr->remote_token, true);
        return STATUS_SUCCESS;
    });
}

UINT32 get_remote_token_from_mr(NDK_MR *ndk_mr)
{
    SoftMr *mr = SoftMr::from(ndk_mr);
    std::lock_guard lock(mr->adapter().mu());
    return mr->remote_token;
}

UINT32 get_local_token_from_mr(NDK_MR *ndk_mr)
{
    SoftMr *mr = SoftMr::from(ndk_mr);
    std::lock_guard lock(mr->adapter().mu());
    return mr->local_token;
}

} // namespace

void SoftMr::on_close()
{
    if (local_token != 0) {
        adapter().tokens().revoke(remote_token);
        // Requests posted before the close still read or write through the local token until
        // they complete, as if the MR were open (MR-IN-USE); it goes with the MR then.
        if (!in_use_by_requests())
            adapter().tokens().revoke(local_token);
    }
    // `mapped` stays as it is: a FastRegister or Invalidate queued before the close holds the
    // MR (its close pends, digest 3.1) and must meet the MR it was posted against.  Clearing it
    // here made a queued FastRegister of a mapped MR succeed (the walker, seed 2 under ASan,
    // tests/walk/findings/close-mr-under-queued-fast-register-of-mapped.jsonl).
}

void SoftMr::on_destroy() { adapter().tokens().close(token_slot); }

const NDK_MR_DISPATCH kMrDispatch = {
    .NdkCloseMr = close_object<SoftMr>,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkRegisterMr = register_mr,
    .NdkDeregisterMr = deregister_mr,
    .NdkInitializeFastRegisterMr = initialize_fast_register_mr,
    .NdkGetRemoteTokenFromMr = get_remote_token_from_mr,
    .NdkGetLocalTokenFromMr = get_local_token_from_mr,
};

} // namespace ndk::soft
