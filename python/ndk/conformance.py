"""The conformance runner behind ``ndk conformance``.

Runs the scenarios with pytest in this process, collects one :class:`~ndk._report.Record` per
test through :class:`ResultCollector` (a plain pytest plugin object), shows the run's progress
through :class:`~ndk._progress.ConformanceProgress` (another one), then prints the rules x
providers matrix and the summary from :mod:`ndk._report` (with the validation layer's
violations per provider and rule), adds those violations to the JUnit XML file, and writes the
HTML report of :mod:`ndk._html`.

The runner loads the ``ndk.testing`` plugin itself (``-p ndk.testing``), so a scenarios folder
without a conftest works.  pytest registers a plugin once per name: a conftest that also names
it (``pytest_plugins = ["ndk.testing"]``, as scenarios/conftest.py does) or the installed
package's ``pytest11`` entry point (named ``ndk.testing`` too) finds it already registered.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Mapping, Sequence, TextIO

import pytest

from . import _environment as environment
from . import _json_report as json_report
from ._progress import ConformanceProgress
from ._report import (COLLECTION, DETAIL_ATTR, DIFFERS, EXPECTATION_PROPERTY, FAILING,
                      failed_on_stated, failure_is_difference,
                      FATE_ATTR, FATE_LABELS, PEER_PROPERTY, PEER_PROVIDER_PROPERTY, REFERENCE,
                      SKIP_KINDS, VIOLATION_PROPERTY, Record, ViolationRecord, format_report,
                      is_xpass, level_counts, level_of, provider_label, skip_kind_counts,
                      violation_tallies)
from ._cache import user_cache_dir
from ._selection import Where, collected_where, selected_providers, where_of
from .expectations import ExpectationsError, load_all

SCENARIOS_ENV = "NDK_SCENARIOS"
PLUGIN = "ndk.testing"  # the pytest plugin the scenarios need (fixtures, markers, options)

# Rank of a test's outcome across its setup/call/teardown phases: the worst one is kept, and
# among failures the first (a failing call followed by a teardown error stays "failed").
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 2, DIFFERS: 2}
_MESSAGE_LIMIT = 200
MAX_WORKER_RESTARTS = 1000  # crashed workers xdist replaces in a run (-n) before it gives up
# The exit code for what the run cannot start with: a bad expectations file, a provider that
# cannot run here (ndk._environment).
ENVIRONMENT_ERROR = environment.EXIT_ENVIRONMENT


class ScenariosNotFound(Exception):
    """No scenarios directory could be located."""


# --- collecting results --------------------------------------------------------------------


def _first_line(text: str) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= _MESSAGE_LIMIT else line[: _MESSAGE_LIMIT - 3] + "..."


def _skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    if getattr(report, "wasxfail", None) is not None:
        return f"xfail: {report.wasxfail}" if report.wasxfail else "xfail"
    longrepr = report.longrepr
    # A skip's longrepr is (path, lineno, "Skipped: reason").
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text[len("Skipped: ") :] if text.startswith("Skipped: ") else text


def _failure_message(report: pytest.TestReport | pytest.CollectReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return _first_line(crash.message)
    # Plain-text reprs (collection errors) name the exception on their last "E   " line.
    text = str(report.longrepr)
    errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    return _first_line(errors[-1]) if errors else _first_line(text)


def _phase_outcome(report: pytest.TestReport) -> tuple[str, str | None]:
    if report.passed:
        return "passed", None
    if report.skipped:
        return "skipped", _skip_reason(report)
    return ("failed" if report.when == "call" else "error"), _failure_message(report)


class ResultCollector:
    """pytest plugin object recording one :class:`Record` per test.

    Pass an instance to ``pytest.main(args, plugins=[collector])``; afterwards ``records``
    holds the results in the order the tests were reported and ``providers`` the providers
    the run was asked for.
    """

    def __init__(self, strict: bool = False) -> None:
        # strict: a reference-choice scenario that fails is a failure, not a difference.
        self._strict = strict
        self._config: pytest.Config | None = None
        self._where: dict[str, Where] = {}  # nodeid -> (rule, provider, reference)
        self._results: dict[str, dict] = {}  # nodeid -> {rule, provider, outcome, message, duration}
        self._order: dict[str, int] = {}  # nodeid -> its place in the collection

    @property
    def providers(self) -> list[str]:
        """The providers selected with ``--ndk-provider`` (the default when none were)."""
        return selected_providers(self._config) if self._config is not None else []

    @property
    def records(self) -> list[Record]:
        """The results so far, one per test (or per module that failed to collect): those of
        modules first, then the tests in their collection order, which is the order they ran
        in a serial run and not under pytest-xdist (there the report is the same either way)."""
        ordered = sorted(enumerate(self._results.items()),
                         key=lambda entry: (self._order.get(entry[1][0], -1), entry[0]))
        return [Record(nodeid=nodeid, **fields) for _, (nodeid, fields) in ordered]

    @property
    def not_run(self) -> list[str]:
        """Node IDs collected but never reported: the run stopped early (``-x``, an interrupt,
        or xdist giving up after too many crashed workers)."""
        return [nodeid for nodeid in self._order if nodeid not in self._results]

    def pytest_configure(self, config: pytest.Config) -> None:
        self._config = config

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        # Reports carry only the node ID; remember what it stands for while the items exist.
        for item in items:
            self._where[item.nodeid] = where_of(item)
        self._order = {item.nodeid: index for index, item in enumerate(items)}

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: Sequence[str]) -> None:
        # Under pytest-xdist: every worker collects the same tests in the same order.
        if not self._order:
            self._order = {nodeid: index for index, nodeid in enumerate(ids)}

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            outcome, message = "error", _failure_message(report)
        elif report.skipped:  # e.g. pytest.skip(allow_module_level=True)
            outcome, message = "skipped", _skip_reason(report)
        else:
            return
        self._results[report.nodeid or "."] = dict(
            rule=COLLECTION, provider=None, outcome=outcome, message=message, duration=0.0
        )

    def _where_of(self, nodeid: str) -> Where:
        where = self._where.get(nodeid)
        if where is None and self._config is not None:  # under xdist: what the workers collected
            where = collected_where(self._config).get(nodeid)
        return where if where is not None else (None, None, None)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        rule, provider, reference = self._where_of(report.nodeid)
        result = self._results.setdefault(
            report.nodeid,
            dict(rule=rule, provider=provider, outcome="passed", message=None, duration=0.0,
                 violations=(), fate=None, reference=reference, peer=None,
                 peer_provider=None, expectation=None),
        )
        result["duration"] += report.duration
        # Each phase's report carries the item's user_properties so far; the plugin adds the
        # violations in the teardown phase, so the last report has them all.
        violations = tuple(value for name, value in report.user_properties
                           if name == VIOLATION_PROPERTY and isinstance(value, ViolationRecord))
        if violations:
            result["violations"] = violations
        peer = next((value for name, value in report.user_properties if name == PEER_PROPERTY),
                    None)
        if peer is not None:
            result["peer"] = str(peer)
        peer_provider = next((value for name, value in report.user_properties
                              if name == PEER_PROVIDER_PROPERTY), None)
        if peer_provider is not None:
            result["peer_provider"] = str(peer_provider)
        expectation = next((value for name, value in report.user_properties
                            if name == EXPECTATION_PROPERTY), None)
        if expectation is not None:
            result["expectation"] = str(expectation)
        outcome, message = _phase_outcome(report)
        if outcome == "failed" and failure_is_difference(reference is not None, self._strict,
                                                         failed_on_stated(report)):
            outcome = DIFFERS  # the provider chose otherwise where NDK is silent
        expected_failure = getattr(report, "wasxfail", None)
        if expected_failure is not None and expectation == DIFFERS and outcome == "skipped":
            # An expectations entry said this provider differs here: it did (--strict or not).
            outcome, message = DIFFERS, expected_failure
        elif expected_failure is not None and outcome == "passed":
            result["message"] = expected_failure  # an XPASS: the entry that expected otherwise
        fate = getattr(report, FATE_ATTR, None)
        if fate in FATE_LABELS and result["fate"] is None:
            # A crash (xdist's report for a worker that died) or a timeout: the scenario's
            # failure, whatever its phases said before; the message names what happened.
            result["outcome"], result["fate"] = "failed", fate
            result["message"] = _first_line(getattr(report, DETAIL_ATTR, None) or message or "")
        elif _RANK[outcome] > _RANK[result["outcome"]]:
            result["outcome"], result["message"] = outcome, message


# --- locating the scenarios ----------------------------------------------------------------


def _build_info(name: str) -> str | None:
    """``ndk._build_info.NAME`` (written by the build), or None without it."""
    try:
        build_info = importlib.import_module("ndk._build_info")
    except ModuleNotFoundError as exc:
        if exc.name != "ndk._build_info":
            raise
        return None
    return getattr(build_info, name, None)


def locate_scenarios_dir(explicit: str | None = None) -> Path:
    """Find the scenarios directory.

    In order: ``explicit``; the ``NDK_SCENARIOS`` environment variable;
    ``ndk._build_info.SCENARIOS_DIR`` (written by the build); ``scenarios/`` next to the
    ``python/`` source directory of this package. Raises :class:`ScenariosNotFound`.
    """
    for origin, candidate in (
        ("--scenarios", explicit),
        (SCENARIOS_ENV, os.environ.get(SCENARIOS_ENV)),
    ):
        if candidate:
            path = Path(candidate)
            if not path.is_dir():
                raise ScenariosNotFound(f"{origin}: {path} is not a directory")
            if not os.access(path, os.R_OK | os.X_OK):
                raise ScenariosNotFound(f"{origin}: {path} is not readable")
            return path
    built = _build_info("SCENARIOS_DIR")
    if built and Path(built).is_dir():
        return Path(built)
    source = Path(__file__).resolve().parent.parent.parent / "scenarios"
    if source.is_dir():
        return source
    raise ScenariosNotFound(
        "cannot find the scenarios directory: pass --scenarios DIR or set "
        f"{SCENARIOS_ENV} (looked for the build's ndk._build_info and for {source})"
    )


# --- running -------------------------------------------------------------------------------


def output_problem(path: str | os.PathLike) -> str | None:
    """Why a report cannot be written to ``path`` (--junit, --html), or None: checked before
    the run, not after it.  A missing directory is created, as the report's writer would."""
    target = Path(path)
    if target.is_dir():
        return f"{path} is a directory"
    existed = target.exists()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    if not existed:
        target.unlink()
    return None


def _verbose(args: Sequence[str]) -> bool:
    """pytest's -v / -vv / --verbose among ``args``: the user wants pytest's per-test lines."""
    return any(a == "--verbose" or (a.startswith("-v") and set(a[1:]) == {"v"}) for a in args)


def pytest_args(
    scenarios_dir: str | os.PathLike,
    providers: Sequence[str],
    junit: str | None = None,
    keyword: str | None = None,
    extra_args: Sequence[str] = (),
    workers: str | int | None = None,
    timeout: float | None = None,
    rules: Sequence[str] = (),
) -> list[str]:
    """The pytest command line for a conformance run (``-p ndk.testing``: see the module doc).

    Quiet (``-q``) unless ``extra_args`` ask for ``-v``; pytest's cache (``--lf``, ``--ff``) in
    the user's cache folder (:mod:`ndk._cache`), never beside the scenarios.  ``workers``:
    pytest-xdist's ``-n`` (a count or "auto"); ``timeout``: pytest-timeout's ``--timeout`` in
    seconds, method ``signal`` (the test fails and the run goes on); ``rules``: the plugin's
    ``--ndk-rule`` patterns."""
    args = [str(scenarios_dir)] + ([] if _verbose(extra_args) else ["-q"])
    args += ["-o", f"cache_dir={user_cache_dir()}", "-p", PLUGIN]
    for provider in providers:
        args += ["--ndk-provider", provider]
    for rule in rules:
        args += ["--ndk-rule", rule]
    if junit:
        args.append(f"--junitxml={junit}")
    if keyword:
        args += ["-k", keyword]
    if workers not in (None, 0, "0"):
        args += ["-n", str(workers)]
        if not any(a.startswith(("--max-worker-restart", "--maxworkerrestart")) for a in extra_args):
            # xdist stops replacing crashed workers after 4 per worker, and then leaves the
            # rest of the scenarios unrun: a provider that crashes often must still get a
            # whole report.
            args.append(f"--max-worker-restart={MAX_WORKER_RESTARTS}")
    if timeout:
        if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
            args += ["-p", "pytest_timeout"]  # its entry point is not loaded then: name it
        args += [f"--timeout={timeout:g}", "--timeout-method=signal"]
    return args + list(extra_args)


def missing_plugin(workers: str | int | None, timeout: float | None) -> str | None:
    """Why ``-n`` or ``--timeout`` cannot be honoured here (their pytest plugin is not
    installed), or None."""
    import importlib.util

    for wanted, module, package, option in ((workers not in (None, 0, "0"), "xdist",
                                             "python3-pytest-xdist", "-n"),
                                            (bool(timeout), "pytest_timeout",
                                             "python3-pytest-timeout", "--timeout")):
        if wanted and importlib.util.find_spec(module) is None:
            return f"{option} needs pytest's {module} plugin (Debian: apt-get install {package})"
    return None


def add_violations_to_junit(path: str | os.PathLike, records: Sequence[Record],
                            providers: Sequence[str]) -> None:
    """Add the validation layer's violations per provider and rule to a JUnit XML file as
    properties of its test suite: ``<property name="ndk-violations soft CQ-NOTIFY-TWICE"
    value="side=provider errors=1 warnings=0 expected=0 scenarios=..."/>``.

    Each test case already lists its own violations (pytest writes the plugin's
    ``ndk_violation`` user_properties as test case properties).  Crashes and timeouts per
    provider likewise: ``<property name="ndk-crashed soft" value="count=1 scenarios=..."/>``
    (``ndk-timeout`` for timeouts); their test cases are failures naming the signal or the
    time limit.  The scenarios that differ from a reference choice, per provider, as
    ``ndk-differs``: their test cases are failures in the XML (pytest's), not in the report;
    and the conformance levels as ``<property name="ndk-reference-choice RULE"
    value="SEMANTICS-ID"/>`` for each reference-choice rule (every other rule is required),
    with their counts per provider: ``<property name="ndk-level soft required"
    value="rules=281 passed=413 failed=0 differing=0 skipped=0"/>`` (and ``reference choice``).
    The skips per provider by kind (docs/expectations.md), ``<property name="ndk-skips loop"
    value="capability=66 expectation=125 knob=69 option=1"/>``, and the expected failures that
    passed, ``<property name="ndk-xpass soft" value="count=1 scenarios=..."/>``.
    """
    tallies = violation_tallies(records, providers)
    fates: dict[tuple[str, str], list[str]] = {}  # (provider column, fate) -> node IDs
    for record in records:
        if record.fate in FATE_LABELS:
            fates.setdefault((provider_label(record), record.fate), []).append(record.nodeid)
        elif record.outcome == DIFFERS:
            fates.setdefault((provider_label(record), DIFFERS), []).append(record.nodeid)
        elif is_xpass(record):
            fates.setdefault((provider_label(record), "xpass"), []).append(record.nodeid)
    skips = skip_kind_counts(records, providers)
    choices = {r.rule: r.reference for r in records if level_of(r) == REFERENCE}
    levels = level_counts(records, providers)
    if not tallies and not fates and not choices and not levels and not skips:
        return
    tree = ET.parse(path)
    root = tree.getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        return
    properties = suite.find("properties")
    if properties is None:
        properties = ET.Element("properties")
        suite.insert(0, properties)
    for t in tallies:
        ET.SubElement(properties, "property", name=f"ndk-violations {t.provider} {t.rule}",
                      value=f"side={t.side} errors={t.errors} warnings={t.warnings} "
                            f"expected={t.expected} scenarios={' '.join(t.scenarios)}")
    for (provider, fate), nodeids in fates.items():
        ET.SubElement(properties, "property", name=f"ndk-{fate} {provider}",
                      value=f"count={len(nodeids)} scenarios={' '.join(nodeids)}")
    for rule, reference in sorted((r, ref) for r, ref in choices.items() if r is not None):
        ET.SubElement(properties, "property", name=f"ndk-reference-choice {rule}",
                      value=str(reference))
    for level, rules, per_column in levels:
        for provider, count in per_column.items():
            ET.SubElement(properties, "property", name=f"ndk-level {provider} {level}",
                          value=f"rules={rules} passed={count['passed']} "
                                f"failed={count['failed']} differing={count[DIFFERS]} "
                                f"skipped={count['skipped']}")
    for provider, count in skips.items():
        ET.SubElement(properties, "property", name=f"ndk-skips {provider}",
                      value=" ".join(f"{kind}={count[kind]}" for kind in SKIP_KINDS
                                     if count[kind]))
    tree.write(path, encoding="utf-8", xml_declaration=True)


def conclude(
    code: int,
    records: Sequence[Record],
    providers: Sequence[str],
    wall_seconds: float,
    where: str,
    out: TextIO,
    junit: str | None = None,
    html: str | None = None,
    not_run: Sequence[str] = (),
    scenarios_dir: str | os.PathLike | None = None,
    json_path: str | None = None,
    baseline: tuple[str, Mapping[str, str]] | None = None,
    fail_on_regression: bool = False,
) -> int:
    """Print the summary for a finished pytest run and return the runner's exit code; add the
    violations to the ``junit`` file pytest wrote, write the ``html`` report and the
    ``json_path`` one (docs/report-json.md).

    ``not_run``: collected scenarios that never ran (a warning after the report).
    ``scenarios_dir``: the directory the run collected (the HTML report links into it).
    ``baseline``: (its file name, :func:`ndk._json_report.load` of it): the changes from it are
    printed after the report; with ``fail_on_regression`` the exit code is 1 when a scenario
    fails that did not in the baseline, else 0 (the failures the baseline has are known).

    0: something ran and nothing failed; 1: failures or errors (collection errors included,
    crashes and timeouts too), or scenarios that did not run in a run that otherwise passed;
    5: nothing collected; pytest's own code for usage and internal errors and interruptions.
    """
    if code in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERNAL_ERROR):
        return int(code)
    if code == pytest.ExitCode.NO_TESTS_COLLECTED or (code == pytest.ExitCode.OK and not records):
        print(f"\nndk conformance: no scenarios collected from {where}", file=out)
        return int(pytest.ExitCode.NO_TESTS_COLLECTED)
    if junit and os.path.exists(junit):
        add_violations_to_junit(junit, records, providers)
    if html:
        from ._html import format_html

        Path(html).parent.mkdir(parents=True, exist_ok=True)
        Path(html).write_text(format_html(records, providers, wall_seconds, scenarios_dir),
                              encoding="utf-8")
    if json_path:
        json_report.write(json_path, json_report.report(records, providers, wall_seconds,
                                                        _build_info("VERSION")))
    print("\n" + format_report(records, providers, wall_seconds), file=out)
    if not_run:
        shown = ", ".join(not_run[:3]) + (f" and {len(not_run) - 3} more" if len(not_run) > 3 else "")
        print(f"warning: {len(not_run)} collected scenario(s) did not run (the run stopped "
              f"early): {shown}", file=out)
    if baseline is not None:
        changes = json_report.compare(baseline[1], records)
        print("\n" + json_report.format_changes(changes, baseline[0]), file=out)
        if fail_on_regression:
            return int(pytest.ExitCode.TESTS_FAILED if changes.regressions or not_run
                       else pytest.ExitCode.OK)
    failing = any(r.outcome in FAILING for r in records)
    if code == pytest.ExitCode.TESTS_FAILED and not failing and any(
            r.outcome == DIFFERS for r in records):
        code = pytest.ExitCode.OK  # pytest saw the differences fail; they are not failures
    if failing or code == pytest.ExitCode.TESTS_FAILED or (not_run and code == pytest.ExitCode.OK):
        return int(pytest.ExitCode.TESTS_FAILED)
    return int(code)


def run(
    providers: Sequence[str],
    scenarios_dir: str | None = None,
    junit: str | None = None,
    keyword: str | None = None,
    extra_args: Sequence[str] = (),
    html: str | None = None,
    progress: str = "auto",
    workers: str | int | None = None,
    timeout: float | None = None,
    strict: bool = False,
    expectations: Sequence[str] | None = None,
    rules: Sequence[str] = (),
    json_path: str | None = None,
    baseline: str | None = None,
    fail_on_regression: bool = False,
) -> int:
    """Run the conformance scenarios against ``providers`` and print the matrix; return an exit code.

    ``providers`` empty means the plugin's default (soft). ``junit`` is a JUnit XML path to write,
    ``keyword`` a ``-k`` expression, ``extra_args`` further pytest arguments, ``html`` a
    self-contained HTML report to write, ``progress`` how to show the run's progress
    (:class:`ndk._progress.ConformanceProgress`: auto, live, plain or off), ``workers`` the
    number of pytest-xdist worker processes (``-n``: a count or "auto"; None or 0: this process
    runs them), ``timeout`` each scenario's time limit in seconds (pytest-timeout).  A worker
    that dies (a signal) fails the scenario it ran, as a crash; one past its time limit fails
    as a timeout; the run goes on either way (``ndk._isolation``).  ``strict``: a scenario
    whose expectation is a reference choice (``@pytest.mark.reference``) and that fails is a
    failure; without it the report counts it as "differs (reference choice)" and the run
    does not fail on it.  ``expectations``: expectations files (``ndk.expectations``) instead of
    the harness's own for the providers; one that cannot be read or does not follow the format
    is exit 2, before any scenario runs.
    ``rules``: only the scenarios of these rules (IDs, globs, families:
    the plugin's ``--ndk-rule``).  ``json_path``: write the run as JSON there
    (docs/report-json.md); ``baseline``: such a file of an earlier run, to print what changed
    (:func:`conclude` says what ``fail_on_regression`` does with it).

    Before anything is collected, each provider (and the pairs' passive side, when it runs
    here) must open an adapter with the run's knobs and take the scenarios' addresses
    (:mod:`ndk._environment`); when one cannot, one line says why and the exit code is 2.
    """
    try:
        directory = locate_scenarios_dir(scenarios_dir)
    except ScenariosNotFound as exc:
        print(f"ndk conformance: {exc}", file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    for option, path in (("--junit", junit), ("--html", html), ("--json", json_path)):
        problem = output_problem(path) if path else None
        if problem:
            print(f"ndk conformance: {option}: {problem}", file=sys.stderr)
            return int(pytest.ExitCode.USAGE_ERROR)
    if fail_on_regression and not baseline:
        print("ndk conformance: --fail-on-regression needs --baseline FILE (the run to compare "
              "with)", file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    try:
        earlier = (baseline, json_report.load(baseline)) if baseline else None
    except json_report.BaselineError as exc:
        print(f"ndk conformance: --baseline: {exc}", file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    problem = missing_plugin(workers, timeout)
    if problem:
        print(f"ndk conformance: {problem}", file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    if expectations:
        try:
            load_all(expectations)
        except ExpectationsError as exc:
            print(f"ndk conformance: --expectations: {exc}", file=sys.stderr)
            return ENVIRONMENT_ERROR
        extra_args = [word for path in expectations
                      for word in ("--ndk-expectations", str(path))] + list(extra_args)
    problem = environment.args_problem(providers, extra_args)
    if problem:  # every scenario would fail or skip for it: say it once, run nothing
        print(f"ndk conformance: {problem}", file=sys.stderr)
        return ENVIRONMENT_ERROR
    collector = ResultCollector(strict=strict)
    started = time.monotonic()
    shown = ConformanceProgress(sys.stdout, mode=progress, started=started, strict=strict)
    args = pytest_args(directory, providers, junit, keyword, extra_args, workers, timeout, rules)
    if shown.mode != "off":  # no "[100%]" from pytest: the progress display has it
        args[1:1] = ["-o", "console_output_style=classic"]
    code = pytest.main(args, plugins=[collector, shown])
    wall = time.monotonic() - started
    where = f"{directory}" + (f" matching -k {keyword!r}" if keyword else "")
    where += "".join(f" --rule {rule}" for rule in rules)
    return conclude(code, collector.records, collector.providers or list(providers), wall, where,
                    sys.stdout, junit=junit, html=html, not_run=collector.not_run,
                    scenarios_dir=directory, json_path=json_path, baseline=earlier,
                    fail_on_regression=fail_on_regression)
