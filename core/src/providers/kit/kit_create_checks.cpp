#include "kit_create_checks.hpp"

#include <algorithm>
#include <cstdint>
#include <unistd.h>

namespace ndk::kit {

bool affinity_valid(const GROUP_AFFINITY *affinity)
{
    if (affinity == nullptr)
        return true;
    long cpus = std::clamp(sysconf(_SC_NPROCESSORS_CONF), 1L, 64L);
    uint64_t present = cpus == 64 ? ~uint64_t{0} : (uint64_t{1} << cpus) - 1;
    return affinity->Group == 0 && affinity->Mask != 0 && (affinity->Mask & ~present) == 0;
}

NTSTATUS check_create_listener(NDK_FN_CONNECT_EVENT_CALLBACK connect_event, NDK_LISTENER **out)
{
    if (out == nullptr || connect_event == nullptr)
        return STATUS_INVALID_PARAMETER;
    return STATUS_SUCCESS;
}

NTSTATUS check_create_cq(const NDK_ADAPTER_INFO &info, ULONG depth,
                         NDK_FN_CQ_NOTIFICATION_CALLBACK notification,
                         const GROUP_AFFINITY *affinity, NDK_CQ **out)
{
    if (depth == 0 || depth > info.MaxCqDepth || notification == nullptr || out == nullptr ||
        !affinity_valid(affinity))
        return STATUS_INVALID_PARAMETER;
    return STATUS_SUCCESS;
}

NTSTATUS check_resize_cq(const NDK_ADAPTER_INFO &info, ULONG depth)
{
    if (!(info.AdapterFlags & NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED))
        return STATUS_NOT_SUPPORTED;
    if (depth == 0 || depth > info.MaxCqDepth)
        return STATUS_INVALID_PARAMETER;
    return STATUS_SUCCESS;
}

NTSTATUS check_create_qp(const NDK_ADAPTER_INFO &info, const QpSizes &sizes, NDK_QP **out)
{
    if (out == nullptr || sizes.receive_depth > info.MaxReceiveQueueDepth ||
        sizes.initiator_depth > info.MaxInitiatorQueueDepth ||
        sizes.receive_sge > info.MaxReceiveRequestSge ||
        sizes.initiator_sge > info.MaxInitiatorRequestSge ||
        sizes.inline_size > info.MaxInlineDataSize)
        return STATUS_INVALID_PARAMETER;
    return STATUS_SUCCESS;
}

NTSTATUS check_create_srq(const NDK_ADAPTER_INFO &info, ULONG depth, ULONG receive_sge,
                          ULONG threshold, NDK_FN_SRQ_NOTIFICATION_CALLBACK notification,
                          const GROUP_AFFINITY *affinity, NDK_SRQ **out)
{
    if (out == nullptr || depth == 0 || depth > info.MaxSrqDepth ||
        receive_sge > info.MaxReceiveRequestSge || !affinity_valid(affinity) ||
        threshold > depth || (threshold > 0 && notification == nullptr))
        return STATUS_INVALID_PARAMETER;
    return STATUS_SUCCESS;
}

NTSTATUS check_modify_srq(const NDK_ADAPTER_INFO &info, ULONG current_depth, ULONG depth,
                          ULONG threshold, NDK_FN_SRQ_NOTIFICATION_CALLBACK notification)
{
    if (depth > info.MaxSrqDepth)
        return STATUS_INVALID_PARAMETER;
    ULONG resulting = depth != 0 ? depth : current_depth;
    if (threshold > resulting || (threshold > 0 && notification == nullptr))
        return STATUS_INVALID_PARAMETER;
    return STATUS_SUCCESS;
}

} // namespace ndk::kit
