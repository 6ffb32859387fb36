"""Flags and enumerations of the NDK interface, with the values of core/include/ndk/ndkpi.h.

The values are written out here so that type checkers know the members;
tests/binding/test_status_and_constants.py keeps them equal to the binding's tables (one
source: the C header).  Members drop the common prefix: MrFlag.ALLOW_LOCAL_WRITE is
NDK_MR_FLAG_ALLOW_LOCAL_WRITE.  str() is the member's name (OpType.SEND, or
MrFlag.ALLOW_LOCAL_WRITE|RDMA_READ_SINK for a combination); a numeric format spec gives the
number (f"{flags:#x}").
"""

import enum
from typing import NamedTuple

from ._status import format_member


class _Enum(enum.IntEnum):
    """An NDK enumeration: str() names the member, f"{member:d}" gives the number."""

    __str__ = enum.Enum.__str__

    def __format__(self, spec: str) -> str:
        return format_member(self, spec)


class _Flag(enum.IntFlag):
    """A set of NDK flags: str() names the members, f"{flags:#x}" gives the number."""

    __str__ = enum.Flag.__str__

    def __format__(self, spec: str) -> str:
        return format_member(self, spec)


class ObjectType(_Enum):
    """NDK_OBJECT_TYPE: the header's ObjectType of every NDK object."""

    UNDEFINED = 0
    ADAPTER = 1
    QP = 2
    CQ = 3
    MR = 4
    MW = 5
    PD = 6
    SHARED_ENDPOINT = 7
    CONNECTOR = 8
    LISTENER = 9
    SRQ = 10


class OpType(_Enum):
    """NDK_OP_TYPE_*: the Type of an NDK_RESULT_EX."""

    RECEIVE = 0x1
    SEND = 0x2
    FAST_REGISTER = 0x4
    BIND = 0x8
    INVALIDATE = 0x10
    READ = 0x20
    WRITE = 0x40
    RECEIVE_AND_INVALIDATE = 0x8001


class CqNotify(_Enum):
    """NDK_CQ_NOTIFY_*: what an arm waits for."""

    ERRORS = 0
    ANY = 1
    SOLICITED = 2


class RdmaTechnology(_Enum):
    """NDK_RDMA_TECHNOLOGY: an adapter's RdmaTechnology."""

    UNDEFINED = 0
    IWARP = 1
    INFINIBAND = 2
    ROCE = 3
    ROCEV2 = 4


class Oid(_Enum):
    """The NDK OIDs (OID_NDK_*) of adapter.query_oid / set_oid."""

    NDK_SET_STATE = 0xFC040201
    NDK_STATISTICS = 0xFC040202
    NDK_CONNECTIONS = 0xFC040203
    NDK_LOCAL_ENDPOINTS = 0xFC040204


class MrFlag(_Flag):
    """NDK_MR_FLAG_*: access rights of a memory registration (ALLOW_REMOTE_WRITE includes
    ALLOW_LOCAL_WRITE, as in the header)."""

    ALLOW_LOCAL_READ = 0x0
    ALLOW_LOCAL_WRITE = 0x1
    ALLOW_REMOTE_READ = 0x2
    ALLOW_REMOTE_WRITE = 0x5
    RDMA_READ_SINK = 0x8


class OpFlag(_Flag):
    """NDK_OP_FLAG_*: flags of a work request."""

    SILENT_SUCCESS = 0x1
    READ_FENCE = 0x2
    SEND_AND_SOLICIT_EVENT = 0x4
    ALLOW_REMOTE_READ = 0x8
    ALLOW_LOCAL_WRITE = 0x10
    ALLOW_REMOTE_WRITE = 0x30
    INLINE = 0x40
    RDMA_READ_SINK = 0x80
    RDMA_READ_LOCAL_INVALIDATE = 0x100
    DEFER = 0x200


class AdapterFlag(_Flag):
    """NDK_ADAPTER_FLAG_*: an adapter's AdapterFlags."""

    IN_ORDER_DMA_SUPPORTED = 0x1
    RDMA_READ_SINK_NOT_REQUIRED = 0x2
    CQ_INTERRUPT_MODERATION_SUPPORTED = 0x4
    MULTI_ENGINE_SUPPORTED = 0x8
    RDMA_READ_LOCAL_INVALIDATE_SUPPORTED = 0x10
    CQ_RESIZE_SUPPORTED = 0x100
    LOOPBACK_CONNECTIONS_SUPPORTED = 0x10000


class NdStatus(_Enum):
    """ND_*: the user-mode ND SPI's status codes (core/include/ndk/nd_status.hpp), the type of
    Result.nd_status.  Each equals the NTSTATUS of the same name (digest 4.1), so values are
    unsigned like ndk.Status's.  LOCAL_LENGTH and INVALIDATION_ERROR are no codes of their own:
    they are ndspi.h's v1 aliases of DATA_OVERRUN and INVALID_DEVICE_REQUEST, here aliases of
    those members (NdStatus.LOCAL_LENGTH is NdStatus.DATA_OVERRUN)."""

    SUCCESS = 0x00000000
    TIMEOUT = 0x00000102
    PENDING = 0x00000103
    BUFFER_OVERFLOW = 0x80000005
    DEVICE_BUSY = 0x80000011
    NO_MORE_ENTRIES = 0x8000001A
    UNSUCCESSFUL = 0xC0000001
    ACCESS_VIOLATION = 0xC0000005
    INVALID_HANDLE = 0xC0000008
    INVALID_PARAMETER = 0xC000000D
    INVALID_DEVICE_REQUEST = 0xC0000010
    NO_MEMORY = 0xC0000017
    INVALID_PARAMETER_MIX = 0xC0000030
    DATA_OVERRUN = 0xC000003C
    SHARING_VIOLATION = 0xC0000043
    INSUFFICIENT_RESOURCES = 0xC000009A
    DEVICE_NOT_READY = 0xC00000A3
    IO_TIMEOUT = 0xC00000B5
    NOT_SUPPORTED = 0xC00000BB
    INTERNAL_ERROR = 0xC00000E5
    INVALID_PARAMETER_1 = 0xC00000EF
    INVALID_PARAMETER_2 = 0xC00000F0
    INVALID_PARAMETER_3 = 0xC00000F1
    INVALID_PARAMETER_4 = 0xC00000F2
    INVALID_PARAMETER_5 = 0xC00000F3
    INVALID_PARAMETER_6 = 0xC00000F4
    INVALID_PARAMETER_7 = 0xC00000F5
    INVALID_PARAMETER_8 = 0xC00000F6
    INVALID_PARAMETER_9 = 0xC00000F7
    INVALID_PARAMETER_10 = 0xC00000F8
    CANCELED = 0xC0000120
    REMOTE_ERROR = 0xC000013D
    INVALID_ADDRESS = 0xC0000141
    INVALID_DEVICE_STATE = 0xC0000184
    INVALID_BUFFER_SIZE = 0xC0000206
    TOO_MANY_ADDRESSES = 0xC0000209
    ADDRESS_ALREADY_EXISTS = 0xC000020A
    CONNECTION_REFUSED = 0xC0000236
    CONNECTION_INVALID = 0xC000023A
    CONNECTION_ACTIVE = 0xC000023B
    NETWORK_UNREACHABLE = 0xC000023C
    HOST_UNREACHABLE = 0xC000023D
    CONNECTION_ABORTED = 0xC0000241
    DEVICE_REMOVED = 0xC00002B6
    # the v1 aliases (digest 4.1: ndspi.h lines 1338-1341)
    LOCAL_LENGTH = 0xC000003C
    INVALIDATION_ERROR = 0xC0000010


class NdResultStatus(_Enum):
    """The ten statuses of the v1 SPI's ND_RESULT (the seed's table; core/include/ndk/
    nd_result.hpp), the type of NdResult.status.  INVALID_REQUEST and FAILURE have no value in
    the digest: they take those of ND_INVALID_PARAMETER and ND_UNSUCCESSFUL (docs/semantics.md
    ND-RESULT-V1-ROWS).  TIMEOUT is STATUS_TIMEOUT's 0x102, a request that timed out."""

    SUCCESS = 0x00000000
    LOCAL_LENGTH = 0xC000003C
    BUFFER_OVERFLOW = 0x80000005
    ACCESS_VIOLATION = 0xC0000005
    CANCELED = 0xC0000120
    INVALID_REQUEST = 0xC000000D
    FAILURE = 0xC0000001
    TIMEOUT = 0x00000102
    REMOTE_ERROR = 0xC000013D
    INVALIDATION_ERROR = 0xC0000010


class NdResult(NamedTuple):
    """ND_RESULT { HRESULT Status; SIZE_T BytesTransferred; } (the v1 SPI; the seed): what an ND
    consumer would have read for an NDK completion (ResultEx.nd_result)."""

    status: NdResultStatus
    bytes_transferred: int


__all__ = ["ObjectType", "OpType", "CqNotify", "RdmaTechnology", "Oid", "MrFlag", "OpFlag",
           "AdapterFlag", "NdStatus", "NdResultStatus", "NdResult"]
