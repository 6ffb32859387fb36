"""Blocking calls and the interpreter (docs/semantics.md, "The consumer's side"; issue classes 4,
6 and 7): every call that may block in the provider releases the GIL, every wait notices Ctrl-C
(KeyboardInterrupt) long before its timeout and leaves the awaited call as it was, and the
interpreter exits cleanly while daemon threads are still inside provider calls.

Each case runs in a child interpreter: what is tested is that the child does not freeze, abort
or ignore a signal, which the test's own interpreter could not survive to report.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

CHILD_TIMEOUT = 60  # a frozen or deaf child is killed here and fails the test


def run_child(code: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=CHILD_TIMEOUT, env=env)


# A pending call that completes only when stepped: knob progress=manual holds every completion.
PENDING_CREATE = """
    import ndk
    ad = ndk.open_adapter("soft", create_mode="pending", progress="manual")
    call = ad.create_pd()
    assert call.status == ndk.Status.PENDING
"""

# Each blocking wait, given a 30 s timeout it must not reach: a SIGINT arrives after 0.2 s.
WAITS = {
    "Call.wait": "call.wait(timeout=30)",
    "Call.get": "call.get(timeout=30)",
    "Call.wait_forever": "call.wait()",
    "Cq.wait_results": "cq.wait_results(1, timeout=30)",
    "Cq.wait_notification": "cq.wait_notification(timeout=30)",
    "Cq.poll_into": "cq.poll_into(results, min_results=1, timeout=None)",
    "Listener.next_connection": "listener.next_connection(timeout=30)",
}


@pytest.mark.parametrize("wait", sorted(WAITS))
def test_ctrl_c_interrupts_every_wait_and_the_call_stays_consistent(wait: str) -> None:
    result = run_child(PENDING_CREATE + f"""
    import signal, threading, time
    ad2 = ndk.open_adapter("soft")
    cq = ad2.create_cq(8).get()
    cq.arm(ndk.CqNotify.ANY)
    listener = ad2.create_listener().get()
    # made before the signal is due: what is tested is the wait, not numpy's first import,
    # which reports a Ctrl-C as ImportError (batch.cpp, new_array)
    results = ndk.Cq.result_array(4)
    threading.Timer(0.2, lambda: signal.raise_signal(signal.SIGINT)).start()
    start = time.monotonic()
    try:
        {WAITS[wait]}
    except KeyboardInterrupt:
        print(f"interrupted after {{time.monotonic() - start:.3f}} s")
    else:
        raise SystemExit("the wait returned without the interrupt")
    # The call is as it was: still pending, and it completes once stepped.
    assert not call.done and call.completions == 0
    ad.step(100)
    assert call.wait(timeout=5) == ndk.Status.SUCCESS and call.completions == 1
    print("consistent")
    """)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split()
    assert "consistent" in lines
    elapsed = float(result.stdout.split("after ")[1].split(" s")[0])
    assert elapsed < 10, f"KeyboardInterrupt came after {elapsed} s, near the 30 s timeout"


@pytest.mark.parametrize("function, call", [
    ("NdkCreatePd", "ad.create_pd()"),
    ("NdkCreateCq", "ad.create_cq(8)"),
    ("NdkCreateConnector", "ad.create_connector()"),
    ("NdkRegisterMr", "mr.register(bytearray(4096))"),
    ("NdkGetCqResultsEx", "cq.get_results_ex(4)"),
    ("NdkArmCq", "cq.arm(ndk.CqNotify.ANY)"),
])
def test_a_held_call_does_not_freeze_the_interpreter(function: str, call: str) -> None:
    """knob hold blocks the call inside the provider: the GIL must be free meanwhile, so this
    thread can read `held`, release the hold, and close the adapter."""
    result = run_child(f"""
    import threading, time, ndk
    ad = ndk.open_adapter("soft")
    cq = ad.create_cq(8).get()
    pd = ad.create_pd().get()
    mr = pd.create_mr().get()
    ad.knobs.hold = "{function}"
    worker = threading.Thread(target=lambda: {call}, daemon=True)
    worker.start()
    deadline = time.monotonic() + 20
    while ad.knobs.held != 1 and time.monotonic() < deadline:
        time.sleep(0.01)          # runs only if the held thread let the GIL go
    assert ad.knobs.held == 1, "the call was never held"
    ad.knobs.release = 1
    worker.join(20)
    assert not worker.is_alive()
    ad.close()
    print("free")
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["free"]


@pytest.mark.parametrize("poll", [
    "cq.get_results_ex(4)",
    "cq.wait_results(1, timeout=0.05)",
    "cq.poll_into(ndk.Cq.result_array(4), min_results=1, timeout=0.05)",
    "cq.wait_notification(timeout=0.05)",
])
def test_the_interpreter_exits_cleanly_with_a_thread_inside_a_call(poll: str) -> None:
    result = run_child(f"""
    import threading, time, ndk
    ad = ndk.open_adapter("soft")
    cq = ad.create_cq(8).get()
    def loop():
        while True:
            {poll}
    threading.Thread(target=loop, daemon=True).start()
    time.sleep(0.2)
    print("exiting")
    """)
    assert result.returncode == 0, result.stderr
    assert "terminate called" not in result.stderr
    assert result.stdout.split() == ["exiting"]
