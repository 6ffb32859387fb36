// The NDK dispatch functions, once: for each name, the object whose dispatch table holds it,
// how it completes, whether a provider may be made to fail it, and the statuses its reference
// page documents (digest 1.1-1.10, the "Status codes" columns; SUCCESS is documented
// everywhere, PENDING for every call that may pend).  Every list of functions derives from
// this table: the soft provider's `fail` and `hold` knobs, and the validation layer's
// STATUS-UNDOCUMENTED rule.  A name several tables share (NdkQueryExtension,
// NdkGetLocalAddress) is one row.
#pragma once

#include "ndk/ndkpi.h"

#include <array>
#include <string_view>

namespace ndk::kit {

enum class Returns {
    Nothing, // VOID, or a value that is no status (ULONG, UINT32)
    Inline,  // an NTSTATUS, never STATUS_PENDING: no completion exists
    MayPend, // an NTSTATUS, or STATUS_PENDING and the completion later
    Close,   // NdkCloseXxx: STATUS_SUCCESS, or STATUS_PENDING and the close completion
};

struct NdkFunction {
    std::string_view name;
    NDK_OBJECT_TYPE object; // the dispatch table (the first, for a shared name)
    Returns returns;
    bool injectable;        // a provider under test may be made to fail it (knob `fail`)
    std::array<NTSTATUS, 10> documented; // besides SUCCESS (and PENDING for MayPend); 0 ends

    constexpr bool documents(NTSTATUS status) const
    {
        if (status == STATUS_SUCCESS || (status == STATUS_PENDING && returns != Returns::Inline))
            return true;
        for (NTSTATUS s : documented)
            if (s != STATUS_SUCCESS && s == status)
                return true;
        return false;
    }
};

namespace function_table {
using enum Returns;
constexpr NDK_OBJECT_TYPE kAdapter = NdkObjectTypeAdapter, kCq = NdkObjectTypeCq,
                          kPd = NdkObjectTypePd, kMr = NdkObjectTypeMr, kMw = NdkObjectTypeMw,
                          kSrq = NdkObjectTypeSrq, kQp = NdkObjectTypeQp,
                          kConnector = NdkObjectTypeConnector,
                          kListener = NdkObjectTypeListener,
                          kSharedEndpoint = NdkObjectTypeSharedEndpoint;
constexpr NTSTATUS kResources = STATUS_INSUFFICIENT_RESOURCES,
                   kParameter = STATUS_INVALID_PARAMETER, kTooSmall = STATUS_BUFFER_TOO_SMALL,
                   kConnInvalid = STATUS_CONNECTION_INVALID, kAborted = STATUS_CONNECTION_ABORTED,
                   kTimeout = STATUS_IO_TIMEOUT;

inline constexpr NdkFunction kFunctions[] = {
    // adapter (digest 1.1)
    {"NdkQueryExtension", kAdapter, Inline, true, {STATUS_NOT_SUPPORTED}},
    {"NdkQueryAdapterInfo", kAdapter, Inline, true, {kTooSmall}},
    {"NdkCreateCq", kAdapter, MayPend, true, {kParameter, kResources}},
    {"NdkCreatePd", kAdapter, MayPend, true, {kResources}},
    {"NdkCreateSharedEndpoint", kAdapter, MayPend, true,
     {kResources, STATUS_SHARING_VIOLATION, STATUS_TOO_MANY_ADDRESSES, STATUS_INVALID_ADDRESS}},
    {"NdkCreateConnector", kAdapter, MayPend, true, {kResources}},
    {"NdkCreateListener", kAdapter, MayPend, true, {kResources}},
    {"NdkBuildLAM", kAdapter, MayPend, true, {kParameter, kResources, kTooSmall}},
    {"NdkReleaseLAM", kAdapter, Nothing, false, {}},
    // CQ (1.3)
    {"NdkCloseCq", kCq, Close, false, {}},
    {"NdkResizeCq", kCq, MayPend, true, {kParameter, kResources}},
    {"NdkArmCq", kCq, Nothing, false, {}},
    {"NdkGetCqResults", kCq, Nothing, false, {}},
    {"NdkControlCqInterruptModeration", kCq, Inline, true,
     {kResources, STATUS_NOT_SUPPORTED, STATUS_INVALID_PARAMETER_MIX}},
    {"NdkGetCqResultsEx", kCq, Nothing, false, {}},
    // PD (1.2)
    {"NdkClosePd", kPd, Close, false, {}},
    {"NdkCreateMr", kPd, MayPend, true, {kResources}},
    {"NdkCreateMw", kPd, MayPend, true, {kResources}},
    {"NdkCreateSrq", kPd, MayPend, true, {kParameter, kResources}},
    {"NdkCreateQp", kPd, MayPend, true, {kParameter, kResources}},
    {"NdkCreateQpWithSrq", kPd, MayPend, true, {kParameter, kResources}},
    {"NdkGetPrivilegedMemoryRegionToken", kPd, Nothing, false, {}},
    // MR, MW (1.4, 1.5)
    {"NdkCloseMr", kMr, Close, false, {}},
    {"NdkRegisterMr", kMr, MayPend, true, {kParameter, kResources}},
    {"NdkDeregisterMr", kMr, MayPend, true, {}},
    {"NdkInitializeFastRegisterMr", kMr, MayPend, true, {STATUS_IMPLEMENTATION_LIMIT}},
    {"NdkGetRemoteTokenFromMr", kMr, Nothing, false, {}},
    {"NdkGetLocalTokenFromMr", kMr, Nothing, false, {}},
    {"NdkCloseMw", kMw, Close, false, {}},
    {"NdkGetRemoteTokenFromMw", kMw, Nothing, false, {}},
    // SRQ (1.6)
    {"NdkCloseSrq", kSrq, Close, false, {}},
    {"NdkModifySrq", kSrq, MayPend, true, {kParameter}},
    {"NdkSrqReceive", kSrq, Inline, true, {}},
    // QP (1.7): posts fail inline, their outcome comes through the CQ
    {"NdkCloseQp", kQp, Close, false, {}},
    {"NdkFlush", kQp, Nothing, false, {}},
    {"NdkSend", kQp, Inline, true, {kConnInvalid}},
    {"NdkReceive", kQp, Inline, true, {}},
    {"NdkBind", kQp, Inline, true, {kConnInvalid, STATUS_ACCESS_VIOLATION}},
    {"NdkFastRegister", kQp, Inline, true, {kConnInvalid, STATUS_ACCESS_VIOLATION}},
    {"NdkInvalidate", kQp, Inline, true, {kConnInvalid}},
    {"NdkRead", kQp, Inline, true, {kConnInvalid, STATUS_REMOTE_RESOURCES}},
    {"NdkWrite", kQp, Inline, true, {kConnInvalid}},
    {"NdkSendAndInvalidate", kQp, Inline, true, {kConnInvalid}},
    // connector (1.8)
    {"NdkCloseConnector", kConnector, Close, false, {}},
    {"NdkConnect", kConnector, MayPend, true,
     {kResources, STATUS_NETWORK_UNREACHABLE, STATUS_HOST_UNREACHABLE, STATUS_CONNECTION_REFUSED,
      kTimeout, STATUS_SHARING_VIOLATION, STATUS_INVALID_ADDRESS, STATUS_TOO_MANY_ADDRESSES,
      STATUS_ADDRESS_ALREADY_EXISTS}},
    {"NdkConnectWithSharedEndpoint", kConnector, MayPend, true,
     {kResources, STATUS_NETWORK_UNREACHABLE, STATUS_HOST_UNREACHABLE, STATUS_CONNECTION_REFUSED,
      kTimeout, STATUS_ADDRESS_ALREADY_EXISTS}},
    {"NdkCompleteConnect", kConnector, MayPend, true, {kConnInvalid, kAborted, kTimeout}},
    {"NdkAccept", kConnector, MayPend, true, {kAborted, kTimeout}},
    {"NdkReject", kConnector, Inline, true, {kAborted}},
    {"NdkGetConnectionData", kConnector, Inline, true, {kTooSmall}},
    {"NdkGetLocalAddress", kConnector, Inline, false, {kTooSmall}}, // also listener, endpoint
    {"NdkGetPeerAddress", kConnector, Inline, false, {kTooSmall}},
    {"NdkDisconnect", kConnector, MayPend, true, {kTimeout}},
    {"NdkCompleteConnectEx", kConnector, MayPend, true, {kConnInvalid, kAborted, kTimeout}},
    {"NdkAcceptEx", kConnector, MayPend, true, {kAborted, kTimeout}},
    // listener, shared endpoint (1.9, 1.10)
    {"NdkCloseListener", kListener, Close, false, {}},
    {"NdkListen", kListener, MayPend, true,
     {kResources, STATUS_SHARING_VIOLATION, STATUS_INVALID_ADDRESS, STATUS_TOO_MANY_ADDRESSES}},
    {"NdkControlConnectEvents", kListener, Nothing, false, {}},
    {"NdkCloseSharedEndpoint", kSharedEndpoint, Close, false, {}},
};
} // namespace function_table

using function_table::kFunctions;

// The row of `name`, or nullptr for a name that is no NDK dispatch function.
constexpr const NdkFunction *find_function(std::string_view name)
{
    for (const NdkFunction &f : kFunctions)
        if (f.name == name)
            return &f;
    return nullptr;
}

// Whether `name` is a row of kFunctions.  Separate from find_function because comparing a
// row's address with nullptr is not a constant expression under -fsanitize=undefined (GCC).
constexpr bool is_function(std::string_view name)
{
    for (const NdkFunction &f : kFunctions)
        if (f.name == name)
            return true;
    return false;
}

} // namespace ndk::kit
