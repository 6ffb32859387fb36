"""Work requests on connected QPs: Send and Receive, SRQ receives on the data path, the inline
limits of a post, deferred requests (digest 1.6, 1.7, 2.3, 2.5, 3.2, 3.3, 3.4, 4.2;
docs/semantics.md QP-ERROR, POST-CHECKS, DATA-STATUS, PROGRESS)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import ndk
from ndk import CqNotify, MrFlag, OpFlag, OpType, Status
from ndk.testing import OpenAdapter, Pair, requires

from ndk.scenario import (CLIENT, drain, expect_no_completion, expect_request, pattern,
                          quiet_period, SERVER, Side, TIMEOUT)
from ndk.scenario.resources import connect_sides
from ndk.scenario.stated import stated
from ndk.scenario.work_requests import (expect_connection_failed, expect_refused,
                                        expect_result, one, Region, region, REMOTE_WRITE,
                                        unregistered_sge)

UNDEFINED_FLAG = 0x8000   # no NDK_OP_FLAG_* has this bit (digest 2.5)


# --- Send / Receive ------------------------------------------------------------------------


@pytest.mark.rule("SEND-DATA")
@pytest.mark.digest("1.7")
def test_send_bytes_arrive(pair: Pair) -> None:
    """digest 1.7 (NdkSend, NdkReceive), 2.3: the bytes of a Send land in the posted receive,
    exactly; the receive's BytesTransferred is the length sent, its Type RECEIVE; the sender's
    Type SEND; both STATUS_SUCCESS with ProviderErrorCode 0. Bytes past the message are
    untouched."""
    a, b = pair
    source = region(a.pd, 4096, fill=pattern(4096, seed=3))
    sink = region(b.pd, 8192, fill=b"\xee" * 8192)
    assert b.qp.receive([sink.sge(0, 8192)], request_context=0x11) == Status.SUCCESS
    assert a.qp.send([source.sge(0, 3000)], request_context=0x22) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 0x22)
    received = expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 0x11)
    assert received.bytes_transferred == 3000
    assert bytes(sink.buf[:3000]) == pattern(4096, seed=3)[:3000]
    assert bytes(sink.buf[3000:]) == b"\xee" * (8192 - 3000)
    assert bytes(source.buf) == pattern(4096, seed=3)   # the source is only read


@pytest.mark.rule("SEND-CONTEXTS")
@pytest.mark.digest("2.3")
def test_send_reports_request_and_qp_contexts(open_adapter: OpenAdapter) -> None:
    """digest 2.3: every NDK_RESULT carries the RequestContext of its request and the
    QPContext given to NdkCreateQp, on both sides (non-Ex results too)."""
    a, b = connect_sides(
        Side(open_adapter(address=CLIENT), cq_depth=16, qp_context=0xA11CE, buffer_size=0),
        Side(open_adapter(address=SERVER), cq_depth=16, qp_context=0xB0B, buffer_size=0))
    source, sink = region(a.pd, fill=b"ctx"), region(b.pd)
    assert b.qp.receive([sink.sge(0, 64)], request_context=0x5EED) == Status.SUCCESS
    assert a.qp.send([source.sge(0, 3)], request_context=0xC0FFEE) == Status.SUCCESS
    sent = one(a.cq, ex=False)
    assert (sent.status, sent.request_context, sent.qp_context) == \
        (Status.SUCCESS, 0xC0FFEE, 0xA11CE)
    received = one(b.cq, ex=False)
    assert (received.status, received.request_context, received.qp_context) == \
        (Status.SUCCESS, 0x5EED, 0xB0B)
    assert received.bytes_transferred == 3
    # still connected: nothing else happened
    assert all(obj.is_open for obj in (a.connector, b.connector, b.listener))


@pytest.mark.rule("SEND-GATHER")
@pytest.mark.digest("2.4")
@pytest.mark.pair(max_initiator_request_sge=4)
def test_send_gathers_sges_in_order(pair: Pair) -> None:
    """digest 1.7, 2.4: a Send's SGL is gathered in SGE order, from several places of one MR
    and from another MR of the same PD, into one message."""
    a, b = pair
    first = region(a.pd, fill=pattern(4096, seed=5))
    second = region(a.pd, fill=pattern(4096, seed=6))
    sink = region(b.pd)
    sgl = [first.sge(100, 10), second.sge(0, 20), first.sge(2000, 30)]
    assert b.qp.receive([sink.sge(0, 4096)], request_context=1) == Status.SUCCESS
    assert a.qp.send(sgl, request_context=2) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 2)
    assert expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 1).bytes_transferred == 60
    expected = bytes(first.buf[100:110]) + bytes(second.buf[0:20]) + bytes(first.buf[2000:2030])
    assert bytes(sink.buf[:60]) == expected
    assert bytes(sink.buf[60:]) == bytes(4096 - 60)


@pytest.mark.rule("RECV-SCATTER")
@pytest.mark.digest("2.4")
@pytest.mark.pair(max_receive_request_sge=4)
def test_receive_scatters_sges_in_order(pair: Pair) -> None:
    """digest 1.7, 2.4: an incoming message fills the receive's SGEs in order; a message
    shorter than the SGL leaves the rest of the last SGE untouched; BytesTransferred is the
    message length."""
    a, b = pair
    source = region(a.pd, fill=pattern(100, seed=7))
    sink = region(b.pd, fill=b"\x55" * 4096)
    sgl = [sink.sge(1000, 16), sink.sge(0, 32), sink.sge(3000, 200)]
    assert b.qp.receive(sgl, request_context=9) == Status.SUCCESS
    assert a.qp.send([source.sge(0, 100)], request_context=8) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 8)
    assert expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 9).bytes_transferred == 100
    data = pattern(100, seed=7)
    assert bytes(sink.buf[1000:1016]) == data[:16]
    assert bytes(sink.buf[0:32]) == data[16:48]
    assert bytes(sink.buf[3000:3052]) == data[48:]
    assert bytes(sink.buf[3052:3200]) == b"\x55" * 148
    assert bytes(sink.buf[32:1000]) == b"\x55" * 968


@pytest.mark.rule("SEND-ZERO-LENGTH")
@pytest.mark.digest("1.7")
@pytest.mark.parametrize("sgl", ["empty", "zero-length-sge"])
def test_zero_length_send(pair: Pair, sgl: str) -> None:
    """digest 1.7: a Send with no SGE (or one SGE of length 0) is a message of 0 bytes: it
    consumes one receive, which completes SUCCESS with BytesTransferred 0 and leaves the
    buffer as it was."""
    a, b = pair
    source = region(a.pd, fill=b"x" * 64)
    sink = region(b.pd, fill=b"\x77" * 4096)
    assert b.qp.receive([sink.sge(0, 64)], request_context=1) == Status.SUCCESS
    assert b.qp.receive([sink.sge(64, 64)], request_context=2) == Status.SUCCESS
    sges = [] if sgl == "empty" else [source.sge(0, 0)]
    assert a.qp.send(sges, request_context=3) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 3)
    assert expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 1).bytes_transferred == 0
    assert bytes(sink.buf) == b"\x77" * 4096
    # the second receive is still queued: the next message goes there
    assert a.qp.send([source.sge(0, 4)], request_context=4) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 4)
    assert expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 2).bytes_transferred == 4
    assert bytes(sink.buf[64:68]) == b"xxxx"


@pytest.mark.rule("SEND-INLINE-UNREGISTERED")
@pytest.mark.digest("1.7")
@pytest.mark.parametrize("token", [0, 0xFFFFFFF0])
@pytest.mark.pair(inline_data_size=64)
def test_inline_send_from_unregistered_memory(pair: Pair, token: int) -> None:
    """digest 1.7 (NDK_SGE remarks): with NDK_OP_FLAG_INLINE the MemoryRegionToken may be
    invalid and must be ignored: a source never registered, with token 0 or garbage, is sent;
    the completion is SEND SUCCESS and the bytes arrive."""
    a, b = pair
    source = bytearray(pattern(48, seed=9))
    sink = region(b.pd)
    assert b.qp.receive([sink.sge(0, 64)], request_context=1) == Status.SUCCESS
    assert a.qp.send([unregistered_sge(source, 0, 48, token)], flags=OpFlag.INLINE,
                     request_context=2) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 2)
    assert expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 1).bytes_transferred == 48
    assert bytes(sink.buf[:48]) == pattern(48, seed=9)


@pytest.mark.rule("SEND-INLINE-COPIED-AT-POST")
@pytest.mark.digest("1.7")
@pytest.mark.pair(client_knobs=dict(progress="manual"), inline_data_size=64)
def test_inline_send_data_taken_at_post(pair: Pair) -> None:
    """digest 1.7 (NDK_SGE remarks): inline buffers need only be valid until the call
    returns, so the provider takes the bytes during NdkSend: changing the source after the
    post, before the transfer runs (docs/semantics.md PROGRESS, progress="manual"), does not
    change what arrives."""
    a, b = pair
    source = bytearray(b"before--" * 4)
    sink = region(b.pd)
    assert b.qp.receive([sink.sge(0, 64)], request_context=1) == Status.SUCCESS
    assert a.qp.send([unregistered_sge(source, 0, 32)], flags=OpFlag.INLINE,
                     request_context=2) == Status.SUCCESS
    source[:] = b"after!!!" * 4
    assert a.adapter.pending_steps >= 1
    for _ in range(100):
        if not a.adapter.step(64):
            break
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 2)
    assert expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 1).bytes_transferred == 32
    assert bytes(sink.buf[:32]) == b"before--" * 4


@pytest.mark.rule("SEND-INLINE-TOO-LARGE")
@pytest.mark.digest("1.7")
@pytest.mark.reference("POST-CHECKS")
@pytest.mark.pair(inline_data_size=64)
def test_inline_send_above_inline_data_size(pair: Pair) -> None:
    """digest 1.7 (total inline bytes <= the QP's InlineDataSize), 3.4 (an inline failure
    produces no CQE). docs/semantics.md POST-CHECKS: BUFFER_OVERFLOW inline. The QP stays
    usable: a send of exactly InlineDataSize bytes then arrives in the receive the failed
    post did not consume.  Stated (digest 3.4, 1.7): no CQE for the inline failure, and the
    send of InlineDataSize bytes completes SUCCESS and arrives; the choice: the refusal and
    its status."""
    a, b = pair
    source = bytearray(pattern(65, seed=2))
    sink = region(b.pd)
    assert b.qp.receive([sink.sge(0, 128)], request_context=1) == Status.SUCCESS
    assert a.qp.send([unregistered_sge(source, 0, 65)], flags=OpFlag.INLINE,
                     request_context=2) == Status.BUFFER_OVERFLOW
    with stated("digest 3.4, 1.7"):
        expect_no_completion(a.cq, b.cq)
        assert a.qp.send([unregistered_sge(source, 0, 64)], flags=OpFlag.INLINE,
                         request_context=3) == Status.SUCCESS
        expect_result(a.cq, Status.SUCCESS, OpType.SEND, 3)
        assert expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 1).bytes_transferred == 64
        assert bytes(sink.buf[:65]) == pattern(65, seed=2)[:64] + b"\0"


@pytest.mark.rule("SEND-INLINE-SGE-COUNT")
@pytest.mark.digest("1.7")
@pytest.mark.pair(max_initiator_request_sge=1, inline_data_size=64)
def test_inline_send_sge_count_not_limited(pair: Pair) -> None:
    """digest 1.7 (NDK_SGE remarks): with NDK_OP_FLAG_INLINE the SGE count is not limited by
    MaxInitiatorRequestSge: 4 inline SGEs on a QP created for 1 are sent, gathered in order."""
    a, b = pair
    source = bytearray(pattern(64, seed=4))
    sink = region(b.pd)
    sgl = [unregistered_sge(source, 48 - 16 * i, 16) for i in range(4)]
    assert b.qp.receive([sink.sge(0, 64)], request_context=1) == Status.SUCCESS
    assert a.qp.send(sgl, flags=OpFlag.INLINE, request_context=2) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 2)
    assert expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 1).bytes_transferred == 64
    data = pattern(64, seed=4)
    assert bytes(sink.buf[:64]) == data[48:64] + data[32:48] + data[16:32] + data[0:16]


@pytest.mark.rule("SEND-SOLICITED")
@pytest.mark.digest("3.2")
def test_solicited_send_satisfies_solicited_arm(pair: Pair) -> None:
    """digest 1.7 (Solicited events), 3.2: with the receiver's CQ armed for
    NDK_CQ_NOTIFY_SOLICITED, a plain Send's receive completion does not notify; a Send with
    NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT does, once, with STATUS_SUCCESS."""
    a, b = pair
    source, sink = region(a.pd, fill=b"solicit!"), region(b.pd)
    assert b.qp.receive([sink.sge(0, 64)], request_context=1) == Status.SUCCESS
    assert b.qp.receive([sink.sge(64, 64)], request_context=2) == Status.SUCCESS
    b.cq.arm(CqNotify.SOLICITED)
    assert a.qp.send([source.sge(0, 8)], request_context=3) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 3)
    expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 1)
    assert b.cq.wait_notification(timeout=quiet_period(b.cq)) is None
    assert a.qp.send([source.sge(0, 8)], flags=OpFlag.SEND_AND_SOLICIT_EVENT,
                     request_context=4) == Status.SUCCESS
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 4)
    expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 2)
    assert bytes(sink.buf[64:72]) == b"solicit!"
    assert b.cq.wait_notification(timeout=quiet_period(b.cq)) is None
    assert b.cq.notifications == 1


@pytest.mark.rule("SEND-SILENT-SUCCESS")
@pytest.mark.digest("2.5")
def test_silent_success_send_has_no_completion(pair: Pair) -> None:
    """digest 2.5 (NDK_OP_FLAG_SILENT_SUCCESS: success produces no CQE): the message arrives
    (the receiver's completion is normal), the sender's CQ gets nothing for it; the next
    non-silent send is the only sender completion."""
    a, b = pair
    source, sink = region(a.pd, fill=b"quietly!loudly!!"), region(b.pd)
    assert b.qp.receive([sink.sge(0, 64)], request_context=1) == Status.SUCCESS
    assert b.qp.receive([sink.sge(64, 64)], request_context=2) == Status.SUCCESS
    assert a.qp.send([source.sge(0, 8)], flags=OpFlag.SILENT_SUCCESS,
                     request_context=3) == Status.SUCCESS
    assert expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 1).bytes_transferred == 8
    assert bytes(sink.buf[:8]) == b"quietly!"
    expect_no_completion(a.cq)
    assert a.qp.send([source.sge(8, 8)], request_context=4) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 4)
    expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 2)
    assert bytes(sink.buf[64:72]) == b"loudly!!"


@pytest.mark.rule("SEND-SILENT-FAILURE")
@pytest.mark.digest("2.5")
def test_failed_silent_send_still_completes(pair: Pair) -> None:
    """digest 2.5 (SILENT_SUCCESS: failure always produces a CQE). A silent Send whose source
    SGE lies outside its MR fails: its CQE is SEND with an error status, and no byte arrived.
    Which status NDK does not say (the soft provider: ACCESS_VIOLATION, docs/semantics.md
    DATA-STATUS, and the error ends the connection, QP-ERROR: WRITE-LOCAL-SGE-INVALID)."""
    a, b = pair
    source, sink = region(a.pd, 4096, fill=b"z" * 4096), region(b.pd)
    assert b.qp.receive([sink.sge(0, 64)], request_context=1) == Status.SUCCESS
    outside = ndk.Sge(source.address + 4096 - 8, 16, source.local_token)
    assert a.qp.send([outside], flags=OpFlag.SILENT_SUCCESS, request_context=2) == \
        Status.SUCCESS
    failed = one(a.cq)
    assert (failed.type, failed.request_context) == (OpType.SEND, 2)
    assert failed.status != Status.SUCCESS
    assert bytes(sink.buf) == bytes(4096)


@pytest.mark.rule("SEND-ORDER")
@pytest.mark.digest("4.2")
@pytest.mark.pair(cq_depth=128)
def test_many_sends_complete_in_order(pair: Pair) -> None:
    """digest 4.2 (requests complete in issue order within one QP, for the initiator and
    receive queues separately): 32 sends complete at the sender in posting order, and the
    receiver's 32 receives complete in posting order, receive i holding message i."""
    count = 32
    a, b = pair
    source, sink = region(a.pd, count * 16), region(b.pd, count * 16)
    for i in range(count):
        source.buf[i * 16:(i + 1) * 16] = pattern(16, seed=i + 1)
        assert b.qp.receive([sink.sge(i * 16, 16)], request_context=0x100 + i) == Status.SUCCESS
    for i in range(count):
        assert a.qp.send([source.sge(i * 16, 16)], request_context=0x200 + i) == Status.SUCCESS
    sent = drain(a.cq, count)
    assert [r.request_context for r in sent] == [0x200 + i for i in range(count)]
    assert {(r.status, r.type) for r in sent} == {(Status.SUCCESS, OpType.SEND)}
    received = drain(b.cq, count)
    assert [r.request_context for r in received] == [0x100 + i for i in range(count)]
    assert {(r.status, r.type, r.bytes_transferred) for r in received} == \
        {(Status.SUCCESS, OpType.RECEIVE, 16)}
    assert bytes(sink.buf) == bytes(source.buf)


@pytest.mark.rule("SEND-LARGER-THAN-RECEIVE")
@pytest.mark.digest("4.2")
@pytest.mark.reference("DATA-STATUS")
def test_send_larger_than_receive(pair: Pair) -> None:
    """digest 4.2 (ND2 table: BUFFER_OVERFLOW = an incoming send exceeded the receive buffer;
    REMOTE_ERROR = the request caused an error on the remote QP). docs/semantics.md
    DATA-STATUS: receiver BUFFER_OVERFLOW, sender REMOTE_RESOURCES; QP-ERROR afterwards."""
    a, b = pair
    source, sink = region(a.pd, fill=pattern(64)), region(b.pd)
    assert b.qp.receive([sink.sge(0, 32)], request_context=1) == Status.SUCCESS
    assert a.qp.send([source.sge(0, 64)], request_context=2) == Status.SUCCESS
    expect_result(a.cq, Status.REMOTE_RESOURCES, OpType.SEND, 2)
    assert expect_result(b.cq, Status.BUFFER_OVERFLOW, OpType.RECEIVE, 1).bytes_transferred == 0
    expect_connection_failed(a, b, source, sink)


@pytest.mark.rule("SEND-RECEIVER-NOT-READY")
@pytest.mark.digest("4.2")
@pytest.mark.reference("DATA-STATUS")
@pytest.mark.pair(client_knobs=dict(rnr_timeout_ms=20))
def test_send_without_receive_times_out(pair: Pair) -> None:
    """digest 4.2 (ND2 IO_TIMEOUT: connection or remote QP failure). docs/semantics.md
    DATA-STATUS: a Send with no receive posted at the peer within rnr_timeout_ms completes
    STATUS_IO_TIMEOUT; QP-ERROR afterwards. (The wait is bounded, not measured.)"""
    a, b = pair
    source, sink = region(a.pd, fill=b"nobody"), region(b.pd)
    assert a.qp.send([source.sge(0, 6)], request_context=7) == Status.SUCCESS
    expect_result(a.cq, Status.IO_TIMEOUT, OpType.SEND, 7)
    expect_no_completion(b.cq)
    expect_connection_failed(a, b, source, sink)


@pytest.mark.rule("SEND-SOURCE-IN-USE")
@pytest.mark.digest("1.4")
@pytest.mark.reference("MR-IN-USE")
@pytest.mark.pair(client_knobs=dict(rnr_timeout_ms=60_000),
                  server_knobs=dict(rnr_timeout_ms=60_000))
@pytest.mark.parametrize("how", ["deregister", "close"])
def test_a_waiting_sends_source_stays_registered(pair: Pair, how: str) -> None:
    """digest 1.4 (NdkDeregisterMr: SUCCESS; PENDING; other) does not say what deregistering
    the source of a Send still waiting for the peer's receive does; 3.1: a close stays pending
    until the requests on the object completed.  docs/semantics.md MR-IN-USE (a reference
    choice): the deregistration returns STATUS_DEVICE_BUSY (ND2 MR::Deregister, digest 4.2)
    and the MR stays registered; a close pends.  When the peer posts its receive it gets the
    Send's own bytes, SUCCESS on both sides; then the MR is deregistered, or its close done."""
    a, b = pair
    size = 65_536
    source, sink = region(a.pd, size, fill=pattern(size, seed=11)), region(b.pd, size)
    local = source.local_token
    assert a.qp.send([source.sge(0, size)], request_context=1) == Status.SUCCESS
    if how == "deregister":
        expect_request(source.mr.deregister_mr(), "i/a", Status.DEVICE_BUSY)
        assert source.local_token == local
        closed = None
    else:
        closed = source.mr.close()
        assert closed.status == Status.PENDING
    assert b.qp.receive([sink.sge(0, size)], request_context=2) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 1)
    assert expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 2).bytes_transferred == size
    assert bytes(sink.buf) == pattern(size, seed=11)
    if closed is None:
        expect_request(source.mr.deregister_mr(), "i/a")
    else:
        assert closed.wait(timeout=TIMEOUT) == Status.SUCCESS


@pytest.mark.rule("RECV-ORDER")
@pytest.mark.digest("4.2")
def test_receives_consumed_in_posting_order(pair: Pair) -> None:
    """digest 4.2 (receive queue in issue order): each incoming message takes the oldest
    posted receive, whatever the receives' sizes and places in memory."""
    a, b = pair
    source, sink = region(a.pd), region(b.pd, fill=b"\x01" * 4096)
    slots = [(3000, 100), (0, 50), (1000, 200)]
    for context, (offset, length) in enumerate(slots, start=1):
        assert b.qp.receive([sink.sge(offset, length)], request_context=context) == \
            Status.SUCCESS
    messages = [b"first", b"second message", b"third"]
    for i, message in enumerate(messages):
        source.buf[i * 64:i * 64 + len(message)] = message
        assert a.qp.send([source.sge(i * 64, len(message))], request_context=10 + i) == \
            Status.SUCCESS
    assert [r.request_context for r in drain(a.cq, 3)] == [10, 11, 12]
    received = drain(b.cq, 3)
    assert [(r.request_context, r.bytes_transferred) for r in received] == \
        [(1, 5), (2, 14), (3, 5)]
    assert bytes(sink.buf[3000:3005]) == b"first"
    assert bytes(sink.buf[0:14]) == b"second message"
    assert bytes(sink.buf[1000:1005]) == b"third"


@pytest.mark.rule("RECV-NO-LOCAL-WRITE")
@pytest.mark.digest("4.2")
@pytest.mark.reference("DATA-STATUS")
def test_receive_into_read_only_region(pair: Pair) -> None:
    """digest 1.4 / 2.6 (a buffer the adapter writes needs NDK_MR_FLAG_ALLOW_LOCAL_WRITE),
    4.2 (ND2 ACCESS_VIOLATION = invalid registered memory). docs/semantics.md DATA-STATUS:
    the receive completes ACCESS_VIOLATION, the sender REMOTE_RESOURCES; nothing written.
    Stated (digest 2.6): the receive fails and writes nothing; the choice: the statuses, and
    the sender's."""
    a, b = pair
    source = region(a.pd, fill=b"payload!")
    sink = region(b.pd, flags=MrFlag.ALLOW_LOCAL_READ, fill=b"\x33" * 4096)
    assert b.qp.receive([sink.sge(0, 64)], request_context=1) == Status.SUCCESS
    assert a.qp.send([source.sge(0, 8)], request_context=2) == Status.SUCCESS
    expect_refused(b.cq, Status.ACCESS_VIOLATION, OpType.RECEIVE, 1, "digest 2.6")
    with stated("digest 2.6"):
        assert bytes(sink.buf) == b"\x33" * 4096
    expect_result(a.cq, Status.REMOTE_RESOURCES, OpType.SEND, 2)
    expect_connection_failed(a, b, source, region(b.pd))


# --- SRQ on the data path ------------------------------------------------------------------


def _srq_server(open_adapter: OpenAdapter, srq_depth: int, qps: int = 2) -> SimpleNamespace:
    """``qps`` client QPs (qp_context 0xC0 + i), each connected to a server QP (qp_context
    0xA0 + i) of one SRQ; one CQ per adapter, one listener.  The connected Sides are returned
    too (``held``): a connector dropped by the scenario would close, ending its connection."""
    client = open_adapter(address=CLIENT)
    server = open_adapter(address=SERVER)
    requires(server, max_srq_depth=srq_depth)
    first = Side(client, qp_context=0xC0, buffer_size=0)
    b_pd = server.create_pd().get(timeout=TIMEOUT)
    srq = b_pd.create_srq(srq_depth).get(timeout=TIMEOUT)
    b_cq = server.create_cq(64).get(timeout=TIMEOUT)
    held: list[tuple[Side, Side]] = []
    for i in range(qps):
        a = first if i == 0 else Side(client, pd=first.pd, cq=first.cq, qp_context=0xC0 + i,
                                      buffer_size=0)
        b = Side(server, pd=b_pd, cq=b_cq, srq=srq, qp_context=0xA0 + i, buffer_size=0)
        held.append(connect_sides(a, b, listener=held[0][1].listener if held else None))
    return SimpleNamespace(a_pd=first.pd, a_cq=first.cq, qps=[a.qp for a, _ in held], b_pd=b_pd,
                           b_cq=b_cq, srq=srq, held=held)


@pytest.mark.rule("SRQ-SHARED-RECEIVES")
@pytest.mark.digest("1.6")
def test_srq_receives_shared_by_two_qps(open_adapter: OpenAdapter) -> None:
    """digest 1.2 (NdkCreateQpWithSrq), 1.6, 4.2: receives posted to one SRQ serve every QP
    created with it, oldest first; each receive completion names the QP that received
    (QPContext) on that QP's receive CQ."""
    setup = _srq_server(open_adapter, 8)
    (qp0, qp1), a_cq, b_cq, srq = setup.qps, setup.a_cq, setup.b_cq, setup.srq
    source, sink = region(setup.a_pd), region(setup.b_pd)
    for i in range(4):
        assert srq.srq_receive([sink.sge(i * 64, 64)], request_context=i + 1) == Status.SUCCESS
    plan = [(qp1, b"to-one"), (qp0, b"to-zero"), (qp1, b"one-again"), (qp0, b"zero-again")]
    for i, (qp, message) in enumerate(plan):
        source.buf[i * 64:i * 64 + len(message)] = message
        assert qp.send([source.sge(i * 64, len(message))], request_context=0x10 + i) == \
            Status.SUCCESS
        expect_result(a_cq, Status.SUCCESS, OpType.SEND, 0x10 + i,
                      qp_context=0xC1 if qp is qp1 else 0xC0)
        got = expect_result(b_cq, Status.SUCCESS, OpType.RECEIVE, i + 1,
                            qp_context=0xA1 if qp is qp1 else 0xA0)
        assert got.bytes_transferred == len(message)
        assert bytes(sink.buf[i * 64:i * 64 + len(message)]) == message


@pytest.mark.rule("SRQ-LIMIT-NOTIFY")
@pytest.mark.digest("1.6")
def test_srq_limit_fires_when_consumption_drops_below_threshold(open_adapter: OpenAdapter) -> None:
    """digest 1.6 (arming): the callback fires when incoming messages consume receives and
    the count falls below the threshold -- not at the threshold, exactly once, with
    STATUS_SUCCESS; then the SRQ is disarmed (a further consumption does not notify)."""
    setup = _srq_server(open_adapter, 8, qps=1)
    (qp0,), a_cq, b_cq, srq = setup.qps, setup.a_cq, setup.b_cq, setup.srq
    source, sink = region(setup.a_pd, fill=b"msg"), region(setup.b_pd)
    for i in range(4):
        assert srq.srq_receive([sink.sge(i * 64, 64)], request_context=i + 1) == Status.SUCCESS
    expect_request(srq.modify_srq(notify_threshold=3), "i/a")
    assert srq.wait_notification(timeout=quiet_period(srq)) is None
    for i, fires in enumerate([False, True, False]):   # 4 -> 3 (not below), 2 (below), 1
        assert qp0.send([source.sge(0, 3)], request_context=i) == Status.SUCCESS
        expect_result(a_cq, Status.SUCCESS, OpType.SEND, i)
        expect_result(b_cq, Status.SUCCESS, OpType.RECEIVE, i + 1)
        if fires:
            assert srq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
        else:
            assert srq.wait_notification(timeout=quiet_period(srq)) is None
    assert srq.notifications == 1


@pytest.mark.rule("SRQ-RECEIVE-DEPTH-CONSUMED")
@pytest.mark.digest("4.2")
@pytest.mark.reference("QUEUE-FULL")
@pytest.mark.expect_violation("POST-QUEUE-DEPTH")
def test_srq_receive_past_depth_then_consumed(open_adapter: OpenAdapter) -> None:
    """digest 4.2 (ND2 SRQ::Receive: NO_MORE_ENTRIES when full). docs/semantics.md
    QUEUE-FULL. The refused receive is never completed; once a message consumes one receive
    there is room again."""
    setup = _srq_server(open_adapter, 2, qps=1)
    (qp0,), a_cq, b_cq, srq = setup.qps, setup.a_cq, setup.b_cq, setup.srq
    source, sink = region(setup.a_pd, fill=b"room"), region(setup.b_pd)
    assert srq.srq_receive([sink.sge(0, 64)], request_context=1) == Status.SUCCESS
    assert srq.srq_receive([sink.sge(64, 64)], request_context=2) == Status.SUCCESS
    assert srq.srq_receive([sink.sge(128, 64)], request_context=3) == Status.NO_MORE_ENTRIES
    assert qp0.send([source.sge(0, 4)], request_context=9) == Status.SUCCESS
    expect_result(a_cq, Status.SUCCESS, OpType.SEND, 9)
    expect_result(b_cq, Status.SUCCESS, OpType.RECEIVE, 1)
    assert srq.srq_receive([sink.sge(128, 64)], request_context=4) == Status.SUCCESS
    assert srq.srq_receive([sink.sge(192, 64)], request_context=5) == Status.NO_MORE_ENTRIES
    for i, context in enumerate([2, 4]):
        assert qp0.send([source.sge(0, 4)], request_context=10 + i) == Status.SUCCESS
        expect_result(a_cq, Status.SUCCESS, OpType.SEND, 10 + i)
        expect_result(b_cq, Status.SUCCESS, OpType.RECEIVE, context)
    assert bytes(sink.buf[128:132]) == b"room"


# --- inline limits of a post ---------------------------------------------------------------


def _post(endpoint: Side, op: str, sgl: list[ndk.Sge], target: Region, flags: int = 0,
          context: int = 1) -> Status:
    """One initiator post of kind ``op`` ("send", "write", "read") to ``target``."""
    if op == "send":
        return endpoint.qp.send(sgl, flags=flags, request_context=context)
    if op == "write":
        return endpoint.qp.write(sgl, target.address, target.remote_token, flags=flags,
                                 request_context=context)
    return endpoint.qp.read(sgl, target.address, target.remote_token, flags=flags,
                            request_context=context)


@pytest.mark.rule("LIMITS-SGE-COUNT")
@pytest.mark.digest("4.2")
@pytest.mark.reference("POST-CHECKS")
@pytest.mark.parametrize("op", ["send", "write"])
@pytest.mark.pair(max_initiator_request_sge=2)
def test_more_sges_than_max_initiator_request_sge(pair: Pair, op: str) -> None:
    """digest 1.2 (MaxInitiatorRequestSge of the QP), 4.2 (ND2 QP::Send / Write:
    DATA_OVERRUN = too many SGEs), 3.4 (no CQE for an inline failure). docs/semantics.md
    POST-CHECKS. The QP stays usable: the same post with the allowed count succeeds.  Stated
    (digest 3.4, 1.2): no CQE for the inline failure; the post within the count completes
    SUCCESS and its bytes arrive; the choice: the refusal and its status."""
    a, b = pair
    source = region(a.pd, fill=pattern(96))
    target = region(b.pd, flags=REMOTE_WRITE)
    sgl = [source.sge(i * 32, 32) for i in range(3)]
    if op == "send":
        assert b.qp.receive([target.sge(0, 4096)], request_context=7) == Status.SUCCESS
    assert _post(a, op, sgl, target, context=1) == Status.DATA_OVERRUN
    with stated("digest 3.4, 1.2"):
        expect_no_completion(a.cq, b.cq)
        assert _post(a, op, sgl[:2], target, context=2) == Status.SUCCESS
        expect_result(a.cq, Status.SUCCESS, OpType.SEND if op == "send" else OpType.WRITE, 2)
        if op == "send":
            expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 7)
        assert bytes(target.buf[:64]) == pattern(96)[:64]


@pytest.mark.rule("LIMITS-READ-SGE-COUNT")
@pytest.mark.digest("2.1")
@pytest.mark.reference("POST-CHECKS")
@pytest.mark.pair(client_knobs=dict(max_read_request_sge=2), max_initiator_request_sge=4)
def test_read_sges_limited_by_max_read_request_sge(pair: Pair) -> None:
    """digest 2.1 (MaxReadRequestSge overrides MaxInitiatorRequestSge for reads), 4.2 (ND2
    QP::Read: DATA_OVERRUN). docs/semantics.md POST-CHECKS. With MaxReadRequestSge 2 on a QP
    created for 4 SGEs, a 3-SGE read is refused inline; a 3-SGE write is accepted.  Stated
    (digest 3.4, 2.1): no CQE for the inline failure; the 2-SGE read and the 3-SGE write
    complete SUCCESS with their bytes; the choice: the refusal and its status."""
    a, b = pair
    sink = region(a.pd, flags=MrFlag.ALLOW_LOCAL_WRITE | MrFlag.RDMA_READ_SINK)
    remote = region(b.pd, flags=MrFlag.ALLOW_REMOTE_READ | MrFlag.ALLOW_REMOTE_WRITE,
                    fill=pattern(96, seed=8))
    sgl = [sink.sge(i * 32, 32) for i in range(3)]
    assert a.qp.read(sgl, remote.address, remote.remote_token, request_context=1) == \
        Status.DATA_OVERRUN
    with stated("digest 3.4, 2.1"):
        expect_no_completion(a.cq)
        assert a.qp.read(sgl[:2], remote.address, remote.remote_token,
                         request_context=2) == Status.SUCCESS
        expect_result(a.cq, Status.SUCCESS, OpType.READ, 2)
        assert bytes(sink.buf[:64]) == pattern(96, seed=8)[:64]
        assert a.qp.write(sgl, remote.address + 1024, remote.remote_token,
                          request_context=3) == Status.SUCCESS
        expect_result(a.cq, Status.SUCCESS, OpType.WRITE, 3)


def _drive(adapter: ndk.Adapter) -> None:
    """Run the manual-progress engine until nothing is queued (bounded)."""
    for _ in range(1000):
        if adapter.pending_steps == 0:
            return
        adapter.step(64)
    raise AssertionError("the engine did not drain")


@pytest.mark.rule("LIMITS-QUEUE-FULL")
@pytest.mark.digest("4.2")
@pytest.mark.reference("POST-CHECKS")
@pytest.mark.parametrize("held_by", ["defer", "manual-progress"])
@pytest.mark.expect_violation("POST-QUEUE-DEPTH")
@pytest.mark.pair(initiator_queue_depth=2)
def test_initiator_queue_full(pair: Pair, held_by: str) -> None:
    """digest 4.2 (ND2 QP::Send / Write / Read: NO_MORE_ENTRIES = queue full), 3.4 (no CQE
    for an inline failure). docs/semantics.md POST-CHECKS (requests not yet executed,
    deferred included, fill the queue), PROGRESS. With InitiatorQueueDepth 2 and two writes
    held (deferred, or the engine not stepped), a third is refused; the two held writes still
    complete SUCCESS in order, and the queue then has room again.  Stated (digest 1.7, 3.4):
    the two writes posted complete SUCCESS with their bytes, the refused one moves nothing,
    and a write once they completed succeeds; the choice: the refusal, its status, the
    order."""
    a, b = pair
    source = region(a.pd, fill=pattern(64, seed=12))
    target = region(b.pd, flags=REMOTE_WRITE)
    flags = OpFlag.DEFER if held_by == "defer" else 0
    if held_by == "manual-progress":
        a.adapter.knobs.progress = "manual"
    for i in range(2):
        assert a.qp.write([source.sge(i * 16, 16)], target.address + i * 16,
                          target.remote_token, flags=flags, request_context=i) == Status.SUCCESS
    assert a.qp.write([source.sge(32, 16)], target.address + 32, target.remote_token,
                      flags=flags, request_context=2) == Status.NO_MORE_ENTRIES
    if held_by == "manual-progress":
        _drive(a.adapter)
        a.adapter.knobs.progress = "auto"
    # digest 3.4: the inline failure pushed the deferred writes
    held = [(r.status, r.type, r.request_context) for r in drain(a.cq, 2)]
    with stated("digest 1.7, 3.4"):
        assert sorted(held) == [(Status.SUCCESS, OpType.WRITE, 0),
                                (Status.SUCCESS, OpType.WRITE, 1)]
        assert bytes(target.buf[:48]) == pattern(64, seed=12)[:32] + bytes(16)
        assert a.qp.write([source.sge(32, 16)], target.address + 32, target.remote_token,
                          request_context=3) == Status.SUCCESS
        expect_result(a.cq, Status.SUCCESS, OpType.WRITE, 3)
        assert bytes(target.buf[:48]) == pattern(64, seed=12)[:48]
    assert [context for _, _, context in held] == [0, 1]


UNDOCUMENTED_FLAGS = [
    ("send", UNDEFINED_FLAG),
    ("send", OpFlag.ALLOW_REMOTE_READ),            # Bind / FastRegister only
    ("write", OpFlag.SEND_AND_SOLICIT_EVENT),      # Send / SendAndInvalidate only
    ("write", UNDEFINED_FLAG),
    ("read", OpFlag.ALLOW_REMOTE_WRITE),
    ("read", UNDEFINED_FLAG),
]


@pytest.mark.rule("LIMITS-UNKNOWN-FLAGS")
@pytest.mark.digest("2.5")
@pytest.mark.reference("POST-CHECKS")
@pytest.mark.parametrize("op, flag", UNDOCUMENTED_FLAGS,
                         ids=[f"{op}-{int(flag):#x}" for op, flag in UNDOCUMENTED_FLAGS])
def test_flag_the_request_does_not_document(pair: Pair, op: str, flag: int) -> None:
    """digest 1.7 (the flags each request's page allows), 2.5, 4.2 (ND2 QP::Send / Write:
    INVALID_PARAMETER for bad flags). docs/semantics.md POST-CHECKS: a flag the request does
    not document -> INVALID_PARAMETER inline, no CQE; the QP stays usable.  Stated (digest
    3.4, 1.7): no CQE for the inline failure; the post without the flag completes SUCCESS;
    the choice: the refusal and its status."""
    a, b = pair
    local = region(a.pd, flags=MrFlag.ALLOW_LOCAL_WRITE | MrFlag.RDMA_READ_SINK,
                   fill=pattern(32))
    target = region(b.pd, flags=MrFlag.ALLOW_REMOTE_READ | MrFlag.ALLOW_REMOTE_WRITE)
    assert b.qp.receive([target.sge(0, 64)], request_context=5) == Status.SUCCESS
    assert _post(a, op, [local.sge(0, 32)], target, flags=int(flag), context=1) == \
        Status.INVALID_PARAMETER
    with stated("digest 3.4, 1.7"):
        expect_no_completion(a.cq, b.cq)
        assert _post(a, op, [local.sge(0, 32)], target, context=2) == Status.SUCCESS
        kind = {"send": OpType.SEND, "write": OpType.WRITE, "read": OpType.READ}[op]
        expect_result(a.cq, Status.SUCCESS, kind, 2)


@pytest.mark.rule("LIMITS-INLINE-READ")
@pytest.mark.digest("1.7")
@pytest.mark.reference("POST-CHECKS")
@pytest.mark.pair(inline_data_size=64)
def test_inline_flag_on_read(pair: Pair) -> None:
    """digest 1.7 (NdkRead allows SILENT_SUCCESS, READ_FENCE, RDMA_READ_LOCAL_INVALIDATE,
    DEFER: INLINE is not among them -- a read's SGEs are a sink, nothing to copy at post).
    docs/semantics.md POST-CHECKS: INVALID_PARAMETER inline, no CQE, the sink untouched.
    Stated (digest 3.4, 1.7): no CQE for the inline failure; the read without the flag
    completes SUCCESS with the bytes; the choice: the refusal and its status."""
    a, b = pair
    sink = region(a.pd, flags=MrFlag.ALLOW_LOCAL_WRITE | MrFlag.RDMA_READ_SINK)
    remote = region(b.pd, flags=MrFlag.ALLOW_REMOTE_READ, fill=pattern(32))
    assert a.qp.read([sink.sge(0, 32)], remote.address, remote.remote_token,
                     flags=OpFlag.INLINE, request_context=1) == Status.INVALID_PARAMETER
    with stated("digest 3.4, 1.7"):
        expect_no_completion(a.cq)
        assert bytes(sink.buf[:32]) == bytes(32)
        assert a.qp.read([sink.sge(0, 32)], remote.address, remote.remote_token,
                         request_context=2) == Status.SUCCESS
        expect_result(a.cq, Status.SUCCESS, OpType.READ, 2)
        assert bytes(sink.buf[:32]) == pattern(32)


@pytest.mark.rule("LIMITS-MAX-TRANSFER-LENGTH")
@pytest.mark.digest("2.1")
@pytest.mark.reference("POST-CHECKS")
@pytest.mark.pair(client_knobs=dict(max_transfer_length=1024))
def test_send_above_max_transfer_length(pair: Pair) -> None:
    """digest 2.1 (MaxTransferLength: max total length per send/receive/read/write), 4.2 (ND2
    QP::Send: BUFFER_OVERFLOW = too much data). docs/semantics.md POST-CHECKS: inline, no
    CQE; exactly MaxTransferLength is sent.  Stated (digest 2.1: the maximum total length
    of a send): the send above it fails and the one at it completes SUCCESS with its bytes;
    no CQE for the inline failure (3.4); the choice: its status, inline."""
    a, b = pair
    source, sink = region(a.pd, fill=pattern(2048)), region(b.pd)
    assert b.qp.receive([sink.sge(0, 4096)], request_context=1) == Status.SUCCESS
    refused = a.qp.send([source.sge(0, 1000), source.sge(1000, 25)], request_context=2)
    with stated("digest 2.1"):
        assert refused != Status.SUCCESS, "a send above MaxTransferLength was accepted"
    assert refused == Status.BUFFER_OVERFLOW
    with stated("digest 3.4, 2.1"):
        expect_no_completion(a.cq, b.cq)
        assert a.qp.send([source.sge(0, 1024)], request_context=3) == Status.SUCCESS
        expect_result(a.cq, Status.SUCCESS, OpType.SEND, 3)
        assert expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE,
                             1).bytes_transferred == 1024


# --- deferred requests (digest 3.4) --------------------------------------------------------


@pytest.mark.rule("DEFER-HELD")
@pytest.mark.digest("3.4")
@pytest.mark.reference("DEFER")
def test_deferred_send_waits_for_a_non_deferred_post(pair: Pair) -> None:
    """digest 3.4: NDK_OP_FLAG_DEFER lets the provider hold a request until a request
    without DEFER ends the chain; the digest calls DEFER a hint, so holding it is a choice:
    docs/semantics.md DEFER (a reference choice: the soft provider holds it). Then both
    complete, in order, and the messages arrive in order."""
    a, b = pair
    source, sink = region(a.pd, fill=b"deferredprompt!!"), region(b.pd)
    assert b.qp.receive([sink.sge(0, 64)], request_context=1) == Status.SUCCESS
    assert b.qp.receive([sink.sge(64, 64)], request_context=2) == Status.SUCCESS
    assert a.qp.send([source.sge(0, 8)], flags=OpFlag.DEFER, request_context=3) == \
        Status.SUCCESS
    expect_no_completion(a.cq, b.cq)
    assert bytes(sink.buf[:8]) == bytes(8)
    assert a.qp.send([source.sge(8, 8)], request_context=4) == Status.SUCCESS
    assert [r.request_context for r in drain(a.cq, 2)] == [3, 4]
    assert [(r.request_context, r.bytes_transferred) for r in drain(b.cq, 2)] == \
        [(1, 8), (2, 8)]
    assert bytes(sink.buf[:8]) == b"deferred" and bytes(sink.buf[64:72]) == b"prompt!!"


@pytest.mark.rule("DEFER-FLUSH")
@pytest.mark.digest("1.7")
@pytest.mark.reference("QP-FLUSH")
def test_flush_cancels_deferred_requests(pair: Pair) -> None:
    """digest 1.7 (NdkFlush: pending requests complete with STATUS_CANCELLED), 3.4 (an inline
    success means a CQE must appear): deferred writes not yet issued are flushed CANCELLED in
    posting order and write nothing. docs/semantics.md QP-FLUSH: the connection stays usable
    (a plain write then succeeds)."""
    a, b = pair
    source = region(a.pd, fill=pattern(32, seed=26))
    target = region(b.pd, flags=REMOTE_WRITE)
    for i in range(2):
        assert a.qp.write([source.sge(i * 16, 16)], target.address + i * 16,
                          target.remote_token, flags=OpFlag.DEFER, request_context=i) == \
            Status.SUCCESS
    a.qp.flush()
    assert [(r.status, r.type, r.request_context) for r in drain(a.cq, 2)] == \
        [(Status.CANCELLED, OpType.WRITE, 0), (Status.CANCELLED, OpType.WRITE, 1)]
    assert bytes(target.buf) == bytes(4096)
    assert a.qp.write([source.sge(0, 32)], target.address, target.remote_token,
                      request_context=2) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.WRITE, 2)
    assert bytes(target.buf[:32]) == pattern(32, seed=26)


@pytest.mark.rule("DEFER-INLINE-FAILURE-PUSHES")
@pytest.mark.digest("3.4")
@pytest.mark.reference("POST-CHECKS")
@pytest.mark.pair(max_initiator_request_sge=1)
def test_inline_failure_pushes_deferred_sends(pair: Pair) -> None:
    """digest 3.4: on any inline failure the provider must push all earlier deferred
    requests: Send(DEFER) succeeds inline, then Send(DEFER) fails inline; the first still
    completes and its message arrives, the second produces no CQE.  The inline failure is
    one SGE too many, which the soft provider refuses inline with DATA_OVERRUN
    (docs/semantics.md POST-CHECKS, a reference choice: a provider may find it when the
    request executes instead, ND-LOCAL-LENGTH)."""
    a, b = pair
    source, sink = region(a.pd, fill=b"pushed!!"), region(b.pd)
    assert b.qp.receive([sink.sge(0, 64)], request_context=1) == Status.SUCCESS
    assert b.qp.receive([sink.sge(64, 64)], request_context=2) == Status.SUCCESS
    assert a.qp.send([source.sge(0, 8)], flags=OpFlag.DEFER, request_context=3) == \
        Status.SUCCESS
    assert a.qp.send([source.sge(0, 4), source.sge(4, 4)], flags=OpFlag.DEFER,
                     request_context=4) == Status.DATA_OVERRUN
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 3)
    assert expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 1).bytes_transferred == 8
    assert bytes(sink.buf[:8]) == b"pushed!!"
    expect_no_completion(a.cq, b.cq)


@pytest.mark.rule("DEFER-CHAIN-ORDER")
@pytest.mark.digest("3.4")
def test_deferred_chain_completes_in_order(pair: Pair) -> None:
    """digest 3.4 (every chain ends with a request without DEFER), 4.2 (issue order): three
    deferred writes and a final plain write complete SUCCESS in posting order, each write's
    bytes in place."""
    a, b = pair
    source = region(a.pd, fill=pattern(64, seed=21))
    target = region(b.pd, flags=REMOTE_WRITE)
    for i in range(4):
        flags = OpFlag.DEFER if i < 3 else 0
        assert a.qp.write([source.sge(i * 16, 16)], target.address + i * 16,
                          target.remote_token, flags=flags, request_context=i) == Status.SUCCESS
    results = drain(a.cq, 4)
    assert [(r.status, r.type, r.request_context) for r in results] == \
        [(Status.SUCCESS, OpType.WRITE, i) for i in range(4)]
    assert bytes(target.buf[:64]) == pattern(64, seed=21)
    expect_no_completion(b.cq)   # RDMA writes consume no receive at the target


@pytest.mark.rule("DEFER-SILENT-CHAIN")
@pytest.mark.digest("3.4")
def test_deferred_silent_requests(pair: Pair) -> None:
    """digest 3.4 (an inline success means a CQE must eventually appear -- unless
    SILENT_SUCCESS, digest 2.5): a chain of deferred silent writes ended by a plain write
    moves every byte and produces exactly one CQE, the last write's."""
    a, b = pair
    source = region(a.pd, fill=pattern(48, seed=22))
    target = region(b.pd, flags=REMOTE_WRITE)
    silent_deferred = OpFlag.DEFER | OpFlag.SILENT_SUCCESS
    for i in range(2):
        assert a.qp.write([source.sge(i * 16, 16)], target.address + i * 16,
                          target.remote_token, flags=silent_deferred,
                          request_context=i) == Status.SUCCESS
    assert a.qp.write([source.sge(32, 16)], target.address + 32, target.remote_token,
                      request_context=2) == Status.SUCCESS
    expect_result(a.cq, Status.SUCCESS, OpType.WRITE, 2)
    assert bytes(target.buf[:48]) == pattern(48, seed=22)
