"""Conformance levels: a scenario marked ``@pytest.mark.reference(ID)`` checks a reference
choice (docs/semantics.md) rather than what NDK requires; a provider that chose otherwise
"differs", counted apart from failures, a failure only with ``ndk conformance --strict``."""

from __future__ import annotations

import ast
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from ndk._html import format_html
from ndk._semantics_doc import entries
from ndk._report import (DIFFERS, REFERENCE, REQUIRED, Record, cell, format_levels,
                         format_report, format_totals, level_counts, level_of)
from ndk.conformance import conclude

ROOT = Path(__file__).resolve().parents[2]

SCENARIOS = {
    "test_levels": """
        import pytest

        @pytest.mark.rule("CQ-REQUIRED")
        def test_required(adapter):
            assert adapter.query_info() is not None

        @pytest.mark.rule("CQ-CHOICE")
        @pytest.mark.reference("ZERO-DEPTH")
        def test_choice(adapter):
            assert False, "the provider chose otherwise"
        """,
}


def record(outcome: str, rule: str = "CQ-X", reference: str | None = None,
           provider: str = "soft") -> Record:
    return Record(nodeid=f"t.py::{rule}[{provider}]", rule=rule, provider=provider,
                  outcome=outcome, message="m", duration=0.1, reference=reference)


def test_a_reference_marked_record_has_the_reference_level():
    assert level_of(record("passed")) == REQUIRED
    assert level_of(record("passed", reference="ZERO-DEPTH")) == REFERENCE


def test_a_difference_is_its_own_cell_and_count_not_a_failure():
    records = [record("passed", "CQ-A"), record(DIFFERS, "CQ-B", "ZERO-DEPTH")]
    assert cell([DIFFERS]) == "DIFF"
    assert cell(["failed", DIFFERS]) == "FAIL"
    assert format_totals(records, 1.0).startswith(
        "conformance: 1 passed, 0 failed, 1 differ (reference choice), 0 skipped")
    text = format_report(records, ["soft"], 1.0)
    assert "DIFFERS  t.py::CQ-B[soft] [ZERO-DEPTH]: m" in text
    assert "scenarios per family (passed/failed/skipped/differing):" in text


def test_levels_count_per_provider_and_list_each_reference_rule():
    records = [record("passed", "CQ-A"), record("failed", "CQ-C"),
               record(DIFFERS, "CQ-B", "ZERO-DEPTH"), record("skipped", "CQ-D", "AFFINITY")]
    lines = format_levels(records, ["soft"]).splitlines()
    assert lines[0] == "conformance levels (scenarios passed/failed/differing/skipped):"
    assert re.fullmatch(r"\s*required\s+2\s+1/1/0/0", lines[2])
    assert re.fullmatch(r"\s*reference choice\s+2\s+0/0/1/1", lines[3])
    assert "    CQ-B  [ZERO-DEPTH]" in lines
    assert "    CQ-D  [AFFINITY]" in lines


def test_level_counts_give_rules_and_outcomes_per_level_and_provider():
    records = [record("passed", "CQ-A"), record("failed", "CQ-A", provider="lib.so"),
               record(DIFFERS, "CQ-B", "ZERO-DEPTH"), record("skipped", "CQ-D", "AFFINITY")]
    (required, rules, per_column), (reference, ref_rules, ref_columns) = level_counts(
        records, ["soft", "lib.so"])
    assert (required, rules, reference, ref_rules) == (REQUIRED, 1, REFERENCE, 2)
    assert (per_column["soft"]["passed"], per_column["lib.so"]["failed"]) == (1, 1)
    assert (ref_columns["soft"][DIFFERS], ref_columns["soft"]["skipped"]) == (1, 1)
    assert level_counts([], ["soft"]) == []


def test_the_html_rule_table_names_each_rules_level_and_links_its_semantics_entry():
    records = [record("passed", "CQ-A"), record(DIFFERS, "CQ-B", "ZERO-DEPTH")]
    page = format_html(records, ["soft"], 1.0, ROOT / "scenarios")
    assert ('<tr><th>rule</th><th>level</th><th>scenarios</th><th class="provider">soft</th></tr>'
            in page)
    assert re.search(r'<tr id="rule-CQ-A" [^>]*><td>CQ-A</td><td>required</td>', page)
    assert re.search(r'<tr id="rule-CQ-B" [^>]*><td>CQ-B</td><td>reference choice '
                     r'\(<a href="#semantics-ZERO-DEPTH">ZERO-DEPTH</a>\)</td>', page)


def test_the_html_levels_are_a_table_with_the_semantics_entries_quoted():
    records = [record("passed", "CQ-A"), record("failed", "CQ-A", provider="lib.so"),
               record(DIFFERS, "CQ-B", "ZERO-DEPTH"), record("skipped", "CQ-D", "AFFINITY")]
    page = format_html(records, ["soft", "lib.so"], 1.0, ROOT / "scenarios")
    assert "<pre>" not in page
    levels = re.search(r'<table id="levels">(.*?)</table>', page, re.DOTALL).group(1)
    assert "<tr><th>level</th><th>rules</th><th>soft</th><th>lib.so</th></tr>" in levels
    assert ('<tr><td>required</td><td class="num">1</td><td class="num">1/0/0/0</td>'
            '<td class="num">0/1/0/0</td></tr>') in levels
    assert ('<tr><td>reference choice</td><td class="num">2</td><td class="num">0/0/1/1</td>'
            '<td class="num">0/0/0/0</td></tr>') in levels
    choices = re.search(r'<table id="reference-choices">(.*?)</table>', page, re.DOTALL).group(1)
    # Each entry quoted from docs/semantics.md, under the anchor the rule table links to.
    assert re.search(r'<tr id="semantics-ZERO-DEPTH"><td>ZERO-DEPTH</td><td class="ids">CQ-B</td>'
                     r"<td>"
                     r"<code>CqDepth</code> or <code>SrqDepth</code> of 0 \| "
                     r"STATUS_INVALID_PARAMETER \|", choices)
    assert '<tr id="semantics-AFFINITY"><td>AFFINITY</td><td class="ids">CQ-D</td>' in choices
    semantics = (ROOT / "docs" / "semantics.md").resolve().as_uri()
    assert f'<a href="{semantics}">' in page


def test_without_the_semantics_file_the_levels_say_so():
    page = format_html([record(DIFFERS, "CQ-B", "ZERO-DEPTH")], ["soft"], 1.0)
    assert "(not found beside the scenarios)" in page
    assert ('<tr id="semantics-ZERO-DEPTH"><td>ZERO-DEPTH</td><td class="ids">CQ-B</td>'
            "<td>(no entry") in page


def test_differences_alone_do_not_fail_the_run(tmp_path):
    differs_only = [record("passed", "CQ-A"), record(DIFFERS, "CQ-B", "ZERO-DEPTH")]
    # pytest itself saw the difference as a failed test.
    assert conclude(1, differs_only, ["soft"], 1.0, "here", sys.stdout) == 0
    with_failure = differs_only + [record("failed", "CQ-C")]
    assert conclude(1, with_failure, ["soft"], 1.0, "here", sys.stdout) == 1


def test_every_reference_mark_names_a_semantics_entry():
    """Each ``@pytest.mark.reference(ID)`` in scenarios/ cites an ID docs/semantics.md records
    (a table row's first column, or a ``VERBS-...:`` paragraph)."""
    known = set(entries((ROOT / "docs" / "semantics.md").read_text(encoding="utf-8")))
    cited = {}
    for path in sorted((ROOT / "scenarios").glob("test_*.py")):
        for ref in re.findall(r'@pytest\.mark\.reference\("([^"]+)"\)',
                              path.read_text(encoding="utf-8")):
            cited.setdefault(ref, path.name)
    missing = {ref: where for ref, where in cited.items() if ref not in known}
    assert not missing, f"reference marks naming no docs/semantics.md entry: {missing}"


def run_ndk(pytester, *args):
    return pytester.run(sys.executable, "-m", "ndk", *args, timeout=120)


def test_the_runner_reports_a_difference_and_fails_on_it_only_when_strict(
        scenarios, pytester, fake_ndk_env, tmp_path):
    directory = scenarios(**SCENARIOS)
    junit = tmp_path / "report.xml"
    result = run_ndk(pytester, "conformance", "--scenarios", str(directory), "--provider",
                     "soft", "--junit", str(junit))
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["CQ  1 passed, 0 failed, 0 skipped, 1 differ  *"])
    result.stdout.fnmatch_lines(["*DIFFERS  *test_choice* *ZERO-DEPTH*: *"])
    result.stdout.fnmatch_lines(["conformance: 1 passed, 0 failed, 1 differ (reference choice), "
                                 "0 skipped in *"])
    properties = {p.get("name"): p.get("value") for p in ET.parse(junit).iter("property")}
    assert properties["ndk-reference-choice CQ-CHOICE"] == "ZERO-DEPTH"
    assert properties["ndk-level soft required"] == (
        "rules=1 passed=1 failed=0 differing=0 skipped=0")
    assert properties["ndk-level soft reference choice"] == (
        "rules=1 passed=0 failed=0 differing=1 skipped=0")
    assert properties["ndk-differs soft"].startswith("count=1 ")
    strict = run_ndk(pytester, "conformance", "--scenarios", str(directory), "--provider",
                     "soft", "--strict")
    assert strict.ret == 1
    strict.stdout.fnmatch_lines(["conformance: 1 passed, 1 failed, 0 skipped in *"])


STATED_SCENARIOS = {
    "test_stated": """
        import pytest
        from ndk._stated import stated

        @pytest.mark.rule("CQ-STATED")
        @pytest.mark.reference("ZERO-DEPTH")
        def test_stated_part_fails(adapter):
            with stated("digest 1.3"):
                assert False, "what NDK states"

        @pytest.mark.rule("CQ-CHOSEN")
        @pytest.mark.reference("ZERO-DEPTH")
        def test_stated_part_holds_the_choice_differs(adapter):
            with stated("digest 1.3"):
                assert adapter.query_info() is not None
            assert False, "the provider chose otherwise"
        """,
}


def test_a_stated_part_of_a_reference_scenario_fails_where_the_choice_only_differs(
        scenarios, pytester, fake_ndk_env):
    """ndk.scenario.stated: what NDK states, checked inside a reference-choice scenario, is a
    failure when it does not hold (issue: a provider that never writes the read limits only
    "differed"); the scenario's choice after it still only differs."""
    directory = scenarios(**STATED_SCENARIOS)
    result = run_ndk(pytester, "conformance", "--scenarios", str(directory), "--provider", "soft")
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["conformance: 0 passed, 1 failed, 1 differ (reference choice), "
                                 "0 skipped in *"])
    result.stdout.fnmatch_lines(["*FAILED*test_stated_part_fails*digest 1.3: what NDK states*"])


def _scenario_marks(path: Path):
    """(function name, {marker: [its string arguments]}, docstring) of every scenario in a
    scenario file, read from its source (decorators ``@pytest.mark.NAME(...)``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
            continue
        marks: dict[str, list[str]] = {}
        for decorator in node.decorator_list:
            call = decorator if isinstance(decorator, ast.Call) else None
            target = call.func if call is not None else decorator
            if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Attribute)
                    and target.value.attr == "mark"):
                marks[target.attr] = [arg.value for arg in (call.args if call else [])
                                      if isinstance(arg, ast.Constant)]
        yield node.name, marks, ast.get_docstring(node) or ""


def test_every_required_scenario_cites_where_ndk_states_it():
    """A scenario without ``@pytest.mark.reference`` is *required*: its expectation must be one
    NDK states, so it carries ``@pytest.mark.digest(SECTION)`` and its docstring cites that
    section ("digest SECTION").  A scenario whose expectation NDK does not state is a reference
    choice and names its docs/semantics.md entry (the test above)."""
    uncited, required = [], 0
    for path in sorted((ROOT / "scenarios").glob("test_*.py")):
        for name, marks, doc in _scenario_marks(path):
            assert "rule" in marks, f"{path.name}::{name} names no rule"
            if "reference" in marks:
                continue
            required += 1
            sections = marks.get("digest", [])
            cited = "digest" in doc and any(
                re.search(rf"(?<![\d.]){re.escape(s)}(?![\d])", doc) for s in sections)
            if not cited:
                uncited.append(f"{path.name}::{name} (digest {sections})")
    assert required > 200  # the scan found the scenarios
    assert not uncited, f"required scenarios citing no digest section: {uncited}"
