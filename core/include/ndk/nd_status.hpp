// The user-mode ND SPI's completion statuses beside NDK's (digest 4.1, 4.2): every ND_* code,
// the ND_RESULT status table, and the ND equivalent of an NDK completion status
// (NDK_RESULT.Status), so that a scenario or a consumer can say what an ND consumer of the
// same provider would have seen.  The ND_* macros themselves are in ndkpi.h; this header adds
// their names and the mapping.  Python: ndk.NdStatus and Result.nd_status / ResultEx.nd_status.
//
// ND_RESULT.  The digest gives no layout for the user-mode SPI's completion result: it names
// ND2_RESULT only through its status table (digest 4.2, ND docs/IND2CompletionQueue.md) and
// lists none of its fields, nor those of v1's ND_RESULT.  This header therefore declares no
// ND_RESULT structure; it gives what the digest does give, the status column.
//
// The ND_RESULT status table (values: digest 4.1; each ND code is an HRESULT of Facility 0
// equal to its NTSTATUS twin, "map 1 to 1", so one int32_t holds either):
//
//   ND_SUCCESS             0x00000000  STATUS_SUCCESS
//   ND_LOCAL_LENGTH        0xC000003C  no code of its own: v1 alias of ND_DATA_OVERRUN
//   ND_BUFFER_OVERFLOW     0x80000005  STATUS_BUFFER_OVERFLOW
//   ND_ACCESS_VIOLATION    0xC0000005  STATUS_ACCESS_VIOLATION
//   ND_CANCELED            0xC0000120  STATUS_CANCELLED
//   ND_TIMEOUT             0x00000102  STATUS_TIMEOUT (a success code)
//   ND_REMOTE_ERROR        0xC000013D  the number of STATUS_REMOTE_RESOURCES
//   ND_INVALIDATION_ERROR  0xC0000010  no code of its own: v1 alias of ND_INVALID_DEVICE_REQUEST
//
// ND_LOCAL_LENGTH and ND_INVALIDATION_ERROR are not defined in ND v2 as standalone codes: they
// exist only as the v1 aliases at the end of ndspi.h, `#define ND_LOCAL_LENGTH ND_DATA_OVERRUN`
// and `#define ND_INVALIDATION_ERROR ND_INVALID_DEVICE_REQUEST` (digest 4.1, citing ND
// src/ndutil/ndspi.h lines 1338-1341).  Their values are those of the codes they alias.
#pragma once

#include "ndk/ndkpi.h"

#include <string_view>

// The table's values, pinned to the digest's numbers (a wrong macro in ndkpi.h fails here).
static_assert(ND_SUCCESS == NDK_STATUS(0x00000000));
static_assert(ND_LOCAL_LENGTH == NDK_STATUS(0xC000003C) && ND_LOCAL_LENGTH == ND_DATA_OVERRUN);
static_assert(ND_BUFFER_OVERFLOW == NDK_STATUS(0x80000005));
static_assert(ND_ACCESS_VIOLATION == NDK_STATUS(0xC0000005));
static_assert(ND_CANCELED == NDK_STATUS(0xC0000120));
static_assert(ND_TIMEOUT == NDK_STATUS(0x00000102));
static_assert(ND_REMOTE_ERROR == NDK_STATUS(0xC000013D));
static_assert(ND_INVALIDATION_ERROR == NDK_STATUS(0xC0000010) &&
              ND_INVALIDATION_ERROR == ND_INVALID_DEVICE_REQUEST);

namespace ndk {

struct NdCode {
    NTSTATUS value;        // the ND code, which is also its NTSTATUS twin's value
    std::string_view name; // "ND_DATA_OVERRUN"
};

#define NDK_ND_CODE(code) NdCode{code, #code}
// Every ND_* code of digest 4.1, one entry per value, under its ndstatus.mc (v2) name.
inline constexpr NdCode kNdCodes[] = {
    NDK_ND_CODE(ND_SUCCESS),
    NDK_ND_CODE(ND_TIMEOUT),
    NDK_ND_CODE(ND_PENDING),
    NDK_ND_CODE(ND_BUFFER_OVERFLOW),
    NDK_ND_CODE(ND_DEVICE_BUSY),
    NDK_ND_CODE(ND_NO_MORE_ENTRIES),
    NDK_ND_CODE(ND_UNSUCCESSFUL),
    NDK_ND_CODE(ND_ACCESS_VIOLATION),
    NDK_ND_CODE(ND_INVALID_HANDLE),
    NDK_ND_CODE(ND_INVALID_PARAMETER),
    NDK_ND_CODE(ND_INVALID_DEVICE_REQUEST),
    NDK_ND_CODE(ND_NO_MEMORY),
    NDK_ND_CODE(ND_INVALID_PARAMETER_MIX),
    NDK_ND_CODE(ND_DATA_OVERRUN),
    NDK_ND_CODE(ND_SHARING_VIOLATION),
    NDK_ND_CODE(ND_INSUFFICIENT_RESOURCES),
    NDK_ND_CODE(ND_DEVICE_NOT_READY),
    NDK_ND_CODE(ND_IO_TIMEOUT),
    NDK_ND_CODE(ND_NOT_SUPPORTED),
    NDK_ND_CODE(ND_INTERNAL_ERROR),
    NDK_ND_CODE(ND_INVALID_PARAMETER_1),
    NDK_ND_CODE(ND_INVALID_PARAMETER_2),
    NDK_ND_CODE(ND_INVALID_PARAMETER_3),
    NDK_ND_CODE(ND_INVALID_PARAMETER_4),
    NDK_ND_CODE(ND_INVALID_PARAMETER_5),
    NDK_ND_CODE(ND_INVALID_PARAMETER_6),
    NDK_ND_CODE(ND_INVALID_PARAMETER_7),
    NDK_ND_CODE(ND_INVALID_PARAMETER_8),
    NDK_ND_CODE(ND_INVALID_PARAMETER_9),
    NDK_ND_CODE(ND_INVALID_PARAMETER_10),
    NDK_ND_CODE(ND_CANCELED),
    NDK_ND_CODE(ND_REMOTE_ERROR),
    NDK_ND_CODE(ND_INVALID_ADDRESS),
    NDK_ND_CODE(ND_INVALID_DEVICE_STATE),
    NDK_ND_CODE(ND_INVALID_BUFFER_SIZE),
    NDK_ND_CODE(ND_TOO_MANY_ADDRESSES),
    NDK_ND_CODE(ND_ADDRESS_ALREADY_EXISTS),
    NDK_ND_CODE(ND_CONNECTION_REFUSED),
    NDK_ND_CODE(ND_CONNECTION_INVALID),
    NDK_ND_CODE(ND_CONNECTION_ACTIVE),
    NDK_ND_CODE(ND_NETWORK_UNREACHABLE),
    NDK_ND_CODE(ND_HOST_UNREACHABLE),
    NDK_ND_CODE(ND_CONNECTION_ABORTED),
    NDK_ND_CODE(ND_DEVICE_REMOVED),
};
// The two v1 aliases (see the top of this file): second names of codes above, never codes.
inline constexpr NdCode kNdV1Aliases[] = {
    NDK_ND_CODE(ND_LOCAL_LENGTH),
    NDK_ND_CODE(ND_INVALIDATION_ERROR),
};
#undef NDK_ND_CODE

// The ND equivalent of one NDK completion status.
struct NdStatus {
    NTSTATUS value;            // the ND code
    std::string_view name;     // its v2 name, "ND_DATA_OVERRUN"
    std::string_view v1_alias; // "ND_LOCAL_LENGTH" / "ND_INVALIDATION_ERROR", else empty
    bool twin;                 // true: the code has the NDK status's own number (digest 4.1);
                               // false: the NDK status has no ND code (docs/semantics.md
                               // ND-NO-TWIN) and this is ND_INTERNAL_ERROR
};

// NDK_RESULT.Status -> its ND equivalent.  Every ND code equals the NTSTATUS of the same
// number (digest 4.1), so a status with an ND twin maps to it; STATUS_REMOTE_RESOURCES thus
// becomes ND_REMOTE_ERROR, STATUS_IO_TIMEOUT ND_IO_TIMEOUT (not ND_TIMEOUT: docs/semantics.md
// ND-TIMEOUT).  A status no ND code has (STATUS_CONNECTION_RESET, NDIS_STATUS_*, a provider's
// own value) becomes ND_INTERNAL_ERROR, the ND2 completion status every operation type may
// report (digest 4.2): the choice docs/semantics.md records as ND-NO-TWIN.
constexpr NdStatus nd_status_of(NTSTATUS ndk_status) noexcept
{
    NdStatus found{ND_INTERNAL_ERROR, "ND_INTERNAL_ERROR", {}, false};
    for (const NdCode &code : kNdCodes)
        if (code.value == ndk_status)
            found = NdStatus{code.value, code.name, {}, true};
    for (const NdCode &alias : kNdV1Aliases)
        if (alias.value == found.value)
            found.v1_alias = alias.name;
    return found;
}

} // namespace ndk
