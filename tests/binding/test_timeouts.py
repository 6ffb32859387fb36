"""A wait that times out names the NDK call and what it waited for, with the hint for manual
progress (issue 16)."""

import re

import pytest

import ndk

HINT = "if the adapter runs with progress='manual', call adapter.step()"


def test_call_timeouts_name_the_ndk_function():
    with ndk.open_adapter("soft", progress="manual", create_mode="pending",
                          close_mode="pending", request_mode="pending") as ad:
        call = ad.create_cq(8)
        with pytest.raises(TimeoutError) as error:
            call.get(timeout=0.05)
        assert str(error.value) == ("NdkCreateCq did not complete within 0.05 s (waiting for "
                                    "its completion callback); " + HINT)
        ad.step(10)
        cq = call.get(timeout=1)
        with pytest.raises(TimeoutError, match=r"^NdkResizeCq did not complete within 0\.05 s"):
            cq.resize_cq(16).wait(timeout=0.05)
        ad.step(10)
        with pytest.raises(TimeoutError, match=r"^NdkCloseCq did not complete within 0\.05 s"):
            cq.close().wait(timeout=0.05)
        pd_call = ad.create_pd()
        ad.step(10)
        mr_call = pd_call.get(timeout=1).create_mr()
        ad.step(10)
        with pytest.raises(TimeoutError, match="^NdkRegisterMr did not complete") as error:
            mr_call.get(timeout=1).register(bytearray(64)).wait(timeout=0.05)
        assert str(error.value).endswith(HINT)
        ad.step(10)


def test_wait_results_names_what_it_polled():
    with ndk.open_adapter("soft") as ad:
        cq = ad.create_cq(8).get(timeout=5)
        with pytest.raises(TimeoutError) as error:
            cq.wait_results(2, timeout=0.05)
        assert re.match(r"ndk\.Cq\.wait_results\(\): 0 of 2 results arrived within 0\.05 s "
                        r"\(polling NdkGetCqResultsEx\): \[\]; ", str(error.value))
        assert str(error.value).endswith(HINT)
        with pytest.raises(TimeoutError, match=r"polling NdkGetCqResults\)"):
            cq.wait_results(1, timeout=0.01, ex=False)
