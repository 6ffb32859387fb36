"""The validation layer's violations in the conformance summary and the HTML report, on
synthetic records (no pytest run involved)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from ndk._html import format_html
from ndk._report import Record, ViolationRecord, format_report, format_violations, violation_tallies


def violation(rule, severity="error", expected=False, side="provider", section="1.0"):
    return ViolationRecord(rule=rule, object="CQ#1", call="NdkArmCq", message="what happened",
                           section=section, side=side, severity=severity, provider="soft",
                           expected=expected)


def rec(name, provider, outcome="passed", violations=(), rule="CQ-A"):
    return Record(f"scenarios/test_x.py::{name}[{provider}]", rule, provider, outcome, None, 0.1,
                  tuple(violations))


RECORDS = [
    rec("t1", "soft", "error", [violation("CQ-NOTIFY-TWICE"), violation("CQ-NOTIFY-TWICE")]),
    rec("t2", "soft", "error", [violation("CQ-NOTIFY-TWICE")]),
    rec("t3", "soft", "passed", [violation("STATUS-UNDOCUMENTED", "warning", section="1.1-1.10")]),
    rec("t4", "soft", "passed", [violation("CREATE-COMPLETION-INLINE", expected=True)]),
    rec("t1", "lib.so", "error", [violation("CQ-CONCURRENT-CALL", side="consumer", section="3.2")]),
    rec("t5", "soft", "passed"),
]


def test_tallies_count_errors_warnings_and_expected_per_provider_and_rule():
    tallies = violation_tallies(RECORDS, ["soft", "lib.so"])
    got = [(t.provider, t.rule, t.side, t.section, t.errors, t.warnings, t.expected, t.scenarios)
           for t in tallies]
    assert got == [
        ("soft", "CQ-NOTIFY-TWICE", "provider", "1.0", 3, 0, 0,
         ["scenarios/test_x.py::t1[soft]", "scenarios/test_x.py::t2[soft]"]),
        ("soft", "CREATE-COMPLETION-INLINE", "provider", "1.0", 0, 0, 1,
         ["scenarios/test_x.py::t4[soft]"]),
        ("soft", "STATUS-UNDOCUMENTED", "provider", "1.1-1.10", 0, 1, 0,
         ["scenarios/test_x.py::t3[soft]"]),
        ("lib.so", "CQ-CONCURRENT-CALL", "consumer", "3.2", 1, 0, 0,
         ["scenarios/test_x.py::t1[lib.so]"]),
    ]


def test_format_violations_is_a_table_and_lists_a_few_scenarios():
    many = [rec(f"t{i}", "soft", "error", [violation("CQ-NOTIFY-TWICE")]) for i in range(5)]
    text = format_violations(many, ["soft"], limit=3)
    lines = text.splitlines()
    assert lines[0] == "validation layer violations per provider and rule:"
    assert lines[1].split() == ["provider", "rule", "side", "errors", "warnings", "expected", "scenarios"]
    assert lines[2].split()[:6] == ["soft", "CQ-NOTIFY-TWICE", "provider", "5", "0", "0"]
    assert lines[2].endswith("t0[soft], scenarios/test_x.py::t1[soft], "
                             "scenarios/test_x.py::t2[soft] and 2 more")


def test_no_violation_section_without_violations():
    assert format_violations([rec("t5", "soft")], ["soft"]) == ""
    assert "validation layer" not in format_report([rec("t5", "soft")], ["soft"], 1.0)


def test_report_puts_violations_after_failures_and_keeps_the_totals_line_last():
    text = format_report(RECORDS, ["soft", "lib.so"], wall_seconds=1.0)
    positions = [text.index(marker) for marker in
                 ["rule", "scenarios per family", "failures:", "validation layer violations", "conformance:"]]
    assert positions == sorted(positions)
    assert re.fullmatch(r"conformance: 3 passed, 0 failed, 0 skipped, 3 errors in 1\.0 s \(test phases .* s\)",
                        text.splitlines()[-1])


class _Cells(HTMLParser):
    """The text of every <td>, and whether the document's tags balance."""

    def __init__(self):
        super().__init__()
        self.cells, self.stack, self.balanced, self._in_td = [], [], True, False

    def handle_starttag(self, tag, attrs):
        if tag not in ("br", "meta", "input"):  # void elements
            self.stack.append(tag)
        if tag == "td":
            self._in_td = True
            self.cells.append("")

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.balanced = False
        if tag == "td":
            self._in_td = False

    def handle_data(self, data):
        if self._in_td:
            self.cells[-1] += data


def test_html_report_is_one_document_with_the_matrix_and_the_violations():
    records = RECORDS + [Record("scenarios/test_y.py::t<&>[soft]", "QP-X", "soft", "failed",
                                "assert '<b>' == 1", 0.2)]
    page = format_html(records, ["soft", "lib.so"], wall_seconds=2.0)
    assert page.startswith("<!DOCTYPE html>")
    # The one script is inline (the rule filter); no style sheet, image or frame from elsewhere.
    assert page.count("<script") == 1 and "<script>" in page
    assert "<link" not in page and "<img" not in page and "<iframe" not in page
    # Nothing fetched from elsewhere: the one URL is the inline SVG picture's namespace name.
    assert page.replace('xmlns="http://www.w3.org/2000/svg"', "").count("http") == 0
    parser = _Cells()
    parser.feed(page)
    assert parser.balanced and parser.stack == []
    cells = parser.cells
    # The failure's text is escaped, not markup.
    assert "assert '<b>' == 1" in cells and "scenarios/test_y.py::t<&>[soft]" in cells
    # The violations table: provider, rule, side, digest, errors, warnings, expected, scenarios.
    start = cells.index("CQ-NOTIFY-TWICE") - 1
    assert cells[start:start + 7] == ["soft", "CQ-NOTIFY-TWICE", "provider", "1.0", "3", "0", "0"]
    assert cells[start + 7] == "scenarios/test_x.py::t1[soft]scenarios/test_x.py::t2[soft]"  # <br>
    assert "conformance: 3 passed, 1 failed, 0 skipped, 3 errors" in page


def test_html_report_says_when_there_were_no_violations():
    page = format_html([rec("t5", "soft")], ["soft"], wall_seconds=1.0)
    assert "The validation layer recorded no violations." in page
