// Whether a range of the process's address space is memory a provider may read, or write: the
// check NdkRegisterMr and NdkBuildLAM make before a registration lets the provider's data path
// touch the range.  In the kernel an MDL arrives probed and locked for the access it was probed
// for (MmProbeAndLockPages raises STATUS_ACCESS_VIOLATION for a page it cannot give); here the
// provider asks the kernel's own record of the mappings, so that a range that is not mapped, or
// is mapped without PROT_WRITE, is refused at registration and never faults a Send's receiver
// (docs/semantics.md, MR-WRITABLE).
#pragma once

#include "ndk/ndkpi.h"

#include <cstddef>
#include <cstdint>

namespace ndk::kit {

enum class MappedAccess { Read, ReadWrite };

// Whether every byte of [start, start + length) lies in mappings of this process that allow
// `access` (/proc/self/maps).  False for a length of 0 beyond the address space, an unmapped
// byte, or a mapping without the permission; false too when the mappings cannot be read.
bool range_mapped_for(uintptr_t start, size_t length, MappedAccess access);

// STATUS_SUCCESS when [start, start + length) may be read (and written when `write`), else
// STATUS_ACCESS_VIOLATION, the status MmProbeAndLockPages raises and ibv_reg_mr's EFAULT maps
// to in the verbs provider.
NTSTATUS check_mapped(uintptr_t start, size_t length, bool write);

} // namespace ndk::kit
