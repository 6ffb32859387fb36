"""The soft provider's read-only knob `quiescent` (docs/knobs.md): 1 exactly when nothing can
happen in this process until a consumer calls, which lets the scenarios' waits for something
that must not happen end at once (ndk.scenario.quiet_period)."""

import pytest

import ndk


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
        assert ad.knobs.quiescent == 1
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
        assert ad.knobs.quiescent == 1  # the timer went with the held Send


def test_an_adapter_that_reaches_other_processes_makes_the_process_not_quiescent():
    # A peer in another process may send at any time: nothing in this process can say it won't.
    with ndk.open_adapter("soft") as inproc:
        assert inproc.knobs.quiescent == 1
        with ndk.open_adapter("soft", transport="shm") as shm:
            assert shm.knobs.quiescent == 0
            assert inproc.knobs.quiescent == 0
        assert inproc.knobs.quiescent == 1
