"""The run as JSON (``ndk conformance --json``) and its comparison with a baseline, on synthetic
records: the schema of docs/report-json.md and each kind of change."""

from __future__ import annotations

import dataclasses
import json

import pytest

from ndk import _json_report as jr
from ndk._report import CRASHED, DIFFERS, TIMEOUT, Record, ViolationRecord

VIOLATION = ViolationRecord(rule="CQ-NOTIFY-TWICE", object="cq#1", call="NdkArmCq",
                            message="twice", section="3.2", side="provider", severity="error",
                            provider="soft")


def record(name: str, outcome: str, rule: str = "CQ-A", provider: str = "soft", **more) -> Record:
    fields = dict(nodeid=f"scenarios/test_cq.py::{name}[{provider}]", rule=rule,
                  provider=provider, outcome=outcome, message=more.pop("message", None),
                  duration=more.pop("duration", 0.5))
    return Record(**fields, **more)


RUN = [
    record("test_pass", "passed", duration=0.25),
    record("test_fail", "failed", message="assert 1 == 2", violations=(VIOLATION,)),
    record("test_skip", "skipped", rule="CQ-B", message="needs SRQ"),
    record("test_hang", "failed", rule="CQ-B", fate=TIMEOUT, message="timeout: >2 s"),
    record("test_choice", DIFFERS, rule="CQ-C", reference="SEM-1", message="chose otherwise"),
]


def test_the_document_has_the_schema_every_scenario_and_every_rule_per_provider():
    document = jr.report(RUN, ["soft"], 12.5, version="0.1.0")
    assert document["schema"] == "ndk-harness/conformance-report/1"
    assert document["ndk_harness"] == "0.1.0" and document["providers"] == ["soft"]
    assert document["wall_seconds"] == 12.5
    assert document["totals"] == {"differs": 1, "failed": 1, "passed": 1, "skipped": 1,
                                  "timeout": 1}
    first = document["scenarios"][1]
    assert first == {
        "scenario": "test_cq.py::test_fail[soft]", "nodeid": "scenarios/test_cq.py::test_fail[soft]",
        "rule": "CQ-A", "provider": "soft", "outcome": "failed", "level": "required",
        "reference": None, "duration": 0.5, "message": "assert 1 == 2", "skip_kind": None,
        "violations": [{"rule": "CQ-NOTIFY-TWICE", "object": "cq#1", "call": "NdkArmCq",
                        "message": "twice", "section": "3.2", "side": "provider",
                        "severity": "error", "provider": "soft", "expected": False}],
        "peer": None, "peer_provider": None,
    }  # fmt: skip
    rules = {(r["rule"], r["provider"]): r for r in document["rules"]}
    assert list(rules) == [("CQ-A", "soft"), ("CQ-B", "soft"), ("CQ-C", "soft")]
    assert rules["CQ-A", "soft"]["outcome"] == "FAIL"
    assert rules["CQ-A", "soft"]["scenarios"] == {"failed": 1, "passed": 1}
    assert rules["CQ-A", "soft"]["duration"] == 0.75
    assert rules["CQ-A", "soft"]["message"] == "assert 1 == 2"
    assert [v["rule"] for v in rules["CQ-A", "soft"]["violations"]] == ["CQ-NOTIFY-TWICE"]
    assert rules["CQ-B", "soft"]["outcome"] == "TIMEOUT"
    assert rules["CQ-C", "soft"]["outcome"] == "DIFF"
    assert json.loads(json.dumps(document)) == document  # plain JSON values only


def test_skips_are_counted_by_kind_per_provider_and_each_skip_names_its_kind():
    run = [record("test_knob", "skipped", message="knob: sets sge_check"),
           record("test_cap", "skipped", message="capability: no SRQ", provider="loop"),
           record("test_cap2", "skipped", message="capability: no MW", provider="loop"),
           record("test_bare", "skipped", message="needs SRQ", provider="loop"),
           record("test_pass", "passed")]
    document = jr.report(run, ["soft", "loop"], 1.0)
    assert document["skipped_by_kind"] == {"soft": {"knob": 1},
                                           "loop": {"capability": 2, "unclassified": 1}}
    kinds = {s["scenario"]: s["skip_kind"] for s in document["scenarios"]}
    assert kinds == {"test_cq.py::test_knob[soft]": "knob",
                     "test_cq.py::test_cap[loop]": "capability",
                     "test_cq.py::test_cap2[loop]": "capability",
                     "test_cq.py::test_bare[loop]": "unclassified",
                     "test_cq.py::test_pass[soft]": None}


def baseline_of(records, tmp_path):
    path = tmp_path / "baseline.json"
    jr.write(path, jr.report(records, ["soft"], 1.0))
    return jr.load(path)


def test_a_run_compared_with_itself_has_no_change(tmp_path):
    changes = jr.compare(baseline_of(RUN, tmp_path), RUN)
    assert not changes.changed and changes.regressions == []
    assert changes.compared == len(RUN) and changes.not_run == 0
    assert jr.format_changes(changes, "b.json") == (
        "compared with the baseline b.json (5 scenarios in both): no change")


def test_each_kind_of_change_is_listed_and_only_new_failures_regress(tmp_path):
    baseline = baseline_of(RUN, tmp_path)
    now = [
        record("test_pass", "failed", fate=CRASHED, message="SIGSEGV"),  # new failure
        record("test_fail", "passed"),  # new pass
        record("test_skip", "passed", rule="CQ-B"),  # new pass
        record("test_hang", "failed", rule="CQ-B", message="assert"),  # failing before too
        record("test_choice", "skipped", rule="CQ-C"),  # newly skipped
        record("test_new", "failed", rule="CQ-D"),  # not in the baseline: a new failure
    ]
    changes = jr.compare(baseline, now)
    assert changes.new_failures == [
        "test_cq.py::test_pass[soft] (soft): passed -> crashed",
        "test_cq.py::test_new[soft] (soft): not in the baseline -> failed"]
    assert changes.regressions == changes.new_failures
    assert changes.new_passes == ["test_cq.py::test_fail[soft] (soft): failed -> passed",
                                  "test_cq.py::test_skip[soft] (soft): skipped -> passed"]
    assert changes.newly_skipped == ["test_cq.py::test_choice[soft] (soft): differs -> skipped"]
    assert changes.compared == 5 and changes.not_run == 0
    text = jr.format_changes(changes, "b.json")
    assert text.splitlines()[:2] == ["compared with the baseline b.json (5 scenarios in both):",
                                     "  new failures (2):"]


def test_a_scenario_is_the_same_from_another_folder_and_a_smaller_run_counts_the_rest(tmp_path):
    baseline = baseline_of(RUN, tmp_path)
    moved = dataclasses.replace(record("test_pass", "passed"), nodeid="test_cq.py::test_pass[soft]")
    changes = jr.compare(baseline, [moved])
    assert not changes.changed and changes.compared == 1 and changes.not_run == 4
    assert "4 of its scenarios not in this run" in jr.format_changes(changes, "b.json")


def test_a_file_of_another_schema_is_refused(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"schema": "something/else/1", "scenarios": []}))
    with pytest.raises(jr.BaselineError, match="not an ndk conformance --json report"):
        jr.load(path)
    path.write_text("not json")
    with pytest.raises(jr.BaselineError, match="cannot read"):
        jr.load(path)
