"""Connection establishment, rejection, disconnection and transfers of every size between the
two sides of the ``pair`` fixture (digest 1.7, 1.8, 1.11, 3.5, 3.6).

test_connection.py checks these rules between two adapters of one provider in the test's
process.  Here the passive side is wherever ``--ndk-peer`` puts it and on whichever provider
``--ndk-peer-provider`` names, so the same rules are checked across processes, hosts and
providers (soft:tcp against Linux siw: docs/providers.md, "The VM lane").  Establishment on
the pair's adapters goes through the pair's listener, which stays listening: a second
connection from ``a``'s adapter is a new connector and QP there, a new connector and QP at
the listener's side.  Transfers are checked by reading the bytes back, never by looking at
the target's memory as soon as the initiator's completion is in: on iWARP a Write completes
at the initiator once TCP has its bytes (RFC 5040 has no answer to a Write), while a Read's
response comes after everything before it was placed (RDMAP orders a stream).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

import ndk
from ndk import OpType, Status
from ndk.testing import OPTION, Pair, skip

from ndk.scenario import quiet_period, TIMEOUT, drain, expect_no_completion, pattern
from ndk.scenario.work_requests import LOCAL_WRITE, REMOTE_ALL, Region, expect_result, region
from ndk.scenario.connection import expect_private_data
from ndk.scenario.resources import Side
from ndk.scenario.stated import stated


# A size of every kind: one byte, a page and one (two DDP segments at any MULPDU), 64 KiB and
# one (several FPDUs, and more than one read of the stream), 1 MiB (the size the iWARP issue
# names; many segments).
TRANSFER_SIZES = (1, 4097, 65537, 1 << 20)


@dataclass
class Handshake:
    """A second establishment between the pair's adapters, in progress."""

    connector: ndk.Connector  # the active side's, on a's adapter
    qp: ndk.Qp
    connect: ndk.Call[None]
    incoming: ndk.Connector  # the passive side's, from the pair's listener
    incoming_qp: ndk.Qp


def _qp(end: Side) -> ndk.Qp:
    return end.pd.create_qp(end.cq, end.cq, receive_queue_depth=8,
                            initiator_queue_depth=8).get(timeout=TIMEOUT)


def _incoming(listener: ndk.Listener) -> ndk.Connector:
    connector = listener.next_connection(timeout=TIMEOUT)
    assert connector is not None, "no connect event at the pair's listener"
    return connector


def start(a: Side, b: Side, **connect_kwargs: Any) -> Handshake:
    """A's adapter connects a new QP to the pair's listener (on b's adapter); b's side takes the
    connect event and makes a QP to answer it with."""
    connector = a.adapter.create_connector().get(timeout=TIMEOUT)
    qp = _qp(a)
    connect = connector.connect(qp, b.listener.get_local_address(), **connect_kwargs)
    assert connect.status == Status.PENDING
    return Handshake(connector, qp, connect, _incoming(b.listener), _qp(b))


def skip_beyond_transfer_length(a: Side, b: Side, size: int) -> None:
    """Skip a transfer of ``size`` bytes that either side's MaxTransferLength refuses."""
    limit = min(a.adapter.query_info().max_transfer_length,
                b.adapter.query_info().max_transfer_length)
    if size > limit:
        pytest.skip(f"MaxTransferLength {limit} of this pair is below {size} bytes")


def caller_data(a: Side, b: Side, limit: int) -> bytes:
    """Recognisable private data no larger than either side may carry (MaxCallerData of the
    active side, MaxCalleeData of the passive side), at most ``limit`` bytes."""
    size = min(limit, a.adapter.query_info().max_caller_data,
               b.adapter.query_info().max_callee_data)
    return pattern(size, seed=9)


# --- CONNECT / ACCEPT --------------------------------------------------------------------


@pytest.mark.rule("CONNECT-PAIR-PRIVATE-DATA")
@pytest.mark.digest("1.8")
def test_private_data_crosses_both_ways(pair: Pair) -> None:
    """digest 1.8 (NdkGetConnectionData: the peer's private data, before Accept on the passive
    side and after the Connect completed on the active side), 3.5 (the connection flow).
    docs/semantics.md: CONN-RDS (a provider may pad, so the sent bytes are a prefix).  The
    Connect's data reaches the listener's side before it accepts; the Accept's data reaches
    the active side when its Connect completes SUCCESS; CompleteConnect and the Accept then
    complete SUCCESS and a Send crosses the new connection."""
    a, b = pair
    sent = caller_data(a, b, 48)
    handshake = start(a, b, private_data=sent)
    expect_private_data(handshake.incoming, sent)
    answer = bytes(reversed(sent))
    accept = handshake.incoming.accept(handshake.incoming_qp, private_data=answer)
    assert accept.status == Status.PENDING
    assert handshake.connect.wait(timeout=TIMEOUT) == Status.SUCCESS
    expect_private_data(handshake.connector, answer)
    assert handshake.connector.complete_connect().wait(timeout=TIMEOUT) == Status.SUCCESS
    assert accept.wait(timeout=TIMEOUT) == Status.SUCCESS
    sink = region(b.pd, 64, flags=LOCAL_WRITE)
    source = region(a.pd, 64, fill=pattern(64, seed=3))
    assert handshake.incoming_qp.receive([sink.sge(0, 64)], request_context=0xB1) == \
        Status.SUCCESS
    assert handshake.qp.send([source.sge(0, 64)], request_context=0xA1) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 0xA1)
    expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 0xB1)
    assert bytes(sink.buf) == pattern(64, seed=3)


@pytest.mark.rule("CONNECT-PAIR-READ-LIMITS")
@pytest.mark.digest("1.8")
@pytest.mark.reference("CONN-READ-LIMITS")
def test_read_limits_cross_swapped(pair: Pair) -> None:
    """digest 1.8 (read-limit rule: the passive side sees the active side's requested limits,
    its outbound being the peer's inbound). docs/semantics.md: CONN-READ-LIMITS.  The active
    side asks for inbound 2, outbound 1 (both within every adapter's maxima here); before it
    accepts, the passive side reads inbound 1, outbound 2.  Stated (digest 1.8): SUCCESS, and
    each limit written and at most the peer's opposite request; the choice: exactly it."""
    a, b = pair
    for end in (a, b):
        info = end.adapter.query_info()
        if min(info.max_inbound_read_limit, info.max_outbound_read_limit) < 2:
            pytest.skip(f"{end.adapter.provider}: read limits below 2 "
                        f"({info.max_inbound_read_limit}, {info.max_outbound_read_limit})")
    handshake = start(a, b, inbound_read_limit=2, outbound_read_limit=1)
    data = handshake.incoming.get_connection_data()
    with stated("digest 1.8"):
        assert data.status == Status.SUCCESS
        assert data.inbound_read_limit <= 1, "inbound read limit above the peer's outbound"
        assert data.outbound_read_limit <= 2, "outbound read limit above the peer's inbound"
    assert (data.inbound_read_limit, data.outbound_read_limit) == (1, 2)


# --- REJECT --------------------------------------------------------------------------------


@pytest.mark.rule("REJECT-PAIR")
@pytest.mark.digest("1.8")
@pytest.mark.reference("CONN-REFUSED")
def test_reject_reaches_the_active_side(pair: Pair) -> None:
    """digest 1.8 (NdkReject; CONNECTION_REFUSED: the peer rejected). docs/semantics.md:
    CONN-REFUSED: NdkReject returns SUCCESS; the Connect completes CONNECTION_REFUSED, once;
    the reject's private data is readable on the active side; the pair's own connection still
    carries a Send afterwards.  Stated (digest 1.8, 1.7): all but the private data read after
    the refusal, which is the choice."""
    a, b = pair
    handshake = start(a, b)
    reason = caller_data(a, b, 13)
    with stated("digest 1.8"):
        assert handshake.incoming.reject(private_data=reason) == Status.SUCCESS
        assert handshake.connect.wait(timeout=TIMEOUT) == Status.CONNECTION_REFUSED
        assert handshake.connect.completions == 1
    expect_private_data(handshake.connector, reason)
    with stated("digest 1.7"):
        sink = region(b.pd, 16, flags=LOCAL_WRITE)
        source = region(a.pd, 16, fill=pattern(16, seed=4))
        assert b.qp.receive([sink.sge(0, 16)], request_context=0xB2) == Status.SUCCESS
        assert a.qp.send([source.sge(0, 16)], request_context=0xA2) == Status.SUCCESS
        expect_result(a.cq, Status.SUCCESS, OpType.SEND, 0xA2)
        expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 0xB2)


# --- DISCONNECT ----------------------------------------------------------------------------


def _post_receives(end: Side, contexts: list[int]) -> Region:
    sink = region(end.pd, 256, flags=LOCAL_WRITE)
    for context in contexts:
        assert end.qp.receive([sink.sge(0, 256)], request_context=context) == Status.SUCCESS
    return sink


@pytest.mark.rule("DISCONNECT-PAIR")
@pytest.mark.digest("1.11")
@pytest.mark.reference("DISCONNECT-REASON")
@pytest.mark.parametrize("initiator", ["active", "passive"])
def test_disconnect_from_either_side(pair: Pair, initiator: str) -> None:
    """digest 1.8 (a graceful disconnect flushes the local QP), 1.11 (the peer's disconnect
    callback, once; the provider should not flush the peer's requests when it indicates it).
    docs/semantics.md: DISCONNECT-REASON (1, or 0 where the provider cannot say why):
    NdkDisconnect completes SUCCESS; the side that disconnected gets its queued receives back
    CANCELLED in order and no event; the other side gets one disconnect event, and by the
    time its own NdkDisconnect completes its receives are back CANCELLED in order (whether
    they stayed queued until then, as the digest asks, is rule DISCONNECT-PEER-NOT-FLUSHED of
    test_connection.py, which siw does not follow).  Stated (digest 1.8, 1.7, 1.11, 3.6): the
    Disconnects succeed, each side's receives come back CANCELLED, the peer gets one event
    and the side that disconnected none; the choice: the reason (1 or 0) and the order of the
    cancelled receives."""
    a, b = pair
    local, peer = (a, b) if initiator == "active" else (b, a)
    _post_receives(local, [0x10, 0x11])
    _post_receives(peer, [0x20, 0x21])
    with stated("digest 1.8, 1.7, 1.11, 3.6"):
        assert local.connector.disconnect().wait(timeout=TIMEOUT) == Status.SUCCESS
        local_flushed = [(r.status, r.type, r.request_context) for r in drain(local.cq, 2)]
        assert sorted(local_flushed) == [
            (Status.CANCELLED, OpType.RECEIVE, 0x10), (Status.CANCELLED, OpType.RECEIVE, 0x11)]
        reason = peer.connector.wait_disconnect(timeout=TIMEOUT)
        assert reason is not None, "no disconnect event"
        assert peer.connector.wait_disconnect(timeout=quiet_period(peer.connector)) is None
        assert local.connector.wait_disconnect(timeout=quiet_period(local.connector)) is None
        assert peer.connector.disconnect().wait(timeout=TIMEOUT) == Status.SUCCESS
        peer_flushed = [(r.status, r.type, r.request_context) for r in drain(peer.cq, 2)]
        assert sorted(peer_flushed) == [
            (Status.CANCELLED, OpType.RECEIVE, 0x20), (Status.CANCELLED, OpType.RECEIVE, 0x21)]
    assert reason in (1, 0), f"disconnect event: {reason!r}"
    assert [context for _, _, context in local_flushed] == [0x10, 0x11]
    assert [context for _, _, context in peer_flushed] == [0x20, 0x21]


# --- transfers of every size ----------------------------------------------------------------


@pytest.mark.rule("WRITE-READ-PAIR-SIZES")
@pytest.mark.digest("1.7")
@pytest.mark.parametrize("size", TRANSFER_SIZES, ids=lambda size: f"{size}B")
def test_write_then_read_back(pair: Pair, size: int) -> None:
    """digest 1.7 (NdkWrite, NdkRead: the bytes of the local SGL to, or from, the remote
    region; BytesTransferred). A Write of ``size`` bytes to the passive side's region, then a
    Read of the same range into a zeroed local sink: both complete SUCCESS in order and the
    bytes read back are the bytes written (BytesTransferred is defined for receives only,
    digest 2.3, so it is not looked at)."""
    a, b = pair
    skip_beyond_transfer_length(a, b, size)
    data = pattern(size, seed=size % 97)
    source = region(a.pd, size, fill=data)
    sink = region(a.pd, size, flags=LOCAL_WRITE | ndk.MrFlag.RDMA_READ_SINK)
    target = region(b.pd, size, flags=REMOTE_ALL)
    assert a.qp.write([source.sge(0, size)], target.address, target.remote_token,
                      request_context=0x51) == Status.SUCCESS
    assert a.qp.read([sink.sge(0, size)], target.address, target.remote_token,
                     request_context=0x52) == Status.SUCCESS
    results = drain(a.cq, 2)
    assert [(r.status, r.type, r.request_context) for r in results] == [
        (Status.SUCCESS, OpType.WRITE, 0x51), (Status.SUCCESS, OpType.READ, 0x52)]
    assert bytes(sink.buf) == data
    expect_no_completion(b.cq)


@pytest.mark.rule("SEND-PAIR-SIZES")
@pytest.mark.digest("1.7")
@pytest.mark.parametrize("size", TRANSFER_SIZES, ids=lambda size: f"{size}B")
def test_send_of_every_size(pair: Pair, size: int) -> None:
    """digest 1.7 (NdkSend into the peer's posted receive; the receive's BytesTransferred).
    A Send of ``size`` bytes into a receive of exactly that size: SEND SUCCESS at the sender,
    RECEIVE SUCCESS with ``size`` bytes at the receiver, the bytes intact."""
    a, b = pair
    skip_beyond_transfer_length(a, b, size)
    data = pattern(size, seed=size % 89)
    source = region(a.pd, size, fill=data)
    sink = region(b.pd, size, flags=LOCAL_WRITE)
    assert b.qp.receive([sink.sge(0, size)], request_context=0x61) == Status.SUCCESS
    assert a.qp.send([source.sge(0, size)], request_context=0x62) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 0x62)
    got = drain(b.cq, 1)[0]
    assert (got.status, got.type, got.request_context, got.bytes_transferred) == (
        Status.SUCCESS, OpType.RECEIVE, 0x61, size)
    assert bytes(sink.buf) == data


# --- a peer that dies --------------------------------------------------------------------


@pytest.mark.rule("DISCONNECT-PAIR-PEER-KILLED")
@pytest.mark.digest("1.11")
def test_peer_killed(pair: Pair, ndk_peer: Any) -> None:
    """digest 1.11 (the disconnect callback when the connection ends), 1.7 (queued requests
    complete, CANCELLED once the QP is flushed). docs/semantics.md: TCP-CLOSE (a peer process
    killed: its kernel's FIN or reset, what was in flight CANCELLED); docs/transport.md, "A
    peer that dies" (shm); DISCONNECT (after a peer's end, NdkDisconnect succeeds once): the
    peer's interpreter dies (SIGKILL) with a receive posted here and nothing sent; this side's
    connector gets a disconnect event, its NdkDisconnect then completes SUCCESS, and the
    receive completes CANCELLED (flushed by that Disconnect, or already at the peer's end):
    no hang, no crash.  Needs a peer in a process of its own (--ndk-peer popen, netns=NAME,
    ssh=HOST)."""
    if ndk_peer is None:
        skip(OPTION, "the pair's passive side runs in this process (--ndk-peer local), "
                   "which cannot be killed without the test: --ndk-peer popen kills a peer "
                   "process")
    a, _ = pair
    sink = region(a.pd, 64, flags=LOCAL_WRITE)
    assert a.qp.receive([sink.sge(0, 64)], request_context=0x71) == Status.SUCCESS
    ndk_peer.kill()
    assert a.connector.wait_disconnect(timeout=TIMEOUT) is not None, "no disconnect event"
    assert a.connector.disconnect().wait(timeout=TIMEOUT) == Status.SUCCESS
    expect_result(a.cq, Status.CANCELLED, OpType.RECEIVE, 0x71)
