"""The quirk table (python/ndk/quirks.py) against the scenarios and the docs: every entry names
a rule some scenario checks, and docs/semantics.md gives the evidence for each."""

from __future__ import annotations

import re
from pathlib import Path

from ndk import quirks

ROOT = Path(__file__).resolve().parents[2]


def scenario_rules() -> set[str]:
    rules = set()
    for path in (ROOT / "scenarios").glob("test_*.py"):
        rules.update(re.findall(r'@pytest\.mark\.rule\("([A-Z0-9-]+)"\)', path.read_text()))
    return rules


def test_every_quirk_names_a_rule_a_scenario_checks():
    known = scenario_rules()
    unknown = {(key, rule) for key, table in quirks.QUIRKS.items() for rule in table
               if rule not in known}
    assert not unknown


def test_every_quirk_has_a_reason_and_its_evidence_in_the_semantics_doc():
    semantics = (ROOT / "docs" / "semantics.md").read_text()
    evidence = semantics[semantics.index("## Quirks of the verbs provider"):]
    for key, table in quirks.QUIRKS.items():
        for rule, reason in table.items():
            assert reason.strip(), (key, rule)
            assert f"`{rule}`" in evidence, f"{key} {rule}: no entry in docs/semantics.md"


def test_every_known_failure_names_a_rule_and_is_listed_in_the_semantics_doc():
    semantics = (ROOT / "docs" / "semantics.md").read_text()
    listed = semantics[semantics.index("Known failures:"):]
    known = scenario_rules()
    for key, table in quirks.KNOWN_FAILURES.items():
        for rule, note in table.items():
            assert rule in known, (key, rule)
            assert note.strip() and f"`{rule}`" in listed, (key, rule)
            assert quirks.quirk_reason(key, rule) is None, f"{key} {rule}: both quirk and bug"


def test_quirk_keys_go_from_device_to_kind_to_provider():
    assert quirks.quirk_keys("verbs:siw0") == ["verbs:siw0", "verbs:siw", "verbs"]
    assert quirks.quirk_keys("soft") == ["soft"]


def test_a_pair_of_providers_has_keys_of_its_own():
    assert quirks.quirk_keys("soft:tcp", "verbs:siw0") == [
        "soft:tcp|verbs:siw0", "soft:tcp|verbs:siw", "soft:tcp|verbs"]
    assert quirks.quirk_keys("verbs:siw0", "soft:tcp") == [
        "verbs:siw0|soft:tcp", "verbs:siw|soft:tcp", "verbs|soft:tcp"]
    assert quirks.quirk_keys("verbs:siw0", "verbs:siw0") == quirks.quirk_keys("verbs:siw0")
    # the pair's entries only: siw's own (no memory windows) are not the pair's
    assert quirks.quirk_reason("verbs:siw0", "MW-CREATE") is not None
    assert quirks.quirk_reason("verbs:siw0", "MW-CREATE", "soft:tcp") is None
    assert quirks.quirk_reason("verbs:siw0", "WRITE-DATA", "soft:tcp") == \
        quirks._SIW_COMPLETES_AT_SEND
    assert quirks.quirk_reason("soft:tcp", "WRITE-DATA", "verbs:siw0") is None


def test_walk_known_signatures_resolve_by_device_kind():
    assert quirks.walk_known("verbs:siw0", "data:write") == quirks._ERROR_NOT_SIGNALLED_SIW
    assert quirks.walk_known("verbs:rxe0", "lost:recv") == quirks._RECEIVE_AFTER_ERROR_RXE
    # a quirk of one device is not another's, and the reference provider has none
    assert quirks.walk_known("verbs:rxe0", "data:write") is None
    assert quirks.walk_known("soft", "lost:recv") is None
    for table in quirks.WALK_KNOWN.values():
        for signature, reason in table.items():
            kind, _, key = signature.partition(":")
            assert kind in {"violation", "data", "lost", "timeout", "status", "unknown_completion",
                            "closed", "open", "exception"} and key
            assert reason
