"""bench/compare's table on a real ``--tiny`` run (seconds of tiny runs of ndk_perf, fi_pingpong
and iperf3; no conformance suite): every row of issue 29 in its order, each with a figure and
its baseline, goal and result, or "not measured" and a reason; the figures a target compares
from alternating runs, and the runs in --json.  It checks the table's shape, never a time."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_perf_cli import built_helper

COMPARE = Path(__file__).resolve().parents[2] / "bench" / "compare"
ROUNDS = 2  # --tiny's alternating runs of each figure a target compares

# Issue 29's table and its "Done means", in the order bench/compare prints them; the value
# names the baseline each row's runs alternate with (None: a row of one run; "target": runs of
# ours against a fixed target, no baseline runs).
ISSUE_29_ROWS = [
    ("64 B half RTT, two threads, inproc (median)", "cacheline"),
    ("  the same against fi_pingpong shm", "fi_pingpong"),
    ("  its tail: p99 against its median", "ours"),
    ("64 B half RTT, two processes, shm (median)", "fi_pingpong"),
    ("  the same against the cache-line ping-pong", "cacheline"),
    ("  its tail: p99 against its median", "ours"),
    ("64 B half RTT, one thread (median)", "target"),
    ("1 MiB Write into another process, shm, buffers the peer cannot map", "cma"),
    ("1 MiB Read from another process, shm, buffers the peer cannot map", "cma"),
    ("1 MiB Write into another process, shm, zero-copy registration", "memcpy"),
    ("1 MiB Read from another process, shm, zero-copy registration", "memcpy"),
    ("soft:tcp 64 B half RTT, two processes (median)", "fi_pingpong"),
    ("soft:tcp 1 MiB Write, two processes", "iperf3"),
    ("message rate, 2 connections on 2 threads vs 1 on 1", "ours"),
]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    build = Path(built_helper()).parent.parent
    out = tmp_path_factory.mktemp("compare") / "figures.json"
    done = subprocess.run([sys.executable, str(COMPARE), "--build", str(build), "--tiny",
                           "--no-conformance", "--json", str(out)], capture_output=True,
                          text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, json.loads(out.read_text())


def issue_29_rows(figures):
    return [r for r in figures["table"] if r["section"].startswith("issue 29")]


def test_every_row_of_issue_29_in_its_order(tiny_run):
    _, figures = tiny_run
    assert figures["mode"] == "tiny" and figures["rounds"] == ROUNDS
    assert [r["target"] for r in issue_29_rows(figures)] == [t for t, _ in ISSUE_29_ROWS]


def test_each_row_has_a_figure_against_its_baseline_or_says_why_not(tiny_run):
    _, figures = tiny_run
    for row in issue_29_rows(figures):
        assert row["goal"], row
        if "not_measured" in row:
            assert row["not_measured"].strip(), row
            assert row["measured"] is None and row["ratio"] is None and row["met"] is None
            continue
        assert isinstance(row["measured"], (int, float)) and row["measured"] > 0, row
        if row["baseline"] is not None:
            assert row["ratio"] == pytest.approx(row["measured"] / row["baseline"]), row
            assert row["met"] in (True, False), row
        else:  # a baseline tool missing: no ratio, no verdict
            assert row["ratio"] is None and row["met"] is None, row


def test_compared_figures_are_medians_of_alternating_runs(tiny_run):
    _, figures = tiny_run
    tools = {"fi_pingpong": shutil.which("fi_pingpong"), "iperf3": shutil.which("iperf3")}
    for row, (_, against) in zip(issue_29_rows(figures), ISSUE_29_ROWS):
        if "not_measured" in row or against is None:
            continue
        measured, baseline = row["runs"]["measured"], row["runs"].get("baseline", [])
        assert len(measured) == ROUNDS and row["measured"] == pytest.approx(
            sorted(measured)[0] / 2 + sorted(measured)[1] / 2), row
        expected = 0 if against == "target" else ROUNDS if tools.get(against, True) else 0
        assert len(baseline) == expected, row
        if baseline:
            assert row["baseline"] == pytest.approx(sum(baseline) / 2), row


def test_the_zero_copy_rows_are_measured_against_memcpy(tiny_run):
    """soft:shm maps ndk.alloc's buffers (docs/transport.md, "Zero-copy"): both rows have
    figures, compared with memcpy's runs of the same rounds."""
    _, figures = tiny_run
    rows = {r["target"]: r for r in issue_29_rows(figures)}
    for what in ("Write into", "Read from"):
        row = rows[f"1 MiB {what} another process, shm, zero-copy registration"]
        assert "not_measured" not in row, row
        assert row["baseline_what"] == "GB/s memcpy 1 MiB aligned", row
        assert "--zero-copy" in row["note"], row


def test_the_printed_table_shows_rows_spreads_and_load(tiny_run):
    stdout, figures = tiny_run
    assert "load average at start" in stdout
    lines = stdout.splitlines()
    for row in issue_29_rows(figures):
        line = next(line for line in lines if line.startswith(row["target"]))
        if "not_measured" in row:
            assert f"not measured: {row['not_measured']}" in line
        elif len(row["runs"].get("measured", [])) == ROUNDS:
            assert f", {ROUNDS} runs]" in line, line


@pytest.mark.parametrize("section, prefix, heading", [
    ("shm-bulk", "1 MiB", "issue 29, 1 MiB across processes over shm"),
    ("tcp", "soft:tcp", "issue 29, soft:tcp across two processes"),
])
def test_a_section_runs_its_rows_alone(tmp_path, section, prefix, heading):
    """--section shm-bulk: only issue 29's four 1 MiB rows over shm; --section tcp: only its two
    soft:tcp rows.  Each in the whole table's order, with its figure and the runs behind its
    median and its baseline's (two alternating runs each with --tiny), or "not measured" and a
    reason; the section's heading in --json."""
    build = Path(built_helper()).parent.parent
    out = tmp_path / "section.json"
    done = subprocess.run([sys.executable, str(COMPARE), "--build", str(build), "--tiny",
                           "--section", section, "--json", str(out)], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(out.read_text())
    assert [r["target"] for r in figures["table"]] == [
        t for t, _ in ISSUE_29_ROWS if t.startswith(prefix)]
    for row in figures["table"]:
        assert row["section"].startswith(heading), row
        if "not_measured" in row:
            assert row["not_measured"].strip(), row
            continue
        assert len(row["runs"]["measured"]) == ROUNDS, row
        assert len(row["runs"]["baseline"]) == ROUNDS, row
        assert f", {ROUNDS} runs]" in next(line for line in done.stdout.splitlines()
                                           if line.startswith(row["target"]))
