"""adapter.query_oid / set_oid and the parsing of OID answers (digest 3.7): hand-built bytes
in the layouts of ndkpi.h, and the negotiation against the soft provider."""

import socket
import struct

import pytest

import ndk
from ndk import Oid, OidResult, Status


def sockaddr_inet(host, port):
    """A SOCKADDR_INET as the C ABI lays it out (28 bytes)."""
    if ":" in host:
        raw = struct.pack("<H", socket.AF_INET6) + struct.pack("!H", port) + b"\0" * 4 + \
            socket.inet_pton(socket.AF_INET6, host) + b"\0" * 4
    else:
        raw = struct.pack("<H", socket.AF_INET) + struct.pack("!H", port) + \
            socket.inet_pton(socket.AF_INET, host)
    return raw.ljust(28, b"\0")


def table(count, mapped, entries):
    head = struct.pack("<BBH", 0x80, 1, 16 + len(entries)) + struct.pack("<II", 0, count)
    return head + bytes([mapped]) + b"\0" * 3 + entries


def test_connections_are_parsed_from_their_layout():
    entry_v4 = sockaddr_inet("192.0.2.1", 445) + sockaddr_inet("192.0.2.2", 50000) + \
        bytes([1]) + b"\0" * 3 + struct.pack("<I", 1234)
    entry_v6 = sockaddr_inet("2001:db8::1", 445) + sockaddr_inet("2001:db8::2", 7) + \
        bytes([0]) + b"\0" * 3 + struct.pack("<I", 0)
    assert len(entry_v4) == len(entry_v6) == 64
    result = OidResult.parse(Oid.NDK_CONNECTIONS, table(2, 1, entry_v4 + entry_v6))
    assert result.header == ndk.OidHeader(0x80, 1, 16 + 128)
    assert (result.flags, result.count, result.mapped_to_tcp) == (0, 2, True)
    assert result.entries == [
        ndk.ConnectionEntry(("192.0.2.1", 445), ("192.0.2.2", 50000), True, 1234),
        ndk.ConnectionEntry(("2001:db8::1", 445), ("2001:db8::2", 7), False, 0),
    ]
    assert result.counters is None


def test_local_endpoints_are_parsed_from_their_layout():
    entry = sockaddr_inet("198.51.100.7", 6000) + bytes([0, 1]) + b"\0" * 2 + \
        struct.pack("<I", 99)
    assert len(entry) == 36
    result = OidResult.parse(Oid.NDK_LOCAL_ENDPOINTS, table(1, 0, entry))
    assert result.mapped_to_tcp is False
    assert result.entries == [ndk.LocalEndpointEntry(("198.51.100.7", 6000), False, True, 99)]


def test_statistics_counters_are_named():
    values = list(range(100, 130))
    raw = struct.pack("<BBHI", 0x80, 1, 248, 0) + struct.pack("<30Q", *values)
    counters = OidResult.parse(Oid.NDK_STATISTICS, raw).counters
    assert len(counters) == 30
    assert counters["Connect"] == 100 and counters["ActiveConnection"] == 104
    assert counters["Reserved01"] == 105 and counters["Reserved20"] == 124
    assert counters["CQError"] == 125 and counters["RDMAOutFrames"] == 129


def test_short_or_odd_answers_parse_without_errors():
    assert OidResult.parse(Oid.NDK_CONNECTIONS, b"").header is None
    truncated = OidResult.parse(Oid.NDK_CONNECTIONS, table(5, 0, b"\x02" * 70))
    assert truncated.count == 5 and len(truncated.entries) == 1  # only whole entries
    empty_family = OidResult.parse(Oid.NDK_LOCAL_ENDPOINTS, table(1, 0, b"\0" * 36))
    assert empty_family.entries[0].local is None
    partial = OidResult.parse(Oid.NDK_STATISTICS, struct.pack("<BBHI", 0x80, 1, 16, 0) + b"\1" * 17)
    assert list(partial.counters) == ["Connect", "Accept"]


def test_query_negotiates_the_buffer_size():
    with ndk.open_adapter("soft") as ad:
        too_short = ad.query_oid(Oid.NDK_STATISTICS, buffer_length=0)
        assert too_short.status == Status.BUFFER_TOO_SHORT
        assert too_short.bytes_needed == 248 and too_short.raw == b""
        result = ad.query_oid(Oid.NDK_STATISTICS)
        assert result.status == Status.SUCCESS and result.bytes_written == 248
        assert result.header == ndk.OidHeader(0x80, 1, 248) and len(result.counters) == 30
        assert ad.query_oid(Oid.NDK_STATISTICS, buffer_length=4096).bytes_written == 248


def test_query_and_set_arguments_and_unknown_oids():
    with ndk.open_adapter("soft") as ad:
        assert ad.has_oids
        with pytest.raises(ValueError):
            ad.query_oid(Oid.NDK_CONNECTIONS, buffer_length=-1)
        with pytest.raises(ValueError):
            ad.query_oid(Oid.NDK_CONNECTIONS, buffer_length=1 << 30)
        with pytest.raises(TypeError):
            ad.query_oid(Oid.NDK_CONNECTIONS, buffer_length="16")
        assert ad.query_oid(0x00010101).status == Status.INVALID_OID
        assert ad.set_oid(Oid.NDK_SET_STATE, b"") == Status.INVALID_LENGTH
        assert ad.set_oid(Oid.NDK_SET_STATE, b"\x01") == Status.SUCCESS
        with pytest.raises(TypeError):
            ad.set_oid(Oid.NDK_SET_STATE, "yes")


def test_connections_of_a_connected_pair_are_listed():
    with ndk.open_adapter("soft") as srv, ndk.open_adapter("soft") as cli:
        a, b = ndk.testing.connect_pair(cli, srv)
        local = b.connector.get_local_address()
        result = srv.query_oid(Oid.NDK_CONNECTIONS)
        assert result.status == Status.SUCCESS and result.count >= 1
        assert result.entries[0].local == local
        assert result.entries[0].remote == a.connector.get_local_address()
        endpoints = srv.query_oid(Oid.NDK_LOCAL_ENDPOINTS)
        assert any(e.listener and e.local == local for e in endpoints.entries)
