"""The pytest plugin stays out of the way (python/ndk/testing.py): the package's ``pytest11``
entry point is loaded into every pytest run of a machine where the package is installed, so it
must not load the compiled extension ``ndk._core`` until a test uses the harness's fixtures or
the run is given an ``--ndk-*`` option; and when the extension cannot load (a newer Python, a
broken build), an unrelated test suite still passes while the harness's tests error with one
line saying why.

Each case runs pytest in a subprocess on a copy of the package installed as Python finds an
installed one: the package's modules and a dist-info holding its real entry_points.txt, so the
plugin loads through its entry point, not through a conftest.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ndk

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(ndk.__file__).resolve().parent

UNRELATED_TEST = """\
import sys

def test_unrelated():
    # The plugin is loaded (through the entry point), the compiled extension is not.
    assert "ndk.testing" in sys.modules
    assert "ndk._core" not in sys.modules
"""

HARNESS_TEST = """\
def test_uses_the_harness(adapter):
    assert adapter.query_info().max_cq_depth > 0
"""


def _site(tmp_path: Path, with_extension: bool) -> Path:
    """A site directory holding the package (with or without its extension) and a dist-info
    carrying the package's entry points."""
    site = tmp_path / "site"
    ignore = None if with_extension else shutil.ignore_patterns("_core*.so")
    shutil.copytree(PACKAGE, site / "ndk", ignore=ignore, symlinks=False)
    dist_info = site / "ndk_harness-0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: ndk-harness\nVersion: 0\n")
    shutil.copy(REPO / "python" / "entry_points.txt", dist_info / "entry_points.txt")
    return site


def _pytest(site: Path, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_PLUGINS", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def _folder(tmp_path: Path, name: str, source: str) -> Path:
    """An unrelated folder (no conftest, no pytest.ini) holding one test file."""
    folder = tmp_path / "elsewhere"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(source)
    return folder


def test_the_entry_point_loads_the_plugin_without_the_extension(tmp_path):
    folder = _folder(tmp_path, "test_unrelated.py", UNRELATED_TEST)
    run = _pytest(_site(tmp_path, with_extension=True), folder, "-q")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout


def test_an_unrelated_suite_passes_when_the_extension_does_not_load(tmp_path):
    site = _site(tmp_path, with_extension=False)
    assert not list((site / "ndk").glob("_core*.so"))
    folder = _folder(tmp_path, "test_unrelated.py", UNRELATED_TEST)
    run = _pytest(site, folder, "-q")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout


def test_a_test_of_the_harness_errors_with_one_line_when_the_extension_does_not_load(tmp_path):
    site = _site(tmp_path, with_extension=False)
    folder = _folder(tmp_path, "test_unrelated.py", UNRELATED_TEST)
    _folder(tmp_path, "test_harness.py", HARNESS_TEST)
    run = _pytest(site, folder, "-q", "-rE")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 passed, 1 error" in run.stdout
    why = "ndk's compiled extension ndk._core does not load in Python"
    # The error's report is that one line (no traceback).
    error_lines = [line for line in run.stdout.splitlines() if why in line]
    assert len(error_lines) == 1, run.stdout
    assert "No module named 'ndk._core'" in error_lines[0]
    assert "rebuild the harness or reinstall its package" in error_lines[0]
    assert "ERROR test_harness.py::test_uses_the_harness" in run.stdout
    assert "Traceback" not in run.stdout and "testing.py" not in run.stdout


def test_an_ndk_option_is_a_usage_error_when_the_extension_does_not_load(tmp_path):
    folder = _folder(tmp_path, "test_unrelated.py", UNRELATED_TEST)
    run = _pytest(_site(tmp_path, with_extension=False), folder, "-q", "--ndk-provider", "soft")
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.stdout + run.stderr
    message = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(message) == 1, run.stderr
    assert message[0].startswith("ERROR: --ndk-provider: ndk's compiled extension ndk._core "
                                 "does not load"), run.stderr
