#include "ndk/objects.hpp"

namespace ndk {

Mr::Mr(std::shared_ptr<Adapter> adapter, NDK_MR *mr, std::shared_ptr<Pd> pd, bool fast_register)
    : Object(std::move(adapter), &mr->Header, mr->Dispatch->NdkCloseMr, {std::move(pd)}),
      ndk_(mr), fast_register_(fast_register)
{
}

Call Mr::register_mdl(std::vector<MDL> chain, SIZE_T length, ULONG flags,
                      std::shared_ptr<void> keepalive)
{
    auto in_call = enter();
    // The chain is linked here, in its final storage, and kept until the call completes:
    // the provider may read it until then (digest 1.4).
    auto mdl = std::make_shared<std::vector<MDL>>(std::move(chain));
    for (size_t i = 0; i + 1 < mdl->size(); ++i)
        (*mdl)[i].Next = &(*mdl)[i + 1];
    if (!mdl->empty())
        mdl->back().Next = nullptr;
    Call call = Call::begin();
    // The call holds the memory until it completes; a registered region holds it from then on.
    call.on_complete([this, weak = weak_from_this(), mdl, length, keepalive](NTSTATUS status) {
        auto self = weak.lock();
        if (!self || status != STATUS_SUCCESS)
            return;
        std::lock_guard lock(mr_mu_);
        address_ = mdl->empty()
                       ? 0
                       : reinterpret_cast<uintptr_t>(MmGetMdlVirtualAddress(mdl->data()));
        length_ = length;
        keepalive_ = keepalive;
    });
    void *context = call.context(*adapter());
    NTSTATUS status = ndk_->Dispatch->NdkRegisterMr(ndk_, mdl->empty() ? nullptr : mdl->data(),
                                                    length, flags, Call::request_completion,
                                                    context);
    {
        std::lock_guard lock(mr_mu_);
        mdl_ = mdl;
    }
    call.returned(status, context);
    return call;
}

Call Mr::register_buffer(void *address, SIZE_T length, ULONG flags,
                         std::shared_ptr<void> keepalive)
{
    // One MDL element per 1 GiB (ByteCount is 32 bits), each continuing where the last ended.
    constexpr SIZE_T kChunk = SIZE_T{1} << 30;
    std::vector<MDL> chain;
    auto va = reinterpret_cast<uintptr_t>(address);
    SIZE_T left = length;
    do {
        SIZE_T n = std::min(left, kChunk);
        MDL element{};
        NdkInitializeMdl(&element, reinterpret_cast<PVOID>(va), static_cast<ULONG>(n));
        chain.push_back(element);
        va += n;
        left -= n;
    } while (left > 0);
    return register_mdl(std::move(chain), length, flags, std::move(keepalive));
}

std::shared_ptr<void> Mr::held_until_closed()
{
    std::lock_guard lock(mr_mu_);
    address_ = 0;
    length_ = 0;
    auto held = std::make_shared<std::pair<std::shared_ptr<void>, std::shared_ptr<void>>>(
        std::move(keepalive_), std::move(mdl_));
    return held;
}

Call Mr::deregister()
{
    auto in_call = enter();
    Call call = Call::begin();
    call.on_complete([weak = weak_from_this(), this](NTSTATUS status) {
        auto self = weak.lock();
        if (!self || status != STATUS_SUCCESS)
            return;
        std::lock_guard lock(mr_mu_);
        keepalive_.reset();
        mdl_.reset();
        address_ = 0;
        length_ = 0;
    });
    void *context = call.context(*adapter());
    NTSTATUS status = ndk_->Dispatch->NdkDeregisterMr(ndk_, Call::request_completion, context);
    call.returned(status, context);
    return call;
}

Call Mr::initialize_fast_register(ULONG adapter_page_count, bool remote_access)
{
    auto in_call = enter();
    Call call = Call::begin();
    void *context = call.context(*adapter());
    NTSTATUS status = ndk_->Dispatch->NdkInitializeFastRegisterMr(
        ndk_, adapter_page_count, remote_access ? TRUE : FALSE, Call::request_completion, context);
    call.returned(status, context);
    return call;
}

UINT32 Mr::get_local_token()
{
    auto in_call = enter();
    return ndk_->Dispatch->NdkGetLocalTokenFromMr(ndk_);
}

UINT32 Mr::get_remote_token()
{
    auto in_call = enter();
    return ndk_->Dispatch->NdkGetRemoteTokenFromMr(ndk_);
}

uintptr_t Mr::registered_address() const
{
    std::lock_guard lock(mr_mu_);
    return address_;
}

SIZE_T Mr::registered_length() const
{
    std::lock_guard lock(mr_mu_);
    return length_;
}

} // namespace ndk
