"""NDK_CQ: NdkCreateCq, NdkResizeCq, NdkArmCq and the notification callback,
NdkGetCqResults(Ex), NdkControlCqInterruptModeration (digest 1.1, 1.3, 3.2)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

import ndk
from ndk import AdapterFlag, CqNotify, OpType, Status
from ndk.testing import OpenAdapter

from ndk.scenario import (CREATE_MODES, MAXULONG, quiet_period, TIMEOUT, drain,
                          expect_create_failed, expect_created, expect_request, poll,
                          post_receives, set_adapter_flags, shrink_limits)
from ndk.scenario.counts import expect_count_enforced, reported_count
from ndk.scenario.stated import stated


# --- create ------------------------------------------------------------------------------


@pytest.mark.rule("CQ-CREATE")
@pytest.mark.digest("1.1")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_create_cq(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.1 (NdkCreateCq) and 1.0 (async create): SUCCESS inline with no completion,
    or PENDING and exactly one completion with SUCCESS and the object."""
    adapter = open_adapter(create_mode=mode)
    cq = expect_created(adapter.create_cq(16), mode)
    assert cq.object_type == ndk.ObjectType.CQ
    assert cq.get_results_ex(4) == []


@pytest.mark.rule("CQ-CREATE-DEPTH")
@pytest.mark.digest("1.1")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_create_cq_depth_above_max(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.1: CqDepth > MaxCqDepth -> STATUS_INVALID_PARAMETER, inline or, from a
    provider that pends its creates, through the create's completion (digest 1.0: any status
    may come through it; the digest does not say this one cannot). No object either way, and
    nothing was created: a create at MaxCqDepth then succeeds.  MaxCqDepth is 16 where the
    provider has the knob, else the adapter's own."""
    adapter = open_adapter(create_mode=mode)
    shrink_limits(adapter, max_cq_depth=16)
    limit = adapter.query_info().max_cq_depth
    if limit >= MAXULONG:
        pytest.skip("MaxCqDepth is MAXULONG: no CqDepth is above it")
    expect_create_failed(adapter.create_cq(limit + 1), Status.INVALID_PARAMETER)
    expect_created(adapter.create_cq(limit), mode)


@pytest.mark.rule("CQ-CREATE-ZERO-DEPTH")
@pytest.mark.digest("1.1")
@pytest.mark.reference("ZERO-DEPTH")
def test_create_cq_zero_depth(adapter: ndk.Adapter) -> None:
    """digest 1.1 is silent on CqDepth 0. docs/semantics.md ZERO-DEPTH (a reference choice):
    INVALID_PARAMETER (inline or through the completion); a create with depth 1 then
    succeeds.  Stated (digest 1.1): that create; the choice: the refusal of 0 and its
    status."""
    expect_create_failed(adapter.create_cq(0), Status.INVALID_PARAMETER)
    with stated("digest 1.1"):
        expect_created(adapter.create_cq(1), "i/a")


@pytest.mark.rule("CQ-CREATE-AFFINITY")
@pytest.mark.digest("1.1")
@pytest.mark.parametrize("affinity", [1, (1, 0)], ids=["mask", "mask-group0"])
def test_create_cq_with_affinity(adapter: ndk.Adapter, affinity: int | tuple[int, int]) -> None:
    """digest 1.1: NdkCreateCq takes an optional GROUP_AFFINITY; CPU 0 in group 0 is valid."""
    expect_created(adapter.create_cq(16, affinity=affinity), "i/a")


def _invalid_affinities() -> list[Any]:
    cases = [pytest.param((1, 1), id="group1"), pytest.param(0, id="mask0")]
    cpus = os.cpu_count() or 1
    if cpus < 64:
        cases.append(pytest.param(1 << cpus, id="cpu-beyond-machine"))
    return cases


@pytest.mark.rule("CQ-CREATE-AFFINITY-INVALID")
@pytest.mark.digest("1.1")
@pytest.mark.reference("AFFINITY")
@pytest.mark.parametrize("affinity", _invalid_affinities())
def test_create_cq_invalid_affinity(adapter: ndk.Adapter, affinity: int | tuple[int, int]) -> None:
    """digest 1.1: the affinity is only a preference, and the digest is silent on an invalid
    one (a provider may ignore it). docs/semantics.md AFFINITY (a reference choice): group !=
    0, mask 0, or mask bits beyond the machine's CPUs -> INVALID_PARAMETER; nothing created."""
    expect_create_failed(adapter.create_cq(16, affinity=affinity), Status.INVALID_PARAMETER)
    expect_created(adapter.create_cq(16, affinity=1), "i/a")


def _usable_cpus() -> list[Any]:
    """The processors this process may run on (os.sched_getaffinity), those a GROUP_AFFINITY
    of group 0 can name (bits 0-63)."""
    return [pytest.param(cpu, id=f"cpu{cpu}") for cpu in sorted(os.sched_getaffinity(0))
            if cpu < 64]


@pytest.mark.rule("CQ-NOTIFICATION-AFFINITY")
@pytest.mark.digest("1.1")
@pytest.mark.reference("CQ-AFFINITY")
@pytest.mark.parametrize("cpu", _usable_cpus())
def test_notification_runs_on_affinity_cpu(adapter: ndk.Adapter, cpu: int) -> None:
    """digest 1.1 (NdkCreateCq's optional GROUP_AFFINITY; its page: "preferred processors that
    the consumer would choose to run the NdkCqNotificationCallback callbacks", which providers
    "should honor ... if the underlying hardware allows", while consumers "can't assume" it),
    3.2 (one callback per arm).  docs/semantics.md CQ-AFFINITY (a reference choice): a CQ
    created with the mask 1 << cpu, for each processor this process may use, has its
    notification callback run on that processor (sched_getcpu in the consumer's callback,
    ``Cq.notification_cpu``); the CQ reports the affinity it was created with (``Cq.affinity``)
    and after the callback still delivers the flushed receive, CANCELLED, and no second
    notification."""
    cq = expect_created(adapter.create_cq(16, affinity=1 << cpu), "i/a")
    assert cq.affinity == (1 << cpu, 0)
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    buffer = bytearray(4096)
    mr = pd.create_mr().get(timeout=TIMEOUT)
    assert mr.register(buffer, flags=ndk.MrFlag.ALLOW_LOCAL_WRITE).wait(timeout=TIMEOUT) \
        == Status.SUCCESS
    qp = pd.create_qp(cq, cq, qp_context=0x51, receive_queue_depth=4,
                      initiator_queue_depth=4).get(timeout=TIMEOUT)
    post_receives(qp, mr, [0xC1])
    cq.arm(CqNotify.ANY)
    qp.flush()
    with stated("digest 3.2, 1.7: one callback per arm, STATUS_SUCCESS; the flushed receive "
                "completes CANCELLED"):
        assert cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
        (result,) = drain(cq, 1)
        assert (result.status, result.request_context) == (Status.CANCELLED, 0xC1)
        assert cq.wait_notification(timeout=quiet_period(cq)) is None
        assert cq.notifications == 1
    assert cq.notification_cpu == cpu  # the choice: CQ-AFFINITY


@pytest.mark.rule("CQ-CREATE-RESOURCES")
@pytest.mark.digest("3.7")
@pytest.mark.reference("CAPS")
def test_create_cq_beyond_max_cq_count(open_adapter: OpenAdapter) -> None:
    """digest 3.7 (NDIS_NDK_CAPABILITIES MaxCqCount: the CQs the miniport holds) and 1.1
    (NdkCreateCq: INSUFFICIENT_RESOURCES, i/a). docs/semantics.md CAPS (a reference choice):
    MaxCqCount creates succeed (stated); the next fails and gives no object (stated), with
    INSUFFICIENT_RESOURCES; after a close, a create succeeds again."""
    adapter = open_adapter()
    expect_count_enforced(reported_count(adapter, "max_cq_count"), lambda: adapter.create_cq(1))


# --- resize ------------------------------------------------------------------------------


@pytest.mark.rule("CQ-RESIZE")
@pytest.mark.digest("1.3")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_resize_cq(open_adapter: OpenAdapter, mode: str, buffer: bytearray) -> None:
    """digest 1.3 (NdkResizeCq): SUCCESS inline or PENDING then one completion; the CQ keeps
    working at its new depth."""
    adapter = open_adapter()
    if not int(adapter.query_info().adapter_flags) & AdapterFlag.CQ_RESIZE_SUPPORTED:
        pytest.skip("adapter does not set NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED")
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    mr = pd.create_mr().get(timeout=TIMEOUT)
    assert mr.register(buffer, flags=ndk.MrFlag.ALLOW_LOCAL_WRITE).wait(
        timeout=TIMEOUT) == Status.SUCCESS
    cq = adapter.create_cq(2).get(timeout=TIMEOUT)
    adapter.knobs.request_mode = mode
    expect_request(cq.resize_cq(8), mode)
    qp = pd.create_qp(cq, cq, receive_queue_depth=8).get(timeout=TIMEOUT)
    post_receives(qp, mr, range(1, 6))
    qp.flush()
    assert [r.request_context for r in drain(cq, 5)] == [1, 2, 3, 4, 5]


@pytest.mark.rule("CQ-RESIZE-NOT-SUPPORTED")
@pytest.mark.digest("1.3")
@pytest.mark.reference("RESIZE")
@pytest.mark.expect_violation("CQ-RESIZE-UNSUPPORTED")
def test_resize_cq_without_flag(adapter: ndk.Adapter) -> None:
    """digest 1.3: the consumer must not resize unless NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED
    is set; it does not say what a provider answers a consumer that does. docs/semantics.md
    RESIZE (a reference choice): NOT_SUPPORTED (ND2 CQ::Resize); the CQ is unchanged and
    usable."""
    set_adapter_flags(adapter, remove=AdapterFlag.CQ_RESIZE_SUPPORTED)
    cq = adapter.create_cq(4).get(timeout=TIMEOUT)
    expect_request(cq.resize_cq(8), "i/a", Status.NOT_SUPPORTED)
    assert cq.get_results_ex(4) == []
    assert cq.is_open


def _resize_rejected(adapter: ndk.Adapter, depth: int) -> None:
    """A resize of a CQ of depth 4 to ``depth`` fails INVALID_PARAMETER, inline or through its
    completion; the CQ keeps working and a valid resize (to 16) succeeds (stated by digest
    1.3 where the refusal is a reference choice)."""
    if not int(adapter.query_info().adapter_flags) & AdapterFlag.CQ_RESIZE_SUPPORTED:
        pytest.skip("adapter does not set NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED")
    cq = adapter.create_cq(4).get(timeout=TIMEOUT)
    expect_request(cq.resize_cq(depth), "i/a", Status.INVALID_PARAMETER)
    with stated("digest 1.3"):
        expect_request(cq.resize_cq(16), "i/a")


@pytest.mark.rule("CQ-RESIZE-DEPTH")
@pytest.mark.digest("1.3")
def test_resize_cq_depth_above_max(open_adapter: OpenAdapter) -> None:
    """digest 1.3: CqDepth > MaxCqDepth -> INVALID_PARAMETER, inline or through the
    request's completion. The rejected resize leaves the CQ working and a valid resize then
    succeeds.  MaxCqDepth is 16 where the provider has the knob, else the adapter's own."""
    adapter = open_adapter()
    shrink_limits(adapter, max_cq_depth=16)
    limit = adapter.query_info().max_cq_depth
    if limit >= MAXULONG:
        pytest.skip("MaxCqDepth is MAXULONG: no CqDepth is above it")
    _resize_rejected(adapter, limit + 1)


@pytest.mark.rule("CQ-RESIZE-ZERO-DEPTH")
@pytest.mark.digest("1.3")
@pytest.mark.reference("ZERO-DEPTH")
def test_resize_cq_zero_depth(open_adapter: OpenAdapter) -> None:
    """digest 1.3 is silent on a resize to depth 0. docs/semantics.md ZERO-DEPTH (a reference
    choice): INVALID_PARAMETER, as for a create; the CQ keeps working and a valid resize then
    succeeds.  Stated (digest 1.3): that resize; the choice: the refusal of 0 and its
    status."""
    _resize_rejected(open_adapter(), 0)


@pytest.mark.rule("CQ-RESIZE-BELOW-ENTRIES")
@pytest.mark.digest("1.3")
@pytest.mark.reference("RESIZE")
def test_resize_cq_below_held_entries(adapter: ndk.Adapter, pd: ndk.Pd, mr: ndk.Mr) -> None:
    """digest 1.3 is silent on a resize below the entries the CQ holds; docs/semantics.md
    RESIZE (a reference choice, from ND2 CQ::Resize of digest 4.2): BUFFER_OVERFLOW. No entry
    is lost."""
    if not int(adapter.query_info().adapter_flags) & AdapterFlag.CQ_RESIZE_SUPPORTED:
        pytest.skip("adapter does not set NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED")
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    qp = pd.create_qp(cq, cq, receive_queue_depth=8).get(timeout=TIMEOUT)
    post_receives(qp, mr, [11, 12, 13])
    cq.arm(CqNotify.ANY)
    qp.flush()
    # the notification says the entries are queued; nothing is removed before the resize
    assert cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    expect_request(cq.resize_cq(2), "i/a", Status.BUFFER_OVERFLOW)
    results = drain(cq, 3)
    assert [r.request_context for r in results] == [11, 12, 13]
    assert all(r.status == Status.CANCELLED for r in results)
    qp.close()


# --- interrupt moderation ----------------------------------------------------------------


@pytest.mark.rule("CQ-MODERATION-NOT-SUPPORTED")
@pytest.mark.digest("1.3")
def test_moderation_without_flag(adapter: ndk.Adapter) -> None:
    """digest 1.3: NOT_SUPPORTED is required when
    NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED is not set. docs/semantics.md:
    MODERATION."""
    set_adapter_flags(adapter, remove=AdapterFlag.CQ_INTERRUPT_MODERATION_SUPPORTED)
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    assert cq.control_cq_interrupt_moderation(100, 4) == Status.NOT_SUPPORTED
    assert cq.control_cq_interrupt_moderation(0, 0) == Status.NOT_SUPPORTED


@pytest.mark.rule("CQ-MODERATION-PARAMETER-MIX")
@pytest.mark.digest("1.3")
@pytest.mark.parametrize("count", [MAXULONG, 9], ids=["count-maxulong", "count-above-depth"])
def test_moderation_parameter_mix(adapter: ndk.Adapter, count: int) -> None:
    """digest 1.3: ModerationInterval == MAXULONG together with ModerationCount == MAXULONG
    or > CqDepth -> INVALID_PARAMETER_MIX (neither would ever fire). docs/semantics.md:
    MODERATION. A valid setting then succeeds."""
    if not int(adapter.query_info().adapter_flags) & AdapterFlag.CQ_INTERRUPT_MODERATION_SUPPORTED:
        pytest.skip("adapter does not support CQ interrupt moderation")
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    assert cq.control_cq_interrupt_moderation(MAXULONG, count) == Status.INVALID_PARAMETER_MIX
    assert cq.control_cq_interrupt_moderation(MAXULONG, 8) == Status.SUCCESS


@pytest.mark.rule("CQ-MODERATION-VALID")
@pytest.mark.digest("1.3")
@pytest.mark.parametrize("interval, count", [
    (0, 0), (100, 4), (MAXULONG, 1), (MAXULONG, 8), (100, MAXULONG), (100, 9),
])
def test_moderation_valid_settings(adapter: ndk.Adapter, interval: int, count: int) -> None:
    """digest 1.3: interval 0 = no moderation; interval MAXULONG = the count alone controls;
    count MAXULONG or > CqDepth = the interval alone controls. All valid -> SUCCESS, and
    NOT_SUPPORTED is forbidden when the flag is set. docs/semantics.md: MODERATION."""
    if not int(adapter.query_info().adapter_flags) & AdapterFlag.CQ_INTERRUPT_MODERATION_SUPPORTED:
        pytest.skip("adapter does not support CQ interrupt moderation")
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    assert cq.control_cq_interrupt_moderation(interval, count) == Status.SUCCESS


@pytest.mark.rule("CQ-MODERATION-NEVER-PENDING")
@pytest.mark.digest("1.3")
def test_moderation_never_pending(open_adapter: OpenAdapter) -> None:
    """digest 1.3: NdkControlCqInterruptModeration must not return PENDING, even on a
    provider that pends its requests. docs/semantics.md: MODERATION."""
    adapter = open_adapter(request_mode="pending")
    if not int(adapter.query_info().adapter_flags) & AdapterFlag.CQ_INTERRUPT_MODERATION_SUPPORTED:
        pytest.skip("adapter does not support CQ interrupt moderation")
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    assert cq.control_cq_interrupt_moderation(50, 2) == Status.SUCCESS
    assert cq.control_cq_interrupt_moderation(MAXULONG, MAXULONG) == Status.INVALID_PARAMETER_MIX


# --- results and notifications -----------------------------------------------------------


@pytest.mark.rule("CQ-RESULTS-EMPTY")
@pytest.mark.digest("1.3")
def test_get_results_on_empty_cq(cq: ndk.Cq) -> None:
    """digest 1.3: NdkGetCqResults(Ex) returns the count removed, 0 when the CQ is empty."""
    assert cq.get_results(8) == []
    assert cq.get_results_ex(8) == []


@pytest.mark.rule("CQ-RESULTS-COUNT")
@pytest.mark.digest("1.3")
def test_get_results_returns_at_most_n(cq: ndk.Cq, qp: ndk.Qp, mr: ndk.Mr) -> None:
    """digest 1.3: NdkGetCqResults removes at most nResults entries, oldest first (in issue
    order, digest 4.2); the rest stay for the next call."""
    post_receives(qp, mr, [1, 2, 3])
    cq.arm(CqNotify.ANY)
    qp.flush()
    assert cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    first = poll(cq, 2, ex=False)
    assert [r.request_context for r in first] == [1, 2]
    assert [r.request_context for r in drain(cq, 1, ex=False)] == [3]


@pytest.mark.rule("CQ-RESULTS-PLAIN-FIELDS")
@pytest.mark.digest("2.3")
def test_plain_results_fields(cq: ndk.Cq, qp: ndk.Qp, mr: ndk.Mr) -> None:
    """digest 2.3, 3.2: NDK_RESULT carries Status, QPContext (the CreateQp value) and
    RequestContext; entries are retrievable with the non-Ex call too."""
    post_receives(qp, mr, [0x77])
    qp.flush()
    (result,) = drain(cq, 1, ex=False)
    assert result.status == Status.CANCELLED
    assert result.qp_context == 0x51
    assert result.request_context == 0x77


@pytest.mark.rule("CQ-ARM-ONCE-PER-ARM")
@pytest.mark.digest("3.2")
def test_one_notification_per_arm(cq: ndk.Cq, qp: ndk.Qp, mr: ndk.Mr) -> None:
    """digest 3.2: the notification callback is called once per arm, with STATUS_SUCCESS
    (CQ operating normally, digest 1.3). docs/semantics.md: ARM (arm ANY, flush three
    receives -> exactly one notification)."""
    post_receives(qp, mr, [1, 2, 3])
    cq.arm(CqNotify.ANY)
    qp.flush()
    assert cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert len(drain(cq, 3)) == 3
    assert cq.wait_notification(timeout=quiet_period(cq)) is None
    assert cq.notifications == 1


@pytest.mark.rule("CQ-ARM-REQUIRED")
@pytest.mark.digest("3.2")
def test_no_notification_without_arm(cq: ndk.Cq, qp: ndk.Qp, mr: ndk.Mr) -> None:
    """digest 3.2: the callback is called "only after an arm". docs/semantics.md: ARM."""
    post_receives(qp, mr, [1, 2])
    qp.flush()
    assert len(drain(cq, 2)) == 2
    assert cq.wait_notification(timeout=quiet_period(cq)) is None
    assert cq.notifications == 0


@pytest.mark.rule("CQ-ARM-REARM")
@pytest.mark.digest("3.2")
def test_rearm_gives_another_notification(cq: ndk.Cq, qp: ndk.Qp, mr: ndk.Mr) -> None:
    """digest 3.2: the provider clears the arm before calling back; a new arm followed by a
    new completion gives a new notification. docs/semantics.md: ARM."""
    post_receives(qp, mr, [1])
    cq.arm(CqNotify.ANY)
    qp.flush()
    assert cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    drain(cq, 1)
    cq.arm(CqNotify.ANY)
    post_receives(qp, mr, [2])
    qp.flush()
    assert cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert [r.request_context for r in drain(cq, 1)] == [2]
    assert cq.notifications == 2


@pytest.mark.rule("CQ-ARM-PRESENT-COMPLETIONS")
@pytest.mark.digest("3.2")
def test_arm_with_new_completions_fires_at_once(cq: ndk.Cq, qp: ndk.Qp, mr: ndk.Mr) -> None:
    """digest 3.2: when at least one completion arrived since the last callback, an arm
    must be satisfied immediately."""
    post_receives(qp, mr, [5])
    qp.flush()
    assert cq.wait_notification(timeout=quiet_period(cq)) is None  # not armed yet
    cq.arm(CqNotify.ANY)
    assert cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert cq.notifications == 1
    assert [r.request_context for r in drain(cq, 1)] == [5]


@pytest.mark.rule("CQ-ARM-ERRORS-MATCH-SOLICITED")
@pytest.mark.digest("3.2")
def test_error_completion_satisfies_solicited_arm(cq: ndk.Cq, qp: ndk.Qp, mr: ndk.Mr) -> None:
    """digest 3.2 / 1.7: "Requests that complete with an error always match the
    NDK_CQ_NOTIFY_SOLICITED notification type": a flushed (CANCELLED) receive satisfies a
    SOLICITED arm."""
    post_receives(qp, mr, [9])
    cq.arm(CqNotify.SOLICITED)
    qp.flush()
    assert cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    (result,) = drain(cq, 1)
    assert result.status == Status.CANCELLED
    assert result.type == OpType.RECEIVE



@pytest.mark.rule("CQ-ARM-ERRORS-ONLY")
@pytest.mark.digest("3.2")
def test_errors_arm_ignores_completions(cq: ndk.Cq, qp: ndk.Qp, mr: ndk.Mr) -> None:
    """digest 3.2: NDK_CQ_NOTIFY_ERRORS = CQ errors such as overrun or catastrophic failure
    only; a completion (even one with an error status: STATUS_CANCELLED) does not satisfy it.
    The completion is still in the CQ."""
    post_receives(qp, mr, [1])
    cq.arm(CqNotify.ERRORS)
    qp.flush()
    assert [r.request_context for r in drain(cq, 1)] == [1]
    assert cq.wait_notification(timeout=quiet_period(cq)) is None
    assert cq.notifications == 0


@pytest.mark.rule("CQ-ARM-MERGE")
@pytest.mark.digest("3.2")
@pytest.mark.parametrize("first, second", [
    (CqNotify.ERRORS, CqNotify.ANY), (CqNotify.ANY, CqNotify.ERRORS),
    (CqNotify.ERRORS, CqNotify.SOLICITED), (CqNotify.SOLICITED, CqNotify.ERRORS),
], ids=["errors+any", "any+errors", "errors+solicited", "solicited+errors"])
def test_rearm_before_satisfied_merges(cq: ndk.Cq, qp: ndk.Qp, mr: ndk.Mr, first: CqNotify, second: CqNotify) -> None:
    """digest 3.2: re-arming before an arm is satisfied gives ANY if either arm is ANY, and
    SOLICITED for SOLICITED with ERRORS; a flushed (error) completion matches both, so
    exactly one notification comes."""
    post_receives(qp, mr, [1])
    cq.arm(first)
    cq.arm(second)
    qp.flush()
    assert cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    drain(cq, 1)
    assert cq.wait_notification(timeout=quiet_period(cq)) is None
    assert cq.notifications == 1


@pytest.mark.rule("CQ-OVERRUN")
@pytest.mark.digest("1.3")
def test_cq_overrun_reports_buffer_overflow(adapter: ndk.Adapter, pd: ndk.Pd, mr: ndk.Mr) -> None:
    """digest 1.3 (NdkCqNotificationCallback): a CQ overrun is reported with
    STATUS_BUFFER_OVERFLOW; "the CQ and all associated QPs become unusable and no further
    completions are reported". A CQ of depth 2 receives 200 cancelled receives (far beyond
    any rounding of the depth) while armed for errors."""
    cq = adapter.create_cq(2).get(timeout=TIMEOUT)
    qp = pd.create_qp(cq, cq, receive_queue_depth=200).get(timeout=TIMEOUT)
    post_receives(qp, mr, range(1, 201), length=16)
    cq.arm(CqNotify.ERRORS)
    qp.flush()
    assert cq.wait_notification(timeout=TIMEOUT) == Status.BUFFER_OVERFLOW
    assert len(cq.get_results_ex(256)) <= 2


def _fatal_cq_error(adapter: ndk.Adapter, pd: ndk.Pd, mr: ndk.Mr) -> tuple[ndk.Cq, ndk.Qp]:
    """A CQ of depth 8 armed for errors, with one flushed receive of its QP on its way, hit
    by a fatal error (knob fatal_cq_error, docs/knobs.md) and reported STATUS_INTERNAL_ERROR;
    returns (cq, qp)."""
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    qp = pd.create_qp(cq, cq, receive_queue_depth=8).get(timeout=TIMEOUT)
    post_receives(qp, mr, [1], length=16)
    qp.flush()
    cq.arm(CqNotify.ERRORS)
    adapter.knobs.fatal_cq_error = True
    assert cq.wait_notification(timeout=TIMEOUT) == Status.INTERNAL_ERROR
    return cq, qp


@pytest.mark.rule("CQ-FATAL-ERROR")
@pytest.mark.digest("1.3")
def test_fatal_cq_error_reports_internal_error(adapter: ndk.Adapter, pd: ndk.Pd,
                                               mr: ndk.Mr) -> None:
    """digest 1.3 (NdkCqNotificationCallback): a fatal CQ error is reported with
    STATUS_INTERNAL_ERROR, with the same consequences as an overrun: the CQ and all associated
    QPs become unusable and no further completions are reported.  Knob fatal_cq_error
    (docs/knobs.md) raises it on a CQ armed for errors, with one flushed receive on its way:
    the arm is told, and the CQ returns no result."""
    cq, _ = _fatal_cq_error(adapter, pd, mr)
    assert cq.get_results_ex(8) == []
    assert int(adapter.knobs.fatal_cq_error) == 1  # read: the CQs in error on this miniport


@pytest.mark.rule("CQ-FATAL-ERROR-AFTER")
@pytest.mark.digest("1.3")
@pytest.mark.reference("CQ-OVERRUN-QP")
def test_after_fatal_cq_error(adapter: ndk.Adapter, pd: ndk.Pd, mr: ndk.Mr) -> None:
    """digest 1.3 says the CQ and its QPs become unusable after a fatal CQ error, not what a
    post on such a QP returns nor whether a later arm hears of the error again.
    docs/semantics.md CQ-OVERRUN-QP (a reference choice): a receive posted on the QP returns
    STATUS_INVALID_DEVICE_STATE inline; and CQ-ERROR-ARM: the error is reported once, so a
    new arm gets nothing.  Stated (digest 1.3): no further completion is reported; the
    choice: the post's status and the arm."""
    cq, qp = _fatal_cq_error(adapter, pd, mr)
    assert qp.receive([mr.sge(0, 16)], request_context=2) == Status.INVALID_DEVICE_STATE
    cq.arm(CqNotify.ANY)
    assert cq.wait_notification(timeout=quiet_period(cq)) is None  # reported once
    with stated("digest 1.3"):
        assert cq.get_results_ex(8) == []


@pytest.mark.rule("CQ-NOTIFICATION-WAIT-INT-TIMEOUT")
@pytest.mark.digest("3.2")
def test_wait_notification_with_integer_timeout(ndk_provider: str) -> None:
    """digest 3.2 (the notification callback) through the Python API (ARCHITECTURE.md,
    "Python": callbacks never crash or deadlock the interpreter): Cq.wait_notification takes
    an int timeout like Call.wait does, both when a notification is queued and when none
    comes. Run in a child process, because the failure mode is a crash of the interpreter."""
    code = textwrap.dedent("""
        import sys
        import ndk
        with ndk.open_adapter(sys.argv[1]) as adapter:
            pd = adapter.create_pd().get(timeout=5)
            cq = adapter.create_cq(8).get(timeout=5)
            mr = pd.create_mr().get(timeout=5)
            memory = bytearray(4096)
            assert mr.register(memory, flags=1).wait(timeout=5) == ndk.Status.SUCCESS
            qp = pd.create_qp(cq, cq).get(timeout=5)
            assert qp.receive([mr.sge(0, 64)], request_context=1) == ndk.Status.SUCCESS
            cq.arm(ndk.CqNotify.ANY)
            qp.flush()
            print(cq.wait_notification(timeout=5) == ndk.Status.SUCCESS)
            print(cq.wait_notification(timeout=0) is None)
    """)
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(ndk.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    child = subprocess.run([sys.executable, "-c", code, ndk_provider], capture_output=True,
                           text=True, timeout=60, env=env)
    assert child.returncode == 0, f"exit {child.returncode}: {child.stderr[-1500:]}"
    assert child.stdout.split() == ["True", "True"]
