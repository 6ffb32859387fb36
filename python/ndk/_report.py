"""Text summary of a conformance run: pure functions over :class:`Record` lists.

Kept apart from the pytest plumbing in :mod:`ndk.conformance` so that every line of the
summary can be tested on synthetic records, without running pytest.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ._skips import KINDS, UNCLASSIFIED, XFAIL, kind_of

UNMARKED = "(unmarked)"  # row for scenarios without a rule marker
COLLECTION = "(collection)"  # row for modules that failed to import or skipped as a whole
ANY_PROVIDER = "(any)"  # column for tests that do not run per provider
FAILING = frozenset({"failed", "error"})
# A scenario whose expectation is a reference choice (docs/semantics.md: NDK is silent) and
# whose provider chose otherwise: counted apart from failures, a failure only with --strict.
DIFFERS = "differs"
REQUIRED = "required"  # the conformance levels: NDK requires the expectation ...
REFERENCE = "reference choice"  # ... or it is the reference provider's choice
# The name of the user_properties entries (and JUnit testcase properties) the pytest plugin
# adds for each violation the validation layer recorded during a test.
VIOLATION_PROPERTY = "ndk_violation"
# The user_properties entry the plugin's ``pair`` fixture adds: where the pair's passive side
# (its peer) ran, as --ndk-peer spells it (local, popen, ssh=HOST, netns=NAME).
PEER_PROPERTY = "ndk_peer"
# Beside it, when the pair's passive side is another provider than the test's
# (--ndk-peer-provider): that provider.
PEER_PROVIDER_PROPERTY = "ndk_peer_provider"
# The action of the expectations entry that applied to a test (ndk.expectations: skip, xfail,
# differs), which the plugin adds to its user_properties.
EXPECTATION_PROPERTY = "ndk_expectation"
EXPECTED_TO_FAIL = ("xfail", "differs")  # the actions whose scenario runs, expected to fail
# The user_properties entry the plugin adds when a test failed on what NDK states inside a
# reference-choice scenario (ndk.scenario.stated): a failure, never a difference.
STATED_PROPERTY = "ndk_stated"


def failed_on_stated(report: Any) -> bool:
    """The phase report is of a failure of what NDK states (ndk.scenario.stated)."""
    return any(name == STATED_PROPERTY for name, _ in getattr(report, "user_properties", ()))


def failure_is_difference(reference: bool, strict: bool, stated: bool) -> bool:
    """Whether a failed test counts as a difference: a reference-choice scenario whose provider
    chose otherwise where NDK is silent -- unless the run is --strict, or what failed was what
    NDK states (``stated``: failed_on_stated of one of its reports)."""
    return reference and not strict and not stated
# A test that did not end on its own: the plugin (ndk._isolation) sets the report attribute
# FATE_ATTR to CRASHED (its process died: a signal, an abort) or TIMEOUT (it ran past
# pytest-timeout's --timeout), and DETAIL_ATTR to one line naming the signal or the time limit
# and the last NDK call.  Such a test's outcome is "failed"; the report counts them apart.
FATE_ATTR = "ndk_fate"
DETAIL_ATTR = "ndk_fate_detail"
CRASHED = "crashed"
TIMEOUT = "timeout"
# Set (True) on the report xdist makes for a test whose worker died: no teardown report follows.
DIED_ATTR = "ndk_worker_died"
FATE_LABELS = {CRASHED: "CRASH", TIMEOUT: "TIMEOUT"}  # matrix cell / failure line


@dataclass(frozen=True)
class ViolationRecord:
    """One violation the validation layer recorded during a test, as the pytest plugin keeps it
    in the test report's ``user_properties`` (its str() is what JUnit XML shows)."""

    rule: str
    object: str
    call: str
    message: str
    section: str
    side: str  # "provider" | "consumer"
    severity: str  # "error" | "warning"
    provider: str | None = None  # the adapter's provider
    expected: bool = False  # declared by @pytest.mark.expect_violation

    def __str__(self) -> str:
        expected = ", expected" if self.expected else ""
        return (f"{self.rule} ({self.side} {self.severity}{expected}, digest {self.section}) "
                f"{self.object} {self.call}: {self.message}")


@dataclass(frozen=True)
class Record:
    """The result of one test (one scenario on one provider)."""

    nodeid: str
    rule: str | None
    provider: str | None
    outcome: str  # "passed" | "failed" | "skipped" | "error" | "differs"
    message: str | None  # skip reason or short failure message
    duration: float  # seconds, setup + call + teardown
    violations: tuple[ViolationRecord, ...] = ()  # what the validation layer recorded
    fate: str | None = None  # CRASHED or TIMEOUT for a failure that is one, else None
    reference: str | None = None  # the docs/semantics.md ID of a reference-choice scenario
    peer: str | None = None  # where its pair's peer ran (PEER_PROPERTY), None without a pair
    peer_provider: str | None = None  # its peer's provider, if another (PEER_PROVIDER_PROPERTY)
    # The action of the expectations entry that applied (EXPECTATION_PROPERTY), or None.
    expectation: str | None = None


def is_xpass(record: Record) -> bool:
    """An expected failure (or difference) that passed: its expectations entry is stale."""
    return record.outcome == "passed" and record.expectation in EXPECTED_TO_FAIL


def level_of(record: Record) -> str:
    """The record's conformance level: REQUIRED or REFERENCE."""
    return REFERENCE if record.reference is not None else REQUIRED


def state_of(record: Record) -> str:
    """The record's outcome, with a crash or a timeout told apart from a plain failure:
    "passed", "skipped", "failed", "error", "crashed" or "timeout"."""
    return record.fate if record.fate in FATE_LABELS else record.outcome


def rule_label(record: Record) -> str:
    """The matrix row a record belongs to."""
    return record.rule if record.rule is not None else UNMARKED


def provider_label(record: Record) -> str:
    """The matrix column a record belongs to."""
    return record.provider if record.provider is not None else ANY_PROVIDER


def family_of(rule: str) -> str:
    """The rule family: the part of the ID before the first '-' ("CQ" for "CQ-CREATE-DEPTH")."""
    return rule.split("-", 1)[0]


def rule_sort_key(rule: str) -> tuple[int, str, str]:
    """Sort by family, then ID; pseudo rows such as "(unmarked)" go last."""
    return (1 if rule.startswith("(") else 0, family_of(rule), rule)


def columns(records: Iterable[Record], providers: Sequence[str]) -> list[str]:
    """The requested providers in order, then any other column the records use."""
    cols = list(dict.fromkeys(providers))
    for record in records:
        label = provider_label(record)
        if label not in cols:
            cols.append(label)
    return cols


def cell(outcomes: Iterable[str]) -> str:
    """Summarise the outcomes of one rule's scenarios on one provider.

    ``CRASH`` if any crashed, else ``TIMEOUT`` if any timed out (outcomes as :func:`state_of`
    gives them), else ``FAIL`` if any failed or errored, ``DIFF`` if any differs from a
    reference choice, ``pass`` if all passed, ``skip`` if all skipped, ``pass*`` if some passed
    and the rest skipped, ``-`` if there were none.
    """
    seen = set(outcomes)
    if not seen:
        return "-"
    for fate, label in FATE_LABELS.items():
        if fate in seen:
            return label
    if seen & FAILING:
        return "FAIL"
    if DIFFERS in seen:
        return "DIFF"
    if seen == {"passed"}:
        return "pass"
    if seen == {"skipped"}:
        return "skip"
    return "pass*"


def matrix(records: Sequence[Record], providers: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """Return (column providers, rows); each row is [rule, cell per provider]."""
    cols = columns(records, providers)
    outcomes: dict[tuple[str, str], list[str]] = {}
    for record in records:
        outcomes.setdefault((rule_label(record), provider_label(record)), []).append(state_of(record))
    rules = sorted({rule_label(record) for record in records}, key=rule_sort_key)
    rows = [[rule] + [cell(outcomes.get((rule, col), ())) for col in cols] for rule in rules]
    return cols, rows


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "") -> str:
    """Left-aligned columns separated by two spaces, trailing spaces stripped."""
    widths = [len(title) for title in header]
    for row in rows:
        widths = [max(width, len(text)) for width, text in zip(widths, row)]
    lines = []
    for row in [list(header), *rows]:
        line = "  ".join(text.ljust(width) for text, width in zip(row, widths))
        lines.append((indent + line).rstrip())
    return "\n".join(lines)


def format_matrix(records: Sequence[Record], providers: Sequence[str]) -> str:
    """The rules x providers matrix."""
    cols, rows = matrix(records, providers)
    return format_table(["rule", *cols], rows)


def family_counts(records: Iterable[Record]) -> dict[str, dict[str, Counter]]:
    """family -> provider column -> Counter of "passed"/"failed"/"skipped" (errors count as
    failed), "crashed"/"timeout" for the failures that were (not counted as failed), and
    "differs" for reference choices a provider made otherwise."""
    counts: dict[str, dict[str, Counter]] = {}
    for record in records:
        family = family_of(rule_label(record))
        outcome = "failed" if record.outcome in FAILING else record.outcome
        outcome = record.fate if outcome == "failed" and record.fate in FATE_LABELS else outcome
        counts.setdefault(family, {}).setdefault(provider_label(record), Counter())[outcome] += 1
    return counts


def has_fates(records: Iterable[Record]) -> bool:
    """Some test crashed or timed out (the counts then show those two as well)."""
    return any(r.fate in FATE_LABELS for r in records)


def has_differences(records: Iterable[Record]) -> bool:
    """Some reference-choice scenario differed (the counts then show those as well)."""
    return any(r.outcome == DIFFERS for r in records)


def count_cell(c: Counter, fates: bool, differences: bool = False) -> str:
    """A family's counts on one provider: passed/failed/skipped, then /crashed/timed out and
    /differing when the run had any."""
    text = f"{c['passed']}/{c['failed']}/{c['skipped']}"
    if fates:
        text += f"/{c[CRASHED]}/{c[TIMEOUT]}"
    return text + f"/{c[DIFFERS]}" if differences else text


def family_counts_title(records: Sequence[Record]) -> str:
    title = ("passed/failed/skipped/crashed/timed out" if has_fates(records)
             else "passed/failed/skipped")
    return title + "/differing" if has_differences(records) else title


def format_family_counts(records: Sequence[Record], providers: Sequence[str]) -> str:
    """Per rule family and provider: scenarios passed/failed/skipped (and crashed/timed out,
    in a run that had any)."""
    cols = columns(records, providers)
    counts = family_counts(records)
    fates, differences = has_fates(records), has_differences(records)
    rows = []
    for family in sorted(counts, key=rule_sort_key):
        row = [family]
        for col in cols:
            c = counts[family].get(col)
            row.append(count_cell(c, fates, differences) if c else "-")
        rows.append(row)
    title = f"scenarios per family ({family_counts_title(records)}):"
    return title + "\n" + format_table(["family", *cols], rows, indent="  ")


def skip_reasons(records: Iterable[Record]) -> list[tuple[str, int]]:
    """(reason, count) for skipped records, most frequent first, then alphabetically."""
    counts = Counter(r.message or "(no reason given)" for r in records if r.outcome == "skipped")
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def format_skip_reasons(records: Sequence[Record]) -> str:
    """Skip reasons grouped with their counts; empty string when nothing was skipped."""
    reasons = skip_reasons(records)
    if not reasons:
        return ""
    width = len(str(reasons[0][1]))
    lines = [f"  {count:>{width}}  {reason}" for reason, count in reasons]
    return "skip reasons:\n" + "\n".join(lines)


SKIP_KINDS = (*KINDS, XFAIL, UNCLASSIFIED)  # the order the counts are shown in


def skip_kind_counts(records: Iterable[Record],
                     providers: Sequence[str] = ()) -> dict[str, Counter]:
    """Per provider column: the skipped records counted by their kind (ndk._skips), an
    expected failure as XFAIL; only the columns that skipped something."""
    records = list(records)
    counts: dict[str, Counter] = {}
    for record in records:
        if record.outcome == "skipped":
            counts.setdefault(provider_label(record), Counter())[kind_of(record.message)] += 1
    order = columns(records, providers)
    return {col: counts[col] for col in order if col in counts}


def format_skip_kinds(records: Sequence[Record], providers: Sequence[str]) -> str:
    """The skips per provider by kind: the adapter lacks a capability, an expectations entry,
    the provider lacks a test knob the scenario sets, the run's options, the host; expected
    failures beside them.  Empty when nothing was skipped."""
    counts = skip_kind_counts(records, providers)
    if not counts:
        return ""
    lines = [f"  {col}: " + ", ".join(f"{count[kind]} {kind}" for kind in SKIP_KINDS
                                      if count[kind])
             for col, count in counts.items()]
    return "skipped, by kind:\n" + "\n".join(lines)


def format_xpasses(records: Sequence[Record]) -> str:
    """One line per scenario an expectations entry expected to fail (or to differ) and that
    passed, by rule and provider, with the entry; empty when none."""
    stale = [r for r in records if is_xpass(r)]
    if not stale:
        return ""
    lines = [f"  XPASS  {rule_label(r)} on {provider_label(r)}: {r.message or ''}".rstrip()
             for r in stale]
    return ("expected to fail, passed (XPASS: the expectations entry is stale, remove it):\n"
            + "\n".join(lines))


def format_failures(records: Sequence[Record]) -> str:
    """One line per failed or errored test with its short message; empty when none."""
    failing = [r for r in records if r.outcome in FAILING]
    if not failing:
        return ""
    labels = [FATE_LABELS.get(r.fate or "", r.outcome.upper()) for r in failing]
    width = max(5, *(len(label) for label in labels)) if has_fates(failing) else 5
    lines = [f"  {label:{width}}  {r.nodeid}: {r.message or ''}".rstrip()
             for label, r in zip(labels, failing)]
    return "failures:\n" + "\n".join(lines)


def format_differences(records: Sequence[Record]) -> str:
    """One line per scenario that differs from a reference choice, with the docs/semantics.md
    entry it relies on; empty when none."""
    differing = [r for r in records if r.outcome == DIFFERS]
    if not differing:
        return ""
    lines = [f"  DIFFERS  {r.nodeid} [{r.reference}]: {r.message or ''}".rstrip()
             for r in differing]
    return ("differs (reference choice: NDK is silent, the provider chose otherwise; not a "
            "failure without --strict):\n" + "\n".join(lines))


def level_counts(records: Sequence[Record],
                 providers: Sequence[str]) -> list[tuple[str, int, dict[str, Counter]]]:
    """Per conformance level (REQUIRED, then REFERENCE): how many rules it has, and per
    provider column a Counter of its scenarios' outcomes ("passed", "failed" with errors,
    "differs", "skipped"); empty when no scenario has a rule."""
    scenario_records = [r for r in records if r.rule not in (None, COLLECTION)]
    if not scenario_records:
        return []
    levels = []
    for level in (REQUIRED, REFERENCE):
        mine = [r for r in scenario_records if level_of(r) == level]
        per_column = {col: Counter("failed" if r.outcome in FAILING else r.outcome
                                   for r in mine if provider_label(r) == col)
                      for col in columns(records, providers)}
        levels.append((level, len({r.rule for r in mine}), per_column))
    return levels


def level_cell(count: Counter) -> str:
    """A level's scenarios on one provider: passed/failed/differing/skipped."""
    return f"{count['passed']}/{count['failed']}/{count[DIFFERS]}/{count['skipped']}"


def format_levels(records: Sequence[Record], providers: Sequence[str]) -> str:
    """The conformance levels: per level and provider column, scenarios passed, failed,
    differing and skipped; then each reference-choice rule with the docs/semantics.md entry
    it relies on (every other rule is required)."""
    cols = columns(records, providers)
    levels = level_counts(records, providers)
    if not levels:
        return ""
    scenario_records = [r for r in records if r.rule not in (None, COLLECTION)]
    rows = [[level, str(rules), *(level_cell(per_column[col]) for col in cols)]
            for level, rules, per_column in levels]
    table = format_table(["level", "rules", *cols], rows, indent="  ")
    choices = sorted({(r.rule, r.reference) for r in scenario_records if r.reference},
                     key=lambda pair: rule_sort_key(pair[0] or ""))
    lines = ["conformance levels (scenarios passed/failed/differing/skipped):", table]
    if choices:
        lines.append("  reference-choice rules (docs/semantics.md entry):")
        lines += [f"    {rule}  [{reference}]" for rule, reference in choices]
    return "\n".join(lines)


def unmarked(records: Iterable[Record]) -> list[str]:
    """Node IDs of scenarios that have no rule marker."""
    return [r.nodeid for r in records if r.rule is None]


def format_unmarked_warning(records: Sequence[Record], limit: int = 5) -> str:
    """A warning naming the scenarios without a rule marker; empty string when there are none."""
    nodeids = unmarked(records)
    if not nodeids:
        return ""
    shown = ", ".join(nodeids[:limit])
    more = f" and {len(nodeids) - limit} more" if len(nodeids) > limit else ""
    return f"warning: {len(nodeids)} scenario(s) without a rule marker: {shown}{more}"


def totals(records: Iterable[Record]) -> Counter:
    """Counter of outcomes over all records, crashes and timeouts apart (:func:`state_of`)."""
    return Counter(state_of(r) for r in records)


def _fate_parts(count: Counter) -> list[str]:
    parts = []
    if count[CRASHED]:
        parts.append(f"{count[CRASHED]} crashed")
    if count[TIMEOUT]:
        parts.append(f"{count[TIMEOUT]} timed out")
    return parts


def format_provider_totals(records: Sequence[Record], providers: Sequence[str]) -> str:
    """Scenarios passed/failed/skipped (crashed and timed out apart from failed, when any) and
    the time their test phases took (setup, call and teardown, summed) per provider column;
    empty with a single column and no crash or timeout (the totals line says it all)."""
    cols = columns(records, providers)
    if len(cols) < 2 and not has_fates(records):
        return ""
    lines = ["per provider:"]
    for col in cols:
        mine = [r for r in records if provider_label(r) == col]
        count = Counter(state_of(r) for r in mine)
        failed = count["failed"] + count["error"]
        parts = [f"{count['passed']} passed", f"{failed} failed", *_fate_parts(count),
                 f"{count['skipped']} skipped"]
        if count[DIFFERS]:
            parts.insert(-1, f"{count[DIFFERS]} differ (reference choice)")
        xpassed = sum(1 for r in mine if is_xpass(r))
        if xpassed:
            parts[0] += f" ({xpassed} XPASS)"
        lines.append(f"  {col}: {', '.join(parts)}, test phases "
                     f"{format_seconds(sum(r.duration for r in mine))}")
    return "\n".join(lines)


def format_seconds(seconds: float) -> str:
    """"36.2 s", or two decimals under a second ("0.04 s") so a short run does not read 0.0."""
    return f"{seconds:.1f} s" if seconds >= 0.95 else f"{seconds:.2f} s"


def format_totals(records: Sequence[Record], wall_seconds: float) -> str:
    """E.g. "conformance: 123 passed, 0 failed, 4 skipped in 3.9 s (test phases 3.2 s)"; with
    "1 crashed, 1 timed out" after "failed" when a test did (not counted as failed).

    The first time is the whole run as the runner measured it (collection, session fixtures,
    provider set-up and all); the second the sum of the tests' setup, call and teardown phases
    as pytest timed them (0 for a run whose scenarios all skip).
    """
    count = totals(records)
    parts = [f"{count['passed']} passed", f"{count['failed']} failed", *_fate_parts(count),
             f"{count['skipped']} skipped"]
    if count[DIFFERS]:
        parts.insert(-1, f"{count[DIFFERS]} differ (reference choice)")
    xpassed = sum(1 for r in records if is_xpass(r))
    if xpassed:
        parts[0] += f" ({xpassed} XPASS)"
    if count["error"]:
        parts.append(f"{count['error']} error" + ("s" if count["error"] > 1 else ""))
    test_seconds = sum(r.duration for r in records)
    return (f"conformance: {', '.join(parts)} in {format_seconds(wall_seconds)} "
            f"(test phases {format_seconds(test_seconds)})")


@dataclass
class ViolationTally:
    """The violations of one rule on one provider column, over a run."""

    rule: str
    provider: str
    side: str
    section: str
    errors: int = 0  # error-severity violations no scenario declared
    warnings: int = 0
    expected: int = 0  # declared with @pytest.mark.expect_violation
    scenarios: list[str] = field(default_factory=list)  # node IDs, in report order, each once


def violation_tallies(records: Iterable[Record], providers: Sequence[str] = ()) -> list[ViolationTally]:
    """Per provider column (in matrix order) and rule (in rule order): the counts of errors,
    warnings and expected violations, and which scenarios reported them."""
    records = list(records)
    tallies: dict[tuple[str, str], ViolationTally] = {}
    for record in records:
        column = provider_label(record)
        for violation in record.violations:
            key = (column, violation.rule)
            tally = tallies.get(key)
            if tally is None:
                tally = tallies[key] = ViolationTally(
                    violation.rule, column, violation.side, violation.section)
            if violation.expected:
                tally.expected += 1
            elif violation.severity == "warning":
                tally.warnings += 1
            else:
                tally.errors += 1
            if record.nodeid not in tally.scenarios:
                tally.scenarios.append(record.nodeid)
    order = {column: i for i, column in enumerate(columns(records, providers))}
    return sorted(tallies.values(),
                  key=lambda t: (order.get(t.provider, len(order)), rule_sort_key(t.rule)))


def _listing(names: Sequence[str], limit: int) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def format_violations(records: Sequence[Record], providers: Sequence[str], limit: int = 3) -> str:
    """The validation layer's violations per provider and rule; empty when there were none.

    errors: error-severity violations no scenario declared (each failed its scenario);
    warnings: never a failure; expected: declared with @pytest.mark.expect_violation.
    """
    tallies = violation_tallies(records, providers)
    if not tallies:
        return ""
    rows = [[t.provider, t.rule, t.side, str(t.errors), str(t.warnings), str(t.expected),
             _listing(t.scenarios, limit)] for t in tallies]
    header = ["provider", "rule", "side", "errors", "warnings", "expected", "scenarios"]
    title = "validation layer violations per provider and rule:"
    return title + "\n" + format_table(header, rows, indent="  ")


def format_peers(records: Sequence[Record]) -> str:
    """Where the pair scenarios' peers ran (--ndk-peer), with the outcomes there; empty when
    no scenario used the pair fixture.  A peer of another provider than its scenario's is
    counted apart, as the pair: "local, soft:tcp -> verbs:siw0" (active -> passive)."""
    places: dict[str, Counter] = {}
    for record in records:
        if record.peer is not None:
            place = record.peer
            if record.peer_provider is not None:
                place += f", {provider_label(record)} -> {record.peer_provider}"
            places.setdefault(place, Counter())[record.outcome] += 1
    lines = [f"  {place}: " + ", ".join(f"{count[outcome]} {outcome}" for outcome in
                                        ("passed", "failed", "error", DIFFERS, "skipped")
                                        if count[outcome])
             for place, count in sorted(places.items())]
    return "pair scenarios, where their peer ran:\n" + "\n".join(lines) if lines else ""


def format_report(records: Sequence[Record], providers: Sequence[str], wall_seconds: float) -> str:
    """The whole summary: matrix, family counts, skip reasons, failures, validation layer
    violations, warnings, totals."""
    sections = [
        format_matrix(records, providers),
        format_family_counts(records, providers),
        format_skip_reasons(records),
        format_skip_kinds(records, providers),
        format_failures(records),
        format_xpasses(records),
        format_differences(records),
        format_violations(records, providers),
        format_levels(records, providers),
        format_unmarked_warning(records),
        format_provider_totals(records, providers),
        format_peers(records),
        format_totals(records, wall_seconds),
    ]
    return "\n\n".join(section for section in sections if section)
