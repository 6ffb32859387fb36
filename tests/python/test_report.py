"""The conformance summary, on synthetic records (no pytest run involved)."""

from __future__ import annotations

import pytest

from ndk._report import (
    ANY_PROVIDER,
    COLLECTION,
    UNMARKED,
    Record,
    cell,
    family_counts,
    format_family_counts,
    format_matrix,
    format_provider_totals,
    format_report,
    format_skip_reasons,
    format_seconds,
    format_table,
    format_totals,
    format_unmarked_warning,
    matrix,
    rule_sort_key,
    skip_reasons,
)


def rec(rule, provider, outcome, message=None, duration=0.5, name=None):
    nodeid = f"scenarios/test_x.py::{name or (rule or 'anon').lower()}[{provider}]"
    return Record(nodeid, rule, provider, outcome, message, duration)


@pytest.mark.parametrize(
    "outcomes, expected",
    [
        (["passed"], "pass"),
        (["passed", "passed"], "pass"),
        (["skipped"], "skip"),
        (["skipped", "skipped"], "skip"),
        (["passed", "skipped"], "pass*"),
        (["passed", "failed"], "FAIL"),
        (["skipped", "failed"], "FAIL"),
        (["passed", "error"], "FAIL"),
        ([], "-"),
    ],
)
def test_cell_summarises_a_rules_scenarios(outcomes, expected):
    assert cell(outcomes) == expected


def test_rules_sort_by_family_then_id_with_pseudo_rows_last():
    rules = ["QP-B", UNMARKED, "CQ-Z", COLLECTION, "CQ-A", "AD-X"]
    assert sorted(rules, key=rule_sort_key) == ["AD-X", "CQ-A", "CQ-Z", "QP-B", COLLECTION, UNMARKED]


def test_family_sort_uses_the_part_before_the_first_dash():
    # "CQ-Z" belongs to family "CQ", which sorts before "CQX"; a plain string sort would not.
    assert sorted(["CQX-A", "CQ-Z"], key=rule_sort_key) == ["CQ-Z", "CQX-A"]


def test_matrix_has_a_row_per_rule_and_a_column_per_provider():
    records = [
        rec("QP-CONNECT", "soft", "passed"),
        rec("QP-CONNECT", "verbs", "failed", "assert 0x103 == 0"),
        rec("CQ-DEPTH", "soft", "passed", name="a"),
        rec("CQ-DEPTH", "soft", "skipped", "why", name="b"),
        rec("CQ-DEPTH", "verbs", "skipped", "why"),
    ]
    cols, rows = matrix(records, ["soft", "verbs"])
    assert cols == ["soft", "verbs"]
    assert rows == [["CQ-DEPTH", "pass*", "skip"], ["QP-CONNECT", "pass", "FAIL"]]


def test_matrix_keeps_requested_providers_without_results_and_adds_others():
    records = [rec("CQ-DEPTH", "soft", "passed"), rec(None, None, "passed")]
    cols, rows = matrix(records, ["soft", "verbs"])
    assert cols == ["soft", "verbs", ANY_PROVIDER]
    assert rows == [["CQ-DEPTH", "pass", "-", "-"], [UNMARKED, "-", "-", "pass"]]


def test_format_matrix_aligns_columns():
    records = [rec("CQ-CREATE-DEPTH", "soft", "passed"), rec("AD-X", "soft", "failed")]
    lines = format_matrix(records, ["soft"]).splitlines()
    assert lines[0].split() == ["rule", "soft"]
    assert [line.split() for line in lines[1:]] == [["AD-X", "FAIL"], ["CQ-CREATE-DEPTH", "pass"]]
    # Every cell starts at the same column.
    assert len({line.index(word) for line, word in zip(lines, ["soft", "FAIL", "pass"])}) == 1


def test_format_table_strips_trailing_spaces():
    text = format_table(["a", "b"], [["long-value", ""]])
    assert all(line == line.rstrip() for line in text.splitlines())


def test_family_counts_count_errors_as_failures():
    records = [
        rec("CQ-A", "soft", "passed"),
        rec("CQ-B", "soft", "error"),
        rec("CQ-C", "soft", "failed"),
        rec("CQ-D", "soft", "skipped"),
        rec("QP-A", "soft", "passed"),
        rec("CQ-A", "verbs", "skipped"),
    ]
    counts = family_counts(records)
    assert counts["CQ"]["soft"] == {"passed": 1, "failed": 2, "skipped": 1}
    assert counts["CQ"]["verbs"] == {"skipped": 1}
    assert counts["QP"]["soft"] == {"passed": 1}


def test_format_family_counts_rows():
    records = [rec("CQ-A", "soft", "passed"), rec("CQ-B", "soft", "failed"), rec("QP-A", "verbs", "skipped")]
    lines = format_family_counts(records, ["soft", "verbs"]).splitlines()
    assert "passed/failed/skipped" in lines[0]
    assert lines[1].split() == ["family", "soft", "verbs"]
    assert lines[2].split() == ["CQ", "1/1/0", "-"]
    assert lines[3].split() == ["QP", "-", "0/0/1"]


def test_skip_reasons_are_grouped_and_counted_most_frequent_first():
    records = [
        rec("A-1", "verbs", "skipped", "quirk of verbs: no arm"),
        rec("A-2", "verbs", "skipped", "needs max_srq_depth >= 1, provider reports 0"),
        rec("A-3", "verbs", "skipped", "quirk of verbs: no arm"),
        rec("A-4", "soft", "passed"),
        rec("A-5", "soft", "skipped", None),
    ]
    assert skip_reasons(records) == [
        ("quirk of verbs: no arm", 2),
        ("(no reason given)", 1),
        ("needs max_srq_depth >= 1, provider reports 0", 1),
    ]
    text = format_skip_reasons(records)
    assert text.splitlines()[0] == "skip reasons:"
    assert text.splitlines()[1].split(None, 1) == ["2", "quirk of verbs: no arm"]


def test_no_skip_section_without_skips():
    assert format_skip_reasons([rec("A-1", "soft", "passed")]) == ""


def test_totals_line_counts_outcomes_and_times():
    records = [
        rec("A-1", "soft", "passed", duration=1.0),
        rec("A-2", "soft", "passed", duration=1.25),
        rec("A-3", "soft", "skipped", "r", duration=0.0),
        rec("A-4", "soft", "failed", "m", duration=1.0),
    ]
    assert format_totals(records, wall_seconds=4.0) == (
        "conformance: 2 passed, 1 failed, 1 skipped in 4.0 s (test phases 3.2 s)"
    )


def test_totals_line_leads_with_the_measured_run_even_when_every_test_took_no_time():
    # A provider whose scenarios all skip (verbs on a host without RDMA) sums to 0 s of test
    # phases; the run still took the time the runner measured.
    records = [rec(f"A-{i}", "verbs", "skipped", "no device", duration=0.0) for i in range(3)]
    assert format_totals(records, wall_seconds=2.46) == (
        "conformance: 0 passed, 0 failed, 3 skipped in 2.5 s (test phases 0.00 s)"
    )


def test_seconds_keep_two_decimals_under_a_second():
    assert [format_seconds(s) for s in (0.0, 0.042, 0.5, 0.96, 35.94)] == [
        "0.00 s", "0.04 s", "0.50 s", "1.0 s", "35.9 s"]


def test_provider_totals_give_each_column_its_test_phase_time():
    records = [rec("A-1", "soft", "passed", duration=1.5), rec("A-1", "verbs", "skipped", "r", duration=0.0)]
    assert format_provider_totals(records, ["soft", "verbs"]).splitlines() == [
        "per provider:",
        "  soft: 1 passed, 0 failed, 0 skipped, test phases 1.5 s",
        "  verbs: 0 passed, 0 failed, 1 skipped, test phases 0.00 s",
    ]
    assert format_provider_totals(records[:1], ["soft"]) == ""


def test_totals_line_mentions_errors_only_when_there_are_some():
    assert "error" not in format_totals([rec("A-1", "soft", "passed")], 0.1)
    assert ", 2 errors in" in format_totals([rec("A-1", "soft", "error"), rec("A-2", "soft", "error")], 0.1)


def test_unmarked_scenarios_get_a_warning_naming_them():
    records = [rec(None, "soft", "passed", name=f"t{i}") for i in range(7)] + [rec("A-1", "soft", "passed")]
    warning = format_unmarked_warning(records, limit=5)
    assert warning.startswith("warning: 7 scenario(s) without a rule marker: ")
    assert "t0[soft]" in warning and "t4[soft]" in warning and "t5[soft]" not in warning
    assert warning.endswith("and 2 more")
    assert format_unmarked_warning([rec("A-1", "soft", "passed")]) == ""


def test_collection_errors_are_not_unmarked_scenarios():
    assert format_unmarked_warning([Record("test_x.py", COLLECTION, None, "error", "ImportError", 0)]) == ""


def test_report_puts_sections_in_order():
    records = [
        rec("CQ-A", "soft", "passed"),
        rec("CQ-B", "soft", "skipped", "quirk of soft: r"),
        rec("CQ-C", "soft", "failed", "assert False"),
        rec(None, "soft", "passed"),
    ]
    text = format_report(records, ["soft"], wall_seconds=1.0)
    markers = ["rule", "scenarios per family", "skip reasons:", "failures:", "warning:", "conformance:"]
    positions = [text.index(marker) for marker in markers]
    assert positions == sorted(positions)
    assert "assert False" in text.split("failures:")[1]
