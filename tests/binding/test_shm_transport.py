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
from ndk import OpFlag, Status

from transport_peer import connect_to_child, pattern, send_and_receive_echo, write_then_read_back
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
    """digest 4.1: a Write naming a token the peer does not have completes ACCESS_VIOLATION at
    the initiator (docs/semantics.md DATA-STATUS) and ends the connection (the QP flushes what
    follows)."""
    side, _, peer = connected
    mr, qp, cq = side["mr"], side["qp"], side["cq"]
    assert qp.write([mr.sge(0, 64)], peer["address"], peer["token"] ^ 0x5A5A,
                    request_context=1) == Status.SUCCESS
    assert qp.send([mr.sge(0, 8)], request_context=2) == Status.SUCCESS
    first, second = one_result(cq), one_result(cq)
    assert (first.request_context, first.status) == (1, Status.ACCESS_VIOLATION)
    assert (second.request_context, second.status) == (2, Status.CANCELLED)


def test_writes_answered_before_an_error_complete_first_and_land(connected):
    """digest 4.1 and 4.2: Writes in flight ahead of one that names a wrong token complete
    SUCCESS, in order, and their bytes land; the bad one completes ACCESS_VIOLATION
    (docs/semantics.md DATA-STATUS) and what follows CANCELLED.  (The peer answers successes with its counter and the error with an
    Ack message: the error never overtakes them, docs/transport.md "Answers".)"""
    side, child, peer = connected
    mr, qp, cq, buffer = side["mr"], side["qp"], side["cq"], side["buffer"]
    buffer[0:3072] = pattern(3072, 5)
    for i in range(3):
        assert qp.write([mr.sge(1024 * i, 1024)], peer["address"] + 1024 * i, peer["token"],
                        request_context=1 + i) == Status.SUCCESS
    assert qp.write([mr.sge(0, 64)], peer["address"], peer["token"] ^ 0x5A5A,
                    request_context=4) == Status.SUCCESS
    assert qp.send([mr.sge(0, 8)], request_context=5) == Status.SUCCESS
    results = [one_result(cq) for _ in range(5)]
    assert [(r.request_context, r.status) for r in results[:3]] == \
        [(1 + i, Status.SUCCESS) for i in range(3)]
    assert (results[3].request_context, results[3].status) == (4, Status.ACCESS_VIOLATION)
    assert (results[4].request_context, results[4].status) == (5, Status.CANCELLED)
    assert peek(child, 0, 3072) == pattern(3072, 5)


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


def peek(child, at: int, n: int) -> bytes:
    child.tell(f"peek {at} {n}")
    return bytes.fromhex(child.read()["bytes"])


def initiator_then_receive(cq, count: int, receive: int) -> list:
    """The next `count` initiator results (context, status), in the order they completed, and
    the receive of context `receive` among them (SUCCESS): the two queues complete in order
    each, not one against the other."""
    results = [one_result(cq) for _ in range(count + 1)]
    received = [r for r in results if r.request_context == receive]
    assert [r.status for r in received] == [Status.SUCCESS]
    return [(r.request_context, r.status) for r in results if r.request_context != receive]


def test_writes_in_flight_behind_a_held_send_wait_for_it(connected):
    """Requests are pipelined (docs/transport.md, "Data"), yet taken in order at the target
    (digest 1.7: a QP's requests are processed in order): a Send held for a receive keeps the
    Writes posted after it from landing until it goes on; then all complete in order."""
    side, child, peer = connected
    side["ad"].knobs.rnr_timeout_ms = 60_000
    child.tell("hold")
    assert child.read() == {"holding": True}
    mr, qp, cq, buffer = side["mr"], side["qp"], side["cq"], side["buffer"]
    data = pattern(4096, 11)
    buffer[4096:8192] = data
    assert qp.receive([mr.sge(1 << 19, 64)], request_context=9) == Status.SUCCESS
    assert qp.send([mr.sge(0, 64)], request_context=1) == Status.SUCCESS
    for i in range(4):
        assert qp.write([mr.sge(4096 + 1024 * i, 1024)], peer["address"] + 65536 + 1024 * i,
                        peer["token"], request_context=2 + i) == Status.SUCCESS
    assert peek(child, 65536, 4096) == bytes(4096), "a Write landed before the held Send"
    assert cq.get_results_ex(8) == []
    child.tell("echo 64")  # the receive the Send waited for; its echo comes back after
    # The echo's receive may complete before the Writes' Acks arrive: the initiator and receive
    # queues complete in order each, not one against the other (digest 4.2).
    assert initiator_then_receive(cq, 5, 9) == \
        [(1, Status.SUCCESS), (2, Status.SUCCESS), (3, Status.SUCCESS), (4, Status.SUCCESS),
         (5, Status.SUCCESS)]
    assert child.read() == {"received": 64, "receive": 0, "send": 0}
    assert peek(child, 65536, 4096) == data


def test_reads_in_flight_behind_a_held_send_wait_for_it(connected):
    """Reads are pipelined too (docs/transport.md, "Data") and taken in order at the target
    (digest 1.7): Reads posted behind a held Send bring nothing until it goes on; then each
    reads what the Write posted before it placed, the Write behind them lands only after they
    read, and all complete in posting order."""
    side, child, peer = connected
    side["ad"].knobs.rnr_timeout_ms = 60_000
    child.tell("hold")
    assert child.read() == {"holding": True}
    mr, qp, cq, buffer = side["mr"], side["qp"], side["cq"], side["buffer"]
    first, second = pattern(2048, 21), pattern(2048, 22)
    buffer[4096:6144] = first
    buffer[6144:8192] = second
    sinks = (16384, 20480, 24576)
    for sink in sinks:
        buffer[sink:sink + 2048] = b"\xee" * 2048
    remote = peer["address"] + 65536
    assert qp.receive([mr.sge(1 << 19, 64)], request_context=9) == Status.SUCCESS
    assert qp.send([mr.sge(0, 64)], request_context=1) == Status.SUCCESS
    assert qp.write([mr.sge(4096, 2048)], remote, peer["token"], request_context=2) == \
        Status.SUCCESS
    for i, sink in enumerate(sinks[:2]):
        assert qp.read([mr.sge(sink, 2048)], remote, peer["token"], request_context=3 + i) == \
            Status.SUCCESS
    assert qp.write([mr.sge(6144, 2048)], remote, peer["token"], request_context=5) == \
        Status.SUCCESS
    assert qp.read([mr.sge(sinks[2], 2048)], remote, peer["token"], request_context=6) == \
        Status.SUCCESS
    assert cq.get_results_ex(8) == []
    assert peek(child, 65536, 2048) == bytes(2048), "a Write landed before the held Send"
    assert all(bytes(buffer[s:s + 2048]) == b"\xee" * 2048 for s in sinks), \
        "a Read brought its bytes before the held Send"
    child.tell("echo 64")
    assert initiator_then_receive(cq, 6, 9) == [(i, Status.SUCCESS) for i in range(1, 7)]
    assert child.read() == {"received": 64, "receive": 0, "send": 0}
    assert bytes(buffer[sinks[0]:sinks[0] + 2048]) == first
    assert bytes(buffer[sinks[1]:sinks[1] + 2048]) == first
    assert bytes(buffer[sinks[2]:sinks[2] + 2048]) == second
    assert peek(child, 65536, 2048) == second


def test_a_read_fence_holds_a_write_until_the_read_before_it_completes(connected):
    """digest 2.5 (NDK_OP_FLAG_READ_FENCE: all prior reads complete first): a Write of a Read's
    sink, posted with READ_FENCE while the Read waits behind a held Send, carries what the
    Read brought, not what the sink held when it was posted (a small Write's bytes travel in
    its message, taken when it starts)."""
    side, child, peer = connected
    side["ad"].knobs.rnr_timeout_ms = 60_000
    mr, qp, cq, buffer = side["mr"], side["qp"], side["cq"], side["buffer"]
    brought = pattern(256, 31)
    buffer[4096:4352] = brought
    assert qp.write([mr.sge(4096, 256)], peer["address"] + 65536, peer["token"],
                    request_context=1) == Status.SUCCESS
    assert one_result(cq).status == Status.SUCCESS
    child.tell("hold")
    assert child.read() == {"holding": True}
    sink = 8192
    buffer[sink:sink + 256] = b"\xee" * 256
    assert qp.receive([mr.sge(1 << 19, 64)], request_context=9) == Status.SUCCESS
    assert qp.send([mr.sge(0, 64)], request_context=2) == Status.SUCCESS
    assert qp.read([mr.sge(sink, 256)], peer["address"] + 65536, peer["token"],
                   request_context=3) == Status.SUCCESS
    assert qp.write([mr.sge(sink, 256)], peer["address"] + 131072, peer["token"],
                    flags=OpFlag.READ_FENCE, request_context=4) == Status.SUCCESS
    assert cq.get_results_ex(8) == []
    child.tell("echo 64")
    assert initiator_then_receive(cq, 3, 9) == [(i, Status.SUCCESS) for i in (2, 3, 4)]
    assert child.read() == {"received": 64, "receive": 0, "send": 0}
    assert bytes(buffer[sink:sink + 256]) == brought
    assert peek(child, 131072, 256) == brought


def test_writes_behind_a_send_that_times_out_are_never_taken(connected):
    """digest 1.7 (receiver not ready): the held Send completes IO_TIMEOUT, the Writes posted
    behind it complete CANCELLED (the QP's error state), and none of them landed."""
    side, child, peer = connected
    side["ad"].knobs.rnr_timeout_ms = 50
    child.tell("hold")
    assert child.read() == {"holding": True}
    mr, qp, cq, buffer = side["mr"], side["qp"], side["cq"], side["buffer"]
    buffer[4096:8192] = pattern(4096, 12)
    assert qp.send([mr.sge(0, 64)], request_context=1) == Status.SUCCESS
    for i in range(4):
        assert qp.write([mr.sge(4096 + 1024 * i, 1024)], peer["address"] + 65536 + 1024 * i,
                        peer["token"], request_context=2 + i) == Status.SUCCESS
    results = [one_result(cq) for _ in range(5)]
    assert [(r.request_context, r.status) for r in results] == \
        [(1, Status.IO_TIMEOUT)] + [(2 + i, Status.CANCELLED) for i in range(4)]
    assert peek(child, 65536, 4096) == bytes(4096)


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
