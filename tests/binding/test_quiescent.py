"""The soft provider's read-only knob `quiescent` (docs/knobs.md): 1 exactly when nothing can
happen in this process until a consumer calls, which lets the scenarios' waits for something
that must not happen end at once (ndk.scenario.quiet_period)."""

import os
import re
import time

import pytest

import ndk
from ndk import OpType, Status

from transport_peer import connect_to_child, send_and_receive_echo

TIMEOUT = 10.0
ALL = ndk.MrFlag.ALLOW_LOCAL_WRITE | ndk.MrFlag.ALLOW_REMOTE_READ | ndk.MrFlag.ALLOW_REMOTE_WRITE
# Local on every Linux host (tcp), and soft addresses like any other (shm).
CLIENT, SERVER = "127.0.0.81", "127.0.0.82"


def test_an_idle_adapter_is_quiescent_and_the_knob_is_read_only():
    with ndk.open_adapter("soft") as ad:
        assert ad.knobs.quiescent == 1
        with pytest.raises(ndk.KnobValueError, match="read only"):
            ad.knobs.quiescent = 0
        assert ad.knobs.quiescent == 1


def test_work_held_for_the_engine_or_the_fault_layer_is_not_quiescent():
    # progress=manual holds the engine's tasks and the fault layer's pended completions until
    # stepped: a pended create is something that will still happen.
    with ndk.open_adapter("soft", progress="manual", create_mode="pending") as ad:
        assert ad.knobs.quiescent == 1
        call = ad.create_cq(8)
        assert call.status == ndk.Status.PENDING
        assert ad.pending_steps > 0
        assert ad.knobs.quiescent == 0
        while ad.pending_steps:
            ad.step(1)
        assert call.wait(timeout=5) is not None
        assert ad.knobs.quiescent == 1
        call.object.close()


def test_a_timer_set_is_not_quiescent():
    # A Send that finds no receive is held at the target until the receiver-not-ready timer
    # ends it (docs/semantics.md): the timer is something that will still happen.
    with ndk.open_adapter("soft", rnr_timeout_ms=60000) as ad:
        a, b = ndk.testing.connect_pair(ad, ad)
        mr = a.pd.create_mr().get(timeout=5)
        buffer = bytearray(64)
        assert mr.register(buffer, flags=ndk.MrFlag.ALLOW_LOCAL_WRITE).wait(timeout=5) == \
            ndk.Status.SUCCESS
        # Settled first: the engine thread that completed the registration may still be
        # finishing its task when wait() returns (the race this assertion lost under load).
        assert settled(ad)
        assert a.qp.send([mr.sge(0, 8)], request_context=1) == ndk.Status.SUCCESS
        assert ad.knobs.quiescent == 0  # the Send waits for a receive, its timer set
        peer_mr = b.pd.create_mr().get(timeout=5)
        sink = bytearray(64)
        assert peer_mr.register(sink, flags=ndk.MrFlag.ALLOW_LOCAL_WRITE).wait(timeout=5) == \
            ndk.Status.SUCCESS
        assert b.qp.receive([peer_mr.sge(0, 64)], request_context=2) == ndk.Status.SUCCESS
        got = []
        for _ in range(5000):
            got += a.cq.get_results_ex(4)
            if got:
                break
        assert [r.status for r in got] == [ndk.Status.SUCCESS]
        assert settled(ad)  # the timer went with the held Send


def transport_knobs(transport: str, test: str) -> dict:
    """The knobs of an adapter of ``transport``: over shm in a fabric of the test's own, so
    that runs side by side never meet."""
    if transport == "shm":
        test = re.sub(r"[^A-Za-z0-9_.-]", "-", test)[-30:]
        return {"transport": "shm", "shm_fabric": f"test-{os.getpid()}-quiescent-{test}"}
    return {"transport": "tcp"}


def settled(*adapters: ndk.Adapter) -> bool:
    """The knob says 1 on every adapter at one look, asked until it does (True) or for
    TIMEOUT (False): what a scenario's wait for something that must not happen does."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if all(ad.knobs.quiescent == 1 for ad in adapters):
            return True
        time.sleep(0.0005)
    return False


@pytest.fixture(params=["shm", "tcp"])
def pair_here(request):
    """(client, server): two adapters of this process over shm or tcp, each holding one end
    of a connection (ndk.testing.connect_pair), and a registered buffer on each."""
    knobs = transport_knobs(request.param, request.node.name)
    with ndk.open_adapter("soft", address=CLIENT, **knobs) as client_ad, \
            ndk.open_adapter("soft", address=SERVER, **knobs) as server_ad:
        client, server = ndk.testing.connect_pair(client_ad, server_ad)
        for side in (client, server):
            side.buffer = bytearray(1 << 16)
            side.mr = side.pd.create_mr().get(timeout=TIMEOUT)
            assert side.mr.register(side.buffer, flags=ALL).wait(timeout=TIMEOUT) == \
                Status.SUCCESS
        yield client, server


@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_an_adapter_that_nobody_is_connected_to_is_quiescent(transport):
    # A listener with no connection waiting is nothing in flight.
    knobs = transport_knobs(transport, "alone")
    with ndk.open_adapter("soft", address=CLIENT, **knobs) as ad:
        listener = ad.create_listener().get(timeout=TIMEOUT)
        assert listener.listen((CLIENT, 0)).wait(timeout=TIMEOUT) == Status.SUCCESS
        assert settled(ad)
        listener.close()


def test_both_ends_here_with_nothing_in_flight_is_quiescent(pair_here):
    client, server = pair_here
    assert settled(client.adapter, server.adapter)


def test_quiescent_only_once_everything_sent_has_arrived(pair_here):
    """Each round posts a Receive at the server and a Send at the client, waits for the knob
    to say 1, and only then looks, without waiting, at the CQs: the Send's completion (which
    needs the server's answer back, so its CQ first: over shm a poll of an empty CQ serves the
    poller's own adapter's rings) and the Receive's are both there.  A knob that said 1 with
    the Send, or its answer, still on its way finds a CQ empty."""
    client, server = pair_here
    for round in range(200):
        size = (round * 97) % 4096
        assert server.qp.receive([server.mr.sge(0, 4096)], request_context=round) == \
            Status.SUCCESS
        assert client.qp.send([client.mr.sge(0, size)] if size else [],
                              request_context=round) == Status.SUCCESS
        assert settled(client.adapter, server.adapter), f"round {round}"
        sent = client.cq.get_results_ex(4)
        received = server.cq.get_results_ex(4)
        assert [(r.type, r.status, r.request_context) for r in sent] == \
            [(OpType.SEND, Status.SUCCESS, round)], f"round {round}"
        assert [(r.type, r.status, r.bytes_transferred) for r in received] == \
            [(OpType.RECEIVE, Status.SUCCESS, size)], f"round {round}"


def test_quiescent_only_once_the_peer_has_its_disconnect_event(pair_here):
    """NdkDisconnect from the client: once the knob says 1 the server's disconnect event is
    there to read at once (the FIN, or the Disconnect message, has been taken)."""
    client, server = pair_here
    assert settled(client.adapter, server.adapter)
    call = client.connector.disconnect()
    assert settled(client.adapter, server.adapter)
    assert server.connector.wait_disconnect(timeout=0) is not None
    assert call.wait(timeout=TIMEOUT) == Status.SUCCESS


@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_a_connection_to_another_process_is_never_quiescent(request, transport):
    # A peer in another process may send at any time: nothing in this process can say it
    # won't, even when the last exchange has completed on both sides.
    client, server = ("192.0.2.81", "192.0.2.82") if transport == "shm" else (CLIENT, SERVER)
    knobs = transport_knobs(transport, "elsewhere")
    with ndk.open_adapter("soft") as inproc:
        connected = connect_to_child(knobs, client, {**knobs, "rnr_timeout_ms": 50}, server)
        side = next(connected)
        try:
            send_and_receive_echo(side, 100)
            for _ in range(50):
                assert side[0]["ad"].knobs.quiescent == 0
                assert inproc.knobs.quiescent == 0
                time.sleep(0.001)
        finally:
            connected.close()
