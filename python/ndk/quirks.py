"""Per-provider quirk table: known, accepted deviations from a conformance rule.

A scenario checks one rule for every provider and never asks which provider it runs on
(no ``if provider == "verbs"`` in scenarios: that would hide the deviation inside the test).
When a provider cannot follow a rule for a reason outside its control -- the hardware or the
kernel verbs layer does not expose what the rule needs -- the deviation is written down here
instead, once, with its reason. The ``ndk.testing`` plugin then skips every scenario marked
``@pytest.mark.rule(ID)`` for that provider with the reason ``quirk of <provider>: <reason>``,
so it shows up in the conformance matrix as a skip with a reason, not as a silent pass.

Shape: ``QUIRKS[provider name][rule ID] = reason``; for the verbs provider the key may also be
a device kind (``verbs:rxe``, ``verbs:siw``) or ``verbs`` for every device (``quirk_keys``). Keep reasons short and factual, and cite
what makes the deviation unavoidable. A quirk is not a place for bugs: a provider that
could follow the rule but does not should fail the scenario.
"""

from __future__ import annotations

# Why the verbs provider cannot follow a rule; the evidence (what the lane saw, and where the
# kernel or librdmacm says so) is in docs/semantics.md, "Quirks of the verbs provider".
_NO_FAST_REGISTER = (
    "user-space verbs has no fast-register work request (IB_WR_REG_MR is kernel-only): "
    "FRMRPageCount is 0 and NdkInitializeFastRegisterMr returns STATUS_IMPLEMENTATION_LIMIT")
_NO_HELD_DEFER = (
    "DEFER is a hint (spec/ndkpi.md: 'the provider may still issue the request at any time'); "
    "ibv_post_send issues every request at once")
_FLUSH_IS_ERROR = (
    "verbs flushes a queue only by moving the QP to the error state (IBV_QPS_ERR), which an "
    "RC QP does not leave while connected: after NdkFlush the QP is unusable")
_NO_OCTET_COUNTERS = (
    "the device keeps no RDMA octet / frame counters the provider can read (rxe's hw_counters "
    "count packets device-wide, siw none)")
_DEVICE_IS_SHARED = (
    "an adapter opens the RDMA device, and several adapters may open one device and share its "
    "addresses (rdma_cm binds addresses per device)")
_NO_MEMORY_WINDOWS = "siw implements no memory windows (ibv_alloc_mw fails with EOPNOTSUPP)"

QUIRKS: dict[str, dict[str, str]] = {
    "verbs": {
        "ADAPTER-INFO-FRMR-PAGE-COUNT": _NO_FAST_REGISTER,
        "MR-FRMR-INITIALIZE-TWICE": _NO_FAST_REGISTER,
        "MR-FRMR-ZERO-PAGES": _NO_FAST_REGISTER,
        "MR-KIND-REGISTER-ON-FRMR": _NO_FAST_REGISTER,
        "DEFER-HELD": _NO_HELD_DEFER,
        "DEFER-FLUSH": _FLUSH_IS_ERROR,
        "QP-FLUSH-USABLE": _FLUSH_IS_ERROR,
        "OID-STATISTICS-RDMA-SEND": _NO_OCTET_COUNTERS,
        "OID-STATISTICS-RDMA-READ-WRITE": _NO_OCTET_COUNTERS,
        "ADAPTER-ADDRESS-UNIQUE": _DEVICE_IS_SHARED,
    },
    "verbs:siw": {
        "MW-CLOSE": _NO_MEMORY_WINDOWS,
        "MW-MANY": _NO_MEMORY_WINDOWS,
    },
}


def quirk_keys(provider: str) -> list[str]:
    """The table keys that apply to ``provider``, most specific first.

    ``verbs:siw0`` (the verbs provider on RDMA device siw0) is looked up as itself, then as
    ``verbs:siw`` (every siw device: the device kind is the name without its trailing number),
    then as ``verbs`` (every device).
    """
    keys = [provider]
    if provider.startswith("verbs:"):
        kind = provider.rstrip("0123456789")
        if kind != provider and kind != "verbs:":
            keys.append(kind)
        keys.append("verbs")
    return keys


def quirk_reason(provider: str | None, rule: str | None) -> str | None:
    """Return the recorded reason why ``provider`` deviates from ``rule``, or None."""
    if provider is None or rule is None:
        return None
    for key in quirk_keys(provider):
        reason = QUIRKS.get(key, {}).get(rule)
        if reason is not None:
            return reason
    return None
