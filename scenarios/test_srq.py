"""NDK_SRQ: NdkCreateSrq, NdkModifySrq and arming, NdkSrqReceive (digest 1.2, 1.6, 4.2)."""

from __future__ import annotations

import pytest

import ndk
from ndk import Status
from ndk.testing import OpenAdapter, requires

from ndk.scenario import (CREATE_MODES, quiet_period, TIMEOUT, expect_create_failed,
                          expect_created, expect_request, post_receives, shrink_limits)
from ndk.scenario.counts import expect_count_enforced, reported_count
from ndk.scenario.stated import stated


@pytest.fixture
def srq_adapter(open_adapter: OpenAdapter) -> ndk.Adapter:
    """An adapter with SRQ support (skips when MaxSrqDepth is 0)."""
    adapter = open_adapter()
    requires(adapter, max_srq_depth=1)
    return adapter


@pytest.fixture
def srq_pd(srq_adapter: ndk.Adapter) -> ndk.Pd:
    return srq_adapter.create_pd().get(timeout=TIMEOUT)


@pytest.fixture
def srq_mr(srq_pd: ndk.Pd) -> ndk.Mr:
    region = srq_pd.create_mr().get(timeout=TIMEOUT)
    memory = bytearray(64 * 1024)
    assert region.register(memory, flags=ndk.MrFlag.ALLOW_LOCAL_WRITE).wait(
        timeout=TIMEOUT) == Status.SUCCESS
    return region


# --- create ------------------------------------------------------------------------------


@pytest.mark.rule("SRQ-CREATE")
@pytest.mark.digest("1.2")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_create_srq(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.2 (NdkCreateSrq), 1.0: SUCCESS inline or PENDING then exactly one completion
    with SUCCESS and the SRQ (object type Srq 10)."""
    adapter = open_adapter(create_mode=mode)
    requires(adapter, max_srq_depth=1)
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    srq = expect_created(pd.create_srq(8, max_receive_request_sge=2, notify_threshold=4), mode)
    assert srq.object_type == ndk.ObjectType.SRQ


@pytest.mark.rule("SRQ-CREATE-DEPTH")
@pytest.mark.digest("1.2")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_create_srq_depth_above_max(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.2: SrqDepth > MaxSrqDepth -> INVALID_PARAMETER, inline or through the
    create's completion (digest 1.0); no SRQ, and a create at MaxSrqDepth then succeeds.
    MaxSrqDepth is 16 where the provider has the knob, else the adapter's own."""
    adapter = open_adapter(create_mode=mode)
    requires(adapter, max_srq_depth=1)
    shrink_limits(adapter, max_srq_depth=16)
    limit = adapter.query_info().max_srq_depth
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    expect_create_failed(pd.create_srq(limit + 1), Status.INVALID_PARAMETER)
    expect_created(pd.create_srq(limit), mode)


@pytest.mark.rule("SRQ-CREATE-SGE")
@pytest.mark.digest("1.2")
def test_create_srq_too_many_sges(srq_adapter: ndk.Adapter, srq_pd: ndk.Pd) -> None:
    """digest 1.2: MaxReceiveRequestSge above the adapter's maximum -> INVALID_PARAMETER."""
    limit = srq_adapter.query_info().max_receive_request_sge
    expect_create_failed(srq_pd.create_srq(8, max_receive_request_sge=limit + 1),
                         Status.INVALID_PARAMETER)
    expect_created(srq_pd.create_srq(8, max_receive_request_sge=limit), "i/a")


@pytest.mark.rule("SRQ-CREATE-ZERO-DEPTH")
@pytest.mark.digest("1.2")
@pytest.mark.reference("ZERO-DEPTH")
def test_create_srq_zero_depth(srq_pd: ndk.Pd) -> None:
    """digest 1.2 is silent on SrqDepth 0. docs/semantics.md ZERO-DEPTH (a reference choice):
    INVALID_PARAMETER; a create with depth 1 then succeeds.  Stated (digest 1.2): that
    create; the choice: the refusal of 0 and its status."""
    expect_create_failed(srq_pd.create_srq(0), Status.INVALID_PARAMETER)
    with stated("digest 1.2"):
        expect_created(srq_pd.create_srq(1), "i/a")


@pytest.mark.rule("SRQ-CREATE-THRESHOLD")
@pytest.mark.digest("1.6")
@pytest.mark.reference("SRQ-THRESHOLD")
def test_create_srq_threshold_above_depth(srq_pd: ndk.Pd) -> None:
    """digest 1.6 (a threshold arms the SRQ for "fewer than threshold queued") is silent on a
    threshold above the depth. docs/semantics.md SRQ-THRESHOLD (a reference choice):
    notify_threshold > srq_depth -> INVALID_PARAMETER; threshold == depth is valid.  Stated
    (digest 1.6): the create with threshold == depth; the choice: the refusal above it."""
    expect_create_failed(srq_pd.create_srq(4, notify_threshold=5), Status.INVALID_PARAMETER)
    with stated("digest 1.6"):
        expect_created(srq_pd.create_srq(4, notify_threshold=4), "i/a")


@pytest.mark.rule("SRQ-CREATE-AFFINITY-INVALID")
@pytest.mark.digest("1.2")
@pytest.mark.reference("AFFINITY")
@pytest.mark.parametrize("affinity", [(1, 1), 0], ids=["group1", "mask0"])
def test_create_srq_invalid_affinity(srq_pd: ndk.Pd, affinity: tuple[int, int] | int) -> None:
    """digest 1.2 (an optional GROUP_AFFINITY, only a preference) is silent on an invalid
    one. docs/semantics.md AFFINITY (a reference choice): INVALID_PARAMETER; a valid affinity
    then succeeds."""
    expect_create_failed(srq_pd.create_srq(8, affinity=affinity), Status.INVALID_PARAMETER)
    expect_created(srq_pd.create_srq(8, affinity=1), "i/a")


@pytest.mark.rule("SRQ-CREATE-UNSUPPORTED")
@pytest.mark.digest("2.1")
def test_create_srq_when_unsupported(open_adapter: OpenAdapter) -> None:
    """digest 2.1: MaxSrqDepth 0 = no SRQ support; digest 1.2: SrqDepth > MaxSrqDepth ->
    INVALID_PARAMETER, so every create fails. An adapter without SRQs is judged as it is;
    one with them is opened again with the knob max_srq_depth=0."""
    adapter = open_adapter()
    if adapter.query_info().max_srq_depth != 0:
        adapter = open_adapter(max_srq_depth=0)
    assert adapter.query_info().max_srq_depth == 0
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    expect_create_failed(pd.create_srq(1), Status.INVALID_PARAMETER)


@pytest.mark.rule("SRQ-CREATE-RESOURCES")
@pytest.mark.digest("3.7")
@pytest.mark.reference("CAPS")
def test_create_srq_beyond_max_srq_count(open_adapter: OpenAdapter) -> None:
    """digest 3.7 (NDIS_NDK_CAPABILITIES MaxSrqCount: the SRQs the miniport holds) and 1.2
    (NdkCreateSrq: INSUFFICIENT_RESOURCES, i/a). docs/semantics.md CAPS (a reference choice):
    MaxSrqCount creates succeed (stated); the next fails and gives no object (stated), with
    INSUFFICIENT_RESOURCES; after a close, a create succeeds again."""
    adapter = open_adapter()
    requires(adapter, max_srq_depth=1)
    count = reported_count(adapter, "max_srq_count")
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    expect_count_enforced(count, lambda: pd.create_srq(1))


# --- receive -----------------------------------------------------------------------------


@pytest.mark.rule("SRQ-RECEIVE-QUEUE-FULL")
@pytest.mark.digest("4.2")
@pytest.mark.reference("QUEUE-FULL")
@pytest.mark.expect_violation("POST-QUEUE-DEPTH")
def test_srq_receive_beyond_depth(srq_pd: ndk.Pd, srq_mr: ndk.Mr) -> None:
    """digest 1.6 documents only SUCCESS and "other" for NdkSrqReceive. docs/semantics.md
    QUEUE-FULL (a reference choice, from ND2 SRQ::Receive of digest 4.2): a receive on a full
    SRQ -> NO_MORE_ENTRIES. The SRQ stays usable: after growing it the receive succeeds.
    Stated (digest 1.6): the NdkModifySrq and then the receive succeed; the choice: the
    refusal and its status."""
    srq = srq_pd.create_srq(2).get(timeout=TIMEOUT)
    post_receives(srq, srq_mr, [1, 2])
    assert srq.srq_receive([srq_mr.sge(512, 64)], request_context=3) == Status.NO_MORE_ENTRIES
    with stated("digest 1.6"):
        expect_request(srq.modify_srq(srq_depth=3), "i/a")
        assert srq.srq_receive([srq_mr.sge(512, 64)], request_context=3) == Status.SUCCESS


@pytest.mark.rule("SRQ-RECEIVE-TOO-MANY-SGE")
@pytest.mark.digest("4.2")
@pytest.mark.reference("QUEUE-SGE")
def test_srq_receive_too_many_sges(srq_pd: ndk.Pd, srq_mr: ndk.Mr) -> None:
    """digest 1.6 documents only SUCCESS and "other" for NdkSrqReceive. docs/semantics.md
    QUEUE-SGE (a reference choice, from ND2 SRQ::Receive of digest 4.2: too many SGEs):
    DATA_OVERRUN. A receive within the SRQ's SGE limit then succeeds.  Stated (digest 1.6):
    that receive; the choice: the refusal and its status."""
    srq = srq_pd.create_srq(4, max_receive_request_sge=2).get(timeout=TIMEOUT)
    sgl = [srq_mr.sge(i * 64, 64) for i in range(3)]
    assert srq.srq_receive(sgl, request_context=1) == Status.DATA_OVERRUN
    with stated("digest 1.6"):
        assert srq.srq_receive(sgl[:2], request_context=2) == Status.SUCCESS


# --- modify and arming -------------------------------------------------------------------


@pytest.mark.rule("SRQ-MODIFY")
@pytest.mark.digest("1.6")
@pytest.mark.parametrize("mode", CREATE_MODES)
@pytest.mark.expect_violation("POST-QUEUE-DEPTH")
def test_modify_srq_depth(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.6 (NdkModifySrq): SUCCESS inline or PENDING then one completion; the new
    depth is in force afterwards."""
    adapter = open_adapter()
    requires(adapter, max_srq_depth=4)
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    mr = pd.create_mr().get(timeout=TIMEOUT)
    assert mr.register(bytearray(4096), flags=ndk.MrFlag.ALLOW_LOCAL_WRITE).wait(
        timeout=TIMEOUT) == Status.SUCCESS
    srq = pd.create_srq(1).get(timeout=TIMEOUT)
    adapter.knobs.request_mode = mode
    expect_request(srq.modify_srq(srq_depth=4), mode)
    post_receives(srq, mr, [1, 2, 3, 4])
    assert srq.srq_receive([mr.sge(0, 64)], request_context=5) == Status.NO_MORE_ENTRIES


@pytest.mark.rule("SRQ-MODIFY-DEPTH")
@pytest.mark.digest("1.6")
def test_modify_srq_above_max(open_adapter: OpenAdapter) -> None:
    """digest 1.6: SrqDepth > MaxSrqDepth -> INVALID_PARAMETER (the failure NdkModifySrq's
    page names a condition for), inline or through the completion; the SRQ keeps its depth
    and its receives: with two queued before the refusal, two more still fit in a depth of 4
    (the SrqDepth given at creation, digest 1.2), and a depth within MaxSrqDepth is then
    accepted.
    MaxSrqDepth is 16 where the provider has the knob, else the adapter's own."""
    adapter = open_adapter()
    requires(adapter, max_srq_depth=4)
    shrink_limits(adapter, max_srq_depth=16)
    limit = adapter.query_info().max_srq_depth
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    mr = pd.create_mr().get(timeout=TIMEOUT)
    assert mr.register(bytearray(4096), flags=ndk.MrFlag.ALLOW_LOCAL_WRITE).wait(
        timeout=TIMEOUT) == Status.SUCCESS
    srq = pd.create_srq(4).get(timeout=TIMEOUT)
    post_receives(srq, mr, [1, 2])
    expect_request(srq.modify_srq(srq_depth=limit + 1), "i/a", Status.INVALID_PARAMETER)
    post_receives(srq, mr, [3, 4])
    expect_request(srq.modify_srq(srq_depth=min(limit, 16)), "i/a")


@pytest.mark.rule("SRQ-MODIFY-BELOW-QUEUED")
@pytest.mark.digest("4.2")
@pytest.mark.reference("SRQ-DEPTH")
@pytest.mark.expect_violation("POST-QUEUE-DEPTH")
def test_modify_srq_below_queued(srq_pd: ndk.Pd, srq_mr: ndk.Mr) -> None:
    """digest 1.6 is silent on a depth below the receives queued. docs/semantics.md SRQ-DEPTH
    (a reference choice, from ND2 SRQ::Modify of digest 4.2): BUFFER_OVERFLOW. The queued
    receives and depth are kept (a full SRQ: QUEUE-FULL)."""
    srq = srq_pd.create_srq(4).get(timeout=TIMEOUT)
    post_receives(srq, srq_mr, [1, 2, 3])
    expect_request(srq.modify_srq(srq_depth=2), "i/a", Status.BUFFER_OVERFLOW)
    assert srq.srq_receive([srq_mr.sge(0, 64)], request_context=4) == Status.SUCCESS
    assert srq.srq_receive([srq_mr.sge(0, 64)], request_context=5) == Status.NO_MORE_ENTRIES


@pytest.mark.rule("SRQ-ARM-IMMEDIATE")
@pytest.mark.digest("1.6")
def test_arm_below_threshold_fires_at_once(srq_pd: ndk.Pd, srq_mr: ndk.Mr) -> None:
    """digest 1.6: if the count of queued receives is already below the threshold when
    ModifySrq arms the SRQ, the notification is generated immediately, with STATUS_SUCCESS,
    exactly once; then the SRQ is disarmed."""
    srq = srq_pd.create_srq(8).get(timeout=TIMEOUT)
    post_receives(srq, srq_mr, [1])
    expect_request(srq.modify_srq(notify_threshold=4), "i/a")
    assert srq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert srq.wait_notification(timeout=quiet_period(srq)) is None
    assert srq.notifications == 1


@pytest.mark.rule("SRQ-ARM-DISARMED")
@pytest.mark.digest("1.6")
def test_disarmed_after_notification(srq_pd: ndk.Pd, srq_mr: ndk.Mr) -> None:
    """digest 1.6: after it fires, the SRQ is disarmed until ModifySrq is called again with a
    non-zero threshold; a modify with threshold 0 (keep) does not re-arm, a new non-zero
    threshold does."""
    srq = srq_pd.create_srq(8).get(timeout=TIMEOUT)
    expect_request(srq.modify_srq(notify_threshold=2), "i/a")
    assert srq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    expect_request(srq.modify_srq(srq_depth=6), "i/a")
    assert srq.wait_notification(timeout=quiet_period(srq)) is None
    assert srq.notifications == 1
    expect_request(srq.modify_srq(notify_threshold=2), "i/a")
    assert srq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert srq.notifications == 2


@pytest.mark.rule("SRQ-ARM-NOT-BELOW")
@pytest.mark.digest("1.6")
def test_arm_at_or_above_threshold_waits(srq_pd: ndk.Pd, srq_mr: ndk.Mr) -> None:
    """digest 1.6: the callback fires when the count falls *below* the threshold; with as
    many receives queued as the threshold, arming does not notify."""
    srq = srq_pd.create_srq(8).get(timeout=TIMEOUT)
    post_receives(srq, srq_mr, [1, 2, 3])
    expect_request(srq.modify_srq(notify_threshold=3), "i/a")
    assert srq.wait_notification(timeout=quiet_period(srq)) is None
    assert srq.notifications == 0
