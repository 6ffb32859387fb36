// The validated MR and MW.  Their tokens are learned here, when the consumer reads them: a
// local token belongs to the MR's PD (SGE-TOKEN), a remote token is one a ReceiveAndInvalidate
// result may carry (RESULT-INVALIDATE-TOKEN).
#include "layers/validate/validate_layer.hpp"

namespace ndk::validate {

MrShadow::MrShadow(LayerAdapter &adapter, Shadow &pd)
    : Shadow(adapter, NdkObjectTypeMr, layer_dispatch(NdkObjectTypeMr)), pd(pd)
{
}

void MrShadow::closing()
{
    if (token_known.exchange(false))
        adapter().forget_local_token(local_token.load(), &pd);
}

namespace {

MrShadow &mr_of(NDK_MR *face) { return Shadow::as<MrShadow>(face); }
NDK_MR *real_mr(MrShadow &mr) { return reinterpret_cast<NDK_MR *>(mr.real()); }

NTSTATUS register_mr(NDK_MR *face, MDL *mdl, SIZE_T length, ULONG flags,
                     NDK_FN_REQUEST_COMPLETION completion, PVOID context)
{
    MrShadow &mr = mr_of(face);
    if (!mr.usable("NdkRegisterMr"))
        return STATUS_INVALID_DEVICE_STATE;
    return run_request(mr.adapter(), &mr, "NdkRegisterMr", completion, context,
                       [&](NDK_FN_REQUEST_COMPLETION done, PVOID ctx) {
                           return real_mr(mr)->Dispatch->NdkRegisterMr(real_mr(mr), mdl, length,
                                                                       flags, done, ctx);
                       });
}

NTSTATUS deregister_mr(NDK_MR *face, NDK_FN_REQUEST_COMPLETION completion, PVOID context)
{
    MrShadow &mr = mr_of(face);
    if (!mr.usable("NdkDeregisterMr"))
        return STATUS_INVALID_DEVICE_STATE;
    // From here on the consumer may not use the token: it is no longer a registered MR's.
    bool forgot = mr.token_known.exchange(false);
    UINT32 token = mr.local_token.load();
    if (forgot)
        mr.adapter().forget_local_token(token, &mr.pd);
    return run_request(
        mr.adapter(), &mr, "NdkDeregisterMr", completion, context,
        [&](NDK_FN_REQUEST_COMPLETION done, PVOID ctx) {
            return real_mr(mr)->Dispatch->NdkDeregisterMr(real_mr(mr), done, ctx);
        },
        [&mr, forgot, token](NTSTATUS status) {
            // A deregistration that failed (STATUS_DEVICE_BUSY while windows are bound, ...)
            // leaves the MR registered: its token is the consumer's to use again.  The shadow
            // lives until the miniport goes, so it is safe to reach from the completion.
            if (status == STATUS_SUCCESS || !forgot || mr.state() != State::Open)
                return;
            if (!mr.token_known.exchange(true))
                mr.adapter().learn_local_token(token, &mr.pd);
        });
}

NTSTATUS initialize_fast_register(NDK_MR *face, ULONG pages, BOOLEAN remote_access,
                                  NDK_FN_REQUEST_COMPLETION completion, PVOID context)
{
    MrShadow &mr = mr_of(face);
    if (!mr.usable("NdkInitializeFastRegisterMr"))
        return STATUS_INVALID_DEVICE_STATE;
    return run_request(mr.adapter(), &mr, "NdkInitializeFastRegisterMr", completion, context,
                       [&](NDK_FN_REQUEST_COMPLETION done, PVOID ctx) {
                           return real_mr(mr)->Dispatch->NdkInitializeFastRegisterMr(
                               real_mr(mr), pages, remote_access, done, ctx);
                       });
}

UINT32 remote_token_from_mr(NDK_MR *face)
{
    MrShadow &mr = mr_of(face);
    if (!mr.usable("NdkGetRemoteTokenFromMr"))
        return 0;
    UINT32 token = real_mr(mr)->Dispatch->NdkGetRemoteTokenFromMr(real_mr(mr));
    mr.adapter().learn_remote_token(token);
    return token;
}

UINT32 local_token_from_mr(NDK_MR *face)
{
    MrShadow &mr = mr_of(face);
    if (!mr.usable("NdkGetLocalTokenFromMr"))
        return 0;
    UINT32 token = real_mr(mr)->Dispatch->NdkGetLocalTokenFromMr(real_mr(mr));
    mr.local_token.store(token);
    mr.token_known.store(true);
    mr.adapter().learn_local_token(token, &mr.pd);
    return token;
}

UINT32 remote_token_from_mw(NDK_MW *face)
{
    Shadow &mw = Shadow::of(face);
    if (!mw.usable("NdkGetRemoteTokenFromMw"))
        return 0;
    auto real = reinterpret_cast<NDK_MW *>(mw.real());
    UINT32 token = real->Dispatch->NdkGetRemoteTokenFromMw(real);
    mw.adapter().learn_remote_token(token);
    return token;
}

} // namespace

const NDK_MR_DISPATCH kMrDispatch = {
    .NdkCloseMr = close_object,
    .NdkQueryExtension = query_extension,
    .NdkRegisterMr = register_mr,
    .NdkDeregisterMr = deregister_mr,
    .NdkInitializeFastRegisterMr = initialize_fast_register,
    .NdkGetRemoteTokenFromMr = remote_token_from_mr,
    .NdkGetLocalTokenFromMr = local_token_from_mr,
};

const NDK_MW_DISPATCH kMwDispatch = {
    .NdkCloseMw = close_object,
    .NdkQueryExtension = query_extension,
    .NdkGetRemoteTokenFromMw = remote_token_from_mw,
};

} // namespace ndk::validate
