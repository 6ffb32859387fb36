"""Python misuse raises a clear exception; it never crashes (issue: foundation, item 6)."""

import gc

import pytest

import ndk
from ndk import Status


def test_use_after_close_raises_object_closed_error():
    ad = ndk.open_adapter("soft")
    cq = ad.create_cq(cq_depth=8).get(timeout=5)
    assert cq.close().wait(timeout=5) == Status.SUCCESS
    with pytest.raises(ndk.ObjectClosedError, match="CQ is closed"):
        cq.get_results(1)
    ad.close()
    with pytest.raises(ndk.ObjectClosedError, match="adapter is closed"):
        ad.create_pd()


def test_adapter_close_closes_children():
    ad = ndk.open_adapter("soft")
    pd = ad.create_pd().get(timeout=5)
    mr = pd.create_mr().get(timeout=5)
    ad.close()
    assert pd.closed and mr.closed and ad.closed
    with pytest.raises(ndk.ObjectClosedError):
        pd.create_mw()


def test_wrong_argument_types_raise_type_error():
    with ndk.open_adapter("soft") as ad:
        with pytest.raises(TypeError):
            ad.create_cq(cq_depth="deep")
        pd = ad.create_pd().get(timeout=5)
        with pytest.raises(TypeError):
            pd.create_qp("not a cq", None)
        with pytest.raises(ValueError, match="not an IPv4 or IPv6 address"):
            ad.create_shared_endpoint(("not-an-address", 1))


def test_unknown_provider_and_bad_knobs_raise():
    with pytest.raises(ndk.NdkError) as info:
        ndk.open_adapter("no-such-provider")
    assert info.value.status == Status.NOT_SUPPORTED
    with pytest.raises(ndk.KnobsNotSupported, match="unknown knob 'no_such_knob'"):
        ndk.open_adapter("soft", no_such_knob=1)
    with pytest.raises(ndk.NdkError) as info:
        ndk.open_adapter("soft", create_mode="sometimes")
    assert info.value.status == Status.INVALID_PARAMETER
    with ndk.open_adapter("soft") as ad:
        with pytest.raises(ValueError, match="expected inline, pending or random"):
            ad.knobs.create_mode = "sometimes"
        with pytest.raises(ValueError, match="not an NDK function"):
            ad.knobs.fail("NdkNoSuchFunction", Status.INSUFFICIENT_RESOURCES)
        with pytest.raises(ValueError, match="completes inline only"):
            ad.knobs.fail("NdkQueryAdapterInfo", Status.INSUFFICIENT_RESOURCES, mode="async")


def test_get_raises_ndk_error_with_the_final_status():
    with ndk.open_adapter("soft", create_mode="pending") as ad:
        call = ad.create_cq(cq_depth=0)
        with pytest.raises(ndk.NdkError) as info:
            call.get(timeout=5)
        assert info.value.status == Status.INVALID_PARAMETER
        assert "STATUS_INVALID_PARAMETER (0xC000000D)" in str(info.value)


def test_wait_times_out_with_timeout_error_when_a_close_pends():
    with ndk.open_adapter("soft") as ad:
        pd = ad.create_pd().get(timeout=5)
        mr = pd.create_mr().get(timeout=5)
        close = pd.close()  # pends while its MR is open (docs/semantics.md: PARENT)
        assert close.status == Status.PENDING
        with pytest.raises(TimeoutError):
            close.wait(timeout=0.05)
        mr.close()
        assert close.wait(timeout=5) == Status.SUCCESS


def test_registered_buffer_stays_alive_and_cannot_be_resized():
    with ndk.open_adapter("soft") as ad:
        mr = ad.create_pd().get(timeout=5).create_mr().get(timeout=5)
        buf = bytearray(b"x" * 4096)
        assert mr.register(buf, flags=ndk.MrFlag.ALLOW_LOCAL_WRITE).wait(timeout=5) == Status.SUCCESS
        with pytest.raises(BufferError):
            buf.extend(b"more")  # exported while registered
        sge = mr.sge(16, 32)
        assert sge.length == 32 and sge.memory_region_token == mr.local_token
        del buf
        gc.collect()
        assert mr.deregister_mr().wait(timeout=5) == Status.SUCCESS
        assert mr.local_token == 0


def test_read_only_buffer_cannot_be_registered_for_write():
    with ndk.open_adapter("soft") as ad:
        mr = ad.create_pd().get(timeout=5).create_mr().get(timeout=5)
        with pytest.raises(BufferError):
            mr.register(b"read only", flags=ndk.MrFlag.ALLOW_LOCAL_WRITE)
        assert mr.register(b"read only").wait(timeout=5) == Status.SUCCESS


def test_dropping_everything_without_closing_is_clean():
    for mode in ("inline", "pending"):
        ad = ndk.open_adapter("soft", create_mode=mode, close_mode=mode)
        pd = ad.create_pd().get(timeout=5)
        cq = ad.create_cq(cq_depth=4).get(timeout=5)
        pd.create_qp(cq, cq).get(timeout=5)
        ad.create_pd()  # never waited for
        del ad, pd, cq
        gc.collect()
