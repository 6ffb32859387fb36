"""adapter.query_ndk_capabilities(): NDIS_NDK_CAPABILITIES (digest 3.7) through the provider
entry's QueryNdkCapabilities (core/include/ndk/provider.h), bare and through the layers."""

import dataclasses

import pytest

import ndk

MAXULONG = 0xFFFFFFFF
HEADER = (0x80, 1, 56)  # NDIS_OBJECT_TYPE_DEFAULT, revision 1, NDIS_SIZEOF_..._REVISION_1


@pytest.mark.parametrize("validate", [False, True], ids=["bare", "validated"])
def test_soft_reports_no_count_by_default(validate):
    with ndk.open_adapter("soft", validate=validate) as adapter:
        caps = adapter.query_ndk_capabilities()
    assert isinstance(caps, ndk.NdkCapabilities)
    assert caps.header == HEADER
    assert caps.flags == 0
    assert (caps.max_qp_count, caps.max_cq_count, caps.max_mr_count, caps.max_pd_count,
            caps.max_mw_count, caps.max_srq_count) == (MAXULONG,) * 6
    assert (caps.max_inbound_read_limit, caps.max_outbound_read_limit) == (0, 0)
    assert caps.missing_counter_mask == 0


def test_soft_reports_its_count_knobs_as_they_change():
    with ndk.open_adapter("soft", max_qp_count=3, max_mw_count=7) as adapter:
        caps = adapter.query_ndk_capabilities()
        assert (caps.max_qp_count, caps.max_mw_count) == (3, 7)
        adapter.knobs.max_cq_count = 5
        adapter.knobs.max_srq_depth = 0  # no SRQ: MaxSrqCount 0
        later = adapter.query_ndk_capabilities()
    assert (later.max_qp_count, later.max_cq_count, later.max_srq_count) == (3, 5, 0)


def test_loop_has_neither_windows_nor_srqs():
    with ndk.open_adapter("loop") as adapter:
        caps = adapter.query_ndk_capabilities()
    assert (caps.max_pd_count, caps.max_mw_count, caps.max_srq_count) == (MAXULONG, 0, 0)


def test_capabilities_are_a_frozen_value():
    with ndk.open_adapter("soft", max_pd_count=2) as adapter:
        first, second = adapter.query_ndk_capabilities(), adapter.query_ndk_capabilities()
    assert first == second
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.max_pd_count = 3


def test_closed_adapter_raises():
    adapter = ndk.open_adapter("soft")
    adapter.close()
    with pytest.raises(ndk.ObjectClosedError):
        adapter.query_ndk_capabilities()
