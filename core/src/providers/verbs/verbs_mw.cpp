// Memory window (digest 1.5) over a type 2 ibv_mw: NdkBind posts IBV_WR_BIND_MW with a fresh
// rkey (ibv_inc_rkey), NdkInvalidate posts IBV_WR_LOCAL_INV (verbs_qp_post.cpp).  Devices
// without windows (siw) fail the create with STATUS_NOT_SUPPORTED.
#include "verbs_objects.hpp"

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <unordered_map>

namespace ndk::verbs {
namespace {
std::mutex windows_mu;
std::unordered_map<uint32_t, bool> windows; // rkey -> bound
} // namespace

void window_rkey_bound(uint32_t rkey, bool bound)
{
    std::lock_guard lock(windows_mu);
    windows[rkey] = bound;
}

void window_rkey_forget(uint32_t rkey)
{
    std::lock_guard lock(windows_mu);
    windows.erase(rkey);
}

void window_rkey_invalidated(uint32_t rkey)
{
    std::lock_guard lock(windows_mu);
    if (auto it = windows.find(rkey); it != windows.end())
        it->second = false;
}

bool window_rkey_unbound(uint32_t rkey)
{
    std::lock_guard lock(windows_mu);
    auto it = windows.find(rkey);
    return it != windows.end() && !it->second;
}

VMw::VMw(VerbsAdapter &adapter, VPd &pd) : NdkObject(adapter, kType, &kMwDispatch), pd(pd) {}

namespace {
void forget_window(VQp &qp, VMw *window)
{
    auto &list = qp.windows;
    list.erase(std::remove(list.begin(), list.end(), window), list.end());
}
} // namespace

void VMw::bound_through_qp(VQp &qp)
{
    if (std::find(bound_through.begin(), bound_through.end(), &qp) != bound_through.end())
        return;
    bound_through.push_back(&qp);
    qp.windows.push_back(this);
}

void VMw::release_qp(VQp &going)
{
    for (VQp *qp : bound_through)
        if (qp != &going) // `going` clears its own list
            forget_window(*qp, this);
    bound_through.clear();
    if (mw == nullptr)
        return;
    ibv_dealloc_mw(mw);
    window_rkey_forget(rkey);
    mw = ibv_alloc_mw(pd.pd, IBV_MW_TYPE_2); // NULL: later binds fail with INSUFFICIENT_RESOURCES
    if (mw != nullptr) {
        rkey = mw->rkey;
        window_rkey_bound(rkey, false);
    }
}

void VMw::destroy_resources()
{
    {
        std::lock_guard lock(adapter().mu());
        for (VQp *qp : bound_through)
            forget_window(*qp, this);
        bound_through.clear();
    }
    window_rkey_forget(rkey);
    if (mw != nullptr)
        ibv_dealloc_mw(mw);
    mw = nullptr;
}

NTSTATUS create_mw(NDK_PD *ndk_pd, NDK_FN_CREATE_COMPLETION, PVOID, NDK_MW **ppNdkMw)
{
    VPd *pd = VPd::from(ndk_pd);
    if (NTSTATUS status = kit::check_create_out(ppNdkMw); status != STATUS_SUCCESS)
        return status;
    if (!pd->adapter().device().memory_windows)
        return STATUS_NOT_SUPPORTED;
    auto *mw = new VMw(pd->adapter(), *pd);
    mw->mw = ibv_alloc_mw(pd->pd, IBV_MW_TYPE_2);
    if (mw->mw == nullptr) {
        NTSTATUS status = errno_status(errno);
        delete mw;
        return status;
    }
    mw->rkey = mw->mw->rkey;
    window_rkey_bound(mw->rkey, false);
    {
        std::lock_guard lock(pd->adapter().mu());
        mw->depend_on(*pd);
    }
    return pd->adapter().created(mw, ppNdkMw);
}

namespace {

UINT32 get_remote_token(NDK_MW *ndk_mw)
{
    VMw *mw = VMw::from(ndk_mw);
    std::lock_guard lock(mw->adapter().mu());
    return mw->rkey;
}

NTSTATUS close_mw(NDK_OBJECT_HEADER *header, NDK_FN_CLOSE_COMPLETION completion, PVOID context)
{
    return VMw::from(reinterpret_cast<NDK_MW *>(header))->close(completion, context);
}

} // namespace

const NDK_MW_DISPATCH kMwDispatch = {
    .NdkCloseMw = close_mw,
    .NdkQueryExtension = query_extension_not_supported,
    .NdkGetRemoteTokenFromMw = get_remote_token,
};

} // namespace ndk::verbs
