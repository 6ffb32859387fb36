"""Expectations applied to a run (ndk.testing, ndk.conformance, ndk._report): skips carry their
kind, an expected failure that passes is listed as XPASS by rule and provider, a [[differs]]
entry applies to reference-choice scenarios only, and a bad file stops the run (pytest: a usage
error; `ndk conformance --expectations`: exit 2) naming the file and line."""

from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET

import pytest

from ndk import cli
from ndk._report import (Record, format_report, format_skip_kinds, format_totals,
                         format_xpasses, skip_kind_counts)
from ndk.conformance import ResultCollector, add_violations_to_junit

SCENARIOS = """
    import pytest
    from ndk.testing import OPTION, requires, skip

    @pytest.mark.rule("CQ-ARM")
    def test_arm(adapter):
        pass

    @pytest.mark.rule("CQ-OTHER")
    def test_other(ndk_provider):
        assert ndk_provider == "soft"

    @pytest.mark.rule("QP-KNOB")
    def test_knob(open_adapter):
        open_adapter(max_cq_depth=4)

    @pytest.mark.rule("SRQ-CAP")
    def test_capability(adapter):
        requires(adapter, max_srq_depth=1 << 40)

    @pytest.mark.rule("VAL-OFF")
    def test_option(ndk_provider):
        skip(OPTION, "the validation layer is off")

    @pytest.mark.rule("CQ-OWN")
    def test_own_skip(ndk_provider):
        pytest.skip("adapter does not set NDK_ADAPTER_FLAG_X")

    @pytest.mark.rule("REF-CHOICE")
    @pytest.mark.reference("SEM-1")
    def test_choice(ndk_provider):
        assert ndk_provider == "soft", "plain chose otherwise"
"""

PLAIN = """\
    format = 1
    provider = "plain"

    [[skip]]
    rules = ["CQ-A*"]
    reason = "cannot arm twice"
    evidence = "the lane"

    [[xfail]]
    rules = ["CQ-OTHER"]
    reason = "bug 1"
    evidence = "the lane"

    [[xfail]]
    provider = "soft"
    rules = ["CQ-OTHER"]
    reason = "bug 2, fixed since"
    evidence = "the lane"

    [[differs]]
    rules = ["REF-*"]
    reason = "plain chooses otherwise"
    evidence = "its docs"
"""


def expectations_file(pytester, text=PLAIN, name="plain.toml"):
    path = pytester.path / name
    path.write_text(textwrap.dedent(text))
    return path


def run(pytester, *args):
    collector = ResultCollector()
    pytester.inline_run(*args, plugins=[collector])
    return {(r.rule, r.provider): r for r in collector.records}, collector


def test_entries_skip_expect_failures_and_differences_per_provider(scenarios, pytester):
    scenarios(test_a=SCENARIOS)
    path = expectations_file(pytester)
    records, collector = run(pytester, "--ndk-provider", "soft", "--ndk-provider", "plain",
                             "--ndk-expectations", str(path))
    skipped = records[("CQ-ARM", "plain")]
    assert (skipped.outcome, skipped.expectation) == ("skipped", "skip")
    assert skipped.message == f"expectation: skip for plain ({path}:4): cannot arm twice"
    assert records[("CQ-ARM", "soft")].outcome == "passed"
    expected = records[("CQ-OTHER", "plain")]
    assert (expected.outcome, expected.message) == (
        "skipped", f"xfail: expectation: xfail for plain ({path}:9): bug 1")
    # soft passes what its entry expected to fail: an XPASS, with the entry
    stale = records[("CQ-OTHER", "soft")]
    assert (stale.outcome, stale.expectation) == ("passed", "xfail")
    assert stale.message == f"expectation: xfail for soft ({path}:14): bug 2, fixed since"
    differs = records[("REF-CHOICE", "plain")]
    assert (differs.outcome, differs.expectation) == ("differs", "differs")
    assert differs.message == f"expectation: differs for plain ({path}:20): plain chooses otherwise"

    text = format_report(collector.records, collector.providers, 1.0)
    assert (f"  XPASS  CQ-OTHER on soft: expectation: xfail for soft ({path}:14): bug 2, "
            "fixed since") in text.splitlines()
    assert "conformance: 4 passed (1 XPASS), 0 failed, 1 differ (reference choice), " \
           "9 skipped" in text
    assert "skipped, by kind:" in text
    kinds = skip_kind_counts(collector.records, collector.providers)
    assert dict(kinds["soft"]) == {"capability": 2, "option": 1}
    assert dict(kinds["plain"]) == {"capability": 2, "option": 1, "knob": 1, "expectation": 1,
                                    "xfail": 1}


def test_skip_reasons_begin_with_their_kind(scenarios, pytester):
    scenarios(test_a=SCENARIOS)
    result = pytester.runpytest("-rs", "--ndk-provider", "plain", "--ndk-expectations",
                                str(expectations_file(pytester)))
    result.stdout.fnmatch_lines_random([
        "SKIPPED * expectation: skip for plain (*plain.toml:4): cannot arm twice",
        "SKIPPED * knob: provider 'plain' cannot take the knobs the scenario sets (max_cq_depth)*",
        "SKIPPED * capability: needs max_srq_depth >= 1099511627776, provider reports *",
        "SKIPPED * option: the validation layer is off",
        "SKIPPED * capability: adapter does not set NDK_ADAPTER_FLAG_X",
    ])


def test_without_expectations_files_the_harness_files_for_the_providers_apply(
        scenarios, pytester, monkeypatch):
    from ndk import expectations

    folder = pytester.mkdir("installed")
    expectations_file(pytester, PLAIN, "installed/plain.toml")
    monkeypatch.setattr(expectations, "expectations_dir", lambda: folder)
    scenarios(test_a=SCENARIOS)
    records, _ = run(pytester, "--ndk-provider", "plain", "-k", "test_arm")
    assert records[("CQ-ARM", "plain")].expectation == "skip"
    # a file given replaces them
    other = expectations_file(pytester, "format = 1\n", "empty.toml")
    records, _ = run(pytester, "--ndk-provider", "plain", "-k", "test_arm",
                     "--ndk-expectations", str(other))
    assert records[("CQ-ARM", "plain")].outcome == "passed"


def test_a_pair_scenario_is_judged_under_its_pair(scenarios, pytester):
    scenarios(test_a="""
        import pytest

        @pytest.mark.rule("PAIR-RULE")
        def test_pair(pair):
            pass

        @pytest.mark.rule("OWN-RULE")
        def test_own(adapter):
            pass
        """)
    path = expectations_file(pytester, """\
        format = 1
        [[skip]]
        active = "soft"
        passive = "plain"
        rules = ["PAIR-RULE", "OWN-RULE"]
        reason = "the pair differs"
        evidence = "e"
        [[skip]]
        provider = "soft"
        rules = ["PAIR-RULE", "OWN-RULE"]
        reason = "soft alone differs"
        evidence = "e"
        """)
    result = pytester.runpytest("-rs", "--ndk-provider", "soft", "--ndk-peer-provider", "plain",
                                "--ndk-expectations", str(path))
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines_random([
        "SKIPPED * expectation: skip for soft|plain (*:2): the pair differs",
        "SKIPPED * expectation: skip for soft (*:8): soft alone differs"])


def test_differs_on_a_required_scenario_is_a_usage_error(scenarios, pytester):
    scenarios(test_a=SCENARIOS)
    path = expectations_file(pytester, """\
        format = 1
        provider = "soft"
        [[differs]]
        rules = ["CQ-*"]
        reason = "r"
        evidence = "e"
        """)
    result = pytester.runpytest("--ndk-expectations", str(path))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (f"--ndk-expectations: {path}:3: [[differs]] names CQ-ARM, whose scenario "
            "test_a.py::test_arm[soft] checks a required rule") in result.stderr.str()


def test_a_bad_file_is_a_usage_error_naming_file_and_line(scenarios, pytester):
    scenarios(test_a=SCENARIOS)
    path = expectations_file(pytester, "format = 1\n[[skip]]\nrule = \"CQ-ARM\"\n")
    result = pytester.runpytest("--ndk-expectations", str(path))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (f"--ndk-expectations: {path}:3: unknown key 'rule' in [[skip]]"
            in result.stderr.str())


def test_ndk_conformance_exits_2_on_a_bad_file_before_running_anything(tmp_path, capsys):
    path = tmp_path / "mine.toml"
    path.write_text("format = 1\nprovider = \"soft\"\n[[skipp]]\n")
    code = cli.main(["conformance", "--scenarios", str(tmp_path), "--expectations", str(path)])
    assert code == 2
    captured = capsys.readouterr()
    assert captured.err == (f"ndk conformance: --expectations: {path}:3: unknown key 'skipp' "
                            "(expected format, provider, or entries [[skip]], [[xfail]], "
                            "[[differs]])\n")
    assert captured.out == ""


def record(rule, provider, outcome, message=None, expectation=None):
    return Record(nodeid=f"t::{rule}[{provider}]", rule=rule, provider=provider, outcome=outcome,
                  message=message, duration=0.0, expectation=expectation)


def test_the_report_counts_skip_kinds_per_provider_and_lists_xpasses():
    records = [
        record("A-1", "p", "skipped", "expectation: skip for p (f:3): r", "skip"),
        record("A-2", "p", "skipped", "knob: no knob 'x'"),
        record("A-3", "p", "skipped", "knob: no knob 'y'"),
        record("A-4", "p", "skipped", "xfail: expectation: xfail for p (f:9): bug", "xfail"),
        record("A-5", "q", "skipped", "capability: needs max_srq_depth >= 1"),
        record("A-6", "q", "skipped", "a skip no one classified"),
        record("A-7", "q", "passed", "expectation: xfail for q (f:12): bug", "xfail"),
        record("A-8", "q", "passed"),
    ]
    assert format_skip_kinds(records, ["q", "p"]).splitlines() == [
        "skipped, by kind:",
        "  q: 1 capability, 1 unclassified",
        "  p: 1 expectation, 2 knob, 1 xfail",
    ]
    assert format_xpasses(records).splitlines() == [
        "expected to fail, passed (XPASS: the expectations entry is stale, remove it):",
        "  XPASS  A-7 on q: expectation: xfail for q (f:12): bug",
    ]
    assert format_totals(records, 1.0).startswith("conformance: 2 passed (1 XPASS), 0 failed")
    assert format_skip_kinds(records[6:], ["q"]) == "" and format_xpasses(records[:6]) == ""


def test_the_junit_file_gets_the_skip_kinds_and_the_xpasses_per_provider(tmp_path):
    records = [
        record("A-1", "p", "skipped", "expectation: skip for p (f:3): r", "skip"),
        record("A-2", "p", "skipped", "knob: no knob 'x'"),
        record("A-3", "p", "skipped", "knob: no knob 'y'"),
        record("A-7", "q", "passed", "expectation: xfail for q (f:12): bug", "xfail"),
    ]
    junit = tmp_path / "report.xml"
    junit.write_text('<testsuites><testsuite name="pytest"/></testsuites>')
    add_violations_to_junit(junit, records, ["q", "p"])
    properties = {p.get("name"): p.get("value") for p in ET.parse(junit).iter("property")}
    assert properties["ndk-skips p"] == "expectation=1 knob=2"
    assert "ndk-skips q" not in properties
    assert properties["ndk-xpass q"] == "count=1 scenarios=t::A-7[q]"
