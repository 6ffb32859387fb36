"""`ndk perf`: the front end runs the ndk_perf helper and formats its JSON (python/ndk/perf.py).

Only shapes and fields are checked (tiny iteration counts); no timing is asserted.
"""

import json
import subprocess
import sys

import pytest

from ndk import perf


def helper_or_skip():
    try:
        return perf.find_helper()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("test", perf.LATENCY_TESTS + perf.BANDWIDTH_TESTS)  # sized tests
def test_every_test_runs_and_formats(test):
    helper_or_skip()
    result = perf.run_helper(test, perf.helper_options(size=64, iters=200))
    assert result["test"] == test and result["size"] == 64
    text = perf.format_result(result)
    if test in perf.LATENCY_TESTS:
        lat = result["latency"]
        assert lat["min_us"] <= lat["median_us"] <= lat["p99_us"] <= lat["p999_us"]
        assert "t_typical[usec]" in text and "99.9% percentile[usec]" in text  # perftest
    else:
        assert result["peak_mb_s"] > 0 and result["msg_rate_mpps"] > 0
        assert "BW peak[MB/sec]" in text and "MsgRate[Mpps]" in text
        # exactly --iters requests, 64 outstanding (not a multiple of 200); the peak is the
        # best run of consecutive requests, and the whole run is one of them (the average),
        # so it is never below it (up to the 6 digits the helper prints)
        assert result["iters"] == 200 and result["inflight"] == 64
        assert result["peak_mb_s"] >= result["avg_mb_s"] * (1 - 1e-5)


def test_cli_json_and_sizes():
    helper_or_skip()
    done = subprocess.run([sys.executable, "-m", "ndk", "perf", "write_lat", "-s", "8", "-s", "4k",
                           "--iters", "100", "--json"], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert [r["size"] for r in results] == [8, 4096]


def test_sizes_parse():
    assert perf.parse_size("64") == 64
    assert perf.parse_size("4k") == 4096
    assert perf.parse_size("1MiB") == 1 << 20


def test_a_failing_helper_is_a_clear_error(monkeypatch, capsys):
    monkeypatch.setenv("NDK_PERF", "/nonexistent/ndk_perf")
    with pytest.raises((FileNotFoundError, RuntimeError, OSError)):
        perf.run_helper("send_lat")
