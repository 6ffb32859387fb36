"""NDIS OID requests on an adapter's miniport (digest 3.7), parsed from their raw bytes.

``adapter.query_oid(ndk.Oid.NDK_CONNECTIONS)`` returns an :class:`OidResult`; the layouts are
those of core/include/ndk/ndkpi.h (pinned there by static assertions, LP64):

* every answer starts with NDIS_OBJECT_HEADER {UCHAR Type, UCHAR Revision, USHORT Size};
* OID_NDK_STATISTICS: ULONG Flags at 4, then 30 ULONG64 counters at 8;
* OID_NDK_CONNECTIONS / OID_NDK_LOCAL_ENDPOINTS: ULONG Flags at 4, ULONG Count at 8, BOOLEAN
  "mapped to TCP" at 12, entries at 16 (64 / 36 bytes each);
* SOCKADDR_INET (28 bytes): family in host order (little-endian), port in network order,
  then the IPv4 address at 4 or the IPv6 address at 8.
"""

from __future__ import annotations

import enum
import socket
import struct
from dataclasses import dataclass, field
from typing import NamedTuple, Optional

from . import _display
from ._constants import Oid
from ._status import Status

SOCKADDR_INET_SIZE = 28
ENTRIES_OFFSET = 16
CONNECTION_ENTRY_SIZE = 64
LOCAL_ENDPOINT_ENTRY_SIZE = 36

# NDIS_NDK_PERFORMANCE_COUNTERS, in order (digest 3.7; the bit of each in MissingCounterMask is
# its index).
COUNTER_NAMES = (
    ("Connect", "Accept", "ConnectFailure", "ConnectionError", "ActiveConnection")
    + tuple(f"Reserved{i:02d}" for i in range(1, 21))
    + ("CQError", "RDMAInOctets", "RDMAOutOctets", "RDMAInFrames", "RDMAOutFrames")
)
assert len(COUNTER_NAMES) == 30

OID_NDK_SET_STATE = Oid.NDK_SET_STATE
OID_NDK_STATISTICS = Oid.NDK_STATISTICS
OID_NDK_CONNECTIONS = Oid.NDK_CONNECTIONS
OID_NDK_LOCAL_ENDPOINTS = Oid.NDK_LOCAL_ENDPOINTS


class OidHeader(NamedTuple):
    """NDIS_OBJECT_HEADER."""

    type: int
    revision: int
    size: int


class ConnectionEntry(NamedTuple):
    """NDIS_NDK_CONNECTION_ENTRY: addresses as (host, port), None for an empty SOCKADDR_INET."""

    local: Optional[tuple]
    remote: Optional[tuple]
    user_mode_owner: bool
    owner_pid: int


class LocalEndpointEntry(NamedTuple):
    """NDIS_NDK_LOCAL_ENDPOINT_ENTRY (listener False: a shared endpoint)."""

    local: Optional[tuple]
    user_mode_owner: bool
    listener: bool
    owner_pid: int


def parse_sockaddr_inet(raw: bytes):
    """(host, port) from a SOCKADDR_INET's bytes; None for family 0 or a family not IPv4/6."""
    if len(raw) < SOCKADDR_INET_SIZE:
        raise ValueError(f"a SOCKADDR_INET is {SOCKADDR_INET_SIZE} bytes, got {len(raw)}")
    family, port = struct.unpack_from("<H", raw, 0)[0], struct.unpack_from("!H", raw, 2)[0]
    if family == socket.AF_INET:
        return socket.inet_ntop(socket.AF_INET, raw[4:8]), port
    if family == socket.AF_INET6:
        return socket.inet_ntop(socket.AF_INET6, raw[8:24]), port
    return None


@dataclass
class OidResult:
    """What one OID query returned, and its parsed fields (None where absent).

    status         ndk.Status (SUCCESS, BUFFER_TOO_SHORT, INVALID_OID, ...)
    raw            the bytes the provider wrote (BytesWritten of them)
    bytes_written  BytesWritten;  bytes_needed: BytesNeeded (the size to ask for)
    header         OidHeader(type, revision, size)
    flags          the Flags field
    count, mapped_to_tcp, entries   OID_NDK_CONNECTIONS / OID_NDK_LOCAL_ENDPOINTS: Count, the
                   "mapped to TCP" BOOLEAN, and the entries (ConnectionEntry / LocalEndpointEntry;
                   at most Count, as many as raw holds)
    counters       OID_NDK_STATISTICS: {"Connect": n, ..., "RDMAOutFrames": n}
    """

    oid: int  # an ndk.Oid when it is one of NDK's
    status: Status
    raw: bytes
    bytes_written: int = 0
    bytes_needed: int = 0
    header: Optional[OidHeader] = None
    flags: Optional[int] = None
    count: Optional[int] = None
    mapped_to_tcp: Optional[bool] = None
    entries: list = field(default_factory=list)
    counters: Optional[dict[str, int]] = None

    @classmethod
    def parse(cls, oid, raw, status=Status.SUCCESS, bytes_written=None, bytes_needed=0):
        """An OidResult from the bytes of an answer to ``oid`` (e.g. built by hand)."""
        raw = bytes(raw)
        result = cls(_oid_member(oid), Status(status), raw,
                     len(raw) if bytes_written is None else int(bytes_written), int(bytes_needed))
        if len(raw) >= 4:
            result.header = OidHeader(*struct.unpack_from("<BBH", raw, 0))
        if len(raw) >= 8:
            result.flags = struct.unpack_from("<I", raw, 4)[0]
        if int(oid) == OID_NDK_STATISTICS:
            complete = min(len(COUNTER_NAMES), max(0, (len(raw) - 8) // 8))
            if complete:
                values = struct.unpack_from(f"<{complete}Q", raw, 8)
                result.counters = dict(zip(COUNTER_NAMES, values))
        elif int(oid) in (OID_NDK_CONNECTIONS, OID_NDK_LOCAL_ENDPOINTS):
            if len(raw) >= 12:
                result.count = struct.unpack_from("<I", raw, 8)[0]
            if len(raw) >= 13:
                result.mapped_to_tcp = raw[12] != 0
            result.entries = _entries(int(oid), raw, result.count or 0)
        return result

    # What a reader wants to see: the OID by name and what the answer carries, decoded; the
    # raw bytes only by their count (they stay in .raw).
    def _display_items(self) -> list[tuple[str, object]]:
        items: list[tuple[str, object]] = [("oid", self.oid), ("status", self.status)]
        for name in ("header", "flags", "count", "mapped_to_tcp"):
            if getattr(self, name) is not None:
                items.append((name, getattr(self, name)))
        if self.entries:
            items.append(("entries", self.entries))
        if self.counters is not None:
            items.append(("counters", {name: value for name, value in self.counters.items()
                                       if not name.startswith("Reserved")}))
        items.append(("bytes_written", self.bytes_written))
        if self.bytes_needed:
            items.append(("bytes_needed", self.bytes_needed))
        return items

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={_display_value(value)}"
                          for name, value in self._display_items())
        return f"OidResult({shown})"

    _repr_pretty_ = _display.pretty
    _repr_html_ = _display.html


def _oid_member(oid) -> int:
    try:
        return Oid(int(oid))
    except ValueError:  # an OID NDK does not define stays a number
        return int(oid)


def _display_value(value: object) -> str:
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, int) and not isinstance(value, bool) and value > 0xFFFF:
        return hex(value)  # an OID outside NDK's, as NDIS writes them
    return repr(value)


def _entries(oid: int, raw: bytes, count: int) -> list[ConnectionEntry | LocalEndpointEntry]:
    size = CONNECTION_ENTRY_SIZE if oid == OID_NDK_CONNECTIONS else LOCAL_ENDPOINT_ENTRY_SIZE
    entries: list[ConnectionEntry | LocalEndpointEntry] = []
    for i in range(min(count, max(0, (len(raw) - ENTRIES_OFFSET) // size))):
        entry = raw[ENTRIES_OFFSET + i * size:ENTRIES_OFFSET + (i + 1) * size]
        local = parse_sockaddr_inet(entry[0:28])
        if oid == OID_NDK_CONNECTIONS:
            entries.append(ConnectionEntry(local, parse_sockaddr_inet(entry[28:56]),
                                           entry[56] != 0, struct.unpack_from("<I", entry, 60)[0]))
        else:
            entries.append(LocalEndpointEntry(local, entry[28] != 0, entry[29] != 0,
                                              struct.unpack_from("<I", entry, 32)[0]))
    return entries
