"""The conformance run's progress display (ndk._progress), in-process with pytester.

Both modes: live (rich, forced onto a terminal console writing into a StringIO) and plain
(lines without escape codes, as when stdout is a pipe).
"""

from __future__ import annotations

import io
import re
import time

import pytest

from ndk._progress import ConformanceProgress, live_possible

rich_console = pytest.importorskip("rich.console", reason="python3-rich is not installed")

SCENARIOS = {
    "test_cq": """
        import pytest

        @pytest.mark.rule("CQ-CREATE-DEPTH")
        def test_depth(cq):
            assert cq.depth == 64

        @pytest.mark.rule("CQ-RESIZE")
        def test_resize():
            pytest.skip("no resize here")
        """,
    "test_qp": """
        import pytest

        @pytest.mark.rule("QP-BROKEN")
        def test_broken(adapter):
            assert False, "broken on purpose"

        def test_unmarked():
            pass
        """,
}

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def last_frame(text: str) -> str:
    """What the terminal shows at the end: the text after the live display's last redraw
    (rich moves the cursor up with ESC[1A and erases with ESC[2K before redrawing)."""
    return ANSI.sub("", text[text.rfind("\x1b[1A") :]).replace("\r", "")


def test_live_display_on_a_terminal_counts_families_and_time(scenarios, pytester):
    scenarios(**SCENARIOS)
    screen = io.StringIO()
    console = rich_console.Console(file=screen, force_terminal=True, width=120)
    # The run "began" 65 s ago: the elapsed column must count from there.
    progress = ConformanceProgress(console=console, started=time.monotonic() - 65)
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider", plugins=[progress])
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    assert progress.mode == "live"
    text = screen.getvalue()
    assert "\x1b[" in text  # colours and cursor movement: a live display
    frame = last_frame(text)
    assert re.search(r"conformance .* 4/4 +2 passed, 1 failed, 1 skipped +0:01:0[5-9]", frame), frame
    families = frame.splitlines()[-1].split("  ")
    assert families == ["CQ 2/2", "QP 1/1", "(unmarked) 1/1"]
    # pytest's own progress dots are gone (its summary with the failure's traceback stays).
    assert not any(re.fullmatch(r"[.sF]+.*", line) for line in result.outlines)
    result.stdout.fnmatch_lines(["*broken on purpose*", "*1 failed, 2 passed, 1 skipped*"])


def test_live_display_colours_a_family_with_a_failure_red(scenarios, pytester):
    scenarios(**SCENARIOS)
    screen = io.StringIO()
    console = rich_console.Console(file=screen, force_terminal=True, width=120, color_system="standard")
    pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider",
                                 plugins=[ConformanceProgress(console=console)])
    tail = screen.getvalue()[screen.getvalue().rfind("\x1b[1A") :]
    assert re.search(r"\x1b\[1;31mQP 1/1\x1b\[0m", tail), repr(tail)  # bold red
    assert re.search(r"\x1b\[32mCQ 2/2\x1b\[0m", tail), repr(tail)  # green: done, no failure


def test_plain_lines_when_not_a_terminal(scenarios, pytester):
    scenarios(**SCENARIOS)
    out = io.StringIO()
    progress = ConformanceProgress(out, started=time.monotonic() - 65)
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider", plugins=[progress])
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    assert progress.mode == "plain"
    text = out.getvalue()
    assert "\x1b" not in text
    lines = text.splitlines()
    assert lines[0] == "ndk conformance: 4 tests in 3 rule families"
    # One line per family, when its last test has run (the provider-parametrized tests run
    # first: test_depth, test_broken, then test_resize, test_unmarked).
    assert lines[1:] == [
        "QP          0 passed, 1 failed, 0 skipped  [2/4, %s]" % lines[1].split(", ")[-1][:-1],
        "CQ          1 passed, 0 failed, 1 skipped  [3/4, %s]" % lines[2].split(", ")[-1][:-1],
        "(unmarked)  1 passed, 0 failed, 0 skipped  [4/4, %s]" % lines[3].split(", ")[-1][:-1],
    ]
    elapsed = [float(re.search(r", ([0-9.]+) s\]$", line).group(1)) for line in lines[1:]]
    assert all(65 <= seconds < 70 for seconds in elapsed), elapsed  # since the run began
    assert not any(re.fullmatch(r"[.sF]+.*", line) for line in result.outlines)


def test_verbose_pytest_keeps_its_own_lines_and_the_progress_is_silent(scenarios, pytester):
    scenarios(**SCENARIOS)
    out = io.StringIO()
    progress = ConformanceProgress(out, mode="plain")
    result = pytester.runpytest_inprocess("-v", "-p", "no:cacheprovider", plugins=[progress])
    assert progress.mode == "off" and out.getvalue() == ""
    result.stdout.fnmatch_lines(["*test_cq.py::test_depth*PASSED*"])


def test_off_changes_nothing(scenarios, pytester):
    scenarios(**SCENARIOS)
    out = io.StringIO()
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider",
                                          plugins=[ConformanceProgress(out, mode="off")])
    assert out.getvalue() == ""
    result.stdout.fnmatch_lines([".Fs.*"])  # pytest's dots as usual


def test_live_only_on_a_terminal(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert not live_possible(io.StringIO())
    monkeypatch.setenv("TERM", "xterm")
    assert live_possible(Tty())
    assert ConformanceProgress(Tty()).mode == "live"
    assert ConformanceProgress(io.StringIO()).mode == "plain"
    monkeypatch.setenv("TERM", "dumb")
    assert not live_possible(Tty())
    with pytest.raises(ValueError, match="one of auto, live, plain, off"):
        ConformanceProgress(io.StringIO(), mode="fancy")
