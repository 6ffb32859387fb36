"""Zero-copy between processes over transport=shm (docs/transport.md, "Zero-copy"): buffers
from ndk.alloc are memfds the peer maps, so a Send, Write or Read from or into one is copied with
memcpy through the peer's mapping instead of process_vm_readv/writev.  The registration's rules
do not change: the same bounds and access statuses as for any other buffer, a deregistered
region is not readable, a Send's source cannot be given back while the Send may read it
(MR-IN-USE), and the peer's mappings go with the allocations.

The peer is a child process (transport_peer_child.py); a mapping of an allocation shows in the
process's /proc/self/maps as /memfd:ndk-harness-alloc with the memfd's inode, which is how these
tests see that the mapped path, and not cross-memory attach, moved the bytes.
"""

from __future__ import annotations

import os
from typing import Iterator

import pytest

import ndk
from ndk import OpType, Status

from transport_peer import connect_to_child, pattern
from transport_peer_child import ALL, one_result, shared_allocation_inodes

TIMEOUT = 10.0
MIB = 1 << 20
CLIENT, SERVER = "192.0.2.91", "192.0.2.92"


def connected_to(request, child_options: dict) -> Iterator[tuple[dict, object, dict]]:
    fabric = f"test-{os.getpid()}-zc-{request.node.name[:30]}".replace("[", "-").replace("]", "")
    knobs = {"transport": "shm", "shm_fabric": fabric, "rnr_timeout_ms": 60_000}
    yield from connect_to_child(knobs, CLIENT, knobs, SERVER, child_options)


@pytest.fixture
def connected(request):
    """The child's registered buffer is a bytearray: only this side's allocations are shared."""
    yield from connected_to(request, {})


@pytest.fixture
def shared_child(request):
    """The child's registered buffer is an ndk.alloc buffer."""
    yield from connected_to(request, {"shared": True})


@pytest.fixture(params=["bytearray", "alloc"])
def child_memory(request):
    """The child's registered buffer a bytearray, then an ndk.alloc buffer: (kind, connection)."""
    connection = connected_to(request, {"shared": request.param == "alloc"})
    yield request.param, next(connection)
    connection.close()  # the adapter and the child closed (connect_to_child's finally)


def registered(side: dict, buffer) -> ndk.Mr:
    mr = side["pd"].create_mr().get(timeout=TIMEOUT)
    assert mr.register(buffer, flags=ALL).wait(timeout=TIMEOUT) == Status.SUCCESS
    return mr


def inodes_at_child(child) -> set[int]:
    child.tell("maps")
    return set(child.read()["alloc_inodes"])


def test_alloc_is_a_writable_zero_filled_buffer():
    buffer = ndk.alloc(5000)
    view = memoryview(buffer)
    assert (len(buffer), view.nbytes, view.readonly) == (5000, 5000, False)
    assert bytes(view) == bytes(5000)
    view[:3] = b"abc"
    assert bytes(view[:3]) == b"abc"
    with pytest.raises(ValueError):
        ndk.alloc(0)


def test_a_1_mib_write_and_read_move_through_the_peers_mapping(connected):
    """A 1 MiB Write from an ndk.alloc buffer lands in the child's memory and a Read brings it
    back into another one, byte for byte; the child then has both allocations mapped."""
    side, child, peer = connected
    source, sink = ndk.alloc(MIB), ndk.alloc(MIB)
    data = pattern(MIB, 9)
    memoryview(source)[:] = data
    source_mr, sink_mr = registered(side, source), registered(side, sink)
    qp, cq = side["qp"], side["cq"]
    assert qp.write([source_mr.sge(0, MIB)], peer["address"], peer["token"],
                    request_context=1) == Status.SUCCESS
    assert one_result(cq).status == Status.SUCCESS
    assert qp.read([sink_mr.sge(0, MIB)], peer["address"], peer["token"],
                   request_context=2) == Status.SUCCESS
    read = one_result(cq)
    assert (read.status, read.type) == (Status.SUCCESS, OpType.READ)
    assert bytes(memoryview(sink)) == data
    ours = set(shared_allocation_inodes())
    assert len(ours) == 2
    assert ours <= inodes_at_child(child), "the child copied without mapping our allocations"


def test_a_send_from_the_peers_allocation_is_copied_through_our_mapping(shared_child):
    """The child's echo is a Send from its ndk.alloc buffer: this side maps the child's
    allocation to take it, and the bytes arrive (reversed, as the child echoes them)."""
    side, child, _ = shared_child
    size = 200_000
    buffer, mr, qp, cq = side["buffer"], side["mr"], side["qp"], side["cq"]
    assert qp.receive([mr.sge(1 << 19, 1 << 19)], request_context=7) == Status.SUCCESS
    child.tell(f"echo {size}")
    buffer[:size] = pattern(size)
    assert qp.send([mr.sge(0, size)], request_context=8) == Status.SUCCESS
    results = {r.request_context: r for r in (one_result(cq), one_result(cq))}
    assert (results[7].status, results[7].bytes_transferred) == (Status.SUCCESS, size)
    assert results[8].status == Status.SUCCESS
    assert bytes(buffer[1 << 19:(1 << 19) + size]) == pattern(size)[::-1]
    assert child.read() == {"received": size, "receive": 0, "send": 0}
    assert inodes_at_child(child) <= set(shared_allocation_inodes()), \
        "the child's allocation is not mapped here"


def test_a_write_past_the_peers_region_is_refused_as_for_any_buffer(child_memory):
    """digest 4.1: a Write running past the end of the target's region is an access error at
    the target, whatever memory either side's buffers are in: REMOTE_RESOURCES at the
    initiator (soft's answer for a remote access error, docs/semantics.md), the same for an
    ndk.alloc source as for a bytearray one, and nothing is mapped for a refused copy (the
    target maps an allocation at the copy, after its checks passed)."""
    kind, (side, child, peer) = child_memory
    source = ndk.alloc(8192)
    mr = registered(side, source)
    before = inodes_at_child(child)
    assert side["qp"].write([mr.sge(0, 8192)], peer["address"] + MIB - 4096, peer["token"],
                            request_context=3) == Status.SUCCESS
    assert one_result(side["cq"]).status == Status.REMOTE_RESOURCES, kind
    assert inodes_at_child(child) == before


def test_a_deregistered_region_is_not_readable_by_the_peer(child_memory):
    """digest 4.1 (remote token no longer valid): once the child deregisters its region, this
    side's Read of it completes ACCESS_VIOLATION and writes nothing into the sink, whether the
    region is an ndk.alloc buffer (mapped by nobody but its owner) or a bytearray, and whether
    the sink is one."""
    kind, (side, child, peer) = child_memory
    sink = ndk.alloc(4096)
    mr = registered(side, sink)
    qp, cq = side["qp"], side["cq"]
    assert qp.read([mr.sge(0, 4096)], peer["address"], peer["token"],
                   request_context=1) == Status.SUCCESS
    assert one_result(cq).status == Status.SUCCESS
    memoryview(sink)[:] = b"\x5a" * 4096
    child.tell("deregister")
    assert child.read() == {"deregistered": 0}
    assert qp.read([mr.sge(0, 4096)], peer["address"], peer["token"],
                   request_context=2) == Status.SUCCESS
    assert one_result(cq).status == Status.ACCESS_VIOLATION, kind
    assert bytes(memoryview(sink)) == b"\x5a" * 4096


def test_a_sends_allocation_cannot_be_given_back_while_the_send_waits(connected):
    """MR-IN-USE (docs/semantics.md; issue class "bytes from freed memory"): a Send from an
    ndk.alloc buffer waits at the child for a receive; deregistering its MR answers DEVICE_BUSY,
    and the child then receives the Send's own bytes."""
    side, child, _ = connected
    size = 65_536
    source = ndk.alloc(size)
    memoryview(source)[:] = pattern(size, 3)
    mr = registered(side, source)
    qp, cq = side["qp"], side["cq"]
    echo_at = 1 << 19
    assert qp.receive([side["mr"].sge(echo_at, size)], request_context=7) == Status.SUCCESS
    assert qp.send([mr.sge(0, size)], request_context=8) == Status.SUCCESS
    assert mr.deregister_mr().wait(timeout=TIMEOUT) == Status.DEVICE_BUSY
    child.tell(f"echo {size}")
    results = {r.request_context: r for r in (one_result(cq), one_result(cq))}
    assert results[8].status == Status.SUCCESS
    assert (results[7].status, results[7].bytes_transferred) == (Status.SUCCESS, size)
    assert bytes(side["buffer"][echo_at:echo_at + size]) == pattern(size, 3)[::-1]
    assert child.read() == {"received": size, "receive": 0, "send": 0}
    assert mr.deregister_mr().wait(timeout=TIMEOUT) == Status.SUCCESS


def test_1000_register_deregister_rounds_leave_no_mapping_behind(connected):
    """Each round: a new ndk.alloc buffer registered, written to the child, deregistered and
    dropped.  The child keeps no more than the allocation this side freed last (its mappings
    follow this side's allocations, docs/transport.md), and this side none of its own."""
    side, child, peer = connected
    qp, cq, pd = side["qp"], side["cq"], side["pd"]
    mr = pd.create_mr().get(timeout=TIMEOUT)
    baseline = set(shared_allocation_inodes())
    for round_ in range(1000):
        buffer = ndk.alloc(65_536)
        assert mr.register(buffer, flags=ALL).wait(timeout=TIMEOUT) == Status.SUCCESS
        assert qp.write([mr.sge(0, 65_536)], peer["address"], peer["token"],
                        request_context=round_) == Status.SUCCESS
        assert one_result(cq).status == Status.SUCCESS
        assert mr.deregister_mr().wait(timeout=TIMEOUT) == Status.SUCCESS
        del buffer
    assert set(shared_allocation_inodes()) == baseline
    assert len(inodes_at_child(child)) <= 1
