// Logical address mappings (digest 1.1, 2.4): NdkBuildLAM maps an MDL range onto page-aligned
// I/O virtual addresses of this adapter; the privileged token names them in SGEs.
#include "soft_objects.hpp"

#include <atomic>

namespace ndk::soft {

namespace {

// Logical pages are numbered across every soft adapter of the process, never reused: another
// adapter's logical address (or a released one) is never one of this adapter's, so
// NdkFastRegister and a privileged-token SGE can tell (the walker's fastreg with the other
// adapter's pages completed SUCCESS when both adapters numbered from the same base).
uint64_t take_logical_pages(uint64_t pages)
{
    static std::atomic<uint64_t> next{uint64_t{1} << 36};
    return next.fetch_add(pages);
}

} // namespace

NTSTATUS build_lam(NDK_ADAPTER *ndk_adapter, MDL *Mdl, SIZE_T Length, NDK_FN_REQUEST_COMPLETION,
                   PVOID, NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM, ULONG *pLAMSize, ULONG *pFBO)
{
    SoftAdapter *adapter = SoftAdapter::from(ndk_adapter);
    if (pLAMSize == nullptr || pFBO == nullptr)
        return STATUS_INVALID_PARAMETER;
    uintptr_t start = 0;
    if (NTSTATUS status = kit::check_build_lam(Mdl, Length, &start); status != STATUS_SUCCESS)
        return status;
    uint64_t fbo = start % NDK_PAGE_SIZE;
    uint64_t pages = (fbo + Length + NDK_PAGE_SIZE - 1) / NDK_PAGE_SIZE;
    uint64_t needed = offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) +
                      pages * sizeof(NDK_LOGICAL_ADDRESS);
    if (needed > MAXULONG)
        return STATUS_INSUFFICIENT_RESOURCES;
    if (pNdkLAM == nullptr || *pLAMSize < needed) {
        *pLAMSize = static_cast<ULONG>(needed); // BUFFER_TOO_SMALL reports the size (digest 1.1)
        return STATUS_BUFFER_TOO_SMALL;
    }
    auto perform = [adapter, pNdkLAM, pLAMSize, pFBO, first = start - fbo, pages, fbo, needed] {
        std::lock_guard lock(adapter->mu());
        auto &table = adapter->lams();
        std::vector<uint64_t> iova_pages;
        iova_pages.reserve(pages);
        uint64_t first_page = take_logical_pages(pages);
        pNdkLAM->AdapterContext = pNdkLAM; // the mapping's identity for ReleaseLAM
        pNdkLAM->AdapterPageCount = static_cast<ULONG>(pages);
        for (uint64_t i = 0; i < pages; ++i) {
            uint64_t iova = (first_page + i) * NDK_PAGE_SIZE;
            table.pages[iova] = first + i * NDK_PAGE_SIZE;
            pNdkLAM->AdapterPageArray[i].QuadPart = static_cast<LONGLONG>(iova);
            iova_pages.push_back(iova);
        }
        table.mappings[pNdkLAM] = std::move(iova_pages);
        *pLAMSize = static_cast<ULONG>(needed);
        *pFBO = static_cast<ULONG>(fbo);
        return STATUS_SUCCESS;
    };
    return adapter->request(perform);
}

VOID release_lam(NDK_ADAPTER *ndk_adapter, NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM)
{
    SoftAdapter *adapter = SoftAdapter::from(ndk_adapter);
    if (pNdkLAM == nullptr)
        return;
    std::lock_guard lock(adapter->mu());
    auto &table = adapter->lams();
    auto it = table.mappings.find(pNdkLAM->AdapterContext);
    if (it == table.mappings.end())
        return;
    for (uint64_t iova : it->second)
        table.pages.erase(iova);
    table.mappings.erase(it);
}

} // namespace ndk::soft
