"""``ndk perf``: perftest-style end-to-end runs of the soft provider.

The timing loops run in the C++ helper ``ndk_perf`` (bench/ndk_perf.cpp, built into the build
tree's ``bin/``), through the raw NDK ABI on two soft adapters in one process; this module
runs it, parses the JSON it prints and formats the figures as perftest does::

    ndk perf send_lat --size 64 --iters 100000
    ndk perf write_bw --size 1048576 --iters 2000 --json
    ndk perf send_lat --iters 100000 --plot send_lat.png     # histogram and CDF
    ndk perf write_bw --all --plot write_bw.svg              # bandwidth against message size

Latency tests print min / typical (median) / average / p99 / p99.9 in microseconds (send_lat:
half a round trip of a ping-pong, as ib_send_lat reports); bandwidth tests print peak and
average bandwidth (MB/s, 10^6 bytes) and the message rate (Mpps).
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
TESTS = LATENCY_TESTS + BANDWIDTH_TESTS


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
                   progress: str | None = None) -> list[str]:
    options: list[str] = []
    for name, value in (("size", size), ("iters", iters), ("warmup", warmup),
                        ("inflight", inflight), ("progress", progress)):
        if value is not None:
            options += [f"--{name}", str(value)]
    if threads:
        options.append("--threads")
    return options


def format_result(result: dict[str, Any]) -> str:
    """perftest-style lines for one ndk_perf result."""
    test = result.get("test", "?")
    rule = "-" * 95
    if "latency" in result:
        lat = result["latency"]
        head = (f"{'#bytes':>8} {'#iterations':>12} {'t_min[usec]':>12} {'t_typical[usec]':>16} "
                f"{'t_avg[usec]':>12} {'t_99%[usec]':>12} {'t_99.9%[usec]':>14}")
        line = (f"{int(result['size']):>8} {int(lat['samples']):>12} {lat['min_us']:>12.3f} "
                f"{lat['median_us']:>16.3f} {lat['avg_us']:>12.3f} {lat['p99_us']:>12.3f} "
                f"{lat['p999_us']:>14.3f}")
        title = (f" {test}: soft provider, raw NDK ABI, {result.get('mode', '')}, "
                 f"progress={result.get('progress', 'auto')}; sample = {result.get('sample', '')}")
        return "\n".join([rule, title, rule, head, line, rule])
    if "peak_mb_s" in result:
        head = (f"{'#bytes':>8} {'#iterations':>12} {'BW peak[MB/sec]':>16} "
                f"{'BW average[MB/sec]':>19} {'MsgRate[Mpps]':>14}")
        line = (f"{int(result['size']):>8} {int(result['iters']):>12} {result['peak_mb_s']:>16.2f} "
                f"{result['avg_mb_s']:>19.2f} {result['msg_rate_mpps']:>14.6f}")
        title = (f" {test}: soft provider, raw NDK ABI, one thread, "
                 f"{int(result.get('inflight', 0))} in flight")
        return "\n".join([rule, title, rule, head, line, rule])
    return json.dumps(result, indent=2)


def read_samples(path: str | os.PathLike) -> list[float]:
    """The latency samples (ns) ``ndk_perf --samples FILE`` wrote, one per line."""
    with open(path, encoding="ascii") as f:
        return [float(line) for line in f if line.strip()]


def run_with_samples(test: str, options: Sequence[str],
                     helper: str | None = None) -> tuple[dict[str, Any], list[float]]:
    """Run a latency test with ``--samples`` into a temporary file: (result, samples in ns)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ndk-perf-") as tmp:
        path = Path(tmp) / "samples.txt"
        rebuild = ("this ndk_perf writes no per-iteration samples (--samples): rebuild it "
                   "(cmake --build build --target ndk_perf)")
        try:
            result = run_helper(test, [*options, "--samples", str(path)], helper=helper)
        except RuntimeError as exc:
            if "unknown option --samples" in str(exc):
                raise RuntimeError(rebuild) from None
            raise
        if not path.is_file():  # older still: it ignored the option
            raise RuntimeError(rebuild)
        return result, read_samples(path)


def run(test: str, sizes: Sequence[int], iters: int | None, *, warmup: int | None = None,
        inflight: int | None = None, threads: bool = False, progress: str | None = None,
        as_json: bool = False, plot: str | None = None, out=None) -> int:
    """Run one perf test over one or more sizes, print the table (or JSON lines); exit code.

    ``plot``: also draw the results into this .png or .svg file (:mod:`ndk._perfplot`): the
    latency distribution of latency tests, bandwidth against message size for bandwidth tests.
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
                                 threads=threads, progress=progress)
        if plot and test in LATENCY_TESTS:
            result, values = run_with_samples(test, options)
            samples.append(values)
        else:
            result = run_helper(test, options)
        results.append(result)
    if as_json:
        print(json.dumps(results if len(results) > 1 else results[0], indent=2), file=out)
    else:
        for result in results:
            print(format_result(result), file=out)
    if plot:
        from ._perfplot import draw, save

        path = save(draw(results, samples if test in LATENCY_TESTS else None), plot)
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


def add_arguments(parser) -> None:
    """The ``ndk perf`` arguments (cli.py adds the subcommand)."""
    parser.add_argument("test", choices=TESTS, help="which test, as perftest names them")
    parser.add_argument("--size", "-s", action="append", type=size_argument, metavar="BYTES",
                        help="message size (repeatable; 4k, 1m accepted; default 64 for "
                             "latency, 65536 for bandwidth)")
    parser.add_argument("--all", "-a", action="store_true",
                        help="every power of two from 8 B to 1 MiB")
    parser.add_argument("--iters", "-n", type=whole_number(ITERS_RANGE), metavar="N",
                        help="iterations")
    parser.add_argument("--warmup", type=whole_number(WARMUP_RANGE), metavar="N",
                        help="latency tests: untimed iterations first")
    parser.add_argument("--inflight", type=whole_number(INFLIGHT_RANGE), metavar="N",
                        help="bandwidth tests: requests in flight (default 64)")
    parser.add_argument("--threads", action="store_true",
                        help="send_lat: run the pong side on its own thread (both busy-poll)")
    parser.add_argument("--progress", choices=("auto", "manual"),
                        help="latency tests: the soft engine's progress knob (manual: each "
                             "transfer is one engine step)")
    parser.add_argument("--json", action="store_true", help="print the raw JSON results")
    parser.add_argument("--plot", metavar="FILE", type=plot_argument,
                        help="also draw the results into FILE (.png or .svg, matplotlib): "
                             "latency tests the distribution of the per-iteration samples "
                             "(histogram and CDF, p50/p99/p99.9 marked), bandwidth tests "
                             "bandwidth against message size (with --all or several --size)")
    parser.set_defaults(perf_parser=parser)


def check_options(args) -> None:
    """The options that only some tests take (ndk_perf refuses the others): argparse's error,
    exit 2, before the helper starts."""
    wrong = []
    if args.test not in LATENCY_TESTS:
        wrong += [(name, "the latency tests") for name in ("warmup", "progress")
                  if getattr(args, name) is not None]
    if args.test != "send_lat" and args.threads:
        wrong.append(("threads", "send_lat"))
    if args.test not in BANDWIDTH_TESTS and args.inflight is not None:
        wrong.append(("inflight", "the bandwidth tests"))
    error = getattr(args, "perf_parser", None)
    error = error.error if error is not None else _raise_usage
    for name, which in wrong:
        error(f"argument --{name}: only for {which}, not {args.test}")
    if args.threads and args.progress == "manual":
        error("argument --threads: not with --progress manual (step from one thread only)")


def _raise_usage(message: str) -> None:
    import sys

    print(f"ndk perf: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def main_from_args(args) -> int:
    """Handler of ``ndk perf`` (argparse namespace from add_arguments)."""
    from ._perfplot import PlotError
    check_options(args)
    if args.all:
        sizes = [1 << k for k in range(3, 21)]
    elif args.size:
        sizes = args.size
    else:
        sizes = [64 if args.test in LATENCY_TESTS else 65536]
    try:
        return run(args.test, sizes, args.iters, warmup=args.warmup, inflight=args.inflight,
                   threads=args.threads, progress=args.progress, as_json=args.json,
                   plot=args.plot)
    except (FileNotFoundError, RuntimeError, PlotError) as exc:
        import sys

        print(f"ndk perf: {exc}", file=sys.stderr)
        return 1
