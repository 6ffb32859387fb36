"""Completions of real traffic: NDK_RESULT / NDK_RESULT_EX fields (digest 2.2, 2.3), CQ
notifications and arming (digest 3.2, 1.3), interrupt moderation (digest 1.3) and resizing a CQ
that holds completions (digest 1.3, 4.2).

Every scenario connects two QPs (``ndk.scenario.completion.pair`` / ``link``) and moves bytes: a
send into a posted receive, an RDMA write or read, a bind; it then checks the exact entries
each CQ reports and the notifications each arm gives.
"""

from __future__ import annotations

import pytest

import ndk
from ndk import AdapterFlag, CqNotify, OpFlag, OpType, Status
from ndk.testing import OpenAdapter, Pair

from ndk.scenario.completion import (CLIENT, MAXULONG, SERVER, TIMEOUT, connect_sides,
                                     connected_pair, drain, loopback_pair, no_notification,
                                     pattern, post_receive, post_send, Side)
from ndk.scenario.stated import stated


def _requires_flag(adapter: ndk.Adapter, flag: AdapterFlag, what: str) -> None:
    if not int(adapter.query_info().adapter_flags) & int(flag):
        pytest.skip(f"adapter does not set NDK_ADAPTER_FLAG_{flag.name} ({what})")


def _exchange(a: Side, b: Side, count: int, *, first_context: int = 1, size: int = 32,
              flags: int = 0) -> None:
    """``count`` sends from a into receives posted at b: send number n (n = first_context,
    first_context + 1, ...) has context n, carries pattern(size, n) from offset 512 * n of a's
    buffer, and lands in b's receive of context 100 + n at offset 512 * n; every post is
    accepted inline."""
    for n in range(first_context, first_context + count):
        post_receive(b, 512 * n, 256, 100 + n)
    for n in range(first_context, first_context + count):
        post_send(a, pattern(size, n), n, offset=512 * n, flags=flags)


def _assert_success(result: ndk.ResultEx, op_type: OpType, context: int) -> None:
    assert result.status == Status.SUCCESS
    assert result.type == op_type
    assert result.request_context == context
    assert result.provider_error_code == 0  # digest 2.3: must be 0 when Status is SUCCESS


# --- RESULT: the fields of each completion ---------------------------------------------------


@pytest.mark.rule("RESULT-TYPE-SEND-RECEIVE")
@pytest.mark.digest("2.3")
def test_send_and_receive_result_types(pair: Pair) -> None:
    """digest 2.2, 2.3: a send completes at the sender as NdkOperationTypeSend and at the
    receiver as NdkOperationTypeReceive, both SUCCESS with ProviderErrorCode 0; the receive's
    BytesTransferred is the length sent, and the bytes are in the receive buffer."""
    a, b = pair
    data = pattern(100)
    post_receive(b, 0, 256, 0xB1)
    post_send(a, data, 0xA1)
    (sent,) = drain(a.cq, 1)
    _assert_success(sent, OpType.SEND, 0xA1)
    (received,) = drain(b.cq, 1)
    _assert_success(received, OpType.RECEIVE, 0xB1)
    assert received.bytes_transferred == len(data)
    assert bytes(b.buffer[:len(data)]) == data
    assert b.buffer[len(data)] == 0  # nothing beyond what was sent


@pytest.mark.rule("RESULT-TYPE-WRITE")
@pytest.mark.digest("2.3")
def test_write_result_type(pair: Pair) -> None:
    """digest 2.2, 2.3: an RDMA write completes at the writer only, as
    NdkOperationTypeWrite, SUCCESS, ProviderErrorCode 0; the peer's CQ gets nothing and its
    memory holds the bytes."""
    a, b = pair
    data = pattern(200, 3)
    a.buffer[:200] = data
    assert a.qp.write([a.mr.sge(0, 200)], b.mr.address + 1024, b.mr.remote_token,
                      request_context=0x57) == Status.SUCCESS
    (written,) = drain(a.cq, 1)
    _assert_success(written, OpType.WRITE, 0x57)
    assert bytes(b.buffer[1024:1224]) == data
    assert b.cq.get_results_ex(4) == []


@pytest.mark.rule("RESULT-TYPE-READ")
@pytest.mark.digest("2.3")
def test_read_result_type(pair: Pair) -> None:
    """digest 2.2, 2.3: an RDMA read completes at the reader only, as NdkOperationTypeRead,
    SUCCESS, ProviderErrorCode 0, with the peer's bytes in the sink."""
    a, b = pair
    data = pattern(300, 5)
    b.buffer[2048:2348] = data
    assert a.qp.read([a.mr.sge(4096, 300)], b.mr.address + 2048, b.mr.remote_token,
                     request_context=0x5E) == Status.SUCCESS
    (read,) = drain(a.cq, 1)
    _assert_success(read, OpType.READ, 0x5E)
    assert bytes(a.buffer[4096:4396]) == data
    assert b.cq.get_results_ex(4) == []


@pytest.mark.rule("RESULT-TYPE-BIND-INVALIDATE")
@pytest.mark.digest("2.3")
def test_bind_and_invalidate_result_types(pair: Pair) -> None:
    """digest 2.2, 2.3, 1.7: NdkBind completes as NdkOperationTypeBind and NdkInvalidate as
    NdkOperationTypeInvalidate, both SUCCESS with ProviderErrorCode 0; between them the
    window gives the peer remote write access to the bound range."""
    a, b = pair
    mw = a.pd.create_mw().get(timeout=TIMEOUT)
    assert a.qp.bind(a.mr, mw, a.mr.address + 8192, 4096,
                     flags=OpFlag.ALLOW_REMOTE_READ | OpFlag.ALLOW_REMOTE_WRITE,
                     request_context=0xB0) == Status.SUCCESS
    (bound,) = drain(a.cq, 1)
    _assert_success(bound, OpType.BIND, 0xB0)
    data = pattern(64, 9)
    b.buffer[:64] = data
    assert b.qp.write([b.mr.sge(0, 64)], a.mr.address + 8192, mw.remote_token,
                      request_context=0x3) == Status.SUCCESS
    _assert_success(drain(b.cq, 1)[0], OpType.WRITE, 0x3)
    assert bytes(a.buffer[8192:8256]) == data
    assert a.qp.invalidate(mw, request_context=0x1A) == Status.SUCCESS
    (invalidated,) = drain(a.cq, 1)
    _assert_success(invalidated, OpType.INVALIDATE, 0x1A)


@pytest.mark.rule("RESULT-RECEIVE-AND-INVALIDATE")
@pytest.mark.digest("2.3")
def test_send_and_invalidate_result_types(pair: Pair) -> None:
    """digest 2.3, 1.7: the receive of an NdkSendAndInvalidate completes as
    NdkOperationTypeReceiveAndInvalidate with the invalidated token in
    TypeSpecificCompletionOutput; the sender's completion type is NdkOperationTypeSend."""
    a, b = pair
    mw = b.pd.create_mw().get(timeout=TIMEOUT)
    assert b.qp.bind(b.mr, mw, b.mr.address + 4096, 4096, flags=OpFlag.ALLOW_REMOTE_READ,
                     request_context=0xB1) == Status.SUCCESS
    _assert_success(drain(b.cq, 1)[0], OpType.BIND, 0xB1)
    token = mw.remote_token
    post_receive(b, 0, 128, 0xC1)
    data = pattern(40, 2)
    a.buffer[:40] = data
    assert a.qp.send_and_invalidate([a.mr.sge(0, 40)], token,
                                    request_context=0xA2) == Status.SUCCESS
    _assert_success(drain(a.cq, 1)[0], OpType.SEND, 0xA2)
    (received,) = drain(b.cq, 1)
    _assert_success(received, OpType.RECEIVE_AND_INVALIDATE, 0xC1)
    assert received.type_specific_completion_output == token
    assert received.bytes_transferred == 40
    assert bytes(b.buffer[:40]) == data


@pytest.mark.rule("RESULT-RECEIVE-AND-INVALIDATE-PLAIN")
@pytest.mark.digest("3.2")
@pytest.mark.reference("DATA-STATUS")
def test_receive_and_invalidate_through_plain_results(pair: Pair) -> None:
    """digest 3.2: a ReceiveAndInvalidate completion is still retrievable with
    NdkGetCqResults (SUCCESS, its bytes and context: stated, a failure there is a failure); the
    token is still invalidated, so a later NdkInvalidate of it fails (stated: not SUCCESS); the
    reference choice is only which status (docs/semantics.md DATA-STATUS: invalidating an
    unbound MW completes STATUS_INVALID_DEVICE_REQUEST)."""
    a, b = pair
    with stated("digest 3.2"):
        mw = b.pd.create_mw().get(timeout=TIMEOUT)
        assert b.qp.bind(b.mr, mw, b.mr.address, 4096, flags=OpFlag.ALLOW_REMOTE_READ,
                         request_context=0xB1) == Status.SUCCESS
        drain(b.cq, 1)
        post_receive(b, 8192, 128, 0xC2)
        a.buffer[:16] = pattern(16)
        assert a.qp.send_and_invalidate([a.mr.sge(0, 16)], mw.remote_token,
                                        request_context=0xA3) == Status.SUCCESS
        (plain,) = drain(b.cq, 1, ex=False)
        assert plain.status == Status.SUCCESS
        assert plain.bytes_transferred == 16
        assert plain.request_context == 0xC2
        assert plain.qp_context == 0
        assert b.qp.invalidate(mw, request_context=0x1B) == Status.SUCCESS
        (again,) = drain(b.cq, 1)
        assert again.type == OpType.INVALIDATE
        assert again.request_context == 0x1B
        assert again.status != Status.SUCCESS, "the token was invalidated by the send"
    assert again.status == Status.INVALID_DEVICE_REQUEST


@pytest.mark.rule("RESULT-BYTES-TRANSFERRED")
@pytest.mark.digest("2.3")
@pytest.mark.parametrize("size", [0, 1, 300, 4096])
def test_receive_bytes_transferred(pair: Pair, size: int) -> None:
    """digest 2.3: BytesTransferred of a Receive completion is the number of bytes the send
    carried (0 for a send with no SGE), in both NDK_RESULT and NDK_RESULT_EX."""
    a, b = pair
    post_receive(b, 0, 8192, 1)
    post_receive(b, 8192, 8192, 2)
    post_send(a, pattern(size), 11)
    post_send(a, pattern(size, 7), 12, offset=8192)
    (ex,) = b.cq.wait_results(1, timeout=TIMEOUT)
    assert ex.status == Status.SUCCESS and ex.request_context == 1
    assert ex.bytes_transferred == size
    (plain,) = drain(b.cq, 1, ex=False)
    assert plain.status == Status.SUCCESS and plain.request_context == 2
    assert plain.bytes_transferred == size
    assert bytes(b.buffer[8192:8192 + size]) == pattern(size, 7)
    assert [r.status for r in drain(a.cq, 2)] == [Status.SUCCESS, Status.SUCCESS]


@pytest.mark.rule("RESULT-QP-CONTEXT")
@pytest.mark.digest("2.3")
def test_qp_context_is_the_create_qp_value(open_adapter: OpenAdapter) -> None:
    """digest 2.3: QPContext is the value given at NdkCreateQp, on every completion of that
    QP, initiator and receive alike, in NDK_RESULT and NDK_RESULT_EX."""
    client = open_adapter(address=CLIENT)
    server = open_adapter(address=SERVER)
    a, b = connect_sides(Side(client, qp_context=0xA11CE), Side(server, qp_context=0xB0B))
    post_receive(a, 0, 64, 1)
    post_receive(b, 0, 64, 2)
    post_send(a, pattern(8), 3, offset=4096)
    post_send(b, pattern(8), 4, offset=4096)
    a_results = drain(a.cq, 2)
    b_results = drain(b.cq, 2, ex=False)
    assert {r.request_context for r in a_results} == {1, 3}
    assert {r.request_context for r in b_results} == {2, 4}
    assert [r.qp_context for r in a_results] == [0xA11CE, 0xA11CE]
    assert [r.qp_context for r in b_results] == [0xB0B, 0xB0B]


@pytest.mark.rule("RESULT-PLAIN-FIELDS")
@pytest.mark.digest("2.3")
def test_plain_result_has_the_ex_fields_but_type(open_adapter: OpenAdapter) -> None:
    """digest 2.3: NDK_RESULT = {Status, BytesTransferred, QPContext, RequestContext}: the
    same values NDK_RESULT_EX reports for an equal completion, without the Type fields."""
    client = open_adapter(address=CLIENT)
    server = open_adapter(address=SERVER)
    a, b = connect_sides(Side(client, qp_context=0x1), Side(server, qp_context=0x2))
    post_receive(b, 0, 128, 21)
    post_receive(b, 4096, 128, 22)
    post_send(a, pattern(77), 31)
    post_send(a, pattern(77), 32, offset=4096)
    (plain,) = b.cq.wait_results(1, timeout=TIMEOUT, ex=False)
    (ex,) = drain(b.cq, 1)
    assert (plain.status, plain.bytes_transferred, plain.qp_context, plain.request_context) \
        == (Status.SUCCESS, 77, 0x2, 21)
    assert (ex.status, ex.bytes_transferred, ex.qp_context, ex.request_context) \
        == (Status.SUCCESS, 77, 0x2, 22)
    assert not hasattr(plain, "type")
    assert ex.type == OpType.RECEIVE
    sends = drain(a.cq, 2, ex=False)
    assert [(r.status, r.qp_context, r.request_context) for r in sends] \
        == [(Status.SUCCESS, 0x1, 31), (Status.SUCCESS, 0x1, 32)]


@pytest.mark.rule("RESULT-ORDER")
@pytest.mark.digest("4.2")
def test_results_drain_in_issue_order(pair: Pair) -> None:
    """digest 4.2 (ND2): requests complete in issue order within one QP, initiator and receive
    queues separately; NdkGetCqResults removes the oldest first (digest 1.3)."""
    a, b = pair
    sizes = [10, 200, 1, 64, 33]
    for i in range(5):
        post_receive(b, 4096 * i, 256, 100 + i)
    for i, size in enumerate(sizes):
        post_send(a, pattern(size, i), i, offset=4096 * i)
    sent = drain(a.cq, 5)
    assert [r.request_context for r in sent] == [0, 1, 2, 3, 4]
    received = drain(b.cq, 5)
    assert [r.request_context for r in received] == [100, 101, 102, 103, 104]
    assert [r.bytes_transferred for r in received] == sizes
    for i, size in enumerate(sizes):
        assert bytes(b.buffer[4096 * i:4096 * i + size]) == pattern(size, i)


@pytest.mark.rule("RESULT-ORDER-MIXED")
@pytest.mark.digest("4.2")
def test_mixed_initiator_results_in_issue_order(pair: Pair) -> None:
    """digest 4.2, 2.2: a send, a write, a read and another send on one initiator queue
    complete in that order, each with its own Type."""
    a, b = pair
    post_receive(b, 0, 64, 50)
    post_receive(b, 64, 64, 51)
    b.buffer[16384:16400] = pattern(16, 4)
    post_send(a, pattern(8), 1)
    assert a.qp.write([a.mr.sge(0, 8)], b.mr.address + 8192, b.mr.remote_token,
                      request_context=2) == Status.SUCCESS
    assert a.qp.read([a.mr.sge(4096, 16)], b.mr.address + 16384, b.mr.remote_token,
                     request_context=3) == Status.SUCCESS
    post_send(a, pattern(8, 2), 4, offset=1024)
    results = drain(a.cq, 4)
    assert [(r.request_context, r.type) for r in results] == [
        (1, OpType.SEND), (2, OpType.WRITE), (3, OpType.READ), (4, OpType.SEND)]
    assert all(r.status == Status.SUCCESS for r in results)
    assert bytes(a.buffer[4096:4112]) == pattern(16, 4)
    assert [r.request_context for r in drain(b.cq, 2)] == [50, 51]


@pytest.mark.rule("RESULT-COUNT-LIMIT")
@pytest.mark.digest("1.3")
def test_n_limits_how_many_results_are_removed(pair: Pair) -> None:
    """digest 1.3: NdkGetCqResults(Ex) removes at most nResults entries and returns how many;
    the rest stay queued, oldest first, for either call; an empty CQ returns none."""
    a, b = pair
    _exchange(a, b, 5)
    drain(a.cq, 5)
    first = b.cq.wait_results(2, timeout=TIMEOUT)
    assert [r.request_context for r in first] == [101, 102]
    second = b.cq.get_results(2)
    assert [r.request_context for r in second] == [103, 104]
    third = b.cq.get_results_ex(8)
    assert [r.request_context for r in third] == [105]
    assert b.cq.get_results_ex(8) == []
    assert b.cq.get_results(8) == []


@pytest.mark.rule("RESULT-COUNT-ZERO")
@pytest.mark.digest("1.3")
def test_zero_results_requested_removes_nothing(pair: Pair) -> None:
    """digest 1.3: NdkGetCqResults(Ex) with nResults 0 removes nothing (0 entries returned);
    the queued completion is still there for the next call."""
    a, b = pair
    post_receive(b, 0, 64, 7)
    post_send(a, pattern(4), 8)
    drain(a.cq, 1)
    _wait_queued(b)
    assert b.cq.get_results_ex(0) == []
    assert b.cq.get_results(0) == []
    assert [r.request_context for r in drain(b.cq, 1)] == [7]


def _wait_queued(side: Side) -> None:
    """Wait until the side's CQ has a completion queued, without removing it: an arm ANY is
    satisfied at once by a completion that arrived since the last callback (digest 3.2)."""
    side.cq.arm(CqNotify.ANY)
    assert side.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS


@pytest.mark.rule("RESULT-EMPTY")
@pytest.mark.digest("1.3")
def test_empty_cq_returns_no_results(pair: Pair) -> None:
    """digest 1.3: NdkGetCqResults(Ex) returns 0 on an empty CQ: a fresh connection has no
    completion, and neither has a CQ whose completions were all removed."""
    a, b = pair
    for cq in (a.cq, b.cq):
        assert cq.get_results(8) == []
        assert cq.get_results_ex(8) == []
    _exchange(a, b, 2)
    drain(a.cq, 2)
    drain(b.cq, 2)
    for cq in (a.cq, b.cq):
        assert cq.get_results(8) == []
        assert cq.get_results_ex(8) == []


@pytest.mark.rule("RESULT-SILENT-SUCCESS")
@pytest.mark.digest("2.5")
def test_silent_success_gives_no_initiator_completion(pair: Pair) -> None:
    """digest 2.5: NDK_OP_FLAG_SILENT_SUCCESS: a successful request produces no completion at
    the initiator; the receiver's completion is unaffected.  The next ordinary send completes
    as usual (and alone)."""
    a, b = pair
    post_receive(b, 0, 64, 1)
    post_receive(b, 4096, 64, 2)
    post_send(a, pattern(20), 10, flags=OpFlag.SILENT_SUCCESS)
    post_send(a, pattern(20, 2), 11, offset=4096)
    received = drain(b.cq, 2)
    assert [(r.request_context, r.status) for r in received] == [(1, Status.SUCCESS),
                                                                  (2, Status.SUCCESS)]
    assert [r.request_context for r in drain(a.cq, 1)] == [11]


@pytest.mark.rule("RESULT-SEPARATE-CQS")
@pytest.mark.digest("1.7")
def test_results_go_to_the_queue_cq(open_adapter: OpenAdapter) -> None:
    """digest 1.2, 1.7 (NdkCreateQp pReceiveCq / pInitiatorCq): receive completions go to the
    receive CQ, initiator completions (send, write) to the initiator CQ, and nowhere else."""
    client = open_adapter(address=CLIENT)
    server = open_adapter(address=SERVER)
    a, b = connected_pair(client, server, separate_cqs=True)
    post_receive(b, 0, 64, 1)
    post_send(a, pattern(16), 2)
    assert a.qp.write([a.mr.sge(0, 16)], b.mr.address + 4096, b.mr.remote_token,
                      request_context=3) == Status.SUCCESS
    assert [(r.request_context, r.type) for r in drain(a.initiator_cq, 2)] == [
        (2, OpType.SEND), (3, OpType.WRITE)]
    assert [(r.request_context, r.type) for r in drain(b.receive_cq, 1)] == [
        (1, OpType.RECEIVE)]
    assert a.receive_cq.get_results_ex(4) == []
    assert b.initiator_cq.get_results_ex(4) == []


# --- ARM: notifications over real traffic -----------------------------------------------------


@pytest.mark.rule("ARM-ONCE-PER-ARM")
@pytest.mark.digest("3.2")
def test_one_notification_for_several_receives(pair: Pair) -> None:
    """digest 3.2: the notification callback is called once per arm: three sends arriving
    after one NDK_CQ_NOTIFY_ANY arm give exactly one notification, with STATUS_SUCCESS."""
    a, b = pair
    b.cq.arm(CqNotify.ANY)
    _exchange(a, b, 3)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert len(drain(b.cq, 3)) == 3
    no_notification(b.cq)
    assert b.cq.notifications == 1


@pytest.mark.rule("ARM-ANY-INITIATOR")
@pytest.mark.digest("3.2")
def test_any_arm_fired_by_send_completion(pair: Pair) -> None:
    """digest 3.2: NDK_CQ_NOTIFY_ANY is satisfied by the next completion, including an
    initiator's own send completion; the receiver's unarmed CQ gets no notification."""
    a, b = pair
    a.cq.arm(CqNotify.ANY)
    _exchange(a, b, 1)
    assert a.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert [r.type for r in drain(a.cq, 1)] == [OpType.SEND]
    assert len(drain(b.cq, 1)) == 1
    no_notification(b.cq)
    assert b.cq.notifications == 0


@pytest.mark.rule("ARM-REARM")
@pytest.mark.digest("3.2")
def test_rearm_after_callback_gives_next_notification(pair: Pair) -> None:
    """digest 3.2: the provider clears the arm before the callback; an arm made after it is
    satisfied by the next completion: one notification per arm, two arms, two notifications."""
    a, b = pair
    b.cq.arm(CqNotify.ANY)
    _exchange(a, b, 1)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    drain(b.cq, 1)
    b.cq.arm(CqNotify.ANY)
    _exchange(a, b, 1, first_context=2)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert [r.request_context for r in drain(b.cq, 1)] == [102]
    no_notification(b.cq)
    assert b.cq.notifications == 2


@pytest.mark.rule("ARM-ARRIVED-SINCE-CALLBACK")
@pytest.mark.digest("3.2")
def test_arm_fires_at_once_for_completion_since_last_callback(pair: Pair) -> None:
    """digest 3.2: when at least one completion arrived since the last callback, an arm must
    be satisfied immediately: the first send is notified, a second one arrives unarmed (no
    notification), and the next arm fires at once without new traffic."""
    a, b = pair
    b.cq.arm(CqNotify.ANY)
    _exchange(a, b, 1)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    _exchange(a, b, 1, first_context=2)
    drain(a.cq, 2)
    no_notification(b.cq)
    b.cq.arm(CqNotify.ANY)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert b.cq.notifications == 2
    assert [r.request_context for r in drain(b.cq, 2)] == [101, 102]


@pytest.mark.rule("ARM-PRESENT-BEFORE-FIRST-ARM")
@pytest.mark.digest("3.2")
def test_first_arm_fires_for_queued_completions(pair: Pair) -> None:
    """digest 3.2: completions that arrived before any arm give no notification ("only after
    an arm"); the first arm is then satisfied at once, once."""
    a, b = pair
    _exchange(a, b, 2)
    drain(a.cq, 2)
    no_notification(b.cq)
    b.cq.arm(CqNotify.ANY)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert len(drain(b.cq, 2)) == 2
    no_notification(b.cq)
    assert b.cq.notifications == 1


@pytest.mark.rule("ARM-SOLICITED-PLAIN-SEND")
@pytest.mark.digest("3.2")
def test_solicited_arm_ignores_plain_send(pair: Pair) -> None:
    """digest 3.2, 1.7: NDK_CQ_NOTIFY_SOLICITED is satisfied by the arrival of a send with
    NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT; a plain successful send does not satisfy it, though
    its completion is in the CQ."""
    a, b = pair
    b.cq.arm(CqNotify.SOLICITED)
    _exchange(a, b, 1)
    (received,) = drain(b.cq, 1)
    assert received.status == Status.SUCCESS
    no_notification(b.cq)
    assert b.cq.notifications == 0


@pytest.mark.rule("ARM-SOLICITED-SEND")
@pytest.mark.digest("3.2")
def test_solicited_arm_fired_by_solicited_send(pair: Pair) -> None:
    """digest 3.2, 1.7: a send with NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT satisfies the peer's
    NDK_CQ_NOTIFY_SOLICITED arm: one notification, STATUS_SUCCESS, and the receive completed
    SUCCESS with the bytes."""
    a, b = pair
    b.cq.arm(CqNotify.SOLICITED)
    _exchange(a, b, 1, flags=OpFlag.SEND_AND_SOLICIT_EVENT)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    (received,) = drain(b.cq, 1)
    assert (received.status, received.bytes_transferred) == (Status.SUCCESS, 32)
    assert bytes(b.buffer[512:544]) == pattern(32, 1)
    no_notification(b.cq)
    assert b.cq.notifications == 1


@pytest.mark.rule("ARM-SOLICITED-AFTER-PLAIN")
@pytest.mark.digest("3.2")
def test_solicited_arm_waits_for_the_solicited_send(pair: Pair) -> None:
    """digest 3.2: under a SOLICITED arm a plain send arrives silently; the solicited send
    after it gives the one notification; both completions are queued in order."""
    a, b = pair
    b.cq.arm(CqNotify.SOLICITED)
    _exchange(a, b, 1)
    drain(a.cq, 1)
    no_notification(b.cq)
    _exchange(a, b, 1, first_context=2, flags=OpFlag.SEND_AND_SOLICIT_EVENT)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert [r.request_context for r in drain(b.cq, 2)] == [101, 102]
    assert b.cq.notifications == 1


@pytest.mark.rule("ARM-SOLICITED-SENDER-CQ")
@pytest.mark.digest("3.2")
def test_solicited_arm_not_fired_by_own_solicited_send(pair: Pair) -> None:
    """digest 3.2: SOLICITED is the *arrival* of a solicited send: the sender's own successful
    send completion does not satisfy a SOLICITED arm on the sender's CQ (the peer's does)."""
    a, b = pair
    a.cq.arm(CqNotify.SOLICITED)
    b.cq.arm(CqNotify.SOLICITED)
    _exchange(a, b, 1, flags=OpFlag.SEND_AND_SOLICIT_EVENT)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    (sent,) = drain(a.cq, 1)
    assert (sent.type, sent.status) == (OpType.SEND, Status.SUCCESS)
    no_notification(a.cq)
    assert a.cq.notifications == 0


@pytest.mark.rule("ARM-MERGE-ANY")
@pytest.mark.digest("3.2")
@pytest.mark.parametrize("first, second", [(CqNotify.SOLICITED, CqNotify.ANY),
                                           (CqNotify.ANY, CqNotify.SOLICITED)],
                         ids=["solicited+any", "any+solicited"])
def test_any_and_solicited_merge_to_any(pair: Pair, first: CqNotify, second: CqNotify) -> None:
    """digest 3.2: re-arming before the arm is satisfied gives ANY if either arm is ANY: a
    plain (unsolicited) send then fires exactly one notification."""
    a, b = pair
    b.cq.arm(first)
    b.cq.arm(second)
    _exchange(a, b, 1)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    drain(b.cq, 1)
    no_notification(b.cq)
    assert b.cq.notifications == 1


@pytest.mark.rule("ARM-MERGE-SOLICITED")
@pytest.mark.digest("3.2")
@pytest.mark.parametrize("first, second", [(CqNotify.ERRORS, CqNotify.SOLICITED),
                                           (CqNotify.SOLICITED, CqNotify.ERRORS)],
                         ids=["errors+solicited", "solicited+errors"])
def test_errors_and_solicited_merge_to_solicited(pair: Pair, first: CqNotify,
                                                 second: CqNotify) -> None:
    """digest 3.2: ERRORS with SOLICITED (no ANY) gives SOLICITED: a plain send does not fire
    it, a solicited send then does, once."""
    a, b = pair
    b.cq.arm(first)
    b.cq.arm(second)
    _exchange(a, b, 1)
    drain(a.cq, 1)
    no_notification(b.cq)
    _exchange(a, b, 1, first_context=2, flags=OpFlag.SEND_AND_SOLICIT_EVENT)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert len(drain(b.cq, 2)) == 2
    assert b.cq.notifications == 1


@pytest.mark.rule("ARM-MERGE-ERRORS")
@pytest.mark.digest("3.2")
def test_errors_and_errors_stay_errors(pair: Pair) -> None:
    """digest 3.2: ERRORS + ERRORS stays ERRORS: neither a plain nor a solicited successful
    send satisfies it."""
    a, b = pair
    b.cq.arm(CqNotify.ERRORS)
    b.cq.arm(CqNotify.ERRORS)
    _exchange(a, b, 1)
    _exchange(a, b, 1, first_context=2, flags=OpFlag.SEND_AND_SOLICIT_EVENT)
    assert len(drain(b.cq, 2)) == 2
    no_notification(b.cq)
    assert b.cq.notifications == 0


@pytest.mark.rule("ARM-ERRORS-NOT-BY-SUCCESS")
@pytest.mark.digest("3.2")
def test_errors_arm_ignores_successful_traffic(pair: Pair) -> None:
    """digest 3.2, 1.3: NDK_CQ_NOTIFY_ERRORS names CQ errors (overrun, catastrophic failure):
    successful sends, receives, writes and reads on both CQs do not satisfy it."""
    a, b = pair
    a.cq.arm(CqNotify.ERRORS)
    b.cq.arm(CqNotify.ERRORS)
    _exchange(a, b, 2, flags=OpFlag.SEND_AND_SOLICIT_EVENT)
    assert a.qp.write([a.mr.sge(0, 8)], b.mr.address + 32768, b.mr.remote_token,
                      request_context=7) == Status.SUCCESS
    assert a.qp.read([a.mr.sge(0, 8)], b.mr.address + 32768, b.mr.remote_token,
                     request_context=8) == Status.SUCCESS
    assert all(r.status == Status.SUCCESS for r in drain(a.cq, 4))
    assert all(r.status == Status.SUCCESS for r in drain(b.cq, 2))
    no_notification(a.cq, b.cq)
    assert a.cq.notifications == b.cq.notifications == 0


@pytest.mark.rule("ARM-CALLBACKS-SERIALIZED")
@pytest.mark.digest("3.2")
def test_callbacks_delivered_one_at_a_time(open_adapter: OpenAdapter) -> None:
    """digest 3.2: the provider serializes callbacks (a new one is deferred until the previous
    returned).  With docs/semantics.md PROGRESS (progress="manual") one engine step runs one
    callback: a send that satisfies the arms of both CQs queues two notifications, and each
    step delivers exactly one of them."""
    a, b = loopback_pair(open_adapter, progress="manual")
    adapter = a.adapter
    a.cq.arm(CqNotify.ANY)
    b.cq.arm(CqNotify.ANY)
    post_receive(b, 0, 64, 1)
    post_send(a, pattern(8), 2)
    assert adapter.step(1) == 1  # the transfer: both completions queued
    assert adapter.pending_steps == 2  # one notification per CQ
    assert adapter.step(1) == 1
    assert a.cq.notifications + b.cq.notifications == 1
    assert adapter.step(1) == 1
    assert (a.cq.notifications, b.cq.notifications) == (1, 1)
    assert a.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert adapter.pending_steps == 0
    assert [r.request_context for r in drain(a.cq, 1)] == [2]
    assert [r.request_context for r in drain(b.cq, 1)] == [1]


# --- MODERATION: NdkControlCqInterruptModeration over real traffic ---------------------------


def _moderated_pair(pair: Pair, interval: int, count: int) -> tuple[Side, Side]:
    a, b = pair
    _requires_flag(b.adapter, AdapterFlag.CQ_INTERRUPT_MODERATION_SUPPORTED, "moderation")
    assert b.cq.control_cq_interrupt_moderation(interval, count) == Status.SUCCESS
    b.cq.arm(CqNotify.ANY)
    return a, b


@pytest.mark.rule("MODERATION-COUNT")
@pytest.mark.digest("1.3")
@pytest.mark.parametrize("interval", [60_000_000, MAXULONG], ids=["interval-60s", "maxulong"])
def test_count_controls_the_notification(pair: Pair, interval: int) -> None:
    """digest 1.3: with a ModerationCount within the CQ depth the count controls: an armed CQ
    is not notified for the first two of three completions, and is notified once the third
    arrives.  Interval MAXULONG: the count alone controls; a 60 s interval cannot expire
    within the scenario."""
    a, b = _moderated_pair(pair, interval, 3)
    _exchange(a, b, 2)
    drain(a.cq, 2)
    no_notification(b.cq)
    _exchange(a, b, 1, first_context=3)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert [r.request_context for r in drain(b.cq, 3)] == [101, 102, 103]
    no_notification(b.cq)
    assert b.cq.notifications == 1


@pytest.mark.rule("MODERATION-COUNT-RESTARTS")
@pytest.mark.digest("1.3")
def test_count_restarts_after_a_notification(pair: Pair) -> None:
    """digest 1.3, 3.2: the count is counted again after each notification: count 2 (interval
    MAXULONG) notifies after two completions, and after a re-arm only after two more."""
    a, b = _moderated_pair(pair, MAXULONG, 2)
    _exchange(a, b, 2)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    drain(b.cq, 2)
    b.cq.arm(CqNotify.ANY)
    _exchange(a, b, 1, first_context=3)
    drain(a.cq, 3)
    no_notification(b.cq)
    _exchange(a, b, 1, first_context=4)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert [r.request_context for r in drain(b.cq, 2)] == [103, 104]
    assert b.cq.notifications == 2


@pytest.mark.rule("MODERATION-OFF")
@pytest.mark.digest("1.3")
def test_interval_zero_means_no_moderation(pair: Pair) -> None:
    """digest 1.3: ModerationInterval 0 = no moderation, whatever the count: the first
    completion notifies the armed CQ."""
    a, b = _moderated_pair(pair, 0, 3)
    _exchange(a, b, 1)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert len(drain(b.cq, 1)) == 1
    assert b.cq.notifications == 1


@pytest.mark.rule("MODERATION-INTERVAL")
@pytest.mark.digest("1.3")
@pytest.mark.parametrize("count", [MAXULONG, 65], ids=["count-maxulong", "count-above-depth"])
def test_interval_controls_when_count_cannot(pair: Pair, count: int) -> None:
    """digest 1.3: ModerationCount MAXULONG or above the CQ depth (64) leaves the interval in
    control: one completion, which never reaches such a count, is still notified once the
    100 ms interval has passed; exactly once."""
    a, b = _moderated_pair(pair, 100_000, count)
    _exchange(a, b, 1)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert len(drain(b.cq, 1)) == 1
    no_notification(b.cq)
    assert b.cq.notifications == 1


@pytest.mark.rule("MODERATION-LATEST-SETTING")
@pytest.mark.digest("1.3")
def test_new_setting_takes_effect_for_a_held_notification(pair: Pair) -> None:
    """digest 1.3: "the latest setting must take effect as soon as possible": a notification
    held back by count 3 (interval MAXULONG, no timer) is delivered once moderation is turned
    off (interval 0), without further traffic."""
    a, b = _moderated_pair(pair, MAXULONG, 3)
    _exchange(a, b, 1)
    drain(a.cq, 1)
    no_notification(b.cq)
    assert b.cq.control_cq_interrupt_moderation(0, 0) == Status.SUCCESS
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert [r.request_context for r in drain(b.cq, 1)] == [101]
    assert b.cq.notifications == 1


# --- RESIZE: NdkResizeCq on a CQ that holds real completions ---------------------------------


def _resizable_link(open_adapter: OpenAdapter, depth: int) -> tuple[Side, Side]:
    client = open_adapter(address=CLIENT)
    server = open_adapter(address=SERVER)
    _requires_flag(server, AdapterFlag.CQ_RESIZE_SUPPORTED, "resize")
    return connect_sides(Side(client), Side(server, cq_depth=depth))


@pytest.mark.rule("RESIZE-UP-KEEPS-COMPLETIONS")
@pytest.mark.digest("1.3")
def test_resize_up_keeps_completions(open_adapter: OpenAdapter) -> None:
    """digest 1.3 (NdkResizeCq): growing a CQ of depth 4 that holds three receive completions
    loses none of them; eight more then arrive without an overrun (no ERRORS notification),
    and all eleven drain in order with their bytes."""
    a, b = _resizable_link(open_adapter, 4)
    b.cq.arm(CqNotify.ERRORS)
    _exchange(a, b, 3)
    drain(a.cq, 3)
    assert b.cq.resize_cq(16).wait(timeout=TIMEOUT) == Status.SUCCESS
    _exchange(a, b, 8, first_context=4)
    results = drain(b.cq, 11)
    assert [r.request_context for r in results] == list(range(101, 112))
    assert all(r.status == Status.SUCCESS and r.bytes_transferred == 32 for r in results)
    no_notification(b.cq)
    assert b.cq.notifications == 0


@pytest.mark.rule("RESIZE-BELOW-HELD")
@pytest.mark.digest("4.2")
@pytest.mark.reference("RESIZE")
def test_resize_below_held_completions_fails(open_adapter: OpenAdapter) -> None:
    """digest 4.2 (ND2 CQ::Resize), docs/semantics.md RESIZE: a new depth below the entries
    the CQ holds -> STATUS_BUFFER_OVERFLOW (inline: no completion); the CQ keeps its depth
    (4): the held three completions and a fourth fit without an overrun."""
    a, b = _resizable_link(open_adapter, 4)
    b.cq.arm(CqNotify.ERRORS)
    _exchange(a, b, 3)
    drain(a.cq, 3)  # the sends completed: their receives are held at b
    call = b.cq.resize_cq(2)
    assert call.status == Status.BUFFER_OVERFLOW
    assert call.wait(timeout=TIMEOUT) == Status.BUFFER_OVERFLOW
    assert call.completions == 0
    _exchange(a, b, 1, first_context=4)
    assert [r.request_context for r in drain(b.cq, 4)] == [101, 102, 103, 104]
    no_notification(b.cq)


@pytest.mark.rule("RESIZE-DEEPER-BACKLOG")
@pytest.mark.digest("1.3")
def test_deeper_cq_holds_a_deeper_backlog(open_adapter: OpenAdapter) -> None:
    """digest 1.3: after a successful resize from 4 to 32, a backlog of 20 undrained receive
    completions fits: no overrun notification on an ERRORS arm, and all 20 drain in order."""
    a, b = _resizable_link(open_adapter, 4)
    call = b.cq.resize_cq(32)
    assert call.wait(timeout=TIMEOUT) == Status.SUCCESS
    b.cq.arm(CqNotify.ERRORS)
    _exchange(a, b, 20)
    assert all(r.status == Status.SUCCESS for r in drain(a.cq, 20))
    assert [r.request_context for r in drain(b.cq, 20)] == list(range(101, 121))
    no_notification(b.cq)
    assert b.cq.notifications == 0


@pytest.mark.rule("RESIZE-DOWN-TO-HELD")
@pytest.mark.digest("1.3")
def test_resize_down_to_held_count_then_overrun(open_adapter: OpenAdapter) -> None:
    """digest 1.3, 4.2: shrinking a CQ to exactly the entries it holds succeeds (not below
    them), and the new depth is in force: the next completion overruns it, reported as
    STATUS_BUFFER_OVERFLOW on an ERRORS arm (docs/semantics.md CQ-ERROR-ARM)."""
    a, b = _resizable_link(open_adapter, 8)
    _exchange(a, b, 3)
    drain(a.cq, 3)
    assert b.cq.resize_cq(3).wait(timeout=TIMEOUT) == Status.SUCCESS
    b.cq.arm(CqNotify.ERRORS)
    no_notification(b.cq)
    _exchange(a, b, 1, first_context=4)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.BUFFER_OVERFLOW
    assert b.cq.get_results_ex(8) == []
