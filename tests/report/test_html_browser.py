"""The HTML report of a real run, as Chromium lays it out (Debian's ``chromium``, headless).

One small ``ndk conformance`` run against soft and loop (whose cells differ: loop lacks shared
receive queues and soft-only knobs; one scenario's violations fill the widest tables) writes
the report; Chromium loads a copy with
layout_check.js appended, which measures the page and writes its findings into the DOM that
``--dump-dom`` prints: the legend, every cell and every family label lie inside the picture's
viewBox, the page does not scroll sideways in a 1280 px window, and the rule filter hides
what does not match.  A screenshot shows the states' colours in the drawn picture.

tests/setup.sh installs chromium: a missing browser is an error of the environment, not a skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html import unescape
from pathlib import Path

import matplotlib.image as image  # python3-matplotlib (tests/setup.sh) reads the PNG
import pytest

from ndk._html import _CELL_H, _CELL_W, DIFFERS_COLOUR, PICTURE_COLOURS

ROOT = Path(__file__).resolve().parents[2]
CHECK = Path(__file__).with_name("layout_check.js")
WIDTH, HEIGHT = 1280, 900
# SRQ scenarios run on soft and skip on loop (no SRQ); the CQ creation ones run on both; an
# undocumented status fills the validation layer's tables, the widest of the page.
KEYWORD = "test_srq or test_create_cq or test_undocumented_status"


def chromium(*args: str) -> subprocess.CompletedProcess:
    """Run headless Chromium (never under the sanitizer runtime CTest preloads in an ASan tree:
    the browser is not ours)."""
    browser = shutil.which("chromium")
    assert browser, "chromium is not installed (tests/setup.sh installs Debian's chromium)"
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    return subprocess.run([browser, "--headless", "--disable-gpu", "--no-sandbox",
                           f"--window-size={WIDTH},{HEIGHT}", *args],
                          capture_output=True, text=True, timeout=180, check=True, env=env)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """The HTML report of `ndk conformance -k KEYWORD --provider soft --provider loop`."""
    out = tmp_path_factory.mktemp("report") / "report.html"
    run = subprocess.run([sys.executable, "-m", "ndk", "conformance", "--provider", "soft",
                          "--provider", "loop", "-k", KEYWORD, "--progress", "off",
                          "--scenarios", str(ROOT / "scenarios"), "--html", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return out


@pytest.fixture(scope="module")
def findings(report, tmp_path_factory) -> dict:
    """What layout_check.js measured in the laid-out page."""
    page = tmp_path_factory.mktemp("checked") / "report.html"
    text = report.read_text(encoding="utf-8")
    page.write_text(text.replace("</body>", f"<script>{CHECK.read_text()}</script>\n</body>"),
                    encoding="utf-8")
    dom = chromium("--dump-dom", page.as_uri()).stdout
    found = re.search(r'<pre id="layout-findings">(.*?)</pre>', dom, re.DOTALL)
    assert found, f"layout_check.js wrote no findings; the DOM ends with {dom[-500:]!r}"
    return json.loads(unescape(found.group(1)))


def test_the_window_is_the_asked_width(findings):
    assert findings["innerWidth"] == WIDTH


def test_the_page_does_not_scroll_sideways(report, findings):
    assert "<h3>Every violation</h3>" in report.read_text(encoding="utf-8")  # its widest table
    assert findings["scrollWidth"] <= findings["clientWidth"], findings
    assert findings["pictureRight"] <= findings["clientWidth"]


def test_the_legend_and_every_cell_lie_inside_the_picture(findings):
    assert findings["legendItems"] >= 2 * (len(PICTURE_COLOURS) + 1)  # a swatch and a text each
    assert findings["legendOutside"] == []
    assert findings["cells"] > 0
    assert findings["cellsOutside"] == []
    assert findings["labelsOutside"] == []


def test_the_filter_shows_exactly_the_rules_that_match(report, findings):
    rows = re.findall(r'<tr id="([^"]+)" data-text="([^"]*)" data-states="([^"]*)">',
                      report.read_text(encoding="utf-8"))
    assert len(rows) == findings["rows"]
    with_cq = [row_id for row_id, text, _ in rows if "cq" in unescape(text)]
    with_skip = [row_id for row_id, _, states in rows if "skip" in states.split()]
    assert findings["filteredCq"] == with_cq and 0 < len(with_cq) < len(rows)
    assert findings["filteredSkip"] == with_skip and 0 < len(with_skip) < len(rows)
    assert findings["filteredSkipHaveSkipCells"]
    assert findings["shownAfterReset"] == len(rows)
    assert findings["shownText"] == f"{findings['rows']} of {findings['rows']} rules shown"


def test_the_report_links_each_rule_to_its_scenario(report):
    page = report.read_text(encoding="utf-8")
    links = re.findall(r'<a href="(file://[^"]+)" title="[^"]+, line \d+"><code>([^<]+)</code>',
                       page)
    assert links
    for uri, label in links:
        path = Path(uri.removeprefix("file://"))
        assert path.is_file() and path.parent == (ROOT / "scenarios").resolve(), uri
        assert re.search(rf"def {label.split('::')[-1]}\(", path.read_text(encoding="utf-8"))


def test_a_screenshot_shows_the_states_colours(report, tmp_path):
    shot = tmp_path / "report.png"
    chromium("--hide-scrollbars", f"--screenshot={shot}", report.as_uri())
    pixels = image.imread(shot)  # rows x columns x RGB(A), floats 0..1
    assert pixels.shape[:2] == (HEIGHT, WIDTH)
    rgb = (pixels[..., :3] * 255).round()

    def painted(hex_colour):
        """Pixels of exactly this colour on the screen."""
        want = [int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]
        return int((rgb == want).all(axis=-1).sum())

    # More than the legend's swatch of each colour: the cells themselves were drawn.
    swatch = _CELL_W * _CELL_H
    for state in ("pass", "skip"):
        assert painted(PICTURE_COLOURS[state][0]) > 2 * swatch, state
    assert painted(DIFFERS_COLOUR) > 2 * _CELL_W * 3
    if os.environ.get("NDK_REPORT_SCREENSHOT"):  # keep it for a person to look at
        shutil.copy(shot, os.environ["NDK_REPORT_SCREENSHOT"])
