"""The conformance matrix as a picture in the HTML report (ndk._html.matrix_svg): an inline SVG
that parses, with one cell per rule and provider in the matrix's states, families as lines,
a mark where providers differ, and a legend; the report stays self-contained."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET


from ndk._html import DIFFERS_COLOUR, PICTURE_COLOURS, differs, format_html, matrix_svg
from ndk._report import Record, matrix

SVG = "{http://www.w3.org/2000/svg}"


def rec(rule, provider, outcome, name=None):
    nodeid = f"scenarios/test_x.py::{name or rule.lower()}[{provider}]"
    return Record(nodeid, rule, provider, outcome, "why" if outcome != "passed" else None, 0.1)


RECORDS = [
    rec("CQ-CREATE", "soft", "passed"), rec("CQ-CREATE", "verbs", "passed"),
    rec("CQ-ARM", "soft", "passed"), rec("CQ-ARM", "verbs", "skipped"),
    rec("QP-FLUSH", "soft", "failed"), rec("QP-FLUSH", "verbs", "failed"),
    rec("QP-SEND", "soft", "passed"), rec("QP-SEND", "soft", "skipped", name="qp-send-b"),
    rec("QP-SEND", "verbs", "passed"),
    rec("MR-ONLY-SOFT", "soft", "passed"),
]
PROVIDERS = ["soft", "verbs"]


def parse(svg_text: str) -> ET.Element:
    root = ET.fromstring(svg_text)
    assert root.tag == f"{SVG}svg"
    return root


def rules_in(root):
    """{rule: ([cell states top to bottom], has the differs bar)} from the picture."""
    found = {}
    for group in root.iter(f"{SVG}g"):
        if "rule" not in group.get("class", "").split():
            continue
        title = group.find(f"{SVG}title").text
        states = [r.get("data-state") for r in group.iter(f"{SVG}rect") if r.get("data-state")]
        found[title.split(":")[0]] = (states, group.find(f"{SVG}rect[@class='differs']") is not None)
    return found


def test_the_picture_has_every_matrix_cell_in_its_state():
    root = parse(matrix_svg(RECORDS, PROVIDERS))
    cols, rows = matrix(RECORDS, PROVIDERS)
    assert cols == PROVIDERS
    found = rules_in(root)
    assert {rule: states for rule, (states, _) in found.items()} == {row[0]: row[1:] for row in rows}
    assert found["QP-SEND"][0] == ["pass*", "pass"]
    assert found["MR-ONLY-SOFT"][0] == ["pass", "-"]
    # Each cell is filled with its state's colour.
    fills = {r.get("data-state"): r.get("fill") for r in root.iter(f"{SVG}rect") if r.get("data-state")}
    assert fills == {state: PICTURE_COLOURS[state][0] for state in fills}
    assert set(fills) == {"pass", "pass*", "FAIL", "skip", "-"}


def test_rules_whose_providers_differ_are_marked():
    found = rules_in(parse(matrix_svg(RECORDS, PROVIDERS)))
    marked = {rule for rule, (_, bar) in found.items() if bar}
    assert marked == {"CQ-ARM", "QP-SEND", "MR-ONLY-SOFT"}
    assert differs(["pass", "skip"]) and not differs(["FAIL", "FAIL"]) and not differs(["pass"])
    svg = matrix_svg(RECORDS, PROVIDERS)
    assert svg.count(f'fill="{DIFFERS_COLOUR}" class="differs"') == 3


def test_families_are_labelled_with_their_rule_counts_and_failures_stand_out():
    root = parse(matrix_svg(RECORDS, PROVIDERS))
    labels = {t.text: t.get("class") for t in root.iter(f"{SVG}text") if "family" in (t.get("class") or "")}
    assert labels == {"CQ (2)": "family", "MR (1)": "family", "QP (2)": "family failed"}
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert {"pass", "FAIL", "skip", "not run", "pass, some skipped"} <= set(texts)
    assert "1. soft" in texts and "2. verbs" in texts  # the order of a rule's cells
    title = root.find(f"{SVG}title").text
    assert title == "Conformance matrix: 5 rules x 2 providers (soft, verbs)"
    tips = [t.text for t in root.iter(f"{SVG}title")]
    assert "QP-FLUSH: soft FAIL, verbs FAIL" in tips


def test_a_long_family_wraps():
    records = [rec(f"VALIDATE-R{i:02}", "soft", "passed") for i in range(95)]
    root = parse(matrix_svg(records, ["soft"]))
    tops = {float(r.get("y")) for r in root.iter(f"{SVG}rect") if r.get("data-state")}
    assert len(tops) == 3  # 40 + 40 + 15 rules


def test_the_report_embeds_the_picture_and_stays_self_contained():
    page = format_html(RECORDS, PROVIDERS, 1.0)
    svgs = re.findall(r"<svg .*?</svg>", page, re.DOTALL)
    assert len(svgs) == 1
    parse(svgs[0])
    assert page.index("<h2>Rules x providers</h2>") < page.index("<svg ") < page.index("<table")
    # One file: nothing fetched from elsewhere; the one script (the rule filter) is inline.
    assert page.count("<script") == 1 and "<script src" not in page
    assert "<img" not in page and "<link" not in page
    assert re.findall(r"https?://[^\"' ]+", page) == ["http://www.w3.org/2000/svg"]


def test_the_runner_writes_a_report_whose_picture_parses(scenarios, pytester, fake_ndk_env):
    directory = scenarios(test_m="""
        import pytest

        @pytest.mark.rule("CQ-CREATE-DEPTH")
        def test_depth(cq):
            assert cq.depth == 64

        @pytest.mark.rule("CQ-KNOB")
        def test_knob(open_adapter):
            assert open_adapter(max_cq_depth=8).query_info().max_cq_depth == 8
        """)
    report = pytester.path / "out" / "report.html"
    result = pytester.run(sys.executable, "-m", "ndk", "conformance", "--scenarios", str(directory),
                          "--provider", "soft", "--provider", "plain", "--html", str(report), timeout=120)
    assert result.ret == 0, result.stdout.str()
    svg = re.search(r"<svg .*?</svg>", report.read_text(encoding="utf-8"), re.DOTALL).group(0)
    found = rules_in(parse(svg))
    assert found == {"CQ-CREATE-DEPTH": (["pass", "pass"], False), "CQ-KNOB": (["pass", "skip"], True)}


def test_only_cells_with_a_long_word_may_break_anywhere():
    """A node ID or a path longer than a column may break inside (no sideways scroll); the
    other cells keep their words whole, so a narrow window does not squeeze IDs to a letter
    a line."""
    long_id = "scenarios/test_x.py::test_" + "a_very_long_scenario_name_" * 3 + "[soft]"
    records = [Record(long_id, "QP-FLUSH", "soft", "failed", "short message", 0.1)]
    page = format_html(records, ["soft"], 1.0)
    assert f'<td class="long">{long_id}</td><td>short message</td>' in page
    assert "td.long, td.scenarios { overflow-wrap: anywhere; }" in page
    assert "th, td, p, figcaption { overflow-wrap: break-word; }" in page
