"""Remote peers (issue 14, item 2) against the real extension: a peer interpreter started with
``--ndk-peer popen`` opens a soft adapter and answers through rpyc's proxies; a peer that dies
is a clear error, not a hang; soft's pairs pick transport=shm to reach it; a provider that
cannot reach the peer skips its pair scenarios with the reason; memory given across processes
fails naming the fix.  (A soft adapter needs no connection to answer a query: this works while the
soft provider has only its in-process transport.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ndk
from ndk._peer import parse_peer
from ndk._peer_process import PeerError, start_peer

pytest.importorskip("rpyc")


@pytest.fixture
def peer():
    started = start_peer(parse_peer("popen"))
    yield started
    started.close()


def test_a_popen_peer_opens_an_adapter_and_answers(peer) -> None:
    assert peer.pid != os.getpid() and peer.alive
    adapter = peer.open_adapter("soft", address="192.0.2.71")
    info = adapter.query_info()
    here = ndk.open_adapter("soft", address="192.0.2.72")
    try:
        assert info.max_cq_depth == here.query_info().max_cq_depth > 0
    finally:
        here.close()
    # enumerations arrive as this process's own members
    call = adapter.create_cq(cq_depth=info.max_cq_depth + 1)
    assert call.status is ndk.Status.INVALID_PARAMETER
    # an SGE made here reaches the peer as an SGE
    assert peer.connection.builtins.repr(ndk.Sge(0x1000, 64, 7)).startswith("<ndk.Sge")
    assert list(adapter.addresses) == ["192.0.2.71"]
    # the peer's own process opened it: its pid is the peer's
    assert peer.connection.modules.os.getpid() == peer.pid
    peer.close_adapters()
    assert adapter.closed


def test_an_error_in_the_peer_arrives_as_the_ndk_error(peer) -> None:
    adapter = peer.open_adapter("soft", create_mode="inline")
    adapter.knobs.fail("NdkCreatePd", ndk.Status.INSUFFICIENT_RESOURCES, mode="inline")
    with pytest.raises(ndk.NdkError) as error:
        adapter.create_pd().get(timeout=1.0)
    assert error.value.status == ndk.Status.INSUFFICIENT_RESOURCES


def test_a_peer_that_dies_is_an_error_naming_the_signal(peer) -> None:
    adapter = peer.open_adapter("soft")
    os.kill(peer.pid, signal.SIGKILL)
    with pytest.raises(EOFError):  # rpyc: the pipe closed; no wait for an answer
        adapter.query_info()
    assert not peer.alive
    assert peer.death() == f"the peer process (popen, pid {peer.pid}) killed by SIGKILL (signal 9)"


def test_a_peer_killed_on_purpose_dies_of_sigkill_and_is_no_death_to_report(peer) -> None:
    """Peer.kill() (the killed-peer scenario's tool): the peer interpreter ends by SIGKILL,
    sent to itself, and returns once it has; death() stays None, so the test that asked for it
    is not failed for it, and close() after it is quiet."""
    peer.open_adapter("soft")
    peer.kill()
    assert peer.process.returncode == -signal.SIGKILL
    assert not peer.alive
    assert peer.death() is None
    assert peer.adapters == []


def test_a_peer_that_cannot_start_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PeerError, match=r"netns=ndk-no-such-namespace: the peer did not start"
                       r".*its stderr: .*ndk-no-such-namespace"):
        start_peer(parse_peer("netns=ndk-no-such-namespace"), timeout=10.0)


SCENARIOS = '''
    import os
    import signal

    import pytest
    import ndk

    @pytest.mark.rule("PEER-PAIR")
    def test_pair(pair) -> None:
        a, b = pair
        assert b.listener is not None

    @pytest.mark.rule("PEER-DIES")
    def test_peer_dies(ndk_peer) -> None:
        adapter = ndk_peer.open_adapter("soft")
        os.kill(ndk_peer.pid, signal.SIGKILL)
        adapter.query_info()

    @pytest.mark.rule("PEER-AFTER")
    def test_after_a_peer_died(ndk_peer) -> None:
        assert ndk_peer.open_adapter("soft").query_info().max_cq_depth > 0
'''


def _run_scenarios(tmp_path: Path, name: str, text: str,
                   *command: str) -> subprocess.CompletedProcess:
    """``python3 -m COMMAND...`` in tmp_path, with ``text`` written to scenarios/NAME
    there (COMMAND names the folder as ``{scenarios}``)."""
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir(exist_ok=True)
    (scenarios / name).write_text(textwrap.dedent(text), encoding="utf-8")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("NDK_PROVIDER_SETUP", None)
    return subprocess.run(
        [sys.executable, "-m", *(word.format(scenarios=scenarios) for word in command)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)


def _conformance(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return _run_scenarios(tmp_path, "test_peers.py", SCENARIOS, "ndk", "conformance",
                          "--scenarios", "{scenarios}", "--progress", "off", *args, "--", "-rs")


def test_popen_runs_peers_over_shm_and_reports_a_death(tmp_path: Path) -> None:
    done = _conformance(tmp_path, "--ndk-peer", "popen")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    # the dead peer fails its scenario with what happened to it; the next one gets a new peer
    assert "test_peer_dies: ndk peer: the peer process (popen, pid " in out
    assert "killed by SIGKILL (signal 9)" in out
    # soft's default transport (inproc) cannot reach another process: the pair ran over shm
    assert "PEER-DIES" in out and "conformance: 2 passed, 1 failed, 0 skipped" in out, out
    assert "pair scenarios, where their peer ran:\n  popen: 2 passed, 1 failed" in out, out


def test_popen_with_a_transport_that_cannot_reach_it_skips_the_pair(tmp_path: Path) -> None:
    done = _conformance(tmp_path, "-k", "pair", "--ndk-peer", "popen",
                        "--ndk-option", "transport=inproc")
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert ("soft with transport=inproc reaches only adapters of its own process; "
            "--ndk-peer popen needs transport=shm or tcp") in out
    assert "conformance: 0 passed, 0 failed, 1 skipped" in out, out


def test_a_local_buffer_given_to_a_peer_object_fails_naming_new_buffer(peer) -> None:
    """Memory cannot cross processes: a peer's MR given this process's bytearray fails with
    one line saying to allocate the buffer beside it (ndk.testing.new_buffer), not with a
    list of argument types."""
    adapter = peer.open_adapter("soft", address="192.0.2.75")
    pd = adapter.create_pd().get(timeout=5.0)
    mr = pd.create_mr().get(timeout=5.0)
    with pytest.raises(TypeError) as failure:
        mr.register(bytearray(64))
    first_line = str(failure.value).splitlines()[0]
    assert first_line == ("ndk.Mr.register(): buffer is an object of another process (an rpyc "
                          "proxy): an NDK object takes memory of its own process; allocate the "
                          "buffer beside it with ndk.testing.new_buffer(object, size)")
    sink = ndk.testing.new_buffer(mr, 64)  # the fix the line names works
    assert mr.register(sink, flags=ndk.MrFlag.ALLOW_LOCAL_WRITE).wait(timeout=5.0) == 0


def test_local_peer_runs_the_pair_in_this_process(tmp_path: Path) -> None:
    done = _conformance(tmp_path, "-k", "pair")
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "pair scenarios, where their peer ran:\n  local: 1 passed" in out


def test_plain_lists_from_the_peer_compare_as_lists(peer) -> None:
    """A list of plain values (an empty result list, addresses) arrives as a list, so the
    scenarios' ``cq.get_results_ex(16) == []`` holds for the peer's CQ too."""
    adapter = peer.open_adapter("soft", address="192.0.2.73")
    cq = adapter.create_cq(cq_depth=8).get(timeout=5.0)
    assert cq.get_results_ex(16) == []
    assert adapter.addresses == ["192.0.2.73"]
    cq.close()


@pytest.fixture
def namespace():
    """A network namespace of our own for the test (root and iproute2 needed)."""
    if os.geteuid() != 0:
        pytest.skip("a network namespace needs root (ip netns add)")
    name = f"ndk-peer-test-{os.getpid()}"
    added = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if added.returncode != 0:
        pytest.skip(f"ip netns add {name} failed here: {added.stderr.strip()}")
    yield name
    subprocess.run(["ip", "netns", "delete", name], check=True)


def test_a_netns_peer_runs_in_its_namespace(namespace: str) -> None:
    peer = start_peer(parse_peer(f"netns={namespace}"))
    try:
        theirs = peer.connection.modules.os.readlink("/proc/self/ns/net")
        assert theirs != os.readlink("/proc/self/ns/net")
        adapter = peer.open_adapter("soft", address="192.0.2.74")
        assert adapter.query_info().max_cq_depth > 0
    finally:
        peer.close()


def test_a_peer_provider_with_no_common_transport_skips_the_pair(tmp_path: Path) -> None:
    done = _conformance(tmp_path, "-k", "pair", "--ndk-peer-provider", "loop")
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert ("soft with transport=inproc and loop share no transport: two providers connect "
            "only over a network (tcp, verbs)") in out
    assert "conformance: 0 passed, 0 failed, 1 skipped" in out


FAILED_PAIR = '''
    import pytest

    @pytest.mark.rule("PEER-PAIR-REFUSED")
    @pytest.mark.pair(private_data=bytes(4096))  # above MaxCallerData: NdkConnect refuses it
    def test_a_pair_whose_connect_fails(pair) -> None:
        pass

    @pytest.mark.rule("PEER-PAIR-NEXT")
    def test_the_next_pair(pair) -> None:
        a, b = pair
        assert b.listener is not None
'''


def test_a_pair_that_fails_to_connect_leaves_no_adapter_in_the_peer(tmp_path: Path) -> None:
    """A pair whose connect fails errors its own test only: its passive adapter in the peer is
    closed with the test, so the next pair opens one on the same address (before, every later
    pair failed with "address already owned by another soft adapter")."""
    done = _run_scenarios(tmp_path, "test_failed_pair.py", FAILED_PAIR, "pytest", "{scenarios}",
                          "-p", "ndk.testing", "-p", "no:cacheprovider", "-q",
                          "--ndk-provider", "soft:shm", "--ndk-peer", "popen",
                          "--ndk-pair-addresses", "192.0.2.83,192.0.2.84")
    out = done.stdout
    assert "STATUS_INVALID_BUFFER_SIZE" in out, out + done.stderr
    assert "1 passed, 1 error" in out, out + done.stderr
    assert "already owned" not in out


ACROSS = '''
    import os

    import pytest
    import ndk

    @pytest.mark.rule("PEER-ACROSS")
    def test_send_to_the_peer(pair, ndk_peer) -> None:
        a, b = pair
        assert ndk_peer.pid != os.getpid()
        assert ndk_peer.connection.modules.os.getpid() == ndk_peer.pid
        sink = ndk.testing.new_buffer(b.pd, 64)
        mr = b.pd.create_mr().get(timeout=5)
        assert mr.register(sink, flags=ndk.MrFlag.ALLOW_LOCAL_WRITE).wait(timeout=5) == 0
        assert b.qp.receive([mr.sge(0, 64)], request_context=7) is ndk.Status.SUCCESS
        source = bytearray(b"across processes")
        smr = a.pd.create_mr().get(timeout=5)
        assert smr.register(source).wait(timeout=5) == 0
        assert a.qp.send([smr.sge(0, len(source))]) is ndk.Status.SUCCESS
        got = b.cq.wait_results(1, timeout=5)[0]
        assert (got.status, got.request_context, got.bytes_transferred) == (
            ndk.Status.SUCCESS, 7, len(source))
        assert bytes(sink[:len(source)]) == bytes(source)
'''


def test_popen_with_shm_moves_bytes_to_the_peer_process(tmp_path: Path) -> None:
    """Once the soft provider has transport=shm (docs/transport.md), --ndk-peer popen runs a
    pair across two processes: the bytes sent from the test's process arrive in the peer's."""
    try:
        ndk.open_adapter("soft", transport="shm").close()
    except (ndk.KnobsNotSupported, ndk.NdkError) as error:
        pytest.skip(f"the soft provider has no transport=shm here yet: {error}")
    done = _run_scenarios(tmp_path, "test_across.py", ACROSS, "ndk", "conformance",
                          "--scenarios", "{scenarios}", "--progress", "off", "--ndk-peer", "popen",
                          "--ndk-option", "transport=shm",
                          "--", "--ndk-pair-addresses", "192.0.2.81,192.0.2.82")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "pair scenarios, where their peer ran:\n  popen: 1 passed" in done.stdout


def test_bytes_of_a_peer_buffer_come_in_one_request(peer, monkeypatch: pytest.MonkeyPatch) -> None:
    """``bytes()`` of a buffer in the peer (how the scenarios check what landed there) is one
    request bringing the bytes by value, not one request per byte."""
    buffer = peer.connection.builtins.bytearray(b"abc" * 1000)
    view = buffer[1:]  # a slice is the peer's too
    requests = []
    send = peer.connection.sync_request
    monkeypatch.setattr(peer.connection, "sync_request",
                        lambda *args: requests.append(args[0]) or send(*args))
    assert bytes(view) == (b"abc" * 1000)[1:]
    assert len(requests) <= 3  # the builtin bytes (once per connection), the call
