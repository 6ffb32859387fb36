"""Helpers of the connection and control-plane scenarios (test_connection.py, test_oid.py).

Only the public ``ndk`` API.  Establishment is spelled out step by step here (rather than
with ``ndk.scenario.resources.connect_sides``) because these scenarios are about it: they
choose the Ex or plain callbacks, the addresses, the read limits and the private data, and
look at every call on the way (digest 3.5, connection flow); their Sides are the resource
builder's (``Side(adapter)``):

* active side:  create_connector -> connect (PENDING until the peer answers) -> complete_connect;
* passive side: listen -> the connect event (listener.next_connection) -> accept (PENDING until
  the active side calls complete_connect).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union

import pytest

import ndk
from ndk import Status
from ndk.testing import OpenAdapter

from . import BUFFER_SIZE, CLIENT, SERVER, TIMEOUT, expect_call, quiet_period
from .resources import Side, listening
from .stated import stated

__all__ = [
    "Handshake", "accept", "adapter", "adapters", "connections", "counters", "establish",
    "expect_cancelled_receives", "expect_disconnect_event", "expect_inline",
    "expect_private_data", "finish", "how", "incoming", "listening", "local_endpoints",
    "new_connector", "new_qp", "no_incoming", "start", "transfer",
]


@pytest.fixture
def adapter(open_adapter: OpenAdapter) -> ndk.Adapter:
    """One adapter at SERVER (knob address=; these scenarios need to know its address, so they
    skip on a provider without knobs).  Overrides the plugin's ``adapter``."""
    return open_adapter(address=SERVER)


@pytest.fixture
def adapters(open_adapter: OpenAdapter) -> tuple[ndk.Adapter, ndk.Adapter]:
    """Two adapters, each on its own miniport: (client at CLIENT, server at SERVER)."""
    return open_adapter(address=CLIENT), open_adapter(address=SERVER)


def new_qp(side: Side, qp_context: int = 0x6E) -> ndk.Qp:
    """Another QP on the side's PD and CQ."""
    return side.pd.create_qp(side.cq, side.cq, qp_context=qp_context, receive_queue_depth=16,
                             initiator_queue_depth=16).get(timeout=TIMEOUT)


def new_connector(adapter: ndk.Adapter) -> ndk.Connector:
    return adapter.create_connector().get(timeout=TIMEOUT)


def incoming(listener: ndk.Listener) -> ndk.Connector:
    """The connector of the next connect event of ``listener`` (it must come)."""
    connector = listener.next_connection(timeout=TIMEOUT)
    assert connector is not None, "no connect event reached the listener"
    return connector


def no_incoming(listener: ndk.Listener) -> None:
    """No connect event reaches ``listener`` (within QUIET)."""
    assert listener.next_connection(timeout=quiet_period(listener)) is None


def expect_private_data(connector: ndk.Connector, sent: bytes) -> ndk.ConnectionData:
    """NdkGetConnectionData on ``connector`` returns the peer's private data ``sent`` (digest
    1.8): a size query (NULL, 0) succeeds with RDS >= len(sent), and a read of RDS bytes
    succeeds with the sent bytes first.  RDS may exceed what was sent ("RDS does not mean the
    peer sent that many bytes": RoCE carries private data in fixed-size CM fields, padded; the
    soft provider is exact, docs/semantics.md CONN-RDS).  Returns the full read."""
    size = connector.get_connection_data(private_data_length=0)
    assert size.status == Status.SUCCESS
    assert size.private_data == b""
    assert size.private_data_length >= len(sent)
    data = connector.get_connection_data(private_data_length=size.private_data_length)
    assert data.status == Status.SUCCESS
    assert data.private_data_length == size.private_data_length
    assert data.private_data[:len(sent)] == sent
    return data


def expect_inline(status_or_call: Union[Status, ndk.Call[object]], status: Status,
                  stated_in: Optional[str] = None) -> None:
    """An inline-only failure: the status returned, and (for a Call) no completion, ever.
    ``stated_in``: where NDK states that the call fails, checked first as what NDK states
    (``ndk.scenario.expect_failed``); the status and its being inline are then the choice."""
    if isinstance(status_or_call, ndk.Call):
        expect_call(status_or_call, status, "inline", stated_in)
        return
    if stated_in is not None:
        with stated(stated_in):
            assert status_or_call != Status.SUCCESS, "the call succeeded"
    assert status_or_call == status


def how(mode: str) -> str:
    """How a call that may pend completes under knob request_mode=``mode``."""
    return "inline" if mode == "inline" else "pending"


@dataclass
class Handshake:
    """An establishment in progress: the active side's connect call, the passive side's
    connector and (once accepted) its accept call."""

    client: Side
    server: Side
    connect: ndk.Call[None]
    _accept: Optional[ndk.Call[None]] = None

    @property
    def accept(self) -> ndk.Call[None]:
        assert self._accept is not None, "not accepted yet"
        return self._accept

    @accept.setter
    def accept(self, call: ndk.Call[None]) -> None:
        self._accept = call


def start(client_adapter: ndk.Adapter, server_adapter: ndk.Adapter, dest: tuple[str, int], *,
          src: Optional[tuple[str, int]] = None, listener: Optional[ndk.Listener] = None,
          connect_kwargs: Optional[dict[str, Any]] = None,
          client: Optional[Side] = None) -> Handshake:
    """The active side's Connect to ``dest`` and the passive side's connect event; nothing
    answered yet.  ``listener``: an existing listener at ``dest`` (else one is made);
    ``client``: an existing Side to connect (it gets a new connector)."""
    if listener is None:
        listener = listening(server_adapter, dest)
    if client is None:
        client = Side(client_adapter)
    client.connector = new_connector(client_adapter)
    connect = client.connector.connect(client.qp, dest, src_address=src,
                                       **(connect_kwargs or {}))
    assert connect.status == Status.PENDING
    server = Side(server_adapter)
    server.listener = listener
    server.connector = incoming(listener)
    return Handshake(client, server, connect)


def accept(handshake: Handshake, *, ex: bool = False, **accept_kwargs: Any) -> Handshake:
    """The passive side accepts (Accept or AcceptEx); the active side's Connect completes."""
    server = handshake.server
    call = (server.connector.accept_ex if ex else server.connector.accept)(server.qp,
                                                                          **accept_kwargs)
    assert call.status == Status.PENDING
    handshake.accept = call
    assert handshake.connect.wait(timeout=TIMEOUT) == Status.SUCCESS
    assert handshake.connect.completions == 1
    return handshake


def finish(handshake: Handshake, *, ex: bool = False) -> tuple[Side, Side]:
    """The active side completes (CompleteConnect or -Ex); the Accept completes; returns the
    two connected sides (client, server)."""
    client = handshake.client
    call = (client.connector.complete_connect_ex if ex else client.connector.complete_connect)()
    assert call.wait(timeout=TIMEOUT) == Status.SUCCESS
    assert handshake.accept.wait(timeout=TIMEOUT) == Status.SUCCESS
    assert handshake.accept.completions == 1
    return handshake.client, handshake.server


def establish(client_adapter: ndk.Adapter, server_adapter: ndk.Adapter, dest: tuple[str, int],
              *, ex: bool = False, src: Optional[tuple[str, int]] = None,
              listener: Optional[ndk.Listener] = None,
              connect_kwargs: Optional[dict[str, Any]] = None,
              accept_kwargs: Optional[dict[str, Any]] = None) -> tuple[Side, Side]:
    """A connection from ``client_adapter`` to a listener of ``server_adapter`` at ``dest``;
    ex=True uses AcceptEx and CompleteConnectEx (the disconnect callbacks with a reason)."""
    handshake = start(client_adapter, server_adapter, dest, src=src, listener=listener,
                      connect_kwargs=connect_kwargs)
    accept(handshake, ex=ex, **(accept_kwargs or {}))
    return finish(handshake, ex=ex)


def transfer(sender: Side, receiver: Side, payload: bytes, context: int = 0x77) -> None:
    """A Send of ``payload`` from sender to receiver: both complete SUCCESS and the bytes
    arrive."""
    offset = BUFFER_SIZE // 2
    receiver.buffer[offset:offset + len(payload)] = bytes(len(payload))
    assert receiver.qp.receive([receiver.mr.sge(offset, max(len(payload), 1))],
                               request_context=context) == Status.SUCCESS
    sender.buffer[0:len(payload)] = payload
    assert sender.qp.send([sender.mr.sge(0, len(payload))],
                          request_context=context + 1) == Status.SUCCESS
    sent = sender.cq.wait_results(1, timeout=TIMEOUT)[0]
    assert (sent.status, sent.type, sent.request_context) == (Status.SUCCESS, ndk.OpType.SEND,
                                                              context + 1)
    got = receiver.cq.wait_results(1, timeout=TIMEOUT)[0]
    assert (got.status, got.type, got.request_context, got.bytes_transferred) == (
        Status.SUCCESS, ndk.OpType.RECEIVE, context, len(payload))
    assert bytes(receiver.buffer[offset:offset + len(payload)]) == payload


def expect_cancelled_receives(side: Side, contexts: Sequence[int]) -> None:
    """The side's CQ holds exactly the receives ``contexts``, CANCELLED, in posting order."""
    results = side.cq.wait_results(len(contexts), timeout=TIMEOUT)
    assert [(r.status, r.type, r.request_context) for r in results] == [
        (Status.CANCELLED, ndk.OpType.RECEIVE, c) for c in contexts]
    assert side.cq.get_results_ex(16) == []


def expect_disconnect_event(side: Side, reason: int, *, exact: bool = False) -> int:
    """Exactly one disconnect event on the side's connector, with ``reason`` (0 for the plain
    callback), and no second one; returns the reason.  Unless ``exact`` (the scenario's rule is
    the reason itself), 0 is accepted too: ProviderDisconnectReason 0 means "not provided"
    (digest 1.11), which any provider may report (rdma_cm does not carry why a connection
    ended)."""
    got = side.connector.wait_disconnect(timeout=TIMEOUT)
    assert got is not None, "no disconnect event"
    assert got == reason if exact else got in (reason, 0)
    assert side.connector.wait_disconnect(timeout=quiet_period(side.connector)) is None
    assert side.connector.disconnect_events == 1
    return got


def counters(adapter: ndk.Adapter) -> dict[str, int]:
    """OID_NDK_STATISTICS of the adapter's miniport (must succeed)."""
    result = adapter.query_oid(ndk.Oid.NDK_STATISTICS)
    assert result.status == Status.SUCCESS
    assert result.counters is not None
    return result.counters


def connections(adapter: ndk.Adapter) -> ndk.OidResult:
    """OID_NDK_CONNECTIONS of the adapter's miniport (must succeed)."""
    result = adapter.query_oid(ndk.Oid.NDK_CONNECTIONS)
    assert result.status == Status.SUCCESS
    return result


def local_endpoints(adapter: ndk.Adapter) -> ndk.OidResult:
    """OID_NDK_LOCAL_ENDPOINTS of the adapter's miniport (must succeed)."""
    result = adapter.query_oid(ndk.Oid.NDK_LOCAL_ENDPOINTS)
    assert result.status == Status.SUCCESS
    return result
