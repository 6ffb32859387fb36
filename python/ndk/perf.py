"""``ndk perf``: perftest-style end-to-end runs of the soft provider.

The timing loops run in the C++ helper ``ndk_perf`` (bench/ndk_perf.cpp, built into the build
tree's ``bin/``), through the raw NDK ABI on two soft adapters in one process; this module
runs it, parses the JSON it prints and formats the figures as perftest does::

    ndk perf send_lat --size 64 --iters 100000
    ndk perf write_bw --size 1048576 --iters 2000 --json
    ndk perf send_lat --iters 100000 --plot send_lat.png     # histogram and CDF
    ndk perf write_bw --all --plot write_bw.svg              # bandwidth against message size
    ndk perf send_lat --threads --seconds 5                  # at most 5 s, however loaded
    ndk perf send_lat --processes --options transport=shm   # the pong in another process
    ndk perf write_bw -s 1m --processes --options transport=tcp  # the target in another one
    ndk perf cacheline --iters 1000000                       # the floor of send_lat --threads
    ndk perf msg_rate --connections 2 --batch 16             # two connections, a thread each
    ndk perf poll_rate --count 65536 --batch 64              # drain a filled CQ
    ndk perf write_lat --options vendor_id=4660              # knob lines for each adapter

The tests:

- latency (``send_lat``, ``write_lat``, ``read_lat``): min / typical (median) / average / p99 /
  p99.9 in microseconds (send_lat: half a round trip of a ping-pong, as ib_send_lat reports);
- ``cacheline``: the same columns for one cache line bounced between two busy-waiting threads,
  no provider: the physical floor under ``send_lat --threads``;
- bandwidth (``send_bw``, ``write_bw``, ``read_bw``): peak and average bandwidth (MB/s, 10^6
  bytes) and the message rate (Mpps);
- ``msg_rate``: ``--connections N`` connections, each driven by its own thread posting
  ``--batch`` RDMA writes and polling them: the aggregate rate and each connection's, Mops/s;
- ``poll_rate``: a CQ filled with ``--count`` write completions, drained ``--batch`` at a time:
  completions per second polled, and post + poll per second.

``--seconds N`` bounds a latency or cacheline run (the percentiles of the samples it took);
``--options KNOBS`` gives every adapter knob lines at open ("key=value", ';' between them;
not cacheline, which opens none).  Each option is checked against the ranges ``ndk_perf``
accepts, and against the tests that take it, before the helper starts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Sequence

LATENCY_TESTS = ("send_lat", "write_lat", "read_lat")
BANDWIDTH_TESTS = ("send_bw", "write_bw", "read_bw")
RATE_TESTS = ("msg_rate", "poll_rate")
SAMPLED_TESTS = LATENCY_TESTS + ("cacheline",)  # they take --samples FILE (--plot draws them)
# Every test `ndk perf` runs, in the order of `ndk_perf --help` (cacheline: latency columns).
TESTS = LATENCY_TESTS + ("cacheline",) + BANDWIDTH_TESTS + RATE_TESTS


def find_helper() -> str:
    """The ``ndk_perf`` executable: $NDK_PERF, the build tree's bin/, or PATH."""
    explicit = os.environ.get("NDK_PERF")
    if explicit:
        return explicit
    candidates = []
    try:
        from . import _build_info

        if _build_info.BUILD_DIR:  # None in an installed package: ndk_perf is on PATH
            candidates.append(Path(_build_info.BUILD_DIR) / "bin" / "ndk_perf")
    except ImportError:  # a package not built by CMake
        pass
    # build/python/ndk/perf.py -> build/bin/ndk_perf (the package's files are links there)
    candidates.append(Path(__file__).absolute().parent.parent.parent / "bin" / "ndk_perf")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("ndk_perf")
    if found:
        return found
    raise FileNotFoundError("ndk_perf not found: build the ndk_perf target (cmake --build build) "
                            "or set NDK_PERF")


def run_helper(test: str, options: Sequence[str] = (), helper: str | None = None,
               timeout: float | None = 600) -> dict[str, Any]:
    """Run ``ndk_perf TEST OPTIONS...`` and return its JSON output as a dict."""
    command = [helper or find_helper(), test, *options]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): "
                           f"{done.stderr.strip() or done.stdout.strip()}")
    return json.loads(done.stdout)


def helper_options(size: int | None = None, iters: int | None = None, warmup: int | None = None,
                   inflight: int | None = None, threads: bool = False,
                   progress: str | None = None, *, seconds: int | None = None,
                   processes: bool = False,
                   connections: int | None = None, batch: int | None = None,
                   count: int | None = None, knobs: str | None = None,
                   poll: str | None = None) -> list[str]:
    """ndk_perf's arguments for these options (None: not given, the helper's default);
    ``knobs`` is ``--options``."""
    options: list[str] = []
    for name, value in (("size", size), ("iters", iters), ("warmup", warmup),
                        ("inflight", inflight), ("progress", progress), ("seconds", seconds),
                        ("connections", connections), ("batch", batch), ("count", count),
                        ("poll", poll), ("options", knobs)):
        if value is not None:
            options += [f"--{name}", str(value)]
    if threads:
        options.append("--threads")
    if processes:
        options.append("--processes")
    return options


_RULE = "-" * 95


def _table(title: str, *rows: str) -> str:
    """A perftest table: rules around the title and each block of rows (a block: a string of
    lines; several blocks are separated by a rule)."""
    import textwrap

    rule = "-" * max(len(_RULE), *(len(line) for row in rows for line in row.splitlines()))
    lines = [rule]
    for part in title.splitlines():  # titles wrapped to the rule, as perftest's fit its own
        lines += textwrap.wrap(part, len(rule), initial_indent=" ", subsequent_indent="   ",
                               break_on_hyphens=False)
    lines.append(rule)
    for row in rows:
        lines += [row, rule]
    return "\n".join(lines)


def _with_knobs(title: str, result: dict[str, Any]) -> str:
    """The title, with the run's --options (knob lines; newlines shown as ';') if it had any."""
    knobs = str(result.get("options") or "").strip()
    return f"{title}; options: {';'.join(knobs.splitlines())}" if knobs else title


def _polling(result: dict[str, Any]) -> str:
    """", poll=yield" for a run that yielded after empty polls (spinning is the default)."""
    return ", poll=yield" if result.get("poll") == "yield" else ""


def _format_latency(result: dict[str, Any]) -> str:
    test = result.get("test", "?")
    lat = result["latency"]
    head = (f"{'#bytes':>8} {'#iterations':>12} {'t_min[usec]':>12} {'t_typical[usec]':>16} "
            f"{'t_avg[usec]':>12} {'t_99%[usec]':>12} {'t_99.9%[usec]':>14}")
    size = str(int(result["size"])) if "size" in result else "-"  # cacheline: no message
    line = (f"{size:>8} {int(lat['samples']):>12} {lat['min_us']:>12.3f} "
            f"{lat['median_us']:>16.3f} {lat['avg_us']:>12.3f} {lat['p99_us']:>12.3f} "
            f"{lat['p999_us']:>14.3f}")
    if test == "cacheline":
        title = ("cacheline: one cache line bounced between two busy-waiting threads, no "
                 f"provider (the floor of send_lat --threads); sample = {result.get('sample', '')}")
    else:
        title = (f"{test}: soft provider, raw NDK ABI, {result.get('mode', '')}, "
                 f"progress={result.get('progress', 'auto')}{_polling(result)}; "
                 f"sample = {result.get('sample', '')}")
    title = _with_knobs(title, result)
    iters = int(result.get("iters", 0))
    if 0 < int(lat["samples"]) < iters:  # only --seconds stops a run short
        title += f"\nstopped by --seconds: {int(lat['samples'])} of {iters} samples taken"
    return _table(title, head + "\n" + line)


def _format_bandwidth(result: dict[str, Any]) -> str:
    head = (f"{'#bytes':>8} {'#iterations':>12} {'BW peak[MB/sec]':>16} "
            f"{'BW average[MB/sec]':>19} {'MsgRate[Mpps]':>14}")
    line = (f"{int(result['size']):>8} {int(result['iters']):>12} {result['peak_mb_s']:>16.2f} "
            f"{result['avg_mb_s']:>19.2f} {result['msg_rate_mpps']:>14.6f}")
    where = ("the target in another process" if result.get("mode") == "processes"
             else "one thread")
    title = (f"{result.get('test', '?')}: soft provider, raw NDK ABI, {where}, "
             f"{int(result.get('inflight', 0))} in flight{_polling(result)}")
    return _table(_with_knobs(title, result), head + "\n" + line)


def _format_msg_rate(result: dict[str, Any]) -> str:
    connections = int(result["connections"])
    head = (f"{'#bytes':>8} {'#connections':>13} {'#batch':>7} {'#ops':>12} {'time[sec]':>10} "
            f"{'MsgRate[Mops/sec]':>18}")
    line = (f"{int(result['size']):>8} {connections:>13} {int(result['batch']):>7} "
            f"{int(result['ops']):>12} {result['window_s']:>10.6f} "
            f"{result['aggregate_mops']:>18.6f}")
    each_head = f"{'#connection':>12} {'#ops':>12} {'time[sec]':>10} {'MsgRate[Mops/sec]':>18}"
    each = [f"{c:>12} {int(r['ops']):>12} {r['seconds']:>10.6f} {r['mops']:>18.6f}"
            for c, r in enumerate(result.get("connection", []))]
    threads = "one thread" if connections == 1 else f"{connections} connections, a thread each"
    title = (f"msg_rate: soft provider, raw NDK ABI, RDMA {result.get('op', 'write')}, "
             f"{threads}, {int(result['batch'])} posted then polled; aggregate = the sum of the "
             "connections' rates")
    return _table(_with_knobs(title, result), head + "\n" + line,
                  "\n".join([each_head, *each]))


def _format_poll_rate(result: dict[str, Any]) -> str:
    head = (f"{'#count':>8} {'#batch':>8} {'#iterations':>12} {'what':>10} {'t_avg[nsec]':>12} "
            f"{'Rate avg[M/sec]':>16} {'Rate best[M/sec]':>17}")
    lead = f"{int(result['count']):>8} {int(result['batch']):>8} {int(result['iters']):>12}"
    post_poll_ns = result["post_ns_per_write"] + result["poll_ns_per_completion"]
    poll = (f"{lead} {'poll':>10} {result['poll_ns_per_completion']:>12.2f} "
            f"{result['completions_per_s'] / 1e6:>16.3f} "
            f"{result['best_completions_per_s'] / 1e6:>17.3f}")
    both = (f"{'':>30} {'post+poll':>10} {post_poll_ns:>12.2f} "
            f"{result['post_poll_per_s'] / 1e6:>16.3f} "
            f"{result['best_post_poll_per_s'] / 1e6:>17.3f}")
    title = (f"poll_rate: soft provider, raw NDK ABI, one thread: a CQ filled with "
             f"{int(result['count'])} RDMA write completions, drained {int(result['batch'])} "
             "at a time by NdkGetCqResultsEx")
    return _table(_with_knobs(title, result), "\n".join([head, poll, both]))


def format_result(result: dict[str, Any]) -> str:
    """perftest-style lines for one ndk_perf result (any other: its JSON, indented)."""
    if "latency" in result:
        return _format_latency(result)
    if "peak_mb_s" in result:
        return _format_bandwidth(result)
    if "aggregate_mops" in result:
        return _format_msg_rate(result)
    if "completions_per_s" in result:
        return _format_poll_rate(result)
    return json.dumps(result, indent=2)


def read_samples(path: str | os.PathLike) -> list[float]:
    """The latency samples (ns) ``ndk_perf --samples FILE`` wrote, one per line."""
    with open(path, encoding="ascii") as f:
        return [float(line) for line in f if line.strip()]


def run_with_samples(test: str, options: Sequence[str], helper: str | None = None,
                     timeout: float | None = 600) -> tuple[dict[str, Any], list[float]]:
    """Run a latency test with ``--samples`` into a temporary file: (result, samples in ns)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ndk-perf-") as tmp:
        path = Path(tmp) / "samples.txt"
        rebuild = ("this ndk_perf writes no per-iteration samples (--samples): rebuild it "
                   "(cmake --build build --target ndk_perf)")
        try:
            result = run_helper(test, [*options, "--samples", str(path)], helper=helper,
                                timeout=timeout)
        except RuntimeError as exc:
            if "unknown option --samples" in str(exc):
                raise RuntimeError(rebuild) from None
            raise
        if not path.is_file():  # older still: it ignored the option
            raise RuntimeError(rebuild)
        return result, read_samples(path)


def run(test: str, sizes: Sequence[int | None], iters: int | None, *,
        warmup: int | None = None, inflight: int | None = None, threads: bool = False,
        processes: bool = False, progress: str | None = None, seconds: int | None = None,
        connections: int | None = None, batch: int | None = None, count: int | None = None,
        knobs: str | None = None, as_json: bool = False, plot: str | None = None,
        poll: str | None = None, out=None) -> int:
    """Run one perf test over one or more sizes, print the table (or JSON lines); exit code.

    A size of None runs the helper's default (cacheline and poll_rate take none); the other
    options are ndk_perf's (:func:`helper_options`), None for its default.

    ``plot``: also draw the results into this .png or .svg file (:mod:`ndk._perfplot`): the
    latency distribution of latency tests and cacheline, bandwidth against message size for
    bandwidth tests.
    """
    import sys

    out = out or sys.stdout
    if plot:
        from ._perfplot import check_path, require_matplotlib

        check_path(plot)  # fail before the runs, not after
        require_matplotlib()
    results, samples = [], []
    for size in sizes:
        options = helper_options(size=size, iters=iters, warmup=warmup, inflight=inflight,
                                 threads=threads, processes=processes, progress=progress,
                                 seconds=seconds, connections=connections, batch=batch, count=count,
                                 knobs=knobs, poll=poll)
        timeout = 600 + (seconds or 0)  # --seconds bounds the timed part, not the set-up
        if plot and test in SAMPLED_TESTS:
            result, values = run_with_samples(test, options, timeout=timeout)
            samples.append(values)
        else:
            result = run_helper(test, options, timeout=timeout)
        results.append(result)
    if as_json:
        print(json.dumps(results if len(results) > 1 else results[0], indent=2), file=out)
    else:
        for result in results:
            print(format_result(result), file=out)
    if plot:
        from ._perfplot import draw, save

        path = save(draw(results, samples if test in SAMPLED_TESTS else None), plot)
        if not as_json:
            print(f"plot: {path}", file=out)
    return 0


def parse_size(text: str) -> int:
    """64, 4k, 1m, 1MiB -> bytes."""
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(t[-1:], 1)
    return int(t[:-1] if scale != 1 else t) * scale


# The ranges ndk_perf accepts (bench/ndk_perf.cpp, `ndk_perf --help`), checked here first so a
# bad value is argparse's one-line error before the helper starts.
SIZE_RANGE = (1, 1 << 30)  # the soft provider's max_transfer_length
ITERS_RANGE = (1, 100_000_000)
WARMUP_RANGE = (0, 100_000_000)
INFLIGHT_RANGE = (1, 1024)
SECONDS_RANGE = (0, 3600)  # 0: no limit
CONNECTIONS_RANGE = (1, 64)  # a thread each: past the cores it measures the scheduler
MAX_CQ_DEPTH = 1 << 22  # the soft provider's max_cq_depth
COUNT_RANGE = (1, MAX_CQ_DEPTH)
# --batch: at most a QP's queue depth for msg_rate, a CQ's depth for poll_rate.  argparse reads
# a whole number (batch_argument); check_options checks the test's own range.
BATCH_RANGES = {"msg_rate": (1, 1024), "poll_rate": (1, MAX_CQ_DEPTH)}

# The tests that take each option that not every test takes (ndk_perf refuses it elsewhere).
_EVERY_BUT_CACHELINE = tuple(t for t in TESTS if t != "cacheline")
OPTION_TESTS: dict[str, tuple[str, ...]] = {
    "size": LATENCY_TESTS + BANDWIDTH_TESTS + ("msg_rate",),
    "all": LATENCY_TESTS + BANDWIDTH_TESTS + ("msg_rate",),
    "warmup": LATENCY_TESTS + ("cacheline",),
    "seconds": LATENCY_TESTS + ("cacheline",),
    "threads": ("send_lat",),
    "processes": ("send_lat", "write_bw", "read_bw"),
    "poll": ("send_lat",) + BANDWIDTH_TESTS,
    "progress": LATENCY_TESTS,
    "inflight": BANDWIDTH_TESTS,
    "connections": ("msg_rate",),
    "batch": RATE_TESTS,
    "count": ("poll_rate",),
    "options": _EVERY_BUT_CACHELINE,
    "plot": SAMPLED_TESTS + BANDWIDTH_TESTS,
}


# Why a test that takes almost every option does not take one.
_WHY_NOT = {("options", "cacheline"): "it opens no adapter"}


def _which(tests: Sequence[str]) -> str:
    """``tests`` in words: "the latency tests and cacheline"."""
    words, left = [], list(tests)
    for group, name in ((LATENCY_TESTS, "the latency tests"),
                        (BANDWIDTH_TESTS, "the bandwidth tests")):
        if all(t in left for t in group):
            words.append(name)
            left = [t for t in left if t not in group]
    words += left
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else words[0]


def _check_range(value: int, text: str, bounds: tuple[int, int]) -> int:
    import argparse

    if not bounds[0] <= value <= bounds[1]:
        raise argparse.ArgumentTypeError(f"{text} is out of range (valid: {bounds[0]}..{bounds[1]})")
    return value


def whole_number(bounds: tuple[int, int]):
    """An argparse type: a whole number (digits, optionally signed) within ``bounds``."""
    import argparse

    def parse(text: str) -> int:
        if not re.fullmatch(r"\s*[-+]?\d+\s*", text):
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a whole number (valid: {bounds[0]}..{bounds[1]})")
        return _check_range(int(text), text, bounds)

    return parse


def size_argument(text: str) -> int:
    """An argparse type: :func:`parse_size` within SIZE_RANGE."""
    import argparse

    try:
        if not re.fullmatch(r"\s*[-+]?\d+\s*([kmg](i?b)?|b)?\s*", text, re.IGNORECASE):
            raise ValueError(text)
        value = parse_size(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size (bytes, or with k, m, g: 4k, 1m; valid: "
            f"{SIZE_RANGE[0]}..{SIZE_RANGE[1]})") from None
    return _check_range(value, text, SIZE_RANGE)


def plot_argument(text: str) -> str:
    """An argparse type: a picture file name ending in .png or .svg."""
    import argparse

    if Path(text).suffix.lower() not in (".png", ".svg"):
        raise argparse.ArgumentTypeError(f"{text!r}: the file name must end in .png or .svg")
    return text


def batch_argument(text: str) -> int:
    """An argparse type: a whole number; its range depends on the test (check_options)."""
    import argparse

    if not re.fullmatch(r"\s*[-+]?\d+\s*", text):
        ranges = ", ".join(f"{test}: {lo}..{hi}" for test, (lo, hi) in BATCH_RANGES.items())
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (valid: {ranges})")
    return int(text)


def knobs_argument(text: str) -> str:
    """An argparse type: ``--options`` knob lines ("key=value", ';' or newlines between them),
    not empty, without the knobs ndk_perf sets itself (address, progress)."""
    import argparse

    if not text.strip():
        raise argparse.ArgumentTypeError("expected knob lines (key=value;...), not nothing")
    for part in re.split(r"[;\n]", text):
        key = part.split("=", 1)[0].strip(" \t")
        if key == "address":
            raise argparse.ArgumentTypeError("address is ndk_perf's to set (each adapter has "
                                             "its own)")
        if key == "progress":
            raise argparse.ArgumentTypeError("progress is ndk_perf's to set (--progress, "
                                             "where the test has it)")
    return text


HELP = """\
tests (the helper ndk_perf runs the loops; Python is never inside one):
  send_lat write_lat read_lat  latency: min, typical, average, p99, p99.9 (usec)
  cacheline                    the same columns for one cache line bounced between two
                               busy-waiting threads, no provider: the floor of send_lat --threads
  send_bw write_bw read_bw     bandwidth: peak and average (MB/sec), message rate (Mpps)
  msg_rate                     N connections (--connections), a thread each posting --batch RDMA
                               writes and polling them: aggregate and per-connection Mops/sec
  poll_rate                    a CQ filled with --count completions, drained --batch at a time:
                               polls per second, and post + poll per second

options by test (any other is refused before the helper starts):
  --size, --all                latency, bandwidth, msg_rate
  --warmup, --seconds          latency, cacheline
  --progress                   latency; --threads: send_lat
  --processes                  send_lat, write_bw, read_bw (--options transport=shm or tcp)
  --poll                       send_lat, bandwidth (spin, or yield after each empty poll)
  --inflight                   bandwidth
  --connections                msg_rate; --count: poll_rate
  --batch                      msg_rate (1..1024), poll_rate (1..4194304)
  --options                    every test but cacheline
  --plot                       latency, cacheline, bandwidth
"""


def add_arguments(parser) -> None:
    """The ``ndk perf`` arguments (cli.py adds the subcommand)."""
    import argparse

    parser.description = ("perftest-style runs of the soft provider through the raw NDK ABI "
                          "(bench/ndk_perf.cpp); --json prints the helper's raw results.")
    parser.epilog = HELP
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("test", choices=TESTS, help="which test, as perftest names them (and "
                        "cacheline, msg_rate, poll_rate)")
    parser.add_argument("--size", "-s", action="append", type=size_argument, metavar="BYTES",
                        help="message size (repeatable; 4k, 1m accepted; default 64 for "
                             "latency, 65536 for bandwidth, 8 for msg_rate)")
    parser.add_argument("--all", "-a", action="store_true",
                        help="every power of two from 8 B to 1 MiB")
    parser.add_argument("--iters", "-n", type=whole_number(ITERS_RANGE), metavar="N",
                        help="iterations (msg_rate: writes per connection; poll_rate: rounds "
                             "of filling and draining the CQ)")
    parser.add_argument("--warmup", type=whole_number(WARMUP_RANGE), metavar="N",
                        help="latency tests, cacheline: untimed iterations first")
    parser.add_argument("--seconds", type=whole_number(SECONDS_RANGE), metavar="N",
                        help="latency tests, cacheline: stop after N seconds (a tenth of them "
                             "for the warm-up), with the samples taken by then; 0: no limit")
    parser.add_argument("--inflight", type=whole_number(INFLIGHT_RANGE), metavar="N",
                        help="bandwidth tests: requests in flight (default 64)")
    parser.add_argument("--threads", action="store_true",
                        help="send_lat: run the pong side on its own thread (both busy-poll)")
    parser.add_argument("--processes", action="store_true",
                        help="send_lat: run the pong side in a child process (both busy-poll); "
                             "write_bw, read_bw: the target memory in a child process (it only "
                             "waits); needs --options transport=shm or transport=tcp")
    parser.add_argument("--poll", choices=("spin", "yield"),
                        help="send_lat, bandwidth tests: spin on the CQ (default, as perftest), "
                             "or yield the core after each empty poll, so that a transport "
                             "whose transfers run on the provider's threads (shm, tcp) gets it")
    parser.add_argument("--progress", choices=("auto", "manual"),
                        help="latency tests: the soft engine's progress knob (manual: each "
                             "transfer is one engine step)")
    parser.add_argument("--connections", type=whole_number(CONNECTIONS_RANGE), metavar="N",
                        help="msg_rate: connections, each driven by its own thread (default 1)")
    parser.add_argument("--batch", type=batch_argument, metavar="N",
                        help="msg_rate: writes posted before polling them (1..1024, default 16); "
                             "poll_rate: completions per NdkGetCqResultsEx (default 64)")
    parser.add_argument("--count", type=whole_number(COUNT_RANGE), metavar="N",
                        help="poll_rate: completions in the CQ each round (default 65536)")
    parser.add_argument("--options", dest="knobs", type=knobs_argument, metavar="KNOBS",
                        help="knob lines for every adapter the test opens, 'key=value', ';' "
                             "between them (e.g. vendor_id=4660; a knob the provider refuses fails "
                             "the run with its reason); not cacheline")
    parser.add_argument("--json", action="store_true", help="print the raw JSON results")
    parser.add_argument("--plot", metavar="FILE", type=plot_argument,
                        help="also draw the results into FILE (.png or .svg, matplotlib): "
                             "latency tests and cacheline the distribution of the "
                             "per-iteration samples "
                             "(histogram and CDF, p50/p99/p99.9 marked), bandwidth tests "
                             "bandwidth against message size (with --all or several --size)")
    parser.set_defaults(perf_parser=parser)


def _given(args, name: str) -> bool:
    value = getattr(args, "knobs" if name == "options" else name, None)
    return value is not None and value is not False


def check_options(args) -> None:
    """The options that only some tests take (ndk_perf refuses the others), and the ranges
    that depend on the test: argparse's error, exit 2, before the helper starts."""
    error = getattr(args, "perf_parser", None)
    error = error.error if error is not None else _raise_usage
    for name, tests in OPTION_TESTS.items():
        if _given(args, name) and args.test not in tests:
            why = _WHY_NOT.get((name, args.test))
            error(f"argument --{name}: not for {args.test} ({why})" if why else
                  f"argument --{name}: only for {_which(tests)}, not {args.test}")
    if args.threads and args.progress == "manual":
        error("argument --threads: not with --progress manual (step from one thread only)")
    if args.processes and args.threads:
        error("argument --processes: not with --threads (the pong is in one place)")
    if args.processes and args.progress == "manual":
        error("argument --processes: not with --progress manual (the pong's engine is not ours)")
    if args.batch is not None:
        lo, hi = BATCH_RANGES[args.test]
        if not lo <= args.batch <= hi:
            error(f"argument --batch: {args.batch} is out of range for {args.test} "
                  f"(valid: {lo}..{hi})")


def _raise_usage(message: str) -> None:
    import sys

    print(f"ndk perf: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def main_from_args(args) -> int:
    """Handler of ``ndk perf`` (argparse namespace from add_arguments)."""
    from ._perfplot import PlotError
    check_options(args)
    sizes: list[int | None]
    if args.all:
        sizes = [1 << k for k in range(3, 21)]
    elif args.size:
        sizes = list(args.size)
    elif args.test in LATENCY_TESTS:
        sizes = [64]
    elif args.test in BANDWIDTH_TESTS:
        sizes = [65536]
    else:  # msg_rate: the helper's 8 bytes; cacheline, poll_rate: no message size
        sizes = [None]
    try:
        return run(args.test, sizes, args.iters, warmup=args.warmup, inflight=args.inflight,
                   threads=args.threads, processes=args.processes, progress=args.progress,
                   seconds=args.seconds, connections=args.connections, batch=args.batch, count=args.count,
                   poll=args.poll,
                   knobs=args.knobs, as_json=args.json, plot=args.plot)
    except (FileNotFoundError, RuntimeError, PlotError) as exc:
        import sys

        print(f"ndk perf: {exc}", file=sys.stderr)
        return 1
