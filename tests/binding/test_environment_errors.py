"""Errors of the environment stop a conformance run before anything is collected (issue 25, item
3): a provider that does not load, one that loads but does not open, a device that is absent,
addresses that are not this host's.  ``ndk conformance`` says it in one line naming the cause
and the fix and exits 2, with no scenario run (no matrix, no "differs", no skip); a plain
``pytest`` run with the plugin stops the same way.

Each run gets a scenarios folder whose one scenario would pass on soft, so that a check that
did not fire shows as a report and exit code 0, not as a slow run.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ndk

SCENARIO = '''
import pytest


@pytest.mark.rule("ENV-OPEN")
def test_opens(adapter) -> None:
    assert adapter.query_info() is not None
'''


@pytest.fixture
def scenarios(tmp_path: Path) -> Path:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "test_env.py").write_text(SCENARIO, encoding="utf-8")
    return folder


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("NDK_PROVIDER_SETUP", None)
    return subprocess.run([sys.executable, "-m", *command], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def conformance(scenarios: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run(["ndk", "conformance", "--scenarios", str(scenarios), "--progress", "off", *args],
               scenarios.parent)


def assert_one_line(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""  # no scenario collected, no report
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("ndk conformance: ")
    for word in words:
        assert word in lines[0]


def opens(provider: str, **knobs: str) -> bool:
    try:
        ndk.open_adapter(provider, **knobs).close()
    except ndk.NdkError:
        return False
    return True


def test_a_provider_that_does_not_load(scenarios: Path) -> None:
    done = conformance(scenarios, "--provider", "/nonexistent/libnope.so")
    assert_one_line(done, "'/nonexistent/libnope.so' does not load",
                    "No such file or directory", "`ndk providers`")


def test_a_file_that_is_not_a_library(scenarios: Path, tmp_path: Path) -> None:
    library = tmp_path / "libnotaprovider.so"
    library.write_text("not an ELF file\n", encoding="utf-8")
    done = conformance(scenarios, "--provider", str(library))
    assert_one_line(done, "does not load", "file too short")


def test_a_library_that_is_not_a_provider(scenarios: Path) -> None:
    # The binding's own extension module: a shared library without NdkHarnessGetProvider.
    done = conformance(scenarios, "--provider", importlib.import_module("ndk._core").__file__)
    assert_one_line(done, "loads but is not an NDK provider", "NdkHarnessGetProvider")


def test_a_provider_that_loads_but_does_not_open(scenarios: Path) -> None:
    # The soft provider's knob adapter_not_ready makes OpenNDKAdapterHandler fail.
    done = conformance(scenarios, "--provider", "soft", "--ndk-option", "adapter_not_ready=True")
    assert_one_line(done, "'soft' loads but its adapter does not open",
                    "NDIS_STATUS_ADAPTER_NOT_READY", "ndk info --provider soft")


def test_a_device_that_is_absent(scenarios: Path) -> None:
    if "verbs" not in ndk.providers():
        pytest.skip("this tree is built without the verbs provider (tests/setup.sh leaves it "
                    "out of build-asan/ and build-tsan/): no device of it can be absent")
    if opens("verbs:rxe0"):
        pytest.skip("this host has the RDMA device rxe0: it is not absent here")
    done = conformance(scenarios, "--provider", "verbs:rxe0")
    assert_one_line(done, "'verbs:rxe0' has no device here", "STATUS_DEVICE_NOT_READY")


def test_addresses_that_are_not_on_this_host(scenarios: Path) -> None:
    if opens("soft:tcp", address="192.0.2.10,2001:db8::10"):
        pytest.skip("this host (or network namespace) holds the scenarios' addresses")
    done = conformance(scenarios, "--provider", "soft:tcp")
    assert_one_line(done, "'soft:tcp' cannot use its own or the scenarios' addresses",
                    "STATUS_INVALID_ADDRESS", "network namespace")


def test_a_knob_the_provider_lacks(scenarios: Path) -> None:
    done = conformance(scenarios, "--provider", "soft", "--ndk-option", "no_such_knob=1")
    assert_one_line(done, "does not take the --ndk-option knobs", "no_such_knob")


def test_the_pairs_passive_provider_is_checked_too(scenarios: Path) -> None:
    done = conformance(scenarios, "--provider", "soft", "--ndk-peer-provider",
                       "/nonexistent/libpeer.so")
    assert_one_line(done, "'/nonexistent/libpeer.so' does not load")


def test_a_plain_pytest_run_stops_the_same_way(scenarios: Path) -> None:
    (scenarios / "conftest.py").write_text('pytest_plugins = ["ndk.testing"]\n', encoding="utf-8")
    done = run(["pytest", "-q", "-p", "no:cacheprovider", str(scenarios), "--ndk-provider",
                "/nonexistent/libnope.so"], scenarios.parent)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "ndk.testing: provider '/nonexistent/libnope.so' does not load" in done.stderr
    assert "passed" not in done.stdout and "error" not in done.stdout.lower()


def test_a_provider_that_runs_is_not_stopped(scenarios: Path) -> None:
    done = conformance(scenarios, "--provider", "soft")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "conformance: 1 passed, 0 failed, 0 skipped" in done.stdout
