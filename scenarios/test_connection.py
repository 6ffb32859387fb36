"""Connections: NdkConnect, NdkConnectWithSharedEndpoint, NdkAccept(Ex), NdkCompleteConnect(Ex),
NdkReject, NdkGetConnectionData, NdkGetLocalAddress / NdkGetPeerAddress, NdkDisconnect, the
disconnect events and endpoint reference counting (digest 1.8, 1.9, 1.10, 1.11, 3.5, 3.6, 4.2;
docs/semantics.md rows CONN-*, DISCONNECT*, ENDPOINT-REFS, UNCONNECTED, QP-STATE)."""

from __future__ import annotations

import pytest

import ndk
from ndk import AdapterFlag, Status
from ndk.testing import OpenAdapter, requires

from ndk.scenario import (CLIENT, CLIENT6, CREATE_MODES, EPHEMERAL, expect_call, expect_closed,
                          expect_no_completion, post_receives, quiet_period, SERVER, SERVER6,
                          set_adapter_flags, Side, THIRD, TIMEOUT, UNOWNED)
from ndk.scenario.connection import adapter, adapters  # noqa: F401  (fixtures)
from ndk.scenario.stated import stated
from ndk.scenario.connection import (accept, establish, expect_cancelled_receives,
                                     expect_disconnect_event, expect_inline, expect_private_data,
                                     finish, how, incoming, listening, new_connector,
                                     new_qp, no_incoming, start, transfer)

SOCKADDR_IN = 16    # sizeof(SOCKADDR_IN)
SOCKADDR_IN6 = 28   # sizeof(SOCKADDR_IN6)


def connected_pair(adapters: tuple[ndk.Adapter, ndk.Adapter], port: int,
                   ex: bool = False) -> tuple[Side, Side]:
    client, server = adapters
    return establish(client, server, (SERVER, port), ex=ex)


# --- CONNECT: establishment -------------------------------------------------------------------


@pytest.mark.rule("CONNECT-ESTABLISH")
@pytest.mark.digest("1.8")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_connect_accept_complete(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.8, 3.5 (connection flow): Connect returns PENDING and completes SUCCESS exactly
    once, only after the passive side accepts; Accept returns PENDING and completes SUCCESS
    only after the active side's CompleteConnect, which itself is SUCCESS inline or PENDING and
    one completion (knob request_mode).  Data then flows both ways."""
    client = open_adapter(address=CLIENT, request_mode=mode)
    server = open_adapter(address=SERVER, request_mode=mode)
    handshake = start(client, server, (SERVER, 7100))
    assert not handshake.connect.done          # waits for the peer's answer
    server_side = handshake.server
    accept_call = server_side.connector.accept(server_side.qp)
    assert accept_call.status == Status.PENDING
    assert handshake.connect.wait(timeout=TIMEOUT) == Status.SUCCESS
    assert handshake.connect.completions == 1
    assert handshake.connect.completion_status == Status.SUCCESS
    assert not accept_call.done                # waits for CompleteConnect
    expect_call(handshake.client.connector.complete_connect(), Status.SUCCESS, how(mode))
    assert accept_call.wait(timeout=TIMEOUT) == Status.SUCCESS
    assert accept_call.completions == 1
    transfer(handshake.client, server_side, b"ping from the active side")
    transfer(server_side, handshake.client, b"pong from the passive side")


@pytest.mark.rule("CONNECT-EX")
@pytest.mark.digest("2.7")
def test_accept_ex_and_complete_connect_ex(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.8, 2.7 (NDKPI 2.1 NdkAcceptEx, NdkCompleteConnectEx): the Ex forms establish
    the connection exactly as the plain ones (the same statuses); data flows."""
    client, server = adapters
    handshake = start(client, server, (SERVER, 7101))
    accept(handshake, ex=True)
    call = handshake.client.connector.complete_connect_ex()
    expect_call(call, Status.SUCCESS, "inline")
    assert handshake.accept.wait(timeout=TIMEOUT) == Status.SUCCESS
    assert handshake.accept.completions == 1
    transfer(handshake.client, handshake.server, b"over an Ex connection")


@pytest.mark.rule("CONNECT-IPV6")
@pytest.mark.digest("3.5")
def test_connect_over_ipv6(open_adapter: OpenAdapter) -> None:
    """digest 3.5 (providers support IPv4 and IPv6): a connection between two IPv6 addresses;
    every address getter reports IPv6 addresses; data flows."""
    client = open_adapter(address=CLIENT6)
    server = open_adapter(address=SERVER6)
    a, b = establish(client, server, (SERVER6, 7102))
    host, port = a.connector.get_local_address()
    assert host == CLIENT6 and port in EPHEMERAL
    assert a.connector.get_peer_address() == (SERVER6, 7102)
    assert b.connector.get_local_address() == (SERVER6, 7102)
    assert b.connector.get_peer_address() == (CLIENT6, port)
    transfer(a, b, b"IPv6 payload")


@pytest.mark.rule("CONNECT-LOOPBACK")
@pytest.mark.digest("2.1")
def test_connect_to_own_address_with_loopback_flag(adapter: ndk.Adapter) -> None:
    """digest 2.1 (NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED). docs/semantics.md:
    CONN-LOOPBACK: with the flag, a connection to the adapter's own address works; both
    connectors are objects of that adapter; data flows."""
    assert adapter.query_info().adapter_flags & AdapterFlag.LOOPBACK_CONNECTIONS_SUPPORTED
    host = SERVER
    a, b = establish(adapter, adapter, (host, 7103))
    assert a.connector.adapter is adapter and b.connector.adapter is adapter
    assert a.connector.get_peer_address() == (host, 7103)
    assert b.connector.get_peer_address() == a.connector.get_local_address()
    transfer(a, b, b"loopback")


@pytest.mark.rule("CONNECT-EPHEMERAL-SOURCE")
@pytest.mark.digest("1.8")
def test_connect_from_port_zero_takes_ephemeral_port(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.8 (TOO_MANY_ADDRESSES "port 0 and no ephemeral port"), 1.1 (range 49152-65535):
    a Connect from port 0 is given an ephemeral port, which the peer sees as the remote."""
    client, server = adapters
    a, b = establish(client, server, (SERVER, 7104), src=(CLIENT, 0))
    host, port = a.connector.get_local_address()
    assert host == CLIENT and port in EPHEMERAL
    assert b.connector.get_peer_address() == (CLIENT, port)


@pytest.mark.rule("CONNECT-EXPLICIT-SOURCE")
@pytest.mark.digest("1.8")
def test_connect_from_explicit_port(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.8 (NdkConnect pSrcAddress): a Connect from a given address:port uses it; the
    passive side sees it as the peer address."""
    client, server = adapters
    a, b = establish(client, server, (SERVER, 7105), src=(CLIENT, 7205))
    assert a.connector.get_local_address() == (CLIENT, 7205)
    assert b.connector.get_peer_address() == (CLIENT, 7205)


@pytest.mark.rule("CONNECT-LISTENER-PORT-ZERO")
@pytest.mark.digest("1.9")
def test_connect_to_listener_on_port_zero(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.9: a port-0 Listen picks a port from 49152-65535 (NdkGetLocalAddress tells
    which); a Connect to that port reaches the listener and the accepted connector's local
    address is the listener's."""
    client, server = adapters
    listener = listening(server, (SERVER, 0))
    address = listener.get_local_address()
    assert address[0] == SERVER and address[1] in EPHEMERAL
    a, b = establish(client, server, address, listener=listener)
    assert b.connector.get_local_address() == address
    assert a.connector.get_peer_address() == address


# --- CONNECT: refused, unreachable ------------------------------------------------------------


@pytest.mark.rule("CONNECT-REFUSED-NO-LISTENER")
@pytest.mark.digest("1.8")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_connect_without_listener_is_refused(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.8: CONNECTION_REFUSED (no listener, i/a). docs/semantics.md: CONN-REFUSED
    (inline with request_mode inline, else PENDING and one completion). The QP is not bound:
    once a listener exists, a new connector connects it."""
    client = open_adapter(address=CLIENT, request_mode=mode)
    server = open_adapter(address=SERVER)
    side = Side(client)
    refused = new_connector(client)
    expect_call(refused.connect(side.qp, (SERVER, 7110)), Status.CONNECTION_REFUSED, how(mode))
    a, b = finish(accept(start(client, server, (SERVER, 7110), client=side)))
    transfer(a, b, b"connected after a refusal")


@pytest.mark.rule("CONNECT-REFUSED-PAUSED")
@pytest.mark.digest("1.9")
def test_connect_to_paused_listener_is_refused(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.9 (NdkControlConnectEvents: while paused, requests are treated as if no
    listener existed). docs/semantics.md: CONN-REFUSED. No connect event is delivered; after
    resuming, a new Connect reaches the listener."""
    client, server = adapters
    listener = listening(server, (SERVER, 7111))
    listener.control_connect_events(True)
    side = Side(client)
    refused = new_connector(client)
    expect_call(refused.connect(side.qp, (SERVER, 7111)), Status.CONNECTION_REFUSED, "i/a")
    no_incoming(listener)
    listener.control_connect_events(False)
    connector = new_connector(client)
    call = connector.connect(side.qp, (SERVER, 7111))
    assert call.status == Status.PENDING
    assert incoming(listener).get_peer_address() == connector.get_local_address()


@pytest.mark.rule("CONNECT-REFUSED-CLOSED-LISTENER")
@pytest.mark.digest("3.5")
def test_connect_to_closed_listener_is_refused(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.8, 3.5 (the address is released when the listener closes). docs/semantics.md:
    CONN-REFUSED: a Connect to the closed listener's address:port is refused."""
    client, server = adapters
    listener = listening(server, (SERVER, 7112))
    expect_closed(listener.close())
    side = Side(client)
    connector = new_connector(client)
    expect_call(connector.connect(side.qp, (SERVER, 7112)), Status.CONNECTION_REFUSED, "i/a")


@pytest.mark.rule("CONNECT-REFUSED-INCOMING-CLOSED")
@pytest.mark.digest("3.1")
@pytest.mark.reference("CONN-REFUSED")
def test_connect_refused_when_incoming_connector_closed(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """docs/semantics.md: CONN-REFUSED / CONN-CLOSE: the passive side closes the connector
    of the connect event without answering: the Connect completes CONNECTION_REFUSED.
    Stated (digest 3.5: Connect completes SUCCESS only once the peer accepted): the Connect
    completes once and fails; the choice: CONNECTION_REFUSED."""
    client, server = adapters
    handshake = start(client, server, (SERVER, 7113))
    expect_closed(handshake.server.connector.close())
    with stated("digest 3.5"):
        assert handshake.connect.wait(timeout=TIMEOUT) != Status.SUCCESS
        assert handshake.connect.completions == 1
    assert handshake.connect.wait(timeout=TIMEOUT) == Status.CONNECTION_REFUSED


@pytest.mark.rule("CONNECT-HOST-UNREACHABLE")
@pytest.mark.digest("1.8")
@pytest.mark.reference("CONN-UNREACHABLE")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_connect_to_unowned_address_is_unreachable(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.8: HOST_UNREACHABLE (i/a). docs/semantics.md: CONN-UNREACHABLE (an address no
    soft RNIC owns; completed like CONN-REFUSED). The QP stays usable for another connector.
    Stated (digest 3.5: no peer accepts): each Connect fails; the choice: HOST_UNREACHABLE,
    inline or not as request_mode says."""
    client = open_adapter(address=CLIENT, request_mode=mode)
    side = Side(client)
    first, second = new_connector(client), new_connector(client)
    expect_call(first.connect(side.qp, (UNOWNED, 7114)), Status.HOST_UNREACHABLE, how(mode),
                stated_in="digest 3.5")
    expect_call(second.connect(side.qp, (UNOWNED, 7114)), Status.HOST_UNREACHABLE, how(mode),
                stated_in="digest 3.5")


@pytest.mark.rule("CONNECT-NO-LOOPBACK")
@pytest.mark.digest("2.1")
@pytest.mark.reference("CONN-UNREACHABLE")
def test_connect_to_self_without_loopback_flag_is_unreachable(open_adapter: OpenAdapter) -> None:
    """digest 2.1 (LOOPBACK_CONNECTIONS_SUPPORTED), 1.8 (HOST_UNREACHABLE).
    docs/semantics.md: CONN-UNREACHABLE: without the flag (knob adapter_flags), the adapter's
    own address is unreachable, even with a listener there, which sees no connect event.
    Stated (digest 2.1: the adapter does not support loopback connections): the Connect
    fails; the choice: HOST_UNREACHABLE inline."""
    adapter = open_adapter(address=SERVER)
    set_adapter_flags(adapter, remove=AdapterFlag.LOOPBACK_CONNECTIONS_SUPPORTED)
    listener = listening(adapter, (SERVER, 7115))
    side = Side(adapter)
    connector = new_connector(adapter)
    expect_inline(connector.connect(side.qp, (SERVER, 7115)), Status.HOST_UNREACHABLE,
                  stated_in="digest 2.1")
    no_incoming(listener)


@pytest.mark.rule("ENDPOINT-INVALID-ADDRESS")
@pytest.mark.digest("1.8")
@pytest.mark.parametrize("source", [UNOWNED, SERVER], ids=["unowned", "other-adapter"])
def test_connect_from_address_not_owned(adapters: tuple[ndk.Adapter, ndk.Adapter], source: str) -> None:
    """digest 1.8: INVALID_ADDRESS (local address not valid for the adapter, i/a): a source
    address the adapter does not own (not at all, or another adapter's), inline or through
    the completion (the soft provider: inline, docs/semantics.md CONN-INLINE-ADDRESS); the
    listener sees nothing; the QP stays usable."""
    client, server = adapters
    listener = listening(server, (SERVER, 7116))
    side = Side(client)
    refused = new_connector(client)
    expect_call(refused.connect(side.qp, (SERVER, 7116), src_address=(source, 0)),
                  Status.INVALID_ADDRESS, "i/a")
    no_incoming(listener)
    connector = new_connector(client)
    assert connector.connect(side.qp, (SERVER, 7116)).status == Status.PENDING
    assert incoming(listener).get_peer_address() == connector.get_local_address()


@pytest.mark.rule("CONNECT-FAMILY")
@pytest.mark.digest("1.8")
@pytest.mark.reference("CONN-FAMILY")
def test_connect_across_address_families(open_adapter: OpenAdapter) -> None:
    """digest 1.8 (INVALID_ADDRESS). docs/semantics.md: CONN-FAMILY: an IPv4 source with an
    IPv6 destination is INVALID_ADDRESS, inline; no connect event.  Stated (digest 1.8:
    INVALID_ADDRESS, a local address not valid for the connection): the Connect fails; the
    choice: that status, inline."""
    client = open_adapter(address=f"{CLIENT},{CLIENT6}")
    server = open_adapter(address=f"{SERVER},{SERVER6}")
    listener = listening(server, (SERVER6, 7117))
    side = Side(client)
    connector = new_connector(client)
    expect_inline(connector.connect(side.qp, (SERVER6, 7117), src_address=(CLIENT, 0)),
                  Status.INVALID_ADDRESS, stated_in="digest 1.8")
    no_incoming(listener)


@pytest.mark.rule("CONNECT-PRIVATE-DATA-NULL")
@pytest.mark.digest("4.2")
@pytest.mark.reference("CONN-PRIVATE-DATA")
@pytest.mark.expect_violation("PRIVATE-DATA-NULL")
def test_connect_null_private_data_with_length(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """docs/semantics.md: CONN-PRIVATE-DATA (a NULL pointer with a non-zero length:
    INVALID_PARAMETER, inline); nothing reaches the listener."""
    client, server = adapters
    listener = listening(server, (SERVER, 7118))
    side = Side(client)
    connector = new_connector(client)
    expect_inline(connector.connect(side.qp, (SERVER, 7118), private_data=None,
                                    private_data_length=4),
                  Status.INVALID_PARAMETER)
    no_incoming(listener)


# --- CONNECT: reuse, timeouts, aborts ---------------------------------------------------------


@pytest.mark.rule("CONNECT-ACTIVE-CONNECTOR")
@pytest.mark.digest("3.6")
@pytest.mark.reference("CONN-ACTIVE")
@pytest.mark.parametrize("state", ["connecting", "connected"])
def test_connect_on_used_connector(adapters: tuple[ndk.Adapter, ndk.Adapter], state: str) -> None:
    """digest 3.6, 4.2 (ND2 Connector::Connect: CONNECTION_ACTIVE). docs/semantics.md:
    CONN-ACTIVE: a second Connect on a connector that is connecting or connected is
    CONNECTION_ACTIVE inline; the first connection is unaffected.  Stated (digest 3.6: a
    connector carries one connection): the second Connect fails; the choice: its status,
    inline."""
    client, server = adapters
    handshake = start(client, server, (SERVER, 7120))
    if state == "connected":
        accept(handshake)
        finish(handshake)
    other = new_qp(handshake.client)
    expect_inline(handshake.client.connector.connect(other, (SERVER, 7120)),
                  Status.CONNECTION_ACTIVE, stated_in="digest 3.6")
    no_incoming(handshake.server.listener)
    if state == "connecting":
        accept(handshake)
        finish(handshake)
    transfer(handshake.client, handshake.server, b"still connected")


@pytest.mark.rule("CONNECT-ACTIVE-QP")
@pytest.mark.digest("3.6")
@pytest.mark.reference("CONN-ACTIVE")
def test_connect_with_connected_qp(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 3.6 (a QP carries one connection). docs/semantics.md: CONN-ACTIVE: Connect with a
    QP already bound to another connector is CONNECTION_ACTIVE inline; no connect event.
    Stated (digest 3.6): the Connect fails; the choice: its status, inline."""
    client, server = adapters
    a, b = connected_pair(adapters, 7121)
    connector = new_connector(client)
    expect_inline(connector.connect(a.qp, (SERVER, 7121)), Status.CONNECTION_ACTIVE,
                  stated_in="digest 3.6")
    no_incoming(b.listener)
    transfer(a, b, b"unaffected")


@pytest.mark.rule("CONNECT-TIMEOUT")
@pytest.mark.digest("1.8")
def test_connect_times_out_without_answer(open_adapter: OpenAdapter) -> None:
    """digest 1.8: IO_TIMEOUT (provider-chosen timeout). docs/semantics.md: CONN-TIMEOUT: no
    Accept or Reject within connect_timeout_ms: the Connect completes IO_TIMEOUT, once."""
    client = open_adapter(address=CLIENT, connect_timeout_ms=150)
    server = open_adapter(address=SERVER)
    handshake = start(client, server, (SERVER, 7122))
    assert handshake.connect.wait(timeout=TIMEOUT) == Status.IO_TIMEOUT
    assert handshake.connect.completions == 1
    expect_inline(handshake.client.connector.complete_connect(), Status.CONNECTION_INVALID,
                  stated_in="digest 1.8")


@pytest.mark.rule("ACCEPT-AFTER-CONNECT-TIMEOUT")
@pytest.mark.digest("1.8")
@pytest.mark.reference("CONN-TIMEOUT")
def test_accept_after_connect_timed_out_is_aborted(open_adapter: OpenAdapter) -> None:
    """digest 1.8 (Accept: CONNECTION_ABORTED, the connecting peer abandoned).
    docs/semantics.md: CONN-TIMEOUT: after the active side's Connect timed out, the passive
    side's Accept completes CONNECTION_ABORTED.  Stated (digest 1.8): the Connect and then
    the Accept fail; the choice: the statuses, the Accept's through its completion."""
    client = open_adapter(address=CLIENT, connect_timeout_ms=150)
    server = open_adapter(address=SERVER)
    handshake = start(client, server, (SERVER, 7123))
    expect_call(handshake.connect, Status.IO_TIMEOUT, "pending", stated_in="digest 1.8")
    side = handshake.server
    expect_call(side.connector.accept(side.qp), Status.CONNECTION_ABORTED, "pending",
                stated_in="digest 1.8")


@pytest.mark.rule("ACCEPT-TIMEOUT")
@pytest.mark.digest("1.8")
@pytest.mark.reference("CONN-TIMEOUT")
def test_accept_times_out_without_complete_connect(open_adapter: OpenAdapter) -> None:
    """digest 1.8 (Accept: IO_TIMEOUT, the peer did not call CompleteConnect).
    docs/semantics.md: CONN-TIMEOUT: the Accept completes IO_TIMEOUT after connect_timeout_ms
    of the passive adapter; the active side's CompleteConnect then reports
    CONNECTION_ABORTED.  Stated (digest 1.8): the Accept and then the CompleteConnect fail;
    the choice: the statuses, the CompleteConnect's inline."""
    client = open_adapter(address=CLIENT)
    server = open_adapter(address=SERVER, connect_timeout_ms=150)
    handshake = accept(start(client, server, (SERVER, 7124)))
    expect_call(handshake.accept, Status.IO_TIMEOUT, "pending", stated_in="digest 1.8")
    expect_call(handshake.client.connector.complete_connect(), Status.CONNECTION_ABORTED,
                "inline", stated_in="digest 1.8")


@pytest.mark.rule("ACCEPT-ABORTED")
@pytest.mark.digest("1.8")
@pytest.mark.reference("CONN-CLOSE")
def test_accept_after_connecting_side_closed(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.8 (Accept: CONNECTION_ABORTED, the connecting peer abandoned), 3.1 (a close
    cancels what is pending). docs/semantics.md: CONN-CLOSE / CONN-ABORTED: the active side
    closes its connector: its Connect completes CANCELLED; the passive side's Accept then
    completes CONNECTION_ABORTED.  Stated (digest 1.8, 3.1): the Connect completes once and
    fails, and so does the Accept; the choice: CANCELLED and CONNECTION_ABORTED, the Accept's
    through its completion."""
    client, server = adapters
    handshake = start(client, server, (SERVER, 7125))
    assert handshake.client.connector.close().wait(timeout=TIMEOUT) == Status.SUCCESS
    expect_call(handshake.connect, Status.CANCELLED, "pending", stated_in="digest 3.1")
    side = handshake.server
    expect_call(side.connector.accept(side.qp), Status.CONNECTION_ABORTED, "pending",
                stated_in="digest 1.8")


@pytest.mark.rule("CONNECT-COMPLETE-ABORTED")
@pytest.mark.digest("1.8")
@pytest.mark.reference("CONN-CLOSE")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_complete_connect_after_accepting_side_closed(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.8 (CompleteConnect: CONNECTION_ABORTED, the accepting peer abandoned).
    docs/semantics.md: CONN-CLOSE / CONN-ABORTED: the passive side closes its connector after
    Accept: its Accept completes CANCELLED; the active side's CompleteConnect reports
    CONNECTION_ABORTED (inline or through its completion, knob request_mode).  Stated
    (digest 1.8, 3.1): the Accept completes once and fails, and so does the CompleteConnect;
    the choice: CANCELLED and CONNECTION_ABORTED, and how each is reported."""
    client = open_adapter(address=CLIENT, request_mode=mode)
    server = open_adapter(address=SERVER)
    handshake = accept(start(client, server, (SERVER, 7126)))
    assert handshake.server.connector.close().wait(timeout=TIMEOUT) == Status.SUCCESS
    expect_call(handshake.accept, Status.CANCELLED, "pending", stated_in="digest 3.1")
    expect_call(handshake.client.connector.complete_connect(), Status.CONNECTION_ABORTED,
                how(mode), stated_in="digest 1.8")


@pytest.mark.rule("CONNECT-COMPLETE-NOT-CONNECTING")
@pytest.mark.digest("1.8")
@pytest.mark.reference("CONN-STATE")
@pytest.mark.parametrize("state", ["idle", "connecting", "connected", "passive"])
def test_complete_connect_when_not_connecting(adapters: tuple[ndk.Adapter, ndk.Adapter], state: str) -> None:
    """digest 1.8 (CompleteConnect: CONNECTION_INVALID, "QP is not connecting").
    docs/semantics.md: UNCONNECTED / CONN-STATE: on an idle connector, one whose Connect has
    no answer yet, one already connected, or a passive connector: CONNECTION_INVALID inline,
    no completion; an established connection is unaffected.  Stated (digest 1.8: "QP is not
    connecting"): each CompleteConnect fails; the choice: inline."""
    client, server = adapters
    if state == "idle":
        expect_inline(new_connector(client).complete_connect(), Status.CONNECTION_INVALID,
                  stated_in="digest 1.8")
        return
    handshake = start(client, server, (SERVER, 7127))
    if state == "connecting":
        expect_inline(handshake.client.connector.complete_connect(), Status.CONNECTION_INVALID,
                  stated_in="digest 1.8")
    elif state == "passive":
        expect_inline(handshake.server.connector.complete_connect(), Status.CONNECTION_INVALID,
                  stated_in="digest 1.8")
    accept(handshake)
    finish(handshake)
    if state == "connected":
        expect_inline(handshake.client.connector.complete_connect(), Status.CONNECTION_INVALID,
                  stated_in="digest 1.8")
    transfer(handshake.client, handshake.server, b"established")


@pytest.mark.rule("ACCEPT-NOT-INCOMING")
@pytest.mark.digest("1.8")
@pytest.mark.reference("CONN-STATE")
@pytest.mark.parametrize("state", ["idle", "active", "accepted"])
def test_accept_when_not_incoming(adapters: tuple[ndk.Adapter, ndk.Adapter], state: str) -> None:
    """docs/semantics.md: UNCONNECTED / CONN-STATE: Accept on an idle connector, on the active
    side's connector, or a second time on the passive one: CONNECTION_INVALID inline, no
    completion.  Stated (digest 3.5: Accept answers the connect event of a connector, once):
    each Accept fails; the choice: its status, inline."""
    client, server = adapters
    if state == "idle":
        side = Side(client)
        expect_inline(new_connector(client).accept(side.qp), Status.CONNECTION_INVALID,
                      stated_in="digest 3.5")
        return
    handshake = accept(start(client, server, (SERVER, 7128)))
    if state == "active":
        qp = new_qp(handshake.client)
        expect_inline(handshake.client.connector.accept(qp), Status.CONNECTION_INVALID,
                      stated_in="digest 3.5")
    else:
        qp = new_qp(handshake.server)
        expect_inline(handshake.server.connector.accept(qp), Status.CONNECTION_INVALID,
                      stated_in="digest 3.5")
    finish(handshake)


@pytest.mark.rule("ACCEPT-ACTIVE-QP")
@pytest.mark.digest("3.6")
@pytest.mark.reference("CONN-ACTIVE")
def test_accept_with_connected_qp(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 3.6. docs/semantics.md: CONN-ACTIVE: Accept with a QP already bound to another
    connector is CONNECTION_ACTIVE inline; the incoming connection can still be accepted on a
    fresh QP.  Stated (digest 3.6: a QP carries one connection): the Accept fails; the
    choice: its status, inline."""
    client, server = adapters
    a, b = connected_pair(adapters, 7129)
    handshake = start(client, server, (SERVER, 7129), listener=b.listener)
    incoming_connector = handshake.server.connector
    expect_inline(incoming_connector.accept(b.qp), Status.CONNECTION_ACTIVE,
                  stated_in="digest 3.6")
    assert not handshake.connect.done
    accept(handshake)
    finish(handshake)
    transfer(a, b, b"first connection")
    transfer(handshake.client, handshake.server, b"second connection")


# --- REJECT -----------------------------------------------------------------------------------


@pytest.mark.rule("REJECT-PASSIVE")
@pytest.mark.digest("1.8")
@pytest.mark.reference("CONN-REFUSED")
def test_passive_reject(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.8 (NdkReject inline; CONNECTION_REFUSED: the peer rejected).
    docs/semantics.md: CONN-REFUSED: the Connect completes CONNECTION_REFUSED; the reject's
    private data is readable on the active side with GetConnectionData; the rejected
    connector cannot accept afterwards.  Stated (digest 1.8): the Reject succeeds and the
    Connect completes once, CONNECTION_REFUSED; the choice: the private data readable after
    it, and the Accept's failure."""
    client, server = adapters
    handshake = start(client, server, (SERVER, 7130))
    reason = b"go away: busy"
    with stated("digest 1.8"):
        assert handshake.server.connector.reject(private_data=reason) == Status.SUCCESS
        assert handshake.connect.wait(timeout=TIMEOUT) == Status.CONNECTION_REFUSED
        assert handshake.connect.completions == 1
    expect_private_data(handshake.client.connector, reason)
    expect_inline(handshake.server.connector.accept(handshake.server.qp),
                  Status.CONNECTION_INVALID)


@pytest.mark.rule("REJECT-ACTIVE")
@pytest.mark.digest("3.5")
@pytest.mark.reference("CONN-ABORTED")
def test_active_reject_after_connect(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 3.5 (the active side may Reject after Connect completes, if the read limits or
    private data are unacceptable). docs/semantics.md: CONN-ABORTED: Reject returns SUCCESS;
    the passive side's Accept completes CONNECTION_ABORTED; CompleteConnect is then
    CONNECTION_INVALID.  Stated (digest 3.5, 1.8: Accept CONNECTION_ABORTED when the peer
    abandoned; CompleteConnect CONNECTION_INVALID when not connecting): all of it but the
    CompleteConnect's being inline."""
    client, server = adapters
    handshake = accept(start(client, server, (SERVER, 7131)))
    with stated("digest 3.5, 1.8"):
        assert handshake.client.connector.reject() == Status.SUCCESS
        assert handshake.accept.wait(timeout=TIMEOUT) == Status.CONNECTION_ABORTED
        assert handshake.accept.completions == 1
    expect_inline(handshake.client.connector.complete_connect(), Status.CONNECTION_INVALID,
                  stated_in="digest 1.8")


@pytest.mark.rule("REJECT-ABORTED")
@pytest.mark.digest("1.8")
def test_reject_after_connecting_side_closed(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.8 (NdkReject: CONNECTION_ABORTED). docs/semantics.md: CONN-ABORTED (Reject
    when the peer is gone)."""
    client, server = adapters
    handshake = start(client, server, (SERVER, 7132))
    assert handshake.client.connector.close().wait(timeout=TIMEOUT) == Status.SUCCESS
    assert handshake.connect.wait(timeout=TIMEOUT) == Status.CANCELLED
    assert handshake.server.connector.reject() == Status.CONNECTION_ABORTED


@pytest.mark.rule("REJECT-NOT-CONNECTING")
@pytest.mark.digest("1.8")
@pytest.mark.reference("CONN-STATE")
@pytest.mark.parametrize("state", ["idle", "connecting", "connected"])
def test_reject_without_request(adapters: tuple[ndk.Adapter, ndk.Adapter], state: str) -> None:
    """docs/semantics.md: UNCONNECTED / CONN-STATE: Reject on an idle connector, on an active
    connector whose Connect has no answer yet, or on a connected one: CONNECTION_INVALID;
    an established connection is unaffected."""
    client, server = adapters
    if state == "idle":
        assert new_connector(client).reject() == Status.CONNECTION_INVALID
        return
    handshake = start(client, server, (SERVER, 7133))
    if state == "connecting":
        assert handshake.client.connector.reject() == Status.CONNECTION_INVALID
        assert not handshake.connect.done
    accept(handshake)
    finish(handshake)
    if state == "connected":
        assert handshake.client.connector.reject() == Status.CONNECTION_INVALID
        assert handshake.server.connector.reject() == Status.CONNECTION_INVALID
    transfer(handshake.client, handshake.server, b"still up")


@pytest.mark.rule("REJECT-PRIVATE-DATA-SIZE")
@pytest.mark.digest("4.2")
@pytest.mark.reference("CONN-PRIVATE-DATA")
def test_reject_private_data_above_max_callee_data(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 4.2 (ND2 Connector::Reject: INVALID_BUFFER_SIZE). docs/semantics.md:
    CONN-PRIVATE-DATA: a passive Reject with more than MaxCalleeData bytes fails inline and
    rejects nothing; one with exactly MaxCalleeData bytes rejects, and the active side reads
    them all.  Stated (digest 1.8): the Reject within MaxCalleeData succeeds and the Connect
    completes CONNECTION_REFUSED; the choice: the refusal above it and its status."""
    client, server = adapters
    handshake = start(client, server, (SERVER, 7134))
    limit = server.query_info().max_callee_data
    assert handshake.server.connector.reject(private_data=bytes(limit + 1)) == \
        Status.INVALID_BUFFER_SIZE
    assert not handshake.connect.done
    reason = bytes(range(256))[:limit] if limit <= 256 else bytes(i % 251 for i in range(limit))
    with stated("digest 1.8"):
        assert handshake.server.connector.reject(private_data=reason) == Status.SUCCESS
        assert handshake.connect.wait(timeout=TIMEOUT) == Status.CONNECTION_REFUSED
    expect_private_data(handshake.client.connector, reason)


# --- CONNDATA: NdkGetConnectionData -----------------------------------------------------------


@pytest.mark.rule("CONNDATA-SIZE-QUERY")
@pytest.mark.digest("1.8")
def test_connection_data_size_query(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.8 (pPrivateData NULL and *len 0: SUCCESS, RDS written; RDS may exceed what
    the peer sent, so at least the bytes sent): nothing is copied.  All of it stated; soft's
    exact RDS (docs/semantics.md CONN-RDS) is not what this checks."""
    client, server = adapters
    sent = b"0123456789abcdefghijklmnopqrstuvwxyz!?"
    handshake = start(client, server, (SERVER, 7140), connect_kwargs={"private_data": sent})
    data = handshake.server.connector.get_connection_data(private_data_length=0)
    assert data.status == Status.SUCCESS
    assert data.private_data_length >= len(sent)
    assert data.private_data == b""


@pytest.mark.rule("CONNDATA-BUFFER-TOO-SMALL")
@pytest.mark.digest("1.8")
@pytest.mark.parametrize("length", [1, 10, 37])
def test_connection_data_buffer_too_small(adapters: tuple[ndk.Adapter, ndk.Adapter], length: int) -> None:
    """digest 1.8: *len < RDS: BUFFER_TOO_SMALL, min(*len, RDS) bytes copied (the sent ones
    first), RDS (at least the bytes sent) written back; a second call with RDS bytes then
    succeeds.  All of it stated; soft's exact RDS (docs/semantics.md CONN-RDS) is not what
    this checks."""
    client, server = adapters
    sent = b"0123456789abcdefghijklmnopqrstuvwxyz!?"
    handshake = start(client, server, (SERVER, 7141), connect_kwargs={"private_data": sent})
    data = handshake.server.connector.get_connection_data(private_data_length=length)
    assert data.status == Status.BUFFER_TOO_SMALL
    assert data.private_data == sent[:length]
    assert data.private_data_length >= len(sent)
    again = handshake.server.connector.get_connection_data(
        private_data_length=data.private_data_length)
    assert again.status == Status.SUCCESS
    assert again.private_data[:len(sent)] == sent


@pytest.mark.rule("CONNDATA-COPY")
@pytest.mark.digest("1.8")
@pytest.mark.parametrize("extra", [0, 1, 100])
def test_connection_data_large_enough_buffer(adapters: tuple[ndk.Adapter, ndk.Adapter], extra: int) -> None:
    """digest 1.8: *len >= RDS: SUCCESS, the RDS bytes copied (the sent ones first), RDS
    written back.  All of it stated; soft's exact RDS (docs/semantics.md CONN-RDS) is not
    what this checks."""
    client, server = adapters
    sent = bytes(range(40))
    handshake = start(client, server, (SERVER, 7142), connect_kwargs={"private_data": sent})
    rds = handshake.server.connector.get_connection_data(private_data_length=0).private_data_length
    data = handshake.server.connector.get_connection_data(private_data_length=rds + extra)
    assert data.status == Status.SUCCESS
    assert data.private_data[:len(sent)] == sent
    assert data.private_data_length == rds >= len(sent)


@pytest.mark.rule("CONNDATA-NONE")
@pytest.mark.digest("1.8")
def test_connection_data_without_private_data(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.8: with no private data sent, GetConnectionData still succeeds on both sides,
    before Accept (passive) and after the Connect completed (active).  docs/semantics.md:
    CONN-RDS: the soft provider reports RDS 0; a transport with fixed-size private data
    fields (RoCE) reports the field, zero-filled."""
    client, server = adapters
    handshake = start(client, server, (SERVER, 7143))
    passive = expect_private_data(handshake.server.connector, b"")
    assert not any(passive.private_data)
    accept(handshake)
    active = expect_private_data(handshake.client.connector, b"")
    assert not any(active.private_data)
    finish(handshake)


@pytest.mark.rule("CONNDATA-PRIVATE-DATA")
@pytest.mark.digest("1.8")
def test_private_data_both_directions(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.8, 2.1 (MaxCallerData on connect, MaxCalleeData on accept): the Connect's
    private data (MaxCallerData bytes) reaches the passive side before it accepts; the
    Accept's (MaxCalleeData bytes) reaches the active side once its Connect completed."""
    client, server = adapters
    caller = bytes((7 * i + 1) % 256 for i in range(client.query_info().max_caller_data))
    callee = bytes((5 * i + 3) % 256 for i in range(server.query_info().max_callee_data))
    handshake = start(client, server, (SERVER, 7144), connect_kwargs={"private_data": caller})
    expect_private_data(handshake.server.connector, caller)
    accept(handshake, private_data=callee)
    expect_private_data(handshake.client.connector, callee)
    finish(handshake)


PASSIVE_READ_LIMITS = pytest.mark.parametrize("requested, server_max, seen", [
    ((2, 1), None, (1, 2)),
    ((8, 6), (3, 5), (3, 5)),
    ((8, 6), (16, 4), (6, 4)),
], ids=["uncapped", "capped-both", "capped-outbound"])


def _read_limited(open_adapter: OpenAdapter, address: str, limits: tuple[int, int] | None,
                  at_least: tuple[int, int]) -> ndk.Adapter:
    """An adapter at ``address`` whose (MaxInboundReadLimit, MaxOutboundReadLimit) are
    ``limits`` (knobs), or with None its own, which must reach ``at_least`` so that they cap
    nothing the scenario requests (else a capability skip)."""
    if limits is not None:
        return open_adapter(address=address, max_inbound_read_limit=limits[0],
                            max_outbound_read_limit=limits[1])
    adapter = open_adapter(address=address)
    requires(adapter, max_inbound_read_limit=at_least[0], max_outbound_read_limit=at_least[1])
    return adapter


def passive_read_limits(open_adapter: OpenAdapter, requested: tuple[int, int],
                        server_max: tuple[int, int] | None
                        ) -> tuple[tuple[int, int], tuple[int, int]]:
    """The (inbound, outbound) read limits the passive side reads with NdkGetConnectionData
    before Accept, the active side having requested `requested` (inbound, outbound), the
    passive adapter's maxima being `server_max` (None: its own, at least the requests); and
    the passive adapter's (MaxInboundReadLimit, MaxOutboundReadLimit)."""
    client = open_adapter(address=CLIENT)
    server = _read_limited(open_adapter, SERVER, server_max, (requested[1], requested[0]))
    info = server.query_info()
    inbound, outbound = requested
    handshake = start(client, server, (SERVER, 7145),
                      connect_kwargs={"inbound_read_limit": inbound,
                                      "outbound_read_limit": outbound})
    data = handshake.server.connector.get_connection_data()
    assert data.status == Status.SUCCESS
    return ((data.inbound_read_limit, data.outbound_read_limit),
            (info.max_inbound_read_limit, info.max_outbound_read_limit))


@pytest.mark.rule("CONNDATA-PASSIVE-READ-LIMITS-CAPPED")
@pytest.mark.digest("1.8")
@PASSIVE_READ_LIMITS
def test_read_limits_before_accept_are_capped(open_adapter: OpenAdapter, requested: tuple[int, int], server_max: tuple[int, int] | None, seen: tuple[int, int]) -> None:
    """digest 1.8 (read-limit rule: each limit is capped at the adapter's MaxInbound /
    MaxOutboundReadLimit and at the peer's opposite limit; the consumer reads them with
    GetConnectionData, which the passive side calls before Accept, digest 3.5): SUCCESS, and
    each limit written and at most both caps: the passive side's inbound at most its
    adapter's MaxInboundReadLimit and the peer's outbound request, its outbound at most its
    MaxOutboundReadLimit and the peer's inbound request. (A limit the provider leaves
    unwritten reads MAXULONG.) The exact values are CONNDATA-PASSIVE-READ-LIMITS."""
    (inbound, outbound), maxima = passive_read_limits(open_adapter, requested, server_max)
    assert inbound <= min(maxima[0], requested[1]), "inbound read limit above a cap"
    assert outbound <= min(maxima[1], requested[0]), "outbound read limit above a cap"


@pytest.mark.rule("CONNDATA-PASSIVE-READ-LIMITS")
@pytest.mark.digest("1.8")
@pytest.mark.reference("CONN-READ-LIMITS")
@PASSIVE_READ_LIMITS
def test_read_limits_seen_before_accept(open_adapter: OpenAdapter, requested: tuple[int, int], server_max: tuple[int, int] | None, seen: tuple[int, int]) -> None:
    """digest 1.8 (read-limit rule). docs/semantics.md: CONN-READ-LIMITS: before Accept the
    passive side sees the peer's requested limits, swapped (its outbound is the peer's
    inbound), capped by its own adapter's MaxInbound/MaxOutboundReadLimit: exactly the caps,
    not less (that they are at most the caps is CONNDATA-PASSIVE-READ-LIMITS-CAPPED).
    Uncapped: the adapter's own limits, at least the requests; capped: set by knob.  Stated
    (digest 1.8): each limit written and at most both caps; the choice: exactly the caps."""
    (inbound, outbound), maxima = passive_read_limits(open_adapter, requested, server_max)
    with stated("digest 1.8"):
        assert inbound <= min(maxima[0], requested[1]), "inbound read limit above a cap"
        assert outbound <= min(maxima[1], requested[0]), "outbound read limit above a cap"
    assert (inbound, outbound) == seen


@pytest.mark.rule("CONNDATA-EFFECTIVE-READ-LIMITS")
@pytest.mark.digest("1.8")
@pytest.mark.parametrize("client_max, server_max, effective", [
    (None, None, (10, 5)),
    ((3, 2), (16, 16), (3, 2)),
    ((16, 16), (4, 1), (1, 4)),
], ids=["by-request", "by-own-adapter", "by-peer-adapter"])
def test_effective_read_limits_after_connect(open_adapter: OpenAdapter, client_max: tuple[int, int] | None, server_max: tuple[int, int] | None, effective: tuple[int, int]) -> None:
    """digest 1.8 (each requested limit is capped at the adapter's maximum and at the peer's
    opposite limit; GetConnectionData reads the effective values). docs/semantics.md:
    CONN-READ-LIMITS. The active side requests (inbound 10, outbound 7), the passive side
    accepts with (inbound 5, outbound 16); the active side reads the effective limits after
    its Connect completed (by-request: both adapters' own limits, high enough that only the
    requests cap; otherwise adapter limits set by knob)."""
    client = _read_limited(open_adapter, CLIENT, client_max, (10, 7))
    server = _read_limited(open_adapter, SERVER, server_max, (5, 10))
    handshake = start(client, server, (SERVER, 7146),
                      connect_kwargs={"inbound_read_limit": 10, "outbound_read_limit": 7})
    accept(handshake, inbound_read_limit=5, outbound_read_limit=16)
    data = handshake.client.connector.get_connection_data()
    assert data.status == Status.SUCCESS
    assert (data.inbound_read_limit, data.outbound_read_limit) == effective
    finish(handshake)


@pytest.mark.rule("CONNDATA-CONNECT-TOO-LARGE")
@pytest.mark.digest("4.2")
@pytest.mark.reference("CONN-PRIVATE-DATA")
@pytest.mark.parametrize("max_caller_data", [None, 8], ids=["default", "knob-8"])
def test_connect_private_data_above_max_caller_data(open_adapter: OpenAdapter, max_caller_data: int | None) -> None:
    """digest 2.1 (MaxCallerData), 4.2 (ND2 Connector::Connect: INVALID_BUFFER_SIZE).
    docs/semantics.md: CONN-PRIVATE-DATA: MaxCallerData + 1 bytes fail inline, no connect
    event; exactly MaxCallerData bytes on the same connector and QP connect.  Stated (digest
    2.1, 1.8): the Connect with MaxCallerData bytes goes out and the passive side reads them;
    the choice: the refusal above the limit and its status."""
    knobs = {} if max_caller_data is None else {"max_caller_data": max_caller_data}
    client = open_adapter(address=CLIENT, **knobs)
    server = open_adapter(address=SERVER)
    limit = client.query_info().max_caller_data
    if max_caller_data is not None:
        assert limit == max_caller_data
    listener = listening(server, (SERVER, 7147))
    side = Side(client)
    connector = new_connector(client)
    expect_inline(connector.connect(side.qp, (SERVER, 7147), private_data=bytes(limit + 1)),
                  Status.INVALID_BUFFER_SIZE)
    no_incoming(listener)
    with stated("digest 2.1, 1.8"):
        assert connector.connect(side.qp, (SERVER, 7147),
                                 private_data=b"\xAA" * limit).status == Status.PENDING
        expect_private_data(incoming(listener), b"\xAA" * limit)


@pytest.mark.rule("CONNDATA-ACCEPT-TOO-LARGE")
@pytest.mark.digest("4.2")
@pytest.mark.reference("CONN-PRIVATE-DATA")
def test_accept_private_data_above_max_callee_data(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 2.1 (MaxCalleeData), 4.2 (ND2 Connector::Accept: INVALID_BUFFER_SIZE).
    docs/semantics.md: CONN-PRIVATE-DATA: MaxCalleeData + 1 bytes fail inline, the Connect
    stays pending; an Accept with MaxCalleeData bytes then succeeds.  Stated (digest 2.1,
    1.8): that Accept and the active side reading its bytes; the choice: the refusal above
    the limit and its status."""
    client, server = adapters
    handshake = start(client, server, (SERVER, 7148))
    limit = server.query_info().max_callee_data
    side = handshake.server
    expect_inline(side.connector.accept(side.qp, private_data=bytes(limit + 1)),
                  Status.INVALID_BUFFER_SIZE)
    assert not handshake.connect.done
    with stated("digest 2.1, 1.8"):
        accept(handshake, private_data=b"\x55" * limit)
        expect_private_data(handshake.client.connector, b"\x55" * limit)
        finish(handshake)


@pytest.mark.rule("CONNDATA-NOT-CONNECTED")
@pytest.mark.digest("1.8")
@pytest.mark.reference("UNCONNECTED")
@pytest.mark.parametrize("state", ["idle", "connecting"])
def test_connection_data_before_any_connection(adapters: tuple[ndk.Adapter, ndk.Adapter], state: str) -> None:
    """digest 4.2 (ND2 Connector::GetReadLimits / GetPrivateData: CONNECTION_INVALID).
    docs/semantics.md: UNCONNECTED: GetConnectionData on an idle connector, or on an active
    one whose Connect has had no answer, is CONNECTION_INVALID."""
    client, server = adapters
    if state == "idle":
        connector = new_connector(client)
    else:
        handshake = start(client, server, (SERVER, 7149))
        connector = handshake.client.connector
    for length in (0, 64):
        assert connector.get_connection_data(private_data_length=length).status == \
            Status.CONNECTION_INVALID


# --- addresses --------------------------------------------------------------------------------


@pytest.mark.rule("CONNECT-ADDRESSES")
@pytest.mark.digest("1.8")
def test_local_and_peer_addresses_on_both_ends(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.8 (NdkGetLocalAddress, NdkGetPeerAddress): each end's local address is the
    other's peer address; the passive end's local address is the listener's."""
    client, server = adapters
    a, b = establish(client, server, (SERVER, 7150), src=(CLIENT, 7250))
    assert a.connector.get_local_address() == (CLIENT, 7250)
    assert a.connector.get_peer_address() == (SERVER, 7150)
    assert b.connector.get_local_address() == (SERVER, 7150)
    assert b.connector.get_peer_address() == (CLIENT, 7250)
    assert b.listener.get_local_address() == (SERVER, 7150)


@pytest.mark.rule("CONNECT-ADDRESS-BUFFER-TOO-SMALL")
@pytest.mark.digest("1.8")
@pytest.mark.parametrize("family", ["ipv4", "ipv6"])
@pytest.mark.parametrize("which", ["local", "peer"])
def test_address_buffer_too_small(open_adapter: OpenAdapter, family: str, which: str) -> None:
    """digest 1.8 (NdkGetLocalAddress / NdkGetPeerAddress: BUFFER_TOO_SMALL, the length
    updated): a length below sizeof(SOCKADDR_IN) / sizeof(SOCKADDR_IN6) is BUFFER_TOO_SMALL
    with the size needed written back; that size then succeeds."""
    v6 = family == "ipv6"
    client = open_adapter(address=CLIENT6 if v6 else CLIENT)
    server = open_adapter(address=SERVER6 if v6 else SERVER)
    a, b = establish(client, server, ((SERVER6 if v6 else SERVER), 7151))
    get = a.connector.get_local_address if which == "local" else a.connector.get_peer_address
    needed = SOCKADDR_IN6 if v6 else SOCKADDR_IN
    for short in (0, 8, needed - 1):
        result = get(address_length=short)
        assert (result.status, result.address_length, result.address) == (
            Status.BUFFER_TOO_SMALL, needed, None)
    result = get(address_length=needed)
    assert (result.status, result.address_length) == (Status.SUCCESS, needed)
    assert result.address == get()


@pytest.mark.rule("CONNECT-ADDRESS-UNCONNECTED")
@pytest.mark.digest("1.8")
@pytest.mark.reference("UNCONNECTED")
@pytest.mark.parametrize("which", ["local", "peer"])
def test_address_of_idle_connector(adapter: ndk.Adapter, which: str) -> None:
    """digest 4.2 (ND2 Connector::GetLocalAddress / GetPeerAddress: CONNECTION_INVALID).
    docs/semantics.md: UNCONNECTED."""
    connector = new_connector(adapter)
    get = connector.get_local_address if which == "local" else connector.get_peer_address
    with pytest.raises(ndk.NdkError) as failure:
        get()
    assert failure.value.status == Status.CONNECTION_INVALID
    assert get(address_length=SOCKADDR_IN6).status == Status.CONNECTION_INVALID


# --- DISCONNECT -------------------------------------------------------------------------------


@pytest.mark.rule("DISCONNECT-LOCAL-FLUSH")
@pytest.mark.digest("1.8")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_disconnect_flushes_local_qp(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.8 (after a graceful disconnect the provider performs an implicit flush).
    docs/semantics.md: DISCONNECT: NdkDisconnect completes SUCCESS (inline or PENDING and one
    completion, knob request_mode); the local QP's queued receives complete CANCELLED in
    posting order."""
    client = open_adapter(address=CLIENT, request_mode=mode)
    server = open_adapter(address=SERVER)
    a, b = establish(client, server, (SERVER, 7160))
    contexts = list(range(0x100, 0x103))
    post_receives(a.qp, a.mr, contexts, length=256)
    expect_call(a.connector.disconnect(), Status.SUCCESS, how(mode))
    expect_cancelled_receives(a, contexts)


@pytest.mark.rule("DISCONNECT-EVENT-EX")
@pytest.mark.digest("1.11")
@pytest.mark.reference("DISCONNECT-REASON")
@pytest.mark.parametrize("initiator", ["active", "passive"])
def test_peer_disconnect_event_reason_graceful(adapters: tuple[ndk.Adapter, ndk.Adapter], initiator: str) -> None:
    """digest 1.11 (the disconnect callback is invoked once, when the peer disconnects;
    ProviderDisconnectReason of the Ex callback). docs/semantics.md: DISCONNECT-REASON (1:
    the peer called NdkDisconnect). The side that disconnected gets no event.  Stated (digest
    1.11): the Disconnect succeeds, the peer gets one event (reason 1 or 0, "not provided"),
    the side that disconnected none; the choice: reason 1 rather than 0."""
    a, b = connected_pair(adapters, 7161, ex=True)
    local, peer = (a, b) if initiator == "active" else (b, a)
    with stated("digest 1.11"):
        assert local.connector.disconnect().wait(timeout=TIMEOUT) == Status.SUCCESS
        reason = expect_disconnect_event(peer, 1)
        assert local.connector.wait_disconnect(timeout=quiet_period(local.connector)) is None
        assert local.connector.disconnect_events == 0
    assert reason == 1


@pytest.mark.rule("DISCONNECT-EVENT-PLAIN")
@pytest.mark.digest("1.11")
@pytest.mark.parametrize("initiator", ["active", "passive"])
def test_peer_disconnect_event_plain_callback(adapters: tuple[ndk.Adapter, ndk.Adapter], initiator: str) -> None:
    """digest 1.11 (NdkDisconnectEventCallback: once, when the peer disconnects; it carries
    no reason: the binding reports 0)."""
    a, b = connected_pair(adapters, 7162, ex=False)
    local, peer = (a, b) if initiator == "active" else (b, a)
    assert local.connector.disconnect().wait(timeout=TIMEOUT) == Status.SUCCESS
    expect_disconnect_event(peer, 0)


@pytest.mark.rule("DISCONNECT-PEER-NOT-FLUSHED")
@pytest.mark.digest("1.11")
def test_peer_disconnect_does_not_flush(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.11 (the provider should not flush outstanding work requests when it indicates
    a peer-initiated disconnect). docs/semantics.md: DISCONNECT: the peer's queued receives
    stay queued; its own NdkDisconnect then flushes them (CANCELLED, in order)."""
    a, b = connected_pair(adapters, 7163, ex=True)
    contexts = list(range(0x100, 0x102))
    post_receives(b.qp, b.mr, contexts, length=256)
    assert a.connector.disconnect().wait(timeout=TIMEOUT) == Status.SUCCESS
    expect_disconnect_event(b, 1)
    expect_no_completion(b.cq)
    assert b.connector.disconnect().wait(timeout=TIMEOUT) == Status.SUCCESS
    expect_cancelled_receives(b, contexts)


@pytest.mark.rule("DISCONNECT-PEER-POSTS")
@pytest.mark.digest("1.7")
@pytest.mark.reference("DISCONNECT")
def test_peer_initiator_posts_after_disconnect(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.7 (CONNECTION_INVALID: QP not connected). docs/semantics.md: DISCONNECT /
    QP-STATE: after the peer disconnected, initiator posts on this side's QP are
    CONNECTION_INVALID inline and produce no completion."""
    a, b = connected_pair(adapters, 7164, ex=True)
    assert a.connector.disconnect().wait(timeout=TIMEOUT) == Status.SUCCESS
    expect_disconnect_event(b, 1)
    assert b.qp.send([b.mr.sge(0, 16)], request_context=1) == Status.CONNECTION_INVALID
    assert b.qp.write([b.mr.sge(0, 16)], a.mr.address, a.mr.remote_token,
                      request_context=2) == Status.CONNECTION_INVALID
    assert b.qp.read([b.mr.sge(0, 16)], a.mr.address, a.mr.remote_token,
                     request_context=3) == Status.CONNECTION_INVALID
    expect_no_completion(b.cq)


@pytest.mark.rule("DISCONNECT-LOCAL-POSTS")
@pytest.mark.digest("1.7")
def test_local_initiator_posts_after_disconnect(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.7, 3.6 (a disconnected QP cannot be reused). docs/semantics.md: QP-STATE:
    after its own NdkDisconnect, initiator posts are CONNECTION_INVALID inline, no completion."""
    a, b = connected_pair(adapters, 7165)
    assert a.connector.disconnect().wait(timeout=TIMEOUT) == Status.SUCCESS
    assert a.qp.send([a.mr.sge(0, 16)], request_context=1) == Status.CONNECTION_INVALID
    assert a.qp.write([a.mr.sge(0, 16)], b.mr.address, b.mr.remote_token,
                      request_context=2) == Status.CONNECTION_INVALID
    expect_no_completion(a.cq)


@pytest.mark.rule("DISCONNECT-TWICE")
@pytest.mark.digest("3.6")
@pytest.mark.reference("DISCONNECT")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_second_disconnect(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 3.6 (a disconnected connector cannot be reused). docs/semantics.md: DISCONNECT
    (a second one is CONNECTION_INVALID): inline, no completion, whatever the request mode."""
    client = open_adapter(address=CLIENT, request_mode=mode)
    server = open_adapter(address=SERVER)
    a, b = establish(client, server, (SERVER, 7166))
    assert a.connector.disconnect().wait(timeout=TIMEOUT) == Status.SUCCESS
    expect_inline(a.connector.disconnect(), Status.CONNECTION_INVALID)


@pytest.mark.rule("DISCONNECT-AFTER-PEER")
@pytest.mark.digest("3.6")
@pytest.mark.reference("DISCONNECT")
def test_disconnect_after_peer_disconnected(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 3.6 (the indication can race with a local Disconnect). docs/semantics.md:
    DISCONNECT: after a peer disconnect, Disconnect still succeeds once; a second one is
    CONNECTION_INVALID; no event reaches the side that disconnected first.  Stated (digest
    3.6, 1.11): the peer's event, and its Disconnect succeeding; the choice: inline, and the
    rest."""
    a, b = connected_pair(adapters, 7167, ex=True)
    with stated("digest 3.6, 1.11"):
        assert a.connector.disconnect().wait(timeout=TIMEOUT) == Status.SUCCESS
        expect_disconnect_event(b, 1)
        again = b.connector.disconnect()
        assert again.wait(timeout=TIMEOUT) == Status.SUCCESS
    expect_call(again, Status.SUCCESS, "inline")
    expect_inline(b.connector.disconnect(), Status.CONNECTION_INVALID)
    assert a.connector.wait_disconnect(timeout=quiet_period(a.connector)) is None


@pytest.mark.rule("DISCONNECT-UNCONNECTED")
@pytest.mark.digest("1.8")
@pytest.mark.reference("CONN-STATE")
@pytest.mark.parametrize("state", ["idle", "connecting", "passive-incoming"])
def test_disconnect_without_connection(adapters: tuple[ndk.Adapter, ndk.Adapter], state: str) -> None:
    """docs/semantics.md: UNCONNECTED / CONN-STATE: NdkDisconnect on a connector with no
    connection (idle, Connect unanswered, an unanswered connect event) is CONNECTION_INVALID
    inline."""
    client, server = adapters
    if state == "idle":
        expect_inline(new_connector(client).disconnect(), Status.CONNECTION_INVALID)
        return
    handshake = start(client, server, (SERVER, 7168))
    connector = handshake.client.connector if state == "connecting" else \
        handshake.server.connector
    expect_inline(connector.disconnect(), Status.CONNECTION_INVALID)
    assert not handshake.connect.done


@pytest.mark.rule("DISCONNECT-CLOSE")
@pytest.mark.digest("3.6")
@pytest.mark.reference("CONN-CLOSE")
def test_close_connected_connector(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 3.1, 3.6. docs/semantics.md: CONN-CLOSE / DISCONNECT-REASON: closing a connected
    connector without disconnecting flushes its QP (receives CANCELLED) and the peer gets one
    disconnect event with reason 2.  Stated (digest 3.1: the close cancels what is pending;
    1.11): the close succeeds, the receives complete CANCELLED in order, the peer gets one
    event (reason 2 or 0, "not provided"); the choice: reason 2."""
    a, b = connected_pair(adapters, 7169, ex=True)
    contexts = list(range(0x100, 0x102))
    post_receives(a.qp, a.mr, contexts, length=256)
    with stated("digest 3.1, 1.11"):
        assert a.connector.close().wait(timeout=TIMEOUT) == Status.SUCCESS
        expect_cancelled_receives(a, contexts)
        reason = expect_disconnect_event(b, 2)
    assert reason == 2


@pytest.mark.rule("DISCONNECT-ERROR")
@pytest.mark.digest("1.11")
@pytest.mark.reference("QP-ERROR")
def test_error_completion_ends_connection(open_adapter: OpenAdapter) -> None:
    """digest 1.11, 4.2 (ND2 QP error model). docs/semantics.md: QP-ERROR / DISCONNECT-REASON
    (3: an error completion ended the connection): a Send with no receive at the peer and
    rnr_timeout_ms=0 completes IO_TIMEOUT; the peer gets one disconnect event with reason 3
    and its queued work is flushed; Disconnect on the failed side still succeeds once."""
    client = open_adapter(address=CLIENT, rnr_timeout_ms=0)
    server = open_adapter(address=SERVER)
    a, b = establish(client, server, (SERVER, 7170), ex=True)
    assert a.qp.send([a.mr.sge(0, 32)], request_context=0x33) == Status.SUCCESS
    sent = a.cq.wait_results(1, timeout=TIMEOUT)[0]
    assert (sent.status, sent.type, sent.request_context) == (Status.IO_TIMEOUT,
                                                              ndk.OpType.SEND, 0x33)
    expect_disconnect_event(b, 3, exact=True)
    expect_call(a.connector.disconnect(), Status.SUCCESS, "inline")
    expect_inline(a.connector.disconnect(), Status.CONNECTION_INVALID)


@pytest.mark.rule("DISCONNECT-NO-REUSE")
@pytest.mark.digest("3.6")
@pytest.mark.reference("CONN-ACTIVE")
@pytest.mark.parametrize("reused", ["connector", "qp"])
def test_disconnected_objects_cannot_reconnect(adapters: tuple[ndk.Adapter, ndk.Adapter], reused: str) -> None:
    """digest 3.6 (a disconnected QP or connector cannot be reused). docs/semantics.md:
    CONN-ACTIVE: Connect with the disconnected connector, or with the disconnected QP on a new
    connector, is CONNECTION_ACTIVE inline; no connect event.  Stated (digest 3.6): the
    Connect fails; the choice: its status, inline."""
    client, server = adapters
    a, b = connected_pair(adapters, 7171)
    assert a.connector.disconnect().wait(timeout=TIMEOUT) == Status.SUCCESS
    if reused == "connector":
        call = a.connector.connect(new_qp(a), (SERVER, 7171))
    else:
        connector = new_connector(client)
        call = connector.connect(a.qp, (SERVER, 7171))
    expect_inline(call, Status.CONNECTION_ACTIVE, stated_in="digest 3.6")
    no_incoming(b.listener)


# --- ENDPOINT: reference counting (digest 3.5) ------------------------------------------------


@pytest.mark.rule("ENDPOINT-LISTENER-CLOSE-PENDS")
@pytest.mark.digest("3.5")
def test_listener_close_pends_until_connectors_close(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 3.5 (the listener's close stays pending until its accepted connectors close),
    3.1. docs/semantics.md: ENDPOINT-REFS: the close returns PENDING, completes exactly once
    when the last delivered connector closes; the connection keeps working meanwhile."""
    a, b = connected_pair(adapters, 7180)
    close = b.listener.close()
    assert close.status == Status.PENDING
    assert not close.done
    transfer(a, b, b"listener closing")
    assert b.connector.close().wait(timeout=TIMEOUT) == Status.SUCCESS
    assert close.wait(timeout=TIMEOUT) == Status.SUCCESS
    assert close.completions == 1


@pytest.mark.rule("ENDPOINT-LISTENER-PORT-HELD")
@pytest.mark.digest("3.5")
def test_listener_port_held_by_accepted_connector(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 3.5 (listener endpoint: +1 per accepted connector; until zero, new Listen,
    Connect on the same address:port fail). docs/semantics.md: ENDPOINT-REFS
    (SHARING_VIOLATION): after the listener's close, Listen and Connect from that port fail;
    once the accepted connector closes, both work."""
    client, server = adapters
    a, b = connected_pair(adapters, 7181)
    close = b.listener.close()
    other = server.create_listener().get(timeout=TIMEOUT)
    expect_call(other.listen((SERVER, 7181)), Status.SHARING_VIOLATION, "i/a")
    remote = listening(client, (CLIENT, 7281))
    side = Side(server)
    connector = new_connector(server)
    expect_call(connector.connect(side.qp, (CLIENT, 7281), src_address=(SERVER, 7181)),
                  Status.SHARING_VIOLATION, "i/a")
    no_incoming(remote)
    assert b.connector.close().wait(timeout=TIMEOUT) == Status.SUCCESS
    assert close.wait(timeout=TIMEOUT) == Status.SUCCESS
    expect_call(other.listen((SERVER, 7181)), Status.SUCCESS, "i/a")
    assert other.get_local_address() == (SERVER, 7181)


@pytest.mark.rule("ENDPOINT-LISTENER-CLOSING-REFUSES")
@pytest.mark.digest("3.5")
def test_closing_listener_refuses_new_requests(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 3.5 (reject new incoming connections as soon as the listener's close is
    issued). docs/semantics.md: CONN-REFUSED: while the close pends, a Connect is refused."""
    client, _ = adapters
    a, b = connected_pair(adapters, 7182)
    close = b.listener.close()
    assert close.status == Status.PENDING
    side = Side(client)
    connector = new_connector(client)
    expect_call(connector.connect(side.qp, (SERVER, 7182)), Status.CONNECTION_REFUSED, "i/a")
    transfer(a, b, b"the accepted connection is unaffected")


@pytest.mark.rule("ENDPOINT-CONNECT-PORT-IN-USE")
@pytest.mark.digest("3.5")
@pytest.mark.parametrize("holder", ["listener", "connector", "shared_endpoint"])
def test_connect_from_port_in_use(adapters: tuple[ndk.Adapter, ndk.Adapter], holder: str) -> None:
    """digest 1.8 (SHARING_VIOLATION: local address in use, i/a), 3.5 (a listener, a
    connector, a shared endpoint each hold their address:port; plain connects do not share
    ports). SHARING_VIOLATION inline or through the completion (the soft provider: inline,
    docs/semantics.md CONN-INLINE-ADDRESS); no connect event."""
    client, server = adapters
    listener = listening(server, (SERVER, 7183))
    held: object
    if holder == "listener":
        held = listening(client, (CLIENT, 7283))
    elif holder == "connector":
        held = establish(client, server, (SERVER, 7183), src=(CLIENT, 7283),
                         listener=listener)
    else:
        held = client.create_shared_endpoint((CLIENT, 7283)).get(timeout=TIMEOUT)
    side = Side(client)
    connector = new_connector(client)
    expect_call(connector.connect(side.qp, (SERVER, 7183), src_address=(CLIENT, 7283)),
                  Status.SHARING_VIOLATION, "i/a")
    no_incoming(listener)
    assert held is not None  # still open: it holds the port


@pytest.mark.rule("ENDPOINT-CONNECTOR-CLOSE-FREES-PORT")
@pytest.mark.digest("3.5")
def test_connector_close_frees_port(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 3.5 (connect endpoint: one reference held by the connector, released when it
    closes): after the connected connector closes, its port can be connected from again."""
    client, server = adapters
    listener = listening(server, (SERVER, 7184))
    a, b = establish(client, server, (SERVER, 7184), src=(CLIENT, 7284), listener=listener)
    assert a.connector.close().wait(timeout=TIMEOUT) == Status.SUCCESS
    again, b_again = establish(client, server, (SERVER, 7184), src=(CLIENT, 7284),
                               listener=listener)
    assert again.connector.get_local_address() == (CLIENT, 7284)
    assert b_again.connector.get_peer_address() == (CLIENT, 7284)


@pytest.mark.rule("ENDPOINT-EPHEMERAL-EXHAUSTED")
@pytest.mark.digest("1.8")
def test_connect_port_zero_exhausted(open_adapter: OpenAdapter) -> None:
    """digest 1.8 (TOO_MANY_ADDRESSES: port 0 and no ephemeral port, i/a). docs/semantics.md:
    ENDPOINT-REFS (knob ephemeral_ports of size 1): while a connector holds the only port, a
    port-0 Connect fails (inline or through the completion; soft: inline,
    CONN-INLINE-ADDRESS), no connect event; once it closes, the port is reused."""
    client = open_adapter(address=CLIENT, ephemeral_ports="50000-50000")
    server = open_adapter(address=SERVER)
    listener = listening(server, (SERVER, 7185))
    first, b_first = establish(client, server, (SERVER, 7185), listener=listener)
    assert first.connector.get_local_address() == (CLIENT, 50000)
    side = Side(client)
    connector = new_connector(client)
    expect_call(connector.connect(side.qp, (SERVER, 7185)), Status.TOO_MANY_ADDRESSES, "i/a")
    no_incoming(listener)
    assert first.connector.close().wait(timeout=TIMEOUT) == Status.SUCCESS
    second, b_second = establish(client, server, (SERVER, 7185), listener=listener)
    assert second.connector.get_local_address() == (CLIENT, 50000)
    assert b_second.connector.get_peer_address() == (CLIENT, 50000)


@pytest.mark.rule("ENDPOINT-SHARED-ENDPOINT-PORT")
@pytest.mark.digest("1.10")
def test_connect_with_shared_endpoint_uses_its_port(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.8 (NdkConnectWithSharedEndpoint), 1.10, 3.5: the connection's local address is
    the shared endpoint's address:port, seen by the peer; two connectors share the endpoint
    towards different destinations; data flows on both."""
    client, server = adapters
    endpoint = client.create_shared_endpoint((CLIENT, 7286)).get(timeout=TIMEOUT)
    sides, listeners = [], []
    for port in (7186, 7187):
        listener = listening(server, (SERVER, port))
        listeners.append(listener)
        a = Side(client)
        a.connector = new_connector(client)
        call = a.connector.connect_with_shared_endpoint(a.qp, endpoint, (SERVER, port))
        assert call.status == Status.PENDING
        b = Side(server)
        b.connector = incoming(listener)
        accept_call = b.connector.accept(b.qp)
        assert call.wait(timeout=TIMEOUT) == Status.SUCCESS and call.completions == 1
        assert a.connector.complete_connect().wait(timeout=TIMEOUT) == Status.SUCCESS
        assert accept_call.wait(timeout=TIMEOUT) == Status.SUCCESS
        assert a.connector.get_local_address() == (CLIENT, 7286)
        assert b.connector.get_peer_address() == (CLIENT, 7286)
        sides.append((a, b))
    for a, b in sides:
        transfer(a, b, b"through the shared endpoint")
    assert endpoint.get_local_address() == (CLIENT, 7286)


@pytest.mark.rule("ENDPOINT-SHARED-ENDPOINT-HELD")
@pytest.mark.digest("3.5")
def test_shared_endpoint_port_held_by_connector(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 3.5 (shared endpoint: +1 per connector connected through it; otherwise as the
    listener). docs/semantics.md: ENDPOINT-REFS / PARENT: the endpoint's close pends while
    the connector is open; its port stays held (CreateSharedEndpoint, Listen:
    SHARING_VIOLATION); when the connector closes the close completes and the port is free."""
    client, server = adapters
    endpoint = client.create_shared_endpoint((CLIENT, 7288)).get(timeout=TIMEOUT)
    listener = listening(server, (SERVER, 7188))
    a = Side(client)
    a.connector = new_connector(client)
    call = a.connector.connect_with_shared_endpoint(a.qp, endpoint, (SERVER, 7188))
    b = Side(server)
    b.connector = incoming(listener)
    accept_call = b.connector.accept(b.qp)
    assert call.wait(timeout=TIMEOUT) == Status.SUCCESS
    assert a.connector.complete_connect().wait(timeout=TIMEOUT) == Status.SUCCESS
    assert accept_call.wait(timeout=TIMEOUT) == Status.SUCCESS
    close = endpoint.close()
    assert close.status == Status.PENDING
    expect_call(client.create_shared_endpoint((CLIENT, 7288)), Status.SHARING_VIOLATION,
                "inline")
    other = client.create_listener().get(timeout=TIMEOUT)
    expect_call(other.listen((CLIENT, 7288)), Status.SHARING_VIOLATION, "i/a")
    assert not close.done
    assert a.connector.close().wait(timeout=TIMEOUT) == Status.SUCCESS
    assert close.wait(timeout=TIMEOUT) == Status.SUCCESS
    assert close.completions == 1
    expect_call(other.listen((CLIENT, 7288)), Status.SUCCESS, "i/a")


@pytest.mark.rule("ENDPOINT-ADDRESS-ALREADY-EXISTS")
@pytest.mark.digest("1.8")
def test_duplicate_four_tuple_through_shared_endpoint(adapters: tuple[ndk.Adapter, ndk.Adapter]) -> None:
    """digest 1.8 (ADDRESS_ALREADY_EXISTS: the 4-tuple already exists, i/a): a second
    connector through the same shared endpoint to the same destination fails (inline or
    through the completion; soft: inline, docs/semantics.md CONN-INLINE-ADDRESS), no connect
    event; the first connection proceeds."""
    client, server = adapters
    endpoint = client.create_shared_endpoint((CLIENT, 7289)).get(timeout=TIMEOUT)
    listener = listening(server, (SERVER, 7189))
    first = Side(client)
    first.connector = new_connector(client)
    call = first.connector.connect_with_shared_endpoint(first.qp, endpoint, (SERVER, 7189))
    assert call.status == Status.PENDING
    b = Side(server)
    b.connector = incoming(listener)
    second = Side(client)
    second.connector = new_connector(client)
    expect_call(second.connector.connect_with_shared_endpoint(second.qp, endpoint,
                                                                (SERVER, 7189)),
                  Status.ADDRESS_ALREADY_EXISTS, "i/a")
    no_incoming(listener)
    accept_call = b.connector.accept(b.qp)
    assert call.wait(timeout=TIMEOUT) == Status.SUCCESS
    assert first.connector.complete_connect().wait(timeout=TIMEOUT) == Status.SUCCESS
    assert accept_call.wait(timeout=TIMEOUT) == Status.SUCCESS
    transfer(first, b, b"the first 4-tuple")


@pytest.mark.rule("ENDPOINT-LISTENER-SERVES-MANY")
@pytest.mark.digest("3.5")
def test_listener_accepts_several_connections(open_adapter: OpenAdapter) -> None:
    """digest 1.9 (one connect event per incoming request, each with a new connector), 3.5:
    connectors from two adapters to one listener each get their own connection on the
    listener's address:port; data stays on its own connection."""
    first = open_adapter(address=CLIENT)
    second = open_adapter(address=THIRD)
    server = open_adapter(address=SERVER)
    listener = listening(server, (SERVER, 7190))
    a1, b1 = establish(first, server, (SERVER, 7190), listener=listener)
    a2, b2 = establish(second, server, (SERVER, 7190), listener=listener)
    assert b1.connector.get_local_address() == b2.connector.get_local_address() == \
        (SERVER, 7190)
    assert b1.connector.get_peer_address()[0] == CLIENT
    assert b2.connector.get_peer_address()[0] == THIRD
    transfer(a1, b1, b"one")
    transfer(a2, b2, b"two")
