"""Manual progress (knob progress="manual", docs/semantics.md PROGRESS, docs/knobs.md): the
soft RNIC's engine runs nothing on its own; each adapter.step(n) runs up to n queued tasks --
transfers, completions, callbacks, due timers -- and adapter.pending_steps counts them.

With it a scenario places an event exactly where a rule needs it: a completion between an arm
and a poll (digest 3.2), a close between two callbacks (digest 3.1), a timer that fires as a
step.  Every scenario uses one adapter holding both ends of a loopback connection
(docs/semantics.md CONN-LOOPBACK), so one engine carries the whole connection, and starts from
an idle engine (ndk.scenario.completion.settle).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

import ndk
from ndk import AdapterFlag, CqNotify, OpType, Status
from ndk.testing import OpenAdapter

from ndk.scenario.completion import (MAXULONG, QUIET, TIMEOUT, drain, loopback_pair,
                                     no_notification, pair, pattern, post_receive, post_send,
                                     quiet_period, wait_until, Side)


def _manual(open_adapter: OpenAdapter, **knobs: Any) -> tuple[Side, Side, ndk.Adapter]:
    a, b = loopback_pair(open_adapter, progress="manual", **knobs)
    assert a.adapter.pending_steps == 0
    return a, b, a.adapter


def _idle(*cqs: ndk.Cq) -> None:
    """Nothing is in any of ``cqs`` (and reading removes nothing, since there is nothing)."""
    for cq in cqs:
        assert cq.get_results_ex(8) == []


@pytest.mark.rule("PROGRESS-POST-MOVES-NOTHING")
@pytest.mark.digest("1.7")
@pytest.mark.reference("PROGRESS")
def test_post_moves_nothing_until_stepped(open_adapter: OpenAdapter) -> None:
    """docs/semantics.md PROGRESS: under progress="manual" a send returns SUCCESS inline
    (digest 1.7) but only queues its transfer: no byte moves and neither CQ has a completion,
    even after a while; one step performs it: the bytes arrive and both completions are
    there."""
    a, b, adapter = _manual(open_adapter)
    data = pattern(40)
    post_receive(b, 0, 64, 0xB1)
    post_send(a, data, 0xA1, offset=1024)
    assert adapter.pending_steps == 1
    time.sleep(QUIET)
    _idle(a.cq, b.cq)
    assert bytes(b.buffer[:40]) == bytes(40)
    assert adapter.pending_steps == 1
    assert adapter.step(1) == 1
    assert bytes(b.buffer[:40]) == data
    assert [(r.request_context, r.type, r.status) for r in a.cq.get_results_ex(8)] == [
        (0xA1, OpType.SEND, Status.SUCCESS)]
    assert [(r.request_context, r.type, r.bytes_transferred) for r in b.cq.get_results_ex(8)] \
        == [(0xB1, OpType.RECEIVE, 40)]
    assert adapter.pending_steps == 0


@pytest.mark.rule("PROGRESS-PENDING-STEPS")
@pytest.mark.digest("1.7")
@pytest.mark.reference("PROGRESS")
def test_pending_steps_counts_queued_transfers(open_adapter: OpenAdapter) -> None:
    """docs/semantics.md PROGRESS, docs/knobs.md (step): each post queues its transfer as one
    engine task, so three sends make pending_steps 3; step(10) runs the three (and reports 3),
    leaving nothing queued, and all three sends have completed in order."""
    a, b, adapter = _manual(open_adapter)
    for n in range(3):
        post_receive(b, 512 * n, 64, 0xB0 + n)
    assert adapter.pending_steps == 0  # receives wait for sends; nothing to transfer yet
    for n in range(3):
        post_send(a, pattern(8, n), 0xA0 + n, offset=512 * n)
    assert adapter.pending_steps == 3
    assert adapter.step(10) == 3
    assert adapter.pending_steps == 0
    assert [r.request_context for r in drain(a.cq, 3)] == [0xA0, 0xA1, 0xA2]
    assert [r.request_context for r in drain(b.cq, 3)] == [0xB0, 0xB1, 0xB2]
    for n in range(3):
        assert bytes(b.buffer[512 * n:512 * n + 8]) == pattern(8, n)


@pytest.mark.rule("PROGRESS-STEP-IDLE")
@pytest.mark.digest("1.7")
@pytest.mark.reference("PROGRESS")
def test_step_on_idle_engine_runs_nothing(open_adapter: OpenAdapter) -> None:
    """docs/semantics.md PROGRESS (a reference choice), docs/knobs.md (step): the reply is how many tasks ran, fewer than asked when the queue
    empties: 0 on an idle engine, and stepping an idle engine changes nothing."""
    a, b, adapter = _manual(open_adapter)
    assert adapter.step(5) == 0
    assert adapter.pending_steps == 0
    _idle(a.cq, b.cq)
    post_receive(b, 0, 64, 1)
    post_send(a, pattern(4), 2)
    assert adapter.step(5) == 1
    assert adapter.step(5) == 0
    assert len(drain(b.cq, 1)) == 1


@pytest.mark.rule("PROGRESS-ARM-BEFORE-POLL")
@pytest.mark.digest("3.2")
@pytest.mark.reference("PROGRESS")
def test_completion_between_arm_and_poll(open_adapter: OpenAdapter) -> None:
    """digest 3.2 (the provider clears the arm, then calls the callback when completions are
    queued), docs/semantics.md PROGRESS: arm ANY, step the transfer: a poll already sees the
    completion but no notification has come -- it is a separate queued step -- and it arrives,
    once, only when that step runs."""
    a, b, adapter = _manual(open_adapter)
    b.cq.arm(CqNotify.ANY)
    post_receive(b, 0, 64, 0xB1)
    post_send(a, pattern(12), 0xA1, offset=512)
    assert adapter.step(1) == 1  # the transfer
    (result,) = b.cq.get_results_ex(8)
    assert (result.request_context, result.status) == (0xB1, Status.SUCCESS)
    assert b.cq.notifications == 0
    assert b.cq.wait_notification(timeout=quiet_period(b.cq)) is None
    assert adapter.pending_steps == 1  # the notification callback
    assert adapter.step(1) == 1
    assert b.cq.notifications == 1
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    assert adapter.pending_steps == 0
    assert b.cq.get_results_ex(8) == []


@pytest.mark.rule("PROGRESS-CLOSE-BETWEEN-CALLBACKS")
@pytest.mark.digest("3.1")
def test_close_pends_until_queued_callback_ran(open_adapter: OpenAdapter) -> None:
    """digest 3.1: a close stays pending until every event callback of the object has returned,
    and no callback comes after the close completion.  Two callbacks are queued -- b's CQ
    notification, then b's disconnect event (a disconnected) -- and b's connector is closed
    between them: the close returns STATUS_PENDING; stepping the first callback leaves it
    pending; stepping the disconnect event delivers it; only the step after that completes the
    close, exactly once, with STATUS_SUCCESS."""
    a, b, adapter = _manual(open_adapter)
    b.cq.arm(CqNotify.ANY)
    post_receive(b, 0, 64, 0xB1)
    post_send(a, pattern(8), 0xA1)
    assert adapter.step(1) == 1  # transfer; b's notification queued
    disconnect = a.connector.disconnect()
    if disconnect.status == Status.PENDING:  # a provider that pends its requests
        adapter.step(1)
    assert disconnect.wait(timeout=TIMEOUT) == Status.SUCCESS
    queued = adapter.pending_steps
    assert queued == 2  # b's notification, b's disconnect event
    close = b.connector.close()
    assert close.status == Status.PENDING
    assert adapter.step(1) == 1  # the CQ notification
    assert b.cq.notifications == 1
    assert b.connector.disconnect_events == 0
    assert not close.done and close.completions == 0
    assert adapter.step(1) == 1  # the disconnect event
    assert b.connector.disconnect_events == 1
    assert not close.done and close.completions == 0
    assert adapter.step(1) == 1  # the close completion
    assert close.wait(timeout=TIMEOUT) == Status.SUCCESS
    assert close.completions == 1
    assert adapter.pending_steps == 0
    assert b.connector.wait_disconnect(timeout=TIMEOUT) == 0  # plain NdkAccept callback
    assert b.connector.disconnect_events == 1


@pytest.mark.rule("PROGRESS-STEP-AUTO")
@pytest.mark.digest("1.7")
@pytest.mark.reference("PROGRESS")
def test_step_under_auto_progress_is_refused(open_adapter: OpenAdapter) -> None:
    """docs/semantics.md PROGRESS (a reference choice), docs/knobs.md (step: "Only with progress=manual"): under the default progress="auto"
    adapter.step() raises ValueError saying so, rather than silently running nothing; reading
    pending_steps still works and traffic moves on its own."""
    a, b = pair(open_adapter, loopback=True)
    adapter = a.adapter
    assert adapter.knobs.progress == "auto"
    with pytest.raises(ValueError, match="manual"):
        adapter.step(1)
    assert isinstance(adapter.pending_steps, int) and adapter.pending_steps >= 0
    post_receive(b, 0, 64, 1)
    post_send(a, pattern(4), 2)
    assert [r.request_context for r in drain(b.cq, 1)] == [1]


@pytest.mark.rule("PROGRESS-RNR-TIMER")
@pytest.mark.digest("4.2")
@pytest.mark.reference("PROGRESS")
def test_rnr_timer_fires_as_a_step(open_adapter: OpenAdapter) -> None:
    """docs/semantics.md PROGRESS (due timers are steps) and DATA-STATUS (rnr_timeout_ms): a
    send that found no receive waits; once its 20 ms timer is due it is one queued task that
    does not run on its own; stepping it completes the send STATUS_IO_TIMEOUT, and the peer's
    disconnect event (reason 0 through the plain callback) is a further step."""
    a, b, adapter = _manual(open_adapter, rnr_timeout_ms=20)
    post_send(a, pattern(8), 0xA1)
    assert adapter.step(1) == 1  # the transfer finds no receive: the send waits
    _idle(a.cq, b.cq)
    wait_until(lambda: adapter.pending_steps >= 1, what="the receiver-not-ready timer due")
    assert adapter.pending_steps == 1
    time.sleep(QUIET)
    _idle(a.cq)  # due, but not run: nothing runs unless stepped
    assert adapter.step(1) == 1
    assert [(r.request_context, r.status) for r in a.cq.get_results_ex(8)] == [
        (0xA1, Status.IO_TIMEOUT)]
    assert b.connector.disconnect_events == 0
    assert adapter.step(1) == 1
    assert b.connector.disconnect_events == 1
    assert b.connector.wait_disconnect(timeout=TIMEOUT) == 0
    assert adapter.pending_steps == 0


@pytest.mark.rule("PROGRESS-RECEIVE-RESUMES-SEND")
@pytest.mark.digest("4.2")
@pytest.mark.reference("PROGRESS")
def test_receive_queues_the_waiting_send(open_adapter: OpenAdapter) -> None:
    """docs/semantics.md PROGRESS and DATA-STATUS: a send waiting for a receive (timeout far
    away) is resumed by the peer's receive: posting it queues one task, and that step completes
    the send SUCCESS with the bytes delivered."""
    a, b, adapter = _manual(open_adapter, rnr_timeout_ms=60000)
    post_send(a, pattern(20), 0xA1)
    assert adapter.step(1) == 1
    _idle(a.cq, b.cq)
    assert adapter.pending_steps == 0
    post_receive(b, 0, 64, 0xB1)
    assert adapter.pending_steps == 1
    assert adapter.step(1) == 1
    assert [(r.request_context, r.status) for r in a.cq.get_results_ex(8)] == [
        (0xA1, Status.SUCCESS)]
    assert [(r.request_context, r.bytes_transferred) for r in b.cq.get_results_ex(8)] == [
        (0xB1, 20)]
    assert bytes(b.buffer[:20]) == pattern(20)


@pytest.mark.rule("PROGRESS-ERROR-IN-ONE-STEP")
@pytest.mark.digest("4.2")
@pytest.mark.reference("PROGRESS")
def test_error_and_flush_in_one_step(open_adapter: OpenAdapter) -> None:
    """docs/semantics.md PROGRESS and QP-ERROR: the step that transfers an oversized send
    completes it REMOTE_RESOURCES, the receive BUFFER_OVERFLOW and flushes the receive queued
    behind it CANCELLED, all at once; the peer's disconnect event is the next step."""
    a, b, adapter = _manual(open_adapter)
    post_receive(b, 0, 16, 0xB1)
    post_receive(b, 512, 64, 0xB2)
    post_send(a, pattern(64), 0xA1, offset=4096)
    assert adapter.step(1) == 1
    assert [(r.request_context, r.status) for r in a.cq.get_results_ex(8)] == [
        (0xA1, Status.REMOTE_RESOURCES)]
    assert [(r.request_context, r.status) for r in b.cq.get_results_ex(8)] == [
        (0xB1, Status.BUFFER_OVERFLOW), (0xB2, Status.CANCELLED)]
    assert b.connector.disconnect_events == 0
    assert adapter.pending_steps == 1
    assert adapter.step(1) == 1
    assert b.connector.disconnect_events == 1


@pytest.mark.rule("PROGRESS-BACK-TO-AUTO")
@pytest.mark.digest("1.7")
@pytest.mark.reference("PROGRESS")
def test_switching_back_to_auto_runs_queued_tasks(open_adapter: OpenAdapter) -> None:
    """docs/semantics.md PROGRESS (a reference choice), docs/knobs.md (progress is a run-time knob): a transfer queued under manual progress
    runs on its own once progress is set back to auto: both completions arrive without any
    step."""
    a, b, adapter = _manual(open_adapter)
    post_receive(b, 0, 64, 0xB1)
    post_send(a, pattern(16), 0xA1, offset=512)
    _idle(a.cq, b.cq)
    adapter.knobs.progress = "auto"
    assert [(r.request_context, r.status) for r in drain(a.cq, 1)] == [(0xA1, Status.SUCCESS)]
    assert [(r.request_context, r.status) for r in drain(b.cq, 1)] == [(0xB1, Status.SUCCESS)]
    assert bytes(b.buffer[:16]) == pattern(16)
    wait_until(lambda: adapter.pending_steps == 0, what="an empty engine queue")


@pytest.mark.rule("PROGRESS-MODERATION-TIMER")
@pytest.mark.digest("1.3")
@pytest.mark.reference("PROGRESS")
def test_moderation_interval_fires_as_a_step(open_adapter: OpenAdapter) -> None:
    """digest 1.3 (the interval controls when the count is MAXULONG), docs/semantics.md
    PROGRESS: under moderation the transfer step queues no notification; the 1 ms moderation
    timer, once due, is a step, which queues the notification callback, delivered by the next
    step -- once."""
    a, b, adapter = _manual(open_adapter)
    if not int(adapter.query_info().adapter_flags) & AdapterFlag.CQ_INTERRUPT_MODERATION_SUPPORTED:
        pytest.skip("adapter does not support CQ interrupt moderation")
    assert b.cq.control_cq_interrupt_moderation(1000, MAXULONG) == Status.SUCCESS
    b.cq.arm(CqNotify.ANY)
    post_receive(b, 0, 64, 0xB1)
    post_send(a, pattern(8), 0xA1)
    assert adapter.step(1) == 1
    assert len(b.cq.get_results_ex(8)) == 1
    wait_until(lambda: adapter.pending_steps >= 1, what="the moderation timer due")
    assert b.cq.notifications == 0
    assert adapter.step(1) == 1  # the timer: the notification is queued
    assert b.cq.notifications == 0
    assert adapter.step(1) == 1  # the callback
    assert b.cq.notifications == 1
    assert b.cq.wait_notification(timeout=TIMEOUT) == Status.SUCCESS
    no_notification(b.cq)
    assert adapter.pending_steps == 0
