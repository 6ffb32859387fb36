"""``ndk perf``: perftest-style end-to-end runs of any provider the harness loads.

The timing loops run in the C++ helper ``ndk_perf`` (bench/ndk_perf.cpp, built into the build
tree's ``bin/``), through the raw NDK ABI on two adapters of ``--provider`` (soft by default;
soft:tcp, soft:shm, loop, verbs:DEV, a path to a provider's .so: loaded as ``ndk conformance``
loads it) in one process, or with ``--processes`` in two; this module runs it, parses the JSON
it prints and formats the figures in perftest's columns (ib_send_lat's, ib_write_bw's), one
header over several sizes as ``perftest -a`` prints them::

    ndk perf send_lat --size 64 --iters 100000
    ndk perf send_lat --provider loop --all                  # every size, one table
    ndk perf send_lat --provider soft:tcp --processes        # the pong in another process
    ndk perf write_bw --provider verbs:rxe0 --addresses 10.0.0.1,10.0.0.1
    ndk perf write_bw --size 1048576 --iters 2000 --json
    ndk perf send_lat --iters 100000 --plot send_lat.png     # histogram and CDF
    ndk perf write_bw --all --plot write_bw.svg              # bandwidth against message size
    ndk perf send_lat --threads --seconds 5                  # at most 5 s, however loaded
    ndk perf write_bw -s 1m --processes --provider soft:shm  # the target in another one
    ndk perf cacheline --iters 1000000                       # the floor of send_lat --threads
    ndk perf msg_rate --connections 2 --batch 16             # two connections, a thread each
    ndk perf poll_rate --count 65536 --batch 64              # drain a filled CQ
    ndk perf write_lat --options vendor_id=4660              # knob lines for each adapter

The tests:

- latency (``send_lat``, ``write_lat``, ``read_lat``): t_min, t_max, t_typical (median), t_avg,
  t_stdev, 99% and 99.9% percentiles in microseconds (send_lat: half a round trip of a
  ping-pong, as ib_send_lat reports);
- ``cacheline``: the same columns for one cache line bounced between two busy-waiting threads,
  no provider: the physical floor under ``send_lat --threads``;
- bandwidth (``send_bw``, ``write_bw``, ``read_bw``): peak and average bandwidth (MB/s, 10^6
  bytes) and the message rate (Mpps), ``--inflight`` requests kept outstanding and each
  completion answered by the next post, as perftest's ib_write_bw keeps its tx_depth; the
  average and peak are perftest's BW average and BW peak (``ndk_perf --help`` says how);
- ``msg_rate``: ``--connections N`` connections, each driven by its own thread posting
  ``--batch`` RDMA writes and polling them: the aggregate rate and each connection's, Mops/s;
- ``poll_rate``: a CQ filled with ``--count`` write completions, drained ``--batch`` at a time:
  completions per second polled, and post + poll per second.

``--seconds N`` bounds a latency or cacheline run (the percentiles of the samples it took);
``--options KNOBS`` gives every adapter knob lines at open ("key=value", ';' between them;
not cacheline, which opens none).  Each option is checked against the ranges ``ndk_perf``
accepts, and against the tests that take it, before the helper starts.  ``--iters N`` is
exactly N timed iterations (bandwidth: N requests, the last window the rest; msg_rate: N writes
a connection), fewer only when ``--seconds`` ends a latency run first, which the table says.

A provider that does not load or open (a missing .so, an absent device, an address not on this
host), and ``--processes`` with a provider that reaches only its own process (soft's inproc
transport, loop), are one line and exit 2, before any timing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Sequence

from ._arguments import check_range, new_file, whole_number
from ._peer import PROCESS, base_provider, reach_of, transport_of

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


class Refused(RuntimeError):
    """ndk_perf refused the run before timing anything (its exit code 2): a provider that does
    not load or open, a combination it cannot run; the message is its one line."""


def run_helper(test: str, options: Sequence[str] = (), helper: str | None = None,
               timeout: float | None = 600) -> dict[str, Any]:
    """Run ``ndk_perf TEST OPTIONS...`` and return its JSON output as a dict; :class:`Refused`
    for its exit code 2, RuntimeError for any other failure."""
    command = [helper or find_helper(), test, *options]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{test} did not finish within {timeout:.0f} s (fewer --iters, or "
                           "--seconds N for a latency run)") from None
    if done.returncode == 2:
        lines = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise Refused(lines[-1] if lines else f"{' '.join(command)} refused the run")
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
                   poll: str | None = None, provider: str | None = None,
                   addresses: str | None = None) -> list[str]:
    """ndk_perf's arguments for these options (None: not given, the helper's default);
    ``knobs`` is ``--options``."""
    options: list[str] = []
    for name, value in (("size", size), ("iters", iters), ("warmup", warmup),
                        ("inflight", inflight), ("progress", progress), ("seconds", seconds),
                        ("connections", connections), ("batch", batch), ("count", count),
                        ("poll", poll), ("options", knobs), ("provider", provider),
                        ("addresses", addresses)):
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


def _provider(result: dict[str, Any]) -> str:
    """"soft provider", "loop provider", ...: the provider the run opened (soft: a helper
    from before --provider)."""
    return f"{result.get('provider', 'soft')} provider"


# perftest's latency columns, as ib_send_lat prints them (usec), and the result's key of each.
LATENCY_COLUMNS = (("t_min[usec]", "min_us"), ("t_max[usec]", "max_us"),
                   ("t_typical[usec]", "median_us"), ("t_avg[usec]", "avg_us"),
                   ("t_stdev[usec]", "stdev_us"), ("99% percentile[usec]", "p99_us"),
                   ("99.9% percentile[usec]", "p999_us"))


def _format_latency(results: Sequence[dict[str, Any]]) -> str:
    """One table for the latency results of one run over one or more sizes: perftest's
    header once, a row each."""
    first = results[0]
    test = first.get("test", "?")
    head = f"{'#bytes':>8} {'#iterations':>12}" + "".join(
        f" {name:>{max(len(name), 9)}}" for name, _ in LATENCY_COLUMNS)
    lines, stopped = [head], []
    for result in results:
        lat = result["latency"]
        size = str(int(result["size"])) if "size" in result else "-"  # cacheline: no message
        line = f"{size:>8} {int(lat['samples']):>12}"
        for name, key in LATENCY_COLUMNS:
            value = lat.get(key)  # a helper from before stdev_us: "-"
            text = "-" if value is None else f"{value:.2f}"
            line += f" {text:>{max(len(name), 9)}}"
        lines.append(line)
        iters = int(result.get("iters", 0))
        if 0 < int(lat["samples"]) < iters:  # only --seconds stops a run short
            stopped.append(f"{int(lat['samples'])} of {iters} samples taken" +
                           (f" at {size} bytes" if len(results) > 1 else ""))
    if test == "cacheline":
        title = ("cacheline: one cache line bounced between two busy-waiting threads, no "
                 f"provider (the floor of send_lat --threads); sample = {first.get('sample', '')}")
    else:
        title = (f"{test}: {_provider(first)}, raw NDK ABI, {first.get('mode', '')}, "
                 f"progress={first.get('progress', 'auto')}{_polling(first)}; "
                 f"sample = {first.get('sample', '')}")
    title = _with_knobs(title, first)
    if stopped:
        title += "\nstopped by --seconds: " + "; ".join(stopped)
    return _table(title, "\n".join(lines))


def _format_bandwidth(results: Sequence[dict[str, Any]]) -> str:
    """One table for the bandwidth results of one run over one or more sizes: ib_write_bw's
    header once, a row each."""
    first = results[0]
    head = (f"{'#bytes':>8} {'#iterations':>12} {'BW peak[MB/sec]':>16} "
            f"{'BW average[MB/sec]':>19} {'MsgRate[Mpps]':>14}")
    lines = [head] + [
        f"{int(r['size']):>8} {int(r['iters']):>12} {r['peak_mb_s']:>16.2f} "
        f"{r['avg_mb_s']:>19.2f} {r['msg_rate_mpps']:>14.6f}" for r in results]
    where = ("the target in another process" if first.get("mode") == "processes"
             else "one thread")
    title = (f"{first.get('test', '?')}: {_provider(first)}, raw NDK ABI, {where}, "
             f"{int(first.get('inflight', 0))} in flight{_polling(first)}")
    return _table(_with_knobs(title, first), "\n".join(lines))


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
    title = (f"msg_rate: {_provider(result)}, raw NDK ABI, RDMA {result.get('op', 'write')}, "
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
    title = (f"poll_rate: {_provider(result)}, raw NDK ABI, one thread: a CQ filled with "
             f"{int(result['count'])} RDMA write completions, drained {int(result['batch'])} "
             "at a time by NdkGetCqResultsEx")
    return _table(_with_knobs(title, result), "\n".join([head, poll, both]))


def format_result(result: dict[str, Any]) -> str:
    """perftest-style lines for one ndk_perf result (any other: its JSON, indented)."""
    return format_results([result])


def format_results(results: Sequence[dict[str, Any]]) -> str:
    """perftest-style tables for the results of one run over one or more sizes: the latency
    and bandwidth results in one table with one header (as ``perftest -a``), any other a
    table each (its JSON, indented, for a result no table knows)."""
    if all("latency" in r for r in results):
        return _format_latency(results)
    if all("peak_mb_s" in r for r in results):
        return _format_bandwidth(results)
    tables = []
    for result in results:
        if "aggregate_mops" in result:
            tables.append(_format_msg_rate(result))
        elif "completions_per_s" in result:
            tables.append(_format_poll_rate(result))
        else:
            tables.append(json.dumps(result, indent=2))
    return "\n".join(tables)


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
        poll: str | None = None, provider: str | None = None, addresses: str | None = None,
        out=None) -> int:
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
                                 knobs=knobs, poll=poll, provider=provider,
                                 addresses=addresses)
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
        print(format_results(results), file=out)
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
    "provider": _EVERY_BUT_CACHELINE,
    "addresses": _EVERY_BUT_CACHELINE,
    "plot": SAMPLED_TESTS + BANDWIDTH_TESTS,
}


# Why a test that takes almost every option does not take one.
_WHY_NOT = {(option, "cacheline"): "it opens no adapter"
            for option in ("options", "provider", "addresses")}


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
    return check_range(value, text, SIZE_RANGE)


def plot_argument(text: str) -> str:
    """An argparse type: a picture file name ending in .png or .svg, in a folder that exists."""
    import argparse

    if Path(text).suffix.lower() not in (".png", ".svg"):
        raise argparse.ArgumentTypeError(f"{text!r}: the file name must end in .png or .svg")
    return new_file(text)


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
  send_lat write_lat read_lat  latency: t_min, t_max, t_typical, t_avg, t_stdev, 99% and 99.9%
                               percentiles (usec), as ib_send_lat prints them
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
  --processes                  send_lat, write_bw, read_bw (a provider that reaches another
                               process: soft:shm, soft:tcp, verbs:DEV; not soft, loop)
  --poll                       send_lat, bandwidth (spin, or yield after each empty poll)
  --inflight                   bandwidth
  --connections                msg_rate; --count: poll_rate
  --batch                      msg_rate (1..1024), poll_rate (1..4194304)
  --options, --provider,       every test but cacheline
  --addresses
  --plot                       latency, cacheline, bandwidth
"""


def add_arguments(parser) -> None:
    """The ``ndk perf`` arguments (cli.py adds the subcommand)."""
    import argparse

    parser.description = ("perftest-style runs of a provider (soft by default) through the "
                          "raw NDK ABI (bench/ndk_perf.cpp), in perftest's columns; --json "
                          "prints the helper's raw results.")
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
                        help="iterations, exactly (bandwidth tests: requests, --inflight of "
                             "them outstanding; msg_rate: writes per connection; poll_rate: rounds "
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
                             "waits); needs a provider that reaches another process (soft:shm, "
                             "soft:tcp, verbs:DEV)")
    parser.add_argument("--poll", choices=("spin", "yield"),
                        help="send_lat, bandwidth tests: spin on the CQ (default, as perftest; "
                             "yield for soft's tcp transport), or yield the core after each "
                             "empty poll, so that a transport whose transfers run on the "
                             "provider's threads (shm, tcp) gets it")
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
    parser.add_argument("--provider", "-p", metavar="P",
                        help="the provider whose adapters the test opens, as ndk conformance "
                             "names it: soft (default), soft:tcp, soft:shm, loop, verbs:DEV, or "
                             "the path of a provider's .so; not cacheline")
    parser.add_argument("--addresses", metavar="CLIENT,SERVER",
                        help="the two adapters' IPv4 addresses (knob address=); default: the "
                             "provider's own (verbs:DEV), or ones it takes (soft, loop: "
                             "198.51.100.x; soft:tcp: 127.x.y.z, on this host)")
    parser.add_argument("--json", action="store_true", help="print the raw JSON results")
    parser.add_argument("--plot", metavar="FILE", type=plot_argument,
                        help="also draw the results into FILE (.png or .svg, matplotlib): "
                             "latency tests and cacheline the distribution of the "
                             "per-iteration samples "
                             "(histogram and CDF, p50/p99/p99.9 marked), bandwidth tests "
                             "bandwidth against message size (with --all or several --size)")
    parser.set_defaults(perf_parser=parser)


def default_poll(test: str, provider: str, knobs: str | None) -> str | None:
    """--poll when not given: yield for a transport whose transfers run on the provider's own
    threads over the kernel's sockets (soft's tcp), which two spinning sides on a small machine
    starve (a round trip then waits for the scheduler: ``send_lat --processes --provider
    soft:tcp`` did not finish 100000 iterations in 600 s on 2 loaded cores, 2000 with yield
    took 0.2 s); None (the helper's spin, as perftest) otherwise."""
    if test in OPTION_TESTS["poll"] and transport_of(provider, knob_lines(knobs)) == "tcp":
        return "yield"
    return None


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
    provider = getattr(args, "provider", None) or "soft"
    if args.processes:
        why = cannot_reach_another_process(provider, args.knobs)
        if why:
            error(f"argument --processes: {why}")
    if args.progress is not None and base_provider(provider) != "soft":
        error(f"argument --progress: the soft provider's knob, not {provider}'s")
    if getattr(args, "addresses", None) is not None:
        check_addresses(args.addresses, error)
    if args.batch is not None:
        lo, hi = BATCH_RANGES[args.test]
        if not lo <= args.batch <= hi:
            error(f"argument --batch: {args.batch} is out of range for {args.test} "
                  f"(valid: {lo}..{hi})")


def knob_lines(text: str | None) -> dict[str, str]:
    """``--options`` text ("key=value", ';' or newlines between them) as a dict."""
    knobs = {}
    for part in re.split(r"[;\n]", text or ""):
        key, _, value = part.partition("=")
        if key.strip():
            knobs[key.strip()] = value.strip()
    return knobs


def cannot_reach_another_process(provider: str, knobs: str | None) -> str | None:
    """Why two adapters of ``provider`` (with ``--options`` ``knobs``) cannot be in two
    processes of this host, or None (also when the harness does not know the provider: the
    run is tried).  The rule of the pair scenarios (:data:`ndk._peer.REACH`)."""
    opts = knob_lines(knobs)
    if reach_of(provider, opts) != PROCESS:
        return None
    if base_provider(provider) == "soft":
        return (f"{provider} with transport={transport_of(provider, opts)} reaches only adapters "
                f"of its own process; use --provider soft:shm or soft:tcp")
    return f"{provider} reaches only adapters of its own process"


def check_addresses(text: str, error) -> None:
    """``--addresses``: two IPv4 addresses, CLIENT,SERVER."""
    import ipaddress

    parts = text.split(",")
    try:
        if len(parts) != 2:
            raise ValueError(text)
        for part in parts:
            ipaddress.IPv4Address(part.strip())
    except ValueError:
        error(f"argument --addresses: {text!r} is not CLIENT,SERVER (two IPv4 addresses)")


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
                   poll=args.poll or default_poll(args.test, args.provider or "soft", args.knobs),
                   provider=args.provider, addresses=args.addresses,
                   knobs=args.knobs, as_json=args.json, plot=args.plot)
    except Refused as exc:  # the provider does not load or open, or cannot run this: exit 2
        import sys

        print(f"ndk perf: {exc}", file=sys.stderr)
        return 2
    except (FileNotFoundError, RuntimeError, PlotError) as exc:
        import sys

        print(f"ndk perf: {exc}", file=sys.stderr)
        return 1
