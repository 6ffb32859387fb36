"""The object counts a miniport reports (NDIS_NDK_CAPABILITIES, digest 3.7), and the check of
one of them: the scenarios of the ``*-CREATE-RESOURCES`` rules (docs/semantics.md CAPS).

``reported_count(adapter, "max_pd_count")`` gives the count a scenario works to: on a provider
with the knob of that name (soft) it is first set to ``SMALL_COUNT``, quick to reach; elsewhere
it is the provider's own.  The scenario is skipped, as a capability, where the provider reports
no capabilities, reports the kind absent (0), or reports more than ``MAX_EXHAUSTIBLE``: a
scenario has 60 s, and creating that many objects of one kind is all a provider is asked to
do within it.

``expect_count_enforced(count, create)`` then creates ``count`` objects, which must
succeed (the miniport said it holds that many: stated), asks for one more, which must fail
and give no object (stated: the count is a maximum; digest 1.0: a failed create has no
object), with INSUFFICIENT_RESOURCES (the choice: CAPS), and after closing one creates
one again (the choice: the count is of objects held at once).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import ndk
from ndk import Status

from . import TIMEOUT, expect_closed, expect_created, shrink_limits
from .stated import stated

__all__ = ["MAX_EXHAUSTIBLE", "SMALL_COUNT", "expect_count_enforced", "reported_count"]

MAX_EXHAUSTIBLE = 4096  # the most objects of one kind a scenario creates to reach the count
SMALL_COUNT = 4         # the count set through a provider's knob, where it has one

NO_COUNT = 0xFFFFFFFF   # MAXULONG: the provider keeps no count of its own for the kind


def reported_count(adapter: ndk.Adapter, field: str) -> int:
    """The Max*Count ``field`` (snake_case, e.g. ``max_qp_count``) of ``adapter``'s miniport,
    after setting it to ``SMALL_COUNT`` through the knob of the same name where the provider has
    one; skips the scenario (a capability) where there is no count to reach."""
    shrink_limits(adapter, **{field: SMALL_COUNT})
    capabilities = adapter.query_ndk_capabilities()
    if capabilities is None:
        pytest.skip("the provider reports no NDIS_NDK_CAPABILITIES (no QueryNdkCapabilities "
                    "in its entry, core/include/ndk/provider.h)")
    count = int(getattr(capabilities, field))
    if count == 0:
        pytest.skip(f"NDIS_NDK_CAPABILITIES {field} is 0: the adapter has none of the kind")
    if count == NO_COUNT:
        pytest.skip(f"NDIS_NDK_CAPABILITIES {field} is MAXULONG: the provider keeps no count")
    if count > MAX_EXHAUSTIBLE:
        pytest.skip(f"NDIS_NDK_CAPABILITIES {field} is {count}, more than the "
                    f"{MAX_EXHAUSTIBLE} a scenario creates")
    return count


def expect_count_enforced(count: int, create: Callable[[], ndk.Call[Any]]) -> None:
    """``create`` (one create call of the kind, on a miniport holding none yet) succeeds
    ``count`` times, fails the next time with INSUFFICIENT_RESOURCES and no object, and
    succeeds again once one of them is closed; each inline or through its completion, as the
    provider chooses (digest 1.0)."""
    source = "digest 3.7: NDIS_NDK_CAPABILITIES gives the most objects the miniport holds"
    with stated(f"{source}: {count} creates succeed"):
        held = [expect_created(create(), "i/a") for _ in range(count)]
    over = create()
    final = over.wait(timeout=TIMEOUT)
    with stated(f"{source}: create number {count + 1} fails, and gives no object "
                "(digest 1.0)"):
        assert final != Status.SUCCESS, f"create number {count + 1} succeeded"
        assert over.object is None
    assert final == Status.INSUFFICIENT_RESOURCES  # the choice: docs/semantics.md CAPS
    expect_closed(held.pop().close())
    expect_created(create(), "i/a")
