"""transport=shm between two processes (docs/transport.md): this process connects to a soft
adapter in a child (transport_peer_child.py), sends and receives, writes and reads its memory, and
survives the child's death as a connection error.

Each test runs in its own shm fabric (knob shm_fabric), so runs side by side never meet.
"""

from __future__ import annotations

import os
import signal

import pytest

import ndk
from ndk import Status

from transport_peer import connect_to_child, send_and_receive_echo, write_then_read_back
from transport_peer_child import ALL, one_result  # what the child's side uses too

TIMEOUT = 10.0
CLIENT, SERVER = "192.0.2.71", "192.0.2.72"


@pytest.fixture
def connected(request):
    """(side, child, peer memory): this process's connected QP, CQ, MR and buffer, and the
    child holding the passive side, both in a fabric of this test's own."""
    fabric = f"test-{os.getpid()}-{request.node.name[:30]}".replace("[", "-").replace("]", "")
    knobs = {"transport": "shm", "shm_fabric": fabric}
    yield from connect_to_child(knobs, CLIENT, knobs, SERVER)


@pytest.mark.parametrize("size", [0, 1, 400, 5000, 200_000])
def test_send_and_receive_across_processes(connected, size):
    """A Send of `size` bytes reaches the child's receive (inline in the slot up to a slot,
    pulled from this process's memory beyond) and comes back reversed."""
    send_and_receive_echo(connected, size)


def test_write_then_read_back_across_processes(connected):
    """An RDMA Write of 300 KB in three SGEs lands in the child's memory, and an RDMA Read
    brings it back into another range: byte for byte."""
    write_then_read_back(connected)


def test_write_with_a_wrong_token_fails_the_connection(connected):
    """digest 4.1: a Write naming a token the peer does not have completes with an access
    error at the initiator and ends the connection (the QP flushes what follows)."""
    side, _, peer = connected
    mr, qp, cq = side["mr"], side["qp"], side["cq"]
    assert qp.write([mr.sge(0, 64)], peer["address"], peer["token"] ^ 0x5A5A,
                    request_context=1) == Status.SUCCESS
    assert qp.send([mr.sge(0, 8)], request_context=2) == Status.SUCCESS
    first, second = one_result(cq), one_result(cq)
    assert first.request_context == 1 and first.status not in (Status.SUCCESS, Status.CANCELLED)
    assert (second.request_context, second.status) == (2, Status.CANCELLED)


def test_a_send_without_a_receive_times_out_at_the_peer(connected):
    """digest 1.7 (receiver not ready): the child posts no receive; the Send is held there
    for this side's rnr_timeout_ms and completes IO_TIMEOUT, ending the connection."""
    side, child, _ = connected
    side["ad"].knobs.rnr_timeout_ms = 50
    child.tell("hold")
    assert child.read() == {"holding": True}
    mr, qp, cq = side["mr"], side["qp"], side["cq"]
    assert qp.send([mr.sge(0, 16)], request_context=3) == Status.SUCCESS
    result = one_result(cq)
    assert (result.request_context, result.status) == (3, Status.IO_TIMEOUT)


def test_a_peer_killed_mid_connection_is_a_connection_error(connected):
    """docs/transport.md (Death): the child dies (SIGKILL) with this side's receive posted
    and a Send held at it: the survivor's QP flushes both (CANCELLED) and its connector gets
    a disconnect event with the error reason, within the time a wake-up takes; no hang."""
    side, child, _ = connected
    child.tell("hold")
    assert child.read() == {"holding": True}
    mr, qp, cq = side["mr"], side["qp"], side["cq"]
    side["ad"].knobs.rnr_timeout_ms = 60_000  # held until the death, not timed out
    assert qp.receive([mr.sge(0, 64)], request_context=4) == Status.SUCCESS
    assert qp.send([mr.sge(64, 64)], request_context=5) == Status.SUCCESS
    child.process.send_signal(signal.SIGKILL)
    child.process.wait(timeout=TIMEOUT)
    results = {r.request_context: r.status for r in (one_result(cq), one_result(cq))}
    assert results == {4: Status.CANCELLED, 5: Status.CANCELLED}
    assert side["connector"].wait_disconnect(timeout=TIMEOUT) is not None
    assert qp.send([mr.sge(0, 8)], request_context=6) == Status.SUCCESS
    assert one_result(cq).status == Status.CANCELLED  # the QP stays in the error state


def test_addresses_are_claimed_host_wide(connected):
    """docs/transport.md (Addresses): the child holds SERVER in this fabric: an adapter of this
    process cannot take it (ADDRESS_ALREADY_EXISTS), while another fabric can."""
    side, _, _ = connected
    fabric = side["ad"].knobs.shm_fabric
    with pytest.raises(ndk.NdkError) as error:
        ndk.open_adapter("soft", transport="shm", shm_fabric=fabric, address=SERVER)
    assert error.value.status == Status.ADDRESS_ALREADY_EXISTS
    assert "held by process" in str(error.value)
    with ndk.open_adapter("soft", transport="shm", shm_fabric=fabric + "-other",
                          address=SERVER) as other:
        assert other.addresses == [SERVER]
