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

QUIRKS: dict[str, dict[str, str]] = {}


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
