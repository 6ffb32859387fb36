// Memory window (digest 1.5).  Bound by NdkBind on a QP; its token is valid once bound.
#include "soft_memory.hpp"

namespace ndk::soft {

NTSTATUS create_mw(NDK_PD *ndk_pd, NDK_FN_CREATE_COMPLETION, PVOID, NDK_MW **ppNdkMw)
{
    SoftPd *pd = SoftPd::from(ndk_pd);
    SoftAdapter &adapter = pd->adapter();
    if (ppNdkMw == nullptr)
        return STATUS_INVALID_PARAMETER;
    return adapter.create<SoftMw>(ppNdkMw, [&](NTSTATUS &status) {
        auto mw = std::make_unique<SoftMw>(adapter);
        std::optional<uint32_t> slot = adapter.tokens().open(*mw);
        if (!slot) {
            status = STATUS_INSUFFICIENT_RESOURCES; // every token index in use
            return std::unique_ptr<SoftMw>();
        }
        mw->token_slot = *slot;
        mw->pd = pd;
        mw->depend_on(*pd);
        return mw;
    });
}

namespace {

UINT32 get_remote_token_from_mw(NDK_MW *ndk_mw)
{
    SoftMw *mw = SoftMw::from(ndk_mw);
    std::lock_guard lock(mw->adapter().mu());
    return mw->remote_token;
}

} // namespace

void unbind_window(SoftMw &mw)
{
    if (!mw.bound)
        return;
    mw.bound = false;
    mw.adapter().tokens().revoke(mw.remote_token);
    if (mw.mr != nullptr) {
        --mw.mr->bound_windows;
        mw.mr->release_dependent(); // MR -> MW via Bind (digest 3.1)
        mw.mr = nullptr;
    }
}

void SoftMw::on_close() { unbind_window(*this); }

void SoftMw::on_destroy() { adapter().tokens().close(token_slot); }

const NDK_MW_DISPATCH kMwDispatch = {
    .NdkCloseMw = close_object<SoftMw>,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkGetRemoteTokenFromMw = get_remote_token_from_mw,
};

} // namespace ndk::soft
