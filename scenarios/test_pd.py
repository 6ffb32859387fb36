"""NDK_PD: NdkCreatePd, NdkGetPrivilegedMemoryRegionToken, NdkClosePd (digest 1.1, 1.2,
3.1)."""

from __future__ import annotations

import pytest

import ndk
from ndk import Status
from ndk.testing import OpenAdapter

from ndk.scenario import (CREATE_MODES, TIMEOUT, expect_closed, expect_created)
from ndk.scenario.counts import expect_count_enforced, reported_count


@pytest.mark.rule("PD-CREATE")
@pytest.mark.digest("1.1")
@pytest.mark.parametrize("mode", CREATE_MODES)
def test_create_pd(open_adapter: OpenAdapter, mode: str) -> None:
    """digest 1.1 (NdkCreatePd), 1.0: SUCCESS inline without a completion, or PENDING then
    exactly one completion with SUCCESS and the PD; the PD is usable (a child MR creates)."""
    adapter = open_adapter(create_mode=mode)
    pd = expect_created(adapter.create_pd(), mode)
    assert pd.object_type == ndk.ObjectType.PD
    expect_created(pd.create_mr(), mode)


@pytest.mark.rule("PD-CREATE-RESOURCES")
@pytest.mark.digest("3.7")
@pytest.mark.reference("CAPS")
def test_create_pd_beyond_max_pd_count(open_adapter: OpenAdapter) -> None:
    """digest 3.7 (NDIS_NDK_CAPABILITIES MaxPdCount: the PDs the miniport holds) and 1.1
    (NdkCreatePd: INSUFFICIENT_RESOURCES, i/a). docs/semantics.md CAPS (a reference choice):
    MaxPdCount creates succeed (stated); the next fails and gives no object (stated), with
    INSUFFICIENT_RESOURCES; after a close, a create succeeds again."""
    adapter = open_adapter()
    expect_count_enforced(reported_count(adapter, "max_pd_count"), adapter.create_pd)


@pytest.mark.rule("PD-PRIVILEGED-TOKEN")
@pytest.mark.digest("1.2")
def test_privileged_token_is_stable(adapter: ndk.Adapter, pd: ndk.Pd, mr: ndk.Mr) -> None:
    """digest 1.2 (NdkGetPrivilegedMemoryRegionToken): one token per PD for BuildLAM logical
    addresses, returned by a VOID call; it is a 32-bit value, the same on every call, and
    is not the token of a registered MR."""
    token = pd.get_privileged_memory_region_token()
    assert 0 <= token <= 0xFFFFFFFF
    assert pd.get_privileged_memory_region_token() == token
    assert token not in (mr.local_token, mr.remote_token)


@pytest.mark.rule("PD-CLOSE")
@pytest.mark.digest("1.0")
def test_close_empty_pd(adapter: ndk.Adapter) -> None:
    """digest 1.0 (Close): closing a PD without children succeeds (STATUS_SUCCESS with no
    close completion, or STATUS_PENDING and one); the PD is closed and using it raises
    ndk.ObjectClosedError."""
    pd = adapter.create_pd().get(timeout=TIMEOUT)
    expect_closed(pd.close())
    assert pd.closed and not pd.is_open
    with pytest.raises(ndk.ObjectClosedError):
        pd.create_mr()


@pytest.mark.rule("PD-INDEPENDENT")
@pytest.mark.digest("1.2")
def test_pds_are_independent(adapter: ndk.Adapter) -> None:
    """digest 1.2: each PD is a separate protection domain; closing one PD does not affect
    another PD's objects."""
    first = adapter.create_pd().get(timeout=TIMEOUT)
    second = adapter.create_pd().get(timeout=TIMEOUT)
    mr = second.create_mr().get(timeout=TIMEOUT)
    expect_closed(first.close())
    assert mr.is_open
    assert mr.register(bytearray(4096)).wait(timeout=TIMEOUT) == Status.SUCCESS
