"""Assertion helpers shared by the conformance scenarios (public ``ndk`` API only).

Every helper asserts the exact status, the number of completion callbacks and the status the
completion reported, following the three ways a call can complete (digest 1.0):

* inline:  the call returns its final status; the completion is never called;
* pending: the call returns STATUS_PENDING; the completion is called exactly once, later,
  with the final status.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any, Literal, TypeVar, Union, overload

import ndk
from ndk import Status

TIMEOUT = 5.0   # seconds, bounding every wait (float: see CQ-NOTIFICATION-WAIT-INT-TIMEOUT)
QUIET = 0.2     # seconds to wait for something that must NOT happen (a notification, a callback)

CREATE_MODES = ("inline", "pending")   # values of the create_mode / request_mode knobs
FAILURE_MODES = ("inline", "async")    # values of knobs.fail(..., mode=)

# The adapters' addresses where a scenario needs to know them (soft knob address=).
V4 = "192.0.2.10"
V6 = "2001:db8::10"
V4_OTHER = "192.0.2.20"
NOT_OURS = "203.0.113.9"   # TEST-NET-3: no adapter owns it
EPHEMERAL = range(49152, 65536)

_O = TypeVar("_O", bound=ndk.Object)



def expect_call(call: ndk.Call[object], status: Status, how: str) -> None:
    """Assert that ``call`` ended with ``status``, inline (how="inline") or through exactly one
    completion after STATUS_PENDING (how="pending" or "async"); how="i/a": either, where the
    digest marks the status "(i/a)" and the provider may find it late (a real network's
    refusal arrives after the call returned)."""
    if how == "i/a":
        how = "inline" if call.status != Status.PENDING else "pending"
    if how == "inline":
        assert call.status == status
        assert call.done
        assert call.completions == 0
        assert call.completion_status is None
        assert call.wait(timeout=TIMEOUT) == status
    else:
        assert how in ("pending", "async"), how
        assert call.status == Status.PENDING
        assert call.wait(timeout=TIMEOUT) == status
        assert call.completions == 1
        assert call.completion_status == status
    assert call.completions == (0 if how == "inline" else 1)


def expect_created(call: ndk.Call[_O], mode: str) -> _O:
    """Assert a successful create (inline or pending) and return the open object."""
    expect_call(call, Status.SUCCESS, mode)
    obj = call.object
    assert obj is not None
    assert obj.is_open and not obj.closed
    assert obj.version == obj.adapter.version
    return obj


def expect_create_failed(call: ndk.Call[object], status: Status, how: str = "inline") -> None:
    """Assert a failed create: ``status`` inline or through the completion; no object."""
    expect_call(call, status, how)
    assert call.object is None
    try:
        call.get(timeout=TIMEOUT)
    except ndk.NdkError as error:
        assert error.status == status
    else:  # pragma: no cover - the assertion below reports it
        raise AssertionError("Call.get() returned an object for a failed create")


def expect_request(call: ndk.Call[object], mode: str, status: Status = Status.SUCCESS) -> None:
    """Assert an async request (register, resize, listen, ...) ended with ``status``."""
    expect_call(call, status, mode)
    assert call.object is None


def expect_closed(call: ndk.Call[object]) -> None:
    """Assert a close that completed inline (STATUS_SUCCESS, no close completion)."""
    expect_call(call, Status.SUCCESS, "inline")


def post_receives(qp_or_srq: Union[ndk.Qp, ndk.Srq], mr: ndk.Mr, contexts: Iterable[int],
                  length: int = 64) -> None:
    """Post one single-SGE receive per request context; each must succeed inline."""
    post = qp_or_srq.srq_receive if isinstance(qp_or_srq, ndk.Srq) else qp_or_srq.receive
    for index, context in enumerate(contexts):
        assert post([mr.sge(index * length, length)], request_context=context) == Status.SUCCESS


@overload
def poll(cq: ndk.Cq, n: int, ex: Literal[True] = True,
         timeout: float = TIMEOUT) -> list[ndk.ResultEx]: ...
@overload
def poll(cq: ndk.Cq, n: int, ex: bool, timeout: float = TIMEOUT) -> Sequence[Any]: ...
def poll(cq: ndk.Cq, n: int, ex: bool = True,
         timeout: float = TIMEOUT) -> Sequence[Any]:
    """The first non-empty NdkGetCqResults(Ex)(cq, n) within ``timeout`` ([] if none)."""
    deadline = time.monotonic() + timeout
    while True:
        got: Sequence[Any]
        if ex:
            got = cq.get_results_ex(n)
        else:
            got = cq.get_results(n)
        if got or time.monotonic() >= deadline:
            return got
        time.sleep(0.001)


@overload
def drain(cq: ndk.Cq, expected: int, ex: Literal[True] = True,
          timeout: float = TIMEOUT) -> list[ndk.ResultEx]: ...
@overload
def drain(cq: ndk.Cq, expected: int, ex: bool, timeout: float = TIMEOUT) -> list[Any]: ...
def drain(cq: ndk.Cq, expected: int, ex: bool = True, timeout: float = TIMEOUT) -> list[Any]:
    """Collect ``expected`` entries (NDK_RESULT_EX, or NDK_RESULT with ex=False) from ``cq``
    within ``timeout``, then check that no further entry is there."""
    results: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(results) < expected:
        got = poll(cq, expected - len(results), ex, max(0.0, deadline - time.monotonic()))
        if not got:
            break
        results.extend(got)
    assert len(results) == expected, f"{len(results)} of {expected} completions arrived"
    assert cq.get_results_ex(16) == []
    return results


def open_listening(adapter: ndk.Adapter, address: tuple[str, int]) -> ndk.Listener:
    """A listener listening on ``address`` (must succeed)."""
    listener = adapter.create_listener().get(timeout=TIMEOUT)
    assert listener.listen(address).wait(timeout=TIMEOUT) == Status.SUCCESS
    return listener


def make_objects(adapter: ndk.Adapter) -> dict[str, Any]:
    """One object of every NDK object type on ``adapter`` (SRQ ones only if supported)."""
    objects: dict[str, Any] = {}
    objects["cq"] = cq = adapter.create_cq(16).get(timeout=TIMEOUT)
    objects["pd"] = pd = adapter.create_pd().get(timeout=TIMEOUT)
    objects["mr"] = pd.create_mr().get(timeout=TIMEOUT)
    objects["frmr"] = pd.create_mr(fast_register=True).get(timeout=TIMEOUT)
    objects["mw"] = pd.create_mw().get(timeout=TIMEOUT)
    objects["qp"] = pd.create_qp(cq, cq).get(timeout=TIMEOUT)
    if adapter.query_info().max_srq_depth >= 1:
        objects["srq"] = srq = pd.create_srq(8).get(timeout=TIMEOUT)
        objects["qp_with_srq"] = pd.create_qp_with_srq(cq, cq, srq).get(timeout=TIMEOUT)
    objects["connector"] = adapter.create_connector().get(timeout=TIMEOUT)
    objects["listener"] = adapter.create_listener().get(timeout=TIMEOUT)
    objects["shared_endpoint"] = adapter.create_shared_endpoint(("0.0.0.0", 0)).get(
        timeout=TIMEOUT)
    return objects


OBJECT_TYPES = {
    "cq": ndk.ObjectType.CQ, "pd": ndk.ObjectType.PD, "mr": ndk.ObjectType.MR,
    "frmr": ndk.ObjectType.MR, "mw": ndk.ObjectType.MW, "qp": ndk.ObjectType.QP,
    "srq": ndk.ObjectType.SRQ, "qp_with_srq": ndk.ObjectType.QP,
    "connector": ndk.ObjectType.CONNECTOR, "listener": ndk.ObjectType.LISTENER,
    "shared_endpoint": ndk.ObjectType.SHARED_ENDPOINT,
}
