"""ndk.Status: every NTSTATUS / NDIS_STATUS / ND_* value the interface names.

Built from the C++ status table (core/src/status.cpp), so a status is spelled the same in C++,
in Python and in reports.  Members drop the STATUS_ / NDIS_STATUS_ prefix (Status.PENDING,
Status.BAD_VERSION); str() gives the full NDK name with the value: STATUS_PENDING (0x00000103).
Values not in the table still convert, and print as their hex value.
"""

import enum

from . import _core


def _members():
    members = {}
    for value, full_name in _core.status_table():
        short = full_name.split("STATUS_", 1)[1]
        members.setdefault(short, value & 0xFFFFFFFF)
    return members


_FULL_NAMES = {value & 0xFFFFFFFF: name for value, name in _core.status_table()}


Status = enum.IntEnum("Status", _members(), module=__name__)
Status.__doc__ = "An NTSTATUS value (unsigned 32-bit, as the NDK reference prints it)."


def _missing_(cls, value):
    if isinstance(value, int) and -0x80000000 <= value < 0:
        return cls(value & 0xFFFFFFFF)  # a signed NTSTATUS as C returns it
    if not isinstance(value, int) or not 0 <= value <= 0xFFFFFFFF:
        return None
    member = int.__new__(cls, value)
    member._name_ = f"0x{value:08X}"
    member._value_ = value
    return member


def _full_name(self):
    """The NDK name: STATUS_PENDING, NDIS_STATUS_BAD_VERSION, or the hex value."""
    return _FULL_NAMES.get(int(self), f"0x{int(self):08X}")


def _is_error(self):
    """True for error-severity values (the top two bits set)."""
    return (int(self) >> 30) == 3


Status._missing_ = classmethod(_missing_)
Status.full_name = property(_full_name)
Status.is_error = property(_is_error)
Status.__str__ = lambda self: f"{self.full_name} (0x{int(self):08X})"
Status.__repr__ = lambda self: f"<Status.{self.name}: 0x{int(self):08X}>"
Status.__format__ = lambda self, spec: format(str(self), spec)
