"""A misbehaving provider never crashes or hangs the consumer, even with the validation layer
off (docs/semantics.md, "The consumer's side"; issue class 3): for every `misbehave` mode of the
soft provider, in both create modes, a child interpreter runs a short workload over every kind
of call without validation and must exit normally.  Exceptions the misbehaviour causes (a
timeout, an ndk.NdkError, a RuntimeError naming a provider fault) are fine; a signal, an abort
or a hang is not.  With validation on, the scenarios check that each mode is *reported*
(scenarios/test_validation_provider.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

import ndk

CHILD_TIMEOUT = 120


def misbehave_modes() -> list[str]:
    """Every mode the soft provider knows: its reply to an unknown one lists them."""
    try:
        ndk.open_adapter("soft", misbehave="no-such-mode").close()
    except ndk.NdkError as error:
        listed = str(error).split("expected one of", 1)[-1].split(":", 1)[0]
        modes = [name for name in re.findall(r"[a-z_]+", listed) if name != "none"]
        if modes:
            return modes
    raise AssertionError("the soft provider did not list its misbehave modes")


WORKLOAD = """
import ndk
from ndk import MrFlag, Status

def attempt(action):
    try:
        return action()
    except (ndk.NdkError, TimeoutError, RuntimeError, ValueError, ndk.ObjectClosedError):
        return None   # what the misbehaviour caused: fine, as long as nothing crashes

srv = ndk.open_adapter("soft", address="192.0.2.71", misbehave=MODE, create_mode=CREATE)
cli = ndk.open_adapter("soft", address="192.0.2.72", misbehave=MODE, create_mode=CREATE)
for ad in (srv, cli):
    cq = attempt(lambda: ad.create_cq(8).get(timeout=0.3))
    pd = attempt(lambda: ad.create_pd().get(timeout=0.3))
    if pd is not None:
        mr = attempt(lambda: pd.create_mr().get(timeout=0.3))
        if mr is not None:
            attempt(lambda: mr.register(bytearray(4096), flags=MrFlag.ALLOW_LOCAL_WRITE).get(timeout=0.3))
        attempt(lambda: pd.create_mw().get(timeout=0.3))
    if cq is not None:
        attempt(lambda: cq.arm(ndk.CqNotify.ANY))
        attempt(lambda: cq.get_results_ex(4))
pair = attempt(lambda: ndk.testing.connect_pair(cli, srv))
if pair is not None:
    a, b = pair
    buf = bytearray(4096)
    mr = attempt(lambda: b.pd.create_mr().get(timeout=0.3))
    if mr is not None and attempt(lambda: mr.register(buf, flags=MrFlag.ALLOW_LOCAL_WRITE).get(timeout=0.3)) is not None:
        for i in range(4):
            attempt(lambda: b.qp.receive([mr.sge(0, 64)], request_context=object()))
            attempt(lambda: a.qp.send([], request_context=i))
        attempt(lambda: b.cq.arm(ndk.CqNotify.ANY))
        attempt(lambda: b.cq.wait_results(4, timeout=0.3))
        attempt(lambda: a.cq.wait_results(4, timeout=0.3))
        attempt(lambda: a.connector.disconnect().wait(timeout=0.3))
srv.close()
cli.close()
print("survived")
"""


@pytest.mark.parametrize("create_mode", ["inline", "pending"])
@pytest.mark.parametrize("mode", misbehave_modes())
def test_a_misbehaving_provider_is_survived_without_validation(mode: str, create_mode: str) -> None:
    code = f"MODE = {mode!r}\nCREATE = {create_mode!r}\n" + textwrap.dedent(WORKLOAD)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=CHILD_TIMEOUT, env=env)
    assert result.returncode == 0, (result.returncode, result.stderr[-3000:])
    assert result.stdout.split() == ["survived"]
