"""The walker's known failure signatures (python/ndk/quirks.py, `ndk walk --past-known`)."""

from __future__ import annotations

from ndk import quirks


def test_walk_known_signatures_resolve_by_device_kind():
    assert "VERBS-POST-IN-ERROR" in quirks.walk_known("verbs:rxe0", "lost:recv")
    assert "iWARP" in quirks.walk_known("verbs:siw0", "data:write")
    # a quirk of one device is not another's, and the reference provider has none
    assert quirks.walk_known("verbs:rxe0", "data:write") is None
    assert quirks.walk_known("soft", "lost:recv") is None
    assert quirks.walk_known(None, "lost:recv") is None
    for table in quirks.WALK_KNOWN.values():
        for signature, reason in table.items():
            kind, _, key = signature.partition(":")
            assert kind in {"violation", "data", "lost", "timeout", "status", "unknown_completion",
                            "closed", "open", "exception"} and key
            assert reason
