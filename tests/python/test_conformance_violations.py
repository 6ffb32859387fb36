"""``ndk conformance`` reports the validation layer's violations: text, JUnit XML and HTML
(a subprocess against the fake ndk, like test_conformance_runner.py)."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET

SCENARIOS = {
    "test_v": """
        import pytest

        @pytest.mark.rule("PD-CREATE")
        def test_misbehaves(open_adapter):
            open_adapter(misbehave="CREATE-COMPLETION-INLINE").create_pd()

        @pytest.mark.rule("PD-CREATE")
        def test_warned(open_adapter):
            open_adapter(misbehave="STATUS-UNDOCUMENTED").create_pd()

        @pytest.mark.rule("PD-CREATE")
        @pytest.mark.expect_violation("CREATE-COMPLETION-INLINE")
        def test_declared(open_adapter):
            open_adapter(misbehave="CREATE-COMPLETION-INLINE").create_pd()

        @pytest.mark.rule("PD-CLEAN")
        def test_clean(adapter):
            adapter.create_pd()
        """,
}


def run_ndk(pytester, *args):
    return pytester.run(sys.executable, "-m", "ndk", *args, timeout=120)


def block(lines, title):
    """The lines of the report section starting with `title`, up to the next blank line."""
    start = lines.index(title)
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start + 1:end]


def test_text_junit_and_html_reports_count_violations_per_provider_and_rule(scenarios, pytester, fake_ndk_env):
    directory = scenarios(**SCENARIOS)
    junit = pytester.path / "out" / "report.xml"
    html = pytester.path / "out" / "report.html"
    result = run_ndk(pytester, "conformance", "--scenarios", str(directory), "--junit", str(junit),
                     "--html", str(html))
    assert result.ret == 1, result.stdout.str()
    rows = [line.split(None, 6) for line in block(result.outlines, "validation layer violations per provider and rule:")]
    assert rows == [
        ["provider", "rule", "side", "errors", "warnings", "expected", "scenarios"],
        ["soft", "CREATE-COMPLETION-INLINE", "provider", "1", "0", "1",
         "test_v.py::test_misbehaves[soft], test_v.py::test_declared[soft]"],
        ["soft", "STATUS-UNDOCUMENTED", "provider", "0", "1", "0", "test_v.py::test_warned[soft]"],
    ]
    result.stdout.fnmatch_lines([
        "failures:",
        "  ERROR  test_v.py::test_misbehaves[soft]: validation layer: 1 violation(s) not declared "
        "with @pytest.mark.expect_violation: CREATE-COMPLETION-INLINE",
    ])
    # The final summary line stays the last line.
    assert result.outlines[-1].startswith("conformance: 3 passed, 0 failed, 0 skipped, 1 error in ")

    suite = ET.parse(junit).getroot().find("testsuite")
    summary = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert summary.pop("ndk-level soft required") == (
        "rules=2 passed=3 failed=1 differing=0 skipped=0")
    assert summary.pop("ndk-level soft reference choice").startswith("rules=0 ")
    assert summary == {
        "ndk-violations soft CREATE-COMPLETION-INLINE":
            "side=provider errors=1 warnings=0 expected=1 "
            "scenarios=test_v.py::test_misbehaves[soft] test_v.py::test_declared[soft]",
        "ndk-violations soft STATUS-UNDOCUMENTED":
            "side=provider errors=0 warnings=1 expected=0 scenarios=test_v.py::test_warned[soft]",
    }
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    properties = [(p.get("name"), p.get("value")) for p in cases["test_warned[soft]"].iter("property")]
    assert properties == [("ndk_violation", "STATUS-UNDOCUMENTED (provider warning, digest 1.1-1.10) "
                                            "PD#1 NdkCreatePd: misbehave=STATUS-UNDOCUMENTED")]
    assert [child.tag for child in cases["test_misbehaves[soft]"] if child.tag == "error"] == ["error"]
    assert list(cases["test_clean[soft]"].iter("property")) == []

    page = html.read_text(encoding="utf-8")
    assert "<h2>Validation layer violations per provider and rule</h2>" in page
    assert "<td>CREATE-COMPLETION-INLINE</td>" in page and "test_v.py::test_declared[soft]" in page


def test_no_validate_passes_through_and_reports_no_violations(scenarios, pytester, fake_ndk_env):
    directory = scenarios(**SCENARIOS)
    result = run_ndk(pytester, "conformance", "--scenarios", str(directory), "--", "--ndk-no-validate")
    assert result.ret == 0, result.stdout.str()
    assert "validation layer violations" not in result.stdout.str()
    result.stdout.fnmatch_lines(["conformance: 3 passed, 0 failed, 1 skipped in *"])
