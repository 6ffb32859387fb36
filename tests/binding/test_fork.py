"""fork() and the adapters a child inherits (docs/semantics.md, FORK).

A forked child does not own the adapters its parent opened: their provider state, threads and
locks are the parent's.  In the child, any use of one (or of its objects) raises
ndk.InheritedAdapterError, closing one (or letting it be finalised at exit) leaves it untouched,
and the child may open adapters of its own.  The parent's adapters go on unaffected.

The matrix: what the child does x the soft transport.  Each case runs in a fresh interpreter
that forks; a child that hangs is killed after CHILD_TIMEOUT and fails the case (no timing is
asserted: only a hang reaches the timeout).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

CHILD_TIMEOUT = 30  # a forked child still running then is killed: the case fails

TRANSPORTS = ["inproc", "shm", "tcp"]

# What the forked child does, and what it must print before exiting with status 0.
CHILD_ACTIONS = {
    "closes_inherited": ("cq.close(); ad.close(); print('closed', ad.closed, cq.closed)",
                         "closed True True"),
    "exits": ("pass  # never touches ndk: sys.exit runs the finalisation", ""),
    "opens_its_own": ("own = ndk.open_adapter('soft', **OWN); own.create_cq(8).get(); "
                      "own.close(); print('own ok')", "own ok"),
    "uses_inherited": ("""
try:
    ad.create_pd()
except ndk.InheritedAdapterError as e:
    print('adapter:', 'before fork()' in str(e))
try:
    cq.arm(ndk.CqNotify.ANY)
except ndk.InheritedAdapterError as e:
    print('object:', isinstance(e, ndk.ObjectClosedError))
""", "adapter: True\nobject: True"),
}

PARENT = """
import os, signal, sys, time
import ndk

KNOBS = {knobs}
OWN = {own}  # the inherited adapter keeps its address in the child's copy of the fabric
ad = ndk.open_adapter("soft", **KNOBS)
cq = ad.create_cq(8).get()
pd = ad.create_pd().get()
sys.stdout.flush()
pid = os.fork()
if pid == 0:
{action}
    sys.stdout.flush()
    sys.exit(0)
deadline = time.monotonic() + {timeout}
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    if time.monotonic() > deadline:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise SystemExit("the forked child hung")
    time.sleep(0.02)
print("child status", os.waitstatus_to_exitcode(status))
# The parent's adapter is unaffected by what the child did.
assert pd.create_mr().get(timeout=10) is not None
cq.close(); pd.close(); ad.close()
print("parent ok")
"""


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("action", sorted(CHILD_ACTIONS))
def test_fork_matrix(action: str, transport: str) -> None:
    code, expected = CHILD_ACTIONS[action]
    knobs: dict[str, str] = {} if transport == "inproc" else {"transport": transport}
    own = dict(knobs)
    if transport == "tcp":  # 127.0.0.0/8 is local on every Linux host (test_tcp_transport.py)
        knobs["address"], own["address"] = "127.0.0.81", "127.0.0.82"
    script = PARENT.format(knobs=repr(knobs), own=repr(own), timeout=CHILD_TIMEOUT,
                           action=textwrap.indent(textwrap.dedent(code).strip(), "    "))
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=CHILD_TIMEOUT + 30, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.strip().split("\n")
    assert lines[-2:] == ["child status 0", "parent ok"], result.stdout + result.stderr
    assert "\n".join(lines[:-2]) == expected, result.stdout + result.stderr


def test_a_grandchild_does_not_own_its_parents_adapter() -> None:
    """Ownership follows each fork: an adapter a child opened is inherited by its own child."""
    script = textwrap.dedent("""
    import os, sys
    import ndk
    if os.fork() == 0:
        own = ndk.open_adapter("soft")
        pid = os.fork()
        if pid == 0:
            try:
                own.create_pd()
            except ndk.InheritedAdapterError:
                print("grandchild refused", flush=True)
            sys.exit(0)
        os.waitpid(pid, 0)
        own.create_pd().get(timeout=10)
        own.close()
        print("child ok", flush=True)
        sys.exit(0)
    os.wait()
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=CHILD_TIMEOUT + 30)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["grandchild refused", "child ok"]
