"""The fault layer's completion modes (docs/knobs.md: ``create_mode``, ``request_mode``,
``close_mode``, ``random`` with a ``seed``) as the binding reports them, on the soft provider.

These were the KNOB-* scenarios.  The layer makes the pends itself, in front of any provider,
so they judged no provider: what they check is the harness's machinery (docs/semantics.md
KNOBS), and each call still follows digest 1.0 (SUCCESS inline and no completion, or PENDING
and exactly one)."""

from __future__ import annotations

import ndk
from ndk import Status
# ndk.testing first: it registers ndk.scenario for pytest's assertion rewriting, which must
# come before ndk.scenario is imported.
import ndk.testing  # noqa: F401
from ndk.scenario import TIMEOUT, expect_call, expect_created, expect_request


def test_create_mode_set_at_run_time() -> None:
    """Switching create_mode at run time switches how the next create completes: inline
    (no completion) <-> PENDING and one completion."""
    with ndk.open_adapter("soft") as adapter:
        expect_created(adapter.create_pd(), "inline")
        adapter.knobs.create_mode = "pending"
        assert adapter.knobs.create_mode == "pending"
        expect_created(adapter.create_pd(), "pending")
        expect_created(adapter.create_cq(4), "pending")
        adapter.knobs.create_mode = "inline"
        expect_created(adapter.create_pd(), "inline")


def test_request_mode_pending_leaves_creates_inline() -> None:
    """With request_mode="pending" every asynchronous request returns PENDING and calls its
    completion once; creates are unaffected (still inline)."""
    with ndk.open_adapter("soft", request_mode="pending") as adapter:
        pd = expect_created(adapter.create_pd(), "inline")
        mr = expect_created(pd.create_mr(), "inline")
        expect_request(mr.register(bytearray(4096)), "pending")
        expect_request(mr.deregister_mr(), "pending")
        listener = adapter.create_listener().get(timeout=TIMEOUT)
        expect_request(listener.listen(("0.0.0.0", 0)), "pending")


def test_close_mode_set_at_run_time() -> None:
    """With close_mode="pending" a close returns PENDING and completes exactly once; back to
    "inline" it returns SUCCESS with no completion (docs/semantics.md CLOSE-MODE).

    The inline close comes before any pending one: a close may pend while a completion the
    provider delivered is still inside its callback (digest 3.1), which the previous pending
    close's completion can be when this thread goes on."""
    with ndk.open_adapter("soft") as adapter:
        first = adapter.create_pd().get(timeout=TIMEOUT)
        second = adapter.create_pd().get(timeout=TIMEOUT)
        adapter.knobs.close_mode = "pending"
        adapter.knobs.close_mode = "inline"
        expect_call(first.close(), Status.SUCCESS, "inline")
        adapter.knobs.close_mode = "pending"
        expect_call(second.close(), Status.SUCCESS, "pending")


def _random_run(seed: int, count: int = 32) -> list[Status]:
    with ndk.open_adapter("soft", create_mode="random", seed=seed) as adapter:
        calls = [adapter.create_pd() for _ in range(count)]
        for call in calls:
            expect_created(call, "pending" if call.status == Status.PENDING else "inline")
        return [call.status for call in calls]


def test_random_mode_is_reproducible() -> None:
    """create_mode="random" with a seed: the same seed gives the same sequence of inline and
    pending completions on a fresh adapter."""
    assert _random_run(seed=20240611) == _random_run(seed=20240611)


def test_random_mode_mixes_both() -> None:
    """create_mode="random" produces both inline and pending completions (fixed seed)."""
    assert set(_random_run(seed=7, count=64)) == {Status.SUCCESS, Status.PENDING}
