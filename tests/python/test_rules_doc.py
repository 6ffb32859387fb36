"""``ndk rules`` and docs/validation.md: the rule table as text and as the generated page."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ndk import cli
from ndk._rules_doc import REGENERATE, rules_markdown, rules_table

ROOT = Path(__file__).resolve().parents[2]


def test_rules_prints_every_rule_as_an_aligned_table(capsys, fake_ndk):
    assert cli.main(["rules"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["id", "side", "severity", "section", "summary"]
    rules = fake_ndk.rules()
    assert len(lines) == 1 + len(rules)
    for line, rule in zip(lines[1:], rules):
        assert line.split()[:4] == [rule.id, rule.side, rule.severity, rule.section]
        assert line.endswith(rule.summary)
    # Summaries start in one column.
    assert len({line.index(rule.summary) for line, rule in zip(lines[1:], rules)}) == 1


def test_rules_markdown_is_the_intro_then_one_row_per_rule(capsys, fake_ndk):
    assert cli.main(["rules", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out == rules_markdown(fake_ndk.rules())
    head, table = out.split("## Rules\n\n")
    assert head.startswith("# The validation layer\n")
    for needle in ["validate=True", "--ndk-no-validate", "validate_timeout_ms", "expect_violation",
                   "adapter.violations()", "Warning never fails", REGENERATE]:
        assert needle in head, needle
    rows = table.splitlines()
    assert rows[:2] == ["| ID | side | severity | digest section | rule |", "|---|---|---|---|---|"]
    assert rows[2] == ("| `CREATE-COMPLETION-INLINE` | provider | error | 1.0 | A create that "
                       "returned anything but STATUS_PENDING never calls its completion. |")
    # A "|" in a summary is escaped, so each row keeps its five cells.
    assert rows[3].endswith('documents \\| "other" is allowed. |')
    assert len(rows) == 2 + len(fake_ndk.rules())


def test_rules_table_and_markdown_of_no_rules():
    assert rules_table([]).split() == ["id", "side", "severity", "section", "summary"]
    assert rules_markdown([]).endswith("|---|---|---|---|---|\n")


def _real_package_dir():
    """The built ndk package (not tests/python's fake) on the PYTHONPATH CTest sets, or None."""
    for entry in filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)):
        if (Path(entry) / "ndk" / "__init__.py").is_file() and "fake_ndk" not in entry:
            return entry
    return None


def test_committed_docs_validation_md_is_the_generators_output():
    path = _real_package_dir()
    if path is None:
        pytest.skip("needs the built ndk package to generate the page: run with "
                    "PYTHONPATH=build/python (CTest's python_package test does)")
    env = dict(os.environ, PYTHONPATH=path)
    generated = subprocess.run([sys.executable, "-m", "ndk", "rules", "--markdown"], env=env,
                               cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert generated.returncode == 0, generated.stderr
    committed = (ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
    assert committed == generated.stdout, (
        "docs/validation.md differs from the validation layer's rule table: regenerate it with\n"
        f"    {REGENERATE}\n(after building), and commit the result")
