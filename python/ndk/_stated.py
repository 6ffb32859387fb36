"""What NDK states, inside a reference-choice scenario.

A reference-choice scenario (``@pytest.mark.reference``) checks a choice where NDK is silent,
and a provider that chose otherwise only *differs*.  But such a scenario usually checks what
NDK does state on the way there: that a request fails at all, that the limits are written,
that a completion can be read.  Those parts are wrapped in ``stated``::

    with stated("digest 3.2: the completion is retrievable with NdkGetCqResults"):
        (plain,) = drain(b.cq, 1, ex=False)
        assert plain.status == Status.SUCCESS
    assert again.status == Status.INVALID_DEVICE_REQUEST  # the choice: DATA-STATUS

An assertion that fails inside the block is raised again as :class:`Stated`, which the
conformance run counts as a failure, never as a difference (``ndk._report``'s
``STATED_PROPERTY``).  In a required scenario every assertion is already a failure, so the
block changes nothing there.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Stated", "stated"]


class Stated(AssertionError):
    """What NDK states failed inside a reference-choice scenario: a failure of the provider,
    never a difference of choice."""


@contextmanager
def stated(source: str) -> Iterator[None]:
    """Assertions in the block check what ``source`` (a digest section or the seed) states;
    one that fails is raised as :class:`Stated`, its message led by ``source``."""
    try:
        yield
    except Stated:
        raise
    except AssertionError as failure:
        raise Stated(f"{source}: {failure}") from failure
