"""ndk.Status and the enumerations come from the C header's values, and print as NDK does."""

import pytest

import ndk
from ndk import Status, _core


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


# The enumerations are static classes (so type checkers know their members); the binding's
# tables, built from the C header, are the source they must stay equal to.

def test_status_class_matches_the_binding_table():
    table = {value & 0xFFFFFFFF: name for value, name in _core.status_table()}
    for value, full_name in table.items():
        member = Status(value)
        assert member.name in Status.__members__, f"{full_name} missing from ndk.Status"
        assert member.full_name == full_name and int(member) == value
        assert full_name.endswith("STATUS_" + member.name)
    extra = {name for name, member in Status.__members__.items() if int(member) not in table}
    assert not extra, f"ndk.Status members not in the binding's table: {sorted(extra)}"
    assert len(Status.__members__) == len(table)


@pytest.mark.parametrize("name", sorted(_core.constant_tables()))
def test_enum_class_matches_the_binding_table(name):
    table = dict(_core.constant_tables()[name])
    enum_class = getattr(ndk, name)
    assert {key: int(member) for key, member in enum_class.__members__.items()} == table


def test_every_binding_table_has_a_class():
    assert sorted(_core.constant_tables()) == sorted(
        ["ObjectType", "OpType", "CqNotify", "RdmaTechnology", "Oid", "MrFlag", "OpFlag",
         "AdapterFlag", "NdStatus", "NdResultStatus"])


def test_enums_print_their_names_and_format_as_numbers():
    assert str(ndk.OpType.SEND) == f"{ndk.OpType.SEND}" == "OpType.SEND"
    assert f"{ndk.OpType.SEND:d}" == "2" and f"{ndk.Oid.NDK_STATISTICS:#x}" == "0xfc040202"
    flags = ndk.MrFlag.ALLOW_LOCAL_WRITE | ndk.MrFlag.RDMA_READ_SINK
    assert str(flags) == "MrFlag.ALLOW_LOCAL_WRITE|RDMA_READ_SINK" and f"{flags:#x}" == "0x9"
    status = Status.PENDING
    assert f"{status}" == str(status) == "STATUS_PENDING (0x00000103)"
    assert f"{status:#x}" == "0x103" and f"{status:d}" == "259" and f"{status:08X}" == "00000103"
    assert f"{status:>30}" == "   STATUS_PENDING (0x00000103)"
    assert f"{Status(0xC0DE0001):#x}" == "0xc0de0001"


def _result_with(cls, status):
    """A result of class ``cls`` holding ``status``, built as unpickling builds it."""
    result = cls.__new__(cls)
    fields = (int(status), 0, None, None)
    result.__setstate__(fields + ((int(ndk.OpType.SEND), 0, 0) if cls is ndk.ResultEx else ()))
    return result


@pytest.mark.parametrize("cls", [ndk.Result, ndk.ResultEx])
def test_nd_status_of_results(cls):
    # core/include/ndk/nd_status.hpp: the ND code of the same number (digest 4.1), the v1
    # aliases as aliases, ND_INTERNAL_ERROR where ND has no code (docs/semantics.md ND-NO-TWIN)
    assert _result_with(cls, Status.REMOTE_RESOURCES).nd_status is ndk.NdStatus.REMOTE_ERROR
    assert _result_with(cls, Status.CANCELLED).nd_status is ndk.NdStatus.CANCELED
    assert _result_with(cls, Status.DATA_OVERRUN).nd_status is ndk.NdStatus.LOCAL_LENGTH
    assert ndk.NdStatus.INVALIDATION_ERROR is ndk.NdStatus.INVALID_DEVICE_REQUEST
    assert _result_with(cls, Status.IO_TIMEOUT).nd_status is ndk.NdStatus.IO_TIMEOUT
    for no_twin in (Status.CONNECTION_RESET, Status.BAD_VERSION, 0xC0DE0001):
        assert _result_with(cls, no_twin).nd_status is ndk.NdStatus.INTERNAL_ERROR
    assert "nd_status" not in cls._fields  # derived from status: not a field of the value


def _result_ex(status, op_type, bytes_transferred=0):
    result = ndk.ResultEx.__new__(ndk.ResultEx)
    result.__setstate__((int(status), bytes_transferred, None, None, int(op_type), 0, 0))
    return result


def test_nd_result_rows_of_statuses():
    # core/include/ndk/nd_result.hpp: the seed's ten rows (docs/semantics.md ND-RESULT-V1-ROWS)
    rows = ndk.NdResultStatus
    expected = {
        Status.SUCCESS: rows.SUCCESS, Status.DATA_OVERRUN: rows.LOCAL_LENGTH,
        Status.BUFFER_OVERFLOW: rows.BUFFER_OVERFLOW,
        Status.ACCESS_VIOLATION: rows.ACCESS_VIOLATION, Status.CANCELLED: rows.CANCELED,
        Status.INVALID_PARAMETER: rows.INVALID_REQUEST,
        Status.INVALID_PARAMETER_3: rows.INVALID_REQUEST,
        Status.INVALID_PARAMETER_MIX: rows.INVALID_REQUEST,
        Status.IO_TIMEOUT: rows.TIMEOUT, Status.REMOTE_RESOURCES: rows.REMOTE_ERROR,
        Status.INVALID_DEVICE_REQUEST: rows.INVALIDATION_ERROR,
        Status.CONNECTION_ABORTED: rows.FAILURE, Status.INSUFFICIENT_RESOURCES: rows.FAILURE,
        Status.UNSUCCESSFUL: rows.FAILURE, 0xC0DE0001: rows.FAILURE,
    }
    for status, row in expected.items():
        assert _result_ex(status, ndk.OpType.RECEIVE).nd_result().status is row, status
    assert len(rows) == 10 and set(expected.values()) == set(rows)
    assert int(rows.TIMEOUT) == 0x102  # STATUS_TIMEOUT's number, not STATUS_IO_TIMEOUT's


def test_nd_result_bytes_transferred_per_operation():
    # The seed: BytesTransferred applies to Send, SendAndInvalidate, Receive, Read and Write.
    receive = _result_ex(Status.SUCCESS, ndk.OpType.RECEIVE, 100)
    assert receive.nd_result() == ndk.NdResult(ndk.NdResultStatus.SUCCESS, 100)
    for op in (ndk.OpType.SEND, ndk.OpType.READ, ndk.OpType.WRITE):
        done = _result_ex(Status.SUCCESS, op)
        assert done.nd_result(posted_length=4096).bytes_transferred == 4096
        with pytest.raises(ValueError, match="posted_length"):
            done.nd_result()
        failed = _result_ex(Status.ACCESS_VIOLATION, op)
        assert failed.nd_result() == ndk.NdResult(ndk.NdResultStatus.ACCESS_VIOLATION, 0)
    for op in (ndk.OpType.BIND, ndk.OpType.FAST_REGISTER, ndk.OpType.INVALIDATE):
        assert _result_ex(Status.SUCCESS, op).nd_result(posted_length=8).bytes_transferred == 0
