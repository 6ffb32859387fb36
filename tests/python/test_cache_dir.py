"""pytest's cache (``--lf``, ``--ff``) never lands in a folder that is not the user's: a plain
pytest run of the installed scenarios (/usr/share/ndk-harness/scenarios, root's or nobody's to
write) keeps it in $XDG_CACHE_HOME/ndk-harness (ndk._cache, the ndk.testing plugin)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ndk import _cache

SCENARIO = '''
import pytest


@pytest.mark.rule("CACHE-FAIL")
def test_fails(ndk_provider):
    assert ndk_provider == "nothing"
'''


def foreign_folder(path: Path) -> Path:
    """A folder of scenarios that is not this user's: another owner as root, else read-only."""
    path.mkdir()
    (path / "test_cache.py").write_text(SCENARIO, encoding="utf-8")
    if os.geteuid() == 0:
        os.chown(path, 65534, 65534)
    else:
        path.chmod(0o555)
    return path


def test_user_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _cache.user_cache_dir() == tmp_path / "ndk-harness" / "pytest"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert _cache.user_cache_dir() == Path.home() / ".cache" / "ndk-harness" / "pytest"


def test_system_and_other_users_folders_are_foreign(tmp_path):
    assert _cache.foreign(Path("/usr/share"))
    assert not _cache.foreign(tmp_path)
    assert _cache.foreign(foreign_folder(tmp_path / "theirs"))


def test_a_plain_run_in_a_foreign_folder_caches_in_the_users_folder(tmp_path, fake_ndk_env):
    scenarios = foreign_folder(tmp_path / "scenarios")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "ndk.testing", str(scenarios)]
    first = subprocess.run(command, cwd=scenarios, env=env, capture_output=True, text=True,
                           timeout=120)
    assert first.returncode == 1, first.stdout + first.stderr
    assert not (scenarios / ".pytest_cache").exists()
    cache = tmp_path / "cache" / "ndk-harness" / "pytest"
    assert (cache / "v" / "cache" / "lastfailed").is_file()
    # --lf reads it back: the run knows which scenario failed last time.
    again = subprocess.run([c for c in command if c != "-q"] + ["--lf"], cwd=scenarios, env=env, capture_output=True,
                           text=True, timeout=120)
    assert "run-last-failure: rerun previous 1 failure" in again.stdout, again.stdout
