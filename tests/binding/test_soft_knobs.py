"""The soft provider's knobs that set what it reports and enforces (docs/knobs.md: object
caps, NDK_ADAPTER_INFO fields, at open and at run time).

These were KNOB-* scenarios.  A knob sets soft's own limits, so what they check is that the
knob reaches the provider's report and its checks, not what NDK asks of a provider: the
checks themselves are judged by the scenarios of their rules (CQ-CREATE-DEPTH, the
*-CREATE-RESOURCES of docs/semantics.md CAPS)."""

from __future__ import annotations

import ndk
from ndk import Status
# ndk.testing first: it registers ndk.scenario for pytest's assertion rewriting, which must
# come before ndk.scenario is imported.
import ndk.testing  # noqa: F401
from ndk.scenario import expect_create_failed, expect_created


def test_cap_is_per_miniport() -> None:
    """The caps are the miniport's, and each ndk.open_adapter opens its own: a full one does
    not limit another one (docs/semantics.md CAPS)."""
    with ndk.open_adapter("soft", max_pd_count=1) as full:
        held = expect_created(full.create_pd(), "inline")
        expect_create_failed(full.create_pd(), Status.INSUFFICIENT_RESOURCES, "inline")
        with ndk.open_adapter("soft", max_pd_count=1) as other:
            expect_created(other.create_pd(), "inline")
        assert held.is_open


def test_info_fields_from_knobs() -> None:
    """NDK_ADAPTER_INFO fields set by knobs at open are what NdkQueryAdapterInfo reports."""
    knobs = dict(max_cq_depth=16, max_srq_depth=0, max_receive_queue_depth=32,
                 max_inline_data_size=8, frmr_page_count=32, max_caller_data=20,
                 adapter_flags=int(ndk.AdapterFlag.IN_ORDER_DMA_SUPPORTED))
    with ndk.open_adapter("soft", **knobs) as adapter:
        info = adapter.query_info()
        for field, value in knobs.items():
            assert int(getattr(info, field)) == value, field


def test_info_knob_at_run_time_is_enforced() -> None:
    """The CqDepth check (digest 1.1) uses the MaxCqDepth the adapter reports now: lowering
    it at run time makes a create above it fail with INVALID_PARAMETER."""
    with ndk.open_adapter("soft") as adapter:
        adapter.knobs.max_cq_depth = 16
        assert adapter.query_info().max_cq_depth == 16
        expect_create_failed(adapter.create_cq(17), Status.INVALID_PARAMETER, "inline")
        expect_created(adapter.create_cq(16), "inline")
