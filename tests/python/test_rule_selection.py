"""``--ndk-rule`` (and ``ndk conformance --rule``): scenarios selected by their rule marker,
as an ID, a glob or a family; the rest deselected as ``-k`` does."""

from __future__ import annotations

import pytest

from ndk._selection import rule_selected


@pytest.mark.parametrize("rule, patterns, selected", [
    ("CQ-CREATE-DEPTH", ["CQ-CREATE-DEPTH"], True),
    ("CQ-CREATE-DEPTH", ["CQ-CREATE"], False),  # an ID is whole, not a prefix
    ("CQ-CREATE-DEPTH", ["CQ-*"], True),
    ("CQ-CREATE-DEPTH", ["*-DEPTH"], True),
    ("CQ-CREATE-DEPTH", ["CQ"], True),  # the family
    ("CQE-X", ["CQ"], False),  # another family that starts alike
    ("CQ-CREATE-DEPTH", ["cq-*"], False),  # IDs are upper case, matched as written
    ("CQ-CREATE-DEPTH", ["QP", "CQ-CREATE-*"], True),
    (None, ["*"], False),  # a scenario without a rule marker is never selected
])  # fmt: skip
def test_rule_selected(rule, patterns, selected):
    assert rule_selected(rule, patterns) is selected


def test_the_option_deselects_the_other_rules(scenarios, pytester, fake_ndk_env):
    scenarios(test_rules="""
        import pytest

        @pytest.mark.rule("CQ-CREATE-DEPTH")
        def test_cq_depth(ndk_provider):
            pass

        @pytest.mark.rule("CQ-RESIZE")
        def test_cq_resize(ndk_provider):
            pass

        @pytest.mark.rule("QP-CREATE")
        def test_qp(ndk_provider):
            pass

        def test_unmarked():
            pass
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ndk-rule", "CQ-CREATE-*",
                                           "--ndk-rule", "QP", "-v")
    result.assert_outcomes(passed=2, deselected=2)
    result.stdout.fnmatch_lines(["*test_cq_depth*PASSED*", "*test_qp*PASSED*"])
