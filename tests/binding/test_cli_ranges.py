"""The ranges of the command lines: ``ndk walk`` and its helper ``ndk_walk``, ``ndk_stress``,
``ndk perf --plot``.  A value out of range (a negative count, no threads, a time that cannot
pass, a folder that does not exist) is refused before anything runs: exit code 2 and a message
naming the option, never a traceback, a run, or a file written.  A provider that does not load
is an error of the environment (one line, exit 2), as for ``ndk conformance``.
(``ndk_perf`` and ``ndk perf``'s counts: test_perf_arguments.py.)"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ndk import walk

try:
    from ndk import _build_info

    BIN = Path(_build_info.BUILD_DIR) / "bin" if _build_info.BUILD_DIR else None
except ImportError:  # an installed package: the programs are on PATH
    BIN = None


def program(name):
    path = BIN / name if BIN else None
    if path is None or not path.is_file():
        pytest.skip(f"{name} is not built in this tree (run from a build: PYTHONPATH=build/python)")
    return str(path)


def run(arguments, cwd=None):
    # PYTHONPATH made absolute: a run in another folder imports the same package.
    path = os.pathsep.join(os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(
        os.pathsep) if p)
    done = subprocess.run(arguments, capture_output=True, text=True, timeout=120, check=False,
                          cwd=cwd, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
                                            PYTHONPATH=path))
    return done.returncode, done.stdout, done.stderr


def ndk(*arguments, cwd=None):
    return run([sys.executable, "-m", "ndk", *arguments], cwd=cwd)


WALK_REFUSED = [
    (["--ops", "-5"], "--ops"),
    (["--ops", "0"], "--ops"),
    (["--threads", "0"], "--threads"),
    (["--threads", "17"], "--threads"),
    (["--seconds", "-1"], "--seconds"),
    (["--seconds", "0"], "--seconds"),
    (["--seconds", "nan"], "--seconds"),
    (["--seconds", "inf"], "--seconds"),
    (["--shrink-seconds", "0"], "--shrink-seconds"),
    (["--seed", "-1"], "--seed"),
    (["--seed", "x"], "--seed"),
]


@pytest.mark.parametrize("arguments,option", WALK_REFUSED,
                         ids=[" ".join(a) for a, _ in WALK_REFUSED])
def test_ndk_walk_refuses_a_value_out_of_range(arguments, option, tmp_path):
    code, out, err = ndk("walk", "--out", str(tmp_path), *arguments)
    assert code == 2, out + err
    assert f"argument {option}:" in err and "Traceback" not in err
    assert out == "" and list(tmp_path.iterdir()) == []


def test_ndk_walk_of_a_provider_that_does_not_load_is_an_environment_error(tmp_path):
    code, out, err = ndk("walk", "--provider", "nonexistent", "--ops", "10", "--out",
                         str(tmp_path), cwd=tmp_path)
    assert code == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ndk walk: provider 'nonexistent' does not load")
    assert "FAILED" not in out and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no trace, no scenario


def test_ndk_walk_out_into_a_folder_that_does_not_exist_is_refused(tmp_path):
    missing = tmp_path / "nonexistent" / "dir"
    code, out, err = ndk("walk", "--ops", "10", "--out", str(missing), cwd=tmp_path)
    assert code == 2 and out == ""
    assert "argument --out:" in err and "not a folder that exists" in err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no folder made, nothing written


def test_ndk_walk_function_refuses_a_folder_that_does_not_exist(tmp_path):
    missing = tmp_path / "nonexistent"
    with pytest.raises(FileNotFoundError, match="not a folder that exists"):
        walk.walk(ops=10, out=missing)
    assert not missing.exists()


def test_ndk_walk_helper_refuses_an_out_folder_that_does_not_exist(tmp_path):
    missing = tmp_path / "nonexistent"
    code, out, err = run([walk.find_helper(), "run", "--ops", "10", "--out", str(missing)])
    assert code == 2 and out == ""
    assert err.startswith(f"ndk_walk: --out {missing}: not a folder that exists")
    assert list(tmp_path.iterdir()) == []


HELPER_REFUSED = [
    (["--ops", "-5"], "--ops -5"),
    (["--ops", "0"], "--ops 0"),
    (["--threads", "0"], "--threads 0"),
    (["--threads", "-1"], "--threads -1"),
    (["--seconds", "-1"], "--seconds -1"),
    (["--seconds", "0"], "--seconds 0"),
    (["--seed", "-1"], "--seed -1"),
    (["--seed", "18446744073709551616"], "--seed 18446744073709551616"),
    (["--hang-seconds", "nan"], "--hang-seconds nan"),
]


@pytest.mark.parametrize("arguments,named", HELPER_REFUSED,
                         ids=[" ".join(a) for a, _ in HELPER_REFUSED])
def test_ndk_walk_helper_refuses_a_value_out_of_range(arguments, named, tmp_path):
    helper = walk.find_helper()
    code, out, err = run([helper, "run", "--out", str(tmp_path), *arguments])
    assert code == 2 and out == ""
    assert err.startswith(f"ndk_walk: {named}: expected")
    assert list(tmp_path.iterdir()) == []


STRESS_REFUSED = [["--seconds", "0"], ["--seconds", "-1"], ["--seconds", "inf"],
                  ["--seconds", "nan"], ["--drain-seconds", "0"], ["--threads", "0"]]


@pytest.mark.parametrize("arguments", STRESS_REFUSED, ids=[" ".join(a) for a in STRESS_REFUSED])
def test_ndk_stress_refuses_a_value_out_of_range(arguments):
    code, out, err = run([program("ndk_stress"), *arguments])
    assert code == 2 and out == ""
    assert err.startswith(f"ndk_stress: bad argument {' '.join(arguments)}")


def test_ndk_perf_plot_into_a_folder_that_does_not_exist_is_refused(tmp_path):
    missing = tmp_path / "nonexistent" / "dir"
    code, out, err = ndk("perf", "send_lat", "--plot", str(missing / "x.png"))
    assert code == 2 and out == ""
    assert "argument --plot:" in err and "does not exist" in err and "Traceback" not in err
    assert not missing.parent.exists()  # no folder made
