"""Pictures of ``ndk perf`` results: ``ndk perf ... --plot FILE.png|FILE.svg``.

Drawn with matplotlib (Debian's python3-matplotlib) on its Agg canvas, without pyplot, so no
display and no global state are involved:

- latency tests (``*_lat``, and ``cacheline``): the distribution of the per-iteration samples
  ``ndk_perf --samples`` wrote -- a histogram (log-spaced bins, log axes: the tail stays
  visible) and the CDF (logit scale, so that p50, p99 and p99.9 are equally far apart), both
  with p50, p99 and p99.9 marked; with several sizes each size gets a colour, and a third
  panel shows the three percentiles against the message size;
- bandwidth tests (``*_bw``): peak and average bandwidth (MB/s, 10^6 bytes) against the message
  size, and the message rate (Mpps) on a second axis; one point per size run (``--size``
  repeated, or ``--all``).

:func:`draw` returns the figure (tests read its texts); :func:`save` writes it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

PERCENTILES = ((0.50, "p50"), (0.99, "p99"), (0.999, "p99.9"))
_PERCENTILE_STYLE = {"p50": ("tab:green", "o"), "p99": ("tab:orange", "s"), "p99.9": ("tab:red", "^")}
FORMATS = (".png", ".svg")
_CDF_POINTS = 2000  # points drawn per CDF curve (the samples can be 10^5 or more)


class PlotError(Exception):
    """The picture cannot be drawn (no matplotlib, no samples, an unknown file type)."""


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile as ndk_perf computes it: the value at index ceil(q * n) - 1."""
    n = len(sorted_values)
    index = max(0, min(n - 1, math.ceil(q * n) - 1))
    return sorted_values[index]


def format_size(size: int) -> str:
    """64 -> "64 B", 4096 -> "4 KiB", 1048576 -> "1 MiB"."""
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def require_matplotlib() -> None:
    """PlotError unless matplotlib can be imported."""
    try:
        import matplotlib  # type: ignore[import] # noqa: F401
    except ImportError as exc:
        raise PlotError("--plot needs matplotlib (Debian: apt-get install python3-matplotlib)") from exc


def _figure(width: float, height: float):
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # type: ignore[import]
    from matplotlib.figure import Figure  # type: ignore[import]

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _title(result: dict[str, Any], extra: str = "") -> str:
    test = result.get("test", "?")
    if test == "cacheline":  # no provider: one cache line between two threads
        how = "one cache line bounced between two busy-waiting threads, no provider"
        what = f"sample = {result.get('sample', '')}"
    elif "latency" in result:
        how = f"{result.get('mode', '')}, progress={result.get('progress', 'auto')}"
        what = f"sample = {result.get('sample', '')}"
    else:
        how = f"{int(result.get('inflight', 0))} in flight"
        what = ""
    where = ("" if test == "cacheline"
             else f"{result.get('provider', 'soft')} provider, raw NDK ABI, ")
    parts = [f"ndk perf {test}: {where}{how}", what, extra]
    return "; ".join(p for p in parts if p)


def _us(samples_ns: Sequence[float]) -> list[float]:
    return sorted(v / 1000.0 for v in samples_ns)


def _cdf_points(values_us: Sequence[float]) -> tuple[list[float], list[float]]:
    """At most _CDF_POINTS (x, cumulative fraction) pairs, spread evenly on the logit scale so
    both the body and the far tail keep their shape; fractions stay strictly inside (0, 1)."""
    n = len(values_us)
    indices: Sequence[int]
    if n <= _CDF_POINTS:
        indices = range(n)
    else:
        lo, hi = math.log(1 / n), math.log(n - 1)  # logit of 1/(n+1) .. n/(n+1), roughly
        picks = set()
        for k in range(_CDF_POINTS):
            t = lo + (hi - lo) * k / (_CDF_POINTS - 1)
            picks.add(min(n - 1, max(0, round(n / (1 + math.exp(-t))) - 1)))
        picks.update((0, n - 1))  # the minimum and the maximum always
        indices = sorted(picks)
    return [values_us[i] for i in indices], [(i + 1) / (n + 1) for i in indices]


def _log_bins(lo: float, hi: float, count: int) -> list[float]:
    lo, hi = max(lo, 1e-3), max(hi, lo * 1.0001)
    step = (math.log(hi) - math.log(lo)) / count
    return [math.exp(math.log(lo) + i * step) for i in range(count + 1)]


def draw_latency(runs: Sequence[tuple[dict[str, Any], Sequence[float]]]):
    """Histogram and CDF of each run's samples (ns), percentiles marked; a figure."""
    if not runs or any(not samples for _, samples in runs):
        raise PlotError("no latency samples to draw")
    several = len(runs) > 1
    fig = _figure(16 if several else 12, 5.2)
    axes = fig.subplots(1, 3 if several else 2)
    hist, cdf = axes[0], axes[1]
    colours = [f"C{i % 10}" for i in range(len(runs))]
    every = [_us(samples) for _, samples in runs]
    bins = _log_bins(min(v[0] for v in every), max(v[-1] for v in every), 120)
    marks: list[tuple[int, str, float]] = []  # (run, label, value in us)
    for i, ((result, _), values) in enumerate(zip(runs, every)):
        size = format_size(int(result["size"])) + ", " if "size" in result else ""
        label = f"{size}{len(values)} samples"
        hist.hist(values, bins=bins, histtype="step" if several else "stepfilled",
                  color=colours[i], alpha=1.0 if several else 0.55, label=label if several else None)
        xs, ys = _cdf_points(values)
        cdf.plot(xs, ys, color=colours[i], linewidth=1.4, label=label if several else None)
        for q, name in PERCENTILES:
            marks.append((i, name, quantile(values, q)))

    level = {name: q for q, name in PERCENTILES}
    for i, name, value in marks:
        colour, marker = _PERCENTILE_STYLE[name]
        mark = f"{name} = {value:.3f} µs" if not several else (name if i == 0 else None)
        cdf.plot([value], [level[name]], marker=marker, color=colour, markersize=8,
                 linestyle="none", markeredgecolor="black", zorder=5, label=mark)
        if not several:
            hist.axvline(value, color=colour, linestyle="--", linewidth=1.3, label=mark)

    hist.set_xscale("log")
    hist.set_yscale("log")
    hist.set_xlabel("latency (µs, log scale)")
    hist.set_ylabel("samples per bin (log scale)")
    hist.set_title("histogram")
    hist.grid(True, which="major", alpha=0.3)
    hist.legend(loc="upper right", fontsize=9)

    cdf.set_xscale("log")
    cdf.set_yscale("logit")
    n_max = max(len(v) for v in every)
    levels = [q for q in (0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999) if q < 1 - 1 / n_max]
    cdf.set_yticks(levels)
    cdf.set_yticklabels([f"{q * 100:g}%" for q in levels])
    cdf.minorticks_off()
    cdf.set_ylim(0.01, 1 - 0.5 / (n_max + 1))
    cdf.set_xlabel("latency (µs, log scale)")
    cdf.set_ylabel("samples at or below the latency (logit scale)")
    cdf.set_title("CDF")
    cdf.grid(True, which="major", alpha=0.3)
    for q, name in PERCENTILES:
        cdf.axhline(q, color=_PERCENTILE_STYLE[name][0], linewidth=0.8, alpha=0.5)
    cdf.legend(loc="lower right", fontsize=9)
    if several:
        by_size = axes[2]
        sizes = [int(result.get("size", 0)) for result, _ in runs]
        for q, name in PERCENTILES:
            colour, marker = _PERCENTILE_STYLE[name]
            by_size.plot(sizes, [quantile(values, q) for values in every], marker=marker,
                         color=colour, label=name)
        by_size.set_xscale("log", base=2)
        _log_y(by_size, [quantile(values, q) for values in every for q, _ in PERCENTILES])
        by_size.set_xticks(sizes)
        by_size.set_xticklabels([format_size(s) for s in sizes], rotation=45, ha="right", fontsize=8)
        by_size.set_xlabel("message size")
        by_size.set_ylabel("latency (µs, log scale)")
        by_size.set_title("percentiles by message size")
        by_size.grid(True, which="major", alpha=0.3)
        by_size.legend(fontsize=9)
    first = runs[0][0]
    extra = "" if several or "size" not in first else \
        f"{format_size(int(first['size']))} messages"  # cacheline: no message
    fig.suptitle(_title(first, extra), fontsize=11)
    return fig


def _log_y(axis, values: Sequence[float]) -> None:
    """A log y axis labelled at 1, 2, 5 x 10^k in plain numbers, with room around the values
    (a single size or a flat curve would otherwise get no labelled tick at all)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # type: ignore[import]

    axis.set_yscale("log")
    axis.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 10 else f"{v:g}"))
    axis.yaxis.set_minor_formatter(NullFormatter())
    positive = [v for v in values if v > 0]
    if positive:
        axis.set_ylim(min(positive) / 1.6, max(positive) * 1.6)


def draw_bandwidth(results: Sequence[dict[str, Any]]):
    """Peak and average bandwidth, and message rate, against the message size; a figure."""
    if not results:
        raise PlotError("no bandwidth results to draw")
    ordered = sorted(results, key=lambda r: int(r["size"]))
    sizes = [int(r["size"]) for r in ordered]
    fig = _figure(10, 5.2)
    from matplotlib.ticker import NullLocator

    ax = fig.subplots()
    ax.plot(sizes, [r["peak_mb_s"] for r in ordered], marker="^", color="tab:blue",
            label="peak bandwidth (best run of requests)")
    ax.plot(sizes, [r["avg_mb_s"] for r in ordered], marker="o", color="tab:green",
            label="average bandwidth")
    ax.set_xscale("log", base=2)
    _log_y(ax, [r["peak_mb_s"] for r in ordered] + [r["avg_mb_s"] for r in ordered])
    ax.set_xticks(sizes)
    ax.set_xticklabels([format_size(s) for s in sizes], rotation=45 if len(sizes) > 6 else 0,
                       ha="right" if len(sizes) > 6 else "center", fontsize=9)
    ax.xaxis.set_minor_locator(NullLocator())  # only the sizes run are ticked
    ax.set_xlabel("message size")
    ax.set_ylabel("bandwidth (MB/s, 1 MB = 10⁶ bytes; log scale)")
    ax.grid(True, which="major", alpha=0.3)
    rate = ax.twinx()
    rate.plot(sizes, [r["msg_rate_mpps"] for r in ordered], marker="s", linestyle="--",
              color="tab:gray", label="message rate")
    _log_y(rate, [r["msg_rate_mpps"] for r in ordered])
    rate.set_ylabel("message rate (Mpps, log scale)", color="tab:gray")
    if len(sizes) == 1:  # one point per curve: the figures, in words
        r = ordered[0]
        ax.text(0.02, 0.96, f"peak {r['peak_mb_s']:,.0f} MB/s\naverage {r['avg_mb_s']:,.0f} MB/s\n"
                f"message rate {r['msg_rate_mpps']:.3f} Mpps", transform=ax.transAxes,
                va="top", fontsize=10, bbox={"facecolor": "white", "edgecolor": "#bbb"})
    elif len(sizes) <= 4:
        for r in ordered:
            ax.annotate(f"{r['avg_mb_s']:.0f} MB/s", (int(r["size"]), r["avg_mb_s"]),
                        xytext=(6, -12), textcoords="offset points", fontsize=9, color="tab:green")
    if len(sizes) == 1:
        ax.set_xlim(sizes[0] / 4, sizes[0] * 4)
    handles = ax.get_legend_handles_labels()
    more = rate.get_legend_handles_labels()
    # Above the plot: inside, it would hide a curve of one axis or the other.
    ax.legend(handles[0] + more[0], handles[1] + more[1], loc="lower center",
              bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=9, frameon=False)
    iters = ", ".join(sorted({str(int(r.get("iters", 0))) for r in ordered}))
    fig.suptitle(_title(ordered[0], f"{iters} messages per size"), fontsize=11)
    return fig


def draw(results: Sequence[dict[str, Any]], samples: Sequence[Sequence[float]] | None = None):
    """The picture for one ``ndk perf`` command: ``results`` as ndk_perf printed them, one per
    size; ``samples`` the latency samples (ns) of each, for latency tests."""
    if results and all("latency" in r for r in results):
        if samples is None or len(samples) != len(results):
            raise PlotError("latency plots need the per-iteration samples of every size")
        return draw_latency(list(zip(results, samples)))
    if results and all("peak_mb_s" in r for r in results):
        return draw_bandwidth(results)
    raise PlotError("only latency (*_lat) and bandwidth (*_bw) results can be drawn")


def check_path(path: str | Path) -> Path:
    """The plot file's path if its suffix is a known picture format and its folder exists (none
    is created: a mistyped folder is an error, not a new tree), else PlotError."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise PlotError(f"--plot {path}: the file name must end in .png or .svg")
    if not path.parent.is_dir():
        raise PlotError(f"--plot {path}: the folder {str(path.parent)!r} does not exist")
    return path


def save(fig, path: str | Path) -> Path:
    """Write the figure as PNG or SVG, by the file's suffix."""
    path = check_path(path)
    import matplotlib

    # SVG: text stays <text> (searchable, selectable, smaller) rather than glyph outlines.
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(path, format=path.suffix.lower()[1:])
    return path
