"""``ndk perf --plot``: the pictures (ndk._perfplot) and the command end to end.

The command runs against a stand-in ``ndk_perf`` (a Python script named by $NDK_PERF) that
prints a result as the real helper does and, for latency tests, writes the per-iteration
samples ``--samples FILE`` asks for: the real timing loops are not under test here.
"""

from __future__ import annotations

import json
import math
import random
import struct
import sys
import xml.etree.ElementTree as ET

import pytest

from ndk import cli, perf

matplotlib = pytest.importorskip("matplotlib", reason="python3-matplotlib is not installed")

from ndk import _perfplot  # noqa: E402  (needs nothing at import, but only matters with matplotlib)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def latency_samples(n=20000, seed=7):
    """ns: a body around 200 ns and a tail up to ~50 us, like the soft provider's."""
    rng = random.Random(seed)
    return [rng.lognormvariate(math.log(200), 0.08) if rng.random() < 0.985
            else rng.uniform(1000, 50000) for _ in range(n)]


def latency_result(size=64, samples=()):
    ordered = sorted(samples)
    return {"test": "send_lat", "size": size, "iters": len(ordered), "mode": "one_thread",
            "progress": "auto", "sample": "half round trip",
            "latency": {"samples": len(ordered), "min_us": ordered[0] / 1000,
                        "median_us": _perfplot.quantile(ordered, 0.5) / 1000}}


def bandwidth_result(size):
    return {"test": "write_bw", "size": size, "iters": 1984, "inflight": 64,
            "peak_mb_s": size * 8.0, "avg_mb_s": size * 7.0, "msg_rate_mpps": 7.0 / (1 + size / 4096)}


def texts(fig):
    """Every text the figure shows: titles, labels, tick labels, legend entries, annotations."""
    import matplotlib.text

    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_quantile_is_the_helpers():
    values = list(range(1, 1001))
    assert [_perfplot.quantile(values, q) for q in (0.5, 0.99, 0.999)] == [500, 990, 999]
    assert _perfplot.quantile([5.0], 0.999) == 5.0


def test_sizes_read_as_people_write_them():
    assert [_perfplot.format_size(s) for s in (8, 1000, 4096, 65536, 1 << 20, 1536)] == [
        "8 B", "1000 B", "4 KiB", "64 KiB", "1 MiB", "1536 B"]


def test_latency_figure_marks_p50_p99_p999_with_their_values(tmp_path):
    samples = latency_samples()
    fig = _perfplot.draw([latency_result(64, samples)], [samples])
    shown = texts(fig)
    ordered = sorted(v / 1000 for v in samples)
    for q, name in _perfplot.PERCENTILES:
        assert f"{name} = {_perfplot.quantile(ordered, q):.3f} µs" in shown, (name, shown)
    assert {"histogram", "CDF"} <= set(shown)
    assert "latency (µs, log scale)" in shown
    assert "50%" in shown and "99%" in shown and "99.9%" in shown  # CDF axis in percent
    assert any(t.startswith("ndk perf send_lat:") and "64 B messages" in t for t in shown)
    hist, cdf = fig.axes
    assert hist.get_xscale() == "log" and cdf.get_yscale() == "logit"

    png = _perfplot.save(fig, tmp_path / "lat.png")
    width, height = png_size(png)
    assert width > 1000 and height > 400

    svg = _perfplot.save(fig, tmp_path / "lat.svg")
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    svg_texts = "".join(root.itertext())
    assert "p99.9 = " in svg_texts and "histogram" in svg_texts


def test_latency_figure_with_several_sizes_adds_percentiles_by_size():
    runs = [latency_samples(5000, seed) for seed in (1, 2, 3)]
    results = [latency_result(size, s) for size, s in zip((64, 4096, 65536), runs)]
    fig = _perfplot.draw(results, runs)
    assert len(fig.axes) == 3
    shown = texts(fig)
    assert {"p50", "p99", "p99.9", "percentiles by message size"} <= set(shown)
    assert {"64 B", "4 KiB", "64 KiB"} <= set(shown)
    assert "4 KiB, 5000 samples" in shown


def test_bandwidth_figure_plots_against_message_size(tmp_path):
    sizes = [1 << k for k in range(3, 21)]
    fig = _perfplot.draw([bandwidth_result(s) for s in reversed(sizes)])  # any order in
    ax = fig.axes[0]
    peak = next(line for line in ax.get_lines() if line.get_label().startswith("peak"))
    assert list(peak.get_xdata()) == sizes  # drawn in size order
    shown = texts(fig)
    assert {"8 B", "1 KiB", "1 MiB", "message size", "message rate (Mpps, log scale)"} <= set(shown)
    assert "bandwidth (MB/s, 1 MB = 10⁶ bytes; log scale)" in shown
    assert {"peak bandwidth (best run of requests)", "average bandwidth", "message rate"} <= set(shown)
    png_size(_perfplot.save(fig, tmp_path / "bw.png"))


def test_a_single_bandwidth_point_states_its_figures_in_words():
    fig = _perfplot.draw([bandwidth_result(4096)])
    assert "peak 32,768 MB/s\naverage 28,672 MB/s\nmessage rate 3.500 Mpps" in texts(fig)


def test_a_latency_plot_needs_samples_and_a_known_format():
    with pytest.raises(_perfplot.PlotError, match="samples"):
        _perfplot.draw([latency_result(64, [1.0])])
    with pytest.raises(_perfplot.PlotError, match=r"\.png or \.svg"):
        _perfplot.check_path("plot.jpg")


# --- the command, against a stand-in helper -------------------------------------------------

FAKE_HELPER = """\
#!{python}
import json, sys
test, args = sys.argv[1], sys.argv[2:]
options = dict(zip(args[::2], args[1::2]))
size = int(options.get("--size", 64))
if test.endswith("_lat"):
    iters = int(options.get("--iters", 1000))
    if {samples} and "--samples" in options:
        with open(options["--samples"], "w") as f:
            for i in range(iters):
                f.write(f"{{150.0 + (i * 7919) % 100 + (5000.0 if i % 500 == 0 else 0)}}\\n")
    print(json.dumps({{"test": test, "size": size, "iters": iters, "mode": "one_thread",
                      "progress": "auto", "sample": "half round trip",
                      "latency": {{"samples": iters, "min_us": 0.15, "median_us": 0.2, "avg_us": 0.2,
                                  "p99_us": 0.25, "p999_us": 5.1, "max_us": 5.2}}}}))
else:
    print(json.dumps({{"test": test, "size": size, "iters": 1000, "inflight": 64,
                      "peak_mb_s": size * 2.0, "avg_mb_s": size * 1.5, "avg_gb_s": 0,
                      "peak_gb_s": 0, "msg_rate_mpps": 1.5}}))
"""


@pytest.fixture
def fake_helper(tmp_path, monkeypatch):
    def make(samples=True):
        path = tmp_path / ("ndk_perf" if samples else "old_ndk_perf")
        path.write_text(FAKE_HELPER.format(python=sys.executable, samples=samples))
        path.chmod(0o755)
        monkeypatch.setenv("NDK_PERF", str(path))
        return path

    return make


def test_perf_plot_draws_the_latency_distribution(fake_helper, tmp_path, capsys):
    fake_helper()
    picture = tmp_path / "send_lat.png"  # in a folder that exists: --plot makes none
    assert cli.main(["perf", "send_lat", "--iters", "2000", "--plot", str(picture)]) == 0
    out = capsys.readouterr().out
    assert f"plot: {picture}" in out and "99.9% percentile[usec]" in out
    width, height = png_size(picture)
    assert width > 1000 and height > 400


def test_perf_plot_draws_a_bandwidth_sweep_as_svg(fake_helper, tmp_path, capsys):
    fake_helper()
    picture = tmp_path / "write_bw.svg"
    assert cli.main(["perf", "write_bw", "--size", "4k", "--size", "64k", "--size", "1m",
                     "--plot", str(picture), "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert [r["size"] for r in results] == [4096, 65536, 1 << 20]
    svg = "".join(ET.parse(picture).getroot().itertext())
    assert "4 KiB" in svg and "64 KiB" in svg and "1 MiB" in svg and "average bandwidth" in svg


def test_perf_plot_with_a_helper_that_writes_no_samples_says_rebuild(fake_helper, tmp_path, capsys):
    fake_helper(samples=False)
    assert cli.main(["perf", "read_lat", "--plot", str(tmp_path / "x.png")]) == 1
    assert "rebuild it (cmake --build build --target ndk_perf)" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_perf_plot_rejects_an_unknown_picture_format_before_running(fake_helper, tmp_path, capsys):
    fake_helper()
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["perf", "send_lat", "--plot", str(tmp_path / "x.jpg")])
    assert exit_info.value.code == 2
    assert "must end in .png or .svg" in capsys.readouterr().err
