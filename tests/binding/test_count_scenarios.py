"""The *-CREATE-RESOURCES scenarios judge the provider (issue 26: a scenario that cannot fail
any provider is redesigned to judge it).  They used to take their INSUFFICIENT_RESOURCES from
the fault layer, which never calls the provider, so every provider passed them.  Now they
create up to the counts the provider reports (NDIS_NDK_CAPABILITIES, docs/semantics.md CAPS):

* a provider that reports counts it does not keep (tests/fixtures/uncounted_provider.cpp: the
  loop provider claiming 2 of each kind) fails them, on what NDK states (the create beyond the
  count must fail), not as a difference of choice;
* soft, whose knobs set the counts, passes them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ndk

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
# build/tests/, beside build/python/ndk/ where the package is run from (PYTHONPATH).
UNCOUNTED = Path(ndk.__file__).parents[2] / "tests" / "libndk_test_uncounted_provider.so"


@pytest.fixture
def scenarios(tmp_path: Path) -> Path:
    """A folder with the count scenarios' files alone (collected faster than the whole suite)."""
    folder = tmp_path / "scenarios"
    folder.mkdir()
    for name in ("test_pd.py", "test_cq.py", "test_mr.py", "test_qp.py"):
        shutil.copy(SCENARIOS / name, folder)
    return folder


def conformance(scenarios: Path, provider: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
               XDG_CACHE_HOME=str(scenarios.parent / "cache"))
    env.pop("NDK_PROVIDER_SETUP", None)
    return subprocess.run(
        [sys.executable, "-m", "ndk", "conformance", "--scenarios", str(scenarios), "--progress",
         "off", "--provider", provider, "--rule", "PD-CREATE-RESOURCES", "--rule",
         "CQ-CREATE-RESOURCES", "--rule", "MR-CREATE-RESOURCES", "--rule", "QP-CREATE-RESOURCES"],
        cwd=scenarios.parent, env=env, capture_output=True, text=True, timeout=120)


def summary(run: subprocess.CompletedProcess[str]) -> str:
    return run.stdout.splitlines()[-1].split(" in ")[0]


def test_a_provider_that_does_not_keep_its_counts_fails(scenarios: Path) -> None:
    assert UNCOUNTED.exists(), f"{UNCOUNTED} not built (CMake target ndk_test_uncounted_provider)"
    run = conformance(scenarios, str(UNCOUNTED))
    assert run.returncode == 1, run.stdout + run.stderr
    assert summary(run) == "conformance: 0 passed, 4 failed, 0 skipped"
    # The scenarios failed on what digest 3.7 states, each counted once: the report and
    # pytest's own summary both name them (pytest cuts its lines short, except under CI=true).
    stated = {re.search(r"test_create_\w+_count", line).group(0)
              for line in run.stdout.splitlines() if line.lstrip().startswith("FAILED")
              and "ndk._stated.Stated: digest 3.7" in line}
    assert len(stated) == 4, run.stdout


def test_soft_keeps_its_counts(scenarios: Path) -> None:
    run = conformance(scenarios, "soft")
    assert run.returncode == 0, run.stdout + run.stderr
    assert summary(run) == "conformance: 4 passed, 0 failed, 0 skipped"
