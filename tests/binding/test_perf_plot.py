"""``ndk perf --plot`` with the real ``ndk_perf`` (perf.find_helper): the samples it writes
with ``--samples`` are the ones its JSON summarises, and the picture is drawn from them."""

import json
import subprocess

import pytest

from ndk import perf
from ndk._perfplot import quantile

pytest.importorskip("matplotlib", reason="python3-matplotlib is not installed")


@pytest.fixture(scope="module")
def helper():
    try:
        path = perf.find_helper()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    usage = subprocess.run([path, "--help"], capture_output=True, text=True, check=False)
    if "--samples" not in usage.stdout + usage.stderr:
        pytest.skip(f"{path} predates --samples: rebuild the ndk_perf target")
    return path


@pytest.mark.parametrize("test", ["send_lat", "write_lat", "read_lat"])
def test_samples_file_holds_every_timed_iteration(helper, tmp_path, test):
    path = tmp_path / "samples.txt"
    done = subprocess.run([helper, test, "--iters", "500", "--warmup", "10", "--samples", str(path)],
                          capture_output=True, text=True, timeout=60, check=True)
    latency = json.loads(done.stdout)["latency"]
    samples = sorted(perf.read_samples(path))
    assert len(samples) == latency["samples"] == 500
    assert samples[0] / 1000 == pytest.approx(latency["min_us"], rel=1e-3)
    assert samples[-1] / 1000 == pytest.approx(latency["max_us"], rel=1e-3)
    assert quantile(samples, 0.99) / 1000 == pytest.approx(latency["p99_us"], rel=1e-3)


def test_perf_plot_png_from_the_real_helper(helper, tmp_path, capsys):
    picture = tmp_path / "write_lat.png"
    assert perf.run("write_lat", [64], 2000, plot=str(picture)) == 0
    assert f"plot: {picture}" in capsys.readouterr().out
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
