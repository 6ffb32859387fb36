#include "ndk/lam.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ndk {

Lam::Lam(std::shared_ptr<Adapter> adapter, std::vector<MDL> chain, SIZE_T length, ULONG lam_size,
         std::shared_ptr<void> keepalive)
    : adapter_(std::move(adapter)), chain_(std::move(chain)), length_(length),
      storage_((static_cast<size_t>(lam_size) + 7) / 8 + 1), lam_size_(lam_size),
      keepalive_(std::move(keepalive))
{
    for (size_t i = 0; i + 1 < chain_.size(); ++i)
        chain_[i].Next = &chain_[i + 1];
    if (!chain_.empty())
        chain_.back().Next = nullptr;
}

Lam::~Lam() { release(); }

ULONG Lam::size_for(uintptr_t address, SIZE_T length)
{
    uint64_t fbo = address % NDK_PAGE_SIZE;
    uint64_t pages = (fbo + length + NDK_PAGE_SIZE - 1) / NDK_PAGE_SIZE;
    uint64_t size = offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) +
                    std::max<uint64_t>(pages, 1) * sizeof(NDK_LOGICAL_ADDRESS);
    if (size > MAXULONG)
        throw std::invalid_argument("a mapping of " + std::to_string(length) +
                                    " bytes does not fit a ULONG *pLAMSize");
    return static_cast<ULONG>(size);
}

NDK_LOGICAL_ADDRESS_MAPPING *Lam::mapping()
{
    return reinterpret_cast<NDK_LOGICAL_ADDRESS_MAPPING *>(storage_.data());
}

void Lam::finished(NTSTATUS status)
{
    std::lock_guard lock(mu_);
    done_ = true;
    status_ = status;
    done_lam_size_ = lam_size_;
    done_fbo_ = fbo_;
    mapped_ = status == STATUS_SUCCESS;
    if (!mapped_)
        keepalive_.reset(); // nothing maps the memory
}

bool Lam::done() const
{
    std::lock_guard lock(mu_);
    return done_;
}

NTSTATUS Lam::status() const
{
    std::lock_guard lock(mu_);
    return status_;
}

ULONG Lam::lam_size() const
{
    std::lock_guard lock(mu_);
    return done_lam_size_;
}

ULONG Lam::fbo() const
{
    std::lock_guard lock(mu_);
    return done_fbo_;
}

bool Lam::mapped() const
{
    std::lock_guard lock(mu_);
    return mapped_;
}

std::vector<NDK_LOGICAL_ADDRESS> Lam::adapter_page_array() const
{
    std::lock_guard lock(mu_);
    if (!mapped_)
        throw std::logic_error("the LAM is not mapped (not built, failed, or released)");
    const auto *map = reinterpret_cast<const NDK_LOGICAL_ADDRESS_MAPPING *>(storage_.data());
    // Never past our storage, whatever AdapterPageCount says.
    size_t room = (storage_.size() * sizeof(uint64_t) -
                   offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray)) /
                  sizeof(NDK_LOGICAL_ADDRESS);
    size_t count = std::min<size_t>(map->AdapterPageCount, room);
    return {map->AdapterPageArray, map->AdapterPageArray + count};
}

void Lam::release()
{
    {
        std::lock_guard lock(mu_);
        if (!mapped_)
            return;
        mapped_ = false;
    }
    if (adapter_->is_open())
        adapter_->ndk()->Dispatch->NdkReleaseLAM(adapter_->ndk(), mapping());
    std::lock_guard lock(mu_);
    keepalive_.reset(); // after the release: the provider no longer maps the memory
}

std::pair<Call, std::shared_ptr<Lam>> Adapter::build_lam(std::vector<MDL> chain, SIZE_T length,
                                                         std::optional<ULONG> lam_size,
                                                         std::shared_ptr<void> keepalive)
{
    auto in_call = enter();
    uintptr_t start =
        chain.empty() ? 0 : reinterpret_cast<uintptr_t>(MmGetMdlVirtualAddress(&chain.front()));
    ULONG size = lam_size ? *lam_size : Lam::size_for(start, length);
    auto lam = std::make_shared<Lam>(shared_from_this(), std::move(chain), length, size,
                                     std::move(keepalive));
    // The Lam (its MDL chain and mapping storage) lives until the build completes: the
    // provider fills the mapping then (digest 1.1).
    Call call = Call::begin();
    call.on_complete([lam](NTSTATUS status) { lam->finished(status); });
    void *context = call.context(*this);
    NTSTATUS status = ndk_->Dispatch->NdkBuildLAM(
        ndk_, lam->chain_.empty() ? nullptr : lam->chain_.data(), length, Call::request_completion,
        context, size ? lam->mapping() : nullptr, &lam->lam_size_, &lam->fbo_);
    call.returned(status, context);
    return {call, lam};
}

} // namespace ndk
