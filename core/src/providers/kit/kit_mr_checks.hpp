// The inline argument checks of NdkRegisterMr (digest 1.4, 2.6) and the MDL rule it shares
// with NdkBuildLAM (digest 1.1): each returns STATUS_SUCCESS or the documented
// STATUS_INVALID_PARAMETER; a provider runs it before it registers anything.
#pragma once

#include "ndk/ndkpi.h"

#include <cstdint>
#include <optional>

namespace ndk::kit {

// The access flags an MR registration documents (digest 2.6).
inline constexpr ULONG kRegisterMrFlags = NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
                                          NDK_MR_FLAG_ALLOW_REMOTE_READ |
                                          NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
                                          NDK_MR_FLAG_RDMA_READ_SINK;

// Whether an MR's access flags let anything write its memory: NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
// which NDK_MR_FLAG_ALLOW_REMOTE_WRITE (0x5) includes; an RDMA Read's sink needs it as well.
// Such an MR needs writable memory (docs/semantics.md, MR-WRITABLE).
constexpr bool mr_flags_allow_writes(ULONG flags)
{
    return (flags & NDK_MR_FLAG_ALLOW_LOCAL_WRITE) != 0;
}

// The start of an MDL chain's first `length` bytes when they are virtually contiguous and
// well formed (each element's StartVa page aligned, its ByteOffset within the page), chained
// without a loop, at least `length` long and not zero-based (digest 1.4: "no zero-based
// virtual addresses"); nullopt otherwise ("MDL range not virtually contiguous").
std::optional<uintptr_t> contiguous_mdl_range(const MDL *mdl, SIZE_T length);

// NdkRegisterMr's arguments, in this order: a flag digest 2.6 does not document, a Length above
// the adapter's MaxRegistrationSize, an MDL range that is not virtually contiguous: each
// STATUS_INVALID_PARAMETER (docs/semantics.md, MR-LENGTH); then a range that is not mapped, or
// not writable while the flags allow writes: STATUS_ACCESS_VIOLATION (kit_mapped_memory.hpp,
// MR-WRITABLE).  On success *start is the range's first address.  Whether the MR may be registered now (its kind, MR-KIND; its state,
// MR-STATE) is the provider's to judge.
NTSTATUS check_register_mr(const NDK_ADAPTER_INFO &info, const MDL *mdl, SIZE_T length,
                           ULONG flags, uintptr_t *start);

// NdkBuildLAM's MDL: a range that is not virtually contiguous is STATUS_INVALID_PARAMETER
// (digest 1.1); memory that is not mapped writable is STATUS_ACCESS_VIOLATION, since the
// privileged token that names the logical addresses allows local writes (digest 1.3,
// MR-WRITABLE).  On success *start is the range's first address.
NTSTATUS check_build_lam(const MDL *mdl, SIZE_T length, uintptr_t *start);

} // namespace ndk::kit
