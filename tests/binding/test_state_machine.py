"""Stateful property tests of the Python API against a small model (hypothesis
RuleBasedStateMachine), on validated soft adapters.

``LifetimeMachine``: adapter, CQ, PD, MR, MW, SRQ and QP are created and closed in any order.
The model knows each object's dependents (a PD's children; the QPs of a CQ or SRQ, digest 3.1,
docs/semantics.md PARENT): a close returns STATUS_SUCCESS inline when none is left, otherwise
STATUS_PENDING and completes exactly once, with SUCCESS, when the last one's close has
completed; an adapter's close completes every pending close.  Every call on a closed object
raises ndk.ObjectClosedError.

``DataPathMachine``: a connected pair (ndk.testing.connect_pair) with small queues and CQs.
Receives, sends, writes (deferred or not) and reads are posted on either side; the model holds
what each CQ must return: status, type, bytes and request context, in posting order, exactly
once.  Posting past a queue's depth returns STATUS_NO_MORE_ENTRIES (docs/semantics.md
POST-CHECKS; DEFER holds requests until a post without it or an inline failure, digest 3.4);
more completions than a CQ's depth overrun it: the next arm reports STATUS_BUFFER_OVERFLOW,
the CQ reports nothing more and posts on its QP return STATUS_INVALID_DEVICE_STATE
(CQ-OVERRUN-QP, CQ-ERROR-ARM).

After every step the adapters' violations (docs/validation.md) must be exactly the ones the
step provoked on purpose (POST-QUEUE-DEPTH for an overfilled queue, the STATUS-UNDOCUMENTED
warning for an ND2 status NDK's pages do not list); a provider-side error is never expected.

Deterministic (derandomize=True, no example database), about 10 s.  At the end of the module
the run time and how often each rule did something (rather than finding its precondition
unmet) are printed on the terminal; --hypothesis-show-statistics adds hypothesis's own.
"""

from __future__ import annotations

import collections
import itertools
import time

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="python3-hypothesis is not installed")
from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.stateful import (RuleBasedStateMachine, initialize, invariant,  # noqa: E402
                                 precondition, rule)

import ndk  # noqa: E402
from ndk import CqNotify, MrFlag, OpFlag, OpType, Status  # noqa: E402

TIMEOUT = 5.0
SETTINGS = dict(deadline=None, derandomize=True, database=None, print_blob=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

# Rule tallies of a run, printed by the module's teardown: what the machines actually covered.
TALLY: collections.Counter = collections.Counter()


def tally(name: str) -> None:
    TALLY[name] += 1


@pytest.fixture(scope="module", autouse=True)
def print_statistics(request):
    """The rule tallies and the run time, on the terminal (not captured)."""
    started = time.monotonic()
    yield
    lines = [f"state machine statistics ({time.monotonic() - started:.1f} s, "
             f"{sum(TALLY.values())} effective steps):"]
    lines += [f"  {name:<60} {count}" for name, count in sorted(TALLY.items())]
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        print("\n" + "\n".join(lines))
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        for line in lines:
            reporter.write_line(line)


class Violations:
    """The violations of some adapters since the last check, against the expected ones."""

    def __init__(self):
        self.expected: collections.Counter = collections.Counter()

    def expect(self, adapter_name: str, rule_id: str, count: int = 1) -> None:
        self.expected[(adapter_name, rule_id)] += count

    def check(self, adapters: dict) -> None:
        seen: collections.Counter = collections.Counter()
        text = []
        for name, adapter in adapters.items():
            for violation in adapter.violations():
                assert not (violation.side == "provider" and violation.severity == "error"), \
                    f"provider violation on {name}: {violation!r}"
                seen[(name, violation.rule)] += 1
                text.append(f"{name}: {violation!r}")
            adapter.clear_violations()
        assert seen == self.expected, "\n".join(text) or "no violations"
        self.expected.clear()


# --- object lifetimes ----------------------------------------------------------------------


class Obj:
    """The model of one created object."""

    def __init__(self, kind, handle, generation, parent=None, antecedents=()):
        self.kind = kind
        self.handle = handle
        self.generation = generation  # which adapter (0, 1, ...) it belongs to
        self.parent = parent
        self.antecedents = tuple(antecedents)
        self.dependents: list[Obj] = []
        self.closed = False
        self.close_calls: list = []   # every close() Call, with the status it returned
        self.registered = False
        self.fast_register = False
        for owner in ([parent] if parent else []) + list(self.antecedents):
            owner.dependents.append(self)

    def fully_closed(self) -> bool:
        """Closed, and its close has completed (no dependent left that is not)."""
        return self.closed and all(d.fully_closed() for d in self.dependents)

    def __repr__(self):
        return f"<{self.kind}#{id(self) % 1000} closed={self.closed}>"


# Calls on a closed object of each kind (each must raise ndk.ObjectClosedError).
USE = {
    "cq": lambda o: o.get_results_ex(1),
    "pd": lambda o: o.create_mr(),
    "mr": lambda o: o.register(bytearray(64)),
    "mw": lambda o: o.get_remote_token_from_mw(),
    "srq": lambda o: o.srq_receive([], request_context=1),
    "qp": lambda o: o.flush(),
    "adapter": lambda o: o.create_pd(),
}


class LifetimeMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.generation = 0
        self.adapter = ndk.open_adapter("soft", validate=True)
        self.adapter_closed = False
        self.objects: list[Obj] = []
        self.violations = Violations()
        self.buffers = []

    def live(self, *kinds):
        return [o for o in self.objects if o.kind in kinds and o.generation == self.generation]

    def _created(self, call, kind, **links) -> Obj:
        assert call.status == Status.SUCCESS, (kind, call.status)
        assert call.completions == 0
        obj = Obj(kind, call.object, self.generation, **links)
        assert obj.handle is not None and obj.handle.is_open
        self.objects.append(obj)
        return obj

    def _refused_closed(self, make, what: str) -> None:
        with pytest.raises(ndk.ObjectClosedError):
            make()
        tally(f"lifetime: {what} on a closed object raises")

    # -- rules --

    @precondition(lambda self: self.adapter_closed)
    @rule()
    def reopen_adapter(self):
        self.generation += 1
        self.adapter = ndk.open_adapter("soft", validate=True)
        self.adapter_closed = False
        tally("lifetime: open another adapter")

    @rule(depth=st.integers(1, 16))
    def create_cq(self, depth):
        if self.adapter_closed:
            return self._refused_closed(lambda: self.adapter.create_cq(depth), "create_cq")
        self._created(self.adapter.create_cq(depth), "cq")
        tally("lifetime: create CQ")

    @rule()
    def create_pd(self):
        if self.adapter_closed:
            return self._refused_closed(self.adapter.create_pd, "create_pd")
        self._created(self.adapter.create_pd(), "pd")
        tally("lifetime: create PD")

    @precondition(lambda self: self.live("pd"))
    @rule(data=st.data(), kind=st.sampled_from(["mr", "frmr", "mw", "srq"]))
    def create_child(self, data, kind):
        pd = data.draw(st.sampled_from(self.live("pd")), label="pd")
        make = {"mr": lambda: pd.handle.create_mr(),
                "frmr": lambda: pd.handle.create_mr(fast_register=True),
                "mw": lambda: pd.handle.create_mw(),
                "srq": lambda: pd.handle.create_srq(4)}[kind]
        if pd.closed:
            return self._refused_closed(make, f"PD create {kind}")
        obj = self._created(make(), "mr" if kind == "frmr" else kind, parent=pd)
        obj.fast_register = kind == "frmr"
        tally(f"lifetime: create {kind.upper()}")

    @precondition(lambda self: self.live("mr"))
    @rule(data=st.data())
    def register_mr(self, data):
        mr = data.draw(st.sampled_from(self.live("mr")), label="mr")
        buffer = bytearray(4096)
        if mr.closed:
            return self._refused_closed(lambda: mr.handle.register(buffer), "MR register")
        call = mr.handle.register(buffer, flags=MrFlag.ALLOW_LOCAL_WRITE)
        if mr.fast_register:  # NdkRegisterMr is for a normal MR
            assert call.wait(timeout=TIMEOUT) == Status.INVALID_PARAMETER
            return tally("lifetime: register a fast-register MR -> INVALID_PARAMETER")
        if mr.registered:  # docs/semantics.md MR-STATE (an ND2 status: the layer warns)
            assert call.wait(timeout=TIMEOUT) == Status.INVALID_DEVICE_STATE
            self.violations.expect("adapter", "STATUS-UNDOCUMENTED")
            return tally("lifetime: register a registered MR -> INVALID_DEVICE_STATE")
        assert call.wait(timeout=TIMEOUT) == Status.SUCCESS
        mr.registered = True
        self.buffers.append(buffer)
        tally("lifetime: register MR")

    @precondition(lambda self: self.live("pd") and self.live("cq"))
    @rule(data=st.data(), with_srq=st.booleans())
    def create_qp(self, data, with_srq):
        pd = data.draw(st.sampled_from(self.live("pd")), label="pd")
        rcq = data.draw(st.sampled_from(self.live("cq")), label="receive cq")
        icq = data.draw(st.sampled_from(self.live("cq")), label="initiator cq")
        srqs = self.live("srq")
        srq = data.draw(st.sampled_from(srqs), label="srq") if with_srq and srqs else None
        if srq is None:
            make = lambda: pd.handle.create_qp(rcq.handle, icq.handle)  # noqa: E731
        else:
            make = lambda: pd.handle.create_qp_with_srq(rcq.handle, icq.handle,  # noqa: E731
                                                        srq.handle)
        if pd.closed:
            return self._refused_closed(make, "PD create QP")
        arguments = [rcq, icq] + ([srq] if srq else [])
        if any(o.closed for o in arguments):
            # docs/semantics.md QP-OBJECTS: a closed CQ (or SRQ) is refused; no QP comes of it.
            # The consumer API hands the closed object's stale provider pointer down today
            # (it should raise ObjectClosedError); the validation layer catches it: one
            # OBJECT-CLOSED-CALL per closed argument, INVALID_PARAMETER, nothing forwarded.
            try:
                call = make()
            except ndk.ObjectClosedError:
                return tally("lifetime: QP on a closed CQ/SRQ raises ObjectClosedError")
            assert call.status == Status.INVALID_PARAMETER and call.object is None, call.status
            self.violations.expect("adapter", "OBJECT-CLOSED-CALL",
                                   sum(1 for o in arguments if o.closed))
            return tally("lifetime: QP on a closed CQ/SRQ -> INVALID_PARAMETER")
        if srq is not None and srq.parent is not pd:  # an SRQ of another PD
            call = make()
            assert call.status == Status.INVALID_PARAMETER and call.object is None, call.status
            return tally("lifetime: QP with another PD's SRQ -> INVALID_PARAMETER")
        antecedents = [rcq] + ([icq] if icq is not rcq else []) + ([srq] if srq else [])
        self._created(make(), "qp", parent=pd, antecedents=antecedents)
        tally("lifetime: create QP" + (" with SRQ" if srq else ""))

    @precondition(lambda self: self.live("cq", "pd", "mr", "mw", "srq", "qp"))
    @rule(data=st.data())
    def close(self, data):
        obj = data.draw(st.sampled_from(self.live("cq", "pd", "mr", "mw", "srq", "qp")),
                        label="object")
        if obj.closed:
            # A second close (or one after the adapter's close): it answers for the object's
            # close, which is over once the object is fully closed.
            call = obj.handle.close()
            if obj.close_calls:  # docs/semantics.md DOUBLE-CLOSE: the first close's record
                assert call.status == obj.close_calls[0].status, (obj, call)
            assert call.status in (Status.SUCCESS, Status.PENDING), call.status
            if obj.fully_closed() or self.adapter_closed:
                assert call.wait(timeout=TIMEOUT) == Status.SUCCESS, (obj, call)
            else:
                assert call.status == Status.PENDING and not call.done, (obj, call)
            obj.close_calls.append(call)
            return tally(f"lifetime: close a closed {obj.kind}"
                         + (" (adapter closed)" if self.adapter_closed else ""))
        pending = any(not d.fully_closed() for d in obj.dependents)
        obj.closed = True
        call = obj.handle.close()
        if pending:
            assert call.status == Status.PENDING, (obj, call.status)
            tally(f"lifetime: close {obj.kind} with dependents -> PENDING")
        else:
            assert call.status == Status.SUCCESS, (obj, call.status)
            assert call.completions == 0
            tally(f"lifetime: close {obj.kind} -> SUCCESS")
        assert obj.handle.closed
        obj.close_calls.append(call)

    @precondition(lambda self: any(o.closed for o in self.live("cq", "pd", "mr", "mw", "srq", "qp")))
    @rule(data=st.data())
    def use_closed(self, data):
        closed = [o for o in self.live("cq", "pd", "mr", "mw", "srq", "qp") if o.closed]
        obj = data.draw(st.sampled_from(closed), label="closed object")
        self._refused_closed(lambda: USE[obj.kind](obj.handle), f"{obj.kind} call")

    @precondition(lambda self: not self.adapter_closed)
    @rule(now=st.integers(0, 5))
    def close_adapter(self, now):
        if now:  # one draw in six: an adapter lives for a while
            return
        open_before = len([o for o in self.live("cq", "pd", "mr", "mw", "srq", "qp")
                           if not o.fully_closed()])
        self.violations.check({"adapter": self.adapter})
        self.adapter.close()
        self.adapter_closed = True
        for obj in self.live("cq", "pd", "mr", "mw", "srq", "qp"):
            obj.closed = True
            assert obj.handle.closed, obj
            for call in obj.close_calls:  # the adapter's close completed every pending close
                assert call.done and call.wait(timeout=0) == Status.SUCCESS, obj
        self._refused_closed(lambda: USE["adapter"](self.adapter), "adapter call")
        tally(f"lifetime: close the adapter with {'objects' if open_before else 'nothing'} open")

    # -- invariants --

    @invariant()
    def closes_complete_as_modelled(self):
        for obj in self.live("cq", "pd", "mr", "mw", "srq", "qp"):
            assert obj.handle.closed == obj.closed, obj
            for call in obj.close_calls:
                if call.status != Status.PENDING:
                    assert call.done
                elif obj.fully_closed():  # the last dependent is gone: completes, once
                    assert call.wait(timeout=TIMEOUT) == Status.SUCCESS, obj
                    assert call.completions <= 1 and call.completion_status in (None, Status.SUCCESS)
                elif not self.adapter_closed:
                    assert not call.done and call.completions == 0, obj

    @invariant()
    def no_violations(self):
        if not self.adapter_closed:
            self.violations.check({"adapter": self.adapter})

    def teardown(self):
        if not self.adapter_closed:
            self.violations.check({"adapter": self.adapter})
            self.adapter.close()


TestLifetime = LifetimeMachine.TestCase
TestLifetime.settings = settings(max_examples=200, stateful_step_count=60, **SETTINGS)


# --- the data path -------------------------------------------------------------------------

ADDRESSES = ("192.0.2.81", "192.0.2.82")
ALL_ACCESS = (MrFlag.ALLOW_LOCAL_WRITE | MrFlag.ALLOW_REMOTE_READ | MrFlag.ALLOW_REMOTE_WRITE
              | MrFlag.RDMA_READ_SINK)
RECEIVE_SIZE = 64


class Side:
    """The model of one endpoint: what its CQ must return, and what its queues hold."""

    def __init__(self, name, endpoint, cq_depth, receive_depth, initiator_depth):
        self.name = name
        self.ep = endpoint
        self.cq_depth = cq_depth
        self.receive_depth = receive_depth
        self.initiator_depth = initiator_depth
        self.expected: collections.deque = collections.deque()  # (status, type, bytes, context)
        self.overrun = False
        self.error_reported = False
        self.receives: collections.deque = collections.deque()  # posted, not yet consumed
        self.receive_outstanding = 0    # posted, completion not retrieved (the consumer's rule)
        self.initiator_outstanding = 0
        self.held: list = []            # deferred initiator requests: (type, context)
        self.buffer = bytearray(4096)
        self.mr = endpoint.pd.create_mr().get(timeout=TIMEOUT)
        assert self.mr.register(self.buffer, flags=ALL_ACCESS).wait(timeout=TIMEOUT) == \
            Status.SUCCESS

    def complete(self, entry) -> None:
        """A completion arrives at this side's CQ (or overruns it)."""
        if self.overrun:
            return  # no further completions after a CQ error (digest 1.3)
        if len(self.expected) >= self.cq_depth:
            self.overrun = True
            self.expected.clear()
            tally("data: CQ overrun")
            return
        self.expected.append(entry)


class DataPathMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.context = itertools.count(1)
        self.violations = Violations()
        self.adapters = {}
        self.sides = []

    @initialize(cq_depth=st.integers(2, 8), receive_depth=st.integers(1, 4),
                initiator_depth=st.integers(1, 4))
    def connect(self, cq_depth, receive_depth, initiator_depth):
        self._connect(cq_depth, receive_depth, initiator_depth)

    def _connect(self, cq_depth, receive_depth, initiator_depth):
        self.depths = (cq_depth, receive_depth, initiator_depth)
        client = ndk.open_adapter("soft", address=ADDRESSES[0], validate=True)
        server = ndk.open_adapter("soft", address=ADDRESSES[1], validate=True)
        self.adapters = {"client": client, "server": server}
        a, b = ndk.testing.connect_pair(client, server, cq_depth=cq_depth,
                                        receive_queue_depth=receive_depth,
                                        initiator_queue_depth=initiator_depth, timeout=TIMEOUT)
        self.sides = [Side("client", a, *self.depths), Side("server", b, *self.depths)]
        self.violations.check(self.adapters)

    def _close(self):
        for adapter in self.adapters.values():
            adapter.close()
        self.adapters = {}

    # -- posting helpers --

    def _release_held(self, s: Side) -> None:
        for op, context in s.held:
            s.complete((Status.SUCCESS, op, 0, context))
        s.held.clear()

    def _expect_refusal(self, s: Side, queue: str, status: Status) -> None:
        """The violations an inline NO_MORE_ENTRIES / INVALID_DEVICE_STATE brings: the
        provider warning (ND2 status, not on NDK's page) and, past the depth the consumer may
        rely on, the consumer's POST-QUEUE-DEPTH."""
        self.violations.expect(s.name, "STATUS-UNDOCUMENTED")
        outstanding = s.receive_outstanding if queue == "receive" else s.initiator_outstanding
        depth = s.receive_depth if queue == "receive" else s.initiator_depth
        if outstanding >= depth:
            self.violations.expect(s.name, "POST-QUEUE-DEPTH")

    def _post_receive(self, s: Side, context: int) -> Status:
        index = len(s.receives) % 8
        return s.ep.qp.receive([s.mr.sge(index * RECEIVE_SIZE, RECEIVE_SIZE)],
                               request_context=context)

    def _post_write(self, s: Side, peer: Side, length: int, context: int, flags=0) -> Status:
        return s.ep.qp.write([s.mr.sge(1024, length)], peer.mr.address + 2048,
                             peer.mr.remote_token, flags=flags, request_context=context)

    # -- rules --

    @rule(which=st.integers(0, 1))
    def post_receive(self, which):
        s = self.sides[which]
        if s.overrun or s.receive_outstanding >= s.receive_depth:
            return
        context = next(self.context)
        assert self._post_receive(s, context) == Status.SUCCESS
        s.receives.append(context)
        s.receive_outstanding += 1
        tally("data: post receive")

    @rule(which=st.integers(0, 1), length=st.integers(0, RECEIVE_SIZE))
    def send(self, which, length):
        s, peer = self.sides[which], self.sides[1 - which]
        if s.overrun or peer.overrun or not peer.receives:
            return
        if s.initiator_outstanding >= s.initiator_depth:
            return
        context = next(self.context)
        status = s.ep.qp.send([s.mr.sge(0, length)] if length else [], request_context=context)
        assert status == Status.SUCCESS
        s.initiator_outstanding += 1
        self._release_held(s)
        s.complete((Status.SUCCESS, OpType.SEND, 0, context))
        peer.complete((Status.SUCCESS, OpType.RECEIVE, length, peer.receives.popleft()))
        tally("data: send")

    @rule(which=st.integers(0, 1), length=st.integers(1, 512), defer=st.booleans(),
          read=st.booleans())
    def rdma(self, which, length, defer, read):
        s, peer = self.sides[which], self.sides[1 - which]
        if s.overrun or s.initiator_outstanding >= s.initiator_depth:
            return
        context = next(self.context)
        flags = OpFlag.DEFER if defer else 0
        if read:
            status = s.ep.qp.read([s.mr.sge(1024, length)], peer.mr.address + 2048,
                                  peer.mr.remote_token, flags=flags, request_context=context)
        else:
            status = self._post_write(s, peer, length, context, flags)
        assert status == Status.SUCCESS
        s.initiator_outstanding += 1
        op = OpType.READ if read else OpType.WRITE
        if defer:
            s.held.append((op, context))
        else:
            self._release_held(s)
            s.complete((Status.SUCCESS, op, 0, context))
        tally(f"data: {'read' if read else 'write'}{' deferred' if defer else ''}")

    @rule(which=st.integers(0, 1))
    def overfill_receive_queue(self, which):
        """Receives until the provider's queue is full, then one more: NO_MORE_ENTRIES, never
        completed."""
        s = self.sides[which]
        if s.overrun or s.receive_outstanding != len(s.receives):
            return  # only when every outstanding receive is still in the queue
        while len(s.receives) < s.receive_depth:
            self.post_receive(which)
        self._expect_refusal(s, "receive", Status.NO_MORE_ENTRIES)
        assert self._post_receive(s, next(self.context)) == Status.NO_MORE_ENTRIES
        tally("data: receive queue full -> NO_MORE_ENTRIES")

    @rule(which=st.integers(0, 1))
    def overfill_initiator_queue(self, which):
        """Deferred writes until the initiator queue is full, then one more: NO_MORE_ENTRIES,
        and the inline failure releases the deferred ones (digest 3.4)."""
        s, peer = self.sides[which], self.sides[1 - which]
        if s.overrun or s.initiator_outstanding != len(s.held):
            return  # only when every outstanding request is still held
        while len(s.held) < s.initiator_depth:
            context = next(self.context)
            assert self._post_write(s, peer, 8, context, OpFlag.DEFER) == Status.SUCCESS
            s.initiator_outstanding += 1
            s.held.append((OpType.WRITE, context))
        self._expect_refusal(s, "initiator", Status.NO_MORE_ENTRIES)
        assert self._post_write(s, peer, 8, next(self.context)) == Status.NO_MORE_ENTRIES
        self._release_held(s)
        tally("data: initiator queue full -> NO_MORE_ENTRIES")

    @rule(which=st.integers(0, 1), n=st.integers(1, 8))
    def poll(self, which, n):
        s = self.sides[which]
        got = [(r.status, r.type, r.bytes_transferred, r.request_context)
               for r in s.ep.cq.get_results_ex(n)]
        want = [s.expected.popleft() for _ in range(min(n, len(s.expected)))]
        assert got == want, (s.name, got, want)
        for _status, op, _bytes, _context in got:
            if op == OpType.RECEIVE:
                s.receive_outstanding -= 1
            else:
                s.initiator_outstanding -= 1
        tally("data: poll (overrun CQ: nothing)" if s.overrun else
              f"data: poll {'some' if got else 'nothing'}")

    @rule(which=st.integers(0, 1), receive=st.booleans())
    def post_on_overrun_cq(self, which, receive):
        s, peer = self.sides[which], self.sides[1 - which]
        if not s.overrun:
            return
        self._expect_refusal(s, "receive" if receive else "initiator",
                             Status.INVALID_DEVICE_STATE)
        if receive:
            status = self._post_receive(s, next(self.context))
        else:
            status = self._post_write(s, peer, 8, next(self.context))
            s.held.clear()  # released by the inline failure; their completions are lost
        assert status == Status.INVALID_DEVICE_STATE
        tally("data: post on an overrun CQ's QP -> INVALID_DEVICE_STATE")

    @rule(which=st.integers(0, 1))
    def arm_errors(self, which):
        s = self.sides[which]
        if not s.overrun or s.error_reported:
            return
        s.ep.cq.arm(CqNotify.ERRORS)
        assert s.ep.cq.wait_notification(timeout=TIMEOUT) == Status.BUFFER_OVERFLOW
        s.error_reported = True
        tally("data: arm an overrun CQ -> BUFFER_OVERFLOW")

    @rule()
    def reconnect(self):
        """After an overrun, a new pair (the old one is unusable)."""
        if not any(s.overrun for s in self.sides):
            return
        self.violations.check(self.adapters)
        self._close()
        self._connect(*self.depths)
        tally("data: reconnect after an overrun")

    # -- invariants --

    @invariant()
    def no_unexpected_violations(self):
        if self.adapters:
            self.violations.check(self.adapters)

    @invariant()
    def queues_within_their_depths(self):
        for s in self.sides:
            assert len(s.expected) <= s.cq_depth
            assert len(s.receives) <= s.receive_depth
            assert s.receive_outstanding >= len(s.receives)
            assert s.initiator_outstanding >= len(s.held)

    def teardown(self):
        if not self.adapters:
            return
        try:
            for s in self.sides:  # whatever is left arrives, exactly once
                if not s.overrun:
                    self.poll(self.sides.index(s), 64)
                    assert not s.expected
                    assert s.ep.cq.get_results_ex(8) == []
            self.violations.check(self.adapters)
        finally:
            self._close()


TestDataPath = DataPathMachine.TestCase
TestDataPath.settings = settings(max_examples=200, stateful_step_count=80, **SETTINGS)
