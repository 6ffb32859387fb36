"""What the random walker meets on a device because of a known quirk (``ndk walk --past-known``).

The scenarios' expectations of a provider (skips, known failures, pair differences) are data:
expectations files, docs/expectations.md, read by :mod:`ndk.expectations`.  The walker has no
rule IDs, only failure signatures (docs/walk.md), so its table stays here: a failure signature
-> the reason, keyed like an expectations file (:func:`ndk.expectations.keys`: ``verbs:rxe``
for every rxe device, ``verbs`` for every device).  `ndk walk --past-known` (the VM lane)
records such a walk as known and walks on with the next seed; the evidence is in
docs/semantics.md, "Quirks of the verbs provider" (the walker's shrunk traces showed each).  A
signature is coarse: a new fault that fails the same way on that device is counted as known too.
"""

from __future__ import annotations

from .expectations import keys

WALK_KNOWN: dict[str, dict[str, str]] = {
    "verbs:rxe": {
        # a receive posted on a QP already flushed (or failed) never completes
        "lost:recv": (
            "rxe does not complete a receive posted while the QP is in the error state; the "
            "provider completes it CANCELLED itself when it knows the QP is there (after a "
            "flush or an error completion: VERBS-POST-IN-ERROR), not after an error only the "
            "peer saw"),
    },
    "verbs:siw": {
        # a Write into a region that refuses it completes SUCCESS; the bytes never land
        "data:write": (
            "iWARP has no response to an RDMA Write or Send: a failed one completes SUCCESS at "
            "the sender, the peer terminates the stream, and later requests complete CANCELLED "
            "or the QP reports CONNECTION_INVALID; a failed Read completes CANCELLED, not with "
            "the peer's status"),
    },
}


def walk_known(provider: str | None, signature: str | None) -> str | None:
    """The quirk that explains a walk of ``provider`` failing with ``signature``, or None."""
    if provider is None or signature is None:
        return None
    for key in keys(provider):
        reason = WALK_KNOWN.get(key, {}).get(signature)
        if reason is not None:
            return reason
    return None
