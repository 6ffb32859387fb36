// ND_RESULT: the user-mode ND SPI's (v1) completion result, and what an ND consumer of the same
// provider would have read for an NDK completion.
//
// The seed (the ND_RESULT page of the v1 SPI) gives the structure, { HRESULT Status; SIZE_T
// BytesTransferred; }, says BytesTransferred "applies to Send, SendAndInvalidate, Receive, Read,
// and Write requests, and is undefined for other requests", and lists ten statuses.  The digest
// (4.1, 4.2) gives no layout for ND_RESULT and its status table has no ND_INVALID_REQUEST nor
// ND_FAILURE: where the two differ this header follows the seed, and says so here and in
// docs/semantics.md (ND-RESULT-V1-ROWS, ND-RESULT-BYTES).
//
// The ND_RESULT status table (the seed's ten rows; values: digest 4.1, ndkpi.h):
//
//   ND_SUCCESS             0x00000000  the operation succeeded
//   ND_LOCAL_LENGTH        0xC000003C  the SGEs of a Send, Read or Write referenced more data
//                                      than the adapter can send (v1 alias of ND_DATA_OVERRUN)
//   ND_BUFFER_OVERFLOW     0x80000005  an incoming Send exceeded the receive's buffer
//   ND_ACCESS_VIOLATION    0xC0000005  the SGEs referenced registered memory that is not valid
//   ND_CANCELED            0xC0000120  the request was canceled (generally after one failed)
//   ND_INVALID_REQUEST     0xC000000D  the request was improperly formatted (no value in the
//                                      digest: ND_INVALID_PARAMETER's, ND-RESULT-V1-ROWS)
//   ND_FAILURE             0xC0000001  the endpoint failed while processing the request (no
//                                      value in the digest: ND_UNSUCCESSFUL's)
//   ND_TIMEOUT             0x00000102  the request timed out (connection or remote failure);
//                                      STATUS_TIMEOUT, a success code in NTSTATUS terms
//   ND_REMOTE_ERROR        0xC000013D  the request caused an error on the remote endpoint
//   ND_INVALIDATION_ERROR  0xC0000010  an Invalidate or SendAndInvalidate could not invalidate
//                                      (v1 alias of ND_INVALID_DEVICE_REQUEST)
//
// Python: ResultEx.nd_result(posted_length) -> ndk.NdResult, its status an
// ndk.NdResultStatus.  (Result.nd_status / ResultEx.nd_status, in nd_status.hpp, is the v2 view:
// the ND code of the same number.)
#pragma once

#include "ndk/ndkpi.h"

#include <cstdint>
#include <string_view>

typedef int32_t HRESULT; // Windows' HRESULT: 32 bits, an ND code is one of Facility 0

// Two rows of the seed's table that neither the digest nor ND v2's ndstatus.mc gives a value
// (ndkpi.h has the digest's ND_* codes and its two v1 aliases): this header's choice,
// docs/semantics.md ND-RESULT-V1-ROWS, the code of the same meaning ("improperly formatted" is
// an invalid parameter, "an error while processing" the generic failure).
#define ND_INVALID_REQUEST ND_INVALID_PARAMETER
#define ND_FAILURE ND_UNSUCCESSFUL

typedef struct _ND_RESULT {
    HRESULT Status;
    SIZE_T BytesTransferred;
} ND_RESULT;

static_assert(ND_INVALID_REQUEST == NDK_STATUS(0xC000000D));
static_assert(ND_FAILURE == NDK_STATUS(0xC0000001));
static_assert(ND_TIMEOUT == NDK_STATUS(0x00000102));

namespace ndk {

struct NdResultRow {
    HRESULT value;
    std::string_view name; // "ND_LOCAL_LENGTH"
};

#define NDK_ND_RESULT_ROW(code) NdResultRow{code, #code}
// The seed's table, in its order.
inline constexpr NdResultRow kNdResultRows[] = {
    NDK_ND_RESULT_ROW(ND_SUCCESS),          NDK_ND_RESULT_ROW(ND_LOCAL_LENGTH),
    NDK_ND_RESULT_ROW(ND_BUFFER_OVERFLOW),  NDK_ND_RESULT_ROW(ND_ACCESS_VIOLATION),
    NDK_ND_RESULT_ROW(ND_CANCELED),         NDK_ND_RESULT_ROW(ND_INVALID_REQUEST),
    NDK_ND_RESULT_ROW(ND_FAILURE),          NDK_ND_RESULT_ROW(ND_TIMEOUT),
    NDK_ND_RESULT_ROW(ND_REMOTE_ERROR),     NDK_ND_RESULT_ROW(ND_INVALIDATION_ERROR),
};
#undef NDK_ND_RESULT_ROW
static_assert(std::size(kNdResultRows) == 10);

// NDK_RESULT.Status -> the row of the seed's table an ND consumer would have read.  Each row
// whose code has an NTSTATUS twin takes that status (digest 4.1: ND_REMOTE_ERROR has the number
// of STATUS_REMOTE_RESOURCES); a request that timed out (STATUS_IO_TIMEOUT: the retries or the
// RNR timer ran out, the connection or the peer failed) is the seed's ND_TIMEOUT row; every
// invalid-parameter status is ND_INVALID_REQUEST; any other failure (a connection that failed,
// a resource, a provider's own code) is ND_FAILURE, "the endpoint experienced an error while
// processing this request" (docs/semantics.md ND-RESULT-V1-ROWS).
constexpr HRESULT nd_result_status_of(NTSTATUS ndk_status) noexcept
{
    switch (ndk_status) {
    case STATUS_SUCCESS: return ND_SUCCESS;
    case STATUS_DATA_OVERRUN: return ND_LOCAL_LENGTH;
    case STATUS_BUFFER_OVERFLOW: return ND_BUFFER_OVERFLOW;
    case STATUS_ACCESS_VIOLATION: return ND_ACCESS_VIOLATION;
    case STATUS_CANCELLED: return ND_CANCELED;
    case STATUS_IO_TIMEOUT:
    case STATUS_TIMEOUT: return ND_TIMEOUT;
    case STATUS_REMOTE_RESOURCES: return ND_REMOTE_ERROR;
    case STATUS_INVALID_DEVICE_REQUEST: return ND_INVALIDATION_ERROR;
    default: break;
    }
    if (ndk_status == STATUS_INVALID_PARAMETER || ndk_status == STATUS_INVALID_PARAMETER_MIX ||
        (ndk_status >= STATUS_INVALID_PARAMETER_1 && ndk_status <= STATUS_INVALID_PARAMETER_10))
        return ND_INVALID_REQUEST;
    return ND_FAILURE;
}

constexpr std::string_view nd_result_name(HRESULT row) noexcept
{
    for (const NdResultRow &r : kNdResultRows)
        if (r.value == row)
            return r.name;
    return {};
}

// Whether the seed gives ND_RESULT.BytesTransferred a meaning for this operation: Send (and
// SendAndInvalidate, which NDK reports as NdkOperationTypeSend), Receive (and
// ReceiveAndInvalidate), Read and Write.
constexpr bool nd_result_counts_bytes(NDK_OPERATION_TYPE type) noexcept
{
    switch (type) {
    case NdkOperationTypeSend:
    case NdkOperationTypeReceive:
    case NdkOperationTypeReceiveAndInvalidate:
    case NdkOperationTypeRead:
    case NdkOperationTypeWrite: return true;
    default: return false;
    }
}

// Whether the ND_RESULT of a successful request of this type counts what the consumer posted
// (a Send, Read or Write: NDK_RESULT_EX does not carry it, digest 2.3).
constexpr bool nd_result_counts_posted(NDK_OPERATION_TYPE type) noexcept
{
    return nd_result_counts_bytes(type) && type != NdkOperationTypeReceive &&
           type != NdkOperationTypeReceiveAndInvalidate;
}

// The ND_RESULT of an NDK completion.  A receive's count is NDK's BytesTransferred (digest 2.3:
// valid for receives).  NDK leaves BytesTransferred undefined for the initiator's requests, so
// an ND consumer's count for a Send, Read or Write is what it posted, `posted_length`, when the
// request succeeded, and 0 when it failed; for every other request, where the seed leaves it
// undefined, 0 (docs/semantics.md ND-RESULT-BYTES).
constexpr ND_RESULT nd_result_of(NTSTATUS status, NDK_OPERATION_TYPE type,
                                 ULONG bytes_transferred, SIZE_T posted_length) noexcept
{
    ND_RESULT result{nd_result_status_of(status), 0};
    if (type == NdkOperationTypeReceive || type == NdkOperationTypeReceiveAndInvalidate)
        result.BytesTransferred = bytes_transferred;
    else if (nd_result_counts_posted(type) && status == STATUS_SUCCESS)
        result.BytesTransferred = posted_length;
    return result;
}

} // namespace ndk
