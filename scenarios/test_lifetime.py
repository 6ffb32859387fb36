"""Object lifetime and close ordering (digest 1.0 "Close", 3.1)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

import ndk
from ndk import CqNotify, Status
from ndk.testing import OpenAdapter, requires

from ndk.scenario import (TIMEOUT, expect_call, expect_closed, make_objects, post_receives,
                          quiet_period)
from ndk.scenario.connection import adapters  # noqa: F401  (fixture)
from ndk.scenario.connection import expect_cancelled_receives
from ndk.scenario.resources import connected_pair


def expect_close_pends(call: ndk.Call[None], adapter: ndk.Adapter) -> None:
    """The close of an antecedent/parent with live successors: STATUS_PENDING, and no close
    completion yet (digest 3.1), within QUIET or until ``adapter``'s provider says nothing can
    happen until a call (quiet_period)."""
    assert call.status == Status.PENDING
    assert call.completions == 0
    assert call.completion_status is None
    with pytest.raises(TimeoutError):
        call.wait(timeout=quiet_period(adapter))
    assert call.completions == 0


def expect_close_completed(call: ndk.Call[None]) -> None:
    """The pended close completes exactly once, with STATUS_SUCCESS."""
    assert call.wait(timeout=TIMEOUT) == Status.SUCCESS
    assert call.completions == 1
    assert call.completion_status == Status.SUCCESS


def registered_mr(pd: ndk.Pd, memory: bytearray) -> ndk.Mr:
    mr = pd.create_mr().get(timeout=TIMEOUT)
    assert mr.register(memory, flags=ndk.MrFlag.ALLOW_LOCAL_WRITE).wait(
        timeout=TIMEOUT) == Status.SUCCESS
    return mr


# --- antecedents -------------------------------------------------------------------------


@pytest.mark.rule("LIFETIME-ANTECEDENT-PENDS")
@pytest.mark.digest("3.1")
@pytest.mark.parametrize("role", ["both", "receive", "initiator"])
def test_cq_close_pends_until_qp_closes(adapter: ndk.Adapter, pd: ndk.Pd, role: str) -> None:
    """digest 3.1: closing an antecedent (CQ) before its successor (QP) is allowed; the
    provider returns STATUS_PENDING and completes the close once all successors are closed
    (completions == 0 before, == 1 after)."""
    first = adapter.create_cq(8).get(timeout=TIMEOUT)
    second = adapter.create_cq(8).get(timeout=TIMEOUT) if role != "both" else first
    qp = pd.create_qp(first, second).get(timeout=TIMEOUT)
    antecedent = first if role in ("both", "receive") else second
    close = antecedent.close()
    expect_close_pends(close, adapter)
    expect_closed(qp.close())
    expect_close_completed(close)


@pytest.mark.rule("LIFETIME-ANTECEDENT-ALL-SUCCESSORS")
@pytest.mark.digest("3.1")
def test_cq_close_waits_for_every_qp(adapter: ndk.Adapter, pd: ndk.Pd) -> None:
    """digest 3.1: the antecedent's close completes once *all* successors are closed: with
    two QPs on the CQ, closing the first is not enough."""
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    first = pd.create_qp(cq, cq).get(timeout=TIMEOUT)
    second = pd.create_qp(cq, cq).get(timeout=TIMEOUT)
    close = cq.close()
    expect_close_pends(close, adapter)
    expect_closed(first.close())
    expect_close_pends(close, adapter)
    expect_closed(second.close())
    expect_close_completed(close)


@pytest.mark.rule("LIFETIME-SRQ-ANTECEDENT-PENDS")
@pytest.mark.digest("3.1")
def test_srq_close_pends_until_qp_closes(open_adapter: OpenAdapter) -> None:
    """digest 3.1: SRQ -> QP is an antecedent/successor pair; closing the SRQ first returns
    STATUS_PENDING and completes once the QP is closed."""
    adapter = open_adapter()
    requires(adapter, max_srq_depth=1)
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    srq = pd.create_srq(4).get(timeout=TIMEOUT)
    qp = pd.create_qp_with_srq(cq, cq, srq).get(timeout=TIMEOUT)
    close = srq.close()
    expect_close_pends(close, adapter)
    expect_closed(qp.close())
    expect_close_completed(close)


@pytest.mark.rule("LIFETIME-PENDING-CLOSE-CANCELS")
@pytest.mark.digest("3.1")
@pytest.mark.parametrize("role", ["active", "passive"])
def test_pending_qp_close_cancels_requests(adapters: tuple[ndk.Adapter, ndk.Adapter],
                                           role: str) -> None:
    """digest 3.1: the QP is the antecedent of its connector, so closing a connected QP with
    its connector open returns STATUS_PENDING and completes once the connector is closed; and
    "a close must itself start flushing or cancelling pending asynchronous requests": the
    receives posted on it complete STATUS_CANCELLED, in order (digest 4.2), while the close
    still pends.  The connector's close then completes the QP's close, exactly once."""
    a, b = connected_pair(*adapters)
    side = a if role == "active" else b
    contexts = [0x300, 0x301, 0x302]
    post_receives(side.qp, side.mr, contexts, length=256)
    close = side.qp.close()
    assert close.status == Status.PENDING
    expect_cancelled_receives(side, contexts)
    assert close.completions == 0
    expect_closed(side.connector.close())
    expect_close_completed(close)


@pytest.mark.rule("LIFETIME-ANTECEDENT-AFTER-SUCCESSOR-COMPLETION")
@pytest.mark.digest("3.1")
def test_antecedent_close_completes_after_successor_close(open_adapter: OpenAdapter) -> None:
    """digest 3.1: the provider must not complete an antecedent's close while a successor's
    close completion is still running: with pended closes, the QP's close completion has
    fired by the time the CQ's has."""
    adapter = open_adapter(close_mode="pending")
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    qp = pd.create_qp(cq, cq).get(timeout=TIMEOUT)
    cq_close = cq.close()
    expect_close_pends(cq_close, adapter)
    qp_close = qp.close()
    assert qp_close.status == Status.PENDING
    expect_close_completed(cq_close)
    assert qp_close.completions == 1
    assert qp_close.completion_status == Status.SUCCESS


@pytest.mark.rule("LIFETIME-ORDERED-CLOSE-INLINE")
@pytest.mark.digest("3.1")
def test_close_successors_first(adapter: ndk.Adapter) -> None:
    """digest 1.0, 3.1: closing successors and children before antecedents and parents:
    every close succeeds, STATUS_SUCCESS inline with no close completion (as the soft
    provider closes) or STATUS_PENDING and one completion (digest 1.0 allows either)."""
    objects = make_objects(adapter)
    order = ["qp_with_srq", "qp", "srq", "mw", "mr", "frmr", "pd", "cq", "connector",
             "listener", "shared_endpoint"]
    for name in order:
        if name in objects:
            expect_closed(objects[name].close())
            assert objects[name].closed, name


# --- parents -----------------------------------------------------------------------------


_Created = TypeVar("_Created", bound=ndk.Object)


def _optional(call: ndk.Call[_Created], what: str) -> _Created:
    """The object of a create of an optional kind; a provider that implements none (the create
    fails STATUS_NOT_SUPPORTED, as the loop provider's memory windows and shared endpoints)
    skips the scenario, which is not about that kind's support."""
    if call.wait(timeout=TIMEOUT) == Status.NOT_SUPPORTED:
        pytest.skip(f"the provider implements no {what}: its create returns "
                    "STATUS_NOT_SUPPORTED")
    return call.get(timeout=TIMEOUT)


def _child(kind: str, adapter: ndk.Adapter, pd: ndk.Pd) -> ndk.Object:
    if kind == "mr":
        return pd.create_mr().get(timeout=TIMEOUT)
    if kind == "frmr":
        requires(adapter, frmr_page_count=1)
        return _optional(pd.create_mr(fast_register=True), "fast-register MR")
    if kind == "mw":
        return _optional(pd.create_mw(), "memory window")
    if kind == "srq":
        requires(adapter, max_srq_depth=1)
        return pd.create_srq(4).get(timeout=TIMEOUT)
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    return pd.create_qp(cq, cq).get(timeout=TIMEOUT)


@pytest.mark.rule("LIFETIME-PARENT-PD-PENDS")
@pytest.mark.digest("3.1")
@pytest.mark.reference("PARENT")
@pytest.mark.parametrize("kind", ["mr", "frmr", "mw", "qp", "srq"])
def test_pd_close_pends_until_children_close(adapter: ndk.Adapter, kind: str) -> None:
    """digest 3.1 (the PD is the parent of MR, MW, QP and SRQ) names only antecedents'
    closes as pending until their successors close. docs/semantics.md PARENT (a reference
    choice): closing a PD with open children returns PENDING and completes once they are
    closed, like an antecedent."""
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    child = _child(kind, adapter, pd)
    close = pd.close()
    expect_close_pends(close, adapter)
    expect_closed(child.close())
    expect_close_completed(close)


@pytest.mark.rule("LIFETIME-PARENT-PD-ALL-CHILDREN")
@pytest.mark.digest("3.1")
@pytest.mark.reference("PARENT")
def test_pd_close_waits_for_every_child(adapter: ndk.Adapter, buffer: bytearray) -> None:
    """digest 3.1 is silent on closing a parent before its children. docs/semantics.md PARENT
    (a reference choice): the PD's close completes only after its last child (here a
    registered MR, an MW and a QP) is closed."""
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    children = [registered_mr(pd, buffer), pd.create_mw().get(timeout=TIMEOUT),
                _child("qp", adapter, pd)]
    close = pd.close()
    expect_close_pends(close, adapter)
    for child in children[:-1]:
        expect_closed(child.close())
        expect_close_pends(close, adapter)
    expect_closed(children[-1].close())
    expect_close_completed(close)


# --- adapter close -----------------------------------------------------------------------


@pytest.mark.rule("LIFETIME-ADAPTER-CLOSE-COMPLETES-PENDING")
@pytest.mark.digest("3.1")
def test_adapter_close_completes_pending_closes(open_adapter: OpenAdapter) -> None:
    """digest 3.1: the adapter close is blocking; when it returns, every callback on every
    descendant has returned: a close that was pending on a successor (CQ with a QP, PD with
    an MR) has completed exactly once with SUCCESS."""
    adapter = open_adapter()
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    qp = pd.create_qp(cq, cq).get(timeout=TIMEOUT)
    mr = pd.create_mr().get(timeout=TIMEOUT)
    cq_close, pd_close = cq.close(), pd.close()
    expect_close_pends(cq_close, adapter)
    expect_close_pends(pd_close, adapter)
    adapter.close()
    for close in (cq_close, pd_close):
        assert close.done
        assert close.completions == 1
        assert close.completion_status == Status.SUCCESS
    assert qp.closed and mr.closed


@pytest.mark.rule("LIFETIME-NO-CALLBACK-AFTER-CLOSE")
@pytest.mark.digest("3.1")
def test_no_notification_after_close(adapter: ndk.Adapter, pd: ndk.Pd, buffer: bytearray) -> None:
    """digest 3.1: no callback may occur after the close completion. An armed CQ whose QP is
    closed with receives queued (the QP close cancels them, which may notify) gets no
    notification once its own close has completed."""
    cq = adapter.create_cq(8).get(timeout=TIMEOUT)
    mr = registered_mr(pd, buffer)
    qp = pd.create_qp(cq, cq).get(timeout=TIMEOUT)
    post_receives(qp, mr, [1, 2, 3])
    cq.arm(CqNotify.ANY)
    close = cq.close()
    expect_close_pends(close, adapter)
    expect_closed(qp.close())
    expect_close_completed(close)
    seen = cq.notifications
    assert seen <= 1  # once per arm
    for _ in range(seen):  # the one made before the close completed, if any
        assert cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    time.sleep(quiet_period(cq))  # a wait on the closed CQ raises (docs/semantics.md, WAIT-CLOSED)
    assert cq.notifications == seen


@pytest.mark.rule("LIFETIME-CLOSED-OBJECT-RAISES")
@pytest.mark.digest("3.1")
@pytest.mark.parametrize("kind", ["cq", "pd", "mr", "frmr", "mw", "srq", "qp", "listener",
                                  "shared_endpoint"])
def test_closed_object_cannot_be_used(adapter: ndk.Adapter, kind: str) -> None:
    """digest 3.1: "The consumer will not use [an object] after closing it"; the Python API
    enforces it with ndk.ObjectClosedError (never a crash). docs/semantics.md: adapter
    close.  Only the object of the parameter's kind is made (with its parent), so a provider
    without an optional kind skips that kind alone."""
    obj: Any = _lone(kind, adapter)  # the methods below are each of one kind
    expect_closed(obj.close())
    use: Callable[[], object] = {
        "cq": lambda: obj.get_results(1),
        "pd": lambda: obj.create_mw(),
        "mr": lambda: obj.register(bytearray(4096)),
        "frmr": lambda: obj.initialize_fast_register_mr(16),
        "mw": lambda: obj.get_remote_token_from_mw(),
        "srq": lambda: obj.modify_srq(srq_depth=8),
        "qp": lambda: obj.flush(),
        "listener": lambda: obj.listen(("0.0.0.0", 0)),
        "shared_endpoint": lambda: obj.get_local_address(),
    }[kind]
    with pytest.raises(ndk.ObjectClosedError):
        use()


def _lone(kind: str, adapter: ndk.Adapter) -> ndk.Object:
    """A ``kind`` object with no successor or child (its parent PD/CQ stay open)."""
    if kind == "cq":
        return adapter.create_cq(8).get(timeout=TIMEOUT)
    if kind == "connector":
        return adapter.create_connector().get(timeout=TIMEOUT)
    if kind == "listener":
        return adapter.create_listener().get(timeout=TIMEOUT)
    if kind == "shared_endpoint":
        return _optional(adapter.create_shared_endpoint(("0.0.0.0", 0)), "shared endpoint")
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    if kind == "pd":
        return pd
    return _child(kind, adapter, pd)


@pytest.mark.rule("LIFETIME-CLOSE-PENDING-COMPLETES-ONCE")
@pytest.mark.digest("1.0")
@pytest.mark.parametrize("kind", ["cq", "pd", "mr", "frmr", "mw", "srq", "qp", "connector",
                                  "listener", "shared_endpoint"])
def test_pending_close_completes_once(open_adapter: OpenAdapter, kind: str) -> None:
    """digest 1.0 (Close: STATUS_PENDING, then NdkCloseCompletion later, "a close request
    can never fail"). docs/semantics.md: CLOSE-MODE (close_mode="pending": PENDING, then
    exactly one completion with SUCCESS)."""
    adapter = open_adapter(close_mode="pending")
    obj = _lone(kind, adapter)
    expect_call(obj.close(), Status.SUCCESS, "pending")
    assert obj.closed
