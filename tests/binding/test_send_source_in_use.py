"""A Send's source cannot be given back while the Send may still read it (docs/semantics.md,
MR-IN-USE), on every soft transport.

The probe's reproducer: a Send waits at the peer for a receive; its sender deregisters the MR
and frees the buffer; the peer posts its receive.  Over shm the receive got another object's
bytes (65,536 x 0xCD) with SUCCESS on both sides, inproc answered ACCESS_VIOLATION, tcp
delivered the original bytes.  Now a posted Send (Write, Read) holds the MRs its SGL names
until it completes: NdkDeregisterMr answers STATUS_DEVICE_BUSY and the registration (with the
Python buffer) stays, a close pends until the Send completed; the peer's receive then gets the
Send's own bytes, SUCCESS on both sides, on inproc (two adapters of this process), shm and tcp
(the peer in a child process, transport_peer_child.py).
"""

from __future__ import annotations

import os

import pytest

import ndk
from ndk import OpType, Status

from transport_peer import connect_to_child, pattern
from transport_peer_child import one_result

TIMEOUT = 10.0
SIZE = 65_536
ECHO_AT = 1 << 19  # where the child's echo lands in the side's buffer
WAIT = {"rnr_timeout_ms": 60_000}  # the Send waits for the receive, never timed out here


@pytest.fixture(params=["shm", "tcp"])
def child_connected(request):
    """(side, child, peer) of transport_peer.connect_to_child over ``request.param``."""
    if request.param == "shm":
        knobs = {"transport": "shm", "shm_fabric": f"test-{os.getpid()}-source-in-use"}
        client, server = "192.0.2.61", "192.0.2.62"
    else:
        knobs = {"transport": "tcp"}
        client, server = "127.0.0.61", "127.0.0.62"
    yield from connect_to_child({**knobs, **WAIT}, client, {**knobs, **WAIT}, server)


def give_back(mr: ndk.Mr, how: str) -> ndk.Call:
    """The consumer tries to take the Send's source back: the call it made."""
    if how == "deregister":
        call = mr.deregister_mr()
        assert call.wait(timeout=TIMEOUT) == Status.DEVICE_BUSY
        assert mr.local_token != 0, "still registered"
    else:
        call = mr.close()
        assert call.status == Status.PENDING, "the close waits for the Send (digest 3.1)"
    return call


def taken_back(mr: ndk.Mr, how: str, call: ndk.Call, source: bytearray) -> None:
    """After the Send completed, the memory is the consumer's again."""
    if how == "deregister":
        assert mr.deregister_mr().wait(timeout=TIMEOUT) == Status.SUCCESS
    else:
        assert call.wait(timeout=TIMEOUT) == Status.SUCCESS
    source.clear()  # no longer held by a registration


@pytest.mark.parametrize("how", ["deregister", "close"])
def test_in_process(how):
    with ndk.open_adapter("soft", address="192.0.2.63", **WAIT) as client, \
            ndk.open_adapter("soft", address="192.0.2.64", **WAIT) as server:
        a, b = ndk.testing.connect_pair(client, server, timeout=TIMEOUT)
        source = bytearray(pattern(SIZE, 3))
        mr = a.pd.create_mr().get(timeout=TIMEOUT)
        assert mr.register(source).wait(timeout=TIMEOUT) == Status.SUCCESS
        sink = bytearray(SIZE)
        sink_mr = b.pd.create_mr().get(timeout=TIMEOUT)
        assert sink_mr.register(sink, flags=ndk.MrFlag.ALLOW_LOCAL_WRITE).wait(
            timeout=TIMEOUT) == Status.SUCCESS
        assert a.qp.send([mr.sge(0, SIZE)], request_context=1) == Status.SUCCESS
        call = give_back(mr, how)
        with pytest.raises(BufferError):
            source.clear()  # the registration still holds it
        assert b.qp.receive([sink_mr.sge(0, SIZE)], request_context=2) == Status.SUCCESS
        sent, received = one_result(a.cq), one_result(b.cq)
        assert (sent.status, sent.type) == (Status.SUCCESS, OpType.SEND)
        assert (received.status, received.bytes_transferred) == (Status.SUCCESS, SIZE)
        assert bytes(sink) == pattern(SIZE, 3)
        taken_back(mr, how, call, source)


@pytest.mark.parametrize("how", ["deregister", "close"])
def test_across_processes(child_connected, how):
    side, child, _ = child_connected
    qp, cq, echo_mr = side["qp"], side["cq"], side["mr"]
    source = bytearray(pattern(SIZE, 3))
    mr = side["pd"].create_mr().get(timeout=TIMEOUT)
    assert mr.register(source).wait(timeout=TIMEOUT) == Status.SUCCESS
    assert qp.receive([echo_mr.sge(ECHO_AT, SIZE)], request_context=7) == Status.SUCCESS
    # The child has no receive posted: the Send waits at the peer.
    assert qp.send([mr.sge(0, SIZE)], request_context=8) == Status.SUCCESS
    call = give_back(mr, how)
    with pytest.raises(BufferError):
        source.clear()
    child.tell(f"echo {SIZE}")  # posts its receive, then sends back what it got, reversed
    results = {r.request_context: r for r in (one_result(cq), one_result(cq))}
    assert (results[8].status, results[8].type) == (Status.SUCCESS, OpType.SEND)
    assert (results[7].status, results[7].bytes_transferred) == (Status.SUCCESS, SIZE)
    assert bytes(side["buffer"][ECHO_AT:ECHO_AT + SIZE]) == pattern(SIZE, 3)[::-1]
    assert child.read() == {"received": SIZE, "receive": 0, "send": 0}
    taken_back(mr, how, call, source)
