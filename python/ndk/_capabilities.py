"""NDIS_NDK_CAPABILITIES (digest 3.7): what a miniport says it can hold, as NDIS has it from
MiniportInitializeEx.  ``adapter.query_ndk_capabilities()`` returns one, or None when the
provider does not report them (its entry has no QueryNdkCapabilities: core/include/ndk/provider.h).
"""

from __future__ import annotations

from dataclasses import dataclass

# MAXULONG in a count: the provider keeps no count of its own for that kind.
NO_COUNT = 0xFFFFFFFF


@dataclass(frozen=True)
class NdkCapabilities:
    """NDIS_NDK_CAPABILITIES, fields in snake_case; ``header`` is its NDIS_OBJECT_HEADER
    (Type, Revision, Size) and NdkInfo is left out (the adapter's NDK_ADAPTER_INFO is
    ``query_info()``)."""

    header: tuple[int, int, int]
    flags: int
    max_qp_count: int
    max_cq_count: int
    max_mr_count: int
    max_pd_count: int
    max_inbound_read_limit: int
    max_outbound_read_limit: int
    max_mw_count: int
    max_srq_count: int
    missing_counter_mask: int
