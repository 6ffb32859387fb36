"""Registered memory (docs/semantics.md, "The consumer's side"): every registration path holds
the Python buffer it registers for as long as the provider may touch it, and lets it go as soon
as the deregistration or the close completed, so the buffer can be resized again."""

from __future__ import annotations

import gc

import pytest

import ndk
from ndk import MrFlag, Status

TIMEOUT = 5


def test_close_releases_the_registered_buffer() -> None:
    with ndk.open_adapter("soft") as ad:
        pd = ad.create_pd().get(timeout=TIMEOUT)
        for mode in ("inline", "pending"):
            ad.knobs.close_mode = mode
            mr = pd.create_mr().get(timeout=TIMEOUT)
            buf = bytearray(64)
            mr.register(buf).get(timeout=TIMEOUT)
            with pytest.raises(BufferError):
                buf.append(1)
            assert mr.close().wait(timeout=TIMEOUT) == Status.SUCCESS
            buf.append(1)  # no longer locked, although `mr` is still alive
            assert len(buf) == 65


def test_an_mdl_registration_holds_its_buffer_after_the_mdl_is_gone() -> None:
    """Issue class 1: register_mr(ndk.Mdl(buf)) did not hold buf, so an RDMA write to the
    region could land in freed memory once the Mdl object was collected."""
    with ndk.open_adapter("soft") as ad:
        pd = ad.create_pd().get(timeout=TIMEOUT)
        mr = pd.create_mr().get(timeout=TIMEOUT)
        buf = bytearray(4096)
        flags = MrFlag.ALLOW_LOCAL_WRITE | MrFlag.ALLOW_REMOTE_WRITE
        assert mr.register_mr(ndk.Mdl(buf), 4096, flags).wait(timeout=TIMEOUT) == Status.SUCCESS
        gc.collect()  # the ndk.Mdl is gone; the registration must still hold the buffer
        with pytest.raises(BufferError):
            buf.clear()
        assert mr.deregister_mr().wait(timeout=TIMEOUT) == Status.SUCCESS
        buf.clear()  # deregistered: the buffer is the user's again
        assert len(buf) == 0
