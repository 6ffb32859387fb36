// The inline checks of a work request (digest 1.7, 2.5, 3.4), in the one order
// docs/semantics.md gives them (POST-CHECKS):
//   1. a CQ of the QP in error                  STATUS_INVALID_DEVICE_STATE (CQ-OVERRUN-QP)
//   2. not connected (initiator requests)       STATUS_CONNECTION_INVALID
//   3. a flag the request does not document     STATUS_INVALID_PARAMETER
//   4. queue full, deferred requests included   STATUS_NO_MORE_ENTRIES
//   5. more SGEs than the queue allows          STATUS_DATA_OVERRUN
//   6. above MaxTransferLength, or INLINE data above the QP's InlineDataSize
//                                               STATUS_BUFFER_OVERFLOW
// then the request's own arguments (a bad Bind, FastRegister or Invalidate argument), which
// the provider judges.  A provider describes its queue and limits; these decide.
#pragma once

#include "ndk/ndkpi.h"

#include <cstddef>
#include <cstdint>

namespace ndk::kit {

// The flags each initiator request documents (digest 1.7, 2.5).  INLINE is accepted on Write
// as well, since CreateQp's InlineDataSize covers "send or write" (docs/semantics.md,
// QP-WRITE-INLINE).
inline constexpr ULONG kCommonFlags =
    NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE | NDK_OP_FLAG_DEFER;
inline constexpr ULONG kSendFlags =
    kCommonFlags | NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT | NDK_OP_FLAG_INLINE;
inline constexpr ULONG kWriteFlags = kCommonFlags | NDK_OP_FLAG_INLINE;
inline constexpr ULONG kReadFlags = kCommonFlags | NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE;
inline constexpr ULONG kBindFlags =
    kCommonFlags | NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
inline constexpr ULONG kFastRegisterFlags =
    kCommonFlags | NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_LOCAL_WRITE |
    NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_RDMA_READ_SINK;
inline constexpr ULONG kInvalidateFlags = kCommonFlags;

// A queue as the checks see it at the moment of the post (the provider's lock held).
struct QueueView {
    bool cq_in_error;  // either CQ of the QP (or the SRQ's) has failed
    bool connected;    // initiator requests only
    size_t queued;     // requests posted and not yet completed, deferred ones included
    ULONG depth;       // the queue depth asked for at create
};

// Checks 1-4 of an initiator request.
NTSTATUS check_initiator_post(const QueueView &queue, ULONG flags, ULONG allowed);

// The SGL's limits: max_sge for this request (a Read's sink is also bounded by
// MaxReadRequestSge), the adapter's MaxTransferLength, the QP's InlineDataSize.
struct SglLimits {
    ULONG max_sge;
    ULONG max_transfer;
    ULONG inline_size;
};

// Checks 5-6 of a data request's SGL.  INLINE data is not bounded by the SGE count (digest
// 1.7, NDK_SGE: tokens are ignored and the bytes are taken at the post).  A NULL list with a
// count is STATUS_INVALID_PARAMETER.  On success *total is the length of the transfer.
NTSTATUS check_sgl(const NDK_SGE *sgl, ULONG count, ULONG flags, const SglLimits &limits,
                   uint64_t *total);

// Every check of NdkReceive / NdkSrqReceive: the list, checks 1, 4, 5 and 6.
NTSTATUS check_receive_post(const QueueView &queue, const NDK_SGE *sgl, ULONG count,
                            const SglLimits &limits, uint64_t *total);

} // namespace ndk::kit

namespace ndk::kit {

// Check 1 for a QP of any provider: either of its CQs has failed (an overrun, a fatal error).
template <class Qp>
bool cq_in_error(const Qp &qp)
{
    return qp.initiator_cq->error != STATUS_SUCCESS || qp.receive_cq->error != STATUS_SUCCESS;
}

} // namespace ndk::kit
