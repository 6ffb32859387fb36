"""The user-mode ND SPI's view of NDK completions: one scenario per row of the ND_RESULT status
table, the seed's ten rows (digest 4.1, 4.2; core/include/ndk/nd_result.hpp and nd_status.hpp;
docs/semantics.md "The ND equivalent of a completion status", ND-RESULT-V1-ROWS).  ND_FAILURE,
a status outside the other nine rows, comes on soft:tcp alone, where knob link_end="held" lets a
request meet a stream the peer ended (docs/semantics.md LINK-END); elsewhere its scenario skips,
and the mapping is also checked in tests/unit/test_nd_status.cpp and
tests/binding/test_status_and_constants.py.

Each scenario produces its row's condition on a connected pair (``ndk.scenario.completion.pair``),
then checks the exact NDK_RESULT status, its ND equivalent ``nd_status`` (an ``ndk.NdStatus``,
the v2 code of the same number), the ND_RESULT an ND consumer would have read
(``ResultEx.nd_result``: the row, an ``ndk.NdResultStatus``, and BytesTransferred) and what
the connection is left as.  Every ND code equals its NTSTATUS twin (digest 4.1), so
each row also checks that ``nd_status`` has the number of ``status``.  ND_LOCAL_LENGTH and
ND_INVALIDATION_ERROR are no codes of their own, only ndspi.h's v1 aliases of ND_DATA_OVERRUN
and ND_INVALID_DEVICE_REQUEST: ``NdStatus.LOCAL_LENGTH is NdStatus.DATA_OVERRUN``.
"""

from __future__ import annotations

from typing import Union

import pytest

import ndk
from ndk import NdResultStatus, NdStatus, OpType, Status
from ndk.testing import Pair

from ndk.scenario.completion import (TIMEOUT, drain, pattern, post_receive, post_send,
                                     quiet_period, wait_until)
from ndk.scenario import Side, expect_no_completion
from ndk.scenario.stated import stated
from ndk.scenario.work_requests import expect_connection_failed, expect_result, region

BAD_TOKEN = 0xDEADBEEF  # a memory token no registration of these scenarios hands out


def _expect_nd(result: Union[ndk.Result, ndk.ResultEx], status: Status,
               nd_status: NdStatus, row: NdResultStatus | None = None,
               posted_length: int | None = None) -> None:
    """``result`` completed with ``status``, whose ND equivalent is ``nd_status``: the ND code
    of the same number (digest 4.1); a ResultEx also gives the seed's ND_RESULT, its status
    ``row`` and its BytesTransferred (a receive's count, what was posted for a Send, Read or
    Write that succeeded, else 0: docs/semantics.md ND-RESULT-BYTES)."""
    assert result.status == status
    assert result.nd_status is nd_status
    assert int(result.nd_status) == int(result.status)
    if isinstance(result, ndk.ResultEx) and row is not None:
        nd_result = result.nd_result(posted_length)
        assert nd_result.status is row
        if result.type in (OpType.RECEIVE, OpType.RECEIVE_AND_INVALIDATE):
            assert nd_result.bytes_transferred == result.bytes_transferred
        elif status == Status.SUCCESS and posted_length is not None:
            assert nd_result.bytes_transferred == posted_length
        else:
            assert nd_result.bytes_transferred == 0


def _expect_refused_inline(a: Side, b: Side, status: Status) -> None:
    """A post of ``a`` was refused inline with ``status`` (any failure: NdkSend's page lists
    "other" inline returns, digest 1.7): nothing completes, and the QP still carries a send
    (ND2: an inline failure leaves the QP usable, digest 4.2)."""
    assert status not in (Status.SUCCESS, Status.PENDING)
    expect_no_completion(a.cq, b.cq)
    post_receive(b, 0, 64, 0xB1)
    post_send(a, pattern(16, 2), 0xA3)
    expect_result(a.cq, Status.SUCCESS, OpType.SEND, 0xA3)
    expect_result(b.cq, Status.SUCCESS, OpType.RECEIVE, 0xB1)


@pytest.mark.rule("ND-RESULT-SUCCESS")
@pytest.mark.digest("4.1")
def test_success_is_nd_success(pair: Pair) -> None:
    """digest 4.1 (ND_SUCCESS = STATUS_SUCCESS), 4.2: a send into a posted receive completes
    STATUS_SUCCESS on both sides, ND_SUCCESS in NDK_RESULT_EX (sender) and in NDK_RESULT
    (receiver); the bytes arrived and the connection is still up (no disconnect event)."""
    a, b = pair
    data = pattern(100)
    post_receive(b, 0, 256, 0xB1)
    post_send(a, data, 0xA1)
    _expect_nd(expect_result(a.cq, Status.SUCCESS, OpType.SEND, 0xA1), Status.SUCCESS,
               NdStatus.SUCCESS, NdResultStatus.SUCCESS, posted_length=len(data))
    (received,) = drain(b.cq, 1, ex=False)
    _expect_nd(received, Status.SUCCESS, NdStatus.SUCCESS)
    assert (received.request_context, received.bytes_transferred) == (0xB1, len(data))
    assert bytes(b.buffer[:len(data)]) == data
    assert b.connector.wait_disconnect(timeout=quiet_period(b.connector)) is None


@pytest.mark.rule("ND-RESULT-LOCAL-LENGTH")
@pytest.mark.digest("4.1")
@pytest.mark.pair(max_initiator_request_sge=2)
def test_local_length_is_data_overrun(pair: Pair) -> None:
    """digest 4.1 (ND_LOCAL_LENGTH: v1 alias of ND_DATA_OVERRUN = STATUS_DATA_OVERRUN), 4.2
    (DATA_OVERRUN: the SGEs reference more than the adapter can send): a send with one SGE more
    than the QP's MaxInitiatorRequestSge.  A provider that completes it reports
    STATUS_DATA_OVERRUN, nd_status ND_LOCAL_LENGTH, and the connection ends (ND2 QP error
    model: later requests complete CANCELLED); the soft provider does with knob
    sge_check="completion" (docs/semantics.md ND-LOCAL-LENGTH).  A provider that refuses it
    inline (NdkSend documents SUCCESS, CONNECTION_INVALID and "other" inline returns, digest
    1.7; soft's STATUS_DATA_OVERRUN there is its POST-CHECKS choice) leaves no completion and a
    usable QP, and the scenario skips: no result carries the row."""
    a, b = pair
    try:
        a.adapter.knobs.sge_check = "completion"
    except ndk.KnobsNotSupported:
        pass  # the provider's own choice decides which branch below runs
    a.buffer[:48] = pattern(48)
    status = a.qp.send([a.mr.sge(16 * i, 16) for i in range(3)], request_context=0xA1)
    if status == Status.SUCCESS:  # reported through the completion
        result = expect_result(a.cq, Status.DATA_OVERRUN, OpType.SEND, 0xA1)
        _expect_nd(result, Status.DATA_OVERRUN, NdStatus.LOCAL_LENGTH,
                   NdResultStatus.LOCAL_LENGTH)
        assert result.nd_status.name == "DATA_OVERRUN"  # the alias names no code of its own
        post_receive(a, 4096, 64, 0xA2)
        _expect_nd(expect_result(a.cq, Status.CANCELLED, OpType.RECEIVE, 0xA2),
                   Status.CANCELLED, NdStatus.CANCELED)
        return
    _expect_refused_inline(a, b, status)
    pytest.skip(f"the provider refuses too many SGEs inline with {Status(status)} "
                "(docs/semantics.md POST-CHECKS, ND-LOCAL-LENGTH): no completion carries "
                "ND_LOCAL_LENGTH, so no result has its nd_status")


@pytest.mark.rule("ND-RESULT-BUFFER-OVERFLOW")
@pytest.mark.digest("4.2")
@pytest.mark.reference("DATA-STATUS")
def test_buffer_overflow_is_nd_buffer_overflow(pair: Pair) -> None:
    """digest 4.2 (ND2 BUFFER_OVERFLOW: an incoming send exceeded the receive buffer), 4.1
    (ND_BUFFER_OVERFLOW = STATUS_BUFFER_OVERFLOW), docs/semantics.md DATA-STATUS: a 64-byte
    send into a 16-byte receive completes the receive STATUS_BUFFER_OVERFLOW, nd_status
    ND_BUFFER_OVERFLOW (the sender's send: REMOTE_RESOURCES, ND_REMOTE_ERROR); the connection
    ends (QP-ERROR: the receiver gets a disconnect event, later posts complete CANCELLED)."""
    a, b = pair
    post_receive(b, 0, 16, 0xB1)
    post_send(a, pattern(64), 0xA1, offset=1024)
    _expect_nd(expect_result(b.cq, Status.BUFFER_OVERFLOW, OpType.RECEIVE, 0xB1),
               Status.BUFFER_OVERFLOW, NdStatus.BUFFER_OVERFLOW, NdResultStatus.BUFFER_OVERFLOW)
    _expect_nd(expect_result(a.cq, Status.REMOTE_RESOURCES, OpType.SEND, 0xA1),
               Status.REMOTE_RESOURCES, NdStatus.REMOTE_ERROR, NdResultStatus.REMOTE_ERROR)
    expect_connection_failed(a, b, region(a.pd), region(b.pd))


@pytest.mark.rule("ND-RESULT-ACCESS-VIOLATION")
@pytest.mark.digest("4.2")
@pytest.mark.reference("DATA-STATUS")
def test_access_violation_is_nd_access_violation(pair: Pair) -> None:
    """digest 4.2 (ND2 ACCESS_VIOLATION: invalid registered memory), 4.1
    (ND_ACCESS_VIOLATION = STATUS_ACCESS_VIOLATION), docs/semantics.md DATA-STATUS: an RDMA
    write naming a remote token the peer never handed out completes STATUS_ACCESS_VIOLATION,
    nd_status ND_ACCESS_VIOLATION; the peer's memory is untouched and the connection ends
    (QP-ERROR)."""
    a, b = pair
    a.buffer[:32] = pattern(32)
    assert a.qp.write([a.mr.sge(0, 32)], b.mr.address, BAD_TOKEN,
                      request_context=0xA1) == Status.SUCCESS
    _expect_nd(expect_result(a.cq, Status.ACCESS_VIOLATION, OpType.WRITE, 0xA1),
               Status.ACCESS_VIOLATION, NdStatus.ACCESS_VIOLATION,
               NdResultStatus.ACCESS_VIOLATION)
    assert bytes(b.buffer[:32]) == bytes(32)
    expect_connection_failed(a, b, region(a.pd), region(b.pd))


@pytest.mark.rule("ND-RESULT-CANCELED")
@pytest.mark.digest("4.1")
def test_canceled_is_status_cancelled(pair: Pair) -> None:
    """digest 4.1 (ND_CANCELED = STATUS_CANCELLED, one L in ND), 1.8 (a disconnect flushes
    the local QP), 3.6: the receives queued on a QP whose connector disconnects complete
    STATUS_CANCELLED in posting order, nd_status ND_CANCELED; the peer gets one disconnect
    event, and the disconnected QP's initiator posts are CONNECTION_INVALID inline (digest
    1.7) with no completion."""
    a, b = pair
    post_receive(a, 0, 64, 0xA1)
    post_receive(a, 64, 64, 0xA2)
    assert a.connector.disconnect().wait(timeout=TIMEOUT) == Status.SUCCESS
    results = drain(a.cq, 2)
    assert [(r.request_context, r.type) for r in results] == \
        [(0xA1, OpType.RECEIVE), (0xA2, OpType.RECEIVE)]
    for result in results:
        _expect_nd(result, Status.CANCELLED, NdStatus.CANCELED, NdResultStatus.CANCELED)
    assert b.connector.wait_disconnect(timeout=TIMEOUT) is not None
    assert a.qp.send([a.mr.sge(0, 16)], request_context=0xA3) == Status.CONNECTION_INVALID
    expect_no_completion(a.cq)


@pytest.mark.rule("ND-RESULT-TIMEOUT")
@pytest.mark.digest("4.1")
@pytest.mark.reference("DATA-STATUS")
@pytest.mark.pair(client_knobs={"rnr_timeout_ms": 20})
def test_timeout_is_nd_timeout_row(pair: Pair) -> None:
    """digest 4.1 (ND_TIMEOUT = STATUS_TIMEOUT, a success code; ND_IO_TIMEOUT =
    STATUS_IO_TIMEOUT), 4.2 (ND2 IO_TIMEOUT), the seed (ND_RESULT: ND_TIMEOUT, "the request
    timed out due to a connection failure or failure of the remote endpoint"),
    docs/semantics.md ND-TIMEOUT and DATA-STATUS: a send with no receive at the peer within
    rnr_timeout_ms (soft knob, 20 ms; a provider without the knob skips) completes
    STATUS_IO_TIMEOUT; its v2 code (nd_status) is ND_IO_TIMEOUT and its ND_RESULT the table's
    ND_TIMEOUT row with no bytes; the connection ends (QP-ERROR) and no byte arrived."""
    a, b = pair
    post_send(a, pattern(32), 0xA1)
    result = expect_result(a.cq, Status.IO_TIMEOUT, OpType.SEND, 0xA1)
    _expect_nd(result, Status.IO_TIMEOUT, NdStatus.IO_TIMEOUT, NdResultStatus.TIMEOUT,
               posted_length=32)
    expect_connection_failed(a, b, region(a.pd), region(b.pd))
    assert bytes(b.buffer[:32]) == bytes(32)


@pytest.mark.rule("ND-RESULT-REMOTE-ERROR")
@pytest.mark.digest("4.1")
@pytest.mark.reference("DATA-STATUS")
def test_remote_error_is_remote_resources(pair: Pair) -> None:
    """digest 4.1 (ND_REMOTE_ERROR has the number of STATUS_REMOTE_RESOURCES), 1.7 (NdkRead:
    STATUS_REMOTE_RESOURCES for a read beyond the remote memory), 4.2 (ND2 QP::Read:
    REMOTE_ERROR beyond remote memory): a read running 64 bytes past the peer's registration
    completes STATUS_REMOTE_RESOURCES, nd_status ND_REMOTE_ERROR; the sink is untouched and the
    connection ends.  That the status comes through the completion (digest 1.7 lists it among
    NdkRead's inline returns too) is docs/semantics.md DATA-STATUS, and the end of the
    connection QP-ERROR: reference choices."""
    a, b = pair
    b.buffer[:] = bytes([0x5A]) * len(b.buffer)
    end = b.mr.address + b.mr.length
    assert a.qp.read([a.mr.sge(0, 128)], end - 64, b.mr.remote_token,
                     request_context=0xA1) == Status.SUCCESS
    _expect_nd(expect_result(a.cq, Status.REMOTE_RESOURCES, OpType.READ, 0xA1),
               Status.REMOTE_RESOURCES, NdStatus.REMOTE_ERROR, NdResultStatus.REMOTE_ERROR,
               posted_length=128)
    assert bytes(a.buffer[:128]) == bytes(128)
    expect_connection_failed(a, b, region(a.pd), region(b.pd))


@pytest.mark.rule("ND-RESULT-INVALIDATION-ERROR")
@pytest.mark.digest("4.1")
@pytest.mark.reference("DATA-STATUS")
def test_invalidation_error_is_invalid_device_request(pair: Pair) -> None:
    """digest 4.1 (ND_INVALIDATION_ERROR: v1 alias of ND_INVALID_DEVICE_REQUEST =
    STATUS_INVALID_DEVICE_REQUEST), 4.2 (ND2 INVALID_DEVICE_REQUEST, e.g. invalidating an
    unbound MW), docs/semantics.md DATA-STATUS: NdkInvalidate of a window never bound is
    accepted inline and completes STATUS_INVALID_DEVICE_REQUEST, nd_status
    ND_INVALIDATION_ERROR (the member ND_INVALID_DEVICE_REQUEST); the connection ends
    (QP-ERROR)."""
    a, b = pair
    mw = b.pd.create_mw().get(timeout=TIMEOUT)
    assert b.qp.invalidate(mw, request_context=0xB1) == Status.SUCCESS
    result = expect_result(b.cq, Status.INVALID_DEVICE_REQUEST, OpType.INVALIDATE, 0xB1)
    _expect_nd(result, Status.INVALID_DEVICE_REQUEST, NdStatus.INVALIDATION_ERROR,
               NdResultStatus.INVALIDATION_ERROR)
    assert result.nd_status.name == "INVALID_DEVICE_REQUEST"  # the alias names no code
    expect_connection_failed(b, a, region(b.pd), region(a.pd))


UNDOCUMENTED_FLAG = 0x40000000  # no NDK_OP_FLAG_* has this bit (digest 2.5)


@pytest.mark.rule("ND-RESULT-INVALID-REQUEST")
@pytest.mark.digest("2.5")
@pytest.mark.reference("ND-RESULT-V1-ROWS")
def test_invalid_request_row(pair: Pair) -> None:
    """digest 2.5 (the request flags NDK defines), the seed (ND_RESULT: ND_INVALID_REQUEST, "the
    request was improperly formatted"), docs/semantics.md ND-RESULT-V1-ROWS (an invalid-parameter
    completion status is that row): a send carrying a flag bit no NDK_OP_FLAG_* defines.  A
    provider that finds it when the request executes completes it with an invalid-parameter
    status, ND_RESULT ND_INVALID_REQUEST with no bytes, and the connection ends (QP-ERROR); the
    soft provider does with knob flag_check="completion" (docs/semantics.md
    ND-INVALID-REQUEST).  One that refuses it inline (soft's default: STATUS_INVALID_PARAMETER,
    POST-CHECKS) leaves no completion and a usable QP, and the scenario skips: no result
    carries the row."""
    a, b = pair
    try:
        a.adapter.knobs.flag_check = "completion"
    except ndk.KnobsNotSupported:
        pass  # the provider's own choice decides which branch below runs
    a.buffer[:16] = pattern(16)
    status = a.qp.send([a.mr.sge(0, 16)], flags=UNDOCUMENTED_FLAG, request_context=0xA1)
    if status == Status.SUCCESS:
        (result,) = drain(a.cq, 1)
        assert (result.request_context, result.type) == (0xA1, OpType.SEND)
        assert result.nd_result(16) == ndk.NdResult(NdResultStatus.INVALID_REQUEST, 0), \
            result.status
        expect_connection_failed(a, b, region(a.pd), region(b.pd))
        return
    _expect_refused_inline(a, b, status)
    pytest.skip(f"the provider refuses an undocumented request flag inline with "
                f"{Status(status)} (docs/semantics.md POST-CHECKS): no completion carries "
                "ND_INVALID_REQUEST")



@pytest.mark.rule("ND-RESULT-FAILURE")
@pytest.mark.digest("3.6")
@pytest.mark.reference("LINK-END")
def test_failure_row(pair: Pair) -> None:
    """the seed (ND_RESULT: ND_FAILURE, "the endpoint experienced an error while processing
    this request"), docs/semantics.md ND-RESULT-V1-ROWS (a status outside the other nine rows
    is that row): a send posted after the peer's connector closed (over soft:tcp a TCP reset,
    TCP-CLOSE) and before this side acted on the stream's end meets the ended stream.  Soft
    completes it STATUS_CONNECTION_ABORTED (docs/semantics.md LINK-END: knob link_end="held"
    leaves the end unacted on until a request meets it), nd_status ND_CONNECTION_ABORTED, its
    ND_RESULT ND_FAILURE with no bytes, and the connection ends as after any failed request
    (QP-ERROR: a later post completes CANCELLED).  Stated (digest 3.6: an abort is a
    failure): the send completes, and not with STATUS_SUCCESS.  Where no request can meet an
    ended link (inproc has none; over shm the end comes as a message behind the request; a
    provider without the knob) the scenario skips: no result carries the row."""
    a, b = pair
    try:
        a.adapter.knobs.link_end = "held"
    except ndk.KnobsNotSupported:
        pytest.skip("the provider has no knob link_end (docs/semantics.md LINK-END): no "
                    "request can be made to meet an ended link, so no result carries "
                    "ND_FAILURE")
    except ndk.KnobValueError as refused:
        pytest.skip(f"{refused}: no result carries ND_FAILURE")
    assert b.connector.close().wait(timeout=TIMEOUT) == Status.SUCCESS
    wait_until(lambda: bool(a.adapter.knobs.link_ends_held == 1),
               what="the stream's end taken")
    post_send(a, pattern(32), 0xA1)
    with stated("digest 3.6"):
        (result,) = drain(a.cq, 1)
        assert (result.request_context, result.type) == (0xA1, OpType.SEND)
        assert result.status != Status.SUCCESS
    _expect_nd(result, Status.CONNECTION_ABORTED, NdStatus.CONNECTION_ABORTED,
               NdResultStatus.FAILURE, posted_length=32)
    post_receive(a, 64, 64, 0xA2)
    _expect_nd(expect_result(a.cq, Status.CANCELLED, OpType.RECEIVE, 0xA2),
               Status.CANCELLED, NdStatus.CANCELED)
