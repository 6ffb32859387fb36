"""ndk.Status and the enumerations come from the C header's values, and print as NDK does."""

import ndk
from ndk import Status


def test_status_prints_full_name_and_hex():
    assert str(Status(0x103)) == "STATUS_PENDING (0x00000103)"
    assert str(Status.BAD_VERSION) == "NDIS_STATUS_BAD_VERSION (0xC0010004)"


def test_status_accepts_signed_ntstatus_and_unknown_values():
    assert Status(-0x3FFFFFF3) == Status.INVALID_PARAMETER  # 0xC000000D as a signed int32
    unknown = Status(0xC0DE0001)
    assert int(unknown) == 0xC0DE0001 and str(unknown) == "0xC0DE0001 (0xC0DE0001)"


def test_status_values_are_the_documented_ones():
    # digest 1.0 and 4.1
    assert Status.INVALID_PARAMETER == 0xC000000D
    assert Status.BUFFER_OVERFLOW == 0x80000005
    assert Status.IMPLEMENTATION_LIMIT == 0xC000042B
    assert Status.CANCELLED == 0xC0000120
    assert not Status.BUFFER_OVERFLOW.is_error and Status.BUFFER_TOO_SMALL.is_error


def test_flags_and_types_have_header_values():
    # digest 2.2, 2.5, 2.6, 2.1, 3.7
    assert ndk.MrFlag.ALLOW_REMOTE_WRITE == 0x5
    assert ndk.OpFlag.RDMA_READ_LOCAL_INVALIDATE == 0x100 and ndk.OpFlag.DEFER == 0x200
    assert ndk.OpType.RECEIVE_AND_INVALIDATE == 0x8001
    assert ndk.AdapterFlag.LOOPBACK_CONNECTIONS_SUPPORTED == 0x10000
    assert ndk.Oid.NDK_CONNECTIONS == 0xFC040203
    assert ndk.CqNotify.SOLICITED == 2
    assert ndk.ObjectType.SRQ == 10
