"""Error completions of real traffic and what they leave behind (digest 1.3, 1.7, 2.5, 3.2,
4.2; docs/semantics.md QP-ERROR, DATA-STATUS, DISCONNECT-REASON, POST-CHECKS, QUEUE-FULL,
CQ-OVERRUN-QP, CQ-ERROR-ARM).

NDK documents few completion statuses; where it is silent the soft provider follows the ND2
completion table and QP error model (digest 4.2), as docs/semantics.md records: an error
completion ends the connection, both QPs flush what they hold with STATUS_CANCELLED, the peer
gets a disconnect event (ProviderDisconnectReason 3), and every later post succeeds inline and
completes STATUS_CANCELLED.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

import ndk
from ndk import AdapterFlag, CqNotify, MrFlag, OpFlag, OpType, Status
from ndk.testing import OpenAdapter, Pair

from ndk.scenario.completion import (CLIENT, quiet_period, SERVER, TIMEOUT, connect_sides,
                                     connected_pair, drain, loopback_pair, no_notification,
                                     pattern, post_receive, post_send, register, Side)
from ndk.scenario import expect_no_completion, poll
from ndk.scenario.stated import stated
from ndk.scenario.work_requests import expect_refused

BAD_TOKEN = 0xDEADBEEF  # a memory token no registration of these scenarios hands out


def _linked(open_adapter: OpenAdapter, *, ex: bool = True,
            client_knobs: dict[str, Any] | None = None, **kwargs: Any) -> tuple[Side, Side]:
    client = open_adapter(address=CLIENT, **(client_knobs or {}))
    server = open_adapter(address=SERVER)
    return connected_pair(client, server, ex=ex, **kwargs)


def _oversized_send(a: Side, b: Side, *, flags: int = 0, behind: int = 0) -> None:
    """b posts a 16-byte receive (context 0xB1) and ``behind`` 64-byte receives after it
    (contexts 0xB2, ...); a sends 64 bytes (context 0xA1), which the 16-byte one takes."""
    post_receive(b, 0, 16, 0xB1)
    for n in range(behind):
        post_receive(b, 512 * (n + 1), 64, 0xB2 + n)
    post_send(a, pattern(64), 0xA1, offset=1024, flags=flags)


def _expect(results: Sequence[ndk.ResultEx],
            expected: list[tuple[int, OpType, Status]]) -> None:
    """``results`` are, in order, the (request_context, type, status) of ``expected``."""
    assert [(r.request_context, r.type, r.status) for r in results] == expected


def _failed(cq: ndk.Cq, context: int, op: OpType) -> ndk.ResultEx:
    """The next result of ``cq`` is request ``context`` of type ``op`` failing: any status
    but SUCCESS (which one NDK does not say for these failures; the soft provider's are
    docs/semantics.md DATA-STATUS)."""
    (result,) = poll(cq, 1)
    assert (result.request_context, result.type) == (context, op)
    assert result.status != Status.SUCCESS
    return result


def _assert_connection_ended(a: Side, b: Side) -> None:
    """docs/semantics.md QP-ERROR: after an error completion every later post on either QP
    returns SUCCESS inline and completes STATUS_CANCELLED; no data moves."""
    b.buffer[40000:40064] = bytes(64)
    post_send(a, pattern(8, 9), 0xA9, offset=2048)
    post_receive(b, 40000, 64, 0xB9)
    post_send(b, pattern(8, 8), 0xB8, offset=2048)
    _expect(drain(a.cq, 1), [(0xA9, OpType.SEND, Status.CANCELLED)])
    results = drain(b.cq, 2)
    assert sorted((r.request_context, r.type, r.status) for r in results) == [
        (0xB8, OpType.SEND, Status.CANCELLED), (0xB9, OpType.RECEIVE, Status.CANCELLED)]
    assert bytes(b.buffer[40000:40064]) == bytes(64)


# --- ERROR: a send larger than the receive -----------------------------------------------------


@pytest.mark.rule("ERROR-OVERSIZED-SEND")
@pytest.mark.digest("4.2")
@pytest.mark.reference("DATA-STATUS")
def test_send_larger_than_receive(pair: Pair) -> None:
    """digest 4.2 (ND2 table: BUFFER_OVERFLOW = an incoming send exceeded the receive buffer;
    REMOTE_ERROR = the request caused an error on the remote QP), docs/semantics.md
    DATA-STATUS: a 64-byte send into a 16-byte receive -> the receive completes
    STATUS_BUFFER_OVERFLOW, the send STATUS_REMOTE_RESOURCES (= ND_REMOTE_ERROR); the
    connection ends (QP-ERROR)."""
    a, b = pair
    _oversized_send(a, b)
    _expect(drain(a.cq, 1), [(0xA1, OpType.SEND, Status.REMOTE_RESOURCES)])
    _expect(drain(b.cq, 1), [(0xB1, OpType.RECEIVE, Status.BUFFER_OVERFLOW)])
    _assert_connection_ended(a, b)


@pytest.mark.rule("ERROR-FLUSH-IN-ORDER")
@pytest.mark.digest("4.2")
@pytest.mark.reference("QP-ERROR")
def test_error_flushes_the_rest_in_order(pair: Pair) -> None:
    """digest 4.2 (ND2 QP error model: an error CQE terminates the connection, all further
    requests complete CANCELLED; completions in issue order), docs/semantics.md QP-ERROR:
    the failing send is followed on its CQ by the two sends queued behind it, CANCELLED, in
    posting order; at the peer the overflowing receive is followed by the two other receives,
    CANCELLED, in posting order.  (The queued sends are DEFER'ed behind the failing one; had
    the provider issued them later, they would complete CANCELLED all the same.)"""
    a, b = pair
    post_receive(b, 0, 16, 0xB1)
    post_receive(b, 512, 64, 0xB2)
    post_receive(b, 1024, 64, 0xB3)
    post_send(a, pattern(64), 0xA1, offset=4096, flags=OpFlag.DEFER)
    post_send(a, pattern(8), 0xA2, offset=8192, flags=OpFlag.DEFER)
    post_send(a, pattern(8), 0xA3, offset=12288)
    _expect(drain(a.cq, 3), [(0xA1, OpType.SEND, Status.REMOTE_RESOURCES),
                             (0xA2, OpType.SEND, Status.CANCELLED),
                             (0xA3, OpType.SEND, Status.CANCELLED)])
    _expect(drain(b.cq, 3), [(0xB1, OpType.RECEIVE, Status.BUFFER_OVERFLOW),
                             (0xB2, OpType.RECEIVE, Status.CANCELLED),
                             (0xB3, OpType.RECEIVE, Status.CANCELLED)])
    assert bytes(b.buffer[512:520]) == bytes(8)  # the cancelled sends moved nothing


@pytest.mark.rule("ERROR-LATER-POSTS-CANCELLED")
@pytest.mark.digest("4.2")
@pytest.mark.reference("QP-ERROR")
def test_posts_after_the_error_complete_cancelled(pair: Pair) -> None:
    """digest 4.2 (ND2: after an error CQE all further requests complete CANCELLED),
    docs/semantics.md QP-ERROR: on both QPs, sends, writes, reads and receives posted after
    the error return SUCCESS inline and complete STATUS_CANCELLED with their own type, in
    posting order; no byte moves."""
    a, b = pair
    _oversized_send(a, b)
    drain(a.cq, 1)
    drain(b.cq, 1)
    b.buffer[20000:20008] = bytes(8)
    a.buffer[4096:4104] = bytes(8)
    b.buffer[24000:24008] = pattern(8, 4)
    post_send(a, pattern(8), 1, offset=2048)
    assert a.qp.write([a.mr.sge(2048, 8)], b.mr.address + 20000, b.mr.remote_token,
                      request_context=2) == Status.SUCCESS
    assert a.qp.read([a.mr.sge(4096, 8)], b.mr.address + 24000, b.mr.remote_token,
                     request_context=3) == Status.SUCCESS
    post_receive(a, 8192, 64, 4)
    _expect(drain(a.cq, 4), [(1, OpType.SEND, Status.CANCELLED),
                             (2, OpType.WRITE, Status.CANCELLED),
                             (3, OpType.READ, Status.CANCELLED),
                             (4, OpType.RECEIVE, Status.CANCELLED)])
    post_receive(b, 8192, 64, 5)
    _expect(drain(b.cq, 1), [(5, OpType.RECEIVE, Status.CANCELLED)])
    assert bytes(b.buffer[20000:20008]) == bytes(8)
    assert bytes(a.buffer[4096:4104]) == bytes(8)


@pytest.mark.rule("ERROR-DISCONNECT-REASON")
@pytest.mark.digest("1.11")
@pytest.mark.reference("DISCONNECT-REASON")
@pytest.mark.parametrize("ex, reason", [(True, 3), (False, 0)], ids=["ex", "plain"])
def test_error_gives_the_peer_a_disconnect_event(open_adapter: OpenAdapter, ex: bool, reason: int) -> None:
    """digest 1.11, docs/semantics.md QP-ERROR and DISCONNECT-REASON: the connection an error
    completion ended gives the peer one disconnect event; through
    NdkDisconnectEventCallbackEx (NdkAcceptEx) its ProviderDisconnectReason is 3, through the
    plain callback there is no reason (0)."""
    a, b = _linked(open_adapter, ex=ex)
    _oversized_send(a, b)
    _expect(drain(a.cq, 1), [(0xA1, OpType.SEND, Status.REMOTE_RESOURCES)])
    assert b.connector.wait_disconnect(timeout=TIMEOUT) == reason
    assert b.connector.wait_disconnect(timeout=quiet_period(b.connector)) is None
    assert b.connector.disconnect_events == 1
    _expect(drain(b.cq, 1), [(0xB1, OpType.RECEIVE, Status.BUFFER_OVERFLOW)])


@pytest.mark.rule("ERROR-SILENT-FAILURE")
@pytest.mark.digest("2.5")
def test_silent_success_failure_still_completes(pair: Pair) -> None:
    """digest 2.5: NDK_OP_FLAG_SILENT_SUCCESS suppresses only successful completions; "failure
    always does" produce one: the oversized silent send (64 bytes into a 16-byte receive)
    completes with an error status, as does the receive it overflowed.  Which status NDK does
    not say: the soft provider's REMOTE_RESOURCES and BUFFER_OVERFLOW are ERROR-OVERSIZED-SEND's
    (docs/semantics.md DATA-STATUS)."""
    a, b = pair
    _oversized_send(a, b, flags=OpFlag.SILENT_SUCCESS)
    _failed(a.cq, 0xA1, OpType.SEND)
    _failed(b.cq, 0xB1, OpType.RECEIVE)


@pytest.mark.rule("ERROR-SOLICITED-ARM")
@pytest.mark.digest("3.2")
def test_error_completion_satisfies_solicited_arm(pair: Pair) -> None:
    """digest 3.2, 1.7: "requests that complete with an error always match the
    NDK_CQ_NOTIFY_SOLICITED notification type": the receiver's failed receive (a plain,
    unsolicited send too large for it) fires its SOLICITED arm, once, as does the sender's
    failed send.  Their statuses (soft: BUFFER_OVERFLOW and REMOTE_RESOURCES,
    docs/semantics.md DATA-STATUS) are ERROR-OVERSIZED-SEND's; here any error will do."""
    a, b = pair
    a.cq.arm(CqNotify.SOLICITED)
    b.cq.arm(CqNotify.SOLICITED)
    _oversized_send(a, b, behind=1)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert a.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    _failed(b.cq, 0xB1, OpType.RECEIVE)
    _failed(a.cq, 0xA1, OpType.SEND)
    no_notification(a.cq, b.cq)
    assert (a.cq.notifications, b.cq.notifications) == (1, 1)


@pytest.mark.rule("ERROR-ERRORS-ARM")
@pytest.mark.digest("3.2")
def test_error_completions_do_not_satisfy_errors_arm(pair: Pair) -> None:
    """digest 3.2, 1.3: NDK_CQ_NOTIFY_ERRORS is for CQ errors (overrun, catastrophic); error
    *completions* (soft: REMOTE_RESOURCES, BUFFER_OVERFLOW, then CANCELLED for the receive
    behind, docs/semantics.md DATA-STATUS, QP-ERROR; here any error will do) are ordinary
    entries and do not fire it."""
    a, b = pair
    a.cq.arm(CqNotify.ERRORS)
    b.cq.arm(CqNotify.ERRORS)
    _oversized_send(a, b, behind=1)
    _failed(a.cq, 0xA1, OpType.SEND)
    _failed(b.cq, 0xB1, OpType.RECEIVE)
    poll(b.cq, 1, timeout=quiet_period(b.cq))  # the receive behind, if the provider flushed it
    no_notification(a.cq, b.cq)
    assert (a.cq.notifications, b.cq.notifications) == (0, 0)


# --- ERROR: receiver not ready -------------------------------------------------------------


@pytest.mark.rule("ERROR-RNR-TIMEOUT")
@pytest.mark.digest("4.2")
@pytest.mark.reference("DATA-STATUS")
def test_send_without_receive_times_out(open_adapter: OpenAdapter) -> None:
    """digest 4.2 (ND2: IO_TIMEOUT = connection or remote QP failure), docs/semantics.md
    DATA-STATUS: a send with no receive posted at the peer within rnr_timeout_ms (knob, 20 ms
    here) completes STATUS_IO_TIMEOUT and ends the connection: the peer gets a disconnect event
    with reason 3, and a receive it posts afterwards completes CANCELLED (QP-ERROR)."""
    a, b = _linked(open_adapter, client_knobs={"rnr_timeout_ms": 20})
    post_send(a, pattern(32), 0xA1)
    _expect(drain(a.cq, 1), [(0xA1, OpType.SEND, Status.IO_TIMEOUT)])
    assert b.connector.wait_disconnect(timeout=TIMEOUT) == 3
    post_receive(b, 0, 64, 0xB1)
    _expect(drain(b.cq, 1), [(0xB1, OpType.RECEIVE, Status.CANCELLED)])
    assert bytes(b.buffer[:32]) == bytes(32)


@pytest.mark.rule("ERROR-RNR-ZERO")
@pytest.mark.digest("4.2")
@pytest.mark.reference("DATA-STATUS")
def test_rnr_timeout_zero_fails_without_waiting(open_adapter: OpenAdapter) -> None:
    """docs/knobs.md rnr_timeout_ms=0 ("no retry"), docs/semantics.md DATA-STATUS and
    PROGRESS: with progress="manual" the send's transfer is one engine step; with no receive at
    the peer that very step completes it STATUS_IO_TIMEOUT -- no timer is left to wait for --
    and the connection ends (the peer's receive posted next completes CANCELLED)."""
    a, b = loopback_pair(open_adapter, progress="manual", rnr_timeout_ms=0)
    adapter = a.adapter
    post_send(a, pattern(16), 0xA1)
    assert a.cq.get_results_ex(4) == []  # nothing moved yet: the transfer is queued
    assert adapter.step(1) == 1
    _expect(a.cq.get_results_ex(4), [(0xA1, OpType.SEND, Status.IO_TIMEOUT)])
    adapter.step(100)  # the peer's disconnect event
    assert b.connector.disconnect_events == 1
    post_receive(b, 0, 64, 0xB1)
    adapter.step(100)
    _expect(b.cq.get_results_ex(4), [(0xB1, OpType.RECEIVE, Status.CANCELLED)])


@pytest.mark.rule("ERROR-RNR-RESCUE")
@pytest.mark.digest("4.2")
@pytest.mark.reference("DATA-STATUS")
def test_receive_posted_before_timeout_rescues_send(open_adapter: OpenAdapter) -> None:
    """docs/semantics.md DATA-STATUS (rnr_timeout_ms, here 3 s): a send that found no receive
    waits; a receive posted at the peer before the timeout takes it: the send completes
    SUCCESS, the bytes arrive, no disconnect event, and the connection keeps working."""
    a, b = _linked(open_adapter, client_knobs={"rnr_timeout_ms": 3000})
    post_send(a, pattern(48), 0xA1)
    post_receive(b, 0, 64, 0xB1)
    _expect(drain(a.cq, 1), [(0xA1, OpType.SEND, Status.SUCCESS)])
    (received,) = drain(b.cq, 1)
    assert (received.status, received.bytes_transferred) == (Status.SUCCESS, 48)
    assert bytes(b.buffer[:48]) == pattern(48)
    post_receive(b, 512, 64, 0xB2)
    post_send(a, pattern(8, 2), 0xA2, offset=512)
    _expect(drain(a.cq, 1), [(0xA2, OpType.SEND, Status.SUCCESS)])
    _expect(drain(b.cq, 1), [(0xB2, OpType.RECEIVE, Status.SUCCESS)])
    assert b.connector.wait_disconnect(timeout=quiet_period(b.connector)) is None
    assert b.connector.disconnect_events == 0


# --- ERROR: memory access ------------------------------------------------------------------


@pytest.mark.rule("ERROR-LOCAL-ACCESS-VIOLATION")
@pytest.mark.digest("4.2")
@pytest.mark.reference("DATA-STATUS")
@pytest.mark.expect_violation("SGE-TOKEN")
def test_send_with_bad_local_token(open_adapter: OpenAdapter) -> None:
    """digest 4.2 (ND2: ACCESS_VIOLATION = invalid registered memory), docs/semantics.md
    DATA-STATUS: a send whose SGE names an unknown memory token completes
    STATUS_ACCESS_VIOLATION; the connection ends: the receive waiting at the peer is flushed
    CANCELLED (no byte arrives), the peer gets reason 3, later posts complete CANCELLED.
    Stated (digest 1.7: an SGE's token names a registered region): the send fails and no
    byte arrives; the choice: the statuses and the end of the connection."""
    a, b = _linked(open_adapter)
    post_receive(b, 0, 64, 0xB1)
    a.buffer[:32] = pattern(32)
    assert a.qp.send([ndk.Sge(a.mr.address, 32, BAD_TOKEN)], request_context=0xA1) \
        == Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.SEND, 0xA1, "digest 1.7")
    _expect(drain(b.cq, 1), [(0xB1, OpType.RECEIVE, Status.CANCELLED)])
    with stated("digest 1.7"):
        assert bytes(b.buffer[:32]) == bytes(32)
    assert b.connector.wait_disconnect(timeout=TIMEOUT) == 3
    _assert_connection_ended(a, b)


@pytest.mark.rule("ERROR-WRITE-BEYOND-REGION")
@pytest.mark.digest("4.2")
@pytest.mark.reference("DATA-STATUS")
def test_write_beyond_remote_region(open_adapter: OpenAdapter) -> None:
    """docs/semantics.md DATA-STATUS (remote range outside the region: REMOTE_RESOURCES,
    ND_REMOTE_ERROR of digest 4.2): an RDMA write running 32 bytes past the end of the peer's
    registration completes STATUS_REMOTE_RESOURCES, writes nothing, and ends the connection
    (the peer gets reason 3).  Stated (digest 1.7: remote memory outside the region is not
    the consumer's to write): the write fails and writes nothing; the choice: its status and
    the end of the connection."""
    a, b = _linked(open_adapter)
    end = b.mr.address + b.mr.length
    a.buffer[:64] = pattern(64)
    assert a.qp.write([a.mr.sge(0, 64)], end - 32, b.mr.remote_token,
                      request_context=0xA1) == Status.SUCCESS
    expect_refused(a.cq, Status.REMOTE_RESOURCES, OpType.WRITE, 0xA1, "digest 1.7")
    with stated("digest 1.7"):
        assert bytes(b.buffer[-32:]) == bytes(32)
    assert b.connector.wait_disconnect(timeout=TIMEOUT) == 3
    _assert_connection_ended(a, b)


@pytest.mark.rule("ERROR-READ-BEYOND-REGION")
@pytest.mark.digest("1.7")
def test_read_beyond_remote_region(open_adapter: OpenAdapter) -> None:
    """digest 1.7 (NdkRead: STATUS_REMOTE_RESOURCES for a read beyond the size of remote
    memory): inline, with no completion, or through the completion, as the soft provider
    reports it (it finds the condition at the peer, docs/semantics.md DATA-STATUS); the sink
    is untouched either way.  (What an error completion does to the connection is
    ERROR-DISCONNECT-REASON's and ERROR-LATER-POSTS-CANCELLED's.)"""
    a, b = _linked(open_adapter)
    b.buffer[:] = bytes([0x5A]) * len(b.buffer)
    end = b.mr.address + b.mr.length
    status = a.qp.read([a.mr.sge(0, 128)], end - 64, b.mr.remote_token, request_context=0xA1)
    if status == Status.SUCCESS:
        _expect(drain(a.cq, 1), [(0xA1, OpType.READ, Status.REMOTE_RESOURCES)])
    else:
        assert status == Status.REMOTE_RESOURCES
        expect_no_completion(a.cq)
    assert bytes(a.buffer[:128]) == bytes(128)


@pytest.mark.rule("ERROR-BAD-REMOTE-TOKEN")
@pytest.mark.digest("4.2")
@pytest.mark.reference("DATA-STATUS")
@pytest.mark.parametrize("op", ["write", "read"])
def test_rdma_with_bad_remote_token(open_adapter: OpenAdapter, op: str) -> None:
    """docs/semantics.md DATA-STATUS (remote token invalid: ACCESS_VIOLATION, ND2 table of
    digest 4.2): an RDMA write or read naming a token the peer never handed out completes
    STATUS_ACCESS_VIOLATION and ends the connection.  Stated (digest 1.7: a remote token
    the peer handed out): the request fails; the choice: its status and the end of the
    connection."""
    a, b = _linked(open_adapter)
    post = a.qp.write if op == "write" else a.qp.read
    assert post([a.mr.sge(0, 16)], b.mr.address, BAD_TOKEN, request_context=0xA1) \
        == Status.SUCCESS
    expected_type = OpType.WRITE if op == "write" else OpType.READ
    expect_refused(a.cq, Status.ACCESS_VIOLATION, expected_type, 0xA1, "digest 1.7")
    assert b.connector.wait_disconnect(timeout=TIMEOUT) == 3
    _assert_connection_ended(a, b)


@pytest.mark.rule("ERROR-REMOTE-ACCESS-DENIED")
@pytest.mark.digest("4.2")
@pytest.mark.reference("DATA-STATUS")
def test_write_to_region_without_remote_write(open_adapter: OpenAdapter) -> None:
    """docs/semantics.md DATA-STATUS (remote token without the access: ACCESS_VIOLATION): a
    write into a region the peer registered for remote read only completes
    STATUS_ACCESS_VIOLATION; the region is unchanged.  Stated (digest 2.6: remote writes
    need NDK_MR_FLAG_ALLOW_REMOTE_WRITE): the write fails and changes nothing; the choice:
    its status."""
    a, b = _linked(open_adapter)
    read_only, memory = register(b.pd, 4096, MrFlag.ALLOW_LOCAL_WRITE | MrFlag.ALLOW_REMOTE_READ)
    a.buffer[:16] = pattern(16)
    assert a.qp.write([a.mr.sge(0, 16)], read_only.address, read_only.remote_token,
                      request_context=0xA1) == Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.WRITE, 0xA1, "digest 2.6")
    with stated("digest 2.6"):
        assert bytes(memory[:16]) == bytes(16)


@pytest.mark.rule("ERROR-READ-SINK-FLAG")
@pytest.mark.digest("1.4")
@pytest.mark.reference("DATA-STATUS")
def test_read_into_region_without_read_sink_flag(open_adapter: OpenAdapter) -> None:
    """digest 1.4: NDK_MR_FLAG_RDMA_READ_SINK is required for RDMA read sinks unless the
    adapter sets NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED; docs/semantics.md DATA-STATUS:
    a read into a region registered without it completes STATUS_ACCESS_VIOLATION (a local SGE
    problem) and leaves the sink untouched.  Stated (digest 1.4): the read fails and leaves
    the sink untouched; the choice: its status."""
    a, b = _linked(open_adapter)
    if int(a.adapter.query_info().adapter_flags) & AdapterFlag.RDMA_READ_SINK_NOT_REQUIRED:
        pytest.skip("adapter sets NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED")
    sink, memory = register(a.pd, 4096, MrFlag.ALLOW_LOCAL_WRITE)
    b.buffer[:32] = pattern(32)
    assert a.qp.read([sink.sge(0, 32)], b.mr.address, b.mr.remote_token,
                     request_context=0xA1) == Status.SUCCESS
    expect_refused(a.cq, Status.ACCESS_VIOLATION, OpType.READ, 0xA1, "digest 1.4")
    with stated("digest 1.4"):
        assert bytes(memory[:32]) == bytes(32)


# --- ERROR: inline failures ------------------------------------------------------------------


@pytest.mark.rule("ERROR-INLINE-FAILURE-KEEPS-QP")
@pytest.mark.digest("3.4")
@pytest.mark.reference("POST-CHECKS")
def test_inline_failure_has_no_completion_and_keeps_connection(open_adapter: OpenAdapter) -> None:
    """digest 3.4 (an inline failure gives no CQE), 4.2 (ND2: an inline post failure leaves the
    QP usable), docs/semantics.md POST-CHECKS: a send with a flag NdkSend does not document
    (ALLOW_REMOTE_READ) fails inline with STATUS_INVALID_PARAMETER, produces no completion, and
    the next send still moves its bytes; the peer sees no disconnect.  Stated (digest 3.4,
    1.7): no completion for the inline failure, and the next send completes SUCCESS with its
    bytes; the choice: the refusal, its status, and the connection kept."""
    a, b = _linked(open_adapter)
    post_receive(b, 0, 64, 0xB1)
    post_send(a, pattern(8), 0xA0, flags=OpFlag.ALLOW_REMOTE_READ,
              expect=Status.INVALID_PARAMETER)
    with stated("digest 3.4, 1.7"):
        post_send(a, pattern(24, 3), 0xA1, offset=512)
        _expect(drain(a.cq, 1), [(0xA1, OpType.SEND, Status.SUCCESS)])
        (received,) = drain(b.cq, 1)
        assert (received.request_context, received.status, received.bytes_transferred) \
            == (0xB1, Status.SUCCESS, 24)
        assert bytes(b.buffer[:24]) == pattern(24, 3)
    assert b.connector.wait_disconnect(timeout=quiet_period(b.connector)) is None


@pytest.mark.rule("ERROR-QUEUE-FULL-INITIATOR")
@pytest.mark.digest("4.2")
@pytest.mark.reference("POST-CHECKS")
@pytest.mark.expect_violation("POST-QUEUE-DEPTH")
def test_initiator_queue_full_loses_nothing(open_adapter: OpenAdapter) -> None:
    """digest 4.2 (ND2 QP::Send: NO_MORE_ENTRIES when the queue is full), docs/semantics.md
    POST-CHECKS: with an initiator queue of depth 2 holding two sends that wait for receives,
    a third send fails inline with STATUS_NO_MORE_ENTRIES and never completes; once the peer
    posts receives both queued sends complete SUCCESS, in order, with their bytes, and the
    queue takes posts again."""
    a, b = _linked(open_adapter, client_knobs={"rnr_timeout_ms": 3000},
                   initiator_queue_depth=2)
    post_send(a, pattern(16, 1), 1, offset=0)
    post_send(a, pattern(16, 2), 2, offset=512)
    post_send(a, pattern(16, 3), 3, offset=1024, expect=Status.NO_MORE_ENTRIES)
    post_receive(b, 4096, 64, 11)
    post_receive(b, 8192, 64, 12)
    _expect(drain(a.cq, 2), [(1, OpType.SEND, Status.SUCCESS), (2, OpType.SEND, Status.SUCCESS)])
    assert [(r.request_context, r.bytes_transferred) for r in drain(b.cq, 2)] == [(11, 16),
                                                                                  (12, 16)]
    assert bytes(b.buffer[4096:4112]) == pattern(16, 1)
    assert bytes(b.buffer[8192:8208]) == pattern(16, 2)
    post_receive(b, 12288, 64, 13)
    post_send(a, pattern(16, 4), 4, offset=1536)
    _expect(drain(a.cq, 1), [(4, OpType.SEND, Status.SUCCESS)])
    assert bytes(b.buffer[12288:12304]) == pattern(16, 4)


@pytest.mark.rule("ERROR-QUEUE-FULL-RECEIVE")
@pytest.mark.digest("4.2")
@pytest.mark.reference("QUEUE-FULL")
@pytest.mark.expect_violation("POST-QUEUE-DEPTH")
def test_receive_queue_full_loses_nothing(open_adapter: OpenAdapter) -> None:
    """digest 4.2 (ND2 QP::Receive: NO_MORE_ENTRIES), docs/semantics.md QUEUE-FULL: a third
    receive on a receive queue of depth 2 fails inline with STATUS_NO_MORE_ENTRIES; the two
    queued receives take the next two sends, in order, and the queue then takes a new receive."""
    a, b = _linked(open_adapter, receive_queue_depth=2)
    post_receive(b, 0, 64, 11)
    post_receive(b, 512, 64, 12)
    assert b.qp.receive([b.mr.sge(1024, 64)], request_context=13) == Status.NO_MORE_ENTRIES
    post_send(a, pattern(10, 1), 1, offset=0)
    post_send(a, pattern(10, 2), 2, offset=512)
    assert [(r.request_context, r.status) for r in drain(b.cq, 2)] == [(11, Status.SUCCESS),
                                                                      (12, Status.SUCCESS)]
    assert bytes(b.buffer[:10]) == pattern(10, 1)
    assert bytes(b.buffer[512:522]) == pattern(10, 2)
    assert bytes(b.buffer[1024:1034]) == bytes(10)
    post_receive(b, 1024, 64, 13)
    post_send(a, pattern(10, 3), 3, offset=1024)
    assert [r.request_context for r in drain(b.cq, 1)] == [13]
    assert len(drain(a.cq, 3)) == 3


# --- OVERRUN: a CQ that real traffic overruns ---------------------------------------------


def _overrun(open_adapter: OpenAdapter, *, arm: CqNotify | None = None) -> tuple[Side, Side]:
    """b's CQ (depth 2, both queues) receives three sends: the third overruns it."""
    client = open_adapter(address=CLIENT)
    server = open_adapter(address=SERVER)
    a, b = connect_sides(Side(client), Side(server, cq_depth=2))
    if arm is not None:
        b.cq.arm(arm)
    for n in range(3):
        post_receive(b, 512 * n, 64, 0xB0 + n)
    for n in range(3):
        post_send(a, pattern(16, n), 0xA0 + n, offset=512 * n)
    return a, b


@pytest.mark.rule("OVERRUN-NOTIFY")
@pytest.mark.digest("1.3")
def test_overrun_notified_with_buffer_overflow(open_adapter: OpenAdapter) -> None:
    """digest 1.3 (NdkCqNotificationCallback CqStatus): a CQ overrun is reported as
    STATUS_BUFFER_OVERFLOW to an ERRORS arm, once (digest 3.2: once per arm); no further
    completions are reported: NdkGetCqResults(Ex) return at most the two that fitted before
    the overrun, in order (the soft provider returns none: docs/semantics.md CQ-ERROR-ARM),
    while the peer's CQ is unaffected and reports its three sends.  What a later arm hears
    is OVERRUN-NEXT-ARM's."""
    a, b = _overrun(open_adapter, arm=CqNotify.ERRORS)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.BUFFER_OVERFLOW
    fitted = [r.request_context for r in b.cq.get_results_ex(8)]
    assert fitted == [0xB0, 0xB1][:len(fitted)]
    assert b.cq.get_results(8) == []
    assert [(r.request_context, r.status) for r in drain(a.cq, 3)] == [
        (0xA0, Status.SUCCESS), (0xA1, Status.SUCCESS), (0xA2, Status.SUCCESS)]
    no_notification(b.cq)
    assert b.cq.notifications == 1


@pytest.mark.rule("OVERRUN-NEXT-ARM")
@pytest.mark.digest("1.3")
@pytest.mark.reference("CQ-ERROR-ARM")
@pytest.mark.parametrize("arm", [CqNotify.ERRORS, CqNotify.ANY, CqNotify.SOLICITED],
                         ids=["errors", "any", "solicited"])
def test_unarmed_overrun_reported_to_next_arm(open_adapter: OpenAdapter, arm: CqNotify) -> None:
    """digest 1.3, 3.2 do not say whether an overrun that happened while the CQ was unarmed
    is reported to a later arm, nor to which arm types.  docs/semantics.md CQ-ERROR-ARM (a
    reference choice): to the next arm, whatever its type, with STATUS_BUFFER_OVERFLOW, once;
    a further arm gets nothing, and the CQ reports no completion.  Stated (digest 1.3: no
    further completions after an overrun): the CQ reports at most the two that fitted; the
    choice: the rest."""
    a, b = _overrun(open_adapter)
    drain(a.cq, 3)
    no_notification(b.cq)
    b.cq.arm(arm)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.BUFFER_OVERFLOW
    b.cq.arm(arm)
    no_notification(b.cq)
    assert b.cq.notifications == 1
    fitted = [r.request_context for r in b.cq.get_results_ex(8)]
    with stated("digest 1.3"):
        assert fitted == [0xB0, 0xB1][:len(fitted)]
    assert fitted == []


@pytest.mark.rule("OVERRUN-QP-POSTS")
@pytest.mark.digest("1.3")
@pytest.mark.reference("CQ-OVERRUN-QP")
def test_posts_on_overrun_cq_qp_fail_inline(open_adapter: OpenAdapter) -> None:
    """digest 1.3 ("the CQ and all associated QPs become unusable") does not say what a post
    on such a QP returns.  docs/semantics.md CQ-OVERRUN-QP (a reference choice): every post
    on the QP whose CQ overran -- receive, send, write, read -- fails inline with
    STATUS_INVALID_DEVICE_STATE, and the CQ reports nothing (CQ-ERROR-ARM).  Stated (digest
    1.3): the overrun reported to the ERRORS arm as STATUS_BUFFER_OVERFLOW, and at most the
    two completions that fitted; the choice: the posts' status and nothing at all."""
    a, b = _overrun(open_adapter, arm=CqNotify.ERRORS)
    with stated("digest 1.3"):
        assert b.cq.wait_notification(timeout=TIMEOUT) == Status.BUFFER_OVERFLOW
    assert b.qp.receive([b.mr.sge(4096, 64)], request_context=1) == Status.INVALID_DEVICE_STATE
    assert b.qp.send([b.mr.sge(4096, 8)], request_context=2) == Status.INVALID_DEVICE_STATE
    assert b.qp.write([b.mr.sge(4096, 8)], a.mr.address, a.mr.remote_token,
                      request_context=3) == Status.INVALID_DEVICE_STATE
    assert b.qp.read([b.mr.sge(4096, 8)], a.mr.address, a.mr.remote_token,
                     request_context=4) == Status.INVALID_DEVICE_STATE
    fitted = [r.request_context for r in b.cq.get_results_ex(8)]
    with stated("digest 1.3"):
        assert fitted == [0xB0, 0xB1][:len(fitted)]
    assert fitted == []


@pytest.mark.rule("OVERRUN-INITIATOR-CQ")
@pytest.mark.digest("1.3")
@pytest.mark.reference("CQ-OVERRUN-QP")
def test_initiator_cq_overrun(open_adapter: OpenAdapter) -> None:
    """digest 1.3 ("the CQ and all associated QPs become unusable"; what a post then returns
    is not said), docs/semantics.md CQ-OVERRUN-QP (a reference choice): an initiator CQ
    (depth 2, separate from the receive CQ) overrun by three send completions is reported
    STATUS_BUFFER_OVERFLOW on its ERRORS arm; the QP is unusable on both queues
    (INVALID_DEVICE_STATE inline) though its receive CQ did not overrun; the peer received
    all three sends.  Stated (digest 1.3, 1.7): the overrun reported as STATUS_BUFFER_OVERFLOW,
    at most the two send completions that fitted, the peer's three receives; the choice: no
    completion at all, and the posts' status."""
    client = open_adapter(address=CLIENT)
    server = open_adapter(address=SERVER)
    a, b = connect_sides(Side(client, cq_depth=2, separate_cqs=True),
                         Side(server, separate_cqs=True))
    a.initiator_cq.arm(CqNotify.ERRORS)
    for n in range(3):
        post_receive(b, 512 * n, 64, 0xB0 + n)
    for n in range(3):
        post_send(a, pattern(16, n), 0xA0 + n, offset=512 * n)
    with stated("digest 1.3, 1.7"):
        assert a.initiator_cq.wait_notification(timeout=TIMEOUT) == Status.BUFFER_OVERFLOW
        fitted = [r.request_context for r in a.initiator_cq.get_results_ex(8)]
        assert fitted == [0xA0, 0xA1][:len(fitted)]
        assert [(r.request_context, r.status) for r in drain(b.receive_cq, 3)] == [
            (0xB0, Status.SUCCESS), (0xB1, Status.SUCCESS), (0xB2, Status.SUCCESS)]
    assert fitted == []
    assert a.qp.send([a.mr.sge(0, 8)], request_context=1) == Status.INVALID_DEVICE_STATE
    assert a.qp.receive([a.mr.sge(0, 64)], request_context=2) == Status.INVALID_DEVICE_STATE
    assert a.receive_cq.get_results_ex(8) == []
