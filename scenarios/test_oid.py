"""The NDIS control plane of an NDK miniport: OID_NDK_CONNECTIONS, OID_NDK_LOCAL_ENDPOINTS,
OID_NDK_STATISTICS, OID_NDK_SET_STATE (digest 3.7; docs/semantics.md rows OID-SIZE,
OID-OWNER, OID-COUNTERS).

Each ``open_adapter`` opens an adapter on a miniport of its own, so a query sees exactly the
objects and the traffic of the adapters a scenario opened there.
"""

from __future__ import annotations

import os

import pytest

import ndk
from ndk import MrFlag, Oid, RdmaTechnology, Status
from ndk.testing import OpenAdapter

from ndk.scenario import (CLIENT, expect_closed, SERVER, TIMEOUT, UNOWNED)
from ndk.scenario.completion import wait_until
from ndk.scenario.connection import adapter, adapters  # noqa: F401  (fixtures)
from ndk.scenario.connection import (connections, counters, listening, local_endpoints,
                                     new_connector, start, transfer)
from ndk.scenario.resources import Side, connect_sides, connected_pair
from ndk.scenario.stated import stated

NDIS_OBJECT_TYPE_DEFAULT = 0x80
REVISION_1 = 1
TABLE_HEADER = 16          # FIELD_OFFSET(NDIS_NDK_CONNECTIONS / _LOCAL_ENDPOINTS, entries)
CONNECTION_ENTRY = 64      # sizeof(NDIS_NDK_CONNECTION_ENTRY)
LOCAL_ENDPOINT_ENTRY = 36  # sizeof(NDIS_NDK_LOCAL_ENDPOINT_ENTRY)
STATISTICS_SIZE = 8 + 30 * 8   # sizeof(NDIS_NDK_STATISTICS_INFO)
FRAME_PAYLOAD = 4096       # docs/semantics.md, OID-COUNTERS: one frame per 4096 payload bytes
FRAME_OVERHEAD = 64        # ... and 64 bytes of overhead per frame
RESERVED = [f"Reserved{i:02d}" for i in range(1, 21)]
UNKNOWN_OID = 0xFC0402FF   # in the NDK range, not defined
OID_GEN_SUPPORTED_LIST = 0x00010101


def maps_to_tcp(adapter: ndk.Adapter) -> bool:
    """Whether the adapter's ND connections are TCP connections: on iWARP they are (MPA runs
    on the connection's own TCP stream, RFC 5044), on InfiniBand, RoCE and RoCEv2 there is no
    TCP connection at all.  The adapter says which it is (NDK_ADAPTER_INFO.RdmaTechnology,
    digest 2.1), so the tables' NDConnectionsMappedtoTCPConnections follows from it."""
    return bool(adapter.query_info().rdma_technology == RdmaTechnology.IWARP)


def rows_per_endpoint(adapter: ndk.Adapter) -> int:
    """digest 3.7: an adapter whose ND connections map onto TCP connections (iWARP) lists each
    connection and local endpoint as an ND/TCP pair of entries; any other lists one entry."""
    return 2 if maps_to_tcp(adapter) else 1


def table_size(entry_size: int, count: int) -> int:
    return TABLE_HEADER + entry_size * count


def frames(payload: int) -> int:
    return max(1, -(-payload // FRAME_PAYLOAD))


def octets(payload: int) -> int:
    return payload + FRAME_OVERHEAD * frames(payload)


# --- OID_NDK_CONNECTIONS ----------------------------------------------------------------------


@pytest.mark.rule("OID-CONNECTIONS-EMPTY")
@pytest.mark.digest("3.7")
def test_connections_of_idle_miniport(adapter: ndk.Adapter) -> None:
    """digest 3.7 (NDIS_NDK_CONNECTIONS: Header Rev 1, Size = FIELD_OFFSET(Connections[n])):
    with no connection, Count 0, no entries and Header.Size 16; NDConnectionsMappedtoTCPConnections
    is TRUE exactly when the adapter is iWARP (``maps_to_tcp``). A listener and an idle
    connector are not connections."""
    listener = listening(adapter, (SERVER, 7400))
    connector = new_connector(adapter)
    result = adapter.query_oid(Oid.NDK_CONNECTIONS)
    assert result.status == Status.SUCCESS
    assert result.header is not None
    assert (result.header.revision, result.header.size) == (REVISION_1, TABLE_HEADER)
    assert (result.count, result.entries) == (0, [])
    assert result.bytes_written == TABLE_HEADER
    assert result.mapped_to_tcp is maps_to_tcp(adapter)
    assert listener.is_open and connector.is_open


@pytest.mark.rule("OID-CONNECTIONS-PAIRS")
@pytest.mark.digest("3.7")
def test_connections_entries_come_in_pairs(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 3.7: each miniport lists its own end of a connection, Local and Remote as its
    connector reports them (NdkGetLocalAddress, NdkGetPeerAddress).  Mapped to TCP (iWARP,
    ``maps_to_tcp``): an ND/TCP pair, the even entry the ND 4-tuple, the odd one the 4-tuple of
    the TCP connection it runs on, which on iWARP is the same; not mapped: one entry.
    Header.Size and BytesWritten are FIELD_OFFSET(Connections[Count]).  Who owns the entry
    (UserModeOwner, OwnerPid) is OID-CONNECTIONS-OWNER's."""
    client, server = adapters
    a, b = connected_pair(client, server, listener=listening(server, (SERVER, 7401)))
    for side in (a, b):
        result = connections(side.adapter)
        rows = rows_per_endpoint(side.adapter)
        end = (side.connector.get_local_address(), side.connector.get_peer_address())
        assert result.mapped_to_tcp is (rows == 2)
        assert result.count == rows
        assert result.header is not None
        assert result.header.size == table_size(CONNECTION_ENTRY, rows)
        assert result.bytes_written == table_size(CONNECTION_ENTRY, rows)
        assert [(e.local, e.remote) for e in result.entries] == [end] * rows


@pytest.mark.rule("OID-CONNECTIONS-OWNER")
@pytest.mark.digest("3.7")
@pytest.mark.reference("OID-OWNER")
def test_connections_owner(adapter: ndk.Adapter) -> None:
    """digest 3.7 (only the even entries of a mapped table carry UserModeOwner and OwnerPid;
    UserModeOwner TRUE means an NDSPI owner), docs/semantics.md OID-OWNER: the entry of each
    end of a loopback connection made by this (NDK, not NDSPI) consumer says UserModeOwner
    FALSE and OwnerPid this process's id; the TCP entries of a mapped table carry neither
    (FALSE, 0).  Stated (digest 3.7): an entry (group) per end, the TCP entries carrying
    neither; the choice: the ND entries' owner."""
    a, b = connected_pair(adapter, adapter, listener=listening(adapter, (SERVER, 7407)))
    result = connections(adapter)
    rows = rows_per_endpoint(adapter)
    with stated("digest 3.7"):
        assert result.count == 2 * rows
        for i in range(0, result.count, rows):
            for tcp in result.entries[i + 1:i + rows]:
                assert (tcp.user_mode_owner, tcp.owner_pid) == (False, 0)
    for i in range(0, result.count, rows):
        nd = result.entries[i]
        assert (nd.user_mode_owner, nd.owner_pid) == (False, os.getpid())
    assert a.connector.is_open and b.connector.is_open


@pytest.mark.rule("OID-CONNECTIONS-LOOPBACK")
@pytest.mark.digest("3.7")
def test_connections_of_loopback_connection(adapter: ndk.Adapter) -> None:
    """digest 3.7: a loopback connection has both ends on one miniport: an entry (an ND/TCP
    pair when mapped to TCP) for each end, each with its own Local/Remote."""
    host = SERVER
    a, b = connected_pair(adapter, adapter, listener=listening(adapter, (host, 7402)))
    result = connections(adapter)
    rows = rows_per_endpoint(adapter)
    assert result.count == 2 * rows
    assert result.header is not None
    assert result.header.size == table_size(CONNECTION_ENTRY, 2 * rows)
    ends = {(a.connector.get_local_address(), a.connector.get_peer_address()),
            (b.connector.get_local_address(), b.connector.get_peer_address())}
    groups = [result.entries[i:i + rows] for i in (0, rows)]
    assert {(group[0].local, group[0].remote) for group in groups} == ends
    for group in groups:
        assert all((e.local, e.remote) == (group[0].local, group[0].remote) for e in group)


@pytest.mark.rule("OID-CONNECTIONS-NOT-MAPPED")
@pytest.mark.digest("3.7")
def test_connections_not_mapped_to_tcp(open_adapter: OpenAdapter) -> None:
    """digest 3.7: when ND connections are not mapped onto TCP connections (a RoCEv2 RNIC:
    knob rdma_technology, so that an iWARP provider is judged on this table too), each
    connection is one entry and the flag is FALSE."""
    client = open_adapter(address=CLIENT, rdma_technology=int(RdmaTechnology.ROCEV2))
    server = open_adapter(address=SERVER, rdma_technology=int(RdmaTechnology.ROCEV2))
    a, b = connected_pair(client, server, listener=listening(server, (SERVER, 7403)))
    result = connections(client)
    assert result.mapped_to_tcp is False
    assert result.count == 1
    assert result.header is not None
    assert result.header.size == table_size(CONNECTION_ENTRY, 1)
    assert [(e.local, e.remote) for e in result.entries] == [
        (a.connector.get_local_address(), a.connector.get_peer_address())]


@pytest.mark.rule("OID-CONNECTIONS-HEADER-SIZE-CAP")
@pytest.mark.digest("3.7")
def test_connections_header_size_is_capped(adapter: ndk.Adapter) -> None:
    """digest 3.7 (Header.Size = min(MAXUSHORT, FIELD_OFFSET(Connections[n]))): with 1024
    entries (256 loopback connections of four entries each when mapped to TCP, 512 of two
    otherwise) Header.Size is 65535 while Count, BytesNeeded and BytesWritten give the full
    16 + 64 * 1024 bytes."""
    host = SERVER
    listener = listening(adapter, (host, 7404))
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    cq = adapter.create_cq(16).get(timeout=TIMEOUT)
    held = []   # every handle stays referenced: a dropped handle closes its object
    for _ in range(1024 // (2 * rows_per_endpoint(adapter))):
        a, b = (Side(adapter, pd=pd, cq=cq, receive_queue_depth=1, initiator_queue_depth=1,
                     buffer_size=0) for _ in range(2))
        held.append(connect_sides(a, b, listener=listener))
    full = table_size(CONNECTION_ENTRY, 1024)
    result = connections(adapter)
    assert result.count == 1024
    assert result.header is not None
    assert result.header.size == 0xFFFF
    assert (result.bytes_needed, result.bytes_written, len(result.raw)) == (full, full, full)
    assert len(result.entries) == 1024


@pytest.mark.rule("OID-CONNECTIONS-DISCONNECT")
@pytest.mark.digest("3.7")
def test_connections_gone_after_disconnect(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 3.7, 3.6: a disconnected connection is no longer listed, on either miniport,
    although both connectors are still open."""
    client, server = adapters
    a, b = connected_pair(client, server, listener=listening(server, (SERVER, 7405)))
    assert connections(client).count == rows_per_endpoint(client)
    assert connections(server).count == rows_per_endpoint(server)
    assert a.connector.disconnect().wait(timeout=TIMEOUT) == Status.SUCCESS
    assert b.connector.wait_disconnect(timeout=TIMEOUT) is not None
    for adapter in adapters:
        result = connections(adapter)
        assert result.header is not None
        assert (result.count, result.entries, result.header.size) == (0, [], TABLE_HEADER)
    assert a.connector.is_open and b.connector.is_open


@pytest.mark.rule("OID-CONNECTIONS-CLOSE")
@pytest.mark.digest("3.7")
def test_connections_gone_after_close(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 3.7, 3.1: closing a connected connector removes the connection from both
    miniports' tables; another connection stays listed.  The closing side's table changes when
    its close completes; the peer's when the transport has told it (at once in one process,
    a message later across processes), so the peer's is awaited."""
    client, server = adapters
    listener = listening(server, (SERVER, 7406))
    a1, b1 = connected_pair(client, server, listener=listener)
    a2, b2 = connected_pair(client, server, listener=listener)
    rows = rows_per_endpoint(client)
    assert connections(client).count == 2 * rows
    assert a1.connector.close().wait(timeout=TIMEOUT) == Status.SUCCESS
    assert connections(client).count == rows
    wait_until(lambda: connections(server).count == rows_per_endpoint(server),
               what="the peer's table dropping it")
    remaining = connections(client).entries[0]
    assert remaining.local == a2.connector.get_local_address()


# --- buffer negotiation -----------------------------------------------------------------------


@pytest.mark.rule("OID-BUFFER-TOO-SHORT")
@pytest.mark.digest("3.7")
@pytest.mark.reference("OID-SIZE")
@pytest.mark.parametrize("oid", [Oid.NDK_CONNECTIONS, Oid.NDK_LOCAL_ENDPOINTS,
                                 Oid.NDK_STATISTICS],
                         ids=["connections", "local-endpoints", "statistics"])
def test_query_buffer_too_short(adapters: tuple[ndk.Adapter, ndk.Adapter], oid: Oid) -> None:
    """docs/semantics.md: OID-SIZE (NDIS query conventions): a 0-length buffer and one a byte
    too short answer NDIS_STATUS_BUFFER_TOO_SHORT with BytesNeeded and nothing written; a
    buffer of BytesNeeded bytes then succeeds with BytesWritten == BytesNeeded."""
    client, server = adapters
    connection = connected_pair(client, server, listener=listening(server, (SERVER, 7410)))
    endpoint = client.create_shared_endpoint((CLIENT, 7411)).get(timeout=TIMEOUT)
    rows = rows_per_endpoint(client)
    needed = {Oid.NDK_CONNECTIONS: table_size(CONNECTION_ENTRY, rows),
              Oid.NDK_LOCAL_ENDPOINTS: table_size(LOCAL_ENDPOINT_ENTRY, rows),
              Oid.NDK_STATISTICS: STATISTICS_SIZE}[oid]
    for short in (0, needed - 1):
        result = client.query_oid(oid, buffer_length=short)
        assert result.status == Status.BUFFER_TOO_SHORT
        assert (result.bytes_needed, result.bytes_written, result.raw) == (needed, 0, b"")
    result = client.query_oid(oid, buffer_length=needed)
    assert result.status == Status.SUCCESS
    assert (result.bytes_needed, result.bytes_written, len(result.raw)) == (needed, needed,
                                                                            needed)
    assert connection[0].connector.is_open and endpoint.is_open


@pytest.mark.rule("OID-BUFFER-LARGER")
@pytest.mark.digest("3.7")
@pytest.mark.reference("OID-SIZE")
def test_query_with_larger_buffer(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """docs/semantics.md: OID-SIZE: a buffer larger than needed succeeds; BytesWritten is the
    table's size, not the buffer's."""
    client, server = adapters
    connection = connected_pair(client, server, listener=listening(server, (SERVER, 7412)))
    result = client.query_oid(Oid.NDK_CONNECTIONS, buffer_length=4096)
    rows = rows_per_endpoint(client)
    assert result.status == Status.SUCCESS
    assert result.bytes_written == table_size(CONNECTION_ENTRY, rows)
    assert result.count == rows
    assert connection[0].connector.is_open


# --- OID_NDK_LOCAL_ENDPOINTS ------------------------------------------------------------------


@pytest.mark.rule("OID-LOCAL-ENDPOINTS")
@pytest.mark.digest("3.7")
@pytest.mark.reference("OID-OWNER")
def test_local_endpoints_of_listener_and_shared_endpoint(adapter: ndk.Adapter) -> None:
    """digest 3.7 (NDIS_NDK_LOCAL_ENDPOINTS: entries {Local, UserModeOwner, Listener (FALSE:
    a shared endpoint), OwnerPid}, paired like the connections table). docs/semantics.md:
    OID-OWNER. A listener that is not listening yet is not an endpoint. (Pairs on iWARP; one
    entry each otherwise.)  Stated (digest 3.7, 3.5): the table, its entries' addresses and
    Listener flags, the TCP entries carrying no owner; the choice: the ND entries' owner."""
    host = SERVER
    idle = adapter.create_listener().get(timeout=TIMEOUT)   # not listening: not listed
    with stated("digest 3.7, 3.5"):
        empty = local_endpoints(adapter)
        assert empty.header is not None
        assert (empty.count, empty.entries, empty.header.size) == (0, [], TABLE_HEADER)
        listener = listening(adapter, (host, 7420))
        endpoint = adapter.create_shared_endpoint((host, 7421)).get(timeout=TIMEOUT)
        result = local_endpoints(adapter)
        rows = rows_per_endpoint(adapter)
        assert result.mapped_to_tcp is (rows == 2)
        assert result.count == 2 * rows
        assert result.header is not None
        assert result.header.revision == REVISION_1
        assert result.header.size == table_size(LOCAL_ENDPOINT_ENTRY, 2 * rows)
        groups = sorted((result.entries[i:i + rows] for i in (0, rows)),
                        key=lambda p: tuple(p[0].local))
        assert [[(e.local, e.listener) for e in group] for group in groups] == [
            [((host, 7420), True)] * rows, [((host, 7421), False)] * rows]
        assert all((tcp.user_mode_owner, tcp.owner_pid) == (False, 0)
                   for group in groups for tcp in group[1:])
    pid = os.getpid()
    assert groups == [
        [ndk.LocalEndpointEntry((host, 7420), False, True, pid),
         ndk.LocalEndpointEntry((host, 7420), False, True, 0)][:rows],
        [ndk.LocalEndpointEntry((host, 7421), False, False, pid),
         ndk.LocalEndpointEntry((host, 7421), False, False, 0)][:rows],
    ]
    assert idle.is_open and listener.is_open and endpoint.is_open


@pytest.mark.rule("OID-LOCAL-ENDPOINTS-CLOSE")
@pytest.mark.digest("3.7")
def test_local_endpoints_gone_after_close(adapter: ndk.Adapter) -> None:
    """digest 3.7, 3.5: a closed listener or shared endpoint is no longer listed; the other
    stays."""
    host = SERVER
    listener = listening(adapter, (host, 7422))
    endpoint = adapter.create_shared_endpoint((host, 7423)).get(timeout=TIMEOUT)
    expect_closed(listener.close())
    result = local_endpoints(adapter)
    rows = rows_per_endpoint(adapter)
    assert result.count == rows
    assert [e.local for e in result.entries] == [(host, 7423)] * rows
    assert all(not e.listener for e in result.entries)
    expect_closed(endpoint.close())
    assert local_endpoints(adapter).count == 0


# --- OID_NDK_STATISTICS -----------------------------------------------------------------------


@pytest.mark.rule("OID-STATISTICS-LAYOUT")
@pytest.mark.digest("3.7")
def test_statistics_header_and_reserved_counters(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 3.7 (NDIS_NDK_STATISTICS_INFO: Header Type DEFAULT, Rev 1; Reserved01..20 must
    be 0): on a fresh miniport every counter is 0; after traffic the reserved ones still are."""
    client, server = adapters
    result = client.query_oid(Oid.NDK_STATISTICS)
    assert result.status == Status.SUCCESS
    assert result.header == ndk.OidHeader(NDIS_OBJECT_TYPE_DEFAULT, REVISION_1, STATISTICS_SIZE)
    assert result.bytes_written == STATISTICS_SIZE
    assert result.counters is not None
    assert set(result.counters.values()) == {0}
    a, b = connected_pair(client, server, listener=listening(server, (SERVER, 7430)))
    transfer(a, b, b"x" * 100)
    for adapter in adapters:
        assert [counters(adapter)[name] for name in RESERVED] == [0] * 20


@pytest.mark.rule("OID-STATISTICS-CONNECT-ACCEPT")
@pytest.mark.digest("3.7")
@pytest.mark.reference("OID-COUNTERS")
def test_statistics_connect_accept_active(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 3.7 (Connect, Accept, ActiveConnection). docs/semantics.md: OID-COUNTERS:
    Connect counts connections established actively (the client's miniport), Accept passively
    (the server's); ActiveConnection is 1 on each while connected and back to 0 after the
    disconnect, while Connect / Accept stay."""
    client, server = adapters
    a, b = connected_pair(client, server, listener=listening(server, (SERVER, 7431)))
    up_client, up_server = counters(client), counters(server)
    assert (up_client["Connect"], up_client["Accept"], up_client["ActiveConnection"]) == (1, 0, 1)
    assert (up_server["Connect"], up_server["Accept"], up_server["ActiveConnection"]) == (0, 1, 1)
    assert a.connector.disconnect().wait(timeout=TIMEOUT) == Status.SUCCESS
    assert b.connector.wait_disconnect(timeout=TIMEOUT) is not None
    down_client, down_server = counters(client), counters(server)
    assert (down_client["Connect"], down_client["ActiveConnection"]) == (1, 0)
    assert (down_server["Accept"], down_server["ActiveConnection"]) == (1, 0)
    assert down_client["ConnectionError"] == down_server["ConnectionError"] == 0


@pytest.mark.rule("OID-STATISTICS-LOOPBACK")
@pytest.mark.digest("3.7")
@pytest.mark.reference("OID-COUNTERS")
def test_statistics_loopback_counts_both_ends(adapter: ndk.Adapter) -> None:
    """docs/semantics.md: OID-COUNTERS: a loopback connection is established actively and
    passively on the same miniport: Connect 1, Accept 1, ActiveConnection 2; 0 once the
    active end closed and the passive end had its disconnect event."""
    a, b = connected_pair(adapter, adapter, listener=listening(adapter, (SERVER, 7432)))
    got = counters(adapter)
    assert (got["Connect"], got["Accept"], got["ActiveConnection"]) == (1, 1, 2)
    assert a.connector.close().wait(timeout=TIMEOUT) == Status.SUCCESS
    # The passive end is down once it learns the peer left (its disconnect event, which a
    # real device delivers later: rdma_cm's DISCONNECTED).
    assert b.connector.wait_disconnect(timeout=TIMEOUT) is not None
    assert counters(adapter)["ActiveConnection"] == 0


@pytest.mark.rule("OID-STATISTICS-CONNECT-FAILURE")
@pytest.mark.digest("3.7")
@pytest.mark.reference("OID-COUNTERS")
@pytest.mark.parametrize("failure", ["refused", "unreachable", "rejected", "timed-out"])
def test_statistics_connect_failure(open_adapter: OpenAdapter, failure: str) -> None:
    """digest 3.7 (ConnectFailure). docs/semantics.md: OID-COUNTERS (connects refused,
    unreachable, timed out or rejected): ConnectFailure 1 on the connecting miniport; Connect
    and ActiveConnection stay 0."""
    # Only the timed-out case shortens the establishment timeout: the others must not race it.
    timeout_knob = {"connect_timeout_ms": 150} if failure == "timed-out" else {}
    client = open_adapter(address=CLIENT, **timeout_knob)
    server = open_adapter(address=SERVER)
    if failure in ("refused", "unreachable"):
        side = Side(client)
        dest = (SERVER, 7433) if failure == "refused" else (UNOWNED, 7433)
        expected = Status.CONNECTION_REFUSED if failure == "refused" else \
            Status.HOST_UNREACHABLE
        connector = new_connector(client)
        assert connector.connect(side.qp, dest).wait(timeout=TIMEOUT) == expected
    else:
        handshake = start(client, server, (SERVER, 7433))
        if failure == "rejected":
            assert handshake.server.connector.reject() == Status.SUCCESS
            assert handshake.connect.wait(timeout=TIMEOUT) == Status.CONNECTION_REFUSED
        else:
            assert handshake.connect.wait(timeout=TIMEOUT) == Status.IO_TIMEOUT
    got = counters(client)
    assert (got["ConnectFailure"], got["Connect"], got["ActiveConnection"]) == (1, 0, 0)


@pytest.mark.rule("OID-STATISTICS-CONNECTION-ERROR")
@pytest.mark.digest("3.7")
@pytest.mark.reference("OID-COUNTERS")
def test_statistics_connection_error(open_adapter: OpenAdapter) -> None:
    """digest 3.7 (ConnectionError). docs/semantics.md: OID-COUNTERS / QP-ERROR: a connection
    ended by an error completion (a Send with no receive, rnr_timeout_ms=0: IO_TIMEOUT)
    counts once on each miniport; ActiveConnection drops to 0 on both."""
    client = open_adapter(address=CLIENT, rnr_timeout_ms=0)
    server = open_adapter(address=SERVER)
    a, b = connected_pair(client, server, listener=listening(server, (SERVER, 7434)))
    assert a.qp.send([a.mr.sge(0, 8)]) == Status.SUCCESS
    assert a.cq.wait_results(1, timeout=TIMEOUT)[0].status == Status.IO_TIMEOUT
    assert b.connector.wait_disconnect(timeout=TIMEOUT) is not None
    for adapter in (client, server):
        got = counters(adapter)
        assert (got["ConnectionError"], got["ActiveConnection"]) == (1, 0)


@pytest.mark.rule("OID-STATISTICS-RDMA-SEND")
@pytest.mark.digest("3.7")
@pytest.mark.reference("OID-COUNTERS")
@pytest.mark.parametrize("payload", [1, 4096, 4097, 10000])
def test_statistics_rdma_octets_and_frames_of_send(adapters: tuple[ndk.Adapter, ndk.Adapter], payload: int) -> None:
    """digest 3.7 (RDMAIn/OutOctets include L2 overhead; RDMAIn/OutFrames).
    docs/semantics.md: OID-COUNTERS (payload plus 64 bytes per frame, one frame per 4096
    payload bytes, at least one): a Send counts out on the sender's miniport and in on the
    receiver's, nothing the other way."""
    client, server = adapters
    a, b = connected_pair(client, server, listener=listening(server, (SERVER, 7435)))
    transfer(a, b, bytes(i % 256 for i in range(payload)))
    out, into = counters(client), counters(server)
    assert (out["RDMAOutOctets"], out["RDMAOutFrames"]) == (octets(payload), frames(payload))
    assert (out["RDMAInOctets"], out["RDMAInFrames"]) == (0, 0)
    assert (into["RDMAInOctets"], into["RDMAInFrames"]) == (octets(payload), frames(payload))
    assert (into["RDMAOutOctets"], into["RDMAOutFrames"]) == (0, 0)


@pytest.mark.rule("OID-STATISTICS-RDMA-READ-WRITE")
@pytest.mark.digest("3.7")
@pytest.mark.reference("OID-COUNTERS")
def test_statistics_rdma_octets_of_read_and_write(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """docs/semantics.md: OID-COUNTERS: an RDMA Write of 6000 bytes counts out on the writer;
    an RDMA Read of 3000 bytes moves data from the peer, so it counts out on the peer and in
    on the reader; the counters add up."""
    client, server = adapters
    a, b = connected_pair(client, server, listener=listening(server, (SERVER, 7436)))
    a.buffer[0:6000] = bytes(i % 253 for i in range(6000))
    assert a.qp.write([a.mr.sge(0, 6000)], b.mr.address, b.mr.remote_token,
                      request_context=1) == Status.SUCCESS
    assert a.cq.wait_results(1, timeout=TIMEOUT)[0].status == Status.SUCCESS
    assert bytes(b.buffer[0:6000]) == bytes(a.buffer[0:6000])
    b.buffer[8192:11192] = b"\x5A" * 3000
    assert a.qp.read([a.mr.sge(16384, 3000)], b.mr.address + 8192, b.mr.remote_token,
                     request_context=2) == Status.SUCCESS
    assert a.cq.wait_results(1, timeout=TIMEOUT)[0].status == Status.SUCCESS
    assert bytes(a.buffer[16384:19384]) == b"\x5A" * 3000
    out, into = counters(client), counters(server)
    assert (out["RDMAOutOctets"], out["RDMAOutFrames"]) == (octets(6000), frames(6000))
    assert (out["RDMAInOctets"], out["RDMAInFrames"]) == (octets(3000), frames(3000))
    assert (into["RDMAInOctets"], into["RDMAInFrames"]) == (octets(6000), frames(6000))
    assert (into["RDMAOutOctets"], into["RDMAOutFrames"]) == (octets(3000), frames(3000))


@pytest.mark.rule("OID-STATISTICS-CQ-ERROR")
@pytest.mark.digest("3.7")
@pytest.mark.reference("OID-COUNTERS")
def test_statistics_cq_error(adapter: ndk.Adapter) -> None:
    """digest 3.7 (CQError), 1.3 (an overrun: STATUS_BUFFER_OVERFLOW). docs/semantics.md:
    OID-COUNTERS (CQ overruns): three flushed receives into a CQ of depth 2 overrun it once:
    CQError 1 (not once per lost completion)."""
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    cq = adapter.create_cq(2).get(timeout=TIMEOUT)
    qp = pd.create_qp(cq, cq, receive_queue_depth=4, initiator_queue_depth=4).get(
        timeout=TIMEOUT)
    buffer = bytearray(4096)
    mr = pd.create_mr().get(timeout=TIMEOUT)
    assert mr.register(buffer, flags=MrFlag.ALLOW_LOCAL_WRITE).wait(
        timeout=TIMEOUT) == Status.SUCCESS
    assert counters(adapter)["CQError"] == 0
    for i in range(3):
        assert qp.receive([mr.sge(i * 64, 64)], request_context=i) == Status.SUCCESS
    qp.flush()
    assert counters(adapter)["CQError"] == 1
    assert cq.get_results_ex(8) == []


# --- OID_NDK_SET_STATE, unknown OIDs ----------------------------------------------------------


@pytest.mark.rule("OID-SET-STATE")
@pytest.mark.digest("3.7")
def test_set_state_disable_and_enable(open_adapter: OpenAdapter) -> None:
    """digest 3.7 (OID_NDK_SET_STATE: a BOOLEAN; FALSE disables NDK, TRUE enables it;
    STATUS_SUCCESS, never PENDING), 1.1 (ADAPTER_NOT_READY: NDK functionality not enabled).
    The OID acts on the miniport of the adapter it is sent to: that miniport reports NDK not
    ready (knob adapter_not_ready) until TRUE is set; the adapter already open keeps working;
    another miniport is not affected."""
    adapter = open_adapter(address=CLIENT)
    assert adapter.set_oid(Oid.NDK_SET_STATE, b"\x00") == Status.SUCCESS
    assert adapter.knobs.adapter_not_ready == 1
    assert adapter.create_pd().wait(timeout=TIMEOUT) == Status.SUCCESS
    other = open_adapter(address=SERVER)
    assert other.knobs.adapter_not_ready == 0
    assert adapter.set_oid(Oid.NDK_SET_STATE, b"\x01") == Status.SUCCESS
    assert adapter.knobs.adapter_not_ready == 0
    assert adapter.create_pd().wait(timeout=TIMEOUT) == Status.SUCCESS


@pytest.mark.rule("OID-SET-STATE-LENGTH")
@pytest.mark.digest("3.7")
@pytest.mark.reference("OID-SIZE")
@pytest.mark.parametrize("data", [b"", b"\x00\x00", b"\x00\x00\x00\x00"],
                         ids=["empty", "two-bytes", "four-bytes"])
def test_set_state_wrong_length(adapter: ndk.Adapter, data: bytes) -> None:
    """digest 3.7 (the buffer is a BOOLEAN). docs/semantics.md: OID-SIZE: any other length is
    NDIS_STATUS_INVALID_LENGTH and changes nothing."""
    assert adapter.set_oid(Oid.NDK_SET_STATE, data) == Status.INVALID_LENGTH
    assert adapter.knobs.adapter_not_ready == 0


@pytest.mark.rule("OID-INVALID")
@pytest.mark.digest("3.7")
@pytest.mark.reference("OID-SIZE")
@pytest.mark.parametrize("oid", [UNKNOWN_OID, OID_GEN_SUPPORTED_LIST],
                         ids=["ndk-range", "general"])
def test_unknown_oid(adapter: ndk.Adapter, oid: int) -> None:
    """docs/semantics.md: OID-SIZE (an unknown OID: NDIS_STATUS_INVALID_OID), for a query and
    for a set; nothing is written."""
    result = adapter.query_oid(oid, buffer_length=256)
    assert result.status == Status.INVALID_OID
    assert (result.bytes_written, result.raw) == (0, b"")
    assert adapter.set_oid(oid, b"\x01") == Status.INVALID_OID
    assert adapter.query_oid(Oid.NDK_CONNECTIONS).status == Status.SUCCESS
