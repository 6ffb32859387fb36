"""Argument checking at the edge: ``ndk_perf`` (bench/ndk_perf.cpp) and ``ndk perf``
(python/ndk/perf.py).

Every bad argument is one line on stderr naming the argument (and its valid range, where it
has one) and exit code 2, as argparse does; never a signal, never a run with a wrapped value.
The helper is the one ``ndk perf`` runs (perf.find_helper: $NDK_PERF, else the build tree's
bin/ndk_perf).
"""

import re
import subprocess
import sys

import pytest

from ndk import cli, perf

ITERS = "1..100000000"
WARMUP = "0..100000000"
SIZE = "1..1073741824"
INFLIGHT = "1..1024"


@pytest.fixture(scope="module")
def helper():
    try:
        return perf.find_helper()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))


def run_helper(helper, *arguments):
    return subprocess.run([helper, *arguments], capture_output=True, text=True, timeout=60,
                          check=False)


# (class, arguments, what stderr must name)
HELPER_CASES = [
    ("zero", ["send_lat", "--iters", "0"], ["--iters", ITERS]),
    ("zero", ["send_bw", "--inflight", "0"], ["--inflight", INFLIGHT]),
    ("zero", ["write_lat", "--size", "0"], ["--size", SIZE]),
    ("zero", ["poll_rate", "--batch", "0"], ["--batch", "1..4194304"]),
    ("negative", ["send_lat", "--warmup", "-1"], ["--warmup", WARMUP]),
    ("negative", ["send_bw", "--size", "-5"], ["--size", SIZE]),
    ("negative", ["send_bw", "--inflight", "-1"], ["--inflight", INFLIGHT]),
    ("too large", ["send_bw", "--inflight", "1025"], ["--inflight", INFLIGHT]),
    ("too large", ["read_lat", "--size", "1073741825"], ["--size", SIZE]),
    ("too large", ["memcpy", "--offset", "4096"], ["--offset", "0..4095"]),
    ("too large", ["scale", "--cq-depth", "10", "--cq-fill", "11"], ["--cq-fill", "--cq-depth"]),
    ("wraps", ["send_lat", "--iters", "18446744073709551617"], ["--iters", ITERS]),
    ("wraps", ["send_lat", "--iters", "99999999999999999999999"], ["--iters", ITERS]),
    ("not a number", ["send_lat", "--iters", "abc"], ["--iters", ITERS]),
    ("not a number", ["send_lat", "--iters", ""], ["--iters", ITERS]),
    ("not a number", ["send_lat", "--iters", "1e3"], ["--iters", ITERS]),
    ("not a number", ["send_lat", "--iters", "+5"], ["--iters", ITERS]),
    ("trailing garbage", ["send_lat", "--iters", "100x"], ["--iters", ITERS]),
    ("trailing garbage", ["send_bw", "--size", "64k"], ["--size", SIZE]),
    ("trailing garbage", ["send_lat", "--iters=10 "], ["--iters", ITERS]),
    ("missing value", ["send_lat", "--iters"], ["--iters", ITERS]),
    ("missing value", ["send_lat", "--iters", "--size", "64"], ["--iters", ITERS]),
    ("unknown option", ["send_lat", "--bogus", "1"], ["--bogus", "--iters"]),
    ("unknown option", ["send_lat", "--inflight", "4"], ["--inflight"]),
    ("unknown option", ["send_lat", "iters", "5"], ["'iters'"]),
    ("unknown option", ["send_lat", "--threads", "5"], ["'5'"]),
    ("unknown option", ["send_lat", "--threads=1"], ["--threads"]),
    ("unknown option", ["bogus"], ["'bogus'", "send_lat"]),
    ("bad choice", ["send_lat", "--progress", "manul"], ["--progress", "auto|manual"]),
    ("bad choice", ["scale", "--what", "mrs,,qps"], ["--what", "mrs,qps,cq"]),
    ("conflict", ["send_lat", "--threads", "--progress", "manual"], ["--threads", "manual"]),
]


@pytest.mark.parametrize("kind, arguments, named", HELPER_CASES,
                         ids=[f"{c[0]}:{' '.join(c[1])}" for c in HELPER_CASES])
def test_helper_refuses_a_bad_argument(helper, kind, arguments, named):
    done = run_helper(helper, *arguments)
    assert done.returncode == 2, (done.returncode, done.stderr)  # not a signal (< 0), not a run
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("ndk_perf")
    for text in named:
        assert text in lines[0], (text, lines[0])


@pytest.mark.parametrize("arguments", [
    ["send_lat", "--size", "1", "--iters", "1", "--warmup", "0"],
    ["send_lat", "--size=1", "--iters=1", "--warmup=0", "--threads"],
    ["read_lat", "--size", "1", "--iters", "1", "--warmup", "0", "--progress", "manual"],
    ["write_bw", "--size", "1", "--iters", "1", "--inflight", "1"],
    ["send_bw", "--size", "8", "--iters", "8", "--inflight", "1024"],
    ["memcpy", "--size", "1", "--iters", "1", "--offset", "4095"],
    ["poll_rate", "--batch", "1", "--count", "1", "--iters", "1"],
    ["create_close", "--iters", "1"],
    ["scale", "--what", "cq,qps", "--qps", "1", "--cq-depth", "4", "--cq-fill", "4"],
])
def test_helper_runs_at_the_edges_of_its_ranges(helper, arguments):
    done = run_helper(helper, *arguments)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("{")


def test_helper_help_lists_the_ranges_perf_checks(helper):
    done = run_helper(helper, "--help")
    assert done.returncode == 0 and done.stderr == ""
    text = done.stdout
    for name, (lo, hi) in (("size", perf.SIZE_RANGE), ("iters", perf.ITERS_RANGE),
                           ("warmup", perf.WARMUP_RANGE), ("inflight", perf.INFLIGHT_RANGE)):
        assert f"--{name} {lo}..{hi}" in text, name
    assert run_helper(helper).returncode == 2  # no test: the usage on stderr


# --- ndk perf: the same classes, refused by argparse before the helper starts ---------------

PERF_CASES = [
    ("zero", ["send_lat", "--iters", "0"], ["--iters", ITERS]),
    ("zero", ["send_bw", "--inflight", "0"], ["--inflight", INFLIGHT]),
    ("zero", ["send_lat", "--size", "0"], ["--size", SIZE]),
    ("negative", ["send_lat", "--warmup", "-1"], ["--warmup", WARMUP]),
    ("negative", ["send_bw", "--size", "-5"], ["--size", SIZE]),
    ("too large", ["send_bw", "--inflight", "1025"], ["--inflight", INFLIGHT]),
    ("too large", ["send_lat", "--size", "2g"], ["--size", SIZE]),
    ("too large", ["send_lat", "--iters", "18446744073709551617"], ["--iters", ITERS]),
    ("not a number", ["send_lat", "--iters", "abc"], ["--iters", ITERS]),
    ("not a number", ["send_lat", "--iters", "1e3"], ["--iters", ITERS]),
    ("not a number", ["send_lat", "--size", ""], ["--size", SIZE]),
    ("trailing garbage", ["send_lat", "--iters", "100x"], ["--iters", ITERS]),
    ("trailing garbage", ["send_lat", "--size", "4x"], ["--size", SIZE]),
    ("missing value", ["send_lat", "--iters"], ["--iters"]),
    ("unknown option", ["send_lat", "--bogus"], ["--bogus"]),
    ("unknown option", ["send_lat", "--inflight", "4"], ["--inflight", "bandwidth"]),
    ("unknown option", ["send_bw", "--warmup", "4"], ["--warmup", "latency"]),
    ("unknown option", ["write_lat", "--threads"], ["--threads", "send_lat"]),
    ("unknown option", ["bogus"], ["bogus"]),
    ("conflict", ["send_lat", "--threads", "--progress", "manual"], ["--threads", "manual"]),
]


@pytest.mark.parametrize("kind, arguments, named", PERF_CASES,
                         ids=[f"{c[0]}:{' '.join(c[1])}" for c in PERF_CASES])
def test_ndk_perf_refuses_a_bad_argument_before_the_helper(kind, arguments, named, monkeypatch,
                                                           capsys):
    def no_helper(*args, **kwargs):
        raise AssertionError("the helper started")

    monkeypatch.setattr(perf, "run_helper", no_helper)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["perf", *arguments])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    last = captured.err.strip().splitlines()[-1]
    assert re.match(r"ndk( perf)?: error: ", last), captured.err
    for text in named:
        assert text in last, (text, last)


def test_ndk_perf_command_exits_2_without_a_traceback():
    done = subprocess.run([sys.executable, "-m", "ndk", "perf", "send_bw", "--inflight", "0"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "ndk perf: error: argument --inflight: 0 is out of range (valid: 1..1024)")


def test_ndk_perf_passes_the_edges_of_its_ranges(monkeypatch):
    seen = []
    monkeypatch.setattr(perf, "run_helper", lambda test, options, **_: seen.append(options) or
                        {"test": test, "size": 1})
    assert cli.main(["perf", "send_lat", "-s", "1", "-s", "1g", "-n", "100000000",
                     "--warmup", "0", "--json"]) == 0
    assert seen == [["--size", "1", "--iters", "100000000", "--warmup", "0"],
                    ["--size", str(1 << 30), "--iters", "100000000", "--warmup", "0"]]
    seen.clear()
    assert cli.main(["perf", "read_bw", "--inflight", "1024", "-n", "1", "--json"]) == 0
    assert seen == [["--size", "65536", "--iters", "1", "--inflight", "1024"]]
