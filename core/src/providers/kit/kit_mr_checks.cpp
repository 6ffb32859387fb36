#include "kit_mr_checks.hpp"

#include "kit_mapped_memory.hpp"

namespace ndk::kit {

std::optional<uintptr_t> contiguous_mdl_range(const MDL *mdl, SIZE_T length)
{
    if (mdl == nullptr || length == 0)
        return std::nullopt;
    uintptr_t start = reinterpret_cast<uintptr_t>(MmGetMdlVirtualAddress(mdl));
    uintptr_t expected = start;
    SIZE_T covered = 0;
    // A chain longer than this is either a loop or not something a consumer would build.
    constexpr int kMaxElements = 1 << 20;
    int elements = 0;
    for (const MDL *m = mdl; m != nullptr && covered < length; m = m->Next) {
        if (++elements > kMaxElements)
            return std::nullopt;
        if (reinterpret_cast<uintptr_t>(m->StartVa) % NDK_PAGE_SIZE != 0 ||
            m->ByteOffset >= NDK_PAGE_SIZE)
            return std::nullopt; // not a well-formed MDL element
        if (reinterpret_cast<uintptr_t>(MmGetMdlVirtualAddress(m)) != expected)
            return std::nullopt; // a gap or overlap: not virtually contiguous
        covered += m->ByteCount;
        expected += m->ByteCount;
    }
    if (covered < length || start == 0)
        return std::nullopt; // shorter than Length, or a zero-based address
    return start;
}

NTSTATUS check_register_mr(const NDK_ADAPTER_INFO &info, const MDL *mdl, SIZE_T length,
                           ULONG flags, uintptr_t *start)
{
    if ((flags & ~kRegisterMrFlags) != 0 || length > info.MaxRegistrationSize)
        return STATUS_INVALID_PARAMETER;
    std::optional<uintptr_t> range = contiguous_mdl_range(mdl, length);
    if (!range)
        return STATUS_INVALID_PARAMETER; // MDL range not virtually contiguous (digest 1.4)
    if (NTSTATUS status = check_mapped(*range, length, mr_flags_allow_writes(flags));
        status != STATUS_SUCCESS)
        return status;
    *start = *range;
    return STATUS_SUCCESS;
}

NTSTATUS check_build_lam(const MDL *mdl, SIZE_T length, uintptr_t *start)
{
    std::optional<uintptr_t> range = contiguous_mdl_range(mdl, length);
    if (!range)
        return STATUS_INVALID_PARAMETER;
    if (NTSTATUS status = check_mapped(*range, length, true); status != STATUS_SUCCESS)
        return status;
    *start = *range;
    return STATUS_SUCCESS;
}

} // namespace ndk::kit
