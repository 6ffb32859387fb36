"""NDK_QP: NdkCreateQp, NdkCreateQpWithSrq, NdkReceive, NdkSend, NdkFlush (digest 1.2, 1.7,
3.3, 3.4, 4.2)."""

from __future__ import annotations

import pytest

import ndk
from ndk import CqNotify, OpType, Status
from ndk.testing import OpenAdapter, requires

from ndk.scenario import (CREATE_MODES, quiet_period, TIMEOUT, drain, expect_create_failed,
                          expect_created, post_receives, shrink_limits)
from ndk.scenario.counts import expect_count_enforced, reported_count
from ndk.scenario.stated import stated

# the five CreateQp sizes and the NDK_ADAPTER_INFO limit each is checked against (digest 1.2)
QP_LIMITS = {
    "receive_queue_depth": "max_receive_queue_depth",
    "initiator_queue_depth": "max_initiator_queue_depth",
    "max_receive_request_sge": "max_receive_request_sge",
    "max_initiator_request_sge": "max_initiator_request_sge",
    "inline_data_size": "max_inline_data_size",
}
QP_WITH_SRQ_LIMITS = {k: v for k, v in QP_LIMITS.items()
                      if k in ("initiator_queue_depth", "max_initiator_request_sge",
                               "inline_data_size")}
SMALL_LIMITS = dict(max_receive_queue_depth=8, max_initiator_queue_depth=8,
                    max_receive_request_sge=2, max_initiator_request_sge=2,
                    max_inline_data_size=64)


# --- create ------------------------------------------------------------------------------


@pytest.mark.rule("QP-CREATE")
@pytest.mark.digest("1.2")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_create_qp(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.2 (NdkCreateQp), 1.0: SUCCESS inline or PENDING then exactly one completion
    with SUCCESS and the QP (object type Qp 2)."""
    adapter = open_adapter(create_mode=mode)
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    cq = adapter.create_cq(16).get(timeout=TIMEOUT)
    qp = expect_created(pd.create_qp(cq, cq, qp_context=0x1234), mode)
    assert qp.object_type == ndk.ObjectType.QP


@pytest.mark.rule("QP-CREATE-WITH-SRQ")
@pytest.mark.digest("1.2")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_create_qp_with_srq(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.2 (NdkCreateQpWithSrq), 1.0: SUCCESS inline or PENDING then exactly one
    completion with SUCCESS and the QP."""
    adapter = open_adapter(create_mode=mode)
    requires(adapter, max_srq_depth=1)
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    cq = adapter.create_cq(16).get(timeout=TIMEOUT)
    srq = pd.create_srq(8).get(timeout=TIMEOUT)
    qp = expect_created(pd.create_qp_with_srq(cq, cq, srq, qp_context=7), mode)
    assert qp.object_type == ndk.ObjectType.QP


def _created_at_limits(call: ndk.Call[ndk.Qp], mode: str, own_limits: bool) -> None:
    """Every size at its limit is valid (digest 1.2): the QP is created.  At an adapter's own
    limits (a real device's, no knob shrank them) the device may lack the memory for every
    queue at its maximum at once, and INSUFFICIENT_RESOURCES, which NdkCreateQp documents (i/a,
    digest 1.2), is an answer too (seen on rxe0 in the guest)."""
    if own_limits and call.wait(timeout=TIMEOUT) == Status.INSUFFICIENT_RESOURCES:
        return
    expect_created(call, mode)


@pytest.mark.rule("QP-CREATE-LIMITS")
@pytest.mark.digest("1.2")
@pytest.mark.parametrize("size", list(QP_LIMITS))
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_create_qp_size_above_limit(open_adapter: OpenAdapter, size: str, mode: str) -> None:
    """digest 1.2: INVALID_PARAMETER when any of the five sizes exceeds its NDK_ADAPTER_INFO
    limit (MaxReceiveQueueDepth, MaxInitiatorQueueDepth, MaxReceiveRequestSge,
    MaxInitiatorRequestSge, MaxInlineDataSize); inline or through the create's completion
    (digest 1.0), with no QP either way. Every size exactly at its limit is valid.  The
    limits are SMALL_LIMITS where the provider has their knobs, else the adapter's own
    (``_created_at_limits``)."""
    adapter = open_adapter(create_mode=mode)
    own_limits = not shrink_limits(adapter, **SMALL_LIMITS)
    info = adapter.query_info()
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    cq = adapter.create_cq(16).get(timeout=TIMEOUT)
    at_limit = {arg: getattr(info, field) for arg, field in QP_LIMITS.items()}
    over = dict(at_limit, **{size: at_limit[size] + 1})
    expect_create_failed(pd.create_qp(cq, cq, **over), Status.INVALID_PARAMETER)
    _created_at_limits(pd.create_qp(cq, cq, **at_limit), mode, own_limits)


@pytest.mark.rule("QP-CREATE-WITH-SRQ-LIMITS")
@pytest.mark.digest("1.2")
@pytest.mark.parametrize("size", list(QP_WITH_SRQ_LIMITS))
def test_create_qp_with_srq_size_above_limit(open_adapter: OpenAdapter, size: str) -> None:
    """digest 1.2 (NdkCreateQpWithSrq): INVALID_PARAMETER when InitiatorQueueDepth,
    MaxInitiatorRequestSge or InlineDataSize exceeds its limit; at the limits it succeeds.
    The limits are SMALL_LIMITS where the provider has their knobs, else the adapter's own."""
    adapter = open_adapter()
    requires(adapter, max_srq_depth=1)
    own_limits = not shrink_limits(adapter, **SMALL_LIMITS)
    info = adapter.query_info()
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    cq = adapter.create_cq(16).get(timeout=TIMEOUT)
    srq = pd.create_srq(4).get(timeout=TIMEOUT)
    at_limit = {arg: getattr(info, field) for arg, field in QP_WITH_SRQ_LIMITS.items()}
    over = dict(at_limit, **{size: at_limit[size] + 1})
    expect_create_failed(pd.create_qp_with_srq(cq, cq, srq, **over), Status.INVALID_PARAMETER)
    _created_at_limits(pd.create_qp_with_srq(cq, cq, srq, **at_limit), "i/a", own_limits)


@pytest.mark.rule("QP-CREATE-ZERO-DEPTH")
@pytest.mark.digest("1.2")
@pytest.mark.reference("QP-DEPTH-ZERO")
@pytest.mark.expect_violation("POST-QUEUE-DEPTH")
def test_create_qp_zero_depths(pd: ndk.Pd, cq: ndk.Cq, mr: ndk.Mr) -> None:
    """digest 1.2 is silent on a queue depth of 0. docs/semantics.md QP-DEPTH-ZERO (a
    reference choice): allowed, a send-only or receive-only QP; such a queue accepts no
    request: a receive -> NO_MORE_ENTRIES (QUEUE-FULL)."""
    qp = expect_created(pd.create_qp(cq, cq, receive_queue_depth=0, initiator_queue_depth=0),
                        "inline")
    assert qp.receive([mr.sge(0, 64)], request_context=1) == Status.NO_MORE_ENTRIES


@pytest.mark.rule("QP-CREATE-FOREIGN-CQ")
@pytest.mark.digest("1.2")
@pytest.mark.reference("QP-OBJECTS")
@pytest.mark.parametrize("which", ["receive", "initiator"])
def test_create_qp_with_cq_of_other_adapter(open_adapter: OpenAdapter, which: str) -> None:
    """digest 1.2 / 3.1 (a CQ is the antecedent of the QPs on it, under the same adapter).
    The digest does not say what a provider answers a CQ of another adapter;
    docs/semantics.md QP-OBJECTS (a reference choice): INVALID_PARAMETER (ND2
    INVALID_PARAMETER_2/3). Nothing was created: the CQ can still be closed at once.  Stated
    (digest 1.2): a QP on the adapter's own CQ then creates; the choice: the refusal, its
    status, and the close inline."""
    adapter, other = open_adapter(), open_adapter()
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    ours = adapter.create_cq(8).get(timeout=TIMEOUT)
    theirs = other.create_cq(8).get(timeout=TIMEOUT)
    cqs = (theirs, ours) if which == "receive" else (ours, theirs)
    expect_create_failed(pd.create_qp(*cqs), Status.INVALID_PARAMETER)
    close = theirs.close()
    assert close.status == Status.SUCCESS  # no QP holds it
    with stated("digest 1.2"):
        expect_created(pd.create_qp(ours, ours), "i/a")


@pytest.mark.rule("QP-CREATE-CLOSED-CQ")
@pytest.mark.digest("3.1")
def test_create_qp_with_closed_cq(adapter: ndk.Adapter, pd: ndk.Pd) -> None:
    """digest 3.1 (the consumer will not use an object after closing it).
    docs/semantics.md, "The consumer's side": CLOSED-ARGUMENT (a closed CQ passed to create_qp
    raises ndk.ObjectClosedError; nothing reaches the provider, whose CQ is gone).  A QP on an
    open CQ then creates."""
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    assert cq.close().status == Status.SUCCESS
    with pytest.raises(ndk.ObjectClosedError, match="CQ is closed"):
        pd.create_qp(cq, cq)
    other = adapter.create_cq(8).get(timeout=TIMEOUT)
    expect_created(pd.create_qp(other, other), "i/a")


@pytest.mark.rule("QP-CREATE-WITH-SRQ-FOREIGN-SRQ")
@pytest.mark.digest("1.2")
@pytest.mark.reference("QP-OBJECTS")
def test_create_qp_with_srq_of_other_pd(open_adapter: OpenAdapter) -> None:
    """digest 1.2 (the SRQ is a child of a PD; the QP joins the PD it is created on).
    The digest does not say what a provider answers an SRQ of another PD; docs/semantics.md
    QP-OBJECTS (a reference choice): INVALID_PARAMETER.  Stated (digest 1.2): the QP on the
    SRQ's own PD then creates; the choice: the refusal and its status."""
    adapter = open_adapter()
    requires(adapter, max_srq_depth=1)
    pd, other_pd = (adapter.create_pd().get(timeout=TIMEOUT) for _ in range(2))
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    srq = other_pd.create_srq(4).get(timeout=TIMEOUT)
    expect_create_failed(pd.create_qp_with_srq(cq, cq, srq), Status.INVALID_PARAMETER)
    with stated("digest 1.2"):
        expect_created(other_pd.create_qp_with_srq(cq, cq, srq), "i/a")


@pytest.mark.rule("QP-CREATE-RESOURCES")
@pytest.mark.digest("3.7")
@pytest.mark.reference("CAPS")
def test_create_qp_beyond_max_qp_count(open_adapter: OpenAdapter) -> None:
    """digest 3.7 (NDIS_NDK_CAPABILITIES MaxQpCount: the QPs the miniport holds) and 1.2
    (NdkCreateQp: INSUFFICIENT_RESOURCES, i/a). docs/semantics.md CAPS (a reference choice):
    MaxQpCount creates succeed (stated); the next fails and gives no object (stated), with
    INSUFFICIENT_RESOURCES; after a close, a create succeeds again."""
    adapter = open_adapter()
    count = reported_count(adapter, "max_qp_count")
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    cq = adapter.create_cq(2).get(timeout=TIMEOUT)
    expect_count_enforced(count, lambda: pd.create_qp(cq, cq, receive_queue_depth=1,
                                                      initiator_queue_depth=1))


@pytest.mark.rule("QP-CREATE-WITH-SRQ-RESOURCES")
@pytest.mark.digest("3.7")
@pytest.mark.reference("CAPS")
def test_create_qp_with_srq_beyond_max_qp_count(open_adapter: OpenAdapter) -> None:
    """digest 3.7 (NDIS_NDK_CAPABILITIES MaxQpCount: the QPs the miniport holds) and 1.2
    (NdkCreateQpWithSrq: INSUFFICIENT_RESOURCES, i/a). docs/semantics.md CAPS (a reference
    choice): MaxQpCount creates succeed (stated); the next fails and gives no object (stated),
    with INSUFFICIENT_RESOURCES; after a close, a create succeeds again."""
    adapter = open_adapter()
    requires(adapter, max_srq_depth=1)
    count = reported_count(adapter, "max_qp_count")
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    cq = adapter.create_cq(2).get(timeout=TIMEOUT)
    srq = pd.create_srq(1).get(timeout=TIMEOUT)
    expect_count_enforced(count, lambda: pd.create_qp_with_srq(cq, cq, srq,
                                                               initiator_queue_depth=1))


# --- posting -----------------------------------------------------------------------------


@pytest.mark.rule("QP-RECEIVE-QUEUE-FULL")
@pytest.mark.digest("4.2")
@pytest.mark.reference("QUEUE-FULL")
@pytest.mark.expect_violation("POST-QUEUE-DEPTH")
def test_receive_beyond_depth(pd: ndk.Pd, cq: ndk.Cq, mr: ndk.Mr) -> None:
    """digest 1.7 documents only SUCCESS and "other" for NdkReceive. docs/semantics.md
    QUEUE-FULL (a reference choice, from ND2 QP::Receive of digest 4.2): a receive on a full
    queue -> NO_MORE_ENTRIES; digest 3.4: an inline failure produces no CQE.  Stated (digest
    1.7): once the flush cancelled the queued receives, a receive succeeds; the choice: the
    refusal, its status, the completions' order."""
    qp = pd.create_qp(cq, cq, receive_queue_depth=2).get(timeout=TIMEOUT)
    post_receives(qp, mr, [1, 2])
    assert qp.receive([mr.sge(0, 64)], request_context=3) == Status.NO_MORE_ENTRIES
    qp.flush()
    assert [r.request_context for r in drain(cq, 2)] == [1, 2]
    with stated("digest 1.7"):
        assert qp.receive([mr.sge(0, 64)], request_context=4) == Status.SUCCESS


@pytest.mark.rule("QP-RECEIVE-TOO-MANY-SGE")
@pytest.mark.digest("4.2")
@pytest.mark.reference("QUEUE-SGE")
def test_receive_too_many_sges(pd: ndk.Pd, cq: ndk.Cq, mr: ndk.Mr) -> None:
    """digest 1.7 documents only SUCCESS and "other" for NdkReceive. docs/semantics.md
    QUEUE-SGE (a reference choice, from ND2 QP::Receive of digest 4.2: too many SGEs):
    DATA_OVERRUN. No CQE for the failed post (digest 3.4); the QP stays usable.  Stated
    (digest 1.2, 1.7): a receive within the QP's SGE limit succeeds and the flush cancels it;
    the choice: the refusal and its status."""
    qp = pd.create_qp(cq, cq, max_receive_request_sge=2).get(timeout=TIMEOUT)
    sgl = [mr.sge(i * 64, 64) for i in range(3)]
    assert qp.receive(sgl, request_context=1) == Status.DATA_OVERRUN
    with stated("digest 1.2, 1.7"):
        assert qp.receive(sgl[:2], request_context=2) == Status.SUCCESS
        qp.flush()
        assert [r.request_context for r in drain(cq, 1)] == [2]


@pytest.mark.rule("QP-RECEIVE-WITH-SRQ")
@pytest.mark.digest("1.7")
@pytest.mark.reference("QP-SRQ-RECEIVE")
@pytest.mark.expect_violation("POST-QUEUE-DEPTH")
def test_receive_on_qp_with_srq(open_adapter: OpenAdapter, buffer: bytearray) -> None:
    """digest 1.2, 1.7 (receives of a QP created with an SRQ go to the SRQ) do not say what
    NdkReceive on such a QP returns. docs/semantics.md QP-SRQ-RECEIVE (a reference choice):
    INVALID_DEVICE_REQUEST; no CQE results."""
    adapter = open_adapter()
    requires(adapter, max_srq_depth=1)
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    mr = pd.create_mr().get(timeout=TIMEOUT)
    assert mr.register(buffer, flags=ndk.MrFlag.ALLOW_LOCAL_WRITE).wait(
        timeout=TIMEOUT) == Status.SUCCESS
    srq = pd.create_srq(4).get(timeout=TIMEOUT)
    qp = pd.create_qp_with_srq(cq, cq, srq).get(timeout=TIMEOUT)
    assert qp.receive([mr.sge(0, 64)], request_context=1) == Status.INVALID_DEVICE_REQUEST
    qp.flush()
    assert cq.get_results_ex(4) == []


@pytest.mark.rule("QP-SEND-UNCONNECTED")
@pytest.mark.digest("1.7")
def test_send_on_unconnected_qp(cq: ndk.Cq, qp: ndk.Qp, mr: ndk.Mr) -> None:
    """digest 1.7 (NdkSend: CONNECTION_INVALID, QP not connected); digest 3.4: an inline
    failure produces no CQE. docs/semantics.md: UNCONNECTED."""
    assert qp.send([mr.sge(0, 64)], request_context=1) == Status.CONNECTION_INVALID
    assert qp.send([mr.sge(0, 64)], flags=ndk.OpFlag.SILENT_SUCCESS,
                   request_context=2) == Status.CONNECTION_INVALID
    qp.flush()
    assert cq.get_results_ex(4) == []


@pytest.mark.rule("QP-FLUSH-CANCELS")
@pytest.mark.digest("1.7")
def test_flush_cancels_receives_in_order(cq: ndk.Cq, qp: ndk.Qp, mr: ndk.Mr) -> None:
    """digest 1.7 (NdkFlush: pending requests complete with STATUS_CANCELLED), 4.2 (in issue
    order per queue). docs/semantics.md: FLUSH (type RECEIVE, request_context and the QP
    context preserved)."""
    contexts = [0x10, 0x20, 0x30, 0x40]
    post_receives(qp, mr, contexts)
    qp.flush()
    results = drain(cq, len(contexts))
    assert [r.request_context for r in results] == contexts
    for result in results:
        assert result.status == Status.CANCELLED
        assert result.type == OpType.RECEIVE
        assert result.qp_context == 0x51


@pytest.mark.rule("QP-FLUSH-RECEIVE-CQ")
@pytest.mark.digest("1.7")
def test_flush_completes_on_receive_cq(adapter: ndk.Adapter, pd: ndk.Pd, mr: ndk.Mr) -> None:
    """digest 1.2, 1.7: receive requests complete on the QP's receive CQ, never on its
    initiator CQ."""
    receive_cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    initiator_cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    qp = pd.create_qp(receive_cq, initiator_cq).get(timeout=TIMEOUT)
    post_receives(qp, mr, [1, 2])
    qp.flush()
    assert [r.request_context for r in drain(receive_cq, 2)] == [1, 2]
    assert initiator_cq.get_results_ex(4) == []


@pytest.mark.rule("QP-FLUSH-USABLE")
@pytest.mark.digest("1.7")
@pytest.mark.reference("QP-FLUSH")
def test_qp_usable_after_flush(cq: ndk.Cq, qp: ndk.Qp, mr: ndk.Mr) -> None:
    """digest 1.7 documents only the cancellation of NdkFlush, not what the QP is fit for
    afterwards. docs/semantics.md QP-FLUSH (a reference choice): the QP stays usable: a new
    receive succeeds and a second flush cancels it."""
    post_receives(qp, mr, [1])
    qp.flush()
    drain(cq, 1)
    assert qp.receive([mr.sge(0, 64)], request_context=2) == Status.SUCCESS
    qp.flush()
    (result,) = drain(cq, 1)
    assert result.request_context == 2
    assert result.status == Status.CANCELLED


@pytest.mark.rule("QP-FLUSH-EMPTY")
@pytest.mark.digest("1.7")
def test_flush_with_nothing_queued(cq: ndk.Cq, qp: ndk.Qp) -> None:
    """digest 1.7: a flush with no pending request produces no completion (and no
    notification for an armed CQ)."""
    cq.arm(CqNotify.ANY)
    qp.flush()
    assert cq.wait_notification(timeout=quiet_period(cq)) is None
    assert cq.get_results_ex(4) == []
