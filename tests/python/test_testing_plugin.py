"""The ndk.testing pytest plugin, run in-process by pytester against the fake ndk."""

from __future__ import annotations

import pytest


def test_each_scenario_runs_once_per_provider_with_the_name_as_id(scenarios, pytester):
    scenarios(
        test_a="""
        def test_uses_provider(ndk_provider):
            assert ndk_provider in ("soft", "plain")

        def test_uses_adapter(adapter):
            assert adapter.query_info().max_cq_depth > 0

        def test_needs_no_provider():
            pass
        """
    )
    result = pytester.runpytest("--collect-only", "-q", "--ndk-provider", "soft", "--ndk-provider", "plain")
    collected = {line for line in result.outlines if "::" in line}
    assert collected == {
        "test_a.py::test_uses_provider[soft]",
        "test_a.py::test_uses_provider[plain]",
        "test_a.py::test_uses_adapter[soft]",
        "test_a.py::test_uses_adapter[plain]",
        "test_a.py::test_needs_no_provider",
    }
    pytester.runpytest("--ndk-provider", "soft", "--ndk-provider", "plain").assert_outcomes(passed=5)


def test_provider_defaults_to_soft(scenarios, pytester):
    scenarios(test_a="def test_p(ndk_provider):\n    assert ndk_provider == 'soft'\n")
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_p[[]soft[]] PASSED*"])


def test_repeated_provider_runs_once(scenarios, pytester):
    scenarios(test_a="def test_p(ndk_provider):\n    pass\n")
    pytester.runpytest("--ndk-provider", "soft", "--ndk-provider", "soft").assert_outcomes(passed=1)


def test_explicit_provider_parametrization_wins(scenarios, pytester):
    scenarios(
        test_a="""
        import pytest

        @pytest.mark.parametrize("ndk_provider", ["plain"], indirect=True)
        def test_p(ndk_provider):
            assert ndk_provider == "plain"
        """
    )
    pytester.runpytest("--ndk-provider", "soft").assert_outcomes(passed=1)


def test_knobs_on_a_provider_without_knobs_skip_with_the_reason(scenarios, pytester):
    scenarios(
        test_a="""
        def test_knob(open_adapter):
            adapter = open_adapter(max_srq_depth=0)
            assert adapter.query_info().max_srq_depth == 0
        """
    )
    result = pytester.runpytest("-rs", "--ndk-provider", "soft", "--ndk-provider", "plain")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED*provider 'plain' cannot take the knobs the scenario sets (max_srq_depth): provider 'plain' takes no knobs"]
    )


def test_an_address_the_adapter_holds_needs_no_address_knob(scenarios, pytester):
    # address= is a convenience: a provider without the knob serves the scenario with an
    # adapter that holds the address itself (a device given the scenarios' addresses).
    scenarios(
        test_a="""
        def test_held(open_adapter):
            assert "192.0.2.32" in open_adapter(address="192.0.2.32").addresses

        def test_not_held(open_adapter):
            open_adapter(address="192.0.2.31")

        def test_other_knob(open_adapter):
            open_adapter(address="192.0.2.32", max_cq_depth=1)
        """
    )
    result = pytester.runpytest("-rs", "--ndk-provider", "plain")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines_random([
        "SKIPPED*provider 'plain' cannot take the knobs the scenario sets (address): provider "
        "'plain' takes no knob 'address', and its adapter does not hold 192.0.2.31 (it holds "
        "192.0.2.32)",
        "SKIPPED*provider 'plain' cannot take the knobs the scenario sets (address, "
        "max_cq_depth): provider 'plain' takes no knobs",
    ])


def test_open_without_knobs_does_not_swallow_knobs_not_supported(scenarios, pytester, monkeypatch, fake_ndk):
    def refuse(provider, **knobs):
        raise fake_ndk.KnobsNotSupported("unexpected")

    monkeypatch.setattr(fake_ndk, "open_adapter", refuse)
    scenarios(test_a="def test_a(adapter):\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)


def test_fixtures_close_what_they_opened_children_first(scenarios, pytester, fake_ndk):
    scenarios(
        test_a="""
        def test_objects(adapter, pd, cq, open_adapter):
            second = open_adapter(max_cq_depth=8)
            assert second is not adapter
            assert cq.depth == 64
            assert pd in adapter.children and cq in adapter.children
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)
    # The fake refuses to close an adapter whose children are open, so this also checks order.
    assert len(fake_ndk.opened) == 2
    assert all(adapter.is_closed for adapter in fake_ndk.opened)
    assert all(child.is_closed for child in fake_ndk.opened[0].children)


def test_objects_the_scenario_closed_itself_are_not_a_teardown_error(scenarios, pytester, fake_ndk):
    scenarios(
        test_a="""
        def test_close(adapter, pd, cq):
            pd.close()
            cq.close()
            adapter.close()
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)
    assert fake_ndk.opened[0].is_closed


def test_requires_skips_when_the_provider_reports_too_little(scenarios, pytester):
    scenarios(
        test_a="""
        from ndk.testing import requires

        def test_srq(open_adapter):
            requires(open_adapter(max_srq_depth=0), max_srq_depth=1)

        def test_srq_available(adapter):
            info = requires(adapter, max_srq_depth=1, max_cq_depth=64)
            assert info.max_srq_depth >= 1
        """
    )
    result = pytester.runpytest("-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*needs max_srq_depth >= 1, provider reports 0"])


def test_requires_rejects_an_unknown_field(scenarios, pytester):
    scenarios(
        test_a="""
        from ndk.testing import requires

        def test_typo(adapter):
            requires(adapter, max_srq_dept=1)
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*adapter info has no field 'max_srq_dept'*"])


def test_markers_are_registered(scenarios, pytester):
    scenarios(
        test_a="""
        import pytest

        @pytest.mark.rule("CQ-CREATE-DEPTH")
        @pytest.mark.digest("4.2")
        def test_marked(ndk_provider):
            pass
        """
    )
    pytester.runpytest("--strict-markers").assert_outcomes(passed=1)
    pytester.runpytest("--markers").stdout.fnmatch_lines(["@pytest.mark.rule(id):*", "@pytest.mark.digest(section):*"])


def test_a_malformed_rule_marker_is_a_usage_error(scenarios, pytester):
    scenarios(
        test_a="""
        import pytest

        @pytest.mark.rule("CQ-A", "CQ-B")
        def test_two_rules(ndk_provider):
            pass
        """
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_two_rules*exactly one string*"])


def test_a_knob_set_during_the_test_on_a_provider_without_knobs_skips(scenarios, pytester, fake_ndk):
    scenarios(
        test_a="""
        import ndk

        def test_knob_at_run_time(ndk_provider):
            if ndk_provider == "plain":
                raise ndk.KnobsNotSupported("provider 'plain' has no knob 'fail'")

        def test_other_failure(ndk_provider):
            assert ndk_provider == "soft"
        """
    )
    result = pytester.runpytest("-rs", "--ndk-provider", "soft", "--ndk-provider", "plain")
    result.assert_outcomes(passed=2, skipped=1, failed=1)
    result.stdout.fnmatch_lines(["SKIPPED*provider 'plain' has no knob 'fail'"])


def test_provider_setup_runs_once_per_provider_before_its_tests(scenarios, pytester, tmp_path):
    log = tmp_path / "setup.log"
    scenarios(
        test_a=f"""
        def test_one(ndk_provider):
            with open({str(log)!r}, "a") as f:
                f.write("test " + ndk_provider + "\\n")

        def test_two(ndk_provider):
            with open({str(log)!r}, "a") as f:
                f.write("test " + ndk_provider + "\\n")
        """
    )
    result = pytester.runpytest("--ndk-provider", "soft", "--ndk-provider", "plain",
                                f"--ndk-provider-setup=echo setup >> {log}; echo")
    result.assert_outcomes(passed=4)
    lines = log.read_text().split("\n")
    # grouped by provider, the setup first in each group
    assert lines[:6] == ["setup", "test soft", "test soft", "setup", "test plain", "test plain"]


def test_a_failed_provider_setup_errors_that_providers_tests(scenarios, pytester):
    scenarios(test_a="def test_p(ndk_provider):\n    pass\n")
    result = pytester.runpytest("--ndk-provider", "soft", "--ndk-provider", "plain",
                                "--ndk-provider-setup=test soft =")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*provider setup 'test soft = plain' exited 1*"])


