"""NDK_MW: NdkCreateMw, NdkCloseMw (digest 1.2, 1.5)."""

from __future__ import annotations

import pytest

import ndk
from ndk import Status
from ndk.testing import OpenAdapter

from ndk.scenario import (CREATE_MODES, FAILURE_MODES, TIMEOUT, expect_closed,
                          expect_create_failed, expect_created)


@pytest.mark.rule("MW-CREATE")
@pytest.mark.digest("1.2")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_create_mw(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.2 (NdkCreateMw), 1.0: SUCCESS inline or PENDING then exactly one completion
    with SUCCESS and the MW (object type Mw 5)."""
    adapter = open_adapter(create_mode=mode)
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    mw = expect_created(pd.create_mw(), mode)
    assert mw.object_type == ndk.ObjectType.MW


@pytest.mark.rule("MW-CREATE-RESOURCES")
@pytest.mark.digest("1.2")
@pytest.mark.parametrize("how", FAILURE_MODES)
def test_create_mw_insufficient_resources(adapter: ndk.Adapter, pd: ndk.Pd, how: str) -> None:
    """digest 1.2: NdkCreateMw fails with INSUFFICIENT_RESOURCES inline or asynchronously;
    no MW; the next create succeeds."""
    adapter.knobs.fail("NdkCreateMw", Status.INSUFFICIENT_RESOURCES, mode=how)
    expect_create_failed(pd.create_mw(), Status.INSUFFICIENT_RESOURCES, how)
    expect_created(pd.create_mw(), "i/a")


@pytest.mark.rule("MW-CLOSE")
@pytest.mark.digest("1.5")
def test_close_unbound_mw(pd: ndk.Pd) -> None:
    """digest 1.0, 1.5: closing an MW that was never bound succeeds (STATUS_SUCCESS with no
    close completion, or STATUS_PENDING and one); using it afterwards raises
    ndk.ObjectClosedError."""
    mw = pd.create_mw().get(timeout=TIMEOUT)
    expect_closed(mw.close())
    assert mw.closed
    with pytest.raises(ndk.ObjectClosedError):
        mw.get_remote_token_from_mw()


@pytest.mark.rule("MW-MANY")
@pytest.mark.digest("1.2")
def test_many_windows_on_one_pd(pd: ndk.Pd) -> None:
    """digest 1.2: a PD holds any number of MWs (no cap configured); each is a distinct
    object, and closing one leaves the others open."""
    windows = [pd.create_mw().get(timeout=TIMEOUT) for _ in range(8)]
    expect_closed(windows[3].close())
    assert [w.is_open for w in windows] == [True] * 3 + [False] + [True] * 4
