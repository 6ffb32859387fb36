"""Arguments checked before the work starts: ``ndk conformance``'s report paths and scenarios
folder, ``bench/compare``'s options.  A bad one is one clear line and a usage exit code, not a
traceback after the run."""

from __future__ import annotations

import fnmatch
import subprocess
import sys
from pathlib import Path

import pytest

from ndk import conformance

COMPARE = Path(__file__).resolve().parents[2] / "bench" / "compare"


def run_ndk(pytester, *args):
    return pytester.run(sys.executable, "-m", "ndk", *args, timeout=120)


@pytest.mark.parametrize("option", ["--junit", "--html"])
def test_a_report_path_that_is_a_directory_fails_before_the_run(option, pytester, fake_ndk_env):
    scenarios = pytester.mkdir("scen")
    result = run_ndk(pytester, "conformance", "--scenarios", str(scenarios), option,
                     str(pytester.path))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ndk conformance: {option}: * is a directory"])
    assert "Traceback" not in result.stderr.str()
    assert "collected" not in result.stdout.str()  # pytest never started


@pytest.mark.parametrize("option", ["--junit", "--html"])
def test_a_report_path_that_cannot_be_created_fails_before_the_run(option, pytester,
                                                                   fake_ndk_env):
    scenarios = pytester.mkdir("scen")
    blocker = pytester.path / "a-file"
    blocker.write_text("")
    result = run_ndk(pytester, "conformance", "--scenarios", str(scenarios), option,
                     str(blocker / "r.xml"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ndk conformance: {option}: cannot write *a-file/r.xml: *"])
    assert "Traceback" not in result.stderr.str()


def test_output_problem_leaves_nothing_behind_and_creates_the_directory(tmp_path):
    target = tmp_path / "new" / "report.xml"
    assert conformance.output_problem(target) is None
    assert target.parent.is_dir() and not target.exists()
    target.write_text("kept")
    assert conformance.output_problem(target) is None
    assert target.read_text() == "kept"


def test_an_unreadable_scenarios_folder_is_a_clear_error(tmp_path, monkeypatch):
    real_access = conformance.os.access
    monkeypatch.setattr(conformance.os, "access",
                        lambda path, mode: False if Path(path) == tmp_path else
                        real_access(path, mode))
    with pytest.raises(conformance.ScenariosNotFound, match="--scenarios: .* is not readable"):
        conformance.locate_scenarios_dir(str(tmp_path))


@pytest.mark.parametrize("arguments, message", [
    (["--build", "b", "--json", "/nonexistent-dir/figures.json"],
     "argument --json: * no directory *"),
    (["--build", "b", "--json", "."], "argument --json: . is a directory"),
    (["--build", "/nonexistent-build"], "argument --build: /nonexistent-build has no bin/ndk_perf*"),
    (["--quick", "--bogus"], "*unrecognized arguments: --bogus"),
])
def test_compare_checks_its_options_before_the_runs(arguments, message, tmp_path):
    helper = tmp_path / "b" / "bin" / "ndk_perf"  # a build tree as far as --build is checked
    helper.parent.mkdir(parents=True)
    helper.write_text("")
    done = subprocess.run([sys.executable, str(COMPARE), *arguments], capture_output=True,
                          text=True, timeout=60, check=False, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "Traceback" not in done.stderr
    assert fnmatch.fnmatch(last, f"compare: error: {message}"), last
