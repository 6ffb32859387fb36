"""The HTML report's rule table (ndk._html_rules) and the docs/semantics.md entries it quotes
(ndk._semantics_doc): scenario links found under the directory the run collected, one per
function, and the filter's data on each row.  How the page lays out and how the filter
behaves in a browser: tests/report/test_html_browser.py."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

from ndk._html_rules import rule_table, scenario_file
from ndk._report import Record
from ndk._semantics_doc import entries, semantics_path

ROOT = Path(__file__).resolve().parents[2]

SEMANTICS = """\
# Semantics

| ID | Situation | Soft provider | Why |
|---|---|---|---|
| ZERO-DEPTH | `CqDepth` of 0 | STATUS_INVALID_PARAMETER | malformed |
| RESIZE | without the flag | STATUS_NOT_SUPPORTED | digest 1.3 |
| RESIZE | below the entries held | STATUS_BUFFER_OVERFLOW | ND2 CQ::Resize |

VERBS-OVERRUN: rxe and siw give a CQ more entries
than asked.

Not an entry: a sentence.
"""


def test_semantics_entries_are_table_rows_and_id_paragraphs():
    assert entries(SEMANTICS) == {
        "ZERO-DEPTH": ["`CqDepth` of 0 | STATUS_INVALID_PARAMETER | malformed"],
        "RESIZE": ["without the flag | STATUS_NOT_SUPPORTED | digest 1.3",
                   "below the entries held | STATUS_BUFFER_OVERFLOW | ND2 CQ::Resize"],
        "VERBS-OVERRUN": ["rxe and siw give a CQ more entries than asked."],
    }


def test_the_semantics_file_sits_beside_the_scenarios(tmp_path):
    assert semantics_path(ROOT / "scenarios") == (ROOT / "docs" / "semantics.md").resolve()
    installed = tmp_path / "share" / "ndk-harness"
    assert semantics_path(installed / "scenarios") == installed / "docs" / "semantics.md"


def test_a_node_id_is_found_whatever_pytests_rootdir_was(tmp_path):
    scenarios = tmp_path / "scenarios"
    (scenarios / "sub").mkdir(parents=True)
    (scenarios / "sub" / "test_m.py").write_text("def test_a():\n    pass\n")
    want = scenarios / "sub" / "test_m.py"
    assert scenario_file("sub/test_m.py::test_a[soft]", scenarios) == want  # rootdir: scenarios
    assert scenario_file("scenarios/sub/test_m.py::test_a", scenarios) == want  # an ancestor
    assert scenario_file("other/test_n.py::test_a", scenarios) is None
    assert scenario_file("sub/test_m.py::test_a", None) is None


def rec(nodeid, rule, provider, outcome="passed"):
    return Record(nodeid, rule, provider, outcome, None, 0.1)


def test_each_rule_links_each_of_its_scenario_functions_once(tmp_path):
    (tmp_path / "test_m.py").write_text(
        "import pytest\n\n\ndef helper():\n    pass\n\n\n"
        "@pytest.mark.rule('CQ-A')\ndef test_a(x):\n    pass\n\n\n"
        "class TestB:\n    def test_b(self):\n        pass\n")
    records = [rec("test_m.py::test_a[soft-1]", "CQ-A", "soft"),
               rec("test_m.py::test_a[soft-2]", "CQ-A", "soft", "skipped"),
               rec("test_m.py::test_a[loop-1]", "CQ-A", "loop", "skipped"),
               rec("test_m.py::TestB::test_b[soft]", "CQ-B", "soft"),
               rec("gone.py::test_c[soft]", "CQ-C", "soft")]
    table = rule_table(records, ["soft", "loop"], tmp_path)
    uri = (tmp_path / "test_m.py").as_uri()
    assert table.count(f'<a href="{uri}"') == 2
    assert (f'<a href="{uri}" title="{tmp_path / "test_m.py"}, line 9">'
            "<code>test_m.py::test_a</code></a>") in table
    assert (f'title="{tmp_path / "test_m.py"}, line 14">'
            "<code>test_m.py::TestB::test_b</code>") in table
    assert "<code>gone.py::test_c</code>" in table  # not found: named, not linked
    rows = dict((row_id, (unescape(text), states)) for row_id, text, states in re.findall(
        r'<tr id="([^"]+)" data-text="([^"]*)" data-states="([^"]*)">', table))
    assert rows == {"rule-CQ-A": ("cq-a required test_a", "pass* skip differs"),
                    "rule-CQ-B": ("cq-b required testb::test_b", "pass - differs"),
                    "rule-CQ-C": ("cq-c required test_c", "pass - differs")}
    # The state filter offers the states present, and "providers differ" when some do.
    options = re.findall(r'<option value="([^"]*)">', table)
    assert options == ["", "pass*", "skip", "-", "pass", "differs"]
