"""From a report back to a run (issue 25, item 4): ``ndk conformance --json`` then
``--baseline`` of that file.  The same run again reports no change; the same run with one rule
broken on purpose (the fault layer's ``misbehave=undocumented_status``: NdkCreatePd fails with
a status its page does not list) reports exactly that rule's scenario as a new failure, and
``--fail-on-regression`` makes it exit 1.  ``--rule`` selects scenarios by their rule marker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ndk

SCENARIOS = '''
import pytest

import ndk


@pytest.mark.rule("DEMO-PD-CREATE")
def test_creates_a_pd(adapter: ndk.Adapter) -> None:
    assert adapter.create_pd().wait(timeout=5) == ndk.Status.SUCCESS


@pytest.mark.rule("DEMO-CQ-CREATE")
def test_creates_a_cq(adapter: ndk.Adapter) -> None:
    assert adapter.create_cq(cq_depth=8).wait(timeout=5) == ndk.Status.SUCCESS


@pytest.mark.rule("OTHER-SKIP")
def test_skips() -> None:
    pytest.skip("shows a skip in the baseline")
'''


@pytest.fixture
def scenarios(tmp_path: Path) -> Path:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "test_demo.py").write_text(SCENARIOS, encoding="utf-8")
    return folder


def conformance(scenarios: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", XDG_CACHE_HOME=str(scenarios.parent / "cache"))
    env.pop("NDK_PROVIDER_SETUP", None)
    return subprocess.run(
        [sys.executable, "-m", "ndk", "conformance", "--scenarios", str(scenarios), "--progress",
         "off", *args], cwd=scenarios.parent, env=env, capture_output=True, text=True, timeout=120)


def test_a_run_against_its_own_baseline_has_no_change(scenarios: Path, tmp_path: Path) -> None:
    first = conformance(scenarios, "--json", str(tmp_path / "first.json"))
    assert first.returncode == 0, first.stdout + first.stderr
    document = json.loads((tmp_path / "first.json").read_text())
    assert document["schema"] == "ndk-harness/conformance-report/1"
    assert {(r["rule"], r["outcome"]) for r in document["rules"]} == {
        ("DEMO-CQ-CREATE", "pass"), ("DEMO-PD-CREATE", "pass"), ("OTHER-SKIP", "skip")}
    again = conformance(scenarios, "--baseline", str(tmp_path / "first.json"),
                        "--fail-on-regression")
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.splitlines()[-1] == (
        f"compared with the baseline {tmp_path / 'first.json'} (3 scenarios in both): no change")


def test_one_rule_broken_on_purpose_is_exactly_the_regression(scenarios: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    assert conformance(scenarios, "--json", str(baseline)).returncode == 0
    broken = conformance(scenarios, "--baseline", str(baseline), "--fail-on-regression",
                         "--ndk-option", "misbehave=undocumented_status")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    lines = broken.stdout.splitlines()
    changes = lines[next(i for i, line in enumerate(lines) if line.startswith("compared with")):]
    assert changes == [
        f"compared with the baseline {baseline} (3 scenarios in both):",
        "  new failures (1):",
        "    test_demo.py::test_creates_a_pd[soft] (soft): passed -> failed",
    ]
    # Without --fail-on-regression the comparison is information: the exit code is the run's.
    plain = conformance(scenarios, "--baseline", str(baseline),
                        "--ndk-option", "misbehave=undocumented_status")
    assert plain.returncode == 1 and "  new failures (1):" in plain.stdout


def test_rule_selects_by_id_glob_and_family(scenarios: Path) -> None:
    def rules_run(*patterns: str) -> list[str]:
        args = [word for pattern in patterns for word in ("--rule", pattern)]
        done = conformance(scenarios, *args)
        assert done.returncode == 0, done.stdout + done.stderr
        lines = done.stdout.splitlines()
        matrix = lines[next(i for i, line in enumerate(lines) if line.startswith("rule ")) + 1:]
        return [line.split()[0] for line in matrix[:matrix.index("")]]

    assert rules_run("DEMO-PD-CREATE") == ["DEMO-PD-CREATE"]
    assert rules_run("DEMO-*-CREATE", "OTHER") == ["DEMO-CQ-CREATE", "DEMO-PD-CREATE", "OTHER-SKIP"]
    assert rules_run("DEMO") == ["DEMO-CQ-CREATE", "DEMO-PD-CREATE"]
    nothing = conformance(scenarios, "--rule", "NO-SUCH-RULE")
    assert nothing.returncode == 5
    assert nothing.stdout.splitlines()[-1] == (
        f"ndk conformance: no scenarios collected from {scenarios} --rule NO-SUCH-RULE")


def test_last_failed_reruns_the_failure_with_the_cache_outside_the_scenarios(
        scenarios: Path, tmp_path: Path) -> None:
    broken = conformance(scenarios, "--ndk-option", "misbehave=undocumented_status")
    assert broken.returncode == 1
    again = conformance(scenarios, "--lf", "--ndk-option", "misbehave=undocumented_status",
                        "--json", str(tmp_path / "lf.json"))
    ran = [s["scenario"] for s in json.loads((tmp_path / "lf.json").read_text())["scenarios"]]
    assert ran == ["test_demo.py::test_creates_a_pd[soft]"], again.stdout
    assert (tmp_path / "cache" / "ndk-harness" / "pytest").is_dir()
    assert not (scenarios / ".pytest_cache").exists() and not (tmp_path / ".pytest_cache").exists()
