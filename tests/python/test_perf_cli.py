"""``ndk perf`` for every ndk_perf test: cacheline, msg_rate and poll_rate beside the latency and
bandwidth tests, and the options --seconds, --options, --connections, --batch, --count,
--provider, --addresses; perftest's columns, one header over several sizes, --iters exact.

Arguments are checked before the helper starts (argparse's one line, exit 2); the tables are
checked on results shaped as bench/ndk_perf.cpp prints them (captured from a real run); the
arguments reaching the helper through a stand-in that records them; and each new test once
through the real helper, when it is built (tiny counts: only shapes, no timing)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ndk import cli, perf

# Captured from build/bin/ndk_perf on a loaded 2-core machine (only shapes matter): cacheline
# --iters 2000 --seconds 10; msg_rate --connections 2 --batch 16 --iters 2000, whose second
# thread finished before the first got a core; poll_rate --count 1024 --batch 64 --iters 3.
CACHELINE = json.loads(
    '{"test": "cacheline", "iters": 2000, "mode": "threads", "sample": "half round trip", '
    '"latency": {"samples": 2000, "min_us": 0.135, "median_us": 0.2455, "avg_us": 662.284, '
    '"p99_us": 8014.07, "p999_us": 12034.1, "max_us": 21060.8}}')
MSG_RATE = json.loads(
    '{"test": "msg_rate", "connections": 2, "size": 8, "batch": 16, "iters": 2000, '
    '"op": "write", "options": "", "aggregate_mops": 7.62937, "ops": 2000, '
    '"window_s": 0.000262145, "connection": [{"ops": 0, "seconds": 8e-08, "mops": 0}, '
    '{"ops": 2000, "seconds": 0.000262145, "mops": 7.62937}]}')
POLL_RATE = json.loads(
    '{"test": "poll_rate", "batch": 64, "count": 1024, "iters": 3, '
    '"poll_ns_per_completion": 4.52018, "completions_per_s": 2.2123e+08, '
    '"post_ns_per_write": 1532.68, "post_poll_per_s": 650534, '
    '"best_completions_per_s": 2.71834e+08, "best_post_poll_per_s": 7.36463e+06}')
# send_lat --threads stopped by --seconds, with knob lines (figures made up, shape as printed)
SEND_LAT_BOUNDED = {"test": "send_lat", "size": 64, "iters": 100000, "mode": "threads",
                    "progress": "auto", "options": "transport=inproc", "sample": "half round trip",
                    "latency": {"samples": 1234, "min_us": 0.9, "median_us": 1.2, "avg_us": 3.5,
                                "p99_us": 40.1, "p999_us": 900.5, "max_us": 2000.25}}
# write_bw --processes over transport=tcp: the target memory in a child process (captured from
# write_bw --processes --size 1048576 --iters 256 --options transport=tcp, loaded machine)
WRITE_BW_PROCESSES = json.loads(
    '{"test": "write_bw", "size": 1048576, "iters": 256, "inflight": 64, "mode": "processes", '
    '"options": "transport=tcp", "peak_mb_s": 154.929, "avg_mb_s": 141.426, '
    '"avg_gb_s": 0.141426, "peak_gb_s": 0.154929, "msg_rate_mpps": 0.000134874}')


def error_line(capsys) -> str:
    return capsys.readouterr().err.strip().splitlines()[-1]


# --- arguments, checked before the helper starts ------------------------------------------

@pytest.mark.parametrize("arguments, message", [
    # ranges, as ndk_perf accepts them
    (["msg_rate", "--connections", "0"],
     "argument --connections: 0 is out of range (valid: 1..64)"),
    (["msg_rate", "--connections", "65"],
     "argument --connections: 65 is out of range (valid: 1..64)"),
    (["msg_rate", "--batch", "1025"],
     "argument --batch: 1025 is out of range for msg_rate (valid: 1..1024)"),
    (["poll_rate", "--batch", "0"], "argument --batch: 0 is out of range for poll_rate "
                                    "(valid: 1..4194304)"),
    (["poll_rate", "--batch", "4x"], "argument --batch: '4x' is not a whole number (valid: "
                                     "msg_rate: 1..1024, poll_rate: 1..4194304)"),
    (["poll_rate", "--count", "4194305"],
     "argument --count: 4194305 is out of range (valid: 1..4194304)"),
    (["cacheline", "--seconds", "3601"],
     "argument --seconds: 3601 is out of range (valid: 0..3600)"),
    (["send_lat", "--seconds", "-1"], "argument --seconds: -1 is out of range (valid: 0..3600)"),
    (["cacheline", "--iters", "0"], "argument --iters/-n: 0 is out of range (valid: 1..100000000)"),
    (["msg_rate", "--size", "2g"], "argument --size/-s: 2g is out of range (valid: 1..1073741824)"),
    # --options: knob lines, without ndk_perf's own knobs
    (["write_lat", "--options", ""], "argument --options: expected knob lines (key=value;...), "
                                     "not nothing"),
    (["msg_rate", "--options", "transport=inproc;address=10.0.0.1"],
     "argument --options: address is ndk_perf's to set (each adapter has its own)"),
    (["send_lat", "--options", " progress = manual"],
     "argument --options: progress is ndk_perf's to set (--progress, where the test has it)"),
    # options the test does not take
    (["cacheline", "--size", "64"], "argument --size: only for the latency tests, the "
                                    "bandwidth tests and msg_rate, not cacheline"),
    (["poll_rate", "--all"], "argument --all: only for the latency tests, the bandwidth tests "
                             "and msg_rate, not poll_rate"),
    (["cacheline", "--options", "transport=inproc"],
     "argument --options: not for cacheline (it opens no adapter)"),
    (["cacheline", "--progress", "manual"], "argument --progress: only for the latency tests, "
                                            "not cacheline"),
    (["cacheline", "--threads"], "argument --threads: only for send_lat, not cacheline"),
    (["write_lat", "--processes"], "argument --processes: only for send_lat, write_bw and "
                                   "read_bw, not write_lat"),
    (["write_lat", "--poll", "yield"], "argument --poll: only for the bandwidth tests and "
                                       "send_lat, not write_lat"),
    (["send_bw", "--poll", "sleep"], "argument --poll: invalid choice: 'sleep' *"),
    (["send_lat", "--processes", "--threads"],
     "argument --processes: not with --threads (the pong is in one place)"),
    (["write_bw", "--seconds", "5"], "argument --seconds: only for the latency tests and "
                                     "cacheline, not write_bw"),
    (["msg_rate", "--warmup", "5"], "argument --warmup: only for the latency tests and "
                                    "cacheline, not msg_rate"),
    (["msg_rate", "--inflight", "8"], "argument --inflight: only for the bandwidth tests, "
                                      "not msg_rate"),
    (["poll_rate", "--connections", "2"], "argument --connections: only for msg_rate, "
                                          "not poll_rate"),
    (["msg_rate", "--count", "2"], "argument --count: only for poll_rate, not msg_rate"),
    (["send_lat", "--batch", "2"], "argument --batch: only for msg_rate and poll_rate, "
                                   "not send_lat"),
    (["poll_rate", "--plot", "p.png"], "argument --plot: only for the latency tests, the "
                                       "bandwidth tests and cacheline, not poll_rate"),
    (["bogus_lat"], "argument test: invalid choice: 'bogus_lat' *"),
    # --processes with a provider that reaches only its own process (ndk._peer.REACH)
    (["send_lat", "--processes"], "argument --processes: soft with transport=inproc reaches "
                                  "only adapters of its own process; use --provider soft:shm "
                                  "or soft:tcp"),
    (["write_bw", "--processes", "--provider", "soft:inproc"],
     "argument --processes: soft:inproc with transport=inproc reaches only adapters of its own "
     "process; use --provider soft:shm or soft:tcp"),
    (["send_lat", "--processes", "--provider", "loop"],
     "argument --processes: loop reaches only adapters of its own process"),
    (["send_lat", "--processes", "--provider", "soft:tcp", "--options", "transport=inproc"],
     "argument --processes: soft:tcp with transport=inproc reaches only adapters of its own "
     "process; use --provider soft:shm or soft:tcp"),
    # --provider, --addresses
    (["cacheline", "--provider", "loop"], "argument --provider: not for cacheline (it opens no "
                                          "adapter)"),
    (["write_lat", "--provider", "loop", "--progress", "manual"],
     "argument --progress: the soft provider's knob, not loop's"),
    (["send_lat", "--addresses", "10.0.0.1"],
     "argument --addresses: '10.0.0.1' is not CLIENT,SERVER (two IPv4 addresses)"),
    (["send_lat", "--addresses", "10.0.0.1,fe80::1"],
     "argument --addresses: '10.0.0.1,fe80::1' is not CLIENT,SERVER (two IPv4 addresses)"),
])
def test_bad_arguments_are_one_line_and_exit_2_before_the_helper(arguments, message, capsys,
                                                                 monkeypatch):
    monkeypatch.setenv("NDK_PERF", "/nonexistent/ndk_perf")  # never reached
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["perf", *arguments])
    assert exit_info.value.code == 2
    line = error_line(capsys)
    from fnmatch import fnmatchcase

    assert fnmatchcase(line, f"ndk perf: error: {message}"), line


def test_check_options_without_a_parser_is_the_same_one_line(capsys):
    parser = cli.build_parser()
    args = parser.parse_args(["perf", "cacheline"])
    del args.perf_parser  # as a caller that built its own namespace
    args.seconds, args.knobs = None, "transport=inproc"
    with pytest.raises(SystemExit) as exit_info:
        perf.check_options(args)
    assert exit_info.value.code == 2
    assert error_line(capsys) == ("ndk perf: error: argument --options: not for cacheline "
                                  "(it opens no adapter)")


def test_help_lists_every_test_and_option(capsys):
    with pytest.raises(SystemExit):
        cli.main(["perf", "--help"])
    text = capsys.readouterr().out
    for word in [*perf.TESTS, "--seconds", "--options", "--connections", "--batch", "--count",
                 "aggregate and per-connection", "msg_rate (1..1024), poll_rate (1..4194304)"]:
        assert word in text, word
    assert perf.__doc__ is not None
    for word in ["cacheline", "msg_rate", "poll_rate", "--seconds", "--options"]:
        assert word in perf.__doc__, word


# --- the tables --------------------------------------------------------------------------

def rows(text: str) -> list[list[str]]:
    """The table's lines after its title, split into words, rules left out."""
    lines = text.splitlines()
    rules = [i for i, line in enumerate(lines) if set(line) == {"-"}]
    return [line.split() for line in lines[rules[1] + 1:] if set(line) != {"-"}]


def title(text: str) -> str:
    """The table's title, its wrapped lines joined again."""
    lines = text.splitlines()
    end = next(i for i in range(1, len(lines)) if set(lines[i]) == {"-"})
    return " ".join(line.strip() for line in lines[1:end])


# ib_send_lat's header, split into words (two of its columns are two words each).
LATENCY_HEAD = ["#bytes", "#iterations", "t_min[usec]", "t_max[usec]", "t_typical[usec]",
                "t_avg[usec]", "t_stdev[usec]", "99%", "percentile[usec]", "99.9%",
                "percentile[usec]"]
BANDWIDTH_HEAD = ["#bytes", "#iterations", "BW", "peak[MB/sec]", "BW", "average[MB/sec]",
                  "MsgRate[Mpps]"]


def test_cacheline_prints_the_latency_columns_without_a_size():
    text = perf.format_result(CACHELINE)
    assert "cacheline: one cache line bounced between two busy-waiting threads" in title(text)
    head, line = rows(text)
    assert head == LATENCY_HEAD
    # two decimals, as perftest prints them; t_stdev "-": a helper from before it measured it
    assert line == ["-", "2000", "0.14", "21060.80", "0.25", "662.28", "-", "8014.07",
                    "12034.10"]
    # the same columns as send_lat's, to compare the two as they stand
    def head_line(table: str) -> str:
        return next(line for line in table.splitlines() if "#bytes" in line)

    assert head_line(text) == head_line(perf.format_result(SEND_LAT_BOUNDED))


def test_a_run_over_several_sizes_is_one_table_with_one_header():
    """As perftest -a prints it: the header once, then a row per size, the sizes in the order
    run; the same for the bandwidth columns of ib_write_bw."""
    sizes = [8, 64, 4096]
    latency = [dict(SEND_LAT_BOUNDED, size=n, provider="loop",
                    latency=dict(SEND_LAT_BOUNDED["latency"], stdev_us=1.5, samples=100000))
               for n in sizes]
    text = perf.format_results(latency)
    table = rows(text)
    assert table[0] == LATENCY_HEAD and [line[0] for line in table[1:]] == ["8", "64", "4096"]
    assert table[1] == ["8", "100000", "0.90", "2000.25", "1.20", "3.50", "1.50", "40.10",
                        "900.50"]
    assert sum("#bytes" in line for line in text.splitlines()) == 1
    assert title(text).startswith("send_lat: loop provider, raw NDK ABI, threads")
    bandwidth = perf.format_results([dict(WRITE_BW_PROCESSES, size=n) for n in sizes])
    table = rows(bandwidth)
    assert table[0] == BANDWIDTH_HEAD
    assert table[1:] == [[str(n), "256", "154.93", "141.43", "0.000135"] for n in sizes]


def test_a_bounded_latency_run_says_so_and_names_its_knobs():
    text = perf.format_result(SEND_LAT_BOUNDED)
    assert title(text) == ("send_lat: soft provider, raw NDK ABI, threads, progress=auto; "
                           "sample = half round trip; options: transport=inproc stopped by "
                           "--seconds: 1234 of 100000 samples taken")
    assert rows(text)[1][:2] == ["64", "1234"]
    assert "stopped by" not in perf.format_result(CACHELINE)  # every sample taken


def test_msg_rate_prints_the_aggregate_and_each_connection():
    text = perf.format_result(MSG_RATE)
    assert ("msg_rate: soft provider, raw NDK ABI, RDMA write, 2 connections, a thread each"
            in title(text))
    table = rows(text)
    assert table[0] == ["#bytes", "#connections", "#batch", "#ops", "time[sec]",
                        "MsgRate[Mops/sec]"]
    assert table[1] == ["8", "2", "16", "2000", "0.000262", "7.629370"]
    assert table[2] == ["#connection", "#ops", "time[sec]", "MsgRate[Mops/sec]"]
    assert [r[0] for r in table[3:]] == ["0", "1"]
    assert [r[1:] for r in table[3:]] == [["0", "0.000000", "0.000000"],
                                          ["2000", "0.000262", "7.629370"]]
    one = dict(MSG_RATE, connections=1, connection=MSG_RATE["connection"][:1])
    assert "RDMA write, one thread" in title(perf.format_result(one))


def test_poll_rate_prints_poll_and_post_plus_poll_rates():
    text = perf.format_result(POLL_RATE)
    assert "a CQ filled with 1024 RDMA write completions, drained 64 at a time" in title(text)
    head, poll, both = rows(text)
    assert head == ["#count", "#batch", "#iterations", "what", "t_avg[nsec]", "Rate",
                    "avg[M/sec]", "Rate", "best[M/sec]"]
    assert poll == ["1024", "64", "3", "poll", "4.52", "221.230", "271.834"]
    # post + poll per completion: the two averages added, its rate their inverse
    assert both == ["post+poll", "1537.20", "0.651", "7.365"]
    assert 1e3 / 1537.20 == pytest.approx(0.651, rel=1e-3)


def test_a_bandwidth_run_into_another_process_says_so():
    text = perf.format_result(WRITE_BW_PROCESSES)
    assert "write_bw: soft provider, raw NDK ABI, the target in another process, 64 in " \
           "flight; options: transport=tcp" in " ".join(text.split()), text
    assert "one thread" in perf.format_result({**WRITE_BW_PROCESSES, "mode": "one_thread"})
    assert "in flight, poll=yield" in perf.format_result({**WRITE_BW_PROCESSES, "poll": "yield"})


def test_every_table_is_ruled_and_an_unknown_result_is_its_json():
    for result in (CACHELINE, MSG_RATE, POLL_RATE, SEND_LAT_BOUNDED, WRITE_BW_PROCESSES):
        lines = perf.format_result(result).splitlines()
        assert lines[0] == lines[-1] and set(lines[0]) == {"-"}
        assert all(len(line) <= len(lines[0]) for line in lines)
    other = {"test": "memcpy", "avg_gb_s": 9.5}
    assert json.loads(perf.format_result(other)) == other


# --- what reaches the helper, against a stand-in ------------------------------------------

STAND_IN = """\
#!{python}
import json, sys
with open({log!r}, "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
if "--samples" in sys.argv:  # as ndk_perf writes them: ns, one per line
    with open(sys.argv[sys.argv.index("--samples") + 1], "w") as f:
        f.write("".join(f"{{40.0 + i % 50 + (20000.0 if i % 700 == 0 else 0)}}\\n"
                        for i in range(2000)))
result = {results!r}[sys.argv[1]]
if "--size" in sys.argv:  # each size's result says its size, as ndk_perf's do
    result["size"] = int(sys.argv[sys.argv.index("--size") + 1])
print(json.dumps(result))
"""


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    log = tmp_path / "argv.jsonl"
    path = tmp_path / "ndk_perf"
    results = {"cacheline": CACHELINE, "msg_rate": MSG_RATE, "poll_rate": POLL_RATE,
               "send_lat": SEND_LAT_BOUNDED, "write_bw": WRITE_BW_PROCESSES}
    path.write_text(STAND_IN.format(python=sys.executable, log=str(log), results=results))
    path.chmod(0o755)
    monkeypatch.setenv("NDK_PERF", str(path))

    def calls() -> list[list[str]]:
        return [json.loads(line) for line in log.read_text().splitlines()]

    return calls


@pytest.mark.parametrize("arguments, argv", [
    (["cacheline", "--iters", "2000", "--warmup", "0", "--seconds", "5"],
     ["cacheline", "--iters", "2000", "--warmup", "0", "--seconds", "5"]),
    (["msg_rate", "--connections", "2", "--batch", "16", "-n", "2000",
      "--options", "transport=inproc"],
     ["msg_rate", "--iters", "2000", "--connections", "2", "--batch", "16",
      "--options", "transport=inproc"]),
    (["poll_rate", "--count", "1024", "--batch", "64", "--iters", "3"],
     ["poll_rate", "--iters", "3", "--batch", "64", "--count", "1024"]),
    (["send_lat", "--threads", "--seconds", "2", "--options", "transport=inproc"],
     ["send_lat", "--size", "64", "--seconds", "2", "--options", "transport=inproc",
      "--threads"]),
    (["send_lat", "--processes", "--options", "transport=shm"],
     ["send_lat", "--size", "64", "--options", "transport=shm", "--processes"]),
    (["write_bw", "-s", "1m", "--processes", "--poll", "yield", "--options", "transport=tcp"],
     ["write_bw", "--size", "1048576", "--poll", "yield", "--options", "transport=tcp",
      "--processes"]),
    # soft's tcp transport yields unless told to spin (perf.default_poll); --provider reaches
    # the helper
    (["send_lat", "--processes", "--provider", "soft:tcp"],
     ["send_lat", "--size", "64", "--poll", "yield", "--provider", "soft:tcp", "--processes"]),
    (["send_lat", "--processes", "--provider", "soft:tcp", "--poll", "spin"],
     ["send_lat", "--size", "64", "--poll", "spin", "--provider", "soft:tcp", "--processes"]),
    (["write_bw", "--provider", "verbs:rxe0", "--addresses", "10.0.0.1,10.0.0.2"],
     ["write_bw", "--size", "65536", "--provider", "verbs:rxe0", "--addresses",
      "10.0.0.1,10.0.0.2"]),
])
def test_the_options_reach_the_helper_as_it_takes_them(arguments, argv, stand_in, capsys):
    assert cli.main(["perf", *arguments]) == 0
    assert stand_in() == [argv]
    assert capsys.readouterr().out.startswith("-" * 95)


def test_all_sizes_are_one_helper_each_and_one_table(stand_in, capsys):
    assert cli.main(["perf", "send_lat", "--all", "--provider", "loop"]) == 0
    calls = stand_in()
    sizes = [1 << k for k in range(3, 21)]
    assert calls == [["send_lat", "--size", str(n), "--provider", "loop"] for n in sizes]
    table = rows(capsys.readouterr().out)
    assert table[0] == LATENCY_HEAD and [int(line[0]) for line in table[1:]] == sizes


def test_a_helper_that_does_not_finish_is_one_error_line(tmp_path, monkeypatch, capsys):
    helper = tmp_path / "ndk_perf"
    helper.write_text("#!/bin/sh\nexec sleep 30\n")
    helper.chmod(0o755)
    with pytest.raises(RuntimeError, match=r"^send_lat did not finish within 0 s \(fewer "):
        perf.run_helper("send_lat", helper=str(helper), timeout=0.2)


def test_a_refusal_of_the_helper_is_its_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    """ndk_perf's exit code 2 (a provider that does not load or open) is ndk perf's: its last
    line on stderr, nothing on stdout."""
    helper = tmp_path / "ndk_perf"
    helper.write_text("#!/bin/sh\necho 'ndk_perf send_lat: provider x: cannot load' >&2\n"
                      "exit 2\n")
    helper.chmod(0o755)
    monkeypatch.setenv("NDK_PERF", str(helper))
    assert cli.main(["perf", "send_lat", "--provider", "/x.so"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "ndk perf: ndk_perf send_lat: provider x: cannot load\n"


def test_msg_rate_sizes_run_one_helper_each(stand_in, capsys):
    assert cli.main(["perf", "msg_rate", "-s", "8", "-s", "4k"]) == 0
    assert [call[:3] for call in stand_in()] == [["msg_rate", "--size", "8"],
                                                  ["msg_rate", "--size", "4096"]]


@pytest.mark.parametrize("test, result", [("cacheline", CACHELINE), ("msg_rate", MSG_RATE),
                                          ("poll_rate", POLL_RATE)])
def test_json_is_the_helpers_result_unchanged(test, result, stand_in, capsys):
    assert cli.main(["perf", test, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == result
    assert stand_in() == [[test]]  # no option given: the helper's defaults


def test_cacheline_plot_draws_its_samples_without_a_message_size(stand_in, tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="python3-matplotlib is not installed")
    from ndk import _perfplot

    picture = tmp_path / "cacheline.svg"
    assert cli.main(["perf", "cacheline", "--iters", "2000", "--plot", str(picture)]) == 0
    call, = stand_in()
    assert call[:3] == ["cacheline", "--iters", "2000"] and call[3] == "--samples"
    assert f"plot: {picture}" in capsys.readouterr().out
    fig = _perfplot.draw([CACHELINE], [[40.0 + i % 50 for i in range(2000)]])
    title = fig._suptitle.get_text()
    assert title.startswith("ndk perf cacheline: one cache line bounced between two")
    assert "0 B" not in title and "progress" not in title and "soft provider" not in title


# --- the real helper ----------------------------------------------------------------------

def built_helper() -> str:
    """ndk_perf: $NDK_PERF, else the bin/ of the build tree whose python/ is on sys.path (these
    tests import a fake ndk, whose _build_info is not there), else PATH (perf.find_helper).
    The build tree's comes before PATH: an installed package may be older than the tree."""
    if not os.environ.get("NDK_PERF"):
        for entry in sys.path:
            candidate = Path(entry or ".").absolute().parent / "bin" / "ndk_perf"
            if (Path(entry or ".") / "ndk").is_dir() and candidate.is_file() \
                    and os.access(candidate, os.X_OK):
                return str(candidate)
    try:
        return perf.find_helper()
    except FileNotFoundError:
        pass
    pytest.skip("ndk_perf is not built: build the ndk_perf target (cmake --build build "
                "--target ndk_perf) and put its build tree's python/ on PYTHONPATH, or set "
                "NDK_PERF")


@pytest.fixture
def helper(monkeypatch):
    path = built_helper()
    monkeypatch.setenv("NDK_PERF", path)
    return path


@pytest.mark.parametrize("arguments, heads", [
    (["cacheline", "--iters", "2000", "--warmup", "100", "--seconds", "10"],
     ["t_typical[usec]", "99.9% percentile[usec]"]),
    (["msg_rate", "--connections", "2", "--batch", "16", "--iters", "2000"],
     ["#connections", "MsgRate[Mops/sec]", "#connection"]),
    (["poll_rate", "--count", "1024", "--batch", "64", "--iters", "3"],
     ["t_avg[nsec]", "post+poll"]),
    (["write_lat", "--iters", "500", "--seconds", "10", "--options", "vendor_id=4660"],
     ["t_typical[usec]", "options: vendor_id=4660"]),
])
def test_each_new_test_and_option_runs_through_the_built_helper(arguments, heads, helper,
                                                                capsys):
    assert cli.main(["perf", *arguments, "--json"]) == 0, capsys.readouterr().err
    result = json.loads(capsys.readouterr().out)
    assert result["test"] == arguments[0]
    text = perf.format_result(result)
    for head in heads:
        assert head in text, text
    if "latency" in result:
        lat = result["latency"]
        assert 0 < lat["samples"] <= result["iters"]
        assert lat["min_us"] <= lat["median_us"] <= lat["p99_us"] <= lat["p999_us"]
    elif result["test"] == "msg_rate":
        assert result["connections"] == len(result["connection"]) == 2
        assert result["aggregate_mops"] == pytest.approx(
            sum(c["mops"] for c in result["connection"]), rel=1e-3)
    else:
        assert result["count"] == 1024 and result["completions_per_s"] > 0


def test_a_knob_the_provider_refuses_fails_the_run_with_its_reason(helper, capsys):
    """The adapters do not open: one line with the provider's reason, exit 2, before any
    timing."""
    assert cli.main(["perf", "poll_rate", "--iters", "1", "--options", "no_such_knob=1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ndk perf: ") and "no_such_knob" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("provider, why", [
    ("/nonexistent/libnope.so", "cannot load provider"),
    ("nosuchprovider", "no provider named 'nosuchprovider'"),
])
def test_a_provider_that_does_not_load_is_one_line_and_exit_2(provider, why, helper, capsys):
    assert cli.main(["perf", "send_lat", "--iters", "10", "--provider", provider]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    line, = err.strip().splitlines()
    assert line.startswith(f"ndk perf: ndk_perf send_lat: provider {provider}: "), line
    assert why in line, line


@pytest.mark.parametrize("arguments, count", [
    # 2000 = 31 windows of 64 and one of 16: once 1984, the rest silently dropped
    (["write_bw", "--iters", "2000", "--size", "64"], lambda r: r["iters"]),
    (["send_bw", "--iters", "100", "--inflight", "64", "--size", "64"], lambda r: r["iters"]),
    (["read_bw", "--iters", "10", "--size", "64"], lambda r: r["iters"]),  # fewer than in flight
    (["send_lat", "--iters", "2000"], lambda r: r["latency"]["samples"]),
    (["msg_rate", "--iters", "2001", "--batch", "16"], lambda r: r["connection"][0]["ops"]),
])
def test_iters_is_honoured_exactly(arguments, count, helper, capsys):
    assert cli.main(["perf", *arguments, "--json"]) == 0, capsys.readouterr().err
    result = json.loads(capsys.readouterr().out)
    asked = int(arguments[arguments.index("--iters") + 1])
    assert count(result) == asked and int(result["iters"]) == asked


def test_the_loop_provider_prints_perftest_columns_over_several_sizes(helper, capsys):
    """Two adapters of loop (the kit's example provider), loaded through the registry as
    ndk conformance loads it: one table, one header, a row per size, every column a number."""
    assert cli.main(["perf", "send_lat", "--provider", "loop", "--iters", "200",
                     "-s", "8", "-s", "4k"]) == 0, capsys.readouterr().err
    text = capsys.readouterr().out
    assert title(text).startswith("send_lat: loop provider, raw NDK ABI, one_thread")
    table = rows(text)
    assert table[0] == LATENCY_HEAD
    assert [line[:2] for line in table[1:]] == [["8", "200"], ["4096", "200"]]
    for line in table[1:]:
        t_min, t_max, typical, avg, stdev, p99, p999 = map(float, line[2:])
        assert t_min <= typical <= p99 <= p999 <= t_max and t_min <= avg <= t_max
        assert stdev >= 0
