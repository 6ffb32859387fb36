"""Per-provider quirk table: known, accepted deviations from a conformance rule.

A scenario checks one rule for every provider and never asks which provider it runs on
(no ``if provider == "verbs"`` in scenarios: that would hide the deviation inside the test).
When a provider cannot follow a rule for a reason outside its control -- the hardware or the
kernel verbs layer does not expose what the rule needs -- the deviation is written down here
instead, once, with its reason. The ``ndk.testing`` plugin then skips every scenario marked
``@pytest.mark.rule(ID)`` for that provider with the reason ``quirk of <provider>: <reason>``,
so it shows up in the conformance matrix as a skip with a reason, not as a silent pass.

Shape: ``QUIRKS[provider name][rule ID] = reason``. Keep reasons short and factual, and cite
what makes the deviation unavoidable. A quirk is not a place for bugs: a provider that
could follow the rule but does not should fail the scenario.
"""

from __future__ import annotations

QUIRKS: dict[str, dict[str, str]] = {}


def quirk_reason(provider: str | None, rule: str | None) -> str | None:
    """Return the recorded reason why ``provider`` deviates from ``rule``, or None."""
    if provider is None or rule is None:
        return None
    return QUIRKS.get(provider, {}).get(rule)
