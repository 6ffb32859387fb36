"""ResultCollector turns pytest reports into Records (run in-process by pytester)."""

from __future__ import annotations

from ndk._report import COLLECTION
from ndk.conformance import ResultCollector


def collect(pytester, *args):
    collector = ResultCollector()
    pytester.inline_run(*args, plugins=[collector])
    return collector, {record.nodeid: record for record in collector.records}


def test_records_rule_provider_outcome_and_message(scenarios, pytester):
    scenarios(
        test_a="""
        import pytest

        @pytest.mark.rule("CQ-DEPTH")
        def test_pass(ndk_provider):
            pass

        @pytest.mark.rule("CQ-FAIL")
        def test_fail(ndk_provider):
            assert 1 + 1 == 3, "arithmetic broke"

        @pytest.mark.rule("CQ-SKIP")
        def test_skip(ndk_provider):
            pytest.skip("not today")

        def test_unmarked():
            pass
        """
    )
    collector, records = collect(pytester, "--ndk-provider", "soft", "--ndk-provider", "plain")
    assert collector.providers == ["soft", "plain"]
    assert len(records) == 7

    passed = records["test_a.py::test_pass[plain]"]
    assert (passed.rule, passed.provider, passed.outcome, passed.message) == ("CQ-DEPTH", "plain", "passed", None)
    assert passed.duration >= 0

    failed = records["test_a.py::test_fail[soft]"]
    assert (failed.rule, failed.outcome) == ("CQ-FAIL", "failed")
    assert "arithmetic broke" in failed.message and "\n" not in failed.message

    skipped = records["test_a.py::test_skip[soft]"]
    assert (skipped.outcome, skipped.message) == ("skipped", "capability: not today")

    unmarked = records["test_a.py::test_unmarked"]
    assert (unmarked.rule, unmarked.provider, unmarked.outcome) == (None, None, "passed")


def test_fixture_failures_are_errors_and_a_failure_stays_a_failure(scenarios, pytester):
    scenarios(
        test_a="""
        import pytest

        @pytest.fixture
        def broken_setup():
            raise RuntimeError("setup exploded")

        @pytest.fixture
        def broken_teardown():
            yield
            raise RuntimeError("teardown exploded")

        def test_setup_error(broken_setup):
            pass

        def test_teardown_error(broken_teardown):
            pass

        def test_fail_then_teardown_error(broken_teardown):
            assert False, "call failed"
        """
    )
    _, records = collect(pytester)
    assert records["test_a.py::test_setup_error"].outcome == "error"
    assert "setup exploded" in records["test_a.py::test_setup_error"].message
    assert records["test_a.py::test_teardown_error"].outcome == "error"
    assert "teardown exploded" in records["test_a.py::test_teardown_error"].message
    assert records["test_a.py::test_fail_then_teardown_error"].outcome == "failed"
    assert "call failed" in records["test_a.py::test_fail_then_teardown_error"].message


def test_xfail_counts_as_a_skip_with_its_reason(scenarios, pytester):
    scenarios(
        test_a="""
        import pytest

        @pytest.mark.xfail(reason="known bug")
        def test_x():
            assert False
        """
    )
    _, records = collect(pytester)
    assert (records["test_a.py::test_x"].outcome, records["test_a.py::test_x"].message) == ("skipped", "xfail: known bug")


def test_a_module_that_fails_to_import_is_a_collection_error(scenarios, pytester):
    scenarios(test_broken="import no_such_module_anywhere\n", test_fine="def test_ok():\n    pass\n")
    _, records = collect(pytester)
    broken = records["test_broken.py"]
    assert (broken.rule, broken.outcome) == (COLLECTION, "error")
    assert "no_such_module_anywhere" in broken.message


def test_a_module_skipped_as_a_whole_is_recorded_with_its_reason(scenarios, pytester):
    scenarios(test_verbs="import pytest\npytest.skip('no RDMA device', allow_module_level=True)\n")
    _, records = collect(pytester)
    assert list(records) == ["test_verbs.py"]
    skipped = records["test_verbs.py"]
    assert (skipped.rule, skipped.outcome, skipped.message) == (COLLECTION, "skipped", "no RDMA device")
