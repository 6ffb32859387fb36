"""The validation layer in the ndk.testing plugin, run in-process by pytester against the fake
ndk: the default setting, expect_violation, and what a test's report carries.

The fake's knob ``misbehave="RULE-ID"`` makes ``create_pd`` record a violation of that rule on a
validated adapter (tests/python/fake_ndk): CREATE-COMPLETION-INLINE and CQ-CONCURRENT-CALL are
errors, STATUS-UNDOCUMENTED a warning.
"""

from __future__ import annotations

import pytest

from ndk._report import VIOLATION_PROPERTY, ViolationRecord


def teardown_reports(result):
    """{test name: its teardown report} of an inline_run."""
    return {report.nodeid.split("::")[-1]: report
            for report in result.getreports("pytest_runtest_logreport") if report.when == "teardown"}


def violations_of(report):
    return [value for name, value in report.user_properties if name == VIOLATION_PROPERTY]


def test_validation_is_on_by_default_in_tests_and_restored_afterwards(scenarios, pytester, fake_ndk):
    scenarios(
        test_a="""
        import ndk

        def test_fixture_adapter(adapter):
            assert ndk.validate_default() is True
            assert adapter.validated

        def test_direct_open():
            assert ndk.open_adapter("soft").validated
            assert not ndk.open_adapter("soft", validate=False).validated
        """
    )
    pytester.runpytest().assert_outcomes(passed=2)
    # The run set the process-wide default and hooked ndk.open_adapter; both are undone.
    assert fake_ndk.validate_default() is False
    assert fake_ndk._open_hooks == []


def test_no_validate_turns_the_default_off(scenarios, pytester, fake_ndk):
    scenarios(
        test_a="""
        import ndk

        def test_off(adapter):
            assert ndk.validate_default() is False
            assert not adapter.validated
            assert ndk.open_adapter("soft", validate=True).validated
        """
    )
    pytester.runpytest("--ndk-no-validate").assert_outcomes(passed=1)
    pytester.runpytest("--ndk-validate", "--ndk-no-validate").assert_outcomes(passed=1)


def test_an_undeclared_violation_fails_the_test_in_teardown_with_every_detail(scenarios, pytester):
    scenarios(
        test_a="""
        def test_misbehaving_provider(open_adapter):
            adapter = open_adapter(misbehave="CREATE-COMPLETION-INLINE")
            adapter.create_pd().get()
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*ERROR at teardown of test_misbehaving_provider*",
        "*validation layer: 1 violation(s) not declared with @pytest.mark.expect_violation: "
        "CREATE-COMPLETION-INLINE",
        "*CREATE-COMPLETION-INLINE (provider error, digest 1.0) object PD#1, call NdkCreatePd: "
        "misbehave=CREATE-COMPLETION-INLINE",
    ])


def test_adapters_opened_directly_are_watched_even_once_closed_and_collected(scenarios, pytester):
    scenarios(
        test_a="""
        import gc
        import ndk

        def test_direct():
            adapter = ndk.open_adapter("soft", misbehave="CQ-CONCURRENT-CALL")
            adapter.create_pd()
            adapter.children[0].close()
            adapter.close()
            del adapter
            gc.collect()
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*CQ-CONCURRENT-CALL (consumer error, digest 3.2) object PD#1*"])


def test_a_declared_violation_passes_and_is_reported_as_expected(scenarios, pytester):
    scenarios(
        test_a="""
        import pytest

        @pytest.mark.expect_violation("CREATE-COMPLETION-INLINE")
        def test_declared(open_adapter):
            open_adapter(misbehave="CREATE-COMPLETION-INLINE").create_pd()
        """
    )
    result = pytester.inline_run()
    result.assertoutcome(passed=1)
    (record,) = violations_of(teardown_reports(result)["test_declared[soft]"])
    assert record == ViolationRecord(
        rule="CREATE-COMPLETION-INLINE", object="PD#1", call="NdkCreatePd",
        message="misbehave=CREATE-COMPLETION-INLINE", section="1.0", side="provider",
        severity="error", provider="soft", expected=True)


def test_a_declared_rule_that_was_not_reported_fails(scenarios, pytester):
    scenarios(
        test_a="""
        import pytest

        @pytest.mark.expect_violation("CREATE-COMPLETION-INLINE", "CQ-CONCURRENT-CALL")
        def test_only_one(open_adapter):
            open_adapter(misbehave="CQ-CONCURRENT-CALL").create_pd()
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*expected violation CREATE-COMPLETION-INLINE was not reported*"])
    assert "expected violation CQ-CONCURRENT-CALL" not in result.stdout.str()


def test_markers_on_class_and_function_add_up(scenarios, pytester):
    scenarios(
        test_a="""
        import pytest

        @pytest.mark.expect_violation("CQ-CONCURRENT-CALL")
        class TestBoth:
            @pytest.mark.expect_violation("CREATE-COMPLETION-INLINE")
            def test_two(self, open_adapter):
                open_adapter(misbehave="CREATE-COMPLETION-INLINE,CQ-CONCURRENT-CALL").create_pd()
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_warning_never_fails_but_is_in_the_report(scenarios, pytester):
    scenarios(
        test_a="""
        def test_warned(open_adapter):
            open_adapter(misbehave="STATUS-UNDOCUMENTED").create_pd()
        """
    )
    result = pytester.inline_run()
    result.assertoutcome(passed=1)
    (record,) = violations_of(teardown_reports(result)["test_warned[soft]"])
    assert (record.rule, record.severity, record.expected) == ("STATUS-UNDOCUMENTED", "warning", False)
    assert str(record) == ("STATUS-UNDOCUMENTED (provider warning, digest 1.1-1.10) PD#1 NdkCreatePd: "
                           "misbehave=STATUS-UNDOCUMENTED")


def test_a_test_without_violations_has_no_violation_properties(scenarios, pytester):
    scenarios(test_a="def test_clean(adapter):\n    adapter.create_pd()\n")
    result = pytester.inline_run()
    result.assertoutcome(passed=1)
    assert violations_of(teardown_reports(result)["test_clean[soft]"]) == []


def test_adapters_opened_without_validation_are_not_judged(scenarios, pytester):
    scenarios(
        test_a="""
        import ndk

        def test_bare(open_adapter):
            adapter = open_adapter(validate=False, misbehave="CREATE-COMPLETION-INLINE")
            assert not adapter.validated
            adapter.create_pd()
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_test_that_fails_before_its_violation_is_not_also_missing_it(scenarios, pytester):
    scenarios(
        test_a="""
        import pytest

        @pytest.mark.expect_violation("CREATE-COMPLETION-INLINE")
        def test_fails_early(open_adapter):
            assert False, "broke before the misbehaviour"

        @pytest.mark.expect_violation("CREATE-COMPLETION-INLINE")
        def test_skips_early(open_adapter):
            pytest.skip("not here")
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1, skipped=1)
    assert "was not reported" not in result.stdout.str()


def test_undeclared_errors_still_count_in_a_failing_test(scenarios, pytester):
    scenarios(
        test_a="""
        def test_both(open_adapter):
            open_adapter(misbehave="CREATE-COMPLETION-INLINE").create_pd()
            assert False, "and the scenario failed too"
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1, errors=1)


def test_violations_are_recorded_when_a_fixture_teardown_fails(scenarios, pytester):
    scenarios(
        test_a="""
        import pytest

        @pytest.fixture
        def broken():
            yield
            raise RuntimeError("fixture teardown exploded")

        def test_t(broken, open_adapter):
            open_adapter(misbehave="CREATE-COMPLETION-INLINE").create_pd()
        """
    )
    result = pytester.inline_run()
    report = teardown_reports(result)["test_t[soft]"]
    assert report.failed and "fixture teardown exploded" in str(report.longrepr)
    assert [v.rule for v in violations_of(report)] == ["CREATE-COMPLETION-INLINE"]


def test_each_test_is_judged_on_its_own_adapters(scenarios, pytester):
    scenarios(
        test_a="""
        import ndk

        kept = []

        def test_first():
            kept.append(ndk.open_adapter("soft", misbehave="CREATE-COMPLETION-INLINE"))
            kept[0].create_pd()

        def test_second():
            pass
        """
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*test_first ERROR*"])
    result.stdout.no_fnmatch_line("*test_second ERROR*")


def test_an_unknown_rule_is_a_usage_error(scenarios, pytester):
    scenarios(
        test_a="""
        import pytest

        @pytest.mark.expect_violation("CREATE-COMPLETION-INLNE")
        def test_typo(adapter):
            pass
        """
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*test_typo*expect_violation names no rule of the validation layer: "
         "CREATE-COMPLETION-INLNE (`ndk rules` lists them)"])


@pytest.mark.parametrize("marker", ['expect_violation()', 'expect_violation(1)',
                                    'expect_violation(rule="CQ-CONCURRENT-CALL")'])
def test_a_malformed_expect_violation_is_a_usage_error(scenarios, pytester, marker):
    scenarios(test_a=f"import pytest\n\n@pytest.mark.{marker}\ndef test_m():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_m*use @pytest.mark.expect_violation(\"RULE-ID\", ...)*"])


def test_expect_violation_tests_skip_without_validation(scenarios, pytester):
    scenarios(
        test_a="""
        import pytest

        @pytest.mark.expect_violation("CREATE-COMPLETION-INLINE")
        def test_needs_layer(open_adapter):
            open_adapter(misbehave="CREATE-COMPLETION-INLINE").create_pd()
        """
    )
    result = pytester.runpytest("-rs", "--ndk-no-validate")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*expects a violation of CREATE-COMPLETION-INLINE: needs the "
                                 "validation layer (--ndk-no-validate turned it off)*"])


def test_the_marker_is_registered(scenarios, pytester):
    scenarios(
        test_a="""
        import pytest

        @pytest.mark.expect_violation("CREATE-COMPLETION-INLINE")
        def test_marked(open_adapter):
            open_adapter(misbehave="CREATE-COMPLETION-INLINE").create_pd()
        """
    )
    pytester.runpytest("--strict-markers").assert_outcomes(passed=1)
    pytester.runpytest("--markers").stdout.fnmatch_lines(["@pytest.mark.expect_violation(*rule_ids):*"])


def test_layer_options_pass_through_the_fixture_only_with_the_layer(scenarios, pytester):
    scenarios(
        test_a="""
        import ndk

        def test_timeout(open_adapter):
            adapter = open_adapter(validate_timeout_ms=50)
            assert adapter.timeout_ms == (50 if ndk.validate_default() else None)
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)
    pytester.runpytest("--ndk-no-validate").assert_outcomes(passed=1)
