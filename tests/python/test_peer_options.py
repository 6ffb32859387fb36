"""--ndk-peer and its companions (issue 14, item 2): parsing, the reachability table, the
pass-through of ``ndk conformance``, and the report's line of where the peers ran.  Pure
Python: no peer is started here (tests/binding/test_remote_peer.py starts real ones)."""

from __future__ import annotations

import os

import pytest

from ndk import cli
from ndk._pairs import _reaching, parse_options
from ndk._peer import (HOST, NETWORK, PROCESS, REACH, PeerSpec, parse_peer, picked_transport,
                       reach_of, unreachable)
from ndk._peer_process import peer_command
from ndk._report import Record, format_peers


@pytest.mark.parametrize("text, mode, target, location", [
    ("local", "local", None, PROCESS),
    ("popen", "popen", None, HOST),
    ("ssh=host-b", "ssh", "host-b", NETWORK),
    ("netns=ndk-b", "netns", "ndk-b", NETWORK),
])
def test_peer_values_parse_to_their_location(text: str, mode: str, target: str | None,
                                             location: str) -> None:
    spec = parse_peer(text)
    assert (spec.mode, spec.target, spec.location, str(spec)) == (mode, target, location, text)


@pytest.mark.parametrize("text", ["", "remote", "ssh", "ssh=", "netns", "popen=x", "local=1"])
def test_a_malformed_peer_says_what_is_accepted(text: str) -> None:
    with pytest.raises(ValueError, match="use local, popen, ssh=HOST or netns=NAME"):
        parse_peer(text)


def test_options_are_key_value_pairs() -> None:
    assert parse_options(["transport=shm", " rnr_timeout_ms = 20"], "--ndk-option") == {
        "transport": "shm", "rnr_timeout_ms": "20"}
    with pytest.raises(ValueError, match="--ndk-option 'transport': use KEY=VALUE"):
        parse_options(["transport"], "--ndk-option")


@pytest.mark.parametrize("provider, options, reach", [
    ("soft", {}, PROCESS),                      # transport=inproc by default
    ("soft", {"transport": "inproc"}, PROCESS),
    ("soft", {"transport": "shm"}, HOST),
    ("soft", {"transport": "tcp"}, NETWORK),
    ("loop", {}, PROCESS),
    ("verbs:rxe0", {}, NETWORK),
    ("/opt/libmine.so", {}, None),              # not known: tried
])
def test_reach_follows_the_transport(provider: str, options: dict, reach: str | None) -> None:
    assert reach_of(provider, options) == reach


def test_every_reach_is_a_location() -> None:
    assert set(REACH.values()) <= {PROCESS, HOST, NETWORK}


def test_inproc_cannot_reach_a_popen_peer_and_says_what_would() -> None:
    assert unreachable("soft", {}, "soft", {}, parse_peer("popen")) == (
        "soft with transport=inproc reaches only adapters of its own process; "
        "--ndk-peer popen needs transport=shm or tcp")


def test_a_popen_peer_of_soft_gets_shm_when_the_run_chose_no_transport() -> None:
    popen = parse_peer("popen")
    assert picked_transport("soft", {}, popen) == "shm"
    assert _reaching("soft", {}, popen) == {"transport": "shm", "shm_fabric": f"run-{os.getpid()}"}
    # what the run chose stays: its transport, or the transport its provider's name spells
    assert picked_transport("soft", {"transport": "inproc"}, popen) is None
    assert picked_transport("soft:tcp", {}, popen) is None
    assert _reaching("soft", {"transport": "tcp"}, popen) == {}
    # nothing to pick where the default reaches, nor for a network peer (tcp needs the run's
    # addresses), nor for a provider without a farther transport
    assert picked_transport("soft", {}, parse_peer("local")) is None
    assert picked_transport("soft", {}, parse_peer("ssh=b")) is None
    assert picked_transport("loop", {}, popen) is None
    assert picked_transport("/path/libmine.so", {}, popen) is None


def test_shm_reaches_a_popen_peer_but_not_another_host() -> None:
    shm = {"transport": "shm"}
    assert unreachable("soft", shm, "soft", shm, parse_peer("popen")) is None
    assert unreachable("soft", shm, "soft", shm, parse_peer("ssh=b")) == (
        "soft with transport=shm reaches only adapters on its own host; "
        "--ndk-peer ssh=b needs transport=tcp")


def test_the_peer_side_is_judged_too() -> None:
    reason = unreachable("verbs:siw0", {}, "soft", {}, parse_peer("netns=b"))
    assert reason == ("soft with transport=inproc reaches only adapters of its own process; "
                      "--ndk-peer netns=b needs transport=tcp")


def test_local_peers_are_always_reached() -> None:
    for provider in ("soft", "loop", "verbs", "/opt/libmine.so"):
        assert unreachable(provider, {}, provider, {}, PeerSpec("local")) is None


def test_two_providers_meet_only_on_a_wire() -> None:
    local = PeerSpec("local")
    assert unreachable("soft", {}, "loop", {}, local) == (
        "soft with transport=inproc and loop share no transport: two providers connect only "
        "over a network (tcp, verbs)")
    assert unreachable("soft", {"transport": "tcp"}, "verbs:siw0", {}, parse_peer("ssh=b")) is None


@pytest.mark.parametrize("text, head", [
    ("popen", ["env"]),
    ("ssh=host-b", ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-T", "host-b"]),
    ("netns=ndk-b", ["ip", "netns", "exec", "ndk-b", "env"]),
])
def test_the_peer_is_debians_python_with_the_same_package(text: str, head: list[str]) -> None:
    command = peer_command(parse_peer(text), "/build/python")
    assert command[:len(head)] == head
    words = " ".join(command)
    assert "PYTHONPATH=/build/python /usr/bin/python3 -c" in words
    assert "ndk._peer_rpyc" in words


def test_conformance_passes_the_pair_options_through(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {}
    monkeypatch.setattr("ndk.conformance.run", lambda **kwargs: seen.update(kwargs) or 0)
    assert cli.main(["conformance", "--ndk-peer", "popen", "--ndk-peer-provider", "loop",
                     "--ndk-option", "transport=shm", "--", "-x"]) == 0
    assert seen["extra_args"] == ["--ndk-peer", "popen", "--ndk-peer-provider", "loop",
                                  "--ndk-option", "transport=shm", "-x"]


def test_the_report_says_where_the_peers_ran() -> None:
    def record(n: int, outcome: str, peer: str | None) -> Record:
        return Record(nodeid=f"t{n}", rule="R", provider="soft", outcome=outcome, message=None,
                      duration=0.0, peer=peer)

    records = [record(1, "passed", "popen"), record(2, "skipped", "popen"),
               record(3, "passed", "popen"), record(4, "passed", None)]
    assert format_peers(records) == ("pair scenarios, where their peer ran:\n"
                                     "  popen: 2 passed, 1 skipped")
    assert format_peers([record(4, "passed", None)]) == ""


def test_the_report_counts_a_peer_of_another_provider_as_the_pair() -> None:
    def record(n: int, outcome: str, provider: str, peer_provider: str | None) -> Record:
        return Record(nodeid=f"t{n}", rule="R", provider=provider, outcome=outcome,
                      message=None, duration=0.0, peer="local", peer_provider=peer_provider)

    records = [record(1, "passed", "soft:tcp", "verbs:siw0"),
               record(2, "skipped", "soft:tcp", "verbs:siw0"),
               record(3, "passed", "verbs:siw0", "soft:tcp"),
               record(4, "passed", "soft:tcp", None)]
    assert format_peers(records) == ("pair scenarios, where their peer ran:\n"
                                     "  local: 1 passed\n"
                                     "  local, soft:tcp -> verbs:siw0: 1 passed, 1 skipped\n"
                                     "  local, verbs:siw0 -> soft:tcp: 1 passed")


def test_a_malformed_peer_is_a_usage_error_of_the_run(scenarios, pytester) -> None:
    scenarios(test_a="def test_x():\n    pass\n")
    result = pytester.runpytest("--ndk-peer", "elsewhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--ndk-peer 'elsewhere': use local, popen, ssh=HOST or netns=NAME*"])


def test_a_remote_peer_without_rpyc_is_a_usage_error_naming_the_package(
        scenarios, pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "rpyc" else real(name, *args))
    scenarios(test_a="def test_x():\n    pass\n")
    result = pytester.runpytest("--ndk-peer", "popen")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ndk-peer popen reaches the peer through rpyc, which is not "
                                 "installed here (Debian: apt-get install python3-rpyc)*"])


def test_the_pair_marker_selects_every_scenario_that_takes_the_pair(scenarios, pytester) -> None:
    """``-m pair`` is how a lane with a remote peer picks the pair scenarios: those that take
    the fixture with no marker of their own are marked too, and a class's marker is kept."""
    scenarios(test_a='''
        import pytest

        def test_plain_pair(pair): pass

        @pytest.mark.pair(inline_data_size=64)
        def test_marked_pair(pair): pass

        def test_no_pair(): pass

        @pytest.mark.pair(cq_depth=4)
        class TestClass:
            def test_in_class(self, pair, request):
                assert request.node.get_closest_marker("pair").kwargs == {"cq_depth": 4}
    ''')
    result = pytester.runpytest("--collect-only", "-q", "-m", "pair")
    result.stdout.fnmatch_lines(["*test_plain_pair*", "*test_marked_pair*", "*test_in_class*",
                                 "*3/4 tests collected (1 deselected)*"])


@pytest.mark.parametrize("peer, lacking, message", [
    ("ssh=host-b", "ssh", "--ndk-peer ssh=host-b: the peer is started with ssh, which is not "
     "installed here (Debian: apt-get install openssh-client; the peer host needs sshd)*"),
    ("netns=ndk-b", "ip", "--ndk-peer netns=ndk-b: the peer is started with ip netns exec, and "
     "ip is not installed here (Debian: apt-get install iproute2)*"),
])
def test_a_peer_whose_tool_is_missing_is_a_usage_error(
        scenarios, pytester, monkeypatch: pytest.MonkeyPatch, peer: str, lacking: str,
        message: str) -> None:
    import shutil

    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == lacking
                        else real(name, *a, **k))
    scenarios(test_a="def test_x():\n    pass\n")
    result = pytester.runpytest("--ndk-peer", peer)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])


def test_a_netns_peer_needs_root_and_the_namespace(scenarios, pytester,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: f"/usr/bin/{name}")
    scenarios(test_a="def test_x():\n    pass\n")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    result = pytester.runpytest("--ndk-peer", "netns=ndk-b")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ndk-peer netns=ndk-b: ip netns exec needs root*"])
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    result = pytester.runpytest("--ndk-peer", "netns=ndk-no-such-namespace-here")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ndk-peer netns=ndk-no-such-namespace-here: there is no "
                                 "network namespace ndk-no-such-namespace-here here (ip netns add*"])


def test_a_peer_that_could_not_start_is_not_started_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unreachable host fails the first pair scenario after ssh's timeout, the others at
    once with the same reason."""
    from ndk import _peer_process
    from ndk._pairs import PeerKeeper

    starts = []

    def fail(spec):
        starts.append(spec)
        raise _peer_process.PeerError(f"--ndk-peer {spec}: the peer did not start (ssh ...)")

    monkeypatch.setattr(_peer_process, "start_peer", fail)
    keeper = PeerKeeper(parse_peer("ssh=host-b"))
    with pytest.raises(_peer_process.PeerError, match=r"did not start \(ssh \.\.\.\)$"):
        keeper.peer()
    with pytest.raises(_peer_process.PeerError,
                       match=r"did not start \(ssh \.\.\.\) \(not started again in this run\)"):
        keeper.peer()
    assert len(starts) == 1
