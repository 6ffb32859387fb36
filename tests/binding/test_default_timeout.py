"""A provider that never completes is a TIMEOUT, not a run that hangs (issue 25, item 8):
``ndk conformance`` limits each scenario's time (``--timeout``, a default when not given), and a
scenario waiting for a completion the provider never delivers (the fault layer's
``misbehave=never_complete``: a pending create's completion is never called) fails as TIMEOUT
while the run goes on to the next scenario; in a worker (``-n 1``) so does a call that never
returns from the provider (the fault layer's ``hold``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pytest_timeout")

SCENARIOS = '''
import os

import pytest

import ndk

NATIVE = os.environ.get("HANG_NATIVE") == "1"


@pytest.mark.rule("HANG-CREATE")
def test_waits_for_a_create_that_never_completes(open_adapter) -> None:
    adapter = open_adapter(create_mode="pending", misbehave="never_complete")
    call = adapter.create_pd()
    call.wait()  # no timeout of its own: the run's limit ends it


@pytest.mark.rule("HANG-IN-NATIVE-CODE")
def test_a_call_held_inside_the_provider(adapter: ndk.Adapter) -> None:
    if not NATIVE:
        pytest.skip("the native hang is this file's second run's (-n 1)")
    adapter.knobs.hold = "NdkCreateCq"  # the fault layer blocks the next create, never released
    adapter.create_cq(cq_depth=8)


@pytest.mark.rule("HANG-NEXT")
def test_runs_after_it(adapter: ndk.Adapter) -> None:
    assert adapter.create_cq(cq_depth=8).wait(timeout=5) == ndk.Status.SUCCESS
'''


def run_hangs(tmp_path: Path, *args: str, native: bool = False) -> list[str]:
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir(exist_ok=True)
    (scenarios / "test_hang.py").write_text(SCENARIOS, encoding="utf-8")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", XDG_CACHE_HOME=str(tmp_path / "cache"),
               HANG_NATIVE="1" if native else "0")
    env.pop("NDK_PROVIDER_SETUP", None)
    done = subprocess.run(
        [sys.executable, "-m", "ndk", "conformance", "--timeout", "2", "--scenarios",
         str(scenarios), "--progress", "off", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    return lines[next(i for i, line in enumerate(lines) if line.startswith("rule ")):]


def test_a_create_that_never_completes_is_a_timeout_and_the_run_goes_on(tmp_path: Path) -> None:
    report = run_hangs(tmp_path)
    assert report[:4] == ["rule                 soft", "HANG-CREATE          TIMEOUT",
                          "HANG-IN-NATIVE-CODE  skip", "HANG-NEXT            pass"]
    assert any(line.startswith("  TIMEOUT  scenarios/test_hang.py::test_waits_for_a_create_that_"
                               "never_completes[soft]: timeout: Timeout >2.0s") for line in report)


def test_a_call_stuck_in_the_provider_is_a_timeout_in_a_worker(tmp_path: Path) -> None:
    # The signal cannot reach Python while the call blocks in native code: the worker's
    # watchdog ends it 5 s past the limit, and the report says TIMEOUT.
    pytest.importorskip("xdist")
    report = run_hangs(tmp_path, "-n", "1", native=True)
    assert report[:4] == ["rule                 soft", "HANG-CREATE          TIMEOUT",
                          "HANG-IN-NATIVE-CODE  TIMEOUT", "HANG-NEXT            pass"]
