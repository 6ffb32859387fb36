"""Progress of a conformance run: a pytest plugin object the runner registers.

On a terminal, :class:`ConformanceProgress` draws a live display with Debian's python3-rich
(``rich.live``): a bar with the tests done out of those collected, the counts passed / failed /
skipped and the elapsed time, and under it every rule family with its tests done out of its
total (green when finished clean, red as soon as one failed).  Anywhere else (a pipe, a file,
CI logs) it prints plain lines, no escape codes: one per family, when its last test has run,
with the family's counts, the run's progress and the elapsed time::

    CQ         25 passed, 0 failed, 0 skipped  [ 61/647, 3.1 s]

Either way it takes over from pytest's own progress dots (pytest still prints its summary,
tracebacks included, after the run), except when pytest is asked to be verbose (``ndk
conformance -- -v``): then pytest's per-test lines stay and this plugin is silent.

A rule's family is the part of its ID before the first ``-`` (:func:`ndk._report.family_of`),
as in the report's "scenarios per family" table; unmarked tests count as ``(unmarked)``.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from typing import Any, Callable, TextIO

import pytest

from ._report import (DIED_ATTR, DIFFERS, FAILING, UNMARKED, failed_on_stated,
                      failure_is_difference, family_of, format_seconds, rule_sort_key)
from ._selection import collected_where, reference_of, rule_of

MODES = ("auto", "live", "plain", "off")
_RANK = {"passed": 0, "skipped": 1, "failed": 2}


def _outcome(report: pytest.TestReport) -> str:
    if report.passed:
        return "passed"
    return "skipped" if report.skipped else "failed"


def live_possible(out: TextIO) -> bool:
    """A live display is wanted and possible: ``out`` is a terminal (not TERM=dumb) and rich
    is installed."""
    try:
        interactive = out.isatty()
    except (AttributeError, ValueError):
        return False
    if not interactive or os.environ.get("TERM") == "dumb":
        return False
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


class ConformanceProgress:
    """pytest plugin object showing the progress of a conformance run.

    ``mode``: ``"live"`` (rich display; needs python3-rich), ``"plain"`` (one line per
    finished family), ``"off"``, or ``"auto"``: live when ``out`` is a terminal, else plain.
    ``console`` (a ``rich.console.Console``) forces the live mode onto that console, e.g.
    ``Console(file=StringIO(), force_terminal=True)`` in a test.  ``started`` is the
    ``clock()`` time the run began (default: when the collection finished).
    """

    def __init__(self, out: TextIO | None = None, mode: str = "auto", console=None,
                 started: float | None = None, clock: Callable[[], float] = time.monotonic,
                 refresh_interval: float = 0.1, strict: bool = False) -> None:
        if mode not in MODES:
            raise ValueError(f"progress mode {mode!r}: one of {', '.join(MODES)}")
        self._out = out if out is not None else sys.stdout
        if console is not None:
            mode = "live"
        elif mode == "auto":
            mode = "live" if live_possible(self._out) else "plain"
        self.mode = mode
        self._console = console
        self._clock = clock
        self._started = started
        self._refresh_interval = refresh_interval
        self._last_refresh = float("-inf")
        self._family: dict[str, str] = {}  # nodeid -> family
        # Reference-choice scenarios: a failure of one counts as "differs" (unless strict),
        # as the report counts it.
        self._strict = strict
        self._reference: set[str] = set()
        self._stated: set[str] = set()  # failed on what NDK states (ndk.scenario.stated)
        self._worst: dict[str, str] = {}  # nodeid -> worst outcome of its phases so far
        self.totals: dict[str, int] = {}  # family -> tests collected, in report order
        self.counts: dict[str, Counter] = {}  # family -> Counter of passed/failed/skipped
        self.done = 0
        self._config: pytest.Config | None = None
        self._live: Any = None  # rich.live.Live while the display runs
        self._bar: Any = None  # rich.progress.Progress
        self._task: Any = None

    # --- pytest hooks ----------------------------------------------------------------------

    def pytest_configure(self, config: pytest.Config) -> None:
        self._config = config
        if config.option.verbose >= 0:  # -v: pytest's own per-test lines, nothing from us
            self.mode = "off"

    @pytest.hookimpl(hookwrapper=True)
    def pytest_report_teststatus(self, report, config):
        outcome = yield
        if self.mode == "off" or not isinstance(report, pytest.TestReport):
            return
        category, _letter, _word = outcome.get_result()
        outcome.force_result((category, "", ""))  # no progress dots: the display has them

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._reference = {item.nodeid for item in session.items if reference_of(item)}
        self._start({item.nodeid: rule_of(item) for item in session.items})

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Under pytest-xdist the controller collects nothing: the tests are the workers' (the
        first to report), their rules what the plugin read from them."""
        if self._family or self._config is None:
            return
        where = collected_where(self._config)
        self._reference = {nodeid for nodeid in ids if where.get(nodeid, (None,) * 3)[2]}
        self._start({nodeid: where.get(nodeid, (None, None, None))[0] for nodeid in ids})

    def _start(self, rules: dict[str, str | None]) -> None:
        if self.mode == "off":
            return
        families: dict[str, int] = Counter()
        for nodeid, rule in rules.items():
            family = family_of(rule) if rule is not None else UNMARKED
            self._family[nodeid] = family
            families[family] += 1
        self.totals = {f: families[f] for f in sorted(families, key=rule_sort_key)}
        self.counts = {f: Counter() for f in self.totals}
        if self._started is None:
            self._started = self._clock()
        if not self.totals:
            return
        if self.mode == "live":
            self._start_live()
        else:
            self._print(f"ndk conformance: {self.total} tests in {len(self.totals)} rule families")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.mode == "off" or report.nodeid not in self._family:
            return
        outcome = _outcome(report)
        if failed_on_stated(report):
            self._stated.add(report.nodeid)
        worst = self._worst.get(report.nodeid, "passed")
        if _RANK[outcome] > _RANK[worst]:
            worst = outcome
        self._worst[report.nodeid] = worst
        # A test's last report is its teardown's; a crashed one's (xdist's, for a worker that
        # died) is the only one after the phases it finished.
        if report.when != "teardown" and not getattr(report, DIED_ATTR, False):
            return
        family = self._family[report.nodeid]
        counts = self.counts[family]
        if worst == "failed" and failure_is_difference(report.nodeid in self._reference,
                                                       self._strict,
                                                       report.nodeid in self._stated):
            worst = DIFFERS
        counts[worst] += 1
        self.done += 1
        finished = sum(counts.values()) == self.totals[family]
        if self.mode == "live":
            self._refresh(force=finished or self.done == self.total)
        elif finished:
            self._print(self.family_line(family))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.stop()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.stop()

    # --- what is shown ---------------------------------------------------------------------

    @property
    def total(self) -> int:
        return sum(self.totals.values())

    @property
    def elapsed(self) -> float:
        return 0.0 if self._started is None else self._clock() - self._started

    def outcome_counts(self) -> Counter:
        """passed / failed / skipped over every family so far."""
        total: Counter = Counter()
        for counts in self.counts.values():
            total.update(counts)
        return total

    def family_line(self, family: str) -> str:
        """The plain line for a finished family."""
        c = self.counts[family]
        width = max(len(f) for f in self.totals)
        n = len(str(max(self.totals.values())))
        places = len(str(self.total))
        differ = f", {c[DIFFERS]} differ" if c[DIFFERS] else ""
        return (f"{family:<{width}}  {c['passed']:>{n}} passed, {c['failed']:>{n}} failed, "
                f"{c['skipped']:>{n}} skipped{differ}  [{self.done:>{places}}/{self.total}, "
                f"{format_seconds(self.elapsed)}]")

    def families_text(self):
        """The live display's family line: ``CQ 25/25`` per family, coloured by state."""
        from rich.text import Text

        text = Text()
        for i, (family, total) in enumerate(self.totals.items()):
            counts = self.counts[family]
            done = sum(counts.values())
            if counts["failed"]:
                style = "bold red"
            elif done == total:
                style = "green"
            elif done:
                style = "bold"
            else:
                style = "dim"
            if i:
                text.append("  ")
            text.append(f"{family} {done}/{total}", style=style)
        return text

    def _counts_markup(self) -> str:
        c = self.outcome_counts()
        failed = f"[bold red]{c['failed']} failed[/]" if c["failed"] else "0 failed"
        differ = f", [yellow]{c[DIFFERS]} differ[/]" if c[DIFFERS] else ""
        return (f"[green]{c['passed']} passed[/], {failed}, [yellow]{c['skipped']} skipped[/]"
                + differ)

    # --- output ----------------------------------------------------------------------------

    def _print(self, line: str) -> None:
        print(line, file=self._out, flush=True)

    def _start_live(self) -> None:
        from rich.console import Console
        from rich.live import Live
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn)

        if self._console is None:
            self._console = Console(file=self._out)
        self._bar = Progress(TextColumn("[bold]conformance[/]"),
                             BarColumn(complete_style="cyan", finished_style="green"),
                             MofNCompleteColumn(),
                             TextColumn("{task.fields[counts]}"), TimeElapsedColumn(),
                             console=self._console, auto_refresh=False, get_time=self._clock,
                             redirect_stdout=False, redirect_stderr=False)
        self._task = self._bar.add_task("conformance", total=self.total,
                                        counts=self._counts_markup())
        self._bar.tasks[0].start_time = self._started  # elapsed since the run began
        # No refresh thread: pytest captures the output file descriptors while a test runs, and
        # a write then would land in the test's captured output.  The display is redrawn from
        # the report hooks, which run between a test's phases, outside the capture.
        self._live = Live(self._renderable(), console=self._console, auto_refresh=False,
                          redirect_stdout=False, redirect_stderr=False, transient=False)
        self._live.start(refresh=True)

    def _renderable(self):
        from rich.console import Group

        return Group(self._bar, self.families_text())

    def _refresh(self, force: bool = False) -> None:
        if self._live is None:
            return
        now = self._clock()
        self._bar.update(self._task, completed=self.done, counts=self._counts_markup())
        if force or now - self._last_refresh >= self._refresh_interval:
            self._live.update(self._renderable(), refresh=True)
            self._last_refresh = now

    def stop(self) -> None:
        """End the live display (idempotent), leaving its last state on the screen."""
        if self._live is not None:
            self._refresh(force=True)
            self._live.stop()
            self._live = None
