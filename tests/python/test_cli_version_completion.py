"""``ndk --version`` and the bash completion's way into ``ndk`` (ndk.cli; the .deb installs the
completion script, core/packaging/CMakeLists.txt), in-process and in subprocesses against the fake ndk."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ndk import cli


def test_version_prints_the_package_version(monkeypatch, capsys):
    monkeypatch.setattr(sys.modules["ndk"], "__version__", "9.8.7", raising=False)
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == "ndk 9.8.7\n"


def _complete(line: str, env: dict[str, str], answers) -> subprocess.CompletedProcess[str]:
    """Run ``ndk`` as the completion script does for the command line ``line``, cursor at its
    end; argcomplete writes its answers to the file ``answers`` (its tempfile mode)."""
    env = dict(os.environ, **env, _ARGCOMPLETE="1", COMP_LINE=line, COMP_POINT=str(len(line)),
               COMP_TYPE="9", _ARGCOMPLETE_SUPPRESS_SPACE="0",
               _ARGCOMPLETE_STDOUT_FILENAME=str(answers))
    return subprocess.run([sys.executable, "-m", "ndk", "providers"], env=env, text=True,
                          capture_output=True, timeout=60)


def test_completion_of_a_subcommand_comes_from_the_parser(fake_ndk_env, tmp_path):
    pytest.importorskip("argcomplete", reason="python3-argcomplete is not installed")
    answers = tmp_path / "answers"
    done = _complete("ndk conf", {}, answers)
    assert done.returncode == 0, done.stderr
    assert answers.read_text().split() == ["conformance"]
    assert done.stdout == ""  # the command itself did not run


def test_completion_without_argcomplete_runs_nothing(fake_ndk_env, tmp_path):
    # The completion script runs `ndk` with its output muted: without python3-argcomplete the
    # command must exit, not run (`ndk conformance<TAB>` would run the whole suite).
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "argcomplete.py").write_text('raise ImportError("python3-argcomplete removed")\n')
    path = os.pathsep.join([str(blocked), os.environ["PYTHONPATH"]])
    done = _complete("ndk pro", {"PYTHONPATH": path}, tmp_path / "answers")
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "answers").exists()
