"""Helpers of the conformance scenarios, installed with the package so that a scenario file
runs from any folder (public ``ndk`` API only).

* ``ndk.scenario`` (this module): timeouts, the addresses the scenarios give adapters, the
  assertion helpers every scenario family uses, and from ``ndk.scenario.resources`` ``Side``
  (one end of a connection) and ``listening``;
* ``ndk.scenario.resources``: the resource builder: every connected pair of the scenarios
  (``Side``, ``connect_sides``, ``connected_pair``), and the ``pair`` fixture's;
* ``ndk.scenario.connection``: the connection handshake step by step, and the ``adapter`` /
  ``adapters`` fixtures of the connection scenarios;
* ``ndk.scenario.completion``: connected pairs with registered buffers, posts and waits;
* ``ndk.scenario.work_requests``: registered regions, fast registration, result checks;
* ``ndk.scenario.counts``: the object counts a miniport reports (NDIS_NDK_CAPABILITIES) and
  the check that a create beyond one fails;
* ``ndk.scenario.stated``: ``stated``, what NDK states inside a reference-choice scenario (a
  failure there is a failure, not a difference).

The fixtures ``buffer``, ``mr`` and ``qp`` come with the pytest plugin (``ndk.testing``),
which also has pytest rewrite the assertions of these modules.

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
from ndk import MrFlag, Status
from ndk.testing import new_buffer

from .stated import stated

__all__ = [
    "ALL_ACCESS", "BUFFER_SIZE", "CLIENT", "CLIENT6", "CREATE_MODES", "EPHEMERAL",
    "FAILURE_MODES", "LOOPBACK", "MAXULONG", "OBJECT_TYPES", "QUIET", "SERVER", "SERVER6",
    "THIRD", "TIMEOUT", "UNOWNED", "V4", "V4_OTHER", "V6", "Side", "drain", "expect_call",
    "expect_closed", "expect_create_failed", "expect_created", "expect_failed",
    "expect_no_completion",
    "expect_request", "listening", "make_objects", "pattern", "poll", "post_receives",
    "quiet_period", "register", "reported", "set_adapter_flags", "shrink_limits",
]

TIMEOUT = 5.0   # seconds, bounding every wait (float: see CQ-NOTIFICATION-WAIT-INT-TIMEOUT)
QUIET = 0.2     # seconds to wait for something that must NOT happen (a notification, a callback)
QUIET_LOOK = 0.001  # seconds between two looks at the provider's `quiescent` within QUIET

CREATE_MODES = ("inline", "pending")   # values of the create_mode / request_mode knobs
FAILURE_MODES = ("inline", "async")    # values of knobs.fail(..., mode=)

# The adapters' addresses where a scenario needs to know them (soft knob address=): one
# adapter (V4, V6, V4_OTHER), a connected pair (CLIENT, SERVER, a THIRD), one adapter holding
# both ends (LOOPBACK).  Every adapter open at once gets its own.
V4 = "192.0.2.10"
V6 = "2001:db8::10"
V4_OTHER = "192.0.2.20"
CLIENT = "192.0.2.31"
SERVER = "192.0.2.32"
THIRD = "192.0.2.33"
LOOPBACK = "192.0.2.53"
CLIENT6 = "2001:db8::31"
SERVER6 = "2001:db8::32"
UNOWNED = "203.0.113.77"       # TEST-NET-3: no adapter owns it
EPHEMERAL = range(49152, 65536)

MAXULONG = 0xFFFFFFFF
BUFFER_SIZE = 64 * 1024
# What a side's registered buffer may be used for: everything (a read sink needs
# RDMA_READ_SINK unless the adapter sets NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED, 1.4).
ALL_ACCESS = (MrFlag.ALLOW_LOCAL_WRITE | MrFlag.ALLOW_REMOTE_READ | MrFlag.ALLOW_REMOTE_WRITE
              | MrFlag.RDMA_READ_SINK)

_O = TypeVar("_O", bound=ndk.Object)



def expect_failed(call: ndk.Call[object], source: str) -> Status:
    """What NDK states of a call that must fail (``source``: the digest section or the seed
    saying so), checked as :func:`stated`, a failure even in a reference-choice scenario: the
    call ends, inline or through its completion, with a status that is not SUCCESS, and gives
    no object.  Which status, and whether inline, is left to the caller (the choice where
    NDK lists several); the status the call ended with is returned."""
    with stated(source):
        try:
            ended = call.wait(timeout=TIMEOUT)
        except TimeoutError:
            raise AssertionError(f"the call did not end within {TIMEOUT} s") from None
        assert ended != Status.SUCCESS, "the call succeeded"
        assert call.object is None, "the call gave an object"
    return ended


def expect_call(call: ndk.Call[object], status: Status, how: str,
                stated_in: str | None = None) -> None:
    """Assert that ``call`` ended with ``status``, inline (how="inline") or through exactly one
    completion after STATUS_PENDING (how="pending" or "async"); how="i/a": either, where the
    digest marks the status "(i/a)" and the provider may find it late (a real network's
    refusal arrives after the call returned).  ``stated_in``: where NDK states that the call
    fails; that part is checked first by :func:`expect_failed`, and only ``status`` and
    ``how`` remain the choice of a reference-choice scenario."""
    if stated_in is not None:
        expect_failed(call, stated_in)
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


def expect_create_failed(call: ndk.Call[object], status: Status, how: str = "i/a",
                         stated_in: str | None = None) -> None:
    """Assert a failed create: ``status`` inline or through the completion (by default
    either: digest 1.0 lets a create report any status through its completion); no object.
    ``stated_in``: as for :func:`expect_call` (the create failing is stated there)."""
    expect_call(call, status, how, stated_in)
    assert call.object is None
    try:
        call.get(timeout=TIMEOUT)
    except ndk.NdkError as error:
        assert error.status == status
    else:  # pragma: no cover - the assertion below reports it
        raise AssertionError("Call.get() returned an object for a failed create")


def expect_request(call: ndk.Call[object], mode: str, status: Status = Status.SUCCESS,
                   stated_in: str | None = None) -> None:
    """Assert an async request (register, resize, listen, ...) ended with ``status``.
    ``stated_in``: as for :func:`expect_call` (the request failing is stated there)."""
    expect_call(call, status, mode, stated_in)
    assert call.object is None


def expect_closed(call: ndk.Call[object]) -> None:
    """Assert a close that succeeded: STATUS_SUCCESS inline with no close completion, or
    STATUS_PENDING and exactly one close completion (digest 1.0 allows either)."""
    expect_call(call, Status.SUCCESS, "i/a")


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



# --- limits and adapter flags: the soft provider's knobs, or the adapter's own -------------


def shrink_limits(adapter: ndk.Adapter, **limits: int) -> bool:
    """Lower ``adapter``'s limits to ``limits`` (knobs named after NDK_ADAPTER_INFO fields and
    object caps, e.g. ``max_cq_depth=16``: small limits are quick to reach and to create at)
    when its provider has such knobs (soft): True.  False when it has none: the scenario then
    works at the adapter's own limits, from ``adapter.query_info()``, as an outside provider's
    adapter offers them."""
    for name, value in limits.items():
        try:
            setattr(adapter.knobs, name, value)
        except ndk.KnobsNotSupported:
            return False
    return True


def set_adapter_flags(adapter: ndk.Adapter, *, add: int = 0, remove: int = 0) -> None:
    """Make ``adapter``'s NDK_ADAPTER_INFO AdapterFlags hold ``add`` and lack ``remove``:
    nothing to do where they already do (the providers such a rule is about), else the knob
    ``adapter_flags`` (soft; a provider without it has the scenario skipped as one that cannot
    be set up there)."""
    flags = int(adapter.query_info().adapter_flags)
    wanted = (flags | int(add)) & ~int(remove)
    if wanted != flags:
        try:
            adapter.knobs.adapter_flags = wanted
        except ndk.KnobsNotSupported as exc:
            raise ndk.KnobsNotSupported(
                f"the scenario needs AdapterFlags 0x{wanted:X}, the adapter reports "
                f"0x{flags:X}, and no knob changes them: {exc}") from None
    assert int(adapter.query_info().adapter_flags) == wanted

# --- data, connections, absences -----------------------------------------------------------


def pattern(length: int, seed: int = 1) -> bytes:
    """``length`` recognisable bytes: never zero, and different for every ``seed``."""
    return bytes((seed * 31 + i * 7) % 251 + 1 for i in range(length))


def quiet_period(*objects: Any) -> float:
    """How long to wait for something that must NOT happen: QUIET, less the time the provider
    took to say that nothing can happen in this process until a call (the soft provider's
    read-only knob ``quiescent``: every engine with nothing queued, nothing running and no
    timer set, every transport with nothing in flight and each connection's other end in this
    process, nothing held by the fault layer; docs/knobs.md).  Then everything the scenario's
    calls caused has happened already, and a look now sees what a wait would: the knob is
    asked again every millisecond while something is still in flight (a message on its way
    over shm or tcp), and once it says so the wait ends at once.  The events looked for are
    kept until read (a CQ's results, notifications, connect and disconnect events), so a wait
    cut short here still sees what came meanwhile.  ``objects``: adapters, or this process's
    objects (their ``adapter``); a provider without the knob, or a peer's object in another
    process, waits the whole QUIET."""
    adapters = []
    for obj in objects:
        adapter = obj if isinstance(obj, ndk.Adapter) else getattr(obj, "adapter", None)
        if not isinstance(adapter, ndk.Adapter):
            return QUIET  # a peer's proxy: its process is not ours to judge
        adapters.append(adapter)
    if not adapters:
        return QUIET
    deadline = time.monotonic() + QUIET
    while True:
        try:
            if all(int(adapter.knobs.quiescent) == 1 for adapter in adapters):
                return 0.0
        except (ndk.KnobsNotSupported, AttributeError):
            return max(0.0, deadline - time.monotonic())  # a provider without the knob
        left = deadline - time.monotonic()
        if left <= 0:
            return 0.0  # QUIET has passed here: what came meanwhile is there to see
        time.sleep(min(QUIET_LOOK, left))


def expect_no_completion(*cqs: ndk.Cq) -> None:
    """Nothing arrives on any of ``cqs`` within QUIET (an inline failure, a silent success, a
    request still deferred, a receive no send reached)."""
    for cq in cqs:
        assert poll(cq, 16, timeout=quiet_period(cq)) == []


def reported(adapter: ndk.Adapter, rule: str) -> list[ndk.Violation]:
    """The violations of ``rule`` the validation layer recorded on ``adapter`` so far."""
    return [v for v in adapter.violations() if v.rule == rule]


def register(pd: ndk.Pd, size: int = BUFFER_SIZE,
             flags: int = ALL_ACCESS) -> tuple[ndk.Mr, bytearray]:
    """(mr, buffer): a normal MR on ``pd`` over a new zeroed buffer of ``size`` bytes (in the
    process where ``pd`` lives: the pair fixture's peer may be another one)."""
    buffer = new_buffer(pd, size)
    mr = pd.create_mr().get(timeout=TIMEOUT)
    assert mr.register(buffer, flags=flags).wait(timeout=TIMEOUT) == Status.SUCCESS
    return mr, buffer


# The resource builder, which uses the constants above.
from .resources import Side, listening  # noqa: E402
