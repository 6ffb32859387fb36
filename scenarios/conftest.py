"""Conformance scenarios: shared fixtures.

The ``ndk.testing`` plugin gives ``ndk_provider``, ``open_adapter(**knobs)``, ``adapter``,
``pd``, ``cq``, the ``rule``/``digest`` markers and ``requires()``. The fixtures below build
the small object graphs many scenarios start from; the assertion helpers they share live in
``scenario_support.py`` beside this file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

pytest.register_assert_rewrite("scenario_support")  # detailed assertion messages there too

from scenario_support import TIMEOUT  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Iterator

    import ndk

pytest_plugins = ["ndk.testing"]


@pytest.fixture
def buffer() -> bytearray:
    """64 KiB of writable memory to register."""
    return bytearray(64 * 1024)


@pytest.fixture
def mr(pd: ndk.Pd, buffer: bytearray) -> Iterator[ndk.Mr]:
    """A normal MR on ``pd`` with ``buffer`` registered for local write."""
    import ndk

    region = pd.create_mr().get(timeout=TIMEOUT)
    assert region.register(buffer, flags=ndk.MrFlag.ALLOW_LOCAL_WRITE).wait(
        timeout=TIMEOUT) == ndk.Status.SUCCESS
    yield region
    if not region.closed:
        region.close()


@pytest.fixture
def qp(pd: ndk.Pd, cq: ndk.Cq) -> Iterator[ndk.Qp]:
    """A QP on ``pd`` using ``cq`` for both queues, depth 8 each, qp_context 0x51."""
    pair = pd.create_qp(cq, cq, qp_context=0x51, receive_queue_depth=8,
                        initiator_queue_depth=8).get(timeout=TIMEOUT)
    yield pair
    if not pair.closed:
        pair.close()
