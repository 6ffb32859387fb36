"""The scenario counts the docs state agree with the collected suite.

The docs do not copy the suite's size (it changes with every scenario added; docs/providers.md
and docs/scenarios.md say where to read it instead).  This test keeps it that way: any "N
scenarios" in the README or docs/ that counts the whole suite must be the count pytest
collects now.  A count of more than half the suite is taken as a count of the whole suite (the
docs' counts of a part, such as one module's, are far smaller), so an exact figure typed
into a page fails here the day the suite grows, instead of going stale unseen.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COUNT = re.compile(r"\b(\d[\d,]*) scenarios\b")


def suite_size() -> int:
    """The scenarios pytest collects against the default provider (soft)."""
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                          "-p", "no:cacheprovider", str(ROOT / "scenarios")],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return sum(1 for line in run.stdout.splitlines() if "::" in line)


def suite_counts(text: str, size: int) -> list[int]:
    """The counts in ``text`` that count the whole suite (above half of ``size``)."""
    return [n for n in (int(m.group(1).replace(",", "")) for m in COUNT.finditer(text))
            if n > size // 2]


def test_whole_suite_counts_are_told_from_counts_of_a_part():
    text = "the 15 scenarios of pairs; all 673 scenarios; 1,346 scenarios on two providers"
    assert suite_counts(text, 673) == [673, 1346]


def test_every_count_of_the_suite_in_the_docs_is_the_collected_count():
    size = suite_size()
    assert size > 0
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    stale = {page.relative_to(ROOT).as_posix(): counts for page in pages
             if (counts := [n for n in suite_counts(page.read_text(encoding="utf-8"), size)
                            if n != size])}
    assert not stale, (f"counts of the suite that are not its {size} scenarios (write where "
                       f"to read the count instead of copying it): {stale}")
