"""The validation layer catches a provider that breaks the contract (docs/validation.md).

Each scenario makes the soft provider break exactly one rule with its ``misbehave`` knob
(docs/knobs.md), declares the rule it expects the layer to report, and checks the record: the
rule ID, the object and call it names, its digest section.  ``test_clean_run_is_silent``
proves the other direction: a conforming run through every object reports nothing.  These
scenarios need the soft provider's knobs and the layer; on another provider, or with
``--ndk-no-validate``, they skip.
"""

from __future__ import annotations

import pytest

import ndk
from ndk import AdapterFlag, CqNotify, OpFlag, Status
from ndk.testing import OPTION, OpenAdapter, Pair, skip

from ndk.scenario.completion import (TIMEOUT, drain, pair, pattern, post_receive, post_send,
                                     wait_until, Side)
from ndk.scenario import MAXULONG, reported

pytestmark = pytest.mark.usefixtures("needs_validation")


@pytest.fixture
def needs_validation() -> None:
    if not ndk.validate_default():
        skip(OPTION, "the validation layer is off (--ndk-no-validate)")



def wait_reported(adapter: ndk.Adapter, rule: str, timeout: float = TIMEOUT) -> ndk.Violation:
    """Wait until the layer has reported ``rule`` on ``adapter``; the first record."""
    wait_until(lambda: reported(adapter, rule), timeout, f"a {rule} violation")
    record = reported(adapter, rule)[0]
    assert record.section == next(r.section for r in ndk.rules() if r.id == rule)
    assert record.side == "provider"
    return record


# one_send and two_sends build their pair in the test's body (not with the pair fixture): the
# misbehave knob of each side comes from the scenario's parameters, which a marker cannot name.
def one_send(open_adapter: OpenAdapter, *, client: str | None = None, server: str | None = None,
             arm: bool = False, flags: int = 0) -> tuple[Side, Side]:
    """(a, b): a connected pair (``client`` / ``server``: the misbehave name of that side),
    one send from a into a receive posted at b (b's CQ armed first with ``arm``), both
    completions drained."""
    a, b = pair(open_adapter, client_knobs={"misbehave": client} if client else None,
                server_knobs={"misbehave": server} if server else None)
    if arm:
        b.cq.arm(CqNotify.ANY)
    post_receive(b, 0, 64, 1)
    post_send(a, pattern(16), 2, flags=flags)
    drain(b.cq, 1)
    return a, b


def two_sends(open_adapter: OpenAdapter, client: str) -> tuple[Side, Side]:
    """(a, b): a connected pair whose client misbehaves as ``client``; two sends (contexts 1,
    2) from a into receives posted at b, b's completions drained, a's left in its CQ."""
    a, b = pair(open_adapter, client_knobs={"misbehave": client})
    for n in (1, 2):
        post_receive(b, 64 * n, 64, 10 + n)
    for n in (1, 2):
        post_send(a, pattern(16, n), n, offset=64 * n)
    drain(b.cq, 2)
    return a, b


# --- objects as the provider returns them (digest 1.0) ---------------------------------------


@pytest.mark.rule("VALIDATE-OBJECT-HEADER-VERSION")
@pytest.mark.digest("1.0")
@pytest.mark.expect_violation("OBJECT-HEADER-VERSION")
def test_header_version(open_adapter: OpenAdapter) -> None:
    """digest 1.0, 1.1: a new object's Header.Version is the adapter's.  misbehave
    header_version: the PD's major version is one more; the layer names the PD and the
    create."""
    adapter = open_adapter(misbehave="header_version")
    adapter.create_pd().get(timeout=TIMEOUT)
    record = wait_reported(adapter, "OBJECT-HEADER-VERSION")
    assert (record.object, record.call) == ("PD#1", "NdkCreatePd")


@pytest.mark.rule("VALIDATE-OBJECT-HEADER-TYPE")
@pytest.mark.digest("1.0")
@pytest.mark.expect_violation("OBJECT-HEADER-TYPE")
def test_header_type(open_adapter: OpenAdapter) -> None:
    """digest 1.0: Header.ObjectType is the created type.  misbehave header_type: a CQ
    that says NdkObjectTypeMax."""
    adapter = open_adapter(misbehave="header_type")
    adapter.create_cq(8).get(timeout=TIMEOUT)
    record = wait_reported(adapter, "OBJECT-HEADER-TYPE")
    assert (record.object, record.call) == ("CQ#1", "NdkCreateCq")


@pytest.mark.rule("VALIDATE-OBJECT-HEADER-RESERVED")
@pytest.mark.digest("1.0")
@pytest.mark.expect_violation("OBJECT-HEADER-RESERVED")
def test_header_reserved(open_adapter: OpenAdapter) -> None:
    """digest 1.0: NdkReserved is zero when the object is returned.  misbehave
    header_reserved: rf[0] is 1."""
    adapter = open_adapter(misbehave="header_reserved")
    adapter.create_pd().get(timeout=TIMEOUT)
    assert wait_reported(adapter, "OBJECT-HEADER-RESERVED").call == "NdkCreatePd"


@pytest.mark.rule("VALIDATE-OBJECT-DISPATCH")
@pytest.mark.digest("1.0")
@pytest.mark.expect_violation("OBJECT-DISPATCH")
def test_dispatch_null(open_adapter: OpenAdapter) -> None:
    """digest 1.0: Dispatch is set before the object is returned.  misbehave dispatch_null:
    the layer reports it, and the consumer's later calls on the PD are refused rather than
    made through a NULL table."""
    adapter = open_adapter(misbehave="dispatch_null")
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    assert wait_reported(adapter, "OBJECT-DISPATCH").call == "NdkCreatePd"
    assert pd.create_mr().wait(timeout=TIMEOUT) == Status.INVALID_DEVICE_STATE


# --- the three ways a call completes (digest 1.0) --------------------------------------------


@pytest.mark.rule("VALIDATE-CREATE-COMPLETION-INLINE")
@pytest.mark.digest("1.0")
@pytest.mark.expect_violation("CREATE-COMPLETION-INLINE")
def test_create_completion_after_inline_return(open_adapter: OpenAdapter) -> None:
    """digest 1.0: a create that returns anything but STATUS_PENDING never calls its
    completion.  misbehave complete_after_inline: the create returns SUCCESS and calls it;
    the layer reports it at once and does not deliver it (the create's record shows no
    completion)."""
    adapter = open_adapter(create_mode="inline", misbehave="complete_after_inline")
    call = adapter.create_pd()
    assert call.status == Status.SUCCESS
    assert call.completions == 0
    assert reported(adapter, "CREATE-COMPLETION-INLINE")


@pytest.mark.rule("VALIDATE-CREATE-COMPLETION-TWICE")
@pytest.mark.digest("1.0")
@pytest.mark.expect_violation("CREATE-COMPLETION-TWICE")
def test_create_completion_twice(open_adapter: OpenAdapter) -> None:
    """digest 1.0: a pending create completes exactly once.  misbehave complete_twice: the
    second completion is reported and not delivered (the consumer sees one)."""
    adapter = open_adapter(create_mode="pending", misbehave="complete_twice")
    call = adapter.create_pd()
    assert call.wait(timeout=TIMEOUT) == Status.SUCCESS
    wait_reported(adapter, "CREATE-COMPLETION-TWICE")
    assert call.completions == 1


@pytest.mark.rule("VALIDATE-CREATE-COMPLETION-MISSING")
@pytest.mark.digest("1.0")
@pytest.mark.expect_violation("CREATE-COMPLETION-MISSING")
def test_create_completion_missing(open_adapter: OpenAdapter) -> None:
    """digest 1.0: a create that returned STATUS_PENDING calls its completion.  misbehave
    never_complete with validate_timeout_ms=50: the layer reports the create once it is
    overdue."""
    adapter = open_adapter(create_mode="pending", misbehave="never_complete",
                           validate_timeout_ms=50)
    call = adapter.create_pd()
    assert call.status == Status.PENDING
    with pytest.raises(TimeoutError):
        call.wait(timeout=0.2)
    assert wait_reported(adapter, "CREATE-COMPLETION-MISSING").call == "NdkCreatePd"


@pytest.mark.rule("VALIDATE-CREATE-OUT-PARAM-PENDING")
@pytest.mark.digest("1.0")
@pytest.mark.expect_violation("CREATE-OUT-PARAM-PENDING")
def test_out_parameter_written_after_pending(open_adapter: OpenAdapter) -> None:
    """digest 1.0: a pending create does not touch its out-parameter.  misbehave
    out_param_after_pending: the layer sees it written on return."""
    adapter = open_adapter(create_mode="pending", misbehave="out_param_after_pending")
    assert adapter.create_cq(8).wait(timeout=TIMEOUT) == Status.SUCCESS
    assert wait_reported(adapter, "CREATE-OUT-PARAM-PENDING").call == "NdkCreateCq"


@pytest.mark.rule("VALIDATE-CREATE-OUT-PARAM-INLINE")
@pytest.mark.digest("1.0")
@pytest.mark.expect_violation("CREATE-OUT-PARAM-INLINE")
def test_out_parameter_missing_after_inline_success(open_adapter: OpenAdapter) -> None:
    """digest 1.0 (NDK_FN_CREATE_COMPLETION: a status other than STATUS_PENDING means the new
    object is in the out-parameter and the completion is never called).  misbehave
    out_param_missing_inline: NdkCreateCq returns STATUS_SUCCESS inline and leaves the
    out-parameter NULL; the layer reports it, and the consumer's Call.get() raises an error
    saying so, never a crash or a None object."""
    adapter = open_adapter(create_mode="inline", misbehave="out_param_missing_inline")
    call = adapter.create_cq(8)
    assert (call.status, call.completions) == (Status.SUCCESS, 0)
    assert wait_reported(adapter, "CREATE-OUT-PARAM-INLINE").call == "NdkCreateCq"
    with pytest.raises(RuntimeError, match="succeeded without an object"):
        call.get(timeout=TIMEOUT)


@pytest.mark.rule("VALIDATE-REQUEST-COMPLETION-INLINE")
@pytest.mark.digest("1.0")
@pytest.mark.expect_violation("REQUEST-COMPLETION-INLINE")
def test_request_completion_after_inline_return(open_adapter: OpenAdapter) -> None:
    """digest 1.0: a request that returns inline never calls its completion.  misbehave
    request_complete_after_inline on NdkRegisterMr."""
    adapter = open_adapter(request_mode="inline", misbehave="request_complete_after_inline")
    mr = adapter.create_pd().get(timeout=TIMEOUT).create_mr().get(timeout=TIMEOUT)
    buffer = bytearray(4096)
    call = mr.register(buffer)
    assert call.status == Status.SUCCESS and call.completions == 0
    assert wait_reported(adapter, "REQUEST-COMPLETION-INLINE").call == "NdkRegisterMr"


@pytest.mark.rule("VALIDATE-REQUEST-COMPLETION-TWICE")
@pytest.mark.digest("1.0")
@pytest.mark.expect_violation("REQUEST-COMPLETION-TWICE")
def test_request_completion_twice(open_adapter: OpenAdapter) -> None:
    """digest 1.0: a pending request completes exactly once.  misbehave
    request_complete_twice on NdkRegisterMr: the consumer sees one completion."""
    adapter = open_adapter(request_mode="pending", misbehave="request_complete_twice")
    mr = adapter.create_pd().get(timeout=TIMEOUT).create_mr().get(timeout=TIMEOUT)
    buffer = bytearray(4096)
    call = mr.register(buffer)
    assert call.wait(timeout=TIMEOUT) == Status.SUCCESS
    wait_reported(adapter, "REQUEST-COMPLETION-TWICE")
    assert call.completions == 1


@pytest.mark.rule("VALIDATE-REQUEST-COMPLETION-MISSING")
@pytest.mark.digest("1.0")
@pytest.mark.expect_violation("REQUEST-COMPLETION-MISSING")
def test_request_completion_missing(open_adapter: OpenAdapter) -> None:
    """digest 1.0: a pending request calls its completion.  misbehave
    request_never_complete with validate_timeout_ms=50, on NdkRegisterMr."""
    adapter = open_adapter(request_mode="pending", misbehave="request_never_complete",
                           validate_timeout_ms=50)
    mr = adapter.create_pd().get(timeout=TIMEOUT).create_mr().get(timeout=TIMEOUT)
    buffer = bytearray(4096)
    call = mr.register(buffer)
    with pytest.raises(TimeoutError):
        call.wait(timeout=0.2)
    assert wait_reported(adapter, "REQUEST-COMPLETION-MISSING").call == "NdkRegisterMr"


@pytest.mark.rule("VALIDATE-STATUS-UNDOCUMENTED")
@pytest.mark.digest("1.2")
def test_undocumented_status_is_a_warning(open_adapter: OpenAdapter) -> None:
    """digest 1.2 (NdkCreatePd: SUCCESS, PENDING, INSUFFICIENT_RESOURCES, other): misbehave
    undocumented_status makes it fail with STATUS_INVALID_PARAMETER_MIX.  "Other" codes are
    allowed, so the layer reports a warning, which does not fail the scenario."""
    adapter = open_adapter(misbehave="undocumented_status")
    assert adapter.create_pd().wait(timeout=TIMEOUT) == Status.INVALID_PARAMETER_MIX
    record = wait_reported(adapter, "STATUS-UNDOCUMENTED")
    assert (record.severity, record.call) == ("warning", "NdkCreatePd")


# --- lifetime (digest 3.1) -------------------------------------------------------------------


@pytest.mark.rule("VALIDATE-CALLBACK-AFTER-CLOSE")
@pytest.mark.digest("3.1")
@pytest.mark.expect_violation("CALLBACK-AFTER-CLOSE")
def test_callback_after_close(open_adapter: OpenAdapter) -> None:
    """digest 3.1: no callback after the close completion.  misbehave callback_after_close:
    a CQ notification after the CQ's close; the layer reports it and does not deliver it."""
    adapter = open_adapter(misbehave="callback_after_close")
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    assert cq.close().wait(timeout=TIMEOUT) == Status.SUCCESS
    record = wait_reported(adapter, "CALLBACK-AFTER-CLOSE")
    assert (record.object, record.call) == ("CQ#1", "NdkCqNotificationCallback")
    assert cq.notifications == 0


@pytest.mark.rule("VALIDATE-CLOSE-ANTECEDENT-OPEN")
@pytest.mark.digest("3.1")
@pytest.mark.expect_violation("CLOSE-ANTECEDENT-OPEN")
def test_close_of_antecedent_completes_early(open_adapter: OpenAdapter) -> None:
    """digest 3.1: an antecedent's close completes only once its successors are closed.
    misbehave close_antecedent_early: closing a CQ that a QP still uses returns SUCCESS."""
    adapter = open_adapter(misbehave="close_antecedent_early")
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    qp = pd.create_qp(cq, cq).get(timeout=TIMEOUT)
    cq.close()
    record = wait_reported(adapter, "CLOSE-ANTECEDENT-OPEN")
    assert record.object == "CQ#1" and "QP#1" in record.message
    qp.close().wait(timeout=TIMEOUT)


# --- completion queues (digest 3.2, 1.3) -----------------------------------------------------


@pytest.mark.rule("VALIDATE-CQ-NOTIFY-UNARMED")
@pytest.mark.digest("3.2")
@pytest.mark.expect_violation("CQ-NOTIFY-UNARMED")
def test_notification_without_arm(open_adapter: OpenAdapter) -> None:
    """digest 3.2: a notification comes only after an arm.  misbehave notify_unarmed: a
    receive completes on a CQ nobody armed."""
    a, b = one_send(open_adapter, server="notify_unarmed")
    assert wait_reported(b.adapter, "CQ-NOTIFY-UNARMED").call == "NdkCqNotificationCallback"


@pytest.mark.rule("VALIDATE-CQ-NOTIFY-TWICE")
@pytest.mark.digest("3.2")
@pytest.mark.expect_violation("CQ-NOTIFY-TWICE")
def test_two_notifications_for_one_arm(open_adapter: OpenAdapter) -> None:
    """digest 3.2: once per arm.  misbehave notify_twice."""
    a, b = one_send(open_adapter, server="notify_twice", arm=True)
    wait_reported(b.adapter, "CQ-NOTIFY-TWICE")


@pytest.mark.rule("VALIDATE-CQ-CALLBACK-CONCURRENT")
@pytest.mark.digest("3.2")
@pytest.mark.expect_violation("CQ-CALLBACK-CONCURRENT", "CQ-NOTIFY-TWICE")
def test_concurrent_notification_callbacks(open_adapter: OpenAdapter) -> None:
    """digest 3.2: callbacks on one CQ are serialized.  misbehave concurrent_cq_callbacks:
    the provider calls the callback from two threads at once.  The consumer's callback is held
    at a gate (ndk.testing.raw.gate_cq_callbacks), so the provider's second call provably
    starts before the first returned (the extra calls are also notifications without an
    arm)."""
    # Its own pair, not the pair fixture: the gate (ndk.testing.raw) holds callbacks of the
    # test's own process, so b's CQ must be here whatever --ndk-peer says.
    a, b = pair(open_adapter, server_knobs={"misbehave": "concurrent_cq_callbacks"})
    raw = ndk.testing.raw
    b.cq.arm(CqNotify.ANY)
    raw.gate_cq_callbacks(b.cq, True)
    try:
        post_receive(b, 0, 64, 1)
        post_send(a, pattern(16), 2)
        wait_reported(b.adapter, "CQ-CALLBACK-CONCURRENT")
    finally:
        raw.gate_cq_callbacks(b.cq, False)
    drain(b.cq, 1)


@pytest.mark.rule("VALIDATE-MODERATION-PENDING")
@pytest.mark.digest("1.3")
@pytest.mark.expect_violation("MODERATION-PENDING")
def test_moderation_returns_pending(open_adapter: OpenAdapter) -> None:
    """digest 1.3: NdkControlCqInterruptModeration must not return STATUS_PENDING."""
    adapter = open_adapter(misbehave="moderation_pending")
    if not int(adapter.query_info().adapter_flags) & int(AdapterFlag.CQ_INTERRUPT_MODERATION_SUPPORTED):
        pytest.skip("the adapter does not set NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED: "
                    "any answer but NOT_SUPPORTED also breaks MODERATION-NOT-SUPPORTED, so this "
                    "scenario cannot show MODERATION-PENDING alone")
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    assert cq.control_cq_interrupt_moderation(100, 4) == Status.PENDING
    assert reported(adapter, "MODERATION-PENDING")


@pytest.mark.rule("VALIDATE-MODERATION-NOT-SUPPORTED")
@pytest.mark.digest("1.3")
@pytest.mark.expect_violation("MODERATION-NOT-SUPPORTED")
def test_moderation_not_supported_although_flagged(open_adapter: OpenAdapter) -> None:
    """digest 1.3: NOT_SUPPORTED is forbidden when the adapter sets
    NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED."""
    adapter = open_adapter(misbehave="moderation_not_supported")
    if not int(adapter.query_info().adapter_flags) & int(AdapterFlag.CQ_INTERRUPT_MODERATION_SUPPORTED):
        pytest.skip("the adapter does not set NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED, "
                    "so NOT_SUPPORTED is what it must return: no rule to break")
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    assert cq.control_cq_interrupt_moderation(100, 4) == Status.NOT_SUPPORTED
    assert reported(adapter, "MODERATION-NOT-SUPPORTED")


# --- results and work requests (digest 2.3, 2.5, 3.4, 4.2) -----------------------------------


@pytest.mark.rule("VALIDATE-RESULT-PROVIDER-ERROR-CODE")
@pytest.mark.digest("2.3")
@pytest.mark.expect_violation("RESULT-PROVIDER-ERROR-CODE")
def test_provider_error_code_on_success(open_adapter: OpenAdapter) -> None:
    """digest 2.3: ProviderErrorCode is 0 when Status is SUCCESS.  misbehave
    provider_error_code at the sender."""
    a, b = one_send(open_adapter, client="provider_error_code")
    (sent,) = drain(a.cq, 1)
    assert sent.provider_error_code == 0x1234
    assert wait_reported(a.adapter, "RESULT-PROVIDER-ERROR-CODE").call == "NdkGetCqResultsEx"


@pytest.mark.rule("VALIDATE-RESULT-PROVIDER-ERROR-CODE-BEFORE-2-1")
@pytest.mark.digest("2.3")
@pytest.mark.pair(client_knobs={"misbehave": "provider_error_code", "provider_version": "2.0"})
def test_provider_error_code_is_padding_before_2_1(pair: Pair) -> None:
    """digest 2.3: ProviderErrorCode exists from NDKPI 2.1; before, its offset is padding.
    At a negotiated 2.0 (knob provider_version="2.0") with misbehave provider_error_code at
    the sender, the layer judges nothing and the consumer reads 0 ("not provided"); the
    send completes STATUS_SUCCESS."""
    a, b = pair
    assert a.adapter.version == (2, 0)
    post_receive(b, 0, 64, 1)
    post_send(a, pattern(16), 2)
    drain(b.cq, 1)
    (sent,) = drain(a.cq, 1)
    assert sent.status == Status.SUCCESS
    assert sent.provider_error_code == 0
    assert not reported(a.adapter, "RESULT-PROVIDER-ERROR-CODE")


@pytest.mark.rule("VALIDATE-RESULT-INVALIDATE-TOKEN")
@pytest.mark.digest("2.3")
@pytest.mark.expect_violation("RESULT-INVALIDATE-TOKEN")
@pytest.mark.pair(server_knobs={"misbehave": "drop_invalidate_token"})
def test_receive_and_invalidate_without_its_token(pair: Pair) -> None:
    """digest 2.3: a ReceiveAndInvalidate result carries the invalidated token.  misbehave
    drop_invalidate_token at the receiver: the result carries its complement."""
    a, b = pair
    mw = b.pd.create_mw().get(timeout=TIMEOUT)
    assert b.qp.bind(b.mr, mw, b.mr.address, 4096, flags=OpFlag.ALLOW_REMOTE_READ,
                     request_context=1) == Status.SUCCESS
    drain(b.cq, 1)
    token = mw.remote_token
    post_receive(b, 0, 64, 2)
    assert a.qp.send_and_invalidate([a.mr.sge(0, 16)], token, request_context=3) == \
        Status.SUCCESS
    (received,) = drain(b.cq, 1)
    assert received.type_specific_completion_output == (~token & 0xFFFFFFFF)
    wait_reported(b.adapter, "RESULT-INVALIDATE-TOKEN")


@pytest.mark.rule("VALIDATE-WR-SILENT-COMPLETED")
@pytest.mark.digest("2.5")
@pytest.mark.expect_violation("WR-SILENT-COMPLETED")
def test_silent_success_still_completes(open_adapter: OpenAdapter) -> None:
    """digest 2.5: a successful SILENT_SUCCESS request produces no completion.  misbehave
    complete_silent at the sender."""
    a, b = one_send(open_adapter, client="complete_silent", flags=OpFlag.SILENT_SUCCESS)
    drain(a.cq, 1)
    assert wait_reported(a.adapter, "WR-SILENT-COMPLETED").object == "QP#1"


@pytest.mark.rule("VALIDATE-WR-COMPLETION-ORDER")
@pytest.mark.digest("4.2")
@pytest.mark.expect_violation("WR-COMPLETION-ORDER")
def test_completions_out_of_order(open_adapter: OpenAdapter) -> None:
    """digest 4.2: requests complete in post order per queue.  misbehave
    reorder_completions at the sender: two sends complete 2 then 1; the consumer still gets
    its own contexts back."""
    a, b = pair(open_adapter, client_knobs={"misbehave": "reorder_completions"})
    # The layer swaps a pair only when one poll finds both in the provider's CQ (docs/knobs.md),
    # and over shm or tcp a Send completes when the peer's acknowledgement arrives: the
    # notification of a count-2 moderation (digest 1.3) says both are there before the poll.
    moderated = a.cq.control_cq_interrupt_moderation(MAXULONG, 2) == Status.SUCCESS
    a.cq.arm(CqNotify.ANY)
    for n in (1, 2):
        post_receive(b, 64 * n, 64, 10 + n)
    for n in (1, 2):
        post_send(a, pattern(16, n), n, offset=64 * n)
    drain(b.cq, 2)
    if moderated:
        assert a.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert [r.request_context for r in drain(a.cq, 2)] == [2, 1]
    wait_reported(a.adapter, "WR-COMPLETION-ORDER")


@pytest.mark.rule("VALIDATE-WR-COMPLETION-MISSING")
@pytest.mark.digest("3.4")
@pytest.mark.expect_violation("WR-COMPLETION-MISSING")
def test_completion_never_comes(open_adapter: OpenAdapter) -> None:
    """digest 3.4: an inline success yields a completion.  misbehave drop_completion at the
    sender: of two sends only the second completes; the layer judges the first missing when
    the QP closes."""
    a, b = two_sends(open_adapter, "drop_completion")
    assert [r.request_context for r in drain(a.cq, 1)] == [2]
    assert not reported(a.adapter, "WR-COMPLETION-MISSING")
    a.connector.close().wait(timeout=TIMEOUT)
    a.qp.close().wait(timeout=TIMEOUT)
    assert wait_reported(a.adapter, "WR-COMPLETION-MISSING").object == "QP#1"


# --- the other direction ---------------------------------------------------------------------


@pytest.mark.rule("VALIDATE-CLEAN-RUN")
@pytest.mark.digest("1.0")
@pytest.mark.pair(client_knobs={"create_mode": "pending", "request_mode": "pending"})
def test_clean_run_is_silent(pair: Pair) -> None:
    """digest 1.0 (the conventions every object follows) and the rules of docs/validation.md:
    a conforming provider leaves no error: every object, pending creates and requests, a
    connection, sends, an RDMA write, a bind, arms and notifications, closes."""
    a, b = pair
    b.cq.arm(CqNotify.ANY)
    post_receive(b, 0, 64, 1)
    post_send(a, pattern(16), 2)
    drain(b.cq, 1)
    drain(a.cq, 1)
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    mw = b.pd.create_mw().get(timeout=TIMEOUT)
    assert b.qp.bind(b.mr, mw, b.mr.address, 4096, flags=OpFlag.ALLOW_REMOTE_WRITE,
                     request_context=3) == Status.SUCCESS
    drain(b.cq, 1)
    assert a.qp.write([a.mr.sge(0, 32)], b.mr.address, mw.remote_token,
                      request_context=4) == Status.SUCCESS
    drain(a.cq, 1)
    for adapter in (a.adapter, b.adapter):
        assert [v for v in adapter.violations() if v.severity == "error"] == []
