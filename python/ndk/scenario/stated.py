"""``stated``: what NDK states, inside a reference-choice scenario (a failure there is a
failure, not a difference).  The rule and the example are in :mod:`ndk._stated`, which the
pytest plugin reads without importing the scenario helpers."""

from __future__ import annotations

from .._stated import Stated, stated

__all__ = ["Stated", "stated"]
