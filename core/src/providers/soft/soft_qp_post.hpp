// Posting work requests on a QP (digest 1.7, 2.5, 3.3, 3.4): the inline checks and their
// statuses, then the request joins its queue for soft_transfer.cpp to execute.
#pragma once

#include "soft_objects.hpp"

namespace ndk::soft {

NTSTATUS post_send(NDK_QP *, PVOID, const NDK_SGE *, ULONG, ULONG);
NTSTATUS post_send_and_invalidate(NDK_QP *, PVOID, const NDK_SGE *, ULONG, ULONG, UINT32);
NTSTATUS post_receive(NDK_QP *, PVOID, const NDK_SGE *, ULONG);
NTSTATUS post_bind(NDK_QP *, PVOID, NDK_MR *, NDK_MW *, PVOID, SIZE_T, ULONG);
NTSTATUS post_fast_register(NDK_QP *, PVOID, NDK_MR *, ULONG, const NDK_LOGICAL_ADDRESS *, ULONG,
                            SIZE_T, PVOID, ULONG);
NTSTATUS post_invalidate(NDK_QP *, PVOID, NDK_OBJECT_HEADER *, ULONG);
NTSTATUS post_read(NDK_QP *, PVOID, const NDK_SGE *, ULONG, UINT64, UINT32, ULONG);
NTSTATUS post_write(NDK_QP *, PVOID, const NDK_SGE *, ULONG, UINT64, UINT32, ULONG);

} // namespace ndk::soft
