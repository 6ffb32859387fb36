"""The soft provider's knobs: creation modes, injected failures (inline and async), object
caps (NDIS_NDK_CAPABILITIES, digest 3.7), NDK_ADAPTER_INFO overrides, random mode with a
seed. Each knob must keep the provider inside the contract (digest 1.0)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import ndk
from ndk import Status
from ndk.testing import OpenAdapter

from ndk.scenario import (TIMEOUT, expect_call, expect_create_failed, expect_created,
                          expect_request)


# --- creation / request / close modes ----------------------------------------------------


@pytest.mark.rule("KNOB-CREATE-MODE-RUNTIME")
@pytest.mark.digest("1.0")
def test_create_mode_set_at_run_time(adapter: ndk.Adapter) -> None:
    """digest 1.0 (async create): switching create_mode at run time switches how the next
    create completes: inline (no completion) <-> PENDING + one completion."""
    expect_created(adapter.create_pd(), "inline")
    adapter.knobs.create_mode = "pending"
    assert adapter.knobs.create_mode == "pending"
    expect_created(adapter.create_pd(), "pending")
    expect_created(adapter.create_cq(4), "pending")
    adapter.knobs.create_mode = "inline"
    expect_created(adapter.create_pd(), "inline")


@pytest.mark.rule("KNOB-REQUEST-MODE")
@pytest.mark.digest("1.0")
def test_request_mode_pending(open_adapter: OpenAdapter) -> None:
    """digest 1.0 (async request): with request_mode="pending" every async request returns
    PENDING and calls its completion once; creates are unaffected (still inline)."""
    adapter = open_adapter(request_mode="pending")
    pd = expect_created(adapter.create_pd(), "inline")
    mr = expect_created(pd.create_mr(), "inline")
    expect_request(mr.register(bytearray(4096)), "pending")
    expect_request(mr.deregister_mr(), "pending")
    listener = adapter.create_listener().get(timeout=TIMEOUT)
    expect_request(listener.listen(("0.0.0.0", 0)), "pending")


@pytest.mark.rule("KNOB-CLOSE-MODE")
@pytest.mark.digest("1.0")
@pytest.mark.reference("CLOSE-MODE")
def test_close_mode_set_at_run_time(adapter: ndk.Adapter) -> None:
    """docs/semantics.md: CLOSE-MODE: with close_mode="pending" a close returns PENDING and
    completes exactly once; back to "inline" it returns SUCCESS with no completion.

    The inline close comes before any pending one: a close may pend while a completion the
    provider delivered is still inside its callback (digest 3.1), which the previous pending
    close's completion can be when this thread goes on."""
    first = adapter.create_pd().get(timeout=TIMEOUT)
    second = adapter.create_pd().get(timeout=TIMEOUT)
    adapter.knobs.close_mode = "pending"
    adapter.knobs.close_mode = "inline"
    expect_call(first.close(), Status.SUCCESS, "inline")
    adapter.knobs.close_mode = "pending"
    expect_call(second.close(), Status.SUCCESS, "pending")


# --- injected failures -------------------------------------------------------------------


@pytest.mark.rule("KNOB-FAIL-ASYNC-ONCE")
@pytest.mark.digest("1.0")
@pytest.mark.parametrize("function, create", [
    ("NdkCreateCq", lambda a: a.create_cq(4)),
    ("NdkCreatePd", lambda a: a.create_pd()),
    ("NdkCreateConnector", lambda a: a.create_connector()),
    ("NdkCreateListener", lambda a: a.create_listener()),
], ids=["cq", "pd", "connector", "listener"])
def test_async_failure_completes_once(adapter: ndk.Adapter, function: str,
                                      create: Callable[[ndk.Adapter], ndk.Call[ndk.Object]]) -> None:
    """digest 1.0: an asynchronous failure is STATUS_PENDING then exactly one completion
    with the failure status and no object (the provider must not touch the out-parameter);
    waiting longer does not bring a second completion."""
    adapter.knobs.fail(function, Status.INSUFFICIENT_RESOURCES, mode="async")
    call = create(adapter)
    expect_create_failed(call, Status.INSUFFICIENT_RESOURCES, "async")
    with pytest.raises(ndk.NdkError):
        call.get(timeout=TIMEOUT)
    assert call.completions == 1


@pytest.mark.rule("KNOB-FAIL-INLINE-IN-PENDING-MODE")
@pytest.mark.digest("1.0")
def test_inline_failure_while_creates_pend(open_adapter: OpenAdapter) -> None:
    """digest 1.0: "Any other return is inline: the provider must not call the completion":
    an inline failure injected while creates pend returns the status itself, with no
    completion, and the next create pends and succeeds."""
    adapter = open_adapter(create_mode="pending")
    adapter.knobs.fail("NdkCreatePd", Status.INSUFFICIENT_RESOURCES, mode="inline")
    expect_create_failed(adapter.create_pd(), Status.INSUFFICIENT_RESOURCES, "inline")
    expect_created(adapter.create_pd(), "pending")


@pytest.mark.rule("KNOB-FAIL-COUNT")
@pytest.mark.digest("1.0")
@pytest.mark.reference("KNOBS")
def test_fail_count(adapter: ndk.Adapter) -> None:
    """docs/semantics.md KNOBS (a reference choice: the harness's knobs, not NDK): a failure armed with count=2 fails exactly the next two calls of that function."""
    adapter.knobs.fail("NdkCreatePd", Status.INSUFFICIENT_RESOURCES, count=2)
    expect_create_failed(adapter.create_pd(), Status.INSUFFICIENT_RESOURCES, "inline")
    expect_create_failed(adapter.create_pd(), Status.INSUFFICIENT_RESOURCES, "inline")
    expect_created(adapter.create_pd(), "inline")


@pytest.mark.rule("KNOB-FAIL-EVERY")
@pytest.mark.digest("1.0")
@pytest.mark.reference("KNOBS")
def test_fail_every_until_cleared(adapter: ndk.Adapter) -> None:
    """docs/semantics.md KNOBS (a reference choice: the harness's knobs, not NDK): count=-1 fails every call until clear_failures(); then calls succeed again."""
    adapter.knobs.fail("NdkCreateCq", Status.INSUFFICIENT_RESOURCES, mode="async", count=-1)
    for _ in range(5):
        expect_create_failed(adapter.create_cq(4), Status.INSUFFICIENT_RESOURCES, "async")
    adapter.knobs.clear_failures()
    expect_created(adapter.create_cq(4), "inline")


@pytest.mark.rule("KNOB-FAIL-ONLY-NAMED")
@pytest.mark.digest("1.0")
@pytest.mark.reference("KNOBS")
def test_fail_only_the_named_function(adapter: ndk.Adapter) -> None:
    """docs/semantics.md KNOBS (a reference choice: the harness's knobs, not NDK): a failure armed for NdkCreatePd leaves every other function alone and stays armed
    for its own function."""
    adapter.knobs.fail("NdkCreatePd", Status.INSUFFICIENT_RESOURCES)
    expect_created(adapter.create_cq(4), "inline")
    expect_created(adapter.create_connector(), "inline")
    expect_create_failed(adapter.create_pd(), Status.INSUFFICIENT_RESOURCES, "inline")


@pytest.mark.rule("KNOB-FAIL-OTHER-STATUS")
@pytest.mark.digest("1.1")
@pytest.mark.parametrize("status", [Status.SHARING_VIOLATION, Status.INVALID_ADDRESS],
                         ids=["sharing-violation", "invalid-address"])
def test_documented_async_endpoint_failures(adapter: ndk.Adapter, status: Status) -> None:
    """digest 1.1 (NdkCreateSharedEndpoint: SHARING_VIOLATION and INVALID_ADDRESS are i/a):
    the status reaches the consumer through the completion unchanged, exactly once; the next
    create reaches the provider (the fault layer answers in front of it): it creates the
    endpoint, or, where shared endpoints are not implemented, the provider's own
    STATUS_NOT_SUPPORTED comes back."""
    adapter.knobs.fail("NdkCreateSharedEndpoint", status, mode="async")
    expect_create_failed(adapter.create_shared_endpoint(("0.0.0.0", 0)), status, "async")
    follow = adapter.create_shared_endpoint(("0.0.0.0", 0))
    if follow.wait(timeout=TIMEOUT) != Status.NOT_SUPPORTED:
        expect_created(follow, "inline")


# --- caps --------------------------------------------------------------------------------


@pytest.mark.rule("KNOB-CAP-PER-ADAPTER")
@pytest.mark.digest("3.7")
@pytest.mark.reference("CAPS")
def test_cap_is_per_adapter(open_adapter: OpenAdapter) -> None:
    """docs/semantics.md CAPS (a reference choice), digest 3.7: the caps are the miniport's,
    and each ndk.open_adapter opens its own: a full one does not limit another one."""
    full = open_adapter(max_pd_count=1)
    held = expect_created(full.create_pd(), "inline")
    expect_create_failed(full.create_pd(), Status.INSUFFICIENT_RESOURCES, "inline")
    other = open_adapter(max_pd_count=1)
    expect_created(other.create_pd(), "inline")
    assert held.is_open


# --- adapter info overrides --------------------------------------------------------------


@pytest.mark.rule("KNOB-INFO-OVERRIDE")
@pytest.mark.digest("2.1")
def test_info_fields_from_knobs(open_adapter: OpenAdapter) -> None:
    """digest 2.1: NDK_ADAPTER_INFO fields set by knobs at open are what NdkQueryAdapterInfo
    reports."""
    knobs = dict(max_cq_depth=16, max_srq_depth=0, max_receive_queue_depth=32,
                 max_inline_data_size=8, frmr_page_count=32, max_caller_data=20,
                 adapter_flags=int(ndk.AdapterFlag.IN_ORDER_DMA_SUPPORTED))
    adapter = open_adapter(**knobs)
    info = adapter.query_info()
    for field, value in knobs.items():
        assert int(getattr(info, field)) == value, field


@pytest.mark.rule("KNOB-INFO-RUNTIME")
@pytest.mark.digest("1.1")
def test_info_knob_at_run_time_is_enforced(adapter: ndk.Adapter) -> None:
    """digest 1.1: the CqDepth check uses the MaxCqDepth the adapter reports now: lowering
    it at run time makes a create above it fail with INVALID_PARAMETER."""
    adapter.knobs.max_cq_depth = 16
    assert adapter.query_info().max_cq_depth == 16
    expect_create_failed(adapter.create_cq(17), Status.INVALID_PARAMETER, "inline")
    expect_created(adapter.create_cq(16), "inline")


@pytest.mark.rule("KNOB-UNKNOWN")
@pytest.mark.digest("1.1")
@pytest.mark.reference("KNOBS")
def test_unknown_knob_is_rejected(ndk_provider: str, adapter: ndk.Adapter) -> None:
    """docs/semantics.md KNOBS (a reference choice: the harness's knobs, not NDK): an unknown knob is refused (ndk.KnobsNotSupported) at open and at run time; it is
    never silently ignored."""
    with pytest.raises(ndk.KnobsNotSupported):
        ndk.open_adapter(ndk_provider, no_such_knob=1)
    with pytest.raises(ndk.KnobsNotSupported):
        adapter.knobs.no_such_knob = 1


# --- random mode -------------------------------------------------------------------------


def _random_run(open_adapter: OpenAdapter, seed: int, count: int = 32) -> list[Status]:
    adapter = open_adapter(create_mode="random", seed=seed)
    calls = [adapter.create_pd() for _ in range(count)]
    for call in calls:
        how = "pending" if call.status == Status.PENDING else "inline"
        expect_created(call, how)
    return [call.status for call in calls]


@pytest.mark.rule("KNOB-RANDOM-REPRODUCIBLE")
@pytest.mark.digest("1.0")
@pytest.mark.reference("KNOBS")
def test_random_mode_is_reproducible(open_adapter: OpenAdapter) -> None:
    """docs/semantics.md KNOBS: create_mode="random" with a seed: the same seed gives the same sequence of inline and
    pending completions on a fresh adapter, and every call still follows digest 1.0 (inline
    SUCCESS and no completion, or PENDING and exactly one)."""
    first = _random_run(open_adapter, seed=20240611)
    second = _random_run(open_adapter, seed=20240611)
    assert first == second


@pytest.mark.rule("KNOB-RANDOM-MIXES")
@pytest.mark.digest("1.0")
@pytest.mark.reference("KNOBS")
def test_random_mode_mixes_both(open_adapter: OpenAdapter) -> None:
    """docs/semantics.md KNOBS (a reference choice: the harness's knobs, not NDK): create_mode="random" produces both inline and pending completions (fixed seed)."""
    statuses = set(_random_run(open_adapter, seed=7, count=64))
    assert statuses == {Status.SUCCESS, Status.PENDING}
