"""The conformance run as JSON (``ndk conformance --json FILE``), and a run compared with an
earlier one (``--baseline FILE``): the schema is docs/report-json.md.

Pure functions over :class:`~ndk._report.Record` lists and over the loaded JSON, like
:mod:`ndk._report`, so that every line can be tested without running pytest.
"""

from __future__ import annotations

import datetime
import json
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ._report import (CRASHED, DIFFERS, FAILING, TIMEOUT, Record, cell, columns, level_of,
                      provider_label, rule_label, rule_sort_key, skip_kind_counts, state_of)
from ._skips import kind_of

SCHEMA = "ndk-harness/conformance-report/1"
# The states of a scenario that count as failing it: a plain failure or error, a crash, a
# timeout (ndk._report.state_of gives them apart).
FAILING_STATES = frozenset(FAILING | {CRASHED, TIMEOUT})


class BaselineError(Exception):
    """A --baseline file that is not a report of this schema."""


# --- writing -----------------------------------------------------------------------------------


def scenario_key(nodeid: str) -> str:
    """A scenario's name without the folder it was collected from (``test_cq.py::test_x[soft]``):
    the same scenario run from another folder or rootdir compares equal."""
    path, sep, rest = nodeid.partition("::")
    return path.rsplit("/", 1)[-1] + sep + rest


def _scenario(record: Record) -> dict[str, Any]:
    return {
        "scenario": scenario_key(record.nodeid),
        "nodeid": record.nodeid,
        "rule": rule_label(record),
        "provider": provider_label(record),
        "outcome": state_of(record),
        "level": level_of(record),
        "reference": record.reference,
        "duration": round(record.duration, 6),
        "message": record.message,
        "skip_kind": kind_of(record.message) if record.outcome == "skipped" else None,
        "violations": [asdict(v) for v in record.violations],
        "peer": record.peer,
        "peer_provider": record.peer_provider,
    }


def _rules(records: Sequence[Record], providers: Sequence[str]) -> list[dict[str, Any]]:
    """One entry per rule and provider column: the matrix cell, the scenarios' outcomes
    counted, their time summed, the first failing (else skipping) message, the violations."""
    groups: dict[tuple[str, str], list[Record]] = {}
    for record in records:
        groups.setdefault((rule_label(record), provider_label(record)), []).append(record)
    order = {column: index for index, column in enumerate(columns(records, providers))}
    entries = []
    for (rule, provider), mine in sorted(groups.items(), key=lambda item: (
            rule_sort_key(item[0][0]), order.get(item[0][1], len(order)))):
        states = [state_of(r) for r in mine]
        telling = ([r for r in mine if state_of(r) in FAILING_STATES | {DIFFERS}]
                   or [r for r in mine if r.outcome == "skipped"])
        entries.append({
            "rule": rule,
            "provider": provider,
            "outcome": cell(states),
            "scenarios": dict(sorted(Counter(states).items())),
            "duration": round(sum(r.duration for r in mine), 6),
            "message": telling[0].message if telling else None,
            "violations": [asdict(v) for r in mine for v in r.violations],
        })
    return entries


def report(records: Sequence[Record], providers: Sequence[str], wall_seconds: float,
           version: str | None = None) -> dict[str, Any]:
    """The JSON document of a run (docs/report-json.md)."""
    return {
        "schema": SCHEMA,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "ndk_harness": version,
        "providers": columns(records, providers),
        "wall_seconds": round(wall_seconds, 3),
        "totals": dict(sorted(Counter(state_of(r) for r in records).items())),
        "skipped_by_kind": {column: dict(sorted(counts.items())) for column, counts
                            in skip_kind_counts(records, providers).items()},
        "rules": _rules(records, providers),
        "scenarios": [_scenario(r) for r in records],
    }


def write(path: str | os.PathLike, document: Mapping[str, Any]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")


# --- comparing ---------------------------------------------------------------------------------


def load(path: str | os.PathLike) -> dict[str, str]:
    """A --baseline file's scenarios: scenario key (with its provider) -> outcome."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BaselineError(f"cannot read {path}: {exc}") from None
    schema = document.get("schema") if isinstance(document, dict) else None
    if schema != SCHEMA:
        raise BaselineError(f"{path} is not an ndk conformance --json report of schema {SCHEMA} "
                            f"(its schema: {schema!r})")
    try:
        return {_key(s["scenario"], s["provider"]): str(s["outcome"])
                for s in document["scenarios"]}
    except (KeyError, TypeError) as exc:
        raise BaselineError(f"{path}: a scenario entry lacks {exc}") from None


def _key(scenario: str, provider: str) -> str:
    return f"{scenario} ({provider})"


def _kind(outcome: str | None) -> str | None:
    if outcome in FAILING_STATES:
        return "failing"
    return outcome  # "passed", "skipped", "differs", or None (not in the run)


@dataclass
class Changes:
    """What changed between a baseline and this run, scenario by scenario (each entry is
    ``"test_cq.py::test_x[soft] (soft): passed -> failed"``)."""

    new_failures: list[str] = field(default_factory=list)  # failing now, not before
    new_differences: list[str] = field(default_factory=list)  # differs now, not before
    new_passes: list[str] = field(default_factory=list)  # passing now, not before
    newly_skipped: list[str] = field(default_factory=list)  # skipped now, not before
    not_run: int = 0  # in the baseline, not in this run (another selection)
    compared: int = 0  # in both

    @property
    def regressions(self) -> list[str]:
        """The changes that fail ``--fail-on-regression``: the new failures."""
        return self.new_failures

    @property
    def changed(self) -> bool:
        return bool(self.new_failures or self.new_differences or self.new_passes
                    or self.newly_skipped)


def compare(baseline: Mapping[str, str], records: Iterable[Record]) -> Changes:
    """This run's scenarios against the baseline's (:func:`load`)."""
    changes = Changes()
    seen = set()
    for record in records:
        key = _key(scenario_key(record.nodeid), provider_label(record))
        seen.add(key)
        now, before = state_of(record), baseline.get(key)
        if before is not None:
            changes.compared += 1
        if _kind(now) == _kind(before):
            continue
        line = f"{key}: {before or 'not in the baseline'} -> {now}"
        kind = _kind(now)
        if kind == "failing":
            changes.new_failures.append(line)
        elif kind == DIFFERS:
            changes.new_differences.append(line)
        elif kind == "passed":
            changes.new_passes.append(line)
        elif kind == "skipped":
            changes.newly_skipped.append(line)
    changes.not_run = len(set(baseline) - seen)
    return changes


def format_changes(changes: Changes, baseline: str) -> str:
    """The comparison's section of the report."""
    head = f"compared with the baseline {baseline} ({changes.compared} scenarios in both"
    head += f", {changes.not_run} of its scenarios not in this run)" if changes.not_run else ")"
    if not changes.changed:
        return head + ": no change"
    lines = [head + ":"]
    for title, entries in (("new failures", changes.new_failures),
                           ("new differences (reference choice)", changes.new_differences),
                           ("new passes", changes.new_passes),
                           ("newly skipped", changes.newly_skipped)):
        if entries:
            lines.append(f"  {title} ({len(entries)}):")
            lines += [f"    {entry}" for entry in entries]
    return "\n".join(lines)
