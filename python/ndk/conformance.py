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
from typing import Sequence, TextIO

import pytest

from ._progress import ConformanceProgress
from ._report import (COLLECTION, FAILING, VIOLATION_PROPERTY, Record, ViolationRecord,
                      format_report, violation_tallies)
from ._selection import provider_of, rule_of, selected_providers

SCENARIOS_ENV = "NDK_SCENARIOS"
PLUGIN = "ndk.testing"  # the pytest plugin the scenarios need (fixtures, markers, options)

# Rank of a test's outcome across its setup/call/teardown phases: the worst one is kept, and
# among failures the first (a failing call followed by a teardown error stays "failed").
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 2}
_MESSAGE_LIMIT = 200


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

    def __init__(self) -> None:
        self._config: pytest.Config | None = None
        self._where: dict[str, tuple[str | None, str | None]] = {}  # nodeid -> (rule, provider)
        self._results: dict[str, dict] = {}  # nodeid -> {rule, provider, outcome, message, duration}

    @property
    def providers(self) -> list[str]:
        """The providers selected with ``--ndk-provider`` (the default when none were)."""
        return selected_providers(self._config) if self._config is not None else []

    @property
    def records(self) -> list[Record]:
        """The results so far, one per test (or per module that failed to collect)."""
        return [Record(nodeid=nodeid, **fields) for nodeid, fields in self._results.items()]

    def pytest_configure(self, config: pytest.Config) -> None:
        self._config = config

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        # Reports carry only the node ID; remember what it stands for while the items exist.
        for item in items:
            self._where[item.nodeid] = (rule_of(item), provider_of(item))

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

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        rule, provider = self._where.get(report.nodeid, (None, None))
        result = self._results.setdefault(
            report.nodeid,
            dict(rule=rule, provider=provider, outcome="passed", message=None, duration=0.0,
                 violations=()),
        )
        result["duration"] += report.duration
        # Each phase's report carries the item's user_properties so far; the plugin adds the
        # violations in the teardown phase, so the last report has them all.
        violations = tuple(value for name, value in report.user_properties
                           if name == VIOLATION_PROPERTY and isinstance(value, ViolationRecord))
        if violations:
            result["violations"] = violations
        outcome, message = _phase_outcome(report)
        if _RANK[outcome] > _RANK[result["outcome"]]:
            result["outcome"], result["message"] = outcome, message


# --- locating the scenarios ----------------------------------------------------------------


def _build_info_scenarios_dir() -> str | None:
    try:
        build_info = importlib.import_module("ndk._build_info")
    except ModuleNotFoundError as exc:
        if exc.name != "ndk._build_info":
            raise
        return None
    return getattr(build_info, "SCENARIOS_DIR", None)


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
    built = _build_info_scenarios_dir()
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


def pytest_args(
    scenarios_dir: str | os.PathLike,
    providers: Sequence[str],
    junit: str | None = None,
    keyword: str | None = None,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The pytest command line for a conformance run (``-p ndk.testing``: see the module doc)."""
    args = [str(scenarios_dir), "-q", "-p", "no:cacheprovider", "-p", PLUGIN]
    for provider in providers:
        args += ["--ndk-provider", provider]
    if junit:
        args.append(f"--junitxml={junit}")
    if keyword:
        args += ["-k", keyword]
    return args + list(extra_args)


def add_violations_to_junit(path: str | os.PathLike, records: Sequence[Record],
                            providers: Sequence[str]) -> None:
    """Add the validation layer's violations per provider and rule to a JUnit XML file as
    properties of its test suite: ``<property name="ndk-violations soft CQ-NOTIFY-TWICE"
    value="side=provider errors=1 warnings=0 expected=0 scenarios=..."/>``.

    Each test case already lists its own violations (pytest writes the plugin's
    ``ndk_violation`` user_properties as test case properties).
    """
    tallies = violation_tallies(records, providers)
    if not tallies:
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
) -> int:
    """Print the summary for a finished pytest run and return the runner's exit code; add the
    violations to the ``junit`` file pytest wrote, write the ``html`` report.

    0: something ran and nothing failed; 1: failures or errors (collection errors included);
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
        Path(html).write_text(format_html(records, providers, wall_seconds), encoding="utf-8")
    print("\n" + format_report(records, providers, wall_seconds), file=out)
    if any(r.outcome in FAILING for r in records) or code == pytest.ExitCode.TESTS_FAILED:
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
) -> int:
    """Run the conformance scenarios against ``providers`` and print the matrix; return an exit code.

    ``providers`` empty means the plugin's default (soft). ``junit`` is a JUnit XML path to write,
    ``keyword`` a ``-k`` expression, ``extra_args`` further pytest arguments, ``html`` a
    self-contained HTML report to write, ``progress`` how to show the run's progress
    (:class:`ndk._progress.ConformanceProgress`: auto, live, plain or off).
    """
    try:
        directory = locate_scenarios_dir(scenarios_dir)
    except ScenariosNotFound as exc:
        print(f"ndk conformance: {exc}", file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    for option, path in (("--junit", junit), ("--html", html)):
        problem = output_problem(path) if path else None
        if problem:
            print(f"ndk conformance: {option}: {problem}", file=sys.stderr)
            return int(pytest.ExitCode.USAGE_ERROR)
    collector = ResultCollector()
    started = time.monotonic()
    shown = ConformanceProgress(sys.stdout, mode=progress, started=started)
    args = pytest_args(directory, providers, junit, keyword, extra_args)
    if shown.mode != "off":  # no "[100%]" from pytest: the progress display has it
        args[1:1] = ["-o", "console_output_style=classic"]
    code = pytest.main(args, plugins=[collector, shown])
    wall = time.monotonic() - started
    where = f"{directory}" + (f" matching -k {keyword!r}" if keyword else "")
    return conclude(code, collector.records, collector.providers or list(providers), wall, where,
                    sys.stdout, junit=junit, html=html)
