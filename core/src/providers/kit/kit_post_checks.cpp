#include "kit_post_checks.hpp"

namespace ndk::kit {

NTSTATUS check_initiator_post(const QueueView &queue, ULONG flags, ULONG allowed)
{
    if (queue.cq_in_error)
        return STATUS_INVALID_DEVICE_STATE; // the CQ "and all associated QPs" (digest 1.3)
    if (!queue.connected)
        return STATUS_CONNECTION_INVALID; // "QP not connected" (digest 1.7)
    if ((flags & ~allowed) != 0)
        return STATUS_INVALID_PARAMETER; // ND2 QP::Send "bad flags" (digest 4.2)
    if (queue.queued >= queue.depth)
        return STATUS_NO_MORE_ENTRIES; // queue full (ND2, digest 4.2)
    return STATUS_SUCCESS;
}

NTSTATUS check_sgl(const NDK_SGE *sgl, ULONG count, ULONG flags, const SglLimits &limits,
                   uint64_t *total)
{
    if (count > 0 && sgl == nullptr)
        return STATUS_INVALID_PARAMETER;
    uint64_t sum = 0;
    for (ULONG i = 0; i < count; ++i)
        sum += sgl[i].Length;
    bool inline_data = (flags & NDK_OP_FLAG_INLINE) != 0;
    if (!inline_data && count > limits.max_sge)
        return STATUS_DATA_OVERRUN; // too many SGEs (ND2 QP::Send, digest 4.2)
    if (sum > limits.max_transfer)
        return STATUS_BUFFER_OVERFLOW; // too much data (ND2 QP::Send, digest 4.2)
    if (inline_data && sum > limits.inline_size)
        return STATUS_BUFFER_OVERFLOW;
    *total = sum;
    return STATUS_SUCCESS;
}

NTSTATUS check_receive_post(const QueueView &queue, const NDK_SGE *sgl, ULONG count,
                            const SglLimits &limits, uint64_t *total)
{
    if (count > 0 && sgl == nullptr)
        return STATUS_INVALID_PARAMETER;
    if (queue.cq_in_error)
        return STATUS_INVALID_DEVICE_STATE;
    if (queue.queued >= queue.depth)
        return STATUS_NO_MORE_ENTRIES; // queue full (ND2 QP::Receive, digest 4.2)
    return check_sgl(sgl, count, 0, limits, total);
}

} // namespace ndk::kit
