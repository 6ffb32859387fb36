"""Failures the fault layer injects (``adapter.knobs.fail``, docs/knobs.md) as the binding
reports them: INSUFFICIENT_RESOURCES, inline or asynchronously, for every create and request
that documents it (digest 1.1 - 1.4, 1.9) and as the "other" failure of NdkDeregisterMr and
NdkModifySrq (1.4, 1.6), with no object and no effect, and the next call reaching the provider
and succeeding.

These were scenarios: those of the ``*-RESOURCES`` rules, MR-DEREGISTER-FAILURE and
SRQ-MODIFY-FAILURE.  An injected failure never reaches the provider
(core/src/layers/fault/fault_forward.hpp returns it in the provider's place), so they passed
for every provider and judged none: what they check is the fault layer and the binding, which
is this suite's.  The *-RESOURCES rules now judge the provider by the counts it reports
(NDIS_NDK_CAPABILITIES, ndk.scenario.counts; docs/semantics.md CAPS); the other two left
scenarios/ (docs/semantics.md MR-IN-USE and SRQ-DEPTH say why)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import ndk
from ndk import Status
# ndk.testing first: it registers ndk.scenario for pytest's assertion rewriting, which must
# come before ndk.scenario is imported.
from ndk.testing import new_buffer
from ndk.scenario import TIMEOUT, V4, expect_create_failed, expect_created, expect_request

HOW = ["inline", "async"]


def _parents(adapter: ndk.Adapter) -> dict[str, Any]:
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    return {"pd": pd, "cq": cq, "srq": pd.create_srq(4).get(timeout=TIMEOUT)}


# Function name -> one call of it, given the adapter and its parents.
CREATES: dict[str, Callable[[ndk.Adapter, dict[str, Any]], ndk.Call[Any]]] = {
    "NdkCreatePd": lambda a, p: a.create_pd(),
    "NdkCreateCq": lambda a, p: a.create_cq(4),
    "NdkCreateConnector": lambda a, p: a.create_connector(),
    "NdkCreateListener": lambda a, p: a.create_listener(),
    "NdkCreateSharedEndpoint": lambda a, p: a.create_shared_endpoint((V4, 7001)),
    "NdkCreateMr": lambda a, p: p["pd"].create_mr(),
    "NdkCreateMw": lambda a, p: p["pd"].create_mw(),
    "NdkCreateSrq": lambda a, p: p["pd"].create_srq(8),
    "NdkCreateQp": lambda a, p: p["pd"].create_qp(p["cq"], p["cq"]),
    "NdkCreateQpWithSrq": lambda a, p: p["pd"].create_qp_with_srq(p["cq"], p["cq"], p["srq"]),
}


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("function", sorted(CREATES))
def test_injected_create_failure(function: str, how: str) -> None:
    with ndk.open_adapter("soft", address=V4) as adapter:
        parents = _parents(adapter)
        adapter.knobs.fail(function, Status.INSUFFICIENT_RESOURCES, mode=how)
        expect_create_failed(CREATES[function](adapter, parents), Status.INSUFFICIENT_RESOURCES,
                             how)
        expect_created(CREATES[function](adapter, parents), "i/a")


@pytest.mark.parametrize("how", HOW)
def test_injected_listen_failure_leaves_the_port_free(how: str) -> None:
    with ndk.open_adapter("soft", address=V4) as adapter:
        listener = adapter.create_listener().get(timeout=TIMEOUT)
        adapter.knobs.fail("NdkListen", Status.INSUFFICIENT_RESOURCES, mode=how)
        expect_request(listener.listen((V4, 6011)), how, Status.INSUFFICIENT_RESOURCES)
        other = adapter.create_listener().get(timeout=TIMEOUT)
        expect_request(other.listen((V4, 6011)), "i/a")


@pytest.mark.parametrize("how", HOW)
def test_injected_register_failure_leaves_the_mr_unregistered(how: str) -> None:
    with ndk.open_adapter("soft") as adapter:
        mr = adapter.create_pd().get(timeout=TIMEOUT).create_mr().get(timeout=TIMEOUT)
        buffer = new_buffer(adapter, 4096)
        adapter.knobs.fail("NdkRegisterMr", Status.INSUFFICIENT_RESOURCES, mode=how)
        expect_request(mr.register(buffer), how, Status.INSUFFICIENT_RESOURCES)
        assert mr.length == 0
        expect_request(mr.register(buffer), "i/a")
        assert mr.length == 4096


@pytest.mark.parametrize("how", HOW)
def test_injected_resize_failure_leaves_the_cq_usable(how: str) -> None:
    with ndk.open_adapter("soft") as adapter:
        cq = adapter.create_cq(4).get(timeout=TIMEOUT)
        adapter.knobs.fail("NdkResizeCq", Status.INSUFFICIENT_RESOURCES, mode=how)
        expect_request(cq.resize_cq(8), how, Status.INSUFFICIENT_RESOURCES)
        expect_request(cq.resize_cq(8), "i/a")


def test_injected_moderation_failure_is_inline() -> None:
    """NdkControlCqInterruptModeration has no completion: the failure is inline."""
    with ndk.open_adapter("soft") as adapter:
        cq = adapter.create_cq(8).get(timeout=TIMEOUT)
        adapter.knobs.fail("NdkControlCqInterruptModeration", Status.INSUFFICIENT_RESOURCES)
        assert cq.control_cq_interrupt_moderation(10, 2) == Status.INSUFFICIENT_RESOURCES
        assert cq.control_cq_interrupt_moderation(10, 2) == Status.SUCCESS


@pytest.mark.parametrize("how", HOW)
def test_injected_fast_register_initialize_failure_leaves_the_mr_uninitialized(how: str) -> None:
    """What scenario MR-FRMR-INITIALIZE-FAILURE checked: NDK states no AdapterPageCount that
    every provider refuses (docs/semantics.md FRMR-LIMIT), so the refusal a scenario can
    produce is soft's choice, MR-FRMR-PAGE-LIMIT's."""
    with ndk.open_adapter("soft") as adapter:
        pd = adapter.create_pd().get(timeout=TIMEOUT)
        mr = pd.create_mr(fast_register=True).get(timeout=TIMEOUT)
        adapter.knobs.fail("NdkInitializeFastRegisterMr", Status.IMPLEMENTATION_LIMIT, mode=how)
        expect_request(mr.initialize_fast_register_mr(16), how, Status.IMPLEMENTATION_LIMIT)
        assert (mr.local_token, mr.remote_token) == (0, 0)
        expect_request(mr.initialize_fast_register_mr(16), "i/a")
        assert mr.local_token != 0


@pytest.mark.parametrize("how", HOW)
def test_injected_deregister_failure_keeps_the_registration(how: str) -> None:
    """What scenario MR-DEREGISTER-FAILURE checked: NdkDeregisterMr's page names no condition
    for a failure (SUCCESS; PENDING; other, digest 1.4), so the provider-made refusal a
    scenario can produce is soft's choice MR-IN-USE, SEND-SOURCE-IN-USE's."""
    with ndk.open_adapter("soft") as adapter:
        mr = adapter.create_pd().get(timeout=TIMEOUT).create_mr().get(timeout=TIMEOUT)
        expect_request(mr.register(new_buffer(adapter, 4096)), "i/a")
        tokens = (mr.local_token, mr.remote_token)
        adapter.knobs.fail("NdkDeregisterMr", Status.INSUFFICIENT_RESOURCES, mode=how)
        expect_request(mr.deregister_mr(), how, Status.INSUFFICIENT_RESOURCES)
        assert (mr.local_token, mr.remote_token) == tokens
        assert mr.length == 4096
        expect_request(mr.deregister_mr(), "i/a")
        assert mr.length == 0


@pytest.mark.parametrize("how", HOW)
def test_injected_srq_modify_failure_keeps_the_depth(how: str) -> None:
    """What scenario SRQ-MODIFY-FAILURE checked: the one failure NdkModifySrq's page names a
    condition for is INVALID_PARAMETER above MaxSrqDepth (digest 1.6), SRQ-MODIFY-DEPTH's; an
    "other" failure only the fault layer makes.  The SRQ keeps its depth of 1: a second
    receive is refused (soft's QUEUE-FULL) and the retried modify takes effect."""
    with ndk.open_adapter("soft") as adapter:
        pd = adapter.create_pd().get(timeout=TIMEOUT)
        mr = pd.create_mr().get(timeout=TIMEOUT)
        expect_request(mr.register(new_buffer(adapter, 4096), flags=ndk.MrFlag.ALLOW_LOCAL_WRITE),
                       "i/a")
        srq = pd.create_srq(1).get(timeout=TIMEOUT)
        adapter.knobs.fail("NdkModifySrq", Status.INSUFFICIENT_RESOURCES, mode=how)
        expect_request(srq.modify_srq(srq_depth=4), how, Status.INSUFFICIENT_RESOURCES)
        assert srq.srq_receive([mr.sge(0, 64)], request_context=1) == Status.SUCCESS
        assert srq.srq_receive([mr.sge(64, 64)], request_context=2) == Status.NO_MORE_ENTRIES
        expect_request(srq.modify_srq(srq_depth=4), "i/a")
        assert srq.srq_receive([mr.sge(64, 64)], request_context=2) == Status.SUCCESS


# What the KNOB-FAIL-* scenarios checked: the fail knob itself (docs/knobs.md, docs/semantics.md
# KNOBS), the layer in front of every provider, so no provider was judged by them.


@pytest.mark.parametrize("function", ["NdkCreateCq", "NdkCreatePd", "NdkCreateConnector",
                                      "NdkCreateListener"])
def test_an_async_failure_completes_once(function: str) -> None:
    """STATUS_PENDING, then exactly one completion with the status and no object (digest
    1.0); waiting longer brings no second completion."""
    with ndk.open_adapter("soft") as adapter:
        adapter.knobs.fail(function, Status.INSUFFICIENT_RESOURCES, mode="async")
        call = CREATES[function](adapter, {})  # none of these needs a parent
        expect_create_failed(call, Status.INSUFFICIENT_RESOURCES, "async")
        with pytest.raises(ndk.NdkError):
            call.get(timeout=TIMEOUT)
        assert call.completions == 1


def test_an_inline_failure_while_creates_pend() -> None:
    """An inline failure armed while creates pend returns the status itself, with no
    completion (digest 1.0: "any other return is inline"), and the next create pends."""
    with ndk.open_adapter("soft", create_mode="pending") as adapter:
        adapter.knobs.fail("NdkCreatePd", Status.INSUFFICIENT_RESOURCES, mode="inline")
        expect_create_failed(adapter.create_pd(), Status.INSUFFICIENT_RESOURCES, "inline")
        expect_created(adapter.create_pd(), "pending")


def test_a_count_fails_exactly_that_many_calls() -> None:
    with ndk.open_adapter("soft") as adapter:
        adapter.knobs.fail("NdkCreatePd", Status.INSUFFICIENT_RESOURCES, count=2)
        expect_create_failed(adapter.create_pd(), Status.INSUFFICIENT_RESOURCES, "inline")
        expect_create_failed(adapter.create_pd(), Status.INSUFFICIENT_RESOURCES, "inline")
        expect_created(adapter.create_pd(), "inline")


def test_count_minus_one_fails_every_call_until_cleared() -> None:
    with ndk.open_adapter("soft") as adapter:
        adapter.knobs.fail("NdkCreateCq", Status.INSUFFICIENT_RESOURCES, mode="async", count=-1)
        for _ in range(5):
            expect_create_failed(adapter.create_cq(4), Status.INSUFFICIENT_RESOURCES, "async")
        adapter.knobs.clear_failures()
        expect_created(adapter.create_cq(4), "inline")


def test_only_the_named_function_fails() -> None:
    """A failure armed for NdkCreatePd leaves every other function alone and stays armed for
    its own."""
    with ndk.open_adapter("soft") as adapter:
        adapter.knobs.fail("NdkCreatePd", Status.INSUFFICIENT_RESOURCES)
        expect_created(adapter.create_cq(4), "inline")
        expect_created(adapter.create_connector(), "inline")
        expect_create_failed(adapter.create_pd(), Status.INSUFFICIENT_RESOURCES, "inline")


@pytest.mark.parametrize("status", [Status.SHARING_VIOLATION, Status.INVALID_ADDRESS],
                         ids=["sharing-violation", "invalid-address"])
def test_a_documented_endpoint_failure_reaches_the_consumer_unchanged(status: Status) -> None:
    """NdkCreateSharedEndpoint's (i/a) statuses (digest 1.1) come through the completion
    unchanged, exactly once; the next create reaches the provider and creates the endpoint."""
    with ndk.open_adapter("soft", address=V4) as adapter:
        adapter.knobs.fail("NdkCreateSharedEndpoint", status, mode="async")
        expect_create_failed(adapter.create_shared_endpoint((V4, 0)), status, "async")
        expect_created(adapter.create_shared_endpoint((V4, 0)), "inline")
