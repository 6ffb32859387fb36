"""Every blocking call of the binding ends when what it waits on closes, and hears Ctrl-C
(docs/semantics.md, WAIT-CLOSED; issue class "waiters that a close does not wake").

The table below is every call that waits: for each, each close that ends what it waits for
(the object itself, and the adapter, whose close closes every object) must wake it with
ndk.ObjectClosedError, and a SIGINT must end it with KeyboardInterrupt.  A call held inside the
provider by the fault layer's knob `hold` returns once its adapter closes, and a SIGINT ends its
hold.  A parent's close that does not close the object (a PD's
close pends while its SRQ is open, digest 3.1) leaves the wait as it is: it is not in the table.

A close wakes the waits on what it closes itself (ndk/close_signal.hpp); the waits' 50 ms
slices are for Ctrl-C only.  test_a_close_wakes_the_waiter_without_its_slices shows it: with
the slices made an hour long (ndk._core._set_wait_slice), every close still ends every wait.

The close of an object also ends the holds of calls on it (CLOSE-HELD): OBJECT_HELD is each
kind of call the knob `hold` can keep inside the provider on an object (a create on a PD, a
request, a post, a CQ's poll and arm, a connect, and a call that only takes the object as an
argument), with the close of that object.

Each case runs in a child interpreter with a timeout: a waiter that is never woken fails the
test there instead of hanging the suite.  No timing is asserted: the child's waits have no
timeout of their own, so only a wake-up can end them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

CHILD_TIMEOUT = 60  # a waiter never woken is killed here and fails the test

# name -> (setup code, the blocking call, {close name: close code})
WAITS: dict[str, tuple[str, str, dict[str, str]]] = {
    "Cq.wait_notification": (
        "ad = ndk.open_adapter('soft'); cq = ad.create_cq(8).get(); cq.arm(ndk.CqNotify.ANY)",
        "cq.wait_notification(None)",
        {"object": "cq.close()", "adapter": "ad.close()"}),
    "Srq.wait_notification": (
        "ad = ndk.open_adapter('soft')\n"
        "pd = ad.create_pd().get(); srq = pd.create_srq(srq_depth=8, notify_threshold=1).get()",
        "srq.wait_notification(None)",
        {"object": "srq.close()", "adapter": "ad.close()"}),
    "Cq.wait_results": (
        "ad = ndk.open_adapter('soft'); cq = ad.create_cq(8).get()",
        "cq.wait_results(1, timeout=None)",
        {"object": "cq.close()", "adapter": "ad.close()"}),
    "Cq.poll_into": (
        # the array made in the set-up: a Ctrl-C during numpy's first import is numpy's
        # ImportError, not the wait's (bindings/batch.cpp, new_array)
        "ad = ndk.open_adapter('soft'); cq = ad.create_cq(8).get()\n"
        "results = ndk.Cq.result_array(4)",
        "cq.poll_into(results, min_results=1, timeout=None)",
        {"object": "cq.close()", "adapter": "ad.close()"}),
    "Listener.next_connection": (
        "ad = ndk.open_adapter('soft'); listener = ad.create_listener().get()",
        "listener.next_connection(None)",
        {"object": "listener.close()", "adapter": "ad.close()"}),
    "Connector.wait_disconnect": (
        "srv = ndk.open_adapter('soft', address='192.0.2.1')\n"
        "ad = ndk.open_adapter('soft', address='192.0.2.2')\n"
        "a, b = connect_pair(ad, srv); connector = a.connector",
        "connector.wait_disconnect(None)",
        {"object": "connector.close()", "adapter": "ad.close()"}),
    "Call.get (a create that never completes)": (
        "ad = ndk.open_adapter('soft', misbehave='never_complete', create_mode='pending')\n"
        "call = ad.create_cq(8); assert call.status == ndk.Status.PENDING",
        "call.get()",
        {"adapter": "ad.close()"}),
    "Call.get (a request that never completes)": (
        "ad = ndk.open_adapter('soft', request_mode='pending')\n"
        "mr = ad.create_pd().get().create_mr().get(); buf = bytearray(4096)\n"
        "ad.knobs.misbehave = 'request_never_complete'\n"
        "call = mr.register(buf); assert call.status == ndk.Status.PENDING",
        "call.get()",
        {"object": "mr.close()", "adapter": "ad.close()"}),
}

# A call held in the provider (knob hold) on the adapter and on a CQ: the adapter's close ends
# the hold.
HELD = {
    "NdkCreateCq": ("ad.knobs.hold = 'NdkCreateCq'", "ad.create_cq(8)"),
    "NdkArmCq": ("cq = ad.create_cq(8).get(); ad.knobs.hold = 'NdkArmCq'",
                 "cq.arm(ndk.CqNotify.ANY)"),
}


# A call held on an object (knob hold), and the close of that object, which ends the hold: the
# call goes on into the provider and returns as it would have (the close pends on it until then,
# CLOSE-IN-FLIGHT), and the close is then issued and completes.  `after` closes what the call
# made or tied to the object, which the object's close waits for (digest 3.1).
OBJECT_HELD: dict[str, tuple[str, str, str, str]] = {
    "NdkCreateMr on a PD": (
        "pd = ad.create_pd().get(); ad.knobs.hold = 'NdkCreateMr'",
        "pd.create_mr().get()", "pd", "made[0].close()"),
    "NdkRegisterMr on an MR": (
        "mr = ad.create_pd().get().create_mr().get(); buf = bytearray(4096)\n"
        "ad.knobs.hold = 'NdkRegisterMr'",
        "mr.register(buf).get()", "mr", ""),
    "NdkSend on a QP": (
        "cq = ad.create_cq(8).get(); pd = ad.create_pd().get()\n"
        "qp = pd.create_qp(cq, cq, receive_queue_depth=4, initiator_queue_depth=4).get()\n"
        "ad.knobs.hold = 'NdkSend'",
        "qp.send([])", "qp", ""),
    "NdkGetCqResults on a CQ": (
        "cq = ad.create_cq(8).get(); ad.knobs.hold = 'NdkGetCqResults'",
        "cq.get_results(4)", "cq", ""),
    "NdkArmCq on a CQ": (
        "cq = ad.create_cq(8).get(); ad.knobs.hold = 'NdkArmCq'",
        "cq.arm(ndk.CqNotify.ANY)", "cq", ""),
    "NdkListen on a listener": (
        "listener = ad.create_listener().get(); ad.knobs.hold = 'NdkListen'",
        "listener.listen(('0.0.0.0', 0)).get()", "listener", ""),
    "NdkConnect on a connector": (
        "cq = ad.create_cq(8).get(); pd = ad.create_pd().get()\n"
        "qp = pd.create_qp(cq, cq, receive_queue_depth=4, initiator_queue_depth=4).get()\n"
        "connector = ad.create_connector().get(); ad.knobs.hold = 'NdkConnect'",
        "connector.connect(qp, ('192.0.2.250', 9)).wait(30)", "connector", ""),
    "NdkConnect, the QP it takes closed": (
        "cq = ad.create_cq(8).get(); pd = ad.create_pd().get()\n"
        "qp = pd.create_qp(cq, cq, receive_queue_depth=4, initiator_queue_depth=4).get()\n"
        "connector = ad.create_connector().get(); ad.knobs.hold = 'NdkConnect'",
        "connector.connect(qp, ('192.0.2.250', 9)).wait(30)", "qp", "connector.close()"),
}


def run_child(code: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT, env=env)


def child(setup: str, body: str) -> str:
    code = "import signal, sys, threading, time\nimport ndk\n" \
           "from ndk.testing import connect_pair\n" + setup + "\n" + textwrap.dedent(body)
    result = run_child(code)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


CLOSE_CASES = [(wait, close) for wait, (_, _, closes) in WAITS.items() for close in closes]


def close_a_waited_object(wait: str, close: str, before: str = "") -> str:
    """What a waiter of ``wait`` got when another thread did ``close`` while it waited."""
    setup, call, closes = WAITS[wait]
    return child(before + setup, f"""
    outcome = []
    def waiter():
        try:
            outcome.append(("returned", {call}))
        except ndk.ObjectClosedError as e:
            outcome.append(("closed", str(e)))
        except BaseException as e:
            outcome.append(("other", repr(e)))
    thread = threading.Thread(target=waiter, daemon=True)
    thread.start()
    time.sleep(0.2)  # the waiter is inside its wait (if not, it meets the closed object)
    {closes[close]}
    thread.join()
    print(outcome)
    """)


@pytest.mark.parametrize("wait, close", CLOSE_CASES)
def test_a_close_wakes_the_waiter_with_object_closed_error(wait: str, close: str) -> None:
    out = close_a_waited_object(wait, close)
    assert "('closed'," in out, out


@pytest.mark.parametrize("wait, close", CLOSE_CASES)
def test_a_close_wakes_the_waiter_without_its_slices(wait: str, close: str) -> None:
    """The close's own wake-up ends the wait: the waiter's slices (its checks for Ctrl-C) are
    an hour long here, so a wait that only noticed the close at its next check would outlast
    the child's timeout."""
    out = close_a_waited_object(wait, close,
                                before="from ndk import _core\n_core._set_wait_slice(3600)\n")
    assert "('closed'," in out, out


@pytest.mark.parametrize("held", sorted(OBJECT_HELD))
def test_an_objects_close_ends_a_call_held_on_it(held: str) -> None:
    """docs/semantics.md CLOSE-HELD: the close of the object a held call is on (or takes as an
    argument) ends the hold; the call returns what the provider answers (an NdkError is an
    answer), and the close, issued after it, completes with SUCCESS."""
    arm, call, closed, after = OBJECT_HELD[held]
    out = child("ad = ndk.open_adapter('soft')\n" + arm, f"""
    made, failed = [], []
    def caller():
        try:
            made.append({call})
        except ndk.NdkError as e:
            made.append(e.status)
        except BaseException as e:
            failed.append(repr(e))
    thread = threading.Thread(target=caller, daemon=True)
    thread.start()
    while int(ad.knobs.held) != 1:
        time.sleep(0.005)
    close = {closed}.close()
    thread.join()
    {after or "pass"}
    print("returned", len(made), failed, "held", ad.knobs.held, "close", close.wait(timeout=30).name)
    """)
    assert out.strip() == "returned 1 [] held 0 close SUCCESS", out


@pytest.mark.parametrize("wait", sorted(WAITS))
def test_sigint_ends_every_wait(wait: str) -> None:
    setup, call, _ = WAITS[wait]
    out = child(setup, f"""
    threading.Timer(0.2, lambda: signal.raise_signal(signal.SIGINT)).start()
    try:
        {call}
    except KeyboardInterrupt:
        print("interrupted")
    """)
    assert out.strip() == "interrupted"


@pytest.mark.parametrize("held", sorted(HELD))
def test_the_adapters_close_ends_a_held_call(held: str) -> None:
    """docs/knobs.md: a hold lasts until `release` is set or its adapter closes."""
    arm, call = HELD[held]
    out = child("ad = ndk.open_adapter('soft', create_mode='pending')\n" + arm, f"""
    returned = []
    thread = threading.Thread(target=lambda: returned.append({call}), daemon=True)
    thread.start()
    while int(ad.knobs.held) != 1:
        time.sleep(0.005)
    ad.close()
    thread.join()
    print("returned", len(returned))
    """)
    assert out.strip() == "returned 1"


def test_sigint_ends_a_held_call_and_is_raised_when_it_returns() -> None:
    """The issue's reproducer: ``ad.knobs.hold = "NdkCreateCq"; ad.create_cq(8)`` with
    create_mode=pending on the main thread; SIGINT releases the hold, the call goes on into
    the provider, and KeyboardInterrupt is raised when it returns."""
    out = child("ad = ndk.open_adapter('soft', create_mode='pending')", """
    ad.knobs.hold = "NdkCreateCq"
    threading.Timer(0.3, lambda: signal.raise_signal(signal.SIGINT)).start()
    try:
        ad.create_cq(8)
    except KeyboardInterrupt:
        print("interrupted", ad.knobs.held, repr(ad.knobs.hold))
    cq = ad.create_cq(8).get()  # the adapter goes on
    ad.close()
    print("closed")
    """)
    assert out.split("\n")[:2] == ["interrupted 0 ''", "closed"]
