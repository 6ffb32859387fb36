"""What NDK states inside a reference-choice scenario fails a provider; the choice only differs
(issue 26, "levels that mean something").  Bugs seeded through the fault layer's ``fail`` knob
into real scenarios of scenarios/test_connection.py, on soft:

* CONNECT-HOST-UNREACHABLE: every NdkConnect fails NETWORK_UNREACHABLE inline instead of
  HOST_UNREACHABLE.  NDK states only that the Connect fails (it does), so both of its
  scenarios (request_mode inline and pending) differ: the status, and inline, are the choice;
* DISCONNECT-AFTER-PEER: every NdkDisconnect fails.  NDK states that a Disconnect after the
  peer's succeeds (digest 3.6), so the scenario fails, naming that section, where before its
  stated part was wrapped it only differed.

And the helper itself, on a create: ``expect_create_failed(..., stated_in=)``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ndk
import ndk.testing  # noqa: F401  (first: it has pytest rewrite ndk.scenario's assertions)
from ndk import Status
from ndk.scenario import expect_create_failed
from ndk.scenario.stated import Stated

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.fixture
def scenarios(tmp_path: Path) -> Path:
    """A folder with the connection scenarios alone (collected faster than the whole suite)."""
    folder = tmp_path / "scenarios"
    folder.mkdir()
    shutil.copy(SCENARIOS / "test_connection.py", folder)
    return folder


def conformance(scenarios: Path, rule: str, fail: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
               XDG_CACHE_HOME=str(scenarios.parent / "cache"))
    env.pop("NDK_PROVIDER_SETUP", None)
    return subprocess.run(
        [sys.executable, "-m", "ndk", "conformance", "--scenarios", str(scenarios), "--progress",
         "off", "--provider", "soft", "--rule", rule, "--ndk-option", f"fail={fail}"],
        cwd=scenarios.parent, env=env, capture_output=True, text=True, timeout=120)


def summary(run: subprocess.CompletedProcess[str]) -> str:
    return run.stdout.splitlines()[-1].split(" in ")[0]


def test_another_status_where_ndk_states_only_a_failure_differs(scenarios: Path) -> None:
    run = conformance(scenarios, "CONNECT-HOST-UNREACHABLE",
                      "NdkConnect NETWORK_UNREACHABLE inline -1")
    assert run.returncode == 0, run.stdout + run.stderr
    assert summary(run) == (
        "conformance: 0 passed, 0 failed, 2 differ (reference choice), 0 skipped")


def test_a_failure_where_ndk_states_success_fails(scenarios: Path) -> None:
    run = conformance(scenarios, "DISCONNECT-AFTER-PEER",
                      "NdkDisconnect INSUFFICIENT_RESOURCES inline -1")
    assert run.returncode == 1, run.stdout + run.stderr
    assert summary(run) == "conformance: 0 passed, 1 failed, 0 skipped"
    assert "test_disconnect_after_peer_disconnected[soft]: ndk._stated.Stated: digest 3.6" \
        in run.stdout


def test_a_create_ndk_states_must_fail_is_checked_as_stated() -> None:
    """ndk.scenario.expect_create_failed with stated_in: a create that succeeds where NDK
    states it must fail raises Stated (a failure of the provider); one that fails with another
    status than the reference choice raises a plain AssertionError (a difference)."""
    with ndk.open_adapter("soft") as adapter:
        with pytest.raises(Stated, match="^digest 1.2: the call succeeded"):
            expect_create_failed(adapter.create_pd(), Status.INSUFFICIENT_RESOURCES,
                                 stated_in="digest 1.2")
        adapter.knobs.fail("NdkCreatePd", Status.INSUFFICIENT_RESOURCES)
        with pytest.raises(AssertionError) as failure:
            expect_create_failed(adapter.create_pd(), Status.INVALID_PARAMETER,
                                 stated_in="digest 1.2")
        assert not isinstance(failure.value, Stated)
