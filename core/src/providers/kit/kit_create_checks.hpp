// The inline argument checks of the creates, against the limits the adapter reports in
// NDK_ADAPTER_INFO (digest 1.1-1.6).  Each returns STATUS_SUCCESS or the documented
// STATUS_INVALID_PARAMETER; a provider runs it before it allocates anything.
#pragma once

#include "ndk/ndkpi.h"

namespace ndk::kit {

// Every create hands its object back through its out-parameter (digest 1.0, "Async create"):
// a NULL one is STATUS_INVALID_PARAMETER.  NdkCreatePd, NdkCreateConnector, NdkCreateMr and
// NdkCreateMw have no other argument to check.
template <class Out>
NTSTATUS check_create_out(Out **out)
{
    return out == nullptr ? STATUS_INVALID_PARAMETER : STATUS_SUCCESS;
}

// A create that completes inline with an object needing nothing but its adapter and the
// create's arguments: the out-parameter checked, then the object handed to the adapter
// (`Adapter::created`: into its registry, out to the consumer).
template <class Object, class Adapter, class Out, class... Args>
NTSTATUS create_inline(Adapter &adapter, Out **out, Args &&...args)
{
    if (NTSTATUS status = check_create_out(out); status != STATUS_SUCCESS)
        return status;
    return adapter.created(new Object(adapter, static_cast<Args &&>(args)...), out);
}

// NdkCreateListener (digest 1.1, 1.9): the out-parameter, and the connect event callback the
// listener calls for every incoming request.
NTSTATUS check_create_listener(NDK_FN_CONNECT_EVENT_CALLBACK connect_event, NDK_LISTENER **out);

// An affinity names processor group 0 and only processors this machine has (NULL: none asked).
bool affinity_valid(const GROUP_AFFINITY *affinity);

// NdkCreateCq (digest 1.3).
NTSTATUS check_create_cq(const NDK_ADAPTER_INFO &info, ULONG depth,
                         NDK_FN_CQ_NOTIFICATION_CALLBACK notification,
                         const GROUP_AFFINITY *affinity, NDK_CQ **out);

// NdkResizeCq's arguments (digest 1.3): STATUS_NOT_SUPPORTED without
// NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED, then the depth as at create.  Whether the new depth
// holds the completions queued is the provider's to judge (STATUS_BUFFER_OVERFLOW).
NTSTATUS check_resize_cq(const NDK_ADAPTER_INFO &info, ULONG depth);

// The sizes NdkCreateQp / NdkCreateQpWithSrq ask for (digest 1.7; with an SRQ the receive
// sizes are 0).  A provider's QP keeps them (as a base) for its post checks.
struct QpSizes {
    ULONG receive_depth = 0;
    ULONG initiator_depth = 0;
    ULONG receive_sge = 0;
    ULONG initiator_sge = 0;
    ULONG inline_size = 0;

    void set_sizes(const QpSizes &sizes) { *this = sizes; }
};

// NdkCreateQp / NdkCreateQpWithSrq: depths, SGE counts and inline size within the adapter's
// maxima.
NTSTATUS check_create_qp(const NDK_ADAPTER_INFO &info, const QpSizes &sizes, NDK_QP **out);

// NdkCreateSrq (digest 1.6).
NTSTATUS check_create_srq(const NDK_ADAPTER_INFO &info, ULONG depth, ULONG receive_sge,
                          ULONG threshold, NDK_FN_SRQ_NOTIFICATION_CALLBACK notification,
                          const GROUP_AFFINITY *affinity, NDK_SRQ **out);

// NdkModifySrq's arguments (digest 1.6): a depth of 0 keeps `current_depth`; the threshold
// must fit the resulting depth and needs a notification callback.  Whether the new depth
// still holds the receives queued is the provider's to judge (STATUS_BUFFER_OVERFLOW).
NTSTATUS check_modify_srq(const NDK_ADAPTER_INFO &info, ULONG current_depth, ULONG depth,
                          ULONG threshold, NDK_FN_SRQ_NOTIFICATION_CALLBACK notification);

} // namespace ndk::kit
