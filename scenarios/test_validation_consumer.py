"""The validation layer catches a consumer that breaks the contract (docs/validation.md).

A consumer rule is broken on purpose here, through the public API where it allows the misuse
and through ``ndk.testing.raw`` where the C++ consumer API would refuse it (a call on a closed
object, a NULL private-data buffer, concurrent calls on one CQ).  The soft provider's ``hold``
knob (docs/knobs.md) keeps one provider call in flight, so "concurrent" is deterministic.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

import ndk
from ndk import AdapterFlag, CqNotify, Status
from ndk.testing import OPTION, OpenAdapter, Pair, skip

from ndk.scenario.completion import (TIMEOUT, connected_pair, drain, pattern, post_receive, post_send,
                                     register, wait_until)
from ndk.scenario import reported, set_adapter_flags

pytestmark = pytest.mark.usefixtures("needs_validation")


@pytest.fixture
def needs_validation() -> None:
    if not ndk.validate_default():
        skip(OPTION, "the validation layer is off (--ndk-no-validate)")



def consumer_record(adapter: ndk.Adapter, rule: str) -> ndk.Violation:
    records = reported(adapter, rule)
    assert records, f"no {rule} violation"
    assert records[0].side == "consumer"
    assert records[0].section == next(r.section for r in ndk.rules() if r.id == rule)
    return records[0]


def held_call(adapter: ndk.Adapter, function: str,
              action: Callable[[], object]) -> Callable[[], None]:
    """Run ``action`` on a thread while the provider holds its call of ``function``; return
    once the call is held, with a join() that releases and waits for it."""
    adapter.knobs.hold = function
    thread = threading.Thread(target=action)
    thread.start()
    wait_until(lambda: int(adapter.knobs.held) == 1, TIMEOUT, f"{function} held")

    def join() -> None:
        adapter.knobs.release = 1
        thread.join(TIMEOUT)
        assert not thread.is_alive()
    return join


@pytest.mark.rule("VALIDATE-POST-QUEUE-DEPTH")
@pytest.mark.digest("3.3")
@pytest.mark.expect_violation("POST-QUEUE-DEPTH")
@pytest.mark.pair(receive_queue_depth=2)
def test_post_past_queue_depth(pair: Pair) -> None:
    """digest 3.3 (the consumer posts no more requests than the queue holds), docs/validation.md
    POST-QUEUE-DEPTH: a receive queue of depth 2 holds two receives; the third post is the
    consumer's violation (whatever the provider answers)."""
    a, b = pair
    post_receive(b, 0, 64, 1)
    post_receive(b, 64, 64, 2)
    assert not reported(b.adapter, "POST-QUEUE-DEPTH")
    b.qp.receive([b.mr.sge(128, 64)], request_context=3)
    assert consumer_record(b.adapter, "POST-QUEUE-DEPTH").call == "NdkReceive"


@pytest.mark.rule("VALIDATE-SGE-TOKEN")
@pytest.mark.digest("2.4")
@pytest.mark.expect_violation("SGE-TOKEN")
def test_sge_with_another_pds_token(pair: Pair) -> None:
    """digest 2.4: an SGE's token is a local token of an MR of the queue's PD.  An MR of a
    second PD on the same adapter is the consumer's violation."""
    a, b = pair
    other_mr, _ = register(b.adapter.create_pd().get(timeout=TIMEOUT))
    b.qp.receive([other_mr.sge(0, 64)], request_context=1)
    assert "another PD" in consumer_record(b.adapter, "SGE-TOKEN").message


@pytest.mark.rule("VALIDATE-CQ-RESIZE-UNSUPPORTED")
@pytest.mark.digest("1.3")
@pytest.mark.expect_violation("CQ-RESIZE-UNSUPPORTED")
def test_resize_without_the_adapter_flag(open_adapter: OpenAdapter) -> None:
    """digest 1.3: the consumer resizes only with NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED."""
    adapter = open_adapter()
    set_adapter_flags(adapter, remove=AdapterFlag.CQ_RESIZE_SUPPORTED)
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    cq.resize_cq(16).wait(timeout=TIMEOUT)
    assert consumer_record(adapter, "CQ-RESIZE-UNSUPPORTED").call == "NdkResizeCq"


@pytest.mark.rule("VALIDATE-CONNDATA-AFTER-ESTABLISH")
@pytest.mark.digest("1.8")
@pytest.mark.expect_violation("CONNDATA-AFTER-ESTABLISH")
def test_connection_data_after_accept(open_adapter: OpenAdapter) -> None:
    """digest 1.8: the consumer does not call GetConnectionData after Accept."""
    a, b = connected_pair(open_adapter(address="192.0.2.61"), open_adapter(address="192.0.2.62"))
    b.connector.get_connection_data()
    assert consumer_record(b.adapter, "CONNDATA-AFTER-ESTABLISH").call == \
        "NdkGetConnectionData"


@pytest.mark.rule("VALIDATE-PRIVATE-DATA-NULL")
@pytest.mark.digest("1.8")
@pytest.mark.expect_violation("PRIVATE-DATA-NULL")
def test_null_private_data_with_a_length(open_adapter: OpenAdapter) -> None:
    """digest 1.8: "pPrivateData == NULL and *len > 0: the consumer must never do this"."""
    a, b = connected_pair(open_adapter(address="192.0.2.63"), open_adapter(address="192.0.2.64"))
    connector = a.adapter.create_connector().get(timeout=TIMEOUT)
    ndk.testing.raw.get_connection_data_null(connector, 16)
    assert consumer_record(a.adapter, "PRIVATE-DATA-NULL").call == "NdkGetConnectionData"


@pytest.mark.rule("VALIDATE-OBJECT-CLOSED-CALL")
@pytest.mark.digest("3.1")
@pytest.mark.expect_violation("OBJECT-CLOSED-CALL")
def test_call_on_a_closed_cq(open_adapter: OpenAdapter) -> None:
    """digest 3.1: the consumer does not use an object after closing it.  The layer reports
    the call and does not forward it (the provider's object is gone)."""
    adapter = open_adapter()
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    assert cq.close().wait(timeout=TIMEOUT) == Status.SUCCESS
    ndk.testing.raw.arm_cq(cq, CqNotify.ANY)
    assert ndk.testing.raw.get_cq_results(cq, 4) == []
    record = consumer_record(adapter, "OBJECT-CLOSED-CALL")
    assert (record.object, record.call) == ("CQ#1", "NdkArmCq")


@pytest.mark.rule("VALIDATE-CQ-CONCURRENT-CALL")
@pytest.mark.digest("3.2")
@pytest.mark.expect_violation("CQ-CONCURRENT-CALL")
def test_arm_while_a_poll_is_in_flight(open_adapter: OpenAdapter) -> None:
    """digest 3.2: GetCqResults and ArmCq on one CQ never overlap.  The provider holds a
    poll; an arm on the same CQ meanwhile is the consumer's violation."""
    adapter = open_adapter()
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    join = held_call(adapter, "NdkGetCqResults",
                     lambda: ndk.testing.raw.get_cq_results(cq, 4))
    ndk.testing.raw.arm_cq(cq, CqNotify.ANY)
    join()
    assert consumer_record(adapter, "CQ-CONCURRENT-CALL").call == "NdkArmCq"


@pytest.mark.rule("VALIDATE-POST-CONCURRENT")
@pytest.mark.digest("3.3")
@pytest.mark.expect_violation("POST-CONCURRENT")
def test_two_sends_on_one_queue_at_once(pair: Pair) -> None:
    """digest 3.3: posts to one queue are serialized by the consumer.  The provider holds a
    send; a second send on the same QP meanwhile is the violation (a receive would not be)."""
    a, b = pair
    for n in (1, 2, 3):
        post_receive(b, 64 * n, 64, n)
    join = held_call(a.adapter, "NdkSend", lambda: post_send(a, pattern(8), 1))
    post_receive(a, 0, 64, 9)
    assert not reported(a.adapter, "POST-CONCURRENT")
    post_send(a, pattern(8, 2), 2, offset=64)
    join()
    drain(b.cq, 2)
    assert consumer_record(a.adapter, "POST-CONCURRENT").call == "NdkSend"


@pytest.mark.rule("VALIDATE-CQ-RESULTS-EX-VERSION")
@pytest.mark.digest("2.3")
@pytest.mark.expect_violation("CQ-RESULTS-EX-VERSION")
def test_results_ex_on_an_adapter_opened_at_1_1(ndk_provider: str) -> None:
    """digest 2.3, 2.7 (NDK_RESULT_EX, and so NdkGetCqResultsEx, begin at NDKPI 1.2): a
    consumer that calls NdkGetCqResultsEx on an adapter opened at 1.1 is told (knob
    provider_version="1.1": the provider's highest minor of major 1 is 1; a provider without
    the knob skips).  The call itself still returns what the CQ holds: nothing here."""
    try:
        adapter = ndk.open_adapter(ndk_provider, version=(1, 0), provider_version="1.1")
    except ndk.KnobsNotSupported as missing:
        skip(OPTION, f"the provider cannot be held to NDKPI 1.1: {missing}")
    with adapter:
        assert adapter.version == (1, 1)
        cq = adapter.create_cq(8).get(timeout=TIMEOUT)
        assert cq.get_results_ex(1) == []
        assert consumer_record(adapter, "CQ-RESULTS-EX-VERSION").call == "NdkGetCqResultsEx"
        assert cq.get_results(1) == []
        assert len(reported(adapter, "CQ-RESULTS-EX-VERSION")) == 1  # NdkGetCqResults is 1.0
