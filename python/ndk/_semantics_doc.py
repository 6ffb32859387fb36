"""The entries of docs/semantics.md, by ID: what a reference-choice scenario relies on.

A reference scenario (``@pytest.mark.reference("ID")``) cites an entry of docs/semantics.md: a
row of one of its tables, whose first column is the ID (an ID may have several rows), or a
paragraph that starts with ``ID:`` (the verbs provider's notes).  The HTML report shows each
cited entry beside its rules, and a test checks that every cited ID has one.

The file sits beside the scenarios: ``docs/semantics.md`` in the source tree, and
``share/ndk-harness/docs/semantics.md`` next to ``share/ndk-harness/scenarios`` once installed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_ROW = re.compile(r"^\| ([A-Z][A-Z0-9-]+) \|(.*)\|\s*$")
_PARAGRAPH = re.compile(r"^([A-Z][A-Z0-9-]+): (.*)$")


def semantics_path(scenarios_dir: str | os.PathLike) -> Path:
    """Where docs/semantics.md is for a scenarios directory (it may not exist)."""
    return Path(scenarios_dir).resolve().parent / "docs" / "semantics.md"


def entries(text: str) -> dict[str, list[str]]:
    """ID -> the entry's text, one item per table row (its cells joined by " | ") or one
    paragraph (its lines joined), in the file's order."""
    found: dict[str, list[str]] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        row, paragraph = _ROW.match(lines[i]), _PARAGRAPH.match(lines[i])
        header = i + 1 < len(lines) and lines[i + 1].startswith("|---")
        if row and not header:
            cells = [cell.strip() for cell in row.group(2).split(" | ")]
            found.setdefault(row.group(1), []).append(" | ".join(cells))
        elif paragraph:
            body = [paragraph.group(2)]
            while i + 1 < len(lines) and lines[i + 1].strip():
                i += 1
                body.append(lines[i].strip())
            found.setdefault(paragraph.group(1), []).append(" ".join(body))
        i += 1
    return found
