"""What ndk._environment judges an error of the environment, on the fake ndk (the real
providers' errors: tests/binding/test_environment_errors.py)."""

from __future__ import annotations

import os

import pytest

from ndk import _environment


@pytest.fixture
def opens(fake_ndk, monkeypatch):
    """Every open_adapter call's (provider, knobs); ``fail[address]`` makes an open with that
    address knob raise the NdkError given."""
    monkeypatch.setattr(_environment, "_checked", {})
    calls, fail = [], {}

    def open_adapter(provider, *, validate=None, **knobs):
        calls.append((provider, knobs))
        error = fail.get(knobs.get("address"))
        if error is not None:
            raise error
        return fake_ndk.Adapter(provider, {}, False)

    monkeypatch.setattr(fake_ndk, "open_adapter", open_adapter)
    return calls, fail


def ndk_error(fake_ndk, status, text):
    error = fake_ndk.NdkError(text)
    error.status = status
    return error


def test_the_scenarios_addresses_are_checked_when_the_run_gives_none(opens):
    calls, _ = opens
    assert _environment.run_problem(["soft"], {}) is None
    assert calls == [("soft", {}), ("soft", {"address": _environment.SCENARIO_ADDRESSES})]


def test_the_runs_pair_addresses_replace_them(opens):
    # A network namespace that holds only the pair's addresses (tests/tcp/two-namespaces.sh).
    calls, _ = opens
    assert _environment.run_problem(["soft:tcp"], {}, peer_provider="soft",
                                    pair_addresses=("192.0.2.31", "192.0.2.32")) is None
    assert calls == [("soft:tcp", {"address": "192.0.2.31"}), ("soft", {"address": "192.0.2.32"})]


def test_an_address_the_host_lacks_is_the_environments_any_other_refusal_is_not(opens, fake_ndk):
    _, fail = opens
    fail[_environment.SCENARIO_ADDRESSES] = ndk_error(
        fake_ndk, 0xC000000D,  # STATUS_INVALID_PARAMETER
        "no RDMA device owns address 192.0.2.10")
    assert _environment.run_problem(["verbs:rxe0"], {}) is None
    _environment._checked.clear()
    fail[_environment.SCENARIO_ADDRESSES] = ndk_error(
        fake_ndk, fake_ndk.Status.INVALID_ADDRESS, "192.0.2.10 is not an address of this host")
    line = _environment.run_problem(["soft:tcp"], {})
    assert line.startswith("provider 'soft:tcp' cannot use its own or the scenarios' addresses")
    assert "network namespace" in line


def test_with_a_setup_command_only_a_provider_that_does_not_load_stops_the_run(opens, fake_ndk):
    _, fail = opens
    fail["192.0.2.31"] = ndk_error(fake_ndk, fake_ndk.Status.DEVICE_NOT_READY, "no device yet")
    assert _environment.run_problem(["verbs:rxe0"], {}, setup=True,
                                    pair_addresses=("192.0.2.31", "192.0.2.32")) is None
    fail["192.0.2.31"] = ndk_error(fake_ndk, fake_ndk.Status.NOT_SUPPORTED,
                                   "cannot load provider: x.so: No such file or directory")
    line = _environment.run_problem(["./x.so"], {}, setup=True,
                                    pair_addresses=("192.0.2.31", "192.0.2.32"))
    assert line.startswith("provider './x.so' does not load")


def test_the_runner_reads_the_plugins_options_from_the_pytest_arguments(opens):
    calls, _ = opens
    assert _environment.args_problem(["soft"], ["-x", "--ndk-option", "transport=shm",
                                                "--ndk-pair-addresses", "10.0.0.1,10.0.0.2",
                                                "--ndk-peer", "popen"]) is None
    # opened as the run opens it: in the run's own shm fabric, which soft declares it needs
    assert calls == [("soft", {"transport": "shm", "address": "10.0.0.1",
                               "shm_fabric": f"run-{os.getpid()}"})]
