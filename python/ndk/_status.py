"""ndk.Status: every NTSTATUS / NDIS_STATUS / ND_* value the interface names.

The values are those of the C++ status table (core/src/status.cpp), written out here so that
type checkers know the members; tests/binding/test_status_and_constants.py keeps the two
equal (every table entry present with its value and name, nothing more).  Members drop the
STATUS_ / NDIS_STATUS_ prefix (Status.PENDING, Status.BAD_VERSION); str() gives the full NDK
name with the value: STATUS_PENDING (0x00000103).  Values not in the table still convert, and
print as their hex value.
"""

from __future__ import annotations

import enum
from typing import Optional

# The presentation types of int's format spec: with one of these, an enum member formats as
# its number (f"{status:#x}", f"{flags:d}"); without (f"{status}", f"{status:>40}"), as str().
_NUMERIC_FORMATS = frozenset("bcdoxXneEfFgG%")


def format_member(member: int, spec: str) -> str:
    """__format__ of the package's enums: the number for a numeric spec, else str()."""
    if spec and spec[-1] in _NUMERIC_FORMATS:
        return int.__format__(int(member), spec)
    return format(str(member), spec)


class Status(enum.IntEnum):
    """An NTSTATUS value (unsigned 32-bit, as the NDK reference prints it)."""

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
    BUFFER_TOO_SMALL = 0xC0000023
    INVALID_PARAMETER_MIX = 0xC0000030
    DATA_OVERRUN = 0xC000003C
    DATA_ERROR = 0xC000003E
    SHARING_VIOLATION = 0xC0000043
    INSUFFICIENT_RESOURCES = 0xC000009A
    DEVICE_NOT_READY = 0xC00000A3
    IO_TIMEOUT = 0xC00000B5
    NOT_SUPPORTED = 0xC00000BB
    BAD_NETWORK_NAME = 0xC00000CC
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
    CONNECTION_IN_USE = 0xC0000108
    CANCELLED = 0xC0000120
    LOCAL_DISCONNECT = 0xC000013B
    REMOTE_DISCONNECT = 0xC000013C
    REMOTE_RESOURCES = 0xC000013D
    INVALID_ADDRESS = 0xC0000141
    INVALID_DEVICE_STATE = 0xC0000184
    INVALID_BUFFER_SIZE = 0xC0000206
    TOO_MANY_ADDRESSES = 0xC0000209
    ADDRESS_ALREADY_EXISTS = 0xC000020A
    CONNECTION_DISCONNECTED = 0xC000020C
    CONNECTION_RESET = 0xC000020D
    CONNECTION_REFUSED = 0xC0000236
    GRACEFUL_DISCONNECT = 0xC0000237
    ADDRESS_ALREADY_ASSOCIATED = 0xC0000238
    CONNECTION_INVALID = 0xC000023A
    CONNECTION_ACTIVE = 0xC000023B
    NETWORK_UNREACHABLE = 0xC000023C
    HOST_UNREACHABLE = 0xC000023D
    REQUEST_ABORTED = 0xC0000240
    CONNECTION_ABORTED = 0xC0000241
    DEVICE_REMOVED = 0xC00002B6
    IMPLEMENTATION_LIMIT = 0xC000042B
    # NDIS_STATUS_* (_NDIS_NAMES below)
    BAD_VERSION = 0xC0010004
    ADAPTER_NOT_READY = 0xC0010011
    INVALID_LENGTH = 0xC0010014
    BUFFER_TOO_SHORT = 0xC0010016
    INVALID_OID = 0xC0010017

    @classmethod
    def _missing_(cls, value: object) -> Optional[Status]:
        if isinstance(value, int) and -0x80000000 <= value < 0:
            return cls(value & 0xFFFFFFFF)  # a signed NTSTATUS as C returns it
        if not isinstance(value, int) or not 0 <= value <= 0xFFFFFFFF:
            return None
        member = int.__new__(cls, value)
        member._name_ = f"0x{value:08X}"
        member._value_ = value
        return member

    @property
    def full_name(self) -> str:
        """The NDK name: STATUS_PENDING, NDIS_STATUS_BAD_VERSION, or the hex value."""
        if self._name_ not in type(self).__members__:
            return self._name_
        return ("NDIS_STATUS_" if self._name_ in _NDIS_NAMES else "STATUS_") + self._name_

    @property
    def is_error(self) -> bool:
        """True for error-severity values (the top two bits set)."""
        return (int(self) >> 30) == 3

    def __str__(self) -> str:
        return f"{self.full_name} (0x{int(self):08X})"

    def __repr__(self) -> str:
        return f"<Status.{self._name_}: 0x{int(self):08X}>"

    def __format__(self, spec: str) -> str:
        return format_member(self, spec)


# The members whose NDK name is NDIS_STATUS_*, not STATUS_*.
_NDIS_NAMES = frozenset({"BAD_VERSION", "ADAPTER_NOT_READY", "INVALID_LENGTH",
                         "BUFFER_TOO_SHORT", "INVALID_OID"})
