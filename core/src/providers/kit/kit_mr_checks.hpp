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

// The start of an MDL chain's first `length` bytes when they are virtually contiguous and
// well formed (each element's StartVa page aligned, its ByteOffset within the page), chained
// without a loop, at least `length` long and not zero-based (digest 1.4: "no zero-based
// virtual addresses"); nullopt otherwise ("MDL range not virtually contiguous").
std::optional<uintptr_t> contiguous_mdl_range(const MDL *mdl, SIZE_T length);

// NdkRegisterMr's arguments, in this order: a flag digest 2.6 does not document, a Length above
// the adapter's MaxRegistrationSize, an MDL range that is not virtually contiguous: each
// STATUS_INVALID_PARAMETER (docs/semantics.md, MR-LENGTH).  On success *start is the range's
// first address.  Whether the MR may be registered now (its kind, MR-KIND; its state,
// MR-STATE) is the provider's to judge.
NTSTATUS check_register_mr(const NDK_ADAPTER_INFO &info, const MDL *mdl, SIZE_T length,
                           ULONG flags, uintptr_t *start);

} // namespace ndk::kit
