"""What a collected test stands for: its rule, its provider, and the providers selected.

Shared by the ``ndk.testing`` plugin and the conformance runner's collector. It lives apart
from ``ndk.testing`` because the runner must not import that plugin module itself: pytest
registers it (from the scenarios' conftest) and cannot rewrite the asserts of, and warns
about, a plugin module that was imported before.
"""

from __future__ import annotations

import fnmatch
from typing import Sequence

import pytest

DEFAULT_PROVIDERS = ("soft",)
OPTION_DEST = "ndk_providers"  # dest of --ndk-provider


def selected_providers(config: pytest.Config) -> list[str]:
    """Return the providers chosen with ``--ndk-provider``, in order, without duplicates.

    Works on any config: when the plugin's option is not registered, the default applies.
    """
    chosen = config.getoption(OPTION_DEST, default=None) or DEFAULT_PROVIDERS
    return list(dict.fromkeys(chosen))


def rule_of(item: pytest.Item) -> str | None:
    """Return the rule ID of an item's closest ``rule`` marker, or None when unmarked."""
    marker = item.get_closest_marker("rule")
    if marker is None or not marker.args:
        return None
    return str(marker.args[0])


def reference_of(item: pytest.Item) -> str | None:
    """Return the docs/semantics.md ID of an item's ``reference`` marker: its expectation is
    the reference provider's choice where NDK is silent (a conformance level of
    "reference choice"); None for a scenario whose expectation NDK requires."""
    marker = item.get_closest_marker("reference")
    if marker is None or not marker.args:
        return None
    return str(marker.args[0])


def provider_of(item: pytest.Item) -> str | None:
    """Return the provider an item is parametrized with, or None if it does not use one."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    return callspec.params.get("ndk_provider")


# Under pytest-xdist the controller collects nothing: the plugin (ndk._isolation) stores here
# what the workers collected, node ID -> (rule, provider, reference), for the report and the
# progress.
WHERE_KEY = pytest.StashKey[dict]()

Where = tuple[str | None, str | None, str | None]  # rule, provider, reference (semantics ID)


def where_of(item: pytest.Item) -> Where:
    """What a collected test stands for: (rule, provider, reference)."""
    return rule_of(item), provider_of(item), reference_of(item)


def collected_where(config: pytest.Config) -> dict[str, Where]:
    """Node ID -> (rule, provider, reference) of the tests the xdist workers collected; empty
    in a run without xdist (the items themselves say it there) or before the workers
    collected."""
    return config.stash.get(WHERE_KEY, {})


RULE_DEST = "ndk_rules"  # dest of --ndk-rule


def rule_selected(rule: str | None, patterns: Sequence[str]) -> bool:
    """Whether a scenario of ``rule`` is among ``patterns`` (``--ndk-rule``, ``ndk conformance
    --rule``): a rule ID (``CQ-CREATE-DEPTH``), a glob (``CQ-*``, ``*-DEPTH``), or a family
    (``CQ``: every rule whose ID starts with ``CQ-``).  A scenario without a rule marker is
    never among them."""
    if rule is None:
        return False
    family = rule.split("-", 1)[0]
    return any(rule == pattern or family == pattern or fnmatch.fnmatchcase(rule, pattern)
               for pattern in patterns)
